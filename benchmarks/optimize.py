"""Optimisation: exact derivatives for SciPy's solvers, and gradients through a solution.

    python benchmarks/optimize.py            # 9 repeats, about a minute
    python benchmarks/optimize.py --quick    # 3 short repeats

Four tables, all single-threaded, ratios paired within each repeat (see timing.py).

1. **Solving with exact derivatives.**  BFGS on the extended Rosenbrock function of 100
   variables from (-1.2, 1, -1.2, 1, ...), to a gradient norm of 1e-6:

   * ``wengert``: `wengert.scipy.optimize.minimize`, which hands SciPy's BFGS the exact
     gradient by eager reverse mode (the function written once, with wengert.numpy);
   * ``scipy-hand``: SciPy's BFGS with SciPy's hand-written `rosen_der` (the ideal: the
     gradient costs one NumPy expression);
   * ``scipy-fd``: SciPy's BFGS with no gradient, which takes finite differences;
   * ``jax-jit``: `jax.scipy.optimize.minimize` (BFGS), compiled by `jax.jit`;
   * ``jaxopt-jit``: `jaxopt.BFGS`, compiled by `jax.jit`.

2. **A gradient through a solution.**  L2-regularised logistic regression, 50 features,
   200 training and 200 validation samples, one penalty per feature; the gradient of the
   validation loss with respect to the 50 log-penalties, through the fitted weights (the
   bilevel problem of examples/tune_penalties.py, at a larger size):

   * ``wengert``: `wg.value_and_grad` of a loss that calls `minimize` (BFGS with exact
     gradients) and differentiates its solution by the implicit function theorem;
   * ``numpy-hand``: SciPy's BFGS with a hand-written gradient, then the implicit
     gradient written out by hand (the Hessian's formula, one solve): the ideal;
   * ``jaxopt-jit``: `jaxopt.BFGS(implicit_diff=True)` under `jax.jit(jax.value_and_grad)`;
   * ``central-diff``: central differences, 100 more fits by numpy-hand's solver, the
     way without a derivative of the solution.

3. **Sensitivities of a constrained optimum.**  A long-only mean-variance portfolio of 40
   assets (weights w ≥ 0 summing to 1, 28 of them zero at the optimum), solved by
   SLSQP; the 40×40 Jacobian of the optimal weights with respect to the expected
   returns μ:

   * ``wengert``: `wg.jacfwd` of `minimize` with the bounds and the budget constraint (the
     KKT conditions, differentiated by the implicit function theorem);
   * ``numpy-hand``: SciPy's SLSQP with hand-written gradients, then the KKT system of the
     weights that are not zero, written out and solved by hand: the ideal;
   * ``jaxopt-jit``: `jaxopt.OSQP` (a QP solver with implicit differentiation) under
     `jax.jit(jax.jacrev(...))` (its implicit rule is a VJP);
   * ``central-diff``: central differences, 80 more SLSQP solves.

4. **Sensitivities of a linear program.**  A production plan of 50 products within 100
   resources (max profit s.t. A x ≤ b, x ≥ 0), solved by HiGHS; the 50×100 Jacobian of
   the plan with respect to the resources b:

   * ``wengert``: `wg.jacrev` of `linprog` (the KKT conditions of the LP);
   * ``numpy-hand``: HiGHS, then the inverse of the vertex's binding rows (x = B⁻¹b_B),
     written out by hand: the ideal;
   * ``cvxpylayers``: `cvxpylayers.jax.CvxpyLayer` (the LP as a cone program, solved by
     SCS and differentiated by diffcp), one `jax.vjp` pullback per product (its backward
     pass cannot be vmapped, so `jax.jacrev` fails);
   * ``central-diff``: central differences, 200 more HiGHS solves.

Each row's result is compared with the first row's: they agree to about the solvers'
tolerance.  Peers come with ``pip install -e '.[bench]'`` (jaxopt and cvxpylayers
included).
"""
import argparse
import sys
from importlib.metadata import version

import single_thread  # noqa: F401  (pins the thread pools: before numpy)
import numpy as np

from timing import central_differences, relative_difference, run_table

N_ROSEN = 100
GTOL = 1e-6
FEATURES, SAMPLES = 50, 200


# ---- 1. Rosenbrock --------------------------------------------------------------------------
def rosen_start():
    return np.where(np.arange(N_ROSEN) % 2 == 0, -1.2, 1.0)


def rosen(xp, x):
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def solved(found):
    """(solution, function evaluations) of a SciPy result."""
    return found.x, found.nfev


def make_rosen_wengert(method="BFGS"):
    import wengert.numpy as wnp
    from wengert.scipy.optimize import minimize
    x0 = rosen_start()
    return version("wengert"), lambda: solved(minimize(lambda x: rosen(wnp, x), x0,
                                                       method=method,
                                                       options={"gtol": GTOL}))


def make_rosen_scipy(fd=False):
    from scipy.optimize import minimize, rosen as srosen, rosen_der
    x0 = rosen_start()
    jac = None if fd else rosen_der
    return version("scipy"), lambda: solved(minimize(srosen, x0, jac=jac, method="BFGS",
                                                     options={"gtol": GTOL}))


def make_rosen_jax():
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax.scipy.optimize import minimize
    solve = jax.jit(lambda x0: minimize(lambda x: rosen(jnp, x), x0, method="BFGS",
                                        options={"gtol": GTOL}))
    x0 = jnp.asarray(rosen_start())

    def run():
        found = jax.block_until_ready(solve(x0))
        return np.asarray(found.x), int(found.nfev)
    return jax.__version__, run


def make_rosen_jaxopt():
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import jaxopt
    solver = jaxopt.BFGS(fun=lambda x: rosen(jnp, x), tol=GTOL, maxiter=1000)
    solve = jax.jit(solver.run)
    x0 = jnp.asarray(rosen_start())

    def run():
        params, state = jax.block_until_ready(solve(x0))
        return np.asarray(params), int(state.num_fun_eval)
    return version("jaxopt"), run


# ---- 2. a gradient through a fit ------------------------------------------------------------
def logistic_data():
    rng = np.random.default_rng(0)
    w = np.zeros(FEATURES)
    w[:10] = rng.normal(scale=1.5, size=10)

    def sample():
        X = rng.normal(size=(SAMPLES, FEATURES))
        return X, (rng.random(SAMPLES) < 1 / (1 + np.exp(-X @ w))).astype(float)
    (Xt, yt), (Xv, yv) = sample(), sample()
    return Xt, yt, Xv, yv, np.full(FEATURES, -3.0) + 0.5 * rng.normal(size=FEATURES)


def logistic_loss(xp, w, X, y):
    z = X @ w
    return xp.mean(xp.logaddexp(0.0, z) - y * z)


def make_bilevel_wengert(Xt, yt, Xv, yv, log_lam):
    import wengert as wg
    import wengert.numpy as wnp
    from wengert.scipy.optimize import minimize

    def train(w, log_lam):
        return logistic_loss(wnp, w, Xt, yt) + wnp.sum(wnp.exp(log_lam) * w ** 2)

    def validation(log_lam):
        w = minimize(train, np.zeros(FEATURES), args=(log_lam,), method="BFGS",
                     options={"gtol": 1e-9}).x
        return logistic_loss(wnp, w, Xv, yv)
    vg = wg.value_and_grad(validation)
    return version("wengert"), lambda: vg(log_lam)[1]


def fit_by_hand(Xt, yt, lam):
    """The penalised logistic fit by SciPy's BFGS with a hand-written gradient."""
    from scipy.optimize import minimize
    from scipy.special import expit

    def f(w):
        z = Xt @ w
        p = expit(z)
        value = np.mean(np.logaddexp(0.0, z) - yt * z) + np.sum(lam * w * w)
        return value, Xt.T @ (p - yt) / len(yt) + 2 * lam * w
    return minimize(f, np.zeros(FEATURES), jac=True, method="BFGS",
                    options={"gtol": 1e-9}).x


def make_bilevel_numpy(Xt, yt, Xv, yv, log_lam):
    from scipy.special import expit

    def grad():
        lam = np.exp(log_lam)
        w = fit_by_hand(Xt, yt, lam)
        p = expit(Xt @ w)
        hess = (Xt.T * (p * (1 - p))) @ Xt / len(yt) + np.diag(2 * lam)
        g_val = Xv.T @ (expit(Xv @ w) - yv) / len(yv)
        v = np.linalg.solve(hess, g_val)
        # ∂(∇ₓtrain)/∂log λ_j = 2 λ_j w_j e_j, so the gradient is -v_j 2 λ_j w_j
        return -v * 2 * lam * w
    return version("numpy"), grad


def make_bilevel_fd(Xt, yt, Xv, yv, log_lam):
    def validation(log_lam):
        w = fit_by_hand(Xt, yt, np.exp(log_lam))
        z = Xv @ w
        return np.mean(np.logaddexp(0.0, z) - yv * z)

    return version("numpy"), lambda: central_differences(validation, log_lam, 1e-5)


def make_bilevel_jaxopt(Xt, yt, Xv, yv, log_lam):
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import jaxopt

    def train(w, log_lam):
        return logistic_loss(jnp, w, Xt, yt) + jnp.sum(jnp.exp(log_lam) * w ** 2)
    solver = jaxopt.BFGS(fun=train, tol=1e-9, maxiter=500, implicit_diff=True)

    def validation(log_lam):
        w = solver.run(jnp.zeros(FEATURES), log_lam).params
        return logistic_loss(jnp, w, Xv, yv)
    vg = jax.jit(jax.value_and_grad(validation))
    ll = jnp.asarray(log_lam)
    return version("jaxopt"), lambda: np.asarray(jax.block_until_ready(vg(ll))[1])


# ---- 3. a constrained optimum ----------------------------------------------------------------
ASSETS = 40
RISK = 4.0


def portfolio_data():
    rng = np.random.default_rng(3)
    factors = rng.normal(size=(ASSETS, 5)) * 0.1
    cov = factors @ factors.T + np.diag(rng.uniform(0.01, 0.04, ASSETS))
    return cov, rng.uniform(0.0, 0.15, ASSETS)


def slsqp_portfolio(cov, mu):
    """The optimal weights by SciPy's SLSQP with hand-written gradients."""
    from scipy.optimize import minimize
    return minimize(lambda w: (RISK * w @ cov @ w - mu @ w, 2 * RISK * cov @ w - mu),
                    np.full(ASSETS, 1.0 / ASSETS), jac=True, method="SLSQP",
                    bounds=[(0.0, None)] * ASSETS,
                    constraints={"type": "eq", "fun": lambda w: np.sum(w) - 1.0,
                                 "jac": lambda w: np.ones((1, ASSETS))},
                    options={"ftol": 1e-12, "maxiter": 500}).x


def make_portfolio_wengert(cov, mu):
    import wengert as wg
    import wengert.numpy as wnp
    from wengert.scipy.optimize import minimize

    def weights(mu):
        return minimize(lambda w, mu: RISK * w @ cov @ w - mu @ w,
                        np.full(ASSETS, 1.0 / ASSETS), args=(mu,), method="SLSQP",
                        bounds=[(0.0, None)] * ASSETS,
                        constraints={"type": "eq", "fun": lambda w: wnp.sum(w) - 1.0},
                        options={"ftol": 1e-12, "maxiter": 500}).x
    jac = wg.jacfwd(weights)
    return version("wengert"), lambda: np.asarray(jac(mu))


def make_portfolio_numpy(cov, mu):
    def jac():
        w = slsqp_portfolio(cov, mu)
        free = np.flatnonzero(w > 1e-9)
        k = free.size
        # on the free weights: 2 RISK cov w − μ − ν 1 = 0 and Σw = 1
        kkt = np.zeros((k + 1, k + 1))
        kkt[:k, :k] = 2 * RISK * cov[np.ix_(free, free)]
        kkt[:k, k] = -1.0
        kkt[k, :k] = 1.0
        out = np.zeros((ASSETS, ASSETS))
        out[np.ix_(free, free)] = np.linalg.inv(kkt)[:k, :k]    # d(w, ν)/dμ = K⁻¹ [I; 0]
        return out
    return version("numpy"), jac


def make_portfolio_fd(cov, mu, h=1e-6):
    return version("scipy"), lambda: central_differences(
        lambda m: slsqp_portfolio(cov, m), mu, h)


def make_portfolio_jaxopt(cov, mu):
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import jaxopt
    qp = jaxopt.OSQP(tol=1e-10, maxiter=20000)
    q, a, g = jnp.asarray(2 * RISK * cov), jnp.ones((1, ASSETS)), -jnp.eye(ASSETS)

    def weights(mu):
        return qp.run(params_obj=(q, -mu), params_eq=(a, jnp.ones(1)),
                      params_ineq=(g, jnp.zeros(ASSETS))).params.primal
    jac = jax.jit(jax.jacrev(weights))      # (its implicit rule is a VJP: no jacfwd)
    m = jnp.asarray(mu)
    return version("jaxopt"), lambda: np.asarray(jax.block_until_ready(jac(m)))


# ---- 4. a linear program ------------------------------------------------------------------
PRODUCTS, RESOURCES = 50, 100


def lp_data():
    """A production plan: maximise profit over products x ≥ 0 within resources A x ≤ b
    (positive data: feasible at 0 and bounded); a unique, nondegenerate vertex."""
    rng = np.random.default_rng(4)
    return (-rng.uniform(0.5, 1.0, PRODUCTS), rng.uniform(0.1, 1.0, (RESOURCES, PRODUCTS)),
            rng.uniform(1.0, 2.0, RESOURCES))


def make_lp_wengert(c, A, b):
    import wengert as wg
    from wengert.scipy.optimize import linprog
    jac = wg.jacrev(lambda b: linprog(c, A_ub=A, b_ub=b).x)
    return version("wengert"), lambda: np.asarray(jac(b))


def make_lp_numpy(c, A, b):
    from scipy.optimize import linprog

    def jac():
        found = linprog(c, A_ub=A, b_ub=b)
        rows = np.flatnonzero(found.ineqlin.residual < 1e-9)
        at_zero = np.flatnonzero(found.x < 1e-9)
        # the vertex: the binding rows and the products at zero, x = B⁻¹ (b_rows, 0)
        B = np.vstack([A[rows], np.eye(PRODUCTS)[at_zero]])
        out = np.zeros((PRODUCTS, RESOURCES))
        out[:, rows] = np.linalg.inv(B)[:, :rows.size]
        return out
    return version("scipy"), jac


def make_lp_fd(c, A, b, h=1e-6):
    from scipy.optimize import linprog

    return version("scipy"), lambda: central_differences(
        lambda rhs: linprog(c, A_ub=A, b_ub=rhs).x, b, h)


def make_lp_cvxpylayers(c, A, b):
    import jax
    jax.config.update("jax_enable_x64", True)
    import cvxpy as cp
    import jax.numpy as jnp
    from cvxpylayers.jax import CvxpyLayer
    x, rhs = cp.Variable(PRODUCTS), cp.Parameter(RESOURCES)
    problem = cp.Problem(cp.Minimize(c @ x), [A @ x <= rhs, x >= 0])
    layer = CvxpyLayer(problem, parameters=[rhs], variables=[x])
    m, eye = jnp.asarray(b), np.eye(PRODUCTS)

    def jac():
        # one VJP per product: its backward pass (diffcp, on NumPy) cannot be vmapped,
        # which jax.jacrev would do
        _, pull = jax.vjp(lambda b: layer(b, solver_args={"eps": 1e-10})[0], m)
        return np.stack([np.asarray(pull(jnp.asarray(e))[0]) for e in eye])
    return version("cvxpylayers"), jac


# ---- tables ---------------------------------------------------------------------------------
def rosen_notes(results):
    return {name: f"{nfev} evaluations, max |x - 1| = {np.max(np.abs(x - 1)):.1e}"
            for name, (x, nfev) in results.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 short repeats")
    args = ap.parse_args(argv)
    repeats, min_time = (3, 0.05) if args.quick else (9, 0.3)
    run_table({"wengert": make_rosen_wengert,
               "scipy-hand": make_rosen_scipy,
               "scipy-fd": lambda: make_rosen_scipy(fd=True),
               "jax-jit": make_rosen_jax, "jaxopt-jit": make_rosen_jaxopt},
              f"BFGS on the extended Rosenbrock function, n = {N_ROSEN}, gtol = {GTOL:g}",
              "scipy-hand", repeats, min_time, check=rosen_notes)
    through = (
        (logistic_data, {"wengert": make_bilevel_wengert, "numpy-hand": make_bilevel_numpy,
                         "jaxopt-jit": make_bilevel_jaxopt, "central-diff": make_bilevel_fd},
         f"gradient of a validation loss through a logistic fit, {FEATURES} penalties, "
         f"{SAMPLES} + {SAMPLES} samples"),
        (portfolio_data, {"wengert": make_portfolio_wengert, "numpy-hand": make_portfolio_numpy,
                          "jaxopt-jit": make_portfolio_jaxopt, "central-diff": make_portfolio_fd},
         f"Jacobian of a long-only portfolio's weights in the expected returns, {ASSETS} "
         "assets, SLSQP"),
        (lp_data, {"wengert": make_lp_wengert, "numpy-hand": make_lp_numpy,
                   "cvxpylayers": make_lp_cvxpylayers, "central-diff": make_lp_fd},
         f"Jacobian of a linear program's solution in its right-hand side, {PRODUCTS} "
         f"products, {RESOURCES} resources, HiGHS"))
    for make_data, makers, title in through:
        data = make_data()
        run_table({name: (lambda make=make: make(*data)) for name, make in makers.items()},
                  title, "numpy-hand", repeats, min_time,
                  check=relative_difference("wengert", 1e-3))
    return 0


if __name__ == "__main__":
    sys.exit(main())
