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
                                        r"but argument 'z' is a Python float"):
        wg.grad(lambda z: z ** 2, holomorphic=True)(1.0)
    with pytest.raises(TypeError, match="argument 'w' is of dtype float32"):
        wg.grad(lambda z, w: z * w, argnums=(0, 1), holomorphic=True)(1j, np.float32(2.0))
    with pytest.raises(TypeError, match="argument 'z_1' is a Python float"):
        wg.jacrev(lambda z: z[0] * z[1], holomorphic=True)([1j, 2.0])
    # what the caller gave, not what it is traced as (an int as float64)
    with pytest.raises(TypeError, match="argument 'z' is a Python int"):
        wg.grad(lambda z: z ** 2, holomorphic=True)(1)
    with pytest.raises(TypeError, match="argument 'z' is of dtype int64"):
        wg.jacfwd(lambda z: z ** 2, holomorphic=True)(np.arange(3))
    calls = []
    with pytest.raises(TypeError, match="needs complex arguments"):      # before f runs
        wg.grad(lambda z: calls.append(z) or z, holomorphic=True)(1.0)
    assert not calls
    with pytest.raises(TypeError, match=r"needs a function with a complex result, but it "
                                        r"returned a float64 value"):
        wg.grad(wnp.abs, holomorphic=True)(1j)
    for jac in (wg.jacfwd, wg.jacrev, wg.jacobian, wg.hessian):
        with pytest.raises(TypeError, match="complex results, but it returned a float64"):
            jac(lambda z: wnp.abs(z) ** 2, holomorphic=True)(1j)
        with pytest.raises(TypeError, match="argument 'z' is a Python float"):
            jac(lambda z: z * 1j, holomorphic=True)(1.0)
    for mode in ("eliminate", "sparse"):
        with pytest.raises(TypeError, match=r"jacobian\(holomorphic=True\) needs complex "
                                            r"arguments, but argument 'z' is a Python float"):
            wg.jacobian(lambda z: z * 1j, mode=mode, holomorphic=True)(1.0)
        with pytest.raises(TypeError, match="complex results, but it returned a float64"):
            wg.jacobian(lambda z: wnp.abs(z) ** 2, mode=mode, holomorphic=True)(1j)
    for who, sparse in (("sparse_jacobian", wg.sparse_jacobian),
                        ("sparse_hessian", wg.sparse_hessian)):
        with pytest.raises(TypeError, match=who + r"\(holomorphic=True\) needs complex "
                                                  r"arguments, but argument 'z_1' is a Python "
                                                  r"float"):
            sparse(lambda z: z[0] * z[1] * 1j, holomorphic=True)([1j, 2.0])
    with pytest.raises(TypeError, match="complex results, but it returned a float64"):
        wg.sparse_jacobian(lambda z: wnp.abs(z) ** 2, holomorphic=True)(np.array([1j, 2j]))
    with pytest.raises(TypeError, match=r"sparse_hessian\(holomorphic=True\) needs a function "
                                        r"with a complex result"):
        wg.sparse_hessian(lambda z: wnp.abs(z[0]) ** 2, holomorphic=True)([1j, 2j])


def test_without_it_complex_results_and_jacobians_point_to_it():
    with pytest.raises(TypeError, match="returned a complex128 value.*holomorphic=True"):
        wg.grad(lambda z: z * z)(1j)
    for jac in (wg.jacfwd, wg.jacrev, wg.jacobian, wg.hessian):
        with pytest.raises(TypeError, match="complex input.*holomorphic=True"):
            jac(lambda z: z * z)(1j)
    with pytest.raises(TypeError, match="complex output.*holomorphic=True"):
        wg.jacfwd(lambda x: x * 1j)(1.0)
    for mode in ("eliminate", "sparse"):
        with pytest.raises(TypeError, match="complex input.*holomorphic=True"):
            wg.jacobian(lambda z: z * z, mode=mode)(1j)
    with pytest.raises(TypeError, match="sparse_jacobian: a complex input.*holomorphic=True"):
        wg.sparse_jacobian(lambda z: z * z)(1j)
    with pytest.raises(TypeError, match="sparse_hessian needs a function with a real-valued "
                                        "result.*holomorphic=True"):
        wg.sparse_hessian(lambda z: z[0] * z[1])([1j, 2j])


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
def test_holomorphic_derivatives_are_jaxs(name, jax):
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


# ---- every mode of wg.jacobian, sparse_jacobian and sparse_hessian ---------------------------
MODES = ("fwd", "rev", "eliminate", "sparse", "auto")


def fd_holomorphic(f, z, h=1e-6):
    """The Jacobian of f (a function of a flat complex vector, returning a flat one) by
    central differences along the real axis: for a holomorphic f the complex derivative is
    f'(z) = lim (f(z + h) - f(z - h)) / 2h over real h.  Column j for z_j."""
    z = np.asarray(z, dtype=complex)
    cols = []
    for j in range(z.size):
        e = np.zeros(z.size)
        e[j] = h
        cols.append((np.ravel(f(z + e)) - np.ravel(f(z - e))) / (2 * h))
    return np.stack(cols, axis=-1)


def seed_f(x1, x2):
    """Seed 003's example: v1 = x1·x2, v2 = exp(sin(v1)), f = (x1·v2, x2·v2)."""
    v2 = wnp.exp(wnp.sin(x1 * x2))
    return x1 * v2, x2 * v2


def three_by_three(a, b, c):
    return (a * b / c + wnp.log(a), wnp.sqrt(b) * wnp.cos(c * a),
            (a - 2j * b) ** 3 * wnp.tanh(c) - 1 / (a + b + 3))


def broyden(z):
    """The Broyden tridiagonal function, of a list of scalars: a tridiagonal Jacobian."""
    n = len(z)
    return [(3 - 2 * z[i]) * z[i] - (z[i - 1] if i else 0) - 2 * (z[i + 1] if i < n - 1 else 0)
            + 1 for i in range(n)]


def broyden_array(z):
    left = wnp.concatenate([wnp.zeros(1), z[:-1]])
    right = wnp.concatenate([z[1:], wnp.zeros(1)])
    return (3 - 2 * z) * z - left - 2 * right + 1


@pytest.mark.parametrize("f, n", [(seed_f, 2), (three_by_three, 3)],
                         ids=["seed003", "three_by_three"])
def test_every_mode_gives_the_complex_jacobian_of_a_scalar_graph(f, n):
    z = points(n)
    args = tuple(complex(v) for v in z)
    argnums = tuple(range(n))
    want = np.array(wg.jacfwd(f, argnums=argnums, holomorphic=True)(*args))
    fd = fd_holomorphic(lambda v: np.array(f(*v)), z)
    np.testing.assert_allclose(want, fd, rtol=1e-7, atol=1e-9)
    for mode in MODES:
        J = wg.jacobian(f, argnums=argnums, mode=mode, holomorphic=True)(*args)
        assert all(type(e) is complex for row in J for e in row), mode
        np.testing.assert_allclose(np.array(J), want, rtol=1e-13, atol=1e-15, err_msg=mode)
        np.testing.assert_allclose(np.array(J), fd, rtol=1e-7, atol=1e-9, err_msg=mode)


def test_auto_eliminates_where_it_builds_a_graph_as_for_real_functions(monkeypatch):
    import wengert.jacobians as jacobians
    calls = []
    real_entries = jacobians.eliminated_entries

    def spy(*args, **kwargs):
        calls.append(args)
        return real_entries(*args, **kwargs)

    monkeypatch.setattr(jacobians, "eliminated_entries", spy)
    z = points(2)
    want = np.array(wg.jacfwd(seed_f, argnums=(0, 1), holomorphic=True)(*z))
    # numbers: the sweeps (elimination's analysis would cost more than it saves)
    J = wg.jacobian(seed_f, argnums=(0, 1), holomorphic=True)(*z)
    assert len(calls) == 0
    np.testing.assert_allclose(np.array(J), want, rtol=1e-13)
    # a graph: elimination, whose entries take fewer operations
    g = wg.trace(wg.jacobian(seed_f, argnums=(0, 1), holomorphic=True), *z)
    assert len(calls) == 1
    np.testing.assert_allclose(np.array(g(*z)), want, rtol=1e-13)
    wg.trace(wg.jacobian(wnp.sin, holomorphic=True), points(3))     # arrays: sweeps
    assert len(calls) == 1


def test_broyden_every_mode_and_the_sparse_jacobian():
    n = 12
    z = points(n)
    want = np.array(wg.jacfwd(broyden, holomorphic=True)(list(z)))
    # the derivative in closed form: 3 - 4z_i on the diagonal, -1 below, -2 above
    exact = np.diag(3 - 4 * z) - np.eye(n, k=-1) - 2 * np.eye(n, k=1)
    np.testing.assert_allclose(want, exact, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(fd_holomorphic(lambda v: np.array(broyden(list(v))), z), exact,
                               rtol=1e-7, atol=1e-9)
    for mode in MODES:
        J = wg.jacobian(broyden, mode=mode, holomorphic=True)(list(z))
        np.testing.assert_allclose(np.array(J), exact, rtol=1e-14, atol=1e-15, err_msg=mode)
    S = wg.sparse_jacobian(broyden, holomorphic=True)(list(z))
    assert S.dtype == np.complex128 and S.nnz == 3 * n - 2
    np.testing.assert_allclose(S.toarray(), exact, rtol=1e-14, atol=1e-15)
    # and of an array: the same matrix
    for J in (wg.jacobian(broyden_array, mode="sparse", holomorphic=True)(z),
              wg.sparse_jacobian(broyden_array, holomorphic=True)(z).toarray()):
        np.testing.assert_allclose(J, exact, rtol=1e-14, atol=1e-15)


def test_sparse_mode_on_complex_arrays_by_forward_and_by_reverse_sweeps():
    from wengert.ad.sparse import color_columns, color_rows, sparsity
    z = points(8)

    def cyclic(z):          # two colours of columns: forward sweeps
        return wnp.sin(z) * wnp.roll(z, 1) + z ** 2 / (2 + z)

    def two_dense_rows(z):  # two colours of rows, eight of columns: reverse sweeps
        return wnp.stack([wnp.sum(z ** 3), wnp.prod(wnp.cos(z[:3])) * z[5]])

    for f, forward in ((cyclic, True), (two_dense_rows, False)):
        g = wg.trace(f, z)
        rows = sparsity(g, g.inputs, g.outputs)
        by_cols, by_rows = max(color_columns(rows, z.size)), max(color_rows(rows, z.size))
        assert (by_cols <= by_rows) if forward else (by_rows < by_cols)
        want = wg.jacfwd(f, holomorphic=True)(z)
        np.testing.assert_allclose(want, fd_holomorphic(f, z), rtol=1e-7, atol=1e-9)
        for J in (wg.jacobian(f, mode="sparse", holomorphic=True)(z),
                  wg.sparse_jacobian(f, holomorphic=True)(z).toarray()):
            assert J.dtype == np.complex128
            np.testing.assert_allclose(J, want, rtol=1e-13, atol=1e-15)


def test_sparse_mode_on_several_complex_array_arguments():
    z, w = points(5), points(5)

    def f(z, w):
        return wnp.exp(z * w) - wnp.roll(w, -1) ** 2, wnp.sum(z / w)

    want = wg.jacfwd(f, argnums=(0, 1), holomorphic=True)(z, w)
    got = wg.jacobian(f, argnums=(0, 1), mode="sparse", holomorphic=True)(z, w)
    S = wg.sparse_jacobian(f, argnums=(0, 1), holomorphic=True)(z, w).toarray()
    dense = np.vstack([np.hstack([np.reshape(b, (-1, 5)) for b in row]) for row in want])
    fd = fd_holomorphic(lambda v: np.concatenate([np.ravel(o) for o in f(v[:5], v[5:])]),
                        np.concatenate([z, w]))
    np.testing.assert_allclose(dense, fd, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(S, dense, rtol=1e-13, atol=1e-15)
    for row_got, row_want in zip(got, want):
        for a, b in zip(row_got, row_want):
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)


def chained(z):
    """Σ z_i² z_{i+1} + exp(z_0 z_{n-1}): a sparse Hessian with a corner."""
    return sum(z[i] ** 2 * z[i + 1] for i in range(len(z) - 1)) + wnp.exp(z[0] * z[-1])


def test_sparse_hessian_of_a_holomorphic_function_is_hessians():
    n = 7
    z = points(n)
    H = wg.sparse_hessian(chained, holomorphic=True)(list(z))
    want = np.array(wg.hessian(chained, holomorphic=True)(list(z)))
    # closed form: 2z_{i+1} on the diagonal, 2z_i beside it, and the exponential's corner
    exact = np.diag(np.r_[2 * z[1:], 0]) + np.diag(2 * z[:-1], 1) + np.diag(2 * z[:-1], -1)
    e = np.exp(z[0] * z[-1])
    exact[0, 0] += z[-1] ** 2 * e
    exact[-1, -1] += z[0] ** 2 * e
    exact[0, -1] += (1 + z[0] * z[-1]) * e
    exact[-1, 0] += (1 + z[0] * z[-1]) * e
    assert H.dtype == np.complex128 and H.nnz == 3 * n - 2 + 2
    np.testing.assert_allclose(want, exact, rtol=1e-13)
    np.testing.assert_allclose(H.toarray(), want, rtol=1e-13, atol=1e-15)
    gradient = wg.grad(chained, holomorphic=True)
    np.testing.assert_allclose(
        H.toarray(), fd_holomorphic(lambda v: np.array(gradient(list(v))), z), rtol=1e-7,
        atol=1e-8)
    # of an array argument, and by wg.jacobian of the gradient
    Ha = wg.sparse_hessian(lambda z: wnp.sum(z[:-1] ** 2 * z[1:]) + wnp.exp(z[0] * z[-1]),
                           holomorphic=True)(z)
    np.testing.assert_allclose(Ha.toarray(), exact, rtol=1e-13)
    for mode in ("sparse", "eliminate"):
        Hm = wg.jacobian(gradient, mode=mode, holomorphic=True)(list(z))
        np.testing.assert_allclose(np.array(Hm), exact, rtol=1e-13, err_msg=mode)


@pytest.mark.parametrize("mode", ["eliminate", "sparse", "auto"])
def test_the_modes_inside_other_transformations(mode):
    # the derivative of an entry of the Jacobian: second derivatives, through the
    # entries built as graph nodes
    z = tuple(complex(v) for v in points(2))
    entry = lambda mode: lambda a, b: wg.jacobian(seed_f, argnums=(0, 1), mode=mode,
                                                  holomorphic=True)(a, b)[0][1]
    want = wg.jacfwd(entry("fwd"), argnums=(0, 1), holomorphic=True)(*z)
    for outer in (wg.jacfwd, wg.jacrev):
        got = outer(entry(mode), argnums=(0, 1), holomorphic=True)(*z)
        np.testing.assert_allclose(got, want, rtol=1e-13)
    compiled = wg.compile(wg.jacobian(seed_f, argnums=(0, 1), mode=mode, holomorphic=True), *z)
    np.testing.assert_allclose(np.array(compiled(*z), dtype=complex), np.array(
        wg.jacfwd(seed_f, argnums=(0, 1), holomorphic=True)(*z)), rtol=1e-13)


def test_complex64_entries_stay_complex64():
    z = tuple(np.complex64(v) for v in points(2))
    want = wg.jacfwd(seed_f, argnums=(0, 1), holomorphic=True)(*z)
    for mode in ("eliminate", "sparse"):
        J = wg.jacobian(seed_f, argnums=(0, 1), mode=mode, holomorphic=True)(*z)
        assert all(type(e) is np.complex64 for row in J for e in row), mode
        np.testing.assert_allclose(np.array(J), np.array(want), rtol=1e-5)


def exp_by_parts(z):
    """exp(z), holomorphic, but computed from its real and imaginary parts."""
    x, y = wnp.real(z), wnp.imag(z)
    return wnp.exp(x) * (wnp.cos(y) + 1j * wnp.sin(y))


def test_a_real_part_on_the_way_is_no_product_elimination_refuses_auto_sweeps():
    z = complex(points(1)[0])
    with pytest.raises(NotImplementedError, match=r"%\d+ \(real\) is a real value computed from "
                                                  r"complex ones.*mode='fwd', 'rev' or 'auto'"):
        wg.jacobian(exp_by_parts, mode="eliminate", holomorphic=True)(z)
    for mode in ("fwd", "rev", "sparse", "auto"):
        assert wg.jacobian(exp_by_parts, mode=mode, holomorphic=True)(z) == pytest.approx(
            np.exp(z), rel=1e-14), mode


def test_jacobian_graph_and_costs_of_a_holomorphic_function():
    z = points(2)
    args = tuple(complex(v) for v in z)
    want = np.array(wg.jacfwd(seed_f, argnums=(0, 1), holomorphic=True)(*args))
    fd = fd_holomorphic(lambda v: np.array(seed_f(*v)), z)
    for mode in ("fwd", "rev", "eliminate", "sparse"):
        jg = wg.jacobian_graph(seed_f, *args, argnums=(0, 1), mode=mode, holomorphic=True)
        J = np.array(jg(*args))
        np.testing.assert_allclose(J, want, rtol=1e-13, atol=1e-15, err_msg=mode)
        np.testing.assert_allclose(J, fd, rtol=1e-7, atol=1e-9, err_msg=mode)
    # of a traced graph: all outputs by all inputs, structural zeros complex too
    graph = wg.trace(lambda a, b: (a * b, wnp.exp(a)), *args)
    J = wg.jacobian_graph(graph, holomorphic=True)(*args)
    np.testing.assert_allclose(np.array(J, dtype=complex),
                               [[args[1], args[0]], [np.exp(args[0]), 0]], rtol=1e-14)
    assert type(J[1][1]) is complex
    # the counts are the same whether f is given as a function or as its graph
    costs = wg.jacobian_costs(seed_f, *args, argnums=(0, 1), holomorphic=True)
    assert costs == wg.jacobian_costs(wg.trace(seed_f, *args), holomorphic=True)
    assert costs["eliminate"]["total"] <= min(costs["fwd"]["total"], costs["rev"]["total"])


def test_jacobian_graph_and_costs_say_holomorphic_true_for_complex_functions():
    for call in (lambda: wg.jacobian_graph(wnp.sin, 1j), lambda: wg.jacobian_costs(wnp.sin, 1j),
                 lambda: wg.jacobian_graph(wg.trace(wnp.sin, 1j)),
                 lambda: wg.jacobian_costs(wg.trace(wnp.sin, 1j))):
        with pytest.raises(TypeError, match="pass holomorphic=True"):
            call()
    with pytest.raises(TypeError, match=r"jacobian_costs\(holomorphic=True\) needs complex "
                                        "arguments and results, but an argument has dtype "
                                        "float64"):
        wg.jacobian_costs(wnp.sin, 1.0, holomorphic=True)
    with pytest.raises(TypeError, match="but a result has dtype float64"):
        wg.jacobian_graph(wg.trace(wnp.abs, 1j), holomorphic=True)
