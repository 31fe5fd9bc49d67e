"""wengert.scipy.signal: SciPy's values, derivatives against central differences (second
order, real and complex), closed forms, vmap, compile and clear errors (Taylor mode:
tests/test_taylor.py)."""
import re

import numpy as np
import pytest
import scipy.signal as ss

import wengert as wg
import wengert.numpy as wnp
from wengert import REGISTRY
from wengert.primitives import signal as P
from wengert.scipy import signal
from test_numpy import _ops_exercised
from fd import assert_close, check_grads, check_complex_grads

rng = np.random.default_rng(20261124)


def r(*shape):
    return rng.normal(size=shape)


def z(*shape):
    return rng.normal(size=shape) + 1j * rng.normal(size=shape)


def close(got, want, rtol=1e-12, atol=1e-12):
    """assert_close for complex values too (compared as complex)."""
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol)


# (shape of in1, shape of in2): even and odd lengths (where 'same' centres differently),
# in2 the larger ('valid' swaps), equal shapes, two and three axes
SHAPES = [((7,), (4,)), ((6,), (3,)), ((4,), (7,)), ((3,), (3,)), ((5, 6), (2, 3)),
          ((2, 3), (5, 6)), ((4, 4), (4, 4)), ((3, 4, 2), (2, 2, 2))]
FUNCTIONS = ["convolve", "correlate", "fftconvolve", "oaconvolve", "convolve2d", "correlate2d"]
CASES = [(fn, sa, sb, mode) for fn in FUNCTIONS for sa, sb in SHAPES
         for mode in ("full", "same", "valid") if len(sa) == 2 or not fn.endswith("2d")]


def _call(fn, mode):
    return lambda a, b: getattr(signal, fn)(a, b, mode)


@pytest.mark.parametrize("fn, sa, sb, mode", CASES)
def test_values_are_scipys_plain_and_traced(fn, sa, sb, mode):
    for a, b in ((r(*sa), r(*sb)), (z(*sa), r(*sb)), (z(*sa), z(*sb))):
        want = getattr(ss, fn)(a, b, mode)
        np.testing.assert_array_equal(getattr(signal, fn)(a, b, mode), want)   # SciPy's own
        f = _call(fn, mode)
        for got in (wg.vjp(f, a, b)[0], wg.trace(f, a, b)(a, b)):
            assert got.shape == want.shape and got.dtype == want.dtype
            if fn in ("convolve", "fftconvolve", "oaconvolve"):   # the same call of SciPy's
                np.testing.assert_array_equal(got, want)
            else:
                close(got, want)


@pytest.mark.parametrize("fn, sa, sb, mode", CASES)
def test_derivatives_against_finite_differences_to_second_order(fn, sa, sb, mode):
    check_grads(_call(fn, mode), r(*sa), r(*sb), order=2)


@pytest.mark.parametrize("fn, sa, sb, mode", [c for c in CASES if len(c[1]) < 3])
def test_complex_derivatives_against_finite_differences(fn, sa, sb, mode):
    check_complex_grads(_call(fn, mode), z(*sa), z(*sb), order=2)


def test_convolution_is_holomorphic_and_correlation_conjugates_its_kernel():
    a, b = z(5), z(3)
    jac = wg.jacfwd(lambda a: signal.convolve(a, b), holomorphic=True)(a)
    toeplitz = np.array([[b[n - k] if 0 <= n - k < 3 else 0 for k in range(5)]
                         for n in range(7)])
    close(jac, toeplitz, rtol=1e-14)
    # correlate(a, b) = convolve(a, reversed conj(b)): holomorphic in a (with conj(b) in
    # its Jacobian); in b its derivative is the conjugate's (tested with complex
    # differences above)
    jac = wg.jacfwd(lambda a: signal.correlate(a, b, "valid"), holomorphic=True)(a)
    close(jac, [[np.conj(b[k - n]) if 0 <= k - n < 3 else 0 for k in range(5)]
                for n in range(3)], rtol=1e-14)


def test_jacobian_in_either_argument_is_the_other_as_a_toeplitz_matrix():
    """y = a ∗ b: ∂y_n/∂a_k = b_(n-k), and a delta kernel gives the identity."""
    a, b = r(6), r(3)
    want = np.array([[b[n - k] if 0 <= n - k < 3 else 0.0 for k in range(6)]
                     for n in range(8)])
    for jac in (wg.jacfwd, wg.jacrev):
        assert_close(jac(lambda a: signal.convolve(a, b))(a), want, rtol=1e-14)
        assert_close(jac(lambda b: signal.convolve(a, b))(b),
                     [[a[n - k] if 0 <= n - k < 6 else 0.0 for k in range(3)]
                      for n in range(8)], rtol=1e-14)
    delta = np.array([0.0, 1.0, 0.0])
    assert_close(wg.jacrev(lambda a: signal.convolve(a, delta, "same"))(a), np.eye(6))


def test_deconvolution_by_one_newton_step_recovers_the_signal():
    """A blurred signal and the blur known: least squares in the signal is quadratic, so
    one Newton step with its Hessian (twice the blur's Toeplitz Gram matrix) from
    anywhere lands on the signal."""
    blur = np.array([0.25, 0.5, 0.25])
    truth = np.sin(np.linspace(0, 3, 12))
    seen = ss.convolve(truth, blur)
    loss = lambda x: wnp.sum((signal.convolve(x, blur) - seen) ** 2)
    x = r(12)
    x = x - np.linalg.solve(wg.hessian(loss)(x), wg.grad(loss)(x))
    assert_close(x, truth, rtol=1e-9, atol=1e-10)


# ---- vmap, compile, Taylor mode ----------------------------------------------------------------
_K = r(3)
VMAP = {
    "shared kernel": (lambda a: signal.convolve(a, _K), [r(4, 6)], False),
    "shared kernel, same": (lambda a: signal.convolve(a, _K, "same"), [r(4, 6)], False),
    "shared kernel, valid": (lambda a: signal.convolve(a, _K, "valid"), [r(4, 6)], False),
    "shared signal, full": (lambda b: signal.convolve(_K, b), [r(4, 2)], False),
    "shared kernel, correlate2d": (lambda a: signal.correlate2d(a, np.ones((2, 2))),
                                   [r(4, 3, 3)], False),
    "overlap-add, shared kernel": (lambda a: signal.oaconvolve(a, _K, "same"), [r(4, 6)],
                                   False),
    "both batched": (lambda a, b: signal.convolve(a, b, "same"), [r(4, 5), r(4, 3)], True),
    # ('same' keeps in1's shape, and 'valid' of a batched smaller array has no cover: a
    # batched kernel with a shared signal is a loop there)
    "batched kernel, same": (lambda b: signal.convolve(_K, b, "same"), [r(4, 2)], True),
    "batched kernel, valid": (lambda b: signal.convolve(_K, b, "valid"), [r(4, 2)], True),
}


@pytest.mark.parametrize("name", sorted(VMAP))
def test_vmap_matches_a_loop(name, loops):
    f, args, looped = VMAP[name]
    got = wg.vmap(f)(*args)
    assert_close(got, np.stack([f(*[x[k] for x in args]) for k in range(4)]), rtol=1e-12)
    argnums = tuple(range(len(args)))
    g = lambda *a: wnp.sum(f(*a) ** 2)
    batched = wg.vmap(wg.grad(g, argnums=argnums))(*args)
    for k in range(4):
        for b, o in zip(batched, wg.grad(g, argnums=argnums)(*[x[k] for x in args])):
            assert_close(b[k], o, rtol=1e-10, atol=1e-12)
    assert bool(loops) == looped, loops


@pytest.mark.parametrize("fn", ["correlate", "oaconvolve"])
def test_compile_matches_eager(fn):
    f = lambda a, b: wnp.sum(getattr(signal, fn)(a, b, "same") ** 3)
    a, b = r(6), r(3)
    assert_close(wg.compile(f, a, b)(a + 1, b), f(a + 1, b), rtol=1e-12)
    g = wg.grad(f, argnums=(0, 1))
    for c, e in zip(wg.compile(g, a, b)(a + 1, b), g(a + 1, b)):
        assert_close(c, e, rtol=1e-12)


def test_every_primitive_is_exercised():
    seen = set()
    for fn, sa, sb, mode in CASES:
        seen |= _ops_exercised(_call(fn, mode), [r(*sa), r(*sb)])
    seen |= _ops_exercised(signal.lfilter, [r(2), np.array([1.0, 0.5]), r(5)])
    declared = {name for name in P.__all__ if name in REGISTRY}     # (not those it imports)
    assert declared and declared <= seen, declared - seen


# ---- lfilter -----------------------------------------------------------------------------------
def _stable(n, rng_=rng, complex_=False):
    """A denominator whose poles are inside the unit circle, a₀ not 1 (SciPy normalises)."""
    poles = 0.8 * rng_.uniform(-1, 1, n - 1)
    if complex_:
        poles = poles * np.exp(1j * rng_.uniform(0, np.pi, n - 1))
    return 1.5 * np.poly(poles) if n > 1 else np.array([1.5])


# (len b, len a, x's shape, axis): FIR (a of length 1), more poles than zeros, a filter
# longer than the signal, several axes
LFILTER = [(3, 3, (7,), -1), (1, 3, (6,), -1), (4, 1, (6,), 0), (2, 4, (3,), -1),
           (3, 2, (2, 5), -1), (3, 2, (5, 2), 0), (2, 3, (2, 3, 4), 1)]


@pytest.mark.parametrize("nb, na, shape, axis", LFILTER)
def test_lfilter_values_are_scipys_and_derivatives_match_differences(nb, na, shape, axis):
    f = lambda b, a, x: signal.lfilter(b, a, x, axis=axis)
    b, a, x = r(nb), _stable(na), r(*shape)
    want = ss.lfilter(b, a, x, axis=axis)
    for got in (wg.vjp(f, b, a, x)[0], wg.trace(f, b, a, x)(b, a, x)):
        np.testing.assert_array_equal(got, want)                    # the same call of SciPy's
    check_grads(f, b, a, x, order=2)
    bz, az, xz = z(nb), _stable(na, complex_=True), z(*shape)
    np.testing.assert_array_equal(wg.vjp(f, bz, az, xz)[0], ss.lfilter(bz, az, xz, axis=axis))
    check_complex_grads(f, bz, az, xz, order=2)


def test_lfilter_closed_forms():
    """One pole p: the impulse response is p^n, its derivative in p is n p^(n-1); the
    Jacobian in the signal is the lower-triangular Toeplitz matrix of that response."""
    n, p = np.arange(8), 0.6
    impulse = np.eye(1, 8)[0]
    response = lambda p: signal.lfilter([1.0], wnp.stack([1.0, -p]), impulse)
    assert_close(response(p), p ** n, rtol=1e-15)
    for jac in (wg.jacfwd, wg.jacrev):
        assert_close(jac(response)(p), n * p ** np.maximum(n - 1, 0), rtol=1e-14)
        assert_close(jac(lambda x: signal.lfilter([1.0], [1.0, -p], x))(np.zeros(8)),
                     [[p ** (i - j) if i >= j else 0.0 for j in range(8)] for i in range(8)],
                     rtol=1e-14)
    assert_close(wg.grad(wg.grad(lambda p: response(p)[3]))(p), 6 * p, rtol=1e-13)
    # the gain of the numerator: y is linear in b
    x = r(8)
    assert_close(wg.jacrev(lambda b: signal.lfilter(b, [1.0, -p], x))(np.array([2.0, 0.5])),
                 np.stack([ss.lfilter([1.0], [1.0, -p], x),
                           ss.lfilter([0.0, 1.0], [1.0, -p], x)], axis=1), rtol=1e-14)


def test_lfilter_fits_a_filter_to_its_response_by_gauss_newton():
    """The coefficients of a two-pole filter recovered from its response to noise."""
    x = r(200)
    b_true, a_true = np.array([0.5, 0.2]), np.array([1.0, -0.9, 0.4])
    seen = ss.lfilter(b_true, a_true, x)
    residual = lambda p: signal.lfilter(p[:2], wnp.concatenate([np.ones(1), p[2:]]), x) - seen
    p = np.array([1.0, 0.0, 0.0, 0.0])
    for _ in range(12):
        J = wg.jacfwd(residual)(p)
        p = p - np.linalg.lstsq(J, residual(p), rcond=None)[0]
    assert_close(p, [0.5, 0.2, -0.9, 0.4], rtol=1e-10, atol=1e-12)


def test_lfilter_under_vmap_and_compile(loops):
    b, a, xs = r(3), _stable(3), r(4, 6)
    f = lambda x: signal.lfilter(b, a, x)
    assert_close(wg.vmap(f)(xs), ss.lfilter(b, a, xs), rtol=1e-14)
    assert not loops                                # (signals batched: one call)
    bs = r(4, 3)
    got = wg.vmap(lambda b, x: signal.lfilter(b, a, x))(bs, xs)
    assert_close(got, np.stack([ss.lfilter(bb, a, x) for bb, x in zip(bs, xs)]), rtol=1e-14)
    g = wg.grad(lambda b, a, x: wnp.sum(signal.lfilter(b, a, x, axis=0) ** 3), argnums=(0, 1, 2))
    for c, e in zip(wg.compile(g)(b, a, xs.T), g(b, a, xs.T)):
        assert_close(c, e, rtol=1e-12)
    # no samples: the derivatives are zeros
    gb, gx = wg.grad(lambda b, x: wnp.sum(signal.lfilter(b, a, x)), argnums=(0, 1))(b, r(0))
    assert gb.tolist() == [0.0] * 3 and gx.shape == (0,)


@pytest.mark.parametrize("shape, axis", [((30,), -1), ((3, 20), -1), ((20, 2), 0)])
def test_sosfilt_is_a_cascade_of_lfilters(shape, axis):
    sos = ss.butter(4, 0.3, output="sos")
    x = r(*shape)
    f = lambda sos, x: signal.sosfilt(sos, x, axis=axis)
    close(wg.vjp(f, sos, x)[0], ss.sosfilt(sos, x, axis=axis), rtol=1e-13, atol=1e-14)
    # (the sections' leading denominators stay 1, as SciPy asks)
    g = lambda num, den, x: f(wnp.concatenate([num, np.ones((2, 1)), den], axis=1), x)
    check_grads(g, sos[:, :3], sos[:, 4:], x, order=2)
    # the one-row form SciPy accepts
    one = sos[0]
    close(wg.vjp(lambda x: signal.sosfilt(one, x), x)[0], ss.sosfilt(one, x), rtol=1e-13,
          atol=1e-14)
    assert_close(wg.vmap(lambda x: signal.sosfilt(sos, x))(r(3, 10)).shape, (3, 10))


# (len b, len a, x's shape, axis, zi's shape): the state longer than the signal, zi
# broadcast along another axis
LFILTER_ZI = [(3, 3, (7,), -1, (2,)), (2, 4, (2,), -1, (3,)), (3, 2, (5, 2), 0, (2, 1)),
              (1, 3, (2, 6), -1, (2, 2))]


@pytest.mark.parametrize("nb, na, shape, axis, zi_shape", LFILTER_ZI)
def test_lfilter_from_a_state_returns_scipys_output_and_state(nb, na, shape, axis, zi_shape):
    b, a, x, zi = r(nb), 1.5 * _stable(na), r(*shape), r(*zi_shape)
    f = lambda b, a, x, zi: signal.lfilter(b, a, x, axis=axis, zi=zi)
    want = ss.lfilter(b, a, x, axis=axis, zi=zi)
    for got in (wg.vjp(f, b, a, x, zi)[0], wg.trace(f, b, a, x, zi)(b, a, x, zi)):
        close(got[0], want[0], rtol=1e-13, atol=1e-14)
        close(got[1], want[1], rtol=1e-13, atol=1e-14)
    check_grads(lambda *args: wnp.concatenate([v.ravel() for v in f(*args)]), b, a, x, zi,
                order=2)


def test_lfilter_zi_is_the_steady_state_of_a_step():
    # from lfilter_zi(b, a) a unit step stays at its steady gain Σb/Σa from the start
    b, a = r(3), _stable(3)
    zi = signal.lfilter_zi(b, a)
    close(wg.vjp(lambda b, a: signal.lfilter_zi(b, a), b, a)[0], ss.lfilter_zi(b, a),
          rtol=1e-13, atol=1e-15)
    step = lambda b, a: signal.lfilter(b, a, np.ones(6), zi=signal.lfilter_zi(b, a))[0]
    close(wg.vjp(step, b, a)[0], np.full(6, b.sum() / a.sum()), rtol=1e-12, atol=1e-14)
    # so its derivatives are those of the gain, at every sample
    gain = lambda b, a: wnp.sum(b) / wnp.sum(a)
    for i in range(2):
        close(wg.jacrev(step, argnums=i)(b, a),
              np.tile(wg.grad(gain, argnums=i)(b, a), (6, 1)), rtol=1e-10, atol=1e-12)
    check_grads(lambda b, a: signal.lfilter_zi(b, a), b, a, order=2)
    assert_close(zi, ss.lfilter_zi(b, a), rtol=1e-13)          # (plain values: SciPy's)


@pytest.mark.parametrize("padtype, padlen, shape, axis", [
    ("odd", None, (40,), -1), ("even", 7, (40,), -1), ("constant", None, (3, 25), -1),
    (None, None, (20, 2), 0)])
def test_filtfilt_is_scipys_and_differentiable_in_filter_and_signal(padtype, padlen, shape,
                                                                     axis):
    b, a = ss.butter(3, 0.25)
    x = r(*shape)
    f = lambda b, a, x: signal.filtfilt(b, a, x, axis=axis, padtype=padtype, padlen=padlen)
    want = ss.filtfilt(b, a, x, axis=axis, padtype=padtype, padlen=padlen)
    close(wg.vjp(f, b, a, x)[0], want, rtol=1e-12, atol=1e-13)
    check_grads(f, b, a, x, order=2, rtol=1e-5, atol=1e-6)
    # zero phase: a sinusoid well inside the pass band comes out unshifted, scaled by the
    # square of the gain, and its derivative in x (linear) is the same filter
    if shape == (40,):
        t = np.arange(40)
        wave = np.sin(2 * np.pi * t / 40)
        J = wg.jacfwd(lambda x: f(b, a, x))(x)
        close(J @ wave, f(b, a, wave), rtol=1e-12, atol=1e-13)
        assert np.argmax(f(b, a, wave)[5:35]) == np.argmax(wave[5:35])


# (sos, padtype, padlen, x's shape, axis): an odd order (a section with b₂ = a₂ = 0, which
# SciPy's default padlen discounts), a band pass, every padtype
SOSFILTFILT = [(ss.butter(4, 0.2, output="sos"), "odd", None, (60,), -1),
               (ss.butter(3, 0.3, "high", output="sos"), "even", None, (3, 40), -1),
               (ss.cheby1(2, 1.0, [0.1, 0.4], "band", output="sos"), "constant", 12, (50, 2), 0),
               (ss.butter(2, 0.25, output="sos"), None, None, (30,), -1)]


@pytest.mark.parametrize("sos, padtype, padlen, shape, axis", SOSFILTFILT)
def test_sosfiltfilt_is_scipys_and_differentiable_in_sections_and_signal(sos, padtype, padlen,
                                                                        shape, axis):
    x = r(*shape)
    f = lambda num, den, x: signal.sosfiltfilt(
        wnp.concatenate([num, np.ones((len(sos), 1)), den], axis=1), x, axis=axis,
        padtype=padtype, padlen=padlen)
    want = ss.sosfiltfilt(sos, x, axis=axis, padtype=padtype, padlen=padlen)
    close(wg.vjp(f, sos[:, :3], sos[:, 4:], x)[0], want, rtol=1e-12, atol=1e-13)
    close(wg.trace(lambda x: f(sos[:, :3], sos[:, 4:], x), x)(x), want, rtol=1e-12, atol=1e-13)
    # in the signal it is linear: its Jacobian applied to a signal is the filter's output
    if len(shape) == 1:
        J = wg.jacfwd(lambda x: f(sos[:, :3], sos[:, 4:], x))(x)
        wave = np.sin(2 * np.pi * np.arange(shape[0]) / 25)
        close(J @ wave, ss.sosfiltfilt(sos, wave, padtype=padtype, padlen=padlen),
              rtol=1e-11, atol=1e-12)
    # (with SciPy's default padlen fixed: it counts the zeros of sos, which a finite
    # difference in b₂ or a₂ would move by a jump)
    zeros = min((sos[:, 2] == 0).sum(), (sos[:, 5] == 0).sum())
    fixed = 3 * (2 * len(sos) + 1 - zeros) if padlen is None else padlen
    g = lambda num, den, x: signal.sosfiltfilt(
        wnp.concatenate([num, np.ones((len(sos), 1)), den], axis=1), x, axis=axis,
        padtype=padtype, padlen=fixed)
    check_grads(g, sos[:, :3], sos[:, 4:], x, order=2 if shape == (30,) else 1, rtol=1e-5,
                atol=1e-6)


def test_sosfilt_zi_is_the_steady_state_of_a_step():
    sos = ss.cheby1(4, 0.5, 0.3, output="sos")
    zi = wg.vjp(signal.sosfilt_zi, sos)[0]
    close(zi, ss.sosfilt_zi(sos), rtol=1e-13, atol=1e-14)
    y, zf = signal.sosfilt(sos, np.ones(6), zi=zi)      # at rest: the gain at 0 throughout
    close(y, np.full(6, np.prod(sos[:, :3].sum(1) / sos[:, 3:].sum(1))), rtol=1e-12)
    num = lambda n, d: signal.sosfilt_zi(wnp.concatenate([n, np.ones((2, 1)), d], axis=1))
    check_grads(num, sos[:, :3], sos[:, 4:], order=2)
    # SciPy's sosfilt_zi takes any leading coefficient, as each section's a[0]
    scaled = sos * np.array([[1.0], [2.5]])
    close(wg.vjp(signal.sosfilt_zi, scaled)[0], ss.sosfilt_zi(scaled), rtol=1e-13)
    check_grads(signal.sosfilt_zi, scaled, order=2)


def test_sosfiltfilt_default_padlen_needs_the_values_of_sos():
    sos, x = ss.butter(2, 0.3, output="sos"), r(30)
    with pytest.raises(wg.ConcretizationError, match="pass padlen"):
        wg.trace(lambda s: signal.sosfiltfilt(s, x), sos)
    got = wg.trace(lambda s: signal.sosfiltfilt(s, x, padlen=9), sos)(sos)
    close(got, ss.sosfiltfilt(sos, x), rtol=1e-12, atol=1e-13)      # (SciPy's default, 9)


SAVGOL = [(w, p, d, mode) for w, p in ((5, 2), (4, 2), (7, 3), (3, 0), (6, 1))
          for d in (0, 1, 2) for mode in ("interp", "mirror", "nearest", "wrap", "constant")]


@pytest.mark.parametrize("w, p, deriv, mode", SAVGOL)
def test_savgol_filter_is_scipys_linear_map(w, p, deriv, mode):
    # odd and even windows (which SciPy centres a sample to the left), every mode;
    # linear in x, so the Jacobian is SciPy's filter applied to each unit signal
    for n in (w, 11):
        x = r(2, n)
        f = lambda x: signal.savgol_filter(x, w, p, deriv=deriv, delta=0.5, axis=1, mode=mode,
                                           cval=0.3)
        want = ss.savgol_filter(x, w, p, deriv=deriv, delta=0.5, axis=1, mode=mode, cval=0.3)
        close(wg.trace(f, x)(x), want, rtol=1e-13, atol=5e-14)
        J = wg.jacfwd(lambda v: signal.savgol_filter(v, w, p, deriv=deriv, delta=0.5,
                                                     mode=mode, cval=0.0))(x[0])
        close(J, ss.savgol_filter(np.eye(n), w, p, deriv=deriv, delta=0.5, mode=mode,
                                  cval=0.0).T, rtol=1e-12, atol=1e-13)


def test_savgol_filter_in_cval_delta_and_float32():
    x = r(9, 3)
    f = lambda x, cval, delta: signal.savgol_filter(x, 5, 3, deriv=1, delta=delta, axis=0,
                                                    mode="constant", cval=cval)
    close(wg.vjp(f, x, 0.4, 0.2)[0],
          ss.savgol_filter(x, 5, 3, deriv=1, delta=0.2, axis=0, mode="constant", cval=0.4),
          rtol=1e-13, atol=1e-13)
    check_grads(f, x, np.array(0.4), np.array(0.2), order=2)
    # the derivative in delta: the k-th derivative filter scales as delta⁻ᵏ
    g = wg.grad(lambda d: wnp.sum(signal.savgol_filter(x[:, 0], 5, 2, deriv=2, delta=d)))(0.5)
    close(g, -2 / 0.5 * np.sum(ss.savgol_filter(x[:, 0], 5, 2, deriv=2, delta=0.5)),
          rtol=1e-12)
    x32 = x.astype(np.float32)
    got = wg.vjp(lambda x: signal.savgol_filter(x, 5, 2, axis=0), x32)[0]
    assert got.dtype == np.float32
    close(got, ss.savgol_filter(x32, 5, 2, axis=0), rtol=1e-5, atol=1e-5)
    ints = np.arange(12)                    # (SciPy's: integers are filtered as float64)
    close(wg.vjp(lambda c: signal.savgol_filter(ints, 5, 2, mode="constant", cval=c), 0.0)[0],
          ss.savgol_filter(ints, 5, 2, mode="constant"), rtol=1e-13, atol=1e-13)


def test_filtfilt_and_sosfilt_with_state_under_vmap_and_compile():
    b, a = ss.butter(2, 0.3)
    xs = r(3, 20)
    close(wg.vmap(lambda x: signal.filtfilt(b, a, x))(xs), ss.filtfilt(b, a, xs),
          rtol=1e-12, atol=1e-13)
    g = wg.grad(lambda a, x: wnp.sum(signal.filtfilt(b, a, x) ** 2), argnums=(0, 1))
    for c, e in zip(wg.compile(g)(a, xs[0]), g(a, xs[0])):
        assert_close(c, e, rtol=1e-12)
    sos, zi = ss.butter(4, 0.3, output="sos"), r(2, 2)
    f = lambda sos, x, zi: signal.sosfilt(sos, x, zi=zi)
    want = ss.sosfilt(sos, xs[0], zi=zi)
    got = wg.vjp(f, sos, xs[0], zi)[0]
    close(got[0], want[0], rtol=1e-13, atol=1e-14)
    close(got[1], want[1], rtol=1e-13, atol=1e-14)
    num = lambda n, d, x, zi: f(wnp.concatenate([n, np.ones((2, 1)), d], axis=1), x, zi)
    check_grads(lambda *a: wnp.concatenate([v.ravel() for v in num(*a)]),
                sos[:, :3], sos[:, 4:], xs[0], zi, order=2)
    # sosfiltfilt and savgol_filter batched and compiled
    close(wg.vmap(lambda x: signal.sosfiltfilt(sos, x))(xs), ss.sosfiltfilt(sos, xs),
          rtol=1e-12, atol=1e-13)
    close(wg.vmap(lambda x: signal.savgol_filter(x, 5, 2))(xs), ss.savgol_filter(xs, 5, 2),
          rtol=1e-12, atol=1e-13)
    g = wg.grad(lambda x: wnp.sum(signal.sosfiltfilt(sos, x) ** 2))
    close(wg.compile(g, xs[0])(xs[1]), g(xs[1]), rtol=1e-12, atol=1e-13)


# ---- errors and what is SciPy's ----------------------------------------------------------------
@pytest.mark.parametrize("call, args, error, match", [
    (lambda a, b: signal.convolve(a, b, "middle"), [r(3), r(2)], ValueError,
     "acceptable mode flags are 'valid', 'same', or 'full', got 'middle'"),
    (lambda a, b: signal.convolve(a, b, method="slow"), [r(3), r(2)], ValueError,
     "acceptable method flags are 'auto', 'direct', or 'fft', got 'slow'"),
    (lambda a, b: signal.convolve(a, b), [r(3), r(2, 2)], ValueError,
     r"same dimensionality, got shapes \(3,\) and \(2, 2\)"),
    (lambda a, b: signal.correlate(a, b, "valid"), [r(3, 1), r(2, 2)], ValueError,
     r"at least as large as the other in every dimension, got shapes \(3, 1\) and \(2, 2\)"),
    (lambda a, b: signal.convolve2d(a, b), [r(3), r(2)], ValueError,
     r"convolve2d inputs must both be 2-D arrays, got shapes \(3,\) and \(2,\)"),
    (lambda a, b: signal.convolve2d(a, b, boundary="wrap"), [r(3, 3), r(2, 2)],
     NotImplementedError, r"convolve2d\(..., boundary='wrap'\) is not supported"),
    (lambda a, b: signal.correlate2d(a, b, fillvalue=1.0), [r(3, 3), r(2, 2)],
     NotImplementedError, r"correlate2d\(..., fillvalue=1.0\) is not supported"),
    (lambda a, b: signal.fftconvolve(a, b, axes=1), [r(2, 3), r(1, 2)],
     NotImplementedError, "fftconvolve over some of the axes .* use wg.vmap"),
    (lambda a, b: signal.oaconvolve(a, b, axes=(0,)), [r(2, 3), r(1, 2)],
     NotImplementedError, "oaconvolve over some of the axes .* use wg.vmap"),
    (lambda a, b: signal.lfilter(b, [1.0], a, zi=np.zeros(2)), [r(5), r(2)],
     ValueError, r"Unexpected shape for zi: expected \(1,\), found \(2,\)"),
    (lambda a, b: signal.lfilter(b, [1.0], a, zi=np.zeros((1, 1))), [r(5), r(2)],
     ValueError, r"Unexpected shape for zi: expected \(1,\), found \(1, 1\)"),
    (lambda a, b: signal.lfilter_zi(b, [1.0]), [r(5), r(1)], ValueError,
     "The length of `a` along the last axis must be at least 2"),
    (lambda a, b: signal.lfilter_zi(b, [0.0, 0.0]), [r(5), r(2)], ValueError,
     "There must be at least one nonzero `a` coefficient"),
    (lambda a, b: signal.filtfilt(b, [1.0, 0.5], a), [r(5), r(2)], ValueError,
     "The length of the input vector x must be greater than padlen, which is 6"),
    (lambda a, b: signal.filtfilt(b, [1.0, 0.5], a, padtype="wrap"), [r(9), r(2)], ValueError,
     "Unknown value 'wrap' given to padtype"),
    (lambda a, b: signal.filtfilt(b, [1.0, 0.5], a, method="gust"), [r(9), r(2)],
     NotImplementedError, r"filtfilt\(..., method='gust'\) is not supported"),
    (lambda a, b: signal.lfilter(np.ones((2, 2)), b, a), [r(5), r(2)], ValueError,
     r"Parameter b is not a non-empty 1d array, since b.shape=\(2, 2\)"),
    (lambda a, b: signal.lfilter(b, [], a), [r(5), r(2)], ValueError,
     r"Parameter a is not a non-empty 1d array, since a.shape=\(0,\)"),
    (lambda a, b: signal.lfilter(b, [1.0], a, axis=1), [r(5), r(2)], ValueError,
     r"selected axis is out of range: axis=1 of x of shape \(5,\)"),
    (lambda a, b: signal.lfilter(b, [0.0, 1.0], a), [r(5), r(2)], ValueError,
     r"a\[0\] == 0"),
    (lambda a, b: signal.sosfilt(np.ones((1, 6)), a, zi=np.zeros((2, 2))), [r(5), r(2)],
     ValueError, r"zi must have shape \(1, 2\), got \(2, 2\)"),
    (lambda a, b: signal.sosfilt(np.ones((2, 5)), a), [r(5), r(2)], ValueError,
     r"sos array must be shape \(n_sections, 6\), got \(2, 5\)"),
    (lambda a, b: signal.sosfilt(2 * np.ones((1, 6)), a), [r(5), r(2)], ValueError,
     r"sos\[:, 3\] should be all ones"),
    (lambda a, b: signal.medfilt(a, 3), [r(5), r(2)], NotImplementedError,
     "scipy.signal.medfilt is not supported on traced values"),
    (lambda a, b: signal.sosfiltfilt(ss.butter(2, 0.3, output="sos"), a), [r(9), r(2)],
     ValueError, "The length of the input vector x must be greater than padlen, which is 9"),
    (lambda a, b: signal.sosfiltfilt(np.ones((1, 6)), a, padtype="wrap"), [r(9), r(2)],
     ValueError, "Unknown value 'wrap' given to padtype"),
    (lambda a, b: signal.sosfilt_zi(wnp.stack([a, a])), [r(5), r(2)], ValueError,
     r"sos must be shape \(n_sections, 6\), got \(2, 5\)"),
    (lambda a, b: signal.savgol_filter(a, 7, 2), [r(5), r(2)], ValueError,
     "If mode is 'interp', window_length must be less than or equal to the size of x"),
    (lambda a, b: signal.savgol_filter(a, 3, 3), [r(5), r(2)], ValueError,
     "polyorder must be less than window_length"),
    (lambda a, b: signal.savgol_filter(a, 3, 1, mode="reflect"), [r(5), r(2)], ValueError,
     "mode must be 'mirror', 'constant', 'nearest' 'wrap' or 'interp'"),
])
def test_clear_errors_on_traced_values(call, args, error, match):
    with pytest.raises(error, match=match):
        wg.vjp(call, *args)


def test_plain_values_and_the_rest_of_scipy_signal_are_scipys():
    a, b = r(5), r(2)
    np.testing.assert_array_equal(signal.lfilter(b, [1.0], a), ss.lfilter(b, [1.0], a))
    np.testing.assert_array_equal(signal.convolve2d(r(3, 3) * 0 + 1, np.ones((2, 2)),
                                                    boundary="wrap"),
                                  ss.convolve2d(np.ones((3, 3)), np.ones((2, 2)),
                                                boundary="wrap"))
    assert signal.convolve(2.0, 3.0) == 6.0
    assert wg.grad(lambda x: signal.convolve(x, 3.0))(2.0) == 3.0     # numbers: a product
    fftconv = wg.grad(lambda a: wnp.sum(signal.fftconvolve(a, b, axes=(0,)) ** 2))(a)
    assert_close(fftconv, wg.grad(lambda a: wnp.sum(signal.convolve(a, b) ** 2))(a))
    with pytest.raises(AttributeError):
        signal.not_a_function


def test_lfilter_takes_a_number_for_b_or_a_as_scipys():
    # the FIR idiom lfilter(taps, 1.0, x) and a one-pole smoother raised on traced values
    x, taps = r(30), r(4)
    close(wg.vjp(lambda t: signal.lfilter(t, 1.0, x), taps)[0], ss.lfilter(taps, 1.0, x))
    check_grads(lambda t, x: signal.lfilter(t, 1.0, x), taps, x, order=2)
    check_grads(lambda p: signal.lfilter(1 - p, wnp.stack([1.0, -p]), x), 0.6, order=2)
    close(wg.vjp(lambda p: signal.lfilter(1 - p, wnp.stack([1.0, -p]), x), 0.6)[0],
          ss.lfilter(0.4, [1.0, -0.6], x))


@pytest.mark.parametrize("name", ["fftconvolve", "oaconvolve"])
def test_fft_convolutions_check_axes_as_scipy(name):
    # (an axis out of range was taken modulo the rank: a full convolution, silently)
    x1, x2 = r(6), r(3)
    m1, m2 = r(4, 5), r(2, 3)
    for a, b, axes in ((x1, x2, 5), (x1, x2, -2), (m1, m2, (0, 3)), (x1, x2, []),
                       (m1, m2, (0, 0, 1))):
        with pytest.raises(ValueError) as want:
            getattr(ss, name)(a, b, axes=axes)
        with pytest.raises(ValueError, match=str(want.value)):
            wg.vjp(lambda a: getattr(signal, name)(a, b, axes=axes), a)
    close(wg.vjp(lambda a: getattr(signal, name)(a, x2, axes=np.int64(0)), x1)[0],
          getattr(ss, name)(x1, x2, axes=0))


def test_empty_convolutions_give_scipys_empty_result():
    for name in ("fftconvolve", "oaconvolve"):
        got = wg.vjp(lambda x: getattr(signal, name)(x, np.ones(3)), np.zeros(0))[0]
        assert got.shape == getattr(ss, name)(np.zeros(0), np.ones(3)).shape == (0,)


@pytest.mark.parametrize("name", ["convolve2d", "correlate2d"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("shapes", [((0, 3), (2, 2)), ((2, 3), (0, 2)), ((0, 0), (2, 2)),
                                    ((3, 3), (2, 0)), ((0, 3), (0, 2))])
def test_2d_convolutions_of_empty_arrays_are_scipys(name, mode, shapes):
    # zeros whatever the values, of the shape SciPy gives (it can be (1, 4) for (0, 3)
    # and (2, 2)), or SciPy's error; the gradient flows only through the other terms
    a, b = (np.ones(s) for s in shapes)
    try:
        want = getattr(ss, name)(a, b, mode)
    except ValueError as e:
        with pytest.raises(ValueError, match=re.escape(str(e))):
            wg.vjp(lambda x, y: getattr(signal, name)(x, y, mode), a, b)
        return
    got = []
    grads = wg.grad(lambda x, y: wnp.sum(got.append(getattr(signal, name)(x, y, mode)) or
                                         got[-1]) + wnp.sum(x * y[:1, :1] if y.size else x),
                    argnums=(0, 1))(a, b)
    assert got[0].shape == want.shape and got[0].dtype == want.dtype
    assert np.array_equal(got[0], want)
    assert grads[0].shape == a.shape and grads[1].shape == b.shape


@pytest.mark.parametrize("mode", ["mirror", "constant", "nearest", "wrap", "interp"])
def test_savgol_of_an_empty_array_is_empty(mode):
    for shape, axis in (((0,), -1), ((3, 0), -1), ((0, 3), 0), ((0, 6), -1)):
        x = np.zeros(shape, np.float32)
        if mode == "interp" and shape[axis] < 5:
            with pytest.raises(ValueError, match="window_length must be less than"):
                wg.vjp(lambda x: signal.savgol_filter(x, 5, 2, mode=mode, axis=axis), x)
            continue
        y, back = wg.vjp(lambda x: signal.savgol_filter(x, 5, 2, mode=mode, axis=axis), x)
        assert y.shape == shape and y.dtype == np.float32 and back(y)[0].shape == shape
        if mode != "interp" or shape != (0, 6):   # (SciPy's LAPACK call fails on (0, 6))
            assert ss.savgol_filter(x, 5, 2, mode=mode, axis=axis).shape == shape


def test_sos_leading_ones_are_constants():
    # their gradient was large, so a step along it left SciPy's domain; compiled, a value
    # other than 1 was normalised where SciPy raises: now nan
    sos, x = ss.butter(3, 0.3, output="sos"), r(12)
    g = wg.grad(lambda s: wnp.sum(signal.sosfilt(s, x) ** 2))(sos)
    assert np.array_equal(g[:, 3], np.zeros(len(sos))) and np.abs(g[:, [0, 4]]).max() > 0
    bad = sos.copy()
    bad[0, 3] = 2.0
    with pytest.raises(ValueError, match="sos\\[:, 3\\] should be all ones"):
        wg.vjp(lambda s: signal.sosfilt(s, x), bad)
    assert np.isnan(wg.compile(lambda s: signal.sosfilt(s, x))(bad)).all()
    close(wg.compile(lambda s: signal.sosfilt(s, x))(sos), ss.sosfilt(sos, x))


def test_filter_states_and_savgol_keep_scipys_dtypes():
    b, a = ss.butter(2, 0.2)
    b32, a32 = b.astype(np.float32), a.astype(np.float32)
    for f in (lambda b: signal.lfilter_zi(b, a32),
              lambda b: signal.filtfilt(b, a32, np.ones(20, np.float32))):
        assert wg.vjp(f, b32)[0].dtype == np.float32
    x16 = r(9).astype(np.float16)
    assert wg.vjp(lambda x: signal.savgol_filter(x, 5, 2), x16)[0].dtype == \
        ss.savgol_filter(x16, 5, 2).dtype == np.float64


def test_two_d_boundaries_are_checked_as_scipys():
    a, k = r(5, 6), r(2, 3)
    for name in ("convolve2d", "correlate2d"):
        ours, theirs = getattr(signal, name), getattr(ss, name)
        for kw in ({"boundary": "wrap"}, {"boundary": "symm"}, {"fillvalue": 2.0},
                   {"fillvalue": [0.0]}):
            close(wg.vjp(lambda a: ours(a, k, "valid", **kw), a)[0], theirs(a, k, "valid", **kw))
        with pytest.raises(ValueError, match="Acceptable boundary flags"):
            wg.vjp(lambda a: ours(a, k, boundary="bogus"), a)
        with pytest.raises(ValueError, match="must be scalar or an array with one element"):
            wg.vjp(lambda a: ours(a, k, fillvalue=[1.0, 2.0]), a)
        with pytest.raises(NotImplementedError, match="fillvalue"):
            wg.grad(lambda c: wnp.sum(ours(a, k, fillvalue=c)))(0.0)


def test_a_window_of_one_differentiates_in_every_mode():
    # (vmap's matmul of an empty row reshaped with -1, which NumPy cannot solve for)
    for n in (5, 12):
        x = r(n)
        assert np.array_equal(wg.jacrev(lambda x: signal.savgol_filter(x, 1, 0))(x),
                              np.eye(n))
    out = wg.vmap(lambda x: x[:1] @ np.zeros((1, 0)))(np.ones((8, 8)))
    assert out.shape == (8, 0)
