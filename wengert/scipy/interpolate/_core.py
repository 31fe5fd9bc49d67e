"""The arithmetic under `wengert.scipy.interpolate`, written with `wengert.numpy`: the
lookup of each query's interval, piecewise polynomials in the power basis, and B-splines
(their basis functions and collocation systems).  Every function takes plain or traced
arrays alike, so the interpolants differentiate by composition, to any order, under
`wg.vmap` and `wg.compile` too.

The interval of a query is `searchsorted`, an integer: where the breakpoints (knots) are
traced, it has no derivative.  That is the derivative almost everywhere: the interval
changes only where a query crosses a knot, and there the interpolant is continuous (but
for 'nearest', 'previous' and 'next', which jump), so moving a knot moves the value only
through the polynomial pieces, whose formulas hold the knots.
"""
from __future__ import annotations

import math

import numpy as _np

from ... import numpy as _wnp
from ...graph.node import Node as _Node
from ...numpy import _traced
from .. import linalg as _linalg

__all__ = ["traced", "known", "ScipyBacked", "ppoly_evaluate", "ppoly_antiderivative",
           "bspline_interval", "bspline_basis", "bspline_evaluate", "collocation_solve"]

traced = _traced


def known(x):
    """x's numbers as a NumPy array where they are known (a plain value, or a traced one
    evaluated eagerly), else None (under `wg.compile` and `wg.vmap`, which trace without
    numbers)."""
    if type(x) is _Node:
        return None if x.value is None else _np.asarray(x.value)
    return _np.asarray(x)


def checked_increasing(x, message):
    """Raise ValueError(message) if x's numbers are known and not strictly increasing."""
    v = known(x)
    if v is not None and _np.any(v[1:] <= v[:-1]):
        raise ValueError(message)


def checked_finite(x, message):
    v = known(x)
    if v is not None and not _np.all(_np.isfinite(v)):
        raise ValueError(message)


class ScipyBacked:
    """The base of the interpolants: an interpolant built from plain values holds SciPy's
    own object in ``_scipy`` and *is* it for every public attribute, read or written
    (``s.extrapolate = False``, ``rgi.fill_value = None`` change SciPy's, as they would
    there), and every method this class does not define (``roots``, ``solve``, ...).
    Built from traced values it holds its own state; SciPy's other methods then raise
    NotImplementedError naming themselves."""
    _scipy = None
    _scipy_class = None
    _supported = "__call__"

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        scipy = self.__dict__.get("_scipy")
        if scipy is not None:
            return getattr(scipy, name)
        if hasattr(self._scipy_class, name):
            raise NotImplementedError(
                f"scipy.interpolate.{type(self).__name__}.{name} is not supported on an "
                f"interpolant built from traced values: wengert differentiates "
                f"{self._supported} (build it from plain values to use SciPy's {name})")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name, value):
        scipy = self.__dict__.get("_scipy")
        if scipy is not None and not name.startswith("_"):
            setattr(scipy, name, value)
        else:
            object.__setattr__(self, name, value)


def flat_queries(xq):
    """The queries as a 1-D float64 array, and their shape (SciPy evaluates at
    ``ascontiguousarray(x.ravel(), dtype=float64)``)."""
    xq = _wnp.asarray(xq)
    if xq.dtype.kind == "c":
        raise TypeError(f"interpolation at complex points ({xq.dtype}) is not supported on "
                        "traced values: the query points are real")
    shape = tuple(xq.shape)
    xq = _wnp.ravel(xq)
    if xq.dtype != _np.float64:
        xq = _wnp.astype(xq, _np.float64)
    return xq, shape


def placed(out, shape, axis):
    """SciPy's shape of an interpolant's values: `out` (queries, *trailing) as
    shape + trailing, with the queries' axes where the interpolation axis was."""
    trailing = tuple(out.shape[1:])
    out = _wnp.reshape(out, shape + trailing)
    if axis:
        nx = len(shape)
        order = list(range(out.ndim))
        order = order[nx:nx + axis] + order[:nx] + order[nx + axis:]
        out = _wnp.transpose(out, order)
    return out


def _column(v, ndim):
    """A vector of queries as (queries, 1, ..., 1), to broadcast against gathered rows."""
    return _wnp.reshape(v, (v.shape[0],) + (1,) * (ndim - 1)) if ndim > 1 else v


def periodic(xq, start, end):
    """The queries mapped into [start, end) by the period end - start, as SciPy maps them."""
    return start + _wnp.remainder(xq - start, end - start)


def outside(xq, start, end):
    return _wnp.logical_or(xq < start, xq > end)


def with_nan(out, mask):
    """out, nan where mask (per query) is true."""
    return _wnp.where(_column(mask, out.ndim), _np.nan, out)


# ---- piecewise polynomials in the power basis ---------------------------------------------------
def falling_factors(degree, nu):
    """The factors that turn the coefficients c[0..degree-nu] of a polynomial
    Σ c[j] d^(degree-j) into those of its nu-th derivative: (degree-j)!/(degree-j-nu)!."""
    return _np.array([math.perm(degree - j, nu) for j in range(degree + 1 - nu)], float)


def ppoly_derivative_coefficients(c, nu):
    """The coefficients of the nu-th derivative of each piece (SciPy's PPoly.derivative):
    c[:-nu] times falling factorials, or one row of zeros once nu passes the degree."""
    degree = c.shape[0] - 1
    if nu == 0:
        return c
    if nu > degree:
        return _wnp.zeros_like(c[:1])
    factors = falling_factors(degree, nu)
    return c[:degree + 1 - nu] * _np.reshape(factors, (-1,) + (1,) * (c.ndim - 1))


def ppoly_evaluate(c, x, xq, nu=0, extrapolate=True):
    """The piecewise polynomial Σ_j c[j, i] (xq - x[i])^(k-j) on [x[i], x[i+1]) (the last
    interval closed), or its nu-th derivative, at the 1-D float queries xq: an array
    (queries, *c.shape[2:]).  x increases.  Beyond the ends the end pieces extrapolate,
    or the value is nan (`extrapolate` False); 'periodic' maps xq into [x[0], x[-1]]."""
    m = x.shape[0] - 1
    if extrapolate == "periodic":
        xq = periodic(xq, x[0], x[m])
        extrapolate = False
    cn = ppoly_derivative_coefficients(c, nu)
    i = _wnp.clip(_wnp.searchsorted(x, xq, side="right") - 1, 0, m - 1)
    d = xq - _wnp.take(x, i)
    rows = _wnp.take(cn, i, axis=1)                     # (k+1, queries, *trailing)
    d = _column(d, rows.ndim - 1)
    out = rows[0]
    for j in range(1, rows.shape[0]):                   # Horner's rule, as SciPy's
        out = out * d + rows[j]
    if not extrapolate:
        out = with_nan(out, outside(xq, x[0], x[m]))
    return out


def ppoly_antiderivative(c, x, nu):
    """The coefficients of the nu-th antiderivative (SciPy's PPoly.antiderivative): each
    piece integrated nu times, the constants chosen so that the result and its first
    nu - 1 derivatives are continuous and vanish at x[0].  One integration at a time: the
    constant of piece i is the integral of the pieces before it, a cumulative sum."""
    for _ in range(nu):
        degree = c.shape[0] - 1
        divisors = _np.arange(degree + 1, 0, -1, dtype=float)
        scaled = c / _np.reshape(divisors, (-1,) + (1,) * (c.ndim - 1))
        # each piece's integral over its interval: the new polynomial at d = x[i+1] - x[i]
        h = _column(x[1:] - x[:-1], c.ndim - 1)
        whole = scaled[0]
        for j in range(1, degree + 1):
            whole = whole * h + scaled[j]
        whole = whole * h
        zero = _wnp.zeros_like(whole[:1])
        constants = _wnp.cumsum(_wnp.concatenate([zero, whole[:-1]], axis=0), axis=0)
        c = _wnp.concatenate([scaled, constants[None]], axis=0)
    return c


# ---- B-splines ----------------------------------------------------------------------------------
def bspline_interval(t, k, xq):
    """The interval l (k <= l < n) of each query, t[l] <= xq < t[l+1], the last one closed
    and the end ones extended (SciPy's, and de Boor's), n = len(t) - k - 1."""
    n = t.shape[0] - k - 1
    return _wnp.clip(_wnp.searchsorted(t, xq, side="right") - 1, k, n - 1)


def bspline_basis(t, k, xq, l, nu=0):
    """The nu-th derivatives at xq of the k + 1 B-splines of degree k that can be nonzero
    on interval l, B_(l-k), ..., B_l: a list of k + 1 arrays shaped like xq.

    The values are de Boor's triangle (Cox-de Boor), the derivatives its recursion
    B'_(i,q) = q (B_(i,q-1) / (t_(i+q) - t_i) - B_(i+1,q-1) / (t_(i+q+1) - t_(i+1))) from
    degree k - nu up.  Every division is by a span holding [t_l, t_(l+1)], which is not
    empty, so knots of any multiplicity (the ends') give no 0/0, nor nan derivatives."""
    if nu > k:
        return [_np.zeros(xq.shape)] * (k + 1)
    knot = {j: _wnp.take(t, l + j) for j in range(-k + 1, k + 1)}
    p = k - nu
    left = {j: xq - knot[1 - j] for j in range(1, p + 1)}
    right = {j: knot[j] - xq for j in range(1, p + 1)}
    values = [_np.ones(xq.shape)]
    for j in range(1, p + 1):
        saved = 0.0
        for r in range(j):
            temp = values[r] / (right[r + 1] + left[j - r])
            values[r] = saved + right[r + 1] * temp
            saved = left[j - r] * temp
        values.append(saved)
    for q in range(p + 1, k + 1):
        raised = []
        for r in range(q + 1):
            term = 0.0
            if r >= 1:
                term = term + values[r - 1] / (knot[r] - knot[r - q])
            if r <= q - 1:
                term = term - values[r] / (knot[r + 1] - knot[r + 1 - q])
            raised.append(q * term)
        values = raised
    return values


def bspline_evaluate(t, c, k, xq, nu=0, extrapolate=True):
    """Σ_i c[i] B_(i,k)(xq) (or its nu-th derivative) at the 1-D float queries xq: an
    array (queries, *c.shape[1:]).  Beyond the base interval [t[k], t[n]] the end pieces
    extrapolate, or the value is nan (`extrapolate` False); 'periodic' maps xq into it."""
    n = t.shape[0] - k - 1
    if extrapolate == "periodic":
        xq = periodic(xq, t[k], t[n])
        extrapolate = False
    l = bspline_interval(t, k, xq)
    basis = bspline_basis(t, k, xq, l, nu)
    out = None
    for r, b in enumerate(basis):
        term = _column(b, c.ndim) * _wnp.take(c, l - k + r, axis=0)
        out = term if out is None else out + term
    if not extrapolate:
        out = with_nan(out, outside(xq, t[k], t[n]))
    return out


def collocation_solve(t, k, sites, intervals, orders, rhs):
    """The coefficients c of the spline of degree k on knots t with Σ_i c[i] B_i^(order_j)
    (site_j) = rhs[j] for every row j: SciPy's collocation system of make_interp_spline,
    banded with k diagonals on each side, solved by `wengert.scipy.linalg.solve_banded`
    (differentiable in t, the sites and rhs).

    `sites` is a list of arrays (rows in order), `orders` the derivative order of each,
    and `intervals` the interval of every row as plain integers, which fix where each
    row's k + 1 entries sit in the band: the band's layout is plain, its numbers traced."""
    nt = rhs.shape[0]
    rows = []
    start = 0
    for s, order in zip(sites, orders):
        s = _wnp.atleast_1d(s)
        size = s.shape[0]
        pieces = bspline_basis(t, k, s, intervals[start:start + size], order)
        rows.append(_wnp.stack(pieces, axis=-1))
        start += size
    entries = _wnp.concatenate([_wnp.zeros((1,))] + [_wnp.ravel(r) for r in rows])
    # where entry (row i, r) of the rows goes in SciPy's band: ab[k + i - j, j], j = l_i - k + r
    i = _np.repeat(_np.arange(nt), k + 1)
    j = _np.repeat(intervals, k + 1) - k + _np.tile(_np.arange(k + 1), nt)
    if _np.any(_np.abs(i - j) > k):
        raise ValueError("the collocation matrix is not banded with k diagonals on each side "
                         "(the knots do not suit the data sites)")
    layout = _np.zeros((2 * k + 1, nt), dtype=_np.intp)
    layout[k + i - j, j] = _np.arange(1, nt * (k + 1) + 1)
    ab = entries[layout]
    return _linalg.solve_banded((k, k), ab, rhs)
