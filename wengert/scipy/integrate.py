"""Differentiable ODE solutions: `odeint`, SciPy's `scipy.integrate.odeint` with derivatives.

On plain values `odeint` is SciPy's (LSODA, the same call, the same numbers).  On traced
values (inside `wg.grad`, `wg.jvp`, ...) the whole solve is **one node** of the graph, as
a `wg.checkpoint` is: the solver runs on plain numbers, nothing inside it is recorded, and
the node's rules solve other ODEs when a sweep reaches it:

* **reverse mode** (VJP) by the *adjoint method*: a backward solve from t[-1] to t[0]
  of the augmented system [y, a, b] with ``y' = f``, ``a' = -aᵀ ∂f/∂y`` and
  ``b' = -aᵀ ∂f/∂args``, one output interval at a time from the stored y_i, the output's
  cotangent g_i added into a at each output time; then ``∂L/∂y0 = a(t0)``,
  ``∂L/∂args = b(t0)``, ``∂L/∂t_i = g_iᵀ f(y_i, t_i)`` for i ≥ 1 and
  ``∂L/∂t_0 = -(a(t0) - g_0)ᵀ f(y0, t0)``.  The system has 2n + P numbers (P the size
  of the traced parameters), so a gradient costs about the same whatever their number;
* **forward mode** (JVP) by *forward sensitivities*: y solved together with its tangent,
  ``ẏ' = ∂f/∂y ẏ + ∂f/∂args ȧrgs``, started from ``ẏ0 - f(y0, t0) ṫ0``, plus
  ``f(y_i, t_i) ṫ_i`` at each output time.

Both rules are written with wengert primitives whose own solves are `odeint` nodes (of the
adjoint or the sensitivity system), so a derivative of a derivative (`wg.hessian`) works
the same way, one level down; Taylor mode nests forward sensitivities.  SciPy calls the
right-hand side of those systems, a derivative of func, as code made by `wg.compile`,
kept with the primitive across calls of odeint (a fit solves one problem many times).
See docs/odes.md.

Example:
    >>> import numpy as np, wengert as wg
    >>> from wengert.scipy.integrate import odeint
    >>> t = np.array([0.0, 1.0])
    >>> def decay(k):                                  # y' = -k y, y(1) = exp(-k)
    ...     return odeint(lambda y, t, k: -k * y, 1.0, t, args=(k,))[-1, 0]
    >>> print(round(decay(0.5), 6), round(wg.grad(decay)(0.5), 6))  # d/dk exp(-k) = -exp(-k)
    0.606531 -0.606531
"""
from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np

from ..graph.active import recording
from ..graph.node import Node
from ..primitives.registry import Primitive, shape_of
from ..primitives.special import INSTALL_HINT
from ..graph.graph import aval
from ..tree import flatten, hold_constants, unflatten
from .. import numpy as wnp

__all__ = ["odeint"]

#: LSODA's default tolerances (SciPy's odeint, when rtol and atol are None).
DEFAULT_TOL = 1.49012e-8

#: Options of SciPy's odeint that only make sense on plain values: they describe or
#: return things of the one system SciPy solves, not of the systems the rules solve.
_PLAIN_ONLY = ("Dfun", "col_deriv", "ml", "mu", "full_output")

#: Options that are passed on to the solves of the rules' systems too (h0, a first step
#: for the user's problem, is not).
_SHARED = ("rtol", "atol", "mxstep", "tcrit", "hmax", "hmin", "ixpr", "mxhnil", "mxordn",
           "mxords", "printmessg")


def _scipy_odeint():
    try:
        from scipy.integrate import odeint as scipy_odeint
    except ImportError as e:
        raise ImportError(INSTALL_HINT) from e
    return scipy_odeint


# --------------------------------------------------------------------------------------
# systems: y' = rhs(y, t, *leaves) on a flat state y
# --------------------------------------------------------------------------------------
class _System:
    """An ODE on a flat state of n numbers whose right-hand side reads `leaves` (numbers
    and arrays; those at the positions `active` may carry derivatives, the others are
    constants wherever the system is solved).

    ``rhs(y, s, *leaves)`` works on plain values and on traced ones alike (written with
    wengert primitives); ``bind(leaves)`` is the function of (y, s) that SciPy calls."""

    name = "f"
    n = 0
    leaf_avals = ()           # (shape, dtype) of each leaf
    active = ()               # positions of the leaves that derivatives may be taken of
    compiled = True           # whether bind runs rhs as code made by wg.compile

    def rhs(self, y, s, *leaves):
        raise NotImplementedError

    def bind(self, leaves, y0, s0):
        """The right-hand side on plain values, as SciPy calls it from (y0, s0): code that
        `wg.compile` made from `rhs` (a derived system's rhs takes a derivative of the
        user's function at every call: eagerly that records and sweeps a small graph,
        ~100x the time of the code), or rhs itself where compiling fails (a Python branch
        on a value: then every call is eager)."""
        kernel = self._kernel(leaves, y0, s0)
        if kernel is not None:
            return lambda y, s: kernel(y, s, *leaves)
        rhs = self.rhs

        def f(y, s):
            return np.asarray(rhs(y, s, *leaves), dtype=np.float64)
        return f

    def _kernel(self, leaves, y0, s0):
        """The compiled rhs, made once per system and kept across calls of odeint (a fit
        solves the same system again and again), or None.  Compiled code holds the
        values of what func reads besides its arguments (a global) as they were when it
        was traced: once per call of odeint it is checked against rhs at (y0, s0), and
        compiled again if they differ."""
        if not self.compiled:
            return None
        kernel = getattr(self, "_code", None)
        if kernel is False or (kernel is not None and self._checked == _calls[0]):
            return kernel or None
        y0 = np.asarray(y0, dtype=np.float64)
        s0 = float(s0)
        with recording(None), np.errstate(all="ignore"):
            try:
                want = np.asarray(self.rhs(y0, s0, *leaves), dtype=np.float64)
            except Exception:                 # noqa: BLE001  (SciPy's call raises it)
                return None
            for attempt in range(2):
                if kernel is None:
                    kernel = _compiled(self.rhs)
                try:
                    got = kernel(y0, s0, *leaves)
                except Exception:             # noqa: BLE001  (as eager code it runs)
                    kernel = False
                    break
                if np.allclose(got, want, rtol=1e-9, atol=1e-12, equal_nan=True):
                    break
                kernel = None if attempt == 0 else False    # stale: trace it again
        self._code, self._checked = kernel, _calls[0]
        return kernel or None


#: Calls of odeint on traced values so far: a derived system's compiled code is checked
#: once per call (see `_System._kernel`).
_calls = [0]


def _compiled(rhs):
    from ..staged import compile as stage

    def flat(y, s, *leaves):
        return rhs(y, s, *leaves)
    flat.__name__ = "rhs"
    return stage(flat)


class _UserSystem(_System):
    """The user's ``func(y, t, *args)``: y in its own shape, args the pytree `tree`
    whose leaves are this system's."""

    compiled = False          # the solution itself is SciPy's call of func, as is

    def __init__(self, func, shape, tree, leaf_avals, active, tfirst):
        self.func = func
        self.name = getattr(func, "__name__", "func")
        self.shape = shape
        self.n = math.prod(shape)
        self.tree = tree
        self.leaf_avals = leaf_avals
        self.active = active
        self.tfirst = tfirst

    def call(self, y, s, leaves):
        args = unflatten(self.tree, leaves)
        return self.func(s, y, *args) if self.tfirst else self.func(y, s, *args)

    def check(self, out):
        size = math.prod(shape_of(out))
        if size != self.n:
            raise ValueError(
                f"odeint: func returned dy/dt of shape {tuple(shape_of(out))} for a state y "
                f"of shape {self.shape}; it must return one derivative per element of y "
                f"({self.n} numbers)")

    def rhs(self, y, s, *leaves):
        out = self.call(wnp.reshape(y, self.shape), s, leaves)
        if type(out) is not Node:
            out = wnp.asarray(out)        # (a list [dx, dv] of traced values, as SciPy
            #                                users write it)
        self.check(out)
        return wnp.reshape(out, (self.n,))

    def bind(self, leaves, y0, s0):
        args = unflatten(self.tree, leaves)
        func, shape, tfirst = self.func, self.shape, self.tfirst

        def f(y, s):
            out = func(s, y.reshape(shape), *args) if tfirst else \
                func(y.reshape(shape), s, *args)
            if type(out) is Node:
                raise _closure_error(self.name)
            out = np.asarray(out, dtype=np.float64)
            if out.size != self.n:
                self.check(out)
            return out.reshape(-1)
        return f


def _leaf(x, shape):
    """A flat piece of a cotangent in its leaf's shape; a plain scalar as a float, as
    other rules give it."""
    x = wnp.reshape(x, shape)
    if type(x) is np.ndarray and not shape:
        return float(x) if x.dtype == np.float64 else x[()]
    return x


def _closure_error(name):
    return ValueError(
        f"odeint: {name} computes with a traced value that is not among y0, t and args "
        "(a variable it closes over); pass that value in args, so that its derivative "
        "goes through the solve")


class _AdjointSystem(_System):
    """The adjoint system of `base`, on the state [y, a, b] (n + n + P numbers, P the
    size of base's active leaves): y' = f(y, s), a' = -aᵀ ∂f/∂y, b' = -aᵀ ∂f/∂leaves.
    Solved backwards in time, a is ∂L/∂y(s) and b accumulates ∂L/∂leaves."""

    def __init__(self, base):
        self.base = base
        self.name = f"adjoint of {base.name}"
        self.leaf_avals = base.leaf_avals
        self.active = base.active
        self.sizes = [math.prod(base.leaf_avals[k][0]) for k in self.active]
        self.n = 2 * base.n + sum(self.sizes)

    def rhs(self, state, s, *leaves):
        from ..api import vjp
        base, n = self.base, self.base.n
        active = self.active
        y, a = state[:n], state[n:2 * n]

        def f(y, *chosen):
            ls = list(leaves)
            for k, v in zip(active, chosen):
                ls[k] = v
            return base.rhs(y, s, *ls)

        dy, pull = vjp(f, y, *[leaves[k] for k in active])
        cts = pull(a)
        return wnp.concatenate([dy, -cts[0]] + [-wnp.reshape(c, (size,))
                                                for c, size in zip(cts[1:], self.sizes)])


class _TangentSystem(_System):
    """The forward-sensitivity system of `base` along its leaves at the positions `chosen`:
    the state [y, ẏ] (2n numbers) with y' = f(y, s), ẏ' = ∂f/∂y ẏ + Σ ∂f/∂leaf · leaḟ.
    Its leaves are base's, then the tangents of the chosen ones."""

    def __init__(self, base, chosen):
        self.base = base
        self.chosen = tuple(chosen)
        self.name = f"tangent of {base.name}"
        self.n = 2 * base.n
        self.nbase = len(base.leaf_avals)
        self.leaf_avals = tuple(base.leaf_avals) + tuple(
            base.leaf_avals[k] for k in self.chosen)
        self.active = tuple(base.active) + tuple(range(self.nbase, len(self.leaf_avals)))

    def rhs(self, state, s, *leaves):
        from ..api import jvp
        base, n, chosen = self.base, self.base.n, self.chosen
        own, tangents = leaves[:self.nbase], leaves[self.nbase:]
        y, ydot = state[:n], state[n:]

        def f(y, *picked):
            ls = list(own)
            for k, v in zip(chosen, picked):
                ls[k] = v
            return base.rhs(y, s, *ls)

        dy, dydot = jvp(f, (y, *[own[k] for k in chosen]), (ydot, *tangents))
        return wnp.concatenate([dy, dydot])


# --------------------------------------------------------------------------------------
# the primitive
# --------------------------------------------------------------------------------------
class Odeint(Primitive):
    """The primitive of one ODE solve: ``(y0, t, *leaves) -> y`` of shape (len(t), n),
    y0 flat.  Its VJP is the adjoint method, its JVP forward sensitivities; both solve
    their systems with primitives of this class, so they can be differentiated again.
    Not in the registry: one is made per `odeint` call (and per derived system).

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy.integrate import odeint
        >>> print(wg.trace(lambda k: odeint(lambda y, t, k: -k * y, 1.0, [0.0, 1.0],
        ...                                 args=(k,)), 0.5))
        graph(k: f64[]):
          %3: f64[2,1] = odeint[<lambda>]([1.], [0., 1.], k)
          return %3
    """

    def __init__(self, system, options):
        super().__init__(f"odeint[{system.name}]", self._impl, cost="call",
                         abstract_eval=self._abstract_eval)
        self.system = system
        self.options = options
        self.jvp = self._jvp_rule
        self.vjp = self._vjp_rule
        self._adjoint = None
        self._tangents = {}

    def _derived(self, system):
        shared = {k: v for k, v in self.options.items() if k in _SHARED}
        prim = Odeint(system, shared)
        prim.derived = True
        return prim

    derived = False         # solves a system of a derivative rule, not the user's

    def _impl(self, y0, t, *leaves):
        options = self.options
        if self.derived and "tcrit" in options and len(t) > 1 and t[-1] < t[0]:
            # SciPy's critical times work forwards only (backwards LSODA reports illegal
            # input); a backward solve of the adjoint stays within [t0, tN], where the
            # solution went, and its restart at each output time is its care there
            options = {k: v for k, v in options.items() if k != "tcrit"}
        with recording(None):         # plain numbers: the right-hand side records nothing
            return _scipy_odeint()(self.system.bind(leaves, y0, t[0]), y0, t, **options)

    def _abstract_eval(self, args, params):
        return (args[1].shape[0], self.system.n), np.dtype(np.float64)

    # --- reverse mode: the adjoint method ----------------------------------------------
    def _vjp_rule(self, g, y0, t, *rest):
        leaves, ys = rest[:-1], rest[-1]
        system = self.system
        n, T = system.n, shape_of(t)[0]
        if self._adjoint is None:
            self._adjoint = self._derived(_AdjointSystem(system))
        adjoint = self._adjoint
        active, sizes = adjoint.system.active, adjoint.system.sizes
        a = g[T - 1]
        b = wnp.zeros(sum(sizes))
        t_bar = [None] * T
        for i in range(T - 1, 0, -1):
            t_bar[i] = wnp.sum(g[i] * system.rhs(ys[i], t[i], *leaves))
            state = adjoint(wnp.concatenate([ys[i], a, b]), wnp.stack([t[i], t[i - 1]]),
                            *leaves)[1]
            a, b = state[n:2 * n], state[2 * n:]
            if i > 1:
                a = a + g[i - 1]
        t_bar[0] = -wnp.sum(a * system.rhs(y0, t[0], *leaves)) if T > 1 else 0.0 * t[0]
        y0_bar = a + g[0] if T > 1 else g[0]
        out = [None] * len(leaves)
        start = 0
        for k, size in zip(active, sizes):
            if T > 1:
                out[k] = _leaf(b[start:start + size], system.leaf_avals[k][0])
            start += size
        return (y0_bar, wnp.stack(t_bar), *out)

    # --- forward mode: forward sensitivities -------------------------------------------
    def _jvp_rule(self, ts, y0, t, *rest):
        leaves, ys = rest[:-1], rest[-1]
        system = self.system
        n, T = system.n, shape_of(t)[0]
        y0_dot, t_dot, leaf_dots = ts[0], ts[1], ts[2:]
        chosen = tuple(k for k, d in enumerate(leaf_dots) if d is not None)
        if y0_dot is None and t_dot is None and not chosen:
            return None
        start = wnp.zeros(n) if y0_dot is None else y0_dot
        if t_dot is not None:
            start = start - system.rhs(y0, t[0], *leaves) * t_dot[0]
        tangent = self._tangents.get(chosen)
        if tangent is None:
            tangent = self._tangents[chosen] = self._derived(_TangentSystem(system, chosen))
        out = tangent(wnp.concatenate([y0, start]), t, *leaves,
                      *[leaf_dots[k] for k in chosen])[:, n:]
        if t_dot is not None:          # dy_i/dt_i = f(y_i, t_i); row 0 gets back ẏ0
            f = wnp.stack([system.rhs(ys[i], t[i], *leaves) for i in range(T)])
            out = out + f * wnp.reshape(t_dot, (T, 1))
        return out

    # --- Taylor mode: nested forward sensitivities -------------------------------------
    def taylor(self, series, ans, order, **params):
        """The Taylor rule (`wengert.ad.taylor`): the arguments are polynomials
        x(ε) = Σ x_j ε^j, and the j-th coefficient of the solution is its j-th derivative
        in ε over j!, taken by j nested JVPs (each doubles the system solved: 2^j n
        numbers, fine for the low orders asked of an ODE)."""
        from ..api import jvp

        def along(eps):
            args = []
            for s in series:
                x = s[0]
                for j, c in enumerate(s[1:], 1):
                    if c is not None:
                        x = x + c * eps ** j
                args.append(x)
            return self(*args)

        def derivative(f):
            return lambda eps: jvp(f, (eps,), (1.0,))[1]

        out, f = [ans], along
        for j in range(1, order + 1):
            f = derivative(f)
            out.append(f(0.0) / math.factorial(j))
        return out


# --------------------------------------------------------------------------------------
# the front-end
# --------------------------------------------------------------------------------------
def odeint(func, y0, t, args=(), rtol=DEFAULT_TOL, atol=DEFAULT_TOL, mxstep=0, **kwargs):
    """Integrate ``dy/dt = func(y, t, *args)`` from y(t[0]) = y0; SciPy's
    `scipy.integrate.odeint` (LSODA) with derivatives.

    The call and the result are SciPy's: y at each time of t, shape ``(len(t),) +
    y0.shape`` (a scalar y0 is a state of one number: shape ``(len(t), 1)``); t must be
    monotonic, increasing or decreasing, with repeats allowed; ``tfirst=True`` calls
    ``func(t, y, *args)``; other keywords of SciPy's (h0, hmax, tcrit, ...) are passed to
    it.  A y0 of more than one dimension is allowed too (SciPy refuses it): func then gets
    and returns arrays of y0's shape.

    On plain values this is SciPy's function.  Where y0, t or a leaf of args (a pytree of
    numbers and arrays) is traced, the solve is one node of the graph whose derivatives
    are found by solving other ODEs to the same tolerances: reverse mode by the adjoint
    method, forward mode by forward sensitivities, to any order.  func must be written
    with `wengert.numpy` (or NumPy functions, which dispatch to it) and must take every
    traced value it uses through args.  Complex values are refused, as are, on traced
    values, SciPy's options that describe one system only (Dfun, col_deriv, ml, mu,
    full_output).

    Args:
        func: the right-hand side, ``func(y, t, *args) -> dy/dt`` of y's shape.
        y0: the initial state at t[0].
        t: the output times; t[0] is the initial time.
        args: extra arguments of func: numbers, arrays or a pytree of them.
        rtol, atol: the solver's relative and absolute tolerances (LSODA's defaults);
            they bound the error of the derivatives too, which are solutions of ODEs.
        mxstep: the most steps per output interval (0: LSODA's default, 500).

    Returns:
        The solution at the times t.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy.integrate import odeint
        >>> def oscillator(y, t, w):                   # x'' = -w² x
        ...     return [y[1], -w ** 2 * y[0]]                # (a list, as SciPy takes it)
        >>> t = np.linspace(0.0, 1.0, 5)
        >>> x1 = lambda w: odeint(oscillator, [1.0, 0.0], t, args=(w,))[-1, 0]
        >>> print(round(x1(2.0), 6), round(np.cos(2.0), 6))         # x(1) = cos w
        -0.416147 -0.416147
        >>> print(round(wg.grad(x1)(2.0), 6), round(-np.sin(2.0), 6))  # d/dw = -sin w
        -0.909297 -0.909297
    """
    tfirst = bool(kwargs.pop("tfirst", False))
    if not isinstance(args, tuple):
        args = (args,)                 # (as SciPy does)
    leaves, tree = flatten(args)
    y0_leaves, _ = flatten(y0)
    t_leaves, _ = flatten(t)
    traced = any(type(x) is Node for x in leaves + y0_leaves + t_leaves)
    if any(np.iscomplexobj(x) if type(x) is not Node else x.dtype.kind == "c"
           for x in y0_leaves + leaves):
        raise TypeError("odeint: complex values are not supported (SciPy's odeint solves "
                        "real systems); write a complex state as its real and imaginary "
                        "parts")
    if not traced:
        return _plain(func, y0, t, args, rtol, atol, mxstep, tfirst, kwargs)
    refused = [k for k in _PLAIN_ONLY if kwargs.get(k) not in (None, 0, False)]
    if refused:
        raise NotImplementedError(
            f"odeint: {', '.join(refused)} {'is' if len(refused) == 1 else 'are'} supported "
            "on plain values only (SciPy's own odeint); on traced values the rules solve "
            "other systems, to which they do not apply")
    options = dict(kwargs, rtol=rtol, atol=atol, mxstep=mxstep)
    y0 = wnp.asarray(y0)
    if y0.dtype.kind != "f":
        y0 = wnp.astype(y0, np.float64)
    shape = tuple(y0.shape) or (1,)
    t = wnp.asarray(t)
    if t.dtype.kind != "f":
        t = wnp.astype(t, np.float64)
    if len(t.shape) != 1 or t.shape[0] == 0:
        raise ValueError(f"odeint: t must be a non-empty sequence of times, got shape "
                         f"{tuple(t.shape)}")
    if type(t) is not Node or t.value is not None:
        _check_monotonic(t.value if type(t) is Node else t)
    numeric, tree = hold_constants(tree, leaves, lambda x: not _numeric(x))
    avals = tuple(aval(x) for x in numeric)
    active = tuple(k for k, x in enumerate(numeric)
                   if type(x) is Node and x.dtype.kind == "f")
    _calls[0] += 1
    prim = _primitive(func, shape, tree, avals, active, tfirst, options)
    if tuple(y0.shape) != (prim.system.n,):
        y0 = wnp.reshape(y0, (prim.system.n,))
    ys = prim(y0, t, *numeric)
    return ys if len(shape) == 1 else wnp.reshape(ys, (t.shape[0],) + shape)


def _numeric(x):
    return type(x) is Node or isinstance(x, (int, float, np.number, np.ndarray)) and \
        np.asarray(x).dtype.kind in "biuf"


#: The primitives of recent calls, by everything they are made of, so that a function
#: solved again and again (a fitting loop) reuses their derived systems' compiled code.
_PRIMITIVES: OrderedDict = OrderedDict()
_CACHE_SIZE = 64


def _primitive(func, shape, tree, avals, active, tfirst, options):
    def make():
        return Odeint(_UserSystem(func, shape, tree, avals, active, tfirst), options)
    try:
        key = (func, shape, tree, tuple((s, d.str) for s, d in avals), active, tfirst,
               tuple(sorted((k, _frozen(v)) for k, v in options.items())))
        hash(key)
    except TypeError:                  # (an option that is no number: not kept)
        return make()
    prim = _PRIMITIVES.get(key)
    if prim is None:
        prim = _PRIMITIVES[key] = make()
        if len(_PRIMITIVES) > _CACHE_SIZE:
            _PRIMITIVES.popitem(last=False)
    else:
        _PRIMITIVES.move_to_end(key)
    return prim


def _frozen(option):
    """An option as part of a key: tcrit's times as a tuple."""
    if isinstance(option, (list, tuple, np.ndarray)):
        return ("times",) + tuple(np.ravel(option).tolist())
    return option


def _check_monotonic(t):
    d = np.diff(t)
    if not (np.all(d >= 0) or np.all(d <= 0)):
        raise ValueError("odeint: the values in t must be monotonically increasing or "
                         "monotonically decreasing; repeated values are allowed")


def _plain(func, y0, t, args, rtol, atol, mxstep, tfirst, kwargs):
    """SciPy's odeint itself; a y0 of several dimensions goes through a flat view."""
    scipy_odeint = _scipy_odeint()
    shape = np.shape(y0)
    if len(shape) > 1:
        if kwargs.get("Dfun") is not None or kwargs.get("full_output"):
            raise ValueError("odeint: Dfun and full_output need a one-dimensional y0, "
                             "as in SciPy")
        inner, n = func, math.prod(shape)

        def func(*a):                                   # noqa: F811
            y, s = (a[1], a[0]) if tfirst else (a[0], a[1])
            y = y.reshape(shape)
            out = np.asarray(inner(s, y, *a[2:]) if tfirst else inner(y, s, *a[2:]))
            if out.size != n:
                raise ValueError(f"odeint: func returned dy/dt of shape {out.shape} for a "
                                 f"state y of shape {shape}; it must return one derivative "
                                 f"per element of y ({n} numbers)")
            return out.reshape(-1)
        y0 = np.reshape(y0, -1)
    try:
        out = scipy_odeint(func, y0, t, args, rtol=rtol, atol=atol, mxstep=mxstep,
                           tfirst=tfirst, **kwargs)
    except (TypeError, ValueError):
        _diagnose(func, y0, t, args, tfirst)
        raise
    if len(shape) > 1:
        return out.reshape((len(t),) + shape)
    return out


def _diagnose(func, y0, t, args, tfirst):
    """SciPy failed: say so clearly if func closes over a traced value."""
    try:
        y = np.atleast_1d(np.asarray(y0, dtype=np.float64))
        s = float(np.ravel(t)[0])
        out = func(s, y, *args) if tfirst else func(y, s, *args)
    except Exception:
        return
    if any(type(x) is Node for x in flatten(out)[0]):
        raise _closure_error(getattr(func, "__name__", "func"))
