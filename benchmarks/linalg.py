"""Eager gradients through matrix factorizations: wengert against autograd, PyTorch and JAX.

What is measured: one gradient call (forward pass and backward sweep) of

    eigh:  w, V = eigh(A);          sum(w²) + sum(V[:, -1]⁴)
    svd:   U, s, Vh = svd(A, thin); sum(s) + sum(U[:, 0]⁴) + sum(Vh[0]⁴)

with respect to a symmetric 100x100 A, where every factor carries a derivative.  The last
column is the factorization alone in NumPy: a gradient needs at least one.  Every peer's
gradient is first checked against wengert's to a relative 1e-8: their symmetric parts, the
part defined for a symmetric A (eigenvectors and singular vectors enter through even
powers, so their signs do not matter).

Run on demand (not part of the test suite):

    pip install -e '.[bench]'
    python benchmarks/linalg.py [--quick] [--n N] [--json PATH]
"""

import single_thread  # noqa: F401  (pins the thread pools: before numpy, torch, jax)

import json
import platform
import sys

import numpy

from timing import fmt_ratio, paired_ratio, parser, schedule, time_interleaved

RTOL = 1e-8


def loss(kind, np):
    """The benchmarked function, written once for NumPy-like modules."""
    if kind == "eigh":
        def f(a):
            w, v = np.linalg.eigh(a)
            return np.sum(w * w) + np.sum(v[:, -1] ** 4)
    else:
        def f(a):
            u, s, vh = np.linalg.svd(a, full_matrices=False)
            return np.sum(s) + np.sum(u[:, 0] ** 4) + np.sum(vh[0] ** 4)
    return f


def implementations(kind, a):
    """name -> zero-argument call returning the gradient as a NumPy array (peers that are
    not installed are left out)."""
    import wengert as wg
    import wengert.numpy as wnp
    fns = {"wengert": (lambda g: lambda: g(a))(wg.grad(loss(kind, wnp)))}
    try:
        import autograd
        import autograd.numpy as anp
        fns["autograd"] = (lambda g: lambda: g(a))(autograd.grad(loss(kind, anp)))
    except ImportError:
        pass
    try:
        import torch
        torch.set_num_threads(1)
        f = loss(kind, _TorchNumpy(torch))
        t = torch.tensor(a, requires_grad=True)
        fns["torch"] = lambda: torch.autograd.grad(f(t), t)[0].numpy()
    except ImportError:
        pass
    try:
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
        g = jax.jit(jax.grad(loss(kind, jnp)))
        ja = jnp.asarray(a)
        fns["jax-jit"] = lambda: numpy.asarray(jax.block_until_ready(g(ja)))
    except ImportError:
        pass
    factorize = numpy.linalg.eigh if kind == "eigh" else numpy.linalg.svd
    fns["numpy alone"] = lambda: factorize(a)
    return fns


class _TorchNumpy:
    """The few NumPy names `loss` uses, on PyTorch tensors."""

    def __init__(self, torch):
        self.sum = torch.sum
        self.linalg = self
        self._torch = torch

    def eigh(self, a):
        return self._torch.linalg.eigh(a)

    def svd(self, a, full_matrices=True):
        return self._torch.linalg.svd(a, full_matrices=full_matrices)


def run(kind, n, repeats, min_time):
    rng = numpy.random.default_rng(0)
    a = rng.normal(size=(n, n))
    a = a + a.T
    fns = implementations(kind, a)
    # (A is symmetric, and only a gradient's symmetric part is defined along symmetric
    # changes: autograd's eigh gradient is not symmetric, wengert's, PyTorch's and JAX's are)
    sym = lambda g: (g + g.T) / 2
    ref = sym(fns["wengert"]())
    for name, fn in fns.items():
        if name in ("wengert", "numpy alone"):
            continue
        err = numpy.linalg.norm(sym(fn()) - ref) / numpy.linalg.norm(ref)
        if err > RTOL:
            print(f"WARNING: {name}'s {kind} gradient differs from wengert's ({err:.1e})")
    timed = time_interleaved(fns, repeats, min_time)
    times = {name: secs for name, (secs, _, _) in timed.items()}
    print(f"\n{kind} gradient, {n}x{n}, median of {repeats} repeats")
    print(f"{'name':<12} {'ms/grad':>9} {'vs wengert':>11}")
    rows = {}
    for name, secs in times.items():
        ms = sorted(secs)[len(secs) // 2] * 1e3
        ratio = paired_ratio(times, name, "wengert")
        rows[name] = {"ms": ms, "vs_wengert": ratio}
        print(f"{name:<12} {ms:>9.3f} {fmt_ratio(ratio):>11}")
    return rows


def main(argv=None):
    ap = parser(__doc__, "fewer, shorter repeats")
    ap.add_argument("--n", type=int, default=100, help="matrix size (default 100)")
    args = ap.parse_args(argv)
    repeats, min_time = schedule(args)
    print(f"Python {platform.python_version()}, single-threaded")
    report = {kind: run(kind, args.n, repeats, min_time) for kind in ("eigh", "svd")}
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "linalg", "n": args.n, "workloads": report}, f, indent=2)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    sys.exit(main())
