"""wengert.scipy: SciPy's special functions and distributions, differentiable.

Values equal SciPy's on plain and on traced arguments; every function's derivatives
against central finite differences (second order too), closed forms, dtypes, compile
against eager, Taylor rules against sympy, and the errors (SciPy missing included)."""
import functools
import importlib
import math
import sys
import warnings

import numpy as np
import pytest
import scipy.special as sc
import scipy.stats as st
import sympy as sp

import wengert as wg
from wengert.codegen.emit import EmitError
from wengert.primitives import special as P
from wengert.scipy import special, stats
from fd import assert_close, check_grads, fd_derivative

rng = np.random.default_rng(20260412)


def uniform(lo, hi, n=5):
    return rng.uniform(lo, hi, size=n)


# name -> (wengert function, SciPy function, sampler per argument): the unary and binary
# special functions, each at points inside its domain and away from poles
SPECIAL = {
    "erf": (special.erf, sc.erf, (lambda: uniform(-2, 2),)),
    "erfc": (special.erfc, sc.erfc, (lambda: uniform(-2, 2),)),
    "erfinv": (special.erfinv, sc.erfinv, (lambda: uniform(-0.9, 0.9),)),
    "gammaln": (special.gammaln, sc.gammaln, (lambda: uniform(0.3, 6),)),
    "gammaln_negative": (special.gammaln, sc.gammaln, (lambda: uniform(-2.9, -2.1),)),
    "digamma": (special.digamma, sc.digamma, (lambda: uniform(0.3, 6),)),
    "psi": (special.psi, sc.psi, (lambda: uniform(0.3, 6),)),
    "polygamma1": (functools.partial(special.polygamma, 1),
                   functools.partial(sc.polygamma, 1), (lambda: uniform(0.3, 6),)),
    "polygamma3": (functools.partial(special.polygamma, 3),
                   functools.partial(sc.polygamma, 3), (lambda: uniform(0.5, 6),)),
    "gamma": (special.gamma, sc.gamma, (lambda: uniform(0.3, 4),)),
    "rgamma": (special.rgamma, sc.rgamma, (lambda: uniform(0.3, 4),)),
    "expit": (special.expit, sc.expit, (lambda: uniform(-5, 5),)),
    "logit": (special.logit, sc.logit, (lambda: uniform(0.05, 0.95),)),
    "ndtr": (special.ndtr, sc.ndtr, (lambda: uniform(-3, 3),)),
    "log_ndtr": (special.log_ndtr, sc.log_ndtr, (lambda: uniform(-8, 3),)),
    "erfcx": (special.erfcx, sc.erfcx, (lambda: uniform(-3, 8),)),
    # erfcx's derivatives (wengert's own), on both sides of x = 1, where the recurrence
    # turns from forward to backward
    "erfcx_derivative1": (lambda x: P.erfcx_derivative(x, n=1),
                          lambda x: P._erfcx_derivative_np(x, 1), (lambda: uniform(-3, 8),)),
    "erfcx_derivative4": (lambda x: P.erfcx_derivative(x, n=4),
                          lambda x: P._erfcx_derivative_np(x, 4), (lambda: uniform(-2, 4),)),
    # log_ndtr's (wengert's own), on both sides of 0, where the forms change
    "log_ndtr_derivative1": (lambda x: P.log_ndtr_derivative(x, n=1),
                             lambda x: P._log_ndtr_derivative_np(x, 1),
                             (lambda: uniform(-6, 3),)),
    "log_ndtr_derivative3": (lambda x: P.log_ndtr_derivative(x, n=3),
                             lambda x: P._log_ndtr_derivative_np(x, 3),
                             (lambda: uniform(-4, 3),)),
    "xlogy": (special.xlogy, sc.xlogy, (lambda: uniform(-2, 2), lambda: uniform(0.2, 3))),
    "xlog1py": (special.xlog1py, sc.xlog1py,
                (lambda: uniform(-2, 2), lambda: uniform(-0.8, 3))),
    "betaln": (special.betaln, sc.betaln, (lambda: uniform(0.3, 5), lambda: uniform(0.3, 5))),
    "beta": (special.beta, sc.beta, (lambda: uniform(0.3, 5), lambda: uniform(0.3, 5))),
    # (betaln's partial, ψ(a) - ψ(a + b), at negative a too, where it is the plain
    # difference; its values are checked against mpmath's below)
    "betaln_da": (P.betaln_da, P._betaln_da_np,
                  (lambda: uniform(-2.7, 5), lambda: uniform(3.0, 5))),
    # the incomplete functions and t's distribution function, in x (their shapes are
    # parameters here: the derivatives in them are not written, see the cdf tests)
    # (a in x's dtype: SciPy's gammainc of a float32 array beside a Python float is float64)
    "gammainc": (lambda x: special.gammainc(np.asarray(2.5, x.dtype), x),
                 lambda x: sc.gammainc(np.asarray(2.5, x.dtype), x), (lambda: uniform(0.1, 6),)),
    "gammaincc": (lambda x: special.gammaincc(np.asarray(0.7, x.dtype), x),
                  lambda x: sc.gammaincc(np.asarray(0.7, x.dtype), x),
                  (lambda: uniform(0.1, 6),)),
    "betaincc": (lambda x: special.betaincc(0.7, 2.5, x), lambda x: sc.betaincc(0.7, 2.5, x),
                 (lambda: uniform(0.05, 0.95),)),
    "betainc": (lambda x: special.betainc(0.7, 2.5, x), lambda x: sc.betainc(0.7, 2.5, x),
                (lambda: uniform(0.05, 0.95),)),
    "stdtr": (lambda x: special.stdtr(3.0, x), lambda x: sc.stdtr(3.0, x),
              (lambda: uniform(-4, 4),)),
    # the incomplete functions' partials in the shapes (wengert's own), here in x (in the
    # shapes: their tests below)
    "gammainc_da": (lambda x: P.gammainc_da(3.5, x), lambda x: P._gammainc_da_np(3.5, x),
                    (lambda: uniform(0.1, 8),)),
    "betainc_da": (lambda x: P.betainc_da(1.5, 2.5, x),
                   lambda x: P._betainc_da_np(1.5, 2.5, x), (lambda: uniform(0.05, 0.95),)),
    "betainc_db": (lambda x: P.betainc_db(1.5, 2.5, x),
                   lambda x: P._betainc_db_np(1.5, 2.5, x), (lambda: uniform(0.05, 0.95),)),
    # log1p(x) - x (wengert's own: no SciPy function)
    "log1pmx": (P.log1pmx, P._log1pmx_np, (lambda: uniform(-0.9, 3),)),
    # Γ(a+b) < 0 there: B(a, b) is negative
    "beta negative": (special.beta, sc.beta,
                      (lambda: uniform(-1.45, -1.3), lambda: uniform(0.55, 0.65))),
    "i0": (special.i0, sc.i0, (lambda: uniform(-4, 4),)),
    "i1": (special.i1, sc.i1, (lambda: uniform(-4, 4),)),
    "i0e": (special.i0e, sc.i0e, (lambda: uniform(-4, 4),)),
    "i1e": (special.i1e, sc.i1e, (lambda: uniform(-4, 4),)),
    "iv2.5": (functools.partial(special.iv, 2.5), functools.partial(sc.iv, 2.5),
              (lambda: uniform(0.2, 4),)),
    "iv3": (functools.partial(special.iv, 3), functools.partial(sc.iv, 3),
            (lambda: uniform(-4, 4),)),
    "ive2": (functools.partial(special.ive, 2), functools.partial(sc.ive, 2),
             (lambda: uniform(-4, 4),)),
    "j0": (special.j0, sc.j0, (lambda: uniform(-6, 6),)),
    "j1": (special.j1, sc.j1, (lambda: uniform(-6, 6),)),
    "y0": (special.y0, sc.y0, (lambda: uniform(0.3, 6),)),
    "y1": (special.y1, sc.y1, (lambda: uniform(0.3, 6),)),
    "jv2.5": (functools.partial(special.jv, 2.5), functools.partial(sc.jv, 2.5),
              (lambda: uniform(0.2, 6),)),
    "jv-3": (functools.partial(special.jv, -3), functools.partial(sc.jv, -3),
             (lambda: uniform(-6, 6),)),
    "jn2": (functools.partial(special.jn, 2), functools.partial(sc.jn, 2),
            (lambda: uniform(-6, 6),)),
    "yv1.5": (functools.partial(special.yv, 1.5), functools.partial(sc.yv, 1.5),
              (lambda: uniform(0.3, 6),)),
    "yn3": (functools.partial(special.yn, 3), functools.partial(sc.yn, 3),
            (lambda: uniform(0.5, 6),)),
    "erfcinv": (special.erfcinv, sc.erfcinv, (lambda: uniform(0.1, 1.9),)),
    "gammasgn": (special.gammasgn, sc.gammasgn, (lambda: uniform(-2.9, 3),)),
    "multigammaln3": (lambda a: special.multigammaln(a, 3), lambda a: sc.multigammaln(a, 3),
                      (lambda: np.float64(uniform(1.5, 5, 1)[0]),)),
}
PRIMITIVES = {"erf", "erfc", "erfinv", "gammaln", "gammaln_negative", "digamma", "psi",
              "polygamma1", "polygamma3", "gamma", "rgamma", "expit", "logit", "ndtr",
              "log_ndtr", "xlogy", "xlog1py", "beta", "beta negative", "betaln", "i0", "i1",
              "i0e", "i1e", "iv2.5", "iv3", "ive2", "gammainc", "gammaincc", "betainc", "betaincc",
              "stdtr", "log1pmx", "gammainc_da", "betainc_da", "betainc_db", "j0", "j1",
              "y0", "y1", "jv2.5", "jv-3", "jn2", "yv1.5", "erfcinv", "gammasgn",
              "erfcx_derivative1", "erfcx_derivative4", "log_ndtr_derivative1",
              "log_ndtr_derivative3"}


def _args(name):
    return [s() for s in SPECIAL[name][2]]


@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_special_values_equal_scipys_plain_and_traced(name):
    f, ref, _ = SPECIAL[name]
    args = _args(name)
    expected = ref(*args)
    plain = f(*args)
    assert type(plain) is type(expected)
    np.testing.assert_array_equal(plain, expected)
    traced = wg.trace(f, *args)
    exact = name in PRIMITIVES        # the primitives are SciPy's ufuncs themselves
    for got in (traced(*args), wg.value_and_grad(lambda *a: np.sum(f(*a)))(*args)[0]):
        if exact:
            np.testing.assert_array_equal(np.sum(got) if np.ndim(got) == 0 else got,
                                          np.sum(expected) if np.ndim(got) == 0 else expected)
        else:
            assert_close(np.sum(got), np.sum(expected), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_special_derivatives_against_finite_differences_to_second_order(name):
    f = SPECIAL[name][0]
    check_grads(f, *_args(name), order=2, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["erf", "gammaln", "expit", "log_ndtr", "xlogy", "polygamma1",
                                  "i1e", "iv2.5", "j0", "yv1.5", "erfcinv"])
def test_special_third_derivative_is_differentiable_again(name):
    f = SPECIAL[name][0]
    x = [np.float64(a[0]) for a in _args(name)]
    d2 = wg.grad(wg.grad(lambda *a: f(*a)))
    d3 = wg.grad(lambda *a: d2(*a))
    h = 1e-5
    expected = (d2(x[0] + h, *x[1:]) - d2(x[0] - h, *x[1:])) / (2 * h)
    assert_close(d3(*x), expected, rtol=1e-5, atol=1e-5)


def test_closed_forms():
    euler = 0.5772156649015329
    assert wg.grad(special.erf)(0.0) == pytest.approx(2 / math.sqrt(math.pi), rel=1e-15)
    assert wg.grad(special.erfinv)(0.0) == pytest.approx(math.sqrt(math.pi) / 2, rel=1e-15)
    for n in range(1, 8):                     # ψ(n) = -γ + H(n-1)
        harmonic = sum(1 / k for k in range(1, n))
        assert wg.grad(special.gammaln)(float(n)) == pytest.approx(-euler + harmonic, rel=1e-14)
    assert wg.grad(wg.grad(special.gammaln))(1.0) == pytest.approx(math.pi ** 2 / 6, rel=1e-14)
    assert wg.grad(special.gamma)(1.0) == pytest.approx(-euler, rel=1e-14)
    assert wg.grad(special.expit)(0.0) == 0.25
    assert wg.grad(special.logit)(0.5) == 4.0
    # d/dx norm.logpdf = -(x - μ)/σ², d/dμ = (x - μ)/σ², d/dσ = -1/σ + (x - μ)²/σ³
    x, mu, s = 1.3, -0.4, 0.7
    got = wg.grad(stats.norm.logpdf, argnums=(0, 1, 2))(x, mu, s)
    assert_close(got, [-(x - mu) / s ** 2, (x - mu) / s ** 2, -1 / s + (x - mu) ** 2 / s ** 3],
                 rtol=1e-14, atol=0)
    assert wg.grad(stats.norm.cdf)(0.0) == pytest.approx(1 / math.sqrt(2 * math.pi), rel=1e-15)


def test_no_overflow_or_cancellation_in_the_tails():
    assert wg.grad(special.expit)(800.0) == 0.0 and wg.grad(special.expit)(-800.0) == 0.0
    assert wg.grad(special.expit)(40.0) == pytest.approx(math.exp(-40.0), rel=1e-12)
    # d log Φ(x) = φ(x)/Φ(x), about -x for x << 0; exp(-x²/2 - log Φ) loses the last
    # digits of x²/2 in the difference: about 1e-16·x² relative
    import mpmath
    for x in (-40.0, -1e3, -1e5):
        with mpmath.workdps(50):
            exact = float(mpmath.npdf(x) / mpmath.ncdf(x))
        assert wg.grad(special.log_ndtr)(x) == pytest.approx(exact, rel=1e-13 + 1e-15 * x * x)
    assert wg.grad(special.log_ndtr)(40.0) == 0.0
    assert wg.grad(stats.norm.logcdf)(-50.0) == pytest.approx(50.02, abs=1e-3)


def test_xlogy_at_zero():
    assert special.xlogy(0.0, 0.0) == 0.0
    assert wg.grad(special.xlogy, argnums=1)(0.0, 0.0) == 0.0
    assert wg.grad(special.xlog1py, argnums=1)(0.0, -1.0) == 0.0
    assert wg.grad(wg.grad(special.xlogy, argnums=1), argnums=1)(0.0, 0.0) == 0.0
    assert wg.grad(special.xlogy, argnums=(0, 1))(2.0, 4.0) == (math.log(4.0), 0.5)


def test_rgamma_beta_and_betaln_are_scipys_at_poles_infinities_and_large_arguments():
    # (once compositions: 1/gamma was nan at the poles of Γ, and gammaln(a) + gammaln(b) -
    # gammaln(a + b) nan at poles and infinities and without digits for a large argument)
    edge = np.array([0.0, -1.0, -2.0, -3.5, -np.inf, -1e300, 1e-300, 2.5, 200.0, np.inf, np.nan])
    a, b = (g.ravel() for g in np.meshgrid(edge, np.append(edge, [1e15, 2.0])))
    for f, ref, args in ((special.rgamma, sc.rgamma, (edge,)), (special.beta, sc.beta, (a, b)),
                         (special.betaln, sc.betaln, (a, b))):
        with np.errstate(all="ignore"):
            expected = ref(*args)
            for got in (f(*[wg.Graph().input(x) for x in args]).value,
                        wg.compile(f, *args)(*args)):
                np.testing.assert_array_equal(got, expected)
    assert wg.trace(special.betaln, 1e15, 2.0)(1e15, 2.0) == pytest.approx(
        -math.log(1e15 * (1e15 + 1)), rel=1e-15)


def test_betaln_and_beta_partials_keep_their_digits_for_large_a_and_small_b():
    # ψ(a) - ψ(a + b) cancels where it is small beside ψ(a): the plain difference was off
    # by 9e-5 at (1e12, 2) and by 1e-6 at (1, 1e-10); mpmath's is the reference
    import mpmath
    rng = np.random.default_rng(7)
    cases = [(1e12, 2.0), (1.0, 1e-10), (0.2, 4e-5), (3e7, 1e-3), (-2.5, 1.2), (5.0, -2.5)]
    cases += [tuple(10 ** rng.uniform(-6, 14, 2)) for _ in range(40)]
    for a, b in cases:
        with mpmath.workdps(40):
            ab = mpmath.mpf(a) + mpmath.mpf(b)
            exact = [float(mpmath.digamma(x) - mpmath.digamma(ab)) for x in (a, b)]
        got = wg.grad(special.betaln, argnums=(0, 1))(a, b)
        np.testing.assert_allclose(got, exact, rtol=4e-15, err_msg=f"betaln at {a}, {b}")
        beta_ab = special.beta(a, b)
        if np.isfinite(beta_ab) and beta_ab != 0:
            np.testing.assert_allclose(wg.grad(special.beta, argnums=(0, 1))(a, b),
                                       np.multiply(exact, beta_ab), rtol=1e-14)
    # its own partials are ψ'(a) - ψ'(a + b) and -ψ'(a + b): the second derivatives
    check_grads(special.betaln, np.array([0.7, 3.0, 40.0]), np.array([2.0, 0.4, 1e-3]),
                order=2, rtol=1e-5, atol=1e-6)
    assert wg.grad(special.betaln)(np.float32(2.0), np.float32(3.0)).dtype == np.float32


def test_rgamma_derivative_at_the_poles_of_gamma():
    # 1/Γ(x) ≈ (-1)ⁿn!(x + n) at x = -n: slope (-1)ⁿn!, not -ψ(x)/Γ(x) = 0·nan
    for n in range(5):
        assert wg.grad(special.rgamma)(-float(n)) == pytest.approx((-1) ** n * math.factorial(n),
                                                                   rel=1e-14)
    d1 = wg.grad(special.rgamma)
    for x in (-2.0, -1.0, 0.0, 0.5, 0.7):        # the second derivative, across the branches
        assert wg.grad(d1)(x) == pytest.approx(fd_derivative(d1, x, 1e-5), rel=1e-7, abs=1e-8)


def test_rgamma_taylor_series_at_and_next_to_the_poles_of_gamma():
    # Taylor mode expanded 1/Γ, nan at the poles and losing digits next to them; the
    # reference is 1/Γ's series from mpmath at 40 digits
    import mpmath
    mpmath.mp.dps = 40
    try:
        for x0 in (0.0, -1.0, -2.0, 1e-9, 1e-6, -1 + 1e-7, 0.3, 0.5, 0.7, 3.5):
            want = [float(c) for c in mpmath.taylor(mpmath.rgamma, mpmath.mpf(x0), 4)]
            got = wg.taylor(special.rgamma, x0, 1.0, order=4)
            assert got == pytest.approx(want, rel=1e-12, abs=1e-13), x0
        # past 171.62 Γ overflows: 1/Γ and its coefficients underflow to 0 (1/inf's
        # series was nan); just below, they are tiny but must keep their digits
        for x0 in (171.2, 172.0, 200.0, 1e5):
            want = [float(mpmath.diff(mpmath.rgamma, mpmath.mpf(x0), k) / math.factorial(k))
                    for k in range(4)]     # (mpmath.taylor's are 0 at this size)
            got = wg.taylor(special.rgamma, x0, 1.0, order=3)
            # (SciPy's 1/Γ(172) is 0, not the subnormal 8e-310: abs for those)
            assert got == pytest.approx(want, rel=1e-12, abs=0.0 if x0 < 171.5 else 1e-300), x0
    finally:
        mpmath.mp.dps = 15


def test_abstract_dtypes_are_the_ones_scipys_ufuncs_give():
    # SciPy's ufuncs pick their loops their own way (float64 beside a Python number, for
    # float16, for (float32, bool)): compile's abstract values must say what they give
    f32, f16 = np.array([0.5, 0.25], np.float32), np.array([0.5, 0.25], np.float16)
    cases = [(special.xlogy, (f32, 0.5)), (special.xlog1py, (2, f32)), (special.beta, (f32, True)),
             (special.betaln, (f32, f32)), (special.erf, (f16,)), (special.erfinv, (np.int8([0]),)),
             (special.gammaln, (np.array([True]),)), (special.xlogy, (f32, f32))]
    for f, args in cases:
        want = f(*args).dtype
        assert wg.trace(lambda x: f(x, *args[1:]), args[0]).outputs[0].dtype == want
        assert wg.compile(lambda x: f(x, *args[1:]), args[0])(args[0]).dtype == want


@pytest.mark.parametrize("name", sorted(PRIMITIVES - {"polygamma1", "polygamma3"}))
def test_float32_is_kept_as_scipy_keeps_it(name):
    f, ref, _ = SPECIAL[name]
    args = [a.astype(np.float32) for a in _args(name)]
    assert ref(*args).dtype == np.float32
    assert wg.trace(f, *args).outputs[0].dtype == np.float32
    assert f(*[wg.Graph().input(a) for a in args]).value.dtype == np.float32
    g = wg.grad(lambda *a: np.sum(f(*a)))(*args)
    assert g.dtype == np.float32


def test_bessel_functions_of_the_first_and_second_kinds():
    """Closed forms: J₁/₂(x) = √(2/(πx)) sin x and Y₁/₂ = -√(2/(πx)) cos x, so their
    derivatives; the orders below -1 and the whole orders' symmetry J₋ₙ = (-1)ⁿ Jₙ; the
    order checks; SciPy's nan outside the domain, on traced values too."""
    x = np.linspace(0.5, 7.0, 9)
    c = np.sqrt(2 / np.pi)
    half_j = lambda x: c * (np.cos(x) / np.sqrt(x) - 0.5 * np.sin(x) / x ** 1.5)
    half_y = lambda x: c * (np.sin(x) / np.sqrt(x) + 0.5 * np.cos(x) / x ** 1.5)
    assert_close(wg.grad(lambda x: np.sum(special.jv(0.5, x)))(x), half_j(x), rtol=1e-13,
                 atol=1e-15)
    assert_close(wg.grad(lambda x: np.sum(special.yv(0.5, x)))(x), half_y(x), rtol=1e-13,
                 atol=1e-15)
    for n in (-4, -1, 0, 1, 3):
        assert_close(wg.grad(lambda x: np.sum(special.jn(n, x)))(x),
                     (-1) ** (n % 2 if n < 0 else 0)
                     * wg.grad(lambda x: np.sum(special.jn(abs(n), x)))(x),
                     rtol=1e-14, atol=1e-15)
        assert_close(wg.grad(lambda x: np.sum(special.yn(n, x)))(x),
                     (sc.yv(n - 1, x) - sc.yv(n + 1, x)) / 2, rtol=1e-13, atol=1e-15)
    t = wg.Graph().input(1.0)
    with pytest.raises(ValueError, match="yn on traced values takes one finite integer order"):
        special.yn(2.5, t)
    with pytest.raises(ValueError, match="jv on traced values takes one finite real order"):
        special.jv(np.inf, t)
    with np.errstate(all="ignore"):
        xs = np.array([-1.0, 0.0, 1.0])
        for f in (special.y0, lambda x: special.yv(1.5, x), lambda x: special.jv(2.5, x)):
            want = f(xs)
            assert_close(wg.trace(f, xs)(xs), want, rtol=0, atol=0)
    assert wg.grad(special.gammasgn)(-0.5) == 0.0 and float(special.gammasgn(-0.5)) == -1.0


def test_polygamma_order_checks():
    x = wg.Graph().input(1.0)
    with pytest.raises(ValueError, match="non-negative integer"):
        special.polygamma(-1, x)
    with pytest.raises(ValueError, match="non-negative integer"):
        special.polygamma(np.array([1, 2]), x)
    assert wg.grad(lambda x: special.polygamma(0, x))(1.0) == pytest.approx(math.pi ** 2 / 6)
    with pytest.raises(TypeError, match="order is not differentiable"):
        special.polygamma(x, 1.0)


# ---- logsumexp, softmax -----------------------------------------------------------------
def test_logsumexp_has_scipys_signature():
    a = rng.normal(size=(3, 4))
    b = rng.uniform(-1, 1, size=(3, 4))
    for kw in ({}, {"axis": 1}, {"axis": 0, "keepdims": True}, {"b": b, "axis": 1},
               {"b": b, "return_sign": True}):
        expected = sc.logsumexp(a, **kw)
        plain = special.logsumexp(a, **kw)
        traced = wg.trace(lambda a: special.logsumexp(a, **kw), a)(a)
        assert_close(plain, expected, rtol=0, atol=0)
        assert_close(traced, expected, rtol=1e-14, atol=1e-14)
    check_grads(lambda a, b: special.logsumexp(a, axis=1, b=b), a, np.abs(b) + 0.1)
    assert_close(wg.grad(special.logsumexp)(a), sc.softmax(a), rtol=1e-14, atol=1e-15)
    # a number is one element along axis 0, as SciPy reads it (it crashed on traced values)
    for kw in ({}, {"axis": 0}, {"axis": -1, "keepdims": True}, {"b": np.array([1.0, 2.0])}):
        got = wg.compile(lambda a: special.logsumexp(a, **kw), np.array(2.0))(np.array(2.0))
        want = sc.logsumexp(np.array(2.0), **kw)
        assert np.shape(got) == np.shape(want) and got == pytest.approx(want, rel=1e-15)
    assert wg.grad(lambda a: special.logsumexp(a, axis=0))(1.5) == 1.0


def test_softmax_and_log_softmax_over_scipys_axes():
    x = rng.normal(size=(2, 3))
    for axis in (None, 0, 1):
        for f, ref in ((special.softmax, sc.softmax), (special.log_softmax, sc.log_softmax)):
            assert_close(wg.trace(lambda x: f(x, axis=axis), x)(x), ref(x, axis=axis),
                         rtol=1e-14, atol=1e-14)
            check_grads(lambda x: f(x, axis=axis), x)
    # integers, in the float dtype NumPy's exp gives them (int8: float16), as SciPy's
    for ints in (np.array([[1, 0, 3], [2, 2, -1]]), np.array([3, -2, 0], dtype=np.int8)):
        for f, ref in ((special.softmax, sc.softmax), (special.log_softmax, sc.log_softmax)):
            got, want = wg.compile(f, ints)(ints), ref(ints)
            assert got.dtype == want.dtype
            tol = 2e-3 if want.dtype == np.float16 else 1e-14      # (float16: ~3 digits)
            assert_close(got, want, rtol=tol, atol=tol)
    # SciPy's tuples of axes (refused on traced values once), and a number
    x = rng.normal(size=(2, 3, 4))
    for axis in ((0, 2), (-1, 0), (1,)):
        for f, ref in ((special.softmax, sc.softmax), (special.log_softmax, sc.log_softmax)):
            assert_close(wg.trace(lambda x: f(x, axis=axis), x)(x), ref(x, axis=axis),
                         rtol=1e-14, atol=1e-14)
            check_grads(lambda x: f(x, axis=axis), x)
    for axis in (None, 0, -1):
        assert wg.trace(lambda x: special.softmax(x, axis=axis), 2.5)(2.5) == 1.0
        assert wg.trace(lambda x: special.log_softmax(x, axis=axis), 2.5)(2.5) == 0.0


# ---- distributions -----------------------------------------------------------------------
def _spd(n):
    a = rng.normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


# name -> (method name, distribution, argument values): every float argument is checked
DISTRIBUTIONS = {
    "norm.logpdf": ("logpdf", "norm", lambda: (uniform(-2, 2), uniform(-1, 1), uniform(0.5, 2))),
    "norm.pdf": ("pdf", "norm", lambda: (uniform(-2, 2), uniform(-1, 1), uniform(0.5, 2))),
    "norm.cdf": ("cdf", "norm", lambda: (uniform(-2, 2), uniform(-1, 1), uniform(0.5, 2))),
    "norm.logcdf": ("logcdf", "norm", lambda: (uniform(-6, 2), uniform(-1, 1), uniform(0.5, 2))),
    "norm.sf": ("sf", "norm", lambda: (uniform(-2, 2), uniform(-1, 1), uniform(0.5, 2))),
    "norm.logsf": ("logsf", "norm", lambda: (uniform(-2, 6), uniform(-1, 1), uniform(0.5, 2))),
    "t.logpdf": ("logpdf", "t", lambda: (uniform(-3, 3), uniform(1, 8), uniform(-1, 1),
                                         uniform(0.5, 2))),
    "t.pdf": ("pdf", "t", lambda: (uniform(-3, 3), uniform(1, 8), uniform(-1, 1),
                                   uniform(0.5, 2))),
    "gamma.logpdf": ("logpdf", "gamma", lambda: (uniform(1.5, 4), uniform(0.5, 4),
                                                 uniform(-1, 1), uniform(0.5, 2))),
    "gamma.pdf": ("pdf", "gamma", lambda: (uniform(1.5, 4), uniform(0.5, 4), uniform(-1, 1),
                                           uniform(0.5, 2))),
    "chi2.logpdf": ("logpdf", "chi2", lambda: (uniform(0.5, 6), uniform(0.5, 9),
                                               uniform(-0.4, 0.4), uniform(0.5, 2))),
    "chi2.pdf": ("pdf", "chi2", lambda: (uniform(0.5, 6), uniform(0.5, 9))),
    "beta.logpdf": ("logpdf", "beta", lambda: (uniform(0.2, 0.8), uniform(0.5, 4),
                                               uniform(0.5, 4))),
    "beta.pdf": ("pdf", "beta", lambda: (uniform(0.2, 0.8), uniform(0.5, 4), uniform(0.5, 4))),
    "mvn.logpdf": ("logpdf", "multivariate_normal",
                   lambda: (rng.normal(size=(4, 3)), rng.normal(size=3), _spd(3))),
    "mvn.pdf": ("pdf", "multivariate_normal",
                lambda: (rng.normal(size=(4, 3)), rng.normal(size=3), _spd(3))),
    "mvn.entropy": ("entropy", "multivariate_normal", lambda: (rng.normal(size=3), _spd(3))),
    "dirichlet.logpdf": ("logpdf", "dirichlet",
                         lambda: (rng.dirichlet(np.ones(3), size=4).T, uniform(0.5, 3, 3))),
}


def _distribution(name):
    method, dist, sample = DISTRIBUTIONS[name]
    return getattr(getattr(stats, dist), method), getattr(getattr(st, dist), method), sample()


@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
def test_distribution_values_equal_scipys_plain_and_traced(name):
    f, ref, args = _distribution(name)
    expected = ref(*args)
    np.testing.assert_array_equal(f(*args), expected)
    assert_close(wg.trace(f, *args)(*args), expected, rtol=1e-12, atol=1e-14)
    eager = f(*[wg.Graph().input(a) for a in args]).value
    assert_close(eager, expected, rtol=1e-12, atol=1e-14)


def _symmetric(f, k):
    # cov is symmetric: differentiate along symmetric directions (as SciPy reads it)
    return lambda *a: f(*a[:k], (a[k] + a[k].T) / 2, *a[k + 1:])


@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
def test_distribution_derivatives_in_every_argument_to_second_order(name):
    f, _, args = _distribution(name)
    if name.startswith("mvn"):
        f = _symmetric(f, len(args) - 1)
    if name == "dirichlet.logpdf":           # x stays on the simplex: vary the k - 1 first
        g = f
        f = lambda x, alpha: g(x[:-1], alpha)
    check_grads(f, *args, order=2, rtol=1e-5, atol=1e-6)


# The cdfs and sfs of the incomplete gamma and beta functions: differentiable in x, loc and
# scale (poisson's in mu), not in the shapes, which are fixed here.
# name -> (function of the differentiable arguments, SciPy's, their sampler)
def one(lo, hi):
    return float(rng.uniform(lo, hi))


CDFS = {
    "gamma.cdf": (lambda x, loc, s: stats.gamma.cdf(x, 2.5, loc, s),
                  lambda x, loc, s: st.gamma.cdf(x, 2.5, loc, s),
                  lambda: (uniform(1.5, 6, 3), one(-1, 1), one(0.5, 2))),
    "gamma.sf": (lambda x, loc, s: stats.gamma.sf(x, 0.7, loc, s),
                 lambda x, loc, s: st.gamma.sf(x, 0.7, loc, s),
                 lambda: (uniform(1.5, 6, 3), one(-1, 1), one(0.5, 2))),
    "chi2.cdf": (lambda x, loc, s: stats.chi2.cdf(x, 3.0, loc, s),
                 lambda x, loc, s: st.chi2.cdf(x, 3.0, loc, s),
                 lambda: (uniform(0.5, 9, 3), one(-0.4, 0.4), one(0.5, 2))),
    "chi2.sf": (lambda x: stats.chi2.sf(x, 5.0), lambda x: st.chi2.sf(x, 5.0),
                lambda: (uniform(0.5, 12, 3),)),
    "beta.cdf": (lambda x, loc, s: stats.beta.cdf(x, 2.0, 3.5, loc, s),
                 lambda x, loc, s: st.beta.cdf(x, 2.0, 3.5, loc, s),
                 lambda: (uniform(0.1, 0.9, 3), one(-0.05, 0.05), one(0.95, 1.2))),
    "beta.sf": (lambda x: stats.beta.sf(x, 0.5, 0.7), lambda x: st.beta.sf(x, 0.5, 0.7),
                lambda: (uniform(0.05, 0.95, 3),)),
    "t.cdf": (lambda x, loc, s: stats.t.cdf(x, 3.0, loc, s),
              lambda x, loc, s: st.t.cdf(x, 3.0, loc, s),
              lambda: (uniform(-4, 4, 3), one(-1, 1), one(0.5, 2))),
    "t.sf": (lambda x: stats.t.sf(x, 0.7), lambda x: st.t.sf(x, 0.7),
             lambda: (uniform(-4, 4, 3),)),
    "t.logcdf": (lambda x: stats.t.logcdf(x, 12.0), lambda x: st.t.logcdf(x, 12.0),
                 lambda: (uniform(-8, 4, 3),)),
    "t.logsf": (lambda x: stats.t.logsf(x, np.inf), lambda x: st.t.logsf(x, np.inf),
                lambda: (uniform(-4, 6, 3),)),
    "poisson.cdf": (lambda mu: stats.poisson.cdf(np.array([0, 2, 3.5, 9]), mu),
                    lambda mu: st.poisson.cdf(np.array([0, 2, 3.5, 9]), mu),
                    lambda: (one(0.5, 6),)),
    "poisson.sf": (lambda mu: stats.poisson.sf(np.array([0, 2, 3.5, 9]), mu),
                   lambda mu: st.poisson.sf(np.array([0, 2, 3.5, 9]), mu),
                   lambda: (one(0.5, 6),)),
}


@pytest.mark.parametrize("name", sorted(CDFS))
def test_cdfs_equal_scipys_and_differentiate_to_second_order(name):
    f, ref, sample = CDFS[name]
    args = sample()
    assert_close(wg.trace(f, *args)(*args), ref(*args), rtol=1e-13, atol=1e-15)
    check_grads(f, *args, order=2, rtol=1e-5, atol=1e-7)


def test_cdf_derivatives_are_the_densities():
    x = np.array([0.3, 1.0, 4.0])
    assert_close(wg.grad(lambda x: np.sum(stats.gamma.cdf(x, 2.5, 0.1, 1.5)))(x),
                 st.gamma.pdf(x, 2.5, 0.1, 1.5), rtol=1e-14, atol=0)
    assert_close(wg.grad(lambda x: np.sum(stats.chi2.sf(x, 3.0)))(x), -st.chi2.pdf(x, 3.0),
                 rtol=1e-14, atol=0)
    y = np.array([0.1, 0.5, 0.97])
    assert_close(wg.grad(lambda y: np.sum(stats.beta.cdf(y, 2.0, 3.5)))(y),
                 st.beta.pdf(y, 2.0, 3.5), rtol=1e-13, atol=0)
    assert_close(wg.grad(lambda y: np.sum(stats.beta.sf(y, 0.5, 0.7)))(y),
                 -st.beta.pdf(y, 0.5, 0.7), rtol=1e-13, atol=0)
    z = np.array([-30.0, -1.0, 0.0, 2.0])
    for df in (0.5, 3.0, 1e12, np.inf):
        assert_close(wg.grad(lambda z: np.sum(stats.t.cdf(z, df)))(z), st.t.pdf(z, df),
                     rtol=1e-14, atol=0)
    # poisson: d/dμ P(X <= k) = -pmf(k, μ), with k floored; the count's derivative is 0
    k = np.array([0.0, 2.0, 3.5])
    assert_close(wg.grad(lambda m: np.sum(stats.poisson.cdf(k, m)))(2.0),
                 -np.sum(st.poisson.pmf(np.floor(k), 2.0)), rtol=1e-14, atol=0)
    assert wg.grad(lambda k: stats.poisson.cdf(k, 2.0))(3.0) == 0.0
    for f in (stats.poisson.logpmf, stats.poisson.pmf):            # in k and loc too
        assert wg.grad(f, argnums=(0, 2))(3.0, 2.5, 1.0) == (0.0, 0.0)
        assert_close(wg.grad(f, argnums=1)(3.0, 2.5), fd_derivative(lambda m: f(3.0, m), 2.5),
                     rtol=1e-8, atol=0)


def test_cdfs_outside_the_support_and_invalid_parameters_are_scipys():
    with np.errstate(all="ignore"):
        x = np.array([-1.0, 0.0, 0.5, 2.0, np.nan])
        for f, ref in ((lambda x: stats.gamma.cdf(x, 0.5), lambda x: st.gamma.cdf(x, 0.5)),
                       (lambda x: stats.gamma.sf(x, 2.0), lambda x: st.gamma.sf(x, 2.0)),
                       (lambda x: stats.beta.cdf(x, 0.5, 2.0), lambda x: st.beta.cdf(x, 0.5, 2.0)),
                       (lambda x: stats.beta.sf(x, 2.0, 0.5), lambda x: st.beta.sf(x, 2.0, 0.5))):
            assert_close(wg.trace(f, x)(x), ref(x), rtol=1e-14, atol=0)
        k = np.array([-1, 0, 2.5, np.nan])
        for f, ref in ((stats.poisson.cdf, st.poisson.cdf), (stats.poisson.sf, st.poisson.sf)):
            assert_close(wg.trace(lambda m: f(k, m), 2.0)(2.0), ref(k, 2.0), rtol=1e-14, atol=0)
            assert_close(wg.trace(lambda m: f(k, m), 0.0)(0.0), ref(k, 0.0), rtol=1e-14, atol=0)
        # the derivative outside the support is 0, finite where the density is inf at 0
        g = wg.grad(lambda x: np.sum(stats.gamma.cdf(x, 0.5)))(np.array([-1.0, 0.5]))
        assert g[0] == 0.0 and np.isfinite(g[1])
        bad = np.array([1.5, 0.0, -1.0, np.nan])
        for m, ref in ((lambda p: stats.gamma.cdf(0.5, p), lambda p: st.gamma.cdf(0.5, p)),
                       (lambda p: stats.gamma.sf(0.5, 2.0, 0.0, p),
                        lambda p: st.gamma.sf(0.5, 2.0, 0.0, p)),
                       (lambda p: stats.chi2.cdf(0.5, p), lambda p: st.chi2.cdf(0.5, p)),
                       (lambda p: stats.beta.cdf(0.5, p, 2.0), lambda p: st.beta.cdf(0.5, p, 2.0)),
                       (lambda p: stats.poisson.sf(2, p - 1.6),
                        lambda p: st.poisson.sf(2, p - 1.6))):
            assert_close(wg.trace(m, bad)(bad), ref(bad), rtol=1e-14, atol=0)


def _mp_gammainc_da(a, x):
    # (past a, P is 1 to 40 digits where its derivative is tiny: -∂Q/∂a instead)
    import mpmath
    with mpmath.workdps(40):
        if x <= a:
            return float(mpmath.diff(lambda s: mpmath.gammainc(s, 0, x, regularized=True), a))
        return -float(mpmath.diff(lambda s: mpmath.gammainc(s, x, mpmath.inf,
                                                            regularized=True), a))


def test_incomplete_gamma_in_its_shape_against_mpmath():
    # every region of incomplete.py: its series (x < a), its continued fraction (x > a + 1)
    # and Temme's expansion (a >= 20, x within 30% of a), and the seams between them
    rng = np.random.default_rng(17)
    a = np.concatenate([10 ** rng.uniform(-2, 3, 24), [0.5, 19.99, 20.0, 20.0, 300.0, 300.0]])
    x = np.concatenate([a[:24] * 10 ** rng.uniform(-1.5, 1.5, 24),
                        [1.5, 20.99, 26.0, 26.01, 300 + 3 * np.sqrt(300), 390.01]])
    got = wg.grad(lambda a: np.sum(special.gammainc(a, x)))(a)
    want = np.array([_mp_gammainc_da(ai, xi) for ai, xi in zip(a, x)])
    assert_close(got, want, rtol=1e-12, atol=0)
    assert_close(wg.grad(lambda a: np.sum(special.gammaincc(a, x)))(a), -want, rtol=1e-12,
                 atol=0)
    # the mixed second derivative, against differences of the first
    for ai, xi in zip(a[::6], x[::6]):
        check_grads(special.gammainc, ai, xi, order=1, rtol=1e-6, atol=1e-10)
        assert_close(wg.grad(wg.grad(special.gammainc), argnums=1)(ai, xi),
                     fd_derivative(lambda t: wg.grad(special.gammainc)(ai, t), xi),
                     rtol=1e-6, atol=1e-10)
    # the second derivative in a, in each region of the kernel (series, continued
    # fraction, Temme's expansion for large a near x), against mpmath; the third raises
    import mpmath
    second = wg.grad(wg.grad(special.gammainc))
    for ai, xi in ((2.7, 1.9), (0.6, 4.0), (150.0, 140.0), (150.0, 170.0)):
        with mpmath.workdps(30):
            want = float(mpmath.diff(lambda s: mpmath.gammainc(s, 0, xi, regularized=True),
                                     ai, 2))
        assert_close(second(ai, xi), want, rtol=1e-10, atol=1e-14)
    assert_close(wg.hessian(lambda a: stats.gamma.sf(1.9, a))(2.7), -second(2.7, 1.9),
                 rtol=1e-14)
    with pytest.raises(NotImplementedError, match="third derivative with respect to a"):
        wg.grad(second)(2.7, 1.9)
    # the distributions' shapes: gamma's a, chi2's df = 2a (P(df/2, x/2))
    check_grads(lambda a: stats.gamma.cdf(1.3, a, 0.1, 2.0), 1.7, order=1)
    check_grads(lambda k: stats.chi2.sf(2.5, k), 3.0, order=1)
    assert_close(wg.grad(lambda k: stats.chi2.sf(2.5, k))(3.0),
                 -0.5 * _mp_gammainc_da(1.5, 1.25), rtol=1e-12, atol=0)


def test_incomplete_gamma_in_its_shape_at_the_edges_and_in_float32():
    # NaN outside the domain, 0 where P does not depend on a (x = 0, x = inf)
    a = np.array([-1.0, 0.0, np.nan, 2.0, 2.0, 2.0, np.inf])
    x = np.array([1.0, 1.0, 1.0, -1.0, 0.0, np.inf, 3.0])
    with np.errstate(all="raise"):
        g = P.gammainc_da(a, x)
    assert np.isnan(g[:4]).all() and g[4:].tolist() == [0.0, 0.0, 0.0]
    # the mixed derivative at x = 0: x^(a-1) log x -> 0 for a > 1, -inf for a <= 1 (not
    # 0·(-inf) = nan, nor a warning); a scale of 0 is nan, not ZeroDivisionError
    mixed = wg.grad(wg.grad(special.gammainc), argnums=1)
    with np.errstate(all="raise"):
        assert [mixed(2.0, 0.0), mixed(1.0, 0.0), mixed(0.5, 0.0)] == [0.0, -np.inf, -np.inf]
        assert math.isnan(wg.grad(lambda a: stats.gamma.cdf(2.0, a, 0.0, 0.0))(2.0))
    a32 = np.array([0.5, 30.0], np.float32)
    g32 = wg.grad(lambda a: np.sum(special.gammainc(a, np.float32(20.0))))(a32)
    assert g32.dtype == np.float32
    assert_close(g32, [_mp_gammainc_da(0.5, 20.0), _mp_gammainc_da(30.0, 20.0)], rtol=1e-6,
                 atol=0)


def _mp_betainc_dab(a, b, x):
    # (by the side where I is not 1 to 40 digits, as for gammainc)
    import mpmath
    with mpmath.workdps(40):
        if x <= a / (a + b):
            I = lambda s, t: mpmath.betainc(s, t, 0, x, regularized=True)
            sign = 1
        else:             # 1 - I_x(a, b) = I_(1-x)(b, a), with 1 - x exact in mpmath
            I = lambda s, t: mpmath.betainc(t, s, 0, 1 - mpmath.mpf(x), regularized=True)
            sign = -1
        return (sign * float(mpmath.diff(lambda s: I(s, b), a)),
                sign * float(mpmath.diff(lambda t: I(a, t), b)))


def test_incomplete_beta_in_its_shapes_against_mpmath():
    # small and large shapes, x in both tails, at the mean and at the side switch
    rng = np.random.default_rng(19)
    a = np.concatenate([10 ** rng.uniform(-2, 3, 16), [0.3, 500.0, 2.0, 1e3]])
    b = np.concatenate([10 ** rng.uniform(-2, 3, 16), [40.0, 700.0, 0.5, 3.0]])
    x = np.concatenate([rng.uniform(0.001, 0.999, 16),
                        [(0.3 + 1) / (0.3 + 40 + 2), 500 / 1200, 1e-6, 1 - 1e-4]])
    da, db = wg.grad(lambda a, b: np.sum(special.betainc(a, b, x)), argnums=(0, 1))(a, b)
    want = np.array([_mp_betainc_dab(*p) for p in zip(a, b, x)])
    assert_close(da, want[:, 0], rtol=1e-11, atol=0)
    assert_close(db, want[:, 1], rtol=1e-11, atol=0)
    # closed forms: I_x(a, 1) = x^a, I_x(1, b) = 1 - (1 - x)^b
    xs = rng.uniform(0.05, 0.95, 5)
    assert_close(wg.grad(lambda a: np.sum(special.betainc(a, 1.0, xs)))(2.5),
                 np.sum(xs ** 2.5 * np.log(xs)), rtol=1e-13, atol=0)
    assert_close(wg.grad(lambda b: np.sum(special.betainc(1.0, b, xs)))(2.5),
                 -np.sum((1 - xs) ** 2.5 * np.log1p(-xs)), rtol=1e-13, atol=0)
    # the mixed second derivatives, against differences of the first
    for ai, bi, xi in list(zip(a, b, x))[::5]:
        check_grads(special.betainc, ai, bi, xi, order=1, rtol=1e-6, atol=1e-10)
        for k in (0, 1):
            assert_close(wg.grad(wg.grad(special.betainc, argnums=k), argnums=2)(ai, bi, xi),
                         fd_derivative(lambda t: wg.grad(special.betainc, argnums=k)(
                             ai, bi, t), xi), rtol=1e-6, atol=1e-9)
    # the beta distribution's shapes, and its sf
    check_grads(lambda a, b: stats.beta.cdf(0.3, a, b), 1.5, 2.5, order=1)
    check_grads(lambda a, b: stats.beta.sf(0.3, a, b, 0.1, 0.8), 1.5, 2.5, order=1)


def test_incomplete_beta_in_its_shapes_at_the_edges_and_in_float32():
    a = np.array([-1.0, 1.0, np.nan, 2.0, 2.0, 2.0, np.inf, 2.0])
    b = np.array([1.0, 0.0, 1.0, 3.0, 3.0, 3.0, 3.0, 3.0])
    x = np.array([0.5, 0.5, 0.5, 1.5, 0.0, 1.0, 0.5, -0.1])
    with np.errstate(all="raise"):
        da, db = P.betainc_da(a, b, x), P.betainc_db(a, b, x)
    for d in (da, db):
        assert np.isnan(d[[0, 1, 2, 3, 7]]).all() and d[[4, 5, 6]].tolist() == [0.0] * 3
    # the mixed derivatives at the ends of the support: their limits, no nan, no warning
    in_a = wg.grad(wg.grad(special.betainc, argnums=0), argnums=2)
    in_b = wg.grad(wg.grad(special.betainc, argnums=1), argnums=2)
    with np.errstate(all="raise"):
        assert [in_a(2.0, 3.0, 0.0), in_a(1.0, 3.0, 0.0), in_b(2.0, 3.0, 1.0),
                in_b(2.0, 0.5, 1.0)] == [0.0, -np.inf, 0.0, -np.inf]
        assert math.isnan(wg.grad(lambda a: stats.beta.cdf(0.5, a, 2.0, 0.0, 0.0))(2.0))
    a32 = np.array([0.5, 30.0], np.float32)
    g = wg.grad(lambda a: np.sum(special.betainc(a, np.float32(2.0), np.float32(0.4))))(a32)
    assert g.dtype == np.float32
    assert_close(g, [_mp_betainc_dab(0.5, 2.0, 0.4)[0], _mp_betainc_dab(30.0, 2.0, 0.4)[0]],
                 rtol=1e-6, atol=1e-30)


def test_incomplete_beta_shares_one_pass_between_its_shapes(monkeypatch):
    """A gradient in both shapes runs the continued fraction once; a changed argument
    (even changed in place) or a caller writing into a result never gives a stale value."""
    from wengert.primitives import incomplete
    calls = []
    # (the pass itself is counted; `real` runs it uncounted, for the expected values)
    uncounted = incomplete._betainc_dab
    real = lambda *args: uncounted(*incomplete._prepare(*args))
    monkeypatch.setattr(incomplete, "_betainc_dab", lambda *a: calls.append(1) or uncounted(*a))
    rng = np.random.default_rng(23)
    a, b, x = rng.uniform(0.5, 9.0, 6), rng.uniform(0.5, 9.0, 6), rng.uniform(0.1, 0.9, 6)
    da, db = wg.grad(lambda a, b: np.sum(special.betainc(a, b, x)), argnums=(0, 1))(a, b)
    assert len(calls) == 1
    assert_close(da, real(a, b, x)[0], rtol=0, atol=0)
    assert_close(db, real(a, b, x)[1], rtol=0, atol=0)
    first = P.betainc_da(a, b, x)                   # the gradient's pass, again
    first[:] = 0.0                                  # the caller's to write into
    assert_close(P.betainc_db(a, b, x), db, rtol=0, atol=0)
    assert len(calls) == 1
    x[0] = 0.5                                      # changed in place: computed again
    assert_close(P.betainc_db(a, b, x), real(a, b, x)[1], rtol=0, atol=0)
    assert_close(P.betainc_da(a, b, x), real(a, b, x)[0], rtol=0, atol=0)
    assert len(calls) == 2


def test_cdfs_refuse_a_derivative_in_a_shape_naming_it():
    cases = [(lambda d: stats.t.cdf(0.5, d), "stdtr"),
             (wg.grad(lambda a: stats.beta.cdf(0.3, a, 2.0)), "betainc"),
             (wg.grad(lambda b: special.betainc(1.0, b, 0.5)), "betainc"),
             # (gammainc's second derivative in a is written, its third is not)
             (wg.grad(wg.grad(lambda a: special.gammainc(a, 1.0))), "gammainc"),
             (wg.grad(wg.grad(lambda k: stats.chi2.cdf(1.0, k))), "gammainc")]
    for f, who in cases:
        with pytest.raises(NotImplementedError, match=who + r": the ((second|third) )?"
                                                            r"derivative with respect to"):
            wg.grad(f)(2.0)
        with pytest.raises(NotImplementedError, match=who):
            wg.jvp(f, (2.0,), (1.0,))
    # with the shape constant, the values are SciPy's, traced or not
    assert_close(wg.trace(lambda x: special.betainc(2.0, 3.0, x), 0.4)(0.4),
                 sc.betainc(2.0, 3.0, 0.4), rtol=1e-15, atol=0)


def test_distributions_import_as_autograds_modules_do():
    """`import autograd.scipy.stats.norm as norm` and `from ...stats.norm import logpdf`
    survive swapping autograd for wengert, in a fresh interpreter (import order matters)."""
    import subprocess
    code = ("import wengert.scipy.stats.norm as norm, wengert as wg\n"
            "from wengert.scipy.stats.poisson import logpmf\n"
            "from wengert.scipy.stats import multivariate_normal\n"
            "import wengert.scipy.stats.multivariate_normal as mvn\n"
            "assert mvn is multivariate_normal\n"
            "print(wg.grad(norm.logpdf)(1.0, 0.0, 2.0), wg.grad(logpmf, argnums=1)(3, 2.0))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["-0.25", "0.5"]
    for name in stats._DISTRIBUTIONS:        # (__all__ holds sem, rankdata, ... too)
        module = importlib.import_module(f"wengert.scipy.stats.{name}")
        method = "logpdf" if hasattr(type(getattr(stats, name)), "logpdf") else "logpmf"
        assert getattr(module, method) == getattr(getattr(stats, name), method)
    with pytest.raises(ImportError, match="ppf2"):
        exec("from wengert.scipy.stats.norm import ppf2")


def test_stdtr_differentiates_without_stats_imported_first():
    # (its partial, the t density, comes from wengert.scipy.stats, imported when needed)
    import subprocess
    code = ("import wengert as wg, numpy as np; from wengert.scipy import special; "
            "print(repr(wg.grad(special.stdtr, argnums=1)(1.0, 0.0) * np.pi))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert abs(float(out.stdout) - 1.0) < 1e-15


def test_incomplete_functions_in_x_against_differences_and_float32():
    for f in (lambda x: special.gammainc(2.5, x), lambda x: special.gammaincc(0.5, x),
              lambda x: special.betainc(0.7, 3.0, x)):
        check_grads(f, uniform(0.05, 0.95, 4), order=2, rtol=1e-5, atol=1e-7)
    x = np.array([0.3, 0.6], np.float32)
    for f in (lambda x: stats.gamma.cdf(x, 2.5), lambda x: stats.beta.sf(x, 2, 3.5),
              lambda x: stats.chi2.cdf(x, 3), lambda x: stats.t.cdf(x, 3),
              lambda x: stats.gamma.sf(x, 0.5, 0.1, 2), lambda x: stats.t.logcdf(x, 3.0)):
        assert wg.trace(f, x).outputs[0].dtype == np.float32
        assert wg.compile(f, x)(x).dtype == np.float32
        assert wg.grad(lambda x: np.sum(f(x)))(x).dtype == np.float32


def test_distribution_keywords_and_defaults():
    x = uniform(-2, 2)
    for f, ref in ((stats.norm.logpdf, st.norm.logpdf), (stats.norm.cdf, st.norm.cdf)):
        assert_close(wg.trace(lambda x: f(x, scale=2.0, loc=0.5), x)(x),
                     ref(x, scale=2.0, loc=0.5), rtol=1e-13, atol=0)
        assert_close(wg.trace(f, x)(x), ref(x), rtol=1e-13, atol=0)
    assert_close(wg.trace(lambda x: stats.t.logpdf(x, df=3.0, scale=2.0), x)(x),
                 st.t.logpdf(x, df=3.0, scale=2.0), rtol=1e-13, atol=0)


def test_outside_the_support_is_minus_inf_with_finite_derivatives():
    x = np.array([-1.0, 2.0])
    got = wg.trace(lambda x: stats.gamma.logpdf(x, 2.0), x)(x)
    np.testing.assert_array_equal(got, st.gamma.logpdf(x, 2.0))
    assert np.all(np.isfinite(wg.grad(lambda a: stats.gamma.logpdf(x, a)[1])(2.0)))
    y = np.array([-0.5, 0.3, 1.5])
    np.testing.assert_array_equal(wg.trace(lambda y: stats.beta.logpdf(y, 2.0, 3.0), y)(y),
                                  st.beta.logpdf(y, 2.0, 3.0))
    assert np.all(np.isfinite(wg.grad(lambda a: np.sum(stats.beta.logpdf(y[1:2], a, 3.0)))(2.0)))


def test_invalid_parameters_give_nan_as_scipys():
    # (SciPy's nan for scale <= 0, df <= 0, a or b <= 0, mu < 0; wengert gave -inf, 0 or
    # numbers).  Valid and invalid entries side by side, traced and compiled.
    with np.errstate(all="ignore"):      # (log 0, 0/0: SciPy's warnings too)
        x, bad = np.array([0.5, 0.5, 0.5, 0.5]), np.array([1.5, 0.0, -1.0, np.nan])
        cases = [(m, "norm", lambda m, p: m(x, 0.1, p)) for m in
                 ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")]
        cases += [(m, "t", lambda m, p: m(x, p)) for m in ("logpdf", "pdf")]
        cases += [(m, "t", lambda m, p: m(x, 3.0, 0.0, p)) for m in ("logpdf", "pdf")]
        cases += [(m, "gamma", lambda m, p: m(x, p)) for m in ("logpdf", "pdf")]
        cases += [(m, "gamma", lambda m, p: m(x, 2.0, 0.0, p)) for m in ("logpdf", "pdf")]
        cases += [(m, "chi2", lambda m, p: m(x, p)) for m in ("logpdf", "pdf")]
        cases += [(m, "beta", lambda m, p: m(x, p, 2.0)) for m in ("logpdf", "pdf")]
        cases += [(m, "beta", lambda m, p: m(x, 2.0, p)) for m in ("logpdf", "pdf")]
        cases += [(m, "poisson", lambda m, p: m(np.arange(4), p - 0.5))
                  for m in ("logpmf", "pmf")]
        for method, dist, call in cases:
            ours = getattr(getattr(stats, dist), method)
            expected = call(getattr(getattr(st, dist), method), bad)
            assert np.isnan(expected[1:]).all()
            for got in (wg.trace(lambda p: call(ours, p), bad)(bad),
                        wg.compile(lambda p: call(ours, p), bad)(bad)):
                assert_close(got, expected, rtol=1e-13, atol=0)      # (nan where SciPy's is)
        assert np.isfinite(wg.grad(lambda s: np.sum(stats.norm.logpdf(x, 0.0, s)))(1.5))


def test_invalid_parameters_give_nan_derivatives_without_warnings():
    # (the derivative was 0 where the value was nan, which reads as an optimum, and the
    # values warned of log(-1) where SciPy's are silent)
    x = np.array([-0.5, 0.25, 0.5, 2.0])
    calls = [(d, m, lambda f, p: f(x, 0.1, p)) for d, m in
             (("norm", "logpdf"), ("norm", "pdf"), ("norm", "cdf"), ("norm", "logsf"))]
    calls += [("t", m, lambda f, p: f(x, 3.0, 0.0, p)) for m in ("logpdf", "cdf", "logcdf")]
    calls += [(d, m, lambda f, p: f(x, p)) for d in ("t", "gamma", "chi2")
              for m in ("logpdf", "pdf")]
    calls += [("gamma", m, lambda f, p: f(x, p)) for m in ("cdf", "sf")]
    calls += [("beta", m, lambda f, p: f(x / 2, 2.0, p)) for m in ("logpdf", "pdf", "sf")]
    calls += [("poisson", m, lambda f, p: f(np.arange(4), p)) for m in ("logpmf", "pmf")]
    for dist, method, call in calls:
        ours = getattr(getattr(stats, dist), method)
        for p in (-1.0, 0.0 if dist != "poisson" else -0.5, np.nan):
            with warnings.catch_warnings():       # (eagerly traced: the forward pass)
                warnings.simplefilter("error")
                value, _ = wg.vjp(lambda p: call(ours, p), p)
            assert np.isnan(value).all(), (dist, method, p)
            with np.errstate(all="ignore"):     # (SciPy's own warns of 1/0 for scale 0)
                assert np.isnan(call(getattr(getattr(st, dist), method), p)).all()
                if not (dist == "t" and method != "logpdf"):       # (t.cdf in df refuses)
                    assert np.isnan(wg.grad(lambda p: np.sum(call(ours, p)))(p)), (dist, method)
                if dist != "poisson":
                    # (outside the support the density is a constant, its x not read: the
                    # select that puts it there sends the branch not taken nothing, as JAX's)
                    g = wg.grad(lambda x: np.sum(call(lambda x_, *a: ours(x, *a), p)))(x)
                    support = {"gamma": x > 0, "chi2": x > 0, "beta": (x > 0) & (x < 2)}
                    inside = support.get(dist, np.ones(x.shape, bool))
                    assert np.isnan(g[inside]).all(), (dist, method, p)
    # valid entries beside invalid ones keep their values and derivatives exactly
    scale = np.array([0.5, -1.0, 2.0, 0.0])
    with np.errstate(all="ignore"):     # (the derivative's 1/0 at scale 0: NumPy's warning)
        got = wg.grad(lambda s: np.sum(stats.norm.logpdf(x, 0.1, s)))(scale)
    z = (x[[0, 2]] - 0.1) / scale[[0, 2]]
    assert_close(got[[0, 2]], (z * z - 1) / scale[[0, 2]], rtol=1e-15, atol=0)
    assert np.isnan(got[[1, 3]]).all()


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")    # (0**-1: NumPy's)
def test_densities_at_the_edge_of_their_support():
    # exp(logpdf) has the derivative pdf · d logpdf = 0 · inf = nan where logpdf is -inf
    # at the edge of the support; there the density is a power, whose limits these are
    for a, slope, curvature in ((1.0, -1.0, 1.0), (1.5, np.inf, None), (2.0, 1.0, -2.0),
                                (3.0, 0.0, 1.0), (4.5, 0.0, 0.0)):
        f = lambda x: stats.gamma.pdf(x, a, 0.5, 2.0)          # the edge is x = loc
        assert f(0.5) == st.gamma.pdf(0.5, a, 0.5, 2.0)
        assert wg.trace(f, 0.5)(0.5) == st.gamma.pdf(0.5, a, 0.5, 2.0)
        # d/dx of y^(a-1) e^(-y)/(Γ(a) s) at y = 0, with y = (x - loc)/s
        got = wg.grad(f)(0.5)
        assert got == pytest.approx(slope / 4, rel=1e-14) if np.isfinite(slope) else got == slope
        h = 1e-7                                            # the slope from the right
        assert (f(0.5 + h) - f(0.5)) / h == pytest.approx(slope / 4, abs=1e-5) or slope == np.inf
        assert wg.grad(stats.gamma.pdf, argnums=2)(0.5, a, 0.5, 2.0) == -got   # in loc
        if curvature is not None:
            assert wg.hessian(f)(0.5) == pytest.approx(curvature / 8, rel=1e-13, abs=1e-300)
    assert wg.grad(stats.chi2.pdf)(0.0, 4.0) == pytest.approx(0.25, rel=1e-14)  # x/4 e^(-x/2)
    # beta's two edges: 6y(1 - y) has slopes 6 and -6, 12y²(1 - y) 0 and -12
    for a, b, slopes in ((2.0, 2.0, (6.0, -6.0)), (3.0, 2.0, (0.0, -12.0)),
                         (1.0, 3.0, (-6.0, 0.0))):
        for y, slope in zip((0.0, 1.0), slopes):
            assert stats.beta.pdf(y, a, b) == st.beta.pdf(y, a, b)
            assert wg.grad(stats.beta.pdf)(y, a, b) == pytest.approx(slope, rel=1e-14, abs=1e-15)
            g = wg.grad(stats.beta.pdf, argnums=(1, 2))(y, a, b)     # the value is 0 or a
            assert np.isfinite(g).all()                             # power of 1 near there
    # poisson's pmf at μ = 0: μ^k e^(-μ)/k!, with slopes -1, 1, 0, 0 (0 for non-counts)
    k = np.array([0.0, 1.0, 2.0, 5.0, 2.5])
    assert_close(wg.trace(lambda m: stats.poisson.pmf(k, m), 0.0)(0.0), st.poisson.pmf(k, 0.0),
                 rtol=0, atol=0)
    slopes = [wg.grad(lambda m: stats.poisson.pmf(kk, m))(0.0) for kk in k]
    assert slopes == [-1.0, 1.0, 0.0, 0.0, 0.0]
    assert wg.hessian(lambda m: stats.poisson.pmf(2.0, m))(0.0) == pytest.approx(1.0, rel=1e-14)
    # away from the edges the densities are exp(logpdf), to second order
    check_grads(lambda x, a: stats.gamma.pdf(x, a, 0.1, 1.5), np.array([0.4, 2.0]),
                np.array(2.5), order=2)
    check_grads(lambda y, a: stats.beta.pdf(y, a, 1.5), np.array([0.2, 0.9]), np.array(2.5),
                order=2)
    check_grads(lambda m: stats.poisson.pmf(np.arange(4.0), m), np.array(0.7), order=2)


def test_nan_points_stay_nan_and_infinite_ones_are_outside():
    with np.errstate(all="ignore"):      # (log 0, 0/0: SciPy's warnings too)
        x = np.array([np.nan, np.inf, -np.inf, 0.5])
        for dist, params in (("gamma", (2.0,)), ("beta", (2.0, 3.0)), ("t", (3.0,)),
                             ("norm", ()), ("chi2", (3.0,))):
            ref = getattr(st, dist).logpdf(x, *params)
            got = wg.trace(lambda x: getattr(stats, dist).logpdf(x, *params), x)(x)
            assert_close(got, ref, rtol=1e-13, atol=0)
        k = np.array([np.nan, 1.5, -1.0, 2.0])
        assert_close(wg.trace(lambda m: stats.poisson.logpmf(k, m), 2.0)(2.0),
                     st.poisson.logpmf(k, 2.0), rtol=1e-13, atol=0)


def test_log1pmx_keeps_its_digits_next_to_zero():
    # log1p(x) - x lost 5 digits at x = 1e-5 and every digit below 1e-8
    import mpmath
    rng = np.random.default_rng(7)
    x = np.concatenate([10 ** rng.uniform(-20, 0.5, 300), -10 ** rng.uniform(-20, -0.01, 300),
                        [0.4999999999, 0.5, -0.4999999999, -0.5, 1e-300]])
    with mpmath.workdps(40):
        exact = np.array([float(mpmath.log1p(mpmath.mpf(v)) - mpmath.mpf(v)) for v in x])
    got = P.log1pmx(x)
    np.testing.assert_allclose(got, exact, rtol=5e-16, atol=0)
    # its derivative -x/(1 + x), to second order
    check_grads(P.log1pmx, np.array([1e-3, -0.3, 0.7, 4.0]), order=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal(P.log1pmx(np.array([-1.0, -2.0, np.inf, np.nan])),
                                      [-np.inf, np.nan, -np.inf, np.nan])
    assert P.log1pmx(np.float32(0.25)).dtype == np.float32


def test_t_derivative_in_the_degrees_of_freedom_keeps_its_digits():
    # The plain form's terms are O(1/ν) with a sum O(1/ν²): its ν-derivative lost a digit
    # per decade of ν (7e-7 relative at ν = 1e10, 1e-2 at 1e14, 42% at worst on these
    # points); mpmath's derivative of the exact log-density is the reference
    import mpmath
    rng = np.random.default_rng(3)

    def exact(x, nu):
        x, nu = mpmath.mpf(x), mpmath.mpf(nu)
        return (mpmath.loggamma((nu + 1) / 2) - mpmath.loggamma(nu / 2)
                - mpmath.log(nu * mpmath.pi) / 2 - (nu + 1) / 2 * mpmath.log1p(x * x / nu))

    points = [(1.5, 1e10), (1.5, 1e14), (0.3, 40.0), (30.0, 3.0), (2.0, 1e7)]
    points += [(rng.normal() * 10 ** rng.uniform(-3, 3), 10 ** rng.uniform(-2, 15))
               for _ in range(40)]
    for x, nu in points:
        with mpmath.workdps(50):
            want = [float(mpmath.diff(lambda a: exact(a, nu), x)),
                    float(mpmath.diff(lambda b: exact(x, b), nu))]
        got = wg.grad(stats.t.logpdf, argnums=(0, 1))(x, nu)
        assert_close(got, want, rtol=2e-13, atol=0)


def test_t_for_large_and_infinite_degrees_of_freedom():
    # The gammaln difference cancelled for a large ν (5 digits lost at ν = 1e10), and at
    # ν = inf gave nan where SciPy's is the normal density
    import mpmath
    x = np.array([-3.0, 0.5, 2.0])
    for df in (5.0, 59.0, 61.0, 1e3, 1e6, 1e10, 1e300):
        with mpmath.workdps(340):           # (log Γ(ν/2) is about 1e302 at ν = 1e300)
            nu = mpmath.mpf(df)
            exact = [float(mpmath.loggamma((nu + 1) / 2) - mpmath.loggamma(nu / 2)
                           - mpmath.log(nu * mpmath.pi) / 2
                           - (nu + 1) / 2 * mpmath.log1p(mpmath.mpf(v) ** 2 / nu)) for v in x]
        assert_close(wg.trace(lambda d: stats.t.logpdf(x, d), df)(df), exact, rtol=2e-14, atol=0)
    assert_close(wg.trace(lambda d: stats.t.logpdf(x, d), np.inf)(np.inf),
                 st.norm.logpdf(x), rtol=1e-15, atol=0)
    # the derivative in ν on both sides of the asymptotic series' threshold (ν = 60)
    for df in (40.0, 59.5, 60.5, 150.0):
        check_grads(lambda d: stats.t.logpdf(x, d, 0.2, 1.3), np.array(df), eps=1e-4)
    assert_close(wg.grad(lambda x: np.sum(stats.t.logpdf(x, np.inf)))(x), -x, rtol=0, atol=0)


def test_float32_stays_float32_with_python_number_parameters():
    # (the default loc=0, scale=1 made it float64 through log(scale), and Python numbers
    # beside float32 made SciPy's ufuncs compute in float64)
    x = np.array([0.3, 0.6], np.float32)
    calls = [lambda x: stats.norm.logpdf(x), lambda x: stats.norm.logcdf(x, 1, 2),
             lambda x: stats.t.logpdf(x, 3), lambda x: stats.t.pdf(x, 100.0, scale=2),
             lambda x: stats.gamma.logpdf(x, 2.5), lambda x: stats.beta.logpdf(x, 2, 3.5),
             lambda x: stats.gamma.pdf(x, 2.5), lambda x: stats.beta.pdf(x, 2, 3.5),
             lambda x: stats.chi2.pdf(x, 3),
             lambda x: stats.multivariate_normal.logpdf(x, cov=np.eye(2, dtype=np.float32)),
             # (poisson's count k, a Python number: NumPy made it a float64 scalar)
             lambda mu: stats.poisson.logpmf(3.0, mu), lambda mu: stats.poisson.pmf(2, mu),
             lambda mu: stats.poisson.cdf(2.5, mu, loc=0.0), lambda mu: stats.poisson.sf(1, mu)]
    for f in calls:
        assert wg.trace(f, x).outputs[0].dtype == np.float32
        assert wg.compile(f, x)(x).dtype == np.float32
        assert wg.grad(lambda x: np.sum(f(x)))(x).dtype == np.float32


def test_multivariate_normal_reads_the_lower_triangle_and_infinite_points():
    x, cov = np.array([[0.5, 1.0], [np.inf, 0.0]]), np.array([[1.0, 0.5], [0.1, 1.0]])
    expected = st.multivariate_normal.logpdf(x, np.zeros(2), cov)      # (cov[1, 0] = 0.1)
    with np.errstate(invalid="ignore"):         # (the solve's inf - inf, then replaced)
        got = (wg.trace(lambda c: stats.multivariate_normal.logpdf(x, np.zeros(2), c), cov)(cov),
               wg.trace(lambda x: stats.multivariate_normal.logpdf(x, np.zeros(2), cov), x)(x))
    for g in got:
        assert_close(g, expected, rtol=1e-13, atol=0)
    g = wg.grad(lambda c: stats.multivariate_normal.logpdf(x[0], np.zeros(2), c))(cov)
    assert_close(g, g.T, rtol=0, atol=0)                # the symmetric derivative


def test_poisson_in_mu():
    k = np.array([0, 1, 3, 7, -1])
    mu = 2.5
    for f, ref in ((stats.poisson.logpmf, st.poisson.logpmf), (stats.poisson.pmf, st.poisson.pmf)):
        np.testing.assert_array_equal(f(k, mu), ref(k, mu))
        assert_close(wg.trace(lambda m: f(k, m), mu)(mu), ref(k, mu), rtol=1e-13, atol=1e-15)
    g = wg.grad(lambda m: np.sum(stats.poisson.logpmf(k[:4], m)))(mu)
    assert g == pytest.approx(np.sum(k[:4]) / mu - 4, rel=1e-14)
    check_grads(lambda m: stats.poisson.logpmf(k[:4], m), np.array(mu))


def test_multivariate_normal_argument_forms():
    mvn, ref = stats.multivariate_normal, st.multivariate_normal
    cases = [(0.3, None, 1.0), (np.array([0.3, -1.0]), 0.5, 2.0),
             (np.array([0.3, -1.0]), np.zeros(2), np.array([1.0, 3.0])),
             (rng.normal(size=(2, 5, 2)), np.ones(2), _spd(2))]
    for x, mean, cov in cases:
        expected = ref.logpdf(x, mean, cov)
        got = wg.trace(lambda x: mvn.logpdf(x, mean, cov), x)(x)
        assert np.shape(got) == np.shape(expected)
        assert_close(got, expected, rtol=1e-12, atol=1e-14)
    x, mean, cov = rng.normal(size=3), rng.normal(size=3), _spd(3)
    expected = -np.linalg.solve(cov, x - mean)
    assert_close(wg.grad(mvn.logpdf)(x, mean, cov), expected, rtol=1e-12, atol=1e-14)
    with pytest.raises(NotImplementedError, match="allow_singular"):
        wg.grad(lambda x: mvn.logpdf(x, mean, cov, allow_singular=True))(x)


def test_multivariate_normal_refuses_what_scipy_refuses():
    # (an indefinite cov gave numbers: slogdet's sign was dropped; SciPy raises)
    mvn, x = stats.multivariate_normal, np.ones(2)
    for cov in (np.array([[1.0, 2.0], [2.0, 1.0]]), np.ones((2, 2)), -np.eye(2)):
        with pytest.raises(np.linalg.LinAlgError, match="positive definite"):
            wg.grad(lambda x: mvn.logpdf(x, np.zeros(2), cov))(x)
        with pytest.raises(np.linalg.LinAlgError, match="positive definite"):
            wg.grad(lambda c: mvn.entropy(np.zeros(2), c))(cov)
        with pytest.raises((np.linalg.LinAlgError, ValueError)):
            st.multivariate_normal.logpdf(x, np.zeros(2), cov)
    with pytest.raises(ValueError, match=r"points of shape \(1, 3\).* 2 components"):
        wg.grad(lambda x: mvn.logpdf(x, np.zeros(2), np.eye(2)))(np.ones(3))
    with pytest.raises(ValueError, match=r"points of shape \(4, 3\).* 2 components"):
        wg.grad(lambda x: np.sum(mvn.logpdf(x, np.zeros(2), np.eye(2))))(np.ones((4, 3)))
    # one variance, a Python number or float32, leaves float32 points float32
    x32 = np.array([0.5, 1.0], np.float32)
    for var in (2.0, np.float32(2.0)):
        f = lambda x: mvn.logpdf(x, np.zeros(2, np.float32), var)
        assert wg.trace(f, x32).outputs[0].dtype == np.float32
        assert_close(wg.trace(f, x32)(x32), st.multivariate_normal.logpdf(x32, np.zeros(2), 2.0),
                     rtol=1e-6, atol=0)
        assert_close(wg.grad(f)(x32), -x32 / 2, rtol=1e-6, atol=0)


def test_dirichlet_with_k_minus_one_components():
    x, alpha = np.array([0.2, 0.3]), np.array([1.5, 2.0, 3.0])
    assert_close(wg.trace(lambda a: stats.dirichlet.logpdf(x, a), alpha)(alpha),
                 st.dirichlet.logpdf(x, alpha), rtol=1e-13, atol=0)


# ---- staged ------------------------------------------------------------------------------
def test_compile_agrees_with_eager():
    def loss(x, mu, s):
        return (np.sum(stats.norm.logpdf(x, mu, s)) + np.sum(stats.t.logpdf(x, 3.0, mu, s))
                + np.sum(special.gammaln(s * x * x + 1)) + np.sum(special.expit(x))
                + np.sum(special.erf(x) * special.log_ndtr(x)) + special.logsumexp(x)
                + np.sum(special.polygamma(2, s + x * x)))
    args = (uniform(-2, 2), 0.3, 1.4)
    for f in (loss, wg.grad(loss, argnums=(0, 1, 2))):
        compiled = wg.compile(f, *args)
        other = (uniform(-2, 2), -0.2, 0.8)
        for a in (args, other):
            for got, expected in zip(wg.tree.flatten(compiled(*a))[0],
                                     wg.tree.flatten(f(*a))[0]):
                assert_close(got, expected, rtol=1e-13, atol=1e-13)
    mvn = lambda x, c: stats.multivariate_normal.logpdf(x, np.zeros(2), c)
    x, c = rng.normal(size=(3, 2)), _spd(2)
    assert_close(wg.compile(wg.grad(lambda x, c: np.sum(mvn(x, c)), argnums=1), x, c)(x, c),
                 wg.grad(lambda x, c: np.sum(mvn(x, c)), argnums=1)(x, c), rtol=1e-13, atol=1e-14)


def test_c_backend_writes_what_math_h_has_and_refuses_the_rest():
    f = lambda x, y: (special.erf(x) + special.erfc(y) + special.gammaln(y) + special.gamma(y)
                      + special.expit(x) * special.logit(y / 3) + special.ndtr(x)
                      + special.xlogy(x, y) + special.xlog1py(y, x) + special.rgamma(y - 2))
    try:
        c = wg.compile(f, 0.3, 0.7, backend="c")
    except wg.staged.CompilerNotFound if hasattr(wg, "staged") else OSError:
        pytest.skip("no C compiler")
    for a in ((0.3, 0.7), (-30.0, 2.5), (0.0, 1.2), (0.3, 1.0)):     # (rgamma(-1) = 0)
        assert_close(c(*a), f(*a), rtol=1e-13, atol=1e-13)
    for g in (special.digamma, special.erfinv, special.log_ndtr, special.betaln):
        with pytest.raises(EmitError, match=f"SciPy's '{g.__name__}'"):
            wg.compile(g, 0.3, backend="c")
    with pytest.raises(EmitError, match="polygamma"):
        wg.compile(lambda x: special.polygamma(2, x), 0.5).code("fortran")
    with pytest.raises(EmitError, match="FORTRAN has no iv with its parameter v=2, and a "
                                        "call would lose it"):
        wg.compile(lambda x: special.iv(2, x), 0.5).code("fortran")
    # ADDS text reads back: the language has neither function (and IV(X) would be some
    # other function of X)
    for f in (lambda x: special.iv(2.5, x), lambda x: special.polygamma(2, x)):
        with pytest.raises(EmitError, match=r"ADDS has no (iv|polygamma): its language"):
            wg.compile(f, 0.5).code("adds")
    text = wg.compile(lambda x: special.gammaln(x) + special.erf(x), 0.5).code("fortran")
    assert "LOG_GAMMA(" in text and "ERF(" in text


# ---- Taylor mode ---------------------------------------------------------------------------
t = sp.Symbol("t")
R = sp.Rational
TAYLOR = {
    "erf": (P.erf, sp.erf, R(3, 10)),
    "erfc": (P.erfc, sp.erfc, R(-1, 2)),
    "erfinv": (P.erfinv, sp.erfinv, R(3, 10)),
    "ndtr": (P.ndtr, lambda x: (1 + sp.erf(x / sp.sqrt(2))) / 2, R(2, 5)),
    "log_ndtr": (P.log_ndtr, lambda x: sp.log((1 + sp.erf(x / sp.sqrt(2))) / 2), R(-1, 2)),
    "gammaln": (P.gammaln, sp.loggamma, R(13, 10)),
    "digamma": (P.digamma, sp.digamma, R(13, 10)),
    "polygamma2": (lambda x: P.polygamma(x, n=2), lambda x: sp.polygamma(2, x), R(13, 10)),
    "gamma": (P.gamma, sp.gamma, R(13, 10)),
    "expit": (P.expit, lambda x: 1 / (1 + sp.exp(-x)), R(7, 10)),
    "logit": (P.logit, lambda x: sp.log(x / (1 - x)), R(3, 10)),
    "xlogy": (lambda x: P.xlogy(1 + x, 2 - x), lambda x: (1 + x) * sp.log(2 - x), R(1, 5)),
    "xlog1py": (lambda x: P.xlog1py(1 + x, 2 - x), lambda x: (1 + x) * sp.log(3 - x), R(1, 5)),
    # the Bessel functions Iᵥ at 0 too, where I₁' = I₀ - I₁/x would be 0/0
    "i0": (P.i0, lambda x: sp.besseli(0, x), R(7, 10)),
    "i0 at 0": (P.i0, lambda x: sp.besseli(0, x), R(0)),
    "i1 at 0": (P.i1, lambda x: sp.besseli(1, x), R(0)),
    "i1": (P.i1, lambda x: sp.besseli(1, x), R(-3, 2)),
    "iv2.5": (lambda x: P.iv(x, v=2.5), lambda x: sp.besseli(R(5, 2), x), R(13, 10)),
    "iv4 at 0": (lambda x: P.iv(x, v=4), lambda x: sp.besseli(4, x), R(0)),
    "i1e": (P.i1e, lambda x: sp.exp(-x) * sp.besseli(1, x), R(13, 10)),
    "ive1.5": (lambda x: P.ive(x, v=1.5), lambda x: sp.exp(-x) * sp.besseli(R(3, 2), x),
               R(7, 10)),
    "ive2": (lambda x: P.ive(x, v=2), lambda x: sp.exp(x) * sp.besseli(2, x), R(-13, 10)),
}


@pytest.mark.parametrize("name", sorted(TAYLOR))
def test_taylor_coefficients_against_sympy_to_order_8(name):
    f, F, x0 = TAYLOR[name]
    series = sp.series(F(x0 + t), t, 0, 9).removeO()
    expected = [float(sp.N(series.coeff(t, j), 30)) for j in range(9)]
    got = wg.taylor(f, float(x0), 1.0, order=8)
    scale = max(1.0, max(abs(c) for c in expected))
    assert_close(got, expected, rtol=1e-12, atol=1e-13 * scale)


def test_bessel_derivatives_at_and_near_zero_against_closed_forms():
    """Iᵥ⁽ᵏ⁾ = 2⁻ᵏ Σ_j C(k, j) Iᵥ₋ₖ₊₂ⱼ: nested grad to order 5 at 0, next to 0 (where
    I₁' = I₀ - I₁/x loses every digit) and away from it."""
    for v, f in ((0, special.i0), (1, special.i1), (2, lambda x: special.iv(2, x)),
                 (0.5, lambda x: special.iv(0.5, x))):
        d = f
        for k in range(1, 6):
            d = wg.grad(d)
            for x in ((0.0, 1e-7, 1e-3, 2.5) if v != 0.5 else (1e-3, 2.5)):
                want = sum(math.comb(k, j) * sc.iv(v - k + 2 * j, x) for j in range(k + 1)) / 2 ** k
                assert d(x) == pytest.approx(want, rel=1e-12, abs=1e-15), (v, k, x)


def test_bessel_orders_are_constants():
    x = np.array([0.5, 1.5])
    with pytest.raises(TypeError, match="iv: the order is not differentiable"):
        wg.grad(lambda v: special.iv(v, 1.0))(2.0)
    with pytest.raises(ValueError, match="ive on traced values takes one finite real order"):
        wg.grad(lambda a: np.sum(special.ive(np.array([1.0, 2.0]), a)))(x)
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match="iv on traced values takes one finite real order"):
            wg.grad(lambda a: special.iv(bad, a))(1.0)
    # one order repeated is that order; a whole float order is the integer's node
    g = wg.grad(lambda a: np.sum(special.iv(np.array([2.0, 2.0]), a)))(x)
    assert_close(g, (sc.iv(1, x) + sc.iv(3, x)) / 2, rtol=1e-14)
    # x is broadcast against the orders' shape, as SciPy's ufunc broadcasts them
    for fn, ref in ((special.iv, sc.iv), (special.ive, sc.ive), (special.polygamma, sc.polygamma)):
        v = np.full((3, 2), 2.0)
        value, g = wg.value_and_grad(lambda a: np.sum(fn(v, a)))(x)
        assert value == pytest.approx(np.sum(ref(v, x)), rel=1e-14)
        assert g.shape == (2,) and g == pytest.approx(3 * wg.grad(lambda a: np.sum(fn(2, a)))(x))
        assert wg.jacobian(lambda a: fn(np.full(3, 2.0), a))(1.5).shape == (3,)
    assert str(wg.trace(lambda a: special.iv(2.0, a), 1.0)) == \
        str(wg.trace(lambda a: special.iv(2, a), 1.0))


def test_iv_without_scipy_against_scipy():
    x = np.concatenate([np.linspace(-700, 700, 4001), np.geomspace(1e-300, 700, 300)])
    for n in (0, 1, 2, 5, 12, -3):
        # (SciPy's flushes Iₙ to 0 below about 1e-150, this one does not)
        want, got = sc.iv(n, x), P.iv_numpy(n, x)
        assert_close(got[want != 0], want[want != 0], rtol=1e-14, atol=0)
        assert np.all(np.abs(got[want == 0]) < 1e-150)
    assert P.iv_numpy(2, np.float32([1.5])).dtype == np.float32


def test_taylor_of_a_distribution_agrees_with_nested_derivatives():
    f = lambda x: stats.norm.logcdf(x, 0.2, 1.5) + stats.t.logpdf(x, 4.0)
    got = wg.derivatives(f, order=3)(0.4)
    d1 = wg.grad(f)
    d2 = wg.grad(d1)
    assert_close(got[:3], [f(0.4), d1(0.4), d2(0.4)], rtol=1e-13, atol=1e-14)
    assert_close(got[3], fd_derivative(d2, 0.4, 1e-5), rtol=1e-6, atol=1e-7)


# ---- errors ----------------------------------------------------------------------------------
def test_functions_without_rules_are_scipys_on_plain_values_and_refused_on_traced():
    assert special.kv(1, 0.3) == sc.kv(1, 0.3)
    with pytest.raises(NotImplementedError, match="scipy.special.kv"):
        wg.grad(lambda x: special.kv(1, x))(0.3)
    assert stats.norm.ppf(0.975) == st.norm.ppf(0.975)
    with pytest.raises(NotImplementedError, match="scipy.stats.norm.ppf"):
        wg.grad(stats.norm.ppf)(0.3)
    with pytest.raises(AttributeError):
        special.not_a_function


def test_import_without_scipy_says_how_to_install(monkeypatch):
    for name in list(sys.modules):
        if name == "scipy" or name.startswith(("scipy.", "wengert.scipy")):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "scipy", None)        # import scipy raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'wengert\[scipy\]'"):
        importlib.import_module("wengert.scipy")
    with pytest.raises(ImportError, match=r"pip install 'wengert\[scipy\]'"):
        P._scipy("erf")(0.5)          # a primitive's first evaluation asks for SciPy too
    # the Bessel functions that NumPy's i0's derivatives reach have an evaluation of their own
    x = np.array([-2.0, 0.0, 0.5])
    np.testing.assert_array_equal(P._iv_np(x, 2.0), P.iv_numpy(2, x))
    with pytest.raises(ImportError, match=r"pip install 'wengert\[scipy\]'"):
        P._iv_np(x, 2.5)


def test_scipy_special_ufuncs_called_directly_differentiate():
    """Unmodified code calling SciPy's own ufuncs on traced values: NumPy's protocol hands
    them to wengert, which runs wengert.scipy.special's function of the same name."""
    import wengert.numpy as wnp
    x = np.array([0.3, 1.7, 4.2])
    for name in ("gammaln", "erf", "expit", "digamma", "i0e", "i1"):
        want = wg.grad(lambda v: wnp.sum(getattr(special, name)(v)))(x)
        got = wg.grad(lambda v: wnp.sum(getattr(sc, name)(v)))(x)
        np.testing.assert_array_equal(got, want)
    h = 1e-6
    assert abs(wg.grad(sc.gammaln)(3.0) - (sc.gammaln(3 + h) - sc.gammaln(3 - h)) / (2 * h)) \
        < 1e-8
    assert_close(wg.grad(lambda v: wnp.sum(sc.iv(2.5, v)))(x), (sc.iv(1.5, x) + sc.iv(3.5, x)) / 2,
                 rtol=1e-14)
    with pytest.raises(NotImplementedError, match=r"scipy\.special\.struve is not supported"):
        wg.grad(sc.struve)(1.0, 0.5)
    # zeta is a Python function calling SciPy's internal ufunc _zeta: named as the user wrote it
    for f in (lambda x: sc.zeta(x, 1.0), lambda x: sc.zeta(x)):      # (_zeta, _riemann_zeta)
        with pytest.raises(NotImplementedError, match=r"^scipy\.special\.zeta is not supported"):
            wg.grad(f)(2.0)


# ---- derivatives at extreme arguments (QA against mpmath) -----------------------------------
def test_log_ndtr_derivatives_far_in_the_left_tail():
    # φ/Φ was exp(-x²/2 - log Φ)/√(2π), which subtracts numbers of size x²: at x = -1e8 it
    # gave 1.9e8 for 1e8, and the second derivative at -1e4 was -1.54 for -1.0.  The
    # reference: Φ(x) = φ(x)/(-x)·(1 - 1/x² + 3/x⁴ - 15/x⁶ + 105/x⁸ - ...), so that
    # φ/Φ = -x/(1 - 1/x² + ...), exact to double precision here.
    for x in (-1e2, -1e4, -1e6, -1e8):
        want = -x / (1 - x ** -2 + 3 * x ** -4 - 15 * x ** -6 + 105 * x ** -8)
        assert_close(wg.grad(special.log_ndtr)(x), want, rtol=1e-15, atol=0)
        assert_close(wg.grad(stats.norm.logcdf)(x), want, rtol=1e-15, atol=0)
    # d/dx (φ/Φ) = -(φ/Φ)(x + φ/Φ), with x + φ/Φ = -1/x + 2/x³ - 10/x⁵ (the same series)
    for x in (-1e2, -1e3):
        mills = -x / (1 - x ** -2 + 3 * x ** -4 - 15 * x ** -6)
        want = -mills * (-1 / x + 2 / x ** 3 - 10 / x ** 5)
        assert_close(wg.grad(wg.grad(special.log_ndtr))(x), want, rtol=1e-9, atol=0)
    d = wg.derivatives(special.log_ndtr, 4)(-30.0)           # Taylor mode, the same rule
    assert_close(d[1], wg.grad(special.log_ndtr)(-30.0), rtol=1e-14, atol=0)
    assert_close(d[2], wg.grad(wg.grad(special.log_ndtr))(-30.0), rtol=1e-9, atol=0)
    with np.errstate(divide="ignore"):                       # (1/erfcx(inf) = 1/0)
        assert wg.grad(special.log_ndtr)(-np.inf) == np.inf
    assert wg.grad(special.log_ndtr)(np.inf) == 0.0


def test_erfcx_and_its_derivatives():
    x = np.array([-3.0, -0.4, 0.0, 0.7, 5.0, 30.0])
    assert_close(special.erfcx(x), sc.erfcx(x), rtol=1e-15, atol=0)
    g = wg.vjp(special.erfcx, x)[1](np.ones_like(x))[0]
    assert_close(g, 2 * x * sc.erfcx(x) - 2 / np.sqrt(np.pi), rtol=1e-12, atol=1e-15)
    check_grads(special.erfcx, x[:5], order=2)
    d = wg.derivatives(special.erfcx, 3)(0.7)                # y'' = 2y + 2x·y'
    assert_close(d[2], 2 * d[0] + 2 * 0.7 * d[1], rtol=1e-13)


def _erfcx_series_exact(x, order):
    """erfcx and its derivatives 1..order at x (mpmath numbers, in the caller's precision)
    by y⁽ᵏ⁺¹⁾ = 2x·y⁽ᵏ⁾ + 2k·y⁽ᵏ⁻¹⁾, whose cancellation for large x enough digits absorb."""
    import mpmath
    y = [mpmath.exp(x * x) * mpmath.erfc(x)]
    y.append(2 * x * y[0] - 2 / mpmath.sqrt(mpmath.pi))
    for k in range(1, order):
        y.append(2 * x * y[k] + 2 * k * y[k - 1])
    return y


def _erfcx_derivatives_exact(x, order):
    """erfcx's derivatives 1..order, in 400-digit arithmetic."""
    import mpmath
    with mpmath.workdps(400):
        return [float(v) for v in _erfcx_series_exact(mpmath.mpf(x), order)[1:]]


def _log_ndtr_derivative_exact(x, n):
    """log Φ's n-th derivative as that of log(erfcx(z)/2) - x²/2, z = -x/√2, in 700-digit
    arithmetic (n! times the t^n coefficient of the logarithm of erfcx's series); for
    x > 0 an independent check of wengert's form there (Φ's own series)."""
    import mpmath
    with mpmath.workdps(700):
        z = -mpmath.mpf(x) / mpmath.sqrt(2)
        c = [d * (-1 / mpmath.sqrt(2)) ** k / mpmath.factorial(k)
             for k, d in enumerate(_erfcx_series_exact(z, n))]
        logs = [None]
        for k in range(1, n + 1):
            logs.append((c[k] - sum(j * logs[j] * c[k - j] for j in range(1, k)) / k) / c[0])
        return float(mpmath.factorial(n) * logs[n] - (1 if n == 2 else 0))


@pytest.mark.parametrize("x", [-20.0, -2.5, -0.3, 0.0, 0.6, 0.999, 1.0, 1.7, 3.0, 10.0, 100.0,
                               1e4, 1e6])
def test_erfcx_derivatives_keep_their_digits_for_large_x(x):
    # y' = 2x·y - 2/√π cancels for large x, and so did every derivative read from it: the
    # first lost every digit at 1e8, the second was off by 2.4x at 1e4, the third by 5e-5
    # at 100.  erfcx_derivative runs the recurrence backward there.
    exact = _erfcx_derivatives_exact(x, 8)
    rtol = 1e-14 if x >= 1 else 1e-13
    assert_close(wg.derivatives(special.erfcx, 8)(x)[1:], exact, rtol=rtol, atol=0)
    d = special.erfcx
    for n in range(3):
        d = wg.grad(d)
        assert_close(d(x), exact[n], rtol=rtol, atol=0)
    assert_close(wg.jacfwd(wg.jacrev(special.erfcx))(x), exact[1], rtol=rtol, atol=0)


def test_erfcx_derivatives_far_out_against_the_asymptotic_series():
    # at 1e8, (-1)ⁿ n!/(√π xⁿ⁺¹), the first term of the asymptotic series, is exact
    big = 1e8
    got = wg.derivatives(special.erfcx, 4)(big)[1:]
    want = [(-1) ** n * math.factorial(n) / (math.sqrt(math.pi) * big ** (n + 1))
            for n in range(1, 5)]
    assert_close(got, want, rtol=1e-15, atol=0)
    assert wg.grad(special.erfcx)(big) == pytest.approx(want[0], rel=1e-15)


def test_erfcx_derivative_values_float32_and_infinities():
    x = np.array([-np.inf, -3.0, 0.5, 1.0, 2.0, np.inf, np.nan], np.float32)
    for n in (1, 2, 5):
        got = P.erfcx_derivative(x, n=n)
        assert got.dtype == np.float32
        exact = [_erfcx_derivatives_exact(v, n)[-1] for v in x[1:5].astype(float)]
        assert_close(got[1:5], exact, rtol=1e-6, atol=0)
        # ±∞ as the limits (2e^(x²)'s derivatives at -∞, 0 at ∞), nan stays nan
        assert got[0] == (-np.inf if n % 2 else np.inf) and got[5] == 0
        assert np.isnan(got[6])
    assert type(P.erfcx_derivative(2.0, n=3)) is type(P.erfcx(2.0))     # (as the others)


@pytest.mark.parametrize("x", [-1e8, -1e4, -300.0, -30.0, -2.0, -0.3, 0.0, 0.5, 2.0])
def test_log_ndtr_higher_derivatives_against_mpmath(x):
    # below 0 the partial is -x - erfcx'(z)/(√2 erfcx(z)), z = -x/√2 (log Φ = log(erfcx(z)/2)
    # - z²): through 1/erfcx(z) the third derivative lost 8 digits at -1e4, all at -1e8
    import mpmath
    with mpmath.workdps(120):
        exact = [float(mpmath.diff(lambda t: mpmath.log(mpmath.ncdf(t)), mpmath.mpf(x), n))
                 for n in range(1, 5)]
    assert_close(wg.derivatives(special.log_ndtr, 4)(x)[1:4], exact[:3], rtol=2e-14, atol=0)
    assert_close(wg.derivatives(special.log_ndtr, 4)(x)[4], exact[3], rtol=2e-12, atol=0)
    d = special.log_ndtr
    for n in range(3):
        d = wg.grad(d)
        assert_close(d(x), exact[n], rtol=2e-14, atol=0)


def test_beta_sf_and_t_log_tails_keep_their_digits():
    # beta.sf was betainc(b, a, 1 - y), and 1 - 1e-20 is 1: sf(1e-20; 0.01, 2) was 1.0 for
    # SciPy's 0.363, with an infinite derivative; now betaincc
    for args in ((1e-20, 0.01, 2.0), (1e-12, 0.01, 2.0), (1e-6, 50.0, 3.0), (0.3, 2.0, 3.0),
                 (0.999, 2.0, 3.0)):
        value, slope = wg.value_and_grad(stats.beta.sf)(*args)
        assert_close(value, st.beta.sf(*args), rtol=1e-14, atol=0)
        assert_close(slope, -st.beta.pdf(*args), rtol=1e-12, atol=0)
    assert_close(wg.grad(stats.beta.sf, argnums=(1, 2))(0.3, 2.0, 3.0),
                 [-d for d in wg.grad(stats.beta.cdf, argnums=(1, 2))(0.3, 2.0, 3.0)],
                 rtol=1e-13, atol=0)
    # t.logcdf and logsf were log(cdf): logcdf(20, df=30) was 0 for -3.4e-19
    for x, df in ((20.0, 30.0), (10.0, 30.0), (-3.0, 4.0), (0.0, 2.0), (2.5, 0.7)):
        for f, ref, sign in ((stats.t.logcdf, st.t.logcdf, 1), (stats.t.logsf, st.t.logsf, -1)):
            value, slope = wg.value_and_grad(f)(x, df)
            assert_close(value, ref(x, df), rtol=1e-14, atol=0)
            assert_close(slope, sign * st.t.pdf(x, df) / np.exp(ref(x, df)), rtol=1e-12,
                         atol=0)
    check_grads(lambda x: stats.t.logcdf(x, 3.0, 0.5, 2.0), np.array([-4.0, 0.3, 5.0]),
                order=2)


def test_log_ndtr_high_derivatives_for_positive_x():
    # for x >= 0 they were the series of √(2/π)/erfcx(-x/√2), which cancels as the order
    # grows: the 30th at x = 8 came out 2.8e8 for -6.2e7; now log of Φ's own series
    for x, n in ((8.0, 30), (5.0, 20), (2.0, 12), (37.0, 10), (0.0, 3)):
        assert_close(P.log_ndtr_derivative(x, n=n), _log_ndtr_derivative_exact(x, n),
                     rtol=1e-14, atol=0)
    assert_close(wg.derivatives(special.log_ndtr, 30)(8.0)[30],
                 P.log_ndtr_derivative(8.0, n=30), rtol=1e-15, atol=0)


def test_derivative_primitives_refuse_bad_orders_and_complex_values_and_keep_quiet():
    for prim in (P.erfcx_derivative, P.log_ndtr_derivative):
        for n in (0, -1, 171, 2.0, True):
            with pytest.raises(ValueError, match="order n must be an integer from 1 to 170"):
                prim(1.0, n=n)
        with pytest.raises(TypeError, match="expected real numbers"):
            prim(1 + 1j, n=1)
    with pytest.raises(ValueError, match="from 1 to 170, got 171"):
        wg.derivatives(special.log_ndtr, 171)(0.5)
    with warnings.catch_warnings():             # (erfcx(-9.5) = 2.4e39 is ∞ in float32)
        warnings.simplefilter("error")
        assert wg.grad(special.erfcx)(np.float32(-9.5)) == -np.inf


def test_log_ndtr_derivatives_at_infinity_are_their_limits():
    d, limits = special.log_ndtr, {-np.inf: [np.inf, -1.0, 0.0, 0.0], np.inf: [0.0] * 4}
    for n in range(4):
        d = wg.grad(d)
        for x, limit in limits.items():
            assert d(x) == limit[n]
    assert wg.derivatives(special.log_ndtr, 4)(np.inf)[1:] == [0.0] * 4
    # past x = 37 erfcx(-x/√2) overflows: the derivatives, which underflow, are 0, not nan
    assert wg.derivatives(special.log_ndtr, 3)(40.0)[1:] == [0.0] * 3


def test_logaddexp_logsumexp_arccosh_arcsinh_at_huge_arguments():
    import wengert.numpy as wnp
    # the shares were exp(x - ans) with ans rounded to its size: (1, 1) at (1e16, 1e16)
    g = wg.grad(wnp.logaddexp, argnums=(0, 1))
    assert g(1e16, 1e16) == (0.5, 0.5)
    assert_close(g(1e10, 1e10 + 1.0), (1 / (1 + np.e), 1 / (1 + 1 / np.e)), rtol=1e-15)
    assert wg.grad(wg.grad(lambda x: wnp.logaddexp(x, 1e16)))(1e16) == 0.25
    assert wg.derivatives(lambda x: wnp.logaddexp(x, 1e16), 2)(1e16)[1:] == [0.5, 0.25]
    for lse in (wnp.logsumexp, special.logsumexp):
        assert wg.grad(lse)(np.array([1e16, 1e16])).tolist() == [0.5, 0.5]
    check_grads(lambda v: wnp.logsumexp(v, axis=1), np.random.default_rng(3).normal(
        size=(3, 4)), order=2)
    # 1/sqrt(x² - 1) overflowed past 1.3e154 to a derivative of 0
    for x in (1e155, 1e300):
        assert_close(wg.grad(wnp.arccosh)(x), 1 / x, rtol=1e-15, atol=0)
        for f in (wnp.arccosh, wnp.arcsinh):
            assert_close(wg.derivatives(f, 2)(x)[1:], [1 / x, -1 / x / x], rtol=1e-15,
                         atol=1e-300)


def test_multigammaln_refuses_a_dimension_that_is_no_integer_and_derivatives_keep_float32():
    with pytest.raises(ValueError, match="d should be a positive integer"):
        wg.grad(lambda a: special.multigammaln(a, 2.5))(3.0)    # (it took d = 2)
    x = np.array([0.3, 0.6], np.float32)
    assert {d.dtype for d in wg.derivatives(special.erf, 3)(x)} == {np.dtype(np.float32)}


@pytest.mark.parametrize("a", [0.5, 1.0, 2.0, 5.0])
def test_derivatives_in_x_at_infinity_are_their_limits(a):
    # the gamma density in logs read ∞ - ∞ = nan at x = ∞ for a > 1; erfcx's 2x·erfcx(x)
    # read ∞·0: both derivatives tend to 0, and so do the higher ones (which were nan: the
    # zero cotangent of the branch not taken times the formula's derivative at ∞)
    fd = lambda f, x: (f(x + 1e-5) - f(x - 1e-5)) / 2e-5
    for f in (lambda x: special.gammainc(a, x), lambda x: special.gammaincc(a, x),
              lambda x: stats.gamma.cdf(x, a), lambda x: stats.chi2.sf(x, 2 * a),
              special.erfcx):
        d1, d2, d3 = wg.grad(f), wg.grad(wg.grad(f)), wg.grad(wg.grad(wg.grad(f)))
        assert [d(np.inf) for d in (d1, d2, d3)] == [0.0, 0.0, 0.0]
        assert wg.hessian(f)(np.inf) == 0.0 and wg.jacfwd(wg.jacfwd(f))(np.inf) == 0.0
        assert_close(d1(3.0), fd(f, 3.0), rtol=1e-7)
        assert_close(d2(3.0), fd(d1, 3.0), rtol=1e-7)
        assert_close(d3(3.0), fd(d2, 3.0), rtol=1e-6)
    # the mixed derivative of P(a, x) in a and x at x = ∞ too
    assert wg.grad(lambda a: wg.grad(lambda x: special.gammainc(a, x))(np.inf))(a) == 0.0
