"""Gathers and scatter-adds at traced indices in C (``wg.compile(..., backend="c")``):
``x[i]``, ``x[idx]``, ``take``, ``take_along_axis``, the dynamic slices of ``lax`` and
its gathers and scatters, in straight-line code and in loop bodies (``x[i]`` at the
counter), and their derivatives, whose transposes add into the gathered array.

Each value is checked against the Python back-end's for the same compiled function and
against the eager function, exactly (the C reads the same elements and adds the same
numbers in the same order), and each derivative against central differences.  An index
out of bounds raises NumPy's IndexError from the C function as from the Python one,
negative indices count from the end, and ``lax``'s dynamic slices clamp their starts as
JAX's do."""
import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from fd import assert_close, fd_jacobian
from test_loops import HAVE_CC
from wengert import lax
from wengert.tree import flatten

pytestmark = pytest.mark.skipif(not HAVE_CC, reason="no C compiler on this machine")

I = np.int64
rng = np.random.default_rng(20261125)


def c_and_python(f, *args):
    """f compiled to C (checked to be C) and with the Python back-end, for `args`' types."""
    c = wg.compile(f, *args, backend="c")
    assert c.entry.flavour == "c"
    return c, wg.compile(f, *args)


def leaves(tree):
    return [np.asarray(v) for v in flatten(tree)[0]]


def assert_same(got, *wants):
    """Exactly the same values (and dtypes) as each of `wants`."""
    for want in wants:
        for g, w in zip(leaves(got), leaves(want), strict=True):
            assert g.dtype == w.dtype, (g, w)
            assert np.array_equal(g, w), (g, w)


def check(f, *args):
    """f's C result equals its Python back-end's and its eager result, exactly."""
    c, python = c_and_python(f, *args)
    assert_same(c(*args), python(*args), f(*args))
    return c, python


# --- gathers ---------------------------------------------------------------------------------
def test_x_at_a_traced_integer_reads_the_argument_in_place_and_counts_from_the_end():
    x = rng.normal(size=5)
    c, python = check(lambda x, i: x[i] * 2.0, x, I(1))
    # (the elements are the argument's, a run of `in`: read there, not copied)
    assert "in[wg_index(wg_i64(in[5]),5,wg_bad)]" in c.source
    for i in range(-5, 5):
        assert c(x, I(i)) == python(x, I(i)) == x[i] * 2.0


@pytest.mark.parametrize("i", [5, 6, -6, 2 ** 62, -2 ** 63])
def test_an_index_out_of_bounds_raises_indexerror_as_numpy_does(i):
    c, python = c_and_python(lambda x, i: x[i] * 2.0, np.ones(5), I(0))
    for f in (c, python):
        with pytest.raises(IndexError, match="out of bounds"):
            f(np.ones(5), I(i))
    with pytest.raises(IndexError, match=f"index {i} is out of bounds for an axis of size 5"):
        c(np.ones(5), I(i))
    assert c(np.ones(5), I(4)) == 2.0               # (and the next call is fine)


def test_index_arrays_take_and_take_along_axis():
    x, X = rng.normal(size=6), rng.normal(size=(3, 4))
    idx = np.array([0, 5, -1, 2, 2, -6])
    check(lambda x, i: x[i], x, idx)
    check(lambda x, i: x[i] * x[i[::-1]], x, idx.reshape(2, 3))
    check(lambda x, i: wnp.take(x, i), X, np.array([0, 11, -1, 7]))
    check(lambda x, i: wnp.take(x, i, axis=1), X, np.array([3, -4, 1]))
    check(lambda x, i: wnp.take(x, i, axis=0), X, np.array([[2, 0], [-1, 1]]))
    check(lambda x, i: wnp.take_along_axis(x, i, axis=1), X, np.array([[0, -1], [3, 3], [1, 2]]))
    # (the index broadcast against the rows: one index row for every row of x)
    check(lambda x, i: wnp.take_along_axis(x, i, axis=1), X, np.array([[3, 0, -2]]))
    check(lambda x, i: wnp.take_along_axis(x, i, axis=0), X, np.array([[2, 1, 0, -3]]))
    check(lambda x, i, j: x[i, j] + x[j - 1, i], X, I(2), I(-1))
    for mode in ("clip", "wrap"):
        check(lambda x, i: wnp.take(x, i, mode=mode), x, np.array([-9, -1, 3, 6, 40]))
    with pytest.raises(IndexError):
        c_and_python(lambda x, i: wnp.take(x, i, axis=1), X, np.array([0]))[0](X, np.array([4]))


def test_integers_and_bools_are_gathered_as_they_are():
    k = np.array([7, -3, 2 ** 62 + 1, -2 ** 63, 5])         # (beyond 2**53: kept exactly)
    c, _ = check(lambda k, i: k[i], k, np.array([2, 3, -1, 0]))
    assert c(k, np.array([2, 3]))[0] == 2 ** 62 + 1
    with np.errstate(over="ignore"):                       # (wrapping, as NumPy's)
        check(lambda k, i: k[i] * 3 + i, k, I(-3))
    x = rng.normal(size=5)
    check(lambda x, i: wnp.where((x > 0)[i], 1.0, -1.0), x, np.array([0, 1, 2, 3, 4]))


def test_a_table_of_constants_is_static_and_a_computed_operand_is_one_local_table():
    table = np.array([1.5, -2.5, 3.25, 8.0])
    c, _ = check(lambda i: wnp.take(table, i) * 2.0, I(2))
    assert "static const double wg_t1[4] = {1.5, -2.5, 3.25, 8.0};" in c.source
    for i in range(-4, 4):
        assert c(I(i)) == table[i] * 2.0
    x = rng.normal(size=5)
    c, _ = check(lambda x, i: wnp.sin(x)[i], x, np.array([4, 0, 1, 1, -1, 3]))
    # (six elements picked from one table of the five sines)
    assert c.source.count("const double wg_t1[5] = {") == 1
    assert c.source.count("wg_t1[wg_index(") == 6


def test_lax_dynamic_slices_clamp_their_starts_as_jax_does():
    x, X = rng.normal(size=6), rng.normal(size=(4, 5))
    ds, _ = check(lambda x, i: lax.dynamic_slice(x, (i,), (3,)), x, I(0))
    ds2, _ = check(lambda x, i, j: lax.dynamic_slice(x, (i, j), (2, 3)), X, I(0), I(0))
    dus, _ = check(lambda x, u, i: lax.dynamic_update_slice(x, u, (i,)), x, np.ones(2), I(0))
    di, _ = check(lambda x, i: lax.dynamic_index_in_dim(x, i, axis=1, keepdims=False), X, I(0))
    dsi, _ = check(lambda x, i: lax.dynamic_slice_in_dim(x, i, 2, axis=0), X, I(0))
    u = np.array([10.0, 20.0])
    for i in range(-9, 10):
        start = min(max(i + 6 if i < 0 else i, 0), 3)         # JAX's: from the end, clamped
        assert np.array_equal(ds(x, I(i)), x[start:start + 3])
        assert np.array_equal(ds2(X, I(i), I(-i)), lax.dynamic_slice(X, (i, -i), (2, 3)))
        put = min(max(i + 6 if i < 0 else i, 0), 4)
        assert np.array_equal(dus(x, u, I(i)), np.concatenate([x[:put], u, x[put + 2:]]))
        assert np.array_equal(di(X, I(i)), X[:, min(max(i + 5 if i < 0 else i, 0), 4)])
        assert np.array_equal(dsi(X, I(i)), lax.dynamic_slice_in_dim(X, i, 2, axis=0))


def test_lax_gather_scatter_add_and_segment_sum_with_traced_indices():
    x = rng.normal(size=5)
    dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                    start_index_map=(0,))
    sdn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                      scatter_dims_to_operand_dims=(0,))
    gather, _ = check(lambda x, i: lax.gather(x, i, dn, (1,)), x, np.array([[1], [4]]))
    assert np.array_equal(gather(x, np.array([[-3], [9]])), x[[0, 4]])      # (clamped)
    add, python = check(lambda x, i, u: lax.scatter_add(x, i, u, sdn), x, np.array([[1], [4]]),
                        np.array([1.0, 2.0]))
    i, u = np.array([[3], [-1], [3], [7]]), np.array([0.1, 0.2, 0.3, 0.4])
    assert_same(add(x, i, u), python(x, i, u), lax.scatter_add(x, i, u, sdn))  # (drops 2)
    check(lambda u, s: wg.ops.segment_sum(u, s, num_segments=3), u, np.array([0, 2, 2, 1]))
    check(lambda k, s: wg.ops.segment_sum(k, s, num_segments=3), np.array([4, -1, 9]),
          np.array([2, 0, 2]))
    check(lambda x, i: lax.index_take(x, (i,), (0,)), x, np.array([1, -1, 7]))


# --- derivatives -----------------------------------------------------------------------------
def test_gradients_add_into_the_gathered_array_in_numpys_order():
    x = rng.normal(size=6)
    idx = np.array([0, 5, -1, 2, 2, -6, 5])                # (repeats: sums at 0, 2, 5)
    f = lambda x, i: wnp.sum(wnp.sin(x[i]) * wnp.arange(1.0, 8.0))   # noqa: E731
    g, python = c_and_python(wg.grad(f), x, idx)
    assert "wg_t1[V" in g.source and "+=" in g.source    # (a scatter-add into a table)
    for _ in range(3):
        x = rng.normal(size=6)
        assert_same(g(x, idx), python(x, idx), wg.grad(f)(x, idx))
        assert_close(g(x, idx), fd_jacobian(lambda t: f(t, idx), x, 1e-6), rtol=1e-7)


def test_jacobians_and_second_derivatives_of_gathers():
    X = rng.normal(size=(3, 4))
    idx = np.array([3, -4, 1, 3])

    def f(x, i):
        return wnp.take(x, i, axis=1) ** 3 + wnp.take_along_axis(x, i[None, :], axis=1)
    for jac in (wg.jacrev, wg.jacfwd):
        j, python = c_and_python(jac(f), X, idx)
        assert_same(j(X, idx), python(X, idx), jac(f)(X, idx))
        want = fd_jacobian(lambda t: f(t, idx), X, 1e-6).reshape(j(X, idx).shape)
        assert_close(j(X, idx), want, rtol=1e-7)
    s = lambda x, i: wnp.sum(f(x, i))                     # noqa: E731
    h, python = c_and_python(wg.hessian(s), X, idx)
    assert_same(h(X, idx), python(X, idx))
    want = fd_jacobian(lambda t: wg.grad(s)(t, idx), X, 1e-5).reshape(h(X, idx).shape)
    assert_close(h(X, idx), want, rtol=1e-6)


def test_derivatives_of_dynamic_slices_against_central_differences():
    x = rng.normal(size=6)

    def f(x, u, i):
        window = lax.dynamic_slice(x, (i,), (3,))
        return wnp.sum(wnp.sin(lax.dynamic_update_slice(x, u * window[1:], (i - 1,)))) * \
            lax.dynamic_index_in_dim(x, -i, keepdims=False)
    u = rng.normal(size=2)
    for argnums in (0, 1):
        g, python = c_and_python(wg.grad(f, argnums=argnums), x, u, I(0))
        for i in (-7, -2, 0, 2, 5, 9):
            want = fd_jacobian(lambda t: f(*((t, u) if argnums == 0 else (x, t)), I(i)),
                               (x, u)[argnums], 1e-6)
            assert_same(g(x, u, I(i)), python(x, u, I(i)))
            assert_close(g(x, u, I(i)), want, rtol=1e-7)


def test_an_index_out_of_bounds_in_a_scatter_alone_raises_too():
    # (the gradient of a linear function needs no gathered value: only the scatter-add
    # reads the index)
    g, python = c_and_python(wg.grad(lambda x, i: wnp.sum(x[i] * 3.0)), np.ones(4),
                             np.array([0, 3]))
    assert "wg_index(" in g.source
    assert np.array_equal(g(np.ones(4), np.array([-1, 3])), [0.0, 0.0, 0.0, 6.0])
    for f in (g, python):
        with pytest.raises(IndexError, match="index 4 is out of bounds"):
            f(np.ones(4), np.array([0, 4]))


# --- loops -----------------------------------------------------------------------------------
def running(x):
    """A loop that reads x[i] at its counter, JAX's common pattern."""
    return wg.fori_loop(0, x.shape[0], lambda i, c: c * 0.9 + wnp.sin(x[i]) * c, 1.0)


def test_a_loop_reading_x_at_its_counter_and_its_gradient():
    x = rng.normal(size=7)
    c, python = check(running, x)
    body = c.source[:c.source.index("int wg_running(")]
    assert "for (long wg_i" in c.source and "in[wg_index(" in body
    g, gpython = c_and_python(wg.grad(running), x)
    for _ in range(3):
        x = rng.normal(size=7)
        assert_close(c(x), running(x), rtol=1e-15)
        assert_same(g(x), gpython(x))
        assert_close(g(x), wg.grad(running)(x), rtol=1e-14)
        assert_close(g(x), fd_jacobian(running, x, 1e-6), rtol=1e-7)


def test_a_counted_loop_of_traced_length_stops_at_an_index_out_of_bounds():
    f = lambda x, n: wg.fori_loop(0, n, lambda i, c: c + x[i] * i, 0.0)   # noqa: E731
    c, python = c_and_python(f, np.arange(4.0), I(3))
    assert "while (wg_go) {" in c.source
    for n in (0, 2, 4):
        want = sum(k * float(k) for k in range(n))
        assert c(np.arange(4.0), I(n)) == python(np.arange(4.0), I(n)) == want
    for g in (c, python):
        with pytest.raises(IndexError, match="index 4 is out of bounds"):
            g(np.arange(4.0), I(10 ** 12))        # (C stops at the fifth step)
    d, dpython = c_and_python(wg.jacfwd(f), np.arange(4.0), I(3))
    assert_same(d(np.arange(4.0), I(3)), dpython(np.arange(4.0), I(3)))
    assert np.array_equal(d(np.arange(4.0), I(3)), [0.0, 1.0, 2.0, 0.0])


def test_a_scan_over_indices_a_carried_array_updated_at_the_counter_and_a_window():
    x = rng.normal(size=5)
    scan = lambda x, idx: wg.scan(lambda c, i: (c * 0.5 + x[i], x[i] ** 2), 0.0, idx)  # noqa
    c, python = check(scan, x, np.array([1, 3, 0, -1, 3]))
    g, gpython = c_and_python(wg.grad(lambda x, idx: scan(x, idx)[0]), x, np.array([1, 3]))
    assert_same(g(x, np.array([4, 4, -5])), gpython(x, np.array([4, 4, -5])))

    def shift(x):           # x[i] = 2 x[i + 1] in turn, carried: a gather and an update
        body = lambda i, c: (wnp.at(c[0])[i].set(c[0][(i + 1) % 5] * 2.0), c[1] + c[0][i])  # noqa
        return wg.fori_loop(0, 5, body, (x, 0.0))
    check(shift, x)
    j, jpython = c_and_python(wg.jacrev(shift), x)
    assert_same(j(x), jpython(x))
    assert_close(j(x)[0], fd_jacobian(lambda t: shift(t)[0], x, 1e-6), rtol=1e-7)

    def windows(x):         # a sliding sum of three by lax.dynamic_slice at the counter
        return wg.fori_loop(0, 4, lambda i, c: c + wnp.sum(lax.dynamic_slice(x, (i,), (3,)))
                            * (i + 1), 0.0)
    check(windows, x)
    g, _ = c_and_python(wg.grad(windows), x)
    assert_close(g(x), fd_jacobian(windows, x, 1e-6), rtol=1e-7)


def test_an_index_out_of_bounds_before_a_loop_stops_the_function_there():
    f = lambda x, i: wg.fori_loop(0, 3, lambda k, c: c * x[0], x[i])     # noqa: E731
    c, python = check(f, np.full(3, 2.0), I(1))
    assert "if (wg_bad[0]) { free(wg_mem); return 2; }" in c.source
    for g in (c, python):
        with pytest.raises(IndexError):
            g(np.full(3, 2.0), I(3))
    assert c(np.full(3, 2.0), I(-3)) == 16.0


def test_a_gather_from_a_loops_results_and_under_vmap():
    x = rng.normal(size=5)
    ys = lambda x, i: wg.scan(lambda c, xk: (c + xk, c * xk), 0.0, x)[1][i]  # noqa: E731
    c, _ = check(ys, x, np.array([4, 0, -2]))
    assert "wg_l1[" in c.source                 # (read where the loop left its ys)
    X, idx = rng.normal(size=(3, 5)), np.array([0, -1, 3])
    for f in (wg.vmap(lambda x, i: x[i] * 2.0),
              wg.vmap(lambda x, i: wg.fori_loop(0, 3, lambda k, c: c + x[(i + k) % 5], 0.0)),
              # (a square, not sin: check is bit for bit, and the loops' vector cos
              # may differ from NumPy's in the last bits)
              wg.vmap(wg.grad(lambda x, i: x[i] * x[i] * x[i - 1]))):
        check(f, X, idx)


def test_what_c_still_refuses_says_so():
    with pytest.raises(ValueError, match="dtype int32"):
        wg.compile(lambda x, i: x[i], np.ones(3), np.int32(1), backend="c")
    assert wg.compile(lambda x, i: x[i], np.ones(3), np.int32(1))(np.ones(3), np.int32(1)) == 1
