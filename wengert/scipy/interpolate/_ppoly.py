"""Piecewise polynomials in the power basis (SciPy's PPoly) and the cubic interpolants
that are one: CubicHermiteSpline, CubicSpline, PchipInterpolator, Akima1DInterpolator.

Each class holds SciPy's own object when it is built from plain values, and answers plain
calls with it (SciPy's numbers, bit for bit).  Built from traced values, it computes the
coefficients c with `wengert.numpy` and `wengert.scipy.linalg.solve_banded`, following
SciPy's algorithm step by step; a call with traced query points evaluates c there
(`_core.ppoly_evaluate`).  So every derivative is that of the composition.
"""
from __future__ import annotations

import operator

import numpy as _np
import scipy.interpolate as _si

from ... import numpy as _wnp
from ...dual import accepts_duals as _accepts_duals
from .. import linalg as _linalg
from . import _core
from ._core import traced as _traced

__all__ = ["PPoly", "CubicHermiteSpline", "CubicSpline", "PchipInterpolator",
           "Akima1DInterpolator", "pchip_interpolate"]


class PPoly(_core.ScipyBacked):
    """A piecewise polynomial in the power basis, as SciPy's ``PPoly(c, x, extrapolate,
    axis)``: on [x[i], x[i+1]] (the last interval closed) it is
    ``Σ_m c[m, i] (xp - x[i])^(k-m)``.  Built from plain values it *is* SciPy's (every
    method, SciPy's numbers); from traced c or x it is differentiable in both, and a call
    at traced points in them too.

    Calls, `derivative`, `antiderivative` and `integrate` work on traced values; SciPy's
    other methods (`roots`, `solve`, `extend`, ...) are there on an interpolant built from
    plain values and raise NotImplementedError on one built from traced values.  On traced
    values the breakpoints must not decrease (SciPy's also takes decreasing ones).

    Example: the polynomial 1 + 2 (x - 0) on [0, 1] and 3 + 2 (x - 1) on [1, 2]; its
    derivative in the coefficients at x = 1.5 is (0.5, 1) on the second piece:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import interpolate
        >>> c = np.array([[2.0, 2.0], [1.0, 3.0]])
        >>> float(interpolate.PPoly(c, [0.0, 1.0, 2.0])(1.5))
        4.0
        >>> wg.grad(lambda c: interpolate.PPoly(c, [0.0, 1.0, 2.0])(1.5))(c)
        array([[0. , 0.5],
               [0. , 1. ]])
    """
    _scipy_class = _si.PPoly
    _supported = "__call__, derivative, antiderivative and integrate"

    def __init__(self, c, x, extrapolate=None, axis=0):
        if not _traced(c, x):
            self._adopt(self._scipy_class(c, x, extrapolate, axis))
            return
        c, x = _wnp.asarray(c), _wnp.asarray(x)
        x = _wnp.astype(x, _np.float64) if x.dtype != _np.float64 else x
        if c.ndim < 2:
            raise ValueError("Coefficients array must be at least 2-dimensional.")
        if not 0 <= axis < c.ndim - 1:
            raise ValueError(f"axis={axis} must be between 0 and {c.ndim - 1}")
        if axis:
            c = _wnp.moveaxis(_wnp.moveaxis(c, axis + 1, 0), axis + 1, 0)
        if x.ndim != 1:
            raise ValueError("x must be 1-dimensional")
        if x.shape[0] < 2:
            raise ValueError("at least 2 breakpoints are needed")
        if c.shape[0] == 0:
            raise ValueError("polynomial must be at least of order 0")
        if c.shape[1] != x.shape[0] - 1:
            raise ValueError(f"number of coefficients != len(x)-1: c has shape {c.shape} "
                             f"(intervals along axis 1), x {x.shape}")
        v = _core.known(x)
        if v is not None and _np.any(_np.diff(v) < 0):
            if _np.all(_np.diff(v) <= 0):
                raise NotImplementedError(
                    "PPoly with decreasing breakpoints is not supported on traced values: "
                    "reverse x and the intervals of c")
            raise ValueError("`x` must be strictly increasing or decreasing.")
        if c.dtype.kind not in "fc":
            c = _wnp.astype(c, _np.float64)
        elif c.dtype not in (_np.float64, _np.complex128):
            c = _wnp.astype(c, _np.complex128 if c.dtype.kind == "c" else _np.float64)
        self._set(c, x, extrapolate, axis)

    # ---- state: SciPy's object (plain values), or the traced coefficients ---------------------
    def _set(self, c, x, extrapolate, axis, scipy=None):
        self._scipy = scipy
        if scipy is not None:           # (its attributes are SciPy's: ScipyBacked)
            return
        if extrapolate is None:
            extrapolate = True
        elif extrapolate != "periodic":
            extrapolate = bool(extrapolate)
        self._c, self._x = c, x
        self.extrapolate, self.axis = extrapolate, axis

    def _adopt(self, obj):
        self._set(None, None, None, None, scipy=obj)

    def _new(self, c, x, extrapolate, axis, scipy=None):
        new = object.__new__(type(self))
        new._set(c, x, extrapolate, axis, scipy)
        return new

    @classmethod
    def construct_fast(cls, c, x, extrapolate=None, axis=0):
        """An interpolant of this class from c (already (k+1, m, ...)) and x, unchecked,
        as SciPy's ``construct_fast``.

        Example:
            >>> import numpy as np
            >>> from wengert.scipy import interpolate
            >>> c, x = np.array([[1.0], [0.0]]), np.array([0.0, 1.0])
            >>> p = interpolate.PPoly.construct_fast(c, x)
            >>> float(p(0.5))
            0.5
        """
        new = object.__new__(cls)
        scipy = None
        if not _traced(c, x):
            scipy = cls._scipy_class.construct_fast(_np.asarray(c), _np.asarray(x, float),
                                                    extrapolate, axis)
        new._set(c, x, extrapolate, axis, scipy)
        return new

    @property
    def c(self):
        """The coefficients, shape (k+1, m, ...): c[j, i] multiplies (x - x[i])^(k-j)."""
        return self._scipy.c if self._scipy is not None else self._c

    @property
    def x(self):
        """The breakpoints, shape (m+1,)."""
        return self._scipy.x if self._scipy is not None else self._x

    # ---- evaluation ----------------------------------------------------------------------------
    @_accepts_duals
    def __call__(self, x, nu=0, extrapolate=None):
        """The piecewise polynomial, or its nu-th derivative, at x: shape x.shape +
        trailing shape, the query axes where the interpolation axis was (SciPy's).
        Intervals are half-open, [x[i], x[i+1]), the last closed; beyond the ends the
        end pieces extrapolate unless `extrapolate` (default: the interpolant's) is False
        (nan there) or 'periodic'.

        Example:
            >>> import numpy as np, wengert as wg
            >>> from wengert.scipy import interpolate
            >>> s = interpolate.CubicSpline([0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 8.0, 27.0])
            >>> round(wg.grad(s)(1.5), 12)          # the cubic x³ reproduced: 3 x²
            6.75
        """
        if self._scipy is not None and not _traced(x):
            return self._scipy(x, nu, extrapolate)
        nu = operator.index(nu)
        if nu < 0:
            raise ValueError("Order of derivative cannot be negative")
        if extrapolate is None:
            extrapolate = self.extrapolate
        xq, shape = _core.flat_queries(x)
        out = _core.ppoly_evaluate(self.c, self.x, xq, nu, extrapolate)
        return _core.placed(out, shape, self.axis)

    def derivative(self, nu=1):
        """The piecewise polynomial of the nu-th derivative (an antiderivative for
        negative nu), of the same class, as SciPy's.

        Example:
            >>> import numpy as np
            >>> from wengert.scipy import interpolate
            >>> s = interpolate.CubicSpline([0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 8.0, 27.0])
            >>> float(s.derivative(2)(1.0))          # (x³)'' = 6x
            6.0
        """
        if self._scipy is not None:
            return self._new(None, None, None, None, self._scipy.derivative(nu))
        if nu < 0:
            return self.antiderivative(-nu)
        c = _core.ppoly_derivative_coefficients(self.c, nu)
        return self._new(c, self.x, self.extrapolate, self.axis)

    def antiderivative(self, nu=1):
        """The piecewise polynomial of the nu-th antiderivative: continuous, with its
        first nu - 1 derivatives, and 0 at x[0], as SciPy's (a periodic interpolant's
        antiderivative does not extrapolate periodically).

        Example:
            >>> import numpy as np
            >>> from wengert.scipy import interpolate
            >>> s = interpolate.CubicSpline([0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 8.0, 27.0])
            >>> float(s.antiderivative()(2.0))       # ∫₀² x³ dx
            4.0
        """
        if self._scipy is not None:
            return self._new(None, None, None, None, self._scipy.antiderivative(nu))
        if nu <= 0:
            return self.derivative(-nu)
        c = _core.ppoly_antiderivative(self.c, self.x, nu)
        extrapolate = False if self.extrapolate == "periodic" else self.extrapolate
        return self._new(c, self.x, extrapolate, self.axis)

    @_accepts_duals
    def integrate(self, a, b, extrapolate=None):
        """The definite integral from a to b (an array of the trailing shape), SciPy's:
        nan if `extrapolate` is False and [a, b] leaves [x[0], x[-1]]; whole periods and
        a remainder for 'periodic'.  Differentiable in a and b too (the integrand there).

        Example: the integral of a spline through y in its values y is the quadrature
        rule of the spline:

            >>> import numpy as np, wengert as wg
            >>> from wengert.scipy import interpolate
            >>> x = np.linspace(0.0, 1.0, 5)
            >>> w = wg.grad(lambda y: interpolate.CubicSpline(x, y).integrate(0.0, 1.0))(x)
            >>> round(float(w.sum()), 12), bool(np.allclose(w, w[::-1]))
            (1.0, True)
        """
        if self._scipy is not None and not _traced(a, b):
            return self._scipy.integrate(a, b, extrapolate)
        if extrapolate is None:
            extrapolate = self.extrapolate
        a, b = (_wnp.astype(_wnp.asarray(v), _np.float64) for v in (a, b))
        if a.ndim or b.ndim:
            raise ValueError(f"the bounds of integrate must be numbers, got shapes {a.shape} "
                             f"and {b.shape}")
        sign = _wnp.where(b < a, -1.0, 1.0)
        lo, hi = _wnp.minimum(a, b), _wnp.maximum(a, b)
        x = self.x
        c = _core.ppoly_antiderivative(self.c, x, 1)

        def F(*points, extrapolate=True):          # the antiderivative at the points
            return _core.ppoly_evaluate(c, x, _wnp.stack(points), 0, extrapolate)

        if extrapolate == "periodic":
            start, end = x[0], x[-1]
            period = end - start
            periods = _wnp.floor((hi - lo) / period)
            left = (hi - lo) - periods * period
            a0 = _core.periodic(lo, start, end)
            b0 = a0 + left
            v = F(a0, b0, end, start + b0 - end)
            rest = _wnp.where(b0 <= end, v[1] - v[0], v[2] - v[0] + v[3])
            whole = F(end)[0]
            total = _wnp.where(periods > 0, periods * whole, 0.0) + rest
        else:
            v = F(lo, hi, extrapolate=bool(extrapolate))
            total = v[1] - v[0]
        return sign * total


# ---- the cubic interpolants ---------------------------------------------------------------------
def _prepare(x, y, axis, dydx=None):
    """SciPy's prepare_input on traced values: x as float64 (checked where its numbers are
    known), y (and dydx) as float64 or complex128 with the interpolation axis first."""
    x, y = _wnp.asarray(x), _wnp.asarray(y)
    if x.dtype.kind == "c":
        raise ValueError("`x` must contain real values.")
    if x.dtype != _np.float64:
        x = _wnp.astype(x, _np.float64)
    dtype = _np.complex128 if y.dtype.kind == "c" else _np.float64
    if dydx is not None:
        dydx = _wnp.asarray(dydx)
        if y.shape != dydx.shape:
            raise ValueError(f"The shapes of `y` and `dydx` must be identical: y has shape "
                             f"{y.shape}, dydx {dydx.shape}.")
        if dydx.dtype.kind == "c":
            dtype = _np.complex128
        dydx = _wnp.astype(dydx, dtype) if dydx.dtype != dtype else dydx
    y = _wnp.astype(y, dtype) if y.dtype != dtype else y
    if y.ndim == 0:
        raise ValueError("`y` must have at least one axis (of the length of `x`), got a "
                         "number")
    axis = axis % y.ndim
    if x.ndim != 1:
        raise ValueError(f"`x` must be 1-dimensional, got shape {x.shape}.")
    if x.shape[0] < 2:
        raise ValueError("`x` must contain at least 2 elements.")
    if x.shape[0] != y.shape[axis]:
        raise ValueError(f"The length of `y` along `axis`={axis} doesn't match the length "
                         f"of `x`: x has shape {x.shape}, y {y.shape}")
    _core.checked_finite(x, "`x` must contain only finite values.")
    _core.checked_finite(y, "`y` must contain only finite values.")
    if dydx is not None:
        _core.checked_finite(dydx, "`dydx` must contain only finite values.")
    _core.checked_increasing(x, "`x` must be strictly increasing sequence.")
    y = _wnp.moveaxis(y, axis, 0)
    if dydx is not None:
        dydx = _wnp.moveaxis(dydx, axis, 0)
    return x, _wnp.diff(x), y, axis, dydx


def _column(v, ndim):
    """A vector along the interpolation axis, shaped to broadcast against y."""
    return _wnp.reshape(v, (v.shape[0],) + (1,) * (ndim - 1))


def _hermite(x, dx, y, dydx):
    """The power-basis coefficients of the cubic Hermite interpolant through (x, y) with
    slopes dydx (SciPy's CubicHermiteSpline)."""
    dxr = _column(dx, y.ndim)
    slope = _wnp.diff(y, axis=0) / dxr
    t = (dydx[:-1] + dydx[1:] - 2 * slope) / dxr
    return _wnp.stack([t / dxr, (slope - dydx[:-1]) / dxr - t, dydx[:-1], y[:-1]])


class CubicHermiteSpline(PPoly):
    """The piecewise cubic through (x, y) with the first derivatives dydx at x (C¹), as
    SciPy's ``CubicHermiteSpline(x, y, dydx, axis=0, extrapolate=None)``: a `PPoly`,
    differentiable in x, y and dydx (and at traced query points).

    Example: the derivative of the value halfway along a piece in the slopes at its ends
    is h/8 and -h/8:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import interpolate
        >>> f = lambda d: interpolate.CubicHermiteSpline([0.0, 2.0], [0.0, 1.0], d)(1.0)
        >>> wg.grad(f)(np.array([0.0, 0.0]))
        array([ 0.25, -0.25])
    """
    _scipy_class = _si.CubicHermiteSpline

    def __init__(self, x, y, dydx, axis=0, extrapolate=None):
        if not _traced(x, y, dydx):
            self._adopt(self._scipy_class(x, y, dydx, axis, extrapolate))
            return
        x, dx, y, axis, dydx = _prepare(x, y, axis, dydx)
        self._set(_hermite(x, dx, y, dydx), x, extrapolate, axis)


def _bc(bc_type, y, axis):
    """SciPy's CubicSpline._validate_bc on traced values: the two end conditions, each
    'not-a-knot', 'periodic' or (order, value) with the value of y's trailing shape (the
    value may be traced), and y (complex if a value is)."""
    trailing = tuple(y.shape[1:])
    if isinstance(bc_type, str):
        if bc_type == "periodic":
            v = _core.known(y)
            if v is not None and not _np.allclose(v[0], v[-1], rtol=1e-15, atol=1e-15):
                raise ValueError(f"The first and last `y` point along axis {axis} must be "
                                 "identical (within machine precision) when "
                                 "bc_type='periodic'.")
        bc_type = (bc_type, bc_type)
    else:
        if len(bc_type) != 2:
            raise ValueError("`bc_type` must contain 2 elements to specify start and end "
                             "conditions.")
        if any(isinstance(bc, str) and bc == "periodic" for bc in bc_type):
            raise ValueError("'periodic' `bc_type` is defined for both curve ends and "
                             "cannot be used with other boundary conditions.")
    validated = []
    for bc in bc_type:
        if isinstance(bc, str):
            if bc == "clamped":
                validated.append((1, _np.zeros(trailing)))
            elif bc == "natural":
                validated.append((2, _np.zeros(trailing)))
            elif bc in ("not-a-knot", "periodic"):
                validated.append(bc)
            else:
                raise ValueError(f"bc_type={bc} is not allowed.")
            continue
        try:
            order, value = bc
        except Exception as e:
            raise ValueError("A specified derivative value must be given in the form "
                             "(order, value).") from e
        if order not in (1, 2):
            raise ValueError("The specified derivative order must be 1 or 2.")
        value = _wnp.asarray(value)
        if tuple(value.shape) != trailing:
            raise ValueError(f"`deriv_value` shape {tuple(value.shape)} is not the expected "
                             f"one {trailing}.")
        if value.dtype.kind == "c" and y.dtype.kind != "c":
            y = _wnp.astype(y, _np.complex128)
        validated.append((order, value))
    return validated, y


def _cubic_spline_slopes(x, dx, y, bc):
    """The first derivatives s at x of the cubic spline through (x, y) with the end
    conditions bc: SciPy's tridiagonal system, case by case, solved by `solve_banded`."""
    n = x.shape[0]
    dxr = _column(dx, y.ndim)
    slope = _wnp.diff(y, axis=0) / dxr
    if n == 2:
        bc = [(1, slope[0]) if b in ("not-a-knot", "periodic") else b for b in bc]
    if n == 3 and bc[0] == "not-a-knot" and bc[1] == "not-a-knot":
        # both ends 'not-a-knot' on three points: the parabola through them (SciPy solves
        # the same 3x3 system densely)
        one = _np.ones(1)
        ab = _wnp.stack([_wnp.concatenate([_np.zeros(1), one, dx[:1]]),
                         _wnp.concatenate([one, 2 * (dx[:1] + dx[1:]), one]),
                         _wnp.concatenate([dx[1:], one, _np.zeros(1)])])
        b = _wnp.stack([2 * slope[0], 3 * (dxr[0] * slope[1] + dxr[1] * slope[0]),
                        2 * slope[1]])
        return _solved(ab, b)
    if n == 3 and bc[0] == "periodic":
        t = _wnp.sum(slope / dxr, 0) / _wnp.sum(1.0 / dxr, 0)
        return _wnp.broadcast_to(t, (n,) + tuple(y.shape[1:]))
    interior = 3 * (dxr[1:] * slope[:-1] + dxr[:-1] * slope[1:])
    if bc[0] == "periodic":
        return _periodic_slopes(dx, dxr, slope, interior)
    (d0, u1, b0), (dn, ln, bn) = _end_rows(bc[0], x, dx, dxr, y, slope, start=True), \
        _end_rows(bc[1], x, dx, dxr, y, slope, start=False)
    ab = _wnp.stack([_wnp.concatenate([_np.zeros(1), _wnp.reshape(u1, (1,)), dx[:-1]]),
                     _wnp.concatenate([_wnp.reshape(d0, (1,)), 2 * (dx[:-1] + dx[1:]),
                                       _wnp.reshape(dn, (1,))]),
                     _wnp.concatenate([dx[1:], _wnp.reshape(ln, (1,)), _np.zeros(1)])])
    b = _wnp.concatenate([_wnp.broadcast_to(b0, (1,) + tuple(y.shape[1:])), interior,
                          _wnp.broadcast_to(bn, (1,) + tuple(y.shape[1:]))])
    return _solved(ab, b)


def _end_rows(bc, x, dx, dxr, y, slope, start):
    """(diagonal entry, off-diagonal entry, right-hand side) of the first (start) or last
    equation of the spline's system, for the end condition bc (SciPy's)."""
    if bc == "not-a-knot":
        if start:
            d = x[2] - x[0]
            return dx[1], d, ((dxr[0] + 2 * d) * dxr[1] * slope[0] + dxr[0] ** 2 * slope[1]) / d
        d = x[-1] - x[-3]
        return dx[-2], d, (dxr[-1] ** 2 * slope[-2] + (2 * d + dxr[-1]) * dxr[-2] * slope[-1]) / d
    order, value = bc
    if order == 1:
        return 1.0, 0.0, value
    if start:
        return 2 * dx[0], dx[0], -0.5 * value * dx[0] ** 2 + 3 * (y[1] - y[0])
    return 2 * dx[-1], dx[-1], 0.5 * value * dx[-1] ** 2 + 3 * (y[-1] - y[-2])


def _solved(ab, b):
    """solve_banded((1, 1), ab, b) for b of any trailing shape."""
    shape = tuple(b.shape)
    flat = _wnp.reshape(b, (shape[0], -1))
    return _wnp.reshape(_linalg.solve_banded((1, 1), ab, flat), shape)


def _periodic_slopes(dx, dxr, slope, interior):
    """The periodic spline's slopes: SciPy's condensed system of n - 2 unknowns, solved
    for two right-hand sides, and the last unknown from the corner equation."""
    n = dx.shape[0] + 1
    diag = _wnp.concatenate([_wnp.reshape(2 * (dx[-1] + dx[0]), (1,)),
                             (2 * (dx[:-1] + dx[1:]))[:n - 3]])
    upper = _wnp.concatenate([_np.zeros(1), dx[-1:], dx[:n - 4]])
    lower = dx[1:n - 1]
    ab = _wnp.stack([upper, diag, lower])
    first = 3 * (dxr[0] * slope[-1] + dxr[-1] * slope[0])
    last = 3 * (dxr[-1] * slope[-2] + dxr[-2] * slope[-1])
    b1 = _wnp.concatenate([first[None], interior[:n - 3]])
    e = _np.zeros(n - 2)
    e[0] = 1.0
    e2 = _np.zeros(n - 2)
    e2[-1] = 1.0
    b2 = -dx[0] * e - dx[-3] * e2
    s1 = _solved(ab, b1)
    s2 = _column(_linalg.solve_banded((1, 1), ab, b2), s1.ndim)
    s_last = (last - dx[-2] * s1[0] - dx[-1] * s1[-1]) / \
        (2 * (dx[-1] + dx[-2]) + dx[-2] * s2[0] + dx[-1] * s2[-1])
    body = s1 + s_last * s2
    return _wnp.concatenate([body, s_last[None], body[:1]])


class CubicSpline(CubicHermiteSpline):
    """The cubic spline through (x, y) (C²), as SciPy's ``CubicSpline(x, y, axis=0,
    bc_type='not-a-knot', extrapolate=None)``, with every `bc_type`: 'not-a-knot',
    'natural', 'clamped', 'periodic', and a pair of end conditions, each one of those
    (but 'periodic') or (order, value) with order 1 or 2.

    Differentiable in y, in x, in the end values of `bc_type`, and at traced query
    points, to any order: the slopes at the knots solve SciPy's tridiagonal system with
    `wengert.scipy.linalg.solve_banded`, and the derivatives are those of that solve.
    The derivative of a value in y is a cardinal spline (the value of the spline through
    a unit vector), which does not vanish away from the query: a spline is global.

    Example: fit the knot values of a spline to noisy samples by least squares (the
    spline is linear in y, so one Newton step lands on the optimum):

        >>> import numpy as np, wengert as wg, wengert.numpy as wnp
        >>> from wengert.scipy import interpolate
        >>> knots = np.linspace(0.0, np.pi, 6)
        >>> t = np.linspace(0.0, np.pi, 40)
        >>> data = np.sin(t) + 0.01 * np.cos(7 * t)
        >>> loss = lambda y: wnp.sum((interpolate.CubicSpline(knots, y)(t) - data) ** 2)
        >>> y = np.zeros(6)
        >>> y = y - np.linalg.solve(wg.hessian(loss)(y), wg.grad(loss)(y))
        >>> bool(np.abs(y - np.sin(knots)).max() < 0.02), bool(abs(wg.grad(loss)(y)).max() < 1e-12)
        (True, True)
    """
    _scipy_class = _si.CubicSpline

    def __init__(self, x, y, axis=0, bc_type="not-a-knot", extrapolate=None):
        if not _traced(x, y, bc_type):
            self._adopt(self._scipy_class(x, y, axis, bc_type, extrapolate))
            return
        x, dx, y, axis, _ = _prepare(x, y, axis)
        bc, y = _bc(bc_type, y, axis)
        if extrapolate is None:
            extrapolate = "periodic" if bc[0] == "periodic" else True
        if y.size == 0:
            s = _wnp.zeros_like(y)
        else:
            s = _cubic_spline_slopes(x, dx, y, bc)
        self._set(_hermite(x, dx, y, s), x, extrapolate, axis)


def _pchip_edge(h0, h1, m0, m1):
    """PCHIP's one-sided three-point slope at an end, kept shape-preserving (SciPy's)."""
    d = ((2 * h0 + h1) * m0 - h0 * m1) / (h0 + h1)
    flat = _wnp.sign(d) != _wnp.sign(m0)
    steep = _wnp.logical_and(_wnp.sign(m0) != _wnp.sign(m1),
                             _wnp.abs(d) > 3.0 * _wnp.abs(m0))
    return _wnp.where(flat, 0.0, _wnp.where(steep, 3.0 * m0, d))


def _pchip_slopes(x, y):
    """PCHIP's slopes at x: the weighted harmonic mean of the neighbouring secants where
    they have one sign, 0 where not (SciPy's _find_derivatives)."""
    hk = _column(_wnp.diff(x), y.ndim)
    mk = _wnp.diff(y, axis=0) / hk
    if y.shape[0] == 2:
        return _wnp.concatenate([mk, mk])
    smk = _wnp.sign(mk)
    flat = _wnp.logical_or(_wnp.logical_or(smk[1:] != smk[:-1], mk[1:] == 0), mk[:-1] == 0)
    w1 = 2 * hk[1:] + hk[:-1]
    w2 = hk[1:] + 2 * hk[:-1]
    # (the secants where flat are replaced by 1 before dividing: a zero there would make
    # the derivative nan through the branch not taken)
    m_before = _wnp.where(flat, 1.0, mk[:-1])
    m_after = _wnp.where(flat, 1.0, mk[1:])
    whmean = (w1 / m_before + w2 / m_after) / (w1 + w2)
    inner = _wnp.where(flat, 0.0, 1.0 / _wnp.where(flat, 1.0, whmean))
    first = _pchip_edge(hk[0], hk[1], mk[0], mk[1])
    last = _pchip_edge(hk[-1], hk[-2], mk[-1], mk[-2])
    return _wnp.concatenate([first[None], inner, last[None]])


def _real_only(name, y):
    if y.dtype.kind == "c":
        raise ValueError(f"`{name}` only works with real values for `y`. If you are trying to "
                         f"use the real components of the passed array, use `np.real` on the "
                         f"array before passing to `{name}`.")


class PchipInterpolator(CubicHermiteSpline):
    """PCHIP, the shape-preserving piecewise cubic (C¹), as SciPy's
    ``PchipInterpolator(x, y, axis=0, extrapolate=None)``: monotone where the data are,
    with slopes at the knots from weighted harmonic means of the secants.

    Differentiable in y, x and the query points wherever the choice of slope formula (by
    the secants' signs) does not change: almost everywhere, but not across a local
    extremum of the data, where a slope is set to 0.

    Example: on monotone data the interpolant's derivative in y sums to one (adding a
    constant to every y adds it to the interpolant):

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import interpolate
        >>> x = np.array([0.0, 1.0, 2.0, 4.0])
        >>> g = wg.grad(lambda y: interpolate.PchipInterpolator(x, y)(1.5))(x ** 2)
        >>> round(float(g.sum()), 12)
        1.0
    """
    _scipy_class = _si.PchipInterpolator

    def __init__(self, x, y, axis=0, extrapolate=None):
        if not _traced(x, y):
            self._adopt(self._scipy_class(x, y, axis, extrapolate))
            return
        x, dx, y, axis, _ = _prepare(x, y, axis)
        _real_only("PchipInterpolator", y)
        self._set(_hermite(x, dx, y, _pchip_slopes(x, y)), x, extrapolate, axis)


def _akima_slopes(x, dx, y, method):
    """Akima's slopes at x (SciPy's): from the secants, two more extrapolated at each end,
    weighted by how much the neighbouring secants differ ('makima' adds their mean)."""
    dxr = _column(dx, y.ndim)
    m = _wnp.diff(y, axis=0) / dxr
    n = x.shape[0]
    if n == 2:
        return _wnp.concatenate([m, m])
    m1 = 2.0 * m[0] - m[1]
    m0 = 2.0 * m1 - m[0]
    m_2 = 2.0 * m[-1] - m[-2]
    m_1 = 2.0 * m_2 - m[-1]
    m = _wnp.concatenate([m0[None], m1[None], m, m_2[None], m_1[None]])
    fill = 0.5 * (m[3:] + m[:-3])
    dm = _wnp.abs(_wnp.diff(m, axis=0))
    if method == "makima":
        pm = _wnp.abs(m[1:] + m[:-1])
        f1, f2 = dm[2:] + 0.5 * pm[2:], dm[:-2] + 0.5 * pm[:-2]
    else:
        f1, f2 = dm[2:], dm[:-2]
    f12 = f1 + f2
    # the slope is defined where f12 exceeds 1e-9 of its largest value (SciPy's cutoff)
    defined = f12 > 1e-9 * _wnp.max(f12)
    safe = _wnp.where(defined, f12, 1.0)
    return _wnp.where(defined, m[1:n + 1] + f2 / safe * (m[2:n + 2] - m[1:n + 1]), fill)


class Akima1DInterpolator(CubicHermiteSpline):
    """Akima's piecewise cubic (C¹), as SciPy's ``Akima1DInterpolator(x, y, axis=0, *,
    method='akima', extrapolate=None)``, with 'akima' and 'makima'; it does not
    extrapolate unless asked (SciPy's default).

    Differentiable in y, x and the query points almost everywhere: the slopes are
    weighted by |differences of secants|, so where two neighbouring secants are equal
    (collinear data) the weights have a kink and the derivative is one side's.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import interpolate
        >>> x = np.arange(6.0)
        >>> y = np.array([0.0, 1.0, 0.0, 2.0, 1.0, 3.0])
        >>> g = wg.grad(lambda y: interpolate.Akima1DInterpolator(x, y)(2.5))(y)
        >>> round(float(g.sum()), 12)          # a constant added to y moves it as much
        1.0
    """
    _scipy_class = _si.Akima1DInterpolator

    def __init__(self, x, y, axis=0, *, method="akima", extrapolate=None):
        if not _traced(x, y):
            self._adopt(self._scipy_class(x, y, axis, method=method, extrapolate=extrapolate))
            return
        if method not in ("akima", "makima"):
            raise NotImplementedError(f"`method`={method} is unsupported.")
        x, dx, y, axis, _ = _prepare(x, y, axis)
        _real_only("Akima1DInterpolator", y)
        extrapolate = False if extrapolate is None else extrapolate
        self._set(_hermite(x, dx, y, _akima_slopes(x, dx, y, method)), x, extrapolate, axis)


@_accepts_duals
def pchip_interpolate(xi, yi, x, der=0, axis=0):
    """SciPy's ``pchip_interpolate(xi, yi, x, der=0, axis=0)``: `PchipInterpolator(xi, yi,
    axis)` at x, or its derivative(s) of order `der` (a list of orders gives a list).

    Example: the derivative in x is SciPy's der=1:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import interpolate
        >>> xi, yi = np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0, 4.0])
        >>> wg.grad(lambda x: interpolate.pchip_interpolate(xi, yi, x))(0.5)
        1.125
        >>> float(interpolate.pchip_interpolate(xi, yi, 0.5, der=1))
        1.125
    """
    if not _traced(xi, yi, x):
        return _si.pchip_interpolate(xi, yi, x, der, axis)
    p = PchipInterpolator(xi, yi, axis=axis)
    if _np.ndim(der) == 0:
        return p(x, der)
    return [p(x, nu) for nu in der]
