"""Staged compilation: per-call time of compiled derivatives, wengert against its peers.

What is measured, per call, each peer given its natural input (floats or arrays) and
returning its natural output, with nothing traced or compiled inside the timed call:

    powell grad      the gradient of Powell's function (seed 002, Example 2), 4 variables
    powell f+g+pHp   f, its gradient and p'Hp together (the paper's Example 2)
    rosen grad n     the extended Rosenbrock gradient at n = 10, 1000, 100000
    rosen hess 100   its Hessian at n = 100
    mlp grad         a tanh MLP's loss gradient (64 x 10 -> 32 -> 1), parameters as a tuple

Peers (each optional, skipped if not installed): wengert eager (`wg.grad`), JAX jit
(x64, CPU), CasADi Function (SX; MX for n = 100000) and CasADi's generated C (compiled
with cc, loaded with casadi.external), SymPy's lambdify of a cse'd derivative (tiny
problems only: symbolic derivatives of large problems take minutes), PyTorch eager,
autograd, and a hand-written NumPy (or plain float) derivative.  wengert's compiled
Python is `wg.compile(...)`; its C is `wg.compile(..., backend="c")`.  Every result is
checked against the hand-written one before timing.

Also measured: the time `wg.compile` takes for a 2,000-operation gradient, and the
operation counts of the emitted Powell derivatives against CasADi's.

Run on demand (not part of the test suite):

    pip install -e '.[bench]'
    python benchmarks/compile.py [--quick] [--only NAME] [--json PATH]
"""

import os

import single_thread  # noqa: F401  (pins the thread pools: before numpy, torch, jax)

import argparse
import json
import math
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from timing import time_it   # (benchmarks/ is on the path when this file runs)

# Goals of the issue (see the README of this directory).
TINY = ("powell grad", "powell f+g+pHp", "rosen grad 10")
CASADI_COUNTS = {"powell grad": 8 + 14 + 2, "powell f+g+pHp": 24 + 42 + 3}
COMPILE_GOAL_S = 0.5


# ---- the problems, written once for every array library -------------------------------------
def powell(x):
    x1, x2, x3, x4 = x[0], x[1], x[2], x[3]
    return (x1 + 10 * x2) ** 2 + 5 * (x3 - x4) ** 2 + (x2 - 2 * x3) ** 4 + 10 * (x1 - x4) ** 4


def powell_grad_hand(x):
    x1, x2, x3, x4 = x
    a, b, c, d = x1 + 10 * x2, x3 - x4, x2 - 2 * x3, x1 - x4
    c3, d3 = 4 * c ** 3, 40 * d ** 3
    return (2 * a + d3, 20 * a + c3, 10 * b - 2 * c3, -10 * b - d3)


def powell_fgp_hand(x, p):
    x1, x2, x3, x4 = x
    p1, p2, p3, p4 = p
    a, b, c, d = x1 + 10 * x2, x3 - x4, x2 - 2 * x3, x1 - x4
    C, Dd = 12 * c * c, 120 * d * d
    hp = (2 * (p1 + 10 * p2) + Dd * (p1 - p4), 20 * (p1 + 10 * p2) + C * (p2 - 2 * p3),
          10 * (p3 - p4) - 2 * C * (p2 - 2 * p3), -10 * (p3 - p4) - Dd * (p1 - p4))
    f = a * a + 5 * b * b + c ** 4 + 10 * d ** 4
    return f, powell_grad_hand(x), p1 * hp[0] + p2 * hp[1] + p3 * hp[2] + p4 * hp[3]


def rosen(x, np_):
    return np_.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosen_grad_hand(x):
    g = np.zeros_like(x)
    t = x[1:] - x[:-1] ** 2
    g[:-1] = -400 * x[:-1] * t - 2 * (1 - x[:-1])
    g[1:] += 200 * t
    return g


def rosen_hess_hand(x):
    n = len(x)
    H = np.zeros((n, n))
    d = np.zeros(n)
    d[:-1] = 1200 * x[:-1] ** 2 - 400 * x[1:] + 2
    d[1:] += 200
    H[np.arange(n), np.arange(n)] = d
    off = -400 * x[:-1]
    H[np.arange(n - 1), np.arange(1, n)] = off
    H[np.arange(1, n), np.arange(n - 1)] = off
    return H


def mlp_loss(params, x, y, np_):
    w1, b1, w2, b2 = params
    h = np_.tanh(x @ w1 + b1)
    return np_.mean((h @ w2 + b2 - y) ** 2)


def mlp_grad_hand(params, x, y):
    w1, b1, w2, b2 = params
    z = x @ w1 + b1
    h = np.tanh(z)
    r = h @ w2 + b2 - y
    dout = 2 * r / r.size
    dh = dout @ w2.T * (1 - h * h)
    return (x.T @ dh, dh.sum(0), h.T @ dout, dout.sum(0))


rng = np.random.default_rng(0)
X4 = (0.3, -1.2, 0.7, 1.9)
P4 = (0.5, -0.25, 1.0, 2.0)
MLP = (tuple(rng.normal(size=s) * 0.3 for s in ((10, 32), (32,), (32, 1), (1,))),
       rng.normal(size=(64, 10)), rng.normal(size=(64, 1)))


def rosen_x(n):
    return np.linspace(-1.0, 1.5, n)


# ---- peers: each make_* returns {problem: zero-argument callable} ----------------------------
def make_wengert_compiled():
    import wengert as wg
    import wengert.numpy as wnp
    out = {}
    g = wg.compile(wg.grad(powell), X4)
    out["powell grad"] = lambda: g(X4)
    ga = wg.compile(wg.grad(powell), np.array(X4))
    xa = np.array(X4)
    out["powell grad (array)"] = lambda: ga(xa)

    def fgp(x, p):
        return powell(x), wg.grad(powell)(x), sum(
            a * b for a, b in zip(p, wg.hvp(powell)(x, p)))
    c = wg.compile(fgp, X4, P4)
    out["powell f+g+pHp"] = lambda: c(X4, P4)
    for n in (10, 1000, 100000):
        r = wg.compile(wg.grad(lambda x: rosen(x, wnp)), rosen_x(n))
        out[f"rosen grad {n}"] = (lambda r=r, x=rosen_x(n): r(x))
    h = wg.compile(wg.hessian(lambda x: rosen(x, wnp)), rosen_x(100))
    out["rosen hess 100"] = lambda: h(rosen_x(100))
    m = wg.compile(wg.grad(lambda p, x, y: mlp_loss(p, x, y, wnp)), *MLP)
    out["mlp grad"] = lambda: m(*MLP)
    return out


def make_wengert_c():
    import wengert as wg
    out = {}
    g = wg.compile(wg.grad(powell), X4, backend="c")
    out["powell grad"] = lambda: g(X4)

    def fgp(x, p):
        return powell(x), wg.grad(powell)(x), sum(
            a * b for a, b in zip(p, wg.hvp(powell)(x, p)))
    c = wg.compile(fgp, X4, P4, backend="c")
    out["powell f+g+pHp"] = lambda: c(X4, P4)
    import wengert.numpy as wnp
    for n in (10, 1000):
        r = wg.compile(wg.grad(lambda x: rosen(x, wnp)), rosen_x(n), backend="c")
        out[f"rosen grad {n}"] = (lambda r=r, x=rosen_x(n): r(x))
    return out


def make_wengert_eager():
    import wengert as wg
    import wengert.numpy as wnp
    out = {"powell grad": lambda: wg.grad(powell)(X4)}

    def fgp(x, p):
        v, g = wg.value_and_grad(powell)(x)
        return v, g, sum(a * b for a, b in zip(p, wg.hvp(powell)(x, p)))
    out["powell f+g+pHp"] = lambda: fgp(X4, P4)
    for n in (10, 1000, 100000):
        out[f"rosen grad {n}"] = (lambda x=rosen_x(n): wg.grad(lambda x: rosen(x, wnp))(x))
    out["rosen hess 100"] = lambda: wg.hessian(lambda x: rosen(x, wnp))(rosen_x(100))
    out["mlp grad"] = lambda: wg.grad(lambda p, x, y: mlp_loss(p, x, y, wnp))(*MLP)
    return out


def make_jax():
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    out = {}
    g = jax.jit(jax.grad(powell))
    xa = jnp.array(X4)
    out["powell grad"] = lambda: g(xa).block_until_ready()

    @jax.jit
    def fgp(x, p):
        v, gr = jax.value_and_grad(powell)(x)
        hp = jax.jvp(jax.grad(powell), (x,), (p,))[1]
        return v, gr, p @ hp
    pa = jnp.array(P4)
    out["powell f+g+pHp"] = lambda: jax.block_until_ready(fgp(xa, pa))
    for n in (10, 1000, 100000):
        r = jax.jit(jax.grad(lambda x: rosen(x, jnp)))
        out[f"rosen grad {n}"] = (lambda r=r, x=jnp.array(rosen_x(n)): r(x).block_until_ready())
    h = jax.jit(jax.hessian(lambda x: rosen(x, jnp)))
    x100 = jnp.array(rosen_x(100))
    out["rosen hess 100"] = lambda: h(x100).block_until_ready()
    m = jax.jit(jax.grad(lambda p, x, y: mlp_loss(p, x, y, jnp)))
    mp = tuple(jnp.array(a) for a in MLP[0]), jnp.array(MLP[1]), jnp.array(MLP[2])
    out["mlp grad"] = lambda: jax.block_until_ready(m(*mp))
    return out


def _casadi_functions():
    import casadi as ca
    funcs = {}
    x = ca.SX.sym("x", 4)
    p = ca.SX.sym("p", 4)
    f = powell(x)
    g = ca.gradient(f, x)
    funcs["powell grad"] = (ca.Function("pg", [x], [g]), [np.array(X4)])
    php = ca.dot(p, ca.jtimes(g, x, p))
    funcs["powell f+g+pHp"] = (ca.Function("pfgp", [x, p], [f, g, php]),
                               [np.array(X4), np.array(P4)])
    for n in (10, 1000, 100000):
        sym = ca.MX if n > 1000 else ca.SX
        x = sym.sym("x", n)
        fr = ca.sum1(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
        funcs[f"rosen grad {n}"] = (ca.Function(f"rg{n}", [x], [ca.gradient(fr, x)]),
                                    [rosen_x(n)])
    x = ca.SX.sym("x", 100)
    fr = ca.sum1(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    funcs["rosen hess 100"] = (ca.Function("rh", [x], [ca.hessian(fr, x)[0]]),
                               [rosen_x(100)])
    return funcs


def make_casadi():
    out = {}
    for name, (F, args) in _casadi_functions().items():
        out[name] = (lambda F=F, args=args: F(*args))
    return out


def make_casadi_c():
    import casadi as ca
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise ImportError("no C compiler")
    build = tempfile.mkdtemp(prefix="casadi-c-")
    out = {}
    for name, (F, args) in _casadi_functions().items():
        if name == "rosen grad 100000":
            continue                    # MX: its generated C is not the comparison here
        src = os.path.join(build, F.name() + ".c")
        cwd = os.getcwd()
        os.chdir(build)
        try:
            F.generate(F.name() + ".c")
        finally:
            os.chdir(cwd)
        lib = os.path.join(build, F.name() + ".so")
        subprocess.run([cc, "-O2", "-shared", "-fPIC", src, "-o", lib], check=True)
        E = ca.external(F.name(), lib)
        out[name] = (lambda E=E, args=args: E(*args))
    return out


def make_sympy():
    import sympy as sp
    out = {}
    xs = sp.symbols("x1:5")
    ps = sp.symbols("p1:5")
    f = powell(xs)
    g = [sp.diff(f, v) for v in xs]
    gf = sp.lambdify(xs, g, cse=True)
    out["powell grad"] = lambda: gf(*X4)
    H = [[sp.diff(gi, v) for v in xs] for gi in g]
    php = sum(ps[i] * H[i][j] * ps[j] for i in range(4) for j in range(4))
    ff = sp.lambdify(xs + ps, [f, g, php], cse=True)
    out["powell f+g+pHp"] = lambda: ff(*X4, *P4)
    x = sp.symbols("x0:10")
    fr = sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(9))
    rf = sp.lambdify(x, [sp.diff(fr, v) for v in x], cse=True)
    x10 = tuple(rosen_x(10))
    out["rosen grad 10"] = lambda: rf(*x10)
    return out


def make_torch():
    import torch
    torch.set_num_threads(1)
    out = {}

    def pg():
        x = torch.tensor(X4, dtype=torch.float64, requires_grad=True)
        (g,) = torch.autograd.grad(powell(x), x)
        return g
    out["powell grad"] = pg

    def fgp():
        x = torch.tensor(X4, dtype=torch.float64, requires_grad=True)
        p = torch.tensor(P4, dtype=torch.float64)
        f = powell(x)
        (g,) = torch.autograd.grad(f, x, create_graph=True)
        (hp,) = torch.autograd.grad(g @ p, x)
        return f.detach(), g.detach(), p @ hp
    out["powell f+g+pHp"] = fgp
    for n in (10, 1000, 100000):
        def rg(n=n):
            x = torch.tensor(rosen_x(n), requires_grad=True)
            (g,) = torch.autograd.grad(rosen(x, torch), x)
            return g
        out[f"rosen grad {n}"] = rg
    x100 = torch.tensor(rosen_x(100))
    out["rosen hess 100"] = lambda: torch.autograd.functional.hessian(
        lambda x: rosen(x, torch), x100)

    def mg():
        params = tuple(torch.tensor(a, requires_grad=True) for a in MLP[0])
        x, y = torch.tensor(MLP[1]), torch.tensor(MLP[2])
        return torch.autograd.grad(mlp_loss(params, x, y, torch), params)
    out["mlp grad"] = mg
    return out


def make_autograd():
    import autograd
    import autograd.numpy as anp
    out = {"powell grad": lambda: autograd.grad(powell)(np.array(X4))}

    def fgp():
        x, p = np.array(X4), np.array(P4)
        v, g = autograd.value_and_grad(powell)(x)
        hp = autograd.hessian_vector_product(powell)(x, p)
        return v, g, p @ hp
    out["powell f+g+pHp"] = fgp
    for n in (10, 1000, 100000):
        out[f"rosen grad {n}"] = (lambda x=rosen_x(n): autograd.grad(
            lambda x: rosen(x, anp))(x))
    out["rosen hess 100"] = lambda: autograd.hessian(lambda x: rosen(x, anp))(rosen_x(100))
    out["mlp grad"] = lambda: autograd.grad(lambda p, x, y: mlp_loss(p, x, y, anp))(*MLP)
    return out


def make_hand():
    out = {"powell grad": lambda: powell_grad_hand(X4),
           "powell f+g+pHp": lambda: powell_fgp_hand(X4, P4)}
    for n in (10, 1000, 100000):
        out[f"rosen grad {n}"] = (lambda x=rosen_x(n): rosen_grad_hand(x))
    out["rosen hess 100"] = lambda: rosen_hess_hand(rosen_x(100))
    out["mlp grad"] = lambda: mlp_grad_hand(*MLP)
    return out


PEERS = {
    "wengert": make_wengert_compiled,
    "wengert C": make_wengert_c,
    "wengert eager": make_wengert_eager,
    "jax jit": make_jax,
    "casadi": make_casadi,
    "casadi C": make_casadi_c,
    "sympy": make_sympy,
    "torch": make_torch,
    "autograd": make_autograd,
    "hand": make_hand,
}


# ---- checking and timing ----------------------------------------------------------------------
def _flat(value):
    if hasattr(value, "full"):                   # a CasADi DM
        value = value.full()
    if isinstance(value, (tuple, list)):
        return np.concatenate([_flat(v) for v in value]) if value else np.zeros(0)
    if hasattr(value, "detach"):                 # a torch tensor
        value = value.detach().numpy()
    return np.ravel(np.asarray(value, dtype=float))


def compile_time():
    """Seconds wg.compile takes for the gradient of 125 iterations of the eager benchmark's
    loop body (1,000 primitives; the gradient has about 2,000 operations)."""
    import wengert as wg
    import wengert.math as wm

    def f(x):
        for _ in range(125):
            x = wm.sin(x) * 1.0001 + 0.1 * x * x - wm.cos(x) / 3
        return x
    times = []
    for _ in range(5):
        t = time.perf_counter()
        c = wg.compile(wg.grad(f), 0.3)
        times.append(time.perf_counter() - t)
    return min(times), sum(c.count().values())


def powell_counts():
    import wengert as wg

    def fgp(x, p):
        return powell(x), wg.grad(powell)(x), sum(
            a * b for a, b in zip(p, wg.hvp(powell)(x, p)))
    out = {}
    for name, c in (("powell grad", wg.compile(wg.grad(powell), X4)),
                    ("powell f+g+pHp", wg.compile(fgp, X4, P4))):
        k = c.count()
        # a power x**3 is two multiplications, x**4 two: count them so, as CasADi does
        out[name] = (k, k["add"] + k["mul"] + k["neg"] + k["div"] + 2 * k["pow"])
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
    ap.add_argument("--only", metavar="NAME", help="only the problems whose name contains NAME")
    ap.add_argument("--json", metavar="PATH", help="also write results as JSON")
    args = ap.parse_args(argv)
    repeats, min_time = (3, 0.05) if args.quick else (5, 0.2)

    fns = {}
    for peer, make in PEERS.items():
        try:
            fns[peer] = make()
        except ImportError as e:
            print(f"{peer}: skipped ({e})")
    reference = fns["hand"]
    problems = [p for p in reference if not args.only or args.only in p]
    problems.insert(1, "powell grad (array)")
    results = {}
    for problem in problems:
        ref = _flat(reference.get(problem, reference["powell grad"])())
        row = {}
        for peer, table in fns.items():
            fn = table.get(problem)
            if fn is None:
                continue
            got = _flat(fn())
            if got.shape != ref.shape or not np.allclose(got, ref, rtol=1e-8, atol=1e-8):
                print(f"WARNING: {peer} disagrees on {problem}")
            row[peer] = time_it(fn, repeats, min_time)[0] * 1e6
        results[problem] = row
        print(f"\n{problem}  (microseconds per call; ratio = time / wengert's)")
        base = row.get("wengert")
        for peer, us in sorted(row.items(), key=lambda kv: kv[1]):
            ratio = f"{us / base:8.2f}x" if base else ""
            print(f"  {peer:<14} {us:12.2f} {ratio}")

    print("\ngoals")
    for problem in TINY:
        row = results.get(problem)
        if not row or "wengert" not in row:
            continue
        w = row["wengert"]
        checks = [f"vs {p}: {row[p] / w:.1f}x" for p in ("sympy", "jax jit", "casadi")
                  if p in row]
        ok = (row.get("sympy", math.inf) >= w and row.get("jax jit", math.inf) >= 3 * w
              and row.get("casadi", math.inf) >= 3 * w)
        print(f"  {problem:<22} >= sympy, >= 3x jax jit and casadi: "
              f"{'met' if ok else 'NOT met'} ({', '.join(checks)})")
    slower = [(p, q) for p, row in results.items() for q in ("wengert eager", "autograd")
              if "wengert" in row and q in row and row[q] < row["wengert"]]
    print("  faster than wengert eager and autograd everywhere: "
          + ("met" if not slower else f"NOT met ({slower})"))
    for name, (kinds, total) in powell_counts().items():
        print(f"  {name} emitted operations {total} (x**n as multiplications) vs CasADi "
              f"{CASADI_COUNTS[name]}: {'met' if total <= CASADI_COUNTS[name] else 'NOT met'}"
              f"   {kinds}")
    seconds, ops = compile_time()
    print(f"  wg.compile of a {ops}-operation gradient: {seconds:.3f} s (goal < "
          f"{COMPILE_GOAL_S} s: {'met' if seconds < COMPILE_GOAL_S else 'NOT met'})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "compile", "python": platform.python_version(),
                       "us_per_call": results, "compile_seconds": seconds}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
