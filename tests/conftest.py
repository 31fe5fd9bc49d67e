import os
import sys

# The suite runs in one worker per core (pytest-xdist, pyproject's addopts); a BLAS that
# also started a thread per core in each worker would oversubscribe the cores.  In one
# process (-n 0) the tests' matrices are too small to gain from threads, and NumPy's,
# SciPy's and PyTorch's pools spinning against each other made a 20 x 20 solve take 10-30
# ms on a loaded machine, so they are single-threaded there too.  (Read when NumPy loads,
# which is after this: nothing imports it before conftest.)
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

# JAX, where it is installed, is what many tests compare against, and wengert computes in
# float64: JAX runs with 64-bit types for the whole session, whatever ran before.  JAX
# reads this variable when it is first imported, so conftest need not import it (JAX is
# optional and slow to import), and the processes that tests start inherit it.  Set, not
# defaulted: the tests' float64 tolerances hold for nothing else.
os.environ["JAX_ENABLE_X64"] = "1"
if sys.modules.get("jax") is not None:     # imported before conftest: too early to read it
    sys.modules["jax"].config.update("jax_enable_x64", True)

# the tests import their helper module `fd` by name
sys.path.insert(0, os.path.dirname(__file__))

import pytest  # noqa: E402


@pytest.fixture
def loops(monkeypatch):
    """The primitives that wg.vmap called once per example (no batching rule covered
    them), for tests that a batch runs without a Python loop."""
    import wengert.vectorize as vectorize
    seen = set()
    real = vectorize._one_per_example

    def spy(node, args, mapped, size):
        seen.add(node.op.name)
        return real(node, args, mapped, size)
    monkeypatch.setattr(vectorize, "_one_per_example", spy)
    return seen


@pytest.fixture(scope="session")
def jax():
    """JAX, in float64 (JAX_ENABLE_X64 above), or a skip where it is not installed."""
    return pytest.importorskip("jax")
