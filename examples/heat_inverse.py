"""Map the heat conductivity of a plate from thermal-camera frames: a 2-D inverse problem
whose gradient runs as fused C loops.

A thin plate with insulated edges conducts heat as

    ∂u/∂t = ∇·(k(x, y) ∇u)

with a conductivity k that varies over the plate: background 1, a disc of 0.4 (a
poorly conducting flaw) and a stripe of 2 (a conductive seam).  Three experiments heat
the plate in different random patterns; a camera records each for 8 time steps, with
noise of 1% of the temperatures' spread.  From those frames we recover k on the
128 x 128 grid, 16,384 unknowns, by L-BFGS on the misfit plus a smoothness penalty on
log k (logarithms keep k positive), whose weight is chosen by the discrepancy principle:
the largest weight whose fit leaves no more misfit than the noise would.

The model is the explicit finite-volume scheme written with `wengert.numpy` slices,
unrolled over the 8 steps; its gradient with respect to every cell's log k is
`wg.value_and_grad`, compiled to fused C loops by `wg.compile(..., backend="c")`.  The
example times that gradient against the same graph as NumPy code (`backend="python"`)
and eager `wg.value_and_grad`, on the same inputs, and checks that the three agree
(relative 1e-10).  Without a C compiler it says so and runs the NumPy code, a few times
slower per gradient.

Compiling costs about 2 s (gcc's time on some 90 KB of loops, whatever the grid's
size), and each gradient here saves about 9 ms against the NumPy code: this fit's 150
gradients save 1.4 s.  The C code pays for itself from about 250 gradients, sooner on
finer grids or with more experiments (the saving per gradient grows with the arrays,
the compile time does not: at 256 x 256, 23 ms against 66), and at once where
WENGERT_CACHE_DIR names a directory that keeps the compiled library: a later run loads
it in 0.1 s (docs/compile.md).

    python examples/heat_inverse.py
"""
import time

import numpy as np
from scipy.ndimage import gaussian_filter
from scipy.optimize import minimize

import wengert as wg
import wengert.numpy as wnp
from wengert.codegen.c import CompilerNotFound

N = 128                 # grid cells a side, spacing 1
STEPS = 8               # time steps observed per experiment
DT = 0.1                # explicit steps are stable for DT * 4 * max(k) <= 1: k up to 2.5
EXPERIMENTS = 3         # heating patterns: where one is flat, k does not show in its frames
NOISE = 0.01            # the frames' noise; the initial fields have standard deviation 1
ALPHAS = (1.0, 0.3, 0.1, 0.03, 0.01)     # the penalty's weights tried, largest first


def true_log_conductivity():
    """log k of the plate: a disc of k = 0.4 and a diagonal stripe of k = 2 on k = 1, with
    edges smoothed over a few cells (the penalty could not recover a jump anyway)."""
    y, x = (np.mgrid[0:N, 0:N] + 0.5) / N

    def inside(distance, width):        # 1 inside, 0 outside, a tanh between
        return 0.5 * (1 - np.tanh(distance / width))

    disc = inside(np.hypot(x - 0.3, y - 0.35) - 0.15, 0.02)
    stripe = (inside(np.abs(x - 0.65 + 0.5 * (y - 0.5)) - 0.05, 0.015)
              * inside(0.15 - y, 0.02))
    return np.log(0.4) * disc + np.log(2.0) * stripe


def simulate(log_k, u0):
    """The frames after each of STEPS explicit steps from the initial fields u0
    (EXPERIMENTS x N x N): shape STEPS x EXPERIMENTS x N x N."""
    k = wnp.exp(log_k)
    # conductivity on the faces between cells: the mean of the two cells'
    k_x = 0.5 * (k[:, 1:] + k[:, :-1])
    k_y = 0.5 * (k[1:, :] + k[:-1, :])
    u, frames = u0, []
    for _ in range(STEPS):
        # heat flowing across each interior face; padding with zero flux at the edges
        # is the insulation, and keeps the total heat exact
        flux_x = wnp.pad(k_x * (u[:, :, 1:] - u[:, :, :-1]), ((0, 0), (0, 0), (1, 1)))
        flux_y = wnp.pad(k_y * (u[:, 1:, :] - u[:, :-1, :]), ((0, 0), (1, 1), (0, 0)))
        u = u + DT * (flux_x[:, :, 1:] - flux_x[:, :, :-1]
                      + flux_y[:, 1:, :] - flux_y[:, :-1, :])
        frames.append(u)
    return wnp.stack(frames)


def loss(log_k, u0, observed, alpha):
    """Half the squared misfit of the frames plus alpha/2 times the squared differences
    of log k between neighbouring cells (a Tikhonov penalty on its gradient)."""
    misfit = simulate(log_k, u0) - observed
    roughness = (wnp.sum((log_k[:, 1:] - log_k[:, :-1]) ** 2)
                 + wnp.sum((log_k[1:, :] - log_k[:-1, :]) ** 2))
    return 0.5 * wnp.sum(misfit ** 2) + 0.5 * alpha * roughness


def experiments(seed=0):
    """Initial fields (random patterns smoothed over about 3 cells, standard deviation 1)
    and the noisy frames the camera records from them on the true plate."""
    rng = np.random.default_rng(seed)
    u0 = np.stack([gaussian_filter(rng.normal(size=(N, N)), 3.0)
                   for _ in range(EXPERIMENTS)])
    u0 /= u0.std(axis=(1, 2), keepdims=True)
    clean = np.asarray(simulate(true_log_conductivity(), u0))
    return u0, clean + NOISE * rng.normal(size=clean.shape)


def compiled_gradient(*args):
    """`loss`'s value and gradient compiled to C loops, or to NumPy code where there is no
    C compiler: (function, backend, seconds to compile)."""
    start = time.perf_counter()
    try:
        backend = "c"
        gradient = wg.compile(wg.value_and_grad(loss), *args, backend=backend)
    except CompilerNotFound:
        print("no C compiler found: running the NumPy code (backend='python'), a few "
              "times slower")
        backend = "python"
        gradient = wg.compile(wg.value_and_grad(loss), *args, backend=backend)
    return gradient, backend, time.perf_counter() - start


def seconds_per_call(f, *args, budget=0.3):
    """The median time of at least 3 calls of f(*args), calling for about `budget` s."""
    times, start = [], time.perf_counter()
    while len(times) < 3 or time.perf_counter() - start < budget:
        t = time.perf_counter()
        f(*args)
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def disagreement(a, b):
    """The largest difference of two (value, gradient) pairs, relative to each's size."""
    return max(abs(a[0] - b[0]) / abs(b[0]),
               np.max(np.abs(a[1] - b[1])) / np.max(np.abs(b[1])))


def compare(gradient, backend, args):
    """Time the gradient as compiled, as NumPy code and eagerly at the same point, and
    check that they agree: the largest relative disagreement with the compiled one."""
    rows = {f"backend={backend!r}": gradient}
    if backend != "python":
        rows["backend='python'"] = wg.compile(wg.value_and_grad(loss), *args,
                                              backend="python")
    rows["eager value_and_grad"] = wg.value_and_grad(loss)
    reference = gradient(*args)
    worst = max(disagreement(f(*args), reference) for f in rows.values())
    fastest = None
    for name, f in rows.items():
        t = seconds_per_call(f, *args)
        fastest = fastest or t
        print(f"  {name:<22} {1e3 * t:7.2f} ms per gradient ({t / fastest:4.1f}x)")
    print(f"  they agree within {worst:.1e} (relative)")
    if worst > 1e-10:
        raise RuntimeError(f"the gradients disagree by {worst:.1e}, more than 1e-10")
    return worst


def relative_error(log_k, true_log_k):
    """‖k - k_true‖ / ‖k_true‖ over the plate."""
    k, true = np.exp(log_k), np.exp(true_log_k)
    return np.linalg.norm(k - true) / np.linalg.norm(true)


def fit(gradient, log_k, u0, observed, alpha, steps=300):
    """L-BFGS from log_k; SciPy wants flat vectors, the model a grid.  Returns the
    minimiser and the number of gradients taken."""
    def objective(flat):
        value, grad = gradient(flat.reshape(N, N), u0, observed, alpha)
        return value, grad.ravel()

    result = minimize(objective, log_k.ravel(), jac=True, method="L-BFGS-B",
                      options={"maxiter": steps, "ftol": 1e-12})
    return result.x.reshape(N, N), result.nfev


def discrepancy(log_k, u0, observed):
    """The frames' squared misfit over what the noise alone would leave, n·NOISE²."""
    return np.sum((np.asarray(simulate(log_k, u0)) - observed) ** 2) / (observed.size
                                                                         * NOISE ** 2)


def invert(gradient, u0, observed, true_log_k):
    """Fits for decreasing penalty weights, each from the last one's map, until the misfit
    falls to the noise's level (Morozov's discrepancy principle: the smoothest map the
    data allow, chosen without knowing the truth).  Returns that map and the number of
    gradients taken."""
    log_k, total = np.zeros((N, N)), 0
    for alpha in ALPHAS:
        log_k, count = fit(gradient, log_k, u0, observed, alpha)
        total += count
        ratio = discrepancy(log_k, u0, observed)
        print(f"alpha = {alpha}: {count} gradients, misfit {ratio:.4f} x the noise's, "
              f"relative error of k {relative_error(log_k, true_log_k):.4f}")
        if ratio <= 1:
            break
    return log_k, alpha, total


def main():
    u0, observed = experiments()
    true_log_k, first_guess = true_log_conductivity(), np.zeros((N, N))
    args = (first_guess, u0, observed, ALPHAS[0])
    gradient, backend, compile_time = compiled_gradient(*args)
    print(f"{N} x {N} conductivity, {EXPERIMENTS} experiments x {STEPS} steps: gradient "
          f"compiled (backend={backend!r}) in {compile_time:.1f} s")
    print("time per gradient at the first guess:")
    agreement = compare(gradient, backend, args)
    start = time.perf_counter()
    log_k, alpha, gradients = invert(gradient, u0, observed, true_log_k)
    seconds = time.perf_counter() - start
    k, true_k = np.exp(log_k), np.exp(true_log_k)
    for name, where in (("flaw", true_k < 0.45), ("seam", true_k > 1.9)):
        print(f"  k in the {name}'s core: median {np.median(k[where]):.3f} "
              f"(true {np.median(true_k[where]):.3f}, {where.sum()} cells)")
    error, before = relative_error(log_k, true_log_k), relative_error(first_guess, true_log_k)
    print(f"chosen alpha = {alpha}: relative error of k {error:.4f} (first guess k = 1: "
          f"{before:.4f}); {gradients} gradients in {seconds:.2f} s")
    return {"error": error, "first_guess_error": before, "alpha": alpha,
            "backend": backend, "agreement": agreement}


if __name__ == "__main__":
    main()
