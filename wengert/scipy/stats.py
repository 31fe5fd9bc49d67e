"""SciPy's `scipy.stats` distributions that autograd differentiates: norm, t,
multivariate_normal, gamma, beta, chi2, poisson and dirichlet, and those JAX's
`jax.scipy.stats` adds: bernoulli, binom, betabinom, geom, nbinom, multinomial, cauchy,
expon, gennorm, gumbel_l, gumbel_r, laplace, logistic, pareto, truncnorm, uniform, vonmises
and wrapcauchy, as objects with SciPy's methods (``norm.logpdf(x, loc, scale)``); and the
functions sem (differentiable), rankdata and mode (no derivative: ranks and counts), and
the class gaussian_kde (differentiable in the points, the dataset, the weights and the
bandwidth).

On plain values a method calls SciPy's own (same arguments, same result).  On traced values
it is a composition of `wengert.numpy` and `wengert.scipy.special`, differentiable in every
float argument (the point and the parameters), to any order; it computes in the arguments'
dtype (float32 stays float32, where SciPy's stats give float64).  As SciPy's: outside the
support a log-density is -inf, and for invalid parameters (a scale <= 0, a shape <= 0)
every method gives nan, without a warning (and a nan derivative).  The cdf and sf of t,
gamma, chi2, beta and poisson are differentiable in x (poisson's in mu), loc and scale, and
gamma's, chi2's and beta's once in their shapes too (through the incomplete gamma and beta
functions' partials in their parameters); t's in df raise NotImplementedError.  The
discrete distributions differentiate in their real parameters (p, a and b, nbinom's n);
counts (k, x, binom's n) are constants.  Each of JAX's distributions has at least JAX's
methods (ppf and isf where JAX has them).  Methods SciPy has and wengert does not (ppf of
norm, rvs, ...) are SciPy's on plain values and raise NotImplementedError, naming
themselves, on traced values.

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

_DISTRIBUTIONS = ["norm", "t", "multivariate_normal", "gamma", "beta", "chi2", "poisson",
                  "dirichlet", "bernoulli", "binom", "betabinom", "geom", "nbinom",
                  "multinomial", "cauchy", "expon", "gennorm", "gumbel_l", "gumbel_r",
                  "laplace", "logistic", "pareto", "truncnorm", "uniform", "vonmises",
                  "wrapcauchy"]
__all__ = _DISTRIBUTIONS + ["sem", "rankdata", "mode", "gaussian_kde"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_LOG_SQRT_PI = 0.5 * math.log(math.pi)
_LOG_2PI = math.log(2 * math.pi)
_LOG_PI = math.log(math.pi)
_LOG_2 = math.log(2)


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


def _pmf_with_edge(edge, p, outside, power_form, log_form):
    """A pmf that is exp(log_form(p)) but at `edge` values of p where it is a power of p
    (or 1 - p), power_form(p) there (see _edge), and 0 outside the support."""
    return _where(outside, 0.0, _edge(edge, p, 0.5, power_form, log_form))


def _integral(n):
    """Whether n is a whole number, as SciPy's ``_isintegral`` (inf is one, nan not)."""
    return n == wnp.floor(n)


class _Bernoulli(_Distribution):
    """The Bernoulli distribution, 1 with probability `p`: ``pmf logpmf cdf ppf``
    (differentiable in p; k and q are not).

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.stats import bernoulli
        >>> wg.grad(bernoulli.logpmf, argnums=1)(1, 0.25)     # d/dp log p = 1/p
        4.0
    """

    name = "bernoulli"

    @_method
    def logpmf(self, k, p, loc=0):
        """log p for k = 1, log(1 - p) for k = 0, -inf elsewhere.

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import bernoulli
            >>> wg.grad(bernoulli.logpmf, argnums=1)(0, 0.75)    # -1/(1 - p)
            -4.0
        """
        m, outside = _count(k, loc, p, high=1)
        return _valid((p >= 0) & (p <= 1),
                      _density(outside, P.xlogy(m, p) + P.xlog1py(1 - m, -p)))

    @_method
    def pmf(self, k, p, loc=0):
        """p for k = 1, 1 - p for k = 0: the two linear forms themselves, so the derivative
        is ±1 at p = 0 and 1 too (exp of logpmf's -inf would give nan there).

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import bernoulli
            >>> wg.grad(bernoulli.pmf, argnums=1)(1, 0.0)
            1.0
        """
        m, outside = _count(k, loc, p, high=1)
        value = wnp.where(m == 1, p, wnp.where(m == 0, 1 - p, math.nan))   # (a nan count)
        return _valid((p >= 0) & (p <= 1), _where(outside, 0.0, value))

    @_method
    def cdf(self, k, p, loc=0):
        """P(X <= k): 0 below 0, 1 - p on [0, 1), 1 from 1 on.

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import bernoulli
            >>> wg.grad(bernoulli.cdf, argnums=1)(0.5, 0.3)       # d/dp (1 - p)
            -1.0
        """
        m = stop_gradient(wnp.floor(_like(k - loc, p)))
        value = wnp.where(m < 0, 0.0, wnp.where(m >= 1, 1.0, 1 - p))
        return _valid((p >= 0) & (p <= 1), wnp.where(wnp.isnan(m), math.nan, value))

    @_method
    def ppf(self, q, p, loc=0):
        """The least k with cdf(k) >= q: 0 for q <= 1 - p, else 1 (and SciPy's -1 at q = 0,
        nan outside [0, 1]); piecewise constant, so its derivative is 0.

        Example:
            >>> from wengert.scipy.stats import bernoulli
            >>> bernoulli.ppf([0.2, 0.9], 0.3).tolist()
            [0.0, 1.0]
        """
        q = stop_gradient(q)
        value = wnp.where(q <= 1 - stop_gradient(p), 0.0, 1.0)
        value = wnp.where(q == 0, -1.0, wnp.where(q == 1, 1.0, value))
        value = wnp.where((q >= 0) & (q <= 1), value, math.nan)
        return _valid((p >= 0) & (p <= 1), value + loc)


class _Binom(_Distribution):
    """The binomial distribution: k successes in `n` trials of probability `p`: ``pmf
    logpmf`` (differentiable in p; n and k are whole numbers, not differentiated).

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.stats import binom
        >>> wg.grad(binom.logpmf, argnums=2)(3, 10, 0.5)    # k/p - (n - k)/(1 - p)
        -8.0
    """

    name = "binom"

    @staticmethod
    def _parts(k, n, p, loc):
        n = stop_gradient(_like(n, p))
        m, outside = _count(k, loc, p, high=n)
        ok = (n >= 0) & _integral(n) & (p >= 0) & (p <= 1)
        # log C(n, m); (n - m + 1, not n - m: gammaln's own argument)
        choose = P.gammaln(n + 1) - P.gammaln(m + 1) - P.gammaln(n - m + 1)
        return n, m, outside, ok, choose

    @_method
    def logpmf(self, k, n, p, loc=0):
        """log C(n, k) + k log p + (n - k) log(1 - p).

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import binom
            >>> wg.grad(binom.logpmf, argnums=2)(0, 4, 0.0)      # -(n - k)/(1 - p)
            -4.0
        """
        n, m, outside, ok, choose = self._parts(k, n, p, loc)
        return _valid(ok, _density(outside, choose + P.xlogy(m, p) + P.xlog1py(n - m, -p)))

    @_method
    def pmf(self, k, n, p, loc=0):
        """C(n, k) p^k (1 - p)^(n - k); at p = 0 and 1 the power itself (see _edge), so
        the derivative there is its limit (n at p = 0 for k = 1), not nan.

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import binom
            >>> round(wg.grad(binom.pmf, argnums=2)(1, 4, 0.0), 12)    # n (1 - p)^(n - 1)
            4.0
        """
        n, m, outside, ok, choose = self._parts(k, n, p, loc)
        return _valid(ok, _pmf_with_edge(
            (p == 0) | (p == 1), p, outside,
            lambda p: wnp.exp(choose) * p ** m * (1 - p) ** (n - m),
            lambda p: choose + P.xlogy(m, p) + P.xlog1py(n - m, -p)))


class _Betabinom(_Distribution):
    """The beta-binomial distribution: k successes in `n` trials whose probability is
    Beta(a, b): ``pmf logpmf`` (differentiable in a and b; n and k are whole numbers).

    Example:
        >>> from wengert.scipy.stats import betabinom
        >>> float(betabinom.pmf(2, 4, 1.0, 1.0))        # a = b = 1: uniform on 0..n
        0.2
    """

    name = "betabinom"

    @_method
    def logpmf(self, k, n, a, b, loc=0):
        """-log(n + 1) - betaln(n - k + 1, k + 1) + betaln(k + a, n - k + b) - betaln(a, b).

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import betabinom
            >>> round(wg.grad(betabinom.logpmf, argnums=2)(1, 1, 1.0, 1.0), 12)   # log(a/(a+b))'
            0.5
        """
        n = stop_gradient(_like(n, a))
        m, outside = _count(k, loc, a, high=n)
        ok = (n >= 0) & _integral(n) & (a > 0) & (b > 0)
        value = (P.betaln(m + a, n - m + b) - P.betaln(a, b) - log(n + 1)
                 - P.betaln(n - m + 1, m + 1))
        return _valid(ok, _density(outside, value))

    @_method
    def pmf(self, k, n, a, b, loc=0):
        """exp(logpmf): every count in 0..n has a positive probability, so no edge.

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import betabinom
            >>> round(wg.grad(betabinom.pmf, argnums=2)(1, 1, 1.0, 1.0), 12)    # b/(a+b)²
            0.25
        """
        return wnp.exp(self.logpmf(k, n, a, b, loc))


class _Geom(_Distribution):
    """The geometric distribution: the trial of the first success, each of probability
    `p`, k = 1, 2, ...: ``pmf logpmf`` (differentiable in p).

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.stats import geom
        >>> wg.grad(geom.logpmf, argnums=1)(3, 0.5)    # 1/p - (k - 1)/(1 - p)
        -2.0
    """

    name = "geom"

    @_method
    def logpmf(self, k, p, loc=0):
        """(k - 1) log(1 - p) + log p.

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import geom
            >>> wg.grad(geom.logpmf, argnums=1)(1, 0.25)    # 1/p
            4.0
        """
        m, outside = _count(k, loc, p, low=1)
        return _valid((p > 0) & (p <= 1), _density(outside, P.xlog1py(m - 1, -p) + log(p)))

    @_method
    def pmf(self, k, p, loc=0):
        """(1 - p)^(k - 1) p; at p = 1 the power itself (see _edge): slope -1 for k = 2.

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import geom
            >>> wg.grad(geom.pmf, argnums=1)(2, 1.0)         # 1 - 2p
            -1.0
        """
        m, outside = _count(k, loc, p, low=1)
        return _valid((p > 0) & (p <= 1), _pmf_with_edge(
            p == 1, p, outside, lambda p: (1 - p) ** (m - 1) * p,
            lambda p: P.xlog1py(m - 1, -p) + log(p)))


class _Nbinom(_Distribution):
    """The negative binomial distribution: k failures before the n-th success, each of
    probability `p`: ``pmf logpmf``, differentiable in n (a positive real, as SciPy's)
    and p.

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.stats import nbinom
        >>> wg.grad(nbinom.logpmf, argnums=2)(2, 3, 0.5)    # n/p - k/(1 - p)
        2.0
    """

    name = "nbinom"

    @staticmethod
    def _parts(k, n, p, loc):
        m, outside = _count(k, loc, p)
        # log of the coefficient Γ(n + k)/(k! Γ(n))
        return m, outside, P.gammaln(n + m) - P.gammaln(m + 1) - P.gammaln(n)

    @_method
    def logpmf(self, k, n, p, loc=0):
        """log Γ(n + k) - log k! - log Γ(n) + n log p + k log(1 - p).

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import nbinom
            >>> import math
            >>> wg.grad(nbinom.logpmf, argnums=1)(0, 2.0, 0.5) == math.log(0.5)    # in n
            True
        """
        m, outside, coefficient = self._parts(k, n, p, loc)
        return _valid((n > 0) & (p > 0) & (p <= 1),
                      _density(outside, coefficient + n * log(p) + P.xlog1py(m, -p)))

    @_method
    def pmf(self, k, n, p, loc=0):
        """Γ(n + k)/(k! Γ(n)) p^n (1 - p)^k; at p = 1 the power itself (see _edge).

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import nbinom
            >>> wg.grad(nbinom.pmf, argnums=2)(1, 2.0, 1.0)     # d/dp 2p²(1 - p) at 1
            -2.0
        """
        m, outside, coefficient = self._parts(k, n, p, loc)
        return _valid((n > 0) & (p > 0) & (p <= 1), _pmf_with_edge(
            p == 1, p, outside, lambda p: wnp.exp(coefficient) * p ** n * (1 - p) ** m,
            lambda p: coefficient + n * log(p) + P.xlog1py(m, -p)))


class _Multinomial(_Distribution):
    """The multinomial distribution: counts `x` (along the last axis) of `n` draws of
    categories with probabilities `p`: ``pmf logpmf``, differentiable in p (x and n are
    whole numbers).  As SciPy's: a row of p whose sum is off 1 by more than 10 machine
    epsilons has its last entry replaced by 1 minus the others' sum (SciPy warns that
    from 1.18 on it gives nan there; not warned of on traced values), p outside [0, 1]
    or n < 0 gives nan, and counts that are negative, not whole or do not sum to n give
    -inf; n is truncated to an integer, as SciPy's.  A nan count gives nan (SciPy's
    raises).

    Example:
        >>> import wengert as wg, numpy as np
        >>> from wengert.scipy.stats import multinomial
        >>> wg.grad(multinomial.logpmf, argnums=2)(np.array([1, 3]), 4, np.array([0.5, 0.5]))
        array([2., 6.])
    """

    name = "multinomial"

    @staticmethod
    def _parts(x, n, p):
        x, p = stop_gradient(wnp.asarray(x)), wnp.asarray(p)
        if x.ndim == 0:
            raise ValueError("multinomial: x must be an array of counts, one per category "
                             "along its last axis")
        if p.ndim == 0:
            raise ValueError("multinomial: p must be an array of probabilities, one per "
                             "category along its last axis")
        if x.shape[-1] != p.shape[-1]:
            raise ValueError(f"multinomial: x has {x.shape[-1]} categories along its last "
                             f"axis and p {p.shape[-1]}")
        eps = 10 * _np.finfo(_np.result_type(dtype_of(p), _np.float32)).eps
        rest = wnp.sum(p[..., :-1], axis=-1)
        off = wnp.abs(1 - wnp.sum(p, axis=-1)) > eps
        p = wnp.concatenate([p[..., :-1], wnp.where(off, 1 - rest, p[..., -1])[..., None]],
                            axis=-1)
        n = wnp.trunc(stop_gradient(_like(n, p)))
        bad = wnp.any(p < 0, axis=-1) | wnp.any(p > 1, axis=-1) | (n < 0)
        whole = wnp.trunc(x)
        total = wnp.sum(whole, axis=-1)
        # (comparisons that a nan count fails: it stays nan, not -inf)
        outside = (wnp.any((whole < x) | (whole > x) | (whole < 0), axis=-1)
                   | (total < n) | (total > n))
        x = _where(outside[..., None], _like(0.0, p), x)    # (in the support: finite)
        choose = P.gammaln(n + 1) - wnp.sum(P.gammaln(x + 1), axis=-1)
        return x, p, bad, outside, choose

    @_method
    def logpmf(self, x, n, p):
        """log n! - Σ log xᵢ! + Σ xᵢ log pᵢ.

        Example:
            >>> import wengert as wg, numpy as np
            >>> from wengert.scipy.stats import multinomial
            >>> float(multinomial.logpmf(np.array([2, 0]), 2, np.array([1.0, 0.0])))
            0.0
        """
        x, p, bad, outside, choose = self._parts(x, n, p)
        return _valid(~bad, _density(outside, choose + wnp.sum(P.xlogy(x, p), axis=-1)))

    @_method
    def pmf(self, x, n, p):
        """n!/(Π xᵢ!) Π pᵢ^xᵢ: exp(logpmf), but in rows where a pᵢ = 0 has a count the
        product of powers itself (its derivative is the limit there, not nan).

        Example:
            >>> import wengert as wg, numpy as np
            >>> from wengert.scipy.stats import multinomial
            >>> wg.grad(multinomial.pmf, argnums=2)(np.array([1, 1]), 2, np.array([0.0, 1.0]))
            array([2., 0.])
        """
        x, p, bad, outside, choose = self._parts(x, n, p)
        edge = wnp.any((p == 0) & (x > 0), axis=-1)
        inner = _where(edge[..., None], _like(0.5, p), p)
        at_edge = _where(edge[..., None], p, _like(0.5, p))
        value = _where(edge, wnp.exp(choose) * wnp.prod(at_edge ** x, axis=-1),
                       wnp.exp(choose + wnp.sum(P.xlogy(x, inner), axis=-1)))
        return _valid(~bad, _where(outside, 0.0, value))


def _quantile(q, loc, ok, lower, upper, inner):
    """A ppf by SciPy's conventions: `lower` and `upper` (the ends of the support) at q = 0
    and 1, nan outside [0, 1] and for invalid parameters (`ok` false, or a nan loc), and
    inner(q) between, given q in (0, 1) only (1/2 elsewhere, where it might be infinite:
    its inf times the zero cotangent would be nan)."""
    ok = ok & (loc == loc)
    interior = (q > 0) & (q < 1)
    value = wnp.where(q == 0, lower, wnp.where(q == 1, upper, inner(_where(interior, q, 0.5))))
    return _valid(ok, wnp.where(interior | (q == 0) | (q == 1), value, math.nan))


def _log1mexp(d):
    """log(1 - e^d) for d <= 0: log(-expm1(d)) near 0, where 1 - e^d cancels, and
    log1p(-e^d) below -log 2, where expm1's result would lose e^d's digits."""
    near = d > -_LOG_2
    return _where(near, wnp.log(-wnp.expm1(_where(near, d, -1.0))),
                  wnp.log1p(-wnp.exp(_where(near, -1.0, d))))


def _halves(z, lower, upper):
    """lower(z) for z <= 0 and upper(z) for z > 0, each given its own half only (0
    elsewhere), so neither overflows or is nan where it is not taken."""
    above = z > 0
    return _where(above, upper(_where(above, z, 0.0)), lower(_where(above, 0.0, z)))


def _cauchy_cdf(z):
    """The standard Cauchy cdf, atan2(1, -z)/π: 1/2 + atan(z)/π, without that sum's
    cancellation in the lower tail (cdf(-1e10) kept 7 digits)."""
    return wnp.arctan2(1.0, -z) / math.pi


def _cauchy_ppf(q):
    """tan(π(q - 1/2)), which loses q's digits next to 0 (q - 1/2 rounds them away) and
    near 1 takes tan next to its pole at a rounded π/2: -cot(πq) below 1/4 and cot(π(1 - q))
    above 3/4 (1 - q is exact there)."""
    low, high = q < 0.25, q > 0.75
    middle = ~(low | high)
    return _where(low, -1 / wnp.tan(math.pi * _where(low, q, 0.25)),
                  _where(high, 1 / wnp.tan(math.pi * (1 - _where(high, q, 0.75))),
                         wnp.tan(math.pi * (_where(middle, q, 0.5) - 0.5))))


class _Cauchy(_Density):
    """The Cauchy distribution: ``pdf logpdf cdf logcdf sf logsf ppf isf``, differentiable
    in x (or q), loc and scale.

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.stats import cauchy
        >>> wg.grad(cauchy.logpdf)(1.0)         # -2x/(1 + x²)
        -1.0
    """

    name = "cauchy"

    @_method
    def logpdf(self, x, loc=0, scale=1):
        """-log π - log(1 + z²) - log scale, z = (x - loc)/scale.

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import cauchy
            >>> wg.grad(cauchy.logpdf, argnums=2)(2.0, 0.0, 2.0)    # (z² - 1)/(s(1 + z²))
            0.0
        """
        z = _standardize(x, loc, scale)
        return _valid(scale > 0, -_LOG_PI - wnp.log1p(z * z) - log(scale))

    @_method
    def cdf(self, x, loc=0, scale=1):
        """1/2 + atan(z)/π (as atan2(1, -z)/π: no cancellation in the lower tail).

        Example:
            >>> import wengert as wg, math
            >>> from wengert.scipy.stats import cauchy
            >>> wg.grad(cauchy.cdf)(0.0) == 1 / math.pi
            True
        """
        return _valid(scale > 0, _cauchy_cdf(_standardize(x, loc, scale)))

    @_method
    def sf(self, x, loc=0, scale=1):
        """The cdf of -z.

        Example:
            >>> import wengert as wg, math
            >>> from wengert.scipy.stats import cauchy
            >>> wg.grad(cauchy.sf)(1.0) == -1 / (2 * math.pi)
            True
        """
        return _valid(scale > 0, _cauchy_cdf(-_standardize(x, loc, scale)))

    @_method
    def logcdf(self, x, loc=0, scale=1):
        """log cdf, as log1p(-sf) above the median, where the cdf is next to 1.

        Example:
            >>> import wengert as wg, math
            >>> from wengert.scipy.stats import cauchy
            >>> wg.grad(cauchy.logcdf)(0.0) == 2 / math.pi       # pdf/cdf
            True
        """
        return _valid(scale > 0, _halves(_standardize(x, loc, scale),
                                         lambda z: wnp.log(_cauchy_cdf(z)),
                                         lambda z: wnp.log1p(-_cauchy_cdf(-z))))

    @_method
    def logsf(self, x, loc=0, scale=1):
        """log sf: logcdf of -z.

        Example:
            >>> import wengert as wg, math
            >>> from wengert.scipy.stats import cauchy
            >>> wg.grad(cauchy.logsf)(0.0) == -2 / math.pi
            True
        """
        return _valid(scale > 0, _halves(_standardize(x, loc, scale),
                                         lambda z: wnp.log1p(-_cauchy_cdf(z)),
                                         lambda z: wnp.log(_cauchy_cdf(-z))))

    @_method
    def ppf(self, q, loc=0, scale=1):
        """loc + scale tan(π(q - 1/2)), -inf and inf at q = 0 and 1.

        Example:
            >>> import wengert as wg, math
            >>> from wengert.scipy.stats import cauchy
            >>> wg.grad(cauchy.ppf)(0.5) == math.pi             # 1/pdf(0)
            True
        """
        return _quantile(q, loc, scale > 0, -math.inf, math.inf,
                         lambda q: loc + scale * _cauchy_ppf(q))

    @_method
    def isf(self, q, loc=0, scale=1):
        """The ppf of 1 - q: loc - scale tan(π(q - 1/2)) (by symmetry: no 1 - q rounding).

        Example:
            >>> from wengert.scipy.stats import cauchy
            >>> round(float(cauchy.isf(0.25)), 15)
            1.0
        """
        return _quantile(q, loc, scale > 0, math.inf, -math.inf,
                         lambda q: loc - scale * _cauchy_ppf(q))


class _Expon(_Density):
    """The exponential distribution on [loc, inf): ``pdf logpdf cdf logcdf sf logsf ppf``,
    differentiable in x (or q), loc and scale.

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.stats import expon
        >>> wg.grad(expon.logpdf, argnums=2)(3.0, 0.0, 2.0)    # (z - 1)/scale
        0.25
    """

    name = "expon"

    @staticmethod
    def _z(x, loc, scale):
        """z, where it is outside (below 0), and z with 1 there (a stand-in in the
        support, whose logs and exps are finite)."""
        z = _standardize(x, loc, scale)
        outside = z < 0
        return outside, wnp.where(outside, 1.0, z)

    @_method
    def logpdf(self, x, loc=0, scale=1):
        """-z - log scale for z >= 0, -inf below.

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import expon
            >>> wg.grad(expon.logpdf)(1.0), wg.grad(expon.logpdf)(-1.0)
            (-1.0, 0.0)
        """
        outside, z = self._z(x, loc, scale)
        return _valid(scale > 0, _density(outside, -z - log(scale)))

    @_method
    def cdf(self, x, loc=0, scale=1):
        """1 - e^-z (as -expm1(-z)), 0 below 0.

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import expon
            >>> wg.grad(expon.cdf)(0.0)                      # the density at 0
            1.0
        """
        outside, z = self._z(x, loc, scale)
        return _valid(scale > 0, wnp.where(outside, 0.0, -wnp.expm1(-z)))

    @_method
    def logcdf(self, x, loc=0, scale=1):
        """log(1 - e^-z), -inf below 0.

        Example:
            >>> import wengert as wg, math
            >>> from wengert.scipy.stats import expon
            >>> wg.grad(expon.logcdf)(math.log(2.0))         # e^-z/(1 - e^-z)
            1.0
        """
        outside, z = self._z(x, loc, scale)
        return _valid(scale > 0, _density(outside, _log1mexp(-z)))

    @_method
    def sf(self, x, loc=0, scale=1):
        """e^-z, 1 below 0.

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import expon
            >>> wg.grad(expon.sf)(0.0)
            -1.0
        """
        outside, z = self._z(x, loc, scale)
        return _valid(scale > 0, wnp.where(outside, 1.0, wnp.exp(-z)))

    @_method
    def logsf(self, x, loc=0, scale=1):
        """-z, 0 below 0.

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import expon
            >>> wg.grad(expon.logsf, argnums=2)(4.0, 0.0, 2.0)     # z/scale
            1.0
        """
        outside, z = self._z(x, loc, scale)
        return _valid(scale > 0, wnp.where(outside, 0.0, -z))

    @_method
    def ppf(self, q, loc=0, scale=1):
        """loc - scale log(1 - q).

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import expon
            >>> wg.grad(expon.ppf)(0.5)                      # scale/(1 - q)
            2.0
        """
        return _quantile(q, loc, scale > 0, loc, math.inf,
                         lambda q: loc - scale * wnp.log1p(-q))


def _reciprocal(b):
    try:
        return 1 / b
    except ZeroDivisionError:       # (a Python 0: invalid, so nan from every method, as
        return math.inf             # SciPy's; not an exception)


class _Gennorm(_Density):
    """The generalized normal distribution, density β/(2Γ(1/β)) e^-|z|^β: ``pdf logpdf
    cdf``, differentiable in x, loc and scale, and in beta (the cdf once, through the
    incomplete gamma function's partial in its shape).

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.stats import gennorm, norm
        >>> bool(abs(gennorm.logpdf(0.3, 2.0, 0.0, 2 ** 0.5) - norm.logpdf(0.3)) < 1e-15)
        True
    """

    name = "gennorm"

    @staticmethod
    def _power(z, beta):
        """|z|^β, and its derivative 0 at z = 0: there β|z|^(β-1) is inf for β < 1 and
        |z|^β log|z| is 0·(-inf), where the power is constant 0 in β and at worst a cusp
        in z (given a stand-in of 1 there)."""
        u = wnp.abs(z)
        zero = u == 0
        return _where(zero, 0.0, _where(zero, 1.0, u) ** beta)

    @_method
    def logpdf(self, x, beta, loc=0, scale=1):
        """log β - log 2 - log Γ(1/β) - |z|^β - log scale.

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import gennorm
            >>> wg.grad(gennorm.logpdf)(2.0, 1.0)            # Laplace: -sign(x)
            -1.0
        """
        z = _standardize(x, loc, scale)
        return _valid((beta > 0) & (scale > 0),
                      log(beta) - _LOG_2 - P.gammaln(_reciprocal(beta)) - self._power(z, beta)
                      - log(scale))

    @_method
    def cdf(self, x, beta, loc=0, scale=1):
        """1/2 ± Q(1/β, |z|^β)/2, Q the upper incomplete gamma function.  At z = 0 it is
        1/2 + pdf(0) z, whose derivative is the density (the composition's would be
        inf·0 there for β > 1).

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import gennorm
            >>> wg.grad(gennorm.cdf)(0.0, 1.0)               # the density at 0
            0.5
        """
        z = _standardize(x, loc, scale)
        zero = z == 0
        zs = _where(zero, 1.0, z)
        half = 0.5 * P.gammaincc(_like(_reciprocal(beta), zs), self._power(zs, beta))
        tails = _where(zs > 0, 1 - half, half)
        density = beta / (2 * P.gamma(_reciprocal(beta)))
        return _valid((beta > 0) & (scale > 0),
                      _where(zero, 0.5 + density * _where(zero, z, 0.0), tails))


class _Gumbel(_Density):
    """The right- (gumbel_r) or left-skewed (gumbel_l) Gumbel distribution; `sign` turns
    one into the other: gumbel_l's z is gumbel_r's -z."""

    sign = 1

    def _z(self, x, loc, scale):
        return self.sign * _standardize(x, loc, scale)

    def _logpdf(self, x, loc, scale):
        z = self._z(x, loc, scale)
        return _valid(scale > 0, -z - wnp.exp(-z) - log(scale))

    def _lower(self, x, loc, scale, log_form):
        """exp(-e^-z) (the cdf of gumbel_r, the sf of gumbel_l), or its log."""
        e = wnp.exp(-self._z(x, loc, scale))
        return _valid(scale > 0, -e if log_form else wnp.exp(-e))

    def _upper(self, x, loc, scale, log_form):
        """1 - exp(-e^-z), as -expm1(-e^-z), or its log."""
        e = wnp.exp(-self._z(x, loc, scale))
        return _valid(scale > 0, _log1mexp(-e) if log_form else -wnp.expm1(-e))


class _GumbelR(_Gumbel):
    """The (right-skewed) Gumbel distribution: ``pdf logpdf cdf logcdf sf logsf ppf``,
    differentiable in x (or q), loc and scale.  As SciPy's: the log-density at x = -inf
    is nan (inf - inf).

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.stats import gumbel_r
        >>> wg.grad(gumbel_r.logpdf)(0.0)                # -1 + e^-x
        0.0
    """

    name = "gumbel_r"

    @_method
    def logpdf(self, x, loc=0, scale=1):
        """-z - e^-z - log scale.

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import gumbel_r
            >>> wg.grad(gumbel_r.logpdf, argnums=2)(0.0, 0.0, 2.0)   # (z - z e^-z - 1)/scale
            -0.5
        """
        return self._logpdf(x, loc, scale)

    @_method
    def cdf(self, x, loc=0, scale=1):
        """exp(-e^-z).

        Example:
            >>> import wengert as wg, math
            >>> from wengert.scipy.stats import gumbel_r
            >>> wg.grad(gumbel_r.cdf)(0.0) == math.exp(-1)
            True
        """
        return self._lower(x, loc, scale, False)

    @_method
    def logcdf(self, x, loc=0, scale=1):
        """-e^-z.

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import gumbel_r
            >>> wg.grad(gumbel_r.logcdf)(0.0)
            1.0
        """
        return self._lower(x, loc, scale, True)

    @_method
    def sf(self, x, loc=0, scale=1):
        """1 - exp(-e^-z), as -expm1(-e^-z): no cancellation in the upper tail.

        Example:
            >>> import wengert as wg, math
            >>> from wengert.scipy.stats import gumbel_r
            >>> wg.grad(gumbel_r.sf)(0.0) == -math.exp(-1)
            True
        """
        return self._upper(x, loc, scale, False)

    @_method
    def logsf(self, x, loc=0, scale=1):
        """log(1 - exp(-e^-z)).

        Example:
            >>> import math
            >>> from wengert.scipy.stats import gumbel_r
            >>> float(gumbel_r.logsf(-4.0)) == -math.exp(-math.exp(4.0))   # the sf near 1
            True
        """
        return self._upper(x, loc, scale, True)

    @_method
    def ppf(self, q, loc=0, scale=1):
        """loc - scale log(-log q).

        Example:
            >>> import wengert as wg, math
            >>> from wengert.scipy.stats import gumbel_r
            >>> wg.grad(gumbel_r.ppf)(math.exp(-1)) == math.e   # -1/(q log q)
            True
        """
        return _quantile(q, loc, scale > 0, -math.inf, math.inf,
                         lambda q: loc - scale * wnp.log(-wnp.log(q)))


class _GumbelL(_Gumbel):
    """The left-skewed Gumbel distribution, gumbel_r's mirror image: ``pdf logpdf cdf
    logcdf sf logsf ppf``, differentiable in x (or q), loc and scale.  As SciPy's: the
    log-density at x = inf is nan.

    Example:
        >>> import wengert as wg, math
        >>> from wengert.scipy.stats import gumbel_l
        >>> wg.grad(gumbel_l.logpdf)(math.log(2.0))      # 1 - e^x
        -1.0
    """

    name = "gumbel_l"
    sign = -1

    @_method
    def logpdf(self, x, loc=0, scale=1):
        """z - e^z - log scale.

        Example:
            >>> import wengert as wg, math
            >>> from wengert.scipy.stats import gumbel_l
            >>> wg.grad(gumbel_l.logpdf, argnums=1)(math.log(2.0), 0.0)     # -(1 - e^z)
            1.0
        """
        return self._logpdf(x, loc, scale)

    @_method
    def cdf(self, x, loc=0, scale=1):
        """1 - exp(-e^z), as -expm1(-e^z).

        Example:
            >>> import wengert as wg, math
            >>> from wengert.scipy.stats import gumbel_l
            >>> wg.grad(gumbel_l.cdf)(0.0) == math.exp(-1)
            True
        """
        return self._upper(x, loc, scale, False)

    @_method
    def logcdf(self, x, loc=0, scale=1):
        """log(1 - exp(-e^z)).

        Example:
            >>> import math
            >>> from wengert.scipy.stats import gumbel_l
            >>> float(gumbel_l.logcdf(4.0)) == -math.exp(-math.exp(4.0))   # the cdf near 1
            True
        """
        return self._upper(x, loc, scale, True)

    @_method
    def sf(self, x, loc=0, scale=1):
        """exp(-e^z).

        Example:
            >>> import wengert as wg, math
            >>> from wengert.scipy.stats import gumbel_l
            >>> wg.grad(gumbel_l.sf)(0.0) == -math.exp(-1)
            True
        """
        return self._lower(x, loc, scale, False)

    @_method
    def logsf(self, x, loc=0, scale=1):
        """-e^z.

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import gumbel_l
            >>> wg.grad(gumbel_l.logsf)(0.0)
            -1.0
        """
        return self._lower(x, loc, scale, True)

    @_method
    def ppf(self, q, loc=0, scale=1):
        """loc + scale log(-log(1 - q)).

        Example:
            >>> import wengert as wg, math
            >>> from wengert.scipy.stats import gumbel_l
            >>> round(wg.grad(gumbel_l.ppf)(1 - math.exp(-1)), 12) == round(math.e, 12)
            True
        """
        return _quantile(q, loc, scale > 0, -math.inf, math.inf,
                         lambda q: loc + scale * wnp.log(-wnp.log1p(-q)))


class _Laplace(_Density):
    """The Laplace distribution, density e^-|z|/2: ``pdf logpdf cdf``, differentiable in
    x, loc and scale (at z = 0 the log-density's derivative in x is 0, as abs's).

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.stats import laplace
        >>> wg.grad(laplace.logpdf)(2.0)                 # -sign(x)
        -1.0
    """

    name = "laplace"

    @_method
    def logpdf(self, x, loc=0, scale=1):
        """-|z| - log 2 - log scale.

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import laplace
            >>> wg.grad(laplace.logpdf, argnums=2)(4.0, 0.0, 2.0)    # (|z| - 1)/scale
            0.5
        """
        z = _standardize(x, loc, scale)
        return _valid(scale > 0, -wnp.abs(z) - _LOG_2 - log(scale))

    @_method
    def cdf(self, x, loc=0, scale=1):
        """e^z/2 for z <= 0, 1 - e^-z/2 above; each exp of its own half (no overflow in
        the other), and at z = 0 the derivative the density's 1/2.

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import laplace
            >>> wg.grad(laplace.cdf)(0.0)
            0.5
        """
        z = _standardize(x, loc, scale)
        return _valid(scale > 0, _halves(z, lambda z: 0.5 * wnp.exp(z),
                                         lambda z: 1 - 0.5 * wnp.exp(-z)))


class _Logistic(_Density):
    """The logistic distribution: ``pdf logpdf cdf sf ppf isf``, differentiable in x (or
    q), loc and scale.

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.stats import logistic
        >>> wg.grad(logistic.cdf)(0.0)                   # the density at 0
        0.25
    """

    name = "logistic"

    @_method
    def logpdf(self, x, loc=0, scale=1):
        """-z - 2 log(1 + e^-z) - log scale, as z - 2 log1p(e^z) for z <= 0 (no overflow,
        and each half analytic: -|z| - 2 log1p(e^-|z|) has abs's kink in its parts, so a
        second derivative of 0 at z = 0).

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import logistic
            >>> wg.grad(wg.grad(logistic.logpdf))(0.0)       # -2 σ(x)(1 - σ(x))
            -0.5
        """
        z = _standardize(x, loc, scale)
        return _valid(scale > 0, _halves(z, lambda z: z - 2 * wnp.log1p(wnp.exp(z)),
                                         lambda z: -z - 2 * wnp.log1p(wnp.exp(-z)))
                      - log(scale))

    @_method
    def cdf(self, x, loc=0, scale=1):
        """expit(z).

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import logistic
            >>> wg.grad(logistic.cdf, argnums=1)(0.0, 0.0)
            -0.25
        """
        return _valid(scale > 0, P.expit(_standardize(x, loc, scale)))

    @_method
    def sf(self, x, loc=0, scale=1):
        """expit(-z).

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import logistic
            >>> wg.grad(logistic.sf)(0.0)
            -0.25
        """
        return _valid(scale > 0, P.expit(-_standardize(x, loc, scale)))

    @_method
    def ppf(self, q, loc=0, scale=1):
        """loc + scale logit(q).

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import logistic
            >>> wg.grad(logistic.ppf)(0.5)                   # 1/(q(1 - q))
            4.0
        """
        return _quantile(q, loc, scale > 0, -math.inf, math.inf,
                         lambda q: loc + scale * P.logit(q))

    @_method
    def isf(self, q, loc=0, scale=1):
        """loc - scale logit(q).

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import logistic
            >>> wg.grad(logistic.isf)(0.5)
            -4.0
        """
        return _quantile(q, loc, scale > 0, math.inf, -math.inf,
                         lambda q: loc - scale * P.logit(q))


class _Pareto(_Density):
    """The Pareto distribution with shape `b`, density b/z^(b+1) for z >= 1: ``pdf logpdf
    cdf logcdf sf logsf ppf``, differentiable in x (or q), b, loc and scale.

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.stats import pareto
        >>> wg.grad(pareto.logpdf)(2.0, 3.0)             # -(b + 1)/x
        -2.0
    """

    name = "pareto"

    @staticmethod
    def _log_z(x, loc, scale):
        """log z, where z is outside (below 1), and log z with 1 (z = e) there: a stand-in
        in the support."""
        z = _standardize(x, loc, scale)
        outside = z < 1
        return outside, wnp.log(wnp.where(outside, math.e, z))

    @_method
    def logpdf(self, x, b, loc=0, scale=1):
        """log b - (b + 1) log z - log scale, -inf below z = 1.

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import pareto
            >>> wg.grad(pareto.logpdf, argnums=1)(1.0, 0.5)    # 1/b - log z
            2.0
        """
        outside, lz = self._log_z(x, loc, scale)
        return _valid((b > 0) & (scale > 0),
                      _density(outside, log(b) - (b + 1) * lz - log(scale)))

    @_method
    def cdf(self, x, b, loc=0, scale=1):
        """1 - z^-b, as -expm1(-b log z).

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import pareto
            >>> wg.grad(pareto.cdf)(1.0, 2.0)                # the density at 1: b
            2.0
        """
        outside, lz = self._log_z(x, loc, scale)
        return _valid((b > 0) & (scale > 0), wnp.where(outside, 0.0, -wnp.expm1(-b * lz)))

    @_method
    def logcdf(self, x, b, loc=0, scale=1):
        """log(1 - z^-b).

        Example:
            >>> import wengert as wg, math
            >>> from wengert.scipy.stats import pareto
            >>> round(wg.grad(pareto.logcdf)(2.0, 1.0), 12)      # b z^(-b-1)/(1 - z^-b)
            0.5
        """
        outside, lz = self._log_z(x, loc, scale)
        return _valid((b > 0) & (scale > 0), _density(outside, _log1mexp(-b * lz)))

    @_method
    def sf(self, x, b, loc=0, scale=1):
        """z^-b.

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import pareto
            >>> wg.grad(pareto.sf)(1.0, 2.0)
            -2.0
        """
        outside, lz = self._log_z(x, loc, scale)
        return _valid((b > 0) & (scale > 0), wnp.where(outside, 1.0, wnp.exp(-b * lz)))

    @_method
    def logsf(self, x, b, loc=0, scale=1):
        """-b log z.

        Example:
            >>> import wengert as wg, math
            >>> from wengert.scipy.stats import pareto
            >>> wg.grad(pareto.logsf, argnums=1)(math.e, 2.0)     # -log z
            -1.0
        """
        outside, lz = self._log_z(x, loc, scale)
        return _valid((b > 0) & (scale > 0), wnp.where(outside, 0.0, -b * lz))

    @_method
    def ppf(self, q, b, loc=0, scale=1):
        """loc + scale (1 - q)^(-1/b).

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import pareto
            >>> wg.grad(pareto.ppf)(0.75, 2.0)               # (1 - q)^(-1/b - 1)/b
            4.0
        """
        return _quantile(q, loc, (b > 0) & (scale > 0), loc + scale, math.inf,
                         lambda q: loc + scale * wnp.exp(-wnp.log1p(-q) / b))


def _log_gauss_mass(a, b):
    """log(Φ(b) - Φ(a)) for a <= b without cancellation: in the lower tail (b <= 0) from
    log Φ(b) and log Φ(a), in the upper tail (a > 0) from log Φ(-a) and log Φ(-b), and
    across the middle as log1p(-Φ(a) - Φ(-b)).  Each form is given the bounds where it is
    taken (stand-ins elsewhere); an infinite far bound adds nothing (its log Φ is -inf,
    and the derivative of its term, 0·inf, would be nan)."""
    lower, upper = b <= 0, a > 0
    middle = ~(lower | upper)

    def tail(near, far, where):
        # log Φ(near) + log(1 - Φ(far)/Φ(near)), far <= near <= 0
        near = _where(where, near, 0.0)
        infinite = far == -math.inf
        far = _where(where & ~infinite, far, near - 1.0)
        ln = P.log_ndtr(near)
        return ln + _where(infinite, 0.0, _log1mexp(P.log_ndtr(far) - ln))

    am, bm = _where(middle, a, -1.0), _where(middle, b, 1.0)
    return _where(lower, tail(b, a, lower),
                  _where(upper, tail(-a, -b, upper), wnp.log1p(-P.ndtr(am) - P.ndtr(-bm))))


def _inner_point(a, b):
    """A finite point strictly inside (a, b), either end possibly infinite: a stand-in
    where a point is not taken."""
    return _where(a == -math.inf, _where(b == math.inf, 0.0, b - 1.0),
                  _where(b == math.inf, a + 1.0, a / 2 + b / 2))


class _Truncnorm(_Density):
    """The normal distribution truncated to [a, b] (in standard units: the support is
    [loc + a·scale, loc + b·scale]): ``pdf logpdf cdf logcdf sf logsf``, differentiable in
    x, a, b, loc and scale.  Its normalizing mass Φ(b) - Φ(a) is computed in logs on the
    side of the mean where it does not cancel, so far tails (a = 30) keep their digits.

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.stats import truncnorm
        >>> wg.grad(truncnorm.logpdf)(0.5, 0.0, 1.0)     # -x, as the normal's
        -0.5
    """

    name = "truncnorm"

    @_method
    def logpdf(self, x, a, b, loc=0, scale=1):
        """-z²/2 - log √(2π) - log(Φ(b) - Φ(a)) - log scale on [a, b], -inf outside.

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import truncnorm
            >>> round(wg.grad(truncnorm.logpdf, argnums=1)(0.5, 0.0, 1e9), 12)  # φ(a)/(1 - Φ(a))
            0.797884560803
        """
        z = _standardize(x, loc, scale)
        a, b = _like(a, z), _like(b, z)       # (SciPy's ufuncs: Python numbers in z's dtype)
        outside = (z < a) | (z > b)
        zs = _where(outside, _inner_point(a, b), z)
        return _valid((a < b) & (scale > 0), _density(
            outside, -0.5 * zs * zs - _LOG_SQRT_2PI - _log_gauss_mass(a, b) - log(scale)))

    def _part(self, x, a, b, loc, scale, upper, log_form):
        """The cdf, the mass of [a, z] over that of [a, b], or the sf, of [z, b], or their
        logs.  At the end where it is 0 (z = a for the cdf) it is pdf·(z - a), whose
        derivative is the density (exp of the log mass, -inf there, would give 0·inf)."""
        z = _standardize(x, loc, scale)
        a, b = _like(a, z), _like(b, z)
        start = b if upper else a                    # where the part is empty
        empty = (z >= b) if upper else (z <= a)
        full = (z <= a) if upper else (z >= b)
        inside = ~(empty | full)                     # (a nan z too: it stays nan)
        zi = _where(inside, z, _inner_point(a, b))
        total = _log_gauss_mass(a, b)
        log_part = (_log_gauss_mass(zi, b) if upper else _log_gauss_mass(a, zi)) - total
        if log_form:
            # above 1/2, log1p(-the other part): log_part's sum of the log masses less the
            # total keeps only the total's rounding there (1e-6 relative at logcdf = -5e-10)
            other = (_log_gauss_mass(a, zi) if upper else _log_gauss_mass(zi, b)) - total
            high = log_part > -_LOG_2
            log_part = _where(high, _log1mexp(_where(high, other, -1.0)), log_part)
            value = wnp.where(inside, log_part, wnp.where(full, 0.0, -math.inf))
        else:
            edge = (z == start) & wnp.isfinite(start)
            s = _where(edge, start, _inner_point(a, b))
            step = _where(edge, (start - z) if upper else (z - start), 0.0)
            linear = wnp.exp(-0.5 * s * s - _LOG_SQRT_2PI - total) * step
            value = wnp.where(inside, wnp.exp(log_part),
                              wnp.where(full, 1.0, _where(edge, linear, 0.0)))
        return _valid((a < b) & (scale > 0), value)

    @_method
    def cdf(self, x, a, b, loc=0, scale=1):
        """(Φ(z) - Φ(a))/(Φ(b) - Φ(a)) on [a, b], 0 below, 1 above.

        Example:
            >>> import wengert as wg, math
            >>> from wengert.scipy.stats import truncnorm
            >>> wg.grad(truncnorm.cdf)(0.0, 0.0, math.inf) == 2 / math.sqrt(2 * math.pi)
            True
        """
        return self._part(x, a, b, loc, scale, False, False)

    @_method
    def logcdf(self, x, a, b, loc=0, scale=1):
        """log cdf, from the log masses (no exp and log).

        Example:
            >>> import wengert as wg, math
            >>> from wengert.scipy.stats import truncnorm, norm
            >>> g = wg.grad(truncnorm.logcdf, argnums=2)(0.0, -1.0, 1.0)
            >>> bool(round(g, 12) == round(-norm.pdf(1.0) / (norm.cdf(1.0) - norm.cdf(-1.0)), 12))
            True
        """
        return self._part(x, a, b, loc, scale, False, True)

    @_method
    def sf(self, x, a, b, loc=0, scale=1):
        """(Φ(b) - Φ(z))/(Φ(b) - Φ(a)) on [a, b], 1 below, 0 above.

        Example:
            >>> import wengert as wg, math
            >>> from wengert.scipy.stats import truncnorm
            >>> wg.grad(truncnorm.sf)(0.0, -math.inf, 0.0) == -2 / math.sqrt(2 * math.pi)
            True
        """
        return self._part(x, a, b, loc, scale, True, False)

    @_method
    def logsf(self, x, a, b, loc=0, scale=1):
        """log sf, from the log masses.

        Example:
            >>> from wengert.scipy.stats import truncnorm
            >>> round(float(truncnorm.logsf(30.5, 30.0, 31.0)), 12)     # far in the tail
            -15.141493573428
        """
        return self._part(x, a, b, loc, scale, True, True)


class _Uniform(_Density):
    """The uniform distribution on [loc, loc + scale]: ``pdf logpdf cdf ppf``,
    differentiable in x (or q), loc and scale.

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.stats import uniform
        >>> wg.grad(uniform.logpdf, argnums=2)(0.5, 0.0, 2.0)     # -1/scale
        -0.5
    """

    name = "uniform"

    @_method
    def logpdf(self, x, loc=0, scale=1):
        """-log scale on [loc, loc + scale], -inf outside.

        Example:
            >>> from wengert.scipy.stats import uniform
            >>> uniform.logpdf([-1.0, 0.0, 1.0, 2.0]).tolist()
            [-inf, 0.0, 0.0, -inf]
        """
        z = _standardize(x, loc, scale)
        # (a nan point is nan, as SciPy's; inf is outside)
        inside = wnp.where(wnp.isnan(z), math.nan, _like(-log(scale), z))
        return _valid(scale > 0, _density((z < 0) | (z > 1), inside))

    @_method
    def cdf(self, x, loc=0, scale=1):
        """z clipped to [0, 1].

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import uniform
            >>> wg.grad(uniform.cdf, argnums=(0, 1, 2))(1.0, 0.0, 4.0)   # 1/s, -1/s, -z/s
            (0.25, -0.25, -0.0625)
        """
        z = _standardize(x, loc, scale)
        return _valid(scale > 0, wnp.where(z < 0, 0.0, wnp.where(z > 1, 1.0, z)))

    @_method
    def ppf(self, q, loc=0, scale=1):
        """loc + q·scale.

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import uniform
            >>> wg.grad(uniform.ppf, argnums=2)(0.25, 1.0, 2.0)
            0.25
        """
        return _quantile(q, loc, scale > 0, loc, loc + scale, lambda q: loc + q * scale)


class _Vonmises(_Density):
    """The von Mises distribution, density e^(κ cos z)/(2π I₀(κ)): ``pdf logpdf``,
    differentiable in x, kappa, loc and scale.  As SciPy's: its density is periodic, on the
    whole line, and κ = 0 is the uniform density 1/(2π).

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.stats import vonmises
        >>> round(wg.grad(vonmises.logpdf, argnums=1)(0.0, 0.0), 12)   # 1 - I₁(κ)/I₀(κ)
        1.0
    """

    name = "vonmises"

    @_method
    def logpdf(self, x, kappa, loc=0, scale=1):
        """κ(cos z - 1) - log(2π) - log(e^-κ I₀(κ)) - log scale: with the scaled Bessel
        function i0e, which does not overflow for large κ, and cos z - 1 as -2 sin²(z/2),
        which does not cancel next to z = 0.

        Example:
            >>> import wengert as wg, math
            >>> from wengert.scipy.stats import vonmises
            >>> wg.grad(vonmises.logpdf)(math.pi / 2, 2.0)       # -κ sin z
            -2.0
        """
        z = _standardize(x, loc, scale)
        kappa = _like(kappa, z)
        s = wnp.sin(z / 2)
        # log(e^-κ I₀(κ)): i0e's derivative at κ = 0 is the mean of its one-sided slopes
        # (it has |κ| in it), 0, where this side's is -1; below 1, log I₀(κ) - κ, smooth
        small = kappa < 1
        ks, kl = _where(small, kappa, 0.5), _where(small, 2.0, kappa)
        log_i0e = _where(small, wnp.log(P.i0(ks)) - ks, wnp.log(P.i0e(kl)))
        # (nan at an infinite point, as SciPy's cos(inf): said outright, as κ = 0 times the
        # nan would be simplified to 0)
        value = wnp.where(wnp.isfinite(z), -2 * kappa * (s * s), math.nan)
        return _valid((kappa >= 0) & (scale > 0), value - _LOG_2PI - log_i0e - log(scale))


class _Wrapcauchy(_Density):
    """The wrapped Cauchy distribution on [0, 2π], density (1 - c²)/(2π(1 + c² - 2c cos z)):
    ``pdf logpdf``, differentiable in x, c, loc and scale.

    Example:
        >>> import wengert as wg, math
        >>> from wengert.scipy.stats import wrapcauchy
        >>> round(wg.grad(wrapcauchy.logpdf)(math.pi / 2, 0.5), 12)  # -2c sin z/(1 + c²)
        -0.8
    """

    name = "wrapcauchy"

    @_method
    def logpdf(self, x, c, loc=0, scale=1):
        """log(1 - c²) - log 2π - log(1 + c² - 2c cos z) - log scale on [0, 2π], -inf
        outside; the last as (1 - c)² + 4c sin²(z/2), which does not cancel for c next to
        1 and z next to 0.

        Example:
            >>> import wengert as wg
            >>> from wengert.scipy.stats import wrapcauchy
            >>> round(wg.grad(wrapcauchy.logpdf, argnums=1)(0.0, 0.5), 12)   # z = 0: 2/(1 - c²)
            2.666666666667
        """
        z = _standardize(x, loc, scale)
        c = _like(c, z)
        outside = (z < 0) | (z > 2 * math.pi)
        s = wnp.sin(wnp.where(outside, 1.0, z) / 2)
        d = (1 - c) * (1 - c) + 4 * c * (s * s)
        return _valid((c > 0) & (c < 1) & (scale > 0), _density(
            outside, wnp.log1p(-c) + wnp.log1p(c) - _LOG_2PI - wnp.log(d) - log(scale)))

norm = _Norm()
t = _T()
gamma = _Gamma()
beta = _Beta()
chi2 = _Chi2()
poisson = _Poisson()
dirichlet = _Dirichlet()
multivariate_normal = _MultivariateNormal()
bernoulli = _Bernoulli()
binom = _Binom()
betabinom = _Betabinom()
geom = _Geom()
nbinom = _Nbinom()
multinomial = _Multinomial()
cauchy = _Cauchy()
expon = _Expon()
gennorm = _Gennorm()
gumbel_l = _GumbelL()
gumbel_r = _GumbelR()
laplace = _Laplace()
logistic = _Logistic()
pareto = _Pareto()
truncnorm = _Truncnorm()
uniform = _Uniform()
vonmises = _Vonmises()
wrapcauchy = _Wrapcauchy()


# ---- statistics of samples -------------------------------------------------------------------
def _scipy_unless_traced(fn):
    """SciPy's function of the same name on plain arguments, `fn` on traced ones."""
    @accepts_duals
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if wnp._traced(*args, *kwargs.values()):
            with _np.errstate(all="ignore"):
                return fn(*args, **kwargs)
        return getattr(_st, fn.__name__)(*args, **kwargs)
    return wrapper


def _nan_policy(a, policy, name):
    """SciPy's nan_policy: 'propagate' and 'omit' are the function's; 'raise' reads the
    values (so it needs them: not under wg.compile)."""
    if policy not in ("propagate", "omit", "raise"):
        raise ValueError(f"{name}: nan_policy must be one of 'propagate', 'omit' or 'raise', "
                         f"got {policy!r}")
    if policy == "raise":
        values = a._concrete(f"read by scipy.stats.{name}(..., nan_policy='raise') to look "
                             "for nans (pass nan_policy='propagate' or 'omit' to compile)") \
            if wnp._traced(a) else a
        if _np.isnan(values).any():
            raise ValueError("The input contains nan values")


def _along_last(a, axis, name):
    """a with `axis` moved last (None: flattened); a function putting a result with that
    last axis back where `axis` was; and one giving a reduced result `axis` back, of
    length 1 (keepdims)."""
    a = wnp.asarray(a)
    ndim = a.ndim
    if axis is None:
        return wnp.ravel(a), lambda r: r, lambda r: wnp.reshape(r, (1,) * ndim)
    if ndim == 0:
        a, ndim = wnp.reshape(a, (1,)), 1
    ax = int(axis)
    if not -ndim <= ax < ndim:
        raise _np.exceptions.AxisError(ax, ndim, f"scipy.stats.{name}")
    ax %= ndim
    return (wnp.moveaxis(a, ax, -1), lambda r: wnp.moveaxis(r, -1, ax),
            lambda r: wnp.expand_dims(r, ax))


@_scipy_unless_traced
def sem(a, axis=0, ddof=1, nan_policy="propagate", *, keepdims=False):
    """The standard error of the mean, std(a, ddof)/√n along `axis` (None: all elements),
    SciPy's ``sem``, differentiable in a.  nan_policy 'omit' leaves nans out of both and
    of n; 'raise' needs a's values (an eager call).  nan where n <= ddof, as SciPy's.

    Example:
        >>> import wengert as wg, numpy as np
        >>> from wengert.scipy.stats import sem
        >>> a = np.array([1.0, 2.0, 4.0, 5.0])
        >>> bool(float(sem(a)) == np.std(a, ddof=1) / 2)
        True
        >>> (wg.grad(sem)(a) * 12 * float(sem(a))).round(12)    # (a - mean)/(n (n - 1) sem)
        array([-2., -1.,  1.,  2.])
    """
    _nan_policy(a, nan_policy, "sem")
    a, _, keep = _along_last(a, axis, "sem")
    if nan_policy == "omit":
        n = wnp.sum(wnp.logical_not(wnp.isnan(a)), axis=-1)
        sd = wnp.nanstd(a, axis=-1, ddof=ddof)
    else:
        n = a.shape[-1]
        sd = wnp.std(a, axis=-1, ddof=ddof) if n > ddof else wnp.sum(a, axis=-1) * math.nan
    out = _where(n > ddof, sd / wnp.sqrt(_like(n, sd)), math.nan)
    return keep(out) if keepdims else out


def _runs(a):
    """For a (..., n) array: the stable sorting order along the last axis, the sorted
    values, and for each sorted position its run of equal values (nans are one run, as
    np.unique counts them): the run's number (0, 1, ...) and its first and last
    positions.  Positions are found without a loop: a run's first positions are those
    where the value changes, and a stable argsort of "not first" lists them in order, so
    the run number indexes them."""
    order = wnp.argsort(a, axis=-1)
    s = wnp.take_along_axis(a, order, axis=-1)
    before, after = s[..., :-1], s[..., 1:]
    changes = (after != before) & wnp.logical_not(wnp.isnan(after) & wnp.isnan(before))
    edge = _np.ones(a.shape[:-1] + (1,), dtype=bool)
    first = wnp.concatenate([edge, changes], axis=-1)
    last = wnp.concatenate([changes, edge], axis=-1)
    run = wnp.cumsum(first, axis=-1) - 1
    starts = wnp.take_along_axis(wnp.argsort(wnp.logical_not(first), axis=-1), run, axis=-1)
    ends = wnp.take_along_axis(wnp.argsort(wnp.logical_not(last), axis=-1), run, axis=-1)
    return order, s, run, starts, ends


@_scipy_unless_traced
def rankdata(a, method="average", *, axis=None, nan_policy="propagate"):
    """The ranks of a's values, 1 for the least, ties by `method` ('average', 'min',
    'max', 'dense', 'ordinal'): SciPy's ``rankdata``.  Ranks are piecewise constant in a,
    so they carry no derivative.  On traced values they are float64 for every method (a
    float array may hold nans, which SciPy's integer ranks cannot); nan_policy
    'propagate' makes a slice with a nan all nan, 'omit' ranks the others and leaves nan
    in place.

    Example:
        >>> import wengert as wg, numpy as np
        >>> from wengert.scipy.stats import rankdata
        >>> f = wg.compile(lambda a: rankdata(a), np.zeros(4))
        >>> f(np.array([0.5, 0.1, 0.5, 0.3])).tolist()
        [3.5, 1.0, 3.5, 2.0]
    """
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(f'unknown method "{method}"')
    _nan_policy(a, nan_policy, "rankdata")
    a, back, _ = _along_last(stop_gradient(wnp.asarray(a)), axis, "rankdata")
    if a.shape[-1] == 0:
        return back(wnp.astype(a, _np.float64))
    order, _, run, starts, ends = _runs(a)
    sorted_ranks = {"average": (starts + ends) / 2 + 1, "min": starts + 1, "max": ends + 1,
                    "dense": run + 1}.get(method)
    inverse = wnp.argsort(order, axis=-1)            # sorted position of each element
    ranks = inverse + 1 if method == "ordinal" else \
        wnp.take_along_axis(sorted_ranks, inverse, axis=-1)
    ranks = wnp.astype(ranks, _np.float64)
    nan = wnp.isnan(a)
    if nan_policy == "propagate":
        nan = wnp.broadcast_to(wnp.any(nan, axis=-1, keepdims=True), a.shape)
    return back(wnp.where(nan, math.nan, ranks))


def _mode_result():
    try:
        from scipy.stats._stats_py import ModeResult
    except ImportError:                                    # (SciPy moved it)
        import collections
        ModeResult = collections.namedtuple("ModeResult", ("mode", "count"))
    return ModeResult


@_scipy_unless_traced
def mode(a, axis=0, nan_policy="propagate", keepdims=False):
    """The most frequent value along `axis` (None: all elements) and its count, the least
    such value at a tie: SciPy's ``mode``, a ``ModeResult(mode, count)``.  nans count as
    one value, as SciPy's; nan_policy 'omit' leaves them out.  The mode is one of a's
    values, kept where ties move: it carries no derivative (stop_gradient), as the count.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy.stats import mode
        >>> f = wg.compile(lambda a: mode(a), np.zeros(5))
        >>> m, count = f(np.array([3.0, 1.0, 2.0, 3.0, 1.0]))
        >>> float(m), int(count)
        (1.0, 2)
    """
    _nan_policy(a, nan_policy, "mode")
    a, _, keep = _along_last(stop_gradient(wnp.asarray(a)), axis, "mode")
    if a.shape[-1] == 0:
        empty = wnp.sum(a, axis=-1) * math.nan
        return _mode_result()(empty, wnp.zeros_like(empty))
    _, s, _, starts, ends = _runs(a)
    counts = ends - starts + 1
    if nan_policy == "omit":
        counts = wnp.where(wnp.isnan(s), 0, counts)
    best = wnp.argmax(counts, axis=-1)[..., None]    # (the first: the least value)
    value = wnp.take_along_axis(s, best, axis=-1)[..., 0]
    count = wnp.take_along_axis(counts, best, axis=-1)[..., 0]
    value = wnp.where(count == 0, math.nan, value)   # (all nan, omitted: SciPy's nan)
    if keepdims:
        value, count = keep(value), keep(count)
    return _mode_result()(value, count)


class gaussian_kde:
    """A kernel density estimate with Gaussian kernels: SciPy's ``gaussian_kde(dataset,
    bw_method=None, weights=None)`` (dataset of shape (d, n), or (n,) for d = 1; bandwidth
    'scott' (the default), 'silverman', a number or a function of the estimate, as
    SciPy's), with ``evaluate`` (and ``pdf`` and calling it), ``logpdf`` and
    ``integrate_box_1d``, differentiable in the points, the dataset, the weights and a
    numeric bandwidth.  With plain arguments every method is SciPy's own estimate's.

    On traced values the density is Σᵢ wᵢ N(x; xᵢ, Σ), Σ the weighted covariance of the
    dataset times the bandwidth factor squared, through Σ's Cholesky factor L: points and
    dataset are whitened by L (as SciPy's), then the log-density is a logsumexp over the
    dataset (no underflow far out), and ``evaluate`` its exp.  The distances take an array
    of d·n·m numbers for m points.  Other methods (``resample``, ``integrate_box``, ...)
    are SciPy's on plain values and raise NotImplementedError on traced ones.

    Example:
        >>> import wengert as wg, numpy as np
        >>> from wengert.scipy.stats import gaussian_kde
        >>> data = np.array([-1.0, 0.0, 1.0])
        >>> kde = gaussian_kde(data, bw_method=1.0)          # Σ = the variance, 1
        >>> wg.grad(lambda x: kde.logpdf(x)[0])(np.array([0.0]))   # symmetric: 0
        array([0.])
        >>> g = wg.grad(lambda d: gaussian_kde(d, bw_method=1.0).pdf(0.5)[0])(data)
        >>> bool(abs(g.sum() + wg.grad(lambda x: kde.pdf(x)[0])(0.5)) < 1e-15)   # shift
        True
    """

    def __init__(self, dataset, bw_method=None, weights=None):
        traced = wnp._traced(dataset, weights) or wnp._traced(bw_method)
        self.dataset = wnp.atleast_2d(wnp.asarray(dataset))
        if not self.dataset.size > 1:
            raise ValueError("gaussian_kde: the dataset should have multiple elements")
        if self.dataset.ndim != 2:
            raise ValueError(f"gaussian_kde: the dataset has shape {self.dataset.shape}: it "
                             "should be (d, n), n points of d dimensions, or (n,)")
        self.d, self.n = self.dataset.shape
        if weights is not None:
            w = wnp.atleast_1d(wnp.asarray(weights))
            if w.ndim != 1:
                raise ValueError("gaussian_kde: weights should be one-dimensional")
            if w.shape[0] != self.n:
                raise ValueError(f"gaussian_kde: {w.shape[0]} weights for {self.n} points")
            self._weights = w / wnp.sum(w)
        else:
            self._weights = _np.full(self.n, 1.0 / self.n)
        self._neff = 1 / wnp.sum(self._weights * self._weights)
        if self.d > self.n:
            raise ValueError(f"gaussian_kde: the dataset has {self.n} points in {self.d} "
                             "dimensions: fewer points than dimensions (is it transposed? "
                             "points are its columns)")
        # SciPy's own estimate, where nothing is traced: its methods are the plain ones
        self._scipy = None if traced else _st.gaussian_kde(dataset, bw_method, weights)
        self.set_bandwidth(bw_method)

    @property
    def weights(self):
        return self._weights

    @property
    def neff(self):
        return self._neff

    def scotts_factor(self):
        """Scott's rule, neff^(-1/(d + 4)).

        Example:
            >>> import numpy as np
            >>> from wengert.scipy.stats import gaussian_kde
            >>> bool(gaussian_kde(np.arange(16.0)).scotts_factor() == 16 ** -0.2)
            True
        """
        return self.neff ** (-1.0 / (self.d + 4))

    def silverman_factor(self):
        """Silverman's rule, (neff (d + 2)/4)^(-1/(d + 4)).

        Example:
            >>> import numpy as np
            >>> from wengert.scipy.stats import gaussian_kde
            >>> kde = gaussian_kde(np.arange(16.0))
            >>> round(float(kde.silverman_factor()), 12) == round(12 ** -0.2, 12)
            True
        """
        return (self.neff * (self.d + 2.0) / 4.0) ** (-1.0 / (self.d + 4))

    def set_bandwidth(self, bw_method=None):
        """Sets the bandwidth factor as SciPy's: None or 'scott', 'silverman', a number,
        or a function of this estimate giving one; the covariance follows.

        Example:
            >>> import numpy as np
            >>> from wengert.scipy.stats import gaussian_kde
            >>> kde = gaussian_kde(np.array([0.0, 2.0]))
            >>> kde.set_bandwidth(0.5); kde.covariance.tolist()      # 2 · 0.5²
            [[0.5]]
        """
        if bw_method is None or (isinstance(bw_method, str) and bw_method == "scott"):
            self.covariance_factor = self.scotts_factor
        elif isinstance(bw_method, str) and bw_method == "silverman":
            self.covariance_factor = self.silverman_factor
        elif wnp._traced(bw_method) or _np.isscalar(bw_method) and \
                not isinstance(bw_method, str):
            self.covariance_factor = lambda: bw_method
        elif callable(bw_method):
            self.covariance_factor = lambda: bw_method(self)
        else:
            raise ValueError("gaussian_kde: bw_method should be 'scott', 'silverman', a "
                             f"scalar or a callable, got {bw_method!r}")
        if self._scipy is not None and not wnp._traced(bw_method):
            self._scipy.set_bandwidth(bw_method)
        self.factor = self.covariance_factor()
        w, x = self._weights, self.dataset
        centred = x - wnp.sum(x * w, axis=1)[:, None]
        # the weighted covariance with aweights, as np.cov's: Σ wᵢ dᵢdᵢᵀ / (1 - Σ wᵢ²)
        data_covariance = (centred * w) @ centred.T / (1 - wnp.sum(w * w))
        self.covariance = data_covariance * self.factor ** 2
        try:
            self._factor = wnp.linalg.cholesky(self.covariance)
        except _np.linalg.LinAlgError:
            raise _np.linalg.LinAlgError(
                "gaussian_kde: the covariance of the dataset is singular: the data lie in "
                "a lower-dimensional subspace (or are all equal); drop the dependent "
                "dimensions") from None

    @property
    def inv_cov(self):
        return wnp.linalg.inv(self.covariance)

    def _points(self, points):
        points = wnp.atleast_2d(wnp.asarray(points))
        d, m = points.shape
        if d != self.d:
            if d == 1 and m == self.d:           # (one point as a vector, as SciPy reads it)
                return wnp.reshape(points, (self.d, 1))
            raise ValueError(f"gaussian_kde: points of dimension {d} for a dataset of "
                             f"dimension {self.d} (points are columns: shape (d, m))")
        return points

    def _plain(self, *args):
        return self._scipy is not None and not wnp._traced(*args)

    @accepts_duals
    def logpdf(self, x):
        """log Σᵢ wᵢ N(x; xᵢ, Σ) at each point (columns of x), by logsumexp.

        Example:
            >>> import wengert as wg, numpy as np
            >>> from wengert.scipy.stats import gaussian_kde
            >>> kde = gaussian_kde(np.array([-1.0, 1.0]), bw_method=0.5)   # Σ = 2 · 0.25
            >>> wg.grad(lambda x: kde.logpdf(x)[0])(np.array([0.0]))
            array([0.])
        """
        if self._plain(x):
            return self._scipy.logpdf(x)
        x = self._points(x)
        lower = {"trans": 0, "lower": True, "unit_diagonal": False}
        data = solve_triangular(self._factor, self.dataset, **lower)       # (d, n)
        points = solve_triangular(self._factor, x, **lower)                # (d, m)
        diff = data[:, :, None] - points[:, None, :]
        log_kernel = wnp.log(self._weights)[:, None] - 0.5 * wnp.sum(diff * diff, axis=0)
        log_norm = 0.5 * self.d * _LOG_2PI + wnp.sum(wnp.log(wnp.diagonal(self._factor)))
        return wnp.logsumexp(log_kernel, axis=0) - log_norm

    @accepts_duals
    def evaluate(self, points):
        """The density Σᵢ wᵢ N(x; xᵢ, Σ) at each point (columns of `points`).

        Example:
            >>> import numpy as np
            >>> from wengert.scipy.stats import gaussian_kde
            >>> kde = gaussian_kde(np.array([-1.0, 1.0]), bw_method=0.5)
            >>> bool(abs(kde.evaluate(0.0)[0] - np.exp(-1) / np.sqrt(np.pi)) < 1e-15)
            True
        """
        if self._plain(points):
            return self._scipy.evaluate(points)
        return wnp.exp(self.logpdf(points))

    __call__ = evaluate

    @accepts_duals
    def pdf(self, x):
        """The same as ``evaluate``.

        Example:
            >>> import wengert as wg, numpy as np
            >>> from wengert.scipy.stats import gaussian_kde
            >>> kde = gaussian_kde(np.array([-1.0, 1.0]), bw_method=0.5)
            >>> wg.grad(lambda x: kde.pdf(x)[0])(0.0)
            0.0
        """
        return self.evaluate(x)

    @accepts_duals
    def integrate_box_1d(self, low, high):
        """The mass between `low` and `high` of a one-dimensional estimate,
        Σᵢ wᵢ (Φ((high - xᵢ)/σ) - Φ((low - xᵢ)/σ)); differentiable in the limits too
        (their derivatives are ∓ the density).

        Example:
            >>> import wengert as wg, numpy as np
            >>> from wengert.scipy.stats import gaussian_kde
            >>> kde = gaussian_kde(np.array([-1.0, 1.0]), bw_method=0.5)
            >>> float(kde.integrate_box_1d(-np.inf, np.inf))
            1.0
            >>> g = wg.grad(kde.integrate_box_1d, argnums=1)(0.0, 0.5)
            >>> bool(abs(g - kde.pdf(0.5)[0]) < 1e-15)
            True
        """
        if self.d != 1:
            raise ValueError("gaussian_kde: integrate_box_1d() only handles 1-D estimates")
        if self._plain(low, high):
            return self._scipy.integrate_box_1d(low, high)
        sd = wnp.sqrt(self.covariance[0, 0])
        data = self.dataset[0]
        return wnp.sum(self._weights * (P.ndtr((high - data) / sd) - P.ndtr((low - data) / sd)))

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if self.__dict__.get("_scipy") is not None:
            return getattr(self._scipy, name)
        fn = getattr(_st.gaussian_kde, name, None)
        if callable(fn):
            def refuse(*args, **kwargs):
                raise NotImplementedError(f"scipy.stats.gaussian_kde.{name} is not "
                                          "supported on traced values")
            return refuse
        raise AttributeError(f"wengert.scipy.stats.gaussian_kde has no attribute {name!r}")


def _as_module(name, distribution):
    """A module standing for a distribution, for autograd's spelling ``import
    autograd.scipy.stats.norm as norm`` and ``from ...stats.norm import logpdf`` (each
    distribution is a module of functions there, an object here).  It lends every name
    to the distribution; `import` finds it in sys.modules, as any imported submodule."""
    module = types.ModuleType(f"{__name__}.{name}", distribution.__doc__)
    module.__getattr__ = lambda attr: getattr(distribution, attr)
    return module


# (the attribute `stats.norm` stays the distribution: `import ...stats.norm as norm` reads it)
sys.modules.update({f"{__name__}.{name}": _as_module(name, globals()[name])
                    for name in _DISTRIBUTIONS})
