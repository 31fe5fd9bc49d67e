"""ADDS's derivative operators, rounding-error estimate and declared operators (seed 002,
§2.4 ⑨–⑪ and §3.3).

* ``dfuv(f, x, y)``: Σ ∂f/∂x · y by one forward (BU) sweep; type of f.
* ``dfu(f, x)``: the Jacobian, one `dfuv` per unit vector y; type f ++ x.
* ``dfdv(f, x, y)``: Σ y · ∂f/∂x by one reverse (TD) sweep; type of x.
* ``dfd(f, x)``: the Jacobian, one `dfdv` per unit vector y; type f ++ x.
* ``err(f, x, eps)``: Iri's estimate ((1/3) Σ_i (∂f/∂v_i · v_i)²)^(1/2) · eps, the sum over
  the operations v_i that compute f from x; type of f.

The sweeps are those of `wengert.ad` with ``symbolic=True``: every derivative is made of
nodes of the same graph, so it can be differentiated again, simplified, counted, emitted.

An ``operator f[2,5](4);`` declaration makes an `Operator`: an opaque function whose value
wengert cannot compute, only name.  Each element of its result is one node of the
operator's primitive (the element's 1-based index is the parameter ``at``).  When a sweep
meets it, ADDS declares the operator's derivative operators on the spot:

====================  ==========  ======================  =======================
differentiated by      name        result type             operands
====================  ==========  ======================  =======================
dfu, dfd               ``d`` + f   [n1..nk, n]             the n operands
dfuv                   ``u`` + f   [n1..nk]                the n operands, n tangents
dfdv                   ``v`` + f   [n]                     the n operands, m weights
====================  ==========  ======================  =======================

(m is the number of elements of f's result.)  They are operators too, so they can be
differentiated in turn (``ddf``, ``vdf``, ...).  A derivative operator belongs to the
operator it was made from: where its name is taken already (by a variable, an operator of
the user's, a built-in: ``vp`` is the vector product, not the ``v`` operator of ``p``), it
gets the first free name with a digit appended (``dh1``), and no operator the user
declared is ever taken for one.
"""
from __future__ import annotations

import contextlib
import math

import numpy as np

from ..ad import forward, reverse
from ..graph.graph import F64
from ..primitives import scalar as P
from ..primitives.registry import Primitive
from .errors import AddsError
from .types import build, check_size, flat, type_str


# --------------------------------------------------------------------------------------
# declared operators
# --------------------------------------------------------------------------------------
class Operator:
    """A declared operator: its name, result type and number of scalar operands.

    `table` is the session's dictionary of operators, where derived operators are
    declared; `directional` says whether the sweep in progress is a ``dfuv``/``dfdv`` (use
    the ``u``/``v`` operators) or a ``dfu``/``dfd`` (use the partials, the ``d`` operator);
    `taken(name)` says whether a name that is no operator is in use otherwise (a variable,
    a built-in), so that no derived operator is given it.  A derived operator's `origin`
    is ``(operator, prefix)``: what it is the derivative operator of.

    Example:
        >>> import wengert as wg
        >>> from wengert.adds.types import scalar
        >>> g, table = wg.Graph(), {}
        >>> h = Operator("H", (2,), 3, table, lambda: False)
        >>> xs = [g.input(wg.ShapeDtype(), n) for n in "ABC"]
        >>> y = h.apply(xs)
        >>> type_str(y), y[1].op.name, y[1].params
        ('[2]', 'H', {'at': (2,)})
        >>> dfu(scalar(y[0]), build((3,), lambda i: xs[i[0]]))[2].params, sorted(table)
        ({'at': (1, 3)}, ['DH', 'H'])
    """

    def __init__(self, name, shape, n, table, directional, taken=None, origin=None):
        self.name, self.shape, self.n = name, tuple(shape), int(n)
        self.size = math.prod(self.shape)     # (exact, whatever the shape)
        self.table = table
        self.directional = directional
        self.taken = taken if taken is not None else (lambda name: False)
        self.origin = origin
        self._derived = {}              # prefix -> the derived operator made for it
        self.primitive = Primitive(
            name, lambda *args, at: math.nan, cost="call", foldable=False,
            abstract_eval=lambda args, params: ((), F64),
            doc=f"the declared operator {name}; its value is not known to wengert")
        self.primitive.partials = tuple(self._partial(k) for k in range(self.n))
        self.primitive.jvp = self._jvp
        self.primitive.vjp = self._vjp
        table[name] = self

    def signature(self) -> str:
        return f"{self.name}{type_str(self.shape) if self.shape else ''}({self.n})"

    def apply(self, operands) -> np.ndarray:
        """The operator applied to `operands` (scalar nodes, n in all): a value of the
        operator's type."""
        if len(operands) != self.n:
            raise AddsError(f"operator {self.signature()} takes {self.n} scalar operand"
                            f"{'s' if self.n != 1 else ''} in all, got {len(operands)}")
        return build(self.shape, lambda i: self.primitive(
            *operands, at=tuple(j + 1 for j in i)))

    def describe(self) -> str:
        """The operator for a message: its signature, and where a derived one comes from."""
        if self.origin is None:
            return f"operator {self.signature()}"
        base, prefix = self.origin
        return (f"operator {self.signature()} (the {prefix} operator of {base.name}, "
                "declared by differentiating it)")

    def derived(self, prefix, shape, n) -> "Operator":
        """The derivative operator `prefix` (D, U or V) of this one, declared now if it is
        not yet: named ``prefix + name``, or, if that name is taken, the first free one
        with a digit appended."""
        op = self._derived.get(prefix)
        if op is not None and self.table.get(op.name) is op:   # (not undone since)
            return op
        name, k = prefix + self.name, 0
        while name in self.table or self.taken(name):
            k += 1
            name = f"{prefix}{self.name}{k}"
        op = Operator(name, shape, n, self.table, self.directional, self.taken,
                      origin=(self, prefix))
        self._derived[prefix] = op
        return op

    # --- derivative rules, in the form the sweeps of wengert.ad ask for -------------------
    def _partial(self, k):
        def partial(*args, at):
            xs = args[:-1]                                   # the last one is the result
            d = self.derived("D", self.shape + (self.n,), self.n)
            return d.primitive(*xs, at=at + (k + 1,))
        return partial

    def _jvp(self, tangents, *args, at):
        xs = args[:-1]
        if self.directional():
            u = self.derived("U", self.shape, 2 * self.n)
            zero = xs[0].graph.const(0.0)
            return u.primitive(*xs, *[zero if t is None else t for t in tangents], at=at)
        total = None
        for k, t in enumerate(tangents):
            if t is not None:
                term = P.mul(t, self._partial(k)(*args, at=at))
                total = term if total is None else P.add(total, term)
        return total

    def _vjp(self, g, *args, at):
        xs = args[:-1]
        if self.directional():
            v = self.derived("V", (self.n,), self.n + self.size)
            zero = xs[0].graph.const(0.0)
            weights = [zero] * self.size
            weights[int(np.ravel_multi_index([i - 1 for i in at], self.shape))
                    if self.shape else 0] = g
            return [v.primitive(*xs, *weights, at=(k + 1,)) for k in range(self.n)]
        return [P.mul(g, self._partial(k)(*args, at=at)) for k in range(self.n)]


# --------------------------------------------------------------------------------------
# dfuv, dfu, dfdv, dfd
# --------------------------------------------------------------------------------------
def _variables(x):
    """The scalar nodes of the variable of differentiation, checked."""
    xs = flat([x])
    if len({n.index for n in xs}) != len(xs):
        raise AddsError("the elements of the variable of differentiation must be distinct "
                        "values (the same value appears twice)")
    for n in xs:
        if n.is_const:
            # (not "or an expression of variables": expressions are refused, see
            # interpreter._names_variables)
            raise AddsError(f"cannot differentiate with respect to the constant "
                            f"{n.value!r}: the variable of differentiation must be a "
                            "variable")
    return xs


def _sweep_setup(f, x):
    """The variables, the functions, their graph, and the nodes a sweep visits."""
    xs, fs = _variables(x), flat([f])
    graph = fs[0].graph
    return xs, fs, graph, graph.between(xs, fs)


def _or_zero(graph, nodes):
    return [graph.const(0.0) if d is None else graph.lift(d) for d in nodes]


def _direction(ys):
    """Tangents or weights: a constant zero is no tangent at all (less work)."""
    return [None if (n.is_const and n.value == 0) else n for n in ys]


def dfuv(f, x, y):
    """Σ_i ∂f/∂x_i · y_i by the forward (BU) sweep; the type of f.

    Example:
        >>> import wengert as wg
        >>> from wengert.adds.types import scalar
        >>> g = wg.Graph()
        >>> x = scalar(g.input(wg.ShapeDtype(), "X"))
        >>> f = scalar(wg.math.sin(x[()]))
        >>> dfuv(f, x, scalar(g.const(2.0)))[()].op.name
        'mul'
    """
    if y.shape != x.shape:
        raise AddsError(f"dfuv(f, x, y): y must have the type of x, got x of type "
                        f"{type_str(x)} and y of type {type_str(y)}")
    xs, fs, graph, plan = _sweep_setup(f, x)
    ts = forward(plan, xs, _direction(flat([y])), fs, symbolic=True)
    return np.array(_or_zero(graph, ts), dtype=object).reshape(f.shape)


def dfdv(f, x, y):
    """Σ_j y_j · ∂f_j/∂x by the reverse (TD) sweep; the type of x.

    Example:
        >>> import wengert as wg
        >>> from wengert.adds.types import scalar
        >>> g = wg.Graph()
        >>> x = scalar(g.input(wg.ShapeDtype(), "X"))
        >>> dfdv(scalar(x[()] * x[()]), x, scalar(g.const(1.0)))[()].op.name   # X*2
        'mul'
    """
    if y.shape != f.shape:
        raise AddsError(f"dfdv(f, x, y): y must have the type of f, got f of type "
                        f"{type_str(f)} and y of type {type_str(y)}")
    xs, fs, graph, plan = _sweep_setup(f, x)
    adj = reverse(plan, xs, fs, _direction(flat([y])), symbolic=True)
    return np.array(_or_zero(graph, adj), dtype=object).reshape(x.shape)


def _jacobian(f, x, sweep):
    check_size(f.shape + x.shape, f"the Jacobian, of type {type_str(f.shape + x.shape)},")
    xs, fs, graph, plan = _sweep_setup(f, x)
    one = graph.const(1.0)
    jac = np.empty((len(fs), len(xs)), dtype=object)
    for k in range(len(xs) if sweep is forward else len(fs)):
        if sweep is forward:            # column k: the tangent of the unit vector e_k
            seed = [one if j == k else None for j in range(len(xs))]
            jac[:, k] = _or_zero(graph, forward(plan, xs, seed, fs, symbolic=True))
        else:                           # row k: the adjoint of the unit vector e_k
            seed = [one if j == k else None for j in range(len(fs))]
            jac[k, :] = _or_zero(graph, reverse(plan, xs, fs, seed, symbolic=True))
    return jac.reshape(f.shape + x.shape)


def dfu(f, x):
    """The Jacobian ∂f/∂x by forward sweeps, one per element of x; type f ++ x."""
    return _jacobian(f, x, forward)


def dfd(f, x):
    """The Jacobian ∂f/∂x by reverse sweeps, one per element of f; type f ++ x.

    Example:
        >>> import wengert as wg
        >>> from wengert.adds.types import vec, scalar
        >>> g = wg.Graph()
        >>> a, b = (scalar(g.input(wg.ShapeDtype(), n)) for n in "AB")
        >>> type_str(dfd(vec(a, b), vec(a, b)))
        '[2,2]'
    """
    return _jacobian(f, x, reverse)


@contextlib.contextmanager
def directional(flag_holder):
    """While a ``dfuv``/``dfdv`` runs, declared operators use their ``u``/``v`` operators."""
    old = flag_holder.directional
    flag_holder.directional = True
    try:
        yield
    finally:
        flag_holder.directional = old


# --------------------------------------------------------------------------------------
# err: Iri's rounding-error estimate
# --------------------------------------------------------------------------------------
def err(f, x, eps):
    """Iri's estimate of the rounding error of f: for each element of f,
    ``sqrt((1/3) * Σ_i (∂f/∂v_i · v_i)²) · eps`` where v_i runs over the operations that
    compute f from x (the nodes between x and f, x excluded; negations are exact and left
    out) and ∂f/∂v_i is v_i's adjoint.  The type of f.

    It is the standard deviation of Σ_i ∂f/∂v_i · v_i · δ_i for roundings δ_i uniform in
    [-eps, eps]: an absolute error, in f's units, with eps the unit roundoff (2**-53 in
    double precision).  Inputs, constants and the nodes that do not depend on x are
    taken as exact (docs/adds.md, "The rounding-error estimate").

    Example:
        >>> import wengert as wg
        >>> from wengert.adds.types import scalar
        >>> g = wg.Graph()
        >>> x, y, e = (scalar(g.input(wg.ShapeDtype(), n)) for n in "XYE")
        >>> out = err(scalar(x[()] * y[()]), x, e)   # one operation, its adjoint is 1
        >>> print(g.format([out[()]]))     # sqrt((1/3) * (1*(X*Y))**2) * E
        graph(X: f64[], Y: f64[], E: f64[]):
          %3: f64[] = mul(X, Y)
          %7: f64[] = mul(%3, %3)
          %8: f64[] = mul(0.3333333333333333, %7)
          %9: f64[] = sqrt(%8)
          %10: f64[] = mul(E, %9)
          return %10
    """
    if eps.ndim != 0:
        raise AddsError(f"err(f, x, eps): eps must be a scalar, got type {type_str(eps)}")
    xs = _variables(x)
    graph = xs[0].graph if xs else eps[()].graph
    third = graph.const(1.0 / 3.0)

    def estimate(fj):
        plan = graph.between(xs, [fj])
        adjoints = {}
        reverse(plan, xs, [fj], [graph.const(1.0)], symbolic=True, adjoints=adjoints)
        total = graph.const(0.0)
        for v in plan:
            if v.op is P.neg or v.index not in adjoints:
                continue
            t = P.mul(adjoints[v.index], v)
            total = P.add(total, P.mul(t, t))
        return P.mul(P.sqrt(P.mul(total, third)), eps[()])

    return build(f.shape, lambda i: estimate(f[i]))
