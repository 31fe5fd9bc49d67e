"""SciPy's legacy interp1d: linear, nearest-neighbour, previous/next and spline kinds.

Built from plain values it holds SciPy's own interp1d and answers plain calls with it.
Otherwise its kinds are written with `wengert.numpy` as SciPy computes them: 'linear'
as SciPy's _call_linear (the interval by searchsorted, the slope), 'nearest',
'nearest-up', 'previous' and 'next' as gathers of y (no derivative in the query point
or in x: the value jumps), and the spline kinds through `make_interp_spline`.
"""
from __future__ import annotations

import numpy as _np
import scipy.interpolate as _si

from ... import numpy as _wnp
from ...dual import accepts_duals as _accepts_duals
from . import _core
from ._bspline import make_interp_spline
from ._core import traced as _traced

__all__ = ["interp1d"]

_SPLINE_ORDERS = {"zero": 0, "slinear": 1, "quadratic": 2, "cubic": 3}


def _extrapolating(fill_value):
    return isinstance(fill_value, str) and fill_value == "extrapolate"


def _fill(value, shape, name):
    """A fill value as an array that broadcasts to the trailing shape (SciPy's
    _check_broadcast_up_to, with traced values too), flattened."""
    value = _wnp.asarray(value)
    fits = len(shape) >= value.ndim and all(
        f in (1, t) for t, f in zip(shape[::-1], tuple(value.shape)[::-1]))
    if not fits:
        raise ValueError(f"{name} argument must be able to broadcast up to shape {shape} "
                         f"but had shape {tuple(value.shape)}")
    if value.size != 1 and tuple(value.shape) != shape:
        value = _wnp.broadcast_to(value, shape)
    return _wnp.ravel(value)


class interp1d(_core.ScipyBacked):
    """SciPy's legacy ``interp1d(x, y, kind='linear', axis=-1, copy=True,
    bounds_error=None, fill_value=nan, assume_sorted=False)``, differentiable: kinds
    'linear', 'nearest', 'nearest-up', 'previous', 'next', and the splines 'zero',
    'slinear', 'quadratic', 'cubic' (or an integer order, by `make_interp_spline`);
    `fill_value` a value (traced too), a pair (below, above), or 'extrapolate'.

    Derivatives: 'linear' and the splines in the query points, y and x; 'nearest',
    'nearest-up', 'previous' and 'next' in y (a query takes one value of y: the derivative
    is 1 there), and zero in the query points and x, as the value is piecewise constant.
    The fill values are differentiable where they are used.

    `bounds_error` (by default, True unless `fill_value` is 'extrapolate') is checked on
    the query points' numbers where they are known; under `wg.compile` and `wg.vmap`,
    which trace without numbers, it cannot raise, and a query out of range gives nan.
    With `assume_sorted=False` traced x are sorted by their numbers (an eager call); under
    `wg.compile` by a traced argsort.

    Example: the derivative of a linear interpolant in y is the hat function of each
    knot at the query point:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import interpolate
        >>> x = np.array([0.0, 1.0, 2.0, 3.0])
        >>> wg.grad(lambda y: interpolate.interp1d(x, y)(1.25))(np.zeros(4))
        array([0.  , 0.75, 0.25, 0.  ])
    """

    _scipy_class = _si.interp1d

    def __init__(self, x, y, kind="linear", axis=-1, copy=True, bounds_error=None,
                 fill_value=_np.nan, assume_sorted=False):
        if not _traced(x, y, fill_value):
            self._scipy = _si.interp1d(x, y, kind, axis, copy, bounds_error, fill_value,
                                       assume_sorted)
            return
        if kind in _SPLINE_ORDERS:
            order, kind = _SPLINE_ORDERS[kind], "spline"
        elif isinstance(kind, (int, _np.integer)) and not isinstance(kind, bool):
            order, kind = int(kind), "spline"
        elif kind not in ("linear", "nearest", "nearest-up", "previous", "next"):
            raise NotImplementedError(f"{kind} is unsupported: Use fitpack routines for "
                                      "other types.")
        x, y = _wnp.asarray(x), _wnp.asarray(y)
        if x.ndim != 1:
            raise ValueError("the x array must have exactly one dimension.")
        if y.ndim == 0:
            raise ValueError("the y array must have at least one dimension.")
        self.axis = axis % y.ndim
        if x.shape[0] != y.shape[self.axis]:
            raise ValueError(f"x and y arrays must be equal in length along interpolation "
                             f"axis: x has shape {tuple(x.shape)}, y {tuple(y.shape)} "
                             f"(axis {axis})")
        if not assume_sorted:
            x, y = _sorted(x, y, self.axis)
        if y.dtype.kind not in "fc":
            y = _wnp.astype(y, _np.float64)
        if x.dtype.kind not in "fc":
            x = _wnp.astype(x, _np.float64)
        self.x, self.y, self.bounds_error = x, y, bounds_error
        self._kind, self._spline = kind, None
        self._trailing = tuple(y.shape[:self.axis]) + tuple(y.shape[self.axis + 1:])
        yt = _wnp.moveaxis(y, self.axis, 0)
        self._y = _wnp.reshape(yt, (yt.shape[0], -1))     # (n, rest), as SciPy's _y
        minval = 1
        if kind == "spline":
            minval = order + 1
            self._spline = make_interp_spline(x, self._y, k=order, check_finite=False)
        elif kind in ("previous", "next") and _extrapolating(fill_value):
            if bounds_error:
                raise ValueError("Cannot extrapolate and raise at the same time.")
            self.bounds_error = False
            # SciPy's: the last value beyond the end ('previous'), the first before the
            # start ('next'); nan on the other side
            nan = _np.full(self._trailing, _np.nan)
            fill_value = (nan, _wnp.take(y, -1, self.axis)) if kind == "previous" else \
                (_wnp.take(y, 0, self.axis), nan)
        if x.shape[0] < minval:
            raise ValueError(f"x and y arrays must have at least {minval} entries")
        self.fill_value = fill_value

    @property
    def fill_value(self):
        """The fill value, as given (settable, as SciPy's)."""
        return self._scipy.fill_value if self._scipy is not None else self._fill_value

    @fill_value.setter
    def fill_value(self, fill_value):
        if _extrapolating(fill_value):
            if self.bounds_error:
                raise ValueError("Cannot extrapolate and raise at the same time.")
            self.bounds_error = False
            self._extrapolate = True
        else:
            shape = self._trailing or (1,)
            if isinstance(fill_value, tuple) and len(fill_value) == 2:
                self._below = _fill(fill_value[0], shape, "fill_value (below)")
                self._above = _fill(fill_value[1], shape, "fill_value (above)")
            else:
                self._below = self._above = _fill(fill_value, shape, "fill_value")
            self._extrapolate = False
            if self.bounds_error is None:
                self.bounds_error = True
        self._fill_value = fill_value

    @_accepts_duals
    def __call__(self, x):
        """The interpolant at x: shape of y with the interpolation axis replaced by x's
        shape (SciPy's).

        Example:
            >>> import numpy as np, wengert as wg
            >>> from wengert.scipy import interpolate
            >>> f = interpolate.interp1d([0.0, 1.0, 2.0], [0.0, 2.0, 3.0], kind="quadratic")
            >>> round(float(wg.grad(f)(1.0)), 12)
            1.5
        """
        if self._scipy is not None and not _traced(x):
            return self._scipy(x)
        state = self if self._scipy is None else _State(self._scipy)
        xq, shape = _core.flat_queries(x)
        out = _evaluate(state, xq)
        out = _wnp.reshape(out, shape + state._trailing)
        if state.axis and shape != ():
            nx, ny = len(shape), len(state._trailing)
            order = list(range(nx, nx + state.axis)) + list(range(nx)) + \
                list(range(nx + state.axis, nx + ny))
            out = _wnp.transpose(out, order)
        return out


class _State:
    """What a call at traced points reads, from SciPy's interp1d (built from plain
    values): its sorted x, y as (n, rest), kind, spline and fill values, under the names
    a traced-built interp1d keeps them.  (SciPy 1.17's private attributes.)"""

    def __init__(self, sp):
        from ._bspline import BSpline
        self.x, self.axis, self.bounds_error = sp.x, sp.axis, sp.bounds_error
        self._y, self._trailing = sp._y, tuple(sp._y_extra_shape)
        self._kind, self._spline = sp._kind, None
        if sp._kind == "spline":
            self._spline = BSpline._from_scipy(sp._spline)
            if sp._call is type(sp)._call_nan_spline:
                self._kind = "nan"
        self._extrapolate = sp._extrapolate
        if not sp._extrapolate:
            self._below, self._above = sp._fill_value_below, sp._fill_value_above


def _sorted(x, y, axis):
    """x and y in the order of increasing x (a stable sort, SciPy's mergesort)."""
    v = _core.known(x)
    if v is not None:
        order = _np.argsort(v, kind="mergesort")
        if _np.all(order == _np.arange(order.size)):
            return x, y
    else:
        order = _wnp.argsort(x)            # (traced without numbers: recorded)
    return _wnp.take(x, order), _wnp.take(y, order, axis=axis)


def _evaluate(state, xq):
    """The interpolant at the 1-D queries: (queries, rest), SciPy's _evaluate."""
    x, y, n = state.x, state._y, state.x.shape[0]
    kind = state._kind
    if kind == "linear":
        # SciPy's _call_linear: the interval on the left of x[i] for xq == x[i]
        hi = _wnp.clip(_wnp.searchsorted(x, xq), 1, n - 1)
        lo = hi - 1
        x_lo, x_hi = _wnp.take(x, lo), _wnp.take(x, hi)
        y_lo, y_hi = _wnp.take(y, lo, axis=0), _wnp.take(y, hi, axis=0)
        slope = (y_hi - y_lo) / (x_hi - x_lo)[:, None]
        out = slope * (xq - x_lo)[:, None] + y_lo
    elif kind in ("nearest", "nearest-up"):
        halfway = x / 2.0
        halfway = halfway[1:] + halfway[:-1]
        side = "left" if kind == "nearest" else "right"
        i = _wnp.clip(_wnp.searchsorted(halfway, xq, side=side), 0, n - 1)
        out = _wnp.take(y, i, axis=0)
    elif kind in ("previous", "next"):
        if kind == "previous":
            shifted, side, shift = _wnp.nextafter(x, -_np.inf), "left", 0
        else:
            shifted, side, shift = _wnp.nextafter(x, _np.inf), "right", 1
        i = _wnp.clip(_wnp.searchsorted(shifted, xq, side=side), 1 - shift, n - shift)
        out = _wnp.take(y, i + shift - 1, axis=0)
    elif kind == "spline":
        out = state._spline(xq)
    else:                       # ('nan': SciPy's spline of data holding a nan)
        out = state._spline(xq) * _np.nan
    if state._extrapolate:
        return out
    below, above = xq < x[0], xq > x[n - 1]
    bv, av = _core.known(below), _core.known(above)
    if state.bounds_error and bv is not None and av is not None:
        xv, x0, x1 = _core.known(xq), _core.known(x[0]), _core.known(x[n - 1])
        if bv.any():
            raise ValueError(f"A value ({xv[_np.argmax(bv)]}) in x_new is below the "
                             f"interpolation range's minimum value ({x0}).")
        if av.any():
            raise ValueError(f"A value ({xv[_np.argmax(av)]}) in x_new is above the "
                             f"interpolation range's maximum value ({x1}).")
    if state.bounds_error:
        # (no numbers to check: a query out of range is nan, not an extrapolation)
        return _wnp.where(_wnp.logical_or(below, above)[:, None], _np.nan, out)
    out = _wnp.where(below[:, None], state._below, out)
    return _wnp.where(above[:, None], state._above, out)
