"""The partial derivatives of the incomplete gamma and beta functions in their shape
parameters, as vectorised NumPy kernels: the implementations of the primitives
`gammainc_da`, `betainc_da` and `betainc_db` of `special.py`.  SciPy evaluates the
functions themselves but not these.  Each iterates over the whole array at once, dropping
the entries that have converged; an entry that does not converge within the bound on the
steps is nan, never a silently inaccurate number.

    gammainc_da(a, x) = ∂P(a, x)/∂a  for P = scipy.special.gammainc  (∂Q/∂a = -∂P/∂a)
    gammainc_daa(a, x) = ∂²P(a, x)/∂a²  (for the second derivative of gamma draws,
        wengert.primitives.random; within 4e-12 of mpmath on the grid below)
    betainc_da(a, b, x) = ∂I_x(a, b)/∂a,  betainc_db(a, b, x) = ∂I_x(a, b)/∂b
        for I = scipy.special.betainc (both from one pass: `betainc_dab`)

Limits: shapes below about 1e-300 (where 1/a and ψ(a) overflow; for betainc, both
shapes below about 1e-150, or a subnormal one) give nan or ±inf, and a result that
underflows comes back as 0.

gammainc_da
-----------

∂P/∂a < 0 for every a > 0, 0 < x < inf (P decreases in a), so it is computed to a small
relative error wherever it does not underflow: within 1.5e-13 of mpmath (40 digits) on a
grid of a in [1e-3, 1e5], x in [1e-8, 1e5], on x = a + k√a for |k| <= 12 and on the
seams between the regions below.

Regions (a > 0, 0 < x < inf; μ = x/a - 1), chosen by masks, each iterating over its whole
part of the array at once and dropping the entries that have converged:

  * Temme:  a >= 20 and |μ| <= 0.3: Temme's uniform asymptotic expansion of Q,
            differentiated in a.  Here the series and the continued fraction would need
            O(√a) terms.
  * series: otherwise, x < a + 1 (a < 20) or x < a (a >= 20): the power series of P,
            differentiated term by term (all terms have one sign: no cancellation).
  * CF:     otherwise: Legendre's continued fraction of Q, evaluated by Lentz's method
            together with its derivative in a.

Edges (SciPy's conventions, no warnings): a <= 0, x < 0 or nan -> nan; x = 0 or x = inf
-> 0 (P is constant in a there); a = inf -> 0 for finite x (the limit), nan for x = inf.

Two quantities need care for a small relative error without extra precision: the factor
x^a e^-x / Γ(a+1) is formed from a (λ - 1 - log λ), λ = x/a, for a >= 20 (a log x -
log Γ(a+1) would lose ~|a log x|·eps, 1e-10 at a = 1e5), and log x - ψ(a) as log(x/a) -
(ψ(a) - log a) for a >= 20 (it is small near x = a).  What remains is an error of about
(exponent of that factor)·eps: the effect of moving a or x by an ulp.
"""
import functools
import math
import threading
from fractions import Fraction

import numpy as np
from scipy import special as sc

# (special.py imports this module when its kernels are first evaluated, not before)
from .special import _BERNOULLI, _betaln_da_np, _log1pmx_np


_EPS = np.finfo(np.float64).eps
_A_BIG = 20.0          # a >= this: Stirling-type formulas and the Temme region
_TEMME_MU = 0.3        # Temme for |x/a - 1| <= this (its eta power series need |eta| small)
_MAXITER = 300         # bound on series / CF steps (the worst cases need ~100)

# Temme's expansion, Q(a, x) = erfc(η√(a/2))/2 + e^(-aη²/2)/√(2πa) Σₖ cₖ(η) a^-k with
# η = sign(λ - 1)√(2(λ - 1 - log λ)), λ = x/a, needs the power series of the cₖ.  They
# follow from c₀ = 1/(λ - 1) - 1/η and cₖ = (1/η) dcₖ₋₁/dη + (-1)ᵏ gₖ/(λ - 1) (DLMF
# 8.12.9-10), where Γ*(a) = Γ(a)/(√(2π/a)(a/e)^a) ~ Σ gₖ a^-k.  They are computed once, on
# first use, in exact rational arithmetic: 16 × 26 coefficients leave less than 1e-17 at
# a = 20, |η| <= 0.34.
_TEMME_K, _TEMME_N = 16, 26


@functools.cache
def _temme_table():
    """d[k][n] = the coefficient of ηⁿ in cₖ(η), k < _TEMME_K, n < _TEMME_N (float64)."""
    K, N = _TEMME_K, _TEMME_N
    M = N + 2 * K + 4                  # (each step (1/η) d/dη costs two orders)
    # Bernoulli numbers, then Stirling's gₖ: Γ*(a) = exp(Σⱼ B₂ⱼ/(2j(2j-1)) a^(1-2j)),
    # the exponential of a series by e' = s'e
    B = [Fraction(1)] + [Fraction(0)] * (K + 2)
    for m in range(1, K + 3):
        B[m] = -sum(math.comb(m + 1, j) * B[j] for j in range(m)) / (m + 1)
    s = [Fraction(0)] * (K + 1)
    for j in range(1, K // 2 + 2):
        if 2 * j - 1 <= K:
            s[2 * j - 1] = B[2 * j] / (2 * j * (2 * j - 1))
    g = [Fraction(1)] + [Fraction(0)] * K
    for n in range(1, K + 1):
        g[n] = sum(k * s[k] * g[n - k] for k in range(1, n + 1)) / n
    # μ = λ - 1 = Σ mₖ ηᵏ solves μ - log(1 + μ) = η²/2, so μμ' = η(1 + μ)
    m = [Fraction(0)] * (M + 4)
    m[1] = Fraction(1)
    for n in range(2, M + 3):
        m[n] = (m[n - 1] - sum(m[i] * (n - i + 1) * m[n - i + 1] for i in range(2, n))) / (n + 1)
    # 1/μ = η⁻¹ Σ uₙ ηⁿ, the reciprocal of μ/η = 1 + m₂η + m₃η² + ...
    u = [Fraction(1)] + [Fraction(0)] * (M + 1)
    for n in range(1, M + 2):
        u[n] = -sum(m[j + 1] * u[n - j] for j in range(1, n + 1))
    inv_mu = {n - 1: u[n] for n in range(M + 2)}     # Laurent series: power -> coefficient
    c = {e: v for e, v in inv_mu.items() if e >= 0}   # c₀ = 1/μ - 1/η
    top, table = M, []
    for k in range(K):
        if k:
            new = {}
            for e, v in c.items():
                if e:
                    new[e - 2] = new.get(e - 2, 0) + e * v
            for e, v in inv_mu.items():
                new[e] = new.get(e, 0) + (-1) ** k * g[k] * v
            top -= 2
            c = {e: v for e, v in new.items() if 0 <= e <= top}   # (the η⁻ᵏ terms cancel)
        table.append([float(c.get(n, 0)) for n in range(N)])
    return np.array(table)


# --------------------------------------------------------------------------- helpers

# (from the Bernoulli numbers B_2 ... B_12 of ψ's series in special.py)
_STIRLING = tuple(b / (2 * k * (2 * k - 1)) for k, b in enumerate(_BERNOULLI[:6], 1))
_PSI_ASY = tuple(b / (2 * k) for k, b in enumerate(_BERNOULLI[:6], 1))


def _even_poly(coef, t2):
    s = np.zeros_like(t2)
    for c in reversed(coef):
        s = c + t2 * s
    return s


def _lgamma_star(a):
    """log Gamma*(a) = log Gamma(a) - (a - 1/2) log a + a - log(2 pi)/2 by Stirling's series,
    for a >= 20 (truncation < 1e-19)."""
    t = 1.0 / a
    return t * _even_poly(_STIRLING, t * t)


def _psi_minus_log(a):
    """psi(a) - log a without cancellation: asymptotic series for a >= 20 (truncation < 1e-19)."""
    t = 1.0 / a
    return -0.5 * t - t * t * _even_poly(_PSI_ASY, t * t)


def _lm1ml(x, a):
    """lambda - 1 - log(lambda) >= 0 for lambda = x/a, with a small relative error everywhere."""
    mu = (x - a) / a                      # exact for a/2 <= x <= 2a (Sterbenz)
    out = np.empty_like(mu)
    near = np.abs(mu) <= 0.5
    # near 1: mu - log1p(mu), without its cancellation (log1pmx's series)
    out[near] = -_log1pmx_np(mu[near])
    # far from 1: lambda from x/a directly (1 + mu loses x/a's digits when x << a)
    far = ~near
    out[far] = mu[far] - np.log(x[far] / a[far])
    return out


def _log_prefactor(a, x):
    """log(x^a e^-x / Gamma(a+1)) for x > 0."""
    big = a >= _A_BIG
    out = np.empty_like(a)
    s = ~big
    out[s] = sc.xlogy(a[s], x[s]) - x[s] - sc.gammaln(a[s] + 1.0)
    # = -a (lambda - 1 - log lambda) - log(2 pi a)/2 - log Gamma*(a): the O(a log a)
    # parts cancel exactly
    ab = a[big]
    out[big] = -ab * _lm1ml(x[big], ab) - 0.5 * np.log(2 * np.pi * ab) - _lgamma_star(ab)
    return out


def _log_ratio(x, a):
    """log(x/a); log1p keeps the digits of x - a (exact near x = a) when x/a is near 1."""
    mu = (x - a) / a
    return np.where(np.abs(mu) < 0.5, np.log1p(mu), np.log(x / a))


def _log_minus_psi(x, a):
    """log x - psi(a) (its cancellation near x ~ a avoided for large a)."""
    out = np.log(x) - sc.digamma(a)
    big = a >= _A_BIG
    out[big] = _log_ratio(x[big], a[big]) - _psi_minus_log(a[big])
    return out


# --------------------------------------------------------------------------- the three methods

def _series(a, x):
    """dP/da = x^a e^-x sum_n x^n/Gamma(a+n+1) (log x - psi(a+n+1)), for x < a + 1 (a < 20)
    and x < 0.7 a (a >= 20).

    Terms r_n d_n with r_0 = 1, r_n = r_{n-1} x/(a+n) and d_n = log x - psi(a+n+1) =
    d_{n-1} - 1/(a+n).  For x <= a + 1/2 every d_n < 0 (psi(a+1) > log(a+1/2)), so the sum
    has no cancellation; for a + 1/2 < x < a + 1 only d_0 may be (slightly) positive.
    """
    small = a < _A_BIG
    d0 = np.empty_like(a)
    # (directly for small a: the other form's 1/a would cancel at tiny a)
    d0[small] = np.log(x[small]) - sc.digamma(a[small] + 1.0)
    d0[~small] = _log_minus_psi(x[~small], a[~small]) - 1.0 / a[~small]
    out = np.empty_like(a)
    idx = np.arange(a.size)
    aa, xx, r, d, s = a, x, np.ones_like(a), d0, d0.copy()
    for n in range(1, _MAXITER + 1):
        an = aa + n
        r = r * (xx / an)
        d = d - 1.0 / an
        term = r * d
        s = s + term
        # the ratio x/(a+n+1) is < 1 (<= 0.7 by the time terms are this small): the tail is < eps
        done = np.abs(term) <= 0.5 * _EPS * np.abs(s)
        if done.any():
            out[idx[done]] = s[done]
            keep = ~done
            idx, aa, xx, r, d, s = idx[keep], aa[keep], xx[keep], r[keep], d[keep], s[keep]
            if idx.size == 0:
                break
    out[idx] = np.nan                     # not converged (not expected: <= ~100 steps suffice)
    return out * np.exp(_log_prefactor(a, x))


def _cf(a, x):
    """dP/da = -dQ/da from Legendre's continued fraction, for x >= a + 1 (x > 1.3 a for a >= 20).

    Q = x^a e^-x / Gamma(a) / g with g = b_1 + a_2/(b_2 + a_3/(b_3 + ...)),
    b_j = x + 2j - 1 - a, a_j = (j-1)(a-j+1).  Then
        dQ/da = Q ((log x - psi(a)) - h),   h = (dg/da)/g,
    and both parts are >= 0 (-h Q = Gamma(a)^-1 int_x^inf log(t/x) t^(a-1) e^-t dt), so there is
    no cancellation.  Lentz: g = b_1 prod_j C_j D_j, C_j = b_j + a_j/C_{j-1},
    D_j = 1/(b_j + a_j D_{j-1}), so h = -1/b_1 + sum_j (u_j + v_j) with the logarithmic
    derivatives u_j = D_j'/D_j, v_j = C_j'/C_j (' = d/da; b_j' = -1, a_j' = j-1):
        u_j = -D_j (-1 + D_{j-1} (j-1 + a_j u_{j-1})),
        v_j = (-1 + (j-1 - a_j v_{j-1}) / C_{j-1}) / C_j.
    Carrying u, v rather than D', C' keeps every quantity near 1/x (no squares to overflow).
    In this region b_1 >= 2 and b_j + a_j D_{j-1} stays >= b_j/2 (checked on 2e5 random (a, x)),
    so Lentz's guard against zero denominators is not needed.
    """
    b1 = x + 1.0 - a
    out_g = np.empty_like(a)
    out_h = np.empty_like(a)
    idx = np.arange(a.size)
    aa, xx = a, x
    C, v, D, u = b1, -1.0 / b1, np.zeros_like(a), np.zeros_like(a)
    g, h = b1.copy(), v.copy()
    for j in range(2, _MAXITER + 2):
        bj = xx + (2 * j - 1) - aa
        aj = (j - 1) * (aa - (j - 1))
        Dn = 1.0 / (bj + aj * D)
        Cn = bj + aj / C
        u = -Dn * (D * ((j - 1) + aj * u) - 1.0)
        v = ((j - 1 - aj * v) / C - 1.0) / Cn
        C, D = Cn, Dn
        delta = C * D
        dh = u + v
        g = g * delta
        h = h + dh
        done = (np.abs(delta - 1.0) <= _EPS) & (np.abs(dh) <= 0.5 * _EPS * np.abs(h))
        if done.any():
            out_g[idx[done]] = g[done]
            out_h[idx[done]] = h[done]
            keep = ~done
            idx, aa, xx, C, v, D, u, g, h = (w[keep] for w in (idx, aa, xx, C, v, D, u, g, h))
            if idx.size == 0:
                break
    out_g[idx] = np.nan                   # not converged (not expected: <= ~100 steps suffice)
    Q = np.exp(np.log(a) + _log_prefactor(a, x)) / out_g
    return -Q * (_log_minus_psi(x, a) - out_h)


def _temme(a, x):
    """dP/da = -dQ/da from Temme's uniform expansion, for a >= 20, |x/a - 1| <= 0.3.

    Q = F(a, eta) = erfc(eta sqrt(a/2))/2 + E S,  E = exp(-a eta^2/2)/sqrt(2 pi a),
    S = sum_k c_k(eta) a^-k, eta = eta(x/a).  At fixed x, dQ/da = F_a + F_eta eta_a, and since
    eta depends on x/a only, F_eta eta_a = -(x/a) dQ/dx = x^a e^-x/Gamma(a+1) = E/Gamma*(a),
    exactly.  F_a = E (-eta/2 - (eta^2/2 + 1/(2a)) S - S1), S1 = sum_k k c_k a^-(k+1).  So
        dQ/da = E (1/Gamma*(a) - eta/2 - (eta^2/2 + 1/(2a)) S - S1),
    the bracket ~1 (0.8 ... 1.2 here): no cancellation.  c_k(eta) = sum_n d[k][n] eta^n from
    `_temme_table`.
    """
    f = _lm1ml(x, a)                                  # eta^2 / 2
    eta = np.sign(x - a) * np.sqrt(2.0 * f)
    t = 1.0 / a
    D = _temme_table()
    K, N = D.shape
    k = np.arange(K)[:, None]
    tk = t[None, :] ** k                              # (K, m)
    cS = D.T @ tk                              # (N, m): coefficient of eta^n in S
    cS1 = D.T @ (k * tk * t[None, :])          # ... in S1
    S = np.zeros_like(a)
    S1 = np.zeros_like(a)
    for n in range(N - 1, -1, -1):                    # Horner in eta
        S = S * eta + cS[n]
        S1 = S1 * eta + cS1[n]
    bracket = np.exp(-_lgamma_star(a)) - 0.5 * eta - (f + 0.5 * t) * S - S1
    E = np.exp(-a * f) / np.sqrt(2 * np.pi * a)
    return -E * bracket


# --------------------------------------------------------------------------- public

def _prepare(*args):
    """The arguments broadcast and flattened, in float64; their shape and result dtype."""
    args = [v if isinstance(v, (float, np.ndarray, np.generic)) else np.asarray(v)
            for v in args]
    dtype = np.result_type(*args, 1.0)
    flat = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in args))
    return flat[0].shape, dtype, [v.ravel() for v in flat]


def gammainc_da(a, x):
    """∂P(a, x)/∂a for P = scipy.special.gammainc; ∂Q/∂a = -gammainc_da(a, x) for Q =
    gammaincc.  Computed in float64, returned in the arguments' dtype; broadcasts like a
    ufunc.  a <= 0, x < 0 or nan -> nan; x = 0, x = inf -> 0; a = inf -> 0 for finite x
    (the limit), nan for x = inf.  See the module docstring.

    Example (P(a, 1) = 1 - e^-1 (1 + 1) at a = 2: ∂P/∂a by central differences):
        >>> from scipy.special import gammainc
        >>> from wengert.primitives.incomplete import gammainc_da
        >>> h = 1e-5
        >>> fd = (gammainc(2 + h, 1.0) - gammainc(2 - h, 1.0)) / (2 * h)
        >>> print(abs(gammainc_da(2.0, 1.0) - fd) < 1e-9)
        True
    """
    return _by_region(a, x, _temme, _series, _cf)


def _by_region(a, x, temme_method, series_method, cf_method):
    """A partial of P(a, x) in a, by the region each point is in: Temme's expansion for
    large a near x, the power series of P below, the continued fraction of Q above; nan
    outside the domain and 0 where P does not depend on a (x = 0, x = inf, a = inf)."""
    shape, dtype, (a, x) = _prepare(a, x)
    out = np.full(a.shape, np.nan)
    with np.errstate(all="ignore"):
        ok = (a > 0) & (x >= 0)                       # False for nan
        out[ok & ((x == 0) | (x == np.inf) | (a == np.inf))] = 0.0
        out[(a == np.inf) & (x == np.inf)] = np.nan
        work = ok & (x > 0) & np.isfinite(x) & np.isfinite(a)
        temme = work & (a >= _A_BIG) & (np.abs(x - a) <= _TEMME_MU * a)
        lower = work & ~temme & np.where(a < _A_BIG, x < a + 1.0, x < a)
        upper = work & ~temme & ~lower
        for mask, method in ((temme, temme_method), (lower, series_method),
                             (upper, cf_method)):
            if mask.any():
                out[mask] = method(a[mask], x[mask])
    return out.reshape(shape).astype(dtype, copy=False)[()]


# --------------------------------------------------------------------------- gammainc_daa
# ∂²P/∂a², for the second derivative of gamma draws in their shape (wengert.random), by
# the three methods above each differentiated once more in a:
#   * series: the terms' second log-derivatives are d_n² - ψ'(a+n+1), with ψ'(a+n+1) =
#     ψ'(a+n) - 1/(a+n)²; the terms may differ in sign, so the sum stops against the sum
#     of their sizes;
#   * CF: with Q = x^a e^-x / (Γ(a) g), ∂²Q/∂a² = Q ((log x - ψ(a) - h)² - ψ'(a) - h'),
#     h' from the second log-derivatives U = D''/D, V = C''/C carried through Lentz's
#     steps beside u and v;
#   * Temme: ∂P/∂a = -E·B (`_temme`) differentiated at fixed x, through a and through
#     η(x/a), whose derivative is dη/da = -(x/a - 1)/(a η).

def _series_daa(a, x):
    small = a < _A_BIG
    d0 = np.empty_like(a)
    d0[small] = np.log(x[small]) - sc.digamma(a[small] + 1.0)
    d0[~small] = _log_minus_psi(x[~small], a[~small]) - 1.0 / a[~small]
    e0 = sc.polygamma(1, a + 1.0)
    out = np.empty_like(a)
    idx = np.arange(a.size)
    aa, xx, r, d, e = a, x, np.ones_like(a), d0, e0
    s = d0 * d0 - e0
    size = np.abs(s)
    for n in range(1, _MAXITER + 1):
        an = aa + n
        r = r * (xx / an)
        d = d - 1.0 / an
        e = e - 1.0 / (an * an)
        term = r * (d * d - e)
        s = s + term
        size = size + np.abs(term)
        done = np.abs(term) <= 0.5 * _EPS * size
        if done.any():
            out[idx[done]] = s[done]
            keep = ~done
            idx, aa, xx, r, d, e, s, size = (w[keep] for w in (idx, aa, xx, r, d, e, s, size))
            if idx.size == 0:
                break
    out[idx] = np.nan
    return out * np.exp(_log_prefactor(a, x))


def _cf_daa(a, x):
    b1 = x + 1.0 - a
    out_g, out_h, out_dh = (np.empty_like(a) for _ in range(3))
    idx = np.arange(a.size)
    aa, xx = a, x
    C, v, V = b1, -1.0 / b1, np.zeros_like(a)
    D, u, U = np.zeros_like(a), np.zeros_like(a), np.zeros_like(a)
    g, h, dh = b1.copy(), v.copy(), -v * v
    for j in range(2, _MAXITER + 2):
        bj = xx + (2 * j - 1) - aa
        aj = (j - 1) * (aa - (j - 1))
        # D_j = 1/E, E = b_j + a_j D_{j-1}: E' and E'' from D's log-derivatives
        e1 = D * ((j - 1) + aj * u) - 1.0
        e2 = D * (2 * (j - 1) * u + aj * U)
        Dn = 1.0 / (bj + aj * D)
        un = -Dn * e1
        Un = 2.0 * un * un - Dn * e2
        # C_j = b_j + a_j / C_{j-1}
        Cn = bj + aj / C
        vn = ((j - 1 - aj * v) / C - 1.0) / Cn
        Vn = (-2.0 * (j - 1) * v - aj * (V - 2.0 * v * v)) / (C * Cn)
        C, v, V, D, u, U = Cn, vn, Vn, Dn, un, Un
        delta = C * D
        step = u + v
        dstep = U - u * u + V - v * v
        g = g * delta
        h = h + step
        dh = dh + dstep
        done = ((np.abs(delta - 1.0) <= _EPS) & (np.abs(step) <= 0.5 * _EPS * np.abs(h))
                & (np.abs(dstep) <= 0.5 * _EPS * np.abs(dh)))
        if done.any():
            out_g[idx[done]], out_h[idx[done]], out_dh[idx[done]] = g[done], h[done], dh[done]
            keep = ~done
            idx, aa, xx, C, v, V, D, u, U, g, h, dh = (
                w[keep] for w in (idx, aa, xx, C, v, V, D, u, U, g, h, dh))
            if idx.size == 0:
                break
    out_g[idx] = np.nan
    Q = np.exp(np.log(a) + _log_prefactor(a, x)) / out_g
    first = _log_minus_psi(x, a) - out_h
    return -Q * (first * first - sc.polygamma(1, a) - out_dh)


def _temme_daa(a, x):
    f = _lm1ml(x, a)                                  # eta^2 / 2
    eta = np.sign(x - a) * np.sqrt(2.0 * f)
    mu = (x - a) / a
    with np.errstate(invalid="ignore", divide="ignore"):
        mu_over_eta = np.where(eta == 0, 1.0, mu / eta)       # (-> 1 as x -> a)
    t = 1.0 / a
    D = _temme_table()
    K, N = D.shape
    k = np.arange(K)[:, None]
    tk = t[None, :] ** k
    cS, cS1, cS2 = D.T @ tk, D.T @ (k * tk * t), D.T @ (k * (k + 1) * tk * t * t)
    S, S1, S2, S_eta, S1_eta = (np.zeros_like(a) for _ in range(5))
    for m in range(N - 1, -1, -1):                    # Horner in eta, with derivatives
        S_eta = S_eta * eta + S
        S1_eta = S1_eta * eta + S1
        S = S * eta + cS[m]
        S1 = S1 * eta + cS1[m]
        S2 = S2 * eta + cS2[m]
    lgs = _lgamma_star(a)
    dlgs = -t * t * _even_poly(tuple((2 * i + 1) * c for i, c in enumerate(_STIRLING)), t * t)
    B = np.exp(-lgs) - 0.5 * eta - (f + 0.5 * t) * S - S1
    B_a = -dlgs * np.exp(-lgs) + 0.5 * t * t * S + (f + 0.5 * t) * S1 + S2
    B_eta = -0.5 - eta * S - (f + 0.5 * t) * S_eta - S1_eta
    dB = B_a - t * mu_over_eta * B_eta
    dlogE = -f + mu - 0.5 * t
    E = np.exp(-a * f) / np.sqrt(2 * np.pi * a)
    return -E * (dlogE * B + dB)


def gammainc_daa(a, x):
    """∂²P(a, x)/∂a² for P = scipy.special.gammainc, for the second derivative of gamma
    draws in their shape: the regions and edges of `gammainc_da`, each method
    differentiated once more (see the comment above).

    Example (P(a, 1) at a = 2: ∂²P/∂a² by central differences of ∂P/∂a):
        >>> h = 1e-5
        >>> fd = (gammainc_da(2 + h, 1.0) - gammainc_da(2 - h, 1.0)) / (2 * h)
        >>> print(abs(gammainc_daa(2.0, 1.0) - fd) < 1e-8)
        True
    """
    return _by_region(a, x, _temme_daa, _series_daa, _cf_daa)

# --------------------------------------------------------------------------- betainc
# Write I_z(p, q) = P/K with the prefactor and the continued fraction
#     P = z^p (1-z)^q / (p B(p, q)),    K = 1 + d₁/(1 + d₂/(1 + d₃/(1 + ...))),
#     d₂ₘ₊₁ = -(p+m)(p+q+m) z / ((p+2m)(p+2m+1)),   d₂ₘ = m(q-m) z / ((p+2m-1)(p+2m)).
# Then ∂I/∂p = I·(∂log P/∂p - ∂log K/∂p), and the same in q, with
#     ∂log P/∂p = log z + ψ(p+q) - ψ(p+1),      ∂log P/∂q = log(1-z) + ψ(p+q) - ψ(q).
# I is SciPy's betainc; ∂log K = Σₙ (Cₙ'/Cₙ + Dₙ'/Dₙ) comes from Lentz's method
# (Cₙ = 1 + dₙ/Cₙ₋₁, Dₙ = 1/(1 + dₙDₙ₋₁)) differentiated alongside, with dₙ' in closed
# form; working with log-derivatives, P and K (which under- and overflow) are never formed.
#
# * Side: the fraction converges fast for z below about (p+1)/(p+q+2).  For x above it,
#   the mirror I_x(a, b) = 1 - I_{1-x}(b, a) = 1 - J is used: ∂I/∂a = -∂J/∂q and ∂I/∂b =
#   -∂J/∂p, so one pass gives both partials on either side.  1 - x is taken as computed:
#   exact for x >= 1/2; x < 1/2 is mirrored only when a < b, where 1 - x > 1/2 carries a
#   rounding of at most 2^-53 (J is then SciPy's betaincc(a, b, x), at the exact 1 - x).
# * p < 1: ∂I_z/∂q comes from the power series in z (`_series_dlogs_q`): I_z(p, q) can be
#   1 - O(p) there, and I·(∂log P/∂q - ∂log K/∂q) would cancel down to the O(p) answer.
# * The first two steps of the fraction are special-cased (`_cf_dlogk`): 1 + d₁ cancels
#   near the switch point.
# * No asymptotic expansion for large a and b: the fraction needs at most ~800 pairs of
#   steps for a, b <= 1e4 (131 at the mean of a = b = 1e4), growing like √(a + b): nan
#   past _BETA_MAXITER, at the mean for a = b >= 3e8.
# Within 1.4e-12 of mpmath (40 digits) on 21,770 points with a, b in [1e-3, 1e4], x in
# [1e-10, 1 - 1e-10], the means and the switch points; the worst is where SciPy's betainc
# itself is off by as much.

# Continued fraction: stop once two steps change K by at most 4·_TOL (rounding) and the
# log-derivatives by at most _TOL of the result's scale; _BETA_MAXITER pairs of steps bound
# the work (for a, b <= 1e4 at most ~800 are needed).  Entries that have not converged
# by then are returned as nan rather than as a silently inaccurate number.
_TOL = 1e-16
_BETA_MAXITER = 10000
# ∂I_z(p,q)/∂q comes from the power series (_series_dlogs_q) for p < _SMALL_P, in at most
# _MAXTERMS terms
_SMALL_P = 1.0
_MAXTERMS = 300


def _psi_diff(u, s):
    """ψ(u + s) - ψ(u) for u > 0, s >= 0, without cancellation when s << u: betaln's
    partial, negated."""
    return -_betaln_da_np(u, s)


def _psi_pq_minus_p1(p, q):
    """ψ(p+q) - ψ(p+1) for p, q > 0 (in ∂log P/∂p; -1/p - ψ(p) = -ψ(p+1) removes the
    cancellation of two ~1/p terms for small p).  For q < 1 it is -(ψ(p+q+(1-q)) - ψ(p+q)),
    based at p+q as formed directly: (p+1) + (q-1) would cancel when p+q is small."""
    lo = q < 1.0
    return np.where(lo, -_psi_diff(np.where(lo, p + q, 1.0), np.where(lo, 1.0 - q, 0.0)),
                    _psi_diff(np.where(lo, 1.0, p + 1.0), np.where(lo, 0.0, q - 1.0)))


def _lentz_step(d, dp, dq, C, D, Cp, Cq, Dp, Dq):
    """One step of Lentz's method, C_n = 1 + d/C, D_n = 1/(1 + d D), differentiated in p
    and q (dp, dq are d's partials).  Returns the new C, D, their partials, the
    increments C_n'/C_n + D_n'/D_n of the log-derivatives and the factor C_n D_n."""
    den = 1.0 + d * D
    den = np.where(den == 0.0, 1e-300, den)     # (the usual guard; not met in tests)
    Dn = 1.0 / den
    up, uq = dp * D + d * Dp, dq * D + d * Dq   # den's partials
    r = d / C
    Cn = 1.0 + r
    Cn = np.where(Cn == 0.0, 1e-300, Cn)
    Cpn, Cqn = (dp - r * Cp) / C, (dq - r * Cq) / C
    return (Cn, Dn, Cpn, Cqn, -up * Dn * Dn, -uq * Dn * Dn,
            Cpn / Cn - up * Dn, Cqn / Cn - uq * Dn, Cn * Dn)


def _cf_dlogk(p, q, z, y, lp, lq, need_q):
    """(∂log K/∂p, ∂log K/∂q) for the continued fraction K of I_z(p, q) (module
    docstring); 1-d float arrays, y = 1 - z.  lp, lq (∂log P) set the scale for the
    convergence test, as the result is I·(lp - kp); where need_q is False, kq need not
    converge.  Lentz's method from C₀ = 1, D₀ = 0 on the whole array at once: an active
    index set keeps the entries not yet converged and shrinks as they converge."""
    n = p.size
    out_p = np.full(n, np.nan)
    out_q = np.full(n, np.nan)
    # n = 1: C₁ = 1 + d₁, D₁ = 1, the first factor of K.  1 + d₁ = ((p+1) - (p+q)z)/(p+1)
    # = ((1-q) + (p+q)y)/(p+1) is small near the switch point; K is a product of factors,
    # so its relative error is that of 1 + d₁: take the form that cancels less.  (For
    # p >> 1 and q <~ 1 near z = 1, where K itself is small, the y form is exact.)
    num_z = (p + 1.0) - (p + q) * z
    num_y = (1.0 - q) + (p + q) * y
    by_y = np.maximum(np.abs(1.0 - q), (p + q) * y) * np.abs(num_z) < (p + 1.0) * np.abs(num_y)
    C1 = np.where(by_y, num_y, num_z) / (p + 1.0)
    d1 = -(p + q) * z / (p + 1.0)
    C1p = d1 * ((1.0 - q) / (p + q)) / (p + 1.0)    # ∂d₁/∂p = d₁·(1/(p+q) - 1/(p+1))
    C1q = d1 / (p + q)
    # n = 2: C₂ = 1 + d₂/C₁, D₂ = 1/(1 + d₂).  Where 1 + d₁ is small only by cancellation
    # (q >> 1 > p, near the switch) C₂ is large and the product C₁C₂ = C₁ + d₂ is not
    # small: summing C₁'/C₁ + C₂'/C₂ as (C₁' + d₂')/(C₁ + d₂) keeps C₁'s rounding out of
    # ∂log K (in C₂ it is damped by the later steps, C₃ = 1 + d₃/C₂ with C₂ large).
    # (the coefficients are formed as products of ratios: no overflow for huge p, q)
    d2 = ((q - 1.0) / (p + 1.0)) * (z / (p + 2.0))
    d2p, d2q = -d2 * (1.0 / (p + 1.0) + 1.0 / (p + 2.0)), (z / (p + 1.0)) / (p + 2.0)
    C = 1.0 + d2 / C1
    Cp, Cq = (d2p - d2 * C1p / C1) / C1, (d2q - d2 * C1q / C1) / C1
    D = 1.0 / (1.0 + d2)
    Dp, Dq = -d2p * D * D, -d2q * D * D
    kp = (C1p + d2p) / (C1 + d2) - d2p * D              # ∂log K so far: Σ C'/C + D'/D
    kq = (C1q + d2q) / (C1 + d2) - d2q * D
    idx = np.arange(n)
    for m in range(1, _BETA_MAXITER + 1):
        # odd step n = 2m+1
        pm, pqm, p2m = p + m, p + q + m, p + 2 * m
        d = -(pm / p2m) * (pqm / (p2m + 1.0)) * z
        dp = d * (m / (pm * p2m) + (m + 1.0 - q) / (pqm * (p2m + 1.0)))
        dq = d / pqm
        C, D, Cp, Cq, Dp, Dq, ip1, iq1, f1 = _lentz_step(d, dp, dq, C, D, Cp, Cq, Dp, Dq)
        # even step n = 2k, k = m+1
        k = m + 1
        u = k * z / (p + 2 * k)
        d = ((q - k) / (p + (2 * k - 1))) * u
        dp = -d * (1.0 / (p + (2 * k - 1)) + 1.0 / (p + 2 * k))
        dq = u / (p + (2 * k - 1))
        C, D, Cp, Cq, Dp, Dq, ip2, iq2, f2 = _lentz_step(d, dp, dq, C, D, Cp, Cq, Dp, Dq)
        kp = kp + (ip1 + ip2)
        kq = kq + (iq1 + iq2)
        # converged: K has stopped moving (to rounding) and the last two increments of
        # ∂log K are negligible in the result
        done = ((np.abs(f1 - 1.0) + np.abs(f2 - 1.0) <= 4 * _TOL)
                & (np.abs(ip1) + np.abs(ip2) <= _TOL * np.abs(lp - kp))
                & ((np.abs(iq1) + np.abs(iq2) <= _TOL * np.abs(lq - kq)) | ~need_q))
        if done.any():
            out_p[idx[done]] = kp[done]
            out_q[idx[done]] = kq[done]
            keep = ~done
            if not keep.any():
                break
            idx = idx[keep]
            (p, q, z, lp, lq, need_q, C, D, Cp, Cq, Dp, Dq, kp, kq) = (
                v[keep] for v in (p, q, z, lp, lq, need_q, C, D, Cp, Cq, Dp, Dq, kp, kq))
    return out_p, out_q


def _series_dlogs_q(p, q, z, psq):
    """S'/S, S = Σₙ cₙ/(p+n), cₙ = (1-q)ₙ zⁿ/n!, ' = ∂/∂q: from the power series
        I_z(p, q) = z^p S / B(p, q),   ∂I/∂q = I·(ψ(p+q) - ψ(q) + S'/S).
    Used for p < 1, where I_z(p, q) can be 1 - O(p) and the fraction's
    I·(∂log P/∂q - ∂log K/∂q) is the difference of two nearly equal numbers, while here
    both terms are O(p) (c₀ = 1 does not depend on q).  On the fraction's side of the
    switch z <= (p+1)/(p+q+2) < 2/(q+2): |cₙ| ~ (qz)ⁿ/n! with qz < 2 for large q, ~zⁿ with
    z < 2/3 for small q, so the series converges in under ~100 terms, without much
    cancellation.  psq = ψ(p+q) - ψ(q) sets the convergence scale."""
    n = p.size
    out = np.full(n, np.nan)
    c = np.ones(n)
    cq = np.zeros(n)
    S = 1.0 / p
    Sq = np.zeros(n)
    idx = np.arange(n)
    for k in range(1, _MAXTERMS + 1):
        f = z / k
        cq = (cq * (k - q) - c) * f
        c = c * (k - q) * f
        tS = c / (p + k)
        tq = cq / (p + k)
        S = S + tS
        Sq = Sq + tq
        done = ((np.abs(tS) <= _TOL * S)
                & (np.abs(tq) <= _TOL * (np.abs(Sq) + np.abs(psq) * S)))
        if done.any():
            out[idx[done]] = Sq[done] / S[done]
            keep = ~done
            if not keep.any():
                break
            idx = idx[keep]
            p, q, z, psq, c, cq, S, Sq = (v[keep] for v in (p, q, z, psq, c, cq, S, Sq))
    return out


def betainc_dab(a, b, x):
    """(∂I_x(a,b)/∂a, ∂I_x(a,b)/∂b) for the regularized incomplete beta function
    I_x(a, b) = scipy.special.betainc(a, b, x), elementwise with broadcasting.

    One continued-fraction pass gives both (betainc_da and betainc_db share it when
    called one after the other at the same point).  ∂I/∂a < 0 < ∂I/∂b for 0 < x < 1; at
    x = 0 and x = 1 both are 0.  a <= 0, b <= 0, x outside [0, 1] and nan give nan (no warnings);
    one infinite parameter gives 0, two give nan.  Computed in float64, returned in the
    arguments' dtype.

    Example (I_x(a, 1) = x^a and I_x(1, b) = 1 - (1 - x)^b: at a = b = 1 the partials are
    x log x and -(1 - x) log(1 - x)):
        >>> from wengert.primitives.incomplete import betainc_dab
        >>> [round(float(d), 12) for d in betainc_dab(1.0, 1.0, 0.25)]
        [-0.34657359028, 0.215761554339]
    """
    return _betainc_dab(*_prepare(a, b, x))


def _betainc_dab(shape, dtype, flat):
    """`betainc_dab` of arguments `_prepare` made."""
    a, b, x = flat
    da = np.full(a.size, np.nan)
    db = np.full(a.size, np.nan)
    with np.errstate(all="ignore"):
        valid = (a > 0) & (b > 0) & (x >= 0) & (x <= 1) & ~(np.isinf(a) & np.isinf(b))
        # x = 0, x = 1, or one parameter infinite: I is locally constant in a and b
        flat = valid & ((x == 0) | (x == 1) | np.isinf(a) | np.isinf(b))
        da[flat] = 0.0
        db[flat] = 0.0
        i = np.flatnonzero(valid & ~flat)
        if i.size:
            av, bv, xv = a[i], b[i], x[i]
            # the fraction converges fast for x below about (a+1)/(a+b+2); above it,
            # mirror to I_{1-x}(b, a)
            swap = xv * (av + bv + 2.0) > av + 1.0
            p = np.where(swap, bv, av)
            q = np.where(swap, av, bv)
            z = np.where(swap, 1.0 - xv, xv)
            y = np.where(swap, xv, 1.0 - xv)              # 1 - z
            logz = np.where(swap, np.log1p(-xv), np.log(xv))
            log1mz = np.where(swap, np.log(xv), np.log1p(-xv))
            # I_z(p, q) = betainc(p, q, z): on the mirrored side J = 1 - I_x(a, b), which
            # is betainc(b, a, 1 - x) where 1 - x is exact (x >= 1/2), and betaincc(a, b, x)
            # otherwise (SciPy's betaincc is ~8x slower than betainc, so only there)
            Iz = sc.betainc(p, q, z)
            c = swap & (xv < 0.5)
            Iz[c] = sc.betaincc(av[c], bv[c], xv[c])
            lp = logz + _psi_pq_minus_p1(p, q)             # ∂log P/∂p
            psq = _psi_diff(q, p)
            lq = log1mz + psq                               # ∂log P/∂q
            small_p = p < _SMALL_P
            kp, kq = _cf_dlogk(p, q, z, y, lp, lq, ~small_p)
            gp = Iz * (lp - kp)                             # ∂I_z(p,q)/∂p
            gq = Iz * (lq - kq)                             # ∂I_z(p,q)/∂q
            if small_p.any():
                j = np.flatnonzero(small_p)
                gq[j] = Iz[j] * (psq[j] + _series_dlogs_q(p[j], q[j], z[j], psq[j]))
            da[i] = np.where(swap, -gq, gp)
            db[i] = np.where(swap, -gp, gq)
    return tuple(d.reshape(shape).astype(dtype, copy=False)[()] for d in (da, db))


class _LastPair(threading.local):
    """betainc_dab's last arguments and result, so that betainc_da and betainc_db at the
    same point share one pass: a gradient in both shapes asks for one and then the other
    (the reverse sweep evaluates betainc's partials one after the other).  A hit needs
    equal shapes and values (nan equal to nan), so a result never depends on what was
    asked before.  One entry per thread; it stays until the next call with other
    arguments."""

    def __init__(self):
        self.args = self.pair = None

    def of(self, a, b, x):
        args = _prepare(a, b, x)
        last = self.args
        if (last is not None and last[:2] == args[:2]
                and all(np.array_equal(u, v, equal_nan=True) for u, v in zip(last[2], args[2]))):
            pair = self.pair
        else:
            pair = self.pair = _betainc_dab(*args)
            # copies: the caller may change its arrays in place before the next call
            self.args = (args[0], args[1], [v.copy() for v in args[2]])
        # copies out too: a caller may write into what it is given
        return tuple(r.copy() if isinstance(r, np.ndarray) else r for r in pair)


_last_pair = _LastPair()


def betainc_da(a, b, x):
    """∂I_x(a, b)/∂a, the partial of scipy.special.betainc(a, b, x) in a (elementwise,
    broadcasting; nan outside a > 0, b > 0, 0 <= x <= 1; 0 at x = 0 and x = 1).

    Example (I_x(a, 1) = x^a, so x^a log x):
        >>> from wengert.primitives.incomplete import betainc_da
        >>> round(float(betainc_da(2.0, 1.0, 0.5)), 12)      # 0.25 log 0.5
        -0.17328679514
    """
    return _last_pair.of(a, b, x)[0]


def betainc_db(a, b, x):
    """∂I_x(a, b)/∂b, the partial of scipy.special.betainc(a, b, x) in b (elementwise,
    broadcasting; nan outside a > 0, b > 0, 0 <= x <= 1; 0 at x = 0 and x = 1).

    Example (I_x(1, b) = 1 - (1 - x)^b, so -(1 - x)^b log(1 - x)):
        >>> from wengert.primitives.incomplete import betainc_db
        >>> round(float(betainc_db(1.0, 2.0, 0.5)), 12)      # -0.25 log 0.5
        0.17328679514
    """
    return _last_pair.of(a, b, x)[1]
