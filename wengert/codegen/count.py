"""Operation counts by cost class (seed 002's Table 2 columns: additions/subtractions,
multiplications, divisions, function calls, powers; plus negations and comparisons)."""
from __future__ import annotations

from collections import Counter

from ..graph.passes import optimize
from ..primitives.registry import COST_CLASSES


def count_ops(graph, outputs=None, derived=None, rewrite=True) -> dict:
    """Operations needed to compute `outputs` (default: the graph's outputs), by cost class.

    The outputs are first rewritten by the pass the emitter uses for ADDS and FORTRAN text
    (`wengert.graph.passes`; not with ``rewrite=False``, as for the code `wg.compile`
    runs), then only the nodes they need are counted (mark down), each once however often
    it is used: that is what the straight-line code `emit` writes computes.  An
    elementwise operation on an array counts once per element.

    With `derived` (indices of the nodes derivative operators made), only the function
    is counted, as built: the nodes that are not derived and use no derived node (Table
    2's a).  No outputs (an empty list) need no operations.

    Example:
        >>> import wengert as wg
        >>> from wengert.codegen.count import count_ops
        >>> g = wg.trace(lambda x, y: x * y + wg.math.sin(x) * (x * y), 1.0, 2.0)  # x*y once
        >>> count_ops(g)
        {'add': 1, 'mul': 2, 'div': 0, 'call': 1, 'pow': 0, 'neg': 0, 'cmp': 0}
    """
    if outputs is not None and len(outputs) == 0:
        return {c: 0 for c in COST_CLASSES}     # (nothing asked: not every node, as
        #                                         live_nodes takes no outputs to mean)
    outputs = graph.outputs if outputs is None else outputs
    if outputs and derived is None and rewrite:
        # (the function alone is counted as built: rewriting would mix in derived nodes)
        outputs = optimize(graph, outputs)
    tally = Counter()
    tainted = set(derived or ())
    for node in graph.live_nodes(outputs):
        if derived is not None:
            if node.index in tainted or any(a.index in tainted for a in node.args):
                tainted.add(node.index)
                continue
        cost = node.op.cost
        if cost is not None:
            tally[cost] += max(1, node.size)
    return {c: tally[c] for c in COST_CLASSES}


def total(counts) -> int:
    """All operations of a count.

    Example:
        >>> total({'add': 2, 'mul': 3, 'div': 0})
        5
    """
    return sum(counts.values())


def table(rows) -> list:
    """Lines of seed 002's Table 2 for ``(label, a, b, c)`` rows of counts (dicts): the
    totals, their ratios, and each column by kind.

    Example:
        >>> c = {'add': 2, 'mul': 1}
        >>> print("\\n".join(table([("f", c, {'add': 4, 'mul': 4}, c)])))
        statement                      a       b       c     b/a    c/a    c/b
        f                              3       8       3    2.67   1.00   0.38
          a: 2 add, 1 mul;  b: 4 add, 4 mul;  c: 2 add, 1 mul
    """
    def kinds(cnt):
        return ", ".join(f"{n} {k}" for k, n in cnt.items() if n) or "none"

    def ratio(x, y):
        return f"{x / y:6.2f}" if y else "     -"

    lines = [f"{'statement':<26} {'a':>5} {'b':>7} {'c':>7}{'b/a':>8}{'c/a':>7}{'c/b':>7}"]
    for label, a, b, c in rows:
        ta, tb, tc = total(a), total(b), total(c)
        lines.append(f"{label[:26]:<26} {ta:>5} {tb:>7} {tc:>7}  {ratio(tb, ta)} "
                     f"{ratio(tc, ta)} {ratio(tc, tb)}")
        lines.append(f"  a: {kinds(a)};  b: {kinds(b)};  c: {kinds(c)}")
    return lines
