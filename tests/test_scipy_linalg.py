"""wengert.scipy.linalg: SciPy's linear algebra, differentiable.

Every function: values equal SciPy's on plain and traced arguments (bit for bit where the
primitive is SciPy's own function); JVP and VJP against central finite differences, to
second order; closed forms; vmap against a loop; compile against eager; Taylor
coefficients against nested JVPs; and the errors."""
import sys
import warnings

import numpy as np
import pytest
import scipy.linalg as sl

import wengert as wg
import wengert.numpy as wnp
from wengert import REGISTRY
from wengert.primitives import scipy_linalg as P
from wengert.scipy import linalg
from test_numpy import _ops_exercised
from fd import assert_close, check_grads

rng = np.random.default_rng(20260501)


def r(*shape):
    return rng.normal(size=shape)


def well(n, *batch):
    """A well-conditioned square matrix (or a stack of them)."""
    return r(*batch, n, n) + 2 * n * np.eye(n)


def T(x):
    return wnp.swapaxes(x, -1, -2)


def band(l, u, n, *batch):
    """SciPy's storage of a well-conditioned banded matrix (l diagonals below, u above)."""
    ab = r(*batch, l + u + 1, n)
    ab[..., u, :] += 2 * (l + u + 1)
    return ab


def hband(u, n, *batch, lower=False):
    """SciPy's storage of a symmetric positive-definite banded matrix by one triangle."""
    ab = r(*batch, u + 1, n)
    ab[..., 0 if lower else u, :] = 3 * (u + 1) + np.abs(ab[..., 0 if lower else u, :])
    return ab


def spd(a):
    """A symmetric positive-definite matrix made from any square a (symmetric directions
    too: cholesky's and eigh's derivatives are the symmetric ones)."""
    return a @ T(a) + a.shape[-1] * np.eye(a.shape[-1])


def stable(a):
    """A matrix whose eigenvalues have negative real parts, from a (Lyapunov)."""
    return a - 4 * a.shape[-1] * np.eye(a.shape[-1])


# name -> (call, arguments): call(la, *args) calls `la` = wengert.scipy.linalg (SciPy's own
# on plain values) or scipy.linalg the same way, with wengert.numpy for the rest (which is
# NumPy on plain values)
CASES = {
    "solve_triangular lower": (lambda la, a, b: la.solve_triangular(a, b, lower=True),
                               [well(3), r(3, 2)]),
    "solve_triangular upper trans vector": (
        lambda la, a, b: la.solve_triangular(a, b, trans=1), [well(4), r(4)]),
    "solve_triangular unit trans T": (
        lambda la, a, b: la.solve_triangular(a, b, trans="T", lower=True, unit_diagonal=True),
        [r(3, 3), r(3, 2)]),
    "solve_triangular trans C": (lambda la, a, b: la.solve_triangular(a, b, trans=2),
                                 [well(3), r(3, 1)]),
    "solve_triangular batched a": (lambda la, a, b: la.solve_triangular(a, b, lower=True),
                                   [well(3, 2), r(3, 2)]),
    "solve_triangular batched b": (lambda la, a, b: la.solve_triangular(a, b),
                                   [well(3), r(2, 3, 2)]),
    "solve_triangular batched vector": (lambda la, a, b: la.solve_triangular(a, b),
                                        [well(3, 2), r(3)]),
    # (l = u = 1 is SciPy's tridiagonal solver, the others its general band solver)
    "solve_banded tridiagonal": (lambda la, ab, b: la.solve_banded((1, 1), ab, b),
                                 [band(1, 1, 5), r(5)]),
    "solve_banded 2 below, 1 above, columns": (
        lambda la, ab, b: la.solve_banded((2, 1), ab, b), [band(2, 1, 5), r(5, 2)]),
    "solve_banded upper": (lambda la, ab, b: la.solve_banded((0, 2), ab, b),
                           [band(0, 2, 4), r(4)]),
    "solve_banded diagonal": (lambda la, ab, b: la.solve_banded([0, 0], ab, b),
                              [band(0, 0, 3), r(3, 2)]),
    "solve_banded 1x1": (lambda la, ab, b: la.solve_banded((1, 1), ab, b),
                         [band(1, 1, 1), r(1)]),
    "solve_banded batched ab": (lambda la, ab, b: la.solve_banded((1, 2), ab, b),
                                [band(1, 2, 4, 2), r(4)]),
    "solve_banded batched b": (lambda la, ab, b: la.solve_banded((1, 1), ab, b),
                               [band(1, 1, 4, 2), r(3, 1, 4, 2)]),
    "solveh_banded upper": (lambda la, ab, b: la.solveh_banded(ab, b), [hband(1, 5), r(5)]),
    "solveh_banded lower, columns": (
        lambda la, ab, b: la.solveh_banded(ab, b, lower=True), [hband(2, 5, lower=True),
                                                                r(5, 2)]),
    "solveh_banded wider than the matrix": (lambda la, ab, b: la.solveh_banded(ab, b),
                                            [hband(3, 2), r(2)]),
    "solveh_banded batched": (lambda la, ab, b: la.solveh_banded(ab, b, lower=True),
                              [hband(1, 4, 2, lower=True), r(4)]),
    "cholesky": (lambda la, a: la.cholesky(spd(a)), [r(3, 3)]),
    "cholesky lower": (lambda la, a: la.cholesky(spd(a), lower=True), [r(4, 4)]),
    "cholesky batched": (lambda la, a: la.cholesky(spd(a)), [r(2, 3, 3)]),
    "cho_factor triangle": (lambda la, a: wnp.triu(la.cho_factor(spd(a))[0]), [r(3, 3)]),
    "cho_factor lower triangle": (
        lambda la, a: wnp.tril(la.cho_factor(spd(a), lower=True)[0]), [r(3, 3)]),
    "cho_solve": (lambda la, a, b: la.cho_solve(la.cho_factor(spd(a)), b),
                  [r(3, 3), r(3, 2)]),
    "cho_solve lower vector": (
        lambda la, a, b: la.cho_solve(la.cho_factor(spd(a), lower=True), b), [r(3, 3), r(3)]),
    "cho_solve batched": (lambda la, a, b: la.cho_solve(la.cho_factor(spd(a)), b),
                          [r(2, 3, 3), r(3, 2)]),
    "expm": (lambda la, a: la.expm(a), [0.5 * r(3, 3)]),
    "expm 1x1": (lambda la, a: la.expm(a), [r(1, 1)]),
    "expm batched": (lambda la, a: la.expm(a), [0.5 * r(2, 3, 3)]),
    "frechet derivative of expm": (lambda la, a, e: la.expm_frechet(a, e)[1],
                                   [0.5 * r(3, 3), r(3, 3)]),
    "solve_sylvester": (lambda la, a, b, q: la.solve_sylvester(a, b, q),
                        [well(3), well(2), r(3, 2)]),
    "solve_sylvester batched": (lambda la, a, b, q: la.solve_sylvester(a, b, q),
                                [well(3), well(2), r(2, 3, 2)]),
    "solve_continuous_lyapunov": (
        lambda la, a, q: la.solve_continuous_lyapunov(stable(a), q), [r(3, 3), r(3, 3)]),
    "solve_continuous_lyapunov batched": (
        lambda la, a, q: la.solve_continuous_lyapunov(stable(a), q), [r(2, 3, 3), r(3, 3)]),
    "inv": (lambda la, a: la.inv(a), [well(3)]),
    "inv batched": (lambda la, a: la.inv(a), [well(3, 2)]),
    "inv pos": (lambda la, a: la.inv(spd(a), assume_a="pos"), [r(3, 3)]),
    "inv pos lower": (lambda la, a: la.inv(spd(a), assume_a="pos", lower=True), [r(3, 3)]),
    "inv sym": (lambda la, a: la.inv(a + T(a), assume_a="sym"), [well(3)]),
    "inv her lower": (lambda la, a: la.inv(a + T(a), assume_a="her", lower=True), [well(3)]),
    "inv upper triangular": (lambda la, a: la.inv(a, assume_a="upper triangular"), [well(3)]),
    "inv lower triangular": (lambda la, a: la.inv(a, assume_a="lower triangular"), [well(3)]),
    # (SciPy's inv(assume_a='diagonal') keeps the off-diagonal entries: a diagonal matrix)
    "inv diagonal": (lambda la, d: la.inv(wnp.diag(d), assume_a="diagonal"),
                     [r(3) ** 2 + 1]),
    "det": (lambda la, a: la.det(a), [r(3, 3)]),
    "det batched": (lambda la, a: la.det(a), [r(2, 4, 4)]),
    "solve": (lambda la, a, b: la.solve(a, b), [well(3), r(3)]),
    "solve transposed": (lambda la, a, b: la.solve(a, b, transposed=True), [well(3), r(3, 2)]),
    "solve gen batched": (lambda la, a, b: la.solve(a, b, assume_a="gen"),
                          [well(3, 2), r(3)]),
    "solve banded": (lambda la, a, b: la.solve(a, b, assume_a="banded"), [well(3), r(3, 2)]),
    "solve pos": (lambda la, a, b: la.solve(spd(a), b, assume_a="pos"), [r(3, 3), r(3, 2)]),
    "solve pos lower": (lambda la, a, b: la.solve(spd(a), b, assume_a="positive definite",
                                                  lower=True), [r(3, 3), r(3)]),
    "solve sym": (lambda la, a, b: la.solve(a + T(a), b, assume_a="sym"), [well(3), r(3, 2)]),
    "solve symmetric lower": (lambda la, a, b: la.solve(a + T(a), b, assume_a="symmetric",
                                                        lower=True), [well(3), r(3)]),
    "solve diagonal": (lambda la, d, b: la.solve(wnp.diag(d), b, assume_a="diagonal"),
                       [r(3) ** 2 + 1, r(3, 2)]),
    "solve tridiagonal": (
        lambda la, a, b: la.solve(wnp.tril(a, 1) - wnp.tril(a, -2), b, assume_a="tridiagonal"),
        [well(4), r(4)]),
    "solve lower triangular transposed": (
        lambda la, a, b: la.solve(a, b, assume_a="lower triangular", transposed=True),
        [well(3), r(3, 2)]),
    "lu_factor": (lambda la, a: la.lu_factor(a)[0], [r(3, 3)]),
    "lu_factor 4x4": (lambda la, a: la.lu_factor(a)[0], [r(4, 4)]),
    "lu_factor batched": (lambda la, a: la.lu_factor(a)[0], [r(2, 3, 3)]),
    "lu_solve": (lambda la, a, b: la.lu_solve(la.lu_factor(a), b), [r(3, 3), r(3, 2)]),
    "lu_solve trans vector": (lambda la, a, b: la.lu_solve(la.lu_factor(a), b, trans=1),
                              [r(4, 4), r(4)]),
    "lu_solve batched": (lambda la, a, b: la.lu_solve(la.lu_factor(a), b),
                         [r(2, 3, 3), r(3, 2)]),
    "eigh values": (lambda la, a: la.eigh(a + T(a), eigvals_only=True), [r(3, 3)]),
    # (eigenvectors up to sign: functions of v v ᵀ; test_eigh_vectors_are_scipys checks signs)
    "eigh vectors": (lambda la, a: la.eigh(a + T(a))[1] ** 2, [r(3, 3)]),
    "eigh upper": (lambda la, a: la.eigh(a + T(a), lower=False)[1] ** 2, [r(3, 3)]),
    "eigh driver evd": (lambda la, a: la.eigh(a + T(a), driver="evd")[0], [r(3, 3)]),
    "eigh subset": (lambda la, a: la.eigh(a + T(a), subset_by_index=[1, 2])[1] ** 2,
                    [r(4, 4)]),
    "eigvalsh subset": (lambda la, a: la.eigvalsh(a + T(a), subset_by_index=(0, 1)),
                        [r(3, 3)]),
    "eigvalsh batched": (lambda la, a: la.eigvalsh(a + T(a)), [r(2, 3, 3)]),
    # the generalized problem A v = λ B v (tests/test_generalized_eigh.py has the rest)
    "eigh generalized": (lambda la, a, b: la.eigh(a + T(a), spd(b))[1] ** 2,
                         [r(3, 3), r(3, 3)]),
    "eigh generalized values": (lambda la, a, b: la.eigh(a + T(a), spd(b))[0],
                                [r(3, 3), r(3, 3)]),
    "eigh generalized upper type 2": (
        lambda la, a, b: la.eigh(a + T(a), spd(b), lower=False, type=2)[1] ** 2,
        [r(3, 3), r(3, 3)]),
    "eigh generalized type 3 subset": (
        lambda la, a, b: la.eigh(a + T(a), spd(b), type=3, subset_by_index=[1, 2])[1] ** 2,
        [r(4, 4), r(4, 4)]),
    "eigh generalized batched b": (lambda la, a, b: la.eigh(a + T(a), spd(b))[1] ** 2,
                                   [r(3, 3), r(2, 3, 3)]),
    "eigvalsh generalized subset": (
        lambda la, a, b: la.eigvalsh(a + T(a), spd(b), subset_by_index=(0, 1)),
        [r(3, 3), r(3, 3)]),
    "block_diag": (lambda la, a, b: la.block_diag(a, b, 2.0), [r(2, 2), r(3)]),
    "block_diag batched": (lambda la, a, b: la.block_diag(a, b), [r(2, 2, 2), r(1, 3)]),
    "sqrtm": (lambda la, a: la.sqrtm(spd(a)), [r(3, 3)]),
    "sqrtm nonsymmetric": (lambda la, a: la.sqrtm(a), [well(3)]),
    "sqrtm batched": (lambda la, a: la.sqrtm(spd(a)), [r(2, 3, 3)]),
}
# whose traced values are SciPy's function itself (the others compose NumPy's LAPACK calls:
# equal to rounding)
EXACT = {name for name in CASES if name.startswith(
    ("solve_triangular", "solve_banded", "expm", "solve_sylvester", "lu_factor", "eigh",
     "eigvalsh", "block_diag", "sqrtm", "solve lower"))}


def _f(name):
    call, args = CASES[name]
    return (lambda *a: call(linalg, *a)), args


def check_values_equal_scipys(call, args, exact):
    """`call(module, *args)` gives SciPy's values from wengert.scipy.linalg: on plain
    arguments SciPy's own result, traced (eagerly and abstractly) the same shape and dtype,
    and the same numbers (bit for bit if `exact`).  Returns SciPy's."""
    expected = call(sl, *args)
    plain = call(linalg, *args)
    assert type(plain) is type(expected)
    np.testing.assert_array_equal(plain, expected)        # plain values: SciPy itself
    f = lambda *a: call(linalg, *a)
    traced = wg.vjp(f, *args)[0]
    graph = wg.trace(f, *args)                               # abstract: shapes, dtypes
    for got in (traced, graph(*args)):
        assert np.shape(got) == np.shape(expected)
        assert np.result_type(got) == np.result_type(expected)
        if exact:
            np.testing.assert_array_equal(got, expected)
        else:                                    # (complex values compared as complex)
            np.testing.assert_allclose(got, expected, rtol=1e-11, atol=1e-12)
    return expected


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_equal_scipys_plain_and_traced(name):
    check_values_equal_scipys(*CASES[name], name in EXACT)


@pytest.mark.parametrize("name", sorted(CASES))
def test_derivatives_against_finite_differences_to_second_order(name):
    f, args = _f(name)
    check_grads(f, *args, order=2)


def test_eigh_vectors_are_scipys_including_their_signs():
    # NumPy's eigh picks the other sign about as often as not: the values are SciPy's
    for _ in range(10):
        a = r(4, 4)
        a = a + a.T
        for kw in ({}, {"lower": False}, {"subset_by_index": [1, 3]}, {"driver": "evx"}):
            w, v = wg.vjp(lambda a: linalg.eigh(a, **kw), a)[0]
            ws, vs = sl.eigh(a, **kw)
            np.testing.assert_array_equal(v, vs)
            np.testing.assert_array_equal(w, ws)


def test_lu_solve_takes_trans_as_a_letter_plain_and_traced():
    # (documented, and read so on traced values; SciPy's own lu_solve takes numbers only)
    a, b = well(3), r(3)
    for letter, number in (("N", 0), ("T", 1), ("C", 2)):
        want = sl.lu_solve(sl.lu_factor(a), b, trans=number)
        for trans in (letter, number):
            np.testing.assert_array_equal(linalg.lu_solve(linalg.lu_factor(a), b, trans), want)
            got = wg.vjp(lambda b: linalg.lu_solve(linalg.lu_factor(a), b, trans=trans), b)[0]
            np.testing.assert_allclose(got, want, rtol=1e-12)
    with pytest.raises(ValueError):
        linalg.lu_solve(linalg.lu_factor(a), b, trans="X")


def test_float32_stays_float32():
    a = well(3).astype(np.float32)
    for f in (linalg.expm, linalg.sqrtm, lambda a: linalg.solve_triangular(a, a[0]),
              lambda a: linalg.lu_factor(a)[0], lambda a: linalg.solve_sylvester(a, a, a)):
        out, g = wg.value_and_grad(lambda a: wnp.sum(f(a)))(a)
        assert wg.vjp(f, a)[0].dtype == f(a).dtype == np.float32
        assert g.dtype == np.float32
    # ... where SciPy keeps it: its det is in double precision for every input (the traced
    # one kept float32 and complex64), while the gradient has the input's dtype
    for b in (a, a.astype(np.complex64)):
        assert np.result_type(wg.vjp(linalg.det, b)[0]) == sl.det(b).dtype
    assert wg.grad(linalg.det)(a).dtype == np.float32


# ---- closed forms ------------------------------------------------------------------------------
def test_expm_derivative_along_its_own_direction():
    a = r(3, 3)
    e = lambda t: linalg.expm(t * a)
    d1 = wg.jvp(e, (1.3,), (1.0,))[1]
    assert_close(d1, a @ sl.expm(1.3 * a), rtol=1e-10, atol=1e-12)
    assert_close(d1, sl.expm(1.3 * a) @ a, rtol=1e-10, atol=1e-12)
    d2 = wg.jvp(lambda t: wg.jvp(e, (t,), (1.0,))[1], (1.3,), (1.0,))[1]
    assert_close(d2, a @ a @ sl.expm(1.3 * a), rtol=1e-9, atol=1e-12)
    # d tr e^A = tr(e^A dA): the gradient of the trace is (e^A)ᵀ
    assert_close(wg.grad(lambda a: wnp.trace(linalg.expm(a)))(a), sl.expm(a).T, rtol=1e-10)


def test_expm_frechet_equals_scipys():
    a, e = 0.5 * r(4, 4), r(4, 4)
    exp, frechet = wg.vjp(lambda a, e: linalg.expm_frechet(a, e), a, e)[0]
    exp_s, frechet_s = sl.expm_frechet(a, e)
    assert_close(exp, exp_s, rtol=1e-12)
    assert_close(frechet, frechet_s, rtol=1e-10, atol=1e-12)
    only = wg.vjp(lambda e: linalg.expm_frechet(a, e, compute_expm=False), e)[0]
    assert_close(only, frechet_s, rtol=1e-10, atol=1e-12)


def test_log_det_through_cho_factor_has_gradient_the_inverse():
    s = spd(r(4, 4))

    def logdet(a):
        c, lower = linalg.cho_factor(a)
        return 2 * wnp.sum(wnp.log(wnp.diagonal(c)))
    assert_close(logdet(s), np.linalg.slogdet(s)[1], rtol=1e-12)
    assert_close(wg.grad(logdet)(s), np.linalg.inv(s), rtol=1e-10, atol=1e-12)
    v = r(4, 4)
    v = v + v.T                                   # d A⁻¹ = -A⁻¹ dA A⁻¹
    hv = wg.jvp(wg.grad(logdet), (s,), (v,))[1]
    assert_close(hv, -np.linalg.inv(s) @ v @ np.linalg.inv(s), rtol=1e-9, atol=1e-12)


def _dense(ab, l, u):
    """The n×n matrix SciPy's band storage ab stands for."""
    n = ab.shape[-1]
    return sum(np.diag(ab[u - k, max(k, 0):n + min(k, 0)], k) for k in range(-l, u + 1))


@pytest.mark.parametrize("l, u", [(1, 1), (2, 1), (0, 3)])
def test_banded_solve_derivatives_are_the_dense_solves(l, u):
    """x = A⁻¹ b with A dense: the Jacobian in b is A⁻¹, and the gradient of c·x in ab is
    -(A⁻ᵀ c) xᵀ read on the band (zero in the corners SciPy ignores)."""
    ab, b, c = band(l, u, 6), r(6), r(6)
    A = _dense(ab, l, u)
    assert_close(wg.jacrev(lambda b: linalg.solve_banded((l, u), ab, b))(b),
                 np.linalg.inv(A), rtol=1e-12, atol=1e-14)
    got = wg.grad(lambda ab: wnp.dot(c, linalg.solve_banded((l, u), ab, b)))(ab)
    full = -np.outer(np.linalg.solve(A.T, c), np.linalg.solve(A, b))
    want = np.zeros_like(ab)
    for i in range(6):
        for j in range(max(0, i - l), min(6, i + u + 1)):
            want[u + i - j, j] = full[i, j]
    assert_close(got, want, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("lower", [False, True])
def test_symmetric_banded_solve_gradient_is_the_dense_ones_on_both_triangles(lower):
    """An entry of the stored triangle stands for A[i, j] and A[j, i]: its gradient is the
    dense gradient's entries at both; the diagonal's, its own."""
    u, n = 2, 6
    ab, b, c = hband(u, n, lower=lower), r(n), r(n)
    A = np.zeros((n, n))
    for i in range(n):
        for j in range(i, min(n, i + u + 1)):
            A[i, j] = A[j, i] = ab[j - i, i] if lower else ab[u + i - j, j]
    x = linalg.solveh_banded(ab, b, lower=lower)
    assert_close(np.asarray(x), sl.solveh_banded(ab, b, lower=lower), rtol=1e-13)
    got = wg.grad(lambda ab: wnp.dot(c, linalg.solveh_banded(ab, b, lower=lower)))(ab)
    full = -np.outer(np.linalg.solve(A.T, c), np.linalg.solve(A, b))
    want = np.zeros_like(ab)
    for i in range(n):
        for j in range(i, min(n, i + u + 1)):
            g = full[i, j] + (full[j, i] if i != j else 0.0)
            want[(j - i, i) if lower else (u + i - j, j)] = g
    assert_close(got, want, rtol=1e-11, atol=1e-13)
    traced = wg.compile(lambda ab, b: linalg.solveh_banded(ab, b, lower=lower), ab, b)
    assert_close(traced(ab, b), x, rtol=1e-13)


@pytest.mark.parametrize("lower", [False, True])
def test_hermitian_banded_solve_equals_scipys(lower):
    u, n = 1, 5
    ab = hband(u, n, lower=lower) + 1j * r(u + 1, n)
    b = r(n) + 1j * r(n)
    want = sl.solveh_banded(ab, b, lower=lower)   # (the diagonal's imaginary part unread)
    got = wg.vjp(lambda ab, b: linalg.solveh_banded(ab, b, lower=lower), ab, b)[0]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)   # (complex: both parts)


def test_lyapunov_solution_of_a_diagonal_system():
    lam, q = -np.array([1.0, 2.0, 5.0]), r(3, 3)
    x = lambda lam: linalg.solve_continuous_lyapunov(wnp.diag(lam), q)
    expected = q / (lam[:, None] + lam[None, :])          # X_ij = Q_ij / (λ_i + λ_j)
    assert_close(x(lam), expected, rtol=1e-12)
    jac = wg.jacfwd(x)(lam)                               # dX_ij/dλ_k
    eye = np.eye(3)
    want = -expected[:, :, None] * (eye[:, None, :] + eye[None, :, :]) \
        / (lam[:, None] + lam[None, :])[:, :, None]
    assert_close(jac, want, rtol=1e-10, atol=1e-12)
    assert_close(wg.jacrev(x)(lam), want, rtol=1e-10, atol=1e-12)


def test_sylvester_of_diagonal_matrices():
    a, b, q = np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0]), r(2, 3)
    x = lambda a, b: linalg.solve_sylvester(wnp.diag(a), wnp.diag(b), q)
    assert_close(x(a, b), q / (a[:, None] + b[None, :]), rtol=1e-12)
    ga = wg.grad(lambda a: wnp.sum(x(a, b)))(a)
    assert_close(ga, -np.sum(q / (a[:, None] + b[None, :]) ** 2, axis=1), rtol=1e-10)


def test_sqrtm_of_a_diagonal_matrix_and_of_a_square():
    d = np.array([1.0, 4.0, 9.0])
    g = wg.grad(lambda d: wnp.sum(linalg.sqrtm(wnp.diag(d))))(d)
    assert_close(g, 0.5 / np.sqrt(d), rtol=1e-12)
    # sqrtm(X²) = X for X with eigenvalues in the right half-plane: its derivative is dX
    x, v = well(3), r(3, 3)
    assert_close(wg.jvp(lambda x: linalg.sqrtm(x @ x), (x,), (v,))[1], v, rtol=1e-8, atol=1e-10)


def test_triangular_solve_jacobian_is_the_triangles_inverse():
    a = well(4)
    for lower in (True, False):
        jac = wg.jacfwd(lambda b: linalg.solve_triangular(a, b, lower=lower))(r(4))
        tri = np.tril(a) if lower else np.triu(a)
        assert_close(jac, np.linalg.inv(tri), rtol=1e-12, atol=1e-14)
    # the unread triangle has no derivative
    g = wg.grad(lambda a: wnp.sum(linalg.solve_triangular(a, np.ones(4), lower=True)))(a)
    assert not np.any(np.triu(g, 1))
    g = wg.grad(lambda a: wnp.sum(linalg.solve_triangular(a, np.ones(4), unit_diagonal=True)))(a)
    assert not np.any(np.tril(g))


def test_log_abs_det_through_lu_factor_has_gradient_the_inverse_transpose():
    a = r(4, 4)
    f = lambda a: wnp.sum(wnp.log(wnp.abs(wnp.diagonal(linalg.lu_factor(a)[0]))))
    assert_close(f(a), np.linalg.slogdet(a)[1], rtol=1e-12)
    assert_close(wg.grad(f)(a), np.linalg.inv(a).T, rtol=1e-10, atol=1e-12)


def test_det_gradient_is_the_cofactor_matrix():
    a = r(3, 3)
    assert_close(wg.grad(linalg.det)(a), np.linalg.det(a) * np.linalg.inv(a).T, rtol=1e-10)


def test_symmetric_solvers_have_symmetric_gradients():
    a, b = spd(r(3, 3)), r(3)
    for kw in ({"assume_a": "pos"}, {"assume_a": "sym"}, {"assume_a": "sym", "lower": True}):
        g = wg.grad(lambda a: wnp.sum(linalg.solve(a, b, **kw)))(a)
        assert_close(g, g.T, rtol=1e-12, atol=1e-14)
        x = np.linalg.solve(a, b)
        full = -np.outer(np.linalg.solve(a.T, np.ones(3)), x)         # the general one
        assert_close(g, 0.5 * (full + full.T), rtol=1e-10, atol=1e-12)


# ---- a Gaussian process ------------------------------------------------------------------------
def _gp_nll(log_ell, x, y, noise=0.1):
    """The negative log marginal likelihood of a GP with a squared-exponential kernel."""
    ell = wnp.exp(log_ell)
    k = wnp.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / ell ** 2) + noise * np.eye(len(x))
    L = linalg.cholesky(k, lower=True)
    alpha = linalg.solve_triangular(L, y, lower=True)
    return 0.5 * alpha @ alpha + wnp.sum(wnp.log(wnp.diagonal(L))) \
        + 0.5 * len(x) * np.log(2 * np.pi)


def test_gaussian_process_marginal_likelihood_gradient():
    x = np.linspace(0.0, 5.0, 12)
    y = np.sin(x) + 0.1 * r(12)
    k = np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / 0.8 ** 2) + 0.1 * np.eye(12)
    direct = 0.5 * y @ np.linalg.solve(k, y) + 0.5 * np.linalg.slogdet(k)[1] + 6 * np.log(2 * np.pi)
    assert_close(_gp_nll(np.log(0.8), x, y), direct, rtol=1e-12)
    g = wg.grad(_gp_nll)(np.log(0.8), x, y)
    h = 1e-6
    fd = (_gp_nll(np.log(0.8) + h, x, y) - _gp_nll(np.log(0.8) - h, x, y)) / (2 * h)
    assert_close(g, fd, rtol=1e-6)
    h2 = wg.grad(wg.grad(_gp_nll))(np.log(0.8), x, y)
    fd2 = (wg.grad(_gp_nll)(np.log(0.8) + h, x, y)
           - wg.grad(_gp_nll)(np.log(0.8) - h, x, y)) / (2 * h)
    assert_close(h2, fd2, rtol=1e-5)


# ---- vmap, compile, Taylor mode ----------------------------------------------------------------
_A, _A2, _AB = well(3), well(3, 2), band(1, 1, 5)
# name -> (function of one example, the batch of arguments)
VMAP = {
    "solve_triangular": (lambda a, b: linalg.solve_triangular(a, b, lower=True),
                         [well(3, 4), r(4, 3, 2)]),
    "solve_triangular shared a": (lambda b: linalg.solve_triangular(_A, b, trans=1),
                                  [r(4, 3, 2)]),
    "solve_triangular shared a, vector": (lambda b: linalg.solve_triangular(_A, b),
                                          [r(4, 3)]),
    "solve_triangular shared b": (lambda a: linalg.solve_triangular(a, _A[0], lower=True),
                                  [well(3, 4)]),
    "solve_triangular stacks": (lambda a, b: linalg.solve_triangular(a, b),
                                [well(3, 4, 2), r(4, 3)]),
    "cho_solve": (lambda a, b: linalg.cho_solve(linalg.cho_factor(spd(a)), b),
                  [r(4, 3, 3), r(4, 3)]),
    "solve_banded": (lambda ab, b: linalg.solve_banded((2, 1), ab, b),
                     [band(2, 1, 5, 4), r(4, 5, 2)]),
    "solve_banded shared ab": (lambda b: linalg.solve_banded((1, 1), _AB, b), [r(4, 5)]),
    "solve_banded shared b": (lambda ab: linalg.solve_banded((1, 1), ab, _AB[0]),
                              [band(1, 1, 5, 4)]),
    "expm": (linalg.expm, [0.5 * r(4, 3, 3)]),
    "solve_sylvester": (lambda a, q: linalg.solve_sylvester(a, _A, q), [well(3, 4), r(4, 3, 3)]),
    "solve_sylvester stacks": (lambda q: linalg.solve_sylvester(_A2, _A, q),
                               [r(4, 3, 3)]),
    "lyapunov": (lambda a, q: linalg.solve_continuous_lyapunov(stable(a), q),
                 [r(4, 3, 3), r(4, 3, 3)]),
    "lu_solve": (lambda a, b: linalg.lu_solve(linalg.lu_factor(a), b), [well(3, 4), r(4, 3)]),
    "lu_solve shared factors": (lambda b: linalg.lu_solve(linalg.lu_factor(_A), b, trans=1),
                                [r(4, 3, 2)]),
    "eigh": (lambda a: linalg.eigh(a + T(a))[1] ** 2, [r(4, 3, 3)]),
    "eigh subset": (lambda a: linalg.eigh(a + T(a), subset_by_index=[0, 1])[1] ** 2,
                    [r(4, 3, 3)]),
    "eigh generalized": (lambda a, b: linalg.eigh(a + T(a), spd(b))[1] ** 2,
                         [r(4, 3, 3), r(4, 3, 3)]),
    # (one mass matrix for a batch of stiffnesses; one stack of them, each example's
    # eigenvalues a stack too)
    "eigvalsh generalized shared b": (lambda a: linalg.eigvalsh(a + T(a), spd(_A)),
                                      [r(4, 3, 3)]),
    "eigvalsh generalized shared stack": (lambda a: linalg.eigvalsh(a + T(a), spd(_A2)),
                                          [r(4, 3, 3)]),
    "sqrtm": (lambda a: linalg.sqrtm(spd(a)), [r(4, 3, 3)]),
    "inv sym": (lambda a: linalg.inv(a + T(a), assume_a="sym"), [well(3, 4)]),
    "block_diag": (lambda a, b: linalg.block_diag(a, b), [r(4, 2, 2), r(4, 3)]),
}


@pytest.mark.parametrize("name", sorted(VMAP))
def test_vmap_matches_a_loop_without_looping(name, loops):
    f, args = VMAP[name]
    size = args[0].shape[0]
    got = wg.vmap(f)(*args)
    loop = np.stack([f(*[x[k] for x in args]) for k in range(size)])
    assert_close(got, loop, rtol=1e-10, atol=1e-12)
    assert not loops, loops
    # per-example gradients, batched, against the loop's
    g = lambda *a: wnp.sum(f(*a) ** 2)
    batched = wg.vmap(wg.grad(g, argnums=tuple(range(len(args)))))(*args)
    for k in range(size):
        one = wg.grad(g, argnums=tuple(range(len(args))))(*[x[k] for x in args])
        for b, o in zip(batched, one):
            assert_close(b[k], o, rtol=1e-9, atol=1e-11)
    assert not loops, loops


@pytest.mark.parametrize("name", ["solve_triangular", "solve_banded", "cho_solve", "expm",
                                  "solve_sylvester", "lu_solve", "eigh", "eigh generalized",
                                  "sqrtm", "inv sym", "block_diag"])
def test_compile_matches_eager(name):
    f, args = VMAP[name]
    first = [x[0] for x in args]
    second = [x[1] for x in args]
    assert_close(wg.compile(f, *first)(*second), f(*second), rtol=1e-12, atol=1e-14)
    g = wg.grad(lambda *a: wnp.sum(f(*a) ** 2), argnums=tuple(range(len(args))))
    for c, e in zip(wg.compile(g, *first)(*second), g(*second)):
        assert_close(c, e, rtol=1e-10, atol=1e-12)


TAYLOR = {
    "solve_triangular": lambda a: linalg.solve_triangular(a, a[:, :2], lower=True, trans=1),
    "solve_triangular unit vector": lambda a: linalg.solve_triangular(
        a, a[0], unit_diagonal=True),
    "solve_triangular stack, vector": lambda a: linalg.solve_triangular(
        wnp.stack([a, 2 * a + 1.0]), a[0], lower=True),
    "solve_triangular stack, constant vector": lambda a: linalg.solve_triangular(
        wnp.stack([a, 2 * a + 1.0]), np.ones(3), trans=1),
    "expm": lambda a: linalg.expm(0.3 * a),
    "solve_sylvester": lambda a: linalg.solve_sylvester(a, T(a) @ a, a + 1.0),
    "sqrtm": lambda a: linalg.sqrtm(spd(a)),
    "inv sym": lambda a: linalg.inv(a + T(a), assume_a="sym"),
    "lu_solve": lambda a: linalg.lu_solve((_A, np.array([2, 2, 2], np.int32)), a, trans=1),
}


@pytest.mark.parametrize("name", sorted(TAYLOR))
def test_taylor_coefficients_are_nested_jvps(name):
    f, a, v = TAYLOR[name], well(3), r(3, 3)
    series = wg.taylor(f, a, v, order=3)
    d = lambda f: (lambda x: wg.jvp(f, (x,), (v,))[1])
    assert_close(series[1], d(f)(a), rtol=1e-9, atol=1e-11)
    assert_close(series[2], d(d(f))(a) / 2, rtol=1e-8, atol=1e-10)
    assert_close(series[3], d(d(d(f)))(a) / 6, rtol=1e-8, atol=1e-10)


def test_lu_factor_taylor_mode_from_its_jvp():
    """lu_factor has no Taylor rule of its own: its series comes from its JVP, against
    nested jvp (order 1 is the JVP itself)."""
    f = lambda a: linalg.lu_factor(a)[0]
    v = r(3, 3)
    got = wg.taylor(f, _A, v, order=3)
    assert_close(got[1], wg.jvp(f, (_A,), (v,))[1], rtol=1e-12)
    d1 = lambda t: wg.jvp(lambda s: f(_A + s * v), (t,), (1.0,))[1]
    d2 = lambda t: wg.jvp(d1, (t,), (1.0,))[1]
    assert_close(got[2], d2(0.0) / 2, rtol=1e-10, atol=1e-12)
    assert_close(got[3], wg.jvp(d2, (0.0,), (1.0,))[1] / 6, rtol=1e-10, atol=1e-12)


def test_every_primitive_is_exercised_by_these_cases():
    seen = set()
    for name in CASES:
        seen |= _ops_exercised(*_f(name))
    declared = {name for name, p in REGISTRY.items() if p.builtin and any(
        p is v for v in vars(P).values())}
    assert declared <= seen, declared - seen


# ---- errors ------------------------------------------------------------------------------------
def _traced(f, *args):
    """f on traced arguments (the errors are raised while tracing)."""
    return wg.vjp(f, *args)[0]


@pytest.mark.parametrize("call, args, error, match", [
    (lambda a, b: linalg.solve_triangular(a, b), [r(2, 3), r(2)], ValueError,
     "expected square matrix"),
    (lambda a, b: linalg.solve_triangular(a, b), [r(3, 3), r(4, 2)], ValueError,
     r"shapes of a \(3, 3\) and b \(4, 2\) are incompatible"),
    (lambda a, b: linalg.solve_triangular(a, b, trans=3), [r(3, 3), r(3)], ValueError,
     "trans must be"),
    (lambda ab, b: linalg.solve_banded((1, 1), ab, b), [r(3, 4), r(3)], ValueError,
     r"shapes of ab \(3, 4\) and b \(3,\) are not compatible: b needs 4 rows"),
    (lambda ab, b: linalg.solve_banded((1, 2), ab, b), [r(3, 4), r(4)], ValueError,
     r"l\+u\+1 \(4\) does not equal ab.shape\[-2\] \(3\)"),
    (lambda ab, b: linalg.solve_banded((1, -1), ab, b), [r(1, 4), r(4)], ValueError,
     r"must not be negative, got \(l, u\) = \(1, -1\)"),
    (lambda ab, b: linalg.solve_banded(1, ab, b), [r(3, 4), r(4)], ValueError,
     r"\(l, u\) must be a pair of integers, got 1"),
    (lambda ab, b: linalg.solve_banded((1, 1), ab, b), [r(2, 3, 4), r(3, 4, 1)], ValueError,
     r"shapes \(2, 3, 4\) and \(3, 4, 1\) cannot be broadcast"),
    (lambda a: linalg.cholesky(a), [r(2, 3)], ValueError,
     r"square but has the shape: \(2, 3\)"),
    (lambda a, b: linalg.cho_solve((a, True), b), [r(3, 3), r(4)], ValueError,
     r"incompatible dimensions \(\(3, 3\) and \(4,\)\)"),
    (lambda a: linalg.expm(a), [r(2, 3)], np.linalg.LinAlgError, "must be square"),
    (lambda a: linalg.expm(a), [r(3)], np.linalg.LinAlgError, "at least two-dimensional"),
    (lambda a: linalg.sqrtm(a), [r(2, 3)], np.linalg.LinAlgError, "must be square"),
    (lambda a, q: linalg.solve_sylvester(a, a, q), [r(3, 3), r(2, 3)], ValueError,
     r"q of shape \(2, 3\) does not match a of shape \(3, 3\) and b of shape \(3, 3\)"),
    (lambda a, q: linalg.solve_sylvester(a[:, :2], a, q), [r(3, 3), r(3, 3)], ValueError,
     "expected square matrix"),
    (lambda a, q: linalg.solve_continuous_lyapunov(a, q), [r(3, 3), r(2, 2)], ValueError,
     r"a and q should have the same shape \(a has shape \(3, 3\), q has shape \(2, 2\)\)"),
    (lambda a, q: linalg.solve_continuous_lyapunov(a, q), [r(3, 2), r(3, 3)], ValueError,
     "Matrix a should be square"),
    (lambda a: linalg.inv(a), [r(2, 3)], ValueError, r"square matrix, got a1.shape=\(2, 3\)"),
    (lambda a: linalg.inv(a, assume_a="banded"), [r(3, 3)], ValueError,
     "banded is not a recognized matrix structure"),
    (lambda a: linalg.det(a), [r(2, 3)], ValueError, r"received shape \(2, 3\)"),
    (lambda a, b: linalg.solve(a, b), [r(3, 3), r(4)], ValueError,
     r"a1.shape=\(3, 3\) and b1.shape=\(4,\)"),
    (lambda a, b: linalg.solve(a, b), [r(2, 3, 3), r(4, 3, 2)], ValueError,
     r"shapes \(2, 3, 3\) and \(4, 3, 2\) cannot be broadcast"),
    (lambda a, b: linalg.solve(a, b, assume_a="foo"), [r(3, 3), r(3)], ValueError,
     "foo is not a recognized"),
    (lambda a: linalg.lu_factor(a), [r(2, 3)], NotImplementedError,
     r"lu_factor of a non-square matrix \(shape \(2, 3\)\)"),
    (lambda a, b: linalg.lu_solve(linalg.lu_factor(a), b), [r(3, 3), r(2)], ValueError,
     r"Shapes of lu \(3, 3\) and b \(2,\) are incompatible"),
    (lambda a: linalg.eigh(a), [r(2, 3)], ValueError, 'expected square "a" matrix'),
    (lambda a: linalg.eigh(a, subset_by_index=[2, 1]), [r(3, 3)], ValueError,
     "eigenvalue indices are not valid"),
    (lambda a, b: linalg.eigh(a, b), [r(3, 3), r(3, 2)], ValueError,
     'expected square "b" matrix'),
    (lambda a, b: linalg.eigh(a, b), [r(3, 3), r(2, 2)], ValueError,
     r"wrong b dimensions \(2, 2\), should be \(3, 3\) \(a has shape \(3, 3\), b has "
     r"shape \(2, 2\)\)"),
    (lambda a, b: linalg.eigh(a, b), [r(2, 3, 3), r(4, 3, 3)], ValueError,
     r"shapes \(2, 3, 3\) and \(4, 3, 3\) cannot be broadcast"),
    (lambda a, b: linalg.eigh(a, b, type=4), [r(3, 3), r(3, 3)], ValueError,
     '"type" keyword only accepts 1, 2, and 3'),
])
def test_clear_errors_on_traced_values(call, args, error, match):
    with pytest.raises(error, match=match):
        _traced(call, *args)


def test_what_has_no_derivative_is_refused_by_name():
    a = spd(r(3, 3))
    with pytest.raises(NotImplementedError, match="subset_by_value"):
        wg.grad(lambda a: wnp.sum(linalg.eigh(a, subset_by_value=(0, 9))[0]))(a)
    with pytest.raises(NotImplementedError, match="subset_by_value"):
        wg.grad(lambda a: wnp.sum(linalg.eigvalsh(a, a, subset_by_value=(0, 9))))(a)
    with pytest.raises(NotImplementedError, match="disp=False"):
        wg.grad(lambda a: wnp.sum(linalg.sqrtm(a, disp=False)[0]))(a)
    # SciPy's functions without a rule: SciPy's on plain values, refused on traced ones
    np.testing.assert_array_equal(linalg.logm(a), sl.logm(a))
    with pytest.raises(NotImplementedError, match="scipy.linalg.logm"):
        wg.grad(lambda a: wnp.sum(linalg.logm(a)))(a)
    with pytest.raises(AttributeError):
        linalg.not_a_function


def test_sqrtm_has_no_derivative_at_a_singular_matrix():
    # (SciPy warns "may not have a square root" where its own error estimate exceeds
    # 1000 eps, which depends on the machine's rounding: allowed, not required)
    for a in (np.diag([4.0, 0.0]), np.outer([1.0, 2.0, 2.0], [1.0, 2.0, 2.0])):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sl.LinAlgWarning)
            value = wg.vjp(linalg.sqrtm, a)[0]              # the value exists
            assert_close(value @ value, a, atol=1e-7)
            with pytest.raises(NotImplementedError,
                               match="sqrtm has no derivative at a singular"):
                wg.grad(lambda a: wnp.sum(linalg.sqrtm(a)))(a)
            with pytest.raises(NotImplementedError, match="sqrtm"):
                wg.jvp(linalg.sqrtm, (a,), (np.eye(len(a)),))
    # a nearly singular matrix still has one (large, but right)
    a = np.diag([4.0, 1e-6])
    assert_close(wg.grad(lambda a: linalg.sqrtm(a)[1, 1])(a)[1, 1], 0.5e3, rtol=1e-9)


def test_a_singular_sylvester_or_lyapunov_equation_warns():
    # A = diag(1, 2), B = -A: SciPy returns entries of 2e15 and the gradient came out 5e30,
    # both without a word (sqrtm's derivative, the same equation, is refused)
    a = np.diag([1.0, 2.0])
    for call in (lambda a: linalg.solve_sylvester(a, -a, np.eye(2)),
                 lambda a: linalg.solve_continuous_lyapunov(a - 1.5 * np.eye(2),   # ±0.5
                                                            np.eye(2))):
        with pytest.warns(RuntimeWarning, match="singular or nearly|sum is very close to"):
            call(a)                              # SciPy's, on plain values (its Lyapunov's)
        with pytest.warns(RuntimeWarning, match="singular or nearly"):
            wg.grad(lambda a: wnp.sum(call(a)))(a)
    with warnings.catch_warnings():                               # a regular one is quiet
        warnings.simplefilter("error")
        wg.grad(lambda a: wnp.sum(linalg.solve_sylvester(a, a, np.eye(2))))(a)
        linalg.solve_continuous_lyapunov(-a, np.eye(2))


def test_sqrtm_of_a_real_matrix_with_a_complex_root_is_refused():
    # (complex matrices: tests/test_scipy_linalg_complex.py)
    a = np.diag([4.0, -1.0])
    assert np.iscomplexobj(linalg.sqrtm(a))                # SciPy's, on plain values
    with pytest.raises(NotImplementedError, match=r"complex.*\(a \+ 0j\)"):
        wg.grad(lambda a: wnp.sum(linalg.sqrtm(a)))(a)


def test_plain_values_go_to_scipy_unchanged():
    a = spd(r(3, 3))
    c = linalg.cho_factor(a)
    assert type(c) is tuple and c[1] is False
    np.testing.assert_array_equal(c[0], sl.cho_factor(a)[0])      # other triangle and all
    lu = linalg.lu_factor(r(2, 3, 3))
    assert type(lu) is list                                       # SciPy's, for a stack
    with pytest.raises(np.linalg.LinAlgError):
        linalg.cholesky(-np.eye(2))
    with pytest.warns(DeprecationWarning):
        linalg.sqrtm(np.eye(2), disp=True)


def test_traced_factorizations_are_tuples_with_plain_flags():
    a = spd(r(3, 3))

    def f(a):
        c, lower = linalg.cho_factor(a, lower=True)
        assert lower is True
        lu, piv = linalg.lu_factor(a)
        assert piv.dtype == np.int32
        return c
    c = wg.vjp(f, a)[0]
    np.testing.assert_array_equal(c, np.tril(sl.cho_factor(a, lower=True)[0]))


def test_scipys_own_factors_with_traced_right_hand_sides():
    s, b = spd(r(3, 3)), r(3)
    inverse = np.linalg.inv(s)
    for lower in (False, True):            # (SciPy's c: arbitrary numbers in the other half)
        c = sl.cho_factor(s, lower=lower)
        assert_close(wg.jacfwd(lambda b: linalg.cho_solve(c, b))(b), inverse, rtol=1e-10)
    lu = sl.lu_factor(s + np.triu(s))
    for trans in (0, 1):
        want = np.linalg.inv(s + np.triu(s))
        assert_close(wg.jacrev(lambda b: linalg.lu_solve(lu, b, trans=trans))(b),
                     want if trans == 0 else want.T, rtol=1e-10)
    stack = np.stack([s, 2 * s])           # SciPy's factors of a stack: lists, flags arrays
    c, lu = sl.cho_factor(stack), sl.lu_factor(stack)
    assert_close(wg.vjp(lambda b: linalg.cho_solve(c, b), b)[0], sl.cho_solve(c, b),
                 rtol=1e-12)
    assert_close(wg.vjp(lambda b: linalg.lu_solve(lu, b), b)[0], sl.lu_solve(lu, b),
                 rtol=1e-12)
    assert_close(wg.vjp(lambda b: linalg.solve(s, b, assume_a="pos"), b)[0],
                 sl.solve(s, b, assume_a="pos"), rtol=1e-12)


def test_not_positive_definite_raises_linalgerror_on_traced_values():
    with pytest.raises(np.linalg.LinAlgError):
        wg.grad(lambda a: wnp.sum(linalg.cholesky(a)))(-np.eye(2))
    with pytest.raises(np.linalg.LinAlgError):
        wg.grad(lambda a: wnp.sum(linalg.solve(a, np.ones(2), assume_a="pos")))(-np.eye(2))
    with pytest.raises(np.linalg.LinAlgError):
        wg.grad(lambda b: wnp.sum(linalg.eigh(np.eye(2), b)[0]))(-np.eye(2))


def test_check_finite_checks_traced_values_where_they_are_known():
    # (inv of a nan matrix raised "Singular matrix", and solve with an inf gave [0, 1])
    a = np.array([[1.0, np.inf], [0.0, 1.0]])
    for call in (lambda a: linalg.solve(a, np.ones(2)), linalg.inv, linalg.det,
                 lambda a: linalg.lu_solve((np.eye(2), np.array([0, 1], np.int32)), a[0]),
                 lambda a: linalg.cho_solve((a, False), np.ones(2))):
        with pytest.raises(ValueError, match="array must not contain infs or NaNs"):
            call(a)                                             # SciPy's own
        with pytest.raises(ValueError, match="array must not contain infs or NaNs"):
            wg.vjp(call, a)
    with np.errstate(invalid="ignore"):
        got = wg.vjp(lambda a: linalg.det(a, check_finite=False), a)[0]    # as asked
    assert np.isnan(got)


def test_import_without_scipy_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy.linalg", None)
    with pytest.raises(ImportError, match=r"pip install 'wengert\[scipy\]'"):
        P.expm(np.eye(2))
