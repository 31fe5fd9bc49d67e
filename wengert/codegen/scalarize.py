"""Scalarisation: a graph of small arrays rewritten as a graph of scalars.

Straight-line code on plain floats is what makes tiny problems fast (a NumPy call costs
about a microsecond whatever the size of its arrays), and it is what C and FORTRAN are
written in.  So a graph whose arrays are small is rewritten element by element: every
array node becomes a NumPy object array of scalar nodes of a new graph, built through
`Graph.apply`, so interning and simplification run again on the scalars (the VJP of
``x[i]``, zeros with one entry, adds away to nothing).

* Elementwise primitives apply to each element (with NumPy's broadcasting).
* Structural primitives (reshape, transpose, indexing, sums, matmul, concatenate, ...) run
  their own NumPy implementation on the object arrays: NumPy moves the nodes around, and
  the sums and products it does on them record scalar operations.
* A primitive that cannot be written so (linear algebra, convolutions, a sort, a max whose
  comparison would need a value) makes `scalarize` return None: the graph stays an array
  graph for the NumPy back-end.

Float code (Python floats) holds float64 values and bools; C (``integers=True``) holds
int64 values as what they are too, so conversions and a loop's integer values stay nodes
of the scalar graph (`astype`, `bitcast`) for it to write.
"""
from __future__ import annotations

import numpy as np

from ..errors import ConcretizationError
from ..graph.graph import Graph, ShapeDtype
from ..graph.node import Node
from ..primitives import array as A, elements as E
from ..primitives.pack import bitcast, part
from ..primitives import scalar as S
from ..primitives.registry import CONST, INPUT

#: Above this many array elements in the live graph, arrays stay arrays ...
LIMIT = 200_000
#: ... and above this many scalar nodes, scalarisation gives up.
MAX_NODES = 20_000


class Scalarized:
    """A scalar graph for an array graph: ``graph.inputs`` / ``graph.outputs`` are the
    elements of the original inputs / outputs in order (each in C order), and
    ``in_shapes`` / ``out_shapes`` their shapes.  ``loops`` maps each loop of the scalar
    graph (a scan's or a while loop's `flat` primitive, see `scalar_form`'s ``loops``) to
    its body's `Scalarized`."""

    def __init__(self, graph, in_shapes, out_shapes, in_dtypes, out_dtypes, loops=None):
        self.graph = graph
        self.in_shapes, self.out_shapes = in_shapes, out_shapes
        self.in_dtypes, self.out_dtypes = in_dtypes, out_dtypes
        self.loops = loops or {}


def not_float(nodes, counters=False, outputs=(), integers=False):
    """The first of `nodes` whose dtype is neither float64 nor bool (None if there is
    none): float code (Python floats, C doubles) represents exactly those two as NumPy
    does.  A bool made by arithmetic counts too: NumPy's True + True is True, Python's 2
    (a bool matmul or sum of products).

    With ``counters``, an integer constant or input (a loop's counter, ``fori_loop``'s
    ``i``) passes where it is none of the `outputs`: what reads it must pass in turn, so
    it is read by float arithmetic, which NumPy too does after converting it to float64,
    or compared (exact up to 2**53).

    With ``integers`` (typed code: C), int64 values pass wherever they are, and so does
    a bool made by arithmetic, which C writes as NumPy computes it (``||``, ``&&``)."""
    returned = {o.index for o in outputs}
    for n in nodes:
        if n.dtype == np.float64:
            continue
        if integers and (n.dtype == np.int64 or n.dtype.kind == "b"):
            continue
        if counters and n.dtype.kind in "iu" and (n.op is CONST or n.op is INPUT) and \
                n.index not in returned:
            continue
        if n.dtype.kind != "b" or n.op.cost == "add" or n.op.cost == "mul":
            return n
    return None


def elementwise(op) -> bool:
    """Whether a primitive acts element by element: declared with partial derivatives and
    the broadcasting shape rule (the scalar primitives, relu, select), or a user's
    primitive declared with partials (which the rules of `wg.primitive` make elementwise)."""
    if op.partials is None:
        return False
    if op.builtin:
        # (a built-in's VJP of its own, select's, changes how it is differentiated, not
        # what it computes)
        return op.elementwise
    return op.jvp is None and op.vjp is None and op.vjps is None


def _filled(shape, node):
    out = np.empty(shape, dtype=object)
    flat = out.reshape(-1)
    for k in range(flat.size):          # (np.full would ask the node for an array)
        flat[k] = node
    return out


def _index_add(new, g, index, shape):
    out = _filled(shape, new.const(0.0))
    np.add.at(out, A.decode_index(index), g)
    return out


def _extremum(which):
    def reduce(new, x, axis, keepdims):
        pick = np.frompyfunc(which, 2, 1)            # maximum(a, b) nodes, no comparisons
        axes = tuple(range(x.ndim)) if axis is None else axis
        for a in sorted(axes, reverse=True):
            x = pick.reduce(x, axis=a, keepdims=keepdims)
        return x
    return reduce


def _astype(new, x, dtype):
    # (exact conversions only; an integer is a float already in float code: see not_float)
    dtype, kind = np.dtype(dtype), _kind(x)
    if _dtype(x) == dtype:
        return x
    if dtype == np.float64 and kind in "iuf":
        return x
    if dtype == np.float64 and kind == "b":
        return np.frompyfunc(lambda b: new.apply(S.select, (b, 1.0, 0.0)), 1, 1)(x)
    if dtype.kind == "b" and kind == "f":               # (nan is True, as NumPy's)
        return np.frompyfunc(lambda v: new.apply(S.ne, (v, 0.0)), 1, 1)(x)
    raise NotImplementedError(f"astype from {kind} to {dtype}")


def _typed_astype(new, x, dtype):
    """astype in typed code (C): a conversion to or from int64 is an ``astype`` node of
    each element (truncation toward zero from float64, as NumPy's; 0 or 1 from bool), an
    int64's truth ``x != 0``; the rest as in float code (`_astype`)."""
    dtype, src = np.dtype(dtype), _dtype(x)
    if src == dtype:
        return x
    # (a narrower integer, a counter of not_float's, is an exact double in C)
    narrow = src.kind in "iu" and src.itemsize < 8
    if dtype == np.int64 and (src == np.float64 or src.kind == "b" or narrow) or \
            src == np.int64 and dtype == np.float64:
        return np.frompyfunc(lambda v: new.apply(A.astype, (v,), {"dtype": dtype}), 1, 1)(x)
    if src == np.int64 and dtype.kind == "b":
        return np.frompyfunc(lambda v: new.apply(S.ne, (v, 0)), 1, 1)(x)
    if src == np.int64 or dtype.kind in "iu":
        raise NotImplementedError(f"astype from {src} to {dtype}")
    return _astype(new, x, dtype)


def _bitcast(new, x, dtype):
    """bitcast in typed code (C), element by element: how a loop's value holds an int64
    among floats (`Layout`).  A bitcast of a bitcast is the value it began as."""
    dtype = np.dtype(dtype)

    def one(v):
        if type(v) is Node and v.op is bitcast and v.args[0].dtype == dtype:
            return v.args[0]
        return new.apply(bitcast, (v,), {"dtype": dtype.name})
    return np.frompyfunc(one, 1, 1)(x)


def _dtype(x):
    """The dtype of an array of nodes (or of a constant's value)."""
    x = np.asarray(x)
    if x.dtype != object:
        return x.dtype
    return x.reshape(-1)[0].dtype if x.size else np.dtype(float)


def _kind(x):
    """The dtype kind of an array of nodes (or of a constant's value)."""
    return _dtype(x).kind


def _as_nodes(new, x):
    """x as an object array of nodes of `new` (a constant's value: one constant each)."""
    x = np.asarray(x)
    if x.dtype == object:
        return x
    out = np.empty(x.shape, dtype=object)
    flat = out.reshape(-1)
    for k, v in enumerate(x.reshape(-1).tolist()):
        flat[k] = new.const(v)
    return out


def _index_set(new, x, v, index):
    # (into a constant x as an array of nodes: NumPy's assignment into its values would
    # cast the nodes to their dtype; nodes of another dtype are what it would cast)
    if np.asarray(v).dtype == object and _dtype(v) != _dtype(x):
        raise NotImplementedError(f"{_dtype(v)} values set in an array of {_dtype(x)}")
    return A.index_set.impl(_as_nodes(new, x), v, index=index)


#: Structural primitives whose NumPy implementation cannot run on nodes, written for them.
_OBJECT_IMPLS = {
    A.astype: _astype,
    A.index_add: _index_add,
    A.index_set: _index_set,
    A.amax: _extremum(S.maximum),
    A.amin: _extremum(S.minimum),
}


def _ufunc(new, *xs, ufunc):
    """numpy_ufunc (NumPy's ufunc on integers and bools: ``i // j``, ``maximum(i, j)``),
    element by element, for typed code (C) to write as the ufunc computes it."""
    return np.frompyfunc(lambda *a: new.apply(S.numpy_ufunc, a, {"ufunc": ufunc}),
                         len(xs), 1)(*xs)


def _index(new, i, size):
    """Index node i of an axis of `size`, counted from the start and checked
    (`checked_index`); a constant in range is its own number."""
    if i.op is CONST and -size <= int(i.value) < size:
        v = int(i.value)
        return new.const(np.int64(v + size if v < 0 else v))
    return new.apply(E.checked_index, (i,), {"size": size})


def _pick(new, w, lane):
    """The element at index node w (from `_index`) of the nodes `lane`."""
    if w.op is CONST:
        return lane[int(w.value)]
    if all(e.op is CONST and e.dtype.kind in "iu" and e.value == k
           for k, e in enumerate(lane)):
        return w            # (the positions themselves: how x.at[i].set(v) finds i)
    return new.apply(E.pick, (w, *lane))


def _traced_index(idx):
    """Whether an index array holds nodes, and is of int64 ones (NumPy's own code takes
    a constant one; an index of another dtype has no element-by-element form)."""
    idx = np.asarray(idx)
    if idx.dtype != object:
        return False
    if _dtype(idx) != np.int64:
        raise NotImplementedError(f"an index of dtype {_dtype(idx)}")
    return True


def _take_along(new, x, idx, axis):
    """take_along_axis in typed code (C) with a traced index: each element of the result
    a `pick` of its lane of x at its index, checked once (`_index`).  NumPy's rules: an
    x of one axis takes an index of any shape; else x and the index broadcast against
    each other on every axis but `axis`."""
    if not _traced_index(idx):
        return A.take_along_axis.impl(x, idx, axis=axis)
    x, idx = _as_nodes(new, x), np.asarray(idx)
    axis %= x.ndim
    n = x.shape[axis]
    if n == 0:
        raise NotImplementedError("a gather from an empty axis")
    if x.ndim == 1:
        out, lane = np.empty(idx.shape, dtype=object), list(x)
        for p in np.ndindex(*idx.shape):
            out[p] = _pick(new, _index(new, idx[p], n), lane)
        return out
    if idx.ndim != x.ndim:
        raise NotImplementedError("an index of another number of axes")
    around = lambda s: s[:axis] + (1,) + s[axis + 1:]
    common = np.broadcast_shapes(around(x.shape), around(idx.shape))
    shape = common[:axis] + (idx.shape[axis],) + common[axis + 1:]
    x = np.broadcast_to(x, common[:axis] + (n,) + common[axis + 1:])
    idx = np.broadcast_to(idx, shape)
    out = np.empty(shape, dtype=object)
    for p in np.ndindex(*shape):
        lane = list(x[p[:axis] + (slice(None),) + p[axis + 1:]])
        out[p] = _pick(new, _index(new, idx[p], n), lane)
    return out


def _put_along(new, g, idx, axis, shape):
    """put_along_axis (zeros of `shape` with g added at idx along `axis`: the transpose
    of a gather) in typed code (C), for a traced or a constant index: each element of a
    lane the `scatter_sum` of the values put in that lane at its position, in the order
    of the primitive's bincount (or add.at's, for int64 and bool values), so that sums at
    a repeated index round alike."""
    g, idx = _as_nodes(new, g), _as_nodes(new, idx)
    # (int64 and bool values add into the primitive's float64 zeros as floats)
    g = _typed_astype(new, g, np.float64)
    if _dtype(idx) != np.int64:
        raise NotImplementedError(f"an index of dtype {_dtype(idx)}")
    axis %= len(shape)
    n = shape[axis]
    if len(shape) == 1:
        extent = np.broadcast_shapes(g.shape, idx.shape)
    else:
        # (the primitive adds a place along each other axis of more than one element)
        places = tuple(1 if d == axis or s == 1 else s for d, s in enumerate(shape))
        extent = np.broadcast_shapes(g.shape, idx.shape, places)
        if len(extent) != len(shape):
            raise NotImplementedError("an index of another number of axes")
    g, idx = np.broadcast_to(g, extent), np.broadcast_to(idx, extent)
    lanes = {}                  # the lane's place on the other axes -> (indices, values)
    for p in np.ndindex(*extent):
        at = () if len(shape) == 1 else \
            tuple(0 if s == 1 else p[d] for d, s in enumerate(shape) if d != axis)
        ws, gs = lanes.setdefault(at, ([], []))
        ws.append(_index(new, idx[p], n))
        gs.append(g[p])
    out = _filled(shape, new.const(0.0))
    for at, (ws, gs) in lanes.items():
        for j in range(n):
            if all(w.op is CONST for w in ws):
                total = new.const(0.0)
                for w, v in zip(ws, gs):
                    if int(w.value) == j:
                        total = new.apply(S.add, (total, v))
            else:
                total = new.apply(E.scatter_sum, (*ws, *gs), {"at": j, "size": n})
            out[at[:axis] + (j,) + at[axis:]] = total
    return out


#: ... and those of typed code (C), which holds int64 values as they are.
_TYPED_IMPLS = {**_OBJECT_IMPLS, A.astype: _typed_astype, bitcast: _bitcast,
                S.numpy_ufunc: _ufunc, A.take_along_axis: _take_along,
                A.put_along_axis: _put_along}


class NotScalar(ValueError):
    """A graph has no scalar form here; the message says why."""


def scalarize(graph, limit=LIMIT, max_nodes=MAX_NODES):
    """`float_form`, or None where there is none."""
    try:
        return float_form(graph, limit, max_nodes)
    except NotScalar:
        return None


def float_form(graph, limit=LIMIT, max_nodes=MAX_NODES, loops=False, integers=False):
    """`scalar_form` of a graph float code can compute (Python floats, C doubles): its
    values float64 or bool, and no bool made by arithmetic (`not_float`; with ``loops``,
    a loop's integer counter is allowed too; with ``integers``, for typed code (C),
    int64 values and bool arithmetic too).  Raises `NotScalar`, saying why, where there
    is none."""
    live = graph.live_nodes()
    if loops:
        from ..loops import Loop
        for n in live:
            # (the bodies first: an integer carry made there comes out of the loop packed
            # as its bits, and the ``bitcast`` that unpacks them would name nothing the
            # user wrote)
            if isinstance(n.op, Loop):
                _check_float(n.op.body.live_nodes(), True, n.op.body.outputs,
                             f", in the body of {n.op.name}", integers)
    _check_float(live, loops, graph.outputs, "", integers)
    return scalar_form(graph, limit, max_nodes, loops, integers)


def _check_float(nodes, counters, outputs, where="", integers=False):
    """Raise `NotScalar` naming the first of `nodes` float code cannot compute
    (`not_float`), and `where` it is."""
    odd = not_float(nodes, counters, outputs, integers)
    if odd is not None and odd.dtype.kind == "b":
        what = "sum" if odd.op.cost == "add" else "product"
        raise NotScalar(f"a {what} of truth values ({odd.op.name}: NumPy's True + True is "
                        f"True, where float code's is 2){where}")
    if odd is not None:
        held = " (C computes float64, int64 and bool values)" if integers else ""
        raise NotScalar(f"a value of dtype {odd.dtype} ({odd.op.name}){held}{where}")


def scalar_form(graph, limit=LIMIT, max_nodes=MAX_NODES, loops=False, integers=False):
    """The scalar graph of `graph` (a `Scalarized`).  Raises `NotScalar` if it has more
    than `limit` array elements, would have more than `max_nodes` nodes, or has a
    primitive that cannot be written element by element.  (Many elements may give few
    nodes: most entries of a Hessian's forward sweeps are zeros, and simplification
    folds them away.)

    With ``loops`` (code that can write a loop: C), a loop (a scan, a while loop) stays
    a loop: one node of its `flat` primitive, whose arguments are the elements of the
    loop's and whose value is a vector of the elements of the loop's value (each read by
    a ``part`` node), and its body is scalarised in turn (``Scalarized.loops``).
    Without, a loop has no scalar form.

    Example:
        >>> import numpy as np, wengert as wg
        >>> g = wg.trace(lambda x: (x * x).sum(), np.ones(3))
        >>> s = scalar_form(g)
        >>> print(s.graph)
        graph(x[0]: f64[], x[1]: f64[], x[2]: f64[]):
          %3: f64[] = mul(x[0], x[0])
          %4: f64[] = mul(x[1], x[1])
          %5: f64[] = mul(x[2], x[2])
          %6: f64[] = add(%3, %4)
          %7: f64[] = add(%5, %6)
          return %7
    """
    live = graph.live_nodes()
    elements = sum(n.size for n in live if n.op is not CONST)
    if elements > limit:
        raise NotScalar(f"arrays of {elements:,} elements in all, more than the {limit:,} "
                        "written element by element")
    new = Graph(optimize=graph.optimize, ieee=graph.ieee)
    elems = {}                          # node index -> object array of scalar nodes
    bodies = {}                         # flat loop primitive -> its body's Scalarized
    impls = _TYPED_IMPLS if integers else _OBJECT_IMPLS
    if loops:
        from ..loops import Loop        # (loops.py builds on the transformations)
    inputs = []
    for node in graph.inputs:
        arr = np.empty(node.shape, dtype=object)
        name = node.label()
        for i in np.ndindex(*node.shape):
            label = name if not node.shape else f"{name}[{','.join(map(str, i))}]"
            arr[i] = new.input(ShapeDtype((), node.dtype), label)
            inputs.append(arr[i])
        elems[node.index] = arr

    def const_array(value):
        a = np.asarray(value)
        out = np.empty(a.shape, dtype=object)
        flat = out.reshape(-1)
        for k, v in enumerate(a.reshape(-1).tolist()):
            flat[k] = new.const(v)
        return out

    def as_nodes(result, node):
        if type(result) is not np.ndarray:            # a single element came back
            one = np.empty((), dtype=object)
            one[()] = result
            result = one
        # (C order: the loop below writes through a view, and an impl may give another
        # layout, as concatenate does of transposed parts)
        result = np.asarray(result, dtype=object, order="C")
        if result.shape != node.shape:
            return None
        flat = result.reshape(-1)
        for k, v in enumerate(flat):
            while type(v) is np.ndarray and v.shape == ():
                # (an impl that assigns a 0-d object array into an element, as index_set
                # does with a scalar it was given, stores the array itself)
                v = flat[k] = v[()]
            if type(v) is not Node:
                # (of the node's dtype: an empty sum of object arrays is the int 0)
                flat[k] = new.const(np.asarray(v).astype(node.dtype, copy=False).item())
            elif integers and v.dtype != node.dtype:
                of = ", ".join(str(a.dtype) for a in node.args)
                raise NotScalar(f"{node.op.name} of {of} values, whose elements written one "
                                f"by one would be {v.dtype} where NumPy's are {node.dtype}")
        return result

    with np.errstate(all="ignore"):
        for node in live:
            if node.index in elems:
                continue
            op = node.op
            if op is CONST:
                elems[node.index] = const_array(node.value)
                continue
            if op is INPUT:                            # an input the graph was not given
                raise NotScalar(f"an input, {node.label()}, that is not the graph's")
            if getattr(op, "draws", False):            # (lax.rng_uniform: not a constant)
                raise NotScalar(f"{op.name}, which draws new numbers at every run")
            args = [elems[a.index] for a in node.args]
            if loops and isinstance(op, Loop):
                elems[node.index] = _loop(new, op, args, node, bodies, limit, max_nodes,
                                          integers)
                continue
            try:
                if elementwise(op):
                    params = node.params
                    fn = np.frompyfunc(lambda *xs: new.apply(op, xs, params), len(args), 1)
                    out = fn(*args)
                else:
                    # constants go in as their values (an index array must stay one)
                    vals = [a.value if a.op is CONST else e for a, e in zip(node.args, args)]
                    impl = impls.get(op)
                    out = (impl(new, *vals, **node.params) if impl is not None
                           else op.impl(*vals, **node.params))
                out = as_nodes(out, node)
            except NotScalar:
                raise
            except (TypeError, ValueError, AttributeError, IndexError, ConcretizationError,
                    NotImplementedError):
                # (AttributeError: a NumPy ufunc on nodes, which asks them for a method
                # of its name: numpy_ufunc's, which float code has no spelling for;
                # IndexError: take_along_axis and put_along_axis want integer arrays)
                out = None
            if out is None:
                raise NotScalar(f"{op.name}, a primitive that has no element-by-element "
                                "form")
            elems[node.index] = out
            if len(new.nodes) > max_nodes:
                raise NotScalar(f"more than {max_nodes:,} operations once written element "
                                "by element")
    outputs = []
    for o in graph.outputs:
        outputs.extend(elems[o.index].reshape(-1).tolist())
    new.inputs, new.outputs = inputs, outputs
    return Scalarized(new, [n.shape for n in graph.inputs], [o.shape for o in graph.outputs],
                      [n.dtype for n in graph.inputs], [o.dtype for o in graph.outputs],
                      bodies)


def _loop(new, loop, args, node, bodies, limit, max_nodes, integers=False):
    """The elements of a loop's value (a `Scan`'s or a `While`'s), as read from one node
    of its `flat` primitive in the scalar graph `new`; its body's scalar form goes into
    `bodies`.  (With ``integers``, a loop whose whole value is one int64 or bool value
    has its elements read back in that dtype: the flat value holds an int64 as its bits,
    a bool as 0.0 or 1.0, as `Layout` packs them among floats.)"""
    flat = loop.flat()
    if flat not in bodies:
        try:
            bodies[flat] = float_form(loop.body, limit, max_nodes, loops=True,
                                      integers=integers)
        except NotScalar as e:
            raise NotScalar(f"{e}, in the body of {loop.name}") from None
    call = new.apply(flat, [e for a in args for e in a.reshape(-1).tolist()])
    out = np.empty(node.shape, dtype=object)
    flat_out = out.reshape(-1)
    for k in range(flat_out.size):
        element = new.apply(part, [call], {"start": k, "stop": k + 1, "shape": ()})
        if integers and node.dtype == np.int64:
            element = new.apply(bitcast, [element], {"dtype": "int64"})
        elif integers and node.dtype.kind == "b":
            element = new.apply(S.ne, [element, 0.0])
        flat_out[k] = element
    return out
