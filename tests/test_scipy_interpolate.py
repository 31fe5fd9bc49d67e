"""wengert.scipy.interpolate: SciPy's values (its own objects on plain values, the traced
compositions to rounding), derivatives in the query points, the data values and the knots
against central differences to second order, closed forms, vmap, compile, Taylor mode,
and clear errors."""
import re

import numpy as np
import pytest
import scipy.interpolate as si
import scipy.sparse.linalg as ssl

import wengert as wg
import wengert.numpy as wnp
from wengert.scipy import interpolate as I
from fd import assert_close, check_grads

rng = np.random.default_rng(20261201)


def knots(n, lo=0.0, hi=10.0):
    """n sorted random sites from lo to hi, no two closer than a fifth of the mean gap
    (so a finite-difference step never reorders them)."""
    gaps = 0.25 + rng.uniform(size=n - 1)
    x = lo + np.r_[0.0, np.cumsum(gaps)] * (hi - lo) / gaps.sum()
    x[-1] = hi
    return x


def inside(x, size):
    """Query points strictly inside [x[0], x[-1]], none within 1e-3 of a knot."""
    q = rng.uniform(x[0], x[-1], size=4 * size)
    q = q[np.min(np.abs(q[:, None] - x[None, :]), axis=1) > 1e-3]
    return q[:size]


def traced_value(f, *args):
    """f's value by the traced path: its arguments traced (by wg.vjp)."""
    return wg.vjp(f, *args)[0]


def close(got, want, rtol=1e-11, atol=1e-11):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol,
                               equal_nan=True)


def periodic_y(y):
    y = y.copy()
    y[-1] = y[0]
    return y


# ---- CubicSpline and the other cubics: values ---------------------------------------------------
BCS = ["not-a-knot", "natural", "clamped", "periodic", ((1, 0.5), (2, -1.0)),
       ((2, 0.0), "not-a-knot"), ("clamped", (1, 2.0))]


@pytest.mark.parametrize("n", [2, 3, 4, 7])
@pytest.mark.parametrize("bc", BCS, ids=str)
def test_cubic_spline_values_are_scipys(n, bc):
    x = knots(n)
    for shape, axis in (((n,), 0), ((n, 2), 0), ((2, n, 3), 1), ((3, n), -1)):
        y = rng.normal(size=shape)
        if bc == "periodic":
            y = np.moveaxis(periodic_y(np.moveaxis(y, axis, 0)), 0, axis)
        if isinstance(bc, tuple) and shape != (n,):
            continue                    # (the tuple's values are numbers: 1-D y only)
        want = si.CubicSpline(x, y, axis, bc)
        ours = I.CubicSpline(x, y, axis, bc)
        assert isinstance(ours._scipy, si.CubicSpline)          # plain values: SciPy's own
        q = np.r_[inside(x, 5), x, x[0] - 1.5, x[-1] + 2.0]
        q2 = np.stack([q, q[::-1]])
        assert np.array_equal(ours(q2), want(q2), equal_nan=True)
        assert np.array_equal(ours.c, want.c)
        for nu in range(4):
            for ext in (None, False, "periodic"):
                f = lambda y, x: I.CubicSpline(x, y, axis, bc)(q2, nu, ext)
                close(traced_value(f, y, x), want(q2, nu, ext), rtol=1e-10, atol=1e-10)
        close(traced_value(lambda y: I.CubicSpline(x, y, axis, bc).c, y), want.c, rtol=1e-10)


@pytest.mark.parametrize("name", ["pchip", "akima", "makima", "hermite"])
@pytest.mark.parametrize("n", [2, 3, 6])
def test_other_cubics_values_are_scipys(name, n):
    x = knots(n)
    for shape, axis in (((n,), 0), ((2, n), 1)):
        y = rng.normal(size=shape)
        y.flat[:2] = 0.0                # (a flat secant: PCHIP's and Akima's special cases)
        d = rng.normal(size=shape)
        make = {"pchip": lambda x, y: I.PchipInterpolator(x, y, axis),
                "akima": lambda x, y: I.Akima1DInterpolator(x, y, axis),
                "makima": lambda x, y: I.Akima1DInterpolator(x, y, axis, method="makima",
                                                             extrapolate=True),
                "hermite": lambda x, y: I.CubicHermiteSpline(x, y, d, axis)}[name]
        theirs = {"pchip": lambda: si.PchipInterpolator(x, y, axis),
                  "akima": lambda: si.Akima1DInterpolator(x, y, axis),
                  "makima": lambda: si.Akima1DInterpolator(x, y, axis, method="makima",
                                                           extrapolate=True),
                  "hermite": lambda: si.CubicHermiteSpline(x, y, d, axis)}[name]()
        q = np.r_[inside(x, 6), x, x[0] - 1.0, x[-1] + 1.0]
        assert np.array_equal(make(x, y)(q), theirs(q), equal_nan=True)
        assert type(make(x, y)._scipy) is type(theirs)
        for nu in range(3):
            close(traced_value(lambda y, x: make(x, y)(q, nu), y, x), theirs(q, nu),
                  rtol=1e-10, atol=1e-9)


def test_pchip_and_akima_special_cases_are_scipys():
    """Each branch of the slope formulas: PCHIP's one-sided end slope cut to 0 (sign
    change) or to 3 m0 (secants of opposite signs, steep), a local extremum (slope 0);
    Akima's fill where the weights vanish (collinear data)."""
    x = np.array([0.0, 1.0, 1.2, 3.0, 4.0, 4.1])
    q = np.linspace(0.0, 4.1, 23)
    for y in (np.array([0.0, 1.0, 0.0, 2.0, 2.0, 5.0]),        # steep first end: 3 m0
              np.array([0.0, 2.0, 2.1, 1.0, -1.0, -1.05]),      # sign change at the end
              np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),          # collinear
              np.array([0.0, 1.0, 2.0, 3.0, 1.0, 0.0])):
        for ours, theirs in ((I.PchipInterpolator, si.PchipInterpolator),
                             (I.Akima1DInterpolator, si.Akima1DInterpolator)):
            close(traced_value(lambda y, x: ours(x, y)(q), y, x), theirs(x, y)(q), rtol=1e-12)
            close(traced_value(lambda y, x: ours(x, y)(q, 1), y, x), theirs(x, y)(q, 1),
                  rtol=1e-12)
    steep = si.PchipInterpolator(x, [0.0, 1.0, 0.0, 2.0, 2.0, 5.0])
    assert steep(0.0, 1) == 3.0                     # (the branch taken: 3 m0)
    # nearly collinear: weights of 1e-9 below SciPy's cutoff (1e-9 of the largest) give
    # the fill 2.7e-10 away from the weighted formula
    x, y = np.arange(8.0), np.array([0.0, 1.0 + 1e-9, 2.0, 3.0, 4.0, 10.0, -10.0, 20.0])
    q = np.linspace(0.0, 7.0, 50)
    close(traced_value(lambda y: I.Akima1DInterpolator(x, y)(q), y),
          si.Akima1DInterpolator(x, y)(q), rtol=1e-13, atol=1e-13)


def test_derivatives_at_knots_take_scipys_interval():
    """At a knot the derivative in the query point is that of the piece SciPy evaluates
    there: PPoly's and BSpline's interval on the right ([x_i, x_i+1)), interp1d's and
    RegularGridInterpolator's on the left (searchsorted 'left'), but the first."""
    x = np.array([0.0, 1.0, 3.0, 4.0])
    y = np.array([0.0, 2.0, 3.0, 7.0])                 # slopes 2, 0.5, 4
    at = lambda f: [float(wg.grad(f)(t)) for t in x]
    assert at(lambda t: I.interp1d(x, y)(t)) == [2.0, 2.0, 0.5, 4.0]
    assert at(lambda t: I.RegularGridInterpolator((x,), y)(wnp.stack([t]))[0]) == \
        [2.0, 2.0, 0.5, 4.0]
    assert at(lambda t: I.make_interp_spline(x, y, k=1)(t)) == [2.0, 0.5, 4.0, 4.0]
    assert at(lambda t: I.PPoly(np.array([[2.0, 0.5, 4.0], [0.0, 2.0, 3.0]]), x)(t)) == \
        [2.0, 0.5, 4.0, 4.0]
    # nearest: the lower neighbour at a midpoint (SciPy's 'nearest' and the grid's), the
    # upper for 'nearest-up'
    mid = np.array([0.5, 2.0, 3.5])
    for kind, want in (("nearest", [0.0, 2.0, 3.0]), ("nearest-up", [2.0, 3.0, 7.0])):
        close(traced_value(lambda y: I.interp1d(x, y, kind)(mid), y), want)
    close(traced_value(lambda y: I.RegularGridInterpolator((x,), y, "nearest")(mid[:, None]),
                       y), [0.0, 2.0, 3.0])


def test_derivative_antiderivative_integrate_are_scipys():
    x = knots(8)
    y = rng.normal(size=(8, 2))
    want = si.CubicSpline(x, y)
    q = np.r_[inside(x, 5), x[0] - 1.0, x[-1] + 1.0]
    for nu in (1, 2, 3, 4, -1, -2):
        got = traced_value(lambda y: I.CubicSpline(x, y).derivative(nu)(q), y)
        close(got, want.derivative(nu)(q), rtol=1e-9, atol=1e-9)
        assert type(I.CubicSpline(x, y).derivative(nu)) is I.CubicSpline
    for nu in (1, 2, 3):
        close(traced_value(lambda y: I.CubicSpline(x, y).antiderivative(nu).c, y),
              want.antiderivative(nu).c, rtol=1e-9, atol=1e-8)
    bounds = [(x[1], x[5]), (x[5], x[1]), (x[0] - 1, x[-1] + 2), (x[2], x[2]),
              (x[0] - 1, x[3])]
    for a, b in bounds:
        for ext in (None, False):
            close(traced_value(lambda y: I.CubicSpline(x, y).integrate(a, b, ext), y),
                  want.integrate(a, b, ext), rtol=1e-10)
            close(traced_value(lambda a, b: I.CubicSpline(x, y[:, 0]).integrate(a, b, ext),
                               a, b), want.integrate(a, b, ext)[0], rtol=1e-10)
    yp = periodic_y(y)
    per = si.CubicSpline(x, yp, bc_type="periodic")
    span = x[-1] - x[0]
    for a, b in [(x[1], x[3]), (x[2], x[1] + span), (x[0] - 3 * span + 0.1, x[4]),
                 (x[6], x[2] + 2 * span)]:
        close(traced_value(lambda y: I.CubicSpline(x, y, bc_type="periodic").integrate(a, b),
                           yp), per.integrate(a, b), rtol=1e-9, atol=1e-9)


def test_ppoly_traced_coefficients_and_scipys_other_methods():
    x = knots(5)
    c = rng.normal(size=(3, 4, 2))
    want = si.PPoly(c, x)
    q = np.r_[inside(x, 4), x]
    close(traced_value(lambda c: I.PPoly(c, x)(q), c), want(q), rtol=1e-12)
    close(traced_value(lambda c: I.PPoly(np.moveaxis(c, 2, 0), x, axis=1)(q), c),
          si.PPoly(np.moveaxis(c, 2, 0), x, axis=1)(q), rtol=1e-12)
    # a repeated breakpoint (an empty interval, which SciPy takes) and decreasing ones
    xr, cr = np.array([0.0, 1.0, 1.0, 2.0]), rng.normal(size=(2, 3))
    qr = np.array([0.5, 1.0, 1.5, 2.0])
    close(traced_value(lambda c: I.PPoly(c, xr)(qr), cr), si.PPoly(cr, xr)(qr), rtol=1e-13)
    with pytest.raises(NotImplementedError, match="decreasing breakpoints"):
        traced_value(lambda c: I.PPoly(c, xr[::-1])(qr), cr)
    plain = I.PPoly(c[:, :, 0], x)
    assert np.array_equal(plain.roots(), si.PPoly(c[:, :, 0], x).roots())   # SciPy's
    with pytest.raises(NotImplementedError, match="PPoly.roots is not supported"):
        wg.grad(lambda c: wnp.sum(I.PPoly(c, x).roots()))(c[:, :, 0])


# ---- B-splines ----------------------------------------------------------------------------------
MIS = [(k, bc) for k in range(6) for bc in (None,)] + \
    [(3, "natural"), (3, "clamped"), (3, ([(1, 0.5)], [(2, -1.0)])),
     (5, ([(1, 0.0), (2, 0.5)], [(1, 1.0), (2, 0.0)])),
     (4, ([(1, 0.0), (2, 1.0)], [(1, 0.0)])), (2, ([(1, 1.0)], None))]


@pytest.mark.parametrize("k, bc", MIS, ids=str)
def test_make_interp_spline_values_are_scipys(k, bc):
    x = knots(9)
    for shape, axis in (((9,), 0), ((2, 9, 2), 1)):
        if bc is not None and not isinstance(bc, str) and shape != (9,):
            continue
        y = rng.normal(size=shape)
        want = si.make_interp_spline(x, y, k, bc_type=bc, axis=axis)
        ours = I.make_interp_spline(x, y, k, bc_type=bc, axis=axis)
        q = np.r_[inside(x, 5), x, x[0] - 1.0, x[-1] + 1.0]
        assert np.array_equal(ours(q), want(q), equal_nan=True)
        assert isinstance(ours._scipy, si.BSpline)
        got = traced_value(lambda y, x: I.make_interp_spline(x, y, k, bc_type=bc, axis=axis).c,
                           y, x)
        close(got, want.c, rtol=1e-10, atol=1e-10)
        for nu in range(min(k, 3) + 2):
            for ext in (True, False, "periodic"):
                close(traced_value(lambda y, x: I.make_interp_spline(
                    x, y, k, bc_type=bc, axis=axis)(q, nu, ext), y, x), want(q, nu, ext),
                    rtol=1e-9, atol=1e-9)


def test_make_interp_spline_with_given_knots_and_bspline_methods():
    x = knots(8)
    y = rng.normal(size=8)
    t = np.r_[[x[0]] * 4, x[2:-2], [x[-1]] * 4]
    want = si.make_interp_spline(x, y, 3, t=t)
    close(traced_value(lambda y, x: I.make_interp_spline(x, y, 3, t=t).c, y, x), want.c,
          rtol=1e-10)
    q = np.r_[inside(x, 5), x[0] - 0.5, x[-1] + 0.5]
    b = lambda c: I.BSpline(want.t, c, 3)
    for nu in (1, 2, 3, -1, -2):
        close(traced_value(lambda c: b(c).derivative(nu)(q), want.c),
              want.derivative(nu)(q), rtol=1e-9, atol=1e-9)
    for a, bb in [(x[1], x[5]), (x[5], x[1]), (x[0] - 1, x[-1] + 1)]:
        for ext in (True, False, "periodic"):
            close(traced_value(lambda c: b(c).integrate(a, bb, ext), want.c),
                  want.integrate(a, bb, ext), rtol=1e-9, atol=1e-12)
    assert isinstance(I.BSpline.basis_element([0.0, 1.0, 2.0]), I.BSpline)
    with pytest.raises(ValueError, match="internal repeated knots"):
        wg.vjp(lambda c: I.BSpline(np.r_[0.0, 0, 1, 1, 1, 2, 2], c, 1).derivative(1)(0.5),
               np.ones(5))


# ---- interp1d -----------------------------------------------------------------------------------
KINDS = ["linear", "nearest", "nearest-up", "previous", "next", "zero", "slinear",
         "quadratic", "cubic", 5]
FILLS = [dict(), dict(bounds_error=False), dict(bounds_error=False, fill_value=(-1.0, 2.0)),
         dict(fill_value="extrapolate"), dict(bounds_error=False, fill_value=[3.0, 4.0])]


@pytest.mark.parametrize("kind", KINDS, ids=str)
@pytest.mark.parametrize("opts", range(len(FILLS)))
def test_interp1d_values_are_scipys(kind, opts):
    opts = FILLS[opts]
    x = knots(9)
    order = rng.permutation(9)                  # (interp1d sorts x: assume_sorted=False)
    y = rng.normal(size=(2, 9))
    q = np.r_[inside(x, 5), x]
    if opts.get("bounds_error") is False or opts.get("fill_value") == "extrapolate":
        q = np.r_[q, x[0] - 1.0, x[-1] + 1.0]
    want = si.interp1d(x[order], y[:, order], kind, **opts)
    ours = I.interp1d(x[order], y[:, order], kind, **opts)
    assert np.array_equal(ours(q), want(q), equal_nan=True)
    assert isinstance(ours._scipy, si.interp1d)
    close(traced_value(lambda y, x: I.interp1d(x, y, kind, **opts)(q), y[:, order], x[order]),
          want(q), rtol=1e-11, atol=1e-11)
    close(traced_value(ours, q.reshape(-1, 1)), want(q.reshape(-1, 1)), rtol=1e-11,
          atol=1e-11)                           # plain data, traced queries
    close(traced_value(lambda y: I.interp1d(x, y, kind, axis=0, **opts)(q[3]), y.T),
          si.interp1d(x, y.T, kind, axis=0, **opts)(q[3]))


def test_interp1d_bounds_and_fill_values():
    x, y = np.arange(4.0), np.arange(4.0) ** 2
    f = lambda q: I.interp1d(x, y)(q)
    with pytest.raises(ValueError, match=re.escape("A value (4.5) in x_new is above the "
                                                   "interpolation range's maximum value (3.0)")):
        wg.grad(f)(4.5)
    with pytest.raises(ValueError, match="below the interpolation range's minimum"):
        wg.grad(f)(-0.5)
    # without numbers (compile) there is nothing to check: nan, never an extrapolation
    assert np.isnan(wg.compile(f, 1.0)(4.5)) and wg.compile(f, 1.0)(1.5) == 2.5
    # a traced fill value is differentiated where it is used
    g = wg.grad(lambda c: wnp.sum(I.interp1d(x, y, bounds_error=False, fill_value=c)(
        np.array([-1.0, 1.5, 5.0]))))(0.0)
    assert g == 2.0
    with pytest.raises(ValueError, match="Cannot extrapolate and raise at the same time"):
        wg.grad(lambda y: I.interp1d(x, y, bounds_error=True, fill_value="extrapolate")(1.0))(y)


# ---- RegularGridInterpolator --------------------------------------------------------------------
RGI = ["linear", "nearest", "slinear", "cubic", "quintic", "cubic_legacy", "slinear_legacy"]


def _grid():
    return (knots(7, 0.0, 1.0), knots(6, -1.0, 1.0)[::-1])     # (the second descending)


@pytest.mark.parametrize("method", RGI)
@pytest.mark.parametrize("fill", ["bounds", "nan", "none", 2.5])
def test_regular_grid_values_are_scipys(method, fill):
    g = _grid()
    v = rng.normal(size=(7, 6, 2))
    opts = dict(bounds_error=True) if fill == "bounds" else \
        dict(bounds_error=False, fill_value={"nan": np.nan, "none": None}.get(fill, fill))
    lo, hi = np.array([0.0, -1.0]), np.array([1.0, 1.0])
    pts = lo + (hi - lo) * rng.uniform(size=(3, 4, 2))
    if fill != "bounds":
        pts[0, 0], pts[1, 1] = [-0.2, 0.5], [0.3, 1.4]
    pts[2, 2] = [g[0][3], g[1][2]]
    want = si.RegularGridInterpolator(g, v, method, **opts)
    ours = I.RegularGridInterpolator(g, v, method, **opts)
    assert np.array_equal(ours(pts), want(pts), equal_nan=True)
    # plain values, traced points: SciPy's spline evaluated
    close(traced_value(ours, pts), want(pts), rtol=1e-10, atol=1e-10)
    # traced values: 'cubic' and 'quintic' solved exactly, SciPy's to its solver's tolerance
    if method in ("cubic", "quintic"):
        want = si.RegularGridInterpolator(g, v, method, solver=ssl.spsolve, **opts)
    close(traced_value(lambda v, a, b: I.RegularGridInterpolator((a, b), v, method, **opts)(
        pts), v, *g), want(pts), rtol=1e-9, atol=1e-9)
    close(traced_value(lambda v: I.interpn(g, v, pts, method, **opts), v), want(pts),
          rtol=1e-9, atol=1e-9)


def test_regular_grid_spline_derivatives_nu_and_point_forms():
    g = (knots(6, 0.0, 1.0), knots(7, 0.0, 2.0), knots(5, 0.0, 1.0))
    v = rng.normal(size=(6, 7, 5))
    want = si.RegularGridInterpolator(g, v, "cubic", solver=ssl.spsolve)
    pts = rng.uniform(size=(4, 3)) * [1.0, 2.0, 1.0]
    for nu in ((1, 0, 0), (0, 2, 1), (3, 0, 4)):
        close(traced_value(lambda v: I.RegularGridInterpolator(g, v, "cubic")(pts, nu=nu), v),
              want(pts, nu=nu), rtol=1e-8, atol=1e-8)
    one = pts[0]
    close(traced_value(lambda p: I.RegularGridInterpolator(g, v)(p), one),
          si.RegularGridInterpolator(g, v)(one))                        # shape (1,)
    coords = tuple(pts[:, d] for d in range(3))
    close(traced_value(lambda v: I.RegularGridInterpolator(g, v)(coords), v),
          si.RegularGridInterpolator(g, v)(coords))
    close(traced_value(lambda v: I.RegularGridInterpolator(g, v)(pts, method="nearest"), v),
          si.RegularGridInterpolator(g, v)(pts, method="nearest"))


# ---- derivatives against central differences, second order -------------------------------------
def _with_x(make):
    return lambda x, y, q: make(x, y)(q)


DERIVATIVES = {
    "cubic spline": lambda x, y: I.CubicSpline(x, y),
    "natural": lambda x, y: I.CubicSpline(x, y, bc_type="natural"),
    "clamped to y": lambda x, y: I.CubicSpline(x, y, bc_type=((1, y[1]), (2, y[0]))),
    "periodic": lambda x, y: I.CubicSpline(x, wnp.concatenate([y[:-1], y[:1]]),
                                           bc_type="periodic"),
    "three points": lambda x, y: I.CubicSpline(x[:3], y[:3]),
    "pchip": lambda x, y: I.PchipInterpolator(x, y),
    "akima": lambda x, y: I.Akima1DInterpolator(x, y),
    "makima": lambda x, y: I.Akima1DInterpolator(x, y, method="makima"),
    "spline k=3": lambda x, y: I.make_interp_spline(x, y),
    "spline k=2": lambda x, y: I.make_interp_spline(x, y, k=2),
    "spline k=5 clamped": lambda x, y: I.make_interp_spline(
        x, y, k=5, bc_type=([(1, y[0]), (2, 0.0)], [(1, 0.0), (2, y[1])])),
    "interp1d linear": lambda x, y: I.interp1d(x, y),
    "interp1d quadratic": lambda x, y: I.interp1d(x, y, kind="quadratic"),
    "second derivative": lambda x, y: (lambda q: I.CubicSpline(x, y)(q, 2)),
    "bspline derivative": lambda x, y: I.make_interp_spline(x, y).derivative(),
    "antiderivative": lambda x, y: I.CubicSpline(x, y).antiderivative(2),
    "integrate": lambda x, y: (lambda q: I.CubicSpline(x, y).integrate(q[0], q[1])),
    "bspline integrate": lambda x, y: (lambda q: I.make_interp_spline(x, y).integrate(
        q[1], q[0])),
}


@pytest.mark.parametrize("name", sorted(DERIVATIVES))
def test_derivatives_in_knots_values_and_queries_to_second_order(name):
    x = knots(7)
    y = rng.normal(size=7)
    q = inside(x[:3] if name == "three points" else x, 5)
    check_grads(_with_x(DERIVATIVES[name]), x, y, q, order=2, eps=1e-6, rtol=2e-5,
                atol=1e-6)


@pytest.mark.parametrize("method", ["linear", "slinear", "cubic_legacy", "quintic_legacy"])
def test_regular_grid_derivatives_in_grid_values_and_points_to_second_order(method):
    # ('_legacy': SciPy's exact spline on plain values, which the differences see; traced,
    # the same interpolant as 'cubic')
    a, b = knots(7, 0.0, 1.0), knots(6, -1.0, 1.0)
    v = rng.normal(size=(7, 6))
    pts = np.stack([inside(a, 4), inside(b, 4)], axis=1)
    f = lambda a, b, v, p: I.RegularGridInterpolator((a, b), v, method)(p)
    check_grads(f, a, b, v, pts, order=2, rtol=2e-5)


def test_second_derivatives_in_the_knots_against_differences_of_gradients():
    x, y = knots(6), rng.normal(size=6)
    q = inside(x, 4)
    loss = lambda x: wnp.sum(I.CubicSpline(x, y)(q) ** 2)
    h = 1e-5
    fd = np.stack([(wg.grad(loss)(x + h * e) - wg.grad(loss)(x - h * e)) / (2 * h)
                   for e in np.eye(6)])
    assert_close(wg.hessian(loss)(x), fd, rtol=1e-5, atol=1e-5)
    assert_close(wg.jacfwd(wg.jacrev(loss))(x), fd, rtol=1e-5, atol=1e-5)


def test_nearest_kinds_differentiate_in_y_only():
    x, y = knots(6), rng.normal(size=6)
    q = inside(x, 5)
    for kind in ("nearest", "previous", "next", "zero"):
        f = lambda x, y, q: I.interp1d(x, y, kind)(q)
        jx, jy, jq = wg.jacfwd(f, argnums=(0, 1, 2))(x, y, q)
        assert not jx.any() and not jq.any()
        picked = si.interp1d(x, np.arange(6.0), kind)(q).astype(int)
        assert np.array_equal(jy, np.eye(6)[picked])
    g = (knots(5, 0.0, 1.0), knots(4, 0.0, 1.0))
    pts = np.stack([inside(g[0], 3), inside(g[1], 3)], 1)
    jv = wg.jacrev(lambda v: I.RegularGridInterpolator(g, v, "nearest")(pts))(np.zeros((5, 4)))
    assert np.array_equal(jv.sum(axis=(1, 2)), np.ones(3)) and set(jv.ravel()) == {0.0, 1.0}


# ---- closed forms -------------------------------------------------------------------------------
def test_a_cubic_is_reproduced_exactly():
    x = knots(6)
    cubic = lambda t: 0.3 * t ** 3 - t ** 2 + 2 * t - 1
    slope = lambda t: 0.9 * t ** 2 - 2 * t + 2
    q = inside(x, 6)
    y = wnp.asarray(cubic(x))
    for make in (lambda y: I.CubicSpline(x, y),
                 lambda y: I.CubicSpline(x, y, bc_type=((1, slope(x[0])), (1, slope(x[-1])))),
                 lambda y: I.make_interp_spline(x, y),
                 lambda y: I.make_interp_spline(x, y, bc_type=([(1, slope(x[0]))],
                                                               [(1, slope(x[-1]))]))):
        close(traced_value(lambda y: make(y)(q), y), cubic(q), rtol=1e-10)
        s = make(cubic(x))
        close(wg.vmap(wg.grad(lambda t: s(t)))(q), slope(q), rtol=1e-10)      # in the query
        close(wg.vmap(wg.grad(wg.grad(lambda t: s(t))))(q), 1.8 * q - 2, rtol=1e-9)
    # the end slopes of 'clamped' are the given ones, and move with them
    ends = lambda d: I.CubicSpline(x, cubic(x), bc_type=((1, d[0]), (1, d[1])))(x[[0, -1]], 1)
    close(traced_value(ends, np.array([0.7, -0.2])), [0.7, -0.2], rtol=1e-12)
    close(wg.jacfwd(ends)(np.array([0.7, -0.2])), np.eye(2), atol=1e-12)
    # integrals: ∫ of the cubic, and the integrand as the derivative in the bounds
    s = I.CubicSpline(x, cubic(x))
    a, b = q[0], q[1]
    exact = lambda t: 0.075 * t ** 4 - t ** 3 / 3 + t ** 2 - t
    close(traced_value(lambda a: s.integrate(a, b), a), exact(b) - exact(a), rtol=1e-10)
    close(wg.grad(lambda a, b: s.integrate(a, b), argnums=(0, 1))(a, b),
          (-cubic(a), cubic(b)), rtol=1e-10)


def test_linear_interpolation_derivatives_are_hat_functions():
    x = knots(6)
    q = np.r_[inside(x, 8), x[1:-1]]
    hat = np.stack([si.interp1d(x, e)(q) for e in np.eye(6)], axis=1)
    for f in (lambda y: I.interp1d(x, y)(q), lambda y: wnp.interp(q, x, y),
              lambda y: I.make_interp_spline(x, y, k=1)(q),
              lambda y: I.RegularGridInterpolator((x,), y)(q[:, None])):
        assert_close(wg.jacrev(f)(np.zeros(6)), hat, rtol=1e-12, atol=1e-14)
        assert_close(wg.jacfwd(f)(np.zeros(6)), hat, rtol=1e-12, atol=1e-14)
    # in a knot: y_i + (q - x_i) s, s = (y_i+1 - y_i)/(x_i+1 - x_i): ∂/∂x_i = s (q - x_i+1)
    # / (x_i+1 - x_i), ∂/∂x_i+1 = -s (q - x_i) / (x_i+1 - x_i)
    y = rng.normal(size=6)
    t = q[0]
    i = np.searchsorted(x, t) - 1
    s = (y[i + 1] - y[i]) / (x[i + 1] - x[i])
    g = wg.grad(lambda x: I.interp1d(x, y)(t))(x)
    want = np.zeros(6)
    h = x[i + 1] - x[i]
    want[i], want[i + 1] = s * (t - x[i + 1]) / h, -s * (t - x[i]) / h
    assert_close(g, want, rtol=1e-12, atol=1e-14)


def test_cubic_spline_derivative_in_y_is_a_cardinal_spline():
    x = knots(7)
    q = np.r_[inside(x, 6), x]
    cardinal = np.stack([si.CubicSpline(x, e)(q) for e in np.eye(7)], axis=1)
    assert_close(wg.jacrev(lambda y: I.CubicSpline(x, y)(q))(np.zeros(7)), cardinal,
                 rtol=1e-11, atol=1e-13)
    assert_close(cardinal[-7:], np.eye(7), atol=1e-13)


def test_complex_values_are_scipys_and_holomorphic():
    """Complex y (SciPy's CubicSpline, make_interp_spline and interp1d take them): linear
    in y, so the complex Jacobian is the real one, the cardinal functions."""
    x = knots(6)
    y = rng.normal(size=6) + 1j * rng.normal(size=6)
    q = inside(x, 4)
    for ours, theirs in ((I.CubicSpline, si.CubicSpline),
                         (I.make_interp_spline, si.make_interp_spline),
                         (lambda x, y: I.interp1d(x, y, "cubic"),
                          lambda x, y: si.interp1d(x, y, "cubic"))):
        close(traced_value(lambda y: ours(x, y)(q), y), theirs(x, y)(q), rtol=1e-12)
        J = wg.jacfwd(lambda y: ours(x, y)(q), holomorphic=True)(y)
        close(J, np.stack([theirs(x, e)(q) for e in np.eye(6)], axis=1), rtol=1e-11,
              atol=1e-13)
    with pytest.raises(ValueError, match="only works with real values"):
        wg.jacfwd(lambda y: I.PchipInterpolator(x, y)(q), holomorphic=True)(y)


def test_taylor_mode_of_a_spline_in_its_query_point():
    x = knots(6)
    s = I.CubicSpline(x, x ** 3)
    t = inside(x, 1)[0]
    close(wg.derivatives(lambda q: s(q), order=4)(t), [t ** 3, 3 * t ** 2, 6 * t, 6.0, 0.0],
          rtol=1e-9, atol=1e-9)
    b = lambda y: I.make_interp_spline(x, y)(t)
    close(wg.derivatives(lambda a: b(a * x ** 3), order=2)(1.0), [t ** 3, t ** 3, 0.0],
          rtol=1e-9, atol=1e-9)


def test_least_squares_fit_of_spline_values():
    """The tutorial's problem: a spline's knot values fitted to noisy samples; the loss is
    quadratic in y, so one Newton step lands on the normal equations' solution."""
    xk = np.linspace(0, 2 * np.pi, 8)
    t = np.linspace(0, 2 * np.pi, 60)
    data = np.sin(t) + 0.05 * rng.normal(size=60)
    loss = lambda y: wnp.sum((I.CubicSpline(xk, y)(t) - data) ** 2)
    y = np.zeros(8) - np.linalg.solve(wg.hessian(loss)(np.zeros(8)), wg.grad(loss)(np.zeros(8)))
    B = np.stack([si.CubicSpline(xk, e)(t) for e in np.eye(8)], axis=1)
    assert_close(y, np.linalg.lstsq(B, data, rcond=None)[0], rtol=1e-9, atol=1e-10)


# ---- vmap and compile ---------------------------------------------------------------------------
BATCHED = {
    "cubic spline": lambda x, y, q: I.CubicSpline(x, y)(q),
    "pchip": lambda x, y, q: I.PchipInterpolator(x, y)(q),
    "akima": lambda x, y, q: I.Akima1DInterpolator(x, y)(q),
    "spline k=3": lambda x, y, q: I.make_interp_spline(x, y)(q),
    "interp1d": lambda x, y, q: I.interp1d(x, y)(q),
    "interp1d cubic": lambda x, y, q: I.interp1d(x, y, "cubic")(q),
    "interp1d previous": lambda x, y, q: I.interp1d(x, y, "previous")(q),
    "periodic": lambda x, y, q: I.CubicSpline(x, wnp.concatenate([y[:-1], y[:1]]),
                                              bc_type="periodic")(q),
    "grid": lambda x, y, q: I.RegularGridInterpolator((x, x), wnp.outer(y, y ** 2),
                                                      "cubic")(wnp.stack([q, q[::-1]], 1)),
}


@pytest.mark.parametrize("name", sorted(BATCHED))
def test_vmap_over_queries_values_and_knots(name, loops):
    f = BATCHED[name]
    x = knots(7)
    y, q = rng.normal(size=7), inside(x, 5)
    Q = np.stack([q, q[::-1], np.sort(q)])
    Y = np.stack([y, 2 * y + 1, y ** 2])
    X = np.stack([x, 1.05 * x - 0.2, 1.1 * x - 0.1])        # (each spans [x[0], x[-1]])
    close(wg.vmap(lambda q: f(x, y, q))(Q), np.stack([f(x, y, q) for q in Q]))
    loss = lambda x, y, q: wnp.sum(f(x, y, q) ** 2)
    grad_y = wg.grad(loss, argnums=1)
    close(wg.vmap(grad_y, in_axes=(None, 0, None))(x, Y, q),
          np.stack([grad_y(x, y, q) for y in Y]))
    assert not loops, loops                     # a batch of queries or values: no loop
    grad_x = wg.grad(loss, argnums=0)
    close(wg.vmap(grad_x, in_axes=(0, None, None))(X, y, q),
          np.stack([grad_x(x, y, q) for x in X]), rtol=1e-10, atol=1e-10)
    assert loops <= {"searchsorted"}            # (batched knots: one lookup per example)


@pytest.mark.parametrize("name", sorted(BATCHED))
def test_compiled_gradient_matches_eager(name):
    f = BATCHED[name]
    x = knots(7)
    y, q = rng.normal(size=7), inside(x, 5)
    g = wg.grad(lambda x, y, q: wnp.sum(f(x, y, q) ** 3), argnums=(0, 1, 2))
    fast = wg.compile(g, x, y, q)
    x2, y2, q2 = x * 1.05, y + 0.3, inside(x * 1.05, 5)
    for got, want in zip(fast(x2, y2, q2), g(x2, y2, q2)):
        close(got, want, rtol=1e-10, atol=1e-12)


def test_compiled_interp1d_sorts_traced_knots_by_a_traced_argsort():
    x, y = knots(6), rng.normal(size=6)
    order = np.array([3, 0, 5, 1, 4, 2])
    q = inside(x, 4)
    f = lambda x, y, q: wnp.sum(I.interp1d(x, y, "cubic")(q) ** 2)
    g = wg.grad(f, argnums=(0, 1, 2))
    fast = wg.compile(g, x[order], y[order], q)
    for got, want in zip(fast(x[order], y[order], q), g(x[order], y[order], q)):
        close(got, want, rtol=1e-10, atol=1e-12)
    got = wg.compile(lambda x, y, q: I.interp1d(x, y)(q), x, y, q)(x[order], y[order], q)
    close(got, si.interp1d(x[order], y[order])(q))


def test_compiled_grid_gradients_and_out_of_bounds_nan():
    g = (knots(6, 0.0, 1.0), knots(5, 0.0, 1.0))
    v = rng.normal(size=(6, 5))
    pts = np.stack([inside(g[0], 4), inside(g[1], 4)], 1)
    for method in ("linear", "nearest", "slinear", "cubic"):
        f = lambda a, b, v, p: wnp.sum(I.RegularGridInterpolator((a, b), v, method)(p) ** 2)
        grad = wg.grad(f, argnums=(0, 1, 2, 3))
        for got, want in zip(wg.compile(grad, *g, v, pts)(*g, v, pts), grad(*g, v, pts)):
            close(got, want, rtol=1e-10, atol=1e-12)
    h = wg.compile(lambda p: I.RegularGridInterpolator(g, v)(p), pts)
    outside = pts.copy()
    outside[1] = [2.0, 0.5]
    out = h(outside)
    assert np.isnan(out[1]) and np.isfinite(out[[0, 2, 3]]).all()


# ---- errors -------------------------------------------------------------------------------------
X5, Y5 = np.arange(5.0), np.arange(5.0) ** 2
# (the call, the error and its words on traced values, SciPy's error on plain ones: None
# where SciPy's call works on plain values)
ERRORS = [
    (lambda y: I.Akima1DInterpolator(X5, y, method="steffen")(1.0), NotImplementedError,
     "`method`=steffen is unsupported", NotImplementedError),
    (lambda y: I.make_interp_spline(X5, y, bc_type="periodic")(1.0), NotImplementedError,
     "bc_type='periodic'.* not supported on traced", ValueError),
    (lambda y: I.RegularGridInterpolator((X5,), y, "pchip")(1.0), NotImplementedError,
     "method='pchip'.* not supported on traced", IndexError),
    (lambda y: I.interpn((X5, X5), wnp.outer(y, y), [1.0, 2.0], "splinef2d"),
     NotImplementedError, "splinef2d", None),
    (lambda y: I.CubicSpline(X5, y).roots(), NotImplementedError,
     "CubicSpline.roots is not supported", None),
    (lambda y: I.UnivariateSpline(X5, y)(1.0), NotImplementedError,
     "scipy.interpolate.UnivariateSpline is not supported on traced", None),
    (lambda y: I.griddata(X5, y, 1.5), NotImplementedError,
     "scipy.interpolate.griddata is not supported on traced", None),
    (lambda y: I.interp1d(X5, y, kind="spam")(1.0), NotImplementedError, "spam is unsupported",
     NotImplementedError),
    (lambda y: I.CubicSpline(X5[::-1], y), ValueError, "strictly increasing", ValueError),
    (lambda y: I.CubicSpline(X5[:4], y), ValueError,
     re.escape("doesn't match the length of `x`: x has shape (4,), y (5,)"), ValueError),
    (lambda y: I.make_interp_spline(X5[:4], y), ValueError,
     re.escape("Shapes of x (4,) and y (5,) are incompatible"), ValueError),
    (lambda y: I.interp1d(X5[:4], y), ValueError, re.escape("x has shape (4,), y (5,)"),
     ValueError),
    (lambda y: I.RegularGridInterpolator((X5[:4],), y), ValueError,
     re.escape("There are 4 points and 5 values in dimension 0"), ValueError),
    (lambda y: I.CubicSpline(X5, y, bc_type="periodic"), ValueError, "must be identical",
     ValueError),
    (lambda y: I.CubicSpline(X5, y, bc_type=((3, 0.0), "natural")), ValueError,
     "order must be 1 or 2", ValueError),
    (lambda y: I.CubicSpline(X5, y)(1.0, nu=-1), ValueError, "cannot be negative", ValueError),
    (lambda y: I.RegularGridInterpolator((X5,), y)([7.0]), ValueError,
     "out of bounds in dimension 0", ValueError),
    (lambda y: I.RegularGridInterpolator((X5,), y, "cubic")([1.0], nu=(1,), method="linear"),
     ValueError, "Can only compute derivatives", ValueError),
    (lambda y: I.RegularGridInterpolator((X5[:3],), y[:3], "cubic"), ValueError,
     "requires at least  4 points", ValueError),
    (lambda y: I.RegularGridInterpolator((X5,), y)(1.0), ValueError, "are one number",
     IndexError),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_clear_errors(i):
    call, error, match, plain = ERRORS[i]
    with pytest.raises(error, match=match):
        wg.grad(lambda y: wnp.sum(call(y)))(Y5)
    if plain is not None:                       # SciPy's own error on plain values
        with pytest.raises(plain):
            call(Y5)


def test_attributes_of_plain_interpolants_are_scipys_read_and_written():
    """Set on an interpolant built from plain values, an attribute is set on SciPy's
    object, so plain calls (SciPy's) and traced ones (wengert's) both see it."""
    x, y = X5, Y5
    cs = I.CubicSpline(x, y)
    cs.extrapolate = False
    assert cs._scipy.extrapolate is False and np.isnan(cs(5.5))
    assert np.isnan(traced_value(cs, np.array(5.5)))
    f = I.interp1d(x, y, bounds_error=False)
    f.fill_value = (-1.0, 100.0)
    assert f(-1.0) == -1.0 and f(9.0) == 100.0
    close(traced_value(f, np.array([-1.0, 9.0])), [-1.0, 100.0])
    g = I.RegularGridInterpolator((x,), y, bounds_error=False)
    g.fill_value = None                                     # extrapolate
    close(traced_value(g, np.array([[5.5]])), g([[5.5]]))
    assert g([[5.5]])[0] == 26.5 and np.array_equal(g.grid[0], x)       # 16 + 1.5 * 7
    b = I.make_interp_spline(x, y)
    b.extrapolate = False
    assert np.isnan(b(6.0)) and np.isnan(traced_value(b, np.array(6.0)))
    assert np.array_equal(b.tck[0], b._scipy.t)


def test_plain_values_are_scipys_objects_and_the_rest_of_scipy_interpolate():
    x, y = X5, Y5
    assert np.array_equal(I.CubicSpline(x, y).solve(3.0), si.CubicSpline(x, y).solve(3.0))
    assert isinstance(I.UnivariateSpline(x, y), si.UnivariateSpline)
    assert np.array_equal(I.griddata(x, y, 1.5), si.griddata(x, y, 1.5))
    assert np.array_equal(I.interpn((x,), y, [[1.5]]), si.interpn((x,), y, [[1.5]]))
    assert float(I.CubicSpline(x, y)(wg.Dual(1.5, 1.0)).tangent) == pytest.approx(3.0)
