"""wengert.scipy.optimize.minimize_scalar: the minimiser of a function of one number
against its closed form and central differences, to second order, for each of SciPy's
methods; a bound that holds (the KKT conditions); the optimal value by the envelope
theorem; a change of active bound under compile and vmap."""
import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from fd import assert_close, check_grads, fd_derivative

so = pytest.importorskip("scipy.optimize")
from wengert.scipy.optimize import minimize_scalar  # noqa: E402

QUARTIC = lambda x, a: (x - a) ** 2 + x ** 4          # noqa: E731  (x* solves 2(x-a) + 4x³ = 0)
TIGHT = {"brent": {"xtol": 1e-12}, "golden": {"xtol": 1e-12}, "bounded": {"xatol": 1e-12}}


def argmin(a, method):
    bounds = (-5.0, 5.0) if method == "bounded" else None
    return minimize_scalar(QUARTIC, args=(a,), method=method, bounds=bounds,
                           options=TIGHT[method]).x


@pytest.mark.parametrize("method", ["brent", "golden", "bounded"])
def test_an_interior_minimiser_against_its_closed_form(method):
    for a in (-1.3, 0.4, 2.0):
        x = argmin(a, method)
        assert_close(2 * (x - a) + 4 * x ** 3, 0.0, atol=1e-6)   # (f is flat: ~√ε in x)
        assert_close(wg.grad(argmin)(a, method), 2 / (2 + 12 * x ** 2), rtol=1e-7)
        # (a step well above the solver's ~1e-8 in x, as the truncation error allows)
        assert_close(wg.grad(argmin)(a, method), fd_derivative(lambda a: argmin(a, method),
                                                               a, 1e-3), rtol=1e-4)


def test_second_order_by_central_differences():
    check_grads(lambda a: argmin(a, "brent"), np.array(0.7), order=2, eps=1e-3, rtol=1e-4,
                atol=1e-5)
    # d²x/da² from differentiating dx/da = 2 / (2 + 12x²) once more
    x = argmin(0.7, "brent")
    d1 = 2 / (2 + 12 * x ** 2)
    assert_close(wg.grad(wg.grad(argmin))(0.7, "brent"), -48 * x * d1 / (2 + 12 * x ** 2) ** 2,
                 rtol=1e-6)


def test_the_optimal_value_by_the_envelope_theorem():
    value = lambda a: minimize_scalar(QUARTIC, args=(a,), options={"xtol": 1e-12}).fun  # noqa
    x = argmin(0.9, "brent")
    assert_close(wg.grad(value)(0.9), -2 * (x - 0.9), rtol=1e-7)   # ∂f/∂a at x*


def clipped(a, hi):
    """min (x - a)² on [0, hi]: a clipped to the interval."""
    return minimize_scalar(lambda x, a: (x - a) ** 2, bounds=(0.0, hi), args=(a,),
                           method="bounded", options={"xatol": 1e-10}).x


def test_a_bound_that_holds_moves_the_minimiser_one_for_one():
    with np.errstate(all="ignore"):
        assert_close(clipped(2.0, 1.0), 1.0, atol=1e-9)
    # (the bounded method stops ~xatol inside the bound: the derivatives are that exact)
    da, dhi = wg.grad(clipped, argnums=(0, 1))(2.0, 1.0)
    assert_close(da, 0.0, atol=1e-7)
    assert_close(dhi, 1.0, rtol=1e-7)
    da, dhi = wg.grad(clipped, argnums=(0, 1))(0.6, 1.0)            # inside: x* = a
    assert_close(da, 1.0, rtol=1e-9)
    assert_close(dhi, 0.0, atol=1e-12)
    assert_close(da, fd_derivative(lambda a: clipped(a, 1.0), 0.6, 1e-3), rtol=1e-4)


def test_compile_and_vmap_follow_a_change_of_active_bound():
    d = wg.grad(clipped)
    compiled = wg.compile(d, 2.0, 1.0)                # traced where the bound holds
    assert_close(compiled(0.6, 1.0), 1.0, rtol=1e-9)  # where it does not
    assert_close(compiled(2.0, 1.0), 0.0, atol=1e-7)
    batched = wg.vmap(d, in_axes=(0, None))(np.array([0.3, 2.0, 0.8]), 1.0)
    assert_close(batched, [1.0, 0.0, 1.0], rtol=1e-9, atol=1e-7)


def test_plain_values_are_scipys_call():
    got = minimize_scalar(QUARTIC, args=(0.5,))
    want = so.minimize_scalar(QUARTIC, args=(0.5,))
    assert type(got) is type(want) and got.x == want.x and got.nfev == want.nfev


def test_vector_and_array_args():
    # a weighted sum of squares: x* = Σ w y / Σ w, d x*/d y = w / Σ w
    w = np.array([1.0, 2.0, 3.0])
    mean = lambda y: minimize_scalar(lambda x, y: wnp.sum(w * (x - y) ** 2),  # noqa: E731
                                     args=(y,), options={"xtol": 1e-12}).x
    y = np.array([0.5, -1.0, 2.0])
    assert_close(mean(y), w @ y / w.sum(), rtol=1e-10)
    assert_close(wg.grad(mean)(y), w / w.sum(), rtol=1e-8)


def test_bounds_that_are_no_pair_are_refused():
    with pytest.raises(ValueError, match=r"bounds must be a pair \(min, max\)"):
        wg.grad(lambda a: minimize_scalar(QUARTIC, bounds=(0.0, 1.0, 2.0), args=(a,),
                                          method="bounded").x)(0.5)
