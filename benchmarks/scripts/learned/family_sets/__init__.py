"""Family sets of the learned model's test models beyond the first two (``families``): their
building blocks (``blocks``) and the third held-out set (``third``, issue 47 session 4)."""
