"""Gradients through gathers: an embedding's rows and a piecewise-linear interpolation,
wengert against autograd, PyTorch and JAX.

    python benchmarks/indexing.py               # 7 repeats, the sizes below
    python benchmarks/indexing.py --quick       # 3 short repeats, smaller sizes

Two problems, one table each, single-threaded, float64:

* **embedding**: ``sum(tanh(E[idx]) * w)`` for a table E of 1000 rows of 64 and 10,000
  indices (repeated: 10 per row on average), gradient in E.  The reverse rule adds each
  row of the cotangent into its row of E: wengert by one ``bincount`` over the flat
  positions, autograd by ``np.add.at``, PyTorch by ``index_add_`` (eager), JAX by XLA's
  scatter-add (``jax.jit``); ``numpy-hand`` is the gradient written by hand in NumPy
  with ``np.add.at``, as one would.
* **interp**: ``sum(interp(x, xp, fp)**2)`` with 1000 sample points and 10,000 queries,
  gradient in fp and in x; then the same under ``vmap`` over 100 sets of sample points
  (each its own xp and fp; gradient in both), where the values are one NumPy interp per
  set and the queries, shared by every set, are put in order once.  wengert's interp is
  one primitive: NumPy's interp for the value, and for the gradient one binary search
  and a few gathers, products and a bincount.  PyTorch has no interp and autograd's has
  no derivative (their rows say so), so the second table is wengert's and JAX's.

Every gradient is checked against wengert's eager one before timing (1e-9, relative to
its largest entry).  Timing as in timing.py: warm-up, repeats interleaved across the
rows, medians, ratios to wengert eager paired within each repeat.  Peers come with
``pip install -e '.[bench]'``.
"""
import platform
import sys
from importlib.metadata import version

import single_thread  # noqa: F401  (pins the thread pools: before numpy)
import numpy as np

from timing import Skip, parser, peer_table, schedule


def embedding_data(rows, width, n):
    rng = np.random.default_rng(20261125)
    return (rng.standard_normal((rows, width)), rng.integers(0, rows, n),
            rng.standard_normal(width))


def embedding_makers(E, idx, w):
    def wengert():
        import wengert as wg
        import wengert.numpy as wnp
        g = wg.grad(lambda E: wnp.sum(wnp.tanh(E[idx]) * w))
        return version("wengert"), lambda: g(E)

    def wengert_jit():
        import wengert as wg
        import wengert.numpy as wnp
        g = wg.jit(wg.grad(lambda E: wnp.sum(wnp.tanh(E[idx]) * w)))
        g(E)
        return version("wengert"), lambda: g(E)

    def autograd():
        import autograd
        import autograd.numpy as anp
        g = autograd.grad(lambda E: anp.sum(anp.tanh(E[idx]) * w))
        return version("autograd"), lambda: g(E)

    def numpy_hand():
        def grad():
            t = np.tanh(E[idx])
            g = (1 - t * t) * w
            out = np.zeros_like(E)
            np.add.at(out, idx, g)      # (what a gradient written by hand would do)
            return out
        return version("numpy"), grad

    def torch():
        import torch
        torch.set_num_threads(1)
        i, wt = torch.from_numpy(idx), torch.from_numpy(w)

        def run():
            t = torch.tensor(E, requires_grad=True)
            g, = torch.autograd.grad((torch.tanh(t[i]) * wt).sum(), t)
            return g.numpy()
        return version("torch"), run

    def jax():
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        g = jax.jit(jax.grad(lambda E: jnp.sum(jnp.tanh(E[idx]) * w)))
        e = jnp.asarray(E)
        g(e)
        return version("jax"), lambda: np.asarray(jax.block_until_ready(g(e)))

    return {"wengert": wengert, "wengert-jit": wengert_jit, "numpy-hand": numpy_hand,
            "autograd": autograd, "torch": torch, "jax-jit": jax}


def interp_data(sets, n, m):
    rng = np.random.default_rng(20261126)
    xp = np.sort(rng.random((sets, n)), axis=1)
    return xp, rng.standard_normal((sets, n)), rng.random(m)


def interp_makers(xp, fp, x):
    def wengert():
        import wengert as wg
        import wengert.numpy as wnp
        g = wg.grad(lambda fp, x: wnp.sum(wnp.interp(x, xp, fp) ** 2), argnums=(0, 1))
        return version("wengert"), lambda: g(fp, x)

    def autograd():
        raise Skip("autograd's interp has no derivative (in x, xp or fp)")

    def jax():
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        g = jax.jit(jax.grad(lambda fp, x: jnp.sum(jnp.interp(x, xp, fp) ** 2),
                             argnums=(0, 1)))
        f, v = jnp.asarray(fp), jnp.asarray(x)
        g(f, v)
        return version("jax"), lambda: [np.asarray(a) for a in jax.block_until_ready(g(f, v))]

    def torch():
        raise Skip("PyTorch has no interp")

    return {"wengert": wengert, "autograd": autograd, "jax-jit": jax, "torch": torch}


def batched_interp_makers(xp, fp, x):
    def loss(np_):
        return lambda xp, fp: np_.sum(np_.interp(x, xp, fp) ** 2)

    def wengert():
        import wengert as wg
        import wengert.numpy as wnp
        g = wg.vmap(wg.grad(loss(wnp), argnums=(0, 1)))
        return version("wengert"), lambda: g(xp, fp)

    def jax():
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        g = jax.jit(jax.vmap(jax.grad(loss(jnp), argnums=(0, 1))))
        a, b = jnp.asarray(xp), jnp.asarray(fp)
        g(a, b)
        return version("jax"), lambda: [np.asarray(v) for v in jax.block_until_ready(g(a, b))]

    return {"wengert": wengert, "jax-jit": jax}


def main(argv=None):
    ap = parser(__doc__, "smaller problems, 3 short repeats", json=False)
    args = ap.parse_args(argv)
    repeats, min_time = schedule(args)
    rows, width, n = (200, 16, 2_000) if args.quick else (1_000, 64, 10_000)
    knots, m, sets = (200, 2_000, 20) if args.quick else (1_000, 10_000, 100)
    print(f"Python {platform.python_version()}, single-threaded, float64")
    peer_table("embedding", f"sum(tanh(E[idx]) * w), E {rows} x {width}, {n} indices, "
               "gradient in E", embedding_makers(*embedding_data(rows, width, n)),
               repeats, min_time, tolerance=1e-9)
    xp, fp, x = interp_data(sets, knots, m)
    peer_table("interp", f"interp(x, xp, fp), {knots} sample points, {m} queries, "
               "gradient in fp and x", interp_makers(xp[0], fp[0], x), repeats, min_time,
               tolerance=1e-9)
    peer_table("interp-vmap", f"vmap over {sets} sets of {knots} sample points, {m} "
               "queries, gradient in xp and fp", batched_interp_makers(xp, fp, x),
               repeats, min_time, tolerance=1e-9)
    return 0


if __name__ == "__main__":
    sys.exit(main())
