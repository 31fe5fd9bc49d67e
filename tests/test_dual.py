"""wg.Dual: seed 000's rule table entry by entry, every other scalar primitive against
forward mode and finite differences, lifting, NumPy, nesting, and duals meeting traces."""
import math

import numpy as np
import pytest

import wengert as wg
import wengert.math as wm
import wengert.numpy as wnp
from wengert import Dual, REGISTRY
from fd import fd_derivative, assert_close

rng = np.random.default_rng(7)
POINTS = [(rng.uniform(0.3, 2.0) * rng.choice([-1, 1]), rng.uniform(-2, 2),
           rng.uniform(0.3, 2.0) * rng.choice([-1, 1]), rng.uniform(-2, 2)) for _ in range(5)]


def same(d, primal, tangent):
    assert isinstance(d, Dual)
    assert d.primal == pytest.approx(primal, rel=1e-14, abs=1e-15)
    assert d.tangent == pytest.approx(tangent, rel=1e-14, abs=1e-15)


# ---- seed 000's table, one entry at a time ----------------------------------------------
@pytest.mark.parametrize("u, du, v, dv", POINTS)
def test_seed_rule_table(u, du, v, dv):
    U, V = Dual(u, du), Dual(v, dv)
    same(U + V, u + v, du + dv)                                   # ⟨u+v, u'+v'⟩
    same(U - V, u - v, du - dv)                                   # ⟨u−v, u'−v'⟩
    same(U * V, u * v, du * v + u * dv)                           # ⟨uv, u'v+uv'⟩
    same(U / V, u / v, (du * v - u * dv) / v ** 2)                # ⟨u/v, (u'v−uv')/v²⟩
    same(wm.sin(U), math.sin(u), du * math.cos(u))                # ⟨sin u, u' cos u⟩
    same(wm.cos(U), math.cos(u), -du * math.sin(u))               # ⟨cos u, −u' sin u⟩
    same(wm.exp(U), math.exp(u), du * math.exp(u))                # ⟨exp u, u' exp u⟩
    a = abs(u)
    same(wm.log(Dual(a, du)), math.log(a), du / a)                # ⟨log u, u'/u⟩ (u > 0)
    for k in (2, 3, -1, -2, 5):                                   # ⟨u^k, k u^(k−1) u'⟩
        same(U ** k, u ** k, k * u ** (k - 1) * du)
    for k in (0.5, 2.5, -1.5):                                    # real k, u > 0
        same(Dual(a, du) ** k, a ** k, k * a ** (k - 1) * du)
    same(abs(U), abs(u), du * math.copysign(1.0, u))              # ⟨|u|, u' sign u⟩ (u ≠ 0)


@pytest.mark.parametrize("u, du, v, dv", POINTS[:3])
def test_general_rule_for_two_arguments(u, du, v, dv):
    # g(⟨u,u'⟩, ⟨v,v'⟩) = ⟨g(u,v), g_u u' + g_v v'⟩
    g = wm.atan2(Dual(u, du), Dual(v, dv))
    r2 = u * u + v * v
    same(g, math.atan2(u, v), (v / r2) * du + (-u / r2) * dv)


def test_constants_lift_to_zero_tangent():
    U = Dual(1.5, 2.0)
    same(U + 3, 4.5, 2.0)
    same(3 - U, 1.5, -2.0)
    same(2.0 * U, 3.0, 4.0)
    same(3.0 / U, 2.0, -3.0 / 1.5 ** 2 * 2.0)
    same(2.0 ** U, 2.0 ** 1.5, math.log(2.0) * 2.0 ** 1.5 * 2.0)
    same(np.float64(2.0) * U, 3.0, 4.0)
    assert Dual(2.0).tangent == 0.0


# ---- the rest of the core's functions, from the registry --------------------------------
def sample(name):
    if name in ("log", "log10", "sqrt", "pow", "log1p", "log2"):
        return float(rng.uniform(0.3, 3.0))
    if name == "acosh":
        return float(rng.uniform(1.2, 3.0))
    if name in ("asin", "acos", "atanh"):
        return float(rng.uniform(-0.8, 0.8))
    if name in ("tan",):
        return float(rng.uniform(-1.2, 1.2))
    return float(rng.choice([-1, 1]) * rng.uniform(0.3, 2.0))


SCALAR_MODULES = (__import__("wengert.primitives.scalar", fromlist=["_"]),
                  __import__("wengert.primitives.nn", fromlist=["_"]))
DIFFERENTIABLE = sorted(name for name, p in REGISTRY.items()
                        if p.builtin and p.partials is not None and p.dtype_rule != "bool"
                        and any(p is v for m in SCALAR_MODULES for v in vars(m).values())
                        and name not in ("copy", "select", "powi", "stop_gradient",
                                         "complex"))     # (complex results: not duals)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_every_scalar_primitive_matches_forward_mode_and_fd(name):
    prim = REGISTRY[name]
    nargs = len(prim.partials)
    for _ in range(3):
        xs = [sample(name) for _ in range(nargs)]
        ts = [rng.uniform(-1, 1) for _ in range(nargs)]
        d = prim(*[Dual(x, t) for x, t in zip(xs, ts)])
        value, tangent = wg.jvp(lambda *a: prim(*a), tuple(xs), tuple(ts))
        assert d.primal == value
        assert_close(d.tangent, tangent, rtol=1e-13, atol=1e-13)
        line = lambda s: prim(*[x + s * t for x, t in zip(xs, ts)])
        assert_close(d.tangent, fd_derivative(line, 0.0), rtol=1e-6, atol=1e-6)


def test_a_new_primitive_works_on_duals_from_its_partials_alone():
    @wg.primitive
    def softsign(x):
        return x / (1 + np.abs(x))
    softsign.defpartials(lambda x, ans: 1 / (1 + abs(x)) ** 2)
    same(softsign(Dual(1.0, 3.0)), 0.5, 3.0 / 4)


def test_seed_example_directional_derivatives_in_one_pass():
    f = lambda x1, x2: x1 * x2 + wm.sin(x1)
    same(f(Dual(2.0, 1.0), Dual(3.0, 0.0)), 6.909297426825682, 3.0 + math.cos(2.0))
    same(f(Dual(2.0, 0.0), Dual(3.0, 1.0)), 6.909297426825682, 2.0)
    # f: R² -> R², along (1, 1): each output's tangent at once
    g = lambda x, y: (x * y, x / y)
    a, b = g(Dual(2.0, 1.0), Dual(4.0, 1.0))
    assert (a.tangent, b.tangent) == (6.0, 1 / 4 - 2 / 16)


# ---- ordinary Python -------------------------------------------------------------------------
def test_comparisons_are_bools_and_control_flow_works():
    def relu_ish(x):
        return x * x if x > 0 else -x
    assert (Dual(1.0) < 2.0) is True and (Dual(1.0) == 1.0) is True
    same(relu_ish(Dual(3.0, 1.0)), 9.0, 6.0)
    same(relu_ish(Dual(-3.0, 1.0)), 3.0, -1.0)
    same(wm.maximum(Dual(1.0, 5.0), 0.5), 1.0, 5.0)
    same(wm.select(Dual(1.0, 1.0) > 0, Dual(2.0, 7.0), 0.0), 2.0, 7.0)
    same(wm.sign(Dual(-2.0, 1.0)), -1.0, 0.0)


def test_float_of_a_dual_refuses_to_drop_the_tangent():
    with pytest.raises(TypeError, match="drop its tangent"):
        math.sin(Dual(1.0, 1.0))


# ---- NumPy: array-valued parts and arrays of duals ----------------------------------------------
def test_array_valued_parts():
    x = np.linspace(0.1, 2.0, 5)
    d = wm.exp(wm.sin(Dual(x, np.ones(5))))
    np.testing.assert_allclose(d.tangent, np.cos(x) * np.exp(np.sin(x)), rtol=1e-14)
    d = np.sin(Dual(x, 1.0)) * np.arange(5.0) + 1.0           # ufuncs and ndarray operands
    np.testing.assert_allclose(d.tangent, np.cos(x) * np.arange(5.0), rtol=1e-14)
    assert d.shape == (5,) and np.shape(d) == (5,)


def test_a_user_primitive_of_a_numpy_ufunc_does_not_take_over_the_ufunc():
    # wg.primitive(np.sin, ...) with its own rules once became what numpy.sin did on
    # every Dual (the ufunc table was read off the whole registry, users' included)
    import wengert.dual as dual
    dual._UFUNCS.clear()                    # (read again after the user's primitive)
    wg.primitive(np.sin, name="sin_of_my_own").defpartials(lambda x, ans: 2.0)
    assert np.sin(Dual(0.5, 1.0)).tangent == math.cos(0.5)
    assert np.sin(Dual(np.array([0.5]), 1.0)).tangent.tolist() == [math.cos(0.5)]


def test_numpy_arrays_of_duals():
    arr = np.array([Dual(0.5, 1.0), Dual(1.5, 2.0)], dtype=object)
    for out in (np.sin(arr) * arr, wm.sin(arr) * arr):
        tangents = [o.tangent for o in out]
        assert_close(tangents, [1.0 * (np.cos(0.5) * 0.5 + np.sin(0.5)),
                                2.0 * (np.cos(1.5) * 1.5 + np.sin(1.5))], rtol=1e-14)
    assert [o.tangent for o in wm.cbrt(arr)] == pytest.approx(
        [1.0 / (3 * 0.5 ** (2 / 3)), 2.0 / (3 * 1.5 ** (2 / 3))])
    assert np.sum(arr * arr).tangent == pytest.approx(2 * 0.5 * 1.0 + 2 * 1.5 * 2.0)


# ---- nesting and traces -------------------------------------------------------------------------
def test_nested_duals_give_second_derivatives():
    x = Dual(Dual(0.7, 1.0), Dual(1.0, 0.0))
    y = wm.exp(x) * wm.sin(x)
    assert y.tangent.tangent == pytest.approx(2 * math.exp(0.7) * math.cos(0.7), rel=1e-14)


def test_duals_inside_traced_code():
    # a Dual whose parts are traced values; a traced value meeting a Dual on either side:
    # the tangent is x + x cos x, its derivative 1 + cos x − x sin x
    f = lambda x: (x * Dual(x, 1.0) + wm.sin(Dual(x, 1.0)) * x).tangent
    assert_close(wg.grad(f)(0.4), 1.0 + math.cos(0.4) - 0.4 * math.sin(0.4), rtol=1e-14)
    graph = wg.trace(lambda x, y: x * y + wm.sin(x), 2.0, 3.0)
    same(graph(Dual(2.0, 1.0), 3.0), 6.909297426825682, 3.0 + math.cos(2.0))


@pytest.mark.parametrize("f, d1, d2", [
    (abs, lambda x: np.sign(x), lambda x: 0.0),
    (wnp.abs, lambda x: np.sign(x), lambda x: 0.0),
    (wnp.arcsinh, lambda x: 1 / np.sqrt(1 + x * x), lambda x: -x / (1 + x * x) ** 1.5),
    (lambda x: wnp.arccosh(-3 * x), lambda x: -3 / np.sqrt(9 * x * x - 1),
     lambda x: 27 * x / (9 * x * x - 1) ** 1.5),
])
def test_nested_duals_through_rules_that_ask_for_the_dtype(f, d1, d2):
    """Second derivatives by a Dual of Duals through partials that branch on whether x
    is complex (abs, arcsinh, arccosh), against closed forms."""
    x = -0.7
    y = f(wg.Dual(wg.Dual(x, 1.0), wg.Dual(1.0, 0.0)))
    assert abs(y.primal.tangent - d1(x)) < 1e-12
    assert abs(y.tangent.tangent - d2(x)) < 1e-12


# ---- whole-array functions --------------------------------------------------------------
A = rng.normal(size=(3, 3)) + 3 * np.eye(3)
X = rng.uniform(0.5, 1.5, size=3)
V = rng.normal(size=3)


def _scipy(name):
    sp = pytest.importorskip("wengert.scipy." + name)
    return sp


# whole-array functions that both the one-level and the nested Dual tests take
ARRAY_FUNCTIONS = [
    lambda x: np.sum(x),
    lambda x: np.dot(x, A),
    lambda x: np.linalg.solve(A, x),
    lambda x: np.linalg.det(A + np.outer(x, x)),
    lambda x: np.cumsum(x[::-1] * x, axis=0),
]


@pytest.mark.parametrize("f", ARRAY_FUNCTIONS + [
    lambda x: np.add.reduce(x * x),
    lambda x: np.concatenate([x, np.tanh(x)]),
    lambda x: np.max(x),
    lambda x: wnp.logsumexp(x),
    lambda x: _scipy("special").erf(x),
    lambda x: _scipy("special").gammaln(x),
    lambda x: _scipy("special").logsumexp(x),
    lambda x: _scipy("special").softmax(x),
    lambda x: _scipy("linalg").solve(A, x),
    lambda x: _scipy("stats").norm.logpdf(x, 0.2, 1.5),
])
def test_whole_array_functions_take_duals(f):
    """NumPy's and SciPy's array functions on a Dual with array parts: its tangent is the
    directional derivative, against finite differences (np.dot would otherwise read the
    Dual as one object element and return a Dual per entry)."""
    y = f(Dual(X, V))
    assert isinstance(y, Dual)
    assert_close(y.primal, f(X), rtol=1e-13)
    assert_close(y.tangent, fd_derivative(lambda t: f(X + t * V), 0.0), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("f", ARRAY_FUNCTIONS + [
    lambda x: np.square(x) * wnp.sinc(x),
    lambda x: wnp.logsumexp(x),
    lambda x: _scipy("special").polygamma(1, x),
    lambda x: _scipy("special").iv(1.5, x),
    lambda x: _scipy("special").softmax(x),
])
def test_whole_array_functions_take_nested_duals(f):
    """A Dual of Duals through NumPy's and SciPy's array functions (and the ones that
    only go through them, like square): ⟨⟨x, u⟩, ⟨v, w⟩⟩ carries f''(x)[u, v] + f'(x) w in
    its tangent's tangent, against a Hessian-vector product and finite differences."""
    U, W = rng.normal(size=3), rng.normal(size=3)
    y = f(Dual(Dual(X, U), Dual(V, W)))
    jvp = lambda x, v: wg.jvp(f, (x,), (v,))[1]
    assert_close(y.primal.primal, f(X), rtol=1e-13)
    assert_close(y.primal.tangent, fd_derivative(lambda t: f(X + t * U), 0.0), rtol=1e-6,
                 atol=1e-9)
    assert_close(y.tangent.primal, jvp(X, V), rtol=1e-12, atol=1e-14)
    second = fd_derivative(lambda t: jvp(X + t * U, V), 0.0) + jvp(X, W)
    assert_close(y.tangent.tangent, second, rtol=1e-6, atol=1e-8)
    # three levels: x + ε₁u + ε₂(v + ε₁w) + ε₃v, whose ε₂ε₁ part is the above, ε₃ε₂ f''[v, v]
    z = f(Dual(Dual(Dual(X, U), Dual(V, W)), V))
    assert_close(z.primal.tangent.tangent, y.tangent.tangent, rtol=1e-12, atol=1e-14)
    assert_close(z.tangent.tangent.primal, fd_derivative(lambda t: jvp(X + t * V, V), 0.0),
                 rtol=1e-6, atol=1e-8)


def test_nested_duals_mixed_with_plain_ones_and_constants():
    # np.dot of a Dual of Duals with a one-level Dual: the plain one is outer-level, as
    # the operators take it (⟨a, a'⟩·⟨⟨b, b'⟩, ⟨c, c'⟩⟩ splits into primal and tangent)
    a, b = Dual(Dual(X, V), Dual(V, X)), Dual(A @ X, X)
    y, z = np.dot(a, b), wg.math.sin(0.0) + (a * b)
    for part in ("primal", "tangent"):
        p, q = getattr(y, part), getattr(z, part)
        assert_close(p.primal, np.sum(q.primal), rtol=1e-13)
        assert_close(p.tangent, np.sum(q.tangent), rtol=1e-13)
    # an integer primal inside, and a scalar tangent that broadcasts at both levels
    y = np.sum(Dual(Dual(np.arange(3), 1.0), Dual(2.0, 0.5)) ** 2)
    assert_close(y.primal.tangent, 2 * 3.0) and assert_close(y.tangent.primal, 4 * 3.0)
    assert_close(y.tangent.tangent, 2 * 2.0 * 3 + 2 * np.sum(np.arange(3) * 0.5))


def test_whole_array_functions_on_duals_edge_cases():
    d = Dual(X, 1.0)                    # a scalar tangent: the same at every element
    assert_close(np.sum(d).tangent, 3.0)
    assert_close(d[1:].tangent, [1.0, 1.0])
    assert type(np.argmax(d)) is not Dual       # an integer result has no tangent
    # nested Duals whose outer or inner part is a constant
    y = np.sum(Dual(Dual(X, 1.0), 0.0))
    assert_close(y.primal.tangent, 3.0) and assert_close(y.tangent.tangent, 0.0)
    y = np.sum(Dual(X, Dual(V, V)) ** 2)
    assert_close(y.tangent.primal, 2 * X @ V) and assert_close(y.tangent.tangent, 2 * X @ V)
    m = Dual(np.ones((2, 2)), np.array([1.0, 2.0]))     # a tangent that broadcasts
    assert_close(np.sum(m[0]).tangent, 3.0)
    assert_close(m[:, 1].tangent, [2.0, 2.0])
    with pytest.raises(ValueError, match=r"\(2,\).*\(3,\)"):
        Dual(X, np.ones(2))[1]
    with pytest.raises(ValueError, match=r"\(2,\).*\(3,\)"):
        np.sum(Dual(X, np.ones(2)))
    with pytest.raises(NotImplementedError, match="numpy.add.at"):
        np.add.at(d, [0], 1.0)
    special = pytest.importorskip("wengert.scipy.special")
    with pytest.raises(NotImplementedError, match="scipy.special.comb is not supported"):
        special.comb(d, 2)          # (not handed to SciPy, which reads a Dual as an object)
    # a Dual of traced values through np.sum, under grad: d/dx Σ x·x' with x' = x is 2x
    assert_close(wg.grad(lambda x: np.sum(Dual(x, x) * x).tangent)(X), 2 * X, rtol=1e-14)


def test_dual_parts_are_checked_when_made():
    # A string or a misshapen tangent used to be accepted and fail (or give the wrong
    # shape) inside the first operation: the constructor says what is wrong instead.
    with pytest.raises(TypeError, match="primal must be a real number.*not str"):
        Dual("a", 1.0)
    with pytest.raises(TypeError, match="tangent must be a real number.*not NoneType"):
        Dual(1.0, None)
    with pytest.raises(TypeError, match="tangent must be.*dtype <U1"):
        Dual(np.ones(2), np.array(["a", "b"]))
    with pytest.raises(TypeError, match="primal is complex.*wg.jvp"):
        Dual(1j, 1.0)
    with pytest.raises(ValueError, match=r"tangent of shape \(2,\).*primal of shape \(3,\)"):
        Dual(np.ones(3), np.ones(2))
    with pytest.raises(ValueError, match=r"tangent of shape \(3,\).*primal of shape \(\)"):
        Dual(1.0, np.ones(3))              # a tangent larger than its value
    # what is accepted: ints, NumPy scalars, lists (as arrays), broadcasting tangents
    assert_close((Dual(3, 1) ** 2).tangent, 6.0)
    assert_close((Dual(np.float32(2.0), 1.0) * 3).tangent, 3.0)
    d = Dual([1.0, 2.0], [1.0, 0.0])
    assert type(d.primal) is np.ndarray and d.primal.shape == (2,)
    assert_close(np.sum(d * d).tangent, 2.0)
    assert_close(np.sum(Dual(np.ones((2, 3)), np.ones(3)) * 2.0).tangent, 12.0)


def test_the_matmul_operator_between_duals():
    r = np.random.default_rng(7)
    a, da, b, db = (r.normal(size=(2, 3)), r.normal(size=(2, 3)), r.normal(size=(3, 2)),
                    r.normal(size=(3, 2)))
    y = Dual(a, da) @ Dual(b, db)                      # (it raised TypeError)
    assert_close(y.primal, a @ b, rtol=1e-15)
    assert_close(y.tangent, fd_derivative(lambda t: (a + t * da) @ (b + t * db), 0.0),
                 rtol=1e-7)
    for z in (Dual(a, da) @ b, a @ Dual(b, db)):       # with a plain array on either side
        assert type(z) is Dual
    with pytest.raises(ValueError, match="matmul"):  # (numbers: NumPy's refusal)
        Dual(2.0, 1.0) @ Dual(3.0, 1.0)


def test_matmul_with_a_scalar_or_broadcast_tangent():
    # matmul's JVP got the tangent as given, and a scalar one (the default: the same
    # derivative everywhere) has no core dimension: W @ Dual(x, 1.0) raised, and a tangent
    # of a broadcast shape gave a tangent of the wrong shape
    r = np.random.default_rng(8)
    w, x = r.normal(size=(2, 3)), r.normal(size=3)
    along = lambda f, v: fd_derivative(lambda t: f(t * v), 0.0)
    for y, f, v in ((w @ Dual(x, 1.0), lambda d: w @ (x + d), np.ones(3)),
                    (np.matmul(w, Dual(x, 0.5)), lambda d: w @ (x + d), np.full(3, 0.5)),
                    (Dual(w, np.arange(3.0)) @ x, lambda d: (w + d) @ x,
                     np.broadcast_to(np.arange(3.0), (2, 3))),
                    (Dual(w, 2.0) @ Dual(x, 1.0),
                     lambda d: (w + 2 * d[:6].reshape(2, 3)) @ (x + d[6:]), np.ones(9))):
        assert y.tangent.shape == y.primal.shape == (2,)
        assert_close(y.primal, w @ x, rtol=1e-15)
        assert_close(y.tangent, along(f, v), rtol=1e-7)
    nested = w @ Dual(Dual(x, 1.0), 1.0)                 # (linear: no second derivative)
    assert_close(nested.tangent.primal, w @ np.ones(3), rtol=1e-15)
    assert_close(nested.tangent.tangent, np.zeros(2), atol=0)
    with pytest.raises(ValueError, match="matmul: shapes \\(3, 2\\) and \\(3,\\)"):
        Dual(w.T, 1.0) @ x


def test_object_arrays_of_duals_through_scipys_ufuncs():
    special = pytest.importorskip("wengert.scipy.special")
    import scipy.special as sc
    xs = np.array([Dual(0.5, 1.0), Dual(1.0, 2.0)])
    for f, df in ((special.erf, lambda x: 2 / np.sqrt(np.pi) * np.exp(-x * x)),
                  (lambda x: special.gammainc(2.0, x), lambda x: x * np.exp(-x))):
        ys = f(xs)                                   # (a raw TypeError: no object loop)
        assert ys.dtype == object and ys.shape == (2,)
        for y, x in zip(ys, xs):
            assert_close(y.primal, f(x.primal), rtol=1e-15)
            assert_close(y.tangent, df(x.primal) * x.tangent, rtol=1e-13)
    assert_close(special.erf(np.array([1.0], dtype=object))[0], sc.erf(1.0))


def test_a_constant_dual_exponent_is_a_constant():
    # Dual(2.0) is documented as a constant, but its tangent 0.0 was multiplied by the
    # exponent's partial, log(x)·x^y, nan at x < 0: Dual(-8, 1) ** Dual(2.0) had a nan
    # tangent where Dual(-8, 1) ** 2.0 has -16
    for x0, y in ((-8.0, Dual(2.0)), (-8.0, Dual(2.0, 0)), (3.0, Dual(2.5)),
                  (-1.5, Dual(3.0))):
        d = Dual(x0, 1.0) ** y
        assert_close(d.tangent, fd_derivative(lambda x: x ** y.primal, x0), rtol=1e-8)
    with np.errstate(divide="ignore"):
        same(Dual(0.0) ** Dual(0.5), 0.0, 0.0)          # (0 along 0: no nan)
    # a moving exponent keeps its partial
    d = Dual(2.0) ** Dual(3.0, 1.0)
    assert_close(d.tangent, fd_derivative(lambda y: 2.0 ** y, 3.0), rtol=1e-8)


def test_remainder_floor_divide_divmod_and_round_operators():
    # %, //, divmod and round raised TypeError (np.remainder(d, 1) worked): NumPy's
    # semantics, the remainder with the divisor's sign, floor and round piecewise constant
    for x, y in ((2.4, 1.0), (-7.3, 2.0), (7.3, -2.0), (5.3, 0.7)):    # (off the jumps)
        for d, f in ((Dual(x, 1.0) % y, lambda t: np.remainder(x + t, y)),
                     (x % Dual(y, 1.0), lambda t: np.remainder(x, y + t)),
                     (Dual(x, 1.0) // y, lambda t: np.floor_divide(x + t, y)),
                     (x // Dual(y, 1.0), lambda t: np.floor_divide(x, y + t)),
                     (divmod(Dual(x, 1.0), y)[1], lambda t: divmod(x + t, y)[1]),
                     (divmod(x, Dual(y, 1.0))[0], lambda t: divmod(x, y + t)[0]),
                     (round(Dual(x, 1.0)), lambda t: np.round(x + t)),
                     (round(Dual(x, 1.0), 1), lambda t: np.round(x + t, 1)),
                     (math.floor(Dual(x, 1.0)), lambda t: np.floor(x + t)),
                     (math.ceil(Dual(x, 1.0)), lambda t: np.ceil(x + t)),
                     (math.trunc(Dual(x, 1.0)), lambda t: np.trunc(x + t))):
            assert type(d) is Dual and d.primal == f(0.0)
            assert_close(d.tangent, fd_derivative(f, 0.0, h=1e-7), rtol=1e-6, atol=1e-9)
    assert round(Dual(2.5, 1.0)).primal == 2.0                  # (half to even, as NumPy)
    d = Dual(np.array([2.5, -3.25]), np.array([1.0, 2.0]))
    same_arrays = lambda a, b: np.testing.assert_array_equal(a, b)
    same_arrays((d % 1.0).primal, [0.5, 0.75])
    same_arrays((d % 1.0).tangent, [1.0, 2.0])
    same_arrays((d // 1.0).tangent, [0.0, 0.0])
    same_arrays(round(d).primal, [2.0, -3.0])


def test_array_methods_of_an_array_dual():
    # .sum(), .T, .reshape and len() were missing (traced values have them)
    r = np.random.default_rng(9)
    x, v = r.normal(size=(2, 3)), r.normal(size=(2, 3))
    d = Dual(x, v)
    for got, f in ((d.sum(), np.sum), (d.sum(axis=1), lambda a: a.sum(axis=1)),
                   (d.sum(axis=0, keepdims=True), lambda a: a.sum(axis=0, keepdims=True)),
                   (d.T, lambda a: a.T), (d.reshape(3, 2), lambda a: a.reshape(3, 2)),
                   (d.reshape((6,)), lambda a: a.reshape(6))):
        assert_close(got.primal, f(x), rtol=1e-15)
        assert_close(got.tangent, fd_derivative(lambda t: f(x + t * v), 0.0), rtol=1e-7)
    assert len(d) == 2 and d.ndim == 2 and len(Dual(x, 1.0).T) == 3
    assert Dual(np.ones(3), 1.0).sum().tangent == 3.0            # (a scalar tangent)
    with pytest.raises(TypeError, match="len\\(\\) of a Dual of shape \\(\\)"):
        len(Dual(1.0, 1.0))


def test_object_arrays_of_duals_through_any_numpy_ufunc():
    # np.floor of an object array raised "float() of a Dual", np.rint and np.deg2rad
    # "no callable rint method": an element now goes as an array Dual does
    arr = np.array([Dual(1.3, 1.0), Dual(-2.6, 2.0)])
    x, v = np.array([1.3, -2.6]), np.array([1.0, 2.0])
    for ufunc in (np.floor, np.ceil, np.trunc, np.rint, np.deg2rad, np.rad2deg, np.exp2,
                  np.square, np.reciprocal):
        out = ufunc(arr)
        assert all(type(e) is Dual for e in out), ufunc
        assert_close([e.primal for e in out], ufunc(x), rtol=1e-15)
        assert_close([e.tangent for e in out], fd_derivative(lambda t: ufunc(x + t * v), 0.0,
                                                             h=1e-7), rtol=1e-6, atol=1e-9)


def test_a_function_that_does_not_take_duals_names_itself():
    # SciPy's logsumexp read an array Dual as one object and failed far inside ('truth value
    # of an array'); the conversion now says which function made it, and what to use
    import scipy.special as sc
    from wengert.scipy import special as wss
    d = Dual(np.array([1.0, 2.0]), 1.0)
    with pytest.raises(TypeError, match="scipy.special.*logsumexp converts a Dual of shape "
                                        "\\(2,\\) to a NumPy array.*wengert.scipy.special"):
        sc.logsumexp(d)
    got = wss.logsumexp(d)
    assert_close(got.tangent, fd_derivative(lambda t: sc.logsumexp(d.primal + t), 0.0))
    with pytest.raises(TypeError, match="numpy.*sum converts a Dual of shape"):
        np.sum([d, d])                  # (a list of array Duals: np.stack them first)
    assert np.sum(np.stack([d, d])).tangent == 4.0
    arr = np.array([Dual(1.0, 1.0), Dual(2.0, 1.0)])      # (scalar Duals: object arrays)
    assert arr.dtype == object and np.sum(arr).tangent == 2.0


def test_importing_wengert_leaves_scipy_unimported():
    # SciPy is optional, and scipy.special's import is costly (about 0.1-0.2 s): Dual's methods
    # for SciPy's ufuncs are found when first used (test above), not made at import
    import subprocess
    import sys
    code = "import sys, wengert; print(sorted(m for m in sys.modules if m.startswith('scipy')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
