"""Reverse mode (seed 000's top-down sweep; ADDS's TD, `dfdv`; Zygote's pullback).

Adjoints flow from the outputs back along the nodes the outputs need, in reverse creation
order: for an argument u of w,  ū += w̄ · ∂w/∂u  (edge partials), or the primitive's VJP
for structural primitives.  A value used several times (fan-out) receives one contribution
per use; they are summed in one place, `_accumulate`, before the value is processed.

As in `forward`, ``symbolic=True`` builds the adjoints as graph nodes (differentiable again)
and ``symbolic=False`` computes numbers.
"""
from __future__ import annotations

import dis
import inspect

import numpy as np

from ..primitives.registry import check_rule_shape, user_cotangents
from ..primitives.scalar import real_part, stop_gradient
from ..primitives.shape import sum_to


def active_indices(plan, inputs):
    """Which nodes carry an adjoint: the inputs, and the nodes of the plan that depend on
    them other than through `stop_gradient` (``active[node.index]`` is 1 for them, a
    bytearray over indices up to the last of them).  A node behind a stop_gradient only
    never receives an adjoint, so its rule is never asked (and may refuse, as nextafter's
    does)."""
    top = -1
    for x in inputs:
        if x.index > top:
            top = x.index
    if plan and plan[-1].index > top:
        top = plan[-1].index
    active = bytearray(top + 1)
    for x in inputs:
        active[x.index] = 1
    for n in plan:
        if n.op is stop_gradient:
            continue
        args = n.args
        if len(args) == 1:                      # (the usual one or two: no generator)
            on = active[args[0].index]
        elif len(args) == 2:
            on = active[args[0].index] or active[args[1].index]
        else:
            on = any(active[a.index] for a in args)
        if on:
            active[n.index] = 1
    return active


def _accumulate(adj, node, contribution):
    i = node.index
    prev = adj[i]
    adj[i] = contribution if prev is None else prev + contribution


def _accumulate_real(adj, node, contribution):
    """`_accumulate` in a graph with complex values: a real value's adjoint is real (the
    real part of what reaches it: JAX's and autograd's convention, docs/complex.md)."""
    if node.dtype.kind != "c":
        contribution = real_part(contribution)
    _accumulate(adj, node, contribution)


def reverse(plan, inputs, outputs, cotangents, symbolic, adjoints=None, active=None,
            release=None):
    """Adjoints of `inputs` given cotangents of `outputs` (None = zero).

    Args:
        plan: the nodes between inputs and outputs, in creation order (`Graph.between`).
        inputs: the independent nodes.
        outputs, cotangents: the dependent nodes and their cotangents.
        symbolic: build graph nodes (True) or compute numbers (False).
        adjoints: optional dict that receives the complete adjoint of every plan node
            (index -> adjoint) as the sweep reaches it: ∂outputs/∂v for intermediate
            values v, which rounding-error estimates (ADDS's ``err``) need.
        active: `active_indices(plan, inputs)`, if the caller has it already.
        release: for a numeric sweep that runs once (an eager gradient), the indices of
            the nodes whose values the caller still reads (the outputs, auxiliary
            results); every other node's value is let go as soon as its own rule has
            run, since only rules of nodes made before it run after, and none of them
            reads it.  The arrays of the forward pass then go as the sweep passes them,
            as the cotangents do.

    Returns:
        One adjoint per input, None where it is zero.
    """
    if active is None:
        active = active_indices(plan, inputs)
    adj = [None] * len(active)                   # adjoints by node index, None = zero
    accumulate = _accumulate_real if plan and plan[0].graph.complex else _accumulate
    for o, ct in zip(outputs, cotangents):
        if ct is not None and o.index < len(active) and active[o.index]:
            # (a real output's cotangent counts by its real part, docs/complex.md, also in
            # a graph with no complex value, where a pullback may still be given one)
            _accumulate_real(adj, o, ct)
    for node in reversed(plan):
        g = adj[node.index]
        if g is None:
            continue
        adj[node.index] = None                   # (let it go as soon as it is used)
        if adjoints is not None:
            adjoints[node.index] = g
        op = node.op
        args = node.args
        params = node.params
        if symbolic:
            xs, ans = args, node
        else:
            # (no comprehension for the usual one or two arguments: Python 3.11 makes
            # each one a function call, and this runs once per node)
            xs = [args[0].value] if len(args) == 1 else [args[0].value, args[1].value] \
                if len(args) == 2 else [a.value for a in args]
            ans = node.value
            if release is not None and node.index not in release:
                node.value = None
        if op.vjp is not None:
            if op.asks_active:              # (a loop: cotangents cost a sweep of their own)
                cts = op.vjp(g, *xs, ans, active=tuple(active[a.index] for a in args),
                             **params)
            else:
                cts = op.vjp(g, *xs, ans, **params)
            # (a user's rule may give a real argument a complex cotangent: its real part)
            add = accumulate if op.builtin else _accumulate_real
            if not op.builtin:
                cts = user_cotangents(op, args, cts)
            for a, c in zip(args, cts):
                if c is not None and active[a.index]:
                    add(adj, a, c)
            continue
        if op.vjps is not None:                  # per argument: ask only the active ones
            add = accumulate if op.builtin else _accumulate_real
            for k, (a, vjp) in enumerate(zip(args, op.vjps)):
                if vjp is not None and active[a.index]:
                    c = vjp(g, *xs, ans, **params)
                    if c is not None:
                        if not op.builtin:
                            check_rule_shape(op, c, a.shape, k)
                        add(adj, a, c)
            continue
        partials = op.partials
        if partials is None:
            raise NotImplementedError(f"primitive {op.name!r} has no derivative rule: declare "
                                      f"one with {op.name}.defpartials or .defvjp")
        for k, a in enumerate(args):
            i = a.index
            p = partials[k]
            if p is None or not active[i]:
                continue
            if type(p) is float:                 # a constant partial: add's 1.0
                c = g if p == 1.0 else g * p
            elif not op.builtin:                 # a user's rule: its shape checked
                p = op.partial(k, xs, ans, params)
                if p is None:
                    continue
                c = g * p
            else:
                # One expression: the rule's result is a temporary that NumPy reuses for the
                # product (temporary elision), as in hand-written ``g * (1 - a * a)``.
                try:
                    c = g * p(*xs, ans, **params)
                except (ArithmeticError, TypeError):  # (a float's 1/0, a None partial)
                    p = op.partial(k, xs, ans, params)    # (which redoes 1/0 in NumPy)
                    if p is None:
                        continue
                    c = g * p
            if a.shape != node.shape:            # (array to array: no dispatch needed)
                c = sum_to.impl(c, a.shape) if a.shape and type(c) is np.ndarray else \
                    sum_to(c, shape=a.shape)
            accumulate(adj, a, c)
    return [adj[x.index] for x in inputs]


# --------------------------------------------------------------------------------------
# which values the sweep reads
# --------------------------------------------------------------------------------------
# An eager gradient keeps an intermediate value of the forward pass only if the sweep
# needs it, as PyTorch keeps only its saved tensors.  Most it does not: ``h = z + b``
# never reads z or b, ``tanh`` reads only its result, so ``z`` can go before the sweep
# starts: the MLP benchmark's gradient peaks at 3.0 MB of arrays instead of 4.0 MB.  (In
# plain NumPy, keeping those dead pre-activations alive makes the same gradient ~9%
# slower.)  What a rule reads is found from its code: a parameter it never loads cannot
# affect its result.

_READS: dict = {}


def _reads(rule, nparams):
    """For each of a rule's first `nparams` parameters (the rest are the primitive's
    parameters, passed by keyword), whether its code reads it;
    None when that cannot be told (varargs, a callable that is not a plain function)."""
    code = getattr(rule, "__code__", None)
    if code is None or code.co_flags & inspect.CO_VARARGS or code.co_argcount < nparams:
        return None
    reads = _READS.get(code)
    if reads is None:
        loaded = set()
        for ins in dis.get_instructions(code):
            if ins.opname.startswith("LOAD_"):      # LOAD_FAST, LOAD_CLOSURE, LOAD_DEREF...
                arg = ins.argval
                loaded.update(arg if isinstance(arg, tuple) else (arg,))
        reads = _READS[code] = tuple(name in loaded for name in code.co_varnames[:nparams])
    return reads


def _needs(op, mask):
    """(positions of the arguments read, whether the result is read) by the rules the
    sweep calls for `op` when `mask` tells which of its arguments receive an adjoint.
    Remembered on the primitive (so it goes with it), until its rules are declared
    again."""
    cache = op.sweep_reads
    if cache[0] is op.vjp and cache[1] is op.vjps and cache[2] is op.partials:
        found = cache[3].get(mask)
        if found is not None:
            return found
    else:
        cache = op.sweep_reads = (op.vjp, op.vjps, op.partials, {})
    n = len(mask)
    if op.vjp is not None:
        rules, skip = [op.vjp], 1                        # vjp(g, *args, ans)
    elif op.vjps is not None:
        rules, skip = [r for r, m in zip(op.vjps, mask) if r is not None and m], 1
    elif op.partials is not None:
        rules, skip = [r for r, m in zip(op.partials, mask) if r is not None and m], 0
    else:
        rules, skip = [], 0                              # the sweep will say what is missing
    read = [False] * (n + 1)
    for rule in rules:
        if type(rule) is float:                          # a constant partial reads nothing
            continue
        reads = _reads(rule, skip + n + 1) or (True,) * (skip + n + 1)
        read = [r or q for r, q in zip(read, reads[skip:])]
    found = cache[3][mask] = (tuple(k for k in range(n) if read[k]), read[n])
    return found


def values_read(plan, inputs, active=None):
    """The indices of the nodes whose values a numeric `reverse` over `plan` reads: the
    arguments and results its rules load (only the rules of arguments that receive an
    adjoint are asked, as in the sweep)."""
    if active is None:
        active = active_indices(plan, inputs)
    need = set()
    for node in plan:
        args = node.args
        positions, result = _needs(node.op, _mask(args, active))
        for k in positions:
            need.add(args[k].index)
        if result:
            need.add(node.index)
    return need


def _mask(args, active):
    """Which of a node's arguments are active, as a tuple of 0/1 (a cache key)."""
    if len(args) == 1:                           # (as in reverse: no comprehension)
        return (active[args[0].index],)
    if len(args) == 2:
        return (active[args[0].index], active[args[1].index])
    return tuple([active[a.index] for a in args])


def drop_unread(plan, inputs, keep, active=None):
    """Forget (set to None) the values of the intermediate nodes of `plan` that neither a
    numeric sweep over it nor the caller (`keep`: outputs, auxiliary results) will read.
    For eager transformations only: a node without a value cannot be evaluated again,
    and a rule reading a dropped value would fail loudly (None), never compute with a
    wrong one."""
    need = values_read(plan, inputs, active)
    for n in keep:
        need.add(n.index)
    for node in plan:
        if node.index not in need:
            node.value = None


def eager_plan(graph, inputs, outputs, keep):
    """`Graph.between` and `drop_unread` in one pass, for an eager gradient over a graph of
    its own, whose inputs are its first nodes: the plan and its active set, for `reverse`.

    The plan may hold a few nodes that depend on the inputs but that the outputs do not
    need: they never receive an adjoint, so the sweep skips them, and the values their
    rules would read are kept (the caller's graph is released after the sweep anyway)."""
    first = len(inputs)
    last = -1
    for x in inputs:
        if x.index > last:
            last = x.index
    if last != first - 1:           # (distinct indices: the inputs are not nodes 0..first-1)
        plan = graph.between(inputs, outputs)
        active = active_indices(plan, inputs)
        drop_unread(plan, inputs, keep, active)
        return plan, active
    nodes = graph.nodes
    top = -1
    for o in outputs:
        if o.index > top:
            top = o.index
    active = bytearray(top + 1 if top >= first else first)
    need = bytearray(len(active))
    for x in inputs:
        active[x.index] = 1
    plan = []
    for i in range(first, top + 1):
        node = nodes[i]
        args = node.args
        if not args:
            continue
        mask = _mask(args, active)
        if 1 not in mask or node.dtype.kind not in "fc" or node.op is stop_gradient:
            continue                     # (as in mark-up: bools and ints carry no adjoint)
        active[i] = 1
        plan.append(node)
        positions, result = _needs(node.op, mask)
        for k in positions:
            need[args[k].index] = 1
        if result:
            need[i] = 1
    for n in keep:
        if n.index < len(need):
            need[n.index] = 1
    for node in plan:
        if not need[node.index]:
            node.value = None
    return plan, active
