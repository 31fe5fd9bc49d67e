"""Gradients through a 2-D DCT and through image warping: wengert.scipy.fft.dctn and
wengert.scipy.ndimage.map_coordinates against JAX, PyTorch and SciPy's value alone.

    python benchmarks/scipy_fft_ndimage.py                      # 7 repeats, the sizes below
    python benchmarks/scipy_fft_ndimage.py --quick              # 3 short repeats, smaller
    python benchmarks/scipy_fft_ndimage.py --json results.json  # also write JSON

Three problems, single-threaded, float64:

* **dct**: ``sum(w * dctn(x, norm='ortho')**2)`` for a 512 x 512 image x, gradient in x
  (a DCT-III of the weighted coefficients: the primitive's transpose).  wengert eager
  (``wg.grad``) and compiled (``wg.jit``); JAX's ``jax.scipy.fft.dctn`` (type 2, by FFTs)
  under ``jax.jit``; PyTorch has no DCT (its row says so); SciPy's loss alone.
* **warp**: ``sum((map_coordinates(image, coords, order=1, mode='nearest') - target)**2)``
  for a 256 x 256 image at 65,536 points, gradient in the image and the coordinates.
  wengert eager and compiled (image and coordinates as arguments); JAX's
  ``jax.scipy.ndimage.map_coordinates`` under ``jax.jit``; PyTorch's ``grid_sample``
  (bilinear, ``align_corners=True``, ``padding_mode='border'``: the same interpolant, the
  coordinates scaled to [-1, 1]), eager; SciPy's loss alone.
* **warp3**: the same at order 3, SciPy's default (its cubic B-spline: the image
  prefiltered into the spline's coefficients, 16 of them read per point).  wengert eager
  and compiled, and eager with the B-spline weights composed of wengert.numpy operations
  (the Cox-de Boor recursion, the primitive bspline_weights's decomposition) rather than
  the primitive; JAX's map_coordinates has orders 0 and 1 only, and PyTorch's
  ``grid_sample(mode='bicubic')`` is Keys' cubic convolution, another interpolant (both
  rows say so); SciPy's loss alone (its prefilter and interpolation).

Every gradient is checked against wengert's before timing (timing.peer_table), and timed
as timing.py does: warm-up, interleaved repeats, medians, ratios paired per repeat.
"""
import platform
import sys

import single_thread  # noqa: F401  (pins the thread pools: before numpy)
import numpy as np
import scipy
import scipy.fft as sf
import scipy.ndimage as snd

from timing import Skip, parser, peer_table, schedule, write_report

CHECKS = dict(tolerance=1e-9, unchecked=("scipy-value",))


def dct_makers(size):
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=(size, size)), rng.uniform(size=(size, size))

    def wengert(jit=False):
        import wengert as wg
        import wengert.numpy as wnp
        from wengert.scipy import fft
        grad = wg.grad(lambda x: wnp.sum(w * fft.dctn(x, norm="ortho") ** 2))
        grad = wg.jit(grad) if jit else grad
        return wg.__version__, lambda: grad(x)

    def jax_jit():
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        import jax.scipy.fft as jfft
        grad = jax.jit(jax.grad(lambda x: jnp.sum(w * jfft.dctn(x, norm="ortho") ** 2)))
        return jax.__version__, lambda: np.asarray(jax.block_until_ready(grad(x)))

    def torch_():
        import torch
        raise Skip(f"torch {torch.__version__} has no DCT")

    def scipy_value():
        return scipy.__version__, lambda: np.sum(w * sf.dctn(x, norm="ortho") ** 2), \
            "the loss alone, no gradient"

    return {"wengert": wengert, "wengert-jit": lambda: wengert(jit=True), "jax-jit": jax_jit,
            "torch": torch_, "scipy-value": scipy_value}


def warp_makers(size, m, order=1):
    rng = np.random.default_rng(1)
    image = rng.normal(size=(size, size))
    coords = rng.uniform(-3, size + 2, size=(2, m))
    target = rng.normal(size=m)

    def wengert(jit=False, composed=False):
        import wengert as wg
        import wengert.numpy as wnp
        from wengert.scipy import ndimage
        grad = wg.grad(lambda im, c: wnp.sum(
            (ndimage.map_coordinates(im, c, order=order, mode="nearest") - target) ** 2),
            argnums=(0, 1))
        grad = wg.jit(grad) if jit else grad
        if not composed:
            return wg.__version__, lambda: list(grad(image, coords))
        import wengert.scipy.ndimage as module
        from wengert.primitives.ndimage import bspline_weights

        def call():
            module._bspline_weights = bspline_weights.decomposition
            try:
                return list(grad(image, coords))
            finally:
                module._bspline_weights = bspline_weights
        return wg.__version__, call, "the weights composed, not the primitive"

    if order > 1:
        def no_jax():
            import jax
            raise Skip(f"jax {jax.__version__}'s map_coordinates has orders 0 and 1 only")

        def no_torch():
            import torch
            raise Skip(f"torch {torch.__version__}'s grid_sample 'bicubic' is Keys' cubic "
                       "convolution, not a B-spline")
        return {"wengert": wengert, "wengert-jit": lambda: wengert(jit=True),
                "wg-composed": lambda: wengert(composed=True), "jax-jit": no_jax,
                "torch": no_torch, "scipy-value": lambda: (scipy.__version__, lambda: np.sum(
                    (snd.map_coordinates(image, coords, order=order, mode="nearest")
                     - target) ** 2), "the loss alone, no gradient")}

    def jax_jit():
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        import jax.scipy.ndimage as jnd
        grad = jax.jit(jax.grad(lambda im, c: jnp.sum(
            (jnd.map_coordinates(im, c, order=1, mode="nearest") - target) ** 2),
            argnums=(0, 1)))
        return jax.__version__, lambda: [np.asarray(g) for g in
                                         jax.block_until_ready(grad(image, coords))]

    def torch_():
        import torch
        im = torch.tensor(image)[None, None]
        c = torch.tensor(coords)
        t = torch.tensor(target)
        scale = 2.0 / (size - 1)

        def grad():
            im.grad = c.grad = None
            im.requires_grad_(True)
            c.requires_grad_(True)
            # grid_sample's (x, y) are (column, row), in [-1, 1] across the image
            grid = torch.stack([c[1] * scale - 1, c[0] * scale - 1], dim=-1)[None, None]
            out = torch.nn.functional.grid_sample(im, grid, mode="bilinear",
                                                  padding_mode="border", align_corners=True)
            ((out[0, 0, 0] - t) ** 2).sum().backward()
            return [im.grad[0, 0].numpy(), c.grad.numpy()]
        return torch.__version__, grad, "grid_sample, eager"

    def scipy_value():
        return scipy.__version__, lambda: np.sum(
            (snd.map_coordinates(image, coords, order=1, mode="nearest") - target) ** 2), \
            "the loss alone, no gradient"

    return {"wengert": wengert, "wengert-jit": lambda: wengert(jit=True), "jax-jit": jax_jit,
            "torch": torch_, "scipy-value": scipy_value}


def main(argv=None):
    ap = parser(__doc__, "smaller problems (a 128 x 128 DCT, a 64 x 64 image at 4,096 "
                      "points), 3 short repeats")
    args = ap.parse_args(argv)
    repeats, min_time = schedule(args)
    size = 128 if args.quick else 512
    image, m = (64, 4_096) if args.quick else (256, 65_536)
    print(f"Python {platform.python_version()}, single-threaded, float64")
    report = {
        "dct": peer_table("dct", f"dctn(x, norm='ortho') of a {size} x {size} image, "
                          "gradient of a weighted energy in x", dct_makers(size), repeats,
                          min_time, **CHECKS),
        "warp": peer_table("warp", f"map_coordinates order 1 of a {image} x {image} image at "
                           f"m = {m} points, gradient in image and coordinates",
                           warp_makers(image, m), repeats, min_time, **CHECKS),
        "warp3": peer_table("warp3", f"map_coordinates order 3 (cubic B-spline) of a {image} "
                            f"x {image} image at m = {m} points, gradient in image and "
                            "coordinates", warp_makers(image, m, order=3), repeats, min_time,
                            **CHECKS)}
    if args.json:
        write_report(args.json, "scipy_fft_ndimage", args.quick, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
