"""wengert.lax, JAX's jax.lax on wengert's graph: control flow with known and unknown
predicates, dynamic slicing by JAX's index rules, and the elementwise and structural
functions, against NumPy references written here, central differences to second order,
and JAX itself where it is installed."""
import warnings

import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from wengert import lax
from fd import assert_close, check_grads

rng = np.random.default_rng(2026)


# ---- control flow ------------------------------------------------------------------------------
def test_cond_runs_one_branch_eagerly_and_selects_when_traced_without_values():
    ran = []

    def f(x):
        return lax.cond(x > 0, lambda x: ran.append("t") or x ** 3,
                        lambda x: ran.append("f") or wnp.sin(x), x)
    assert wg.grad(f)(2.0) == 12.0 and ran == ["t"]
    assert_close(wg.grad(f)(-1.0), np.cos(-1.0))
    assert ran == ["t", "f"]
    ran.clear()
    g = wg.compile(wg.grad(f), 1.0)                 # traced without values: both, selected
    assert sorted(ran) == ["f", "t"]
    assert_close(g(2.0), 12.0)
    assert_close(g(-1.0), np.cos(-1.0))
    xs = np.array([-1.5, 0.5, 2.0])
    assert_close(wg.vmap(wg.grad(f))(xs), np.where(xs > 0, 3 * xs ** 2, np.cos(xs)))
    check_grads(lambda x: wg.vmap(f)(x), np.array([-0.7, 0.4, 1.3]))


def test_cond_with_several_operands_and_pytree_results():
    def f(a, b):
        out = lax.cond(a > b, lambda a, b: {"m": a, "d": a - b},
                       lambda a, b: {"m": b, "d": b - a}, a, b)
        return out["m"] * out["d"]
    for a, b in [(3.0, 1.0), (1.0, 3.0)]:
        big, small = max(a, b), min(a, b)
        want = [2 * big - small, -big] if a > b else [-big, 2 * big - small]
        assert_close(wg.grad(f, argnums=(0, 1))(a, b), want)
        assert_close(wg.compile(wg.grad(f, argnums=(0, 1)), 0.0, 0.0)(a, b), want)


def test_cond_errors_name_what_does_not_match():
    with pytest.raises(TypeError, match="cond: pred must be a scalar, got shape \\(2,\\)"):
        lax.cond(np.array([True, False]), lambda: 1.0, lambda: 2.0)
    with pytest.raises(TypeError, match="return shapes \\(2,\\) and \\(3,\\)"):
        wg.compile(lambda x: lax.cond(x > 0, lambda: wnp.ones(2) * x,
                                      lambda: wnp.ones(3) * x), 1.0)
    with pytest.raises(TypeError, match="different structures"):
        wg.compile(lambda x: lax.cond(x > 0, lambda: (x, x), lambda: x), 1.0)


def test_switch_clamps_its_index_as_jax_does():
    branches = [lambda x: x, lambda x: x ** 2, lambda x: x ** 3]
    f = lambda i, x: lax.switch(i, branches, x)
    for i, want in [(-4, 1.0), (0, 1.0), (1, 6.0), (2, 27.0), (9, 27.0)]:
        assert wg.grad(f, argnums=1)(i, 3.0) == want
        assert_close(wg.compile(wg.grad(f, argnums=1), 0, 1.0)(i, 3.0), want)
    assert_close(wg.vmap(f, in_axes=(0, None))(np.array([0, 1, 2, 5]), 2.0), [2, 4, 8, 8])
    with pytest.raises(ValueError, match="branches is empty"):
        lax.switch(0, [], 1.0)


def test_while_loop_is_a_differentiable_python_loop_eagerly():
    def newton_sqrt(a):       # x <- (x + a/x)/2 until converged: sqrt(a), d/da = 1/(2 sqrt a)
        def body(s):
            x, k = s
            return (x + a / x) / 2.0, k + 1
        return lax.while_loop(lambda s: (abs(s[0] * s[0] - a) > 1e-12 * a) & (s[1] < 50),
                              body, (a, 0))[0]
    assert_close(newton_sqrt(2.0), np.sqrt(2.0), rtol=1e-12)
    assert_close(wg.grad(newton_sqrt)(2.0), 0.5 / np.sqrt(2.0), rtol=1e-8)
    assert_close(wg.grad(wg.grad(newton_sqrt))(2.0), -0.25 * 2.0 ** -1.5, rtol=1e-6)
    # traced without values it is one node (tests/test_while_loop.py), in forward mode only
    assert_close(wg.compile(newton_sqrt, 2.0)(3.0), np.sqrt(3.0), rtol=1e-12)
    with pytest.raises(ValueError, match="while_loop: reverse-mode differentiation"):
        wg.compile(wg.grad(newton_sqrt), 2.0)


def test_map_with_and_without_batches_is_the_stack_of_f():
    xs = rng.normal(size=(7, 3))
    f = lambda row: wnp.sin(row) @ row
    want = np.array([np.sin(r) @ r for r in xs])
    for batch in (None, 1, 3, 7, 10):
        assert_close(lax.map(f, xs, batch_size=batch), want, rtol=1e-13)
    check_grads(lambda x: lax.map(f, x, batch_size=3), xs)
    tree = lax.map(lambda d: {"s": d["a"] + d["b"]}, {"a": np.ones(4), "b": np.arange(4.0)})
    assert_close(tree["s"], 1 + np.arange(4.0))


def test_associative_scan_is_the_inclusive_scan_along_any_axis():
    x = rng.uniform(0.5, 1.5, size=(4, 5))
    assert_close(lax.associative_scan(wnp.add, x), np.cumsum(x, 0))
    assert_close(lax.associative_scan(wnp.multiply, x, axis=1), np.cumprod(x, 1))
    assert_close(lax.associative_scan(wnp.add, x, reverse=True),
                 np.cumsum(x[::-1], 0)[::-1])
    pair = lax.associative_scan(lambda a, b: (a[0] + b[0], wnp.maximum(a[1], b[1])), (x, -x))
    assert_close(pair[0], np.cumsum(x, 0))
    assert_close(pair[1], np.maximum.accumulate(-x))
    check_grads(lambda x: lax.associative_scan(wnp.multiply, x, axis=1), x)


def test_select_n_and_stop_gradient():
    which = np.array([0, 2, 1, 2])
    cases = [np.zeros(4), np.ones(4), np.full(4, 2.0)]
    assert lax.select_n(which, *cases).tolist() == [0.0, 2.0, 1.0, 2.0]
    assert lax.select_n(np.array([True, False]), np.zeros(2), np.ones(2)).tolist() == [1, 0]
    assert wg.grad(lambda x: x * lax.stop_gradient(x))(3.0) == 3.0


# ---- dynamic slicing ---------------------------------------------------------------------------
def _placed(start, n, k):
    """JAX's start: a negative one from the end, then clamped to fit."""
    start = start + n if start < 0 else start
    return min(max(start, 0), n - k)


STARTS = [(0, 0), (2, 1), (-1, -2), (9, 0), (-9, 7), (3, -1)]


@pytest.mark.parametrize("starts", STARTS)
def test_dynamic_slice_places_its_starts_as_jax_does_known_or_traced(starts):
    x = rng.normal(size=(5, 6))
    sizes = (2, 3)
    a, b = (_placed(s, n, k) for s, n, k in zip(starts, x.shape, sizes))
    want = x[a:a + 2, b:b + 3]
    assert_close(lax.dynamic_slice(x, starts, sizes), want)
    # traced without values: a loop's counter, vmap's index, a compiled argument
    i64 = np.int64
    traced = wg.compile(lambda x, i, j: lax.dynamic_slice(x, (i, j), sizes), x, i64(0), i64(0))
    starts = tuple(i64(s) for s in starts)
    assert_close(traced(x, *starts), want)
    assert_close(wg.vmap(lambda i: lax.dynamic_slice(x, (i, starts[1]), sizes))(
        np.array([starts[0], 0])), np.stack([want, x[0:2, b:b + 3]]))
    check_grads(lambda x: lax.dynamic_slice(x, starts, sizes), x)
    check_grads(lambda x: traced(x, *starts), x)


@pytest.mark.parametrize("starts", STARTS)
def test_dynamic_update_slice_known_or_traced_and_its_derivatives(starts):
    x, u = rng.normal(size=(5, 6)), rng.normal(size=(2, 3))
    a, b = (_placed(s, n, k) for s, n, k in zip(starts, x.shape, u.shape))
    want = x.copy()
    want[a:a + 2, b:b + 3] = u
    assert_close(lax.dynamic_update_slice(x, u, starts), want)
    traced = wg.compile(lambda x, u, i, j: lax.dynamic_update_slice(x, u, (i, j)), x, u,
                        np.int64(0), np.int64(0))
    starts = tuple(np.int64(s) for s in starts)
    assert_close(traced(x, u, *starts), want)
    check_grads(lambda x, u: lax.dynamic_update_slice(x, u, starts), x, u)
    check_grads(lambda x, u: traced(x, u, *starts), x, u)


def test_a_loop_writes_rows_at_its_counter():
    """JAX's common loop: fill an array a slice at a time with the counter as the start."""
    def fill(w):
        def body(i, acc):
            return lax.dynamic_update_index_in_dim(acc, wnp.sin(w * i), i, 0)
        return lax.fori_loop(0, 4, body, wnp.zeros((4, 3)))
    w = np.array([0.3, -0.2, 0.5])
    assert_close(fill(w), np.sin(np.outer(np.arange(4), w)))
    assert_close(wg.compile(fill, w)(w), np.sin(np.outer(np.arange(4), w)))
    check_grads(fill, w)


def test_in_dim_forms_and_their_errors():
    x = np.arange(12.0).reshape(3, 4)
    assert lax.dynamic_slice_in_dim(x, -2, 2, axis=1).tolist() == x[:, 2:].tolist()
    assert lax.dynamic_index_in_dim(x, 5, axis=0, keepdims=False).tolist() == x[2].tolist()
    got = lax.dynamic_update_slice_in_dim(x, np.zeros((3, 1)), 1, 1)
    assert got[:, 1].tolist() == [0, 0, 0] and got[:, 2].tolist() == x[:, 2].tolist()
    assert lax.dynamic_update_index_in_dim(x, np.ones(4), -1, 0)[2].tolist() == [1] * 4
    with pytest.raises(TypeError, match="a slice of size 5 does not fit in an axis of 4"):
        lax.dynamic_slice(x, (0, 0), (1, 5))
    with pytest.raises(TypeError, match="takes 2 start indices and sizes, got 1 and 2"):
        lax.dynamic_slice(x, (0,), (1, 1))
    with pytest.raises(TypeError, match="start indices must be integers, got float64; "
                                        "wg.compile takes a Python int argument as a weak"):
        wg.compile(lambda x, s: lax.dynamic_slice(x, (s, 0), (1, 1)), x, 1)
    with pytest.raises(TypeError, match="start indices must be integers, got float64$"):
        wg.compile(lambda x, s: lax.dynamic_slice(x, (s, 0), (1, 1)), x, np.float64(1))


# ---- gather and scatter with dimension numbers ---------------------------------------------
def _window_start(idx, G, n, index_map, obatch, ibatch):
    """XLA's start of the window for batch position G: the index vector on the mapped
    axes, the batch position on the batching axes, 0 elsewhere."""
    start = [0] * n
    for k, d in enumerate(index_map):
        start[d] = int(idx[G][k])
    for d, b in zip(obatch, ibatch):
        start[d] = G[b]
    return start


def _gather_reference(x, idx, dn, sizes, mode=None, fill=np.nan):
    """XLA's Gather written out element by element (the definition, for small arrays)."""
    offset, collapsed, index_map, obatch, ibatch = dn
    n = x.ndim
    window = [d for d in range(n) if d not in collapsed and d not in obatch]
    rank = idx.ndim - 1 + len(offset)
    batch_pos = [p for p in range(rank) if p not in offset]
    out_shape = [0] * rank
    for p, b in zip(batch_pos, idx.shape[:-1]):
        out_shape[p] = b
    for p, d in zip(offset, window):
        out_shape[p] = sizes[d]
    out = np.empty(out_shape)
    for o in np.ndindex(*out_shape):
        start = _window_start(idx, tuple(o[p] for p in batch_pos), n, index_map, obatch, ibatch)
        fits = all(0 <= start[d] <= x.shape[d] - sizes[d] for d in range(n))
        if mode == "fill" and not fits:
            out[o] = fill
            continue
        start = [min(max(s, 0), x.shape[d] - sizes[d]) for d, s in enumerate(start)]
        where = list(start)
        for p, d in zip(offset, window):
            where[d] += o[p]
        out[o] = x[tuple(where)]
    return out


def _scatter_reference(x, idx, u, dn, combine, mode=None):
    """XLA's Scatter written out: update elements in row-major order, each combined into
    its place; a window that does not fit is dropped (or, with "clip", moved to fit)."""
    window_pos, inserted, index_map, obatch, ibatch = dn
    n = x.ndim
    window = [d for d in range(n) if d not in inserted and d not in obatch]
    scatter_pos = [p for p in range(u.ndim) if p not in window_pos]
    sizes = [1] * n
    for p, d in zip(window_pos, window):
        sizes[d] = u.shape[p]
    out = x.copy()
    for e in np.ndindex(*u.shape):
        start = _window_start(idx, tuple(e[p] for p in scatter_pos), n, index_map, obatch,
                              ibatch)
        if not all(0 <= start[d] <= x.shape[d] - sizes[d] for d in range(n)):
            if mode != "clip":
                continue
            start = [min(max(s, 0), x.shape[d] - sizes[d]) for d, s in enumerate(start)]
        where = list(start)
        for p, d in zip(window_pos, window):
            where[d] += e[p]
        out[tuple(where)] = combine(out[tuple(where)], u[e])
    return out


def _gd(*a):
    return lax.GatherDimensionNumbers(*a)


def _sd(*a):
    return lax.ScatterDimensionNumbers(*a)


# (dimension numbers, slice sizes, index shape and range) on an operand of shape (4, 5, 3)
GATHERS = [
    (_gd((1, 2), (0,), (0,)), (1, 5, 3), (6, 1), (-2, 6)),                 # rows by index
    (_gd((1,), (0, 1), (0, 1)), (1, 1, 2), (7, 2), (-1, 6)),               # 2-D points
    (_gd((0, 2), (1,), (1, 2)), (2, 1, 2), (3, 2, 2), (-1, 6)),            # windows, batch 3x2
    (_gd((2,), (1,), (1,), (0,), (1,)), (1, 1, 3), (2, 4, 1), (0, 5)),     # batched axes
    (_gd((), (0, 1, 2), (2, 0, 1)), (1, 1, 1), (5, 3), (-1, 6)),           # elements
]


@pytest.mark.parametrize("dn, sizes, ishape, irange", GATHERS)
def test_gather_is_xlas_gather_known_or_traced_indices(dn, sizes, ishape, irange):
    x = rng.normal(size=(4, 5, 3))
    idx = rng.integers(*irange, size=ishape)
    for mode in (None, "clip", "fill", lax.GatherScatterMode.PROMISE_IN_BOUNDS):
        want = _gather_reference(x, idx, dn, sizes, "fill" if mode == "fill" else None)
        got = lax.gather(x, idx, dn, sizes, mode=mode)
        np.testing.assert_allclose(got, want, rtol=0, atol=0)
        traced = wg.compile(lambda x, i: lax.gather(x, i, dn, sizes, mode=mode), x, idx)
        np.testing.assert_allclose(traced(x, idx), want, rtol=0, atol=0)
    assert_close(lax.gather(x, idx, dn, sizes, mode="fill", fill_value=-3.0),
                 _gather_reference(x, idx, dn, sizes, "fill", -3.0))
    f = lambda x: lax.gather(x, idx, dn, sizes, mode="fill", fill_value=0.0)
    check_grads(f, x)
    check_grads(lambda x: traced(x, idx), x)


def test_gather_under_vmap_and_its_fill_for_integers():
    x = rng.normal(size=(6, 3))
    dn = _gd((1,), (0,), (0,))
    idx = np.array([[[4]], [[0]], [[9]]])              # one row an example; 9 does not fit
    got = wg.vmap(lambda i: lax.gather(x, i, dn, (1, 3), mode="fill"))(idx)
    assert_close(got[:2], np.stack([x[4:5], x[0:1]]))
    assert np.isnan(got[2]).all()
    xs = rng.normal(size=(3, 6, 3))                    # and operands batched with them
    got = wg.vmap(lambda x, i: lax.gather(x, i, dn, (1, 3)))(xs, idx)
    assert_close(got, np.stack([xs[0, 4:5], xs[1, 0:1], xs[2, 5:6]]))   # (9: clipped)
    check_grads(lambda xs: wg.vmap(lambda x, i: lax.gather(x, i, dn, (1, 3)))(xs, idx), xs)
    ints = lax.gather(np.arange(4), np.array([[3]]), _gd((1,), (), (0,)), (2,), mode="fill")
    assert ints.tolist() == [[np.iinfo(np.int64).min] * 2]
    unsigned = lax.gather(np.arange(4, dtype=np.uint8), np.array([[-1]]),
                          _gd((1,), (), (0,)), (1,), mode="fill")
    assert unsigned.tolist() == [[255]]


SCATTERS = [  # (dimension numbers, index shape and range, updates' shape) into (4, 5, 3)
    (_sd((1, 2), (0,), (0,)), (6, 1), (-2, 6), (6, 5, 3)),
    (_sd((1,), (0, 1), (0, 1)), (9, 2), (-1, 4), (9, 2)),        # windows of 2 along axis 2
    (_sd((0, 2), (1,), (1, 2)), (3, 2, 2), (-1, 4), (2, 3, 2, 2)),
    (_sd((2,), (1,), (1,), (0,), (1,)), (3, 4, 1), (0, 5), (3, 4, 3)),
    (_sd((), (0, 1, 2), (2, 0, 1)), (12, 3), (0, 3), (12,)),      # many repeats
]
COMBINES = {"scatter_add": np.add, "scatter_mul": np.multiply, "scatter_min": np.minimum,
            "scatter_max": np.maximum, "scatter": lambda a, b: b,
            "scatter_sub": np.subtract}


@pytest.mark.parametrize("name", sorted(COMBINES))
@pytest.mark.parametrize("dn, ishape, irange, ushape", SCATTERS)
def test_scatters_are_xlas_scatter_known_or_traced_indices(name, dn, ishape, irange, ushape):
    x, u = rng.normal(size=(4, 5, 3)), rng.normal(size=ushape)
    idx = rng.integers(*irange, size=ishape)
    fn = getattr(lax, name)
    for mode in (None, "drop", "clip", "promise_in_bounds"):
        want = _scatter_reference(x, idx, u, dn, COMBINES[name], mode)
        got = fn(x, idx, u, dn, mode=mode)
        assert_close(got, want, rtol=1e-12, atol=1e-12)
        traced = wg.compile(lambda x, i, u: fn(x, i, u, dn, mode=mode), x, idx, u)
        assert_close(traced(x, idx, u), want, rtol=1e-12, atol=1e-12)
    check_grads(lambda x, u: fn(x, idx, u, dn), x, u)
    check_grads(lambda x, u: traced(x, idx, u), x, u)


def test_scatter_under_vmap_over_indices_operands_and_updates():
    dn = _sd((), (0,), (0,))
    idx = np.array([[[0], [3]], [[2], [2]], [[4], [7]]])     # 7: dropped
    xs, us = rng.normal(size=(3, 5)), rng.normal(size=(3, 2))
    for name in sorted(COMBINES):
        fn = getattr(lax, name)
        got = wg.vmap(lambda x, i, u: fn(x, i, u, dn))(xs, idx, us)
        want = np.stack([_scatter_reference(x, i, u, dn, COMBINES[name])
                         for x, i, u in zip(xs, idx, us)])
        assert_close(got, want, rtol=1e-12, atol=1e-12)
        check_grads(lambda xs, us: wg.vmap(lambda x, i, u: fn(x, i, u, dn))(xs, idx, us),
                    xs, us)


def test_scatter_min_and_max_share_the_derivative_among_ties():
    dn = _sd((), (0,), (0,))
    idx = np.array([[1], [1], [2], [1]])
    x = np.array([0.0, 1.0, 2.0])
    u = np.array([1.0, 0.5, 2.0, 1.0])
    # element 1: the operand's 1.0 and updates 0 and 3 tie at the maximum, a third each;
    # element 2: the operand and update 2 tie, a half each; element 0 is the operand's
    for fn in (lax.scatter_max, lax.scatter_min):
        g = wg.grad(lambda x, u: wnp.sum(fn(x, idx, u, dn) * np.array([1.0, 3.0, 4.0])),
                    argnums=(0, 1))
        gx, gu = g(x, u)
        if fn is lax.scatter_max:
            assert_close(gx, [1.0, 1.0, 2.0])
            assert_close(gu, [1.0, 0.0, 2.0, 1.0])
        else:      # the least at element 1 is update 1's 0.5 alone
            assert_close(gx, [1.0, 0.0, 2.0])
            assert_close(gu, [0.0, 3.0, 2.0, 0.0])
        gt = wg.compile(g, x, u)(x, u)           # (the same with traced indices)
        assert_close(gt[0], gx)
        assert_close(gt[1], gu)
        # the value is exact, not a rounded mean of the tied numbers
        assert fn(np.full(2, 0.1), np.array([[0], [0]]), np.full(2, 0.1), dn).tolist() == \
            [0.1, 0.1]


def test_scatter_max_into_minus_inf_leaves_unreached_elements_minus_inf():
    # a segment maximum starts from -inf: an element no update reaches stays -inf (the
    # tie share once computed -inf - -inf there, nan), with derivative 0, known indices
    # and traced alike, and no NumPy warning
    dn = _sd((), (0,), (0,))
    idx = np.array([[0], [0], [2]])
    for fn, start in ((lax.scatter_max, -np.inf), (lax.scatter_min, np.inf)):
        f = lambda u, i: fn(wnp.full(4, start), i, u, dn)
        u = np.array([2.0, 2.0, start])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for g in (f, wg.compile(f, u, idx)):
                assert g(u, idx).tolist() == [2.0, start, start, start]
                gu = wg.grad(lambda u: wnp.sum(g(u, idx) * np.arange(1.0, 5.0)))(u)
                assert gu.tolist() == [0.5, 0.5, 0.0]


def test_scatter_apply_and_index_take():
    dn = _sd((), (0,), (0,))
    x = rng.uniform(0.5, 1.5, size=5)
    idx = np.array([[1], [1], [3], [8]])
    want = x.copy()
    want[1], want[3] = np.sin(np.sin(x[1])), np.sin(x[3])    # named twice: applied twice
    f = lambda x, i: lax.scatter_apply(x, i, wnp.sin, dn, update_shape=(4,))
    assert_close(f(x, idx), want, rtol=1e-14)
    assert_close(wg.compile(f, x, idx)(x, idx), want, rtol=1e-14)
    check_grads(lambda x: f(x, idx), x)
    src = rng.normal(size=(3, 4, 2))
    rows, cols = np.array([4, -1, 0]), np.array([-5, 9, 3])
    assert_close(lax.index_take(src, (rows, cols), (0, 1)), src[rows % 3, cols % 4])
    assert_close(lax.index_take(src, (cols,), (1,)), src[:, cols % 4].transpose(1, 0, 2))
    check_grads(lambda s: lax.index_take(s, (rows, cols), (0, 1)), src)


def test_gather_and_scatter_errors_name_their_arguments():
    x = np.zeros((4, 5))
    dn = _gd((1,), (0,), (0,))
    with pytest.raises(ValueError, match=r"slice_sizes \(1, 6\) must give one size"):
        lax.gather(x, np.zeros((2, 1), int), dn, (1, 6))
    with pytest.raises(ValueError, match=r"slice_sizes \(2, 5\) must be 1 on the collapsed"):
        lax.gather(x, np.zeros((2, 1), int), dn, (2, 5))
    with pytest.raises(ValueError, match=r"start_indices of shape \(2, 2\) hold index "
                                         r"vectors of 2, but start_index_map \(0,\)"):
        lax.gather(x, np.zeros((2, 2), int), dn, (1, 5))
    with pytest.raises(TypeError, match="start_indices must be integers, got float64"):
        lax.gather(x, np.zeros((2, 1)), dn, (1, 5))
    with pytest.raises(TypeError, match="must be a GatherDimensionNumbers"):
        lax.gather(x, np.zeros((2, 1), int), ((1,), (0,), (0,)), (1, 5))
    with pytest.raises(ValueError, match="offset_dims"):
        lax.gather(x, np.zeros((2, 1), int), _gd((0, 1), (0,), (0,)), (1, 5))
    with pytest.raises(ValueError, match="Unknown gather mode 'wrap'"):
        lax.gather(x, np.zeros((2, 1), int), dn, (1, 5), mode="wrap")
    sdn = _sd((1,), (0,), (0,))
    with pytest.raises(ValueError, match=r"updates of shape \(3, 5\) do not fit.*"
                                         r"scatter_indices, \(2,\)"):
        lax.scatter_add(x, np.zeros((2, 1), int), np.zeros((3, 5)), sdn)
    with pytest.raises(ValueError, match=r"updates of shape \(2, 6\) do not fit"):
        lax.scatter_add(x, np.zeros((2, 1), int), np.zeros((2, 6)), sdn)
    with pytest.raises(TypeError, match="must be a ScatterDimensionNumbers"):
        lax.scatter(x, np.zeros((2, 1), int), np.zeros((2, 5)), dn)
    with pytest.raises(ValueError, match=r"index_take: idxs must be 1-D arrays of one length"):
        lax.index_take(x, (np.zeros(2, int), np.zeros(3, int)), (0, 1))


def test_gather_and_scatters_agree_with_jax(jax):
    jlax = jax.lax
    x = rng.normal(size=(4, 5, 3))
    for dn, sizes, ishape, irange in GATHERS:
        idx = rng.integers(*irange, size=ishape)
        for mode in (None, "clip", "fill", "promise_in_bounds"):
            theirs = jlax.gather(x, idx, jlax.GatherDimensionNumbers(*dn), sizes,
                                 mode=mode)
            np.testing.assert_array_equal(lax.gather(x, idx, dn, sizes, mode=mode),
                                          np.asarray(theirs))
    for dn, ishape, irange, ushape in SCATTERS:
        idx, u = rng.integers(*irange, size=ishape), rng.normal(size=ushape)
        for name in ("scatter_add", "scatter_sub", "scatter_mul", "scatter_min",
                     "scatter_max"):
            for mode in (None, "clip", "drop"):
                theirs = getattr(jlax, name)(x, idx, u, jlax.ScatterDimensionNumbers(*dn),
                                             mode=mode)
                assert_close(getattr(lax, name)(x, idx, u, dn, mode=mode),
                             np.asarray(theirs), rtol=1e-12, atol=1e-12)
    # the tie rule of scatter_max's derivative, and scatter's with repeated indices
    dn = _sd((), (0,), (0,))
    idx, x1, u1 = np.array([[1], [1], [2], [1]]), np.array([0.0, 1.0, 2.0]), \
        np.array([1.0, 0.5, 2.0, 1.0])
    for name in ("scatter_max", "scatter_min", "scatter_add", "scatter"):
        loss = lambda mod, fn: lambda x, u: (fn(x, idx, u, dn) *
                                             mod.asarray([1.0, 3.0, 4.0])).sum()
        ours = wg.grad(loss(wnp, getattr(lax, name)), argnums=(0, 1))(x1, u1)
        theirs = jax.grad(loss(jax.numpy, getattr(jlax, name)), argnums=(0, 1))(x1, u1)
        for a, b in zip(ours, theirs):
            assert_close(a, np.asarray(b), rtol=1e-14)
    src, rows, cols = rng.normal(size=(3, 4, 2)), np.array([4, -1, 0]), np.array([-5, 9, 3])
    assert_close(lax.index_take(src, (rows, cols), (0, 1)),
                 np.asarray(jlax.index_take(src, (rows, cols), (0, 1))))


# ---- structure -----------------------------------------------------------------------------
def _pad_reference(x, value, config):
    """lax.pad written out for 1-D and 2-D: interior first, then edges (a negative crops)."""
    out = x
    for axis, (lo, hi, inner) in enumerate(config):
        out = np.moveaxis(out, axis, 0)
        n = out.shape[0]
        spread = np.full((n + max(n - 1, 0) * inner,) + out.shape[1:], value)
        spread[::inner + 1] = out
        parts = [np.full((max(lo, 0),) + out.shape[1:], value), spread,
                 np.full((max(hi, 0),) + out.shape[1:], value)]
        grown = np.concatenate(parts)
        grown = grown[-min(lo, 0):len(grown) + min(hi, 0)]
        out = np.moveaxis(grown, 0, axis)
    return out


@pytest.mark.parametrize("config", [[(1, 2, 0), (0, 0, 1)], [(-1, 1, 2), (2, -2, 0)],
                                    [(0, 0, 0), (-1, -1, 1)]])
def test_pad_with_interior_and_negative_edges(config):
    x = rng.normal(size=(3, 4))
    assert_close(lax.pad(x, -7.0, config), _pad_reference(x, -7.0, config))
    check_grads(lambda x: lax.pad(x, 0.0, config), x)
    # a traced padding value: its derivative counts the padded places
    n_pad = lax.pad(np.zeros((3, 4)), 1.0, config).sum()
    assert_close(wg.grad(lambda v: wnp.sum(lax.pad(x, v, config)))(2.0), n_pad)


def test_structural_functions_against_numpy():
    x = rng.normal(size=(2, 3, 4))
    assert lax.reshape(x, (4, 6), dimensions=(2, 0, 1)).tolist() == \
        x.transpose(2, 0, 1).reshape(4, 6).tolist()
    assert lax.broadcast_in_dim(x[:, 0, :], (2, 5, 4), (0, 2)).shape == (2, 5, 4)
    assert_close(lax.broadcast_in_dim(x[:, 0, :], (2, 5, 4), (0, 2))[:, 3, :], x[:, 0, :])
    assert lax.broadcast(x, (3,)).shape == (3, 2, 3, 4)
    assert lax.collapse(x, 0, 2).shape == (6, 4)
    assert_close(lax.rev(x, (0, 2)), x[::-1, :, ::-1])
    assert_close(lax.slice(x, (0, 1, 0), (2, 3, 4), (1, 1, 2)), x[0:2, 1:3, 0:4:2])
    assert_close(lax.slice_in_dim(x, 1, 3, axis=-1), x[..., 1:3])
    assert_close(lax.index_in_dim(x, -1, axis=1, keepdims=False), x[:, -1])
    assert_close(lax.squeeze(x[:1], (0,)), x[0])
    assert lax.expand_dims(x, (0, 4)).shape == (1, 2, 3, 4, 1)
    assert [p.shape for p in lax.split(x, (1, 3), axis=2)] == [(2, 3, 1), (2, 3, 3)]
    assert_close(lax.concatenate([x, x], 1), np.concatenate([x, x], 1))
    assert lax.iota(np.int32, 3).dtype == np.int32
    assert lax.broadcasted_iota(int, (2, 3), 0).tolist() == [[0, 0, 0], [1, 1, 1]]
    assert lax.full_like(x, 2.0, shape=(2,)).tolist() == [2.0, 2.0]
    assert lax.convert_element_type(np.array([1.7, -1.7]), np.int32).tolist() == [1, -1]
    check_grads(lambda x: lax.broadcast_in_dim(x, (3, 2, 4), (1, 2)), x[:, 0, :])
    with pytest.raises(TypeError, match="broadcast_dimensions"):
        lax.broadcast_in_dim(x[0], (3, 4), (1, 0))


def test_reductions_scans_and_sorting():
    x = rng.normal(size=(3, 5))
    assert_close(lax.reduce_sum(x, (1,)), x.sum(1))
    assert_close(lax.reduce_max(x, (0, 1)), x.max())
    assert lax.reduce_and(x > -10, (0,)).all() and not lax.reduce_or(x > 10, (0, 1))
    assert lax.argmax(x, 1, np.int32).tolist() == np.argmax(x, 1).tolist()
    assert lax.argmin(x, 0, np.int64).dtype == np.int64
    assert_close(lax.cumsum(x, axis=1, reverse=True), np.cumsum(x[:, ::-1], 1)[:, ::-1])
    assert_close(lax.cummax(x, axis=1), np.maximum.accumulate(x, 1))
    assert_close(lax.cumlogsumexp(x, axis=1), np.logaddexp.accumulate(x, 1))
    for name in ("cumsum", "cumprod", "cumlogsumexp", "reduce_prod"):
        fn = getattr(lax, name)
        check_grads((lambda x: fn(x, (1,))) if name == "reduce_prod" else
                    (lambda x: fn(x, axis=1, reverse=True)), x)
    keys, vals = lax.sort((x[0], x[1]))
    order = np.argsort(x[0], kind="stable")
    assert_close(keys, x[0][order])
    assert_close(vals, x[1][order])
    assert_close(lax.sort_key_val(x[0], x[2])[1], x[2][order])
    assert_close(lax.sort(x, dimension=0), np.sort(x, 0))
    vals, idx = lax.top_k(x, 2)
    assert idx.dtype == np.int32 and idx.tolist() == np.argsort(-x, 1)[:, :2].tolist()
    assert_close(vals, np.take_along_axis(x, idx, 1))
    check_grads(lambda x: lax.top_k(x, 3)[0], x)
    # traced without values (compile): the orders are graph nodes too
    compiled = wg.compile(lambda x: (lax.top_k(x, 2), lax.sort((x[0], x[1])),
                                     lax.argmax(x, 1, np.int32)), x)
    (cv, ci), (ck, cs), am = compiled(x)
    assert_close(cv, vals)
    assert ci.tolist() == idx.tolist() and am.tolist() == np.argmax(x, 1).tolist()
    assert_close(ck, x[0][order])
    assert_close(cs, x[1][order])
    check_grads(lambda x: lax.sort((x[0], x[1] * x[2]))[1], x)


# ---- reduce and reduce_window --------------------------------------------------------------
def _reduce_window_reference(x, init, fold, dims, strides, pads, base, spread):
    """XLA's ReduceWindow written out: each window's elements of the dilated operand (holes
    and padding take no part) folded into init, result by result."""
    dilated_index = {}                # a position of the dilated operand -> x's element
    for e in np.ndindex(*x.shape):
        dilated_index[tuple(i * b for i, b in zip(e, base))] = e
    dilated = [(m - 1) * b + 1 for m, b in zip(x.shape, base)]
    out_shape = [max((m + lo + hi - ((k - 1) * d + 1)) // s + 1, 0)
                 for m, (lo, hi), k, d, s in zip(dilated, pads, dims, spread, strides)]
    out = np.empty(out_shape)
    for o in np.ndindex(*out_shape):
        acc = init
        for w in np.ndindex(*dims):
            at = tuple(i * s + j * d - lo for i, s, j, d, (lo, _) in
                       zip(o, strides, w, spread, pads))
            if at in dilated_index:
                acc = fold(acc, x[dilated_index[at]])
        out[o] = acc
    return out


WINDOWS = [  # window, strides, padding, base dilation, window dilation
    ((2, 3), (1, 1), "VALID", None, None),
    ((3, 2), (2, 1), "SAME", None, None),
    ((2, 2), (1, 2), "SAME_LOWER", (2, 1), (1, 2)),
    ((2, 3), (3, 1), ((1, 2), (-1, 0)), (1, 3), (2, 1)),
    ((1, 1), (1, 1), ((0, 0), (0, 0)), None, None),
]
MONOIDS = [(lax.add, np.add, 0.0), (lax.max, np.maximum, -np.inf),
           (lax.min, np.minimum, np.inf), (lax.mul, np.multiply, 1.0),
           (lax.add, np.add, 1.5), (lax.max, np.maximum, 0.0)]


@pytest.mark.parametrize("window, strides, padding, base, spread", WINDOWS)
def test_reduce_window_is_xlas_reduce_window(window, strides, padding, base, spread):
    x = rng.normal(size=(5, 7))
    ones = (1, 1)
    dilated = [(m - 1) * b + 1 for m, b in zip(x.shape, base or ones)]
    spans = [(k - 1) * d + 1 for k, d in zip(window, spread or ones)]
    pads = lax.padtype_to_pads(dilated, spans, strides, padding) \
        if isinstance(padding, str) else padding
    for comp, fold, init in MONOIDS:
        want = _reduce_window_reference(x, init, fold, window, strides, pads, base or ones,
                                        spread or ones)
        got = lax.reduce_window(x, init, comp, window, strides, padding, base, spread)
        assert_close(got, want, rtol=1e-13, atol=1e-13)
        assert got.shape == lax.reduce_window_shape_tuple(x.shape, window, strides, pads,
                                                          base, spread)
        f = lambda x: lax.reduce_window(x, init, comp, window, strides, padding, base, spread)
        check_grads(f, x)
    traced = wg.compile(f, x)                       # (the last: max with init 0)
    assert_close(traced(x), f(x))
    xs = rng.normal(size=(3, 5, 7))
    assert_close(wg.vmap(f)(xs), np.stack([f(x) for x in xs]))


def test_reduce_window_max_passes_the_cotangent_to_each_windows_largest():
    x = np.array([[1.0, 7.0, 2.0], [3.0, 7.0, 5.0], [0.0, 4.0, 6.0]])
    g = wg.grad(lambda x: wnp.sum(lax.reduce_window(x, -np.inf, lax.max, (2, 2), (1, 1),
                                                    "VALID")))(x)
    # the top windows hold the 7s at (0, 1) and (1, 1), a tie that goes to (0, 1), first
    # in row-major order; the bottom ones hold only the 7 at (1, 1)
    assert g.tolist() == [[0.0, 2.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 0.0]]
    # an average pool: each element's count of windows over the window's size
    x = rng.normal(size=(4, 4))
    avg = lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (2, 2), "VALID") / 4.0
    assert_close(avg(x), x.reshape(2, 2, 2, 2).mean(axis=(1, 3)))
    assert_close(wg.grad(lambda x: wnp.sum(avg(x)))(x), np.full((4, 4), 0.25))


def test_reduce_with_a_monoid_and_what_is_refused():
    x = rng.normal(size=(3, 4))
    assert_close(lax.reduce(x, 0.0, lax.add, (0,)), x.sum(0))
    assert_close(lax.reduce(x, 1.0, wnp.multiply, (0, 1)), x.prod())
    assert_close(lax.reduce(x, -np.inf, np.maximum, (1,)), x.max(1))
    assert_close(lax.reduce(x, 0.5, lax.min, (1,)), np.minimum(x.min(1), 0.5))
    assert_close(lax.reduce(x, 2.0, lax.add, (0,)), x.sum(0) + 2.0)      # init: once
    import operator
    assert_close(lax.reduce((x,), (0.0,), operator.add, (1,))[0], x.sum(1))
    check_grads(lambda x: lax.reduce(x, 1.0, lax.mul, (1,)), x)
    check_grads(lambda x: lax.reduce(x, 0.0, lax.max, (0,)), x)
    with pytest.raises(NotImplementedError, match="computation '<lambda>' is not supported: "
                                                  "only the monoids lax.add, lax.mul"):
        lax.reduce(x, 0.0, lambda a, b: a + b, (0,))
    with pytest.raises(NotImplementedError, match="reduce_window: computation"):
        lax.reduce_window(x, 0.0, wnp.logaddexp, (2, 2), (1, 1), "VALID")
    with pytest.raises(NotImplementedError, match="only one operand is supported"):
        lax.reduce((x, x), (0.0, 0.0), lax.add, (0,))
    with pytest.raises(ValueError, match=r"window_strides \(1,\) must hold one positive "
                                         r"integer for each axis of the operand of shape "
                                         r"\(3, 4\)"):
        lax.reduce_window(x, 0.0, lax.add, (2, 2), (1,), "VALID")
    with pytest.raises(ValueError, match="padding 'FULL' is not one of"):
        lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), "FULL")
    with pytest.raises(ValueError, match="one \\(low, high\\) pair for each axis"):
        lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), [(1, 1)])


def test_reduce_window_and_reduce_agree_with_jax(jax):
    jlax = jax.lax
    x = rng.normal(size=(5, 7))
    for comp, jcomp, init in [(lax.add, jlax.add, 0.0), (lax.max, jlax.max, -np.inf),
                              (lax.min, jlax.min, np.inf), (lax.mul, jlax.mul, 1.0),
                              (lax.add, jlax.add, 1.5), (lax.max, jlax.max, 0.0)]:
        for window, strides, padding, base, spread in WINDOWS:
            theirs = jlax.reduce_window(x, init, jcomp, window, strides, padding, base,
                                        spread)
            assert_close(lax.reduce_window(x, init, comp, window, strides, padding, base,
                                           spread), np.asarray(theirs), rtol=1e-13)
        # JAX's own functions are recognised too
        assert_close(lax.reduce(x, init, jcomp, (1,)),
                     np.asarray(jlax.reduce(x, init, jcomp, (1,))), rtol=1e-13)
    for shape, window, strides in [((5, 6), (3, 2), (2, 1)), ((7,), (4,), (3,))]:
        for padding in ("SAME", "SAME_LOWER", "VALID", "same"):
            assert lax.padtype_to_pads(shape, window, strides, padding) == \
                [tuple(p) for p in jlax.padtype_to_pads(shape, window, strides, padding)]
    assert lax.reduce_window_shape_tuple((7, 6), (3, 2), (2, 2), ((1, 1), (0, 0)),
                                         (2, 1), (1, 2)) == \
        tuple(jlax.reduce_window_shape_tuple((7, 6), (3, 2), (2, 2), ((1, 1), (0, 0)),
                                             (2, 1), (1, 2)))


# ---- products --------------------------------------------------------------------------
def test_dot_general_is_numpys_contraction():
    a, b = rng.normal(size=(4, 2, 3, 5)), rng.normal(size=(4, 5, 3, 6))
    got = lax.dot_general(a, b, (((2, 3), (2, 1)), ((0,), (0,))))
    assert_close(got, np.einsum("bijk,bkjl->bil", a, b))
    assert_close(lax.dot(a[0, 0], b[0, :, 0]), a[0, 0] @ b[0, :, 0])
    assert_close(lax.batch_matmul(a[:, 0], b[:, :, 0]), a[:, 0] @ b[:, :, 0])
    check_grads(lambda a, b: lax.dot_general(a, b, (((2, 3), (2, 1)), ((0,), (0,)))), a, b)
    with pytest.raises(TypeError, match="must pair"):
        lax.dot_general(a, b, (((2,), (2, 1)), ((0,), (0,))))


def _conv_reference(x, k, strides, pads, dilation, groups):
    """A direct loop: every output pixel as a sum over its window."""
    x = np.pad(x, [(0, 0), (0, 0)] + [(max(lo, 0), max(hi, 0)) for lo, hi in pads])
    x = x[:, :, -min(pads[0][0], 0) or None:x.shape[2] + min(pads[0][1], 0) or None,
          -min(pads[1][0], 0) or None:x.shape[3] + min(pads[1][1], 0) or None]
    n, c, h, w = x.shape
    o, cg, kh, kw = k.shape
    sh, sw = strides
    dh, dw = dilation
    ho, wo = (h - (kh - 1) * dh - 1) // sh + 1, (w - (kw - 1) * dw - 1) // sw + 1
    out = np.zeros((n, o, ho, wo))
    for q in range(o):
        g = q // (o // groups)
        for i in range(ho):
            for j in range(wo):
                win = x[:, g * cg:(g + 1) * cg, i * sh:i * sh + (kh - 1) * dh + 1:dh,
                        j * sw:j * sw + (kw - 1) * dw + 1:dw]
                out[:, q, i, j] = np.sum(win * k[q], axis=(1, 2, 3))
    return out


def _same(n, k, s, d, lower=False):
    span = (k - 1) * d + 1
    total = max((-(-n // s) - 1) * s + span - n, 0)
    small = total // 2
    return (total - small, small) if lower else (small, total - small)


@pytest.mark.parametrize("strides, padding, dilation, groups", [
    ((1, 1), "VALID", (1, 1), 1), ((1, 1), "SAME", (1, 1), 1), ((2, 2), "SAME", (1, 1), 1),
    ((2, 1), "SAME_LOWER", (1, 1), 2), ((1, 2), ((2, 0), (1, -1)), (2, 1), 1),
    ((1, 1), "SAME", (2, 2), 2)])
def test_conv_general_dilated_against_a_direct_loop(strides, padding, dilation, groups):
    x = rng.normal(size=(2, 4, 7, 6))
    k = rng.normal(size=(4, 4 // groups, 3, 2))
    if isinstance(padding, str):
        pads = [(0, 0)] * 2 if padding == "VALID" else \
            [_same(n, kk, s, d, padding == "SAME_LOWER")
             for n, kk, s, d in zip((7, 6), (3, 2), strides, dilation)]
    else:
        pads = list(padding)
    got = lax.conv_general_dilated(x, k, strides, padding, rhs_dilation=dilation,
                                   feature_group_count=groups)
    assert_close(got, _conv_reference(x, k, strides, pads, dilation, groups), rtol=1e-10)
    check_grads(lambda x, k: lax.conv_general_dilated(
        x, k, strides, padding, rhs_dilation=dilation, feature_group_count=groups),
        x[:1], k, order=1)


def test_conv_refuses_what_it_does_not_do_by_name():
    x, k = np.ones((1, 1, 4, 4)), np.ones((1, 1, 2, 2))
    with pytest.raises(ValueError, match="padding 'SAME' with lhs_dilation \\(2, 2\\) is not "
                                         "defined"):
        lax.conv_general_dilated(x, k, (1, 1), "SAME", lhs_dilation=(2, 2))
    with pytest.raises(TypeError, match="must name N and C in lhs and out"):
        lax.conv_general_dilated(x, k, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO",
                                                                             "NHWX"))
    with pytest.raises(ValueError, match="padding 'FULL'"):
        lax.conv(x, k, (1, 1), "FULL")
    with pytest.raises(NotImplementedError, match="only 1-D and 2-D convolutions"):
        lax.conv(np.ones((1, 1, 3, 3, 3)), np.ones((1, 1, 2, 2, 2)), (1, 1, 1), "VALID")
    with pytest.raises(NotImplementedError, match="batch_group_count"):
        lax.conv_general_dilated(x, k, (1, 1), "VALID", batch_group_count=2)
    with pytest.raises(ValueError, match="window_strides \\(1,\\) must hold one positive"):
        lax.conv(x, k, (1,), "VALID")


def _dilated(x, spread):
    """x (N, C, *spatial) with spread - 1 zeros between neighbours on each spatial axis."""
    out = x
    for axis, d in enumerate(spread, start=2):
        n = out.shape[axis]
        shape = list(out.shape)
        shape[axis] = (n - 1) * d + 1
        grown = np.zeros(shape)
        grown[(slice(None),) * axis + (slice(None, None, d),)] = out
        out = grown
    return out


def test_conv_layouts_lhs_dilation_and_1d_against_the_direct_loop():
    x, k = rng.normal(size=(2, 3, 5, 4)), rng.normal(size=(4, 3, 3, 2))
    pads = ((2, 1), (0, -1))
    want = _conv_reference(_dilated(x, (2, 1)), k, (1, 2), pads, (1, 2), 1)
    got = lax.conv_general_dilated(x, k, (1, 2), pads, lhs_dilation=(2, 1),
                                   rhs_dilation=(1, 2))
    assert_close(got, want, rtol=1e-10)
    assert_close(lax.conv_with_general_padding(x, k, (1, 2), pads, (2, 1), (1, 2)), want,
                 rtol=1e-10)
    # the same in TensorFlow's layout, and with the output's axes in yet another order
    nhwc = lax.conv_general_dilated(x.transpose(0, 2, 3, 1), k.transpose(2, 3, 1, 0), (1, 2),
                                    pads, (2, 1), (1, 2), ("NHWC", "HWIO", "NHWC"))
    assert_close(nhwc, want.transpose(0, 2, 3, 1), rtol=1e-10)
    cnwh = lax.conv_general_dilated(x, k, (1, 2), pads, (2, 1), (1, 2),
                                    ("NCHW", "OIHW", "CNWH"))
    assert_close(cnwh, want.transpose(1, 0, 3, 2), rtol=1e-10)
    assert lax.conv_dimension_numbers(x.shape, k.shape, ("NCHW", "OIHW", "CNWH")) == \
        lax.ConvDimensionNumbers((0, 1, 2, 3), (0, 1, 2, 3), (1, 0, 3, 2))
    check_grads(lambda x, k: lax.conv_general_dilated(
        x, k, (1, 2), pads, (2, 1), (1, 2), ("NCHW", "OIHW", "CNWH")), x[:1, :, :3], k)
    # 1-D: the 2-D loop on a height of one
    x1, k1 = rng.normal(size=(2, 3, 9)), rng.normal(size=(4, 3, 3))
    want = _conv_reference(x1[:, :, None], k1[:, :, None], (1, 2), ((0, 0), (2, 2)), (1, 2),
                           1)[:, :, 0]
    assert_close(lax.conv_general_dilated(x1, k1, (2,), "SAME", rhs_dilation=(2,)), want,
                 rtol=1e-10)
    check_grads(lambda x, k: lax.conv(x, k, (2,), "SAME"), x1, k1)


@pytest.mark.parametrize("strides, padding", [((1, 1), "VALID"), ((2, 2), "VALID"),
                                              ((3, 2), "VALID"), ((2, 1), [(1, 0), (0, 2)])])
def test_conv_transpose_is_the_derivative_of_a_forward_convolution(strides, padding):
    """With transpose_kernel=True, conv_transpose is the pullback of the forward convolution
    with that kernel (for windows at least as large as the strides, where VALID's output
    is the forward input's size); with pairs given as the forward padding
    (use_consistent_padding=True) too."""
    y, k = rng.normal(size=(2, 3, 4, 3)), rng.normal(size=(3, 5, 3, 3))   # O=3, I=5
    pairs = not isinstance(padding, str)
    size = [(n - 1) * s + kk - (lo + hi if pairs else 0)
            for n, s, kk, (lo, hi) in zip(y.shape[2:], strides, k.shape[2:],
                                          padding if pairs else [(0, 0)] * 2)]
    forward = lambda x: lax.conv_general_dilated(x, k, strides, padding)
    pullback = wg.vjp(forward, np.zeros((2, 5) + tuple(size)))[1]
    got = lax.conv_transpose(y, k, strides, padding, dimension_numbers=("NCHW", "OIHW", "NCHW"),
                             transpose_kernel=True, use_consistent_padding=pairs)
    assert_close(got, pullback(y)[0], rtol=1e-10)
    check_grads(lambda y, k: lax.conv_transpose(y, k, strides, padding,
                                                dimension_numbers=("NCHW", "OIHW", "NCHW"),
                                                transpose_kernel=True), y[:1, :, :2], k)


def test_conv_transpose_in_tensorflows_layout_and_patches():
    x, k = rng.normal(size=(2, 3, 3, 4)), rng.normal(size=(3, 2, 4, 5))     # NHWC, HWIO
    same = lax.conv_transpose(x, k, (2, 2), "SAME")
    assert same.shape == (2, 6, 6, 5)
    ref = lax.conv_transpose(x.transpose(0, 3, 1, 2), k.transpose(3, 2, 0, 1), (2, 2), "SAME",
                             dimension_numbers=("NCHW", "OIHW", "NCHW"))
    assert_close(same, ref.transpose(0, 2, 3, 1), rtol=1e-12)
    assert lax.conv_transpose(x[..., 0, :], k[:, 0], (3,), "VALID").shape == (2, 9, 5)
    xs = rng.normal(size=(3, 1, 3, 3, 4))
    assert_close(wg.vmap(lambda x: lax.conv_transpose(x, k, (2, 2), "SAME"))(xs),
                 np.stack([lax.conv_transpose(x, k, (2, 2), "SAME") for x in xs]))
    up = lambda x, k: lax.conv_transpose(x, k, (2, 1), "VALID")
    assert_close(wg.compile(up, x, k)(x, k), up(x, k))
    check_grads(up, x[:1, :2, :2], k)
    # patches: every window, channel first, then its places in row-major order
    img = rng.normal(size=(2, 3, 5, 4))
    patches = lax.conv_general_dilated_patches(img, (2, 3), (1, 1), "VALID")
    assert patches.shape == (2, 3 * 6, 4, 2)
    want = np.stack([img[:, :, i:i + 4, j:j + 2] for i in range(2) for j in range(3)], axis=2)
    assert_close(patches, want.reshape(2, 18, 4, 2))
    check_grads(lambda im: lax.conv_general_dilated_patches(im, (2, 2), (2, 1), "SAME"),
                img[:1])


# ---- elementwise -----------------------------------------------------------------------
SMOOTH = ["exp", "log", "sin", "tanh", "logistic", "rsqrt", "erf", "erfc", "erf_inv", "lgamma",
          "digamma", "sqrt", "cbrt", "expm1", "log1p", "reciprocal", "square", "atan", "asinh"]


@pytest.mark.parametrize("name", SMOOTH)
def test_smooth_elementwise_functions_to_second_order(name):
    x = rng.uniform(0.2, 0.8, size=4)
    check_grads(getattr(lax, name), x)


def test_elementwise_values_and_integer_rules():
    x = np.array([-2.5, -0.5, 0.5, 1.5, 2.5])
    assert lax.round(x).tolist() == [-3.0, -1.0, 1.0, 2.0, 3.0]
    assert lax.round(x, 1).tolist() == [-2.0, -0.0, 0.0, 2.0, 2.0]
    assert lax.div(np.array([7, -7, 7, -7]), np.array([2, 2, -2, -2])).tolist() == \
        [3, -3, -3, 3]
    assert lax.rem(np.array([7, -7]), np.array([3, 3])).tolist() == [1, -1]
    assert_close(lax.clamp(-1.0, x, 1.0), np.clip(x, -1, 1))
    assert lax.integer_pow(np.array([2.0, 3.0]), 3).tolist() == [8.0, 27.0]
    check_grads(lambda x: lax.integer_pow(x, 3) + lax.clamp(0.1, x, 0.6) + lax.atan2(x, 1 + x),
                np.array([0.2, 0.45, 0.9]))
    assert_close(wg.grad(lambda a: lax.igamma(a, 1.5))(2.0),
                 (lax.igamma(2.0 + 1e-6, 1.5) - lax.igamma(2.0 - 1e-6, 1.5)) / 2e-6,
                 rtol=1e-6)
    with pytest.raises(ValueError, match="rounding_method"):
        lax.round(x, 3)


def test_a_name_jax_lax_has_and_wengert_lax_does_not_is_an_attribute_error():
    assert wg.lax is lax
    assert not hasattr(lax, "ragged_all_to_all")
    with pytest.raises(AttributeError, match="wengert.lax has no 'ragged_all_to_all': JAX's "
                                             "jax.lax.ragged_all_to_all is not offered"):
        lax.ragged_all_to_all
    for name in lax.__all__:                 # (this module's own: each has an example)
        obj = getattr(lax, name)
        if getattr(obj, "__module__", None) == "wengert.lax":
            assert ">>>" in (obj.__doc__ or ""), name


def test_the_small_names_ports_reach_for():
    x = rng.normal(size=(2, 3))
    for p in (None, "highest", "float32", lax.Precision.HIGH, ("default", "high")):
        assert_close(lax.dot(x, x.T, precision=p), x @ x.T)
    with pytest.raises(ValueError, match="dot_general: precision 'best' is not a Precision"):
        lax.dot_general(x, x, (((1,), (1,)), ((), ())), precision="best")
    assert lax.Precision("tensorfloat32") is lax.Precision.HIGH
    assert lax.round(np.array([0.5, 2.5]), lax.RoundingMethod.TO_NEAREST_EVEN).tolist() == \
        [0.0, 2.0]
    assert lax.broadcast_shapes((2, 1), (3,), ()) == (2, 3)
    with pytest.raises(ValueError, match=r"broadcast_shapes: the shapes \(2,\), \(3,\) do not"):
        lax.broadcast_shapes((2,), (3,))
    assert lax.broadcast_to_rank(x, 4).shape == (1, 1, 2, 3)
    assert_close(lax.stack([x, 2 * x], axis=2), np.stack([x, 2 * x], axis=2))
    parts = lax.unstack(x, axis=1)
    assert len(parts) == 3 and all(np.array_equal(p, x[:, k]) for k, p in enumerate(parts))
    assert_close(lax.tile(x, (2, 3)), np.tile(x, (2, 3)))
    with pytest.raises(ValueError, match=r"tile: reps \(2,\) must give one count for each"):
        lax.tile(x, (2,))
    check_grads(lambda x: lax.tile(lax.stack(lax.unstack(x, 1), 0), (1, 2)), x)
    assert lax.empty((2, 2), np.float32).dtype == np.float32
    assert lax.optimization_barrier(x) is x
    check_grads(lambda a, b: wnp.abs(lax.complex(a, b)) ** 2, x, x[::-1])
    assert lax.reduce_xor(np.array([[1, 2], [3, 4]]), (1,)).tolist() == [3, 7]
    big = np.array([-8, 8, -8, 1], np.int32)
    by = np.array([1, 33, 40, -1], np.int32)
    # JAX's rules: a shift by the width or more, or a negative one, is 0 (-1 for a negative
    # x shifted arithmetically)
    assert lax.shift_left(np.array([1, 1, 3, 1], np.int32), by).tolist() == [2, 0, 0, 0]
    assert lax.shift_right_arithmetic(big, by).tolist() == [-4, 0, -1, 0]
    assert lax.shift_right_logical(big, by).tolist() == [(2 ** 32 - 8) >> 1, 0, 0, 0]
    with pytest.raises(TypeError, match="shift_left: x and y must be integers"):
        lax.shift_left(1.0, 2)
    pos = rng.uniform(0.2, 0.8, size=3)
    import scipy.special as sp
    assert_close(lax.bessel_i0e(pos), sp.i0e(pos), rtol=1e-12)
    assert_close(lax.bessel_i1e(-pos), sp.i1e(-pos), rtol=1e-12)
    assert_close(lax.betainc(1 + pos, 2 + pos, pos), sp.betainc(1 + pos, 2 + pos, pos),
                 rtol=1e-12)
    check_grads(lambda x: lax.bessel_i0e(x) + lax.bessel_i1e(x), pos)
    check_grads(lambda a, b, x: lax.betainc(a, b, x), 1 + pos, 2 + pos, pos, order=1)


# ---- the same values as JAX's --------------------------------------------------------------
def _jax_cases():
    x = rng.normal(size=(3, 4))
    pos = rng.uniform(0.1, 0.9, size=(3, 4))
    return [
        ("logistic", (x,)), ("rsqrt", (pos,)), ("erf_inv", (pos,)), ("lgamma", (pos,)),
        ("digamma", (pos,)), ("round", (x * 3,)), ("clamp", (-0.5, x, 0.5)),
        ("integer_pow", (x, 3)), ("cumlogsumexp", (x,)), ("cummax", (x,)),
        ("dynamic_slice", (x, (-1, 5), (2, 2))),
        ("dynamic_update_slice", (x, np.ones((2, 2)), (2, -7))),
        ("pad", (x, 0.5, [(-1, 2, 1), (1, 0, 2)])),
        ("dot_general", (x, pos, (((1,), (1,)), ((), ())))),
        ("broadcast_in_dim", (x[0], (2, 4, 3), (1,))),
        ("igamma", (pos + 1, pos)), ("div", (np.array([7, -7]), np.array([2, 2]))),
        ("bessel_i0e", (x,)), ("bessel_i1e", (x,)), ("betainc", (pos + 1, pos + 2, pos)),
        ("tile", (x, (2, 1))), ("stack", ([x, pos], 1)), ("complex", (x, pos)),
        ("shift_right_logical", (np.array([-8, 8, 5], np.int32),
                                 np.array([3, 33, -1], np.int32))),
        ("shift_right_arithmetic", (np.array([-8, 8, -5], np.int32),
                                    np.array([3, 33, -1], np.int32))),
        ("shift_left", (np.array([-8, 8, 5], np.int32), np.array([3, 33, -1], np.int32))),
        ("broadcast_to_rank", (x, 4)), ("reduce_xor", (np.array([[1, 6], [3, 4]]), (0,))),
        ("rem", (np.array([7.5, -7.5]), np.array([2.0, 2.0]))),
    ]


def test_values_agree_with_jax_lax(jax):
    jlax = jax.lax
    for name, args in _jax_cases():
        ours = getattr(lax, name)(*args)
        theirs = getattr(jlax, name)(*args)
        assert np.allclose(ours, np.asarray(theirs), rtol=1e-12, atol=1e-12), name
    for i in (-5, 0, 2, 9):
        assert lax.switch(i, [lambda: 0, lambda: 1, lambda: 2]) == \
            jlax.switch(i, [lambda: 0, lambda: 1, lambda: 2])
    x = rng.normal(size=(2, 3, 7, 6))
    k = rng.normal(size=(4, 3, 3, 2))
    for pad in ("SAME", "SAME_LOWER", "VALID"):
        assert_close(lax.conv_general_dilated(x, k, (2, 1), pad, rhs_dilation=(1, 2)),
                     np.asarray(jlax.conv_general_dilated(x, k, (2, 1), pad,
                                                          rhs_dilation=(1, 2))),
                     rtol=1e-10)


def test_convolutions_agree_with_jax_in_every_layout(jax):
    jlax = jax.lax
    layouts = [(None, (2, 3, 7, 6), (4, 3, 3, 2)),
               (("NHWC", "HWIO", "NHWC"), (2, 7, 6, 3), (3, 2, 3, 4)),
               (("NWHC", "OHWI", "CNHW"), (2, 6, 7, 3), (4, 3, 2, 3)),
               (("NWC", "WIO", "NWC"), (2, 9, 3), (3, 3, 4))]
    for dn, xs, ks in layouts:
        x, k = rng.normal(size=xs), rng.normal(size=ks)
        n = len(xs) - 2
        assert lax.conv_dimension_numbers(xs, ks, dn) == \
            tuple(tuple(s) for s in jlax.conv_dimension_numbers(xs, ks, dn))
        for padding, spread_in in [("SAME", None), ("SAME_LOWER", None), ("VALID", None),
                                   ([(1, -1), (2, 0)][:n], (2, 1)[:n])]:
            args = (x, k, (2, 1)[:n], padding, spread_in, (1, 2)[:n], dn)
            assert_close(lax.conv_general_dilated(*args),
                         np.asarray(jlax.conv_general_dilated(*args)), rtol=1e-10)
        tn = dn or ("NCHW", "OIHW", "NCHW")     # (conv_transpose's own default: NHWC)
        spec = lax.conv_dimension_numbers(xs, ks, tn).rhs_spec
        for padding in ("SAME", "VALID", [(1, 2), (0, 1)][:n]):
            for strides, spread in [((2, 3)[:n], None), ((2, 2)[:n], (2, 1)[:n])]:
                for flip in (False, True):
                    kk = np.swapaxes(k, spec[0], spec[1]) if flip else k
                    for consistent in (False, True):
                        args = (x, kk, strides, padding, spread, tn, flip)
                        assert_close(
                            lax.conv_transpose(*args, use_consistent_padding=consistent),
                            np.asarray(jlax.conv_transpose(
                                *args, use_consistent_padding=consistent)), rtol=1e-10)
        if n == 2:
            for padding, spread_in in (("SAME", None), (((1, 0), (2, -1)), (1, 2))):
                args = (x, (3, 2), (2, 1), padding, spread_in, (2, 1), dn)
                assert_close(lax.conv_general_dilated_patches(*args),
                             np.asarray(jlax.conv_general_dilated_patches(*args)))
