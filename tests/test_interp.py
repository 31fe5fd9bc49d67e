"""numpy.interp, one primitive: its values are NumPy's bit for bit, its derivatives (in x,
xp, fp, left and right) against central differences to second order and against their
closed forms (the slope, the two neighbours' weights, where they sit), under vmap,
compile and Taylor mode (the lookups behind it, searchsorted with values put in order
first: tests/test_numpy.py)."""
import numpy
import pytest

import wengert as wg
import wengert.numpy as np
from fd import assert_close, check_grads, fd_jacobian

rng = numpy.random.default_rng(11)
nan, inf = numpy.nan, numpy.inf


def sample_points(n, gap=0.05):
    """n increasing points at least `gap` apart, and values at them."""
    return numpy.cumsum(gap + rng.random(n)), rng.normal(size=n)


def away_from(xp, x, by=1e-3):
    """x moved off the sample points (a central difference across a kink is no test)."""
    x = numpy.array(x, dtype=float)
    near = numpy.abs(x[..., None] - xp).min(axis=-1) < by
    return numpy.where(near, x + 3 * by, x)


def ops(f, *args):
    """The primitives of f's graph, by name, with their counts."""
    names = [n.op.name for n in wg.trace(f, *args).live_nodes()]
    return {name: names.count(name) for name in names}


# ---- values --------------------------------------------------------------------------------
xp5 = numpy.array([-1.0, 0.0, 0.5, 2.0, 3.0])
fp5 = numpy.array([1.0, -2.0, 0.5, 3.0, 2.5])
EDGES = {
    # every sample point, between them, outside both ends, nan and infinities, -0.0
    "knots and between": (numpy.concatenate([xp5, xp5[:-1] + 0.3, [-5.0, 7.0, nan, inf,
                                                                   -inf, -0.0]]), xp5, fp5),
    "ends given": (numpy.array([-2.0, -1.0, 0.2, 3.0, 3.5, nan]), xp5, fp5, -7.0, 9.0),
    # repeated points: inside (x there takes the last one's value), first and last
    "repeated inside": (numpy.array([0.0, 0.5, 0.7, 1.0, 1.5]), numpy.array([0.0, 1.0, 1.0, 2.0]),
                        numpy.array([1.0, 5.0, 2.0, 4.0])),
    "repeated ends": (numpy.array([-1.0, 0.0, 0.5, 1.0, 2.0]), numpy.array([0.0, 0.0, 1.0, 1.0]),
                      numpy.array([3.0, 5.0, 2.0, 4.0])),
    "all one point": (numpy.array([-1.0, 1.0, 2.0]), numpy.array([1.0, 1.0, 1.0]),
                      numpy.array([3.0, 5.0, 2.0])),
    "one point": (numpy.array([0.0, 1.0, 2.0, nan]), numpy.array([1.0]), numpy.array([4.0])),
    "one point, ends": (numpy.array([0.0, 1.0, 2.0, nan]), numpy.array([1.0]),
                        numpy.array([4.0]), -1.0, 3.0),
    "two points, scalar x": (numpy.float64(0.25), numpy.array([0.0, 1.0]),
                             numpy.array([2.0, 6.0])),
    "2-d x": (numpy.linspace(-1.0, 4.0, 12).reshape(3, 4), xp5, fp5, 0.5),
    "integers": (numpy.array([-1, 0, 1, 2, 5]), numpy.array([0, 2, 4]), numpy.array([1, 7, 3])),
    # enough values and points that they are looked up in order (random, and sorted)
    "many, random": (numpy.concatenate([rng.random(5000) * 1.2 - 0.1, [nan, inf, 0.5]]),
                     numpy.sort(numpy.round(rng.random(300), 2)), rng.normal(size=300)),
    "many, sorted": (numpy.linspace(-0.1, 1.1, 6000), numpy.sort(rng.random(200)),
                     rng.normal(size=200)),
}


@pytest.mark.parametrize("name", sorted(EDGES))
def test_values_are_numpys_bit_for_bit(name):
    x, xp, fp, *ends = EDGES[name]
    want = numpy.interp(x, xp, fp, *ends)
    f = lambda x, xp, fp: np.interp(x, xp, fp, *ends)
    got = wg.vjp(f, *[a.astype(float) for a in (x, xp, fp)])[0]     # traced, with values
    compiled = wg.compile(f, x, xp, fp)(x, xp, fp)                  # traced without
    for g in (got, compiled):
        assert numpy.shape(g) == numpy.shape(want) and numpy.result_type(g) == numpy.float64
        assert numpy.array_equal(g, want, equal_nan=True), name
    assert "interp" in ops(f, *[a.astype(float) for a in (x, xp, fp)]) or len(xp) == 1


def test_interp_is_one_node_whose_rules_search_once():
    xp, fp = sample_points(6)
    x = rng.random(8) * 7
    forward = ops(lambda x, fp: np.interp(x, xp, fp), x, fp)
    assert forward.get("interp") == 1 and "searchsorted" not in forward
    # the gradient in x, xp and fp: one search, shared by the three rules
    grad = ops(wg.grad(lambda x, xp, fp: np.sum(np.interp(x, xp, fp)), argnums=(0, 1, 2)),
               x, xp, fp)
    assert grad.get("searchsorted") == 1


# ---- derivatives ---------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(), (7,), (2, 3)])
def test_derivatives_in_every_argument_against_central_differences(shape):
    xp, fp = sample_points(5)
    # queries inside, below and above, none within 1e-3 of a sample point
    x = away_from(xp, rng.uniform(xp[0] - 1.0, xp[-1] + 1.0, size=shape))
    check_grads(lambda x, xp, fp: np.interp(x, xp, fp), x, xp, fp)
    check_grads(lambda x, xp, fp, left, right: np.interp(x, xp, fp, left, right),
                x, xp, fp, numpy.float64(-0.7), numpy.float64(2.5))
    # through other functions, so that the second derivatives are not structurally zero
    check_grads(lambda x, z: np.interp(np.sin(x), np.cumsum(np.exp(z)) - 2.0, z ** 3,
                                       right=np.sum(z)),
                x, 0.3 * rng.normal(size=5))


def test_hessian_against_differences_of_the_gradient():
    xp, fp = sample_points(6)
    x = away_from(xp, rng.uniform(xp[0] - 0.5, xp[-1] + 0.5, size=9))
    f = lambda p: np.sum(np.interp(p[:9], p[9:15], p[15:], left=p[0] * p[1]) ** 2)
    p = numpy.concatenate([x, xp, fp])
    want = fd_jacobian(wg.grad(f), p, 1e-6)
    assert_close(wg.hessian(f)(p), want, rtol=1e-6, atol=1e-6)
    assert_close(wg.jacfwd(wg.grad(f))(p), want, rtol=1e-6, atol=1e-6)


def test_closed_forms_inside():
    # y = fp_j + w (fp_j+1 - fp_j), w = (x - xp_j) / (xp_j+1 - xp_j), s the slope
    xp, fp = sample_points(6)
    x = away_from(xp, rng.uniform(xp[0], xp[-1], size=10))
    j = numpy.searchsorted(xp, x, side="right") - 1
    h = xp[j + 1] - xp[j]
    w, s = (x - xp[j]) / h, (fp[j + 1] - fp[j]) / h
    rows = numpy.arange(10)
    weights = numpy.zeros((10, 6))
    weights[rows, j], weights[rows, j + 1] = 1 - w, w
    at = numpy.zeros((10, 6))
    at[rows, j], at[rows, j + 1] = -s * (1 - w), -s * w
    f = lambda x, xp, fp: np.interp(x, xp, fp)
    for jac in (wg.jacfwd, wg.jacrev):
        jx, jxp, jfp = jac(f, argnums=(0, 1, 2))(x, xp, fp)
        assert_close(jx, numpy.diag(s), rtol=1e-13, atol=0)
        assert_close(jfp, weights, rtol=1e-13, atol=1e-15)
        assert_close(jxp, at, rtol=1e-12, atol=1e-15)
    # second order: d²y / dx dfp = ∓1/h on the two neighbours, d²y / dx² = 0
    hx = wg.jacfwd(wg.jacrev(lambda fp, x: np.sum(np.interp(x, xp, fp)), argnums=1))(fp, x)
    want = numpy.zeros((10, 6))
    want[rows, j], want[rows, j + 1] = -1 / h, 1 / h
    assert_close(hx, want, rtol=1e-12, atol=0)
    assert not numpy.any(wg.hessian(lambda x: np.sum(np.interp(x, xp, fp)))(x))


def test_closed_forms_at_the_sample_points_outside_and_at_nan():
    # at a sample point the interval on its right (at the last one, on its left), as
    # JAX's; outside, 0 in x, xp and fp and 1 in the end given (else in fp_0 or fp_-1);
    # nan has no derivative at all
    xp = numpy.array([0.0, 1.0, 3.0])
    fp = numpy.array([1.0, 5.0, -1.0])
    x = numpy.array([0.0, 1.0, 3.0, -1.0, 4.0, nan])
    f = lambda x, xp, fp, left, right: np.interp(x, xp, fp, left, right)
    for jac in (wg.jacfwd, wg.jacrev):
        jx, jxp, jfp, jl, jr = jac(f, argnums=(0, 1, 2, 3, 4))(x, xp, fp, -2.0, 7.0)
        assert jx.diagonal().tolist() == [4.0, -3.0, -3.0, 0.0, 0.0, 0.0]
        assert jfp.tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0],
                                [0, 0, 0]]
        assert jxp.tolist() == [[-4, 0, 0], [0, 3, 0], [0, 0, 3], [0, 0, 0], [0, 0, 0],
                                [0, 0, 0]]
        assert jl.tolist() == [0, 0, 0, 1, 0, 0] and jr.tolist() == [0, 0, 0, 0, 1, 0]
        # without ends, the ends' values are fp_0's and fp_-1's
        jfp = jac(lambda fp: np.interp(x, xp, fp))(fp)
        assert jfp.tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0], [0, 0, 1],
                                [0, 0, 0]]


def test_closed_forms_where_sample_points_repeat():
    # inside, x at a repeated point takes the last one's value and the interval on its
    # right; at a repeated last point, fp_-1's value with slope 0; nothing is nan
    xp = numpy.array([0.0, 1.0, 1.0, 3.0, 3.0])
    fp = numpy.array([1.0, 5.0, 2.0, -1.0, 7.0])
    x = numpy.array([1.0, 3.0, 0.5, 2.0])
    jx, jxp, jfp = wg.jacrev(lambda x, xp, fp: np.interp(x, xp, fp), argnums=(0, 1, 2))(
        x, xp, fp)
    assert jx.diagonal().tolist() == [-1.5, 0.0, 4.0, -1.5]
    assert jfp.tolist() == [[0, 0, 1, 0, 0], [0, 0, 0, 0, 1], [0.5, 0.5, 0, 0, 0],
                            [0, 0, 0.5, 0.5, 0]]
    assert jxp.tolist() == [[0, 0, 1.5, 0, 0], [0, 0, 0, 0, 0], [-2, -2, 0, 0, 0],
                            [0, 0, 0.75, 0.75, 0]]
    assert numpy.all(numpy.isfinite(wg.hessian(
        lambda xp: np.sum(np.interp(x, xp, fp) ** 2))(xp)))
    # one sample point: a step, with a derivative in fp_0 (and the ends) only; NumPy gives
    # a nan x fp_0 there
    jx, jxp, jfp = wg.jacrev(lambda x, xp, fp: np.interp(x, xp, fp, right=-1.0),
                             argnums=(0, 1, 2))(numpy.array([0.0, 1.0, 2.0, nan]),
                                                numpy.array([1.0]), numpy.array([4.0]))
    assert not numpy.any(jx) and not numpy.any(jxp)
    assert jfp.tolist() == [[1.0], [1.0], [0.0], [1.0]]


def test_gradients_of_arrays_without_traced_neighbours_stay_finite():
    # an infinite or nan value of fp that no query reaches does not reach the derivatives
    xp, fp = numpy.array([0.0, 1.0, 2.0, 3.0]), numpy.array([1.0, 2.0, inf, nan])
    x = numpy.array([0.25, 0.75, -1.0, nan, inf, -inf])
    gx, gxp, gfp = wg.grad(lambda x, xp, fp: np.nansum(np.interp(x, xp, fp)[:2]),
                           argnums=(0, 1, 2))(x, xp, fp)
    assert gx.tolist() == [1.0, 1.0, 0, 0, 0, 0]
    assert gfp.tolist() == [1.0, 1.0, 0.0, 0.0] and gxp.tolist() == [-1.0, -1.0, 0.0, 0.0]


# ---- transformations -----------------------------------------------------------------------
def test_vmap_over_each_argument_and_nested():
    rows, n, m = 4, 6, 5
    xp = numpy.sort(rng.random((rows, n)), axis=1)
    fp, x = rng.normal(size=(rows, n)), rng.random((rows, m)) * 1.4 - 0.2
    left, right = rng.normal(size=rows), rng.normal(size=rows)
    f = lambda x, xp, fp, left, right: np.interp(x, xp, fp, left, right)
    for mapped in [(1, 0, 0, 0, 0), (0, 1, 0, 0, 0), (0, 0, 1, 0, 0), (0, 1, 1, 0, 0),
                   (1, 1, 1, 1, 1), (0, 0, 0, 1, 0)]:
        args = [a if m else a[0] for a, m in zip((x, xp, fp, left, right), mapped)]
        in_axes = tuple(0 if m else None for m in mapped)
        want = [numpy.interp(*[a[b] if m else a for a, m in zip(args, mapped)])
                for b in range(rows)]
        assert numpy.array_equal(wg.vmap(f, in_axes=in_axes)(*args), want), mapped
        assert numpy.array_equal(wg.compile(wg.vmap(f, in_axes=in_axes), *args)(*args), want)
        # the gradient of each example, in each of its arguments
        loss = lambda *a: np.sum(f(*a) ** 2)
        got = wg.vmap(wg.grad(loss, argnums=(0, 1, 2, 3, 4)), in_axes=in_axes)(*args)
        for b in (0, rows - 1):
            one = wg.grad(loss, argnums=(0, 1, 2, 3, 4))(
                *[a[b] if m else a for a, m in zip(args, mapped)])
            for g, o in zip(got, one):
                assert_close(g[b], o, rtol=1e-13, atol=1e-15)
    # vmap of vmap: rows of rows, with an end shared by the inner batch only
    x4, xp4, fp4 = x.reshape(2, 2, m), xp.reshape(2, 2, n), fp.reshape(2, 2, n)
    nested = wg.vmap(wg.vmap(f, in_axes=(0, 0, 0, None, None)), in_axes=(0, 0, 0, 0, None))
    want = [[numpy.interp(x4[i, k], xp4[i, k], fp4[i, k], left[i], 0.5) for k in range(2)]
            for i in range(2)]
    assert numpy.array_equal(nested(x4, xp4, fp4, left[:2], 0.5), want)
    # and the gradient of the whole batch (the primitive on rows, differentiated), in the
    # batched sample points and the end shared by each inner batch
    below = numpy.array([-1.0, 0.05, 0.5, 1.5, 0.0])     # (some queries outside the points)
    g, gl = wg.grad(lambda xp, left: np.sum(nested(x4 + below, xp, fp4, left, 0.5) ** 2),
                    argnums=(0, 1))(xp4, left[:2])
    for i in range(2):
        one = [wg.grad(lambda xp, left: np.sum(np.interp(
            x4[i, k] + below, xp, fp4[i, k], left, 0.5) ** 2), argnums=(0, 1))(
                xp4[i, k], left[i]) for k in range(2)]
        for k in range(2):
            assert_close(g[i, k], one[k][0], rtol=1e-13, atol=1e-15)
        assert_close(gl[i], one[0][1] + one[1][1], rtol=1e-13, atol=1e-15)
        assert gl[i] != 0


def test_vmap_with_many_queries_shared_by_every_set(monkeypatch):
    # the queries are put in order once for all the sets (a broadcast view), each set's
    # values still NumPy's
    xp = numpy.sort(rng.random((3, 200)), axis=1)
    fp = rng.normal(size=(3, 200))
    x = numpy.concatenate([rng.random(5000), [nan, 0.5, -inf]])
    sorts = []
    argsort = numpy.argsort
    monkeypatch.setattr(numpy, "argsort", lambda a, *args, **kw: (
        sorts.append(numpy.shape(a)), argsort(a, *args, **kw))[1])
    got = wg.vmap(lambda xp, fp: np.interp(x, xp, fp))(xp, fp)
    assert numpy.array_equal(got, [numpy.interp(x, xp[b], fp[b]) for b in range(3)],
                             equal_nan=True)
    g = wg.vmap(wg.grad(lambda xp, fp: np.nansum(np.interp(x, xp, fp) ** 2), argnums=(0, 1)))(
        xp, fp)
    # (once for the values, once for the rules' search: not once a set)
    assert sorts == [x.shape] * 3
    monkeypatch.undo()
    one = wg.grad(lambda xp, fp: np.nansum(np.interp(x, xp, fp) ** 2), argnums=(0, 1))(
        xp[2], fp[2])
    assert_close(g[0][2], one[0], rtol=1e-12, atol=1e-12)
    assert_close(g[1][2], one[1], rtol=1e-12, atol=1e-12)
    # differentiated through the batch (the primitive on rows): in the shared queries,
    # the sum of every set's derivative, forward and reverse
    x = away_from(xp.ravel(), x[5:40], by=2e-5)
    batch = lambda x, xp, fp: wg.vmap(lambda xp, fp: np.interp(x, xp, fp))(xp, fp)
    gx = wg.grad(lambda x: np.sum(batch(x, xp, fp) ** 2))(x)
    want = sum(wg.grad(lambda x: np.sum(np.interp(x, xp[b], fp[b]) ** 2))(x) for b in range(3))
    assert_close(gx, want, rtol=1e-12, atol=1e-12)
    v = rng.normal(size=x.shape)
    tangent = wg.jvp(lambda x: batch(x, xp, fp), (x,), (v,))[1]
    assert_close(tangent, [wg.jvp(lambda x: np.interp(x, xp[b], fp[b]), (x,), (v,))[1]
                           for b in range(3)], rtol=1e-13, atol=1e-15)
    check_grads(batch, x, xp, fp)


def test_compiled_gradients_are_the_eager_ones():
    xp, fp = sample_points(8)
    x = away_from(xp, rng.uniform(xp[0] - 1, xp[-1] + 1, size=20))
    loss = lambda x, xp, fp, r: np.sum(np.sin(np.interp(x, xp, fp, right=r)))
    grad = wg.grad(loss, argnums=(0, 1, 2, 3))
    fast = wg.compile(grad, x, xp, fp, 0.5)
    for a, b in zip(fast(x, xp, fp, 0.5), grad(x, xp, fp, 0.5)):
        assert_close(a, b, rtol=1e-14, atol=1e-15)
    # the C back-end writes scalar arithmetic, which a binary search is not: it says so,
    # as for every primitive it cannot write
    with pytest.raises(ValueError, match="backend='python'"):
        wg.compile(lambda x: np.interp(x, xp, fp), x, backend="c")


def test_taylor_series_are_nested_jvps():
    xp, fp = sample_points(5)
    x = away_from(xp, rng.uniform(xp[0] - 0.5, xp[-1] + 0.5, size=6))
    z, v = rng.normal(size=5) * 0.3, rng.normal(size=5)
    f = lambda z: np.interp(x + 0.1 * z[0], xp + np.cumsum(np.exp(z)) - 5, fp * z, z[1])
    series = wg.taylor(f, z, v, order=3)
    d = lambda g: (lambda z: wg.jvp(g, (z,), (v,))[1])
    assert_close(series[2], d(d(f))(z) / 2, rtol=1e-10, atol=1e-12)
    assert_close(series[3], d(d(d(f)))(z) / 6, rtol=1e-10, atol=1e-12)
    assert numpy.any(numpy.abs(series[2]) > 1e-3)      # (a second derivative to check)


def test_value_and_gradient_sort_the_queries_once(monkeypatch):
    """The gradient's search reuses the order the value's lookup made for the same array,
    and an order kept for an array changed in place since is found out, not reused."""
    xp, fp = sample_points(300)
    x = rng.random(6000) * xp[-1]
    sorts = []
    argsort = numpy.argsort
    monkeypatch.setattr(numpy, "argsort", lambda a, *args, **kw: (
        sorts.append(numpy.shape(a)), argsort(a, *args, **kw))[1])
    f = lambda fp, x: np.sum(np.interp(x, xp, fp) ** 2)
    g = wg.grad(f, argnums=(0, 1))(fp, x)
    assert sorts == [x.shape]
    monkeypatch.undo()
    want = fd_jacobian(lambda fp: numpy.sum(numpy.interp(x, xp, fp) ** 2), fp, 1e-6)
    assert_close(g[0], want, rtol=1e-6)
    from wengert.primitives.array import _lookup_order
    order = _lookup_order(x, xp.size)
    assert _lookup_order(x, xp.size) is order       # (the same array: the same order)
    rng.shuffle(x)                                  # (changed in place)
    again = _lookup_order(x, xp.size)
    assert again is not order and numpy.all(numpy.diff(x[again]) >= 0)
    assert numpy.array_equal(np.interp(x, xp, fp), numpy.interp(x, xp, fp))
