"""Neural-network primitives of seed 000: 2-D convolution, max pooling, ReLU, and the
fused log-softmax and softmax cross-entropy.

Layouts are PyTorch's: images NCHW, kernels OIHW (out channels, in channels per group,
height, width).  Everything is vectorised NumPy: sliding windows (stride tricks) and one
matrix product (im2col; with groups, one stacked product with a matrix per group) for the
convolution, loops only over the few kernel positions, never over pixels.  Strides,
dilations and (asymmetric) paddings are pairs, one per image axis.

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

import math
import threading
import weakref

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..graph.active import current_graph
from .registry import defprimitive, float_dtype, shape_of
from . import array as A, scalar as S


# ---- what a forward pass saves for its gradient -------------------------------------------------
class _Saved(threading.local):
    """One array a primitive's forward pass computed that the gradient rule after it would
    compute again, kept for that rule: as PyTorch's fused loss saves its softmax and its
    convolution once saved its unfolded input.

    One slot per thread, keyed by the identity of the input array it was computed from
    and by the parameters that shaped it, and kept with a copy of that input: node values
    are never changed in place, but the input may be the user's array, which a training
    loop updates in place between a logged loss and a compiled gradient (whose forward
    pass does not run to replace the slot).  The rule takes it over if the input still
    holds what it was computed from; asked about another array, or one changed since, it
    finds nothing and recomputes.  The slot forgets when that input is freed.

    Example:
        >>> import numpy as np
        >>> slot, x = _Saved(), np.ones(3)
        >>> slot.keep(x, "computed from x", key=2)
        >>> slot.take(x, key=3), slot.take(x, key=2), slot.take(x, key=2)
        (None, 'computed from x', None)
    """

    entry = None        # (weak reference to the input, key, saved array, input's copy)

    def keep(self, source, saved, key=None):
        # (the copy costs a pass over the input: a fraction of what it saves)
        self.entry = (weakref.ref(source, self._forget), key, saved, source.copy())

    def take(self, source, key=None):
        entry = self.entry
        if entry is None or entry[0]() is not source or entry[1] != key:
            return None
        self.entry = None
        if not np.array_equal(entry[3], source):        # changed in place since
            return None
        return entry[2]

    def _forget(self, ref):
        entry = self.entry
        if entry is not None and entry[0] is ref:
            self.entry = None


_saved_softmax = _Saved()           # cross_entropy's softmax, for cross_entropy_grad
_saved_columns = _Saved()           # conv2d's im2col columns, for conv2d_weight_grad


# ---- 2-D convolution ---------------------------------------------------------------------------
# Parameters, as wengert.nn.conv2d sets them (always all four, in this form):
#   stride=(sh, sw), padding=((top, bottom), (left, right)) zeros, dilation=(dh, dw) (the
#   kernel's taps are dh, dw apart), groups=G (channels and kernels split into G groups,
#   group g's kernels seeing only group g's channels: kernels (O, C/G, kh, kw)).
def _pad(x, padding):
    """x with `padding` ((top, bottom), (left, right)) zeros around its last two axes."""
    (t, b), (l, r) = padding
    if not (t or b or l or r):
        return x
    n, c, h, w = x.shape                  # (np.pad is general and slow: this is one copy)
    out = np.zeros((n, c, h + t + b, w + l + r), dtype=x.dtype)
    out[:, :, t:t + h, l:l + w] = x
    return out


def _windows(xp, kh, kw, stride, dilation):
    """(N, C, Ho, Wo, kh, kw) view of the windows of a padded image batch."""
    (sh, sw), (dh, dw) = stride, dilation
    if dh == dw == 1:
        return sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::sh, ::sw]
    # a dilated window is every dh-th, dw-th element of a window (kh-1)dh+1 high
    span = ((kh - 1) * dh + 1, (kw - 1) * dw + 1)
    return sliding_window_view(xp, span, axis=(2, 3))[:, :, ::sh, ::sw, ::dh, ::dw]


def _im2col(x, kh, kw, stride, padding, dilation):
    """Every window as a column: (C*kh*kw, N*Ho*Wo), and (N, Ho, Wo).  Channel-major
    (columns run over the batch and pixels) copies the windows with long inner runs,
    about twice as fast as one row per window; and a group's channels are one block of
    rows."""
    win = _windows(_pad(np.asarray(x), padding), kh, kw, stride, dilation)
    n, c, ho, wo = win.shape[:4]
    cols = win.transpose(1, 4, 5, 0, 2, 3).reshape(c * kh * kw, n * ho * wo)
    return cols, (n, ho, wo)


def _conv2d_np(x, w, stride, padding, dilation, groups):
    o, cg, kh, kw = w.shape
    cols, (n, ho, wo) = _im2col(x, kh, kw, stride, padding, dilation)
    if groups == 1:
        y = w.reshape(o, cg * kh * kw) @ cols                      # one matrix product
    else:                                 # one product per group, in one matmul call
        y = np.matmul(w.reshape(groups, o // groups, cg * kh * kw),
                      cols.reshape(groups, cg * kh * kw, -1)).reshape(o, -1)
    if current_graph() is not None:     # recording: the weight's gradient will want them
        _saved_columns.keep(x, cols, (kh, kw, stride, padding, dilation))
    # (O, N, Ho, Wo) in memory, seen as NCHW: no copy, and the weight gradient below
    # gets its cotangent in the layout it wants
    return y.reshape(o, n, ho, wo).transpose(1, 0, 2, 3)


def _conv2d_input_grad_np(g, w, stride, padding, dilation, groups, x_shape):
    n, c, h, wd = x_shape
    o, cg, kh, kw = w.shape
    ho, wo = g.shape[2:]
    (sh, sw), ((t, b), (l, r)), (dh, dw) = stride, padding, dilation
    xp = np.zeros((n, c, h + t + b, wd + l + r), np.result_type(g, w))
    if groups == 1:
        def share(i, j):                                            # (N, Ho, Wo, C)
            return np.tensordot(g, w[:, :, i, j], axes=([1], [0])).transpose(0, 3, 1, 2)
    else:
        # every kernel position's share at once, one product per group: (C, kh, kw, N·Ho·Wo)
        og = o // groups
        gm = np.asarray(g).transpose(1, 0, 2, 3).reshape(groups, og, -1)
        wt = w.reshape(groups, og, cg * kh * kw).transpose(0, 2, 1)
        # one kernel per group (depthwise): outer products, which a broadcast product
        # makes ~3x faster than matmul's stack of thin ones
        shares = wt * gm if og == 1 else np.matmul(wt, gm)
        shares = shares.reshape(c, kh, kw, n, ho, wo)

        def share(i, j):
            return shares[:, i, j].transpose(1, 0, 2, 3)
    for i in range(kh):                      # loop over kernel positions, not pixels
        for j in range(kw):
            xp[:, :, i * dh:i * dh + sh * (ho - 1) + 1:sh,
               j * dw:j * dw + sw * (wo - 1) + 1:sw] += share(i, j)
    return xp[:, :, t:t + h, l:l + wd]


def _conv2d_weight_grad_np(x, g, stride, padding, dilation, groups, w_shape):
    o, cg, kh, kw = w_shape
    cols = _saved_columns.take(x, (kh, kw, stride, padding, dilation))
    if cols is None:
        cols, _ = _im2col(x, kh, kw, stride, padding, dilation)
    # (sizes written out: -1 cannot be solved for when there are no images or no kernels,
    # as in the folded form of a vmap over no examples)
    n, _, ho, wo = np.shape(g)
    pixels = n * ho * wo
    gm = np.asarray(g).transpose(1, 0, 2, 3).reshape(o, pixels)
    if groups == 1:
        return (gm @ cols.T).reshape(w_shape)
    k = cg * kh * kw
    return np.matmul(gm.reshape(groups, o // groups, pixels),
                     cols.reshape(groups, k, pixels).transpose(0, 2, 1)).reshape(w_shape)


def conv_out_shape(x_shape, w_shape, stride, padding, dilation, groups):
    """The shape of conv2d's result, after checking that the images, kernels and groups
    fit together (the check behind wengert.nn.conv2d's and the abstract evaluation's
    errors; every training step makes it, hence one test before the messages)."""
    n, c, h, w = x_shape
    o, cg, kh, kw = w_shape
    (sh, sw), ((pt, pb), (pl, pr)), (dh, dw) = stride, padding, dilation
    span_h, span_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    if cg * groups != c or o % groups or span_h > h + pt + pb or span_w > w + pl + pr \
            or kh < 1 or kw < 1:
        _misfit(tuple(x_shape), tuple(w_shape), padding, dilation, groups)
    return n, o, (h + pt + pb - span_h) // sh + 1, (w + pl + pr - span_w) // sw + 1


def _misfit(x_shape, w_shape, padding, dilation, groups):
    """Raise the error that says why these images and kernels do not fit."""
    c, (o, cg, kh, kw) = x_shape[1], w_shape
    if kh < 1 or kw < 1:
        raise ValueError(f"conv2d: kernels of shape {w_shape} have no taps: their height "
                         f"and width must be >= 1")
    if c % groups or o % groups:
        raise ValueError(f"conv2d: groups={groups} must divide the {c} input channels of "
                         f"images of shape {x_shape} and the {o} output channels of "
                         f"kernels of shape {w_shape}")
    if cg * groups != c:
        raise ValueError(f"conv2d: expected kernels of shape (O, {c // groups}, kh, kw) for "
                         f"images of shape {x_shape}, got {w_shape}: with "
                         f"groups={groups}, each kernel sees C/groups = {c}/{groups} "
                         f"channels")
    span = ((kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1)
    raise ValueError(f"conv2d: kernels of shape {w_shape} with dilation {dilation} span "
                     f"{span}, larger than images of shape {x_shape} with padding {padding}")


def _conv_aval(args, params):
    shape = conv_out_shape(args[0].shape, args[1].shape, params["stride"], params["padding"],
                           params["dilation"], params["groups"])
    return shape, np.result_type(args[0].dtype, args[1].dtype)


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


# One VJP per argument: with data images, only the kernel's cotangent is computed.  The
# geometry (stride, padding, dilation, groups) rides along unchanged: the transpose of a
# strided, dilated, grouped convolution is the input (or weight) gradient of that same one.
conv2d.defvjp(
    lambda g, x, w, ans, **geo: conv2d_input_grad(g, w, x_shape=shape_of(x), **geo),
    lambda g, x, w, ans, **geo: conv2d_weight_grad(x, g, w_shape=shape_of(w), **geo))
conv2d_input_grad.defvjp(
    lambda u, g, w, ans, x_shape, **geo: conv2d(u, w, **geo),
    lambda u, g, w, ans, x_shape, **geo: conv2d_weight_grad(u, g, w_shape=shape_of(w), **geo))
conv2d_weight_grad.defvjp(
    lambda v, x, g, ans, w_shape, **geo: conv2d_input_grad(g, v, x_shape=shape_of(x), **geo),
    lambda v, x, g, ans, w_shape, **geo: conv2d(x, v, **geo))
for _p in (conv2d, conv2d_input_grad, conv2d_weight_grad):
    _p.defjvp(_bilinear_jvp(_p))


# ---- max pooling -----------------------------------------------------------------------------
# Parameters, as wengert.nn.max_pool2d sets them: kernel=(kh, kw), stride=(sh, sw), and, for
# a dilated window (taps dh rows and dw columns apart), dilation=(dh, dw); images already
# padded (with -inf), so every window lies inside them.
def _corners(x, kernel, stride, dilation=(1, 1)):
    """The kh*kw strided views x[:, :, i*dh::sh, j*dw::sw] (cut to the output size):
    element (p, q) of view (i, j) is tap (i, j) of window (p, q).  Reducing over kh*kw
    views is much faster than reducing a sliding-window view over its two short trailing
    axes."""
    x = np.asarray(x)
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    ho = (x.shape[2] - (kh - 1) * dh - 1) // sh + 1
    wo = (x.shape[3] - (kw - 1) * dw - 1) // sw + 1
    columns = [slice(j, j + sw * wo, sw) for j in range(0, kw * dw, dw)]
    for i in range(0, kh * dh, dh):
        rows = slice(i, i + sh * ho, sh)
        for cols in columns:
            yield _ALL, _ALL, rows, cols


_ALL = slice(None)


def _max_pool_np(x, kernel, stride, dilation=(1, 1)):
    x = np.asarray(x)
    best = None
    for view in _corners(x, kernel, stride, dilation):
        best = x[view] if best is None else np.maximum(best, x[view])
    return best


def _first_hits(x, y, kernel, stride, dilation, allowed=None):
    """For each corner view, where its element is its window's maximum y and no earlier
    corner already was (the first maximum wins a tie): seed 000's routing to one arg-max.
    A window holding nan has the maximum nan, which sits at its first nan.  `allowed`
    (one mask per corner, or None) rules taps out: `_pool_argmax_np`'s padding."""
    x = np.asarray(x)
    # (nan equals nothing: where a maximum is nan, its nan is found by isnan; one check
    # of y keeps the usual case at one comparison per tap)
    nan = np.isnan(y) if y.dtype.kind in "fc" and np.isnan(np.add.reduce(y, axis=None)) \
        else None
    free = None                                   # windows whose maximum is still unplaced
    for k, view in enumerate(_corners(x, kernel, stride, dilation)):
        hit = np.equal(x[view], y)
        if nan is not None:
            hit |= nan & np.isnan(x[view])
        if allowed is not None:
            hit &= allowed[k]
        if free is None:
            free = ~hit
        else:
            hit &= free
            free ^= hit
        yield view, hit


def _in_layout_of(a, ref):
    """`a` (of `ref`'s shape) with `ref`'s memory layout: an elementwise loop over views of
    both then walks them in step.  (conv2d's result is (O, N, H, W) in memory seen as NCHW;
    a cotangent arriving in C order would meet it crosswise, ~1.6x slower on the benchmark's
    CNN, and pass that layout on to every rule below.)"""
    if a.strides == ref.strides or a.flags.c_contiguous and ref.flags.c_contiguous:
        return a
    out = np.empty_like(ref, dtype=a.dtype)
    np.copyto(out, a)
    return out


def _pool_scatter_np(g, x, y, kernel, stride, dilation=(1, 1)):
    """Each window's cotangent goes to the window's arg-max (y is the pooled maximum)."""
    x, y = np.asarray(x), np.asarray(y)
    g = _in_layout_of(np.asarray(g), y)
    out = np.zeros_like(x, dtype=float_dtype(g))            # (in x's layout)
    if stride[0] > (kernel[0] - 1) * dilation[0] and stride[1] > (kernel[1] - 1) * dilation[1]:
        # Windows do not overlap: every position gets its value once, by corner views.
        for view, hit in _first_hits(x, y, kernel, stride, dilation):
            np.multiply(hit, g, out=out[view])
        return out
    for view, hit in _first_hits(x, y, kernel, stride, dilation):
        out[view] += np.where(hit, g, 0.0)
    return out


def _pool_gather_np(t, x, y, kernel, stride, dilation=(1, 1)):
    """The value of t at each window's arg-max of x (y is the pooled maximum)."""
    x, y = np.asarray(x), np.asarray(y)
    t = _in_layout_of(np.asarray(t), x)
    out = np.zeros_like(y, dtype=float_dtype(t))            # (in y's layout)
    for view, hit in _first_hits(x, y, kernel, stride, dilation):
        out += np.where(hit, t[view], 0.0)
    return out


def _pool_aval(args, params):
    n, c, h, w = args[0].shape
    (kh, kw), (sh, sw) = params["kernel"], params["stride"]
    dh, dw = params.get("dilation", (1, 1))
    return (n, c, (h - (kh - 1) * dh - 1) // sh + 1, (w - (kw - 1) * dw - 1) // sw + 1), \
        args[0].dtype


max_pool2d = defprimitive("max_pool2d", _max_pool_np, cost="cmp", abstract_eval=_pool_aval)
pool_scatter = defprimitive("pool_scatter", _pool_scatter_np, cost=None,
                            abstract_eval=lambda args, params: (args[1].shape, args[0].dtype))
pool_gather = defprimitive("pool_gather", _pool_gather_np, cost=None,
                           abstract_eval=lambda args, params: (args[2].shape, args[0].dtype))

# The pooled maximum y = max_pool2d(x) rides along so the routing needs no arg-max search;
# the window's geometry (kernel, stride, dilation) rides along unchanged.
max_pool2d.defvjp(lambda g, x, ans, **geo: (pool_scatter(g, x, ans, **geo),))
max_pool2d.defjvp(lambda ts, x, ans, **geo: pool_gather(ts[0], x, ans, **geo))
# scatter and gather are linear in their first argument and each other's transpose; the
# arg-max positions do not move under small changes of x, so x and y carry no derivative.
pool_scatter.defvjp(lambda gg, g, x, y, ans, **geo: (pool_gather(gg, x, y, **geo), None, None))
pool_scatter.defjvp(lambda ts, g, x, y, ans, **geo: pool_scatter(
    ts[0], x, y, **geo) if ts[0] is not None else None)
pool_gather.defvjp(lambda gg, t, x, y, ans, **geo: (pool_scatter(gg, x, y, **geo), None, None))
pool_gather.defjvp(lambda ts, t, x, y, ans, **geo: pool_gather(
    ts[0], x, y, **geo) if ts[0] is not None else None)



def _pool_argmax_np(x, kernel, stride, dilation=(1, 1), pad=(0, 0), width=None,
                    height=None):
    """Where each window's maximum sits, as PyTorch's ``return_indices`` gives it: the
    flat index into its (unpadded, `height` x `width`) image plane, the first in a tie.
    Taps in the padding are not counted, so a window whose image part is all -inf (the
    padding's value) names the first of those, as PyTorch does."""
    x = np.asarray(x)
    y = _max_pool_np(x, kernel, stride, dilation)
    (kh, kw), (sh, sw), (dh, dw), (ph, pw) = kernel, stride, dilation, pad
    width = x.shape[3] - 2 * pw if width is None else width
    height = x.shape[2] - 2 * ph if height is None else height
    ho, wo = y.shape[2:]
    # (the top-left tap of every window, in the unpadded plane's coordinates)
    top = (np.arange(ho) * sh - ph)[:, None]
    left = (np.arange(wo) * sw - pw)[None, :]
    taps = [(i, j) for i in range(kh) for j in range(kw)]
    allowed = None
    if ph or pw or x.shape[2:] != (height, width):
        allowed = [((top + i * dh >= 0) & (top + i * dh < height)) &
                   ((left + j * dw >= 0) & (left + j * dw < width)) for i, j in taps]
    out = np.zeros(y.shape, dtype=np.int64)
    for (i, j), (_, hit) in zip(taps, _first_hits(x, y, kernel, stride, dilation, allowed)):
        np.copyto(out, (top + i * dh) * width + left + j * dw, where=hit)
    return out


pool_argmax = defprimitive(
    "pool_argmax", _pool_argmax_np, cost="cmp",
    abstract_eval=lambda args, params: (_pool_aval(args, params)[0], np.dtype(np.int64)))
# (an index, piecewise constant: as an int it carries no derivative, and needs no rule)

# ---- max unpooling: each value back to the place its index names ---------------------------
def _winners(idx):
    """Which entries of idx (N, C, L) name their place first: where windows overlap, two
    may name one place, and only the first one's value lands (one writer per place keeps
    the scatter and its transpose, the gather, exact)."""
    order = np.argsort(idx, axis=2, kind="stable")
    ranked = np.take_along_axis(idx, order, axis=2)
    first = np.ones(idx.shape, dtype=bool)
    first[:, :, 1:] = ranked[:, :, 1:] != ranked[:, :, :-1]
    out = np.empty(idx.shape, dtype=bool)
    np.put_along_axis(out, order, first, axis=2)
    return out


def _planes(x, idx):
    # (each plane's size written out: -1 cannot be solved for when there are no images)
    x, idx = np.asarray(x), np.asarray(idx)
    n, c = idx.shape[:2]
    return (x.reshape(n, c, x.shape[2] * x.shape[3]),
            idx.reshape(n, c, idx.shape[2] * idx.shape[3]))


def check_places(idx, size):
    """Refuse indices that name no place of a `size` (height, width) plane.  NumPy would
    read a negative one from the plane's end and fail on a large one with a bare
    IndexError; this runs wherever the values are (eagerly, and when a function traced
    without them by wg.compile or wg.vmap runs), one pass over the indices."""
    idx = np.asarray(idx)
    plane = size[0] * size[1]
    if not (idx.size and labels_outside(idx, plane)):
        return
    low = np.minimum.reduce(idx, axis=None)
    bad = int(low if low < 0 else np.maximum.reduce(idx, axis=None))
    raise ValueError(f"max_unpool2d: index {bad} lies outside the {size[0]}x{size[1]} output "
                     f"plane: indices must be in [0, {plane}) (output_size sets the plane)")


def _unpool_np(x, idx, size):
    """(N, C) + size zeros, with x's values at the flat places idx names in each plane."""
    check_places(idx, size)
    x, idx = _planes(x, idx)
    n, c, _ = idx.shape
    plane = size[0] * size[1]
    out = np.zeros((n * c, plane), dtype=x.dtype)
    win = _winners(idx)
    rows = np.broadcast_to(np.arange(n * c).reshape(n, c, 1), idx.shape)
    out[rows[win], idx[win]] = x[win]
    return out.reshape((n, c) + tuple(size))


def _unpool_gather_np(g, idx):
    """The transpose of the unpooling: g at the places idx names, where that entry's
    value landed (zero for one that another entry overwrote)."""
    # (a compiled gradient may run this without the unpooling that would have checked)
    check_places(idx, np.shape(g)[2:])
    g, flat = _planes(g, idx)
    return np.where(_winners(flat), np.take_along_axis(g, flat, axis=2), 0).reshape(
        np.shape(idx))


max_unpool = defprimitive(
    "max_unpool", _unpool_np, cost=None,
    abstract_eval=lambda args, params: (args[0].shape[:2] + tuple(params["size"]),
                                        args[0].dtype))
unpool_gather = defprimitive(
    "unpool_gather", _unpool_gather_np, cost=None,
    abstract_eval=lambda args, params: (args[1].shape, args[0].dtype))
# both linear in their first argument and each other's transpose; the indices are data
max_unpool.defvjp(lambda g, x, idx, ans, size: (unpool_gather(g, idx), None))
max_unpool.defjvp(lambda ts, x, idx, ans, size: max_unpool(ts[0], idx, size=size))
unpool_gather.defvjp(lambda gg, g, idx, ans: (max_unpool(gg, idx, size=shape_of(g)[2:]),
                                              None))
unpool_gather.defjvp(lambda ts, g, idx, ans: unpool_gather(ts[0], idx))


# ---- ReLU ------------------------------------------------------------------------------------
# (0, not 0.0: integers stay integers, as the abstract value and PyTorch have them)
relu = defprimitive("relu", lambda x: np.maximum(x, 0),
                    fast=lambda x: x if (x > 0.0 or x != x) else 0.0,     # nan stays nan
                    cost="cmp", dtype_rule="promote", doc="""max(x, 0), elementwise (seed 000's
    ReLU); its derivative is 1 where x >= 0, else 0 (the cotangent passes where X >= 0).

    Example:
        >>> import numpy as np, wengert as wg, wengert.nn as nn
        >>> nn.relu(np.array([-1.0, 0.5]))
        array([0. , 0.5])
        >>> wg.grad(lambda x: wg.numpy.sum(nn.relu(x)))(np.array([-1.0, 0.5]))
        array([0., 1.])
    """)
# seed 000: the cotangent passes where X ≥ 0.  The partial is that mask itself (a bool
# multiplies as 0 or 1), one comparison instead of a comparison and a select.
relu.defpartials(lambda x, ans: S.ge(x, 0.0))

# ---- softmax, log-softmax, one-hot and cross-entropy -------------------------------------------
# Fused, as PyTorch fuses them: a classifier's loss is one node rather than the dozen of
# its definition (each primitive keeps that definition as its `decomposition`), and its
# gradient is the textbook (softmax - onehot) / N, one exponential, instead of a sweep
# back through max, exp, sum, log and indexing.
def _shift(x, axis):
    """The maximum over `axis` (kept), the shift that keeps exp(x - m) from overflowing,
    except 0 for an all -inf row.  Unlike logsumexp's `_finite_max`, a +inf maximum stays:
    inf - inf makes the whole row nan, as softmax, log_softmax and the cross-entropy give
    it in PyTorch, JAX and SciPy (a shift of 0 gave nan only at the +inf, 0 elsewhere).
    One reduction tells whether every maximum is finite, the usual case."""
    m = np.maximum.reduce(x, axis=axis, keepdims=True, initial=-np.inf)
    with np.errstate(over="ignore"):    # (finite maxima near the float limit may add up
        #                                 to inf: then the slow test below finds them finite)
        total = np.add.reduce(m, axis=None)
    if not math.isfinite(total):
        m = np.where(m == -np.inf, 0.0, m)
    return m


def _log_softmax_np(x, axis):
    # (x - m) - log s, not x - (m + log s): logits that share a large offset (1e5 in
    # float32, 1e16 in float64) would lose to it every digit of the difference
    x = np.asarray(x)
    shifted = np.subtract(x, _shift(x, (axis,)))
    sums = np.add.reduce(np.exp(shifted), axis=axis, keepdims=True)
    with np.errstate(divide="ignore"):      # an all -inf row: log(0) = -inf
        return shifted - np.log(sums)


def _log_softmax_decomposition(x, axis):
    d = x - S.stop_gradient(A.amax(x, axis=(axis,), keepdims=True))
    return d - S.log(A.sum(S.exp(d), axis=(axis,), keepdims=True))


def _softmax_np(x, axis):
    x = np.asarray(x)
    e, sums = A._shifted_exp(x, _shift(x, (axis,)), (axis,))
    e /= sums
    return e


def _same_aval(args, params):
    return args[0].shape, args[0].dtype


log_softmax = defprimitive("log_softmax", _log_softmax_np, cost="call",
                           abstract_eval=_same_aval)
log_softmax.decomposition = _log_softmax_decomposition
# d log_softmax = dx - sum(softmax * dx): both maps are linear in g (or t).
log_softmax.defvjp(lambda g, x, ans, axis: (
    g - S.exp(ans) * A.sum(g, axis=(axis,), keepdims=True),))
log_softmax.defjvp(lambda ts, x, ans, axis: ts[0] - A.sum(
    S.exp(ans) * ts[0], axis=(axis,), keepdims=True))


def _softmax_vjp(v, s, axis):
    """The softmax s's derivative applied to v: s * (v - sum(s * v)).  Its Jacobian
    diag(s) - s sᵀ is symmetric, so this is the JVP and the VJP alike."""
    return s * (v - A.sum(s * v, axis=(axis,), keepdims=True))


softmax = defprimitive("softmax", _softmax_np, cost="call", abstract_eval=_same_aval)
softmax.decomposition = lambda x, axis: S.exp(log_softmax(x, axis=axis))
softmax.defvjp(lambda g, x, ans, axis: (_softmax_vjp(g, ans, axis),))
softmax.defjvp(lambda ts, x, ans, axis: _softmax_vjp(ts[0], ans, axis))


def _one_hot_np(labels, classes):
    labels = np.asarray(labels)
    out = np.zeros((labels.size, classes))
    out[np.arange(labels.size), labels.ravel()] = 1.0
    return out.reshape(labels.shape + (classes,))


# Integer labels in, constant floats out: nothing to differentiate.
one_hot = defprimitive("one_hot", _one_hot_np, cost=None,
                       abstract_eval=lambda args, params: (
                           args[0].shape + (params["classes"],), np.dtype(np.float64)))


_ROWS: dict = {}


def _rows(n):
    """np.arange(n), made once per batch size (read-only): the row index of every
    cross-entropy and its gradient, which on a classifier's logits costs as much as the
    arithmetic."""
    rows = _ROWS.get(n)
    if rows is None:
        rows = np.arange(n)
        rows.flags.writeable = False
        if len(_ROWS) < 64:
            _ROWS[n] = rows
    return rows


def _cross_entropy_np(logits, labels, keep=True):
    """The fused loss; `keep`: save the softmax for the gradient that usually follows (the
    primitive always does, recorded or compiled; `cross_entropy_value` does not)."""
    logits = np.asarray(logits)
    n = logits.shape[0]
    # mean(lse - picked), with lse = m + log(sum(exp(logits - m))) summed term by term
    m = _shift(logits, (1,))
    e, sums = A._shifted_exp(logits, m, (1,))
    # (m - picked row by row: logits that share a large offset cancel exactly there)
    total = np.add.reduce(np.log(sums), axis=None) + \
        np.add.reduce(m[:, 0] - logits[_rows(n), labels])
    if keep:
        e /= sums
        _saved_softmax.keep(logits, e)
    loss = total / n
    # float32 logits give a float32 loss, as the abstract value says (and PyTorch gives)
    return float(loss) if loss.dtype == np.float64 else loss




def cross_entropy_value(logits, labels):
    """The fused cross-entropy of plain arrays where no gradient can follow (an eager call
    outside any recording): the primitive's value, without keeping its softmax and a copy
    of the logits alive for a gradient that will not come.

    Example:
        >>> import numpy as np
        >>> round(cross_entropy_value(np.zeros((2, 4)), np.array([0, 3])), 6)
        1.386294
        >>> _saved_softmax.entry is None
        True
    """
    return _cross_entropy_np(logits, labels, keep=False)


def _cross_entropy_decomposition(logits, labels):
    # (wg.vmap and Taylor mode evaluate this.)  Each row's entry is picked by its label, not
    # summed from a product with one_hot: a masked logit (-inf) times its 0 would be nan,
    # and one_hot's float64 would make a float32 loss float64.
    n, c = shape_of(logits)
    picked = A.take_along_axis(log_softmax(logits, axis=1), A.reshape(labels, shape=(n, 1)),
                               axis=1)
    return -A.sum(picked, axis=None, keepdims=False) / n


def _cross_entropy_grad_np(logits, labels):
    p = _saved_softmax.take(logits)
    if p is None:
        p = _softmax_np(logits, 1)              # a fresh array: finished in place
    n = p.shape[0]
    p[_rows(n), labels] -= 1.0
    p /= n
    return p


# d cross_entropy / d logits = (softmax - onehot) / N, itself a primitive so the gradient
# costs one softmax and no (N, C) one-hot array; it is differentiated through softmax.
cross_entropy_grad = defprimitive("cross_entropy_grad", _cross_entropy_grad_np, cost="call",
                                  abstract_eval=_same_aval)
cross_entropy_grad.decomposition = lambda logits, labels: (
    softmax(logits, axis=1) - one_hot(labels, classes=shape_of(logits)[1])) / shape_of(logits)[0]


def _cross_entropy_grad_linear(v, logits):
    """The derivative of cross_entropy_grad applied to v: its Jacobian is the softmax's
    divided by N, symmetric, so it serves the JVP and the VJP alike."""
    return _softmax_vjp(v, softmax(logits, axis=1), 1) / shape_of(logits)[0]


cross_entropy_grad.defvjp(
    lambda g, logits, labels, ans: _cross_entropy_grad_linear(g, logits), None)
cross_entropy_grad.defjvp(
    lambda ts, logits, labels, ans: _cross_entropy_grad_linear(ts[0], logits))


def _times(x, g):
    """x * g, except for the cotangent 1.0 that an eager gradient seeds its loss with: a
    pass over x that would change nothing."""
    return x if type(g) is float and g == 1.0 else x * g


# ---- labels checked when their values are known: at run time -------------------------------
def labels_outside(known, classes):
    """Whether some of the integers `known` (not empty) lie outside range(classes)."""
    if known.dtype.kind == "u":
        return np.maximum.reduce(known, axis=None) >= classes
    if classes <= 1 << (8 * known.dtype.itemsize - 1):
        # One pass, not two (every training step checks its labels): read as unsigned
        # integers, a negative label is at least 2**(bits-1), above every class index.
        return np.maximum.reduce(known.view(_unsigned(known.dtype)), axis=None) >= classes
    return np.minimum.reduce(known, axis=None) < 0 \
        or np.maximum.reduce(known, axis=None) >= classes


_UNSIGNED: dict = {}


def _unsigned(dtype):
    """The unsigned type of a signed integer dtype's size and byte order ('>i4' -> '>u4'),
    remembered: every training step checks its labels, and dtype.str is slow."""
    found = _UNSIGNED.get(dtype)
    if found is None:
        found = _UNSIGNED[dtype] = np.dtype(dtype.str.replace("i", "u", 1))
    return found


def bad_labels(known, classes, who, ignore_index=None, fused=False):
    """None if the integer labels `known` all lie in range(classes) or equal
    `ignore_index`, else the ValueError that says so, with their range; `fused`: the
    labels go to the fused cross-entropy, which cannot leave PyTorch's default
    ignore_index, -100, out (wengert.nn.cross_entropy of labels traced without values)."""
    if not (known.size and labels_outside(known, classes)):
        return None
    also = ""
    if ignore_index is not None:
        known = known[known != ignore_index]
        if not (known.size and labels_outside(known, classes)):
            return None
        also = f" (or equal ignore_index, {ignore_index})"
    low, high = np.minimum.reduce(known, axis=None), np.maximum.reduce(known, axis=None)
    why = ""
    if fused and np.equal(known, -100).any():
        why = ("; -100 is PyTorch's default ignore_index, which the fused cross-entropy of "
               "labels traced without their values (wg.compile, wg.vmap) cannot leave out: "
               "pass ignore_index=-100 explicitly to have such labels left out at run time")
    return ValueError(f"{who}: labels must lie in range({classes}) for {classes} "
                      f"classes{also}, got values from {low} to {high}{why}")


def _checked_labels_np(labels, classes, who, ignore_index, fused):
    labels = np.asarray(labels)
    error = bad_labels(labels, classes, who, ignore_index, fused)
    if error is not None:
        raise error
    return labels


# The labels themselves, once they are found in range: wengert.nn's losses put it before
# the labels' use where a trace (wg.compile, wg.vmap) has not their values to check, so
# that a label out of range is refused when the function runs, with the eager message,
# rather than read from the end (a negative index) or fail inside NumPy.  One pass over
# the labels.  Integer data: nothing to differentiate.
checked_labels = defprimitive("checked_labels", _checked_labels_np, cost=None,
                              abstract_eval=_same_aval)


# (wengert.nn.cross_entropy checks the shapes and labels before they get here)
cross_entropy = defprimitive("cross_entropy", _cross_entropy_np, cost="call",
                             abstract_eval=lambda args, params: ((), args[0].dtype))
cross_entropy.decomposition = _cross_entropy_decomposition
cross_entropy.defvjp(
    lambda g, logits, labels, ans: _times(cross_entropy_grad(logits, labels), g),
    None)                                                 # labels are data
cross_entropy.defjvp(lambda ts, logits, labels, ans: A.sum(
    cross_entropy_grad(logits, labels) * ts[0], axis=None, keepdims=False))
