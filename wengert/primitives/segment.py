"""Segment maxima and minima (`wengert.ops.segment_max` and `segment_min`): one primitive
for the value, and two linear maps, each the other's transpose, for its derivatives.

``segment_extremum(data, ids, n=n, how="max")`` is, for each segment s < n, the largest
row of `data` whose id is s (elementwise over the trailing axes); a segment no row names
holds the identity (-inf for max), and ids outside [0, n) are dropped.  Its derivative is
JAX's: a result's tangent is the mean of the tangents of the rows that attain it (all of
them at a tie), and an infinite result has derivative 0.

Composed of scatters, gathers and masks, the value and that tie-sharing derivative took
some fifteen array operations each way, with their own rules; here the value is one
``np.maximum.at`` on flat positions, and the derivatives are

    winners_mean(t, data, ids, ans):    the mean of t over each result's winners (JVP)
    winners_spread(g, data, ids, ans):  each winner's share of its result's g (VJP)

linear in their first argument; which rows win does not move under small changes of the
data, so data, ids and the result carry no derivative (as max-pooling's routing).

Example:
    >>> import numpy as np
    >>> data, ids = np.array([[1.0], [5.0], [5.0], [2.0]]), np.array([0, 0, 0, 2])
    >>> best = segment_extremum(data, ids, n=3, how="max")
    >>> best.ravel().tolist()
    [5.0, -inf, 2.0]
    >>> winners_spread(np.ones((3, 1)), data, ids, best).ravel().tolist()  # a tie: halves
    [0.0, 0.5, 0.5, 1.0]
"""
from __future__ import annotations

import math

import numpy as np

from .registry import defprimitive, float_dtype


def identity(how, dtype):
    """What a segment no row names holds: the identity of max (min) in `dtype`."""
    if dtype.kind == "b":
        return how == "min"
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.min if how == "max" else info.max
    return -np.inf if how == "max" else np.inf


def _positions(ids, n, inner):
    """(the flat position in the (n, inner) result of each element of each row, those of
    rows whose id is in range), and which rows those are (None: all of them)."""
    ids = np.asarray(ids, dtype=np.int64)
    keep = (ids >= 0) & (ids < n)
    rows = None if keep.all() else np.flatnonzero(keep)
    if rows is not None:
        ids = ids[rows]
    return (ids[:, None] * inner + np.arange(inner)).ravel(), rows


def _segment_extremum_np(data, ids, n, how):
    data = np.asarray(data)
    inner = math.prod(data.shape[1:])
    out = np.full(n * inner, identity(how, data.dtype), data.dtype)
    flat, rows = _positions(ids, n, inner)
    values = (data if rows is None else data[rows]).reshape(-1)
    with np.errstate(invalid="ignore"):     # (np.maximum passes a nan on silently; .at warns)
        (np.maximum if how == "max" else np.minimum).at(out, flat, values)
    return out.reshape((n,) + data.shape[1:])


def _winners(data, ids, ans):
    """(the flat positions of the winning elements in the result, the winners as a mask
    of data's shape, how many share each result): a row's element wins where it equals
    its segment's finite result."""
    data, ans = np.asarray(data), np.asarray(ans)
    n, inner = ans.shape[0], math.prod(ans.shape[1:])
    flat, rows = _positions(ids, n, inner)
    taken = ans.reshape(-1)[flat]
    won = (taken == (data if rows is None else data[rows]).reshape(-1)) & np.isfinite(taken)
    mask = won if rows is None else np.zeros(data.size, bool)
    if rows is not None:
        mask.reshape(data.shape[0], inner)[rows] = won.reshape(len(rows), inner)
    count = np.bincount(flat[won], minlength=n * inner)
    return flat[won], mask, np.maximum(count, 1)


def _winners_mean_np(t, data, ids, ans):
    t = np.asarray(t)
    at, mask, count = _winners(data, ids, ans)
    total = np.bincount(at, t.reshape(-1)[mask], minlength=count.size)
    return (total / count).astype(float_dtype(t), copy=False).reshape(np.shape(ans))


def _winners_spread_np(g, data, ids, ans):
    g = np.asarray(g)
    at, mask, count = _winners(data, ids, ans)
    out = np.zeros(np.size(data), float_dtype(g))
    out[mask] = g.reshape(-1)[at] / count[at]
    return out.reshape(np.shape(data))


segment_extremum = defprimitive(
    "segment_extremum", _segment_extremum_np, cost="cmp",
    abstract_eval=lambda args, params: ((params["n"],) + args[0].shape[1:], args[0].dtype),
    doc="segment_extremum(data, ids, n=n, how='max'|'min'): each segment's largest "
        "(smallest) row.")
winners_mean = defprimitive(
    "winners_mean", _winners_mean_np, cost=None,
    abstract_eval=lambda args, params: (args[3].shape, float_dtype(args[0].dtype)),
    doc="winners_mean(t, data, ids, ans): the mean of t over the rows attaining each result.")
winners_spread = defprimitive(
    "winners_spread", _winners_spread_np, cost=None,
    abstract_eval=lambda args, params: (args[1].shape, float_dtype(args[0].dtype)),
    doc="winners_spread(g, data, ids, ans): each attaining row's share of its result's g.")

segment_extremum.defjvp(lambda ts, data, ids, ans, **p: None if ts[0] is None else
                        winners_mean(ts[0], data, ids, ans))
segment_extremum.defvjp(lambda g, data, ids, ans, **p: (winners_spread(g, data, ids, ans),
                                                        None))
winners_mean.defjvp(lambda ts, t, data, ids, ans, out: None if ts[0] is None else
                    winners_mean(ts[0], data, ids, ans))
winners_mean.defvjp(lambda g, t, data, ids, ans, out: (winners_spread(g, data, ids, ans),
                                                       None, None, None))
winners_spread.defjvp(lambda ts, g, data, ids, ans, out: None if ts[0] is None else
                      winners_spread(ts[0], data, ids, ans))
winners_spread.defvjp(lambda gg, g, data, ids, ans, out: (winners_mean(gg, data, ids, ans),
                                                          None, None, None))
