import os
import sys

if os.environ.get("PYTEST_XDIST_WORKER"):
    # The suite runs in one worker per core (pytest-xdist, pyproject's addopts); a BLAS
    # that also started a thread per core in each worker would oversubscribe the cores.
    # (Read when NumPy loads, which is after this: nothing imports it before conftest.)
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

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
