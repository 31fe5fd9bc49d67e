"""Simplification at construction (seed 002, §3.1): the rewrite rules.

`Graph.apply` asks a primitive's rule before it looks for or makes a node.  A rule sees the
argument nodes (commutative ones already in creation order) and returns the node to use
instead, or None.  Rules never change a result's shape or dtype: ``x*1 -> x`` applies only
where ``x`` already has the shape and dtype of ``x*1``.

Rules that hold for real numbers but not in every floating-point corner (``x*0 -> 0`` and
``x/x -> 1`` when x is inf or nan, ``x-x -> 0`` when x is inf) are applied as ADDS
applies them: wengert differentiates real functions.

Constants are merged only exactly: ``c*(d*z) -> (c*d)*z`` applies when the float ``c*d`` is
the product itself, so no rule rounds a constant.  A float64 scalar added to itself
becomes ``2*x`` (bit for bit the same number): scaled terms are what these rules and the
emitter's pass (`passes.py`) combine, ``10*(2*x) -> 20*x``, where ``10*(x+x)`` stays two
operations.

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

from ..primitives import scalar as P
from ..primitives import shape as S
from ..primitives.registry import CONST


def _is(n, v) -> bool:
    """Whether node n is a constant whose every element equals v."""
    if n.op is not CONST:
        return False
    if n.shape == ():
        return n.value == v
    return bool(np.all(n.value == v))


def _keeps(x, op, args, params) -> bool:
    """Whether `x` has the shape and dtype of ``op(*args)``, so it can stand for it."""
    if all(a.shape == () for a in args) and x.shape == ():
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
    if _is(y, 0) and _keeps(x, P.add, args, params):
        return x                                                  # x + 0 -> x
    if _is(x, 0) and _keeps(y, P.add, args, params):
        return y                                                  # 0 + y -> y
    if y.op is P.neg:
        return g.apply(P.sub, (x, y.args[0]))                     # x + (-z) -> x - z
    if x.op is P.neg:
        return g.apply(P.sub, (y, x.args[0]))                     # (-z) + y -> y - z
    return None


def _sub(g, args, params):
    x, y = args
    if x is not y and x.op not in _INTERESTING and y.op not in _INTERESTING:
        return None
    if x is y:
        return _filled(g, P.sub, args, params, 0)                 # x - x -> 0
    if _is(y, 0) and _keeps(x, P.sub, args, params):
        return x                                                  # x - 0 -> x
    if _is(x, 0) and _keeps(y, P.sub, args, params):
        return g.apply(P.neg, (y,))                               # 0 - y -> -y
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
        if _is(b, 0):
            return _filled(g, P.mul, args, params, 0)             # x * 0 -> 0
        if _is(b, -1) and _keeps(a, P.mul, args, params):
            return g.apply(P.neg, (a,))                           # x * -1 -> -x
        if b.op is CONST and _scalar_float(a, b):
            if a.op is P.neg:
                return g.apply(P.neg, (g.apply(P.mul, (a.args[0], b)),))  # c*(-z) -> -(c*z)
            if a.op is P.mul and _scalar_float(*a.args):
                z, c = a.args if a.args[1].op is CONST else a.args[::-1]
                if c.op is CONST:
                    cd = b.value * c.value
                    if _exact_product(b.value, c.value, cd):      # c*(d*z) -> (c*d)*z
                        return g.apply(P.mul, (z, g.const(float(cd))))
    return None


def _exact_product(c, d, cd) -> bool:
    """Whether the float cd = c*d is the exact product: merging two constants must not
    round (0.3333333333333333*3 is not 1.0, 1e-200*1e-200 is not 0)."""
    if not (math.isfinite(c) and math.isfinite(d) and math.isfinite(cd)):
        return False
    return Fraction(cd) == Fraction(c) * Fraction(d)


def _scalar_float(*nodes) -> bool:
    """Whether all nodes are float64 scalars: where reassociating constants cannot change a
    result's shape or dtype."""
    return all(n.shape == () and n.dtype == np.float64 for n in nodes)


def _div(g, args, params):
    x, y = args
    if x is not y and x.op is not CONST and y.op is not CONST:
        return None
    if x is y:
        return _filled(g, P.div, args, params, 1)                 # x / x -> 1
    if _is(y, 1) and _keeps(x, P.div, args, params):
        return x                                                  # x / 1 -> x
    if _is(x, 0):
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


_INTERESTING = frozenset({CONST, P.neg})    # what the rules of + and - look for

RULES = {
    P.add: _add, P.sub: _sub, P.mul: _mul, P.div: _div, P.neg: _neg, P.powi: _powi,
    P.select: _select, S.sum_to: _same_shape, S.broadcast_to: _same_shape,
}

for _op, _rule in RULES.items():
    _op.simplify = _rule
