"""Eager reverse mode on a long scalar loop: wengert against autograd, PyTorch and JAX.

What is measured: the wall time of one full gradient call -- trace the function
eagerly, then run the backward sweep -- for

    for i in range(125):
        x = sin(x)*1.0001 + 0.1*x*x - cos(x)/3

differentiated with respect to the starting x (x0 = 0.3).  Each iteration is 8
primitive operations (sin, mul, mul, mul, add, cos, div, sub), so one gradient
records 1,000 primitives; nothing is compiled or cached between calls.  This is
the regime where per-operation bookkeeping overhead dominates, not arithmetic.

Peers (autograd, PyTorch eager on 0-d float64 tensors, JAX without jit) are
optional and skipped if not installed.  Every gradient is first checked against
wengert's to a relative 1e-10.  Times are the median over repeats of the mean
time per call, in one process, single-threaded where that is configurable; repeats
are interleaved across the implementations, and a ratio is the median of the ratios
within each repeat.

Run on demand (this is not part of the test suite):

    pip install -e '.[bench]'
    python benchmarks/eager_scalar.py [--quick] [--json PATH]
"""

import single_thread  # noqa: F401  (pins the thread pools: before numpy, torch, jax)
from timing import fmt_ratio, paired_ratio, parser, schedule, time_interleaved  # (this directory)

import json
import platform
import statistics
import sys
from importlib.metadata import version

N_ITERS = 125
N_OPS = 8 * N_ITERS  # primitives per gradient call (see docstring)
X0 = 0.3
RTOL = 1e-10
GOAL = 0.4  # target: wengert time <= GOAL * autograd time


def loop(x, sin, cos):
    """The benchmarked function, written once and shared by every framework."""
    for _ in range(N_ITERS):
        x = sin(x) * 1.0001 + 0.1 * x * x - cos(x) / 3
    return x


# Each make_* returns (version, zero-arg callable returning the gradient as a float).
# The import lives inside so that a missing peer only costs its own row.

def make_wengert():
    import wengert as wg
    import wengert.math as wm

    g = wg.grad(lambda x: loop(x, wm.sin, wm.cos))
    return version("wengert"), lambda: float(g(X0))


def make_autograd():
    import autograd
    import autograd.numpy as anp

    g = autograd.grad(lambda x: loop(x, anp.sin, anp.cos))
    return version("autograd"), lambda: float(g(X0))


def make_torch():
    import torch

    torch.set_num_threads(1)

    def grad():
        # Creating the leaf tensor is part of the call, as input boxing is for the others.
        x = torch.tensor(X0, dtype=torch.float64, requires_grad=True)
        y = loop(x, torch.sin, torch.cos)
        (gx,) = torch.autograd.grad(y, x)
        return gx.item()

    return torch.__version__, grad


def make_jax():
    import jax

    # Must precede any JAX computation: x64 so results compare at 1e-10, CPU backend.
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")
    import jax.numpy as jnp

    g = jax.grad(lambda x: loop(x, jnp.sin, jnp.cos))  # no jit: eager tracing each call
    return jax.__version__, lambda: float(g(X0))


IMPLS = {
    "wengert": make_wengert,
    "autograd": make_autograd,
    "torch": make_torch,
    "jax": make_jax,
}


def main(argv=None):
    ap = parser(__doc__, "fewer, shorter repeats")
    args = ap.parse_args(argv)
    repeats, min_time = schedule(args)

    # Build everything and check gradients before timing anything.
    results, fns = {}, {}
    for name, make in IMPLS.items():
        try:
            ver, fn = make()
        except ImportError:
            if name == "wengert":
                raise  # the reference itself must be present
            print(f"{name}: skipped (not installed)")
            results[name] = {"skipped": "not installed"}
            continue
        fns[name] = fn
        results[name] = {"version": ver, "grad": fn()}

    ref = results["wengert"]["grad"]
    for name in fns:
        g = results[name]["grad"]
        ok = abs(g - ref) <= RTOL * abs(ref)
        results[name]["grad_agrees"] = ok
        if not ok:
            print(f"WARNING: {name} gradient {g!r} differs from wengert's {ref!r} "
                  f"(rel {abs(g - ref) / abs(ref):.2e} > {RTOL:g})")

    times = {}
    for name, (secs, calls, _) in time_interleaved(fns, repeats, min_time).items():
        times[name] = secs
        sec = statistics.median(secs)
        results[name].update(ms=sec * 1e3, us_per_op=sec * 1e6 / N_OPS,
                             calls_per_repeat=calls, repeats=repeats)

    print(f"\neager reverse mode, {N_OPS} scalar primitives per gradient, "
          f"median of {repeats} repeats (Python {platform.python_version()})")
    print(f"{'name':<10} {'version':<12} {'ms/grad':>9} {'us/op':>7} "
          f"{'vs autograd':>12} {'vs wengert':>11}")
    for name, r in results.items():
        if "ms" not in r:
            print(f"{name:<10} skipped (not installed)")
            continue
        r["vs_autograd"] = paired_ratio(times, name, "autograd")
        r["vs_wengert"] = paired_ratio(times, name, "wengert")
        print(f"{name:<10} {r['version']:<12} {r['ms']:>9.3f} {r['us_per_op']:>7.2f} "
              f"{fmt_ratio(r['vs_autograd']):>12} {fmt_ratio(r['vs_wengert']):>11}")

    vs = results["wengert"]["vs_autograd"]
    met = None if vs is None else vs <= GOAL
    status = ("unknown (autograd not installed)" if met is None
              else f"{'met' if met else 'NOT met'} ({vs:.2f}x)")
    print(f"\ngoal: wengert <= {GOAL}x autograd: {status}")

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "eager_scalar", "n_ops": N_OPS, "x0": X0,
                       "python": platform.python_version(), "platform": platform.platform(),
                       "goal": f"wengert <= {GOAL}x autograd", "goal_met": met,
                       "results": results}, f, indent=2)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    sys.exit(main())
