"""Interpolation on a rectilinear grid in N dimensions: SciPy's RegularGridInterpolator and
interpn.

Every method is a sum over the corners of the cell (or the (k+1)^N coefficients of a
tensor-product spline) around each query: one gather of (queries, corners) entries of the
values (or coefficients) and one weighted sum, whatever N (`_tensor_sum`).  The weights
are products of 1-D ones: the normalised distances for 'linear', 1 at the nearest corner
for 'nearest', the B-spline basis for the splines ('slinear', 'cubic', 'quintic').

Spline coefficients from traced values solve the collocation system exactly, one banded
solve along each axis (the tensor-product system is the Kronecker product of the 1-D
ones); SciPy's own solves the whole system iteratively (gcrotmk, atol 1e-6), so its
numbers agree with these to that tolerance.  From plain values the coefficients are
SciPy's, and a call at traced points evaluates SciPy's spline.
"""
from __future__ import annotations

import operator

import numpy as _np
import scipy.interpolate as _si

from ... import numpy as _wnp
from ...dual import accepts_duals as _accepts_duals
from . import _core
from ._bspline import _not_a_knot
from ._core import traced as _traced

__all__ = ["RegularGridInterpolator", "interpn"]

_DEGREES = {"slinear": 1, "cubic": 3, "quintic": 5, "slinear_legacy": 1, "cubic_legacy": 3,
            "quintic_legacy": 5, "pchip": 3}
_METHODS = ["linear", "nearest"] + list(_DEGREES)
_NDBSPL = ("slinear", "cubic", "quintic")


def _grid(points):
    """The grid's axes as float arrays in increasing order, and the axes given descending
    (SciPy's _check_points, on traced points too: the order is read from their numbers,
    where they are known)."""
    grid, descending = [], []
    for i, p in enumerate(points):
        p = _wnp.asarray(p)
        if p.dtype != _np.float64:
            p = _wnp.astype(p, _np.float64)
        v = _core.known(p)
        if v is not None and not _np.all(v[1:] > v[:-1]):
            if _np.all(v[1:] < v[:-1]):
                descending.append(i)
                p = _wnp.flip(p, 0)
            else:
                raise ValueError(f"The points in dimension {i} must be strictly ascending or "
                                 "descending")
        grid.append(p)
    return tuple(grid), tuple(descending)


def _check_dimensionality(grid, values):
    if len(grid) > values.ndim:
        raise ValueError(f"There are {len(grid)} point arrays, but values has {values.ndim} "
                         "dimensions")
    for i, p in enumerate(grid):
        if p.ndim != 1:
            raise ValueError(f"The points in dimension {i} must be 1-dimensional")
        if values.shape[i] != p.shape[0]:
            raise ValueError(f"There are {p.shape[0]} points and {values.shape[i]} values in "
                             f"dimension {i} (values has shape {tuple(values.shape)})")


def _check_degree(grid, method):
    k = _DEGREES[method]
    for i, p in enumerate(grid):
        if p.shape[0] <= k:
            raise ValueError(f"There are {p.shape[0]} points in dimension {i}, but method "
                             f"{method} requires at least  {k + 1} points per dimension.")


def _spline_coefficients(grid, values, k):
    """The knots (not-a-knot, per axis) and coefficients of the tensor-product spline of
    degree k through the values on the grid: one collocation solve along each axis."""
    knots = []
    c = values
    for d, p in enumerate(grid):
        n = p.shape[0]
        t = _not_a_knot(p, k)
        proxy = _not_a_knot(_np.arange(n, dtype=float), k)
        intervals = _np.clip(_np.searchsorted(proxy, _np.arange(n, dtype=float), "right") - 1,
                             k, n - 1)
        moved = _wnp.moveaxis(c, d, 0)
        shape = tuple(moved.shape)
        rhs = _wnp.reshape(moved, (n, -1))
        solved = _core.collocation_solve(t, k, [p], intervals, [0], rhs)
        c = _wnp.moveaxis(_wnp.reshape(solved, shape), 0, d)
        knots.append(t)
    return tuple(knots), c


def _tensor_sum(c, indices, weights):
    """Σ over the corners (one index and weight per axis each) of weight × c[corner], for
    every query: c (n_1, ..., n_D, *trailing); indices[d] and weights[d] are lists of
    arrays (queries,), one per offset along axis d.  One gather of all corners."""
    dims = len(indices)
    strides = _np.cumprod((1,) + tuple(c.shape[1:dims])[::-1])[::-1]
    flat_index, flat_weight = None, None
    for d in range(dims):
        shape = (-1,) + (1,) * d + (len(indices[d]),) + (1,) * (dims - d - 1)
        i = _wnp.reshape(_wnp.stack(indices[d], axis=1) * int(strides[d]), shape)
        w = _wnp.reshape(_wnp.stack(weights[d], axis=1), shape)
        flat_index = i if flat_index is None else flat_index + i
        flat_weight = w if flat_weight is None else flat_weight * w
    m = flat_index.shape[0]
    corners = int(_np.prod(flat_index.shape[1:]))
    trailing = tuple(c.shape[dims:])
    table = _wnp.reshape(c, (-1, int(_np.prod(trailing))))
    gathered = _wnp.take(table, _wnp.reshape(flat_index, (-1,)), axis=0)
    gathered = _wnp.reshape(gathered, (m, corners, table.shape[1]))
    return _wnp.sum(_wnp.reshape(flat_weight, (m, corners, 1)) * gathered, axis=1)


def _coordinates(xi, ndim):
    """SciPy's _ndim_coords_from_arrays: a tuple of coordinate arrays (broadcast and
    stacked), or an array (..., ndim); a 1-D array is one point per ndim numbers."""
    if isinstance(xi, tuple) and len(xi) == 1:
        xi = xi[0]
    if isinstance(xi, tuple):
        arrays = [_wnp.asarray(p) for p in xi]
        shape = _np.broadcast_shapes(*[tuple(p.shape) for p in arrays])
        xi = _wnp.stack([_wnp.broadcast_to(p, shape) for p in arrays], axis=-1)
    else:
        xi = _wnp.asarray(xi)
        if xi.ndim == 1:
            xi = _wnp.reshape(xi, (-1, ndim))
    return xi


class RegularGridInterpolator(_core.ScipyBacked):
    """Interpolation on a rectilinear grid in N dimensions, as SciPy's
    ``RegularGridInterpolator(points, values, method='linear', bounds_error=True,
    fill_value=nan)``: methods 'linear', 'nearest', and the tensor-product splines
    'slinear', 'cubic', 'quintic' (and their '_legacy' names, the same interpolant);
    `fill_value` None extrapolates.

    Differentiable in the query points, the values and the grid points, to any order
    ('nearest' in the values only: it is piecewise constant in the others).  Spline
    derivatives ``nu`` in the call work as SciPy's.  On traced values 'pchip' (SciPy's
    point-by-point recursion) is refused (NotImplementedError), and the splines'
    coefficients are solved exactly, one banded solve per axis (`solver` and
    `solver_args`, SciPy's choice of iterative solver, are not used), where SciPy's own
    'cubic' and 'quintic' iterate to a tolerance of 1e-6 (its '_legacy' methods are
    exact, as ``solver=scipy.sparse.linalg.spsolve`` is).  `bounds_error` is checked on
    the query points' numbers where they are known; under `wg.compile` and `wg.vmap` a
    query out of bounds gives nan.

    Example: the derivative of a bilinear interpolant in its values is the four corner
    weights of the query's cell:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import interpolate
        >>> grid = (np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0]))
        >>> f = lambda v: interpolate.RegularGridInterpolator(grid, v)([0.5, 0.25])[0]
        >>> wg.grad(f)(np.zeros((3, 2)))
        array([[0.375, 0.125],
               [0.375, 0.125],
               [0.   , 0.   ]])
    """

    _scipy_class = _si.RegularGridInterpolator

    def __init__(self, points, values, method="linear", bounds_error=True,
                 fill_value=_np.nan, *, solver=None, solver_args=None):
        if not _traced(points, values, fill_value):
            self._scipy = _si.RegularGridInterpolator(points, values, method, bounds_error,
                                                      fill_value, solver=solver,
                                                      solver_args=solver_args)
            return
        if method not in _METHODS:
            raise ValueError(f"Method '{method}' is not defined")
        _refuse_on_traced(method)
        if method not in _NDBSPL and (solver is not None or solver_args):
            raise ValueError(f"method = {method!r} does not accept the 'solver' argument. Got "
                             f" solver = {solver!r} and with arguments {solver_args}.")
        self.method, self.bounds_error = method, bounds_error
        self._grid, descending = _grid(points)
        values = _wnp.asarray(values)
        if values.dtype.kind not in "fc":
            values = _wnp.astype(values, _np.float64)
        _check_dimensionality(self._grid, values)
        if method in _DEGREES:
            _check_degree(self._grid, method)
        if fill_value is not None and not _traced(fill_value):
            if not _np.can_cast(_np.asarray(fill_value).dtype, values.dtype, "same_kind"):
                raise ValueError("fill_value must be either 'None' or of a type compatible "
                                 "with values")
        self.fill_value = fill_value
        if descending:
            values = _wnp.flip(values, descending)
        self._values = values
        self._splines = {}

    @property
    def grid(self):
        """The grid points of each axis (increasing)."""
        return self._scipy.grid if self._scipy is not None else self._grid

    @property
    def values(self):
        """The values on the grid (axes given descending flipped)."""
        return self._scipy.values if self._scipy is not None else self._values

    def _data(self):
        """The grid (increasing) and the values, SciPy's own where it holds them."""
        if self._scipy is not None:
            return self._scipy._grid, self._scipy._values
        return self._grid, self._values

    def _spline(self, method):
        """(knots, coefficients, degree) of the tensor-product spline for `method`."""
        k = _DEGREES[method]
        if self._scipy is not None and method in _NDBSPL:
            sp = self._scipy
            spl = sp._spline if method == sp.method else sp._construct_spline(method)
            return tuple(spl.t), spl.c, k
        cache = self.__dict__.setdefault("_splines", {})
        if k not in cache:
            cache[k] = _spline_coefficients(*self._data(), k)
        return cache[k] + (k,)

    @_accepts_duals
    def __call__(self, xi, method=None, *, nu=None):
        """The interpolant at the points xi (shape (..., ndim), or a tuple of coordinate
        arrays): shape xi.shape[:-1] + values.shape[ndim:] (SciPy's).  `method` overrides
        the interpolator's; `nu` (one derivative order per axis) is for the splines.

        Example:
            >>> import numpy as np, wengert as wg
            >>> from wengert.scipy import interpolate
            >>> x = np.linspace(0.0, 1.0, 5)
            >>> f = interpolate.RegularGridInterpolator((x, x), np.add.outer(x, 2 * x))
            >>> wg.grad(lambda p: f(p)[0])(np.array([0.3, 0.6]))      # ∇(x + 2y)
            array([1., 2.])
        """
        if self._scipy is not None and not _traced(xi):
            return self._scipy(xi, method, nu=nu)
        method = self.method if method is None else method
        if method not in _METHODS:
            raise ValueError(f"Method '{method}' is not defined")
        _refuse_on_traced(method)
        if nu is not None and method not in _NDBSPL:
            raise ValueError(f"Can only compute derivatives for methods {set(_NDBSPL)}, got "
                             f"method = {method!r}.")
        grid, values = self._data()
        if method != self.method and method in _DEGREES:
            _check_degree(grid, method)
        ndim = len(grid)
        xi = _coordinates(xi, ndim)
        if xi.ndim == 0:
            raise ValueError(f"The requested sample points xi are one number; give points of "
                             f"shape (..., {ndim}) (SciPy raises IndexError)")
        if xi.shape[-1] != ndim:
            raise ValueError(f"The requested sample points xi have dimension {xi.shape[-1]} "
                             f"but this RegularGridInterpolator has dimension {ndim}")
        shape = tuple(xi.shape)
        xi = _wnp.reshape(xi, (-1, ndim))
        if xi.dtype != _np.float64:
            xi = _wnp.astype(xi, _np.float64)
        coords = [xi[:, d] for d in range(ndim)]
        out_of_bounds = None
        for d, (x, p) in enumerate(zip(coords, grid)):
            o = _core.outside(x, p[0], p[-1])
            out_of_bounds = o if out_of_bounds is None else _wnp.logical_or(out_of_bounds, o)
            v = _core.known(o)
            if self.bounds_error and v is not None and v.any():
                raise ValueError(f"One of the requested xi is out of bounds in dimension {d}")
        if method in ("linear", "nearest"):
            result = _piecewise_linear(grid, values, coords, method)
        else:
            knots, c, k = self._spline(method)
            if nu is None:
                nu = (0,) * ndim
            if len(nu) != ndim:
                raise ValueError(f"invalid number of derivative orders nu = {nu!r} for "
                                 f"{ndim} dimensions")
            indices, weights = [], []
            for x, t, order in zip(coords, knots, nu):
                order = operator.index(order)
                if order < 0:
                    raise ValueError(f"derivatives must be positive, got nu = {nu!r}")
                l = _core.bspline_interval(t, k, x)
                indices.append([l - k + r for r in range(k + 1)])
                weights.append(_core.bspline_basis(t, k, x, l, order))
            result = _tensor_sum(c, indices, weights)
        fill = self.fill_value
        if self.bounds_error:
            # (a query out of bounds whose numbers are unknown: nan, not an extrapolation)
            result = _core.with_nan(result, out_of_bounds)
        elif fill is not None:
            result = _wnp.where(out_of_bounds[:, None], fill, result)
        result = _core.with_nan(result, _wnp.any(_wnp.isnan(xi), axis=-1))
        return _wnp.reshape(result, shape[:-1] + tuple(values.shape[ndim:]))


def _piecewise_linear(grid, values, coords, method):
    """'linear' and 'nearest': the cell's corners and their weights along each axis."""
    indices, weights = [], []
    for x, p in zip(coords, grid):
        n = p.shape[0]
        # SciPy's find_indices: the cell [p_i, p_(i+1)] with p_i < x <= p_(i+1), the
        # end cells extended; the distance into it, normalised
        i = _wnp.clip(_wnp.searchsorted(p, x) - 1, 0, n - 2)
        lo = _wnp.take(p, i)
        s = (x - lo) / (_wnp.take(p, i + 1) - lo)
        if method == "linear":
            indices.append([i, i + 1])
            weights.append([1.0 - s, s])
        else:
            indices.append([_wnp.where(s <= 0.5, i, i + 1)])
            weights.append([_np.ones(x.shape)])
    return _tensor_sum(values, indices, weights)


def _refuse_on_traced(method):
    if method == "pchip":
        raise NotImplementedError(
            "RegularGridInterpolator(..., method='pchip') is not supported on traced values "
            "(SciPy's is a recursion point by point): use 'linear', 'nearest', 'slinear', "
            "'cubic' or 'quintic'")


@_accepts_duals
def interpn(points, values, xi, method="linear", bounds_error=True, fill_value=_np.nan):
    """SciPy's ``interpn(points, values, xi, method='linear', bounds_error=True,
    fill_value=nan)``: `RegularGridInterpolator(points, values, method, bounds_error,
    fill_value)(xi)`, differentiable as it is; 'splinef2d' and 'pchip' are refused on
    traced values.

    Example: trilinear interpolation reproduces a linear function, whose gradient in the
    point is its coefficients:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import interpolate
        >>> g = (np.linspace(0, 4, 5), np.linspace(0, 5, 6), np.linspace(0, 6, 7))
        >>> v = 2 * g[0][:, None, None] + 3 * g[1][None, :, None] - g[2][None, None, :]
        >>> wg.grad(lambda p: interpolate.interpn(g, v, p)[0])(np.array([2.2, 3.1, 1.2]))
        array([ 2.,  3., -1.])
    """
    if not _traced(points, values, xi, fill_value):
        return _si.interpn(points, values, xi, method, bounds_error, fill_value)
    if method == "splinef2d":
        raise NotImplementedError("interpn(..., method='splinef2d') is not supported on "
                                  "traced values (FITPACK's): use 'cubic'")
    if method not in _METHODS:
        raise ValueError("interpn only understands the methods 'linear', 'nearest', "
                         "'slinear', 'cubic', 'quintic', 'pchip', and 'splinef2d'. You "
                         f"provided {method}.")
    return RegularGridInterpolator(points, values, method, bounds_error, fill_value)(xi)
