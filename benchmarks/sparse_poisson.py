"""The gradient of a 1-D Poisson fit in the conductivity, through a sparse matrix with
traced entries (wengert.scipy.sparse.coo_array and spsolve), against the same fit through
the dense matrix (wnp.at(...).add, wnp.linalg.solve) at the largest n a dense solve affords.

    misfit(k) = sum((u - measured)²),   K(k) u = f,   K(k) tridiagonal from the n + 1 cell
                                                       conductivities k

One gradient call is the eager forward pass, one SuperLU factorisation, and the adjoint
solve with the same factors; the dense one is an n x n LU.  Medians of repeats, in one
process, one thread:

    python benchmarks/sparse_poisson.py [--sparse-n 100000] [--dense-n 2000]
"""
import single_thread  # noqa: F401  (pins the thread pools: before numpy)

import argparse

import numpy as np

import wengert as wg
import wengert.numpy as wnp
from wengert.scipy.sparse import coo_array
from wengert.scipy.sparse.linalg import spsolve
from timing import time_it


def misfits(n):
    """The misfit through the sparse and through the dense stiffness matrix."""
    i = np.arange(n)
    row, col = np.r_[i, i, i[:-1], i[1:]], np.r_[i, i, i[1:], i[:-1]]
    f, measured = np.ones(n), np.zeros(n)

    def data(k):
        return wnp.concatenate([k[:-1], k[1:], -k[1:-1], -k[1:-1]]) * (n + 1) ** 2

    def sparse(k):
        u = spsolve(coo_array((data(k), (row, col)), shape=(n, n)), f)
        return wnp.sum((u - measured) ** 2)

    def dense(k):
        u = wnp.linalg.solve(wnp.at(np.zeros((n, n)))[row, col].add(data(k)), f)
        return wnp.sum((u - measured) ** 2)
    return sparse, dense


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sparse-n", type=int, default=100_000)
    parser.add_argument("--dense-n", type=int, default=2000)
    args = parser.parse_args()
    k = 1 + np.random.default_rng(0).uniform(size=args.dense_n + 1)
    sparse, dense = misfits(args.dense_n)
    want = wg.grad(dense)(k)           # (the two agree to rounding: a check, not a timing)
    np.testing.assert_allclose(wg.grad(sparse)(k), want, rtol=1e-6,
                               atol=1e-8 * np.abs(want).max())
    for kind, n in (("sparse", args.sparse_n), ("dense", args.dense_n)):
        k = 1 + np.random.default_rng(0).uniform(size=n + 1)
        f = misfits(n)[kind == "dense"]
        seconds, _ = time_it(lambda: wg.grad(f)(k), repeats=5, min_time=0.2)
        print(f"{kind:6} n = {n:>7}: gradient {seconds * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
