"""Operation counts by cost class (seed 002's Table 2 columns: additions/subtractions,
multiplications, divisions, function calls, powers; plus negations and comparisons)."""
from __future__ import annotations

from collections import Counter

from ..graph.passes import optimize
from ..primitives.registry import COST_CLASSES


def count_ops(graph, outputs=None) -> dict:
    """Operations needed to compute `outputs` (default: the graph's outputs), by cost class.

    The outputs are first rewritten by the pass the emitter uses (`wengert.graph.passes`),
    then only the nodes they need are counted (mark down), each once however often it is
    used: that is what the straight-line code `emit` writes computes.  An
    elementwise operation on an array counts once per element.

    Example:
        >>> import wengert as wg
        >>> from wengert.codegen.count import count_ops
        >>> g = wg.trace(lambda x, y: x * y + wg.math.sin(x) * (x * y), 1.0, 2.0)  # x*y once
        >>> count_ops(g)
        {'add': 1, 'mul': 2, 'div': 0, 'call': 1, 'pow': 0, 'neg': 0, 'cmp': 0}
    """
    outputs = graph.outputs if outputs is None else outputs
    if outputs:
        outputs = optimize(graph, outputs)
    tally = Counter()
    for node in graph.live_nodes(outputs):
        cost = node.op.cost
        if cost is not None:
            tally[cost] += max(1, node.size)
    return {c: tally[c] for c in COST_CLASSES}
