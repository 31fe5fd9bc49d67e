"""Taylor mode: truncated polynomial arithmetic over a graph (seed 000, higher order).

Nested forward mode computes the k-th derivative with rules whose size grows with every
level of nesting.  Taylor mode instead pushes a whole truncated polynomial

    x(t) = x_0 + x_1 t + x_2 t² + ... + x_k t^k

through the graph: each node gets the coefficients of its own polynomial y(t) = w(x(t)),
at a cost of O(k²) operations per node, by the classical recurrences (Griewank & Walther,
*Evaluating Derivatives*, ch. 13).  The coefficients are y_j = y^(j)(0) / j!.

A series is a list ``[y_0, y_1, ..., y_k]``: y_0 is the primal (the node itself, or its
value), and a coefficient is None where it is zero, so constants and structurally zero
terms cost nothing.

`RULES` holds one rule per primitive: ``rule(xs, ans, order, **params)`` gets one series
per argument and the primal result, and returns the result's series.  Rules are written
with Python operators and wengert primitives, so, as with the partials, one rule computes
numbers on values and builds graph nodes on nodes (``symbolic=True``): a Taylor expansion
of a graph is a graph.  Primitives without an entry use their JVP on each coefficient if
they are `Primitive.linear` (or piecewise linear, like abs), and their JVP at order 1.
A primitive made for one function (a checkpointed call, see `wengert.checkpointing`)
brings its own rule as a ``taylor`` method, as such primitives come and go; a primitive
fused for speed (log_softmax) uses the rules of its `Primitive.decomposition`.  Any
other primitive with a JVP (det, cholesky, eigvalsh, a user's) gets its series from it
(`ByJVP`): y' = jvp(x, y; x') solved one coefficient at a time.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ..primitives import scalar as P
from ..primitives import array as A, linalg as L, nn as NN, special as SP
from ..primitives import scipy_linalg as SL, segment as SEG
from ..graph.graph import Graph, Node, ShapeDtype, aval
from ..primitives.registry import CONST, from_one_element, one_element, shape_of
from .forward import tangent

#: primitive -> rule(xs, ans, order, **params) -> series of the result.
RULES: dict = {}


# --------------------------------------------------------------------------------------
# arithmetic on coefficients (None is zero)
# --------------------------------------------------------------------------------------
def _add(total, term):
    if term is None:
        return total
    return term if total is None else total + term


def _sub(total, term):
    if term is None:
        return total
    return -term if total is None else total - term


def _times(c, a):
    """c·a; None stays None, and 1·a is a for a Python number c (c may be an array or a
    node, such as atan2's and hypot's 1/h, whose == has no truth value)."""
    if a is None:
        return None
    return a if (type(c) is float or type(c) is int) and c == 1 else c * a


def _prod(a, b, prod=operator.mul, params=None):
    if a is None or b is None:
        return None
    return prod(a, b, **params) if params else prod(a, b)


def _const(c, order):
    return [c] + [None] * order


# --------------------------------------------------------------------------------------
# series of the elementary functions
# --------------------------------------------------------------------------------------
def _cauchy_term(a, b, j, prod=operator.mul, params=None):
    """Σ_{i=0}^{j} prod(a_i, b_{j-i}): the t^j coefficient of a product."""
    total = None
    for i in range(j + 1):
        total = _add(total, _prod(a[i], b[j - i], prod, params))
    return total


def cauchy(a, b, order, y0, prod=operator.mul, params=None):
    """The series of prod(a(t), b(t)) for a product that is bilinear (mul, and later
    matmul, dot, einsum, passed as `prod` with its `params`).  `y0` is the primal result,
    already computed."""
    return [y0] + [_cauchy_term(a, b, j, prod, params) for j in range(1, order + 1)]


def _derivative_term(m, x, g):
    """The t^m coefficient of x'(t)·g(t): Σ_{i=0}^{m} (i+1) x_{i+1} g_{m-i}.  g=None is 1."""
    if g is None:
        return _times(m + 1.0, x[m + 1])
    total = None
    for i in range(m + 1):
        total = _add(total, _times(i + 1.0, _prod(x[i + 1], g[m - i])))
    return total


def _solve(m, rhs, y, h):
    """y_{m+1} from y'(t)·h(t) = r(t), given r's t^m coefficient `rhs` and y, h up to m:
    (m+1) y_{m+1} h_0 = rhs − Σ_{i=0}^{m-1} (i+1) y_{i+1} h_{m-i}.  h=None is 1."""
    if h is None:
        return _times(1.0 / (m + 1), rhs)
    for i in range(m):
        rhs = _sub(rhs, _times(i + 1.0, _prod(y[i + 1], h[m - i])))
    return None if rhs is None else rhs / ((m + 1.0) * h[0])


def ode(x, y0, order, g=None, h=None, grow=None):
    """The series of y with y'·h = x'·g and y(0) = y0: every unary function here is one
    such equation (exp: y' = x'·y; log: y'·x = x'; sin: y' = x'·cos; ...).  `g` and `h` are
    series (None for the constant 1); `grow(m, ys)`, if given, appends their coefficient m
    once y_m is known, for the functions whose g or h depends on y itself."""
    ys = [y0]
    for m in range(order):
        if grow is not None:
            grow(m, ys)
        ys.append(_solve(m, _derivative_term(m, x, g), ys, h))
    return ys


def _exp(x, y0, order):
    """exp: y' = x'·y."""
    g = []
    return ode(x, y0, order, g=g, grow=lambda m, ys: g.append(ys[m]))


def _log(x, y0, order, scale=None):
    """log: y'·x = x' (times `scale` for log10)."""
    return ode(x, y0, order, g=None if scale is None else _const(scale, order), h=x)


def _sqrt(x, y0, order):
    """sqrt: y'·y = x'/2."""
    h = []
    return ode(x, y0, order, g=_const(0.5, order), h=h, grow=lambda m, ys: h.append(ys[m]))


def _sqrt_rule(x, y0, order):
    """sqrt: as x^0.5 where some x_0 are 0 on numbers (`_power_at_zero`: `_sqrt`'s
    recurrence divides by y_0 = 0, and sqrt(x·x) was nan where (x·x)^0.5 is not)."""
    if _zero_on_numbers(x[0], 0.5):
        return _power_at_zero(x, y0, 0.5, order)
    return _sqrt(x, y0, order)


def _power(x, y0, r, order):
    """x^r for a constant r: x·y' = r·y·x'  (needs x_0 ≠ 0; numbers with x_0 = 0 take
    `_power_at_zero`)."""
    if _zero_on_numbers(x[0], r):
        return _power_at_zero(x, y0, r, order)
    g = []
    ys = ode(x, y0, order, g=g, h=x, grow=lambda m, ys: g.append(_prod(r, ys[m])))
    return _power_out_of_range(x, ys, r, order)


def _power_out_of_range(x, ys, r, order):
    """The recurrence scales every coefficient by y_0 = x_0^r, so where that under- or
    overflows (x^2.5 at 1e-300 is 0) they all came out 0 or ±inf, though the higher
    derivatives are finite (x^2.5's second there is 3.75e-150, as wg.grad gives it).
    Where a coefficient overflows, the recurrence's next ones are inf − inf, nan for
    ±inf (cbrt at 1e-300).  On numbers, such elements take the series composed from the
    derivatives r(r-1)...(r-i+1)·x_0^(r-i) themselves."""
    x0, y0 = x[0], ys[0]
    if type(x0) is Node or type(r) is Node or np.result_type(x0, r, 1.0).kind != "f":
        return ys
    with np.errstate(all="ignore"):
        fine = np.isfinite(x0) & np.not_equal(x0, 0) & ~np.isnan(y0)
        scaled = fine & (np.equal(y0, 0) | np.isinf(y0))   # (all its coefficients lost)
        lost = scaled
        for c in ys[1:]:
            if c is not None:
                lost = lost | (fine & ~np.isfinite(c))
        if not np.any(lost):
            return ys

        # (at x_0 < 0, where x^r is real (cbrt, a whole r), x^(r-i) = ±|x_0|^(r-i), with
        # the sign of x^r, flipped for an odd i)
        negative = np.less(x0, 0)
        sign = np.copysign(1.0, y0)

        def derivative(i):
            falling = np.prod([r - j for j in range(i)], axis=0)
            power = np.power(np.abs(x0), r - i) * np.where(negative, sign * (-1.0) ** i, 1.0)
            return np.where(falling == 0, 0.0, falling * power)
        direct = _compose(x, y0, derivative, order)
        # (elsewhere the finite coefficients are the recurrence's, more accurate than
        # x_0^(r-i), whose r - i is rounded: cbrt's 1/3)
        out = [y if y is None else
               np.where(scaled | (lost & ~np.isfinite(y)), d, y).astype(np.result_type(y))[()]
               for d, y in zip(direct[1:], ys[1:])]
    return [y0] + ([float(c) if c is not None else c for c in out] if type(x0) is float
                   else out)


def _zero_on_numbers(x0, r):
    """Whether some x_0 is 0, on numbers of a float type (not traced: a traced x_0 = 0
    stays nan there, as no test on its value can be made)."""
    return type(x0) is not Node and type(r) is not Node and bool(np.any(np.equal(x0, 0))) \
        and np.result_type(x0, r, 1.0).kind == "f"


def _power_at_zero(x, y0, r, order):
    """x^r where some x_0 are 0, on numbers (the recurrence divides by x_0, giving nan).
    With p the order of the first nonzero coefficient of x(t) = x_0 + x_p t^p + ...,
    x(t)^r = t^s W(t)^r for s = p·r and W(t) = x_p + x_(p+1) t + ..., whose power has a
    series (W(0) ≠ 0).  For an integer s >= 0 that series, shifted by s, is x(t)^r's
    ((t²)^1.5 is t³); otherwise the coefficients are 0 below order s and, above it, the
    limits as t -> 0+ of the derivatives, ±inf (of x^2.5 at 0 along 1: 0, 0, 0, inf,
    -inf), with the sign of s(s-1)...(s-k+1)·W(0)^r (nan if W(0) < 0 for a fractional
    r, as x^r itself).

    The shifted series' coefficient k is W^r's k − s, which reads x up to p + k − s: past
    `order` when r < 1, where a truncated series does not know x ((sin t)²'s t⁴ term
    changes (sin² t)^0.5's t³ one).  Such coefficients are nan, as where no p is found
    up to `order` (x = O(t^(order+1))) and k >= (order+1)·r.  Only where x's last
    coefficient is structurally zero (None) is x the polynomial it holds, whole (a
    power of the input's line: t² at order 3 is [0, 0, 1, None]), and the rest 0."""
    zero = np.equal(x[0], 0)
    r = np.asarray(r, dtype=float)
    whole_x = x[order] is None                      # x(t) is exactly what it holds
    with np.errstate(all="ignore"):
        regular = _power([np.where(zero, 1.0, x[0])] + x[1:], y0, r, order)  # (the others)
        xs = [0.0 if c is None else c for c in x[1:]]               # x_1 ... x_order
        # where x is 0 up to `order`: 0 (x^r of x = 0, or x^0 = 1) if that is all of x,
        # else 0 only below t^((order+1)·r), where any x = O(t^(order+1)) puts it
        at_zero = [np.where(whole_x | (r == 0) | (k < (order + 1) * r), 0.0, np.nan)
                   for k in range(1, order + 1)]
        left = zero                                 # zero elements whose p is not yet found
        for p in range(1, order + 1):
            here = left & np.not_equal(xs[p - 1], 0)
            if not np.any(here):
                continue
            left = left & ~here
            lead = np.where(here, xs[p - 1], 1.0)
            w = _power([lead] + xs[p:] + [0.0] * p, lead ** r, r, order)
            s = p * r
            whole = (s >= 0) & (s == np.round(s))
            falling = 1.0
            for k in range(1, order + 1):
                falling = falling * (s - (k - 1))
                limit = np.where(k < s, 0.0, np.sign(falling) * np.sign(w[0]) * np.inf)
                shifted = 0.0
                for n in range(k + 1):              # w_(k-s) where s = n
                    shifted = np.where(s == n, 0.0 if w[k - n] is None else w[k - n],
                                       shifted)
                # (W^r's coefficient k − s moves with W's, so x's p + k − s, unless r = 0)
                known = whole_x | (r == 0) | (k - s <= order - p)
                shifted = np.where(known, shifted, np.nan)
                at_zero[k - 1] = np.where(here, np.where(whole, shifted, limit),
                                          at_zero[k - 1])
        dtype = np.result_type(x[0], r.dtype.type(1) if r.ndim else float(r), 1.0)
        out = [np.where(zero, z, 0.0 if reg is None else reg).astype(dtype)[()]
               for z, reg in zip(at_zero, regular[1:])]
    return [y0] + ([float(c) for c in out] if type(x[0]) is float else out)


def _sin_cos(x, s0, c0, order, sign):
    """sin and cos (sign=-1), or sinh and cosh (sign=+1), together: s' = x'·c,
    c' = sign·x'·s."""
    s, c = [s0], [c0]
    for m in range(order):
        s.append(_solve(m, _derivative_term(m, x, c), s, None))
        c.append(_times(sign / (m + 1.0), _derivative_term(m, x, s)))
    return s, c


def _tan_like(x, y0, order, sign, outer=1):
    """y' = outer·x'·(1 + sign·y²): tan (sign=+1), tanh (sign=-1), cotan (outer=-1).
    tanh's 1 − y² at order 0 is sech² x_0, as 1 − y² cancels where |y| is near 1 (at
    x_0 = 20 it was 0, every coefficient with it, for 1.7e-17)."""
    g = []

    def grow(m, ys):
        square = _cauchy_term(ys, ys, m)
        if m == 0:
            # (1/cosh, squared: cosh² would overflow from |x| = 355, where sech² is not 0)
            first = (1 / P.cosh(x[0])) ** 2 if sign < 0 else 1 + square
            g.append(_times(outer, first))
        else:
            g.append(_times(outer, _times(sign, square)))

    return ode(x, y0, order, g=g, grow=grow)


def _shifted_square(x, order, shift, sign):
    """The series of shift + sign·x² (sign ±1): the 1 ± x² of the inverse trigonometric and
    hyperbolic functions' differential equations."""
    sq = cauchy(x, x, order, x[0] * x[0])
    if sign > 0:
        return [shift + sq[0]] + sq[1:]
    return [shift - sq[0]] + [None if c is None else -c for c in sq[1:]]


def _asin_like(x, ans, order, sign):
    """asin (sign=+1), acos (sign=-1): y'·sqrt(1 − x²) = sign·x'."""
    one_minus = _shifted_square(x, order, 1, -1)
    h = _sqrt(one_minus, P.sqrt(one_minus[0]), order)
    return ode(x, ans, order, g=None if sign > 0 else _const(-1.0, order), h=h)


def _atan(x, ans, order):
    """atan: y'·(1 + x²) = x'."""
    return ode(x, ans, order, h=_shifted_square(x, order, 1, 1))


def _unit_scaled(a, b):
    """The series a and b divided by h = hypot(a_0, b_0), and h (None where some h is 0:
    then a and b as they are).  atan2 and hypot are homogeneous, and their recurrences
    square a and b, which overflow past 1e154 and underflow below 1e-154; scaled, the
    squares are at most 1."""
    h = P.hypot(a[0], b[0])
    if type(h) is not Node and not np.all(h):
        return a, b, None
    inverse = 1 / h
    return _scaled(inverse, a), _scaled(inverse, b), h


def _atan2(a, b, ans, order):
    """θ = atan2(a, b): θ'·(a² + b²) = b·a' − a·b' (a and b on the unit circle's scale)."""
    a, b, _ = _unit_scaled(a, b)
    aa = cauchy(a, a, order, a[0] * a[0])
    bb = cauchy(b, b, order, b[0] * b[0])
    h = [_add(p, q) for p, q in zip(aa, bb)]
    ys = [ans]
    for m in range(order):
        rhs = _sub(_derivative_term(m, a, b), _derivative_term(m, b, a))
        ys.append(_solve(m, rhs, ys, h))
    return ys


def _div(a, b, ans, order):
    """y = a/b: y_j = (a_j − Σ_{i=1}^{j} b_i y_{j-i}) / b_0."""
    ys = [ans]
    b0 = b[0]
    for j in range(1, order + 1):
        total = a[j]
        for i in range(1, j + 1):
            total = _sub(total, _prod(b[i], ys[j - i]))
        ys.append(None if total is None else total / b0)
    return ys


def _powi(x, ans, order, n):
    """x^n for an integer n by repeated squaring of series: exact also at x_0 = 0, where
    the power recurrence would divide by zero."""
    if n == 0:
        return _const(ans, order)
    if n < 0 and _zero_on_numbers(x[0], n):        # (the division below would be by 0)
        return _power_at_zero(x, ans, float(n), order)
    m = n if n >= 0 else -n
    result, base = None, x
    while True:
        if m & 1:
            result = base if result is None else cauchy(result, base, order,
                                                        result[0] * base[0])
        m >>= 1
        if not m:
            break
        base = cauchy(base, base, order, base[0] * base[0])
    if n < 0:
        # (where x^|n| under- or overflows, the division is by 0 or inf)
        return _power_out_of_range(x, _div(_const(1.0, order), result, ans, order),
                                   float(n), order)
    return [ans] + result[1:]


def _pow(x, y, ans, order):
    """x^y: a power rule for a constant exponent; exp(y·log x) when y varies.  On numbers
    an exponent whose coefficients are all 0 (a traced one the direction does not move)
    is constant too: exp(y·log x) would be nan at x = 0 (and x < 0), where jvp and
    hessian, with their structural zeros, are finite."""
    if all(c is None or (type(c) is not Node and not np.any(c)) for c in y[1:]):
        return _power(x, ans, y[0], order)
    lx = _log(x, P.pow_log(x[0]), order)
    return _exp(cauchy(y, lx, order, y[0] * lx[0]), ans, order)


# --------------------------------------------------------------------------------------
# the rule table
# --------------------------------------------------------------------------------------
def each_coefficient(op):
    """The rule of a (piecewise) linear primitive: its JVP applied to each coefficient."""
    def rule(xs, ans, order, **params):
        primals = [s[0] for s in xs]
        shape = shape_of(ans)
        out = [ans]
        for j in range(1, order + 1):
            ts = [s[j] for s in xs]
            # a coefficient that is zero in every argument is zero in the result
            out.append(None if all(t is None for t in ts)
                       else tangent(op, ts, primals, ans, params, shape))
        return out
    return rule


def bilinear(prod):
    """The rule of a bilinear primitive (`prod` computes it): the Cauchy product."""
    def rule(xs, ans, order, **params):
        return cauchy(xs[0], xs[1], order, ans, prod, params)
    return rule


_LN10 = math.log(10.0)

RULES.update({
    P.mul: bilinear(operator.mul),        # the operator is mul on nodes, and fast on floats
    P.div: lambda xs, ans, order: _div(xs[0], xs[1], ans, order),
    P.powi: lambda xs, ans, order, n: _powi(xs[0], ans, order, n),
    P.pow: lambda xs, ans, order: _pow(xs[0], xs[1], ans, order),
    P.exp: lambda xs, ans, order: _exp(xs[0], ans, order),
    P.log: lambda xs, ans, order: _log(xs[0], ans, order),
    P.log10: lambda xs, ans, order: _log(xs[0], ans, order, 1 / _LN10),
    P.sqrt: lambda xs, ans, order: _sqrt_rule(xs[0], ans, order),
    P.cbrt: lambda xs, ans, order: _power(xs[0], ans, 1 / 3, order),
    P.sin: lambda xs, ans, order: _sin_cos(xs[0], ans, P.cos(xs[0][0]), order, -1)[0],
    P.cos: lambda xs, ans, order: _sin_cos(xs[0], P.sin(xs[0][0]), ans, order, -1)[1],
    P.sinh: lambda xs, ans, order: _sin_cos(xs[0], ans, P.cosh(xs[0][0]), order, 1)[0],
    P.cosh: lambda xs, ans, order: _sin_cos(xs[0], P.sinh(xs[0][0]), ans, order, 1)[1],
    P.tan: lambda xs, ans, order: _tan_like(xs[0], ans, order, 1),
    P.cotan: lambda xs, ans, order: _tan_like(xs[0], ans, order, 1, outer=-1),
    P.tanh: lambda xs, ans, order: _tan_like(xs[0], ans, order, -1),
    P.asin: lambda xs, ans, order: _asin_like(xs[0], ans, order, 1),
    P.acos: lambda xs, ans, order: _asin_like(xs[0], ans, order, -1),
    P.atan: lambda xs, ans, order: _atan(xs[0], ans, order),
    P.atan2: lambda xs, ans, order: _atan2(xs[0], xs[1], ans, order),
})
# Piecewise linear: exact away from the kinks, where the function is not analytic anyway.
for _op in (P.abs, P.sign, P.maximum, P.minimum, P.select):
    RULES[_op] = each_coefficient(_op)
# A function of real numbers may take a complex detour inside a rule (det's third
# derivative from 4x4 up sums around a circle in the complex plane): real and imag take
# each coefficient's part, where the JVP's partial 1 would keep it complex.
for _op in (P.real, P.imag):
    RULES[_op] = (lambda part: lambda xs, ans, order: [ans] + [
        None if c is None else part(c) for c in xs[0][1:order + 1]])(_op)


# ---- NumPy's other elementwise functions ----------------------------------------------------
_LN2 = P._LN2


def _asinh_like(x, ans, order, sign):
    """asinh (sign=+1), acosh (sign=-1): y'·sqrt(x² + sign) = x'."""
    square = _shifted_square(x, order, sign, 1)
    # sqrt(x0² ± 1) without x0², which overflows past 1.3e154 (only the first coefficient
    # holds it: the others are x0·x_j and smaller)
    x0 = x[0]
    h0 = P.hypot(x0, 1.0) if sign > 0 else P.sqrt(x0 - 1.0) * P.sqrt(x0 + 1.0)
    h = _sqrt(square, h0, order)
    return ode(x, ans, order, h=h)


def _atanh(x, ans, order):
    """atanh: y'·(1 − x²) = x'."""
    return ode(x, ans, order, h=_shifted_square(x, order, 1, -1))


def _logaddexp(a, b, ans, order):
    """y = log(e^a + e^b): y' = a'·p + b'·q with the shares p = e^(a−y) = σ(a − b) and
    q = 1 − p, and p' = (a' − b')·p·q = −q', solved a coefficient at a time.  The shares
    are at most 1, so nothing overflows, and nothing cancels: the log of the sum of exp
    series did, where a's coefficients were large (log(e^(e^x) + 1) at 10), and so did
    p' = (a' − y')·p where a dominates and y' is a' but for p·q (logaddexp(x, 0)'s t²
    coefficient was 0 at 50, for 9.6e-23)."""
    # (1/(1 + e^(b−a)) without overflow, not e^(a−y), whose y is rounded to its size)
    p, q = [P.logaddexp_share(a[0], b[0])], [P.logaddexp_share(a[0], b[0], first=False)]
    gap = [None] + [_sub(x, y) for x, y in zip(a[1:], b[1:])]
    both = []                                       # the series of p·q
    ys = [ans]
    for m in range(order):
        ys.append(_solve(m, _add(_derivative_term(m, a, p), _derivative_term(m, b, q)),
                         ys, None))
        both.append(_cauchy_term(p, q, m))
        p.append(_solve(m, _derivative_term(m, gap, both), p, None))
        q.append(None if p[-1] is None else -p[-1])
    return ys


def _grow_share(m, share, x, ys):
    """Append coefficient m + 1 of the share p = e^(x−y), from p' = (x' − y')·p (y's
    coefficients known to m + 1, held in a shape that meets x's)."""
    gap = [None] + [_sub(x[k], ys[k]) for k in range(1, m + 2)]
    share.append(_solve(m, _derivative_term(m, gap, share), share, None))


def _scaled(c, x):
    return [_times(c, v) for v in x]


def _hypot(a, b, ans, order):
    """y² = a² + b², so y'·y = (a² + b²)'/2 (the squares' own primal is not needed), for
    a and b scaled by h = y_0, and then y = h·hypot(a/h, b/h)."""
    a, b, h = _unit_scaled(a, b)
    if h is None:
        return _hypot_at_zero(a, b, ans, order)
    s = [None] + [_add(p, q) for p, q in zip(cauchy(a, a, order, None)[1:],
                                              cauchy(b, b, order, None)[1:])]
    return [ans] + _scaled(h, _sqrt(s, ans / h, order)[1:])


def _hypot_at_zero(a, b, ans, order):
    """hypot where some a_0 = b_0 = 0, on numbers (its recurrence divides by y_0 = 0).
    hypot is homogeneous: with p the order of the first coefficient where a or b is not
    0, hypot(a(t), b(t)) = t^p·hypot(A(t), B(t)) for A(t) = a_p + a_(p+1) t + ..., whose
    coefficient k − p reads A up to k − p, a up to k: every coefficient is known, unlike
    sqrt(a² + b²)'s, and a and b that are 0 up to the order give 0 (as sqrt(a·a) at 0
    along 1 is t)."""
    zero = np.equal(ans, 0)
    with np.errstate(all="ignore"):
        one = [np.where(zero, 1.0, a[0])] + a[1:]           # (the other elements)
        out = _hypot(one, b, P.hypot(one[0], b[0]), order)[1:]
        out = [np.where(zero, 0.0, 0.0 if c is None else c) for c in out]
        aa = [0.0 if c is None else c for c in a[1:]]       # a_1 ... a_order
        bb = [0.0 if c is None else c for c in b[1:]]
        left = zero
        for p in range(1, order + 1):
            here = left & (np.not_equal(aa[p - 1], 0) | np.not_equal(bb[p - 1], 0))
            if not np.any(here):
                continue
            left = left & ~here
            lead_a, lead_b = np.where(here, aa[p - 1], 1.0), np.where(here, bb[p - 1], 0.0)
            shifted = _hypot([lead_a] + aa[p:], [lead_b] + bb[p:], P.hypot(lead_a, lead_b),
                             order - p)
            for k in range(p, order + 1):
                c = shifted[k - p]
                out[k - 1] = np.where(here, 0.0 if c is None else c, out[k - 1])
        dtype = np.result_type(ans, 1.0)
        out = [c.astype(dtype)[()] for c in out]
    return [ans] + ([float(c) for c in out] if type(ans) is float else out)


RULES.update({
    P.asinh: lambda xs, ans, order: _asinh_like(xs[0], ans, order, 1),
    P.acosh: lambda xs, ans, order: _asinh_like(xs[0], ans, order, -1),
    P.atanh: lambda xs, ans, order: _atanh(xs[0], ans, order),
    P.exp2: lambda xs, ans, order: _exp(_scaled(_LN2, xs[0]), ans, order),
    P.log2: lambda xs, ans, order: _log(xs[0], ans, order, 1 / _LN2),
    P.hypot: lambda xs, ans, order: _hypot(xs[0], xs[1], ans, order),
    P.logaddexp: lambda xs, ans, order: _logaddexp(xs[0], xs[1], ans, order),
    # log2(2^a + 2^b) = logaddexp(a ln2, b ln2) / ln2
    P.logaddexp2: lambda xs, ans, order: [ans] + _scaled(1 / _LN2, _logaddexp(
        _scaled(_LN2, xs[0]), _scaled(_LN2, xs[1]), ans * _LN2, order)[1:]),
})
# x − n·y with n piecewise constant, modf's x − trunc(x) and frexp's x·2⁻ᵉ: linear between
# the jumps
for _op in (P.remainder, P.fmod, P.modf_fraction, P.frexp_mantissa):
    RULES[_op] = each_coefficient(_op)

def _log1p(x, y0, order):
    """log1p: y'·(1 + x) = x'."""
    return ode(x, y0, order, h=[1 + x[0]] + list(x[1:]))


# ---- SciPy's special functions (wengert.scipy) ------------------------------------------------
def _compose(x, y0, derivatives, order):
    """The series of f(x(t)) from f's derivatives at x_0 (``derivatives(i)`` is f⁽ⁱ⁾(x_0)):
    Σ_i f⁽ⁱ⁾(x_0)/i! · (x(t) − x_0)^i, for the functions whose derivatives are all known
    in closed form (gammaln, digamma and polygamma: polygammas of higher order; the
    Bessel functions Iᵥ: Iᵥ₋ᵢ, ..., Iᵥ₊ᵢ; erfcx and log Φ: their derivative primitives)."""
    d = [None] + list(x[1:])
    ys = [y0] + [None] * order
    power, factorial = d, 1.0
    for i in range(1, order + 1):
        factorial *= i
        if all(c is None for c in power):
            break
        c = derivatives(i)
        ys = [ys[0]] + [_add(y, _prod(c, _times(1 / factorial, p)))
                        for y, p in zip(ys[1:], power[1:])]
        power = cauchy(power, d, order, None)
    return ys


def _exp_ode(x, y0, order, scale, exponent):
    """y' = x'·scale·exp(s), where s_m = ``exponent(m, ys)`` may read y up to y_m
    (erfinv: s = y²)."""
    s, e, g = [], [], []

    def grow(m, ys):
        s.append(exponent(m, ys))
        # (e = exp(s): e' = s'·e, the equation `ode` solves, one coefficient at a time)
        e.append(P.exp(s[0]) if m == 0 else _solve(m - 1, _derivative_term(m - 1, s, e), e,
                                                     None))
        g.append(_times(scale, e[m]))
    return ode(x, y0, order, g=g, grow=grow)


def _polygammas(x0, n):
    """ψ⁽ⁿ⁺ⁱ⁻¹⁾(x_0) as a function of i: the derivatives of ψ⁽ⁿ⁻¹⁾ (n = 0: of gammaln)."""
    return lambda i: SP.digamma(x0) if n + i == 1 else SP.polygamma(x0, n=n + i - 1)


def _bessel_i(x0, v):
    """Iᵥ⁽ⁱ⁾(x_0) as a function of i: 2⁻ⁱ Σ_j C(i, j) Iᵥ₋ᵢ₊₂ⱼ(x_0), from Iᵥ' = (Iᵥ₋₁ + Iᵥ₊₁)/2."""
    return lambda i: sum(math.comb(i, j) / 2 ** i * SP._iv_of(x0, v - i + 2 * j)
                         for j in range(i + 1))


def _gamma(x, ans, order):
    """Γ: y' = x'·y·ψ(x)."""
    psi = _compose(x, SP.digamma(x[0]), _polygammas(x[0], 1), order)
    g = []
    return ode(x, ans, order, g=g, grow=lambda m, ys: g.append(_cauchy_term(ys, psi, m)))


def _expit(x, ans, order):
    """expit: y' = x'·y·(1 − y), with y(1 − y) = y·expit(−x) at order 0 (no cancellation)."""
    g = []

    def grow(m, ys):
        g.append(ans * SP.expit(-x[0]) if m == 0
                 else _sub(ys[m], _cauchy_term(ys, ys, m)))
    return ode(x, ans, order, g=g, grow=grow)


def _logit(x, ans, order):
    """logit: y'·x·(1 − x) = x'."""
    square = cauchy(x, x, order, None)
    h = [x[0] * (1 - x[0])] + [_sub(c, q) for c, q in zip(x[1:], square[1:])]
    return ode(x, ans, order, h=h)


def _erf_like(x, ans, order, scale, half=False):
    """erf, erfc (scale ∓2/√π), ndtr (1/√(2π), half): y' = x'·scale·exp(−x²), or
    exp(−x²/2) for ndtr."""
    minus_square = _shifted_square(x, order, 0, -1)
    if half:
        minus_square = _scaled(0.5, minus_square)
    e = _exp(minus_square, P.exp(minus_square[0]), order)
    return ode(x, ans, order, g=_scaled(scale, e))


def _erfcx(x, ans, order, n=0):
    """erfcx's n-th derivative, from erfcx's derivatives at x_0 (its equation
    y' = x'·(2x·y − 2/√π) cancels for large x, as the partial's did)."""
    return _compose(x, ans, lambda i: SP.erfcx_derivative(x[0], n=n + i), order)


def _log_ndtr(x, ans, order, n=0):
    """log Φ's n-th derivative, from log Φ's derivatives at x_0 (its equation
    y'·erfcx(−x/√2) = x'·√(2/π) cancels for x << 0, as the partial's did)."""
    return _compose(x, ans, lambda i: SP.log_ndtr_derivative(x[0], n=n + i), order)


def _xlogy(x, y, ans, order, log1p=False):
    """x·log(y), x·log1p(y): the product of x's series and the logarithm's."""
    if log1p:
        logs = _log1p(y, P.log1p(y[0]), order)
    else:
        logs = _log(y, P.log(y[0]), order)
    return [ans] + cauchy(x, logs, order, None)[1:]


RULES.update({
    SP.erf: lambda xs, ans, order: _erf_like(xs[0], ans, order, SP._TWO_OVER_SQRT_PI),
    SP.erfc: lambda xs, ans, order: _erf_like(xs[0], ans, order, -SP._TWO_OVER_SQRT_PI),
    SP.ndtr: lambda xs, ans, order: _erf_like(xs[0], ans, order, SP._INV_SQRT_2PI, True),
    SP.log_ndtr: lambda xs, ans, order: _log_ndtr(xs[0], ans, order),
    SP.log_ndtr_derivative: lambda xs, ans, order, n: _log_ndtr(xs[0], ans, order, n),
    SP.erfcx: lambda xs, ans, order: _erfcx(xs[0], ans, order),
    SP.erfcx_derivative: lambda xs, ans, order, n: _erfcx(xs[0], ans, order, n),
    SP.erfinv: lambda xs, ans, order: _exp_ode(
        xs[0], ans, order, SP._SQRT_PI_OVER_TWO, lambda m, ys: _cauchy_term(ys, ys, m)),
    SP.gammaln: lambda xs, ans, order: _compose(xs[0], ans, _polygammas(xs[0][0], 0), order),
    SP.digamma: lambda xs, ans, order: _compose(xs[0], ans, _polygammas(xs[0][0], 1), order),
    SP.polygamma: lambda xs, ans, order, n: _compose(xs[0], ans,
                                                     _polygammas(xs[0][0], n + 1), order),
    SP.gamma: lambda xs, ans, order: _gamma(xs[0], ans, order),
    SP.i0: lambda xs, ans, order: _compose(xs[0], ans, _bessel_i(xs[0][0], 0), order),
    SP.i1: lambda xs, ans, order: _compose(xs[0], ans, _bessel_i(xs[0][0], 1), order),
    SP.iv: lambda xs, ans, order, v: _compose(xs[0], ans, _bessel_i(xs[0][0], v), order),
    SP.expit: lambda xs, ans, order: _expit(xs[0], ans, order),
    SP.logit: lambda xs, ans, order: _logit(xs[0], ans, order),
    SP.xlogy: lambda xs, ans, order: _xlogy(xs[0], xs[1], ans, order),
    SP.xlog1py: lambda xs, ans, order: _xlogy(xs[0], xs[1], ans, order, log1p=True),
})

# ---- the NumPy layer's primitives ------------------------------------------------------------
def _expm1(x, y0, order):
    """expm1: y' = x'·(y + 1), with y + 1 = exp(x) at order 0 (y + 1 would cancel to 1
    where x is very negative, and the derivative to 0)."""
    g = []
    return ode(x, y0, order, g=g,
               grow=lambda m, ys: g.append(P.exp(x[0]) if m == 0 else ys[m]))


def _inv(a, y0, order):
    """inv: A·Y = I, so Y_j = -Y_0 Σ_{i=1..j} A_i Y_{j-i}."""
    ys = [y0]
    for j in range(1, order + 1):
        total = None
        for i in range(1, j + 1):
            total = _add(total, _prod(a[i], ys[j - i], A.matmul))
        ys.append(None if total is None else -A.matmul(y0, total))
    return ys


def _solve_series(b, y0, order, a, vector, solve, read=None):
    """A·X = B, so X_j = A_0⁻¹ (B_j - Σ_{i=1..j} A_i X_{j-i}): `solve(rhs)` is A_0⁻¹·rhs,
    `read(m)` the part of a matrix that the solve reads (solve_triangular's triangle, and
    its transpose for trans), `vector` whether X is one vector (or a stack of them)."""
    def times(m, x):                         # m @ x, x a vector or a matrix
        if m is None or x is None:
            return None
        if read is not None:
            m = read(m)
        if vector:
            return A.reshape(A.matmul(m, A.reshape(x, shape=shape_of(x) + (1,))),
                             shape=shape_of(x))
        return A.matmul(m, x)
    xs = [y0]
    for j in range(1, order + 1):
        rhs = b[j]
        for i in range(1, j + 1):
            rhs = _sub(rhs, times(a[i], xs[j - i]))
        xs.append(None if rhs is None else solve(rhs))
    return xs


def _general_solve_series(a, b, y0, order):
    """solve (NumPy 2: b is a vector, or a stack of them, when it has one axis fewer)."""
    return _solve_series(b, y0, order, a, len(shape_of(b[0])) == len(shape_of(a[0])) - 1,
                         lambda rhs: L.solve(a[0], rhs))


def _solve_triangular_series(a, b, y0, order, params):
    """solve_triangular: op(Ã) X = B, Ã_i the part of A_i that is read."""
    vector = len(shape_of(b[0])) == 1
    lower, unit = params["lower"], params["unit_diagonal"]

    def read(m):
        m = A.tril(m, k=-1 if unit else 0) if lower else m - A.tril(m, k=0 if unit else -1)
        return A.swapaxes(m, -1, -2) if params["trans"] else m

    def solve(rhs):
        if vector:                          # (a batch of vectors stays vectors)
            col = SL.solve_triangular(a[0], A.reshape(rhs, shape=shape_of(rhs) + (1,)),
                                      **params)
            return A.reshape(col, shape=shape_of(col)[:-1])
        return SL.solve_triangular(a[0], rhs, **params)
    return _solve_series(b, y0, order, a, vector, solve, read)


def _sylvester_series(xs, ans, order, of):
    """solve_sylvester: A X + X B = Q, so
    A_0 X_j + X_j B_0 = Q_j - Σ_{i=1..j} (A_i X_{j-i} + X_{j-i} B_i)."""
    a, b, q = xs
    out = [ans]
    for j in range(1, order + 1):
        rhs = q[j]
        for i in range(1, j + 1):
            rhs = _sub(rhs, _prod(a[i], out[j - i], A.matmul))
            rhs = _sub(rhs, _prod(out[j - i], b[i], A.matmul))
        out.append(None if rhs is None else SL.solve_sylvester(a[0], b[0], rhs, **of))
    return out


def _sqrtm_series(a, y0, order):
    """sqrtm: X² = A, so X_0 X_j + X_j X_0 = A_j - Σ_{i=1..j-1} X_i X_{j-i} (a Sylvester
    equation, refused where A is singular, as sqrtm's derivative is)."""
    out = [y0]
    for j in range(1, order + 1):
        rhs = a[j]
        for i in range(1, j):
            rhs = _sub(rhs, _prod(out[i], out[j - i], A.matmul))
        out.append(None if rhs is None else
                   SL.solve_sylvester(y0, y0, rhs, derivative_of="sqrtm"))
    return out


def _expm_series(a, y0, order):
    """expm: exp is a power series, and the matrix polynomials modulo t^(k+1) are the block
    upper-triangular Toeplitz matrices [[A_0, A_1, ...], [0, A_0, ...], ...] (their product
    is the Cauchy product), so the first block row of the exponential of that matrix holds
    the coefficients of exp(A(t))."""
    big = SL.expm(SL.block_upper(list(a[:order + 1])))
    n = shape_of(y0)[-1]
    return [y0] + [SL.top_block(big, n, j) for j in range(1, order + 1)]


def _einsum(xs, ans, order, subscripts):
    if len(xs) != 2:        # (a multilinear product: the Cauchy product of three series and
        #                     more is the JVP's sum of products, one tangent in each)
        if order <= 1:
            return each_coefficient(A.einsum)(xs, ans, order, subscripts=subscripts)
        return ByJVP(A.einsum)(xs, ans, order, subscripts=subscripts)
    return cauchy(xs[0], xs[1], order, ans,
                  lambda a, b, subscripts: A.einsum(a, b, subscripts=subscripts),
                  {"subscripts": subscripts})


def _logsumexp(x, ans, order, axis, keepdims):
    """logsumexp as `_logaddexp` does it: y' = Σ x'·p along the axes, with the shares
    p = e^(x−y) (the softmax) and p' = (x' − y')·p; y's coefficients are held with the
    reduced axes kept, to meet x's.  Where one element dominates, its x' − y' would
    cancel (y' is its x' but for the small shares of the others): so the series are taken
    relative to that element's, c, as y = c + w with w' = Σ (x' − c')·p, and the
    dominant element's x' − c' is exactly 0, its p' = −w'·p."""
    kept = ans if keepdims else A._unreduce(ans, x[0], axis, False)
    if 0 in shape_of(x[0]):                  # (nothing to weigh, and no largest element)
        c = [None] * (order + 1)
        p = [P.exp(x[0] - kept)]
    else:
        top = P.eq(x[0], A.amax(x[0], axis=axis, keepdims=True))
        weight = P.select(top, 1.0, 0.0)
        weight = weight / A.sum(weight, axis=axis, keepdims=True)   # (ties: their mean)
        c = [None] + [None if xk is None else A.sum(weight * xk, axis=axis, keepdims=True)
                      for xk in x[1:]]
        p = [A._softmax_of(x[0], kept, axis, True)]
    z = [None] + [_sub(xk, ck) for xk, ck in zip(x[1:], c[1:])]
    w, ys = [None], [ans]
    for m in range(order):
        term = _derivative_term(m, z, p)
        w.append(None if term is None else A.sum(term, axis=axis, keepdims=True) / (m + 1.0))
        y = _add(c[m + 1], w[m + 1])
        ys.append(y if y is None or keepdims else
                  A.reshape(y, shape=A._reduced_shape(shape_of(x[0]), axis)))
        _grow_share(m, p, z, w)
    return ys


RULES.update({
    A.logsumexp: lambda xs, ans, order, axis, keepdims: _logsumexp(xs[0], ans, order, axis,
                                                                  keepdims),
    P.log1p: lambda xs, ans, order: _log1p(xs[0], ans, order),
    P.expm1: lambda xs, ans, order: _expm1(xs[0], ans, order),
    P.stop_gradient: lambda xs, ans, order: _const(ans, order),
    A.matmul: bilinear(A.matmul),
    A.einsum: _einsum,
    NN.conv2d: bilinear(NN.conv2d),
    NN.conv2d_input_grad: bilinear(NN.conv2d_input_grad),
    NN.conv2d_weight_grad: bilinear(NN.conv2d_weight_grad),
    L.inv: lambda xs, ans, order: _inv(xs[0], ans, order),
    L.solve: lambda xs, ans, order: _general_solve_series(xs[0], xs[1], ans, order),
    SL.solve_triangular: lambda xs, ans, order, **params: _solve_triangular_series(
        xs[0], xs[1], ans, order, params),
    SL.solve_sylvester: lambda xs, ans, order, **of: _sylvester_series(xs, ans, order, of),
    SL.sqrtm: lambda xs, ans, order: _sqrtm_series(xs[0], ans, order),
    SL.expm: lambda xs, ans, order: _expm_series(xs[0], ans, order),
    # (the symmetric part of each coefficient: symmetrize's derivative, a linear map)
    SL.symmetrize: lambda xs, ans, order, lower: [ans] + [
        None if c is None else 0.5 * (c + A.swapaxes(c, -1, -2)) for c in xs[0][1:]],
})
# piecewise linear in their differentiable argument
for _op in (NN.relu, NN.max_pool2d, NN.pool_scatter, NN.pool_gather, NN.max_unpool,
            NN.unpool_gather, A.amax, A.amin, A.take_along_axis, A.put_along_axis,
            SL.lu_swap_rows, SEG.segment_extremum, SEG.winners_mean, SEG.winners_spread):
    RULES[_op] = each_coefficient(_op)


def _push(sub, series, order, states=None):
    """Series pushed through a small graph `sub` of stand-ins (a decomposition, a JVP
    rule), node by node in creation order, given `series` for its inputs (index -> series,
    filled in as it goes).  Each node's primal is computed from its arguments' primals.
    With `states` (node index -> state, kept by the caller from one order to the next), a
    node whose rule comes from its JVP extends its series instead of starting again."""
    for node in sub.nodes:
        if node.index in series:
            continue
        if node.op is CONST:
            series[node.index] = _const(node.value, order)
            continue
        args = [series[a.index] for a in node.args]
        primal = node.op(*[s[0] for s in args], **node.params)
        if all(c is None for s in args for c in s[1:]):      # constant in t (labels)
            series[node.index] = _const(primal, order)
            continue
        rule = rule_for(node.op, order)
        if states is not None and type(rule) is ByJVP:
            series[node.index] = rule.extend(states.setdefault(node.index, {}), args,
                                             primal, order, node.params)
        else:
            series[node.index] = rule(args, primal, order, **node.params)
    return series


def _stand_in(sub, x):
    return sub.input(ShapeDtype(*aval(x)))


def by_decomposition(op):
    """The rule of a primitive fused for speed (logsumexp, log_softmax, cross_entropy): the
    rules of the primitives of its `decomposition`, applied node by node.  The
    decomposition is traced on stand-ins of the arguments' shapes, then the series are
    pushed through that small graph in creation order."""
    def rule(xs, ans, order, **params):
        sub = Graph()
        stand_ins = [_stand_in(sub, s[0]) for s in xs]
        out = sub.lift(op.decomposition(*stand_ins, **params))
        series = _push(sub, dict(zip((x.index for x in stand_ins), xs)), order)
        return [ans] + series[out.index][1:]
    return rule


class ByJVP:
    """The rule of a primitive that has a JVP and no rule of its own (det, cholesky,
    eigvalsh, prod, i0, ...).  y(t) = op(x(t)) solves the differential equation

        y'(t) = jvp(x(t), y(t); x'(t)),

    so y_{m+1} = r_m / (m+1), where r_m, the t^m coefficient of the right side, needs x up
    to x_{m+1} and y only up to y_m: the JVP rule is traced once on stand-ins, and the
    series are pushed through it (by the rules of its own primitives) at orders 0, 1, ...,
    one more coefficient of y each time.  A primitive the JVP calls that has no rule
    either (eigvecsh inside eigvalsh's) keeps its series from one order to the next and
    extends it (`extend`), so the work grows as a power of the order, not exponentially.
    """

    def __init__(self, op):
        self.op = op

    def __call__(self, xs, ans, order, **params):
        return self.extend({}, xs, ans, order, params)

    def extend(self, state, xs, ans, order, params):
        """The series to `order`, continuing from `state` (empty at first): the traced
        JVP, the coefficients of y found so far, and the states of its own nodes."""
        moving = [k for k, s in enumerate(xs) if any(c is not None for c in s[1:])]
        if not state or state["moving"] != moving:  # (an argument that starts to move
            state.clear()                           # later changes the traced JVP)
            sub = Graph()
            x_in = [_stand_in(sub, s[0]) for s in xs]
            y_in = _stand_in(sub, ans)
            t_in = {k: _stand_in(sub, xs[k][0]) for k in moving}
            r = tangent(self.op, [t_in.get(k) for k in range(len(xs))], x_in, y_in, params,
                        shape_of(ans))
            state.update(moving=moving, x_in=x_in, y_in=y_in, t_in=t_in, ys=[ans], inner={},
                         out=None if r is None else sub.lift(r))
        if state["out"] is None:                # a JVP that is structurally zero
            return _const(ans, order)
        ys, out = state["ys"], state["out"]
        for m in range(len(ys) - 1, order):
            series = {x.index: s[:m + 1] for x, s in zip(state["x_in"], xs)}
            series[state["y_in"].index] = ys[:m + 1]
            for k, t in state["t_in"].items():          # x'(t) = Σ (i+1) x_{i+1} t^i
                series[t.index] = [_times(i + 1.0, xs[k][i + 1]) for i in range(m + 1)]
            r_m = _push(out.graph, series, m, state["inner"])[out.index][m]
            ys.append(_times(1.0 / (m + 1), r_m))
        return [ans] + ys[1:order + 1]


#: primitive -> its rule from its JVP (`ByJVP`), for orders above 1, made when first
#: asked for (not in RULES: at order 1 the JVP itself is cheaper)
FROM_JVP: dict = {}


def _constant_series(xs, ans, order, **params):
    return _const(ans, order)


RULES[P.numpy_ufunc] = _constant_series     # NumPy's ufunc on integers: nothing flows through


def rule_for(op, order):
    """The Taylor rule of a primitive (see the module docstring)."""
    rule = RULES.get(op) or getattr(op, "taylor", None)
    if rule is None:
        if op.decomposition is not None:
            rule = RULES[op] = by_decomposition(op)
        elif op.linear:
            rule = RULES[op] = each_coefficient(op)
        elif op.partials is not None and all(p is None for p in op.partials):
            rule = RULES[op] = _constant_series   # no derivative: a sign, an arg-max
        elif order <= 1:
            rule = each_coefficient(op)           # first order is the JVP
        else:
            rule = FROM_JVP.get(op)
            if rule is None:
                rule = FROM_JVP[op] = ByJVP(op)
    return rule


# --------------------------------------------------------------------------------------
# the sweep
# --------------------------------------------------------------------------------------
def taylor(plan, inputs, series, outputs, order, symbolic):
    """Taylor coefficients of `outputs` given the series of `inputs`.

    Args:
        plan: the nodes between inputs and outputs, in creation order (`Graph.between`).
        inputs: the independent nodes.
        series: per input, its coefficients ``[x_1, ..., x_order]`` (None = zero).
        outputs: the nodes whose series are wanted.
        order: the degree k of the truncated polynomials.
        symbolic: build graph nodes (True) or compute numbers (False).

    Returns:
        Per output, its series ``[y_0, ..., y_order]`` (y_0 its primal; None for an
        output that does not depend on the inputs).
    """
    coef = {}
    for x, s in zip(inputs, series):
        coef[x.index] = [x if symbolic else x.value, *s]
    zeros = [None] * order
    for node in plan:
        xs = []
        for a in node.args:
            s = coef.get(a.index)
            xs.append(s if s is not None else [a if symbolic else a.value, *zeros])
        ans = node if symbolic else node.value
        rule = rule_for(node.op, order)
        try:
            coef[node.index] = rule(xs, ans, order, **node.params)
        except ArithmeticError:
            if symbolic:
                raise
            coef[node.index] = _in_numpy(rule, xs, ans, order, node.params)
    return [coef.get(o.index) for o in outputs]


def _in_numpy(rule, xs, ans, order, params):
    """A rule redone on arrays of one element where Python floats raised (1/0.0 at the
    edge of a domain), as `Primitive.partial` redoes a partial; the coefficients come
    back as Python scalars."""
    out = rule([[one_element(c) for c in x] for x in xs], one_element(ans), order,
               **params)
    return [from_one_element(c, [*(c for x in xs for c in x), ans]) for c in out]
