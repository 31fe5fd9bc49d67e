"""Quadrature: the gradient of an integral with respect to the parameters of its integrand.

    python benchmarks/quad.py                   # 9 repeats, about a minute
    python benchmarks/quad.py --quick           # 3 short repeats
    python benchmarks/quad.py --json out.json   # also write the results as JSON

One table, single-threaded, ratios paired within each repeat (see timing.py).  The
integral is a thermal spectrum seen through a narrow Lorentzian filter,

    I(T, μ, w) = ∫₀²⁰ x² e^{-x/T} / (1 + ((x - μ)/w)²) dx      at (T, μ, w) = (1.5, 4, 0.3),

and each row computes its gradient in (T, μ, w), to a relative 1e-10 where the method
has a tolerance (epsabs = 1e-12, epsrel = 1e-10):

* ``numpy-hand``: SciPy's quad of each partial derivative, written out by hand in NumPy:
  the Leibniz rule done by hand, the ideal for an adaptive method (the base);
* ``wengert``: `wg.grad` of `wengert.scipy.integrate.quad` (the value by SciPy's quad, the
  gradient by quad of wengert's pullback of the integrand, compiled once it has been asked
  for often and kept across calls); also ``wengert-compiled``, `wg.compile(wg.grad)`;
* ``central-diff``: central differences of SciPy's quad (6 more integrals, h = 1e-6
  relative), the way without a derivative;
* ``casadi-cvodes``: CasADi's CVODES integrating I' = f as an ODE with the same
  tolerances, and its Jacobian by forward sensitivities, error-controlled
  (``quad_err_con``; without it the gradient is 6e-2 off): CasADi's adaptive integral;
* ``jax-gl-jit``: Gauss–Legendre with a fixed number of nodes under `jax.jit(jax.grad)`
  (JAX has no adaptive quadrature, and quadax is not installed): n = 400, the fewest of
  100, 200, 300, 400 whose value is within 1e-10 of the reference here (the filter's peak
  is narrow, so a fixed rule needs many nodes; an adaptive one puts them there);
* ``wengert-gl``, ``wengert-gl-compiled``: the same rule written with
  `wengert.scipy.integrate.fixed_quad`, eager and under `wg.compile(wg.grad)`.

The check column gives each gradient's largest error relative to its largest entry,
against mpmath's quadrature of the hand-written partials at 30 digits.  The first calls of
``wengert`` (the first compiles the derivative integrand) are timed apart.
"""
import argparse
import json
import platform
import statistics
import sys
import time
from importlib.metadata import version

import single_thread  # noqa: F401  (pins the thread pools: before numpy)
import numpy as np

from timing import paired_ratio, print_table, time_interleaved

THETA = np.array([1.5, 4.0, 0.3])
B = 20.0
TOL = dict(epsabs=1e-12, epsrel=1e-10)
NODES = 400


def spectrum(xp, x, T, mu, w):
    return x ** 2 * xp.exp(-x / T) / (1 + ((x - mu) / w) ** 2)


def d_temperature(x, T, mu, w, xp=np):
    """∂/∂T of the integrand, by hand (and the next two: ∂/∂μ, ∂/∂w)."""
    return spectrum(xp, x, T, mu, w) * x / T ** 2


def d_centre(x, T, mu, w, xp=np):
    u = (x - mu) / w
    return spectrum(xp, x, T, mu, w) * 2 * u / w / (1 + u * u)


def d_width(x, T, mu, w, xp=np):
    u = (x - mu) / w
    return spectrum(xp, x, T, mu, w) * 2 * u * u / w / (1 + u * u)


def reference():
    """The gradient by mpmath at 30 digits (the integrand split at the peak)."""
    import mpmath
    mpmath.mp.dps = 30
    T, mu, w = (mpmath.mpf(float(v)) for v in THETA)

    def part(d):
        return lambda x: d(x, T, mu, w, mpmath)
    return np.array([float(mpmath.quad(part(d), [0, mu - 1, mu, mu + 1, B]))
                     for d in (d_temperature, d_centre, d_width)])


def make_numpy_hand():
    from scipy.integrate import quad

    def grad():
        return np.array([quad(d, 0.0, B, args=tuple(THETA), **TOL)[0]
                         for d in (d_temperature, d_centre, d_width)])
    return version("scipy"), grad


def make_wengert(compiled=False):
    import wengert as wg
    import wengert.numpy as wnp
    from wengert.scipy.integrate import quad

    def intensity(theta):
        return quad(lambda x, th: spectrum(wnp, x, th[0], th[1], th[2]), 0.0, B,
                    args=(theta,), **TOL)[0]
    g = wg.compile(wg.grad(intensity), THETA) if compiled else wg.grad(intensity)
    return version("wengert"), lambda: np.asarray(g(THETA))


def make_central_diff(h=1e-6):
    from scipy.integrate import quad

    def value(theta):
        return quad(lambda x: spectrum(np, x, *theta), 0.0, B, **TOL)[0]

    def grad():
        out = np.empty(3)
        for k in range(3):
            e = np.zeros(3)
            e[k] = h * THETA[k]
            out[k] = (value(THETA + e) - value(THETA - e)) / (2 * e[k])
        return out
    return version("scipy"), grad


def make_casadi():
    import casadi as ca
    t, q, p = ca.SX.sym("t"), ca.SX.sym("q"), ca.SX.sym("p", 3)
    F = ca.integrator("F", "cvodes", {"x": q, "p": p, "t": t,
                                      "ode": spectrum(ca, t, p[0], p[1], p[2])},
                      0.0, B, {"abstol": TOL["epsabs"], "reltol": TOL["epsrel"],
                               # (the sensitivities of I, which CVODES takes for a
                               # quadrature, are not error-controlled otherwise: their
                               # error was 6e-2)
                               "quad_err_con": True})
    P = ca.MX.sym("P", 3)
    G = ca.Function("G", [P], [ca.jacobian(F(x0=0, p=P)["xf"], P)])
    return ca.__version__, lambda: np.asarray(G(THETA)).reshape(3)


def make_jax():
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    nodes, weights = np.polynomial.legendre.leggauss(NODES)
    x, wts = jnp.asarray(B / 2 * (nodes + 1)), jnp.asarray(B / 2 * weights)
    g = jax.jit(jax.grad(lambda th: jnp.sum(wts * spectrum(jnp, x, th[0], th[1], th[2]))))
    th = jnp.asarray(THETA)
    return jax.__version__, lambda: np.asarray(jax.block_until_ready(g(th)))


def make_wengert_gl(compiled=False):
    import wengert as wg
    import wengert.numpy as wnp
    from wengert.scipy.integrate import fixed_quad

    def intensity(theta):
        return fixed_quad(lambda x, th: spectrum(wnp, x, th[0], th[1], th[2]), 0.0, B,
                          args=(theta,), n=NODES)[0]
    g = wg.compile(wg.grad(intensity), THETA) if compiled else wg.grad(intensity)
    return version("wengert"), lambda: np.asarray(g(THETA))


MAKERS = {
    "numpy-hand": make_numpy_hand,
    "wengert": make_wengert,
    "wengert-compiled": lambda: make_wengert(compiled=True),
    "central-diff": make_central_diff,
    "casadi-cvodes": make_casadi,
    "jax-gl-jit": make_jax,
    "wengert-gl": make_wengert_gl,
    "wengert-gl-compiled": lambda: make_wengert_gl(compiled=True),
}


def first_call():
    """Seconds of wengert's first three gradients of this integrand, after one of another
    integrand has paid the imports: the first compiles the derivative integrand, which
    the next calls find kept."""
    import wengert as wg
    import wengert.numpy as wnp
    from wengert.scipy.integrate import quad
    wg.grad(lambda k: quad(lambda x, k: wnp.sin(k * x), 0.0, 1.0, args=(k,))[0])(1.0)
    _, grad = make_wengert()
    times = []
    for _ in range(3):
        t = time.perf_counter()
        grad()
        times.append(time.perf_counter() - t)
    return times


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 short repeats")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = ap.parse_args(argv)
    repeats, min_time = (3, 0.05) if args.quick else (9, 0.3)
    want = reference()
    cold = first_call()
    fns, versions, notes, errors = {}, {}, {}, {}
    for name, make in MAKERS.items():
        try:
            versions[name], fns[name] = make()
        except ImportError:
            print(f"{name:<20} skipped (not installed)")
            continue
        err = float(np.max(np.abs(fns[name]() - want)) / np.max(np.abs(want)))
        errors[name] = err
        notes[name] = f"error {err:.1e}"
        if err > 1e-6:
            print(f"WARNING: {name}'s gradient is {err:.1e} from the reference")
    times = time_interleaved(fns, repeats, min_time)
    print_table(times, versions,
                f"gradient of I(T, μ, w) = ∫₀²⁰ x² e^(-x/T) / (1 + ((x-μ)/w)²) dx in its 3 "
                f"parameters, tolerance {TOL['epsrel']:g}", "numpy-hand", repeats,
                notes=notes)
    print("\nwengert's first three calls (trace, then compile the derivative integrand): "
          + ", ".join(f"{t * 1e3:.1f} ms" for t in cold))
    if args.json:
        repeat_times = {k: v[0] for k, v in times.items()}
        with open(args.json, "w") as f:
            json.dump({"benchmark": "quad", "theta": THETA.tolist(), "tolerance": TOL,
                       "gl_nodes": NODES, "python": platform.python_version(),
                       "platform": platform.platform(), "first_calls_ms":
                       [t * 1e3 for t in cold],
                       "results": {name: {"version": versions[name],
                                          "ms": statistics.median(v[0]) * 1e3,
                                          "vs_numpy_hand": paired_ratio(repeat_times, name,
                                                                        "numpy-hand"),
                                          "relative_error": errors[name]}
                                   for name, v in times.items()}}, f, indent=2)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
