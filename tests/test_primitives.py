"""Every scalar primitive's JVP and VJP against central finite differences, at random
points, to first and second order."""
import math
import warnings

import numpy as np
import pytest

import wengert as wg
from wengert import REGISTRY
from fd import check_grads, fd_gradient, assert_close

rng = np.random.default_rng(20261122)


def anywhere():
    return rng.uniform(-2.0, 2.0)


def positive():
    return rng.uniform(0.3, 3.0)


def inside_unit():
    return rng.uniform(-0.8, 0.8)


def away_from_zero():
    return rng.choice([-1, 1]) * rng.uniform(0.3, 2.0)


# name -> (one sampler per argument); each point is away from kinks and domain edges
SMOOTH = {
    "add": (anywhere, anywhere),
    "sub": (anywhere, anywhere),
    "mul": (anywhere, anywhere),
    "div": (anywhere, away_from_zero),
    "neg": (anywhere,),
    "pow": (positive, anywhere),
    "sqrt": (positive,),
    "cbrt": (away_from_zero,),
    "exp": (anywhere,),
    "log": (positive,),
    "log10": (positive,),
    "sin": (anywhere,),
    "cos": (anywhere,),
    "tan": (lambda: rng.uniform(-1.2, 1.2),),
    "cotan": (lambda: rng.choice([-1, 1]) * rng.uniform(0.3, 2.8),),
    "asin": (inside_unit,),
    "acos": (inside_unit,),
    "atan": (anywhere,),
    "atan2": (anywhere, away_from_zero),
    "log1p": (positive,),
    "expm1": (anywhere,),
    "sinh": (anywhere,),
    "cosh": (anywhere,),
    "tanh": (anywhere,),
    "asinh": (anywhere,),
    "acosh": (lambda: rng.uniform(1.2, 3.0),),
    "atanh": (inside_unit,),
    "exp2": (anywhere,),
    "log2": (positive,),
    "hypot": (anywhere, away_from_zero),
    "logaddexp": (anywhere, anywhere),
    "logaddexp2": (anywhere, anywhere),
    "i0": (anywhere,),
    "i1": (anywhere,),
}
# piecewise: first order only, at points away from the kink
PIECEWISE = {
    "abs": (away_from_zero,),
    "sign": (away_from_zero,),
    "maximum": (anywhere, anywhere),
    "minimum": (anywhere, anywhere),
    "relu": (away_from_zero,),
    "round": (away_from_zero,),     # (uniform samples: never on a jump at a half-integer)
    "floor": (anywhere,),           # (nor at an integer)
    "ceil": (anywhere,),
    "trunc": (anywhere,),
    "remainder": (anywhere, away_from_zero),      # (nor on a jump of x/y at an integer)
    "fmod": (anywhere, away_from_zero),
    "floor_divide": (anywhere, away_from_zero),
    "spacing": (away_from_zero,),   # (nor at a power of two)
    "modf_fraction": (anywhere,),
    "frexp_mantissa": (away_from_zero,),
}
NOT_DIFFERENTIABLE = {"lt", "le", "gt", "ge", "eq", "ne",     # bool results
                      "frexp_exponent",                      # int32 results
                      "numpy_ufunc",        # integer arguments: tests/test_numpy.py
                      "nextafter"}          # refused, as in JAX: tests/test_numpy_stats.py
# gammainc's second partial in a: it is a derivative itself (tests/test_scipy.py, against
# mpmath), and its own partials raise (a third derivative)
OTHERWISE_TESTED = {"gammainc_daa"}
STRUCTURAL = {"const", "input", "copy", "powi", "select", "stop_gradient",
              "part", "place",          # part, place: tests/test_checkpoint.py
              "real", "imag", "conj", "complex"}   # complex parts: tests/test_complex.py


def test_every_scalar_primitive_is_checked():
    # (array primitives are covered by test_numpy.py and test_nn.py)
    from wengert.primitives import scalar, registry, special
    from test_scipy import SPECIAL          # SciPy's functions: derivatives checked there
    modules = (scalar, registry, special)
    declared = {name for name, p in REGISTRY.items() if p.builtin and any(
        p is v for m in modules for v in vars(m).values())}
    covered = set(SMOOTH) | set(PIECEWISE) | NOT_DIFFERENTIABLE | STRUCTURAL | OTHERWISE_TESTED | \
        set(SPECIAL) | {name.rstrip("0123456789.-") for name in SPECIAL}   # (iv2.5: iv)
    assert declared <= covered, f"primitives without a derivative test: {declared - covered}"


def _points(samplers, n=5):
    return [[s() for s in samplers] for _ in range(n)]


@pytest.mark.parametrize("name", sorted(SMOOTH) + sorted(PIECEWISE))
def test_first_order_reverse_and_forward(name):
    prim = REGISTRY[name]
    samplers = {**SMOOTH, **PIECEWISE}[name]
    for xs in _points(samplers):
        expected = fd_gradient(lambda *a: prim(*a), xs)
        argnums = tuple(range(len(xs)))
        got_rev = wg.grad(lambda *a: prim(*a), argnums=argnums)(*xs)
        assert_close(got_rev, expected, rtol=1e-6, atol=1e-7)
        for i in range(len(xs)):
            tangents = tuple(1.0 if j == i else 0.0 for j in range(len(xs)))
            _, t = wg.jvp(lambda *a: prim(*a), tuple(xs), tangents)
            assert_close(t, expected[i], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(SMOOTH))
def test_second_order(name):
    prim = REGISTRY[name]
    samplers = SMOOTH[name]
    n = len(samplers)
    argnums = tuple(range(n))
    for xs in _points(samplers, 3):
        # Hessian row i by finite differences of the (exact) gradient
        def grad_i(i):
            return lambda *a: wg.grad(lambda *b: prim(*b), argnums=argnums)(*a)[i]
        expected = [fd_gradient(grad_i(i), xs, h=1e-5) for i in range(n)]
        hess = wg.hessian(lambda *a: prim(*a), argnums=argnums)(*xs)
        assert_close(hess, expected, rtol=1e-5, atol=1e-6)
        # reverse over reverse agrees with forward over reverse
        rr = [wg.grad(grad_i(i), argnums=argnums)(*xs) for i in range(n)]
        assert_close(rr, hess, rtol=1e-10, atol=1e-12)


def test_integer_powers_all_signs():
    for n in (-3, -2, -1, 0, 1, 2, 3, 5):
        for x in (-1.7, 0.6, 2.3):
            d = wg.grad(lambda x: x ** n)(x)
            assert_close(d, n * x ** (n - 1) if n else 0.0, rtol=1e-12)
            d2 = wg.grad(wg.grad(lambda x: x ** n))(x)
            assert_close(d2, n * (n - 1) * x ** (n - 2) if n not in (0, 1) else 0.0,
                         rtol=1e-12)


def test_real_power_of_a_negative_base_is_nan_as_numpy():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert math.isnan(wg.math.power(-8.0, 1 / 3))
        assert math.isnan(np.power(-8.0, 1 / 3))


def test_power_of_a_zero_base_has_zero_derivative_in_the_exponent():
    # 0**y = 0 for every y > 0: every derivative in y is 0 there (the formula x**y log x
    # would give 0 * -inf = nan), in every mode, as JAX and autograd give
    import wengert.numpy as wnp
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)        # no log(0) on the way
        for y in (0.5, 2.0, 3.5):
            f = lambda y: 0.0 ** y + 2.0 ** y
            expected = [2.0 ** y * math.log(2.0) ** k for k in (1, 2)]
            assert_close(fd_gradient(f, (y,))[0], expected[0], rtol=1e-6)
            assert_close(wg.grad(f)(y), expected[0], rtol=1e-12)
            assert_close(wg.jvp(f, (y,), (1.0,))[1], expected[0], rtol=1e-12)
            assert_close(wg.grad(wg.grad(f))(y), expected[1], rtol=1e-12)
            assert_close(wg.compile(wg.grad(f), y)(y), expected[0], rtol=1e-12)
            assert_close(wg.taylor(f, y, 1.0, order=2)[2], expected[1] / 2, rtol=1e-12)
        g = wg.grad(lambda v: wnp.sum(v ** (v + 1.5)))(np.array([0.0, 2.0]))
        assert g[0] == 0.0 and np.isfinite(g[1])


def test_higher_derivatives_of_a_power_where_its_exponent_is_zero():
    # the x-partial of x**y is 0 at y = 0, but its derivative in y is 1/x there: a select on
    # y == 0 made it 0, and the Hessian of x**y at (2, 0) came out unsymmetric
    H = wg.hessian(lambda x, y: x ** y, argnums=(0, 1))(2.0, 0.0)
    assert_close(np.array(H, float), [[0.0, 0.5], [0.5, math.log(2) ** 2]], rtol=1e-15)
    # x**x, whose derivatives at 1 are 1, 2, 3, 8 (its inner pow(x, x - 1) has exponent 0
    # there); Taylor mode, through exp(x log x), agrees
    d = lambda x: x ** x
    got = []
    for _ in range(4):
        d = wg.grad(d)
        got.append(d(1.0))
    assert_close(got, [1.0, 2.0, 3.0, 8.0], rtol=1e-13)
    at2 = wg.taylor(lambda x: x ** x, 2.0, 1.0, order=4)
    assert_close(got[3], 24 * wg.taylor(lambda x: x ** x, 1.0, 1.0, order=4)[4], rtol=1e-13)
    fourth = wg.grad(wg.grad(wg.grad(wg.grad(lambda x: x ** x))))
    assert_close(fourth(2.0), 24 * at2[4], rtol=1e-12)
    assert wg.grad(lambda x, y: x ** y)(0.0, 0.0) == 0.0      # (0**0's derivative stays 0)


def test_expm1_derivatives_keep_their_digits_far_below_zero():
    # the partial ans + 1 cancelled: expm1'(-40) read 0, (-30) had 4 digits
    import wengert.numpy as wnp
    for x in (-20.0, -30.0, -40.0, -700.0):
        assert_close(wg.grad(wnp.expm1)(x), math.exp(x), rtol=1e-15, atol=0)
        assert_close(wg.grad(wg.grad(wnp.expm1))(x), math.exp(x), rtol=1e-15, atol=0)
        series = wg.taylor(wnp.expm1, x, 1.0, order=3)
        assert_close(series[1:], [math.exp(x), math.exp(x) / 2, math.exp(x) / 6], rtol=1e-15,
                     atol=0)


def test_adds_keeps_the_plain_formula_for_a_power_in_its_exponent():
    # ADDS's language has no conditional: its derivative code is x**y log x as written
    from adds_util import run
    _, out = run("f := x**y; g := dfd(f, vec(x,y)); outcode(x,y) g;")
    assert "G[2] := X**Y*LOG(X);" in out


def test_select_routes_derivatives():
    f = lambda x, y: wg.select(x < y, x * x, 3 * y)
    assert wg.grad(f, argnums=(0, 1))(1.0, 2.0) == (2.0, 0.0)
    assert wg.grad(f, argnums=(0, 1))(3.0, 2.0) == (0.0, 3.0)
    # traced abstractly: both branches are in the graph, the derivative still routes
    g = wg.trace(wg.grad(f, argnums=(0, 1)), 1.0, 2.0)
    assert g(1.0, 2.0) == (2.0, 0.0)
    assert g(3.0, 2.0) == (0.0, 3.0)


def test_select_keeps_an_infinite_cotangent_out_of_the_branch_not_taken():
    # (g · 0 made inf · 0 = nan there; JAX's select passes 0)
    import wengert.numpy as wnp
    with np.errstate(all="ignore"):
        assert wg.grad(lambda x: wnp.sqrt(wg.select(x > 0, x, 0.0)))(0.0) == 0.0
        g = wg.grad(lambda x: wnp.sum(wnp.sqrt(wnp.where(x > 0, x, 0.0))))(np.array([0.0, 4.0]))
        assert np.array_equal(g, [0.0, 0.25])
        # a mean over a fully masked-out column: nothing selected, nothing received
        b = rng.normal(size=(2, 3))
        keep = np.array([True, False, True])
        g = wg.grad(lambda x: wnp.sum(wnp.mean(x, axis=0, where=keep)))(b)
        assert np.array_equal(g, np.broadcast_to(np.where(keep, 0.5, 0.0), b.shape))
    # broadcast branches and condition: each cotangent summed to its branch's shape, in
    # symbolic sweeps too, and to second order
    c = rng.normal(size=(3, 1)) > 0
    f = lambda a, b: wnp.sum(wnp.where(c, a ** 3, b * a) ** 2)     # noqa: E731
    a, b = rng.normal(size=4), rng.normal(size=())
    check_grads(f, a, b, order=2)
    grad = wg.grad(f, argnums=(0, 1))
    for eager, compiled in zip(grad(a, b), wg.compile(grad)(a, b)):
        assert_close(compiled, eager, rtol=1e-14, atol=0)


def test_stop_gradient_has_zero_derivative():
    assert wg.grad(lambda x: x * wg.stop_gradient(x * x))(3.0) == 9.0
    assert wg.jvp(lambda x: wg.stop_gradient(x) + x, (1.0,), (1.0,))[1] == 1.0


def test_nothing_behind_a_stop_gradient_is_differentiated():
    """A rule behind stop_gradient only is never asked, in any mode (so one that refuses,
    as nextafter's does, is no obstacle), and what is behind it is a constant."""
    asked = []

    @wg.primitive
    def cube(x):
        return x ** 3

    def refuse(*args, **params):
        asked.append(1)
        raise NotImplementedError("cube's rule was asked")
    cube.defvjp(refuse)
    cube.defjvp(refuse)
    f = lambda x: x * cube(wg.stop_gradient(x)) + x ** 2     # noqa: E731
    assert wg.grad(f)(2.0) == 8.0 + 4.0
    assert wg.jvp(f, (2.0,), (1.0,))[1] == 12.0
    assert wg.hessian(f)(2.0) == 2.0
    assert wg.compile(wg.grad(f), 2.0)(3.0) == 27.0 + 6.0
    assert wg.vmap(wg.grad(f))(np.array([2.0, 3.0])).tolist() == [12.0, 33.0]
    assert not asked
    with pytest.raises(NotImplementedError, match="cube's rule was asked"):
        wg.grad(lambda x: x * cube(x))(2.0)         # (it would be, in front of it)


def test_maximum_and_minimum_of_mixed_python_numbers_promote_as_numpy():
    """maximum(1.0, 1) is the float 1.0, as NumPy's: the fast path returned the int 1,
    and an integer result had no derivative (clip(x, -1, 1) at x = 1 read 0, not 1)."""
    mx, mn = wg.math.maximum, wg.math.minimum
    for f, a, b in ((mx, 1.0, 1), (mn, 1, 1.0), (mx, True, 2), (mn, 2, 1.5), (mx, False, True)):
        want = np.maximum(a, b) if f is mx else np.minimum(a, b)
        got = f(a, b)
        assert got == want and np.result_type(got) == want.dtype
    for bound in (1, 1.0, np.float64(1.0)):
        assert wg.grad(lambda x: mn(x, bound))(1.0) == 1.0           # a tie: the first
        assert wg.grad(lambda x: mx(bound, x))(1.0) == 0.0
        assert wg.grad(lambda x: wg.numpy.clip(x, -bound, bound))(1.0) == 1.0


def test_comparisons_give_bools_and_no_derivative():
    assert wg.grad(lambda x: wg.select(x > 0, x, 0.0) + (x > 1) * 0.0)(2.0) == 1.0
    assert (wg.math.lt(1.0, 2.0), wg.math.ge(1.0, 2.0)) == (True, False)


def test_domain_errors_follow_numpy():
    with pytest.warns(RuntimeWarning):
        assert math.isnan(wg.math.log(-1.0))
    with pytest.warns(RuntimeWarning):
        assert wg.math.log(0.0) == -math.inf
    with pytest.warns(RuntimeWarning):
        assert math.isnan(wg.math.sqrt(-1.0))
    with pytest.warns(RuntimeWarning):
        assert wg.math.exp(1000.0) == math.inf
    with pytest.warns(RuntimeWarning):
        assert math.isnan(wg.math.asin(2.0))
    with pytest.warns(RuntimeWarning):
        assert wg.grad(lambda x: 1.0 / x)(0.0) == -math.inf     # d/dx 1/x = -1/x**2
    # traced: the same conventions hold in the graph's values and derivatives
    with pytest.warns(RuntimeWarning):
        assert math.isnan(wg.grad(lambda x: wg.math.sqrt(x) * 0.5 + wg.math.log(x))(-1.0))


def test_an_array_over_a_scalar_zero_follows_numpy():
    """A partial redone in NumPy where a Python float raised keeps its array arguments as
    they are: x / 0.0 on an array differentiates to inf, a zero sum normalised to nan."""
    import wengert.numpy as wnp
    with np.errstate(all="ignore"):
        assert wg.grad(lambda x: wnp.sum(x / 0.0))(np.ones(3)).tolist() == [math.inf] * 3
        assert np.isnan(wg.grad(lambda x: wnp.sum(x / wnp.sum(x)))(np.zeros(3))).all()
        y, t = wg.jvp(lambda x: x / 0.0, (np.ones(3),), (np.arange(3.0),))
        assert y.tolist() == [math.inf] * 3 and np.isnan(t[0]) and t[1:].tolist() == [math.inf] * 2
        assert wg.grad(lambda x: wnp.sum(wnp.mean(x, axis=0)))(np.ones((0, 3))).shape == (0, 3)
        assert wg.grad(lambda x, y: x / y, argnums=(0, 1))(1.0, 0.0) == (math.inf, -math.inf)


def test_primitives_accept_numpy_arrays_elementwise():
    x = np.array([0.1, 0.5, 1.2])
    np.testing.assert_allclose(wg.math.sin(x), np.sin(x))
    np.testing.assert_allclose(wg.math.atan2(x, 2.0), np.arctan2(x, 2.0))


def test_a_partial_rule_may_return_none_and_its_own_errors_surface():
    # A rule returning None says "zero here"; a TypeError raised inside a rule is the
    # rule's own and must not be taken for that (the sweep multiplies the cotangent by
    # the rule's result in one expression, so it sees both as TypeErrors first).
    gated = wg.primitive(lambda x, on: x * on, name="gated")
    gated.defpartials(lambda x, on, ans: on if on else None, None)
    f = lambda x: gated(x, 0.0) + gated(x, 2.0) * x
    x = np.array([0.5, -1.5])
    g = wg.grad(lambda x: wg.numpy.sum(f(x)))(x)
    assert_close(g, fd_gradient(lambda *x: np.sum(np.array(x) * 2.0 * np.array(x)), x))

    broken = wg.primitive(lambda x: 2 * x, name="broken")
    broken.defpartials(lambda x, ans: x + "oops")
    with pytest.raises(TypeError, match="did not contain a loop"):
        wg.grad(lambda x: wg.numpy.sum(broken(x)))(x)
