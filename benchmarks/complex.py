"""Complex values: the gradient of a spectral least-squares loss, against the peers.

    python benchmarks/complex.py            # 9 repeats
    python benchmarks/complex.py --quick    # 3 short repeats

The loss is that of docs/complex.md's smoothing example at n = 4096: a real signal x,
its FFT, and  Σ (x - y)² + λ/n Σ f² |fft(x)|²,  so the gradient goes through complex
intermediate values (fft, abs) back to a real argument.  Timed: wengert eager, wengert
compiled (`wg.compile(wg.grad(loss))`), autograd, PyTorch eager and JAX jit, all
single-threaded; each peer's gradient is checked against wengert's first.  Ratios are
paired within each repeat (see timing.py).
"""
import argparse
import sys

import single_thread  # noqa: F401  (pins the thread pools: before numpy)
import numpy as np

from timing import run_table

N, LAM = 4096, 4.0


def data():
    rng = np.random.default_rng(0)
    t = np.arange(N)
    y = np.sin(2 * np.pi * 5 * t / N) + 0.3 * rng.normal(size=N)
    return rng.normal(size=N), y, np.fft.fftfreq(N)


def make_wengert(x, y, f, compiled=False):
    import wengert as wg
    import wengert.numpy as wnp

    def loss(x):
        return wnp.sum((x - y) ** 2) + LAM / N * wnp.sum(f ** 2 * wnp.abs(wnp.fft.fft(x)) ** 2)
    g = wg.compile(wg.grad(loss)) if compiled else wg.grad(loss)
    from importlib.metadata import version
    return version("wengert"), lambda: g(x)


def make_autograd(x, y, f):
    import autograd
    import autograd.numpy as anp

    def loss(x):
        return anp.sum((x - y) ** 2) + LAM / N * anp.sum(f ** 2 * anp.abs(anp.fft.fft(x)) ** 2)
    g = autograd.grad(loss)
    from importlib.metadata import version
    return version("autograd"), lambda: g(x)


def make_torch(x, y, f):
    import torch
    torch.set_num_threads(1)
    yt, ft = torch.from_numpy(y), torch.from_numpy(f)

    def grad():
        xt = torch.from_numpy(x).requires_grad_(True)
        loss = torch.sum((xt - yt) ** 2) + LAM / N * torch.sum(
            ft ** 2 * torch.abs(torch.fft.fft(xt)) ** 2)
        loss.backward()
        return xt.grad.numpy()
    return torch.__version__, grad


def make_jax(x, y, f):
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    def loss(x):
        return jnp.sum((x - y) ** 2) + LAM / N * jnp.sum(f ** 2 * jnp.abs(jnp.fft.fft(x)) ** 2)
    g = jax.jit(jax.grad(loss))
    xj = jnp.asarray(x)
    return jax.__version__, lambda: np.asarray(jax.block_until_ready(g(xj)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 short repeats")
    args = ap.parse_args(argv)
    repeats, min_time = (3, 0.05) if args.quick else (9, 0.2)
    x, y, f = data()
    makers = {"wengert": make_wengert,
              "wengert-jit": lambda *a: make_wengert(*a, compiled=True),
              "autograd": make_autograd, "torch": make_torch, "jax-jit": make_jax}
    reference = run_table({name: (lambda make=make: make(x, y, f))
                           for name, make in makers.items()},
                          f"spectral loss, n = {N}, float64 in, complex128 inside", "wengert",
                          repeats, min_time, "ms/grad")
    closed = 2 * (x - y) + 2 * LAM * np.fft.ifft(f ** 2 * np.fft.fft(x)).real  # (by hand)
    if not np.allclose(reference, closed, rtol=1e-9, atol=1e-9):
        print("WARNING: wengert's gradient differs from the closed form")
    return 0


if __name__ == "__main__":
    sys.exit(main())
