"""What mode="sparse" costs where colouring saves nothing, and what it saves where it does.

    dense-200       tanh(ones(n, n) @ x), n = 200: a dense Jacobian, one colour per column
    arrowhead-3000  [sum(x[1:]), x[1:] * x[0]]: one nearly full row and column, so the
                    full-row shortcut does not apply and the greedy colouring runs
    tridiag-1e5     the Broyden tridiagonal function on arrays, n = 10^5 (3 colours), by
                    sparse_jacobian; mode="auto" there would take 10^5 forward directions

Times are medians of repeats of eager calls (trace, pattern, colouring, sweeps), in one
process, one thread:

    python benchmarks/sparse_overhead.py
"""
import single_thread  # noqa: F401  (pins the thread pools: before numpy)

import numpy as np

import wengert as wg
import wengert.numpy as wnp
from timing import time_it


def dense(x):
    return wnp.tanh(np.ones((len(x), len(x))) @ x)


def arrowhead(x):
    return wnp.concatenate([wnp.sum(x[1:])[None], x[1:] * x[0]])


def broyden(x):
    z = wnp.zeros(1)
    return (3 - 2 * x) * x - wnp.concatenate([z, x[:-1]]) - 2 * wnp.concatenate([x[1:], z]) + 1


def main():
    print("| problem | sparse (ms) | auto (ms) | sparse / auto |")
    print("|---|---|---|---|")
    for name, f, n in (("dense-200", dense, 200), ("arrowhead-3000", arrowhead, 3000)):
        x = np.linspace(0.1, 1, n)
        ts, _ = time_it(lambda: wg.jacobian(f, mode="sparse")(x), 5, 0.2)
        ta, _ = time_it(lambda: wg.jacobian(f, mode="auto")(x), 5, 0.2)
        print(f"| {name} | {ts * 1e3:.3g} | {ta * 1e3:.3g} | {ts / ta:.1f}x |")
    x = np.full(100_000, 0.5)
    t, _ = time_it(lambda: wg.sparse_jacobian(broyden)(x), 3, 0.2)
    print(f"| tridiag-1e5 (sparse_jacobian) | {t * 1e3:.3g} | - | - |")


if __name__ == "__main__":
    main()
