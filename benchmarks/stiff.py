"""Stiff ODEs: wengert's exact ∂f/∂y for SciPy's implicit methods against SciPy's own
finite-difference Jacobians.

    python benchmarks/stiff.py            # 9 repeats
    python benchmarks/stiff.py --quick    # 3 short repeats

The problem is the Brusselator with diffusion on 50 cells (100 states, Hairer & Wanner
II), t in [0, 10], rtol = 1e-6, atol = 1e-8, on plain values (no derivative of the
solution is asked).  For each of Radau, BDF and LSODA, one table:

* ``wengert``: `wengert.scipy.integrate.solve_ivp`, which hands SciPy the exact Jacobian
  (eager sweeps, then compiled code once it has been asked for often; warmed up);
* ``scipy``: SciPy's `solve_ivp`, whose Jacobian takes ~n calls of fun (finite
  differences).

Both take the same steps to the solver's tolerance; the note says how many calls of fun
SciPy made in each (the differences' calls are most of SciPy's).
"""
import argparse
import sys
from importlib.metadata import version

import single_thread  # noqa: F401  (pins the thread pools: before numpy)
import numpy as np

from timing import relative_difference, run_table

CELLS = 50
SPAN = (0.0, 10.0)
TOL = dict(rtol=1e-6, atol=1e-8)


def brusselator(t, y, alpha):
    """u' = 1 + u²v - 4u + c Δu, v' = 3u - u²v + c Δv, with u = 1, v = 3 at both ends."""
    import wengert.numpy as wnp
    u, v = y[0::2], y[1::2]
    c = alpha * (CELLS + 1) ** 2
    up = wnp.concatenate([wnp.ones(1), u, wnp.ones(1)])
    vp = wnp.concatenate([wnp.full(1, 3.0), v, wnp.full(1, 3.0)])
    du = 1 + u * u * v - 4 * u + c * (up[:-2] - 2 * u + up[2:])
    dv = 3 * u - u * u * v + c * (vp[:-2] - 2 * v + vp[2:])
    return wnp.reshape(wnp.stack([du, dv], axis=1), (-1,))


def start():
    x = np.arange(1, CELLS + 1) / (CELLS + 1)
    return np.stack([1 + np.sin(2 * np.pi * x), np.full(CELLS, 3.0)], axis=1).reshape(-1)


CALLS = {}


def make(who, method):
    if who == "wengert":
        from wengert.scipy.integrate import solve_ivp
        package = "wengert"
    else:
        from scipy.integrate import solve_ivp
        package = "scipy"
    y0 = start()

    def fun(t, y, alpha):
        CALLS[who] = CALLS.get(who, 0) + (type(y) is np.ndarray)   # (SciPy's calls only)
        return brusselator(t, y, alpha)

    def run():
        CALLS[who] = 0
        return solve_ivp(fun, SPAN, y0, method=method, args=(0.02,), **TOL).y[:, -1]
    run()                                   # (warm up: wengert's Jacobian compiles)
    return version(package), run


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 short repeats")
    args = ap.parse_args(argv)
    repeats, min_time = (3, 0.05) if args.quick else (9, 0.3)
    for method in ("Radau", "BDF", "LSODA"):
        check = relative_difference("scipy", 1e-4)

        def noted(results, check=check):
            notes = check(results)
            return {name: f"{note}; {CALLS[name]} calls of fun" for name, note in
                    notes.items()}
        run_table({who: (lambda who=who: make(who, method)) for who in ("wengert", "scipy")},
                  f"Brusselator, {2 * CELLS} states, t in {SPAN}, {method}", "scipy",
                  repeats, min_time, check=noted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
