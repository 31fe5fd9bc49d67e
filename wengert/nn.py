"""Neural-network building blocks (seed 000): conv2d, max_pool2d, relu, softmax,
log_softmax, one_hot, cross_entropy.  Images are NCHW, kernels OIHW, as in PyTorch.

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

import numpy as _np

from .graph.node import Node
from .primitives import nn as P
from . import numpy as wnp

relu = P.relu


def _pair_free(v, name):
    if isinstance(v, (tuple, list)):
        if len(v) != 2 or v[0] != v[1]:
            raise NotImplementedError(f"{name}: only square settings are supported, got {v}")
        v = v[0]
    return int(v)


def conv2d(x, weight, bias=None, stride=1, padding=0):
    """2-D convolution (cross-correlation, as in deep-learning libraries).

    Args:
        x: images, shape (N, C, H, W).
        weight: kernels, shape (O, C, kh, kw).
        bias: optional, shape (O,).
        stride, padding: ints (zero padding on every side).

    Returns:
        shape (N, O, (H + 2p - kh)//s + 1, (W + 2p - kw)//s + 1).

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.conv2d(np.ones((1, 1, 3, 3)), np.ones((1, 1, 2, 2))).tolist()
        [[[[4.0, 4.0], [4.0, 4.0]]]]
    """
    stride, padding = _pair_free(stride, "conv2d stride"), _pair_free(padding, "conv2d padding")
    xs, ws = wnp._shape(x), wnp._shape(weight)
    if len(xs) != 4:
        raise ValueError(f"conv2d: expected images of shape (N, C, H, W), got {xs}")
    if len(ws) != 4 or ws[1] != xs[1]:
        raise ValueError(f"conv2d: expected kernels of shape (O, {xs[1]}, kh, kw) for images of "
                         f"shape {xs}, got {ws}")
    if stride < 1 or padding < 0:
        raise ValueError(f"conv2d: stride must be >= 1 and padding >= 0, got stride {stride} "
                         f"and padding {padding}")
    if ws[2] > xs[2] + 2 * padding or ws[3] > xs[3] + 2 * padding:
        raise ValueError(f"conv2d: kernels of shape {ws} are larger than images of shape {xs} "
                         f"with padding {padding}")
    y = P.conv2d(x, weight, stride=stride, padding=padding)
    if bias is not None:
        y = y + wnp.reshape(bias, (1, -1, 1, 1))
    return y


def max_pool2d(x, kernel_size, stride=None):
    """Max pooling over kernel_size x kernel_size windows (stride defaults to the kernel
    size); the derivative goes to each window's arg-max.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.max_pool2d(np.arange(16.0).reshape(1, 1, 4, 4), 2).tolist()
        [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    k = _pair_free(kernel_size, "max_pool2d kernel_size")
    s = k if stride is None else _pair_free(stride, "max_pool2d stride")
    xs = wnp._shape(x)
    if len(xs) != 4:
        raise ValueError(f"max_pool2d: expected images of shape (N, C, H, W), got {xs}")
    if k < 1 or s < 1:
        raise ValueError(f"max_pool2d: kernel_size and stride must be >= 1, got {k} and {s}")
    if k > xs[2] or k > xs[3]:
        raise ValueError(f"max_pool2d: a {k}x{k} window does not fit in images of shape {xs}")
    return P.max_pool2d(x, kernel=k, stride=s)


def _one_axis(x, axis, who):
    """`axis` of x made non-negative; NumPy's AxisError (a ValueError) if out of range."""
    return wnp._one_axis(axis, len(wnp._shape(x)), who)


def log_softmax(x, axis=-1):
    """``x - logsumexp(x)`` along an axis, computed stably; one primitive, whose VJP is
    ``g - softmax * sum(g)``.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> round(float(np.exp(nn.log_softmax(np.array([1.0, 2.0]))).sum()), 12)
        1.0
    """
    return P.log_softmax(x, axis=_one_axis(x, axis, "log_softmax"))


def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x))`` along an axis, computed stably; one primitive, whose VJP
    is ``s * (g - sum(s * g))``.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.softmax(np.array([0.0, 0.0])).tolist()
        [0.5, 0.5]
    """
    return P.softmax(x, axis=_one_axis(x, axis, "softmax"))


def one_hot(labels, classes):
    """Integer labels as rows of 0.0 and 1.0: ``one_hot(y, C)[..., j] == (y == j)``.
    Labels are data, so nothing flows back through them.

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> nn.one_hot(np.array([2, 0]), 3).tolist()
        [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    """
    labels = _check_labels(labels, int(classes), "one_hot")
    return P.one_hot(labels, classes=int(classes))


def _check_labels(labels, classes, who):
    """Integer labels, all in range(classes) where their values are known."""
    if type(labels) is Node:
        kind, known = labels.dtype.kind, labels.value
    else:
        known = labels = _np.asarray(labels)
        kind = labels.dtype.kind
    if kind not in "iu":
        raise TypeError(f"{who}: labels must be integers (class indices), got "
                        f"dtype {labels.dtype}")
    if known is not None and known.size:
        size = known.dtype.itemsize
        if kind == "u":
            bad = _np.maximum.reduce(known, axis=None) >= classes
        elif classes <= 1 << (8 * size - 1):
            # One pass, not two (every training step checks its labels): read as unsigned
            # integers, a negative label is at least 2**(bits-1), above every class index.
            bad = _np.maximum.reduce(known.view(_unsigned(known.dtype)), axis=None) >= classes
        else:
            bad = _np.minimum.reduce(known, axis=None) < 0 \
                or _np.maximum.reduce(known, axis=None) >= classes
        if bad:
            low, high = _np.minimum.reduce(known, axis=None), _np.maximum.reduce(known, axis=None)
            raise ValueError(f"{who}: labels must lie in range({classes}) for {classes} "
                             f"classes, got values from {low} to {high}")
    return labels


_UNSIGNED: dict = {}


def _unsigned(dtype):
    """The unsigned type of a signed integer dtype's size and byte order ('>i4' -> '>u4'),
    remembered: every training step checks its labels, and dtype.str is slow."""
    found = _UNSIGNED.get(dtype)
    if found is None:
        found = _UNSIGNED[dtype] = _np.dtype(dtype.str.replace("i", "u", 1))
    return found


def cross_entropy(logits, labels):
    """Mean softmax cross-entropy of integer class labels: ``-mean(log_softmax[i, y_i])``.

    One primitive (as in PyTorch), whose gradient is ``(softmax - onehot) / N``.

    Args:
        logits: shape (N, C), unnormalised log-probabilities.
        labels: N integers in ``range(C)`` (data: never differentiated).

    Example:
        >>> import numpy as np, wengert.nn as nn
        >>> round(float(nn.cross_entropy(np.zeros((2, 4)), np.array([0, 3]))), 6)
        1.386294
    """
    shape = wnp._shape(logits)
    lshape = labels.shape if type(labels) in (Node, _np.ndarray) else _np.shape(labels)
    if len(shape) != 2 or lshape != shape[:1]:
        raise ValueError(f"cross_entropy: logits must have shape (N, C) and labels shape "
                         f"(N,), got logits of shape {shape} and labels of shape {lshape}")
    labels = _check_labels(labels, shape[1], "cross_entropy")
    if type(logits) is Node:              # (an eager gradient's loss: straight to the graph)
        return logits.graph.apply(P.cross_entropy, (logits, labels))
    return P.cross_entropy(logits, labels)
