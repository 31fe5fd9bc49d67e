"""Gradients through loops: wg.scan against a Python loop and against the peers; and a
while loop compiled, to Python and to C, against JAX.

    python benchmarks/loops.py            # 9 repeats
    python benchmarks/loops.py --quick    # 3 short repeats

Two workloads, float64, single-threaded, each the full gradient call (forward and
backward):

* oscillator: the energy after 10,000 explicit Euler steps of x'' = -k x, differentiated
  in k.  The body is four scalar operations, so the time is the cost of a step.
* rnn: h <- tanh(W h + U x_t) over 100 steps, hidden size 64, inputs of size 16, a batch
  of 32; the loss is the sum of squares of every h, differentiated in W and U.  The
  body is two matrix products, so the time is mostly BLAS.

Rows:

* wengert-scan: ``wg.grad`` of the loss written with ``wg.scan`` (eager: the body is
  traced on each call and its compiled code found in a cache);
* wengert-scan-jit: ``wg.compile(wg.grad(loss))``, compiled before timing;
* wengert-unroll8 (the oscillator only): the eager scan with ``unroll=8``;
* wengert-scan-c: the same with ``backend="c"``, each loop a C loop: the oscillator's
  body scalarised, the RNN's in loop mode (a function of two BLAS products called per
  step, `wengert.codegen.cloops`);
* wengert-loop: ``wg.grad`` of the same loss written as a Python loop (every step
  recorded on the tape);
* autograd-loop, torch-loop: the Python loop under autograd and PyTorch eager;
* jax-scan-jit: ``jax.jit(jax.grad(loss))`` with ``jax.lax.scan``.

Every gradient is checked against wengert-scan's first.  Before the tables, the time to
compile each wengert variant once, and to make its first call, is printed: compiling
the Python loop unrolls it.

Then a while loop: Newton's square root of 1e6 with ``lax.while_loop`` (x <- (x + a/x)/2
from x = a until x² is a to 1e-12: 14 steps), its value and its ``jacfwd`` (a while
loop carrying the tangent), each call in microseconds:

* wengert-eager: the loop on values (while_loop is a Python loop there);
* wengert-jit: ``wg.compile(f)``, the loop on Python floats (`Loop._on_floats`);
* wengert-numpy: ``wg.compile(f, backend="numpy")`` with the loop's step as NumPy code
  (its float form switched off for the call), as a step too large for floats runs;
* wengert-c: ``wg.compile(f, backend="c")``, the loop a C ``while``;
* jax-jit: ``jax.jit(f)`` of the same loop with ``jax.lax.while_loop``.

Last a counted loop whose number of steps is an argument: exp(0.5) by 1,000 terms of its
series with ``lax.fori_loop(0, n, ...)``, n a traced int64 (a while loop counting i, the
term divided by i + 1 at step i), its value and its ``jacfwd`` in x, with the same rows
but wengert-numpy (the counter, an int64 carry, keeps the step off Python floats: the
wengert-jit row is the step's NumPy code already).

And a loop that reads an array at its counter: c <- 0.9 c + sin(x[i]) over an x of 1,000
elements (``fori_loop`` with static bounds: a scan), its value and its gradient in x, each
call in microseconds: wengert-jit and wengert-c (the gather a read of x at the checked
index, its transpose an addition into x's cotangent at it), and jax-jit.

Last the gradient, in the initial condition, of 100 explicit steps of the heat equation
on a 128x128 grid in ``fori_loop`` (a stencil, its edges kept at zero by ``pad``), in ms:
wengert-jit (``wg.compile``: NumPy code per step), wengert-c (loop mode: each step a call
of the step's fused loops) and jax-jit.
"""
import argparse
import sys
import time
from importlib.metadata import version

import single_thread  # noqa: F401  (pins the thread pools: before numpy)
import numpy as np

from timing import run_table

STEPS, DT, K = 10_000, 1e-3, 2.0
T, HIDDEN, INPUTS, BATCH = 100, 64, 16, 32


# --- the oscillator ----------------------------------------------------------------------
def osc_losses(steps):
    """The oscillator's energy as a function of k, written with wg.scan and as a loop."""
    import wengert as wg

    def scan_loss(k, unroll=1):
        def step(s, _):
            x, v = s
            return (x + DT * v, v - DT * k * x), None
        (x, v), _ = wg.scan(step, (1.0, 0.0), length=steps, unroll=unroll)
        return 0.5 * v * v + 0.5 * k * x * x
    return scan_loss, osc_loop_loss(steps)


def osc_loop_loss(steps):
    """The oscillator's energy as a Python loop of plain arithmetic, which wengert and
    autograd both trace."""
    def loop_loss(k):
        x, v = 1.0, 0.0
        for _ in range(steps):
            x, v = x + DT * v, v - DT * k * x
        return 0.5 * v * v + 0.5 * k * x * x
    return loop_loss


def osc_makers(steps):
    def wengert(how):
        import wengert as wg
        scan_loss, loop_loss = osc_losses(steps)
        if how == "loop":
            g = wg.grad(loop_loss)
        elif how == "c":
            from wengert.codegen.c import CompilerNotFound
            try:
                g = wg.compile(wg.grad(scan_loss), K, backend="c")
            except CompilerNotFound as e:       # (skipped, as a peer not installed)
                raise ImportError(str(e)) from None
        elif how == "jit":
            g = wg.compile(wg.grad(scan_loss), K)
        elif how == "unroll":
            g = wg.grad(lambda k: scan_loss(k, unroll=8))
        else:
            g = wg.grad(scan_loss)
        return version("wengert"), lambda: np.array([g(K)])

    def autograd():
        import autograd
        g = autograd.grad(osc_loop_loss(steps))
        return version("autograd"), lambda: np.array([g(K)])

    def torch():
        import torch

        def call():
            k = torch.tensor(K, dtype=torch.float64, requires_grad=True)
            x = torch.tensor(1.0, dtype=torch.float64)
            v = torch.tensor(0.0, dtype=torch.float64)
            for _ in range(steps):
                x, v = x + DT * v, v - DT * k * x
            (g,) = torch.autograd.grad(0.5 * v * v + 0.5 * k * x * x, k)
            return np.array([g.item()])
        return torch.__version__.split("+")[0], call

    def jax():
        import jax
        jax.config.update("jax_enable_x64", True)

        def loss(k):
            def step(s, _):
                x, v = s
                return (x + DT * v, v - DT * k * x), None
            (x, v), _ = jax.lax.scan(step, (1.0, 0.0), length=steps)
            return 0.5 * v * v + 0.5 * k * x * x
        g = jax.jit(jax.grad(loss))
        g(K).block_until_ready()
        return jax.__version__, lambda: np.array([float(g(K).block_until_ready())])

    return {"wengert-scan": lambda: wengert("scan"),
            "wengert-scan-jit": lambda: wengert("jit"),
            "wengert-scan-c": lambda: wengert("c"),
            "wengert-unroll8": lambda: wengert("unroll"),
            "wengert-loop": lambda: wengert("loop"),
            "autograd-loop": autograd, "torch-loop": torch, "jax-scan-jit": jax}


# --- the RNN -------------------------------------------------------------------------------
def rnn_data():
    rng = np.random.default_rng(0)
    W = rng.normal(size=(HIDDEN, HIDDEN)) / np.sqrt(HIDDEN)
    U = rng.normal(size=(HIDDEN, INPUTS)) / np.sqrt(INPUTS)
    xs = rng.normal(size=(T, INPUTS, BATCH))
    return W, U, xs


def rnn_loop_loss(xnp, h0, xs):
    """The RNN's loss of (W, U) as a Python loop in the NumPy namespace `xnp` (wengert's
    or autograd's)."""
    def loss(W, U):
        h, total = h0, 0.0
        for x in xs:
            h = xnp.tanh(W @ h + U @ x)
            total = total + xnp.sum(h * h)
        return total
    return loss


def rnn_makers():
    W, U, xs = rnn_data()
    h0 = np.zeros((HIDDEN, BATCH))

    def wengert(how):
        import wengert as wg
        import wengert.numpy as wnp

        def scan_loss(W, U):
            def step(h, x):
                h = wnp.tanh(W @ h + U @ x)
                return h, wnp.sum(h * h)
            _, ys = wg.scan(step, h0, xs)
            return wnp.sum(ys)

        if how == "loop":
            g = wg.grad(rnn_loop_loss(wnp, h0, xs), argnums=(0, 1))
        elif how == "c":
            from wengert.codegen.c import CompilerNotFound
            try:
                g = wg.compile(wg.grad(scan_loss, argnums=(0, 1)), W, U, backend="c")
            except CompilerNotFound as e:       # (skipped, as a peer not installed)
                raise ImportError(str(e)) from None
        elif how == "jit":
            g = wg.compile(wg.grad(scan_loss, argnums=(0, 1)), W, U)
        else:
            g = wg.grad(scan_loss, argnums=(0, 1))
        return version("wengert"), lambda: list(g(W, U))

    def autograd():
        import autograd
        import autograd.numpy as anp
        g = autograd.grad(rnn_loop_loss(anp, h0, xs), argnum=(0, 1))
        return version("autograd"), lambda: list(g(W, U))

    def torch():
        import torch
        tx = torch.from_numpy(xs)
        th0 = torch.from_numpy(h0)

        def call():
            tW = torch.tensor(W, requires_grad=True)
            tU = torch.tensor(U, requires_grad=True)
            h, total = th0, 0.0
            for x in tx:
                h = torch.tanh(tW @ h + tU @ x)
                total = total + (h * h).sum()
            return [g.numpy() for g in torch.autograd.grad(total, (tW, tU))]
        return torch.__version__.split("+")[0], call

    def jax():
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)

        def loss(W, U):
            def step(h, x):
                h = jnp.tanh(W @ h + U @ x)
                return h, jnp.sum(h * h)
            _, ys = jax.lax.scan(step, h0, xs)
            return jnp.sum(ys)
        g = jax.jit(jax.grad(loss, argnums=(0, 1)))
        jax.block_until_ready(g(W, U))
        return jax.__version__, lambda: [np.asarray(a) for a in
                                         jax.block_until_ready(g(W, U))]

    return {"wengert-scan": lambda: wengert("scan"),
            "wengert-scan-jit": lambda: wengert("jit"),
            "wengert-scan-c": lambda: wengert("c"),
            "wengert-loop": lambda: wengert("loop"),
            "autograd-loop": autograd, "torch-loop": torch, "jax-scan-jit": jax}


# --- Newton's square root: a while loop --------------------------------------------------
NEWTON_A = 1e6


def newton_sqrt(xnp, lax, a):
    """sqrt(a) by Newton's iteration from x = a, in the NumPy namespace `xnp` and the lax
    `lax` (wengert's or JAX's); at most 50 steps."""
    def body(s):
        x, k = s
        return (x + a / x) / 2.0, k + 1
    return lax.while_loop(lambda s: (xnp.abs(s[0] * s[0] - a) > 1e-12 * a) & (s[1] < 50),
                          body, (a, 0))[0]


def newton_makers(derivative):
    """The rows of the while loop's table: its value, or with `derivative` its jacfwd."""
    def wengert(backend):
        import wengert as wg
        import wengert.numpy as wnp
        from wengert import lax
        from wengert.codegen.c import CompilerNotFound
        from wengert.loops import While
        f = lambda a: newton_sqrt(wnp, lax, a)      # noqa: E731
        f = wg.jacfwd(f) if derivative else f
        if backend == "eager":
            return version("wengert"), lambda: np.array([f(NEWTON_A)])
        try:
            g = wg.compile(f, NEWTON_A, backend=backend)
        except CompilerNotFound as e:       # (skipped, as a peer not installed)
            raise ImportError(str(e)) from None
        if backend != "numpy":
            return version("wengert"), lambda: np.array([g(NEWTON_A)])
        # (the loop's float form off for the call: the loop object is shared with the
        # wengert-jit row's, which keeps it)
        loop = next(n.op for n in g.graph.live_nodes() if isinstance(n.op, While))

        def on_numpy():
            kept, loop._floats_run = loop._floats_run, None
            try:
                return np.array([g(NEWTON_A)])
            finally:
                loop._floats_run = kept
        return version("wengert"), on_numpy

    def jax():
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
        f = lambda a: newton_sqrt(jnp, jax.lax, a)      # noqa: E731
        g = jax.jit(jax.jacfwd(f) if derivative else f)
        g(NEWTON_A).block_until_ready()
        return jax.__version__, lambda: np.array([float(g(NEWTON_A).block_until_ready())])

    return {"wengert-eager": lambda: wengert("eager"),
            "wengert-jit": lambda: wengert("python"),
            "wengert-numpy": lambda: wengert("numpy"),
            "wengert-c": lambda: wengert("c"), "jax-jit": jax}


# --- a counted loop with a traced number of steps --------------------------------------
SERIES_X, SERIES_N = 0.5, 1000


def series(lax, x, n):
    """exp(x) by n terms of its series, with `lax` wengert's or JAX's."""
    # (the first carry of x's type: JAX's loop wants the type the body gives it)
    return lax.fori_loop(0, n, lambda i, c: (c[0] + c[1], c[1] * x / (i + 1)),
                         (0.0 * x, 1.0 + 0.0 * x))[0]


def counted_makers(derivative):
    """The rows of the counted loop's table: its value, or with `derivative` its jacfwd."""
    n = np.int64(SERIES_N)

    def wengert(backend):
        import wengert as wg
        from wengert import lax
        from wengert.codegen.c import CompilerNotFound
        f = lambda x, n: series(lax, x, n)      # noqa: E731
        f = wg.jacfwd(f) if derivative else f
        if backend == "eager":
            return version("wengert"), lambda: np.array([f(SERIES_X, SERIES_N)])
        try:
            g = wg.compile(f, SERIES_X, n, backend=backend)
        except CompilerNotFound as e:
            raise ImportError(str(e)) from None
        return version("wengert"), lambda: np.array([g(SERIES_X, n)])

    def jax():
        import jax
        jax.config.update("jax_enable_x64", True)
        f = lambda x, n: series(jax.lax, x, n)      # noqa: E731
        g = jax.jit(jax.jacfwd(f) if derivative else f)
        g(SERIES_X, n).block_until_ready()
        return jax.__version__, lambda: np.array([float(g(SERIES_X, n).block_until_ready())])

    return {"wengert-eager": lambda: wengert("eager"),
            "wengert-jit": lambda: wengert("python"),
            "wengert-c": lambda: wengert("c"), "jax-jit": jax}


# --- a loop that reads an array at its counter -------------------------------------------
GATHER_N = 1000


def gathered(xnp, lax, x):
    """c <- 0.9 c + sin(x[i]) for i over x, with `xnp` and `lax` wengert's or JAX's: a
    loop that reads an array at its counter, JAX's common pattern."""
    return lax.fori_loop(0, x.shape[0], lambda i, c: 0.9 * c + xnp.sin(x[i]), 0.0 * x[0])


def gather_makers(derivative):
    """The rows of the gathering loop's table: its value, or with `derivative` its grad."""
    x = np.random.default_rng(0).normal(size=GATHER_N)

    def wengert(backend):
        import wengert as wg
        import wengert.numpy as wnp
        from wengert import lax
        from wengert.codegen.c import CompilerNotFound
        f = lambda x: gathered(wnp, lax, wnp.asarray(x))      # noqa: E731
        f = wg.grad(f) if derivative else f
        try:
            g = wg.compile(f, x, backend=backend)
        except CompilerNotFound as e:
            raise ImportError(str(e)) from None
        return version("wengert"), lambda: np.atleast_1d(g(x))

    def jax():
        import jax
        jax.config.update("jax_enable_x64", True)
        f = lambda x: gathered(jax.numpy, jax.lax, x)      # noqa: E731
        g = jax.jit(jax.grad(f) if derivative else f)
        g(x).block_until_ready()
        return jax.__version__, lambda: np.atleast_1d(np.asarray(g(x).block_until_ready()))

    return {"wengert-jit": lambda: wengert("python"), "wengert-c": lambda: wengert("c"),
            "jax-jit": jax}


# --- time stepping of the heat equation ---------------------------------------------------
HEAT_N, HEAT_STEPS, HEAT_NU = 128, 100, 0.2


def heat_loss(xnp, lax, u0):
    """The sum of squares of u after HEAT_STEPS explicit steps of the heat equation on a
    HEAT_N x HEAT_N grid, zero on its edges, from u0, with `xnp` and `lax` wengert's or
    JAX's: a PDE's time stepping in ``fori_loop``."""
    def step(i, u):
        lap = u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4.0 * u[1:-1, 1:-1]
        return xnp.pad(u[1:-1, 1:-1] + HEAT_NU * lap, 1)
    u = lax.fori_loop(0, HEAT_STEPS, step, u0)
    return xnp.sum(u * u)


def heat_makers():
    """The rows of the heat equation's table: the gradient in the initial condition."""
    u0 = np.random.default_rng(0).normal(size=(HEAT_N, HEAT_N))

    def wengert(backend):
        import wengert as wg
        import wengert.numpy as wnp
        from wengert import lax
        from wengert.codegen.c import CompilerNotFound
        try:
            g = wg.compile(wg.grad(lambda u: heat_loss(wnp, lax, u)), u0, backend=backend)
        except CompilerNotFound as e:
            raise ImportError(str(e)) from None
        return version("wengert"), lambda: g(u0)

    def jax():
        import jax
        jax.config.update("jax_enable_x64", True)
        g = jax.jit(jax.grad(lambda u: heat_loss(jax.numpy, jax.lax, u)))
        g(u0).block_until_ready()
        return jax.__version__, lambda: np.asarray(g(u0).block_until_ready())

    return {"wengert-jit": lambda: wengert("python"), "wengert-c": lambda: wengert("c"),
            "jax-jit": jax}


def compile_times(steps):
    """Seconds to compile the oscillator's gradient once, as a scan and as a loop."""
    import wengert as wg
    from wengert.codegen.c import CompilerNotFound
    scan_loss, loop_loss = osc_losses(steps)
    for name, loss, backend in (("scan", scan_loss, "python"), ("scan", scan_loss, "c"),
                                ("loop", loop_loss, "python")):
        t = time.perf_counter()
        try:
            g = wg.compile(wg.grad(loss), K, backend=backend)
        except CompilerNotFound:
            continue
        made = time.perf_counter() - t
        g(K)                # (a scan compiles its body's code when it first runs)
        print(f"compile wg.grad of the oscillator's {name} ({steps} steps, backend "
              f"{backend}): {made:.3f} s, with the first call {time.perf_counter() - t:.3f} s")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 short repeats")
    ap.add_argument("--steps", type=int, default=STEPS, help="oscillator steps")
    args = ap.parse_args(argv)
    repeats, min_time = (3, 0.05) if args.quick else (9, 0.2)
    compile_times(args.steps)
    run_table(osc_makers(args.steps), f"gradient of an oscillator's energy after {args.steps} "
              "Euler steps", "wengert-scan", repeats, min_time)
    run_table(rnn_makers(), f"gradient of a tanh RNN, {T} steps, hidden {HIDDEN}, inputs "
              f"{INPUTS}, batch {BATCH}", "wengert-scan", repeats, min_time)
    for derivative in (False, True):
        run_table(newton_makers(derivative), f"{'jacfwd of ' if derivative else ''}Newton's "
                  f"square root of {NEWTON_A:g} by while_loop", "wengert-jit", repeats,
                  min_time, unit="us/call")
    for derivative in (False, True):
        run_table(counted_makers(derivative), f"{'jacfwd of ' if derivative else ''}exp("
                  f"{SERIES_X}) by {SERIES_N} terms, fori_loop to a traced n", "wengert-jit",
                  repeats, min_time, unit="us/call")
    for derivative in (False, True):
        run_table(gather_makers(derivative), f"{'grad of ' if derivative else ''}a loop "
                  f"reading x[i] at its counter, {GATHER_N} steps", "wengert-jit", repeats,
                  min_time, unit="us/call")
    run_table(heat_makers(), f"grad of {HEAT_STEPS} explicit heat steps on {HEAT_N}x{HEAT_N} "
              "in fori_loop, in the initial condition", "wengert-jit", repeats, min_time)
    return 0


if __name__ == "__main__":
    sys.exit(main())
