"""ODE solutions: the gradient of a Lotka–Volterra fitting loss, against the peers.

    python benchmarks/odeint.py            # 9 repeats
    python benchmarks/odeint.py --quick    # 3 short repeats

The loss is examples/lotka_volterra_fit.py's: the predator-prey model solved at 31 times
over [0, 15] with rtol = atol = 1e-8, and the mean squared error of its log-populations
against fixed observations; the gradient is with respect to the 4 log-rates.  Timed, all
single-threaded:

* ``wengert``: `wengert.scipy.integrate.odeint` under `wg.grad`, the adjoint method
  (SciPy's LSODA forward, one backward LSODA solve per output interval, the adjoint
  system's right-hand side compiled by wg.compile);
* ``wengert-fwd``: the same loss under `wg.jacfwd`, forward sensitivities (one solve of
  y and its tangent per parameter);
* ``wengert-loss``: the loss alone (SciPy's solve: what a gradient costs on top of it);
* ``wengert-ivp``: the loss through `wengert.scipy.integrate.solve_ivp` (DOP853, as JAX's
  is a Dormand–Prince method) under `wg.grad`, the adjoint solved by DOP853 too;
* ``wengert-c``: the same with ``method="RK45", backend="c"``: SciPy's Dormand–Prince
  5(4), JAX's method, stepped in C (the right-hand sides written as C by wengert, the
  adjoint's 30 backward solves in one call); ``wengert-c-dop853`` with DOP853;
  ``wengert-c-jit``: the RK45 one under `wg.compile` (the glue around the solves
  compiled; the backward solves one node of the graph, still one call);
* ``autograd``: `autograd.scipy.integrate.odeint` under `autograd.grad` (LSODA both ways,
  the adjoint's right-hand side an autograd VJP per call);
* ``jax-jit``: `jax.experimental.ode.odeint` under `jax.jit(jax.grad(...))` (its own
  Dormand–Prince solver, compiled with its adjoint by XLA).

A second table times per-example gradients: the same loss at BATCH = 64 points (the
log-rates spread by ±20%), as a parameter sweep or an ensemble fit needs them:

* ``wengert``: ``wg.vmap(wg.grad(loss))``: the 64 solves as one solve of 128 states (and
  so the adjoint's), SciPy's steps taken for all at once;
* ``wengert-loop``: a Python loop of ``wg.grad(loss)``, one solve per example;
* ``wengert-c``: ``wg.vmap(wg.grad(loss))`` of the ``solve_ivp(method="RK45",
  backend="c")`` loss: the 64 solves as one solve in C, and the 64 backward sweeps
  (30 solves each) as one sweep of the batched adjoint system, in one call;
* ``jax-jit``: ``jax.jit(jax.vmap(jax.grad(loss)))``.

Each peer's gradient is checked against wengert's first: they agree to about the
solvers' tolerance (JAX's solver is another one, so its trajectory differs at that level).
Ratios are paired within each repeat (see timing.py).
"""
import argparse
import sys

import single_thread  # noqa: F401  (pins the thread pools: before numpy)
import numpy as np

from timing import relative_difference, run_table

RATES = np.array([1.0, 0.1, 1.5, 0.075])
Y0 = np.array([10.0, 5.0])
TIMES = np.linspace(0.0, 15.0, 31)
TOL = 1e-8


def data():
    """Observations (the true model with 5% noise, by SciPy) and the point of the
    gradient: each log-rate 20% off."""
    from scipy.integrate import odeint

    def f(y, t, r):
        return [r[0] * y[0] - r[1] * y[0] * y[1], r[3] * y[0] * y[1] - r[2] * y[1]]
    clean = odeint(f, Y0, TIMES, args=(RATES,), rtol=TOL, atol=TOL)
    rng = np.random.default_rng(0)
    observed = clean * np.exp(0.05 * rng.normal(size=clean.shape))
    return np.log(RATES) + np.log([1.2, 0.8, 0.8, 1.2]), observed


def wengert_loss(observed):
    import wengert.numpy as wnp
    from wengert.scipy.integrate import odeint

    def f(y, t, r):
        return [r[0] * y[0] - r[1] * y[0] * y[1], r[3] * y[0] * y[1] - r[2] * y[1]]

    def loss(theta):
        ys = odeint(f, Y0, TIMES, args=(wnp.exp(theta),), rtol=TOL, atol=TOL)
        return wnp.mean((wnp.log(ys[1:]) - wnp.log(observed[1:])) ** 2)
    return loss


def make_wengert(theta, observed, mode="rev"):
    import wengert as wg
    loss = wengert_loss(observed)
    fn = {"rev": wg.grad(loss), "fwd": wg.jacfwd(loss), "loss": loss}[mode]
    from importlib.metadata import version
    return version("wengert"), lambda: fn(theta)


def wengert_ivp_loss(observed, method="DOP853", backend="scipy"):
    import wengert.numpy as wnp
    from wengert.scipy.integrate import solve_ivp

    def f(t, y, r):
        return [r[0] * y[0] - r[1] * y[0] * y[1], r[3] * y[0] * y[1] - r[2] * y[1]]

    def loss(theta):
        ys = solve_ivp(f, (TIMES[0], TIMES[-1]), Y0, method=method, t_eval=TIMES,
                       args=(wnp.exp(theta),), rtol=TOL, atol=TOL, backend=backend).y.T
        return wnp.mean((wnp.log(ys[1:]) - wnp.log(observed[1:])) ** 2)
    return loss


def make_wengert_ivp(theta, observed, method="DOP853", backend="scipy", compiled=False):
    import wengert as wg
    g = wg.grad(wengert_ivp_loss(observed, method, backend))
    if compiled:
        g = wg.compile(g, theta)
    from importlib.metadata import version
    return version("wengert"), lambda: g(theta)


def make_autograd(theta, observed):
    import autograd
    import autograd.numpy as anp
    from autograd.builtins import tuple as traced_tuple
    from autograd.scipy.integrate import odeint

    def f(y, t, r):
        return anp.array([r[0] * y[0] - r[1] * y[0] * y[1], r[3] * y[0] * y[1] - r[2] * y[1]])

    def loss(theta):
        # (args as autograd's tuple, which it can trace through)
        ys = odeint(f, Y0, TIMES, traced_tuple((anp.exp(theta),)), rtol=TOL, atol=TOL)
        return anp.mean((anp.log(ys[1:]) - anp.log(observed[1:])) ** 2)
    g = autograd.grad(loss)
    from importlib.metadata import version
    return version("autograd"), lambda: g(theta)


def jax_loss(observed):
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax.experimental.ode import odeint

    def f(y, t, r):
        return jnp.stack([r[0] * y[0] - r[1] * y[0] * y[1], r[3] * y[0] * y[1] - r[2] * y[1]])
    obs = jnp.asarray(observed)

    def loss(theta):
        ys = odeint(f, jnp.asarray(Y0), jnp.asarray(TIMES), jnp.exp(theta), rtol=TOL,
                    atol=TOL)
        return jnp.mean((jnp.log(ys[1:]) - jnp.log(obs[1:])) ** 2)
    return jax.__version__, loss


def make_jax(theta, observed):
    import jax
    version, loss = jax_loss(observed)
    g = jax.jit(jax.grad(loss))
    th = jax.numpy.asarray(theta)
    return version, lambda: np.asarray(jax.block_until_ready(g(th)))


#: Examples in the per-example table.
BATCH = 64


def thetas(theta):
    return theta + np.log(1.0 + 0.2 * np.random.default_rng(1).uniform(-1, 1, (BATCH, 4)))


def make_wengert_batch(theta, observed, loop=False, backend=None):
    import wengert as wg
    from importlib.metadata import version
    grad = wg.grad(wengert_loss(observed) if backend is None else
                   wengert_ivp_loss(observed, "RK45", backend))
    points = thetas(theta)
    if loop:
        return version("wengert"), lambda: np.stack([grad(p) for p in points])
    per_example = wg.vmap(grad)
    return version("wengert"), lambda: per_example(points)


def make_jax_batch(theta, observed):
    import jax
    version, loss = jax_loss(observed)
    g = jax.jit(jax.vmap(jax.grad(loss)))
    points = jax.numpy.asarray(thetas(theta))
    return version, lambda: np.asarray(jax.block_until_ready(g(points)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 short repeats")
    args = ap.parse_args(argv)
    repeats, min_time = (3, 0.05) if args.quick else (9, 0.3)
    theta, observed = data()
    makers = {"wengert": make_wengert,
              "wengert-fwd": lambda *a: make_wengert(*a, mode="fwd"),
              "wengert-loss": lambda *a: make_wengert(*a, mode="loss"),
              "wengert-ivp": make_wengert_ivp,
              "wengert-c": lambda *a: make_wengert_ivp(*a, method="RK45", backend="c"),
              "wengert-c-dop853": lambda *a: make_wengert_ivp(*a, backend="c"),
              "wengert-c-jit": lambda *a: make_wengert_ivp(*a, method="RK45", backend="c",
                                                           compiled=True),
              "autograd": make_autograd, "jax-jit": make_jax}
    reference = run_table(
        {name: (lambda make=make: make(theta, observed)) for name, make in makers.items()},
        f"Lotka-Volterra fitting loss, 2 states, 31 times, 4 parameters, "
        f"rtol = atol = {TOL:g}", "wengert", repeats, min_time,
        check=relative_difference("wengert", 1e-4, skip=("wengert-loss",)))
    print("gradient (wengert, adjoint):", np.array2string(reference, precision=8))
    print()
    run_table({"wengert": lambda: make_wengert_batch(theta, observed),
               "wengert-loop": lambda: make_wengert_batch(theta, observed, loop=True),
               "wengert-c": lambda: make_wengert_batch(theta, observed, backend="c"),
               "jax-jit": lambda: make_jax_batch(theta, observed)},
              f"Per-example gradients of the same loss at {BATCH} points (wg.vmap)",
              "wengert", repeats, min_time, check=relative_difference("wengert", 1e-4))
    return 0


if __name__ == "__main__":
    sys.exit(main())
