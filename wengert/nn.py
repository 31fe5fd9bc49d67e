"""Neural-network building blocks, functional (as ``torch.nn.functional`` and ``jax.nn``).

* layers: conv2d (``F.conv2d``'s stride, padding, dilation and groups), max_pool2d and
  avg_pool2d (PyTorch's padding, ceil_mode, max pooling's dilation, average pooling's
  count_include_pad and divisor_override), linear; images are NCHW, kernels OIHW, as in
  PyTorch;
* activations: relu, sigmoid, log_sigmoid, softplus, silu, gelu, elu, leaky_relu,
  softmax, log_softmax (``where=``), and jax.nn's others (relu6, hard_sigmoid,
  hard_silu, hard_tanh, celu, selu, soft_sign, mish, squareplus, sparse_plus,
  sparse_sigmoid, log1mexp, glu, swish, tanh, identity), logsumexp, logmeanexp,
  standardize, dot_product_attention; ``initializers`` (jax.nn.initializers);
* normalisation and regularisation: layer_norm, batch_norm (training mode: batch
  statistics), dropout (an explicit ``numpy.random.Generator``);
* losses: cross_entropy, nll_loss, binary_cross_entropy_with_logits,
  binary_cross_entropy, mse_loss, l1_loss, huber_loss, smooth_l1_loss, kl_div, each with
  PyTorch's arguments (class weights, ignore_index, label smoothing, pos_weight, ...) and
  ``reduction="mean" | "sum" | "none"``; one_hot.

The convolution, max pooling, relu, softmax, log_softmax and cross_entropy are primitives
(and sigmoid is SciPy's expit primitive, where SciPy is installed; gelu's erf is a
primitive that needs no SciPy); everything else is
written with ``wengert.numpy``, so it runs NumPy on plain arrays and its
derivatives (of every order) and batching rules are those of the primitives it uses.

Example:
    >>> import numpy as np
    >>> import wengert as wg
    >>> import wengert.nn as nn
    >>> x = np.random.default_rng(0).normal(size=(2, 1, 6, 6))
    >>> w = np.ones((3, 1, 3, 3)) / 9
    >>> nn.max_pool2d(nn.relu(nn.conv2d(x, w, padding=1)), 2).shape
    (2, 3, 3, 3)
"""
from __future__ import annotations

import functools
import importlib.util as _importlib_util

import numpy as _np

from .graph.node import Node
from .errors import ConcretizationError
from .primitives import array as _A, nn as P
from .primitives import special as _special
from .primitives.registry import broadcasts_to
from . import numpy as wnp
from . import initializers  # noqa: F401  (JAX's jax.nn.initializers)

__all__ = ["conv2d", "max_pool2d", "max_unpool2d", "avg_pool2d", "linear", "layer_norm", "batch_norm",
           "dropout", "relu", "leaky_relu", "elu", "gelu", "silu", "sigmoid", "log_sigmoid",
           "softplus", "softmax", "log_softmax", "one_hot", "cross_entropy", "nll_loss",
           "relu6", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh", "celu", "selu",
           "soft_sign", "mish", "squareplus", "sparse_plus", "sparse_sigmoid", "log1mexp",
           "glu", "identity", "swish", "tanh", "logsumexp", "logmeanexp", "standardize",
           "dot_product_attention", "initializers",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "mse_loss",
           "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div"]

relu = P.relu

_HAVE_SCIPY = _importlib_util.find_spec("scipy") is not None


def _pair(v, name, who):
    """An int or a pair of ints (height, width), as a pair: PyTorch's ``_pair``."""
    if type(v) is int:                          # (the usual case, first)
        return (v, v)
    if isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise ValueError(f"{who}: {name} must be an int or a pair (height, width), "
                             f"got {v!r}")
        pair = tuple(v)
    else:
        pair = (v, v)
    if not all(isinstance(e, (int, _np.integer)) and not isinstance(e, bool) for e in pair):
        raise TypeError(f"{who}: {name} must be an int or a pair of ints (height, width), "
                        f"got {v!r}")
    return int(pair[0]), int(pair[1])


_NO_PADDING = ((0, 0), (0, 0))


def _conv_padding(padding, kernel, stride, dilation):
    """conv2d's padding as ((top, bottom), (left, right)): from an int, a pair, or
    PyTorch's strings 'valid' (none) and 'same' (the output as large as the input, the
    odd zero of an odd total at the bottom and right, as PyTorch puts it)."""
    if isinstance(padding, str):
        if padding == "valid":
            return _NO_PADDING
        if padding == "same":
            if stride != (1, 1):
                raise ValueError(f"conv2d: padding='same' is not supported for strided "
                                 f"convolutions (stride {stride}), as in PyTorch: give the "
                                 f"padding as numbers")
            totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
            return tuple((t // 2, t - t // 2) for t in totals)
        raise ValueError(f"conv2d: padding must be an int, a pair (height, width), 'valid' "
                         f"or 'same', got {padding!r}")
    ph, pw = _pair(padding, "padding", "conv2d")
    if ph < 0 or pw < 0:
        raise ValueError(f"conv2d: padding must be >= 0, got padding {padding!r}")
    return (ph, ph), (pw, pw)


def _conv_geometry(ws, stride, padding, dilation, groups):
    """conv2d's settings for kernels of shape ws, checked, in the primitive's form."""
    stride = _pair(stride, "stride", "conv2d")
    dilation = _pair(dilation, "dilation", "conv2d")
    if min(stride) < 1 or min(dilation) < 1:
        raise ValueError(f"conv2d: stride must be >= 1 and dilation >= 1, got stride "
                         f"{stride} and dilation {dilation}")
    if isinstance(groups, bool) or not isinstance(groups, (int, _np.integer)):
        raise TypeError(f"conv2d: groups must be an int, got {groups!r}")
    groups = int(groups)
    if groups < 1:
        raise ValueError(f"conv2d: groups must be >= 1, got {groups}")
    padding = _conv_padding(padding, ws[2:], stride, dilation)
    return {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}


def _one_image(layer):
    """`layer` (of NCHW images) that also takes one image, (C, H, W), as PyTorch's layers
    do: it is a batch of one, and the result loses that axis again."""
    @functools.wraps(layer)
    def either(x, *args, **kwargs):
        if len(wnp._shape(x)) != 3:
            return layer(x, *args, **kwargs)
        out = layer(wnp.expand_dims(x, 0), *args, **kwargs)
        return tuple(o[0] for o in out) if type(out) is tuple else out[0]
    return either


def _check_images(shape, who):
    if len(shape) != 4:         # (one image, (C, H, W), was made a batch by `_one_image`)
        raise ValueError(f"{who}: expected images of shape (N, C, H, W) or one of shape "
                         f"(C, H, W), got {shape}")


@_one_image
def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation, as in deep-learning libraries), with
    PyTorch's ``F.conv2d`` signature.

    Args:
        x: images, shape (N, C, H, W), or one image, (C, H, W).
        weight: kernels, shape (O, C/groups, kh, kw).
        bias: optional, shape (O,).
        stride: an int or a pair (sh, sw), each >= 1.
        padding: zeros around the images: an int or a pair (ph, pw), each >= 0, on both
            sides; or ``"valid"`` (none) or ``"same"`` (the output as large as the input;
            stride 1 only, as in PyTorch; an odd total pads one more at the bottom and
            right, as PyTorch does).
        dilation: an int or a pair (dh, dw), each >= 1: the kernel's taps are dh rows and
            dw columns apart (an atrous convolution).
        groups: channels and kernels are split into ``groups`` groups (dividing C and O),
            the kernels of group g seeing only the channels of group g; ``groups=C`` is a
            depthwise convolution.

    Returns:
        shape (N, O, Ho, Wo), with ``Ho = (H + 2 ph - dh (kh - 1) - 1) // sh + 1`` (and Wo
        alike).

    The derivatives are the convolution's own transposes (a strided, dilated, grouped
    input gradient is a transposed convolution), primitives whose derivatives are each
    other, so every order works; wg.vmap folds the batch into N, or, with a kernel per
    example, into the channels of one grouped convolution.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.conv2d(np.ones((1, 1, 3, 3)), np.ones((1, 1, 2, 2))).tolist()
        [[[[4.0, 4.0], [4.0, 4.0]]]]
        >>> x = np.arange(50.0).reshape(1, 2, 5, 5)             # 2 channels
        >>> w = np.ones((2, 1, 3, 3))                           # depthwise: 1 channel each
        >>> nn.conv2d(x, w, stride=(2, 1), padding=(1, 0), groups=2).shape
        (1, 2, 3, 3)
        >>> nn.conv2d(x, w, padding="same", dilation=2, groups=2).shape
        (1, 2, 5, 5)
    """
    if type(weight) is not Node and type(weight) is not _np.ndarray:
        weight = wnp.asarray(weight)        # (a list of kernels, as for the images)
    xs, ws = wnp._shape(x), wnp._shape(weight)
    _check_images(xs, "conv2d")
    if len(ws) != 4:
        raise ValueError(f"conv2d: expected kernels of shape (O, C/groups, kh, kw) for "
                         f"images of shape {xs}, got {ws}")
    if type(stride) is int and type(padding) is int and type(dilation) is int \
            and type(groups) is int and stride >= 1 and padding >= 0 and dilation == groups == 1:
        # the usual layer, without the general parsing: a training step's overhead
        geometry = {"stride": (stride, stride), "padding": ((padding, padding),) * 2,
                    "dilation": (1, 1), "groups": 1}
    else:
        geometry = _conv_geometry(ws, stride, padding, dilation, groups)
    P.conv_out_shape(xs, ws, **geometry)                # (raises naming what does not fit)
    y = P.conv2d(x, weight, **geometry)
    if bias is not None:
        bs = bias.shape if type(bias) in (Node, _np.ndarray) else _np.shape(bias)
        if bs != (ws[0],):
            raise ValueError(f"conv2d: expected bias of shape ({ws[0]},) for kernels of "
                             f"shape {ws}, got {bs}")
        y = y + wnp.reshape(bias, (1, -1, 1, 1))
    return y


@_one_image
def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max pooling over kh x kw windows, as PyTorch's ``F.max_pool2d``: kernel_size,
    stride (by default the kernel size), padding and dilation each an int or a pair
    (height, width).  The padding (at most half the window, as PyTorch asks) is -inf,
    which no window picks; a dilated window's taps are dh rows and dw columns apart.
    With ``ceil_mode=True`` the output size rounds up, ``ceil((H + 2 ph - dh (kh - 1) -
    1) / sh) + 1``, so the last windows may hang over the bottom and right edges (their
    missing part counts as -inf), except that, as in PyTorch, a window must start inside
    the image or its top or left padding (one that would start in the bottom or right
    padding is dropped).  The derivative goes to each window's arg-max (the first, in a
    tie; a window holding nan has the maximum nan, at its first nan).  With
    ``return_indices=True`` also where each maximum sits, as PyTorch gives it: an int64
    array of the output's shape, the flat index into the (unpadded) H x W plane, which
    `max_unpool2d` reads; a window whose part in the image is all -inf names the first
    of those places (PyTorch's choice), though its derivative, of a maximum that no
    finite change moves, may go to the padding, which drops it; a window holding
    several nans names its first (PyTorch's may name another).

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> x = np.arange(16.0).reshape(1, 1, 4, 4)
        >>> nn.max_pool2d(x, 2).tolist()
        [[[[5.0, 7.0], [13.0, 15.0]]]]
        >>> nn.max_pool2d(x, (1, 2), padding=(0, 1)).tolist()
        [[[[0.0, 2.0, 3.0], [4.0, 6.0, 7.0], [8.0, 10.0, 11.0], [12.0, 14.0, 15.0]]]]
        >>> nn.max_pool2d(x, 2, stride=1, dilation=2).tolist()     # taps 2 apart
        [[[[10.0, 11.0], [14.0, 15.0]]]]
        >>> nn.max_pool2d(x, 3, stride=2, ceil_mode=True).tolist()   # 2 windows, not 1
        [[[[10.0, 11.0], [14.0, 15.0]]]]
        >>> nn.max_pool2d(x, 2, return_indices=True)[1].tolist()     # flat in the 4x4 plane
        [[[[5, 7], [13, 15]]]]
    """
    k, s, (ph, pw), d, _, (eh, ew) = _pool_settings(x, kernel_size, stride, padding,
                                                     dilation, ceil_mode, "max_pool2d")
    height, width = wnp._shape(x)[2:]                 # (the image's, before padding)
    if ph or pw or eh or ew:
        dtype = x.dtype if type(x) is Node else _np.asarray(x).dtype
        # (the padding never wins a window: the dtype's least value; False for booleans,
        # where -inf would be True)
        low = (_np.iinfo(dtype).min if dtype.kind in "iu" else False if dtype.kind == "b"
               else -_np.inf)
        x = wnp.pad(x, ((0, 0), (0, 0), (ph, ph + eh), (pw, pw + ew)), constant_values=low)
    if d == (1, 1):             # (a CNN's plain pool: no dilation parameter in its graph)
        if not return_indices:
            return P.max_pool2d(x, kernel=k, stride=s)
        geometry = dict(kernel=k, stride=s)
    else:
        geometry = dict(kernel=k, stride=s, dilation=d)
    y = P.max_pool2d(x, **geometry)
    if not return_indices:
        return y
    return y, P.pool_argmax(x, **geometry, pad=(ph, pw), width=width, height=height)


def max_unpool2d(x, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of `max_pool2d` as far as it goes, as PyTorch's ``F.max_unpool2d``: each value
    of x (images (N, C, H, W), or one, (C, H, W)) goes to the place `indices` (max_pool2d's
    ``return_indices``) names in its image plane, every other place is zero.  The output's
    height and width are ``(H_in - 1) * stride - 2 * padding + kernel_size`` unless
    `output_size` ((H, W), or a shape ending in them) says otherwise.  Linear in x: its
    derivative gathers the cotangent back from the same places.  Where windows overlap, two
    of them may name one place (they picked the same maximum, so their values agree): the
    first one's value lands there, and only it gets the place's cotangent.

    An index outside the output plane (negative, or at least its height times width) is a
    ``ValueError`` naming it and the plane, never read from the plane's end: eagerly, and,
    in a function traced without the indices' values (``wg.compile``, ``wg.vmap``), when
    it runs.

    Example:
        >>> import numpy as np, wengert as wg, wengert.nn as nn
        >>> x = np.array([[[[1.0, 5.0], [7.0, 2.0]]]])
        >>> y, where = nn.max_pool2d(x, (1, 2), return_indices=True)
        >>> nn.max_unpool2d(y, where, (1, 2)).tolist()
        [[[[0.0, 5.0], [7.0, 0.0]]]]
        >>> unpool = wg.compile(lambda y, i: nn.max_unpool2d(y, i, (1, 2)), y, where)
        >>> unpool(y, where - 2)                  # (-1 would be read from the end in NumPy)
        Traceback (most recent call last):
        ValueError: max_unpool2d: index -1 lies outside the 2x2 output plane: indices must ...
    """
    who = "max_unpool2d"
    if len(wnp._shape(x)) == 3 and len(wnp._shape(indices)) == 3:
        # one image, (C, H, W), as PyTorch's takes it (with its indices): a batch of one
        return max_unpool2d(wnp.expand_dims(x, 0), wnp.expand_dims(indices, 0), kernel_size,
                            stride, padding, output_size)[0]
    k = _pair(kernel_size, "kernel_size", who)
    s = k if stride is None else _pair(stride, "stride", who)
    p = _pair(padding, "padding", who)
    xs, js = wnp._shape(x), wnp._shape(indices)
    if len(xs) != 4:
        raise ValueError(f"{who}: expected pooled images of shape (N, C, H, W) or one of "
                         f"shape (C, H, W), got {xs}")
    if tuple(js) != tuple(xs):
        raise ValueError(f"{who}: indices of shape {tuple(js)} do not match x of shape "
                         f"{tuple(xs)}: pass max_pool2d's, with return_indices=True")
    if _A.dtype_of(indices).kind not in "iu":
        raise TypeError(f"{who}: indices must be integers (max_pool2d's return_indices), "
                        f"got {_A.dtype_of(indices)}")
    n, c, ho, wo = xs
    if output_size is None:
        size = ((ho - 1) * s[0] - 2 * p[0] + k[0], (wo - 1) * s[1] - 2 * p[1] + k[1])
        if min(size) < 1:
            raise ValueError(f"{who}: pooled images of shape {tuple(xs)} with kernel {k}, "
                             f"stride {s} and padding {p} unpool to {size}, which is empty: "
                             "the padding is larger than max_pool2d's can have been")
    else:
        size = tuple(int(v) for v in tuple(output_size)[-2:])
        if len(size) != 2 or min(size) < 1:
            raise ValueError(f"{who}: output_size must end in a height and a width >= 1, "
                             f"got {output_size!r}")
    # (the primitive checks the indices' range wherever their values are: eagerly here, and
    # when a function traced without them runs)
    return P.max_unpool(x, indices, size=size)


def _pool_settings(x, kernel_size, stride, padding, dilation, ceil_mode, who):
    """(kernel, stride, padding, dilation, output size, overhang) of a pooling of NCHW
    images, each a pair (height, width), checked; the overhang is how far the last
    windows of ceil_mode reach past the bottom and right padding."""
    if type(kernel_size) is int and (stride is None or type(stride) is int) \
            and type(padding) is int and padding == 0 and type(dilation) is int \
            and dilation == 1 and ceil_mode is False:
        # a CNN's plain pool, without the general parsing: a training step's overhead
        s = kernel_size if stride is None else stride
        xs = wnp._shape(x)
        if len(xs) == 4 and 1 <= kernel_size <= min(xs[2], xs[3]) and s >= 1:
            out = ((xs[2] - kernel_size) // s + 1, (xs[3] - kernel_size) // s + 1)
            return (kernel_size,) * 2, (s, s), (0, 0), (1, 1), out, (0, 0)
    k = _pair(kernel_size, "kernel_size", who)
    s = k if stride is None else _pair(stride, "stride", who)
    p = _pair(padding, "padding", who)
    d = (1, 1) if type(dilation) is int and dilation == 1 else _pair(dilation, "dilation", who)
    if type(ceil_mode) is not bool and not isinstance(ceil_mode, _np.bool_):
        raise TypeError(f"{who}: ceil_mode must be True or False, got {ceil_mode!r}")
    xs = wnp._shape(x)
    _check_images(xs, who)
    if k[0] < 1 or k[1] < 1 or s[0] < 1 or s[1] < 1:
        raise ValueError(f"{who}: kernel_size and stride must be >= 1, got {k} and {s}")
    if d[0] < 1 or d[1] < 1:
        raise ValueError(f"{who}: dilation must be >= 1, got {d}")
    if p != (0, 0) and (p[0] < 0 or p[1] < 0 or 2 * p[0] > k[0] or 2 * p[1] > k[1]):
        raise ValueError(f"{who}: padding must be >= 0 and at most half the window, as in "
                         f"PyTorch, got padding {p} for a {k[0]}x{k[1]} window")
    out, over = [], []
    for size, kk, ss, pp, dd in zip(xs[2:], k, s, p, d):
        span = dd * (kk - 1) + 1
        o = (size + 2 * pp - span + (ss - 1 if ceil_mode else 0)) // ss + 1
        if ceil_mode and (o - 1) * ss >= size + pp:   # it would start in the end's padding
            o -= 1
        out.append(o)
        over.append(max(0, (o - 1) * ss + span - size - 2 * pp))
    if out[0] < 1 or out[1] < 1:
        dilated = f" dilated by {d}" if d != (1, 1) else ""
        raise ValueError(f"{who}: a {k[0]}x{k[1]} window{dilated} does not fit in images of "
                         f"shape {xs}" + (f" with padding {p}" if any(p) else ""))
    return k, s, p, d, tuple(out), tuple(over)


def _window_sizes(size, kernel, stride, padding, count, include_pad):
    """How many elements each of `count` windows along one axis averages over, as
    PyTorch counts: the padding too if `include_pad`, never what ceil_mode's last window
    reaches beyond it."""
    start = _np.arange(count) * stride - padding
    end = _np.minimum(start + kernel, size + padding)
    if not include_pad:
        start, end = _np.maximum(start, 0), _np.minimum(end, size)
    return end - start


def _one_axis(x, axis, who):
    """`axis` of x made non-negative; NumPy's AxisError (a ValueError) if out of range."""
    return wnp._one_axis(axis, len(wnp._shape(x)), who)


def log_softmax(x, axis=-1, where=None):
    """``x - logsumexp(x)`` along an axis, computed stably; one primitive, whose VJP is
    ``g - softmax * sum(g)``.  ``where`` (JAX's): a mask broadcast against x; the
    elements where it is False take no part, and are -inf in the result.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> round(float(np.exp(nn.log_softmax(np.array([1.0, 2.0]))).sum()), 12)
        1.0
        >>> nn.log_softmax(np.array([1.0, 5.0, 1.0]), where=np.array([True, False, True]))
        array([-0.69314718,        -inf, -0.69314718])
    """
    axis = _one_axis(x, axis, "log_softmax")
    if where is None:
        return P.log_softmax(_inexact(x), axis=axis)
    x, where = _masked(x, where, "log_softmax")
    return wnp.where(where, P.log_softmax(x, axis=axis), -_np.inf)


def softmax(x, axis=-1, where=None):
    """``exp(x) / sum(exp(x))`` along an axis, computed stably; one primitive, whose VJP
    is ``s * (g - sum(s * g))``.  ``where`` (JAX's): a mask broadcast against x; the
    elements where it is False take no part, and are 0 in the result.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.softmax(np.array([0.0, 0.0])).tolist()
        [0.5, 0.5]
        >>> nn.softmax(np.array([0.0, 9.0, 0.0]), where=np.array([True, False, True]))
        array([0.5, 0. , 0.5])
    """
    axis = _one_axis(x, axis, "softmax")
    if where is None:
        return P.softmax(_inexact(x), axis=axis)
    x, where = _masked(x, where, "softmax")
    return wnp.where(where, P.softmax(x, axis=axis), 0.0)


def _masked(x, where, who):
    """x with the elements a mask leaves out made the most negative float (so exp gives
    them 0, and a row left out whole stays finite), and the mask as x's shape."""
    x = _inexact(x)
    shape = tuple(wnp._shape(x))
    mask = wnp.broadcast_to(wnp.asarray(where, dtype=bool), shape) \
        if broadcasts_to(tuple(wnp._shape(where)), shape) else None
    if mask is None:
        raise ValueError(f"{who}: a where of shape {tuple(wnp._shape(where))} does not "
                         f"broadcast to x's shape {shape}")
    lowest = _np.finfo(wnp.result_type(x)).min
    return wnp.where(mask, x, lowest), mask


def _inexact(x):
    """Integers in the float dtype NumPy's exp computes them in (int8 in float16, int64
    in float64, as SciPy's softmax gives them); floats as they are; a list as NumPy's
    array of it."""
    if type(x) is not Node:
        x = _np.asarray(x)
    return wnp._as_numpy_computes(_np.exp, x) if x.dtype.kind in "iu" else x


def one_hot(labels, classes, *, dtype=None, axis=-1):
    """Integer labels as rows of 0.0 and 1.0: ``one_hot(y, C)[..., j] == (y == j)``.
    Labels are data, so nothing flows back through them.  JAX's keywords: ``dtype`` of
    the result (float64 by default), ``axis`` where the new axis of classes goes (the
    last by default).  A label outside ``[0, classes)`` is an error, as in PyTorch (JAX
    gives it a row of zeros).

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.one_hot(np.array([2, 0]), 3).tolist()
        [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
        >>> nn.one_hot(np.array([2, 0]), 3, dtype=np.int32, axis=0).tolist()
        [[0, 1], [0, 0], [1, 0]]
    """
    rows = _one_hot(labels, classes)
    if dtype is not None and _np.dtype(dtype) != _np.float64:
        rows = wnp.astype(rows, _np.dtype(dtype))
    if axis != -1:
        ndim = len(wnp._shape(rows))
        if not isinstance(axis, (int, _np.integer)) or not -ndim <= axis < ndim:
            raise ValueError(f"one_hot: axis {axis!r} is out of range for a result of "
                             f"{ndim} dimensions")
        rows = wnp.moveaxis(rows, -1, int(axis))
    return rows


def _one_hot(labels, classes):
    if isinstance(classes, bool) or not isinstance(classes, (int, _np.integer)):
        raise TypeError(f"one_hot: classes must be an int, the number of classes, got "
                        f"{classes!r}")
    if classes < 0:
        raise ValueError(f"one_hot: classes must be >= 0, got {classes} (PyTorch's -1, "
                         f"which infers it from the labels, is not supported: pass it)")
    labels, _ = _check_labels(labels, int(classes), "one_hot")
    return P.one_hot(labels, classes=int(classes))


def _check_labels(labels, classes, who, ignore_index=None, fusable=False):
    """Integer labels, all in range(classes), or equal to `ignore_index` if one is given:
    (the labels, whether any equals ignore_index).  Where their values are not known
    (traced abstractly, by wg.compile or wg.vmap) the latter is None, and the labels
    returned are checked when the function runs; `fusable`: the caller then takes the
    fused cross-entropy if ignore_index is the default, which no label may equal."""
    if type(labels) is Node:
        kind, known = labels.dtype.kind, labels.value
    else:
        known = labels = _np.asarray(labels)
        kind = labels.dtype.kind
    if kind not in "iu":
        raise TypeError(f"{who}: labels must be integers (class indices), got "
                        f"dtype {labels.dtype}")
    if known is None:
        fused = fusable and ignore_index is _IGNORE
        allowed = None if fused or ignore_index is None else int(ignore_index)
        return P.checked_labels(labels, classes=classes, who=who, ignore_index=allowed,
                                fused=fused), None
    if known.size and _outside(known, classes):
        # (only here is ignore_index looked for when it is no class, as the default -100:
        # labels in range, the training step's case, cost the one pass above)
        error = P.bad_labels(known, classes, who, ignore_index)
        if error is not None:
            raise error
        return labels, True
    if ignore_index is not None and 0 <= ignore_index < classes:      # a class is ignored
        return labels, bool(_np.equal(known, ignore_index).any())
    return labels, False


_outside = P.labels_outside      # (a module global: every training step checks its labels)


class _DefaultIgnore(int):
    """PyTorch's default ignore_index, -100, told apart from an explicit -100 (only by
    identity): cross_entropy's default cannot look for it in labels traced without their
    values, an explicit one can."""


_IGNORE = _DefaultIgnore(-100)


def _check_ignore_index(ignore_index, who):
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, (int, _np.integer)):
        raise TypeError(f"{who}: ignore_index must be an int (PyTorch's default is -100, "
                        f"which no class is), got {ignore_index!r}")


def cross_entropy(input, target, weight=None, ignore_index=_IGNORE, reduction="mean",
                  label_smoothing=0.0):
    """Softmax cross-entropy, as PyTorch's ``F.cross_entropy``: ``-log_softmax(input)``
    at each example's class, or, for class probabilities, ``-sum(target *
    log_softmax(input))`` over the classes.

    With the defaults and class indices none of which is ``ignore_index``, the mean (and
    the sum) is one primitive, whose gradient is ``(softmax - onehot) / N``: the training
    step's loss, as fast as a hand-written one.  Every other case is written with
    log_softmax, take_along_axis and where, in PyTorch's formulas:

    * ``weight`` (shape (C,)) scales each example's loss by its class's weight, and the
      mean divides by the sum of those weights, ``sum_n w[y_n] l_n / sum_n w[y_n]``;
    * examples whose class is ``ignore_index`` give 0 and are not counted (a mean over
      none of them is nan, 0/0);
    * ``label_smoothing`` ε in [0, 1] mixes the target with the uniform distribution:
      ``(1 - ε) l_n + ε/C sum_c w_c (-log_softmax(input)[n, c])``, with the mean's
      denominator as without it;
    * a float ``target`` of the input's shape is read as class probabilities (soft
      labels; differentiable too): ``weight`` scales each class's term, the mean divides
      by the number of examples, ε mixes in as ``(1 - ε) target + ε/C``, and
      ``ignore_index`` must be negative (no class is ignored).

    Labels are checked (integers in ``range(C)``, or ``ignore_index``): eagerly, and in a
    function traced without their values (by ``wg.compile`` or ``wg.vmap``, with the
    labels an argument) when it runs, a ``ValueError`` naming their range.  Such a trace
    cannot look for -100 while it is made, so with the defaults it takes the fused
    primitive, which has no label to leave out: a -100 there is refused at run time,
    never read as a class; pass ``ignore_index`` explicitly (``ignore_index=-100`` too)
    to have such labels left out at run time, through the general path.

    Args:
        input: scores (unnormalised log-probabilities), shape (C,), (N, C) or
            (N, C, d1, ..., dk) with the classes on axis 1 (PyTorch's layout for images).
        target: integer class indices of shape (), (N,) or (N, d1, ..., dk), data (never
            differentiated); or class probabilities of the input's shape.
        weight: optional class weights, shape (C,); differentiable.
        ignore_index: the label that marks examples to leave out (-100, as PyTorch).
        reduction: ``"mean"``, ``"sum"`` or ``"none"`` (one loss per example, the
            target's shape for indices, the input's without axis 1 for probabilities).
        label_smoothing: ε in [0, 1].

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> round(float(nn.cross_entropy(np.zeros((2, 4)), np.array([0, 3]))), 6)
        1.386294
        >>> nn.cross_entropy(np.zeros((2, 4)), np.array([0, 3]), reduction="none").round(6)
        array([1.386294, 1.386294])
        >>> z = np.array([[2.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
        >>> y = np.array([0, 0, -100])                   # the third example is ignored
        >>> loss = nn.cross_entropy(z, y, weight=np.array([1.0, 3.0]), reduction="none")
        >>> loss.round(4).tolist()
        [0.1269, 2.1269, 0.0]
        >>> round(float(nn.cross_entropy(z, y, weight=np.array([1.0, 3.0]))), 4)  # / (1 + 1)
        1.1269
        >>> soft = np.array([[0.5, 0.5], [0.0, 1.0], [1.0, 0.0]])
        >>> round(float(nn.cross_entropy(z, soft, label_smoothing=0.1)), 4)
        0.6823

        Compiled for labels it has not seen, the defaults refuse a -100 when they meet
        it; an explicit ignore_index leaves it out:

        >>> import wengert as wg
        >>> loss = wg.compile(lambda z, y: nn.cross_entropy(z, y), z, y)
        >>> loss(z, y)
        Traceback (most recent call last):
        ValueError: cross_entropy: labels must lie in range(2) for 2 classes, got values from -100 to 0; -100 is PyTorch's default ignore_index, ...: pass ignore_index=-100 explicitly ...
        >>> loss = wg.compile(lambda z, y: nn.cross_entropy(z, y, ignore_index=-100), z, y)
        >>> round(float(loss(z, y)), 4)                   # the mean over the two counted
        1.1269
    """
    _check_ignore_index(ignore_index, "cross_entropy")
    input = _inexact(input)              # (integer scores: as log_softmax takes them)
    if weight is None and not label_smoothing and (reduction == "mean" or reduction == "sum"):
        shape = wnp._shape(input)
        lshape = target.shape if type(target) in (Node, _np.ndarray) else _np.shape(target)
        if len(shape) == 2 and lshape == shape[:1]:       # the training step's (N, C) and (N,)
            labels, hit = _check_labels(target, shape[1], "cross_entropy", ignore_index,
                                        True)
            if hit is False or hit is None and ignore_index is _IGNORE:
                return _fused_cross_entropy(input, labels, shape[0], reduction)
    return _cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing)


def _fused_cross_entropy(logits, labels, n, reduction):
    """The mean (or sum) of the cross-entropy of (n, C) logits and n labels in range(C),
    one primitive."""
    if not n and reduction == "sum":      # (the primitive is a mean, 0/0 for no example)
        return _class_index_loss(log_softmax(logits, axis=1), labels, False, None, None,
                                 reduction, 0.0, (0,))
    if type(logits) is Node:              # (an eager gradient's loss: straight to the graph)
        loss = logits.graph.apply(P.cross_entropy, (logits, labels))
    elif type(labels) is _np.ndarray and type(logits) is _np.ndarray:
        # no gradient in the logits can follow (a compiled one runs the primitive itself),
        # so nothing is kept for one
        loss = P.cross_entropy_value(logits, labels)
    else:
        loss = P.cross_entropy(logits, labels)
    return loss * n if reduction == "sum" else loss


def _cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing):
    """cross_entropy with any options (its docstring)."""
    who = "cross_entropy"
    _check_reduction(reduction, who)
    eps = float(label_smoothing)
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"{who}: label_smoothing must lie in [0, 1], got {eps}")
    scores, target, classes, soft, each = _class_rows(input, target, who, soft=True)
    weight = _class_weight(weight, classes, input, who)
    if soft:
        if ignore_index >= 0:
            raise ValueError(f"{who}: ignore_index ({ignore_index}) is for class indices; "
                             f"a target of class probabilities has no class to ignore")
        if eps:
            target = wnp.add(wnp.multiply(target, 1.0 - eps), eps / classes)
        terms = wnp.multiply(log_softmax(scores, axis=1), target)
        if weight is not None:
            terms = terms * weight
        loss = -wnp.sum(terms, axis=1)
        return wnp.reshape(loss, each) if reduction == "none" else _reduce(loss, reduction)
    fusable = weight is None and not eps and reduction != "none"
    labels, hit = _check_labels(target, classes, who, ignore_index, fusable)
    if fusable and (hit is False or hit is None and ignore_index is _IGNORE):
        return _fused_cross_entropy(scores, labels, int(_np.prod(each)), reduction)
    return _class_index_loss(log_softmax(scores, axis=1), labels, hit, weight, ignore_index,
                             reduction, eps, each)


def _class_rows(input, target, who, soft):
    """A classification loss's input and target as rows: (scores of shape (M, C), target
    of shape (M,) or, class probabilities, (M, C), C, whether the target is
    probabilities, the shape of one loss per example).  PyTorch's layouts: input (C,),
    (N, C) or (N, C, d1, ..., dk), the classes on axis 1; target (), (N,) or
    (N, d1, ..., dk) of class indices or, if `soft` (cross_entropy), floats of the
    input's shape."""
    shape = tuple(wnp._shape(input))
    if type(target) is not Node:
        target = _np.asarray(target)
    tshape = tuple(target.shape)
    floats = target.dtype.kind == "f"
    if floats and not soft:
        raise TypeError(f"{who}: target must be integer class indices, got dtype "
                        f"{target.dtype} (class probabilities are cross_entropy's)")
    probabilities = floats and tshape == shape
    each = shape[:1] + shape[2:] if len(shape) > 1 else ()
    if not shape or not probabilities and tshape != each:
        soft_too = " (or class probabilities of the input's shape)" if soft else ""
        raise ValueError(f"{who}: expected input of shape (N, C), (N, C, d1, ...) or (C,) "
                         f"and target of class indices of shape (N,), (N, d1, ...) or ()"
                         f"{soft_too}, got input of shape {shape} and target of shape "
                         f"{tshape}")
    classes = shape[1] if len(shape) > 1 else shape[0]
    rows = _as_rows(input, shape)
    target = _as_rows(target, shape) if probabilities else (
        target if len(shape) == 2 else wnp.reshape(target, (-1,)))
    return rows, target, classes, probabilities, each


def _as_rows(x, shape):
    """(C,), (N, C) or (N, C, d1, ...) scores as (M, C) rows: the class axis last."""
    if len(shape) == 2:
        return x
    if len(shape) == 1:
        return wnp.reshape(x, (1, shape[0]))
    return wnp.reshape(wnp.moveaxis(x, 1, -1), (-1, shape[1]))


def _weight_array(weight, who, name, what):
    """A loss's weight argument as an array (a traced one as it is); a string there is a
    reduction passed by position, where PyTorch's third argument is the weight."""
    if isinstance(weight, str):
        raise TypeError(f"{who}: {name} must be {what}, got {weight!r}; pass the reduction "
                        f"by keyword, reduction={weight!r} (the third argument is the "
                        f"weight, as in PyTorch)")
    return weight if type(weight) is Node else _np.asarray(weight)


def _class_weight(weight, classes, input, who):
    """The optional class weights, checked: shape (C,)."""
    if weight is None:
        return None
    weight = _weight_array(weight, who, "weight", f"an array of {classes} class weights")
    ws = tuple(weight.shape)
    if ws != (classes,):
        raise ValueError(f"{who}: weight must have shape ({classes},), one weight per class "
                         f"of input of shape {tuple(wnp._shape(input))}, got weight of "
                         f"shape {ws}")
    return weight


def _class_index_loss(log_probs, labels, hit, weight, ignore_index, reduction, eps, each):
    """nll_loss of (M, C) log-probabilities and M labels (checked; `hit`: whether some
    equal ignore_index, None if unknown), with label smoothing eps, in PyTorch's
    formulas (cross_entropy's docstring)."""
    keep = None
    if hit is not False:                  # rows labelled ignore_index drop out
        keep = wnp.not_equal(labels, ignore_index)
        labels = wnp.where(keep, labels, 0)
    picked = wnp.take_along_axis(log_probs, wnp.reshape(labels, (-1, 1)), axis=1)
    loss = -wnp.reshape(picked, (-1,))
    if weight is not None:
        counted = wnp.take_along_axis(weight, labels, axis=0)    # each row's weight
        loss = loss * counted
    if eps:
        every = log_probs if weight is None else log_probs * weight
        loss = (1.0 - eps) * loss - (eps / wnp._shape(log_probs)[1]) * wnp.sum(every, axis=1)
    if keep is not None:
        loss = wnp.where(keep, loss, 0.0)
    if reduction == "none":
        return wnp.reshape(loss, each)
    if reduction == "sum":
        return wnp.sum(loss)
    if weight is None and keep is None:
        return wnp.mean(loss)
    # PyTorch's mean divides by the weight of the rows counted (their number unweighted)
    if weight is None:
        one = _float_dtype(log_probs).type(1)               # (a float32 mean stays float32)
        counted = wnp.where(keep, one, 0 * one)
    elif keep is not None:
        counted = wnp.where(keep, counted, 0.0)
    total = wnp.sum(counted)
    # None counted: 0/0, nan, as in PyTorch; but the division's cotangent 1/0 would meet
    # the where's 0 for the ignored rows as inf * 0, nan, where PyTorch's gradient is 0
    empty = wnp.equal(total, 0.0)
    return wnp.where(empty, _np.nan, wnp.sum(loss) / wnp.where(empty, 1.0, total))


# ---- losses -------------------------------------------------------------------------------------
_REDUCTIONS = ("mean", "sum", "none")


def _check_reduction(reduction, who, allowed=_REDUCTIONS):
    if not isinstance(reduction, str) or reduction not in allowed:
        names = ", ".join(repr(r) for r in allowed[:-1]) + f" or {allowed[-1]!r}"
        raise ValueError(f"{who}: reduction must be {names}, got {reduction!r}")


def _reduce(loss, reduction):
    if reduction == "mean":
        return wnp.mean(loss)
    if reduction == "sum":
        return wnp.sum(loss)
    return loss


def _same_shape(input, target, who, names=("input", "target")):
    a, b = tuple(wnp._shape(input)), tuple(wnp._shape(target))
    if a != b:
        raise ValueError(f"{who}: {names[0]} and {names[1]} must have the same shape, got "
                         f"{names[0]} of shape {a} and {names[1]} of shape {b}")


def _broadcast_weight(weight, input, who, name="weight"):
    """An optional weight that must broadcast to the input's shape, checked."""
    if weight is None:
        return None
    weight = _weight_array(weight, who, name, "an array")
    xs, ws = tuple(wnp._shape(input)), tuple(weight.shape)
    if not broadcasts_to(ws, xs):
        raise ValueError(f"{who}: {name} of shape {ws} does not broadcast to the input's "
                         f"shape {xs}")
    return weight


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """Negative log-likelihood of integer class labels, ``-input[n, target[n]]``, as
    PyTorch's ``F.nll_loss``.  With ``input = log_softmax(scores)`` it is the
    cross-entropy; ``weight`` and ``ignore_index`` are as there (the mean divides by the
    sum of the counted examples' class weights; labels equal to ``ignore_index`` give 0
    and are not counted, even in a function traced without their values, where the
    labels are checked when it runs).

    Args:
        input: log-probabilities, shape (C,), (N, C) or (N, C, d1, ..., dk).
        target: integer class indices, shape (), (N,) or (N, d1, ..., dk) (data: never
            differentiated); class probabilities are cross_entropy's.
        weight: optional class weights, shape (C,); differentiable.
        ignore_index: the label of examples to leave out (-100, as PyTorch).
        reduction: ``"mean"``, ``"sum"`` or ``"none"`` (the target's shape).

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> logp = np.log(np.array([[0.5, 0.5], [0.25, 0.75]]))
        >>> nn.nll_loss(logp, np.array([0, 1]), reduction="none").round(4)
        array([0.6931, 0.2877])
        >>> nn.nll_loss(logp, np.array([0, -100]), reduction="none").round(4)
        array([0.6931, 0.    ])
        >>> round(float(nn.nll_loss(logp, np.array([0, 1]), weight=np.array([1.0, 3.0]))), 4)
        0.389
    """
    who = "nll_loss"
    _check_ignore_index(ignore_index, who)
    _check_reduction(reduction, who)
    log_probs, target, classes, _, each = _class_rows(input, target, who, soft=False)
    weight = _class_weight(weight, classes, input, who)
    labels, hit = _check_labels(target, classes, who, ignore_index)
    return _class_index_loss(log_probs, labels, hit, weight, ignore_index, reduction, 0.0,
                             each)


def mse_loss(input, target, reduction="mean"):
    """Squared error ``(input - target)**2``, as PyTorch's ``F.mse_loss`` (the shapes must
    be equal: no broadcasting).  Differentiable in both arguments.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> float(nn.mse_loss(np.array([1.0, 2.0]), np.array([0.0, 0.0])))
        2.5
    """
    _check_reduction(reduction, "mse_loss")
    _same_shape(input, target, "mse_loss")
    d = wnp.subtract(input, target)
    return _reduce(d * d, reduction)


def l1_loss(input, target, reduction="mean"):
    """Absolute error ``|input - target|``, as PyTorch's ``F.l1_loss`` (equal shapes).
    Its derivative is ``sign(input - target)``: 0 where they are equal.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.l1_loss(np.array([1.0, -2.0]), np.zeros(2), reduction="none").tolist()
        [1.0, 2.0]
    """
    _check_reduction(reduction, "l1_loss")
    _same_shape(input, target, "l1_loss")
    return _reduce(wnp.abs(wnp.subtract(input, target)), reduction)


def huber_loss(input, target, reduction="mean", delta=1.0):
    """Huber loss, as PyTorch's ``F.huber_loss``: with ``d = |input - target|``,
    ``0.5 d**2`` where ``d < delta`` and ``delta (d - delta/2)`` elsewhere; quadratic
    near zero, linear (slope ``delta``) in the tails, with a continuous derivative.
    It is ``delta * smooth_l1_loss(..., beta=delta)``.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.huber_loss(np.array([0.5, 3.0]), np.zeros(2), reduction="none").tolist()
        [0.125, 2.5]
    """
    _check_reduction(reduction, "huber_loss")
    _same_shape(input, target, "huber_loss")
    delta = float(delta)
    if not delta > 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    d = wnp.subtract(input, target)
    a = wnp.abs(d)
    return _reduce(wnp.where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta)), reduction)


def smooth_l1_loss(input, target, reduction="mean", beta=1.0):
    """Smooth L1 loss, as PyTorch's ``F.smooth_l1_loss``: with ``d = |input - target|``,
    ``0.5 d**2 / beta`` where ``d < beta`` and ``d - beta/2`` elsewhere (slope 1 in the
    tails, whatever beta); ``beta=0`` is ``l1_loss``.  ``huber_loss(..., delta)`` is
    ``delta`` times it with ``beta=delta``.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.smooth_l1_loss(np.array([0.5, 3.0]), np.zeros(2), reduction="none").tolist()
        [0.125, 2.5]
        >>> nn.smooth_l1_loss(np.array([0.5, 3.0]), np.zeros(2), reduction="none",
        ...                   beta=2.0).tolist()
        [0.0625, 2.0]
    """
    who = "smooth_l1_loss"
    _check_reduction(reduction, who)
    _same_shape(input, target, who)
    beta = float(beta)
    if not beta >= 0:
        raise ValueError(f"{who}: beta must be >= 0 (0 is l1_loss), got {beta}")
    d = wnp.subtract(input, target)
    a = wnp.abs(d)
    if beta == 0.0:                       # (the quadratic piece would divide 0 by 0)
        return _reduce(a, reduction)
    return _reduce(wnp.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta), reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean",
                                     pos_weight=None):
    """Binary cross-entropy of probabilities ``sigmoid(input)`` against ``target`` in
    [0, 1], as PyTorch's ``F.binary_cross_entropy_with_logits``:
    ``-w (p t log sigmoid(z) + (1 - t) log(1 - sigmoid(z)))``, computed stably, finite for
    any logits z: ``softplus(z) - t z``, whose gradient in z is ``sigmoid(z) - t``, or
    with ``pos_weight`` p, PyTorch's ``(1 - t) z + (1 + (p - 1) t) softplus(-z)``.

    ``weight`` (w) and ``pos_weight`` (the weight of the positive term, one per class
    along the last axis, say) broadcast to the input's shape; the mean is over the
    elements, unweighted.  Differentiable in every argument.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> z, t = np.array([0.0, 1000.0, -1000.0]), np.array([1.0, 1.0, 1.0])
        >>> nn.binary_cross_entropy_with_logits(z, t, reduction="none").round(6).tolist()
        [0.693147, 0.0, 1000.0]
        >>> nn.binary_cross_entropy_with_logits(z, t, reduction="none",
        ...                                     pos_weight=np.array(2.0)).round(6).tolist()
        [1.386294, 0.0, 2000.0]
    """
    who = "binary_cross_entropy_with_logits"
    _check_reduction(reduction, who)
    _same_shape(input, target, who)
    weight = _broadcast_weight(weight, input, who)
    pos_weight = _broadcast_weight(pos_weight, input, who, "pos_weight")
    if pos_weight is None:
        loss = softplus(input) - wnp.multiply(input, target)
    else:
        log_weight = wnp.add(wnp.multiply(wnp.subtract(pos_weight, 1.0), target), 1.0)
        loss = wnp.multiply(wnp.subtract(1.0, target), input) \
            + log_weight * softplus(wnp.negative(input))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


_EXP_MINUS_100 = float(_np.exp(-100.0))     # (binary_cross_entropy's clamp of log p)


def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    """Binary cross-entropy of probabilities, as PyTorch's ``F.binary_cross_entropy``:
    ``-w (t log p + (1 - t) log(1 - p))`` for probabilities p (``input``) and targets t
    in [0, 1], each logarithm clamped at -100 as PyTorch does (so p = 0 or 1 gives 100,
    not infinity).  ``weight`` broadcasts to the input's shape; the mean is over the
    elements.  Values outside [0, 1] are refused where they are known.

    Its gradient is the derivative of that function, ``w (p - t) / (p (1 - p))`` wherever
    no logarithm is clamped; where one is (p within about 4e-44 of 0 or 1), the clamped
    term is constant and contributes nothing.  PyTorch's is ``w (p - t) / max(p (1 - p),
    1e-12)``: the same where ``p (1 - p) >= 1e-12``, smaller nearer 0 and 1, where it
    is no longer the derivative of the loss.  From logits,
    ``binary_cross_entropy_with_logits`` is exact everywhere.

    Example:
        >>> import numpy as np, wengert as wg, wengert.nn as nn
        >>> p, t = np.array([0.5, 0.9, 0.0]), np.array([1.0, 1.0, 1.0])
        >>> nn.binary_cross_entropy(p, t, reduction="none").round(4).tolist()
        [0.6931, 0.1054, 100.0]
        >>> wg.grad(lambda p: nn.binary_cross_entropy(p, t[:2], reduction="sum"))(p[:2]).round(4)
        array([-2.    , -1.1111])
    """
    who = "binary_cross_entropy"
    _check_reduction(reduction, who)
    _same_shape(input, target, who)
    weight = _broadcast_weight(weight, input, who)
    for name, x in (("input", input), ("target", target)):
        known = x.value if type(x) is Node else x
        if known is not None:
            known = _np.asarray(known)      # (a traced number's value may be a float)
        if known is not None and known.size and not (
                _np.min(known) >= 0 and _np.max(known) <= 1):
            raise ValueError(f"{who}: {name} must lie in [0, 1], got values from "
                             f"{_np.min(known)} to {_np.max(known)}")
    # max(log p, -100) and max(log(1 - p), -100), the logarithm taken only where it is
    # finite, so that neither the value nor the derivative (0 * inf) of the other side
    # of the where is nan
    # (log p is taken only above e^-100, where it is not clamped: below, the derivative
    # 1/p of the clamped side would overflow, for a subnormal p, and 0 * inf is nan)
    inside = wnp.greater(input, _EXP_MINUS_100)
    log_p = wnp.where(inside, wnp.maximum(wnp.log(wnp.where(inside, input, 1.0)), -100.0),
                      -100.0)
    inside = wnp.less(input, 1.0)
    log_q = wnp.where(inside, wnp.maximum(wnp.log1p(-wnp.where(inside, input, 0.0)), -100.0),
                      -100.0)
    loss = -(wnp.multiply(target, log_p) + wnp.multiply(wnp.subtract(1.0, target), log_q))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input, target, reduction="mean", log_target=False):
    """Kullback-Leibler divergence, as PyTorch's ``F.kl_div``: with ``input`` the
    log-probabilities log q and ``target`` the probabilities p, elementwise ``p (log p -
    log q)`` (0 where p = 0, as ``xlogy``), or ``exp(t) (t - log q)`` for targets given as
    log-probabilities t (``log_target=True``).  Equal shapes; differentiable in both.

    Reductions are PyTorch's: ``"mean"`` over every element, ``"batchmean"`` the sum
    divided by the batch size (the first dimension: the KL divergence of each example's
    distribution, averaged, which is what ``"mean"`` usually should have been), ``"sum"``
    and ``"none"``.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> q, p = np.log(np.array([[0.5, 0.5]])), np.array([[1.0, 0.0]])
        >>> round(float(nn.kl_div(q, p, reduction="batchmean")), 6)       # log 2
        0.693147
        >>> p = np.array([[0.75, 0.25]])
        >>> nn.kl_div(q, np.log(p), reduction="none", log_target=True).round(4).tolist()
        [[0.3041, -0.1733]]
    """
    who = "kl_div"
    _check_reduction(reduction, who, ("mean", "batchmean", "sum", "none"))
    _same_shape(input, target, who)
    if log_target:
        loss = wnp.multiply(wnp.exp(target), wnp.subtract(target, input))
    else:
        # xlogy(p, p): 0 where p = 0, the logarithm kept off 0 on both sides of the where
        zero = wnp.equal(target, 0.0)
        plogp = wnp.multiply(target, wnp.log(wnp.where(zero, 1.0, target)))
        loss = wnp.where(zero, 0.0, plogp) - wnp.multiply(target, input)
    if reduction == "batchmean":
        shape = wnp._shape(input)
        return wnp.sum(loss) / shape[0] if len(shape) else wnp.sum(loss)
    return _reduce(loss, reduction)


# ---- activations --------------------------------------------------------------------------------
def _half_kept(y, x):
    """y, a SciPy function of x, in x's dtype where x is float16: SciPy has no
    half-precision loops and returns float64, where PyTorch and JAX keep float16."""
    if wnp.result_type(x) == _np.float16:
        return wnp.astype(y, _np.float16)
    return y


def sigmoid(x):
    """The logistic function ``1 / (1 + exp(-x))`` (``torch.sigmoid``,
    ``jax.nn.sigmoid``), computed without overflow: SciPy's ``expit`` (one primitive)
    where SciPy is installed, else with ``z = exp(-|x|)``, ``1/(1+z)`` for x >= 0 and
    ``z/(1+z)`` below; so it is exactly 0 or 1 only where the true value rounds there,
    and accurate in relative terms in the left tail.

    Example:
        >>> import numpy as np, wengert as wg, wengert.nn as nn
        >>> nn.sigmoid(np.array([-1000.0, 0.0, 1000.0])).tolist()
        [0.0, 0.5, 1.0]
        >>> wg.grad(nn.sigmoid)(0.0)
        0.25
    """
    if _HAVE_SCIPY and wnp.asarray(x).dtype.kind != "c":
        # SciPy's expit, one primitive (its gradient ~2.7x faster than the composition
        # below, and the C emitter and Taylor mode know it); SciPy is optional
        return _half_kept(_special.expit(x), x)
    positive = wnp.greater_equal(x, 0)
    z = wnp.exp(wnp.where(positive, wnp.negative(x), x))   # exp(-|x|), with the derivative
    r = 1.0 / (1.0 + z)                                      # of each side at 0 (abs has 0)
    return wnp.where(positive, r, z * r)


def softplus(x, beta=1.0):
    """``log(1 + exp(beta x)) / beta``, as PyTorch's ``F.softplus`` (``jax.nn.softplus``
    for ``beta=1``), computed as ``logaddexp(0, beta x) / beta``: exact for every x, where
    PyTorch switches to x above its ``threshold`` (20), so the two differ by less than
    ``exp(-20)`` there.  Its derivative is ``sigmoid(beta x)``.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.softplus(np.array([-1000.0, 0.0, 1000.0])).round(6).tolist()
        [0.0, 0.693147, 1000.0]
    """
    beta = float(beta)
    if beta == 1.0:
        return wnp.logaddexp(0.0, x)
    if not beta > 0:
        raise ValueError(f"softplus: beta must be positive, got {beta}")
    return wnp.logaddexp(0.0, wnp.multiply(x, beta)) / beta


def log_sigmoid(x):
    """``log(sigmoid(x)) = -softplus(-x)`` (PyTorch's ``F.logsigmoid``,
    ``jax.nn.log_sigmoid``), finite for every x: about x for very negative x, 0 for very
    positive x.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.log_sigmoid(np.array([-1000.0, 0.0, 1000.0])).round(6).tolist()
        [-1000.0, -0.693147, -0.0]
    """
    return -softplus(wnp.negative(x))


def silu(x):
    """``x * sigmoid(x)``, the SiLU or swish (PyTorch's ``F.silu``, ``jax.nn.silu``).

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.silu(np.array([-1000.0, 0.0, 2.0])).round(6).tolist()
        [-0.0, 0.0, 1.761594]
    """
    return wnp.multiply(x, sigmoid(x))


_SQRT_HALF = 0.7071067811865476          # 1/√2
_SQRT_2_OVER_PI = 0.7978845608028654     # √(2/π)


def gelu(x, approximate=False):
    """The Gaussian error linear unit ``x Φ(x)``, Φ the standard normal distribution
    function, with PyTorch's default (``F.gelu``): exact, ``x/2 (1 + erf(x/√2))``, erf
    one primitive (SciPy's where SciPy is installed, else wengert's own in NumPy, to
    within a few units in the last place: SciPy is not needed).  ``approximate=True``
    (or PyTorch's ``"tanh"``) is the tanh form ``x/2 (1 + tanh(√(2/π) (x + 0.044715
    x³)))``; ``approximate=False`` may also be written ``"none"``.  (``jax.nn.gelu``
    defaults to ``approximate=True``.)

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.gelu(np.array([-1.0, 0.0, 1.0])).round(6).tolist()
        [-0.158655, 0.0, 0.841345]
        >>> nn.gelu(np.array([-1.0, 0.0, 1.0]), approximate=True).round(6).tolist()
        [-0.158808, 0.0, 0.841192]
    """
    if approximate is True or approximate == "tanh":
        inner = _SQRT_2_OVER_PI * (x + 0.044715 * wnp.power(x, 3))
        return 0.5 * wnp.multiply(x, 1.0 + wnp.tanh(inner))
    if approximate is False or approximate == "none":
        # the erf primitive: SciPy's erf where SciPy is installed, else wengert's own
        return 0.5 * wnp.multiply(x, 1.0 + _half_kept(_special.erf(wnp.multiply(
            x, _SQRT_HALF)), x))
    raise ValueError(f"gelu: approximate must be False or True ('none' or 'tanh', as in "
                     f"PyTorch), got {approximate!r}")


def elu(x, alpha=1.0):
    """``x`` for x > 0 and ``alpha (exp(x) - 1)`` elsewhere, as PyTorch's ``F.elu`` and
    ``jax.nn.elu``; the derivative at 0 is ``alpha``, as PyTorch's.  Large positive x
    never reach the exponential (no overflow, no nan derivative).

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.elu(np.array([-1000.0, 0.0, 2.0])).tolist()
        [-1.0, 0.0, 2.0]
    """
    positive = wnp.greater(x, 0)
    return wnp.where(positive, x, alpha * wnp.expm1(wnp.where(positive, 0.0, x)))


def leaky_relu(x, negative_slope=0.01):
    """``x`` for x > 0 and ``negative_slope * x`` elsewhere, as PyTorch's
    ``F.leaky_relu`` (whose derivative at 0 is the slope; ``jax.nn.leaky_relu``'s is 1).

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.leaky_relu(np.array([-2.0, 3.0])).tolist()
        [-0.02, 3.0]
    """
    return wnp.where(wnp.greater(x, 0), x, wnp.multiply(x, negative_slope))


# ---- jax.nn's other activations -----------------------------------------------------------
# Written with wengert.numpy, so derivatives of every order come from its rules.  Where a
# function has a kink, its derivative there is JAX's (checked against jax.nn in the tests).

def relu6(x):
    """``min(max(x, 0), 6)`` (``jax.nn.relu6``, ``F.relu6``); derivative 0 at both kinks,
    0 and 6, as JAX's.

    Example:
        >>> import numpy as np, wengert as wg, wengert.nn as nn
        >>> nn.relu6(np.array([-1.0, 3.0, 9.0])).tolist()
        [0.0, 3.0, 6.0]
        >>> wg.grad(nn.relu6)(0.0), wg.grad(nn.relu6)(6.0)
        (0.0, 0.0)
    """
    inside = wnp.logical_and(wnp.greater(x, 0), wnp.less(x, 6))
    return wnp.where(wnp.greater_equal(x, 6), 6.0, wnp.where(inside, x, 0.0))


def hard_sigmoid(x):
    """``relu6(x + 3) / 6`` (``jax.nn.hard_sigmoid``): derivative 0 at -3 and 3, as JAX's.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.hard_sigmoid(np.array([-4.0, 0.0, 1.5, 4.0])).tolist()
        [0.0, 0.5, 0.75, 1.0]
    """
    return relu6(wnp.add(x, 3.0)) / 6.0


def hard_silu(x):
    """``x * hard_sigmoid(x)`` (``jax.nn.hard_silu``, also ``hard_swish``).

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.hard_silu(np.array([-4.0, 1.5, 4.0])).tolist()
        [-0.0, 1.125, 4.0]
    """
    return wnp.multiply(x, hard_sigmoid(x))


hard_swish = hard_silu


def hard_tanh(x):
    """``x`` clipped to [-1, 1] (``jax.nn.hard_tanh``); derivative 1 at -1 and 1, as JAX's.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.hard_tanh(np.array([-3.0, 0.5, 2.0])).tolist()
        [-1.0, 0.5, 1.0]
    """
    return wnp.where(wnp.greater(x, 1), 1.0, wnp.where(wnp.less(x, -1), -1.0, x))


def celu(x, alpha=1.0):
    """``x`` for x > 0 and ``alpha (exp(x / alpha) - 1)`` elsewhere (``jax.nn.celu``,
    ``F.celu``); derivative 1 at 0.  Large x never reach the exponential.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.celu(np.array([-1000.0, 0.0, 2.0]), alpha=2.0).tolist()
        [-2.0, 0.0, 2.0]
    """
    positive = wnp.greater(x, 0)
    return wnp.where(positive, x, alpha * wnp.expm1(wnp.where(positive, 0.0, x) / alpha))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x):
    """``scale * elu(x, alpha)`` with the self-normalising constants (``jax.nn.selu``,
    ``F.selu``): alpha = 1.67326..., scale = 1.05070...

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.selu(np.array([-1000.0, 1.0])).round(6).tolist()
        [-1.758099, 1.050701]
    """
    return _SELU_SCALE * elu(x, _SELU_ALPHA)


def soft_sign(x):
    """``x / (|x| + 1)`` (``jax.nn.soft_sign``, ``F.softsign``).

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.soft_sign(np.array([-3.0, 0.0, 1.0])).tolist()
        [-0.75, 0.0, 0.5]
    """
    return x / (wnp.abs(x) + 1.0)


def mish(x):
    """``x tanh(softplus(x))`` (``jax.nn.mish``, ``F.mish``), finite for every x.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.mish(np.array([-1000.0, 0.0, 1.0])).round(6).tolist()
        [-0.0, 0.0, 0.865098]
    """
    return wnp.multiply(x, wnp.tanh(softplus(x)))


def squareplus(x, b=4):
    """``(x + sqrt(x² + b)) / 2`` (``jax.nn.squareplus``), computed as ``b / (2 (sqrt(x² +
    b) - x))`` for negative x, where the sum would cancel (it is then accurate in
    relative terms far into the left tail), and with ``hypot``, so x² does not overflow.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.squareplus(np.array([-1e10, 0.0, 1.0])).tolist()
        [1e-10, 1.0, 1.618033988749895]
    """
    if type(b) is not Node and _np.any(_np.asarray(b) <= 0):
        raise ValueError(f"squareplus: b must be positive, got {b}")
    # (a Python number stays one, weakly typed, so float32 x stays float32)
    sqrt_b = b ** 0.5 if isinstance(b, (int, float)) else wnp.sqrt(b)
    right = wnp.greater_equal(x, 0)
    left_x = wnp.where(right, -1.0, x)      # (each side sees only inputs it is finite for)
    left = b / (2.0 * (wnp.hypot(left_x, sqrt_b) - left_x))
    return wnp.where(right, (x + wnp.hypot(x, sqrt_b)) / 2.0, left)


def sparse_plus(x):
    """``0`` for x <= -1, ``(x + 1)² / 4`` between, ``x`` for x >= 1 (``jax.nn.sparse_plus``),
    a softplus with a derivative that is exactly 0 and 1 outside [-1, 1].

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.sparse_plus(np.array([-2.0, 0.0, 3.0])).tolist()
        [0.0, 0.25, 3.0]
    """
    return wnp.where(wnp.less_equal(x, -1), 0.0,
                     wnp.where(wnp.greater_equal(x, 1), x, (x + 1.0) ** 2 / 4.0))


def sparse_sigmoid(x):
    """``(x + 1) / 2`` clipped to [0, 1] (``jax.nn.sparse_sigmoid``), sparse_plus's
    derivative.  At -1 and 1 its derivative is 1/4, half of 1/2 inside, as JAX's (its
    clip shares a tie's derivative between the two sides).

    Example:
        >>> import numpy as np, wengert as wg, wengert.nn as nn
        >>> nn.sparse_sigmoid(np.array([-2.0, 0.0, 3.0])).tolist()
        [0.0, 0.5, 1.0]
        >>> wg.grad(nn.sparse_sigmoid)(1.0)
        0.25
    """
    from .primitives.scalar import stop_gradient
    t = (x + 1.0) / 2.0
    at_bound = wnp.logical_or(wnp.equal(x, -1), wnp.equal(x, 1))
    inside = wnp.where(at_bound, 0.5 * t + 0.5 * stop_gradient(t), t)
    return wnp.where(wnp.greater(x, 1), 1.0, wnp.where(wnp.less(x, -1), 0.0, inside))


def log1mexp(x):
    """``log(1 - exp(-x))`` for x > 0 (``jax.nn.log1mexp``): ``log(-expm1(-x))`` up to
    log 2 and ``log1p(-exp(-x))`` above, each where it keeps its accuracy (Mächler's
    rule); -inf at 0 and nan below, as JAX's.  Each branch sees only inputs it is finite
    for, so neither puts a nan into the other's derivative.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.log1mexp(np.array([1e-20, 1.0, 50.0])).tolist()
        [-46.051701859880914, -0.45867514538708193, -1.9287498479639178e-22]
    """
    big = wnp.greater(x, _LN2)
    far = wnp.log1p(-wnp.exp(wnp.negative(wnp.where(big, x, 1.0))))
    near = wnp.log(wnp.negative(wnp.expm1(wnp.negative(wnp.where(big, 0.5, x)))))
    return wnp.where(big, far, near)


_LN2 = 0.6931471805599453


def glu(x, axis=-1):
    """The gated linear unit (``jax.nn.glu``, ``F.glu``): x split in two halves ``a, b``
    along `axis`, ``a * sigmoid(b)``.  The axis must have an even length.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.glu(np.array([1.0, 2.0, 0.0, 100.0])).tolist()
        [0.5, 2.0]
    """
    shape = tuple(wnp._shape(x))
    axis = _one_axis(x, axis, "glu")
    if shape[axis] % 2:
        raise ValueError(f"glu: the axis of length {shape[axis]} cannot be split in two "
                         "halves (its length must be even)")
    a, b = wnp.split(x, 2, axis=axis)
    return wnp.multiply(a, sigmoid(b))


def identity(x):
    """x itself, as an array (``jax.nn.identity``): the activation of a linear layer.

    Example:
        >>> import wengert.nn as nn
        >>> nn.identity([1.0, 2.0])
        array([1., 2.])
    """
    return x if type(x) is Node else wnp.asarray(x)


def swish(x):
    """``x * sigmoid(x)``, `silu` under JAX's other name (``jax.nn.swish``).

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.swish(np.array([0.0, 2.0])).round(6).tolist()
        [0.0, 1.761594]
    """
    return silu(x)


def tanh(x):
    """The hyperbolic tangent, ``wengert.numpy.tanh`` (``jax.nn.tanh``).

    Example:
        >>> import wengert.nn as nn
        >>> round(float(nn.tanh(0.5)), 6)
        0.462117
    """
    return wnp.tanh(x)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """``log(sum(b * exp(a)))`` over `axis`, computed stably (``jax.nn.logsumexp``,
    which is ``jax.scipy.special.logsumexp``): `b` scales the terms, ``return_sign=True``
    gives ``(log|s|, sign(s))`` for a sum that may be negative, and ``where`` (a mask
    broadcast against a) leaves elements out; a sum with nothing in it is -inf.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> float(nn.logsumexp(np.array([1000.0, 1000.0])))        # 1000 + log 2
        1000.6931471805599
        >>> float(nn.logsumexp(np.array([0.0, 50.0]), where=np.array([True, False])))
        0.0
    """
    from .scipy import special
    if where is not None:
        a, mask = _masked(a, where, "logsumexp")
        b = wnp.where(mask, 1.0 if b is None else b, 0.0)   # (so left-out terms add 0)
    return special.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign)


def logmeanexp(x, axis=None, where=None, keepdims=False):
    """``log(mean(exp(x)))`` over `axis`, computed stably (``jax.nn.logmeanexp``): the
    `logsumexp` less the log of the number of terms (those ``where`` keeps).

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> float(nn.logmeanexp(np.array([1000.0, 1000.0])))
        1000.0
    """
    x = _inexact(x)
    shape, dtype = tuple(wnp._shape(x)), wnp.result_type(x)
    if where is None:
        count = _np.ones(shape, dtype)
    else:
        x, mask = _masked(x, where, "logmeanexp")
        count = wnp.astype(mask, dtype)
    total = logsumexp(x, axis=axis, keepdims=keepdims, where=where)
    return total - wnp.log(wnp.sum(count, axis=axis, keepdims=keepdims))


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *,
                algorithm="fast"):
    """``(x - mean) / sqrt(variance + epsilon)`` over `axis` (``jax.nn.standardize``):
    the mean and variance of x there unless given, of the elements ``where`` keeps (the
    result has every element).  ``algorithm="fast"`` (JAX's default) takes the variance
    as ``mean(x²) - mean(x)²``, which cancels where the mean is large against the
    spread (and is made 0 where it cancels below 0, as JAX's); ``"stable"`` as
    ``mean((x - mean)²)``.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.standardize(np.array([1.0, 2.0, 3.0]), epsilon=0.0).round(6).tolist()
        [-1.224745, 0.0, 1.224745]
    """
    if algorithm not in ("fast", "stable"):
        raise ValueError(f"standardize: algorithm must be 'fast' or 'stable', got "
                         f"{algorithm!r}")
    x = _inexact(x)
    kw = {} if where is None else {"where": where}
    if mean is None:
        mean = wnp.mean(x, axis=axis, keepdims=True, **kw)
    if variance is None:
        if algorithm == "fast":
            # (cancellation may leave it below 0: made 0, as JAX's clip does)
            variance = wnp.maximum(wnp.mean(wnp.square(x), axis=axis, keepdims=True, **kw)
                                   - wnp.square(mean), 0.0)
        else:
            variance = wnp.mean(wnp.square(x - mean), axis=axis, keepdims=True, **kw)
    return (x - mean) / wnp.sqrt(variance + epsilon)


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal=False, query_seq_lengths=None,
                          key_value_seq_lengths=None, local_window_size=None,
                          implementation=None, return_residual=False):
    """Scaled dot-product attention (``jax.nn.dot_product_attention``, its plain "xla"
    form): for each head, ``softmax(q kᵀ * scale + bias) v``, scale ``1/√H`` unless
    given.

    Shapes, as JAX's: query ``(B, T, N, H)``, key and value ``(B, S, K, H)`` (or all
    without B), with N a multiple of K (grouped-query attention: query head ``n`` uses
    key head ``n // (N // K)``).  ``bias`` and ``mask`` (True where a query may attend
    to a key) broadcast to ``(B, N, T, S)``; ``is_causal`` lets query t attend keys
    s <= t; ``query_seq_lengths`` and ``key_value_seq_lengths`` (one int per batch) mask
    padding, and padded queries give zeros; ``local_window_size`` ``(left, right)`` (or
    one int for both) keeps keys ``t - left <= s <= t + right``.  Masked logits are a
    large negative number, as in JAX, so a query that may attend to nothing averages
    all values.  ``return_residual=True`` also returns the logsumexp of each query's
    logits, shape ``(B, T, N)``.  ``implementation`` may be None or ``"xla"``.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> q = np.zeros((1, 2, 1, 4)); k = np.zeros((1, 3, 1, 4))
        >>> v = np.arange(3.0).reshape(1, 3, 1, 1) * np.ones(4)
        >>> nn.dot_product_attention(q, k, v)[0, :, 0, 0].tolist()   # uniform weights
        [1.0, 1.0]
        >>> nn.dot_product_attention(q, k, v, is_causal=True)[0, :, 0, 0].tolist()
        [0.0, 0.5]
    """
    who = "dot_product_attention"
    if implementation not in (None, "xla"):
        raise ValueError(f"{who}: implementation {implementation!r} is not available; "
                         "wengert computes attention as JAX's 'xla' does (None or 'xla')")
    q_shape, k_shape, v_shape = (tuple(wnp._shape(a)) for a in (query, key, value))
    if len(q_shape) not in (3, 4) or len(k_shape) != len(q_shape):
        raise ValueError(f"{who}: query, key and value must all be (B, T|S, N|K, H) or "
                         f"all (T|S, N|K, H), got shapes {q_shape}, {k_shape}, {v_shape}")
    if v_shape != k_shape:
        raise ValueError(f"{who}: value must have key's shape {k_shape}, got {v_shape}")
    unbatched = len(q_shape) == 3
    if unbatched:
        query, key, value = (wnp.expand_dims(a, 0) for a in (query, key, value))
        q_shape, k_shape = (1,) + q_shape, (1,) + k_shape
    B, T, N, H = q_shape
    _, S, K, Hk = k_shape
    if k_shape[0] != B or Hk != H:
        raise ValueError(f"{who}: key's batch and head dimension must be query's ({B}, "
                         f"{H}), got shape {k_shape[0:1] + k_shape[3:]}")
    if K == 0 or N % K:
        raise ValueError(f"{who}: the number of query heads ({N}) must be a multiple of "
                         f"the number of key heads ({K})")
    G = N // K
    scale = 1.0 / _np.sqrt(H) if scale is None else scale
    q = wnp.reshape(query, (B, T, K, G, H))
    logits = wnp.reshape(wnp.einsum("btkgh,bskh->bkgts", q, key), (B, N, T, S)) * scale
    if bias is not None:
        bias = _attention_operand(bias, (B, N, T, S), unbatched, "bias", who)
        logits = logits + bias
    keep = _attention_mask(mask, (B, N, T, S), unbatched, is_causal, query_seq_lengths,
                           key_value_seq_lengths, local_window_size, who)
    if keep is not None:
        dtype = wnp.result_type(logits)
        large = _np.finfo(_np.float32 if dtype.itemsize >= 4 else dtype).max
        logits = wnp.where(keep, logits, dtype.type(-0.7 * large))
    weights = softmax(logits, axis=-1)
    out = wnp.einsum("bkgts,bskh->btkgh", wnp.reshape(weights, (B, K, G, T, S)), value)
    out = wnp.reshape(out, (B, T, N, H))
    if query_seq_lengths is not None:
        real = _np.arange(T)[None, :] < wnp.reshape(query_seq_lengths, (B, 1))
        out = wnp.where(wnp.reshape(real, (B, T, 1, 1)), out, 0.0)
    if unbatched:
        out = out[0]
    if not return_residual:
        return out
    residual = wnp.moveaxis(logsumexp(logits, axis=-1), 1, 2)        # (B, T, N)
    return out, residual[0] if unbatched else residual


def _attention_operand(a, shape, unbatched, name, who):
    a_shape = tuple(wnp._shape(a))
    if unbatched and len(a_shape) == 3:
        a = wnp.expand_dims(a, 0)
        a_shape = (1,) + a_shape
    if len(a_shape) != 4 or not broadcasts_to(a_shape, shape):
        raise ValueError(f"{who}: {name} of shape {a_shape} does not broadcast to (B, N, T, "
                         f"S) = {shape}")
    return a


def _attention_mask(mask, shape, unbatched, is_causal, q_lengths, kv_lengths, window, who):
    """The (B|1, N|1, T, S) mask of what each query may attend to, or None for all."""
    B, N, T, S = shape
    keep = None

    def both(m):
        return m if keep is None else wnp.logical_and(keep, m)
    if mask is not None:
        mask = _attention_operand(mask, shape, unbatched, "mask", who)
        if wnp.result_type(mask) != _np.bool_:
            raise TypeError(f"{who}: mask must be boolean (True where a query attends); "
                            "pass an additive mask as bias")
        keep = mask
    t, s = _np.arange(T)[:, None], _np.arange(S)[None, :]
    if is_causal:
        keep = both((s <= t)[None, None])
    if window is not None:
        left, right = (window, window) if isinstance(window, (int, _np.integer)) else window
        keep = both(((s >= t - left) & (s <= t + right))[None, None])
    if q_lengths is not None:
        keep = both(wnp.reshape(t[None] < wnp.reshape(q_lengths, (B, 1, 1)), (B, 1, T, 1)))
    if kv_lengths is not None:
        keep = both(wnp.reshape(s[None] < wnp.reshape(kv_lengths, (B, 1, 1)), (B, 1, 1, S)))
    return keep


# ---- layers -------------------------------------------------------------------------------------
def _float_dtype(x):
    dtype = x.dtype if type(x) is Node else _np.asarray(x).dtype
    return _np.result_type(dtype, 1.0)


def linear(x, weight, bias=None):
    """``x @ weight.T + bias``, as PyTorch's ``F.linear``: weight has shape
    (out_features, in_features), x (..., in_features), bias (out_features,).

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.linear(np.ones((2, 3)), np.ones((4, 3)), np.arange(4.0)).tolist()
        [[3.0, 4.0, 5.0, 6.0], [3.0, 4.0, 5.0, 6.0]]
    """
    xs, ws = tuple(wnp._shape(x)), tuple(wnp._shape(weight))
    if len(ws) != 2 or not xs or xs[-1] != ws[1]:
        raise ValueError(f"linear: expected weight of shape (out_features, in_features) "
                         f"and x of shape (..., in_features), got x of shape {xs} and "
                         f"weight of shape {ws}")
    y = wnp.matmul(x, wnp.transpose(weight))
    if bias is not None:
        bs = tuple(wnp._shape(bias))
        if bs != ws[:1]:
            raise ValueError(f"linear: expected bias of shape {ws[:1]} for weight of shape "
                             f"{ws}, got {bs}")
        y = y + bias
    return y


@_one_image
def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Average pooling over kh x kw windows, as PyTorch's ``F.avg_pool2d``: images NCHW,
    kernel_size, stride (by default the kernel size) and padding each an int or a pair
    (height, width), windows that do not fit dropped.  The padding (at most half the
    window) is zeros; with ``count_include_pad=True`` (PyTorch's default) they count in
    each window's divisor, kh·kw, with False only the image's elements do.
    ``ceil_mode=True`` rounds the output size up as in `max_pool2d` (the last windows may
    hang over the bottom and right edges, but start inside the image or its top or left
    padding); what hangs over the padding never counts, so those windows average over
    less.  ``divisor_override`` (a nonzero int) divides every window's sum instead.  Each
    window's derivative is 1/divisor to every element.

    Windows that tile the image (stride = kernel, no padding) are a reshape and a mean;
    overlapping, gapped or padded windows are a convolution of each channel with a
    constant kernel (divided by each window's divisor where they differ).

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.avg_pool2d(np.arange(16.0).reshape(1, 1, 4, 4), 2).tolist()
        [[[[2.5, 4.5], [10.5, 12.5]]]]
        >>> nn.avg_pool2d(np.ones((1, 1, 2, 2)), 2, stride=1, padding=1).tolist()
        [[[[0.25, 0.5, 0.25], [0.5, 1.0, 0.5], [0.25, 0.5, 0.25]]]]
        >>> nn.avg_pool2d(np.ones((1, 1, 2, 2)), 2, stride=1, padding=1,
        ...               count_include_pad=False).tolist()
        [[[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]]]
        >>> x = np.arange(9.0).reshape(1, 1, 3, 3)
        >>> nn.avg_pool2d(x, 2, ceil_mode=True).tolist()    # the last row and column alone
        [[[[2.0, 3.5], [6.5, 8.0]]]]
    """
    who = "avg_pool2d"
    (kh, kw), s, p, _, (ho, wo), (eh, ew) = _pool_settings(x, kernel_size, stride, padding,
                                                           1, ceil_mode, who)
    if type(count_include_pad) is not bool and not isinstance(count_include_pad, _np.bool_):
        raise TypeError(f"{who}: count_include_pad must be True or False, got "
                        f"{count_include_pad!r}")
    if divisor_override is not None and (
            isinstance(divisor_override, bool)
            or not isinstance(divisor_override, (int, _np.integer)) or divisor_override == 0):
        raise ValueError(f"{who}: divisor_override must be a nonzero int (or None), got "
                         f"{divisor_override!r}")
    n, c, h, w = wnp._shape(x)
    dtype = _float_dtype(x)
    if divisor_override is not None:
        divisor = int(divisor_override)
    elif (eh or ew) or (p != (0, 0) and not count_include_pad):
        # windows of different sizes: the sum of each, over its own count
        divisor = _np.multiply.outer(
            _window_sizes(h, kh, s[0], p[0], ho, count_include_pad),
            _window_sizes(w, kw, s[1], p[1], wo, count_include_pad)).astype(dtype)
    else:
        divisor = kh * kw
    if s == (kh, kw) and p == (0, 0) and not (eh or ew):
        if (ho * kh, wo * kw) != (h, w):
            x = x[:, :, :ho * kh, :wo * kw]
        tiles = wnp.reshape(x, (n, c, ho, kh, wo, kw))
        if divisor == kh * kw:
            return wnp.mean(tiles, axis=(3, 5))
        return wnp.sum(tiles, axis=(3, 5)) / dtype.type(divisor)
    uniform = type(divisor) is int
    kernel = _np.full((1, 1, kh, kw), 1.0 / divisor if uniform else 1.0, dtype=dtype)
    y = P.conv2d(wnp.reshape(x, (n * c, 1, h, w)), kernel, stride=s,
                 padding=((p[0], p[0] + eh), (p[1], p[1] + ew)), dilation=(1, 1), groups=1)
    y = wnp.reshape(y, (n, c, ho, wo))
    return y if uniform else y / divisor


# ---- normalisation and dropout ------------------------------------------------------------------
def _affine(y, weight, bias, shape, who):
    """``y * weight + bias``, weight and bias (each optional) of shape `shape`, or
    broadcasting against y if `shape` is None."""
    ys = tuple(wnp._shape(y))
    for name, p in (("weight", weight), ("bias", bias)):
        if p is None:
            continue
        ps = tuple(wnp._shape(p))
        ok = ps == shape if shape is not None else broadcasts_to(ps, ys)
        if not ok:
            want = shape if shape is not None else f"broadcasting to {ys}"
            raise ValueError(f"{who}: expected {name} of shape {want}, got {ps}")
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def _normalise(x, axes, eps):
    mean = wnp.mean(x, axis=axes, keepdims=True)
    d = x - mean
    var = wnp.mean(d * d, axis=axes, keepdims=True)       # biased, as PyTorch normalises
    return d / wnp.sqrt(var + eps)


def layer_norm(x, normalized_shape=None, weight=None, bias=None, eps=1e-5, *, axis=None):
    """Layer normalisation, as PyTorch's ``F.layer_norm``: ``(x - mean) / sqrt(var + eps)
    * weight + bias``, the mean and the (biased) variance taken over the trailing
    dimensions ``normalized_shape`` of x, for each leading index; weight and bias, if
    given, have shape ``normalized_shape``.

    Instead of ``normalized_shape``, ``axis`` (an int or a tuple, as in ``flax``'s
    ``reduction_axes``) names the axes to normalise over; weight and bias must then
    broadcast against x.  With neither, the last axis.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.layer_norm(np.array([[1.0, 3.0], [0.0, 10.0]]), 2).round(4).tolist()
        [[-1.0, 1.0], [-1.0, 1.0]]
    """
    xs = tuple(wnp._shape(x))
    if normalized_shape is not None and axis is not None:
        raise ValueError("layer_norm: give normalized_shape or axis, not both")
    if normalized_shape is not None:
        ns = (normalized_shape,) if isinstance(normalized_shape, (int, _np.integer)) \
            else normalized_shape
        if not isinstance(ns, (tuple, list)) or not all(
                isinstance(d, (int, _np.integer)) and not isinstance(d, bool) for d in ns):
            raise TypeError(f"layer_norm: normalized_shape must be an int or a tuple of ints "
                            f"(the trailing dimensions of x), got {normalized_shape!r}")
        ns = tuple(int(d) for d in ns)
        if not ns or len(ns) > len(xs) or xs[len(xs) - len(ns):] != ns:
            raise ValueError(f"layer_norm: normalized_shape {ns} must be the trailing "
                             f"dimensions of x, got x of shape {xs}")
        axes = tuple(range(len(xs) - len(ns), len(xs)))
    else:
        ns = None
        axes = tuple(wnp._norm_axis(-1 if axis is None else axis, len(xs), "layer_norm"))
    return _affine(_normalise(x, axes, eps), weight, bias, ns, "layer_norm")


def batch_norm(x, running_mean=None, running_var=None, weight=None, bias=None,
               training=False, momentum=0.1, eps=1e-5, *, axis=1):
    """Batch normalisation, with PyTorch's ``F.batch_norm`` signature: each channel (index
    along ``axis``, PyTorch's 1 by default: (N, C), (N, C, L) or NCHW) normalised, then
    ``* weight + bias`` (each of shape (C,)).

    With ``training=True``, by the mean and (biased) variance of the channel's values over
    the batch and every other axis; ``running_mean`` and ``running_var``, if given (NumPy
    arrays of shape (C,)), are then updated in place as PyTorch updates them:
    ``(1 - momentum) * running + momentum * batch``, with the batch's *unbiased* variance
    (their values only: no derivative flows into running statistics).  An empty batch
    gives an empty result and leaves them alone, as PyTorch's does.  With
    ``training=False`` (PyTorch's default), by ``running_mean`` and ``running_var``,
    which must be given.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> x = np.array([[1.0, 10.0], [3.0, 30.0]])       # 2 examples, 2 channels
        >>> mean, var = np.zeros(2), np.ones(2)
        >>> nn.batch_norm(x, mean, var, training=True).round(4).tolist()
        [[-1.0, -1.0], [1.0, 1.0]]
        >>> mean.tolist(), var.round(4).tolist()              # updated in place
        ([0.2, 2.0], [1.1, 20.9])
        >>> nn.batch_norm(x, mean, var).round(3).tolist()    # evaluation: running stats
        [[0.763, 1.75], [2.67, 6.125]]
    """
    who = "batch_norm"
    xs = tuple(wnp._shape(x))
    if len(xs) < 2:
        raise ValueError(f"batch_norm: expected x of shape (N, C, ...), got {xs}")
    axis = _one_axis(x, axis, who)
    axes = tuple(a for a in range(len(xs)) if a != axis)
    c = xs[axis]
    shape = tuple(c if a == axis else 1 for a in range(len(xs)))
    for name, p in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if p is not None and tuple(wnp._shape(p)) != (c,):
            raise ValueError(f"batch_norm: expected {name} of shape ({c},) for {c} channels "
                             f"(axis {axis} of x of shape {xs}), got {tuple(wnp._shape(p))}")
    if training:
        count = int(_np.prod([xs[a] for a in axes]))
        if count == 1:
            raise ValueError(f"batch_norm: expected more than 1 value per channel when "
                             f"training, got x of shape {xs} (channel axis {axis})")
        if count == 0:          # an empty batch: an empty result, the statistics as they
            y = x               # were (PyTorch's; a mean of nothing would be nan)
        else:
            y = _normalise(x, axes, eps)
            _update_running(x, axes, running_mean, running_var, momentum)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm: running_mean and running_var must be given when "
                             "training=False (PyTorch's default); pass training=True to "
                             "normalise by the batch's own statistics")
        y = (x - wnp.reshape(running_mean, shape)) / wnp.sqrt(
            wnp.reshape(running_var, shape) + eps)
    return _affine(y, None if weight is None else wnp.reshape(weight, shape),
                   None if bias is None else wnp.reshape(bias, shape), None, who)


def _update_running(x, axes, running_mean, running_var, momentum):
    """PyTorch's in-place update of batch_norm's running statistics, from the values of
    the batch (there is nothing to differentiate: they are state, not a result)."""
    if running_mean is None and running_var is None:
        return
    for name, r in (("running_mean", running_mean), ("running_var", running_var)):
        if r is not None and (type(r) is not _np.ndarray or not r.flags.writeable
                              or r.dtype.kind not in "fc"):
            what = (f"{r.dtype} array" if type(r) is _np.ndarray and r.flags.writeable
                    else type(r).__name__)
            raise TypeError(f"batch_norm(training=True) updates {name} in place, so it "
                            f"must be a writeable NumPy array of floats, got {what}; pass "
                            "None to leave the running statistics alone")
    values = x.value if type(x) is Node else _np.asarray(x)
    if values is None:
        raise ConcretizationError(
            "batch_norm(training=True) updates running_mean and running_var in place with "
            "the batch's values, which a trace without values (wg.compile, wg.trace, "
            "wg.vmap) does not have: pass running_mean=None and running_var=None there, "
            "and update them from the batch's mean and variance outside.")
    if running_mean is not None:
        running_mean *= 1 - momentum
        running_mean += momentum * values.mean(axis=axes)
    if running_var is not None:
        running_var *= 1 - momentum
        running_var += momentum * values.var(axis=axes, ddof=1)


def dropout(x, rate, rng=None, *, mask=None):
    """Dropout (PyTorch's ``F.dropout`` in training mode, with ``rate`` its ``p``): each
    element zeroed with probability ``rate`` and the rest scaled by ``1/(1 - rate)``, the
    mask drawn from `rng`, a ``numpy.random.Generator`` or a `wengert.random` key, or
    given as ``mask`` (True, or 1, where an element is kept; broadcast against x).  The
    mask is a constant, so the derivative is ``mask / (1 - rate)``.  ``rate=0`` returns x
    itself (evaluation mode); ``rate=1`` zeros.

    A key is what to use under the transformations, as in JAX: under ``wg.compile`` the
    mask is drawn from the key argument on every call, and under ``wg.vmap`` over keys
    (``split(key, n)``) each example gets a mask of its own.  A mask drawn from a NumPy
    generator under ``wg.compile`` would be drawn once, when traced, and every call would
    reuse it, so that is refused with a ValueError (pass a key, or the mask as an
    argument with ``mask=``); under ``wg.vmap`` the function is traced on one example, so
    one mask from a generator, of one example's shape, is shared by the whole batch.

    Example:
        >>> import numpy as np, wengert as wg, wengert.nn as nn
        >>> y = nn.dropout(np.ones(8), 0.5, np.random.default_rng(0))
        >>> sorted(set(y.tolist()))
        [0.0, 2.0]
        >>> step = wg.compile(lambda x, keep: nn.dropout(x, 0.5, mask=keep),
        ...                   np.ones(4), np.ones(4, bool))
        >>> step(np.ones(4), np.array([True, False, True, True])).tolist()
        [2.0, 0.0, 2.0, 2.0]
        >>> from wengert import random
        >>> keys = random.split(random.PRNGKey(0), 3)        # a mask per example
        >>> wg.jit(wg.vmap(lambda x, k: nn.dropout(x, 0.5, k)))(np.ones((3, 4)), keys)
        array([[2., 2., 0., 2.],
               [2., 2., 2., 0.],
               [0., 0., 2., 0.]])
    """
    if (rng is None) == (mask is None):
        raise TypeError("dropout: give either rng (a numpy.random.Generator) or mask, "
                        f"not {'both' if mask is not None else 'neither'}")
    key = rng is not None and _is_key(rng)
    if rng is not None and not key and not isinstance(rng, _np.random.Generator):
        raise TypeError(f"dropout: rng must be a numpy.random.Generator (e.g. "
                        f"numpy.random.default_rng(seed)) or a wengert.random key, got "
                        f"{type(rng).__name__}")
    rate = float(rate)
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"dropout: rate must lie in [0, 1], got {rate}")
    if rate == 0.0:
        return x
    shape, dtype = tuple(wnp._shape(x)), _float_dtype(x)
    if rate == 1.0:
        return wnp.multiply(x, _np.zeros(shape, dtype))
    scale = dtype.type(1.0 / (1.0 - rate))
    if mask is not None:
        ms = tuple(wnp._shape(mask))
        if not broadcasts_to(ms, shape):
            raise ValueError(f"dropout: a mask of shape {ms} does not broadcast to x's "
                             f"shape {shape}")
        return wnp.multiply(x, wnp.astype(mask, dtype) * scale)
    if key:
        from . import random
        keep = random.bernoulli(rng, 1.0 - rate, shape)
        return wnp.multiply(x, wnp.astype(keep, dtype) * scale)
    from .staged import staging
    if staging():
        raise ValueError("dropout: under wg.compile a mask drawn from rng is drawn once, "
                         "when traced, and every call would reuse it; pass a "
                         "wengert.random key as rng instead (an argument of the compiled "
                         "function, drawn from on every call), or draw the mask outside "
                         "and pass it in: nn.dropout(x, rate, mask=keep) with keep = "
                         "rng.random(x.shape) >= rate an argument of the compiled "
                         "function")
    return wnp.multiply(x, (rng.random(shape) >= rate).astype(dtype) * scale)


def _is_key(rng):
    """Whether `rng` is a wengert.random key (uint32, shape (2,)), traced or not."""
    return getattr(rng, "dtype", None) == _np.uint32 and tuple(getattr(rng, "shape", ())) \
        == (2,)
