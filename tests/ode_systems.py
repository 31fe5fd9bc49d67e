"""Right-hand sides the ODE tests share, as ``f(y, t, params)`` (odeint's order; solve_ivp's
tests swap y and t)."""
import wengert.numpy as wnp


def lotka_volterra(y, t, p):
    prey, pred = y[0], y[1]
    return wnp.stack([p[0] * prey - p[1] * prey * pred, -p[2] * pred + p[3] * prey * pred])


def forced(y, t, params):
    """A non-autonomous system with a pytree of parameters: a damped, driven
    oscillator whose forcing depends on t (so ∂f/∂t is not zero)."""
    x, v = y[0], y[1]
    k, c = params["spring"][0], params["spring"][1]
    return wnp.stack([v, -k * x - c * v + params["amp"] * wnp.sin(2.0 * t)])
