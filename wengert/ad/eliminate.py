"""Jacobian accumulation by vertex elimination on the edge-partial graph.

Eliminating an intermediate vertex j of the edge-partial graph (`EdgeGraph`) joins each
predecessor i to each successor k directly:

    c_ki  +=  c_kj · c_ji          (one multiplication, and one addition if i -> k existed)

which keeps every sum of path products (seed 003's formula (1)).  When no intermediate
vertex is left, the edge x_j -> f_i carries ∂f_i/∂x_j.  The order matters: eliminating in
topological order is forward mode, in reverse topological order reverse mode, and other
orders can be much cheaper.  Contracting an umbrella is eliminating its interior.

The strategies tried here:

- ``umbrellas``: contract the maximal umbrellas with copied variables (Proposition 4.2),
  then eliminate the rest by the Markowitz rule,
- ``markowitz``: the Markowitz rule alone,
- ``forward`` and ``reverse``: topological and reverse topological order.

The Markowitz rule here eliminates first the vertex whose elimination needs the fewest
multiplications that are not free (by 1, or of two constants: the graph simplifies and
folds those) plus the fewest new edges it can make, then the smallest in-degree ×
out-degree, then the earliest.

`choose` runs each strategy on cost tokens, labels that only record every multiplication
and addition that is not free, and picks the cheapest; the run leaves a log of what it did
(copies and eliminations), which `replay` repeats on the real labels.  Because forward and
reverse order are among the candidates, elimination never costs more than the better of
forward and reverse mode.

Labels are graph nodes (the Jacobian is then a graph: counted, evaluated, differentiated,
emitted as code), plain numbers (the fast eager path), or cost tokens: elimination only
multiplies and adds them.
"""
from __future__ import annotations

import heapq
import itertools

from ..codegen.count import count_ops
from ..graph.node import Node
from ..primitives.registry import CONST
from .edges import EdgeGraph, linearize


# --------------------------------------------------------------------------------------
# eliminating vertices
# --------------------------------------------------------------------------------------
def eliminate_vertex(G: EdgeGraph, j):
    """Remove intermediate vertex j, joining each predecessor to each successor with the
    product of the two labels (added to the edge already there, if any).

    Example:
        >>> from wengert.ad.edges import EdgeGraph
        >>> from wengert.ad.eliminate import eliminate_vertex
        >>> G = EdgeGraph.from_edges([("x", "v", 2.0), ("v", "f", 3.0), ("x", "f", 1.0)])
        >>> eliminate_vertex(G, "v")
        >>> G.edges(), G.label("x", "f")
        ([('x', 'f')], 7.0)
    """
    if G.log is not None:
        G.log.append(("eliminate", j))
    preds, succs = G.preds[j], G.succs[j]
    G.remove_vertex(j)
    for i, c_ji in preds.items():
        out = G.succs[i]
        for k, c_kj in succs.items():
            c = c_kj * c_ji
            old = out.get(k)
            if old is not None:
                c = old + c
            out[k] = c
            G.preds[k][i] = c


def eliminate(G: EdgeGraph, vertices, order="markowitz"):
    """Eliminate `vertices` from G in place, in ``"forward"`` (topological),
    ``"reverse"`` or ``"markowitz"`` order: first the vertex whose elimination costs the
    fewest multiplications that are not free and new edges (`_key`), then the smallest
    in-degree × out-degree, then the earliest; the keys are kept current as eliminations
    change the neighbours.

    Example:
        >>> from wengert.ad.edges import EdgeGraph
        >>> from wengert.ad.eliminate import eliminate
        >>> G = EdgeGraph.from_edges([("x", "a", 2.0), ("a", "b", 3.0), ("b", "f", 4.0)])
        >>> eliminate(G, G.intermediates())
        >>> G.edges(), G.label("x", "f")
        ([('x', 'f')], 24.0)
    """
    rank = G.rank
    if order in ("forward", "reverse"):
        for v in sorted(vertices, key=rank.__getitem__, reverse=order == "reverse"):
            eliminate_vertex(G, v)
        return
    if order != "markowitz":
        raise ValueError(f"elimination order must be 'forward', 'reverse' or 'markowitz', "
                         f"got {order!r}")
    # A heap of (key, rank, sequence number, vertex). Eliminating v changes the keys of its
    # neighbours only, and each of them gets a fresh entry then; `latest` holds the
    # sequence number of each vertex's current entry, so the superseded ones are dropped
    # as they come up (the sequence numbers also keep entries from comparing vertices).
    # A key needs each vertex's in- and out-edges counted by kind; `counts` keeps those
    # counts current edge by edge, since counting afresh would cost a vertex's degree at
    # every elimination next to it: quadratic where one variable feeds every step of a loop.
    seq = itertools.count()
    latest = {}
    counts = {v: _counts(G, v) for v in vertices}

    def entry(v):
        n = latest[v] = next(seq)
        return (_key(counts[v], len(G.preds[v]), len(G.succs[v])), rank[v], n, v)

    heap = [entry(v) for v in vertices]
    heapq.heapify(heap)
    while heap:
        _, _, n, v = heapq.heappop(heap)
        if latest.get(v) != n:
            continue                                # superseded, or eliminated already
        del latest[v]
        del counts[v]
        preds, succs = G.preds[v], G.succs[v]
        for i, c in preds.items():                  # the edges through v go
            if i in counts:
                _count(counts[i], 2, kind(c), -1)
        for k, c in succs.items():
            if k in counts:
                _count(counts[k], 0, kind(c), -1)
        pairs = [(i, k) for i in preds for k in succs if i in counts or k in counts]
        before = [G.succs[i].get(k) for i, k in pairs]
        eliminate_vertex(G, v)
        for (i, k), old in zip(pairs, before):      # edges i -> k made or changed
            new = kind(G.succs[i][k])
            for w, side in ((i, 2), (k, 0)):
                if w in counts:
                    if old is not None:
                        _count(counts[w], side, kind(old), -1)
                    _count(counts[w], side, new, 1)
        for w in (*preds, *succs):
            if w in latest:
                heapq.heappush(heap, entry(w))      # its degrees changed: a fresh key


def _counts(G, v):
    """[constant in-edges, variable in-edges, constant out-edges, variable out-edges] of
    v (edges labelled 1 are free, and not counted)."""
    out = [0, 0, 0, 0]
    for side, edges in ((0, G.preds[v]), (2, G.succs[v])):
        for c in edges.values():
            _count(out, side, kind(c), 1)
    return out


def _count(counts, side, k, d):
    if k == _CONST:
        counts[side] += d
    elif k == _VAR:
        counts[side + 1] += d


def _key(counts, p, s):
    """The Markowitz key of a vertex with in-degree p, out-degree s and `counts`
    (`_counts`): (the multiplications its elimination costs that are not free, plus the
    edges it can add, p·s - p - s; then p·s).  The edges count because a product of
    constants is free but its edge is not: eliminating first every sum of a ladder (a, b
    = f(a, b), a + b), each free, joined every later step to every earlier one, n² edges
    where the rule with them has a few per vertex."""
    pc, pv, sc, sv = counts
    return pv * (sc + sv) + pc * sv + max(0, p * s - p - s), p * s


def _markowitz(G, v):
    """The key of v (`_key`), counted afresh: the key `eliminate` keeps current edge by
    edge."""
    return _key(_counts(G, v), len(G.preds[v]), len(G.succs[v]))


def replay(G: EdgeGraph, log) -> EdgeGraph:
    """A copy of G with the copies and eliminations of `log` (from a strategy run on a
    graph of the same structure) done again, on G's labels.

    Example:
        >>> from wengert.ad.edges import EdgeGraph
        >>> from wengert.ad.eliminate import replay
        >>> G = EdgeGraph.from_edges([("x", "a", 2.0), ("a", "f", 3.0)])
        >>> replay(G, [("eliminate", "a")]).label("x", "f")
        6.0
    """
    from .umbrella import copy_variables
    H = G.copy()
    H.log = None
    for what, arg in log:
        if what == "eliminate":
            eliminate_vertex(H, arg)
        else:
            copy_variables(H, arg, inplace=True)
    return H


# --------------------------------------------------------------------------------------
# counting what an elimination costs
# --------------------------------------------------------------------------------------
class Tally:
    """Counts the multiplications and additions of an elimination run on cost tokens.

    Example:
        >>> from wengert.ad.eliminate import Tally
        >>> t = Tally()
        >>> (t.var * t.one, t.const * t.const, t.var * t.const + t.var)[2] is t.var
        True
        >>> t.counts
        {'mul': 1, 'add': 1}
    """

    def __init__(self, limit=None, work_limit=None):
        self.counts = {"mul": 0, "add": 0}
        #: past this many operations, the count raises `OverBudget` (None: no limit)
        self.limit = limit
        self.spent = 0
        #: the same for products and sums of tokens, free ones included (`work`)
        self.work_limit = work_limit
        self.work = 0
        self.one = _Token(_ONE, self)
        self.const = _Token(_CONST, self)
        self.var = _Token(_VAR, self)

    def token(self, label):
        """The token of a label: 1, another constant, or a value known only at run time."""
        return (self.one, self.const, self.var)[kind(label)]

    def spend(self, what):
        self.counts[what] += 1
        self.spent += 1
        if self.limit is not None and self.spent > self.limit:
            raise OverBudget

    def step(self):
        self.work += 1
        if self.work_limit is not None and self.work > self.work_limit:
            raise OverBudget


class OverBudget(Exception):
    """A strategy run on cost tokens has spent more than its `Tally`'s limit."""


_ONE, _CONST, _VAR = 0, 1, 2


def kind(label) -> int:
    """Whether a label is 1 (_ONE), another constant (_CONST) or known only when the
    function runs (_VAR).  Plain numbers count as constants."""
    t = type(label)
    if t is _Token:
        return label.kind
    if t is Node:
        if label.op is not CONST:
            return _VAR
        return _ONE if label.shape == () and label.value == 1.0 else _CONST
    return _ONE if label == 1.0 else _CONST


class _Token:
    """A label as far as cost goes: multiplying by 1 and combining constants are free
    (the graph simplifies and folds them); anything else is one operation.  Plain numbers
    met on the way (the 1.0 of a copied variable) count as constants."""
    __slots__ = ("kind", "tally")

    def __init__(self, kind, tally):
        self.kind = kind
        self.tally = tally

    def __mul__(self, other):
        self.tally.step()
        if type(other) is not _Token:
            other = self.tally.token(other)
        if self.kind == _ONE:
            return other
        if other.kind == _ONE:
            return self
        if self.kind != _VAR and other.kind != _VAR:
            return self.tally.const
        self.tally.spend("mul")
        return self.tally.var

    def __add__(self, other):
        if type(other) is not _Token:
            other = self.tally.token(other)
        if self.kind != _VAR and other.kind != _VAR:
            return self.tally.const
        self.tally.spend("add")
        return self.tally.var

    __rmul__ = __mul__
    __radd__ = __add__


# --------------------------------------------------------------------------------------
# strategies
# --------------------------------------------------------------------------------------
def _umbrellas(G, doms):
    from .umbrella import umbrellas, umbrella_family, contract
    G, family = umbrella_family(G, umbrellas(G, doms()), inplace=True)
    contract(G, family, check=False, inplace=True)
    eliminate(G, G.intermediates(), "markowitz")


def _ordered(order):
    def run(G, doms):
        eliminate(G, G.intermediates(), order)
    run.__name__ = order
    return run


#: Strategy name -> function(G, post_dominators) that eliminates every intermediate vertex
#: of G, in place.  Listed in order of preference when two cost the same.
STRATEGIES = {
    "umbrellas": _umbrellas,
    "markowitz": _ordered("markowitz"),
    "reverse": _ordered("reverse"),
    "forward": _ordered("forward"),
}


def _post_dominators(G):
    """G's immediate post-dominators, computed once, on first use."""
    memo = []

    def doms():
        if not memo:
            from .umbrella import dominator_trees
            memo.append(dominator_trees(G, dominators=False)[1])
        return memo[0]
    return doms


def estimate(G: EdgeGraph, strategies=None, doms=None, logs=None, budget=False) -> dict:
    """The multiplications and additions each strategy would spend accumulating G's
    Jacobian (the partials themselves cost the same for every strategy and are not
    counted).  Returns ``{strategy: {"mul": m, "add": a}}``; `logs`, if a dict, receives
    each strategy's log for `replay`.

    With ``budget=True`` a strategy is abandoned, and left out of the result, as soon as
    it has spent more than `NEAR` times the cheapest so far plus `SLACK` (the bound within
    which `eliminated_entries` builds candidates): it can neither win nor be built.  Or
    as soon as it has multiplied more than `WORK_NEAR` times as many labels as the one
    that multiplied fewest, plus `WORK_SLACK`, free products (by 1) included: on a
    gradient, forward order joins every input to every partial sum, n² products by 1 (free,
    so its count ties with reverse order's n) where the others make n; running it, and
    building it for real, made elimination quadratic.

    Example:
        >>> import wengert as wg
        >>> from wengert.ad.edges import linearize
        >>> from wengert.ad.eliminate import estimate
        >>> g = wg.trace(lambda x, y: wg.math.sin(wg.math.exp(x * y)), 1.0, 2.0)
        >>> est = estimate(linearize(g, g.inputs, g.outputs))
        >>> est["forward"], est["reverse"], est["umbrellas"]
        ({'mul': 4, 'add': 0}, {'mul': 3, 'add': 0}, {'mul': 3, 'add': 0})
    """
    for name in strategies or ():
        if name not in STRATEGIES:
            raise ValueError(f"unknown elimination strategy {name!r}; the strategies are "
                             f"{', '.join(STRATEGIES)}")
    doms = doms or _post_dominators(G)
    out = {}
    limit = work_limit = None
    least_work = None
    for name in strategies or STRATEGIES:
        tally = Tally(limit, work_limit)
        T = G.map_labels(tally.token)
        T.log = []
        try:
            STRATEGIES[name](T, doms)
        except OverBudget:
            continue
        out[name] = dict(tally.counts)
        if logs is not None:
            logs[name] = T.log
        if budget:
            cheapest = min(sum(c.values()) for c in out.values())
            limit = NEAR * cheapest + SLACK
            least_work = tally.work if least_work is None else min(least_work, tally.work)
            work_limit = WORK_NEAR * least_work + WORK_SLACK
    return out


def choose(G: EdgeGraph, doms=None, logs=None):
    """(name of the cheapest strategy, the estimates of the strategies within `NEAR`
    times its cost plus `SLACK`: `estimate` abandons the others part way)."""
    est = estimate(G, doms=doms, logs=logs, budget=True)
    best = min(est, key=lambda s: sum(est[s].values()))    # first of equals: preference
    return best, est


def eliminated_entries(graph, inputs, outputs, symbolic=True, strategy=None):
    """The Jacobian of `outputs` with respect to `inputs` (scalar nodes of `graph`) by
    vertex elimination, as ``{(row, column): entry}`` for the entries that are not zero.

    The strategy is the cheapest by `choose` (or `strategy`, a name in `STRATEGIES`,
    used as it is), replayed on the real labels.  With ``symbolic=False`` the entries are numbers,
    computed from the values the graph holds.  With ``symbolic=True`` they are nodes of
    `graph` (or floats): the Jacobian is a graph.  Then the strategies that the token
    count puts close to the best are all built for real, and the one whose entries need
    the fewest operations is kept: only the real graph sees what interning and
    simplification save (a product that already exists, a sign that cancels); the
    sweeps (forward and reverse mode) are built too when they are small.  Operations
    are counted in the code the emitter writes, after its rewriting, up to
    `REWRITE_BUDGET` nodes, and as built past it.  The others stay behind as dead nodes
    no output needs.

    Example:
        >>> import wengert as wg
        >>> from wengert.ad.eliminate import eliminated_entries
        >>> g = wg.trace(lambda x, y: (x * y, wg.math.sin(x)), 2.0, 3.0, abstract=False)
        >>> eliminated_entries(g, g.inputs, g.outputs, symbolic=False)
        {(0, 0): 3.0, (0, 1): 2.0, (1, 0): -0.4161468365471424}
    """
    G = linearize(graph, inputs, outputs)
    logs = {}
    if strategy is None:
        best, est = choose(G, logs=logs)
    else:
        best, est = strategy, None
        estimate(G, [strategy], logs=logs)
    if not symbolic:
        return replay(G.map_labels(_value), logs[best]).jacobian_entries()
    names = [best]
    if est is not None:
        # (forward and reverse order too are built only within the bound: their token
        # count past it is what made a gradient's elimination quadratic.  The sweeps
        # below, built whenever small, keep elimination no dearer than fwd and rev.)
        bound = NEAR * sum(est[best].values()) + SLACK
        names += [s for s in est if s not in names and sum(est[s].values()) <= bound]
    candidates = [lambda name=name: replay(G, logs[name]).jacobian_entries()
                  for name in names]
    plan = len(graph.between(inputs, outputs))
    if strategy is None:
        candidates += _sweeps(plan, graph, inputs, outputs, SWEEPS)
    rewrite = plan <= REWRITE_BUDGET
    found = None
    for build in candidates:
        entries = build()
        outs = [v for v in entries.values() if type(v) is Node]
        cost = sum(count_ops(graph, outs, rewrite=rewrite).values())
        if found is None or cost < found[0]:
            found = (cost, entries)
    return found[1]


#: Which strategies are built for real: those whose token count is within NEAR times the
#: best one's, plus SLACK operations (interning can make one cheaper than its token
#: count: reverse order on Broyden's function reuses the function's own 2*x).  `choose`
#: abandons the others part way: they are not built, and not even counted to the end.
NEAR, SLACK = 1.25, 4

#: `estimate` with a budget abandons a strategy that multiplies more than WORK_NEAR times
#: as many labels as the one that multiplied fewest, plus WORK_SLACK: forward order on a
#: gradient, whose n² products are free (by 1) and so tie on the count, but take n² time
#: to run and to build.  (The sweeps, below, still bound what elimination costs.)
WORK_NEAR, WORK_SLACK = 4, 10_000

#: Forward and reverse order, carried out direction by direction, are forward and reverse
#: sweeps.  A sweep multiplies each argument's partial separately where elimination first
#: adds the partials of a repeated argument (x*x), which interning sometimes rewards
#: (x*x already exists).  So when the sweeps are small (directions × nodes up to
#: SWEEP_BUDGET) they are built too: elimination then never costs more than forward or
#: reverse mode.
SWEEPS = {"forward": "columns", "reverse": "rows"}
SWEEP_BUDGET = 100_000

#: The candidates are compared by the operations of the code the emitter would write for
#: them, after its rewriting (`count_ops`), which sometimes halves a candidate's count and
#: so changes which one wins.  But the rewriting costs ~0.3 ms per node and candidate:
#: half a minute for six candidates at 15,000 nodes, hours at a million.  Past
#: REWRITE_BUDGET nodes (between the inputs and the outputs) the candidates are compared
#: by their counts as built, which pick the same one almost always (234 of the test
#: suite's 241 eliminations; the other 7 cost up to 1.5x more once rewritten).
REWRITE_BUDGET = 2_000


def _sweeps(plan, graph, inputs, outputs, orders):
    # (plan: the number of nodes between the inputs and the outputs)
    from .sparse import compressed
    found = []
    for order in orders:
        by = SWEEPS[order]
        k = len(inputs) if by == "columns" else len(outputs)
        if k * plan <= SWEEP_BUDGET:
            def build(by=by, k=k):
                I, J, V = compressed(graph, inputs, outputs, None, list(range(k)), by, True)
                return dict(zip(zip(I, J), V))
            found.append(build)
    return found


def _value(label):
    return label.value if type(label) is Node else label     # (a partial the rule gave as
    #                                                          a number: 1.0, or 1j)
