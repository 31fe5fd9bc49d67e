"""Derivatives of solutions, by the implicit function theorem: `custom_root`, and the
`Solution` primitive that `wengert.scipy.optimize` builds on.

A solver finds x with F(x, θ) = 0 by some algorithm: Newton's method, a library, SciPy.
Differentiating the algorithm's steps is slow and gives the derivative of the algorithm,
not of the solution.  The solution's own derivative needs only F: differentiating
F(x*(θ), θ) = 0 in θ gives

    ∂F/∂x · dx*/dθ = -∂F/∂θ,   so   ẋ = -J⁻¹ (∂F/∂θ θ̇)   and   θ̄ = -(∂F/∂θ)ᵀ J⁻ᵀ x̄

with J = ∂F/∂x at the solution (which must be regular: an isolated root).  A solve on
traced values is one `Solution` node: the solver runs on plain numbers, nothing of it is
recorded, and the node's rules solve with J.  By default they build J (a dense Jacobian
by forward sweeps, batched) and factorise it; for large n, ``linear_solve="cg"`` or
``"gmres"`` solves matrix-free instead, by Krylov iterations that only ask for products
J y (a `jvp` of F) or Jᵀ y (a `vjp`).  Such a solve is itself a root problem,
y ↦ J(x, θ) y - v = 0 with parameters (x, θ, v), so it is a `Solution` node too, whose
rules are again matrix-free solves with J: everything is written with wengert's own
transformations, so it can be differentiated again, and a level of it is only built
when a sweep asks for it.  docs/optimize.md has the tutorial.

Example:
    >>> import wengert as wg
    >>> @wg.custom_root(lambda x, a: x ** 3 - a)          # x³ = a
    ... def cube_root(x0, a):
    ...     x = x0
    ...     for _ in range(50):                           # Newton's steps, on plain floats
    ...         x = x - (x ** 3 - a) / (3 * x ** 2)
    ...     return x
    >>> print(round(cube_root(1.0, 8.0), 12), wg.grad(cube_root, argnums=1)(1.0, 8.0))
    2.0 0.08333333333333333
"""
from __future__ import annotations

import functools
import math
import warnings

import numpy as np

from .graph.active import recording
from .graph.node import Node
from .primitives.registry import Primitive
from .tree import flatten, hold_constants, unflatten
from . import numpy as wnp

__all__ = ["custom_root", "Solution", "cg", "gmres", "LinearSolveError"]

LinAlgError = np.linalg.LinAlgError

#: The linear solves `custom_root` names (besides a function of yours).
LINEAR_SOLVES = ("dense", "cg", "gmres")

#: The iterative solves stop at ‖J y - v‖ ≤ TOL ‖v‖.  y's relative error is then at most
#: κ(J) TOL, so a derivative keeps ~8 digits for a condition number κ up to ~100, and
#: more for the well-conditioned systems these solvers are for.
TOL = 1e-10

#: GMRES keeps this many Krylov vectors before it restarts: RESTART n numbers of storage
#: and ~RESTART² n flops a cycle, against convergence that slows when restarted too soon.
RESTART = 30


def custom_root(condition, linear_solve="dense", *, tol=None, maxiter=None,
                restart=None):
    """Give a solver the derivative of its solution: ``@custom_root(condition)`` on
    ``solve(x0, *params)``, which returns an x with ``condition(x, *params) = 0``.

    The decorated function is `solve` on plain values.  Where params (or x0) hold traced
    values, solve still runs on plain numbers, by any means (a loop of Newton steps, a
    compiled library), and its result is differentiable with respect to params by the
    implicit function theorem (see the module's doc): ``dx/dθ = -(∂F/∂x)⁻¹ ∂F/∂θ`` with
    F = condition, at any order.  The derivative with respect to x0 is zero.  This is
    jaxopt's ``custom_root`` decorator; JAX's ``lax.custom_root``, whose f closes over
    the parameters, is `wengert.lax.custom_root`, built on the same `Solution` node.

    The derivative's rules solve with J = ∂F/∂x at the solution, as `linear_solve` says:

    * ``"dense"``: J by n forward sweeps (batched), then an LU factorisation: exact, and
      the fastest for n up to a few hundred.
    * ``"cg"``: conjugate gradients, for J symmetric positive definite (the Hessian of a
      strict minimum, when the condition is a gradient).  Matrix-free: each step is one
      product J y or Jᵀ y, a sweep over the condition's graph (recorded once a solve),
      so a derivative costs a number of products set by J's conditioning, not by n,
      and no n×n matrix.
    * ``"gmres"``: restarted GMRES, the same for a general (regular) J.
    * a function ``linear_solve(matvec, b) -> y`` of yours, which solves
      ``matvec(y) = b`` (flat float64 arrays of x's size) to the accuracy it sees fit:
      a preconditioned solver, a library's (jaxopt's ``custom_root`` takes ``solve=``
      so).  It runs on plain numbers; it is asked for both J and Jᵀ.

    The iterative solves are `Solution` nodes themselves (of J y = v), so their
    derivatives are matrix-free solves again: second derivatives work with each choice.

    Args:
        condition: ``condition(x, *params)``, written with `wengert.numpy` (or NumPy
            functions, which dispatch to it): as many numbers as x has, zero at the
            solution, with a regular Jacobian there.
        linear_solve: ``"dense"`` (the default), ``"cg"``, ``"gmres"``, or a function
            ``linear_solve(matvec, b) -> y``.
        tol: for cg and gmres: stop at a residual ‖J y - v‖ ≤ tol ‖v‖ (default 1e-10;
            y's relative error is then at most κ(J) tol).
        maxiter: for cg and gmres: the most steps one solve may take, each one product
            with J (default 10 n); beyond it, LinearSolveError.
        restart: for gmres: the Krylov vectors kept before it restarts (default 30).

    Returns:
        A decorator; the decorated ``solve(x0, *params)`` returns x in x0's shape
        (float64).  x0 is an array or a number; params numbers, arrays or pytrees of
        them (other leaves, a string or an option, are passed as they are).

    Raises: ValueError at once for an unknown `linear_solve` or options it does not
    take.  Where traced: ValueError if solve or condition returns the wrong number of
    values, or if solve computes with a traced value that is not among its arguments (a
    closure: its derivative would be lost); numpy.linalg.LinAlgError if ∂F/∂x is
    singular at the solution; `LinearSolveError` (a LinAlgError, naming the residual
    reached and the option to change) if cg or gmres does not reach tol within maxiter
    or stalls short of it, or cg meets a J that is not positive definite.

    Example:
        >>> import numpy as np, wengert as wg, wengert.numpy as wnp
        >>> def stationary(p, P):                       # p = p P, Σp = 1 (a Markov chain)
        ...     return wnp.concatenate([(p @ P - p)[1:], wnp.sum(p, keepdims=True) - 1])
        >>> @wg.custom_root(stationary)
        ... def steady_state(p0, P):
        ...     p = p0
        ...     for _ in range(500):                   # power iteration, plain NumPy
        ...         p = p @ P
        ...     return p
        >>> P = np.array([[0.9, 0.1], [0.5, 0.5]])
        >>> steady_state(np.array([0.5, 0.5]), P).round(6)    # (5/6, 1/6)
        array([0.833333, 0.166667])
        >>> # d p₀ / d P₀₁ by the closed form p₀ = P₁₀ / (P₀₁ + P₁₀): -P₁₀ / (P₀₁ + P₁₀)²
        >>> grad = wg.grad(lambda P: steady_state(np.array([0.5, 0.5]), P)[0])(P)
        >>> print(round(grad[0, 1], 6), round(-0.5 / 0.6 ** 2, 6))
        -1.388889 -1.388889

        Matrix-free: x + x³/3 = θ, elementwise, so J = diag(1 + x²) is symmetric
        positive definite, and dx/dθ = 1/(1 + x²):

        >>> @wg.custom_root(lambda x, t: x + x ** 3 / 3 - t, linear_solve="cg")
        ... def solve(x0, t):
        ...     x = x0
        ...     for _ in range(50):
        ...         x = x - (x + x ** 3 / 3 - t) / (1 + x ** 2)
        ...     return x
        >>> t = np.linspace(0.0, 2.0, 1000)
        >>> g = wg.grad(lambda t: wnp.sum(solve(np.zeros(1000), t)))(t)
        >>> x = solve(np.zeros(1000), t)
        >>> float(np.max(np.abs(g - 1 / (1 + x ** 2)))) < 1e-9     # (tol: 1e-10)
        True
    """
    if not callable(condition):
        raise TypeError(f"custom_root needs a condition function, got {condition!r:.40}")
    linear = _LinearSolve(linear_solve, tol, maxiter, restart)

    def decorate(solve):
        name = getattr(solve, "__name__", "solve")

        @functools.wraps(solve)
        def solved(x0, *params):
            if not traced(x0, params):
                return solve(x0, *params)

            def condition_of(shape, tree):
                n = math.prod(shape)

                def F(x, *leaves):
                    out = flat_out(condition(wnp.reshape(x, shape), *unflatten(tree, leaves)))
                    if out.shape != (n,):
                        raise ValueError(
                            f"custom_root: the condition of {name} returned {out.shape[0]} "
                            f"values for an x of {n}; it needs one per element of x")
                    return out
                return F

            def solve_of(shape, tree):
                def run(x0, leaves):
                    x = check_plain(solve(x0.reshape(shape), *unflatten(
                        tree, plain_leaves(leaves))), "custom_root", name)
                    x = np.asarray(x, dtype=np.float64)
                    if x.size != x0.size:
                        raise ValueError(f"custom_root: {name} returned {x.size} numbers for "
                                         f"an x0 of {x0.size}")
                    return x.reshape(-1), None
                return run
            return solution("custom_root", name, x0, params, condition_of, solve_of,
                            linear_solve=linear)[0]
        return solved
    return decorate


# --------------------------------------------------------------------------------------
# the primitive
# --------------------------------------------------------------------------------------
class _Problem:
    """A problem ``F(x, θ) = 0`` on a flat x of n numbers, θ the numeric leaves of args.

    `condition(x, *leaves)` is F, written with wengert's functions so that it works on
    plain and traced values alike; `solve(x0, leaves)` runs the solver on plain ones and
    returns (the flat solution, anything else the solver returned); `linear` (a
    `_LinearSolve`) says how the derivative's rules solve with J = ∂F/∂x."""

    def __init__(self, who, name, n, condition, solve, active, linear, check_regular=True):
        self.who = who
        self.name = name
        self.n = n
        self.condition = condition
        self.solve = solve
        self.active = active      # positions of the leaves that may carry derivatives
        self.linear = linear
        self._systems = {}        # (transposed, active) -> the Solution of J y = v
        self.check_regular = check_regular    # whether _dense refuses a degenerate J
        self.stopped_short = False  # whether the last solve said it did not converge

    def solve_linear(self, x, leaves, v, transpose):
        """J⁻¹ v (J⁻ᵀ v if `transpose`), J = ∂F/∂x at (x, leaves), on values or traced."""
        if transpose and self.linear.no_transpose:
            # (raised where the reverse sweep is traced, not where its solve would run:
            # under compile that is before the compiled function is ever called)
            raise TypeError(self.linear.no_transpose)
        if self.linear.method == "dense":
            return self._dense(x, leaves, v, transpose)
        # a node of its own: the iteration runs when the node is evaluated, and the
        # node's derivatives (asked only by a sweep of a higher order) solve with J again
        args = (x, *leaves, v)
        active = tuple(k for k, a in enumerate(args)
                       if type(a) is Node and a.dtype.kind == "f")
        prim = self._systems.get((transpose, active))
        if prim is None:
            prim = self._systems[transpose, active] = Solution(
                _LinearSystem(self, transpose, active))
        return prim(np.zeros(self.n), *args)

    def _dense(self, x, leaves, v, transpose):
        """A dense Jacobian by forward sweeps (batched), then one LU solve: exact, and
        cheap for the n of the problems most solvers take."""
        from .api import jacfwd
        jac = jacfwd(lambda x: self.condition(x, *leaves))(x)
        why = self._irregular(x, leaves, jac) if self.check_regular else None
        if why is None:
            try:
                return wnp.linalg.solve(wnp.transpose(jac) if transpose else jac, v)
            except LinAlgError:
                why = ""
        raise LinAlgError(
            f"{self.who}: the derivative of the condition the solution satisfies (∂F/∂x: F "
            "is fun for root, the gradient for minimize, the condition for custom_root, the "
            "KKT conditions for a constrained minimize) is singular at the solution, or "
            "nearly, so the solution is no differentiable function of the parameters there "
            f"(a double root, a flat minimum, a constraint that holds with a zero "
            f"multiplier){why}")

    def _irregular(self, x, leaves, jac):
        """Why J = ∂F/∂x at the computed solution says nothing about the true one, or
        None.  At a double root or a flat minimum J vanishes at the solution, and the
        solver's stopping error e leaves J ≈ F''·e: small, nonzero, as big as the noise,
        and dx/dθ = -J⁻¹ ∂F/∂θ comes out large and arbitrary.  A Newton step s = -J⁻¹ F(x)
        then runs along J's weakest direction, about e/2 long, and J·s changes by half
        itself over it (a quarter is the limit here), where at a regular solution it
        changes by |F''·e/J|, the relative error the solve leaves in the derivative
        anyway.  On the values (traced ones' too; none where traced without them): one
        more F and one forward sweep of it.
        """
        from .api import jvp
        x, jac, *leaves = [a.value if type(a) is Node else a for a in (x, jac, *leaves)]
        if x is None or jac is None or any(a is None for a in leaves):
            return None                 # (traced without values: compile's)
        if self.stopped_short:
            # (no solution to test: the Newton step runs to the one the solver missed, and
            # would read a regular J as a degenerate one; its front end has warned)
            return None
        jac = np.asarray(jac, dtype=np.float64)
        with recording(None), np.errstate(all="ignore"):
            residual = np.asarray(self.condition(x, *leaves), dtype=np.float64)
            try:
                step = np.linalg.solve(jac, residual)
            except LinAlgError:
                return ""
            if not np.all(np.isfinite(step)) or not np.any(step):
                return None
            if np.linalg.norm(step) > 0.1 * (1.0 + np.linalg.norm(x)):
                # a solve that stopped short though the solver's own test passed (say, a
                # gradient tolerance met by a badly scaled objective)
                warnings.warn(
                    f"{self.who}: the computed solution is far from satisfying the "
                    f"condition of {self.name} (a Newton step from it is "
                    f"{np.linalg.norm(step):.1e} long), though the solver reported success; "
                    "the derivatives of its solution assume it is one: tighten the "
                    "solver's tolerance or scale the problem", RuntimeWarning,
                    stacklevel=_caller_level())
                return None
            # J(x - s)·s against J(x)·s = F(x): one forward sweep, not another J
            moved = np.asarray(jvp(lambda x: self.condition(x, *leaves), (x - step,),
                                   (step,))[1], dtype=np.float64)
            change = np.linalg.norm(np.linalg.solve(jac, moved - residual)) / \
                np.linalg.norm(step)
        if change <= 0.25:
            return None
        return (f": over one Newton step s from the computed solution (|s| = "
                f"{np.linalg.norm(step):.1e}), ∂F/∂x·s changes by {change:.0%} of itself")


def _converged(result):
    """Whether a solver's result says it converged: an OptimizeResult's `success`, a
    RootResults' (or newton's) `converged`; True for anything else."""
    for name in ("success", "converged"):
        flag = getattr(result, name, None)
        if flag is not None:
            return bool(np.all(flag))
    return True


def _caller_level():
    """The stack level of the first caller outside wengert, for a warning that points at
    user code (the solve runs at a depth that depends on the transformations around it)."""
    import os
    import sys
    package = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


class _LinearSystem(_Problem):
    """``J y = v`` (``Jᵀ y = v`` if `transposed`), J = ∂F/∂x of the problem `base` at x,
    as a root problem of its own: unknown y, parameters (x, *leaves, v), condition
    ``G = J y - v``.  Its solve is the iteration of `base.linear` on plain numbers, with
    the products of `_products`; G itself is written with `jvp` (`vjp`) of F, so that
    it differentiates where traced.

    Its rules need ∂G/∂y, which is J (Jᵀ) again, so they call back `base`'s solves: at
    any order the nodes are solves with J and Jᵀ (and their right-hand sides carry the
    higher derivatives of F), never with a derivative of J.  ∂G/∂x is F's second
    derivative, which G's `jvp`/`vjp` of F gives when differentiated."""

    def __init__(self, base, transposed, active):
        super().__init__(base.linear.method, f"{'J^T' if transposed else 'J'} of {base.name}",
                         base.n, self._condition, self._solve, active, base.linear)
        self.base = base
        self.transposed = transposed

    def _condition(self, y, x, *rest):
        from .api import jvp, vjp
        leaves, v = rest[:-1], rest[-1]
        F = lambda x: self.base.condition(x, *leaves)          # noqa: E731
        if self.transposed:
            return vjp(F, x)[1](y)[0] - v
        return jvp(F, (x,), (y,))[1] - v

    def _solve(self, y0, params):
        x, leaves, v = params[0], params[1:-1], params[-1]
        F = lambda x: self.base.condition(x, *leaves)          # noqa: E731
        return self.linear(_products(F, x, self.transposed),
                           np.asarray(v, dtype=np.float64), self.base, self.transposed), None

    def solve_linear(self, y, params, w, transpose):
        return self.base.solve_linear(params[0], params[1:-1], w,
                                      transpose != self.transposed)


def _products(F, x, transposed):
    """``y -> J y`` (``Jᵀ y`` if `transposed`), J = ∂F/∂x at x, on plain numbers, for an
    iteration that asks for many.  F is recorded once: its pullback gives Jᵀ y by one
    reverse sweep, and the pullback of that (linear) pullback J y by one more.  A `jvp`
    a product would record F anew each time, about five times slower."""
    from .api import jvp, vjp
    pullback = vjp(F, x)[1]
    if transposed:
        return lambda y: pullback(y)[0]
    try:
        twice = vjp(lambda c: pullback(c)[0], np.zeros(len(x)))[1]
    except Exception:       # noqa: BLE001  (a VJP rule that cannot be differentiated:
        #                     F's forward rules do without it)
        return lambda y: jvp(F, (x,), (y,))[1]
    return lambda y: twice(y)[0]


class Solution(Primitive):
    """The primitive of one solve: ``(x0, *leaves) -> x*``, flat, where
    ``F(x*, *leaves) = 0``.  Its rules are the implicit function theorem's,
    ``ẋ = -J⁻¹ (∂F/∂θ θ̇)`` and ``θ̄ = -(∂F/∂θ)ᵀ J⁻ᵀ x̄`` with ``J = ∂F/∂x`` at the
    solution, written with `wg.jvp`, `wg.vjp` and either `wg.jacfwd` and `linalg.solve`
    (dense) or another `Solution`, of ``J y = v`` (matrix-free), so they can be
    differentiated again.  x0 gets no derivative.  Not in the registry: one is made per
    call (as `odeint`'s).

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy import optimize
        >>> print(wg.trace(lambda c: optimize.brentq(lambda x, c: x ** 3 - c, 0.0, 4.0,
        ...                                          args=(c,)), 2.0))
        graph(c: f64[]):
          %2: f64[1] = brentq[<lambda>]([2.], c)
          %3: f64[] = getitem(%2, index=(0,))
          return %3

        A matrix-free rule's solve is a node too, ``gmres[J^T of ...]`` here (the
        cotangent's ``Jᵀ λ = x̄``); its value is GMRES's, run when it is evaluated:

        >>> import numpy as np
        >>> cube_root = wg.custom_root(lambda x, a: x ** 3 - a, linear_solve="gmres")(
        ...     lambda x0, a: np.cbrt(a))
        >>> print(wg.trace(wg.grad(lambda a: cube_root(1.0, a)), 8.0))
        graph(a: f64[]):
          %2: f64[1] = custom_root[<lambda>]([1.], a)
          %4: f64[1] = gmres[J^T of <lambda>]([0.], %2, a, [1.])
          %5: f64[1] = neg(%4)
          %6: f64[] = reshape(%5, shape=())
          %7: f64[] = neg(%6)
          return %7
    """

    def __init__(self, problem):
        super().__init__(f"{problem.who}[{problem.name}]", self._impl, cost="call",
                         abstract_eval=self._abstract_eval)
        self.problem = problem
        self.jvp = self._jvp_rule
        self.vjp = self._vjp_rule
        self.taylor = self._taylor_rule
        self.result = None          # what the solver returned besides x, the last time

    def _impl(self, x0, *leaves):
        with recording(None):       # plain numbers: the solver records nothing
            x, self.result = self.problem.solve(np.asarray(x0, dtype=np.float64), leaves)
        self.problem.stopped_short = not _converged(self.result)
        return np.asarray(x, dtype=np.float64).reshape(self.problem.n)

    def _abstract_eval(self, args, params):
        return (self.problem.n,), np.dtype(np.float64)

    def _solve_linear(self, x, leaves, v, transpose):
        return self.problem.solve_linear(x, leaves, v, transpose)

    def _of_active(self, x, leaves):
        """F at x as a function of the active leaves alone."""
        condition, active = self.problem.condition, self.problem.active

        def f(*picked):
            ls = list(leaves)
            for k, v in zip(active, picked):
                ls[k] = v
            return condition(x, *ls)
        return f

    def _jvp_rule(self, ts, x0, *rest):
        from .api import jvp
        leaves, x = rest[:-1], rest[-1]
        active = self.problem.active
        tangents = [ts[1 + k] for k in active]
        if all(t is None for t in tangents):
            return None
        primals = [leaves[k] for k in active]
        tangents = [wnp.zeros_like(p) if t is None else t for p, t in zip(primals, tangents)]
        u = jvp(self._of_active(x, leaves), primals, tangents)[1]
        return -self._solve_linear(x, leaves, u, transpose=False)

    def _vjp_rule(self, g, x0, *rest):
        from .api import vjp
        leaves, x = rest[:-1], rest[-1]
        active = self.problem.active
        out = [None] * (1 + len(leaves))
        if active:
            lam = self._solve_linear(x, leaves, g, transpose=True)
            pull = vjp(self._of_active(x, leaves), *[leaves[k] for k in active])[1]
            for k, c in zip(active, pull(-lam)):
                out[1 + k] = c
        return tuple(out)


    def _taylor_rule(self, xs, x, order):
        """Taylor mode: x(t) where F(x(t), θ(t)) = 0, θ(t) the leaves' series.  Order by
        order: F's t^k coefficient is J x_k plus terms of x_1..x_{k-1} alone, so with
        x_k = 0 it is that rest, r_k, and x_k = -J⁻¹ r_k (one more expansion of F and one
        solve with J per order, J the first-order rule's)."""
        from .taylor_mode import expand
        leaves = [s[0] for s in xs[1:]]
        given = [list(s[1:]) for s in xs[1:]]
        coefs = []
        for k in range(1, order + 1):
            series = [coefs + [None]] + [c[:k] for c in given]
            rest = expand(self.problem.condition, (x, *leaves), series, k)[0][k][0]
            coefs.append(-self._solve_linear(x, leaves, rest, transpose=False))
        return [x] + coefs


def solution(who, name, x0, args, condition_of, solve_of, linear_solve="dense",
             check_regular=True):
    """The traced solve: x0 and args' numeric leaves into a `Solution` node.

    `condition_of(shape, tree)` gives F(x, *leaves) for x flat; `solve_of(shape, tree)` the
    plain solve (x0 flat, leaves) -> (x flat, what else the solver returned).  `who` and
    `name` name the node and the errors; `linear_solve` is `custom_root`'s.  Returns (x in
    x0's shape, the primitive, shape, tree, leaves).  `check_regular`: whether the dense
    solve refuses a nearly singular ∂F/∂x (`_Problem._irregular`)."""
    if not isinstance(linear_solve, _LinearSolve):
        linear_solve = _LinearSolve(linear_solve, who=who)
    x0 = wnp.asarray(x0)
    if x0.dtype.kind == "c":
        raise TypeError(f"{who}: complex values are not supported (the solvers are real); "
                        "write a complex unknown as its real and imaginary parts")
    if x0.dtype.kind != "f":
        x0 = wnp.astype(x0, np.float64)
    shape = tuple(x0.shape)
    n = math.prod(shape)
    leaves, tree = flatten(args)
    numeric, tree = hold_constants(tree, leaves, lambda v: not numeric_leaf(v))
    for v in numeric:
        if (v.dtype.kind if type(v) is Node else np.asarray(v).dtype.kind) == "c":
            raise TypeError(f"{who}: complex values are not supported (the solvers are "
                            "real); pass a complex parameter as its real and imaginary parts")
    active = tuple(k for k, v in enumerate(numeric) if type(v) is Node and v.dtype.kind == "f")
    problem = _Problem(who, name, n, condition_of(shape, tree),
                       solve_of(shape, tree), active, linear_solve, check_regular)
    prim = Solution(problem)
    x = prim(x0 if shape == (n,) else wnp.reshape(x0, (n,)), *numeric)
    return (x if shape == (n,) else wnp.reshape(x, shape)), prim, shape, tree, numeric


# --------------------------------------------------------------------------------------
# helpers of the solvers' front-ends
# --------------------------------------------------------------------------------------
def numeric_leaf(x):
    """Whether a leaf of args is a number or an array of numbers (else a constant)."""
    return type(x) is Node or isinstance(x, (int, float, np.number, np.ndarray)) and \
        np.asarray(x).dtype.kind in "biuf"


def traced(*trees):
    """Whether any leaf of the pytrees is traced."""
    return any(type(v) is Node for t in trees for v in flatten(t)[0])


def plain_leaves(leaves):
    """The values of traced leaves (a solve runs on numbers)."""
    return [v.value if type(v) is Node else v for v in leaves]


def closure_error(who, name):
    return ValueError(
        f"{who}: {name} computes with a traced value that is not among its arguments (a "
        "variable it closes over); pass that value as an argument, so that its derivative "
        "goes through the solution")


def check_plain(out, who, name):
    """`out`, a function's result on plain numbers, holds no traced value (else it closes
    over one, and that derivative would be lost)."""
    if any(type(v) is Node for v in flatten(out)[0]):
        raise closure_error(who, name)
    return out


def flat_out(out):
    """A function's result (an array, a list of numbers or traced values) as a flat
    vector."""
    return wnp.reshape(out if type(out) is Node else wnp.asarray(out), (-1,))


# --------------------------------------------------------------------------------------
# the linear solves of the rules
# --------------------------------------------------------------------------------------
class LinearSolveError(LinAlgError):
    """An iterative linear solve failed: it did not reach its tolerance within maxiter
    products, or CG met a matrix that is not positive definite, or GMRES one that is
    singular.  A `numpy.linalg.LinAlgError`, as a singular J of the dense solve is, so
    one ``except`` catches both.  `reason` says which: "maxiter", "stalled" (the
    residual stopped falling short of tol: rounding, an ill-conditioned A),
    "indefinite", "singular" or "nonfinite" (nan or inf in a product); `residual` is
    the relative residual ‖b - A y‖ / ‖b‖ reached, `iterations` the steps taken.

    Example:
        >>> import numpy as np
        >>> from wengert.implicit import cg, LinearSolveError
        >>> try:
        ...     cg(lambda y: np.array([1.0, -1.0]) * y, np.array([1.0, 2.0]))
        ... except LinearSolveError as e:
        ...     print(e)
        CG needs A symmetric positive definite, but pᵀAp = -3 ≤ 0 at step 1
    """

    def __init__(self, message, reason, residual=None, iterations=None):
        super().__init__(message)
        self.reason = reason
        self.residual = residual
        self.iterations = iterations


class _LinearSolve:
    """How a problem's rules solve J y = v: `method` "dense", "cg", "gmres" or
    "linear_solve" (`function`, the user's), with the iterative ones' options.  Checked
    where `custom_root` is called, not at the first derivative.

    With a function, `transpose` may name another for the transposed systems Jᵀ y = v
    (``lax.custom_linear_solve``'s transpose_solve; by default the function serves
    both), and `no_transpose` say why there is none: a reverse sweep then raises a
    TypeError with that message."""

    def __init__(self, method="dense", tol=None, maxiter=None, restart=None,
                 who="custom_root", transpose=None, no_transpose=None):
        self.who = who
        self.function = None
        if (transpose is not None or no_transpose) and not callable(method):
            raise ValueError(f"{who}: a transposed solve goes with a linear_solve function")
        self.transpose_function = transpose
        self.no_transpose = no_transpose
        if callable(method):
            self.function, method = method, "linear_solve"
        elif not (isinstance(method, str) and method in LINEAR_SOLVES):
            raise ValueError(
                f"{who}: linear_solve must be 'dense', 'cg', 'gmres' or a function "
                f"linear_solve(matvec, b) -> y, got {method!r:.60}")
        self.method = method
        for option, value in (("tol", tol), ("maxiter", maxiter), ("restart", restart)):
            takes = ("gmres",) if option == "restart" else ("cg", "gmres")
            if value is not None and method not in takes:
                raise ValueError(f"{who}: {option}= is an option of linear_solve="
                                 f"{' or '.join(map(repr, takes))}, not of "
                                 f"{'a function' if self.function else repr(method)}")
        if tol is not None and not (isinstance(tol, (int, float, np.floating))
                                    and not isinstance(tol, bool) and 0 < tol < math.inf):
            raise ValueError(f"{who}: tol must be a positive number, got {tol!r:.40}")
        for option, value in (("maxiter", maxiter), ("restart", restart)):
            if value is not None and not (isinstance(value, (int, np.integer))
                                          and not isinstance(value, bool) and value >= 1):
                raise ValueError(f"{who}: {option} must be a positive integer, "
                                 f"got {value!r:.40}")
        self.tol = TOL if tol is None else float(tol)
        self.maxiter = maxiter
        self.restart = RESTART if restart is None else int(restart)

    def __call__(self, matvec, b, problem, transposed):
        """y with matvec(y) = b, on plain numbers; a failure names the problem, the
        system and the option to change."""
        system = "Jᵀ y = v (for a reverse sweep)" if transposed else \
            "J y = v (for a forward sweep)"
        where = (f"{problem.who}: the derivative of {problem.name}'s solution solves "
                 f"{system}, J = ∂F/∂x at the solution, by "
                 f"{'the linear_solve function' if self.function else self.method}")
        if self.function is not None:
            def flat_matvec(y):
                if type(y) is Node:     # (a function that differentiates matvec: JAX's
                    return matvec(wnp.reshape(y, b.shape))     # jacobian(g) of a solve)
                # (a library may hand over a column, or a list)
                return matvec(np.asarray(y, dtype=np.float64).reshape(b.shape))
            function = self.function
            if transposed and self.transpose_function is not None:
                function = self.transpose_function
            y = np.asarray(function(flat_matvec, b), dtype=np.float64)
            if y.size != b.size:
                raise ValueError(f"{where}, which returned {y.size} numbers for a system "
                                 f"of {b.size}")
            y = y.reshape(b.shape)
            if np.all(np.isfinite(b)) and not np.all(np.isfinite(y)):
                raise LinearSolveError(f"{where}, which returned nan or inf", "nonfinite")
            return y
        try:
            if self.method == "cg":
                return cg(matvec, b, tol=self.tol, maxiter=self.maxiter)
            return gmres(matvec, b, tol=self.tol, maxiter=self.maxiter,
                         restart=self.restart)
        except LinearSolveError as e:
            other = "'gmres' or 'dense'" if self.method == "cg" else "'dense'"
            advice = {
                "indefinite": "cg needs J symmetric positive definite (as the Hessian of a "
                              f"strict minimum is); take linear_solve={other}",
                "singular": "so the solution is no differentiable function of the "
                            "parameters there (a double root, a flat minimum)",
                "stalled": (f"loosen tol= (now {self.tol:g})" if self.method == "cg" else
                            f"raise restart= (now {self.restart})") +
                           f" of {problem.who}, or take linear_solve='dense'",
                "nonfinite": "the condition's derivative is not finite at the solution",
            }.get(e.reason, f"raise maxiter= (now {e.iterations}) or tol= (now "
                            f"{self.tol:g}) of {problem.who}, or take linear_solve={other}")
            raise LinearSolveError(f"{where}: {e}; {advice}", e.reason, e.residual,
                                   e.iterations) from None


def _start(b, maxiter, who):
    """(b as a flat float64 vector, maxiter, ‖b‖) for an iterative solve."""
    b = np.asarray(b, dtype=np.float64).reshape(-1)
    if maxiter is None:
        maxiter = 10 * b.size
    return b, maxiter, float(np.linalg.norm(b))


def _product(matvec, y, who, k):
    out = np.asarray(matvec(y), dtype=np.float64).reshape(-1)
    if out.shape != y.shape:
        raise ValueError(f"{who}: matvec returned {out.size} numbers for a vector of {y.size}")
    if not np.all(np.isfinite(out)):
        raise LinearSolveError(f"{who}: the product with A at step {k} holds nan or inf",
                               "nonfinite", None, k)
    return out


def cg(matvec, b, *, tol=TOL, maxiter=None):
    """Solve ``A y = b`` by conjugate gradients, A symmetric positive definite and given
    as a function ``matvec(y) -> A y`` on flat float64 vectors.  NumPy only.

    Stops at ``‖b - A y‖ ≤ tol ‖b‖``, checked on the true residual (the recurrence's
    drifts from it in rounding; where they part, CG restarts from y).

    Args:
        matvec: ``y -> A y``.
        b: the right-hand side, a vector.
        tol: the relative residual to reach (default 1e-10).
        maxiter: the most CG steps (each one product with A; default 10 len(b)).

    Returns:
        y, a float64 vector (zeros for b = 0; nan if b holds nan).

    Raises:
        LinearSolveError: if tol is not reached within maxiter steps, or if a search
        direction p has pᵀAp ≤ 0 (A is not positive definite).

    Example:
        >>> import numpy as np
        >>> from wengert.implicit import cg
        >>> A = np.array([[4.0, 1.0], [1.0, 3.0]])
        >>> cg(lambda y: A @ y, np.array([1.0, 2.0])).round(12), np.linalg.solve(A, [1, 2])
        (array([0.09090909, 0.63636364]), array([0.09090909, 0.63636364]))
    """
    b, maxiter, bnorm = _start(b, maxiter, "cg")
    y = np.zeros_like(b)
    if bnorm == 0 or not math.isfinite(bnorm):
        return y if bnorm == 0 else np.full_like(b, np.nan)
    target = tol * bnorm
    r, k, last = b, 0, math.inf
    while True:
        p, rr = r.copy(), r @ r
        while rr > target * target and k < maxiter:
            Ap = _product(matvec, p, "cg", k + 1)
            k += 1
            pAp = p @ Ap
            if not pAp > 0:
                raise LinearSolveError(
                    f"CG needs A symmetric positive definite, but pᵀAp = {pAp:.3g} ≤ 0 "
                    f"at step {k}", "indefinite", math.sqrt(rr) / bnorm, k)
            alpha = rr / pAp
            y += alpha * p
            r = r - alpha * Ap
            rr, rr_old = r @ r, rr
            p = r + (rr / rr_old) * p
        r = b - _product(matvec, y, "cg", k)     # the true residual
        residual = float(np.linalg.norm(r))
        if residual <= target:
            return y
        if k >= maxiter:
            raise LinearSolveError(
                f"CG reached a relative residual of {residual / bnorm:.2g} after {k} steps, "
                f"not tol = {tol:g}", "maxiter", residual / bnorm, k)
        if residual > 0.5 * last:
            # the recurrence says converged, the true residual no longer falls: rounding
            # errors of order κ(A) ε, more steps cannot help
            raise LinearSolveError(
                f"CG's residual stalls at a relative {residual / bnorm:.2g}, not tol = "
                f"{tol:g}, after {k} steps (rounding: A is too ill-conditioned for tol)",
                "stalled", residual / bnorm, k)
        last = residual


def gmres(matvec, b, *, tol=TOL, maxiter=None, restart=RESTART):
    """Solve ``A y = b`` by restarted GMRES, A a regular square matrix given as a
    function ``matvec(y) -> A y`` on flat float64 vectors.  NumPy only.

    Each cycle builds an orthonormal basis of at most `restart` Krylov vectors (classical
    Gram-Schmidt, done twice: as accurate as the modified one, in matrix products) and
    minimises the residual over it by Givens rotations; the next cycle starts from the
    true residual.  Stops at ``‖b - A y‖ ≤ tol ‖b‖``.

    Args:
        matvec: ``y -> A y``.
        b: the right-hand side, a vector.
        tol: the relative residual to reach (default 1e-10).
        maxiter: the most GMRES steps, over all cycles (each one product with A;
            default 10 len(b)).
        restart: the Krylov vectors a cycle keeps (default 30): storage of restart
            vectors, against slower convergence when restarted too soon.

    Returns:
        y, a float64 vector (zeros for b = 0; nan if b holds nan).

    Raises:
        LinearSolveError: if tol is not reached within maxiter steps, or if A is found
        singular (the Krylov space is invariant but b is not reached).

    Example:
        >>> import numpy as np
        >>> from wengert.implicit import gmres
        >>> A = np.array([[1.0, 2.0], [-3.0, 1.0]])           # not symmetric
        >>> gmres(lambda y: A @ y, np.array([1.0, 2.0])).round(12), np.linalg.solve(A, [1, 2])
        (array([-0.42857143,  0.71428571]), array([-0.42857143,  0.71428571]))
    """
    b, maxiter, bnorm = _start(b, maxiter, "gmres")
    y = np.zeros_like(b)
    if bnorm == 0 or not math.isfinite(bnorm):
        return y if bnorm == 0 else np.full_like(b, np.nan)
    n = b.size
    m = min(restart, n)                 # n vectors span the space: more is waste
    target = tol * bnorm
    r, beta, k = b, bnorm, 0
    while beta > target:
        if k >= maxiter:
            raise LinearSolveError(
                f"GMRES reached a relative residual of {beta / bnorm:.2g} after {k} steps, "
                f"not tol = {tol:g}", "maxiter", beta / bnorm, k)
        V = np.empty((m + 1, n))
        H = np.zeros((m + 1, m))        # the Hessenberg matrix, rotated to triangular
        cs, sn = np.zeros(m), np.zeros(m)
        g = np.zeros(m + 1)             # the rotated ‖r‖ e₁: |g[j+1]| is the residual
        V[0], g[0] = r / beta, beta
        for j in range(m):
            w = _product(matvec, V[j], "gmres", k + 1)
            k += 1
            h = V[:j + 1] @ w
            w = w - h @ V[:j + 1]
            h2 = V[:j + 1] @ w
            w, h = w - h2 @ V[:j + 1], h + h2
            hn = float(np.linalg.norm(w))
            for i in range(j):          # the earlier rotations, on the new column
                h[i], h[i + 1] = cs[i] * h[i] + sn[i] * h[i + 1], \
                    -sn[i] * h[i] + cs[i] * h[i + 1]
            d = math.hypot(h[j], hn)
            if d == 0:
                raise LinearSolveError(
                    f"GMRES found A singular (A maps a Krylov vector into the span of "
                    f"the earlier ones) at step {k}", "singular", beta / bnorm, k)
            cs[j], sn[j] = h[j] / d, hn / d
            h[j] = d
            H[:j + 1, j] = h
            g[j], g[j + 1] = cs[j] * g[j], -sn[j] * g[j]
            if abs(g[j + 1]) <= target or hn == 0 or k >= maxiter:
                break
            V[j + 1] = w / hn
        cols = j + 1
        z = np.linalg.solve(np.triu(H[:cols, :cols]), g[:cols])   # (small: cols ≤ restart)
        y = y + z @ V[:cols]
        r = b - _product(matvec, y, "gmres", k)  # the true residual: the next start
        beta, last = float(np.linalg.norm(r)), beta
        if target < beta > 0.999 * last:
            # a cycle minimises the residual over a space that holds r: where it hardly
            # falls, the next cycles (from about the same r) repeat it
            raise LinearSolveError(
                f"GMRES stalls at a relative residual of {beta / bnorm:.2g}, not tol = "
                f"{tol:g}: a cycle of {cols} steps took off less than 0.1% (A is singular, "
                f"or too hard for restart = {restart})", "stalled", beta / bnorm, k)
    return y
