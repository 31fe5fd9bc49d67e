"""Arrays are taken by value: a NumPy array that a traced function is given or closes over
is copied when it enters a graph (if it is writeable), so changing it in place later -- a
buffer refilled, a parameter stepped -- changes no derivative and no compiled result.

Every expected value here is computed independently (closed forms, central differences,
NumPy on copies), never by wengert itself."""
import os
import shutil

import numpy
import pytest

import wengert as wg
import wengert.numpy as np
from fd import fd_jacobian

HAVE_CC = any(shutil.which(cc) for cc in (os.environ.get("CC") or "cc", "gcc", "clang"))
rng = numpy.random.default_rng(11)


def test_a_primal_stepped_in_place_does_not_change_the_pullback():
    w = rng.normal(size=5)
    at = w.copy()
    _, back = wg.vjp(lambda w: np.sin(w) * w, w)
    w -= 0.1                                         # an in-place SGD step
    want = numpy.cos(at) * at + numpy.sin(at)        # d/dw (w sin w)
    numpy.testing.assert_allclose(back(numpy.ones(5))[0], want, rtol=1e-14)
    numpy.testing.assert_allclose(back(2.0 * numpy.ones(5))[0], 2 * want, rtol=1e-14)


@pytest.mark.parametrize("n", [2, 40])         # small arrays key by bytes, large by object
def test_closed_over_data_refilled_after_vjp(n):
    X = rng.normal(size=(n, 3))
    X0 = X.copy()
    v = rng.normal(size=3)
    _, back = wg.vjp(lambda v: np.sin(X @ v), v)
    X[:] = 0.0                                       # the next batch
    ct = rng.normal(size=n)
    want = X0.T @ (ct * numpy.cos(X0 @ v))
    numpy.testing.assert_allclose(back(ct)[0], want, rtol=1e-13)


def test_an_index_array_changed_after_vjp():
    idx = numpy.array([0, 2, 2])
    _, back = wg.vjp(lambda x: x[idx] ** 2, numpy.arange(1.0, 4.0))
    idx[:] = 1
    numpy.testing.assert_allclose(back(numpy.ones(3))[0], [2.0, 0.0, 12.0])


def _refilled(buf):
    """sum(w * 1) + sum(w * 2), the buffer rewritten between the two uses."""
    def f(w):
        buf[:] = 1.0
        a = np.sum(w * buf)
        buf[:] = 2.0
        return a + np.sum(w * buf) + np.sum(w * w)
    return f


@pytest.mark.parametrize("n", [3, 100])
def test_a_buffer_rewritten_between_two_uses_in_one_call(n):
    w = rng.normal(size=n)
    f = _refilled(numpy.zeros(n))
    numpy.testing.assert_allclose(wg.grad(f)(w), 3.0 + 2 * w, rtol=1e-14)
    t = rng.normal(size=n)
    numpy.testing.assert_allclose(wg.jvp(f, (w,), (t,))[1], (3.0 + 2 * w) @ t, rtol=1e-13)
    numpy.testing.assert_allclose(wg.hessian(f)(w), 2 * numpy.eye(n), atol=1e-13)
    c = wg.compile(wg.value_and_grad(f), w)
    value, g = c(w)
    assert value == pytest.approx(3 * w.sum() + w @ w, rel=1e-13)
    numpy.testing.assert_allclose(g, 3.0 + 2 * w, rtol=1e-14)
    # (and the gradient agrees with central differences of the function itself)
    numpy.testing.assert_allclose(wg.grad(f)(w), fd_jacobian(f, w, 1e-6), rtol=1e-7,
                                  atol=1e-7)


@pytest.mark.parametrize("backend", ["python", "numpy",
                                     pytest.param("c", marks=pytest.mark.skipif(
                                         not HAVE_CC, reason="no C compiler"))])
@pytest.mark.parametrize("n", [2, 100])
def test_compiled_code_keeps_the_closed_over_array_it_was_traced_with(backend, n):
    """Every back-end bakes the array as it was when traced: float and C code hold its
    numbers, NumPy code holds a copy (it used to read the caller's array)."""
    W = rng.normal(size=n)
    W0 = W.copy()
    c = wg.compile(lambda x: np.sum(np.tanh(x * W)), numpy.ones(n), backend=backend)
    x = rng.normal(size=n)
    first = c(x)
    W[0] = 100.0
    assert c(x) == first == pytest.approx(numpy.tanh(x * W0).sum(), rel=1e-14)
    W[:] = W0 + 1.0
    g = wg.compile(wg.grad(lambda x: np.sum(np.tanh(x * W))), numpy.ones(n), backend=backend)
    W[:] = 0.0                                      # after the trace: not seen
    numpy.testing.assert_allclose(g(x), (W0 + 1) * (1 - numpy.tanh(x * (W0 + 1)) ** 2),
                                  rtol=1e-12, atol=1e-14)    # (C's tanh is not NumPy's)


def test_a_large_array_used_twice_is_one_constant():
    """One object, unchanged, is one constant in a trace (one copy, one node)."""
    W = rng.normal(size=(50, 50))
    graph = wg.trace(lambda x: W @ np.tanh(W @ x), numpy.ones(50))
    consts = [n for n in graph.live_nodes() if n.is_const and n.shape == (50, 50)]
    assert len(consts) == 1 and consts[0].value is not W
    x = rng.normal(size=50)
    numpy.testing.assert_allclose(graph(x), W @ numpy.tanh(W @ x), rtol=1e-13)


def test_read_only_arrays_and_broadcast_views_are_not_copied():
    """A read-only array is the caller's promise not to change it: it is used as it is,
    so a broadcast view is never materialised."""
    big = numpy.broadcast_to(numpy.arange(3.0), (100_000, 3))
    graph = wg.trace(lambda x: np.sum(x * big), numpy.ones(3))
    consts = [n for n in graph.live_nodes() if n.is_const and n.shape == big.shape]
    assert len(consts) == 1 and consts[0].value is big
    frozen = numpy.arange(4.0)
    frozen.flags.writeable = False
    x = rng.normal(size=4)
    numpy.testing.assert_allclose(wg.grad(lambda x: np.sum(np.sin(x * frozen)))(x),
                                  frozen * numpy.cos(x * frozen), rtol=1e-14)
