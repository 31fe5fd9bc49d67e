"""Batching rules: how `wg.vmap` applies each primitive to a whole batch at once.

`wg.vmap` (wengert.vectorize) traces a function on one example and then evaluates that
graph on batches.  Each operation with a batched argument goes through its primitive's
rule (`Primitive.defbatch`): ``rule(args, mapped, node)``, where ``args[k]`` carries the
batch as a new leading axis 0 if ``mapped[k]`` and is shared by every example otherwise,
and `node` is the operation on one example (its ``params``, its ``shape``, and its
``args``, whose shapes are the per-example ones).  A rule returns the result with the
batch on axis 0.  The batch always sits on axis 0, so a rule only has to say where one
more leading axis goes: most of them shift an axis parameter by one.

The rules come in kinds, declared in the tables at the end:

* elementwise primitives broadcast: a batched argument of lower rank than the result gets
  ones after its batch axis, so that it lines up (`_elementwise`);
* reductions, scans, flips and the like move their axis parameters one place right;
* matrix functions already map over leading axes (``inv`` of a stack of matrices), and the
  batch is one more;
* matmul and solve line their operands up as stacks of matrices (`_stacked_pair`); a
  solve with one matrix for the whole batch solves for all right-hand sides at once;
* conv2d and max-pool fold the batch into their own batch axis N; a kernel per example
  makes the examples the groups of one grouped convolution.

A primitive without a rule is batched through its `decomposition` if it has one, and
otherwise called once per example (wengert.vectorize): never wrong, only slower.

Example:
    >>> import numpy as np, wengert as wg, wengert.numpy as wnp
    >>> wg.vmap(lambda x: wnp.sum(x, axis=0))(np.ones((4, 2, 3))).shape   # sum's rule: axis 1
    (4, 3)
"""
from __future__ import annotations

import math
import string

import numpy as np

from . import array as A, linalg as L, nn as N, scalar as S
from . import scipy_linalg as SL, segment as SEG, signal as SG
from .registry import REGISTRY, shape_of
from .shape import broadcast_to, sum_to


# --------------------------------------------------------------------------------------
# lining arguments up
# --------------------------------------------------------------------------------------
def lift_rank(x, mapped, rank):
    """A batched `x` with ones inserted after the batch axis, so that one example has
    `rank` dimensions (broadcasting lines an example's dimensions up from the right, and
    the batch axis must stay in front of them).  Shared values are returned unchanged."""
    if not mapped:
        return x
    shape = shape_of(x)
    extra = rank - (len(shape) - 1)
    if extra <= 0:
        return x
    return A.reshape(x, shape=shape[:1] + (1,) * extra + shape[1:])


def batched(x, mapped, size):
    """`x` with the batch axis in front: a shared value is broadcast to every example."""
    if mapped:
        return x
    return broadcast_to(x, shape=(size,) + tuple(shape_of(x)))


def _size(args, mapped):
    return next(shape_of(a)[0] for a, m in zip(args, mapped) if m)


def _shifted(axis):
    """An axis parameter (an int, a tuple of ints, or None for all) one place right: a
    batch axis in front moves the axes counted from the front, not those from the end."""
    if axis is None:
        return None
    if isinstance(axis, tuple):
        return tuple(_shifted(a) for a in axis)
    return axis + 1 if axis >= 0 else axis


def _example_axes(node):
    """All of one example's axes, as they are numbered in the batch."""
    return tuple(range(1, len(node.args[0].shape) + 1))


# --------------------------------------------------------------------------------------
# the kinds of rule
# --------------------------------------------------------------------------------------
def _elementwise(args, mapped, node):
    rank = len(node.shape)
    return node.op(*[lift_rank(a, m, rank) for a, m in zip(args, mapped)], **node.params)


def _same_call(args, mapped, node):
    """For primitives that map over leading axes already (matrix functions, astype)."""
    return node.op(*args, **node.params)


def _matrices(args, mapped, node):
    """A matrix function of a stack of matrices; an example that is one vector (tril of a
    vector makes a matrix) is no stack, and takes one call per example."""
    if len(node.args[0].shape) < 2:
        return None
    return node.op(*args, **node.params)


def _axis_param(name):
    """For primitives whose parameter `name` numbers axes (None: all of them)."""
    def rule(args, mapped, node):
        params = dict(node.params)
        axis = params[name]
        params[name] = _example_axes(node) if axis is None else _shifted(axis)
        return node.op(*args, **params)
    return rule


def _arg_reduction(args, mapped, node):
    """argmax / argmin: over the flattened example when axis is None."""
    axis, keepdims = node.params["axis"], node.params["keepdims"]
    x = args[0]
    if axis is not None:
        return node.op(x, axis=axis + 1, keepdims=keepdims)
    size = shape_of(x)[0]
    flat = node.op(A.reshape(x, shape=(size, -1)), axis=1, keepdims=False)
    return A.reshape(flat, shape=(size,) + node.shape)


def _lined_up_axis(args, mapped, node):
    """logsumexp_scaled / logsumexp_sign: a and b broadcast together, then reduce."""
    rank = max(len(a.shape) for a in node.args)
    params = dict(node.params)
    axis = params["axis"]
    params["axis"] = tuple(range(1, rank + 1)) if axis is None else _shifted(axis)
    return node.op(*[lift_rank(a, m, rank) for a, m in zip(args, mapped)], **params)


def _all_batched_axis(args, mapped, node):
    """concatenate, take_along_axis: every operand batched, the axis one place right."""
    size = _size(args, mapped)
    params = dict(node.params)
    params["axis"] = _shifted(params["axis"])
    if "shape" in params:                                       # put_along_axis
        params["shape"] = (size,) + tuple(params["shape"])
    return node.op(*[batched(a, m, size) for a, m in zip(args, mapped)], **params)


def _reshape(args, mapped, node):
    return A.reshape(args[0], shape=(_size(args, mapped),) + tuple(node.params["shape"]))


def _broadcast_to(args, mapped, node):
    x = lift_rank(args[0], mapped[0], len(node.shape))
    return broadcast_to(x, shape=(_size(args, mapped),) + tuple(node.params["shape"]))


def _sum_to(args, mapped, node):
    x, size = args[0], _size(args, mapped)
    lead = len(node.args[0].shape) - len(node.shape)
    x = sum_to(x, shape=(size,) + (1,) * lead + node.shape)
    return A.reshape(x, shape=(size,) + node.shape) if lead else x


def _transpose(args, mapped, node):
    return A.transpose(args[0], axes=(0,) + tuple(a + 1 for a in node.params["axes"]))


def _pad(args, mapped, node):
    return A.pad(args[0], pad_width=((0, 0),) + tuple(node.params["pad_width"]))


def _einsum(args, mapped, node):
    subscripts = node.params["subscripts"]
    letter = next(c for c in string.ascii_letters if c not in subscripts)
    ins, out = subscripts.split("->")
    ins = [letter + s if m else s for s, m in zip(ins.split(","), mapped)]
    return A.einsum(*args, subscripts=",".join(ins) + "->" + letter + out)


def _stacked_pair(args, mapped, node):
    """matmul(a, b): as stacks of matrices.  A vector operand becomes a one-row (a) or
    one-column (b) matrix, the batched operands get ones after the batch axis up to a
    common rank, and broadcasting over the stack axes does the rest; the inserted axes
    are all of length one, so a reshape takes them out again."""
    (a, b), (ma, mb) = args, mapped
    ra, rb = (len(x.shape) for x in node.args)
    if ra == 1:
        ra = 2
        sa = tuple(shape_of(a))
        a = A.reshape(a, shape=sa[:-1] + (1,) + sa[-1:])
    if rb == 1:
        rb = 2
        b = A.reshape(b, shape=tuple(shape_of(b)) + (1,))
    rank = max(ra, rb)
    size = _size(args, mapped)
    sa = tuple(shape_of(a))
    if sa[-1] == 1:
        # an outer product (a per-example weight gradient, xᵀ·g): NumPy's matmul
        # loops over a stack of such thin products, a broadcast product does not
        out = S.mul(lift_rank(a, ma, rank), lift_rank(b, mb, rank))
        return A.reshape(out, shape=(size,) + node.shape)
    if ma and not mb and rb == 2:
        # shared weights: the batch and a's rows are all rows of one product
        # (the row count written out: -1 cannot be solved for when a row is empty)
        out = node.op(A.reshape(a, shape=(math.prod(sa[:-1]), sa[-1])), b)
        return A.reshape(out, shape=(size,) + node.shape)
    out = node.op(lift_rank(a, ma, rank), lift_rank(b, mb, rank))
    return A.reshape(out, shape=(size,) + node.shape)


def _broadcast_stacks(args, mapped, node):
    """Matrix functions of several stacks of matrices whose batch dimensions broadcast
    (solve_sylvester, the generalized eigh): each batched argument gets ones after its
    batch axis, up to the highest rank of one example's arguments, as an elementwise
    primitive's do (not the result's rank: the eigenvalues have one axis less)."""
    rank = max(len(x.shape) for x in node.args)
    return node.op(*[lift_rank(a, m, rank) for a, m in zip(args, mapped)], **node.params)


def _solve_columns(args, mapped, node):
    """solve(a, b), solve_triangular(a, b) and solve_banded(ab, b): with one matrix for
    the whole batch, the batch's right-hand sides are the columns of one solve (one
    factorisation: NumPy's solve of a broadcast stack factorises the same matrix once per
    example); else as stacks of matrices (a vector b as a column), lined up as
    `_stacked_pair` does."""
    (a, b), (ma, mb) = args, mapped
    ra, rb = (len(x.shape) for x in node.args)
    size = _size(args, mapped)
    if rb == 1:
        rb = 2
        b = A.reshape(b, shape=tuple(shape_of(b)) + (1,))
    if not ma and ra == 2:
        sb = tuple(shape_of(b))                     # (size, ..., m, k)
        m = sb[-2]
        order = (len(sb) - 2,) + tuple(range(len(sb) - 2)) + (len(sb) - 1,)
        cols = A.reshape(A.transpose(b, axes=order), shape=(m, -1))
        out = A.reshape(node.op(a, cols, **node.params), shape=(m,) + sb[:-2] + sb[-1:])
        back = tuple(range(1, len(sb) - 1)) + (0, len(sb) - 1)
        return A.reshape(A.transpose(out, axes=back), shape=(size,) + node.shape)
    rank = max(ra, rb)
    out = node.op(lift_rank(a, ma, rank), lift_rank(b, mb, rank), **node.params)
    return A.reshape(out, shape=(size,) + node.shape)


def _convolve(args, mapped, node):
    """convolve(a, b) with one of them shared: the batch axis is one more axis to convolve
    along, the shared array's of length one (in 'full' mode always; 'same' keeps a's shape,
    so a must be the batched one, and 'valid' needs the batched one to be the larger).
    Else (both batched) None: one call per example."""
    (a, b), (ma, mb) = args, mapped
    mode = node.params["mode"]
    sa, sb = (tuple(x.shape) for x in node.args)
    batched, shared = (sa, sb) if ma else (sb, sa)
    if ma and mb or mode == "same" and mb or mode == "valid" and not all(
            p >= q for p, q in zip(batched, shared)):
        return None
    one = lambda x, s: A.reshape(x, shape=(1,) + s)
    return node.op(a if ma else one(a, sa), b if mb else one(b, sb), **node.params)


def _lfilter(args, mapped, node):
    """lfilter(b, a, x) with only the signals batched: the filter runs along the last axis,
    whatever the others are, so the batch axis in front is one more of them.  A batch of
    filters (b or a batched): None, one call per example."""
    if mapped[0] or mapped[1]:
        return None
    return node.op(*args, **node.params)


def _swap_rows(args, mapped, node):
    """lu_swap_rows(x, piv): x's and piv's batch dimensions lined up (piv has one axis
    fewer than x)."""
    rank = len(node.shape)
    (x, piv), (mx, mp) = args, mapped
    return node.op(lift_rank(x, mx, rank), lift_rank(piv, mp, rank - 1), **node.params)


def _fold_into_n(args, mapped, node):
    """conv2d, max-pool and their rules' helpers on NCHW images: the batch joins N.  A
    batched kernel (a different one per example) cannot join (`_conv2d` and its kin make
    it a grouped convolution instead)."""
    images = _IMAGE_ARGS[node.op.name]
    if any(m for k, m in enumerate(mapped) if k not in images):
        return None
    size = _size(args, mapped)
    folded = []
    for k, (x, m) in enumerate(zip(args, mapped)):
        if k in images:
            s = tuple(shape_of(batched(x, m, size)))
            x = A.reshape(batched(x, m, size), shape=(s[0] * s[1],) + s[2:])
        folded.append(x)
    params = dict(node.params)
    if "x_shape" in params:                                     # conv2d_input_grad
        xs = tuple(params["x_shape"])
        params["x_shape"] = (size * xs[0],) + xs[1:]
    out = node.op(*folded, **params)
    return A.reshape(out, shape=(size,) + node.shape)


# A kernel per example: the examples become groups of one grouped convolution.  Their
# images (B, N, C, H, W) line up as the channels (N, B·C, H, W), their kernels
# (B, O, C/G, kh, kw) as B·O kernels, and with B·G groups each example's kernels see only
# that example's channels; the derivatives are the primitives' own, of any order.
def _into_channels(x):
    """(B, N, C, H, W) -> (N, B·C, H, W): the batch joins the channels."""
    b, n, c, h, w = shape_of(x)
    if n != 1:
        x = A.transpose(x, axes=(1, 0, 2, 3, 4))
    return A.reshape(x, shape=(n, b * c, h, w))


def _out_of_channels(y, size):
    """(N, B·O, H, W) -> (B, N, O, H, W): `_into_channels` undone."""
    n, bo, h, w = shape_of(y)
    if n == 1:                          # (a per-example gradient's one image: no transpose)
        return A.reshape(y, shape=(size, 1, bo // size, h, w))
    y = A.reshape(y, shape=(n, size, bo // size, h, w))
    return A.transpose(y, axes=(1, 0, 2, 3, 4))


def _group_major(w, groups, size):
    """A batch of kernels (B, O, ...) as (G·B·O/G, ...): shared images see every example's
    kernels of group g in group g (the kernels of one group must be adjacent)."""
    s = tuple(shape_of(w))
    if groups == 1:
        return A.reshape(w, shape=(size * s[1],) + s[2:])
    w = A.reshape(w, shape=(size, groups, s[1] // groups) + s[2:])
    w = A.transpose(w, axes=(1, 0) + tuple(range(2, len(s) + 1)))
    return A.reshape(w, shape=(size * s[1],) + s[2:])


def _group_major_images(y, groups):
    """A batch of images (B, N, O, H, W) as (N, G·B·O/G, H, W): the channels in the order
    of `_group_major`'s kernels."""
    if groups == 1:
        return _into_channels(y)
    b, n, o, h, w = shape_of(y)
    y = A.reshape(y, shape=(b, n, groups, o // groups, h, w))
    return A.reshape(A.transpose(y, axes=(1, 2, 0, 3, 4, 5)), shape=(n, b * o, h, w))


def _batch_major(y, groups, size, axis):
    """`_group_major` undone on axis `axis` of y (1 for images, 0 for kernels): G·B·O/G
    back to (B, O), the batch moved to the front."""
    s = tuple(shape_of(y))
    o = s[axis] // size
    if groups == 1 and axis == 0:
        return A.reshape(y, shape=(size, o) + s[1:])
    y = A.reshape(y, shape=s[:axis] + (groups, size, o // groups) + s[axis + 1:])
    order = list(range(len(s) + 2))
    order.remove(axis + 1)
    y = A.transpose(y, axes=(axis + 1,) + tuple(order))
    return A.reshape(y, shape=(size,) + s[:axis] + (o,) + s[axis + 1:])


def _no_examples(node):
    """The result for a batch of no examples, where a kernel per example would make
    zero groups (and zero output channels to split back into examples)."""
    return np.zeros((0,) + tuple(node.shape), node.dtype)


def _conv2d(args, mapped, node):
    """A kernel per example: with batched images, B·G groups over the batch in the
    channels; with shared images, every example's kernels are more output channels of
    one convolution with G groups."""
    if not mapped[1]:
        return _fold_into_n(args, mapped, node)
    size, params = _size(args, mapped), dict(node.params)
    if size == 0:
        return _no_examples(node)
    x, w = args
    groups = params["groups"]
    if not mapped[0]:
        y = node.op(x, _group_major(w, groups, size), **params)
        return _batch_major(y, groups, size, axis=1)
    o = node.args[1].shape[0]
    params["groups"] = size * groups
    y = node.op(_into_channels(x), A.reshape(w, shape=(size * o,) + node.args[1].shape[1:]),
                **params)
    return _out_of_channels(y, size)


def _conv2d_input_grad(args, mapped, node):
    """The images' cotangent with a kernel per example: the input gradient of the
    grouped convolution of `_conv2d` (the batch in the channels, B·G groups)."""
    if not mapped[1]:
        return _fold_into_n(args, mapped, node)
    size, params = _size(args, mapped), dict(node.params)
    if size == 0:
        return _no_examples(node)
    g, w = batched(args[0], mapped[0], size), args[1]
    n, c, h, wd = params["x_shape"]
    o = node.args[1].shape[0]
    params["groups"] *= size
    params["x_shape"] = (n, size * c, h, wd)
    out = node.op(_into_channels(g), A.reshape(w, shape=(size * o,) + node.args[1].shape[1:]),
                  **params)
    return _out_of_channels(out, size)


def _conv2d_weight_grad(args, mapped, node):
    """The kernel's cotangent for each example: the weight gradient of `_conv2d`'s
    grouped convolution, the batch in the channels (B·G groups), or, with shared images,
    in the output channels (G groups)."""
    size, params = _size(args, mapped), dict(node.params)
    if size == 0:
        return _no_examples(node)
    o, cg, kh, kw = params["w_shape"]
    groups = params["groups"]
    params["w_shape"] = (size * o, cg, kh, kw)
    if not mapped[0]:
        out = node.op(args[0], _group_major_images(args[1], groups), **params)
        return _batch_major(out, groups, size, axis=0)
    x, g = (batched(a, m, size) for a, m in zip(args, mapped))
    params["groups"] = size * groups
    out = node.op(_into_channels(x), _into_channels(g), **params)
    return A.reshape(out, shape=(size, o, cg, kh, kw))


# which arguments are NCHW images (the others: kernels)
_IMAGE_ARGS = {"conv2d": (0,), "conv2d_input_grad": (0,), "max_pool2d": (0,),
               "pool_gather": (0, 1, 2), "pool_scatter": (0, 1, 2), "pool_argmax": (0,),
               "max_unpool": (0, 1), "unpool_gather": (0, 1)}


def _cross_entropy_grad(args, mapped, node):
    """(softmax − one-hot) / N for each example: the batch folds into the rows, whose
    count then divides once too often."""
    logits, labels = args
    size = _size(args, mapped)
    n, c = node.args[0].shape
    logits = A.reshape(batched(logits, mapped[0], size), shape=(size * n, c))
    labels = A.reshape(batched(labels, mapped[1], size), shape=(size * n,))
    out = N.cross_entropy_grad(logits, labels) * float(size)
    return A.reshape(out, shape=(size,) + node.shape)


# ---- indexing ----------------------------------------------------------------------------
def _batch_lands_at(index) -> int:
    """Where the batch axis of ``x[(slice(None),) + index]`` lands: in front, unless the
    advanced indices (arrays, and then integers too) are not next to each other, when
    NumPy puts their broadcast dimensions first and the batch after them."""
    arrays = [i for i in index if isinstance(i, np.ndarray)]
    if not arrays:
        return 0
    advanced = [k for k, i in enumerate(index)
                if isinstance(i, (np.ndarray, int, np.integer)) and not isinstance(i, bool)]
    if advanced[-1] - advanced[0] + 1 == len(advanced):
        return 0
    shapes = [(int(np.count_nonzero(i)),) if i.dtype == bool else i.shape for i in arrays]
    return len(np.broadcast_shapes(*shapes))


_ALL = ("slice", None, None, None)


def _getitem(args, mapped, node):
    index = node.params["index"]
    out = A.getitem(args[0], index=(_ALL,) + tuple(index))
    at = _batch_lands_at(index)
    if not at:
        return out
    rank = len(node.shape) + 1
    return A.transpose(out, axes=(at,) + tuple(k for k in range(rank) if k != at))


def _index_add(args, mapped, node):
    """The transpose of `_getitem`: the cotangent's batch axis goes where getitem put it."""
    g, index = args[0], node.params["index"]
    size = _size(args, mapped)
    at = _batch_lands_at(index)
    if at:
        rank = len(node.args[0].shape) + 1
        order = list(range(1, rank))
        order.insert(at, 0)
        g = A.transpose(g, axes=tuple(order))
    return A.index_add(g, index=(_ALL,) + tuple(index), shape=(size,) + node.shape)


def _swap01(x):
    rank = len(shape_of(x))
    return A.transpose(x, axes=(1, 0) + tuple(range(2, rank)))


def _segment_rows_first(args, mapped, node):
    """segment_extremum and its derivative maps, with one ids for the whole batch: the
    batch becomes an inner axis (rows first), which they reduce elementwise over."""
    at = 1 if node.op is SEG.segment_extremum else 2        # (where ids is)
    if mapped[at]:
        return None                     # (ids per example: one call each)
    size = _size(args, mapped)
    lined = []
    for k, (a, m) in enumerate(zip(args, mapped)):
        if k == at:
            lined.append(a)
        elif m:
            lined.append(_swap01(a))
        else:
            shape = shape_of(a)
            a = A.reshape(a, shape=shape[:1] + (1,) + shape[1:])
            lined.append(broadcast_to(a, shape=shape[:1] + (size,) + shape[1:]))
    return _swap01(node.op(*lined, **node.params))


def _index_set(args, mapped, node):
    """x[index] = v on every example: x's batch axis is written where getitem reads it,
    so v is lined up with x[index] as that batch sees it (its batch axis where
    `_batch_lands_at` says, a shared v with a size-1 axis there)."""
    (x, v), index = args, node.params["index"]
    size = _size(args, mapped)
    x = batched(x, mapped[0], size)
    target = A.index_shape(node.args[0].shape, index)
    at = _batch_lands_at(index)
    if mapped[1]:
        v = broadcast_to(lift_rank(v, True, len(target)), shape=(size,) + target)
        if at:
            order = list(range(1, len(target) + 1))
            order.insert(at, 0)
            v = A.transpose(v, axes=tuple(order))
    else:
        v = A.reshape(broadcast_to(v, shape=target), shape=target[:at] + (1,) + target[at:])
    return A.index_set(x, v, index=(_ALL,) + tuple(index))


# ---- wg.checkpoint's packing -----------------------------------------------------------
def _part(args, mapped, node):
    """part: the flat slice of each example's packed row."""
    x, p = args[0], node.params
    size = shape_of(x)[0]
    row = A.getitem(x, index=(_ALL, ("slice", p["start"], p["stop"], None)))
    return A.reshape(row, shape=(size,) + tuple(p["shape"]))


def _place(args, mapped, node):
    """place: each example's values, flattened, padded with zeros to its packed row."""
    x, p = args[0], node.params
    size = shape_of(x)[0]
    flat = A.reshape(x, shape=(size, -1))
    n = shape_of(flat)[1]
    return A.pad(flat, pad_width=((0, 0), (p["start"], p["size"] - p["start"] - n)))


def _searchsorted(args, mapped, node):
    """searchsorted: values to look up may have any shape, so a batch of them in one
    sorted array is one call; a batch of sorted arrays (rows) searches each example's
    values in its own row, values shared by every example given once (a leading axis of
    size 1: the primitive puts them in order once for all rows)."""
    a, v = args
    if not mapped[0] and len(node.args[0].shape) == 1:
        return A.searchsorted(a, v, **node.params)
    a = batched(a, mapped[0], _size(args, mapped))      # (rows of rows: vmap of vmap)
    if not mapped[1]:
        v = A.reshape(v, shape=(1,) + tuple(shape_of(v)))
    return A.searchsorted(a, v, **node.params)


def _interp(args, mapped, node):
    """interp: a batch of queries alone is one call (x may have any shape); a batch of
    sample points or ends makes every example's x, xp and fp rows of one call (the
    primitive takes rows: NumPy's interp once per row), its ends one per row unless
    shared by all, and its queries too."""
    x, xp, fp, left, right = args
    rows = tuple(node.args[1].shape[:-1])       # (rows already, under vmap of vmap)
    if not any(mapped[1:]) and not rows:
        return A.interp(*args)
    size = _size(args, mapped)

    def end(v, m):
        if not m:
            return batched(v, False, size) if shape_of(v) else v
        if shape_of(v)[1:] != rows:             # (one per example, shared by its rows)
            v = broadcast_to(A.reshape(v, shape=(size,) + (1,) * len(rows)),
                             shape=(size,) + rows)
        return v
    # (queries shared by every example: given once, a leading axis of size 1, which the
    # primitive puts in order once for all rows)
    x = x if mapped[0] else A.reshape(x, shape=(1,) + tuple(shape_of(x)))
    return A.interp(x, batched(xp, mapped[1], size), batched(fp, mapped[2], size),
                    end(left, mapped[3]), end(right, mapped[4]))


# --------------------------------------------------------------------------------------
# who has which rule
# --------------------------------------------------------------------------------------
def _declare():
    for prim in REGISTRY.values():
        if prim.elementwise:
            prim.defbatch(_elementwise)
    for name in ("astype", "copy", "one_hot", "checked_labels", "inv", "det", "cofactor",
                 "logabsdet", "signdet", "logdet", "cholesky", "eigvalsh", "eigvecsh",
                 "eigvals", "eigvecs", "svdvals", "svd_u", "svd_vh", "qr_q", "qr_r", "expm",
                 "sqrtm", "lu_factor", "lu_pivots", "symmetrize", "eigh_values",
                 "eigh_vectors", "top_eigvecsh"):
        REGISTRY[name].defbatch(_same_call)
    for prim in (SL.solve_sylvester, SL.gen_eigh_values, SL.gen_eigh_vectors,
                 L.cofactor_derivative):
        prim.defbatch(_broadcast_stacks)
    for prim in (L.solve, SL.solve_triangular, SL.solve_banded):
        prim.defbatch(_solve_columns)
    SL.lu_swap_rows.defbatch(_swap_rows)
    SG.convolve.defbatch(_convolve)
    SG.lfilter.defbatch(_lfilter)
    REGISTRY["tril"].defbatch(_matrices)
    for name in ("sum", "amax", "amin", "prod", "logsumexp", "cumsum", "cumprod", "flip",
                 "roll", "argsort", "argpartition", "softmax", "log_softmax", "rfft",
                 "irfft"):
        REGISTRY[name].defbatch(_axis_param("axes" if name == "flip" else "axis"))
    for name in ("fftn", "trig_transform"):
        REGISTRY[name].defbatch(_axis_param("axes"))
    for name in ("argmax", "argmin"):
        REGISTRY[name].defbatch(_arg_reduction)
    for name in ("logsumexp_scaled", "logsumexp_sign"):
        REGISTRY[name].defbatch(_lined_up_axis)
    for name in ("concatenate", "take_along_axis", "put_along_axis"):
        REGISTRY[name].defbatch(_all_batched_axis)
    REGISTRY["reshape"].defbatch(_reshape)
    REGISTRY["broadcast_to"].defbatch(_broadcast_to)
    REGISTRY["matmul"].defbatch(_stacked_pair)
    for name in _IMAGE_ARGS:
        REGISTRY[name].defbatch(_fold_into_n)
    REGISTRY["conv2d"].defbatch(_conv2d)
    REGISTRY["conv2d_input_grad"].defbatch(_conv2d_input_grad)
    REGISTRY["conv2d_weight_grad"].defbatch(_conv2d_weight_grad)
    REGISTRY["sum_to"].defbatch(_sum_to)
    REGISTRY["transpose"].defbatch(_transpose)
    REGISTRY["pad"].defbatch(_pad)
    REGISTRY["einsum"].defbatch(_einsum)
    REGISTRY["getitem"].defbatch(_getitem)
    REGISTRY["index_add"].defbatch(_index_add)
    REGISTRY["index_set"].defbatch(_index_set)
    REGISTRY["cross_entropy_grad"].defbatch(_cross_entropy_grad)
    REGISTRY["part"].defbatch(_part)
    REGISTRY["bitcast"].defbatch(_same_call)
    REGISTRY["place"].defbatch(_place)
    A.searchsorted.defbatch(_searchsorted)
    for prim in (SEG.segment_extremum, SEG.winners_mean, SEG.winners_spread):
        prim.defbatch(_segment_rows_first)
    A.interp.defbatch(_interp)


_declare()
