"""Simplification at construction (seed 002, §3.1): the rewrite rules.

`Graph.apply` asks a primitive's rule before it looks for or makes a node.  A rule sees the
argument nodes (commutative ones already in creation order) and returns the node to use
instead, or None.  Rules never change a result's shape or dtype: ``x*1 -> x`` applies only
where ``x`` already has the shape and dtype of ``x*1``.

Rules that hold for real numbers but not in every floating-point corner (``x*0 -> 0`` and
``x/x -> 1`` when x is inf or nan, ``x-x -> 0`` when x is inf) are applied as ADDS
applies them: wengert differentiates real functions.  A graph made under
``wg.options(ieee=True)`` (``graph.ieee``) skips them, and the ones that change only the
sign of a zero (``x+0 -> x`` at x = -0) or can overflow (``c*(d*z) -> (c*d)*z``): the
rules left are exact for every float.

Constants are merged only where that changes no float: ``c*(d*z) -> (c*d)*z`` applies
when c or d is a power of two and the float ``c*d`` is the product itself (``3*(3*z)``
stays: it rounds twice, ``9*z`` once).  Apart from the inf/nan corners above, a graph
built with these rules computes what the traced code computes, bit for bit.  A float64
scalar added to itself becomes ``2*x`` (bit for bit the same number): scaled terms are
what these rules and the emitter's pass (`passes.py`) combine, ``10*(2*x) -> 20*x``,
where ``10*(x+x)`` stays two operations.

Constant folding is not a rule here: `Graph.apply` folds any foldable primitive whose
arguments are all constants, before it asks a rule, so a rule always has an operand that
is not a constant (``0/0`` folds to nan; ``x/x -> 1`` never sees it).  Rewrites that need
to know how often a node is used, or what is computed elsewhere, are not rules here
either: they are the emitter's pass (`passes.py`), run on a finished graph.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..primitives import array as A
from ..primitives import scalar as P
from ..primitives import shape as S
from ..primitives.registry import CONST, weak_result


def _is(n, v) -> bool:
    """Whether node n is a constant whose every element equals v."""
    if n.op is not CONST:
        return False
    if n.shape == ():
        return n.value == v
    return bool(np.all(n.value == v))


def _keeps(x, op, args, params) -> bool:
    """Whether `x` has the shape and dtype of ``op(*args)``, so it can stand for it."""
    if all(a.shape == () for a in args) and x.shape == () and x.dtype.kind in "fc":
        # (floats of one dtype stay it; integers do not: x / 1 of an int is a float)
        if all(a.dtype == x.dtype for a in args):
            return True
    return op.abstract_eval(args, params) == (x.shape, x.dtype)


def _filled(graph, op, args, params, v):
    """A constant of ``op(*args)``'s shape and dtype, every element v."""
    shape, dtype = op.abstract_eval(args, params)
    if shape == () and dtype == np.float64:
        return graph.const(float(v))
    return graph.const(np.full(shape, v, dtype=dtype))


def _add(g, args, params):
    x, y = args
    if x is y and x.shape == () and x.dtype == np.float64:
        return g.apply(P.mul, (x, g.const(2.0)))                  # x + x -> 2*x
    if x.op not in _INTERESTING and y.op not in _INTERESTING:
        return None
    if not g.ieee:
        if y.op is A.index_add or x.op is A.index_add:
            merged = _scatters(g, x, y) if y.op is A.index_add else _scatters(g, y, x)
            if merged is not None:
                return merged
        if _is(y, 0) and _keeps(x, P.add, args, params):
            return x                                              # x + 0 -> x
        if _is(x, 0) and _keeps(y, P.add, args, params):
            return y                                              # 0 + y -> y
    if y.op is P.neg:
        return g.apply(P.sub, (x, y.args[0]))                     # x + (-z) -> x - z
    if x.op is P.neg:
        return g.apply(P.sub, (y, x.args[0]))                     # (-z) + y -> y - z
    return None


def _sub(g, args, params):
    x, y = args
    if x is not y and x.op not in _INTERESTING and y.op not in _INTERESTING:
        return None
    if not g.ieee:
        if x is y:
            return _filled(g, P.sub, args, params, 0)             # x - x -> 0
        if _is(y, 0) and _keeps(x, P.sub, args, params):
            return x                                              # x - 0 -> x
        if _is(x, 0) and _keeps(y, P.sub, args, params):
            return g.apply(P.neg, (y,))                           # 0 - y -> -y
    if y.op is P.neg:
        return g.apply(P.add, (x, y.args[0]))                     # x - (-z) -> x + z
    return None


def _mul(g, args, params):
    x, y = args
    if x.op is not CONST and y.op is not CONST:
        return None
    for a, b in ((x, y), (y, x)):
        if _is(b, 1) and _keeps(a, P.mul, args, params):
            return a                                              # x * 1 -> x
        if _is(b, 0) and not g.ieee:
            return _filled(g, P.mul, args, params, 0)             # x * 0 -> 0
        if _is(b, -1) and _keeps(a, P.mul, args, params):
            return g.apply(P.neg, (a,))                           # x * -1 -> -x
        if b.op is CONST and _scalar_float(a, b):
            if a.op is P.neg:
                return g.apply(P.neg, (g.apply(P.mul, (a.args[0], b)),))  # c*(-z) -> -(c*z)
            if a.op is P.mul and _scalar_float(*a.args):
                z, c = a.args if a.args[1].op is CONST else a.args[::-1]
                if c.op is CONST and not g.ieee and _merges(b.value, c.value):
                    # c*(d*z) -> (c*d)*z
                    return g.apply(P.mul, (z, g.const(float(b.value * c.value))))
    return None


def _merges(c, d) -> bool:
    """Whether ``c*(d*z)`` and ``(c*d)*z`` are the same float for every z (barring
    overflow and underflow of d*z): c or d a power of two, and c*d exact.  Any other pair
    rounds differently (``3*(3*0.1)`` is 0.9000000000000001, ``9*0.1`` is 0.9), and
    compiled code must round as the traced function; the emitter's pass, which counts
    operations for real numbers, merges those."""
    cd = c * d
    if not (math.isfinite(c) and math.isfinite(d) and math.isfinite(cd)):
        return False
    if not (_power_of_two(c) or _power_of_two(d)):
        return False
    if abs(cd) >= _SMALLEST_NORMAL:     # a power of two times z moves only z's exponent
        return True
    return Fraction(cd) == Fraction(c) * Fraction(d)        # (a subnormal may lose bits)


_SMALLEST_NORMAL = np.finfo(np.float64).tiny


def _power_of_two(c) -> bool:
    return c != 0 and math.frexp(abs(c))[0] == 0.5


def _scalar_float(*nodes) -> bool:
    """Whether all nodes are float64 scalars: where reassociating constants cannot change a
    result's shape or dtype."""
    return all(n.shape == () and n.dtype == np.float64 for n in nodes)


def _div(g, args, params):
    x, y = args
    if x is not y and x.op is not CONST and y.op is not CONST:
        return None
    if x is y and not g.ieee:
        return _filled(g, P.div, args, params, 1)                 # x / x -> 1
    if _is(y, 1) and _keeps(x, P.div, args, params):
        return x                                                  # x / 1 -> x
    if _is(x, 0) and not g.ieee:
        return _filled(g, P.div, args, params, 0)                 # 0 / y -> 0
    return None


def _neg(g, args, params):
    (x,) = args
    if x.op is P.neg:
        return x.args[0]                                          # -(-z) -> z
    return None


def _powi(g, args, params):
    (x,) = args
    n = params["n"]
    if n == 1:
        return x                                                  # x**1 -> x
    if n == 0:
        return _filled(g, P.powi, args, params, 1)                # x**0 -> 1
    return None


def _select(g, args, params):
    c, a, b = args
    if a is b and _keeps(a, P.select, args, params):
        return a                                                  # select(c, a, a) -> a
    if c.op is CONST and c.shape == ():
        kept = a if c.value else b                                # known condition
        if _keeps(kept, P.select, args, params):
            return kept
    return None


def _same_shape(g, args, params):
    return args[0] if args[0].shape == tuple(params["shape"]) else None   # no-op reshape


# --- sums of scatters -----------------------------------------------------------------------
# A reverse sweep through x[0], x[1], ... (a state read by components, a vector built by
# stack) adds one index_add (zeros with g added at an index) per use.  Where those indices
# are slices of one array side by side, the sum is one index_add of their pieces joined,
# and where they cover the whole array, the joined pieces themselves: no zeros, no scatter.
# Each rewrite adds the same numbers at the same places (no rounding changes).

def _scatters(g, x, y):
    """The rewrite of ``x + y``, y an index_add, or None."""
    if x.op is A.index_add:
        return _merged_scatter(g, x, y)
    if x.op is P.add:
        # (p + index_add(a)) + index_add(b) -> p + (index_add(a) + index_add(b)), only
        # where a and b land on different elements (one addition each: exact)
        for p, q in (x.args, x.args[::-1]):
            if q.op is A.index_add:
                inner = _merged_scatter(g, q, y, disjoint=True)
                if inner is not None:
                    return g.apply(P.add, (p, inner))
    return None


def _merged_scatter(g, x, y, disjoint=False):
    """index_add(a, I) + index_add(b, J) as one index_add, or None: where I and J are the
    same on every axis but one, on which their ranges meet or overlap (the pieces are
    joined there, summed where both land).  With `disjoint`, only where they do not
    overlap."""
    shape = x.params["shape"]
    if y.params["shape"] != shape or x.dtype != y.dtype:
        return None
    a, b = x.args[0], y.args[0]
    ranges_a = _ranges(x.params["index"], shape)
    ranges_b = _ranges(y.params["index"], shape)
    if ranges_a is None or ranges_b is None or a.shape != _picked(ranges_a) or \
            b.shape != _picked(ranges_b):
        return None
    if ranges_a == ranges_b:
        if disjoint:
            return None
        return _scatter(g, g.apply(P.add, (a, b)), ranges_a, shape)
    differ = [k for k, (u, v) in enumerate(zip(ranges_a, ranges_b)) if u != v]
    if len(differ) != 1:
        return None
    k = differ[0]
    (lo_a, hi_a, int_a), (lo_b, hi_b, int_b) = ranges_a[k], ranges_b[k]
    if max(lo_a, lo_b) > min(hi_a, hi_b) or disjoint and min(hi_a, hi_b) > max(lo_a, lo_b):
        return None                                         # a gap, or an overlap
    axis = sum(1 for r in ranges_a[:k] if not r[2])       # (an int index drops its axis)
    spans = [(_with_axis(g, a, axis) if int_a else a, lo_a, hi_a),
             (_with_axis(g, b, axis) if int_b else b, lo_b, hi_b)]
    cuts = sorted({lo_a, hi_a, lo_b, hi_b})
    pieces = []
    for lo, hi in zip(cuts, cuts[1:]):
        parts = [_slab(g, p, lo - start, hi - start, axis) for p, start, stop in spans
                 if start <= lo and hi <= stop]
        pieces.append(parts[0] if len(parts) == 1 else g.apply(P.add, tuple(parts)))
    # (pieces joined before are spliced in: one concatenation of them all)
    pieces = [q for p in pieces for q in (p.args if p.op is A.concatenate and
                                          p.params["axis"] == axis else (p,))]
    joined = pieces[0] if len(pieces) == 1 else \
        g.apply(A.concatenate, tuple(pieces), {"axis": axis})
    lo, hi = cuts[0], cuts[-1]
    return _scatter(g, joined, ranges_a[:k] + ((lo, hi, False),) + ranges_a[k + 1:], shape)


def _with_axis(g, p, axis):
    return g.apply(A.reshape, (p,), {"shape": p.shape[:axis] + (1,) + p.shape[axis:]})


def _slab(g, p, start, stop, axis):
    """p[..., start:stop] on `axis`; p itself where that is all of it."""
    if start == 0 and stop == p.shape[axis]:
        return p
    index = (("slice", None, None, None),) * axis + (("slice", start, stop, None),)
    return g.apply(A.getitem, (p,), {"index": index})


def _ranges(index, shape):
    """A basic index as one (start, stop, is_int) per axis of `shape`, each a unit-step
    range, or None for any other index (arrays, steps, new axes, an ellipsis)."""
    if len(index) > len(shape):
        return None
    out = []
    for k, n in enumerate(shape):
        i = index[k] if k < len(index) else ("slice", None, None, None)
        if type(i) is tuple and i and i[0] == "slice":
            start, stop, step = slice(*i[1:]).indices(n)
            if step != 1:
                return None
            out.append((start, max(start, stop), False))
        elif isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)):
            if not -n <= i < n:
                return None
            out.append((int(i) % n, int(i) % n + 1, True))
        else:
            return None
    return tuple(out)


def _picked(ranges):
    """The shape of x[index] for an index of these ranges."""
    return tuple(hi - lo for lo, hi, is_int in ranges if not is_int)


def _scatter(g, piece, ranges, shape):
    """index_add(piece, at ranges) in `shape`; the piece itself where it covers it all."""
    if all(lo == 0 and hi == n and not is_int for (lo, hi, is_int), n in zip(ranges, shape)):
        return piece
    index = tuple(lo if is_int else ("slice", lo, hi, None) for lo, hi, is_int in ranges)
    return g.apply(A.index_add, (piece,), {"index": index, "shape": shape})


def _index_add(g, args, params):
    (x,) = args
    ranges = _ranges(params["index"], params["shape"])
    if not g.ieee and ranges is not None and x.shape == tuple(params["shape"]) and \
            _picked(ranges) == x.shape and _keeps(x, A.index_add, args, params):
        return x                                                  # x added at all of x
    return None


_INTERESTING = frozenset({CONST, P.neg, A.index_add})    # what + and - look for


# --- operands spread out by hand ------------------------------------------------------------
# A reverse sweep spreads a reduction's cotangent back to its operand's shape (the VJP of
# sum(x * x) is broadcast_to(g) * x, g a scalar reshaped to (1, 1) first), and an
# elementwise operation broadcasts anyway: ``x * broadcast_to(g, x.shape) -> x * g`` saves
# a copy of x's size and two calls, and the product is the same numbers.

def _spread(n):
    """What `n` spreads out, if it is broadcast_to, or a reshape that only puts unit axes
    in front (which broadcasting does too); else None."""
    if n.op is S.broadcast_to:
        return n.args[0]
    if n.op is A.reshape:
        z = n.args[0]
        k = len(n.shape) - len(z.shape)
        if k >= 0 and n.shape[k:] == z.shape and all(d == 1 for d in n.shape[:k]):
            return z
    return None


def _unspread(op, rule):
    """`rule` (or none) for an elementwise `op`, tried after `_spread` operands are read
    as what they spread, where the result keeps its shape, dtype and weakness."""
    def simplify(g, args, params):
        if any(a.op is S.broadcast_to or a.op is A.reshape for a in args):
            aval, weak = op.abstract_eval(args, params), weak_result(op, args)
            plain = list(args)
            for k in range(len(plain)):
                z = _spread(plain[k])
                while z is not None:
                    trial = plain[:k] + [z] + plain[k + 1:]
                    if op.abstract_eval(trial, params) != aval or \
                            weak_result(op, trial) != weak:
                        break
                    plain[k], z = z, _spread(z)
            if any(p is not a for p, a in zip(plain, args)):
                return g.apply(op, tuple(plain), params)
        return None if rule is None else rule(g, args, params)
    return simplify


RULES = {
    P.add: _add, P.sub: _sub, P.mul: _mul, P.div: _div, P.neg: _neg, P.powi: _powi,
    P.select: _select, S.sum_to: _same_shape, S.broadcast_to: _same_shape,
    A.index_add: _index_add,
}
for _op in (P.add, P.sub, P.mul, P.div):
    RULES[_op] = _unspread(_op, RULES[_op])

for _op, _rule in RULES.items():
    _op.simplify = _rule
