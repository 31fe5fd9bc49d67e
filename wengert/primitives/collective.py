"""Collectives: operations across the examples of a `wg.vmap` that names its axis.

``wg.vmap(f, axis_name="i")`` traces f on one example; inside it, ``psum(x, axis_name="i")``
stands for the sum of x over every example of that vmap, which one example's trace cannot
know.  So a collective is a primitive whose node has no value of its own (its
implementation raises `NoValue`, and `Graph.apply` makes such a node abstract even where
its arguments have values), and which carries the axis name as a parameter.  The vmap
that binds the name computes it when it evaluates the traced graph on the batch
(`wengert.vectorize.run`): each primitive's ``resolve(args, mapped, node, size)`` gets the
argument with the batch on axis 0 (or shared by every example, ``mapped`` false) and
returns ``(value, mapped)``: a psum of a batch is its sum over axis 0, the same for
every example; of a shared value, size times it.

A vmap that does not bind the name batches the node like any other primitive: its
batching rule (`defbatch`) maps the collective over the vmap's examples, axis parameters
one place right, and an enclosing vmap that binds the name resolves it.  So nested vmaps
each resolve their own names.

A ``groups`` parameter (JAX's ``axis_index_groups``: groups of one size covering the
examples) makes a collective run within each example's group: ``resolve`` lays the batch
out as (groups, members) and computes the collective over the members (`_resolver`).

Derivatives are written with collectives, as graph operations, so every order works:

* ``psum`` is linear, and its transpose is psum (the cotangent of each example's
  argument is the sum of every example's cotangent, as in JAX);
* ``all_gather`` and ``psum_scatter`` are each other's transpose; ``all_to_all``'s is
  all_to_all with its split and concat axes swapped; ``ppermute``'s is the inverse
  permutation;
* ``pmax`` and ``pmin``: the tangent of the examples that attain the extremum, shared
  equally among ties (the rule of ``numpy.max`` over the batch axis, wengert's ``amax``).
  JAX raises NotImplementedError for these.

The front ends, with JAX's signatures and pytrees, are in `wengert.collectives`
(``wengert.lax.psum`` and the rest).

Example:
    >>> import numpy as np, wengert as wg
    >>> from wengert import lax
    >>> wg.vmap(lambda x: x / lax.psum(x, "i"), axis_name="i")(np.array([1.0, 3.0]))
    array([0.25, 0.75])
"""
from __future__ import annotations

import threading

import numpy as np

from ..errors import NoValue
from . import array as A
from . import scalar as S
from .registry import REGISTRY, Primitive, shape_of
from .shape import broadcast_to

__all__ = ["Collective", "psum", "pmax", "pmin", "all_gather", "psum_scatter", "all_to_all",
           "ppermute", "axis_index", "axis_names", "binding", "bound", "bound_names",
           "held_axis_names",
           "resolving", "resolving_axes", "within_group"]


# --------------------------------------------------------------------------------------
# which axis names are bound, and which one is being resolved
# --------------------------------------------------------------------------------------
class _Axes(threading.local):
    def __init__(self):
        self.bound = []         # (name, size) of each vmap tracing its function, innermost last
        self.resolving = []     # the axis name of each vectorize.run in progress


_axes = _Axes()


class binding:
    """Bind `name` to a vmap axis of `size` examples for the block: wg.vmap, while it traces
    the function of one example.  (None binds nothing.)

    Example:
        >>> with binding("i", 4):
        ...     bound("i")
        4
    """

    __slots__ = ("name", "size")

    def __init__(self, name, size):
        self.name, self.size = name, size

    def __enter__(self):
        if self.name is not None:
            _axes.bound.append((self.name, self.size))

    def __exit__(self, *exc):
        if self.name is not None:
            _axes.bound.pop()
        return False


def bound(name):
    """The number of examples of the innermost vmap binding `name`, or None where none
    does.

    Example:
        >>> import numpy as np, wengert as wg
        >>> bound("i") is None
        True
        >>> wg.vmap(lambda x: x + bound("i"), axis_name="i")(np.zeros(3))
        array([3., 3., 3.])
    """
    for n, size in reversed(_axes.bound):
        if n == name:
            return size
    return None


def bound_names() -> list:
    """The names bound now, innermost last.

    Example:
        >>> import numpy as np, wengert as wg
        >>> seen = []
        >>> _ = wg.vmap(wg.vmap(lambda x: seen.append(bound_names()) or x, axis_name="j"),
        ...             axis_name="i")(np.zeros((2, 3)))
        >>> seen
        [['i', 'j']]
    """
    return [n for n, _ in _axes.bound]


def resolving_axes() -> list:
    """The stack `vectorize.run` pushes its axis name on (None too: a vmap without one
    resolves nothing) while it runs.

    Example:
        >>> resolving_axes()
        []
    """
    return _axes.resolving


def resolving():
    """The axis name whose collectives the innermost `vectorize.run` in progress resolves
    (None: none), for the batching rules that batch a graph of their own with it (a
    loop's body).

    Example:
        >>> resolving() is None             # (no vmap is computing a batch)
        True
    """
    return _axes.resolving[-1] if _axes.resolving else None


class Collective(Primitive):
    """A primitive across the examples of a vmap: its node carries ``axis_name`` and has
    no value of its own; the vmap that binds the name computes it (``resolve``).

    Called where none of its arguments is traced (a rule's constant cotangent), it is
    recorded into the graph being traced (`Primitive.__call__` does so on `NoValue`).

    Example:
        >>> import wengert as wg
        >>> g = wg.Graph()
        >>> x = g.input(wg.ShapeDtype((2,)), "x")
        >>> y = all_gather(x, axis_name="i", axis=0, tiled=False, size=3)
        >>> y.shape, y.value is None           # (three examples' x; no value of its own)
        ((3, 2), True)
    """

    def __init__(self, name, resolve, aval, *, linear):
        def impl(*args, axis_name, **params):
            raise NoValue(f"{name} over axis {axis_name!r} has a value only inside the "
                          f"function that wg.vmap or wg.pmap with axis_name={axis_name!r} "
                          "maps")
        super().__init__(name, impl, cost="add", abstract_eval=aval, foldable=False,
                         linear=linear, complex=linear)
        self.builtin = True
        self.resolve = resolve
        REGISTRY[name] = self


def axis_names(graph) -> frozenset:
    """The axis names the collectives of `graph` use, those of the loops in it included
    (a loop's body is a graph of its own: `Loop.axis_names`).

    Example:
        >>> import wengert as wg
        >>> g = wg.Graph()
        >>> x = g.input(wg.ShapeDtype(), "x")
        >>> y = psum(pmax(x, axis_name="j"), axis_name="i")
        >>> sorted(axis_names(g))
        ['i', 'j']
    """
    names = set()
    for n in graph.nodes:
        if type(n.op) is Collective:
            if "axis_name" in n.params:
                names.add(n.params["axis_name"])
        else:
            names |= held_axis_names(n)
    return frozenset(names)


def held_axis_names(node) -> frozenset:
    """The axis names of the collectives that `node`'s operation holds inside it (a loop's
    body, a checkpointed function): its primitive's ``axis_names``, or, where they differ
    from one call to the next (a custom_jvp function, batched by one vmap or not), its
    ``axis_names_of(node)``.

    Example:
        >>> import wengert as wg
        >>> g = wg.Graph()
        >>> x = g.input(wg.ShapeDtype(), "x")
        >>> held_axis_names(psum(x, axis_name="i"))       # (a collective is no holder)
        frozenset()
    """
    of = getattr(node.op, "axis_names_of", None)
    if of is not None:
        return of(node)
    return getattr(node.op, "axis_names", None) or frozenset()


def _same(args, params):
    return args[0].shape, args[0].dtype


def _cast(v, dtype):
    """`v` in the dtype the traced node has (NumPy's sum of int32 is int64)."""
    return v if A.dtype_of(v) == dtype else A.astype(v, dtype=dtype)


def _moved(x, source, dest):
    """x with axis `source` moved to position `dest`."""
    order = [k for k in range(len(shape_of(x))) if k != source]
    order.insert(dest, source)
    return x if order == sorted(order) else A.transpose(x, axes=tuple(order))


# ---- groups of examples ------------------------------------------------------------------
# A collective's value is computed by a "core" from its argument x with the examples of one
# group on axis `lead` (m of them), axes before it counting groups: ``core(x, lead, m, node)``
# returns (value, per_example), the value with one entry per member on axis `lead` where it
# differs from one member to the next, and the value every member shares otherwise.  With
# ``groups`` (JAX's axis_index_groups: equal groups covering the examples) the batch is
# laid out as (groups, members) in the groups' order first, and the result put back in the
# examples' order.
def _order(groups):
    return np.array([e for g in groups for e in g], dtype=np.intp)


def _group_of(groups):
    """For each example, the number of its group."""
    out = np.empty(sum(len(g) for g in groups), dtype=np.intp)
    for k, g in enumerate(groups):
        out[list(g)] = k
    return out


def _resolver(core, shared=None):
    """The ``resolve`` of a collective from its core; `shared(x, m, node)` is its value for
    an argument every example shares (None: that argument is broadcast along the batch)."""
    def resolve(args, mapped, node, size):
        x, m = args[0], mapped[0]
        groups = node.params.get("groups")
        members = size if groups is None else len(groups[0])
        if not m and shared is not None:
            return shared(x, members, node), False
        if not m:
            x = broadcast_to(x, shape=(size,) + tuple(shape_of(x)))
        if groups is None:
            return core(x, 0, size, node)
        order = _order(groups)
        if np.any(order != np.arange(size)):
            x = A.getitem(x, index=(order,))
        x = A.reshape(x, shape=(len(groups), members) + tuple(shape_of(x))[1:])
        out, per_example = core(x, 1, members, node)
        if not per_example:                 # (one value per group: each member gets its own)
            return A.getitem(out, index=(_group_of(groups),)), True
        out = A.reshape(out, shape=(size,) + tuple(node.shape))
        if np.any(order != np.arange(size)):
            out = A.getitem(out, index=(np.argsort(order),))
        return out, True
    return resolve


class _Site:
    """What a core reads of a node: its params, and its result's shape and dtype."""

    __slots__ = ("params", "shape", "dtype")

    def __init__(self, params, shape, dtype):
        self.params, self.shape, self.dtype = params, shape, dtype


def within_group(op, members, **params):
    """The collective `op` (with `params`, no ``axis_name``) within one group of examples
    whose values `members` stacks along axis 0, computed by every member alike (traced
    values: the front ends over several axis names use it after an all_gather):
    ``(value, True)`` with the m members' results along axis 0 where they differ,
    ``(value, False)`` with the one they share otherwise.

    Example:
        >>> import numpy as np
        >>> within_group(psum, np.array([[1.0, 2.0], [3.0, 4.0]]))
        (array([4., 6.]), False)
        >>> within_group(all_to_all, np.arange(4.0).reshape(2, 2), split_axis=0,
        ...              concat_axis=0, tiled=False, size=2)[0]
        array([[0., 2.],
               [1., 3.]])
    """
    m = shape_of(members)[0]
    one = _Example(tuple(shape_of(members))[1:], A.dtype_of(members))
    shape, dtype = op._abstract_eval([one], params)
    return _CORES[op](members, 0, m, _Site(params, tuple(shape), dtype))


class _Example:
    __slots__ = ("shape", "dtype", "value")

    def __init__(self, shape, dtype):
        self.shape, self.dtype, self.value = shape, np.dtype(dtype), None


_CORES = {}


# ---- psum --------------------------------------------------------------------------------
def _psum_core(x, lead, m, node):
    return _cast(A.sum(x, axis=(lead,), keepdims=False), node.dtype), False


def _psum_aval(args, params):
    x = args[0]
    return x.shape, (np.dtype(np.int64) if x.dtype.kind == "b" else x.dtype)


psum = Collective("psum", _resolver(_psum_core, lambda x, m, node: _cast(x * m, node.dtype)),
                  _psum_aval, linear=True)
psum.__doc__ = ("psum(x, axis_name=n[, groups=g]): x summed over the examples of the vmap "
                "named n (within each of the groups g of their positions).")
psum.defvjp(lambda g, x, ans, **params: (psum(g, **params),))
psum.defbatch(lambda args, mapped, node: psum(args[0], **node.params))


# ---- pmax, pmin ----------------------------------------------------------------------------
def _extremum(reduce):
    def core(x, lead, m, node):
        return reduce(x, axis=(lead,), keepdims=False), False
    return core


def _winners(x, ans, params):
    """Each example's share of the extremum's derivative: 1/k for each of the k examples
    that attain it, 0 for the others (as wengert's amax shares among ties)."""
    one = A.dtype_of(x).type(1)
    hit = S.select(S.eq(x, ans), one, one - one)
    return hit / psum(hit, **params)


pmax = Collective("pmax", _resolver(_extremum(A.amax), lambda x, m, node: x), _same,
                  linear=False)
pmin = Collective("pmin", _resolver(_extremum(A.amin), lambda x, m, node: x), _same,
                  linear=False)
pmax.__doc__ = "pmax(x, axis_name=n[, groups=g]): the largest x over the examples of vmap n."
pmin.__doc__ = "pmin(x, axis_name=n[, groups=g]): the smallest x over the examples of vmap n."
_CORES.update({psum: _psum_core, pmax: _extremum(A.amax), pmin: _extremum(A.amin)})
for _p in (pmax, pmin):
    _p.defjvp(lambda ts, x, ans, **params: psum(_winners(x, ans, params) * ts[0], **params))
    _p.defvjp(lambda g, x, ans, **params: (_winners(x, ans, params) * psum(g, **params),))
    _p.defbatch(lambda args, mapped, node: node.op(args[0], **node.params))


# ---- all_gather and psum_scatter: each other's transpose ---------------------------------
def _gather_core(x, lead, m, node):
    out = _moved(x, lead, lead + node.params["axis"])
    if node.params["tiled"]:        # (the examples' blocks one after another along axis)
        out = A.reshape(out, shape=tuple(shape_of(x))[:lead] + tuple(node.shape))
    return out, False


def _gather_shared(x, m, node):
    return _gather_core(broadcast_to(x, shape=(m,) + tuple(shape_of(x))), 0, m, node)[0]


def _gather_aval(args, params):
    shape, axis, size = args[0].shape, params["axis"], params["size"]
    if params["tiled"]:
        return shape[:axis] + (size * shape[axis],) + shape[axis + 1:], args[0].dtype
    return shape[:axis] + (size,) + shape[axis:], args[0].dtype


def _scatter_core(x, lead, m, node):
    total = _cast(A.sum(x, axis=(lead,), keepdims=False), node.dtype)
    d = lead + node.params["scatter_dimension"]
    if node.params["tiled"]:        # (axis d as m blocks, member k's the k-th)
        shape = tuple(shape_of(total))
        total = A.reshape(total, shape=shape[:d] + (m, shape[d] // m) + shape[d + 1:])
    return _moved(total, d, lead), True


def _scatter_aval(args, params):
    shape, d, size = args[0].shape, params["scatter_dimension"], params["size"]
    if params["tiled"]:
        return shape[:d] + (shape[d] // size,) + shape[d + 1:], args[0].dtype
    return shape[:d] + shape[d + 1:], args[0].dtype


all_gather = Collective("all_gather", _resolver(_gather_core, _gather_shared), _gather_aval,
                        linear=True)
all_gather.__doc__ = ("all_gather(x, axis_name=n, axis=a, tiled=t, size=s[, groups=g]): "
                      "every example's x (of its group), stacked (or joined, if tiled) "
                      "along axis a.")
psum_scatter = Collective("psum_scatter", _resolver(_scatter_core), _scatter_aval,
                          linear=True)
psum_scatter.__doc__ = ("psum_scatter(x, axis_name=n, scatter_dimension=d, tiled=t, size=s"
                        "[, groups=g]): the psum of x, example k (of its group) keeping the "
                        "k-th part along d.")
_CORES.update({all_gather: _gather_core, psum_scatter: _scatter_core})
all_gather.defvjp(lambda g, x, ans, axis, **params: (psum_scatter(
    g, scatter_dimension=axis, **params),))
psum_scatter.defvjp(lambda g, x, ans, scatter_dimension, **params: (all_gather(
    g, axis=scatter_dimension, **params),))
# (another vmap's batch in front: the axes of one example one place right)
all_gather.defbatch(lambda args, mapped, node: all_gather(
    args[0], **{**node.params, "axis": node.params["axis"] + 1}))
psum_scatter.defbatch(lambda args, mapped, node: psum_scatter(
    args[0], **{**node.params, "scatter_dimension": node.params["scatter_dimension"] + 1}))


# ---- all_to_all: its own transpose, split and concat axes swapped ------------------------
def _all_to_all_core(x, lead, m, node):
    """Member p's result: member q's p-th part along split_axis, for every q, placed along
    concat_axis in q's order (stacked on a new axis, or joined if tiled)."""
    split, concat = lead + 1 + node.params["split_axis"], node.params["concat_axis"]
    shape = tuple(shape_of(x))
    if node.params["tiled"]:        # (split_axis as m blocks: the p-th block is p's)
        x = A.reshape(x, shape=shape[:split] + (m, shape[split] // m) + shape[split + 1:])
    x = _moved(x, split, lead)                  # (..., p, q, one part)
    x = _moved(x, lead + 1, lead + 1 + concat)  # (..., p, the parts in q's order)
    if node.params["tiled"]:
        x = A.reshape(x, shape=shape[:lead] + (m,) + tuple(node.shape))
    return x, True


def _all_to_all_aval(args, params):
    shape, m = list(args[0].shape), params["size"]
    split, concat = params["split_axis"], params["concat_axis"]
    if params["tiled"]:
        shape[split] //= m
        shape[concat] *= m
    else:
        del shape[split]
        shape.insert(concat, m)
    return tuple(shape), args[0].dtype


all_to_all = Collective("all_to_all", _resolver(_all_to_all_core), _all_to_all_aval,
                        linear=True)
all_to_all.__doc__ = ("all_to_all(x, axis_name=n, split_axis=s, concat_axis=c, tiled=t, "
                      "size=m[, groups=g]): example p gets every example's p-th part of x "
                      "along s, placed along c.")
_CORES[all_to_all] = _all_to_all_core
all_to_all.defvjp(lambda g, x, ans, split_axis, concat_axis, **params: (all_to_all(
    g, split_axis=concat_axis, concat_axis=split_axis, **params),))
all_to_all.defbatch(lambda args, mapped, node: all_to_all(args[0], **{
    **node.params, "split_axis": node.params["split_axis"] + 1,
    "concat_axis": node.params["concat_axis"] + 1}))


# ---- ppermute ------------------------------------------------------------------------------
def _sources(perm, size):
    """For each example, the example whose value it receives (-1: none, it gets zeros)."""
    src = [-1] * size
    for s, d in perm:
        src[d] = s
    return src


def _ppermute_resolve(args, mapped, node, size):
    x, m = args[0], mapped[0]
    src = _sources(node.params["perm"], size)
    if m:
        x = A.getitem(x, index=(np.array([max(s, 0) for s in src], dtype=np.intp),))
    if min(src, default=0) >= 0:
        return x, m                 # (a permutation of every example)
    got = np.array([s >= 0 for s in src]).reshape((size,) + (1,) * len(node.shape))
    return S.select(got, x, np.zeros((), node.dtype)), True


ppermute = Collective("ppermute", _ppermute_resolve, _same, linear=True)
ppermute.__doc__ = ("ppermute(x, axis_name=n, perm=((source, destination), ...)): each "
                    "destination example receives its source's x, the others zeros.")
ppermute.defvjp(lambda g, x, ans, axis_name, perm: (ppermute(
    g, axis_name=axis_name, perm=tuple((d, s) for s, d in perm)),))
ppermute.defbatch(lambda args, mapped, node: ppermute(args[0], **node.params))


# ---- axis_index ------------------------------------------------------------------------------
axis_index = Collective(
    "axis_index", lambda args, mapped, node, size: (np.arange(size, dtype=np.int32), True),
    lambda args, params: ((), np.dtype(np.int32)), linear=False)
axis_index.__doc__ = "axis_index(axis_name=n): the example's position in the vmap named n."
