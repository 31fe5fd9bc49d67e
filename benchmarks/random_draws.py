"""Random draws from keys (wengert.random) against jax.random, PyTorch and NumPy by hand.

    python benchmarks/random_draws.py            # 9 repeats
    python benchmarks/random_draws.py --quick    # 3 short repeats
    python benchmarks/random_draws.py --json out.json

Three tables, single-threaded, each call drawing afresh (from a key where the library has
keys):

1. The gradient of a Monte Carlo expectation with reparameterised normal draws:
   L(mu, log_s) = mean(f(mu + exp(log_s) * eps)), eps ~ N(0, 1), 1e5 samples,
   f(z) = sin z + z²/2, differentiated in (mu, log_s).  wengert eager (``wg.grad``) and
   compiled (``wg.jit(wg.grad(loss))``, the key an argument), JAX's
   ``jax.jit(jax.grad(loss))``, PyTorch's ``Normal(mu, s).rsample`` with ``backward``,
   and NumPy by hand (the derivative written out, the draws from NumPy's Philox).
2. ``vmap(lambda k: normal(k, (3,)))(split(key, 1000))``: a thousand keys, three numbers
   each (the shape of JAX's per-example dropout and initialisation idioms); wengert eager
   and compiled, a Python loop of wengert's draws, JAX jit, PyTorch's
   ``torch.func.vmap(..., randomness="different")``, and NumPy (a generator per key).
3. The gradient of the mean of 1e5 Gamma(a) draws in a (implicit reparameterisation):
   wengert compiled, JAX jit, PyTorch's ``Gamma(a, 1).rsample``.

The implementations draw different numbers (Philox against Threefry against PyTorch's
generator), so their results are checked against the exact answer, to Monte Carlo
accuracy, not against each other: table 1 against the closed form of the expectation's
gradient, table 3 against d E[x]/da = 1, table 2 for its shape and (wengert's) against
the loop.  Ratios are paired within each repeat (see timing.py).
"""
import argparse
import json
import math
import sys
from importlib.metadata import version

import single_thread  # noqa: F401  (pins the thread pools: before numpy)
import numpy as np

from timing import paired_ratio, run_table

N = 100_000
MU, LOG_S = 0.3, math.log(0.8)


def exact_gradient():
    """d/d(mu, log_s) of E[sin z + z²/2], z ~ N(mu, s²): sin(mu) e^{-s²/2} + (mu² + s²)/2."""
    s = math.exp(LOG_S)
    e = math.exp(-s * s / 2)
    return np.array([math.cos(MU) * e + MU, s * (s - s * math.sin(MU) * e)])


def within(reference, tolerance):
    """A run_table check: each row's largest difference from `reference`, which must be
    below `tolerance` (Monte Carlo error, not rounding)."""
    def check(results):
        notes = {}
        for name, got in results.items():
            err = float(np.max(np.abs(np.asarray(got, dtype=float) - reference)))
            notes[name] = f"{err:.1e} from the exact value"
            if err > tolerance:
                print(f"WARNING: {name} is {err:.1e} from the exact value")
        return notes
    return check


# ---- 1. a reparameterised Monte Carlo gradient --------------------------------------------------
def mc_makers():
    def make_wengert(jit):
        import wengert as wg
        import wengert.numpy as wnp
        from wengert import random

        def loss(mu, log_s, key):
            z = mu + wnp.exp(log_s) * random.normal(key, (N,))
            return wnp.mean(wnp.sin(z) + z * z / 2)
        g = wg.grad(loss, argnums=(0, 1))
        if jit:
            g = wg.jit(g)
        key = random.PRNGKey(0)
        return version("wengert"), lambda: np.array(g(MU, LOG_S, key))

    def make_jax():
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp

        def loss(mu, log_s, key):
            z = mu + jnp.exp(log_s) * jax.random.normal(key, (N,))
            return jnp.mean(jnp.sin(z) + z * z / 2)
        g = jax.jit(jax.grad(loss, argnums=(0, 1)))
        key = jax.random.PRNGKey(0)
        return jax.__version__, lambda: np.array(jax.block_until_ready(g(MU, LOG_S, key)))

    def make_torch():
        import torch
        torch.set_num_threads(1)
        gen = torch.Generator().manual_seed(0)

        def grads():
            gen.manual_seed(0)              # (a fixed stream, as a fixed key)
            mu = torch.tensor(MU, dtype=torch.float64, requires_grad=True)
            log_s = torch.tensor(LOG_S, dtype=torch.float64, requires_grad=True)
            eps = torch.randn(N, dtype=torch.float64, generator=gen)
            z = mu + log_s.exp() * eps       # (Normal(mu, s).rsample(), with our generator)
            torch.mean(torch.sin(z) + z * z / 2).backward()
            return np.array([mu.grad.item(), log_s.grad.item()])
        return torch.__version__, grads

    def make_numpy():
        def grads():
            eps = np.random.Generator(np.random.Philox(key=0)).standard_normal(N)
            s = math.exp(LOG_S)
            z = MU + s * eps
            df = np.cos(z) + z                                    # f'(z)
            return np.array([df.mean(), (df * eps).mean() * s])
        return version("numpy"), grads

    return {"wengert": lambda: make_wengert(False), "wengert-jit": lambda: make_wengert(True),
            "jax-jit": make_jax, "torch": make_torch, "numpy-by-hand": make_numpy}


# ---- 2. a thousand keys, three numbers each ------------------------------------------------------
KEYS = 1000


def vmap_makers():
    def make_wengert(how):
        import wengert as wg
        from wengert import random
        draw = lambda k: random.normal(k, (3,))             # noqa: E731
        if how == "loop":
            f = lambda key: np.stack([draw(k) for k in random.split(key, KEYS)])  # noqa: E731
        else:
            f = lambda key: wg.vmap(draw)(random.split(key, KEYS))                 # noqa: E731
            if how == "jit":
                f = wg.jit(f)
        key = random.PRNGKey(0)
        return version("wengert"), lambda: f(key)

    def make_jax():
        import jax
        jax.config.update("jax_enable_x64", True)
        f = jax.jit(lambda key: jax.vmap(lambda k: jax.random.normal(k, (3,)))(
            jax.random.split(key, KEYS)))
        key = jax.random.PRNGKey(0)
        return jax.__version__, lambda: np.asarray(jax.block_until_ready(f(key)))

    def make_torch():
        import torch
        from torch.func import vmap
        torch.set_num_threads(1)
        torch.manual_seed(0)
        f = vmap(lambda x: torch.randn(3, dtype=torch.float64), randomness="different")
        slots = torch.empty(KEYS)
        return torch.__version__, lambda: f(slots).numpy()

    def make_numpy():
        seeds = np.arange(KEYS, dtype=np.uint64)

        def draws():
            return np.stack([np.random.Generator(np.random.Philox(key=int(s)))
                             .standard_normal(3) for s in seeds])
        return version("numpy"), draws

    return {"wengert": lambda: make_wengert("vmap"), "wengert-jit": lambda: make_wengert("jit"),
            "wengert-loop": lambda: make_wengert("loop"), "jax-jit": make_jax,
            "torch": make_torch, "numpy-loop": make_numpy}


def check_vmap(results):
    notes = {}
    for name, got in results.items():
        ok = np.shape(got) == (KEYS, 3) and abs(np.mean(got)) < 0.1 and \
            abs(np.std(got) - 1) < 0.1
        notes[name] = "shape and moments" + ("" if ok else ": WRONG")
        if not ok:
            print(f"WARNING: {name}'s draws have shape {np.shape(got)}, "
                  f"mean {np.mean(got):.3f}, deviation {np.std(got):.3f}")
    if "wengert" in results and "wengert-loop" in results:
        same = np.array_equal(results["wengert"], results["wengert-loop"]) and \
            np.array_equal(results["wengert-jit"], results["wengert-loop"])
        notes["wengert"] += "; = the loop" if same else "; NOT the loop's"
        if not same:
            print("WARNING: wengert's vmapped draws differ from its loop's")
    return notes


# ---- 3. the implicit gradient of gamma draws --------------------------------------------------
A = 2.5


def gamma_makers():
    def make_wengert():
        import wengert as wg
        import wengert.numpy as wnp
        from wengert import random
        g = wg.jit(wg.grad(lambda a, key: wnp.mean(random.gamma(key, a, (N,)))))
        key = random.PRNGKey(0)
        return version("wengert"), lambda: g(A, key)

    def make_jax():
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        g = jax.jit(jax.grad(lambda a, key: jnp.mean(jax.random.gamma(key, a, (N,)))))
        key = jax.random.PRNGKey(0)
        return jax.__version__, lambda: float(jax.block_until_ready(g(A, key)))

    def make_torch():
        import torch
        torch.set_num_threads(1)

        def grad():
            torch.manual_seed(0)
            a = torch.tensor(A, dtype=torch.float64, requires_grad=True)
            x = torch.distributions.Gamma(a.expand(N), torch.ones(N, dtype=torch.float64))
            x.rsample().mean().backward()
            return a.grad.item()
        return torch.__version__, grad

    return {"wengert-jit": make_wengert, "jax-jit": make_jax, "torch": make_torch}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 short repeats")
    ap.add_argument("--json", metavar="PATH", help="also write the times to PATH")
    args = ap.parse_args(argv)
    repeats, min_time = (3, 0.05) if args.quick else (9, 0.2)
    tables = [
        (mc_makers(), f"gradient of a Monte Carlo expectation, {N:.0e} reparameterised "
         "normal draws, float64", "wengert-jit", "ms/grad",
         within(exact_gradient(), 0.02)),
        (vmap_makers(), f"vmap(normal(k, (3,)))(split(key, {KEYS}))", "wengert-jit",
         "ms/call", check_vmap),
        (gamma_makers(), f"gradient of the mean of {N:.0e} Gamma({A}) draws in a",
         "wengert-jit", "ms/grad", within(1.0, 0.02)),
    ]
    out = {}
    for makers, title, base, unit, check in tables:
        times = _run(makers, title, base, repeats, min_time, unit, check)
        out[title] = times
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return 0


def _run(makers, title, base, repeats, min_time, unit, check):
    """`run_table`, keeping each row's median time and ratio for --json."""
    import timing
    kept = {}
    real = timing.print_table

    def keep(times, versions, *rest, **kw):
        repeat_times = {k: v[0] for k, v in times.items()}
        for name, (samples, _, _) in times.items():
            kept[name] = {"ms": sorted(samples)[len(samples) // 2] * 1e3,
                          "ratio": paired_ratio(repeat_times, name, base),
                          "version": versions[name]}
        return real(times, versions, *rest, **kw)
    timing.print_table = keep
    try:
        run_table(makers, title, base, repeats, min_time, unit, check)
    finally:
        timing.print_table = real
    return kept


if __name__ == "__main__":
    sys.exit(main())
