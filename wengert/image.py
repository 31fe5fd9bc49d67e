"""JAX's ``jax.image``: resizing, scaling and translating images, differentiable.

``resize(image, shape, method)`` resamples an array of any rank to `shape`: each axis
whose size changes is resampled, the others (a batch, colour channels) are kept, so a
batch of RGB images of shape (8, 64, 64, 3) is halved by ``shape=(8, 32, 32, 3)``.
``scale_and_translate`` maps the input's coordinates to the output's by a scale and a
shift of your choosing, axis by axis (a zoom, a sub-pixel shift, PyTorch's
``align_corners=True``).

How (JAX's semantics, half-pixel centres): pixel i of an axis of size m covers
``[i, i + 1)``, its centre at i + 0.5.  An output pixel j samples the input at
``x = (j + 0.5 - translation) / scale`` and takes a weighted sum of the input pixels
around x, weight ``k((x - (i + 0.5)) / width)`` for a kernel k (`ResizeMethod`), divided
by the sum of the weights; an output whose x falls outside ``[0, m]`` is 0.  When
downsampling (scale < 1) with ``antialias=True`` the kernel is widened by 1/scale
(``width = 1/scale``), so that every input pixel counts: a low-pass filter; else width
is 1 and the kernel interpolates.

The resampling is separable: along each resized axis it is a matrix of weights, (out,
in), built from the kernel, applied to the image by a matrix product.  So the derivatives
with respect to the image are the transposed matrices', those with respect to
`scale_and_translate`'s scale and translation come through the weights (built on the
graph where they are traced), and everything works under `wg.vmap` and `wg.compile`.

Example:
    >>> import numpy as np, wengert as wg
    >>> from wengert import image
    >>> x = np.array([[0.0, 1.0], [2.0, 3.0]])
    >>> image.resize(x, (4, 4), "linear")          # bilinear, half-pixel centres
    array([[0.  , 0.25, 0.75, 1.  ],
           [0.5 , 0.75, 1.25, 1.5 ],
           [1.5 , 1.75, 2.25, 2.5 ],
           [2.  , 2.25, 2.75, 3.  ]])
    >>> image.resize(x, (1, 1), "linear").tolist()  # antialiased: the mean
    [[1.5]]
    >>> wg.grad(lambda x: image.resize(x, (4, 4), "cubic").sum())(x).round(6).tolist()
    [[4.0, 4.0], [4.0, 4.0]]
"""
from __future__ import annotations

import enum
import math
import operator

import numpy as np

from . import numpy as wnp
from .graph.node import Node
from .primitives.registry import known_value

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]


class ResizeMethod(enum.Enum):
    """How `resize` and `scale_and_translate` resample, as ``jax.image.ResizeMethod``:

    * ``NEAREST`` (``"nearest"``): the input pixel whose cell holds the sample (resize
      only).
    * ``LINEAR`` (``"linear"``, ``"bilinear"``, ``"trilinear"``, ``"triangle"``): the
      triangle kernel ``max(0, 1 - |x|)``; linear interpolation, or with antialiasing
      a triangle filter when downsampling.
    * ``CUBIC`` (``"cubic"``, ``"bicubic"``, ``"tricubic"``): Keys' cubic kernel with
      a = -0.5.
    * ``CUBIC_PYTORCH`` (``"cubic-pytorch"``, ``"bicubic-pytorch"``): PyTorch's bicubic
      resizing: without antialiasing, Keys' kernel with a = -0.75 and the edge pixels
      repeated past the border; with it, ``CUBIC``.
    * ``LANCZOS3``, ``LANCZOS5`` (``"lanczos3"``, ``"lanczos5"``): the Lanczos kernel
      ``sinc(x) sinc(x / r)`` of radius r = 3 or 5.
    * ``AREA`` (``"area"``): each output pixel the average of the input over its cell,
      weighted by overlap (a box filter; `antialias` makes no difference).

    Example:
        >>> ResizeMethod.from_string("bicubic")
        <ResizeMethod.CUBIC: 4>
    """
    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(s):
        """The method named `s` (JAX's names, lower case), or a ValueError listing them.

        Example:
            >>> ResizeMethod.from_string("trilinear")
            <ResizeMethod.LINEAR: 1>
        """
        try:
            return _NAMES[s]
        except (KeyError, TypeError):
            raise ValueError(f"Unknown resize method {s!r}: one of "
                             f"{', '.join(map(repr, _NAMES))}, or a ResizeMethod") from None


_NAMES = {"nearest": ResizeMethod.NEAREST, "linear": ResizeMethod.LINEAR,
          "bilinear": ResizeMethod.LINEAR, "trilinear": ResizeMethod.LINEAR,
          "triangle": ResizeMethod.LINEAR, "lanczos3": ResizeMethod.LANCZOS3,
          "lanczos5": ResizeMethod.LANCZOS5, "cubic": ResizeMethod.CUBIC,
          "bicubic": ResizeMethod.CUBIC, "tricubic": ResizeMethod.CUBIC,
          "cubic-pytorch": ResizeMethod.CUBIC_PYTORCH,
          "bicubic-pytorch": ResizeMethod.CUBIC_PYTORCH, "area": ResizeMethod.AREA}


def resize(image, shape, method, antialias=True, precision=None):
    """`image` resampled to `shape`, as ``jax.image.resize``: every axis whose size
    differs is resampled (an axis of shape's size is kept as it is, so batch and
    channel axes stay put when `shape` repeats their sizes).

    Args:
        image: an array of any rank (NumPy's or traced).
        shape: the result's shape, one size for each axis of `image`.
        method: a `ResizeMethod` or its name: ``"nearest"``, ``"linear"`` (or
            ``"bilinear"``, ``"trilinear"``), ``"cubic"`` (``"bicubic"``),
            ``"lanczos3"``, ``"lanczos5"``, ``"cubic-pytorch"``, ``"area"``.
        antialias: when downsampling, widen the kernel by the factor (a low-pass filter),
            so every input pixel counts; no effect when upsampling, nor for nearest and
            area.
        precision: accepted and ignored (NumPy computes in the image's precision).

    Returns the image in its own dtype for ``"nearest"``; else in its floating dtype
    (float64 for integers, as NumPy promotes them; JAX gives float32 for the smaller
    ones).  Differentiable in `image` to any order: a linear map.

    Example:
        >>> import numpy as np
        >>> x = np.arange(6.0).reshape(1, 6)
        >>> resize(x, (1, 3), "linear").round(4).tolist()          # a triangle filter
        [[0.7143, 2.5, 4.2857]]
        >>> resize(x, (1, 3), "linear", antialias=False).tolist()  # interpolation
        [[0.5, 2.5, 4.5]]
        >>> resize(np.array([1, 2, 3]), (5,), "nearest").tolist()
        [1, 1, 2, 3, 3]
    """
    who = "resize"
    image = _image(image)
    old = tuple(wnp.shape(image))
    shape = _shape(who, shape, old)
    method = _method(who, method)
    for d, (m, n) in enumerate(zip(old, shape)):
        if m == 0 and n > 0:
            raise ValueError(f"resize: axis {d} of the image of shape {old} is empty, and "
                             f"there is nothing to resample to size {n} (shape {shape})")
    if method is ResizeMethod.NEAREST:
        for d, (m, n) in enumerate(zip(old, shape)):
            if m != n:
                image = wnp.take(image, _nearest(m, n), axis=d)
        return image
    dims = [d for d in range(len(old)) if old[d] != shape[d]]
    # (an axis resized to 0 has no rows of weights: any scale will do)
    return _resample(image, shape, dims, [shape[d] / old[d] or 1.0 for d in dims],
                     [0.0] * len(dims), method, bool(antialias))


def scale_and_translate(image, shape, spatial_dims, scale, translation, method="linear",
                        antialias=True, precision=None):
    """`image` resampled along `spatial_dims` so that input coordinate x lands at
    ``x * scale + translation`` in the output, as ``jax.image.scale_and_translate``
    (coordinates of pixel edges: pixel i covers [i, i + 1)).  An output pixel whose
    source falls outside the input is 0.

    Args:
        image: an array of any rank.
        shape: the result's shape, one size for each axis of `image`; the axes not in
            `spatial_dims` keep their sizes.
        spatial_dims: the K axes to resample (negative ones count from the end).
        scale, translation: K numbers each (arrays of shape (K,)), one per axis of
            `spatial_dims`; a negative scale flips.  Traced ones are differentiated.
        method: a `ResizeMethod` or its name, as in `resize`, but not ``"nearest"``.
            (JAX has no default; ``"linear"`` here.)
        antialias: when downsampling (``|scale| < 1``), widen the kernel by 1/scale.
        precision: accepted and ignored.

    Differentiable in `image`, `scale` and `translation` (those through the weights,
    which are smooth in them but where a sample crosses a pixel centre or a kernel's
    edge, the linear kernel's kinks).

    Example:
        >>> import numpy as np, wengert as wg
        >>> x = np.array([0.0, 1.0, 4.0, 9.0])
        >>> # a shift by half a pixel: each output the mean of two neighbours
        >>> scale_and_translate(x, (4,), (0,), np.array([1.0]), np.array([0.5])).tolist()
        [0.0, 0.5, 2.5, 6.5]
        >>> # PyTorch's align_corners=True: scale (n - 1) / (m - 1), translation (1 - scale) / 2
        >>> s = 6 / 3
        >>> scale_and_translate(x, (7,), (0,), np.array([s]), np.array([0.5 * (1 - s)]),
        ...                     antialias=False).tolist()
        [0.0, 0.5, 1.0, 2.5, 4.0, 6.5, 9.0]
        >>> def shifted(t):                # d/dt of a shifted signal's sum
        ...     return scale_and_translate(x, (4,), (0,), np.ones(1), t).sum()
        >>> float(wg.grad(shifted)(np.array([0.25]))[0])   # the last pixel leaves: -9
        -9.0
    """
    who = "scale_and_translate"
    image = _image(image)
    old = tuple(wnp.shape(image))
    shape = _shape(who, shape, old)
    method = _method(who, method)
    if method is ResizeMethod.NEAREST:
        raise ValueError("scale_and_translate: nearest-neighbour resampling is not "
                         "supported (nor in JAX); use resize, or method='linear'")
    try:
        dims = [operator.index(d) for d in spatial_dims]
    except TypeError:
        raise TypeError(f"{who}: spatial_dims must be a sequence of axes (ints), got "
                        f"{spatial_dims!r}") from None
    rank = len(old)
    if any(not -rank <= d < rank for d in dims) or len({d % rank for d in dims}) < len(dims):
        raise ValueError(f"{who}: spatial_dims {tuple(dims)} must be distinct axes of the "
                         f"image of shape {old}")
    dims = [d % rank for d in dims]
    kept = [d for d in range(rank) if d not in dims and shape[d] != old[d]]
    if kept:
        raise ValueError(f"{who}: shape {shape} changes axis {kept[0]} of the image of "
                         f"shape {old}, which is not in spatial_dims {tuple(dims)}: only "
                         "those are resampled")
    scale = _per_axis(who, "scale", scale, len(dims))
    translation = _per_axis(who, "translation", translation, len(dims))
    known = known_value(scale)
    if known is not None and (np.asarray(known) == 0).any():
        raise ValueError(f"{who}: scale {np.asarray(known).tolist()} has a 0: every input "
                         "pixel would land on one output coordinate")
    return _resample(image, shape, dims, [scale[k] for k in range(len(dims))],
                     [translation[k] for k in range(len(dims))], method, bool(antialias))


# ---- the weights -------------------------------------------------------------------------------
# A sum of weights below this is taken as none (the output 0): 1000 float32 epsilons, the
# cutoff JAX's results show (a PyTorch-cubic sample moved out past the repeated edge
# pixels turns from the edge value to 0 where its weights' sum falls below it).
_TINY = 1000 * float(np.finfo(np.float32).eps)


def _triangle(x):
    return wnp.maximum(0.0, 1.0 - x)


def _keys(a):
    """Keys' cubic convolution kernel with parameter a (-0.5: Keys'; -0.75: PyTorch's)."""
    def kernel(x):
        near = ((a + 2) * x - (a + 3)) * x * x + 1
        far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        return wnp.where(x < 1, near, wnp.where(x < 2, far, 0.0))
    return kernel


def _lanczos(radius):
    def kernel(x):
        return wnp.where(x < radius, wnp.sinc(x) * wnp.sinc(x / radius), 0.0)
    return kernel


_KERNELS = {ResizeMethod.LINEAR: _triangle, ResizeMethod.CUBIC: _keys(-0.5),
            ResizeMethod.CUBIC_PYTORCH: _keys(-0.75), ResizeMethod.LANCZOS3: _lanczos(3),
            ResizeMethod.LANCZOS5: _lanczos(5)}


def _weights(m, n, scale, translation, method, antialias):
    """The (n, m) matrix whose row j weighs the input pixels for output pixel j, built
    with wengert.numpy, so that a traced scale or translation makes it a graph (its
    derivative) and plain numbers make it a NumPy array."""
    centre = (np.arange(n) + 0.5 - translation) / scale     # each output's source
    if method is ResizeMethod.AREA:
        return _area_weights(m, n, scale, translation, centre)
    padded = method is ResizeMethod.CUBIC_PYTORCH and not antialias
    if method is ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC             # (PyTorch's antialiased bicubic is Keys')
    kernel = _KERNELS[method]
    # PyTorch's edge padding: two more pixels on each side (the cubic's reach), copies
    # of the edge pixels, which `fold` adds back onto them
    pad = 2 if padded else 0
    pixels = np.arange(-pad, m + pad) + 0.5
    width = wnp.maximum(1.0 / scale, 1.0) if antialias else 1.0
    w = kernel(wnp.abs(centre[:, None] - pixels[None, :]) / width)
    total = wnp.sum(w, axis=1, keepdims=True)
    w = wnp.where(wnp.abs(total) > _TINY, w / wnp.where(total == 0, 1.0, total), 0.0)
    if padded:
        fold = np.zeros((m + 2 * pad, m))
        fold[np.arange(m + 2 * pad), np.clip(np.arange(-pad, m + pad), 0, m - 1)] = 1.0
        return w @ fold
    inside = (centre >= 0) & (centre <= m)
    return wnp.where(inside[:, None], w, 0.0)


def _area_weights(m, n, scale, translation, centre):
    """AREA: output j's cell, [j, j + 1) mapped back to the input, overlapping input
    pixel i's [i, i + 1): the overlap, as a fraction of the cell, then normalised.  (JAX
    normalises the overlaps in pixels, so that an upsampling by more than about 8,000
    makes every cell smaller than its cutoff, and the image 0; here such a cell still
    takes its pixel's value.)"""
    ends = (np.arange(n + 1) - translation) / scale
    lo, hi = wnp.minimum(ends[:-1], ends[1:]), wnp.maximum(ends[:-1], ends[1:])
    i = np.arange(m)
    overlap = wnp.maximum(wnp.minimum(hi[:, None], i + 1.0) - wnp.maximum(lo[:, None], i),
                          0.0) / (hi - lo)[:, None]
    total = wnp.sum(overlap, axis=1, keepdims=True)
    w = wnp.where(total > _TINY, overlap / wnp.where(total == 0, 1.0, total), 0.0)
    inside = (centre >= 0) & (centre <= m)
    return wnp.where(inside[:, None], w, 0.0)


def _nearest(m, n):
    """The input pixel each of n outputs takes from an axis of m: the one whose cell holds
    its centre, (j + 0.5) m / n, rounded down.  Computed as JAX computes it, in float32
    as (j + 0.5) * (m * (1 / n)), so that a centre on the boundary of two cells (and,
    past about 4,000 pixels, one within float32's rounding of it) takes JAX's pixel."""
    if n == 0:
        return np.zeros(0, np.int64)
    f32 = np.float32
    j = np.arange(n).astype(f32)
    where = np.floor((j + f32(0.5)) * (f32(m) * (f32(1) / f32(n))))
    return np.minimum(where.astype(np.int64), m - 1)


def _resample(image, shape, dims, scales, translations, method, antialias):
    """`image` in a floating dtype, each axis of `dims` resampled to `shape`'s size by
    the weights of its scale and translation."""
    dtype = np.dtype(wnp.result_type(image))
    if dtype.kind not in "fc":
        dtype = np.dtype(np.float64)
        image = wnp.astype(image, dtype)
    real = np.finfo(dtype).dtype      # (the weights: float32 for complex64, ...)
    for d, s, t in zip(dims, scales, translations):
        w = _weights(wnp.shape(image)[d], shape[d], s, t, method, antialias)
        if wnp.result_type(w) != real:
            w = wnp.astype(w, real)
        image = _along(image, w, d)
    return image


def _along(image, w, axis):
    """`image` with its `axis` (of size m) replaced by ``w @`` it, for the (n, m) matrix
    w: one matrix product of the image's other axes, flattened, by w's transpose.  (A
    tensordot is an einsum of two operands, which NumPy runs without BLAS: its
    derivative took 30 times as long.)"""
    moved = wnp.moveaxis(image, axis, -1)
    rest = tuple(wnp.shape(moved))[:-1]
    n, m = wnp.shape(w)
    rows = wnp.reshape(moved, (math.prod(rest), m)) @ wnp.transpose(w)
    return wnp.moveaxis(wnp.reshape(rows, rest + (n,)), -1, axis)


# ---- arguments ---------------------------------------------------------------------------------
def _image(image):
    return image if type(image) is Node else np.asarray(image)


def _shape(who, shape, old):
    if any(type(n) is Node for n in np.ravel(np.asarray(shape, dtype=object))):
        raise TypeError(f"{who}: shape is traced (an argument of wg.jit or wg.compile, or "
                        "computed from one), but it is the result's shape, which must be "
                        "known when tracing: mark it static (static_argnums, "
                        "static_argnames), as JAX requires")
    try:
        shape = tuple(operator.index(n) for n in shape)
    except TypeError:
        raise TypeError(f"{who}: shape must be a sequence of ints, got {shape!r}") from None
    if len(shape) != len(old):
        raise ValueError(f"{who}: shape {shape} must have one size for each axis of the "
                         f"image, of shape {old} (batch and channel axes too: repeat "
                         "their sizes to keep them)")
    if any(n < 0 for n in shape):
        raise ValueError(f"{who}: shape {shape} has a negative size")
    return shape


def _method(who, method):
    if isinstance(method, ResizeMethod):
        return method
    if isinstance(method, str):
        try:
            return ResizeMethod.from_string(method)
        except ValueError as e:
            raise ValueError(f"{who}: {e}") from None
    raise TypeError(f"{who}: method must be a ResizeMethod or its name, such as 'linear', "
                    f"got {method!r}")


def _per_axis(who, name, values, k):
    """`values` as K numbers: a traced (K,) array as it is, else a float array."""
    if type(values) is not Node:
        values = np.asarray(values, dtype=np.float64)
    if tuple(wnp.shape(values)) != (k,):
        raise ValueError(f"{who}: {name} must hold one number for each of the {k} "
                         f"spatial_dims, shape ({k},); got shape {tuple(wnp.shape(values))}")
    return values
