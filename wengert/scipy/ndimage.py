"""SciPy's `scipy.ndimage`, differentiable: the linear filters (`correlate1d`,
`convolve1d`, `correlate`, `convolve`, `gaussian_filter1d`, `gaussian_filter`,
`gaussian_laplace`, `gaussian_gradient_magnitude`, `uniform_filter1d`, `uniform_filter`,
`sobel`, `prewitt`, `laplace`), the resampling ones (`map_coordinates`, `shift`,
`zoom`, at every order SciPy has, 0 to 5) and the B-spline prefilter (`spline_filter1d`,
`spline_filter`), for image models fitted by gradient descent: blurs, edge detectors,
denoising, warping and registration.

On plain values each *is* SciPy's.  On traced values each is written with
`wengert.numpy` and two primitives:

* a filter along an axis pads the array as its boundary mode says ('reflect', the
  default, 'constant' with `cval`, 'nearest', 'mirror', 'wrap', and the 'grid-' names),
  by a gather (`take` with an index array computed with NumPy, of any width, wider than
  the array too) or constants concatenated, and then takes the valid correlation
  Σ_k w_k x[i + k], the primitive `correlate_valid` (wengert/primitives/ndimage.py),
  evaluated by SciPy's own code.  The derivatives come from the rules: in the input the
  correlation's transpose, its edges folded back by the gather's; in the weights (traced
  weights too), in `cval`, and in a Gaussian's `sigma`, through the kernel.
* `map_coordinates` is written with `floor`, gathers by `take` and `where`, so the
  derivatives come from their rules: in the input (each sample's weight, scattered back),
  in the coordinates, and in `cval`.  At orders 0 and 1 the derivative in the
  coordinates is piecewise constant (the difference of the two neighbours along each
  axis, times the other axes' weights).  At orders 2 to 5 (SciPy's B-splines, its default
  3) the input is first prefiltered into the spline's coefficients (a linear map along
  each axis: a banded solve, `wengert.scipy.linalg.solve_banded`, or on short lines the
  matrix of SciPy's own filter), and each point reads order + 1 coefficients per axis
  with the weights of the primitive `bspline_weights` (wengert/primitives/ndimage.py),
  whose derivative in the coordinate is the spline's, smooth.  The values are SciPy's
  for every mode SciPy has.  JAX's `jax.scipy.ndimage.map_coordinates` (orders 0 and 1)
  reads 'constant' and 'wrap' as SciPy's 'grid-constant' and 'grid-wrap' (JAX's note on
  SciPy issue 2640): here each mode means what it means in SciPy, so a JAX program that
  relies on JAX's reading passes the 'grid-' name.  `shift` and `zoom` are
  map_coordinates on a grid.

The rest of scipy.ndimage (`median_filter`, `label`, `rotate`, ...) is SciPy's on plain
values and raises NotImplementedError naming itself on traced values.

Example: a Gaussian blur, and its derivative in the blur's width:

    >>> import numpy as np, wengert as wg
    >>> from wengert.scipy import ndimage
    >>> spike = np.array([0.0, 0.0, 1.0, 0.0, 0.0])
    >>> ndimage.gaussian_filter(spike, 1.0).round(4)
    array([0.0584, 0.2421, 0.3989, 0.2421, 0.0584])
    >>> round(float(wg.grad(lambda s: ndimage.gaussian_filter(spike, s)[2])(1.0)), 4)
    -0.3989

and the image x sampled between its pixels, and the derivative of that sample in its
coordinates (the image's slopes along each axis there):

    >>> image = np.arange(12.0).reshape(3, 4)
    >>> ndimage.map_coordinates(image, [[0.5], [1.5]], order=1)
    array([3.5])
    >>> wg.grad(lambda c: ndimage.map_coordinates(image, c, order=1)[0])(np.array([[0.5], [1.5]]))
    array([[4.],
           [1.]])
"""
from __future__ import annotations

import fractions as _fractions
import functools
import itertools
import numbers as _numbers
import operator as _operator
import warnings as _warnings

import numpy as _np
import scipy.ndimage as _nd
from scipy.linalg import solve_banded as _sl_solve_banded
from numpy.lib.array_utils import normalize_axis_index as _np_normalize_axis_index

from .. import numpy as _wnp
from ..errors import ConcretizationError as _ConcretizationError
from ..graph.node import Node as _Node
from ..numpy import _traced
from ..numpy.dispatch import rest_of as _rest_of
from ..primitives.ndimage import (bspline_weights as _bspline_weights,
                                  correlate_valid as _correlate_valid,
                                  cox_de_boor as _cox_de_boor)
from .linalg import solve_banded as _solve_banded

__all__ = ["map_coordinates", "correlate1d", "convolve1d", "correlate", "convolve",
           "gaussian_filter1d", "gaussian_filter", "gaussian_laplace",
           "gaussian_gradient_magnitude", "uniform_filter1d", "uniform_filter", "sobel",
           "prewitt", "laplace", "shift", "zoom", "spline_filter1d", "spline_filter"]

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
    0 (the nearest sample, ties rounded up as SciPy does), 1 (linear in each axis) or 2
    to 5 (the B-spline of that degree through the samples, SciPy's default 3: with
    `prefilter=True` the input is first turned into the spline's coefficients by
    `spline_filter`; with False it is taken to be them), beyond the edges as `mode` says:

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
    coordinates, order, mode, cval)`` (an integer third argument is JAX's order; JAX
    itself has orders 0 and 1 only).  On traced values, `output` may be a dtype (an array
    to write into is refused).

    Differentiable in input, coordinates and cval.  In the coordinates the derivative of
    linear interpolation is piecewise constant: at an integer coordinate it is the slope
    on its right, x[i+1] - x[i] (JAX's, from floor), but where SciPy's 'constant' and
    'wrap' jump (at n - 1, and at wrap's seams), the slope of the piece the value belongs
    to.  Order 0 has derivative 0 in the coordinates.  A spline of order k has k - 1
    continuous derivatives in the coordinates, and they are the spline's (the k-th is
    piecewise constant), except where 'constant' and 'wrap' jump as at order 1.

    Example: a bilinear sample's gradient in the image is its four weights:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import ndimage
        >>> sample = lambda im: ndimage.map_coordinates(im, [[0.25], [0.5]], 1)[0]
        >>> wg.grad(sample)(np.zeros((2, 2)))
        array([[0.375, 0.375],
               [0.125, 0.125]])

    and the cubic spline (the default order) through samples of x², which it reproduces
    away from the edges, with its slope 2x and curvature 2 there:

        >>> x = np.arange(40.0) ** 2
        >>> at = lambda c: ndimage.map_coordinates(x, c * np.ones((1, 1)), mode="nearest")[0]
        >>> round(float(at(20.5)), 6), round(float(wg.grad(at)(20.5)), 6)
        (420.25, 41.0)
        >>> round(float(wg.grad(wg.grad(at))(20.5)), 6)
        2.0
    """
    output, order, mode, cval = _jax_positional(output, order, mode, cval)
    if not _traced(input, coordinates, cval):
        return _nd.map_coordinates(input, coordinates, output=output, order=order, mode=mode,
                                   cval=cval, prefilter=prefilter)
    return _traced_map_coordinates(input, coordinates, output, order, mode, cval, prefilter)


def _traced_map_coordinates(input, coordinates, output, order, mode, cval, prefilter=True):
    input = _wnp.asarray(input)
    if input.dtype.kind not in "biufc":
        raise TypeError(f"map_coordinates: the input must be numbers, not {input.dtype}")
    order = _interpolation_order("map_coordinates", order, prefilter)
    coordinates = _coordinates(coordinates, input.shape)
    if mode not in MODES:
        raise RuntimeError(f"map_coordinates: boundary mode not supported: mode must be one "
                           f"of {', '.join(MODES)}; got {mode!r}")
    dtype = _result_dtype(input, output)
    if order > 1:
        total = _spline_interpolated(input, coordinates, order, mode, cval, prefilter)
    else:
        total = _linear(input, coordinates, order, mode, cval)
    if mode == "constant":                  # cval off [0, n - 1] on any axis
        inside = functools.reduce(_wnp.logical_and, [(c >= 0) & (c <= n - 1) for c, n in
                                                     zip(coordinates, input.shape)])
        total = _wnp.where(inside, total, cval)
    if dtype.kind in "iu":
        # SciPy's: rounded half away from zero, and held within the dtype's range (a
        # spline overshoots: an 8-bit image's dark edge interpolates below 0)
        limits = _np.iinfo(dtype)
        total = _wnp.clip(_wnp.sign(total) * _wnp.floor(_wnp.abs(total) + 0.5),
                          float(limits.min), float(limits.max))
    elif dtype.kind == "b":
        return _cast(total, dtype)          # (SciPy's: truncated, then its low byte)
    return total.astype(dtype)


def _linear(input, coordinates, order, mode, cval):
    """Order 0 or 1: the sum over the 2^ndim (1 for order 0) samples around each point of
    sample × the product of its weights along each axis."""
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
    return total


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
    if coordinates.dtype.kind not in "biuf":
        raise TypeError(f"map_coordinates: coordinates must be real numbers, not "
                        f"{coordinates.dtype}")
    if not shape or coordinates.ndim < 2:
        raise RuntimeError("map_coordinates: input and output rank must be > 0: got an input "
                           f"of shape {shape} and coordinates of shape {coordinates.shape} "
                           "(one row per axis of the input, each row the output's shape)")
    if coordinates.shape[0] != len(shape):
        raise RuntimeError(f"map_coordinates: invalid shape for coordinate array: one row "
                           f"per axis of the input, shape ({len(shape)}, ...) for an input "
                           f"of shape {shape}; got coordinates of shape {coordinates.shape}")
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


# =========================================================================================
# B-splines of orders 2 to 5: the prefilter, and the weights interpolation reads
# =========================================================================================
#: The boundary each mode's prefilter assumes for the coefficients, read off SciPy's
#: filter: the mirror image about the edge sample, the reflection about the half-sample
#: edge, or periodic ('nearest' and 'grid-constant' are padded first, in map_coordinates)
_SPLINE_BOUNDARY = {"mirror": "mirror", "constant": "mirror", "grid-constant": "mirror",
                    "wrap": "mirror", "reflect": "reflect", "grid-mirror": "reflect",
                    "nearest": "reflect", "grid-wrap": "wrap"}

#: The samples SciPy pads an input with before prefiltering it for 'nearest' (its edge
#: samples) and 'grid-constant' (cval)
_SPLINE_PAD = 12

#: Lines up to this long are prefiltered by SciPy's own filter's matrix: in 'reflect'
#: SciPy's recursive filter starts from a sum that is exact only for longer lines (at
#: n = 2, order 5, it is 1e-2 from the interpolating spline; from n = 20 within 3e-15)
_SHORT_LINE = 32


def spline_filter1d(input, order=3, axis=-1, output=_np.float64, mode="mirror"):
    """SciPy's ``spline_filter1d``: along `axis`, the coefficients c of the B-spline of
    degree `order` (2 to 5; 0 and 1 return the input) that interpolates the samples,
    Σ_k c[k] β(i − k) = x[i], the coefficients beyond the ends extended as `mode` says:
    mirrored about the end samples for 'mirror' (the default), 'constant',
    'grid-constant' and 'wrap'; reflected about the half-sample edges for 'reflect',
    'grid-mirror' and 'nearest'; periodic for 'grid-wrap' (SciPy's choices).

    On traced values it is a linear map along the axis: a banded solve
    (`wengert.scipy.linalg.solve_banded`, with the rows the boundary folds back, and for
    'grid-wrap' a rank-2⌊order/2⌋ correction of its corners), and on lines of at most 32
    samples the matrix of SciPy's own filter, whose start in 'reflect' mode is
    approximate on short lines.  Differentiable in `input` (the transposed map).  As
    SciPy's, the result is float64 unless `output` says otherwise (complex input,
    complex, with SciPy's warning about the promotion).

    Example: the cubic coefficients of a spike, and their derivative in the samples:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import ndimage
        >>> spike = np.array([0.0, 0.0, 6.0, 0.0, 0.0])
        >>> ndimage.spline_filter1d(spike).round(6)
        array([ 1.5, -3. , 10.5, -3. ,  1.5])
        >>> wg.grad(lambda x: ndimage.spline_filter1d(x)[2])(spike).round(6)
        array([ 0.125, -0.5  ,  1.75 , -0.5  ,  0.125])
    """
    if not _traced(input):
        return _nd.spline_filter1d(input, order, axis, output, mode)
    name = "spline_filter1d"
    order = _spline_order(name, order, 0)
    x = _input(name, input)
    ax = _axis(name, axis, x.ndim)
    mode = _spline_mode(name, mode)
    dtype = _output_dtype(name, x.dtype, output, x.dtype.kind == "c")
    if order < 2:
        return _cast(x, dtype)
    return _cast(_spline_filtered(_spline_work(x), order, ax, mode), dtype)


def spline_filter(input, order=3, output=_np.float64, mode="mirror"):
    """SciPy's ``spline_filter``: `spline_filter1d` along each axis in turn (`order` 2
    to 5), each pass written in the output's dtype, as SciPy's are: the coefficients of
    the tensor-product B-spline that interpolates the array, which `map_coordinates`
    (with ``prefilter=False``) evaluates.  Differentiable in `input`.

    Example: coefficients that map_coordinates without its own prefilter reads back as
    the samples:

        >>> import numpy as np
        >>> from wengert.scipy import ndimage
        >>> x = np.arange(12.0).reshape(3, 4) ** 2
        >>> c = ndimage.spline_filter(x, mode="mirror")
        >>> at = [[1.0, 2.0], [3.0, 0.0]]
        >>> ndimage.map_coordinates(c, at, prefilter=False, mode="mirror").round(6)
        array([49., 64.])
    """
    if not _traced(input):
        return _nd.spline_filter(input, order, output, mode)
    name = "spline_filter"
    order = _spline_order(name, order, 2)
    x = _input(name, input)
    mode = _spline_mode(name, mode)
    dtype = _output_dtype(name, x.dtype, output, x.dtype.kind == "c")
    for ax in range(x.ndim):
        x = _cast(_spline_filtered(_spline_work(x), order, ax, mode), _between_passes(dtype))
    return _cast(x, dtype)


def _spline_order(name, order, lowest):
    """order as an int in [lowest, 5], or SciPy's errors: RuntimeError out of range,
    TypeError for a number in range that is not an integer."""
    if isinstance(order, _numbers.Real) and not lowest <= order <= 5:
        raise RuntimeError(f"{name}: spline order not supported: order must be from "
                           f"{lowest} to 5, got {order!r}")
    return _integer(name, "order", order)


def _interpolation_order(name, order, prefilter):
    """map_coordinates', shift's and zoom's order as an int from 0 to 5, or SciPy's
    errors (a number between 1 and 2 to prefilter is spline_filter's RuntimeError)."""
    if isinstance(order, _numbers.Real) and prefilter and 1 < order < 2:
        raise RuntimeError(f"{name}: spline order not supported: order must be an integer "
                           f"from 0 to 5, got {order!r}")
    return _spline_order(name, order, 0)


def _spline_mode(name, mode):
    if not isinstance(mode, str) or mode not in MODES:
        raise RuntimeError(f"{name}: boundary mode not supported: mode must be one of "
                           f"{', '.join(MODES)}; got {mode!r}")
    return mode


def _spline_work(x):
    """x in the dtype the filter computes in, as SciPy's C code does: float64 (complex128)."""
    return x.astype(_np.complex128 if x.dtype.kind == "c" else _np.float64)


def _spline_filtered(x, order, axis, mode):
    """The B-spline coefficients of x along `axis`: a linear map, by a constant matrix on
    short lines and a banded solve on long ones."""
    n = x.shape[axis]
    boundary = _SPLINE_BOUNDARY[mode]
    if n <= _SHORT_LINE:
        m = _short_filter(n, order, boundary)
        return _wnp.moveaxis(_wnp.tensordot(m, x, axes=([1], [axis])), 0, axis)
    ab, correction = _spline_band(n, order, boundary)
    lines = _wnp.moveaxis(x, axis, 0)
    shape = lines.shape
    rest = int(_np.prod(shape[1:]))
    c = _solve_banded((order // 2, order // 2), ab, _wnp.reshape(lines, (n, rest)))
    if correction is not None:          # (the corners of the periodic system)
        columns, h = correction
        c = c - _wnp.matmul(h, _wnp.take(c, columns, axis=0))
    return _wnp.moveaxis(_wnp.reshape(c, shape), 0, axis)


@functools.lru_cache(maxsize=None)
def _short_filter(n, order, boundary):
    """The n × n matrix of SciPy's own filter along a line of n samples (its columns, the
    filter of each unit sample)."""
    mode = {"mirror": "mirror", "reflect": "reflect", "wrap": "grid-wrap"}[boundary]
    m = _nd.spline_filter1d(_np.eye(n), order, axis=0, mode=mode)
    m.flags.writeable = False
    return m


@functools.lru_cache(maxsize=None)
def _spline_band(n, order, boundary):
    """(ab, correction) of the interpolation system A c = x along a line of n samples,
    A[i, j] the sum of β(i − k) over the k that the boundary maps to j: ab, A's band in
    `solve_banded`'s layout, and for a periodic line the entries beyond the band, as
    (columns, h) with A⁻¹x = y − h y[columns], y = (band)⁻¹x (Woodbury's identity:
    A = band + (corner rows)ᵀ(corner entries)(corner columns))."""
    half = order // 2
    at_integers = [float(w) for w in _cox_de_boor(_fractions.Fraction(1 - order % 2, 2),
                                                         order)]
    ab = _np.zeros((2 * half + 1, n))
    corner = {}
    rows = _np.arange(n)
    for k, w in zip(range(-half, half + 1), at_integers):
        columns = _extended(rows + k, n, boundary)
        band = _np.abs(rows - columns) <= half
        _np.add.at(ab, (half + rows[band] - columns[band], columns[band]), w)
        for i, j in zip(rows[~band], columns[~band]):
            corner[i, j] = corner.get((i, j), 0.0) + w
    ab.flags.writeable = False
    if not corner:
        return ab, None
    r = sorted({i for i, _ in corner})
    columns = sorted({j for _, j in corner})
    e = _np.zeros((len(r), len(columns)))
    for (i, j), w in corner.items():
        e[r.index(i), columns.index(j)] = w
    unit = _np.zeros((n, len(r)))
    unit[r, _np.arange(len(r))] = 1.0
    band_inverse_r = _sl_solve_banded((half, half), ab, unit)
    capacitance = _np.linalg.inv(_np.eye(len(r)) + e @ band_inverse_r[columns])
    h = band_inverse_r @ capacitance @ e
    h.flags.writeable = False
    return ab, (_np.array(columns), h)


def _spline_interpolated(x, coordinates, order, mode, cval, prefilter):
    """Σ over the (order + 1)^ndim coefficients around each point of coefficient ×
    the product of the B-spline weights along each axis: the coefficients are x's own
    (prefilter=False) or its spline_filter (x padded first by 12 samples for 'nearest'
    and 'grid-constant', as SciPy does), extended beyond the edges as SciPy reads them:
    mirrored for 'mirror', 'constant' and 'wrap' (whose points are first brought into
    [0, n − 1]), reflected for 'reflect', periodic for 'grid-wrap', the edge for
    'nearest', cval for 'grid-constant'."""
    pad = _SPLINE_PAD if prefilter and mode in ("nearest", "grid-constant") else 0
    for ax in range(x.ndim if pad else 0):
        x = _pad(x, ax, pad, pad, "nearest" if mode == "nearest" else "constant", cval)
    x = _spline_work(x)
    for ax in range(x.ndim if prefilter else 0):
        x = _spline_filtered(x, order, ax, mode)
    reads = "mirror" if mode in ("constant", "wrap") else mode
    ndim, taps = x.ndim, order + 1
    points = coordinates[0].shape
    strides = [int(_np.prod(x.shape[d + 1:])) for d in range(ndim)]
    # the taps' axes lead, one per axis of x, the points' follow: NumPy multiplies and
    # sums along short leading axes 2 to 8 times faster than along short trailing ones
    offsets = _np.arange(taps).reshape((taps,) + (1,) * len(points))
    index = valid = None
    weights = []
    for d, (c, n) in enumerate(zip(coordinates, x.shape)):
        if mode == "wrap":
            c = _wrapped(c, n)
        # odd orders read from floor(c) - order // 2, even ones are centred on the
        # nearest coefficient; (c - nearest) + 0.5 is exact, c + 0.5 - nearest is not.
        # The indices have no derivative: where c's value is known (eagerly) they are
        # NumPy's arithmetic, not the graph's
        known = c.value if type(c) is _Node else c
        nearest = (_np if known is not None else _wnp).floor(
            (c if known is None else known) + (0 if order % 2 else 0.5))
        u = c - nearest if order % 2 else (c - nearest) + 0.5
        i, v = _fixed(nearest + (pad - order // 2) + offsets, n, reads)
        along = (1,) * d + (taps,) + (1,) * (ndim - 1 - d) + points
        i = _wnp.reshape(i * strides[d], along)
        index = i if index is None else index + i
        if v is not None:
            v = _wnp.reshape(v, along)
            valid = v if valid is None else valid & v
        weights.append(_bspline_weights(u, degree=order, derivative=0))
    # (one flat index: np.add.at, the gather's transpose, is 5 times faster on it than
    # on the same index with more axes)
    total = _wnp.reshape(_wnp.take(_wnp.ravel(x), _wnp.ravel(index)), index.shape)
    if valid is not None:               # ('grid-constant': cval beyond the coefficients)
        total = _wnp.where(valid, total, cval)
    for d in reversed(range(ndim)):     # (the last axis's taps first)
        total = _wnp.sum(total * weights[d], axis=d)
    return total


# =========================================================================================
# Linear filters
# =========================================================================================
#: The boundary modes of SciPy's filters: 'grid-mirror' is 'reflect', 'grid-constant'
#: 'constant', and 'grid-wrap' 'wrap' (for filters SciPy's 'wrap' has period n)
FILTER_MODES = ("reflect", "constant", "nearest", "mirror", "wrap", "grid-mirror",
                "grid-constant", "grid-wrap")


def correlate1d(input, weights, axis=-1, output=None, mode="reflect", cval=0.0, origin=0):
    """SciPy's ``correlate1d``: along `axis`, y[i] = Σ_k w[k] x[i + k − K // 2 − origin]
    for K weights, x extended beyond its ends as `mode` says (complex weights
    conjugated, as NumPy's ``correlate`` does):

    - 'reflect' (= 'grid-mirror', the default): about the edge, the edge sample repeated
      (d c b a | a b c d | d c b a);
    - 'constant' (= 'grid-constant'): `cval` (k k k k | a b c d | k k k k);
    - 'nearest': the edge sample (a a a a | a b c d | d d d d);
    - 'mirror': about the edge sample (d c b | a b c d | c b a);
    - 'wrap' (= 'grid-wrap'): periodic (a b c d | a b c d | a b c d);

    repeated as often as the kernel asks, for kernels longer than the array too.
    Differentiable in `input`, `weights` and `cval`.  `output` may be a dtype (an integer
    dtype truncates toward zero, as SciPy's); an array to write into is refused on traced
    values.

    Example: a first difference, and its gradient (the weights, reflected back at the
    edges):

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import ndimage
        >>> x = np.array([1.0, 2.0, 4.0, 8.0])
        >>> ndimage.correlate1d(x, [-1.0, 0.0, 1.0])
        array([1., 3., 6., 4.])
        >>> wg.grad(lambda x: ndimage.correlate1d(x, [-1.0, 0.0, 1.0])[0])(x)
        array([-1.,  1.,  0.,  0.])
    """
    if not _traced(input, weights, cval):
        return _nd.correlate1d(input, weights, axis, output, mode, cval, origin)
    return _filter1d("correlate1d", input, weights, axis, output, mode, cval, origin)


def convolve1d(input, weights, axis=-1, output=None, mode="reflect", cval=0.0, origin=0):
    """SciPy's ``convolve1d``: along `axis`, y[i] = Σ_k w[k] x[i − k + K // 2 − origin],
    `correlate1d` with the weights reversed (and an even number of them centred one
    place on, as SciPy does).  Modes, `output` and derivatives as `correlate1d`'s.

    Example: a spike convolved with a kernel is the kernel (correlated, the kernel
    reversed), and the sample after the spike is the last weight's:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import ndimage
        >>> spike = np.array([0.0, 0.0, 1.0, 0.0, 0.0])
        >>> ndimage.convolve1d(spike, [1.0, 2.0, 3.0]), ndimage.correlate1d(spike, [1.0, 2.0, 3.0])
        (array([0., 1., 2., 3., 0.]), array([0., 3., 2., 1., 0.]))
        >>> wg.grad(lambda w: ndimage.convolve1d(spike, w)[3])(np.array([1.0, 2.0, 3.0]))
        array([0., 0., 1.])
    """
    if not _traced(input, weights, cval):
        return _nd.convolve1d(input, weights, axis, output, mode, cval, origin)
    return _filter1d("convolve1d", input, weights, axis, output, mode, cval, origin,
                     convolution=True)


def correlate(input, weights, output=None, mode="reflect", cval=0.0, origin=0, *,
              axes=None):
    """SciPy's ``correlate``: the n-dimensional `correlate1d`, with `weights` of one axis
    per axis of `axes` (all of input's by default, in increasing order whatever the order
    of `axes`, as SciPy reads them), y[i] = Σ_k w[k] x[i + k − shape(w) // 2 − origin].
    `origin` is one number or one per entry of `axes`; `mode` one name for every axis.
    Differentiable in `input`, `weights` and `cval`.

    Example: a 3 × 3 box sum, and the gradient of its corner in the weights, the window
    the corner sees (the image reflected about its edges):

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import ndimage
        >>> x = np.arange(9.0).reshape(3, 3)
        >>> ndimage.correlate(x, np.ones((3, 3)))
        array([[12., 18., 24.],
               [30., 36., 42.],
               [48., 54., 60.]])
        >>> wg.grad(lambda w: ndimage.correlate(x, w)[0, 0])(np.ones((3, 3)))
        array([[0., 0., 1.],
               [0., 0., 1.],
               [3., 3., 4.]])
    """
    if not _traced(input, weights, cval):
        return _nd.correlate(input, weights, output, mode, cval, origin, axes=axes)
    return _filter_nd("correlate", input, weights, output, mode, cval, origin, axes)


def convolve(input, weights, output=None, mode="reflect", cval=0.0, origin=0, *,
             axes=None):
    """SciPy's ``convolve``: `correlate` with the weights reversed on every axis (an even
    length centred one place on, as in `convolve1d`), y[i] = Σ_k w[k] x[i − k +
    shape(w) // 2 − origin].  Differentiable in `input`, `weights` and `cval`.

    Example: a point spread: one bright pixel convolved with a kernel is the kernel, and
    the gradient of one output pixel is the kernel reversed, centred there:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import ndimage
        >>> point = np.zeros((3, 3)); point[1, 1] = 1.0
        >>> kernel = np.array([[0.0, 1.0, 0.0], [1.0, 2.0, 3.0], [0.0, 4.0, 0.0]])
        >>> ndimage.convolve(point, kernel, mode="constant")
        array([[0., 1., 0.],
               [1., 2., 3.],
               [0., 4., 0.]])
        >>> wg.grad(lambda x: ndimage.convolve(x, kernel, mode="constant")[1, 2])(point)
        array([[0., 0., 4.],
               [0., 3., 2.],
               [0., 0., 1.]])
    """
    if not _traced(input, weights, cval):
        return _nd.convolve(input, weights, output, mode, cval, origin, axes=axes)
    return _filter_nd("convolve", input, weights, output, mode, cval, origin, axes,
                      convolution=True)


def gaussian_filter1d(input, sigma, axis=-1, order=0, output=None, mode="reflect",
                      cval=0.0, truncate=4.0, *, radius=None):
    """SciPy's ``gaussian_filter1d``: a correlation along `axis` with the Gaussian of
    standard deviation `sigma` sampled at −r..r, r = int(truncate·sigma + 0.5) (or
    `radius`), normalised to sum 1, or for `order` q > 0 with its q-th derivative (the
    normalised Gaussian times the polynomial p_q: p_0 = 1, p_(q+1) = p_q' − x p_q / σ²):
    a smoothed derivative.  Modes and `output` as `correlate1d`'s.

    Differentiable in `input`, `cval` and `sigma` (the kernel's weights are functions of
    sigma; its radius, a whole number, is held at its value).  A traced sigma with no
    value (under `wg.jit`, `wg.compile`, `wg.vmap`) needs `radius`.

    Example: a blurred step, and how its middle moves as the blur widens:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import ndimage
        >>> step = np.repeat([0.0, 1.0], 4)
        >>> ndimage.gaussian_filter1d(step, 1.0).round(3)
        array([0.   , 0.005, 0.059, 0.301, 0.699, 0.941, 0.995, 1.   ])
        >>> round(float(wg.grad(lambda s: ndimage.gaussian_filter1d(step, s)[4])(1.0)), 4)
        -0.1995
    """
    if not _traced(input, sigma, cval):
        return _nd.gaussian_filter1d(input, sigma, axis, order, output, mode, cval,
                                     truncate, radius=radius)
    name = "gaussian_filter1d"
    weights = _gaussian_weights(name, sigma, _order(name, order), truncate, radius)
    return _filter1d(name, input, weights, axis, output, mode, cval, 0)


def gaussian_filter(input, sigma, order=0, output=None, mode="reflect", cval=0.0,
                    truncate=4.0, *, radius=None, axes=None):
    """SciPy's ``gaussian_filter``: `gaussian_filter1d` along each axis of `axes` (all by
    default) in turn.  `sigma`, `order`, `mode` and `radius` are one value for every axis
    or one per entry of `axes` (a traced sigma may be a traced array of them); an axis
    whose sigma is not above 1e-15 is left alone.  As SciPy's, each pass is written in
    the output's dtype (float32 and integers are rounded between passes).

    Differentiable in `input`, `cval` and `sigma`.

    Example: how much a pixel's blurred value depends on each pixel (the 2-D kernel, a
    product of the two 1-D ones):

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import ndimage
        >>> image = np.zeros((5, 5))
        >>> wg.grad(lambda x: ndimage.gaussian_filter(x, 0.6)[2, 2])(image).round(3)
        array([[0.   , 0.   , 0.002, 0.   , 0.   ],
               [0.   , 0.027, 0.11 , 0.027, 0.   ],
               [0.002, 0.11 , 0.441, 0.11 , 0.002],
               [0.   , 0.027, 0.11 , 0.027, 0.   ],
               [0.   , 0.   , 0.002, 0.   , 0.   ]])
    """
    if not _traced(input, sigma, cval):
        return _nd.gaussian_filter(input, sigma, order, output, mode, cval, truncate,
                                   radius=radius, axes=axes)
    return _gaussian_filter("gaussian_filter", input, sigma, order, output, mode, cval,
                            truncate, radius, axes)


def gaussian_laplace(input, sigma, output=None, mode="reflect", cval=0.0, *, axes=None,
                     **kwargs):
    """SciPy's ``gaussian_laplace``: the Laplacian of the Gaussian-smoothed input,
    Σ_a ∂²/∂x_a² over the axes of `axes` (all by default), each term a `gaussian_filter`
    of order 2 along its axis (with `sigma` on every filtered axis, and that term's
    `mode` on all of them, as SciPy does), summed in the output's dtype.  `kwargs`
    (`truncate`, `radius`) go to `gaussian_filter`.  Differentiable in `input`, `cval`
    and `sigma`.

    Example: a blob's Laplacian is most negative at its centre:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import ndimage
        >>> r2 = np.arange(-3.0, 4.0) ** 2
        >>> blob = np.exp(-r2[:, None] / 4 - r2 / 4)
        >>> log = ndimage.gaussian_laplace(blob, 1.0)
        >>> np.unravel_index(log.argmin(), log.shape)
        (np.int64(3), np.int64(3))
    """
    if not _traced(input, sigma, cval):
        return _nd.gaussian_laplace(input, sigma, output, mode, cval, axes=axes, **kwargs)
    return _gaussian_sum("gaussian_laplace", input, sigma, output, mode, cval, axes, kwargs,
                         order=2)


def gaussian_gradient_magnitude(input, sigma, output=None, mode="reflect", cval=0.0, *,
                                axes=None, **kwargs):
    """SciPy's ``gaussian_gradient_magnitude``: √(Σ_a (∂x/∂x_a)²) of the Gaussian-smoothed
    input over the axes of `axes` (all by default), each derivative a `gaussian_filter`
    of order 1 along its axis, squared and summed in the output's dtype.  `kwargs`
    (`truncate`, `radius`) go to `gaussian_filter`.  Differentiable in `input`, `cval` and
    `sigma`; where the magnitude is 0 (a flat spot, or the corners in 'mirror' mode, where
    every derivative vanishes by symmetry) the norm has no derivative, and its smallest
    subgradient, 0, is taken (the square root's would be nan).

    Example: the edge strength of a ramp is its slope, 1 (to the sampled kernel's
    accuracy):

        >>> import numpy as np
        >>> from wengert.scipy import ndimage
        >>> ramp = np.tile(np.arange(8.0), (8, 1))
        >>> round(float(ndimage.gaussian_gradient_magnitude(ramp, 1.0)[4, 4]), 3)
        0.999
    """
    if not _traced(input, sigma, cval):
        return _nd.gaussian_gradient_magnitude(input, sigma, output, mode, cval, axes=axes,
                                               **kwargs)
    return _gaussian_sum("gaussian_gradient_magnitude", input, sigma, output, mode, cval,
                         axes, kwargs, order=1)


def uniform_filter1d(input, size, axis=-1, output=None, mode="reflect", cval=0.0, origin=0):
    """SciPy's ``uniform_filter1d``: the mean of `size` neighbours along `axis`, y[i] =
    Σ_k x[i + k − size // 2 − origin] / size (the sum first, then the division, as
    SciPy's: an integer output truncates the same mean).  Modes and `output` as
    `correlate1d`'s.  Differentiable in `input` and `cval`.

    Example: a moving average of three, and the weight each sample has in the first:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import ndimage
        >>> x = np.array([3.0, 0.0, 6.0, 9.0])
        >>> ndimage.uniform_filter1d(x, 3)
        array([2., 3., 5., 8.])
        >>> wg.grad(lambda x: ndimage.uniform_filter1d(x, 3)[0])(x).round(4)
        array([0.6667, 0.3333, 0.    , 0.    ])
    """
    if not _traced(input, cval):
        return _nd.uniform_filter1d(input, size, axis, output, mode, cval, origin)
    return _uniform1d("uniform_filter1d", input, size, axis, output, mode, cval, origin)


def uniform_filter(input, size=3, output=None, mode="reflect", cval=0.0, origin=0, *,
                   axes=None):
    """SciPy's ``uniform_filter``: `uniform_filter1d` along each axis of `axes` (all by
    default) in turn, with `size`, `mode` and `origin` one value for every axis or one
    per entry of `axes`; an axis of size 1 or less is left alone.  Each pass is written
    in the output's dtype, as SciPy's.  Differentiable in `input` and `cval`.

    Example: a 3 × 3 mean, and the weights of one output pixel:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import ndimage
        >>> image = np.zeros((4, 4))
        >>> (wg.grad(lambda x: ndimage.uniform_filter(x, 3)[1, 2])(image) * 9).round(6)
        array([[0., 1., 1., 1.],
               [0., 1., 1., 1.],
               [0., 1., 1., 1.],
               [0., 0., 0., 0.]])
    """
    if not _traced(input, cval):
        return _nd.uniform_filter(input, size, output, mode, cval, origin, axes=axes)
    name = "uniform_filter"
    x = _input(name, input)
    axes = _axes(name, axes, x.ndim)
    sizes = _per_axis(name, "size", size, len(axes))
    modes = _per_axis(name, "mode", mode, len(axes))
    origins = _per_axis(name, "origin", origin, len(axes))
    dtype = _output_dtype(name, x.dtype, output, x.dtype.kind == "c")
    for ax, n, md, org in zip(axes, sizes, modes, origins):
        if _real(name, "size", n) > 1:           # (SciPy's: a size of 2.5 is 2)
            x = _uniform1d(name, x, int(n), ax, _between_passes(dtype), md, cval, org)
    return _cast(_wnp.asarray(x), dtype)


def sobel(input, axis=-1, output=None, mode="reflect", cval=0.0):
    """SciPy's ``sobel``: the derivative along `axis` by the central difference
    [−1, 0, 1], smoothed along every other axis by [1, 2, 1], one `correlate1d` per axis,
    each written in the output's dtype.  `mode` is one name or one per axis of the input.
    Differentiable in `input` and `cval`.

    Example: a vertical edge answers to the filter along the columns' axis:

        >>> import numpy as np
        >>> from wengert.scipy import ndimage
        >>> edge = np.repeat([[0.0, 0.0, 1.0, 1.0]], 3, axis=0)
        >>> ndimage.sobel(edge, axis=1)
        array([[0., 4., 4., 0.],
               [0., 4., 4., 0.],
               [0., 4., 4., 0.]])
    """
    if not _traced(input, cval):
        return _nd.sobel(input, axis, output, mode, cval)
    return _edge_filter("sobel", input, axis, output, mode, cval, [1.0, 2.0, 1.0])


def prewitt(input, axis=-1, output=None, mode="reflect", cval=0.0):
    """SciPy's ``prewitt``: as `sobel`, with [1, 1, 1] along the other axes.

    Example:

        >>> import numpy as np
        >>> from wengert.scipy import ndimage
        >>> edge = np.repeat([[0.0, 0.0, 1.0, 1.0]], 3, axis=0)
        >>> ndimage.prewitt(edge, axis=1)
        array([[0., 3., 3., 0.],
               [0., 3., 3., 0.],
               [0., 3., 3., 0.]])
    """
    if not _traced(input, cval):
        return _nd.prewitt(input, axis, output, mode, cval)
    return _edge_filter("prewitt", input, axis, output, mode, cval, [1.0, 1.0, 1.0])


def laplace(input, output=None, mode="reflect", cval=0.0, *, axes=None):
    """SciPy's ``laplace``: Σ_a of the second difference [1, −2, 1] along each axis of
    `axes` (all by default), summed in the output's dtype; `mode` is one name or one per
    entry of `axes`.  Differentiable in `input` and `cval`.

    Example: the discrete Laplacian of x² + y² is 4 away from the edges:

        >>> import numpy as np
        >>> from wengert.scipy import ndimage
        >>> yy, xx = np.mgrid[0:5, 0:5].astype(float)
        >>> ndimage.laplace(xx ** 2 + yy ** 2)[1:-1, 1:-1]
        array([[4., 4., 4.],
               [4., 4., 4.],
               [4., 4., 4.]])
    """
    if not _traced(input, cval):
        return _nd.laplace(input, output, mode, cval, axes=axes)
    name = "laplace"
    x = _input(name, input)
    axes = _axes(name, axes, x.ndim)
    modes = _per_axis(name, "mode", mode, len(axes))
    dtype = _output_dtype(name, x.dtype, output, x.dtype.kind == "c")
    terms = [_filter1d(name, x, _np.array([1.0, -2.0, 1.0]), ax, dtype, md, cval, 0)
             for ax, md in zip(axes, modes)]
    return _sum_terms(terms, x, dtype)


# ---- the filters' common parts ----------------------------------------------------------
def _filter1d(name, input, weights, axis, output, mode, cval, origin, convolution=False):
    """correlate1d (or convolve1d) on traced values: the checks, then `_correlated`."""
    x = _input(name, input)
    w = _wnp.asarray(weights)
    if w.ndim != 1 or w.shape[0] < 1:
        raise RuntimeError(f"{name}: no filter weights given: weights must be a 1-D array "
                           f"of at least one number, got an array of shape {w.shape}")
    _check_numbers(name, "weights", w)
    ax = _axis(name, axis, x.ndim)
    mode = _mode(name, mode)
    origin = _integer(name, "origin", origin)
    size = w.shape[0]
    full = [1] * x.ndim
    full[ax] = size
    origins = [0] * x.ndim
    origins[ax] = _origin(name, origin, size, convolution)
    return _correlated(name, x, w, full, origins, [mode] * x.ndim, cval, output,
                       convolution)


def _filter_nd(name, input, weights, output, mode, cval, origin, axes, convolution=False):
    """correlate (or convolve) on traced values: the checks, then `_correlated`."""
    x = _input(name, input)
    w = _wnp.asarray(weights)
    _check_numbers(name, "weights", w)
    axes = _axes(name, axes, x.ndim)
    if w.ndim != len(axes):
        raise RuntimeError(f"{name}: weights.ndim ({w.ndim}) must match len(axes) "
                           f"({len(axes)}): one axis of weights per axis filtered")
    if not isinstance(mode, str) and _np.iterable(mode):
        raise RuntimeError(f"{name}: a sequence of modes is not supported: mode must be one "
                           f"name for every axis, got {mode!r}")
    mode = _mode(name, mode)
    origins = [_integer(name, "origin", o) for o in _per_axis(name, "origin", origin,
                                                                len(axes))]
    # SciPy reads the weights' axes in increasing order of the axes they filter; origin[i]
    # is the origin along axes[i] for some of the axes, and along axis i for all of them
    full = [1] * x.ndim
    for ax, k in zip(sorted(axes), w.shape):
        full[ax] = k
    if w.size == 0:
        raise RuntimeError(f"{name}: no filter weights given: weights of shape {w.shape} "
                           "are empty")
    full_origins = [0] * x.ndim
    for ax, o in zip(axes if len(axes) < x.ndim else range(x.ndim), origins):
        full_origins[ax] = _origin(name, o, full[ax], convolution, per_axis=True)
    return _correlated(name, x, w, full, full_origins, [mode] * x.ndim, cval, output,
                       convolution)


def _correlated(name, x, w, shape, origins, modes, cval, output, convolution):
    """The filter of x by the weights w (reshaped to `shape`: one axis per axis of x),
    each axis padded by its mode and origin (already a correlation's), cast to `output`'s
    dtype."""
    complex_ = x.dtype.kind == "c" or w.dtype.kind == "c"
    dtype = _output_dtype(name, x.dtype, output, complex_)
    cval = _cval(name, cval, x.dtype.kind == "c")
    work = _np.complex128 if complex_ else _np.float64
    x, w = x.astype(work), _wnp.reshape(w.astype(work), shape)
    if convolution:
        w = _wnp.flip(w, axis=tuple(range(x.ndim))) if x.ndim else w
    elif complex_:
        w = _wnp.conj(w)                        # (correlate conjugates, as NumPy's does)
    if x.size == 0:
        return _cast(x * 0, dtype)              # (SciPy's empty result)
    if x.ndim == 0:
        return _cast(x * w, dtype)
    p = x
    for ax, (k, mode, origin) in enumerate(zip(shape, modes, origins)):
        before = k // 2 + origin
        p = _pad(p, ax, before, k - 1 - before, mode, cval)
    return _cast(_correlate_valid(p, w), dtype)


def _pad(x, ax, before, after, mode, cval):
    """x extended by `before` and `after` samples along axis `ax` as the boundary mode
    says: constants concatenated, or a gather of x's own samples at indices computed
    with NumPy (so the derivative folds each copy's cotangent back onto its sample)."""
    if not before and not after:
        return x
    n = x.shape[ax]
    parts = []
    for index in (_np.arange(-before, 0), _np.arange(n, n + after)):
        if not index.size:
            parts.append(None)
        elif mode in ("constant", "grid-constant"):
            shape = list(x.shape)
            shape[ax] = index.size
            parts.append(_wnp.broadcast_to(_wnp.asarray(cval).astype(x.dtype), tuple(shape))
                         if _traced(cval) else _np.full(shape, cval, dtype=x.dtype))
        else:
            parts.append(_wnp.take(x, _extended(index, n, mode), axis=ax))
    return _wnp.concatenate([p for p in (parts[0], x, parts[1]) if p is not None], axis=ax)


def _extended(j, n, mode):
    """The samples of an axis of length n that positions j beyond its ends copy."""
    if mode in ("reflect", "grid-mirror"):          # period 2n: a b c d | d c b a
        r = j % (2 * n)
        return _np.where(r < n, r, 2 * n - 1 - r)
    if mode == "mirror":                            # period 2n - 2: a b c d | c b
        if n == 1:
            return _np.zeros_like(j)
        r = j % (2 * n - 2)
        return _np.where(r < n, r, 2 * n - 2 - r)
    if mode in ("wrap", "grid-wrap"):
        return j % n
    return _np.clip(j, 0, n - 1)                    # 'nearest'


def _cast(y, dtype):
    """The filter's result in the output's dtype: a C cast, as SciPy's (integers
    truncated toward zero, as NumPy's astype does; a bool is a byte, so the truncated
    value's low byte, not the value, says whether it is True)."""
    if y.dtype == dtype:
        return y
    if dtype.kind == "b":
        y = y.astype(_np.int64).astype(_np.uint8)
    return y.astype(dtype)


def _between_passes(dtype):
    """The dtype a filter of several passes writes each pass in: the output's, but for
    bool a byte, as SciPy's C cast stores the truncated value's low byte in the bool
    array (2 stays 2 for the next pass to read)."""
    return _np.dtype(_np.uint8) if dtype.kind == "b" else dtype


def _sum_terms(terms, x, dtype):
    """Terms added up in the output's dtype, as SciPy's generic_laplace does (the input,
    cast, when there are none)."""
    if not terms:
        return _cast(_wnp.asarray(x), dtype)
    total = terms[0]
    for t in terms[1:]:
        total = _cast(total + t, dtype)
    return total


def _uniform1d(name, input, size, axis, output, mode, cval, origin):
    x = _input(name, input)
    size = _integer(name, "size", size)
    if size < 1:
        raise RuntimeError(f"{name}: incorrect filter size: size must be at least 1, got "
                           f"{size}")
    ax = _axis(name, axis, x.ndim)
    mode = _mode(name, mode)
    origin = _integer(name, "origin", origin)
    if not -(size // 2) <= origin <= (size - 1) // 2:
        raise ValueError(f"{name}: invalid origin {origin}: for size {size} it must be in "
                         f"[{-(size // 2)}, {(size - 1) // 2}]")
    complex_ = x.dtype.kind == "c"
    dtype = _output_dtype(name, x.dtype, output, complex_)
    full = [1] * x.ndim
    full[ax] = size
    origins = [0] * x.ndim
    origins[ax] = origin
    # the sum, then the mean, as SciPy's running sum does (an integer output truncates
    # the same number)
    total = _correlated(name, x, _np.ones(size), full, origins, [mode] * x.ndim, cval,
                        _np.complex128 if complex_ else _np.float64, False)
    return _cast(total / size, dtype)


def _edge_filter(name, input, axis, output, mode, cval, smoothing):
    x = _input(name, input)
    ax = _axis(name, axis, x.ndim)
    modes = _per_axis(name, "mode", mode, x.ndim)
    dtype = _output_dtype(name, x.dtype, output, x.dtype.kind == "c")
    between = _between_passes(dtype)
    out = _filter1d(name, x, _np.array([-1.0, 0.0, 1.0]), ax, between, modes[ax], cval, 0)
    for other in range(x.ndim):
        if other != ax:
            out = _filter1d(name, out, _np.array(smoothing), other, between, modes[other],
                            cval, 0)
    return _cast(out, dtype)


# ---- Gaussians --------------------------------------------------------------------------
def _gaussian_filter(name, input, sigma, order, output, mode, cval, truncate, radius, axes):
    x = _input(name, input)
    axes = _axes(name, axes, x.ndim)
    n = len(axes)
    sigmas = _per_axis(name, "sigma", sigma, n)
    orders = [_order(name, q) for q in _per_axis(name, "order", order, n)]
    modes = _per_axis(name, "mode", mode, n)
    radii = _per_axis(name, "radius", radius, n) if radius is not None else [None] * n
    dtype = _output_dtype(name, x.dtype, output, x.dtype.kind == "c")
    for ax, s, q, md, r in zip(axes, sigmas, orders, modes, radii):
        known = s.value if type(s) is _Node else s
        if known is not None and not _real(name, "sigma", known) > 1e-15:
            continue                    # (SciPy leaves an axis of sigma ~ 0 alone)
        weights = _gaussian_weights(name, s, q, truncate, r)
        x = _filter1d(name, x, weights, ax, _between_passes(dtype), md, cval, 0)
    return _cast(_wnp.asarray(x), dtype)


def _gaussian_sum(name, input, sigma, output, mode, cval, axes, kwargs, order):
    """gaussian_laplace (order 2: the terms summed) and gaussian_gradient_magnitude (order
    1: the root of their squares' sum), as SciPy's generic_laplace and
    generic_gradient_magnitude build them."""
    unknown = set(kwargs) - {"truncate", "radius"}
    if unknown:
        raise TypeError(f"{name}: unexpected keyword argument {sorted(unknown)[0]!r} (the "
                        "keywords passed on to gaussian_filter are truncate and radius)")
    x = _input(name, input)
    axes = _axes(name, axes, x.ndim)
    modes = _per_axis(name, "mode", mode, len(axes))
    if order == 2 and len(axes) < x.ndim:
        # SciPy's Laplacian smooths only the axes it sums over (sigma 0 on the others,
        # which are left alone); the gradient magnitude smooths along every axis
        full = [0.0] * x.ndim
        for ax, s in zip(axes, _per_axis(name, "sigma", sigma, len(axes))):
            full[ax] = s
    else:
        full = sigma
    dtype = _output_dtype(name, x.dtype, output, x.dtype.kind == "c")
    terms = []
    for ax, md in zip(axes, modes):
        orders = [0] * x.ndim
        orders[ax] = order
        term = _gaussian_filter(name, x, full, orders, dtype, md, cval,
                                kwargs.get("truncate", 4.0), kwargs.get("radius"), None)
        terms.append(term if order == 2 else _cast(term * term, dtype))
    total = _sum_terms(terms, x, dtype)
    if order == 2 or not terms:
        return total
    # The magnitude is a norm of the derivatives, with no derivative where they are all
    # 0 (a flat spot; the corners of any image in 'mirror' mode, where they vanish by
    # symmetry): there the smallest subgradient, 0, rather than the square root's nan
    flat = total == 0
    return _cast(_wnp.where(flat, 0.0, _wnp.sqrt(_wnp.where(flat, 1.0, total))), dtype)


def _gaussian_weights(name, sigma, order, truncate, radius):
    """The correlation weights of gaussian_filter1d: the sampled Gaussian of standard
    deviation sigma (a number, or traced), normalised, times p_order, reversed."""
    sigma = _wnp.asarray(sigma) if _traced(sigma) else sigma
    if _traced(sigma):
        if sigma.ndim:
            raise TypeError(f"{name}: sigma must be one number per axis, got an array of "
                            f"shape {sigma.shape}")
        if sigma.dtype.kind not in "biuf":
            raise TypeError(f"{name}: sigma must be a real number, not {sigma.dtype}")
    known = sigma.value if type(sigma) is _Node else sigma
    if radius is None:
        if known is None:
            raise _ConcretizationError(
                f"{name}: the kernel's radius, int(truncate * sigma + 0.5), needs sigma's "
                "value, which a traced sigma does not have here (under wg.jit, wg.compile or "
                "wg.vmap): pass radius=, a whole number that holds the kernel")
        sd = _real(name, "sigma", known)
        try:
            radius = int(_real(name, "truncate", truncate) * sd + 0.5)
        except (ValueError, OverflowError) as e:
            raise type(e)(f"{name}: the kernel's radius int(truncate * sigma + 0.5) of "
                          f"sigma={sd!r} and truncate={truncate!r} is not a number: {e}") \
                from None
    elif isinstance(radius, bool) or not isinstance(radius, _numbers.Integral):
        raise ValueError(f"{name}: Radius must be a nonnegative integer, got radius="
                         f"{radius!r}")
    if radius < 0:
        raise ValueError(f"{name}: Radius must be a nonnegative integer: the kernel's "
                         f"radius int(truncate * sigma + 0.5) or radius is {radius}")
    if known is not None and _real(name, "sigma", known) == 0:
        raise ZeroDivisionError(f"{name}: sigma is 0: a Gaussian of width 0 has no kernel "
                                "(gaussian_filter leaves such an axis alone)")
    x = _np.arange(-radius, radius + 1, dtype=_np.float64)
    variance = sigma * sigma
    exponent = -0.5 / variance * x ** 2
    phi = _wnp.exp(exponent) if _traced(sigma) else _np.exp(exponent)
    phi = phi / phi.sum()
    # p_q's coefficients (of x^0, x^1, ...): p_(q+1) = p_q' − x p_q / σ²
    coefficients = [1.0]
    for _ in range(order):
        grown = [0.0] * (len(coefficients) + 1)
        for j, c in enumerate(coefficients):
            if j:
                grown[j - 1] = grown[j - 1] + j * c
            grown[j + 1] = grown[j + 1] - c / variance
        coefficients = grown
    if order:
        polynomial = sum(c * x ** j for j, c in enumerate(coefficients) if j % 2 == order % 2)
        phi = phi * polynomial
    return phi[::-1]


# ---- argument checks (SciPy's exception types, messages that name the argument) --------
def _input(name, input):
    x = _wnp.asarray(input)
    if x.dtype.kind not in "biufc":
        raise TypeError(f"{name}: the input must be numbers, not {x.dtype}")
    return x


def _check_numbers(name, what, w):
    if w.dtype.kind not in "biufc":
        raise TypeError(f"{name}: {what} must be numbers, not {w.dtype}")


def _integer(name, what, value, kind="an integer"):
    """value as a Python int, or SciPy's TypeError (a float is not an integer)."""
    try:
        return _operator.index(value)
    except TypeError:
        raise TypeError(f"{name}: {what} must be {kind}, got {value!r}") from None


def _real(name, what, value):
    try:
        return float(value)
    except TypeError:
        raise TypeError(f"{name}: {what} must be a real number, got {value!r}") from None


def _order(name, order):
    order = _integer(name, "order", order)
    if order < 0:
        raise ValueError(f"{name}: order must be non-negative, got {order}")
    return order


def _axis(name, axis, ndim):
    return _np_normalize_axis_index(_integer(name, "axis", axis), ndim)


def _axes(name, axes, ndim):
    """SciPy's axes: None (all), an integer, or distinct integers, each within ndim."""
    if axes is None:
        return tuple(range(ndim))
    items = list(axes) if _np.iterable(axes) else [axes]
    out = []
    for a in items:
        a = _integer(name, "each of axes", a)
        if not -ndim <= a < ndim:
            raise ValueError(f"{name}: specified axis: {a} is out of range for an input "
                             f"with {ndim} axes")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: axes must be unique, got {axes!r}")
    return tuple(out)


def _per_axis(name, what, value, n):
    """One value per filtered axis: a string or a number for all, or a sequence of n (a
    traced array of n too)."""
    if isinstance(value, str) or value is None:
        return [value] * n
    if _traced(value) and not isinstance(value, (list, tuple)):
        value = _wnp.asarray(value)
        if value.ndim == 0:
            return [value] * n
        if value.ndim == 1 and value.shape[0] == n:
            return [value[i] for i in range(n)]
    elif _np.iterable(value):
        value = list(value)
        if len(value) == n:
            return value
    else:
        return [value] * n
    raise RuntimeError(f"{name}: sequence argument must have length equal to input rank: "
                       f"{what} has one entry per filtered axis ({n}), got {value!r}")


def _mode(name, mode):
    if not isinstance(mode, str) or mode not in FILTER_MODES:
        raise RuntimeError(f"{name}: boundary mode not supported: mode must be one of "
                           f"{', '.join(FILTER_MODES)}; got {mode!r}")
    return mode


def _origin(name, origin, size, convolution, per_axis=False):
    """The origin of the correlation that is this filter (a convolution's is mirrored,
    and for an even length moved one place), or SciPy's ValueError."""
    lo, hi = -(size // 2), (size - 1) // 2
    if convolution:                     # (the correlation's origin −origin − (size even))
        even = 1 - size % 2
        lo, hi = -hi - even, -lo - even
    if not lo <= origin <= hi:
        which = "along that axis" if per_axis else ""
        raise ValueError(f"{name}: Invalid origin {origin}: for {size} weights{which} origin "
                         f"must satisfy {lo} <= origin <= {hi}")
    return -origin - (1 - size % 2) if convolution else origin


def _cval(name, cval, complex_input):
    c = _wnp.asarray(cval)
    if c.ndim:
        raise TypeError(f"{name}: cval must be one number, got an array of shape {c.shape}")
    if c.dtype.kind not in "biufc" or (c.dtype.kind == "c" and not complex_input):
        raise TypeError(f"{name}: cval must be a real number (a complex one for a complex "
                        f"input), got {cval!r}")
    return cval


def _output_dtype(name, input_dtype, output, complex_):
    """The result's dtype: the input's or `output`'s, complex where the input or the
    weights are (SciPy's promotion, with its warning where `output` asked for a real
    dtype)."""
    if output is None:
        dtype = input_dtype
    elif isinstance(output, _np.ndarray) or _traced(output):
        raise NotImplementedError(f"{name}(..., output=array) is not supported on traced "
                                  "values: a traced value cannot be written into an array; "
                                  "pass a dtype, or use the result")
    else:
        dtype = _np.dtype(output)
        if dtype.kind == "c" and not complex_:
            raise RuntimeError(f"{name}: array type not supported: output={dtype} is complex "
                               "but the input and the weights are real")
    if complex_ and dtype.kind != "c":
        if output is not None:
            _warnings.warn("promoting specified output dtype to complex", UserWarning,
                           stacklevel=4)
        dtype = _np.promote_types(dtype, _np.complex64)
    return dtype


# =========================================================================================
# Resampling on a grid: shift and zoom, map_coordinates at the grid's moved points
# =========================================================================================
def shift(input, shift, output=None, order=3, mode="constant", cval=0.0, prefilter=True):
    """SciPy's ``shift``: the input moved by `shift` (one number, or one per axis), y[i] =
    x(i − shift) interpolated by `order` 0 (nearest), 1 (linear) or 2 to 5 (SciPy's
    B-splines, its default 3, with `prefilter` as in `map_coordinates`) and extended
    beyond the edges by `mode`, as `map_coordinates` samples it (which it is, on the
    moved grid).  Differentiable in `input`, `shift` and `cval`.

    Example: a half-pixel shift averages neighbours, and its derivative in the shift is
    the image's slope, negated:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import ndimage
        >>> x = np.array([0.0, 1.0, 4.0, 9.0, 16.0])
        >>> ndimage.shift(x, 0.5, order=1, mode="nearest")
        array([ 0. ,  0.5,  2.5,  6.5, 12.5])
        >>> wg.jacfwd(lambda s: ndimage.shift(x, s, order=1, mode="nearest"))(0.5)
        array([ 0., -1., -3., -5., -7.])
    """
    if not _traced(input, shift, cval):
        return _nd.shift(input, shift, output, order, mode, cval, prefilter)
    name = "shift"
    x = _resampled_input(name, input, order, prefilter)
    moves = _per_axis(name, "shift", shift, x.ndim)
    coordinates = [_np.arange(n, dtype=_np.float64).reshape(
        (n,) + (1,) * (x.ndim - 1 - ax)) - _wnp.asarray(m).astype(_np.float64)
        for ax, (n, m) in enumerate(zip(x.shape, moves))]
    return _resampled(name, x, coordinates, output, order, mode, cval, prefilter)


def zoom(input, zoom, output=None, order=3, mode="constant", cval=0.0, prefilter=True, *,
         grid_mode=False):
    """SciPy's ``zoom``: the input resampled to shape round(input.shape · zoom) (`zoom` one
    number or one per axis), by `order` 0 (nearest), 1 (linear) or 2 to 5 (SciPy's
    B-splines, its default 3), as `map_coordinates` samples it.  Output pixel i of n_out
    reads input position i·(n_in − 1)/(n_out − 1)
    (the corner pixels' centres aligned), or with `grid_mode=True` (i + ½)·n_in/n_out − ½
    (the pixels' outer edges aligned, as `wengert.image.resize` and JAX's
    ``jax.image.resize`` do; SciPy suggests `mode='grid-constant'` with it, and warns
    otherwise).  A zoom of 1 on every axis returns the input, as SciPy's does.
    Differentiable in `input` and `cval`: the zoom only sets the output's shape.

    Example: doubling a 2-pixel ramp, and where each output pixel's weights come from:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import ndimage
        >>> x = np.array([0.0, 3.0])
        >>> ndimage.zoom(x, 2, order=1)
        array([0., 1., 2., 3.])
        >>> wg.jacfwd(lambda x: ndimage.zoom(x, 2, order=1))(x).round(4)
        array([[1.    , 0.    ],
               [0.6667, 0.3333],
               [0.3333, 0.6667],
               [0.    , 1.    ]])

    The cubic spline's weights reach past the neighbours, with negative lobes:

        >>> wg.jacfwd(lambda x: ndimage.zoom(x, 2, mode="mirror"))(np.array([0.0, 3.0, 1.0]))
        array([[ 1.   ,  0.   ,  0.   ],
               [ 0.72 ,  0.352, -0.072],
               [ 0.2  ,  0.896, -0.096],
               [-0.096,  0.896,  0.2  ],
               [-0.072,  0.352,  0.72 ],
               [ 0.   ,  0.   ,  1.   ]])
    """
    if not _traced(input, cval):
        return _nd.zoom(input, zoom, output, order, mode, cval, prefilter,
                        grid_mode=grid_mode)
    name = "zoom"
    x = _resampled_input(name, input, order, prefilter)
    factors = [_real(name, "zoom", z) for z in _per_axis(name, "zoom", zoom, x.ndim)]
    shape = tuple(int(round(n * z)) for n, z in zip(x.shape, factors))
    if prefilter and all(z == 1 for z in factors):
        return _cast(x, _resampled_dtype(name, x, output))
    if grid_mode and mode in ("constant", "wrap"):
        _warnings.warn(f"It is recommended to use mode = grid-{mode} instead of {mode} when "
                       "grid_mode is True.", UserWarning, stacklevel=2)
    coordinates = []
    for ax, (n, m) in enumerate(zip(x.shape, shape)):
        into, out_of = (n, m) if grid_mode else (n - 1, m - 1)
        step = into / out_of if out_of else 1.0
        i = _np.arange(m, dtype=_np.float64)
        c = (i + 0.5) * step - 0.5 if grid_mode else i * step
        coordinates.append(c.reshape((m,) + (1,) * (x.ndim - 1 - ax)))
    return _resampled(name, x, coordinates, output, order, mode, cval, prefilter)


def _resampled_input(name, input, order, prefilter):
    x = _input(name, input)
    _interpolation_order(name, order, prefilter)
    if x.ndim < 1:
        raise RuntimeError(f"{name}: input and output rank must be > 0: the input is a "
                           "0-d array")
    return x


def _resampled_dtype(name, x, output):
    if isinstance(output, _np.ndarray) or _traced(output):
        raise NotImplementedError(f"{name}(..., output=array) is not supported on traced "
                                  "values: a traced value cannot be written into an array; "
                                  "pass a dtype, or use the result")
    return x.dtype if output is None else _np.dtype(output)


def _resampled(name, x, coordinates, output, order, mode, cval, prefilter):
    """map_coordinates of x at the grid whose axis a has the coordinates
    coordinates[a] (shaped to broadcast along that axis)."""
    dtype = _resampled_dtype(name, x, output)
    if mode not in MODES:
        raise RuntimeError(f"{name}: boundary mode not supported: mode must be one of "
                           f"{', '.join(MODES)}; got {mode!r}")
    shape = _np.broadcast_shapes(*[_np.shape(c) for c in coordinates])
    grid = _wnp.stack([_wnp.broadcast_to(c, shape) for c in coordinates])
    return _traced_map_coordinates(x, grid, dtype, order, mode, cval, prefilter)


# the rest of scipy.ndimage (median_filter, label, rotate, ...): SciPy's on plain values,
# a NotImplementedError that names it on traced ones
__getattr__ = _rest_of(_nd, globals())
