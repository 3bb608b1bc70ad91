"""Test-wide settings, loaded by pytest before any test module (and before numpy is imported).

tacopt's numeric work is many small matrix products (the custom fused ops' numpy kernels, the
pickers' LP plumbing); multi-threaded BLAS makes them 10-30x slower on a 2-core machine and makes
float sums depend on the thread count. One BLAS thread, unless the caller chose otherwise.
"""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
