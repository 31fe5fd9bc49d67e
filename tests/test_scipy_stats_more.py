"""wengert.scipy.stats: the distributions JAX's jax.scipy.stats has beyond autograd's
(bernoulli, binom, betabinom, geom, nbinom, multinomial, cauchy, expon, gennorm, gumbel_l,
gumbel_r, laplace, logistic, pareto, truncnorm, uniform, vonmises, wrapcauchy) and sem,
rankdata, mode and gaussian_kde.

Values against SciPy's (plain calls are SciPy's own; traced ones within rounding), at
random points, at the edges of the supports, at nan and at invalid parameters, and against
jax.scipy.stats in float64 where JAX is there; derivatives against central differences to
second order at random interior points, and against one-sided differences or closed forms
at the edges; under grad, compile and vmap."""
import math
import warnings

import numpy as np
import pytest
import scipy.stats as st

import wengert as wg
from wengert.scipy import stats
from fd import assert_close, check_grads

rng = np.random.default_rng(20260501)


def u(lo, hi, n=4):
    return rng.uniform(lo, hi, size=n)


def one(lo, hi):
    return np.array(rng.uniform(lo, hi))


# name -> (distribution, method, sampler of the differentiable arguments at interior points,
# fixed arguments after them): every continuous argument is checked
CONTINUOUS = {
    "cauchy": (("logpdf", "pdf", "cdf", "sf", "logcdf", "logsf"),
               lambda: (u(-4, 4), one(-1, 1), one(0.5, 2))),
    "expon": (("logpdf", "pdf", "cdf", "sf", "logcdf", "logsf"),
              lambda: (u(0.2, 4), one(-0.1, 0.1), one(0.5, 2))),
    "gennorm": (("logpdf", "pdf"), lambda: (u(-2, 2), one(0.7, 3), one(-0.3, 0.3), one(0.5, 2))),
    "gumbel_r": (("logpdf", "pdf", "cdf", "sf", "logcdf", "logsf"),
                 lambda: (u(-2, 4), one(-1, 1), one(0.5, 2))),
    "gumbel_l": (("logpdf", "pdf", "cdf", "sf", "logcdf", "logsf"),
                 lambda: (u(-4, 2), one(-1, 1), one(0.5, 2))),
    "laplace": (("logpdf", "pdf", "cdf"), lambda: (u(-3, 3), one(-0.2, 0.2), one(0.5, 2))),
    "logistic": (("logpdf", "pdf", "cdf", "sf"), lambda: (u(-4, 4), one(-1, 1), one(0.5, 2))),
    "pareto": (("logpdf", "pdf", "cdf", "sf", "logcdf", "logsf"),
               lambda: (u(1.6, 5), one(0.5, 4), one(-0.3, 0.3), one(0.7, 1.2))),
    "truncnorm": (("logpdf", "pdf", "cdf", "sf", "logcdf", "logsf"),
                  lambda: (u(-0.4, 1.4), one(-1.5, -0.8), one(1.8, 2.5), one(-0.2, 0.2),
                           one(0.8, 1.2))),
    "uniform": (("logpdf", "pdf", "cdf"), lambda: (u(0.3, 1.7), one(0.0, 0.2), one(1.9, 2.5))),
    "vonmises": (("logpdf", "pdf"), lambda: (u(-3, 3), one(0.1, 5), one(-1, 1), one(0.5, 2))),
    "wrapcauchy": (("logpdf", "pdf"), lambda: (u(0.8, 5), one(0.1, 0.9), one(-0.5, 0.5),
                                               one(0.8, 1.2))),
}
CONTINUOUS_CASES = [(d, m) for d, (methods, _) in CONTINUOUS.items() for m in methods]


def _both(dist, method):
    return getattr(getattr(stats, dist), method), getattr(getattr(st, dist), method)


@pytest.mark.parametrize("dist,method", CONTINUOUS_CASES)
def test_continuous_values_equal_scipys_plain_traced_and_eager(dist, method):
    f, ref = _both(dist, method)
    args = CONTINUOUS[dist][1]()
    expected = ref(*args)
    np.testing.assert_array_equal(f(*args), expected)            # SciPy's own
    assert_close(wg.trace(f, *args)(*args), expected, rtol=1e-12, atol=1e-300)
    eager = f(*[wg.Graph().input(a) for a in args]).value
    assert_close(eager, expected, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("dist,method", CONTINUOUS_CASES)
def test_continuous_derivatives_in_every_argument_to_second_order(dist, method):
    f, _ = _both(dist, method)
    args = CONTINUOUS[dist][1]()
    check_grads(f, *args, order=2, rtol=1e-5, atol=1e-7)


# the points where the forms change, the ends of the supports, outside them, infinities
# and nan, at valid and invalid parameters: everything SciPy's
EDGE_X = np.array([-np.inf, -31.0, -2.0, -1.0, -1e-300, 0.0, 1e-300, 0.5, 1.0, 2.0,
                   2 * np.pi, 7.0, 40.0, np.inf, np.nan])
EDGE_PARAMETERS = {
    "cauchy": [(), (0.5, 2.0), (0.0, 0.0), (0.0, -1.0), (np.nan, 1.0)],
    "expon": [(), (1.0, 0.5), (0.0, 0.0), (0.0, np.nan)],
    "gennorm": [(1.5,), (0.5,), (1.0,), (8.0, 0.5, 2.0), (0.0,), (-1.0,), (np.nan,)],
    "gumbel_r": [(), (1.0, 3.0), (0.0, -1.0)],
    "gumbel_l": [(), (-1.0, 0.5), (0.0, 0.0)],
    "laplace": [(), (0.5, 2.0), (0.0, -2.0)],
    "logistic": [(), (1.0, 0.1), (0.0, 0.0)],
    "pareto": [(2.0,), (0.5, -1.0, 2.0), (0.0,), (-1.0,), (2.0, 0.0, 0.0)],
    "truncnorm": [(-0.5, 1.0), (0.5, np.inf), (-np.inf, 0.0), (-np.inf, np.inf), (1.0, 1.0),
                  (2.0, 1.0), (30.0, 31.0), (-31.0, -30.0), (-1.0, 2.0, 0.5, 3.0),
                  (np.nan, 1.0)],
    "uniform": [(), (-1.0, 3.0), (0.0, 0.0), (0.0, -1.0)],
    "vonmises": [(2.0,), (0.0,), (700.0,), (-1.0,), (3.0, 1.0, 0.5)],
    "wrapcauchy": [(0.5,), (0.999,), (1e-3,), (0.0,), (1.0,), (0.5, 1.0, 2.0)],
}


@pytest.mark.parametrize("dist,method", CONTINUOUS_CASES)
def test_continuous_values_at_edges_nan_and_invalid_parameters_are_scipys(dist, method):
    f, ref = _both(dist, method)
    # (truncnorm: neither SciPy's nor wengert's mass of [-1e-300, 0] is right, 8e-301: a
    # difference of Φs keeps 1e-16 absolute, and wengert's of log Φs 0)
    x = EDGE_X[np.abs(EDGE_X) != 1e-300] if dist == "truncnorm" else EDGE_X
    for params in EDGE_PARAMETERS[dist]:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = ref(x, *params)
        with warnings.catch_warnings():
            warnings.simplefilter("error")           # (silent, as SciPy's methods are)
            eager, _ = wg.vjp(lambda x: f(x, *params), x)
        with np.errstate(all="ignore"):             # (a traced graph runs NumPy's ufuncs)
            got = wg.trace(lambda x: f(x, *params), x)(x)
        assert_close(eager, got, rtol=0, atol=0)
        # (SciPy's cauchy cdf, 1/2 + atan(z)/π, cancels in the lower tail: 2 digits at -31;
        # its wrapcauchy's 1 + c² - 2c cos z at c = 0.999: 5 digits, test_tails_...)
        rtol = {"cauchy": 1e-11, "wrapcauchy": 1e-9}.get(dist, 1e-12)
        assert_close(got, expected, rtol=rtol, atol=1e-300)


def test_tails_keep_their_digits():
    import mpmath
    mpmath.mp.dps = 40
    # cauchy's lower tail: 1/2 + atan(z)/π cancelled; atan2 does not
    for z in (-1e3, -1e8, -1e15):
        exact = float(mpmath.atan(-1 / mpmath.mpf(z)) / mpmath.pi)
        assert wg.trace(stats.cauchy.cdf, z)(z) == pytest.approx(exact, rel=1e-15)
        assert wg.trace(stats.cauchy.sf, -z)(-z) == pytest.approx(exact, rel=1e-15)
        assert wg.trace(stats.cauchy.logcdf, z)(z) == pytest.approx(math.log(exact), rel=1e-15)
    # cauchy's ppf next to 0 and 1: tan(π(q - 1/2)) lost q's digits
    for q in (1e-20, 1e-8, 0.3, 0.6, 1 - 1e-9):
        exact = float(mpmath.tan(mpmath.pi * (mpmath.mpf(q) - mpmath.mpf(1) / 2)))
        assert wg.trace(stats.cauchy.ppf, q)(q) == pytest.approx(exact, rel=1e-14)
    # truncnorm far in a tail, where Φ(b) - Φ(a) is 0 in floating point
    phi = mpmath.ncdf
    for a, b, x in ((30.0, 31.0, 30.5), (-41.0, -40.0, -40.2), (8.0, 1e3, 8.001)):
        mass = phi(b) - phi(a) if b < 0 else phi(-a) - phi(-b)
        want_cdf = (phi(x) - phi(a)) / mass if b < 0 else (phi(-a) - phi(-x)) / mass
        want_logpdf = mpmath.log(mpmath.npdf(x) / mass)
        assert wg.trace(lambda x: stats.truncnorm.logpdf(x, a, b), x)(x) == \
            pytest.approx(float(want_logpdf), rel=1e-13)
        assert wg.trace(lambda x: stats.truncnorm.logcdf(x, a, b), x)(x) == \
            pytest.approx(float(mpmath.log(want_cdf)), rel=1e-12)
        assert wg.trace(lambda x: stats.truncnorm.logsf(x, a, b), x)(x) == \
            pytest.approx(float(mpmath.log(1 - want_cdf)), rel=1e-12)
    # gumbel's tails: exp(-e^-z) and its complement without cancellation
    assert wg.trace(stats.gumbel_r.sf, 40.0)(40.0) == pytest.approx(math.exp(-40), rel=1e-15)
    assert wg.trace(stats.gumbel_l.cdf, -40.0)(-40.0) == pytest.approx(math.exp(-40), rel=1e-15)
    assert wg.trace(stats.expon.logcdf, 1e-20)(1e-20) == pytest.approx(math.log(1e-20), rel=1e-15)
    # truncnorm's logcdf next to 0 (log1p of the small sf, not a difference of log masses)
    x, a = 2 * math.pi, 0.5
    sf = (phi(-x)) / phi(-a)
    assert wg.trace(lambda x: stats.truncnorm.logcdf(x, a, np.inf), x)(x) == \
        pytest.approx(float(mpmath.log1p(-sf)), rel=1e-14)
    # wrapcauchy for c next to 1 and z next to 0: 1 + c² - 2c cos z cancels
    for c, z in ((0.999, 0.0), (0.999, 1e-3), (1 - 1e-9, 0.5)):
        c_, z_ = mpmath.mpf(c), mpmath.mpf(z)
        exact = mpmath.log((1 - c_ ** 2)
                           / (2 * mpmath.pi * (1 + c_ ** 2 - 2 * c_ * mpmath.cos(z_))))
        assert wg.trace(lambda z: stats.wrapcauchy.logpdf(z, c), z)(z) == \
            pytest.approx(float(exact), rel=1e-14)


# ---- quantiles ---------------------------------------------------------------------------
# "distribution.method" -> its shape parameters, before loc and scale
QUANTILES = {"cauchy.ppf": (), "cauchy.isf": (), "expon.ppf": (), "gumbel_r.ppf": (),
             "gumbel_l.ppf": (), "logistic.ppf": (), "logistic.isf": (), "pareto.ppf": (2.5,),
             "uniform.ppf": ()}


def quantile(module, name):
    """QUANTILES[name] of `module` (wengert's stats or SciPy's), as f(q, loc, scale)."""
    dist, method = name.split(".")
    fn, shape = getattr(getattr(module, dist), method), QUANTILES[name]
    return lambda q, loc, s: fn(q, *shape, loc, s)


EDGE_Q = np.array([-0.5, 0.0, 1e-300, 1e-10, 0.25, 0.5, 0.75, 1 - 1e-10, 1.0, 1.5, np.nan])


@pytest.mark.parametrize("name", sorted(QUANTILES))
def test_quantiles_equal_scipys_and_differentiate(name):
    f, ref = quantile(stats, name), quantile(st, name)
    q, loc, s = u(0.05, 0.95), one(-1, 1), one(0.5, 2)
    assert_close(wg.trace(f, q, loc, s)(q, loc, s), ref(q, loc, s), rtol=1e-13, atol=1e-15)
    check_grads(f, q, loc, s, order=2, rtol=1e-5, atol=1e-7)
    for loc, s in ((0.3, 1.5), (0.0, 0.0), (0.0, -1.0), (np.nan, 1.0)):
        with np.errstate(all="ignore"):
            expected = ref(EDGE_Q, loc, s)
        got = wg.trace(lambda q: f(q, loc, s), EDGE_Q)(EDGE_Q)
        # (SciPy's tan(πq - π/2) keeps no more than 1e-16 absolute next to q = 0 and 1)
        rtol = 1e-6 if name.startswith("cauchy") else 1e-13
        assert_close(got, expected, rtol=rtol, atol=0)


def test_quantiles_invert_the_distribution_functions():
    q = u(0.01, 0.99, 6)
    for dist, cdf_of in (("cauchy", "cdf"), ("expon", "cdf"), ("gumbel_r", "cdf"),
                         ("gumbel_l", "cdf"), ("logistic", "cdf"), ("uniform", "cdf")):
        d = getattr(stats, dist)
        x = wg.trace(lambda q: d.ppf(q, 0.4, 1.7), q)(q)
        assert_close(getattr(st, dist).cdf(x, 0.4, 1.7), q, rtol=1e-12, atol=0)
        # d ppf/dq = 1/pdf(ppf(q))
        g = wg.grad(lambda q: np.sum(d.ppf(q, 0.4, 1.7)))(q)
        assert_close(g, 1 / getattr(st, dist).pdf(x, 0.4, 1.7), rtol=1e-10, atol=0)


# ---- against JAX -------------------------------------------------------------------------
@pytest.mark.parametrize("dist,method", CONTINUOUS_CASES)
def test_continuous_values_and_gradients_equal_jaxs(dist, method, jax):
    import jax.scipy.stats as js
    jf = getattr(getattr(js, dist), method, None)
    if jf is None:
        pytest.skip(f"jax.scipy.stats.{dist} has no {method}")
    args = CONTINUOUS[dist][1]()
    if dist in ("gennorm", "vonmises", "wrapcauchy"):
        args = args[:2]                    # (JAX's take no loc and scale)
    f, _ = _both(dist, method)
    assert_close(wg.trace(f, *args)(*args), jf(*args), rtol=1e-11, atol=1e-300)
    # (JAX's gumbel_r and gumbel_l fail to differentiate in scale: their xlogy(-1, scale)
    # has an integer -1, whose tangent is a float0, in JAX 0.10)
    argnums = tuple(range(len(args) - (dist in ("gumbel_r", "gumbel_l"))))
    ours = wg.grad(lambda *a: np.sum(f(*a)), argnums=argnums)(*args)
    theirs = jax.grad(lambda *a: jax.numpy.sum(jf(*a)), argnums=argnums)(*args)
    for a, b in zip(ours, theirs):
        assert_close(a, np.asarray(b), rtol=1e-9, atol=1e-12)


# ---- discrete ----------------------------------------------------------------------------
# name -> (sampler of the continuous parameters, the call with counts k)
K = np.array([-1.0, 0.0, 1.0, 2.0, 2.5, 3.0, 5.0, 7.0, np.nan])
DISCRETE = {
    "bernoulli": (lambda: (one(0.1, 0.9),), lambda f, k, p: f(k, p)),
    "binom": (lambda: (one(0.1, 0.9),), lambda f, k, p: f(k, 5, p)),
    "betabinom": (lambda: (one(0.5, 3), one(0.5, 3)), lambda f, k, a, b: f(k, 5, a, b)),
    "geom": (lambda: (one(0.1, 0.9),), lambda f, k, p: f(k, p)),
    "nbinom": (lambda: (one(0.5, 4), one(0.1, 0.9)), lambda f, k, n, p: f(k, n, p)),
}
DISCRETE_CASES = [(d, m) for d in DISCRETE for m in ("logpmf", "pmf")]


@pytest.mark.parametrize("dist,method", DISCRETE_CASES)
def test_discrete_values_equal_scipys_and_differentiate_to_second_order(dist, method):
    sample, call = DISCRETE[dist]
    f, ref = _both(dist, method)
    params = sample()
    with np.errstate(all="ignore"):
        expected = call(ref, K, *params)
    np.testing.assert_array_equal(call(f, K, *params), expected)
    assert_close(wg.trace(lambda *p: call(f, K, *p), *params)(*params), expected,
                 rtol=1e-12, atol=1e-300)
    with np.errstate(all="ignore"):
        inside = K[call(ref, K, *params) > 0]            # (the support: finite logs)
    check_grads(lambda *p: call(f, inside, *p), *params, order=2, rtol=1e-5, atol=1e-7)
    # the counts are constants: a derivative in k (and loc) is 0
    assert np.all(wg.grad(lambda k: np.sum(call(f, k, *params)))(inside) == 0)


DISCRETE_EDGES = {
    "bernoulli": [(0.0,), (1.0,), (-0.1,), (1.1,), (np.nan,)],
    "binom": [(0.0,), (1.0,), (-0.1,), (1.5,), (np.nan,)],
    "betabinom": [(0.0, 1.0), (-1.0, 1.0), (1e-3, 1e3), (np.nan, 1.0)],
    "geom": [(1.0,), (0.0,), (1e-300,), (1.1,), (np.nan,)],
    "nbinom": [(2.5, 1.0), (0.0, 0.5), (-1.0, 0.5), (2.0, 0.0), (1e-3, 0.5), (2.0, np.nan)],
}


@pytest.mark.parametrize("dist,method", DISCRETE_CASES)
def test_discrete_edges_and_invalid_parameters_are_scipys(dist, method):
    _, call = DISCRETE[dist]
    f, ref = _both(dist, method)
    for params in DISCRETE_EDGES[dist]:
        with np.errstate(all="ignore"):
            expected = call(ref, K, *params)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got, _ = wg.vjp(lambda *p: call(f, K, *p), *params)
        assert_close(got, expected, rtol=1e-12, atol=1e-300)
    # n of binom and betabinom: whole and >= 0, else nan, as SciPy's
    if dist in ("binom", "betabinom"):
        for n in (2.5, -1.0, np.inf, 0.0):
            shapes = (0.3,) if dist == "binom" else (1.5, 2.0)
            with np.errstate(all="ignore"):
                expected = getattr(getattr(st, dist), method)(K, n, *shapes)
            with np.errstate(all="ignore"):
                got = wg.trace(lambda s: getattr(getattr(stats, dist), method)(
                    K, n, s, *shapes[1:]), shapes[0])(shapes[0])
            assert_close(got, expected, rtol=1e-12, atol=1e-300)


def _one_sided(f, x, h=1e-7):
    return (f(x + h) - f(x)) / h if x == 0 else (f(x) - f(x - h)) / h


def test_pmfs_differentiate_at_the_edges_of_their_parameters():
    # exp(logpmf) would have 0 · inf = nan there; the power itself has the limit
    for k, p in ((0, 0.0), (1, 0.0), (0, 1.0), (1, 1.0)):
        g = wg.grad(stats.bernoulli.pmf, argnums=1)(k, p)
        assert g == (1.0 if k == 1 else -1.0)
    for k in range(5):
        for p in (0.0, 1.0):
            g = wg.grad(stats.binom.pmf, argnums=2)(k, 4, p)
            fd = _one_sided(lambda p: st.binom.pmf(k, 4, p), p)
            assert g == pytest.approx(fd, abs=1e-5), (k, p)
    for k in (1, 2, 3):
        g = wg.grad(stats.geom.pmf, argnums=1)(k, 1.0)
        assert g == pytest.approx(_one_sided(lambda p: st.geom.pmf(k, p), 1.0), abs=1e-5)
    for k in (0, 1, 2):
        g = wg.grad(stats.nbinom.pmf, argnums=2)(k, 2.5, 1.0)
        assert g == pytest.approx(_one_sided(lambda p: st.nbinom.pmf(k, 2.5, p), 1.0), abs=1e-5)
    # and inside, to second order
    check_grads(lambda p: stats.binom.pmf(np.arange(5.0), 4, p), np.array(0.3), order=2)
    check_grads(lambda p: stats.geom.pmf(np.arange(1.0, 4.0), p), np.array(0.6), order=2)


def test_bernoulli_cdf_and_ppf():
    k = np.array([-1.0, 0.0, 0.5, 1.0, 2.0, np.nan])
    for p in (0.3, 0.0, 1.0, -0.1, np.nan):
        with np.errstate(all="ignore"):
            assert_close(wg.trace(lambda p: stats.bernoulli.cdf(k, p), p)(p),
                         st.bernoulli.cdf(k, p), rtol=0, atol=0)
            q = np.array([-0.1, 0.0, 0.2, 0.7, 0.71, 1.0, np.nan])
            assert_close(wg.trace(lambda p: stats.bernoulli.ppf(q, p), p)(p),
                         st.bernoulli.ppf(q, p), rtol=0, atol=0)
    assert wg.grad(lambda p: np.sum(stats.bernoulli.cdf(k[:5], p)))(0.3) == -2.0
    assert_close(wg.trace(lambda p: stats.bernoulli.ppf(q, p, loc=2), 0.3)(0.3),
                 st.bernoulli.ppf(q, 0.3, loc=2), rtol=0, atol=0)


def test_multinomial():
    mn, ref = stats.multinomial, st.multinomial
    p = np.array([0.2, 0.3, 0.5])
    x = np.array([[1, 2, 1], [0, 0, 4], [1, 2.5, 0.5], [-1, 4, 1], [2, 2, 2], [1, 2, np.nan]])
    with np.errstate(all="ignore"):
        expected = np.array([ref.logpmf(x[i], 4, p) if i < 5 else np.nan for i in range(6)])
    for method in ("logpmf", "pmf"):
        f = getattr(mn, method)
        want = expected if method == "logpmf" else np.exp(expected)
        assert_close(wg.trace(lambda p: f(x, 4, p), p)(p), want, rtol=1e-13, atol=0)
    # derivative: x_i/p_i, on the simplex (SciPy's reading: p as given)
    assert_close(wg.grad(lambda p: mn.logpmf(x[0], 4, p))(p), x[0] / p, rtol=1e-14, atol=0)
    # second order along the simplex (off it SciPy replaces the last entry)
    tangent = lambda t: p + t[0] * np.array([1.0, -1.0, 0.0]) + t[1] * np.array([0, 1.0, -1.0])
    check_grads(lambda t: mn.logpmf(x[:2], 4, tangent(t)), np.zeros(2), order=2)
    check_grads(lambda t: mn.pmf(x[:2], 4, tangent(t)), np.zeros(2), order=2)
    # off the simplex: SciPy's last entry 1 - the others' sum (SciPy warns of nan from 1.18)
    q = np.array([0.2, 0.3, 0.9])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        assert_close(wg.trace(lambda q: mn.logpmf(x[0], 4, q), q)(q), ref.logpmf(x[0], 4, q),
                     rtol=1e-14, atol=0)
    assert wg.grad(lambda q: mn.logpmf(x[0], 4, q))(q)[2] == 0.0
    # p outside [0, 1], n < 0: nan; n is truncated as SciPy's int(n)
    bad = np.array([0.2, -0.3, 1.1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        assert np.isnan(wg.trace(lambda p: mn.logpmf(x[0], 4, p), bad)(bad))
        assert np.isnan(ref.logpmf(x[0], 4, bad))
    for n in (4.5, -4):
        assert_close(wg.trace(lambda p: mn.logpmf(x[0], n, p), p)(p), ref.logpmf(x[0], n, p),
                     rtol=1e-14, atol=0)
    # a zero probability with a count: pmf 0, its derivative the power's limit
    z = np.array([0.0, 1.0])
    assert mn.pmf(np.array([1, 1]), 2, z) == 0.0
    assert_close(wg.grad(lambda z: mn.pmf(np.array([1, 1]), 2, z))(z), [2.0, 0.0], rtol=0,
                 atol=0)
    assert_close(wg.grad(lambda z: mn.pmf(np.array([0, 2]), 2, z))(z), [0.0, 2.0], rtol=0,
                 atol=0)
    # batched parameters
    ps = np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    assert_close(wg.trace(lambda p: mn.logpmf(x[:2], [4, 4], p), ps)(ps),
                 ref.logpmf(x[:2], [4, 4], ps), rtol=1e-13, atol=0)
    with pytest.raises(ValueError, match="3 categories .* and p 2"):
        wg.grad(lambda p: mn.logpmf(x[0], 4, p))(np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="x must be an array"):
        wg.grad(lambda p: mn.logpmf(3, 4, p))(p)


# ---- edges of the continuous derivatives -------------------------------------------------
def test_continuous_derivatives_at_the_seams():
    # laplace's cdf at its median: the density, 1/2 (each half's exp of its own half)
    assert wg.grad(stats.laplace.cdf)(0.0) == 0.5
    assert wg.grad(stats.laplace.cdf, argnums=1)(1.0, 1.0) == -0.5
    # gennorm's cdf at z = 0: the density β/(2Γ(1/β)), for β below and above 1
    for beta in (0.5, 1.0, 2.0, 5.0):
        g = wg.grad(stats.gennorm.cdf)(0.0, beta)
        assert g == pytest.approx(st.gennorm.pdf(0.0, beta), rel=1e-14)
        assert wg.grad(stats.gennorm.cdf, argnums=1)(0.0, beta) == 0.0
        assert np.isfinite(wg.grad(stats.gennorm.logpdf, argnums=(0, 1))(0.0, beta)).all()
    # gennorm's cdf in beta: once (through the incomplete gamma function's partial)
    check_grads(lambda x, b: stats.gennorm.cdf(x, b), u(-2, 2), one(0.7, 3), order=1)
    # truncnorm's cdf and sf at the ends of the support: the density, not nan
    for a, b in ((-0.5, 1.0), (0.5, np.inf), (-np.inf, 0.2)):
        if np.isfinite(a):
            g = wg.grad(stats.truncnorm.cdf)(a, a, b)
            assert g == pytest.approx(st.truncnorm.pdf(a, a, b), rel=1e-13)
            ga = wg.grad(stats.truncnorm.cdf, argnums=1)(a, a, b)
            assert ga == pytest.approx(-st.truncnorm.pdf(a, a, b), rel=1e-13)
        if np.isfinite(b):
            g = wg.grad(stats.truncnorm.sf)(b, a, b)
            assert g == pytest.approx(-st.truncnorm.pdf(b, a, b), rel=1e-13)
    # truncnorm with infinite bounds differentiates in the finite one (no inf·0)
    for a, b, wrt in ((-np.inf, 0.7, 2), (0.3, np.inf, 1)):
        g = wg.grad(stats.truncnorm.logpdf, argnums=wrt)(0.1 if wrt == 2 else 0.5, a, b)
        h = 1e-6
        shift = lambda d: st.truncnorm.logpdf(0.1 if wrt == 2 else 0.5,
                                              a + d * (wrt == 1), b + d * (wrt == 2))
        assert g == pytest.approx((shift(h) - shift(-h)) / (2 * h), rel=1e-7)
    # the von Mises density's derivative in κ at κ = 0 is its one-sided one
    g = wg.grad(stats.vonmises.logpdf, argnums=1)(0.4, 0.0)
    assert g == pytest.approx(math.cos(0.4), rel=1e-14)
    x = u(-3, 3)            # (on both sides of κ = 1, where log I₀(κ) - κ turns to i0e)
    check_grads(lambda k: stats.vonmises.logpdf(x, k), np.array(0.99), order=2)
    check_grads(lambda k: stats.vonmises.logpdf(x, k), np.array(1.01), order=2)
    # logistic's log-density is smooth at 0 (its second derivative -1/2, not abs's kink)
    assert wg.hessian(stats.logistic.logpdf)(0.0) == -0.5
    # outside the support: derivatives in x are 0, in the parameters finite
    for f, x in ((lambda x, s: stats.expon.logpdf(x, 0.0, s), -1.0),
                 (lambda x, s: stats.pareto.logpdf(x, s), 0.5),
                 (lambda x, s: stats.wrapcauchy.logpdf(x, 0.5, 0.0, s), 10.0),
                 (lambda x, s: stats.truncnorm.cdf(x, -1.0, 1.0, 0.0, s), 3.0),
                 (lambda x, s: stats.uniform.logpdf(x, 0.0, s), 3.0)):
        g = wg.grad(f, argnums=(0, 1))(x, 1.5)
        assert g[0] == 0.0 and np.isfinite(g[1])


def test_invalid_parameters_give_nan_values_and_derivatives():
    # (points inside the support at the invalid parameter too: outside it a derivative in
    # the point is 0, the density not reading it)
    calls = [lambda s: stats.cauchy.logpdf(0.5, 0.0, s), lambda s: stats.expon.cdf(-0.5, 0.0, s),
             lambda s: stats.gennorm.logpdf(0.5, s), lambda s: stats.pareto.sf(2.0, s),
             lambda s: stats.truncnorm.logpdf(-0.5, 0.0, 1.0, 0.0, s),
             lambda s: stats.vonmises.logpdf(0.5, s), lambda s: stats.wrapcauchy.logpdf(0.5, s),
             lambda s: stats.binom.logpmf(1, 3, s), lambda s: stats.geom.pmf(2, s - 1.0),
             lambda s: stats.nbinom.logpmf(1, s, 0.5), lambda s: stats.betabinom.pmf(1, 3, s, 1.0)]
    for f in calls:
        for s in (-1.0, np.nan):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                value, _ = wg.vjp(f, s)
            assert np.isnan(value)
            with np.errstate(all="ignore"):
                assert np.isnan(wg.grad(f)(s))


# ---- transformations ---------------------------------------------------------------------
def test_compile_and_vmap_agree_with_eager():
    def loss(x, loc, s, p):
        return (np.sum(stats.cauchy.logpdf(x, loc, s)) + np.sum(stats.expon.logsf(x, loc, s))
                + np.sum(stats.gumbel_r.logcdf(x, loc, s)) + np.sum(stats.laplace.cdf(x, loc, s))
                + np.sum(stats.logistic.logpdf(x, loc, s))
                + np.sum(stats.truncnorm.logcdf(x, -1.0, 2.0, loc, s))
                + np.sum(stats.binom.logpmf(np.arange(4.0), 3, p))
                + np.sum(stats.nbinom.pmf(np.arange(4.0), s, p))
                + np.sum(stats.gennorm.logpdf(x, s + 1)) + np.sum(stats.vonmises.logpdf(x, s)))
    args = (u(0.1, 2), 0.05, 1.3, 0.4)
    for f in (loss, wg.grad(loss, argnums=(0, 1, 2, 3))):
        compiled = wg.compile(f, *args)
        for a in (args, (u(0.1, 2), -0.02, 0.8, 0.7)):
            for got, want in zip(wg.tree.flatten(compiled(*a))[0], wg.tree.flatten(f(*a))[0]):
                assert_close(got, want, rtol=1e-13, atol=1e-13)
    # vmap over parameters and points: one batched call, the values of the loop
    scales = u(0.5, 2, 3)
    xs = rng.uniform(0.1, 2, size=(3, 4))
    for f in (lambda x, s: stats.truncnorm.logpdf(x, -1.0, 2.0, 0.0, s),
              lambda x, s: stats.pareto.logcdf(x + 1, s),
              lambda x, s: stats.betabinom.logpmf(np.arange(4.0), 3, s, 2.0),
              lambda x, s: stats.wrapcauchy.pdf(x, s / 3)):
        got = wg.vmap(f)(xs, scales)
        want = np.stack([f(x, s) for x, s in zip(xs, scales)])
        assert_close(got, want, rtol=1e-13, atol=0)
        g = wg.vmap(wg.grad(lambda x, s: np.sum(f(x, s)), argnums=1))(xs, scales)
        assert_close(g, [wg.grad(lambda s: np.sum(f(x, s)))(s) for x, s in zip(xs, scales)],
                     rtol=1e-12, atol=0)


def test_float32_stays_float32():
    x = np.array([0.3, 0.6], np.float32)
    calls = [lambda x: stats.cauchy.logpdf(x), lambda x: stats.expon.cdf(x, 0, 2),
             lambda x: stats.gumbel_l.logsf(x), lambda x: stats.logistic.sf(x, 1),
             lambda x: stats.pareto.logpdf(x + 1, 2), lambda x: stats.uniform.logpdf(x),
             lambda x: stats.truncnorm.logpdf(x, -1, 1), lambda x: stats.laplace.cdf(x),
             lambda x: stats.vonmises.logpdf(x, 2), lambda x: stats.wrapcauchy.logpdf(x, 0.5),
             lambda p: stats.binom.logpmf(2, 5, p), lambda p: stats.geom.pmf(2, p),
             lambda p: stats.bernoulli.logpmf(1, p)]
    for f in calls:
        assert wg.trace(f, x).outputs[0].dtype == np.float32
        assert wg.grad(lambda x: np.sum(f(x)))(x).dtype == np.float32


def test_complex_arguments_are_refused():
    with pytest.raises(TypeError, match="cauchy.logpdf of a complex"):
        wg.grad(lambda x: np.real(stats.cauchy.logpdf(x * (1 + 1j))))(0.5)


def test_distributions_import_as_autograds_modules_do():
    import importlib
    for name in ("expon", "truncnorm", "multinomial"):
        module = importlib.import_module(f"wengert.scipy.stats.{name}")
        assert module.logpdf if name != "multinomial" else module.logpmf


# ---- sem, rankdata, mode -----------------------------------------------------------------
def test_sem_equals_scipys_and_differentiates():
    a = rng.normal(size=(4, 5))
    for kwargs in ({}, {"axis": 1}, {"axis": None}, {"ddof": 0}, {"axis": -1, "keepdims": True},
                   {"axis": None, "keepdims": True}):
        expected = st.sem(a, **kwargs)
        got = wg.trace(lambda a: stats.sem(a, **kwargs), a)(a)
        assert np.shape(got) == np.shape(expected)
        assert_close(got, expected, rtol=1e-13, atol=0)
        check_grads(lambda a: stats.sem(a, **kwargs), a, order=2)
    b = a.copy()
    b[1, 2] = b[3, 0] = np.nan
    for policy in ("propagate", "omit"):
        assert_close(wg.trace(lambda b: stats.sem(b, nan_policy=policy), b)(b),
                     st.sem(b, nan_policy=policy), rtol=1e-13, atol=0)
    with pytest.raises(ValueError, match="nan"):
        wg.grad(lambda b: np.sum(stats.sem(b, nan_policy="raise")))(b)
    with pytest.raises(ValueError, match="nan_policy"):
        wg.grad(lambda a: np.sum(stats.sem(a, nan_policy="drop")))(a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isnan(st.sem(np.ones(1)))
    assert np.isnan(wg.trace(stats.sem, np.ones(1))(np.ones(1)))
    # derivative in closed form: (a - mean)/(n (n - 1) sem)
    v = a[0]
    assert_close(wg.grad(stats.sem)(v), (v - v.mean()) / (5 * 4 * st.sem(v)), rtol=1e-13,
                 atol=0)


@pytest.mark.parametrize("method", ["average", "min", "max", "dense", "ordinal"])
def test_rankdata_equals_scipys(method):
    a = rng.integers(0, 4, size=(3, 7)).astype(float)        # many ties
    for axis in (None, 0, 1, -1):
        expected = st.rankdata(a, method=method, axis=axis)
        for got in (wg.trace(lambda a: stats.rankdata(a, method, axis=axis), a)(a),
                    wg.compile(lambda a: stats.rankdata(a, method, axis=axis), a)(a)):
            np.testing.assert_array_equal(got, expected)
    b = a.copy()
    b[0, 3] = b[2, 0] = np.nan
    for policy in ("propagate", "omit"):
        expected = st.rankdata(b, method=method, axis=1, nan_policy=policy)
        got = wg.trace(lambda b: stats.rankdata(b, method, axis=1, nan_policy=policy), b)(b)
        np.testing.assert_array_equal(got, expected)
    # under vmap, one row each
    np.testing.assert_array_equal(wg.vmap(lambda r: stats.rankdata(r, method))(a),
                                  st.rankdata(a, method=method, axis=1))
    # no derivative: the ranks are piecewise constant
    assert np.all(wg.grad(lambda a: np.sum(stats.rankdata(a, method) * a))(a[0])
                  == st.rankdata(a[0], method=method))


def test_rankdata_and_mode_refuse_bad_arguments():
    a = np.array([1.0, 2.0])
    with pytest.raises(ValueError, match="unknown method"):
        wg.trace(lambda a: stats.rankdata(a, "mean"), a)
    with pytest.raises(np.exceptions.AxisError):
        wg.trace(lambda a: stats.mode(a, axis=2), a)
    with pytest.raises(wg.errors.ConcretizationError, match="nan_policy='raise'"):
        wg.compile(lambda a: stats.rankdata(a, nan_policy="raise"), a)
    with pytest.raises(ValueError, match="contains nan"):
        wg.grad(lambda a: np.sum(stats.rankdata(a, nan_policy="raise") * a))(a * np.nan)


def test_mode_equals_scipys():
    a = rng.integers(0, 4, size=(5, 6)).astype(float)
    for axis, keepdims in ((0, False), (1, False), (None, False), (1, True), (None, True)):
        want = st.mode(a, axis=axis, keepdims=keepdims)
        for got in (wg.trace(lambda a: tuple(stats.mode(a, axis, keepdims=keepdims)), a)(a),
                    wg.compile(lambda a: tuple(stats.mode(a, axis, keepdims=keepdims)), a)(a)):
            np.testing.assert_array_equal(got[0], want.mode)
            np.testing.assert_array_equal(got[1], want.count)
    # nans are one value, as SciPy's np.unique counts them; 'omit' leaves them out
    for row in ([1.0, np.nan, np.nan], [2.0, np.nan, 2.0], [np.nan, np.nan, 3.0, 3.0, 3.0]):
        r = np.array(row)
        for policy in ("propagate", "omit"):
            want = st.mode(r, nan_policy=policy)
            got = stats.mode(wg.Graph().input(r), nan_policy=policy)
            np.testing.assert_array_equal(got.mode.value, want.mode)
            assert got.count.value == want.count
    result = stats.mode(wg.Graph().input(a[0]))
    assert type(result) is type(st.mode(a[0]))
    # the mode is one of a's values, held where a tie would move: no derivative
    assert np.all(wg.grad(lambda a: stats.mode(a).mode)(a[0]) == 0)
    np.testing.assert_array_equal(wg.vmap(lambda r: stats.mode(r).mode)(a),
                                  st.mode(a, axis=1).mode)


# ---- gaussian_kde ------------------------------------------------------------------------
KDE_CASES = [
    (lambda: rng.normal(size=30), {}),
    (lambda: rng.normal(size=30), {"bw_method": "silverman"}),
    (lambda: rng.normal(size=30), {"bw_method": 0.4}),
    (lambda: rng.normal(size=(2, 40)), {}),
    (lambda: rng.normal(size=(2, 40)), {"weights": rng.uniform(0.5, 2, 40)}),
    (lambda: rng.normal(size=(3, 25)), {"bw_method": lambda kde: 0.5 * kde.scotts_factor()}),
]


@pytest.mark.parametrize("case", range(len(KDE_CASES)))
def test_gaussian_kde_equals_scipys(case):
    sample, kwargs = KDE_CASES[case]
    data = sample()
    ref = st.gaussian_kde(data, **kwargs)
    d = ref.d
    points = rng.normal(size=(d, 7)) * 2
    ours = stats.gaussian_kde(data, **kwargs)
    np.testing.assert_array_equal(ours.evaluate(points), ref.evaluate(points))  # SciPy's
    traced = lambda data, points: stats.gaussian_kde(data, **kwargs)
    for method in ("evaluate", "pdf", "logpdf", "__call__"):
        want = getattr(ref, method)(points)
        got = wg.trace(lambda data, pts: getattr(traced(data, pts), method)(pts), data,
                       points)(data, points)
        assert_close(got, want, rtol=1e-11, atol=0)
    kde = wg.trace(lambda data: stats.gaussian_kde(data, **kwargs).covariance, data)(data)
    assert_close(kde, ref.covariance, rtol=1e-12, atol=0)
    # far away the density underflows but its log does not
    far = np.full((d, 1), 60.0)
    got = wg.trace(lambda data: stats.gaussian_kde(data, **kwargs).logpdf(far), data)(data)
    assert_close(got, ref.logpdf(far), rtol=1e-10, atol=0)
    assert np.isfinite(got).all()


def test_gaussian_kde_derivatives():
    data, w = rng.normal(size=(2, 12)), rng.uniform(0.5, 2, 12)
    points = rng.normal(size=(2, 3))
    check_grads(lambda x: stats.gaussian_kde(data).logpdf(x), points, order=2)
    check_grads(lambda d: stats.gaussian_kde(d).pdf(points), data, order=2)
    check_grads(lambda w: stats.gaussian_kde(data, weights=w).logpdf(points), w, order=2)
    check_grads(lambda b: stats.gaussian_kde(data, bw_method=b).logpdf(points),
                np.array(0.6), order=2)
    d1 = rng.normal(size=15)
    check_grads(lambda d, lo, hi: stats.gaussian_kde(d).integrate_box_1d(lo, hi), d1,
                np.array(-0.3), np.array(0.8), order=2)
    kde = stats.gaussian_kde(d1)
    for lo, hi in ((-0.3, 0.8), (-np.inf, 0.2), (1.0, np.inf)):
        assert_close(wg.trace(lambda d: stats.gaussian_kde(d).integrate_box_1d(lo, hi), d1)(d1),
                     st.gaussian_kde(d1).integrate_box_1d(lo, hi), rtol=1e-13, atol=0)
    # d/dhigh of the mass is the density at high
    assert wg.grad(kde.integrate_box_1d, argnums=1)(0.0, 0.4) == \
        pytest.approx(float(st.gaussian_kde(d1).pdf(0.4)[0]), rel=1e-13)
    # vmap over datasets, compile
    sets = rng.normal(size=(3, 20))
    got = wg.vmap(lambda d: stats.gaussian_kde(d).logpdf(np.array([0.1, 0.5])))(sets)
    assert_close(got, [st.gaussian_kde(d).logpdf([0.1, 0.5]) for d in sets], rtol=1e-11, atol=0)
    f = wg.compile(lambda d, x: stats.gaussian_kde(d).pdf(x), d1, np.zeros(4))
    x = u(-2, 2)
    assert_close(f(d1, x), st.gaussian_kde(d1).pdf(x), rtol=1e-11, atol=0)


def test_gaussian_kde_refuses_what_scipy_refuses():
    data = rng.normal(size=(2, 10))
    with pytest.raises(ValueError, match="dimension 3 for a dataset of dimension 2"):
        wg.grad(lambda x: np.sum(stats.gaussian_kde(data).logpdf(x)))(np.ones((3, 2)))
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        wg.grad(lambda d: np.sum(stats.gaussian_kde(d).pdf(np.zeros(2))))(np.ones((2, 5)))
    with pytest.raises(ValueError, match=r"shape \(2, 2, 2\).* \(d, n\)"):
        wg.grad(lambda d: np.sum(stats.gaussian_kde(d).pdf(0.0)))(np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="multiple elements"):
        wg.grad(lambda d: np.sum(stats.gaussian_kde(d).pdf(0.0)))(np.ones(1))
    with pytest.raises(ValueError, match="3 weights for 10 points"):
        wg.grad(lambda w: np.sum(stats.gaussian_kde(data, weights=w).pdf(np.zeros(2))))(
            np.ones(3))
    with pytest.raises(ValueError, match="bw_method"):
        stats.gaussian_kde(data, bw_method="wide")
    with pytest.raises(ValueError, match="only handles 1-D"):
        stats.gaussian_kde(data).integrate_box_1d(0.0, 1.0)
    with pytest.raises(NotImplementedError, match="resample"):
        wg.grad(lambda d: stats.gaussian_kde(d).resample(3)[0, 0])(data)
    # with plain arguments the other methods are SciPy's
    kde = stats.gaussian_kde(data)
    assert np.shape(kde.resample(4, seed=1)) == (2, 4)
    # one point as a vector, as SciPy reads it
    x = np.array([0.1, 0.2])
    assert_close(wg.trace(lambda d: stats.gaussian_kde(d).pdf(x), data)(data),
                 st.gaussian_kde(data).pdf(x), rtol=1e-12, atol=0)
