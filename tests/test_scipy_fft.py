"""wengert.scipy.fft: the DCTs and DSTs of every type, norm and orthogonalize against
scipy.fft's values (bit for bit) and dtypes, their transposes against the dense matrices
of SciPy's own maps, derivatives against central differences to second order and against
JAX's numbers (type 2, the one JAX has), vmap, compile and jit, and the errors."""
import itertools

import numpy
import pytest
import scipy.fft as sf

import wengert as wg
import wengert.numpy as wnp
from wengert.scipy import fft
from fd import check_grads, check_complex_grads

rng = numpy.random.default_rng(20261201)

ONE_AXIS = ["dct", "idct", "dst", "idst"]
MANY_AXES = ["dctn", "idctn", "dstn", "idstn"]
NORMS = [None, "backward", "ortho", "forward"]


def traced(f, x):
    """f's value on a traced x (eagerly traced, as grad traces it)."""
    return wg.vjp(f, x)[0]


def lengths(name, t):
    """Lengths a transform takes: a DCT-I needs two points."""
    return (2, 3, 6) if (name.endswith("dct") and t == 1) else (1, 2, 3, 6)


# ---- values ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ONE_AXIS)
@pytest.mark.parametrize("t", [1, 2, 3, 4])
def test_one_axis_values_are_scipys_bit_for_bit(name, t):
    for norm, orth, n, axis in itertools.product(NORMS, [None, True, False], [None, 2, 7],
                                                 [0, -1, 1]):
        x = rng.normal(size=(3, 5, 4))
        kw = dict(type=t, n=n, axis=axis, norm=norm, orthogonalize=orth)
        expected = getattr(sf, name)(x, **kw)
        got = traced(lambda x: getattr(fft, name)(x, **kw), x)
        assert got.dtype == expected.dtype and numpy.array_equal(got, expected), kw


@pytest.mark.parametrize("name", MANY_AXES)
@pytest.mark.parametrize("t", [1, 2, 3, 4])
def test_many_axes_values_are_scipys_bit_for_bit(name, t):
    x = rng.normal(size=(3, 4, 5))
    for norm, (s, axes) in itertools.product(NORMS, [
            (None, None), ((3,), None), ((2, 6), (0, -1)), (None, (2, 0)), ((-1, 7), (1, 2)),
            (4, 1), (None, 1), (None, ()), ((), None)]):
        kw = dict(type=t, s=s, axes=axes, norm=norm)
        expected = getattr(sf, name)(x, **kw)
        got = traced(lambda x: getattr(fft, name)(x, **kw), x)
        assert got.dtype == expected.dtype and numpy.array_equal(got, expected), kw


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float16, numpy.int32, numpy.complex64,
                                   numpy.complex128])
def test_dtypes_are_scipys_traced_and_compiled(dtype):
    x = rng.normal(size=(4, 3)) * 3
    if numpy.dtype(dtype).kind == "c":
        x = x + 1j * rng.normal(size=x.shape)
    x = x.astype(dtype)
    for name in ONE_AXIS:
        expected = getattr(sf, name)(x, type=3, axis=0)
        f = lambda x: getattr(fft, name)(x, type=3, axis=0)
        for got in (traced(f, x), wg.compile(f)(x), wg.jit(f)(x)):
            assert got.dtype == expected.dtype and numpy.array_equal(got, expected)


def test_plain_calls_are_scipys_own():
    x = rng.normal(size=(4, 6))
    for name in ONE_AXIS + MANY_AXES:
        assert numpy.array_equal(getattr(fft, name)(x, type=4), getattr(sf, name)(x, type=4))
    assert numpy.array_equal(fft.dct([1.0, 2.0]), sf.dct([1.0, 2.0]))
    with pytest.raises(ValueError, match="invalid DCT type"):         # SciPy's own error
        fft.dct(x, type=5)


def test_a_list_of_traced_values_is_an_array():
    got = wg.grad(lambda a, b: fft.dct([a, b])[1])(1.0, 2.0)
    assert numpy.isclose(got, 2 * numpy.cos(numpy.pi / 4))


# ---- transposes against dense matrices ----------------------------------------------------
@pytest.mark.parametrize("name", ONE_AXIS)
@pytest.mark.parametrize("t", [1, 2, 3, 4])
def test_vjp_is_the_transpose_of_scipys_matrix(name, t):
    for norm, orth, n_in, n in itertools.product(NORMS, [None, True, False], lengths(name, t),
                                                 [None, 2, 7]):
        kw = dict(type=t, n=n, norm=norm, orthogonalize=orth)
        matrix = numpy.stack([getattr(sf, name)(e, **kw) for e in numpy.eye(n_in)], axis=1)
        _, back = wg.vjp(lambda x: getattr(fft, name)(x, **kw), numpy.zeros(n_in))
        # (the pullback of the k-th unit cotangent is Mᵀe_k, the k-th row of M)
        rows = numpy.stack([back(e)[0] for e in numpy.eye(matrix.shape[0])])
        numpy.testing.assert_allclose(rows, matrix, rtol=0, atol=1e-13, err_msg=str(kw))
        tangents = numpy.stack([wg.jvp(lambda x: getattr(fft, name)(x, **kw),
                                       (numpy.zeros(n_in),), (e,))[1]
                                for e in numpy.eye(n_in)], axis=1)
        numpy.testing.assert_allclose(tangents, matrix, rtol=0, atol=1e-13)


@pytest.mark.parametrize("name", MANY_AXES)
def test_many_axes_vjp_is_the_transpose(name):
    shape = (3, 2, 4)
    for t, norm in itertools.product([1, 2, 3, 4], ["backward", "ortho", "forward"]):
        kw = dict(type=t, s=(5, 3), axes=(2, 0), norm=norm)
        size = numpy.prod(shape)
        matrix = numpy.stack([getattr(sf, name)(e.reshape(shape), **kw).ravel()
                              for e in numpy.eye(size)], axis=1)
        _, back = wg.vjp(lambda x: getattr(fft, name)(x, **kw), numpy.zeros(shape))
        out_shape = getattr(sf, name)(numpy.zeros(shape), **kw).shape
        rows = numpy.stack([back(e.reshape(out_shape))[0].ravel()
                            for e in numpy.eye(matrix.shape[0])])
        numpy.testing.assert_allclose(rows, matrix, rtol=0, atol=1e-13, err_msg=str(kw))


# ---- derivatives against central differences ------------------------------------------------
@pytest.mark.parametrize("name", ONE_AXIS + MANY_AXES)
def test_second_order_against_central_differences(name):
    x = rng.normal(size=(3, 5))
    for t in (1, 2, 3, 4):
        kw = dict(type=t, norm="ortho" if t % 2 else "forward")
        if name in MANY_AXES:
            kw.update(s=(4, 6))
        else:
            kw.update(n=4, axis=0)
        f = lambda x: wnp.sin(getattr(fft, name)(x, **kw)) * x.sum()
        check_grads(f, x, order=2)


def test_complex_input_is_holomorphic():
    x = rng.normal(size=(4, 3)) + 1j * rng.normal(size=(4, 3))
    check_complex_grads(lambda x: fft.dctn(x, type=1, axes=0) ** 2, x)
    check_complex_grads(lambda x: fft.idst(x, type=2, n=5) * x[0, 0], x)
    assert numpy.allclose(wg.jacfwd(lambda x: fft.dct(x), holomorphic=True)(x[0]),
                          sf.dct(numpy.eye(3), axis=0))


# ---- JAX's type 2 -------------------------------------------------------------------------
def test_values_and_gradients_match_jax(jax):
    import jax.numpy as jnp
    import jax.scipy.fft as jfft
    x = rng.normal(size=(4, 6))
    cases = [("dct", dict(n=None, axis=-1, norm=None)), ("dct", dict(n=8, axis=0, norm="ortho")),
             ("idct", dict(n=3, axis=1, norm=None)), ("idct", dict(axis=0, norm="ortho")),
             ("dctn", dict(s=None, axes=None, norm=None)), ("dctn", dict(s=(5, 4), norm="ortho")),
             ("idctn", dict(axes=(1,), norm="ortho")), ("idctn", dict(s=(3, 7), axes=(0, 1)))]
    for name, kw in cases:
        ours = getattr(fft, name)(x, **kw)
        wo = rng.normal(size=ours.shape)
        loss = lambda m, f, x: m.sum(m.tanh(getattr(f, name)(x, **kw)) * wo)
        # (one jit per case: JAX op by op takes seconds more)
        theirs, gj = jax.jit(lambda x: (getattr(jfft, name)(x, **kw),
                                        jax.grad(lambda x: loss(jnp, jfft, x))(x)))(x)
        numpy.testing.assert_allclose(ours, numpy.asarray(theirs), rtol=1e-12, atol=1e-12)
        g = wg.grad(lambda x: loss(wnp, fft, x))(x)
        numpy.testing.assert_allclose(g, numpy.asarray(gj), rtol=1e-12, atol=1e-12)


# ---- vmap, compile ------------------------------------------------------------------------
def test_vmap_transforms_along_the_shifted_axis():
    x = rng.normal(size=(5, 3, 4))
    for name in ONE_AXIS:
        f = lambda v: getattr(fft, name)(v, type=1, n=6, axis=0, norm="forward")
        assert numpy.allclose(wg.vmap(f)(x), numpy.stack([f(v) for v in x]))
        assert numpy.allclose(wg.vmap(f, in_axes=2)(x),
                              numpy.stack([f(x[:, :, k]) for k in range(4)]))
    g = lambda v: fft.idstn(v, type=3, s=(2, 5), axes=(1, 0))
    assert numpy.allclose(wg.vmap(g, in_axes=1)(x), numpy.stack([g(x[:, k]) for k in range(3)]))
    per_example = wg.vmap(wg.grad(lambda v: wnp.sum(fft.dct(v, type=4) ** 3)))(x)
    one = [wg.grad(lambda v: wnp.sum(fft.dct(v, type=4) ** 3))(v) for v in x]
    assert numpy.allclose(per_example, numpy.stack(one))


def test_compiled_gradients_and_hessians():
    x = rng.normal(size=(3, 4))
    loss = lambda x: wnp.sum(fft.dctn(x, type=2, norm="ortho")[:2, :2] ** 2 * x[:2, :2])
    eager = wg.grad(loss)(x)
    assert numpy.allclose(wg.compile(wg.grad(loss), x)(x), eager)
    assert numpy.allclose(wg.jit(wg.grad(loss))(x), eager)
    h = wg.hessian(lambda v: wnp.sum(fft.dst(v, type=3) ** 3))(x[0])
    assert numpy.allclose(h, h.T)
    assert wg.taylor(lambda s: fft.dct(x[0] * s)[1], 1.0, 1.0, 3)[2:] == [0.0, 0.0]


# ---- errors -------------------------------------------------------------------------------
def test_bad_arguments_raise_clear_errors():
    x = wnp.asarray(numpy.ones((3, 4)))
    trace = lambda f: wg.grad(lambda x: wnp.sum(f(x)))(numpy.ones((3, 4)))
    cases = [
        (lambda x: fft.dct(x, type=5), ValueError, "type must be 1, 2, 3 or 4, got 5"),
        (lambda x: fft.idctn(x, type=2.0), ValueError, "idctn: type must be"),
        (lambda x: fft.dst(x, norm="bad"), ValueError, "invalid norm value 'bad'"),
        (lambda x: fft.dct(x, n=0), ValueError, r"invalid number of data points \(0\)"),
        (lambda x: fft.dct(x, n=2.0), TypeError, "must be an integer"),
        (lambda x: fft.dct(x, type=1, n=1), ValueError, "a type-1 DCT needs at least 2"),
        (lambda x: fft.dct(x, axis=2), ValueError, r"axis 2 is out of bounds.*\(3, 4\)"),
        (lambda x: fft.dct(x, axis=(0,)), TypeError, "axis must be one integer"),
        (lambda x: fft.dct(x, workers=0), ValueError, "workers must be None or a nonzero"),
        (lambda x: fft.dct(x, orthogonalize="yes"), TypeError, "orthogonalize must be"),
        (lambda x: fft.dctn(x, s=(2, 3), axes=(0,)), ValueError, "must have the same length"),
        (lambda x: fft.dctn(x, axes=(0, -2)), ValueError, "all axes must be unique"),
        (lambda x: fft.dstn(x, s=(1, 2, 3)), ValueError, r"3 lengths.*shape \(3, 4\)"),
        (lambda x: fft.dstn(x, axes=(0, 5)), ValueError, "axis 5 is out of bounds"),
        (lambda x: fft.dct(x.sum()), ValueError, "at least one axis"),
    ]
    for f, error, message in cases:
        with pytest.raises(error, match=message):
            trace(f)
    assert x is not None


def test_other_scipy_fft_names_point_to_wengert_numpy_fft():
    with pytest.raises(AttributeError, match="wengert.numpy.fft.rfft"):
        fft.rfft
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        fft.nope
