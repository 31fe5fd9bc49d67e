"""A sparse matrix whose entries are traced and whose pattern is constant
(wengert.scipy.sparse.csr_array, csc_array, coo_array with traced data): products and
spsolve checked against the dense matrix assembled with wengert.numpy and against central
differences, to second order; a 1-D Poisson problem with a conductivity field; vmap,
compile, and the operations that are refused."""
import numpy as np
import pytest

sp = pytest.importorskip("scipy.sparse")

import wengert as wg  # noqa: E402
import wengert.numpy as wnp  # noqa: E402
from wengert.scipy.sparse import SparseArray, coo_array, csc_array, csr_array  # noqa: E402
from wengert.scipy.sparse.linalg import spsolve  # noqa: E402
from fd import assert_close, check_complex_grads, check_grads, fd_jacobian  # noqa: E402

rng = np.random.default_rng(11)
# (central differences call f on plain values, where spsolve is SciPy's, which warns that a
# COO matrix is converted; with traced data the conversion is wengert's, and silent)
pytestmark = pytest.mark.filterwarnings("ignore::scipy.sparse.SparseEfficiencyWarning")


def random_pattern(m, n, density=0.4, duplicates=2):
    """Rows and columns of a random pattern with a full diagonal (for solves) and a few
    entries stored twice (COO sums them)."""
    mask = rng.uniform(size=(m, n)) < density
    mask[np.arange(min(m, n)), np.arange(min(m, n))] = True
    row, col = np.nonzero(mask)
    extra = rng.integers(0, row.size, size=duplicates)
    return np.r_[row, row[extra]], np.r_[col, col[extra]]


def dense(data, row, col, shape):
    """The same matrix assembled densely with wengert.numpy: the reference."""
    return wnp.at(np.zeros(shape))[row, col].add(data)


def well_posed(row, col, n):
    """Entries whose matrix is diagonally dominant: solves are well conditioned."""
    data = rng.normal(size=row.size)
    return data + np.where(row == col, 2.0 * n, 0.0)


# ---- construction ----------------------------------------------------------------------------
def _csr_parts(row, col, shape):
    """(order, indices, indptr) of the CSR form of a COO pattern (duplicates kept)."""
    order = np.lexsort((col, row))
    indptr = np.r_[0, np.cumsum(np.bincount(row, minlength=shape[0]))]
    return order, col[order], indptr


CONSTRUCTORS = {
    "coo": lambda d, row, col, shape: coo_array((d, (row, col)), shape=shape),
    "csr": lambda d, row, col, shape: csr_array((d,) + _csr_parts(row, col, shape)[1:],
                                                shape=shape),
    "csc": lambda d, row, col, shape: csc_array((d,) + _csr_parts(col, row, shape[::-1])[1:],
                                                shape=shape),
}   # (each takes the data in the order it stores them: `_permuted`)


def _permuted(fmt, data, row, col, shape):
    """The data in the order the constructor `fmt` stores it (the reference's order)."""
    if fmt == "coo":
        return data
    order = _csr_parts(row, col, shape)[0] if fmt == "csr" else \
        _csr_parts(col, row, shape[::-1])[0]
    return data[order]


@pytest.mark.parametrize("fmt", sorted(CONSTRUCTORS))
def test_each_constructor_gives_the_dense_matrix_and_scipys_on_plain_data(fmt):
    row, col = random_pattern(4, 5)
    data = rng.normal(size=row.size)
    make = CONSTRUCTORS[fmt]
    want = dense(data, row, col, (4, 5))
    data = _permuted(fmt, data, row, col, (4, 5))
    plain = make(data, row, col, (4, 5))
    assert sp.issparse(plain) and plain.format == fmt        # SciPy's own, untraced
    assert_close(plain.toarray(), want, rtol=1e-14, atol=1e-14)
    seen = []
    out = wg.vjp(lambda d: seen.append(make(d, row, col, (4, 5))) or seen[-1].toarray(),
                 data)[0]
    assert isinstance(seen[0], SparseArray) and seen[0].shape == (4, 5)
    assert seen[0].nnz == row.size and seen[0].dtype == np.float64 and seen[0].ndim == 2
    assert_close(out, want, rtol=1e-14, atol=1e-14)


def test_shape_is_inferred_as_scipy_infers_it():
    row, col = np.array([0, 2]), np.array([1, 3])
    for make, want in ((lambda d: coo_array((d, (row, col))), (3, 4)),
                       (lambda d: csr_array((d, np.array([1, 3]), np.array([0, 1, 1, 2]))),
                        (3, 4)),
                       (lambda d: csc_array((d, np.array([1, 3]), np.array([0, 1, 1, 2]))),
                        (4, 3))):
        traced = []
        wg.vjp(lambda d: traced.append(make(d)) or d, np.ones(2))
        assert traced[0].shape == want == make(np.ones(2)).shape


# ---- products ---------------------------------------------------------------------------------
# the ways of writing a product, their dense equivalent, and the operand: its length (that
# of A's columns, "n", or rows, "m") and its side (a 2-D operand right of A is (k, cols))
PRODUCTS = {
    "A @ x": (lambda A, x: A @ x, lambda D, x: D @ x, "n", "right"),
    "A.dot(x)": (lambda A, x: A.dot(x), lambda D, x: D @ x, "n", "right"),
    "x @ A": (lambda A, x: x @ A, lambda D, x: x @ D, "m", "left"),
    "A.T @ x": (lambda A, x: A.T @ x, lambda D, x: D.T @ x, "m", "right"),
    "x @ A.T": (lambda A, x: x @ A.T, lambda D, x: x @ D.T, "n", "left"),
    "wnp.matmul(x, A)": (lambda A, x: wnp.matmul(x, A), lambda D, x: x @ D, "m", "left"),
    "wnp.dot(A, x)": (lambda A, x: wnp.dot(A, x), lambda D, x: D @ x, "n", "right"),
}


@pytest.mark.parametrize("fmt", sorted(CONSTRUCTORS))
@pytest.mark.parametrize("name", sorted(PRODUCTS))
@pytest.mark.parametrize("cols", [None, 3], ids=["1-D", "2-D"])
def test_products_differentiate_in_data_and_operand_as_the_dense_matrix(fmt, name, cols):
    product, dense_product, length, side = PRODUCTS[name]
    m, n = 4, 5                                  # rectangular: transposes must be right
    row, col = random_pattern(m, n)
    data = rng.normal(size=row.size)
    k = n if length == "n" else m
    x = rng.normal(size=k if cols is None else ((k, cols) if side == "right" else (cols, k)))
    make = CONSTRUCTORS[fmt]
    perm = lambda d: _permuted(fmt, d, row, col, (m, n))

    f = lambda d, x: wnp.sin(product(make(d, row, col, (m, n)), x))
    fd = lambda d, x: wnp.sin(dense_product(dense(d, row, col, (m, n)), x))
    d = perm(data)
    assert_close(wg.vjp(f, d, x)[0], fd(data, x), rtol=1e-12, atol=1e-12)
    out, back = wg.vjp(f, d, x)
    _, dense_back = wg.vjp(fd, data, x)
    ct = rng.normal(size=out.shape)
    got, want = back(ct), dense_back(ct)
    assert_close(got[0], perm(want[0]), rtol=1e-12, atol=1e-12)
    assert_close(got[1], want[1], rtol=1e-12, atol=1e-12)
    if not name.startswith("wnp"):           # (plain values: SciPy's operators)
        check_grads(f, d, x)


def test_plain_operands_on_either_side():
    row, col = random_pattern(3, 3)
    data = rng.normal(size=row.size)
    x = rng.normal(size=(3, 2))
    D = dense(data, row, col, (3, 3))
    f = lambda d: np.float64(2.0) * (x.T @ coo_array((d, (row, col)), shape=(3, 3)) @ x)
    assert_close(wg.jacrev(f)(data), wg.jacrev(lambda d: 2.0 * (
        x.T @ dense(d, row, col, (3, 3)) @ x))(data), rtol=1e-12, atol=1e-12)
    assert_close(wg.vjp(f, data)[0], 2 * x.T @ D @ x, rtol=1e-12)


def test_scaling_sums_and_toarray_act_on_the_data():
    row, col = random_pattern(4, 4)
    other_row, other_col = random_pattern(4, 4)
    C = sp.random_array((4, 4), density=0.3, rng=3, format="csr")
    x = rng.normal(size=4)

    def f(d, s, sparse=True):
        if sparse:
            A = coo_array((d[:row.size], (row, col)), shape=(4, 4))
            B = coo_array((d[:other_row.size] ** 2, (other_row, other_col)), shape=(4, 4))
            same = coo_array((wnp.cos(d[:row.size]), (row, col)), shape=(4, 4))
            M = 2.0 * A - A / 3 + s * A + A * s - (-A.T) + B + same + C - C.T + 0
            return wnp.sum(wnp.tanh(M @ x)) + wnp.sum(M.toarray() ** 2)
        A = dense(d[:row.size], row, col, (4, 4))
        B = dense(d[:other_row.size] ** 2, other_row, other_col, (4, 4))
        same = dense(wnp.cos(d[:row.size]), row, col, (4, 4))
        M = 2.0 * A - A / 3 + s * A + A * s + A.T + B + same + C.toarray() - C.toarray().T
        return wnp.sum(wnp.tanh(M @ x)) + wnp.sum(M ** 2)

    d = rng.normal(size=max(row.size, other_row.size))
    s = 0.7
    assert_close(wg.vjp(f, d, s)[0], f(d, s, sparse=False), rtol=1e-12)
    for got, want in zip(wg.grad(f, (0, 1))(d, s), wg.grad(lambda d, s: f(d, s, False),
                                                             (0, 1))(d, s)):
        assert_close(got, want, rtol=1e-10, atol=1e-12)
    H = wg.hessian(f)(d, s)
    assert_close(H, wg.hessian(lambda d: f(d, s, False))(d), rtol=1e-9, atol=1e-10)


def test_a_shared_pattern_stays_one_pattern_when_added():
    row, col = random_pattern(3, 3, duplicates=0)
    seen = []

    def f(d):
        A = coo_array((d, (row, col)), shape=(3, 3))
        B = coo_array((2 * d, (row.copy(), col.copy())), shape=(3, 3))
        seen.append(A + B)
        return seen[-1] @ np.ones(3)
    wg.vjp(f, np.ones(row.size))
    assert seen[0].nnz == row.size                  # same indices: data added, not stacked


# ---- spsolve ----------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", sorted(CONSTRUCTORS))
@pytest.mark.parametrize("transposed", [False, True], ids=["A", "A.T"])
def test_spsolve_differentiates_in_the_entries_and_b_as_the_dense_solve(fmt, transposed):
    n = 6
    row, col = random_pattern(n, n)
    data = well_posed(row, col, n)
    make = CONSTRUCTORS[fmt]
    perm = lambda d: _permuted(fmt, d, row, col, (n, n))
    op = (lambda M: M.T) if transposed else (lambda M: M)
    f = lambda d, b: spsolve(op(make(d, row, col, (n, n))), b)
    fd = lambda d, b: wnp.linalg.solve(op(dense(d, row, col, (n, n))), b)
    for b in (rng.normal(size=n), rng.normal(size=(n, 2))):
        out, back = wg.vjp(f, perm(data), b)
        assert_close(out, fd(data, b), rtol=1e-12, atol=1e-12)
        ct = rng.normal(size=out.shape)
        got, want = back(ct), wg.vjp(fd, data, b)[1](ct)
        assert_close(got[0], perm(want[0]), rtol=1e-10, atol=1e-12)
        assert_close(got[1], want[1], rtol=1e-10, atol=1e-12)
        check_grads(lambda d, b: wnp.sin(f(d, b)), perm(data), b)
    b = rng.normal(size=n)
    loss = lambda d: wnp.sum(f(d, b) ** 3)
    dense_loss = lambda d: wnp.sum(fd(d, b) ** 3)
    H = wg.hessian(loss)(perm(data))
    Hd = wg.hessian(dense_loss)(data)
    p = _permuted(fmt, np.arange(row.size), row, col, (n, n))
    assert_close(H, Hd[np.ix_(p, p)], rtol=1e-8, atol=1e-10)
    assert_close(H, fd_jacobian(wg.grad(loss), perm(data), 1e-5), rtol=1e-5, atol=1e-7)
    assert_close(wg.jacfwd(lambda d: f(d, b))(perm(data)),
                 wg.jacrev(lambda d: f(d, b))(perm(data)), rtol=1e-10, atol=1e-12)


def test_spsolve_with_a_plain_right_hand_side_and_a_column():
    n = 5
    row, col = random_pattern(n, n)
    data = well_posed(row, col, n)
    b = rng.normal(size=(n, 1))
    f = lambda d: spsolve(coo_array((d, (row, col)), shape=(n, n)), b)
    out = wg.vjp(f, data)[0]
    assert out.shape == (n,)                     # SciPy's: a column gives a vector
    assert_close(out, np.linalg.solve(dense(data, row, col, (n, n)), b[:, 0]), rtol=1e-12)
    check_grads(f, data)


def test_a_gradient_factorises_once(monkeypatch):
    from scipy.sparse import linalg as spla
    calls = []
    real = spla.splu
    monkeypatch.setattr(spla, "splu", lambda *a, **k: calls.append(1) or real(*a, **k))
    n = 8
    row, col = random_pattern(n, n)
    data = well_posed(row, col, n)
    wg.grad(lambda d: wnp.sum(spsolve(coo_array((d, (row, col)), shape=(n, n)),
                                      np.ones(n)) ** 2))(data)
    assert len(calls) == 1                       # the adjoint solve reuses the factors


@pytest.mark.parametrize("case", ["complex data", "complex operand", "both"])
def test_complex_entries_and_operands_follow_jax_and_autograd(case):
    n = 4
    row, col = random_pattern(n, n)
    data = well_posed(row, col, n) + (1j * rng.normal(size=row.size) if case != "complex "
                                      "operand" else 0)
    x = rng.normal(size=n) + (1j * rng.normal(size=n) if case != "complex data" else 0)
    A = lambda d: coo_array((d, (row, col)), shape=(n, n))
    check_complex_grads(lambda d, x: wnp.sin(A(d) @ x), data, x)
    check_complex_grads(lambda d, x: spsolve(A(d), x), data, x)


# ---- a 1-D Poisson problem with a conductivity field -------------------------------------
def stiffness(k, n):
    """K(k) of -(k u')' = f on (0, 1), u(0) = u(1) = 0, n interior nodes, k on the n + 1
    cells: K[i, i] = k_i + k_(i+1), K[i, i±1] = -k between them (times (n + 1)²)."""
    i = np.arange(n)
    row = np.r_[i, i, i[:-1], i[1:]]
    col = np.r_[i, i, i[1:], i[:-1]]
    data = wnp.concatenate([k[:-1], k[1:], -k[1:-1], -k[1:-1]]) * (n + 1) ** 2
    return data, row, col


def test_poisson_conductivity_gradient_and_hessian():
    n = 20
    x = np.linspace(0, 1, n + 2)[1:-1]
    f = np.ones(n)
    k0 = 1 + 0.5 * np.sin(2 * np.pi * np.linspace(0, 1, n + 1))
    measured = rng.normal(size=n) * 0.01 + 0.1 * x * (1 - x)

    def misfit(k, sparse=True):
        data, row, col = stiffness(k, n)
        K = coo_array((data, (row, col)), shape=(n, n)) if sparse else \
            dense(data, row, col, (n, n))
        u = spsolve(K, f) if sparse else wnp.linalg.solve(K, f)
        return wnp.sum((u - measured) ** 2)

    g = wg.grad(misfit)(k0)
    assert_close(g, wg.grad(lambda k: misfit(k, False))(k0), rtol=1e-9, atol=1e-14)
    assert_close(g, fd_jacobian(misfit, k0, 1e-6), rtol=1e-5, atol=1e-12)
    H = wg.hessian(misfit)(k0)
    assert_close(H, wg.hessian(lambda k: misfit(k, False))(k0), rtol=1e-8, atol=1e-14)
    assert_close(H, fd_jacobian(wg.grad(misfit), k0, 1e-5), rtol=1e-4, atol=1e-10)
    v = rng.normal(size=n + 1)
    assert_close(wg.hvp(misfit)(k0, v), H @ v, rtol=1e-9, atol=1e-14)

    # K(k) @ u: the residual's derivative in k, and a constant plus a traced matrix
    u = rng.normal(size=n)
    mass = sp.eye(n, format="csr") * 0.5
    _, row, col = stiffness(k0, n)
    res = lambda k: (coo_array((stiffness(k, n)[0], (row, col)), shape=(n, n)) + mass) @ u
    res_dense = lambda k: (dense(stiffness(k, n)[0], row, col, (n, n)) + 0.5 * np.eye(n)) @ u
    assert_close(wg.jacrev(res)(k0), wg.jacfwd(res_dense)(k0), rtol=1e-12, atol=1e-9)
    check_grads(lambda k: wnp.sin(res(k) * 1e-3), k0)


def test_poisson_fit_recovers_the_conductivity():
    from scipy.optimize import minimize
    n = 15
    f = np.ones(n)
    truth = 1.0 + 0.5 * np.linspace(0, 1, n + 1)
    data, row, col = stiffness(truth, n)
    measured = np.linalg.solve(dense(data, row, col, (n, n)), f)

    def misfit(logk):
        data, row, col = stiffness(wnp.exp(logk), n)
        u = spsolve(coo_array((data, (row, col)), shape=(n, n)), f)
        return 1e4 * wnp.sum((u - measured) ** 2) + 1e-6 * wnp.sum(wnp.diff(logk) ** 2)

    fit = minimize(wg.value_and_grad(misfit), np.zeros(n + 1), jac=True, method="BFGS",
                   options={"gtol": 1e-10, "maxiter": 2000})
    assert_close(np.exp(fit.x), truth, rtol=2e-2, atol=0)


# ---- vmap and compile ---------------------------------------------------------------------
def test_vmap_over_operands_and_over_matrices_is_one_call(loops):
    n = 5
    row, col = random_pattern(n, n)
    data = well_posed(row, col, n)
    D = np.stack([well_posed(row, col, n) for _ in range(3)])
    X = rng.normal(size=(3, n))
    A = lambda d: coo_array((d, (row, col)), shape=(n, n))
    dense_of = lambda d: dense(d, row, col, (n, n))
    for f, fd in ((lambda d, x: A(d) @ x, lambda d, x: dense_of(d) @ x),
                  (lambda d, x: x @ A(d), lambda d, x: x @ dense_of(d)),
                  (lambda d, x: spsolve(A(d), x), lambda d, x: wnp.linalg.solve(
                      dense_of(d), x))):
        for axes, args in (((0, 0), (D, X)), ((None, 0), (data, X)), ((0, None),
                                                                        (D, X[0]))):
            got = wg.vmap(f, in_axes=axes)(*args)
            want = np.stack([fd(args[0][b] if axes[0] == 0 else args[0],
                                args[1][b] if axes[1] == 0 else args[1]) for b in range(3)])
            assert_close(got, want, rtol=1e-12, atol=1e-12)
        g = wg.vmap(wg.grad(lambda d, x: wnp.sum(wnp.sin(f(d, x)))))(D, X)
        gd = np.stack([wg.grad(lambda d: wnp.sum(wnp.sin(fd(d, X[b]))))(D[b])
                       for b in range(3)])
        assert_close(g, gd, rtol=1e-10, atol=1e-12)
    assert not loops & {"sparse_data_matmul", "sparse_data_solve"}


def test_compile_value_gradient_and_hessian():
    n = 7
    _, row, col = stiffness(np.ones(n + 1), n)
    f = np.ones(n)

    def loss(k):
        data, row, col = stiffness(k, n)
        K = coo_array((data, (row, col)), shape=(n, n))
        return wnp.sum(spsolve(K, f) ** 2) + wnp.sum((K @ f) ** 2) * 1e-6

    k = 1 + rng.uniform(size=n + 1)
    cf = wg.compile(wg.value_and_grad(loss), k)
    assert "sparse_data_solve" in cf.source
    for _ in range(2):
        k = 1 + rng.uniform(size=n + 1)
        value, grad = cf(k)
        assert_close(value, loss(k), rtol=1e-12)
        assert_close(grad, wg.grad(loss)(k), rtol=1e-12, atol=1e-15)
    ch = wg.compile(wg.hessian(loss), k)
    assert_close(ch(k), wg.hessian(loss)(k), rtol=1e-10, atol=1e-15)
    with pytest.raises(ValueError, match="sparse_data"):
        wg.compile(loss, k, backend="c")


def test_digest_reads_the_pattern():
    row, col = random_pattern(3, 3, duplicates=0)
    digest = lambda c: wg.trace(lambda d: coo_array((d, (row, c)), shape=(3, 3)) @
                                np.ones(3), np.ones(row.size)).digest()
    assert digest(col) == digest(col.copy())
    other = col.copy()
    other[0] = (other[0] + 1) % 3
    assert digest(col) != digest(other)


# ---- what is refused ----------------------------------------------------------------------
def _raises(f, match, error=NotImplementedError, x=None):
    x = rng.normal(size=4) if x is None else x
    with pytest.raises(error, match=match):
        wg.grad(lambda d: wnp.sum(f(coo_array((d, (np.arange(4), np.arange(4))),
                                              shape=(4, 4)), d)))(x)


@pytest.mark.parametrize("op, match", [
    (lambda A, d: A * d, r"A \* x .* shape \(4,\) \(elementwise\)"),
    (lambda A, d: d * A, r"mul of a sparse matrix with traced entries|elementwise"),
    (lambda A, d: A + d, r"A \+ x .*the result would be dense"),
    (lambda A, d: A + 1.0, r"A \+ x"),
    (lambda A, d: A @ A, r"two sparse matrices"),
    (lambda A, d: A @ sp.eye(4), r"two sparse matrices"),
    (lambda A, d: np.asarray(A), r"converting a sparse matrix with traced entries"),
    (lambda A, d: np.sin(A), r"numpy.sin of a sparse matrix"),
    (lambda A, d: wnp.exp(A), r"sparse matrix with traced entries"),
    (lambda A, d: A[0, 0], r"indexing"),
    (lambda A, d: spsolve(A, sp.eye(4)), r"sparse right-hand side"),
])
def test_unsupported_operations_say_what_is_supported(op, match):
    _raises(op, match)


def test_shape_and_pattern_errors():
    _raises(lambda A, d: A @ np.ones(3), r"dimension mismatch", ValueError)
    _raises(lambda A, d: A @ np.ones((4, 2, 2)), r"one or two dimensions", ValueError)
    _raises(lambda A, d: spsolve(A, np.ones(3)), r"do not match", ValueError)
    with pytest.raises(ValueError, match="square"):
        wg.grad(lambda d: wnp.sum(spsolve(coo_array((d, ([0, 1], [0, 2])), shape=(2, 3)),
                                          np.ones(2))))(np.ones(2))
    with pytest.raises(ValueError, match="outside the shape"):
        wg.grad(lambda d: wnp.sum(coo_array((d, ([0, 5], [0, 1])), shape=(2, 2)) @
                                  np.ones(2)))(np.ones(2))
    with pytest.raises(NotImplementedError, match="constant pattern"):
        wg.grad(lambda d: wnp.sum(coo_array((d, (d.astype(int), [0, 1])), shape=(2, 2)) @
                                  np.ones(2)))(np.zeros(2))
    with pytest.raises(ValueError, match="do not make a matrix"):
        wg.grad(lambda d: wnp.sum(csr_array((d, [0, 1], [0, 1]), shape=(2, 2)) @
                                  np.ones(2)))(np.ones(2))


def test_scipys_own_constructor_points_at_wengerts():
    with pytest.raises(NotImplementedError, match=r"wengert.scipy.sparse.csr_array"):
        wg.grad(lambda d: wnp.sum(sp.csr_array((d, [0, 1], [0, 1, 2]), shape=(2, 2)) @
                                  np.ones(2)))(np.ones(2))
