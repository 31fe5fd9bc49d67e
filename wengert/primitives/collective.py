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

Derivatives are written with collectives, as graph operations, so every order works:

* ``psum`` is linear, and its transpose is psum (the cotangent of each example's
  argument is the sum of every example's cotangent, as in JAX);
* ``all_gather`` and ``psum_scatter`` are each other's transpose; ``ppermute``'s is the
  inverse permutation;
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

__all__ = ["Collective", "psum", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute",
           "axis_index", "axis_names", "binding", "bound", "bound_names", "resolving",
           "resolving_axes"]


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
            inner = getattr(n.op, "axis_names", None)
            if inner:
                names |= inner
    return frozenset(names)


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


# ---- psum --------------------------------------------------------------------------------
def _psum_resolve(args, mapped, node, size):
    x, m = args[0], mapped[0]
    out = A.sum(x, axis=(0,), keepdims=False) if m else x * size
    return _cast(out, node.dtype), False


def _psum_aval(args, params):
    x = args[0]
    return x.shape, (np.dtype(np.int64) if x.dtype.kind == "b" else x.dtype)


psum = Collective("psum", _psum_resolve, _psum_aval, linear=True)
psum.__doc__ = "psum(x, axis_name=n): x summed over the examples of the vmap named n."
psum.defvjp(lambda g, x, ans, axis_name: (psum(g, axis_name=axis_name),))
psum.defbatch(lambda args, mapped, node: psum(args[0], **node.params))


# ---- pmax, pmin ----------------------------------------------------------------------------
def _extremum(reduce):
    def resolve(args, mapped, node, size):
        x, m = args[0], mapped[0]
        return (reduce(x, axis=(0,), keepdims=False) if m else x), False
    return resolve


def _winners(x, ans, axis_name):
    """Each example's share of the extremum's derivative: 1/k for each of the k examples
    that attain it, 0 for the others (as wengert's amax shares among ties)."""
    one = A.dtype_of(x).type(1)
    hit = S.select(S.eq(x, ans), one, one - one)
    return hit / psum(hit, axis_name=axis_name)


pmax = Collective("pmax", _extremum(A.amax), _same, linear=False)
pmin = Collective("pmin", _extremum(A.amin), _same, linear=False)
pmax.__doc__ = "pmax(x, axis_name=n): the largest x over the examples of the vmap named n."
pmin.__doc__ = "pmin(x, axis_name=n): the smallest x over the examples of the vmap named n."
for _p in (pmax, pmin):
    _p.defjvp(lambda ts, x, ans, axis_name: psum(_winners(x, ans, axis_name) * ts[0],
                                                 axis_name=axis_name))
    _p.defvjp(lambda g, x, ans, axis_name: (_winners(x, ans, axis_name) *
                                            psum(g, axis_name=axis_name),))
    _p.defbatch(lambda args, mapped, node: node.op(args[0], **node.params))


# ---- all_gather and psum_scatter: each other's transpose ---------------------------------
def _gather_resolve(args, mapped, node, size):
    x = args[0] if mapped[0] else broadcast_to(args[0], shape=(size,) + tuple(
        shape_of(args[0])))
    axis = node.params["axis"]
    out = _moved(x, 0, axis)
    if node.params["tiled"]:        # (the examples' blocks one after another along axis)
        out = A.reshape(out, shape=tuple(node.shape))
    return out, False


def _gather_aval(args, params):
    shape, axis, size = args[0].shape, params["axis"], params["size"]
    if params["tiled"]:
        return shape[:axis] + (size * shape[axis],) + shape[axis + 1:], args[0].dtype
    return shape[:axis] + (size,) + shape[axis:], args[0].dtype


def _scatter_resolve(args, mapped, node, size):
    x, m = args[0], mapped[0]
    total = A.sum(x, axis=(0,), keepdims=False) if m else x * size
    total = _cast(total, node.dtype)
    d = node.params["scatter_dimension"]
    if node.params["tiled"]:        # (axis d as size blocks, example k's the k-th)
        shape = tuple(shape_of(total))
        total = A.reshape(total, shape=shape[:d] + (size, shape[d] // size) + shape[d + 1:])
    return _moved(total, d, 0), True


def _scatter_aval(args, params):
    shape, d, size = args[0].shape, params["scatter_dimension"], params["size"]
    if params["tiled"]:
        return shape[:d] + (shape[d] // size,) + shape[d + 1:], args[0].dtype
    return shape[:d] + shape[d + 1:], args[0].dtype


all_gather = Collective("all_gather", _gather_resolve, _gather_aval, linear=True)
all_gather.__doc__ = ("all_gather(x, axis_name=n, axis=a, tiled=t, size=s): every "
                      "example's x, stacked (or joined, if tiled) along axis a.")
psum_scatter = Collective("psum_scatter", _scatter_resolve, _scatter_aval, linear=True)
psum_scatter.__doc__ = ("psum_scatter(x, axis_name=n, scatter_dimension=d, tiled=t, "
                        "size=s): the psum of x, example k keeping the k-th part along d.")
all_gather.defvjp(lambda g, x, ans, axis_name, axis, tiled, size: (psum_scatter(
    g, axis_name=axis_name, scatter_dimension=axis, tiled=tiled, size=size),))
psum_scatter.defvjp(lambda g, x, ans, axis_name, scatter_dimension, tiled, size: (all_gather(
    g, axis_name=axis_name, axis=scatter_dimension, tiled=tiled, size=size),))
# (another vmap's batch in front: the axes of one example one place right)
all_gather.defbatch(lambda args, mapped, node: all_gather(
    args[0], **{**node.params, "axis": node.params["axis"] + 1}))
psum_scatter.defbatch(lambda args, mapped, node: psum_scatter(
    args[0], **{**node.params, "scatter_dimension": node.params["scatter_dimension"] + 1}))


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
