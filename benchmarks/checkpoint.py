"""Peak memory and time of a reverse sweep through a 10,000-step loop, with and without
checkpointing.

What is measured: one eager gradient call of the final energy of a damped oscillator
x'' = -k x - c x', integrated by 10,000 classical Runge-Kutta (RK4) steps of h = 0.001
from (x, v) = (1, 0), with respect to (k, c).  Each step is about 60 scalar primitives, so
plain reverse mode records some 600,000 nodes.  Rows:

  plain                  the loop in Python, recorded whole (all intermediates kept)
  checkpointed sqrt(n)   wg.checkpointed_loop, segments of ⌈√n⌉ = 100 steps (the default)
  checkpointed every=E   other segment lengths, to show the memory/time trade

Peak memory is tracemalloc's peak during one call (Python objects and NumPy buffers), in
a call of its own, because tracing allocations slows everything down; time is the median
over repeats of a call without tracemalloc.  Gradients are checked against the plain one
to a relative 1e-12 first.

Run on demand (this is not part of the test suite):

    python benchmarks/checkpoint.py [--quick] [--steps N] [--json PATH]
"""

import argparse
import gc
import json
import platform
import statistics
import sys
import time
import tracemalloc

import wengert as wg
from wengert.checkpointing import _plain_loop

RTOL = 1e-12
GOAL_MEMORY, GOAL_TIME = 10.0, 2.0   # at least 10x less memory for at most 2x the time


def rk4(state, k, c, h):
    """One RK4 step of x' = v, v' = -k x - c v."""
    x, v = state

    def field(x, v):
        return v, -k * x - c * v

    k1x, k1v = field(x, v)
    k2x, k2v = field(x + 0.5 * h * k1x, v + 0.5 * h * k1v)
    k3x, k3v = field(x + 0.5 * h * k2x, v + 0.5 * h * k2v)
    k4x, k4v = field(x + h * k3x, v + h * k3v)
    return (x + h / 6 * (k1x + 2 * k2x + 2 * k3x + k4x),
            v + h / 6 * (k1v + 2 * k2v + 2 * k3v + k4v))


def energy(params, steps, loop):
    k, c = params
    x, v = loop(rk4, (1.0, 0.0), steps, k, c, 0.001)
    return 0.5 * v * v + 0.5 * k * x * x


def peak_mb(fn):
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def seconds(fn, repeats):
    samples = []
    for _ in range(repeats):
        gc.collect()
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--json", metavar="PATH", help="also write results as JSON")
    args = ap.parse_args(argv)
    repeats = 3 if args.quick else 5
    n = args.steps
    params = (2.0, 0.1)

    loops = {"plain": _plain_loop, "checkpointed sqrt(n)": wg.checkpointed_loop}
    for every in (10, 1000):
        loops[f"checkpointed every={every}"] = (
            lambda e: lambda *a: wg.checkpointed_loop(*a, every=e))(every)

    results = {}
    for name, loop in loops.items():
        grad = wg.grad(lambda p, loop=loop: energy(p, n, loop))
        results[name] = {"grad": grad(params)}
        results[name]["peak_mb"] = peak_mb(lambda: grad(params))
        results[name]["s"] = seconds(lambda: grad(params), repeats)

    ref = results["plain"]
    for name, r in results.items():
        ok = all(abs(a - b) <= RTOL * abs(b) for a, b in zip(r["grad"], ref["grad"]))
        r["grad_agrees"] = ok
        if not ok:
            print(f"WARNING: {name} gradient {r['grad']} differs from plain {ref['grad']}")

    print(f"\nreverse mode through {n:,} RK4 steps of a damped oscillator, gradient "
          f"w.r.t. (k, c) = {ref['grad']}\n(Python {platform.python_version()}; time: median "
          f"of {repeats}; memory: tracemalloc peak)")
    print(f"{'name':<26} {'peak MB':>9} {'s/grad':>8} {'memory vs plain':>16} "
          f"{'time vs plain':>14}")
    for name, r in results.items():
        r["memory_ratio"] = ref["peak_mb"] / r["peak_mb"]
        r["time_ratio"] = r["s"] / ref["s"]
        print(f"{name:<26} {r['peak_mb']:>9.2f} {r['s']:>8.3f} {r['memory_ratio']:>15.1f}x "
              f"{r['time_ratio']:>13.2f}x")

    best = results["checkpointed sqrt(n)"]
    met = best["memory_ratio"] >= GOAL_MEMORY and best["time_ratio"] <= GOAL_TIME
    print(f"\ngoal: sqrt(n) checkpointing cuts peak memory >= {GOAL_MEMORY:g}x for <= "
          f"{GOAL_TIME:g}x the time: {'met' if met else 'NOT met'} "
          f"({best['memory_ratio']:.0f}x memory, {best['time_ratio']:.2f}x time)")

    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"benchmark": "checkpoint", "steps": n, "python":
                       platform.python_version(), "platform": platform.platform(),
                       "goal_met": met, "results": results}, fh, indent=2)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    sys.exit(main())
