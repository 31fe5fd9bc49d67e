"""Gradients through sparse matrices: wengert against JAX, PyTorch, CasADi and autograd.

    python benchmarks/sparse.py                      # 7 repeats, n = 99,856 and 100,000
    python benchmarks/sparse.py --quick              # 3 short repeats, n = 10,000
    python benchmarks/sparse.py --json results.json  # also write the results as JSON

Two problems, one table each, single-threaded, float64:

* **heat**: 50 explicit steps of the heat equation through the 2-D 5-point Laplacian L
  (a constant CSR matrix, n = m² unknowns), ``u <- u + dt * k * (L @ u)``, and the loss
  ``sum((u_50 - target)**2)``; the gradient with respect to the initial state u_0 and the
  scalar diffusivity k.  wengert eager (``wg.grad``, L a scipy.sparse csr_array) and
  compiled (``wg.compile``), JAX (``jax.experimental.sparse.BCOO``, ``jax.jit``, the steps
  in a ``fori_loop``), PyTorch eager (``torch.sparse_csr_tensor``), CasADi (an MX graph of
  the 50 steps with L a sparse DM, its reverse-mode ``gradient`` built into a Function
  once; its build time is printed apart).  autograd has no sparse matrices: its row says so.
* **conductivity**: the gradient in the n + 1 cell conductivities k of
  ``sum((spsolve(K(k), f) - target)**2)``, with K(k) the tridiagonal 1-D stiffness matrix
  of -(k u')' + u = f on spacing 1 (the reaction term keeps its condition number below 10
  at every n, so that gradients can be compared to 1e-8; K's entries are traced): wengert (``wengert.scipy.sparse.csr_array((data, indices,
  indptr))`` and ``spsolve``, eager and compiled), JAX
  (``jax.experimental.sparse.linalg.spsolve`` under ``jax.jit``), CasADi (``casadi.solve``
  with the "csparse" linear solver on an MX matrix of the same pattern).  PyTorch's
  ``torch.sparse.spsolve`` has no CPU kernel, autograd no sparse matrices: their rows say so.

Every peer's gradient is checked against wengert's before timing (normwise, each part:
largest difference at most 1e-8 times the largest entry of wengert's), with a WARNING line
if it differs.  Timing as in timing.py: warm-up, repeats interleaved across the rows,
medians, ratios to wengert paired within each repeat.
"""
import itertools
import json
import platform
import sys
import time
from importlib.metadata import version

import single_thread  # noqa: F401  (pins the thread pools: before numpy)
import numpy as np
import scipy.sparse as sp

from timing import Skip, parser, peer_table, schedule

RTOL = 1e-8
STEPS, DT = 50, 0.1
KS = 8           # conductivity fields the calls cycle through (see `cycling`)



# ---------------------------------------------------------------------------------------
# Problem 1: explicit heat equation through a constant sparse Laplacian

def heat_data(m):
    d = sp.diags([1.0, -2.0, 1.0], [-1, 0, 1], shape=(m, m))
    eye = sp.identity(m)
    lap = sp.csr_array(sp.kron(eye, d) + sp.kron(d, eye))
    lap.sort_indices()
    rng = np.random.default_rng(0)
    n = m * m
    return lap, rng.uniform(size=n), 1.0, rng.uniform(size=n) * 0.5


def heat_makers(lap, u0, k, target):
    n = lap.shape[0]

    def wengert(jit=False):
        import wengert as wg
        import wengert.numpy as wnp

        def loss(u, k):
            for _ in range(STEPS):
                u = u + DT * k * (lap @ u)
            return wnp.sum((u - target) ** 2)
        g = wg.grad(loss, argnums=(0, 1))
        if jit:
            g = wg.compile(g, u0, k)
        return version("wengert"), lambda: list(g(u0, k))

    def jax_jit():
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        from jax.experimental import sparse as jsparse
        L = jsparse.BCOO.from_scipy_sparse(lap)     # an argument, as in conductivity's
        t = jnp.asarray(target)

        def loss(u, k, L, t):
            u = jax.lax.fori_loop(0, STEPS, lambda _, u: u + DT * k * (L @ u), u)
            return jnp.sum((u - t) ** 2)
        g = jax.jit(jax.grad(loss, argnums=(0, 1)))
        uj, kj = jnp.asarray(u0), jnp.asarray(k)
        return jax.__version__, lambda: [np.asarray(a) for a in
                                         jax.block_until_ready(g(uj, kj, L, t))]

    def torch_():
        import warnings
        import torch
        torch.set_num_threads(1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # "sparse CSR support is in beta"
            L = torch.sparse_csr_tensor(torch.from_numpy(lap.indptr.astype(np.int64)),
                                        torch.from_numpy(lap.indices.astype(np.int64)),
                                        torch.from_numpy(lap.data), size=lap.shape,
                                        dtype=torch.float64)
        t = torch.from_numpy(target)

        def grads():
            u = start = torch.tensor(u0, requires_grad=True)
            kt = torch.tensor(k, dtype=torch.float64, requires_grad=True)
            for _ in range(STEPS):
                u = u + DT * kt * (L @ u)
            return [a.numpy() for a in
                    torch.autograd.grad(torch.sum((u - t) ** 2), (start, kt))]
        return torch.__version__, grads

    def casadi_():
        import casadi as ca
        csc = lap.tocsc()
        L = ca.DM(ca.Sparsity(n, n, csc.indptr.tolist(), csc.indices.tolist()), csc.data)
        x = ca.MX.sym("x", n + 1)
        u, kk = x[:n], x[n]
        t0 = time.perf_counter()
        for _ in range(STEPS):
            u = u + DT * kk * ca.mtimes(L, u)
        loss = ca.sumsqr(u - ca.DM(target))
        f = ca.Function("grad", [x], [ca.gradient(loss, x)])
        built = time.perf_counter() - t0
        xk = np.r_[u0, k]

        def grads():
            out = np.asarray(f(xk)).ravel()
            return [out[:n], out[n]]
        return ca.__version__, grads, f"built in {built * 1e3:.0f} ms"

    def autograd_():
        raise Skip("autograd has no sparse matrices (densifying L would take "
                   f"{n * n * 8 / 1e9:.0f} GB)")

    return {"wengert": wengert, "wengert-jit": lambda: wengert(jit=True),
            "jax-jit": jax_jit, "torch": torch_, "casadi": casadi_, "autograd": autograd_}


# ---------------------------------------------------------------------------------------
# Problem 2: a conductivity fit through spsolve, the matrix's entries traced

def conductivity_data(n):
    """The CSR pattern of the tridiagonal n x n K(k) and the positions, in its data, of
    the entries [diagonal (n), lower (n-1), upper (n-1)].  K is symmetric, so the arrays
    are its CSC pattern too."""
    i = np.arange(n)
    row, col = np.r_[i, i[1:], i[:-1]], np.r_[i, i[:-1], i[1:]]
    order = sp.csr_array((np.arange(1.0, len(row) + 1), (row, col)), shape=(n, n))
    order.sort_indices()
    perm = order.data.astype(np.int64) - 1
    rng = np.random.default_rng(1)
    ks = [1 + rng.uniform(size=n + 1) for _ in range(KS)]
    return order.indices, order.indptr, perm, ks, np.ones(n), rng.uniform(size=n) * 0.1


def cycling(ks, grad):
    """A call computing the gradient at the next of the conductivities `ks` in turn, the
    first call at ks[0]: a solve called again with the same matrix may reuse its factors
    (wengert's compiled gradient does), which would time a cache, not a gradient."""
    turn = itertools.cycle(ks)
    return lambda: grad(next(turn))


def conductivity_makers(indices, indptr, perm, ks, f, target):
    n = len(f)

    def wengert(jit=False):
        import wengert as wg
        import wengert.numpy as wnp
        from wengert.scipy.sparse import csr_array
        from wengert.scipy.sparse.linalg import spsolve

        def loss(k):
            off = -k[1:-1]
            data = wnp.concatenate([k[:-1] + k[1:] + 1.0, off, off])[perm]
            u = spsolve(csr_array((data, indices, indptr), shape=(n, n)), f)
            return wnp.sum((u - target) ** 2)
        g = wg.grad(loss)
        if jit:
            g = wg.compile(g, ks[0])
        return version("wengert"), cycling(ks, lambda k: [g(k)])

    def jax_jit():
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        from jax.experimental.sparse.linalg import spsolve
        # the constant arrays are arguments: as constants of the jitted function, XLA
        # spends seconds constant-folding operations on the pattern
        const = tuple(jnp.asarray(a) for a in (indices, indptr, perm, f, target))

        def loss(k, ind, ptr, perm, f, target):
            off = -k[1:-1]
            data = jnp.concatenate([k[:-1] + k[1:] + 1.0, off, off])[perm]
            return jnp.sum((spsolve(data, ind, ptr, f) - target) ** 2)
        g = jax.jit(jax.grad(loss))
        return jax.__version__, cycling([jnp.asarray(k) for k in ks], lambda k: [
            np.asarray(jax.block_until_ready(g(k, *const)))])

    def torch_():
        import torch
        raise Skip(f"torch {torch.__version__}: torch.sparse.spsolve has no CPU kernel "
                   "(aten::_spsolve is CUDA only), and no other sparse direct solve")

    def casadi_():
        import casadi as ca
        pattern = ca.Sparsity(n, n, indptr.tolist(), indices.tolist())
        x = ca.MX.sym("k", n + 1)
        t0 = time.perf_counter()
        off = -x[1:n]
        data = ca.vertcat(x[:n] + x[1:] + 1, off, off)[perm.tolist()]
        u = ca.solve(ca.MX(pattern, data), ca.DM(f), "csparse")
        loss = ca.sumsqr(u - ca.DM(target))
        fn = ca.Function("grad", [x], [ca.gradient(loss, x)])
        built = time.perf_counter() - t0
        return ca.__version__, cycling(ks, lambda k: [np.asarray(fn(k)).ravel()]), \
            f"built in {built * 1e3:.0f} ms"

    def autograd_():
        raise Skip("autograd has no sparse matrices or sparse solve (a dense solve at "
                   f"n = {n} would take a {n * n * 8 / 1e9:.0f} GB matrix)")

    return {"wengert": wengert, "wengert-jit": lambda: wengert(jit=True),
            "jax-jit": jax_jit, "torch": torch_, "casadi": casadi_, "autograd": autograd_}


# ---------------------------------------------------------------------------------------

def main(argv=None):
    ap = parser(__doc__, "n = 10^4, 3 short repeats")
    args = ap.parse_args(argv)
    repeats, min_time = schedule(args)
    m, n = (100, 10_000) if args.quick else (316, 100_000)

    print(f"Python {platform.python_version()}, single-threaded, float64")
    lap, u0, k, target = heat_data(m)
    report = {"heat": peer_table(
        "heat", f"heat equation, {STEPS} explicit steps through the 2-D Laplacian, "
        f"n = {m}x{m} = {m * m}, gradient in u_0 and k",
        heat_makers(lap, u0, k, target), repeats, min_time, RTOL)}
    report["conductivity"] = peer_table(
        "conductivity", f"conductivity fit through spsolve(K(k), f), K tridiagonal with "
        f"traced entries, n = {n}, gradient in the {n + 1} conductivities",
        conductivity_makers(*conductivity_data(n)), repeats, min_time, RTOL)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "sparse", "python": platform.python_version(),
                       "platform": platform.platform(), "rtol": RTOL, "quick": args.quick,
                       "problems": report}, f, indent=2)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
