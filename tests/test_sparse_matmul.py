"""A constant scipy.sparse matrix times traced values (wengert.scipy.sparse): every format,
spmatrix and sparray, every way of writing the product, checked against the dense
matrix A.toarray() and central differences; vmap, compile, Taylor mode, complex values,
spsolve, and the operations that are refused."""
import numpy as np
import pytest

sp = pytest.importorskip("scipy.sparse")

import wengert as wg  # noqa: E402
import wengert.numpy as wnp  # noqa: E402
from wengert.scipy.sparse.linalg import spsolve  # noqa: E402
from fd import assert_close, check_grads, check_complex_grads, fd_jacobian  # noqa: E402

rng = np.random.default_rng(7)
FORMATS = ["csr", "csc", "coo", "dia", "bsr", "lil", "dok"]


def random_sparse(m, n, fmt="csr", array=False, dtype=np.float64, density=0.4):
    dense = rng.normal(size=(m, n)) * (rng.uniform(size=(m, n)) < density)
    if np.dtype(dtype).kind == "c":
        dense = dense + 1j * rng.normal(size=(m, n)) * (dense != 0)
    dense = dense.astype(dtype)
    return (sp.coo_array if array else sp.coo_matrix)(dense).asformat(fmt)


# the ways of writing the product, each with its dense equivalent
PRODUCTS = {
    "A @ x": (lambda A, x: A @ x, lambda D, x: D @ x),
    "A.dot(x)": (lambda A, x: A.dot(x), lambda D, x: D @ x),
    "x @ A": (lambda A, x: x @ A, lambda D, x: x @ D),
    "wnp.matmul(A, x)": (lambda A, x: wnp.matmul(A, x), lambda D, x: D @ x),
    "wnp.dot(A, x)": (lambda A, x: wnp.dot(A, x), lambda D, x: D @ x),
    "np.matmul(A, x)": (lambda A, x: np.matmul(A, x), lambda D, x: D @ x),
    "x.dot(A)": (lambda A, x: x.dot(A), lambda D, x: x @ D),
}
MATRIX_ONLY = {                                         # spmatrix: * is the matrix product
    "A * x": (lambda A, x: A * x, lambda D, x: D @ x),
    "x * A": (lambda A, x: x * A, lambda D, x: x @ D),
}


def _operand(name, m, n, cols):
    """A dense operand for product `name` with an m×n matrix: length n (A @ x) or m
    (x @ A), and `cols` columns (rows for x @ A) if not None."""
    left = name.startswith("A") or "(A, x)" in name
    k = n if left else m
    if cols is None:
        return rng.normal(size=k)
    return rng.normal(size=(k, cols)) if left else rng.normal(size=(cols, k))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("array", [False, True], ids=["spmatrix", "sparray"])
def test_every_format_differentiates_as_the_dense_matrix(fmt, array):
    A = random_sparse(5, 4, fmt, array)
    D = A.toarray()
    x = rng.normal(size=4)
    f = lambda x: wnp.sin(A @ x) * (A @ x)
    assert_close(f(x), np.sin(D @ x) * (D @ x), rtol=1e-12, atol=1e-12)
    g = wg.grad(lambda x: wnp.sum(f(x) ** 2))(x)
    expected = wg.grad(lambda x: wnp.sum((wnp.sin(D @ x) * (D @ x)) ** 2))(x)
    assert_close(g, expected, rtol=1e-10, atol=1e-12)
    check_grads(f, x)


@pytest.mark.parametrize("name", sorted(PRODUCTS) + sorted(MATRIX_ONLY))
@pytest.mark.parametrize("cols", [None, 1, 3], ids=["1-D", "2-D(k,1)", "2-D(k,3)"])
def test_every_spelling_of_the_product_gives_scipys_value_and_the_dense_derivative(name, cols):
    product, dense = {**PRODUCTS, **MATRIX_ONLY}[name]
    A = random_sparse(3, 5, "csr", array=False)      # rectangular: transposes must be right
    D = A.toarray()
    x = _operand(name, 3, 5, cols)
    # SciPy's own result, shape and dtype (NumPy's matmul and ndarray.dot do not take a
    # sparse matrix on plain values: SciPy's operator is the reference)
    plain = A @ x if name.startswith("A") or "(A, x)" in name else x @ A
    traced = []
    out, back = wg.vjp(lambda x: traced.append(product(A, x)) or traced[-1], x)
    assert type(traced[0]) is wg.Node and traced[0].op.name in ("sparse_matmul", "transpose")
    assert isinstance(out, np.ndarray) and out.shape == np.shape(plain) and \
        out.dtype == np.asarray(plain).dtype
    assert_close(out, plain, rtol=1e-12, atol=1e-12)
    ct = rng.normal(size=out.shape)
    _, dense_back = wg.vjp(lambda x: dense(D, x), x)
    assert_close(back(ct)[0], dense_back(ct)[0], rtol=1e-12, atol=1e-12)
    if name in ("A @ x", "A.dot(x)", "x @ A", "A * x", "x * A"):
        # (central differences call f on plain arrays, where NumPy's matmul and
        # ndarray.dot refuse a sparse matrix: only SciPy's operators take one)
        check_grads(lambda x: wnp.tanh(product(A, x)), x)


@pytest.mark.parametrize("array", [False, True], ids=["spmatrix", "sparray"])
def test_jacobians_are_the_matrix_and_its_transpose(array):
    A = random_sparse(4, 6, "csc", array)
    D = A.toarray()
    x, y = rng.normal(size=6), rng.normal(size=4)
    for jac in (wg.jacfwd, wg.jacrev):
        assert_close(jac(lambda x: A @ x)(x), D, rtol=1e-14, atol=1e-14)
        assert_close(jac(lambda y: y @ A)(y), D.T, rtol=1e-14, atol=1e-14)
        X = rng.normal(size=(6, 2))
        assert_close(jac(lambda X: A @ X)(X), np.einsum("ij,kl->ikjl", D, np.eye(2)),
                     rtol=1e-14, atol=1e-14)


def test_hessian_of_a_nonlinear_function_of_the_product():
    A = random_sparse(6, 5, "coo", array=True)
    D = A.toarray()
    x = rng.normal(size=5)
    f = lambda x: wnp.sum(wnp.exp(0.3 * (A @ x))) * wnp.sum(wnp.cos(x @ A.T @ A))
    fd = lambda x: wnp.sum(wnp.exp(0.3 * (D @ x))) * wnp.sum(wnp.cos(x @ D.T @ D))
    H = wg.hessian(f)(x)
    assert_close(H, wg.hessian(fd)(x), rtol=1e-10, atol=1e-12)
    assert_close(H, fd_jacobian(wg.grad(f), x, 1e-5), rtol=1e-6, atol=1e-8)
    assert_close(wg.jacfwd(wg.jacrev(f))(x), H, rtol=1e-10, atol=1e-12)
    v = rng.normal(size=5)
    assert_close(wg.hvp(f)(x, v), H @ v, rtol=1e-10, atol=1e-12)


def test_taylor_mode_through_the_product():
    A = random_sparse(4, 4, "dia")
    D = A.toarray()
    x, v = rng.normal(size=4), rng.normal(size=4)
    got = wg.taylor(lambda x: wnp.sin(A @ x), x, v, order=4)
    want = wg.taylor(lambda x: wnp.sin(D @ x), x, v, order=4)
    for g, w in zip(got, want):
        assert_close(g, w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fmt", ["csr", "bsr", "lil"])
def test_vmap_folds_the_batch_into_columns(fmt, loops):
    A = random_sparse(3, 5, fmt, array=True)
    D = A.toarray()
    X = rng.normal(size=(4, 5))
    assert_close(wg.vmap(lambda x: A @ x)(X), X @ D.T, rtol=1e-12, atol=1e-12)
    Y = rng.normal(size=(4, 3))
    assert_close(wg.vmap(lambda y: y @ A)(Y), Y @ D, rtol=1e-12, atol=1e-12)
    Z = rng.normal(size=(4, 5, 2))                       # a matrix per example
    assert_close(wg.vmap(lambda z: A @ z)(Z), np.einsum("ij,bjk->bik", D, Z),
                 rtol=1e-12, atol=1e-12)
    grads = wg.vmap(wg.grad(lambda x: wnp.sum(wnp.sin(A @ x))))(X)
    assert_close(grads, np.cos(X @ D.T) @ D, rtol=1e-12, atol=1e-12)
    assert "sparse_matmul" not in loops                  # one product for the whole batch


def test_compile_holds_the_matrix_as_a_constant():
    A = random_sparse(5, 5, "csr", array=False)
    D = A.toarray()
    f = lambda x: wnp.sum(wnp.sin(A @ x) ** 2) + wnp.sum(x @ A)
    x = rng.normal(size=5)
    cf = wg.compile(f, x)
    assert "sparse_matmul" in cf.source
    for _ in range(2):
        x = rng.normal(size=5)
        assert_close(cf(x), np.sum(np.sin(D @ x) ** 2) + np.sum(x @ D), rtol=1e-12)
    cg = wg.compile(wg.grad(f), x)
    assert_close(cg(x), wg.grad(lambda x: wnp.sum(wnp.sin(D @ x) ** 2) + wnp.sum(x @ D))(x),
                 rtol=1e-12, atol=1e-12)
    ch = wg.compile(wg.hessian(f), x)
    assert_close(ch(x), wg.hessian(f)(x), rtol=1e-12, atol=1e-12)


def test_element_by_element_back_ends_refuse_it_by_name():
    A = random_sparse(3, 3, "csr")
    x = rng.normal(size=3)
    f = lambda x: wnp.sum((A @ x) ** 2)
    for backend in ("c", "float"):
        with pytest.raises(ValueError, match="sparse_matmul"):
            wg.compile(f, x, backend=backend)
    cf = wg.compile(f, x)
    for language in ("c", "fortran", "adds"):
        with pytest.raises(ValueError, match="sparse_matmul"):
            cf.code(language)


def test_one_matrix_is_one_node_and_the_digest_reads_its_entries():
    A = random_sparse(4, 4, "csr")
    x = rng.normal(size=4)
    g = wg.trace(lambda x: (A @ x) + (A @ x) + A.dot(x), x)
    assert sum(n.op.name == "sparse_matmul" for n in g.nodes) == 1
    f = lambda M: wg.trace(lambda x: M @ x, x).digest()
    B = A.copy()
    assert f(A) == f(B)                                  # same entries, another object
    B.data[0] += 1.0
    assert f(A) != f(B)


def test_dtypes_follow_scipy():
    x32, x64 = rng.normal(size=4).astype(np.float32), rng.normal(size=4)
    for mdtype, x in ((np.float32, x32), (np.float32, x64), (np.int64, x64),
                      (np.float64, x32)):
        A = sp.csr_array(rng.integers(-2, 3, size=(3, 4)).astype(mdtype))
        out = wg.vjp(lambda x: A @ x, x)[0]
        assert out.dtype == (A @ x).dtype
        assert wg.eval_shape(lambda x: A @ x, x).dtype == (A @ x).dtype


@pytest.mark.parametrize("case", ["complex matrix", "complex operand", "both"])
def test_complex_values_follow_the_dense_matmul(case):
    A = random_sparse(3, 4, "csr", dtype=complex if case != "complex operand" else float)
    D = A.toarray()
    x = rng.normal(size=4) + (1j * rng.normal(size=4) if case != "complex matrix" else 0)
    f = lambda x: wnp.sin(A @ x)
    assert_close(np.abs(wg.vjp(f, x)[0] - np.sin(D @ x)), 0.0, atol=1e-12)
    check_complex_grads(f, x)
    check_complex_grads(lambda x: x @ A.T, x)
    h = lambda x: wnp.sum(wnp.abs(A @ x) ** 2)
    hd = lambda x: wnp.sum(wnp.abs(D @ x) ** 2)
    assert_close(wg.grad(h)(x).view(float), wg.grad(hd)(x).view(float) if
                 np.iscomplexobj(x) else wg.grad(hd)(x), rtol=1e-12, atol=1e-12)


# ---- spsolve -----------------------------------------------------------------------------
def _system(fmt="csc", array=True, n=6):
    dense = rng.normal(size=(n, n)) * (rng.uniform(size=(n, n)) < 0.4) + n * np.eye(n)
    return (sp.coo_array if array else sp.coo_matrix)(dense).asformat(fmt)


@pytest.mark.filterwarnings("ignore::scipy.sparse.SparseEfficiencyWarning")
@pytest.mark.parametrize("fmt", ["csc", "csr", "coo"])
def test_spsolve_differentiates_in_b_as_the_dense_solve(fmt):
    A = _system(fmt)
    D = A.toarray()
    for b in (rng.normal(size=6), rng.normal(size=(6, 2)), rng.normal(size=(6, 1))):
        assert_close(spsolve(A, b), np.linalg.solve(D, b).reshape(spsolve(A, b).shape))
        out = wg.vjp(lambda b: spsolve(A, b), b)[0]
        assert out.shape == np.shape(spsolve(A, b))          # SciPy's: (6, 1) gives (6,)
        check_grads(lambda b: wnp.sin(spsolve(A, b)), b)
    b = rng.normal(size=6)
    f = lambda b: wnp.sum(spsolve(A, b) ** 3)
    assert_close(wg.hessian(f)(b), wg.hessian(lambda b: wnp.sum(
        wnp.linalg.solve(D, b) ** 3))(b), rtol=1e-9, atol=1e-12)
    assert_close(wg.jacrev(lambda b: spsolve(A, b))(b), np.linalg.inv(D), rtol=1e-10,
                 atol=1e-12)
    assert_close(wg.jacfwd(lambda b: spsolve(A, b))(b), np.linalg.inv(D), rtol=1e-10,
                 atol=1e-12)


def test_spsolve_under_vmap_and_compile(loops):
    A = _system("csr", array=False)
    D = A.toarray()
    B = rng.normal(size=(5, 6))
    assert_close(wg.vmap(lambda b: spsolve(A, b))(B), np.linalg.solve(D, B.T).T)
    assert "sparse_solve" not in loops
    f = lambda b: wnp.sum(spsolve(A, A @ b + b) ** 2)
    b = rng.normal(size=6)
    cf = wg.compile(wg.value_and_grad(f), b)
    value, grad = cf(b)
    x = np.linalg.solve(D, D @ b + b)
    assert_close(value, np.sum(x ** 2))
    assert_close(grad, 2 * (D + np.eye(6)).T @ np.linalg.solve(D.T, x), rtol=1e-10)


def test_spsolve_on_plain_values_is_scipys():
    from scipy.sparse.linalg import spsolve as scipy_spsolve
    A, b = _system(), rng.normal(size=6)
    np.testing.assert_array_equal(spsolve(A, b), scipy_spsolve(A, b))


# ---- what is refused ---------------------------------------------------------------------
def _raises(f, x, match, error=NotImplementedError):
    with pytest.raises(error, match=match):
        wg.grad(lambda x: wnp.sum(f(x)))(x)


def test_a_sparse_matrix_with_traced_entries_is_refused_by_name():
    A = random_sparse(4, 4, "csr")
    x = rng.normal(size=A.nnz)
    _raises(lambda x: sp.csr_matrix((x, A.indices, A.indptr), shape=A.shape) @ np.ones(4),
            x, r"scipy.sparse.csr_matrix\(...\) with traced entries .*A.toarray")
    _raises(lambda x: sp.diags([x], [0]) @ np.ones(4), x[:4], r"scipy.sparse.diags on")
    _raises(lambda x: sp.csr_array((x, A.indices, A.indptr), shape=A.shape) @ np.ones(4),
            x, r"csr_array\(...\) with traced entries")


@pytest.mark.parametrize("op, match", [
    (lambda A, x: A.multiply(x), r"multiply"),
    (lambda A, x: A * x, r"csr_array.__mul__ \(A \* x, elementwise\)"),
    (lambda A, x: x * A, r"x \* A of a scipy.sparse csr_array"),
    (lambda A, x: x + A, r"add, with a scipy.sparse csr_array"),
    (lambda A, x: A + x, r"add, with a scipy.sparse csr_array"),
    (lambda A, x: x - A, r"sub, with"),
    (lambda A, x: wnp.maximum(A, x), r"maximum"),
])
def test_elementwise_operations_with_a_sparse_array_are_refused(op, match):
    A = random_sparse(3, 3, "csr", array=True)
    _raises(lambda x: op(A, x), rng.normal(size=(3, 3)), match)


def test_other_refusals_say_what_to_write():
    M = random_sparse(3, 3, "csr", array=False)
    _raises(lambda s: (M * s) @ np.ones(3), 2.0, r"traced scalar.*\(A @ v\) \* s")
    _raises(lambda x: M.multiply(x), rng.normal(size=(3, 3)), r"csr_matrix.multiply")
    _raises(lambda x: M @ x, rng.normal(size=(4,)), r"do not align", ValueError)
    _raises(lambda x: M @ x, rng.normal(size=(2, 3, 2)), r"one or two dimensions",
            ValueError)
    _raises(lambda x: sp.linalg.spsolve(M.tocsc(), x), rng.normal(size=3),
            r"wengert.scipy.sparse.linalg.spsolve")
    _raises(lambda x: spsolve(sp.csr_matrix(np.ones((3, 2))), x), rng.normal(size=3),
            r"square", ValueError)
    # a traced value becomes no plain array anywhere else
    with pytest.raises(wg.ConcretizationError, match="converted to a plain NumPy array"):
        wg.grad(lambda x: np.asarray(x).sum())(np.ones(3))
    with pytest.raises(wg.ConcretizationError, match="converted to a plain NumPy array"):
        wg.grad(lambda x: np.asanyarray(x).sum())(np.ones(3))
