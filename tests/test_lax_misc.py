"""The rest of jax.lax in wengert.lax (bits, ragged products, approximate top-k, unshared
convolutions and their shape helpers, the gamma gradients, the bit generators), with
jax.scipy.special.bessel_jn and jax.random.key_dtype: against JAX's own answers (x64),
against references written here, and every derivative against central differences."""
import warnings

import numpy as np
import pytest
import scipy.special as sc

import wengert as wg
import wengert.numpy as wnp
from wengert import lax
from wengert import random as wr
from wengert.scipy import special
from fd import assert_close, check_grads

rng = np.random.default_rng(20260701)

INTS = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)


def _random_ints(dtype, size):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, size=size, dtype=dtype, endpoint=True)
    x[:6] = [0, 1, info.max, info.min, info.max // 2, info.min + 1]
    return x


def _same(ours, theirs):
    theirs = np.asarray(theirs)
    assert np.asarray(ours).dtype == theirs.dtype, (np.asarray(ours).dtype, theirs.dtype)
    assert np.shape(ours) == theirs.shape
    assert np.array_equal(ours, theirs)


# ---- bits --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", INTS)
def test_clz_population_count_and_mulhi_are_jaxs_for_every_width(jax, dtype):
    x, y = _random_ints(dtype, 300), _random_ints(dtype, 300)[::-1].copy()
    for name, args in (("clz", (x,)), ("population_count", (x,)), ("mulhi", (x, y)),
                       ("mulhi", (y, x))):
        want = getattr(jax.lax, name)(*args)
        _same(getattr(lax, name)(*args), want)
        _same(wg.jit(getattr(lax, name))(*args), want)      # traced without values
        _same(wg.vmap(getattr(lax, name))(*args), want)
    for i in range(6):                                       # scalars
        _same(lax.mulhi(x[i], y[i]), jax.lax.mulhi(x[i], y[i]))
        _same(lax.clz(x[i]), jax.lax.clz(x[i]))
        _same(lax.population_count(x[i]), jax.lax.population_count(x[i]))


def test_bit_functions_against_their_definitions():
    x = _random_ints(np.int64, 200)
    bits = [bin(int(v) % 2 ** 64)[2:] for v in x]
    assert lax.population_count(x).tolist() == [b.count("1") for b in bits]
    assert lax.clz(x).tolist() == [64 - len(b.lstrip("0")) for b in bits]
    y = _random_ints(np.int64, 200)[::-1]
    assert lax.mulhi(x, y).tolist() == [(int(a) * int(b)) >> 64 for a, b in zip(x, y)]
    u, v = x.view(np.uint64), y.view(np.uint64)
    assert lax.mulhi(u, v).tolist() == [(int(a) * int(b)) >> 64 for a, b in zip(u, v)]
    # a Python int takes the array's dtype, as JAX's weak integers do
    assert lax.mulhi(np.array([2 ** 30, -7], np.int32), 8).tolist() == [2, -1]
    assert lax.mulhi(np.array([2 ** 30], np.int32), 8).dtype == np.int32


def test_bit_functions_refuse_what_is_not_one_integer_type():
    for f in (lax.clz, lax.population_count):
        with pytest.raises(TypeError, match=f"{f.__name__}: x must be an array of integers, "
                                            "got float64"):
            f(np.ones(2))
        with pytest.raises(TypeError, match="got bool"):
            f(np.array([True]))
    with pytest.raises(TypeError, match="mulhi: y must be an array of integers, got float32"):
        lax.mulhi(np.ones(2, np.int32), np.ones(2, np.float32))
    with pytest.raises(TypeError, match="mulhi: x and y must have one dtype, got int32 and "
                                        "int64"):
        lax.mulhi(np.ones(2, np.int32), np.ones(2, np.int64))


BITCAST_TYPES = (np.uint8, np.int8, np.int16, np.float16, np.uint32, np.int32, np.float32,
                 np.int64, np.uint64, np.float64)


def test_bitcast_convert_type_is_jaxs_between_every_pair_of_widths(jax):
    for src in BITCAST_TYPES:
        for dst in BITCAST_TYPES:
            s, d = np.dtype(src), np.dtype(dst)
            n = max(1, d.itemsize // s.itemsize)
            x = rng.integers(0, 256, size=3 * n * s.itemsize, dtype=np.uint8).view(s)
            x = x.reshape(3, n) if n > 1 else x.reshape(3)
            want = np.asarray(jax.lax.bitcast_convert_type(x, d))
            for ours in (lax.bitcast_convert_type(x, d),
                         wg.jit(lambda x: lax.bitcast_convert_type(x, d))(x)):
                assert ours.dtype == want.dtype and ours.shape == want.shape, (s, d)
                assert np.array_equal(np.asarray(ours).view(np.uint8), want.view(np.uint8))
    # a number, which JAX reads as float64
    _same(lax.bitcast_convert_type(1.0, np.int64), jax.lax.bitcast_convert_type(1.0, np.int64))
    _same(lax.bitcast_convert_type(np.float32(-2.5), np.uint8),
          jax.lax.bitcast_convert_type(np.float32(-2.5), np.uint8))


def test_bitcast_convert_type_has_jaxs_zero_derivative_and_clear_errors(jax):
    x = rng.normal(size=3).astype(np.float32)
    f = lambda v: wnp.sum(lax.bitcast_convert_type(v, np.float32) * v)         # noqa: E731
    jf = lambda v: jax.numpy.sum(jax.lax.bitcast_convert_type(v, np.float32) * v)  # noqa
    assert_close(wg.grad(f)(x), np.asarray(jax.grad(jf)(x)))       # x itself: bits are 0
    round_trip = lambda v: lax.bitcast_convert_type(lax.bitcast_convert_type(v, np.int32),  # noqa
                                                    np.float32)
    assert np.array_equal(round_trip(x), x)
    assert np.all(wg.grad(lambda v: wnp.sum(round_trip(v)))(x) == 0)
    with pytest.raises(TypeError, match="bitcast_convert_type: bool and complex values are "
                                        "converted only to their own dtype"):
        lax.bitcast_convert_type(np.array([True]), np.uint8)
    with pytest.raises(TypeError, match="complex64 to float64"):
        lax.bitcast_convert_type(np.ones(1, np.complex64), np.float64)
    with pytest.raises(ValueError, match=r"bitcast_convert_type: uint32 is made of 4 uint8 "
                                         r"elements .* got shape \(8,\)"):
        lax.bitcast_convert_type(np.zeros(8, np.uint8), np.uint32)
    with pytest.raises(ValueError, match=r"got shape \(\)"):
        lax.bitcast_convert_type(np.uint8(1), np.uint16)


def _random_floats(dtype, size):
    """Floats of every kind: random bit patterns (NaNs, infinities, subnormals included)
    and the edges of the type."""
    unsigned = np.dtype(f"uint{8 * np.dtype(dtype).itemsize}")
    x = rng.integers(0, np.iinfo(unsigned).max, size=size, dtype=unsigned,
                     endpoint=True).view(dtype)
    info = np.finfo(dtype)
    edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, info.max, -info.max, info.tiny,
                      info.tiny / 4, 1.0, 1 / 3, 65504.0, 65520.0, 1 + 2.0 ** -8], np.float64)
    with np.errstate(over="ignore"):
        return np.concatenate([x, edges.astype(dtype)])


@pytest.mark.parametrize("dtype", (np.float16, np.float32, np.float64))
def test_reduce_precision_is_jaxs_bit_for_bit(jax, dtype):
    x = _random_floats(dtype, 4000)
    info = np.finfo(dtype)
    for e in (1, 2, 4, 5, 8, 11, info.nexp + 1):
        for m in (0, 1, 3, 7, 10, 23, info.nmant, info.nmant + 2):
            ours = lax.reduce_precision(x, e, m)
            want = np.asarray(jax.lax.reduce_precision(x, e, m))
            assert ours.dtype == want.dtype
            same = (ours.view(f"u{ours.itemsize}") == want.view(f"u{want.itemsize}")) | \
                (np.isnan(ours) & np.isnan(want))
            assert same.all(), (e, m, x[~same][:3], ours[~same][:3], want[~same][:3])
    assert np.array_equal(wg.jit(lambda v: lax.reduce_precision(v, 5, 2))(x[:50]),
                          lax.reduce_precision(x[:50], 5, 2), equal_nan=True)
    assert np.array_equal(wg.vmap(lambda v: lax.reduce_precision(v, 5, 2))(x[:50]),
                          lax.reduce_precision(x[:50], 5, 2), equal_nan=True)


def test_reduce_precision_rounds_as_its_formats_do():
    x = rng.normal(size=1000) * 10.0 ** rng.integers(-4, 4, size=1000)
    # float16 for the numbers float16 holds as normal ones
    normal = np.abs(x) >= np.finfo(np.float16).tiny
    assert np.array_equal(lax.reduce_precision(x, 5, 10)[normal],
                          x.astype(np.float16).astype(np.float64)[normal])
    assert np.all(lax.reduce_precision(x, 5, 10)[~normal] == 0)
    assert np.array_equal(lax.reduce_precision(x, 8, 23), x.astype(np.float32))
    assert np.array_equal(lax.reduce_precision(x, 11, 52), x)


def test_reduce_precision_derivatives_round_the_tangent_as_jaxs(jax):
    x = rng.normal(size=5)
    t, ct = rng.normal(size=5), rng.normal(size=5)
    f = lambda v: lax.reduce_precision(v, 5, 2)            # noqa: E731
    jf = lambda v: jax.lax.reduce_precision(v, 5, 2)       # noqa: E731
    out, tan = wg.jvp(f, (x,), (t,))
    jout, jtan = jax.jvp(jf, (x,), (t,))
    _same(out, jout)
    _same(tan, jtan)
    assert np.array_equal(tan, lax.reduce_precision(t, 5, 2))
    _same(wg.vjp(f, x)[1](ct)[0], jax.vjp(jf, x)[1](ct)[0])
    loss = lambda v: wnp.sum(f(v) ** 2 * ct)                          # noqa: E731
    jloss = lambda v: jax.numpy.sum(jf(v) ** 2 * ct)                  # noqa: E731
    assert_close(wg.grad(loss)(x), np.asarray(jax.grad(jloss)(x)), rtol=1e-15)
    assert_close(wg.hessian(loss)(x), np.asarray(jax.hessian(jloss)(x)), rtol=1e-15)
    assert_close(wg.jit(wg.grad(loss))(x), np.asarray(jax.grad(jloss)(x)), rtol=1e-15)
    # in a format that holds every float64 it is the identity, whose derivatives central
    # differences can check (of a rounding they cannot)
    check_grads(lambda v: wnp.sin(lax.reduce_precision(v, 11, 52)) * v, x)


def test_reduce_precision_errors():
    with pytest.raises(TypeError, match="reduce_precision: operand must be a float array, "
                                        "got int64"):
        lax.reduce_precision(np.array([1, 2]), 5, 10)
    with pytest.raises(ValueError, match="exponent_bits must be positive and mantissa_bits "
                                         "non-negative, got 0 and 3"):
        lax.reduce_precision(1.0, 0, 3)
    with pytest.raises(ValueError, match="got 3 and -1"):
        lax.reduce_precision(1.0, 3, -1)
    with pytest.raises(TypeError, match="exponent_bits and mantissa_bits must be integers"):
        lax.reduce_precision(1.0, 3.0, 2)


# ---- shapes as values --------------------------------------------------------------------------
def test_broadcast_like_and_shape_as_value_are_jaxs(jax):
    for arr, like in ((np.arange(3), np.zeros((2, 3))), (np.float32(2.0), np.zeros((2, 1))),
                      (rng.normal(size=(1, 3)), np.zeros((4, 2, 3), np.int32))):
        _same(lax.broadcast_like(arr, like), jax.lax.broadcast_like(arr, like))
    for shape in ((2, 3), (), (5,)):
        _same(lax.shape_as_value(shape), jax.lax.shape_as_value(shape))
    x = rng.normal(size=(1, 3))
    check_grads(lambda v: lax.broadcast_like(v, np.zeros((2, 3))) ** 2, x)
    assert_close(wg.grad(lambda v: wnp.sum(lax.broadcast_like(v, np.zeros((4, 3)))))(x),
                 np.full((1, 3), 4.0))
    with pytest.raises(ValueError, match=r"broadcast_like: arr of shape \(4,\) does not "
                                         r"broadcast to like_arr's shape \(2, 3\)"):
        lax.broadcast_like(np.ones(4), np.zeros((2, 3)))


# ---- ragged products ---------------------------------------------------------------------------
def _ragged_reference(lhs, rhs, sizes, row_of):
    """Mode 1 by its definition: row i of lhs, in group j, times rhs[j]."""
    ends = np.cumsum(sizes)
    starts = ends - sizes
    out = np.zeros((lhs.shape[0], rhs.shape[-1]))
    for i in range(lhs.shape[0]):
        for j in range(len(sizes)):
            if starts[j] <= i < ends[j]:
                out[i] += row_of(lhs[i], rhs[j])
    return out


RAGGED_CASES = [   # (dot_dimension_numbers, ragged, group dims, lhs, rhs, group_sizes)
    ((([1], [1]), ([], [])), [0], [0], (7, 3), (3, 3, 4), [2, 3, 1]),
    ((([1], [1]), ([], [])), [0], [0], (7, 3), (3, 3, 4), [0, 7, 0]),
    ((([1], [1]), ([], [])), [0], [0], (7, 3), (3, 3, 4), [3, 3, 3]),       # past the end
    ((([2], [2]), ([0], [1])), [1], [0], (2, 5, 3), (3, 2, 3, 4), [[1, 2, 2], [3, 0, 2]]),
    ((([2], [2]), ([0], [1])), [1], [0], (2, 5, 3), (3, 2, 3, 4), [1, 2, 2]),
    ((([2], [1]), ([], [])), [1], [0], (2, 5, 3), (3, 3, 4), [[1, 2, 2], [3, 0, 1]]),
    ((([0], [1]), ([], [])), [1], [2], (3, 5, 2), (4, 3, 3), [1, 2, 2]),
    ((([2], [1]), ([0], [0])), [2], [], (2, 3, 5), (2, 5, 4), [[1, 2, 2], [3, 0, 2]]),
    ((([1], [0]), ([], [])), [1], [], (2, 6), (6, 3), [2, 3, 1]),
    ((([1, 2], [0, 1]), ([], [])), [2], [], (2, 3, 5), (3, 5, 4),
     [[1, 2, 2], [3, 0, 1], [0, 0, 5]]),
    ((([2], [1]), ([0], [0])), [0], [], (4, 2, 3), (4, 3, 2), [1, 2]),       # mode 3
]


def test_ragged_dot_general_is_jaxs_in_every_mode(jax):
    for dot, ragged, groups, ls, rs, sizes in RAGGED_CASES:
        lhs, rhs, sizes = rng.normal(size=ls), rng.normal(size=rs), np.array(sizes, np.int32)
        dn = lax.RaggedDotDimensionNumbers(dot, ragged, groups)
        want = np.asarray(jax.lax.ragged_dot_general(
            lhs, rhs, sizes, jax.lax.RaggedDotDimensionNumbers(dot, ragged, groups)))
        assert_close(lax.ragged_dot_general(lhs, rhs, sizes, dn), want, rtol=1e-13)
        # the sizes traced without values: the masked form
        jitted = wg.jit(lambda a, b, s: lax.ragged_dot_general(a, b, s, dn))
        assert_close(jitted(lhs, rhs, sizes), want, rtol=1e-13)


def test_ragged_dot_is_the_grouped_product():
    lhs, rhs = rng.normal(size=(9, 3)), rng.normal(size=(4, 3, 2))
    for sizes in ([2, 3, 0, 4], [1, 1, 1, 1], [9, 0, 0, 0], [0, 0, 0, 0], [5, 5, 5, 5]):
        want = _ragged_reference(lhs, rhs, np.array(sizes), lambda row, w: row @ w)
        assert_close(lax.ragged_dot(lhs, rhs, np.array(sizes)), want, rtol=1e-13)
        assert_close(wg.jit(lax.ragged_dot)(lhs, rhs, np.array(sizes)), want, rtol=1e-13)
    sizes = np.array([2, 3, 0, 4])
    out = lax.ragged_dot(lhs.astype(np.float32), rhs.astype(np.float32), sizes,
                         preferred_element_type=np.float64)
    assert out.dtype == np.float64
    assert lax.ragged_dot(lhs.astype(np.float32), rhs.astype(np.float32), sizes).dtype == \
        np.float32
    ints = lax.ragged_dot(np.arange(6).reshape(3, 2), np.ones((2, 2, 1), np.int64),
                          np.array([1, 2]))
    assert ints.dtype == np.int64 and ints.ravel().tolist() == [1, 5, 9]
    # a batch of token sets under vmap, each split by the same sizes
    many = rng.normal(size=(3, 9, 3))
    assert_close(wg.vmap(lambda x: lax.ragged_dot(x, rhs, sizes))(many),
                 np.stack([lax.ragged_dot(x, rhs, sizes) for x in many]), rtol=1e-13)


def test_ragged_dot_derivatives(jax):
    lhs, rhs = rng.normal(size=(7, 3)), rng.normal(size=(3, 3, 2))
    sizes = np.array([2, 4, 1])
    check_grads(lambda a, b: lax.ragged_dot(a, b, sizes), lhs, rhs)
    check_grads(lambda a, b: wg.jit(lax.ragged_dot)(a, b, sizes), lhs, rhs)   # the mask
    loss = lambda a, b: wnp.sum(wnp.sin(lax.ragged_dot(a, b, sizes)))         # noqa: E731
    jloss = lambda a, b: jax.numpy.sum(jax.numpy.sin(jax.lax.ragged_dot(a, b, sizes)))  # noqa
    for ours in (wg.grad(loss, argnums=(0, 1))(lhs, rhs),
                 wg.jit(wg.grad(loss, argnums=(0, 1)))(lhs, rhs)):
        for o, t in zip(ours, jax.grad(jloss, argnums=(0, 1))(lhs, rhs)):
            assert_close(o, np.asarray(t), rtol=1e-12)
    for dot, ragged, groups, ls, rs, gs in RAGGED_CASES[3:10:2]:
        dn = lax.RaggedDotDimensionNumbers(dot, ragged, groups)
        gs = np.array(gs)
        check_grads(lambda a, b: lax.ragged_dot_general(a, b, gs, dn),
                    rng.normal(size=ls), rng.normal(size=rs))


def test_ragged_dot_errors_name_what_is_wrong():
    lhs, rhs, sizes = np.ones((6, 3)), np.ones((2, 3, 4)), np.array([3, 3])
    with pytest.raises(TypeError, match=r"ragged_dot: lhs \(m, k\), rhs \(g, k, n\) and "
                                        r"group_sizes \(g,\) must have 2, 3 and 1 axes, got "
                                        r"shapes \(6, 3\), \(3, 4\) and \(2,\)"):
        lax.ragged_dot(lhs, rhs[0], sizes)
    with pytest.raises(TypeError, match=r"must pair up with equal sizes, got shapes \(6, 3\) "
                                        r"and \(2, 2, 4\)"):
        lax.ragged_dot(lhs, np.ones((2, 2, 4)), sizes)
    with pytest.raises(TypeError, match=r"rhs's group axis 0 has 2 slices for 3 groups"):
        lax.ragged_dot(lhs, rhs, np.array([2, 2, 2]))
    with pytest.raises(TypeError, match="ragged_dot_general: group_sizes must be integers, "
                                        "got float64"):
        lax.ragged_dot(lhs, rhs, np.array([3.0, 3.0]))
    with pytest.raises(ValueError, match=r"group_sizes must not be negative, got \[-1  7\]"):
        lax.ragged_dot(lhs, rhs, np.array([-1, 7]))
    with pytest.raises(NotImplementedError, match="group_offset is not supported"):
        lax.ragged_dot(lhs, rhs, sizes, group_offset=np.array([1]))
    dn = lax.RaggedDotDimensionNumbers((([1], [0]), ([], [])), [0], [])
    with pytest.raises(TypeError, match="a ragged free axis of lhs needs exactly one group "
                                        "axis of rhs"):
        lax.ragged_dot_general(lhs, rhs[0], sizes, dn)
    dn = lax.RaggedDotDimensionNumbers((([1], [0]), ([], [])), [1], [0])
    with pytest.raises(TypeError, match=r"a ragged contracting axis takes no rhs group "
                                        r"dimension, got \(0,\)"):
        lax.ragged_dot_general(lhs, np.ones((3, 4)), sizes, dn)
    dn = lax.RaggedDotDimensionNumbers((([2], [2]), ([0], [1])), [1], [0])
    with pytest.raises(TypeError, match=r"group_sizes must have shape \(2, 2\) or \(2,\) for "
                                        r"lhs of shape \(2, 6, 3\), got \(3, 2\)"):
        lax.ragged_dot_general(np.ones((2, 6, 3)), np.ones((2, 2, 3, 4)),
                               np.ones((3, 2), np.int32), dn)
    with pytest.raises(TypeError, match="must be a RaggedDotDimensionNumbers"):
        lax.ragged_dot_general(lhs, rhs, sizes, "rows")


# ---- approximate top-k (exact here, as on JAX's CPU) -------------------------------------------
def test_approx_max_k_and_min_k_are_jaxs(jax):
    x = rng.normal(size=(5, 9))
    x[0, 3] = x[0, 5] = x[0].max() + 1                       # a tie at the top
    x[1, 2], x[1, 4] = 0.0, -0.0                            # ±0 tie
    x[2, 7] = np.inf
    x[3, 1] = -np.inf
    x[4, 0] = np.nan            # (where JAX puts NaN depends on where it is: not compared)
    for name in ("approx_max_k", "approx_min_k"):
        for axis in (-1, 1):
            for k in (1, 3, 8):
                ours = getattr(lax, name)(x[:4], k, reduction_dimension=axis)
                theirs = getattr(jax.lax, name)(x[:4], k, reduction_dimension=axis)
                for o, t in zip(ours, theirs):
                    _same(o, t)
        y = x[:4, 1:]                                       # (no NaN)
        ours = getattr(lax, name)(y, 2, reduction_dimension=0)
        for o, t in zip(ours, getattr(jax.lax, name)(y, 2, reduction_dimension=0)):
            _same(o, t)
        for o, t in zip(getattr(lax, name)(y, 2, aggregate_to_topk=False),
                        getattr(jax.lax, name)(y, 2, aggregate_to_topk=False)):
            _same(o, t)
        for o, t in zip(wg.jit(lambda v: getattr(lax, name)(v, 3))(y),
                        getattr(jax.lax, name)(y, 3)):
            _same(o, t)
    # for k = 1 the last of tied elements, as JAX's
    assert lax.approx_max_k(np.array([0.0, 5, 1, 5, 0]), 1)[1].tolist() == [3]
    assert lax.approx_min_k(np.array([[0.0, 5], [0, 1], [-0.0, 2]]), 1, 0)[1].tolist() == \
        [[2, 1]]
    vals, idx = lax.approx_max_k(x[4], 9)                     # NaN counts as the smallest
    assert idx[-1] == 0 and np.isnan(vals[-1])
    vals, idx = lax.approx_min_k(x[4], 9)                     # and as the largest
    assert idx[-1] == 0 and np.isnan(vals[-1])


def test_approx_k_derivatives_go_to_the_elements_picked(jax):
    x = rng.normal(size=(3, 6))
    ct = rng.normal(size=(3, 2))
    for name in ("approx_max_k", "approx_min_k"):
        f = lambda v: getattr(lax, name)(v, 2)[0]                          # noqa: E731
        check_grads(lambda v: f(v) ** 2, x)
        ours = wg.grad(lambda v: wnp.sum(f(v) * ct))(x)
        theirs = jax.grad(lambda v: jax.numpy.sum(getattr(jax.lax, name)(v, 2)[0] * ct))(x)
        _same(ours, theirs)
        picked = np.zeros_like(x)
        np.put_along_axis(picked, getattr(lax, name)(x, 2)[1], ct, axis=-1)
        assert np.array_equal(ours, picked)
        g = wg.grad(lambda v: wnp.sum(getattr(lax, name)(v, 1, reduction_dimension=0)[0]))(x)
        assert np.array_equal(g.sum(axis=0), np.ones(6))


def test_approx_k_errors():
    with pytest.raises(TypeError, match="approx_max_k: operand must be a float array, got "
                                        "int64"):
        lax.approx_max_k(np.array([3, 1, 2]), 2)
    with pytest.raises(TypeError, match="approx_min_k: operand must have at least one axis"):
        lax.approx_min_k(np.float64(3.0), 1)
    with pytest.raises(ValueError, match=r"approx_max_k: k=4 is outside 1..3 \(axis 0 of "
                                         r"shape \(3,\)\)"):
        lax.approx_max_k(np.ones(3), 4)
    with pytest.raises(ValueError, match="k=0 is outside"):
        lax.approx_max_k(np.ones(3), 0)
    with pytest.raises(ValueError, match="axis 2 is out of range for 2 axes"):
        lax.approx_max_k(np.ones((2, 3)), 1, reduction_dimension=2)


# ---- locally connected convolutions and the shape helpers --------------------------------------
def _local_reference(x, w, window, stride):
    """1-D, NCW / OIW: out[n, o, p] = sum over c, k of x[n, c, p*stride + k] w[o, c*K+k, p]."""
    n, c, _ = x.shape
    o, _, positions = w.shape
    out = np.zeros((n, o, positions))
    for p in range(positions):
        patch = x[:, :, p * stride:p * stride + window].reshape(n, -1)
        out[:, :, p] = patch @ w[:, :, p].T
    return out


LOCAL_CASES = [   # (dimension_numbers, lhs shape, filter_shape, strides, padding, dilations)
    (None, (2, 3, 7, 6), (3, 2), (2, 1), "SAME", None),
    (("NHWC", "HWIO", "NHWC"), (2, 7, 6, 3), (3, 2), (1, 2), "VALID", ((1, 1), (2, 1))),
    (("NWHC", "OHWI", "CNHW"), (2, 6, 7, 3), (2, 3), (1, 1), [(1, 0), (2, 1)], None),
    (("NWC", "WIO", "NWC"), (2, 9, 3), (3,), (2,), "SAME", None),
    (None, (1, 2, 5, 5), (2, 2), (1, 1), [(1, 1), (0, 1)], ((2, 1), (1, 2))),
]


def _local_operands(case, jax):
    dn, xs, window, strides, padding, dilation = case
    lhs_d, rhs_d = dilation or (None, None)
    x = rng.normal(size=xs)
    patches = jax.lax.conv_general_dilated_patches(x, window, strides, padding, lhs_d, rhs_d,
                                                   dimension_numbers=dn)
    spec = lax.conv_dimension_numbers(xs, xs, dn)
    shape = [0] * len(xs)
    shape[spec.rhs_spec[0]] = 4
    for a, b in zip(spec.rhs_spec[1:], spec.out_spec[1:]):
        shape[a] = patches.shape[b]
    return x, rng.normal(size=shape), (strides, padding, window, lhs_d, rhs_d, dn)


def test_conv_general_dilated_local_is_jaxs_in_every_layout(jax):
    for case in LOCAL_CASES:
        x, w, args = _local_operands(case, jax)
        want = np.asarray(jax.lax.conv_general_dilated_local(x, w, *args))
        assert_close(lax.conv_general_dilated_local(x, w, *args), want, rtol=1e-12)
        assert_close(wg.jit(lambda x, w: lax.conv_general_dilated_local(x, w, *args))(x, w),
                     want, rtol=1e-12)
        ct = rng.normal(size=want.shape)
        ours = wg.grad(lambda x, w: wnp.sum(lax.conv_general_dilated_local(x, w, *args) * ct),
                       argnums=(0, 1))(x, w)
        theirs = jax.grad(lambda x, w: jax.numpy.sum(
            jax.lax.conv_general_dilated_local(x, w, *args) * ct), argnums=(0, 1))(x, w)
        for o, t in zip(ours, theirs):
            assert_close(o, np.asarray(t), rtol=1e-12)


def test_conv_general_dilated_local_is_a_kernel_per_position():
    x, w = rng.normal(size=(2, 3, 9)), rng.normal(size=(4, 3 * 3, 4))
    assert_close(lax.conv_general_dilated_local(x, w, (2,), "VALID", (3,)),
                 _local_reference(x, w, 3, 2), rtol=1e-13)
    # every kernel the same: an ordinary convolution
    shared = rng.normal(size=(4, 3, 3))
    same = np.repeat(shared.reshape(4, 9, 1), 4, axis=2)
    assert_close(lax.conv_general_dilated_local(x, same, (2,), "VALID", (3,)),
                 lax.conv_general_dilated(x, shared, (2,), "VALID"), rtol=1e-13)
    small_x, small_w = rng.normal(size=(1, 2, 5)), rng.normal(size=(2, 4, 4))
    check_grads(lambda x, w: lax.conv_general_dilated_local(x, w, (1,), "VALID", (2,)),
                small_x, small_w)
    check_grads(lambda x, w: lax.conv_general_dilated_local(
        x, w, (1, 1), [(1, 0), (0, 1)], (2, 2), rhs_dilation=(1, 2)),
        rng.normal(size=(1, 2, 3, 4)), rng.normal(size=(2, 8, 3, 3)))


def test_conv_general_dilated_local_errors():
    x = np.ones((1, 2, 5))
    with pytest.raises(ValueError, match=r"conv_general_dilated_local: rhs must have shape "
                                         r"\(3, 4, 4\) .* got \(3, 4, 5\)"):
        lax.conv_general_dilated_local(x, np.ones((3, 4, 5)), (1,), "VALID", (2,))
    with pytest.raises(ValueError, match=r"filter_shape \(2, 2\) must give one size for each "
                                         r"of the 1 spatial axes"):
        lax.conv_general_dilated_local(x, np.ones((3, 4, 4)), (1,), "VALID", (2, 2))


def test_conv_shape_helpers_are_jaxs(jax):
    cases = [((2, 3, 10, 10), (4, 3, 3, 3), (1, 2), [(1, 1), (0, 0)], 1),
             ((2, 3, 10, 10), (4, 3, 3, 3), (1, 2), "SAME", 1),
             ((4, 3, 10, 10), (4, 3, 3, 3), (1, 2), [(1, 1), (0, 0)], 2),
             ((2, 3, 9), (4, 3, 4), (3,), "VALID", 1),
             ((2, 3, 9), (4, 3, 4), (3,), [(-2, 1)], 1),
             ((2, 3, 2), (4, 3, 5), (1,), "VALID", 1)]
    for case in cases:
        assert lax.conv_shape_tuple(*case) == tuple(map(int, jax.lax.conv_shape_tuple(*case)))
    for dn in [("NHWC", "HWIO", "NHWC"), ("NHWC", "HWIO", "NCHW"), ("NWHC", "OHWI", "CNHW")]:
        assert lax.conv_general_permutations(dn) == jax.lax.conv_general_permutations(dn)
        for padding in ("SAME", "VALID", [(1, 1), (0, 2)]):
            for strides in [(1, 2), (2, 2), (3, 1)]:
                args = ((2, 10, 11, 3), (3, 2, 3, 4), strides, padding, dn)
                assert lax.conv_general_shape_tuple(*args) == \
                    tuple(map(int, jax.lax.conv_general_shape_tuple(*args)))
                assert lax.conv_transpose_shape_tuple(*args) == \
                    tuple(map(int, jax.lax.conv_transpose_shape_tuple(*args)))
    # and they are the shapes the convolutions give
    x, k = np.ones((2, 9, 8, 3)), np.ones((3, 2, 3, 4))
    dn = ("NHWC", "HWIO", "NHWC")
    for padding in ("SAME", "VALID", [(2, 1), (0, 1)]):
        assert lax.conv_general_dilated(x, k, (2, 3), padding, dimension_numbers=dn).shape == \
            lax.conv_general_shape_tuple(x.shape, k.shape, (2, 3), padding, dn)
        assert lax.conv_transpose(x, k, (2, 3), padding, dimension_numbers=dn).shape == \
            lax.conv_transpose_shape_tuple(x.shape, k.shape, (2, 3), padding, dn)


def test_conv_shape_helper_errors():
    with pytest.raises(ValueError, match=r"conv_shape_tuple: batch_group_count 2 must divide "
                                         r"lhs's batch 3"):
        lax.conv_shape_tuple((3, 1, 5), (1, 1, 2), (1,), "VALID", 2)
    with pytest.raises(ValueError, match=r"negative pads \[\(-4, -3\)\] remove more than"):
        lax.conv_shape_tuple((3, 1, 5), (1, 1, 2), (1,), [(-4, -3)])
    with pytest.raises(ValueError, match="one \\(low, high\\) pair for each of the 1 spatial"):
        lax.conv_shape_tuple((3, 1, 5), (1, 1, 2), (1,), [(1, 1), (1, 1)])
    with pytest.raises(TypeError, match="conv_general_permutations: dimension_numbers must be "
                                        "three strings"):
        lax.conv_general_permutations(None)
    with pytest.raises(ValueError, match="padding 'FULL' is not one of"):
        lax.conv_transpose_shape_tuple((1, 5, 1), (2, 1, 1), (1,), "FULL",
                                       ("NWC", "WIO", "NWC"))


# ---- the gamma function's gradients ------------------------------------------------------------
def test_igamma_grad_a_and_random_gamma_grad_are_jaxs(jax):
    a = rng.uniform(0.05, 30.0, size=40)
    x = rng.gamma(a) + 1e-6
    assert_close(lax.igamma_grad_a(a, x), np.asarray(jax.lax.igamma_grad_a(a, x)), rtol=1e-11)
    assert_close(lax.random_gamma_grad(a, x), np.asarray(jax.lax.random_gamma_grad(a, x)),
                 rtol=1e-11)
    # the edges: x = 0 gives 0; x < 0, a <= 0 and nan give nan
    ea = np.array([0.5, 0.5, 0.0, -1.0, 2.0, 2.0])
    ex = np.array([0.0, -1.0, 0.5, 1.0, np.nan, 3.0])
    for name in ("igamma_grad_a", "random_gamma_grad"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ours = getattr(lax, name)(ea, ex)
        np.testing.assert_allclose(ours, np.asarray(getattr(jax.lax, name)(ea, ex)), rtol=1e-11)
    # at x = inf P is 1 for every a, and its derivative 0 (JAX: nan); the draw's is nan
    assert lax.igamma_grad_a(2.0, np.inf) == 0
    assert np.isnan(lax.random_gamma_grad(2.0, np.inf))
    for name in ("igamma_grad_a", "random_gamma_grad"):
        f32 = getattr(lax, name)(a[:5].astype(np.float32), x[:5].astype(np.float32))
        assert f32.dtype == np.float32
        assert_close(f32, getattr(lax, name)(a[:5], x[:5]), rtol=1e-6)


def test_igamma_grad_a_is_the_derivative_of_igamma():
    a, x = rng.uniform(0.3, 8.0, size=10), rng.uniform(0.1, 10.0, size=10)
    h = 1e-6 * a
    assert_close(lax.igamma_grad_a(a, x),
                 (sc.gammainc(a + h, x) - sc.gammainc(a - h, x)) / (2 * h), rtol=1e-7)
    # differentiable once more, in a and in x
    check_grads(lax.igamma_grad_a, a, x, order=1)
    with pytest.raises(NotImplementedError, match="third derivative"):
        wg.grad(wg.grad(lambda a: lax.igamma_grad_a(a, 1.5)))(2.0)


def test_random_gamma_grad_is_the_slope_of_the_quantile_and_differentiable(jax):
    a, x = rng.uniform(0.3, 8.0, size=10), rng.uniform(0.1, 10.0, size=10)
    h = 1e-6 * a
    quantile = lambda b: sc.gammaincinv(b, sc.gammainc(a, x))            # noqa: E731
    assert_close(lax.random_gamma_grad(a, x), (quantile(a + h) - quantile(a - h)) / (2 * h),
                 rtol=1e-6)
    check_grads(lax.random_gamma_grad, a, x, order=1)
    ta, tx = rng.normal(size=10), rng.normal(size=10)
    _, ours = wg.jvp(lax.random_gamma_grad, (a, x), (ta, tx))
    _, theirs = jax.jvp(jax.lax.random_gamma_grad, (a, x), (ta, tx))
    assert_close(ours, np.asarray(theirs), rtol=1e-9)
    assert_close(wg.jit(lax.random_gamma_grad)(a, x), lax.random_gamma_grad(a, x), rtol=1e-14)


def test_gamma_gradient_errors():
    for f in (lax.igamma_grad_a, lax.random_gamma_grad):
        with pytest.raises(TypeError, match=f"{f.__name__}: a must be a float array, got "
                                            "int64"):
            f(np.array([1, 2]), np.ones(2))
        with pytest.raises(TypeError, match="x must be a float array, got bool"):
            f(np.ones(2), np.array([True, False]))


# ---- random bits ------------------------------------------------------------------------------
def test_rng_uniform_draws_anew_at_every_call_eager_and_compiled():
    a, b = np.float32(-1.0), np.float32(2.0)
    x, y = lax.rng_uniform(a, b, (2000,)), lax.rng_uniform(a, b, (2000,))
    assert x.dtype == np.float32 and x.shape == (2000,)
    assert x.min() >= -1 and x.max() < 2 and not np.array_equal(x, y)
    assert abs(x.mean() - 0.5) < 0.1 and abs(x.var() - 0.75) < 0.1      # U(-1, 2)
    # compiled, the draw is a node run at every call (not a constant of the trace)
    for f, args in ((wg.jit(lambda: lax.rng_uniform(0.0, 1.0, (3,))), ()),
                    (wg.jit(lambda t: t + lax.rng_uniform(0.0, 1.0, (3,))), (0.0,)),
                    (wg.compile(lambda t: lax.rng_uniform(t, 1.0, (3,)), 0.0), (0.0,))):
        assert not np.array_equal(f(*args), f(*args))
    ints = lax.rng_uniform(np.int32(3), np.int32(7), (500,))
    assert ints.dtype == np.int32 and set(ints.tolist()) == {3, 4, 5, 6}
    # shared bounds under vmap: the same draw for each example, as JAX's
    batch = wg.vmap(lambda t: t + lax.rng_uniform(0.0, 1.0, (3,)))(np.zeros(2))
    assert np.array_equal(batch[0], batch[1])
    # bounds per example: one draw, each example's row within its own bounds
    lows = np.array([0.0, 10.0, -5.0])
    for f in (wg.vmap(lambda lo: lax.rng_uniform(lo, lo + 1.0, (400,))),
              wg.jit(wg.vmap(lambda lo: lax.rng_uniform(lo, lo + 1.0, (400,))))):
        rows = f(lows)
        assert rows.shape == (3, 400) and not np.array_equal(rows[0], rows[1] - 10.0)
        assert ((rows >= lows[:, None]) & (rows < lows[:, None] + 1)).all()
    counts = wg.vmap(lambda lo: lax.rng_uniform(lo, np.int64(5), (300,)))(np.array([0, 4]))
    assert set(counts[0].tolist()) == {0, 1, 2, 3, 4} and set(counts[1].tolist()) == {4}


def test_rng_uniform_differentiates_as_a_plus_b_minus_a_times_u():
    a, b, ct = 1.0, 3.0, rng.normal(size=6)
    draw, back = wg.vjp(lambda a, b: lax.rng_uniform(a, b, (6,)), a, b)
    u = (draw - a) / (b - a)
    ga, gb = back(ct)
    assert_close(ga, np.sum(ct * (1 - u)), rtol=1e-12)
    assert_close(gb, np.sum(ct * u), rtol=1e-12)
    draw, tangent = wg.jvp(lambda a, b: lax.rng_uniform(a, b, (6,)), (a, b), (0.5, -2.0))
    u = (draw - a) / (b - a)
    assert_close(tangent, 0.5 * (1 - u) - 2.0 * u, rtol=1e-12)


def test_rng_uniform_errors():
    with pytest.raises(ValueError, match=r"rng_uniform: a and b must be scalars, got shapes "
                                         r"\(2,\) and \(\)"):
        lax.rng_uniform(np.zeros(2), 1.0, (3,))
    with pytest.raises(TypeError, match="a and b must have one float or integer dtype, got "
                                        "float32 and float64"):
        lax.rng_uniform(np.float32(0), np.float64(1), (3,))
    with pytest.raises(ValueError, match="integer draws need a < b, got 5 and 5"):
        lax.rng_uniform(5, 5, (3,))
    with pytest.raises(ValueError, match="negative dimension"):
        lax.rng_uniform(0.0, 1.0, (-1,))


def test_rng_bit_generator_is_a_function_of_its_key_that_moves_on(jax):
    key = np.array([7, 1, 0, 0], np.uint32)
    new, bits = lax.rng_bit_generator(key, (2, 3))
    assert bits.shape == (2, 3) and bits.dtype == np.uint32
    assert new.dtype == np.uint32 and new.shape == (4,)
    assert np.array_equal(lax.rng_bit_generator(key, (2, 3))[1], bits)      # a function
    newer, more = lax.rng_bit_generator(new, (2, 3))
    assert not np.array_equal(new, key) and not np.array_equal(newer, new)
    assert not np.intersect1d(bits, more).size                               # a new stream
    # JAX's key forms and dtypes, and JAX's new key: the counter after the first 64 bits
    assert np.array_equal(new[:2], np.asarray(jax.lax.rng_bit_generator(key, (2, 3))[0])[:2])
    key64 = np.array([5, 2 ** 64 - 1], np.uint64)
    new64, bits64 = lax.rng_bit_generator(key64, (4,), np.uint64,
                                          lax.RandomAlgorithm.RNG_THREE_FRY)
    assert new64.tolist() == [5, 0] and bits64.dtype == np.uint64     # (the count wraps)
    for dtype in (np.uint8, np.uint16, np.uint32, np.uint64):
        out = lax.rng_bit_generator(key, (1000,), dtype)[1]
        assert out.dtype == dtype
        assert abs(out.astype(float).mean() / np.iinfo(dtype).max - 0.5) < 0.05
    # the same numbers traced without values (wg.jit) and for a batch of keys (wg.vmap)
    f = lambda k: lax.rng_bit_generator(k, (5,), np.uint16)         # noqa: E731
    keys = np.stack([key, new, newer])
    assert all(np.array_equal(u, v) for u, v in zip(wg.jit(f)(key), f(key)))
    batch = wg.vmap(f)(keys)
    for k, n, b in zip(keys, *batch):
        want = f(k)
        assert np.array_equal(n, want[0]) and np.array_equal(b, want[1])
    assert lax.RandomAlgorithm(jax.lax.RandomAlgorithm.RNG_PHILOX) is \
        lax.RandomAlgorithm.RNG_PHILOX


def test_rng_bit_generator_errors():
    with pytest.raises(TypeError, match=r"rng_bit_generator: key must be uint32 of shape "
                                        r"\(4,\) or uint64 of shape \(2,\), got uint32 of "
                                        r"shape \(2,\)"):
        lax.rng_bit_generator(wr.PRNGKey(0), (3,))
    with pytest.raises(TypeError, match="dtype must be an unsigned integer type, got int32"):
        lax.rng_bit_generator(np.zeros(4, np.uint32), (3,), np.int32)
    with pytest.raises(ValueError, match="is not a valid RandomAlgorithm"):
        lax.rng_bit_generator(np.zeros(4, np.uint32), (3,), algorithm=7)


# ---- jax.scipy.special.bessel_jn and jax.random.key_dtype ---------------------------------------
def test_bessel_jn_is_scipys_jv_and_jaxs_where_jaxs_converges(jax):
    import jax.scipy.special as jss
    z = np.concatenate([rng.uniform(-20.0, 20.0, size=30), [0.0, 1e-3, 45.0, 80.0]])
    ours = special.bessel_jn(z, v=6)
    assert ours.shape == (7, z.size) and ours.dtype == np.float64
    assert_close(ours, np.stack([sc.jv(n, z) for n in range(7)]), rtol=1e-13, atol=1e-15)
    near = (np.abs(z) <= 20) & (z != 0)         # (JAX's recurrence: nan at 0, loose far out)
    assert_close(ours[:, near], np.asarray(jss.bessel_jn(z[near], v=6)), rtol=1e-9,
                 atol=1e-12)
    zs = z[near][:4]
    jac = wg.jacfwd(lambda z: special.bessel_jn(z, v=3))(zs)
    assert_close(jac, np.asarray(jax.jacfwd(lambda z: jss.bessel_jn(z, v=3))(zs)), rtol=1e-9,
                 atol=1e-12)
    check_grads(lambda z: special.bessel_jn(z, v=4), z[:6])
    assert_close(wg.grad(lambda z: special.bessel_jn(z, v=2)[1])(0.0), 0.5)   # (J0 - J2)/2
    assert_close(wg.jit(lambda z: special.bessel_jn(z, v=3))(zs), special.bessel_jn(zs, v=3),
                 rtol=1e-15)
    assert special.bessel_jn(np.float32(2.0), v=2).dtype == np.float32
    assert special.bessel_jn(np.array([1, 2]), v=1).dtype == np.float64
    assert special.bessel_jn(1.5, v=0).shape == (1,)


def test_bessel_jn_errors():
    with pytest.raises(TypeError, match="bessel_jn: the order v must be an integer, got 2.0"):
        special.bessel_jn(1.0, v=2.0)
    with pytest.raises(ValueError, match="the order v must be non-negative, got -1"):
        special.bessel_jn(1.0, v=-1)
    with pytest.raises(ValueError, match="n_iter must be a positive integer, got 0"):
        special.bessel_jn(1.0, v=1, n_iter=0)
    with pytest.raises(ValueError, match="z must be real, got complex128"):
        special.bessel_jn(np.array([1j]), v=1)


def test_key_dtype_is_the_dtype_of_wengerts_keys():
    assert wr.key_dtype() == np.uint32 == wr.PRNGKey(3).dtype
    assert np.issubdtype(wr.split(wr.PRNGKey(0), 3).dtype, wr.key_dtype("philox4x64"))
    with pytest.raises(ValueError, match="key_dtype: impl='threefry2x32' is not offered"):
        wr.key_dtype("threefry2x32")


# ---- names -------------------------------------------------------------------------------------
NEW = ("clz", "population_count", "mulhi", "bitcast_convert_type", "reduce_precision",
       "broadcast_like", "shape_as_value", "ragged_dot", "ragged_dot_general",
       "RaggedDotDimensionNumbers", "approx_max_k", "approx_min_k",
       "conv_general_dilated_local", "conv_shape_tuple", "conv_general_shape_tuple",
       "conv_transpose_shape_tuple", "conv_general_permutations", "igamma_grad_a",
       "random_gamma_grad", "rng_uniform", "rng_bit_generator", "RandomAlgorithm")


def test_the_names_are_jaxs_and_documented(jax):
    import inspect
    for name in NEW:
        assert name in lax.__all__ and hasattr(jax.lax, name), name
        ours = getattr(lax, name)
        assert ">>>" in (ours.__doc__ or ""), name
        if inspect.isfunction(ours):
            theirs = inspect.signature(getattr(jax.lax, name)).parameters
            mine = inspect.signature(ours).parameters
            if list(theirs) != ["args"]:         # (random_gamma_grad is (*args) in JAX)
                assert list(mine) == list(theirs), (name, list(mine), list(theirs))
    assert "key_dtype" in wr.__all__ and "bessel_jn" in special.__all__
