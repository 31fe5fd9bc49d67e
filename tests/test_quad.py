"""wengert.scipy.integrate's quadrature: quad and quad_vec give SciPy's values and the
Leibniz rule's derivatives in args and in both limits (closed forms, central differences to
second order, forward against reverse, vmap, compile), for integrands that close over
traced values too; the sample rules (fixed_quad, romb, simpson, trapezoid,
cumulative_trapezoid) on traced samples; clear errors for what is refused."""
import math
import warnings

import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from fd import assert_close, check_grads, fd_derivative

si = pytest.importorskip("scipy.integrate")
from wengert.scipy import integrate as wint  # noqa: E402
from wengert.scipy.integrate import quad, quad_vec  # noqa: E402

TIGHT = dict(epsabs=1e-13, epsrel=1e-13)     # for comparisons with central differences


def decay(x, k):
    return wnp.exp(-k * x)


def area(k, b):
    """∫₀^b e^{-kx} dx = (1 - e^{-kb}) / k."""
    return quad(decay, 0.0, b, args=(k,))[0]


# --- values: SciPy's ---------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda q: q(lambda x, k: np.exp(-k * x), 0.0, 2.0, args=(1.5,)),
    lambda q: q(lambda x: 1 / np.sqrt(x), 0.0, 1.0, full_output=1),
    lambda q: q(lambda x: np.exp(-x * x), -np.inf, np.inf),
    lambda q: q(lambda x: abs(x - 0.3), 0.0, 1.0, points=[0.3]),
    lambda q: q(lambda x: np.exp(-x), 0.0, np.inf, weight="cos", wvar=2.0),
    lambda q: q(lambda x: x, 0.0, 1.0, weight="alg", wvar=(0.5, -0.5)),
    lambda q: q(lambda x: np.exp(1j * x), 0.0, 1.0, complex_func=True),
], ids=["args", "full_output", "infinite", "points", "cos", "alg", "complex"])
def test_plain_values_are_scipys(call):
    got, want = call(quad), call(si.quad)
    assert len(got) == len(want)
    assert got[:2] == want[:2]


def test_traced_values_are_scipys():
    """Under a transformation the integral is SciPy's quad of the user's function."""
    want = si.quad(lambda x, k: np.exp(-k * x), 0.0, 2.0, args=(1.5,))
    value, _ = wg.value_and_grad(area)(1.5, 2.0)
    assert value == want[0]
    (y, err), _ = wg.jvp(lambda k: quad(decay, 0.0, 2.0, args=(k,)), (1.5,), (1.0,))
    assert (y, err) == want


def test_plain_quad_vec_and_sample_rules_are_scipys():
    f = lambda x: np.array([np.sin(x), np.exp(-x)])
    got, want = quad_vec(f, 0.0, 1.0), si.quad_vec(f, 0.0, 1.0)
    assert np.array_equal(got[0], want[0]) and got[1] == want[1]
    y = np.exp(-np.linspace(0.0, 1.0, 9))
    x = np.linspace(0.0, 1.0, 9) ** 1.5
    assert wint.romb(y, 0.125) == si.romb(y, 0.125)
    assert wint.simpson(y, x=x) == si.simpson(y, x=x)
    assert wint.trapezoid(y, x) == si.trapezoid(y, x)
    assert np.array_equal(wint.cumulative_trapezoid(y, x, initial=0),
                          si.cumulative_trapezoid(y, x, initial=0))
    assert wint.fixed_quad(np.cos, 0.0, 1.0, n=7) == si.fixed_quad(np.cos, 0.0, 1.0, n=7)


# --- closed forms ------------------------------------------------------------------------
def test_exponential_against_closed_form():
    k, b = 1.5, 2.0
    e = math.exp(-k * b)
    assert_close(area(k, b), (1 - e) / k, rtol=1e-13)
    dk = (k * b * e - (1 - e)) / k ** 2
    assert_close(wg.grad(area, argnums=(0, 1))(k, b), (dk, e), rtol=1e-10)
    assert_close(wg.jacfwd(area, argnums=(0, 1))(k, b), (dk, e), rtol=1e-10)
    # second derivatives: d²/dk², d²/dkdb = -b e, d²/db² = -k e
    dkk = (2 * (1 - e) - 2 * k * b * e - k ** 2 * b ** 2 * e) / k ** 3
    H = wg.hessian(area, argnums=(0, 1))(k, b)
    assert_close(np.array(H, dtype=float), [[dkk, -b * e], [-b * e, -k * e]], rtol=1e-9)


def test_powers_in_both_limits_and_exponent():
    """∫_a^b x^n dx: d/da = -a^n, d/db = b^n (n a Python int, held constant); and
    ∫₀¹ x^t dx = 1/(t+1), whose t-derivative integrates log(x) x^t (singular at 0)."""
    g = wg.grad(lambda a, b: quad(lambda x, n: x ** n, a, b, args=(3,))[0], argnums=(0, 1))
    assert_close(g(0.5, 2.0), (-0.125, 8.0), rtol=1e-12)
    assert_close(g(2.0, 0.5), (-8.0, 0.125), rtol=1e-12)         # reversed limits
    f = lambda t: quad(lambda x, t: x ** t, 0.0, 1.0, args=(t,))[0]
    t = -0.5
    assert_close(f(t), 1 / (t + 1), rtol=1e-10)
    assert_close(wg.grad(f)(t), -1 / (t + 1) ** 2, rtol=1e-8)
    assert_close(wg.grad(wg.grad(f))(t), 2 / (t + 1) ** 3, rtol=1e-7)


def test_gaussian_over_the_real_line():
    """∫ exp(-(x-μ)²/2σ²) dx = σ√(2π): no μ-derivative, √(2π) in σ, and E[x] = μ."""
    def mass(mu, sigma):
        return quad(lambda x, mu, s: wnp.exp(-0.5 * ((x - mu) / s) ** 2), -np.inf, np.inf,
                    args=(mu, sigma))[0]

    def mean(mu, sigma):
        return quad(lambda x, mu, s: x * wnp.exp(-0.5 * ((x - mu) / s) ** 2), -np.inf,
                    np.inf, args=(mu, sigma))[0] / mass(mu, sigma)
    root = math.sqrt(2 * math.pi)
    assert_close(mass(0.7, 1.3), 1.3 * root, rtol=1e-12)
    assert_close(wg.grad(mass, argnums=(0, 1))(0.7, 1.3), (0.0, root), rtol=1e-10,
                 atol=1e-10)
    assert_close(wg.grad(mean, argnums=(0, 1))(0.7, 1.3), (1.0, 0.0), atol=1e-9)
    assert_close(np.array(wg.hessian(mass, argnums=(0, 1))(0.7, 1.3), dtype=float),
                 np.zeros((2, 2)), atol=1e-9)


def test_sine_against_closed_form():
    """∫₀^π sin(θx) dx = (1 - cos πθ)/θ."""
    f = lambda th: quad(lambda x, th: wnp.sin(th * x), 0.0, np.pi, args=(th,))[0]
    th = 1.7
    exact = lambda th: (1 - math.cos(math.pi * th)) / th
    d1 = (math.pi * math.sin(math.pi * th)) / th - (1 - math.cos(math.pi * th)) / th ** 2
    assert_close(f(th), exact(th), rtol=1e-12)
    assert_close(wg.grad(f)(th), d1, rtol=1e-10)
    assert_close(wg.grad(wg.grad(f))(th), fd_derivative(lambda t: float(wg.grad(f)(t)), th,
                                                        1e-5), rtol=1e-6)


def test_infinite_limit_has_zero_derivative():
    g = lambda b, mu: quad(lambda x, mu: wnp.exp(-(x - mu) ** 2), 0.0, b, args=(mu,))[0]
    db, dmu = wg.grad(g, argnums=(0, 1))(np.inf, 0.5)
    assert db == 0.0
    assert_close(dmu, math.exp(-0.25), rtol=1e-10)        # d/dμ = e^{-μ²}
    assert wg.grad(lambda a: quad(lambda x: wnp.exp(x), a, 0.0)[0])(-np.inf) == 0.0
    compiled = wg.compile(wg.grad(g, argnums=(0, 1)), 1.0, 0.5)
    assert_close(compiled(np.inf, 0.5), (0.0, math.exp(-0.25)), rtol=1e-10)
    assert_close(compiled(1.0, 0.5), wg.grad(g, argnums=(0, 1))(1.0, 0.5), rtol=1e-12)


# --- against central differences, to second order ---------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_central_differences_second_order(seed):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.5, 1.5, size=3)
    a, b = rng.uniform(-1.0, 0.0), rng.uniform(1.0, 2.0)

    def f(p, a, b):
        integrand = lambda x, p: wnp.exp(-p[0] * x ** 2) * wnp.cos(p[1] * x) + p[2] * x ** 3
        return quad(integrand, a, b, args=(p,), **TIGHT)[0]
    check_grads(f, p, a, b, order=2, eps=1e-5, rtol=1e-6, atol=1e-8, seed=seed)


def test_central_differences_infinite_interval():
    f = lambda p: quad(lambda x, p: wnp.exp(-p[0] * x) / (1 + p[1] * x ** 2), 0.0, np.inf,
                       args=(p,), **TIGHT)[0]
    check_grads(f, np.array([0.8, 1.3]), order=2, eps=1e-5, rtol=1e-6, atol=1e-8)


def test_forward_and_reverse_agree():
    def f(p):
        return quad(lambda x, p: wnp.tanh(p[0] * x + p[1]) * p[2], 0.0, 2.0, args=(p,))[0]
    p = np.array([0.7, -0.2, 1.3])
    assert_close(wg.grad(f)(p), wg.jacfwd(f)(p), rtol=1e-12)
    H = wg.hessian(f)(p)
    assert_close(H, wg.jacrev(wg.jacfwd(f))(p), rtol=1e-10, atol=1e-12)
    assert_close(H, H.T, rtol=1e-10, atol=1e-12)


def test_pytree_and_array_args():
    params = {"w": np.array([1.0, 2.0]), "c": 0.5}
    f = lambda params: quad(lambda x, p: p["w"][0] * x + p["w"][1] * x ** 2 + p["c"], 0.0,
                            1.0, args=(params,))[0]
    g = wg.grad(f)(params)
    assert_close(g["w"], [0.5, 1 / 3], rtol=1e-12)
    assert_close(g["c"], 1.0, rtol=1e-12)


# --- transformations ---------------------------------------------------------------------
def test_vmap_loops_over_the_batch(loops):
    ks = np.array([0.5, 1.0, 2.0])
    assert_close(wg.vmap(lambda k: area(k, 1.0))(ks), (1 - np.exp(-ks)) / ks, rtol=1e-13)
    d = wg.vmap(wg.grad(lambda k: area(k, 1.0)))(ks)
    assert_close(d, [wg.grad(lambda k: area(k, 1.0))(k) for k in ks], rtol=1e-13)
    bs = np.array([0.5, 1.0, np.inf])
    assert_close(wg.vmap(wg.grad(lambda b: area(1.0, b)))(bs), np.exp(-bs), rtol=1e-12)
    assert any(name.startswith("quad") for name in loops)        # (one call per example)


def test_compile():
    g = wg.compile(wg.grad(area, argnums=(0, 1)), 1.0, 1.0)
    for k, b in [(0.5, 2.0), (2.0, 0.5)]:
        assert_close(g(k, b), wg.grad(area, argnums=(0, 1))(k, b), rtol=1e-12)
    h = wg.compile(wg.hessian(lambda k: area(k, 1.0)), 1.0)
    assert_close(h(0.7), wg.hessian(lambda k: area(k, 1.0))(0.7), rtol=1e-12)


def test_taylor_mode():
    f = lambda k: area(k, 1.0)         # Σ_n (-k)^n / (n+1)!, so f^(j)(0) = (-1)^j / (j+1)
    coefficients = wg.derivatives(f, order=3)(0.0)
    assert_close(coefficients, [1.0, -1 / 2, 1 / 3, -1 / 4], rtol=1e-9)


# --- closures ----------------------------------------------------------------------------
def test_integrand_closing_over_traced_values():
    def f(k, b):
        return quad(lambda x: wnp.exp(-k * x), 0.0, b)[0]
    k, b = 1.5, 2.0
    assert_close(wg.grad(f, argnums=(0, 1))(k, b), wg.grad(area, argnums=(0, 1))(k, b),
                 rtol=1e-12)
    assert_close(wg.hessian(f)(k, b), wg.hessian(area)(k, b), rtol=1e-10)
    assert_close(wg.vmap(wg.grad(f), in_axes=(0, None))(np.array([1.0, 2.0]), b),
                 [wg.grad(area)(1.0, b), wg.grad(area)(2.0, b)], rtol=1e-12)
    assert_close(wg.compile(wg.grad(f), 1.0, b)(k, b), wg.grad(area)(k, b), rtol=1e-12)

    def mixed(k, s):                 # a closure and args together
        return quad(lambda x, s: s * wnp.exp(-k * x), 0.0, 1.0, args=(s,))[0]
    assert_close(wg.grad(mixed, argnums=(0, 1))(1.5, 2.0),
                 (2.0 * wg.grad(area)(1.5, 1.0), area(1.5, 1.0)), rtol=1e-12)


def test_closure_that_cannot_be_traced_is_refused():
    def f(k):
        def branchy(x):
            return k * x if x < 0.5 else k * (1 - x)
        return quad(branchy, 0.0, 1.0, points=[0.5])[0]
    with pytest.raises(ValueError, match="closes over.*cannot be traced without values"
                                         ".*pass that value in args"):
        wg.grad(f)(2.0)
    # the same integrand taking k through args is fine: SciPy calls it on numbers
    g = lambda k: quad(lambda x, k: k * x if x < 0.5 else k * (1 - x), 0.0, 1.0, args=(k,),
                       points=[0.5])[0]
    assert_close(wg.grad(g)(2.0), 0.25, rtol=1e-12)


# --- points and weights ------------------------------------------------------------------
def test_traced_points_have_zero_derivative():
    """∫₀¹ |x - t| dx = t² - t + 1/2, with a breakpoint at the kink t."""
    f = lambda t: quad(lambda x, t: wnp.abs(x - t), 0.0, 1.0, args=(t,), points=[t])[0]
    assert_close(f(0.3), 0.09 - 0.3 + 0.5, rtol=1e-13)
    assert_close(wg.grad(f)(0.3), 2 * 0.3 - 1, rtol=1e-12)
    assert_close(wg.compile(wg.grad(f), 0.5)(0.3), 2 * 0.3 - 1, rtol=1e-12)


def test_fourier_weight_with_traced_frequency():
    """∫₀^∞ e^{-x} cos(ωx) dx = 1/(1+ω²); ∫₀¹ x sin(ωx) dx (sin weight)."""
    f = lambda w: quad(lambda x: wnp.exp(-x), 0.0, np.inf, weight="cos", wvar=w)[0]
    w = 2.0
    assert_close(f(w), 1 / (1 + w * w), rtol=1e-10)
    assert_close(wg.grad(f)(w), -2 * w / (1 + w * w) ** 2, rtol=1e-9)
    assert_close(wg.grad(wg.grad(f))(w), (6 * w * w - 2) / (1 + w * w) ** 3, rtol=1e-8)
    g = lambda w, b: quad(lambda x: x, 0.0, b, weight="sin", wvar=w)[0]
    exact = lambda w, b: (math.sin(w * b) - w * b * math.cos(w * b)) / w ** 2
    assert_close(g(w, 1.5), exact(w, 1.5), rtol=1e-12)
    assert_close(wg.grad(g, argnums=(0, 1))(w, 1.5),
                 (fd_derivative(lambda w: exact(w, 1.5), w),
                  1.5 * math.sin(w * 1.5)), rtol=1e-8)


def test_cauchy_weight_with_traced_limits_and_args():
    """PV ∫_a^b s/(x - c) dx = s log((b - c)/(c - a))."""
    f = lambda a, b, s: quad(lambda x, s: s + 0 * x, a, b, args=(s,), weight="cauchy",
                             wvar=0.5)[0]
    a, b, s = 0.0, 2.0, 1.3
    assert_close(f(a, b, s), s * math.log(1.5 / 0.5), rtol=1e-12)
    assert_close(wg.grad(f, argnums=(0, 1, 2))(a, b, s),
                 (s / 0.5, s / 1.5, math.log(3.0)), rtol=1e-10)


def test_algebraic_weight_with_traced_args():
    """∫₀¹ s x^α dx with weight 'alg' (α, 0): s/(α+1)."""
    f = lambda s: quad(lambda x, s: s * x, 0.0, 1.0, args=(s,), weight="alg",
                       wvar=(0.5, 0.0))[0]
    assert_close(wg.grad(f)(2.0), 1 / 2.5, rtol=1e-12)


# --- more of SciPy's options ------------------------------------------------------------
def test_complex_func():
    f = lambda w: quad(lambda x, w: wnp.exp(1j * w * x), 0.0, 1.0, args=(w,),
                       complex_func=True)[0]
    w = 2.0
    np.testing.assert_allclose(f(w), (np.exp(2j) - 1) / 2j, rtol=1e-12)
    d = np.exp(1j * w) / w + 1j * (np.exp(1j * w) - 1) / w ** 2        # ∫ ix e^{iwx}
    assert_close(wg.grad(lambda w: wnp.real(f(w)))(w), d.real, rtol=1e-10)
    assert_close(wg.grad(lambda w: wnp.imag(f(w)))(w), d.imag, rtol=1e-10)


def test_full_output_and_abserr():
    def f(k):
        y, err, info = quad(decay, 0.0, 1.0, args=(k,), full_output=1)
        assert info["neval"] == 21 and isinstance(info["alist"], np.ndarray)
        return y + err
    assert_close(wg.grad(f)(1.5), wg.grad(lambda k: area(k, 1.0))(1.5), rtol=1e-13)
    # abserr is traced with a zero derivative
    assert wg.grad(lambda k: quad(decay, 0.0, 1.0, args=(k,))[1])(1.5) == 0.0
    with pytest.raises(ValueError, match="full_output.*wg.compile or wg.vmap"):
        wg.compile(lambda k: quad(decay, 0.0, 1.0, args=(k,), full_output=1)[0], 1.0)


def test_non_convergence_of_a_derivative_integral_warns():
    f = lambda t: quad(lambda x, t: x ** (t - 1), 0.0, 1.0, args=(t,), limit=3)[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wg.grad(f)(0.5)
    messages = [str(w.message) for w in caught if issubclass(w.category,
                                                             si.IntegrationWarning)]
    assert any(m.startswith("The maximum number of subdivisions") for m in messages)
    assert any("vjp of <lambda> (a reverse derivative) did not reach the tolerance" in m
               for m in messages)
    assert all(w.filename == __file__ for w in caught)


# --- quad_vec ----------------------------------------------------------------------------
def test_quad_vec_moments():
    """∫₀^∞ x^j e^{-tx} dx = j!/t^(j+1)."""
    j = np.arange(4)
    m = lambda t: quad_vec(lambda x, t: x ** j * wnp.exp(-t * x), 0.0, np.inf, args=(t,),
                           epsrel=1e-12)[0]
    fact = np.array([1.0, 1.0, 2.0, 6.0])
    t = 1.7
    assert_close(m(t), fact / t ** (j + 1), rtol=1e-10)
    assert_close(wg.jacfwd(m)(t), -(j + 1) * fact / t ** (j + 2), rtol=1e-9)
    assert_close(wg.jacrev(m)(t), wg.jacfwd(m)(t), rtol=1e-10)
    assert_close(wg.jacfwd(wg.jacrev(m))(t), (j + 1) * (j + 2) * fact / t ** (j + 3),
                 rtol=1e-8)


def test_quad_vec_shapes_limits_and_closures():
    def f(s, b):
        y, err = quad_vec(lambda x: wnp.stack([s * x, s * x ** 2]).reshape(2, 1), 0.0, b)
        assert y.shape == (2, 1)
        return wnp.sum(y * np.array([[1.0], [2.0]]))
    s, b = 1.5, 2.0
    assert_close(f(s, b), s * (b ** 2 / 2 + 2 * b ** 3 / 3), rtol=1e-12)
    assert_close(wg.grad(f, argnums=(0, 1))(s, b),
                 (b ** 2 / 2 + 2 * b ** 3 / 3, s * (b + 2 * b ** 2)), rtol=1e-12)
    def full(k):
        out = quad_vec(lambda x, k: wnp.exp(-k * x), 0.0, 1.0, args=(k,), full_output=True)
        assert len(out) == 3 and out[2].success
        return out[0]
    assert_close(wg.grad(full)(2.0), wg.grad(lambda k: area(k, 1.0))(2.0), rtol=1e-10)


# --- the sample rules --------------------------------------------------------------------
def test_fixed_quad_is_differentiable_everywhere():
    f = lambda a, b, w: wint.fixed_quad(lambda x, w: wnp.sin(w * x), a, b, args=(w,),
                                        n=20)[0]
    a, b, w = 0.2, 1.4, 1.7
    exact = lambda a, b, w: (math.cos(w * a) - math.cos(w * b)) / w
    assert_close(f(a, b, w), exact(a, b, w), rtol=1e-13)
    assert_close(wg.grad(f, argnums=(0, 1))(a, b, w), (-math.sin(w * a), math.sin(w * b)),
                 rtol=1e-12)
    check_grads(f, a, b, w, order=2)
    closure = lambda w: wint.fixed_quad(lambda x: wnp.sin(w * x), a, b, n=20)[0]
    assert_close(wg.grad(closure)(w), wg.grad(f, argnums=2)(a, b, w), rtol=1e-13)
    with pytest.raises(ValueError, match="finite limits"):
        wg.grad(lambda b: wint.fixed_quad(np.cos, 0.0, b)[0])(np.inf)


@pytest.mark.parametrize("n", [5, 6, 2])
def test_simpson_trapezoid_cumulative_on_traced_samples(n):
    rng = np.random.default_rng(n)
    x = np.sort(rng.uniform(0.0, 2.0, n))
    y = np.sin(x)
    Y = np.stack([y, 2 * y])                                       # along axis -1
    traced_simpson = lambda y, x: wint.simpson(y, x=x)
    assert_close(wg.vjp(traced_simpson, Y, x)[0], si.simpson(Y, x=x), rtol=1e-13)
    assert_close(wg.vmap(traced_simpson, in_axes=(0, None))(Y, x), si.simpson(Y, x=x),
                 rtol=1e-13)
    check_grads(traced_simpson, y, x, order=2)
    check_grads(lambda y, x: wint.trapezoid(y, x), y, x, order=1)
    check_grads(lambda y: wint.simpson(y, dx=0.3), y, order=1)
    ct = lambda y, x: wint.cumulative_trapezoid(y, x, initial=0)
    assert_close(wg.vmap(ct, in_axes=(0, None))(Y, x),
                 si.cumulative_trapezoid(Y, x, initial=0), rtol=1e-13)
    check_grads(ct, y, x, order=1)


def test_simpson_along_an_axis_and_romb():
    y = np.exp(-np.linspace(0.0, 1.0, 9))[:, None] * np.array([1.0, 2.0])
    assert_close(wg.vmap(lambda s: wint.simpson(s * y, dx=0.125, axis=0))(np.ones(2)),
                 np.tile(si.simpson(y, dx=0.125, axis=0), (2, 1)), rtol=1e-13)
    traced = lambda y, dx: wint.romb(y, dx, axis=0)
    out, _ = wg.vjp(traced, y, 0.125)
    assert_close(out, si.romb(y, 0.125, axis=0), rtol=1e-13)
    check_grads(traced, y, 0.125, order=1)
    with pytest.raises(ValueError, match="one plus a non-negative power of 2"):
        wg.grad(lambda y: wint.romb(y))(np.ones(6))


# --- refusals ----------------------------------------------------------------------------
def test_refusals():
    alg = lambda a: quad(lambda x: x, a, 1.0, weight="alg", wvar=(0.5, 0.5))[0]
    with pytest.raises(NotImplementedError, match="depends on the limits"):
        wg.grad(alg)(0.0)
    with pytest.raises(NotImplementedError, match="traced wvar"):
        wg.grad(lambda al: quad(lambda x: x, 0.0, 1.0, weight="alg", wvar=(al, 0.5))[0])(0.5)
    with pytest.raises(NotImplementedError, match="hypersingular"):
        wg.grad(lambda c: quad(lambda x: x, 0.0, 1.0, weight="cauchy", wvar=c)[0])(0.5)
    with pytest.raises(ValueError, match="must return a number.*quad_vec"):
        wg.grad(lambda k: quad(lambda x, k: k * np.ones(2) * x, 0.0, 1.0, args=(k,))[0])(1.0)
    with pytest.raises(TypeError, match="complex_func=True"):
        wg.grad(lambda k: quad(lambda x, k: k * np.exp(1j * x), 0.0, 1.0, args=(k,))[0])(1.0)
    with pytest.raises(TypeError, match="complex values in args"):
        wg.grad(lambda k: quad(lambda x, k: wnp.real(k * x), 0.0, 1.0, args=(1j * k,))[0])(1.0)


def test_refusal_names_a_scipy_error_unchanged():
    """SciPy's own errors on traced values are SciPy's (points with an infinite limit)."""
    with pytest.raises(ValueError, match="Infinity inputs cannot be used with break points"):
        wg.grad(lambda k: area_points(k))(1.0)


def area_points(k):
    return quad(decay, 0.0, np.inf, args=(k,), points=[1.0])[0]
