"""wengert.scipy.ndimage.map_coordinates: values against SciPy's for every mode and order
0 and 1 (random coordinates, integers and the ties of rounding, inside and far outside;
orders 2 to 5 are in test_ndimage_splines.py), against JAX's values and derivatives
(JAX's 'constant' and 'wrap' are SciPy's 'grid-constant' and 'grid-wrap'), derivatives in
the input, the coordinates and cval against central differences to second order, the
derivative at integer coordinates, dtypes, vmap, compile and jit, JAX's positional call,
and the errors (SciPy's types)."""
import numpy
import pytest
import scipy.ndimage as snd

import wengert as wg
import wengert.numpy as wnp
from wengert.scipy import ndimage
from wengert.scipy.ndimage import MODES
from fd import check_grads

rng = numpy.random.default_rng(20261202)

#: JAX's mode names and SciPy's for the same extension
JAX_MODES = {"constant": "grid-constant", "wrap": "grid-wrap", "nearest": "nearest",
             "mirror": "mirror", "reflect": "reflect"}


def coordinates(shape, count=150, low=-9.0, high=None):
    """Random coordinates for an input of `shape` over [low, high], then as many integers
    and half-integers (rounding's ties) there."""
    high = max(shape) + 9.0 if high is None else high
    c = rng.uniform(low, high, size=(len(shape), count))
    ties = numpy.round(rng.uniform(low, high, size=(len(shape), count)) * 2) / 2
    return numpy.concatenate([c, ties], axis=1)


def traced(f, *args):
    return wg.vjp(f, *args)[0]


# ---- values ------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("order", [0, 1])
def test_values_are_scipys(mode, order):
    for shape in [(1,), (2,), (5,), (4, 3), (3, 1, 4)]:
        x = rng.normal(size=shape)
        c = coordinates(shape)
        kw = dict(order=order, mode=mode, cval=-2.5)
        expected = snd.map_coordinates(x, c, **kw)
        for got in (traced(lambda c: ndimage.map_coordinates(x, c, **kw), c),
                    traced(lambda x: ndimage.map_coordinates(x, c, **kw), x),
                    wg.compile(lambda x, c: ndimage.map_coordinates(x, c, **kw))(x, c)):
            assert got.dtype == expected.dtype
            numpy.testing.assert_allclose(got, expected, rtol=1e-14, atol=1e-14,
                                          err_msg=f"{shape}")


def test_coordinates_of_any_shape_and_as_a_list_of_rows():
    x = rng.normal(size=(6, 5))
    c = rng.uniform(-1, 7, size=(2, 3, 4))
    expected = snd.map_coordinates(x, c, order=1, mode="nearest")
    got = traced(lambda c: ndimage.map_coordinates(x, [c[0], c[1]], order=1, mode="nearest"), c)
    assert got.shape == (3, 4)
    numpy.testing.assert_allclose(got, expected, rtol=1e-14)
    assert traced(lambda x: ndimage.map_coordinates(x, [[2], [1]], order=0), x) == x[2, 1]


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.int32, numpy.uint8, numpy.complex128])
def test_dtypes_are_scipys(dtype):
    x = rng.uniform(0, 200, size=(5, 4))
    if dtype == numpy.complex128:
        x = x + 1j * rng.normal(size=x.shape)
    x = x.astype(dtype)
    c = coordinates(x.shape, low=-2.0, high=6.0)
    for order in (0, 1):
        expected = snd.map_coordinates(x, c, order=order, mode="reflect")
        got = traced(lambda c: ndimage.map_coordinates(x, c, order=order, mode="reflect"), c)
        assert got.dtype == expected.dtype
        numpy.testing.assert_allclose(got, expected, rtol=1e-6 if dtype == numpy.float32
                                      else 1e-14)
    as_float32 = traced(lambda c: ndimage.map_coordinates(x.real, c, numpy.float32, 1), c)
    assert as_float32.dtype == numpy.float32


def test_plain_calls_are_scipys_own_and_jax_positional_calls_work():
    x = rng.normal(size=(5, 4))
    c = coordinates(x.shape, low=-2.0, high=6.0)
    assert numpy.array_equal(ndimage.map_coordinates(x, c), snd.map_coordinates(x, c))
    assert numpy.array_equal(ndimage.map_coordinates(x, c, order=1, mode="mirror"),
                             snd.map_coordinates(x, c, order=1, mode="mirror"))
    # JAX's signature: map_coordinates(input, coordinates, order, mode, cval)
    expected = snd.map_coordinates(x, c, order=1, mode="constant", cval=3.0)
    assert numpy.array_equal(ndimage.map_coordinates(x, c, 1, "constant", 3.0), expected)
    got = traced(lambda c: ndimage.map_coordinates(x, c, 1, "constant", 3.0), c)
    numpy.testing.assert_allclose(got, expected, rtol=1e-14)
    assert numpy.array_equal(ndimage.map_coordinates(x, c, 0),
                             snd.map_coordinates(x, c, order=0))


# ---- JAX's values and derivatives --------------------------------------------------------------
@pytest.mark.parametrize("jax_mode", sorted(JAX_MODES))
def test_values_and_derivatives_match_jax(jax_mode, jax):
    import jax.numpy as jnp
    import jax.scipy.ndimage as jnd
    mode = JAX_MODES[jax_mode]
    x = rng.normal(size=(5, 4))
    # random points and integer ones (JAX rounds ties away from zero, SciPy up: none here)
    c = numpy.concatenate([rng.uniform(-7, 10, size=(2, 60)),
                           numpy.round(rng.uniform(-7, 10, size=(2, 40)))], axis=1)
    w = rng.normal(size=c.shape[1])
    for order in (0, 1):
        loss = lambda m, mc, x, c, md: m.sum(mc(x, c, order=order, mode=md, cval=0.7) * w)
        value, (gx, gc) = jax.jit(jax.value_and_grad(
            lambda x, c: loss(jnp, jnd.map_coordinates, x, c, jax_mode), argnums=(0, 1)))(x, c)
        ours = lambda x, c: loss(wnp, ndimage.map_coordinates, x, c, mode)
        numpy.testing.assert_allclose(ours(x, c), value, rtol=1e-13)
        our_gx, our_gc = wg.grad(ours, argnums=(0, 1))(x, c)
        numpy.testing.assert_allclose(our_gx, gx, rtol=1e-13, atol=1e-13)
        numpy.testing.assert_allclose(our_gc, gc, rtol=1e-13, atol=1e-13)


# ---- derivatives ---------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_second_order_against_central_differences(mode):
    x = rng.normal(size=(4, 5))
    # random points, inside for 'constant' (which jumps to cval at the edges)
    c = rng.uniform(0.1, 2.9, size=(2, 6)) if mode == "constant" else \
        rng.uniform(-6, 9, size=(2, 6))
    f = lambda x, c: ndimage.map_coordinates(x, c, order=1, mode=mode, cval=0.3) ** 2
    check_grads(f, x, c, order=2)
    check_grads(lambda x: ndimage.map_coordinates(x, c, order=0, mode=mode) ** 3, x)


def test_derivative_at_integer_coordinates():
    x = numpy.array([0.0, 1.0, 4.0, 9.0])
    slope = lambda mode, at, cval=0.0: wg.grad(
        lambda c: ndimage.map_coordinates(x, c, order=1, mode=mode, cval=cval)[0])(
            numpy.array([[at]]))[0, 0]
    assert slope("nearest", 1.0) == 3.0             # the slope on the right, x[2] - x[1]
    assert slope("reflect", 0.0) == 1.0
    assert slope("nearest", 3.0) == 0.0             # constant beyond the edge
    assert slope("grid-constant", 3.0, cval=2.0) == 2.0 - 9.0   # toward cval
    assert slope("mirror", 3.0) == 4.0 - 9.0        # back down the mirrored side
    assert slope("constant", 3.0) == 9.0 - 4.0      # the piece the value belongs to
    assert slope("constant", 0.0) == 1.0
    assert slope("wrap", 3.0) == 9.0 - 4.0
    assert slope("constant", 3.5) == 0.0            # cval, beyond the edge
    assert wg.grad(lambda c: ndimage.map_coordinates(x, c, order=0)[0])(
        numpy.array([[1.3]]))[0, 0] == 0.0


def test_cval_is_differentiable():
    x = rng.normal(size=(3, 3))
    c = numpy.array([[-0.5, 1.0, 5.0], [0.5, 1.5, 1.0]])
    for mode, expected in (("grid-constant", [0.5, 0.0, 1.0]), ("constant", [1.0, 0.0, 1.0])):
        got = wg.jacfwd(lambda v: ndimage.map_coordinates(x, c, order=1, mode=mode, cval=v))(2.0)
        numpy.testing.assert_allclose(got, expected)


def test_gradient_in_the_input_is_the_interpolation_weights():
    c = numpy.array([[0.25], [1.5]])
    g = wg.grad(lambda im: ndimage.map_coordinates(im, c, order=1)[0])(numpy.zeros((2, 3)))
    numpy.testing.assert_allclose(g, [[0.0, 0.375, 0.375], [0.0, 0.125, 0.125]])


# ---- vmap, compile -------------------------------------------------------------------------
def test_vmap_over_coordinates_images_and_both():
    images = rng.normal(size=(3, 5, 4))
    coords = rng.uniform(-2, 6, size=(3, 2, 7))
    f = lambda x, c: ndimage.map_coordinates(x, c, order=1, mode="grid-wrap")
    each = lambda xs, cs: numpy.stack([snd.map_coordinates(x, c, order=1, mode="grid-wrap")
                                       for x, c in zip(xs, cs)])
    numpy.testing.assert_allclose(wg.vmap(f, in_axes=(None, 0))(images[0], coords),
                                  each([images[0]] * 3, coords), rtol=1e-14)
    numpy.testing.assert_allclose(wg.vmap(f, in_axes=(0, None))(images, coords[0]),
                                  each(images, [coords[0]] * 3), rtol=1e-14)
    numpy.testing.assert_allclose(wg.vmap(f)(images, coords), each(images, coords), rtol=1e-14)
    grads = wg.vmap(wg.grad(lambda c: wnp.sum(f(images[0], c) ** 2)))(coords)
    one = [wg.grad(lambda c: wnp.sum(f(images[0], c) ** 2))(c) for c in coords]
    numpy.testing.assert_allclose(grads, numpy.stack(one), rtol=1e-13)


def test_compiled_and_jitted_gradients():
    x = rng.normal(size=(6, 5))
    c = rng.uniform(-1, 7, size=(2, 9))
    loss = lambda x, c: wnp.sum(ndimage.map_coordinates(x, c, order=1, mode="mirror") ** 2)
    eager = wg.grad(loss, argnums=(0, 1))(x, c)
    for got in (wg.compile(wg.grad(loss, argnums=(0, 1)), x, c)(x, c),
                wg.jit(wg.grad(loss, argnums=(0, 1)))(x, c)):
        for a, b in zip(got, eager):
            numpy.testing.assert_allclose(a, b, rtol=1e-14)


# ---- errors -------------------------------------------------------------------------------
def test_bad_arguments_raise_scipys_errors():
    x = numpy.ones((5, 4))
    c = numpy.ones((2, 3))
    call = lambda **kw: wg.grad(lambda c: wnp.sum(
        ndimage.map_coordinates(x, c, **{"order": 1, **kw})))(c)
    with pytest.raises(RuntimeError, match=r"invalid shape for coordinate array: .*shape "
                                           r"\(2, \.\.\.\) for an input of shape \(5, 4\); "
                                           r"got coordinates of shape \(3, 3\)"):
        wg.grad(lambda c: wnp.sum(ndimage.map_coordinates(x, c, order=1)))(numpy.ones((3, 3)))
    with pytest.raises(RuntimeError, match="boundary mode not supported: mode must be one "
                                           "of constant, grid-constant"):
        call(mode="edge")
    with pytest.raises(RuntimeError, match="spline order not supported.*got 6"):
        call(order=6)
    with pytest.raises(RuntimeError, match="spline order not supported.*got 1.5"):
        call(order=1.5)
    with pytest.raises(TypeError, match="order must be an integer, got 2.5"):
        call(order=2.5)
    with pytest.raises(NotImplementedError, match="output=array"):
        call(output=numpy.empty(3))
    with pytest.raises(RuntimeError, match="rank must be > 0"):
        wg.grad(lambda v: ndimage.map_coordinates(v, numpy.zeros((0,)), order=1))(1.0)
    with pytest.raises(RuntimeError, match="rank must be > 0"):
        wg.grad(lambda c: wnp.sum(ndimage.map_coordinates(x, c, order=1)))(c[:, 0])
    with pytest.raises(ValueError, match=r"one shape, got \[\(3,\), \(2,\)\]"):
        wg.grad(lambda c: wnp.sum(ndimage.map_coordinates(x, [c, c[:2]], order=1)))(c[0])
    with pytest.raises(TypeError, match="coordinates must be real"):
        wg.grad(lambda c: wnp.sum(wnp.real(ndimage.map_coordinates(x, c * 1j, order=1))))(c)
