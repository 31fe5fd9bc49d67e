"""Complex values: every primitive that takes them, checked against central differences
to second order in the convention of JAX and autograd, with closed forms; the API around
them; and the refusals where the rules are for real numbers (docs/complex.md)."""
import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
import wengert.scipy.special as wsp
from wengert import REGISTRY
from wengert.primitives import scalar as S
from fd import check_complex_grads

rng = np.random.default_rng(20261123)


def points(shape=(4,)):
    """Complex points off every branch cut and pole of the tested functions: |Im z| in
    [0.2, 0.7] (the cuts of log, sqrt, asin, acosh, atanh lie on the real axis, those of
    atan and asinh on the imaginary axis beyond ±i)."""
    re = rng.uniform(-1.4, 1.4, size=shape)
    im = rng.choice([-1.0, 1.0], size=shape) * rng.uniform(0.2, 0.7, size=shape)
    return re + 1j * im


UNARY = ["neg", "sqrt", "exp", "log", "log10", "log2", "exp2", "sin", "cos", "tan", "cotan",
         "asin", "acos", "atan", "log1p", "expm1", "sinh", "cosh", "tanh", "asinh", "acosh",
         "atanh", "abs", "real", "imag", "conj"]
BINARY = ["add", "sub", "mul", "div", "pow"]
NOT_DIFFERENTIABLE = ["eq", "ne", "round"]          # bools; round is piecewise constant
STRUCTURAL = ["select", "stop_gradient", "powi", "complex"]    # tested below


def test_every_complex_scalar_primitive_is_tested_here():
    declared = {name for name, p in REGISTRY.items() if p.complex and p.elementwise}
    assert declared == set(UNARY + BINARY + NOT_DIFFERENTIABLE + STRUCTURAL)


@pytest.mark.parametrize("name", UNARY)
def test_unary_primitives_on_complex_values(name):
    prim = REGISTRY[name]
    z = points()
    assert np.allclose(prim(z), prim.impl(z), rtol=1e-15, atol=0)     # NumPy's value
    check_complex_grads(lambda z: prim(z), z)


# On a branch cut NumPy's value is the limit from the side the sign of the zero part
# names, and along the cut the function is smooth there: the derivative is that side's
# too (1 - (2+0j) in NumPy is -1+0j, on the other side of sqrt's cut, and gave arcsin'
# the wrong sign).  (name, points on its cuts, the direction along them)
CUTS = [("asin", [2 + 0j, complex(2, -0.0), complex(-3, 0.0), complex(-3, -0.0)], 1),
        ("acos", [2 + 0j, complex(2, -0.0), complex(-3, 0.0), complex(-3, -0.0)], 1),
        ("asinh", [2j, complex(-0.0, 2), -3j, complex(-0.0, -3)], 1j),
        ("acosh", [complex(-2, 0.0), complex(-2, -0.0), complex(0.5, 0.0),
                   complex(0.5, -0.0)], 1),
        ("atanh", [2 + 0j, complex(2, -0.0), complex(-3, 0.0), complex(-3, -0.0)], 1),
        ("atan", [2j, complex(-0.0, 2), -3j, complex(-0.0, -3)], 1j),
        ("sqrt", [complex(-2, 0.0), complex(-2, -0.0)], 1),
        ("log", [complex(-2, 0.0), complex(-2, -0.0)], 1)]


@pytest.mark.parametrize("name, zs, along", CUTS, ids=[c[0] for c in CUTS])
def test_derivatives_on_branch_cuts_are_those_of_the_side_numpy_takes(name, zs, along):
    prim, h = REGISTRY[name], 1e-5
    d = wg.grad(lambda z: prim(z), holomorphic=True)
    d2 = wg.grad(d, holomorphic=True)
    for z in zs:
        def moved(t):                       # z + t·along, the zero part's sign kept
            return complex(z.real + t, z.imag) if along == 1 else complex(z.real, z.imag + t)
        fd = (prim.impl(moved(h)) - prim.impl(moved(-h))) / (2 * h * along)
        fd2 = (complex(d(moved(h))) - complex(d(moved(-h)))) / (2 * h * along)
        assert complex(d(z)) == pytest.approx(fd, rel=1e-8), (name, z)
        assert complex(d2(z)) == pytest.approx(fd2, rel=1e-6), (name, z)
    # the same from a real parameter: Im asin(x + 0j) grows with x past 1
    if name == "asin":
        assert wg.grad(lambda x: wnp.imag(wnp.arcsin(x + 0j)))(2.0) == pytest.approx(3 ** -0.5)


def test_asin_and_acos_derivatives_keep_their_digits_next_to_one():
    # 1 - x² rounds x² next to ±1 (6 digits left at 1 - 1e-10); (1 - x)(1 + x) does not
    import mpmath
    for x in (1 - 1e-10, -1 + 1e-12, 0.999999, 0.3):
        with mpmath.workdps(40):
            exact = float(1 / mpmath.sqrt(1 - mpmath.mpf(x) ** 2))
        assert wg.grad(S.asin)(x) == pytest.approx(exact, rel=1e-15)
        assert wg.grad(S.acos)(x) == pytest.approx(-exact, rel=1e-15)
    with np.errstate(divide="ignore"):
        assert wg.grad(S.asin)(1.0) == np.inf and wg.grad(S.asin)(-1.0) == np.inf


@pytest.mark.parametrize("name", BINARY)
def test_binary_primitives_on_complex_and_mixed_values(name):
    prim = REGISTRY[name]
    z, w = points(), points()
    check_complex_grads(lambda a, b: prim(a, b), z, w)
    check_complex_grads(lambda a, b: prim(a, b), z, rng.uniform(0.5, 1.5, 4))   # real b
    check_complex_grads(lambda a, b: prim(a, b), rng.uniform(0.5, 1.5, 4), w)   # real a


def test_a_negative_real_base_with_a_complex_exponent_is_differentiated_as_numpy_takes_it():
    # NumPy's (-2.0)**w is (-2 + 0i)**w: d/dw is log(-2 + 0i)·x**w, not log(-2)·x**w = nan
    w = points()
    for x in (-2.0, np.array([-2.0, 3.0, -0.5, 1.5])):
        check_complex_grads(lambda w: x ** w, w)
        check_complex_grads(lambda x, w: x ** w, x, w)
        d = wg.grad(lambda w: wnp.sum(wnp.real(wnp.power(x, w))))(w)
        np.testing.assert_allclose(d, np.log(x + 0j) * np.power(x + 0j, w), rtol=1e-14)


def test_powi_select_and_stop_gradient_on_complex_values():
    z, w = points(), points()
    check_complex_grads(lambda a: S.powi(a, n=3), z)
    check_complex_grads(lambda a: S.powi(a, n=-2), z)
    mask = np.array([True, False, True, False])
    check_complex_grads(lambda a, b: S.select(mask, a, b), z, w)
    _, back = wg.vjp(lambda a: a * S.stop_gradient(a), z)
    np.testing.assert_allclose(back(np.ones(4) + 0j)[0], z)


def test_complex_builds_a_value_from_its_parts_exactly():
    x, y = rng.normal(size=4), rng.normal(size=4)
    check_complex_grads(lambda x, y: S.make_complex(x, y), x, y)
    # re + 1j·im would make the real part nan where im is infinite (1j·inf is nan + inf·i)
    parts = np.array([1.0, -np.inf, np.nan, 2.0]), np.array([np.inf, 1.0, 3.0, np.nan])
    for f in (lambda x, y: S.make_complex(x, y), wg.compile(lambda x, y: S.make_complex(x, y))):
        z = f(*parts)
        np.testing.assert_array_equal(z.real, parts[0])
        np.testing.assert_array_equal(z.imag, parts[1])
    assert S.make_complex(1.0, float("inf")) == complex(1.0, float("inf"))
    assert wg.trace(lambda x: S.make_complex(x, 2.0), np.float32(1.0)).outputs[0].dtype == \
        np.complex64
    # the gradient (∂/∂x - i∂/∂y) of |x + iy|² in x and y: 2x and 2y
    gx, gy = wg.grad(lambda x, y: wnp.abs(S.make_complex(x, y)) ** 2, argnums=(0, 1))(3.0, 4.0)
    assert (gx, gy) == (pytest.approx(6.0), pytest.approx(8.0))


# ---- closed forms ------------------------------------------------------------------------
def test_grad_follows_jax_and_autograd():
    # grad of a real function of z = x + iy is ∂f/∂x - i ∂f/∂y
    z = 3 + 4j
    assert wg.grad(lambda z: wnp.abs(z) ** 2)(z) == pytest.approx(6 - 8j)       # 2 z̄
    assert wg.grad(lambda z: wnp.abs(z))(z) == pytest.approx((3 - 4j) / 5)
    # for a holomorphic f, grad Re f = f'(z) and grad Im f = -i f'(z)
    for f, df in ((wnp.sin, wnp.cos), (wnp.exp, wnp.exp), (lambda z: z ** 3,
                                                            lambda z: 3 * z ** 2)):
        z = complex(points((1,))[0])
        assert wg.grad(lambda z: wnp.real(f(z)))(z) == pytest.approx(df(z), rel=1e-14)
        assert wg.grad(lambda z: wnp.imag(f(z)))(z) == pytest.approx(-1j * df(z), rel=1e-14)
    # a vjp of a holomorphic function multiplies by f'(z); conj's conjugates
    z = complex(points((1,))[0])
    assert wg.vjp(wnp.sin, z)[1](1 + 2j)[0] == pytest.approx((1 + 2j) * np.cos(z))
    assert wg.vjp(wnp.conj, z)[1](1 + 2j)[0] == pytest.approx(1 - 2j)
    assert wg.jvp(wnp.abs, (3 + 4j,), (1j,))[1] == pytest.approx(0.8)    # Re(z̄ t)/|z|


def test_real_arguments_get_real_derivatives():
    # d/dx Re e^{ix} = -sin x: the complex intermediate values leave a real gradient
    x = 0.3
    g = wg.grad(lambda x: wnp.real(wnp.exp(1j * x)))(x)
    assert type(g) is float and g == pytest.approx(-np.sin(x), rel=1e-15)
    xs = rng.normal(size=5)
    A = rng.normal(size=(3, 5)) + 1j * rng.normal(size=(3, 5))
    g = wg.grad(lambda x: wnp.sum(wnp.abs(A @ x) ** 2))(xs)
    H = 2 * (A.conj().T @ A).real                 # |Ax|² = xᵀ Re(AᴴA) x
    assert g.dtype == np.float64 and np.allclose(g, H @ xs, rtol=1e-13)
    t = wg.jvp(lambda x: A @ x, (xs,), (np.ones(5),))[1]
    assert np.allclose(t, A.sum(axis=1))


def test_complex_arguments_get_complex_derivatives_in_their_dtype():
    z = points()
    g = wg.grad(lambda z: wnp.sum(wnp.real(z)))(z)       # d Re z: 1, as a complex array
    assert g.dtype == np.complex128 and np.array_equal(g, np.ones(4))
    assert type(wg.grad(lambda z: wnp.real(z))(1 + 2j)) is complex
    z64 = z.astype(np.complex64)
    g = wg.grad(lambda z: wnp.sum(wnp.abs(z) ** 2))(z64)
    assert g.dtype == np.complex64 and np.allclose(g, 2 * z64.conj(), rtol=1e-6)


def test_second_order_through_complex_intermediates():
    # inner: grad_z |x z|² = 2 x² z̄, whose real part at z = 1 + 2i is 2x², d/dx = 4x
    outer = wg.grad(lambda x: wnp.real(wg.grad(lambda z: wnp.abs(z * x) ** 2)(1 + 2j)))
    assert outer(0.7) == pytest.approx(2.8, rel=1e-14)
    # forward over reverse on a complex function of a real argument
    f = lambda x: wnp.real(wnp.exp(1j * x) * x)           # x cos x
    d2 = wg.jvp(wg.grad(f), (0.4,), (1.0,))[1]
    assert d2 == pytest.approx(-2 * np.sin(0.4) - 0.4 * np.cos(0.4), rel=1e-13)


# ---- arrays ------------------------------------------------------------------------------
ARRAY_FUNCTIONS = {
    "matmul": lambda a, b: a @ b,
    "einsum": lambda a, b: wnp.einsum("ij,jk->ik", a, b),
    "sum_axis": lambda a, b: wnp.sum(a * b, axis=0),
    "prod": lambda a, b: wnp.prod(a + b, axis=1),
    "cumsum": lambda a, b: wnp.cumsum(a * b, axis=1),
    "cumprod": lambda a, b: wnp.cumprod(a - b, axis=0),
    "index": lambda a, b: a[1:, ::2] * b[0, [2, 0]],
    "concatenate": lambda a, b: wnp.concatenate([a, b.T[:3]], axis=0),
    "reshape_transpose": lambda a, b: wnp.reshape(a.T, (-1,)) * wnp.ravel(b),
    "pad_roll_flip": lambda a, b: wnp.roll(wnp.flip(wnp.pad(a, 1), axis=0), 2) ,
    "broadcast": lambda a, b: a[:, :1] * b[0] + a.sum(),
    "astype": lambda a, b: wnp.astype(wnp.real(a), np.complex128) * b,
    "mean_tril": lambda a, b: wnp.mean(wnp.tril(a @ b), axis=1),
    # JAX's index updates, on a complex x (set was refused as a rule for real numbers)
    "at_set": lambda a, b: wnp.at(a)[1].set(b[0] * b[2]),
    "at_add_repeats": lambda a, b: wnp.at(a)[np.array([0, 2, 0])].add(b),
    "at_multiply_repeats": lambda a, b: wnp.at(a)[np.array([0, 2, 0])].multiply(b),
    "at_divide_power_apply": lambda a, b: wnp.at(wnp.at(wnp.at(a)[1:].divide(b[0]))[0]
                                                 .power(b[1]))[2].apply(wnp.sin),
}


@pytest.mark.parametrize("name", sorted(ARRAY_FUNCTIONS))
def test_array_functions_on_complex_values(name):
    f = ARRAY_FUNCTIONS[name]
    a, b = points((3, 3)), points((3, 3))
    np.testing.assert_allclose(f(a, b), f(wnp.asarray(a), wnp.asarray(b)), rtol=1e-14)
    check_complex_grads(f, a, b)
    check_complex_grads(f, a, rng.normal(size=(3, 3)))          # a real b


def test_numpy_functions_for_complex_values():
    z = points((2, 3))
    plain = {"real": np.real, "imag": np.imag, "conj": np.conj, "angle": np.angle,
             "sign": np.sign, "abs": np.abs, "absolute": np.absolute}
    for name, f in plain.items():
        g = getattr(wnp, name)
        out = wg.trace(lambda z: g(z), z)(z)
        if name == "sign":          # written out part by part: NumPy's may differ by an ulp
            np.testing.assert_allclose(out, f(z), rtol=3e-16, atol=0)
        else:
            np.testing.assert_array_equal(out, f(z), err_msg=name)
        check_complex_grads(g, z)
    check_complex_grads(lambda z: wnp.angle(z, deg=True), z)
    traced = wg.trace(lambda z: (z.real, z.imag, z.conj(), z.conjugate()), z)(z)
    for got, want in zip(traced, (z.real, z.imag, z.conj(), z.conj())):
        np.testing.assert_array_equal(got, want)
    # numpy's own functions dispatch to wengert's
    check_complex_grads(lambda z: np.real(np.exp(z)) * np.abs(z), z)


def test_sign_and_angle_of_zero_and_of_reals():
    z = np.array([0j, 3 + 4j, -2 + 0j])
    np.testing.assert_array_equal(wg.trace(wnp.sign, z)(z), np.sign(z))
    # z/|z| is differentiated (JAX's sign has derivative 0); at 0, where it jumps, 0
    g = wg.grad(lambda z: wnp.sum(wnp.real(wnp.sign(z)) + wnp.imag(wnp.sign(z))))(z)
    # at 3 + 4i: ∂/∂x - i ∂/∂y of (x + y)/r is (y² - xy)/r³ - i (x² - xy)/r³
    assert g[0] == 0 and g[1] == pytest.approx((16 - 12) / 125 - 1j * (9 - 12) / 125)
    x = np.array([-1.5, 2.0])
    np.testing.assert_array_equal(wg.trace(wnp.angle, x)(x), np.angle(x))
    assert np.array_equal(wg.grad(lambda x: wnp.sum(wnp.angle(x)))(x), [0.0, 0.0])


def test_nan_to_num_and_real_if_close_on_complex_values():
    z = np.array([complex(np.nan, 1.0), complex(2.0, np.inf), 1 + 1j])
    np.testing.assert_array_equal(wg.trace(wnp.nan_to_num, z, abstract=False)(z),
                                  np.nan_to_num(z))
    # d(2 Re + Im) is 2 - i where a part is kept, and 0 in a replaced part
    g = wg.grad(lambda z: wnp.sum(2 * wnp.real(wnp.nan_to_num(z)) +
                                  wnp.imag(wnp.nan_to_num(z))))(z)
    np.testing.assert_array_equal(g, [-1j, 2, 2 - 1j])
    almost = np.array([1 + 1e-18j, 2 + 0j])
    out = wg.grad(lambda z: wnp.sum(wnp.real_if_close(z) ** 2))(almost)
    np.testing.assert_allclose(out, [2, 4])


# ---- compiled code -----------------------------------------------------------------------
def test_compiled_gradients_of_complex_functions_equal_eager_ones():
    A = points((3, 3))
    f = lambda z: wnp.sum(wnp.abs(A @ z) ** 2) + wnp.real(wnp.prod(wnp.sin(z)))
    z = points((3,))
    eager = wg.grad(f)(z)
    compiled = wg.compile(wg.grad(f), z)
    np.testing.assert_allclose(compiled(z), eager, rtol=1e-14)
    assert compiled(z).dtype == np.complex128
    with pytest.raises(ValueError, match="complex128"):
        wg.compile(f, z, backend="c")


# ---- refusals ----------------------------------------------------------------------------
def test_rules_for_real_numbers_refuse_complex_values():
    z = points((3,))
    # NumPy orders complex numbers lexicographically; wengert's rules are for real ones
    for f, name in ((lambda z: wnp.maximum(z, 0.5), "maximum"),
                    (lambda z: wnp.sort(z), "argsort"),
                    (lambda z: wnp.max(z), "amax"),
                    (lambda z: wg.nn.relu(z), "relu"),
                    (lambda z: wsp.erf(z), "erf")):
        with pytest.raises(TypeError, match=f"{name} of complex values"):
            wg.grad(lambda z: wnp.sum(wnp.abs(f(z))))(z)
        with pytest.raises(TypeError, match=f"{name} of complex values"):
            wg.compile(lambda z: f(z))(z)                   # abstractly, too
    # where NumPy has no complex loop, its TypeError (eagerly) or wengert's (abstractly)
    for f in (lambda z: wnp.arctan2(z, 1.0), lambda z: wnp.hypot(z, z)):
        with pytest.raises(TypeError, match="arctan2|hypot"):
            wg.grad(lambda z: wnp.sum(wnp.abs(f(z))))(z)
        with pytest.raises(TypeError, match="atan2 of complex|hypot of complex"):
            wg.compile(lambda z: f(z))(z)
    # stats: every method refuses, naming itself (norm's and t's compositions returned a
    # complex "log-density"; gamma's refused, naming a comparison inside)
    from wengert.scipy import stats
    for f, name in ((lambda z: stats.norm.logpdf(z), "norm.logpdf"),
                    (lambda z: stats.t.logpdf(1.0, 3.0, loc=z), "t.logpdf"),
                    (lambda z: stats.gamma.logpdf(z, 2.0), "gamma.logpdf"),
                    (lambda z: stats.multivariate_normal.logpdf(z, np.zeros(3)),
                     "multivariate_normal.logpdf")):
        for run in (lambda: wg.grad(lambda z: wnp.sum(wnp.abs(f(z))))(z), lambda: wg.compile(f)(z)):
            with pytest.raises(TypeError, match=f"scipy.stats.{name} of a complex value"):
                run()


def test_what_needs_a_real_result_or_a_real_jacobian_says_so():
    with pytest.raises(TypeError, match="returned a complex128 value"):
        wg.grad(lambda z: z * z)(1j)
    for jac in (wg.jacfwd, wg.jacrev, wg.jacobian, wg.hessian):
        with pytest.raises(TypeError, match="complex input"):
            jac(lambda z: wnp.abs(z) ** 2)(1 + 1j)
    with pytest.raises(TypeError, match="complex output"):
        wg.jacrev(lambda x: x * 1j)(1.0)


def test_traced_graphs_print_and_run_complex_values():
    g = wg.trace(lambda z: wnp.sin(z) * z, 1 + 2j)
    assert "c128[]" in str(g)
    assert g(0.5 - 1j) == pytest.approx(np.sin(0.5 - 1j) * (0.5 - 1j), rel=1e-15)


def test_what_is_written_for_real_numbers_refuses_complex_values():
    f = wg.compile(lambda z: z * z, 1 + 1j)
    for language in ("fortran", "adds"):
        with pytest.raises(ValueError, match="complex128, and this text is written for real"):
            f.code(language)
    with pytest.raises(ValueError, match="C is written for graphs of float64"):
        f.code("c")
    with pytest.raises(TypeError, match="wg.Dual is for real numbers, and mul gave"):
        wg.Dual(1.0, 1.0) * 1j
    with pytest.raises(TypeError, match="Taylor mode is for real numbers"):
        wg.derivatives(lambda x: wnp.real(wnp.exp(1j * x)), order=2)(0.5)


def test_a_complex_cotangent_of_a_real_output_counts_by_its_real_part():
    z = points((3,))
    _, back = wg.vjp(lambda z: wnp.abs(z), z)
    np.testing.assert_allclose(back(np.full(3, 2 + 5j))[0], back(np.full(3, 2.0))[0])
    # also where no value in the graph is complex (the imaginary part went through to a
    # real argument's "gradient", [2j, 2])
    x, ct = rng.normal(size=2), np.array([1j, 1.0 + 0j])
    for f in (lambda x: 2.0 * x, lambda x: wnp.real((2.0 + 0j) * x)):
        g = wg.vjp(f, x)[1](ct)[0]
        assert g.dtype == np.float64 and np.array_equal(g, [0.0, 2.0])
    assert wg.vjp(lambda x: 2.0 * x, 1.5)[1](1j) == (0.0,)


def test_a_users_complex_rule_for_a_real_value_counts_by_its_real_part():
    # a rule giving a real argument a complex cotangent, or a real result a complex tangent:
    # the real part, as the built-in rules' (it passed through where nothing was complex)
    @wg.custom_vjp
    def f(x):
        return x ** 2
    f.defvjp(lambda x: (x ** 2, x), lambda x, g: (g * 2 * x * (1 + 0.5j),))

    @wg.primitive
    def p(x):
        return x ** 2
    p.defvjp(lambda g, x, ans: (g * 2 * x * (1 + 0.5j),))
    p.defjvp(lambda ts, x, ans: ts[0] * 2 * x * (1 - 3j))
    x = rng.normal(size=3)
    for fn in (f, p):
        g = wg.grad(lambda x: wnp.sum(fn(x)))(x)
        assert g.dtype == np.float64 and np.allclose(g, 2 * x, rtol=1e-15)
    t = wg.jvp(p, (x,), (np.ones(3),))[1]
    assert t.dtype == np.float64 and np.allclose(t, 2 * x, rtol=1e-15)


def test_custom_jvp_and_custom_vjp_take_complex_values_in_jaxs_convention():
    # (they refused every complex value, pointing at an option they do not have)
    @wg.custom_jvp
    def cexp(z):
        return wnp.exp(z)

    @cexp.defjvp
    def _(primals, tangents):
        e = wnp.exp(primals[0])
        return e, e * tangents[0]

    @wg.custom_vjp
    def csin(z):
        return wnp.sin(z)
    csin.defvjp(lambda z: (wnp.sin(z), z), lambda z, g: (g * wnp.cos(z),))
    z = points((3,))
    # |e^z|² = e^{2x}: the gradient ∂/∂x - i ∂/∂y is 2e^{2x}
    g = wg.grad(lambda z: wnp.sum(wnp.abs(cexp(z)) ** 2))(z)
    assert g.dtype == np.complex128 and np.allclose(g, 2 * np.exp(2 * z.real), rtol=1e-13)
    loss = lambda sin: lambda z: wnp.sum(wnp.abs(sin(z) * z) ** 2)     # noqa: E731
    np.testing.assert_allclose(wg.grad(loss(csin))(z), wg.grad(loss(wnp.sin))(z), rtol=1e-14)
    assert wg.grad(csin, holomorphic=True)(0.5 + 1j) == pytest.approx(np.cos(0.5 + 1j))
    # a real argument with a complex result (d/dx Re(e^{ix})² = -sin 2x)
    @wg.custom_vjp
    def phase(x):
        return wnp.exp(1j * x)
    phase.defvjp(lambda x: (wnp.exp(1j * x), x),
                 lambda x, g: (wnp.real(g * 1j * wnp.exp(1j * x)),))
    assert wg.grad(lambda x: wnp.real(phase(x)) ** 2)(0.3) == pytest.approx(-np.sin(0.6))


def test_arccosh_left_of_the_imaginary_axis_is_differentiated_as_its_value_moves():
    # (JAX's and autograd's derivative has the opposite sign there)
    for z in (-1.2 + 0.7j, -0.3 - 2.0j, -4.0 + 0.1j):
        h = 1e-6
        fd = (np.arccosh(z + h) - np.arccosh(z - h)) / (2 * h)
        assert wg.grad(wnp.arccosh, holomorphic=True)(z) == pytest.approx(fd, rel=1e-8)


def test_fabs_refuses_complex_values_with_numpys_type_error():
    with pytest.raises(TypeError, match="ufunc 'fabs' not supported"):
        wg.grad(lambda z: wnp.sum(wnp.fabs(z)))(points((2,)))


def test_a_python_complex_result_is_a_number_like_a_float():
    # a constant complex output, as the pullback of a linear function gives inside jvp
    assert wg.jvp(lambda x: 2.0 + 1j, (1.0,), (1.0,)) == (2 + 1j, 0j)
    assert wg.jvp(lambda z: wg.vjp(lambda z: 3 * z, z)[1](1j)[0], (1j,), (1j,)) == (3j, 0j)
    # a complex128 argument's zero gradient is a Python complex too
    g = wg.grad(lambda z: 1.0)(1j)
    assert type(g) is complex and g == 0
    with pytest.raises(TypeError, match="returned a complex128 value"):
        wg.grad(lambda x: 2.0 + 1j)(1.0)


def test_a_primitive_of_ones_own_takes_complex_values_when_it_says_so():
    @wg.primitive(complex=True)
    def cube(z):
        return z ** 3
    cube.defpartials(lambda z, ans: 3 * z ** 2)
    z = points((3,))
    check_complex_grads(lambda z: cube(z), z)

    @wg.primitive
    def square(z):
        return z * z
    square.defpartials(lambda z, ans: 2 * z)
    with pytest.raises(TypeError, match=r"square of complex .* wg.primitive\(complex=True\)"):
        wg.grad(lambda z: wnp.real(square(z)))(1 + 1j)
    assert wg.grad(lambda x: square(x))(3.0) == 6.0          # real values as before


def _mixed(x, z):
    """A real and a complex result from a real and a complex argument."""
    return x * wnp.sum(wnp.abs(z) ** 2), wnp.exp(z * x)


@pytest.mark.parametrize("f", [
    lambda z: wnp.sin(z) * z,
    lambda x, z: _mixed(x, z),
    lambda x, z: wnp.real(_mixed(x, z)[1] * wnp.conj(z)) + _mixed(x, z)[0],
], ids=["holomorphic", "mixed-results", "real-loss"])
def test_checkpoint_of_complex_values(f):
    """wg.checkpoint with complex arguments and results: the derivatives of the function
    without it, to second order, and a real result stays real."""
    rng = np.random.default_rng(12)
    z = rng.normal(size=3) + 1j * rng.normal(size=3)
    args = (z,) if f.__code__.co_argcount == 1 else (0.7, z)
    check_complex_grads(wg.checkpoint(f), *args)
    plain, ck = wg.vjp(f, *args), wg.vjp(wg.checkpoint(f), *args)
    from wengert.tree import flatten
    outs = flatten(plain[0])[0]
    for a, b in zip(outs, flatten(ck[0])[0]):
        assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_allclose(a, b, rtol=1e-14)
