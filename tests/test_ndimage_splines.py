"""wengert.scipy.ndimage's B-splines (orders 2 to 5): spline_filter1d and spline_filter
against SciPy's values in every mode (short lines, where SciPy's 'reflect' filter is not
the exact interpolating spline, and long ones, solved as banded systems), and against the
interpolation condition itself; map_coordinates, shift and zoom at every order 0 to 5, in
every mode, with and without the prefilter, on 1-D, 2-D and 3-D arrays, traced in each
argument; the derivatives in the coordinates against scipy.interpolate.BSpline's
derivatives of SciPy's own coefficients (first and second), in the input and cval against
SciPy's values (the map is linear in them), and everything to second order against central
differences; the primitive bspline_weights against its decomposition, the B-spline basis
and Taylor mode; jit, compile and vmap; dtypes; and the errors, SciPy's types."""
import warnings

import numpy
import pytest
import scipy.interpolate as sip
import scipy.ndimage as snd

import wengert as wg
import wengert.numpy as wnp
from wengert.primitives.ndimage import bspline_weights
from wengert.scipy import ndimage
from wengert.scipy.ndimage import MODES
from fd import check_complex_grads, check_grads

rng = numpy.random.default_rng(20261205)

ORDERS = [2, 3, 4, 5]

#: measured worst differences from SciPy's values, for inputs of unit size, with 5 times
#: margin (the B-spline coefficients of order 5 in 3-D grow to about 30 times the input,
#: and SciPy's recursive filter and wengert's banded solve round differently)
VALUE_ATOL = 1e-13


def traced(f, *args):
    return wg.vjp(f, *args)[0]


def points(shape, count=80, margin=9.0):
    """Random coordinates over the array and `margin` beyond it, then as many integers and
    half-integers (the knots of odd and of even orders)."""
    high = max(shape) - 1 + margin
    c = rng.uniform(-margin, high, size=(len(shape), count))
    knots = numpy.round(rng.uniform(-margin, high, size=(len(shape), count // 2)) * 2) / 2
    return numpy.concatenate([c, knots], axis=1)


# ---- the prefilter ------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("order", [0, 1] + ORDERS)
def test_spline_filter1d_is_scipys(mode, order):
    """Every axis of 1-D, 2-D and 3-D arrays, lines of 1 to 100 samples (short ones by
    SciPy's own matrix, long ones by a banded solve); traced, jitted and plain."""
    for shape in [(1,), (2,), (3,), (7,), (32,), (33,), (100,), (6, 40), (3, 4, 35), (0, 3)]:
        x = rng.normal(size=shape)
        for axis in range(-1, len(shape)):
            expected = snd.spline_filter1d(x, order, axis, mode=mode)
            f = lambda x: ndimage.spline_filter1d(x, order, axis, mode=mode)
            for got in (traced(f, x), wg.jit(f)(x)):
                assert got.dtype == expected.dtype and got.shape == expected.shape
                numpy.testing.assert_allclose(got, expected, rtol=0,
                                              atol=2e-15 * max(1.0, abs(expected).max(
                                                  initial=0)), err_msg=f"{shape} {axis}")
            assert numpy.array_equal(f(x), expected)       # (plain: SciPy's own)


@pytest.mark.parametrize("mode", MODES)
def test_spline_filter_is_scipys(mode):
    for shape in [(5,), (40,), (6, 40), (3, 1, 4), (34, 3, 2)]:
        x = rng.normal(size=shape)
        for order in ORDERS:
            expected = snd.spline_filter(x, order, mode=mode)
            got = traced(lambda x: ndimage.spline_filter(x, order, mode=mode), x)
            numpy.testing.assert_allclose(got, expected, rtol=0,
                                          atol=2e-15 * abs(expected).max())


def test_the_coefficients_interpolate_the_samples():
    """Independently of SciPy's filter: the coefficients of a long line, read back by
    SciPy's interpolation (prefilter=False) at the samples, give the samples (the
    boundary of each mode is the one SciPy's reading assumes)."""
    for mode in ("mirror", "reflect", "grid-wrap"):
        for order in ORDERS:
            x = rng.normal(size=60)
            c = traced(lambda x: ndimage.spline_filter1d(x, order, mode=mode), x)
            back = snd.map_coordinates(c, [numpy.arange(60.0)], order=order, mode=mode,
                                       prefilter=False)
            numpy.testing.assert_allclose(back, x, rtol=0, atol=1e-14)


def test_short_reflected_lines_are_scipys_approximation():
    """SciPy's 'reflect' filter starts its recursion from a sum that is exact only on
    long lines: on 2 samples at order 5 its coefficients are 1e-2 from the interpolating
    spline's.  wengert's are SciPy's there (its filter's matrix), not the exact ones."""
    x = numpy.array([1.0, -2.0])
    got = traced(lambda x: ndimage.spline_filter1d(x, 5, mode="reflect"), x)
    numpy.testing.assert_allclose(got, snd.spline_filter1d(x, 5, mode="reflect"), rtol=1e-15)
    back = snd.map_coordinates(got, [[0.0, 1.0]], order=5, mode="reflect", prefilter=False)
    assert abs(back - x).max() > 1e-3


def test_spline_filter_dtypes_are_scipys():
    # (data of its own: from the module's generator it depended on the tests run before)
    draw = numpy.random.default_rng(46)
    x = draw.uniform(-50, 50, size=(6, 7))
    for kw in [dict(), dict(output=numpy.float32), dict(output=numpy.int32),
               dict(output=numpy.int16, order=5), dict(output=None)]:
        for f in ("spline_filter1d", "spline_filter"):
            for inp in (x, x.astype(numpy.float32), x.astype(numpy.int64)):
                expected = getattr(snd, f)(inp, **kw)
                got = wg.jit(lambda inp: getattr(ndimage, f)(inp, **kw))(inp)
                assert got.dtype == expected.dtype, (f, kw, inp.dtype)
                tol = 1e-4 if numpy.float32 in (got.dtype, inp.dtype) else 1e-12
                numpy.testing.assert_allclose(got, expected, rtol=tol, atol=1.0 if
                                              got.dtype.kind == "i" else tol)
    z = x + 1j * draw.normal(size=x.shape)
    with pytest.warns(UserWarning, match="promoting specified output dtype to complex"):
        expected = snd.spline_filter(z)
    with pytest.warns(UserWarning, match="promoting specified output dtype to complex"):
        got = traced(lambda z: ndimage.spline_filter(z), z)
    assert got.dtype == numpy.complex128
    # (the recursive filters' rounding is relative to the largest values, not each one:
    # an entry of 0.16 beside ones of 97 differed by 1.9e-14 once)
    numpy.testing.assert_allclose(got, expected, rtol=1e-14, atol=1e-14 * abs(expected).max())


# ---- map_coordinates, shift and zoom: values ---------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("order", range(6))
def test_map_coordinates_values_are_scipys(mode, order):
    """Random points far outside, knots, 1-D to 3-D, traced in the input, the coordinates
    and cval, and compiled, with and without the prefilter."""
    for shape in [(1,), (2,), (5,), (40,), (4, 3), (37, 5), (3, 1, 4), (3, 2, 5)]:
        x = rng.normal(size=shape)
        c = points(shape)
        for prefilter in (True, False):
            kw = dict(order=order, mode=mode, prefilter=prefilter)
            expected = snd.map_coordinates(x, c, cval=-2.5, **kw)
            f = lambda x, c, v: ndimage.map_coordinates(x, c, cval=v, **kw)
            for got in (traced(lambda x: f(x, c, -2.5), x), traced(lambda c: f(x, c, -2.5), c),
                        traced(lambda v: f(x, c, v), -2.5), wg.compile(f, x, c, -2.5)(x, c, -2.5)):
                assert got.dtype == expected.dtype
                numpy.testing.assert_allclose(got, expected, rtol=0, atol=VALUE_ATOL,
                                              err_msg=f"{shape} prefilter={prefilter}")


@pytest.mark.parametrize("mode", MODES)
def test_shift_and_zoom_values_are_scipys(mode):
    warnings.simplefilter("ignore", UserWarning)        # (zoom's advice on grid_mode)
    for shape in [(1,), (7,), (40,), (4, 3), (35, 6), (3, 2, 4)]:
        x = rng.normal(size=shape)
        for order in ORDERS:
            for prefilter in (True, False):
                kw = dict(order=order, mode=mode, prefilter=prefilter)
                for s in (0.3, -2.7, 11.2):
                    expected = snd.shift(x, s, cval=0.4, **kw)
                    for got in (traced(lambda x: ndimage.shift(x, s, cval=0.4, **kw), x),
                                traced(lambda s: ndimage.shift(x, s, cval=0.4, **kw), s),
                                traced(lambda v: ndimage.shift(x, s, cval=v, **kw), 0.4)):
                        numpy.testing.assert_allclose(got, expected, rtol=0, atol=VALUE_ATOL)
                for z in (0.5, 1.7, 2.0):
                    for grid_mode in (False, True):
                        expected = snd.zoom(x, z, cval=0.4, grid_mode=grid_mode, **kw)
                        got = traced(lambda x: ndimage.zoom(x, z, cval=0.4,
                                                            grid_mode=grid_mode, **kw), x)
                        assert got.shape == expected.shape
                        numpy.testing.assert_allclose(got, expected, rtol=0, atol=VALUE_ATOL)


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.int32, numpy.uint8, numpy.complex128])
def test_dtypes_are_scipys(dtype):
    x = rng.uniform(0, 200, size=(6, 5))
    if dtype == numpy.complex128:
        x = x + 1j * rng.normal(size=x.shape)
    x = x.astype(dtype)
    c = points(x.shape, margin=2.0)
    for order in (2, 3, 5):
        for mode in ("reflect", "grid-constant", "nearest"):
            kw = dict(order=order, mode=mode, cval=3.7)
            expected = snd.map_coordinates(x, c, **kw)
            got = traced(lambda c: ndimage.map_coordinates(x, c, **kw), c)
            assert got.dtype == expected.dtype
            if got.dtype.kind in "iu":              # (rounded: a tie may fall either way)
                assert abs(got.astype(float) - expected).max() <= 1
                assert numpy.mean(got == expected) > 0.95
            else:
                numpy.testing.assert_allclose(got, expected, rtol=1e-5 if dtype ==
                                              numpy.float32 else 1e-13, atol=1e-11)


def test_complex_inputs_and_cval():
    """SciPy interpolates the real and imaginary parts apart (with cval's): the same
    linear maps, on short lines (SciPy's filter's matrix) and long ones (banded solves);
    differentiable in the complex input, holomorphically."""
    for shape in [(6, 5), (40, 3)]:
        x = rng.normal(size=shape) + 1j * rng.normal(size=shape)
        c = points(shape, count=20, margin=3.0)
        for mode in ("grid-wrap", "reflect", "nearest", "grid-constant", "constant"):
            kw = dict(order=3, mode=mode, cval=0.5 - 0.25j)
            expected = snd.map_coordinates(x, c, **kw)
            got = traced(lambda x: ndimage.map_coordinates(x, c, **kw), x)
            assert got.dtype == numpy.complex128
            numpy.testing.assert_allclose(got, expected, rtol=0, atol=VALUE_ATOL)
    check_complex_grads(lambda x, c: ndimage.map_coordinates(x, c, order=3, mode="reflect"),
                        x, c)


def test_plain_calls_are_scipys_own_and_jax_positional_calls_work():
    x = rng.normal(size=(5, 4))
    c = points(x.shape, margin=2.0)
    assert numpy.array_equal(ndimage.map_coordinates(x, c), snd.map_coordinates(x, c))
    assert numpy.array_equal(ndimage.spline_filter(x, 4), snd.spline_filter(x, 4))
    # JAX's signature, map_coordinates(input, coordinates, order, mode, cval), at order 3
    expected = snd.map_coordinates(x, c, order=3, mode="nearest", cval=3.0)
    got = traced(lambda c: ndimage.map_coordinates(x, c, 3, "nearest", 3.0), c)
    numpy.testing.assert_allclose(got, expected, rtol=0, atol=VALUE_ATOL)


def test_jax_refuses_the_orders_above_1():
    """Where JAX's map_coordinates and this one overlap (orders 0 and 1) test_ndimage.py
    compares values and derivatives; above, JAX has nothing to compare with."""
    jax = pytest.importorskip("jax")
    import jax.scipy.ndimage as jnd
    with pytest.raises(NotImplementedError):
        jnd.map_coordinates(jax.numpy.ones((4, 4)), [[1.5], [1.5]], order=3)


# ---- derivatives ---------------------------------------------------------------------------
def _extended(n, mode):
    """Where map_coordinates reads coefficient p of a line of n for p in -L .. n - 1 + L
    (the test's own account of SciPy's reading), -1 for cval."""
    p = numpy.arange(-40, n + 40)
    if mode in ("reflect", "grid-mirror"):
        r = p % (2 * n)
        return numpy.where(r < n, r, 2 * n - 1 - r)
    if mode in ("mirror", "constant", "wrap"):
        if n == 1:
            return 0 * p
        r = p % (2 * n - 2)
        return numpy.where(r < n, r, 2 * n - 2 - r)
    if mode == "grid-wrap":
        return p % n
    if mode == "nearest":
        return numpy.clip(p, 0, n - 1)
    return numpy.where((p >= 0) & (p < n), p, -1)           # 'grid-constant'


def bspline_of(x, order, mode, cval, prefilter):
    """(scipy.interpolate.BSpline, shift): the spline map_coordinates evaluates on the line
    x, built from SciPy's own coefficients (SciPy's spline_filter1d, after the padding
    SciPy gives 'nearest' and 'grid-constant'), evaluated at coordinate + shift."""
    pad = 12 if prefilter and mode in ("nearest", "grid-constant") else 0
    if pad:
        x = numpy.pad(x, pad, mode="edge") if mode == "nearest" else \
            numpy.pad(x, pad, mode="constant", constant_values=cval)
    c = snd.spline_filter1d(x, order, mode=mode) if prefilter else x
    where = _extended(c.size, mode)
    coefficients = numpy.where(where >= 0, c[where], cval)
    knots = -40 - (order + 1) / 2 + numpy.arange(coefficients.size + order + 1)
    return sip.BSpline(knots, coefficients, order, extrapolate=False), pad


def scipy_wrap(c, n):
    p = n - 1
    return numpy.where(c < 0, c + p * (numpy.floor(-c / p) + 1),
                       numpy.where(c > p, c - p * numpy.floor(c / p), c))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("order", ORDERS)
def test_derivatives_in_the_coordinates_are_the_splines(mode, order):
    """The first and second derivatives in the coordinates of a 1-D map_coordinates
    (gradient of the sum, and gradient of that) against BSpline.derivative of SciPy's own
    coefficients, with and without the prefilter, at random points off the knots."""
    for n in (1, 6, 40):
        x = rng.normal(size=n)
        lo, hi = (0.0, n - 1.0) if mode == "constant" else (-8.0, n + 7.0)
        c = rng.uniform(lo, hi, size=60)
        c = c[abs(c - numpy.round(c * 2) / 2) > 1e-6]
        if n == 1 and mode == "constant":
            c = numpy.array([0.0])
        for prefilter in (True, False):
            spline, pad = bspline_of(x, order, mode, 0.7, prefilter)
            at = (scipy_wrap(c, n) if mode == "wrap" and n > 1 else
                  0 * c if mode == "wrap" else c) + pad
            f = lambda c: ndimage.map_coordinates(x, c[None], order=order, mode=mode,
                                                  cval=0.7, prefilter=prefilter)
            numpy.testing.assert_allclose(traced(f, c), spline(at), rtol=0, atol=1e-13)
            numpy.testing.assert_allclose(snd.map_coordinates(
                x, c[None], order=order, mode=mode, cval=0.7, prefilter=prefilter),
                spline(at), rtol=0, atol=1e-13)          # (the reference is SciPy's spline)
            first = wg.grad(lambda c: wnp.sum(f(c)))
            numpy.testing.assert_allclose(first(c), spline.derivative(1)(at), rtol=0,
                                          atol=2e-13)
            if order > 2:                       # (order 2's second derivative jumps)
                curvature = wg.grad(lambda c: wnp.sum(first(c)))(c)
                numpy.testing.assert_allclose(curvature, spline.derivative(2)(at), rtol=0,
                                              atol=5e-13)


@pytest.mark.parametrize("mode", MODES)
def test_derivatives_in_the_input_and_cval_are_scipys_weights(mode):
    """map_coordinates is linear in the input and cval jointly, so its Jacobian in the
    input is SciPy's map_coordinates of each unit image (cval 0) and its derivative in
    cval SciPy's of the zero image with cval 1."""
    for shape in [(7,), (4, 3), (35, 3)]:
        x = rng.normal(size=shape)
        c = points(shape, count=10, margin=3.0)
        for order in ORDERS:
            for prefilter in (True, False):
                kw = dict(order=order, mode=mode, prefilter=prefilter)
                jac = wg.jacrev(lambda x: ndimage.map_coordinates(x, c, cval=0.3, **kw))(x)
                unit = numpy.eye(x.size).reshape((x.size,) + shape)
                expected = numpy.stack([snd.map_coordinates(e, c, **kw) for e in unit], -1)
                numpy.testing.assert_allclose(jac.reshape(expected.shape), expected, rtol=0,
                                              atol=3e-14)
                dcval = wg.jacfwd(lambda v: ndimage.map_coordinates(x, c, cval=v, **kw))(0.3)
                numpy.testing.assert_allclose(dcval, snd.map_coordinates(
                    numpy.zeros(shape), c, cval=1.0, **kw), rtol=0, atol=3e-14)


@pytest.mark.parametrize("mode", MODES)
def test_second_order_against_central_differences(mode):
    """In the input, the coordinates and cval together, 2-D and 3-D, each order."""
    for shape in [(4, 5), (3, 4, 3)]:
        x = rng.normal(size=shape)
        for order in ORDERS:
            c = (rng.uniform(0.1, 1.9, size=(len(shape), 5)) if mode == "constant" else
                 rng.uniform(-4, 7, size=(len(shape), 5)))
            f = lambda x, c, v: ndimage.map_coordinates(x, c, order=order, mode=mode,
                                                        cval=v) ** 2
            check_grads(f, x, c, 0.3, order=2)


def test_shift_and_zoom_derivatives_against_central_differences():
    x = rng.normal(size=(5, 6))
    for mode in ("nearest", "grid-wrap", "mirror", "grid-constant"):
        for order in (3, 5):
            check_grads(lambda x, s: ndimage.shift(x, s, order=order, mode=mode) ** 2, x,
                        numpy.array([0.3, -1.6]))
            check_grads(lambda x: ndimage.zoom(x, 1.5, order=order, mode=mode) ** 2, x)
            check_grads(lambda x: ndimage.spline_filter(x, order, mode=mode) ** 2, x)


def test_taylor_series_in_a_coordinate():
    """Taylor mode through the weights' decomposition: between knots a spline of order k
    is a polynomial of degree k in its coordinate, whose Taylor coefficients are the
    BSpline's derivatives over factorials; beyond k they are 0."""
    x = rng.normal(size=12)
    c, v = numpy.array([[2.3, 5.71, 8.05]]), numpy.array([[1.0, -0.5, 0.25]])
    for order in ORDERS:
        spline, _ = bspline_of(x, order, "mirror", 0.0, True)
        series = wg.taylor(lambda c: ndimage.map_coordinates(x, c, order=order, mode="mirror"),
                           c, v, order=order + 2)
        factorial = 1.0
        for j, coefficient in enumerate(series):
            factorial *= max(j, 1)
            expected = spline.derivative(j)(c[0]) * v[0] ** j / factorial if j <= order \
                else 0 * c[0]
            numpy.testing.assert_allclose(coefficient, expected, rtol=0, atol=1e-12)


# ---- the primitive ------------------------------------------------------------------------
def test_bspline_weights_are_the_basis_and_its_derivatives():
    """Degree k at u: the cardinal B-spline's values at u + k, ..., u (scipy.interpolate),
    summing to 1, their derivatives summing to 0; the JVP and VJP against the
    decomposition, and check_grads to second order."""
    u = rng.uniform(0, 1, size=(3, 4))
    for degree in range(6):
        basis = sip.BSpline.basis_element(numpy.arange(degree + 2.0), extrapolate=False)
        for derivative in range(4):
            got = bspline_weights(u, degree=degree, derivative=derivative)
            assert got.shape == (degree + 1, 3, 4)
            expected = numpy.stack([basis.derivative(derivative)(u + degree - j)
                                    if derivative <= degree else 0 * u
                                    for j in range(degree + 1)])
            numpy.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-14)
            numpy.testing.assert_allclose(got.sum(0), 1.0 if derivative == 0 else 0.0,
                                          atol=1e-13)
            prim = lambda u: bspline_weights(u, degree=degree, derivative=derivative)
            decomposed = lambda u: bspline_weights.decomposition(u, degree, derivative)
            t, ct = rng.normal(size=u.shape), rng.normal(size=got.shape)
            for a, b in zip(wg.jvp(prim, (u,), (t,)), wg.jvp(decomposed, (u,), (t,))):
                numpy.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
            numpy.testing.assert_allclose(wg.vjp(prim, u)[1](ct)[0],
                                          wg.vjp(decomposed, u)[1](ct)[0], rtol=1e-12,
                                          atol=1e-12)
            check_grads(lambda u: bspline_weights(u, degree=degree, derivative=derivative)
                        ** 2, u)


# ---- jit, compile, vmap ------------------------------------------------------------------
def test_vmap_over_images_coordinates_and_both_without_loops(loops):
    images = rng.normal(size=(3, 6, 40))
    coords = rng.uniform(-2, 42, size=(3, 2, 7))
    f = lambda x, c: ndimage.map_coordinates(x, c, order=3, mode="grid-wrap")
    each = lambda xs, cs: numpy.stack([snd.map_coordinates(x, c, order=3, mode="grid-wrap")
                                       for x, c in zip(xs, cs)])
    for got, expected in [(wg.vmap(f, in_axes=(None, 0))(images[0], coords),
                           each([images[0]] * 3, coords)),
                          (wg.vmap(f, in_axes=(0, None))(images, coords[0]),
                           each(images, [coords[0]] * 3)),
                          (wg.vmap(f)(images, coords), each(images, coords))]:
        numpy.testing.assert_allclose(got, expected, rtol=0, atol=VALUE_ATOL)
    grads = wg.vmap(wg.grad(lambda c: wnp.sum(f(images[0], c) ** 2)))(coords)
    one = [wg.grad(lambda c: wnp.sum(f(images[0], c) ** 2))(c) for c in coords]
    numpy.testing.assert_allclose(grads, numpy.stack(one), rtol=1e-13, atol=1e-13)
    assert not loops, loops


def test_compiled_and_jitted_gradients():
    x = rng.normal(size=(6, 40))
    c = rng.uniform(-1, 42, size=(2, 9))
    for mode in ("mirror", "nearest", "grid-wrap"):
        loss = lambda x, c: wnp.sum(ndimage.map_coordinates(x, c, order=3, mode=mode) ** 2)
        eager = wg.grad(loss, argnums=(0, 1))(x, c)
        for got in (wg.compile(wg.grad(loss, argnums=(0, 1)), x, c)(x, c),
                    wg.jit(wg.grad(loss, argnums=(0, 1)))(x, c)):
            for a, b in zip(got, eager):
                numpy.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)
        h = wg.hessian(lambda c: loss(x, c))(c)
        assert h.shape == c.shape * 2


# ---- errors -------------------------------------------------------------------------------
def test_bad_arguments_raise_scipys_errors():
    x = rng.normal(size=(5, 4))
    c = numpy.ones((2, 3))
    calls = [
        ("spline_filter1d", (), dict(order=6)), ("spline_filter1d", (), dict(order=-1)),
        ("spline_filter1d", (), dict(order=2.5)), ("spline_filter1d", (), dict(order=1.5)),
        ("spline_filter1d", (), dict(axis=2)), ("spline_filter1d", (), dict(axis=1.0)),
        ("spline_filter1d", (), dict(mode="edge")), ("spline_filter", (), dict(order=1)),
        ("spline_filter", (), dict(order=2.0)), ("spline_filter", (), dict(mode=None)),
        ("map_coordinates", (c,), dict(order=6)), ("map_coordinates", (c,), dict(order=1.5)),
        ("map_coordinates", (c,), dict(order=2.0)),
        ("map_coordinates", (c,), dict(order="3")),
        ("map_coordinates", (c,), dict(mode="edge")),
        ("map_coordinates", (numpy.ones((3, 3)),), {}),
        ("map_coordinates", (numpy.ones(2),), {}),
        ("shift", (0.5,), dict(order=1.5)), ("shift", (0.5,), dict(order=2.5)),
        ("zoom", (2.0,), dict(order=7)), ("zoom", (2.0,), dict(mode="edge")),
    ]
    for name, args, kw in calls:
        with pytest.raises(Exception) as theirs:
            getattr(snd, name)(x, *args, **kw)
        with pytest.raises(theirs.type):
            wg.grad(lambda x: wnp.sum(getattr(ndimage, name)(x, *args, **kw)))(x)
    with pytest.raises(RuntimeError, match="rank must be > 0"):
        wg.grad(lambda v: ndimage.map_coordinates(v, numpy.zeros((0, 3))))(1.0)
    with pytest.raises(TypeError, match="axis must be an integer, got 1.0"):
        wg.grad(lambda x: wnp.sum(ndimage.spline_filter1d(x, axis=1.0)))(x)
