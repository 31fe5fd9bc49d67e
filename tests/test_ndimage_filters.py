"""wengert.scipy.ndimage's linear filters (correlate1d, convolve1d, correlate, convolve, the
Gaussian filters, uniform, sobel, prewitt, laplace) and shift and zoom: values against
SciPy's on random 1-D, 2-D and 3-D arrays for every mode, origin and axis (kernels longer
than the array too), traced in the input, the weights, cval, sigma and the shift; dtypes
and complex values; derivatives against central differences to second order (of SciPy's
own functions, for sigma), in the weights too; JAX's convolutions; the primitive under
them against its decomposition; jit, compile and vmap; and the errors."""
import warnings

import numpy
import pytest
import scipy.ndimage as snd

import wengert as wg
import wengert.numpy as wnp
from wengert.scipy import ndimage
from wengert.scipy.ndimage import FILTER_MODES, MODES
from fd import check_grads, check_complex_grads

rng = numpy.random.default_rng(20261125)

SHAPES = [(1,), (2,), (7,), (5, 4), (3, 1, 4)]


def traced(f, *args):
    return wg.vjp(f, *args)[0]


ATOL = 1e-15      # (for values of order 1, rounded in another order)


def same(got, expected, rtol=1e-13, what=""):
    """SciPy's dtype and shape, and its values to rounding (NumPy and SciPy may differ by
    an ulp between contiguous and broadcast operands on this machine)."""
    assert got.dtype == expected.dtype, (what, got.dtype, expected.dtype)
    assert got.shape == expected.shape, (what, got.shape, expected.shape)
    numpy.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol, err_msg=str(what))


def origins(size, convolution=False):
    """Every origin SciPy takes for `size` weights (a convolution's mirrored)."""
    lo, hi = -(size // 2), (size - 1) // 2
    if convolution:
        even = 1 - size % 2
        lo, hi = -hi - even, -lo - even
    return range(lo, hi + 1)


# ---- values: SciPy's, traced in every argument ---------------------------------------------
@pytest.mark.parametrize("mode", FILTER_MODES)
def test_correlate1d_and_convolve1d_are_scipys(mode):
    for shape in SHAPES:
        x = rng.normal(size=shape)
        for size in (1, 2, 3, 4, 9):                # (9: longer than most of the arrays)
            w = rng.normal(size=size)
            for name in ("correlate1d", "convolve1d"):
                for origin in origins(size, name == "convolve1d"):
                    for axis in range(-len(shape), len(shape)):
                        kw = dict(axis=axis, mode=mode, cval=-0.7, origin=origin)
                        expected = getattr(snd, name)(x, w, **kw)
                        ours = getattr(ndimage, name)
                        what = (name, shape, size, origin, axis)
                        same(traced(lambda x: ours(x, w, **kw), x), expected, what=what)
                        if axis == 0 and origin == 0:
                            same(traced(lambda w: ours(x, w, **kw), w), expected, what=what)
                            same(traced(lambda c: ours(x, w, **{**kw, "cval": c}), -0.7),
                                 expected, what=what)


@pytest.mark.parametrize("mode", FILTER_MODES)
def test_correlate_and_convolve_are_scipys(mode):
    for shape in SHAPES:
        x = rng.normal(size=shape)
        for wshape in (tuple(rng.integers(1, 6, size=len(shape))), (1,) * len(shape),
                       tuple(n + 3 for n in shape)):
            w = rng.normal(size=wshape)
            for name in ("correlate", "convolve"):
                origin = [rng.choice(origins(k, name == "convolve")) for k in wshape]
                kw = dict(mode=mode, cval=0.4, origin=origin)
                expected = getattr(snd, name)(x, w, **kw)
                ours = getattr(ndimage, name)
                same(traced(lambda x: ours(x, w, **kw), x), expected, what=(name, wshape))
                same(traced(lambda w: ours(x, w, **kw), w), expected, what=(name, wshape))


def test_correlate_axes_read_the_weights_and_origins_as_scipy_does():
    """SciPy reads the weights' axes in increasing order of the axes they filter, and
    origin[i] along axes[i] when only some axes are filtered (along axis i when all are)."""
    x = rng.normal(size=(4, 5, 6))
    for axes, wshape, origin in [((2, 0), (3, 2), (1, 0)), ((2, 0), (3, 2), (-1, -1)),
                                 ((1,), (4,), 1), ((-1, 1), (2, 3), (0, 1)),
                                 ((2, 0, 1), (3, 2, 2), (1, -1, 0)), (0, (3,), -1)]:
        w = rng.normal(size=wshape)
        for name in ("correlate", "convolve"):
            try:
                expected = getattr(snd, name)(x, w, axes=axes, origin=origin, mode="nearest")
            except ValueError:                  # (an origin the convolution does not take)
                with pytest.raises(ValueError, match="Invalid origin"):
                    traced(lambda x: getattr(ndimage, name)(x, w, axes=axes, origin=origin),
                           x)
                continue
            got = traced(lambda x: getattr(ndimage, name)(x, w, axes=axes, origin=origin,
                                                          mode="nearest"), x)
            same(got, expected, what=(name, axes, origin))


@pytest.mark.parametrize("mode", FILTER_MODES)
def test_gaussian_filters_are_scipys(mode):
    for shape in SHAPES:
        x = rng.normal(size=shape)
        kw = dict(mode=mode, cval=0.3)
        for sigma in (0.4, 1.3, 3.2):
            for order in (0, 1, 2, 3):
                for axis in range(len(shape)):
                    expected = snd.gaussian_filter1d(x, sigma, axis, order, **kw)
                    same(traced(lambda x: ndimage.gaussian_filter1d(x, sigma, axis, order,
                                                                    **kw), x), expected)
                    same(traced(lambda s: ndimage.gaussian_filter1d(x, s, axis, order, **kw),
                                sigma), expected)
                orders = [rng.integers(0, 4) for _ in shape]
                expected = snd.gaussian_filter(x, sigma, orders, **kw)
                same(traced(lambda x: ndimage.gaussian_filter(x, sigma, orders, **kw), x),
                     expected)
            for f in ("gaussian_laplace", "gaussian_gradient_magnitude"):
                expected = getattr(snd, f)(x, sigma, **kw)
                same(traced(lambda x: getattr(ndimage, f)(x, sigma, **kw), x), expected)
                same(traced(lambda s: getattr(ndimage, f)(x, s, **kw), sigma), expected)


def test_gaussian_filters_per_axis_arguments_radius_truncate_and_axes():
    x = rng.normal(size=(6, 5, 4))
    sigmas = numpy.array([0.7, 0.0, 1.9])          # (sigma 0: the axis left alone)
    cases = [dict(sigma=sigmas), dict(sigma=sigmas, order=[1, 0, 2], mode=["wrap", "mirror",
                                                                            "constant"]),
             dict(sigma=1.1, truncate=2.0), dict(sigma=1.1, radius=[1, 3, 0]),
             dict(sigma=(0.8, 2.0), axes=(2, 0)), dict(sigma=0.9, axes=(1, -1), order=(0, 1)),
             dict(sigma=1e-16), dict(sigma=0.8, axes=(2, 1, 0), order=(1, 0, 0))]
    for kw in cases:
        expected = snd.gaussian_filter(x, **kw)
        same(traced(lambda x: ndimage.gaussian_filter(x, **kw), x), expected, what=kw)
        s = kw["sigma"]
        same(traced(lambda s: ndimage.gaussian_filter(x, **{**kw, "sigma": s}),
                    numpy.asarray(s, float)), expected, what=kw)
    for f in ("gaussian_laplace", "gaussian_gradient_magnitude"):
        for kw in [dict(sigma=(0.8, 1.5), axes=(2, 0)), dict(sigma=1.2, axes=(1,)),
                   dict(sigma=(0.6, 1.0, 1.4), axes=(1, 2, 0)), dict(sigma=1.0, radius=2),
                   dict(sigma=1.3, truncate=2.5, mode=["reflect", "wrap", "nearest"]),
                   dict(sigma=0.9, axes=(0, 2), mode=("mirror", "constant"), cval=0.5)]:
            try:
                expected = getattr(snd, f)(x, **kw)
            except RuntimeError:
                # (SciPy's gradient magnitude smooths along every axis, so it wants one
                # sigma per axis of the input, not per axis of `axes`)
                assert f == "gaussian_gradient_magnitude" and "axes" in kw
                with pytest.raises(RuntimeError, match="sequence argument must have length"):
                    traced(lambda x: getattr(ndimage, f)(x, **kw), x)
                continue
            same(traced(lambda x: getattr(ndimage, f)(x, **kw), x), expected, what=(f, kw))


@pytest.mark.parametrize("mode", FILTER_MODES)
def test_uniform_edge_and_laplace_filters_are_scipys(mode):
    for shape in SHAPES:
        x = rng.normal(size=shape)
        kw = dict(mode=mode, cval=-1.5)
        for size in (1, 2, 3, 4, 8):
            for origin in origins(size):
                for axis in range(len(shape)):
                    expected = snd.uniform_filter1d(x, size, axis, origin=origin, **kw)
                    same(traced(lambda x: ndimage.uniform_filter1d(x, size, axis,
                                                                   origin=origin, **kw), x),
                         expected)
            expected = snd.uniform_filter(x, size, **kw)
            same(traced(lambda x: ndimage.uniform_filter(x, size, **kw), x), expected)
        for name in ("sobel", "prewitt"):
            for axis in range(-len(shape), len(shape)):
                expected = getattr(snd, name)(x, axis, **kw)
                same(traced(lambda x: getattr(ndimage, name)(x, axis, **kw), x), expected)
        same(traced(lambda x: ndimage.laplace(x, **kw), x), snd.laplace(x, **kw))
        same(traced(lambda c: ndimage.laplace(x, mode=mode, cval=c), -1.5),
             snd.laplace(x, **kw))


def test_per_axis_sizes_modes_origins_and_axes():
    x = rng.normal(size=(6, 5, 4))
    for kw in [dict(size=(3, 1, 4), origin=(1, 0, -2)), dict(size=(2, 5, 3),
                                                             mode=("wrap", "nearest", "mirror")),
               dict(size=2.7), dict(size=(4, 2), axes=(2, 0), origin=(1, -1)),
               dict(size=0), dict(size=(3, 3, 3), axes=(1, 2, 0), origin=(1, 0, -1))]:
        same(traced(lambda x: ndimage.uniform_filter(x, **kw), x), snd.uniform_filter(x, **kw),
             what=kw)
    modes = ["wrap", "constant", "mirror"]
    for name in ("sobel", "prewitt"):
        same(traced(lambda x: getattr(ndimage, name)(x, 1, mode=modes, cval=2.0), x),
             getattr(snd, name)(x, 1, mode=modes, cval=2.0))
    for kw in [dict(mode=modes), dict(axes=(2, 0), mode=("nearest", "wrap")), dict(axes=1)]:
        same(traced(lambda x: ndimage.laplace(x, **kw), x), snd.laplace(x, **kw), what=kw)


@pytest.mark.parametrize("mode", MODES)
def test_shift_and_zoom_are_scipys(mode):
    for shape in SHAPES:
        x = rng.normal(size=shape)
        for order in (0, 1):
            for s in (0.5, -1.25, 7.3, -6.5, 0.0, tuple(rng.uniform(-4, 4, size=len(shape)))):
                kw = dict(order=order, mode=mode, cval=0.3)
                expected = snd.shift(x, s, **kw)
                same(traced(lambda x: ndimage.shift(x, s, **kw), x), expected)
                same(traced(lambda s: ndimage.shift(x, s, **kw), numpy.asarray(s, float)),
                     expected)
                same(traced(lambda c: ndimage.shift(x, s, **{**kw, "cval": c}), 0.3),
                     expected)
            for z in (0.5, 1.0, 1.5, 3.7, 0.3, tuple(rng.uniform(0.4, 3, size=len(shape)))):
                for grid_mode in (False, True):
                    kw = dict(order=order, mode=mode, cval=0.3, grid_mode=grid_mode)
                    with warnings.catch_warnings(record=True) as theirs:
                        warnings.simplefilter("always")
                        expected = snd.zoom(x, z, **kw)
                    with warnings.catch_warnings(record=True) as ours:
                        warnings.simplefilter("always")
                        got = traced(lambda x: ndimage.zoom(x, z, **kw), x)
                    same(got, expected, what=(shape, z, kw))
                    assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]


# ---- dtypes, complex values, plain calls ---------------------------------------------------
@pytest.mark.parametrize("dtype", [numpy.float32, numpy.int32, numpy.uint8, numpy.int64,
                                   numpy.bool_])
def test_dtypes_are_scipys(dtype):
    """An integer (or bool) output is SciPy's C cast of each pass: truncated toward zero
    (a bool is a byte: the truncated value's low byte, which the next pass reads as a
    number); float32 rounds between passes."""
    # (data of its own: drawn from the module's generator, it depended on which tests ran
    # before in the process, and under xdist a zoom once met a value an ulp from an
    # integer, which the two truncate to neighbours)
    draw = numpy.random.default_rng(45)
    x = draw.uniform(0, 60, size=(6, 7)).astype(dtype)
    rtol = 1e-6 if dtype == numpy.float32 else 1e-13
    calls = [("correlate1d", ([0.3, -0.5, 1.25],)), ("convolve", (draw.normal(size=(2, 3)),)),
             ("gaussian_filter1d", (1.2,)), ("gaussian_filter", (0.9, (0, 1))),
             ("gaussian_laplace", (1.1,)), ("gaussian_gradient_magnitude", (1.1,)),
             ("uniform_filter1d", (3,)), ("uniform_filter", (3,)), ("sobel", ()),
             ("prewitt", ()), ("laplace", ())]
    for name, args in calls:
        for mode in ("reflect", "constant"):
            expected = getattr(snd, name)(x, *args, mode=mode, cval=2.0)
            got = traced(lambda c: getattr(ndimage, name)(x, *args, mode=mode, cval=c), 2.0)
            same(got, expected, rtol=rtol, what=name)
    for order in (0, 1):
        same(traced(lambda c: ndimage.shift(x, 0.5, order=order, cval=c), 1.0),
             snd.shift(x, 0.5, order=order, cval=1.0), rtol=rtol)
        same(traced(lambda c: ndimage.zoom(x, 1.5, order=order, cval=c), 1.0),
             snd.zoom(x, 1.5, order=order, cval=1.0), rtol=rtol)


def test_output_dtypes_and_complex_promotion():
    x = rng.normal(size=(5, 6)) * 10
    w = rng.normal(size=3)
    for output in (numpy.float32, numpy.int16, "f8"):
        same(traced(lambda x: ndimage.correlate1d(x, w, output=output), x),
             snd.correlate1d(x, w, output=output), rtol=1e-6)
        same(traced(lambda x: ndimage.gaussian_filter(x, 1.0, output=output), x),
             snd.gaussian_filter(x, 1.0, output=output), rtol=1e-6)
        same(traced(lambda x: ndimage.zoom(x, 2.0, output=output, order=1), x),
             snd.zoom(x, 2.0, output=output, order=1), rtol=1e-6)
    # complex weights make a complex result; a real output dtype is promoted, with SciPy's
    # warning
    wc = w + 1j * rng.normal(size=3)
    with pytest.warns(UserWarning, match="promoting specified output dtype to complex"):
        expected = snd.correlate1d(x.astype(numpy.float32), wc, output=numpy.float32)
    with pytest.warns(UserWarning, match="promoting specified output dtype to complex"):
        got = traced(lambda w: ndimage.correlate1d(x.astype(numpy.float32), w,
                                                    output=numpy.float32), wc)
    same(got, expected, rtol=1e-6)


def test_complex_inputs_weights_and_cval():
    """Complex weights are conjugated by correlate (as NumPy's correlate does), not by
    convolve; a complex input takes a complex cval."""
    x = rng.normal(size=(5, 6)) + 1j * rng.normal(size=(5, 6))
    w = rng.normal(size=3) + 1j * rng.normal(size=3)
    w2 = rng.normal(size=(2, 3)) + 1j * rng.normal(size=(2, 3))
    for a, b, b2 in [(x, w, w2), (x.real, w, w2), (x, w.real, w2.real)]:
        for mode in ("constant", "mirror"):
            cval = 0.5 - 0.25j if a.dtype.kind == "c" else 0.5
            for name, weights in (("correlate1d", b), ("convolve1d", b), ("correlate", b2),
                                  ("convolve", b2)):
                kw = dict(mode=mode, cval=cval)
                expected = getattr(snd, name)(a, weights, **kw)
                ours = getattr(ndimage, name)
                same(traced(lambda a: ours(a, weights, **kw), a), expected)
                same(traced(lambda w: ours(a, w, **kw), weights), expected)
    for name, args in (("gaussian_filter", (1.2,)), ("uniform_filter", (3,)), ("sobel", ()),
                       ("prewitt", ()), ("laplace", ()), ("gaussian_laplace", (0.8,))):
        same(traced(lambda x: getattr(ndimage, name)(x, *args), x),
             getattr(snd, name)(x, *args))
    for order in (0, 1):
        same(traced(lambda x: ndimage.shift(x, (0.5, -1.5), order=order, cval=1j), x),
             snd.shift(x, (0.5, -1.5), order=order, cval=1j))
        same(traced(lambda x: ndimage.zoom(x, 1.5, order=order), x),
             snd.zoom(x, 1.5, order=order))


def test_empty_and_zero_dimensional_inputs():
    for shape in [(0,), (0, 3), (3, 0)]:
        x = numpy.zeros(shape)
        for name, args in (("correlate1d", ([1.0, 2.0],)), ("uniform_filter", (3,)),
                           ("gaussian_filter", (1.0,)), ("correlate", (numpy.ones((2,) *
                                                                                 len(shape)),)),
                           ("laplace", ())):
            same(traced(lambda x: getattr(ndimage, name)(x, *args), x),
                 getattr(snd, name)(x, *args))
    x = numpy.array(2.0)
    for name, args in (("correlate", (numpy.array(3.0),)), ("gaussian_filter", (1.0,)),
                       ("uniform_filter", (3,)), ("laplace", ())):
        got = traced(lambda x: getattr(ndimage, name)(x, *args), x)
        assert got == getattr(snd, name)(x, *args)


def test_plain_calls_are_scipys_own():
    x = rng.normal(size=(6, 5))
    w = rng.normal(size=(3, 2))
    calls = [("correlate1d", (w[0],), {"origin": -1}), ("convolve", (w,), {"mode": "wrap"}),
             ("gaussian_filter", (1.5,), {"order": 1}), ("gaussian_laplace", (0.7,), {}),
             ("uniform_filter", (4,), {}), ("sobel", (0,), {}), ("laplace", (), {}),
             ("shift", (0.3,), {}), ("zoom", (1.7,), {}), ("shift", (0.3,), {"order": 1})]
    for name, args, kw in calls:
        assert numpy.array_equal(getattr(ndimage, name)(x, *args, **kw),
                                 getattr(snd, name)(x, *args, **kw))
    out = numpy.empty_like(x)                       # (SciPy's own: writes into output)
    ndimage.gaussian_filter(x, 1.0, output=out)
    assert numpy.array_equal(out, snd.gaussian_filter(x, 1.0))


# ---- derivatives -------------------------------------------------------------------------
@pytest.mark.parametrize("mode", FILTER_MODES)
def test_derivatives_in_input_weights_and_cval_to_second_order(mode):
    x = rng.normal(size=(4, 5))
    w = rng.normal(size=(3, 2))
    w1 = rng.normal(size=4)
    check_grads(lambda x, w, c: ndimage.correlate(x, w, mode=mode, cval=c, origin=(1, 0)) ** 2,
                x, w, 0.3)
    check_grads(lambda x, w, c: ndimage.convolve(x, w, mode=mode, cval=c) ** 2, x, w, 0.3)
    check_grads(lambda x, w, c: ndimage.correlate1d(x, w, axis=0, mode=mode, cval=c) ** 2,
                x, w1, -0.4)
    check_grads(lambda x, w: ndimage.convolve1d(x, w, mode=mode, origin=-1) ** 2, x, w1)
    # a kernel much longer than the array, the boundary read many times over
    check_grads(lambda x, w: ndimage.correlate1d(x, w, mode=mode) ** 2, x,
                rng.normal(size=13))
    check_grads(lambda x, c: ndimage.uniform_filter(x, (2, 3), mode=mode, cval=c) ** 2, x, 0.1)
    check_grads(lambda x, c: (ndimage.sobel(x, mode=mode, cval=c) ** 2
                              + ndimage.prewitt(x, 0, mode=mode, cval=c) ** 2
                              + ndimage.laplace(x, mode=mode, cval=c) ** 2), x, 0.7)


@pytest.mark.parametrize("mode", FILTER_MODES)
def test_gaussian_derivatives_in_input_and_sigma_to_second_order(mode):
    x = rng.normal(size=(5, 4))
    check_grads(lambda x, s: ndimage.gaussian_filter(x, s, order=(1, 2), mode=mode) ** 2,
                x, 1.1)
    check_grads(lambda x, s: ndimage.gaussian_filter1d(x, s, order=3, mode=mode) ** 2, x, 0.8)
    check_grads(lambda x, s: ndimage.gaussian_laplace(x, s, mode=mode) ** 2, x, 0.9)
    check_grads(lambda x, s: ndimage.gaussian_gradient_magnitude(x, s, mode=mode), x, 0.9)
    check_grads(lambda s: ndimage.gaussian_filter(x, s, mode=mode), numpy.array([0.7, 1.6]))


def test_derivative_in_sigma_is_that_of_scipys_filter():
    """Central differences of SciPy's own filter in sigma, away from the sigmas where the
    radius int(4 sigma + 0.5) jumps (the derivative holds the radius)."""
    x = rng.normal(size=(7, 6))
    h = 1e-6
    for sigma in (0.7, 1.3, 2.2):
        for order in (0, 1, 2):
            fd = (snd.gaussian_filter(x, sigma + h, order) -
                  snd.gaussian_filter(x, sigma - h, order)) / (2 * h)
            got = wg.jacfwd(lambda s: ndimage.gaussian_filter(x, s, order))(sigma)
            numpy.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-7)
        fd = (snd.gaussian_laplace(x, sigma + h) - snd.gaussian_laplace(x, sigma - h)) / (2 * h)
        got = wg.jacrev(lambda s: ndimage.gaussian_laplace(x, s))(sigma)
        numpy.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-7)


def test_derivatives_of_shift_and_zoom():
    x = rng.normal(size=(5, 6))
    for mode in MODES:
        # a shift off the integers (where linear interpolation's slope jumps)
        check_grads(lambda x, s, c: ndimage.shift(x, s, order=1, mode=mode, cval=c) ** 2,
                    x, numpy.array([0.3, -1.6]), 0.4)
        check_grads(lambda x: ndimage.zoom(x, 1.7, order=1, mode=mode, cval=0.2) ** 2, x)
        check_grads(lambda x: ndimage.zoom(x, 0.6, order=0, mode=mode) ** 3, x)


def test_gradients_are_the_transposed_filter():
    """The gradient of one output is the (flipped) kernel placed there, its parts beyond
    the edge folded back as the mode copied them; in the weights, the window it reads."""
    x = numpy.zeros(6)
    w = numpy.array([1.0, 2.0, 3.0])
    g = wg.grad(lambda x: ndimage.correlate1d(x, w, mode="constant")[2])(x)
    numpy.testing.assert_array_equal(g, [0, 1, 2, 3, 0, 0])
    g = wg.grad(lambda x: ndimage.convolve1d(x, w, mode="constant")[2])(x)
    numpy.testing.assert_array_equal(g, [0, 3, 2, 1, 0, 0])
    # at the first sample: 'reflect' reads x[0] twice, 'mirror' x[1] twice, 'wrap' x[5]
    for mode, expected in (("reflect", [3, 3, 0, 0, 0, 0]), ("mirror", [2, 4, 0, 0, 0, 0]),
                           ("nearest", [3, 3, 0, 0, 0, 0]), ("wrap", [2, 3, 0, 0, 0, 1])):
        g = wg.grad(lambda x: ndimage.correlate1d(x, w, mode=mode)[0])(x)
        numpy.testing.assert_array_equal(g, expected, err_msg=mode)
    data = numpy.arange(6.0)
    g = wg.grad(lambda w: ndimage.correlate1d(data, w, mode="mirror")[0])(w)
    numpy.testing.assert_array_equal(g, [1.0, 0.0, 1.0])
    assert wg.grad(lambda c: ndimage.correlate1d(data, w, mode="constant", cval=c)[0])(0.0) \
        == 1.0


def test_gradient_magnitude_takes_zero_where_it_vanishes():
    """In 'mirror' mode both derivatives vanish at the corners by symmetry, and the
    magnitude (a norm) has no derivative there: the subgradient 0, which central
    differences (symmetric about the point) agree with, rather than nan."""
    x = rng.normal(size=(5, 6))
    assert snd.gaussian_gradient_magnitude(x, 0.9, mode="mirror")[0, 0] == 0.0
    g = wg.grad(lambda x: wnp.sum(ndimage.gaussian_gradient_magnitude(x, 0.9, mode="mirror")))(x)
    assert numpy.isfinite(g).all()
    check_grads(lambda x: ndimage.gaussian_gradient_magnitude(x, 0.9, mode="mirror"), x)
    assert numpy.array_equal(wg.grad(lambda x: wnp.sum(
        ndimage.gaussian_gradient_magnitude(x, 1.0)))(numpy.ones((4, 4))), numpy.zeros((4, 4)))


def test_complex_derivatives():
    x = rng.normal(size=(4, 5)) + 1j * rng.normal(size=(4, 5))
    w = rng.normal(size=(2, 3)) + 1j * rng.normal(size=(2, 3))
    check_complex_grads(lambda x, w: ndimage.correlate(x, w, mode="wrap"), x, w)
    check_complex_grads(lambda x, w: ndimage.convolve1d(x, w[0], mode="constant", cval=1j),
                        x, w)
    check_complex_grads(lambda x: ndimage.gaussian_filter(x, 0.8), x)


def test_primitive_against_its_decomposition():
    """correlate_valid (SciPy's correlate cut to the valid part, or one sum per result
    when the kernel is the larger) against Σ_k w_k p[k : k + n], in value, JVP and VJP,
    for kernels along one axis, over several, and larger than the result."""
    from wengert.primitives.ndimage import correlate_valid
    for sp, sw in [((9,), (3,)), ((6, 7), (1, 4)), ((6, 7), (3, 2)), ((5, 4, 3), (2, 1, 3)),
                   ((6, 5), (5, 4)), ((8,), (8,)), ((4, 5), (4, 1))]:
        p, w = rng.normal(size=sp), rng.normal(size=sw)
        vp, vw = rng.normal(size=sp), rng.normal(size=sw)
        ct = rng.normal(size=tuple(a - b + 1 for a, b in zip(sp, sw)))
        for f in (correlate_valid, correlate_valid.decomposition):
            value, tangent = wg.jvp(lambda p, w: f(p, w), (p, w), (vp, vw))
            cotangents = wg.vjp(lambda p, w: f(p, w), p, w)[1](ct)
            if f is correlate_valid:
                expected = value, tangent, cotangents
                continue
            for a, b in zip((value, tangent) + tuple(cotangents), expected[:2] +
                            tuple(expected[2])):
                numpy.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        check_grads(lambda p, w: correlate_valid(p, w) ** 2, p, w)


def test_taylor_series_through_a_filter():
    """Taylor mode takes the primitive through its decomposition: the square of a linear
    filter along x + t v has the coefficients f(x)², 2 f(x) f(v), f(v)², 0."""
    x = rng.normal(size=(4, 5))
    v = rng.normal(size=(4, 5))
    f = lambda x: ndimage.gaussian_filter(x, 0.8, mode="wrap")
    fx, fv = snd.gaussian_filter(x, 0.8, mode="wrap"), snd.gaussian_filter(v, 0.8, mode="wrap")
    series = wg.taylor(lambda x: f(x) ** 2, x, v, order=3)
    for got, expected in zip(series, (fx ** 2, 2 * fx * fv, fv ** 2, 0 * fx)):
        numpy.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


# ---- JAX's convolutions ----------------------------------------------------------------------
def test_values_and_derivatives_match_jax_convolutions(jax):
    """JAX has no ndimage filters; its jax.scipy.signal.convolve and correlate in 'same'
    mode are ndimage's with mode='constant', cval=0 for kernels of odd length."""
    import jax.numpy as jnp
    import jax.scipy.signal as jsig
    for shape, wshape in [((11,), (3,)), ((7, 9), (3, 5)), ((5, 4, 6), (3, 1, 3))]:
        x, w = rng.normal(size=shape), rng.normal(size=wshape)
        ct = rng.normal(size=shape)
        for name in ("convolve", "correlate"):
            theirs = lambda x, w: jnp.sum(getattr(jsig, name)(x, w, mode="same") * ct)
            ours = lambda x, w: wnp.sum(getattr(ndimage, name)(x, w, mode="constant") * ct)
            value, grads = jax.value_and_grad(theirs, argnums=(0, 1))(x, w)
            numpy.testing.assert_allclose(ours(x, w), value, rtol=1e-13)
            for a, b in zip(wg.grad(ours, argnums=(0, 1))(x, w), grads):
                numpy.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    # a separable Gaussian blur as JAX's convolve2d with the outer product of the kernels
    x = rng.normal(size=(14, 12))
    k = snd.gaussian_filter1d(numpy.eye(11)[5], 1.3, mode="constant")  # (the kernel: radius 5)
    blur = jax.jit(jax.grad(lambda x: jnp.sum(jsig.convolve2d(x, jnp.outer(k, k), mode="same")
                                              ** 2)))
    ours = wg.grad(lambda x: wnp.sum(ndimage.gaussian_filter(x, 1.3, mode="constant") ** 2))
    numpy.testing.assert_allclose(ours(x), blur(x), rtol=1e-12, atol=1e-12)


# ---- jit, compile, vmap ------------------------------------------------------------------------
def test_jit_compile_and_vmap():
    # (no atol, an entry of 9e-4 once differed by 1.3e-16, 1.5e-13 of it, under xdist's
    # order; these values are of order 1)
    x = rng.normal(size=(6, 5))
    w = rng.normal(size=(3, 2))
    loss = lambda x, w: wnp.sum(ndimage.correlate(x, w, mode="mirror") ** 2)
    eager = wg.grad(loss, argnums=(0, 1))(x, w)
    for got in (wg.compile(wg.grad(loss, argnums=(0, 1)), x, w)(x, w),
                wg.jit(wg.grad(loss, argnums=(0, 1)))(x, w)):
        for a, b in zip(got, eager):
            numpy.testing.assert_allclose(a, b, rtol=1e-13, atol=ATOL)
    numpy.testing.assert_allclose(wg.jit(lambda x, s: ndimage.gaussian_filter(x, s, radius=5))(
        x, 1.5), snd.gaussian_filter(x, 1.5, radius=5), rtol=1e-13, atol=ATOL)
    images = rng.normal(size=(4, 6, 5))
    kernels = rng.normal(size=(4, 3, 2))
    each = lambda f, *xs: numpy.stack([f(*a) for a in zip(*xs)])
    numpy.testing.assert_allclose(wg.vmap(lambda x: ndimage.gaussian_filter(x, 1.3))(images),
                                  each(lambda x: snd.gaussian_filter(x, 1.3), images),
                                  rtol=1e-13, atol=ATOL)
    numpy.testing.assert_allclose(wg.vmap(lambda w: ndimage.correlate(x, w))(kernels),
                                  each(lambda w: snd.correlate(x, w), kernels), rtol=1e-13, atol=ATOL)
    numpy.testing.assert_allclose(wg.vmap(ndimage.convolve)(images, kernels),
                                  each(snd.convolve, images, kernels), rtol=1e-13, atol=ATOL)
    sigmas = numpy.array([0.5, 1.0, 2.0, 1.7])
    numpy.testing.assert_allclose(
        wg.vmap(lambda s: ndimage.gaussian_filter(x, s, radius=4))(sigmas),
        each(lambda s: snd.gaussian_filter(x, s, radius=4), sigmas), rtol=1e-13, atol=ATOL)
    per_example = wg.vmap(wg.grad(loss, argnums=(0, 1)))(images, kernels)
    for got, expected in zip(per_example, zip(*[wg.grad(loss, argnums=(0, 1))(a, b)
                                                for a, b in zip(images, kernels)])):
        numpy.testing.assert_allclose(got, numpy.stack(expected), rtol=1e-13, atol=ATOL)
    shifts = rng.uniform(-2, 2, size=(4, 2))
    numpy.testing.assert_allclose(
        wg.vmap(lambda s: ndimage.shift(x, s, order=1, mode="nearest"))(shifts),
        each(lambda s: snd.shift(x, s, order=1, mode="nearest"), shifts), rtol=1e-13, atol=ATOL)


# ---- errors --------------------------------------------------------------------------------
def test_bad_arguments_raise_scipys_errors():
    x = numpy.ones((5, 4))
    w = numpy.ones(3)

    def traced_call(f, *args, **kw):
        return wg.grad(lambda x: wnp.sum(wnp.real(f(x, *args, **kw))))(x)

    cases = [
        (RuntimeError, "boundary mode not supported.*got 'edge'", ndimage.correlate1d, (w,),
         dict(mode="edge")),
        (RuntimeError, "boundary mode not supported", ndimage.gaussian_filter, (1.0,),
         dict(mode=["reflect", "edge"])),
        (RuntimeError, "a sequence of modes is not supported", ndimage.correlate,
         (numpy.ones((3, 3)),), dict(mode=["reflect", "wrap"])),
        (ValueError, r"Invalid origin 2: for 3 weights origin must satisfy -1 <= origin <= 1",
         ndimage.correlate1d, (w,), dict(origin=2)),
        (ValueError, r"Invalid origin 1: for 2 weights origin must satisfy -1 <= origin <= 0",
         ndimage.convolve1d, ([1.0, 2.0],), dict(origin=1)),
        (ValueError, "Invalid origin", ndimage.correlate, (numpy.ones((3, 2)),),
         dict(origin=(0, 1))),
        (RuntimeError, r"no filter weights given.*shape \(0,\)", ndimage.correlate1d,
         (numpy.ones(0),), {}),
        (RuntimeError, r"no filter weights given.*shape \(2, 2\)", ndimage.correlate1d,
         (numpy.ones((2, 2)),), {}),
        (RuntimeError, r"weights.ndim \(1\) must match len\(axes\) \(2\)", ndimage.correlate,
         (w,), {}),
        (ValueError, "axes must be unique", ndimage.correlate, (numpy.ones((2, 2)),),
         dict(axes=(1, -1))),
        (ValueError, "specified axis: 2 is out of range", ndimage.uniform_filter, (3,),
         dict(axes=(2,))),
        (TypeError, "each of axes must be an integer", ndimage.gaussian_filter, (1.0,),
         dict(axes=(0.0,))),
        (numpy.exceptions.AxisError, "axis 2 is out of bounds", ndimage.correlate1d, (w,),
         dict(axis=2)),
        (numpy.exceptions.AxisError, "axis 2 is out of bounds", ndimage.sobel, (2,), {}),
        (TypeError, "origin must be an integer, got 0.5", ndimage.correlate1d, (w,),
         dict(origin=0.5)),
        (TypeError, "cval must be a real number", ndimage.correlate1d, (w,),
         dict(cval=1 + 1j)),
        (RuntimeError, "sequence argument must have length equal to input rank.*sigma",
         ndimage.gaussian_filter, ([1.0, 2.0, 3.0],), {}),
        (ValueError, "order must be non-negative, got -1", ndimage.gaussian_filter1d, (1.0,),
         dict(order=-1)),
        (TypeError, "order must be an integer, got 1.5", ndimage.gaussian_filter1d, (1.0,),
         dict(order=1.5)),
        (ValueError, "Radius must be a nonnegative integer, got radius=1.5",
         ndimage.gaussian_filter1d, (1.0,), dict(radius=1.5)),
        (ValueError, "Radius must be a nonnegative integer.*-3", ndimage.gaussian_filter1d,
         (-1.0,), {}),
        (ZeroDivisionError, "sigma is 0", ndimage.gaussian_filter1d, (0.0,), {}),
        (ValueError, "sigma=nan", ndimage.gaussian_filter1d, (numpy.nan,), {}),
        (OverflowError, "truncate=inf", ndimage.gaussian_filter1d, (1.0,),
         dict(truncate=numpy.inf)),
        (TypeError, "sigma must be a real number", ndimage.gaussian_filter1d, (1 + 1j,), {}),
        (TypeError, "unexpected keyword argument 'order'", ndimage.gaussian_laplace, (1.0,),
         dict(order=1)),
        (RuntimeError, "incorrect filter size: size must be at least 1, got 0",
         ndimage.uniform_filter1d, (0,), {}),
        (TypeError, "size must be an integer, got 2.5", ndimage.uniform_filter1d, (2.5,), {}),
        (ValueError, r"invalid origin 2: for size 3 it must be in \[-1, 1\]",
         ndimage.uniform_filter1d, (3,), dict(origin=2)),
        (NotImplementedError, r"output=array\) is not supported on traced values",
         ndimage.gaussian_filter, (1.0,), dict(output=numpy.empty((5, 4)))),
        (RuntimeError, "array type not supported: output=complex128", ndimage.correlate1d,
         (w,), dict(output=numpy.complex128)),
        (TypeError, "order must be an integer, got 2.5", ndimage.shift, (0.5,),
         dict(order=2.5)),
        (RuntimeError, "spline order not supported.*got 1.5", ndimage.zoom, (2.0,),
         dict(order=1.5)),
        (RuntimeError, "spline order not supported.*got 6", ndimage.shift, (0.5,),
         dict(order=6)),
        (RuntimeError, "boundary mode not supported.*got 'edge'", ndimage.zoom, (2.0,),
         dict(order=1, mode="edge")),
        (RuntimeError, "sequence argument must have length equal to input rank.*shift",
         ndimage.shift, ((1.0, 2.0, 3.0),), dict(order=1)),
    ]
    for error, message, f, args, kw in cases:
        if error is not NotImplementedError:            # (SciPy's own error, its type)
            with pytest.raises(error):
                getattr(snd, f.__name__)(x, *args, **kw)
        with pytest.raises(error, match=message):
            traced_call(f, *args, **kw)
    with pytest.raises(TypeError, match="the input must be numbers"):
        traced(lambda c: ndimage.correlate1d(numpy.array(["a", "b"]), w, cval=c), 0.0)
    with pytest.raises(RuntimeError, match="rank must be > 0"):
        traced(lambda c: ndimage.shift(numpy.array(1.0), 0.5, order=1, cval=c), 0.0)
    with pytest.raises(wg.ConcretizationError, match="needs sigma's value.*pass radius="):
        wg.jit(lambda x, s: ndimage.gaussian_filter(x, s))(x, 1.5)
    with pytest.raises(ZeroDivisionError, match="sigma is 0"):       # (a traced sigma too)
        wg.grad(lambda s: wnp.sum(ndimage.gaussian_filter1d(x, s)))(0.0)
    with pytest.raises(TypeError, match="each of axes must be an integer, got 1.0"):
        traced_call(ndimage.uniform_filter, 3, axes=1.0)


def test_the_rest_of_scipy_ndimage_is_scipys_on_plain_values_and_refused_when_traced():
    x = rng.normal(size=(5, 6))
    assert numpy.array_equal(ndimage.median_filter(x, 3), snd.median_filter(x, 3))
    with pytest.raises(NotImplementedError, match="scipy.ndimage.median_filter is not "
                                                  "supported on traced values"):
        wg.grad(lambda x: wnp.sum(ndimage.median_filter(x, 3)))(x)
