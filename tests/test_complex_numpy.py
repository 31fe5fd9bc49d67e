"""wengert.numpy and wengert.numpy.linalg on complex values: a function gives NumPy's value
and derivatives that pass `check_complex_grads` (central differences to second order, in
the convention of JAX and autograd), or it refuses complex values by name — never a
silently wrong value or derivative (docs/complex.md)."""
import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from wengert.numpy import linalg as la
from wengert.tree import flatten
from fd import check_complex_grads

rng = np.random.default_rng(20261124)


def points(*shape):
    """Complex points away from the real axis (|Im z| in [0.2, 0.7])."""
    re = rng.uniform(-1.4, 1.4, size=shape)
    im = rng.choice([-1.0, 1.0], size=shape) * rng.uniform(0.2, 0.7, size=shape)
    return re + 1j * im


def reals(*shape):
    return rng.uniform(0.5, 1.5, size=shape)


Z4, Z23 = points(4), points(2, 3)
M33 = points(3, 3) + 3 * np.eye(3)                  # well conditioned

# name -> (function, arguments): NumPy's value on the arguments, and derivatives.  First
# the functions that were right on complex values before the audit (composed of primitives
# that take them), then those it mended.
CASES = {
    "elementwise": (lambda z: [wnp.square(z), wnp.reciprocal(z), wnp.positive(z),
                               wnp.sinc(z), wnp.rint(z * 3), wnp.round(z, 1),
                               wnp.power(z, 2.5), wnp.sign(z)], (Z4,)),
    "tests": (lambda z, w: [wnp.isclose(z, z + 1e-9j), wnp.isclose(z, w), wnp.isfinite(z),
                            wnp.equal(z, w), wnp.logical_and(z, w), wnp.logical_not(z)],
              (Z4, points(4))),
    "reductions": (lambda z: [wnp.sum(z, axis=0), wnp.prod(z, axis=1), wnp.mean(z),
                              wnp.cumsum(z), wnp.cumprod(z, axis=1), wnp.nansum(z),
                              wnp.nanmean(z, axis=0), wnp.trace(z[:, :2])], (Z23,)),
    "where_masks": (lambda z: [wnp.mean(z, where=np.array([[True, False, True]] * 2)),
                               wnp.sum(z, axis=1, where=np.array([True, True, False]))],
                    (Z23,)),
    "average": (lambda z, w: [wnp.average(z, axis=1), wnp.average(z[0], weights=w),
                              wnp.average(z, axis=1, weights=wnp.real(w), returned=True)],
                (Z23, points(3))),
    "differences": (lambda z, x: [wnp.diff(z, n=2, prepend=1j), wnp.gradient(z),
                                  wnp.gradient(z, 0.5, edge_order=2), wnp.trapezoid(z),
                                  wnp.trapezoid(z, x), wnp.trapezoid(z, dx=0.5 + 1j)],
                    (Z4, points(4))),
    "polynomials": (lambda p, x: [wnp.polyval(p, x), wnp.polyval(wnp.real(p), x),
                                  wnp.vander(x, 3), wnp.vander(p, increasing=True)],
                    (points(3), Z4)),
    "linspace": (lambda a, b: [wnp.linspace(a, b, 5), wnp.linspace(a, 2.0, 4, endpoint=False,
                                                                   retstep=True)],
                 (points(), points(2))),
    "contractions": (lambda a, b: [a @ b, wnp.dot(a, b), wnp.tensordot(a, b, 1),
                                   wnp.einsum("ij,jk->ki", a, b), wnp.inner(a, b.T),
                                   wnp.outer(a[0], b[0]), wnp.kron(a, b),
                                   wnp.cross(a[0], b[:, 0])], (Z23, points(3, 2))),
    "shapes": (lambda a, b: [wnp.concatenate([a, b.T]), wnp.stack([a, b.T], axis=1),
                             wnp.hstack([a, b.T]), wnp.transpose(a), wnp.moveaxis(a, 0, 1),
                             wnp.reshape(a, (3, 2), order="F"), wnp.tile(a, (2, 1)),
                             wnp.repeat(a, 2, axis=1), wnp.rot90(a), wnp.roll(a, 1),
                             wnp.pad(a, 1, constant_values=1j), wnp.pad(a, 2, mode="reflect"),
                             wnp.tril(b @ a), wnp.diag(a[0]), wnp.diagonal(b @ a),
                             wnp.take(a, [0, 2, 2]), wnp.array_split(a, 2, axis=1)[1],
                             wnp.where(np.array([True, False, True]), a, b.T),
                             wnp.meshgrid(a[0], b[0])[1], wnp.full((2,), a[0, 0])],
               (Z23, points(3, 2))),
    "methods": (lambda z: [z.var(), z.std(axis=0), z.mean(), z.sum(1), z.prod(), z.cumsum(),
                           z.conj(), z.real, z.imag, z.T, z.dot(z.T), z.repeat(2)], (Z23,)),
    "numpy_dispatch": (lambda z: [np.var(z), np.cov(z), np.vdot(z, z), np.linalg.norm(z),
                                  np.correlate(z[0], z[1], "full"), np.linalg.det(z[:, :2])],
                       (Z23,)),
    "linalg_array_api": (lambda a, b: [la.matmul(a, b), la.outer(a[0], b[0]),
                                       la.tensordot(a, b, axes=1), la.diagonal(b @ a),
                                       la.trace(b @ a), la.matrix_transpose(a)],
                         (Z23, points(3, 2))),
    "var": (lambda z: wnp.var(z), (Z23,)),
    "var_axis_ddof": (lambda z: wnp.var(z, axis=0, ddof=1, keepdims=True), (Z23,)),
    "var_mean_given": (lambda z: wnp.var(z, axis=1, mean=wnp.mean(z, axis=1, keepdims=True)),
                       (Z23,)),
    "std": (lambda z: wnp.std(z, axis=1), (Z23,)),
    "var_std_complex_dtype": (lambda z: [wnp.var(z, dtype=np.complex128),
                                         wnp.std(wnp.real(z), axis=0, dtype=complex)], (Z23,)),
    "cov": (lambda z: wnp.cov(z), (Z23,)),
    "cov_y_bias": (lambda z, w: wnp.cov(z, w, rowvar=False, bias=True), (points(4, 2), Z4)),
    "cov_real_and_complex": (lambda x, z: wnp.cov(x, z), (reals(4), Z4)),
    "corrcoef": (lambda z: wnp.corrcoef(z), (points(3, 4),)),
    "corrcoef_y": (lambda z, w: wnp.corrcoef(z, w), (Z4, points(4))),
    "correlate_valid": (lambda a, v: wnp.correlate(a, v), (Z4, points(2))),
    "correlate_full_shorter_a": (lambda a, v: wnp.correlate(a, v, "full"), (points(2), Z4)),
    "correlate_same_real_a": (lambda a, v: wnp.correlate(a, v, "same"), (reals(4), points(3))),
    "convolve": (lambda a, v: wnp.convolve(a, v, "same"), (Z4, points(3))),
    "vdot": (lambda a, b: wnp.vdot(a, b), (Z23, points(3, 2))),
    "vdot_real": (lambda a, b: wnp.vdot(a, b), (reals(2, 2), reals(4))),
    "vecdot": (lambda a, b: wnp.vecdot(a, b), (Z23, points(3))),
    "linalg.vecdot_axis": (lambda a, b: la.vecdot(a, b, axis=0), (Z23, reals(2, 1))),
    "float_power": (lambda z, x: [wnp.float_power(z, x), wnp.float_power(x, z),
                                  wnp.float_power(x, [1.0, 2j, 0.5, 3])], (Z4, reals(4))),
    "interp": (lambda x, fp: wnp.interp(x, [-1.0, 0.0, 0.5, 2.0], fp), (
        np.array([-2.0, -0.5, 0.2, 1.0, 3.0]), points(4))),
    "interp_ends_period": (lambda fp: [wnp.interp(np.array([-2.0, 0.2, 3.0]), [0.0, 1.0, 2.0],
                                                  fp, left=1j, right=2.0),
                                       wnp.interp(np.array([-2.0, 0.2, 3.0]), [0.0, 1.0, 2.0],
                                                  fp, period=1.5)], (points(3),)),
    "linalg.inv": (lambda a: la.inv(a), (M33,)),
    "linalg.inv_batch": (lambda a: la.inv(a), (points(2, 3, 3) + 3 * np.eye(3),)),
    "linalg.det": (lambda a: la.det(a), (points(2, 3, 3),)),
    "linalg.slogdet": (lambda a: la.slogdet(a), (points(2, 3, 3) + 2 * np.eye(3),)),
    "linalg.slogdet_real_parts": (lambda x: la.slogdet(x * (1 + 0.5j)), (reals(3, 3),)),
    "linalg.solve": (lambda a, b: la.solve(a, b), (M33, points(3))),
    "linalg.solve_matrices": (lambda a, b: la.solve(a, b), (M33, points(2, 3, 2))),
    "linalg.solve_real_a": (lambda a, b: la.solve(a, b), (reals(3, 3) + np.eye(3),
                                                          points(3, 2))),
    "linalg.solve_real_b": (lambda a, b: la.solve(a, b), (M33, reals(3))),
    "linalg.matrix_power": (lambda a: [la.matrix_power(a, 3), la.matrix_power(a, -2)], (M33,)),
    "linalg.multi_dot": (lambda a, b, c: la.multi_dot([a, b, c]), (points(3), M33,
                                                                   points(3, 2))),
    "linalg.cond": (lambda a: [la.cond(a, p) for p in (1, -1, np.inf, -np.inf, "fro")],
                    (M33,)),
    "linalg.lstsq_complex_b": (lambda b: la.lstsq(np.array([[1.0, 0.5], [0.0, 1.0],
                                                            [1.0, 1.0]]), b), (points(3),)),
    "linalg.norm": (lambda z: la.norm(z), (Z23,)),
    "linalg.norm_vector_orders": (lambda z: [la.norm(z, o, axis=1) for o in
                                             (None, 2, 1, np.inf, -np.inf, 0, 3, 0.5)], (Z23,)),
    "linalg.norm_matrix_orders": (lambda z: [la.norm(z, o, axis=(1, 0), keepdims=True) for o in
                                             (None, "fro", 1, -1, np.inf, -np.inf)], (Z23,)),
    "linalg.vector_norm": (lambda z: la.vector_norm(z, axis=0, ord=3), (Z23,)),
    "linalg.matrix_norm": (lambda z: la.matrix_norm(z), (Z23,)),
    # the factorizations of complex matrices: of a Hermitian matrix made from any complex
    # one (so that a direction of any complex change is a Hermitian change), and only
    # functions that do not depend on the phase NumPy gives each eigenvector or pair of
    # singular vectors (docs/complex.md)
    "linalg.cholesky": (lambda x: [la.cholesky(_gram(x)), la.cholesky(_gram(x), upper=True)],
                        (points(3, 3),)),
    "linalg.cholesky_batch_hermitian_part": (lambda x: la.cholesky(_hermitian(x) + 4 * np.eye(3)),
                                             (points(2, 3, 3),)),
    "linalg.eigh": (lambda x: _eigh_invariants(la.eigh(_hermitian(x))), (points(3, 3),)),
    "linalg.eigh_upper_batch": (lambda x: _eigh_invariants(la.eigh(_hermitian(x), UPLO="U")),
                                (points(2, 3, 3),)),
    "linalg.eigvalsh": (lambda x: [la.eigvalsh(_hermitian(x)),
                                   la.eigvalsh(_hermitian(x), UPLO="U")], (points(2, 3, 3),)),
    "linalg.eigvalsh_real_part": (lambda x: la.eigvalsh(x * (1 + 0.5j) + x.T * (1 - 0.5j)),
                                  (reals(3, 3),)),
    "linalg.svd": (lambda x: _svd_invariants(la.svd(x)), (points(3, 3),)),
    "linalg.svd_tall": (lambda x: _svd_invariants(la.svd(x, full_matrices=False)),
                        (points(4, 2),)),
    "linalg.svd_wide": (lambda x: _svd_invariants(la.svd(x, full_matrices=False)),
                        (points(2, 4),)),
    "linalg.svd_batch": (lambda x: _svd_invariants(la.svd(x, full_matrices=False)),
                         (points(2, 3, 2),)),
    "linalg.svd_full_matrices": (lambda t, w: [la.svd(t).S, wnp.abs(la.svd(t).Vh) ** 2,
                                               wnp.abs(la.svd(w).U) ** 2, la.svd(w).S],
                                 (points(4, 2), points(2, 3))),
    "linalg.svd_hermitian": (lambda x: [*_svd_invariants(la.svd(_hermitian(x), hermitian=True)),
                                        la.svd(_hermitian(x), False, False, True)],
                             (points(3, 3),)),
    "linalg.svd_real_and_complex_factors": (lambda x: _svd_invariants(la.svd(x * (1 + 1j))),
                                            (reals(3, 3),)),
    "linalg.svdvals": (lambda x: [la.svdvals(x), la.svd(x, compute_uv=False),
                                  la.svdvals(x[..., :2, :])], (points(2, 3, 3),)),
    "linalg.qr": (lambda x: la.qr(x), (points(3, 3),)),
    "linalg.qr_tall": (lambda x: [*la.qr(x), la.qr(x, "r")], (points(4, 2),)),
    "linalg.qr_wide": (lambda x: [*la.qr(x), la.qr(x, "complete").R], (points(2, 4),)),
    "linalg.qr_batch": (lambda x: la.qr(x), (points(2, 3, 3),)),
    "linalg.qr_real_and_complex": (lambda x, z: la.qr(x + 0.3 * z), (reals(3, 2), points(3, 2))),
    "linalg.pinv": (lambda t, w: [la.pinv(t), la.pinv(w), la.pinv(_hermitian(w @ t),
                                                                  hermitian=True)],
                    (points(4, 2), points(2, 4))),
    "linalg.matrix_rank": (lambda x: [la.matrix_rank(x), la.matrix_rank(x[:, :1] * x[:1]),
                                      la.matrix_rank(_hermitian(x), hermitian=True)],
                           (points(3, 3),)),
    "linalg.norm_by_singular_values": (lambda x: [la.norm(x[0], o) for o in (2, -2, "nuc")]
                                       + [la.norm(x, 2, axis=(2, 0), keepdims=True),
                                          la.matrix_norm(x, ord="nuc")], (points(3, 2, 2),)),
    "linalg.cond_by_singular_values": (lambda x: [la.cond(x), la.cond(x, 2), la.cond(x, -2)],
                                       (points(2, 3, 3),)),
    # a general matrix's: NumPy's eigenvectors themselves (unit length, largest component
    # real: no phase is free)
    "linalg.eig": (lambda x: la.eig(x), (points(3, 3),)),
    "linalg.eig_batch": (lambda x: [*la.eig(x), la.eigvals(x)], (points(2, 3, 3),)),
    "linalg.eig_real_matrix": (lambda x: la.eig(x + np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0],
                                                              [0.0, 0.0, 2.0]])),
                               (reals(3, 3) * 0.3,)),
}


def _hermitian(x):
    """The Hermitian part of x."""
    return (x + wnp.conj(wnp.swapaxes(x, -1, -2))) / 2


def _gram(x):
    """x xᴴ + I, Hermitian positive definite."""
    return x @ wnp.conj(wnp.swapaxes(x, -1, -2)) + np.eye(x.shape[-1])


def _eigh_invariants(wv):
    """Functions of eigh's factors that do not depend on each eigenvector's phase: the
    eigenvalues, |V|², and the spectral sum V diag(f(w)) Vᴴ."""
    w, v = wv
    vh = wnp.conj(wnp.swapaxes(v, -1, -2))
    return w, wnp.abs(v) ** 2, (v * wnp.exp(w)[..., None, :]) @ vh


def _svd_invariants(usv):
    """Functions of svd's factors that do not depend on the phase of a pair of singular
    vectors: |U|², |Vh|², the products u_k v_kᴴ, and the reconstruction U S Vh."""
    u, s, vh = usv
    k = s.shape[-1]
    u, vh = u[..., :k], vh[..., :k, :]
    return wnp.abs(u) ** 2, wnp.abs(vh) ** 2, u[..., :, :1] * vh[..., :1, :], \
        (u * s[..., None, :]) @ vh


def _leaves(x):
    return flatten(x)[0]


@pytest.mark.parametrize("name", sorted(CASES))
def test_numpy_functions_on_complex_values(name):
    f, args = CASES[name]
    want = f(*args)                                 # NumPy's own, on plain arrays
    got = wg.trace(f, *args)(*args)
    for g, w in zip(_leaves(got), _leaves(want), strict=True):
        dg, dw = np.result_type(g), np.result_type(w)
        assert dg == dw or dg.kind == dw.kind == "i", (dg, dw)     # (lstsq's rank: int64)
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-15)
    check_complex_grads(f, *args)


# ---- closed forms ------------------------------------------------------------------------
def test_the_norm_of_a_complex_vector_is_real_and_its_gradient_is_its_conjugate_direction():
    z = points(4)
    for f in (la.norm, la.vector_norm, lambda z: la.norm(z, 2)):
        value, g = wg.value_and_grad(f)(z)
        assert type(value) is float and value == pytest.approx(np.linalg.norm(z), rel=1e-15)
        np.testing.assert_allclose(g, np.conj(z) / np.linalg.norm(z), rtol=1e-14)


def test_vdot_and_vecdot_conjugate_their_first_argument():
    a, b = points(3), points(3)
    for f in (wnp.vdot, wnp.vecdot, la.vecdot):
        assert wg.trace(f, a, b)(a, b) == pytest.approx(np.sum(np.conj(a) * b), rel=1e-14)
    # |a|² = vdot(a, a), real: its gradient is 2 conj(a)
    g = wg.grad(lambda a: wnp.real(wnp.vdot(a, a)))(a)
    np.testing.assert_allclose(g, 2 * np.conj(a), rtol=1e-14)
    with pytest.raises(ValueError, match="different lengths"):
        wg.trace(lambda a: wnp.vdot(a, np.ones(2)), a)


def test_correlate_conjugates_its_second_argument_and_convolve_does_not():
    a, v = points(3), points(1)
    np.testing.assert_allclose(wg.trace(wnp.correlate, a, v)(a, v), a * np.conj(v))
    np.testing.assert_allclose(wg.trace(wnp.convolve, a, v)(a, v), a * v)
    _, back = wg.vjp(wnp.correlate, a, v)
    ga, gv = back(np.ones(3) + 0j)             # d(a conj v): conj v da + a conj(dv)
    np.testing.assert_allclose(ga, np.full(3, np.conj(v[0])))
    np.testing.assert_allclose(gv, [np.conj(a.sum())])


def test_var_of_complex_values_is_the_mean_squared_distance_from_the_mean():
    # var z = Σ|z_k - m|²/n: the gradient (∂/∂x - i∂/∂y) is 2 conj(z - m)/n
    z = points(5)
    g = wg.grad(wnp.var)(z)
    np.testing.assert_allclose(g, 2 * np.conj(z - z.mean()) / 5, rtol=1e-13)
    g = wg.grad(wnp.std)(z)
    np.testing.assert_allclose(g, np.conj(z - z.mean()) / (5 * np.std(z)), rtol=1e-13)


def test_isfinite_and_isinf_read_complex_parts_apart_as_numpy():
    # |z| of huge finite parts overflows to inf: NumPy asks each part
    z = np.array([1e308 + 1e308j, complex(np.inf, 0), complex(np.nan, np.inf),
                  complex(1, np.nan), 1 + 1j, complex(-np.inf, np.nan)])
    for name in ("isfinite", "isinf", "isnan"):
        got = wg.trace(getattr(wnp, name), z)(z)
        np.testing.assert_array_equal(got, getattr(np, name)(z), err_msg=name)


def test_interp_of_complex_values_interpolates_the_parts_apart_as_numpy():
    x = np.array([-3.0, -1.0, 0.05, 0.3, 1.2, 1.75, 2.5, np.nan])
    xp, fp = [-2.0, -0.5, 0.1, 1.0, 1.5], np.array([1 + 1j, 2 - 1j, complex(np.inf, 1),
                                                    complex(3, np.nan), 4j])
    with np.errstate(invalid="ignore"):
        got = wg.trace(lambda fp: wnp.interp(x, xp, fp), fp)(fp)
    np.testing.assert_array_equal(got, np.interp(x, xp, fp))
    # x is real, and so are left and right of a real fp: NumPy's TypeErrors
    z = points(2)
    with pytest.raises(TypeError, match="Cannot cast array data from dtype"):
        wg.trace(lambda z: wnp.interp(z, [0.0, 1.0], [1.0, 2.0]), z)
    with pytest.raises(TypeError, match="must be real number, not complex"):
        wg.trace(lambda x: wnp.interp(x, [0.0, 1.0], [1.0, 2.0], left=1j), reals(2))


def test_linalg_derivatives_of_complex_matrices_in_closed_form():
    a = points(3, 3) + 2 * np.eye(3)
    inv_t = np.linalg.inv(a).T
    # the gradient of a real f (∂/∂x - i∂/∂y) of a holomorphic g = log det: f = Re g gives
    # g' = A⁻ᵀ, f = Im g = arg det A gives -i A⁻ᵀ
    g = wg.grad(lambda a: la.slogdet(a).logabsdet)(a)
    np.testing.assert_allclose(g, inv_t, rtol=1e-12)
    g = wg.grad(lambda a: wnp.angle(la.slogdet(a).sign))(a)
    np.testing.assert_allclose(g, -1j * inv_t, rtol=1e-12)
    _, back = wg.vjp(la.det, a)                     # d det = det A tr(A⁻¹ dA): no conjugate
    np.testing.assert_allclose(back(1.0 + 0j)[0], np.linalg.det(a) * inv_t, rtol=1e-12)
    # det's derivative at a singular complex matrix: its cofactors (its SVD is unitary, so
    # A⁻ᵀ there is conj(U) S⁻¹ conj(Vh))
    s = np.array([[1, 1j, 2], [2, 2j, 4], [1j, 1, 3]])
    minor = lambda i, j: np.linalg.det(np.delete(np.delete(s, i, 0), j, 1))
    cofactors = [[(-1) ** (i + j) * minor(i, j) for j in range(3)] for i in range(3)]
    np.testing.assert_allclose(wg.vjp(la.det, s)[1](1.0 + 0j)[0], cofactors, atol=1e-13)
    # a singular matrix's sign is 0 and its logabsdet -inf, as NumPy's
    with np.errstate(divide="ignore"):
        assert tuple(wg.trace(la.slogdet, s)(s)) == tuple(np.linalg.slogdet(s))


@pytest.mark.parametrize("a, b", [(points(4, 2), points(4)), (points(3, 2), reals(3, 2)),
                                  (points(2, 3), points(2))])
def test_lstsq_of_a_complex_matrix_is_numpys_and_differentiable(a, b):
    # (eagerly: whether there are residuals depends on the rank's value, which an abstract
    # trace does not know)
    f = lambda a, b: la.lstsq(a, b)[:2]
    got, want = wg.vjp(f, a, b)[0], np.linalg.lstsq(a, b)[:2]
    for g, w in zip(got, want, strict=True):
        assert np.result_type(g) == np.result_type(w)
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    check_complex_grads(f, a, b)


def test_factorization_derivatives_of_complex_matrices_in_closed_form():
    a = points(3, 3)
    u, s, vh = np.linalg.svd(a)
    # the gradient (∂/∂x - i∂/∂y) of a real f with df = Re tr(G dA) is Gᵀ: the spectral
    # norm's df = Re(u₁ᴴ dA v₁) gives conj(u₁ v₁ᴴ), the nuclear norm's conj(U Vh)
    g = wg.grad(lambda a: la.norm(a, 2))(a)
    np.testing.assert_allclose(g, np.conj(np.outer(u[:, 0], vh[0])), rtol=1e-12)
    g = wg.grad(lambda a: la.norm(a, "nuc"))(a)
    np.testing.assert_allclose(g, np.conj(u @ vh), rtol=1e-12, atol=1e-14)
    g = wg.grad(lambda a: la.cond(a))(a)        # s₁/s₃
    want = np.conj(np.outer(u[:, 0], vh[0]) / s[2] - s[0] / s[2] ** 2 * np.outer(u[:, 2],
                                                                                 vh[2]))
    np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-14)
    # a Hermitian positive-definite matrix: log det A = 2 Σ log L_kk (d log det A =
    # tr(A⁻¹ dA)), and the largest eigenvalue's derivative is v vᴴ
    h = _gram(a)
    g = wg.grad(lambda h: 2 * wnp.sum(wnp.log(wnp.real(wnp.diagonal(la.cholesky(h))))))(h)
    np.testing.assert_allclose(g, np.conj(np.linalg.inv(h)), rtol=1e-12)
    v = np.linalg.eigh(h).eigenvectors[:, -1]
    g = wg.grad(lambda h: la.eigvalsh(h)[-1])(h)
    np.testing.assert_allclose(g, np.conj(np.outer(v, v.conj())), rtol=1e-12, atol=1e-14)
    # |R₀₀| is the length of the first column
    g = wg.grad(lambda a: wnp.abs(la.qr(a).R[0, 0]))(a)
    np.testing.assert_allclose(g[:, 0], np.conj(a[:, 0]) / np.linalg.norm(a[:, 0]),
                               rtol=1e-12)
    np.testing.assert_allclose(g[:, 1:], 0, atol=1e-14)


def test_the_pseudo_inverse_of_a_complex_matrix_differentiates_as_its_closed_form():
    # of full column rank, pinv(A) = (AᴴA)⁻¹Aᴴ, written with inv (holomorphic rules) and
    # conj: the same pullback for any complex cotangent
    a, ct = points(4, 2), points(2, 4)
    closed = lambda a: la.inv(wnp.conj(a.T) @ a) @ wnp.conj(a.T)
    got, back = wg.vjp(la.pinv, a)
    want, back_closed = wg.vjp(closed, a)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(back(ct)[0], back_closed(ct)[0], rtol=1e-10)


def test_complex_qr_has_numpys_real_diagonal_in_r():
    # LAPACK's complex R has a real diagonal (of either sign): with it the factorization is
    # unique, and its derivative keeps the diagonal real
    a = points(3, 3)
    r = wg.vjp(lambda a: la.qr(a).R, a)[0]
    np.testing.assert_array_equal(r, np.linalg.qr(a).R)
    _, t = wg.jvp(lambda a: la.qr(a).R, (a,), (points(3, 3),))
    np.testing.assert_allclose(np.diagonal(t).imag, 0, atol=1e-14)


# JAX has the same convention: the same gradients, of functions that do not depend on the
# phases of eigenvectors and singular vectors (JAX's factors and NumPy's may differ in them)
JAX_CASES = {
    "cholesky": lambda xp, x: xp.sum(xp.abs(xp.linalg.cholesky(_gram_in(xp, x)) - 0.3j) ** 3),
    "eigh": lambda xp, x: xp.sum(xp.abs(xp.linalg.eigh(_herm_in(xp, x))[1]) ** 4
                                 * xp.arange(9.0).reshape(3, 3))
    + xp.sum(xp.linalg.eigh(_herm_in(xp, x))[0] ** 3),
    "svd": lambda xp, x: xp.sum(xp.abs(xp.linalg.svd(x, full_matrices=False)[0]) ** 3
                                * xp.arange(6.0).reshape(3, 2))
    + xp.sum(xp.abs(xp.linalg.svd(x, full_matrices=False)[2]) ** 3)
    + xp.sum(xp.sqrt(xp.linalg.svd(x, compute_uv=False))),
    "qr": lambda xp, x: xp.sum(xp.real(xp.linalg.qr(x)[0] * (1 + 2j))
                               + xp.imag(xp.linalg.qr(x)[1]) ** 2),
    "pinv": lambda xp, x: xp.sum(xp.abs(xp.linalg.pinv(x) + 1j) ** 2),
    # (JAX refuses derivatives of eig's eigenvectors without an opt-in: the eigenvalues)
    "eigvals": lambda xp, x: xp.sum(xp.real(xp.linalg.eigvals(x) * (1 - 2j)) ** 2
                                    + xp.abs(xp.linalg.eigvals(x)) ** 3),
}


def _herm_in(xp, x):
    return (x + xp.conj(xp.swapaxes(x, -1, -2))) / 2


def _gram_in(xp, x):
    return x @ xp.conj(xp.swapaxes(x, -1, -2)) + xp.eye(x.shape[-2])


def test_eig_eigenvector_gradients_are_jaxs_where_they_do_not_depend_on_the_phases(jax):
    # (JAX takes eigenvectors' derivatives on request, with a phase of its own choosing:
    # |V|³ does not see it)
    weights = np.arange(9.0).reshape(3, 3)
    jax_eig = lambda x: jax.lax.linalg.eig(x, compute_left_eigenvectors=False,
                                           enable_eigvec_derivs=True)[1]
    x = points(3, 3)
    got = wg.grad(lambda x: wnp.sum(wnp.abs(la.eig(x).eigenvectors) ** 3 * weights))(x)
    want = jax.grad(lambda x: jax.numpy.sum(jax.numpy.abs(jax_eig(x)) ** 3 * weights))(x)
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", sorted(JAX_CASES))
def test_factorization_gradients_of_complex_matrices_are_jaxs(name, jax):
    f = JAX_CASES[name]
    x = points(3, 3) if name in ("cholesky", "eigh", "qr", "eigvals") else points(3, 2)
    got = wg.grad(lambda x: f(wnp, x))(x)
    want = np.asarray(jax.grad(lambda x: f(jax.numpy, x))(x))
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["cholesky", "cholesky upper", "eigh", "eigh upper",
                                  "eigvalsh", "svd hermitian", "svdvals hermitian"])
def test_hermitian_derivatives_are_one_linear_map_for_every_complex_tangent(name):
    # they read one triangle of a Hermitian matrix, and differentiate as functions of its
    # Hermitian part: the JVP of any tangent is that of its Hermitian part, the VJP is
    # Hermitian, and the two are transposes (Re <c, J v> = Re <J'c, v>) for every v
    f = {"cholesky": lambda a: la.cholesky(a),
         "cholesky upper": lambda a: la.cholesky(a, upper=True),
         "eigh": lambda a: wnp.abs(la.eigh(a).eigenvectors) ** 2,
         "eigh upper": lambda a: wnp.abs(la.eigh(a, "U").eigenvectors) ** 2,
         "eigvalsh": lambda a: la.eigvalsh(a),
         "svd hermitian": lambda a: _svd_invariants(la.svd(a, hermitian=True))[3],
         "svdvals hermitian": lambda a: la.svd(a, False, False, True)}[name]
    a, v = _gram(points(3, 3)), points(3, 3)
    _, t = wg.jvp(f, (a,), (v,))
    np.testing.assert_allclose(t, wg.jvp(f, (a,), ((v + v.conj().T) / 2,))[1], atol=1e-12)
    ct = points(*np.shape(t)) if np.iscomplexobj(t) else reals(*np.shape(t))
    (g,) = wg.vjp(f, a)[1](ct)
    np.testing.assert_allclose(g, g.conj().T, atol=1e-12)
    np.testing.assert_allclose(np.sum(ct * t).real, np.sum(g * v).real, rtol=1e-10)


def test_eig_pairs_numpys_eigenvalues_with_its_eigenvectors():
    for a in (points(4, 4), points(3, 5, 5), reals(5, 5), reals(2, 4, 4) - 1):
        w, v = wg.vjp(la.eig, a)[0]
        want = np.linalg.eig(a)
        np.testing.assert_array_equal(w, want.eigenvalues)
        np.testing.assert_array_equal(v, want.eigenvectors)
        np.testing.assert_array_equal(wg.vjp(la.eigvals, a)[0], want.eigenvalues)
        np.testing.assert_allclose(a @ v, v * w[..., None, :], atol=1e-12)


def test_eig_of_a_real_matrix_is_complex_even_when_numpys_is_real():
    # NumPy's dtype depends on the values (real when every eigenvalue is): a traced value's
    # cannot, so it is complex, with NumPy's values, as JAX's is
    a = np.array([[2.0, 1.0], [0.5, 3.0]])
    w, v = wg.vjp(la.eig, a)[0]
    assert w.dtype == v.dtype == np.complex128 and np.linalg.eig(a).eigenvalues.dtype == float
    np.testing.assert_array_equal(w, np.linalg.eig(a).eigenvalues)
    assert wg.trace(la.eigvals, a.astype(np.float32)).outputs[0].dtype == np.complex64
    # d λ_j = uⱼᵀ dA vⱼ / (uⱼᵀ vⱼ), u the left eigenvectors: the gradient of Re λ is u vᵀ/(uᵀv)
    lam, vr = np.linalg.eig(a)
    lam_l, ul = np.linalg.eig(a.T)
    for j in range(2):
        u = ul[:, np.argmin(abs(lam_l - lam[j]))]
        g = wg.grad(lambda a: wnp.real(la.eigvals(a)[j]))(a)
        np.testing.assert_allclose(g, np.outer(u, vr[:, j]) / (u @ vr[:, j]), rtol=1e-12)


def test_complex64_results_stay_complex64_as_numpys():
    z = points(2, 3).astype(np.complex64)
    where = np.array([[True, False, True]] * 2)
    for f in (lambda z: wnp.mean(z, where=where), lambda z: wnp.var(z, axis=1, where=where),
              lambda z: wnp.mean(wnp.real(z), where=where), wnp.var, la.norm,
              lambda z: la.det(z[:, :2]), lambda z: la.slogdet(z[:, :2]), la.svdvals,
              lambda z: la.qr(z[:, :2]), lambda z: la.eigvalsh(_hermitian(z[:, :2])),
              lambda z: la.cholesky(_gram(z[:, :2]))):
        for got, want in zip(_leaves(wg.trace(f, z)(z)), _leaves(f(z))):
            assert np.result_type(got) == np.result_type(want)
            np.testing.assert_allclose(got, want, rtol=1e-5)
        assert wg.vjp(lambda z: f(z), z)[1](f(z))[0].dtype == np.complex64


# ---- refusals ----------------------------------------------------------------------------
# What each public function of wengert.numpy that NumPy defines does with complex values:
# gives NumPy's value and derivatives (the cases above), or refuses them (below).
TAKES = set("""
    abs absolute add all allclose angle any arccos arccosh arcsin arcsinh arctan arctanh
    argwhere around array array_equal array_split asarray astype atleast_1d atleast_2d
    atleast_3d average broadcast_to concatenate conj conjugate convolve corrcoef correlate cos
    cosh count_nonzero cov cross cumprod cumsum diag diagonal diff divide dot dsplit einsum
    empty_like equal exp exp2 expand_dims expm1 flatnonzero flip fliplr flipud float_power
    full full_like gradient hsplit hstack imag inner interp isclose isfinite isinf isnan kron
    linspace log log10 log1p log2 logical_and logical_not logical_or logical_xor matmul
    matrix_transpose mean meshgrid moveaxis multiply nan_to_num nanmean nansum ndim negative
    nonzero not_equal ones_like outer pad polyval positive power prod ravel real
    real_if_close reciprocal repeat reshape rint roll rollaxis rot90 round select shape sign
    sin sinc sinh size split sqrt square squeeze stack std subtract sum swapaxes take
    take_along_axis tan tanh tensordot tile trace transpose trapezoid tril triu true_divide
    vander var vdot vecdot vsplit vstack where zeros_like
    iscomplex isreal sort_complex nanprod nancumsum nancumprod nanvar nanstd searchsorted isin
    unique unique_all unique_counts unique_inverse unique_values poly polyadd polysub polymul
    polydiv polyder polyint polyfit roots logspace geomspace piecewise
    array_equiv array_str array_repr array2string format_float_positional
    format_float_scientific""".split())
# NumPy orders complex numbers lexicographically; wengert's rules for these are for reals
ORDERINGS = {
    "maximum": "maximum", "minimum": "minimum", "fmax": "ge", "fmin": "le", "max": "amax",
    "amax": "amax", "min": "amin", "amin": "amin", "ptp": "amax", "nanmax": "amax",
    "nanmin": "amin", "argmax": "argmax", "argmin": "argmin", "sort": "argsort",
    "argsort": "argsort", "partition": "argpartition", "argpartition": "argpartition",
    "median": "argsort", "clip": "maximum", "less": "lt", "less_equal": "le",
    "greater": "gt", "greater_equal": "ge", "nanargmax": "argmax", "nanargmin": "argmin",
    "nanmedian": "argsort", "lexsort": "argsort", "histogram": "amin", "histogramdd": "amin",
    "histogram2d": "amin", "histogram_bin_edges": "amin"}
# NumPy has no complex loop for these (wengert refuses with its own TypeError or NumPy's)
NUMPY_REFUSES = """arctan2 hypot logaddexp logaddexp2 floor ceil trunc fix fmod remainder mod cbrt
    fabs deg2rad radians rad2deg degrees signbit copysign heaviside ldexp quantile percentile
    bitwise_and bitwise_or bitwise_xor bitwise_not invert floor_divide divmod modf frexp spacing
    nextafter i0 isposinf isneginf unwrap nanquantile nanpercentile digitize bincount
    unravel_index ravel_multi_index kaiser""".split()
# assembling and taking apart, matvec, vecmat and the cumulative functions take them (checked
# in tests/test_numpy_assembly.py); those that write in place refuse any traced value
ASSEMBLY = set("""append apply_along_axis apply_over_axes block broadcast_arrays choose
    column_stack compress concat copy cumulative_prod cumulative_sum delete diagflat dstack
    ediff1d extract insert matvec permute_dims resize row_stack trim_zeros unstack
    vecmat""".split()) & set(dir(np))
IN_PLACE = {"place", "put", "putmask", "put_along_axis", "fill_diagonal", "copyto"}
# dtype and shape queries, and the layout functions (asarray): checked in tests/test_numpy.py
QUERIES = {"result_type", "can_cast", "common_type", "min_scalar_type", "iscomplexobj",
           "isrealobj", "isfortran", "diag_indices_from", "tril_indices_from",
           "triu_indices_from", "iterable", "isscalar", "asanyarray", "ascontiguousarray",
           "asfortranarray", "require", "asarray_chkfinite", "einsum_path"}
# the set operations gather their values (checked in tests/test_numpy_stats.py)
SETS = {"union1d", "intersect1d", "setdiff1d", "setxor1d"}
ARGUMENTS = {"clip": (0.0, 1.0), "partition": (1,), "argpartition": (1,), "quantile": (0.5,),
             "percentile": (50,), "ldexp": (2,), "nanquantile": (0.5,), "nanpercentile": (50,),
             "digitize": ([0.0, 1.0],), "unravel_index": ((2, 2),),
             "piecewise": (True, [lambda t: t * t])}
UNARY = {"sort", "argsort", "median", "max", "amax", "min", "amin", "ptp", "nanmax", "nanmin",
         "argmax", "argmin", "floor", "ceil", "trunc", "fix", "cbrt", "fabs", "deg2rad",
         "radians", "rad2deg", "degrees", "signbit", "bitwise_not", "invert", "modf", "frexp",
         "spacing", "i0", "isposinf", "isneginf", "unwrap", "nanargmax", "nanargmin",
         "nanmedian", "bincount", "histogram", "histogramdd", "histogram_bin_edges"}


def _call(name, z):
    f = getattr(wnp, name)
    if name == "kaiser":                               # (a length first, then beta)
        return f(4, z[0])
    if name in ("lexsort", "ravel_multi_index"):       # (a sequence of arrays first)
        return f((z, z)) if name == "lexsort" else f((z, z), (4, 4))
    if name in ARGUMENTS:
        return f(z, *ARGUMENTS[name])
    return f(z) if name in UNARY else f(z, z)


def _traced_at_all(v):
    """Whether a function of wengert.numpy takes traced values at all: not one of NumPy's
    functions that the module's __getattr__ hands out refusing them (remembered in the
    module once used, so whether they are in vars() depends on what ran before)."""
    return not getattr(v, "wengert_unsupported", False) and \
        getattr(v, "traced", True) is not None                  # (a refused _Ufunc)


def test_every_function_of_wengert_numpy_takes_or_refuses_complex_values():
    import types
    public = {n for n, v in vars(wnp).items() if not n.startswith("_") and callable(v)
              and not isinstance(v, (type, types.ModuleType)) and hasattr(np, n)
              and _traced_at_all(v)}
    said = TAKES | set(ORDERINGS) | set(NUMPY_REFUSES) | ASSEMBLY | IN_PLACE | QUERIES | SETS
    assert public == said, (public - said, said - public)
    # linalg: every function that takes traced values takes complex ones (the
    # factorizations' rules have their conjugate transposes), none refuses them
    takes = set("inv det slogdet solve matrix_power multi_dot norm vector_norm matrix_norm "
                "cond lstsq matmul outer tensordot diagonal trace vecdot matrix_transpose "
                "cholesky eigh eigvalsh svd svdvals qr pinv matrix_rank eig eigvals tensorsolve "
                "tensorinv cross".split())
    public = {n for n, v in vars(la).items() if not n.startswith("_") and callable(v)
              and not isinstance(v, type) and hasattr(np.linalg, n) and _traced_at_all(v)}
    assert public == takes, (public - takes, takes - public)


@pytest.mark.parametrize("name", sorted(ORDERINGS))
def test_orderings_refuse_complex_values_naming_their_primitive(name):
    z = points(4)
    with pytest.raises(TypeError, match=f"{ORDERINGS[name]} of complex values"):
        wg.trace(lambda z: _call(name, z), z)


@pytest.mark.parametrize("name", NUMPY_REFUSES)
def test_what_numpy_refuses_for_complex_values_wengert_refuses_too(name):
    z = points(4)
    with pytest.raises((TypeError, NotImplementedError)):
        _call(name, z)                              # NumPy's, on a plain array
    with pytest.raises((TypeError, NotImplementedError), match="complex|not supported"):
        wg.trace(lambda z: _call(name, z), z)


@pytest.mark.parametrize("f", [
    lambda z, x: wnp.deg2rad(z), lambda z, x: wnp.radians(z), lambda z, x: wnp.rad2deg(z),
    lambda z, x: wnp.degrees(z), lambda z, x: wnp.signbit(z), lambda z, x: wnp.copysign(z, x),
    lambda z, x: wnp.copysign(x, z), lambda z, x: wnp.heaviside(x, z),
    lambda z, x: wnp.ldexp(z, wnp.astype(x, int))])
def test_ufuncs_without_a_complex_loop_in_numpy_refuse_complex_values_as_numpy(f):
    # written with primitives that take complex values, they would compute something
    z, x = points(3), reals(3)
    with pytest.raises(TypeError, match="not supported for the input types"):
        f(z, x)                                     # NumPy's own
    with pytest.raises(TypeError, match="not supported for the input types"):
        wg.trace(f, z, x)
