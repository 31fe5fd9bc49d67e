"""wengert.image, JAX's jax.image: resize and scale_and_translate against a loop over
output pixels written here from the kernels' definitions, and against JAX where it is
installed; derivatives in the image, the scale and the translation against central
differences (second order) and JAX's; under wg.vmap and wg.compile; the errors."""
import math
import warnings

import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from wengert import image
from fd import assert_close, check_grads

rng = np.random.default_rng(11)
METHODS = ["linear", "cubic", "lanczos3", "lanczos5", "cubic-pytorch", "area"]


# ---- a reference: one output pixel at a time ---------------------------------------------------
def keys(x, a):
    if x < 1:
        return (a + 2) * x ** 3 - (a + 3) * x ** 2 + 1
    return a * x ** 3 - 5 * a * x ** 2 + 8 * a * x - 4 * a if x < 2 else 0.0


def lanczos(x, r):
    if x == 0:
        return 1.0
    return r * math.sin(math.pi * x) * math.sin(math.pi * x / r) / (math.pi * x) ** 2 \
        if x < r else 0.0


KERNEL = {"linear": lambda x: max(0.0, 1.0 - x), "cubic": lambda x: keys(x, -0.5),
          "lanczos3": lambda x: lanczos(x, 3), "lanczos5": lambda x: lanczos(x, 5),
          "cubic-pytorch": lambda x: keys(x, -0.75)}


def reference_1d(x, n, scale, shift, method, antialias):
    """Resample the vector x to n: output j's centre j + 0.5 is input coordinate
    c = (j + 0.5 - shift) / scale; the pixels around it weighed by the kernel (widened
    by 1/scale when downsampling with antialias), normalised; 0 outside [0, m]."""
    m = len(x)
    out = np.zeros(n, dtype=np.result_type(x, float))
    if method == "cubic-pytorch" and antialias:
        method = "cubic"
    for j in range(n):
        c = (j + 0.5 - shift) / scale
        if method == "area":      # the overlap of output j's cell with each pixel
            lo, hi = sorted(((j - shift) / scale, (j + 1 - shift) / scale))
            w = [max(0.0, min(hi, i + 1) - max(lo, i)) for i in range(m)]
            if 0 <= c <= m:
                out[j] = np.dot(w, x) / sum(w)
            continue
        if method == "cubic-pytorch":
            # PyTorch's edge: the edge pixels repeated twice past the border (as far as
            # the kernel reaches from a sample inside), JAX's weights summing to under
            # 1000 float32 epsilons taken as none (a sample beyond the repeats is 0)
            taps = range(-2, m + 2)
            w = [keys(abs(c - (i + 0.5)), -0.75) for i in taps]
            if abs(sum(w)) > 1000 * np.finfo(np.float32).eps:
                out[j] = sum(wi * x[min(max(i, 0), m - 1)] for wi, i in zip(w, taps)) / sum(w)
            continue
        width = max(1.0 / scale, 1.0) if antialias else 1.0
        w = [KERNEL[method](abs(c - (i + 0.5)) / width) for i in range(m)]
        if 0 <= c <= m:
            out[j] = np.dot(w, x) / sum(w)
    return out


def reference(x, shape, dims, scales, shifts, method, antialias):
    for d, s, t in zip(dims, scales, shifts):
        x = np.apply_along_axis(reference_1d, d, x, shape[d], s, t, method, antialias)
    return x


def reference_resize(x, shape, method, antialias=True):
    if method == "nearest":
        for d, (m, n) in enumerate(zip(x.shape, shape)):
            if m != n:
                x = np.take(x, [int((j + 0.5) * m / n) for j in range(n)], axis=d)
        return x
    dims = [d for d in range(x.ndim) if x.shape[d] != shape[d]]
    return reference(x * 1.0, shape, dims, [shape[d] / x.shape[d] for d in dims],
                     [0.0] * len(dims), method, antialias)


SHAPES = [((7,), (13,)), ((13,), (5,)), ((6, 5), (11, 3)), ((4, 5, 6), (9, 2, 6)),
          ((2, 9, 8, 3), (2, 4, 17, 3)), ((8,), (1,)), ((1,), (4,)), ((3, 4), (3, 4))]


# ---- values ------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS + ["nearest"])
@pytest.mark.parametrize("antialias", [True, False])
def test_resize_is_the_loop(method, antialias):
    for old, new in SHAPES:
        x = rng.normal(size=old)
        got = image.resize(x, new, method, antialias=antialias)
        assert got.shape == new
        assert_close(got, reference_resize(x, new, method, antialias), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("antialias", [True, False])
def test_scale_and_translate_is_the_loop(method, antialias):
    for _ in range(4):
        x = rng.normal(size=(9, 3, 7))
        scale = rng.uniform(0.3, 3.0, size=2)
        shift = rng.normal(size=2) * 3
        got = image.scale_and_translate(x, (8, 3, 10), (2, 0), scale, shift, method,
                                        antialias=antialias)
        want = reference(x, (8, 3, 10), (2, 0), scale, shift, method, antialias)
        assert_close(got, want, rtol=1e-12, atol=1e-13)


def test_resize_matches_jax_to_rounding(jax):
    for method in METHODS + ["nearest"]:
        for antialias in (True, False):
            for old, new in SHAPES[1::2] + SHAPES[2:3]:
                x = rng.normal(size=old)
                theirs = np.asarray(jax.image.resize(x, new, method, antialias=antialias))
                ours = image.resize(x, new, method, antialias=antialias)
                assert ours.dtype == theirs.dtype
                assert_close(ours, theirs, rtol=1e-12, atol=1e-13)
    for name, method in [("bilinear", "linear"), ("trilinear", "linear"),
                         ("bicubic", "cubic")]:
        x = rng.normal(size=(4, 5, 6))
        assert_close(image.resize(x, (9, 2, 6), name), image.resize(x, (9, 2, 6), method),
                     rtol=0, atol=0)


def test_scale_and_translate_matches_jax_also_in_its_derivatives(jax):
    import jax.numpy as jnp
    for method in METHODS:
        for antialias in (True, False):
            x = rng.normal(size=(6, 5))
            scale = rng.uniform(0.4, 2.5, size=2)
            if method != "area":         # (JAX's area takes no flip: see below)
                scale[0] *= -1
            shift = rng.normal(size=2) + np.array([6 * max(-scale[0], 0), 0])
            weights = rng.normal(size=(7, 4))

            def loss(lib, fn):
                return lambda x, s, t: lib.sum(fn(x, (7, 4), (0, 1), s, t, method,
                                                  antialias=antialias) * weights)
            ours = wg.grad(loss(wnp, image.scale_and_translate), argnums=(0, 1, 2))
            theirs = jax.grad(loss(jnp, jax.image.scale_and_translate), argnums=(0, 1, 2))
            assert_close(loss(wnp, image.scale_and_translate)(x, scale, shift),
                         loss(jnp, jax.image.scale_and_translate)(x, scale, shift),
                         rtol=1e-12)
            for a, b in zip(ours(x, scale, shift), theirs(x, scale, shift)):
                assert_close(a, np.asarray(b), rtol=1e-11, atol=1e-12)


def test_nearest_picks_jaxs_pixel_at_ties_and_on_large_axes(jax):
    # an output centre on the boundary of two input cells (10 -> 25: centres 2.5 m/n = 1
    # ...), and a long axis, where float32's rounding decides: JAX's choice each time
    for m, n in [(10, 25), (2, 41), (2, 1), (30, 29), (58, 27), (12345, 6789), (3, 100003)]:
        x = np.arange(m)
        theirs = np.asarray(jax.image.resize(x, (n,), "nearest"))
        np.testing.assert_array_equal(image.resize(x, (n,), "nearest"), theirs)


def test_where_wengert_and_jax_differ(jax):
    x = rng.normal(size=12)
    # Lanczos within 1e-3 of a pixel centre: JAX takes the kernel as 1 there, wengert
    # evaluates it: a few 1e-9 apart, and exact again at the centre
    for shift, apart in [(5e-4, 1e-11), (0.0, 0.0)]:
        ours = image.scale_and_translate(x, (12,), (0,), [1.0], [shift], "lanczos3",
                                         antialias=False)
        theirs = jax.image.scale_and_translate(x, (12,), (0,), np.ones(1), np.full(1, shift),
                                               "lanczos3", antialias=False)
        difference = np.abs(ours - np.asarray(theirs)).max()
        assert apart <= difference < 1e-8 if apart else difference < 1e-14
        assert_close(ours, reference(x, (12,), (0,), [1.0], [shift], "lanczos3", False),
                     rtol=1e-13, atol=1e-14)
    # area: JAX's image is 0 when upsampled more than ~8,000 times, or flipped
    x = np.array([1.0, 2.0, 3.0])
    assert image.resize(x, (30000,), "area")[[0, 15000, -1]].tolist() == [1.0, 2.0, 3.0]
    assert np.asarray(jax.image.resize(x, (30000,), "area")).max() == 0.0
    flipped = image.scale_and_translate(x, (3,), (0,), [-1.0], [3.0], "area")
    assert flipped.tolist() == [3.0, 2.0, 1.0]
    # integers give float64 (NumPy's promotion; JAX: float32 below int64)
    assert image.resize(np.ones((2, 2), np.uint8), (3, 3), "linear").dtype == np.float64


def test_dtypes_and_kept_axes():
    x = rng.normal(size=(2, 4, 4, 3))
    assert image.resize(x.astype(np.float32), (2, 8, 8, 3), "cubic").dtype == np.float32
    assert image.resize(x + 1j * x, (2, 2, 2, 3), "linear").dtype == np.complex128
    assert image.resize(x.astype(np.complex64), (2, 2, 2, 3), "area").dtype == np.complex64
    ints = (x * 10).astype(np.int16)
    assert image.resize(ints, (2, 8, 2, 3), "nearest").dtype == np.int16
    # batch and channel axes of shape's size are left alone: each image on its own
    got = image.resize(x, (2, 3, 5, 3), "lanczos3")
    for b in range(2):
        for c in range(3):
            assert_close(got[b, :, :, c], image.resize(x[b, :, :, c], (3, 5), "lanczos3"),
                         rtol=1e-13)
    assert image.resize(np.float64(2.0), (), "linear") == 2.0
    assert image.resize(x, (0, 4, 4, 3), "cubic").shape == (0, 4, 4, 3)
    same = image.resize(x, x.shape, "lanczos5")
    np.testing.assert_array_equal(same, x)
    # a constant image stays constant, up and down, with the filters whose weights are
    # normalised
    for method in METHODS:
        assert_close(image.resize(np.full((5, 7), 2.5), (9, 3), method), np.full((9, 3), 2.5),
                     rtol=1e-13)


# ---- derivatives -------------------------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS + ["nearest"])
def test_resize_derivatives_against_central_differences(method):
    x = rng.normal(size=(2, 5, 4))
    check_grads(lambda x: image.resize(x, (2, 3, 7), method), x)
    check_grads(lambda x: image.resize(x, (2, 8, 3), method, antialias=False), x)
    compiled = wg.compile(wg.grad(lambda x: wnp.sum(image.resize(x, (2, 3, 7), method) ** 2)))
    assert_close(compiled(x), wg.grad(lambda x: wnp.sum(image.resize(x, (2, 3, 7), method)
                                                        ** 2))(x), rtol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_scale_and_translate_derivatives_in_scale_and_translation(method):
    x = rng.normal(size=(6, 5))
    scale, shift = rng.uniform(0.4, 2.5, size=2), rng.normal(size=2)
    for antialias in (True, False):
        f = lambda x, s, t: image.scale_and_translate(x, (7, 4), (0, 1), s, t, method,
                                                      antialias=antialias)
        check_grads(f, x, scale, shift)
        traced = wg.compile(f)
        check_grads(lambda x, s, t: traced(x, s, t), x, scale, shift, order=1)


# ---- transformations ---------------------------------------------------------------------------
def test_under_vmap_and_jit():
    xs = rng.normal(size=(4, 6, 5))
    scales, shifts = rng.uniform(0.5, 2.0, size=(4, 2)), rng.normal(size=(4, 2))
    f = lambda x, s, t: image.scale_and_translate(x, (7, 4), (0, 1), s, t, "cubic")
    want = np.stack([f(*a) for a in zip(xs, scales, shifts)])
    assert_close(wg.vmap(f)(xs, scales, shifts), want, rtol=1e-13)
    assert_close(wg.jit(wg.vmap(f))(xs, scales, shifts), want, rtol=1e-13)
    assert_close(wg.vmap(f, in_axes=(0, None, None))(xs, scales[0], shifts[0]),
                 np.stack([f(x, scales[0], shifts[0]) for x in xs]), rtol=1e-13)
    for method in ("lanczos3", "nearest", "area"):
        r = lambda x: image.resize(x, (3, 9), method)
        assert_close(wg.vmap(r)(xs), np.stack([r(x) for x in xs]), rtol=1e-13)
        assert_close(wg.jit(r)(xs[0]), r(xs[0]), rtol=1e-13)
    per_example = wg.vmap(wg.grad(lambda x, s, t: wnp.sum(f(x, s, t) ** 2), argnums=1))
    assert_close(per_example(xs, scales, shifts),
                 np.stack([wg.grad(lambda s: wnp.sum(f(x, s, t) ** 2))(s)
                           for x, s, t in zip(xs, scales, shifts)]), rtol=1e-12)


# ---- errors ------------------------------------------------------------------------------------
def test_errors_name_what_is_wrong():
    x = np.zeros((3, 4))
    with pytest.raises(ValueError, match=r"resize: shape \(5,\) must have one size for each "
                                         r"axis of the image, of shape \(3, 4\)"):
        image.resize(x, (5,), "linear")
    with pytest.raises(ValueError, match="Unknown resize method 'bilinar': one of 'nearest'"):
        image.resize(x, (5, 4), "bilinar")
    with pytest.raises(TypeError, match="method must be a ResizeMethod or its name"):
        image.resize(x, (5, 4), 1)
    with pytest.raises(TypeError, match="shape must be a sequence of ints"):
        image.resize(x, (5.0, 4), "linear")
    with pytest.raises(TypeError, match="shape is traced .* mark it static"):
        wg.jit(image.resize, static_argnums=2)(x, (2, 2), "linear")
    assert wg.jit(image.resize, static_argnums=(1, 2))(x, (2, 2), "linear").shape == (2, 2)
    with pytest.raises(ValueError, match="negative size"):
        image.resize(x, (-1, 4), "linear")
    with pytest.raises(ValueError, match=r"axis 0 of the image of shape \(0, 4\) is empty"):
        image.resize(np.zeros((0, 4)), (3, 4), "linear")
    with pytest.raises(ValueError, match="nearest-neighbour resampling is not supported"):
        image.scale_and_translate(x, (5, 4), (0,), [2.0], [0.0], "nearest")
    with pytest.raises(ValueError, match=r"shape \(5, 6\) changes axis 1 .* not in "
                                         r"spatial_dims \(0,\)"):
        image.scale_and_translate(x, (5, 6), (0,), [2.0], [0.0])
    with pytest.raises(ValueError, match=r"scale must hold one number for each of the 1 "
                                         r"spatial_dims, shape \(1,\); got shape \(2,\)"):
        image.scale_and_translate(x, (5, 4), (0,), [2.0, 1.0], [0.0])
    with pytest.raises(ValueError, match=r"spatial_dims \(0, -2\) must be distinct axes"):
        image.scale_and_translate(x, (5, 4), (0, -2), [2.0, 2.0], [0.0, 0.0])
    with pytest.raises(ValueError, match="scale .* has a 0"):
        image.scale_and_translate(x, (5, 4), (0,), [0.0], [0.0])
    assert image.ResizeMethod.from_string("tricubic") is image.ResizeMethod.CUBIC
    with pytest.raises(ValueError, match="Unknown resize method 'BiCubic'"):
        image.ResizeMethod.from_string("BiCubic")
    with warnings.catch_warnings():
        warnings.simplefilter("error")     # (no division by zero on the way)
        assert image.scale_and_translate(np.zeros((0, 4)), (3, 4), (0,), [1.0], [0.0]).shape \
            == (3, 4)
        assert image.resize(x, (0, 2), "nearest").shape == (0, 2)
