"""Derivatives at the edges of domains: x**0 at x = 0 (0, not nan), and ±inf (NumPy's
value, with its warning) where a derivative's formula divides by zero, in every mode and
in compiled code, never Python's ZeroDivisionError."""
import warnings

import numpy as np
import pytest

import wengert as wg
import wengert.math as wm
import wengert.numpy as wnp
from fd import assert_close


@pytest.fixture(autouse=True)
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # (NumPy's, at the poles)
        yield


# --- x**0 ---------------------------------------------------------------------------------------
def polynomial(x, c=(3.0, 2.0, 1.0, -0.5)):
    return sum(ck * x ** k for k, ck in enumerate(c))


def test_a_polynomial_at_zero_against_its_closed_form():
    """p = 3 + 2x + x² - x³/2: p'(0) = 2, p''(0) = 2, p'''(0) = -3, from the x**0 term
    on (powi with n = 0), in reverse, forward and Taylor mode, on floats and arrays."""
    assert wg.grad(polynomial)(0.0) == 2.0
    assert wg.jvp(polynomial, (0.0,), (1.0,))[1] == 2.0
    assert wg.hessian(polynomial)(0.0) == 2.0
    assert_close(wg.derivatives(polynomial, order=3)(0.0), [3.0, 2.0, 2.0, -3.0])
    assert_close(wg.grad(lambda x: wnp.sum(polynomial(x)))(np.zeros(3)), [2.0] * 3)


@pytest.mark.parametrize("x", [0.0, 1.5, -2.0, np.inf])
def test_x_to_a_float_zero_power_has_derivative_zero(x):
    """pow(x, y) at y = 0 (a float exponent, an array of exponents): ∂/∂x = 0 for
    every x; where y ≠ 0 the usual y x**(y-1), against central differences."""
    assert wg.grad(lambda x: x ** 0.0)(x) == 0.0
    assert wg.grad(lambda x: x ** 0)(x) == 0.0
    assert wg.jvp(lambda x: x ** 0.0, (x,), (1.0,))[1] == 0.0
    assert wg.grad(lambda x, y: x ** y)(x, 0.0) == 0.0
    if np.isfinite(x) and x > 0:
        y = np.array([0.0, 0.5, 2.5])
        h = 1e-6
        want = ((x + h) ** y - (x - h) ** y) / (2 * h)
        assert_close(wg.jacfwd(lambda x: x ** y)(x), want, rtol=1e-6, atol=1e-8)
    ys = np.arange(3.0)
    assert wg.grad(lambda x: wnp.sum(x ** ys))(0.0) == 1.0        # 0 + 1 + 2·0


# --- poles: ±inf, not ZeroDivisionError ----------------------------------------------------------
@pytest.mark.parametrize("f, x, want", [
    (wm.asin, 1.0, np.inf), (wm.acos, -1.0, -np.inf), (wnp.arccosh, 1.0, np.inf),
    (wnp.arctanh, 1.0, np.inf), (wm.sqrt, 0.0, np.inf), (wm.log, 0.0, np.inf),
    (lambda x: 1.0 / x, 0.0, -np.inf),
])
def test_first_derivatives_at_a_pole_are_numpys_inf(f, x, want):
    """The partial on Python floats divides by zero: NumPy's value, as on arrays."""
    assert wg.grad(f)(x) == want
    assert wg.jvp(f, (x,), (1.0,))[1] == want
    assert wg.grad(f)(np.float64(x)) == want
    assert wg.grad(lambda v: wnp.sum(f(v)))(np.array([x]))[0] == want
    assert f(wg.Dual(x, 1.0)).tangent == want


def test_taylor_coefficients_at_a_pole_are_numpys():
    """sqrt(t) at 0: [0, inf, -inf]; log: [-inf, inf, -inf]; 1/x's derivatives at +0:
    [inf, -inf, inf] (f, -1/x², 2/x³)."""
    assert wg.taylor(wm.sqrt, 0.0, 1.0, 2) == [0.0, np.inf, -np.inf]
    assert wg.taylor(wm.log, 0.0, 1.0, 2) == [-np.inf, np.inf, -np.inf]
    assert wg.derivatives(lambda x: 1.0 / x, order=2)(0.0) == [np.inf, -np.inf, np.inf]
    # away from the pole the same rules give the closed forms
    x = 0.25
    assert_close(wg.taylor(wm.sqrt, x, 1.0, 2), [0.5, 1.0, -0.25 * x ** -1.5 / 2])


@pytest.mark.parametrize("arg", [0.0, np.float64(0.0), np.array(0.0)])
def test_compiled_code_falls_back_to_numpy_for_any_scalar(arg):
    """The first call of compiled float code that hits log(0) or 1/0 runs the NumPy
    version with the argument as given (a NumPy scalar or a 0-d array included)."""
    assert wg.compile(wm.log)(arg) == -np.inf
    assert wg.compile(lambda x, y: x / y)(np.float64(1.0), arg) == np.inf
    g = wg.compile(wg.grad(wm.log))
    assert g(arg) == np.inf
