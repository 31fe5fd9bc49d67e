"""Optimisation and root finding with derivatives: SciPy's `scipy.optimize` (`minimize`,
`minimize_scalar`, `linprog`, `nnls`, `lsq_linear`, `root`, `fsolve`, `root_scalar`,
`newton`, `brentq` and the other bracketing methods, `fixed_point`, `least_squares`,
`leastsq`, `curve_fit`), the same calls, with two things SciPy does not have.

* **Exact derivatives for the solver.**  Where a method uses a derivative and you give
  none, wengert takes it from your function: BFGS, CG and L-BFGS-B get the gradient,
  Newton-CG, trust-ncg, trust-krylov and trust-constr Hessian-vector products, dogleg
  and trust-exact the Hessian, root's hybr and lm the Jacobian, least_squares the
  Jacobian, curve_fit the Jacobian of the model, root_scalar's newton and halley f' and
  f''.  SciPy would estimate them by finite differences.  A derivative you give (a
  callable, ``jac=True``, or a scheme such as ``jac="2-point"``, which asks for SciPy's
  finite differences) is used as it is.
* **Derivatives of the solution** with respect to ``args``, by the implicit function
  theorem.  The solution x*(θ) of a problem with parameters θ satisfies a condition
  F(x*, θ) = 0 (F is fun for `root`, the gradient of fun for `minimize`, the KKT
  conditions for a `minimize` with constraints or bounds and for `linprog`, ...), so at
  the solution dx*/dθ = -(∂F/∂x)⁻¹ ∂F/∂θ.  Where an argument is traced, the solve is one
  node of the graph (a `Solution` primitive): the solver runs on plain numbers, nothing
  of its iterations is recorded, and the node's rules solve that linear system with
  wengert's own derivatives of F, so derivatives of derivatives (`wg.hessian`) work too.

The derivative of the solution is exact for the exact solution; the solver's is within
its tolerance, and so is the derivative, to first order.  It needs ∂F/∂x to be regular
at the solution (an isolated root, a strict minimum); a singular one is reported
(`numpy.linalg.LinAlgError`).  The derivative with respect to the starting point x0 is
zero: nearby starts find the same solution.  fun must be written with `wengert.numpy`
(or NumPy functions, which dispatch to it) and must take every traced value it uses
through ``args``.  See docs/optimize.md.

Example:
    >>> import wengert as wg
    >>> from wengert.scipy import optimize
    >>> def argmin(a):                       # the minimiser of (x - a)² + x⁴, as a function of a
    ...     return optimize.minimize(lambda x, a: (x[0] - a) ** 2 + x[0] ** 4, [0.0],
    ...                              args=(a,)).x[0]
    >>> x = argmin(1.0)                 # dx/da = 2 / (2 + 12x²), from 2(x - a) + 4x³ = 0
    >>> print(round(x, 4), round(wg.grad(argmin)(1.0), 4), round(2 / (2 + 12 * x ** 2), 4))
    0.5898 0.324 0.324
"""
from __future__ import annotations

import copy
import inspect
import math
import warnings

import numpy as np

from ..errors import ConcretizationError
from ..graph.node import Node
from ..implicit import (Solution, _LinearSolve, _caller_level, check_plain as _check_plain,
                        closure_error as _closure_error, flat_out as _flat_out,
                        numeric_leaf as _numeric, plain_leaves as _plain_leaves,
                        solution as _solution, traced as _traced)
from ..primitives.special import INSTALL_HINT
from ..tree import flatten, hold_constants, unflatten
from .. import numpy as wnp
from ._derivatives import _Derivative

__all__ = ["minimize", "minimize_scalar", "linprog", "nnls", "lsq_linear", "root", "fsolve",
           "root_scalar", "newton", "brentq", "brenth", "ridder", "bisect", "toms748",
           "fixed_point", "least_squares", "leastsq", "curve_fit", "Solution"]


def _scipy_optimize():
    try:
        import scipy.optimize
    except ImportError as e:
        raise ImportError(INSTALL_HINT) from e
    return scipy.optimize


# Which methods read which derivative (names as SciPy's, lower case).  A derivative is only
# supplied to a method that reads it: SciPy warns about one it would ignore.
_GRADIENT_METHODS = {"cg", "bfgs", "newton-cg", "l-bfgs-b", "tnc", "slsqp", "dogleg",
                     "trust-ncg", "trust-krylov", "trust-exact", "trust-constr"}
_HESSP_METHODS = {"newton-cg", "trust-ncg", "trust-krylov", "trust-constr"}
_HESS_METHODS = {"dogleg", "trust-exact"}
_ROOT_JACOBIAN_METHODS = {"hybr", "lm"}


def _name(fun):
    return getattr(fun, "__name__", "fun")


def _as_tuple(args):
    return args if isinstance(args, tuple) else (args,)       # (as SciPy takes it)


def _traced_first(fun, who, pick):
    """fun, or with `pick` (jac=True: fun returns its value and its derivative) its value
    alone, for tracing: the derivative part is traced too, so an error converting a
    traced value to a number there says that it must be traceable, and what else works."""
    if not pick:
        return fun

    def first(*a):
        try:
            return fun(*a)[0]
        except ConcretizationError as e:
            raise ConcretizationError(
                f"{who}: with jac=True and traced args, fun is traced (the solution's "
                "derivative needs that of its value), and so is the derivative it returns "
                "beside the value; compute both with wengert's functions, or leave jac "
                f"out for wengert's exact derivative. ({e})") from e
    return first


def _check_start(x0, who):
    """Refuse, in words, a starting point the solvers cannot take: a pytree of parameters
    (NumPy would make an object array of it, which SciPy reports as a float() error)."""
    if type(x0) is Node:
        return
    try:
        kind = np.asarray(x0).dtype.kind      # (plain values: no node recorded to ask)
    except ConcretizationError:                # (a list of traced values)
        return
    except (TypeError, ValueError):            # (ragged lists)
        kind = "O"
    if kind not in "biufc":
        raise TypeError(f"{who}: x0 must be a number or an array of numbers (of any shape), "
                        f"not {type(x0).__name__}; for a pytree of parameters, flatten it "
                        "with v, unravel = wg.tree.ravel_pytree(x0) and call unravel(x) "
                        "inside your function")


def _one_dimensional_if_scalar(x0):
    """x0, a number made a one-element array: SciPy's minimize, root, least_squares,
    leastsq and fsolve take x0 at least one-dimensional, so fun gets ``x[0]`` and
    ``result.x`` has shape (1,) (code written for SciPy indexes x)."""
    if type(x0) is Node:
        return wnp.reshape(x0, (1,)) if x0.shape == () else x0
    return np.reshape(x0, (1,)) if np.ndim(x0) == 0 else x0


def _shaped_callback(callback, shape):
    """The user's callback, seeing x in x0's shape as fun does (SciPy's methods pass the
    flat x they iterate on), in whichever of SciPy's signatures it was written."""
    if callback is None or len(shape) == 1:
        return callback
    try:
        names = set(inspect.signature(callback).parameters)
    except (TypeError, ValueError):            # (a builtin: SciPy passes it xk)
        names = set()
    if names == {"intermediate_result"}:        # (SciPy tells the signatures apart by name)
        def shaped(intermediate_result):
            seen = copy.copy(intermediate_result)
            seen.x = np.reshape(seen.x, shape)
            return callback(intermediate_result=seen)
        return shaped

    def shaped(xk, *rest):                     # (trust-constr passes a state, root an f)
        return callback(np.reshape(xk, shape), *rest)
    return shaped


def _undifferentiable(who, name, what, e):
    way_out = {"root_scalar": "fprime=..., or a method that reads none (brentq)",
               "curve_fit": "jac=..., or jac=False for SciPy's finite differences",
               "root": "jac=..., or jac=False for SciPy's finite differences",
               "fsolve": "fprime=..., or fprime=False for MINPACK's finite differences",
               "leastsq": "Dfun=..., or Dfun=False for MINPACK's finite differences",
               "newton": "fprime=..., or x1=... for the secant method"}.get(
        who, "jac=... (hess=...), or jac='2-point' for SciPy's finite differences")
    return TypeError(f"{who}: wengert could not differentiate {name} for the {what} the "
                     f"method uses ({type(e).__name__}: {e}); give it yourself: {way_out}")


def _flat_function(fun, shape, args, who, pick=None):
    """``x_flat -> fun(x in shape, *args)`` (its first item if `pick`), as SciPy calls it,
    checked for values fun closes over."""
    name = getattr(fun, "__name__", "fun")

    def f(x):
        out = fun(wnp.reshape(x, shape), *args)
        if pick:
            out = out[0]
        if type(out) is Node and type(x) is not Node:   # (traced x: wengert's derivatives)
            raise _closure_error(who, name)
        return out
    return f


def _kernel_args(args, what, fun, shape):
    """(leaves, tree, cache key) of a solve's args for `_Derivative`: the numbers and arrays
    are the compiled code's inputs; Python ints and bools (counts, flags) and what is no
    number are held in the tree as constants, part of the key (None if unhashable)."""
    leaves, tree = flatten(args)
    leaves, tree = hold_constants(
        tree, leaves, lambda v: not _numeric(v) or type(v) in (int, bool))
    try:
        key = (what, fun, shape, tree,
               tuple((np.shape(v), np.asarray(v).dtype.str) for v in leaves))
        hash(key)
    except TypeError:
        key = None
    return leaves, tree, key


# --------------------------------------------------------------------------------------
# minimize
# --------------------------------------------------------------------------------------
def minimize(fun, x0, args=(), method=None, jac=None, hess=None, hessp=None, bounds=None,
             constraints=(), tol=None, callback=None, options=None, *, linear_solve="dense"):
    """Minimise ``fun(x, *args)``: SciPy's `scipy.optimize.minimize`, with exact
    derivatives and a differentiable solution.

    The call and the result are SciPy's (an `OptimizeResult`), with two differences:

    * where the method reads a derivative and you give none, it is wengert's, exact (the
      gradient for BFGS, CG, L-BFGS-B, TNC and SLSQP; Hessian-vector products for
      Newton-CG, trust-ncg, trust-krylov and trust-constr; the Hessian for dogleg and
      trust-exact), where SciPy would take finite differences.  ``jac="2-point"`` (or
      False) asks for SciPy's finite differences, a callable or ``jac=True`` for yours.
    * x0 may have any shape; fun gets x in that shape and ``result.x`` has it (a number
      is a one-element array, as SciPy's).

    Where args holds a traced value, ``result.x`` is differentiable with respect to it:
    the minimiser satisfies ∇ₓfun(x*, θ) = 0, so dx*/dθ = -H⁻¹ ∂(∇ₓfun)/∂θ, H the
    Hessian at x* (which must be regular: a strict minimum).  ``result.fun`` is
    ``fun(result.x, *args)``, traced too; the other fields are SciPy's numbers (absent
    where no numbers were computed: under `wg.compile`).  A solve that did not converge
    warns (RuntimeWarning): its derivatives assume ∇ₓfun = 0.

    With constraints (dicts, whose "args" may be traced too, `NonlinearConstraint`,
    `LinearConstraint`) and bounds ((min, max) pairs may hold traced values), the minimiser
    satisfies the KKT conditions instead, ∇ₓfun = Σ νᵢ∇gᵢ with complementarity, and its
    derivative is theirs: a constraint that holds keeps holding, one that does not is
    ignored, and which do is found at each solve (so compiled code and vmap follow a
    change).  The multipliers ν are found by least squares at SciPy's solution.  The
    derivative needs the constraints that hold to have independent gradients and nonzero
    multipliers; where they do not, or where the solution violates a constraint or is no
    KKT point, it warns.  A dict constraint with no "jac" gets wengert's exact Jacobian
    where the method reads one (SLSQP, trust-constr), and its fun gets x in x0's shape.

    Args:
        fun: the objective, ``fun(x, *args) -> float``, written with `wengert.numpy`
            (or NumPy functions).  With ``jac=True`` it returns (value, gradient).
        x0: the starting point (its derivative is zero).
        args: the parameters: numbers, arrays or a pytree of them.
        method, jac, hess, hessp, bounds, constraints, tol, callback, options: SciPy's.
        linear_solve: how the derivative of a traced solution solves with ∂F/∂x (here
            the Hessian, or the KKT matrix with constraints): "dense" (the default),
            "cg" (a symmetric positive definite Hessian: unconstrained), "gmres" (any,
            the KKT matrix too) or a function, as `wg.custom_root`'s; matrix-free for
            large x.

    Returns:
        SciPy's `OptimizeResult`.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy.optimize import minimize
        >>> rosen = lambda x: (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
        >>> fit = minimize(rosen, [-1.2, 1.0], method="trust-exact")    # exact Hessians
        >>> fit.x.round(6).tolist(), fit.nit
        ([1.0, 1.0], 25)
        >>> a, b = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]]), np.array([1.0, 0.0, 2.0])
        >>> loss = lambda w, lam: wg.numpy.sum((a @ w - b) ** 2) + lam * w @ w
        >>> ridge = lambda lam: minimize(loss, np.zeros(2), args=(lam,)).x
        >>> wg.jacfwd(ridge)(0.5).round(4).tolist()         # dw/dλ = -(AᵀA + λI)⁻¹ w
        [0.6325, -0.4523]
        >>> w = ridge(0.5)
        >>> (-np.linalg.solve(a.T @ a + 0.5 * np.eye(2), w)).round(4).tolist()
        [0.6325, -0.4523]
        >>> # the nearest point to y on the disc |x| ≤ r: y r/|y|, which moves with r as y/|y|
        >>> nearest = lambda y, r: minimize(lambda x, y: wg.numpy.sum((x - y) ** 2), [0.1, 0.1],
        ...     args=(y,), constraints={"type": "ineq", "fun": lambda x, r: r ** 2 - x @ x,
        ...                             "args": (r,)}).x
        >>> wg.jacfwd(nearest, argnums=1)(np.array([3.0, 4.0]), 2.0).round(4).tolist()
        [0.6, 0.8]
    """
    so = _scipy_optimize()
    _check_start(x0, "minimize")
    x0 = _one_dimensional_if_scalar(x0)
    args = _as_tuple(args)
    linear = _LinearSolve(linear_solve, who="minimize")
    if method is None:                      # (SciPy's choice, which reads a gradient)
        known = "slsqp" if constraints else "l-bfgs-b" if bounds is not None else "bfgs"
    else:
        known = method.lower() if isinstance(method, str) else None     # (or a callable)
    objective_pick = jac is True
    bounds = _pair_per_element(_flat_bounds(bounds, wnp.shape(x0)), wnp.shape(x0))
    kwargs = dict(method=method, bounds=bounds, constraints=constraints, tol=tol,
                  callback=_shaped_callback(callback, wnp.shape(x0)), options=options)
    dict_args = [_as_tuple(c.get("args", ())) for c in _listed(constraints)
                 if isinstance(c, dict)]
    bound_lists = _bound_lists(bounds) if bounds is not None else None

    if not _traced(x0, args, dict_args, bound_lists):
        shape = np.shape(x0)
        found = _minimize_plain(so, fun, np.asarray(x0, dtype=np.float64), shape, args, known,
                                jac, hess, hessp, objective_pick, kwargs)
        found.x = found.x.reshape(shape)
        return found

    traced_fun = _traced_first(fun, "minimize", objective_pick)

    def objective(x, a):
        return traced_fun(x, *a)

    x0 = wnp.asarray(x0)
    shape = tuple(x0.shape)
    # (constraints and bounds a method ignores, SciPy warning, are no part of the problem)
    blocks = _blocks(constraints if known is None or known in _CONSTRAINT_METHODS else (),
                     bounds if known is None or known in _BOUND_METHODS else None,
                     x0, shape)

    held = 0                # how many of the blocks, the last, are traced bounds
    if _traced(bound_lists):
        if known is None or known in _BOUND_METHODS:
            roles = _bound_roles(*bound_lists)      # (`_blocks` made their blocks)
            held = len(roles)
        else:               # (a method that ignores bounds: SciPy warns, given values)
            kwargs["bounds"] = [tuple(_value_of(v, "minimize", "a bound") for v in pair)
                                for pair in zip(*bound_lists)]

    def solve_plain(x0, a, block_args):
        options = kwargs
        if held:            # (SciPy gets the traced bounds' values of this solve)
            options = dict(kwargs, bounds=list(zip(*_plain_bounds(
                math.prod(shape), roles, block_args[len(blocks) - held:]))))
        found = _minimize_plain(so, fun, x0, shape, a, known, jac, hess, hessp,
                                objective_pick, options, {b.source: ba for b, ba in zip(
                                    blocks, block_args) if b.source is not None})
        _warn_unless_converged(found, "minimize")
        return found.x, found

    x, prim, a = _stationary("minimize", _name(fun), x0, args, objective, blocks, solve_plain,
                             linear)
    found = _result(so.OptimizeResult, prim.result)
    found.x = x
    found.fun = objective(x, a)
    return found


def _minimize_plain(so, fun, x0, shape, args, method, jac, hess, hessp, pick, kwargs,
                    dict_args=None):
    """SciPy's minimize on plain values, with wengert's derivatives where the method reads
    one and none is given (the constraints' too: `_constraints_for_scipy`, which puts
    `dict_args` in)."""
    from ..api import grad, hessian, hvp
    name = getattr(fun, "__name__", "fun")
    f = _flat_function(fun, shape, args, "minimize", pick)
    x0 = x0.reshape(-1)
    value = f(x0)                           # (fun's own errors first, and a closure check)
    if np.size(value) != 1:                 # (not a failure to differentiate: say so first)
        raise ValueError(f"minimize: {name} returned a value of shape {np.shape(value)}; "
                         "the objective must return a number (for a vector of residuals, "
                         "least_squares minimises their squares)")
    call = _flat_function(fun, shape, args, "minimize")     # (as the user wrote it)
    leaves, tree, key = _kernel_args(args, "minimize", fun, shape)

    def objective(x, leaves):
        out = fun(wnp.reshape(x, shape), *unflatten(tree, leaves))
        return out[0] if pick else out

    def flat(out):
        return np.asarray(out, dtype=np.float64).reshape(-1)

    if jac is None and method in _GRADIENT_METHODS:
        jac = _supplied(_Derivative(grad(objective), leaves, key + ("grad",) if key else None,
                                    flat, objective), (x0,), "minimize", name, "gradient")
    elif callable(jac):
        user_jac = jac

        def jac(x):                             # noqa: F811  (x in x0's shape for the user)
            return np.reshape(user_jac(x.reshape(shape), *args), -1)
    elif jac is False:
        jac = None                              # (SciPy: False means finite differences)
    if hess is None and hessp is None:
        if method in _HESSP_METHODS:
            hessp = _supplied(_Derivative(lambda x, p, leaves: hvp(
                lambda x: objective(x, leaves))(x, p), leaves,
                key + ("hessp",) if key else None, flat, objective), (x0, np.ones_like(x0)),
                "minimize", name, "Hessian-vector products")
        elif method in _HESS_METHODS:
            n = x0.size
            hess = _supplied(_Derivative(lambda x, leaves: hessian(
                lambda x: objective(x, leaves))(x), leaves, key + ("hess",) if key else None,
                lambda h: np.asarray(h, dtype=np.float64).reshape(n, n), objective), (x0,),
                "minimize", name, "Hessian")
    elif callable(hess):
        user_hess = hess

        def hess(x):                            # noqa: F811
            return _flat_hessian(user_hess(x.reshape(shape), *args), x.size)
    elif callable(hessp):
        user_hessp = hessp

        def hessp(x, p):                        # noqa: F811
            return np.reshape(user_hessp(x.reshape(shape), p.reshape(shape), *args), -1)
    constraints = _constraints_for_scipy(kwargs["constraints"], x0, shape, method, dict_args)
    return so.minimize(call, x0, method=kwargs["method"], jac=jac, hess=hess, hessp=hessp,
                       bounds=kwargs["bounds"], constraints=constraints,
                       tol=kwargs["tol"], callback=kwargs["callback"],
                       options=kwargs["options"])


def _supplied(derivative, at, who, name, what):
    """`derivative`, first called at `at` (the starting point), where a failure to
    differentiate is reported with the ways out."""
    try:
        derivative(*at)
    except Exception as e:                      # noqa: BLE001  (reported, with the way out)
        raise _undifferentiable(who, name, what, e) from e
    return derivative


def _warn_unless_converged(found, who, ok=None):
    if not (found.success if ok is None else ok):
        # (SciPy's reason: an OptimizeResult's message, a RootResults' flag)
        why = getattr(found, "message", None) or getattr(found, "flag", None)
        warnings.warn(f"{who}: the solver did not converge" + (f" ({why})" if why else "")
                      + "; the derivatives of its solution assume it is one", RuntimeWarning,
                      stacklevel=_caller_level())


def _result(cls, found):
    """A copy of SciPy's result (an empty one where none was computed: an abstract
    trace), whose x and fun the caller sets."""
    return cls() if found is None else cls(dict(found))


# --------------------------------------------------------------------------------------
# minimisers, constrained or not: stationarity and the KKT conditions
# --------------------------------------------------------------------------------------
#: How near zero (in distance: its value over its gradient's norm, relative to 1 + |x|)
#: an inequality may be and still hold at a solution.  Whether one within it holds is
#: decided by its multiplier; the distance only has to admit the solvers' ways of
#: stopping: SLSQP lands on a constraint to ~1e-12, trust-constr (an interior-point
#: method) stops ~1e-5 inside one.
_NEAR = 1e-4
#: How near to holding (relative, as `_NEAR`) the constraints that `_multipliers` tries
#: first are: those nearest first, so that one merely near is not taken for one that holds.
_LEVELS = (1e-12, 1e-10, 1e-8, 1e-6)

# Which methods honour constraints and bounds (SciPy ignores them elsewhere, with a warning).
_CONSTRAINT_METHODS = {"cobyla", "cobyqa", "slsqp", "trust-constr"}
_BOUND_METHODS = _CONSTRAINT_METHODS | {"nelder-mead", "l-bfgs-b", "tnc", "powell"}


class _Block:
    """Constraints of one kind on a minimiser: ``fun(x, *args) = 0`` ("eq") or ``≥ 0``
    ("ineq"), `m` values, fun written with wengert's functions and x in the unknown's
    shape; `args` (a dict constraint's "args") may hold traced values; `what` names it,
    `source` is the dict's place in the constraints (None for the others), and `index`
    what its entries stand for (rows, or elements of x), by which warnings name them."""

    def __init__(self, kind, fun, args, m, what, source=None, index=None):
        self.kind, self.fun, self.args, self.m, self.what = kind, fun, args, m, what
        self.source, self.index = source, index

    def named(self, mask):
        """The entries `mask` picks, in words ("the lower bounds on x [0, 2]": a `what`
        with an index says where its plural has an s, as "the lower bound{s} on x")."""
        at = np.flatnonzero(mask).tolist()
        if self.index is not None:
            s = "" if len(at) == 1 else "s"
            return f"{self.what.format(s=s)} {[self.index[i] for i in at]}"
        return self.what if self.m == 1 else f"{self.what}, entries {at}"


def _blocks(constraints, bounds, x0, shape):
    """SciPy's constraints (dicts, `NonlinearConstraint`, `LinearConstraint`; one or a
    list) and bounds (`Bounds`, or a (min, max) pair per element) as `_Block`s; a
    two-sided ``lb ≤ h(x) ≤ ub`` is an equality where lb = ub and an inequality for each
    finite side."""
    so = _scipy_optimize()
    n = math.prod(shape)
    out = []
    for k, c in enumerate(_listed(constraints)):
        if isinstance(c, dict):
            kind = c.get("type")
            if kind not in ("eq", "ineq") or "fun" not in c:
                raise ValueError(f"minimize: constraint {k} must be a dict with 'type' "
                                 f"'eq' or 'ineq' and a 'fun', got {c!r:.80}")
            args = _as_tuple(c.get("args", ()))
            fun = (lambda f: lambda x, *a: _flat_out(f(x, *a)))(c["fun"])
            m = int(fun(wnp.reshape(x0, shape), *args).shape[0])
            out.append(_Block(kind, fun, args, m, f"constraint {k} ({kind})", k))
        elif isinstance(c, so.LinearConstraint):
            a = c.A.toarray() if hasattr(c.A, "toarray") else np.atleast_2d(c.A)
            out += _two_sided(lambda x, a=a: a @ wnp.reshape(x, (-1,)), c.lb, c.ub,
                              a.shape[0], f"side of constraint {k} (linear), row{{s}}")
        elif isinstance(c, so.NonlinearConstraint):
            h = (lambda f: lambda x: _flat_out(f(x)))(c.fun)
            out += _two_sided(h, c.lb, c.ub, int(h(wnp.reshape(x0, shape)).shape[0]),
                              f"side of constraint {k} (nonlinear), value{{s}}")
        else:
            raise TypeError(f"minimize: constraint {k} is a {type(c).__name__}; SciPy's "
                            "are dicts, NonlinearConstraint and LinearConstraint")
    if bounds is not None:
        lo, hi = _bound_lists(bounds)
        if _traced(lo, hi):                     # (their values are the blocks' args)
            out += _bounds_as_blocks(lo, hi)[0]
        else:
            out += _two_sided(lambda x: wnp.reshape(x, (-1,)), lo, hi, n, "bound{s} on x")
    return out


def _flat_bounds(bounds, shape, who="minimize"):
    """minimize's bounds for the flat x SciPy iterates on.  A `Bounds` whose lb and ub
    broadcast to x0's shape is raveled (SciPy's own take one dimension); one with a
    traced side becomes a (min, max) pair per element, as `_bound_lists` reads them (a
    traced scalar bound is then every element's)."""
    so = _scipy_optimize()
    if not isinstance(bounds, so.Bounds):
        return bounds
    try:
        lo, hi = (wnp.reshape(wnp.broadcast_to(v, shape), (-1,))
                  for v in (bounds.lb, bounds.ub))
    except ValueError:
        raise ValueError(f"{who}: Bounds with lb of shape {wnp.shape(bounds.lb)} and ub "
                         f"of shape {wnp.shape(bounds.ub)} do not broadcast to x0's shape "
                         f"{tuple(shape)}") from None
    if not _traced(lo, hi):
        keep = np.broadcast_to(bounds.keep_feasible, shape).reshape(-1)
        return so.Bounds(lo, hi, keep)
    n = math.prod(shape)
    lo = [lo[i] for i in range(n)]
    hi = lo if bounds.ub is bounds.lb else [hi[i] for i in range(n)]   # (v, v): fixed
    return list(zip(lo, hi))


def _pair_per_element(bounds, shape, who="minimize"):
    """minimize's bounds as one (min, max) pair per element of the flat x where they are
    pairs: one pair is every element's, as SciPy broadcasts it (the traced solve's KKT
    conditions need each element's, or the others would go unconstrained)."""
    if bounds is None or isinstance(bounds, _scipy_optimize().Bounds):
        return bounds
    pairs, n = list(bounds), math.prod(shape)
    if len(pairs) == 1:
        pairs = pairs * n
    if len(pairs) != n:
        raise ValueError(f"{who}: {len(pairs)} (min, max) bounds for x0 of shape "
                         f"{tuple(shape)} ({n} elements); give one pair per element, or "
                         "one for all")
    return pairs


def _bound_lists(bounds):
    """minimize's bounds (a `Bounds`, or a (min, max) pair per element, None for no
    bound) as two lists (or arrays), ±inf for none."""
    if isinstance(bounds, _scipy_optimize().Bounds):
        return bounds.lb, bounds.ub
    lo, hi = zip(*bounds)
    return ([-np.inf if v is None else v for v in lo],
            [np.inf if v is None else v for v in hi])


def _listed(constraints):
    """minimize's constraints as a list (SciPy takes one or a sequence)."""
    so = _scipy_optimize()
    if isinstance(constraints, (dict, so.NonlinearConstraint, so.LinearConstraint)):
        return [constraints]
    return list(constraints or ())


def _two_sided(h, lb, ub, m, what):
    """``lb ≤ h(x) ≤ ub`` (h flat, m values) as blocks: where lb = ub an equality, and an
    inequality for each finite side of the others."""
    lb = np.broadcast_to(np.asarray(lb, dtype=np.float64), (m,))
    ub = np.broadcast_to(np.asarray(ub, dtype=np.float64), (m,))
    eq = lb == ub
    lower = np.flatnonzero(~eq & np.isfinite(lb))
    upper = np.flatnonzero(~eq & np.isfinite(ub))
    eq = np.flatnonzero(eq)
    out = []
    fixed = "fixed" if what.startswith("bound") else "lb = ub"
    for kind, side, pick, fun in (("eq", fixed, eq, lambda x, i: h(x)[i] - lb[i]),
                                  ("ineq", "lower", lower, lambda x, i: h(x)[i] - lb[i]),
                                  ("ineq", "upper", upper, lambda x, i: ub[i] - h(x)[i])):
        if pick.size:
            out.append(_Block(kind, (lambda f, i: lambda x: f(x, i))(fun, pick), (),
                              int(pick.size), f"the {side} {what}", index=pick.tolist()))
    return out


def _exact_constraint(c, fun, name, args, x0, shape, method):
    """A dict constraint with no 'jac' (its fun already on a flat x), with wengert's exact
    Jacobian for SLSQP; for trust-constr, as a `NonlinearConstraint` with the exact
    Jacobian and Hessians of ``v · fun`` (SciPy's default for them is a quasi-Newton
    estimate, which warns where the constraint is linear)."""
    from ..api import hessian, jacfwd, jacrev
    so = _scipy_optimize()
    leaves, tree, key = _kernel_args(args, "constraint", fun, shape)
    n = math.prod(shape)

    def g(x, leaves):
        return _flat_out(fun(wnp.reshape(x, shape), *unflatten(tree, leaves)))
    m = int(np.size(c["fun"](x0)))
    mode = jacfwd if n <= m else jacrev       # (fewer sweeps: a budget is one row)
    jac = _supplied(_Derivative(lambda x, leaves: mode(lambda x: g(x, leaves))(x), leaves,
                                key + ("jac",) if key else None,
                                lambda j: np.asarray(j, dtype=np.float64).reshape(-1, n)),
                    (x0,), "minimize", name, "constraint's Jacobian")
    if method != "trust-constr":
        return {**c, "jac": jac}
    hess = _Derivative(lambda x, v, leaves: hessian(lambda x: v @ g(x, leaves))(x), leaves,
                       key + ("hess",) if key else None,
                       lambda h: np.asarray(h, dtype=np.float64).reshape(n, n))
    return so.NonlinearConstraint(c["fun"], 0.0, 0.0 if c["type"] == "eq" else np.inf,
                                  jac=jac, hess=hess)


def _stationary(who, name, x0, args, objective, blocks, solve_plain, linear_solve="dense"):
    """The traced minimiser of ``objective(x, args)`` subject to `blocks`: one `Solution`
    node, whose condition is that the gradient is zero or, with constraints, the KKT
    conditions in x and the multipliers ν:

        ∇ₓobjective(x) − Σ_b ∇ₓ(ν_b · g_b(x)) = 0,   g_eq(x) = 0,   ν_ineq ∘ g_ineq(x) = 0.

    The last, complementarity, keeps an inequality that holds on its boundary (g = 0 and
    ν > 0, so dg = 0) and leaves one that does not free (ν = 0, so dν = 0), without an
    active set fixed when the graph is built: compiled code stays right where another
    set holds.  A weakly active inequality (g = 0 and ν = 0) would make ∂F/∂(x, ν)
    singular; its row is ν = 0 instead, which gives the one-sided derivatives of the
    side where it does not hold.  Which inequalities are weak is part of the solution:
    flags w (1 for weak, from `_multipliers`), with the condition w(1 − w) = 0 (so
    dw = 0) and ν ∘ (g (1 − w) + w) = 0 for the complementarity.

    `solve_plain(x0 flat, args, block args)` runs the solver on plain values and returns
    (x flat, its result); the multipliers are found from x (`_multipliers`).
    `linear_solve` is `custom_root`'s.  Returns (x in x0's shape, the primitive, args as
    traced)."""
    from ..api import grad, vjp
    x0 = wnp.asarray(x0)
    shape = tuple(x0.shape)
    n = math.prod(shape)
    m = sum(b.m for b in blocks)

    def condition_of(_, tree):
        def condition(z, *leaves):
            a, block_args = unflatten(tree, leaves)
            x = z[:n] if blocks else z
            rows = [grad(lambda x: objective(wnp.reshape(x, shape), a))(x)]
            k = n
            for b, ba in zip(blocks, block_args):
                nu, weak = z[k:k + b.m], z[k + m:k + m + b.m]
                k += b.m
                g, pull = vjp(lambda x: b.fun(wnp.reshape(x, shape), *ba), x)
                rows[0] = rows[0] - pull(nu)[0]
                rows.append(g if b.kind == "eq" else nu * (g * (1.0 - weak) + weak))
            if blocks:
                flags = z[n + m:]                   # (each 0 or 1: dw = 0)
                rows.append(flags * (1.0 - flags))
            return wnp.concatenate(rows) if blocks else wnp.reshape(rows[0], (-1,))
        return condition

    def solve_of(_, tree):
        def solve(z0, leaves):
            a, block_args = unflatten(tree, _plain_leaves(leaves))
            x, found = solve_plain(np.reshape(z0, -1)[:n], a, block_args)
            x = np.asarray(x, dtype=np.float64).reshape(-1)
            if not blocks:
                return x, found
            nu, weak = _multipliers(who, objective, blocks, x, shape, a, block_args)
            return np.concatenate([x, nu, weak]), found
        return solve

    z0 = wnp.concatenate([wnp.reshape(x0, (-1,)), np.zeros(2 * m)]) if blocks else x0
    # (with constraints, J is the KKT matrix: where it is nearly singular `_multipliers`
    # has said why, and x may still have a derivative where ν has none)
    z, prim, _, tree, leaves = _solution(who, name, z0, (args, tuple(b.args for b in blocks)),
                                         condition_of, solve_of, linear_solve,
                                         check_regular=not blocks)
    x = wnp.reshape(z[:n], shape) if blocks else z
    return x, prim, unflatten(tree, leaves)[0]


def _multipliers(who, objective, blocks, x, shape, args, block_args):
    """The KKT multipliers at a plain solution x, by least squares on
    ``∇f(x) = Σ νᵢ ∇gᵢ(x)`` with ν ≥ 0 for the inequalities (SciPy's `lsq_linear`), over
    the equalities and the inequalities within `_NEAR` of holding; zero for the others.
    Warns where x violates a constraint, where x is no KKT point (the solver stopped
    short, or a constraint that holds was missed), and where a constraint holds with a
    zero multiplier (there the minimiser has one-sided derivatives).  Returns ν and the
    flags of those weakly active inequalities (1.0, else 0.0)."""
    from ..api import grad, jacfwd
    so = _scipy_optimize()
    gradient = np.asarray(grad(lambda x: objective(wnp.reshape(x, shape), args))(x),
                          dtype=np.float64).reshape(-1)
    scale = 1.0 + np.max(np.abs(x), initial=0.0)
    near = _NEAR * scale
    rows, lower, picked, weak, slacks = [], [], [], [], []
    k = 0
    for b, ba in zip(blocks, block_args):
        def g(x, b=b, ba=ba):
            return b.fun(wnp.reshape(x, shape), *ba)
        value = np.asarray(g(x), dtype=np.float64).reshape(-1)
        jac = np.asarray(jacfwd(g)(x), dtype=np.float64).reshape(b.m, x.size)
        distance = value / np.maximum(np.linalg.norm(jac, axis=1), 1e-300)
        bad = np.abs(distance) > near if b.kind == "eq" else distance < -near
        if np.any(bad):
            warnings.warn(f"{who}: the solution violates {b.named(bad)} (values "
                          f"{value[bad][:4].tolist()}); the derivatives of the solution "
                          "assume it holds", RuntimeWarning, stacklevel=_caller_level())
        take = np.ones(b.m, bool) if b.kind == "eq" else distance <= near
        rows.append(jac[take])
        slacks.append(np.zeros(b.m)[take] if b.kind == "eq" else np.abs(distance[take]))
        lower.append(np.full(int(take.sum()), -np.inf if b.kind == "eq" else 0.0))
        picked.append(k + np.flatnonzero(take))
        if b.kind == "ineq":
            weak.append((b, k, np.abs(distance) <= 1e-8 * scale))
        k += b.m
    nu = np.zeros(k)
    rows, lower, picked = np.concatenate(rows), np.concatenate(lower), np.concatenate(picked)
    slack = np.concatenate(slacks)
    residual = np.linalg.norm(gradient)
    if picked.size:
        # The constraints within `near` may be more than ∇f needs: a redundant row with
        # a slack of 1e-5 beside the two that hold at a vertex.  Then the multipliers
        # are not unique, and a fit over all of them may put weight on the redundant
        # row and none on one that holds: a wrong active set, wrong derivatives.  So the
        # fit takes the constraints nearest to holding first, and more of them only
        # while that leaves ∇f less well explained than all of them do.
        def fit(take):
            if not take.any():
                return np.zeros(0), np.linalg.norm(gradient)
            v = so.lsq_linear(rows[take].T, gradient, bounds=(lower[take], np.inf),
                              method="bvls", tol=1e-14).x
            return v, np.linalg.norm(gradient - rows[take].T @ v)
        every = np.ones(picked.size, bool)
        best, best_residual = fit(every)
        enough = max(10 * best_residual, 1e-12 * (1.0 + np.linalg.norm(gradient)))
        take, residual = every, best_residual
        for level in _LEVELS:
            fewer = slack <= level * scale
            if fewer.all():
                break
            v, r = fit(fewer)
            if r <= enough:
                take, best, residual = fewer, v, r
                break
        nu[picked[take]] = best
    if residual > np.sqrt(near) * (1.0 + np.linalg.norm(gradient)):
        warnings.warn(f"{who}: the solution is no KKT point (|∇ Lagrangian| = "
                      f"{residual:.2g}): the solver stopped short, or a constraint holds "
                      "that the solution is not near enough to; its derivatives assume it "
                      "is one (tighten tol)", RuntimeWarning, stacklevel=_caller_level())
    holding = rows[(lower == -np.inf) | (nu[picked] > 0)]
    if holding.size and np.linalg.matrix_rank(holding) < holding.shape[0]:
        warnings.warn(f"{who}: the gradients of the constraints that hold at the solution are "
                      "linearly dependent (LICQ fails), so their multipliers are not unique "
                      "and ∂F/∂(x, ν) is singular or nearly; the derivatives of the solution "
                      "may be wrong", RuntimeWarning, stacklevel=_caller_level())
    flags = np.zeros(k)
    for b, start, on in weak:
        zero = on & (nu[start:start + b.m] <= 1e-12 * (1.0 + np.linalg.norm(gradient)))
        if np.any(zero):
            flags[start:start + b.m] = zero
            nu[start:start + b.m][zero] = 0.0
            verb = "holds" if zero.sum() == 1 or b.index is None else "hold"
            warnings.warn(f"{who}: {b.named(zero)} {verb} at the solution with a zero "
                          "multiplier (weakly active): the minimiser's derivatives there are "
                          "one-sided, and these are those of the side where it does not hold",
                          RuntimeWarning, stacklevel=_caller_level())
    return nu, flags


def _flat_hessian(h, n):
    """A Hessian a user's function gave for x in x0's shape, as SciPy takes it on the flat
    x: a natural one, of shape x.shape * 2, reshaped to (n, n); a sparse matrix or a
    LinearOperator passed on as it is."""
    return np.reshape(h, (n, n)) if np.ndim(h) > 2 else h


def _constraints_for_scipy(constraints, x0, shape, method, dict_args=None):
    """The constraints as SciPy calls them, on a flat x: the user's functions get x in
    x0's shape and are checked for traced values they close over, a dict's args are
    replaced by `dict_args` (plain values, by the dict's place) where given, and a dict
    with no 'jac' gets wengert's exact derivatives where the method reads them
    (`_exact_constraint`).  A `NonlinearConstraint`'s are used as given (SciPy's defaults
    are finite differences and quasi-Newton Hessians)."""
    so = _scipy_optimize()
    out = []
    for k, c in enumerate(_listed(constraints)):
        if isinstance(c, dict):
            fun, name = c["fun"], _name(c["fun"])
            args = _as_tuple(c.get("args", ())) if dict_args is None or k not in dict_args \
                else dict_args[k]
            f = (lambda fun, name, args: lambda x: np.asarray(_check_plain(
                fun(x.reshape(shape), *args), "minimize", name), dtype=np.float64))(
                fun, name, args)
            x_size = math.prod(shape)
            c = {**c, "fun": f, "args": ()}
            if callable(c.get("jac")):
                c["jac"] = (lambda jac, args: lambda x: np.asarray(
                    jac(x.reshape(shape), *args), dtype=np.float64).reshape(-1, x_size))(
                    c["jac"], args)
            elif method in ("slsqp", "trust-constr"):
                c = _exact_constraint(c, fun, name, args, x0, shape, method)
        elif isinstance(c, so.NonlinearConstraint):
            c = copy.copy(c)
            fun, jac, name = c.fun, c.jac, _name(c.fun)
            c.fun = lambda x, fun=fun, name=name: np.asarray(_check_plain(
                fun(x.reshape(shape)), "minimize", name), dtype=np.float64)
            if callable(jac):
                c.jac = lambda x, jac=jac: np.asarray(jac(x.reshape(shape)),
                                                      dtype=np.float64).reshape(-1, x.size)
            if callable(c.hess):            # (x in x0's shape, as fun and jac get it)
                c.hess = lambda x, v, hess=c.hess: _flat_hessian(hess(x.reshape(shape), v),
                                                                 x.size)
        out.append(c)
    return out


# --------------------------------------------------------------------------------------
# scalar minimisers
# --------------------------------------------------------------------------------------
def minimize_scalar(fun, bracket=None, bounds=None, args=(), method=None, tol=None,
                    options=None):
    """Minimise a function of one number, ``fun(x, *args)``: SciPy's
    `scipy.optimize.minimize_scalar`, the same call and result, with a differentiable
    minimiser.

    Where args (or a bound) holds a traced value, ``result.x`` is differentiable with
    respect to it: inside the interval fun'(x*) = 0, so dx*/dθ = -(∂fun'/∂θ) / fun''(x*)
    (a strict minimum: fun'' > 0); at a bound of the bounded method the minimiser is the
    bound (dx*/d bound = 1, derivative 0 in args), as `minimize` finds from the KKT
    conditions.  ``result.fun`` is ``fun(result.x, *args)``, traced.  The bracket gets no
    derivative.  The bounded method stops within ``xatol`` (1e-5 by default) of a bound
    that holds, and counts it as holding.

    Args:
        fun: the objective, ``fun(x, *args) -> float``, written with wengert's functions.
        bracket, bounds, args, method, tol, options: SciPy's; bounds (for "bounded") may
            be traced.

    Returns:
        SciPy's `OptimizeResult`.

    Example (the most likely wavelength of Planck's law, Wien's displacement law):
        >>> import wengert as wg, wengert.numpy as wnp
        >>> from wengert.scipy.optimize import minimize_scalar
        >>> def peak(T):             # λ in µm maximising λ⁻⁵ / (exp(hc/λkT) - 1)
        ...     spectrum = lambda lam, T: -lam ** -5 / wnp.expm1(14387.77 / (lam * T))
        ...     return minimize_scalar(spectrum, bounds=(0.1, 10.0), args=(T,),
        ...                            options={"xatol": 1e-10}).x
        >>> print(round(peak(5772.0), 4), round(2897.772 / 5772.0, 4))   # the Sun: b / T
        0.502 0.502
        >>> print(f"{wg.grad(peak)(5772.0):.4e} {-2897.772 / 5772.0 ** 2:.4e}")   # d/dT b/T
        -8.6978e-05 -8.6978e-05
    """
    so = _scipy_optimize()
    args = _as_tuple(args)
    name = _name(fun)
    if bracket is not None:
        bracket = tuple(_value_of(v, "minimize_scalar", "bracket") for v in bracket)
    chosen = method.lower() if isinstance(method, str) else method
    if chosen is None:
        chosen = "bounded" if bounds is not None else "brent"
    if not _traced(args, bounds):
        return so.minimize_scalar(fun, bracket=bracket, bounds=bounds, args=args,
                                  method=method, tol=tol, options=options)
    blocks = []
    if bounds is not None and chosen == "bounded":
        if len(bounds) != 2:
            raise ValueError(f"minimize_scalar: bounds must be a pair (min, max), got "
                             f"{bounds!r:.60}")
        blocks = [_Block("ineq", lambda x, lo: _flat_out(x - lo), (bounds[0],), 1,
                         "the lower bound"),
                  _Block("ineq", lambda x, hi: _flat_out(hi - x), (bounds[1],), 1,
                         "the upper bound")]

    def solve_plain(x0, a, block_args):
        plain = None if not blocks else tuple(float(ba[0]) for ba in block_args)

        def g(x):
            return float(_check_plain(fun(x, *a), "minimize_scalar", name))
        found = so.minimize_scalar(g, bracket=bracket, bounds=plain if blocks else bounds,
                                   method=method, tol=tol, options=options)
        _warn_unless_converged(found, "minimize_scalar")
        return np.array([found.x]), found

    start = 0.0 if bracket is None else 0.5 * (bracket[0] + bracket[-1])
    x, prim, a = _stationary("minimize_scalar", name, np.float64(start), args,
                             lambda x, a: fun(x, *a), blocks, solve_plain)
    found = _result(so.OptimizeResult, prim.result)
    found.x, found.fun = x, fun(x, *a)
    return found


# --------------------------------------------------------------------------------------
# linear programs
# --------------------------------------------------------------------------------------
def linprog(c, A_ub=None, b_ub=None, A_eq=None, b_eq=None, bounds=(0, None), method="highs",
            callback=None, options=None, x0=None, integrality=None):
    """Solve the linear program min cᵀx subject to A_ub x ≤ b_ub, A_eq x = b_eq and
    bounds: SciPy's `scipy.optimize.linprog`, the same call and result, with a solution
    that is differentiable in c, A_ub, b_ub, A_eq, b_eq and the bounds.

    Where any of them is traced, ``result.x`` is one `Solution` node whose condition is
    the problem's KKT conditions (as `minimize`'s with constraints): the constraints that
    hold at the solution keep holding, so at a vertex x moves with the data of those
    constraints (dx/db of a binding row is a column of its inverse) and not with c (the
    vertex stays optimal for small changes of c).  ``result.fun`` (cᵀx), ``result.slack``
    (b_ub − A_ub x) and ``result.con`` (b_eq − A_eq x) are traced too: d fun / d b_ub is
    each row's shadow price (SciPy's ``ineqlin.marginals``) and d fun / dc is x.

    The derivative exists where the solution is a unique, nondegenerate vertex: as many
    independent constraints hold as there are variables, each with a nonzero
    multiplier.  Where more hold (a degenerate vertex) or one holds with a zero
    multiplier (the optimum is not unique, or the derivative is one-sided) it warns
    (RuntimeWarning), as `minimize` does; a one-sided derivative is that of the side
    where the row does not hold, and where there is none (a whole edge is optimal) it
    raises LinAlgError.  An infeasible or unbounded problem raises
    ValueError (there is no solution to differentiate).  A mixed-integer program
    (``integrality``) is solved only on plain values.

    Args:
        c, A_ub, b_ub, A_eq, b_eq: SciPy's: the costs (n), the inequality rows (m×n, m)
            and the equality rows; NumPy arrays, lists, or traced values.  A plain
            scipy.sparse matrix is made dense where a traced solve needs it.
        bounds: SciPy's: one (min, max) pair for every variable, or one per variable;
            None for no bound.  The default, (0, None), makes x ≥ 0.
        method, callback, options, x0, integrality: SciPy's.

    Returns:
        SciPy's `OptimizeResult`.

    Example (a factory: two products, two machines; the shadow price of machine time):
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy.optimize import linprog
        >>> profit = np.array([3.0, 5.0])
        >>> hours = np.array([[1.0, 2.0], [3.0, 2.0]])        # hours per unit on each machine
        >>> def best(available):
        ...     return linprog(-profit, A_ub=hours, b_ub=available).x
        >>> best(np.array([14.0, 18.0])).round(6).tolist()
        [2.0, 6.0]
        >>> wg.jacfwd(best)(np.array([14.0, 18.0])).round(6).tolist()    # = hours⁻¹
        [[-0.5, 0.5], [0.75, -0.25]]
        >>> shadow = wg.grad(lambda b: -linprog(-profit, A_ub=hours, b_ub=b).fun)
        >>> shadow(np.array([14.0, 18.0])).round(6).tolist()     # profit per extra hour
        [2.25, 0.25]
    """
    so = _scipy_optimize()
    data = dict(c=c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds)
    if not _traced(data):
        return so.linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds,
                          method=method, callback=callback, options=options, x0=x0,
                          integrality=integrality)
    if integrality is not None and np.any(np.asarray(integrality) != 0):
        raise NotImplementedError(
            "linprog: a mixed-integer program (integrality) has a solution that jumps "
            "between integer points as its data change, so it is solved on plain values "
            "only; pass plain values, or fix the integer variables and differentiate the "
            "linear program in the others")
    c = wnp.reshape(_data_array(c), (-1,))
    n = int(c.shape[0])
    blocks, roles = [], []
    for kind, A, b, rows in (("ineq", A_ub, b_ub, "A_ub"), ("eq", A_eq, b_eq, "A_eq")):
        if A is None and b is None:
            continue
        A, b = _lp_rows(A, b, n, rows)
        if kind == "ineq":
            fun = lambda x, A, b: b - A @ x         # (SciPy's slack)
        else:
            fun = lambda x, A, b: A @ x - b
        blocks.append(_Block(kind, fun, (A, b), int(b.shape[0]), f"{rows} row{{s}}",
                             index=list(range(int(b.shape[0])))))
        roles.append(rows)
    bound_blocks, bound_roles = _bounds_as_blocks(*_lp_bounds(bounds, n))
    blocks += bound_blocks
    roles += bound_roles

    def solve_plain(_, a, block_args):
        plain = {"A_ub": (None, None), "A_eq": (None, None)}
        plain.update((role, ba) for role, ba in zip(roles, block_args)
                     if isinstance(role, str))
        low, high = _plain_bounds(n, roles, block_args)
        (A_ub, b_ub), (A_eq, b_eq) = plain["A_ub"], plain["A_eq"]
        found = so.linprog(a[0], A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq,
                           bounds=np.stack([low, high], axis=1), method=method,
                           callback=callback, options=options, x0=x0)
        if found.x is None:
            raise ValueError(f"linprog: {found.message} (status {found.status}): there is "
                             "no solution to differentiate")
        _warn_unless_converged(found, "linprog")
        return found.x, found

    x, prim, (c,) = _stationary("linprog", "the linear program", np.zeros(n), (c,),
                                lambda x, a: a[0] @ x, blocks, solve_plain)
    found = _result(so.OptimizeResult, prim.result)
    found.x, found.fun = x, c @ x
    for block, role in zip(blocks, roles):
        if role == "A_ub":
            found.slack = block.fun(x, *block.args)
        elif role == "A_eq":
            found.con = -block.fun(x, *block.args)
    return found


# --------------------------------------------------------------------------------------
# linear least squares with bounds
# --------------------------------------------------------------------------------------
def nnls(A, b, *, maxiter=None, **kwargs):
    """Solve min ‖A x − b‖ subject to x ≥ 0: SciPy's `scipy.optimize.nnls`, the same call
    and result, (x, ‖A x − b‖), with a solution differentiable in A and b.

    Where A or b is traced, x is one `Solution` node of the KKT conditions of
    ½‖A x − b‖² with x ≥ 0 (as `minimize`'s with bounds): the elements held at zero stay
    there, and the others are the least-squares solution on their columns, so
    dx/db = (A_Fᵀ A_F)⁻¹ A_Fᵀ on those (F the free columns, which must be independent).
    An element at zero with a zero multiplier (it would leave zero for some small
    changes, and not for others) warns, as `minimize` does, and has the derivative of
    the side where it leaves zero.

    Example (unmixing: which of three spectra, in what amounts, make up a measurement):
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy.optimize import nnls
        >>> spectra = np.array([[1.0, 0.0, 0.5], [0.5, 1.0, 0.5], [0.0, 0.5, 1.0],
        ...                     [0.2, 0.2, 0.0]])
        >>> measured = np.array([1.0, 1.5, 0.4, 0.4])
        >>> amounts = lambda m: nnls(spectra, m)[0]
        >>> amounts(measured).round(6)          # the third spectrum is not in it
        array([1.019672, 0.953005, 0.      ])
        >>> J = wg.jacfwd(amounts)(measured)    # and stays out for small changes
        >>> bool(np.all(J[2] == 0)), np.allclose(J[:2], np.linalg.pinv(spectra[:, :2]))
        (True, True)
    """
    so = _scipy_optimize()
    if not _traced(A, b):
        return so.nnls(A, b, maxiter=maxiter, **kwargs)
    A, b = _ls_data(A, b, "nnls")
    n = int(A.shape[1])
    blocks, _ = _bounds_as_blocks([0.0] * n, [np.inf] * n)

    def solve_plain(_, a, block_args):
        x, rnorm = so.nnls(a[0], a[1], maxiter=maxiter, **kwargs)
        return x, rnorm

    x, _, (A, b) = _stationary("nnls", "the least-squares problem", np.zeros(n), (A, b),
                               _half_squares, blocks, solve_plain)
    return x, wnp.linalg.norm(A @ x - b)


def lsq_linear(A, b, bounds=(-np.inf, np.inf), method="trf", tol=1e-10, lsq_solver=None,
               lsmr_tol=None, max_iter=None, verbose=0, **kwargs):
    """Solve min ½‖A x − b‖² subject to lb ≤ x ≤ ub: SciPy's
    `scipy.optimize.lsq_linear`, the same call and result, with a solution
    differentiable in A, b and the bounds.

    Where any of them is traced, ``result.x`` is one `Solution` node of the problem's KKT
    conditions (as `nnls`'s, with both sides of each bound): a bound that holds keeps
    holding, the free elements are the least-squares solution given those held.
    ``result.fun`` (A x − b) and ``result.cost`` are traced too.  A dense A (a plain
    scipy.sparse matrix is made dense).

    Example (a fit whose slope may not exceed 1):
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy.optimize import lsq_linear
        >>> t = np.array([0.0, 1.0, 2.0, 3.0])
        >>> A = np.stack([np.ones(4), t], axis=1)             # intercept, slope
        >>> fit = lambda y, top: lsq_linear(A, y, bounds=([-np.inf, -np.inf],
        ...                                               [np.inf, top])).x
        >>> y = np.array([0.1, 1.4, 2.6, 3.9])
        >>> fit(y, 1.0).round(6)                         # the slope sits on its bound
        array([0.5, 1. ])
        >>> round(wg.grad(lambda top: fit(y, top)[0])(1.0), 9)   # the intercept: -mean(t)
        -1.5
    """
    so = _scipy_optimize()
    if not _traced(A, b, bounds):
        return so.lsq_linear(A, b, bounds=bounds, method=method, tol=tol,
                             lsq_solver=lsq_solver, lsmr_tol=lsmr_tol, max_iter=max_iter,
                             verbose=verbose, **kwargs)
    A, b = _ls_data(A, b, "lsq_linear")
    n = int(A.shape[1])
    if isinstance(bounds, so.Bounds):
        bounds = (bounds.lb, bounds.ub)
    if len(bounds) != 2:
        raise ValueError(f"lsq_linear: bounds must be a pair (lb, ub), each a number or "
                         f"one per element of x ({n}), got {len(bounds)} items")
    lo, hi = (_per_element(side, n, "lsq_linear", which)
              for side, which in zip(bounds, ("lb", "ub")))
    blocks, roles = _bounds_as_blocks(lo, hi)

    def solve_plain(_, a, block_args):
        found = so.lsq_linear(a[0], a[1], bounds=_plain_bounds(n, roles, block_args),
                              method=method, tol=tol, lsq_solver=lsq_solver,
                              lsmr_tol=lsmr_tol, max_iter=max_iter, verbose=verbose,
                              **kwargs)
        _warn_unless_converged(found, "lsq_linear")
        return found.x, found

    x, prim, (A, b) = _stationary("lsq_linear", "the least-squares problem", np.zeros(n),
                                  (A, b), _half_squares, blocks, solve_plain)
    found = _result(so.OptimizeResult, prim.result)
    found.x, found.fun = x, A @ x - b
    found.cost = 0.5 * wnp.sum(found.fun ** 2)
    return found


def _half_squares(x, a):
    A, b = a
    r = A @ x - b
    return 0.5 * wnp.sum(r * r)


def _ls_data(A, b, who):
    """A (m×n) and b (m) of a linear least-squares problem, checked against each other."""
    A, b = _data_array(A), wnp.reshape(_data_array(b), (-1,))
    if len(A.shape) != 2 or A.shape[0] != b.shape[0]:
        raise ValueError(f"{who}: A of shape {tuple(A.shape)} and b of shape "
                         f"{tuple(b.shape)} do not fit: A must be (m, n) and b (m,)")
    return A, b


def _per_element(side, n, who, which):
    """One side of bounds as n items (floats, or traced scalars), from a number or n."""
    if type(side) is Node:
        if side.shape == ():
            return [side] * n
        if tuple(side.shape) != (n,):
            raise ValueError(f"{who}: {which} of shape {tuple(side.shape)} for x of shape "
                             f"({n},)")
        return [side[i] for i in range(n)]
    if isinstance(side, (list, tuple)):
        if len(side) != n:
            raise ValueError(f"{who}: {which} has {len(side)} items for x of shape ({n},)")
        return [float(v) if type(v) is not Node else v for v in side]
    v = np.asarray(side, dtype=np.float64)
    if v.shape not in ((), (n,)):
        raise ValueError(f"{who}: {which} of shape {v.shape} for x of shape ({n},)")
    return np.broadcast_to(v, (n,)).tolist()


def _data_array(v):
    """An array of a problem's data (linprog's, the least-squares A and b) as wengert
    takes it: traced, or plain float64."""
    if hasattr(v, "toarray"):                   # (a plain scipy.sparse matrix)
        v = v.toarray()
    v = wnp.asarray(v)
    if type(v) is Node:
        return v if v.dtype.kind == "f" else wnp.astype(v, np.float64)
    return np.asarray(v, dtype=np.float64)


def _lp_rows(A, b, n, what):
    """A_ub and b_ub (or A_eq and b_eq) checked against each other and against c."""
    rhs = "b" + what[1:]
    if A is None or b is None:
        missing, given = (what, rhs) if A is None else (rhs, what)
        raise ValueError(f"linprog: {given} is given without {missing}: they go together")
    A, b = _data_array(A), wnp.reshape(_data_array(b), (-1,))
    if len(A.shape) == 1 and A.shape[0] == n:
        A = wnp.reshape(A, (1, n))              # (one row, as SciPy takes it)
    if len(A.shape) != 2 or A.shape[1] != n or A.shape[0] != b.shape[0]:
        raise ValueError(f"linprog: {what} of shape {tuple(A.shape)} and {rhs} of shape "
                         f"{tuple(b.shape)} do not fit c of shape ({n},): {what} must be "
                         f"({b.shape[0]}, {n})")
    return A, b


def _lp_bounds(bounds, n):
    """linprog's bounds as two lists of n items (a float, ±inf for none, or a traced
    scalar): one (min, max) pair for all variables, or one per variable."""
    if bounds is None:
        bounds = (0, None)
    if type(bounds) is Node:
        pairs = [(bounds[0], bounds[1])] if len(bounds.shape) == 1 else \
            [(bounds[i, 0], bounds[i, 1]) for i in range(bounds.shape[0])]
    elif len(bounds) == 2 and not any(isinstance(v, (list, tuple)) or np.ndim(
            v.value if type(v) is Node else v) for v in bounds if v is not None):
        pairs = [tuple(bounds)]
    else:
        pairs = [tuple(p) for p in bounds]
    if len(pairs) == 1:
        pairs = pairs * n
    if len(pairs) != n or any(len(p) != 2 for p in pairs):
        raise ValueError(f"linprog: bounds must be one (min, max) pair or {n} of them "
                         f"(one per variable), got {len(pairs)} items")
    lo = [-np.inf if v is None else v for v, _ in pairs]
    hi = [np.inf if v is None else v for _, v in pairs]
    return lo, hi


def _bound_groups(lo, hi):
    """Per-element bounds as (kind, values, variables, sign) groups: a variable whose
    plain min and max are equal, or whose min and max are one traced value ((v, v)), is
    fixed (an equality), each finite side of the others an inequality,
    sign·(x − bound) ≥ 0.  Two traced bounds that are equal now are kept apart (their
    values may part).  (As two inequalities, a fixed variable's were dependent: the
    derivative's system was singular.)"""
    plain = lambda v: type(v) is not Node      # noqa: E731
    fixed = [i for i, (a, b) in enumerate(zip(lo, hi))
             if a is b and not plain(a) or plain(a) and plain(b) and a == b]
    free = [i for i in range(len(lo)) if i not in set(fixed)]
    out = []
    if fixed:
        out.append(("eq", lo, fixed, 1.0))
    for side, sign, none in ((lo, 1.0, -np.inf), (hi, -1.0, np.inf)):
        pick = [i for i in free if not (plain(side[i]) and side[i] == none)]
        if pick:
            out.append(("ineq", side, pick, sign))
    return out


def _bounds_as_blocks(lo, hi):
    """Per-element bounds of a flat x (two lists: a float, ±inf for none, or a traced
    scalar each) as `_Block`s, whose args are the bounds (so traced ones carry
    derivatives), and the roles `_plain_bounds` reads them back by."""
    blocks = []
    for kind, side, pick, sign in _bound_groups(lo, hi):
        v = wnp.asarray([side[i] for i in pick])
        if type(v) is Node:
            # a traced bound may be infinite (no bound) at run time: its constraint then
            # reads 1, never holding, where x - inf would make ν·g a nan
            fun = (lambda i, sign: lambda x, v: wnp.where(
                wnp.isinf(v), 1.0, sign * (wnp.reshape(x, (-1,))[i] - v)))(pick, sign)
        else:
            fun = (lambda i, sign: lambda x, v: sign * (wnp.reshape(x, (-1,))[i] - v))(
                np.asarray(pick), sign)
        side = "fixed" if kind == "eq" else "lower" if sign > 0 else "upper"
        blocks.append(_Block(kind, fun, (v,), len(pick), f"the {side} bound{{s}} on x",
                             index=list(pick)))
    return blocks, _bound_roles(lo, hi)


def _bound_roles(lo, hi):
    """The roles `_plain_bounds` reads the blocks of `_bounds_as_blocks` back by, one per
    block: (kind, sign, variables)."""
    return [(kind, sign, pick) for kind, _, pick, sign in _bound_groups(lo, hi)]


def _plain_bounds(n, roles, block_args):
    """The bounds as two float arrays (±inf for none) from the plain args of the blocks
    `_bounds_as_blocks` made (other roles are skipped)."""
    low, high = np.full(n, -np.inf), np.full(n, np.inf)
    for role, ba in zip(roles, block_args):
        if isinstance(role, tuple):
            kind, sign, pick = role
            if sign > 0:
                low[pick] = ba[0]
            if sign < 0 or kind == "eq":
                high[pick] = ba[0]
    return low, high


# --------------------------------------------------------------------------------------
# root, fixed_point
# --------------------------------------------------------------------------------------
def root(fun, x0, args=(), method="hybr", jac=None, tol=None, callback=None, options=None,
         *, linear_solve="dense"):
    """Solve ``fun(x, *args) = 0``: SciPy's `scipy.optimize.root`, with an exact Jacobian
    and a differentiable solution.

    The call and the result are SciPy's, except that hybr and lm get wengert's exact
    Jacobian where you give none (``jac=True`` means fun returns (F, J), a callable is
    your Jacobian), and that x0 may have any shape (fun gets x and returns F in it).
    Where args holds a traced value, ``result.x`` is differentiable with respect to it:
    dx*/dθ = -(∂F/∂x)⁻¹ ∂F/∂θ at the root, which must be a regular one; ``result.fun`` is
    F there, traced too.  With more equations than unknowns, method lm (SciPy's takes
    them) finds a least-squares point, differentiable as `least_squares`' is: through
    the condition that the gradient of ½|F|² is zero.  A solve that did not converge
    warns (RuntimeWarning).
    ``linear_solve`` (keyword, wengert's) says how that derivative solves with ∂F/∂x, as
    `wg.custom_root`'s: "dense" (the default), "gmres" (matrix-free, for a large x),
    "cg" (a symmetric positive definite ∂F/∂x) or a function.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy.optimize import root
        >>> def f(x, c):          # x0 + x1 = c, x0 x1 = 1: the roots of t² - c t + 1
        ...     return [x[0] + x[1] - c, x[0] * x[1] - 1.0]
        >>> sol = root(f, [2.0, 0.5], args=(3.0,))
        >>> sol.x.round(6).tolist()
        [2.618034, 0.381966]
        >>> bigger = lambda c: root(f, [2.0, 0.5], args=(c,)).x[0]
        >>> x = bigger(3.0)
        >>> print(round(wg.grad(bigger)(3.0), 6), round(x / (2 * x - 3.0), 6))  # closed form
        1.17082 1.17082
    """
    return _root(fun, x0, args, method, jac, tol, callback, options, linear_solve, "root")


def _root(fun, x0, args, method, jac, tol, callback, options, linear_solve, who):
    """`root`, which reports as `who` (fsolve is root's hybr)."""
    so = _scipy_optimize()
    _check_start(x0, who)
    x0 = _one_dimensional_if_scalar(x0)
    args = _as_tuple(args)
    linear = _LinearSolve(linear_solve, who=who)
    known = method.lower() if isinstance(method, str) else None
    pick = jac is True
    traced_fun = _traced_first(fun, who, pick)

    def system(x, a, shape):
        return _flat_out(traced_fun(wnp.reshape(x, shape), *a))

    def solve_of(shape, tree, traced=False):
        def solve(x0, leaves):
            a = unflatten(tree, _plain_leaves(leaves)) if tree is not None else args
            found = _root_plain(so, fun, x0.reshape(-1), shape, a, known, jac, pick, who,
                                dict(method=method, tol=tol,
                                     callback=_shaped_callback(callback, shape),
                                     options=options))
            if traced:
                _warn_unless_converged(found, who)
            return found.x, found
        return solve

    if not _traced(x0, args):
        shape = np.shape(x0)
        found = solve_of(shape, None)(np.asarray(x0, dtype=np.float64), None)[1]
        found.x = found.x.reshape(shape)
        return found

    def condition_of(shape, tree):
        n = math.prod(shape)

        def condition(x, *leaves):
            a = unflatten(tree, leaves)
            out = system(x, a, shape)
            if out.shape != (n,):
                if known == "lm" and out.shape[0] > n:
                    # lm (MINPACK's leastsq) takes more equations than unknowns and finds
                    # a least-squares point: where the gradient of ½|F|² is zero
                    from ..api import grad
                    return grad(lambda y: 0.5 * wnp.sum(system(y, a, shape) ** 2))(x)
                raise ValueError(f"{who}: fun returned {out.shape[0]} equations for {n} "
                                 "unknowns; a differentiable root needs as many as unknowns"
                                 + (" (method='lm' takes more, as a least-squares problem)"
                                    if out.shape[0] > n else ""))
            return out
        return condition

    x, prim, shape, tree, leaves = _solution(
        who, _name(fun), x0, args, condition_of,
        lambda shape, tree: solve_of(shape, tree, True), linear)
    found = _result(so.OptimizeResult, prim.result)
    found.x = x
    found.fun = wnp.asarray(traced_fun(x, *unflatten(tree, leaves)))
    return found


def fsolve(func, x0, args=(), fprime=None, full_output=0, col_deriv=0, xtol=1.49012e-08,
           maxfev=0, band=None, epsfcn=None, factor=100, diag=None):
    """The roots of ``func(x, *args) = 0``: SciPy's `scipy.optimize.fsolve` (MINPACK's
    hybrd), the same call and results, with an exact Jacobian and a differentiable root.

    It is `root` with method "hybr": without fprime, MINPACK gets wengert's exact
    Jacobian (SciPy's would be finite differences); where args holds a traced value,
    the root is differentiable with respect to it (dx*/dθ = -(∂F/∂x)⁻¹ ∂F/∂θ).  As
    SciPy's, the result is one-dimensional, and a solve that did not converge warns
    (RuntimeWarning) unless ``full_output``, which returns (x, infodict, ier, mesg).

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.optimize import fsolve
        >>> def f(x, c):          # x0 + x1 = c, x0 x1 = 1: the roots of t² - c t + 1
        ...     return [x[0] + x[1] - c, x[0] * x[1] - 1.0]
        >>> fsolve(f, [2.0, 0.5], args=(3.0,)).round(6)
        array([2.618034, 0.381966])
        >>> print(round(wg.grad(lambda c: fsolve(f, [2.0, 0.5], args=(c,))[0])(3.0), 6))
        1.17082
    """
    options = dict(col_deriv=col_deriv, xtol=xtol, maxfev=maxfev, band=band, eps=epsfcn,
                   factor=factor, diag=diag)
    found = _root(func, x0, args, "hybr", fprime, None, None, options, "dense", "fsolve")
    x = wnp.reshape(found.x, (-1,))
    status = found.get("status")
    if full_output:
        info = {k: found.get(k) for k in ("nfev", "njev", "fjac", "r", "qtf")
                if k != "njev" or "njev" in found}
        info["fvec"] = wnp.reshape(found.fun, (-1,))
        return x, info, status, found.get("message")
    if status is not None and status != 1 and not _traced(x0, args):
        # (SciPy's fsolve warns so; a traced solve has warned already, in root)
        warnings.warn(found.message, RuntimeWarning, stacklevel=2)
    return x


def _root_plain(so, fun, x0, shape, args, method, jac, pick, who, kwargs):
    from ..api import jacfwd
    name = getattr(fun, "__name__", "fun")

    def f(x):
        out = fun(x.reshape(shape), *args)
        _check_plain(out, who, name)
        if pick:                                # (F, its Jacobian): both flat as SciPy's
            return (np.reshape(np.asarray(out[0], dtype=np.float64), -1),
                    np.asarray(out[1], dtype=np.float64).reshape(-1, x.size))
        return np.reshape(np.asarray(out, dtype=np.float64), -1)
    m = f(x0).size if not pick else None
    if jac is None and method in _ROOT_JACOBIAN_METHODS:
        leaves, tree, key = _kernel_args(args, who, fun, shape)

        def jacobian(x, leaves):
            return jacfwd(lambda x: _flat_out(fun(wnp.reshape(x, shape),
                                                  *unflatten(tree, leaves))))(x)
        jac = _supplied(_Derivative(jacobian, leaves, key, lambda j: np.asarray(
            j, dtype=np.float64).reshape(m, -1)), (x0,), who, name, "Jacobian")
        if (kwargs["options"] or {}).get("col_deriv"):
            # (col_deriv says how *your* Jacobian is laid out: wengert's is in rows)
            kwargs = dict(kwargs, options=dict(kwargs["options"], col_deriv=0))
    elif callable(jac):
        user_jac = jac

        def jac(x):                             # noqa: F811
            return np.asarray(user_jac(x.reshape(shape), *args)).reshape(-1, x.size)
    elif pick:
        jac = True
    return so.root(f, x0, method=kwargs["method"], jac=jac, tol=kwargs["tol"],
                   callback=kwargs["callback"], options=kwargs["options"])


def fixed_point(func, x0, args=(), xtol=1e-08, maxiter=500, method="del2", *,
                linear_solve="dense"):
    """A fixed point ``x = func(x, *args)``: SciPy's `scipy.optimize.fixed_point`, with a
    differentiable solution.

    Where args holds a traced value, the result is differentiable with respect to it:
    with F(x, θ) = func(x, θ) - x, dx*/dθ = (I - ∂func/∂x)⁻¹ ∂func/∂θ at the fixed point
    (1 must not be an eigenvalue of ∂func/∂x there).  SciPy raises RuntimeError where it
    does not converge, and so does this.  ``linear_solve`` (keyword, wengert's) is
    `root`'s.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> from wengert.scipy.optimize import fixed_point
        >>> solve = lambda a: fixed_point(lambda x, a: wnp.cos(a * x), 0.5, args=(a,))
        >>> x = solve(1.0)                           # the Dottie number, x = cos x
        >>> print(round(float(x), 6), round(wg.grad(solve)(1.0), 6),
        ...       round(-x * wnp.sin(x) / (1 + wnp.sin(x)), 6))
        0.739085 -0.297474 -0.297474
    """
    so = _scipy_optimize()
    _check_start(x0, "fixed_point")
    args = _as_tuple(args)
    linear = _LinearSolve(linear_solve, who="fixed_point")
    name = getattr(func, "__name__", "func")

    def solve_of(shape, tree):
        def solve(x0, leaves):
            a = unflatten(tree, _plain_leaves(leaves)) if tree is not None else args

            def g(x):
                return np.asarray(_check_plain(func(x.reshape(shape), *a), "fixed_point",
                                               name), dtype=np.float64).reshape(x.shape)
            x = so.fixed_point(g, np.reshape(x0, -1), xtol=xtol, maxiter=maxiter,
                               method=method)
            return x, None
        return solve

    if not _traced(x0, args):
        shape = np.shape(x0)
        x = solve_of(shape, None)(np.asarray(x0, dtype=np.float64), None)[0]
        return np.reshape(x, shape)

    def condition_of(shape, tree):
        def condition(x, *leaves):
            out = func(wnp.reshape(x, shape), *unflatten(tree, leaves))
            return _flat_out(out) - x
        return condition

    return _solution("fixed_point", _name(func), x0, args, condition_of, solve_of,
                     linear)[0]


# --------------------------------------------------------------------------------------
# scalar roots
# --------------------------------------------------------------------------------------
def brentq(f, a, b, args=(), xtol=2e-12, rtol=8.881784197001252e-16, maxiter=100,
           full_output=False, disp=True):
    """A root of ``f(x, *args)`` in the bracket [a, b]: SciPy's `scipy.optimize.brentq`,
    with a differentiable root.

    Where args holds a traced value, the root is differentiable with respect to it:
    dx*/dθ = -(∂f/∂θ) / f'(x*) (a simple root: f' ≠ 0).  The bracket gets no derivative
    (a root strictly inside it does not move with it).  `brenth`, `ridder`, `bisect` and
    `toms748` are the same with SciPy's other bracketing methods.

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.optimize import brentq
        >>> cube_root = lambda c: brentq(lambda x, c: x ** 3 - c, 0.0, 4.0, args=(c,))
        >>> print(round(cube_root(2.0), 6), round(wg.grad(cube_root)(2.0), 6),
        ...       round(2.0 ** (-2 / 3) / 3, 6))       # d/dc c^(1/3)
        1.259921 0.209987 0.209987
    """
    return _bracketed("brentq", f, a, b, args, full_output, xtol=xtol, rtol=rtol,
                      maxiter=maxiter, disp=disp)


def brenth(f, a, b, args=(), xtol=2e-12, rtol=8.881784197001252e-16, maxiter=100,
           full_output=False, disp=True):
    """A root in [a, b] by SciPy's `scipy.optimize.brenth` (Brent's method with hyperbolic
    extrapolation), differentiable in args as `brentq`'s.

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.optimize import brenth
        >>> root = lambda c: brenth(lambda x, c: x * x - c, 0.0, 3.0, args=(c,))
        >>> print(round(root(4.0), 9), round(wg.grad(root)(4.0), 9))   # 1 / (2√c)
        2.0 0.25
    """
    return _bracketed("brenth", f, a, b, args, full_output, xtol=xtol, rtol=rtol,
                      maxiter=maxiter, disp=disp)


def ridder(f, a, b, args=(), xtol=2e-12, rtol=8.881784197001252e-16, maxiter=100,
           full_output=False, disp=True):
    """A root in [a, b] by SciPy's `scipy.optimize.ridder` (Ridders' method),
    differentiable in args as `brentq`'s.

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.optimize import ridder
        >>> root = lambda c: ridder(lambda x, c: x * x - c, 0.0, 3.0, args=(c,))
        >>> print(round(root(4.0), 9), round(wg.grad(root)(4.0), 9))
        2.0 0.25
    """
    return _bracketed("ridder", f, a, b, args, full_output, xtol=xtol, rtol=rtol,
                      maxiter=maxiter, disp=disp)


def bisect(f, a, b, args=(), xtol=2e-12, rtol=8.881784197001252e-16, maxiter=100,
           full_output=False, disp=True):
    """A root in [a, b] by SciPy's `scipy.optimize.bisect`, differentiable in args as
    `brentq`'s (the derivative is the implicit function theorem's, exact at the root
    found, however slowly bisection found it).

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.optimize import bisect
        >>> root = lambda c: bisect(lambda x, c: x * x - c, 0.0, 3.0, args=(c,))
        >>> print(round(root(4.0), 9), round(wg.grad(root)(4.0), 9))
        2.0 0.25
    """
    return _bracketed("bisect", f, a, b, args, full_output, xtol=xtol, rtol=rtol,
                      maxiter=maxiter, disp=disp)


def toms748(f, a, b, args=(), k=1, xtol=2e-12, rtol=8.881784197001252e-16, maxiter=100,
            full_output=False, disp=True):
    """A root in [a, b] by SciPy's `scipy.optimize.toms748` (Alefeld, Potra and Shi's
    algorithm 748), differentiable in args as `brentq`'s.

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.optimize import toms748
        >>> root = lambda c: toms748(lambda x, c: x * x - c, 0.0, 3.0, args=(c,))
        >>> print(round(root(4.0), 9), round(wg.grad(root)(4.0), 9))
        2.0 0.25
    """
    return _bracketed("toms748", f, a, b, args, full_output, k=k, xtol=xtol, rtol=rtol,
                      maxiter=maxiter, disp=disp)


def _bracketed(who, f, a, b, args, full_output, **options):
    """SciPy's bracketing root finder `who` on [a, b], its root a `Solution` where args
    holds a traced value (the bracket gets no derivative)."""
    so = _scipy_optimize()
    args = _as_tuple(args)
    name = getattr(f, "__name__", "f")
    bracket = [_value_of(a, who, "a"), _value_of(b, who, "b")]

    def solve(x0, leaves, tree=None):
        a_ = unflatten(tree, _plain_leaves(leaves)) if tree is not None else args

        def g(x):
            return float(_check_plain(f(x, *a_), who, name))
        found = getattr(so, who)(g, *bracket, full_output=True, **options)
        if tree is not None and not found[1].converged:      # (disp=False: no error)
            _warn_unless_converged(found[1], who, ok=False)
        return np.array([found[0]]), found[1]

    if not _traced(args):
        x, r = solve(None, None)
        return (float(x[0]), r) if full_output else float(x[0])
    x, prim = _scalar_solution(who, f, 0.5 * (bracket[0] + bracket[1]), args,
                               lambda shape, tree: lambda x0, leaves: solve(x0, leaves, tree),
                               name)
    return (x, prim.result) if full_output else x


def root_scalar(f, args=(), method=None, bracket=None, fprime=None, fprime2=None, x0=None,
                x1=None, xtol=None, rtol=None, maxiter=None, options=None):
    """A root of ``f(x, *args)``: SciPy's `scipy.optimize.root_scalar`, with exact
    derivatives and a differentiable root.

    Where the method is newton or halley (or none is named and x0 is given without x1 or
    a bracket, which SciPy solves by newton) and you give no fprime (fprime2), they are
    wengert's, exact; SciPy would fall back to the secant method.  Where args holds a
    traced value, ``result.root`` is differentiable with respect to it: dx*/dθ =
    -(∂f/∂θ) / f'(x*) at a simple root.  A solve that did not converge warns.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> from wengert.scipy.optimize import root_scalar
        >>> kepler = lambda E, M, e: E - e * wnp.sin(E) - M     # Kepler's equation
        >>> anomaly = lambda M: root_scalar(kepler, args=(M, 0.3), x0=M).root
        >>> E = anomaly(1.0)
        >>> print(round(E, 6), round(wg.grad(anomaly)(1.0), 6), round(1 / (1 - 0.3 * wnp.cos(E)), 6))
        1.288091 1.091329 1.091329
    """
    so = _scipy_optimize()
    args = _as_tuple(args)
    name = getattr(f, "__name__", "f")
    if bracket is not None:
        bracket = [_value_of(v, "root_scalar", "bracket") for v in bracket]
    x0 = None if x0 is None else _value_of(x0, "root_scalar", "x0")
    x1 = None if x1 is None else _value_of(x1, "root_scalar", "x1")
    chosen = method.lower() if isinstance(method, str) else method
    if chosen is None and bracket is None and x0 is not None and x1 is None:
        chosen = "halley" if fprime2 is not None else "newton"

    pick = fprime is True or fprime2 is True      # f returns (f, f'[, f'']) itself

    def solve(start, leaves, tree=None):
        a = unflatten(tree, _plain_leaves(leaves)) if tree is not None else args

        def g(x):
            out = _check_plain(f(x, *a), "root_scalar", name)
            return tuple(float(v) for v in out) if pick else float(out)
        # (SciPy calls fprime and fprime2 with args after x; g has them bound, so they
        # need them bound too)
        d1, d2 = ((lambda x, d=d: d(x, *a)) if callable(d) else d for d in (fprime, fprime2))
        if chosen in ("newton", "halley") and d1 is None:
            d1 = _derivative(f, a, 1, name, x0)
        if chosen == "halley" and d2 is None:
            d2 = _derivative(f, a, 2, name, x0)
        found = so.root_scalar(g, method=chosen if chosen is not None else method,
                               bracket=bracket, fprime=d1, fprime2=d2, x0=x0, x1=x1,
                               xtol=xtol, rtol=rtol, maxiter=maxiter, options=options)
        if tree is not None and not found.converged:
            _warn_unless_converged(found, "root_scalar", ok=False)
        return np.array([found.root]), found

    if not _traced(args):
        return solve(None, None)[1]
    start = x0 if x0 is not None else 0.5 * (bracket[0] + bracket[1]) if bracket else 0.0
    x, prim = _scalar_solution("root_scalar", (lambda x, *a: f(x, *a)[0]) if pick else f,
                               start, args,
                               lambda shape, tree: lambda x0, leaves: solve(x0, leaves, tree),
                               name)
    found = prim.result
    if found is None:
        found = _scipy_optimize().RootResults(root=None, iterations=0, function_calls=0,
                                              flag=0, method=chosen)
    else:
        found = copy.copy(found)          # (SciPy's numbers; the root becomes ours)
    found.root = x
    return found


def newton(func, x0, fprime=None, args=(), tol=1.48e-08, maxiter=50, fprime2=None, x1=None,
           rtol=0.0, full_output=False, disp=True):
    """A root of ``func(x, *args)`` near x0: SciPy's `scipy.optimize.newton`, with exact
    derivatives and a differentiable root.

    With no fprime and no x1, SciPy would take the secant method; wengert gives it the
    exact f′, so it takes Newton's (with x1, the secant method as asked).  x0 may be an
    array, for SciPy's vectorised form, where func maps each element on its own; f′ is
    then the elementwise derivative.  Where args holds a traced value the root is
    differentiable with respect to it: dx*/dθ = -(∂f/∂θ) / f′(x*) (for an array, the
    Jacobian's solve).  x0 gets no derivative.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> from wengert.scipy.optimize import newton
        >>> kepler = lambda E, M, e: E - e * wnp.sin(E) - M       # Kepler's equation
        >>> anomaly = lambda M: newton(kepler, M, args=(M, 0.3))
        >>> E = anomaly(1.0)
        >>> print(round(E, 6), round(wg.grad(anomaly)(1.0), 6), round(1 / (1 - 0.3 * wnp.cos(E)), 6))
        1.288091 1.091329 1.091329
        >>> import numpy as np                                 # vectorised: three at once
        >>> M = np.array([0.5, 1.0, 2.0])
        >>> J = wg.jacfwd(lambda M: newton(kepler, M, args=(M, 0.3)))(M)
        >>> np.diag(J).round(4), (1 / (1 - 0.3 * np.cos(newton(kepler, M, args=(M, 0.3))))).round(4)
        (array([1.3006, 1.0913, 0.8438]), array([1.3006, 1.0913, 0.8438]))
    """
    so = _scipy_optimize()
    _check_start(x0, "newton")
    args = _as_tuple(args)
    name = _name(func)
    shape = tuple(x0.shape) if type(x0) is Node else np.shape(x0)

    def solve(z0, leaves, tree=None):
        a = unflatten(tree, _plain_leaves(leaves)) if tree is not None else args
        start = _plain_start(np.reshape(z0, shape), shape)

        def g(x):
            return _check_plain(func(x, *a), "newton", name)
        d1 = fprime if not callable(fprime) else (lambda x, *ignored: fprime(x, *a))
        d2 = fprime2 if not callable(fprime2) else (lambda x, *ignored: fprime2(x, *a))
        if d1 is None and x1 is None:
            d1 = _derivative(func, a, 1, name, start, "newton")
        found = so.newton(g, start, fprime=d1, tol=tol, maxiter=maxiter, fprime2=d2,
                          x1=x1, rtol=rtol, full_output=True, disp=disp)
        # (SciPy's full output: (root, RootResults) for a scalar x0, one named tuple
        # (root, converged, zero_der) for an array)
        root, found = found[0], (found[1] if shape == () else found)
        if tree is not None and not np.all(found.converged):    # (disp=False: no error)
            _warn_unless_converged(found, "newton", ok=False)
        return np.reshape(np.asarray(root, dtype=np.float64), -1), found

    def output(root, found):
        if not full_output:
            return root
        return (root, found) if shape == () else found._replace(root=root)

    if not _traced(x0, args):
        root, found = solve(np.asarray(x0, dtype=np.float64), None)
        return output(float(root[0]) if shape == () else root.reshape(shape), found)

    def condition_of(_, tree):
        def condition(x, *leaves):
            return _flat_out(func(wnp.reshape(x, shape), *unflatten(tree, leaves)))
        return condition
    # (x0, traced or not, is where the solve starts at run time: under vmap, each example's)
    x, prim, *_ = _solution("newton", name, x0, args, condition_of,
                            lambda _, tree: lambda z0, leaves: solve(z0, leaves, tree))
    return output(x, prim.result)


def _derivative(f, args, order, name, x0, who="root_scalar"):
    """The `order`-th derivative of f in x at fixed args, as SciPy calls it: x a float, or
    for newton's vectorised form an array whose elements f maps one to one (so the
    derivative of each is a directional derivative along ones)."""
    from ..api import jvp
    shape = np.shape(x0) if x0 is not None else ()
    leaves, tree, key = _kernel_args(args, (who, order), f, shape)
    ones = 1.0 if shape == () else np.ones(shape)

    def d(x, leaves):
        g = lambda x: f(x, *unflatten(tree, leaves))    # noqa: E731
        for _ in range(order):
            g = (lambda h: lambda x: jvp(h, (x,), (ones,))[1])(g)
        return g(x)
    finish = float if shape == () else (lambda v: np.asarray(v, dtype=np.float64))
    derivative = _Derivative(d, leaves, key, finish)
    if x0 is not None:
        _supplied(derivative, (_plain_start(x0, shape),), who, name, "derivative")
    if shape == ():
        return lambda x, *ignored: derivative(float(x))  # (SciPy passes args: ours are bound)
    return lambda x, *ignored: derivative(np.asarray(x, dtype=np.float64))


def _plain_start(x0, shape):
    return float(x0) if shape == () else np.asarray(x0, dtype=np.float64)


def _scalar_solution(who, f, start, args, solve_of, name):
    """The traced scalar solve: a `Solution` of one unknown, F = f (named `name`)."""
    def condition_of(shape, tree):
        def condition(x, *leaves):
            out = f(x[0], *unflatten(tree, leaves))
            return _flat_out(out)
        return condition
    x, prim, *_ = _solution(who, name, np.array([float(start)]), args, condition_of, solve_of)
    return x[0], prim


def _value_of(v, who, name):
    """A number that gets no derivative (a bracket, a starting point) as a float."""
    if type(v) is Node:
        if v.value is None:
            raise ConcretizationError(f"{who}: {name} must be a known number (it is traced "
                                      "without a value here)")
        v = v.value
    return float(v)


# --------------------------------------------------------------------------------------
# least_squares
# --------------------------------------------------------------------------------------
def _rho(loss, z):
    """SciPy's robust losses ρ(z) of z = (r/f_scale)², written with wengert's functions
    (the condition is the gradient of the cost, ½ f_scale² Σ ρ(z))."""
    if loss == "linear":
        return z
    if loss == "soft_l1":
        return 2 * (wnp.sqrt(1 + z) - 1)
    if loss == "huber":
        return wnp.where(z <= 1, z, 2 * wnp.sqrt(wnp.maximum(z, 1.0)) - 1)
    if loss == "cauchy":
        return wnp.log1p(z)
    if loss == "arctan":
        return wnp.arctan(z)
    return loss(z)[0]                             # a callable's first row is ρ (SciPy's)


def least_squares(fun, x0, jac=None, bounds=(-np.inf, np.inf), method="trf", ftol=1e-08,
                  xtol=1e-08, gtol=1e-08, x_scale=None, loss="linear", f_scale=1.0,
                  diff_step=None, tr_solver=None, tr_options=None, jac_sparsity=None,
                  max_nfev=None, verbose=0, args=(), kwargs=None, callback=None,
                  workers=None, *, linear_solve="dense"):
    """Nonlinear least squares, min ½ Σ ρ(fᵢ(x)²): SciPy's `scipy.optimize.least_squares`,
    with an exact Jacobian and a differentiable solution.

    The call and the result are SciPy's, except that ``jac=None`` (the default here) is
    wengert's exact Jacobian of the residuals (forward or reverse mode, whichever is
    cheaper for their shape), where SciPy's default is ``"2-point"`` finite differences,
    which you can still ask for (and spread over ``workers``, as SciPy does).  Where args
    (or kwargs, or f_scale) hold a traced value, ``result.x`` is differentiable with
    respect to it, through the condition that the cost's gradient is zero (with the exact
    second derivatives of the residuals, not the Gauss–Newton approximation);
    ``result.fun`` and ``result.cost`` are traced too.  Any of SciPy's losses works, and
    a callable one if written with `wengert.numpy`.  A bound
    that holds at the solution keeps holding (the KKT conditions, as `minimize`'s).
    ``linear_solve`` (keyword, wengert's) says how the derivative solves with the cost's
    Hessian: "dense" (the default), "cg" (matrix-free, for many parameters; "gmres" with
    a bound that holds) or a function, as `wg.custom_root`'s.

    Example:
        >>> import numpy as np, wengert as wg, wengert.numpy as wnp
        >>> from wengert.scipy.optimize import least_squares
        >>> t = np.linspace(0.0, 3.0, 20)
        >>> data = 2.0 * np.exp(-1.3 * t) + 0.01 * np.sin(7 * t)    # "measurements"
        >>> resid = lambda p, y: p[0] * wnp.exp(-p[1] * t) - y
        >>> fit = least_squares(resid, [1.0, 1.0], args=(data,))
        >>> fit.x.round(4).tolist()
        [2.0038, 1.3018]
        >>> sens = wg.jacfwd(lambda y: least_squares(resid, [1.0, 1.0], args=(y,)).x)(data)
        >>> sens.shape                     # how each fitted parameter moves with each datum
        (2, 20)
    """
    so = _scipy_optimize()
    _check_start(x0, "least_squares")
    x0 = _one_dimensional_if_scalar(x0)
    args = _as_tuple(args)
    linear = _LinearSolve(linear_solve, who="least_squares")
    kwargs = {} if kwargs is None else dict(kwargs)
    name = getattr(fun, "__name__", "fun")
    bounds, roles = _box(bounds, wnp.shape(x0), "least_squares")
    options = dict(bounds=bounds, method=method, ftol=ftol, xtol=xtol, gtol=gtol,
                   x_scale=x_scale, loss=loss, f_scale=f_scale, diff_step=diff_step,
                   tr_solver=tr_solver, tr_options=tr_options, jac_sparsity=jac_sparsity,
                   max_nfev=max_nfev, verbose=verbose,
                   callback=_shaped_callback(callback, wnp.shape(x0)))
    if x_scale is None:
        del options["x_scale"]             # (SciPy's own default, which changed in 1.16)
    if workers is not None:                # (SciPy 1.16's; finite differences use them)
        options["workers"] = workers

    def residuals(x, a, kw):
        return _flat_out(fun(x, *a, **kw))

    if not _traced(x0, args, kwargs, bounds, f_scale):
        shape = np.shape(x0)
        found = _least_squares_plain(so, fun, np.reshape(np.asarray(x0, dtype=np.float64), -1),
                                     shape, args, kwargs, jac, name, options)
        found.x = found.x.reshape(shape)
        return found
    if not (callable(loss) or loss in ("linear", "soft_l1", "huber", "cauchy", "arctan")):
        raise ValueError(f"least_squares: loss must be one of 'linear', 'soft_l1', 'huber', "
                         f"'cauchy', 'arctan' or a callable, got {loss!r}")

    def cost(x, args):          # (f_scale is a parameter too: the robust loss's scale)
        a, kw, scale = args
        r = residuals(x, a, kw)
        return 0.5 * scale ** 2 * wnp.sum(_rho(loss, r * r / scale ** 2))

    x0 = wnp.asarray(x0)
    shape = tuple(x0.shape)

    def solve_plain(x0, args, block_args):
        a, kw, scale = args
        held = dict(options, f_scale=float(scale))
        if roles:               # (SciPy gets the traced bounds' values of this solve)
            held["bounds"] = _plain_bounds(x0.size, roles, block_args)
        found = _least_squares_plain(so, fun, x0, shape, a, kw, jac, name, held)
        _warn_unless_converged(found, "least_squares")
        return found.x, found

    x, prim, a = _stationary("least_squares", name, x0, (args, kwargs, f_scale), cost,
                             _blocks((), bounds, x0, shape), solve_plain, linear)
    found = _result(so.OptimizeResult, prim.result)
    found.x = x
    found.fun = residuals(x, *a[:2])
    found.cost = cost(x, a)
    return found


def _box(bounds, shape, who):
    """least_squares' and curve_fit's bounds ((lb, ub), or a `Bounds`) for the flat x:
    (a plain `Bounds`, None) or, where a side is traced, (a (min, max) pair per
    element, the roles by which `_plain_bounds` gives SciPy each solve's values)."""
    so = _scipy_optimize()
    if not isinstance(bounds, so.Bounds):
        bounds = so.Bounds(*(wnp.asarray(side) for side in bounds))   # (lists of traced)
    flat = _flat_bounds(bounds, shape, who)
    if isinstance(flat, so.Bounds):
        return flat, None
    return flat, _bound_roles(*_bound_lists(flat))


def leastsq(func, x0, args=(), Dfun=None, full_output=False, col_deriv=False,
            ftol=1.49012e-08, xtol=1.49012e-08, gtol=0.0, maxfev=0, epsfcn=None, factor=100,
            diag=None):
    """Minimise the sum of squares of ``func(x, *args)``: SciPy's `scipy.optimize.leastsq`
    (MINPACK's Levenberg-Marquardt), the same call and results, with an exact Jacobian
    and a differentiable fit.

    Without Dfun, MINPACK gets wengert's exact Jacobian (SciPy's would be finite
    differences); ``Dfun=False`` asks for MINPACK's finite differences (a func of plain
    floats, which wengert cannot differentiate).  Where args holds a traced value, x is
    differentiable with respect to it (the gradient of the sum of squares is zero at the
    fit: the Hessian, with exact second derivatives, must be regular), and with
    ``full_output`` so are ``cov_x``, (JᵀJ)⁻¹ of the exact Jacobian at the traced fit, and
    ``infodict["fvec"]``.  The result is (x, ier), or (x, cov_x, infodict, mesg, ier), x
    one-dimensional, as SciPy's; a fit that did not converge warns (RuntimeWarning) unless
    ``full_output``.

    Example (a decay rate from noisy data, and how it moves with one datum):
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy.optimize import leastsq
        >>> t = np.linspace(0.0, 2.0, 6)
        >>> y = np.array([1.02, 0.66, 0.46, 0.30, 0.21, 0.13])
        >>> residuals = lambda p, y: p[0] * wg.numpy.exp(-p[1] * t) - y
        >>> rate = lambda y: leastsq(residuals, [1.0, 1.0], args=(y,))[0][1]
        >>> print(round(float(rate(y)), 4), round(float(wg.grad(rate)(y)[0]), 4))
        1.0113 0.9033
    """
    from ..api import jacfwd
    so = _scipy_optimize()
    _check_start(x0, "leastsq")
    x0 = _one_dimensional_if_scalar(x0)
    args = _as_tuple(args)
    name = _name(func)
    shape = tuple(x0.shape) if type(x0) is Node else np.shape(x0)
    options = dict(ftol=ftol, xtol=xtol, gtol=gtol, maxfev=maxfev, epsfcn=epsfcn,
                   factor=factor, diag=diag)

    def fit(x0, a):
        """SciPy's leastsq on plain values, with full output."""
        x0 = np.reshape(np.asarray(x0, dtype=np.float64), -1)
        f, exact = _residuals(func, x0, shape, a, {}, name, "leastsq", Dfun is None)
        if Dfun is None:
            return so.leastsq(f, x0, Dfun=exact, full_output=True, **options)
        if Dfun is False:                       # (MINPACK's finite differences)
            return so.leastsq(f, x0, full_output=True, **options)
        return so.leastsq(f, x0, Dfun=lambda x: Dfun(x.reshape(shape), *a),
                          full_output=True, col_deriv=col_deriv, **options)

    def warn_unless_converged(ier, mesg):
        if ier not in (1, 2, 3, 4) and not full_output:
            warnings.warn(mesg, RuntimeWarning, stacklevel=_caller_level())

    if not _traced(x0, args):
        x, cov_x, info, mesg, ier = fit(x0, args)
        warn_unless_converged(ier, mesg)
        return (x, cov_x, info, mesg, ier) if full_output else (x, ier)

    def solve_plain(x0, a, block_args):
        out = fit(x0, a)
        warn_unless_converged(out[4], out[3])
        return out[0], out

    def half_squares(x, a):
        r = _flat_out(func(x, *a))
        return 0.5 * wnp.sum(r * r)

    x, prim, a = _stationary("leastsq", name, x0, args, half_squares, [], solve_plain)
    x = wnp.reshape(x, (-1,))
    out = prim.result
    ier = out[4] if out is not None else None
    if not full_output:
        return x, ier
    J = jacfwd(lambda x: _flat_out(func(wnp.reshape(x, shape), *a)))(x)
    cov_x = None if out is not None and out[1] is None else wnp.linalg.inv(J.T @ J)
    info = dict(out[2]) if out is not None else {}
    info["fvec"] = _flat_out(func(wnp.reshape(x, shape), *a))
    return x, cov_x, info, out[3] if out is not None else None, ier


def _residuals(fun, x0, shape, args, kwargs, name, who, exact=True):
    """fun's residuals on a flat plain x, as SciPy calls them, and (if `exact`) wengert's
    exact Jacobian of them (m × n, forward or reverse mode, whichever needs fewer
    sweeps; compiled once called often), else None."""
    from ..api import jacfwd, jacrev

    def f(x):
        out = _check_plain(fun(x.reshape(shape), *args, **kwargs), who, name)
        return np.reshape(np.asarray(out, dtype=np.float64), -1)
    if not exact:
        return f, None
    m = f(x0).size
    leaves, tree, key = _kernel_args((args, kwargs), who, fun, shape)
    mode = jacfwd if x0.size <= m else jacrev     # (fewer sweeps)

    def jacobian(x, leaves):
        a, kw = unflatten(tree, leaves)
        return mode(lambda x: _flat_out(fun(wnp.reshape(x, shape), *a, **kw)))(x)
    return f, _supplied(_Derivative(jacobian, leaves, key, lambda j: np.asarray(
        j, dtype=np.float64).reshape(m, -1)), (x0,), who, name, "Jacobian")


def _least_squares_plain(so, fun, x0, shape, args, kwargs, jac, name, options):
    f, exact = _residuals(fun, x0, shape, args, kwargs, name, "least_squares",
                          jac is None)
    if jac is None:
        jac = exact
    elif callable(jac):
        user_jac = jac

        def jac(x):                             # noqa: F811
            return user_jac(x.reshape(shape), *args, **kwargs)
    return so.least_squares(f, x0, jac=jac, **options)


# --------------------------------------------------------------------------------------
# curve_fit
# --------------------------------------------------------------------------------------
def _without_nans(xdata, ydata, sigma):
    """curve_fit's data without the points where x or y is nan (SciPy's nan_policy='omit'),
    left out here, before the Jacobian and the traced residual are made, which would
    otherwise see every point (SciPy drops them inside, from its own copy of the data)."""
    def values(v, name):
        return np.asarray(wnp._value_of(v, f"read for curve_fit's nan_policy='omit' "
                                           f"({name})"), dtype=np.float64)
    arrays = (list, tuple, np.ndarray, Node)
    x_ = values(xdata, "xdata") if isinstance(xdata, arrays) else None
    y_ = values(ydata, "ydata")
    has_nan = np.isnan(y_)
    if x_ is not None:
        has_nan = has_nan | np.isnan(x_).any(axis=tuple(range(x_.ndim - 1)))
    if not has_nan.any():
        return xdata, ydata, sigma
    keep = ~has_nan
    if x_ is not None:
        xdata = wnp.asarray(xdata)[..., keep]
    ydata = wnp.asarray(ydata)[keep]
    if sigma is not None:
        sigma = wnp.asarray(sigma)
        if sigma.ndim == 1:
            sigma = sigma[keep]
        elif sigma.ndim == 2:
            sigma = sigma[keep][:, keep]
    return xdata, ydata, sigma


def curve_fit(f, xdata, ydata, p0=None, sigma=None, absolute_sigma=False, check_finite=None,
              bounds=(-np.inf, np.inf), method=None, jac=None, *, full_output=False,
              nan_policy=None, **kwargs):
    """Fit ``ydata ≈ f(xdata, *params)``: SciPy's `scipy.optimize.curve_fit`, with an exact
    Jacobian and a differentiable fit.

    The call and the result are SciPy's, ``(popt, pcov)`` (with `full_output`, SciPy's
    five), except that ``jac=None`` is wengert's exact Jacobian of f with respect to the
    parameters (SciPy's default is finite differences: ``jac=False`` asks for them, as
    does a scheme such as ``"3-point"`` for the trf and dogbox methods).
    Where xdata, ydata, sigma or p0 hold a traced value, ``popt`` is differentiable with
    respect to the data (through the condition that the weighted sum of squares is
    stationary, with exact second derivatives), and so is ``pcov``, computed from the
    traced fit as SciPy computes it, ``(JᵀJ)⁻¹`` scaled by the residual variance unless
    `absolute_sigma`: how the fit and its error bars move with each datum.  Where SciPy
    finds no covariance (inf), pcov is SciPy's, a constant.  A bound that holds at the
    fit keeps holding (the KKT conditions, as `minimize`'s).  ``nan_policy='omit'`` leaves
    out the points where x or y is nan (their derivative is 0), as SciPy does.

    Example:
        >>> import numpy as np, wengert as wg, wengert.numpy as wnp
        >>> from wengert.scipy.optimize import curve_fit
        >>> x = np.linspace(0.0, 4.0, 30)
        >>> y = 3.0 * np.exp(-0.7 * x) + 0.02 * np.cos(9 * x)
        >>> model = lambda x, a, k: a * wnp.exp(-k * x)
        >>> popt, pcov = curve_fit(model, x, y, p0=[1.0, 1.0])
        >>> popt.round(4).tolist()
        [3.0049, 0.7016]
        >>> d = wg.jacfwd(lambda y: curve_fit(model, x, y, p0=[1.0, 1.0])[0])(y)
        >>> d.shape                                # d popt / d y
        (2, 30)
        >>> (d @ y / popt).round(6).tolist()       # y scaled by 1 + ε: a by 1 + ε, k not
        [1.0, 0.0]
    """
    from ..api import jacfwd
    so = _scipy_optimize()
    name = _name(f)
    if nan_policy == "omit":
        xdata, ydata, sigma = _without_nans(xdata, ydata, sigma)
    if p0 is None:
        params = [p for p in inspect.signature(f).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if len(params) < 2:
            raise ValueError("Unable to determine number of fit parameters.")
        p0_given, n = None, len(params) - 1
    else:
        p0_given = p0
        n = int(np.size(wnp.asarray(p0)))
    bounds, roles = _box(bounds, (n,), "curve_fit")
    options = dict(absolute_sigma=absolute_sigma, check_finite=check_finite, bounds=bounds,
                   method=method, nan_policy=nan_policy, **kwargs)

    def solve_plain_fit(x, y, s, start, held=None):
        def call(x, *p):
            return np.asarray(_check_plain(f(x, *p), "curve_fit", name), dtype=np.float64)
        # (f's parameters, which SciPy counts where p0 is None)
        call.__signature__ = inspect.Signature(
            [inspect.Parameter(f"p{i}", inspect.Parameter.POSITIONAL_OR_KEYWORD)
             for i in range(n + 1)])
        use = None if jac is False else jac     # (False: SciPy's finite differences)
        if jac is None:
            leaves, tree, key = _kernel_args((x,), "curve_fit", f, (n,))

            def jacobian(p, leaves):
                (xd,) = unflatten(tree, leaves)
                return jacfwd(lambda p: _flat_out(f(xd, *[p[i] for i in range(n)])))(p)
            d = _Derivative(jacobian, leaves, key,
                            lambda j: np.asarray(j, dtype=np.float64).reshape(-1, n))
            start_ = np.ones(n) if start is None else np.asarray(start, dtype=np.float64)
            _supplied(d, (start_.reshape(-1),), "curve_fit", name, "Jacobian")
            use = lambda x, *p: d(np.asarray(p, dtype=np.float64))    # noqa: E731
        return so.curve_fit(call, x, y, p0=start, sigma=s, jac=use, full_output=True,
                            **(options if held is None else dict(options, bounds=held)))

    if not _traced(xdata, ydata, sigma, p0, bounds):
        out = solve_plain_fit(xdata, ydata, sigma, p0)
        return out if full_output else out[:2]
    start = np.ones(n) if p0_given is None else p0_given

    def weighted(p, x, y, s):
        r = _flat_out(f(x, *[p[i] for i in range(n)])) - _flat_out(y)
        if s is None:
            return r
        s = wnp.asarray(s)
        if s.ndim == 2:                          # a covariance: r ↦ L⁻¹ r (SciPy's)
            from .linalg import cholesky, solve_triangular
            return solve_triangular(cholesky(s, lower=True), r, lower=True)
        return r / _flat_out(s)

    def solve_plain(p_start, data, block_args):
        # (SciPy gets the traced bounds' values of this solve)
        out = solve_plain_fit(*data, p_start, roles and _plain_bounds(n, roles, block_args))
        return out[0], out                  # (SciPy raises where it did not converge)

    start = wnp.reshape(wnp.asarray(start), (n,))     # (SciPy's p0 is at least 1-d)
    popt, prim, (x, y, s) = _stationary(
        "curve_fit", name, start, (xdata, ydata, sigma),
        lambda p, data: 0.5 * wnp.sum(weighted(p, *data) ** 2),
        _blocks((), bounds, start, (n,)), solve_plain)
    found = prim.result
    if found is not None and not np.all(np.isfinite(found[1])):
        pcov = found[1]                          # (SciPy found none: inf, a constant)
    else:
        j = jacfwd(lambda p: weighted(p, x, y, s))(popt)
        pcov = wnp.linalg.inv(wnp.transpose(j) @ j)
        if not absolute_sigma:
            r = weighted(popt, x, y, s)
            pcov = pcov * (wnp.sum(r ** 2) / (r.shape[0] - n))
    if full_output:
        return (popt, pcov) + (tuple(found[2:]) if found is not None else (None, None, None))
    return popt, pcov
