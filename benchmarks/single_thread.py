"""Imported first by every benchmark: pins the thread pools before NumPy, PyTorch or JAX
is imported (each pool sizes itself at import).  One thread makes a comparison about the
AD systems, not about how each uses cores, and is much less noisy on a shared machine.
Variables you have set yourself are left alone."""
import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# JAX picks its backend on first use: CPU, so it never probes for GPUs or TPUs.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# XLA's CPU backend has its own Eigen thread pool, which the variables above do not reach.
os.environ.setdefault("XLA_FLAGS",
                      "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
