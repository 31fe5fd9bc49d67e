"""wengert.scipy.linalg on complex matrices (docs/complex.md's convention, JAX's).

Every function: values equal SciPy's on plain and traced complex arguments; JVPs along
random complex directions against central differences, VJPs by the dot-product test, to
second order; the gradient of a real loss against differences along complex, real and
imaginary directions; Hessians in real parameters; holomorphic Jacobians against JAX's
(where JAX differentiates the function) or against differences and closed forms; the
Hermitian derivative of the functions that read a Hermitian matrix; quantum gates through
expm, against their closed forms; vmap and compile; and what stays refused."""
import numpy as np
import pytest
import scipy.linalg as sl

import wengert as wg
import wengert.numpy as wnp
from wengert import REGISTRY
from wengert.primitives import scipy_linalg as P
from wengert.scipy import linalg
from test_numpy import _ops_exercised
from test_scipy_linalg import check_values_equal_scipys
from fd import check_complex_grads

rng = np.random.default_rng(20260611)


def r(*shape):
    return rng.normal(size=shape)


def z(*shape):
    return rng.normal(size=shape) + 1j * rng.normal(size=shape)


def zwell(n, *batch):
    """A well-conditioned complex square matrix (or a stack of them)."""
    return z(*batch, n, n) + 2 * n * np.eye(n)


def T(x):
    return wnp.swapaxes(x, -1, -2)


def H(x):
    """The conjugate transpose (of plain and traced matrices)."""
    return wnp.conj(wnp.swapaxes(x, -1, -2))


def hpd(a):
    """A Hermitian positive-definite matrix made from any complex square a: every
    direction of a is a Hermitian direction of it (Hermitian readers' derivatives are the
    Hermitian ones)."""
    return a @ H(a) + a.shape[-1] * np.eye(a.shape[-1])


def stable(a):
    return a - 4 * a.shape[-1] * np.eye(a.shape[-1])


def close(got, want, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol)


# name -> (call, arguments), as in test_scipy_linalg.py: call(la, *args) calls `la` =
# wengert.scipy.linalg or scipy.linalg the same way, wengert.numpy for the rest
CASES = {
    "solve_triangular lower": (lambda la, a, b: la.solve_triangular(a, b, lower=True),
                               [zwell(3), z(3, 2)]),
    "solve_triangular trans T vector": (
        lambda la, a, b: la.solve_triangular(a, b, trans="T"), [zwell(4), z(4)]),
    "solve_triangular trans C": (lambda la, a, b: la.solve_triangular(a, b, trans="C"),
                                 [zwell(3), z(3, 2)]),
    "solve_triangular trans 2 unit lower vector": (
        lambda la, a, b: la.solve_triangular(a, b, trans=2, lower=True, unit_diagonal=True),
        [z(3, 3), z(3)]),
    "solve_triangular trans C real b": (
        lambda la, a, b: la.solve_triangular(a, b, trans="C", lower=True),
        [zwell(3), r(3, 2)]),
    "solve_triangular trans C real a": (lambda la, a, b: la.solve_triangular(a, b, trans="C"),
                                        [zwell(3).real, z(3)]),
    "solve_triangular trans C batched a": (
        lambda la, a, b: la.solve_triangular(a, b, trans="C"), [zwell(3, 2), z(3)]),
    "solve_triangular batched b": (lambda la, a, b: la.solve_triangular(a, b, lower=True),
                                   [zwell(3), z(2, 3, 2)]),
    "solve_banded": (lambda la, ab, b: la.solve_banded((1, 2), ab, b),
                     [z(4, 5) + 8 * (np.arange(4) == 2)[:, None], z(5, 2)]),
    "solve_banded tridiagonal real b": (lambda la, ab, b: la.solve_banded((1, 1), ab, b),
                                        [z(3, 4) + 6 * (np.arange(3) == 1)[:, None], r(4)]),
    "cholesky": (lambda la, a: la.cholesky(hpd(a)), [z(3, 3)]),
    "cholesky lower batched": (lambda la, a: la.cholesky(hpd(a), lower=True), [z(2, 3, 3)]),
    "cho_factor triangle": (lambda la, a: wnp.triu(la.cho_factor(hpd(a))[0]), [z(3, 3)]),
    "cho_solve": (lambda la, a, b: la.cho_solve(la.cho_factor(hpd(a)), b),
                  [z(3, 3), z(3, 2)]),
    "cho_solve lower vector": (
        lambda la, a, b: la.cho_solve(la.cho_factor(hpd(a), lower=True), b), [z(3, 3), z(3)]),
    "cho_solve real b batched": (lambda la, a, b: la.cho_solve(la.cho_factor(hpd(a)), b),
                                 [z(2, 3, 3), r(3, 2)]),
    "expm": (lambda la, a: la.expm(a), [0.5 * z(3, 3)]),
    "expm batched": (lambda la, a: la.expm(a), [0.5 * z(2, 3, 3)]),
    # a real parameter, a complex matrix: e^(-iH), H = s + sᵀ Hermitian (real symmetric)
    "expm of -iH": (lambda la, s: la.expm(-1j * (s + T(s))), [0.5 * r(3, 3)]),
    "frechet derivative of expm": (lambda la, a, e: la.expm_frechet(a, e)[1],
                                   [0.5 * z(3, 3), z(3, 3)]),
    "frechet derivative, real a": (lambda la, a, e: la.expm_frechet(a, e)[1],
                            [0.5 * r(3, 3), z(3, 3)]),
    "solve_sylvester": (lambda la, a, b, q: la.solve_sylvester(a, b, q),
                        [zwell(3), zwell(2), z(3, 2)]),
    "solve_sylvester batched": (lambda la, a, b, q: la.solve_sylvester(a, b, q),
                                [zwell(3), zwell(2), z(2, 3, 2)]),
    "solve_continuous_lyapunov": (
        lambda la, a, q: la.solve_continuous_lyapunov(stable(a), q), [z(3, 3), z(3, 3)]),
    "solve_continuous_lyapunov real q": (
        lambda la, a, q: la.solve_continuous_lyapunov(stable(a), q), [z(3, 3), r(3, 3)]),
    "inv": (lambda la, a: la.inv(a), [zwell(3)]),
    "inv batched": (lambda la, a: la.inv(a), [zwell(3, 2)]),
    "inv pos": (lambda la, a: la.inv(hpd(a), assume_a="pos"), [z(3, 3)]),
    "inv pos lower": (lambda la, a: la.inv(hpd(a), assume_a="pos", lower=True), [z(3, 3)]),
    # complex symmetric (Aᵀ = A), and Hermitian (Aᴴ = A)
    "inv sym": (lambda la, a: la.inv(a + T(a), assume_a="sym"), [zwell(3)]),
    "inv her": (lambda la, a: la.inv(a + H(a), assume_a="her"), [zwell(3)]),
    "inv her lower": (lambda la, a: la.inv(a + H(a), assume_a="her", lower=True),
                      [zwell(3)]),
    "inv upper triangular": (lambda la, a: la.inv(a, assume_a="upper triangular"),
                             [zwell(3)]),
    "inv diagonal": (lambda la, d: la.inv(wnp.diag(d), assume_a="diagonal"),
                     [z(3) + 3.0]),
    "det": (lambda la, a: la.det(a), [z(3, 3)]),
    "det batched": (lambda la, a: la.det(a), [z(2, 4, 4)]),
    "solve": (lambda la, a, b: la.solve(a, b), [zwell(3), z(3)]),
    "solve real b": (lambda la, a, b: la.solve(a, b), [zwell(3), r(3, 2)]),
    "solve gen batched": (lambda la, a, b: la.solve(a, b, assume_a="gen"),
                          [zwell(3, 2), z(3)]),
    "solve pos": (lambda la, a, b: la.solve(hpd(a), b, assume_a="pos"), [z(3, 3), z(3, 2)]),
    "solve pos lower": (lambda la, a, b: la.solve(hpd(a), b, assume_a="pos", lower=True),
                        [z(3, 3), z(3)]),
    "solve sym": (lambda la, a, b: la.solve(a + T(a), b, assume_a="sym"), [zwell(3), z(3)]),
    "solve sym lower": (lambda la, a, b: la.solve(a + T(a), b, assume_a="sym", lower=True),
                        [zwell(3), z(3, 2)]),
    "solve her": (lambda la, a, b: la.solve(a + H(a), b, assume_a="her"), [zwell(3), z(3)]),
    "solve her lower": (lambda la, a, b: la.solve(a + H(a), b, assume_a="her", lower=True),
                        [zwell(3), z(3, 2)]),
    "solve diagonal": (lambda la, d, b: la.solve(wnp.diag(d), b, assume_a="diagonal"),
                       [z(3) + 3.0, z(3, 2)]),
    "solve tridiagonal": (
        lambda la, a, b: la.solve(wnp.tril(a, 1) - wnp.tril(a, -2), b, assume_a="tridiagonal"),
        [zwell(4), z(4)]),
    "solve lower triangular": (lambda la, a, b: la.solve(a, b, assume_a="lower triangular"),
                               [zwell(3), z(3, 2)]),
    "lu_factor": (lambda la, a: la.lu_factor(a)[0], [z(4, 4)]),
    "lu_factor batched": (lambda la, a: la.lu_factor(a)[0], [z(2, 3, 3)]),
    "lu_solve": (lambda la, a, b: la.lu_solve(la.lu_factor(a), b), [z(3, 3), z(3, 2)]),
    "lu_solve trans T vector": (lambda la, a, b: la.lu_solve(la.lu_factor(a), b, trans=1),
                                [z(4, 4), z(4)]),
    "lu_solve trans 2": (lambda la, a, b: la.lu_solve(la.lu_factor(a), b, trans=2),
                         [z(3, 3), z(3, 2)]),
    "lu_solve trans 2 batched": (lambda la, a, b: la.lu_solve(la.lu_factor(a), b, trans=2),
                                 [z(2, 3, 3), z(3)]),
    "eigh values": (lambda la, a: la.eigh(a + H(a), eigvals_only=True), [z(3, 3)]),
    # (eigenvectors up to a phase: functions of |v|² and of V f(w) Vᴴ)
    "eigh vectors": (lambda la, a: wnp.abs(la.eigh(a + H(a))[1]) ** 2, [z(3, 3)]),
    "eigh upper": (lambda la, a: wnp.abs(la.eigh(a + H(a), lower=False)[1]) ** 2, [z(3, 3)]),
    "eigh V exp(w) Vᴴ": (lambda la, a: (lambda w, v: (v * wnp.exp(w)) @ H(v))(
        *la.eigh(a + H(a))), [0.5 * z(3, 3)]),
    "eigh subset": (lambda la, a: wnp.abs(la.eigh(a + H(a), subset_by_index=[1, 2])[1]) ** 2,
                    [z(4, 4)]),
    "eigh driver evd": (lambda la, a: la.eigh(a + H(a), driver="evd")[0], [z(3, 3)]),
    "eigvalsh batched": (lambda la, a: la.eigvalsh(a + H(a)), [z(2, 3, 3)]),
    "eigvalsh subset": (lambda la, a: la.eigvalsh(a + H(a), subset_by_index=(0, 1)),
                        [z(3, 3)]),
    "eigh generalized": (lambda la, a, b: wnp.abs(la.eigh(a + H(a), hpd(b))[1]) ** 2,
                         [z(3, 3), z(3, 3)]),
    "block_diag": (lambda la, a, b: la.block_diag(a, b, 2.0j), [z(2, 2), r(3)]),
    "sqrtm": (lambda la, a: la.sqrtm(hpd(a)), [z(3, 3)]),
    "sqrtm nonsymmetric": (lambda la, a: la.sqrtm(a), [zwell(3)]),
    "sqrtm batched": (lambda la, a: la.sqrtm(a), [zwell(3, 2)]),
    # a real matrix with a negative eigenvalue, as a complex one: its root is complex
    "sqrtm of a real matrix + 0j": (lambda la, a: la.sqrtm(a + 0j),
                                    [np.diag([4.0, -1.0, 2.0]) + 0.1 * r(3, 3)]),
}
# whose traced values are SciPy's function itself (the others compose NumPy's LAPACK calls,
# or SciPy's with other arguments: equal to rounding)
EXACT = {name for name in CASES if name.startswith(
    ("solve_triangular", "solve_banded", "expm", "solve_sylvester", "lu_factor",
     "eigh values", "eigh vectors", "eigh upper", "eigh subset", "eigh driver", "eigvalsh",
     "block_diag", "sqrtm", "solve lower"))}


def _f(name):
    call, args = CASES[name]
    return (lambda *a: call(linalg, *a)), args


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_equal_scipys_plain_and_traced(name):
    expected = check_values_equal_scipys(*CASES[name], name in EXACT)
    assert np.iscomplexobj(expected) or name.startswith("eig")


@pytest.mark.parametrize("name", sorted(CASES))
def test_derivatives_against_finite_differences_to_second_order(name):
    f, args = _f(name)
    check_complex_grads(f, *args, order=2)


def test_every_primitive_is_exercised_with_complex_matrices():
    seen = set()
    for name in CASES:
        seen |= _ops_exercised(*_f(name))
    declared = {name for name, p in REGISTRY.items() if p.builtin and any(
        p is v for v in vars(P).values())}
    assert declared <= seen, declared - seen
    assert all(REGISTRY[name].complex for name in declared)


def _rotating(n):
    """A real stable matrix with complex eigenvalues (a real Schur form with a 2×2 block)."""
    a = -2.0 * n * np.eye(n) + 0.3 * r(n, n)
    a[:2, :2] += [[0.0, 3.0], [-3.0, 0.0]]
    assert np.iscomplex(np.linalg.eigvals(a)).any()
    return a


@pytest.mark.parametrize("which", ["a", "b", "lyapunov"])
def test_a_real_matrix_with_complex_others_is_solved_as_complex(which):
    # SciPy 1.17's solve_sylvester and solve_continuous_lyapunov of a real A or B (with
    # complex eigenvalues) and complex others give no solution (scipy/scipy#26177): on
    # traced values the matrices are made complex first, as the fix proposed there does
    if which == "lyapunov":
        call = lambda a, b, q: linalg.solve_continuous_lyapunov(a, q)
        a, b, q = _rotating(3), None, z(3, 3)
        args, real = [a, q], 0
        residual = lambda x: a @ x + x @ a.T - q
    else:
        call = linalg.solve_sylvester
        a, b, q = (_rotating(3), zwell(2), z(3, 2)) if which == "a" else \
            (zwell(3), _rotating(2), z(3, 2))
        args, real = [a, b, q], 0 if which == "a" else 1
        residual = lambda x: a @ x + x @ b - q
    f = (lambda a, q: call(a, None, q)) if which == "lyapunov" else call
    x = wg.vjp(f, *args)[0]
    close(residual(x), 0.0, atol=1e-11)
    promoted = [x + 0j for x in args]
    close(x, f(*promoted), rtol=1e-11, atol=1e-12)        # SciPy's, all complex
    # the derivatives are those of that solution: a real matrix's gradient is the real
    # part (∂/∂x) of a complex one's (∂/∂x - i∂/∂y)
    loss = lambda *a: wnp.sum(wnp.abs(f(*a)) ** 2)
    argnums = tuple(range(len(args)))
    g = wg.grad(loss, argnums=argnums)(*args)
    gc = wg.grad(loss, argnums=argnums)(*promoted)
    assert g[real].dtype == np.float64
    for k in argnums:
        close(g[k], gc[k].real if k == real else gc[k], rtol=1e-10, atol=1e-12)


# ---- the gradient of a real loss ----------------------------------------------------------------
LOSSES = ["expm", "frechet derivative of expm", "solve_triangular trans C", "cho_solve",
          "solve her", "solve sym", "inv pos", "det", "lu_solve trans 2", "eigh vectors",
          "eigh V exp(w) Vᴴ", "sqrtm nonsymmetric", "solve_continuous_lyapunov",
          "solve_sylvester", "block_diag"]


@pytest.mark.parametrize("name", LOSSES)
def test_gradient_of_a_real_loss_against_differences_along_complex_directions(name):
    # loss = Σ |f|²: df = Re Σ g·dA with g = ∂/∂x - i ∂/∂y, along any complex direction,
    # a purely real one and a purely imaginary one
    f, args = _f(name)
    loss = lambda *a: wnp.sum(wnp.abs(f(*a)) ** 2)
    grads = wg.grad(loss, argnums=tuple(range(len(args))))(*args)
    eps = 1e-6
    for part in (lambda d: d, np.real, lambda d: 1j * np.imag(d)):
        ds = [part(z(*np.shape(a))) if np.iscomplexobj(a) else r(*np.shape(a))
              for a in args]
        up = loss(*[a + eps * d for a, d in zip(args, ds)])
        down = loss(*[a - eps * d for a, d in zip(args, ds)])
        want = (up - down) / (2 * eps)
        got = sum(np.real(np.sum(g * d)) for g, d in zip(grads, ds))
        close(got, want, rtol=1e-6, atol=1e-6)


def test_hessian_in_real_parameters_through_expm_and_solve():
    # real parameters θ of a Hermitian H(θ) = H0 + θ₀ H1 + θ₁ H2; a real loss of e^(-iH)
    # and of a solve with H + 3i: the Hessian against differences of the gradient
    h = [z(3, 3) for _ in range(3)]
    h = [m + m.conj().T for m in h]
    psi = z(3)

    def loss(theta):
        m = h[0] + theta[0] * h[1] + theta[1] * h[2]
        u = linalg.expm(-1j * m) @ psi
        x = linalg.solve(m + 3j * np.eye(3), psi)
        return wnp.sum(wnp.abs(u[:2]) ** 2) + wnp.real(wnp.vdot(x, u))

    theta = np.array([0.3, -0.7])
    hess = wg.hessian(loss)(theta)
    assert hess.dtype == np.float64
    eps = 1e-5
    fd = np.stack([(wg.grad(loss)(theta + eps * e) - wg.grad(loss)(theta - eps * e))
                   / (2 * eps) for e in np.eye(2)])
    close(hess, fd, rtol=1e-6, atol=1e-7)
    close(hess, hess.T, rtol=1e-12, atol=1e-13)


# ---- holomorphic=True --------------------------------------------------------------------------
_B = z(3)
_C = np.linalg.cholesky(hpd(z(3, 3)))

# name -> (f(module, x), x): module is wengert.scipy.linalg or jax.scipy.linalg
HOLOMORPHIC = {
    "expm": (lambda m, a: m.expm(a), 0.5 * z(3, 3)),
    "expm_frechet in a": (lambda m, a: m.expm_frechet(a, _B[:, None] * _B[None, :],
                                                      compute_expm=False), 0.5 * z(3, 3)),
    "expm_frechet in e": (lambda m, e: m.expm_frechet(0.5 * _C, e, compute_expm=False),
                          z(3, 3)),
    "solve_triangular": (lambda m, a: m.solve_triangular(a, _B, lower=True), zwell(3)),
    "solve_triangular trans T": (lambda m, a: m.solve_triangular(a, _B, trans=1), zwell(3)),
    "solve_triangular in b": (lambda m, b: m.solve_triangular(_C, b, lower=True), z(3)),
    "cho_solve in b": (lambda m, b: m.cho_solve((_C, True), b), z(3)),
    "lu_factor": (lambda m, a: m.lu_factor(a)[0], z(3, 3)),
    "lu_solve": (lambda m, a: m.lu_solve(m.lu_factor(a), _B), z(3, 3)),
    "lu_solve trans T": (lambda m, a: m.lu_solve(m.lu_factor(a), _B, trans=1), z(3, 3)),
    "inv": (lambda m, a: m.inv(a), zwell(3)),
    "det": (lambda m, a: m.det(a), z(3, 3)),
    "solve": (lambda m, a: m.solve(a, _B), zwell(3)),
    "solve in b": (lambda m, b: m.solve(_C, b), z(3)),
}


@pytest.mark.parametrize("name", sorted(HOLOMORPHIC))
def test_holomorphic_jacobians_are_jaxs(name, jax):
    import jax.scipy.linalg as jl
    f, x = HOLOMORPHIC[name]
    want = np.asarray(jax.jacfwd(lambda x: f(jl, x), holomorphic=True)(jax.numpy.asarray(x)))
    for jac in (wg.jacfwd, wg.jacrev):
        got = jac(lambda x: f(linalg, x), holomorphic=True)(x)
        assert got.dtype == np.complex128
        close(got, want, rtol=1e-9, atol=1e-11)


def test_holomorphic_second_derivatives_are_jaxs(jax):
    import jax.scipy.linalg as jl
    a = 0.5 * z(3, 3)
    f = lambda m, a: m.expm(a)[0, 1] * m.det(a)
    want = np.asarray(jax.hessian(lambda a: f(jl, a), holomorphic=True)(jax.numpy.asarray(a)))
    close(wg.hessian(lambda a: f(linalg, a), holomorphic=True)(a), want, rtol=1e-8,
          atol=1e-10)


def _along(jac, v):
    """The Jacobian (output axes, then input axes) applied to a direction v."""
    return np.tensordot(jac, v, axes=v.ndim)


# JAX has no derivative of solve_sylvester and sqrtm (its Schur decomposition has none),
# and no solve_banded:
# their holomorphic Jacobians against complex differences, and closed forms below
@pytest.mark.parametrize("f, x", [
    (lambda a: linalg.solve_sylvester(a, _C, T(a)), zwell(3)),
    (lambda q, a=zwell(3), b=zwell(2): linalg.solve_sylvester(a, b, q), z(3, 2)),
    (linalg.sqrtm, zwell(3)),
    (lambda ab: linalg.solve_banded((2, 1), ab, _B[:2].sum() * ab[1]),
     z(4, 3) + 8 * (np.arange(4) == 1)[:, None]),
    (lambda a: linalg.expm_frechet(a, a @ a)[1], 0.5 * z(3, 3)),
])
def test_holomorphic_jacobians_against_complex_differences(f, x):
    eps = 1e-6
    for jac in (wg.jacfwd(f, holomorphic=True)(x), wg.jacrev(f, holomorphic=True)(x)):
        for v in (z(*x.shape), r(*x.shape), 1j * r(*x.shape)):     # complex-linear
            close(_along(jac, v), (f(x + eps * v) - f(x - eps * v)) / (2 * eps),
                  rtol=1e-6, atol=1e-7)


def test_sylvester_and_sqrtm_jacobians_invert_their_equations():
    a, b = zwell(3), zwell(2)
    # X(Q) solves AX + XB = Q: its Jacobian applied to AE + EB is E
    jac = wg.jacfwd(lambda q: linalg.solve_sylvester(a, b, q), holomorphic=True)(z(3, 2))
    e = z(3, 2)
    close(_along(jac, a @ e + e @ b), e, rtol=1e-10, atol=1e-12)
    # sqrtm(X²) = X for X with eigenvalues in the right half-plane: the identity
    x = zwell(3)
    jac = wg.jacrev(lambda x: linalg.sqrtm(x @ x), holomorphic=True)(x)
    close(jac.reshape(9, 9), np.eye(9), rtol=1e-8, atol=1e-9)


def test_non_holomorphic_functions_are_not_complex_linear():
    # (a check that the Hermitian readers' derivatives are not taken for holomorphic ones:
    # a JVP along i·v is not i times the JVP along v)
    a, v = z(3, 3), z(3, 3)
    for f in (lambda a: linalg.cholesky(hpd(a)), lambda a: linalg.inv(a, assume_a="her"),
              lambda a: linalg.solve_triangular(a, _B, trans="C")):
        t = wg.jvp(f, (a,), (v,))[1]
        ti = wg.jvp(f, (a,), (1j * v,))[1]
        assert not np.allclose(ti, 1j * t)


# ---- Hermitian readers: the Hermitian derivative ---------------------------------------------
@pytest.mark.parametrize("f", [
    lambda a: linalg.cholesky(a),
    lambda a: linalg.cholesky(a, lower=True),
    lambda a: linalg.cho_solve(linalg.cho_factor(a), _B),
    lambda a: linalg.eigh(a)[0],
    lambda a: linalg.eigh(a, lower=False)[0],
    lambda a: wnp.abs(linalg.eigh(a)[1]) ** 2,
    lambda a: linalg.inv(a, assume_a="her"),
    lambda a: linalg.solve(a, _B, assume_a="pos", lower=True),
    lambda a: linalg.solve(a, _B, assume_a="her"),
], ids=["cholesky", "cholesky lower", "cho_solve", "eigh values", "eigh upper values",
        "eigh vectors", "inv her", "solve pos", "solve her"])
def test_hermitian_readers_see_the_hermitian_part_of_a_change(f):
    a = hpd(z(3, 3))
    d = z(3, 3)
    herm = (d + d.conj().T) / 2
    t = wg.jvp(f, (a,), (d,))[1]
    close(t, wg.jvp(f, (a,), (herm,))[1], rtol=1e-11, atol=1e-12)
    eps = 1e-6
    close(t, (f(a + eps * herm) - f(a - eps * herm)) / (2 * eps), rtol=1e-6, atol=1e-7)
    # the gradient of a real function is Hermitian too (the conjugate of a Hermitian one)
    g = wg.grad(lambda a: wnp.sum(wnp.abs(f(a)) ** 2))(a)
    close(g, g.conj().T, rtol=1e-11, atol=1e-12)


def test_her_ignores_the_imaginary_part_of_the_diagonal_and_sym_is_holomorphic():
    a, b = zwell(3), z(3)
    h = a + a.conj().T + 1j * np.diag([1.0, -2.0, 0.5])      # (not Hermitian: LAPACK's
    for lower in (False, True):                               # Hermitian solvers read
        want = sl.solve(h, b, assume_a="her", lower=lower)    # Re of the diagonal)
        close(wg.vjp(lambda h: linalg.solve(h, b, assume_a="her", lower=lower), h)[0], want)
        close(want, np.linalg.solve(h - 1j * np.diag(np.diag(h).imag), b))
    # 'sym' reads a complex symmetric matrix: holomorphic, with the symmetric derivative
    s = a + a.T
    jac = wg.jacfwd(lambda s: linalg.inv(s, assume_a="sym"), holomorphic=True)(s)
    sinv = np.linalg.inv(s)
    full = -np.einsum("ik,lj->ijkl", sinv, sinv)
    close(jac, (full + full.transpose(0, 1, 3, 2)) / 2, rtol=1e-10, atol=1e-12)


def test_eigh_vectors_are_scipys_and_eigh_agrees_with_the_generalized_problem():
    a = z(4, 4)
    a = a + a.conj().T
    for kw in ({}, {"lower": False}, {"subset_by_index": [1, 3]}, {"driver": "evx"}):
        w, v = wg.vjp(lambda a: linalg.eigh(a, **kw), a)[0]
        ws, vs = sl.eigh(a, **kw)
        np.testing.assert_array_equal(v, vs)
        np.testing.assert_array_equal(w, ws)
        assert w.dtype == np.float64 and v.dtype == np.complex128
    # eigh(a) and eigh(a, I) are one problem: the same gradients of phase-free functions
    f = lambda w, v: wnp.sum(w ** 3) + wnp.sum(wnp.abs(v[:2]) ** 4)
    g1 = wg.grad(lambda a: f(*linalg.eigh(a)))(a)
    g2 = wg.grad(lambda a: f(*linalg.eigh(a, np.eye(4))))(a)
    close(g1, g2, rtol=1e-9, atol=1e-11)


def test_float32_and_complex64_stay_single_precision():
    a = zwell(3).astype(np.complex64)
    for f in (linalg.expm, linalg.sqrtm, lambda a: linalg.solve_triangular(a, a[0], trans=2),
              lambda a: linalg.lu_factor(a)[0], lambda a: linalg.solve_sylvester(a, a, a),
              lambda a: linalg.eigh(a + H(a))[1], lambda a: linalg.inv(a, assume_a="her"),
              lambda a: linalg.cho_solve(linalg.cho_factor(
                  a @ H(a) + np.eye(3, dtype=np.float32)), a[0])):
        value, g = wg.value_and_grad(lambda a: wnp.sum(wnp.abs(f(a)) ** 2))(a)
        assert wg.vjp(f, a)[0].dtype == f(a).dtype == np.complex64
        assert g.dtype == np.complex64
    assert wg.vjp(lambda a: linalg.eigvalsh(a + H(a)), a)[0].dtype == np.float32


# ---- quantum dynamics: e^(-iHt) ------------------------------------------------------------------
def test_time_derivative_of_the_propagator_is_minus_i_h_times_it():
    h = z(4, 4)
    h = h + h.conj().T
    w, v = np.linalg.eigh(h)
    u = lambda t: linalg.expm(-1j * t * h)
    for t in (0.0, 0.7, 2.5):
        exact = (v * np.exp(-1j * w * t)) @ v.conj().T          # V e^(-iwt) Vᴴ
        close(u(t), exact, rtol=1e-12, atol=1e-12)
        close(wg.jvp(u, (t,), (1.0,))[1], -1j * h @ exact, rtol=1e-10, atol=1e-11)
        # second derivative -H² U, and the derivative's real and imaginary parts
        d2 = wg.jacfwd(lambda t: wnp.real(wg.jvp(u, (t,), (1.0,))[1]))(t)
        close(d2, np.real(-h @ h @ exact), rtol=1e-9, atol=1e-10)
    # ⟨ψ|e^(iHt) A e^(-iHt)|ψ⟩ (a Heisenberg-picture expectation): d/dt is ⟨ψ(t)|i[H, A]|ψ(t)⟩
    obs = z(4, 4)
    obs = obs + obs.conj().T
    psi = z(4)
    psi = psi / np.linalg.norm(psi)

    def expectation(t):
        phi = u(t) @ psi
        return wnp.real(wnp.vdot(phi, obs @ phi))
    phi = u(0.9) @ psi
    want = np.real(np.vdot(phi, 1j * (h @ obs - obs @ h) @ phi))
    close(wg.grad(expectation)(0.9), want, rtol=1e-9, atol=1e-11)


def _gate_fidelity(ux, uz, t=1.0):
    """|tr(Xᴴ U)/2|² for U = exp(-i t (ux σx + uz σz)/2) and the NOT gate X = σx."""
    sx = np.array([[0.0, 1.0], [1.0, 0.0]])
    sz = np.diag([1.0, -1.0])
    u = linalg.expm(-0.5j * t * (ux * sx + uz * sz))
    return wnp.abs(wnp.trace(sx @ u) / 2) ** 2


def test_two_level_gate_fidelity_gradient_is_the_closed_form():
    # U = cos(θ/2) I - i sin(θ/2) n·σ with θ = |u| t, n = u/|u|: tr(σx U)/2 = -i sin(θ/2) n_x,
    # so F = sin²(ρt/2) ux²/ρ², ρ = |u|, with
    # ∂F/∂ux = t sin(ρt/2) cos(ρt/2) ux³/ρ³ + sin²(ρt/2) (2ux/ρ² - 2ux³/ρ⁴)
    # ∂F/∂uz = t sin(ρt/2) cos(ρt/2) uz ux²/ρ³ - sin²(ρt/2) 2 ux² uz/ρ⁴
    for ux, uz, t in ((1.3, 0.4, 1.0), (2.0, -1.1, 0.6), (0.2, 2.5, 2.0)):
        rho = np.hypot(ux, uz)
        s, c = np.sin(rho * t / 2), np.cos(rho * t / 2)
        assert np.isclose(_gate_fidelity(ux, uz, t), s ** 2 * ux ** 2 / rho ** 2, rtol=1e-12)
        dux = t * s * c * ux ** 3 / rho ** 3 + s ** 2 * (2 * ux / rho ** 2 - 2 * ux ** 3 / rho ** 4)
        duz = t * s * c * uz * ux ** 2 / rho ** 3 - s ** 2 * 2 * ux ** 2 * uz / rho ** 4
        g = wg.grad(_gate_fidelity, argnums=(0, 1))(ux, uz, t)
        assert type(g[0]) is float
        close(g, (dux, duz), rtol=1e-9, atol=1e-12)
    # a π pulse along x is the NOT gate (F = 1, a maximum: zero gradient)
    close(wg.grad(_gate_fidelity, argnums=(0, 1))(np.pi, 0.0), (0.0, 0.0), atol=1e-12)


def _grape_fidelity(u, h0, hc, target, dt):
    """|tr(Vᴴ U)/n|² for piecewise-constant controls u (steps × controls): U the product
    of exp(-i (H0 + Σ_k u_jk H_k) dt) over the steps j."""
    n = h0.shape[0]
    prop = np.eye(n) + 0j
    for j in range(u.shape[0]):
        hj = h0 + wnp.einsum("k,kab->ab", u[j], hc)
        prop = linalg.expm(-1j * dt * hj) @ prop
    return wnp.abs(wnp.trace(H(target) @ prop) / n) ** 2


def test_grape_gradient_and_hessian_against_differences():
    # two coupled qubits: a drift ZZ coupling, x and y controls on each qubit
    sx, sy, sz = (np.array([[0, 1], [1, 0]]), np.array([[0, -1j], [1j, 0]]),
                  np.diag([1.0, -1.0]))
    eye = np.eye(2)
    h0 = 0.5 * np.kron(sz, sz)
    hc = np.stack([np.kron(sx, eye), np.kron(sy, eye), np.kron(eye, sx), np.kron(eye, sy)])
    target = np.diag([1, 1, 1, -1.0])                        # a CZ gate
    u = 0.3 * r(5, 4)
    f = lambda u: _grape_fidelity(u, h0, hc, target, 0.4)
    g = wg.grad(f)(u)
    assert g.dtype == np.float64 and g.shape == u.shape
    eps = 1e-6
    for d in (r(5, 4), np.eye(20)[3].reshape(5, 4)):
        close(np.sum(g * d), (f(u + eps * d) - f(u - eps * d)) / (2 * eps), rtol=1e-6,
              atol=1e-9)
    d = r(5, 4)
    hv = wg.hvp(f)(u, d)
    close(hv, (wg.grad(f)(u + eps * d) - wg.grad(f)(u - eps * d)) / (2 * eps), rtol=1e-5,
          atol=1e-8)
    # and compiled: the same numbers
    close(wg.compile(wg.grad(f), u)(u + 0.1), wg.grad(f)(u + 0.1),
          rtol=1e-12, atol=1e-14)


# ---- vmap, compile -------------------------------------------------------------------------------
_A = zwell(3)
VMAP = {
    "expm": (linalg.expm, [0.5 * z(4, 3, 3)]),
    "expm of -iHt": (lambda t: linalg.expm(-1j * t * (_A + H(_A))), [r(4)]),
    "solve_triangular trans C": (lambda a, b: linalg.solve_triangular(a, b, trans="C"),
                                 [zwell(3, 4), z(4, 3, 2)]),
    "solve_triangular shared a": (lambda b: linalg.solve_triangular(_A, b, trans=2),
                                  [z(4, 3)]),
    "cho_solve": (lambda a, b: linalg.cho_solve(linalg.cho_factor(hpd(a)), b),
                  [z(4, 3, 3), z(4, 3)]),
    "lu_solve": (lambda a, b: linalg.lu_solve(linalg.lu_factor(a), b, trans=2),
                 [zwell(3, 4), z(4, 3)]),
    "eigh": (lambda a: wnp.abs(linalg.eigh(a + H(a))[1]) ** 2, [z(4, 3, 3)]),
    "sqrtm": (linalg.sqrtm, [zwell(3, 4)]),
    "solve_sylvester": (lambda a, q: linalg.solve_sylvester(a, _A, q),
                        [zwell(3, 4), z(4, 3, 3)]),
    "inv her": (lambda a: linalg.inv(a + H(a), assume_a="her"), [zwell(3, 4)]),
}


@pytest.mark.parametrize("name", sorted(VMAP))
def test_vmap_matches_a_loop_without_looping(name, loops):
    f, args = VMAP[name]
    size = args[0].shape[0]
    got = wg.vmap(f)(*args)
    loop = np.stack([f(*[x[k] for x in args]) for k in range(size)])
    close(got, loop, rtol=1e-10, atol=1e-12)
    assert not loops, loops
    g = lambda *a: wnp.sum(wnp.abs(f(*a)) ** 2)
    argnums = tuple(range(len(args)))
    batched = wg.vmap(wg.grad(g, argnums=argnums))(*args)
    for k in range(size):
        one = wg.grad(g, argnums=argnums)(*[x[k] for x in args])
        for b, o in zip(batched, one):
            close(b[k], o, rtol=1e-9, atol=1e-11)
    assert not loops, loops


@pytest.mark.parametrize("name", ["expm", "expm of -iHt", "solve_triangular trans C",
                                  "cho_solve", "lu_solve", "eigh", "sqrtm", "inv her"])
def test_compile_matches_eager(name):
    f, args = VMAP[name]
    first, second = [x[0] for x in args], [x[1] for x in args]
    close(wg.compile(f, *first)(*second), f(*second), rtol=1e-12, atol=1e-14)
    g = wg.grad(lambda *a: wnp.sum(wnp.abs(f(*a)) ** 2), argnums=tuple(range(len(args))))
    for c, e in zip(wg.compile(g, *first)(*second), g(*second)):
        close(c, e, rtol=1e-10, atol=1e-12)


# ---- what stays refused -------------------------------------------------------------------------
def test_what_scipy_refuses_for_complex_matrices_is_refused_on_traced_values():
    # solve(..., transposed=True) of a complex a, or of a real a with a complex b (SciPy
    # makes a complex then): SciPy's NotImplementedError
    for a, b in ((zwell(3), z(3)), (zwell(3), r(3)), (zwell(3).real, z(3))):
        with pytest.raises(NotImplementedError, match="can currently not solve a"):
            sl.solve(a, b, transposed=True)                    # SciPy's own
        with pytest.raises(NotImplementedError, match=r"can currently not solve a\^T x = b"):
            wg.grad(lambda a, b: wnp.sum(wnp.abs(linalg.solve(a, b, transposed=True))))(a, b)



def test_sqrtm_of_a_real_matrix_with_a_complex_root_says_pass_it_as_complex():
    a = np.diag([4.0, -1.0])
    assert np.iscomplexobj(linalg.sqrtm(a))                    # SciPy's, on plain values
    with pytest.raises(NotImplementedError, match=r"complex.*\(a \+ 0j\)"):
        wg.grad(lambda a: wnp.sum(wnp.abs(linalg.sqrtm(a))))(a)
    root = wg.vjp(lambda a: linalg.sqrtm(a + 0j), a)[0]
    close(root, np.diag([2.0, 1j]), atol=1e-15)


def test_taylor_mode_and_unsupported_functions_refuse_complex_matrices_by_name():
    a = 0.5 * z(3, 3)
    with pytest.raises(TypeError, match="complex"):
        wg.taylor(linalg.expm, a, a, order=2)
    with pytest.raises(NotImplementedError, match="scipy.linalg.logm"):
        wg.grad(lambda a: wnp.sum(wnp.abs(linalg.logm(a))))(a)
