"""SciPy's `scipy.ndimage.map_coordinates`, differentiable: an array sampled at
fractional coordinates by nearest-neighbour (order 0) or linear (order 1) interpolation,
for image warping, resampling and registration fitted by gradient descent.

On plain values it *is* SciPy's.  On traced values it is written with `wengert.numpy`
(floor, gathers by `take`, `where`), so the derivatives come from their rules: in the
input (each sample's weight, scattered back), in the coordinates (piecewise constant: the
difference of the two neighbours along each axis, times the other axes' weights), and in
`cval`.  The values are SciPy's for every mode SciPy has ('constant', 'grid-constant',
'nearest', 'reflect', 'grid-mirror', 'mirror', 'grid-wrap', 'wrap').  JAX's
`jax.scipy.ndimage.map_coordinates` reads 'constant' and 'wrap' as SciPy's 'grid-constant'
and 'grid-wrap' (JAX's note on SciPy issue 2640): here each mode means what it means in
SciPy, so a JAX program that relies on JAX's reading passes the 'grid-' name.

Example: the image x sampled between its pixels, and the derivative of that sample in
its coordinates (the image's slopes along each axis there):

    >>> import numpy as np, wengert as wg
    >>> from wengert.scipy import ndimage
    >>> image = np.arange(12.0).reshape(3, 4)
    >>> ndimage.map_coordinates(image, [[0.5], [1.5]], order=1)
    array([3.5])
    >>> wg.grad(lambda c: ndimage.map_coordinates(image, c, order=1)[0])(np.array([[0.5], [1.5]]))
    array([[4.],
           [1.]])
"""
from __future__ import annotations

import functools
import itertools

import numpy as _np
import scipy.ndimage as _nd

from .. import numpy as _wnp
from ..numpy import _traced

__all__ = ["map_coordinates"]

MODES = ("constant", "grid-constant", "nearest", "reflect", "grid-mirror", "mirror",
         "grid-wrap", "wrap")

_UNSET = object()


def _jax_positional(output, order, mode, cval):
    """(output, order, mode, cval) of a call with SciPy's or JAX's arguments.  JAX's
    signature is map_coordinates(input, coordinates, order, mode, cval): an integer in
    SciPy's place of `output` (which is a dtype or an array) is JAX's order, and the
    arguments after it by position are JAX's mode and cval."""
    if isinstance(output, (int, _np.integer)) and not isinstance(output, (bool, _np.bool_)):
        if isinstance(order, str):          # JAX's mode by position, and then its cval
            order, mode, cval = output, order, (cval if mode is _UNSET else mode)
        else:
            order = output
        output = None
    order = 3 if order is _UNSET else order         # (SciPy's default: JAX has none)
    return output, order, ("constant" if mode is _UNSET else mode), \
        (0.0 if cval is _UNSET else cval)


def map_coordinates(input, coordinates, output=None, order=_UNSET, mode=_UNSET, cval=_UNSET,
                    prefilter=True):
    """The input array sampled at `coordinates` (shape (input.ndim, ...): one row per
    axis of the input; the result has the shape of a row) by interpolation of `order`
    0 (the nearest sample, ties rounded up as SciPy does) or 1 (linear in each axis),
    beyond the edges as `mode` says:

    - 'constant': `cval` outside [0, n - 1] on any axis, no interpolation across the edge;
      'grid-constant': the input padded with `cval`, interpolated across the edge (JAX's
      'constant');
    - 'nearest': the edge sample repeated;
    - 'reflect' (= 'grid-mirror'): reflected about the edge, the edge sample repeated
      (d c b a | a b c d | d c b a); 'mirror': about the edge sample (d c b | a b c d | c b a);
    - 'grid-wrap': periodic with period n (JAX's 'wrap'); 'wrap': SciPy's, whose period
      is n - 1, the first and last samples meeting at one point.

    Called as SciPy's, ``map_coordinates(input, coordinates, output=None, order=3,
    mode='constant', cval=0.0, prefilter=True)``, or as JAX's, ``map_coordinates(input,
    coordinates, order, mode, cval)`` (an integer third argument is JAX's order).  On
    traced values, `output` may be a dtype (an array to write into is refused), and orders
    above 1 (SciPy's splines, its default 3) are refused, as JAX refuses them.

    Differentiable in input, coordinates and cval.  In the coordinates the derivative of
    linear interpolation is piecewise constant: at an integer coordinate it is the slope
    on its right, x[i+1] - x[i] (JAX's, from floor), but where SciPy's 'constant' and
    'wrap' jump (at n - 1, and at wrap's seams), the slope of the piece the value belongs
    to.  Order 0 has derivative 0 in the coordinates.

    Example: a bilinear sample's gradient in the image is its four weights:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import ndimage
        >>> sample = lambda im: ndimage.map_coordinates(im, [[0.25], [0.5]], 1)[0]
        >>> wg.grad(sample)(np.zeros((2, 2)))
        array([[0.375, 0.375],
               [0.125, 0.125]])
    """
    output, order, mode, cval = _jax_positional(output, order, mode, cval)
    if not _traced(input, coordinates, cval):
        return _nd.map_coordinates(input, coordinates, output=output, order=order, mode=mode,
                                   cval=cval, prefilter=prefilter)
    return _traced_map_coordinates(input, coordinates, output, order, mode, cval)


def _traced_map_coordinates(input, coordinates, output, order, mode, cval):
    input = _wnp.asarray(input)
    if input.ndim == 0:
        raise ValueError("map_coordinates: the input must have at least one axis, got a "
                         "0-d array")
    if input.dtype.kind not in "biufc":
        raise TypeError(f"map_coordinates: the input must be numbers, not {input.dtype}")
    coordinates = _coordinates(coordinates, input.shape)
    if mode not in MODES:
        raise ValueError(f"map_coordinates: mode must be one of {', '.join(MODES)}; got "
                         f"{mode!r}")
    if isinstance(order, (bool, _np.bool_)) or not isinstance(order, (int, _np.integer)) \
            or not 0 <= order <= 5:
        raise ValueError(f"map_coordinates: order must be an integer from 0 to 5 (1 or 0 "
                         f"on traced values), got {order!r}")
    if order > 1:
        raise NotImplementedError(
            f"map_coordinates: order {order} (SciPy's spline interpolation"
            f"{', its default' if order == 3 else ''}) is not supported on traced values, as "
            "JAX's jax.scipy.ndimage.map_coordinates supports only order 0 and 1: pass "
            "order=1 (linear) or order=0 (nearest); for smooth interpolation on a grid, "
            "wengert.scipy.interpolate.RegularGridInterpolator(..., method='cubic') is "
            "differentiable (with its own, not-a-knot, boundaries)")
    dtype = _result_dtype(input, output)
    nodes = [_neighbours(c, n, order, mode) for c, n in zip(coordinates, input.shape)]
    strides = [int(_np.prod(input.shape[d + 1:])) for d in range(input.ndim)]
    flat = _wnp.ravel(input)
    total = None
    for corner in itertools.product(*nodes):
        index = sum(i * s for (i, _, _), s in zip(corner, strides))
        sample = _wnp.take(flat, index)
        valid = [v for _, _, v in corner if v is not None]
        if valid:                           # 'grid-constant': cval where a sample is off
            sample = _wnp.where(functools.reduce(_wnp.logical_and, valid), sample, cval)
        weights = [w for _, w, _ in corner if w is not None]
        term = sample * functools.reduce(lambda a, b: a * b, weights) if weights else sample
        total = term if total is None else total + term
    if mode == "constant":                  # cval off [0, n - 1] on any axis
        inside = functools.reduce(_wnp.logical_and, [(c >= 0) & (c <= n - 1) for c, n in
                                                     zip(coordinates, input.shape)])
        total = _wnp.where(inside, total, cval)
    if dtype.kind in "iub":                 # SciPy's: rounded half away from zero
        total = _wnp.sign(total) * _wnp.floor(_wnp.abs(total) + 0.5)
    return total.astype(dtype)


def _coordinates(coordinates, shape):
    """The coordinates as a list of float64 arrays, one per axis of an input of `shape`,
    with an error that names both shapes."""
    if isinstance(coordinates, (list, tuple)):
        rows = [_wnp.asarray(c) for c in coordinates]
        if len({r.shape for r in rows}) > 1:
            raise ValueError("map_coordinates: the coordinates along each axis must have one "
                             f"shape, got {[r.shape for r in rows]}")
        coordinates = _wnp.stack(rows) if rows else _wnp.asarray(_np.zeros((0,)))
    coordinates = _wnp.asarray(coordinates)
    if coordinates.ndim == 0 or coordinates.shape[0] != len(shape):
        raise ValueError(f"map_coordinates: coordinates must have one row per axis of the "
                         f"input, shape ({len(shape)}, ...) for an input of shape {shape}; "
                         f"got coordinates of shape {coordinates.shape}")
    if coordinates.dtype.kind not in "biuf":
        raise TypeError(f"map_coordinates: coordinates must be real numbers, not "
                        f"{coordinates.dtype}")
    return [coordinates[d].astype(_np.float64) for d in range(len(shape))]


def _result_dtype(input, output):
    if output is None:
        return input.dtype
    if isinstance(output, _np.ndarray) or _traced(output):
        raise NotImplementedError("map_coordinates(..., output=array) is not supported on "
                                  "traced values: a traced value cannot be written into an "
                                  "array; pass a dtype, or use the result")
    return _np.dtype(output)


# ---- one axis: the samples interpolation reads, with their weights ----------------------
def _neighbours(c, n, order, mode):
    """[(index, weight, valid)]: the samples along one axis of length n that
    interpolation at the coordinates c reads, as int64 indices into [0, n), their
    weights (None: 1) and, for 'grid-constant', where the sample is inside (None:
    everywhere)."""
    if order == 0:
        # SciPy rounds the coordinate once it is brought into the array (ties up, as
        # floor(c + 0.5), in floating point), so reflections and SciPy's wrap come first
        if mode in ("reflect", "grid-mirror"):
            c = _reflected(c, n)
        elif mode == "mirror":
            c = _mirrored(c, n)
        elif mode == "wrap":
            c = _wrapped(c, n)
        index, valid = _fixed(_wnp.floor(c + 0.5), n, mode)
        return [(index, None, valid)]
    if mode in ("constant", "wrap"):
        # the piece [lo, lo + 1] inside [0, n - 1] that holds c (SciPy's wrap brings c
        # into it first): at n - 1 the one on its left, as these modes jump there
        if mode == "wrap":
            c = _wrapped(c, n)
        lo = _wnp.clip(_wnp.floor(c), 0, max(n - 2, 0))
        w = c - lo
        return [(_index(lo), 1 - w, None), (_index(_wnp.minimum(lo + 1, n - 1)), w, None)]
    lo = _wnp.floor(c)                      # (floor: the right-hand slope at an integer)
    w = c - lo
    (i0, v0), (i1, v1) = _fixed(lo, n, mode), _fixed(lo + 1, n, mode)
    return [(i0, 1 - w, v0), (i1, w, v1)]


def _fixed(i, n, mode):
    """(int64 index into [0, n), validity or None) of the integer-valued float i."""
    valid = None
    if mode in ("reflect", "grid-mirror"):          # period 2n: a b c d | d c b a
        r = _wnp.remainder(i, 2 * n)
        i = _wnp.where(r >= n, 2 * n - 1 - r, r)
    elif mode == "mirror":                          # period 2n - 2: a b c d | c b
        if n == 1:
            return _index(i * 0), None
        r = _wnp.remainder(i, 2 * n - 2)
        i = _wnp.where(r >= n, 2 * n - 2 - r, r)
    elif mode == "grid-wrap":
        i = _wnp.remainder(i, n)
    elif mode == "grid-constant":
        valid = (i >= 0) & (i <= n - 1)
    return _index(_wnp.clip(i, 0, n - 1)), valid


def _index(i):
    # (nan, from a nan coordinate, as index 0: its weight is nan, and so is the result)
    return _wnp.where(_wnp.isnan(i), 0.0, i).astype(_np.int64)


def _reflected(c, n):
    """The coordinate reflected into [-1/2, n - 1/2] about the array's half-sample edges."""
    r = _wnp.remainder(c + 0.5, 2 * n) - 0.5
    return _wnp.where(r > n - 0.5, 2 * n - 1 - r, r)


def _mirrored(c, n):
    """The coordinate reflected about the first and last samples into [0, n - 1] from
    below, and into [0, n) from above, where SciPy leaves (n - 1, n): rounded there to n,
    it reads the sample at n - 2, as the index is mirrored in turn."""
    if n == 1:
        return c * 0
    period = 2 * n - 2
    r = _wnp.remainder(_wnp.abs(c), period)
    folded = _wnp.where(r >= _wnp.where(c < 0, n - 1, n), period - r, r)
    return _wnp.where((c < 0) | (c > n - 1), folded, c)


def _wrapped(c, n):
    """SciPy's 'wrap': the coordinate moved by a multiple of n - 1 into [0, n - 1], a
    negative one into (0, n - 1] and one beyond n - 1 into [0, n - 1)."""
    if n == 1:
        return c * 0
    p = n - 1
    turns = _wnp.where(c < 0, _wnp.floor(-c / p) + 1, _wnp.where(c > p, -_wnp.floor(c / p), 0.0))
    return c + turns * p
