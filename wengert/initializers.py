"""JAX's ``jax.nn.initializers`` (``wengert.nn.initializers``): functions that make an
initializer, ``init(key, shape, dtype)``, which draws an array of weights from a
`wengert.random` key.  The distributions and their scales are JAX's; the numbers are not
(wengert's random bits are not JAX's).  float64 by default, as JAX's with x64.

Example:
    >>> import numpy as np, wengert as jax
    >>> init = jax.nn.initializers.glorot_normal()
    >>> w = init(jax.random.PRNGKey(0), (256, 128))
    >>> w.shape, w.dtype, round(float(w.std() * np.sqrt((256 + 128) / 2)), 1)
    ((256, 128), dtype('float64'), 1.0)
"""
import math

import numpy as _np

from . import numpy as wnp
from . import random

__all__ = ["zeros", "ones", "constant", "uniform", "normal", "truncated_normal",
           "variance_scaling", "glorot_uniform", "glorot_normal", "xavier_uniform",
           "xavier_normal", "lecun_uniform", "lecun_normal", "he_uniform", "he_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal", "delta_orthogonal"]

_DEFAULT = _np.float64


def _shape(shape, who):
    if isinstance(shape, (int, _np.integer)):
        shape = (shape,)
    try:
        shape = tuple(int(d) for d in shape)
    except TypeError:
        raise TypeError(f"{who}: shape must be a tuple of ints, got {shape!r}") from None
    if any(d < 0 for d in shape):
        raise ValueError(f"{who}: shape must have no negative dimensions, got {shape}")
    return shape


def _real_dtype(dtype, who):
    dtype = _np.dtype(_DEFAULT if dtype is None else dtype)
    if dtype.kind != "f":
        raise TypeError(f"{who}: dtype must be a float dtype, got {dtype} (complex weights "
                        "are not offered)")
    return dtype


def zeros(key, shape, dtype=_DEFAULT):
    """JAX's ``initializers.zeros``: itself an initializer (no key is read).

    Example:
        >>> import wengert as jax
        >>> jax.nn.initializers.zeros(jax.random.PRNGKey(0), (2,)).tolist()
        [0.0, 0.0]
    """
    return _np.zeros(_shape(shape, "zeros"), dtype)


def ones(key, shape, dtype=_DEFAULT):
    """JAX's ``initializers.ones``: itself an initializer (no key is read).

    Example:
        >>> import wengert as jax
        >>> jax.nn.initializers.ones(jax.random.PRNGKey(0), (2,)).tolist()
        [1.0, 1.0]
    """
    return _np.ones(_shape(shape, "ones"), dtype)


def constant(value, dtype=_DEFAULT):
    """JAX's ``initializers.constant(value)``: every weight `value`.

    Example:
        >>> import wengert as jax
        >>> jax.nn.initializers.constant(0.5)(jax.random.PRNGKey(0), (3,)).tolist()
        [0.5, 0.5, 0.5]
    """
    default = dtype

    def init(key, shape, dtype=default):
        return wnp.full(_shape(shape, "constant"), value, dtype=dtype)
    return init


def uniform(scale=1e-2, dtype=_DEFAULT):
    """JAX's ``initializers.uniform``: uniform on ``[0, scale)``.

    Example:
        >>> import wengert as jax
        >>> w = jax.nn.initializers.uniform(2.0)(jax.random.PRNGKey(0), (1000,))
        >>> bool(0.0 <= w.min() and w.max() < 2.0)
        True
    """
    default = dtype

    def init(key, shape, dtype=default):
        dtype = _real_dtype(dtype, "uniform")
        return random.uniform(key, _shape(shape, "uniform"), dtype) * dtype.type(scale)
    return init


def normal(stddev=1e-2, dtype=_DEFAULT):
    """JAX's ``initializers.normal``: normal with mean 0 and deviation `stddev`.

    Example:
        >>> import wengert as jax
        >>> w = jax.nn.initializers.normal(3.0)(jax.random.PRNGKey(0), (10000,))
        >>> round(float(w.std()), 1)
        3.0
    """
    default = dtype

    def init(key, shape, dtype=default):
        dtype = _real_dtype(dtype, "normal")
        return random.normal(key, _shape(shape, "normal"), dtype) * dtype.type(stddev)
    return init


def truncated_normal(stddev=1e-2, dtype=_DEFAULT, lower=-2.0, upper=2.0):
    """JAX's ``initializers.truncated_normal``: `stddev` times a standard normal truncated
    to ``[lower, upper]`` (so the deviation is a little below `stddev`, as in JAX).

    Example:
        >>> import wengert as jax
        >>> w = jax.nn.initializers.truncated_normal(1.0)(jax.random.PRNGKey(0), (1000,))
        >>> bool(abs(w).max() <= 2.0)
        True
    """
    default = dtype

    def init(key, shape, dtype=default):
        dtype = _real_dtype(dtype, "truncated_normal")
        return random.truncated_normal(key, lower, upper, _shape(shape, "truncated_normal"),
                                       dtype) * dtype.type(stddev)
    return init


def _axes(axis, ndim, what):
    axes = (axis,) if isinstance(axis, (int, _np.integer)) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"variance_scaling: {what} {a} is out of range for a shape of "
                             f"{ndim} dimensions (it needs at least 2, or other axes)")
        out.append(int(a) % ndim)
    return out


def _fans(shape, in_axis, out_axis, batch_axis):
    """JAX's fans: the sizes of the input and output axes, each times the size of the
    axes that are none of in, out and batch (a convolution's receptive field)."""
    ndim = len(shape)
    ins, outs = _axes(in_axis, ndim, "in_axis"), _axes(out_axis, ndim, "out_axis")
    batch = _axes(batch_axis, ndim, "batch_axis")
    field = math.prod(d for i, d in enumerate(shape) if i not in ins + outs + batch)
    return (math.prod(shape[i] for i in ins) * field,
            math.prod(shape[i] for i in outs) * field)


# the deviation of a standard normal truncated to [-2, 2]
_TRUNCATED_STD = 0.87962566103423978

_MODES = ("fan_in", "fan_out", "fan_avg", "fan_geo_avg")
_DISTRIBUTIONS = ("truncated_normal", "normal", "uniform")


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(),
                     dtype=_DEFAULT):
    """JAX's ``initializers.variance_scaling``: weights with mean 0 and variance
    ``scale / n``, n by `mode` from the fans (``"fan_in"``, ``"fan_out"``, ``"fan_avg"``
    their mean, ``"fan_geo_avg"`` their geometric mean), drawn from `distribution`:
    ``"truncated_normal"`` (truncated at two deviations, then scaled to the variance),
    ``"normal"`` or ``"uniform"``.  The fans are the sizes of `in_axis` and `out_axis`,
    each times the sizes of the axes that are none of in, out and `batch_axis`.

    Example:
        >>> import numpy as np, wengert as jax
        >>> init = jax.nn.initializers.variance_scaling(2.0, "fan_in", "uniform")
        >>> w = init(jax.random.PRNGKey(0), (500, 400))
        >>> round(float(w.var() * 500 / 2.0), 1)
        1.0
    """
    if mode not in _MODES:
        raise ValueError(f"variance_scaling: mode must be one of {_MODES}, got {mode!r}")
    if distribution not in _DISTRIBUTIONS:
        raise ValueError(f"variance_scaling: distribution must be one of {_DISTRIBUTIONS}, "
                         f"got {distribution!r}")
    if not scale > 0:
        raise ValueError(f"variance_scaling: scale must be positive, got {scale}")
    default = dtype

    def init(key, shape, dtype=default):
        shape = _shape(shape, "variance_scaling")
        dtype = _real_dtype(dtype, "variance_scaling")
        fan_in, fan_out = _fans(shape, in_axis, out_axis, batch_axis)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
             "fan_geo_avg": math.sqrt(fan_in * fan_out)}[mode]
        variance = scale / max(n, 1)    # (an empty axis: no weights to scale)
        if distribution == "truncated_normal":
            std = dtype.type(math.sqrt(variance) / _TRUNCATED_STD)
            return random.truncated_normal(key, -2.0, 2.0, shape, dtype) * std
        if distribution == "normal":
            return random.normal(key, shape, dtype) * dtype.type(math.sqrt(variance))
        return random.uniform(key, shape, dtype, -1.0, 1.0) * \
            dtype.type(math.sqrt(3 * variance))
    return init


def _named(name, scale, mode, distribution, doc_value):
    def make(in_axis=-2, out_axis=-1, batch_axis=(), dtype=_DEFAULT):
        return variance_scaling(scale, mode, distribution, in_axis, out_axis, batch_axis,
                                dtype)
    make.__name__ = make.__qualname__ = name
    make.__doc__ = f"""JAX's ``initializers.{name}``: ``variance_scaling({scale}, "{mode}",
    "{distribution}")``.

    Example:
        >>> import numpy as np, wengert as jax
        >>> w = jax.nn.initializers.{name}()(jax.random.PRNGKey(0), (400, 600))
        >>> round(float(w.var() * {doc_value}), 1)
        1.0
    """
    return make


glorot_uniform = _named("glorot_uniform", 1.0, "fan_avg", "uniform", 500)
glorot_normal = _named("glorot_normal", 1.0, "fan_avg", "truncated_normal", 500)
lecun_uniform = _named("lecun_uniform", 1.0, "fan_in", "uniform", 400)
lecun_normal = _named("lecun_normal", 1.0, "fan_in", "truncated_normal", 400)
he_uniform = _named("he_uniform", 2.0, "fan_in", "uniform", 200)
he_normal = _named("he_normal", 2.0, "fan_in", "truncated_normal", 200)
xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


def _orthogonal_matrix(key, rows, cols, dtype):
    """A (rows, cols) matrix with orthonormal rows or columns (whichever are fewer), from
    the QR factors of a normal matrix, signs fixed by R's diagonal so that it is drawn
    uniformly (Haar)."""
    tall = rows >= cols
    a = random.normal(key, (rows, cols) if tall else (cols, rows), dtype)
    q, r = wnp.linalg.qr(a)
    q = q * wnp.sign(wnp.diagonal(r))
    return q if tall else wnp.transpose(q)


def orthogonal(scale=1.0, column_axis=-1, dtype=_DEFAULT):
    """JAX's ``initializers.orthogonal``: the array as a matrix, `column_axis` its columns
    and the other axes flattened its rows, with orthonormal rows or columns (whichever
    are fewer), times `scale`.

    Example:
        >>> import numpy as np, wengert as jax
        >>> w = jax.nn.initializers.orthogonal()(jax.random.PRNGKey(0), (5, 3))
        >>> np.allclose(w.T @ w, np.eye(3))
        True
    """
    default = dtype

    def init(key, shape, dtype=default):
        shape = _shape(shape, "orthogonal")
        dtype = _real_dtype(dtype, "orthogonal")
        if len(shape) < 2:
            raise ValueError(f"orthogonal: the shape must have at least 2 dimensions, got "
                             f"{shape}")
        axis = _axes(column_axis, len(shape), "column_axis")[0]
        cols = shape[axis]
        rest = shape[:axis] + shape[axis + 1:]
        q = _orthogonal_matrix(key, math.prod(rest), cols, dtype)
        return wnp.moveaxis(wnp.reshape(q, rest + (cols,)), -1, axis) * dtype.type(scale)
    return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=_DEFAULT):
    """JAX's ``initializers.delta_orthogonal``, for convolution kernels of 3 to 5
    dimensions (spatial axes first, then in and out channels, in <= out): zeros but at
    the centre of the window (index (size - 1) // 2 on each axis), an orthogonal
    (in, out) matrix times `scale`.

    Example:
        >>> import numpy as np, wengert as jax
        >>> w = jax.nn.initializers.delta_orthogonal()(jax.random.PRNGKey(0), (3, 3, 2, 4))
        >>> np.allclose(w[1, 1] @ w[1, 1].T, np.eye(2)), float(abs(w[0]).max())
        (True, 0.0)
    """
    default = dtype

    def init(key, shape, dtype=default):
        shape = _shape(shape, "delta_orthogonal")
        dtype = _real_dtype(dtype, "delta_orthogonal")
        if len(shape) not in (3, 4, 5):
            raise ValueError(f"delta_orthogonal: a kernel of 3 to 5 dimensions, got shape "
                             f"{shape}")
        if column_axis not in (-1, len(shape) - 1):
            raise ValueError("delta_orthogonal: column_axis must be the last axis")
        n_in, n_out = shape[-2:]
        if n_in > n_out:
            raise ValueError(f"delta_orthogonal: in channels ({n_in}) must be at most the "
                             f"out channels ({n_out})")
        matrix = orthogonal(scale, -1, dtype)(key, (n_in, n_out), dtype)
        centre = tuple((d - 1) // 2 for d in shape[:-2])     # (JAX's, for even sizes too)
        kernel = wnp.zeros(shape, dtype)
        return wnp.at(kernel)[centre].set(matrix)
    return init
