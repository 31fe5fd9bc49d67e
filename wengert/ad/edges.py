"""The edge-partial view of a computational graph (seed 003, formula (1)).

Seed 003 looks at a computation as a directed acyclic graph G = (V, E) whose edge u -> v
carries the elementary partial derivative ∂v/∂u.  Then

    ∂f_i/∂x_j = Σ over directed paths x_j -> f_i of the product of the labels on the path,

and every way of computing a Jacobian -- forward mode, reverse mode, contraction of
umbrellas, vertex elimination -- is a way of summing those path products.  `EdgeGraph` is
that view: vertices are the nodes that carry derivatives, edges are labelled with the
partials the primitives declare (`Primitive.partials`).

A label is whatever the edges hold: graph nodes or floats (the partials built as nodes, so
that a Jacobian accumulated from them is itself a graph), plain numbers, or the cost tokens
of `wengert.ad.eliminate` that count operations.  The algorithms only multiply and add
labels, so they work on all three.
"""
from __future__ import annotations

import numpy as np

from ..primitives.registry import CONST
from ..primitives.scalar import real_part


class NotEliminable(NotImplementedError):
    """A scalar graph whose Jacobian vertex elimination cannot accumulate, because a real
    value computed from complex ones passes its derivative on (`_real_outputs`): its
    Jacobian comes from forward or reverse sweeps, which take the real part there."""


class EdgeGraph:
    """A directed acyclic graph with labelled edges: seed 003's G = (V, E).

    Attributes:
        preds: ``preds[v][u]`` is the label of edge u -> v.
        succs: ``succs[u][v]``, the same labels seen from the tail.
        rank: a position for every vertex; edges go from lower to higher rank.
        inputs: X(G), the independent vertices, in order.
        outputs: F(G), the dependent vertices, in order; they have no out-edges.
        rows, columns: where the rows and columns of the Jacobian come from: for each
            output (input) asked for, its vertex, or None if it is not connected.
        log: None, or a list that records every copy of variables and elimination done
            to the graph (see `wengert.ad.eliminate.replay`).
        real: the outputs whose entries are the real parts of the sums of path products
            (real outputs of complex values, `linearize`).

    Example:
        >>> from wengert.ad.edges import EdgeGraph
        >>> G = EdgeGraph.from_edges([("x", "v", 2.0), ("v", "f", 3.0), ("x", "f", 1.0)])
        >>> G.inputs, G.outputs, G.label("x", "v")
        (['x'], ['f'], 2.0)
        >>> G.num_edges()
        3
    """

    def __init__(self):
        self.preds: dict = {}
        self.succs: dict = {}
        self.rank: dict = {}
        self.inputs: list = []
        self.outputs: list = []
        self.rows: list = []
        self.columns: list = []
        self.log = None             # a list: copies and eliminations are recorded there
        self.real = frozenset()
        self._fresh = 0

    # --- building -------------------------------------------------------------------------
    def add_vertex(self, v, rank):
        if v not in self.rank:
            self.rank[v] = rank
            self.preds[v] = {}
            self.succs[v] = {}

    def add_edge(self, u, v, label):
        """Add edge u -> v; a parallel edge adds its label to the one already there (the
        total partial of v with respect to u, as for ``x * x``)."""
        old = self.succs[u].get(v)
        if old is not None:
            label = old + label
        self.succs[u][v] = label
        self.preds[v][u] = label

    def fresh_vertex(self, rank):
        """A new vertex (for copies of variables), numbered apart from every other."""
        self._fresh += 1
        v = ("copy", self._fresh)
        self.add_vertex(v, rank)
        return v

    def remove_edge(self, u, v):
        del self.succs[u][v]
        del self.preds[v][u]

    def remove_vertex(self, v):
        for u in self.preds.pop(v):
            del self.succs[u][v]
        for w in self.succs.pop(v):
            del self.preds[w][v]
        del self.rank[v]

    @classmethod
    def from_edges(cls, edges, inputs=None, outputs=None):
        """A graph from ``(u, v)`` or ``(u, v, label)`` triples (label 1.0 if omitted).
        Vertices are ranked in a topological order (ties: order of first appearance).
        Inputs and outputs default to the vertices without in-edges and without
        out-edges.

        Example:
            >>> from wengert.ad.edges import EdgeGraph
            >>> EdgeGraph.from_edges([("b", "c"), ("a", "b")]).topological()
            ['a', 'b', 'c']
        """
        first = {}
        for e in edges:
            for w in e[:2]:
                first.setdefault(w, len(first))
        succ = {w: [] for w in first}
        indeg = dict.fromkeys(first, 0)
        for e in edges:
            succ[e[0]].append(e[1])
            indeg[e[1]] += 1
        ready = [w for w in first if not indeg[w]]
        order = []
        while ready:                        # Kahn's algorithm, first appearance first
            ready.sort(key=first.__getitem__, reverse=True)
            w = ready.pop()
            order.append(w)
            for z in succ[w]:
                indeg[z] -= 1
                if not indeg[z]:
                    ready.append(z)
        if len(order) != len(first):
            raise ValueError("the edges form a cycle: a computational graph is acyclic")
        g = cls()
        for r, w in enumerate(order):
            g.add_vertex(w, r)
        for e in edges:
            g.add_edge(e[0], e[1], e[2] if len(e) > 2 else 1.0)
        g.inputs = list(inputs) if inputs is not None else [
            v for v in order if not g.preds[v]]
        g.outputs = list(outputs) if outputs is not None else [
            v for v in order if not g.succs[v]]
        g.rows, g.columns = list(g.outputs), list(g.inputs)
        return g

    def copy(self) -> "EdgeGraph":
        """A structural copy (the labels themselves are shared, never mutated; the log,
        if any, too)."""
        return self.map_labels(lambda c: c)

    def map_labels(self, fn) -> "EdgeGraph":
        """The same graph with every label c replaced by fn(c)."""
        g = EdgeGraph()
        g.rank = dict(self.rank)
        g.preds = {v: {} for v in self.preds}
        g.succs = {v: {} for v in self.succs}
        for u, out in self.succs.items():
            for v, c in out.items():
                c = fn(c)
                g.succs[u][v] = c
                g.preds[v][u] = c
        g.inputs, g.outputs = list(self.inputs), list(self.outputs)
        g.rows, g.columns = list(self.rows), list(self.columns)
        g.log = self.log
        g.real = self.real
        g._fresh = self._fresh
        return g

    # --- reading --------------------------------------------------------------------------
    def vertices(self) -> list:
        return list(self.rank)

    def topological(self) -> list:
        """The vertices in a topological order."""
        return sorted(self.rank, key=self.rank.__getitem__)

    def edges(self) -> list:
        """Every edge as a pair (u, v)."""
        return [(u, v) for u, out in self.succs.items() for v in out]

    def num_edges(self) -> int:
        return sum(len(out) for out in self.succs.values())

    def label(self, u, v):
        return self.succs[u][v]

    def intermediates(self) -> list:
        """The vertices that are neither inputs nor outputs, in topological order."""
        ends = set(self.inputs) | set(self.outputs)
        return [v for v in self.topological() if v not in ends]

    def jacobian_entries(self):
        """After every intermediate vertex is eliminated: ``{(row, column): label}`` over
        the rows and columns asked for, the nonzero entries only (the real part of the
        label for an output in `real`)."""
        column = {}
        for j, x in enumerate(self.columns):
            if x is not None:
                column.setdefault(x, []).append(j)
        out = {}
        for i, f in enumerate(self.rows):
            if f is None:
                continue
            real = f in self.real
            for x, c in self.preds[f].items():
                for j in column.get(x, ()):
                    out[i, j] = real_part(c) if real else c
        return dict(sorted(out.items()))

    def __repr__(self):
        return (f"<EdgeGraph: {len(self.rank)} vertices, {self.num_edges()} edges, "
                f"{len(self.inputs)} inputs, {len(self.outputs)} outputs>")


def _is_zero(c) -> bool:
    """A label known to be zero when the graph is built (a zero partial after
    simplification, like the derivative of select for a known condition)."""
    if type(c) is float or type(c) is complex:
        return c == 0
    return getattr(c, "op", None) is CONST and c.shape == () and c.value == 0


def _refuse_call(op):
    """Refuse a loop or a checkpointed call in the user's words: its node's value (a
    packed array the user never wrote) would otherwise be what the error names."""
    from ..checkpointing import Checkpoint
    from ..loops import Loop
    if isinstance(op, Loop):
        # (an eager gradient's loop is its residual-keeping twin: name the user's body)
        name = (getattr(op, "base", None) or op).loop_name
        what = (f"a loop (the wg.scan, wg.fori_loop or while_loop of {name}) is one node "
                "of the graph, not expanded into its steps")
        other = "write the loop as a Python loop"
    elif isinstance(op, Checkpoint):
        what = f"a checkpointed call ({op.name}) is one node of the graph, not expanded"
        other = "call the function without wg.checkpoint"
    else:
        return
    raise NotImplementedError(f"elimination works on scalar code, operation by operation, "
                              f"and {what}. Use mode='rev' or 'fwd' (or {other})")


def linearize(graph, inputs, outputs) -> EdgeGraph:
    """The edge-partial view of `graph` between `inputs` and `outputs` (lists of nodes).

    Every node that depends on the inputs and that the outputs need becomes a vertex
    (vertex id: the node's index); every argument edge whose partial is not structurally
    zero becomes an edge labelled with that partial, built as graph nodes (floats where
    the partial is a constant the rule returns as a number).  An output that is also used
    by another vertex, or that is an input, gets its own sink vertex (edge label 1.0), so
    the outputs are exactly the vertices without out-edges, as seed 003 assumes.
    Vertices on no path from an input to an output (because the partials that would
    connect them are zero) are left out.

    Elimination needs scalar nodes and primitives declared by their partials; other
    graphs raise NotImplementedError (their Jacobians come from forward or reverse
    sweeps).  So does a graph where a real value computed from complex ones passes its
    derivative on (`NotEliminable`, see `_real_outputs`).

    Example:
        >>> import wengert as wg
        >>> from wengert.ad.edges import linearize
        >>> g = wg.trace(lambda x, y: wg.math.sin(x * y), 1.0, 2.0)
        >>> G = linearize(g, g.inputs, g.outputs)
        >>> G
        <EdgeGraph: 4 vertices, 3 edges, 2 inputs, 1 outputs>
        >>> [(g.nodes[u].label(), g.nodes[v].label(), G.label(u, v).label())
        ...  for u, v in G.edges()][:2]
        [('x', '%2', 'y'), ('y', '%2', 'x')]
    """
    plan = graph.between(inputs, outputs)
    G = EdgeGraph()
    for x in inputs:
        G.add_vertex(x.index, x.index)
    is_vertex = set(G.rank)
    for node in plan:
        if node.op.cost == "call":
            _refuse_call(node.op)
        if node.shape != ():
            raise NotImplementedError(
                f"elimination works on scalar graphs; node {node.label()} has shape "
                f"{node.shape}. Use mode='fwd', 'rev' or 'sparse' for array-valued code")
        op = node.op
        if op.partials is None:
            raise NotImplementedError(
                f"elimination needs the edge partials of every primitive; {op.name!r} "
                "declares a JVP/VJP instead (or no derivative). Use mode='fwd' or 'rev'")
        G.add_vertex(node.index, node.index)
        is_vertex.add(node.index)
        for k, a in enumerate(node.args):
            if a.index not in is_vertex:
                continue
            c = op.partial(k, node.args, node, node.params)
            if c is not None and not _is_zero(c):
                G.add_edge(a.index, node.index, c)
    sink_rank = len(graph.nodes)
    inputs_set = {x.index for x in inputs}
    sinks = {}
    G.rows = []
    for o in outputs:
        v = o.index
        if v not in is_vertex:
            G.rows.append(None)
            continue
        if v in sinks:
            G.rows.append(sinks[v])
            continue
        if G.succs[v] or v in inputs_set:
            # the output also feeds another vertex: give its row a sink of its own
            s = ("out", len(sinks))
            G.add_vertex(s, sink_rank + len(sinks))
            G.add_edge(v, s, 1.0)
            v = s
        sinks[o.index] = v
        G.rows.append(v)
    G.outputs = list(dict.fromkeys(v for v in G.rows if v is not None))
    G.inputs = [x.index for x in inputs]
    _prune(G)
    G.columns = [x if x in G.rank else None for x in G.inputs]
    G.inputs = [x for x in G.inputs if x in G.rank]
    G.rows = [v if v in G.rank else None for v in G.rows]
    G.outputs = [v for v in G.outputs if v in G.rank]
    if graph.complex:
        G.real = _real_outputs(graph, G)
    return G


def _is_complex(c) -> bool:
    """A label with a complex value (a node or a number)."""
    t = type(c)
    if t is float:
        return False
    if t is complex:
        return True
    return getattr(c, "dtype", np.result_type(c)).kind == "c"


def _real_outputs(graph, G) -> frozenset:
    """The outputs of G whose entries are real parts, checking that elimination is the
    chain rule here.

    Elimination sums products of partials: it treats every step as a product with a
    complex number.  That is the chain rule where every value is complex (a holomorphic
    function) or every value real.  A real value computed from complex ones (real, imag,
    abs) is not such a step: the sweeps keep its derivative real by taking the real part
    there (docs/complex.md), which no product does.  At an output that is the last step,
    so its entries are the real parts of the sums (returned here); anywhere else
    elimination would carry the imaginary part on, so it refuses (`NotEliminable`)."""
    nodes = graph.nodes
    complex_ = set()        # complex vertices
    real = set()            # real vertices computed from complex ones (and their sinks)
    for v in G.topological():
        preds = G.preds[v]
        if real.intersection(preds):
            if type(v) is not int:          # an output's own sink (label 1.0)
                real.add(v)
                continue
            u = next(u for u in preds if u in real)
            raise NotEliminable(
                f"elimination multiplies edge partials, but {nodes[u].label()} "
                f"({nodes[u].op.name}) is a real value computed from complex ones: the "
                "chain rule takes the real part of its derivative before passing it on to "
                f"{nodes[v].label()} ({nodes[v].op.name}), which no product does. Use "
                "mode='fwd', 'rev' or 'auto'")
        if type(v) is not int:
            continue
        if nodes[v].dtype.kind == "c":
            complex_.add(v)
        elif any(u in complex_ or _is_complex(c) for u, c in preds.items()):
            real.add(v)
    return frozenset(real)


def _prune(G: EdgeGraph):
    """Keep the vertices on some path from an input to an output."""
    order = G.topological()
    ahead = set(G.inputs)
    for v in order:
        if v not in ahead and any(u in ahead for u in G.preds[v]):
            ahead.add(v)
    behind = set(G.outputs)
    for v in reversed(order):
        if v not in behind and any(w in behind for w in G.succs[v]):
            behind.add(v)
    for v in order:
        if v not in ahead or v not in behind:
            G.remove_vertex(v)
