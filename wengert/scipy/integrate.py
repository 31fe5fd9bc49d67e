"""Differentiable ODE solutions: `solve_ivp` and `odeint`, SciPy's
`scipy.integrate.solve_ivp` and `scipy.integrate.odeint` with derivatives.  (The
quadrature of this module, `quad`, `quad_vec`, `fixed_quad`, `romb`, `simpson`,
`trapezoid` and `cumulative_trapezoid`, is `wengert.scipy.quadrature`'s, re-exported.)

On plain values each is SciPy's (the same call, the same numbers; solve_ivp's implicit
methods get wengert's exact ∂f/∂y where SciPy would take finite differences).  On traced
values (inside `wg.grad`, `wg.jvp`, ...) the whole solve is **one node** of the graph, an
`Odeint` primitive (for both front-ends; its `method` says which solver), as a
`wg.checkpoint` is: the solver runs on plain numbers, nothing inside it is recorded, and
the node's rules solve other ODEs, by the same method and tolerances, when a sweep
reaches it:

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

Both rules are written with wengert primitives whose own solves are `Odeint` nodes (of the
adjoint or the sensitivity system), so a derivative of a derivative (`wg.hessian`) works
the same way, one level down; Taylor mode nests forward sensitivities.  SciPy calls the
right-hand side of those systems, a derivative of func, as code made by `wg.compile`,
kept with the primitive across calls (a fit solves one problem many times); so are the
Jacobians the implicit methods get.  solve_ivp's times are t_span's ends and t_eval:
the primitive solves from t0 to tf and reports y at ``[t0, *t_eval, tf]``, of which the
front-end keeps t_eval's; its dense output ``sol(t)`` is one more solve, from t0 through
the times t (`_TracedSolution`).  Under `wg.vmap` a batch of solves is one solve of the
examples' systems side by side (`_BatchedOdeint`).  With ``backend="c"`` the solves of
RK23, RK45 and DOP853, the derived systems' included, run in C (`_System.c_solver`,
`wengert.codegen.rk`).  See docs/odes.md.

Example:
    >>> import numpy as np, wengert as wg
    >>> from wengert.scipy.integrate import odeint, solve_ivp
    >>> def decay(k):                                  # y' = -k y, y(1) = exp(-k)
    ...     return solve_ivp(lambda t, y, k: -k * y, (0.0, 1.0), [1.0], args=(k,),
    ...                      rtol=1e-10, atol=1e-12).y[0, -1]
    >>> print(round(decay(0.5), 6), round(wg.grad(decay)(0.5), 6))  # d/dk exp(-k) = -exp(-k)
    0.606531 -0.606531
    >>> t = np.array([0.0, 1.0])
    >>> def decay_lsoda(k):                            # the same, by SciPy's odeint
    ...     return odeint(lambda y, t, k: -k * y, 1.0, t, args=(k,))[-1, 0]
    >>> print(round(decay_lsoda(0.5), 6), round(wg.grad(decay_lsoda)(0.5), 6))
    0.606531 -0.606531
"""
from __future__ import annotations

import math
import warnings
from collections import OrderedDict

import numpy as np

from ..checkpointing import Checkpoint
from ..graph.active import recording
from ..graph.node import Node
from ..primitives.registry import Primitive, known_value as _value, shape_of
from ..primitives.special import INSTALL_HINT
from ..graph.graph import ShapeDtype, aval
from ..tree import flatten, hold_constants, unflatten
from .. import numpy as wnp
from .quadrature import (cumulative_trapezoid, fixed_quad, quad, quad_vec, romb, simpson,
                         trapezoid)

__all__ = ["odeint", "solve_ivp", "quad", "quad_vec", "fixed_quad", "romb", "simpson",
           "trapezoid", "cumulative_trapezoid"]

#: LSODA's default tolerances (SciPy's odeint, when rtol and atol are None).
DEFAULT_TOL = 1.49012e-8

#: Options of SciPy's odeint that only make sense on plain values: they describe or
#: return things of the one system SciPy solves, not of the systems the rules solve.
_PLAIN_ONLY = ("Dfun", "col_deriv", "ml", "mu", "full_output")

#: odeint's messages (its full_output's) where nothing went wrong: a solve, or none to do
_ODEINT_DONE = ("Integration successful.", "Nothing was done; the integration time was 0.")

#: Options that are passed on to the solves of the rules' systems too (h0, a first step
#: for the user's problem, is not).
_SHARED = ("rtol", "atol", "mxstep", "tcrit", "hmax", "hmin", "ixpr", "mxhnil", "mxordn",
           "mxords", "printmessg")

#: solve_ivp's options passed on to the solves of the rules' systems.  Not first_step (for
#: the user's problem), nor jac, jac_sparsity, lband, uband and vectorized, which describe
#: the user's system alone.
_IVP_SHARED = ("rtol", "atol", "max_step", "min_step", "backend")


def _scipy_integrate():
    try:
        import scipy.integrate
    except ImportError as e:
        raise ImportError(INSTALL_HINT) from e
    return scipy.integrate


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

    #: The size of the diagonal blocks of ∂f/∂y (n: one block; a batch of systems has one
    #: per example, see `_BatchedSystem`).
    @property
    def block(self):
        return self.n

    def dfdy(self, y, s, *leaves):
        """∂f/∂y at (y, s): an n×n matrix, or its diagonal blocks stacked."""
        from ..api import jacfwd
        return jacfwd(lambda y: self.rhs(y, s, *leaves))(y)

    def matrix(self, dfdy):
        """dfdy as SciPy's implicit methods take it."""
        return dfdy

    def pattern(self):
        """Where ∂f/∂y may be nonzero, for SciPy's finite differences (None: anywhere)."""
        return None

    def traceable(self):
        """Whether rhs can be traced without values, as `wg.vmap` traces one example: not
        where func branches on a value.  Asked once per system."""
        ok = getattr(self, "_traceable", None)
        if ok is None:
            from ..api import trace
            try:
                with np.errstate(all="ignore"):
                    trace(self.rhs, ShapeDtype((self.n,)), ShapeDtype(),
                          *[ShapeDtype(shape, dtype) for shape, dtype in self.leaf_avals])
                ok = True
            except Exception:                 # noqa: BLE001  (then one solve per example)
                ok = False
            self._traceable = ok
        return ok

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
        """The compiled rhs, made once per system and kept across calls of odeint and
        solve_ivp (a fit solves the same system again and again), or None.  Compiled
        code holds the values of what func reads besides its arguments (a global) as they
        were when it was traced: once per call func's digest (`_digest`) is compared with
        the one the code was made from, and the code against rhs at (y0, s0); it is
        compiled again if either differs."""
        if not self.compiled:
            return None
        kernel = getattr(self, "_code", None)
        if kernel is False or (kernel is not None and self._checked == _calls[0]):
            return kernel or None
        y0 = np.asarray(y0, dtype=np.float64)
        s0 = float(s0)
        digest = self._digest(y0, s0, leaves)
        if kernel is not None and (digest is None or digest != getattr(self, "_made", None)):
            kernel = None                     # what rhs reads has changed: trace it again
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
        self._code, self._checked, self._made = kernel, _calls[0], digest
        return kernel or None

    def _digest(self, y0, s0, leaves):
        """`Graph.digest` of the user's func traced at this point (a derived system's rhs
        is made from func's graph, so func's settles it, and costs far less to trace):
        it covers every constant func reads, a global included, where a check of values
        at (y0, s0) alone misses a change that does not show there (a forcing switched
        on later).  Once per call of odeint/solve_ivp for the whole family.  None if it
        cannot be traced."""
        from ..api import traced_digest
        root = self.root()
        kept = root.__dict__.get("_digested")
        if kept is not None and kept[0] == _calls[0]:
            return kept[1]
        y, ls = self.root_point(y0, leaves)
        digest = traced_digest(root.rhs, y, s0, *ls)
        root._digested = (_calls[0], digest)
        return digest

    def c_solver(self, method, leaves, y0, span, events=()):
        """The solve of this system by `method` in C (`wengert.codegen.rk.Solver`), made
        once per system, method and `events` (the user's event functions, which only the
        user's system has): rhs (and the events) traced without values, written as C
        with the stepping loop.

        Compiled code holds what the user's function reads besides its arguments (a
        global) as it was when traced.  As compiled Python is (`_kernel`), it is checked
        once per call of solve_ivp, but for the whole family of systems at once, by
        the digest (`Graph.digest`) of the user's function and events traced at
        (y0, t0), which covers every constant they read (a forcing switched on later
        shows in no value at t0).  If it has changed, every system of the family is
        traced again.  When it is new (or cannot be had), the user's system's code is
        also checked against the user's function by values, at (y0, t0) and at a point
        drawn near them, y0 moved by up to its size and t within `span` = (t0, tf): C
        code is traced without values, which a function that reads something else that
        changes from call to call (a random number) cannot be."""
        root = self.root()
        checked = root.__dict__.setdefault("_c_checked", {})
        if checked.get(events) != _calls[0]:
            y, ls = self.root_point(np.asarray(y0, dtype=np.float64), leaves)
            t0, tf = map(float, span)
            digest = (self._digest(y0, t0, leaves), *root._event_digests(events, y, t0, ls))
            made = root.__dict__.setdefault("_c_digests", {})
            if None in digest or made.get(events) != digest:
                if events in made and None not in digest:
                    root._c_generation += 1           # what they read has changed
                u = _PROBE.uniform(-0.5, 0.5, size=y.shape)
                root._c_check(method, ls, [(y, t0), (y + u * (np.abs(y) + 1.0),
                                                    t0 + abs(u.flat[0] if u.size else 0.3) *
                                                    (tf - t0))], events)
                made[events] = digest
            checked[events] = _calls[0]
        return self._c_code(method, root._c_generation, events)

    _c_generation = 0         # how many times the family's code was found stale

    def root(self):
        """The user's system that this one is derived from (itself if it is the user's)."""
        system = self
        while getattr(system, "base", None) is not None:
            system = system.base
        return system

    def root_point(self, y, leaves):
        """(y, leaves) of `root()` at the point (y, leaves) of this system."""
        return y, leaves

    def _event_digests(self, events, y, s, leaves):
        """`Graph.digest` of each of the user's event functions traced at (y, s)."""
        from ..api import traced_digest
        return [traced_digest(lambda y, s, *ls: self.event(e, y, s, ls), y, s, *leaves)
                for e in events]

    def _c_check(self, method, leaves, points, events=()):
        """The user's system's check (see `c_solver`) at the (y, t) `points`."""
        def values(solver):
            found = [solver.rhs(y, s, leaves) for y, s in points]
            if events:
                found += [solver.events_at(y, s, leaves) for y, s in points]
            return found
        with recording(None), np.errstate(all="ignore"):
            want = [np.asarray(self.rhs(y, s, *leaves), dtype=np.float64) for y, s in points]
            want += [np.array([self.event(e, y, s, leaves) for e in events], dtype=np.float64)
                     for y, s in points if events]
            for attempt in range(2):
                got = values(self._c_code(method, self._c_generation, events))
                if all(np.allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True)
                       for a, b in zip(got, want)):
                    break
                self._c_generation += 1               # stale: trace them all again
            else:
                raise ValueError(
                    f"solve_ivp(backend='c'): {self.name} traced without values does not "
                    f"give the values it gives when called ({got} against {want}); it "
                    "reads something that changes from call to call; use backend='scipy'")

    def _c_code(self, method, generation, events=()):
        """This system's C solver for `method` (locating `events`, functions of
        (t, y, *args)), written again if it was written for an earlier generation of the
        family's code."""
        solvers = self.__dict__.setdefault("_c_solvers", {})
        made = solvers.get((method, events))
        if made is None or made[0] != generation:
            made = solvers[(method, events)] = (generation, self._write_c(method, events))
        return made[1]

    def c_batch(self):
        """(the system of one copy, `wengert.codegen.rk.Batch`) where this system is
        copies of one (a batch, or its adjoint), whose C is then that one's in a loop;
        else None."""
        return None

    def _write_c(self, method, events):
        from ..codegen.rk import Solver
        one, batch = self.c_batch() or (self, None)
        odd = [d for _, d in one.leaf_avals if d.kind not in "fb"]
        if odd:
            raise TypeError(f"solve_ivp(backend='c'): args hold a value of dtype {odd[0]}; "
                            "C code reads real numbers (pass floats, or use "
                            "backend='scipy')")
        # (C computes in double: a float32 argument is read as the float64 it converts to)
        avals = [ShapeDtype(shape, np.float64 if dtype.kind == "f" else dtype)
                 for shape, dtype in one.leaf_avals]
        rhs = _scalarized(one.rhs, avals, one.n, self.name)
        if not events:
            return Solver(rhs, method, batch=batch)

        def values(y, s, *leaves):
            return wnp.stack([self.event(e, y, s, leaves) for e in events])
        return Solver(rhs, method, _scalarized(values, avals, self.n, "the events of " +
                                               self.name))


def _scalarized(f, avals, n, name):
    """``f(y, t, *leaves)`` traced without values and written element by element, for
    C; the errors say why it cannot be."""
    from ..api import trace
    from ..codegen.scalarize import NotScalar, float_form
    from ..errors import ConcretizationError
    try:
        with np.errstate(all="ignore"):
            graph = trace(f, ShapeDtype((n,)), ShapeDtype(), *avals)
    except ConcretizationError:
        raise ValueError(
            f"solve_ivp(backend='c'): {name} needs the value of y, t or args as a plain "
            "number, and C code is traced once, without values: a Python `if`, max or "
            "math function on them, float(...), np.array([...]) of them, or dy[i] = ... "
            "(write these with wengert.numpy: wnp.where, wnp.maximum, wnp.exp, wnp.stack, "
            "or return a list), or use backend='scipy'") from None
    try:
        return float_form(graph, 10 ** 6, C_MAX_OPERATIONS)
    except NotScalar as e:
        raise ValueError(f"solve_ivp(backend='c'): {name} uses values or operations the C "
                         "back-end cannot write element by element (linear algebra, a "
                         "dtype other than float64), or is too large for straight-line C "
                         f"(over {C_MAX_OPERATIONS} operations, a dense product with a "
                         "100x100 matrix, say: its compiling would take longer than "
                         f"SciPy's solve): it has {e}; use backend='scipy'") from None


#: The most scalar operations a right-hand side written as C may have (compiling the
#: straight-line code of y' = A y takes ~3 s at n = 50 and grows with n²).
C_MAX_OPERATIONS = 20_000

#: Where backend="c" checks compiled code against the function (see `c_solver`): a
#: fixed sequence, so that a run is repeatable.
_PROBE = np.random.default_rng(20261123)

#: Calls of odeint and solve_ivp that may use compiled code so far: a derived system's
#: compiled code is checked once per call (see `_System._kernel`).
_calls = [0]


def _compiled(rhs):
    from ..staged import compile as stage

    def flat(y, s, *leaves):
        return rhs(y, s, *leaves)
    flat.__name__ = "rhs"
    return stage(flat)


class _UserSystem(_System):
    """The user's ``func(y, t, *args)`` (``fun(t, y, *args)`` if `tfirst`, as solve_ivp
    calls it): y in its own shape, args the pytree `tree` whose leaves are this
    system's; `who` is the front-end, for the messages."""

    compiled = False          # the solution itself is SciPy's call of func, as is

    def __init__(self, func, shape, tree, leaf_avals, active, tfirst, who="odeint",
                 vectorized=False):
        self.func = func
        # a vectorized fun (solve_ivp's) is always called as SciPy calls it: with y of
        # shape (n, k), one column per state (k = 1 here)
        self.columns = (1,) if vectorized else ()
        self.name = getattr(func, "__name__", "func")
        self.shape = shape
        self.n = math.prod(shape)
        self.tree = tree
        self.leaf_avals = leaf_avals
        self.active = active
        self.tfirst = tfirst
        self.who = who

    def call(self, y, s, leaves):
        args = unflatten(self.tree, leaves)
        return self.func(s, y, *args) if self.tfirst else self.func(y, s, *args)

    def check(self, out, columns=()):
        if math.prod(shape_of(out)) != self.n * math.prod(columns):
            raise _size_error(self.who, shape_of(out), self.shape + tuple(columns), self.n)

    def rhs(self, y, s, *leaves):
        out = self.call(wnp.reshape(y, self.shape + self.columns), s, leaves)
        if type(out) is not Node:
            out = wnp.asarray(out)        # (a list [dx, dv] of traced values, as SciPy
            #                                users write it)
        self.check(out)
        return wnp.reshape(out, (self.n,))

    def event(self, event, y, s, leaves):
        """The user's ``event(t, y, *args)`` (solve_ivp's) at the flat state y, as a
        float scalar."""
        out = wnp.asarray(event(s, wnp.reshape(y, self.shape), *unflatten(self.tree, leaves)))
        if math.prod(shape_of(out)) != 1:
            raise ValueError(f"solve_ivp: the event function "
                             f"{getattr(event, '__name__', event)!r} must return a number, "
                             f"got shape {tuple(shape_of(out))}")
        return wnp.reshape(out if out.dtype.kind == "f" else wnp.astype(out, np.float64), ())

    def bind(self, leaves, y0, s0):
        args = unflatten(self.tree, leaves)
        func, shape, tfirst = self.func, self.shape, self.tfirst

        def f(y, s):
            # y is (n,), or (n, k) where solve_ivp's finite differences call a
            # vectorized fun with k states at once
            columns = y.shape[1:]
            y = y.reshape(shape + columns)
            out = func(s, y, *args) if tfirst else func(y, s, *args)
            if type(out) is Node:
                raise _closure_error(self.name, self.who)
            out = np.asarray(out, dtype=np.float64)
            if out.size != y.size:
                self.check(out, columns)
            return out.reshape((self.n,) + columns)
        return f


def _leaf(x, shape):
    """A flat piece of a cotangent in its leaf's shape; a plain scalar as a float, as
    other rules give it."""
    x = wnp.reshape(x, shape)
    if type(x) is np.ndarray and not shape:
        return float(x) if x.dtype == np.float64 else x[()]
    return x


def _size_error(who, out_shape, state_shape, n):
    """The ValueError for a right-hand side that gave out_shape for a state of
    state_shape (n numbers a state)."""
    return ValueError(
        f"{who}: {'func' if who == 'odeint' else 'fun'} returned dy/dt of shape "
        f"{tuple(out_shape)} for a state y of shape {tuple(state_shape)}; it must return one "
        f"derivative per element of y ({n} numbers)")


def _closure_error(name, who="odeint"):
    times = "t" if who == "odeint" else "t_span, t_eval"
    return ValueError(
        f"{who}: {name} computes with a traced value that is not among y0, {times} and "
        "args (a variable it closes over); pass that value in args, so that its "
        "derivative goes through the solve")


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

    def root_point(self, state, leaves):
        return self.base.root_point(state[:self.base.n], leaves)

    def c_batch(self):
        """The adjoint of a batch is a batch of the adjoints, but for the cotangents of
        the arguments the examples share, which are sums over them."""
        batched = self.base
        if not isinstance(batched, _BatchedSystem):
            return None
        one = batched.__dict__.get("_adjoint_one")
        if one is None:
            one = batched._adjoint_one = _AdjointSystem(batched.base)
        size, m = batched.size, batched.base.n
        state_at, state_step = [], []
        for part in range(2):                           # y, then a
            state_at += [part * size * m + i for i in range(m)]
            state_step += [m] * m
        cot_at, cot_step = batched.leaf_layout(2 * size * m, self.active)   # the cotangents
        state_at += cot_at
        state_step += cot_step
        leaf_at, leaf_step = batched.leaf_layout(self.n + 1)
        batch = _c_batch(size, state_at + [self.n] + leaf_at, state_step + [0] + leaf_step,
                         state_at, state_step, self.n, batched)
        return one, batch


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

    def root_point(self, state, leaves):
        return self.base.root_point(state[:self.base.n], leaves[:self.nbase])


class _Jacobian(_System):
    """∂f/∂y of `base` as a function of (y, s), the n×n matrix that SciPy's implicit
    methods (Radau, BDF, LSODA) factorise in their Newton iterations, where they would
    take n (+ 1) calls of f per Jacobian for finite differences.  Not a system to solve:
    its `bind` gives SciPy's ``jac``, eager sweeps until it has been asked for `HOT`
    times, then compiled as the derived right-hand sides are."""

    def __init__(self, base):
        self.base = base
        self.name = f"jacobian of {base.name}"
        self.n = base.n
        self.leaf_avals = base.leaf_avals
        self.active = ()

    #: Calls after which the Jacobian is compiled.  A right-hand side is called
    #: thousands of times, a Jacobian a few dozen (a BDF solve of a 100-state
    #: Brusselator: 2); compiling a large one costs hundreds of eager sweeps (that one:
    #: 0.5 s, an eager Jacobian 2 ms), so, as `wengert.scipy.optimize` does, it is
    #: compiled only once it has been asked for often: counted over all the solves of
    #: this system (the adjoint's, one per output interval; a fit's, one per step).
    HOT = 32
    calls = 0

    def rhs(self, y, s, *leaves):
        return self.base.dfdy(y, s, *leaves)

    def bind(self, leaves, y0, s0):
        if getattr(self, "_code", None) is not None:    # compiled (or failed) before
            return super().bind(leaves, y0, s0)
        rhs, code = self.rhs, [None]

        def jac(y, s):
            if code[0] is not None:
                return code[0](y, s, *leaves)
            self.calls += 1
            if self.calls >= self.HOT:
                code[0] = self._kernel(leaves, y, s)
                if code[0] is not None:
                    return code[0](y, s, *leaves)
            return np.asarray(rhs(y, s, *leaves), dtype=np.float64)
        return jac


class Odeint(Primitive):
    """The primitive of one ODE solve: ``(y0, t, *leaves) -> y`` of shape (len(t), n),
    y0 flat, t[0] the initial time.  Its VJP is the adjoint method, its JVP forward
    sensitivities; both solve their systems with primitives of this class, so they can
    be differentiated again.  Not in the registry: one is made per `odeint` or
    `solve_ivp` call (and per derived system).

    `method` chooses the solver: None for SciPy's odeint (LSODA), or one of solve_ivp's
    methods (a name or an `OdeSolver` class), whose solve runs from t[0] to t[-1] and
    reports y at every time of t.  The derived systems are solved by the same method, with
    the options that are not about the user's system alone (tolerances, step bounds).

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy.integrate import odeint
        >>> print(wg.trace(lambda k: odeint(lambda y, t, k: -k * y, 1.0, [0.0, 1.0],
        ...                                 args=(k,)), 0.5))
        graph(k: f64[]):
          %3: f64[2,1] = odeint[<lambda>]([1.], [0., 1.], k)
          return %3
    """

    def __init__(self, system, options, method=None, own_times=False):
        front = "odeint" if method is None else "solve_ivp"
        super().__init__(f"{front}[{system.name}]", self._impl, cost="call",
                         abstract_eval=self._abstract_eval)
        self.system = system
        self.options = options
        self.method = method
        # solve_ivp with t_eval=None: t holds the solver's own times (from a plain solve),
        # so y is read at its steps, not interpolated there (see _solve_ivp)
        self.own_times = own_times
        self.jvp = self._jvp_rule
        self.vjp = self._vjp_rule
        self._adjoint = None
        self._tangents = {}
        self._jacobian = None
        self._batches = {}
        self.batch = self._batch_rule
        self.stats = None             # (nfev, njev, nlu) of the last solve_ivp solve

    def _derived(self, system):
        # a tolerance per element of y has no counterpart for the elements of a derived
        # state (adjoints, sensitivities): the smallest one serves them all
        keep = _SHARED if self.method is None else _IVP_SHARED
        shared = {k: (float(np.min(v)) if k in ("rtol", "atol") else v)
                  for k, v in self.options.items() if k in keep}
        prim = Odeint(system, shared, self.method)
        prim.derived = True
        return prim

    derived = False         # solves a system of a derivative rule, not the user's

    def _impl(self, y0, t, *leaves):
        if self.method is not None:
            return self._solve_ivp(y0, t, leaves)
        options = self.options
        if self.derived and "tcrit" in options and len(t) > 1 and t[-1] < t[0]:
            # SciPy's critical times work forwards only (backwards LSODA reports illegal
            # input); a backward solve of the adjoint stays within [t0, tN], where the
            # solution went, and its restart at each output time is its care there
            options = {k: v for k, v in options.items() if k != "tcrit"}
        with recording(None), warnings.catch_warnings():
            # (plain numbers: the right-hand side records nothing; a failure raises below
            # with SciPy's message, not its warning too)
            warnings.simplefilter("ignore", _scipy_integrate().ODEintWarning)
            y, info = _scipy_odeint()(self.system.bind(leaves, y0, t[0]), y0, t,
                                      full_output=True, **options)
        if info["message"] not in _ODEINT_DONE:
            # (SciPy warns and returns what it has, which has no derivative to speak of;
            # a traced solve_ivp that fails raises too)
            said = info["message"].strip()
            if isinstance(self.system, _AdjointSystem):     # reverse mode's backward solve
                raise RuntimeError(
                    f"odeint: the reverse-mode derivative re-solves y backward in time, and "
                    f"that solve failed ({said}): the system is stiff or strongly damped, "
                    "which makes the backward solve unstable.  Use forward mode (wg.jacfwd, "
                    "wg.jvp), which solves forward sensitivities")
            raise RuntimeError(f"odeint: the integration failed ({said}), so its solution "
                               "has no derivative: raise mxstep, loosen rtol and atol, or "
                               "use solve_ivp's implicit methods")
        return y

    # --- solve_ivp's solve -------------------------------------------------------------
    def _solve_ivp(self, y0, t, leaves):
        t = np.asarray(t, dtype=np.float64)
        d = np.diff(t)
        if not (np.all(d >= 0) or np.all(d <= 0)):
            raise ValueError("solve_ivp: the values in t_eval must lie within t_span and "
                             "be sorted in its direction")
        if t[0] == t[-1]:             # (SciPy's solve over no time reports no t_eval)
            self.stats = (0, 0, 0)
            return np.tile(np.asarray(y0, dtype=np.float64), (len(t), 1))
        # SciPy wants t_eval strictly monotonic; t holds t0 and tf besides the user's
        # times, and the rules' intervals may be empty: solve at the distinct times
        new = np.concatenate([[True], d != 0])
        if self.own_times:
            found = self.solve(y0, t[0], t[-1], leaves, None)
            if found.t.shape == t.shape and np.array_equal(found.t, t):
                return found.y.T
        found = self.solve(y0, t[0], t[-1], leaves, t[new])
        return found.y.T[np.cumsum(new) - 1]

    def solve(self, y0, t0, tf, leaves, t_eval, events=()):
        """SciPy's solve_ivp of this system from y(t0) = y0 to tf on plain values, with
        the exact Jacobian for an implicit method (see `jacobian`) and the user's `events`
        (functions of (t, y, *args)); a failure raises."""
        options = dict(self.options)
        if options.get("first_step") is not None and t0 != tf:
            # (the user's first step, for their span, checked by the front-end: a solve to
            # an event's time or to a time of sol(t) may be shorter, where SciPy would
            # refuse it)
            options["first_step"] = min(options["first_step"], abs(tf - t0))
        if options.pop("backend", "scipy") == "c" and t0 != tf and self.system.n:
            found = self.solve_c(y0, t0, tf, leaves, t_eval, events=events,
                                 first=options.get("first_step"))
            if found.status < 0:
                raise RuntimeError(f"solve_ivp: the solver failed for {self.system.name} "
                                   f"from t = {t0:g} to {tf:g}: {found.message}")
            self.stats = (found.nfev, 0, 0)
            return found
        if events:
            args = unflatten(self.system.tree, leaves)
            options["events"] = [_shaped_event(e, self.system.shape, args) for e in events]
        jac = options.pop("jac", None)
        y0 = np.asarray(y0, dtype=np.float64)
        with recording(None):         # plain numbers: the right-hand side records nothing
            f = self.system.bind(leaves, y0, t0)
            if callable(jac):         # (the user's ∂f/∂y: called with args, as SciPy does)
                jac = _flat_jacobian(jac, self.system.shape,
                                     unflatten(self.system.tree, leaves))
            elif jac is None and _exact_jacobian_wanted(self.method, options):
                jac = self.jacobian(leaves, y0, t0)
            pattern = None if jac is not None or "jac_sparsity" in options or \
                not _implicit(self.method) or _lsoda(self.method) else self.system.pattern()
            if jac is not None:
                options["jac"] = jac
            elif pattern is not None:
                options["jac_sparsity"] = pattern
            found = _scipy_integrate().solve_ivp(lambda s, y: f(y, s), (t0, tf), y0,
                                                 method=self.method, t_eval=t_eval,
                                                 **options)
        if found.status < 0:
            raise RuntimeError(f"solve_ivp: the solver failed for {self.system.name} from "
                               f"t = {t0:g} to {tf:g}: {found.message}")
        self.stats = (found.nfev, found.njev, found.nlu)
        return found

    def solve_c(self, y0, t0, tf, leaves, t_eval, dense=False, events=(), first=None):
        """The solve of `solve` by the C loop (solve_ivp's backend="c", for RK23, RK45 and
        DOP853: SciPy's steps, see `wengert.codegen.rk`), locating the user's `events`;
        a failure is reported in the result's status, as SciPy reports it.  `first`: the
        first step, if not the options'."""
        options = self.options
        if not np.all(np.isfinite(y0)):
            raise ValueError("All components of the initial state `y0` must be finite.")
        rtol, atol = self.c_tolerances()
        if first is None:
            first = options.get("first_step")
        _check_first_step(first, t0, tf)
        events = tuple(events)
        limits = _event_limits(events) if events else None
        solver = self.system.c_solver(self.method, leaves, y0, (t0, tf), events)
        return solver(y0, t0, tf, leaves, t_eval, rtol, atol,
                      options.get("max_step", np.inf), first, dense, limits)

    def jacobian(self, leaves, y0, s0):
        """SciPy's ``jac(t, y)``: wengert's ∂f/∂y, or None where f cannot be
        differentiated (written with functions wengert has no rules for), so that SciPy
        takes finite differences as it would have."""
        if self._jacobian is None:
            self._jacobian = _Jacobian(self.system)
        try:
            with np.errstate(all="ignore"):
                jac = self._jacobian.bind(leaves, y0, s0)
                first = jac(y0, s0)
        except Exception:                 # noqa: BLE001  (SciPy's finite differences)
            return None
        n, block = self.system.n, self.system.block
        if np.shape(first)[-2:] != (block, block) or np.size(first) != n * block or \
                not np.all(np.isfinite(first)):
            return None
        matrix = self.system.matrix
        # SciPy's first Jacobian is the one at (t0, y0), just computed (eagerly, a few ms
        # for a large system: a BDF solve may ask for only two in all)
        start = [(s0, np.array(y0, dtype=np.float64), first)]

        def scipy_jac(s, y, *args):       # (SciPy passes its args on: not ours)
            if start:
                s_first, y_first, known = start.pop()
                if s == s_first and np.array_equal(y, y_first):
                    return matrix(known)
            return matrix(jac(y, s))
        return scipy_jac

    def _abstract_eval(self, args, params):
        return (args[1].shape[0], self.system.n), np.dtype(np.float64)

    # --- reverse mode: the adjoint method ----------------------------------------------
    def _vjp_rule(self, g, y0, t, *rest):
        # backend="c": on numbers, all the backward solves in one C call; traced without
        # values (wg.compile, wg.vmap), one node that makes that call.  Traced with
        # values (a Hessian) the general rule's nodes are solved at once and kept for
        # every sweep of the Jacobian, which would each re-run a sweep node's rule.
        if self.options.get("backend") == "c" and shape_of(t)[0] > 1:
            ys = rest[-1]
            if not any(type(x) is Node for x in (g, y0, t, *rest)):
                return self._vjp_c(g, y0, t, rest[:-1], ys)
            if type(ys) is Node and ys.value is None:
                return self._vjp_swept(g, y0, t, *rest)
        return self._vjp_general(g, y0, t, *rest)

    def _adjoint_prim(self):
        if self._adjoint is None:
            self._adjoint = self._derived(_AdjointSystem(self.system))
        return self._adjoint

    def _vjp_general(self, g, y0, t, *rest):
        """The adjoint method, one backward solve (an `Odeint` node of the adjoint
        system) per output interval."""
        leaves, ys = rest[:-1], rest[-1]
        system = self.system
        n, T = system.n, shape_of(t)[0]
        adjoint = self._adjoint_prim()
        a = g[T - 1]
        b = wnp.zeros(sum(adjoint.system.sizes))
        backs = []
        for i in range(T - 1, 0, -1):
            state = adjoint(wnp.concatenate([ys[i], a, b]), wnp.stack([t[i], t[i - 1]]),
                            *leaves)[1]
            backs.append(state[:n])
            value = state.value if type(state) is Node else state
            if value is not None and not np.all(np.isfinite(value)):
                # (the next backward solve would start from it, and SciPy's refusal of a
                # non-finite y0 would be the error)
                self._backward_failed(t[i - 1], np.inf)
            a, b = state[n:2 * n], state[2 * n:]
            if i > 1:
                a = a + g[i - 1]
        if backs:
            self._check_backward(backs[::-1], ys, t)
        y0_bar = a + g[0] if T > 1 else g[0]
        out = self._leaf_cotangents(b, len(leaves)) if T > 1 else [None] * len(leaves)
        return (y0_bar, self._t_bar(g, a, y0, t, leaves, ys), *out)

    def _check_backward(self, backs, ys, t):
        """Raise where the adjoint's backward solves of y, which the adjoint equations
        read, have left the forward solution: a problem that is stiff or strongly damped
        forward is unstable backward (an error of atol grows like e^(λt)), and the
        gradient that comes of it is nan, 1e17 or merely wrong, with nothing said.
        `backs[i]` is where the solve from t[i+1] ended, at t[i].  On values only."""
        values = [v.value if type(v) is Node else v for v in (*backs, ys, t)]
        if any(v is None for v in values):
            return
        back = np.asarray(values[:-2], np.float64)
        if not back.size:                           # (an empty state: nothing to leave)
            return
        stored = np.asarray(values[-2], np.float64)[:len(back)]
        rtol = self.options.get("rtol", 1e-3)
        atol = np.asarray(self.options.get("atol", 1e-6), np.float64).reshape(-1)
        with np.errstate(all="ignore"):
            drift = np.abs(back - stored) / (atol + rtol * np.abs(stored))
            worst = np.max(np.where(np.isnan(drift), np.inf, drift), axis=1)
        if np.all(worst <= _BACKWARD_DRIFT):
            return
        k = int(np.argmax(worst))
        self._backward_failed(values[-1][k], worst[k])

    def _backward_failed(self, time, worst):
        """The error of `_check_backward`: the backward solve of y left the forward
        solution at `time` by `worst` times the tolerance."""
        time = time.value if type(time) is Node else time
        raise RuntimeError(
            f"{self.name}: the reverse-mode derivative re-solves y backward in time, and it "
            f"left the forward solution at t = {float(time):.6g} by {worst:.3g} "
            "times the tolerance (atol + rtol·|y|): the system is stiff or strongly damped, "
            "which makes the backward solve unstable, and the gradient would be wrong.  Use "
            "forward mode (wg.jacfwd, wg.jvp), which solves forward sensitivities, or give "
            "more output times in t (each restarts the backward solve from the stored y)")

    def _leaf_cotangents(self, b, count):
        """The `count` leaves' cotangents from b, the adjoint state's part for the active
        ones (end to end, each flat): None for the others."""
        adjoint, shapes = self._adjoint_prim().system, self.system.leaf_avals
        out = [None] * count
        start = 0
        for k, size in zip(adjoint.active, adjoint.sizes):
            out[k] = _leaf(b[start:start + size], shapes[k][0])
            start += size
        return out

    def _t_bar(self, g, a, y0, t, leaves, ys):
        """t's cotangent: ``g_iᵀ f(y_i, t_i)`` for i ≥ 1 and ``-a(t0)ᵀ f(y0, t0)``."""
        from ..vectorize import vmap
        rhs, T = self.system.rhs, shape_of(t)[0]
        if T == 1:
            return wnp.stack([0.0 * t[0]])
        points = wnp.concatenate([wnp.reshape(y0, (1, -1)), ys[1:]])
        if self.options.get("backend") == "c":
            # f at the T points as one call mapped over them (its graph recorded once,
            # not T times); C's f can be traced without values, so this f can
            f = vmap(lambda y, s: rhs(y, s, *leaves))(points, t)
        else:
            f = wnp.stack([rhs(points[i], t[i], *leaves) for i in range(T)])
        return wnp.concatenate([wnp.reshape(-wnp.sum(a * f[0]), (1,)),
                                wnp.sum(g[1:] * f[1:], axis=1)])

    def _vjp_swept(self, g, y0, t, *rest):
        """The adjoint method with backend="c" on traced values (under `wg.compile`,
        `wg.vmap`, or a derivative of the gradient): the backward solves as one node
        (`_AdjointSweep`), whose value is one call of the C loop, as on numbers."""
        leaves, ys = rest[:-1], rest[-1]
        sweep = self.sweep()
        y0_bar, *bars = sweep.unpack(sweep(g, y0, t, *leaves, ys))
        out = [None] * len(leaves)
        for k, bar in zip(self._adjoint_prim().system.active, bars):
            out[k] = bar
        return (y0_bar, self._t_bar(g, y0_bar - g[0], y0, t, leaves, ys), *out)

    def sweep(self):
        """The `_AdjointSweep` primitive of this solve (made once)."""
        found = self.__dict__.get("_sweep")
        if found is None:
            found = self._sweep = _AdjointSweep(self)
        return found

    def _vjp_c(self, g, y0, t, leaves, ys):
        """The adjoint method of `_vjp_rule` on plain numbers with backend="c": the same
        backward solves, one per output interval, in one call of the C loop
        (`Solver.chain`), and f at the output times (for t's cotangent) by the compiled
        right-hand side.  The numbers are the general rule's, without ~100 µs of Python
        per interval."""
        system, adjoint = self.system, self._adjoint_prim()
        n, T = system.n, len(t)
        P = sum(adjoint.system.sizes)
        t = np.asarray(t, dtype=np.float64)
        ys, g = np.asarray(ys, dtype=np.float64), np.asarray(g, dtype=np.float64)
        # solve k runs from t[T-1-k] to t[T-2-k] and starts at [y, a, b]: y = ys there,
        # a = (a where solve k-1 ended) + g there, b carried on
        add = np.zeros((T - 1, 2 * n + P))
        add[:, :n] = ys[:0:-1]
        add[:, n:2 * n] = g[:0:-1]
        keep = np.concatenate([np.zeros(n), np.ones(n + P)])
        solver = adjoint.system.c_solver(self.method, leaves, add[0], (t[-1], t[0]))
        rtol, atol = adjoint.c_tolerances()
        ends, _, failed = solver.chain(t[::-1], keep, add, leaves, rtol, atol,
                                       adjoint.options.get("max_step", np.inf))
        if failed is not None:
            from ..codegen.rk import MESSAGES
            status, k = failed
            raise RuntimeError(f"solve_ivp: the solver failed for {adjoint.system.name} "
                               f"from t = {t[T - 1 - k]:g} to {t[T - 2 - k]:g}: "
                               f"{MESSAGES[status]}")
        self._check_backward(ends[::-1, :n], ys, t)       # (ends[k] is at t[T - 2 - k])
        a, b = ends[-1, n:2 * n], ends[-1, 2 * n:]
        f = system.c_solver(self.method, leaves, y0, (t[0], t[-1])).rhs_at(
            np.concatenate([np.reshape(y0, (1, n)), ys[1:]]), t, leaves)
        t_bar = np.einsum("ij,ij->i", g, f)
        t_bar[0] = -np.dot(a, f[0])
        return (a + g[0], t_bar, *self._leaf_cotangents(b, len(leaves)))

    def c_tolerances(self):
        """rtol and atol for the C loop, one per element of the state (made once)."""
        found = self.__dict__.get("_c_tol")
        if found is None:
            found = self._c_tol = _c_tolerances(self.options.get("rtol", 1e-3),
                                                self.options.get("atol", 1e-6),
                                                self.system.n)
        return found

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

    # --- wg.vmap: the examples' systems solved as one ---------------------------------
    def _batch_rule(self, args, mapped, node):
        """B solves of this system, from B initial states or with B values of some
        leaves: one solve of the B systems side by side (`_BatchedOdeint`), SciPy's
        steps taken for all at once.  None (one solve per example) where the times
        differ between examples, where the user gave ∂f/∂y, or where f cannot be traced
        without values."""
        if mapped[1] or self.own_times or self.options.get("jac") is not None or \
                not self.system.traceable():
            return None
        size = next(shape_of(a)[0] for a, m in zip(args, mapped) if m)
        prim = self.batched(size, tuple(mapped[2:]))
        n, T = self.system.n, shape_of(args[1])[0]
        y0 = args[0] if mapped[0] else wnp.broadcast_to(args[0], (size, n))
        ys = prim(wnp.reshape(y0, (size * n,)), *args[1:])
        return wnp.transpose(wnp.reshape(ys, (T, size, n)), (1, 0, 2))

    def batched(self, size, flags):
        """The primitive of `size` solves of this system at once, the leaves where
        `flags` is true carrying the batch on axis 0 (made once per size and flags)."""
        prim = self._batches.get((size, flags))
        if prim is None:
            prim = self._batches[(size, flags)] = _BatchedOdeint(self, size, flags)
        return prim

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
# wg.vmap: a batch of solves as one
# --------------------------------------------------------------------------------------
class _BatchedSystem(_System):
    """`size` copies of `base` side by side, on the state [y_1, ..., y_size] (size·n
    numbers): example b's right-hand side reads y_b and, of the leaves at the positions
    where `mapped` is true, its own row (those leaves carry the batch on axis 0; the
    others are shared).  Its ∂f/∂y is block diagonal, one block per example."""

    def __init__(self, base, size, mapped):
        self.base, self.size, self.mapped = base, size, mapped
        self.name = f"{base.name} (a batch of {size})"
        self.n = size * base.n
        self.leaf_avals = tuple(((size,) + tuple(shape), dtype) if m else (shape, dtype)
                                for (shape, dtype), m in zip(base.leaf_avals, mapped))
        self.active = base.active

    @property
    def block(self):
        return self.base.block

    def _each(self, method, y, s, leaves):
        from ..vectorize import vmap
        base, size = self.base, self.size
        axes = (0,) + tuple(0 if m else None for m in self.mapped)
        return vmap(lambda y, *ls: method(y, s, *ls), in_axes=axes)(
            wnp.reshape(y, (size, base.n)), *leaves)

    def rhs(self, y, s, *leaves):
        return wnp.reshape(self._each(self.base.rhs, y, s, leaves), (self.n,))

    def root_point(self, y, leaves):
        """The first example's point."""
        return self.base.root_point(
            np.reshape(y, (self.size, self.base.n))[0],
            [x[0] if m else x for x, m in zip(leaves, self.mapped)])

    def dfdy(self, y, s, *leaves):
        block = self.block
        return wnp.reshape(self._each(self.base.dfdy, y, s, leaves),
                           (self.n // block, block, block))

    def matrix(self, blocks):
        """The blocks as one sparse matrix (SciPy's Radau and BDF factorise it as such:
        the work of one small LU per example)."""
        from scipy import sparse
        count, m = blocks.shape[0], blocks.shape[1]
        columns = np.arange(count)[:, None, None] * m + np.arange(m)
        indices = np.broadcast_to(columns, blocks.shape).ravel()
        return sparse.csr_matrix((np.ravel(blocks), indices,
                                  np.arange(0, count * m * m + 1, m)), shape=(self.n, self.n))

    def pattern(self):
        m = self.block
        return self.matrix(np.ones((self.n // m, m, m)))

    def leaf_layout(self, start, which=None):
        """Where one example's leaves are in the batch's flat leaves placed at `start`:
        (positions of example 0, strides between examples: 0 where they share it).  With
        `which`, of those leaves alone, one after the other (the adjoint's cotangents)."""
        at, step = [], []
        for k in range(len(self.mapped)) if which is None else which:
            own, m = math.prod(self.base.leaf_avals[k][0]), self.mapped[k]
            at += range(start, start + own)
            step += [own if m else 0] * own
            start += own * (self.size if m else 1)
        return at, step

    def c_batch(self):
        size, m = self.size, self.base.n
        state_at, state_step = list(range(m)), [m] * m
        leaf_at, leaf_step = self.leaf_layout(self.n + 1)
        return self.base, _c_batch(size, state_at + [self.n] + leaf_at,
                                   state_step + [0] + leaf_step, state_at, state_step,
                                   self.n, self)


def _c_batch(size, in_at, in_step, out_at, out_step, n, batched):
    from ..codegen.rk import Batch
    leaves = sum(math.prod(shape) for shape, _ in batched.leaf_avals)
    return Batch(size, in_at, in_step, out_at, out_step, n, leaves)


class _BatchedOdeint(Odeint):
    """The solve of `base` for `size` examples at once: one SciPy solve of the
    `_BatchedSystem`, y of shape (len(t), size·n), example b in columns [b·n, (b+1)·n).

    One step sequence serves every example, so where the solver measures its error as a
    root mean square (solve_ivp's methods but LSODA) the tolerances are divided by
    √size: each example's error then stays within the tolerance asked of it, as in its
    own solve.  LSODA measures the largest error, so it needs nothing; it is told that
    ∂f/∂y is banded (ml = mu = n - 1 covers the blocks), Radau and BDF get it as a
    sparse matrix.  The derivatives are the base primitive's rules mapped over the batch
    by `wg.vmap`: their systems are batched in turn, block diagonal like this one."""

    def __init__(self, base, size, mapped):
        super().__init__(_BatchedSystem(base.system, size, mapped),
                         _batched_options(base, size), base.method)
        self.base, self.size, self.mapped = base, size, mapped
        self.derived = base.derived

    def _split(self, leaves):
        """The leaves the examples do not share, to be mapped over."""
        return [x for x, m in zip(leaves, self.mapped) if m]

    def _merged(self, leaves, own):
        own = iter(own)
        return [next(own) if m else x for x, m in zip(leaves, self.mapped)]

    def _examples(self, x):
        """A flat batched state or solution as (size, ..., n)."""
        n = self.base.system.n
        shape = tuple(shape_of(x))
        return wnp.reshape(x, (self.size, n)) if len(shape) == 1 else \
            wnp.transpose(wnp.reshape(x, (shape[0], self.size, n)), (1, 0, 2))

    def _vjp_general(self, g, y0, t, *rest):
        # (in C, `_vjp_c` solves the adjoint of the batched system as one, and its
        # ∂f/∂args sums the shared arguments' cotangents over the examples, as here)
        from ..vectorize import vmap
        leaves, ys = rest[:-1], rest[-1]
        base = self.base

        def one(g, y0, ys, *own):
            return base._vjp_general(g, y0, t, *self._merged(leaves, own), ys)

        cts = vmap(one)(self._examples(g), self._examples(y0), self._examples(ys),
                        *self._split(leaves))
        out = [wnp.reshape(cts[0], (self.system.n,)), wnp.sum(cts[1], axis=0)]
        for c, m in zip(cts[2:], self.mapped):
            out.append(c if c is None or m else wnp.sum(c, axis=0))
        return tuple(out)

    def _jvp_rule(self, ts, y0, t, *rest):
        from ..vectorize import vmap
        leaves, ys = rest[:-1], rest[-1]
        y0_dot, t_dot, dots = ts[0], ts[1], ts[2:]
        if y0_dot is None and t_dot is None and all(d is None for d in dots):
            return None
        base = self.base
        own_dots = [d for d, m in zip(dots, self.mapped) if m and d is not None]

        def one(y0, ys, y0_dot, own, own_dots):
            ds = iter(own_dots)
            ds = [(next(ds) if d is not None else None) if m else d
                  for d, m in zip(dots, self.mapped)]
            return base._jvp_rule((y0_dot, t_dot, *ds), y0, t,
                                  *self._merged(leaves, own), ys)

        y0_dot = None if y0_dot is None else self._examples(y0_dot)
        out = vmap(one, out_axes=1)(self._examples(y0), self._examples(ys), y0_dot,
                                    self._split(leaves), own_dots)
        return wnp.reshape(out, (shape_of(t)[0], self.system.n))


class _AdjointSweep(Checkpoint):
    """The backward sweep of the adjoint method of one `Odeint` with backend="c", as one
    node: ``(g, y0, t, *leaves, ys) -> (y0's cotangent, the active leaves'
    cotangents)``, packed into one flat array.

    Its value is `Odeint._vjp_c`'s: all the backward solves in one call of the C loop,
    as on numbers, where the general rule would make one node (one C call) per output
    interval.  Its derivative rules (a Hessian, the Jacobian of a gradient) are
    `wg.checkpoint`'s: they run the general rule (`Odeint._vjp_general`) again.  Under
    `wg.vmap` the sweeps of a batch are one sweep of the batched system (`_batch_rule`).
    t's cotangent is computed outside (`Odeint._t_bar`): it needs f at the output
    times, nodes a compiled gradient drops where t is not differentiated.

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.integrate import solve_ivp
        >>> def y1(k):
        ...     return solve_ivp(lambda t, y, k: -k * y, (0.0, 1.0), [1.0], args=(k,),
        ...                      t_eval=[0.5, 1.0], backend="c").y[0, -1]
        >>> print(wg.trace(wg.grad(y1), 0.5))        # doctest: +ELLIPSIS
        graph(k: f64[]):
          ...
          %... = adjoint_sweep[<lambda>](...)
          ...
    """

    def __init__(self, prim):
        system = prim.system
        self.odeint = prim
        self.active = prim._adjoint_prim().system.active

        def sweep(g, y0, t, *rest):
            y0_bar, _, *bars = prim._vjp_general(g, y0, t, *rest)
            return (y0_bar, *[bars[k] for k in self.active])
        sweep.__name__ = system.name
        count = len(system.leaf_avals)
        super().__init__(sweep, flatten(tuple(range(count + 4)))[1])
        self.name = f"adjoint_sweep[{system.name}]"
        avals = [((system.n,), np.dtype(np.float64))] + \
            [(tuple(system.leaf_avals[k][0]), np.dtype(np.float64)) for k in self.active]
        self._set_layout(flatten(tuple(range(len(avals))))[1], avals)

    def _impl(self, g, y0, t, *rest):
        prim = self.odeint
        y0_bar, _, *bars = prim._vjp_c(g, y0, t, rest[:-1], rest[-1])
        return self.pack([y0_bar] + [bars[k] for k in self.active])

    def _batch_rule(self, args, mapped, node):
        """A batch of sweeps as the one sweep of the batched system, every leaf mapped
        (broadcast where the examples share it), so that each example keeps its own
        cotangents; times that differ between examples are mapped by the general rule."""
        if mapped[2]:
            return super()._batch_rule(args, mapped, node)
        prim = self.odeint
        size = next(shape_of(a)[0] for a, m in zip(args, mapped) if m)
        n, T = prim.system.n, shape_of(args[2])[0]
        # (t stays as it is: the examples share it)
        g, y0, t, *leaves, ys = [x if m or k == 2 else
                                 wnp.broadcast_to(x, (size,) + shape_of(x))
                                 for k, (x, m) in enumerate(zip(args, mapped))]

        def side_by_side(x):            # (size, T, n) -> (T, size·n)
            return wnp.reshape(wnp.transpose(x, (1, 0, 2)), (T, size * n))
        sweep = prim.batched(size, (True,) * len(leaves)).sweep()
        y0_bar, *bars = sweep.unpack(sweep(side_by_side(g), wnp.reshape(y0, (size * n,)),
                                           t, *leaves, side_by_side(ys)))
        parts = [wnp.reshape(y0_bar, (size, n))] + [wnp.reshape(b, (size, -1)) for b in bars]
        return parts[0] if len(parts) == 1 else wnp.concatenate(parts, axis=1)


def _batched_options(base, size):
    """The options of `size` solves of `base` at once (see `_BatchedOdeint`)."""
    lsoda = base.method is None or _lsoda(base.method)
    scale = 1.0 if lsoda else 1.0 / math.sqrt(size)
    options = {}
    for k, v in base.options.items():
        if k in ("rtol", "atol"):
            v = np.tile(np.ravel(v), size) * scale if np.ndim(v) else v * scale
            if k == "rtol":
                v = np.maximum(v, 100 * np.finfo(float).eps)   # (SciPy's floor)
        elif k == "jac_sparsity" and v is not None:
            from scipy import sparse
            v = sparse.block_diag([v] * size, format="csr")
        elif k == "vectorized":       # (a hint for SciPy's differences: not this system's)
            continue
        options[k] = v
    band = base.system.block - 1
    if base.method is None:
        options.setdefault("ml", band)
        options.setdefault("mu", band)
    elif lsoda:
        options.setdefault("lband", band)
        options.setdefault("uband", band)
    return options


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
    if "backend" in kwargs:
        raise ValueError("odeint: SciPy's odeint is LSODA, which runs in SciPy only; for "
                         "a solve in C use solve_ivp(..., method='RK45' or 'DOP853', "
                         "backend='c')")
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
    numeric, tree, avals, active = _arguments(leaves, tree)
    _calls[0] += 1
    prim = _primitive(func, shape, tree, avals, active, tfirst, options)
    if tuple(y0.shape) != (prim.system.n,):
        y0 = wnp.reshape(y0, (prim.system.n,))
    ys = prim(y0, t, *numeric)
    return ys if len(shape) == 1 else wnp.reshape(ys, (t.shape[0],) + shape)


def _numeric(x):
    return type(x) is Node or isinstance(x, (int, float, np.number, np.ndarray)) and \
        np.asarray(x).dtype.kind in "biuf"


#: How far (in units of atol + rtol·|y|) the adjoint's backward re-solve of y may end from
#: the forward solution before reverse mode refuses (`Odeint._check_backward`).
_BACKWARD_DRIFT = 1e6       # (the test suite's solves end within 1.1e3; failing ones, 1e11+)

#: The primitives of recent calls, by everything they are made of, so that a function
#: solved again and again (a fitting loop) reuses their derived systems' compiled code.
_PRIMITIVES: OrderedDict = OrderedDict()
_CACHE_SIZE = 64


def _arguments(leaves, tree):
    """The leaves of args that are numbers (the primitive's arguments), the tree holding
    the others as constants, the numbers' avals, and the positions of the traced floating
    ones (those a derivative flows through; none on plain values)."""
    numeric, tree = hold_constants(tree, leaves, lambda x: not _numeric(x))
    active = tuple(k for k, x in enumerate(numeric)
                   if type(x) is Node and x.dtype.kind == "f")
    return numeric, tree, tuple(aval(x) for x in numeric), active


def _primitive(func, shape, tree, avals, active, tfirst, options, method=None,
               own_times=False):
    def make():
        who = "odeint" if method is None else "solve_ivp"
        return Odeint(_UserSystem(func, shape, tree, avals, active, tfirst, who,
                                  bool(options.get("vectorized"))), options, method, own_times)
    try:
        key = (func, shape, tree, tuple((s, d.str) for s, d in avals), active, tfirst,
               tuple(sorted((k, _frozen(v)) for k, v in options.items())), method,
               own_times)
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


# --------------------------------------------------------------------------------------
# solve_ivp
# --------------------------------------------------------------------------------------
#: SciPy's solve_ivp methods, by name.
_METHODS = ("RK23", "RK45", "DOP853", "Radau", "BDF", "LSODA")

#: solve_ivp's methods that factorise ∂f/∂y (their Newton iterations): given wengert's.
_IMPLICIT = ("Radau", "BDF", "LSODA")


def _implicit(method):
    if isinstance(method, str):
        return method in _IMPLICIT
    from scipy.integrate import BDF, LSODA, Radau
    return isinstance(method, type) and issubclass(method, (BDF, LSODA, Radau))


def _lsoda(method):
    return method == "LSODA" or isinstance(method, type) and method.__name__ == "LSODA"


def _exact_jacobian_wanted(method, options):
    """Whether to give SciPy wengert's ∂f/∂y: for the implicit methods, unless the
    options ask for a sparse or banded one (finite differences that use the pattern;
    LSODA's banded jac has another layout)."""
    return _implicit(method) and all(
        options.get(k) is None for k in ("jac_sparsity", "lband", "uband"))


def _flat_jacobian(jac, shape, args=None):
    """The user's ``jac(t, y, *args)`` as SciPy calls it on the flat state: y in its
    shape, a dense result as (n, n) (a sparse matrix goes as it is); with `args` those
    are passed, else the ones SciPy passes."""
    n = math.prod(shape)

    def flat_jac(s, y, *given):
        out = jac(s, y.reshape(shape), *(given if args is None else args))
        if type(out) is Node:                       # (SciPy calls it on numbers)
            raise _closure_error(f"jac {getattr(jac, '__name__', 'jac')}", "solve_ivp")
        return np.reshape(out, (n, n)) if isinstance(out, (np.ndarray, list)) else out
    return flat_jac


def solve_ivp(fun, t_span, y0, method="RK45", t_eval=None, dense_output=False, events=None,
              vectorized=False, args=None, backend="scipy", **options):
    """Solve ``dy/dt = fun(t, y, *args)`` from y(t_span[0]) = y0; SciPy's
    `scipy.integrate.solve_ivp` with derivatives.

    The call and the result are SciPy's: an `OdeResult` whose ``y[:, i]`` is the state
    at ``t[i]`` (the times of t_eval, or the solver's steps if it is None), for the
    methods RK45, RK23, DOP853, Radau, BDF and LSODA (or an `OdeSolver` class), with
    SciPy's options (rtol, atol, max_step, first_step, jac, ...).  One difference: for
    the implicit methods (Radau, BDF, LSODA) without a ``jac``, SciPy gets wengert's exact
    ∂f/∂y where it would take finite differences (fewer calls of fun on stiff problems),
    or its finite differences after all where fun cannot be differentiated.  A y0 of any
    shape is allowed (SciPy takes one dimension): fun gets and returns arrays of y0's
    shape, and ``result.y`` has shape ``y0.shape + (len(t),)``, time last as in SciPy.

    On plain values this is SciPy's function.  Where y0, t_span, t_eval or a leaf of args
    is traced, ``result.y`` is one node of the graph (the same numbers), differentiable
    with respect to all of them, to any order, by the rules of `odeint`: the adjoint
    method in reverse mode, forward sensitivities in forward mode, their systems solved by
    the same method and tolerances.  fun must be written with `wengert.numpy` (or NumPy
    functions) and take every traced value it uses through args.  With ``events``, the
    event times (``t_events``) are differentiable too, as roots of the event function
    along the solution (implicit function theorem), and so are the states there
    (``y_events``); a terminal event ends the solve at its traced time.  With
    ``dense_output=True``, ``result.sol(t)`` is the state at the time(s) t, of shape
    ``y0.shape`` for a time, ``y0.shape + (len(t),)`` for a 1-D array of them,
    differentiable in y0, t0, args and t: one more solve from (t0, y0) through the times
    asked for (any order, repeats allowed; outside t_span, or past a terminal event's
    time, the ODE's solution there), not SciPy's interpolant, whose derivative is not the
    solution's; so its values agree with SciPy's ``sol(t)`` to the solver's tolerance, not
    to the last bit.  On traced values a failed solve raises
    RuntimeError, complex values TypeError; with ``t_eval=None`` the output times are the
    steps of a plain solve, constants but for the ends (t0, and tf or the terminal
    event's time), and events need the values of a plain solve too (under `wg.compile` or
    `wg.vmap`, pass t_eval; events are refused there).

    Args:
        fun: the right-hand side, ``fun(t, y, *args) -> dy/dt`` of y's shape.
        t_span: (t0, tf), the interval of integration.
        y0: the initial state at t0.
        method: the solver, as SciPy's (default "RK45").
        t_eval: the times at which to report y (within t_span, sorted), or None.
        dense_output, events, vectorized: SciPy's (on traced values ``sol(t)`` solves
            through t, see above; on plain ones ``sol`` is SciPy's `OdeSolution`, whose
            call takes a traced t too, solving through it; an event is
            ``event(t, y, *args)``, with SciPy's ``terminal`` and ``direction``
            attributes).
        args: extra arguments of fun: numbers, arrays or a pytree of them.
        backend: "scipy" (default), or "c" for RK23, RK45 and DOP853: fun (traced once)
            and SciPy's stepping loop written as C and compiled, the same steps and, to
            rounding, the same numbers, for a fraction of the time; events are located
            in C, and the rules' systems are solved in C too (see `wengert.codegen.rk`
            and docs/odes.md).
        **options: the solver's options (rtol, atol, max_step, first_step, jac, ...);
            rtol and atol bound the error of the derivatives too, which are solutions of
            ODEs.

    Returns:
        SciPy's `OdeResult`: t, y, sol (None without dense_output), t_events,
        y_events, status.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy.integrate import solve_ivp
        >>> def oscillator(t, y, w):                   # x'' = -w² x
        ...     return [y[1], -w ** 2 * y[0]]                # (a list, as SciPy takes it)
        >>> x1 = lambda w: solve_ivp(oscillator, (0.0, 1.0), [1.0, 0.0], args=(w,),
        ...                          rtol=1e-10, atol=1e-12).y[0, -1]
        >>> print(round(x1(2.0), 6), round(np.cos(2.0), 6))         # x(1) = cos w
        -0.416147 -0.416147
        >>> print(round(wg.grad(x1)(2.0), 6), round(-np.sin(2.0), 6))  # d/dw = -sin w
        -0.909297 -0.909297
        >>> def x(w, t):                               # dense output: x at any time t
        ...     return solve_ivp(oscillator, (0.0, 1.0), [1.0, 0.0], args=(w,),
        ...                      dense_output=True, rtol=1e-10, atol=1e-12).sol(t)[0]
        >>> print(round(x(2.0, 0.5), 6), round(np.cos(1.0), 6))      # x(t) = cos wt
        0.540302 0.540302
        >>> d_w, d_t = wg.grad(x, argnums=(0, 1))(2.0, 0.5)   # -t sin wt, -w sin wt
        >>> print(round(d_w, 6), round(-0.5 * np.sin(1.0), 6), round(d_t, 6),
        ...       round(-2.0 * np.sin(1.0), 6))
        -0.420735 -0.420735 -1.682942 -1.682942
        >>> from wengert.codegen.c import CompilerNotFound
        >>> try:                                       # SciPy's steps, in C
        ...     x1_c = solve_ivp(oscillator, (0.0, 1.0), [1.0, 0.0], args=(2.0,),
        ...                      rtol=1e-10, atol=1e-12, backend="c").y[0, -1]
        ... except CompilerNotFound:
        ...     x1_c = x1(2.0)
        >>> print(round(x1_c, 6))
        -0.416147
    """
    if backend != "scipy":
        method, options = _c_backend(backend, method, events, options)
    arg_leaves = flatten(args)[0] if args is not None else []
    y0_leaves = flatten(y0)[0]
    time_leaves = flatten(t_span)[0] + (flatten(t_eval)[0] if t_eval is not None else [])
    if not any(type(x) is Node for x in arg_leaves + y0_leaves + time_leaves):
        if backend == "c":
            return _ivp_c(fun, t_span, y0, method, t_eval, dense_output, events, args,
                          options)
        return _ivp_plain(fun, t_span, y0, method, t_eval, dense_output, events,
                          vectorized, args, options)
    if any(np.iscomplexobj(x) if type(x) is not Node else x.dtype.kind == "c"
           for x in y0_leaves + arg_leaves):
        raise TypeError("solve_ivp: complex values are not supported on traced values; "
                        "write a complex state as its real and imaginary parts")
    if not (isinstance(method, str) and method in _METHODS or isinstance(method, type)
            and issubclass(method, _scipy_integrate().OdeSolver)):
        raise ValueError(f"solve_ivp: `method` must be one of {', '.join(_METHODS)} or an "
                         f"OdeSolver class, got {method!r}")
    args = _args_tuple(args)
    if vectorized:
        options["vectorized"] = True
    y0 = wnp.asarray(y0)
    if y0.dtype.kind != "f":
        y0 = wnp.astype(y0, np.float64)
    shape = tuple(y0.shape)
    span = _float_times(t_span)
    if tuple(span.shape) != (2,):
        raise ValueError(f"solve_ivp: t_span must be two times (t0, tf), got shape "
                         f"{tuple(span.shape)}")
    t0, tf = wnp.reshape(span[0], (1,)), wnp.reshape(span[1], (1,))
    if _value(span) is not None:        # (the rules' solves take it up to their spans)
        _check_first_step(options.get("first_step"), *map(float, _value(span)))
    numeric, tree, avals, active = _arguments(*flatten(args))
    _calls[0] += 1
    prim = _primitive(fun, shape, tree, avals, active, True, options, method,
                      own_times=t_eval is None)
    n = prim.system.n
    flat_y0 = y0 if tuple(y0.shape) == (n,) else wnp.reshape(y0, (n,))
    if t_eval is not None:
        t_eval = _float_times(t_eval)
        if len(t_eval.shape) != 1:
            raise ValueError(f"solve_ivp: t_eval must be one-dimensional, got shape "
                             f"{tuple(t_eval.shape)}")
        if _value(span) is not None and _value(t_eval) is not None:
            _check_t_eval(_value(span), _value(t_eval))
    events = _event_list(events) if events is not None else []
    found = None
    if t_eval is None or events:
        # the solver's steps, or the events' times: known once a solve has run on values
        values = [_value(x) for x in [flat_y0, span, t_eval] + numeric]
        if any(v is None for k, v in enumerate(values) if k != 2 or t_eval is not None):
            raise ValueError(
                "solve_ivp: with events, the event times are known only once the solver "
                "has run on values; under wg.compile or wg.vmap (tracing without values) "
                "they cannot be found: call the function eagerly (wg.grad, wg.jvp, ...)"
                if events else
                "solve_ivp: with t_eval=None the output times are the solver's steps, "
                "known only once it has run on values; under wg.compile or wg.vmap "
                "(tracing without values) pass t_eval, the times you need")
        found = prim.solve(values[0], values[1][0], values[1][1], values[3:], values[2],
                           events)
    times, t_events, y_events = [], None, None
    if events:
        times = [[_event_time(prim, g, tv, flat_y0, t0, numeric, tree, shape)
                  for tv in found.t_events[j]] for j, g in enumerate(events)]
        t_events, y_events = _event_results(prim, times, found, flat_y0, t0, numeric,
                                            shape)
    terminated = found is not None and found.status == 1
    if terminated:                     # the solve ends at the terminal event's time
        tf = wnp.reshape(_terminal_time(times, found, _value(span)), (1,))
        if t_eval is not None:
            t_eval = t_eval[:len(found.t)]
    if t_eval is None:
        t = wnp.concatenate([t0, found.t[1:-1], tf])
    else:
        t = wnp.concatenate([t0, t_eval, tf])
    ys = prim(flat_y0, t, *numeric)
    if t_eval is not None:
        ys = ys[1:-1]                  # (the rows at t0 and tf are the solve's, not asked)
    m = ys.shape[0]
    y = wnp.transpose(ys) if len(shape) == 1 else \
        wnp.moveaxis(wnp.reshape(ys, (m,) + shape), 0, -1)
    stats = prim.stats if type(ys) is not Node or ys.value is not None else (None,) * 3
    sol = None
    if dense_output:                   # (a primitive that solves at the times it is given)
        dense = prim if not prim.own_times else _primitive(
            fun, shape, tree, avals, active, True, options, method)
        sol = _TracedSolution(dense, flat_y0, t0, numeric, shape, tf, method)
    return _ode_result(t=t if t_eval is None else t_eval, y=y, sol=sol, t_events=t_events,
                       y_events=y_events, nfev=stats[0], njev=stats[1], nlu=stats[2],
                       status=1 if terminated else 0,
                       message="A termination event occurred." if terminated else
                       "The solver successfully reached the end of the integration "
                       "interval.", success=True)


# --------------------------------------------------------------------------------------
# solve_ivp(backend="c"): the explicit methods' steps in C (wengert.codegen.rk)
# --------------------------------------------------------------------------------------
#: The options of the C loop: SciPy's explicit methods' (others have no effect on them).
_C_OPTIONS = ("rtol", "atol", "max_step", "first_step")


def _c_backend(backend, method, events, options):
    """(method name, options with backend="c") for a solve in C, or the error that says
    why it cannot be; options the explicit methods ignore get SciPy's warning."""
    from ..codegen.rk import METHODS
    if backend != "c":
        raise ValueError(f"solve_ivp: backend must be 'scipy' or 'c', got {backend!r}")
    name = method if isinstance(method, str) else getattr(method, "__name__", None)
    if name not in METHODS or not isinstance(method, str) and \
            method is not getattr(_scipy_integrate(), name):
        raise ValueError(f"solve_ivp: backend='c' runs the explicit methods "
                         f"{', '.join(METHODS)}; method {method!r} runs in SciPy "
                         "(backend='scipy')")
    extra = [k for k in options if k not in _C_OPTIONS]
    if extra:
        import warnings
        warnings.warn("The following arguments have no effect for a chosen solver: "
                      f"{', '.join(f'`{k}`' for k in extra)}.", stacklevel=3)
    max_step = options.get("max_step", np.inf)
    if not max_step > 0:
        raise ValueError("`max_step` must be positive.")
    options = {k: v for k, v in options.items() if k in _C_OPTIONS}
    if "rtol" in options:           # (SciPy's warning, at every call)
        options["rtol"] = _small_rtol(options["rtol"], stacklevel=4)
    options["backend"] = "c"
    return name, options


def _small_rtol(rtol, stacklevel):
    """rtol raised to 100 ε where it is below, with SciPy's warning (`validate_tol`)."""
    eps = np.finfo(float).eps
    if np.any(np.asarray(rtol) < 100 * eps):
        import warnings
        warnings.warn("At least one element of `rtol` is too small. "
                      f"Setting `rtol = np.maximum(rtol, {100 * eps})`.",
                      stacklevel=stacklevel)
        return np.maximum(rtol, 100 * eps)
    return rtol


def _check_first_step(first, t0, tf):
    """SciPy's checks of first_step for the span (t0, tf), with its messages."""
    if first is not None:
        if first <= 0:
            raise ValueError("`first_step` must be positive.")
        if first > abs(tf - t0):
            raise ValueError("`first_step` exceeds bounds.")


def _c_tolerances(rtol, atol, n):
    """SciPy's tolerances (`validate_tol`) as one number per element of the state (rtol
    was raised to 100 ε already, by `_c_backend` or `_batched_options`)."""
    rtol = np.asarray(rtol, dtype=np.float64)
    atol = np.asarray(atol, dtype=np.float64)
    for name, tol in (("atol", atol), ("rtol", rtol)):
        if tol.ndim > 0 and tol.shape != (n,):
            raise ValueError(f"`{name}` has wrong shape.")
    if np.any(atol < 0):
        raise ValueError("`atol` must be positive.")
    return np.broadcast_to(rtol, (n,)), np.broadcast_to(atol, (n,))


def _ivp_c(fun, t_span, y0, method, t_eval, dense_output, events, args, options):
    """solve_ivp on plain values with backend="c": SciPy's result, from the C loop (a
    solve over no time, or of no state, is SciPy's own)."""
    shape = np.shape(y0)
    y0 = np.asarray(y0)
    args = _args_tuple(args)
    leaves, tree = flatten(args)
    if y0.dtype.kind == "c" or any(np.iscomplexobj(x) for x in leaves):
        raise TypeError("solve_ivp: backend='c' computes with real numbers; write a "
                        "complex state or argument as its real and imaginary parts, or use "
                        "backend='scipy'")
    y0 = y0.astype(np.float64)
    t0, tf = map(float, t_span)
    scipy_options = {k: v for k, v in options.items() if k != "backend"}
    if t0 == tf or y0.size == 0:
        return _ivp_plain(fun, t_span, y0, method, t_eval, dense_output, events, False,
                          args, scipy_options)
    if t_eval is not None:
        t_eval = np.asarray(t_eval, dtype=np.float64)
        if t_eval.ndim != 1:
            raise ValueError("`t_eval` must be 1-dimensional.")
        _check_t_eval((t0, tf), t_eval)
    numeric, tree, avals, _ = _arguments(leaves, tree)
    _calls[0] += 1
    prim = _primitive(fun, shape, tree, avals, (), True, options, method)
    events = _event_list(events) if events is not None else []
    found = prim.solve_c(y0.reshape(-1), t0, tf, numeric, t_eval, dense_output, events)
    sol = None
    if dense_output:
        from scipy.integrate._ivp.rk import Dop853DenseOutput, RkDenseOutput
        kind = Dop853DenseOutput if method == "DOP853" else RkDenseOutput
        pieces = [kind(a, b, y, c) for a, b, y, c in found.interpolants]
        # (SciPy's segments end at the steps' ends, the last at a terminal event's time)
        ts = found.t if t_eval is None else \
            np.array([t0] + [p[1] for p in found.interpolants[:-1]] + [found.t_last])
        sol = _dense_class()(ts, pieces)
        sol._traced = lambda: _plain_traced_solution(fun, shape, y0, t_span, args, method,
                                                     options, found)
        if len(shape) != 1:
            sol = _ShapedSolution(sol, shape)
    y = found.y.reshape(shape + found.y.shape[1:])
    y_events = found.y_events
    if y_events is not None:       # (SciPy's: an event that never occurred has shape (0,))
        y_events = [np.reshape(ye, (-1,) + shape) if len(shape) != 1 else
                    ye if len(ye) else np.zeros(0) for ye in y_events]
    return _ode_result(t=found.t, y=y, sol=sol, t_events=found.t_events, y_events=y_events,
                       nfev=found.nfev, njev=0, nlu=0, status=found.status,
                       message=found.message, success=found.status >= 0)


def _event_limits(events):
    """SciPy's reading of events' attributes (`prepare_events`): how many occurrences
    of each end the solve (inf: none do) and the direction of the crossings that
    count."""
    limits = np.empty(len(events))
    direction = np.empty(len(events))
    for i, event in enumerate(events):
        terminal = getattr(event, "terminal", None)
        direction[i] = getattr(event, "direction", 0)
        if terminal is None or terminal == 0:
            limits[i] = np.inf
        elif int(terminal) == terminal and terminal > 0:
            limits[i] = terminal
        else:
            raise ValueError("The `terminal` attribute of each event must be a boolean or "
                             "positive integer.")
    return limits, direction


def _event_time(prim, event, value, y0, t0, numeric, tree, shape):
    """The time of one occurrence of `event`, `value` where the solve on values found
    it, as a traced value: the root τ of g(τ) = event(τ, y(τ), *args), y(τ) the solution
    from (t0, y0), so that by the implicit function theorem (`custom_root`)
    dτ = -(∂g/∂θ + ∂g/∂y ∂y/∂θ) dθ / (∂g/∂t + ∂g/∂y f), for θ each of y0, t0 and args."""
    from ..implicit import custom_root

    def condition(tau, y0, t0, *leaves):
        y = prim(y0, wnp.concatenate([t0, wnp.reshape(tau, (1,))]), *leaves)[-1]
        return event(tau, wnp.reshape(y, shape), *unflatten(tree, list(leaves)))

    found = custom_root(condition)(lambda x0, *params: value)
    return found(float(value), y0, t0, *numeric)


def _event_results(prim, times, found, y0, t0, numeric, shape):
    """SciPy's t_events and y_events, traced: each event's times, and the states there
    (one solve through all the event times, in the direction of integration)."""
    t_events = [wnp.stack(ts) if ts else np.zeros(0) for ts in times]
    every = sorted(((float(tv), j, k) for j, ts in enumerate(found.t_events)
                    for k, tv in enumerate(ts)), reverse=bool(found.t[-1] < found.t[0]))
    rows = {}
    if every:
        ys = prim(y0, wnp.concatenate([t0, wnp.stack([times[j][k] for _, j, k in every])]),
                  *numeric)
        rows = {(j, k): ys[1 + i] for i, (_, j, k) in enumerate(every)}
    y_events = [wnp.reshape(wnp.stack([rows[(j, k)] for k in range(len(ts))]),
                            (len(ts),) + shape) if ts else _no_events(shape)
                for j, ts in enumerate(times)]
    return t_events, y_events


def _no_events(shape):
    """y_events of an event that never happened: SciPy's (0,) for a state of one
    dimension, and (0,) + shape for another (as the plain solve reshapes SciPy's)."""
    return np.zeros(0) if len(shape) == 1 else np.zeros((0,) + shape)


def _terminal_time(times, found, span):
    """The traced time of the event occurrence that ended the solve: the last of all
    occurrences in the direction of integration, since none can come after it.  (Not
    the one nearest SciPy's last t, which with t_eval is the last time of t_eval
    reached, not the event's.)"""
    sign = -1.0 if span is not None and span[1] < span[0] else 1.0
    return max(((sign * float(found.t_events[j][k]), times[j][k])
                for j, ts in enumerate(times) for k in range(len(ts))),
               key=lambda pair: pair[0])[1]


def _args_tuple(args):
    """solve_ivp's args as a tuple (None: none), with SciPy's error where they cannot
    be unpacked."""
    if args is None:
        return ()
    if isinstance(args, tuple):
        return args
    try:
        return tuple(args)
    except TypeError as e:                      # (SciPy's error)
        raise TypeError("Supplied 'args' cannot be unpacked. Please supply `args` as a "
                        f"tuple (e.g. `args=({args},)`)") from e


def _float_times(t):
    t = wnp.asarray(t)
    return t if t.dtype.kind == "f" else wnp.astype(t, np.float64)


def _check_t_eval(span, t_eval):
    """SciPy's checks of t_eval, with its messages, where values are known."""
    t0, tf = span
    if np.any(t_eval < min(t0, tf)) or np.any(t_eval > max(t0, tf)):
        raise ValueError("Values in `t_eval` are not within `t_span`.")
    d = np.diff(t_eval)
    if tf > t0 and np.any(d <= 0) or tf < t0 and np.any(d >= 0):
        raise ValueError("Values in `t_eval` are not properly sorted.")


def _ode_result(**fields):
    from scipy.integrate._ivp.ivp import OdeResult
    return OdeResult(**fields)


def _ivp_plain(fun, t_span, y0, method, t_eval, dense_output, events, vectorized, args,
               options):
    """SciPy's solve_ivp itself, given wengert's ∂f/∂y for an implicit method; a y0 of
    several dimensions (or none) goes through a flat view."""
    si = _scipy_integrate()
    shape = np.shape(y0)
    y0 = np.asarray(y0)
    fun0, options0 = fun, options           # (the user's, for a traced sol(t))
    jac = None
    if options.get("jac") is None and _exact_jacobian_wanted(method, options):
        jac = _plain_jacobian(fun, shape, y0, t_span, args, method, options)
    if len(shape) != 1:
        fun, events, options = _flat_view(fun, shape, events, options)
        y0 = y0.reshape(-1)
    if jac is not None:
        options = dict(options, jac=jac)
    try:
        found = si.solve_ivp(fun, t_span, y0, method=method, t_eval=t_eval,
                             dense_output=dense_output, events=events,
                             vectorized=vectorized, args=args, **options)
    except (TypeError, ValueError):
        _diagnose_ivp(fun, y0, t_span, args, events, options.get("jac"))
        raise
    if found.sol is not None and isinstance(found.sol, si.OdeSolution):
        # SciPy's own object, which also takes a traced time (wg.grad in t alone)
        found.sol.__class__ = _dense_class()
        found.sol._traced = lambda: _plain_traced_solution(fun0, shape, y0, t_span, args,
                                                           method, options0, found)
    if len(shape) != 1:
        found.y = found.y.reshape(shape + found.y.shape[1:])
        if found.y_events is not None:
            found.y_events = [np.reshape(ye, (-1,) + shape) for ye in found.y_events]
        if found.sol is not None:
            found.sol = _ShapedSolution(found.sol, shape)
    return found


_DENSE = []


def _dense_class():
    """SciPy's `OdeSolution`, whose call also takes a traced time t: then ``sol(t)`` is
    `_TracedSolution`'s, one solve through t (the ODE's values, differentiable in t;
    SciPy's interpolant has no such derivative).  A plain t is SciPy's call itself."""
    if not _DENSE:
        si = _scipy_integrate()

        class OdeSolution(si.OdeSolution):
            __doc__ = si.OdeSolution.__doc__
            __module__ = si.OdeSolution.__module__
            __qualname__ = "OdeSolution"

            def __call__(self, t):
                if _traced_time(t):
                    made = self.__dict__.get("_made")
                    if made is None:
                        made = self._made = self._traced()
                    return made(t)
                return super().__call__(t)

            def __reduce__(self):
                # pickled (and copied) as SciPy's own: the traced call is no data
                return _plain_ode_solution, ({k: v for k, v in self.__dict__.items()
                                              if k not in ("_traced", "_made")},)
        _DENSE.append(OdeSolution)
    return _DENSE[0]


def _plain_ode_solution(state):
    """SciPy's `OdeSolution` with the attributes `state` (unpickling `_dense_class`'s)."""
    sol = object.__new__(_scipy_integrate().OdeSolution)
    sol.__dict__.update(state)
    return sol


def _traced_time(t):
    return type(t) is Node or isinstance(t, (list, tuple)) and any(
        type(x) is Node for x in flatten(t)[0])


def _plain_traced_solution(fun, shape, y0, t_span, args, method, options, found):
    """The `_TracedSolution` of a solve on plain values: its y0, t0 and args constants,
    only the times it is asked for traced."""
    numeric, tree, avals, active = _arguments(*flatten(() if args is None else tuple(args)))
    prim = _primitive(fun, shape, tree, avals, active, True, options, method)
    t0 = np.asarray(t_span, dtype=np.float64).reshape(-1)[:1]
    end = found.t[-1] if len(found.t) else float(np.ravel(t_span)[-1])   # (t_eval=[])
    return _TracedSolution(prim, np.asarray(y0, dtype=np.float64).reshape(-1), t0, numeric,
                           shape, end, method)


def _plain_jacobian(fun, shape, y0, t_span, args, method, options):
    """wengert's ∂f/∂y for SciPy's plain solve, or None (SciPy's finite differences; and
    where the arguments are wrong, SciPy's error).  Made by the primitive a traced call
    would use, which keeps the compiled code for the next solve of the same problem."""
    try:
        t0 = float(np.ravel(np.asarray(t_span, dtype=np.float64))[0])
        leaves, tree = flatten(() if args is None else tuple(args))
    except (TypeError, ValueError, IndexError):
        return None
    if y0.dtype.kind not in "biuf" or not np.all(np.isfinite(y0)) or any(
            np.iscomplexobj(x) for x in leaves if _numeric(x)):
        return None
    numeric, tree, avals, active = _arguments(leaves, tree)
    _calls[0] += 1
    prim = _primitive(fun, shape, tree, avals, active, True, options, method)
    return prim.jacobian(numeric, y0.reshape(-1).astype(np.float64), t0)


def _flat_view(fun, shape, events, options):
    """fun, the events and a jac of the user's on SciPy's flat state, for a y0 of another
    shape: y as the user's shape (plus the columns of a vectorized call)."""
    n = math.prod(shape)

    def flat_fun(t, y, *args):
        columns = y.shape[1:]
        out = fun(t, y.reshape(shape + columns), *args)
        if type(out) is Node:
            raise _closure_error(getattr(fun, "__name__", "fun"), "solve_ivp")
        out = np.asarray(out)
        if out.size != y.size:
            raise _size_error("solve_ivp", out.shape, shape + columns, n)
        return out.reshape((n,) + columns)

    if events is not None:
        events = [_shaped_event(e, shape) for e in _event_list(events)]
    if callable(options.get("jac")):
        options = dict(options, jac=_flat_jacobian(options["jac"], shape))
    return flat_fun, events, options


def _event_list(events):
    return list(events) if isinstance(events, (list, tuple)) else [events]


def _shaped_event(event, shape, args=()):
    """A user's ``event(t, y, *args)`` on SciPy's flat state: y in `shape`, `args` bound
    (or, if none are given, SciPy's passed on), terminal and direction kept."""
    def g(t, y, *scipy_args):
        out = event(t, y.reshape(shape), *(args or scipy_args))
        if type(out) is Node:                       # (SciPy calls it on numbers)
            raise _closure_error(f"the event function {getattr(event, '__name__', 'event')}",
                                 "solve_ivp")
        return out
    for attr in ("terminal", "direction"):          # (how SciPy reads an event)
        if hasattr(event, attr):
            setattr(g, attr, getattr(event, attr))
    return g


class _TracedSolution:
    """solve_ivp's ``sol`` on traced values: ``sol(t)`` is the state at the time(s) t,
    shaped as `_ShapedSolution`'s (``y0.shape`` for a time, ``y0.shape + (len(t),)``
    for a 1-D array of them), found by one more solve of the node's primitive from
    (t0, y0) through the times asked for, not by SciPy's interpolant.

    A solve because its derivatives are the solution's: the primitive has exact rules
    (adjoint, sensitivities) in y0, t0, args and every output time, to any order, where
    the derivative of an interpolating polynomial is not the derivative of the
    solution.  Its values agree with SciPy's ``sol(t)`` to the solver's tolerance, not to
    the last bit (this solve ends at the last time asked for, not at tf, so its last
    steps are not SciPy's).  A time outside [t_min, t_max] is solved for too, the
    solution of the ODE there (SciPy extrapolates its first or last polynomial): times
    before t0 by a solve backwards from t0, the others forwards, each solve through its
    times sorted."""

    def __init__(self, prim, y0, t0, leaves, shape, t_end, method):
        self._prim, self._y0, self._t0, self._leaves = prim, y0, t0, leaves
        self.shape = shape
        self.method = method if isinstance(method, str) else method.__name__
        ends = [_value(t0), _value(t_end)]
        known = all(v is not None for v in ends)
        ends = [float(np.ravel(v)[0]) for v in ends] if known else None
        #: The interval SciPy's solution would cover (t_span, up to a terminal event's
        #: time), plain floats; None under tracing without values.
        self.t_min = min(ends) if known else None
        self.t_max = max(ends) if known else None

    def __repr__(self):
        span = f"[{self.t_min:g}, {self.t_max:g}]" if self.t_min is not None else \
            "[t0, tf] (traced)"
        return (f"<traced solution of {self._prim.system.name} on {span} by {self.method}: "
                f"sol(t) of shape {self.shape} (+ (len(t),)), one solve through t>")

    def __call__(self, t):
        """y at the time t (y0's shape) or the 1-D array of times t (``y0.shape +
        (len(t),)``, time last), traced: a node to differentiate in t too."""
        t = _float_times(t)
        if len(t.shape) > 1:
            raise ValueError(f"solve_ivp: sol(t) takes a time or a 1-D array of times, got "
                             f"shape {tuple(t.shape)}")
        m = t.shape[0] if t.shape else 1
        if m == 0:
            return np.zeros(self.shape + (0,))
        ys = self._states(wnp.reshape(t, (m,)))
        if not t.shape:
            return wnp.reshape(ys[0], self.shape)
        return wnp.transpose(ys) if len(self.shape) == 1 else \
            wnp.moveaxis(wnp.reshape(ys, (m,) + self.shape), 0, -1)

    def _solve(self, times):
        """The states at `times` (monotone away from t0), rows of (len(times), n)."""
        return self._prim(self._y0, wnp.concatenate([self._t0, times]), *self._leaves)[1:]

    def _states(self, t):
        """The states at the m times t, in their order: (m, n).  The primitive's times
        go one way from t0, so t is sorted, split at t0 and the rows put back."""
        m, t0 = t.shape[0], self._t0[0]
        if _value(t) is not None and _value(t0) is not None:
            # (the usual case, eager: the order and the split are constants)
            order = np.argsort(_value(t), kind="stable")
            ts = t if np.array_equal(order, np.arange(m)) else t[order]
            k = int(np.searchsorted(np.asarray(_value(ts)), float(_value(t0))))
            parts = []
            if k:                             # before t0: backwards from it
                parts.append(wnp.flip(self._solve(wnp.flip(ts[:k], 0)), 0))
            if k < m:
                parts.append(self._solve(ts[k:]))
            ys = parts[0] if len(parts) == 1 else wnp.concatenate(parts)
            return ys if ts is t else ys[np.argsort(order)]
        # tracing without values: the order and the split are graph operations, and
        # both solves are made (one of them, where no time lies on its side, solves
        # from t0 to t0: no SciPy call)
        order = wnp.argsort(t) if m > 1 else None
        ts = t if order is None else wnp.take_along_axis(t, order, axis=0)
        later = ts >= t0
        ahead = self._solve(wnp.where(later, ts, t0))
        behind = wnp.flip(self._solve(wnp.flip(wnp.where(later, t0, ts), 0)), 0)
        ys = wnp.where(wnp.reshape(later, (m, 1)), ahead, behind)
        if order is None:
            return ys
        return wnp.take_along_axis(ys, wnp.reshape(wnp.argsort(order), (m, 1)), axis=0)


class _ShapedSolution:
    """SciPy's dense output (`OdeSolution`) of a state of `shape`: ``sol(t)`` of shape
    ``shape`` for a time, ``shape + (len(t),)`` for an array of them."""

    def __init__(self, sol, shape):
        self.sol = sol
        self.shape = shape

    def __call__(self, t):
        out = self.sol(t)
        if _traced_time(t):             # (`_TracedSolution`'s, in the state's shape)
            return out
        return out.reshape(self.shape + out.shape[1:])

    def __getattr__(self, name):        # t_min, t_max, ts, interpolants: SciPy's
        return getattr(self.sol, name)


def _diagnose_ivp(fun, y0, t_span, args, events=None, jac=None):
    """SciPy failed: say so clearly if fun (or an event function, or jac) closes over a
    traced value, or if fun returns the wrong number of derivatives (SciPy's message is
    a failed broadcast inside a step)."""
    y0 = np.asarray(y0)
    t0, args = float(t_span[0]), (() if args is None else args)
    others = [("the event function ", e) for e in (
        [] if events is None else [events] if callable(events) else events)]
    for what, g in others + ([("jac ", jac)] if callable(jac) else []):
        try:
            out = g(t0, y0, *args)
        except Exception:                       # noqa: BLE001  (SciPy's error stands)
            continue
        if any(type(x) is Node for x in flatten(out)[0]):
            raise _closure_error(what + getattr(g, "__name__", "function"), "solve_ivp")
    try:
        out = fun(t0, y0, *args)
    except Exception:
        return
    if any(type(x) is Node for x in flatten(out)[0]):
        raise _closure_error(getattr(fun, "__name__", "fun"), "solve_ivp")
    if np.size(out) != y0.size:
        raise ValueError(f"solve_ivp: fun returned dy/dt of shape {np.shape(out)} for a "
                         f"state y of shape {y0.shape}; it must return one derivative per "
                         f"element of y ({y0.size} numbers)")
