"""B-splines (SciPy's BSpline) and interpolating ones (make_interp_spline).

As in _ppoly.py: built from plain values a BSpline holds SciPy's own and answers plain
calls with it; from traced knots or coefficients (or called at traced points) it evaluates
with de Boor's recursion (`_core.bspline_evaluate`).  make_interp_spline on traced values
solves SciPy's banded collocation system with `wengert.scipy.linalg.solve_banded`.
"""
from __future__ import annotations

import operator

import numpy as _np
import scipy.interpolate as _si

from ... import numpy as _wnp
from ...dual import accepts_duals as _accepts_duals
from . import _core
from ._core import traced as _traced

__all__ = ["BSpline", "make_interp_spline"]


def _float(x):
    x = _wnp.asarray(x)
    return _wnp.astype(x, _np.float64) if x.dtype != _np.float64 else x


def _inexact(y):
    """y as float64, or complex128 if complex (SciPy's _get_dtype)."""
    y = _wnp.asarray(y)
    dtype = _np.complex128 if y.dtype.kind == "c" else _np.float64
    return _wnp.astype(y, dtype) if y.dtype != dtype else y


def _padded(c, length):
    """c with rows of zeros appended up to `length` (FITPACK's convention: as many
    coefficients as knots)."""
    extra = length - c.shape[0]
    if extra <= 0:
        return c
    return _wnp.concatenate([c, _np.zeros((extra,) + tuple(c.shape[1:]), c.dtype)])


def _splder(t, c, k, nu):
    """SciPy's splder on traced values: the knots, coefficients and degree of the nu-th
    derivative."""
    if nu > k:
        raise ValueError(f"Order of derivative (n = {nu!r}) must be <= order of spline "
                         f"(k = {k!r})")
    for _ in range(nu):
        dt = t[k + 1:-1] - t[1:-k - 1]
        v = _core.known(dt)
        if v is not None and _np.any(v == 0):
            raise ValueError(f"The spline has internal repeated knots and is not "
                             f"differentiable {nu} times")
        dt = _wnp.reshape(dt, (-1,) + (1,) * (c.ndim - 1))
        c = (c[1:-1 - k] - c[:-2 - k]) * k / dt
        c = _wnp.concatenate([c, _np.zeros((k,) + tuple(c.shape[1:]))])
        t = t[1:-1]
        k -= 1
    return t, c, k


def _splantider(t, c, k, nu):
    """SciPy's splantider on traced values."""
    for _ in range(nu):
        dt = _wnp.reshape(t[k + 1:] - t[:-k - 1], (-1,) + (1,) * (c.ndim - 1))
        c = _wnp.cumsum(c[:-k - 1] * dt, axis=0) / (k + 1)
        c = _wnp.concatenate([_np.zeros((1,) + tuple(c.shape[1:]))] + [c] + [c[-1:]] * (k + 2))
        t = _wnp.concatenate([t[:1], t, t[-1:]])
        k += 1
    return t, c, k


def _wrap_classmethod(name):
    """SciPy's BSpline classmethod `name` (plain values only), its result wrapped."""
    def method(cls, *args, **kwargs):
        if _traced(args, kwargs):
            raise NotImplementedError(f"scipy.interpolate.BSpline.{name} is not supported on "
                                      "traced values")
        out = getattr(_si.BSpline, name)(*args, **kwargs)
        return cls._from_scipy(out) if isinstance(out, _si.BSpline) else out
    method.__name__ = name
    method.__doc__ = (f"SciPy's ``BSpline.{name}`` (plain values), a BSpline of this "
                      f"module.\n\n    Example:\n        >>> from wengert.scipy import "
                      f"interpolate\n        >>> callable(interpolate.BSpline.{name})\n"
                      f"        True\n")
    return classmethod(method)


class BSpline(_core.ScipyBacked):
    """A spline of degree k in the B-spline basis, as SciPy's ``BSpline(t, c, k,
    extrapolate=True, axis=0)``: Σ_i c[i] B_(i,k)(x) on the knots t.  Built from plain
    values it *is* SciPy's (every method, SciPy's numbers); from traced t or c it is
    differentiable in both, and a call at traced points in them too (de Boor's recursion).

    Calls (with derivatives `nu`), `derivative`, `antiderivative` and `integrate` work on
    traced values; SciPy's other methods (`insert_knot`, ...) are SciPy's on plain values.

    Example: a B-spline is linear in its coefficients, so the gradient of a value in
    them is the basis functions there (which sum to one):

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import interpolate
        >>> t = np.array([0.0, 0.0, 0.0, 1.0, 2.0, 2.0, 2.0])
        >>> g = wg.grad(lambda c: interpolate.BSpline(t, c, 2)(0.5))(np.ones(4))
        >>> g.tolist()
        [0.25, 0.625, 0.125, 0.0]
    """

    _scipy_class = _si.BSpline
    _supported = "__call__, derivative, antiderivative and integrate"

    def __init__(self, t, c, k, extrapolate=True, axis=0):
        if not _traced(t, c):
            self._adopt(_si.BSpline(t, c, k, extrapolate, axis))
            return
        k = operator.index(k)
        t, c = _float(t), _inexact(c)
        if c.ndim < 1:
            raise ValueError("Coefficients must be at least 1-dimensional.")
        axis = axis % c.ndim
        if axis:
            c = _wnp.moveaxis(c, axis, 0)
        n = t.shape[0] - k - 1 if t.ndim == 1 else 0
        if k < 0:
            raise ValueError("Spline order cannot be negative.")
        if t.ndim != 1:
            raise ValueError("Knot vector must be one-dimensional.")
        if n < k + 1:
            raise ValueError(f"Need at least {2 * k + 2} knots for degree {k}")
        v = _core.known(t)
        if v is not None:
            if _np.any(_np.diff(v) < 0):
                raise ValueError("Knots must be in a non-decreasing order.")
            if len(_np.unique(v[k:n + 1])) < 2:
                raise ValueError("Need at least two internal knots.")
            if not _np.isfinite(v).all():
                raise ValueError("Knots should not have nans or infs.")
        if c.shape[0] < n:
            raise ValueError(f"Knots, coefficients and degree are inconsistent: {t.shape[0]} "
                             f"knots of degree {k} need {n} coefficients, c has shape "
                             f"{tuple(c.shape)} (along the axis)")
        self._set(t, c, k, extrapolate, axis)

    def _set(self, t, c, k, extrapolate, axis, scipy=None):
        self._scipy = scipy
        if scipy is not None:           # (its attributes are SciPy's: ScipyBacked)
            return
        self._t, self._c, self.k = t, c, k
        self.extrapolate = extrapolate if extrapolate == "periodic" else bool(extrapolate)
        self.axis = axis

    def _adopt(self, obj):
        self._set(None, None, None, None, None, scipy=obj)

    @classmethod
    def _from_scipy(cls, obj):
        new = object.__new__(cls)
        new._adopt(obj)
        return new

    @classmethod
    def construct_fast(cls, t, c, k, extrapolate=True, axis=0):
        """A BSpline from t, c (the interpolation axis first) and k, unchecked, as SciPy's
        ``construct_fast``.

        Example:
            >>> import numpy as np
            >>> from wengert.scipy import interpolate
            >>> b = interpolate.BSpline.construct_fast(np.array([0.0, 0.0, 1.0, 1.0]),
            ...                                        np.array([0.0, 2.0]), 1)
            >>> float(b(0.25))
            0.5
        """
        if not _traced(t, c):
            return cls._from_scipy(_si.BSpline.construct_fast(
                _np.asarray(t, float), _np.asarray(c), k, extrapolate, axis))
        new = object.__new__(cls)
        new._set(t, c, k, extrapolate, axis)
        return new

    basis_element = _wrap_classmethod("basis_element")
    design_matrix = _wrap_classmethod("design_matrix")
    from_power_basis = _wrap_classmethod("from_power_basis")

    @property
    def t(self):
        """The knots."""
        return self._scipy.t if self._scipy is not None else self._t

    @property
    def c(self):
        """The coefficients, the interpolation axis first."""
        return self._scipy.c if self._scipy is not None else self._c

    @property
    def tck(self):
        """(t, c, k)."""
        return self.t, self.c, self.k

    def _n(self):
        return self.t.shape[0] - self.k - 1

    @_accepts_duals
    def __call__(self, x, nu=0, extrapolate=None):
        """The spline, or its nu-th derivative, at x: shape x.shape + the coefficients'
        trailing shape, the query axes where the interpolation axis was (SciPy's).
        Beyond the base interval [t[k], t[n]] the end pieces extrapolate, unless
        `extrapolate` (default: the spline's) is False (nan) or 'periodic'.

        Example:
            >>> import numpy as np, wengert as wg
            >>> from wengert.scipy import interpolate
            >>> b = interpolate.make_interp_spline(np.arange(6.0), np.arange(6.0) ** 3)
            >>> round(float(wg.grad(lambda x: b(x, nu=1))(2.5)), 10)   # (x³)'' = 6x
            15.0
        """
        if self._scipy is not None and not _traced(x):
            return self._scipy(x, nu, extrapolate)
        nu = operator.index(nu)
        if nu < 0:
            raise ValueError(f"Cannot do derivative order {nu}.")
        if extrapolate is None:
            extrapolate = self.extrapolate
        xq, shape = _core.flat_queries(x)
        out = _core.bspline_evaluate(self.t, self.c[:self._n()], self.k, xq, nu, extrapolate)
        return _core.placed(out, shape, self.axis)

    def derivative(self, nu=1):
        """The BSpline of the nu-th derivative (SciPy's splder).

        Example:
            >>> import numpy as np
            >>> from wengert.scipy import interpolate
            >>> b = interpolate.make_interp_spline(np.arange(6.0), np.arange(6.0) ** 2)
            >>> round(float(b.derivative()(1.5)), 12)
            3.0
        """
        if self._scipy is not None:
            return self._from_scipy(self._scipy.derivative(nu))
        if nu < 0:
            return self.antiderivative(-nu)
        t, c, k = _splder(self.t, _padded(self.c, self.t.shape[0]), self.k, nu)
        return self.construct_fast(t, c, k, self.extrapolate, self.axis)

    def antiderivative(self, nu=1):
        """The BSpline of the nu-th antiderivative (SciPy's splantider), 0 at t[0].

        Example:
            >>> import numpy as np
            >>> from wengert.scipy import interpolate
            >>> b = interpolate.make_interp_spline(np.arange(6.0), np.arange(6.0) ** 2)
            >>> round(float(b.antiderivative()(3.0)), 12)
            9.0
        """
        if self._scipy is not None:
            return self._from_scipy(self._scipy.antiderivative(nu))
        if nu < 0:
            return self.derivative(-nu)
        t, c, k = _splantider(self.t, _padded(self.c, self.t.shape[0]), self.k, nu)
        extrapolate = False if self.extrapolate == "periodic" else self.extrapolate
        return self.construct_fast(t, c, k, extrapolate, self.axis)

    @_accepts_duals
    def integrate(self, a, b, extrapolate=None):
        """The integral from a to b (an array of the trailing shape).  Without
        `extrapolate` the spline counts as zero outside its base interval (SciPy's);
        'periodic' adds whole periods.  Differentiable in a and b too.

        Example:
            >>> import numpy as np, wengert as wg
            >>> from wengert.scipy import interpolate
            >>> x = np.linspace(0.0, 1.0, 7)
            >>> w = wg.grad(lambda y: interpolate.make_interp_spline(x, y).integrate(0, 1))(x)
            >>> round(float(w.sum()), 12)            # a quadrature rule
            1.0
        """
        if self._scipy is not None and not _traced(a, b):
            return self._scipy.integrate(a, b, extrapolate)
        if extrapolate is None:
            extrapolate = self.extrapolate
        a, b = (_float(v) for v in (a, b))
        if a.ndim or b.ndim:
            raise ValueError(f"the bounds of integrate must be numbers, got shapes {a.shape} "
                             f"and {b.shape}")
        sign = _wnp.where(b < a, -1.0, 1.0)
        lo, hi = _wnp.minimum(a, b), _wnp.maximum(a, b)
        k, n = self.k, self._n()
        t = self.t
        start, end = t[k], t[n]
        if extrapolate != "periodic" and not extrapolate:
            lo = _wnp.minimum(_wnp.maximum(lo, start), end)
            hi = _wnp.minimum(_wnp.maximum(hi, start), end)
        ta, ca, ka = _splantider(t, _padded(self.c, t.shape[0]), k, 1)
        ca = ca[:ta.shape[0] - ka - 1]

        def F(*points):                             # the antiderivative at the points
            return _core.bspline_evaluate(ta, ca, ka, _wnp.stack(points), 0, True)

        if extrapolate == "periodic":
            period = end - start
            periods = _wnp.floor((hi - lo) / period)
            left = (hi - lo) - periods * period
            a0 = _core.periodic(lo, start, end)
            b0 = a0 + left
            v = F(a0, b0, end, start + b0 - end, start)
            rest = _wnp.where(b0 <= end, v[1] - v[0], v[2] - v[0] + v[3] - v[4])
            total = periods * (v[2] - v[4]) + rest
        else:
            v = F(lo, hi)
            total = v[1] - v[0]
        return sign * total


# ---- interpolating splines --------------------------------------------------------------------
def _not_a_knot(x, k):
    """SciPy's not-a-knot knots for data sites x (plain or traced): the ends repeated k + 1
    times, and between them the sites (odd k) or the midpoints (even k) but the first and
    last k2 of them."""
    if k % 2:
        k2, inner = (k + 1) // 2, x
    else:
        k2, inner = k // 2, (x[1:] + x[:-1]) / 2
    inner = inner[k2:inner.shape[0] - k2]
    return _wnp.concatenate([x[:1]] * (k + 1) + [inner] + [x[-1:]] * (k + 1))


def _augknt(x, k):
    return _wnp.concatenate([x[:1]] * k + [x] + [x[-1:]] * k)


def _deriv_spec(deriv, trailing):
    """SciPy's (orders, values) of the end conditions at one end: 'clamped', 'natural'
    or a list of (order, value) pairs (values of y's trailing shape, traced or not)."""
    if deriv is None:
        return [], []
    if isinstance(deriv, str):
        if deriv == "clamped":
            deriv = [(1, _np.zeros(trailing))]
        elif deriv == "natural":
            deriv = [(2, _np.zeros(trailing))]
        else:
            raise ValueError(f"Unknown boundary condition : {deriv}")
    try:
        orders, values = zip(*deriv)
    except TypeError as e:
        raise ValueError("Derivatives, `bc_type`, should be specified as a pair of "
                         "iterables of pairs of (order, value).") from e
    return [operator.index(o) for o in orders], [_wnp.asarray(v) for v in values]


def _intervals(t, k, sites, what):
    """The interval of each site in the knots (plain integers, which place the
    collocation matrix's entries in its band): from the numbers, which must be known."""
    tv, sv = _core.known(t), _core.known(sites)
    if tv is None or sv is None:
        raise NotImplementedError(
            f"make_interp_spline with given knots t and {what} traced without values "
            "(under wg.compile or wg.vmap) is not supported: where the sites fall among the "
            "knots must be known to lay out the collocation matrix; call it eagerly, or "
            "leave t=None")
    n = tv.shape[0] - k - 1
    return _np.clip(_np.searchsorted(tv, sv, side="right") - 1, k, n - 1)


def make_interp_spline(x, y, k=3, t=None, bc_type=None, axis=0, check_finite=True):
    """The interpolating B-spline of degree k through (x, y), as SciPy's
    ``make_interp_spline(x, y, k=3, t=None, bc_type=None, axis=0, check_finite=True)``:
    a `BSpline`.  Knots: not-a-knot by default (`t` None), SciPy's; end conditions
    `bc_type` None or 'not-a-knot', 'clamped', 'natural', or a pair of lists of
    (order, value).

    On traced values (y, x, t, or the values of bc_type) the coefficients solve SciPy's
    banded collocation system with `wengert.scipy.linalg.solve_banded`, so they are
    differentiable in all of them, to any order.  ``bc_type='periodic'`` is refused on
    traced values (NotImplementedError).  With given knots t and traced x, the positions
    of the x among t are read from their numbers (an eager call).

    Example: the derivative of the interpolant's value in y is a cardinal spline; at a
    data site it is that site's unit vector:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import interpolate
        >>> x = np.arange(6.0)
        >>> g = wg.grad(lambda y: interpolate.make_interp_spline(x, y, k=3)(2.0))(x ** 2)
        >>> (g.round(12) + 0.0).tolist()  # + 0.0: no signed zeros
        [0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    """
    if not _traced(x, y, t, bc_type):
        return BSpline._from_scipy(_si.make_interp_spline(x, y, k, t, bc_type, axis,
                                                          check_finite))
    if bc_type is None or (isinstance(bc_type, str) and bc_type in ("not-a-knot", "periodic")):
        deriv_l = deriv_r = None
    elif isinstance(bc_type, str):
        deriv_l = deriv_r = bc_type
    else:
        try:
            deriv_l, deriv_r = bc_type
        except TypeError as e:
            raise ValueError(f"Unknown boundary condition: {bc_type}") from e
    if isinstance(bc_type, str) and bc_type == "periodic":
        raise NotImplementedError("make_interp_spline(..., bc_type='periodic') is not "
                                  "supported on traced values (use CubicSpline(..., "
                                  "bc_type='periodic') for k = 3)")
    x, y = _float(x), _inexact(y)
    if check_finite:
        _core.checked_finite(x, "array must not contain infs or NaNs")
        _core.checked_finite(y, "array must not contain infs or NaNs")
    if y.ndim == 0:
        raise ValueError("`y` must have at least one axis (of the length of `x`)")
    axis = axis % y.ndim
    y = _wnp.moveaxis(y, axis, 0)
    if x.ndim != 1 or x.shape[0] != y.shape[0]:
        raise ValueError(f"Shapes of x {tuple(x.shape)} and y {tuple(y.shape)} are "
                         "incompatible")
    xv = _core.known(x)
    if xv is not None:
        if _np.any(xv[1:] == xv[:-1]):
            raise ValueError("Expect x to not have duplicates")
        if _np.any(xv[1:] < xv[:-1]):
            raise ValueError("Expect x to be a 1D strictly increasing sequence.")
    k = operator.index(k)
    if k == 0:
        if any(v is not None for v in (t, deriv_l, deriv_r)):
            raise ValueError("Too much info for k=0: t and bc_type can only be None.")
        return BSpline.construct_fast(_wnp.concatenate([x, x[-1:]]), y, k, axis=axis)
    if k == 1 and t is None:
        if not (deriv_l is None and deriv_r is None):
            raise ValueError("Too much info for k=1: bc_type can only be None.")
        return BSpline.construct_fast(_wnp.concatenate([x[:1], x, x[-1:]]), y, k, axis=axis)
    if k < 0:
        raise ValueError("Expect non-negative k.")
    trailing = tuple(y.shape[1:])
    orders_l, values_l = _deriv_spec(deriv_l, trailing)
    orders_r, values_r = _deriv_spec(deriv_r, trailing)
    n = x.shape[0]
    proxy = None
    if t is None:
        knots = _not_a_knot if deriv_l is None and deriv_r is None else _augknt
        t = knots(x, k)
        # the layout of the collocation matrix does not depend on the numbers: any
        # increasing sites give the same positions among their knots
        proxy = knots(_np.arange(n, dtype=float), k)
    else:
        t = _float(t)
        tv = _core.known(t)
        if t.ndim != 1 or (tv is not None and _np.any(tv[1:] < tv[:-1])):
            raise ValueError("Expect t to be a 1-D sorted array_like.")
    if t.shape[0] < n + k + 1:
        raise ValueError(f"Got {t.shape[0]} knots, need at least {n + k + 1}.")
    tv = _core.known(t)
    if xv is not None and tv is not None and (xv[0] < tv[k] or xv[-1] > tv[-k]):
        raise ValueError(f"Out of bounds w/ x = {xv}.")
    if not all(0 <= o <= k for o in orders_l):
        raise ValueError(f"Bad boundary conditions at {xv[0] if xv is not None else 'x[0]'}.")
    if not all(0 <= o <= k for o in orders_r):
        raise ValueError(f"Bad boundary conditions at {xv[-1] if xv is not None else 'x[-1]'}.")
    nt = t.shape[0] - k - 1
    if nt - n != len(orders_l) + len(orders_r):
        raise ValueError(f"The number of derivatives at boundaries does not match: expected "
                         f"{nt - n}, got {len(orders_l)}+{len(orders_r)}")
    for v in values_l + values_r:
        if tuple(v.shape) != trailing:
            raise ValueError(f"a boundary value of shape {tuple(v.shape)} does not match "
                             f"y's trailing shape {trailing}")
    if any(v.dtype.kind == "c" for v in values_l + values_r) and y.dtype.kind != "c":
        y = _wnp.astype(y, _np.complex128)
    if y.size == 0:
        return BSpline.construct_fast(t, _np.zeros((nt,) + trailing), k, axis=axis)
    if proxy is not None:
        px = _np.arange(n, dtype=float)
        inner = _np.clip(_np.searchsorted(proxy, px, side="right") - 1, k, nt - 1)
    else:
        inner = _intervals(t, k, x, "x")
    intervals = _np.concatenate([[k] * len(orders_l), inner,
                                 [nt - 1] * len(orders_r)]).astype(_np.intp)
    sites = [x[:1]] * len(orders_l) + [x] + [x[-1:]] * len(orders_r)
    width = int(_np.prod(trailing))
    rhs = _wnp.concatenate([_wnp.reshape(v, (1, width)) for v in values_l]
                           + [_wnp.reshape(y, (n, width))]
                           + [_wnp.reshape(v, (1, width)) for v in values_r])
    c = _core.collocation_solve(t, k, sites, intervals, orders_l + [0] + orders_r, rhs)
    return BSpline.construct_fast(t, _wnp.reshape(c, (nt,) + trailing), k, axis=axis)
