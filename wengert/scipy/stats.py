"""SciPy's `scipy.stats` distributions that autograd differentiates: norm, t,
multivariate_normal, gamma, beta, poisson and dirichlet, as objects with SciPy's methods
(``norm.logpdf(x, loc, scale)``).

On plain values a method calls SciPy's own (same arguments, same result).  On traced
values it is a composition of `wengert.numpy` and `wengert.scipy.special`, differentiable
in every float argument (the point and the parameters), to any order; it computes in the
arguments' dtype (float32 stays float32, where SciPy's stats give float64).  Outside the
support a log-density is -inf, as SciPy's; invalid parameters (a scale <= 0) are not
checked on traced values.  Methods SciPy has and wengert does not (ppf, t.cdf, rvs, ...)
are SciPy's on plain values and raise NotImplementedError, naming themselves, on traced
values.

Example:
    >>> import wengert as wg
    >>> from wengert.scipy.stats import norm
    >>> wg.grad(norm.logpdf, argnums=(0, 1, 2))(1.0, 0.0, 2.0)    # in x, loc and scale
    (-0.25, 0.25, -0.375)
"""
from __future__ import annotations

import functools
import math

import numpy as _np
import scipy.stats as _st

from .. import numpy as wnp
from ..numpy.dispatch import unsupported as _unsupported
from ..primitives import special as P
from . import special as _special

__all__ = ["norm", "t", "multivariate_normal", "gamma", "beta", "poisson", "dirichlet"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_LOG_2PI = math.log(2 * math.pi)


def _method(fn):
    """A distribution's method: SciPy's on plain arguments, `fn` on traced ones (lists
    holding traced values made one traced array)."""
    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        if wnp._traced(*args, *kwargs.values()):
            return fn(self, *wnp._arrays(args), **wnp._keyword_arrays(kwargs))
        return getattr(self.scipy, fn.__name__)(*args, **kwargs)
    return wrapper


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
    return (x - loc) / scale


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
        return -0.5 * (z * z) - wnp.log(scale) - _LOG_SQRT_2PI

    @_method
    def cdf(self, x, loc=0, scale=1):
        return P.ndtr(_standardize(x, loc, scale))

    @_method
    def logcdf(self, x, loc=0, scale=1):
        return P.log_ndtr(_standardize(x, loc, scale))

    @_method
    def sf(self, x, loc=0, scale=1):
        return P.ndtr(-_standardize(x, loc, scale))

    @_method
    def logsf(self, x, loc=0, scale=1):
        return P.log_ndtr(-_standardize(x, loc, scale))


class _T(_Density):
    """Student's t distribution with `df` degrees of freedom: ``pdf logpdf``.

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
        half = (df + 1) / 2
        return (P.gammaln(half) - P.gammaln(df / 2) - 0.5 * wnp.log(df * math.pi)
                - wnp.log(scale) - half * wnp.log1p(z * z / df))


def _on_support(inside, value, fill=-math.inf):
    return wnp.where(inside, value, fill)


class _Gamma(_Density):
    """The gamma distribution with shape `a`: ``pdf logpdf`` (0 and -inf for x < loc).

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
        inside = y >= 0
        y = wnp.where(inside, y, 1.0)            # the unused branch stays in the domain
        return _on_support(inside, P.xlogy(a - 1, y) - y - P.gammaln(a) - wnp.log(scale))


class _Beta(_Density):
    """The beta distribution on [loc, loc + scale]: ``pdf logpdf``.

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
        inside = (y >= 0) & (y <= 1)
        y = wnp.where(inside, y, 0.5)
        return _on_support(inside, P.xlog1py(b - 1, -y) + P.xlogy(a - 1, y)
                           - _special.betaln(a, b) - wnp.log(scale))


class _Poisson(_Distribution):
    """The Poisson distribution with mean `mu`: ``pmf logpmf`` (differentiable in mu;
    k is a count).

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy.stats import poisson
        >>> wg.grad(poisson.logpmf, argnums=1)(3, 2.0)    # k/μ - 1
        0.5
    """

    name = "poisson"

    @_method
    def logpmf(self, k, mu, loc=0):
        m = k - loc
        inside = (m >= 0) & (m == wnp.floor(m))
        m = wnp.where(inside, m, 0.0)
        return _on_support(inside, P.xlogy(m, mu) - P.gammaln(m + 1) - mu)

    @_method
    def pmf(self, k, mu, loc=0):
        return wnp.exp(self.logpmf(k, mu, loc))


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
    written with `wengert.numpy.linalg`'s slogdet and solve (as autograd's), so the
    derivative in cov is the symmetric one; cov must be positive definite
    (``allow_singular`` is refused there).

    Example:
        >>> import wengert as wg, numpy as np
        >>> from wengert.scipy.stats import multivariate_normal as mvn
        >>> cov = np.array([[2.0, 0.0], [0.0, 4.0]])
        >>> wg.grad(mvn.logpdf)(np.array([1.0, 1.0]), np.zeros(2), cov)   # -cov⁻¹(x - mean)
        array([-0.5 , -0.25])
    """

    name = "multivariate_normal"

    @staticmethod
    def _parameters(mean, cov, allow_singular):
        if allow_singular:
            raise NotImplementedError("multivariate_normal(..., allow_singular=True) on "
                                      "traced values: the derivative needs a positive "
                                      "definite cov")
        if mean is None:
            cov = wnp.asarray(cov)
            dim = 1 if cov.ndim < 2 else cov.shape[0]
            mean = _np.zeros(dim)
        else:
            mean = wnp.asarray(mean)
            dim = mean.size
            mean = wnp.reshape(mean, (dim,))
        cov = wnp.asarray(cov)
        if cov.ndim == 0:
            cov = cov * _np.eye(dim)
        elif cov.ndim == 1:
            cov = wnp.diag(cov)
        if cov.shape != (dim, dim):
            raise ValueError(f"multivariate_normal: cov of shape {cov.shape} for a mean of "
                             f"{dim} components")
        return dim, mean, cov

    @_method
    def logpdf(self, x, mean=None, cov=1, allow_singular=False):
        dim, mean, cov = self._parameters(mean, cov, allow_singular)
        x = wnp.asarray(x)
        if x.ndim == 0:
            x = wnp.reshape(x, (1,))
        elif x.ndim == 1:
            x = wnp.reshape(x, (x.shape[0], 1) if dim == 1 else (1, dim))
        batch = x.shape[:-1]
        diff = wnp.reshape(x - mean, (-1, dim)).T                     # (dim, points)
        maha = wnp.sum(diff * wnp.linalg.solve(cov, diff), axis=0)
        logdet = wnp.linalg.slogdet(cov)[1]
        out = -0.5 * (dim * _LOG_2PI + logdet + maha)
        return wnp.squeeze(wnp.reshape(out, batch))      # (SciPy squeezes too)

    @_method
    def entropy(self, mean=None, cov=1):
        dim, mean, cov = self._parameters(mean, cov, False)
        return 0.5 * (dim * (1 + _LOG_2PI) + wnp.linalg.slogdet(cov)[1])


norm = _Norm()
t = _T()
gamma = _Gamma()
beta = _Beta()
poisson = _Poisson()
dirichlet = _Dirichlet()
multivariate_normal = _MultivariateNormal()
