"""Implicit differentiation of a large solution: dense against matrix-free linear solves.

    python benchmarks/implicit.py            # 9 repeats, about a minute
    python benchmarks/implicit.py --quick    # 3 short repeats
    python benchmarks/implicit.py --sizes 100 1000

The gradient, with respect to θ = (θ₀, θ₁), of the mean square of the solution u of the
discretised nonlinear Poisson equation

    -u'' + u³ = θ₀ + θ₁ sin(k / 50),   k = 0 .. n-1,   u = 0 beyond both ends,

on a grid of spacing 1 (so J = ∂F/∂u = L + diag(3u²), L the second differences, has
eigenvalues between about 3 and 10 whatever n is).  Every row solves with 20 steps of
Newton's method (a tridiagonal solve each) and then differentiates the solution; one
table per n, all single-threaded, ratios paired within each repeat (see timing.py):

* ``numpy-hand``: the adjoint written out by hand: one banded solve of Jᵀλ = ∂L/∂u and
  the gradient -λᵀ ∂F/∂θ (the ideal);
* ``dense``: `wg.grad` through ``wg.custom_root(F)`` (J by n forward sweeps, batched,
  then an LU factorisation);
* ``cg``, ``gmres``: `wg.grad` through ``wg.custom_root(F, linear_solve="cg")`` (and
  ``"gmres"``), matrix-free, tol = 1e-10;
* ``jaxopt-cg-jit``: `jaxopt.implicit_diff.custom_root` with ``solve_cg`` at the same
  relative tolerance 1e-10 (its default is 1e-5), Newton's method with
  `jax.lax.linalg.tridiagonal_solve`, all under `jax.jit(jax.grad)`;
* ``numpy-solve``, ``jaxopt-solve-jit``: the solves alone, without a derivative, for
  scale: a row's time less its solve's is what the derivative costs.

Each row's gradient is compared with numpy-hand's.  The dense row is left out above
n = 3000 (its n×n Jacobian).  jaxopt comes with ``pip install -e '.[bench]'``.
"""
import argparse
import functools
import sys
from importlib.metadata import version

import single_thread  # noqa: F401  (pins the thread pools: before numpy)
import numpy as np

from timing import relative_difference, run_table

NEWTON_STEPS = 20
TOL = 1e-10
THETA = np.array([2.0, 1.0])


def source(xp, theta, n):
    return theta[0] + theta[1] * xp.sin(xp.arange(n) / 50.0)


def newton_numpy(theta, n):
    """u with F(u, θ) = 0 by Newton's method, a banded solve a step (plain NumPy)."""
    import scipy.linalg
    f = source(np, theta, n)
    u = np.ones(n)
    for _ in range(NEWTON_STEPS):
        r = 2 * u - np.r_[u[1:], 0.0] - np.r_[0.0, u[:-1]] + u ** 3 - f
        bands = np.stack([np.full(n, -1.0), 2 + 3 * u ** 2, np.full(n, -1.0)])
        u = u - scipy.linalg.solve_banded((1, 1), bands, r)
    return u


# ---- rows -------------------------------------------------------------------------------------
def make_hand(n):
    import scipy.linalg
    k = np.arange(n)

    def grad():
        u = newton_numpy(THETA, n)
        bands = np.stack([np.full(n, -1.0), 2 + 3 * u ** 2, np.full(n, -1.0)])
        lam = scipy.linalg.solve_banded((1, 1), bands, 2 * u / n)    # J symmetric: Jᵀ = J
        # ∂F/∂θ₀ = -1, ∂F/∂θ₁ = -sin(k/50)
        return np.array([lam.sum(), lam @ np.sin(k / 50.0)])
    return version("numpy"), grad


def make_wengert(n, linear_solve):
    import wengert as wg
    import wengert.numpy as wnp

    def poisson(u, theta):
        z = wnp.zeros(1)
        return (2 * u - wnp.concatenate([u[1:], z]) - wnp.concatenate([z, u[:-1]])
                + u ** 3 - source(wnp, theta, n))

    options = {} if linear_solve == "dense" else {"tol": TOL}
    equilibrium = wg.custom_root(poisson, linear_solve=linear_solve, **options)(
        lambda u0, theta: newton_numpy(theta, n))
    grad = wg.grad(lambda theta: wnp.mean(equilibrium(np.ones(n), theta) ** 2))
    return version("wengert"), lambda: grad(THETA)


def make_solve(n):
    return version("numpy"), lambda: newton_numpy(THETA, n)


def make_jaxopt(n, derivative=True):
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jaxopt.implicit_diff import custom_root
    from jaxopt.linear_solve import solve_cg

    def poisson(u, theta):
        z = jnp.zeros(1)
        return (2 * u - jnp.concatenate([u[1:], z]) - jnp.concatenate([z, u[:-1]])
                + u ** 3 - source(jnp, theta, n))

    @custom_root(poisson, solve=functools.partial(solve_cg, tol=TOL))
    def equilibrium(u0, theta):
        off = jnp.full(n, -1.0)
        lower, upper = off.at[0].set(0.0), off.at[-1].set(0.0)

        def step(_, u):
            r = poisson(u, theta)
            return u - jax.lax.linalg.tridiagonal_solve(lower, 2 + 3 * u ** 2, upper,
                                                        r[:, None])[:, 0]
        return jax.lax.fori_loop(0, NEWTON_STEPS, step, u0)

    loss = lambda theta: jnp.mean(equilibrium(jnp.ones(n), theta) ** 2)   # noqa: E731
    run = jax.jit(jax.grad(loss) if derivative else loss)
    theta = jnp.asarray(THETA)
    return version("jaxopt"), lambda: np.asarray(jax.block_until_ready(run(theta)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 short repeats")
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 3000])
    args = ap.parse_args(argv)
    repeats, min_time = (3, 0.05) if args.quick else (9, 0.3)
    for n in args.sizes:
        makers = {"numpy-hand": lambda n=n: make_hand(n)}
        if n <= 3000:
            makers["dense"] = lambda n=n: make_wengert(n, "dense")
        makers["cg"] = lambda n=n: make_wengert(n, "cg")
        makers["gmres"] = lambda n=n: make_wengert(n, "gmres")
        makers["jaxopt-cg-jit"] = lambda n=n: make_jaxopt(n)
        makers["numpy-solve"] = lambda n=n: make_solve(n)
        makers["jaxopt-solve-jit"] = lambda n=n: make_jaxopt(n, derivative=False)
        run_table(makers, f"gradient through a nonlinear Poisson equilibrium, n = {n}",
                  "numpy-hand", repeats, min_time,
                  check=relative_difference("numpy-hand", 1e-8,
                                            skip=("numpy-solve", "jaxopt-solve-jit")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
