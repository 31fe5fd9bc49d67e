"""Functional index updates: JAX's ``x.at[index].set(v)`` and its relatives.

A traced value cannot be assigned to in place: the graph has already recorded it, and
other names may refer to it.  So ``x[i] = v`` is refused, and ``x.at[i].set(v)`` returns a
new array instead, differentiable in x and v, as in JAX.  `at` gives the same for any
array, NumPy's included (an ndarray has no ``.at``), for code that runs on both.

The updates follow JAX's rules: `v` is cast to x's dtype and broadcast to ``x[index]``'s
shape; where an index array names an element more than once, ``add``, ``multiply``,
``divide``, ``power``, ``min``, ``max`` and ``apply`` apply every update to it, one after
another in index order (``min`` and ``max`` reduce the values in pairs, which computes
the same in fewer steps), while ``set`` keeps one of the values (the one NumPy's
assignment keeps).  Indices follow NumPy's: an index out of bounds raises IndexError.
Scalar integers traced without values (a loop's counter, a label under vmap) index an
update too: it is then a select along their axes (`IndexUpdate._update_picked`).
"""
from __future__ import annotations

import math

import numpy as _np

from ..graph.node import Node
from ..primitives import array as A


def at(x):
    """The index updates of `x`, as JAX's ``x.at``: ``at(x)[index].set(v)`` is a copy of
    x with ``x[index] = v``, differentiable in x and v.  A traced value has them as
    ``x.at`` too; use `at` where x may be a NumPy array.

    Example:
        >>> import numpy as np, wengert as wg, wengert.numpy as wnp
        >>> def f(w):
        ...     x = wnp.at(np.zeros(3))[1].set(w)     # [0, w, 0]
        ...     return wnp.sum(x.at[1:].add(w) ** 2)   # 0 + (2w)^2 + w^2
        >>> wg.grad(f)(1.0)
        10.0
        >>> wnp.at(np.arange(4.0))[np.array([0, 0, 2])].add(1.0).tolist()
        [2.0, 1.0, 3.0, 3.0]
    """
    return _At(x)


class _At:
    """``x.at``: indexing it names the elements to update (`IndexUpdate`)."""

    __slots__ = ("x",)

    def __init__(self, x):
        self.x = x

    def __getitem__(self, index):
        return IndexUpdate(self.x, index)

    def __repr__(self):
        return f"_At({self.x!r})"


class IndexUpdate:
    """``x.at[index]``: its methods return x with ``x[index]`` updated (see the module).

    Example:
        >>> import numpy as np, wengert.numpy as wnp
        >>> u = wnp.at(np.array([1.0, 2.0, 3.0]))[::2]
        >>> u.get().tolist(), u.set(0.0).tolist(), u.multiply(10.0).tolist()
        ([1.0, 3.0], [0.0, 2.0, 0.0], [10.0, 2.0, 30.0])
    """

    __slots__ = ("x", "index", "picks")

    def __init__(self, x, index):
        import wengert.numpy as wnp
        if type(x) is not Node:
            x = wnp.asarray(x)
        if not isinstance(index, tuple):
            index = (index,)
        self.x = x
        self.picks = None
        if any(type(i) is Node and i.value is None for i in index):
            index = self._picked(index)
        # a traced index (integers, a mask) carries no derivative: its value is what matters
        index = tuple(i._concrete("used as the index of an x.at[...] update")
                      if type(i) is Node else i for i in index)
        self.index = A.encode_index(index)

    def _picked(self, index):
        """`index` with its integers traced without values (a loop's counter, a batch of
        them under vmap, an argument of compile) made full slices, each remembered in
        `picks` with its axis in ``x[index]``: the update is then a select along those
        axes (`_update_picked`).  Only scalar ones among basic entries, where NumPy's
        placement is plain; other indices are left for the error."""
        plain = all(type(i) is Node and i.value is None and i.shape == ()
                    and i.dtype.kind in "iu" or i is None or i is Ellipsis
                    or isinstance(i, slice) or (isinstance(i, (int, _np.integer))
                                                and not isinstance(i, bool))
                    for i in index)
        if not plain:
            return index
        basic, picks = A.split_traced(index, self.x.ndim, lambda i: type(i) is Node)
        self.picks = tuple(picks)
        return basic

    def get(self, **hints):
        """``x[index]``."""
        _check_hints("get", hints)
        out = A.getitem(self.x, index=self.index)
        if self.picks is not None:
            import wengert.numpy as wnp
            for axis, i in reversed(self.picks):    # (the last first: the others stay put)
                out = wnp.take(out, i, axis=axis)
        return out

    def set(self, values, **hints):
        """x with ``x[index] = values``."""
        _check_hints("set", hints)
        if self.picks is not None:
            return self._update_picked(lambda a, b: b, values)
        return A.index_set(self.x, self._values(values), index=self.index)

    def add(self, values, **hints):
        """x with ``x[index] += values``, every repeated index adding its value."""
        _check_hints("add", hints)
        if self.picks is not None:
            return self._update_picked(lambda a, b: a + b, values)
        import wengert.numpy as wnp
        x, v = self.x, self._values(values)
        target = A.index_shape(A.shape_of(x), self.index)
        added = x + A.index_add(wnp.broadcast_to(v, target), index=self.index,
                                shape=A.shape_of(x))
        return wnp.astype(added, A.dtype_of(x))

    def subtract(self, values, **hints):
        """x with ``x[index] -= values``."""
        _check_hints("subtract", hints)
        import wengert.numpy as wnp
        return self.add(wnp.negative(self._values(values)))

    def multiply(self, values, **hints):
        """x with ``x[index] *= values``."""
        _check_hints("multiply", hints)
        return self._apply(lambda a, b: a * b, values)

    def divide(self, values, **hints):
        """x with ``x[index] /= values``."""
        _check_hints("divide", hints)
        return self._apply(lambda a, b: a / b, values)

    def power(self, values, **hints):
        """x with ``x[index] **= values``."""
        _check_hints("power", hints)
        return self._apply(lambda a, b: a ** b, values)

    def min(self, values, **hints):
        """x with ``x[index] = minimum(x[index], values)``."""
        _check_hints("min", hints)
        import wengert.numpy as wnp
        return self._apply(wnp.minimum, values, pairwise=True)

    def max(self, values, **hints):
        """x with ``x[index] = maximum(x[index], values)``."""
        _check_hints("max", hints)
        import wengert.numpy as wnp
        return self._apply(wnp.maximum, values, pairwise=True)

    def apply(self, func, **hints):
        """x with ``x[index] = func(x[index])`` (func of one array, elementwise)."""
        _check_hints("apply", hints)
        return self._apply(lambda a, _: func(a), 0)

    # ---------------------------------------------------------------------------------
    def _values(self, values):
        """`values` in x's dtype, as JAX casts them."""
        import wengert.numpy as wnp
        if type(values) is not Node:
            values = _np.asarray(values)
        dtype = A.dtype_of(self.x)
        return values if A.dtype_of(values) == dtype else wnp.astype(values, dtype)

    def _apply(self, op, values, pairwise=False):
        """x with x[index] replaced by op(x[index], values), each element named more
        than once updated once per time it is named, in index order.  Where op is
        maximum or minimum (`pairwise`), the values named together are reduced in pairs
        instead, which gives the same result in log2 of the repeats rounds."""
        if self.picks is not None:
            return self._update_picked(op, values)
        import wengert.numpy as wnp
        x, index, v = self.x, self.index, self._values(values)
        shape = A.shape_of(x)
        repeats = _repeats(shape, index)
        if repeats is None:
            return A.index_set(x, op(A.getitem(x, index=index), v), index=index)
        targets, rounds = repeats
        flat_v = wnp.reshape(wnp.broadcast_to(v, targets.shape), (-1,))
        flat_t = targets.reshape(-1)
        y = wnp.reshape(x, (-1,))
        if pairwise:
            named, reduced = _pairwise(op, flat_t, flat_v)
            where = A.encode_index((named,))
            y = A.index_set(y, op(A.getitem(y, index=where), reduced), index=where)
            return wnp.reshape(y, shape)
        for r in range(int(rounds.max()) + 1):
            # the r-th mention of each element: each named once here
            pos = _np.flatnonzero(rounds == r)
            where = A.encode_index((flat_t[pos],))
            y = A.index_set(y, op(A.getitem(y, index=where),
                                  A.getitem(flat_v, index=A.encode_index((pos,)))),
                            index=where)
        return wnp.reshape(y, shape)


    def _update_picked(self, op, values):
        """x with x[index] replaced by op(x[index], values), the index holding integers
        traced without values (`picks`): the basic part of the index names a region of
        x, and within it the picked positions are chosen by a select, ``arange(n) == i``
        along each picked axis.  Each position is named once, so every method is one
        update.  A picked index out of bounds raises IndexError where the update runs, as
        NumPy's does (JAX drops such an update)."""
        import wengert.numpy as wnp
        x = self.x
        region = A.getitem(x, index=self.index)
        picked = self.get()
        new = wnp.broadcast_to(op(picked, self._values(values)), A.shape_of(picked))
        shape = A.shape_of(region)
        mask = None
        for axis, i in self.picks:
            n = shape[axis]
            # (i read from arange(n): NumPy's i = -1 is n - 1, and i out of bounds raises
            # IndexError where the update runs, as NumPy's assignment does)
            hit = wnp.arange(n) == wnp.take(wnp.arange(n), i)
            hit = wnp.reshape(hit, tuple(n if k == axis else 1 for k in range(len(shape))))
            mask = hit if mask is None else wnp.logical_and(mask, hit)
        placed = wnp.expand_dims(wnp.astype(new, A.dtype_of(x)),
                                 tuple(axis for axis, _ in self.picks))
        return A.index_set(x, wnp.where(mask, placed, region), index=self.index)


def _pairwise(op, flat_t, flat_v):
    """(each element named, in order, and op of the values naming it), op applied to
    neighbours in index order, level by level: log2 of the most repeats levels, not one
    round per repeat (a hub of a graph named 10,000 times took 10,000).

    For maximum and minimum this is exactly the left fold NumPy's ``maximum.at`` computes:
    op is associative without rounding, and it keeps the fold's choices at ties, which
    the value takes from the last of the tied values (np.maximum gives its second
    argument: 0.0 or -0.0) and the derivative from the first (the rule of maximum).  A
    value left without a neighbour is paired with itself: op(a, a) is a, whose
    derivative is a's whole (a tie: all of it to the first argument)."""
    order = _np.argsort(flat_t, kind="stable")
    named = flat_t[order]
    w = A.getitem(flat_v, index=A.encode_index((order,)))
    while True:
        rank = _ranks(named)
        if rank is None:
            return named, w
        left = _np.flatnonzero(rank % 2 == 0)
        right = left + 1
        alone = (right == len(named)) | (named[_np.minimum(right, len(named) - 1)] !=
                                          named[left])
        right[alone] = left[alone]
        w = op(A.getitem(w, index=A.encode_index((left,))),
               A.getitem(w, index=A.encode_index((right,))))
        named = named[left]


def _check_hints(method, hints):
    """JAX's keyword arguments: the hints about the indices change nothing here; its
    out-of-bounds modes are not NumPy's, and are refused by name."""
    for key, value in hints.items():
        if key in ("indices_are_sorted", "unique_indices"):
            continue
        if key in ("mode", "fill_value") and value is None:
            continue
        if key in ("mode", "fill_value"):
            raise NotImplementedError(
                f"x.at[...].{method}({key}={value!r}): JAX's handling of indices out of "
                "bounds is not supported; wengert follows NumPy, where such an index raises "
                "IndexError")
        raise TypeError(f"x.at[...].{method}() got an unexpected keyword argument {key!r}")


def _repeats(shape, index):
    """None if `index` names each element of an array of `shape` at most once; else
    (the flat position of each element of x[index], and how many times that position was
    named before it, in index order)."""
    if not A.may_repeat(index):
        return None
    targets = _np.arange(math.prod(shape)).reshape(shape)[A.decode_index(index)]
    flat = targets.reshape(-1)
    order = _np.argsort(flat, kind="stable")
    rank = _ranks(flat[order])
    if rank is None:
        return None
    rounds = _np.empty(len(flat), dtype=_np.int64)
    rounds[order] = rank
    return targets, rounds


def _ranks(ordered):
    """The place of each element of sorted `ordered` among those equal to it (0 for the
    first), or None if all are distinct."""
    new = _np.ones(len(ordered), dtype=bool)
    new[1:] = ordered[1:] != ordered[:-1]
    if new.all():
        return None
    starts = _np.flatnonzero(new)
    return _np.arange(len(ordered)) - _np.repeat(starts, _np.diff(_np.append(starts,
                                                                             len(ordered))))


def written(a, v, write):
    """A new array: `a` as NumPy's in-place ``write(a, v)`` (put, place, put_along_axis,
    fill_diagonal) would leave it, differentiable in `a` and `v`.

    `write` runs on an array of the positions of v's elements instead, so NumPy itself
    decides which value lands where (a short `v` repeated, the last of repeated indices,
    ``mode='wrap'``); each element written is then gathered from `v`, and the others kept
    from `a`.  It runs first on zeros of a's and v's dtypes, for NumPy's own errors (an
    index out of bounds, place's refusal to cast float64 values into float32).

    Example:
        >>> import numpy as np, wengert as wg
        >>> put = lambda a, v: written(a, v, lambda dst, ids: np.put(dst, [0, 2, 0], ids))
        >>> put(np.zeros(3), np.array([1.0, 2.0, 3.0])).tolist()     # index 0: the last
        [3.0, 0.0, 2.0]
        >>> wg.grad(lambda v: put(np.zeros(3), v).sum())(np.ones(3)).tolist()
        [0.0, 1.0, 1.0]
    """
    import wengert.numpy as wnp
    if type(a) is not Node:
        a = wnp.asarray(a)
    if type(v) is not Node:
        v = wnp.asarray(v)
    write(_np.zeros(A.shape_of(a), A.dtype_of(a)), _np.zeros(A.shape_of(v), A.dtype_of(v)))
    source = _np.full(A.shape_of(a), -1, dtype=_np.intp)
    write(source, _np.arange(math.prod(A.shape_of(v))).reshape(A.shape_of(v)))
    taken = source >= 0
    if not taken.any():
        return a if type(a) is Node else a.copy()        # (a new array, as always)
    values = wnp.reshape(v, (-1,))[_np.where(taken, source, 0)]
    return wnp.where(taken, wnp.astype(values, A.dtype_of(a)), a)
