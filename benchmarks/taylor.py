"""The 10th derivative of a 50-operation scalar function: Taylor mode against nested
forward mode, in wengert and in JAX.

What is measured: the wall time of one call computing f^(10)(x0) (x0 = 0.3) of

    for _ in range(5):
        x = sin(x)*0.7 + exp(-x*x)*0.3        # 7 primitives
        x = x / (1 + x*x)                     # 3 primitives

that is 50 primitives.  Rows:

  wengert taylor        wg.derivatives(f, 10)(x0): eager trace + one Taylor sweep (O(k²)/op)
  wengert taylor graph  the same expansion traced once into a graph (wg.trace of
                        wg.derivatives), then Graph evaluation per call
  wengert nested jvp    ten nested wg.jvp (each level differentiates the graph of the
                        level below, with CSE)
  jax nested jvp        ten nested jax.jvp under jax.jit (compile time reported apart).
                        Its program triples with every order (384,000 equations at order
                        8; tracing and compiling take over ten minutes at order 10), so it
                        runs only up to order 8 unless --all is given
  jax jet               jax.experimental.jet.jet under jax.jit (Taylor mode in JAX)

Every result is first checked against wengert's Taylor mode to a relative 1e-9.  Times are
medians over repeats of the mean time per call, after one warm-up call (which, for the
jitted rows, is the compilation; it is reported in its own column).

Run on demand (this is not part of the test suite):

    pip install -e '.[bench]'
    python benchmarks/taylor.py [--quick] [--order K] [--all] [--json PATH]
"""

import single_thread  # noqa: F401  (pins the thread pools: before numpy, torch, jax)

import argparse
import json
import platform
import sys
import time

from timing import time_it     # one timing discipline for every benchmark

X0 = 0.3
RTOL = 1e-9
GOAL = 10.0   # Taylor mode at least 10x faster than nested forward mode


def f(x, m):
    """The benchmarked function, written once for every framework (m: its math)."""
    for _ in range(5):
        x = m.sin(x) * 0.7 + m.exp(-x * x) * 0.3
        x = x / (1.0 + x * x)
    return x


def nest(jvp, g, order):
    """g differentiated `order` times by nested forward mode."""
    for _ in range(order):
        g = (lambda h: lambda y: jvp(h, (y,), (1.0,))[1])(g)
    return g


# Each make_* returns a zero-argument callable returning f^(order)(X0) as a float.
def make_wengert_taylor(order):
    import wengert as wg
    import wengert.math as wm
    d = wg.derivatives(lambda x: f(x, wm), order)
    return lambda: float(d(X0)[order])


def make_wengert_taylor_graph(order):
    import wengert as wg
    import wengert.math as wm
    graph = wg.trace(lambda x: wg.derivatives(lambda y: f(y, wm), order)(x)[order], X0)
    return lambda: float(graph(X0))


def make_wengert_nested(order):
    import wengert as wg
    import wengert.math as wm
    d = nest(wg.jvp, lambda x: f(x, wm), order)
    return lambda: float(d(X0))


def _jax():
    import jax
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")
    return jax


def make_jax_nested(order):
    jax = _jax()
    import jax.numpy as jnp
    d = jax.jit(nest(jax.jvp, lambda x: f(x, jnp), order))
    return lambda: float(d(X0))


def make_jax_jet(order):
    jax = _jax()
    import jax.numpy as jnp
    from jax.experimental.jet import jet
    series = ((1.0,) + (0.0,) * (order - 1),)
    d = jax.jit(lambda x: jet(lambda y: f(y, jnp), (x,), series)[1][order - 1])
    return lambda: float(d(X0))


IMPLS = {
    "wengert taylor": make_wengert_taylor,
    "wengert taylor graph": make_wengert_taylor_graph,
    "wengert nested jvp": make_wengert_nested,
    "jax nested jvp": make_jax_nested,
    "jax jet": make_jax_jet,
}


def first_and_steady(fn, repeats, min_time):
    """(seconds of the first call, median seconds per call afterwards)."""
    t = time.perf_counter()
    fn()
    first = time.perf_counter() - t
    return first, time_it(fn, repeats, min_time)[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
    ap.add_argument("--order", type=int, default=10, help="which derivative (default 10)")
    ap.add_argument("--all", action="store_true",
                    help="run jax nested jvp above order 8 too (minutes of compilation)")
    ap.add_argument("--json", metavar="PATH", help="also write results as JSON")
    args = ap.parse_args(argv)
    repeats, min_time = (3, 0.05) if args.quick else (7, 0.3)
    order = args.order

    results, fns = {name: {} for name in IMPLS}, {}
    for name, make in IMPLS.items():
        if name == "jax nested jvp" and order > 8 and not args.all:
            print(f"{name}: skipped at order {order} (over ten minutes to compile; --all)")
            results[name] = {"skipped": "order > 8 without --all"}
            continue
        try:
            fns[name] = make(order)
        except ImportError as e:
            if name.startswith("wengert"):
                raise
            print(f"{name}: skipped ({e})")
            results[name] = {"skipped": str(e)}
    for name, fn in fns.items():
        first, sec = first_and_steady(fn, repeats, min_time)
        results[name] = {"value": fn(), "first_call_ms": first * 1e3, "ms": sec * 1e3}

    ref = results["wengert taylor"]["value"]
    for name in fns:
        v = results[name]["value"]
        results[name]["agrees"] = abs(v - ref) <= RTOL * abs(ref)
        if not results[name]["agrees"]:
            print(f"WARNING: {name} gives {v!r}, wengert taylor {ref!r}")

    base = results["wengert taylor"]["ms"]
    print(f"\nf^({order})(x0) of a 50-operation scalar function, median of {repeats} repeats "
          f"(Python {platform.python_version()}); value {ref!r}")
    print(f"{'name':<22} {'ms/call':>10} {'first call ms':>14} {'vs wengert taylor':>18}")
    for name, r in results.items():
        if "ms" not in r:
            print(f"{name:<22} skipped")
            continue
        r["vs_wengert_taylor"] = r["ms"] / base
        print(f"{name:<22} {r['ms']:>10.3f} {r['first_call_ms']:>14.1f} "
              f"{r['vs_wengert_taylor']:>17.2f}x")

    speedup = results["wengert nested jvp"]["ms"] / base
    status = "met" if speedup >= GOAL else "NOT met"
    print(f"\ngoal: Taylor mode >= {GOAL:g}x faster than nested forward mode (wengert): "
          f"{status} ({speedup:.0f}x)")
    if "ms" in results.get("jax nested jvp", {}):
        print(f"      against jitted JAX nested jvp: {results['jax nested jvp']['ms'] / base:.2f}x"
              " (compiled code against eager Python; see the first-call column)")

    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"benchmark": "taylor", "order": order, "x0": X0, "n_ops": 50,
                       "python": platform.python_version(), "platform": platform.platform(),
                       "goal": f"taylor >= {GOAL:g}x faster than nested jvp",
                       "goal_met": speedup >= GOAL, "results": results}, fh, indent=2)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    sys.exit(main())
