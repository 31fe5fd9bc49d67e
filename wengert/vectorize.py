"""wg.vmap: a function of one example, applied to a whole batch at once.

``wg.vmap(f)(xs)`` is ``stack([f(x) for x in xs])``, computed without the loop.  It works in
two steps, both on the graph:

1. **Trace one example.**  f is traced on abstract values of one example's shape (the
   batch axis taken off each mapped argument).  Arguments that are not mapped are passed
   to f as they are, and values of an enclosing transformation that f uses (the weights
   a per-example loss closes over) become extra inputs of the trace: the batched graph
   is later evaluated on them, so derivatives flow through to them.
2. **Evaluate that graph on the batch.**  Each operation whose arguments are all shared
   is done once, as in the example; one with a batched argument goes through its
   primitive's batching rule (wengert.primitives.batching), which adds one leading axis.
   A primitive without a rule is batched through its decomposition if it has one, and
   otherwise called once per example and the results stacked.

Every step calls primitives, so a vmap inside `wg.grad` records into the gradient's graph
(its derivative is that of the batched computation) and `wg.compile(wg.vmap(f))` traces
the batched graph once.  ``wg.vmap(wg.grad(f))`` gives per-example gradients: the trace of
one example holds f's gradient graph, which is then batched like any other.

As with `wg.trace`, Python control flow in f cannot depend on the values of mapped
arguments (`ConcretizationError` says so): write such a branch with `wengert.numpy.where`.

``wg.vmap(f, axis_name="i")`` binds a name for the collectives in f (``lax.psum(x, "i")``,
`wengert.collectives`) while it traces f; each is a node without a value, which step 2
computes from the whole batch (its primitive's ``resolve``: a psum of a batch sums axis
0).  A collective over another name is batched like any primitive, for the enclosing
vmap that binds that name.
"""
from __future__ import annotations

import functools

import numpy as np

from .api import _check_fun, _leaf_names, _param_names
from .graph.active import recording
from .graph.graph import Graph, ShapeDtype
from .graph.node import Node
from .primitives import array as A
from .primitives import batching  # noqa: F401  (declares the rules)
from .primitives.batching import batched
from .primitives.collective import binding, held_axis_names, resolving_axes
from .primitives.registry import CONST, INPUT, shape_of
from .tree import dict_keys, flatten, hold_constants, key_order, registered, unflatten

__all__ = ["vmap"]


def vmap(f, in_axes=0, out_axes=0, axis_size=None, axis_name=None):
    """Vectorise f over a batch axis: ``vmap(f)(xs)`` equals ``stack([f(x) for x in xs])``.

    Args:
        f: a function of arrays (and pytrees of arrays) written for one example.
        in_axes: which axis of each argument is the batch: an int for all arguments, or a
            tuple with one entry per positional argument, each an int, None (the argument
            is shared by every example, passed to f as it is) or a pytree prefix of that
            argument with ints and Nones. Negative axes count from the end. Keyword
            arguments are mapped over axis 0, as in JAX.
        out_axes: where the batch axis goes in each output: an int, None (the output must
            be the same for every example) or a pytree prefix of the output.
        axis_size: the number of examples, needed only where no argument is mapped (as
            in JAX); where some are, they must have that many.
        axis_name: a name (any hashable but a tuple or list) for the batch axis, which
            the collectives in f take: ``wengert.lax.psum(x, axis_name)`` is the sum of x
            over the examples, and pmean, pmax, pmin, all_gather, psum_scatter,
            ppermute, axis_index and axis_size are there too (docs/vmap.md). Nested
            vmaps bind a name each, and a collective can name any of them.

    Returns:
        The batched function. Every argument mapped must have the same length along its
        batch axis.

    Works with every transformation: ``wg.grad(lambda w: vmap(loss_one, (None, 0))(w, xs)
    .sum())`` differentiates through it, ``vmap(wg.grad(loss_one), (None, 0))`` gives
    per-example gradients, and ``wg.compile(vmap(f))`` compiles the batched graph. Python
    control flow cannot depend on the values of mapped arguments (see `wg.trace`).

    Example:
        >>> import numpy as np, wengert as wg, wengert.numpy as wnp
        >>> xs = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        >>> wg.vmap(lambda x: x @ x)(xs)                 # one dot product per row
        array([ 5., 25., 61.])
        >>> w = np.array([1.0, -1.0])
        >>> loss = lambda w, x: wnp.tanh(x @ w) ** 2
        >>> wg.vmap(wg.grad(loss), in_axes=(None, 0))(w, xs)    # per-example gradients
        array([[-0.63970001, -1.27940002],
               [-1.91910003, -2.55880003],
               [-3.19850004, -3.83820005]])
        >>> wg.vmap(lambda x: wnp.sum(x), in_axes=1)(xs)  # map over columns
        array([ 9., 12.])
        >>> from wengert import lax
        >>> wg.vmap(lambda x: x - lax.pmean(x, "batch"), axis_name="batch")(xs)  # centred
        array([[-2., -2.],
               [ 0.,  0.],
               [ 2.,  2.]])
    """
    _check_fun(f, "vmap")
    _check_spec(in_axes, "in_axes")
    if not (in_axes is None or isinstance(in_axes, (int, np.integer, tuple, list))):
        # (JAX's rule: a dict, say, for one argument goes in a tuple, (in_axes,))
        raise TypeError(f"vmap: in_axes must be an int, None, or a tuple or list with one "
                        f"entry per positional argument, got {type(in_axes).__name__}; "
                        f"for a single argument write in_axes=({in_axes!r:.40},)")
    _check_spec(out_axes, "out_axes")
    if axis_size is not None and (not isinstance(axis_size, (int, np.integer)) or
                                  isinstance(axis_size, bool) or axis_size < 0):
        raise TypeError(f"vmap: axis_size must be a non-negative int, got {axis_size!r}"
                        + ("; JAX's fourth positional argument is axis_name, wengert's "
                           "axis_size: pass axis_name= by keyword"
                           if isinstance(axis_size, str) else ""))
    _check_axis_name(axis_name, "vmap")
    params = _param_names(f)        # (once: a signature costs tens of microseconds)

    @functools.wraps(f)
    def vmapped(*args, **kwargs):
        leaves, tree = flatten((args, kwargs))
        positional = len(flatten(args)[0])          # (the leaves of args come first)
        names = _labels(params, args, kwargs)
        axes = _in_axes(in_axes, args, positional, len(leaves))
        size, first = None, None
        if axis_size is not None:
            size, first = int(axis_size), ("axis_size", None, None)
        specs, values = [], []
        for k, (x, axis, name) in enumerate(zip(leaves, axes, names)):
            if axis is None:
                continue
            shape = _mapped_shape(x, name, k >= positional)
            if not -len(shape) <= axis < len(shape):
                if k >= positional:         # (the user wrote no in_axes for it)
                    raise ValueError(f"vmap: keyword argument {name!r} of shape {shape} has "
                                     f"no axis 0 to map over"
                                     + _keyword_hint(kwargs, k - positional))
                raise ValueError(f"vmap: in_axes {axis} for argument {name!r} of shape "
                                 f"{shape}, which has {len(shape)} axes")
            axis %= len(shape)
            if size is None:
                size, first = shape[axis], (name, shape, axis)
            elif shape[axis] != size and first[1] is None:
                raise ValueError(f"vmap: axis_size={size}, but argument {name!r} of shape "
                                 f"{shape} has {shape[axis]} along its mapped axis {axis}")
            elif shape[axis] != size:
                raise ValueError(
                    f"vmap: the mapped axes have different lengths: argument {first[0]!r} "
                    f"of shape {first[1]} has {size} along axis {first[2]}, argument "
                    f"{name!r} of shape {shape} has {shape[axis]} along axis {axis}"
                    + (_keyword_hint(kwargs, k - positional) if k >= positional else ""))
            specs.append((k, ShapeDtype(shape[:axis] + shape[axis + 1:], _dtype(x))))
            values.append(x if axis == 0 else _to_front(x, axis))
        if size is None:
            raise ValueError("vmap: no argument is mapped (in_axes is None for all of "
                             "them); say which axis of which argument is the batch, or "
                             "how many examples there are with axis_size=")
        if axis_name is None:
            graph = _trace_example(f, tree, leaves, names, specs)
        else:
            with binding(axis_name, size):
                graph = _trace_example(f, tree, leaves, names, specs)
        captured = [outer for outer, _ in graph.captured.values()]
        results = run(graph, values + captured, [True] * len(values) + [False] * len(captured),
                      size, axis_name)
        return _place_outputs(graph, results, out_axes, size)

    return vmapped


# --------------------------------------------------------------------------------------
# step 1: one example's graph
# --------------------------------------------------------------------------------------
def _trace_example(f, tree, leaves, names, specs, tracer="vmap") -> Graph:
    graph = Graph(optimize=False)   # (traced on every call: as cheaply as an eager call)
    graph.captured, graph.tracer = {}, tracer   # (shard_map's trace says its own name)
    call = list(leaves)
    inputs = []
    for k, spec in specs:
        call[k] = graph.input(spec, names[k])
        inputs.append(call[k])
    with recording(graph):
        args, kwargs = unflatten(tree, call)
        out = f(*args, **kwargs)
    out_leaves, out_tree = flatten(out)
    out_leaves, out_tree = hold_constants(out_tree, out_leaves, _held)
    graph.outputs = [graph.lift(x) for x in out_leaves]
    graph.inputs = inputs + [inner for _, inner in graph.captured.values()]
    graph.out_tree = out_tree
    if any(n.op.name == "copy" for n in graph.nodes):      # (a grad inside f)
        captured = graph.captured
        graph = graph.inline_copies()
        graph.captured = captured
    return graph


def _held(x) -> bool:
    """Output leaves that are no numbers or arrays (strings, objects) stay as they are."""
    return not (type(x) is Node or isinstance(x, (int, float, complex, np.ndarray, np.generic)))


# --------------------------------------------------------------------------------------
# step 2: the graph evaluated on a batch
# --------------------------------------------------------------------------------------
def run(graph, values, mapped, size, axis_name=None):
    """Evaluate `graph` with its inputs bound to `values`, those with ``mapped[k]`` carrying
    a batch of `size` examples on axis 0: ``[(value, mapped)]`` for each output.  Values
    may be arrays or traced values (the batched operations are then recorded).

    Collectives over `axis_name` (the vmap's own) are computed from the whole batch by
    their primitive's ``resolve``; those over other names are batched like any operation,
    for the enclosing vmap that binds their name (wengert.primitives.collective)."""
    resolving = resolving_axes()
    resolving.append(axis_name)     # (for the rules that batch a loop's body: see resolving)
    try:
        return _run(graph, values, mapped, size, axis_name)
    finally:
        resolving.pop()


def _run(graph, values, mapped, size, axis_name):
    env = {}
    for node, v, m in zip(graph.inputs, values, mapped):
        env[node.index] = (v, m)
    for node in graph.live_nodes(graph.outputs):
        if node.index in env:
            continue
        op = node.op
        if op is CONST or (op is INPUT and node.value is not None):
            # (an input with a value: a transformation inside f made it of a shared
            # argument, a number known when f was traced)
            env[node.index] = (node.value, False)
            continue
        if op is INPUT:
            raise AssertionError(f"vmap: input {node.label()} is not bound")
        args = [env[a.index][0] for a in node.args]
        flags = [env[a.index][1] for a in node.args]
        if op.resolve is not None and axis_name is not None and \
                node.params["axis_name"] == axis_name:
            env[node.index] = op.resolve(args, flags, node, size)
        elif any(flags):
            env[node.index] = (apply_batched(node, args, flags, size), True)
        elif axis_name is not None and axis_name in held_axis_names(node):
            # a loop (or checkpoint) whose function holds a collective over this vmap's
            # axis: its value differs from one example to the next though its arguments
            # do not
            args = [batched(a, False, size) for a in args]
            env[node.index] = (apply_batched(node, args, [True] * len(args), size), True)
        else:
            # (done once, as traced; a collective over an enclosing vmap's name has no
            # value yet, and Primitive.__call__ records it into the enclosing trace)
            env[node.index] = (op(*args, **node.params), False)
    return [env[o.index] for o in graph.outputs]


def apply_batched(node, args, mapped, size):
    """`node`'s operation on batched arguments: its primitive's rule, else its
    decomposition batched, else one call per example."""
    op = node.op
    if op.batch is not None:
        out = op.batch(args, mapped, node)
        if out is not None:                 # (None: the rule does not cover this case)
            if not op.builtin and tuple(shape_of(out)) != (size,) + tuple(node.shape):
                # (a wrong shape would broadcast into numbers silently wrong)
                raise ValueError(
                    f"the batching rule of primitive {op.name!r} returned shape "
                    f"{tuple(shape_of(out))} for a batch of {size} results of shape "
                    f"{tuple(node.shape)}: it must be {(size,) + tuple(node.shape)}, the "
                    "batch on axis 0")
            return out
    if op.decomposition is not None:
        example = Graph()
        inputs = [example.input(ShapeDtype(a.shape, a.dtype), f"a{k}")
                  for k, a in enumerate(node.args)]
        with recording(example):
            example.outputs = [example.lift(op.decomposition(*inputs, **node.params))]
        example.inputs = inputs
        out, m = run(example, args, mapped, size)[0]
        return out if m else batched(out, False, size)
    return _one_per_example(node, args, mapped, size)


def _one_per_example(node, args, mapped, size):
    if size == 0:
        return np.zeros((0,) + node.shape, node.dtype)
    rows = []
    for b in range(size):
        out = node.op(*[A.getitem(a, index=(b,)) if m else a for a, m in zip(args, mapped)],
                      **node.params)
        rows.append(A.reshape(out, shape=(1,) + node.shape))
    return rows[0] if size == 1 else A.concatenate(*rows, axis=0)


def _place_outputs(graph, results, out_axes, size):
    slots = unflatten(graph.out_tree, [_Slot(k) for k in range(len(results))])
    axes = [None] * len(results)
    for slot, axis in _prefix_axes(out_axes, slots, "out_axes", "the output"):
        if type(slot) is _Slot:
            axes[slot.k] = axis
    outs = []
    for k, ((v, m), axis) in enumerate(zip(results, axes)):
        if axis is None:
            if m:
                raise ValueError(f"vmap: out_axes is None for output {k}, but it differs "
                                 "from one example to the next; give it an axis")
            outs.append(v)
            continue
        v = batched(v, m, size)
        rank = len(shape_of(v))
        if not -rank <= axis < rank:
            raise ValueError(f"vmap: out_axes {axis} for output {k} of shape "
                             f"{tuple(shape_of(v))}, which has {rank} axes")
        axis %= rank
        if axis:
            v = A.transpose(v, axes=tuple(range(1, axis + 1)) + (0,) +
                            tuple(range(axis + 1, rank)))
        outs.append(v)
    return unflatten(graph.out_tree, outs)


class _Slot:
    """Stands for output k while out_axes is matched against the output's structure."""
    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k


# --------------------------------------------------------------------------------------
# in_axes and out_axes
# --------------------------------------------------------------------------------------
def _check_axis_name(name, who):
    """An axis name is any hashable but a tuple or list, which collectives read as several
    names."""
    if isinstance(name, (tuple, list)):
        raise TypeError(f"{who}: axis_name names one axis, got the {type(name).__name__} "
                        f"{name!r}; a tuple of names is for collectives, over several "
                        "nested vmaps at once")
    try:
        hash(name)
    except TypeError:
        raise TypeError(f"{who}: axis_name must be hashable (a string, usually), got a "
                        f"{type(name).__name__}") from None


def _check_spec(spec, what):
    leaves, _ = flatten(spec)
    for a in leaves:
        if not (a is None or (isinstance(a, (int, np.integer)) and not isinstance(a, bool))):
            raise TypeError(f"vmap: {what} holds {a!r}; it takes ints (axes) and None "
                            "(not mapped), alone or in a tuple, list or dict")


def _in_axes(spec, args, positional, total):
    """One axis (or None) per leaf of ``(args, kwargs)``, in flatten's order: `total`
    leaves, the first `positional` of them args'."""
    if isinstance(spec, (list, tuple)):
        if len(spec) != len(args):
            raise ValueError(f"vmap: in_axes has {len(spec)} entries for {len(args)} "
                             "positional arguments")
        axes = []
        for k, (s, a) in enumerate(zip(spec, args)):
            axes += [axis for _, axis in _prefix_axes(s, a, "in_axes", f"argument {k}")]
    else:
        axes = [spec] * positional
    return axes + [0] * (total - positional)


def _prefix_axes(spec, tree, what, where):
    """``(leaf, axis)`` for each leaf of `tree`, `spec` being a pytree prefix of it whose
    leaves are axes (or None).  (A stack of pairs still to match, not recursion: an
    in_axes as deep as its tree is fine.)"""
    out = []
    todo = [(spec, tree)]
    while todo:
        spec, tree = todo.pop()
        if spec is None or isinstance(spec, (int, np.integer)):
            axis = None if spec is None else int(spec)
            out += [(leaf, axis) for leaf in flatten(tree)[0]]
            continue
        if isinstance(spec, dict) and isinstance(tree, dict) and set(spec) == set(tree):
            keys = key_order(tree)  # (the order of tree's leaves, which the axes follow)
        elif isinstance(spec, (list, tuple)) and isinstance(tree, (list, tuple)) \
                and len(spec) == len(tree):
            keys = range(len(spec))
        elif type(spec) is type(tree) and registered(type(tree)) is not None:
            # (a registered class: its children, an instance of it holding axes in its data)
            split = registered(type(tree))[0]
            spec, tree = list(split(spec)[0]), list(split(tree)[0])
            if len(spec) != len(tree):
                raise ValueError(f"vmap: {what} has {len(spec)} children where {where} has "
                                 f"{len(tree)}")
            keys = range(len(spec))
        else:
            raise ValueError(f"vmap: {what} {spec!r} does not match the structure of {where} "
                             f"({_describe(tree)})")
        todo += [(spec[key], tree[key]) for key in reversed(keys)]     # (first on top)
    return out


def _describe(tree):
    if isinstance(tree, dict):
        return f"a dict with keys {dict_keys(tree)}"
    if isinstance(tree, (list, tuple)):
        return f"a {type(tree).__name__} of {len(tree)}"
    if type(tree) is _Slot:         # (an output leaf, while out_axes is matched)
        return "one array or number"
    return f"a {type(tree).__name__}"


def _labels(names, args, kwargs):
    labels = []
    for k, a in enumerate(args):
        labels += _leaf_names(names[k] if k < len(names) else f"arg{k}",
                              len(flatten(a)[0]))
    for key in sorted(kwargs):
        labels += _leaf_names(key, len(flatten(kwargs[key])[0]))
    return labels


def _keyword_hint(kwargs, leaf):
    """Why keyword argument leaf number `leaf` (in flatten's order) was mapped, and how to
    pass it as it is: a setting such as conv2d's padding=1 is the usual case."""
    for key in sorted(kwargs):
        n = len(flatten(kwargs[key])[0])
        if leaf < n:
            break
        leaf -= n
    return (f"; keyword arguments are always mapped over axis 0, as in JAX: to pass {key!r} "
            f"to f as it is, close over it (functools.partial(f, {key}=...), or a lambda) or "
            f"pass it positionally with in_axes None")


def _mapped_shape(x, name, keyword):
    if type(x) is Node or isinstance(x, (np.ndarray, np.generic)) or \
            isinstance(x, (int, float, complex)):
        return tuple(shape_of(x))
    how = "pass it positionally with in_axes None, or close over it (keyword arguments " \
        "are always mapped)" if keyword else "give it in_axes None"
    raise TypeError(f"vmap: argument {name!r} is a {type(x).__name__}, which has no axis to "
                    f"map over; {how} to pass it to f as it is")


def _dtype(x):
    if type(x) is Node:
        return x.dtype
    return np.asarray(x).dtype if not isinstance(x, float) else np.dtype(np.float64)


def _to_front(x, axis):
    rank = len(shape_of(x))
    return A.transpose(x, axes=(axis,) + tuple(k for k in range(rank) if k != axis))
