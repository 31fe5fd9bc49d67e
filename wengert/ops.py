"""JAX's ``jax.ops``: reductions over segments, differentiable.

``segment_sum(data, segment_ids, num_segments)`` is a table of `num_segments` rows, row s
the sum of the rows of `data` whose id is s: a graph neural network's messages summed at
each node, a ragged batch's totals.  `segment_prod`, `segment_max` and `segment_min` reduce
the same way.  The arguments and results are JAX's: the result has shape
``(num_segments,) + data.shape[1:]``; an id outside ``[0, num_segments)`` is dropped (or
moved to the nearest segment with ``mode="clip"``); a segment no row names holds the
reduction's identity: 0, 1, and for max (min) -inf (+inf), or the integer dtype's least
(greatest) value.  ``num_segments=None`` means ``max(segment_ids) + 1``, which needs ids
with values (under `wg.compile` or `wg.vmap` pass it).

Derivatives:

* `segment_sum` is linear: its derivative is itself, and its transpose a gather.
* `segment_prod`'s is exact with zeros in a segment (no division by the product): each
  segment's product is a tree of multiplications, in log2 of its size levels, and its
  derivative that tree's.  (JAX's segment_prod has none unless ``unique_indices=True``.)
* `segment_max` and `segment_min` give each segment's derivative to the rows that attain
  it, shared equally at a tie, as JAX's do.  An infinite result (an empty segment's -inf)
  has derivative 0.

`segment_max` and `segment_min` are one primitive (`wengert.primitives.segment`), ids
known or traced.  With `segment_ids` known (a NumPy array, or a traced value that has one:
eager transformations) a sum is one index-add, a product a pairwise reduction of the rows
sorted by segment.  Ids traced without values (arguments of `wg.compile`, batched under
`wg.vmap`) go through `wengert.lax`'s scatters, which compute the positions on the graph.

Example:
    >>> import numpy as np, wengert as wg
    >>> from wengert import ops
    >>> edges_to = np.array([0, 0, 2, 1, 2])          # each message's receiving node
    >>> messages = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0], [9.0, 0.0]])
    >>> ops.segment_sum(messages, edges_to, num_segments=3).tolist()
    [[4.0, 6.0], [7.0, 8.0], [14.0, 6.0]]
    >>> ops.segment_max(messages, edges_to).tolist()
    [[3.0, 4.0], [7.0, 8.0], [9.0, 6.0]]
    >>> wg.grad(lambda m: ops.segment_max(m, edges_to).sum())(messages)[:, 0].tolist()
    [0.0, 1.0, 0.0, 1.0, 1.0]
"""
from __future__ import annotations

import numpy as np

from . import numpy as wnp
from . import lax
from .errors import integer_argument
from .graph.node import Node
from .numpy.updates import _ranks
from .primitives.registry import known_value
from .primitives.segment import identity as extremum_identity, segment_extremum

__all__ = ["segment_sum", "segment_prod", "segment_max", "segment_min"]


def segment_sum(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
    """The sum of the rows of `data` in each segment, as ``jax.ops.segment_sum``: row s of
    the result, of shape ``(num_segments,) + data.shape[1:]``, adds the rows i of `data`
    with ``segment_ids[i] == s``; a segment no row names is 0.

    Args:
        data: the values, an array whose leading axis runs over the rows to reduce.
        segment_ids: integers, one per row of `data` (a 1-D array of ``len(data)``),
            in any order and repeated at will.
        num_segments: the number of segments (an int); by default ``max(segment_ids) +
            1``, which needs the ids' values: pass it where they are traced without them
            (`wg.compile`, `wg.vmap`).
        indices_are_sorted, unique_indices: JAX's hints; the result is the same without
            them (and right even where they are wrong).
        bucket_size: JAX's summing in buckets, for rounding; accepted, not needed (the
            sum is NumPy's, in float64 by default).
        mode: what becomes of an id outside ``[0, num_segments)``: dropped (None,
            ``"drop"``, ``"fill"``, ``"promise_in_bounds"``) or moved to the nearest
            segment (``"clip"``), a `wengert.lax.GatherScatterMode` or its name.
        out_sharding: accepted and ignored (one CPU).

    Differentiable in `data` to any order: the derivative of a sum is the sum of the
    derivatives, and its transpose gathers each row's segment.

    Example:
        >>> import numpy as np, wengert as wg
        >>> data, ids = np.array([1.0, 2.0, 3.0, 4.0, 5.0]), np.array([0, 0, 1, 1, 2])
        >>> segment_sum(data, ids).tolist()
        [3.0, 7.0, 5.0]
        >>> segment_sum(data, np.array([0, 0, 1, -1, 9]), num_segments=2).tolist()
        [3.0, 3.0]
        >>> wg.grad(lambda d: segment_sum(d, ids)[1])(data).tolist()
        [0.0, 0.0, 1.0, 1.0, 0.0]
    """
    return _segment("sum", data, segment_ids, num_segments, bucket_size, mode)


def segment_prod(data, segment_ids, num_segments=None, indices_are_sorted=False,
                 unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
    """The product of the rows of `data` in each segment, as ``jax.ops.segment_prod``
    (the arguments are `segment_sum`'s); a segment no row names is 1.

    Differentiable in `data` to any order, exactly where a segment holds zeros: each
    segment's product is a tree of multiplications whose derivative is that tree's, with
    no division by the product.  JAX differentiates segment_prod only with
    ``unique_indices=True`` (one row per segment); here repeated ids are differentiated too.

    Example:
        >>> import numpy as np, wengert as wg
        >>> data, ids = np.array([2.0, 0.0, 3.0, 4.0, 5.0]), np.array([0, 0, 0, 1, 1])
        >>> segment_prod(data, ids, num_segments=3).tolist()
        [0.0, 20.0, 1.0]
        >>> wg.grad(lambda d: segment_prod(d, ids)[0])(data).tolist()  # 0 * 3, 2 * 3, 2 * 0
        [0.0, 6.0, 0.0, 0.0, 0.0]
    """
    return _segment("prod", data, segment_ids, num_segments, bucket_size, mode)


def segment_max(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
    """The greatest of the rows of `data` in each segment, element by element, as
    ``jax.ops.segment_max`` (the arguments are `segment_sum`'s); a segment no row names
    is -inf, or the least value of an integer dtype (False for booleans).  NaN in a
    segment makes its maximum NaN.

    Differentiable in `data`: each result's derivative goes to the rows that attain it,
    shared equally among them at a tie, as JAX's.  A result of -inf or +inf has derivative
    0 (JAX shares it among the infinite rows too).

    Example:
        >>> import numpy as np, wengert as wg
        >>> data, ids = np.array([1.0, 3.0, 3.0, 2.0]), np.array([0, 0, 0, 2])
        >>> segment_max(data, ids).tolist()
        [3.0, -inf, 2.0]
        >>> wg.grad(lambda d: segment_max(d, ids)[0])(data).tolist()    # a tie: halves
        [0.0, 0.5, 0.5, 0.0]
    """
    return _segment("max", data, segment_ids, num_segments, bucket_size, mode)


def segment_min(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
    """The least of the rows of `data` in each segment, element by element, as
    ``jax.ops.segment_min`` (the arguments are `segment_sum`'s); a segment no row names
    is +inf, or the greatest value of an integer dtype (True for booleans).

    Differentiable in `data`, as `segment_max`: ties share the derivative equally.

    Example:
        >>> import numpy as np, wengert as wg
        >>> data, ids = np.array([[1.0, 5.0], [3.0, 0.5]]), np.array([1, 1])
        >>> segment_min(data, ids).tolist()
        [[inf, inf], [1.0, 0.5]]
        >>> segment_min(np.array([7, 2], np.int8), np.array([0, 0]), 2).tolist()
        [2, 127]
    """
    return _segment("min", data, segment_ids, num_segments, bucket_size, mode)


# ---- one implementation ------------------------------------------------------------------------
# (max and min are the segment_extremum primitive, ids known or traced)
_LAX_SCATTER = {"sum": lax.scatter_add, "prod": lax.scatter_mul}


def _segment(how, data, segment_ids, num_segments, bucket_size, mode):
    who = f"segment_{how}"
    if type(data) is not Node:
        data = np.asarray(data)
    dtype = np.dtype(wnp.result_type(data))
    _check_dtype(who, how, dtype)
    shape = tuple(wnp.shape(data))
    ids = known_value(segment_ids)
    traced = ids is None
    if not traced:
        ids = np.asarray(ids)
    known = segment_ids if traced else ids
    id_shape, id_dtype = tuple(wnp.shape(known)), np.dtype(wnp.result_type(known))
    if id_dtype.kind not in "iu":
        raise TypeError(f"{who}: segment_ids must be integers, got {id_dtype}")
    if len(shape) == 0 or id_shape != shape[:1]:
        raise ValueError(f"{who}: segment_ids must be 1-D, one id for each row of data "
                         f"(its leading axis): data has shape {shape}, segment_ids "
                         f"{id_shape}")
    n = _num_segments(who, num_segments, ids)
    if bucket_size is not None:
        integer_argument(bucket_size, who, "bucket_size", 1)
    try:
        clip = lax.GatherScatterMode.from_any(mode) is lax.GatherScatterMode.CLIP
    except ValueError:
        raise ValueError(f"{who}: unknown mode {mode!r}: ids outside [0, num_segments) are "
                         "dropped (None, 'drop', 'fill', 'promise_in_bounds') or clipped "
                         "('clip')") from None
    out_shape = (n,) + shape[1:]
    start = np.full((), _identity(how, dtype), dtype)
    if 0 in out_shape:
        return wnp.full(out_shape, start)     # (no segments: nothing to scatter into)
    if how in ("max", "min"):
        # one primitive, whose derivative shares a result among its winners as JAX's does
        ids = segment_ids if traced else ids.astype(np.int64)
        if clip:
            ids = wnp.clip(ids, 0, max(n - 1, 0))
        return segment_extremum(data, ids, n=n, how=how)
    if traced:
        # positions computed on the graph: wengert.lax's scatters, by JAX's definition
        dn = lax.ScatterDimensionNumbers(update_window_dims=tuple(range(1, len(shape))),
                                         inserted_window_dims=(0,),
                                         scatter_dims_to_operand_dims=(0,))
        return _LAX_SCATTER[how](wnp.full(out_shape, start), wnp.expand_dims(segment_ids, 1),
                                 data, dn, mode="clip" if clip else "drop")
    ids = ids.astype(np.int64)
    if clip:
        ids = np.clip(ids, 0, max(n - 1, 0))
    keep = (ids >= 0) & (ids < n)
    if not keep.all():
        rows = np.flatnonzero(keep)
        data, ids = data[rows], ids[rows]
    if how == "sum":
        return wnp.at(wnp.zeros(out_shape, dtype))[ids].add(data)
    named, folded = _fold_products(start, ids, data)
    return wnp.at(wnp.full(out_shape, start))[named].set(folded)


def _fold_products(one, ids, rows):
    """(each id named, ascending, and the product of the rows with that id): the rows
    sorted by id (stably), then neighbours in one segment combined in pairs, level by
    level, log2 of the largest segment's size levels (a hub of a graph named 10,000 times
    takes 14, not 10,000).  A row left without a neighbour is multiplied by `one`, which
    leaves it as it is, derivative and all."""
    order = np.argsort(ids, kind="stable")
    named = ids[order]
    w = rows[order]
    while True:
        rank = _ranks(named)
        if rank is None:
            return named, w
        left = np.flatnonzero(rank % 2 == 0)
        right = np.minimum(left + 1, len(named) - 1)
        alone = (left + 1 == len(named)) | (named[right] != named[left])
        partner = w[right]
        if alone.any():
            alone = alone.reshape((-1,) + (1,) * (wnp.ndim(w) - 1))
            partner = wnp.where(alone, one, partner)
        w = w[left] * partner
        named = named[left]


def _check_dtype(who, how, dtype):
    if dtype.kind == "b" and how in ("sum", "prod"):
        raise TypeError(f"{who}: data of dtype bool has no {how} (JAX refuses it too); "
                        "cast it to an integer dtype first")
    if dtype.kind == "c" and how in ("max", "min"):
        raise TypeError(f"{who}: complex data has no order; reduce its real part, or "
                        "its absolute value")
    if dtype.kind not in "biufc":
        raise TypeError(f"{who}: data must be numbers, got dtype {dtype}")


def _identity(how, dtype):
    """What a segment no row names holds: the reduction's identity in `dtype`."""
    if how == "sum":
        return 0
    if how == "prod":
        return 1
    return extremum_identity(how, dtype)


def _num_segments(who, num_segments, ids):
    if num_segments is None:
        if ids is None:
            raise ValueError(
                f"{who}: num_segments is needed where segment_ids are traced without "
                "values (wg.compile, wg.jit, wg.vmap): the number of segments is the "
                "result's shape. Pass num_segments=..., a Python int (a static argument "
                "of wg.compile if it is one of its arguments)")
        if ids.size == 0:
            raise ValueError(f"{who}: segment_ids is empty, so there is no max(segment_ids) "
                             "+ 1 to take as the number of segments: pass num_segments")
        n = int(ids.max()) + 1
        if n < 0:
            raise ValueError(f"{who}: num_segments = max(segment_ids) + 1 = {n} is "
                             "negative (every id is below -1): pass num_segments")
        return n
    if type(num_segments) is Node:
        value = known_value(num_segments)
        if value is None:
            raise ValueError(
                f"{who}: num_segments is traced without a value, but it is the result's "
                "shape, which must be known when tracing: make it a static argument "
                "(wg.compile(f, static_argnums=...)) or a constant of the function")
        num_segments = np.asarray(value)[()]
    return integer_argument(num_segments, who, "num_segments", 0, "a non-negative int")
