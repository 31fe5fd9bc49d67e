"""Per-example gradients: wg.vmap(wg.grad(loss)) against a loop and against the peers.

    python benchmarks/vmap.py            # 9 repeats
    python benchmarks/vmap.py --quick    # 3 short repeats

The loss is that of one example of a tanh MLP 64-128-10 with softmax cross-entropy (the
8x8 digits' sizes), and the batch holds 128 examples: every implementation returns the
128 gradients of all four parameter arrays.  Timed, single-threaded:

* wengert: ``wg.vmap(wg.grad(loss), in_axes=(None, 0, 0))``, traced on every call;
* wengert-jit: the same under ``wg.compile``, traced once;
* wengert-loop: a Python loop of ``wg.grad(loss)``, one example at a time;
* autograd-loop: autograd has no vmap, so a loop of ``autograd.grad``;
* torch: ``torch.func.vmap(torch.func.grad(loss))``, eager;
* jax-jit: ``jax.jit(jax.vmap(jax.grad(loss)))``.

Each peer's gradients are checked against wengert's first, and wengert's against a loop of
``wg.grad``.  Ratios are paired within each repeat (see timing.py).

A second table does the same for the small CNN of arrays.py (a 3x3 convolution with 8
channels, relu, 2x2 max-pool, dense to 10) on 64 images of 1x8x8: wengert's vmap and loop,
torch.func and JAX jit.

A third table times the dense Jacobian of a two-layer tanh map R^100 -> R^100,
``tanh(W2 tanh(W1 x))``, by reverse and forward mode: wengert's `jacrev`/`jacfwd`, which
batch their sweeps with vmap, against the same with one sweep per direction
(``BATCHED_SWEEPS_FROM`` raised), autograd's ``jacobian`` (a loop of reverse sweeps),
``torch.func.jacrev``/``jacfwd`` and JAX's jit-compiled ``jacrev``/``jacfwd``.
"""
import argparse
import sys
from importlib.metadata import version

import single_thread  # noqa: F401  (pins the thread pools: before numpy)
import numpy as np

from timing import run_table

SIZES, BATCH = (64, 128, 10), 128


def data():
    rng = np.random.default_rng(0)
    (i, h, o) = SIZES
    params = (rng.normal(size=(i, h)) / np.sqrt(i), np.zeros(h),
              rng.normal(size=(h, o)) / np.sqrt(h), np.zeros(o))
    return params, rng.normal(size=(BATCH, i)), rng.integers(0, o, size=BATCH)


def make_wengert(params, x, y, how="vmap"):
    import wengert as wg
    import wengert.nn as nn
    import wengert.numpy as wnp

    def loss(p, x, y):
        w1, b1, w2, b2 = p
        return nn.cross_entropy((wnp.tanh(x @ w1 + b1) @ w2 + b2)[None], y[None])
    if how == "loop":
        g = wg.grad(loss)

        def grads():
            rows = [g(params, x[k], y[k]) for k in range(len(x))]
            return [np.stack(r) for r in zip(*rows)]
        return version("wengert"), grads
    g = wg.vmap(wg.grad(loss), in_axes=(None, 0, 0))
    if how == "jit":
        g = wg.compile(g, params, x, y)
    return version("wengert"), lambda: list(g(params, x, y))


def make_autograd(params, x, y):
    import autograd
    import autograd.numpy as anp
    from autograd.scipy.special import logsumexp

    def loss(p, x, y):
        w1, b1, w2, b2 = p
        z = anp.tanh(x @ w1 + b1) @ w2 + b2
        return logsumexp(z) - z[y]
    g = autograd.grad(loss)

    def grads():
        rows = [g(params, x[k], y[k]) for k in range(len(x))]
        return [np.stack(r) for r in zip(*rows)]
    return version("autograd"), grads


def make_torch(params, x, y):
    import torch
    from torch.func import grad, vmap
    torch.set_num_threads(1)
    pt = tuple(torch.from_numpy(p) for p in params)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)

    def loss(p, x, y):
        w1, b1, w2, b2 = p
        z = torch.tanh(x @ w1 + b1) @ w2 + b2
        return torch.nn.functional.cross_entropy(z[None], y[None])
    g = vmap(grad(loss), in_dims=(None, 0, 0))
    return torch.__version__, lambda: [a.numpy() for a in g(pt, xt, yt)]


def make_jax(params, x, y):
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    def loss(p, x, y):
        w1, b1, w2, b2 = p
        z = jnp.tanh(x @ w1 + b1) @ w2 + b2
        return jax.nn.logsumexp(z) - z[y]
    g = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))
    pj = tuple(jnp.asarray(p) for p in params)
    xj, yj = jnp.asarray(x), jnp.asarray(y)
    return jax.__version__, lambda: [np.asarray(a) for a in jax.block_until_ready(g(pj, xj, yj))]


def cnn_makers():
    """Per-example gradients of the small CNN of arrays.py (3x3 conv with 8 channels,
    relu, 2x2 max-pool, dense to 10) on 64 one-channel 8x8 images: each example's loss
    sees its image as a batch of one."""
    rng = np.random.default_rng(2)
    params = (rng.normal(size=(8, 1, 3, 3)) * 0.3, np.zeros(8),
              rng.normal(size=(128, 10)) * 0.1, np.zeros(10))
    x, y = rng.normal(size=(64, 1, 8, 8)), rng.integers(0, 10, size=64)

    def make_wengert(loop=False):
        import wengert as wg
        import wengert.nn as nn
        import wengert.numpy as wnp

        def loss(p, x, y):
            k, kb, w, b = p
            h = nn.max_pool2d(nn.relu(nn.conv2d(x[None], k, kb, padding=1)), 2)
            return nn.cross_entropy(wnp.reshape(h, (1, -1)) @ w + b, y[None])
        if loop:
            g = wg.grad(loss)
            return version("wengert"), lambda: [np.stack(r) for r in zip(
                *[g(params, x[k], y[k]) for k in range(len(x))])]
        g = wg.vmap(wg.grad(loss), in_axes=(None, 0, 0))
        return version("wengert"), lambda: list(g(params, x, y))

    def make_torch():
        import torch
        import torch.nn.functional as F
        from torch.func import grad, vmap
        torch.set_num_threads(1)
        pt = tuple(torch.from_numpy(p) for p in params)
        xt, yt = torch.from_numpy(x), torch.from_numpy(y)

        def loss(p, x, y):
            k, kb, w, b = p
            h = F.max_pool2d(torch.relu(F.conv2d(x[None], k, kb, padding=1)), 2)
            return F.cross_entropy(h.reshape(1, -1) @ w + b, y[None])
        g = vmap(grad(loss), in_dims=(None, 0, 0))
        return torch.__version__, lambda: [a.numpy() for a in g(pt, xt, yt)]

    def make_jax():
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp

        def loss(p, x, y):
            k, kb, w, b = p
            z = jax.lax.conv_general_dilated(x[None], k, (1, 1), ((1, 1), (1, 1))) \
                + kb[None, :, None, None]
            h = jax.lax.reduce_window(jnp.maximum(z, 0.0), -jnp.inf, jax.lax.max,
                                      (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
            logits = h.reshape(-1) @ w + b
            return jax.nn.logsumexp(logits) - logits[y]
        g = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))
        pj = tuple(jnp.asarray(p) for p in params)
        xj, yj = jnp.asarray(x), jnp.asarray(y)
        return jax.__version__, lambda: [np.asarray(a) for a in
                                         jax.block_until_ready(g(pj, xj, yj))]

    return {"wengert": make_wengert, "wengert-loop": lambda: make_wengert(loop=True),
            "torch": make_torch, "jax-jit": make_jax}


JAC_N = 100


def jacobian_makers():
    rng = np.random.default_rng(1)
    w1, w2 = (rng.normal(size=(JAC_N, JAC_N)) / np.sqrt(JAC_N) for _ in range(2))
    x = rng.normal(size=JAC_N)

    def make_wengert(mode, batched=True):
        import wengert as wg
        import wengert.api as api
        import wengert.numpy as wnp
        jac = (wg.jacrev if mode == "rev" else wg.jacfwd)(
            lambda x: wnp.tanh(w2 @ wnp.tanh(w1 @ x)))
        if batched:
            return version("wengert"), lambda: jac(x)

        def one_sweep_each():
            saved, api.BATCHED_SWEEPS_FROM = api.BATCHED_SWEEPS_FROM, 1 << 60
            try:
                return jac(x)
            finally:
                api.BATCHED_SWEEPS_FROM = saved
        return version("wengert"), one_sweep_each

    def make_autograd(mode):
        import autograd
        import autograd.numpy as anp
        jac = autograd.jacobian(lambda x: anp.tanh(w2 @ anp.tanh(w1 @ x)))
        return version("autograd"), lambda: jac(x)

    def make_torch(mode):
        import torch
        from torch.func import jacfwd, jacrev
        torch.set_num_threads(1)
        t1, t2, xt = (torch.from_numpy(a) for a in (w1, w2, x))
        jac = (jacrev if mode == "rev" else jacfwd)(lambda x: torch.tanh(t2 @ torch.tanh(t1 @ x)))
        return torch.__version__, lambda: jac(xt).numpy()

    def make_jax(mode):
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        j1, j2, xj = (jnp.asarray(a) for a in (w1, w2, x))
        jac = jax.jit((jax.jacrev if mode == "rev" else jax.jacfwd)(
            lambda x: jnp.tanh(j2 @ jnp.tanh(j1 @ x))))
        return jax.__version__, lambda: np.asarray(jax.block_until_ready(jac(xj)))

    makers = {}
    for mode in ("rev", "fwd"):
        makers[f"wengert-{mode}"] = lambda mode=mode: make_wengert(mode)
        makers[f"wengert-{mode}-loop"] = lambda mode=mode: make_wengert(mode, batched=False)
        if mode == "rev":
            makers["autograd"] = lambda mode=mode: make_autograd(mode)
        makers[f"torch-{mode}"] = lambda mode=mode: make_torch(mode)
        makers[f"jax-jit-{mode}"] = lambda mode=mode: make_jax(mode)
    return makers


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 short repeats")
    args = ap.parse_args(argv)
    repeats, min_time = (3, 0.05) if args.quick else (9, 0.2)
    params, x, y = data()
    makers = {"wengert": make_wengert,
              "wengert-jit": lambda *a: make_wengert(*a, how="jit"),
              "wengert-loop": lambda *a: make_wengert(*a, how="loop"),
              "autograd-loop": make_autograd, "torch": make_torch, "jax-jit": make_jax}
    run_table({name: (lambda make=make: make(params, x, y)) for name, make in makers.items()},
              f"per-example gradients, tanh MLP {'-'.join(map(str, SIZES))}, {BATCH} "
              "examples, float64", "wengert", repeats, min_time, "ms/batch")
    run_table(cnn_makers(), "per-example gradients, CNN conv3x3x8+relu+maxpool2+dense10, 64 "
              "examples of 1x8x8, float64", "wengert", repeats, min_time, "ms/batch")
    run_table(jacobian_makers(), f"dense Jacobian of tanh(W2 tanh(W1 x)), {JAC_N} -> {JAC_N}",
              "wengert-rev", repeats, min_time, "ms/jac")
    return 0


if __name__ == "__main__":
    sys.exit(main())
