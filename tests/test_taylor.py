"""Taylor mode: coefficients against sympy series to order 10, derivatives against nested
jvp to order 4, symbolic expansion (under trace, of a traced graph, inside grad), arrays,
pytrees, every primitive covered, and the errors."""
import functools
import math
import warnings

import numpy as np
import pytest
import sympy as sp

import wengert as wg
import wengert.math as wm
from wengert.primitives import scalar as P
from wengert import REGISTRY
from fd import assert_close

ORDER = 10
t = sp.Symbol("t")
R = sp.Rational

# name -> (wengert function, sympy function, expansion point).  Away from 0 for the
# elementary functions; compositions at 0, where sympy's series is quick.
CASES = {
    "exp": (wm.exp, sp.exp, R(7, 10)),
    "sin": (wm.sin, sp.sin, R(3, 10)),
    "cos": (wm.cos, sp.cos, R(-4, 5)),
    "log": (wm.log, sp.log, R(3, 2)),
    "rational": (lambda x: (1 + x) / (2 + x * x), lambda x: (1 + x) / (2 + x ** 2), R(2, 5)),
    "rational_powers": (lambda x: x ** 3 / (1 + x) ** 2 - 1 / x ** 2,
                        lambda x: x ** 3 / (1 + x) ** 2 - 1 / x ** 2, R(6, 5)),
    "exp_sin": (lambda x: wm.exp(wm.sin(x)), lambda x: sp.exp(sp.sin(x)), 0),
    "exp_sin_over": (lambda x: wm.exp(wm.sin(x)) / (1 + x * x),
                     lambda x: sp.exp(sp.sin(x)) / (1 + x ** 2), 0),
    "log_cos": (lambda x: wm.log(1 + x * x) * wm.cos(x),
                lambda x: sp.log(1 + x ** 2) * sp.cos(x), 0),
    "sqrt_atan": (lambda x: wm.sqrt(1 + x) * wm.atan(x), lambda x: sp.sqrt(1 + x) * sp.atan(x), 0),
    "tan": (lambda x: wm.tan(x) / (1 + x), lambda x: sp.tan(x) / (1 + x), 0),
    "asin_acos": (lambda x: wm.asin(x / 2) + wm.acos(x / 3),
                  lambda x: sp.asin(x / 2) + sp.acos(x / 3), 0),
    "hyperbolic": (lambda x: wm.tanh(x) * wm.cosh(x) - wm.sinh(x * x),
                   lambda x: sp.tanh(x) * sp.cosh(x) - sp.sinh(x ** 2), 0),
    "powers": (lambda x: (1 + x) ** 2.5 * 2.0 ** x, lambda x: (1 + x) ** R(5, 2) * 2 ** x, 0),
    "cbrt_log10": (lambda x: wm.cbrt(1 + x) + wm.log10(2 + x),
                   lambda x: sp.cbrt(1 + x) + sp.log(2 + x, 10), 0),
    "atan2": (lambda x: wm.atan2(1 + x, 2 - x), lambda x: sp.atan2(1 + x, 2 - x), 0),
    "integer_powers": (lambda x: (1 + x) ** -3 + x ** 4, lambda x: (1 + x) ** -3 + x ** 4, 0),
    # NumPy's other elementwise functions (wengert.numpy's arcsinh, hypot, logaddexp, ...)
    "inverse_hyperbolic": (lambda x: P.asinh(x) + P.acosh(2 + x) * P.atanh(x / 2),
                           lambda x: sp.asinh(x) + sp.acosh(2 + x) * sp.atanh(x / 2), 0),
    "exp2_log2": (lambda x: P.exp2(x) * P.log2(2 + x), lambda x: 2 ** x * sp.log(2 + x, 2), 0),
    "hypot": (lambda x: P.hypot(1 + x, 2 - x), lambda x: sp.sqrt((1 + x) ** 2 + (2 - x) ** 2),
              0),
    # (at a tie; sympy's series of an asymmetric one takes minutes)
    "logaddexp": (lambda x: P.logaddexp(x, -x), lambda x: sp.log(sp.exp(x) + sp.exp(-x)), 0),
    "logaddexp2": (lambda x: P.logaddexp2(2 * x, -x),
                   lambda x: sp.log(2 ** (2 * x) + 2 ** (-x), 2), 0),
}


@functools.lru_cache(maxsize=None)
def sympy_coefficients(name):
    _, F, x0 = CASES[name]
    series = sp.series(F(x0 + t), t, 0, ORDER + 1).removeO()
    return [float(series.coeff(t, j)) for j in range(ORDER + 1)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_coefficients_against_sympy_to_order_10(name):
    f, _, x0 = CASES[name]
    expected = sympy_coefficients(name)
    got = wg.taylor(f, float(x0), 1.0, order=ORDER)
    scale = max(1.0, max(abs(c) for c in expected))
    assert_close(got, expected, rtol=1e-10, atol=1e-11 * scale)


def test_several_variables_along_a_direction_against_sympy():
    f = lambda p: wm.exp(p[0] * p[1]) + wm.sin(p[0]) / (1 + p[1] ** 2)
    F = lambda x, y: sp.exp(x * y) + sp.sin(x) / (1 + y ** 2)
    x0, y0, vx, vy = R(1, 2), R(-1, 3), R(1), R(2)
    series = sp.series(F(x0 + t * vx, y0 + t * vy), t, 0, 7).removeO()
    expected = [float(series.coeff(t, j)) for j in range(7)]
    got = wg.taylor(f, (0.5, -1 / 3), (1.0, 2.0), order=6)
    assert_close(got, expected, rtol=1e-12, atol=1e-12)


# ---- against nested forward mode ----------------------------------------------------------
NESTED = {name: f for name, (f, _, _) in CASES.items()}
NESTED.update({
    "cotan": lambda x: wm.cotan(1 + x),
    "abs_max_min": lambda x: abs(x - 2.0) * wm.maximum(x, 0.1) + wm.minimum(x * x, 3.0),
    "select": lambda x: wm.select(x > 0, wm.exp(x), x * x),
    "pow_both": lambda x: (1.5 + x) ** (0.5 + x),
})


def nested_derivatives(f, x, order):
    out, g = [f(x)], f
    for _ in range(order):
        g = (lambda h: lambda y: wg.jvp(h, (y,), (1.0,))[1])(g)
        out.append(g(x))
    return out


@pytest.mark.parametrize("name", sorted(NESTED))
def test_derivatives_agree_with_nested_jvp_to_order_4(name):
    f = NESTED[name]
    x = 0.35
    assert_close(wg.derivatives(f, order=4)(x), nested_derivatives(f, x, 4),
                 rtol=1e-10, atol=1e-10)


def test_order_one_is_the_dual_number():
    f = lambda x: wm.atan(wm.exp(x) / (1 + x ** 2))
    y0, y1 = wg.taylor(f, 0.8, 1.0, order=1)
    d = f(wg.Dual(0.8, 1.0))
    assert (y0, y1) == pytest.approx((d.primal, d.tangent), rel=1e-15)


def test_integer_powers_are_exact_at_zero():
    assert wg.taylor(lambda x: x ** 3, 0.0, 1.0, order=4) == [0.0, 0.0, 0.0, 1.0, 0.0]
    assert wg.derivatives(lambda x: x ** 2, order=0)(3.0) == [9.0]


def test_powers_whose_value_underflows_keep_their_finite_derivatives():
    # the recurrence scales every coefficient by x_0^r: where that was 0 (x^2.5 at 1e-300)
    # every derivative was 0, though the second is 3.75e-150, as grad gives it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = wg.derivatives(lambda x: x ** 2.5, 3)(1e-300)
        assert got == [0.0, 0.0, 3.75e-150, 1.875e150]
        assert got[2] == wg.grad(wg.grad(lambda x: x ** 2.5))(1e-300)
        assert wg.derivatives(lambda x: x ** 3.0, 4)(1e-200) == [0.0, 0.0, 6e-200, 6.0, 0.0]
        x = np.array([1e-20, 2.0], np.float32)
        got = wg.derivatives(lambda x: x ** 2.5, 3)(x)
        want = wg.derivatives(lambda x: x ** 2.5, 3)(x.astype(float))
        assert all(g.dtype == np.float32 for g in got)
        assert got[0][0] == 0 and got[1][0] > 0       # (1e-50 underflows in float32)
        assert_close(np.array(got[1:], float), want[1:], rtol=1e-6, atol=0)


def test_negative_integer_powers_at_zero_are_infinite_as_the_derivatives_are():
    # 1/x^n's series divided by x_0 = 0 and gave [inf, nan, nan, ...]; the derivatives of
    # x^-n at 0+ are ±inf, the k-th with the sign of (-n)(-n-1)...(-n-k+1), as grad's
    inf = math.inf
    with np.errstate(divide="ignore"):         # (0 to a negative power: inf, as NumPy)
        assert wg.derivatives(lambda x: x ** -2, 3)(0.0) == [inf, -inf, inf, -inf]
        assert wg.grad(lambda x: x ** -2)(0.0) == -inf
        got = wg.derivatives(lambda x: x ** -3, 2)(np.array([0.0, 2.0]))
        assert [c.tolist() for c in got] == [[inf, 0.125], [-inf, -0.1875], [inf, 0.375]]
        # along -2: the limits as t -> 0+ of the derivatives of (-2t)⁻¹ = -1/(2t)
        assert wg.taylor(lambda x: x ** -1, 0.0, -2.0, order=3) == [inf, inf, -inf, inf]


def test_real_powers_at_zero_are_their_series_or_infinite_not_nan():
    # the power recurrence divides by x_0: x^2.5 at 0 was [0, nan, nan, ...].  Along
    # x(t) = v t the coefficients are binom(r, k) v^k 0^(r-k): 0 below order r, ±inf
    # above it, as nested jvp gives them; a power of a series that starts later can be
    # a series again: (t²)^1.5 = t³, (t² + t)^2 = t² + 2t³ + t⁴
    inf = math.inf
    cases = [(lambda x: x ** 2.5, 1.0, [0.0, 0.0, 0.0, inf, -inf]),
             (lambda x: x ** 2.5, 2.0, [0.0, 0.0, 0.0, inf, -inf]),
             (lambda x: x ** 1.5, 1.0, [0.0, 0.0, inf, -inf, inf]),
             (lambda x: wg.math.cbrt(x), 1.0, [0.0, inf, -inf, inf, -inf]),
             (lambda x: x ** 3.0, 2.0, [0.0, 0.0, 0.0, 8.0, 0.0]),
             (lambda x: x ** 0.0, 2.0, [1.0, 0.0, 0.0, 0.0, 0.0]),
             (lambda x: (x * x) ** 1.5, 1.0, [0.0, 0.0, 0.0, 1.0, 0.0]),
             (lambda x: (x * x + x) ** 2.0, 1.0, [0.0, 0.0, 1.0, 2.0, 1.0]),
             (lambda x: (x * x + x) ** 1.5, 1.0, [0.0, 0.0, inf, -inf, inf])]
    for f, v, want in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = wg.taylor(f, 0.0, v, order=4)
        assert got == want and all(type(c) is float for c in got), (got, want)
    with np.errstate(divide="ignore"):     # (nested jvp: 0 to a negative power, inf)
        nested = [_nested(lambda x: x ** 2.5, 0.0, 1.0, k) / math.factorial(k)
                  for k in range(1, 5)]
    assert nested == cases[0][2][1:]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x, v = np.array([0.0, 0.7, 0.0]), np.array([1.0, -0.4, 0.0])
        got = wg.taylor(lambda x: x ** 2.5, x, v, order=4)
        away = wg.taylor(lambda x: x ** 2.5, 0.7, -0.4, order=4)
        for k in range(5):                 # (the other elements as before, to rounding: an
            #                                array's power may round as a scalar's does not)
            assert got[k][1] == pytest.approx(away[k], rel=1e-14) and got[k][2] == 0.0
        assert [c[0] for c in got] == [0.0, 0.0, 0.0, inf, -inf]
        assert wg.taylor(lambda x: x ** 2.5, np.float32(0.0), np.float32(1.0), 3)[3].dtype \
            == np.float32


# ---- symbolic: graphs in, graphs out ----------------------------------------------------------
f_sym = CASES["exp_sin_over"][0]


def test_expansion_under_trace_is_a_graph_with_the_same_numbers():
    graph = wg.trace(lambda x, v: wg.taylor(f_sym, x, v, order=5), 0.3, 1.0)
    assert len(graph.outputs) == 6
    assert_close(graph(0.3, 1.0), wg.taylor(f_sym, 0.3, 1.0, order=5), rtol=1e-13)
    assert_close(graph(-0.2, 0.5), wg.taylor(f_sym, -0.2, 0.5, order=5), rtol=1e-13)


def test_expansion_of_a_traced_graph():
    traced = wg.trace(f_sym, 0.3)
    assert_close(wg.taylor(traced, 0.3, 1.0, order=6), wg.taylor(f_sym, 0.3, 1.0, order=6),
                 rtol=1e-14)
    graph = wg.trace(lambda x, v: wg.taylor(traced, x, v, order=3), 0.3, 1.0)
    assert_close(graph(0.7, 1.0), wg.taylor(f_sym, 0.7, 1.0, order=3), rtol=1e-13)


def test_coefficients_are_differentiable():
    # d/dx of the t³ coefficient is 4·(t⁴ coefficient): both are derivatives/j!
    c3 = lambda x: wg.taylor(f_sym, x, 1.0, order=3)[3]
    d = wg.derivatives(f_sym, order=4)(0.3)
    assert_close(wg.grad(c3)(0.3), d[4] / 6, rtol=1e-12)
    assert_close(wg.jvp(c3, (0.3,), (1.0,))[1], d[4] / 6, rtol=1e-12)
    # and inside a jvp, taylor of a traced direction
    assert_close(wg.grad(lambda v: wg.taylor(wm.exp, 0.0, v, order=3)[3])(2.0), 3 * 4 / 6)


# ---- arrays and pytrees ------------------------------------------------------------------------
def test_logaddexp_and_logsumexp_series_do_not_cancel():
    # log(e^a + e^b) expanded as the log of a sum of exp series cancels where a's series
    # has large coefficients: at e^x, x = 10, the t^4 coefficient was 918.89 for e^10/24
    import wengert.numpy as wnp
    exact = [math.exp(10) / math.factorial(k) for k in range(5)]
    for f in (lambda x: wnp.logaddexp(wnp.exp(x), 0.0),
              lambda x: wnp.logaddexp2(wnp.exp(x) / math.log(2), 0.0) * math.log(2),
              lambda x: wnp.logaddexp(-1e3, wnp.exp(x)),
              lambda x: wnp.logsumexp(wnp.stack([wnp.exp(x), 0.0 * x])),
              lambda x: wnp.logsumexp(wnp.stack([wnp.exp(x), 0.0 * x])[:, None], axis=0,
                                      keepdims=True)[0]):
        got = np.ravel(wg.taylor(f, 10.0, 1.0, order=4))
        assert np.allclose(got, exact, rtol=1e-14, atol=0), got
    # along axes of an array, against nested jvps
    rng = np.random.default_rng(3)
    x, v = rng.normal(size=(3, 4)) * 3, rng.normal(size=(3, 4))
    for axis, keepdims in ((None, False), ((1,), False), ((0,), True), ((0, 1), True)):
        f = lambda x: wnp.logsumexp(x, axis=axis, keepdims=keepdims)
        series = wg.taylor(f, x, v, order=3)
        d = lambda g: (lambda x: wg.jvp(g, (x,), (v,))[1])
        assert np.allclose(series[2], d(d(f))(x) / 2, rtol=1e-12, atol=1e-13)
        assert np.allclose(series[3], d(d(d(f)))(x) / 6, rtol=1e-10, atol=1e-12)


def test_elementwise_arrays_match_scalars():
    xs = np.array([0.1, 0.5, 1.3])
    got = wg.derivatives(f_sym, order=5)(xs)
    for k, x in enumerate(xs):
        assert_close([c[k] for c in got], wg.derivatives(f_sym, order=5)(x), rtol=1e-13)


def test_constant_arrays_broadcast_into_the_coefficients():
    w = np.array([1.0, 2.0, 3.0])
    got = wg.taylor(lambda x: wm.exp(w * x) + w, 0.0, 1.0, order=3)
    assert_close(got, [np.exp(0) + w, w, w ** 2 / 2, w ** 3 / 6], rtol=1e-14)
    got = wg.taylor(lambda x: x + w, 1.0, 1.0, order=2)
    assert [c.shape for c in got] == [(3,)] * 3


def test_pytrees_in_and_out():
    f = lambda p: {"s": wm.sin(p["a"]) * p["b"], "e": wm.exp(p["b"])}
    got = wg.taylor(f, {"a": 0.0, "b": 1.0}, {"a": 1.0, "b": 0.0}, order=3)
    assert [c["s"] for c in got] == pytest.approx([0.0, 1.0, 0.0, -1 / 6])
    assert [c["e"] for c in got] == pytest.approx([math.e, 0.0, 0.0, 0.0])


# ---- coverage and errors ----------------------------------------------------------------------
def test_every_differentiable_builtin_primitive_has_a_taylor_rule():
    """Each has an entry, a decomposition, is linear, or gets its rule from its JVP; the
    ones from their JVP are checked below."""
    from wengert.ad.taylor import ByJVP, rule_for
    for name, p in REGISTRY.items():
        if p.builtin and (p.partials is not None or p.jvp is not None):
            rule = rule_for(p, 3)
            assert callable(rule), name
            if type(rule) is ByJVP:
                assert p in FROM_JVP_CHECKED or p.dtype_rule == "bool" \
                    or all(x is None for x in (p.partials or [1])) \
                    or p.name in NOT_SMOOTH or p.name in FIRST_ORDER or p.name in HELD \
                    or p.name in ACROSS_EXAMPLES, \
                    f"{name}: a rule from its JVP, not tested here"


def _nested(f, x, v, k):
    """The k-th derivative of f(x + t v) at t = 0 by nested jvp."""
    g = lambda t: f(x + t * v)
    for _ in range(k):
        g = (lambda g: lambda t: wg.jvp(g, (t,), (1.0,))[1])(g)
    return g(0.0)


_r = np.random.default_rng(5)
_B = _r.normal(size=(3, 3)) + 2 * np.eye(3)
_S = _B @ _B.T + np.eye(3)
_V = _r.normal(size=(3, 3))
_V = _V + _V.T
_x = _r.uniform(0.5, 1.5, size=4) * _r.choice([-1, 1], size=4)


def _wnp():
    import wengert.numpy as wnp
    return wnp


def _sl():
    return pytest.importorskip("wengert.scipy.linalg")


# primitive -> (function through it, point, direction)
def _traced_sparse(data):
    sparse = pytest.importorskip("wengert.scipy.sparse")
    # (CSC: on plain values, in central differences, SciPy's spsolve takes it silently)
    return sparse.csc_array((data, np.array([0, 1, 0, 1]), np.array([0, 2, 4])), shape=(2, 2))


FROM_JVP = {
    "prod": (lambda x: _wnp().prod(x), _x, _x[::-1]),
    "cumprod": (lambda x: _wnp().cumprod(x), _x, _x[::-1]),
    "det": (lambda m: _wnp().linalg.det(m), _B, _V),
    "logdet": (lambda m: _wnp().linalg.slogdet(m)[1], _B, _V),
    "cholesky": (lambda m: _wnp().linalg.cholesky(m), _S, _V),
    "eigvalsh": (lambda m: _wnp().linalg.eigvalsh(m), _S, _V),
    "eigvecsh": (lambda m: _wnp().abs(_wnp().linalg.eigh(m)[1]), _S, _V),
    "svdvals": (lambda m: _wnp().linalg.svd(m, compute_uv=False), _B, _V),
    "svd_u": (lambda m: _wnp().abs(_wnp().linalg.svd(m)[0]), _B, _V),
    "qr_r": (lambda m: _wnp().linalg.qr(m)[1], _B, _V),
    "qr_q": (lambda m: _wnp().linalg.qr(m)[0], _B, _V),
    "lu_factor": (lambda m: _sl().lu_factor(m)[0], _B, _V),
    "eigh_values": (lambda m: _sl().eigh(m)[0], _S, _V),
    "eigh_vectors": (lambda m: _wnp().abs(_sl().eigh(m)[1]), _S, _V),
    "top_eigvecsh": (lambda m: _wnp().abs(REGISTRY["top_eigvecsh"](m)), _S, _V),
    "solve_banded": (lambda m: _sl().solve_banded((1, 1), m + 9.0 * np.eye(3)[1][:, None],
                                                  m[0]), _B, _V),
    "convolve": (lambda x: pytest.importorskip("wengert.scipy.signal").convolve(
        x, _wnp().sin(x), "same"), _x, _x[::-1]),
    "lfilter": (lambda x: pytest.importorskip("wengert.scipy.signal").lfilter(
        x[:2], _wnp().concatenate([np.ones(1), 0.3 * x[2:]]), _wnp().sin(x)), _x, _x[::-1]),
    "gen_eigh_values": (lambda m: _sl().eigh(m, _S)[0], _S + _B.T @ _B, _V),
    "gen_eigh_vectors": (lambda m: _wnp().abs(_sl().eigh(m, _S)[1]), _S + _B.T @ _B, _V),
    "svd_vh": (lambda m: _wnp().abs(_wnp().linalg.svd(m)[2]), _B, _V),
    "cofactor": (lambda m: REGISTRY["cofactor"](m), _B, _V),
    # a 2x2 sparse matrix whose four entries are traced, times and solving for sin(x[:2])
    "sparse_data_matmul": (lambda x: _traced_sparse(x) @ _wnp().sin(x[:2]), _x, _x[::-1]),
    "sparse_data_solve": (lambda x: pytest.importorskip("wengert.scipy.sparse.linalg").spsolve(
        _traced_sparse(x + np.array([3.0, 0.0, 0.0, 3.0])), _wnp().sin(x[:2])), _x, _x[::-1]),
    "cofactor_derivative": (lambda m: REGISTRY["cofactor_derivative"](m, _V.T + m), _B, _V),
    "logabsdet": (lambda m: REGISTRY["logabsdet"](m), _B, _V),
    "i0e": (lambda x: REGISTRY["i0e"](x), _x, _x[::-1]),
    "i1e": (lambda x: REGISTRY["i1e"](x), _x, _x[::-1]),
    "ive": (lambda x: REGISTRY["ive"](x, v=2.5), abs(_x), _x[::-1]),
    "j0": (lambda x: REGISTRY["j0"](x), _x, _x[::-1]),
    "j1": (lambda x: REGISTRY["j1"](x), _x, _x[::-1]),
    "jv": (lambda x: REGISTRY["jv"](x, v=2.5), abs(_x), _x[::-1]),
    "y0": (lambda x: REGISTRY["y0"](x), abs(_x), _x[::-1] / 4),
    "y1": (lambda x: REGISTRY["y1"](x), abs(_x), _x[::-1] / 4),
    "yv": (lambda x: REGISTRY["yv"](x, v=-1.5), abs(_x), _x[::-1] / 4),
    "erfcinv": (lambda x: REGISTRY["erfcinv"](x), 1 + _x / 3, _x[::-1] / 4),
    # the incomplete gamma and beta functions and t's distribution function, in x
    "gammainc": (lambda x: REGISTRY["gammainc"](2.5, x), abs(_x), _x[::-1]),
    "gammaincc": (lambda x: REGISTRY["gammaincc"](0.7, x), abs(_x), _x[::-1]),
    "betainc": (lambda x: REGISTRY["betainc"](2.0, 3.5, x), abs(_x) / 2, _x[::-1] / 4),
    "betaincc": (lambda x: REGISTRY["betaincc"](2.0, 3.5, x), abs(_x) / 2, _x[::-1] / 4),
    "stdtr": (lambda x: REGISTRY["stdtr"](3.0, x), _x, _x[::-1]),
    "gammainc_da": (lambda x: REGISTRY["gammainc_da"](2.5, x), abs(_x), _x[::-1]),
    "betainc_da": (lambda x: REGISTRY["betainc_da"](2.0, 3.5, x), abs(_x) / 2, _x[::-1] / 4),
    "betainc_db": (lambda x: REGISTRY["betainc_db"](2.0, 3.5, x), abs(_x) / 2, _x[::-1] / 4),
    # the truncated normal's quantile function (wengert.random), in both bounds at once
    "truncated_normal_ppf": (lambda x: REGISTRY["truncated_normal_ppf"](
        np.array([0.1, 0.4, 0.7, 0.95]), x - 1.0, x + 0.5), _x, _x[::-1]),
    # numpy.interp in all of x, xp, fp and both ends at once: queries below, between and
    # above the sample points (increasing: a cumulative sum of exponentials), none at one
    "interp": (lambda z: _wnp().interp(np.array([-1.5, -0.2, 0.9, 1.2, 1.6, 2.5]) + 0.1 * z[1],
                                       _wnp().cumsum(_wnp().exp(z)) - 1.0, _wnp().sin(z),
                                       z[0] * z[2], z[3]), _x, _x[::-1]),
    # (not a primitive: an einsum of three operands expands through the JVP too)
    "einsum of three": (lambda m: _wnp().einsum("ij,jk,kl->il", m, m, _wnp().sin(m)), _B, _V),
}
FROM_JVP_CHECKED = {REGISTRY[n] for n in FROM_JVP if n in REGISTRY}
# not smooth, or no derivative at all where they are: their series stops at their JVP
NOT_SMOOTH = {"nextafter", "spacing", "floor", "ceil", "trunc", "round", "floor_divide",
              "eigvals", "eigvecs",     # (and complex: Taylor mode is for real numbers)
              "schur_t", "schur_q"}     # (no derivative, as JAX's schur: the rule raises)
# derivatives to a limited order, so no series to order 4: a gamma draw in its shape has
# two (its implicit derivative loggamma_grad, one, and that one's partial in a, none: a
# third derivative would need ∂³P/∂a³), and so has gammainc in its shape (gammainc_da,
# then gammainc_daa, which has none); tests/test_random.py and tests/test_scipy.py check
# their orders and that the next one says it is not implemented
FIRST_ORDER = {"random_loggamma", "loggamma_grad", "loggamma_grad_da", "gammainc_daa"}
# a draw held at its value while its derivative follows the implicit path (x moving with
# the mean at a fixed value of its distribution function): no function of its arguments
# to take differences of; tests/test_random.py checks its series against mpmath.  So is
# lax.rng_uniform's draw, new numbers at each evaluation (affine in a and b for the numbers
# drawn; tests/test_lax_misc.py checks its partials)
HELD = {"wald_reparam", "rng_uniform"}
# collectives: their series run across a vmap's examples, so tests/test_collectives.py
# checks pmax's and pmin's (from their JVP) against those of amax of the gathered batch
ACROSS_EXAMPLES = {"pmax", "pmin"}


@pytest.mark.parametrize("name", sorted(FROM_JVP))
def test_rules_from_the_jvp(name):
    """Primitives without a Taylor rule of their own expand through their JVP: the order
    2 coefficient against central second differences of f(x + t v), orders 3 and 4
    against nested jvp."""
    f, x, v = FROM_JVP[name]
    got = wg.taylor(f, x, v, order=4)
    h = 1e-4
    second = (np.asarray(f(x + h * v)) - 2 * np.asarray(f(x)) + np.asarray(f(x - h * v))) \
        / (2 * h * h)
    assert_close(got[2], second, rtol=1e-5, atol=1e-6)
    for k in (3, 4):
        assert_close(got[k], _nested(f, x, v, k) / math.factorial(k), rtol=1e-10,
                     atol=1e-12)


def test_a_value_without_derivative_has_a_constant_series():
    # slogdet's sign has no derivative, and at order 2 Taylor mode asked for its rule
    import wengert.numpy as wnp
    m, v = np.diag([2.0, -3.0]), np.arange(4.0).reshape(2, 2)
    got = wg.taylor(lambda m: wnp.linalg.slogdet(m)[0] * m, m, v, order=3)
    assert_close(got[0], -m, rtol=0, atol=0)
    assert_close(got[1], -v, rtol=0, atol=0)
    assert not np.any(got[2]) and not np.any(got[3])


def test_rules_from_the_jvp_differentiate_and_compile():
    """A rule from the JVP builds nodes in a symbolic sweep: the gradient of a Taylor
    coefficient through cholesky against central differences, and compiled."""
    wnp = _wnp()
    f = lambda m: wnp.sum(wg.taylor(wnp.linalg.cholesky, m, _V, order=3)[3] ** 2)
    e = _r.normal(size=(3, 3))
    e = e + e.T
    h = 1e-6
    assert_close(np.sum(wg.grad(f)(_S) * e), (f(_S + h * e) - f(_S - h * e)) / (2 * h),
                 rtol=1e-6)
    assert_close(wg.compile(f, _S)(_S + e / 10), f(_S + e / 10), rtol=1e-12)


def test_a_primitive_of_ones_own_expands_from_its_partials():
    @wg.primitive
    def cube(x):
        return x ** 3
    cube.defpartials(lambda x, ans: 3 * x ** 2)
    assert wg.taylor(cube, 2.0, 1.0, order=5) == [8.0, 12.0, 6.0, 1.0, 0.0, 0.0]
    # and one with no derivative rule at all says so, at any order
    bare = wg.primitive(lambda x: x ** 3, name="bare")
    for order in (1, 3):
        with pytest.raises(NotImplementedError, match="'bare' has no derivative rule"):
            wg.taylor(bare, 2.0, 1.0, order=order)


def test_bad_arguments():
    with pytest.raises(ValueError, match="order must be a non-negative integer"):
        wg.taylor(wm.sin, 1.0, 1.0, order=-1)
    with pytest.raises(ValueError, match="direction has"):
        wg.taylor(lambda p: p[0], (1.0, 2.0), 1.0, order=2)
    with pytest.raises(ValueError, match="shape"):
        wg.taylor(lambda x: x, np.ones(2), np.ones(3), order=2)
    # derivatives takes one variable; a pytree was read as a point with a scalar direction
    with pytest.raises(TypeError, match="derivatives: x is a tuple; it takes a number or an "
                                        "array"):
        wg.derivatives(lambda p: p[0] * p[1], 2)((1.0, 2.0))


@pytest.mark.parametrize("scale", [1e-200, 1.0, 1e200])
def test_hypot_and_atan2_series_at_any_scale(scale):
    """Both are homogeneous: hypot(kx, k) = k·hypot(x, 1), atan2(kx, k) = atan(x); their
    recurrences squared the arguments, which overflowed (inf, nan) or underflowed (0)."""
    x, order = 0.5, 5
    want_atan = wg.taylor(wm.atan, x, 1.0, order=order)
    got = wg.taylor(lambda x: wm.atan2(scale * x, scale), x, 1.0, order=order)
    assert_close(got, want_atan, rtol=1e-13, atol=1e-15)      # (its x⁴ term is 0)
    want_hypot = [c * scale for c in wg.taylor(lambda x: wm.sqrt(1 + x * x), x, 1.0, order)]
    got = wg.taylor(lambda x: _wnp().hypot(scale * x, scale), x, 1.0, order=order)
    np.testing.assert_allclose(got, want_hypot, rtol=1e-13, atol=1e-15 * scale)


def _sinc_power_coefficients(s, order):
    """The t^j coefficients, j = 0..order, of sinc(t)^s = (sin t / t)^s, by mpmath."""
    import mpmath as mp
    with mp.workdps(40):
        return [float(c) for c in mp.taylor(lambda u: mp.sinc(u) ** s, 0, order)]


@pytest.mark.parametrize("p, r", [(2, 0.5), (4, 0.25), (4, 0.75), (3, 1 / 3), (2, 1.5),
                                  (3, 2 / 3), (2, 0.25), (2, -0.5), (6, 0.5)])
@pytest.mark.parametrize("order", [3, 5, 8])
def test_powers_of_a_series_that_starts_late_are_exact_or_nan(p, r, order):
    # (sin t)^p, raised to r, is t^s·sinc(t)^s for s = p·r.  Its coefficient k is sinc^s's
    # k − s where s is a whole number, which reads sin^p's coefficients up to p + k − s:
    # past `order` for r < 1, where the truncated series does not know them.  Those
    # were filled with 0, and came out finite and wrong ((sin² t)^0.5's t³ was 0, not
    # -1/6); they are nan now, as in JAX's jet.  A fractional s has the limits of the
    # derivatives as t -> 0+: 0 below s, ±inf above it.
    with np.errstate(divide="ignore"):         # (0 to a negative power: inf, as NumPy)
        got = wg.taylor(lambda x: (wm.sin(x) ** p) ** r, 0.0, 1.0, order=order)
    s = p * r
    assert got[0] == 0.0 if s > 0 else got[0] == math.inf
    for k in range(1, order + 1):
        if p > order:                  # (sin t)^p is 0 up to the order: its p is unknown
            if k < (order + 1) * r:
                assert got[k] == 0.0, (k, got)
            else:
                assert math.isnan(got[k]), (k, got)
        elif s == round(s) and s >= 0:
            if k >= s and k > order + p * (r - 1):
                assert math.isnan(got[k]), (k, got)
            else:
                want = 0.0 if k < s else _sinc_power_coefficients(s, order)[k - round(s)]
                assert got[k] == pytest.approx(want, rel=1e-12, abs=1e-15), (k, got)
        else:
            falling = math.prod(s - j for j in range(k))
            assert got[k] == (0.0 if k < s else math.copysign(math.inf, falling)), (k, got)


def test_powers_at_zero_of_a_series_that_is_zero_up_to_the_order():
    # x(t) = O(t^(order+1)): x^r = O(t^((order+1)·r)) whatever x's later terms are, and
    # nothing is known past that (the coefficients were all 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = wg.taylor(lambda x: (wm.sin(x) ** 5) ** 0.75, 0.0, 1.0, order=4)
    assert got[:4] == [0.0, 0.0, 0.0, 0.0] and math.isnan(got[4])
    got = wg.taylor(lambda x: (x ** 6 + x ** 7) ** 0.5, 0.0, 1.0, order=4)
    assert got[:3] == [0.0, 0.0, 0.0] and all(math.isnan(c) for c in got[3:])
    # a polynomial in the input's line is known whole: t² at order 3 is [0, 0, 1, None]
    # (as x*x's t³ coefficient is no product of nonzero ones), so (t²)^0.5 = t exactly
    assert wg.taylor(lambda x: (x * x) ** 0.5, 0.0, 1.0, order=3) == [0.0, 1.0, 0.0, 0.0]
    assert wg.taylor(lambda x: (x ** 4) ** 0.25, 0.0, 2.0, order=5) == [0.0, 2.0] + [0.0] * 4
    # the other elements of an array keep their series
    x = np.array([0.0, 0.5])
    got = wg.taylor(lambda x: (wm.sin(x) ** 2) ** 0.5, x, np.ones(2), order=3)
    away = wg.taylor(lambda x: (wm.sin(x) ** 2) ** 0.5, 0.5, 1.0, order=3)
    assert [c[1] for c in got] == away and math.isnan(got[3][0])
    assert [c[0] for c in got[:3]] == [0.0, 1.0, 0.0]


def test_atan2_and_hypot_series_on_arrays_and_in_graphs():
    # their rules scale by 1/hypot(a_0, b_0), an array or a node there, which the shortcut
    # for 1·a compared with 1 for its truth value: a ValueError on arrays, and a
    # ConcretizationError under wg.trace and wg.compile even for one number
    wnp = _wnp()
    x = np.array([0.5, -1.0, 2.0])
    fs = (lambda y: wnp.arctan2(y, 2.0 - y), lambda y: wnp.hypot(y, 2.0 - y))
    for f in fs:
        got = wg.taylor(f, x, np.ones(3), order=3)
        for k in range(3):
            assert_close([c[k] for c in got], wg.taylor(f, x[k], 1.0, order=3), rtol=1e-14,
                         atol=1e-15)
        # (the scalar series are checked against sympy above)
        traced = wg.trace(lambda s: wg.taylor(f, s, 1.0, order=3), 0.5)
        assert_close(traced(-1.0), wg.taylor(f, -1.0, 1.0, order=3), rtol=1e-14)
        second = wg.compile(lambda s: wg.taylor(f, s, 1.0, order=2)[2])
        assert_close(second(0.5), wg.taylor(f, 0.5, 1.0, order=2)[2], rtol=1e-14)
        # d/dx of the t² coefficient is 3 times the t³ one
        grad = wg.grad(lambda y: wnp.sum(wg.taylor(f, y, np.ones(3), order=2)[2]))(x)
        assert_close(grad, 3 * got[3], rtol=1e-12)


@pytest.mark.parametrize("x0", [-50.0, -30.0, 3.0, 30.0, 50.0])
def test_logaddexp_and_logsumexp_series_are_accurate_where_one_term_dominates(x0):
    # the shares' recurrence p' = (x' − y')·p subtracted y' ≈ x' for the dominant term:
    # logaddexp(x, 0)'s t² coefficient at 30 had 3 digits, at 50 none (0 for 9.6e-23)
    import mpmath as mp
    wnp = _wnp()
    from wengert.scipy import special as wss
    order = 5
    with mp.workdps(60):
        def exact(F):
            return [float(c) for c in mp.taylor(F, mp.mpf(x0), order)]
        want_two = exact(lambda x: mp.log(mp.exp(x) + mp.exp(-x / 3)))
        want_three = exact(lambda x: mp.log(mp.exp(x) + mp.exp(mp.sin(x) - 7) + 1))
        want_base2 = exact(lambda x: mp.log(2 ** x + 2 ** (-x / 3), 2))
    cases = [(lambda x: wnp.logaddexp(x, -x / 3), want_two),
             (lambda x: wnp.logaddexp(-x / 3, x), want_two),
             (lambda x: wnp.logaddexp2(x, -x / 3), want_base2),
             (lambda x: wss.logsumexp(wnp.stack([x, -x / 3])), want_two),
             (lambda x: wss.logsumexp(wnp.stack([0 * x, x, wnp.sin(x) - 7])), want_three),
             (lambda x: wss.logsumexp(wnp.stack([x, wnp.sin(x) - 7, 0 * x])[None, :],
                                      axis=1, keepdims=True)[0, 0], want_three)]
    for f, want in cases:
        got = wg.taylor(f, x0, 1.0, order=order)
        for k in range(order + 1):
            assert got[k] == pytest.approx(want[k], rel=1e-13, abs=1e-300), (k, got, want)


def test_logsumexp_series_at_ties_and_along_axes():
    # (the series are taken relative to the largest element's: a tie shares that)
    wnp = _wnp()
    from wengert.scipy import special as wss
    x, v = np.array([[1.0, 1.0, -2.0], [0.5, 3.0, 3.0]]), np.array([[1.0, -1.0, 2.0],
                                                                      [0.0, 1.0, 0.5]])
    for axis in (0, 1, None):
        f = lambda x: wss.logsumexp(x, axis=axis)
        d = lambda g: (lambda x: wg.jvp(g, (x,), (v,))[1])
        series = wg.taylor(f, x, v, order=3)
        assert_close(series[1], d(f)(x), rtol=1e-14, atol=1e-15)
        assert_close(series[2], d(d(f))(x) / 2, rtol=1e-12, atol=1e-14)
        assert_close(series[3], d(d(d(f)))(x) / 6, rtol=1e-10, atol=1e-13)
    got = wg.taylor(lambda x: wss.logsumexp(x * np.array([1.0, 1.0])), 0.5, 1.0, order=3)
    assert_close(got, [0.5 + math.log(2), 1.0, 0.0, 0.0], rtol=1e-15, atol=0)


@pytest.mark.parametrize("x0", [-15.0, 0.3, 20.0, 40.0, -400.0])
def test_tanh_series_keep_their_relative_accuracy_for_large_arguments(x0):
    # the first coefficient was 1 − tanh², which cancels: rel. error 1.7e-4 at -15, and
    # 0 (every coefficient after it too) at 20, for 1.7e-17
    import mpmath as mp
    with mp.workdps(60):
        want = [float(c) for c in mp.taylor(mp.tanh, mp.mpf(x0), 5)]
    got = wg.taylor(wm.tanh, x0, 1.0, order=5)
    for k in range(6):
        assert got[k] == pytest.approx(want[k], rel=1e-13, abs=1e-300), (k, got, want)
    assert_close(wg.derivatives(wm.tanh, 2)(np.array([x0, 0.0]))[2][1], 0.0, atol=0)


def test_a_traced_exponent_the_direction_does_not_move_is_a_constant_one():
    # x**y with y an input but 0 along the direction went through exp(y·log x): nan at
    # x = 0 and below, where jvp and hessian of the same function are finite
    f = lambda p: p[0] ** p[1]
    inf = math.inf
    for x0, y0, want in ((0.0, 2.0, [0.0, 0.0, 1.0, 0.0]),             # t²
                         (0.0, 2.5, [0.0, 0.0, 0.0, inf]),              # (limits at 0+)
                         (-2.0, 3.0, [-8.0, 12.0, -6.0, 1.0]),          # (t − 2)³
                         (0.5, 1.5, [0.5 ** 1.5, 1.5 * 0.5 ** 0.5,
                                     0.375 * 0.5 ** -0.5, -0.0625 * 0.5 ** -1.5])):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = wg.taylor(f, (x0, y0), (1.0, 0.0), order=3)
        assert_close(got, want, rtol=1e-14, atol=0)
    # the first two agree with jvp and the Hessian, as they did not
    assert wg.jvp(lambda x, y: x ** y, (0.0, 2.0), (1.0, 0.0))[1] == 0.0
    assert wg.hessian(lambda p: p[0] ** p[1])(np.array([0.0, 2.0]))[0, 0] == 2.0
    # a direction that moves the exponent still goes through exp(y·log x)
    got = wg.taylor(f, (2.0, 3.0), (0.0, 1.0), order=3)
    assert_close(got, [8.0 * math.log(2) ** k / math.factorial(k) for k in range(4)],
                 rtol=1e-14)


def test_sqrt_at_a_zero_of_its_argument_is_the_power_one_half():
    # sqrt's recurrence divides by its value: sqrt(x·x) at 0 was [0, nan, nan, nan], where
    # (x·x)**0.5 gave |t|'s series, and sqrt at 0 along 0 was nan, where x**0.5 gave 0
    inf, nan = math.inf, math.nan
    cases = [(lambda x: x * x, 1.0, 3, [0.0, 1.0, 0.0, 0.0]),            # |t|
             (lambda x: x, 0.0, 3, [0.0, 0.0, 0.0, 0.0]),                  # 0
             (lambda x: x, 2.0, 3, [0.0, inf, -inf, inf]),                 # √2·√t, t -> 0+
             (lambda x: wm.sin(x) ** 2, 1.0, 5, [0.0, 1.0, 0.0, -1 / 6, 0.0, nan])]
    for g, v, order, want in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = wg.taylor(lambda x: wm.sqrt(g(x)), 0.0, v, order=order)
            power = wg.taylor(lambda x: g(x) ** 0.5, 0.0, v, order=order)
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)
        np.testing.assert_array_equal(got, power)
    x = np.array([0.0, 0.25])
    got = wg.taylor(wm.sqrt, x, np.array([0.0, 1.0]), order=3)
    assert [c[0] for c in got] == [0.0] * 4
    assert_close([c[1] for c in got], [0.5, 1.0, -1.0, 2.0], rtol=1e-15, atol=0)  # √(1/4+t)


def test_hypot_and_norm_at_zero():
    # hypot's recurrence divides by its value: at a = b = 0 it was nan; it is homogeneous,
    # t^p·hypot(A(t), B(t)), so every coefficient is known there
    import mpmath as mp
    wnp = _wnp()
    with mp.workdps(40):
        inner = [float(c) for c in mp.taylor(lambda u: mp.sqrt(mp.sinc(u) ** 4 + u ** 2),
                                             0, 3)]
    got = wg.taylor(lambda x: wnp.hypot(wm.sin(x) ** 2, x ** 3), 0.0, 1.0, order=5)
    assert_close(got, [0.0, 0.0] + inner, rtol=1e-14, atol=1e-16)    # t²·√(sinc⁴ t + t²)
    for order in (1, 2, 4):
        got = wg.taylor(lambda x: wnp.hypot(x, -2 * x), 0.0, -1.0, order=order)
        assert got == [0.0, math.sqrt(5)] + [0.0] * (order - 1)   # |t|·√5 for t > 0
    x = np.array([0.0, 0.0, 3.0])
    got = wg.taylor(lambda x: wnp.hypot(x, 2 * x + np.array([0.0, 1.0, 0.0])), x, np.ones(3),
                    order=3)
    away = wg.taylor(lambda x: wnp.hypot(x, 2 * x + 1.0), 0.0, 1.0, order=3)
    assert_close([c[0] for c in got], [0.0, math.sqrt(5), 0.0, 0.0], rtol=1e-15, atol=0)
    assert_close([c[1] for c in got], away, rtol=1e-15)
    assert_close([c[2] for c in got], [3 * math.sqrt(5), math.sqrt(5), 0.0, 0.0], rtol=1e-15,
                 atol=1e-15)
    # the norm is sqrt(Σ x²): x·x's t³ coefficient is known to be 0 from order 3 on;
    # at order 2 its series could go on with any t³, which the t² coefficient reads
    got = wg.taylor(np.linalg.norm, np.zeros(3), np.ones(3), order=3)
    assert_close(got, [0.0, math.sqrt(3), 0.0, 0.0], rtol=1e-15, atol=0)
    got = wg.taylor(np.linalg.norm, np.zeros(3), np.ones(3), order=2)
    assert got[:2] == [0.0, pytest.approx(math.sqrt(3), rel=1e-15)] and math.isnan(got[2])


@pytest.mark.parametrize("f, r, x0, order", [
    (lambda x: x ** -3, -3, 1e-120, 3), (wm.cbrt, R(1, 3), 1e-300, 4),
    (wm.cbrt, R(1, 3), -1e-300, 4), (lambda x: x ** 2.5, R(5, 2), 1e-300, 4),
    (lambda x: x ** -2.5, R(-5, 2), 1e-100, 3), (lambda x: x ** -3, -3, 1e120, 3),
    (lambda x: x ** -3, -3, -1e-120, 3)])
def test_power_coefficients_past_the_floats_are_infinite_not_nan(f, r, x0, order):
    # where a coefficient overflowed, the recurrence's next ones were inf − inf = nan (and
    # 1/x³'s series divided by x³ = 0 at 1e-120); the coefficients are binom(r, k)·x0^(r-k)
    import mpmath as mp
    with mp.workdps(50):
        x = mp.mpf(x0)
        sign = -1 if x < 0 else 1                # (cbrt of a negative: -cbrt(-x))
        want = [float(sign * (-1) ** k * mp.binomial(r, k) * (sign * x) ** (r - k))
                if sign < 0 else float(mp.binomial(r, k) * x ** (r - k))
                for k in range(order + 1)]
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        got = wg.taylor(f, x0, 1.0, order=order)
        arr = wg.taylor(f, np.array([x0, 1.0]), np.ones(2), order=order)
    for k in range(order + 1):
        assert got[k] == pytest.approx(want[k], rel=1e-13, abs=0), (k, got, want)
        assert arr[k][0] == got[k]
    assert arr[1][1] == pytest.approx(float(r))
