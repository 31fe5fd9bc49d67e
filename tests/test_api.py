"""The public API: argnums, pytrees, composition to any order, eager control flow, abstract
tracing errors, custom rules and bad input."""
import collections
import math

import numpy as np
import pytest

import wengert as wg
import wengert.math as wm
import wengert.numpy as wnp
from fd import fd_derivative, fd_gradient, fd_jacobian, assert_close


# ---- argnums and pytrees ---------------------------------------------------------------------
def f3(x, y, z):
    return x * wm.sin(y) + z ** 3 * x


def test_argnums_int_tuple_and_negative():
    args = (0.7, -1.2, 0.4)
    expected = fd_gradient(f3, args)
    assert_close(wg.grad(f3)(*args), expected[0])
    assert_close(wg.grad(f3, argnums=2)(*args), expected[2])
    assert_close(wg.grad(f3, argnums=-1)(*args), expected[2])
    assert_close(wg.grad(f3, argnums=(2, 0))(*args), (expected[2], expected[0]))
    assert isinstance(wg.grad(f3, argnums=(1,))(*args), tuple)


def test_pytrees_in_and_out():
    params = {"w": [1.5, -0.5], "b": (0.25,)}

    def loss(p, x):
        return (p["w"][0] * x + p["w"][1] * x ** 2 + p["b"][0]) ** 2

    g = wg.grad(loss)(params, 2.0)
    assert set(g) == {"w", "b"} and isinstance(g["w"], list) and isinstance(g["b"], tuple)
    r = 1.5 * 2 - 0.5 * 4 + 0.25
    assert_close([g["w"][0], g["w"][1], g["b"][0]], [2 * r * 2, 2 * r * 4, 2 * r])

    Point = collections.namedtuple("Point", "x y")
    jac = wg.jacfwd(lambda p: {"sum": p.x + p.y, "prod": p.x * p.y})(Point(2.0, 3.0))
    assert jac["sum"] == Point(1.0, 1.0) and jac["prod"] == Point(3.0, 2.0)
    jr = wg.jacrev(lambda p: {"sum": p.x + p.y, "prod": p.x * p.y})(Point(2.0, 3.0))
    assert jr == jac


def test_has_aux():
    g, aux = wg.grad(lambda x: (x ** 2, {"twice": 2 * x}), has_aux=True)(3.0)
    assert g == 6.0 and aux == {"twice": 6.0}
    (v, aux), g = wg.value_and_grad(lambda x: (x ** 2, x), has_aux=True)(3.0)
    assert (v, aux, g) == (9.0, 3.0, 6.0)


def test_has_aux_on_jacobians_hessians_and_jvp():
    """JAX's has_aux on jacfwd, jacrev, hessian and jvp: aux comes back undifferentiated,
    with plain values, and the derivative is the one without aux (checked by differences)."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=3)
    f = lambda x: wnp.sin(x) * x[0]
    with_aux = lambda x: (f(x), {"norm": wnp.sum(x * x), "tag": "kept"})
    want = fd_jacobian(f, x, 1e-6)
    for jac in (wg.jacfwd, wg.jacrev):
        J, aux = jac(with_aux, has_aux=True)(x)
        assert_close(J, want, rtol=1e-8, atol=1e-9)
        assert aux["tag"] == "kept" and aux["norm"] == pytest.approx(x @ x, rel=1e-15)
        assert type(aux["norm"]) is not wg.Node
    s = lambda x: wnp.sum(wnp.sin(x) * x[0])
    H, aux = wg.hessian(lambda x: (s(x), 2 * x), has_aux=True)(x)
    assert_close(H, fd_jacobian(wg.grad(s), x, 1e-5), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(aux, 2 * x)
    t = rng.normal(size=3)
    y, dy, aux = wg.jvp(with_aux, (x,), (t,), has_aux=True)
    assert_close(dy, want @ t, rtol=1e-8, atol=1e-9)
    assert_close(y, f(x), rtol=1e-15)
    assert aux["tag"] == "kept"
    with pytest.raises(TypeError, match=r"jacrev\(has_aux=True\) needs a function returning "
                                         r"a pair"):
        wg.jacrev(f, has_aux=True)(x)
    # nested: the aux of an inner Jacobian taken inside a gradient
    assert wg.grad(lambda y: wg.jacrev(lambda x: (x * x * y, y), has_aux=True)(3.0)[0])(2.0) \
        == 6.0


def test_integers_are_differentiated_as_floats():
    assert wg.grad(lambda x: x ** 3)(2) == 12.0
    assert type(wg.grad(lambda x: x ** 3)(2)) is float


def test_numpy_scalars_and_zero_gradient():
    assert wg.grad(lambda x: x * 2.0)(np.float64(1.0)) == 2.0
    assert wg.grad(lambda x, y: y * 2.0)(1.0, 3.0) == 0.0          # f does not use x
    assert wg.grad(lambda x: 5.0)(1.0) == 0.0                      # constant function
    assert wg.grad(lambda x: x)(1.0) == 1.0                        # identity


# ---- composition ------------------------------------------------------------------------------
def test_no_perturbation_confusion():
    """d/dx [x * d/dy (x*y)] = d/dx [x * x] = 2x, not 3x or x."""
    f = lambda x: x * wg.grad(lambda y: x * y)(x)
    for x in (0.5, 2.0, -3.0):
        assert wg.grad(f)(x) == 2 * x
        assert wg.jvp(f, (x,), (1.0,))[1] == 2 * x
        assert wg.trace(wg.grad(f), 1.0)(x) == 2 * x


def test_closure_over_outer_value_with_plain_float_argument():
    # the inner grad is called on a plain float while the outer transformation records
    f = lambda x: wg.grad(lambda y: x * y * y)(2.0)          # = 4x
    assert wg.grad(f)(1.5) == 4.0


@pytest.mark.parametrize("point", [2.0, np.array([2.0, 3.0])])
def test_inner_derivative_at_a_plain_point_inside_a_staged_trace(point):
    # The inner grad's variable is a copy of a constant of the outer trace, not an input
    # of it: compiled code (and vmap's trace, and batched Jacobian sweeps) would otherwise
    # have an input that no caller gives (NameError in the compiled code).
    inner = lambda v: wg.grad(lambda y: wg.numpy.sum(v * y * y))(point)     # 2 v point
    f = lambda v: wg.numpy.sum(inner(v)) * v
    assert wg.compile(f, 1.0)(3.0) == pytest.approx(f(3.0))
    assert wg.compile(wg.grad(f), 1.0)(3.0) == pytest.approx(wg.grad(f)(3.0))
    assert wg.grad(f)(3.0) == pytest.approx(4 * 3.0 * np.sum(point))
    assert np.allclose(wg.jacfwd(lambda vs: vs * wg.grad(lambda y: y ** 3)(2.0))(np.ones(9)),
                       12.0 * np.eye(9))


@pytest.mark.parametrize("order", [1, 2, 3, 4, 5])
def test_any_order(order):
    f = lambda x: wm.exp(2 * x) * wm.sin(x)
    d = f
    for _ in range(order):
        d = wg.grad(d)
    # closed form: Im((2+i)^k e^{(2+i)x})
    x = 0.3
    closed = ((2 + 1j) ** order * np.exp((2 + 1j) * x)).imag
    assert d(x) == pytest.approx(closed, rel=1e-12)


def test_mixed_modes_compose():
    f = lambda x, y: wm.sin(x * y) + x ** 3 / y
    x, y = 0.7, 1.3
    H_ff = wg.jacfwd(wg.jacfwd(f, argnums=(0, 1)), argnums=(0, 1))(x, y)
    H_fr = wg.jacfwd(wg.jacrev(f, argnums=(0, 1)), argnums=(0, 1))(x, y)
    H_rf = wg.jacrev(wg.jacfwd(f, argnums=(0, 1)), argnums=(0, 1))(x, y)
    H_rr = wg.jacrev(wg.jacrev(f, argnums=(0, 1)), argnums=(0, 1))(x, y)
    H = wg.hessian(f, argnums=(0, 1))(x, y)
    for other in (H_ff, H_fr, H_rf, H_rr):
        assert_close(other, H, rtol=1e-13, atol=1e-13)
    fxx = -y * y * math.sin(x * y) + 6 * x / y
    fxy = math.cos(x * y) - x * y * math.sin(x * y) - 3 * x ** 2 / y ** 2
    fyy = -x * x * math.sin(x * y) + 2 * x ** 3 / y ** 3
    assert_close(H, [[fxx, fxy], [fxy, fyy]], rtol=1e-13)


def test_hvp_equals_hessian_times_vector():
    f = lambda v: v[0] ** 2 * v[1] + wm.exp(v[1] * v[2]) - v[0] * v[2] ** 3
    x, v = (0.3, -0.4, 0.8), (1.0, 2.0, -0.5)
    H = np.array(wg.hessian(f)(x))
    assert_close(wg.hvp(f)(x, v), H @ np.array(v), rtol=1e-13)


def test_vjp_pullback_reused_and_jvp_linear():
    out, back = wg.vjp(lambda x, y: (x * y, wm.exp(x)), 1.0, 2.0)
    assert out == (2.0, math.e)
    assert back((1.0, 0.0)) == (2.0, 1.0)
    assert back((0.0, 1.0)) == (math.e, 0.0)
    assert back((2.0, 1.0)) == (4.0 + math.e, 2.0)
    _, t = wg.jvp(lambda x: (x, 2 * x), (1.0,), (3.0,))
    assert t == (3.0, 6.0)


def test_grad_of_pullback():
    # differentiating through a pullback called on a traced cotangent
    def f(c):
        _, back = wg.vjp(lambda x: wm.sin(x) * x, 0.5)
        return back(c)[0] ** 2
    d = math.sin(0.5) + 0.5 * math.cos(0.5)
    assert wg.grad(f)(3.0) == pytest.approx(2 * 3.0 * d * d, rel=1e-14)


# ---- eager mode: Python control flow on values --------------------------------------------------
def test_if_while_for_and_recursion():
    def piecewise(x):
        if x > 0:
            return x ** 2
        return -3 * x

    def halve_until_small(x):
        while x > 1.0:
            x = x / 2
        return x

    def power_loop(x, n=5):
        y = 1.0
        for _ in range(n):
            y = y * x
        return y

    def rec(x, n):
        return x if n == 0 else wm.sin(rec(x, n - 1))

    assert wg.grad(piecewise)(2.0) == 4.0 and wg.grad(piecewise)(-1.0) == -3.0
    assert wg.grad(halve_until_small)(5.0) == 0.125          # 5/8: three halvings
    assert wg.grad(power_loop)(1.5) == pytest.approx(5 * 1.5 ** 4)
    assert wg.grad(lambda x: rec(x, 4))(0.7) == pytest.approx(
        fd_derivative(lambda x: rec(x, 4), 0.7), rel=1e-8)


def test_value_dependent_branch_without_values_is_a_clear_error():
    def f(x):
        return x if x > 0 else -x
    with pytest.raises(wg.ConcretizationError, match=r"wg\.select"):
        wg.trace(f, 1.0)
    with pytest.raises(TypeError, match="eagerly"):
        wg.trace(wg.grad(f), 1.0)
    # eager: fine
    assert wg.grad(f)(-2.0) == -1.0
    # the suggested way out works when traced
    g = wg.trace(lambda x: wg.select(x > 0, x, -x), 1.0)
    assert g(-2.0) == 2.0 and g(3.0) == 3.0


def test_float_of_traced_value_is_refused_because_it_drops_the_derivative():
    with pytest.raises(wg.ConcretizationError, match="wengert.math"):
        wg.grad(lambda x: math.sin(x))(1.0)
    assert wg.grad(lambda x: x * wg.value(x))(3.0) == 3.0
    assert f"{wg.trace(lambda x: x, 1.0, abstract=False).outputs[0]:.2f}" == "1.00"


# ---- custom rules ---------------------------------------------------------------------------
def test_custom_primitive_with_partials():
    @wg.primitive
    def norm2(x, y):          # (numpy's name, hypot, is a built-in primitive's)
        return np.hypot(x, y)
    norm2.defpartials(lambda x, y, ans: x / ans, lambda x, y, ans: y / ans)
    assert wg.grad(norm2, argnums=(0, 1))(3.0, 4.0) == (0.6, 0.8)
    # second order through the declared partials
    d2 = wg.grad(wg.grad(norm2))(3.0, 4.0)
    assert d2 == pytest.approx(fd_derivative(lambda x: wg.grad(norm2)(x, 4.0), 3.0), rel=1e-7)
    assert "norm2" in str(wg.trace(lambda x: norm2(x, 1.0), 2.0))


def test_custom_primitive_with_jvp_and_vjp():
    @wg.primitive(name="cube_sum")
    def cube_sum(x, y):
        return x ** 3 + y ** 3
    cube_sum.defjvp(lambda ts, x, y, ans: sum(3 * v ** 2 * t for v, t in zip((x, y), ts)
                                              if t is not None))
    cube_sum.defvjp(lambda g, x, y, ans: (g * 3 * x ** 2, g * 3 * y ** 2))
    assert wg.grad(cube_sum, argnums=(0, 1))(1.0, 2.0) == (3.0, 12.0)
    assert wg.jvp(cube_sum, (1.0, 2.0), (1.0, 1.0))[1] == 15.0
    assert wg.hessian(cube_sum)(2.0, 1.0) == 12.0


def test_custom_primitive_without_rule_says_so():
    nope = wg.primitive(lambda x: x * 2, name="no_rule")
    with pytest.raises(NotImplementedError, match="no_rule"):
        wg.grad(nope)(1.0)


def test_builtin_primitive_names_are_protected():
    with pytest.raises(ValueError, match="built-in"):
        wg.primitive(lambda x: x, name="sin")


def test_a_function_named_like_a_builtin_becomes_a_primitive_of_its_own():
    # autograd code redefines logsumexp with its own gradient; an explicit name stays refused
    @wg.primitive
    def logsumexp(x):
        return np.log(np.sum(np.exp(x)))
    logsumexp.defvjp(lambda g, x, ans: g * np.exp(x - ans))
    assert logsumexp.name == "logsumexp_user" and wg.REGISTRY["logsumexp"] is not logsumexp
    x = np.array([0.5, -1.0, 2.0])
    assert_close(wg.grad(logsumexp)(x), np.exp(x) / np.exp(x).sum(), rtol=1e-15)
    assert "logsumexp_user(x)" in str(wg.trace(lambda x: logsumexp(x), x))


def test_a_custom_vjp_of_the_wrong_shape_is_an_error_not_a_wrong_gradient():
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    sumsq = wg.primitive(lambda v: float(np.sum(v ** 2)), name="sumsq_checked")
    sumsq.defvjp(lambda g, v, ans: 2 * g * v)          # a bare cotangent: one argument
    for d in (wg.grad(sumsq)(x), wg.jacrev(sumsq)(x), wg.vjp(sumsq, x)[1](1.0)[0],
              wg.grad(lambda v: sumsq(v) + np.sum(v))(x) - 1):
        assert_close(d, 2 * x, rtol=0, atol=0)         # (was its first row, or broadcast)
    assert_close(wg.hessian(sumsq)(x), 2 * np.eye(4).reshape(2, 2, 2, 2), rtol=0, atol=0)
    sumsq.defvjp(lambda g, v, ans: (2 * g,))           # the v forgotten
    with pytest.raises(ValueError, match=r"'sumsq_checked' returned a cotangent of shape "
                                         r"\(\) for argument 0, which has shape \(2, 2\)"):
        wg.grad(sumsq)(x)
    dot = wg.primitive(lambda a, b: float(a @ b), name="dot_checked")
    dot.defvjp(lambda g, a, b, ans: g * b[0], lambda g, a, b, ans: g * a)   # per argument
    with pytest.raises(ValueError, match=r"shape \(\) for argument 0, which has shape \(3,\)"):
        wg.grad(dot)(np.ones(3), np.arange(3.0))
    dot.defvjp(lambda g, a, b, ans: g * b)             # one function, two arguments
    with pytest.raises(TypeError, match="not a tuple of 2 cotangents"):
        wg.grad(dot)(np.ones(3), np.arange(3.0))
    dot.defvjp(lambda g, a, b, ans: (g * b,))
    with pytest.raises(ValueError, match="1 cotangents for its 2 arguments"):
        wg.grad(dot)(np.ones(3), np.arange(3.0))
    twice = wg.primitive(lambda v: 2 * v, name="twice_checked")
    twice.defjvp(lambda ts, v, ans: 2 * ts[0][0])
    for call in (lambda: wg.jvp(twice, (np.ones(3),), (np.ones(3),)),
                 lambda: wg.jacfwd(twice)(np.ones(3))):
        with pytest.raises(ValueError, match=r"tangent of shape \(\), but its result has "
                                             r"shape \(3,\)"):
            call()


def test_a_user_partial_of_the_wrong_shape_is_an_error_in_every_mode():
    # (reverse sweeps once broadcast it into a Jacobian of the wrong shape, silently)
    x = np.array([0.1, 0.2, 0.3])
    wide = wg.primitive(np.sin, name="sin_wide").defpartials(lambda v, ans: np.ones((3, 3)))
    modes = (wg.grad(lambda v: np.sum(wide(v))), wg.jacrev(wide), wg.jacfwd(wide),
             lambda v: wg.jacobian(wide, mode="rev")(v),
             lambda v: wg.jacobian(wide, mode="sparse")(v),
             wg.grad(lambda v: np.sum(wide(v[0]) * v)))
    for call in modes:
        with pytest.raises(ValueError, match=r"partial of primitive 'sin_wide' in argument 0 "
                                             r"has shape \(3, 3\), which does not broadcast "
                                             r"to its result's shape \((3,)?\)"):
            call(x)
    for point in (0.3, x):                     # and where the sweeps go one number at a time
        for jac in (wg.grad, wg.jacrev, wg.jacfwd, wg.hessian):
            f = (lambda v: np.sum(wide(v))) if jac in (wg.grad, wg.hessian) else wide
            with pytest.raises(ValueError, match="'sin_wide' in argument 0"):
                jac(f)(point)
    # a partial that broadcasts (here: one number for the whole array) is right
    ok = wg.primitive(lambda v: 3 * v, name="thrice_ok").defpartials(
        lambda v, ans: np.array([3.0]))
    assert_close(wg.jacrev(ok)(x), 3 * np.eye(3), rtol=0, atol=0)
    assert_close(wg.jacfwd(ok)(x), 3 * np.eye(3), rtol=0, atol=0)


def test_grad_takes_an_output_of_size_one_as_autograd_and_pytorch_do():
    x = np.array([3.0])
    assert_close(wg.grad(lambda v: v ** 3)(x), 3 * x ** 2, rtol=1e-15)
    value, g = wg.value_and_grad(lambda v: np.sum(v ** 2, keepdims=True)[None])(np.ones(2))
    assert value.shape == (1, 1) and g.tolist() == [2.0, 2.0]
    assert_close(wg.grad(wg.grad(lambda v: (v ** 3)[0]))(x), 6 * x, rtol=1e-15)
    assert wg.grad(lambda v: v ** 2)(x.astype(np.float32)).dtype == np.float32
    assert_close(wg.compile(wg.grad(lambda v: v ** 3), x)(x), 3 * x ** 2, rtol=1e-15)
    with pytest.raises(TypeError, match=r"shape \(2,\); use wg.jacrev"):
        wg.grad(lambda v: v ** 2)(np.ones(2))


def test_numpy_random_imports_as_a_submodule():
    import importlib
    npr = importlib.import_module("wengert.numpy.random")
    assert npr is np.random and npr.default_rng(0).normal() == np.random.default_rng(0).normal()


# ---- bad input ---------------------------------------------------------------------------------
def test_bad_input_raises_clear_errors():
    sq = lambda x: x * x
    with pytest.raises(TypeError, match="str"):
        wg.grad(sq)("abc")
    with pytest.raises(TypeError, match="no number"):
        wg.grad(sq)(None)
    with pytest.raises(TypeError, match="bool"):
        wg.grad(sq)(True)
    with pytest.raises(ValueError, match="out of range"):
        wg.grad(sq, argnums=1)(1.0)
    with pytest.raises(TypeError, match="argnums"):
        wg.grad(sq, argnums="0")
    with pytest.raises(TypeError, match="argnums"):
        wg.grad(sq, argnums=1.0)
    with pytest.raises(ValueError, match="repeats"):
        wg.grad(sq, argnums=(0, 0))
    with pytest.raises(TypeError, match="scalar"):
        wg.grad(lambda x: (x, x))(1.0)
    with pytest.raises(TypeError, match=r"shape \(3,\)"):
        wg.grad(lambda x: x * np.ones(3))(1.0)
    with pytest.raises(TypeError, match="function"):
        wg.grad(3.0)
    with pytest.raises(TypeError, match="returned a str"):
        wg.jacfwd(lambda x: "x")(1.0)
    with pytest.raises(TypeError, match="tuples"):
        wg.jvp(sq, 1.0, 1.0)
    with pytest.raises(ValueError, match=r"shape \(\) but its tangent has shape \(2,\)"):
        wg.jvp(sq, (1.0,), (np.ones(2),))
    # a complex tangent for a real primal (it was kept by some rules, dropped by others)
    with pytest.raises(TypeError, match=r"jvp: primal 0 is real \(float64\) but its tangent "
                                        r"is complex \(complex128\)"):
        wg.jvp(wnp.abs, (1.0,), (1j,))
    with pytest.raises(TypeError, match=r"taylor: the point is real .* direction is complex"):
        wg.taylor(wnp.abs, 1.0, 1j, order=2)
    assert wg.jvp(sq, (1.0 + 0j,), (1j,))[1] == 2j
    with pytest.raises(ValueError, match="structure"):
        wg.vjp(lambda x: (x, x), 1.0)[1](1.0)
    with pytest.raises(TypeError, match="str"):
        wg.grad(lambda x: x + "a")(1.0)


def test_broadcast_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"\(3,\).*\(4,\)"):
        wg.trace(lambda x, y: x + y, np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match=r"\(3,\).*\(4,\)"):
        wg.vjp(lambda x: x * np.ones(4), np.ones(3))      # eager: NumPy's message


# ---- arrays through the elementwise primitives ----------------------------------------------------
def test_elementwise_arrays_and_broadcasting_in_reverse_mode():
    x = np.array([0.5, 1.0, 1.5])
    out, back = wg.vjp(lambda x, s: wm.sin(x) * s, x, 2.0)
    np.testing.assert_allclose(out, 2.0 * np.sin(x))
    gx, gs = back(np.ones(3))
    np.testing.assert_allclose(gx, 2.0 * np.cos(x))
    assert gs == pytest.approx(np.sin(x).sum())              # summed back to a scalar
    J = wg.jacfwd(lambda x: wm.exp(x))(x)
    np.testing.assert_allclose(J, np.diag(np.exp(x)))
    np.testing.assert_allclose(wg.jacrev(lambda x: wm.exp(x))(x), np.diag(np.exp(x)))


# ---- what an eager reverse sweep keeps -------------------------------------------------------
def test_an_eager_gradient_keeps_only_the_values_its_sweep_reads():
    from wengert.ad.reverse import values_read
    x, w, b = np.ones((3, 4)), np.full((4, 2), 0.1), np.zeros(2)
    graph = wg.trace(lambda w, b: wg.numpy.sum(wg.numpy.tanh(x @ w + b)), w, b)
    plan = graph.between(graph.inputs, graph.outputs)
    kept = {graph.nodes[i].op.name for i in values_read(plan, graph.inputs)}
    # tanh's partial reads its result, the matmul's VJP for w reads x; nothing reads the
    # matmul's result or the pre-activation, and sum's VJP reads only a shape... of tanh
    assert "tanh" in kept and "const" in kept
    assert "matmul" not in kept and "add" not in kept


def test_dropped_values_never_change_a_result():
    x = np.linspace(-1, 1, 12).reshape(3, 4)
    f = lambda w, b: wg.numpy.sum(wg.numpy.tanh(x @ w + b) ** 2)
    w, b = np.full((4, 2), 0.3), np.array([0.1, -0.2])
    out, back = wg.vjp(f, w, b)
    first = back(1.0)
    assert_close(back(1.0)[0], first[0], rtol=0, atol=0)        # the pullback again
    assert_close(first[0], wg.grad(f)(w, b), rtol=1e-15, atol=0)
    # aux values survive, even when the sweep does not read them
    (val, pre), g = wg.value_and_grad(lambda w: (f(w, b), x @ w + b), has_aux=True)(w)
    assert_close(pre, x @ w + b, rtol=1e-15, atol=0)


def test_a_traced_value_that_escaped_a_finished_gradient_says_so():
    leaked = []

    def f(w):
        h = w * 2.0
        leaked.append(h)                     # tanh's sweep never reads h: it is let go
        return wg.numpy.sum(wg.numpy.tanh(h))
    wg.grad(f)(np.ones(3))
    with pytest.raises(ValueError, match="escaped.*has_aux=True"):
        wg.grad(lambda v: wg.numpy.sum(v * leaked[0]))(np.ones(3))
    with pytest.raises(ValueError, match="escaped a finished gradient.*has_aux=True"):
        wg.value(leaked[0])


def test_a_rule_declared_again_is_asked_again_what_it_reads():
    @wg.primitive
    def twice(x):
        return 2.0 * x
    twice.defvjp(lambda g, x, ans: (2.0 * g,))             # reads neither x nor ans
    f = lambda x: wg.numpy.sum(twice(wg.numpy.sin(x)))
    x = np.array([0.1, 0.2])
    assert_close(wg.grad(f)(x), 2.0 * np.cos(x), rtol=1e-15, atol=0)
    twice.defvjp(lambda g, x, ans: (g * ans / x,))         # now it reads both
    assert_close(wg.grad(f)(x), 2.0 * np.cos(x), rtol=1e-14, atol=0)


def test_dropping_unread_values_lowers_the_peak_memory_of_an_eager_gradient():
    import tracemalloc
    import wengert.api as api
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 100))
    params = [rng.normal(size=(100, 100)) * 0.1, np.zeros(100)] * 3

    def loss(ps):
        h = x
        for i in range(0, len(ps), 2):
            h = wg.numpy.tanh(h @ ps[i] + ps[i + 1])
        return wg.numpy.sum(h * h)

    def peak():
        tracemalloc.start()
        wg.grad(loss)(params)
        out = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return out
    with_drop = peak()
    def keep_everything(graph, inputs, outputs, keep):
        plan = graph.between(inputs, outputs)
        return plan, api.ad.active_indices(plan, inputs)
    real = api.ad.eager_plan
    api.ad.eager_plan = keep_everything
    try:
        without = peak()
    finally:
        api.ad.eager_plan = real
    assert with_drop < 0.85 * without, (with_drop, without)


def test_eager_plan_drops_what_drop_unread_drops_in_one_pass():
    from wengert.ad.reverse import eager_plan, drop_unread, active_indices
    x = np.linspace(-1, 1, 12).reshape(3, 4)

    def record():
        graph = wg.Graph()
        w, b = graph.input(np.full((4, 2), 0.3)), graph.input(np.array([0.1, -0.2]))
        with wg.graph.active.recording(graph):
            unused = wg.numpy.exp(w)            # depends on the inputs, not needed
            out = wg.numpy.sum(wg.numpy.tanh(x @ w + b) ** 2)
        return graph, [w, b], out, unused

    graph, inputs, out, unused = record()
    plan, active = eager_plan(graph, inputs, [out], [out])
    dropped = {n.op.name for n in graph.nodes if n.value is None}
    graph2, inputs2, out2, _ = record()
    plan2 = graph2.between(inputs2, [out2])
    drop_unread(plan2, inputs2, [out2], active_indices(plan2, inputs2))
    assert dropped - {"exp"} == {n.op.name for n in plan2 if n.value is None} \
        == {"matmul", "add"}
    # the plan may hold a node the output does not need; it gets no adjoint
    assert any(n is unused for n in plan) and active[unused.index]
    g = wg.ad.reverse(plan, inputs, [out], [1.0], False, active=active)
    g2 = wg.ad.reverse(plan2, inputs2, [out2], [1.0], False)
    for a, b in zip(g, g2):
        np.testing.assert_array_equal(a, b)


def test_eager_plan_falls_back_when_the_inputs_are_not_the_first_nodes():
    from wengert.ad.reverse import eager_plan
    graph = wg.Graph()
    c = graph.const(np.arange(3.0))
    x = graph.input(np.array([0.5, 1.0, 2.0]))
    with wg.graph.active.recording(graph):
        out = wg.numpy.sum(wg.numpy.sin(x) * c)
    plan, active = eager_plan(graph, [x], [out], [out])
    (g,) = wg.ad.reverse(plan, [x], [out], [1.0], False, active=active)
    np.testing.assert_allclose(g, np.cos([0.5, 1.0, 2.0]) * np.arange(3.0))


def test_pytrees_round_trip_and_refuse_the_wrong_number_of_leaves():
    from wengert.tree import flatten, unflatten
    for tree in ([1.0, 2.0, 3.0], (1.0, 2.0), [1.0, (2.0, [3.0])], {"b": [1.0], "a": 2.0}):
        leaves, d = flatten(tree)
        assert unflatten(d, leaves) == tree
        with pytest.raises(ValueError, match="too many leaves"):
            unflatten(d, leaves + [0.0])
        with pytest.raises(ValueError, match="too few leaves"):
            unflatten(d, leaves[:-1])
    assert flatten([1.0, 2.0])[1].flat and not flatten([1.0, [2.0]])[1].flat


def test_ravel_pytree_round_trips_and_differentiates_both_ways():
    from wengert.tree import ravel_pytree
    rng = np.random.default_rng(5)
    params = {"w": rng.normal(size=(2, 3)).astype(np.float32), "b": [0.5, rng.normal(size=2)],
              "s": np.float64(1.5)}
    v, unravel = ravel_pytree(params)
    assert v.shape == (10,) and v.dtype == np.float64
    back = unravel(v)
    assert back["w"].dtype == np.float32 and back["w"].shape == (2, 3)
    assert_close(back["w"], params["w"], rtol=0, atol=0)
    assert float(back["b"][0]) == 0.5 and float(back["s"]) == 1.5
    params["w"] = params["w"].astype(np.float64)      # (differences need float64 steps)
    v, unravel = ravel_pytree(params)

    def loss(p):
        return wnp.sum(wnp.sin(p["w"])) * p["b"][0] + wnp.sum(p["b"][1] ** 3) * p["s"]
    flat_loss = lambda v: loss(unravel(v))
    g = wg.grad(flat_loss)(v)
    assert_close(g, fd_jacobian(flat_loss, v, 1e-6), rtol=1e-5, atol=1e-7)
    assert_close(g, ravel_pytree(wg.grad(loss)(params))[0], rtol=1e-14, atol=0)
    # and the other way: a function of the tree through its vector
    h = wg.grad(lambda p: wnp.sum(ravel_pytree(p)[0] ** 2))(params)
    assert_close(ravel_pytree(h)[0], 2 * v, rtol=1e-15, atol=0)
    with pytest.raises(ValueError, match=r"shape \(10,\).*got shape \(3,\)"):
        unravel(np.zeros(3))
    empty, unravel_empty = ravel_pytree({})
    assert empty.shape == (0,) and unravel_empty(empty) == {}


def test_gradients_come_back_in_the_dtype_of_their_argument():
    import wengert.numpy as wnp
    x32 = np.linspace(0.5, 1.5, 4).astype(np.float32)
    losses = [lambda x: wnp.sum(x * x), lambda x: x[0] * 2, lambda x: wnp.mean(x),
              lambda x: wnp.max(x), lambda x: wnp.logsumexp(x),
              lambda x: wnp.sum(wnp.linalg.inv(wnp.reshape(x, (2, 2)) + 2 * np.eye(2))),
              lambda x: wnp.sum(wnp.maximum(x, 0.9) * 3.0)]
    for f in losses:
        g = wg.grad(f)(x32)
        assert g.dtype == np.float32
        assert_close(g, wg.grad(f)(x32.astype(np.float64)), rtol=1e-5)
        assert wg.vjp(f, x32)[1](np.float32(1.0))[0].dtype == np.float32
        # staged, the same: the gradient is cast back where float64 constants promoted it
        compiled = wg.compile(wg.grad(f), x32)(x32)
        assert compiled.dtype == np.float32
        assert_close(compiled, g, rtol=1e-6)
    assert type(wg.grad(lambda x: x * x)(np.float32(2.0))) is np.float32
    assert type(wg.grad(lambda x: x * x)(2.0)) is float


def test_hvp_reports_its_own_parameters():
    import inspect
    h = wg.hvp(lambda y: y ** 3)
    assert list(inspect.signature(h).parameters) == ["x", "v"]
    assert h(2.0, 1.0) == 12.0 and wg.compile(h, 2.0, 1.0)(2.0, 1.0) == 12.0
    # and its errors name hvp, x and v (they came from the jvp inside it)
    with pytest.raises(ValueError, match=r"^hvp: x has shape \(3,\) but its direction v "
                                         r"has shape \(2,\)"):
        wg.hvp(lambda y: np.sum(y ** 3))(np.ones(3), np.ones(2))


def test_jacobian_blocks_come_back_in_the_promoted_float_dtype():
    """A float32 function of float32 arguments has float32 Jacobians in every mode (the
    sweeps promote through rules' float64 constants); mixed precisions promote, the same
    in forward and reverse mode."""
    import wengert.numpy as wnp
    x32 = np.linspace(-1, 1, 3).astype(np.float32)
    f = lambda x: wnp.maximum(x, 0.2) * wnp.tanh(x)
    want = wg.jacfwd(f)(x32.astype(np.float64))
    jacs = [wg.jacfwd, wg.jacrev] + [
        (lambda m: lambda g: wg.jacobian(g, mode=m))(m) for m in ("fwd", "rev", "sparse")]
    for jac in jacs:
        for J in (jac(f)(x32), wg.compile(jac(f), x32)(x32)):
            assert J.dtype == np.float32
            assert_close(J, want, rtol=1e-5, atol=1e-6)
    s = lambda x: wnp.sum(wnp.maximum(x, 0.2) ** 3)
    assert wg.hessian(s)(x32).dtype == np.float32
    assert type(wg.jacrev(lambda x: x * x)(np.float32(2.0))) is np.float32
    assert type(wg.jacfwd(lambda x: x * x)(2.0)) is float
    up = lambda x: wnp.astype(x, np.float64) * 2.0             # float32 in, float64 out
    assert wg.jacfwd(up)(x32).dtype == wg.jacrev(up)(x32).dtype == np.float64


def test_grad_refuses_bool_and_complex_results():
    with pytest.raises(TypeError, match="real-valued result, but it returned a bool"):
        wg.grad(lambda x: x > 0)(1.0)
    with pytest.raises(TypeError, match="returned a complex128 value: differentiate its real"):
        wg.grad(lambda x: 1j * x)(1.0)
    import wengert.numpy as wnp
    # a complex constant is fine (docs/complex.md): |x (3 + 4i)| = 5x, no longer refused
    # (and once a silent -1.4+4.8j, before complex numbers were refused)
    g = wg.grad(lambda x: wnp.abs(x * (3 + 4j)))(1.0)
    assert type(g) is float and g == pytest.approx(5.0, abs=1e-15)


def test_a_pullback_outliving_its_transformation_says_so():
    store = {}

    def f(x):
        out, back = wg.vjp(lambda y: y * x, 2.0)
        store["back"] = back
        return out
    assert wg.grad(f)(3.0) == 2.0
    with pytest.raises(ValueError, match="transformation that has finished"):
        store["back"](1.0)


def test_jacobians_of_empty_arrays_are_empty_blocks():
    import wengert.numpy as wnp
    for jac in (wg.jacfwd, wg.jacrev):
        assert jac(lambda x: x * 2)(np.zeros(0)).shape == (0, 0)
        assert jac(lambda x: x[:0])(np.ones(2)).shape == (0, 2)
        assert jac(lambda x: (x[:0], x * 3))(np.ones(2))[1].tolist() == [[3, 0], [0, 3]]
    assert wg.hessian(lambda x: wnp.sum(x * x))(np.zeros(0)).shape == (0, 0)


def test_dicts_with_keys_of_mixed_types_flatten_in_one_order_and_differentiate():
    from wengert.tree import flatten, unflatten
    rng = np.random.default_rng(4)
    a, b, c = rng.uniform(0.5, 1.5, 3)
    p = {"a": a, 1: b, (2, "z"): c, None: [a]}
    leaves, tree = flatten(p)
    assert unflatten(tree, leaves) == p
    # insertion order does not matter: the same keys give the same structure and order
    q = dict(reversed(list(p.items())))
    assert flatten(q) == (leaves, tree)
    assert list(unflatten(tree, leaves)) == [1, None, "a", (2, "z")]

    def f(p):
        return p["a"] * wm.sin(p[1]) + p[(2, "z")] ** 2 * p[None][0]
    g = wg.grad(f)(p)
    assert set(g) == set(p) and isinstance(g[None], list)
    keys = [1, "a", (2, "z")]
    num = fd_gradient(lambda u, v, w: f({"a": v, 1: u, (2, "z"): w, None: [v]}),
                      [p[k] for k in keys])
    assert_close([g[1], g["a"] + g[None][0], g[(2, "z")]], num)
    # a Jacobian of a mixed-key dict output by a mixed-key dict input, both ways
    h = lambda p: {0: p["a"] * p[1], "s": p[(2, "z")] + p[None][0]}
    jf, jr = wg.jacfwd(h)(p), wg.jacrev(h)(p)
    assert jf == jr and jf[0]["a"] == p[1] and jf["s"][None] == [1.0]
    out, back = wg.vjp(h, p)
    (ct,) = back({"s": 1.0, 0: 2.0})
    assert_close([ct["a"], ct[1], ct[(2, "z")], ct[None][0]], [2 * p[1], 2 * p["a"], 1, 1])
    assert wg.compile(wg.grad(f), p)(q) == g


def test_jacobian_blocks_of_int_and_bool_outputs_agree_in_both_modes():
    # an int or bool output is piecewise constant: every mode gives zeros of shape
    # out.shape + in.shape in the input's float dtype (a Python float for a float64 scalar)
    import wengert.numpy as wnp

    def f(x):
        return {"n": wnp.sum(x > 1.0), "big": x > 1.0, "i": wnp.astype(x, np.int32),
                "y": (x * x, 3, np.arange(3)), "first": x[0] > 0.5}
    rng = np.random.default_rng(7)
    for dtype in (np.float64, np.float32):
        x = rng.uniform(0.5, 1.5, 2).astype(dtype)
        jf, jr = wg.jacfwd(f)(x), wg.jacrev(f)(x)
        jc = wg.compile(wg.jacfwd(f), x)(x), wg.compile(wg.jacrev(f), x)(x)
        for k, shape in [("n", (2,)), ("big", (2, 2)), ("i", (2, 2)), ("first", (2,))]:
            for j in (jf, jr) + jc:
                assert j[k].shape == shape and j[k].dtype == dtype and not j[k].any()
        for j in (jr,) + jc:
            assert j["y"][1].dtype == jf["y"][1].dtype and j["y"][2].dtype == dtype
            assert j["y"][2].shape == (3, 2) and not j["y"][2].any()
            assert_close(j["y"][0], jf["y"][0])
        eps = 1e-6
        fd = [(f(x + eps * e)["y"][0] - f(x - eps * e)["y"][0]) / (2 * eps)
              for e in np.eye(2)]
        assert_close(jf["y"][0], np.stack(fd, axis=-1), rtol=1e-3)
    # scalars, pytrees of arguments, and inside another transformation
    g = lambda a, b: (a > b, a * b, 3, True)
    for jac in (wg.jacfwd, wg.jacrev):
        J = jac(g, argnums=(0, 1))(1.0, 2.0)
        assert J == ((0.0, 0.0), (2.0, 1.0), (0.0, 0.0), (0.0, 0.0))
        assert all(type(v) is float for row in J for v in row)
        J32 = jac(lambda x: x > 1)(np.float32(2.0))
        assert type(J32) is np.float32 and J32 == 0
        assert jac(lambda p: {"c": p["a"] > p["b"]})({"a": 1.0, "b": 2.0}) == \
            {"c": {"a": 0.0, "b": 0.0}}
        assert wg.hessian(lambda x: wnp.sum(x > 1.0) + 0.0 * x[0])(np.ones(2)).shape == (2, 2)
    for mode in ("fwd", "rev", "eliminate", "sparse", "auto"):
        assert wg.jacobian(g, argnums=(0, 1), mode=mode)(1.0, 2.0) == \
            wg.jacfwd(g, argnums=(0, 1))(1.0, 2.0)


# ---- weak typing of Python numbers -------------------------------------------------------------
def test_a_traced_graph_evaluates_strong_float64_scalars_as_numpy_does():
    # a float32 scalar plus a NumPy float64 scalar is float64; the graph said so, but its
    # evaluation saw the float64 as a Python float (weak) and gave float32
    v = np.ones(2, np.float32)
    for f in (lambda t: np.zeros(()) + t[0], lambda t: np.float64(0.5) * t[1],
              lambda t: t[0] * 2.0, lambda t: t[0] * t[1]):
        want = np.asarray(f(v)).dtype
        graph = wg.trace(f, v)
        assert graph.outputs[0].dtype == want
        assert np.asarray(graph(v)).dtype == want
        assert np.asarray(wg.compile(f, v)(v)).dtype == want


def test_python_float_arguments_are_weak_in_every_transformation():
    x32 = np.linspace(0.5, 1.5, 3, dtype=np.float32)

    def f(x, s):
        return np.sum((x * s + 1.0) * s)
    v, (gx, gs) = wg.value_and_grad(f, argnums=(0, 1))(x32, 2.0)
    assert v.dtype == gx.dtype == np.float32
    assert np.result_type(gs) == np.float32      # the sweep's dtype, as eager gives it
    jac = wg.jacobian_graph(f, x32, 2.0, argnums=1, mode="rev")
    assert jac.outputs[0].dtype == np.result_type(wg.jacrev(f, argnums=1)(x32, 2.0))
    hess = wg.hessian(f, argnums=1)
    assert wg.trace(hess, x32, 2.0).outputs[0].dtype == np.result_type(hess(x32, 2.0))
    assert_close(gs, fd_derivative(lambda s: f(x32.astype(float), s), 2.0), rtol=1e-5)
    assert_close(wg.hessian(f, argnums=1)(x32, 2.0), 2 * np.sum(x32), rtol=1e-6)
    # Jacobians with respect to a Python number take the output's dtype, as grad does
    g = lambda s: x32 * s
    for jac in (wg.jacrev, wg.jacfwd, lambda g: wg.jacobian(g, mode="rev")):
        assert jac(g)(2.0).dtype == np.float32
    assert np.result_type(hess(x32, 2.0)) == np.float32
    # a NumPy float64 is strong, in eager tracing as in NumPy 2
    v64, (_, gs64) = wg.value_and_grad(f, argnums=(0, 1))(x32, np.float64(2.0))
    assert type(v64) is float and type(gs64) is float


@pytest.mark.parametrize("f", [
    lambda x: wnp.sum(wnp.stack([x, 0.0]) ** 2),
    lambda x: wnp.sum(wnp.stack([x, x]) ** 2),
    lambda x: wnp.stack([x, 0.0])[0] * 3.0,
])
def test_gradient_of_a_float_is_a_float(f):
    """A scalar's gradient through array rules (stack, indexing) is a Python float, as
    every float64 scalar value is, not a 0-d array or a NumPy scalar; a 0-d array's is a
    0-d array of its dtype (the gradient is shaped and typed as its input, as in JAX)."""
    eps = 1e-6
    fd = (f(0.8 + eps) - f(0.8 - eps)) / (2 * eps)
    for x in (0.8, np.float64(0.8)):
        g = wg.grad(f)(x)
        assert type(g) is float, (x, type(g))
        assert abs(g - fd) < 1e-6
    for dtype in (np.float64, np.float32):
        x = np.array(0.8, dtype)
        out = np.result_type(f(x), dtype)   # (a Jacobian's dtype: NumPy's stack promotes)
        for g, want in ((wg.grad(f)(x), dtype), (wg.vjp(f, x)[1](1.0)[0], dtype),
                        (wg.jacrev(f)(x), out), (wg.jacfwd(f)(x), out),
                        (wg.jacobian(f)(x), out), (wg.jacobian(f, mode="sparse")(x), out)):
            assert type(g) is np.ndarray and g.shape == () and g.dtype == want, repr(g)
            assert abs(g - fd) < 1e-3
    # second derivatives: hvp is shaped as x; a Hessian block as the argument it is
    # differentiated by last (it is the Jacobian of the gradient)
    x, y = np.array(0.8), 0.3
    fd2 = (wg.grad(f)(0.8 + eps) - wg.grad(f)(0.8 - eps)) / (2 * eps)
    hv = wg.hvp(f)(x, np.array(1.0))
    assert type(hv) is np.ndarray and hv.shape == () and abs(hv - fd2) < 1e-4
    hv = wg.hvp(lambda p: f(p["x"]) * p["y"])({"x": x, "y": y}, {"x": 1.0, "y": 0.0})
    assert type(hv["x"]) is np.ndarray and type(hv["y"]) is float
    h = wg.hessian(lambda a, b: f(a) * b, argnums=(0, 1))(x, y)
    assert [[type(b) for b in row] for row in h] == [[np.ndarray, float]] * 2
    assert abs(h[0][0] - fd2 * y) < 1e-4


# ---- linearize and eval_shape (JAX's) ---------------------------------------------------------
def test_linearize_gives_the_jvp_at_a_point_without_recomputing_f():
    from fd import fd_jacobian
    calls = []

    def f(p, x):
        calls.append(1)
        return {"y": wnp.tanh(p["w"] @ x + p["b"]), "s": wnp.sum(x ** 3)}
    r = np.random.default_rng(5)
    p = {"w": r.normal(size=(3, 4)), "b": r.normal(size=3)}
    x = r.normal(size=4)
    out, f_jvp = wg.linearize(f, p, x)
    want = f(p, x)
    np.testing.assert_allclose(out["y"], want["y"], rtol=1e-15)
    assert out["s"] == pytest.approx(want["s"], rel=1e-15)
    made = len(calls)
    for k in range(3):
        tp = {"w": r.normal(size=(3, 4)), "b": r.normal(size=3)}
        tx = r.normal(size=4)
        got = f_jvp(tp, tx)
        ref = wg.jvp(f, (p, x), (tp, tx))[1]
        np.testing.assert_allclose(got["y"], ref["y"], rtol=1e-13)
        assert got["s"] == pytest.approx(ref["s"], rel=1e-13)
    assert len(calls) == made + 3                 # (only the three jvp references)
    # against finite differences: the Jacobian in x, column by column
    J = np.stack([f_jvp({"w": np.zeros((3, 4)), "b": np.zeros(3)}, e)["y"] for e in np.eye(4)],
                 axis=1)
    np.testing.assert_allclose(J, fd_jacobian(lambda x: f(p, x)["y"], x, 1e-6), rtol=1e-7,
                               atol=1e-9)
    # f_jvp is linear, and a function like any other: its Jacobian is f's
    g = lambda t: f_jvp({"w": np.zeros((3, 4)), "b": np.zeros(3)}, t)["y"]
    np.testing.assert_allclose(wg.jacfwd(g)(np.zeros(4)), J, rtol=1e-13)
    np.testing.assert_allclose(wg.jacrev(g)(np.ones(4)), J, rtol=1e-13)


def test_linearize_of_a_traced_point_differentiates_through_the_point():
    v = np.array([0.3, -0.7])

    def directional(x):                           # <J(x) v, 1>: the gradient is H-like
        _, f_jvp = wg.linearize(lambda x: wnp.sin(x) * x[::-1], x)
        return wnp.sum(f_jvp(v))
    x = np.array([0.4, 1.1])
    g = wg.grad(directional)(x)
    from fd import fd_jacobian
    np.testing.assert_allclose(g, fd_jacobian(directional, x, 1e-6), rtol=1e-7)


def _gauss_newton(w, p, b, calls):
    """‖J v‖² + Σ f for f(x) = tanh(W x + b) at the point p, with J f's Jacobian there:
    linearize with f closing over W and b (and p perhaps traced too)."""
    v = np.array([0.3, -0.7, 1.1])

    def f(x):
        calls.append(1)
        return wnp.tanh(w @ x + b)
    y, f_jvp = wg.linearize(f, p)
    jv = f_jvp(v)
    return wnp.sum(jv * jv) + wnp.sum(y) + wnp.sum(f_jvp(2 * v))


def _gauss_newton_closed_form(w, p, b):
    v = np.array([0.3, -0.7, 1.1])
    y = np.tanh(w @ p + b)
    jv = (1 - y ** 2) * (w @ v)
    return np.sum(jv ** 2) + np.sum(y) + 2 * np.sum(jv)


def test_linearize_closing_over_traced_values_differentiates_through_them():
    r = np.random.default_rng(11)
    w, p, b = r.normal(size=(2, 3)), r.normal(size=3), r.normal(size=2)
    calls = []
    assert _gauss_newton(w, p, b, calls) == pytest.approx(_gauss_newton_closed_form(w, p, b),
                                                          rel=1e-13)
    # the weights and bias are closed over, the point is an argument: all three traced
    g = wg.grad(lambda w, p, b: _gauss_newton(w, p, b, calls), argnums=(0, 1, 2))(w, p, b)
    for k, x in enumerate((w, p, b)):
        def along(x, k=k):
            args = [w, p, b]
            args[k] = x
            return _gauss_newton_closed_form(*args)
        np.testing.assert_allclose(g[k].ravel(), fd_jacobian(along, x, 1e-6).ravel(), rtol=1e-6,
                                   atol=1e-8)
    # f is traced once per linearize, not once per f_jvp call (nor once more for its value)
    calls.clear()
    wg.grad(lambda w: _gauss_newton(w, p, b, calls))(w)
    assert len(calls) == 1
    # to second order: the Hessian in the bias against differences of the gradient
    grad_b = wg.grad(lambda b: _gauss_newton(w, p, b, []))
    H = wg.jacfwd(grad_b)(b)
    np.testing.assert_allclose(H, fd_jacobian(grad_b, b, 1e-5), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(wg.hessian(lambda b: _gauss_newton(w, p, b, []))(b), H,
                               rtol=1e-12, atol=1e-14)
    # compiled, the same
    compiled = wg.compile(wg.grad(lambda w: _gauss_newton(w, p, b, [])))
    np.testing.assert_allclose(compiled(w), g[0], rtol=1e-12)


def test_linearize_under_vmap_and_scan_closing_over_their_values():
    r = np.random.default_rng(12)
    ws, x0, v = r.normal(size=(4, 3)), r.normal(size=3), r.normal(size=3)

    def one(w):                                   # J v for f(x) = sin(w x) x
        _, f_jvp = wg.linearize(lambda x: wnp.sin(w * x) * x, x0)
        return f_jvp(v)
    want = lambda ws: (np.cos(ws * x0) * ws * x0 + np.sin(ws * x0)) * v
    np.testing.assert_allclose(wg.vmap(one)(ws), want(ws), rtol=1e-13)
    total = lambda ws: wnp.sum(wg.vmap(one)(ws) ** 2)
    np.testing.assert_allclose(wg.grad(total)(ws).ravel(),
                               fd_jacobian(lambda ws: np.sum(want(ws) ** 2), ws, 1e-6).ravel(),
                               rtol=1e-6, atol=1e-8)

    def loop(w):                                  # the carry c is traced by scan
        def body(c, x):
            _, f_jvp = wg.linearize(lambda y: wnp.sin(w * y * c), x)
            return c + f_jvp(1.0), f_jvp(2.0)
        return wg.scan(body, 1.0, x0)

    def plain_loop(w):
        c, ys = 1.0, []
        for x in x0:
            d = np.cos(w * x * c) * w * c
            c, ys = c + d, ys + [2 * d]
        return c, np.array(ys)
    c, ys = loop(0.7)
    assert c == pytest.approx(plain_loop(0.7)[0], rel=1e-13)
    np.testing.assert_allclose(ys, plain_loop(0.7)[1], rtol=1e-13)
    assert wg.grad(lambda w: loop(w)[0])(0.7) == pytest.approx(
        fd_derivative(lambda w: plain_loop(w)[0], 0.7), rel=1e-6)


def test_linearize_in_a_trace_branches_on_the_point_and_keeps_the_linear_rest():
    v = np.array([0.3, -0.7])

    def directional(x):
        f = lambda x: wnp.sin(x) if wnp.sum(x) > 0 else wnp.cos(x)  # a value-dependent branch
        _, f_jvp = wg.linearize(f, x)
        assert [n.name for n in f_jvp.graph.inputs][:1] == ["arg0"]   # tangents come first
        return wnp.sum(f_jvp(v))
    for x in (np.array([0.4, 1.1]), np.array([-0.4, -1.1])):
        np.testing.assert_allclose(wg.grad(directional)(x), fd_jacobian(
            lambda x: np.sum((np.cos(x) if x.sum() > 0 else -np.sin(x)) * v), x, 1e-6),
            rtol=1e-7)
    # without a value (under vmap) the branch cannot be decided: a clear error
    with pytest.raises(wg.ConcretizationError, match="wg.linearize traced f at a point that "
                                                     "has no value here"):
        wg.vmap(directional)(np.ones((3, 2)))


def test_linearize_errors_in_a_trace():
    def f(x):
        _, f_jvp = wg.linearize(lambda a, b: a * b, x, np.ones(2))
        with pytest.raises(TypeError, match="f_jvp takes 2 tangents"):
            f_jvp(1.0)
        with pytest.raises(ValueError, match=r"f_jvp: primal 1 has shape \(2,\) but its "
                                             r"tangent has shape \(3,\)"):
            f_jvp(1.0, np.ones(3))
        with pytest.raises(ValueError, match=r"f_jvp: primal 0 has structure"):
            f_jvp((1.0,), np.ones(2))
        return wnp.sum(f_jvp(1.0, np.zeros(2)))
    assert wg.grad(f)(3.0) == 0.0                 # d/dx of Σ (1 · b) = 0
    # kept past the transformation it was made in, it refuses (it returned a dead node)
    kept = []
    wg.grad(lambda w: kept.append(wg.linearize(lambda x: wnp.sin(w * x), np.ones(3))[1])
            or w)(0.7)
    with pytest.raises(ValueError, match="f_jvp: it was made inside a transformation that "
                                         "has finished"):
        kept[0](np.ones(3))
    for point in (True, "x"):
        with pytest.raises(TypeError, match="linearize: primal 0 is a"):
            wg.grad(lambda w: wg.linearize(lambda x: x * w, point)[0])(1.0)


def test_linearize_takes_the_point_by_value_and_keeps_weak_types():
    f = lambda x: wnp.sin(x) * x
    for n in (3, 50):                       # (small and large arrays compile differently)
        x = np.linspace(0.1, 1.0, n)
        want = (np.cos(x) * x + np.sin(x)) * 1.0
        _, f_jvp = wg.linearize(f, x)
        x[:] = 0.0                          # the caller reuses its buffer
        for t in (np.ones(n), np.ones(n, np.float32)):      # (a new signature: traced again)
            np.testing.assert_allclose(f_jvp(t), want, rtol=1e-6)
        np.testing.assert_allclose(np.diag(wg.jacfwd(f_jvp)(np.ones(n))), want, rtol=1e-13)

    def g(w):                               # in a trace, the point a plain array
        x = np.array([0.5, 1.0, -0.3])
        _, f_jvp = wg.linearize(lambda z: wnp.sin(z * w) * z, x)
        x[:] = 0.0
        return wnp.sum(f_jvp(np.ones(3)))
    x = np.array([0.5, 1.0, -0.3])
    closed = lambda w: np.sum(np.cos(x * w) * x * w + np.sin(x * w))
    value, grad = wg.value_and_grad(g)(0.7)
    assert value == pytest.approx(closed(0.7), rel=1e-13)
    assert grad == pytest.approx(fd_derivative(closed, 0.7), rel=1e-7)
    # a Python-number tangent is weak: a float32 function keeps float32, as under jvp
    h = lambda x: x * np.ones(2, np.float32)
    assert wg.compile(lambda w: wg.linearize(h, w)[1](1.0))(0.5).dtype == np.float32
    assert wg.eval_shape(lambda w: wg.linearize(h, w)[1](1.0), 0.5).dtype == np.float32


def test_linearize_errors():
    _, f_jvp = wg.linearize(lambda x, y: x * y, 2.0, 3.0)
    assert f_jvp(1.0, 0.0) == 3.0
    with pytest.raises(TypeError, match="f_jvp takes 2 tangents, one per primal of "
                                        "linearize, got 1"):
        f_jvp(1.0)
    _, f_jvp = wg.linearize(lambda x: x * 2, np.ones(3))
    with pytest.raises(ValueError, match=r"f_jvp: primal 0 has shape \(3,\) but its "
                                         r"tangent has shape \(4,\)"):
        f_jvp(np.ones(4))
    with pytest.raises(TypeError, match="linearize needs the point"):
        wg.linearize(lambda x: x)
    with pytest.raises(TypeError, match="linearize expects a function"):
        wg.linearize(3.0, 1.0)


def test_eval_shape_traces_without_values():
    def f(x, w, *, scale):
        with pytest.raises(wg.ConcretizationError):
            float(x[0, 0])                        # (abstract: there are no numbers)
        return {"h": wnp.tanh(x @ w) * scale, "idx": wnp.argmax(x, axis=1)}, x > 0
    out = wg.eval_shape(f, np.ones((5, 3), np.float32), wg.ShapeDtype((3, 2)), scale=2.0)
    assert (out[0]["h"].shape, out[0]["h"].dtype) == ((5, 2), np.float64)
    assert (out[0]["idx"].shape, out[0]["idx"].dtype) == ((5,), np.int64)
    assert (out[1].shape, out[1].dtype) == ((5, 3), np.bool_)
    s = wg.eval_shape(lambda x: x * 2.0, 1.0)
    assert s.shape == () and s.weak                # a Python number stays weak
    with pytest.raises(ValueError, match=r"\(5,3\) and \(4,2\)|shapes"):
        wg.eval_shape(lambda x, w: x @ w, np.ones((5, 3)), np.ones((4, 2)))


def test_scalar_values_are_numbers_not_0d_arrays():
    """A rule whose NumPy code hands back a 0-d array (logsumexp's full reduction) still
    gives a scalar value as a number, as every other reduction does: float for float64,
    a NumPy scalar for float32."""
    x = np.linspace(0.0, 1.0, 4)
    for f in (wnp.logsumexp, wnp.sum, lambda x: wnp.linalg.norm(x)):
        y, t = wg.jvp(f, (x,), (np.ones(4),))
        assert type(y) is float and type(t) is float, (f, type(y), type(t))
        assert abs(y - float(f(x))) < 1e-14
    y32, _ = wg.jvp(wnp.logsumexp, (x.astype(np.float32),), (np.ones(4, np.float32),))
    assert type(y32) is np.float32
    # tangents too, where a rule hands back a 0-d array or a NumPy scalar
    for f in (wnp.median, lambda x: wnp.percentile(x, 30.0),
              lambda x: wnp.einsum("i,i,i->", x, x, x)):
        y, t = wg.jvp(f, (x,), (np.ones(4),))
        assert type(t) is float, (f, type(t))


def test_integer_arguments_are_widened_under_compile_vmap_and_eval_shape_too():
    # eager calls widened an int array to float64, traced ones (compile, vmap, eval_shape
    # of a gradient) refused it as "a traced value of dtype int64"
    f = lambda x: np.sum(x ** 3)
    xs = np.arange(4)
    want = 3.0 * xs.astype(float) ** 2
    for got in (wg.grad(f)(xs), wg.compile(wg.grad(f))(xs),
                wg.vmap(wg.grad(lambda x: x ** 3))(xs), wg.compile(wg.grad(f))(xs[2:3])):
        assert got.dtype == np.float64
        assert_close(got, want[:len(got)] if len(got) == 4 else want[2:3])
    shape = wg.eval_shape(wg.grad(f), xs)
    assert (shape.shape, shape.dtype) == ((4,), np.float64)
    assert_close(wg.compile(wg.grad(lambda x: x ** 3))(np.int64(2)), 12.0)
    with pytest.raises(TypeError, match="traced value of dtype bool"):
        wg.compile(wg.grad(f))(np.array([True]))


def test_hvp_of_a_function_of_two_arguments_says_how_to_wrap_it():
    with pytest.raises(TypeError, match=r"hvp: f must take one argument.* takes 2: x, y"):
        wg.hvp(lambda x, y: x * y)
    # wrapped as the message says: H of x²y at (1, 2) is [[2y, 2x], [2x, 0]]
    hv = wg.hvp(lambda p: p[0] * p[0] * p[1])((1.0, 2.0), (1.0, 0.0))
    assert_close(hv, (4.0, 2.0))
    assert_close(wg.hvp(lambda x, k=3: x ** k)(2.0, 1.0), 12.0)     # a default is fine


def test_eval_shape_inside_a_transformation_may_close_over_its_values():
    # it asks shapes only, so no derivative is lost: it used to refuse the closure
    def f(w):
        spec = wg.eval_shape(lambda x: x * w, np.ones(2))
        assert (spec.shape, spec.dtype) == ((2,), np.float64)
        return w * 2
    assert wg.grad(f)(3.0) == 2.0
    assert_close(wg.vmap(f)(np.ones(3)), [2.0, 2.0, 2.0])


def test_an_eager_gradient_lets_each_forward_value_go_once_its_rule_has_run():
    """The sweep releases a node's value after the node's own rule: the rules that run
    later belong to earlier nodes and cannot read it.  A probe at the start of the chain,
    whose rule runs last, finds the late activation already freed."""
    import weakref
    late = {}
    seen = []
    probe = wg.primitive(lambda x: x * 1.0, name="probe_release")
    probe.defvjp(lambda g, x, ans: seen.append(late["ref"]() is None) or g)

    def f(x):
        z = wnp.tanh(probe(x) * 3.0)          # tanh's rule reads z: it goes after that
        late["ref"] = weakref.ref(z.value)
        return wnp.sum(z * z)
    x = np.linspace(0.1, 0.9, 1000)
    g = wg.grad(f)(x)
    assert seen == [True]
    assert_close(g, 6 * np.tanh(3 * x) * (1 - np.tanh(3 * x) ** 2))
    # a pullback may be called again: nothing is let go
    seen.clear()
    out, back = wg.vjp(f, x)
    back(1.0)
    assert seen == [False]
    # has_aux: the auxiliary values stay readable
    g, aux = wg.grad(lambda x: (f(x), wnp.tanh(x) * 2.0), has_aux=True)(x)
    assert_close(aux, np.tanh(x) * 2.0)
