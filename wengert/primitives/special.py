"""Special functions (SciPy's `scipy.special`) as elementwise primitives, for
`wengert.scipy`: erf, erfc, erfinv, gammaln, digamma, polygamma, gamma, expit, logit, ndtr,
log_ndtr, xlogy and xlog1py.

Each is evaluated by SciPy's own ufunc, so a traced value equals SciPy's result; SciPy is
imported on first evaluation, not here, so wengert imports without it (the error then
says how to install it).  There is no `math` fast path: Python's erf and lgamma differ
from SciPy's in the last bit now and then.

Partials, written with primitives as in scalar.py:

    d erf = 2/√π exp(-x²)        d gammaln = digamma          d polygamma(n) = polygamma(n+1)
    d erfinv = √π/2 exp(ans²)    d digamma = polygamma(1)     d expit = ans · expit(-x)

Domains follow SciPy: gammaln of a negative non-integer is log|Γ(x)| (its derivative is
still digamma), gamma and gammaln have poles at 0, -1, -2, ... (inf), erfinv is ±inf at ±1.
"""
from __future__ import annotations

import math

import numpy as np

from .registry import defprimitive
from .scalar import eq, exp, log, log1p, select

INSTALL_HINT = ("wengert.scipy needs SciPy, which is an optional dependency: "
                "pip install 'wengert[scipy]' (or pip install scipy)")


def scipy_special():
    """SciPy's `scipy.special`, or an ImportError that says how to install it."""
    try:
        import scipy.special
    except ImportError as e:
        raise ImportError(INSTALL_HINT) from e
    return scipy.special


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


def _polygamma_np(x, n):
    """SciPy's polygamma(n, x), with n a parameter, in x's float dtype (SciPy's gives
    float64 for float32)."""
    out = np.asarray(_scipy_polygamma(n, x),
                     dtype=np.result_type(getattr(x, "dtype", 1.0), 1.0))
    return out if out.ndim else out[()]


_polygamma_np.__name__ = "polygamma"


def _special(name, doc, scipy_name=None, impl=None):
    return defprimitive(name, impl or _scipy(scipy_name or name), fast=None, cost="call",
                        doc=doc)


_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
_SQRT_PI_OVER_TWO = math.sqrt(math.pi) / 2
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)

erf = _special("erf", "erf(x): the error function 2/√π ∫₀ˣ exp(-t²) dt (scipy.special.erf).")
erfc = _special("erfc", "erfc(x): 1 - erf(x), without cancellation for large x.")
erfinv = _special("erfinv", "erfinv(y): the x with erf(x) = y, for -1 <= y <= 1.")
gammaln = _special("gammaln", "gammaln(x): log|Γ(x)| (scipy.special.gammaln).")
digamma = _special("digamma", "digamma(x): ψ(x) = d/dx log Γ(x) (scipy.special.psi).",
                   scipy_name="psi")
polygamma = _special("polygamma", "polygamma(x, n=n): ψ⁽ⁿ⁾(x), the n-th derivative of "
                     "digamma, for a fixed integer n >= 0 (a parameter).", impl=_polygamma_np)
gamma = _special("gamma", "gamma(x): Γ(x) (scipy.special.gamma).")
expit = _special("expit", "expit(x): the logistic sigmoid 1/(1 + exp(-x)), no overflow.")
logit = _special("logit", "logit(p): log(p/(1 - p)), expit's inverse.")
ndtr = _special("ndtr", "ndtr(x): the standard normal distribution function Φ(x).")
log_ndtr = _special("log_ndtr", "log_ndtr(x): log Φ(x), accurate for very negative x.")
xlogy = _special("xlogy", "xlogy(x, y): x·log(y), and 0 where x = 0 (even for y = 0).")
xlog1py = _special("xlog1py", "xlog1py(x, y): x·log1p(y), and 0 where x = 0.")

erf.defpartials(lambda x, ans: _TWO_OVER_SQRT_PI * exp(-(x * x)))
erfc.defpartials(lambda x, ans: -_TWO_OVER_SQRT_PI * exp(-(x * x)))
erfinv.defpartials(lambda x, ans: _SQRT_PI_OVER_TWO * exp(ans * ans))
gammaln.defpartials(lambda x, ans: digamma(x))
digamma.defpartials(lambda x, ans: polygamma(x, n=1))
polygamma.defpartials(lambda x, ans, n: polygamma(x, n=n + 1))
gamma.defpartials(lambda x, ans: ans * digamma(x))
# expit(x)·(1 - expit(x)), with 1 - expit(x) = expit(-x): no cancellation for large x
expit.defpartials(lambda x, ans: ans * expit(-x))
logit.defpartials(lambda x, ans: 1 / (x * (1 - x)))
ndtr.defpartials(lambda x, ans: _INV_SQRT_2PI * exp(-0.5 * (x * x)))
# φ(x)/Φ(x) = exp(-x²/2 - log Φ(x))/√(2π): no 0/0 where Φ underflows (x << 0)
log_ndtr.defpartials(lambda x, ans: _INV_SQRT_2PI * exp(-0.5 * (x * x) - ans))


def _safe(x, y, pole, fill):
    """y, but `fill` where x = 0 and y is at the pole of the logarithm: the partial in y
    of x·log(y) is x/y, which is 0 wherever x = 0 (so 0/0 never happens), and keeps all
    its derivatives elsewhere."""
    return select(eq(x, 0.0), select(eq(y, pole), fill, y), y)


xlogy.defpartials(lambda x, y, ans: log(y),
                  lambda x, y, ans: x / _safe(x, y, 0.0, 1.0))
xlog1py.defpartials(lambda x, y, ans: log1p(y),
                    lambda x, y, ans: x / (1 + _safe(x, y, -1.0, 0.0)))
