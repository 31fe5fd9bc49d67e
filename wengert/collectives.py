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
* `ppermute`: each example receives another's value, by a permutation of the examples;
* `axis_index`: the example's position; `axis_size`: the number of examples.

`axis_name` is one name, or a tuple of names (nested vmaps: the collective runs over all
of their examples, the first name's position most significant).  `x` may be a pytree.
A name that no enclosing vmap binds raises NameError, as in JAX.  ``axis_index_groups``
(collectives over groups of devices) is not offered.

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

__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute",
           "axis_index", "axis_size"]


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
                "that runs a function of one example again (a wg.custom_jvp or "
                "wg.custom_vjp function, a callback): collectives inside those are not "
                "offered; compute the collective outside the function and pass its "
                "result in as an argument")
    names = P.bound_names()
    here = (f" (the names bound here: {', '.join(repr(n) for n in names)})" if names
            else " (no vmap binds a name here)")
    return (f"unbound axis name {name!r}: {who} over {name!r} must be called inside a "
            f"function that wg.vmap or wg.pmap maps with axis_name={name!r}{here}; pass "
            f"axis_name={name!r} to the vmap or pmap whose examples it is over")


def _no_groups(groups, who):
    if groups is not None:
        raise NotImplementedError(f"{who}: axis_index_groups (a collective within groups "
                                  "of devices) is not offered; one vmap's examples are one "
                                  "group")


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

    Its transpose is psum, as in JAX: inside the vmap, ``grad`` of ``psum(x, "i")`` is the
    number of examples (each example's output depends on every example's x).

    Example:
        >>> import numpy as np, wengert as wg
        >>> wg.vmap(lambda x: x / psum(x, "i"), axis_name="i")(np.array([1.0, 3.0]))
        array([0.25, 0.75])
        >>> wg.vmap(lambda x: psum(1, "i"), axis_name="i")(np.zeros(3))
        array([3, 3, 3])
    """
    names, sizes = _axes(axis_name, "psum")
    _no_groups(axis_index_groups, "psum")
    n = math.prod(sizes)

    def one(leaf):
        if type(leaf) is not Node:
            return _array(leaf, "psum") * n
        for name in names:
            leaf = _record(P.psum, leaf, axis_name=name)
        return leaf
    return tree_map(one, x)


def pmean(x, axis_name, *, axis_index_groups=None):
    """The mean of x over the examples of the vmap named `axis_name`, as
    ``jax.lax.pmean``: ``psum(x, axis_name) / axis_size(axis_name)``, so its transpose is
    pmean.  `axis_name` may be a tuple of names, x a pytree.

    Example:
        >>> import numpy as np, wengert as wg
        >>> xs = np.array([1.0, 2.0, 6.0])
        >>> wg.vmap(lambda x: x - pmean(x, "i"), axis_name="i")(xs)
        array([-2., -1.,  3.])
    """
    names, sizes = _axes(axis_name, "pmean")
    _no_groups(axis_index_groups, "pmean")
    n = math.prod(sizes)
    return tree_map(lambda s: s / n, psum(x, names))


def _extremum(op, who, what):
    def collective(x, axis_name, *, axis_index_groups=None):
        names, _ = _axes(axis_name, who)
        _no_groups(axis_index_groups, who)

        def one(leaf):
            if type(leaf) is not Node:
                return _array(leaf, who)
            for name in names:
                leaf = _record(op, leaf, axis_name=name)
            return leaf
        return tree_map(one, x)
    collective.__name__ = collective.__qualname__ = who
    collective.__doc__ = f"""The {what} x over the examples of the vmap named `axis_name`, as
    ``jax.lax.{who}``: the same for every example.  `axis_name` may be a tuple of names, x
    a pytree.

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
    vmaps, the first name's position most significant); x a pytree.  Its transpose is
    `psum_scatter`.

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
    _no_groups(axis_index_groups, "all_gather")
    n = math.prod(sizes)

    def one(leaf):
        if type(leaf) is not Node:
            leaf = _array(leaf, "all_gather")
        shape = tuple(shape_of(leaf))
        a = _axis(axis, len(shape), "all_gather",
                  "axis" if not tiled else "axis (tiled=True: one of x's own)",
                  0 if tiled else 1)
        if type(leaf) is not Node:      # (the same for every example: known now)
            copies = [np.asarray(leaf)] * n
            return np.concatenate(copies, axis=a) if tiled else np.stack(copies, axis=a)
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
    blocks.  The transpose of `all_gather`.  `axis_name` may be a tuple of names; x a
    pytree.

    Example:
        >>> import numpy as np, wengert as wg
        >>> xs = np.array([[1.0, 2.0], [10.0, 20.0]])     # two examples, two entries
        >>> wg.vmap(lambda x: psum_scatter(x, "i"), axis_name="i")(xs)
        array([11., 22.])
    """
    names, sizes = _axes(axis_name, "psum_scatter")
    _no_groups(axis_index_groups, "psum_scatter")
    n = math.prod(sizes)

    def one(leaf):
        if type(leaf) is not Node:
            leaf = _array(leaf, "psum_scatter")
        shape = tuple(shape_of(leaf))
        d = _axis(scatter_dimension, len(shape), "psum_scatter", "scatter_dimension", 0)
        if (shape[d] % n if tiled else shape[d] != n):
            raise ValueError(
                f"psum_scatter: x of shape {shape} has {shape[d]} entries along its "
                f"scatter_dimension {d}, for {n} examples of {_named(names)}: they must be "
                + ("a multiple of the number of examples (tiled=True)" if tiled else
                   "as many as the examples (or, with tiled=True, a multiple of them)"))
        if len(names) == 1:
            return _record(P.psum_scatter, leaf, axis_name=names[0], scatter_dimension=d,
                           tiled=bool(tiled), size=n)
        # several names: the psum, then each example's part by its position
        import wengert.numpy as wnp
        total = psum(leaf, names)
        if tiled:
            total = _reshape(total, shape=shape[:d] + (n, shape[d] // n) + shape[d + 1:])
        return wnp.take(total, axis_index(names), axis=d)
    return tree_map(one, x)


def _named(names):
    return f"axis {names[0]!r}" if len(names) == 1 else f"axes {names!r}"


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
