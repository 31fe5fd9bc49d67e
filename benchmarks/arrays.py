"""Array workloads: MLP and CNN gradients, wengert against autograd, PyTorch, JAX and NumPy.

What is measured: the wall time of one full gradient call, the forward pass plus the
backward pass, of a mean softmax cross-entropy loss with respect to every weight and
bias. Everything is float64. There are two workloads:

  mlp  784-256-256-10 tanh MLP, batch of 128. The time goes into a few large matrix
       products, so it tests whether AD adds anything on top of BLAS.
  cnn  batch of 64 one-channel 8x8 images: 3x3 conv (8 channels, padding 1, bias),
       ReLU, 2x2 max-pool, dense to 10. The arrays are small, so per-primitive overhead
       and the convolution and pooling rules matter.

Implementations:
  wengert     wg.grad of a loss written with wengert.numpy and wengert.nn (eager)
  wengert-jit wg.compile(wg.grad(loss)), compiled once before timing: the same gradient
              traced once, optimised and run as generated NumPy code (the goals are
              about eager wengert; this row shows what compiling adds)
  autograd    autograd.grad with autograd.numpy. Autograd has no conv primitive, so the
              CNN's conv is im2col + matmul and its pool is reshape + max.
  torch       PyTorch eager, torch.autograd.grad, torch.nn.functional for the CNN
  jax-jit     jax.jit(jax.grad(loss)), compiled once before timing; every call is
              followed by block_until_ready
  numpy-hand  the forward pass and a backward pass written by hand in NumPy. This is the
              "AD adds nothing" baseline.
  py-tape     (MLP only) the leanest eager tape of closures in plain Python, specialised
              to this network: the floor for any AD that records in Python.

The peers are optional. One that is not installed is skipped. Before timing, every
gradient is checked against wengert's. Times are the median over repeats of the mean time
per call. Everything runs in one process, single-threaded wherever that can be set.

Run on demand (this is not part of the test suite):

    pip install -e '.[bench]'
    python benchmarks/arrays.py [--quick] [--tiny] [--keep-memory] [--json PATH]
"""

import single_thread  # noqa: F401  (pins the thread pools: before numpy, torch, jax)
from timing import fmt_ratio, keep_memory, paired_ratio, time_interleaved  # (this directory)

import argparse
import json
import math
import platform
import statistics
import sys
from importlib.metadata import version

import numpy
from numpy.lib.stride_tricks import sliding_window_view

SEED = 0
MLP_SIZES = (784, 256, 256, 10)
MLP_BATCH = 128
CNN_BATCH, CNN_SIDE, CNN_CHANNELS, CNN_CLASSES = 64, 8, 8, 10
CNN_POOLED = CNN_CHANNELS * (CNN_SIDE // 2) ** 2  # features into the dense layer: 8*4*4
# Gradients must agree to this fraction of the largest entry of each parameter's
# gradient. The check is normwise, not elementwise: BLAS calls that sum in a different
# order legitimately differ by ~1e-16 relative, and an elementwise test would blow that
# up on entries near zero.
RTOL = 1e-10

def describe(work):
    if work == "mlp":
        return f"MLP {'-'.join(map(str, MLP_SIZES))} tanh, batch {MLP_BATCH}"
    return (f"CNN conv3x3x{CNN_CHANNELS}+relu+maxpool2+dense{CNN_CLASSES}, "
            f"batch {CNN_BATCH} of 1x{CNN_SIDE}x{CNN_SIDE}")


WORKLOADS = ("mlp", "cnn")
# Goals are (label, implementation compared against, largest allowed time ratio,
# strict). "Faster than" is strict (< 1). "Within" allows equality (<= limit).
GOALS = {
    "mlp": [("wengert within 1.05x numpy-hand", "numpy-hand", 1.05, False),
            ("wengert faster than autograd", "autograd", 1.0, True)],
    "cnn": [("wengert faster than autograd", "autograd", 1.0, True),
            ("wengert within 1.5x torch", "torch", 1.5, False)],
}


# ---- data: NumPy arrays from a fixed seed, shared by every implementation -------------------
# The parameters are a flat list [weight, bias, weight, bias, ...] in the same order
# everywhere, so the gradients can be compared entry by entry.

def mlp_data():
    rng = numpy.random.default_rng(SEED)
    params = []
    for fan_in, fan_out in zip(MLP_SIZES[:-1], MLP_SIZES[1:]):
        # 1/sqrt(fan_in) scale keeps tanh out of saturation, so the gradients are not ~0.
        params += [rng.normal(scale=fan_in ** -0.5, size=(fan_in, fan_out)),
                   rng.normal(scale=0.1, size=fan_out)]
    x = rng.normal(size=(MLP_BATCH, MLP_SIZES[0]))
    y = rng.integers(0, MLP_SIZES[-1], size=MLP_BATCH)
    return params, x, y


def cnn_data():
    rng = numpy.random.default_rng(SEED + 1)
    params = [rng.normal(scale=(2 / 9) ** 0.5, size=(CNN_CHANNELS, 1, 3, 3)),   # OIHW
              rng.normal(scale=0.1, size=CNN_CHANNELS),
              rng.normal(scale=CNN_POOLED ** -0.5, size=(CNN_POOLED, CNN_CLASSES)),
              rng.normal(scale=0.1, size=CNN_CLASSES)]
    x = rng.normal(size=(CNN_BATCH, 1, CNN_SIDE, CNN_SIDE))                   # NCHW
    y = rng.integers(0, CNN_CLASSES, size=CNN_BATCH)
    return params, x, y


DATA = {"mlp": mlp_data, "cnn": cnn_data}


def mlp_logits(params, x, tanh):
    """The MLP's forward pass. It uses only @, + and tanh, so it is written once and every
    framework runs it with its own tanh."""
    h = x
    for i in range(0, len(params), 2):
        h = h @ params[i] + params[i + 1]
        if i + 2 < len(params):          # no tanh on the output layer (logits)
            h = tanh(h)
    return h


# ---- implementations ----------------------------------------------------------------------
# Each make_* takes a workload name and its data. It returns (version, grad, to_numpy):
# grad is the zero-argument call that is timed and returns the gradient in the framework's
# own types; to_numpy turns that into a list of NumPy arrays for the agreement check. The
# imports are inside each function, so a missing peer only costs its own row. Inputs are
# converted to each framework's array type once, outside the timed call, as they would
# be in a training loop.

def make_wengert(work, data, compiled=False):
    import wengert as wg
    import wengert.nn as nn
    import wengert.numpy as np

    def mlp_loss(params, x, y):
        return nn.cross_entropy(mlp_logits(params, x, np.tanh), y)

    def cnn_loss(params, x, y):
        k, kb, w, b = params
        h = nn.max_pool2d(nn.relu(nn.conv2d(x, k, kb, padding=1)), 2)
        return nn.cross_entropy(np.reshape(h, (h.shape[0], -1)) @ w + b, y)

    g = wg.grad({"mlp": mlp_loss, "cnn": cnn_loss}[work])
    params, x, y = data
    if compiled:
        g = wg.compile(g, params, x, y)
    return version("wengert"), lambda: g(params, x, y), lambda out: [numpy.asarray(a) for a in out]


def make_wengert_jit(work, data):
    return make_wengert(work, data, compiled=True)


def make_autograd(work, data):
    import autograd
    import autograd.numpy as anp
    from autograd.scipy.special import logsumexp   # has its own VJP (needs SciPy)

    def cross_entropy(logits, y):
        logp = logits - logsumexp(logits, axis=1, keepdims=True)
        return -anp.mean(logp[numpy.arange(len(y)), y])

    def mlp_loss(params, x, y):
        return cross_entropy(mlp_logits(params, x, anp.tanh), y)

    def cnn_loss(params, x, y):
        k, kb, w, b = params
        n, c, side, _ = x.shape
        o = k.shape[0]
        # im2col: one row per (input channel, kernel offset), one column per output
        # pixel, built by slicing the padded images. Then the conv is one matmul, which
        # autograd differentiates with matmuls.
        xp = anp.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        cols = anp.stack([xp[:, :, i:i + side, j:j + side]
                          for i in range(3) for j in range(3)], axis=2)   # (N, C, 9, H, W)
        cols = anp.reshape(anp.transpose(cols, (1, 2, 0, 3, 4)), (c * 9, -1))
        z = anp.reshape(k, (o, c * 9)) @ cols + kb[:, None]              # (O, N*H*W)
        h = anp.maximum(z, 0.0)
        # 2x2 max-pool the usual autograd way: split each spatial axis into (blocks, 2)
        # and take the max over the two 2-axes. NumPy reduces such short axes slowly.
        # The four-corner np.maximum of numpy-hand would save this row ~0.8 ms, but
        # reshape + max is what autograd code is normally written with.
        h = anp.max(anp.reshape(h, (o, n, side // 2, 2, side // 2, 2)), axis=(3, 5))
        flat = anp.reshape(anp.transpose(h, (1, 0, 2, 3)), (n, -1))     # NCHW flattening
        return cross_entropy(flat @ w + b, y)

    g = autograd.grad({"mlp": mlp_loss, "cnn": cnn_loss}[work])
    params, x, y = data
    return version("autograd"), lambda: g(params, x, y), lambda out: [numpy.asarray(a) for a in out]


def make_torch(work, data):
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(1)

    def cnn_logits(params, x):
        k, kb, w, b = params
        h = F.max_pool2d(F.relu(F.conv2d(x, k, kb, padding=1)), 2)
        return h.flatten(1) @ w + b

    logits = {"mlp": lambda p, x: mlp_logits(p, x, torch.tanh), "cnn": cnn_logits}[work]
    params, x, y = data
    params = [torch.tensor(p, requires_grad=True) for p in params]   # float64 leaves
    x, y = torch.from_numpy(x), torch.from_numpy(y)                    # labels are int64

    def grad():
        loss = F.cross_entropy(logits(params, x), y)                   # mean over the batch
        return torch.autograd.grad(loss, params)

    return torch.__version__, grad, lambda out: [t.numpy() for t in out]


def make_jax(work, data):
    import jax

    # These must precede any JAX computation: x64 for float64, and the CPU backend.
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")
    import jax.numpy as jnp
    from jax import lax

    def cross_entropy(logits, y):
        return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(y.shape[0]), y])

    def mlp_loss(params, x, y):
        return cross_entropy(mlp_logits(params, x, jnp.tanh), y)

    def cnn_loss(params, x, y):
        k, kb, w, b = params
        h = lax.conv_general_dilated(x, k, window_strides=(1, 1), padding=((1, 1), (1, 1)),
                                     dimension_numbers=("NCHW", "OIHW", "NCHW"))
        h = jax.nn.relu(h + kb[None, :, None, None])
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        return cross_entropy(h.reshape(h.shape[0], -1) @ w + b, y)

    g = jax.jit(jax.grad({"mlp": mlp_loss, "cnn": cnn_loss}[work]))
    params, x, y = data
    params, x, y = [jnp.asarray(p) for p in params], jnp.asarray(x), jnp.asarray(y)
    # JAX dispatches asynchronously. Without blocking, we would time only the dispatch.
    return (jax.__version__, lambda: jax.block_until_ready(g(params, x, y)),
            lambda out: [numpy.asarray(a) for a in out])


def softmax_ce_backward(logits, y):
    """d(mean softmax cross-entropy)/d logits = (softmax - onehot) / batch."""
    p = numpy.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[numpy.arange(len(y)), y] -= 1.0
    return p / len(y)


def mlp_grad_numpy(params, x, y):
    """The MLP gradient by hand: the forward pass keeps the activations, and the backward
    pass is the chain rule written out. There is no gradient for x: it is data."""
    acts = [x]
    for i in range(0, len(params) - 2, 2):
        acts.append(numpy.tanh(acts[-1] @ params[i] + params[i + 1]))
    d = softmax_ce_backward(acts[-1] @ params[-2] + params[-1], y)
    grads = [None] * len(params)
    for i in range(len(params) - 2, -1, -2):
        a = acts[i // 2]
        grads[i], grads[i + 1] = a.T @ d, d.sum(axis=0)
        if i:                                           # no need to go back into x
            d = (d @ params[i].T) * (1.0 - a * a)       # tanh' = 1 - tanh^2
    return grads


def cnn_grad_numpy(params, x, y):
    """The CNN gradient by hand: an im2col conv as one matmul, and its backward pass as
    two more. The layout is (channels, pixels), so no transposes are needed around the
    matmuls."""
    k, kb, w, b = params
    n, c, side, _ = x.shape
    o, half = k.shape[0], side // 2
    xp = numpy.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = sliding_window_view(xp, (3, 3), axis=(2, 3))                    # (N, C, H, W, 3, 3)
    cols = win.transpose(1, 4, 5, 0, 2, 3).reshape(c * 9, n * side * side)  # copies once
    z = k.reshape(o, c * 9) @ cols + kb[:, None]                           # (O, N*H*W)
    a = numpy.maximum(z, 0.0).reshape(o, n, side, side)
    # 2x2 max-pool as the maximum of the four strided corners of each window. A
    # reshape + max(axis=(3, 5)) gives the same result, but NumPy reduces such short
    # axes ~15x slower, and this baseline should be the fast way to write it.
    corners = [(slice(None), slice(None), slice(i, None, 2), slice(j, None, 2))
               for i in (0, 1) for j in (0, 1)]
    pooled = numpy.maximum(numpy.maximum(a[corners[0]], a[corners[1]]),
                           numpy.maximum(a[corners[2]], a[corners[3]]))    # (O, N, 4, 4)
    flat = pooled.transpose(1, 0, 2, 3).reshape(n, -1)                     # NCHW flattening
    d = softmax_ce_backward(flat @ w + b, y)
    gw, gb = flat.T @ d, d.sum(axis=0)
    dpool = (d @ w.T).reshape(n, o, half, half).transpose(1, 0, 2, 3)
    # Max-pool backward: the cotangent goes where the window's max is. A window whose
    # values are all 0 (all negative before the ReLU) marks every position, but the ReLU
    # mask (z > 0) then zeroes them all. Ties of positive values have probability zero
    # with continuous random data.
    da = numpy.empty_like(a)
    for corner in corners:          # windows do not overlap: each pixel is set once
        da[corner] = (a[corner] == pooled) * dpool
    dz = da.reshape(o, -1) * (z > 0)
    return [(dz @ cols.T).reshape(k.shape), dz.sum(axis=1), gw, gb]


def make_numpy(work, data):
    fn = {"mlp": mlp_grad_numpy, "cnn": cnn_grad_numpy}[work]
    params, x, y = data
    return numpy.__version__, lambda: fn(params, x, y), list


class _TapeValue:
    """A value on `make_py_tape`'s tape: what it is, what it came from, and one pullback
    per argument (None: the cotangent passes through unchanged, summed to the shape)."""
    __slots__ = ("value", "args", "pullbacks")
    __array_ufunc__ = None          # so that ndarray @ value calls our __rmatmul__

    def __init__(self, value, args=(), pullbacks=None):
        self.value, self.args, self.pullbacks = value, args, pullbacks


def make_py_tape(work, data):
    """The least an eager AD written in Python can cost on the MLP: a tape of closures,
    as autograd keeps, specialised to the three operations and the loss of this one
    network, with no graph, no checks and no pytrees. It is not a peer but a floor: the
    distance from wengert to this row is the price of wengert's design, and the distance
    from this row to numpy-hand is what recording in Python costs at all."""
    if work != "mlp":
        return None                 # (written for the MLP only)
    tape = []

    def unwrap(a):
        return a.value if type(a) is _TapeValue else a

    def record(value, args, pullbacks=None):
        t = _TapeValue(value, args, pullbacks)
        tape.append(t)
        return t

    def matmul(a, b):
        av, bv = unwrap(a), unwrap(b)
        return record(av @ bv, (a, b), (lambda g: g @ bv.T, lambda g: av.T @ g))

    def add(a, b):
        return record(unwrap(a) + unwrap(b), (a, b))

    def tanh(a):
        r = numpy.tanh(a.value)
        return record(r, (a,), (lambda g: g * (1.0 - r * r),))

    _TapeValue.__matmul__, _TapeValue.__rmatmul__ = matmul, lambda a, b: matmul(b, a)
    _TapeValue.__add__ = add

    def cross_entropy(logits, y):
        z = logits.value
        m = z.max(axis=1, keepdims=True)
        e = numpy.exp(z - m)
        s = e.sum(axis=1, keepdims=True)
        rows = numpy.arange(len(y))
        loss = (numpy.log(s).sum() + m.sum() - z[rows, y].sum()) / len(y)

        def pullback(g):
            p = e / s
            p[rows, y] -= 1.0
            return p * (g / len(y))
        return record(loss, (logits,), (pullback,))

    def grad(params, x, y):
        tape.clear()
        leaves = [_TapeValue(p) for p in params]        # (not on the tape: no rule)
        out = cross_entropy(mlp_logits(leaves, x, tanh), y)
        adjoint = {id(out): 1.0}
        for t in reversed(tape):
            g = adjoint.pop(id(t), None)
            if g is None:
                continue
            for k, a in enumerate(t.args):
                if type(a) is not _TapeValue:
                    continue            # data
                if t.pullbacks is None:  # add: sum the cotangent back over broadcasting
                    c = g if a.value.shape == g.shape else g.sum(axis=0)
                else:
                    c = t.pullbacks[k](g)
                prev = adjoint.get(id(a))
                adjoint[id(a)] = c if prev is None else prev + c
        grads = [adjoint[id(p)] for p in leaves]
        tape.clear()
        return grads

    params, x, y = data
    return "-", lambda: grad(params, x, y), list


IMPLS = {
    "wengert": make_wengert,
    "wengert-jit": make_wengert_jit,
    "autograd": make_autograd,
    "torch": make_torch,
    "jax-jit": make_jax,
    "numpy-hand": make_numpy,
    "py-tape": make_py_tape,
}


def check(results, outs):
    """Compare every gradient with wengert's, parameter by parameter (normwise)."""
    ref = outs["wengert"]
    for name, out in outs.items():
        worst = 0.0
        for g, r in zip(out, ref):
            if numpy.shape(g) != numpy.shape(r):
                worst = math.inf
                continue
            scale = numpy.max(numpy.abs(r))
            err = numpy.max(numpy.abs(numpy.asarray(g) - r)) / (scale if scale else 1.0)
            worst = max(worst, float(err))
        ok = len(out) == len(ref) and worst <= RTOL
        results[name].update(grad_agrees=ok, grad_max_rel_err=worst)
        if not ok:
            print(f"WARNING: {name} gradient differs from wengert's "
                  f"(worst normwise rel. error {worst:.2e} > {RTOL:g})")


def run_workload(work, repeats, min_time, check_goals=True):
    data = DATA[work]()
    results, fns, outs = {}, {}, {}
    for name, make in IMPLS.items():
        try:
            made = make(work, data)
        except ImportError:
            if name == "wengert":
                raise  # the reference itself must be present
            results[name] = {"skipped": "not installed"}
            continue
        if made is None:
            results[name] = {"skipped": f"not written for the {work.upper()}"}
            continue
        ver, fn, to_numpy = made
        fns[name] = fn
        outs[name] = to_numpy(fn())  # the first call also compiles jax-jit
        results[name] = {"version": ver}
    check(results, outs)

    times = {}
    for name, (secs, calls, faults) in time_interleaved(fns, repeats, min_time).items():
        times[name] = secs
        results[name].update(ms=statistics.median(secs) * 1e3, calls_per_repeat=calls,
                             repeats=repeats, page_faults_per_grad=faults)

    print(f"\n{describe(work)}, float64, median of {repeats} repeats")
    print(f"{'name':<12} {'version':<12} {'ms/grad':>9} {'vs wengert':>11} {'vs numpy-hand':>14}"
          f" {'faults/grad':>12}")
    for name, r in results.items():
        if "ms" not in r:
            print(f"{name:<12} skipped ({r['skipped']})")
            continue
        r["vs_wengert"] = paired_ratio(times, name, "wengert")
        r["vs_numpy_hand"] = paired_ratio(times, name, "numpy-hand")
        pf = r["page_faults_per_grad"]
        print(f"{name:<12} {r['version']:<12} {r['ms']:>9.3f} {fmt_ratio(r['vs_wengert']):>11} "
              f"{fmt_ratio(r['vs_numpy_hand']):>14} {'n/a' if pf is None else f'{pf:.0f}':>12}")

    goals = []
    for label, base, limit, strict in (GOALS[work] if check_goals else ()):
        vs = paired_ratio(times, "wengert", base)     # wengert time / base time
        met = None if vs is None else (vs < limit if strict else vs <= limit)
        status = (f"unknown ({base} not installed)" if met is None
                  else f"{'met' if met else 'NOT met'} ({vs:.3f}x {base})")
        print(f"goal: {label}: {status}")
        goals.append({"goal": label, "ratio": vs, "met": met})
    return {"description": describe(work), "results": results, "goals": goals}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
    ap.add_argument("--json", metavar="PATH", help="also write results as JSON")
    ap.add_argument("--tiny", action="store_true",
                    help="tiny arrays (MLP 8-8-8-10 with a batch of 4, CNN with a batch of 2): "
                         "what is left is each framework's fixed cost per gradient; the "
                         "goals, set for the full sizes, are not checked")
    ap.add_argument("--keep-memory", action="store_true",
                    help="make glibc keep freed memory (mallopt), so that gradients do not "
                         "page-fault; see benchmarks/README.md")
    args = ap.parse_args(argv)
    repeats, min_time = (3, 0.05) if args.quick else (9, 0.2)
    if args.keep_memory and not keep_memory():
        print("--keep-memory: not glibc, nothing changed")
    if args.tiny:
        global MLP_SIZES, MLP_BATCH, CNN_BATCH
        MLP_SIZES, MLP_BATCH, CNN_BATCH = (8, 8, 8, 10), 4, 2

    print(f"Python {platform.python_version()}, single-threaded"
          + (", glibc keeps freed memory" if args.keep_memory else ""))
    report = {work: run_workload(work, repeats, min_time, not args.tiny) for work in WORKLOADS}

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "arrays", "python": platform.python_version(),
                       "platform": platform.platform(), "rtol": RTOL,
                       "keep_memory": args.keep_memory,
                       "workloads": report}, f, indent=2)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    sys.exit(main())
