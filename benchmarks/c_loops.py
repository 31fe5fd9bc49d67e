"""Array gradients compiled to fused C loops (``wg.compile(..., backend="c")``) against
wengert's NumPy code, eager wengert, JAX jit, PyTorch and a C loop fused by hand.

    python benchmarks/c_loops.py                      # 7 repeats: n = 1e3, 1e5, 1e6; 512 x 512
    python benchmarks/c_loops.py --only mlp           # one problem (rosen, heat, libm, mlp, cnn)
    WENGERT_C_TARGET=x86-64 python benchmarks/c_loops.py   # the loops without AVX2, AVX-512
    python benchmarks/c_loops.py --targets            # the loops at each x86-64 level, paired
    python benchmarks/c_loops.py --quick              # 3 short repeats, smaller sizes
    python benchmarks/c_loops.py --keep-memory        # glibc keeps freed memory: no page faults
    python benchmarks/c_loops.py --json results.json  # also write JSON

Five problems, single-threaded, float64, the gradient only:

* **rosen**: ``sum(100*(x[1:] - x[:-1]**2)**2 + (1 - x[:-1])**2)``, elementwise work on
  shifted slices whose reverse sweep adds two scatters of the same array;
* **heat**: ``sum((4 u[1:-1,1:-1] - u[2:,1:-1] - u[:-2,1:-1] - u[1:-1,2:] -
  u[1:-1,:-2])**2)``, the squared residual of a 5-point Laplacian on a square grid;
* **libm**: ``sum(tanh(x) * log(1 + exp(x)))``, 1e6 elements, whose gradient calls exp,
  log and tanh per element (loops call glibc's libmvec, in vectors as wide as the loops');
* **mlp**: benchmarks/arrays.py's 784-256-256-10 tanh MLP, batch 128, mean softmax
  cross-entropy: matrix products (BLAS's dgemm from the C), tanh and a softmax over rows.
* **cnn**: benchmarks/arrays.py's CNN (64 one-channel 8x8 images, a 3x3 convolution to 8
  channels with padding 1 and bias, ReLU, 2x2 max-pool, dense to 10, cross-entropy), and
  **cnn-large**, the same layers on 32 images of 16 channels 16x16, convolved to 32
  channels: convolutions (im2col and dgemm per image), pooling and its gradient.

Rows: ``wengert`` is ``wg.compile(wg.grad(f), x, backend="c")`` (C loops, the reference
of the check); ``wg-numpy`` the same compiled with ``backend="numpy"`` (one NumPy call per
operation); ``wg-eager`` ``wg.grad(f)`` itself; ``jax-jit`` ``jax.jit(jax.grad(f))`` (x64,
``block_until_ready``); ``torch`` ``torch.autograd.grad`` on float64 tensors; ``c-hand``
(rosen) the gradient written as one C loop by hand, compiled with the same flags.  Every
row allocates its result at each call.  For the MLP, ``wg-python`` is ``backend="python"``
(NumPy calls, what the docs advised for products before) and ``numpy-hand`` arrays.py's
gradient written by hand in NumPy; its JAX and PyTorch rows are arrays.py's, and so are
the CNNs' (``numpy-hand`` their im2col gradient by hand).

With ``--targets`` the rows are the C loops alone, compiled for each x86-64 level the
machine runs (`wengert.codegen.cloops.LEVELS`, and the baseline's SSE2), the widest as
the ``wengert`` row: one process, repeats interleaved, so a change of load cancels out
of the ratios (the MLP, whose time is BLAS's, is left out).

Every gradient is checked against wengert's before timing (timing.peer_table), and timed as
timing.py does: warm-up, interleaved repeats, medians, ratios paired per repeat.
"""
import os
import platform
import sys

import single_thread  # noqa: F401  (pins the thread pools: before numpy, torch, jax)
import numpy as np

from timing import keep_memory, parser, peer_table, schedule, write_report

HAND_ROSEN = """\
void rosen_grad(const double *restrict x, double *restrict g, long n)
{
    g[0] = -400.0 * x[0] * (x[1] - x[0] * x[0]) - 2.0 * (1.0 - x[0]);
    for (long i = 1; i < n - 1; ++i) {
        const double a = x[i], p = x[i - 1];
        g[i] = 200.0 * (a - p * p) - 400.0 * a * (x[i + 1] - a * a) - 2.0 * (1.0 - a);
    }
    g[n - 1] = 200.0 * (x[n - 1] - x[n - 2] * x[n - 2]);
}
"""


def rosen(np_):
    return lambda x: np_.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def heat(np_):
    return lambda u: np_.sum((4 * u[1:-1, 1:-1] - u[2:, 1:-1] - u[:-2, 1:-1]
                              - u[1:-1, 2:] - u[1:-1, :-2]) ** 2)


def libm(np_):
    return lambda x: np_.sum(np_.tanh(x) * np_.log(1 + np_.exp(x)))


def makers(problem, x):
    def wengert(backend=None):
        import wengert as wg
        import wengert.numpy as wnp
        grad = wg.grad(problem(wnp))
        if backend is not None:
            grad = wg.compile(grad, x, backend=backend)
        return wg.__version__, lambda: grad(x)

    def jax_jit():
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        grad = jax.jit(jax.grad(problem(jnp)))
        return jax.__version__, lambda: np.asarray(jax.block_until_ready(grad(x)))

    def torch_():
        import torch
        torch.set_num_threads(1)
        f = problem(torch)

        def grad():
            t = torch.tensor(x, requires_grad=True)
            return torch.autograd.grad(f(t), t)[0].numpy()
        return torch.__version__, grad

    def hand():
        import ctypes
        from wengert.codegen import c, cloops
        fn = c.library(HAND_ROSEN, cloops.flags()).rosen_grad
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long]
        ref, buf = ctypes.byref, ctypes.c_char.from_buffer

        def grad():
            g = np.empty_like(x)
            fn(ref(buf(x)), ref(buf(g)), len(x))
            return g
        return "gcc", grad, "one loop written by hand"

    rows = {"wengert": lambda: wengert("c"), "wg-numpy": lambda: wengert("numpy"),
            "wg-eager": wengert, "jax-jit": jax_jit, "torch": torch_}
    if problem is rosen:
        rows["c-hand"] = hand
    return rows


def target_makers(problem, x):
    """--targets: ``wg.compile(wg.grad(f), x, backend="c")`` at this machine's target (the
    "wengert" row) and at each other x86-64 level, compiled with WENGERT_C_TARGET naming
    it (skipped where the machine does not run it)."""
    from timing import Skip
    from wengert.codegen import cloops
    widest = cloops.target()

    def compiled(level):
        def make():
            import wengert as wg
            import wengert.numpy as wnp
            before = os.environ.get(cloops.TARGET_VARIABLE)
            os.environ[cloops.TARGET_VARIABLE] = level
            try:
                if cloops.target() != level:
                    raise Skip(f"this machine does not run {level}")
                grad = wg.compile(wg.grad(problem(wnp)), x, backend="c")
            finally:
                os.environ.pop(cloops.TARGET_VARIABLE)
                if before is not None:
                    os.environ[cloops.TARGET_VARIABLE] = before
            return level, lambda: grad(x)
        return make
    levels = [level for level in [*cloops.LEVELS, cloops.BASELINE] if level != widest]
    return {"wengert": compiled(widest), **{level: compiled(level) for level in levels}}


def network_makers(work, data, other):
    """arrays.py's MLP (`work` "mlp") or CNN ("cnn") gradient on `data` (parameters a list
    of arrays, images, int64 labels): rows C loops, ``backend=other``, eager, the peers
    arrays.py times, and its gradient by hand."""
    import arrays
    params, x, y = data

    def wengert(backend=None):
        import wengert as wg
        import wengert.nn as nn
        import wengert.numpy as wnp

        def loss(params, x, y):
            if work == "mlp":
                return nn.cross_entropy(arrays.mlp_logits(params, x, wnp.tanh), y)
            k, kb, w, b = params
            h = nn.max_pool2d(nn.relu(nn.conv2d(x, k, kb, padding=1)), 2)
            return nn.cross_entropy(wnp.reshape(h, (h.shape[0], -1)) @ w + b, y)
        grad = wg.grad(loss)
        if backend is not None:
            grad = wg.compile(grad, params, x, y, backend=backend)
        return wg.__version__, lambda: grad(params, x, y)

    def peer(make):
        def made():
            version, grad, to_numpy = make(work, data)
            return version, lambda: to_numpy(grad())
        return made

    hand = {"mlp": arrays.mlp_grad_numpy, "cnn": arrays.cnn_grad_numpy}[work]
    return {"wengert": lambda: wengert("c"), f"wg-{other}": lambda: wengert(other),
            "wg-eager": wengert, "jax-jit": peer(arrays.make_jax),
            "torch": peer(arrays.make_torch),
            "numpy-hand": lambda: ("numpy " + np.__version__, lambda: hand(params, x, y))}


def cnn_data(images, channels, side, kernels, seed=1):
    """Parameters, images and labels of arrays.py's CNN with these sizes (3x3 kernels,
    2x2 pooling, 10 classes)."""
    rng = np.random.default_rng(seed)
    pooled = kernels * (side // 2) ** 2
    params = [rng.normal(scale=(2 / (9 * channels)) ** 0.5, size=(kernels, channels, 3, 3)),
              rng.normal(scale=0.1, size=kernels),
              rng.normal(scale=pooled ** -0.5, size=(pooled, 10)),
              rng.normal(scale=0.1, size=10)]
    x = rng.normal(size=(images, channels, side, side))
    return params, x, rng.integers(0, 10, size=images)


def main(argv=None):
    ap = parser(__doc__, "n = 1e3 and 1e5, a 128 x 128 grid, 3 short repeats")
    ap.add_argument("--keep-memory", action="store_true",
                    help="keep glibc from returning freed memory (no page faults)")
    ap.add_argument("--only", choices=("rosen", "heat", "libm", "mlp", "cnn"),
                    help="one problem")
    ap.add_argument("--targets", action="store_true",
                    help="the C loops alone, at each x86-64 level this machine runs")
    args = ap.parse_args(argv)
    rows = target_makers if args.targets else makers
    repeats, min_time = schedule(args)
    kept = keep_memory() if args.keep_memory else False
    from wengert.codegen import cloops
    print(f"Python {platform.python_version()}, single-threaded, float64, C loops for "
          f"{cloops.target()}" + (", glibc keeps freed memory" if kept else ""))
    rng = np.random.default_rng(0)
    report = {}
    sizes = (1_000, 100_000) if args.quick else (1_000, 100_000, 1_000_000)
    for n in sizes if args.only in (None, "rosen") else ():
        x = rng.uniform(-1, 1, size=n)
        report[f"rosen-{n}"] = peer_table(
            f"rosen-{n}", f"gradient of the Rosenbrock function, n = {n:,}",
            rows(rosen, x), repeats, min_time, tolerance=1e-12)
    side = 128 if args.quick else 512
    if args.only in (None, "heat"):
        u = rng.normal(size=(side, side))
        report[f"heat-{side}"] = peer_table(
            f"heat-{side}", "gradient of a squared 5-point Laplacian residual, "
            f"{side} x {side}", rows(heat, u), repeats, min_time, tolerance=1e-12)
    if args.only in (None, "libm"):
        n = 100_000 if args.quick else 1_000_000
        x = rng.normal(scale=3.0, size=n)
        report[f"libm-{n}"] = peer_table(
            f"libm-{n}", f"gradient of sum(tanh(x) * log(1 + exp(x))), n = {n:,}",
            rows(libm, x), repeats, min_time, tolerance=1e-12)
    import arrays                       # (this directory's)
    if args.only in (None, "mlp") and not args.targets:
        report["mlp"] = peer_table(
            "mlp", "gradient of a 784-256-256-10 tanh MLP's cross-entropy, batch 128",
            network_makers("mlp", arrays.mlp_data(), "python"), repeats, min_time,
            tolerance=1e-10)
    if args.only in (None, "cnn") and not args.targets:
        report["cnn"] = peer_table(
            "cnn", "gradient of arrays.py's CNN: 64 images 1x8x8, 3x3 conv to 8 channels, "
            "ReLU, 2x2 max-pool, dense to 10",
            network_makers("cnn", arrays.cnn_data(), "numpy"), repeats, min_time,
            tolerance=1e-10)
        report["cnn-large"] = peer_table(
            "cnn-large", "the same CNN on 32 images 16x16x16, 3x3 conv to 32 channels",
            network_makers("cnn", cnn_data(32, 16, 16, 32), "numpy"), repeats, min_time,
            tolerance=1e-10)
    if args.json:
        write_report(args.json, "c_loops", args.quick, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
