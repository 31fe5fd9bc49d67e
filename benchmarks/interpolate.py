"""Gradients through interpolants: wengert.scipy.interpolate against JAX, PyTorch, and
SciPy's own evaluation and finite differences.

    python benchmarks/interpolate.py                      # 7 repeats, the sizes below
    python benchmarks/interpolate.py --quick              # 3 short repeats, smaller sizes
    python benchmarks/interpolate.py --json results.json  # also write the results as JSON

Three problems, one table each, single-threaded, float64; each loss is
``sum((f(queries) - target)**2)`` and the gradient is in the interpolant's data:

* **spline**: a not-a-knot ``CubicSpline(x, y)`` with n = 1000 knots evaluated at
  m = 10,000 queries, gradient in the n knot values y.  wengert eager (``wg.grad``) and
  compiled (``wg.compile``); JAX under ``jax.jit`` with a spline written here in jnp
  (JAX has none): SciPy's algorithm step for step, the slopes from the same tridiagonal
  system by ``jax.lax.linalg.tridiagonal_solve``, the interval by ``jnp.searchsorted``,
  Horner's rule; central differences through SciPy's CubicSpline (2n spline builds and
  evaluations); autograd, the same spline in autograd.numpy with autograd's
  ``solve_banded`` (differentiable in its right-hand side, which is all the gradient in y
  needs); and SciPy's loss alone, without a gradient, for scale.  PyTorch has no banded
  or tridiagonal solve (a dense one would be O(n³)): its row says so.
* **grid**: ``RegularGridInterpolator((a, b), values)`` linear on a uniform 200 x 200
  grid at m = 100,000 points, gradient in the 40,000 values.  wengert eager and
  compiled; JAX's ``jax.scipy.interpolate.RegularGridInterpolator`` under ``jax.jit``;
  PyTorch's ``grid_sample`` (bilinear, ``align_corners=True``: the same interpolant on a
  uniform grid, which is all it takes), eager; SciPy's loss alone.  Central differences
  would take 80,000 SciPy evaluations: the row gives the estimate.
* **grid-cubic**: the same with ``method='cubic'`` on a 60 x 60 grid at m = 10,000
  points: the tensor-product spline's coefficients solved from the traced values (one
  banded solve per axis) and evaluated.  JAX's RegularGridInterpolator has 'linear' and
  'nearest' only, PyTorch's ``grid_sample`` bicubic is a different interpolant (Keys'
  convolution): their rows say so.  SciPy's loss alone (its iterative gcrotmk solve).

wengert-jit compiles the gradient with the knots, queries and target (grid, points and
target) as constants: what depends on them alone (each query's interval and weights) is
computed once, when compiling.  wengert-jit* takes them as arguments, as jax-jit does
(JAX given them as constants was no faster: 0.65 ms against 0.59 ms on the spline).

Every gradient is checked against wengert's before timing (largest difference relative to
the largest entry: 1e-9 for the peers, 1e-5 for central differences), with a WARNING line
if it differs.  Timing as in timing.py: warm-up, repeats interleaved across the rows,
medians, ratios to wengert eager paired within each repeat.
"""
import platform
import sys
import time
from importlib.metadata import version

import single_thread  # noqa: F401  (pins the thread pools: before numpy)
import numpy as np
import scipy
import scipy.interpolate as si

from timing import Skip, central_differences, parser, peer_table, schedule, write_report

TOLERANCE = {"fd-scipy": 1e-5}          # central differences: truncation and rounding
RTOL = 1e-9
# how peer_table checks the rows: SciPy's plain loss is a time, not a gradient
CHECKS = dict(tolerance=RTOL, tolerances=TOLERANCE, unchecked=("scipy-value",),
              unit="ms/call")



# ---------------------------------------------------------------------------------------
# Problem 1: a cubic spline's gradient in its knot values

def spline_data(n, m):
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(0.0, 10.0, n))
    x[0], x[-1] = 0.0, 10.0
    q = rng.uniform(0.0, 10.0, m)
    return x, np.sin(x), q, np.cos(q)


def spline_makers(x, y, q, target):
    n = len(x)

    def wengert(jit=False, arguments=False):
        import wengert as wg
        import wengert.numpy as wnp
        from wengert.scipy.interpolate import CubicSpline
        loss = lambda y, x, q, target: wnp.sum((CubicSpline(x, y)(q) - target) ** 2)
        if arguments:
            g = wg.compile(wg.grad(loss), y, x, q, target)
            return version("wengert"), lambda: g(y, x, q, target), "x, q, target arguments"
        g = wg.grad(lambda y: loss(y, x, q, target))
        if jit:
            g = wg.compile(g, y)
        return version("wengert"), lambda: g(y)

    def jax_jit():
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        from jax.lax.linalg import tridiagonal_solve

        def spline_loss(y, x, q, target):
            # SciPy's not-a-knot CubicSpline: the slopes s solve a tridiagonal system
            dx = jnp.diff(x)
            slope = jnp.diff(y) / dx
            d0, dn = x[2] - x[0], x[-1] - x[-3]
            diag = jnp.concatenate([dx[1:2], 2 * (dx[:-1] + dx[1:]), dx[-2:-1]])
            upper = jnp.concatenate([d0[None], dx[:-1], jnp.zeros(1)])
            lower = jnp.concatenate([jnp.zeros(1), dx[1:], dn[None]])
            b = jnp.concatenate([
                (((dx[0] + 2 * d0) * dx[1] * slope[0] + dx[0] ** 2 * slope[1]) / d0)[None],
                3 * (dx[1:] * slope[:-1] + dx[:-1] * slope[1:]),
                ((dx[-1] ** 2 * slope[-2] + (2 * dn + dx[-1]) * dx[-2] * slope[-1])
                 / dn)[None]])
            s = tridiagonal_solve(lower, diag, upper, b[:, None])[:, 0]
            # the Hermite pieces, the interval of each query, Horner's rule
            t = (s[:-1] + s[1:] - 2 * slope) / dx
            c = jnp.stack([t / dx, (slope - s[:-1]) / dx - t, s[:-1], y[:-1]])
            i = jnp.clip(jnp.searchsorted(x, q, side="right") - 1, 0, len(x) - 2)
            d = q - x[i]
            v = ((c[0, i] * d + c[1, i]) * d + c[2, i]) * d + c[3, i]
            return jnp.sum((v - target) ** 2)
        g = jax.jit(jax.grad(spline_loss))
        args = [jnp.asarray(a) for a in (y, x, q, target)]
        return jax.__version__, lambda: np.asarray(jax.block_until_ready(g(*args)))

    def fd_scipy():
        h = 1e-6

        def loss(y):
            return np.sum((si.CubicSpline(x, y)(q) - target) ** 2)
        return (scipy.__version__, lambda: central_differences(loss, y, h),
                f"{2 * n} SciPy spline builds and evaluations")

    def scipy_value():
        return scipy.__version__, lambda: np.sum((si.CubicSpline(x, y)(q) - target) ** 2), \
            "the loss alone, no gradient"

    def torch_():
        import torch
        raise Skip(f"torch {torch.__version__} has no banded or tridiagonal solve "
                   f"(torch.linalg.solve of the dense {n} x {n} system is O(n³))")

    def autograd_():
        import autograd
        import autograd.numpy as anp
        from autograd.scipy.linalg import solve_banded
        # the same spline (autograd differentiates solve_banded in its right-hand side,
        # which is all the gradient in y needs), built at each call as wengert's is

        def loss(y):
            dx = np.diff(x)
            d0, dn = x[2] - x[0], x[-1] - x[-3]
            ab = np.stack([np.r_[0.0, d0, dx[:-1]],
                           np.r_[dx[1], 2 * (dx[:-1] + dx[1:]), dx[-2]],
                           np.r_[dx[1:], dn, 0.0]])
            slope = anp.diff(y) / dx
            b = anp.concatenate([
                (((dx[0] + 2 * d0) * dx[1] * slope[0] + dx[0] ** 2 * slope[1]) / d0)[None],
                3 * (dx[1:] * slope[:-1] + dx[:-1] * slope[1:]),
                ((dx[-1] ** 2 * slope[-2] + (2 * dn + dx[-1]) * dx[-2] * slope[-1])
                 / dn)[None]])
            s = solve_banded((1, 1), ab, b)
            t = (s[:-1] + s[1:] - 2 * slope) / dx
            c0, c1, c2, c3 = t / dx, (slope - s[:-1]) / dx - t, s[:-1], y[:-1]
            i = np.clip(np.searchsorted(x, q, side="right") - 1, 0, n - 2)
            d = q - x[i]
            v = ((c0[i] * d + c1[i]) * d + c2[i]) * d + c3[i]
            return anp.sum((v - target) ** 2)
        g = autograd.grad(loss)
        return version("autograd"), lambda: g(y)

    return {"wengert": wengert, "wengert-jit": lambda: wengert(jit=True),
            "wengert-jit*": lambda: wengert(arguments=True), "jax-jit": jax_jit,
            "torch": torch_, "autograd": autograd_, "fd-scipy": fd_scipy,
            "scipy-value": scipy_value}


# ---------------------------------------------------------------------------------------
# Problems 2 and 3: a grid interpolator's gradient in its values

def grid_data(size, m):
    rng = np.random.default_rng(1)
    a, b = np.linspace(0.0, 1.0, size), np.linspace(-1.0, 1.0, size)
    values = np.sin(3 * a)[:, None] * np.cos(2 * b)[None, :]
    points = np.column_stack([rng.uniform(0.0, 1.0, m), rng.uniform(-1.0, 1.0, m)])
    target = np.sin(3 * points[:, 0]) * np.cos(2 * points[:, 1]) + 0.1
    return (a, b), values, points, target


def grid_makers(grid, values, points, target, method):
    size = values.size

    def wengert(jit=False, arguments=False):
        import wengert as wg
        import wengert.numpy as wnp
        from wengert.scipy.interpolate import RegularGridInterpolator

        def loss(v, a, b, p, t):
            return wnp.sum((RegularGridInterpolator((a, b), v, method)(p) - t) ** 2)
        if arguments:
            g = wg.compile(wg.grad(loss), values, *grid, points, target)
            return version("wengert"), lambda: g(values, *grid, points, target), \
                "grid, points, target arguments"
        g = wg.grad(lambda v: loss(v, *grid, points, target))
        if jit:
            g = wg.compile(g, values)
        return version("wengert"), lambda: g(values)

    def jax_jit():
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        from jax.scipy.interpolate import RegularGridInterpolator
        if method != "linear":
            raise Skip(f"jax {jax.__version__}: jax.scipy.interpolate."
                       "RegularGridInterpolator has 'linear' and 'nearest' only")
        a, b = (jnp.asarray(p) for p in grid)
        p, t = jnp.asarray(points), jnp.asarray(target)

        def loss(v, a, b, p, t):
            return jnp.sum((RegularGridInterpolator((a, b), v, method)(p) - t) ** 2)
        g = jax.jit(jax.grad(loss))
        v = jnp.asarray(values)
        return jax.__version__, lambda: np.asarray(jax.block_until_ready(g(v, a, b, p, t)))

    def torch_():
        import torch
        if method != "linear":
            raise Skip(f"torch {torch.__version__}: grid_sample's bicubic mode is Keys' "
                       "convolution kernel, not the interpolating spline")
        torch.set_num_threads(1)
        import torch.nn.functional as F
        a, b = grid
        # grid_sample's coordinates: [-1, 1] along each axis, x (width) first
        u = 2 * (points[:, 1] - b[0]) / (b[-1] - b[0]) - 1
        w = 2 * (points[:, 0] - a[0]) / (a[-1] - a[0]) - 1
        where = torch.from_numpy(np.stack([u, w], axis=-1)).reshape(1, 1, -1, 2)
        t = torch.from_numpy(target)

        def grad():
            v = torch.tensor(values, requires_grad=True)
            out = F.grid_sample(v[None, None], where, mode="bilinear",
                                align_corners=True)[0, 0, 0]
            return torch.autograd.grad(torch.sum((out - t) ** 2), v)[0].numpy()
        return torch.__version__, grad, "grid_sample: uniform grids only"

    def fd_scipy():
        start = time.perf_counter()
        si.RegularGridInterpolator(grid, values, method)(points)
        once = time.perf_counter() - start
        raise Skip(f"central differences would take {2 * size:,} SciPy evaluations, about "
                   f"{2 * size * once:,.0f} s a gradient ({once * 1e3:.1f} ms each)")

    def scipy_value():
        return scipy.__version__, lambda: np.sum(
            (si.RegularGridInterpolator(grid, values, method)(points) - target) ** 2), \
            "the loss alone, no gradient"

    return {"wengert": wengert, "wengert-jit": lambda: wengert(jit=True),
            "wengert-jit*": lambda: wengert(arguments=True), "jax-jit": jax_jit,
            "torch": torch_, "fd-scipy": fd_scipy, "scipy-value": scipy_value}


# ---------------------------------------------------------------------------------------

def main(argv=None):
    ap = parser(__doc__, "smaller problems (n = 200, m = 2,000; 60 x 60 and 20 x 20 grids), "
                      "3 short repeats")
    args = ap.parse_args(argv)
    repeats, min_time = schedule(args)
    n, m = (200, 2_000) if args.quick else (1_000, 10_000)
    size, mg = (60, 10_000) if args.quick else (200, 100_000)
    csize, mc = (20, 2_000) if args.quick else (60, 10_000)

    print(f"Python {platform.python_version()}, single-threaded, float64")
    report = {"spline": peer_table(
        "spline", f"CubicSpline(x, y), n = {n} knots, m = {m} queries, gradient in y",
        spline_makers(*spline_data(n, m)), repeats, min_time, **CHECKS)}
    report["grid"] = peer_table(
        "grid", f"RegularGridInterpolator linear, {size} x {size} grid, m = {mg} points, "
        f"gradient in the {size * size} values",
        grid_makers(*grid_data(size, mg), "linear"), repeats, min_time, **CHECKS)
    report["grid-cubic"] = peer_table(
        "grid-cubic", f"RegularGridInterpolator cubic, {csize} x {csize} grid, m = {mc} "
        f"points, gradient in the {csize * csize} values",
        grid_makers(*grid_data(csize, mc), "cubic"), repeats, min_time, **CHECKS)
    if args.json:
        write_report(args.json, "interpolate", args.quick, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
