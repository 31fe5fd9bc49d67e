"""wengert.scipy.sparse.linalg's Krylov solvers cg, gmres and bicgstab (SciPy's and JAX's):
values against numpy.linalg.solve, SciPy and JAX; derivatives in b and in A against closed
forms and central differences, to second order; function A on pytrees, preconditioners,
starts, sparse matrices, jit and vmap; warnings and clear errors."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla

import wengert as wg
import wengert.numpy as wnp
from wengert.scipy.sparse import csr_array
from wengert.scipy.sparse.linalg import bicgstab, cg, gmres
from fd import assert_close, check_grads

rng = np.random.default_rng(46)
N = 7
SOLVERS = {"cg": cg, "gmres": gmres, "bicgstab": bicgstab}


def matrix(name, n=N, seed=0):
    """A well-conditioned test matrix: symmetric positive definite for cg, general else."""
    r = np.random.default_rng(seed)
    B = r.normal(size=(n, n))
    return B @ B.T + n * np.eye(n) if name == "cg" else B + 2 * np.sqrt(n) * np.eye(n)


def solve_with(name, **options):
    method = SOLVERS[name]
    return lambda A, b: method(A, b, rtol=1e-13, **options)[0]


# ---- values -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", SOLVERS)
def test_values_and_info_are_scipys(name):
    A, b = matrix(name), rng.normal(size=N)
    x, info = SOLVERS[name](A, b, rtol=1e-12)
    ref, ref_info = getattr(sla, name)(A, b, rtol=1e-12)
    assert info == ref_info == 0
    assert_close(x, ref, rtol=1e-14, atol=1e-15)
    assert_close(x, np.linalg.solve(A, b), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", SOLVERS)
def test_unconverged_gives_scipys_info(name):
    A, b = matrix(name, n=40), rng.normal(size=40)
    x, info = SOLVERS[name](A, b, maxiter=1, rtol=1e-14)
    assert info > 0
    assert np.linalg.norm(A @ x - b) > 1e-14 * np.linalg.norm(b)


@pytest.mark.parametrize("name", SOLVERS)
def test_sparse_matrix_function_and_preconditioner(name):
    A = matrix(name)
    b = rng.normal(size=N)
    want = np.linalg.solve(A, b)
    method = SOLVERS[name]
    for operator in (sp.csr_array(A), lambda x: A @ x, sla.aslinearoperator(A)):
        assert_close(method(operator, b, rtol=1e-12)[0], want, rtol=1e-9, atol=1e-11)
    jacobi = np.diag(1 / np.diag(A))
    for M in (jacobi, lambda r: jacobi @ r, sp.csr_array(jacobi)):
        x, info = method(A, b, rtol=1e-12, M=M)
        assert info == 0
        assert_close(x, want, rtol=1e-9, atol=1e-11)
    # a start at the solution: nothing to do
    assert_close(method(A, b, x0=want, rtol=1e-10)[0], want, rtol=1e-12, atol=1e-14)


def test_pytree_right_hand_side_with_a_function():
    """JAX's form: A a function of pytrees, b a dict."""
    A1, A2 = matrix("cg", 3, seed=1), matrix("cg", 2, seed=2)
    b = {"u": rng.normal(size=3), "w": rng.normal(size=(2, 1))}
    apply = lambda t: {"u": A1 @ t["u"], "w": A2 @ t["w"]}
    x, info = cg(apply, b, tol=1e-12)
    assert info == 0
    assert_close(x["u"], np.linalg.solve(A1, b["u"]), rtol=1e-10, atol=1e-12)
    assert_close(x["w"], np.linalg.solve(A2, b["w"]), rtol=1e-10, atol=1e-12)
    g = wg.grad(lambda b: wnp.sum(cg(apply, b, tol=1e-13)[0]["w"]))(b)
    assert_close(g["w"][:, 0], np.linalg.solve(A2.T, np.ones(2)), rtol=1e-9, atol=1e-12)
    assert_close(g["u"], np.zeros(3), atol=1e-14)


@pytest.mark.parametrize("name", SOLVERS)
def test_matches_jax(name, jax):
    import jax.scipy.sparse.linalg as jsla
    A, b = matrix(name), rng.normal(size=N)
    ours = SOLVERS[name](A, b, tol=1e-12)[0]
    theirs = getattr(jsla, name)(A, b, tol=1e-12)[0]
    assert_close(ours, np.asarray(theirs), rtol=1e-9, atol=1e-11)
    loss = lambda solve, wnp: lambda A: wnp.sum(wnp.sin(solve(A, b, tol=1e-12)[0]))
    g = wg.grad(loss(SOLVERS[name], wnp))(A)
    g_jax = jax.grad(loss(getattr(jsla, name), jax.numpy))(A)
    assert_close(g, np.asarray(g_jax), rtol=1e-8, atol=1e-10)


# ---- derivatives --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", SOLVERS)
def test_derivatives_in_b_are_rows_of_the_inverse(name):
    A, b = matrix(name), rng.normal(size=N)
    solve = solve_with(name)
    inverse = np.linalg.inv(A)
    assert_close(wg.jacfwd(lambda b: solve(A, b))(b), inverse, rtol=1e-9, atol=1e-12)
    assert_close(wg.jacrev(lambda b: solve(A, b))(b), inverse, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", SOLVERS)
def test_derivatives_in_A_closed_form(name):
    """∂x/∂A_jk = -A⁻¹[:, j] x_k, from A x = b."""
    A, b = matrix(name), rng.normal(size=N)
    solve = solve_with(name)
    x, inverse = np.linalg.solve(A, b), np.linalg.inv(A)
    want = -np.einsum("ij,k->ijk", inverse, x)
    assert_close(wg.jacrev(lambda A: solve(A, b))(A), want, rtol=1e-8, atol=1e-12)
    assert_close(wg.jacfwd(lambda A: solve(A, b))(A), want, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("name", SOLVERS)
def test_second_order_against_central_differences(name):
    A, b = matrix(name, n=4, seed=3), rng.normal(size=4)
    solve = solve_with(name)
    f = lambda A, b: wnp.tanh(solve(A, b))
    check_grads(f, A, b, order=2, rtol=1e-5)
    H = wg.hessian(lambda b: wnp.sum(solve(A, b) ** 2))(b)
    inverse = np.linalg.inv(A)
    assert_close(H, 2 * inverse.T @ inverse, rtol=1e-8, atol=1e-12)


def test_matrix_free_closure_is_differentiated():
    """A function A closing over a traced parameter: the derivative in it (the adjoint
    method), here for (D + t L) x = b with L a Laplacian."""
    n = 6
    L = 2 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    D = np.diag(np.arange(1.0, n + 1))
    b = rng.normal(size=n)

    def energy(t):
        x = cg(lambda v: D @ v + t * (L @ v), b, rtol=1e-13)[0]
        return x @ b

    t = 0.7
    want = -np.linalg.solve(D + t * L, b) @ L @ np.linalg.solve(D + t * L, b)
    assert_close(wg.grad(energy)(t), want, rtol=1e-8, atol=1e-12)
    check_grads(lambda t: energy(t), np.array(t), order=2)


def test_sparse_matrix_with_traced_entries():
    A = matrix("gmres", seed=5)
    A[np.abs(A) < 0.5] = 0.0
    pattern = sp.csr_array(A)
    b = rng.normal(size=N)

    def x0(data):
        M = csr_array((data, pattern.indices, pattern.indptr), shape=A.shape)
        return gmres(M, b, rtol=1e-13)[0][0]
    g = wg.grad(x0)(pattern.data.copy())
    x, row = np.linalg.solve(A, b), np.linalg.inv(A)[0]
    rows = np.repeat(np.arange(N), np.diff(pattern.indptr))
    assert_close(g, -row[rows] * x[pattern.indices], rtol=1e-8, atol=1e-12)


# ---- transformations ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", SOLVERS)
def test_jit_and_vmap(name):
    A = matrix(name)
    bs = rng.normal(size=(3, N))
    solve = solve_with(name)
    want = np.linalg.solve(A, bs.T).T
    assert_close(wg.jit(solve)(A, bs[0]), want[0], rtol=1e-9, atol=1e-12)
    assert_close(wg.vmap(lambda b: solve(A, b))(bs), want, rtol=1e-9, atol=1e-12)
    grads = wg.vmap(wg.grad(lambda b: wnp.sum(solve(A, b))))(bs)
    assert_close(grads, np.tile(np.linalg.solve(A.T, np.ones(N)), (3, 1)), rtol=1e-9,
                 atol=1e-12)
    loss = lambda A, b: wnp.sum(solve(A, b) ** 2)
    assert_close(wg.jit(wg.grad(loss))(A, bs[0]), wg.grad(loss)(A, bs[0]), rtol=1e-12,
                 atol=1e-14)


def test_traced_unconverged_solve_warns_and_returns_its_iterate():
    A, b = matrix("cg", n=40), rng.normal(size=40)
    with pytest.warns(RuntimeWarning, match=r"cg: the solve did not reach rtol=1e-14"):
        x, info = wg.jit(lambda b: cg(A, b, maxiter=2, rtol=1e-14))(b)
    assert info is None
    assert_close(x, cg(A, b, maxiter=2, rtol=1e-14)[0], rtol=1e-12, atol=1e-14)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wg.grad(lambda b: wnp.sum(cg(A, b, rtol=1e-10)[0]))(b)     # converged: quiet


# ---- errors -------------------------------------------------------------------------------------
def test_clear_errors():
    A, b = matrix("cg"), rng.normal(size=N)
    with pytest.raises(ValueError, match=r"A of shape \(7, 7\) takes a vector b of shape "
                                         r"\(7,\), got \(5,\)"):
        cg(A, np.ones(5))
    with pytest.raises(ValueError, match=r"square matrix, got shape \(7, 3\)"):
        gmres(A[:, :3], b)
    with pytest.raises(TypeError, match="tol .JAX's name. and rtol"):
        cg(A, b, tol=1e-3, rtol=1e-3)
    with pytest.raises(ValueError, match="rtol must be a number ≥ 0"):
        cg(A, b, rtol=-1.0)
    with pytest.raises(ValueError, match="maxiter must be a positive integer"):
        bicgstab(A, b, maxiter=0)
    with pytest.raises(ValueError, match="solve_method must be"):
        gmres(A, b, solve_method="fast")
    with pytest.raises(ValueError, match=r"x0 must have the shapes of b, \[\(7,\)\], got \[\(3,\)\]"):
        cg(A, b, x0=np.ones(3))
    with pytest.raises(ValueError, match=r"M must be a square matrix of the unknowns' size 7"):
        cg(A, b, M=np.eye(3))
    with pytest.raises(TypeError, match="LinearOperator A applies to numbers only"):
        wg.grad(lambda b: wnp.sum(cg(sla.aslinearoperator(A), b)[0]))(b)
    with pytest.raises(ValueError, match="M is traced without values"):
        wg.jit(lambda d, b: cg(A, b, M=wnp.diag(d))[0])(np.diag(A), b)
