"""Neural-network primitives of seed 000: 2-D convolution, max pooling, ReLU.

Layouts are PyTorch's: images NCHW, kernels OIHW (out channels, in channels, height,
width).  Everything is vectorised NumPy: sliding windows (stride tricks) and tensordot for
the convolution, loops only over the few kernel positions, never over pixels.

Seed 000's rules, for Y = conv(X, K):
    K̄ = Σ over windows of X-window ⊗ Ȳ           (`conv2d_weight_grad`)
    X̄ = each window position receives K·Ȳ          (`conv2d_input_grad`)
    bias: B̄(k) = Σ_ij Ȳ(i, j, k)                  (the broadcasting add's sum_to)
    MaxPool: Ȳ goes to the arg-max of each window   (`pool_scatter`)
    ReLU: Ȳ passes where X ≥ 0                      (its partial)
The three convolution maps are bilinear and each is the transpose of another in one
argument, so their derivatives are each other: second derivatives come for free.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .registry import defprimitive, shape_of
from . import scalar as S


def _out_size(n, k, s, p):
    return (n + 2 * p - k) // s + 1


def _windows(xp, kh, kw, s):
    """(N, C, Ho, Wo, kh, kw) view of the windows of a padded image batch."""
    return sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::s, ::s]


def _pad(x, p):
    return np.pad(x, ((0, 0), (0, 0), (p, p), (p, p))) if p else x


def _conv2d_np(x, w, stride, padding):
    kh, kw = w.shape[2:]
    win = _windows(_pad(np.asarray(x), padding), kh, kw, stride)
    y = np.tensordot(win, w, axes=([1, 4, 5], [1, 2, 3]))       # (N, Ho, Wo, O)
    return np.ascontiguousarray(y.transpose(0, 3, 1, 2))


def _conv2d_input_grad_np(g, w, stride, padding, x_shape):
    n, c, h, wd = x_shape
    kh, kw = w.shape[2:]
    ho, wo = g.shape[2:]
    xp = np.zeros((n, c, h + 2 * padding, wd + 2 * padding), np.result_type(g, w))
    for i in range(kh):                      # loop over kernel positions, not pixels
        for j in range(kw):
            contrib = np.tensordot(g, w[:, :, i, j], axes=([1], [0]))   # (N, Ho, Wo, C)
            xp[:, :, i:i + stride * ho:stride, j:j + stride * wo:stride] += \
                contrib.transpose(0, 3, 1, 2)
    return xp[:, :, padding:padding + h, padding:padding + wd]


def _conv2d_weight_grad_np(x, g, stride, padding, w_shape):
    kh, kw = w_shape[2:]
    win = _windows(_pad(np.asarray(x), padding), kh, kw, stride)
    return np.tensordot(g, win, axes=([0, 2, 3], [0, 2, 3]))          # (O, C, kh, kw)


def _conv_aval(args, params):
    (n, c, h, w), (o, c2, kh, kw) = args[0].shape, args[1].shape
    if c != c2:
        raise ValueError(f"conv2d: input of shape {args[0].shape} has {c} channels but the "
                         f"kernel of shape {args[1].shape} expects {c2}")
    s, p = params["stride"], params["padding"]
    return (n, o, _out_size(h, kh, s, p), _out_size(w, kw, s, p)), \
        np.result_type(args[0].dtype, args[1].dtype)


conv2d = defprimitive("conv2d", _conv2d_np, cost="mul", abstract_eval=_conv_aval)
conv2d_input_grad = defprimitive(
    "conv2d_input_grad", _conv2d_input_grad_np, cost="mul",
    abstract_eval=lambda args, params: (tuple(params["x_shape"]), args[0].dtype))
conv2d_weight_grad = defprimitive(
    "conv2d_weight_grad", _conv2d_weight_grad_np, cost="mul",
    abstract_eval=lambda args, params: (tuple(params["w_shape"]), args[0].dtype))


def _bilinear_jvp(prim):
    def jvp(ts, a, b, ans, **params):
        terms = []
        if ts[0] is not None:
            terms.append(prim(ts[0], b, **params))
        if ts[1] is not None:
            terms.append(prim(a, ts[1], **params))
        return terms[0] if len(terms) == 1 else terms[0] + terms[1]
    return jvp


conv2d.defvjp(lambda g, x, w, ans, stride, padding: (
    conv2d_input_grad(g, w, stride=stride, padding=padding, x_shape=shape_of(x)),
    conv2d_weight_grad(x, g, stride=stride, padding=padding, w_shape=shape_of(w))))
conv2d_input_grad.defvjp(lambda u, g, w, ans, stride, padding, x_shape: (
    conv2d(u, w, stride=stride, padding=padding),
    conv2d_weight_grad(u, g, stride=stride, padding=padding, w_shape=shape_of(w))))
conv2d_weight_grad.defvjp(lambda v, x, g, ans, stride, padding, w_shape: (
    conv2d_input_grad(g, v, stride=stride, padding=padding, x_shape=shape_of(x)),
    conv2d(x, v, stride=stride, padding=padding)))
for _p in (conv2d, conv2d_input_grad, conv2d_weight_grad):
    _p.defjvp(_bilinear_jvp(_p))


# ---- max pooling -----------------------------------------------------------------------------
def _argmax_windows(x, k, s):
    win = _windows(np.asarray(x), k, k, s)
    return win.reshape(win.shape[:4] + (k * k,)).argmax(axis=-1)     # (N, C, Ho, Wo)


def _max_pool_np(x, kernel, stride):
    win = _windows(np.asarray(x), kernel, kernel, stride)
    return win.max(axis=(4, 5))


def _pool_scatter_np(g, x, kernel, stride):
    """Each window's cotangent goes to the window's arg-max (the first, at a tie)."""
    idx = _argmax_windows(x, kernel, stride)
    out = np.zeros(np.shape(x), np.result_type(g, np.float64))
    ho, wo = idx.shape[2:]
    for i in range(kernel):
        for j in range(kernel):
            out[:, :, i:i + stride * ho:stride, j:j + stride * wo:stride] += \
                np.where(idx == i * kernel + j, g, 0.0)
    return out


def _pool_gather_np(t, x, kernel, stride):
    """The value of t at each window's arg-max of x."""
    idx = _argmax_windows(x, kernel, stride)
    win = _windows(np.asarray(t), kernel, kernel, stride)
    flat = win.reshape(win.shape[:4] + (kernel * kernel,))
    return np.take_along_axis(flat, idx[..., None], axis=-1)[..., 0]


def _pool_aval(args, params):
    n, c, h, w = args[0].shape
    k, s = params["kernel"], params["stride"]
    return (n, c, _out_size(h, k, s, 0), _out_size(w, k, s, 0)), args[0].dtype


max_pool2d = defprimitive("max_pool2d", _max_pool_np, cost="cmp", abstract_eval=_pool_aval)
pool_scatter = defprimitive("pool_scatter", _pool_scatter_np, cost=None,
                            abstract_eval=lambda args, params: (args[1].shape, args[0].dtype))
pool_gather = defprimitive("pool_gather", _pool_gather_np, cost=None,
                           abstract_eval=lambda args, params: _pool_aval(args[1:], params))

max_pool2d.defvjp(lambda g, x, ans, kernel, stride: (
    pool_scatter(g, x, kernel=kernel, stride=stride),))
max_pool2d.defjvp(lambda ts, x, ans, kernel, stride: pool_gather(ts[0], x, kernel=kernel,
                                                                 stride=stride))
# scatter and gather are linear in their first argument and each other's transpose; the
# arg-max positions do not move under small changes of x, so x carries no derivative.
pool_scatter.defvjp(lambda gg, g, x, ans, kernel, stride: (
    pool_gather(gg, x, kernel=kernel, stride=stride), None))
pool_scatter.defjvp(lambda ts, g, x, ans, kernel, stride: pool_scatter(
    ts[0], x, kernel=kernel, stride=stride) if ts[0] is not None else None)
pool_gather.defvjp(lambda gg, t, x, ans, kernel, stride: (
    pool_scatter(gg, x, kernel=kernel, stride=stride), None))
pool_gather.defjvp(lambda ts, t, x, ans, kernel, stride: pool_gather(
    ts[0], x, kernel=kernel, stride=stride) if ts[0] is not None else None)

# ---- ReLU ------------------------------------------------------------------------------------
relu = defprimitive("relu", lambda x: np.maximum(x, 0.0),
                    fast=lambda x: x if (x > 0.0 or x != x) else 0.0,     # nan stays nan
                    cost="cmp", dtype_rule="promote")
relu.defpartials(lambda x, ans: S.select(S.ge(x, 0.0), 1.0, 0.0))   # seed 000: where X ≥ 0
