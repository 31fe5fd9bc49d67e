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
* ``autograd``: `autograd.scipy.integrate.odeint` under `autograd.grad` (LSODA both ways,
  the adjoint's right-hand side an autograd VJP per call);
* ``jax-jit``: `jax.experimental.ode.odeint` under `jax.jit(jax.grad(...))` (its own
  Dormand–Prince solver, compiled with its adjoint by XLA).

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


def make_wengert(theta, observed, mode="rev"):
    import wengert as wg
    import wengert.numpy as wnp
    from wengert.scipy.integrate import odeint

    def f(y, t, r):
        return [r[0] * y[0] - r[1] * y[0] * y[1], r[3] * y[0] * y[1] - r[2] * y[1]]

    def loss(theta):
        ys = odeint(f, Y0, TIMES, args=(wnp.exp(theta),), rtol=TOL, atol=TOL)
        return wnp.mean((wnp.log(ys[1:]) - wnp.log(observed[1:])) ** 2)
    fn = {"rev": wg.grad(loss), "fwd": wg.jacfwd(loss), "loss": loss}[mode]
    from importlib.metadata import version
    return version("wengert"), lambda: fn(theta)


def make_wengert_ivp(theta, observed, method="DOP853"):
    import wengert as wg
    import wengert.numpy as wnp
    from wengert.scipy.integrate import solve_ivp

    def f(t, y, r):
        return [r[0] * y[0] - r[1] * y[0] * y[1], r[3] * y[0] * y[1] - r[2] * y[1]]

    def loss(theta):
        ys = solve_ivp(f, (TIMES[0], TIMES[-1]), Y0, method=method, t_eval=TIMES,
                       args=(wnp.exp(theta),), rtol=TOL, atol=TOL).y.T
        return wnp.mean((wnp.log(ys[1:]) - wnp.log(observed[1:])) ** 2)
    g = wg.grad(loss)
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


def make_jax(theta, observed):
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
    g = jax.jit(jax.grad(loss))
    th = jnp.asarray(theta)
    return jax.__version__, lambda: np.asarray(jax.block_until_ready(g(th)))


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
              "autograd": make_autograd, "jax-jit": make_jax}
    reference = run_table(
        {name: (lambda make=make: make(theta, observed)) for name, make in makers.items()},
        f"Lotka-Volterra fitting loss, 2 states, 31 times, 4 parameters, "
        f"rtol = atol = {TOL:g}", "wengert", repeats, min_time,
        check=relative_difference("wengert", 1e-4, skip=("wengert-loss",)))
    print("gradient (wengert, adjoint):", np.array2string(reference, precision=8))
    return 0


if __name__ == "__main__":
    sys.exit(main())
