"""JAX's collectives (``jax.lax.psum`` and the rest) over the examples of a named vmap.

Inside ``wg.vmap(f, axis_name="i")`` (or ``wg.pmap(f, axis_name="i")``), f sees one
example, and ``psum(x, "i")`` is the sum of x over all of them: what data-parallel
training (``pmean`` of the gradients) and batch normalisation (``pmean`` of a batch's
statistics) are written with.  Each is a primitive (`wengert.primitives.collective`) that
the vmap binding the name computes from the whole batch; its derivatives are collectives
again (psum's transpose is psum, as in JAX), so grad, jvp, jacfwd, jacrev and hessian
work inside and outside the vmap, to any order, and `wg.compile` compiles the batched
function.

The names are JAX's (``wengert.lax`` exports them):

* `psum`, `pmean`, `pmax`, `pmin`: the sum, mean, largest and smallest value over the
  examples, the same for every example;
* `all_gather`: every example's value, stacked (or joined, ``tiled=True``) along a new
  axis; `psum_scatter`: the psum, each example keeping its own slice;
* `all_to_all`: example k receives every example's k-th slice along one axis, stacked
  (or joined) along another; `pswapaxes`: the same with one axis for both;
* `ppermute`: each example receives another's value, by a permutation of the examples;
  `pshuffle`: the same, the permutation given as each example's source; `pbroadcast`:
  one example's value, for every example;
* `axis_index`: the example's position; `axis_size`: the number of examples.

`axis_name` is one name, or a tuple of names (nested vmaps: the collective runs over all
of their examples, the first name's position most significant).  `x` may be a pytree.
A name that no enclosing vmap binds raises NameError, as in JAX.  ``axis_index_groups``
(psum, pmean, pmax, pmin, all_gather, psum_scatter, all_to_all, pswapaxes) splits the
examples into groups of one size, a list of lists of their positions covering each
example once, and the collective runs within each example's group, positions counting
in the group's order: what ``jax.pmap`` does on devices (JAX's vmap refuses groups).
f may call the collectives inside a `wg.custom_jvp` or `wg.custom_vjp` function or its
rules, as in JAX (`wengert.custom_rules` batches such a call as one).

Example:
    >>> import numpy as np, wengert as wg
    >>> from wengert import lax
    >>> xs = np.array([1.0, 2.0, 3.0])
    >>> wg.vmap(lambda x: x - lax.pmean(x, "i"), axis_name="i")(xs)
    array([-1.,  0.,  1.])
    >>> wg.vmap(wg.grad(lambda x: x * lax.pmean(x, "i")), axis_name="i")(xs)
    array([4., 4., 4.])
"""
from __future__ import annotations

import math

import numpy as np

from .graph.active import current_graph
from .graph.node import Node
from .primitives import collective as P
from .primitives.array import reshape as _reshape
from .primitives.registry import shape_of
from .tree import tree_map

__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "all_to_all",
           "pswapaxes", "ppermute", "pshuffle", "pbroadcast", "axis_index", "axis_size",
           "pcast"]


# --------------------------------------------------------------------------------------
# axis names
# --------------------------------------------------------------------------------------
def _axes(axis_name, who):
    """The names (a tuple) and the numbers of examples of the vmaps binding them."""
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    sizes = []
    for name in names:
        try:
            size = P.bound(name)
        except TypeError:
            raise TypeError(f"{who}: an axis name must be hashable (a string, usually), got "
                            f"a {type(name).__name__}") from None
        if size is None:
            raise NameError(_unbound(name, who))
        sizes.append(size)
    return names, sizes


def _unbound(name, who):
    if name in P.resolving_axes():
        # the vmap binding it has traced its function and is computing the batch: an
        # operation that runs a function of one example again does so now
        return (f"unbound axis name {name!r}: {who} over {name!r} is called while the "
                f"wg.vmap with axis_name={name!r} computes its batch, by an operation "
                "that runs a function of one example again on numbers (a callback, "
                "wg.pure_callback's with vmap_method='sequential'): collectives inside "
                "those are not offered; compute the collective outside the function and "
                "pass its result in as an argument")
    names = P.bound_names()
    here = (f" (the names bound here: {', '.join(repr(n) for n in names)})" if names
            else " (no vmap binds a name here)")
    return (f"unbound axis name {name!r}: {who} over {name!r} must be called inside a "
            f"function that wg.vmap or wg.pmap maps with axis_name={name!r}, or that "
            f"shard_map runs on a mesh with an axis {name!r}{here}; pass "
            f"axis_name={name!r} to the vmap or pmap whose examples it is over")


def _groups(groups, names, n, who):
    """`axis_index_groups` checked and made a tuple of tuples of positions: groups of one
    size, covering the n examples once each.  None for None, and for one group of every
    example in order (the collective without groups)."""
    if groups is None:
        return None
    try:
        rows = [list(g) for g in groups]
    except TypeError:
        rows = None
    if rows is None or any(not isinstance(e, (int, np.integer)) or isinstance(e, bool)
                           for row in rows for e in row):
        raise TypeError(f"{who}: axis_index_groups must be a list of groups, each a list of "
                        f"example positions (ints), got {groups!r:.80}")
    if not rows or not all(rows):
        raise ValueError(f"{who}: axis_index_groups must be groups of at least one example, "
                         f"got {groups!r:.80}")
    lengths = sorted({len(row) for row in rows})
    if len(lengths) > 1:
        raise ValueError(f"{who}: the groups of axis_index_groups must all be of one size, "
                         f"got groups of {' and '.join(map(str, lengths))} examples")
    seen = set()
    for e in (int(e) for row in rows for e in row):
        if not 0 <= e < n:
            raise ValueError(f"{who}: axis_index_groups names position {e}, out of range: "
                             f"{_named(names)} has {n} examples, numbered 0 to {n - 1}")
        if e in seen:
            raise ValueError(f"{who}: axis_index_groups names position {e} twice; each "
                             "example belongs to exactly one group")
        seen.add(e)
    if len(seen) != n:
        missing = sorted(set(range(n)) - seen)
        raise ValueError(f"{who}: axis_index_groups leaves out position"
                         f"{'s' if len(missing) > 1 else ''} "
                         f"{', '.join(map(str, missing[:5]))}{', ...' if len(missing) > 5 else ''}"
                         f": the groups must cover every example of {_named(names)} "
                         f"(0 to {n - 1})")
    groups = tuple(tuple(int(e) for e in row) for row in rows)
    return None if groups == (tuple(range(n)),) else groups


def _members(groups, n):
    """The number of examples each collective runs over: a group's, or all n."""
    return n if groups is None else len(groups[0])


def _with(groups):
    """The primitive's ``groups`` parameter, present only where there are groups."""
    return {} if groups is None else {"groups": groups}


def _over_groups(leaf, names, sizes, groups, op, **params):
    """The collective `op` (with `params`) over several names, within `groups` (None: one
    group of all), positions counting over all the names: every example's value gathered,
    the example's own group taken out of it, and the collective computed there."""
    import wengert.numpy as wnp
    n = math.prod(sizes)
    groups = groups or (tuple(range(n)),)
    group_of, position = np.empty(n, np.intp), np.empty(n, np.intp)
    for k, g in enumerate(groups):
        group_of[list(g)] = k
        position[list(g)] = np.arange(len(g))
    gathered = all_gather(leaf, names)              # (every example's, in position order)
    order = [e for g in groups for e in g]
    shape = tuple(shape_of(leaf))
    by_group = wnp.reshape(wnp.take(gathered, np.array(order), axis=0),
                           (len(groups), len(groups[0])) + shape)
    me = axis_index(names)
    value, per_example = P.within_group(op, wnp.take(by_group, wnp.take(group_of, me),
                                                     axis=0), **params)
    return wnp.take(value, wnp.take(position, me), axis=0) if per_example else value


def _record(op, *args, **params):
    """The collective `op` of `args`, recorded into the trace the vmap binding its name
    runs (an enclosing trace's value, closed over by f, is taken as an input of it).
    (No graph records where a function runs on plain numbers inside the trace, a
    checkpointed one: `NoValue` then says that its value is not known there.)"""
    graph = current_graph()
    return op(*args, **params) if graph is None else graph.apply(op, args, params)


def _array(x, who):
    """A value that is not traced, as a NumPy array (a Python number stays one)."""
    if isinstance(x, (bool, int, float, complex, np.number, np.bool_)):
        return x
    a = np.asarray(x)
    if a.dtype.kind not in "biufc":
        raise TypeError(f"{who}: takes numbers and arrays (or pytrees of them), got "
                        f"{type(x).__name__} {x!r:.40}")
    return a


def _axis(axis, rank, who, what, extra):
    """`axis` of an array of `rank` dimensions (`extra` one more allowed: a new axis)."""
    top = rank + extra
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool) or \
            not -top <= axis < top:
        raise ValueError(f"{who}: {what} {axis!r} is out of range for an argument with "
                         f"{rank} dimensions (from {-top} to {top - 1})")
    return int(axis) % top


# --------------------------------------------------------------------------------------
# reductions
# --------------------------------------------------------------------------------------
def psum(x, axis_name, *, axis_index_groups=None):
    """The sum of x over the examples of the vmap named `axis_name`, as ``jax.lax.psum``:
    the same for every example.  `axis_name` may be a tuple of names (nested vmaps: the
    sum over all their examples); x a pytree.  A value that is no traced one (a number:
    ``psum(1, "i")``) gives its sum at once, the number of examples times it.

    ``axis_index_groups`` (JAX's) splits the examples into groups, a list of lists of
    their positions, of one size, covering each example once: each example then gets the
    sum over its own group.

    Its transpose is psum, as in JAX: inside the vmap, ``grad`` of ``psum(x, "i")`` is the
    number of examples (each example's output depends on every example's x).

    Example:
        >>> import numpy as np, wengert as wg
        >>> wg.vmap(lambda x: x / psum(x, "i"), axis_name="i")(np.array([1.0, 3.0]))
        array([0.25, 0.75])
        >>> wg.vmap(lambda x: psum(1, "i"), axis_name="i")(np.zeros(3))
        array([3, 3, 3])
        >>> pairs = [[0, 2], [1, 3]]
        >>> wg.vmap(lambda x: psum(x, "i", axis_index_groups=pairs), axis_name="i")(
        ...     np.array([1.0, 2.0, 10.0, 20.0]))
        array([11., 22., 11., 22.])
    """
    names, sizes = _axes(axis_name, "psum")
    groups = _groups(axis_index_groups, names, math.prod(sizes), "psum")
    m = _members(groups, math.prod(sizes))

    def one(leaf):
        if type(leaf) is not Node:
            return _array(leaf, "psum") * m
        if groups is not None:
            if len(names) != 1:
                return _over_groups(leaf, names, sizes, groups, P.psum)
            return _record(P.psum, leaf, axis_name=names[0], groups=groups)
        for name in names:
            leaf = _record(P.psum, leaf, axis_name=name)
        return leaf
    return tree_map(one, x)


def pmean(x, axis_name, *, axis_index_groups=None):
    """The mean of x over the examples of the vmap named `axis_name`, as
    ``jax.lax.pmean``: ``psum(x, axis_name) / axis_size(axis_name)``, so its transpose is
    pmean.  `axis_name` may be a tuple of names, x a pytree; with ``axis_index_groups``
    the mean over each example's group (see `psum`).

    Example:
        >>> import numpy as np, wengert as wg
        >>> xs = np.array([1.0, 2.0, 6.0])
        >>> wg.vmap(lambda x: x - pmean(x, "i"), axis_name="i")(xs)
        array([-2., -1.,  3.])
    """
    names, sizes = _axes(axis_name, "pmean")
    groups = _groups(axis_index_groups, names, math.prod(sizes), "pmean")
    m = _members(groups, math.prod(sizes))
    return tree_map(lambda s: s / m, psum(x, names, axis_index_groups=groups))


def _extremum(op, who, what):
    def collective(x, axis_name, *, axis_index_groups=None):
        names, sizes = _axes(axis_name, who)
        groups = _groups(axis_index_groups, names, math.prod(sizes), who)

        def one(leaf):
            if type(leaf) is not Node:
                return _array(leaf, who)
            if groups is not None:
                if len(names) != 1:
                    return _over_groups(leaf, names, sizes, groups, op)
                return _record(op, leaf, axis_name=names[0], groups=groups)
            for name in names:
                leaf = _record(op, leaf, axis_name=name)
            return leaf
        return tree_map(one, x)
    collective.__name__ = collective.__qualname__ = who
    collective.__doc__ = f"""The {what} x over the examples of the vmap named `axis_name`, as
    ``jax.lax.{who}``: the same for every example.  `axis_name` may be a tuple of names, x
    a pytree; with ``axis_index_groups`` the {what} over each example's group (see `psum`).

    Its derivative is the tangent of the examples that attain it, shared equally among
    ties (as ``numpy.{'max' if who == 'pmax' else 'min'}`` over the batch axis
    differentiates in wengert); JAX has no derivative for it.

    Example:
        >>> import numpy as np, wengert as wg
        >>> wg.vmap(lambda x: {who}(x, "i"), axis_name="i")(np.array([2.0, 5.0, 1.0]))
        array([{'5., 5., 5.' if who == 'pmax' else '1., 1., 1.'}])
    """
    return collective


pmax = _extremum(P.pmax, "pmax", "largest")
pmin = _extremum(P.pmin, "pmin", "smallest")


# --------------------------------------------------------------------------------------
# gathering and scattering
# --------------------------------------------------------------------------------------
def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False):
    """Every example's x, for every example, as ``jax.lax.all_gather``: stacked along a
    new axis `axis` (of as many entries as examples), or with ``tiled=True`` joined along
    x's own axis `axis`.  `axis_name` may be a tuple of names (the examples of nested
    vmaps, the first name's position most significant); x a pytree.  With
    ``axis_index_groups`` (see `psum`) the values of the example's own group, in the
    group's order.  Its transpose is `psum_scatter`.

    Example:
        >>> import numpy as np, wengert as wg
        >>> xs = np.array([[1.0, 2.0], [3.0, 4.0]])
        >>> wg.vmap(lambda x: all_gather(x, "i"), axis_name="i")(xs)[0]
        array([[1., 2.],
               [3., 4.]])
        >>> wg.vmap(lambda x: all_gather(x, "i", tiled=True), axis_name="i")(xs)[0]
        array([1., 2., 3., 4.])
    """
    names, sizes = _axes(axis_name, "all_gather")
    n = math.prod(sizes)
    groups = _groups(axis_index_groups, names, n, "all_gather")
    m = _members(groups, n)

    def one(leaf):
        if type(leaf) is not Node:
            leaf = _array(leaf, "all_gather")
        shape = tuple(shape_of(leaf))
        a = _axis(axis, len(shape), "all_gather",
                  "axis" if not tiled else "axis (tiled=True: one of x's own)",
                  0 if tiled else 1)
        if type(leaf) is not Node:      # (the same for every example: known now)
            copies = [np.asarray(leaf)] * m
            return np.concatenate(copies, axis=a) if tiled else np.stack(copies, axis=a)
        if groups is not None:
            if len(names) != 1:
                return _over_groups(leaf, names, sizes, groups, P.all_gather, axis=a,
                                    tiled=bool(tiled), size=m)
            return _record(P.all_gather, leaf, axis_name=names[0], axis=a,
                           tiled=bool(tiled), size=m, groups=groups)
        # the last name's examples gathered first: the first name's position is then
        # the most significant (example (i, j) of vmaps of I and J at i * J + j)
        for name, size in reversed(list(zip(names, sizes))):
            leaf = _record(P.all_gather, leaf, axis_name=name, axis=a, tiled=bool(tiled),
                           size=size)
        if not tiled and len(names) != 1:
            leaf = _reshape(leaf, shape=shape[:a] + (n,) + shape[a:])
        return leaf
    return tree_map(one, x)


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None,
                 tiled=False):
    """The psum of x, each example keeping its own part of it along `scatter_dimension`,
    as ``jax.lax.psum_scatter``: example k gets entry k of that axis (which must have as
    many entries as there are examples), or with ``tiled=True`` the k-th of as many equal
    blocks.  With ``axis_index_groups`` (see `psum`) the psum over the example's group,
    k its position in the group.  The transpose of `all_gather`.  `axis_name` may be a
    tuple of names; x a pytree.

    Example:
        >>> import numpy as np, wengert as wg
        >>> xs = np.array([[1.0, 2.0], [10.0, 20.0]])     # two examples, two entries
        >>> wg.vmap(lambda x: psum_scatter(x, "i"), axis_name="i")(xs)
        array([11., 22.])
    """
    names, sizes = _axes(axis_name, "psum_scatter")
    n = math.prod(sizes)
    groups = _groups(axis_index_groups, names, n, "psum_scatter")
    m = _members(groups, n)

    def one(leaf):
        if type(leaf) is not Node:
            leaf = _array(leaf, "psum_scatter")
        shape = tuple(shape_of(leaf))
        d = _axis(scatter_dimension, len(shape), "psum_scatter", "scatter_dimension", 0)
        _check_split(shape, d, m, tiled, "psum_scatter", "scatter_dimension", names, groups)
        if len(names) == 1:
            return _record(P.psum_scatter, leaf, axis_name=names[0], scatter_dimension=d,
                           tiled=bool(tiled), size=m, **_with(groups))
        if groups is not None:
            return _over_groups(leaf, names, sizes, groups, P.psum_scatter,
                                scatter_dimension=d, tiled=bool(tiled), size=m)
        # several names: the psum, then each example's part by its position
        import wengert.numpy as wnp
        total = psum(leaf, names)
        if tiled:
            total = _reshape(total, shape=shape[:d] + (n, shape[d] // n) + shape[d + 1:])
        return wnp.take(total, axis_index(names), axis=d)
    return tree_map(one, x)


def _named(names):
    return f"axis {names[0]!r}" if len(names) == 1 else f"axes {names!r}"


def _check_split(shape, axis, m, tiled, who, what, names, groups):
    """Refuse an axis that cannot be split among the m examples: it must have m entries,
    or with `tiled` a multiple of m (psum_scatter's scatter_dimension, all_to_all's
    split_axis)."""
    if (shape[axis] % m if tiled else shape[axis] != m):
        raise ValueError(
            f"{who}: x of shape {shape} has {shape[axis]} entries along its {what} {axis}, "
            f"for {m} examples {_over(names, groups)}: they must "
            + ("be a multiple of the number of examples (tiled=True)" if tiled else
               "be as many as the examples (or, with tiled=True, a multiple of them)"))


def _over(names, groups):
    """Which examples a collective runs over, for an error message."""
    return (f"of {_named(names)}" if groups is None else
            f"in each group of axis_index_groups over {_named(names)}")


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None,
               tiled=False):
    """Each example sends the k-th part of x to example k, as ``jax.lax.all_to_all``: x's
    axis `split_axis` has one entry per example, and example k's result holds every
    example's entry k of it, stacked in the examples' order along a new axis at
    `concat_axis` (of the result, whose shape is x's with `split_axis` taken out and
    that axis put in).  With ``tiled=True`` `split_axis` is cut into as many equal
    blocks as examples and example k's result joins every example's k-th block along
    x's own axis `concat_axis` (a shape with `split_axis` divided and `concat_axis`
    multiplied by the number of examples).  A batch of matrices sharded by rows becomes
    one sharded by columns.

    With ``axis_index_groups`` (see `psum`) the exchange runs within each group, k an
    example's position in its group.  `axis_name` may be a tuple of names (positions
    then count over all their examples, the first name's most significant); x a pytree.
    Its transpose is all_to_all with `split_axis` and `concat_axis` swapped.

    Example:
        >>> import numpy as np, wengert as wg
        >>> xs = np.array([[1.0, 2.0], [3.0, 4.0]])      # example k holds row k
        >>> wg.vmap(lambda x: all_to_all(x, "i", 0, 0), axis_name="i")(xs)
        array([[1., 3.],
               [2., 4.]])
    """
    return _all_to_all(x, axis_name, split_axis, concat_axis, axis_index_groups, tiled,
                       "all_to_all", ("split_axis", "concat_axis"))


def _all_to_all(x, axis_name, split_axis, concat_axis, axis_index_groups, tiled, who, what):
    names, sizes = _axes(axis_name, who)
    n = math.prod(sizes)
    groups = _groups(axis_index_groups, names, n, who)
    m = _members(groups, n)

    def one(leaf):
        if type(leaf) is not Node:
            leaf = _array(leaf, who)
        shape = tuple(shape_of(leaf))
        s = _axis(split_axis, len(shape), who, what[0], 0)
        c = _axis(concat_axis, len(shape), who, what[1], 0)
        _check_split(shape, s, m, tiled, who, what[0], names, groups)
        params = dict(split_axis=s, concat_axis=c, tiled=bool(tiled), size=m)
        if len(names) == 1:
            return _record(P.all_to_all, leaf, axis_name=names[0], **params, **_with(groups))
        return _over_groups(leaf, names, sizes, groups, P.all_to_all, **params)
    return tree_map(one, x)


def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
    """The vmap's axis and x's axis `axis` (of one entry per example) swapped, as
    ``jax.lax.pswapaxes``: ``all_to_all(x, axis_name, axis, axis)``, so that example k's
    result holds entry k of every example's x along `axis`, in the examples' order.  Its
    own transpose.  `axis_index_groups`, a tuple `axis_name` and pytrees as in
    `all_to_all`.

    Example:
        >>> import numpy as np, wengert as wg
        >>> xs = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
        >>> wg.vmap(lambda x: pswapaxes(x, "i", 0), axis_name="i")(xs)
        array([[1., 4., 7.],
               [2., 5., 8.],
               [3., 6., 9.]])
    """
    return _all_to_all(x, axis_name, axis, axis, axis_index_groups, False, "pswapaxes",
                       ("axis", "axis"))


def ppermute(x, axis_name, perm):
    """Each example receives another's x, as ``jax.lax.ppermute``: `perm` is a list of
    ``(source, destination)`` pairs of example positions, no two with the same source or
    the same destination; an example that is no destination gets zeros.  Its transpose is
    the inverse permutation.  `axis_name` may be a tuple of names (positions then count
    over all their examples, the first name's most significant); x a pytree.

    Example:
        >>> import numpy as np, wengert as wg
        >>> shift = [(0, 1), (1, 2), (2, 0)]                    # a ring
        >>> wg.vmap(lambda x: ppermute(x, "i", shift), axis_name="i")(np.array([1.0, 2.0, 3.0]))
        array([3., 1., 2.])
    """
    names, sizes = _axes(axis_name, "ppermute")
    n = math.prod(sizes)
    pairs = _checked_perm(perm, n, names)

    def one(leaf):
        if type(leaf) is not Node:
            leaf = _array(leaf, "ppermute")
        if len(names) == 1:
            return _record(P.ppermute, leaf, axis_name=names[0], perm=pairs)
        # several names: every example's value, then each one's source's
        import wengert.numpy as wnp
        src = np.full(n, -1)
        for s, d in pairs:
            src[d] = s
        mine = wnp.take(src, axis_index(names))
        got = wnp.take(all_gather(leaf, names), wnp.maximum(mine, 0), axis=0)
        return wnp.where(mine >= 0, got, np.zeros((), got.dtype))
    return tree_map(one, x)


def _checked_perm(perm, n, names):
    try:
        pairs = [tuple(p) for p in perm]
    except TypeError:
        pairs = None
    if pairs is None or any(len(p) != 2 or not all(
            isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in p)
            for p in pairs):
        raise ValueError(f"ppermute: perm must be a list of (source, destination) pairs of "
                         f"ints, got {perm!r:.80}")
    pairs = tuple((int(s), int(d)) for s, d in pairs)
    for s, d in pairs:
        if not (0 <= s < n and 0 <= d < n):
            raise ValueError(f"ppermute: the pair {(s, d)} of perm is out of range: "
                             f"{_named(names)} has {n} examples, numbered 0 to {n - 1}")
    for k, what in ((0, "source"), (1, "destination")):
        seen = [p[k] for p in pairs]
        twice = sorted({e for e in seen if seen.count(e) > 1})
        if twice:
            raise ValueError(f"ppermute: perm names {what} {twice[0]} more than once; "
                             f"each example may be the {what} of at most one pair")
    return pairs


def pshuffle(x, axis_name, perm):
    """Example i receives example ``perm[i]``'s x, as ``jax.lax.pshuffle``: `perm` lists
    every example's position once (a permutation), and the result is `ppermute` with the
    pairs ``(perm[i], i)``, whose transpose is the inverse permutation.  `axis_name` may
    be a tuple of names; x a pytree.

    Example:
        >>> import numpy as np, wengert as wg
        >>> xs = np.array([1.0, 2.0, 3.0])
        >>> wg.vmap(lambda x: pshuffle(x, "i", [2, 0, 1]), axis_name="i")(xs)
        array([3., 1., 2.])
    """
    names, sizes = _axes(axis_name, "pshuffle")
    n = math.prod(sizes)
    try:
        sources = [int(p) if isinstance(p, (int, np.integer)) and not isinstance(p, bool)
                   else None for p in perm]
    except TypeError:
        sources = [None]
    if None in sources or sorted(sources) != list(range(n)):
        raise ValueError(f"pshuffle: perm must list every example's position (0 to {n - 1} "
                         f"for the {n} examples of {_named(names)}) once, got {perm!r:.80}")
    return ppermute(x, names, [(s, i) for i, s in enumerate(sources)])


def pbroadcast(x, axis_name, source):
    """Example `source`'s x, for every example, as ``jax.lax.pbroadcast``: the psum of x
    where the example is `source` and zeros elsewhere, computed as that example's entry
    of `all_gather`, whose transpose gives the whole cotangent's psum to `source` and
    zeros to the others.  `axis_name` may be a tuple of names (`source` a position over
    all of them, the first name's most significant); x a pytree.

    Example:
        >>> import numpy as np, wengert as wg
        >>> wg.vmap(lambda x: pbroadcast(x, "i", 1), axis_name="i")(np.array([1.0, 2.0, 3.0]))
        array([2., 2., 2.])
    """
    names, sizes = _axes(axis_name, "pbroadcast")
    n = math.prod(sizes)
    if not isinstance(source, (int, np.integer)) or isinstance(source, bool) or \
            not 0 <= source < n:
        raise ValueError(f"pbroadcast: source must be an example's position, an int from 0 "
                         f"to {n - 1} ({_named(names)} has {n} examples), got {source!r:.40}")

    def one(leaf):
        if type(leaf) is not Node:
            return _array(leaf, "pbroadcast")
        import wengert.numpy as wnp
        return wnp.take(all_gather(leaf, names), int(source), axis=0)
    return tree_map(one, x)


# --------------------------------------------------------------------------------------
# positions
# --------------------------------------------------------------------------------------
def axis_index(axis_name):
    """The example's position along the vmap named `axis_name` (an int32 from 0), as
    ``jax.lax.axis_index``.  For a tuple of names, the position among all their examples,
    the first name's most significant.

    Example:
        >>> import numpy as np, wengert as wg
        >>> wg.vmap(lambda x: x * axis_index("i"), axis_name="i")(np.array([5.0, 5.0, 5.0]))
        array([ 0.,  5., 10.])
    """
    names, sizes = _axes(axis_name, "axis_index")
    out = None
    for name, size in zip(names, sizes):
        here = _record(P.axis_index, axis_name=name)
        out = here if out is None else out * np.int32(size) + here
    return np.int32(0) if out is None else out


def axis_size(axis_name):
    """The number of examples of the vmap named `axis_name` (a Python int), as
    ``jax.lax.axis_size``; for a tuple of names, the product of theirs.

    Example:
        >>> import numpy as np, wengert as wg
        >>> wg.vmap(lambda x: x / axis_size("i"), axis_name="i")(np.array([2.0, 4.0]))
        array([1., 2.])
    """
    return math.prod(_axes(axis_name, "axis_size")[1])


# --------------------------------------------------------------------------------------
# types
# --------------------------------------------------------------------------------------
def pcast(x, axis_name, *, to):
    """x itself, as JAX's ``jax.lax.pcast(x, axis_name, to="varying")`` (``pvary``, which
    JAX 0.10 removed): JAX's ``shard_map`` types each value as varying along some mesh
    axes or not, and this cast marks a value that is the same on every device as varying,
    where JAX's type checks ask for it (a loop carry, say).  wengert finds which values
    vary from what computes them, so the cast changes nothing.  The axis names must be
    bound (by `wengert.sharding.shard_map`, or a vmap with ``axis_name``); JAX's other
    casts (``to="reduced"``, ``"unreduced"``) are a NotImplementedError.

    Example:
        >>> import numpy as np, wengert as wg
        >>> wg.vmap(lambda x: x + pcast(1.0, "i", to="varying"), axis_name="i")(np.zeros(2))
        array([1., 1.])
    """
    if isinstance(axis_name, (set, frozenset)):
        raise TypeError(f"pcast: axis_name must be a name or a tuple of names, got "
                        f"{axis_name!r}")
    if to not in ("varying", "reduced", "unreduced"):
        raise ValueError(f"pcast: to must be 'varying', 'reduced' or 'unreduced', got {to!r}")
    _axes(axis_name, "pcast")
    if to != "varying":
        raise NotImplementedError(f"pcast: to={to!r} (JAX's reduced and unreduced types of "
                                  "shard_map) is not offered; to='varying' is")
    return x
