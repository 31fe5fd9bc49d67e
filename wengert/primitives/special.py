"""Special functions (SciPy's `scipy.special`) as elementwise primitives, for
`wengert.scipy`: erf, erfc, erfinv, gammaln, digamma, polygamma, gamma, rgamma, betaln,
beta (and betaln_da, their partial), log1pmx (log1p(x) - x, for t's density), expit,
logit, ndtr, log_ndtr and erfcx (with log_ndtr_derivative and erfcx_derivative, their
derivatives of every order), xlogy and xlog1py; the incomplete gamma and beta functions
gammainc, gammaincc, betainc and betaincc (with their partials in the shapes, gammainc_da,
betainc_da and betainc_db), and t's distribution function stdtr (in x); the modified
Bessel functions i1, iv (fixed order v) and the scaled i0e, i1e, ive; and NumPy's i0 (for
`wengert.numpy.i0`); the Bessel functions of the first and second kinds j0, j1, jv, y0,
y1, yv (fixed order v); erfcinv and gammasgn.

Each is evaluated by SciPy's own ufunc, so a traced value equals SciPy's result; SciPy is
imported on first evaluation, not here, so wengert imports without it (the error then
says how to install it).  There is no `math` fast path: Python's erf and lgamma differ
from SciPy's in the last bit now and then.  erf and erfc alone have an evaluation of
their own, in vectorised NumPy (`erf_numpy`, `erfc_numpy`), taken where SciPy is not
installed: wengert.nn's exact gelu needs erf, and should not need SciPy.  So do i1 and iv
of integer order (`iv_numpy`), for the derivatives of NumPy's i0, which NumPy evaluates.

Partials, written with primitives as in scalar.py:

    d erf = 2/√π exp(-x²)        d gammaln = digamma          d polygamma(n) = polygamma(n+1)
    d erfinv = √π/2 exp(ans²)    d digamma = polygamma(1)     d expit = ans · expit(-x)
    d i0 = i1                    d i1 = (i0 + iv(2))/2        d rgamma = -ans · digamma
    d j0 = -j1,  d jv(v) = (jv(v-1) - jv(v+1))/2,  the same for y0 and yv;  d gammasgn = 0
    d erfcinv = -√π/2 exp(ans²)     d erfcx = erfcx_derivative(n=1), d erfcx_derivative(n) =
    erfcx_derivative(n+1), and so log_ndtr and log_ndtr_derivative: the n-th derivatives,
    from erfcx's recurrence, run backward where forward it cancels
    d iv(v) = (iv(v-1) + iv(v+1))/2, d ive(v) = (ive(v-1) + ive(v+1))/2 - sign(x) ive(v)
    d betaln = (betaln_da(a, b), betaln_da(b, a)), d beta = ans · those, where betaln_da(a, b)
    is ψ(a) - ψ(a + b) without its cancellation;  d log1pmx = -x/(1 + x)
    d gammainc/dx = x^(a-1) e^-x / Γ(a) = -d gammaincc/dx,  d gammainc/da = gammainc_da,
    d betainc/dx = x^(a-1) (1-x)^(b-1) / B(a, b),  d betainc/da, /db = betainc_da, _db,
    d stdtr/dx = t's density  (in df, and twice in the shapes: NotImplementedError)

Domains follow SciPy: gammaln of a negative non-integer is log|Γ(x)| (its derivative is
still digamma), gamma and gammaln have poles at 0, -1, -2, ... (inf), erfinv is ±inf at ±1.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from .registry import defprimitive
from .scalar import cos, eq, exp, floor, gt, log, log1p, remainder, select, sign, sin

INSTALL_HINT = ("wengert.scipy needs SciPy, which is an optional dependency: "
                "pip install 'wengert[scipy]' (or pip install scipy)")


def scipy_module(name):
    """SciPy's submodule `name` (imported on first use, so that wengert imports without
    SciPy), or an ImportError that says how to install SciPy.

    Example:
        >>> scipy_module("signal").convolve([1.0, 2.0], [1.0, 1.0]).tolist()
        [1.0, 3.0, 2.0]
    """
    import importlib
    try:
        return importlib.import_module(f"scipy.{name}")
    except ImportError as e:
        raise ImportError(INSTALL_HINT) from e


def scipy_special():
    """SciPy's `scipy.special`, or an ImportError that says how to install it."""
    return scipy_module("special")


def _scipy(name):
    """The evaluation of a primitive: SciPy's function `name`, looked up on first use."""
    found = []

    def impl(*args, **params):
        if not found:
            found.append(getattr(scipy_special(), name))
        return found[0](*args, **params)
    impl.__name__ = name
    return impl


_scipy_polygamma = _scipy("polygamma")


def _in_dtype(out, x):
    """SciPy's result in x's float dtype (SciPy's polygamma and iv give float64 for
    float32)."""
    out = np.asarray(out, dtype=np.result_type(getattr(x, "dtype", 1.0), 1.0))
    return out if out.ndim else out[()]


def _polygamma_np(x, n):
    """SciPy's polygamma(n, x), with n a parameter, in x's float dtype."""
    return _in_dtype(_scipy_polygamma(n, x), x)


_polygamma_np.__name__ = "polygamma"


# ---- erf and erfc in NumPy --------------------------------------------------------------------
# W. J. Cody's rational approximations ("Rational Chebyshev approximations for the error
# function", Math. Comp. 23 (1969), 631-638; the coefficients of his SPECFUN routine
# CALERF, 1990), each a numerator and a denominator, highest power first:
#   |x| <= 0.46875:      erf(x)  = x N(x²)/D(x²)
#   0.46875 < x <= 4:    erfc(x) = exp(-x²) N(x)/D(x)
#   x > 4:               erfc(x) = exp(-x²)/x (1/√π - N(1/x²)/(x² D(1/x²)))
# Theoretically good to 18 digits; in double precision the measured error is at most a
# few units in the last place (tests/test_nn_layers.py checks against math.erf).
_ERF_SMALL = ((1.85777706184603153e-1, 3.16112374387056560e0, 1.13864154151050156e2,
               3.77485237685302021e2, 3.20937758913846947e3),
              (1.0, 2.36012909523441209e1, 2.44024637934444173e2, 1.28261652607737228e3,
               2.84423683343917062e3))
_ERFC_MIDDLE = ((2.15311535474403846e-8, 5.64188496988670089e-1, 8.88314979438837594e0,
                 6.61191906371416295e1, 2.98635138197400131e2, 8.81952221241769090e2,
                 1.71204761263407058e3, 2.05107837782607147e3, 1.23033935479799725e3),
                (1.0, 1.57449261107098347e1, 1.17693950891312499e2, 5.37181101862009858e2,
                 1.62138957456669019e3, 3.29079923573345963e3, 4.36261909014324716e3,
                 3.43936767414372164e3, 1.23033935480374942e3))
_ERFC_TAIL = ((1.63153871373020978e-2, 3.05326634961232344e-1, 3.60344899949804439e-1,
               1.25781726111229246e-1, 1.60837851487422766e-2, 6.58749161529837803e-4),
              (1.0, 2.56852019228982242e0, 1.87295284992346047e0, 5.27905102951428412e-1,
               6.05183413124413191e-2, 2.33520497626869185e-3))
_INV_SQRT_PI = 1 / math.sqrt(math.pi)
_ERFC_ZERO = 27.3           # erfc(x) < 2**-1075 above: 0.0 in double precision


def _ratio(t, coefficients):
    """N(t)/D(t), each polynomial by Horner's rule."""
    numerator, denominator = coefficients
    n, d = np.full_like(t, numerator[0]), np.full_like(t, denominator[0])
    for a, b in zip(numerator[1:], denominator[1:]):
        n *= t
        n += a
        d *= t
        d += b
    return n / d


def _exp_minus_square(y):
    """exp(-y²), accurate where y² is large: y = u + v with u a multiple of 1/16 (u² exact
    in binary), exp(-u²) exp(-(y - u)(y + u)), as Cody's routine does; the rounding of y²
    itself would cost a relative error of y²·2⁻⁵³."""
    u = np.trunc(y * 16.0) / 16.0
    return np.exp(-(u * u)) * np.exp(-((y - u) * (y + u)))


def _erfc_above(y):
    """erfc(y) for y > 0.46875 (and nan): the middle and tail approximations."""
    out = np.where(y == y, 0.0, y)                  # 0 from _ERFC_ZERO on; nan stays nan
    middle = y <= 4.0
    ym = y[middle]
    out[middle] = _exp_minus_square(ym) * _ratio(ym, _ERFC_MIDDLE)
    tail = (y > 4.0) & (y < _ERFC_ZERO)
    yt = y[tail]
    t = 1.0 / (yt * yt)
    out[tail] = _exp_minus_square(yt) / yt * (_INV_SQRT_PI - t * _ratio(t, _ERFC_TAIL))
    return out


def _erf_parts(x, complement):
    """erf(x), or erfc(x) if `complement`, in x's float dtype (float64 inside)."""
    x = np.asarray(x)
    dtype = np.result_type(x.dtype, 1.0)
    if dtype.kind != "f":
        raise TypeError(f"{'erfc' if complement else 'erf'}: expected real numbers, got "
                        f"dtype {x.dtype}")
    v = x.astype(np.float64, copy=False).reshape(-1)
    y = np.abs(v)
    out = np.empty_like(v)
    small = y <= 0.46875
    vs = v[small]
    e = vs * _ratio(vs * vs, _ERF_SMALL)
    out[small] = 1.0 - e if complement else e
    rest = ~small                                   # (nan too)
    vr = v[rest]
    c = _erfc_above(y[rest])
    if complement:                                  # erfc(-y) = 2 - erfc(y)
        out[rest] = np.where(vr < 0.0, 2.0 - c, c)
    else:                                           # erf(±y) = ±(1 - erfc(y))
        out[rest] = np.copysign(1.0 - c, vr)
    out = out.reshape(x.shape).astype(dtype, copy=False)
    return out if out.ndim else out[()]


def erf_numpy(x):
    """erf(x) = 2/√π ∫₀ˣ exp(-t²) dt in vectorised NumPy, without SciPy: W. J. Cody's
    rational approximations, to within a few units in the last place of double precision.

    Example:
        >>> import math
        >>> abs(float(erf_numpy(0.5)) - math.erf(0.5)) < 1e-16
        True
    """
    return _erf_parts(x, False)


def erfc_numpy(x):
    """erfc(x) = 1 - erf(x) in vectorised NumPy, without SciPy, accurate in relative terms
    in the right tail too (down to erfc(27.3), below the smallest double).

    Example:
        >>> import math
        >>> abs(float(erfc_numpy(10.0)) / math.erfc(10.0) - 1) < 1e-15
        True
    """
    return _erf_parts(x, True)


def iv_numpy(n, x):
    """Iₙ(x), the modified Bessel function of the first kind of integer order n, in
    vectorised NumPy (without SciPy), within a few units in the 15th digit of SciPy's
    ``iv``: its power series (x/2)ⁿ Σ (x²/4)ᵏ/(k!(k+n)!) (positive terms, no
    cancellation) up to |x| = 20 + n²/2, and beyond the asymptotic series
    eˣ/√(2πx) (1 - (4n²-1)/(8x) + ...), whose terms still fall far below the last digit
    there.  I₋ₙ = Iₙ, and Iₙ(-x) = (-1)ⁿ Iₙ(x); finite up to where Iₙ overflows.

    Example:
        >>> print(f"{iv_numpy(1, 1.0):.12f} {iv_numpy(1, -30.0):.6e} {iv_numpy(3, 2.0):.12f}")
        0.565159103992 -7.685320e+11 0.212739959240
    """
    n = abs(operator.index(n))
    x = np.asarray(x)
    a = np.abs(x).astype(np.float64)
    small = a <= 20.0 + n * n / 2
    s = np.where(small, a, 0.0)
    quarter = s * s / 4
    term, total = np.ones_like(s), np.ones_like(s)
    k = 0
    while True:                             # (until every term is below 1e-17 of its sum)
        k += 1
        term = term * quarter / (k * (k + n))
        total = total + term
        if not np.any(term > 1e-17 * total):
            break
    series = (s / 2) ** n / math.factorial(n) * total
    b = np.where(small, 21.0 + n * n / 2, a)
    term, tail = np.ones_like(b), np.ones_like(b)
    for k in range(1, 30):
        term = term * (((2 * k - 1) ** 2 - 4 * n * n) / (8 * k * b))
        tail = tail + term
    with np.errstate(over="ignore", invalid="ignore"):   # (e^(x/2) twice: overflow only
        # where Iₙ does; ±inf gives nan, as SciPy's)
        half = np.exp(b / 2)
        large = half * (half / np.sqrt(2 * np.pi * b) * tail)
    out = np.where(small, series, large)
    if n % 2:
        out = np.copysign(out, x)
    out = out.astype(np.result_type(x.dtype, 1.0), copy=False)
    return out if out.ndim else out[()]


def i1_numpy(x):
    """I₁(x) in vectorised NumPy, without SciPy: `iv_numpy` of order 1.  Odd, and finite
    up to |x| ≈ 713, where I₁ overflows.

    Example:
        >>> print(f"{i1_numpy(1.0):.12f} {i1_numpy(-30.0):.6e}")
        0.565159103992 -7.685320e+11
    """
    return iv_numpy(1, x)


def _scipy_or(name, fallback):
    """The evaluation of a primitive: SciPy's function `name` where SciPy is installed,
    else `fallback`, decided on first use."""
    found = []

    def impl(*args, **params):
        if not found:
            try:
                import scipy.special
                found.append(getattr(scipy.special, name))
            except ImportError:
                found.append(fallback)
        return found[0](*args, **params)
    impl.__name__ = name
    return impl


def _special(name, doc, scipy_name=None, impl=None, ufunc=True):
    prim = defprimitive(name, impl or _scipy(scipy_name or name), fast=None, cost="call",
                        doc=doc)
    if ufunc:
        # SciPy's ufuncs pick their own loops (float64 for float16, for float32 beside a
        # Python float, ...): an abstract value's dtype is theirs, as the evaluated one is
        prim.ufunc = lambda: _scipy_ufunc(scipy_name or name)
    return prim


def _scipy_ufunc(name):
    try:
        import scipy.special
    except ImportError:         # (erf, erfc and i1 have NumPy evaluations of their own)
        return None
    return getattr(scipy.special, name)


_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
_SQRT_PI_OVER_TWO = math.sqrt(math.pi) / 2
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_INV_SQRT2 = 1 / math.sqrt(2)

erf = _special("erf", "erf(x): the error function 2/√π ∫₀ˣ exp(-t²) dt (scipy.special.erf; "
               "`erf_numpy` without SciPy).", impl=_scipy_or("erf", erf_numpy))
erfc = _special("erfc", "erfc(x): 1 - erf(x), without cancellation for large x "
                "(scipy.special.erfc; `erfc_numpy` without SciPy).",
                impl=_scipy_or("erfc", erfc_numpy))
erfinv = _special("erfinv", "erfinv(y): the x with erf(x) = y, for -1 <= y <= 1.")
erfcinv = _special("erfcinv", "erfcinv(y): the x with erfc(x) = y, for 0 <= y <= 2 "
                   "(scipy.special.erfcinv).")
gammaln = _special("gammaln", "gammaln(x): log|Γ(x)| (scipy.special.gammaln).")
digamma = _special("digamma", "digamma(x): ψ(x) = d/dx log Γ(x) (scipy.special.psi).",
                   scipy_name="psi")
polygamma = _special("polygamma", "polygamma(x, n=n): ψ⁽ⁿ⁾(x), the n-th derivative of "
                     "digamma, for a fixed integer n >= 0 (a parameter).", impl=_polygamma_np,
                     ufunc=False)
gamma = _special("gamma", "gamma(x): Γ(x) (scipy.special.gamma).")
gammasgn = _special("gammasgn", "gammasgn(x): the sign of Γ(x), ±1 (scipy.special.gammasgn; "
                    "piecewise constant: its derivative is 0).")
# The Bernoulli numbers B₂, B₄, ..., B₁₆ of ψ's asymptotic series, and how far _betaln_da_np
# shifts its argument up before the series is used: past x = 10 the next term, B₁₈/(18x¹⁸),
# is below 1e-18
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)
_SHIFT = 10


def _betaln_da_np(a, b):
    """ψ(a) - ψ(a + b), betaln's partial in a.  The plain difference cancels when it is
    small beside ψ(a): for large a (off by 9e-5 at a = 1e12, b = 2, where it is -2e-12)
    and for small b (off by 10⁻⁶ at b = 1e-10).  For a > 0 and a + b > 0 it is instead
    the recurrence ψ(x + 1) = ψ(x) + 1/x, taken _SHIFT times,
        ψ(a) - ψ(a + b) = -Σⱼ b/((a + j)(a + b + j)) + ψ(x) - ψ(x + b),   x = a + _SHIFT,
    then the asymptotic series ψ(x) ~ log x - 1/(2x) - Σₖ B₂ₖ/(2k x²ᵏ), differenced term by
    term with u = log1p(b/x): each difference is then a product, never a subtraction,
        ψ(x) - ψ(x + b) ~ -u + expm1(-u)/(2x) + Σₖ B₂ₖ/(2k x²ᵏ)·expm1(-2ku).
    Elsewhere (a pole or a negative argument) it is the plain difference, SciPy's values."""
    sc = scipy_special()
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    dtype = np.result_type(a, b, 1.0)
    a, b = a.astype(np.float64), b.astype(np.float64)
    ok = (a > 0) & (a + b > 0)
    a1, b1 = np.where(ok, a, 1.0), np.where(ok, b, 1.0)
    with np.errstate(all="ignore"):     # (products of huge arguments overflow to a 0 term)
        out = -sum(b1 / ((a1 + j) * (a1 + b1 + j)) for j in range(_SHIFT))
        x = a1 + _SHIFT
        u = np.log1p(b1 / x)
        out += -u + np.expm1(-u) / (2 * x)
        for k, b2k in enumerate(_BERNOULLI, 1):
            out += b2k / (2 * k) * x ** (-2 * k) * np.expm1(-2 * k * u)
        out = np.where(ok, out, sc.psi(a) - sc.psi(a + b)).astype(dtype)
    return out if out.ndim else out[()]


# log1pmx's series: log1p(x) - x = -x²/(2 + x) + 2 Σₖ s^(2k+1)/(2k+1), s = x/(2 + x), the
# coefficients 1/3, 1/5, ..., 1/39: for |x| < 1/2 (s² <= 1/9) the next term is below 1e-17
# of the sum
_LOG1PMX_SERIES = tuple(1 / (2 * k + 1) for k in range(1, 20))


def _log1pmx_np(x):
    """log(1 + x) - x.  The plain difference cancels where x is small: it is about -x²/2,
    so log1p's rounding, relative to x, becomes relative to x²/2 (at x = 1e-5, 5 digits
    lost).  For |x| < 1/2, the series of log1p(x) = 2 atanh(x/(2 + x)), from which x is
    taken exactly; elsewhere the difference, which there loses at most 3 bits."""
    x = np.asarray(x)
    dtype = np.result_type(x, 1.0)
    x64 = x.astype(np.float64)
    small = np.abs(x64) < 0.5
    xs = np.where(small, x64, 0.0)
    s = xs / (2 + xs)
    s2 = s * s
    poly = np.zeros_like(s)
    for c in reversed(_LOG1PMX_SERIES):
        poly = c + s2 * poly
    infinite = x64 == np.inf            # (log1p(inf) - inf would be nan; the limit is -inf)
    xb = np.where(small | infinite, 0.0, x64)
    big = np.where(infinite, -np.inf, np.log1p(xb) - xb)   # (log1p's warnings, as NumPy's)
    out = np.where(small, -xs * xs / (2 + xs) + 2 * s * s2 * poly, big).astype(dtype)
    return out if out.ndim else out[()]


# rgamma, betaln and beta are SciPy's own, not compositions of the above: 1/gamma is nan
# where Γ is (its poles 0, -1, ...: rgamma is 0 there), and gammaln(a) + gammaln(b) -
# gammaln(a + b) cancels for a large argument (betaln(1e15, 2) lost every digit but two)
rgamma = _special("rgamma", "rgamma(x): 1/Γ(x), 0 at the poles of Γ (scipy.special.rgamma).")
betaln = _special("betaln", "betaln(a, b): log|B(a, b)|, without the cancellation of "
                  "gammaln(a) + gammaln(b) - gammaln(a + b) (scipy.special.betaln).")
beta = _special("beta", "beta(a, b): B(a, b) = Γ(a)Γ(b)/Γ(a + b), without overflow "
                "(scipy.special.beta).")
betaln_da = _special("betaln_da", "betaln_da(a, b): ψ(a) - ψ(a + b), betaln's partial in a, "
                     "without the cancellation of the difference for large a or small b.",
                     impl=_betaln_da_np, ufunc=False)
log1pmx = _special("log1pmx", "log1pmx(x): log(1 + x) - x, without the cancellation of "
                   "the difference for small x.", impl=_log1pmx_np, ufunc=False)
expit = _special("expit", "expit(x): the logistic sigmoid 1/(1 + exp(-x)), no overflow.")
logit = _special("logit", "logit(p): log(p/(1 - p)), expit's inverse.")
ndtr = _special("ndtr", "ndtr(x): the standard normal distribution function Φ(x).")
log_ndtr = _special("log_ndtr", "log_ndtr(x): log Φ(x), accurate for very negative x.")
erfcx = _special("erfcx", "erfcx(x): exp(x²)·erfc(x), without overflow or underflow "
                 "(scipy.special.erfcx).")


# Where _erfcx_derivatives turns from the forward recurrence to the backward one, by
# order n (index n - 1; 1 from n = 3 on).  Forward is far cheaper (the backward one
# takes some 120 steps near x = 1), and up to these points within 7e-15 relative for the
# first derivative and 1.2e-14 for the second, measured (at x = 4 the first's is 1e-14).
_ERFCX_FORWARD_BELOW = (3.0, 1.5, 1.0)


def _erfcx_backward_steps(x, n):
    """How many steps above n the backward recurrence starts at x >= 1: the fewest that
    reach 1.2e-15 of 400-digit mpmath for n <= 30, measured, are 121 at x = 1, 40 at 2, 16
    at 4, 5 at 20 (for n = 1; 2.7n/x more for larger n), about 10% under
    4 + (120/√x + 3n)/x."""
    return np.ceil(4 + (120 / np.sqrt(x) + 3 * n) / x).astype(np.int64)


def _erfcx_derivatives(v, n):
    """erfcx and its first n derivatives at the float64 vector v, a list of n + 1 vectors.
    erfcx satisfies y' = 2x·y - 2/√π, hence y⁽ᵏ⁺¹⁾ = 2x·y⁽ᵏ⁾ + 2k·y⁽ᵏ⁻¹⁾.  For small x that
    recurrence is run forward.  For x >= 1 it cannot be, for long: y⁽ⁿ⁾ = (-2)ⁿ n! e^(x²)
    iⁿerfc(x) is its smallest solution there, and forward it cancels (2x·y - 2/√π lost
    every digit at x = 1e8, the third derivative at x = 100 four of them).  There the
    ratios rₖ = y⁽ᵏ⁾/(-2k·y⁽ᵏ⁻¹⁾) are taken backward, rₖ₋₁ = 1/(2x + 2k·rₖ) (the continued
    fraction of erfc), where every term is positive, from the ratio's own limit
    1/(x + √(x² + 2k)) some steps above n.  The elements are sorted by their number of
    steps, so that each step updates a prefix of them in place."""
    ys = [np.asarray(scipy_special().erfcx(v), np.float64)]
    ys += [np.empty_like(v) for _ in range(n)]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        forward = ~(v >= _ERFCX_FORWARD_BELOW[min(n, 3) - 1])      # (nan too)
        xf, prev = v[forward], ys[0][forward]
        cur = 2 * xf * prev - _TWO_OVER_SQRT_PI
        ys[1][forward] = cur
        for k in range(1, n):
            prev, cur = cur, 2 * xf * cur + 2 * k * prev
            ys[k + 1][forward] = cur
        backward = np.flatnonzero(~forward)
        if not backward.size:
            return ys
        steps = n + _erfcx_backward_steps(v[backward], n)
        # (a radix sort: the counts are small, so 16 bits hold them)
        order = np.argsort(-steps.astype(np.int16), kind="stable")
        backward, steps = backward[order], steps[order]
        xb = v[backward]
        two_x, ratios = 2 * xb, [None] * (n + 1)
        r = 1 / (xb + np.sqrt(xb * xb + 2 * (steps + 1)))
        for k in range(int(steps[0]), 0, -1):
            active = r[:np.searchsorted(-steps, -k, side="right")]     # (steps >= k)
            active *= 2 * (k + 1)
            active += two_x[:active.size]
            np.reciprocal(active, out=active)
            if k <= n:
                ratios[k] = r.copy()
        y = ys[0][backward]
        for k in range(1, n + 1):
            y = y * (-2 * k * ratios[k])
            ys[k][backward] = y
    return ys


def _in_float(f):
    """f(v, n) on x as a float64 vector, back in x's float dtype and shape, for an order n
    from 1 to 170 (n! is a double up to there)."""
    def impl(x, n):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= 170:
            raise ValueError(f"{f.__name__[1:-3]}: the order n must be an integer from 1 to "
                             f"170, got {n!r}")
        x = np.asarray(x)
        if x.dtype.kind == "c":
            raise TypeError(f"{f.__name__[1:-3]}: expected real numbers, got dtype {x.dtype}")
        out = f(x.astype(np.float64).reshape(-1), n).reshape(x.shape)
        with np.errstate(over="ignore"):        # (to ±inf in float32, as SciPy's erfcx)
            return _in_dtype(out, x)
    impl.__name__ = f.__name__
    return impl


@_in_float
def _erfcx_derivative_np(v, n):
    return _erfcx_derivatives(v, n)[n]


def _log_coefficient(c, n):
    """The t^n coefficient of log c(t), from c's coefficients c_0 ... c_n:
    n·l_n = (n·c_n - Σⱼ j·l_j·c_(n-j))/c_0 (log's equation c·l' = c')."""
    logs = [None]
    for k in range(1, n + 1):
        logs.append((c[k] - sum(j * logs[j] * c[k - j] for j in range(1, k)) / k) / c[0])
    return logs[n]


@_in_float
def _log_ndtr_derivative_np(v, n):
    """The n-th derivative of log Φ.  The first, φ/Φ, is √(2/π)/erfcx(-x/√2): no 0/0
    where Φ underflows, and no cancellation (exp(-x²/2 - log Φ) subtracted numbers of size
    x², and gave 1.9e8 for 1e8 at x = -1e8).  The others are n! times the t^n coefficient
    of log c(t) for a series c whose coefficients are each of their own size:
    for x >= 0, Φ(x + t), whose coefficients past the first are φ⁽ᵏ⁻¹⁾(x)/k! =
    (-1)ᵏ⁻¹Heₖ₋₁(x)φ(x)/k! (Hermite polynomials: the series of √(2/π)/erfcx lost every
    digit of the 30th derivative at x = 8); for x < 0, where Φ underflows, erfcx(z) with
    z = -x/√2, as log Φ = log(erfcx(z)/2) - x²/2 (through 1/erfcx(z), whose series
    cancels as φ/Φ is about -x, the third derivative lost 8 digits at x = -1e4 and all of
    them at -1e8).  At ±∞ the limits (0/0 and ∞/∞ in the series)."""
    if n == 1:
        with np.errstate(divide="ignore"):      # (∞ at x = -∞, its limit)
            return _SQRT_2_OVER_PI / scipy_special().erfcx(-_INV_SQRT2 * v)
    out = np.empty_like(v)
    left = v < 0
    with np.errstate(all="ignore"):
        xl = v[left]
        es = _erfcx_derivatives(-_INV_SQRT2 * xl, n)
        scale = 1.0
        for k in range(1, n + 1):
            scale *= -_INV_SQRT2 / k
            es[k] = es[k] * scale
        out[left] = math.factorial(n) * _log_coefficient(es, n) - (1.0 if n == 2 else 0.0)
        out[left & (v == -np.inf)] = -1.0 if n == 2 else 0.0
        xr = v[~left]
        density = _INV_SQRT_2PI * np.exp(-0.5 * (xr * xr))
        hermite, previous = np.ones_like(xr), np.zeros_like(xr)     # He_0, He_-1
        cs, factorial = [scipy_special().ndtr(xr)], 1.0
        for k in range(1, n + 1):
            factorial *= k
            cs.append((-1) ** (k - 1) * hermite * density / factorial)
            hermite, previous = xr * hermite - (k - 1) * previous, hermite
        out[~left] = math.factorial(n) * _log_coefficient(cs, n)
        out[~left & (v == np.inf)] = 0.0
    return out


erfcx_derivative = _special("erfcx_derivative", "erfcx_derivative(x, n=n): the n-th "
                            "derivative of erfcx, n >= 1, without the cancellation of "
                            "2x·erfcx(x) - 2/√π for large x.", impl=_erfcx_derivative_np,
                            ufunc=False)
log_ndtr_derivative = _special("log_ndtr_derivative", "log_ndtr_derivative(x, n=n): the n-th "
                               "derivative of log_ndtr, n >= 1 (φ(x)/Φ(x) for n = 1), "
                               "without cancellation for x << 0.",
                               impl=_log_ndtr_derivative_np, ufunc=False)
gammainc = _special("gammainc", "gammainc(a, x): P(a, x) = γ(a, x)/Γ(a), the regularized lower "
                    "incomplete gamma function (scipy.special.gammainc).")
gammaincc = _special("gammaincc", "gammaincc(a, x): Q(a, x) = 1 - P(a, x), without its "
                     "cancellation (scipy.special.gammaincc).")


def _incomplete(name):
    """The kernel `name` of incomplete.py, imported when first evaluated (it uses SciPy)."""
    def impl(*args):
        from . import incomplete
        return getattr(incomplete, name)(*args)
    impl.__name__ = name
    return impl


_gammainc_da_np = _incomplete("gammainc_da")
gammainc_da = _special("gammainc_da", "gammainc_da(a, x): ∂P(a, x)/∂a, gammainc's partial in "
                       "its shape a (-gammaincc's), to a relative 1.5e-13 (incomplete.py).",
                       impl=_gammainc_da_np, ufunc=False)
gammainc_daa = _special("gammainc_daa", "gammainc_daa(a, x): ∂²P(a, x)/∂a², gammainc's second "
                        "partial in its shape a, within 4e-12 of mpmath (incomplete.py).",
                        impl=_incomplete("gammainc_daa"), ufunc=False)
stdtr = _special("stdtr", "stdtr(df, x): Student's t distribution function with df degrees of "
                 "freedom (scipy.special.stdtr; the normal one at df = inf); differentiable "
                 "in x, by the t density.")
betainc = _special("betainc", "betainc(a, b, x): I_x(a, b), the regularized incomplete beta "
                   "function (scipy.special.betainc).")


def _betaincc_np(a, b, x):
    """SciPy's betaincc (1.11 on), or before it betainc(b, a, 1 - x), which loses the
    digits of a small x in 1 - x."""
    sc = scipy_special()
    if hasattr(sc, "betaincc"):
        return sc.betaincc(a, b, x)
    return sc.betainc(b, a, 1 - np.asarray(x))


betaincc = _special("betaincc", "betaincc(a, b, x): 1 - I_x(a, b), without the cancellation "
                    "of the difference, nor the rounding of 1 - x in I_(1-x)(b, a) "
                    "(scipy.special.betaincc).", impl=_betaincc_np, ufunc=False)


_betainc_da_np, _betainc_db_np = _incomplete("betainc_da"), _incomplete("betainc_db")
betainc_da = _special("betainc_da", "betainc_da(a, b, x): ∂I_x(a, b)/∂a, betainc's partial in "
                      "a, to about 1e-12 relative (incomplete.py).", impl=_betainc_da_np,
                      ufunc=False)
betainc_db = _special("betainc_db", "betainc_db(a, b, x): ∂I_x(a, b)/∂b, betainc's partial in "
                      "b, to about 1e-12 relative (incomplete.py).", impl=_betainc_db_np,
                      ufunc=False)
xlogy = _special("xlogy", "xlogy(x, y): x·log(y), and 0 where x = 0 (even for y = 0).")
xlog1py = _special("xlog1py", "xlog1py(x, y): x·log1p(y), and 0 where x = 0.")


def _i0_np(x):
    out = np.i0(x)                          # (NumPy's i0 is not a ufunc: a 0-d array for
    return out if out.ndim else out[()]     # a number, which a scalar node holds as one)


def _order(v):
    """A Bessel order as a parameter: an int where it is whole, so that iv(x, v=2) and
    iv(x, v=2.0) are one node."""
    v = float(v)
    return int(v) if v.is_integer() else v


def _of_order(name):
    """The evaluation of a Bessel function of a fixed order v (a parameter): SciPy's
    ``name(v, x)``, in x's float dtype (SciPy's gives float64 for float32)."""
    def impl(x, v):
        return _in_dtype(getattr(scipy_special(), name)(v, x), x)
    impl.__name__ = name
    return impl


_iv_scipy, _ive_np, _jv_np, _yv_np = map(_of_order, ("iv", "ive", "jv", "yv"))


def _iv_np(x, v):
    try:
        return _iv_scipy(x, v)
    except ImportError:
        if float(v).is_integer():           # (the orders the derivatives of i0 reach)
            return iv_numpy(int(v), x)
        raise


_iv_np.__name__ = "iv"

# NumPy's i0 (for wengert.numpy.i0), and I₁, its derivative, from SciPy where installed;
# Iᵥ of a fixed order v, whose derivatives (Iᵥ₋₁ + Iᵥ₊₁)/2 are Bessel functions again;
# and the scaled ones, e^-|x| Iᵥ(x), which do not overflow
i0 = _special("i0", "i0(x): I₀(x), the modified Bessel function of the first kind of "
              "order 0 (NumPy's numpy.i0).", impl=_i0_np, ufunc=False)
i1 = _special("i1", "i1(x): I₁(x) = I₀'(x) (scipy.special.i1; `i1_numpy` without SciPy).",
              impl=_scipy_or("i1", i1_numpy))
iv = _special("iv", "iv(x, v=v): Iᵥ(x), the modified Bessel function of the first kind of "
              "a fixed real order v (a parameter; scipy.special.iv, `iv_numpy` for an "
              "integer order without SciPy).", impl=_iv_np, ufunc=False)
i0e = _special("i0e", "i0e(x): e^-|x| I₀(x) (scipy.special.i0e).")
i1e = _special("i1e", "i1e(x): e^-|x| I₁(x) (scipy.special.i1e).")
ive = _special("ive", "ive(x, v=v): e^-|x| Iᵥ(x) for a fixed real order v (a parameter; "
               "scipy.special.ive).", impl=_ive_np, ufunc=False)
# The Bessel functions of the first and second kinds, Jᵥ and Yᵥ (as iv: orders 0 and 1
# are SciPy's j0, j1, y0, y1, other fixed orders jv and yv), whose derivatives
# (Jᵥ₋₁ - Jᵥ₊₁)/2 and (Yᵥ₋₁ - Yᵥ₊₁)/2 are Bessel functions again
j0 = _special("j0", "j0(x): J₀(x), the Bessel function of the first kind of order 0 "
              "(scipy.special.j0).")
j1 = _special("j1", "j1(x): J₁(x) = -J₀'(x) (scipy.special.j1).")
jv = _special("jv", "jv(x, v=v): Jᵥ(x), the Bessel function of the first kind of a fixed "
              "real order v (a parameter; scipy.special.jv).", impl=_jv_np, ufunc=False)
y0 = _special("y0", "y0(x): Y₀(x), the Bessel function of the second kind of order 0, for "
              "x > 0 (scipy.special.y0).")
y1 = _special("y1", "y1(x): Y₁(x) = -Y₀'(x) (scipy.special.y1).")
yv = _special("yv", "yv(x, v=v): Yᵥ(x), the Bessel function of the second kind of a fixed "
              "real order v, for x > 0 (a parameter; scipy.special.yv).", impl=_yv_np,
              ufunc=False)

erf.defpartials(lambda x, ans: _TWO_OVER_SQRT_PI * exp(-(x * x)))
erfc.defpartials(lambda x, ans: -_TWO_OVER_SQRT_PI * exp(-(x * x)))
erfinv.defpartials(lambda x, ans: _SQRT_PI_OVER_TWO * exp(ans * ans))
erfcinv.defpartials(lambda x, ans: -_SQRT_PI_OVER_TWO * exp(ans * ans))
gammasgn.defpartials(None)                                  # piecewise constant
gammaln.defpartials(lambda x, ans: digamma(x))
digamma.defpartials(lambda x, ans: polygamma(x, n=1))
polygamma.defpartials(lambda x, ans, n: polygamma(x, n=n + 1))
gamma.defpartials(lambda x, ans: ans * digamma(x))


def _rgamma_partial(x, ans):
    """d(1/Γ)/dx.  -ψ(x)/Γ(x) is 0·nan at the poles 0, -1, -2, ..., where the slope is
    (-1)ⁿn!; for x <= 1/2 the reflection 1/Γ(x) = sin(πx)Γ(1 - x)/π gives a form finite
    there, Γ(1 - x)(cos(πx) - sin(πx)ψ(1 - x)/π).  Each branch is evaluated where its own
    functions are finite, so the other's derivatives are never 0·inf."""
    right = gt(x, 0.5)
    xl, xr = select(right, 0.0, x), select(right, x, 1.0)
    reflected = gamma(1 - xl) * (cos(math.pi * xl) - sin(math.pi * xl) * digamma(1 - xl)
                                 / math.pi)
    return select(right, -ans * digamma(xr), reflected)


def _gamma_sign(x):
    """The sign of Γ(x): 1 for x > 0, (-1)^k on (-k, 1 - k); constant between poles."""
    return select(gt(x, 0.0), 1.0, 1.0 - 2.0 * remainder(floor(x), 2.0))


rgamma.defpartials(_rgamma_partial)
betaln.defpartials(lambda a, b, ans: betaln_da(a, b), lambda a, b, ans: betaln_da(b, a))
beta.defpartials(lambda a, b, ans: ans * betaln_da(a, b), lambda a, b, ans: ans * betaln_da(b, a))
log1pmx.defpartials(lambda x, ans: -x / (1 + x))      # (1/(1 + x) - 1, exactly)
betaln_da.defpartials(lambda a, b, ans: polygamma(a, n=1) - polygamma(a + b, n=1),
                      lambda a, b, ans: -polygamma(a + b, n=1))
# (Taylor mode expands these definitions: its rules for gamma and gammaln are written)


def _rgamma_decomposition(x):
    """1/Γ(x), for x <= 1/2 by the reflection sin(πx)Γ(1 - x)/π, whose parts have no
    poles there (1/Γ's series, expanded through Γ, were nan at 0, -1, ... and lost
    digits next to them); past 171, where Γ overflows, as exp(-gammaln(x)), which
    underflows to 0 with all its coefficients (1/inf's were nan); each branch evaluated
    where it is finite, as in the partial."""
    right, huge = gt(x, 0.5), gt(x, 171.0)
    xl, xr = select(right, 0.0, x), select(right, select(huge, 1.0, x), 1.0)
    xh = select(huge, x, 172.0)
    return select(right, select(huge, exp(-gammaln(xh)), 1 / gamma(xr)),
                  sin(math.pi * xl) * gamma(1 - xl) / math.pi)


rgamma.decomposition = _rgamma_decomposition
betaln.decomposition = lambda a, b: gammaln(a) + gammaln(b) - gammaln(a + b)
betaln_da.decomposition = lambda a, b: digamma(a) - digamma(a + b)
log1pmx.decomposition = lambda x: log1p(x) - x
beta.decomposition = lambda a, b: (_gamma_sign(a) * _gamma_sign(b) * _gamma_sign(a + b)
                                   * exp(betaln(a, b)))
# expit(x)·(1 - expit(x)), with 1 - expit(x) = expit(-x): no cancellation for large x
expit.defpartials(lambda x, ans: ans * expit(-x))
logit.defpartials(lambda x, ans: 1 / (x * (1 - x)))
ndtr.defpartials(lambda x, ans: _INV_SQRT_2PI * exp(-0.5 * (x * x)))
erfcx.defpartials(lambda x, ans: erfcx_derivative(x, n=1))
erfcx_derivative.defpartials(lambda x, ans, n: erfcx_derivative(x, n=n + 1))


log_ndtr.defpartials(lambda x, ans: log_ndtr_derivative(x, n=1))
log_ndtr_derivative.defpartials(lambda x, ans, n: log_ndtr_derivative(x, n=n + 1))


def _not_differentiable_in(name, argument, which="derivative"):
    """The partial of a parameter whose derivative is not written: asking for it (a
    derivative with respect to that argument) raises, where a missing partial would be a
    silent zero.  `which`: "second derivative" for the partial of a partial."""
    only = " (only the one in x is)" if which == "derivative" else ""
    def partial(*args, **params):
        raise NotImplementedError(
            f"{name}: the {which} with respect to {argument} is not implemented{only}: hold "
            "it constant (a plain number, or wg.stop_gradient)")
    return partial


def _limit_at_infinity(x, limit, formula):
    """formula(x), or its `limit` where x = ∞ (where the formula reads ∞·0 or ∞ - ∞).
    There the formula is evaluated at a finite stand-in: the select passes a zero cotangent
    to the branch it does not take, and that times a derivative of the formula at ∞
    (nan) would be nan, so every higher derivative at ∞ would be."""
    at_infinity = eq(x, math.inf)
    return select(at_infinity, limit, formula(select(at_infinity, 1.0, x)))


# The incomplete functions' derivatives in x are their integrands, as densities:
# x^(a-1) e^-x / Γ(a) and x^(a-1) (1-x)^(b-1) / B(a, b), in logs, with xlogy and xlog1py
# so that a = 1 (or b = 1) at x = 0 (or 1) is 0·log 0 = 0, not nan.  In the shapes they
# are primitives of their own, evaluated by series, continued fractions and Temme's
# expansion (incomplete.py; SciPy has no such functions).
def _gamma_density(a, x):
    # (0 at x = ∞, its limit: in logs, (a - 1) log x - x is ∞ - ∞ there for a > 1)
    return _limit_at_infinity(x, 0.0, lambda x: exp(xlogy(a - 1, x) - x - gammaln(a)))


gammainc.defpartials(lambda a, x, ans: gammainc_da(a, x),
                     lambda a, x, ans: _gamma_density(a, x))
gammaincc.defpartials(lambda a, x, ans: -gammainc_da(a, x),
                      lambda a, x, ans: -_gamma_density(a, x))


def _times_log(density, end, log_t, rest, power):
    """density·(log t + rest), the derivative of a density in the exponent `power` of its
    factor t^(power - 1), with its limit where t = 0 (`end`): 0 for power > 1, -inf
    otherwise, not 0·(-inf) = nan.  (`log_t` is computed from a t moved off 0 there, so
    that no warning escapes either.)"""
    return select(end, select(gt(power, 1.0), 0.0, -math.inf), density * (log_t + rest))


def _log_off_zero(x):
    # (log x, with x = 0 moved to 1: `_times_log` takes the limit there)
    return log(select(eq(x, 0.0), 1.0, x))


# ∂/∂x ∂P/∂a = ∂/∂a of the density; ∂²P/∂a² its own kernel, whose derivatives (the third
# order in a) are not written
_density_da = lambda a, x, ans: _times_log(_gamma_density(a, x), eq(x, 0.0),  # noqa: E731
                                           _log_off_zero(x), -digamma(a), a)
gammainc_da.defpartials(lambda a, x, ans: gammainc_daa(a, x), _density_da)
gammainc_daa.defpartials(_not_differentiable_in("gammainc", "a (the shape)", "third derivative"),
                         _not_differentiable_in("gammainc", "x", "derivative of ∂²P/∂a²"))


def _t_density(df, x):
    """t's density, as wengert.scipy.stats computes it (without the cancellations of the
    gammaln difference for large df): SciPy's t.pdf on numbers, a composition of
    primitives on nodes, which differentiates again.  (Imported here, when first asked
    for: the stats module is a front-end on top of these primitives.)"""
    from ..scipy.stats import t
    return t.pdf(x, df)


stdtr.defpartials(_not_differentiable_in("stdtr", "df (the degrees of freedom)"),
                  lambda df, x, ans: _t_density(df, x))
def _beta_density(a, b, x):
    return exp(xlogy(a - 1, x) + xlog1py(b - 1, -x) - betaln(a, b))


betainc.defpartials(lambda a, b, x, ans: betainc_da(a, b, x),
                    lambda a, b, x, ans: betainc_db(a, b, x),
                    lambda a, b, x, ans: _beta_density(a, b, x))
betaincc.defpartials(lambda a, b, x, ans: -betainc_da(a, b, x),
                     lambda a, b, x, ans: -betainc_db(a, b, x),
                     lambda a, b, x, ans: -_beta_density(a, b, x))
# ∂/∂x of the partials in a and b: those of the density, with ψ(a + b) - ψ(a) =
# -betaln_da(a, b) (no cancellation); a second derivative in the shapes is not written
_twice = _not_differentiable_in("betainc", "its shapes a and b", "second derivative")
betainc_da.defpartials(_twice, _twice, lambda a, b, x, ans: _times_log(
    _beta_density(a, b, x), eq(x, 0.0), _log_off_zero(x), -betaln_da(a, b), a))
betainc_db.defpartials(_twice, _twice, lambda a, b, x, ans: _times_log(
    _beta_density(a, b, x), eq(x, 1.0), log1p(-select(eq(x, 1.0), 0.0, x)),
    -betaln_da(b, a), b))


# Iᵥ' = (Iᵥ₋₁ + Iᵥ₊₁)/2, with I₋₁ = I₁: Bessel functions all the way down, smooth at 0
# too (I₁' = I₀ - I₁/x, the other common form, is 0/0 there and cancels near it)
i0.defpartials(lambda x, ans: i1(x))
i1.defpartials(lambda x, ans: 0.5 * (i0(x) + iv(x, v=2)))
iv.defpartials(lambda x, ans, v: 0.5 * (_iv_of(x, v - 1) + _iv_of(x, v + 1)))
# and of e^-|x| Iᵥ(x), minus sign(x) times itself (at 0 the mean of the one-sided slopes,
# as abs's)
i0e.defpartials(lambda x, ans: i1e(x) - sign(x) * ans)
i1e.defpartials(lambda x, ans: 0.5 * (i0e(x) + ive(x, v=2)) - sign(x) * ans)
ive.defpartials(lambda x, ans, v: 0.5 * (_ive_of(x, v - 1) + _ive_of(x, v + 1))
                - sign(x) * ans)


# Jᵥ' = (Jᵥ₋₁ - Jᵥ₊₁)/2 and the same for Yᵥ, with J₋ₙ = (-1)ⁿ Jₙ for whole n (J₀' = -J₁)
j0.defpartials(lambda x, ans: -j1(x))
j1.defpartials(lambda x, ans: 0.5 * (j0(x) - jv(x, v=2)))
jv.defpartials(lambda x, ans, v: 0.5 * (_jv_of(x, v - 1) - _jv_of(x, v + 1)))
y0.defpartials(lambda x, ans: -y1(x))
y1.defpartials(lambda x, ans: 0.5 * (y0(x) - yv(x, v=2)))
yv.defpartials(lambda x, ans, v: 0.5 * (_yv_of(x, v - 1) - _yv_of(x, v + 1)))


def _bessel_of(x, v, order_0, order_1, other, minus_one):
    """A Bessel function Cᵥ(x) as the primitive that names it: order_0 and order_1 for
    orders 0 and ±1, with C₋₁ = minus_one·C₁ (1 for Iᵥ and e^-|x| Iᵥ, -1 for Jᵥ and
    Yᵥ), `other` with the order as its parameter otherwise."""
    v = _order(v)
    if v == 0:
        return order_0(x)
    if abs(v) == 1:
        return -order_1(x) if v == -1 and minus_one == -1 else order_1(x)
    return other(x, v=v)


def _iv_of(x, v):
    return _bessel_of(x, v, i0, i1, iv, 1)


def _ive_of(x, v):
    return _bessel_of(x, v, i0e, i1e, ive, 1)


def _jv_of(x, v):
    return _bessel_of(x, v, j0, j1, jv, -1)


def _yv_of(x, v):
    return _bessel_of(x, v, y0, y1, yv, -1)


def _safe(x, y, pole, fill):
    """y, but `fill` where x = 0 and y is at the pole of the logarithm: the partial in y
    of x·log(y) is x/y, which is 0 wherever x = 0 (so 0/0 never happens), and keeps all
    its derivatives elsewhere."""
    return select(eq(x, 0.0), select(eq(y, pole), fill, y), y)


xlogy.defpartials(lambda x, y, ans: log(y),
                  lambda x, y, ans: x / _safe(x, y, 0.0, 1.0))
xlog1py.defpartials(lambda x, y, ans: log1p(y),
                    lambda x, y, ans: x / (1 + _safe(x, y, -1.0, 0.0)))
