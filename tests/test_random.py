"""wengert.random, JAX's jax.random: keys, the bit engine, every distribution's law and
shape, determinism eagerly, compiled and vmapped, derivatives, and errors.

Statistical checks use fixed keys, so they are deterministic: their thresholds are loose
(a p-value above 1e-3, a moment within several standard errors) but fail on a wrong law.
"""
import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import special as sc, stats

import wengert as wg
import wengert.numpy as wnp
from wengert import random as jr
from wengert.primitives import random as R

from fd import assert_close

KEY = jr.PRNGKey(42)
F64, U32 = np.dtype(np.float64), np.dtype(np.uint32)


# ---- the bit engine -------------------------------------------------------------------------
def test_philox_is_numpys_bit_for_bit():
    rng = np.random.default_rng(0)
    for _ in range(5):
        key = rng.integers(0, 2 ** 63, size=2, dtype=np.uint64)
        ctr = rng.integers(0, 2 ** 63, size=4, dtype=np.uint64)
        ref = np.random.Philox(key=key, counter=ctr).random_raw(8)
        blocks = [R.philox(ctr[0] + np.uint64(b), ctr[1], ctr[2], ctr[3], key[0], key[1])
                  for b in (1, 2)]
        assert np.array_equal(np.concatenate([np.array(b) for b in blocks]), ref)


def test_vectorised_streams_equal_the_c_streams():
    keys = jr.split(KEY, 80)
    for count in (1, 5, 40):
        assert R._vectorise(len(keys), count)                # vectorised across keys
        fast = R.streams(keys, count)
        one_by_one = np.stack([R.streams(k[None], count)[0] for k in keys])    # C
        assert np.array_equal(fast, one_by_one)
        at = R.words_at(R.key64(keys)[:, None], np.arange(count)[None, :])
        assert np.array_equal(at, fast)


def test_uniform_words_are_exact_in_their_dtype():
    top = np.array([2 ** 64 - 1], np.uint64)
    for dtype in (np.float16, np.float32, np.float64):
        assert R.uniform_from(top, np.dtype(dtype))[0] < 1
        assert 0 < R.uniform_from(np.zeros(1, np.uint64), np.dtype(dtype), True)[0]
        assert R.uniform_from(top, np.dtype(dtype), True)[0] < 1
    u = jr.uniform(KEY, (100000,), dtype=np.float32)
    assert u.dtype == np.float32 and u.max() < 1 and u.min() >= 0


# ---- keys -----------------------------------------------------------------------------------
def test_prngkey_holds_the_seeds_bits_as_jax_does():
    assert jr.PRNGKey(0).tolist() == [0, 0] and jr.PRNGKey(7).tolist() == [0, 7]
    assert jr.PRNGKey(2 ** 40 + 3).tolist() == [256, 3]
    assert jr.PRNGKey(-1).tolist() == [2 ** 32 - 1] * 2
    assert jr.PRNGKey(np.uint32(5)).tolist() == [0, 5]
    assert jr.key(3).dtype == U32 and np.array_equal(jr.key(3), jr.PRNGKey(3))
    k = jr.PRNGKey(3)
    assert jr.key_data(k) is k and jr.wrap_key_data(k) is k and jr.clone(k) is k


def test_prngkey_is_jaxs(jax_random):
    for seed in (0, 7, 2 ** 40 + 3, -1, 12345):
        assert np.array_equal(jr.PRNGKey(seed), np.asarray(jax_random.PRNGKey(seed)))


def test_split_and_fold_in():
    k = jr.PRNGKey(0)
    assert jr.split(k).shape == (2, 2) and jr.split(k, 5).shape == (5, 2)
    assert jr.split(k, (2, 3)).shape == (2, 3, 2) and jr.split(k, 0).shape == (0, 2)
    assert np.array_equal(jr.split(k, (2, 3)).reshape(6, 2), jr.split(k, 6))
    many = jr.split(k, 1000)
    assert len({tuple(x) for x in many.tolist()}) == 1000
    assert not any((x == k).all() for x in many)
    folded = np.stack([jr.fold_in(k, i) for i in range(100)])
    assert len({tuple(x) for x in folded.tolist()}) == 100
    assert np.array_equal(jr.fold_in(k, 3), jr.fold_in(k, np.int64(3)))
    assert not np.array_equal(jr.fold_in(k, 0), jr.split(k, 1)[0])     # other domains
    # a traced counter, as in a training loop's fold_in(key, step)
    step = wg.jit(lambda key, i: jr.normal(jr.fold_in(key, i), (3,)))
    for i in (0, 5):
        assert np.array_equal(step(k, i), jr.normal(jr.fold_in(k, i), (3,)))


# ---- determinism: eagerly, compiled, vmapped ------------------------------------------------
A3 = np.array([0.3, 1.0, 4.0])
DRAWS = {
    "normal": lambda k: jr.normal(k, (5,)),
    "normal32": lambda k: jr.normal(k, (3,), np.float32),
    "complex": lambda k: jr.normal(k, (3,), np.complex128),
    "uniform": lambda k: jr.uniform(k, (2, 3), minval=-1.0, maxval=np.array([1.0, 2.0, 3.0])),
    "bernoulli": lambda k: jr.bernoulli(k, np.array([0.2, 0.5, 0.9])),
    "categorical": lambda k: jr.categorical(k, np.log(np.array([[0.2, 0.8], [0.5, 0.5]]))),
    "categorical_noreplace": lambda k: jr.categorical(k, np.zeros(6), shape=(3,),
                                                      replace=False),
    "randint": lambda k: jr.randint(k, (6,), -3, 9),
    "choice": lambda k: jr.choice(k, 7, (4,)),
    "choice_noreplace": lambda k: jr.choice(k, 7, (4,), replace=False),
    "choice_p": lambda k: jr.choice(k, np.arange(4.0), (5,), p=np.array([0.1, 0.2, 0.3, 0.4])),
    "choice_p_noreplace": lambda k: jr.choice(k, 4, (2,), replace=False,
                                              p=np.array([0.1, 0.2, 0.3, 0.4])),
    "permutation": lambda k: jr.permutation(k, 6),
    "permutation_array": lambda k: jr.permutation(k, np.arange(8.0).reshape(4, 2)),
    "permutation_independent": lambda k: jr.permutation(k, np.arange(8.0).reshape(4, 2),
                                                        axis=1, independent=True),
    "truncated_normal": lambda k: jr.truncated_normal(k, np.array([-1.0, 2.0, -5.0]), 3.0),
    "multivariate_normal": lambda k: jr.multivariate_normal(
        k, np.ones(2), np.array([[2.0, 0.3], [0.3, 1.0]]), (3,)),
    "gamma": lambda k: jr.gamma(k, A3),
    "loggamma": lambda k: jr.loggamma(k, np.array([1e-3, 0.5, 20.0])),
    "beta": lambda k: jr.beta(k, A3, 2.0),
    "dirichlet": lambda k: jr.dirichlet(k, A3, (2,)),
    "exponential": lambda k: jr.exponential(k, (3,)),
    "laplace": lambda k: jr.laplace(k, (3,)),
    "logistic": lambda k: jr.logistic(k, (3,)),
    "gumbel": lambda k: jr.gumbel(k, (3,)),
    "cauchy": lambda k: jr.cauchy(k, (3,)),
    "poisson": lambda k: jr.poisson(k, np.array([0.5, 3.0, 15.0, 1e4])),
    "t": lambda k: jr.t(k, A3),
    "rademacher": lambda k: jr.rademacher(k, (4,)),
    "orthogonal": lambda k: jr.orthogonal(k, 3),
    "bits": lambda k: jr.bits(k, (3,), np.uint32),
    "chisquare": lambda k: jr.chisquare(k, A3),
    "f": lambda k: jr.f(k, 3.0, 5.0, (2,)),
    "lognormal": lambda k: jr.lognormal(k, 0.5, (3,)),
    "pareto": lambda k: jr.pareto(k, 2.0, (3,)),
    "weibull_min": lambda k: jr.weibull_min(k, 2.0, 1.5, (3,)),
    "rayleigh": lambda k: jr.rayleigh(k, 2.0, (3,)),
    "maxwell": lambda k: jr.maxwell(k, (3,)),
    "geometric": lambda k: jr.geometric(k, 0.3, (3,)),
    "binomial": lambda k: jr.binomial(k, np.array([4.0, 30.0, 1e6]), np.array([0.3, 0.5, 0.9])),
    "multinomial": lambda k: jr.multinomial(k, np.array([7.0, 50.0]),
                                            np.array([0.1, 0.2, 0.3, 0.15, 0.25]), shape=(2,)),
    "triangular": lambda k: jr.triangular(k, 0.0, np.array([0.0, 1.0, 2.0]), 2.0),
    "wald": lambda k: jr.wald(k, np.array([0.5, 3.0, 1e3])),
    "generalized_normal": lambda k: jr.generalized_normal(k, np.array([0.5, 2.0, 50.0]), (3,)),
    "double_sided_maxwell": lambda k: jr.double_sided_maxwell(k, np.zeros(2), 2.0, (3,)),
    "ball": lambda k: jr.ball(k, 3, 1.5, (2,)),
    "split": lambda k: jr.split(k, 3),
    "fold_in": lambda k: jr.fold_in(k, 7),
}


def _equal(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_same_key_same_draw_eager_compiled_vmapped(name):
    draw = DRAWS[name]
    first = draw(KEY)
    assert _equal(draw(KEY), first)
    assert not _equal(draw(jr.PRNGKey(43)), first)
    compiled = wg.jit(draw)
    assert _equal(compiled(KEY), first)
    other = jr.PRNGKey(7)
    assert _equal(compiled(other), draw(other))            # not a constant of the trace
    keys = jr.split(KEY, 4)
    assert _equal(wg.vmap(draw)(keys), np.stack([draw(k) for k in keys]))
    assert _equal(wg.jit(wg.vmap(draw))(keys), np.stack([draw(k) for k in keys]))


def test_vmap_runs_a_batch_of_keys_without_a_loop(loops):
    keys = jr.split(KEY, 64)                 # (enough keys for philox across them)
    for name in ("normal", "gamma", "loggamma", "poisson", "randint", "split", "fold_in",
                 "uniform", "bits", "complex", "binomial", "multinomial", "wald",
                 "generalized_normal", "ball"):
        got = wg.vmap(DRAWS[name])(keys)
        assert _equal(got, np.stack([DRAWS[name](k) for k in keys])), name
    assert not loops
    # and over a parameter with one key: each example as it would be drawn alone
    a = np.array([0.2, 1.0, 7.0])
    got = wg.vmap(lambda a: jr.gamma(KEY, a, (2,)))(a)
    assert _equal(got, np.stack([jr.gamma(KEY, x, (2,)) for x in a]))
    got = wg.vmap(lambda i: jr.fold_in(KEY, i))(np.arange(5))
    assert _equal(got, np.stack([jr.fold_in(KEY, i) for i in range(5)]))
    nested = wg.vmap(wg.vmap(lambda k: jr.normal(k, (2,))))(jr.split(KEY, (2, 3)))
    assert _equal(nested, np.array([[jr.normal(k, (2,)) for k in row]
                                    for row in jr.split(KEY, (2, 3))]))
    assert not loops


def test_large_draws_per_key_under_vmap_take_the_c_streams():
    keys = jr.split(KEY, 3)
    assert not R._vectorise(3, 200)
    got = wg.vmap(lambda k: jr.normal(k, (200,)))(keys)
    assert _equal(got, np.stack([jr.normal(k, (200,)) for k in keys]))


# ---- independence ---------------------------------------------------------------------------
def test_split_and_fold_in_streams_are_uncorrelated():
    n = 20000
    bound = 4 / math.sqrt(n)                       # four standard errors
    k1, k2 = jr.split(KEY)
    pairs = [(jr.normal(k1, (n,)), jr.normal(k2, (n,))),
             (jr.normal(KEY, (n,)), jr.normal(k1, (n,))),               # parent, child
             (jr.normal(jr.fold_in(KEY, 0), (n,)), jr.normal(jr.fold_in(KEY, 1), (n,))),
             (jr.normal(jr.PRNGKey(0), (n,)), jr.normal(jr.PRNGKey(1), (n,))),
             (jr.uniform(k1, (n,)), jr.normal(k2, (n,)))]
    for a, b in pairs:
        assert abs(np.corrcoef(a, b)[0, 1]) < bound
    # many keys, one number each: the numbers of consecutive keys are unrelated
    firsts = wg.vmap(lambda k: jr.uniform(k))(jr.split(KEY, n))
    assert abs(np.corrcoef(firsts[:-1], firsts[1:])[0, 1]) < bound
    assert stats.kstest(firsts, "uniform").pvalue > 1e-3
    # and jointly uniform: a chi-square test on a 10 x 10 grid of pairs
    u1, u2 = jr.uniform(k1, (n,)), jr.uniform(k2, (n,))
    counts = np.histogram2d(u1, u2, bins=10, range=[[0, 1], [0, 1]])[0].ravel()
    assert stats.chisquare(counts).pvalue > 1e-3
    # lag correlations within one stream
    z = jr.normal(KEY, (n,))
    for lag in (1, 2, 3, 4):
        assert abs(np.corrcoef(z[:-lag], z[lag:])[0, 1]) < bound


# ---- laws -----------------------------------------------------------------------------------
N = 20000
CONTINUOUS = {
    "normal": (lambda k: jr.normal(k, (N,)), stats.norm()),
    "uniform": (lambda k: jr.uniform(k, (N,), minval=-2.0, maxval=3.0),
                stats.uniform(-2, 5)),
    "truncated_normal": (lambda k: jr.truncated_normal(k, -0.5, 2.0, (N,)),
                         stats.truncnorm(-0.5, 2.0)),
    "truncated_far_tail": (lambda k: jr.truncated_normal(k, 10.0, 11.0, (N,)),
                           stats.truncnorm(10.0, 11.0)),
    "truncated_left_tail": (lambda k: jr.truncated_normal(k, -np.inf, -8.0, (N,)),
                            stats.truncnorm(-np.inf, -8.0)),
    "gamma_small": (lambda k: jr.gamma(k, 0.2, (N,)), stats.gamma(0.2)),
    "gamma_one": (lambda k: jr.gamma(k, 1.0, (N,)), stats.gamma(1.0)),
    "gamma_large": (lambda k: jr.gamma(k, 50.0, (N,)), stats.gamma(50.0)),
    "beta": (lambda k: jr.beta(k, 0.5, 3.0, (N,)), stats.beta(0.5, 3.0)),
    "exponential": (lambda k: jr.exponential(k, (N,)), stats.expon()),
    "laplace": (lambda k: jr.laplace(k, (N,)), stats.laplace()),
    "logistic": (lambda k: jr.logistic(k, (N,)), stats.logistic()),
    "gumbel": (lambda k: jr.gumbel(k, (N,)), stats.gumbel_r()),
    "cauchy": (lambda k: jr.cauchy(k, (N,)), stats.cauchy()),
    "t": (lambda k: jr.t(k, 3.0, (N,)), stats.t(3.0)),
    "chisquare": (lambda k: jr.chisquare(k, 3.0, (N,)), stats.chi2(3.0)),
    "f": (lambda k: jr.f(k, 4.0, 7.0, (N,)), stats.f(4.0, 7.0)),
    "lognormal": (lambda k: jr.lognormal(k, 0.7, (N,)), stats.lognorm(0.7)),
    "pareto": (lambda k: jr.pareto(k, 2.5, (N,)), stats.pareto(2.5)),
    "weibull_min": (lambda k: jr.weibull_min(k, 2.0, 1.7, (N,)),
                    stats.weibull_min(1.7, scale=2.0)),
    "rayleigh": (lambda k: jr.rayleigh(k, 1.5, (N,)), stats.rayleigh(scale=1.5)),
    "maxwell": (lambda k: jr.maxwell(k, (N,)), stats.maxwell()),
    "triangular": (lambda k: jr.triangular(k, -1.0, 0.5, 3.0, (N,)),
                   stats.triang(0.375, loc=-1.0, scale=4.0)),
    "triangular_at_left": (lambda k: jr.triangular(k, 0.0, 0.0, 2.0, (N,)),
                           stats.triang(0.0, scale=2.0)),
    "wald": (lambda k: jr.wald(k, 0.7, (N,)), stats.invgauss(0.7)),
    "wald_large_mean": (lambda k: jr.wald(k, 1e4, (N,)), stats.invgauss(1e4)),
    "generalized_normal_half": (lambda k: jr.generalized_normal(k, 0.5, (N,)),
                                stats.gennorm(0.5)),
    "generalized_normal_two": (lambda k: jr.generalized_normal(k, 2.0, (N,)), stats.gennorm(2)),
    # (|x|^p = G ~ Gamma(1/p) underflows for most draws at p = 300, and SciPy's gennorm
    # with it: the reference takes P(1/p, G) in logs there)
    "generalized_normal_large_p": (lambda k: jr.generalized_normal(k, 300.0, (N,)),
                                   SimpleNamespace(cdf=lambda x: _gennorm_cdf(x, 300.0))),
    "double_sided_maxwell": (lambda k: jr.double_sided_maxwell(k, 1.0, 2.0, (N,)),
                             SimpleNamespace(cdf=lambda x: 0.5 + np.sign(x - 1.0) * stats.maxwell(
                                 scale=2.0).cdf(np.abs(x - 1.0)) / 2)),
    # the norm of a point uniform in a d-ball is below r with probability r^d
    "ball_radius": (lambda k: np.sum(np.abs(jr.ball(k, 3, 1.5, (N,))) ** 1.5, -1) ** (1 / 1.5),
                    stats.powerlaw(3)),
    # a coordinate of a point uniform in the Euclidean 3-ball: density 3(1 - x²)/4
    "ball_coordinate": (lambda k: jr.ball(k, 3, shape=(N,))[:, 1],
                        SimpleNamespace(cdf=lambda x: (2 + 3 * x - x ** 3) / 4)),
}


def _gennorm_cdf(x, p):
    """The generalized normal's distribution function, 1/2 ± P(1/p, |x|^p)/2, with
    P(a, G) = G^a/Γ(a + 1)·(1 - a G/(a + 1)) where G is below 1e-300 (in logs: as a
    number, G would be 0)."""
    a, log_g = 1 / p, p * np.log(np.abs(x))
    tiny = log_g < math.log(1e-300)
    g = np.exp(np.where(tiny, 0.0, log_g))
    cdf = np.where(tiny, np.exp(a * log_g - sc.gammaln(a + 1)), sc.gammainc(a, g))
    return 0.5 + np.sign(x) * cdf / 2


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_continuous_laws_by_kolmogorov_smirnov(name):
    draw, law = CONTINUOUS[name]
    for seed in (1, 2):
        x = np.asarray(draw(jr.PRNGKey(seed)))
        assert np.all(np.isfinite(x))
        assert stats.kstest(x, law.cdf).pvalue > 1e-3


def _chi_square_pvalue(x, pmf, support):
    observed = np.array([np.sum(x == s) for s in support] + [np.sum(~np.isin(x, support))])
    expected = np.array([pmf(s) for s in support] + [0.0]) * len(x)
    expected[-1] = len(x) - expected[:-1].sum()
    keep = expected > 5                            # (pooling nothing: the tail is tiny)
    return stats.chisquare(observed[keep], expected[keep] * observed[keep].sum()
                           / expected[keep].sum()).pvalue


def test_discrete_laws_by_chi_square():
    k = jr.PRNGKey(5)
    for lam in (0.7, 6.0, 12.0, 80.0):            # inversion below 10, PTRS above
        x = jr.poisson(k, lam, (N,))
        support = np.arange(int(lam + 8 * math.sqrt(lam) + 10))
        assert _chi_square_pvalue(x, stats.poisson(lam).pmf, support) > 1e-3, lam
    x = jr.poisson(k, 1e6, (N,))
    assert abs(x.mean() - 1e6) < 5 * 1e3 / math.sqrt(N) and abs(x.std() / 1e3 - 1) < 0.03
    x = jr.geometric(k, 0.3, (N,))
    assert _chi_square_pvalue(x, stats.geom(0.3).pmf, np.arange(1, 30)) > 1e-3
    x = jr.randint(k, (N,), -3, 4)
    assert _chi_square_pvalue(x, lambda s: 1 / 7, np.arange(-3, 4)) > 1e-3
    p = np.array([0.1, 0.2, 0.3, 0.4])
    x = jr.categorical(k, np.log(p), shape=(N,))
    assert _chi_square_pvalue(x, lambda s: p[s], np.arange(4)) > 1e-3
    x = jr.choice(k, 4, (N,), p=p)
    assert _chi_square_pvalue(x, lambda s: p[s], np.arange(4)) > 1e-3
    x = jr.bernoulli(k, 0.3, (N,))
    assert abs(x.mean() - 0.3) < 4 * math.sqrt(0.21 / N)
    x = jr.rademacher(k, (N,))
    assert abs(x.mean()) < 4 / math.sqrt(N)


def test_binomial_law_by_chi_square():
    """Inversion (n·min(p, 1-p) < 10), BTRS above it, p above 1/2 (the failures counted),
    a fractional n (its integer part), and counts in the billions (Loader's form of the
    probabilities keeps the acceptance test's digits there)."""
    for i, (n, p) in enumerate([(5, 0.3), (40, 0.2), (30, 0.5), (200, 0.93), (7.7, 0.6),
                                (1000, 0.004), (5000, 0.3)]):
        x = jr.binomial(jr.PRNGKey(20 + i), n, p, (N,))
        law = stats.binom(math.floor(n), p)
        support = np.arange(law.ppf(1e-6), law.ppf(1 - 1e-6) + 1)
        assert _chi_square_pvalue(x, law.pmf, support) > 1e-3, (n, p)
    for n, p in [(1e9, 0.3), (1e13, 0.6)]:
        x = jr.binomial(jr.PRNGKey(3), n, p, (N,))
        mean, sd = n * p, math.sqrt(n * p * (1 - p))
        assert np.all(x == np.floor(x))
        assert abs(x.mean() - mean) < 4 * sd / math.sqrt(N)
        assert abs(x.std() / sd - 1) < 4 / math.sqrt(2 * N)
        assert stats.kstest((x - mean) / sd, "norm").pvalue > 1e-3


def test_multinomial_law():
    """Counts sum to n; each count is Binomial(n, pᵢ) (chi-square), and two counts have
    covariance -n pᵢ pⱼ; outcomes of probability 0 never occur; p is normalised."""
    p = np.array([0.1, 0.0, 0.25, 0.05, 0.3, 0.3])           # six: padded to eight
    for n in (12, 400):
        x = jr.multinomial(jr.PRNGKey(n), float(n), p * 2.0, shape=(N,))
        assert x.shape == (N, 6) and np.all(x.sum(-1) == n) and np.all(x[:, 1] == 0)
        for i in (0, 2, 3, 4, 5):
            law = stats.binom(n, p[i])
            support = np.arange(law.ppf(1e-6), law.ppf(1 - 1e-6) + 1)
            assert _chi_square_pvalue(x[:, i], law.pmf, support) > 1e-3, (n, i)
        cov = np.cov(x.T)
        for i, j in ((0, 2), (2, 4), (3, 5)):
            assert abs(cov[i, j] + n * p[i] * p[j]) < 5 * n * math.sqrt(
                p[i] * p[j] * (1 + p[i] * p[j]) / N) + 1e-12
    one = jr.multinomial(KEY, 5.0, np.array([1.0]), shape=(3,))     # one outcome
    assert one.tolist() == [[5.0]] * 3
    batch = jr.multinomial(KEY, np.array([3.0, 1000.0]), np.array([[0.5, 0.5], [0.9, 0.1]]))
    assert batch.shape == (2, 2) and batch.sum(-1).tolist() == [3.0, 1000.0]


def test_draws_without_replacement_and_permutations():
    k = jr.PRNGKey(9)
    for i in range(20):
        kk = jr.fold_in(k, i)
        assert sorted(jr.permutation(kk, 10).tolist()) == list(range(10))
        assert len(set(jr.choice(kk, 10, (10,), replace=False).tolist())) == 10
        assert len(set(jr.categorical(kk, np.zeros(8), shape=(5,), replace=False).tolist())) \
            == 5
        drawn = jr.choice(kk, 5, (3,), replace=False, p=np.array([0.0, 0.1, 0.2, 0.3, 0.4]))
        assert len(set(drawn.tolist())) == 3 and 0 not in drawn.tolist()
    # the first element of a permutation is uniform
    firsts = wg.vmap(lambda kk: jr.permutation(kk, 5)[0])(jr.split(k, 5000))
    assert _chi_square_pvalue(firsts, lambda s: 0.2, np.arange(5)) > 1e-3
    x = np.arange(12.0).reshape(3, 4)
    p = jr.permutation(k, x, axis=1, independent=True)
    assert np.array_equal(np.sort(p, axis=1), x)


def test_moments_of_the_multivariate_ones():
    k = jr.PRNGKey(11)
    cov = np.array([[2.0, 0.6, 0.0], [0.6, 1.0, -0.3], [0.0, -0.3, 0.5]])
    mean = np.array([1.0, -2.0, 0.5])
    for method in ("cholesky", "eigh", "svd"):
        x = jr.multivariate_normal(k, mean, cov, (N,), method=method)
        assert_close(x.mean(0), mean, atol=0.05)
        assert_close(np.cov(x.T), cov, atol=0.06)
    alpha = np.array([0.5, 1.0, 3.0])
    x = jr.dirichlet(k, alpha, (N,))
    a0 = alpha.sum()
    assert_close(x.sum(-1), 1.0, rtol=1e-12)
    assert_close(x.mean(0), alpha / a0, atol=0.01)
    assert_close(x.var(0), alpha * (a0 - alpha) / (a0 ** 2 * (a0 + 1)), rtol=0.06)
    small = jr.dirichlet(k, np.full(3, 1e-3), (100,))             # log space: no 0/0
    assert np.all(np.isfinite(small)) and np.allclose(small.sum(-1), 1.0)
    q = jr.orthogonal(k, 4, (500,))
    assert_close(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(4), (500, 4, 4)),
                 atol=1e-12)
    dets = np.linalg.det(q)
    assert abs(np.mean(dets > 0) - 0.5) < 0.1                      # both components
    assert abs(np.mean(q[:, 0, 0])) < 0.05                         # no sign bias
    assert jr.orthogonal(k, 3, m=2).shape == (3, 2) and jr.orthogonal(k, 2, m=3).shape == (2, 3)
    stiefel = jr.orthogonal(k, 2, m=3)
    assert_close(stiefel @ stiefel.T, np.eye(2), atol=1e-12)


# ---- shapes and dtypes, against JAX ---------------------------------------------------------
SHAPES = {
    "normal": lambda r, k: r.normal(k, (2, 3)),
    "normal_int_shape": lambda r, k: r.normal(k, 3),
    "normal_f32": lambda r, k: r.normal(k, (2,), np.float32),
    "normal_complex": lambda r, k: r.normal(k, (2,), np.complex128),
    "uniform": lambda r, k: r.uniform(k, (2, 3), minval=np.zeros(3)),
    "uniform_f32": lambda r, k: r.uniform(k, (2,), np.float32, 0.5, 2.0),
    "bernoulli": lambda r, k: r.bernoulli(k, np.full(3, 0.5)),
    "bernoulli_shape": lambda r, k: r.bernoulli(k, np.full(3, 0.5), (2, 3)),
    "categorical": lambda r, k: r.categorical(k, np.zeros((4, 5))),
    "categorical_axis": lambda r, k: r.categorical(k, np.zeros((4, 5)), axis=0),
    "categorical_shape": lambda r, k: r.categorical(k, np.zeros((4, 5)), shape=(2, 4)),
    "randint": lambda r, k: r.randint(k, (3,), 0, 10),
    "randint_i32": lambda r, k: r.randint(k, (3,), 0, 10, np.int32),
    "randint_u8": lambda r, k: r.randint(k, (3,), 0, 300, np.uint8),
    "choice": lambda r, k: r.choice(k, 5, (3,)),
    "choice_array_axis": lambda r, k: r.choice(k, np.arange(12.0).reshape(3, 4), (2,), axis=1),
    "permutation": lambda r, k: r.permutation(k, 5),
    "permutation_array": lambda r, k: r.permutation(k, np.arange(6.0).reshape(3, 2)),
    "truncated_normal": lambda r, k: r.truncated_normal(k, np.zeros(3) - 1, 1.0),
    "truncated_normal_f32": lambda r, k: r.truncated_normal(k, -1.0, 1.0, (2,), np.float32),
    "multivariate_normal": lambda r, k: r.multivariate_normal(k, np.zeros(2), np.eye(2), (3,)),
    "multivariate_normal_batch": lambda r, k: r.multivariate_normal(k, np.zeros((4, 2)),
                                                                    np.eye(2)),
    "gamma": lambda r, k: r.gamma(k, np.ones(3)),
    "gamma_shape": lambda r, k: r.gamma(k, np.ones(3), (2, 3)),
    "gamma_f32": lambda r, k: r.gamma(k, 2.0, (2,), np.float32),
    "loggamma": lambda r, k: r.loggamma(k, np.ones(3)),
    "beta": lambda r, k: r.beta(k, np.ones(3), 2.0),
    "dirichlet": lambda r, k: r.dirichlet(k, np.ones((4, 3)), (2, 4)),
    "exponential_f32": lambda r, k: r.exponential(k, (2,), np.float32),
    "laplace": lambda r, k: r.laplace(k, (2,)),
    "logistic": lambda r, k: r.logistic(k, (2,)),
    "gumbel": lambda r, k: r.gumbel(k, (2,)),
    "cauchy": lambda r, k: r.cauchy(k, (2,)),
    "poisson": lambda r, k: r.poisson(k, 3.0, (3,)),
    "poisson_i32": lambda r, k: r.poisson(k, 3.0, (3,), np.int32),
    "t": lambda r, k: r.t(k, np.ones(3)),
    "rademacher": lambda r, k: r.rademacher(k, (3,)),
    "rademacher_f32": lambda r, k: r.rademacher(k, (3,), np.float32),
    "orthogonal": lambda r, k: r.orthogonal(k, 3, (2,)),
    "orthogonal_m": lambda r, k: r.orthogonal(k, 3, m=2),
    "bits": lambda r, k: r.bits(k, (2,)),
    "bits_u8": lambda r, k: r.bits(k, (2,), np.uint8),
    "chisquare": lambda r, k: r.chisquare(k, 2.0, (2,)),
    "f": lambda r, k: r.f(k, 2.0, 3.0, (2,)),
    "lognormal": lambda r, k: r.lognormal(k, 1.0, (2,)),
    "pareto": lambda r, k: r.pareto(k, 2.0, (2,)),
    "weibull_min": lambda r, k: r.weibull_min(k, 1.0, 2.0, (2,)),
    "rayleigh": lambda r, k: r.rayleigh(k, 1.0, (2,)),
    "maxwell": lambda r, k: r.maxwell(k, (2,)),
    "geometric": lambda r, k: r.geometric(k, 0.5, (2,)),
    "binomial": lambda r, k: r.binomial(k, 10.0, np.full(3, 0.5)),
    "binomial_shape": lambda r, k: r.binomial(k, np.full(3, 10.0), 0.5, (2, 3), np.float32),
    # (with the default shape: JAX 0.10 reads a given shape otherwise than its documentation)
    "multinomial": lambda r, k: r.multinomial(k, np.array([5.0, 7.0]), np.full((2, 3), 1 / 3)),
    "triangular": lambda r, k: r.triangular(k, 0.0, np.full(3, 0.5), 1.0),
    "triangular_shape": lambda r, k: r.triangular(k, 0.0, 0.5, 1.0, (2, 3), np.float32),
    "wald": lambda r, k: r.wald(k, np.ones(3)),
    "wald_shape": lambda r, k: r.wald(k, 1.0, (2,)),
    "generalized_normal": lambda r, k: r.generalized_normal(k, 1.5, (2, 3)),
    "generalized_normal_f32": lambda r, k: r.generalized_normal(k, 1.5, (2,), np.float32),
    # (a non-empty shape: JAX 0.10 doubles the parameters' shape for shape=())
    "double_sided_maxwell": lambda r, k: r.double_sided_maxwell(k, np.zeros(3), 1.0, (2,)),
    "double_sided_maxwell_scalar": lambda r, k: r.double_sided_maxwell(k, 0.0, 1.0),
    "ball": lambda r, k: r.ball(k, 3),
    "ball_shape": lambda r, k: r.ball(k, 4, 1.0, (2, 5), np.float32),
    "split": lambda r, k: r.split(k, (2, 3)),
    "fold_in": lambda r, k: r.fold_in(k, 3),
}


@pytest.fixture(scope="module")
def jax_random(jax):
    return jax.random       # (in float64, as conftest runs JAX: wengert's defaults are those)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_shapes_and_dtypes_are_jaxs(name, jax_random):
    import jax
    ours = np.asarray(SHAPES[name](jr, jr.PRNGKey(0)))
    # (JAX's abstractly: compiling each draw would take seconds)
    theirs = jax.eval_shape(lambda k: SHAPES[name](jax_random, k), jax_random.PRNGKey(0))
    assert (ours.shape, ours.dtype) == (theirs.shape, theirs.dtype)


def test_a_draw_of_shape_nothing_has_a_shape_and_a_dtype():
    """As JAX's 0-d arrays have (a Python float would not)."""
    k = jr.PRNGKey(0)
    for x in (jr.normal(k), jr.uniform(k), jr.bernoulli(k), jr.gamma(k, 2.0),
              jr.truncated_normal(k, -1.0, 1.0), jr.rademacher(k), jr.randint(k, (), 0, 3),
              jr.poisson(k, 2.0), jr.categorical(k, np.zeros(3)), jr.exponential(k),
              jr.loggamma(k, 0.5), jr.t(k, 3.0), jr.choice(k, 4)):
        assert x.shape == () and isinstance(x, np.generic), type(x)


def test_values_at_jaxs_edges():
    k = jr.PRNGKey(0)
    assert jr.bernoulli(k, 1.5, (5,)).all() and not jr.bernoulli(k, -0.5, (5,)).any()
    assert not jr.bernoulli(k, np.nan, (5,)).any()
    g = jr.gamma(k, np.array([0.0, -1.0, np.nan, np.inf, 1e-300]))
    assert g[0] == 0 and np.isnan(g[1]) and np.isnan(g[2]) and g[3] == np.inf and g[4] == 0
    assert jr.poisson(k, np.array([-1.0, np.nan, 0.0])).tolist() == [-1, -1, 0]
    assert jr.poisson(k, 1e30, dtype=np.int32) == np.iinfo(np.int32).max
    assert jr.randint(k, (3,), 5, 2).tolist() == [5, 5, 5]
    r = jr.randint(k, (2000,), 250, 1000, np.uint8)          # clipped to [250, 255]
    assert r.min() == 250 and r.max() == 255
    r = jr.randint(k, (10,), -2 ** 63, 2 ** 63, np.int64)     # the whole range
    assert r.dtype == np.int64 and len(set(r.tolist())) == 10
    assert jr.truncated_normal(k, 1.0, -1.0, (3,)).tolist() == [-1.0] * 3   # (JAX's too)
    x = jr.truncated_normal(k, 10.0, 11.0, (1000,))
    assert x.min() > 10 and x.max() < 11 and len(set(x.tolist())) == 1000
    assert jr.choice(k, 3, (0,)).shape == (0,)


# ---- derivatives ----------------------------------------------------------------------------
def _fd(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def test_reparameterised_derivatives_against_central_differences():
    """With the key fixed a draw is a smooth function of its parameters: central
    differences of the draw itself are the reference."""
    k = jr.PRNGKey(3)
    cases = {
        "normal": lambda s: jnp_sum(1.0 + s * jr.normal(k, (4,))),
        "uniform_min": lambda a: jnp_sum(jr.uniform(k, (4,), minval=a, maxval=3.0)),
        "uniform_max": lambda b: jnp_sum(jr.uniform(k, (4,), minval=-1.0, maxval=b)),
        "truncated_lower": lambda a: jnp_sum(jr.truncated_normal(k, a, 1.5, (4,)) ** 2),
        "truncated_upper": lambda b: jnp_sum(jr.truncated_normal(k, -0.5, b, (4,)) ** 2),
        "truncated_tail": lambda a: jnp_sum(jr.truncated_normal(k, a, a + 1.0, (4,))),
        "truncated_left_tail": lambda b: jnp_sum(jr.truncated_normal(k, -np.inf, b, (4,))),
        "truncated_mirrored": lambda a: jnp_sum(jr.truncated_normal(k, a, np.inf, (4,))),
        "lognormal": lambda s: jnp_sum(jr.lognormal(k, s, (4,))),
        "pareto": lambda b: jnp_sum(jr.pareto(k, b, (4,))),
        "weibull_scale": lambda s: jnp_sum(jr.weibull_min(k, s, 1.5, (4,))),
        "weibull_concentration": lambda c: jnp_sum(jr.weibull_min(k, 2.0, c, (4,))),
        "rayleigh": lambda s: jnp_sum(jr.rayleigh(k, s, (4,))),
        "mvn_mean": lambda m: jnp_sum(jr.multivariate_normal(
            k, wnp.stack([m, 2 * m]), np.array([[2.0, 0.5], [0.5, 1.0]]), (3,)) ** 2),
        "choice_array": lambda s: jnp_sum(jr.choice(k, s * np.arange(1.0, 5.0), (6,)) ** 2),
        "permutation_array": lambda s: jnp_sum(jr.permutation(k, s * np.arange(1.0, 5.0))
                                               * np.arange(4.0)),
    }
    points = {"truncated_tail": (0.3, 6.0, -7.0), "truncated_left_tail": (-9.0, -1.0, 2.0),
              "truncated_mirrored": (-1.0, 0.5, 9.0)}
    for name, f in cases.items():
        for x in points.get(name, (0.7, 1.3)):
            got = wg.grad(f)(x)
            assert_close(got, _fd(f, x), rtol=1e-6, atol=1e-8)
            assert_close(wg.jit(wg.grad(f))(x), got, rtol=1e-12, atol=0)
            _, tangent = wg.jvp(f, (x,), (1.0,))
            assert_close(tangent, got, rtol=1e-12, atol=1e-14)


def jnp_sum(x):
    return wnp.sum(x)


def test_multivariate_normal_is_differentiable_in_the_covariance():
    k = jr.PRNGKey(4)
    base = np.array([[2.0, 0.5], [0.5, 1.0]])
    e = np.array([[0.3, 0.1], [0.1, -0.2]])
    for method in ("cholesky", "eigh"):
        f = lambda c: wnp.sum(jr.multivariate_normal(k, np.zeros(2), c, (5,),
                                                     method=method) ** 3)
        g = wg.grad(f)(base)
        assert_close(np.sum(g * e), _fd(lambda s: f(base + s * e), 0.0), rtol=1e-6)


def test_truncated_normal_second_derivatives():
    k = jr.PRNGKey(8)
    f = lambda a: wnp.sum(jr.truncated_normal(k, a, 2.0 * a + 1.0, (3,)))
    for a in (-0.8, 0.4):
        assert_close(wg.grad(wg.grad(f))(a), _fd(wg.grad(f), a, 1e-5), rtol=1e-6)


def _inverse_cdf_derivative(a, z):
    """dz/da at fixed u = P(a, z), from central differences of SciPy's inverse."""
    u, h = sc.gammainc(a, z), 1e-6 * a
    return (sc.gammaincinv(a + h, u) - sc.gammaincinv(a - h, u)) / (2 * h)


def test_gamma_implicit_gradient():
    k = jr.PRNGKey(6)
    for a in (0.05, 0.5, 1.0, 3.7, 250.0):
        alpha = np.full(8, a)
        z = jr.gamma(k, alpha)
        g = wg.grad(lambda x: wnp.sum(jr.gamma(k, x)))(alpha)
        assert_close(g, _inverse_cdf_derivative(alpha, z), rtol=1e-6, atol=1e-12)
        assert_close(wg.jit(wg.grad(lambda x: wnp.sum(jr.gamma(k, x))))(alpha), g, rtol=1e-12)
    # a shape broadcast over the draws: its derivative sums theirs
    g = wg.grad(lambda a: wnp.sum(jr.gamma(k, a, (6,))))(2.0)
    assert_close(g, np.sum(_inverse_cdf_derivative(2.0, jr.gamma(k, 2.0, (6,)))), rtol=1e-6)


def test_gamma_gradient_is_jaxs(jax_random):
    import jax
    k = jr.PRNGKey(6)
    alpha = np.array([0.01, 0.3, 1.0, 2.5, 30.0, 1e4])
    z = jr.gamma(k, alpha)
    ours = wg.grad(lambda x: wnp.sum(jr.gamma(k, x)))(alpha)
    assert_close(ours, np.asarray(jax.lax.random_gamma_grad(alpha, z)), rtol=1e-10)


def test_loggamma_gradient_where_the_draws_underflow():
    """a = 1e-3: the draws are below 1e-60, some below 1e-324 (0 as numbers); their
    logarithms have the derivative of log z = (log u + log Γ(a+1))/a, the distribution
    function near 0, exact to O(z)."""
    k = jr.PRNGKey(2)
    a = np.full(6, 1e-3)
    lz = jr.loggamma(k, a)
    assert np.any(lz < -745) and np.all(np.isfinite(lz))      # (some underflow as numbers)
    log_u = a * lz - sc.gammaln(a + 1)              # (to O(z), which is below 1e-300 here)
    ref = _fd(lambda s: (log_u + sc.gammaln(s + 1)) / s, a, 1e-9)
    assert_close(wg.grad(lambda x: wnp.sum(jr.loggamma(k, x)))(a), ref, rtol=1e-6)
    # and across the switch to that series (z = 1e-6): against SciPy's inverse
    a = np.full(64, 0.05)
    z = jr.gamma(k, a)
    assert np.any(z < 1e-6) and np.any(z > 1e-6)
    g = wg.grad(lambda x: wnp.sum(jr.loggamma(k, x)))(a)
    assert_close(g * z, _inverse_cdf_derivative(a, z), rtol=1e-6, atol=1e-300)


def test_gamma_family_gradients_are_unbiased():
    """The pathwise derivatives average to the derivative of the expectation."""
    k = jr.PRNGKey(12)
    n = 40000
    mean_grad = lambda f, x: float(wg.grad(lambda s: wnp.mean(f(s)))(x))
    assert abs(mean_grad(lambda a: jr.gamma(k, a, (n,)), 2.0) - 1.0) < 0.02
    assert abs(mean_grad(lambda a: jr.beta(k, a, 3.0, (n,)), 2.0) - 3 / 25) < 0.01
    assert abs(mean_grad(lambda b: jr.beta(k, 2.0, b, (n,)), 3.0) + 2 / 25) < 0.01
    alpha = np.array([1.0, 2.0, 3.0])
    g = wg.grad(lambda a: wnp.mean(jr.dirichlet(k, a, (n,))[:, 0]))(alpha)
    assert_close(g, [5 / 36, -1 / 36, -1 / 36], atol=0.01)       # d (a0/Σa) / da
    df = 10.0
    assert abs(mean_grad(lambda d: jr.t(k, d, (n,)) ** 2, df) + 2 / (df - 2) ** 2) < 0.01
    assert abs(mean_grad(lambda d: jr.chisquare(k, d, (n,)), 3.0) - 1.0) < 0.02


def _second_along_the_quantile(a, z, h):
    """d²z/da² at fixed u = P(a, z): Richardson's extrapolation of second differences of
    SciPy's inverse (steps h and h/2), independent of wengert's derivatives."""
    u = sc.gammainc(a, z)
    second = lambda h: (sc.gammaincinv(a + h, u) - 2 * z + sc.gammaincinv(a - h, u)) / h ** 2
    return (4 * second(h / 2) - second(h)) / 3


def _gamma_grads(key, draw=lambda k, a: jr.gamma(k, a)):
    first = lambda a: wg.grad(lambda x: wnp.sum(draw(key, x)))(a)
    return first, lambda a: wg.grad(lambda x: wnp.sum(first(x)))(a)


def test_gamma_second_derivative_in_the_shape():
    """The derivative of the implicit derivative: d²z/da² along z(a) = P⁻¹(a, u), the
    path the first derivative differentiates (not the sampler's own path)."""
    k = jr.PRNGKey(6)
    first, second = _gamma_grads(k)
    for a in (0.05, 0.5, 1.0, 3.7, 25.0, 250.0):
        alpha = np.full(8, a)
        z = jr.gamma(k, alpha)
        got = second(alpha)
        # (an absolute part: for large a, d²z/da² is 1e-4 beside z's 250, whose last
        # digits in SciPy's inverse are amplified by the differences)
        assert_close(got, _second_along_the_quantile(alpha, z, 1e-3 * a), rtol=2e-6,
                     atol=1e-9)
        # central differences of the first derivative, along the same path
        u, h = sc.gammainc(alpha, z), 1e-5 * a
        along = lambda s: R.loggamma_grad(s, np.log(sc.gammaincinv(s, u))) * \
            sc.gammaincinv(s, u)
        assert_close(got, _fd(along, alpha, h), rtol=1e-6, atol=1e-9)
        # forward over reverse, compiled, and the Hessian agree
        assert_close(wg.jacfwd(first)(alpha).diagonal(), got, rtol=1e-12, atol=0)
        assert_close(wg.jit(second)(alpha), got, rtol=1e-12, atol=0)
    assert_close(wg.hessian(lambda x: wnp.sum(jr.gamma(k, x)))(alpha), np.diag(got),
                 rtol=1e-12, atol=0)


def test_gamma_second_derivative_under_vmap_is_per_key(loops):
    keys = jr.split(KEY, 40)
    second = lambda key: _gamma_grads(key)[1](np.array([0.3, 2.0, 40.0]))
    got = wg.vmap(second)(keys)
    assert_close(got, np.stack([second(key) for key in keys]), rtol=1e-12, atol=0)
    assert not loops


def test_gamma_second_derivative_is_jaxs(jax_random):
    """JAX differentiates its random_gamma_grad(a, z) forward (not in reverse: its
    jax.grad(jax.grad(...)) of a gamma draw raises): along the path, its tangent at
    (1, dz/da) is d²z/da²."""
    import jax
    k = jr.PRNGKey(6)
    first, second = _gamma_grads(k)
    alpha = np.array([0.01, 0.3, 1.0, 2.5, 30.0, 1e3])
    z = jr.gamma(k, alpha)
    dz = np.asarray(jax.lax.random_gamma_grad(alpha, z))
    _, theirs = jax.jvp(jax.lax.random_gamma_grad, (alpha, z), (np.ones_like(alpha), dz))
    assert_close(second(alpha), np.asarray(theirs), rtol=1e-8, atol=0)
    theirs = jax.jacfwd(jax.grad(lambda a: jax_random.gamma(jax_random.PRNGKey(0), a)))(2.0)
    assert np.isfinite(theirs)                  # (JAX's own draw: forward over reverse)


def test_loggamma_second_derivative_where_the_draws_underflow():
    """a = 1e-3: log z = (log u + log Γ(a+1))/a to O(z), z < 1e-60 here; and across the
    switch to the small-z series (z = 1e-6) at a = 0.05, against SciPy's inverse."""
    k = jr.PRNGKey(2)
    a = np.full(6, 1e-3)
    lz = jr.loggamma(k, a)
    log_u = a * lz - sc.gammaln(a + 1)
    path = lambda s: (log_u + sc.gammaln(s + 1)) / s
    h = 1e-6
    ref = (path(a + h) - 2 * path(a) + path(a - h)) / h ** 2
    _, second = _gamma_grads(k, jr.loggamma)
    assert_close(second(a), ref, rtol=1e-5)
    a = np.full(64, 0.05)
    z = jr.gamma(k, a)
    assert np.any(z < 1e-6) and np.any(z > 1e-6)
    _, second = _gamma_grads(k)
    assert_close(second(a), _second_along_the_quantile(a, z, 1e-4), rtol=1e-5, atol=1e-300)


def test_gamma_third_derivative_in_the_shape_says_it_is_not_implemented():
    f = lambda a: jr.gamma(KEY, a)
    second = wg.grad(wg.grad(f))(2.0)
    # Taylor mode to order 2 (its rule from the JVP): the second coefficient is half of it
    assert_close(wg.taylor(f, 2.0, 1.0, order=2)[2], second / 2, rtol=1e-12, atol=0)
    with pytest.raises(NotImplementedError, match="third derivative"):
        wg.grad(wg.grad(wg.grad(f)))(2.0)
    with pytest.raises(NotImplementedError, match="third derivative"):
        wg.taylor(f, 2.0, 1.0, order=3)


def test_gammainc_second_partial_in_the_shape_is_mpmaths():
    """The kernel under the second derivative, ∂²P/∂a², in each of its regions (series,
    continued fraction, Temme's expansion for a >= 20 near x = a) and at their seams."""
    mp = pytest.importorskip("mpmath")
    from wengert.primitives.incomplete import gammainc_daa
    mp.mp.dps = 60
    points = [(a, a * r if a >= 1 else 3 * r)
              for a in (1e-3, 0.05, 0.3, 1.0, 2.5, 19.0, 20.0, 60.0, 3000.0)
              for r in (1e-6, 0.3, 0.69, 0.71, 0.999, 1.0, 1.001, 1.29, 1.31, 3.0, 10.0)]
    a, x = np.array(points).T
    got = gammainc_daa(a, x)
    for (ai, xi), g in zip(points, got):
        # (Q's side above x = a: P's derivatives there are below P's own rounding)
        f = (lambda s: -mp.gammainc(s, xi, mp.inf, regularized=True)) if xi > ai else \
            (lambda s: mp.gammainc(s, 0, xi, regularized=True))
        assert_close(g, float(mp.diff(f, mp.mpf(ai), 2)), rtol=2e-11, atol=0)
    assert np.isnan(gammainc_daa(-1.0, 1.0)) and gammainc_daa(2.0, 0.0) == 0


def test_discrete_draws_have_zero_derivative_in_their_probabilities():
    k = jr.PRNGKey(1)
    p = np.array([0.2, 0.3, 0.5])
    cases = [
        # (the draw has none; the factor p has its own)
        (lambda p: wnp.sum(jr.bernoulli(k, p).astype(float) * p), p,
         jr.bernoulli(k, p).astype(float)),
        (lambda l: jr.categorical(k, l).astype(float), np.log(p), np.zeros(3)),
        (lambda p: jr.choice(k, 3, (4,), p=p).astype(float).sum(), p, np.zeros(3)),
        (lambda lam: jr.poisson(k, lam, (3,)).astype(float).sum(), 3.0, 0.0),
        (lambda p: jr.geometric(k, p, (3,)).astype(float).sum(), 0.4, 0.0),
        (lambda p: jr.binomial(k, 30.0, p, (3,)).sum(), 0.4, 0.0),
        (lambda n: jr.binomial(k, n, 0.4, (3,)).sum(), 30.0, 0.0),
        (lambda p: jr.multinomial(k, 20.0, p, shape=(2,))[:, 0].sum(), p, np.zeros(3)),
        (lambda n: jr.multinomial(k, n, p)[0], 20.0, 0.0),
    ]
    for f, x, want in cases:
        assert_close(wg.grad(f)(x), want, rtol=0, atol=0)
        assert_close(wg.jit(wg.grad(f))(x), want, rtol=0, atol=0)


# ---- binomial, multinomial, triangular, wald, generalized_normal, ...: derivatives -----------
def test_transformed_draws_against_central_differences():
    """triangular and double_sided_maxwell are smooth functions of uniform and normal
    draws: central differences at the same key are the reference, to second order (wald's
    derivative is the implicit one: `test_wald_derivative_is_the_implicit_one`)."""
    from fd import check_grads
    k = jr.PRNGKey(3)
    rng = np.random.default_rng(0)
    cases = {
        "triangular": (lambda a, c, b: jr.triangular(k, a, c, b, (6,)), (-0.4, 0.6, 2.1)),
        "triangular_arrays": (lambda a, c, b: jr.triangular(k, a, c, b),
                              (rng.uniform(-1, 0, 4), rng.uniform(0, 1, 4),
                               rng.uniform(1, 2, 4))),
        "double_sided_maxwell": (lambda l, s: jr.double_sided_maxwell(k, l, s, (3,)),
                                 (rng.normal(size=2), rng.uniform(0.5, 2, 2))),
    }
    for name, (f, args) in cases.items():
        check_grads(f, *args, order=2, eps=1e-6, rtol=1e-6, atol=1e-8)
        for i in range(len(args)):
            g = wg.grad(lambda *a: wnp.sum(f(*a) ** 2), argnums=i)
            assert_close(wg.jit(g)(*args), g(*args), rtol=1e-12, atol=0)


def test_wald_derivative_is_the_implicit_one():
    """Per draw, dx/dμ moves x at a fixed value u of its distribution function: central
    differences of SciPy's quantile function (invgauss, shape 1) at u, and mpmath's
    second derivative of the quantile function, which it solves at 40 digits; compiled
    and under vmap over keys as eager."""
    import mpmath
    k = jr.PRNGKey(3)
    rng = np.random.default_rng(1)
    for mu in (0.3, 1.7, rng.uniform(0.2, 8, 6)):  # (SciPy's ppf fails for some large means)
        f = lambda m: jr.wald(k, m, (6,))
        x = f(mu)
        u = stats.invgauss.cdf(x, mu)
        want = _fd(lambda m: stats.invgauss.ppf(u, m), mu, 1e-6 * np.max(mu))
        got = wg.jacfwd(f)(mu)
        assert_close(np.diagonal(got) if np.ndim(mu) else got, want, rtol=1e-6, atol=1e-12)
    mpmath.mp.dps = 40
    mu = 1.7

    def cdf(t, m):
        r = mpmath.sqrt(t)
        return mpmath.ncdf((t / m - 1) / r) + mpmath.exp(2 / m) * mpmath.ncdf(-(t / m + 1) / r)
    x = jr.wald(k, mu, (4,))
    second = wg.jacfwd(wg.jacfwd(lambda m: jr.wald(k, m, (4,))))(mu)
    for i in range(4):
        u = cdf(mpmath.mpf(x[i]), mpmath.mpf(mu))
        ppf = lambda m: mpmath.findroot(lambda t: cdf(t, m) - u, mpmath.mpf(x[i]))
        assert_close(second[i], float(mpmath.diff(ppf, mpmath.mpf(mu), 2)), rtol=1e-11)
    mpmath.mp.dps = 15
    series = wg.taylor(lambda m: jr.wald(k, m, (4,)), mu, 1.0, order=2)    # (Taylor mode)
    assert_close(series[2], second / 2, rtol=1e-12)
    g = wg.grad(lambda m: wnp.sum(jr.wald(k, m, (6,)) ** 2))
    assert_close(wg.jit(g)(mu), g(mu), rtol=1e-12)
    keys = jr.split(k, 4)
    per_key = wg.vmap(lambda key: wg.grad(lambda m: jr.wald(key, m))(mu))(keys)
    assert_close(per_key, [wg.grad(lambda m: jr.wald(key, m))(mu) for key in keys], rtol=1e-13)


def test_triangular_derivative_where_the_mode_is_at_an_end():
    """At mode = left (or right) one side of the quantile function is empty: its radicand
    is 0 and its square root has an infinite derivative, which must not reach the other
    side as nan.  There x = right - √(1 - u) (right - left), linear in both ends."""
    k = jr.PRNGKey(4)
    u = jr.uniform(k, (5,))
    f = lambda a, b: jr.triangular(k, a, a, b, (5,))          # mode = left
    ga, gb = wg.jacfwd(f, argnums=(0, 1))(0.5, 2.0)
    assert_close(ga, np.sqrt(1 - u), rtol=1e-12, atol=1e-15)
    assert_close(gb, 1 - np.sqrt(1 - u), rtol=1e-12, atol=1e-15)
    g = wg.grad(lambda b: wnp.sum(jr.triangular(k, 0.5, b, b, (5,))))(2.0)   # mode = right
    assert_close(g, np.sum(np.sqrt(u)), rtol=1e-12)


def _quantile_path(G, p):
    """Gamma(1/q) draws that move with q at the fixed probabilities P(1/p, G): the path
    gamma's implicit derivative differentiates (`_second_along_the_quantile`)."""
    u = sc.gammainc(1 / p, G)
    return lambda q: sc.gammaincinv(1 / q, u)


def test_generalized_normal_and_ball_derivatives_in_p():
    """Both go through Gamma(1/p) draws: the reference moves them along the quantile path
    (the draws' signs and the exponential fixed) and differentiates by central
    differences, to second order for generalized_normal."""
    k = jr.PRNGKey(5)
    for p in (0.7, 1.5, 4.0):
        x = jr.generalized_normal(k, p, (6,))
        G = _quantile_path(np.abs(x) ** p, p)
        path = lambda q: np.sign(x) * G(q) ** (1 / q)
        f = lambda q: jr.generalized_normal(k, q, (6,))
        assert_close(wg.jacfwd(f)(p), _fd(path, p, 1e-6 * p), rtol=1e-7, atol=1e-10)
        second = (path(p + 1e-4) - 2 * path(p) + path(p - 1e-4)) / 1e-8
        assert_close(wg.jacfwd(wg.jacfwd(f))(p), second, rtol=1e-4, atol=1e-6)
        g = wg.grad(lambda q: wnp.sum(f(q) ** 3))
        assert_close(wg.grad(g)(p), wg.jit(wg.grad(g))(p), rtol=1e-12)
        # ball: g from split(key)[0], e from split(key)[1], as the docstring says
        k_g, k_e = jr.split(k)
        g0, e = jr.generalized_normal(k_g, p, (2, 3)), jr.exponential(k_e, (2,))
        G = _quantile_path(np.abs(g0) ** p, p)

        def ball_path(q):
            gq = np.sign(g0) * G(q) ** (1 / q)
            return gq / ((np.abs(gq) ** q).sum(-1) + e)[:, None] ** (1 / q)
        b = lambda q: jr.ball(k, 3, q, (2,))
        assert_close(b(p), ball_path(p), rtol=1e-12)
        assert_close(wg.jacfwd(b)(p), _fd(ball_path, p, 1e-6 * p), rtol=1e-7, atol=1e-10)
        assert_close(wg.jit(wg.jacfwd(b))(p), wg.jacfwd(b)(p), rtol=1e-12)


def test_pathwise_derivatives_are_unbiased():
    """The draws' derivatives average to the derivative of the expectation (wald's too,
    where JAX's do not: see `test_the_new_draws_reparameterise_as_jax_does`)."""
    k = jr.PRNGKey(14)
    n = 40000
    mean_grad = lambda f, x: float(wg.grad(lambda s: wnp.mean(f(s)))(x))
    assert abs(mean_grad(lambda c: jr.triangular(k, 0.0, c, 3.0, (n,)), 1.0) - 1 / 3) < 0.01
    # E x = μ: the derivative's standard error is about 0.006 at μ = 2 for these n
    assert abs(mean_grad(lambda m: jr.wald(k, m, (n,)), 2.0) - 1) < 0.03
    # E x² = Γ(3/p)/Γ(1/p)
    p = 1.5
    dm2 = sc.gamma(3 / p) / sc.gamma(1 / p) * (sc.digamma(1 / p) - 3 * sc.digamma(3 / p)) / p ** 2
    assert abs(mean_grad(lambda q: jr.generalized_normal(k, q, (n,)) ** 2, p) - dm2) < 0.02
    # E ‖x‖_p^p = d/(d + p) in the unit p-ball of d dimensions (the norm's law is r^d)
    d = 3
    got = mean_grad(lambda q: wnp.sum(wnp.abs(jr.ball(k, d, q, (n,))) ** q, axis=-1), p)
    assert abs(got + d / (d + p) ** 2) < 0.01


def test_the_new_draws_reparameterise_as_jax_does(jax_random):
    """Per draw, d x/d θ is a function of the draw x and the parameters alone where the
    reparameterisation is the same: JAX's derivatives at its draws and wengert's at its
    own both equal that function, computed from SciPy's quantile functions (inverse
    CDFs, along which a 1-d reparameterisation moves) or, for wald, from the normal
    draw that x determines (y = (r - μ)²/(μ² r), r = min(x, μ²/x)) moved by
    central differences.  wald is the exception: JAX's derivative is that of its
    transformation (the reference here); wengert's the implicit one (tested in
    `test_wald_derivative_is_the_implicit_one`)."""
    import jax
    n = 8
    a, c, b = 0.5, 1.2, 3.0

    def triangular_ref(x, theta, which, h=1e-6):
        law = lambda t: stats.triang((t[1] - t[0]) / (t[2] - t[0]), loc=t[0],
                                     scale=t[2] - t[0])
        u, e = law(theta).cdf(x), h * np.eye(3)[which]
        return (law(theta + e).ppf(u) - law(theta - e).ppf(u)) / (2 * h)

    def wald_ref(x, mu, h=1e-6):
        r = np.minimum(x, mu * mu / x)
        y = (r - mu) ** 2 / (mu * mu * r)

        def path(m):
            t = m * y / 2
            root = m / (1 + t + np.sqrt(t * (2 + t)))
            return np.where(x <= mu, root, m * m / root)
        return _fd(path, mu, h)

    def generalized_normal_ref(x, p):
        G = _quantile_path(np.abs(x) ** p, p)
        return _fd(lambda q: np.sign(x) * G(q) ** (1 / q), p, 1e-6)

    def maxwell_ref(x, loc, scale, which):
        return np.ones_like(x) if which == 0 else (x - loc) / scale

    cases = []
    for which in range(3):
        def draw(r, key, t, which=which):
            theta = [a, c, b]
            theta[which] = t
            return r.triangular(key, *theta, (n,))
        cases.append((draw, [a, c, b][which],
                      lambda x, t, which=which: triangular_ref(x, np.array([a, c, b]), which)))
    cases.append((lambda r, key, p: r.generalized_normal(key, p, (n,)), 1.5,
                  generalized_normal_ref))
    for which in range(2):
        def draw(r, key, t, which=which):
            return r.double_sided_maxwell(key, t, 2.0, (n,)) if which == 0 else \
                r.double_sided_maxwell(key, 0.5, t, (n,))
        cases.append((draw, 0.5 if which == 0 else 2.0,
                      lambda x, t, which=which: maxwell_ref(x, 0.5, 2.0, which)))
    for draw, t, ref in cases:
        theirs_x = np.asarray(draw(jax_random, jax_random.PRNGKey(1), t))
        theirs = np.asarray(jax.jacfwd(lambda s: draw(jax_random, jax_random.PRNGKey(1), s))(t))
        ours_x = draw(jr, jr.PRNGKey(1), t)
        ours = wg.jacfwd(lambda s: draw(jr, jr.PRNGKey(1), s))(t)
        assert_close(theirs, ref(theirs_x, t), rtol=1e-7, atol=1e-9)
        assert_close(ours, ref(ours_x, t), rtol=1e-7, atol=1e-9)
    jax_wald = lambda s: jax_random.wald(jax_random.PRNGKey(1), s, (n,))
    assert_close(np.asarray(jax.jacfwd(jax_wald)(1.7)), wald_ref(np.asarray(jax_wald(1.7)), 1.7),
                 rtol=1e-7, atol=1e-9)
    # ball: both derivatives average to d/dp E ‖x‖_p^p = -d/(d + p)²
    d, p, m = 3, 1.5, 20000
    f = lambda r, key: lambda q: (abs(r.ball(key, d, q, (m,))) ** q).sum(-1).mean()
    theirs = float(jax.grad(f(jax_random, jax_random.PRNGKey(2)))(p))
    ours = float(wg.grad(f(jr, jr.PRNGKey(2)))(p))
    assert abs(theirs + d / (d + p) ** 2) < 0.015 and abs(ours + d / (d + p) ** 2) < 0.015
    # wald: JAX's derivative of the draw at a fixed key jumps where the choice between x
    # and mean²/x changes with the mean, so its average is not d E[x]/d mean = 1 (about
    # 1.24 at mean 2); wengert's implicit one averages to 1
    m = 20000
    theirs = float(jax.grad(lambda s: jax_random.wald(jax_random.PRNGKey(3), s,
                                                       (m,)).mean())(2.0))
    ours = float(wg.grad(lambda s: jr.wald(jr.PRNGKey(3), s, (m,)).mean())(2.0))
    assert theirs > 1.1 and abs(ours - 1) < 0.04


# ---- transformations together: the porting patterns ---------------------------------------------
def test_compiled_gradient_of_a_loss_drawing_from_a_key_argument_is_the_eager_one():
    x = np.random.default_rng(0).normal(size=(16, 3))

    def elbo(params, key):          # a VAE-style reparameterised loss with dropout
        k_eps, k_drop = jr.split(key)
        mu, log_sigma = x @ params["w"], params["s"]
        z = mu + wnp.exp(log_sigma) * jr.normal(k_eps, mu.shape)
        keep = jr.bernoulli(k_drop, 0.8, z.shape)
        z = wnp.where(keep, z / 0.8, 0.0)
        kl = 0.5 * wnp.sum(mu ** 2 + wnp.exp(2 * log_sigma) - 2 * log_sigma - 1)
        return wnp.mean((z - 1.0) ** 2) + kl / 100

    params = {"w": np.array([0.3, -0.2, 0.1]), "s": -0.5}
    step = wg.jit(wg.grad(elbo))
    for seed in range(3):
        key = jr.PRNGKey(seed)
        eager = wg.grad(elbo)(params, key)
        compiled = step(params, key)
        assert_close(compiled["w"], eager["w"], rtol=1e-12, atol=0)
        assert_close(compiled["s"], eager["s"], rtol=1e-12, atol=0)
    # per-key gradients under vmap equal the eager gradients one key at a time
    keys = jr.split(jr.PRNGKey(9), 4)
    per = wg.vmap(wg.grad(elbo), in_axes=(None, 0))(params, keys)
    for i, key in enumerate(keys):
        assert_close(per["s"][i], wg.grad(elbo)(params, key)["s"], rtol=1e-12, atol=0)
    # and the draws are nodes evaluated at run time, not constants of the trace
    graph = wg.trace(wg.grad(elbo), params, wg.ShapeDtype((2,), np.uint32))
    assert any(n.op.name == "random_draw" for n in graph.nodes)


def test_a_training_loop_with_fold_in_under_jit():
    def loss(w, key, step):
        noise = jr.normal(jr.fold_in(key, step), (8,))
        return wnp.sum((w - noise) ** 2)
    grad = wg.jit(wg.grad(loss))
    w, key = np.zeros(8), jr.PRNGKey(0)
    for step in range(3):
        assert_close(grad(w, key, step), wg.grad(loss)(w, key, step), rtol=0, atol=0)


def test_a_seed_may_be_traced():
    f = wg.jit(lambda seed: jr.normal(jr.PRNGKey(seed), (2,)))
    assert _equal(f(5), jr.normal(jr.PRNGKey(5), (2,)))
    assert _equal(wg.vmap(lambda s: jr.PRNGKey(s))(np.arange(3)),
                  np.stack([jr.PRNGKey(s) for s in range(3)]))


# ---- errors ---------------------------------------------------------------------------------
def test_keys_are_checked():
    with pytest.raises(TypeError, match="uint32 array of shape \\(2,\\).*float64"):
        jr.normal(np.zeros(2))
    with pytest.raises(TypeError, match="int32"):
        jr.normal(np.zeros(2, np.int32))
    with pytest.raises(TypeError, match="a key has no derivative.*argnums"):
        wg.grad(lambda k: jr.normal(k))(KEY)
    with pytest.raises(TypeError, match="shape \\(3,\\)"):
        jr.normal(np.zeros(3, np.uint32))
    with pytest.raises(ValueError, match="single key.*\\(4, 2\\).*vmap"):
        jr.uniform(jr.split(KEY, 4))
    with pytest.raises(TypeError, match="integer"):
        jr.PRNGKey(1.5)
    with pytest.raises(TypeError, match="scalar seed"):
        jr.PRNGKey(np.arange(2))
    with pytest.raises(OverflowError):
        jr.PRNGKey(2 ** 64)
    with pytest.raises(TypeError, match="integer"):
        jr.fold_in(KEY, "1")
    assert np.array_equal(jr.fold_in(KEY, 1.5), jr.fold_in(KEY, 1))     # (as JAX's)
    with pytest.raises(TypeError, match="scalar"):
        jr.fold_in(KEY, np.arange(2))
    with pytest.raises(ValueError, match="impl"):
        jr.key(0, impl="threefry2x32")
    with pytest.raises(TypeError, match="uint32"):
        jr.wrap_key_data(np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="negative"):
        jr.split(KEY, -1)


def test_the_new_draws_edges_and_errors():
    k = jr.PRNGKey(0)
    x = jr.binomial(k, np.array([-1.0, np.nan, 10.0, 10.0, 10.0, 10.0, 10.0, np.inf, np.inf,
                                 np.inf, 5.9]),
                    np.array([0.5, 0.5, -0.1, 1.2, np.nan, 0.0, 1.0, 0.5, 0.9, 0.0, 1.0]))
    assert np.isnan(x[:5]).all() and x[5:].tolist() == [0.0, 10.0, np.inf, np.inf, 0.0, 5.0]
    assert np.isnan(jr.wald(k, np.array([-1.0, 0.0, np.nan, np.inf]))).all()
    assert np.isnan(jr.generalized_normal(k, np.array([-1.0, 0.0, np.nan]), (3,))).all()
    assert jr.ball(k, 0, shape=(2,)).shape == (2, 0)
    assert jr.multinomial(k, 4.0, np.zeros(3)).tolist() == [0.0, 0.0, 0.0]   # (JAX's too)
    assert jr.key_impl(k) == "philox4x64" and np.array_equal(jr.key(3, impl="philox4x64"),
                                                             jr.PRNGKey(3))
    cases = [
        (lambda: jr.binomial(k, np.ones(3), 0.5, (2,)), ValueError, "n of shape \\(3,\\)"),
        (lambda: jr.binomial(k, np.ones(3), np.full(2, 0.5)), ValueError, "n \\(3,\\), p"),
        (lambda: jr.binomial(k, 3.0, 0.5, dtype=np.int64), ValueError, "`binomial` must be a "
                                                                        "float dtype"),
        (lambda: jr.multinomial(k, 3.0, 0.5), ValueError, "at least one axis"),
        (lambda: jr.multinomial(k, 3.0, np.ones((4, 3)), shape=(2,)), ValueError,
         "batch shape \\(4,\\).*\\(2,\\)"),
        (lambda: jr.multinomial(k, np.ones(2), np.ones(3)), ValueError,
         "n of shape \\(2,\\).*batch shape \\(\\)"),
        (lambda: jr.multinomial(k, 3.0, np.ones(3), unroll="yes"), TypeError, "unroll"),
        (lambda: jr.triangular(k, np.zeros(3), 0.5, 1.0, (2,)), ValueError,
         "left of shape \\(3,\\).*\\(2,\\)"),
        (lambda: jr.wald(k, np.ones(3), (2,)), ValueError, "mean of shape \\(3,\\)"),
        (lambda: jr.generalized_normal(k, np.ones(3), (2,)), ValueError, "p of shape"),
        (lambda: jr.double_sided_maxwell(k, np.zeros(2), np.ones(3)), ValueError,
         "loc \\(2,\\), scale \\(3,\\)"),
        (lambda: jr.ball(k, -1), ValueError, "d, the dimension"),
        (lambda: jr.ball(k, 3, np.ones(3)), ValueError, "p must be a number"),
        (lambda: jr.ball(k, 3, dtype=np.int32), ValueError, "`ball` must be a float"),
        (lambda: jr.key_impl(np.zeros(2)), TypeError, "uint32"),
        (lambda: jr.key(0, impl="threefry2x32"), ValueError, "philox4x64"),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()


def test_shapes_that_do_not_broadcast_name_both_shapes():
    cases = [
        (lambda: jr.uniform(KEY, (2,), minval=np.zeros(3)), "minval of shape \\(3,\\).*\\(2,\\)"),
        (lambda: jr.bernoulli(KEY, np.full(3, 0.5), (2,)), "p of shape \\(3,\\).*\\(2,\\)"),
        (lambda: jr.gamma(KEY, np.ones(3), (2,)), "a of shape \\(3,\\).*\\(2,\\)"),
        (lambda: jr.truncated_normal(KEY, np.zeros(3), 1.0, (2,)),
         "lower of shape \\(3,\\).*\\(2,\\)"),
        (lambda: jr.beta(KEY, np.ones(2), np.ones(3)), "\\(2,\\).*\\(3,\\)"),
        (lambda: jr.randint(KEY, (2,), np.zeros(3, int), 5), "minval of shape \\(3,\\)"),
        (lambda: jr.categorical(KEY, np.zeros((4, 5)), shape=(3,)), "\\(4,\\).*\\(3,\\)"),
        (lambda: jr.dirichlet(KEY, np.ones((4, 3)), (2, 3)), "\\(4,\\).*\\(2, 3\\)"),
        (lambda: jr.multivariate_normal(KEY, np.zeros(3), np.eye(2)), "n=3.*\\(2, 2\\)"),
        (lambda: jr.multivariate_normal(KEY, np.zeros((4, 2)), np.eye(2), (3,)),
         "\\(4,\\).*\\(3,\\)"),
        (lambda: jr.poisson(KEY, np.ones(3), (2,)), "lam of shape \\(3,\\)"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=message):
            call()


def test_dtypes_and_arguments_are_checked_as_jax_does():
    with pytest.raises(ValueError, match="dtype argument to `normal` must be a float or "
                                         "complex dtype, got int32"):
        jr.normal(KEY, (2,), np.int32)
    for name in ("uniform", "exponential", "gamma", "truncated_normal", "cauchy"):
        with pytest.raises(ValueError, match=f"`{name}` must be a float dtype"):
            DTYPE_CALLS[name](np.int32)
    with pytest.raises(ValueError, match="`uniform` must be a float dtype"):
        jr.uniform(KEY, (2,), np.complex128)
    with pytest.raises(TypeError, match="randint only accepts integer dtypes"):
        jr.randint(KEY, (2,), 0, 5, np.float32)
    with pytest.raises(TypeError, match="poisson: dtype must be an integer"):
        jr.poisson(KEY, 2.0, dtype=np.float64)
    with pytest.raises(ValueError, match="unsigned"):
        jr.bits(KEY, (2,), np.int32)
    with pytest.raises(TypeError, match="floating dtype"):
        jr.bernoulli(KEY, 1)
    with pytest.raises(ValueError, match="larger sample"):
        jr.choice(KEY, 3, (5,), replace=False)
    with pytest.raises(ValueError, match="p has shape \\(4,\\)"):
        jr.choice(KEY, 3, (2,), p=np.ones(4) / 4)
    with pytest.raises(ValueError, match="greater than 0"):
        jr.choice(KEY, 0, (2,))
    with pytest.raises(ValueError, match="replace=False"):
        jr.categorical(KEY, np.zeros(3), shape=(5,), replace=False)
    with pytest.raises(ValueError, match="alpha.ndim >= 1"):
        jr.dirichlet(KEY, 1.0)
    with pytest.raises(TypeError, match="at least one-dimensional"):
        jr.permutation(KEY, np.array(3.0))
    with pytest.raises(ValueError, match="method"):
        jr.multivariate_normal(KEY, np.zeros(2), np.eye(2), method="qr")
    with pytest.raises(AttributeError, match="default_prng_impl.*one key implementation"):
        jr.default_prng_impl
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        jr.nonsense


DTYPE_CALLS = {
    "uniform": lambda d: jr.uniform(KEY, (2,), d),
    "exponential": lambda d: jr.exponential(KEY, (2,), d),
    "gamma": lambda d: jr.gamma(KEY, 1.0, (2,), d),
    "truncated_normal": lambda d: jr.truncated_normal(KEY, -1.0, 1.0, (2,), d),
    "cauchy": lambda d: jr.cauchy(KEY, (2,), d),
}


def test_import_wengert_as_jax_reads_jax_random():
    import wengert as jax
    key = jax.random.PRNGKey(0)
    key, sub = jax.random.split(key)
    eps = jax.random.normal(sub, (3,))
    assert eps.shape == (3,) and jax.random is jr
