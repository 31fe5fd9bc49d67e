import os
import sys

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
