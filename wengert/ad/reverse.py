"""Reverse mode (seed 000's top-down sweep; ADDS's TD, `dfdv`; Zygote's pullback).

Adjoints flow from the outputs back along the nodes the outputs need, in reverse creation
order: for an argument u of w,  ū += w̄ · ∂w/∂u  (edge partials), or the primitive's VJP
for structural primitives.  A value used several times (fan-out) receives one contribution
per use; they are summed in one place, `_accumulate`, before the value is processed.

As in `forward`, ``symbolic=True`` builds the adjoints as graph nodes (differentiable again)
and ``symbolic=False`` computes numbers.
"""
from __future__ import annotations

from ..primitives.shape import sum_to


def _accumulate(adj, node, contribution):
    i = node.index
    prev = adj.get(i)
    adj[i] = contribution if prev is None else prev + contribution


def reverse(plan, inputs, outputs, cotangents, symbolic, adjoints=None):
    """Adjoints of `inputs` given cotangents of `outputs` (None = zero).

    Args:
        plan: the nodes between inputs and outputs, in creation order (`Graph.between`).
        inputs: the independent nodes.
        outputs, cotangents: the dependent nodes and their cotangents.
        symbolic: build graph nodes (True) or compute numbers (False).
        adjoints: optional dict that receives the complete adjoint of every plan node
            (index -> adjoint) as the sweep reaches it: ∂outputs/∂v for intermediate
            values v, which rounding-error estimates (ADDS's ``err``) need.

    Returns:
        One adjoint per input, None where it is zero.
    """
    active = {n.index for n in plan}
    active.update(x.index for x in inputs)
    adj = {}
    for o, ct in zip(outputs, cotangents):
        if ct is not None and o.index in active:
            _accumulate(adj, o, ct)
    for node in reversed(plan):
        g = adj.pop(node.index, None)
        if g is None:
            continue
        if adjoints is not None:
            adjoints[node.index] = g
        op = node.op
        args = node.args
        params = node.params
        if symbolic:
            xs, ans = args, node
        else:
            xs, ans = [a.value for a in args], node.value
        if op.vjp is not None:
            for a, c in zip(args, op.vjp(g, *xs, ans, **params)):
                if c is not None and a.index in active:
                    _accumulate(adj, a, c)
            continue
        if op.vjps is not None:                  # per argument: ask only the active ones
            for a, vjp in zip(args, op.vjps):
                if vjp is not None and a.index in active:
                    c = vjp(g, *xs, ans, **params)
                    if c is not None:
                        _accumulate(adj, a, c)
            continue
        if op.partials is None:
            raise NotImplementedError(f"primitive {op.name!r} has no derivative rule: declare "
                                      f"one with {op.name}.defpartials or .defvjp")
        for k, a in enumerate(args):
            i = a.index
            if i not in active:
                continue
            p = op.partial(k, xs, ans, params)
            if p is None:
                continue
            c = g if (type(p) is float and p == 1.0) else g * p
            if a.shape != node.shape:
                c = sum_to(c, shape=a.shape)
            prev = adj.get(i)                    # fan-out: contributions summed here
            adj[i] = c if prev is None else prev + c
    return [adj.get(x.index) for x in inputs]
