"""SciPy's `scipy.stats` distributions that autograd differentiates: norm, t,
multivariate_normal, gamma, beta, chi2, poisson and dirichlet, as objects with SciPy's methods
(``norm.logpdf(x, loc, scale)``).

On plain values a method calls SciPy's own (same arguments, same result).  On traced values
it is a composition of `wengert.numpy` and `wengert.scipy.special`, differentiable in every
float argument (the point and the parameters), to any order; it computes in the arguments'
dtype (float32 stays float32, where SciPy's stats give float64).  As SciPy's: outside the
support a log-density is -inf, and for invalid parameters (a scale <= 0, a shape <= 0)
every method gives nan, without a warning (and a nan derivative).  The cdf and sf of t,
gamma, chi2, beta and poisson are differentiable in x (poisson's in mu), loc and scale, and
gamma's, chi2's and beta's once in their shapes too (through the incomplete gamma and beta
functions' partials in their parameters); t's in df raise NotImplementedError.  Methods
SciPy has and wengert does not (ppf, rvs, ...) are SciPy's on plain values and raise
NotImplementedError, naming themselves, on traced values.

Example:
    >>> import wengert as wg
    >>> from wengert.scipy.stats import norm
    >>> wg.grad(norm.logpdf, argnums=(0, 1, 2))(1.0, 0.0, 2.0)    # in x, loc and scale
    (-0.25, 0.25, -0.375)
"""
from __future__ import annotations

import functools
import math
import sys
import types

import numpy as _np
import scipy.stats as _st

from .. import numpy as wnp
from ..dual import accepts_duals
from ..numpy.dispatch import unsupported as _unsupported
from ..primitives import special as P
from ..primitives.array import dtype_of
# (`exp` and `log` are the primitives, not wengert.numpy's: of a Python number, such as
# the default scale 1, they give a Python float, weakly typed, which leaves float32 values
# float32)
from ..primitives.scalar import exp, log, stop_gradient
from ..primitives.scipy_linalg import solve_triangular, symmetrize

__all__ = ["norm", "t", "multivariate_normal", "gamma", "beta", "chi2", "poisson", "dirichlet"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_LOG_SQRT_PI = 0.5 * math.log(math.pi)
_LOG_2PI = math.log(2 * math.pi)


def _method(fn):
    """A distribution's method: SciPy's on plain arguments, `fn` on traced ones (lists
    and tuples made arrays, one traced array if they hold traced values)."""
    @accepts_duals
    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        if wnp._traced(*args, *kwargs.values()):
            args, kwargs = tuple(map(_array, args)), {k: _array(v) for k, v in kwargs.items()}
            for a in (*args, *kwargs.values()):
                # (the compositions are for real numbers: norm's and t's would give a
                # complex number that means nothing, the others a refusal naming a
                # comparison deep inside)
                if a is not None and dtype_of(a).kind == "c":
                    raise TypeError(f"scipy.stats.{self.name}.{fn.__name__} of a complex "
                                    f"value ({dtype_of(a)}) is not supported on traced values"
                                    ": distributions are of real numbers")
            # (SciPy's methods give their nan, inf and 0 silently: log 0 at the edge of a
            # support, log of an invalid scale, are values here, not mistakes to warn of)
            with _np.errstate(all="ignore"):
                return fn(self, *args, **kwargs)
        return getattr(self.scipy, fn.__name__)(*args, **kwargs)
    return wrapper


def _array(a):
    if type(a) is list or type(a) is tuple:
        return wnp.asarray(a) if wnp._traced(a) else _np.asarray(a)
    return a


class _Distribution:
    """One of SciPy's distributions, with the methods wengert differentiates."""

    name = None

    @property
    def scipy(self):
        return getattr(_st, self.name)

    def __getattr__(self, name):
        fn = getattr(self.scipy, name) if not name.startswith("_") else None
        if callable(fn):
            return _unsupported(f"scipy.stats.{self.name}.{name}", fn)
        raise AttributeError(f"wengert.scipy.stats.{self.name} has no attribute {name!r}")

    def __repr__(self):
        return f"<wengert.scipy.stats.{self.name}>"


class _Density(_Distribution):
    """A distribution with a density: its ``pdf`` is ``exp(logpdf)``, with logpdf's
    arguments."""

    @_method
    def pdf(self, *args, **kwargs):
        return wnp.exp(self.logpdf(*args, **kwargs))


def _standardize(x, loc, scale):
    try:
        return (x - loc) / scale
    except ZeroDivisionError:       # (Python numbers, scale 0: invalid, so every method
        return math.nan             # gives nan, as SciPy's; not an exception)


def _where(condition, a, b):
    """wnp.where, but `a` or `b` itself for a plain condition that is all true or all
    false: plain parameters (the usual case: the defaults) add nothing to the graph, and a
    Python number stays one (weakly typed: float32 values stay float32)."""
    if not wnp._traced(condition):
        if _np.all(condition):
            return a
        if not _np.any(condition):
            return b
    return wnp.where(condition, a, b)


def _valid(ok, value):
    """`value` where the parameters are valid (`ok`), nan elsewhere, as SciPy gives, with a
    nan derivative there too: a function that is nan at every point near has none (a
    select would send it 0).  Multiplied by 1 or nan in value's dtype, so valid entries
    keep their value and derivative exactly."""
    if not wnp._traced(ok) and _np.all(ok):
        return value
    dtype = _np.result_type(dtype_of(value), 1.0)
    return value * wnp.where(ok, dtype.type(1), dtype.type(math.nan))


def _like(c, x):
    """A Python number `c` in x's float dtype, for SciPy's ufuncs: they compute a float32
    array beside a Python number in float64, where NumPy keeps float32."""
    if type(c) in (int, float, bool):
        return _np.result_type(dtype_of(x), 1.0).type(c)
    return c


def _count(k, loc, like, low=0, high=None):
    """The count m = k - loc (`low` where it is outside: below `low`, above `high`, or no
    integer) and where it is outside.  A count is piecewise constant in k and loc (0 off
    the integers), so its derivative is 0, as poisson's _tail's; xlogy(m, μ) - gammaln(m + 1)
    would give log μ - ψ(k + 1).  (It is a Python number in `like`'s dtype, `_like`:
    SciPy's xlogy beside a Python number computes a float32 μ in float64.)  The stand-in
    `low` keeps the unused log-pmf finite, whose inf times the zero cotangent would be nan."""
    m = stop_gradient(_like(k - loc, like))
    outside = (m < low) | (m > wnp.floor(m))      # (a nan count is neither)
    if high is not None:
        outside = outside | (m > high)
    return _where(outside, _like(float(low), like), m), outside


def _density(outside, value):
    """A log-density: -inf outside the support.  (`outside`, not "inside": a nan point is
    neither, and stays nan.)"""
    return wnp.where(outside, -math.inf, value)


def _edge(edge, y, inner, power_form, log_form):
    """A density that is a power of y at the edge of its support: exp(log_form(y))
    inside, power_form(y) where `edge`.  There the log-density is -inf, and exp's
    derivative, the density times the log-density's, would be 0 · inf = nan; the power's
    own rule has the limit (gamma's pdf at 0 for a = 2 has slope 1, beta's at 0 for
    a = 3 slope 0).  Each form is given y where it is taken and the point `inner`
    elsewhere, so the unused one stays finite (its inf times the zero cotangent would be
    nan too)."""
    return _where(edge, power_form(_where(edge, y, inner)),
                  wnp.exp(log_form(_where(edge, inner, y))))


class _Norm(_Density):
    """The normal distribution N(loc, scale²): ``pdf logpdf cdf logcdf sf logsf``.

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.stats import norm
        >>> round(float(norm.cdf(0.0)), 6), round(wg.grad(norm.cdf)(0.0), 6)
        (0.5, 0.398942)
    """

    name = "norm"

    @_method
    def logpdf(self, x, loc=0, scale=1):
        z = _standardize(x, loc, scale)
        return _valid(scale > 0, -0.5 * (z * z) - log(scale) - _LOG_SQRT_2PI)

    @_method
    def cdf(self, x, loc=0, scale=1):
        return _valid(scale > 0, P.ndtr(_standardize(x, loc, scale)))

    @_method
    def logcdf(self, x, loc=0, scale=1):
        return _valid(scale > 0, P.log_ndtr(_standardize(x, loc, scale)))

    @_method
    def sf(self, x, loc=0, scale=1):
        return _valid(scale > 0, P.ndtr(-_standardize(x, loc, scale)))

    @_method
    def logsf(self, x, loc=0, scale=1):
        return _valid(scale > 0, P.log_ndtr(-_standardize(x, loc, scale)))


class _T(_Density):
    """Student's t distribution with `df` degrees of freedom: ``pdf logpdf``, and ``cdf sf
    logcdf logsf`` (differentiable in x, loc and scale, not in df).

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.stats import t
        >>> wg.grad(t.logpdf)(1.0, 1.0)         # Cauchy: -2x/(1 + x²)
        -1.0
    """

    name = "t"

    @_method
    def logpdf(self, x, df, loc=0, scale=1):
        z = _standardize(x, loc, scale)
        # at ν = inf it is the normal density (a nan ν is not inf: its nan reaches the
        # derivative through the t branch, where the normal one has no ν to carry it)
        finite = df != math.inf
        nu = _where(finite, df, 1.0)
        z2 = z * z
        u = z2 / nu
        normal = -0.5 * z2 - _LOG_SQRT_2PI
        # Written as the normal density plus corrections that vanish as ν grows, where
        # z²/ν is small: log1p(u) = u + log1pmx(u) takes out the -z²/2 exactly.  The
        # terms of the plain form are O(1/ν) with a sum O(1/ν²), so its ν-derivative
        # lost a digit per decade of ν (1e-2 relative at ν = 1e14).  For large z²/ν the
        # plain form, which does not subtract two huge terms there (each branch given
        # arguments in its own domain, so the other's derivative is never inf·0).
        near = u <= 1
        nu = _like(nu, z2)          # (a Python number in z's dtype: selects keep float32)
        nn, zn = _where(near, nu, 1.0), _where(near, z2, 0.0)
        un = zn / nn
        corrected = (normal + _log_gamma_ratio_tail(nn / 2) - 0.5 * zn / nn
                     - (nn + 1) / 2 * P.log1pmx(un))
        nf, uf = _where(near, 1.0, nu), _where(near, 2.0, u)
        plain = (_log_gamma_ratio_tail(nf / 2) - _LOG_SQRT_2PI - (nf + 1) / 2 * wnp.log1p(uf))
        student = _where(near, corrected, plain)
        return _valid((df > 0) & (scale > 0), _where(finite, student, normal) - log(scale))

    @_method
    def cdf(self, x, df, loc=0, scale=1):
        return _valid((df > 0) & (scale > 0), P.stdtr(df, _standardize(x, loc, scale)))

    @_method
    def sf(self, x, df, loc=0, scale=1):       # (by symmetry: no 1 - cdf cancellation)
        return _valid((df > 0) & (scale > 0), P.stdtr(df, -_standardize(x, loc, scale)))

    @_method
    def logcdf(self, x, df, loc=0, scale=1):
        return _valid((df > 0) & (scale > 0), _log_stdtr(df, _standardize(x, loc, scale)))

    @_method
    def logsf(self, x, df, loc=0, scale=1):
        return _valid((df > 0) & (scale > 0), _log_stdtr(df, -_standardize(x, loc, scale)))


def _log_stdtr(df, t):
    """log of t's distribution function at t: log1p(-sf) where it is above 1/2, as the
    log of a number next to 1 keeps only its rounding (logcdf(20, df=30) was 0 for
    -3.4e-19), each form evaluated at a stand-in where the other is taken."""
    upper = t > 0
    lower_part = log(P.stdtr(df, _where(upper, 0.0, t)))
    upper_part = P.log1p(-P.stdtr(df, -_where(upper, t, 0.0)))
    return _where(upper, upper_part, lower_part)


def _log_gamma_ratio_tail(z):
    """log Γ(z + 1/2) - log Γ(z) - ½ log z, which goes to 0 as z grows.  The difference of
    gammalns cancels for a large z (the t density lost 5 digits at ν = 1e10, and
    betaln(z, 1/2) 10 at ν = 1e6); from z = 30 on, the asymptotic series -1/(8z)
    + 1/(192z³) - 1/(640z⁵) + 17/(14336z⁷) - 31/(18432z⁹), whose next term is below 1e-16
    of the sum there; below it, ½ log π - betaln(z, 1/2).  (½ log z is left out because
    t's density subtracts ½ log ν: its derivative 1/(2ν) would cancel against the same
    from the other term.)"""
    large = z > 30
    zl, zs = _where(large, z, 30.0), _where(large, 1.0, z)   # (each branch in its domain)
    r = 1 / zl
    w = r * r                   # (not 1/zl²: zl² overflows for ν past 1e154, r² underflows)
    series = -(0.125 - w * (1 / 192 - w * (1 / 640 - w * (17 / 14336
                                                         - w * 31 / 18432)))) * r
    # (below, by B(z, 1/2) = Γ(z)Γ(1/2)/Γ(z + 1/2): betaln's partial takes ψ(z + 1/2) - ψ(z)
    # without the cancellation of two digammas, 50 times closer than gammaln's)
    return _where(large, series, _LOG_SQRT_PI - P.betaln(zs, _like(0.5, zs)) - 0.5 * log(zs))


class _Gamma(_Density):
    """The gamma distribution with shape `a`: ``pdf logpdf`` (0 and -inf for x < loc), and
    ``cdf sf`` (differentiable in x, loc and scale, and once in a).

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.stats import gamma
        >>> wg.grad(gamma.logpdf)(2.0, 1.0)     # exponential: -1
        -1.0
    """

    name = "gamma"

    @_method
    def logpdf(self, x, a, loc=0, scale=1):
        y = _standardize(x, loc, scale)
        outside = y < 0
        y = wnp.where(outside, 1.0, y)           # the unused branch stays in the domain
        return _valid((a > 0) & (scale > 0), _density(
            outside, P.xlogy(_like(a - 1, y), y) - y - P.gammaln(a) - log(scale)))

    @_method
    def pdf(self, x, a, loc=0, scale=1):
        # y^(a-1) e^(-y) / Γ(a) at the edge y = 0, exp(logpdf) elsewhere (see _edge)
        y = _standardize(x, loc, scale)
        return _valid((a > 0) & (scale > 0), _edge(
            y == 0, y, 1.0, lambda y: y ** _like(a - 1, y) * wnp.exp(-y) * P.rgamma(a),
            lambda y: self.logpdf(y, a)) / scale)

    @_method
    def cdf(self, x, a, loc=0, scale=1):
        return self._tail(P.gammainc, 0.0, x, a, loc, scale)

    @_method
    def sf(self, x, a, loc=0, scale=1):
        return self._tail(P.gammaincc, 1.0, x, a, loc, scale)

    @staticmethod
    def _tail(fn, below, x, a, loc, scale):
        """P(a, y) or Q(a, y) of the standardized y; `below` for y < 0."""
        y = _standardize(x, loc, scale)
        outside = y < 0
        # (1.0, not 0: at 0 the derivative x^(a-1)... is inf for a < 1, and the unused
        # branch's inf times the zero cotangent would be nan)
        y = wnp.where(outside, 1.0, y)
        inside = fn(_like(a, y), y)
        return _valid((a > 0) & (scale > 0), wnp.where(outside, below, inside))


class _Chi2(_Density):
    """The chi-squared distribution with `df` degrees of freedom: ``pdf logpdf cdf sf``, as
    the gamma distribution of shape df/2 and scale 2 (cdf and sf differentiable once in df).

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.stats import chi2
        >>> wg.grad(chi2.logpdf)(2.0, 4.0)      # d/dx (log x - x/2) = 1/x - 1/2
        0.0
    """

    name = "chi2"

    @_method
    def logpdf(self, x, df, loc=0, scale=1):
        return gamma.logpdf(x, df / 2, loc, 2 * scale)

    @_method
    def pdf(self, x, df, loc=0, scale=1):
        return gamma.pdf(x, df / 2, loc, 2 * scale)

    @_method
    def cdf(self, x, df, loc=0, scale=1):
        return gamma.cdf(x, df / 2, loc, 2 * scale)

    @_method
    def sf(self, x, df, loc=0, scale=1):
        return gamma.sf(x, df / 2, loc, 2 * scale)


class _Beta(_Density):
    """The beta distribution on [loc, loc + scale]: ``pdf logpdf``, and ``cdf sf``
    (differentiable in x, loc and scale, and once in a and b).

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.stats import beta
        >>> round(float(beta.pdf(0.5, 2.0, 2.0)), 6), round(wg.grad(beta.logpdf)(0.25, 2.0, 2.0), 6)
        (1.5, 2.666667)
    """

    name = "beta"

    @_method
    def logpdf(self, x, a, b, loc=0, scale=1):
        y = _standardize(x, loc, scale)
        outside = (y < 0) | (y > 1)
        y = wnp.where(outside, 0.5, y)
        return _valid((a > 0) & (b > 0) & (scale > 0), _density(
            outside, P.xlog1py(_like(b - 1, y), -y) + P.xlogy(_like(a - 1, y), y)
            - P.betaln(a, b) - log(scale)))

    @_method
    def pdf(self, x, a, b, loc=0, scale=1):
        # y^(a-1) (1-y)^(b-1) / B(a, b) at the edges y = 0 and 1, exp(logpdf) between
        y = _standardize(x, loc, scale)
        return _valid((a > 0) & (b > 0) & (scale > 0), _edge(
            (y == 0) | (y == 1), y, 0.5,
            lambda y: y ** _like(a - 1, y) * (1 - y) ** _like(b - 1, y)
            * exp(-P.betaln(a, b)), lambda y: self.logpdf(y, a, b)) / scale)

    @_method
    def cdf(self, x, a, b, loc=0, scale=1):
        return self._tail(x, a, b, loc, scale, upper=False)

    @_method
    def sf(self, x, a, b, loc=0, scale=1):
        return self._tail(x, a, b, loc, scale, upper=True)

    @staticmethod
    def _tail(x, a, b, loc, scale, upper):
        """I_y(a, b), or 1 - I_y(a, b) by betaincc (no cancellation next to y = 1, and
        none of the rounding of 1 - y in I_(1-y)(b, a), which read y = 1e-20 as 0 and gave
        sf = 1 for 0.36), of the standardized y, 0 or 1 outside [0, 1]."""
        y = _standardize(x, loc, scale)
        below, above = y < 0, y > 1
        y = wnp.where(below | above, 0.5, y)      # (where the unused branch is finite)
        inside = P.betaincc(a, b, y) if upper else P.betainc(a, b, y)
        low, high = (1.0, 0.0) if upper else (0.0, 1.0)
        return _valid((a > 0) & (b > 0) & (scale > 0),
                      wnp.where(below, low, wnp.where(above, high, inside)))


class _Poisson(_Distribution):
    """The Poisson distribution with mean `mu`: ``pmf logpmf cdf sf`` (differentiable in
    mu; k is a count).

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.stats import poisson
        >>> wg.grad(poisson.logpmf, argnums=1)(3, 2.0)    # k/μ - 1
        0.5
    """

    name = "poisson"

    @_method
    def logpmf(self, k, mu, loc=0):
        m, outside = _count(k, loc, mu)
        return _valid(mu >= 0, _density(outside, P.xlogy(m, mu) - P.gammaln(m + 1) - mu))

    @_method
    def pmf(self, k, mu, loc=0):
        # μ^m e^(-μ) / m! at μ = 0, where logpmf is -inf for m > 0 (see _edge)
        m, outside = _count(k, loc, mu)
        return _valid(mu >= 0, _where(outside, 0.0, _edge(
            mu == 0, mu, 1.0, lambda mu: mu ** m * wnp.exp(-mu) * P.rgamma(m + 1),
            lambda mu: P.xlogy(m, mu) - P.gammaln(m + 1) - mu)))

    @_method
    def cdf(self, k, mu, loc=0):
        return self._tail(P.gammaincc, 0.0, k, mu, loc)

    @_method
    def sf(self, k, mu, loc=0):
        return self._tail(P.gammainc, 1.0, k, mu, loc)

    @staticmethod
    def _tail(fn, below, k, mu, loc):
        """P(X <= k) = Q(⌊k⌋ + 1, μ), or P(X > k) = P(⌊k⌋ + 1, μ); `below` for k < 0.
        The count ⌊k - loc⌋ is piecewise constant: its derivative is 0 (stop_gradient),
        so the incomplete gamma function is only differentiated in μ: d/dμ of the cdf
        is -pmf(⌊k⌋, μ)."""
        # (a count that is a Python number in μ's dtype, as logpmf's: NumPy's floor would
        # make it a float64 scalar, and the incomplete gamma function's result float64)
        m = stop_gradient(wnp.floor(_like(k - loc, mu)))
        outside = m < 0
        inside = fn(_where(outside, _like(0.0, mu), m) + 1, mu)
        return _valid(mu >= 0, wnp.where(outside, below, inside))


class _Dirichlet(_Density):
    """The Dirichlet distribution: ``pdf logpdf``.  As SciPy: the components of `x` are
    along its first axis (shape (k,) or (k, n)), and with k - 1 of them the last is
    1 minus their sum.  (SciPy's checks that x lies on the simplex are not made on traced
    values.)

    Example:
        >>> import wengert as wg, numpy as np
        >>> from wengert.scipy.stats import dirichlet
        >>> float(dirichlet.pdf(np.array([0.2, 0.8]), np.ones(2)))   # uniform on the simplex
        1.0
        >>> wg.grad(dirichlet.logpdf, argnums=1)(np.array([0.2, 0.8]), np.ones(2)).round(4)
        array([-0.6094,  0.7769])
    """

    name = "dirichlet"

    @_method
    def logpdf(self, x, alpha):
        x, alpha = wnp.asarray(x), wnp.asarray(alpha)
        if alpha.ndim != 1:
            raise ValueError("dirichlet: alpha must be one-dimensional")
        if x.shape[0] == alpha.shape[0] - 1:
            x = wnp.concatenate([x, (1 - wnp.sum(x, axis=0))[None]], axis=0)
        elif x.shape[0] != alpha.shape[0]:
            raise ValueError("dirichlet: x must have len(alpha) or len(alpha) - 1 "
                             f"components along its first axis, got shape {x.shape}")
        lnb = wnp.sum(P.gammaln(alpha)) - P.gammaln(wnp.sum(alpha))
        a = wnp.reshape(alpha - 1, alpha.shape + (1,) * (x.ndim - 1))
        return wnp.sum(P.xlogy(a, x), axis=0) - lnb


class _MultivariateNormal(_Density):
    """The multivariate normal distribution N(mean, cov): ``pdf logpdf entropy``, with
    SciPy's conventions for the arguments (points along the last axis of x; cov a matrix,
    a vector of variances or one variance; mean 0 if None).  On traced values it is
    written with cov's Cholesky factor, so the derivative in cov is the symmetric one;
    cov must be positive definite (a LinAlgError says so; ``allow_singular`` is refused
    there).

    Example:
        >>> import wengert as wg, numpy as np
        >>> from wengert.scipy.stats import multivariate_normal as mvn
        >>> cov = np.array([[2.0, 0.0], [0.0, 4.0]])
        >>> wg.grad(mvn.logpdf)(np.array([1.0, 1.0]), np.zeros(2), cov)   # -cov⁻¹(x - mean)
        array([-0.5 , -0.25])
    """

    name = "multivariate_normal"

    @staticmethod
    def _parameters(mean, cov, allow_singular, x=0.0):
        if allow_singular:
            raise NotImplementedError("multivariate_normal(..., allow_singular=True) on "
                                      "traced values: the derivative needs a positive "
                                      "definite cov")
        if mean is None:
            shape = wnp.asarray(cov).shape
            dim = 1 if len(shape) < 2 else shape[0]
            mean = 0.0                  # (a Python number: float32 points stay float32)
        else:
            mean = wnp.asarray(mean)
            dim = mean.size
            mean = wnp.reshape(mean, (dim,))
        cov = wnp.asarray(_like(cov, x))      # (a Python number: in x's dtype)
        if cov.ndim == 0:
            cov = cov * _np.eye(dim, dtype=_np.result_type(dtype_of(cov), 1.0))
        elif cov.ndim == 1:
            cov = wnp.diag(cov)
        if cov.shape != (dim, dim):
            raise ValueError(f"multivariate_normal: cov of shape {cov.shape} for a mean of "
                             f"{dim} components")
        if cov.ndim == 2 and dim > 1:
            cov = symmetrize(cov, lower=True)   # SciPy reads the lower triangle (its eigh)
        try:
            factor = wnp.linalg.cholesky(cov)
        except _np.linalg.LinAlgError:
            raise _np.linalg.LinAlgError(
                "multivariate_normal: cov must be symmetric positive definite on traced "
                "values (its Cholesky factorization failed; allow_singular is not "
                "supported there)") from None
        return dim, mean, factor

    @staticmethod
    def _log_det(factor):
        """log det cov, from its Cholesky factor L: 2 Σ log L_kk."""
        return 2 * wnp.sum(wnp.log(wnp.diagonal(factor)))

    @_method
    def logpdf(self, x, mean=None, cov=1, allow_singular=False):
        x = wnp.asarray(x)
        dim, mean, factor = self._parameters(mean, cov, allow_singular, x)
        if x.ndim == 0:
            x = wnp.reshape(x, (1,))
        elif x.ndim == 1:
            x = wnp.reshape(x, (x.shape[0], 1) if dim == 1 else (1, x.shape[0]))
        if x.shape[-1] != dim:
            raise ValueError(f"multivariate_normal: points of shape {x.shape} (along the "
                             f"last axis) for a mean of {dim} components")
        batch = x.shape[:-1]
        diff = wnp.reshape(x - mean, (-1, dim)).T                     # (dim, points)
        # (x - μ)ᵀ cov⁻¹ (x - μ) = |L⁻¹(x - μ)|²: one triangular solve, no inverse
        z = solve_triangular(factor, diff, trans=0, lower=True, unit_diagonal=False)
        maha = wnp.sum(z * z, axis=0)
        # an infinite coordinate is infinitely far (the solve would give inf - inf = nan)
        maha = wnp.where(wnp.any(wnp.isinf(diff), axis=0), math.inf, maha)
        out = -0.5 * (dim * _LOG_2PI + self._log_det(factor) + maha)
        return wnp.squeeze(wnp.reshape(out, batch))      # (SciPy squeezes too)

    @_method
    def entropy(self, mean=None, cov=1):
        dim, mean, factor = self._parameters(mean, cov, False)
        return 0.5 * (dim * (1 + _LOG_2PI) + self._log_det(factor))


norm = _Norm()
t = _T()
gamma = _Gamma()
beta = _Beta()
chi2 = _Chi2()
poisson = _Poisson()
dirichlet = _Dirichlet()
multivariate_normal = _MultivariateNormal()


def _as_module(name, distribution):
    """A module standing for a distribution, for autograd's spelling ``import
    autograd.scipy.stats.norm as norm`` and ``from ...stats.norm import logpdf`` (each
    distribution is a module of functions there, an object here).  It lends every name
    to the distribution; `import` finds it in sys.modules, as any imported submodule."""
    module = types.ModuleType(f"{__name__}.{name}", distribution.__doc__)
    module.__getattr__ = lambda attr: getattr(distribution, attr)
    return module


# (the attribute `stats.norm` stays the distribution: `import ...stats.norm as norm` reads it)
sys.modules.update({f"{__name__}.{name}": _as_module(name, globals()[name]) for name in __all__})
