"""Many sweeps of a scalar graph as one: the numeric Jacobian's fast path.

A dense Jacobian by forward mode takes one sweep per input, each evaluating every partial
on the way again and paying the interpreter's cost per node again.  Here the tangent of a
node is a vector with one entry per sweep (an adjoint likewise, for reverse mode), so each
partial is evaluated once and the per-node cost is paid once: k sweeps for about the price
of one plus k-element NumPy arithmetic.  It is vector forward (or reverse) mode, on numbers.

It takes graphs of scalars whose primitives all declare partials (the graphs `jacobian`'s
coordinate methods work on), and it gives the numbers of the sweeps one by one, to
rounding: products of NumPy's complex numbers can differ from Python's in the last bit,
and float32 arguments are carried in float64 (as a lone sweep's seed 1.0 lets float64
partials do), then cast to the result's dtype; a zero is +0.0 (a slot no path reaches
holds 0 times partials, which may be -0.0; a computed -0.0 comes out +0.0 too).  Where a
partial is inf or nan, the sweeps run one by one: see `all_at_once`.  Many sweeps run as
several batches, each holding at most `ELEMENTS` numbers.
"""
from __future__ import annotations

import math

import numpy as np

from .reverse import active_indices


#: Fewer sweeps than this run one by one: k-element NumPy arithmetic costs a node more
#: than a lone sweep's float arithmetic, and at 2 sweeps the two are about even.
FROM = 3
#: A batch holds at most this many numbers (sweeps times the plan's nodes, one vector per
#: node): more sweeps than that run as several batches, which bounds the memory (32 MB).
ELEMENTS = 1 << 22


class _OneByOne(Exception):
    """A partial the batch cannot take as it is: one by one, the sweeps do."""


def _check(p):
    """Refuse a partial that is inf or nan (see `all_at_once`).  (One that is not a scalar,
    a user's rule of the wrong shape, `Primitive.partial` refuses: broadcast against the
    batch's vectors it would give a wrong Jacobian.)"""
    if type(p) is float:
        if not math.isfinite(p):
            raise _OneByOne
    elif not np.isfinite(p):
        raise _OneByOne


def takes(plan, inputs, outputs) -> bool:
    """Whether `all_at_once` takes this graph: scalars only, every primitive with its
    partials and no JVP or VJP rule that would be used instead of them."""
    for n in inputs:
        if n.shape != ():
            return False
    for n in outputs:
        if n.shape != ():
            return False
    for n in plan:
        op = n.op
        if n.shape != () or op.partials is None or op.jvp is not None or \
                op.vjp is not None or op.vjps is not None:
            return False
    return True


def _unit(k, s, leaf):
    # (float64, complex128 for a complex leaf: a lone sweep's seed is the Python number
    # 1.0, which leaves the partials' dtypes to decide, so float32 arguments with float64
    # partials (x·0.1) keep the float64 digits; a float32 seed would round them)
    e = np.zeros(k, np.complex128 if leaf.dtype.kind == "c" else np.float64)
    e[s] = 1
    return e


def all_at_once(plan, inputs, outputs, slots, k, forward_sweeps):
    """`k` sweeps of `plan` as one, on the nodes' values: forward sweeps (seeds on the
    `inputs`, results at the `outputs`) or reverse ones (the other way).  `slots[j]` is the
    sweep that seeds leaf j with 1 (several leaves may share one).  Returns an array of
    the results, one row per result leaf and one column per sweep; or None where the
    sweeps are better run one by one: fewer than `FROM` of them, a graph this is not for
    (`takes`), a partial that is inf or nan (a lone sweep has no product with an
    argument that has no tangent, while the batch would multiply the inf by that sweep's
    0, giving nan).

    Example (x·y and sin(x) + z, the three forward sweeps at once):
        >>> import wengert as wg
        >>> from wengert.ad.batched import all_at_once
        >>> g = wg.trace(lambda x, y, z: (x * y, wg.math.sin(x) + z), 2.0, 3.0, 4.0,
        ...              abstract=False)
        >>> plan = g.between(g.inputs, g.outputs)
        >>> all_at_once(plan, g.inputs, g.outputs, [0, 1, 2], 3, True).round(6).tolist()
        [[3.0, 2.0, 0.0], [-0.416147, 0.0, 1.0]]
    """
    if k < FROM or not takes(plan, inputs, outputs):
        return None
    slots = list(slots)
    # sweeps per batch: as many as ELEMENTS lets through (each node holds a vector)
    chunk = max(FROM, ELEMENTS // max(len(plan), 1))
    seeds, got = (inputs, outputs) if forward_sweeps else (outputs, inputs)
    active = None if forward_sweeps else active_indices(plan, inputs)
    pieces = []
    try:
        # (a lone sweep's Python floats overflow to inf, underflow to 0 and make nan of
        # inf - inf silently: so does the batch's arithmetic, warnings and errstate aside;
        # a partial's own evaluation in NumPy still warns as it would)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            for start in range(0, k, chunk):
                width = min(chunk, k - start)
                seeded = [(leaf, s - start) for leaf, s in zip(seeds, slots)
                          if start <= s < start + width]
                if forward_sweeps:
                    vec = _forward(plan, seeded, width)
                else:
                    vec = _reverse(plan, active, seeded, width)
                zero = np.zeros(width)
                pieces.append(np.array([vec.get(leaf.index, zero) for leaf in got])
                              .reshape(len(got), width))
    except _OneByOne:
        return None
    # (+ 0.0: a sweep's slot that no path reaches holds 0 times partials, which may be
    # -0.0 where a lone sweep has no tangent at all: a structural zero prints as 0.)
    return (pieces[0] if len(pieces) == 1 else np.concatenate(pieces, axis=1)) + 0.0


def _seed(vec, seeded, k):
    for leaf, s in seeded:
        e = _unit(k, s, leaf)
        i = leaf.index
        vec[i] = vec[i] + e if i in vec else e


def _forward(plan, seeded, k):
    # In a graph with complex values a real node's tangent is real (docs/complex.md).
    project = bool(plan) and plan[0].graph.complex
    tan = {}
    _seed(tan, seeded, k)
    for node in plan:
        args = node.args
        t = None
        xs = None
        for i, a in enumerate(args):
            ta = tan.get(a.index)
            if ta is None:
                continue
            if xs is None:
                xs = [b.value for b in args]
            p = node.op.partial(i, xs, node.value, node.params)
            if p is None:
                continue
            _check(p)
            c = ta if (type(p) is float and p == 1.0) else ta * p
            t = c if t is None else t + c
        if t is not None:
            tan[node.index] = t.real if project and node.dtype.kind != "c" else t
    return tan


def _reverse(plan, active, seeded, k):
    # (active: `active_indices` of the plan and the inputs, the same for every batch)
    project = bool(plan) and plan[0].graph.complex
    adj = {}
    _seed(adj, seeded, k)
    for o, _ in seeded:              # (an output no input reaches has no adjoint to pass)
        if o.index >= len(active) or not active[o.index]:
            adj.pop(o.index, None)
    for node in reversed(plan):                 # (inputs are not in the plan: theirs stay)
        g = adj.pop(node.index, None)
        if g is None:
            continue
        args = node.args
        xs = [b.value for b in args]
        for j, a in enumerate(args):
            if not active[a.index]:
                continue
            p = node.op.partial(j, xs, node.value, node.params)
            if p is None:
                continue
            _check(p)
            c = g if (type(p) is float and p == 1.0) else g * p
            if project and a.dtype.kind != "c":
                c = c.real
            ai = a.index
            adj[ai] = adj[ai] + c if ai in adj else c
    return adj
