"""A Gaussian blur's value and gradient: wengert.scipy.ndimage.gaussian_filter against
SciPy's value, JAX's composition of the same filter, and wengert's own compositions of
the valid correlation without its primitive (shifted slices, a tensordot of windows).

    python benchmarks/ndimage_filters.py                      # 7 repeats, 512 x 512
    python benchmarks/ndimage_filters.py --quick              # 3 short repeats, 128 x 128
    python benchmarks/ndimage_filters.py --json results.json  # also write JSON

One problem, single-threaded, float64: ``sum((gaussian_filter(x, 2) - target)**2)`` for a
512 x 512 image x, mode 'reflect' (SciPy's default), sigma 2 (17 taps per axis).

* **value**: the blurred image.  wengert on a traced x (``wg.vjp``'s forward pass: the
  padding gathers and two ``correlate_valid`` primitives, evaluated by SciPy's
  ``correlate1d``); "slices", the same padding with each valid correlation written as a
  sum of 17 shifted slices (the primitive's decomposition); "windows", each one
  ``tensordot`` of wengert's ``sliding_window_view`` with the weights; JAX under
  ``jax.jit``: the image padded by ``jnp.pad(mode='symmetric')`` (SciPy's 'reflect') and
  convolved along each axis by ``jax.scipy.signal.convolve`` in 'valid' mode; SciPy's
  ``gaussian_filter`` on plain values.
* **grad**: the gradient of the loss in x: wengert eager (``wg.grad``) and compiled
  (``wg.jit``), the slices and the windows, JAX's ``jax.jit(jax.grad)`` of its
  composition, and SciPy's loss alone (no gradient).  PyTorch has no symmetric
  ('reflect' in SciPy's sense) padding, so it is not compared.

Every result is checked against wengert's before timing (timing.peer_table), and timed as
timing.py does: warm-up, interleaved repeats, medians, ratios paired per repeat.
"""
import platform
import sys

import single_thread  # noqa: F401  (pins the thread pools: before numpy)
import numpy as np
import scipy
import scipy.ndimage as snd

from timing import Skip, parser, peer_table, schedule, write_report

SIGMA = 2.0
CHECKS = dict(tolerance=1e-12)


def kernel(sigma=SIGMA):
    """SciPy's Gaussian weights for sigma (radius int(4 sigma + 0.5)), from its own filter
    of a unit impulse."""
    radius = int(4 * sigma + 0.5)
    return snd.gaussian_filter1d(np.eye(2 * radius + 1)[radius], sigma, mode="constant")


def sliced(x):
    """gaussian_filter(x, SIGMA) with each axis's valid correlation a sum of shifted
    slices: wengert.scipy.ndimage's padding, and the primitive's decomposition."""
    from wengert.primitives.ndimage import correlate_valid
    from wengert.scipy.ndimage import _pad
    w = kernel()
    r = len(w) // 2
    for axis in (0, 1):
        shape = [1, 1]
        shape[axis] = len(w)
        x = correlate_valid.decomposition(_pad(x, axis, r, r, "reflect", 0.0),
                                          w.reshape(shape))
    return x


def windowed(x):
    """The same with each valid correlation one tensordot of wengert's
    sliding_window_view (a gather of the 17 windows) with the weights."""
    import wengert.numpy as wnp
    from wengert.numpy.lib.stride_tricks import sliding_window_view
    from wengert.scipy.ndimage import _pad
    w = kernel()
    r = len(w) // 2
    for axis in (0, 1):
        windows = sliding_window_view(_pad(x, axis, r, r, "reflect", 0.0), len(w), axis=axis)
        x = wnp.tensordot(windows, w, axes=([2], [0]))
    return x


def jax_blur():
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import jax.scipy.signal as jsig
    w = jnp.asarray(kernel())
    r = len(w) // 2

    def blur(x):
        x = jnp.pad(x, r, mode="symmetric")                 # SciPy's 'reflect'
        x = jsig.convolve(x, w[:, None], mode="valid", method="direct")
        return jsig.convolve(x, w[None, :], mode="valid", method="direct")
    return jax, jnp, blur


def value_makers(size):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(size, size))

    def wengert(slices=False, windows=False):
        import wengert as wg
        from wengert.scipy import ndimage
        f = sliced if slices else windowed if windows else \
            (lambda x: ndimage.gaussian_filter(x, SIGMA))
        return wg.__version__, lambda: wg.vjp(f, x)[0], \
            "sum of 17 slices per axis" if slices else \
            "tensordot of sliding windows" if windows else "traced x, eager"

    def jax_jit():
        jax, _, blur = jax_blur()
        f = jax.jit(blur)
        return jax.__version__, lambda: np.asarray(jax.block_until_ready(f(x)))

    def scipy_value():
        return scipy.__version__, lambda: snd.gaussian_filter(x, SIGMA), "plain x"

    return {"wengert": wengert, "slices": lambda: wengert(slices=True),
            "windows": lambda: wengert(windows=True), "jax-jit": jax_jit, "scipy": scipy_value}


def grad_makers(size):
    rng = np.random.default_rng(1)
    x, target = rng.normal(size=(size, size)), rng.normal(size=(size, size))

    def wengert(jit=False, slices=False, windows=False):
        import wengert as wg
        import wengert.numpy as wnp
        from wengert.scipy import ndimage
        blur = sliced if slices else windowed if windows else \
            (lambda x: ndimage.gaussian_filter(x, SIGMA))
        grad = wg.grad(lambda x: wnp.sum((blur(x) - target) ** 2))
        grad = wg.jit(grad) if jit else grad
        return wg.__version__, lambda: grad(x), "sum of 17 slices per axis" if slices else \
            "tensordot of sliding windows" if windows else ""

    def jax_jit():
        jax, jnp, blur = jax_blur()
        grad = jax.jit(jax.grad(lambda x: jnp.sum((blur(x) - target) ** 2)))
        return jax.__version__, lambda: np.asarray(jax.block_until_ready(grad(x)))

    def torch_():
        import torch
        raise Skip(f"torch {torch.__version__} has no symmetric padding (SciPy's 'reflect')")

    def scipy_value():
        return scipy.__version__, lambda: np.sum((snd.gaussian_filter(x, SIGMA) - target) ** 2), \
            "the loss alone, no gradient"

    return {"wengert": wengert, "wengert-jit": lambda: wengert(jit=True),
            "slices": lambda: wengert(slices=True), "windows": lambda: wengert(windows=True),
            "jax-jit": jax_jit, "torch": torch_,
            "scipy-value": scipy_value}


def main(argv=None):
    ap = parser(__doc__, "a 128 x 128 image, 3 short repeats")
    args = ap.parse_args(argv)
    repeats, min_time = schedule(args)
    size = 128 if args.quick else 512
    print(f"Python {platform.python_version()}, single-threaded, float64")
    report = {
        "value": peer_table("value", f"gaussian_filter(x, {SIGMA}) of a {size} x {size} "
                            "image, mode 'reflect'", value_makers(size), repeats, min_time,
                            unit="ms/call", **CHECKS),
        "grad": peer_table("grad", f"gradient of sum((gaussian_filter(x, {SIGMA}) - t)**2) "
                           f"in a {size} x {size} image x", grad_makers(size), repeats,
                           min_time, unchecked=("scipy-value",), **CHECKS)}
    if args.json:
        write_report(args.json, "ndimage_filters", args.quick, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
