"""Structural array primitives: reductions, reshapes, indexing, joining, contractions.

Each declares its derivative as linear maps (never a materialised Jacobian, seed 001):
a VJP, and a JVP unless the primitive is linear, in which case the JVP is the primitive
itself applied to the tangents (see `wengert.ad.forward`).  Rules are written with
primitives, so they evaluate on arrays or build graph nodes alike.

Parameters (axes, shapes, indices) are normalised by `wengert.numpy` before a primitive
is called: axes are sorted tuples of non-negative ints, shapes are tuples.
"""
from __future__ import annotations

import math
import string
import weakref

import numpy as np

from .registry import defprimitive, float_dtype, shape_of
from .shape import broadcast_to, sum_to
from . import scalar as S


def by_example(op, args, params):
    """(shape, dtype) of a result found by running the implementation on stand-ins of the
    arguments' shapes: zero-strided views, so no argument memory is allocated."""
    stand_ins = [a.value if a.value is not None else _stand_in(a.shape, a.dtype)
                 for a in args]
    # (quiet: zeros are no values of the user's, so 0/0 among them warns of nothing)
    with np.errstate(all="ignore"):
        out = np.asarray(op.impl(*stand_ins, **params))
    return out.shape, out.dtype


_STAND_INS = {}


def _stand_in(shape, dtype):
    """A read-only zero-strided array of zeros of this shape and dtype, made once (an
    abstract trace asks for the same few again and again, and np.broadcast_to costs
    ~5 µs)."""
    key = (shape, dtype)
    found = _STAND_INS.get(key)
    if found is None:
        if len(_STAND_INS) > 4096:          # (a bound, not a policy: any shape is rare)
            _STAND_INS.clear()
        found = _STAND_INS[key] = np.broadcast_to(np.zeros((), dtype), shape)
    return found


def _prim(name, impl, **kw):
    kw.setdefault("abstract_eval", None)
    prim = defprimitive(name, impl, **kw)
    prim.elementwise = False
    if kw["abstract_eval"] is None:
        prim._abstract_eval = lambda args, params: by_example(prim, args, params)
    return prim


def ndim_of(x) -> int:
    return len(shape_of(x))


def zeros_like(x):
    """Zeros shaped like x: a constant node for a node, an array for an array."""
    from ..graph.node import Node
    if type(x) is Node:
        z = 0.0 if x.shape == () else np.zeros(x.shape, x.dtype)
        return x.graph.const(z)
    return np.zeros_like(x, dtype=float_dtype(x))


def _kept_shape(shape, axis):
    """The shape of a reduction with keepdims=True."""
    axes = range(len(shape)) if axis is None else axis
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def _unreduce(g, x, axis, keepdims):
    """A reduction's cotangent, reshaped with the reduced axes kept (size 1)."""
    if not keepdims:
        g = reshape(g, shape=_kept_shape(shape_of(x), axis))
    return g


# ---- reshaping -----------------------------------------------------------------------------
def _reshape_np(x, shape):
    # a scalar as a number, as other primitives give it, not a 0-d array (a Jacobian's
    # entries taken out of a reverse sweep's array were 0-d arrays beside floats)
    out = np.reshape(x, shape)
    return out if out.ndim else out[()]


reshape = _prim("reshape", _reshape_np, cost=None, linear=True)
reshape.defvjp(lambda g, x, ans, shape: (reshape(g, shape=shape_of(x)),))

def _transpose_np(x, axes):
    return x.transpose(axes) if type(x) is np.ndarray else np.transpose(x, axes)


transpose = _prim("transpose", _transpose_np, cost=None, linear=True)
transpose.defvjp(lambda g, x, ans, axes: (transpose(g, axes=tuple(np.argsort(axes).tolist())),))


def _astype_np(x, dtype):
    out = np.asarray(x).astype(dtype)
    return out[()] if out.ndim == 0 else out       # a scalar, as other reductions give


def dtype_of(x):
    """The dtype of a node or a concrete value."""
    return x.dtype if hasattr(x, "dtype") else np.result_type(x)


# A cast between floating dtypes is differentiable (the cotangent is cast back); a cast to
# any other dtype is a value without derivative, which wengert.numpy.astype arranges by
# casting a stop_gradient of the value.
astype = _prim("astype", _astype_np, cost=None, linear=True,
               abstract_eval=lambda args, params: (args[0].shape, np.dtype(params["dtype"])))
# (a real x's cotangent is real: the real part of a complex one, without NumPy's warning
# that a cast to a real dtype drops the imaginary part)
astype.defvjp(lambda g, x, ans, dtype: (astype(g if dtype_of(x).kind == "c" else
                                               S.real_part(g), dtype=dtype_of(x)),))

# ---- reductions ----------------------------------------------------------------------------
sum = _prim("sum", lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims),
            cost="add", linear=True)
sum.defvjp(lambda g, x, ans, axis, keepdims: (
    broadcast_to(_unreduce(g, x, axis, keepdims), shape=shape_of(x)),))


def _extremum_share(x, ans, axis, keepdims):
    """The derivative is shared equally among the elements that attain the extremum: each
    one's share, in x's dtype (Python floats 1.0 and 0.0 would make a float32 derivative
    float64)."""
    one = dtype_of(x).type(1)
    hit = S.select(S.eq(x, _unreduce(ans, x, axis, keepdims)), one, one - one)
    return hit / sum(hit, axis=axis, keepdims=True)


def _extremum_vjp(g, x, ans, axis, keepdims):
    return (_extremum_share(x, ans, axis, keepdims) * _unreduce(g, x, axis, keepdims),)


def _extremum_jvp(ts, x, ans, axis, keepdims):
    return sum(_extremum_share(x, ans, axis, keepdims) * ts[0], axis=axis, keepdims=keepdims)


amax = _prim("amax", lambda x, axis, keepdims: np.max(x, axis=axis, keepdims=keepdims),
             cost="cmp")
amin = _prim("amin", lambda x, axis, keepdims: np.min(x, axis=axis, keepdims=keepdims),
             cost="cmp")
for _p in (amax, amin):
    _p.defvjp(_extremum_vjp).defjvp(_extremum_jvp)

# prod: d prod / d x_i is the product of the other elements.  Not prod / x_i, which is nan
# at an exact zero: the products before x_i times the products after it (cumprod's, whose
# own derivatives are exact at zeros too, so every order is).  See _others.
prod = _prim("prod", lambda x, axis, keepdims: np.prod(x, axis=axis, keepdims=keepdims),
             cost="mul")
prod.defvjp(lambda g, x, ans, axis, keepdims: (
    _unreduce(g, x, axis, keepdims) * _others(x, axis),))
prod.defjvp(lambda ts, x, ans, axis, keepdims: sum(ts[0] * _others(x, axis), axis=axis,
                                                   keepdims=keepdims))


def _others(x, axis):
    """For each element of x, the product of the others it is reduced with over `axis`
    (a tuple, or None for all): the reduced axes joined last (`axes_last`), then the
    exclusive products from the left times those from the right."""
    nd = len(shape_of(x))
    axes = tuple(range(nd)) if axis is None else tuple(a % nd for a in axis)
    if math.prod(shape_of(x)[a] for a in axes) == 0:
        return x                                # (nothing to multiply: an empty cotangent)
    flat, back = axes_last(x, axes)
    last = nd - len(axes)
    before = cumprod(_after(flat, last, 1), axis=last)
    after = flip(cumprod(_after(flip(flat, axes=(last,)), last, 1), axis=last),
                 axes=(last,))
    return back(before * after)


def axes_last(x, axes):
    """x with `axes` (non-negative ints) moved last and joined into one axis, and the
    function that takes an array of that shape back to x's layout: for a computation
    along several axes written for one (prod's rules, SciPy's softmax over a tuple).

    Example:
        >>> flat, back = axes_last(np.arange(24.0).reshape(2, 3, 4), (0, 2))
        >>> flat.shape, back(flat).shape
        ((3, 8), (2, 3, 4))
    """
    nd = len(shape_of(x))
    order = [a for a in range(nd) if a not in axes] + list(axes)
    moved = x if order == list(range(nd)) else transpose(x, axes=tuple(order))
    kept = tuple(shape_of(moved)[:nd - len(axes)])
    flat = reshape(moved, shape=kept + (math.prod(shape_of(moved)[len(kept):]),))

    def back(y):
        y = reshape(y, shape=tuple(shape_of(moved)))
        return y if moved is x else transpose(y, axes=tuple(np.argsort(order).tolist()))
    return flat, back


# logsumexp is one primitive, not the eight or so of its stable definition below: every
# classifier's loss calls it, so its node count is paid on every training step.
# (np.maximum.reduce and np.add.reduce rather than x.max() and x.sum(): the methods go
# through Python wrappers that cost as much as the work on a classifier's logits)
def _finite_max(x, axis):
    """m, the maximum over `axis` (kept), 0 where it is not finite: the shift that keeps
    exp(x - m) from overflowing (an all -inf row gets no shift)."""
    # (initial -inf: an empty reduction is log(0) = -inf, as scipy's logsumexp gives)
    m = np.maximum.reduce(x, axis=axis, keepdims=True, initial=-np.inf)
    # One reduction tells whether every maximum is finite: their sum is (a sum of finite
    # values that overflows only sends us down the exact path below, which changes nothing).
    if not math.isfinite(np.add.reduce(m, axis=None)):
        m = np.where(np.isfinite(m), m, 0.0)
    return m


def _shifted_exp(x, m, axis):
    """(exp(x - m), its sum over `axis`, kept): with m from `_finite_max`, the pieces of
    logsumexp (m + log(sum)) and of softmax (exp / sum), without overflow."""
    e = np.subtract(x, m)
    if type(e) is np.ndarray:
        np.exp(e, out=e)
    else:                       # (a 0-d x gives a NumPy scalar, which out= cannot take)
        e = np.exp(e)
    return e, np.add.reduce(e, axis=axis, keepdims=True)


def _logsumexp_np(x, axis, keepdims):
    x = np.asarray(x)
    m = _finite_max(x, axis)
    _, sums = _shifted_exp(x, m, axis)
    with np.errstate(divide="ignore"):      # an all -inf or empty row: log(0) = -inf
        out = np.log(sums)
    out += m
    return out if keepdims else out.reshape(_reduced_shape(x.shape, axis))


def _reduced_shape(shape, axis):
    return () if axis is None else tuple(d for i, d in enumerate(shape) if i not in axis)


def _softmax_of(x, lse, axis, keepdims):
    """The softmax of x, the derivative of logsumexp: exp(x - m) / Σ exp(x - m) with m the
    maximum, not exp(x - lse), whose lse is rounded to its size (at x = [1e16, 1e16]
    that gave [1, 1] for [1/2, 1/2])."""
    if 0 in x.shape:        # (nothing to weigh, and amax of nothing has no value)
        return zeros_like(x)
    m = S.stop_gradient(amax(x, axis=axis, keepdims=True))
    e = S.exp(x - m)
    return e / sum(e, axis=axis, keepdims=True)


def _logsumexp_decomposition(x, axis, keepdims):
    m = S.stop_gradient(amax(x, axis=axis, keepdims=True))
    out = S.log(sum(S.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else reshape(out, shape=_reduced_shape(shape_of(x), axis))


logsumexp = _prim("logsumexp", _logsumexp_np, cost="call")
logsumexp.decomposition = _logsumexp_decomposition
logsumexp.defvjp(lambda g, x, ans, axis, keepdims: (
    _unreduce(g, x, axis, keepdims) * _softmax_of(x, ans, axis, keepdims),))
logsumexp.defjvp(lambda ts, x, ans, axis, keepdims: sum(
    ts[0] * _softmax_of(x, ans, axis, keepdims), axis=axis, keepdims=keepdims))


# logsumexp with scale factors b, as SciPy's logsumexp(a, b=b): log|sum(b * exp(a))| over
# `axis` of a and b broadcast together, and the sum's sign.  SciPy's conventions: a zero
# factor leaves its term out, whatever a holds there (an inf or a nan too), so b can mask
# elements; without the sign (signed=False) a negative sum gives nan, and a zero sum -inf,
# silently.  The derivatives are w = exp(a) / sum = sign · exp(a - log|sum|) for b, and
# b·w for a.
def _scaled_sum(a, b, axis):
    """(m, s): the shift m, the largest a where b is not 0 over `axis` (kept; 0 where that is
    not finite), and s = sum(b * exp(a - m)) over `axis` (kept)."""
    dtype = float_dtype(a, b)
    b = np.asarray(b, dtype)
    a = np.where(b != 0, np.asarray(a, dtype), -np.inf)
    m = _finite_max(a, axis)
    with np.errstate(over="ignore", invalid="ignore"):      # inf - inf: nan, as in SciPy
        s = np.add.reduce(b * np.exp(a - m), axis=axis, keepdims=True)
    return m, s


def _logsumexp_scaled_np(a, b, axis, keepdims, signed):
    m, s = _scaled_sum(a, b, axis)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(np.abs(s) if signed else s) + m
    return out if keepdims else out.reshape(_reduced_shape(out.shape, axis))


def _logsumexp_sign_np(a, b, axis, keepdims):
    _, s = _scaled_sum(a, b, axis)
    out = np.sign(s)
    return out if keepdims else out.reshape(_reduced_shape(out.shape, axis))


def _logsumexp_scaled_decomposition(a, b, axis, keepdims, signed):
    # the shift is a constant, made of constants (Taylor mode has no rules for comparisons)
    m = amax(S.select(S.ne(S.stop_gradient(b), 0.0), S.stop_gradient(a), -np.inf),
             axis=axis, keepdims=True)
    m = S.select(S.lt(S.abs(m), np.inf), m, 0.0)
    s = sum(b * S.exp(a - m), axis=axis, keepdims=True)
    out = S.log(S.abs(s) if signed else s) + m
    full = np.broadcast_shapes(shape_of(a), shape_of(b))
    return out if keepdims else reshape(out, shape=_reduced_shape(full, axis))


def _scaled_weights(a, b, ans, axis, keepdims, signed):
    """(w = exp(a) / sum, the shape of a and b broadcast together)."""
    full = np.broadcast_shapes(shape_of(a), shape_of(b))
    if not keepdims:
        ans = reshape(ans, shape=_kept_shape(full, axis))
    w = S.exp(a - ans)                          # (nan where an unsigned sum is negative)
    if signed:
        w = w * logsumexp_sign(a, b, axis=axis, keepdims=True)
    return w, full


def _for_a(w, b):
    """w where a's term counts; where b is 0 the term is left out, so a's derivative b·w is
    0 even where w is inf or nan (a is inf there, or exp(a) overflows)."""
    return S.select(S.eq(b, 0.0), S.select(S.lt(S.abs(w), np.inf), w, 0.0), w)


def _summed_to(x, full, shape):
    """x (broadcasting against the shape `full`) summed back to `shape`."""
    if shape_of(x) != full:
        x = broadcast_to(x, shape=full)
    return x if full == tuple(shape) else sum_to(x, shape=tuple(shape))


def _scaled_vjp_a(g, a, b, ans, axis, keepdims, signed):
    w, full = _scaled_weights(a, b, ans, axis, keepdims, signed)
    g = g if keepdims else reshape(g, shape=_kept_shape(full, axis))
    return _summed_to(g * b * _for_a(w, b), full, shape_of(a))


def _scaled_vjp_b(g, a, b, ans, axis, keepdims, signed):
    w, full = _scaled_weights(a, b, ans, axis, keepdims, signed)
    g = g if keepdims else reshape(g, shape=_kept_shape(full, axis))
    return _summed_to(g * w, full, shape_of(b))


def _scaled_jvp(ts, a, b, ans, axis, keepdims, signed):
    w, full = _scaled_weights(a, b, ans, axis, keepdims, signed)
    t = None if ts[0] is None else b * _for_a(w, b) * ts[0]
    if ts[1] is not None:
        t = w * ts[1] if t is None else t + w * ts[1]
    return sum(_summed_to(t, full, full), axis=axis, keepdims=keepdims)


logsumexp_scaled = _prim("logsumexp_scaled", _logsumexp_scaled_np, cost="call")
logsumexp_scaled.decomposition = _logsumexp_scaled_decomposition
logsumexp_scaled.defvjp(_scaled_vjp_a, _scaled_vjp_b)
logsumexp_scaled.defjvp(_scaled_jvp)
# the sum's sign: -1, 0 or 1 (nan for a nan sum), without derivative
logsumexp_sign = _prim("logsumexp_sign", _logsumexp_sign_np, cost="cmp")
logsumexp_sign.defpartials(None, None)

# argmax, argmin: integers, no derivative (recorded like a comparison, so they trace
# without values too)
argmax = _prim("argmax", lambda x, axis, keepdims: np.argmax(x, axis=axis, keepdims=keepdims),
               cost="cmp")
argmin = _prim("argmin", lambda x, axis, keepdims: np.argmin(x, axis=axis, keepdims=keepdims),
               cost="cmp")
argmax.defpartials(None)
argmin.defpartials(None)

cumsum = _prim("cumsum", lambda x, axis: np.cumsum(x, axis=axis), cost="add", linear=True)
cumsum.defvjp(lambda g, x, ans, axis: (flip(cumsum(flip(g, axes=(axis,)), axis=axis),
                                            axes=(axis,)),))


def _slice_along(x, axis, start, stop):
    return getitem(x, index=(("slice", None, None, None),) * axis + (("slice", start, stop, None),))


def _after(x, axis, first):
    """x moved one place along `axis`, `first` in front: the i-th element is x_{i-1}."""
    shape = list(shape_of(x))
    shape[axis] = 1
    return concatenate(np.full(shape, first, dtype_of(x)), _slice_along(x, axis, None, -1),
                       axis=axis)


def _linear_scan(a, b, axis):
    """h with h_i = a_i h_{i-1} + b_i along `axis` (h_{-1} = 0), by recursive doubling:
    log2(n) steps of whole-array products and sums, and no division, so a zero in `a` stays
    an exact zero (cumprod's derivatives, where dividing by x would give nan)."""
    n, d = shape_of(b)[axis], 1
    while d < n:
        head = _slice_along(b, axis, None, d)
        b = concatenate(head, _slice_along(b, axis, d, None) + _slice_along(a, axis, d, None)
                        * _slice_along(b, axis, None, -d), axis=axis)
        if 2 * d < n:
            a = concatenate(_slice_along(a, axis, None, d), _slice_along(a, axis, d, None)
                            * _slice_along(a, axis, None, -d), axis=axis)
        d *= 2
    return b


cumprod = _prim("cumprod", lambda x, axis: np.cumprod(x, axis=axis), cost="mul")
# y_i = x_i y_{i-1}: the tangent follows the same recurrence, dy_i = x_i dy_{i-1} + y_{i-1} dx_i,
# and the cotangent its transpose, r_j = g_j + x_{j+1} r_{j+1}, with x̄_j = y_{j-1} r_j
cumprod.defjvp(lambda ts, x, ans, axis: _linear_scan(x, ts[0] * _after(ans, axis, 1),
                                                     axis))
cumprod.defvjp(lambda g, x, ans, axis: (_after(ans, axis, 1) * flip(_linear_scan(
    _after(flip(x, axes=(axis,)), axis, 0), flip(g, axes=(axis,)), axis), axes=(axis,)),))

# ---- indexing --------------------------------------------------------------------------------
# An index is kept in a hashable form where it can be (slices become ("slice", a, b, c)), so
# that x[0] written twice is one node; an index holding arrays is not interned.


def encode_index(index):
    if not isinstance(index, tuple):
        index = (index,)
    out = []
    for i in index:
        if isinstance(i, slice):
            out.append(("slice", i.start, i.stop, i.step))
        elif isinstance(i, (list, np.ndarray)):
            a = np.array(i)             # (a copy: the caller may change its array later)
            if type(i) is list and a.size == 0:
                a = a.astype(np.intp)   # NumPy reads an empty list as no integers
            out.append(a)
        else:
            out.append(i)
    return tuple(out)


def decode_index(index):
    return tuple(slice(*i[1:]) if type(i) is tuple and i and i[0] == "slice" else i
                 for i in index)


def _index_add(g, index, shape):
    repeats = may_repeat(index)
    index = decode_index(index)
    if repeats:
        # an integer array may repeat an element: added up by bincount where the index is
        # rows (x[i] of a table, x[i, j] of a grid), else by np.add.at
        out = _add_rows(g, index, shape)
        if out is not None:
            return out
    out = np.zeros(shape, dtype=float_dtype(g))
    if repeats:
        np.add.at(out, index, g)
    else:
        out[index] += g                 # basic indexing and masks never do: far faster
    return out


def _add_rows(g, index, shape):
    """zeros(shape) with g added at ``index``, by `np.bincount`, or None where the index
    is not of the form it takes: integer arrays for the leading axes, whole slices after.
    np.add.at handles one element per index entry quickly, but a row (an embedding's
    vector, x[i] of an (n, k) table) or a multi-index one element at a time, 2 to 5
    times slower than counting the flat positions of every element added."""
    if type(g) is not np.ndarray or g.dtype.kind != "f":
        return None
    k = 0
    while k < len(index) and type(index[k]) is np.ndarray and index[k].dtype.kind in "iu":
        k += 1
    if k == 0 or k > len(shape) or any(type(i) is not slice or i != slice(None)
                                       for i in index[k:]):
        return None
    inner = math.prod(shape[k:])
    if k == 1 and inner == 1:
        return None                     # one element per entry: np.add.at is as fast
    picks = np.broadcast_arrays(*index[:k])
    if g.shape != picks[0].shape + tuple(shape[k:]):
        return None
    for axis, (i, n) in enumerate(zip(index[:k], shape)):
        if i.size and not -n <= i.min() <= i.max() < n:     # (np.add.at's error)
            bad = i[(i < -n) | (i >= n)].flat[0]
            raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
    # 'wrap' counts a negative entry from the end, as indexing does (in range, checked above)
    rows = np.ravel_multi_index(picks, tuple(shape[:k]), mode="wrap")
    flat = rows.ravel() if inner == 1 else (rows[..., None] * inner + np.arange(inner)).ravel()
    out = np.bincount(flat, g.ravel(), minlength=math.prod(shape))
    return out.reshape(shape).astype(g.dtype, copy=False)


getitem = _prim("getitem", lambda x, index: np.asarray(x)[decode_index(index)], cost=None,
                linear=True)
index_add = _prim("index_add", _index_add, cost="add", linear=True,
                  doc="index_add(g, index=i, shape=s): zeros of shape s with g added at i.")
getitem.defvjp(lambda g, x, ans, index: (index_add(g, index=index, shape=shape_of(x)),))
index_add.defvjp(lambda g, x, ans, index, shape: (getitem(g, index=index),))


def _index_set(x, v, index):
    out = np.array(x)                   # (a copy, in x's dtype, as NumPy's assignment casts)
    out[decode_index(index)] = v
    return out


_FULL = ("slice", None, None, None)     # ``:``, encoded


def index_shape(shape, index):
    """The shape of ``x[index]`` for an x of `shape` (`index` encoded), without an array
    of that size."""
    rows = index[0] if index else None
    if type(rows) is np.ndarray and rows.dtype.kind in "iu" and shape and \
            all(type(i) is tuple and i == _FULL for i in index[1:]) and len(index) <= len(shape):
        # x[rows] of a table (a gather's, an embedding's): without indexing a stand-in,
        # which costs as much as the gather; out of bounds, the stand-in says so, as NumPy
        n = shape[0]
        if not rows.size or -n <= rows.min() and rows.max() < n:
            return rows.shape + tuple(shape[1:])
    stand_in = np.broadcast_to(np.zeros((), dtype=np.int8), shape)
    return stand_in[decode_index(index)].shape


def split_traced(index, ndim, traced):
    """``(basic, picks)`` for an index of an array of `ndim` dimensions: `index` with each
    entry for which ``traced(entry)`` holds made a full slice, and ``[(axis, entry)]`` for
    those, the axis of ``x[basic]`` each indexes (None adds an axis, a slice keeps one,
    an integer takes one away, ... stands for the rest).  How ``x[i]`` and ``x.at[i]`` take
    integers traced without values: the basic part indexes, the traced ones select along
    their axes.

    Example:
        >>> split_traced((1, "i", None, Ellipsis), 4, lambda e: e == "i")
        ((1, slice(None, None, None), None, Ellipsis), [(0, 'i')])
    """
    consumed = len([i for i in index if i is not None and i is not Ellipsis])  # (sum is ours)
    basic, picks, axis = [], [], 0
    for i in index:
        if i is Ellipsis:
            axis += ndim - consumed
        elif traced(i):
            picks.append((axis, i))
            i = slice(None)
        if i is None or isinstance(i, slice):
            axis += 1
        basic.append(i)
    return tuple(basic), picks


def may_repeat(index) -> bool:
    """Whether an (encoded) index can name an element more than once: only an integer
    array can (basic indexing and boolean masks name each element at most once)."""
    return any(isinstance(i, np.ndarray) and i.dtype != bool for i in index)


def _written(index, shape):
    """Which elements of ``x[index]`` an assignment ``x[index] = v`` leaves in place, as a
    float mask of x[index]'s shape, or None for all of them: an index array that repeats an
    element writes it several times and only one write stays (NumPy's choice, found by
    making the same assignment)."""
    if not may_repeat(index):
        return None
    target = index_shape(shape, index)
    index = decode_index(index)
    order = np.arange(math.prod(target)).reshape(target)
    slot = np.full(shape, -1, dtype=np.int64)
    slot[index] = order
    kept = slot[index] == order
    return None if kept.all() else kept.astype(np.float64)


def _index_set_vjp(g, x, v, ans, index):
    gv = getitem(g, index=index)
    kept = _written(index, shape_of(x))
    if kept is not None:
        gv = gv * kept
    return index_set(g, 0.0, index=index), sum_to(gv, shape=shape_of(v))


# x with x[index] replaced by v (broadcast): JAX's x.at[index].set(v), NumPy's x[index] = v
# on a copy.  Linear in x and v jointly, so its JVP is itself applied to the tangents.
index_set = _prim("index_set", _index_set, cost=None, linear=True,
                  doc="index_set(x, v, index=i): a copy of x with x[i] = v.")
index_set.defvjp(_index_set_vjp)


def _take_along(x, idx, axis):
    if np.ndim(x) == 1:             # (indexing: NumPy's take_along_axis costs ~10 us more)
        return np.asarray(x)[idx]
    return np.take_along_axis(x, idx, axis=axis)


def _put_along_add(g, idx, axis, shape):
    """Zeros of `shape` with g added at idx along `axis`: a permutation (sort's,
    partition's) puts each element once, an index repeated in a lane (numpy.take_along_axis's,
    interp's) adds.  For real floats, one bincount of the flat positions does both in one
    pass (a put, then a check for repeats, then np.add.at took six times as long)."""
    g, idx = np.asarray(g), np.asarray(idx)
    if g.dtype.kind != "f":
        out = np.zeros(shape, dtype=float_dtype(g))
        g = np.broadcast_to(g, np.broadcast_shapes(g.shape, idx.shape))
        grid = list(np.indices(g.shape, sparse=True))
        grid[axis] = np.broadcast_to(idx, g.shape)
        np.add.at(out, tuple(grid), g)
        return out
    n = shape[axis]
    if idx.size and (idx.min() < -n or idx.max() >= n):
        # (as take_along_axis would raise: a flat position would land in another lane)
        _checked_index(idx, n)
    if idx.size and idx.min() < 0:          # (from the end, as take_along_axis reads it)
        idx = np.where(idx < 0, idx + n, idx)
    # the flat position of each element: idx along the axis, the place in the others
    stride = math.prod(shape[axis + 1:])
    flat = idx * stride if stride != 1 else idx
    for d, size in enumerate(shape):
        if d != axis and size != 1:
            place = np.arange(size) * math.prod(shape[d + 1:])
            flat = flat + place.reshape((size,) + (1,) * (len(shape) - d - 1))
    if g.shape != flat.shape:
        # (only then: bincount copies a read-only broadcast view, slowly)
        full = np.broadcast_shapes(g.shape, flat.shape)
        g, flat = np.broadcast_to(g, full), np.broadcast_to(flat, full)
    out = np.bincount(flat.ravel(), g.ravel(), minlength=math.prod(shape))
    return out.reshape(shape).astype(g.dtype, copy=False)


argsort = _prim("argsort", lambda x, axis: np.argsort(x, axis=axis, kind="stable"),
                cost="cmp")
argsort.defpartials(None)
# (the positions NumPy's partition puts each element at: its algorithm, so the same order)
argpartition = _prim("argpartition",
                     lambda x, kth, axis: np.argpartition(x, kth, axis=axis), cost="cmp")
argpartition.defpartials(None)


def _lookup_order(v, n):
    """An order that sorts the values `v` (flattened) where looking them up among `n`
    sorted points is faster in that order, else None.  NumPy's binary search (searchsorted,
    interp) mispredicts a branch at about every other step on values in random order, and
    on sorted values it does not: 10,000 random values among 1000 points take ~700 us,
    sorted ~60 us, and the argsort ~200 us.  Measured to pay from about 128 points and
    4096 values; above ~10^5 values the argsort costs what it saves."""
    v = np.asarray(v)
    if not 128 <= n or not 4096 <= v.size <= 1 << 17 or v.dtype.kind != "f":
        return None
    flat = v.ravel()
    last, order = _LAST_ORDER
    if last is not None and last() is v and order.size == flat.size:
        # (the same array again: interp's value, then its gradient's search.  Any order
        # that sorts v serves, so checking it does costs a gather, not a second argsort)
        ordered = flat[order]
        if (ordered[1:] >= ordered[:-1]).all():
            return order
    if (flat[1:] >= flat[:-1]).all():       # (in order already)
        return None
    order = np.argsort(flat)
    _LAST_ORDER[:] = weakref.ref(v), order
    return order


_LAST_ORDER = [None, None]      # (a weak reference to the last values sorted, their order)


def _in_order(f, v, order):
    """f(v) for an elementwise lookup f, computed on v in `order` (None: as it is)."""
    if order is None:
        return f(v)
    flat = np.ravel(v)
    found = f(flat[order])
    out = np.empty(flat.shape, found.dtype)
    out[order] = found
    return out.reshape(np.shape(v))


def _rows_order(v, k, n):
    """For values `v` with k batch axes in front: the lookup order of one row if every row
    is the same array (a broadcast view, as vmap makes of a value shared by the batch),
    computed once for all; else a function of each row's own."""
    if np.ndim(v) >= k and all(st == 0 for st in np.asarray(v).strides[:k]):
        order = _lookup_order(np.asarray(v)[(0,) * k], n)
        return lambda row: order
    return lambda row: _lookup_order(row, n)


def _search(a, v, side, order=False):
    """np.searchsorted(a, v, side) for a 1-D `a`, many values looked up in order (`order`,
    or found here)."""
    if order is False:
        order = _lookup_order(v, np.size(a))
    if order is None:
        return np.searchsorted(a, v, side=side)
    # Values in order: a_k counts for each from the first that reaches it (side right: a_k
    # <= v; left: a_k < v), so the answers are a running count of those first places,
    # found by searching a among the values (n searches, not m; NaN sorts last in both)
    flat = np.ravel(v)
    starts = np.searchsorted(flat[order], a, side="left" if side == "right" else "right")
    out = np.empty(flat.shape, np.intp)
    out[order] = np.cumsum(np.bincount(starts, minlength=flat.size + 1)[:-1])
    return out.reshape(np.shape(v))


def _searchsorted(a, v, side):
    """np.searchsorted of `v` in the sorted 1-D `a`, or, for an `a` of more axes (a batch
    of sorted arrays, under vmap, nested or not), of each ``v[b]`` in its row ``a[b]``, b
    running over a's leading axes (v's may be 1: the same values for every row)."""
    if np.ndim(a) == 1:
        return _search(a, v, side)
    a = np.asarray(a)
    # (values shared by every row come with batch axes of size 1: as a broadcast view,
    # `_rows_order` sorts them once)
    v = np.broadcast_to(v, a.shape[:-1] + np.shape(v)[a.ndim - 1:])
    if a.ndim > 2:          # (vmap of vmap: the batch axes as one)
        batch = a.shape[:-1]
        rows = math.prod(batch)
        found = _searchsorted(a.reshape(rows, a.shape[-1]),
                              v.reshape((rows,) + v.shape[len(batch):]), side)
        return found.reshape(v.shape)
    rows, n = a.shape
    if not rows:
        return np.zeros(v.shape, np.intp)
    if v.size >= 32 * rows or a.dtype.kind != "f" or v.dtype.kind not in "fiub" \
            or np.isnan(a).any() or np.isnan(v).any():
        # One search per row where each has many values (the calls cost little beside
        # them, and a real search is twice as fast as the complex one below), or where the
        # keys below would not hold (NaN sorts last in a row but not within a complex
        # key, integers past 2**53 are not exact)
        order = _rows_order(v, 1, n)
        return np.stack([_search(a[b], v[b], side, order(v[b])) for b in range(rows)])
    # Many rows of few values: one search for all, the key row + i·value ordering the rows
    # one after the other, each by its values (complex numbers order by real part, then
    # imaginary), so row b's values fall among row b's numbers only.  float64 holds both
    # parts exactly.  (Four times faster than a loop for 10^4 rows of 10.)
    at = np.arange(rows, dtype=np.float64).reshape((rows,) + (1,) * (v.ndim - 1))
    found = np.searchsorted((at.reshape(rows, 1) + 1j * a).ravel(), at + 1j * v, side=side)
    return found - (at * n).astype(np.intp)


# positions in a sorted 1-D array: integers without derivative, recorded (as a comparison
# is), so they trace without values; NumPy's binary search, not n·m comparisons
def _searchsorted_aval(args, params):
    # (from the shapes: running the search on the arguments' values, where they have
    # them, would search them all to learn a shape)
    a, v = args
    k = len(a.shape) - 1
    return np.broadcast_shapes(v.shape[:k], a.shape[:-1]) + v.shape[k:], np.dtype(np.intp)


searchsorted = _prim("searchsorted", _searchsorted, cost="cmp", complex=True,
                     abstract_eval=_searchsorted_aval)
searchsorted.defpartials(None, None)
take_along_axis = _prim("take_along_axis", _take_along, cost=None)
put_along_axis = _prim("put_along_axis", _put_along_add, cost=None)
take_along_axis.defjvp(lambda ts, x, idx, ans, axis: take_along_axis(ts[0], idx, axis=axis))
take_along_axis.defvjp(lambda g, x, idx, ans, axis: (
    put_along_axis(g, idx, axis=axis, shape=shape_of(x)), None))
put_along_axis.defjvp(lambda ts, g, idx, ans, axis, shape: put_along_axis(
    ts[0], idx, axis=axis, shape=shape))
put_along_axis.defvjp(lambda gg, g, idx, ans, axis, shape: (
    take_along_axis(gg, idx, axis=axis), None))


def _checked_index(i, size):
    """i counted from its axis's start, or IndexError (take_along_axis's, put_along_axis's and
    `wengert.primitives.elements.checked_index`'s check)."""
    i = np.asarray(i)
    bad = (i < -size) | (i >= size)
    if bad.any():
        # (NumPy's words, but for an axis it cannot name: the gather's may be a transposed
        # view of the user's)
        raise IndexError(f"index {i[bad].flat[0]} is out of bounds for an axis of size "
                         f"{size}")
    out = np.where(i < 0, i + size, i)
    return out if out.ndim else out[()]


# ---- piecewise-linear interpolation ------------------------------------------------------------
# numpy.interp is one primitive: its value is NumPy's own, and its rules are linear maps
# read off the interval [xp_j, xp_j+1] of each x, found by one binary search per rule.
# Inside [xp_0, xp_-1], y = fp_j + w (fp_j+1 - fp_j) with w = (x - xp_j) / (xp_j+1 - xp_j),
# so with s the interval's slope
#     dy = s dx + lerp(dfp) - s lerp(dxp),    lerp(t) = (1 - w) t_j + w t_j+1,
# and below xp_0 (above xp_-1) dy = dleft (dright); nan x has none.  At a sample point x
# is in the interval on its right (at xp_-1 the last one, on its left), as JAX's; where
# xp_-2 = xp_-1 the last interval is a point, and x = xp_-1 gets fp_-1 (w = 1, s = 0).
# Written with primitives, the rules are graphs when traced: differentiable again.
#
# Under vmap over the sample points, xp and fp have leading axes, a batch of sets: x then
# has the same leading axes (x[b] is looked up in xp[b] and fp[b]; or axes of size 1, the
# same queries for every set), and left and right are of that batch's shape (or shared).
def _interp_np(x, xp, fp, left, right):
    """numpy.interp(x, xp, fp, left, right); for xp and fp of more axes, of each row."""
    if np.ndim(xp) == 1:
        # (each value is NumPy's, computed from its x alone, in whatever order)
        return _in_order(lambda u: np.interp(u, xp, fp, left, right), x,
                         _lookup_order(x, np.size(xp)))
    xp, fp = np.broadcast_arrays(xp, fp)
    batch, n = xp.shape[:-1], xp.shape[-1]
    x = np.broadcast_to(x, batch + np.shape(x)[len(batch):])
    left, right = np.broadcast_to(left, batch), np.broadcast_to(right, batch)
    order = _rows_order(x, len(batch), n)
    out = np.empty(x.shape)
    for b in np.ndindex(batch):     # (NumPy's interp takes one set of sample points)
        row = x[b]
        out[b] = _in_order(lambda u: np.interp(u, xp[b], fp[b], left[b], right[b]), row,
                           order(row))
    return out


def _rows(xp):
    """The number of batch axes in front of the sample points."""
    return ndim_of(xp) - 1


def _per_query(v, xp, x):
    """A value per set of sample points (a number, or one per row), shaped to broadcast
    against x."""
    k = _rows(xp)
    if not shape_of(v):
        return v
    return reshape(v, shape=tuple(shape_of(xp)[:k]) + (1,) * (ndim_of(x) - k))


def _at(table, j):
    """table_j, gathered along the last axis of `table` (a row per batch entry)."""
    k = ndim_of(table) - 1
    shape = tuple(shape_of(j))
    if len(shape) == k + 1:
        return take_along_axis(table, j, axis=k)
    flat = reshape(j, shape=shape[:k] + (-1,))
    return reshape(take_along_axis(table, flat, axis=k), shape=shape)


class _Interval:
    """Where each x falls among the sample points, the one search interp's rules share:
    j, the interval [xp_j, xp_j+1] (0 to n-2), and the mask inside (xp_0 <= x <= xp_-1,
    so not nan); and, asked for, the masks below and above, w, x's place in its interval
    (0 at xp_j, 1 at xp_j+1), and s, the interval's slope."""

    def __init__(self, x, xp):
        self.x, self.xp = x, xp
        n = shape_of(xp)[-1]
        self.first = _per_query(getitem(xp, index=(Ellipsis, 0)), xp, x)
        self.last = _per_query(getitem(xp, index=(Ellipsis, n - 1)), xp, x)
        self.inside = S.minimum(S.ge(x, self.first), S.le(x, self.last))
        # (side right: at a sample point, the interval on its right; clipped, the last
        # point's is the last interval, and outside and nan ones get one, masked)
        self.j = S.minimum(S.maximum(searchsorted(xp, x, side="right") - 1, 0), n - 2)
        self.width = getitem(xp, index=(Ellipsis, ("slice", 1, None, None))) - \
            getitem(xp, index=(Ellipsis, ("slice", None, -1, None)))

    def below(self):
        return S.lt(self.x, self.first)

    def above(self):
        return S.gt(self.x, self.last)

    def place(self):
        """w = (x - xp_j) / (xp_j+1 - xp_j), x held inside (the others are masked; an
        inf or nan there would make nan of the masked products' derivatives)."""
        xj = _at(self.xp, self.j)
        width = _at(self.width, self.j)
        point = S.eq(width, 0.0)
        x = S.select(self.inside, self.x, xj)
        return S.select(point, 1.0, (x - xj) / S.select(point, 1.0, width))

    def slope(self, fp):
        """s = (fp_j+1 - fp_j) / (xp_j+1 - xp_j), 0 where the interval is a point."""
        rise = getitem(fp, index=(Ellipsis, ("slice", 1, None, None))) - \
            getitem(fp, index=(Ellipsis, ("slice", None, -1, None)))
        point = S.eq(self.width, 0.0)
        return _at(S.select(point, 0.0, rise / S.select(point, 1.0, self.width)), self.j)


def _lerp(t, j, w):
    """(1 - w) t_j + w t_j+1: the tangent of the two neighbours' values."""
    tj = _at(t, j)
    return tj + w * (_at(t, j + 1) - tj)


def _lerp_transpose(c, j, w, shape):
    """`_lerp`'s transpose: c (1 - w) added at j, c w at j + 1 (one bincount)."""
    k = len(shape) - 1
    flat = lambda v: v if ndim_of(v) == k + 1 else reshape(v, shape=tuple(shape[:k]) + (-1,))
    cw = c * w
    return put_along_axis(concatenate(flat(c - cw), flat(cw), axis=k),
                          concatenate(flat(j), flat(j + 1), axis=k), axis=k, shape=shape)


def _end_cotangent(c, end, xp):
    """The cotangent of `left` or `right`: c summed over each set's queries (all of them
    for an end that every set shares)."""
    k = _rows(xp)
    if not shape_of(end):
        return sum(c, axis=None, keepdims=False)
    axes = tuple(range(k, ndim_of(c)))
    return sum(c, axis=axes, keepdims=False) if axes else c


def _interp_jvp(ts, x, xp, fp, left, right, ans):
    tx, txp, tfp, tleft, tright = ts
    at = _Interval(x, xp)
    inner = []
    if tx is not None or txp is not None:
        s = at.slope(fp)
    if tfp is not None or txp is not None:
        w = at.place()
    if tx is not None:
        inner.append(s * tx)
    if tfp is not None:
        inner.append(_lerp(tfp, at.j, w))
    if txp is not None:
        inner.append(-s * _lerp(txp, at.j, w))
    out = sum_nonzero(inner)
    out = 0.0 if out is None else S.select(at.inside, out, 0.0)
    if tleft is not None:
        out = S.select(at.below(), _per_query(tleft, xp, x), out)
    if tright is not None:
        out = S.select(at.above(), _per_query(tright, xp, x), out)
    return broadcast_to(out, shape=shape_of(ans)) if shape_of(out) != shape_of(ans) else out


def _interp_vjp(g, x, xp, fp, left, right, ans, active):
    at = _Interval(x, xp)
    inner = S.select(at.inside, g, 0.0)
    xbar = xpbar = fpbar = lbar = rbar = None
    if active[0] or active[1]:
        # (masked after the product: the slope of the interval a nan or outside x is
        # clipped to may be nan, where fp holds an inf or nan that x never reaches)
        gs = S.select(at.inside, g * at.slope(fp), 0.0)
        if active[0]:       # (summed over the sets where they share x)
            xbar = gs if shape_of(gs) == shape_of(x) else sum_to(gs, shape=shape_of(x))
    if active[1] or active[2]:
        w = at.place()
        if active[1]:
            xpbar = _lerp_transpose(-gs, at.j, w, shape_of(xp))
        if active[2]:
            fpbar = _lerp_transpose(inner, at.j, w, shape_of(fp))
    if active[3]:
        lbar = _end_cotangent(S.select(at.below(), g, 0.0), left, xp)
    if active[4]:
        rbar = _end_cotangent(S.select(at.above(), g, 0.0), right, xp)
    return xbar, xpbar, fpbar, lbar, rbar


def _interp_aval(args, params):
    x, xp = args[0], args[1]
    k = len(xp.shape) - 1
    return np.broadcast_shapes(x.shape[:k], xp.shape[:-1]) + x.shape[k:], np.dtype(np.float64)


interp = _prim("interp", _interp_np, cost="call", abstract_eval=_interp_aval,
               doc="interp(x, xp, fp, left, right): numpy.interp, for float64 x, "
                   "increasing 1-D xp and fp (or rows of them, under vmap) and scalar ends.")
interp.defjvp(_interp_jvp)
interp.defvjp(_interp_vjp)
interp.asks_active = True

# ---- joining and moving ------------------------------------------------------------------------


concatenate = _prim("concatenate", lambda *xs, axis: np.concatenate(xs, axis=axis), cost=None,
                    linear=True)


@concatenate.defvjp
def _(g, *xs_and_ans, axis):
    xs = xs_and_ans[:-1]
    pieces, start = [], 0
    for x in xs:
        n = shape_of(x)[axis]
        index = (("slice", None, None, None),) * axis + (("slice", start, start + n, None),)
        pieces.append(getitem(g, index=index))
        start += n
    return tuple(pieces)


flip = _prim("flip", lambda x, axes: np.flip(x, axis=axes), cost=None, linear=True)
flip.defvjp(lambda g, x, ans, axes: (flip(g, axes=axes),))

roll = _prim("roll", lambda x, shift, axis: np.roll(x, shift, axis=axis), cost=None,
             linear=True)
roll.defvjp(lambda g, x, ans, shift, axis: (roll(g, shift=tuple(-s for s in shift), axis=axis),))


def _pad_np(x, pad_width):
    return np.pad(x, pad_width)


pad = _prim("pad", _pad_np, cost=None, linear=True)
pad.defvjp(lambda g, x, ans, pad_width: (getitem(g, index=tuple(
    ("slice", lo, lo + n, None) for (lo, hi), n in zip(pad_width, shape_of(x)))),))

tril = _prim("tril", lambda x, k: np.tril(x, k), cost=None, linear=True)
tril.defvjp(lambda g, x, ans, k: (tril(g, k=k),))

# ---- contractions ------------------------------------------------------------------------------


def _promoted(g, a, b):
    """matmul's operands and cotangent with vectors promoted to matrices (a (k,) -> (1,k),
    b (k,) -> (k,1)), so the matrix rules below apply."""
    a_shape, b_shape = shape_of(a), shape_of(b)
    if len(a_shape) == 1:
        a = reshape(a, shape=(1,) + a_shape)
        g = reshape(g, shape=shape_of(g)[:-1] + (1,) + shape_of(g)[-1:])
    if len(b_shape) == 1:
        b = reshape(b, shape=b_shape + (1,))
        g = reshape(g, shape=shape_of(g) + (1,))
    return g, a, b


# (An eager sweep hands these rules arrays: then the product is NumPy's, with the transpose
# a view, since for a small layer dispatching through primitives costs as much as the
# product.  Traced values build the same product as nodes.)
def _matmul_vjp_a(g, a, b, ans):
    """Seed 000: Z = XY gives X̄ = Z̄Yᵀ (batch dimensions that were broadcast are summed
    back)."""
    na, nb = a.ndim, b.ndim                 # (arrays or nodes: matmul has no scalars)
    if na == 2 and nb == 2:
        if type(g) is np.ndarray and type(b) is np.ndarray:
            return np.matmul(g, b.T)
        return matmul(g, transpose(b, axes=(1, 0)))
    if na == 1 and nb == 1:
        return g * b
    g2, a2, b2 = _promoted(g, a, b)
    return reshape(sum_to(matmul(g2, swapaxes(b2)), shape=shape_of(a2)), shape=shape_of(a))


def _matmul_vjp_b(g, a, b, ans):
    """Seed 000: Z = XY gives Ȳ = XᵀZ̄."""
    na, nb = a.ndim, b.ndim
    if na == 2 and nb == 2:
        if type(g) is np.ndarray and type(a) is np.ndarray:
            return np.matmul(a.T, g)
        return matmul(transpose(a, axes=(1, 0)), g)
    if na == 1 and nb == 1:
        return g * a
    g2, a2, b2 = _promoted(g, a, b)
    return reshape(sum_to(matmul(swapaxes(a2), g2), shape=shape_of(b2)), shape=shape_of(b))


def swapaxes(x, a=-1, b=-2):
    axes = list(range(ndim_of(x)))
    axes[a], axes[b] = axes[b], axes[a]
    return transpose(x, axes=tuple(axes))


matmul = _prim("matmul", np.matmul, cost="mul", dtype_rule="promote")
matmul.defvjp(_matmul_vjp_a, _matmul_vjp_b)
matmul.defjvp(lambda ts, a, b, ans: sum_nonzero(
    [None if ts[0] is None else matmul(ts[0], b), None if ts[1] is None else matmul(a, ts[1])]))


def sum_nonzero(terms):
    """The sum of the terms that are not None (a JVP's terms: None for an argument with no
    tangent), or None if all are."""
    out = None
    for t in terms:
        if t is not None:
            out = t if out is None else out + t
    return out


def _einsum_np(*ops, subscripts):
    return np.einsum(subscripts, *ops, optimize=len(ops) > 2 or _worth_blas(ops, subscripts))


def _worth_blas(ops, subscripts):
    """Whether a two-operand einsum has work enough (the product of its indices' sizes)
    that NumPy's optimize=True, which hands it to BLAS as a tensordot, pays its ~16 us of
    planning: a 256x256 matmul takes 3.9 ms plain and 0.7 ms so, a 3x3 2.5 us and 19 us,
    a 128x256 matrix-vector product 15 us and 25 us (the break-even is near 10^5)."""
    sizes = {}
    for letters, x in zip(subscripts.split("->")[0].split(","), ops):
        for c, n in zip(letters, np.shape(x)):
            sizes[c] = max(n, sizes.get(c, 1))
    return math.prod(sizes.values()) >= 1 << 17


einsum = _prim("einsum", _einsum_np, cost="mul")


def _einsum_parts(subscripts):
    ins, out = subscripts.split("->")
    return ins.split(","), out


@einsum.defvjp
def _(g, *ops_and_ans, subscripts):
    ops = ops_and_ans[:-1]
    ins, out = _einsum_parts(subscripts)
    grads = []
    for i, (x, s) in enumerate(zip(ops, ins)):
        others = [(o, t) for j, (o, t) in enumerate(zip(ops, ins)) if j != i]
        present = set(out).union(*[set(t) for _, t in others])
        once = "".join(dict.fromkeys(s))        # s with each index once ("jj" -> "j")
        kept = "".join(c for c in once if c in present)
        spec = ",".join([out] + [t for _, t in others]) + "->" + kept
        gi = einsum(g, *[o for o, _ in others], subscripts=spec)
        sizes = dict(zip(s, shape_of(x)))
        # an index of length 1 here that broadcast against a longer one elsewhere (as
        # "..." does) is summed back to length 1; one of length 1 elsewhere, which
        # broadcast against this one, is broadcast back to this one's length
        gi = _broadcast_back(gi, tuple(sizes[c] for c in kept))
        if kept != once:   # indices only this operand had were summed: broadcast them back
            gi = reshape(gi, shape=tuple(sizes[c] if c in present else 1 for c in once))
            gi = broadcast_to(gi, shape=tuple(sizes[c] for c in once))
        if once != s:
            gi = _on_diagonals(gi, once, s, sizes, subscripts)
        grads.append(gi)
    return tuple(grads)


def _broadcast_back(g, shape):
    """Cotangent `g`, of the shape an operand of `shape` broadcast to in an einsum, made
    that operand's: summed over the axes where it has length 1, broadcast along those
    where g has."""
    have = shape_of(g)
    if have == shape:
        return g
    summed = tuple(1 if n == 1 else m for m, n in zip(have, shape))
    if summed != have:
        g = sum_to(g, shape=summed)
    return g if summed == shape else broadcast_to(g, shape=shape)


def _on_diagonals(g, once, s, sizes, subscripts):
    """A cotangent `g` (indices `once`) of an operand whose subscripts `s` repeat an index
    ("jj"): g on the diagonals where the repeated indices agree, zero elsewhere.  An einsum
    with identity matrices, each tying a fresh index to the repeated one."""
    spare = iter(c for c in string.ascii_letters if c not in subscripts)
    seen, target, eyes, specs = set(), "", [], []
    for c in s:
        if c in seen:
            fresh = next(spare)
            eyes.append(np.eye(sizes[c], dtype=float_dtype(g)))
            specs.append(c + fresh)
            target += fresh
        else:
            seen.add(c)
            target += c
    return einsum(g, *eyes, subscripts=",".join([once] + specs) + "->" + target)


@einsum.defjvp
def _(ts, *ops_and_ans, subscripts):
    ops = ops_and_ans[:-1]
    return sum_nonzero([
        None if t is None else einsum(*(ops[:i] + (t,) + ops[i + 1:]), subscripts=subscripts)
        for i, t in enumerate(ts)])


# Whose rules hold for complex values as written (linear maps and products: JAX's and
# autograd's convention transposes without conjugating, docs/complex.md).  The orderings
# (amax, argsort, ...) and logsumexp refuse complex values.
for _p in (reshape, transpose, astype, sum, prod, cumsum, cumprod, getitem, index_add,
           index_set, take_along_axis, put_along_axis, concatenate, flip, roll, pad, tril, einsum,
           matmul):
    _p.complex = True
