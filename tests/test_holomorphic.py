"""holomorphic=True: grad, value_and_grad, jacfwd, jacrev, jacobian and hessian of a
holomorphic function give its complex derivative f'(z), as JAX's do (docs/complex.md)."""
import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp

rng = np.random.default_rng(20261125)


def points(*shape):
    re = rng.uniform(-1.2, 1.2, size=shape)
    im = rng.choice([-1.0, 1.0], size=shape) * rng.uniform(0.2, 0.7, size=shape)
    return re + 1j * im


# f and f' in closed form
CLOSED = {
    "square": (lambda z: z ** 2, lambda z: 2 * z),
    "cube": (lambda z: z * z * z, lambda z: 3 * z ** 2),
    "exp": (wnp.exp, np.exp),
    "sin": (wnp.sin, np.cos),
    "reciprocal": (lambda z: 1 / z, lambda z: -1 / z ** 2),
    "log": (wnp.log, lambda z: 1 / z),
    "sqrt": (wnp.sqrt, lambda z: 0.5 / np.sqrt(z)),
    "composite": (lambda z: wnp.tan(z) * wnp.exp(1j * z) / (1 + z ** 2),
                  lambda z: (np.exp(1j * z) / (1 + z ** 2)) * (
                      1 / np.cos(z) ** 2 + 1j * np.tan(z) - 2 * z * np.tan(z) / (1 + z ** 2))),
}


@pytest.mark.parametrize("name", sorted(CLOSED))
def test_the_derivative_of_a_holomorphic_function_is_its_complex_derivative(name):
    f, df = CLOSED[name]
    z = complex(points(1)[0])
    want = df(z)
    g = wg.grad(f, holomorphic=True)(z)
    assert type(g) is complex and g == pytest.approx(want, rel=1e-13)
    value, g = wg.value_and_grad(f, holomorphic=True)(z)
    assert value == pytest.approx(complex(f(z)), rel=1e-14) and g == pytest.approx(want,
                                                                                   rel=1e-13)
    for jac in (wg.jacfwd, wg.jacrev, wg.jacobian):
        assert jac(f, holomorphic=True)(z) == pytest.approx(want, rel=1e-13)
    # elementwise on an array: a diagonal Jacobian, by both modes
    zs = points(3)
    for jac in (wg.jacfwd, wg.jacrev):
        np.testing.assert_allclose(jac(f, holomorphic=True)(zs), np.diag(df(zs)), rtol=1e-13,
                                   atol=1e-15)


def test_second_derivatives_of_holomorphic_functions():
    z = complex(points(1)[0])
    assert wg.hessian(lambda z: z ** 3, holomorphic=True)(z) == pytest.approx(6 * z)
    assert wg.hessian(wnp.exp, holomorphic=True)(z) == pytest.approx(np.exp(z), rel=1e-13)
    dd = wg.grad(wg.grad(wnp.sin, holomorphic=True), holomorphic=True)(z)
    assert dd == pytest.approx(-np.sin(z), rel=1e-13)
    # of several variables: f = z₀² z₁ has the Hessian [[2z₁, 2z₀], [2z₀, 0]]
    zs = points(2)
    h = wg.hessian(lambda z: z[0] ** 2 * z[1], holomorphic=True)(zs)
    np.testing.assert_allclose(h, [[2 * zs[1], 2 * zs[0]], [2 * zs[0], 0]], rtol=1e-14)


def test_the_jacobian_of_the_matrix_inverse_is_minus_a_inverse_twice():
    # d(A⁻¹) = -A⁻¹ dA A⁻¹: ∂(A⁻¹)_ij / ∂A_kl = -(A⁻¹)_ik (A⁻¹)_lj
    a = points(3, 3) + 2 * np.eye(3)
    b = np.linalg.inv(a)
    want = -np.einsum("ik,lj->ijkl", b, b)
    for jac in (wg.jacfwd, wg.jacrev, wg.jacobian):
        np.testing.assert_allclose(jac(wnp.linalg.inv, holomorphic=True)(a), want,
                                   rtol=1e-12)
    # and the gradient of det is the cofactor matrix det(A) A⁻ᵀ
    g = wg.grad(wnp.linalg.det, holomorphic=True)(a)
    np.testing.assert_allclose(g, np.linalg.det(a) * b.T, rtol=1e-12)


def test_several_arguments_aux_and_dtypes():
    z, w = points(2), complex(points(1)[0])
    gz, gw = wg.grad(lambda z, w: wnp.sum(z * w) ** 2, argnums=(0, 1), holomorphic=True)(z, w)
    s = np.sum(z * w)
    np.testing.assert_allclose(gz, 2 * s * w, rtol=1e-14)
    assert gw == pytest.approx(2 * s * np.sum(z), rel=1e-14)
    g, aux = wg.grad(lambda z: (z ** 2, "aux"), has_aux=True, holomorphic=True)(w)
    assert (g, aux) == (pytest.approx(2 * w), "aux")
    # complex64 in, complex64 derivative out
    z64 = points(3).astype(np.complex64)
    g = wg.grad(lambda z: wnp.sum(z ** 2), holomorphic=True)(z64)
    assert g.dtype == np.complex64
    np.testing.assert_allclose(g, 2 * z64, rtol=1e-6)
    assert wg.jacfwd(lambda z: z ** 2, holomorphic=True)(z64).dtype == np.complex64
    # compiled and nested, the same numbers
    f = lambda z: wnp.sum(wnp.sin(z) * z)
    want = np.cos(z) * z + np.sin(z)
    np.testing.assert_allclose(wg.compile(wg.grad(f, holomorphic=True))(z), want, rtol=1e-14)
    outer = wg.grad(lambda x: wnp.real(wg.grad(lambda z: z ** 3 * x, holomorphic=True)(w)))
    assert outer(0.5) == pytest.approx((3 * w ** 2).real)


def test_holomorphic_true_needs_complex_inputs_and_outputs():
    with pytest.raises(TypeError, match=r"grad\(holomorphic=True\) needs complex arguments, "
                                        r"but argument 'z' has dtype float64"):
        wg.grad(lambda z: z ** 2, holomorphic=True)(1.0)
    with pytest.raises(TypeError, match="argument 'w' has dtype float32"):
        wg.grad(lambda z, w: z * w, argnums=(0, 1), holomorphic=True)(1j, np.float32(2.0))
    with pytest.raises(TypeError, match="argument 'z_1' has dtype float64"):
        wg.jacrev(lambda z: z[0] * z[1], holomorphic=True)([1j, 2.0])
    with pytest.raises(TypeError, match=r"needs a function with a complex result, but it "
                                        r"returned a float64 value"):
        wg.grad(wnp.abs, holomorphic=True)(1j)
    for jac in (wg.jacfwd, wg.jacrev, wg.jacobian, wg.hessian):
        with pytest.raises(TypeError, match="complex results, but it returned a float64"):
            jac(lambda z: wnp.abs(z) ** 2, holomorphic=True)(1j)
        with pytest.raises(TypeError, match="has dtype float64"):
            jac(lambda z: z * 1j, holomorphic=True)(1.0)
    with pytest.raises(NotImplementedError, match="mode='eliminate'"):
        wg.jacobian(lambda z: z, mode="eliminate", holomorphic=True)


def test_without_it_complex_results_and_jacobians_point_to_it():
    with pytest.raises(TypeError, match="returned a complex128 value.*holomorphic=True"):
        wg.grad(lambda z: z * z)(1j)
    for jac in (wg.jacfwd, wg.jacrev, wg.jacobian, wg.hessian):
        with pytest.raises(TypeError, match="complex input.*holomorphic=True"):
            jac(lambda z: z * z)(1j)
    with pytest.raises(TypeError, match="complex output.*holomorphic=True"):
        wg.jacfwd(lambda x: x * 1j)(1.0)
    with pytest.raises(TypeError, match="complex input") as e:       # (no such option)
        wg.sparse_jacobian(lambda z: z * z)(1j)
    assert "holomorphic" not in str(e.value)


# JAX's numbers, for holomorphic functions, and (what it and wengert give without checking
# that f is holomorphic) for functions that are not
JAX_FUNCTIONS = {
    "polynomial": (lambda np_: lambda z: z ** 3 - 2j * z + 1, False),
    "trigonometric": (lambda np_: lambda z: np_.sin(z) * np_.cosh(z) / (2 + z), False),
    "log_sqrt": (lambda np_: lambda z: np_.log(z) * np_.sqrt(z + 3), False),
    "conj": (lambda np_: np_.conj, True),
    "norm_squared": (lambda np_: lambda z: z * np_.conj(z), True),
    "abs": (lambda np_: lambda z: np_.abs(z) + 0j, True),
    "real": (lambda np_: lambda z: np_.real(z) * (1 + 1j), True),
}


@pytest.mark.parametrize("name", sorted(JAX_FUNCTIONS))
def test_holomorphic_derivatives_are_jaxs(name):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    make, _ = JAX_FUNCTIONS[name]
    f, jf = make(wnp), make(jax.numpy)
    z = complex(points(1)[0])
    for ours, theirs in ((wg.grad, jax.grad), (wg.jacfwd, jax.jacfwd),
                         (wg.jacrev, jax.jacrev)):
        assert ours(f, holomorphic=True)(z) == pytest.approx(
            complex(theirs(jf, holomorphic=True)(z)), rel=1e-12, abs=1e-14)
    zs = points(3)
    vector = lambda np_, f: lambda z: f(z) * np_.roll(z, 1)
    for ours, theirs in ((wg.jacfwd, jax.jacfwd), (wg.jacrev, jax.jacrev)):
        np.testing.assert_allclose(ours(vector(wnp, f), holomorphic=True)(zs),
                                   theirs(vector(jax.numpy, jf), holomorphic=True)(zs),
                                   rtol=1e-12, atol=1e-14)
    assert wg.hessian(f, holomorphic=True)(z) == pytest.approx(
        complex(jax.hessian(jf, holomorphic=True)(z)), rel=1e-12, abs=1e-14)


def test_a_function_that_is_not_holomorphic_gets_no_derivative_and_no_warning():
    # as in JAX, holomorphic=True is a promise: for conj, jacfwd pushes 1 forward (∂f/∂x)
    # and jacrev pulls 1 back, and neither is a complex derivative (there is none)
    z = 0.3 + 0.7j
    assert wg.jacfwd(lambda z: z * wnp.conj(z), holomorphic=True)(z) == pytest.approx(0.6)
    assert wg.jacrev(lambda z: z * wnp.conj(z), holomorphic=True)(z) == pytest.approx(
        0.6 - 1.4j)
