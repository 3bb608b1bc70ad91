"""A learned model adapted to another device: live adaptations timed against their budget, the
guard's choices replayed offline, and kernel-set companions checked on paired measurements."""
