"""Loops (``wg.scan``, ``fori_loop``, ``while_loop``) in the C loop mode
(`wengert.codegen.cloops`, `_Looped`): each body a static loop-mode function called per
step, its carry in two buffers that the steps write in turn, a scan's xs and ys rows read
and written in place.  Values against eager wengert and the NumPy back-end (bit for bit
where the body is + - * / and gathers, within a few ulps through libm, within rounding
through sums and BLAS); gradients and Hessians also against central differences."""
import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from fd import assert_close, fd_jacobian
from test_c_loops import looped, numpy_compiled, same, ulps
from test_loops import HAVE_CC
from wengert import lax
from wengert.codegen import cloops

pytestmark = pytest.mark.skipif(not HAVE_CC, reason="no C compiler on this machine")

RNG = np.random.default_rng(11)


@pytest.fixture
def loops(monkeypatch):
    """Loop mode for arrays of any size (as test_c_loops.py's)."""
    monkeypatch.setattr(cloops, "LOOP_ELEMENTS", 0)


def close(got, *expected, rtol=1e-12):
    for e in expected:
        assert_close(got, e, rtol=rtol, atol=1e-13)


def rnn_loss(W, U, xs, h0):
    """tanh(W h + U x) over the xs, the sum of squares of every h: a body of two
    products (above `cloops.BLAS_WORK` at these sizes, so BLAS's where SciPy lends it)."""
    def step(h, x):
        h = wnp.tanh(W @ h + U @ x)
        return h, wnp.sum(h * h)
    return wnp.sum(wg.scan(step, h0, xs)[1])


# ---- values -----------------------------------------------------------------------------
def test_scan_with_array_carries_xs_and_ys_is_numpy_bit_for_bit(loops):
    def f(c0, d0, xs, w):
        def step(carry, x):
            c, d = carry
            c = c * 0.5 + x * w - d[:3]
            return (c, d * 1.5 + 1.0), (c - x, c[0] * 2.0)
        return wg.scan(step, (c0, d0), xs)
    args = (RNG.normal(size=3), RNG.normal(size=4), RNG.normal(size=(6, 3)), 0.3)
    c = looped(f, *args)
    assert "static void" in c.source and c.source.count("memcpy") == 0
    got = [*c(*args)[0], *c(*args)[1]]
    for g, e, n in zip(got, [*f(*args)[0], *f(*args)[1]],
                       [*numpy_compiled(f, *args)[0], *numpy_compiled(f, *args)[1]]):
        same(g, e)
        same(g, n)


def test_reverse_scan_reads_and_writes_rows_from_the_end(loops):
    f = lambda xs: wg.scan(lambda c, x: (c * 0.5 + x, c * x), np.ones(3), xs,  # noqa: E731
                           reverse=True)
    xs = RNG.normal(size=(5, 3))
    got = looped(f, xs)(xs)
    for g, e, n in zip(got, f(xs), numpy_compiled(f, xs)):
        same(g, e)
        same(g, n)


@pytest.mark.parametrize("length", [0, 1, 2, 7])
def test_the_final_carry_of_any_number_of_steps(loops, length):
    # (the last step writes one buffer or the other: which one depends on the parity;
    # none, and the first carry is copied)
    f = lambda x, xs: wg.scan(lambda c, r: (c * 2.0 - r, c + r), x, xs)  # noqa: E731
    x, xs = RNG.normal(size=4), RNG.normal(size=(length, 4))
    got = looped(f, x, xs)(x, xs)
    for g, e in zip(got, f(x, xs)):
        same(g, e)


def test_fori_loop_static_and_traced_bounds_and_while_loop(loops):
    body = lambda i, v: v * 0.75 + wnp.sin(v) * 0.25 + i  # noqa: E731
    static = lambda x: lax.fori_loop(0, 9, body, x)  # noqa: E731
    traced = lambda x, n: lax.fori_loop(0, n, body, x)  # noqa: E731
    grows = lambda x: lax.while_loop(lambda v: wnp.sum(v * v) < 1e4,  # noqa: E731
                                     lambda v: v * 1.5 + 0.25, x)
    x = RNG.normal(size=6)
    ulps(looped(static, x)(x), static(x))
    ulps(looped(static, x)(x), numpy_compiled(static, x))
    for n in (np.int64(0), np.int64(1), np.int64(9)):
        ulps(looped(traced, x, n)(x, n), traced(x, n))
    c = looped(grows, x)
    assert "while (" in c.source
    same(c(x), grows(x))
    same(c(x * 1e3), grows(x * 1e3))          # (no step: the first carry, copied)


def test_a_body_with_matrix_products_and_its_gradient(loops):
    W, U = RNG.normal(size=(8, 8)) / 3, RNG.normal(size=(8, 3))
    xs, h0 = RNG.normal(size=(5, 3, 4)), np.zeros((8, 4))
    f = lambda W, U: rnn_loss(W, U, xs, h0)  # noqa: E731
    close(looped(f, W, U)(W, U), f(W, U), numpy_compiled(f, W, U))
    g = wg.grad(f, argnums=(0, 1))
    got = looped(g, W, U)(W, U)
    for k, (a, e, n) in enumerate(zip(got, g(W, U), numpy_compiled(g, W, U))):
        close(a, e, n)
    fd = fd_jacobian(lambda w: np.array(f(w.reshape(8, 8), U)), W.ravel(), 1e-6)
    assert_close(got[0].ravel(), fd, rtol=1e-6)


def test_a_gather_at_the_counter_and_its_gradient(loops):
    f = lambda x: lax.fori_loop(0, x.shape[0],  # noqa: E731
                                lambda i, c: 0.9 * c + wnp.sin(x[i]), 0.0 * x[0])
    x = RNG.normal(size=40)
    ulps(looped(f, x)(x), f(x))
    g = wg.grad(f)
    got = looped(g, x)(x)
    ulps(got, g(x))
    ulps(got, numpy_compiled(g, x))
    assert_close(got, fd_jacobian(lambda v: np.array(f(v)), x, 1e-6), rtol=1e-6)


def test_second_order_through_a_scan(loops):
    def f(x):
        c = wg.scan(lambda c, r: (wnp.tanh(c * r + x), None), x, np.linspace(0.1, 1, 4))[0]
        return wnp.sum(c * c)
    x = RNG.normal(size=3)
    h = wg.hessian(f)
    got = looped(h, x)(x)
    close(got, h(x), numpy_compiled(h, x), rtol=1e-11)
    assert_close(got, fd_jacobian(lambda v: wg.grad(f)(v), x, 1e-5), rtol=1e-6)


def test_an_index_out_of_bounds_in_a_body_raises_numpys_index_error(loops):
    f = lambda x, k: lax.fori_loop(0, 4, lambda i, c: c + x[i + k], 0.0 * x)  # noqa: E731
    x = RNG.normal(size=(6, 3))
    c = looped(f, x, np.int64(0))
    same(c(x, np.int64(2)), f(x, np.int64(2)))
    with pytest.raises(IndexError, match="out of bounds"):
        numpy_compiled(f, x, np.int64(3))
    with pytest.raises(IndexError, match="index 6 is out of bounds"):
        c(x, np.int64(3))
    same(c(x, np.int64(-6)), f(x, np.int64(-6)))        # (and the loop runs again)


def test_a_loop_in_a_body(loops):
    def f(x, xs):
        def outer(c, r):
            inner = wg.scan(lambda d, s: (d * s + r, d.sum()), c, np.linspace(0.5, 1, 3))
            return inner[0] * 0.5, inner[1]
        return wg.scan(outer, x, xs)
    x, xs = RNG.normal(size=4), RNG.normal(size=(5, 4))
    c = looped(f, x, xs)
    assert c.source.count("static void") == 2
    for g, e, n in zip(c(x, xs), f(x, xs), numpy_compiled(f, x, xs)):
        same(g, e)
        same(g, n)
    g = wg.grad(lambda x, xs: wnp.sum(f(x, xs)[1] ** 2), argnums=(0, 1))
    for a, e in zip(looped(g, x, xs)(x, xs), g(x, xs)):
        close(a, e)


def test_loop_mode_counts_a_body_times_its_steps():
    one_step = lambda x: wg.scan(lambda c, _: (c * 2.0, None), x, length=1)[0]  # noqa: E731
    many = lambda x: wg.scan(lambda c, _: (c * 2.0, None), x, length=40)[0]  # noqa: E731
    x = np.ones(8)
    assert not cloops.wanted(wg.trace(one_step, x))
    assert cloops.wanted(wg.trace(many, x))
    assert looped(many, x)(x)[0] == 2.0 ** 40


# ---- a carry plus a scatter, updated in place -----------------------------------------------
def test_the_gradient_of_a_gather_in_a_loop_updates_its_cotangent_in_place(loops):
    f = lambda x: lax.fori_loop(0, x.shape[0], lambda i, c: c * wnp.sin(x[i]),  # noqa: E731
                                1.0)
    x = RNG.normal(size=30)
    c = looped(wg.grad(f), x)
    assert "updated where" in c.source                       # (no add of the whole carry)
    same(c(x), numpy_compiled(wg.grad(f), x))


@pytest.mark.parametrize("scatter", ["index_add", "put_along_axis"])
def test_an_update_in_place_is_numpys_bits_with_repeats_nan_and_signed_zeros(loops, scatter):
    from wengert.primitives.array import index_add, put_along_axis
    idx = np.array([2, -1, 2, 0, 2])                  # (repeated, negative)

    def scattered(v):
        if scatter == "index_add":
            return index_add(v, index=(idx,), shape=(6,))
        return put_along_axis(v, idx, axis=0, shape=(6,))

    f = lambda c0, vs: wg.scan(lambda c, v: (c + scattered(v), None), c0, vs)[0]  # noqa
    c0 = np.array([-0.0, 0.0, -0.0, np.nan, 1.5, -0.0])
    vs = RNG.normal(size=(4, 5))
    vs[1, :] = [-0.0, 0.0, 0.0, -0.0, -0.0]
    vs[2, 1] = -vs[3, 1]
    c = looped(f, c0, vs)
    assert "updated where" in c.source
    for v in (vs, vs[:1], -vs):
        same(c(c0, v), f(c0, v))
        same(c(c0, v), numpy_compiled(f, c0, v))
    same(c(c0, vs[:0]), c0)                             # (no step: -0.0 as it was)


def _ema_of_columns(x):
    """A scan of scalars over the columns of x one after another (x.T flattened: computed,
    not an argument), the sum of its ys."""
    return wnp.sum(wg.scan(lambda c, r: (c * 0.9 + r, wnp.tanh(c * r)), 0.0,
                           wnp.reshape(x.T, (-1,)))[1])


def test_a_loop_of_scalars_over_many_computed_elements_is_written_as_loops():
    # scalarised, the 3,000 elements of x.T would each be a statement of one function
    # (25 s for gcc); as loops it compiles at once.  Over a few, it stays scalarised.
    grad = wg.grad(_ema_of_columns)
    for shape, as_loops in (((300, 10), True), ((3, 10), False)):
        x = RNG.normal(size=shape)
        c = wg.compile(grad, x, backend="c")
        assert getattr(c.entry, "looped", False) == as_loops, shape
        close(c(x), grad(x), numpy_compiled(grad, x))
    close(c(x), fd_jacobian(_ema_of_columns, x, 1e-6).reshape(x.shape), rtol=1e-6)
