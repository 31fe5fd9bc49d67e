"""Forward mode (seed 000's bottom-up sweep; ADDS's BU, `dfuv`).

A tangent flows from the inputs along the nodes that depend on them, in creation order:
for a node w with arguments u_k,  ẇ = Σ_k ∂w/∂u_k · u̇_k  (edge partials), or the
primitive's JVP for structural primitives.

The same sweep serves two purposes.  With ``symbolic=True`` the partials are evaluated on
nodes, so the tangents are new nodes of the graph: a derivative graph that can be
differentiated again.  With ``symbolic=False`` they are evaluated on the nodes' values and
the tangents are plain numbers: the fast path when nothing will differentiate the result.
"""
from __future__ import annotations

from ..primitives.registry import check_rule_shape, shape_of
from ..primitives.scalar import kind_of, real_part
from ..primitives.shape import broadcast_to
from ..primitives.array import zeros_like


def tangent(op, ts, xs, ans, params, shape):
    """The tangent of ``ans = op(*xs, **params)`` (of shape `shape`) given the tangents `ts`
    of its arguments (None = zero): the primitive's JVP, or Σ_k ∂ans/∂x_k · t_k from its
    partials.  On values or on nodes alike; None where the tangent is zero.

    One step of forward mode, shared by the sweep below, dual numbers (`wg.Dual`) and the
    first-order rule of Taylor mode."""
    if op.jvp is not None:
        t = op.jvp(ts, *xs, ans, **params)
        if t is not None and not op.builtin:
            check_rule_shape(op, t, shape)          # (a user's rule: checked as it runs)
            if kind_of(ans) != "c":                 # (and a real result's tangent is real)
                t = real_part(t)
        return t
    if op.linear and op.partials is None:
        # a linear primitive's JVP is the primitive itself, applied to the tangents
        return op(*[zeros_like(x) if tk is None else tk for x, tk in zip(xs, ts)], **params)
    if op.partials is None:
        raise NotImplementedError(f"primitive {op.name!r} has no derivative rule: declare "
                                  f"one with {op.name}.defpartials or .defjvp")
    t = None
    for k, tk in enumerate(ts):
        if tk is None:
            continue
        p = op.partial(k, xs, ans, params)
        if p is None:
            continue
        c = tk if (type(p) is float and p == 1.0) else tk * p
        t = c if t is None else t + c
    if t is not None and shape_of(t) != shape:
        t = broadcast_to(t, shape=shape)
    return t


def forward(plan, inputs, tangents, outputs, symbolic):
    """Tangents of `outputs` given tangents of `inputs` (None = zero).

    Args:
        plan: the nodes between inputs and outputs, in creation order (`Graph.between`).
        inputs, tangents: the independent nodes and their tangents.
        outputs: the nodes whose tangents are wanted.
        symbolic: build graph nodes (True) or compute numbers (False).

    Returns:
        One tangent per output, None where it is zero.
    """
    tan = {}
    # In a graph with complex values a real value's tangent is real: the real part of
    # what its rule gives (docs/complex.md).
    project = bool(plan) and plan[0].graph.complex
    for x, t in zip(inputs, tangents):
        if t is not None:
            tan[x.index] = t
    for node in plan:
        args = node.args
        ts = [tan.get(a.index) for a in args]
        if all(t is None for t in ts):
            continue
        if symbolic:
            xs, ans = args, node
        else:
            xs, ans = [a.value for a in args], node.value
        t = tangent(node.op, ts, xs, ans, node.params, node.shape)
        if t is not None:
            if project and node.dtype.kind != "c":
                t = real_part(t)
            tan[node.index] = t
    return [tan.get(o.index) for o in outputs]
