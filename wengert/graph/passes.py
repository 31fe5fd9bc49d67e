"""Rewriting a finished graph before its code is emitted or counted.

The construction-time rules (`simplify.py`) see one operation at a time, when it is made:
they cannot know how often a node will be used, nor what is computed later.  This pass
sees the whole part of the graph that some outputs need, with the number of uses of every
node, and rewrites it through `Graph.apply` (so the construction rules, interning and
constant folding apply to everything it makes).  It rewrites a copy of that part alone,
so its result depends on nothing else in the graph (not on what other statements or
earlier passes left there), then appends what it made to the same graph and returns the
new output nodes: a node the pass does not change keeps its number (and so its name
``V0003`` in emitted code); the old nodes stay, unused.

The rules, all exact for real numbers, all on float64 scalars only (so no shape or dtype
can change):

1. **Constants float out of products**: ``x*(c*y) -> c*(x*y)`` when every use of ``c*y`` is
   a product, so that ``c*y`` disappears and ``c`` rises to where it merges with other
   constants (``2*(2*z) -> 4*z``) or joins a sum's coefficients.
2. **Products reuse products**: ``x*(y*z) -> (x*y)*z`` when ``x*y`` is computed anyway and
   ``y*z`` is used only here (``x*(x*t) -> (x*x)*t`` shares a square).
3. **Linear combinations are collected**: a tree of ``+``, ``-``, unary ``-`` and products
   by constants, whose inner nodes are used once, is a linear combination
   ``Σ c_k a_k``; like terms merge (``a + 2*a -> 3*a``, ``2*w + 4*w -> 6*w``) and terms with
   one coefficient share one multiplication (``c*a - c*b -> c*(a-b)``).  The tree is
   rebuilt only when that takes fewer operations.
4. **Dot products are transposed**: ``Σ_k u_k * (Σ_j d_kj b_j) = Σ_j b_j * (Σ_k d_kj u_k)``.
   When the inner sums ``Σ_k d_kj u_k`` are already computed, up to a constant factor,
   the right side costs far less.  This is the case of ``p·(H p)`` by forward mode over
   reverse mode (seed 002's Example 2): ``H p = Jᵀ(D J p)``, and ``J p`` -- the tangents
   of the intermediate values -- is at hand, so ``pᵀ H p = (J p)ᵀ D (J p)``.  A term
   ``u_k * b`` whose factor b is one of the ``b_j`` joins in as ``u_k * (1*b)``.  Existing
   sums are found by the linear combination of non-linear nodes they compute.

Coefficients are exact rationals (Python ints, Fractions where they are not integers) and
a rule applies only where every coefficient it writes is exactly a float64, so no rule
rounds a constant.  All walks are loops over creation order: no recursion over the graph's
depth; linear combinations have at most `MAX_TERMS` terms, so a round takes time linear
in the size of the graph.

The pass runs in rounds, each on the previous round's result (a round may cost more, as
when a constant floats into several products; the next one collects it), until nothing
changes, two rounds in a row find nothing cheaper, or `MAX_ROUNDS` rounds have run, and
returns the cheapest outputs it saw: never more operations than the input.
"""
from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np

from ..primitives import scalar as P
from ..primitives.registry import CONST, COPY
from .graph import Graph

MAX_TERMS = 16          # a linear combination with more terms is left as it is
MAX_ROUNDS = 6
_TWO_53 = 1 << 53
_ONE = -1               # the key of the constant term of a linear combination
_F64 = np.dtype(np.float64)


def optimize(graph, outputs) -> list:
    """The output nodes, rewritten by the rules of the module doc (same graph).

    Does nothing for a graph built with ``optimize=False``, so that what plain AD computes
    can still be counted.

    Example:
        >>> import wengert as wg
        >>> g = wg.Graph()
        >>> x, y = g.input(wg.ShapeDtype(), "x"), g.input(wg.ShapeDtype(), "y")
        >>> f = x * (3.0 * y) + 2.0 * (x * y)
        >>> print(g.format([f]))
        graph(x: f64[], y: f64[]):
          %3: f64[] = mul(y, 3.0)
          %4: f64[] = mul(x, %3)
          %5: f64[] = mul(x, y)
          %7: f64[] = mul(%5, 2.0)
          %8: f64[] = add(%4, %7)
          return %8
        >>> print(g.format(optimize(g, [f])))     # 3*(x*y) + 2*(x*y): like terms
        graph(x: f64[], y: f64[]):
          %5: f64[] = mul(x, y)
          %10: f64[] = mul(%5, 5.0)
          return %10
    """
    outputs = list(outputs)
    if not graph.optimize or not outputs:
        return outputs
    # The rounds run on a copy of the part the outputs need.  In `graph` itself, interning
    # would find nodes that other statements, or earlier calls, left there, and their
    # creation order would differ: the result (and so a count) would depend on what ran
    # before, and a count could disagree with the code emitted after it.
    scratch = Graph(optimize=True, straight_line=graph.straight_line)
    copy_of = _carry(graph, outputs, scratch, {})
    back = {n.index: graph.nodes[i] for i, n in copy_of.items()}    # scratch -> `graph`
    start = [copy_of[o.index] for o in outputs]
    best, best_cost = start, cost(scratch, start)
    current = start
    stale = 0                             # rounds in a row that found nothing cheaper
    for _ in range(MAX_ROUNDS):
        new = _Round(scratch, current).run()
        if all(a is b for a, b in zip(new, current)):
            break                         # a fixed point
        current = new                     # a round may cost more: the next collects it
        c = cost(scratch, new)
        stale = 0 if c < best_cost else stale + 1
        if c <= best_cost:
            best, best_cost = new, c
        if stale == 2:
            # Two rounds gained nothing: what they do is move constants that cannot merge
            # (0.999*(0.999*z) rounds) one product up per round, all the way along a chain.
            break
    _carry(scratch, best, graph, back)            # what the rounds made, into `graph`
    return [back[o.index] for o in best]


def _carry(source, outputs, target, image) -> dict:
    """Copy into `target` (by `Graph.remake`) the nodes of `source` that `outputs` need
    and `image` (source index -> node of target) does not hold yet; returns `image`, which
    then holds them all."""
    for i in sorted(source.mark_down(outputs)):
        if i not in image:
            node = source.nodes[i]
            image[i] = target.remake(node, [image[a.index] for a in node.args])
    return image


def cost(graph, outputs) -> int:
    """Operations (of any cost class, elementwise ones once per element) the outputs need."""
    total, nodes = 0, graph.nodes
    for i in graph.mark_down(outputs):
        node = nodes[i]
        if node.op.cost is not None:
            total += 1 if node.shape == () else max(1, node.size)
    return total


# --------------------------------------------------------------------------------------
# helpers on nodes
# --------------------------------------------------------------------------------------
def _scalar(n) -> bool:
    return n.shape == () and n.dtype == _F64


def _variable(n) -> bool:
    """A float64 scalar that is not a constant."""
    return n.op is not CONST and _scalar(n)


def _const_value(n):
    """The value of a finite float64 scalar constant, exactly: an int if it is an integer
    (the common case, and fast), else a Fraction; None for anything else."""
    if n.op is CONST and _scalar(n) and math.isfinite(n.value):
        v = n.value
        return int(v) if v.is_integer() else _fraction(v)
    return None


@functools.lru_cache(maxsize=4096)
def _fraction(v):
    """Fraction(v) for a float v: a graph has few distinct constants, used again and
    again, and making a Fraction costs more than the rules that use it."""
    return Fraction(v)


def _exact(q) -> bool:
    """Whether the rational q (int or Fraction) is exactly a finite float64."""
    if type(q) is int:
        if -_TWO_53 <= q <= _TWO_53:            # the common case: a small integer
            return True
        try:
            return float(q) == q                # Python compares these exactly
        except OverflowError:
            return False
    n, d = q.numerator, q.denominator
    if d & (d - 1):
        return False                            # not a power of two: no binary fraction
    try:
        f = n / d                               # correctly rounded
    except OverflowError:
        return False
    return math.isfinite(f) and f.as_integer_ratio() == (n, d)   # both in lowest terms


def _ratio(a, b):
    """a / b exactly."""
    if type(a) is int and type(b) is int and a % b == 0:
        return a // b
    return Fraction(a) / b


def _scaled(n):
    """(c, z) if n is ``c*z`` (z not a constant, c a finite float64 constant), else None."""
    if n.op is P.mul and _scalar(n):
        a, b = n.args
        for z, c in ((a, b), (b, a)):
            q = _const_value(c)
            if q is not None and c is not z and z.op is not CONST and _scalar(z):
                return q, z
    return None


def _term(n):
    """(q, z) if n is ``c*z`` (q = c) or ``-z`` (q = -1), z a float64 scalar variable."""
    if n.op is P.neg and _variable(n.args[0]) and _scalar(n):
        return -1, n.args[0]
    return _scaled(n)


def _linear_parts(n):
    """[(argument, coefficient)] if n is a linear operation on float64 scalars (+, -,
    unary -, product by a constant), else None."""
    if not _scalar(n):
        return None
    op = n.op
    if op is P.add or op is P.sub:
        a, b = n.args
        if not (_scalar(a) and _scalar(b)):
            return None
        return [(a, 1), (b, 1 if op is P.add else -1)]
    if op is P.neg:
        a = n.args[0]
        return [(a, -1)] if _scalar(a) else None
    s = _scaled(n)
    if s is not None:
        return [(s[1], s[0])]
    return None


def _combine(parts, expand):
    """The linear combination Σ q*a of `parts` [(a, q)], with an argument a replaced by
    the combination expand(a) where that is not None; and the arguments so replaced.
    None if a constant argument is not a finite float64."""
    form, expanded = {}, []
    for a, q in parts:
        if a.op is CONST:
            v = _const_value(a)
            if v is None:
                return None
            _add_term(form, _ONE, q * v)
            continue
        sub = expand(a)
        if sub is None:
            _add_term(form, a.index, q)
        else:
            for k, c in sub.items():
                _add_term(form, k, q * c)
            expanded.append(a.index)
    return form, expanded


def _keyed(terms):
    """A form {index: q} of [(node, q)]."""
    return {n.index: q for n, q in terms}


def _add_term(form, key, q):
    v = form.get(key, 0) + q
    if v:
        form[key] = v
    else:
        form.pop(key, None)


def _normalized(form):
    """(key, factor): a form divided by the coefficient of its first term, and that
    coefficient.  Two forms are multiples of each other iff their keys are equal."""
    first = min(form)
    c0 = form[first]
    return tuple(sorted((k, _ratio(q, c0)) for k, q in form.items())), c0


def linear_cost(form) -> int | None:
    """Operations `build_linear` spends on a form (at most: it may find nodes interned),
    None if a coefficient is not exactly a float64."""
    if not all(_exact(q) for q in form.values()):
        return None
    const = form.get(_ONE, 0)
    terms = [q for k, q in form.items() if k != _ONE]
    if not terms:
        return 0
    groups = {}
    for q in terms:
        groups.setdefault(abs(q), []).append(q)
    ops = len(terms) - 1 + sum(1 for m in groups if m != 1)
    if const:
        ops += 1
    elif all(all(q < 0 for q in g) for g in groups.values()):
        ops += 1                                       # a negation
    return ops


def build_linear(graph, terms, const=0):
    """The node of ``Σ q*node + const`` for `terms` [(node, q)], every q exactly a float:
    terms with equal |q| share one multiplication (``c*a - c*b -> c*(a-b)``), positive
    terms come first (``a - b``, not ``-b + a``), a negation only when every term is
    negative.  Sums are built left to right in the order of the terms' nodes."""
    groups = {}
    for node, q in sorted(terms, key=lambda t: t[0].index):
        groups.setdefault(abs(q), []).append((node, q > 0))
    parts = []                            # (members, |q|, positive): one per group
    for m, members in groups.items():
        pos = [n for n, p in members if p]
        neg = [n for n, p in members if not p]
        parts.append(((pos, neg) if pos else (neg, []), m, bool(pos)))

    def group(part):
        (pos, neg), m, _ = part
        inner = _signed_sum(graph, pos, neg)
        return inner if m == 1 else graph.apply(P.mul, (inner, float(m)))

    positive = [p for p in parts if p[2]]
    negative = [p for p in parts if not p[2]]
    total = None
    for part in positive + negative:
        node = group(part)
        if total is None:
            total = node if part[2] else None
            if total is None:             # every term negative: sum them, negate at the end
                total = node
                for rest in negative[1:]:
                    total = graph.apply(P.add, (total, group(rest)))
                if const:
                    return graph.apply(P.sub, (float(const), total))
                return graph.apply(P.neg, (total,))
        else:
            total = graph.apply(P.add if part[2] else P.sub, (total, node))
    if total is None:
        return graph.const(float(const))
    if const > 0:
        return graph.apply(P.add, (total, float(const)))
    if const < 0:
        return graph.apply(P.sub, (total, float(-const)))
    return total


def _signed_sum(graph, pos, neg):
    total = pos[0]
    for n in pos[1:]:
        total = graph.apply(P.add, (total, n))
    for n in neg:
        total = graph.apply(P.sub, (total, n))
    return total


# --------------------------------------------------------------------------------------
# one round
# --------------------------------------------------------------------------------------
class _Round:
    """One rewrite of the part of the graph the outputs need, in creation order."""

    def __init__(self, graph, outputs):
        self.graph = graph
        self.outputs = outputs
        self.nodes = graph.nodes
        self.live = sorted(graph.mark_down(outputs))
        self.live_set = set(self.live)
        self.start = len(graph.nodes)                  # nodes made by this round follow
        self.new_of = {}
        self._analyse()

    # --- what the old graph says ------------------------------------------------------
    def _analyse(self):
        nodes = self.nodes
        uses = {}
        only_products = {}             # node -> every use is a product of two variables
        for i in self.live:
            node = nodes[i]
            is_product = (node.op is P.mul and _scalar(node)
                          and all(a.op is not CONST for a in node.args))
            for a in node.args:
                uses[a.index] = uses.get(a.index, 0) + 1
                if not is_product:
                    only_products[a.index] = False
                else:
                    only_products.setdefault(a.index, True)
        for o in self.outputs:
            uses[o.index] = uses.get(o.index, 0) + 1
            only_products[o.index] = False
        self.uses, self.only_products = uses, only_products

        # Linear combinations.  `own` expands the linear arguments used once: a tree that
        # disappears when its root is rebuilt (`size` counts its operations, `inner` lists
        # the arguments it expanded, `absorbed` holds every node inside some tree).
        own, size, inner_of = {}, {}, {}
        absorbed = set()

        def once(a):
            return own.get(a.index) if uses.get(a.index) == 1 else None

        for i in self.live:
            parts = _linear_parts(nodes[i])
            combined = None if parts is None else _combine(parts, once)
            if combined is None:
                continue
            form, inner = combined
            if inner and not all(_exact(q) for q in form.values()):
                # a coefficient would need rounding: the arguments stay roots
                form, inner = _combine(parts, lambda a: None)
            if len(form) <= MAX_TERMS:
                own[i], inner_of[i] = form, inner
                size[i] = 1 + sum(size[k] for k in inner)
                absorbed.update(inner)
        self.own, self.size, self.inner_of, self.absorbed = own, size, inner_of, absorbed
        self.full = self.table = None          # made when rule 4 first needs them

    def _tree(self, i):
        """The nodes of the linear tree rooted at i, in creation order."""
        found, stack = [], [i]
        while stack:
            k = stack.pop()
            found.append(k)
            stack.extend(self.inner_of[k])
        return sorted(found)

    def _full_forms(self):
        """`full`: what every linear node computes, as a combination of non-linear nodes
        (every linear argument expanded); `table`: the nodes not inside a tree by that
        combination up to a factor, for finding a node that computes a given one."""
        nodes, full = self.nodes, {}
        for i in self.live:
            parts = _linear_parts(nodes[i])
            combined = None if parts is None else _combine(parts, lambda a: full.get(a.index))
            if combined is not None and len(combined[0]) <= MAX_TERMS:
                full[i] = combined[0]
        table = {}
        for i, form in full.items():
            if form and i not in self.absorbed:
                key, c0 = _normalized(form)
                table.setdefault(key, (i, c0))
        self.full, self.table = full, table

    # --- the rewrite ----------------------------------------------------------------------
    def run(self):
        nodes, new_of = self.nodes, self.new_of
        for i in self.live:
            node = nodes[i]
            if not node.args:
                new_of[i] = node
            elif i in self.absorbed:
                continue                    # rebuilt with its tree's root, if at all
            elif i in self.own:
                new_of[i] = self._linear(i)
            elif node.op is P.mul and _scalar(node):
                a, b = (new_of[x.index] for x in node.args)
                new_of[i] = self._product(a, b, node)
            else:
                new_of[i] = self._rebuild(node)
        return [new_of[o.index] for o in self.outputs]

    def _rebuild(self, node):
        args = [self.new_of[a.index] for a in node.args]
        if all(a is b for a, b in zip(args, node.args)):
            return node
        if node.op is COPY:
            return self.graph.copy(args[0], node.name)
        return self.graph.apply(node.op, args, node.params)

    def _is_live(self, node) -> bool:
        return node.index in self.live_set or node.index >= self.start

    def _dies(self, node) -> bool:
        """Whether a node is used once (old nodes: in the old graph; nodes made in this
        round are made for one use)."""
        return node.index >= self.start or self.uses.get(node.index, 0) == 1

    # --- rules 1 and 2: products --------------------------------------------------------
    def _product(self, a, b, old=None):
        """The node of a*b, constants floated out and existing products reused."""
        graph = self.graph
        if a.op is CONST or b.op is CONST:
            return graph.apply(P.mul, (a, b))
        coef = 1
        old_args = old.args if old is not None else (None, None)
        factors = []
        for x, x_old in zip((a, b), old_args):
            s = _term(x)
            # c floats out of c*z when c*z then disappears: every use of the node it
            # stands for is a product (a node made by this round has one use, this one)
            floats = s is not None and (
                x.index >= self.start if x_old is None
                else self.only_products.get(x_old.index, False))
            if floats and _exact(coef * s[0]):
                coef *= s[0]
                factors.append(s[1])
            else:
                factors.append(x)
        core = self._reassociate(*factors)
        if old is not None and coef == 1 and core is None and \
                factors[0] is old_args[0] and factors[1] is old_args[1]:
            return old
        if core is None:
            core = graph.apply(P.mul, tuple(factors))
        return core if coef == 1 else graph.apply(P.mul, (core, float(coef)))

    def _reassociate(self, x, y):
        """(x*u)*v for x*(u*v) when x*u is computed anyway and u*v is used only here
        (either way round); None if there is no such product."""
        graph = self.graph
        for p, q in ((x, y), (y, x)):
            if q.op is not P.mul or not _scalar(q) or not self._dies(q):
                continue
            u, v = q.args
            if not (_variable(u) and _variable(v) and _scalar(p)):
                continue
            for s, t in ((u, v), (v, u)):
                found = graph._lookup(P.mul, (p, s))
                if found is not None and found is not q and self._is_live(found):
                    return graph.apply(P.mul, (found, t))
        return None

    # --- rules 3 and 4: linear combinations -------------------------------------------
    def _linear(self, i):
        """The root of a linear tree: transposed (rule 4), collected (rule 3) or rebuilt."""
        form = self.own[i]
        done = self._transpose(i, form)
        if done is not None:
            return done
        terms, freed = self._mapped(form.items())
        const = form.get(_ONE, 0)
        mapped = _keyed(terms)
        if const:
            mapped[_ONE] = const
        ops = linear_cost(mapped)
        if ops is not None and ops < self.size[i] + freed:
            return build_linear(self.graph, terms, const)
        for m in self._tree(i):               # the tree as it was, arguments rebuilt
            self.new_of[m] = self._rebuild(self.nodes[m])
        return self.new_of[i]

    def _mapped(self, items):
        """[(new node, q)] for [(old node index, q)]: equal images merged, and an image
        made in this round as ``c*z`` or ``-z`` taken as z with its factor (the constant
        rule 1 floated joins the coefficients).  Also how many such images there were:
        operations that disappear with them."""
        merged, freed = {}, 0
        for k, q in items:
            if k == _ONE:
                continue
            node = self.new_of[k]
            t = _term(node) if node.index >= self.start else None
            if t is not None:
                node, q = t[1], q * t[0]
                freed += 1
            prev = merged.get(node.index)
            merged[node.index] = (node, q if prev is None else prev[1] + q)
        return [(n, q) for n, q in merged.values() if q], freed

    def _transpose(self, i, form):
        """Rule 4 at the root i: Σ_k c_k u_k v_k, v_k linear, as Σ_j b_j M_j; None if that
        is not cheaper."""
        nodes, own, uses = self.nodes, self.own, self.uses
        picked = []                               # (coefficient, u, v's form, ops freed)
        rest = {}
        products = []
        for k, c in form.items():
            node = nodes[k] if k != _ONE else None
            if node is not None and node.op is P.mul and _scalar(node) and \
                    uses.get(k) == 1 and all(a.op is not CONST for a in node.args):
                products.append((k, c))
            else:
                rest[k] = c
        # products with a factor v that is a linear combination used only here
        later = []
        for k, c in products:
            choice = None
            for u, v in (nodes[k].args, nodes[k].args[::-1]):
                vf = own.get(v.index)
                if vf is not None and uses.get(v.index) == 1 and _ONE not in vf and \
                        (choice is None or len(vf) > len(choice[2])):
                    choice = (c, u, vf, 1 + self.size[v.index])
            if choice is None:
                later.append((k, c))
            else:
                picked.append(choice)
        # and products u*b with b one of the terms of those combinations: u*b = u*(1*b)
        terms_of_v = {b for _, _, vf, _ in picked for b in vf}
        for k, c in later:
            a, b = nodes[k].args
            if b.index in terms_of_v:
                picked.append((c, a, {b.index: 1}, 1))
            elif a.index in terms_of_v:
                picked.append((c, b, {a.index: 1}, 1))
            else:
                rest[k] = c
        if len(picked) < 2:
            return None
        # Σ_k c_k u_k Σ_j d_kj b_j  ->  Σ_j b_j M_j,  M_j = Σ_k c_k d_kj u_k
        inner = {}
        for c, u, vf, _ in picked:
            for b, d in vf.items():
                _add_term(inner.setdefault(b, {}), u.index, c * d)
        plan = []                                 # (b, existing node or form, scale)
        after = 0
        for b, m in inner.items():
            if not m:
                continue
            found = self._find(m)
            if found is not None:
                plan.append((b, found[0], found[1]))
            else:
                ops = linear_cost(m)
                if ops is None:
                    return None
                plan.append((b, m, 1))
                after += ops
            after += 1                            # the product b * M
        final = dict(rest)
        for n, (b, e, s) in enumerate(plan):
            final[("t", n)] = s
        ops = linear_cost(final)
        if ops is None:
            return None
        after += ops
        before = self.size[i] + sum(p[3] for p in picked)
        if after >= before:
            return None
        graph, new_of = self.graph, self.new_of
        terms = self._mapped(rest.items())[0]
        for b, e, s in plan:
            if isinstance(e, dict):
                e = build_linear(graph, [(new_of[k], q) for k, q in e.items()])
            else:
                e = new_of[e.index] if e.index in new_of else e
            terms.append((self._product(new_of[b], e), s))
        merged = {}
        for node, q in terms:                       # equal products merge their terms
            key = node.index
            prev = merged.get(key)
            merged[key] = (node, q if prev is None else prev[1] + q)
        terms = [(n, q) for n, q in merged.values() if q]
        if not all(_exact(q) for _, q in terms):
            return None
        return build_linear(graph, terms, rest.get(_ONE, 0))

    def _find(self, m):
        """(node, s) with s * node == the linear combination m of old nodes, s exactly a
        float; None if no node computes a multiple of m."""
        if len(m) == 1:
            (k, q), = m.items()
            return (self.nodes[k], q) if _exact(q) else None
        if self.full is None:
            self._full_forms()
        value = {}
        for k, q in m.items():
            sub = self.full.get(k)
            if sub is None:
                _add_term(value, k, q)
            else:
                for j, c in sub.items():
                    _add_term(value, j, q * c)
        if not value or len(value) > MAX_TERMS:
            return None
        key, c0 = _normalized(value)
        hit = self.table.get(key)
        if hit is None:
            return None
        j, cj = hit
        if j not in self.new_of:                  # made after the root: not at hand
            return None
        s = _ratio(c0, cj)
        return (self.nodes[j], s) if _exact(s) else None
