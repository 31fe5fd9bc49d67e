"""wengert.scipy.optimize.nnls and lsq_linear: derivatives of bounded linear least
squares in A, b and the bounds, against the closed form on the free columns, central
differences and second order; compile and vmap across a change of active set; SciPy's
results on plain values; shape errors."""
import numpy as np
import pytest

import wengert as wg
from fd import assert_close, check_grads, fd_jacobian

so = pytest.importorskip("scipy.optimize")
from wengert.scipy.optimize import lsq_linear, nnls  # noqa: E402

RNG = np.random.default_rng(8)
A = RNG.normal(size=(8, 4))
B = A @ np.array([1.0, -0.5, 0.3, -0.2]) + 0.05 * RNG.normal(size=8)   # two go to zero


def free_and_held(x, tol=1e-12):
    return np.flatnonzero(x > tol), np.flatnonzero(x <= tol)


def test_nnls_in_b_is_the_pseudo_inverse_of_the_free_columns():
    x, rnorm = nnls(A, B)
    free, held = free_and_held(x)
    assert held.size and free.size                          # both kinds present
    J = wg.jacfwd(lambda b: nnls(A, b)[0])(B)
    assert_close(J[free], np.linalg.pinv(A[:, free]), rtol=1e-10, atol=1e-12)
    assert_close(J[held], 0.0, atol=1e-14)
    assert_close(J, fd_jacobian(lambda b: nnls(A, b)[0], B, 1e-6), rtol=1e-6, atol=1e-9)
    g = wg.grad(lambda b: nnls(A, b)[1])(B)                 # d‖r‖/db = r / ‖r‖
    assert_close(g, (B - A @ x) / rnorm, rtol=1e-9)


def test_nnls_in_a_to_second_order():
    J = wg.jacfwd(lambda a: nnls(a, B)[0])(A)
    assert_close(J, fd_jacobian(lambda a: nnls(a, B)[0], A, 1e-6).reshape(J.shape),
                 rtol=1e-6, atol=1e-9)
    check_grads(lambda a, b: nnls(a, b)[0], A, B, order=2, rtol=1e-5, atol=1e-7)


def test_lsq_linear_with_bounds_on_both_sides_and_traced():
    lb, ub = np.array([-1.0, -0.2, 0.0, -np.inf]), np.array([0.8, 1.0, 1.0, np.inf])
    fit = lambda a, b, lb, ub: lsq_linear(a, b, bounds=(lb, ub), tol=1e-14).x  # noqa: E731
    x = fit(A, B, lb, ub)
    assert_close(x, so.lsq_linear(A, B, bounds=(lb, ub), tol=1e-14).x, rtol=1e-10)
    assert np.isclose(x[0], 0.8) and np.isclose(x[1], -0.2)   # two bounds hold
    for k, arg in enumerate((A, B, lb[:3], ub[:3])):
        def f(v, k=k):
            full = [A, B, lb, ub]
            if k >= 2:                                          # (the finite ones)
                v = np.concatenate([v, [full[k][3]]]) if type(v) is np.ndarray else \
                    wg.numpy.concatenate([v, [full[k][3]]])
            full[k] = v
            return fit(*full)
        J = wg.jacfwd(f)(arg)
        assert_close(J, fd_jacobian(f, arg, 1e-6).reshape(J.shape), rtol=1e-6, atol=1e-9)
    # an upper bound that holds moves its element one for one
    assert_close(wg.jacfwd(lambda u: fit(A, B, lb, np.append(u, np.inf)))(ub[:3])[0],
                 [1.0, 0.0, 0.0], atol=1e-10)


def test_lsq_linear_fields_and_no_bounds():
    fit = lambda b: lsq_linear(A, b, tol=1e-14)            # noqa: E731  (normal equations)
    assert_close(wg.jacfwd(lambda b: fit(b).x)(B), np.linalg.pinv(A), rtol=1e-9)
    got = wg.grad(lambda b: fit(b).cost)(B)                # d ½‖Ax - b‖²/db = -(Ax - b)
    assert_close(got, -(A @ fit(B).x - B), rtol=1e-9)
    assert_close(fit(B).fun, A @ fit(B).x - B, rtol=1e-12)


def test_compile_and_vmap_across_active_sets():
    jac = lambda b: wg.jacfwd(lambda b: nnls(A, b)[0])(b)   # noqa: E731
    compiled = wg.compile(jac, B)
    other = A @ np.array([0.5, 0.4, 0.3, 0.2])                # all free
    assert_close(compiled(other), np.linalg.pinv(A), rtol=1e-9)
    assert_close(compiled(B), jac(B), rtol=1e-9, atol=1e-12)
    batched = wg.vmap(jac)(np.stack([B, other]))
    assert_close(batched[1], np.linalg.pinv(A), rtol=1e-9)
    assert_close(batched[0], jac(B), rtol=1e-9, atol=1e-12)


def test_plain_values_are_scipys_and_shapes_are_checked():
    x, r = nnls(A, B)
    want = so.nnls(A, B)
    assert_close(x, want[0], rtol=0, atol=0) and r == want[1]
    assert type(lsq_linear(A, B)) is type(so.lsq_linear(A, B))
    with pytest.raises(ValueError, match=r"A of shape \(8, 4\) and b of shape \(7,\) do not "
                                         r"fit"):
        wg.jacfwd(lambda b: nnls(A, b)[0])(B[:7])
    with pytest.raises(ValueError, match=r"ub has 3 items for x of shape \(4,\)"):
        wg.jacfwd(lambda b: lsq_linear(A, b, bounds=(0.0, [1.0, 1.0, 1.0])).x)(B)
