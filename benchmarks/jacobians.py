"""Jacobians by forward, reverse, elimination and sparse modes, against CasADi and JAX.

Problems (scalar code: wengert has no array layer yet, so every function is written on
lists of scalars; CasADi gets the same code on SX scalars; JAX gets the idiomatic
vectorised version, since tracing scalar loops is not how JAX is used):

    seed-003        seed 003's example: v1 = x1*x2; v2 = g(v1); f = (x1*v2, x2*v2), with g a
                    chain of 20 steps u -> sin(u)*0.9 + 0.1 (60 operations)
    seed-003-long   the same with a chain of 5000 steps (15,000 operations): where
                    elimination's analysis, not the arithmetic, is what an eager call costs
    broyden-100     the Broyden tridiagonal function R^n -> R^n (tridiagonal Jacobian)
    broyden-1000
    rosenbrock-H    the Hessian of the extended Rosenbrock function, n = 100 (2x2 blocks)
    chained-20      a dense 20x20 chained function y = B g(A x): a dense mixing A, the
                    scalar chain g (10 steps, as in seed-003) on each of the 20 components,
                    a dense mixing B (A, B fixed random matrices): seed 003's structure
                    twenty times over, with a dense Jacobian
    layers-20       for contrast, two dense tanh layers y = tanh(W2 tanh(W1 x)), 20x20:
                    no scalar subprograms, so elimination can only tie

Operation counts: wengert's are `wg.jacobian_costs` (the operations of the Jacobian's
graph, including the function values it needs; see docs/jacobians.md); CasADi's are the
arithmetic instructions of `Function(jacobian(f, x))` (inputs, outputs, constants and
copies left out; its `n_instructions()` is printed too).  Times: wengert eager calls
(trace + sweeps each call); CasADi's evaluation of the built Function and, apart, the
time to build it; JAX's jit-compiled jacfwd/jacrev after compilation.  Medians of
repeats, one process.

Run on demand (not part of the test suite):

    pip install -e '.[bench]'
    python benchmarks/jacobians.py [--quick] [--json PATH]

--quick skips the n = 1000 dense counts and timings of forward and reverse mode (the slow
ones).  The last lines check the goals of issue 6.
"""
import single_thread  # noqa: F401  (pins the thread pools: before numpy, torch, jax)

import argparse
import json
import platform
import sys
import time

import numpy as np

import wengert as wg
import wengert.math as wm
from timing import time_it        # this directory is on sys.path when run as a script

RNG = np.random.default_rng(20260)
N_CHAIN = 20
N_LONG = 5000
A20 = RNG.normal(size=(20, 20)) / np.sqrt(20)
B20 = RNG.normal(size=(20, 20)) / np.sqrt(20)


# --------------------------------------------------------------------------------------
# the problems, written once on scalars; M is the math namespace (wengert.math or casadi)
# --------------------------------------------------------------------------------------
def g_chain(u, M, steps):
    for _ in range(steps):
        u = M.sin(u) * 0.9 + 0.1
    return u


def seed003(x, M, steps=N_CHAIN):
    x1, x2 = x
    v2 = g_chain(x1 * x2, M, steps)
    return [x1 * v2, x2 * v2]


def seed003_long(x, M):
    return seed003(x, M, N_LONG)


def broyden(x, M):
    n = len(x)
    return [(3 - 2 * x[i]) * x[i] - (x[i - 1] if i else 0) - 2 * (x[i + 1] if i < n - 1 else 0)
            + 1 for i in range(n)]


def rosenbrock(x, M):
    return sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(0, len(x), 2))


def _mix(W, v):
    return [sum(float(W[i, j]) * v[j] for j in range(len(v))) for i in range(W.shape[0])]


def chained(x, M):
    return _mix(B20, [g_chain(u, M, N_CHAIN // 2) for u in _mix(A20, x)])


def layers(x, M):
    return [M.tanh(v) for v in _mix(B20, [M.tanh(u) for u in _mix(A20, x)])]


def _jax_problems():
    import jax
    import jax.numpy as jnp

    def g(u, steps):
        for _ in range(steps):
            u = jnp.sin(u) * 0.9 + 0.1
        return u

    def seed(x, steps=N_CHAIN):
        v2 = g(x[0] * x[1], steps)
        return jnp.stack([x[0] * v2, x[1] * v2])

    def seed_long(x):           # (a loop JAX compiles once, not 5000 unrolled steps)
        v2 = jax.lax.fori_loop(0, N_LONG, lambda i, u: jnp.sin(u) * 0.9 + 0.1, x[0] * x[1])
        return jnp.stack([x[0] * v2, x[1] * v2])

    def broy(x):
        z = jnp.zeros(1)
        return ((3 - 2 * x) * x - jnp.concatenate([z, x[:-1]])
                - 2 * jnp.concatenate([x[1:], z]) + 1)

    def rosen(x):
        a, b = x[::2], x[1::2]
        return jnp.sum(100 * (b - a ** 2) ** 2 + (1 - a) ** 2)

    A, B = jnp.asarray(A20), jnp.asarray(B20)
    return {"seed": seed, "seed_long": seed_long, "broyden": broy, "rosenbrock": rosen,
            "chained": lambda x: B @ g(A @ x, N_CHAIN // 2),
            "layers": lambda x: jnp.tanh(B @ jnp.tanh(A @ x))}


# (name, function, jax key, n, hessian?)
PROBLEMS = [
    ("seed-003", seed003, "seed", 2, False),
    ("seed-003-long", seed003_long, "seed_long", 2, False),
    ("broyden-100", broyden, "broyden", 100, False),
    ("broyden-1000", broyden, "broyden", 1000, False),
    ("rosenbrock-H", rosenbrock, "rosenbrock", 100, True),
    ("chained-20", chained, "chained", 20, False),
    ("layers-20", layers, "layers", 20, False),
]


# --------------------------------------------------------------------------------------
# measuring
# --------------------------------------------------------------------------------------
def timed(fn, repeats=5):
    """Median seconds per call (eager_scalar's batching); a call slower than a second is
    timed once: dense Jacobians at n = 1000 take seconds each."""
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    if first > 1.0:
        return first
    return time_it(fn, repeats, 0.2)[0]


def wengert_row(name, fn, n, hessian, quick):
    x = list(RNG.uniform(-1, 1, n))
    f = lambda v: fn(v, wm)
    big = n >= 1000
    target = wg.grad(f) if hessian else f
    modes = ("eliminate", "sparse") if (quick and big) else ("fwd", "rev", "eliminate", "sparse")
    costs = wg.jacobian_costs(target, x, modes=modes)
    counts = {m: costs[m]["total"] for m in costs}
    if hessian:
        runs = {"fwd": lambda: wg.hessian(f)(x),
                "rev": lambda: wg.jacrev(wg.grad(f))(x),
                "eliminate": lambda: wg.jacobian(wg.grad(f), mode="eliminate")(x),
                "sparse": lambda: wg.sparse_hessian(f)(x),
                "auto": lambda: wg.jacobian(wg.grad(f))(x)}
    else:
        runs = {"fwd": lambda: wg.jacfwd(f)(x),
                "rev": lambda: wg.jacrev(f)(x),
                "eliminate": lambda: wg.jacobian(f, mode="eliminate")(x),
                "sparse": lambda: wg.sparse_jacobian(f)(x),
                "auto": lambda: wg.jacobian(f)(x)}
    times = {}
    for mode, run in runs.items():
        if quick and big and mode in ("fwd", "rev", "auto"):
            continue
        times[mode] = timed(run, repeats=3 if big else 5)
    J = runs["sparse"]()
    return x, counts, times, J.toarray()


_CASADI_CLASSES = {"ADD": "add", "SUB": "add", "TWICE": "add", "MUL": "mul", "DIV": "div",
                   "INV": "div", "SQ": "pow", "POW": "pow", "CONSTPOW": "pow", "NEG": "neg",
                   "LT": "cmp", "LE": "cmp", "EQ": "cmp", "NE": "cmp", "NOT": "cmp",
                   "AND": "cmp", "OR": "cmp", "IF_ELSE_ZERO": "cmp"}
_CASADI_FREE = {"INPUT", "OUTPUT", "CONST", "PARAMETER", "ASSIGN"}


def casadi_row(fn, x, hessian):
    try:
        import casadi as ca
    except ImportError:
        return None
    names = {getattr(ca, a): a[3:] for a in dir(ca) if a.startswith("OP_")}
    n = len(x)
    t0 = time.perf_counter()
    xs = ca.SX.sym("x", n)
    parts = [xs[i] for i in range(n)]
    if hessian:
        J = ca.hessian(fn(parts, ca), xs)[0]
    else:
        J = ca.jacobian(ca.vertcat(*fn(parts, ca)), xs)
    F = ca.Function("J", [xs], [J])
    build = time.perf_counter() - t0
    ops = sum(1 for k in range(F.n_instructions())
              if names.get(F.instruction_id(k), "?") not in _CASADI_FREE)
    xv = np.array(x)
    t = timed(lambda: F(xv))
    return {"ops": ops, "instructions": F.n_instructions(), "time": t, "build": build,
            "J": np.array(F(xv).full())}


def jax_row(key, x, hessian):
    try:
        import jax
        jax.config.update("jax_enable_x64", True)
    except ImportError:
        return None
    f = _jax_problems()[key]
    xv = jax.numpy.asarray(np.array(x))
    out = {}
    kinds = {"fwd": jax.hessian(f) if hessian else jax.jacfwd(f),
             "rev": jax.jacrev(jax.grad(f)) if hessian else jax.jacrev(f)}
    for mode, jf in kinds.items():
        jf = jax.jit(jf)
        t0 = time.perf_counter()
        J = jf(xv).block_until_ready()
        out[mode + "_compile"] = time.perf_counter() - t0
        out[mode] = timed(lambda: jf(xv).block_until_ready())
        out["J"] = np.array(J)
    return out


# --------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------
def _fmt_ms(t):
    if t is None:
        return "-"
    ms = t * 1e3
    return f"{ms:.3g}" if ms < 100 else f"{ms:.0f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="skip dense n=1000 fwd/rev")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)

    print(f"# Jacobians: wengert {wg.__version__}, Python {platform.python_version()}, "
          f"{platform.machine()}")
    results = []
    for name, fn, key, n, hessian in PROBLEMS:
        x, counts, times, J = wengert_row(name, fn, n, hessian, args.quick)
        cas = casadi_row(fn, x, hessian)
        jx = jax_row(key, x, hessian)
        for who, other in (("CasADi", cas), ("JAX", jx)):
            if other is not None and not np.allclose(other["J"], J, rtol=1e-10, atol=1e-12):
                print(f"WARNING: {who}'s Jacobian for {name} differs from wengert's")
        results.append({"problem": name, "n": n, "counts": counts, "times": times,
                        "casadi": None if cas is None else {k: v for k, v in cas.items()
                                                            if k != "J"},
                        "jax": None if jx is None else {k: v for k, v in jx.items()
                                                        if k != "J"}})

    print("\n## Operations of the Jacobian (all cost classes)\n")
    head = ["problem", "function", "fwd", "rev", "eliminate", "sparse", "elim vs best",
            "CasADi ops", "CasADi instr"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in results:
        c = r["counts"]
        best = min([c[m] for m in ("fwd", "rev") if m in c], default=None)
        gain = "-" if best is None else f"{100 * (1 - c['eliminate'] / best):+.0f}%"
        cas = r["casadi"] or {}
        cells = [r["problem"], c["function"], c.get("fwd", "-"), c.get("rev", "-"),
                 c["eliminate"], c["sparse"], gain, cas.get("ops", "-"),
                 cas.get("instructions", "-")]
        print("| " + " | ".join(str(v) for v in cells) + " |")

    print("\n## Time per Jacobian (ms; wengert eager: trace + sweeps every call)\n")
    head = ["problem", "wg fwd", "wg rev", "wg eliminate", "wg sparse", "wg auto", "CasADi eval",
            "CasADi build", "JAX jit fwd", "JAX jit rev", "jacfwd / sparse"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in results:
        t = r["times"]
        cas = r["casadi"] or {}
        jx = r["jax"] or {}
        ratio = "-" if "fwd" not in t else f"{t['fwd'] / t['sparse']:.2g}x"
        cells = [r["problem"], _fmt_ms(t.get("fwd")), _fmt_ms(t.get("rev")),
                 _fmt_ms(t.get("eliminate")), _fmt_ms(t.get("sparse")), _fmt_ms(t.get("auto")),
                 _fmt_ms(cas.get("time")), _fmt_ms(cas.get("build")),
                 _fmt_ms(jx.get("fwd")), _fmt_ms(jx.get("rev")), ratio]
        print("| " + " | ".join(cells) + " |")

    print("\n## Goals (issue 6)\n")
    ok_all = True
    for r in results:
        c = r["counts"]
        if "fwd" in c:
            ok = c["eliminate"] <= min(c["fwd"], c["rev"])
            ok_all &= ok
            print(f"- {r['problem']}: eliminate {c['eliminate']} <= min(fwd, rev) "
                  f"{min(c['fwd'], c['rev'])}: {'met' if ok else 'NOT met'}")
    for name in ("seed-003", "chained-20"):
        c = next(r["counts"] for r in results if r["problem"] == name)
        ok = c["eliminate"] <= 0.8 * min(c["fwd"], c["rev"])
        ok_all &= ok
        print(f"- {name}: eliminate at least 20% below both: "
              f"{100 * (1 - c['eliminate'] / min(c['fwd'], c['rev'])):.0f}% "
              f"{'met' if ok else 'NOT met'}")
    t = next(r["times"] for r in results if r["problem"] == "broyden-1000")
    if "fwd" in t:
        # (issue 6 asked for 10x when dense jacfwd swept once per input; its sweeps now run
        # as one batch, each partial evaluated once, so the ratio is no longer that goal's:
        # it is shown, not checked)
        print(f"- broyden-1000: sparse {t['fwd'] / t['sparse']:.1f}x faster than dense "
              "jacfwd (for information: issue 6's 10x was against one sweep per input, "
              "which jacfwd no longer runs)")
    print(f"\nall goals {'met' if ok_all else 'NOT all met'}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
