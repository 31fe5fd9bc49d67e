"""Differentiable integrals: `quad`, `quad_vec`, `fixed_quad`, `romb`, `simpson`,
`trapezoid` and `cumulative_trapezoid`, SciPy's `scipy.integrate` quadrature with
derivatives (re-exported by `wengert.scipy.integrate`).

On plain values each function is SciPy's: the same call, the same numbers.  The sample
rules (`fixed_quad`, `romb`, `simpson`, `trapezoid`, `cumulative_trapezoid`) are sums of
samples, and on traced values they are those sums written with `wengert.numpy`, so they
differentiate as any composition does.  `quad` and `quad_vec` are adaptive: which points
they sample depends on the values, and differentiating the steps would give the
derivative of the algorithm, not of the integral.  So where a limit or a leaf of args is
traced, the integral is **one node** of the graph, a `Quad` primitive: SciPy's routine runs
on plain numbers (the value is SciPy's own), nothing inside it is recorded, and the node's
rules are the Leibniz rule,

    d/dθ ∫_a^b f(x, θ) dx = ∫_a^b ∂f/∂θ (x, θ) dx + f(b, θ) db/dθ - f(a, θ) da/dθ,

whose integral is another `Quad` node, of the *derivative integrand* (`wg.jvp` of f in
θ for a forward sweep, the pullback of f for a reverse one), integrated by the same
routine with the same tolerances, points and weight.  Its rules are the Leibniz rule
again, so `wg.hessian` and every higher derivative work the same way, one level down.
SciPy calls a derivative integrand as code made by `wg.compile` once it has been asked for
often (`wengert.scipy._derivatives`, which keeps the code across calls).

A function that closes over a traced value (``lambda x: wnp.exp(-k * x)`` with k traced)
is traced once without values, and the values it closes over become arguments of the
node, as `wg.vmap` and `wg.scan` take them: its derivative goes through them.

Example:
    >>> import wengert as wg, wengert.numpy as wnp
    >>> from wengert.scipy.integrate import quad
    >>> area = lambda k: quad(lambda x, k: wnp.exp(-k * x), 0.0, 1.0, args=(k,))[0]
    >>> print(round(area(2.0), 10), round((1 - wnp.exp(-2.0)) / 2.0, 10))   # (1 - e^-k)/k
    0.4323323584 0.4323323584
    >>> print(round(wg.grad(area)(2.0), 10),                  # e^-k/k - (1 - e^-k)/k²
    ...       round(wnp.exp(-2.0) / 2.0 - (1 - wnp.exp(-2.0)) / 4.0, 10))
    -0.1484985376 -0.1484985376
"""
from __future__ import annotations

import functools
import math
import warnings
from collections import OrderedDict

import numpy as np

from ..graph.active import current_graph, recording
from ..graph.graph import ShapeDtype
from ..graph.node import Node
from ..implicit import _caller_level
from ..primitives.registry import Primitive, known_value as _value, shape_of
from ..primitives.special import INSTALL_HINT
from ..tree import flatten, hold_constants, unflatten
from .. import numpy as wnp

__all__ = ["quad", "quad_vec", "fixed_quad", "romb", "simpson", "trapezoid",
           "cumulative_trapezoid", "Quad"]

#: quad's Fourier weights cos(ωx) and sin(ωx): they read x and ω alone, and their
#: derivative in ω is the other one times ∓x, a weight QUADPACK has (so ω may be traced).
#: The Cauchy weight 1/(x - c) reads x and c alone too (so the limits may be traced).
_FOURIER = ("cos", "sin")
#: QAWS's algebraic-logarithmic weights (x - a)^α (b - x)^β [log ...]: they read the
#: limits, and their derivatives in α and β need weights QUADPACK does not have
#: (log², ...), so traced limits or a traced wvar are refused with them.
_ALGEBRAIC = ("alg", "alg-loga", "alg-logb", "alg-log")


def _scipy_integrate():
    try:
        import scipy.integrate
    except ImportError as e:
        raise ImportError(INSTALL_HINT) from e
    return scipy.integrate


class _ClosesOver(Exception):
    """func returned a traced value while SciPy called it on plain numbers: it closes over
    one, so the call starts again as a traced integral."""


def _traced(*trees):
    return any(type(v) is Node for t in trees for v in flatten(t)[0])


def _name(func):
    return getattr(func, "__name__", "func")


def _closure_error(who, name, why=""):
    return ValueError(
        f"{who}: {name} computes with a traced value that is not among a, b and args (a "
        f"variable it closes over){why}; pass that value in args, so that its derivative "
        "goes through the integral")


def _numeric(x):
    """A leaf of args the primitive takes as an argument: a number or an array of
    numbers, but not a Python int or bool (a count, a flag: held as a constant, so that
    ``x ** n`` stays an integer power)."""
    if type(x) is Node:
        return True
    if type(x) in (int, bool):
        return False
    return isinstance(x, (float, complex, np.number, np.ndarray)) and \
        np.asarray(x).dtype.kind in "biufc"


def _flat(out, who, name):
    """An integrand's value as a flat float64 vector (on plain or traced values)."""
    out = out if type(out) is Node else wnp.asarray(out)
    if out.dtype.kind == "c":
        raise TypeError(f"{who}: {name} returned a complex value; quad integrates real "
                        "functions: pass complex_func=True (quad) or integrate the real "
                        "and imaginary parts separately")
    if out.dtype.kind != "f" or out.dtype != np.float64:
        out = wnp.astype(out, np.float64)
    return wnp.reshape(out, (-1,))


# --------------------------------------------------------------------------------------
# integrands: h(x, *leaves) -> (m,), on plain and traced values alike
# --------------------------------------------------------------------------------------
class _Integrand:
    """A function ``h(x, *leaves)`` of the integration variable x (a float) and the node's
    leaves (numbers and arrays), m numbers (flat), written with wengert's functions so
    that it works on plain and on traced values.  `plain(leaves)` is the function of x
    that SciPy calls; `key` names it for compiled code kept across calls (None: not kept);
    `n` is how many leaves it reads, the user's function's first (`root`)."""

    name = "func"
    m = 1
    n = 0
    key = None
    root = None
    digest = None       # the user's function's `Graph.digest`, traced for this integral

    def h(self, x, *leaves):
        raise NotImplementedError

    def of(self, x, leaves, chosen):
        """h at x as a function of the leaves at the positions `chosen` alone."""
        def f(*picked):
            ls = list(leaves)
            for k, v in zip(chosen, picked):
                ls[k] = v
            return self.h(x, *ls)
        return f

    def plain(self, leaves, scalar):
        """``x -> h(x, *leaves)`` on plain numbers, as SciPy calls it: a float if
        `scalar`, else a float64 vector of m.  Eager at first, compiled by `wg.compile`
        once called often (counted over the calls of quad that integrate it)."""
        from ._derivatives import HOT, _Derivative, _KERNELS
        root, m = self.root or self, self.m
        finish = (lambda v: float(np.reshape(v, -1)[0])) if scalar else \
            (lambda v: np.asarray(v, dtype=np.float64).reshape(m))
        key = None
        if self.key is not None:
            key = ("quad", self.key, tuple((shape_of(v), np.asarray(v).dtype.str)
                                           for v in leaves))
            try:
                hash(key)
            except TypeError:
                key = None
        d = _Derivative(lambda x, leaves: self.h(x, *leaves), leaves, key, finish,
                        source=lambda x, leaves: root.h(x, *leaves[:root.n]))
        if root.digest is not None:
            # (the user's function was traced for this integral already: its graph's
            # digest is the one kept code is checked against, with no second trace)
            d._digest = lambda xs: root.digest
        if key is not None and key not in _KERNELS:
            # (a smooth integrand takes quad 21 calls, fewer than HOT: the eager calls of
            # earlier integrals count, so that a fit's tenth gradient runs compiled code)
            d.calls = min(_EAGER.get(key, 0), HOT - 1)
        return d


def _counted(f):
    """After an integral: keep the count of eager calls of a derivative integrand `f` (a
    `_Derivative`; see `_Integrand.plain`)."""
    if getattr(f, "key", None) is not None and f.code is None:
        _EAGER[f.key] = f.calls
        _EAGER.move_to_end(f.key)
        if len(_EAGER) > 256:
            _EAGER.popitem(last=False)


#: Eager calls of a derivative integrand so far, by its key (see `_Integrand.plain`).
_EAGER: OrderedDict = OrderedDict()


class _UserIntegrand(_Integrand):
    """The user's ``func(x, *args)``, args the pytree `tree` whose numeric leaves are the
    node's.  SciPy calls func itself (the value of a traced integral is SciPy's)."""

    def __init__(self, func, tree, n, m, who):
        self.func = func
        self.tree = tree
        self.n = n
        self.m = m
        self.who = who
        self.name = _name(func)
        try:
            # (by its code, not the function object: an integrand written inline is a new
            # lambda at each call; compiled code is kept only while its traced graph,
            # constants included, is the same, see `_Derivative`)
            self.key = (who, getattr(func, "__code__", func), tree, m)
            hash(self.key)
        except TypeError:
            self.key = None

    def h(self, x, *leaves):
        out = _flat(self.func(x, *unflatten(self.tree, leaves)), self.who, self.name)
        if out.shape[0] != self.m:
            raise ValueError(f"{self.who}: {self.name} returned {out.shape[0]} numbers where "
                             f"it returned {self.m} before" if self.m != 1 else
                             f"{self.who}: {self.name} must return a number, got "
                             f"{out.shape[0]} of them (a vector-valued integrand is "
                             "quad_vec's)")
        return out

    def plain(self, leaves, scalar):
        func, args, who, name = self.func, unflatten(self.tree, list(leaves)), self.who, \
            self.name

        def f(x):
            out = func(x, *args)
            if type(out) is Node:
                # (traced before, the function showed no such value: it could not be
                # traced without values, so wengert cannot follow it)
                raise _closure_error(who, name, ", and it cannot be traced without values "
                                     "(a Python branch on x, say), which wengert needs to "
                                     "follow such a value")
            return out if scalar else np.asarray(out, dtype=np.float64).reshape(-1)
        return f


class _GraphIntegrand(_Integrand):
    """The user's function traced once without values, for one that closes over traced
    values: `graph` has inputs (x, *args' leaves, *the values it closes over), and the
    node's leaves are the last two."""

    def __init__(self, graph, name, n):
        self.graph = graph
        self.name = name
        self.n = n
        self.m = graph.outputs[0].shape[0]
        self.digest = graph.digest()
        self.key = ("graph", self.digest)

    def h(self, x, *leaves):
        return self.graph.evaluate([x, *leaves])[0]


class _Derived(_Integrand):
    """An integrand made from `base` by a derivative rule: its leaves are base's, then
    its own."""

    def __init__(self, base, name, m, extra, key):
        self.base = base
        self.root = base.root or base
        self.name = name
        self.m = m
        self.n = base.n + extra
        self.key = None if base.key is None else key


class _Tangent(_Derived):
    """A forward sweep's integrand: ∂h/∂θ θ̇ (`wg.jvp` of base in its leaves at `chosen`,
    whose tangents are the extra leaves)."""

    def __init__(self, base, chosen):
        super().__init__(base, f"jvp of {base.name}", base.m, len(chosen),
                         ("jvp", base.key, chosen))
        self.chosen = chosen

    def h(self, x, *leaves):
        from ..api import jvp
        n = self.base.n
        ls, tangents = leaves[:n], leaves[n:]
        return jvp(self.base.of(x, ls, self.chosen), tuple(ls[k] for k in self.chosen),
                   tuple(tangents))[1]


class _Cotangent(_Derived):
    """A reverse sweep's integrand: the pullback of base at x of the cotangent g (the one
    extra leaf) onto its leaves at `chosen`, flat and end to end (P numbers)."""

    def __init__(self, base, chosen, sizes):
        super().__init__(base, f"vjp of {base.name}", sum(sizes), 1,
                         ("vjp", base.key, chosen))
        self.chosen = chosen

    def h(self, x, *leaves):
        from ..api import vjp
        n = self.base.n
        ls, g = leaves[:n], leaves[n]
        primals = [ls[k] for k in self.chosen]
        pulled = vjp(self.base.of(x, ls, self.chosen), *primals)[1](g)
        return wnp.concatenate([wnp.reshape(wnp.zeros_like(p) if c is None else c, (-1,))
                                for p, c in zip(primals, pulled)])


class _Moment(_Derived):
    """x h(x): with the other Fourier weight, the derivative in ω of an integral weighted
    by cos(ωx) or sin(ωx)."""

    def __init__(self, base):
        super().__init__(base, f"x·{base.name}", base.m, 0, ("moment", base.key))

    def h(self, x, *leaves):
        return x * self.base.h(x, *leaves)


# --------------------------------------------------------------------------------------
# the primitive
# --------------------------------------------------------------------------------------
class Quad(Primitive):
    """The primitive of one adaptive integral: ``(a, b, points, wvar, *leaves) ->
    [∫_a^b h(x, *leaves) w(x) dx (m numbers), the error estimate]``, h an `_Integrand`,
    w the weight (QUADPACK's; none for quad_vec).  `points` is a vector of breakpoints
    (empty where none were given), `wvar` the weight's parameter (an empty vector where
    there is none).  Its value is SciPy's `quad` (one call per component, sharing the
    integrand's values, where m > 1) or `quad_vec`, on plain numbers; its rules are the
    Leibniz rule, whose integral is another `Quad` (of a `_Tangent` integrand forward, a
    `_Cotangent` backward, a `_Moment` for the ω of a Fourier weight), so they
    differentiate again.  The error estimate gets a zero derivative, and so do the
    breakpoints (the integral does not depend on them).  Not in the registry: one is made
    per call, as odeint's.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> from wengert.scipy.integrate import quad
        >>> print(wg.trace(lambda k: quad(lambda x, k: wnp.exp(-k * x), 0.0, 1.0,
        ...                               args=(k,))[0], 2.0))
        graph(k: f64[]):
          %4: f64[2] = quad[<lambda>](0.0, 1.0, [], [], k)
          %5: f64[] = getitem(%4, index=(0,))
          return %5
    """

    def __init__(self, integrand, routine, options, points_given=False, weight=None,
                 who="quad", role=None):
        super().__init__(f"{routine}[{integrand.name}]", self._impl, cost="call",
                         abstract_eval=self._abstract_eval)
        self.integrand = integrand
        self.routine = routine            # "quad" or "quad_vec": SciPy's function
        self.options = options            # its options, besides points, weight and wvar
        self.points_given = points_given
        self.weight = weight
        self.who = who
        self.role = role                  # what a derived integral is for (warnings);
        #                                   None for the user's, whose warnings are SciPy's
        self.jvp = self._jvp_rule
        self.vjp = self._vjp_rule
        self.asks_active = True           # (a cotangent costs an integral of its own)
        self.result = None                # SciPy's return value, the last time

    def _abstract_eval(self, args, params):
        return (self.integrand.m + 1,), np.dtype(np.float64)

    # --- the value: SciPy ------------------------------------------------------------
    def _impl(self, a, b, points, wvar, *leaves):
        a, b = float(a), float(b)
        points = np.asarray(points, dtype=np.float64).reshape(-1).tolist() \
            if self.points_given else None
        wvar = np.asarray(wvar, dtype=np.float64)
        wvar = None if wvar.size == 0 else float(wvar) if wvar.ndim == 0 else tuple(wvar)
        m = self.integrand.m
        si = _scipy_integrate()
        with recording(None), warnings.catch_warnings(record=True) as caught:
            # (plain numbers: the integrand records nothing; SciPy's warnings are said
            # again below, pointing at the caller's line)
            warnings.simplefilter("always")
            if self.routine == "quad_vec":
                f = self.integrand.plain(leaves, scalar=False)
                out = si.quad_vec(f, a, b, points=points, full_output=True, **self.options)
                _counted(f)
                values, err = np.reshape(out[0], m), float(out[1])
                failed = [out[2].message] if out[2].status != 0 and self.role else []
            elif m == 1:
                f = self.integrand.plain(leaves, scalar=True)
                out = si.quad(f, a, b, full_output=1, points=points, weight=self.weight,
                              wvar=wvar, **self.options)
                _counted(f)
                values, err = np.array([out[0]]), float(out[1])
                failed = [out[3]] if len(out) > 3 else []
            else:
                out = self._componentwise(si, leaves, a, b, points, wvar)
                values = np.array([o[0] for o in out])
                err = max(float(o[1]) for o in out)
                failed = [o[3] for o in out if len(o) > 3]
        self.result = out
        for w in caught:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno) \
                if not issubclass(w.category, si.IntegrationWarning) else \
                warnings.warn(w.message, w.category, stacklevel=_caller_level())
        if failed and (self.role is not None or self.warn):
            warnings.warn(self._failure(failed[0], err), si.IntegrationWarning,
                          stacklevel=_caller_level())
        return np.concatenate([values, [err]])

    warn = True         # whether a failure of the user's integral warns (not full_output)

    def _failure(self, message, err):
        if self.role is None:
            return message                    # (SciPy's own)
        message = " ".join(str(message).split())
        return (f"{self.who}: the integral of {self.integrand.name} ({self.role}) did not "
                f"reach the tolerance: {message} The derivative is only as accurate as this "
                f"integral (error estimate {err:.2g}): raise limit=, or give points= at the "
                "integrand's difficulties")

    def _componentwise(self, si, leaves, a, b, points, wvar):
        """quad of each of the m components, as QUADPACK integrates scalars: each to the
        tolerances (where quad_vec's test is on a norm of them all, and has no
        extrapolation for an endpoint singularity).  The integrand is computed once per
        point x for all of them: the components' subdivisions start alike and mostly
        stay so."""
        f = self.integrand.plain(leaves, scalar=False)
        seen = {}

        def at(x):
            v = seen.get(x)
            if v is None:
                v = seen[x] = f(x)
            return v
        out = [si.quad(lambda x, i=i: at(x)[i], a, b, full_output=1, points=points,
                       weight=self.weight, wvar=wvar, **self.options)
               for i in range(self.integrand.m)]
        _counted(f)
        return out

    # --- the rules: Leibniz ----------------------------------------------------------
    def derived(self, integrand, role, weight=None):
        """The `Quad` of a rule's integrand: this routine, options and points (the
        weight's Chebyshev moments, wopts, are for this integral's weight only; the
        workers of quad_vec for the user's function only)."""
        options = {k: v for k, v in self.options.items() if k != "wopts"}
        if "workers" in options:
            options["workers"] = 1
        prim = Quad(integrand, self.routine, options, self.points_given and not self.weight,
                    weight or self.weight, self.who, role)
        return prim

    def _edge(self, x, w, leaves):
        """h(x) w(x) at a limit x: the Leibniz rule's boundary term (zero at an infinite
        limit: a convergent integral's integrand tends to 0 there, where it has a
        limit)."""
        h = self.integrand.h
        v = _value(x)
        if v is not None:
            if math.isinf(float(v)):
                return wnp.zeros(self.integrand.m)
            return h(x, *leaves) * self._weight_at(x, w)
        # tracing without values: the test is a graph operation, and h is evaluated at a
        # finite stand-in where x is infinite (its value there, inf or nan, would reach
        # the derivatives of the unselected branch)
        infinite = wnp.isinf(x)
        safe = wnp.where(infinite, 0.0, x)
        return wnp.where(infinite, 0.0, h(safe, *leaves) * self._weight_at(safe, w))

    def _weight_at(self, x, w):
        if self.weight == "cos":
            return wnp.cos(w * x)
        if self.weight == "sin":
            return wnp.sin(w * x)
        if self.weight == "cauchy":
            return 1.0 / (x - w)
        return 1.0          # (the algebraic weights: refused with traced limits)

    def _omega(self, a, b, points, w, leaves):
        """d/dω of the integral weighted by cos(ωx) (sin(ωx)): -∫ x h sin(ωx) (∫ x h
        cos(ωx)), m numbers."""
        other, sign = ("sin", -1.0) if self.weight == "cos" else ("cos", 1.0)
        moment = self.derived(_Moment(self.integrand), f"d/dω of the {self.weight} weight",
                              weight=other)
        return sign * moment(a, b, points, w, *leaves)[:self.integrand.m]

    def _jvp_rule(self, ts, a, b, points, w, *rest):
        leaves = rest[:-1]
        da, db, dw, dleaves = ts[0], ts[1], ts[3], ts[4:]
        m = self.integrand.m
        chosen = tuple(k for k, t in enumerate(dleaves) if t is not None)
        out = None
        if chosen:
            tangent = self.derived(_Tangent(self.integrand, chosen), "a forward derivative")
            out = tangent(a, b, points, w, *leaves, *[dleaves[k] for k in chosen])[:m]
        terms = []
        if db is not None:
            terms.append(self._edge(b, w, leaves) * db)
        if da is not None:
            terms.append(-self._edge(a, w, leaves) * da)
        if dw is not None and self.weight in _FOURIER:
            terms.append(self._omega(a, b, points, w, leaves) * dw)
        for t in terms:
            out = t if out is None else out + t
        if out is None:
            return None
        return wnp.concatenate([wnp.broadcast_to(out, (m,)), wnp.zeros(1)])

    def _vjp_rule(self, g, a, b, points, w, *rest, active):
        leaves = rest[:-1]
        m = self.integrand.m
        gv = g[:m]
        out = [None] * (4 + len(leaves))
        chosen = tuple(k for k, x in enumerate(leaves) if active[4 + k] and
                       np.dtype(_dtype(x)).kind == "f")
        if chosen:
            shapes = [shape_of(leaves[k]) for k in chosen]
            sizes = [math.prod(s) for s in shapes]
            cot = self.derived(_Cotangent(self.integrand, chosen, sizes),
                               "a reverse derivative")
            flat = cot(a, b, points, w, *leaves, gv)
            start = 0
            for k, shape, size in zip(chosen, shapes, sizes):
                c = wnp.reshape(flat[start:start + size], shape)
                if _dtype(leaves[k]) != np.float64:
                    c = wnp.astype(c, _dtype(leaves[k]))
                out[4 + k] = c
                start += size
        if active[1]:
            out[1] = wnp.sum(gv * self._edge(b, w, leaves))
        if active[0]:
            out[0] = -wnp.sum(gv * self._edge(a, w, leaves))
        if active[3] and self.weight in _FOURIER:
            out[3] = wnp.sum(gv * self._omega(a, b, points, w, leaves))
        return tuple(out)


def _dtype(x):
    return x.dtype if type(x) is Node else np.asarray(x).dtype


# --------------------------------------------------------------------------------------
# the front-ends
# --------------------------------------------------------------------------------------
def _watched(func):
    """func as SciPy calls it on plain values while a transformation records: a traced
    result means func closes over a traced value (`_ClosesOver`)."""
    def watched(x, *args):
        out = func(x, *args)
        if type(out) is Node:
            raise _ClosesOver
        return out
    return watched


def _plain_first(call, func, traced):
    """``call(func)`` (SciPy's function) where nothing is traced; None where func turns
    out to close over a traced value, which the caller then integrates as traced."""
    if traced:
        return None
    if current_graph() is None or not callable(func) or _low_level(func):
        return call(func)
    try:
        return call(_watched(func))
    except _ClosesOver:
        return None


def _low_level(func):
    try:
        from scipy import LowLevelCallable
    except ImportError:
        return False
    return isinstance(func, LowLevelCallable) or type(func).__module__ == "ctypes" or \
        hasattr(func, "argtypes")


def _integrand(who, func, args, x_probe):
    """The integrand of a traced integral: (the `_Integrand`, the node's leaves, the shape
    of func's value).

    func is traced once without values, x and args' numeric leaves its inputs: that gives
    its value's shape, and the traced values it closes over, which become leaves after
    args' (the integrand is then the traced graph).  Where it cannot be traced so (a
    Python branch on x), SciPy calls func itself, and it must not close over a traced
    value; `x_probe` is a point at which to call it for its shape (quad_vec's)."""
    from ..api import trace
    if not callable(func) or _low_level(func):
        raise TypeError(f"{who}: on traced values func must be a Python function written "
                        f"with wengert.numpy (or NumPy functions, which dispatch to it), not "
                        f"{type(func).__name__}: a compiled function has no derivative")
    leaves, tree = flatten(args)
    numeric, tree = hold_constants(tree, leaves, lambda v: not _numeric(v))
    for v in numeric:
        if _dtype(v).kind == "c":
            raise TypeError(f"{who}: complex values in args are not supported; write a "
                            "complex parameter as its real and imaginary parts")
    name = _name(func)
    seen = []

    def flat_func(x, *ls):
        out = func(x, *unflatten(tree, ls))
        out = out if type(out) is Node else wnp.asarray(out)
        seen.append(tuple(out.shape))
        return _flat(out, who, name)
    flat_func.__name__ = name
    try:
        with np.errstate(all="ignore"):
            graph = trace(flat_func, ShapeDtype((), np.float64, weak=True), *numeric,
                          _capture=who)
    except TypeError as e:
        if "complex" in str(e):
            raise
        graph = None
    except Exception:                   # noqa: BLE001  (a branch on x: SciPy calls func)
        graph = None
    if graph is not None and graph.captured:
        closed = [outer for outer, _ in graph.captured.values()]
        return (_GraphIntegrand(graph, name, len(numeric) + len(closed)), numeric + closed,
                seen[-1])
    if graph is not None:
        shape = seen[-1]
    elif who == "quad":
        shape = ()
    else:
        values = [_value(v) for v in numeric]
        if any(v is None for v in values) or x_probe is None:
            raise ValueError(f"{who}: {name} cannot be traced without values (a Python "
                             "branch on x, say), and under wg.compile or wg.vmap the shape "
                             "of its value cannot be known otherwise; write the branch with "
                             "wengert.numpy.where")
        with recording(None):
            out = func(x_probe, *unflatten(tree, values))
        if type(out) is Node:
            raise _closure_error(who, name, ", and it cannot be traced without values (a "
                                 "Python branch on x, say), which wengert needs to follow "
                                 "such a value")
        shape = tuple(np.shape(out))
    integrand = _UserIntegrand(func, tree, len(numeric), math.prod(shape), who)
    if graph is not None:
        integrand.digest = graph.digest()
    return integrand, numeric, shape


def _limit(x, who, name):
    """A limit as the node's argument: a float, or a traced scalar of dtype float64."""
    if type(x) is Node:
        if x.shape != ():
            raise ValueError(f"{who}: the limit {name} must be a number, got shape {x.shape}")
        if x.dtype.kind == "c":
            raise TypeError(f"{who}: the limit {name} must be real")
        return x if x.dtype == np.float64 else wnp.astype(x, np.float64)
    return float(x)


def _points(points):
    if points is None:
        return np.zeros(0)
    p = wnp.asarray(points) if _traced(points) else np.asarray(points, dtype=np.float64)
    p = wnp.reshape(p, (-1,))
    return p if p.dtype == np.float64 else wnp.astype(p, np.float64)


def _probe(a, b):
    """A finite point of [a, b] (for the size of an integrand that cannot be traced)."""
    a, b = _value(a), _value(b)
    if a is None or b is None:
        return None
    a, b = float(a), float(b)
    if math.isfinite(a) and math.isfinite(b):
        return 0.5 * (a + b)
    if math.isfinite(a) or math.isfinite(b):
        x = a if math.isfinite(a) else b
        return x + 1.0 if (b if math.isfinite(a) else -a) > 0 else x - 1.0
    return 0.0


def quad(func, a, b, args=(), full_output=0, epsabs=1.49e-8, epsrel=1.49e-8, limit=50,
         points=None, weight=None, wvar=None, wopts=None, maxp1=50, limlst=50,
         complex_func=False):
    """∫_a^b func(x, *args) dx: SciPy's `scipy.integrate.quad` (QUADPACK), the same call and
    results, differentiable in the limits and in args.

    On plain values this is SciPy's function.  Where a, b or a leaf of args (numbers,
    arrays, pytrees of them) is traced, or func closes over a traced value, the integral is
    one node whose value is SciPy's quad on plain numbers and whose derivatives are the
    Leibniz rule: ``∫ ∂f/∂θ dx`` (computed by quad, with the same tolerances, points and
    weight) plus ``f(b) db - f(a) da``, to any order.  So the derivative is as accurate as
    quad's tolerances, epsabs and epsrel, make the integral of ∂f/∂θ; where that integral
    does not reach them, an ``IntegrationWarning`` says so, as SciPy's does for the
    integral itself.  func must be written with `wengert.numpy` (or NumPy functions, which
    dispatch to it), and be differentiable in θ (a jump whose place moves with θ is the
    Leibniz rule's boundary term: split the integral there, ``quad(f, a, θ) + quad(f, θ,
    b)``).

    * An infinite limit gets a zero derivative (a convergent integral's integrand tends to
      0 there, where it has a limit), and f is not evaluated there.
    * abserr, the error estimate, is returned traced, with a zero derivative (it is no
      differentiable function of the parameters); with ``full_output`` the infodict,
      message and explanation are SciPy's plain ones (not under wg.compile or wg.vmap,
      where no value is known when the function is traced).
    * points may be traced (their derivative is zero: the integral does not depend on
      them).
    * weight: 'cos' and 'sin' take a traced ω (wvar): d/dω ∫ f cos(ωx) = -∫ x f sin(ωx),
      again a weighted quad; 'cauchy' takes traced limits but not a traced pole c (the
      derivative in c is a hypersingular integral); the algebraic weights ('alg',
      'alg-loga', ...) depend on the limits and on (α, β) as no QUADPACK weight's
      derivative does, so traced limits or wvar are refused with them.  args may be traced
      with every weight.
    * complex_func: the real and imaginary parts are two traced integrals, as SciPy
      computes them.

    Under `wg.vmap` the integrals of a batch are computed one by one (a loop over the
    examples); under `wg.compile` the node calls SciPy from the compiled code.

    Example:
        >>> import numpy as np, wengert as wg, wengert.numpy as wnp
        >>> from wengert.scipy.integrate import quad
        >>> def gauss(mu, sigma):              # ∫ exp(-(x-μ)²/2σ²) dx = σ √(2π)
        ...     f = lambda x, mu, sigma: wnp.exp(-0.5 * ((x - mu) / sigma) ** 2)
        ...     return quad(f, -np.inf, np.inf, args=(mu, sigma))[0]
        >>> print(round(gauss(1.0, 2.0), 9), round(2 * np.sqrt(2 * np.pi), 9))
        5.013256549 5.013256549
        >>> [round(float(d), 9) + 0.0 for d in wg.grad(gauss, argnums=(0, 1))(1.0, 2.0)]
        [0.0, 2.506628275]
        >>> wg.grad(lambda b: quad(lambda x: x ** 2, 0.0, b)[0])(3.0)    # b²
        9.0
    """
    args = args if isinstance(args, tuple) else (args,)
    si = _scipy_integrate()

    def scipy_quad(f):
        return si.quad(f, a, b, args, full_output, epsabs, epsrel, limit, points, weight,
                       wvar, wopts, maxp1, limlst, complex_func)
    found = _plain_first(scipy_quad, func, _traced(a, b, args, points, wvar))
    if found is not None:
        return found
    if complex_func:
        return _complex_quad(func, a, b, args, full_output, epsabs, epsrel, limit, points,
                             weight, wvar, wopts, maxp1, limlst)
    name = _name(func)
    a, b = _limit(a, "quad", "a"), _limit(b, "quad", "b")
    w = _weight_argument(weight, wvar, a, b, wopts)
    integrand, leaves, _ = _integrand("quad", func, args, None)
    if integrand.m != 1:
        raise ValueError(f"quad: {name} must return a number, got {integrand.m} of them (a "
                         "vector-valued integrand is quad_vec's)")
    options = dict(epsabs=epsabs, epsrel=epsrel, limit=limit, maxp1=maxp1, limlst=limlst)
    if wopts is not None:
        options["wopts"] = wopts
    prim = Quad(integrand, "quad", options, points is not None, weight)
    prim.warn = not full_output
    out = prim(a, b, _points(points), w, *leaves)
    y, err = out[0], out[1]
    if not full_output:
        return y, err
    return (y, err) + _info(prim, out, "quad", name)


def _info(prim, out, who, name):
    """SciPy's full_output beyond (y, abserr): plain values from the node's solve."""
    if _value(out) is None or prim.result is None:
        raise ValueError(f"{who}: full_output needs SciPy's infodict, which exists once "
                         "the integral has been computed; under wg.compile or wg.vmap (no "
                         f"values when {name} is traced) call it without full_output")
    return tuple(prim.result[2:])


def _weight_argument(weight, wvar, a, b, wopts):
    """wvar as the node's argument (an empty vector where the weight has none), after
    refusing what the rules cannot differentiate."""
    if weight is None:
        return np.zeros(0)
    if weight in _ALGEBRAIC:
        if type(a) is Node or type(b) is Node:
            raise NotImplementedError(
                f"quad: with weight={weight!r} the weight (x - a)^α (b - x)^β depends on the "
                "limits, whose derivative would need weights QUADPACK does not have; the "
                "limits must be plain numbers (args may be traced)")
        if _traced(wvar):
            raise NotImplementedError(
                f"quad: with weight={weight!r}, a traced wvar = (α, β) is not supported "
                "(the derivatives of (x - a)^α in α need log-weights of every order, which "
                "QUADPACK has only once); pass plain exponents")
        return np.asarray(wvar, dtype=np.float64).reshape(2)
    if weight == "cauchy" and _traced(wvar):
        raise NotImplementedError(
            "quad: a traced wvar (the pole c of weight='cauchy') is not supported: the "
            "derivative of a principal value in c is a hypersingular integral, which quad "
            "cannot compute; pass c as a plain number")
    if weight in _FOURIER or weight == "cauchy":
        if _traced(wopts):
            raise NotImplementedError("quad: wopts (Chebyshev moments) cannot be traced")
        if type(wvar) is Node:
            return wvar if wvar.dtype == np.float64 else wnp.astype(wvar, np.float64)
        return np.float64(wvar)
    raise ValueError(f"{weight} not a recognized weighting function.")    # (SciPy's)


def _complex_quad(func, a, b, args, full_output, *options):
    """quad with complex_func=True, traced: the real and imaginary parts integrated apart,
    as SciPy does."""
    def part(which):
        def f(x, *args):
            return which(wnp.asarray(func(x, *args)))
        f.__name__ = f"{which.__name__}({_name(func)})"
        return f
    re = quad(part(wnp.real), a, b, args, full_output, *options)
    im = quad(part(wnp.imag), a, b, args, full_output, *options)
    out = (re[0] + 1j * im[0], re[1] + 1j * im[1])
    if full_output:
        out = out + ({"real": re[2:], "imag": im[2:]},)
    return out


def quad_vec(f, a, b, epsabs=1e-200, epsrel=1e-08, norm="2", cache_size=100e6, limit=10000,
             workers=1, points=None, quadrature=None, full_output=False, *, args=()):
    """∫_a^b f(x, *args) dx of a vector-valued f: SciPy's `scipy.integrate.quad_vec`, the
    same call and results, differentiable in the limits and in args as `quad` is.

    Where a, b or a leaf of args is traced (or f closes over a traced value) the integral
    is one node; its derivatives are quad_vec integrals of the derivative integrand, with
    the same options (the tolerance is on the `norm` of the error, so a gradient's small
    components are accurate relative to the large ones), plus ``f(b) db - f(a) da``.  err
    is returned with a zero derivative; with full_output the info is SciPy's.  A derivative
    integral that does not reach the tolerance warns (SciPy's quad_vec reports its own
    only in the info).  workers apply to f only: the derivative integrals run in one
    process.

    Example:
        >>> import numpy as np, wengert as wg, wengert.numpy as wnp
        >>> from wengert.scipy.integrate import quad_vec
        >>> moments = lambda t: quad_vec(lambda x: x ** np.arange(3) * wnp.exp(-t * x),
        ...                              0.0, np.inf)[0]      # k! / t^(k+1)
        >>> moments(2.0).round(10).tolist(), wg.jacfwd(moments)(2.0).round(8).tolist()
        ([0.5, 0.25, 0.25], [-0.25, -0.25, -0.375])
    """
    args = args if isinstance(args, tuple) else (args,)
    si = _scipy_integrate()

    def scipy_quad_vec(g):
        return si.quad_vec(g, a, b, epsabs, epsrel, norm, cache_size, limit, workers,
                           points, quadrature, full_output, args=args)
    found = _plain_first(scipy_quad_vec, f, _traced(a, b, args, points))
    if found is not None:
        return found
    name = _name(f)
    a, b = _limit(a, "quad_vec", "a"), _limit(b, "quad_vec", "b")
    integrand, leaves, shape = _integrand("quad_vec", f, args, _probe(a, b))
    options = dict(epsabs=epsabs, epsrel=epsrel, norm=norm, cache_size=cache_size,
                   limit=limit, workers=workers, quadrature=quadrature)
    prim = Quad(integrand, "quad_vec", options, points is not None, who="quad_vec")
    out = prim(a, b, _points(points), np.zeros(0), *leaves)
    m = integrand.m
    y = wnp.reshape(out[:m], shape)
    if not full_output:
        return y, out[m]
    return (y, out[m]) + _info(prim, out, "quad_vec", name)


# --------------------------------------------------------------------------------------
# the sample rules: sums of samples, written with wengert.numpy
# --------------------------------------------------------------------------------------
def _recording(*trees):
    """Whether the rule must be written with wengert.numpy: a traced argument, or a
    transformation recording (a function that closes over a traced value)."""
    return _traced(*trees) or current_graph() is not None


@functools.lru_cache(maxsize=32)
def _legendre(n):
    """Gauss–Legendre nodes and weights (an eigenproblem: kept, as SciPy keeps them)."""
    from scipy.special import roots_legendre
    x, w = roots_legendre(n)
    return np.real(x), w


def fixed_quad(func, a, b, args=(), n=5):
    """∫_a^b func(x, *args) dx by n-point Gauss–Legendre quadrature: SciPy's
    `scipy.integrate.fixed_quad`, the same call and result ``(value, None)``.

    The rule is fixed (its nodes and weights depend on n alone), so the value is a
    weighted sum of func at n points, differentiable in a, b and args (and in what func
    closes over) as any composition is, to any order, under every transformation.  func
    is called once with the vector of the n nodes, as SciPy calls it.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> from wengert.scipy.integrate import fixed_quad
        >>> area = lambda w: fixed_quad(lambda x: wnp.sin(w * x), 0.0, 1.0, n=10)[0]
        >>> print(round(area(2.0), 10), round((1 - wnp.cos(2.0)) / 2, 10))
        0.7080734183 0.7080734183
        >>> print(round(wg.grad(area)(2.0), 10),          # (sin w)/w - (1 - cos w)/w²
        ...       round(wnp.sin(2.0) / 2 - (1 - wnp.cos(2.0)) / 4, 10))
        0.1006120043 0.1006120043
    """
    si = _scipy_integrate()
    if not _recording(a, b, args):
        return si.fixed_quad(func, a, b, args, n)
    x, w = _legendre(n)
    for v in (a, b):
        v = _value(v)
        if v is not None and np.isinf(v):
            raise ValueError("Gaussian quadrature is only available for finite limits.")
    a, b = wnp.asarray(a), wnp.asarray(b)
    y = (b - a) * (x + 1) / 2.0 + a
    return (b - a) / 2.0 * wnp.sum(w * func(y, *args), axis=-1), None


def _along(axis, nd, index):
    return (slice(None),) * (axis % nd) + (index,) if nd else ()


def romb(y, dx=1.0, axis=-1, show=False):
    """Romberg integration of 2^k + 1 equally spaced samples along `axis`: SciPy's
    `scipy.integrate.romb`, the same call and result.  On traced values it is SciPy's
    Richardson table written with `wengert.numpy`: a linear function of the samples,
    differentiable in y and dx.  ``show`` prints the table (from the values; not under
    tracing without values).

    Example:
        >>> import numpy as np, wengert as wg, wengert.numpy as wnp
        >>> from wengert.scipy.integrate import romb
        >>> x = np.linspace(0.0, 1.0, 9)
        >>> cubic = lambda c: romb(c * x ** 3, dx=x[1])          # c/4, exact for a cubic
        >>> print(cubic(2.0), round(wg.grad(cubic)(2.0), 15))
        0.5 0.25
    """
    si = _scipy_integrate()
    if not _traced(y, dx):
        return si.romb(y, dx, axis, show)
    y = wnp.asarray(y)
    nd = len(y.shape)
    intervals = y.shape[axis] - 1
    n, k = 1, 0
    while n < intervals:
        n <<= 1
        k += 1
    if n != intervals:
        raise ValueError("Number of samples must be one plus a non-negative power of 2.")
    h = intervals * wnp.asarray(dx, dtype=np.float64)
    R = {(0, 0): (y[_along(axis, nd, 0)] + y[_along(axis, nd, -1)]) / 2.0 * h}
    start = stop = step = intervals
    for i in range(1, k + 1):
        start >>= 1
        picked = _along(axis, nd, slice(start, stop, step))
        step >>= 1
        R[(i, 0)] = 0.5 * (R[(i - 1, 0)] + h * wnp.sum(y[picked], axis=axis))
        for j in range(1, i + 1):
            prev = R[(i, j - 1)]
            R[(i, j)] = prev + (prev - R[(i - 1, j - 1)]) / ((1 << (2 * j)) - 1)
        h = h / 2.0
    if show:
        values = _value(y), _value(dx)
        if any(v is None for v in values):
            raise ValueError("romb: show=True prints the table's values, which are not "
                             "known under wg.compile or wg.vmap")
        si.romb(values[0], values[1], axis, show)
    return R[(k, k)]


def _divided(num, den):
    """num / den where den ≠ 0, else 0 (SciPy's ``true_divide(..., where=den != 0)``):
    the quotient's derivative is taken where it is used only."""
    nonzero = den != 0
    return wnp.where(nonzero, num / wnp.where(nonzero, den, 1.0), 0.0)


def _simpson_pairs(y, stop, x, dx, axis):
    """Simpson's rule over the pairs of intervals from 0 to `stop` (SciPy's
    _basic_simpson)."""
    nd = len(y.shape)
    s0 = _along(axis, nd, slice(0, stop, 2))
    s1 = _along(axis, nd, slice(1, stop + 1, 2))
    s2 = _along(axis, nd, slice(2, stop + 2, 2))
    if x is None:
        return wnp.sum(y[s0] + 4.0 * y[s1] + y[s2], axis=axis) * (dx / 3.0)
    h = wnp.diff(x, axis=axis)
    h0, h1 = h[s0], h[s1]
    hsum, hprod = h0 + h1, h0 * h1
    ratio = _divided(h0, h1)
    return wnp.sum(hsum / 6.0 * (y[s0] * (2.0 - _divided(1.0, ratio)) +
                                 y[s1] * (hsum * _divided(hsum, hprod)) +
                                 y[s2] * (2.0 - ratio)), axis=axis)


def simpson(y, x=None, *, dx=1.0, axis=-1):
    """Simpson's rule on samples y (at the points x, or spaced dx) along `axis`: SciPy's
    `scipy.integrate.simpson`, the same call and result (an even number of samples
    takes Cartwright's correction for the last interval, as SciPy's).  On traced values
    it is SciPy's formula written with `wengert.numpy`, differentiable in y, x and dx.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy.integrate import simpson
        >>> x = np.array([1.0, 1.2, 1.5, 1.7, 2.0])
        >>> round(float(simpson(x ** 2, x=x)), 12)      # exact for a parabola: (2³ - 1³)/3
        2.333333333333
        >>> wg.grad(lambda x: simpson(x ** 2, x=x))(x).round(12) + 0.0    # -x₀², 0, 0, 0, x₄²
        array([-1.,  0.,  0.,  0.,  4.])
    """
    si = _scipy_integrate()
    if not _traced(y, x, dx):
        return si.simpson(y, x=x, dx=dx, axis=axis)
    y = wnp.asarray(y)
    nd = len(y.shape)
    axis = axis % nd
    N = y.shape[axis]
    if x is not None:
        x = wnp.asarray(x)
        if len(x.shape) == 1:
            x = wnp.reshape(x, tuple(x.shape[0] if i == axis else 1 for i in range(nd)))
        elif len(x.shape) != nd:
            raise ValueError("If given, shape of x must be 1-D or the same as y.")
        if x.shape[axis] != N:
            raise ValueError("If given, length of x along axis must be the same as y.")
    if N % 2:
        return _simpson_pairs(y, N - 2, x, dx, axis)
    last, before = _along(axis, nd, -1), _along(axis, nd, -2)
    if N == 2:
        width = dx if x is None else x[last] - x[before]
        return 0.5 * width * (y[last] + y[before])
    result = _simpson_pairs(y, N - 3, x, dx, axis)
    if x is None:
        h0 = h1 = wnp.asarray(dx, dtype=np.float64)
    else:
        d = wnp.diff(x, axis=axis)
        h0, h1 = d[_along(axis, nd, -2)], d[last]
    alpha = _divided(2 * h1 ** 2 + 3 * h0 * h1, 6 * (h1 + h0))
    beta = _divided(h1 ** 2 + 3.0 * h0 * h1, 6 * h0)
    eta = _divided(h1 ** 3, 6 * h0 * (h0 + h1))
    return result + alpha * y[last] + beta * y[before] - eta * y[_along(axis, nd, -3)]


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """The trapezoidal rule on samples y (at x, or spaced dx) along `axis`: SciPy's
    `scipy.integrate.trapezoid`; on traced values `wengert.numpy.trapezoid`,
    differentiable in y, x and dx.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy.integrate import trapezoid
        >>> wg.grad(lambda y: trapezoid(y, dx=0.5))(np.ones(4))     # the weights
        array([0.25, 0.5 , 0.5 , 0.25])
    """
    si = _scipy_integrate()
    if not _traced(y, x, dx):
        return si.trapezoid(y, x, dx, axis)
    y = wnp.asarray(y)
    if x is not None:
        x = wnp.asarray(x)
        if len(x.shape) > 1:        # (SciPy broadcasts an n-D x to y)
            x = wnp.broadcast_to(x, y.shape)
    return wnp.trapezoid(y, x, dx, axis)


def cumulative_trapezoid(y, x=None, dx=1.0, axis=-1, initial=None):
    """The running integral of samples y by the trapezoidal rule: SciPy's
    `scipy.integrate.cumulative_trapezoid` (``initial=0`` puts a 0 first), the same call
    and result; on traced values a `wengert.numpy.cumsum`, differentiable in y, x and dx.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy.integrate import cumulative_trapezoid
        >>> cumulative_trapezoid(np.array([0.0, 1.0, 2.0]), initial=0)
        array([0. , 0.5, 2. ])
        >>> wg.jacfwd(lambda y: cumulative_trapezoid(y))(np.array([0.0, 1.0, 2.0]))
        array([[0.5, 0.5, 0. ],
               [0.5, 1. , 0.5]])
    """
    si = _scipy_integrate()
    if not _traced(y, x, dx):
        return si.cumulative_trapezoid(y, x, dx, axis, initial)
    y = wnp.asarray(y)
    nd = len(y.shape)
    axis = axis % nd
    if y.shape[axis] == 0:
        raise ValueError("At least one point is required along `axis`.")
    if x is None:
        d = dx
    else:
        x = wnp.asarray(x)
        if len(x.shape) == 1:
            d = wnp.reshape(wnp.diff(x), tuple(-1 if i == axis else 1 for i in range(nd)))
        elif len(x.shape) != nd:
            raise ValueError("If given, shape of x must be 1-D or the same as y.")
        else:
            d = wnp.diff(x, axis=axis)
        if d.shape[axis] != y.shape[axis] - 1:
            raise ValueError("If given, length of x along axis must be the same as y.")
    res = wnp.cumsum(d * (y[_along(axis, nd, slice(1, None))] +
                          y[_along(axis, nd, slice(None, -1))]) / 2.0, axis=axis)
    if initial is not None:
        if initial != 0:
            raise ValueError("`initial` must be `None` or `0`.")
        if not np.isscalar(initial):
            raise ValueError("`initial` parameter should be a scalar.")
        shape = tuple(1 if i == axis else s for i, s in enumerate(res.shape))
        res = wnp.concatenate([wnp.zeros(shape, dtype=res.dtype), res], axis=axis)
    return res
