"""wengert.numpy.fft: every function against NumPy's values (bit for bit) and dtypes, its
derivatives against central differences to second order and against the exact transpose
of NumPy's own map (docs/complex.md's convention), closed forms, and NumPy's errors."""
import warnings

import numpy
import pytest

import wengert as wg
import wengert.numpy as wnp
from fd import check_complex_grads

rng = numpy.random.default_rng(20261124)

NORMS = [None, "backward", "ortho", "forward"]


def data(shape, kind):
    """A random array: "r" real, "c" complex (float64 / complex128); "r32", "c32" the
    single-precision ones."""
    x = rng.normal(size=shape)
    if kind[0] == "c":
        x = x + 1j * rng.normal(size=shape)
    if kind.endswith("32"):
        x = x.astype(numpy.complex64 if kind[0] == "c" else numpy.float32)
    return x


# (name, the call with fft the module, shape, input kinds); each runs on numpy.fft and on
# wengert.numpy.fft alike.  Even and odd lengths, n and s cropping and padding, negative
# axes and every norm.
CASES = [
    ("fft", lambda f, x: f.fft(x), (6,), "rc"),
    ("fft odd", lambda f, x: f.fft(x, norm="ortho"), (7,), "rc"),
    ("fft pad", lambda f, x: f.fft(x, 9, 0, "forward"), (5, 3), "rc"),
    ("fft crop", lambda f, x: f.fft(x, 3, -2), (5, 3), "rc"),
    ("fft axis", lambda f, x: f.fft(x, axis=1, norm="backward"), (2, 4, 3), "rc"),
    ("ifft", lambda f, x: f.ifft(x), (6,), "rc"),
    ("ifft pad", lambda f, x: f.ifft(x, 8, -1, "ortho"), (3, 5), "rc"),
    ("ifft crop", lambda f, x: f.ifft(x, 2, 0, "forward"), (5, 3), "rc"),
    ("fft2", lambda f, x: f.fft2(x), (4, 5), "rc"),
    ("fft2 s", lambda f, x: f.fft2(x, (3, 7), norm="ortho"), (2, 4, 5), "rc"),
    ("ifft2", lambda f, x: f.ifft2(x, axes=(0, -1), norm="forward"), (4, 2, 3), "rc"),
    ("fftn", lambda f, x: f.fftn(x), (3, 4, 2), "rc"),
    ("fftn s", lambda f, x: f.fftn(x, (2, 6), (2, 0), "ortho"), (3, 4, 5), "rc"),
    ("fftn -1", lambda f, x: f.fftn(x, (-1, 3), (0, 1)), (3, 4), "rc"),
    ("fftn axis twice", lambda f, x: f.fftn(x, (3, 5, 2), (1, 0, 1)), (3, 4), "rc"),
    ("ifftn", lambda f, x: f.ifftn(x, axes=(-1, -3), norm="forward"), (3, 4, 2), "rc"),
    ("ifftn s", lambda f, x: f.ifftn(x, (5, 2), (0, 1)), (3, 4), "rc"),
    ("rfft", lambda f, x: f.rfft(x), (6,), "r"),
    ("rfft odd", lambda f, x: f.rfft(x, norm="ortho"), (7,), "r"),
    ("rfft pad", lambda f, x: f.rfft(x, 10, 0, "forward"), (5, 2), "r"),
    ("rfft pad odd", lambda f, x: f.rfft(x, 9, -1), (2, 5), "r"),
    ("rfft crop", lambda f, x: f.rfft(x, 4, -2, "ortho"), (7, 2), "r"),
    ("rfft n=1", lambda f, x: f.rfft(x, 1), (3,), "r"),
    ("rfft n=2", lambda f, x: f.rfft(x, 2, norm="forward"), (3,), "r"),
    ("irfft", lambda f, x: f.irfft(x), (4,), "rc"),
    ("irfft odd", lambda f, x: f.irfft(x, 7, norm="ortho"), (4,), "rc"),
    ("irfft pad", lambda f, x: f.irfft(x, 12, 0, "forward"), (4, 2), "c"),
    ("irfft crop", lambda f, x: f.irfft(x, 5, -1), (2, 6), "c"),
    ("irfft n=1", lambda f, x: f.irfft(x, 1), (3,), "c"),
    ("irfft n=2", lambda f, x: f.irfft(x, 2, norm="ortho"), (1,), "c"),
    ("rfft2", lambda f, x: f.rfft2(x), (4, 6), "r"),
    ("rfft2 s", lambda f, x: f.rfft2(x, (3, 5), norm="ortho"), (2, 4, 6), "r"),
    ("irfft2", lambda f, x: f.irfft2(x), (4, 3), "c"),
    ("irfft2 s", lambda f, x: f.irfft2(x, (5, 7), (0, 1), "forward"), (4, 3, 2), "c"),
    ("rfftn", lambda f, x: f.rfftn(x), (3, 2, 4), "r"),
    ("rfftn s", lambda f, x: f.rfftn(x, (4, 3), (-1, 0), "forward"), (3, 2, 5), "r"),
    ("irfftn", lambda f, x: f.irfftn(x), (3, 2, 4), "c"),
    ("irfftn s", lambda f, x: f.irfftn(x, (2, 7), (2, -3), "ortho"), (3, 2, 4), "rc"),
    ("irfftn axis twice", lambda f, x: f.irfftn(x, (3, 4, 6), (0, 1, 0)), (3, 4), "c"),
    ("hfft", lambda f, x: f.hfft(x), (4,), "rc"),
    ("hfft odd", lambda f, x: f.hfft(x, 7, 0, "ortho"), (4, 2), "c"),
    ("hfft crop", lambda f, x: f.hfft(x, 3, norm="forward"), (2, 5), "c"),
    ("ihfft", lambda f, x: f.ihfft(x), (6,), "r"),
    ("ihfft pad", lambda f, x: f.ihfft(x, 9, 0, "forward"), (5, 2), "r"),
    ("ihfft crop", lambda f, x: f.ihfft(x, 3, norm="ortho"), (5,), "r"),
    ("fftshift", lambda f, x: f.fftshift(x), (4, 5), "rc"),
    ("fftshift axis", lambda f, x: f.fftshift(x, -1), (4, 5), "rc"),
    ("fftshift axes", lambda f, x: f.fftshift(x, (0, 2)), (3, 2, 5), "rc"),
    ("ifftshift", lambda f, x: f.ifftshift(x), (5, 3), "rc"),
    ("ifftshift axis", lambda f, x: f.ifftshift(x, axes=0), (5, 3), "rc"),
]

PARAMS = [pytest.param(f, shape, kind, id=f"{name}-{kind}")
          for name, f, shape, kinds in CASES for kind in kinds]


def traced(f, x):
    """f's value on a traced x (eagerly traced, as grad traces it)."""
    return wg.vjp(lambda x: f(wnp.fft, x), x)[0]


# ---- values ------------------------------------------------------------------------------------
@pytest.mark.parametrize("f, shape, kind", PARAMS)
def test_traced_values_are_numpys_bit_for_bit(f, shape, kind):
    for k in (kind, kind + "32"):
        x = data(shape, k)
        expected = f(numpy.fft, x)
        got = traced(f, x)
        assert type(got) is numpy.ndarray and got.dtype == expected.dtype
        assert got.shape == expected.shape
        assert numpy.array_equal(got, expected)
        compiled = wg.compile(lambda x: f(wnp.fft, x))(x)        # (abstractly traced)
        assert compiled.dtype == expected.dtype and numpy.array_equal(compiled, expected)


def test_plain_calls_are_numpys_own():
    x = data((4, 6), "r")
    for name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "fftn",
                 "ifftn", "rfft2", "irfft2", "rfftn", "irfftn", "fftshift", "ifftshift"):
        assert numpy.array_equal(getattr(wnp.fft, name)(x), getattr(numpy.fft, name)(x))
    assert numpy.array_equal(wnp.fft.fft([1.0, 2.0]), numpy.fft.fft([1.0, 2.0]))
    out = numpy.empty(6, complex)
    assert wnp.fft.fft(x[0], out=out) is out                    # NumPy's out= works
    assert wnp.fft.fftfreq is numpy.fft.fftfreq and wnp.fft.rfftfreq is numpy.fft.rfftfreq


def test_the_module_resolves_and_numpys_functions_dispatch_to_it():
    import wengert.numpy.fft as wfft
    assert wnp.fft is wfft
    x = data((8,), "r")
    # NumPy's own functions on a traced value record wengert's primitives
    g = wg.grad(lambda x: numpy.sum(numpy.abs(numpy.fft.fft(x)) ** 2))(x)
    numpy.testing.assert_allclose(g, 2 * 8 * x, rtol=1e-12)
    g = wg.grad(lambda x: numpy.sum(numpy.fft.fftshift(x) * numpy.arange(8.0)))(x)
    numpy.testing.assert_array_equal(g, numpy.fft.ifftshift(numpy.arange(8.0)))
    assert "rfft" in str(wg.trace(lambda x: numpy.fft.irfft(numpy.fft.rfft(x)), x))


# ---- derivatives ------------------------------------------------------------------------------
@pytest.mark.parametrize("f, shape, kind", PARAMS)
def test_derivatives_to_second_order(f, shape, kind):
    check_complex_grads(lambda x: f(wnp.fft, x), data(shape, kind))


def _exact_vjp(f, x, ct):
    """The VJP of the linear map f (NumPy's function) at cotangent ct, from f applied to
    each unit vector: x̄_j = Re Σ ct·f(e_j) - i Re Σ ct·f(i e_j) (Re(x̄·t) = Re Σ ct·f(t)
    for every t; only the real part for a real x)."""
    out = numpy.zeros(x.shape, complex)
    for j in numpy.ndindex(x.shape):
        e = numpy.zeros(x.shape, x.dtype)
        e[j] = 1
        out[j] = numpy.sum(ct * f(e)).real
        if x.dtype.kind == "c":
            out[j] -= 1j * numpy.sum(ct * f(1j * e)).real
    return out if x.dtype.kind == "c" else out.real


@pytest.mark.parametrize("f, shape, kind", PARAMS)
def test_vjp_is_the_exact_transpose_of_numpys_map(f, shape, kind):
    # every bin: irfft reads no imaginary part of DC and Nyquist, rfft has them twice, ...
    x = data(shape, kind)
    y = f(numpy.fft, x)
    ct = data(y.shape, "c" if y.dtype.kind == "c" else "r")
    (got,) = wg.vjp(lambda x: f(wnp.fft, x), x)[1](ct)
    assert got.dtype == x.dtype
    numpy.testing.assert_allclose(got, _exact_vjp(lambda v: f(numpy.fft, v), x, ct),
                                  rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("f, shape, kind", PARAMS)
def test_the_vjp_rules_differentiate_in_the_cotangent(f, shape, kind):
    # (the second-order check above differentiates in x, where a linear map's VJP is
    # constant: here the rules' own JVPs and VJPs are checked)
    x = data(shape, kind)
    y = f(numpy.fft, x)
    ct = data(y.shape, "c" if y.dtype.kind == "c" else "r")
    check_complex_grads(lambda c: wg.vjp(lambda x: f(wnp.fft, x), x)[1](c)[0], ct)


@pytest.mark.parametrize("kind", ["r32", "c32"])
def test_single_precision_stays_single(kind):
    x = data((6,), kind)
    y, back = wg.vjp(lambda x: wnp.fft.fft(x, 8), x)
    assert y.dtype == numpy.complex64
    assert back(numpy.ones(8, numpy.complex64))[0].dtype == x.dtype
    x = data((6,), "r32")
    g = wg.grad(lambda x: wnp.sum(wnp.fft.irfft(wnp.fft.rfft(x) * 2.0) ** 2))(x)
    assert g.dtype == numpy.float32
    numpy.testing.assert_allclose(g, 8 * x, rtol=1e-5)


# ---- closed forms ------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [5, 8])
def test_parseval(n):
    # Σ|X|² = N Σ|x|²: the gradient is 2N x for a real x and 2N conj(z) for a complex z
    x, z = data((n,), "r"), data((n,), "c")
    energy = lambda x: wnp.sum(wnp.abs(wnp.fft.fft(x)) ** 2)
    numpy.testing.assert_allclose(wg.grad(energy)(x), 2 * n * x, rtol=1e-12)
    numpy.testing.assert_allclose(wg.grad(energy)(z), 2 * n * numpy.conj(z), rtol=1e-12)
    unitary = lambda x: wnp.sum(wnp.abs(wnp.fft.fftn(x, norm="ortho")) ** 2)
    numpy.testing.assert_allclose(wg.grad(unitary)(x), 2 * x, rtol=1e-12)
    # the half spectrum of a real x holds DC (and Nyquist) once and the other bins for
    # two: Σ w|X|² with those weights is Σ x² again, gradient 2x
    w = numpy.full(n // 2 + 1, 2.0)
    w[0] = 1
    if n % 2 == 0:
        w[-1] = 1
    half = lambda x: wnp.sum(w * wnp.abs(wnp.fft.rfft(x, norm="ortho")) ** 2)
    numpy.testing.assert_allclose(half(x), numpy.sum(x ** 2), rtol=1e-12)
    numpy.testing.assert_allclose(wg.grad(half)(x), 2 * x, rtol=1e-12)


@pytest.mark.parametrize("k", [0, 1, 3, 4])
def test_gradient_of_one_bin_is_a_cosine(k):
    n = 8
    j = numpy.arange(n)
    x = data((n,), "r")
    for f in (wnp.fft.fft, wnp.fft.rfft):
        g = wg.grad(lambda x: wnp.real(f(x)[k]))(x)
        numpy.testing.assert_allclose(g, numpy.cos(2 * numpy.pi * k * j / n), atol=1e-12)
        g = wg.grad(lambda x: wnp.imag(f(x)[k]))(x)
        numpy.testing.assert_allclose(g, -numpy.sin(2 * numpy.pi * k * j / n), atol=1e-12)
    # and of one sample of an inverse: ifft's is exp(2πijk/N)/N, conjugated by the
    # convention's -i for the imaginary part
    z = data((n,), "c")
    g = wg.grad(lambda z: wnp.real(wnp.fft.ifft(z)[k]))(z)
    numpy.testing.assert_allclose(g, numpy.exp(2j * numpy.pi * k * j / n) / n, atol=1e-12)


def test_irfft_ignores_the_imaginary_parts_of_dc_and_nyquist():
    y = data((5,), "c")                           # n = 8: bins 0 and 4 are DC and Nyquist
    g = wg.grad(lambda y: wnp.sum(wnp.fft.irfft(y) * numpy.arange(8.0)))(y)
    assert g[0].imag == 0 and g[-1].imag == 0
    # the same function without those parts: the same gradient
    y2 = y.copy()
    y2[[0, -1]] = y2[[0, -1]].real
    numpy.testing.assert_allclose(numpy.fft.irfft(y), numpy.fft.irfft(y2), atol=1e-15)


def test_a_spectral_fit_converges():
    # fit a signal whose spectrum is known in one bin by gradient descent on a spectral loss
    n = 16
    t = numpy.arange(n)
    target = numpy.fft.rfft(numpy.cos(2 * numpy.pi * 3 * t / n))
    loss = lambda x: wnp.sum(wnp.abs(wnp.fft.rfft(x) - target) ** 2)
    x = numpy.zeros(n)
    for _ in range(100):
        x = x - 0.02 * wg.grad(loss)(x)
    numpy.testing.assert_allclose(x, numpy.cos(2 * numpy.pi * 3 * t / n), atol=1e-6)


def test_compiled_gradient_equals_eager():
    x = data((3, 10), "r")
    f = lambda x: wnp.sum(wnp.abs(wnp.fft.rfft2(x, (4, 9), norm="ortho")) ** 3)
    g = wg.grad(f)
    compiled = wg.compile(g)
    numpy.testing.assert_allclose(compiled(x), g(x), rtol=1e-13)
    numpy.testing.assert_allclose(compiled(x * 2), g(x * 2), rtol=1e-13)
    h = lambda z: wnp.sum(wnp.real(wnp.fft.ifftn(z) * wnp.fft.fftshift(z)))
    z = data((4, 5), "c")
    numpy.testing.assert_allclose(wg.compile(wg.grad(h))(z), wg.grad(h)(z), rtol=1e-13)


# ---- NumPy's errors ------------------------------------------------------------------------------
ERRORS = [
    ("bad norm", lambda f, x: f.fft(x, norm="unitary")),
    ("bad norm hfft", lambda f, x: f.hfft(x, norm="x")),
    ("n = 0", lambda f, x: f.fft(x, 0)),
    ("n < 0", lambda f, x: f.rfft(x, -2)),
    ("float n", lambda f, x: f.ifft(x, 4.0)),
    ("bool n", lambda f, x: f.fft(x, True)),
    ("irfft of one bin", lambda f, x: f.irfft(x[:, :1])),
    ("axis out of range", lambda f, x: f.fft(x, axis=2)),
    ("negative axis out of range", lambda f, x: f.irfft(x, 4, axis=-3)),
    ("s and axes of different lengths", lambda f, x: f.fftn(x, (2, 3), (0,))),
    ("s not a sequence", lambda f, x: f.fftn(x, 3)),
    ("s length 0", lambda f, x: f.rfftn(x, (0, 4), (0, 1))),
    ("rfftn of no axes", lambda f, x: f.rfftn(x, axes=())),
    ("irfftn of no axes", lambda f, x: f.irfftn(x, axes=())),
    ("rfft of complex", lambda f, x: f.rfft(x + 1j)),
    ("ihfft of complex", lambda f, x: f.ihfft(x + 1j)),
    ("fftshift axis out of range", lambda f, x: f.fftshift(x, 3)),
]


@pytest.mark.parametrize("call", [pytest.param(c, id=name) for name, c in ERRORS])
def test_bad_arguments_raise_numpys_errors(call):
    x = data((4, 6), "r")
    with pytest.raises(Exception) as numpys:
        call(numpy.fft, x)
    with pytest.raises(numpys.type):
        wg.grad(lambda x: wnp.sum(wnp.abs(call(wnp.fft, x))))(x)


def test_deprecated_arguments_warn_as_numpy_does():
    x = data((4, 6), "r")
    for call in (lambda f, x: f.fftn(x, (2, 3)), lambda f, x: f.fftn(x, (2, None), (0, 1))):
        with pytest.warns(DeprecationWarning):
            expected = call(numpy.fft, x)
        with pytest.warns(DeprecationWarning):
            assert numpy.array_equal(traced(call, x), expected)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        traced(lambda f, x: f.fftn(x, (2, 3), (0, 1)), x)


def test_out_is_refused_on_traced_values():
    x = data((4,), "r")
    with pytest.raises(NotImplementedError, match=r"numpy\.fft\.fft\(\.\.\., out=\.\.\.\)"):
        traced(lambda f, x: f.fft(x, out=numpy.empty(4, complex)), x)


def test_no_axes_is_the_array_itself():
    x = data((3, 4), "r")
    assert numpy.array_equal(traced(lambda f, x: f.fftn(x, axes=()), x),
                             numpy.fft.fftn(x, axes=()))


def test_a_traced_float_is_no_length_or_index():
    # (it was truncated: n = 6.7 ran as 6, with a zero derivative; NumPy refuses 6.7)
    x = numpy.arange(4.0)
    with pytest.raises(TypeError, match="dtype float64 cannot be interpreted as an integer"):
        wg.grad(lambda n: wnp.sum(wnp.abs(wnp.fft.fft(x, n=n))))(6.7)
    with pytest.raises(IndexError, match="only integers"):       # (NumPy's, for v[2.9])
        wg.grad(lambda v, i: v[i] * i, argnums=(0, 1))(numpy.arange(5.0), 2.9)
    # an integer one is a length, as NumPy's
    g = wg.grad(lambda x, n: wnp.sum(wnp.abs(wnp.fft.fft(x, n=n)) ** 2))(x, numpy.int64(6))
    numpy.testing.assert_allclose(g, 2 * 6 * x, rtol=1e-13, atol=1e-12)   # Parseval: 6·Σx²
