"""wengert.ops, JAX's jax.ops: segment_sum, _prod, _max and _min against a NumPy loop
written here and against JAX where it is installed; their derivatives against central
differences to second order (segment_prod's where a segment holds zeros too), JAX's tie
rule for max and min; ids known and traced (wg.compile), under wg.vmap; the errors."""
import time
import warnings

import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from wengert import ops
from fd import assert_close, check_grads

rng = np.random.default_rng(7)
HOWS = ("sum", "prod", "max", "min")
IDENTITY = {"sum": 0, "prod": 1}


def reference(how, data, ids, n, mode=None):
    """A loop over the rows, each combined into its segment's row."""
    data, ids = np.asarray(data), np.asarray(ids)
    dtype = data.dtype
    if how in IDENTITY:
        start = IDENTITY[how]
    elif dtype.kind == "b":
        start = how == "min"
    elif dtype.kind in "iu":
        start = np.iinfo(dtype).min if how == "max" else np.iinfo(dtype).max
    else:
        start = -np.inf if how == "max" else np.inf
    out = np.full((n,) + data.shape[1:], start, dtype)
    combine = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}[how]
    for row, s in zip(data, ids):
        if mode == "clip":
            s = min(max(s, 0), n - 1)
        if 0 <= s < n:
            out[s] = combine(out[s], row)
    return out


def segment(how):
    return getattr(ops, f"segment_{how}")


CASES = [  # (data shape, id range, num_segments)
    ((7,), (0, 3), None),
    ((9, 3), (-2, 6), 5),          # ids out of range both ways: dropped
    ((8, 2, 2), (0, 4), 6),        # empty segments at the end
    ((1,), (0, 1), 3),
    ((40,), (0, 2), 2),            # long segments: several levels of pairs
]


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("shape, irange, n", CASES)
def test_values_are_the_loops_known_and_traced_ids(how, shape, irange, n):
    data = rng.normal(size=shape)
    ids = rng.integers(*irange, size=shape[0])
    count = int(ids.max()) + 1 if n is None else n
    for mode in (None, "drop", "clip", "promise_in_bounds"):
        want = reference(how, data, ids, count, mode)
        got = segment(how)(data, ids, n, mode=mode)
        assert got.shape == want.shape and got.dtype == want.dtype
        assert_close(got, want, rtol=1e-13, atol=0)
        traced = wg.compile(lambda d, i: segment(how)(d, i, count, mode=mode), data, ids)
        assert_close(traced(data, ids), want, rtol=1e-13, atol=0)


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int64, np.float32, bool])
def test_dtypes_are_kept_and_empty_segments_hold_the_identity(how, dtype):
    if dtype is bool and how in ("sum", "prod"):
        with pytest.raises(TypeError, match=f"segment_{how}: data of dtype bool"):
            segment(how)(np.ones(3, bool), np.zeros(3, int))
        return
    data = (rng.normal(size=(6, 2)) * 5).astype(dtype)
    ids = np.array([0, 3, 3, 0, 1, 9])
    got = segment(how)(data, ids, 5)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, reference(how, data, ids, 5))


def test_the_results_are_jaxs(jax):
    jops = pytest.importorskip("jax.ops")
    for how in HOWS:
        for shape, irange, n in CASES:
            data = rng.normal(size=shape)
            ids = rng.integers(*irange, size=shape[0])
            for mode in (None, "clip"):
                theirs = getattr(jops, f"segment_{how}")(data, ids, n, mode=mode)
                assert_close(segment(how)(data, ids, n, mode=mode), np.asarray(theirs),
                             rtol=1e-13, atol=0)
        ints = rng.integers(-9, 9, size=(6, 2)).astype(np.int32)
        ids = np.array([0, 2, 2, 0, 4, -1])
        theirs = np.asarray(getattr(jops, f"segment_{how}")(ints, ids, 4))
        ours = segment(how)(ints, ids, 4)
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("how", HOWS)
def test_derivatives_against_central_differences_known_and_traced_ids(how):
    data = rng.normal(size=(11, 2))
    ids = np.array([0, 1, 2, 3, -1, 4, 0, 2, 1, 0, 7])    # every segment named; -1, 7 dropped
    check_grads(lambda d: segment(how)(d, ids, 5), data)
    check_grads(lambda d: segment(how)(d, ids, 5, mode="clip"), data)
    traced = wg.compile(lambda d, i: segment(how)(d, i, 5))
    check_grads(lambda d: traced(d, ids), data)
    back = wg.compile(wg.grad(lambda d, i: wnp.sum(segment(how)(d, i, 5) ** 3)))
    assert_close(back(data, ids), wg.grad(lambda d: wnp.sum(segment(how)(d, ids, 5) ** 3))(data),
                 rtol=1e-12)


def test_segment_prod_is_differentiated_exactly_where_segments_hold_zeros(jax):
    # segment 0 holds one zero, segment 1 two, segment 2 none: the derivative of a
    # product is the product of the others, with no division by the product
    data = np.array([2.0, 0.0, 3.0, 0.0, 0.0, 5.0, 7.0, -1.5])
    ids = np.array([0, 0, 0, 1, 1, 1, 2, 0])
    jac = wg.jacfwd(lambda d: segment("prod")(d, ids, 3))(data)
    assert_close(jac, [[0, -9.0, 0, 0, 0, 0, 0, 0], [0] * 8, [0, 0, 0, 0, 0, 0, 1.0, 0]])
    assert_close(wg.jacrev(lambda d: segment("prod")(d, ids, 3))(data), jac)
    check_grads(lambda d: segment("prod")(d, ids, 3), data)
    # second derivatives: of segment 1's 0 * 0 * 5 the only nonzero is d2/dx3dx4 = 5
    hess = wg.hessian(lambda d: segment("prod")(d, ids, 3)[1])(data)
    want = np.zeros((8, 8))
    want[3, 4] = want[4, 3] = 5.0
    assert_close(hess, want)
    # JAX refuses: its scatter_mul has derivatives only for unique indices
    jops = pytest.importorskip("jax.ops")
    with pytest.raises(NotImplementedError):
        jax.jacfwd(lambda d: jops.segment_prod(d, ids, 3))(data)


def test_max_and_min_share_the_derivative_among_ties_as_jax(jax):
    data = np.array([1.0, 3.0, 3.0, 2.0, 5.0, 0.0, 0.0, 4.0])
    ids = np.array([0, 0, 0, 1, 1, 2, 2, 2])
    weights = np.array([1.0, 2.0, 3.0, 4.0])
    tangent = np.arange(1.0, 9.0)
    jops = pytest.importorskip("jax.ops")
    for how in ("max", "min"):
        ours = wg.grad(lambda d: wnp.sum(segment(how)(d, ids, 4) * weights))(data)
        theirs = jax.grad(lambda d: (getattr(jops, f"segment_{how}")(d, ids, 4)
                                     * weights).sum())(data)
        assert_close(ours, np.asarray(theirs))
        _, ours_t = wg.jvp(lambda d: segment(how)(d, ids, 4), (data,), (tangent,))
        _, theirs_t = jax.jvp(lambda d: getattr(jops, f"segment_{how}")(d, ids, 4), (data,),
                              (tangent,))
        assert_close(ours_t, np.asarray(theirs_t))
        traced = wg.compile(wg.grad(lambda d, i: wnp.sum(segment(how)(d, i, 4) * weights)))
        assert_close(traced(data, ids), ours)
    assert_close(wg.grad(lambda d: wnp.sum(segment("max")(d, ids, 4) * weights))(data),
                 [0.0, 0.5, 0.5, 0.0, 2.0, 0.0, 0.0, 3.0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_tie_sharing_maps_are_each_others_transpose(dtype):
    # segment_max's JVP (the mean over each result's winners) and VJP (each winner's
    # share) are primitives of their own: <spread(g), t> = <g, mean(t)>, ties and
    # dropped ids included, their own derivatives (second order) through each other
    from wengert.primitives.segment import segment_extremum, winners_mean, winners_spread
    data = rng.integers(0, 3, size=(30, 2)).astype(dtype)      # many ties
    ids = rng.integers(-2, 7, size=30)
    best = segment_extremum(data, ids, n=6, how="max")
    t, g = rng.normal(size=data.shape).astype(dtype), rng.normal(size=best.shape).astype(dtype)
    mean, spread = winners_mean(t, data, ids, best), winners_spread(g, data, ids, best)
    assert mean.dtype == spread.dtype == dtype
    assert_close(np.vdot(spread, t), np.vdot(g, mean), rtol=1e-5 if dtype == np.float32
                 else 1e-12)
    # each result's mean is over the rows of its segment that attain it
    for k in range(6):
        won = (ids == k)[:, None] & (data == best[k])
        want = np.where(won.any(0), (t * won).sum(0) / np.maximum(won.sum(0), 1), 0.0)
        assert_close(mean[k], want, rtol=1e-5)
    # second order: the Hessian of a smooth function of segment_max, against differences
    data = rng.normal(size=(12, 2))
    ids = np.array([0, 1, 2, 0, 1, 2, 3, 3, 0, -1, 2, 1])
    f = lambda d: wnp.sum(wnp.sin(ops.segment_max(d, ids, 4)) ** 2)
    check_grads(f, data, order=2)


def test_vmap_with_one_ids_for_the_batch_folds_the_batch_into_the_rows():
    xs = rng.normal(size=(5, 9, 2))
    ids = np.array([0, 3, 1, 1, 0, 2, 3, -1, 9])          # segment 4 empty (inf)
    loss = lambda x: wnp.sum(ops.segment_min(x, ids, 5)[:4] ** 2)
    assert_close(wg.vmap(lambda x: ops.segment_min(x, ids, 5))(xs),
                 np.stack([reference("min", x, ids, 5) for x in xs]), rtol=1e-13, atol=0)
    assert_close(wg.vmap(wg.grad(loss))(xs), np.stack([wg.grad(loss)(x) for x in xs]),
                 rtol=1e-13)
    tangents = rng.normal(size=xs.shape)
    batched = wg.vmap(lambda x, t: wg.jvp(loss, (x,), (t,))[1])(xs, tangents)
    assert_close(batched, [wg.jvp(loss, (x,), (t,))[1] for x, t in zip(xs, tangents)],
                 rtol=1e-12)
    # the whole gradient is a handful of primitives, not a loop per example
    graph = wg.trace(wg.vmap(wg.grad(loss)), xs)
    assert len(graph.nodes) < 40


def test_empty_segments_and_infinite_results_have_derivative_zero_without_warnings():
    data = np.array([[1.0, -np.inf], [2.0, -np.inf]])
    ids = np.array([0, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for f in (lambda d: segment("max")(d, ids, 2),
                  wg.compile(lambda d: segment("max")(d, ids, 2)),
                  lambda d: wg.compile(lambda d, i: segment("max")(d, i, 2))(d, ids)):
            assert f(data).tolist() == [[2.0, -np.inf], [-np.inf, -np.inf]]
            g = wg.grad(lambda d: wnp.sum(wnp.where(wnp.isfinite(f(d)), f(d), 0.0)))(data)
            assert g.tolist() == [[0.0, 0.0], [1.0, 0.0]]
    nan = segment("min")(np.array([1.0, np.nan, 0.5]), np.array([0, 0, 1]))
    assert np.isnan(nan[0]) and nan[1] == 0.5


@pytest.mark.parametrize("how", HOWS)
def test_vmap_over_data_and_over_ids(how):
    xs = rng.normal(size=(3, 8, 2))
    ids = rng.integers(-1, 4, size=(3, 8))
    want = np.stack([reference(how, x, i, 4) for x, i in zip(xs, ids)])
    f = lambda x, i: segment(how)(x, i, 4)
    assert_close(wg.vmap(f)(xs, ids), want, rtol=1e-13, atol=0)
    assert_close(wg.jit(wg.vmap(f))(xs, ids), want, rtol=1e-13, atol=0)
    assert_close(wg.vmap(lambda x: f(x, ids[0]))(xs),
                 np.stack([reference(how, x, ids[0], 4) for x in xs]), rtol=1e-13, atol=0)
    # per-example gradients, the segments left empty (infinite) masked out
    finite = lambda x, i: wnp.sum(wnp.where(wnp.isfinite(f(x, i)), f(x, i), 0.0) ** 2)
    per_example = wg.vmap(wg.grad(finite))(xs, ids)
    assert_close(per_example, np.stack([wg.grad(finite)(x, i) for x, i in zip(xs, ids)]),
                 rtol=1e-12)


def test_a_hub_named_many_times_takes_log2_levels():
    # one segment of 2**14 rows: a product of pairs, 14 levels deep, not 16,384 steps
    data = 1.0 + rng.normal(size=2 ** 14) * 1e-3
    ids = np.zeros(2 ** 14, int)
    start = time.perf_counter()
    g = wg.grad(lambda d: segment("prod")(d, ids, 1)[0])(data)
    assert time.perf_counter() - start < 5.0
    assert_close(g, np.prod(data) / data, rtol=1e-10)
    graph = wg.trace(lambda d: segment("prod")(d, ids, 1), data)
    assert len(graph.nodes) < 200


def test_num_segments_ids_and_errors():
    data = np.arange(5.0)
    assert segment("sum")(data, np.array([0, 0, 1, 1, 3])).shape == (4,)   # max + 1
    assert segment("sum")(data, -np.ones(5, int)).shape == (0,)
    assert segment("sum")([1.0, 2.0], [1, 1]).tolist() == [0.0, 3.0]
    assert segment("sum")(data, np.zeros(5, int), np.int32(2)).tolist() == [10.0, 0.0]
    assert segment("sum")(data, np.zeros(5, int), bucket_size=2).tolist() == [10.0]
    with pytest.raises(ValueError, match=r"segment_sum: segment_ids must be 1-D.*data has "
                                         r"shape \(5,\), segment_ids \(2,\)"):
        segment("sum")(data, np.array([0, 1]))
    with pytest.raises(ValueError, match=r"shape \(5, 1\), segment_ids \(5, 1\)"):
        segment("max")(data[:, None], np.zeros((5, 1), int))
    with pytest.raises(TypeError, match="segment_ids must be integers, got float64"):
        segment("sum")(data, data)
    with pytest.raises(TypeError, match="complex data has no order"):
        segment("max")(data + 1j, np.zeros(5, int))
    with pytest.raises(ValueError, match="segment_ids is empty.*pass num_segments"):
        segment("sum")(np.zeros(0), np.zeros(0, int))
    with pytest.raises(ValueError, match="num_segments must be >= 0"):
        segment("sum")(data, np.zeros(5, int), -1)
    with pytest.raises(ValueError, match="unknown mode 'wrap'"):
        segment("sum")(data, np.zeros(5, int), mode="wrap")
    with pytest.raises(ValueError, match="num_segments is needed where segment_ids are "
                                         "traced without values"):
        wg.jit(ops.segment_sum)(data, np.zeros(5, int))
    with pytest.raises(ValueError, match="num_segments is traced without a value.*static"):
        wg.jit(ops.segment_sum)(data, np.zeros(5, int), 3)
    static = wg.jit(ops.segment_sum, static_argnums=2)
    assert static(data, np.array([0, 0, 1, 1, 2]), 3).tolist() == [1.0, 5.0, 4.0]
    assert segment("sum")(data + 1j, np.zeros(5, int)).tolist() == [10 + 5j]


def test_taylor_mode_through_segment_max_is_nested_forward_modes():
    # piecewise linear in data: each Taylor coefficient goes through the winners' mean
    data = rng.normal(size=(9, 2))
    ids = np.array([0, 1, 0, 2, 1, 0, 2, 2, 1])
    direction = rng.normal(size=data.shape)
    f = lambda d: wnp.sum(wnp.sin(ops.segment_max(d ** 2, ids, 3)))
    coefficients = wg.taylor(f, data, direction, order=3)
    g = lambda t: f(data + t * direction)
    d1 = lambda t: wg.jvp(g, (t,), (1.0,))[1]
    d2 = lambda t: wg.jvp(d1, (t,), (1.0,))[1]
    d3 = wg.jvp(d2, (0.0,), (1.0,))[1]
    assert_close(coefficients, [g(0.0), d1(0.0), d2(0.0) / 2, d3 / 6], rtol=1e-12)
