"""Derivatives of solutions, by the implicit function theorem: `custom_root`, and the
`Solution` primitive that `wengert.scipy.optimize` builds on.

A solver finds x with F(x, θ) = 0 by some algorithm: Newton's method, a library, SciPy.
Differentiating the algorithm's steps is slow and gives the derivative of the algorithm,
not of the solution.  The solution's own derivative needs only F: differentiating
F(x*(θ), θ) = 0 in θ gives

    ∂F/∂x · dx*/dθ = -∂F/∂θ,   so   ẋ = -J⁻¹ (∂F/∂θ θ̇)   and   θ̄ = -(∂F/∂θ)ᵀ J⁻ᵀ x̄

with J = ∂F/∂x at the solution (which must be regular: an isolated root).  A solve on
traced values is one `Solution` node: the solver runs on plain numbers, nothing of it is
recorded, and the node's rules compute J (a dense Jacobian by forward sweeps, batched)
and solve with it.  They are written with wengert's own transformations (`jvp`, `vjp`,
`jacfwd`) and `linalg.solve`, so they can be differentiated again: second derivatives of
a solution work.  docs/optimize.md has the tutorial.

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

import numpy as np

from .graph.active import recording
from .graph.node import Node
from .primitives.registry import Primitive
from .tree import flatten, hold_constants, unflatten
from . import numpy as wnp

__all__ = ["custom_root", "Solution"]

LinAlgError = np.linalg.LinAlgError


def custom_root(condition):
    """Give a solver the derivative of its solution: ``@custom_root(condition)`` on
    ``solve(x0, *params)``, which returns an x with ``condition(x, *params) = 0``.

    The decorated function is `solve` on plain values.  Where params (or x0) hold traced
    values, solve still runs on plain numbers, by any means (a loop of Newton steps, a
    compiled library), and its result is differentiable with respect to params by the
    implicit function theorem (see the module's doc): ``dx/dθ = -(∂F/∂x)⁻¹ ∂F/∂θ`` with
    F = condition, at any order.  The derivative with respect to x0 is zero.  This is
    jaxopt's ``custom_root`` decorator; JAX's ``lax.custom_root`` takes the same idea.

    Args:
        condition: ``condition(x, *params)``, written with `wengert.numpy` (or NumPy
            functions, which dispatch to it): as many numbers as x has, zero at the
            solution, with a regular Jacobian there.

    Returns:
        A decorator; the decorated ``solve(x0, *params)`` returns x in x0's shape
        (float64).  x0 is an array or a number; params numbers, arrays or pytrees of
        them (other leaves, a string or an option, are passed as they are).

    Raises (where traced): ValueError if solve or condition returns the wrong number of
    values, or if solve computes with a traced value that is not among its arguments (a
    closure: its derivative would be lost); numpy.linalg.LinAlgError if ∂F/∂x is
    singular at the solution.

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
    """
    if not callable(condition):
        raise TypeError(f"custom_root needs a condition function, got {condition!r:.40}")

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
            return solution("custom_root", name, x0, params, condition_of, solve_of)[0]
        return solved
    return decorate


# --------------------------------------------------------------------------------------
# the primitive
# --------------------------------------------------------------------------------------
class _Problem:
    """A problem ``F(x, θ) = 0`` on a flat x of n numbers, θ the numeric leaves of args.

    `condition(x, *leaves)` is F, written with wengert's functions so that it works on
    plain and traced values alike; `solve(x0, leaves)` runs the solver on plain ones and
    returns (the flat solution, anything else the solver returned)."""

    def __init__(self, who, name, n, condition, solve, active):
        self.who = who
        self.name = name
        self.n = n
        self.condition = condition
        self.solve = solve
        self.active = active      # positions of the leaves that may carry derivatives


class Solution(Primitive):
    """The primitive of one solve: ``(x0, *leaves) -> x*``, flat, where
    ``F(x*, *leaves) = 0``.  Its rules are the implicit function theorem's,
    ``ẋ = -J⁻¹ (∂F/∂θ θ̇)`` and ``θ̄ = -(∂F/∂θ)ᵀ J⁻ᵀ x̄`` with ``J = ∂F/∂x`` at the
    solution, written with `wg.jvp`, `wg.vjp`, `wg.jacfwd` and `linalg.solve`, so they can
    be differentiated again.  x0 gets no derivative.  Not in the registry: one is made per
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
    """

    def __init__(self, problem):
        super().__init__(f"{problem.who}[{problem.name}]", self._impl, cost="call",
                         abstract_eval=self._abstract_eval)
        self.problem = problem
        self.jvp = self._jvp_rule
        self.vjp = self._vjp_rule
        self.result = None          # what the solver returned besides x, the last time

    def _impl(self, x0, *leaves):
        with recording(None):       # plain numbers: the solver records nothing
            x, self.result = self.problem.solve(np.asarray(x0, dtype=np.float64), leaves)
        return np.asarray(x, dtype=np.float64).reshape(self.problem.n)

    def _abstract_eval(self, args, params):
        return (self.problem.n,), np.dtype(np.float64)

    def _solve_linear(self, x, leaves, v, transpose):
        """J⁻¹ v (J⁻ᵀ v if `transpose`), J = ∂F/∂x at (x, leaves): a dense Jacobian by
        forward sweeps (batched), then one LU solve; exact, and cheap for the n of the
        problems such solvers take."""
        from .api import jacfwd
        condition = self.problem.condition
        jac = jacfwd(lambda x: condition(x, *leaves))(x)
        if transpose:
            jac = wnp.transpose(jac)
        try:
            return wnp.linalg.solve(jac, v)
        except LinAlgError as e:
            raise LinAlgError(
                f"{self.problem.who}: the derivative of the condition the solution satisfies "
                "(∂F/∂x: F is fun for root, the gradient for minimize, the condition for "
                "custom_root) is singular at the solution, so the solution is no "
                "differentiable function of the parameters there (a double root, a flat "
                "minimum)") from e

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


def solution(who, name, x0, args, condition_of, solve_of):
    """The traced solve: x0 and args' numeric leaves into a `Solution` node.

    `condition_of(shape, tree)` gives F(x, *leaves) for x flat; `solve_of(shape, tree)` the
    plain solve (x0 flat, leaves) -> (x flat, what else the solver returned).  `who` and
    `name` name the node and the errors.  Returns (x in x0's shape, the primitive, shape,
    tree, leaves)."""
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
                       solve_of(shape, tree), active)
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
