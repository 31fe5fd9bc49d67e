"""Elementwise derivatives of log_ndtr and erfcx: what exact higher derivatives cost.

    python benchmarks/special.py              # about a minute
    python benchmarks/special.py --quick      # 3 short repeats
    python benchmarks/special.py --n 1000000  # another number of points

On n points (100,000 by default), drawn once from a fixed seed, the first and second
derivatives of sum(f(x)) elementwise, for f = log_ndtr on [-10, 3] and erfcx on [-3, 10]
(where erfcx's derivatives turn from the forward recurrence to the backward one, and
log_ndtr's from one form to the other).  One table per function, single-threaded, ratios
paired within each repeat (see timing.py):

* ``scipy-value``: SciPy's f alone, for scale (the base of the ratios);
* ``wengert-grad``, ``wengert-second``: `wg.grad` of the sum, and `wg.grad` of the sum of
  that (eager);
* ``torch-grad``, ``torch-second``: `torch.special`'s f under `torch.autograd.grad`, the
  second with ``create_graph=True``;
* ``jax-grad-jit``, ``jax-second-jit``: `jax.scipy.special`'s f under `jax.jit(jax.grad)`
  (x64), compiled before timing.

The last column gives each derivative's largest difference from wengert's, relative to
wengert's at that point: where the peers cancel (log_ndtr's second derivative for x << 0,
erfcx's derivatives for large x) it is their error, as wengert's are within 1e-14 of
mpmath there (tests/test_scipy.py).  Peers come with ``pip install -e '.[bench]'``.
"""
import argparse
import sys
from importlib.metadata import version

import single_thread  # noqa: F401  (pins the thread pools: before numpy)
import numpy as np

from timing import run_table

DOMAINS = {"log_ndtr": (-10.0, 3.0), "erfcx": (-3.0, 10.0)}


def points(name, n):
    lo, hi = DOMAINS[name]
    return np.random.default_rng(20261124).uniform(lo, hi, n)


def make_scipy(name, x):
    import scipy.special
    f = getattr(scipy.special, name)
    return version("scipy"), lambda: f(x)


def make_wengert(name, x, second):
    import wengert as wg
    from wengert.scipy import special
    f = getattr(special, name)
    d = wg.grad(lambda v: np.sum(f(v)))
    if second:
        d = wg.grad(lambda v, d=d: np.sum(d(v)))
    return version("wengert"), lambda: d(x)


def make_torch(name, x, second):
    import torch
    torch.set_num_threads(1)
    f = getattr(torch.special, name)

    def run():
        v = torch.tensor(x, requires_grad=True)
        g, = torch.autograd.grad(f(v).sum(), v, create_graph=second)
        if second:
            g, = torch.autograd.grad(g.sum(), v)
        return g.detach().numpy()
    return version("torch"), run


def make_jax(name, x, second):
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import jax.scipy.special
    f = getattr(jax.scipy.special, name)
    d = jax.grad(lambda v: jnp.sum(f(v)))
    if second:
        d = jax.grad(lambda v, d=d: jnp.sum(d(v)))
    run = jax.jit(d)
    v = jnp.asarray(x)
    return version("jax"), lambda: np.asarray(jax.block_until_ready(run(v)))


def against_wengert(results):
    """Each derivative's largest difference from wengert's of the same order, relative."""
    notes = {"scipy-value": "-"}
    for order in ("grad", "second"):
        reference = results[f"wengert-{order}"]
        for name, got in results.items():
            if order in name and not name.startswith("wengert"):
                with np.errstate(all="ignore"):
                    err = np.nanmax(np.abs(got - reference) / np.abs(reference))
                notes[name] = f"differs from wengert's by {err:.1e}"
        notes[f"wengert-{order}"] = "the reference"
    return notes


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 short repeats")
    ap.add_argument("--n", type=int, default=100_000, help="how many points")
    args = ap.parse_args(argv)
    repeats, min_time = (3, 0.05) if args.quick else (9, 0.3)
    for name in DOMAINS:
        x = points(name, args.n)
        makers = {"scipy-value": lambda: make_scipy(name, x)}
        for order, second in (("grad", False), ("second", True)):
            makers[f"wengert-{order}"] = lambda s=second: make_wengert(name, x, s)
            makers[f"torch-{order}"] = lambda s=second: make_torch(name, x, s)
            makers[f"jax-{order}-jit"] = lambda s=second: make_jax(name, x, s)
        lo, hi = DOMAINS[name]
        run_table(makers, f"{name} on {args.n} points in [{lo:g}, {hi:g}]", "scipy-value",
                  repeats, min_time, check=against_wengert)
    return 0


if __name__ == "__main__":
    sys.exit(main())
