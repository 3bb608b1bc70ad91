"""The pipeline's stages timed and checked end to end: parse, fuse, partition and export (run in
ai-edge-litert), the plan page, and stopping ``tacopt bench`` with Ctrl-C."""
