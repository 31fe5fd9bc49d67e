"""wengert.lax.linalg (JAX's jax.lax.linalg) and wengert.lax.fft: every function against
JAX's values, on plain and on traced arguments, real and complex, with batch dimensions;
the derivatives against central differences (to second order where cheap) and against
JAX's own JVPs where JAX differentiates; vmap against a loop and compile against eager;
and the errors."""
import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from wengert import lax
from wengert.lax import linalg as L
from fd import check_complex_grads, check_grads

rng = np.random.default_rng(20260720)


def r(*shape):
    return rng.normal(size=shape)


def z(*shape):
    return rng.normal(size=shape) + 1j * rng.normal(size=shape)


def H(x):
    return np.conj(np.swapaxes(x, -1, -2))


def hpd(a):
    """A symmetric (Hermitian) positive-definite matrix made from a square a."""
    return a @ H(a) + a.shape[-1] * np.eye(a.shape[-1])


def well(a):
    """A well-conditioned matrix made from a square a (diagonally dominant)."""
    return a + 2 * a.shape[-1] * np.eye(a.shape[-1])


def canonical(v):
    """v's columns with their largest component made real and positive: eigenvectors and
    singular vectors compared without the sign (phase) LAPACK picks."""
    v = np.asarray(v)
    k = np.argmax(np.abs(v), axis=-2)[..., None, :]
    largest = np.take_along_axis(v, k, axis=-2)
    return v * np.conj(largest) / np.abs(largest)


def traced(f, *args):
    """f's values on traced arguments (an eager trace, as under wg.grad)."""
    return wg.vjp(f, *args)[0]


def close(got, want, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol)


def close_trees(got, want, **tol):
    assert type(got) in (list, tuple) and len(got) == len(want), (type(got), len(got))
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype, (np.asarray(g).dtype, w.dtype)
        close(g, w, **tol)


@pytest.fixture
def jl(jax):
    """jax.lax.linalg (conftest's JAX, in float64)."""
    return jax.lax.linalg


# ---- values against JAX's ----------------------------------------------------------------------
# name -> (call(linalg, *args), args, post): call is run with wengert.lax.linalg (on plain
# and on traced arguments) and with jax.lax.linalg; `post` (if given) makes the results
# comparable where LAPACK's choice of a sign or phase is free.
def _eigh_post(out):
    v, w = out
    return [canonical(v), w]


def _svd_post(out):
    u, s, vh = out
    return [canonical(u), s, canonical(H(vh))]


def _eig_post(out):
    return [out[0]] + [canonical(v) for v in out[1:]]


_S, _Z = hpd(r(2, 4, 4)), hpd(z(3, 3))
VALUES = {
    "cholesky": (lambda l, a: l.cholesky(a), [_S], None),
    "cholesky complex": (lambda l, a: l.cholesky(a), [_Z], None),
    "cholesky lower only": (lambda l, a: l.cholesky(a, symmetrize_input=False),
                            [_S + np.triu(r(4, 4), 1)], None),
    "cholesky lower only complex": (lambda l, a: l.cholesky(a, symmetrize_input=False),
                                    [_Z + np.triu(z(3, 3), 1)], None),
    "eig": (lambda l, a: l.eig(a), [r(2, 4, 4)], _eig_post),
    "eig complex": (lambda l, a: l.eig(a), [z(4, 4)], _eig_post),
    "eig right": (lambda l, a: l.eig(a, compute_left_eigenvectors=False), [r(3, 3)],
                  _eig_post),
    "eig left": (lambda l, a: l.eig(a, compute_right_eigenvectors=False), [z(3, 3)],
                 _eig_post),
    "eig values": (lambda l, a: l.eig(a, compute_left_eigenvectors=False,
                                      compute_right_eigenvectors=False), [r(2, 3, 3)], None),
    "eigh": (lambda l, a: l.eigh(a), [r(2, 4, 4)], _eigh_post),
    "eigh complex": (lambda l, a: l.eigh(a), [z(3, 3)], _eigh_post),
    "eigh lower": (lambda l, a: l.eigh(a, symmetrize_input=False), [r(4, 4)], _eigh_post),
    "eigh upper": (lambda l, a: l.eigh(a, lower=False, symmetrize_input=False),
                   [z(2, 3, 3)], _eigh_post),
    "hessenberg": (lambda l, a: l.hessenberg(a), [r(2, 5, 5)], None),
    "hessenberg complex": (lambda l, a: l.hessenberg(a), [z(4, 4)], None),
    "tridiagonal": (lambda l, a: l.tridiagonal(a), [r(2, 5, 5)], None),
    "tridiagonal upper": (lambda l, a: l.tridiagonal(a, lower=False), [r(4, 4)], None),
    "tridiagonal complex": (lambda l, a: l.tridiagonal(a), [z(4, 4)], None),
    "tridiagonal complex upper": (lambda l, a: l.tridiagonal(a, lower=False), [z(2, 4, 4)],
                                  None),
    "householder_product": (lambda l, a, t: l.householder_product(a, t),
                            [r(2, 5, 3), r(2, 2)], None),
    "householder_product complex": (lambda l, a, t: l.householder_product(a, t),
                                    [z(4, 4), z(3)], None),
    "ormqr": (lambda l, a, t, c: l.ormqr(a, t, c), [r(5, 3), r(3), r(5, 2)], None),
    "ormqr transpose": (lambda l, a, t, c: l.ormqr(a, t, c, transpose=True),
                        [z(2, 4, 3), z(2, 2), z(2, 4, 3)], None),
    "ormqr right": (lambda l, a, t, c: l.ormqr(a, t, c, left=False),
                    [r(3, 5), r(3), r(2, 3)], None),
    "ormqr right transpose": (lambda l, a, t, c: l.ormqr(a, t, c, left=False, transpose=True),
                              [z(4, 4), z(4), z(3, 4)], None),
    "lu": (lambda l, a: l.lu(a), [r(2, 4, 4)], None),
    "lu tall": (lambda l, a: l.lu(a), [r(2, 6, 3)], None),
    "lu wide": (lambda l, a: l.lu(a), [r(3, 5)], None),
    "lu complex tall": (lambda l, a: l.lu(a), [z(5, 4)], None),
    "qr": (lambda l, a: l.qr(a), [r(2, 4, 4)], None),
    "qr tall": (lambda l, a: l.qr(a), [r(2, 5, 3)], None),
    "qr tall reduced": (lambda l, a: l.qr(a, full_matrices=False), [r(5, 3)], None),
    "qr wide": (lambda l, a: l.qr(a), [r(3, 5)], None),
    "qr complex tall": (lambda l, a: l.qr(a), [z(4, 2)], None),
    "qr pivoting": (lambda l, a: l.qr(a, pivoting=True), [r(2, 5, 3)], None),
    "qr pivoting wide reduced": (lambda l, a: l.qr(a, pivoting=True, full_matrices=False),
                                 [z(3, 5)], None),
    "schur": (lambda l, a: l.schur(a), [r(2, 4, 4)], None),
    "schur complex": (lambda l, a: l.schur(a), [z(3, 3)], None),
    "schur without vectors": (lambda l, a: l.schur(a, compute_schur_vectors=False),
                              [r(3, 3)], None),
    "svd": (lambda l, a: l.svd(a), [r(2, 5, 3)], _svd_post),
    "svd wide reduced": (lambda l, a: l.svd(a, full_matrices=False), [z(3, 5)], _svd_post),
    "svd values": (lambda l, a: [l.svd(a, compute_uv=False)], [r(2, 3, 4)], None),
    "triangular_solve": (lambda l, a, b: [l.triangular_solve(a, b)], [well(r(4, 4)), r(2, 4)],
                         None),
    "triangular_solve left lower": (
        lambda l, a, b: [l.triangular_solve(a, b, left_side=True, lower=True)],
        [well(r(2, 3, 3)), r(2, 3, 2)], None),
    "triangular_solve vector": (lambda l, a, b: [l.triangular_solve(a, b, transpose_a=True)],
                                [well(z(3, 3)), z(3)], None),
    "tridiagonal_solve": (lambda l, dl, d, du, b: [l.tridiagonal_solve(dl, d, du, b)],
                          [r(2, 5), r(2, 5) + 6, r(2, 5), r(2, 5, 3)], None),
    "tridiagonal_solve complex": (lambda l, dl, d, du, b: [l.tridiagonal_solve(dl, d, du, b)],
                                  [z(4), z(4) + 6, z(4), z(4, 1)], None),
    "symmetric_product": (lambda l, a, c: [l.symmetric_product(a, c, alpha=0.5, beta=2.0)],
                          [r(2, 3, 4), r(2, 3, 3)], None),
    "symmetric_product symmetrized": (
        lambda l, a, c: [l.symmetric_product(a, c, alpha=-1.0, beta=0.5,
                                             symmetrize_output=True)], [r(3, 2), r(3, 3)],
        None),
    "cholesky_update": (lambda l, rr, w: [l.cholesky_update(rr, w)],
                        [np.linalg.cholesky(_S[0]).T, r(4)], None),
    "qdwh": (lambda l, x: l.qdwh(x), [r(6, 4)], None),
    "qdwh square": (lambda l, x: l.qdwh(x), [r(4, 4)], None),
    "qdwh complex": (lambda l, x: l.qdwh(x), [z(4, 3)], None),
    "qdwh few iterations": (lambda l, x: l.qdwh(x, max_iterations=2), [r(4, 3)], None),
    "qdwh dynamic_shape": (lambda l, x: l.qdwh(x, dynamic_shape=(4, 2)), [r(5, 3)], None),
}


def _results(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


@pytest.mark.parametrize("name", sorted(VALUES))
def test_values_are_jaxs_on_plain_and_traced_arguments(name, jl):
    call, args, post = VALUES[name]
    post = post or (lambda out: list(out))
    want = post([np.asarray(x) for x in _results(call(jl, *args))])
    plain = call(L, *args)
    kind = type(call(jl, *args))                    # (JAX's list or tuple, or one array)
    assert type(plain) is kind if kind in (list, tuple) else not isinstance(plain, (list,
                                                                                  tuple))
    close_trees(post(_results(plain)), want, rtol=1e-9, atol=1e-10)
    got = traced(lambda *a: call(L, *a), *args)
    close_trees(post(_results(got)), want, rtol=1e-9, atol=1e-10)


def test_values_in_single_precision_stay_single(jl):
    a = hpd(r(3, 3)).astype(np.float32)
    for f in (lambda l, a: l.cholesky(a), lambda l, a: l.eigh(a)[1], lambda l, a: l.lu(a)[0],
              lambda l, a: l.qr(a)[1], lambda l, a: l.svd(a, compute_uv=False),
              lambda l, a: l.hessenberg(a)[0], lambda l, a: l.tridiagonal(a)[1],
              lambda l, a: l.qdwh(a)[0], lambda l, a: l.eig(a)[0]):
        want = np.asarray(f(jl, a))
        for got in (f(L, a), traced(lambda a: f(L, a), a)):
            assert got.dtype == want.dtype, (got.dtype, want.dtype)
            close(got, want, rtol=1e-4, atol=1e-5)


def test_lu_pivots_and_permutations_are_jaxs(jl):
    for shape in [(4, 4), (6, 3), (3, 6), (2, 5, 2)]:
        a = r(*shape)
        _, pivots, perm = jl.lu(a)
        for got in (L.lu(a), traced(L.lu, a)):
            assert got[1].dtype == np.int32 and got[2].dtype == np.int32
            assert np.array_equal(got[1], pivots) and np.array_equal(got[2], perm)
            assert np.array_equal(wg.numpy.asarray(got[2]), perm)
    pivots = np.array([[2, 2, 3], [1, 4, 4]], np.int32)
    for size in (5, 7):
        want = np.asarray(jl.lu_pivots_to_permutation(pivots, size))
        got = L.lu_pivots_to_permutation(pivots, size)
        assert got.dtype == np.int32 and np.array_equal(got, want)
    jit = wg.jit(lambda p: L.lu_pivots_to_permutation(p, 6))          # pivots without values
    assert np.array_equal(jit(pivots), jl.lu_pivots_to_permutation(pivots, 6))
    assert np.array_equal(L.lu_pivots_to_permutation(pivots[0, :2].astype(np.int64), 3),
                          jl.lu_pivots_to_permutation(pivots[0, :2], 3))


def test_eigh_and_svd_subsets_are_slices_of_the_whole(jl):
    a = hpd(r(2, 5, 5))
    v, w = L.eigh(a, subset_by_index=(1, 4))
    vall, wall = jl.eigh(a)
    close(w, np.asarray(wall)[..., 1:4])
    close(canonical(v), canonical(np.asarray(vall)[..., 1:4]))
    x = z(4, 3)
    u, s, vh = L.svd(x, full_matrices=False, subset_by_index=(0, 2))
    uu, ss, vvh = jl.svd(x, full_matrices=False)
    close(s, np.asarray(ss)[:2])
    close(canonical(u), canonical(np.asarray(uu)[:, :2]))
    close(canonical(H(vh)), canonical(H(np.asarray(vvh)[:2])))
    close(L.svd(x, full_matrices=False, compute_uv=False, subset_by_index=(1, 3)),
          np.asarray(ss)[1:])
    check_grads(lambda a: L.eigh(a, subset_by_index=(2, 4))[1], a[0])
    check_grads(lambda x: L.svd(x, full_matrices=False, compute_uv=False,
                                subset_by_index=(0, 2)), r(4, 3))


@pytest.mark.parametrize("n", [1, 2])
def test_reductions_of_the_smallest_matrices_are_jaxs(n, jl):
    a = z(n, n)
    for f in (lambda l, a: l.hessenberg(a), lambda l, a: l.tridiagonal(a),
              lambda l, a: l.tridiagonal(a.real, lower=False)):
        want = [np.asarray(w) for w in f(jl, a)]
        close_trees(f(L, a), want)
        close_trees(traced(lambda a: f(L, a), a), want)


def test_a_column_already_reduced_takes_the_identity_reflector(jl):
    # LAPACK's reflector for a column that is zero below the diagonal is the identity (tau
    # 0): the values are LAPACK's, and the derivative is that branch's, finite (JAX: nan)
    e = np.eye(4, 2)
    close_trees(traced(L.qr, e), [np.asarray(w) for w in jl.qr(e)])
    close_trees(traced(L.hessenberg, np.triu(np.ones((3, 3)))),
                [np.asarray(w) for w in jl.hessenberg(np.triu(np.ones((3, 3))))])
    g = wg.grad(lambda x: wnp.sum(L.qr(x)[0][:, -1]))(e)
    assert np.isfinite(g).all()


def test_eig_left_eigenvectors_are_unit_left_eigenvectors():
    for a in (r(2, 4, 4), z(4, 4)):
        w, vl, vr = L.eig(a)
        close(H(vl) @ a, w[..., :, None] * H(vl))
        close(np.linalg.norm(vl, axis=-2), 1.0)
        close(vl, canonical(vl))                  # the largest component real, positive


def test_enums_and_names_ports_reach_for():
    import wengert as jax
    assert jax.lax.linalg is L and wg.lax.linalg.qr is L.qr
    import wengert.lax.linalg as again
    assert again is L
    a = hpd(r(3, 3))
    for member in L.EighImplementation:
        close(L.eigh(a, implementation=member)[1], L.eigh(a)[1])
    for member in L.SvdAlgorithm:
        close(L.svd(a, algorithm=member, compute_uv=False), np.linalg.svd(a, compute_uv=False))
    close(L.eig(a, implementation=L.EigImplementation.LAPACK)[0], np.linalg.eigvals(a))
    assert L.SvdAlgorithm("Jacobi") is L.SvdAlgorithm.JACOBI
    with pytest.raises(TypeError, match="svd: algorithm must be None or a SvdAlgorithm, got "
                                        "'QR'"):
        L.svd(a, algorithm="QR")
    with pytest.raises(AttributeError, match="JAX's primitives are not offered; call qr"):
        L.qr_p
    with pytest.raises(AttributeError, match="wengert.lax.linalg has no 'geqrf'"):
        L.geqrf
    assert not hasattr(L, "geqrf")


# ---- derivatives -------------------------------------------------------------------------------
def test_cholesky_derivatives(jax):
    a = hpd(r(3, 3)) + 0.3 * r(3, 3)              # not symmetric: the symmetrized one is read
    check_grads(L.cholesky, a)
    lower = np.tril(hpd(r(3, 3))) + np.triu(r(3, 3), 1)
    check_grads(lambda a: L.cholesky(a, symmetrize_input=False), lower)
    # the upper triangle is not read: a change there changes nothing
    e = np.triu(np.ones((3, 3)), 1)
    close(wg.jvp(lambda a: L.cholesky(a, symmetrize_input=False), (lower,), (e,))[1], 0.0)
    check_complex_grads(L.cholesky, hpd(z(2, 3, 3)))
    check_complex_grads(lambda a: L.cholesky(a, symmetrize_input=False),
                        hpd(z(3, 3)) + np.triu(z(3, 3), 1), order=1)
    # JAX's JVP, along a symmetric direction (its rule reads both triangles)
    s, t = hpd(r(2, 4, 4)), r(2, 4, 4)
    t = t + np.swapaxes(t, -1, -2)
    for sym in (True, False):
        f = lambda a: L.cholesky(a, symmetrize_input=sym)
        jf = lambda a: jax.lax.linalg.cholesky(a, symmetrize_input=sym)
        close(wg.jvp(f, (s,), (t,))[1], jax.jvp(jf, (s,), (t,))[1])


def test_eigh_derivatives(jax):
    def invariants(out):
        v, w = out                                 # w, and the projectors v_k v_kᴴ
        return w, wnp.einsum("...ik,...jk->...kij", v, wnp.conj(v))
    a = r(4, 4)
    check_grads(lambda a: invariants(L.eigh(a)), a)
    check_grads(lambda a: invariants(L.eigh(a, lower=False, symmetrize_input=False)), a)
    check_complex_grads(lambda a: invariants(L.eigh(a)), z(2, 3, 3))
    s, t = hpd(r(4, 4)), r(4, 4)
    t = t + t.T
    want = jax.jvp(lambda a: jax.lax.linalg.eigh(a)[1], (s,), (t,))[1]
    close(wg.jvp(lambda a: L.eigh(a)[1], (s,), (t,))[1], want)


def test_eig_derivatives(jax):
    a = r(4, 4)
    check_grads(lambda a: wnp.real(L.eig(a)[0]) + wnp.imag(L.eig(a)[0]) ** 2, a)
    check_grads(lambda a: [wnp.abs(v) ** 2 for v in L.eig(a)[1:]], a, order=1)
    # a complex matrix's eigenvectors are unique (unit, largest component real): directly
    check_complex_grads(lambda a: L.eig(a), z(3, 3), order=1)
    t = r(4, 4)
    want = jax.jvp(lambda a: jax.lax.linalg.eig(a, compute_left_eigenvectors=False,
                                                  compute_right_eigenvectors=False)[0],
                   (a,), (t,))[1]
    close(wg.jvp(lambda a: L.eig(a, compute_left_eigenvectors=False)[0], (a,), (t,))[1], want)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_lu_derivatives(shape, jax):
    a = r(*shape)
    check_grads(lambda a: L.lu(a)[0], a)
    check_complex_grads(lambda a: L.lu(a)[0], z(2, *shape), order=1)
    t = r(*shape)
    close(wg.jvp(lambda a: L.lu(a)[0], (a,), (t,))[1],
          jax.jvp(lambda a: jax.lax.linalg.lu(a)[0], (a,), (t,))[1])


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
@pytest.mark.parametrize("full", [True, False])
def test_qr_derivatives(shape, full, jax):
    a = r(*shape)
    f = lambda a: L.qr(a, full_matrices=full)
    check_grads(f, a)
    check_complex_grads(f, z(*shape), order=1)
    t = r(2, *shape)
    a = r(2, *shape)
    want = jax.jvp(lambda a: jax.lax.linalg.qr(a, full_matrices=full), (a,), (t,))[1]
    close_trees(wg.jvp(f, (a,), (t,))[1], [np.asarray(w) for w in want])
    g = lambda a: L.qr(a, full_matrices=full, pivoting=True)[:2]
    check_grads(g, a, order=1)
    if shape[0] < shape[1]:
        # JAX 0.10.2's JVP of a wide matrix's pivoted R is wrong (its R₂ = Qᴴ X₂ takes X₂
        # from the columns before pivoting): differences disagree with it by O(1), and
        # agree with wengert's (check_grads above)
        return
    # (JAX's pivoted JVP takes one matrix: its rule's solves refuse a batch)
    want = jax.jvp(lambda a: jax.lax.linalg.qr(a, full_matrices=full, pivoting=True)[:2],
                   (a[0],), (t[0],))[1]
    close_trees(wg.jvp(g, (a[0],), (t[0],))[1], [np.asarray(w) for w in want])


def test_svd_derivatives(jax):
    a = r(2, 5, 3)
    check_grads(lambda a: L.svd(a, compute_uv=False), a)
    reduced = lambda a: L.svd(a, full_matrices=False)
    check_grads(lambda a: (lambda u, s, vh: (u * s[..., None, :]) @ vh)(*reduced(a)), a)
    check_complex_grads(lambda a: L.svd(a, compute_uv=False), z(3, 4))
    t = r(2, 5, 3)
    want = jax.jvp(lambda a: jax.lax.linalg.svd(a, compute_uv=False), (a,), (t,))[1]
    close(wg.jvp(lambda a: L.svd(a, compute_uv=False), (a,), (t,))[1], want)
    # u, s, vh of the reduced decomposition: JAX's JVP, once the signs are lined up
    u, s, vh = reduced(a)
    du, ds, dvh = wg.jvp(reduced, (a,), (t,))[1]
    (ju, js, jvh), (jdu, jds, jdvh) = jax.jvp(
        lambda a: jax.lax.linalg.svd(a, full_matrices=False), (a,), (t,))
    sign = np.sign(np.sum(u * np.asarray(ju), axis=-2))[..., None, :]
    close(du, np.asarray(jdu) * sign)
    close(ds, jds)
    close(dvh, np.asarray(jdvh) * np.swapaxes(sign, -1, -2))


FLAGS = [dict(left_side=ls, lower=lo, transpose_a=tr, conjugate_a=cj, unit_diagonal=ud)
         for ls in (False, True) for lo in (False, True) for tr in (False, True)
         for cj in (False, True) for ud in (False, True)]


@pytest.mark.parametrize("flags", FLAGS, ids=lambda f: "-".join(k for k, v in f.items() if v))
def test_triangular_solve_every_flag(flags, jl, jax):
    a, b = well(z(2, 3, 3)), z(2, 3, 2) if flags["left_side"] else z(2, 2, 3)
    f = lambda a, b: L.triangular_solve(a, b, **flags)
    want = np.asarray(jl.triangular_solve(a, b, **flags))
    close(f(a, b), want)
    close(traced(f, a, b), want)
    check_complex_grads(f, a, b, order=1)
    ra, rb = a.real, b.real
    check_grads(f, ra, rb, order=2 if flags["lower"] and flags["left_side"] else 1)
    ta, tb = z(2, 3, 3), z(*b.shape)
    want = jax.jvp(lambda a, b: jl.triangular_solve(a, b, **flags), (a, b), (ta, tb))[1]
    close(wg.jvp(f, (a, b), (ta, tb))[1], want)


def test_tridiagonal_solve_derivatives(jl, jax):
    dl, d, du, b = r(2, 5), r(2, 5) + 6, r(2, 5), r(2, 5, 2)
    check_grads(L.tridiagonal_solve, dl, d, du, b)
    check_complex_grads(L.tridiagonal_solve, z(4), z(4) + 6, z(4), z(4, 1), order=1)
    ts = (r(2, 5), r(2, 5), r(2, 5), r(2, 5, 2))
    want = jax.jvp(jl.tridiagonal_solve, (dl, d, du, b), ts)[1]
    close(wg.jvp(L.tridiagonal_solve, (dl, d, du, b), ts)[1], want)
    # dl[0] and du[m-1] are not read
    close(wg.grad(lambda dl: wnp.sum(L.tridiagonal_solve(dl, d[0], du[0], b[0])))(dl[0])[0],
          0.0)


def test_hessenberg_and_tridiagonal_derivatives():
    # (JAX's have none): the derivatives of LAPACK's reflectors, against differences
    a = r(4, 4)
    check_grads(L.hessenberg, a)
    check_complex_grads(L.hessenberg, z(2, 4, 4), order=1)
    s = r(4, 4)
    check_grads(L.tridiagonal, s)
    check_grads(lambda s: L.tridiagonal(s, lower=False), s, order=1)
    check_complex_grads(L.tridiagonal, z(4, 4), order=1)
    check_complex_grads(lambda s: L.tridiagonal(s, lower=False), z(2, 3, 3), order=1)
    # the orthogonal similarity the packed form stands for holds along the way
    def rebuilt(a):
        h, taus = L.hessenberg(a)
        n = a.shape[-1]
        q = wnp.concatenate([np.eye(n)[:, :1], wnp.concatenate(
            [np.zeros((1, n - 1)), L.householder_product(h[1:, :-1], taus)], axis=0)], axis=1)
        return q @ wnp.triu(h, -1) @ wnp.swapaxes(q, 0, 1)
    close(traced(rebuilt, a), a)
    close(wg.jacfwd(rebuilt)(a), np.eye(16).reshape(4, 4, 4, 4))


def test_householder_product_and_ormqr_derivatives():
    a, taus, c = r(5, 3), r(3), r(5, 2)
    check_grads(L.householder_product, a, taus)
    check_complex_grads(L.householder_product, z(2, 4, 3), z(2, 2), order=1)
    for left in (True, False):
        for transpose in (True, False):
            cc = c if left else c.T
            check_grads(lambda a, t, c: L.ormqr(a, t, c, left=left, transpose=transpose),
                        a, taus, cc, order=2 if left and not transpose else 1)
            check_complex_grads(lambda a, t, c: L.ormqr(a, t, c, left=left,
                                                        transpose=transpose),
                                z(4, 3), z(3), z(4, 2) if left else z(2, 4), order=1)


def test_products_and_updates_derivatives():
    check_grads(lambda a, c, al, be: L.symmetric_product(a, c, alpha=al, beta=be),
                r(2, 3, 2), r(2, 3, 3), 0.7, -1.5)
    check_grads(lambda a, c: L.symmetric_product(a, c, symmetrize_output=True),
                r(3, 2), r(3, 3))
    rr = np.linalg.cholesky(hpd(r(2, 4, 4))).swapaxes(-1, -2)
    check_grads(L.cholesky_update, rr, r(2, 4))
    # the update is the Cholesky factor of RᵀR + wwᵀ: so are its derivatives
    w = r(4)
    refactor = lambda rr, w: L.cholesky(wnp.triu(rr).T @ wnp.triu(rr) + wnp.outer(w, w)).T
    for got, want in zip(wg.jacfwd(L.cholesky_update, argnums=(0, 1))(rr[0], w),
                         wg.jacfwd(refactor, argnums=(0, 1))(rr[0], w)):
        close(got, want, rtol=1e-8, atol=1e-10)


def test_qdwh_derivatives(jax):
    x = r(5, 3)
    check_grads(lambda x: L.qdwh(x)[:2], x, order=1)
    check_complex_grads(lambda x: L.qdwh(x)[:2], z(3, 3), order=1)
    t = r(5, 3)
    want = jax.jvp(lambda x: jax.lax.linalg.qdwh(x)[:2], (x,), (t,))[1]
    close_trees(wg.jvp(lambda x: L.qdwh(x)[:2], (x,), (t,))[1], [np.asarray(w) for w in want],
                rtol=1e-8, atol=1e-10)
    # reverse mode (JAX's refuses), eager and compiled (the masked steps), agree
    loss = lambda x: wnp.sum(L.qdwh(x)[0] * t) + wnp.trace(L.qdwh(x)[1])
    g = wg.grad(loss)(x)
    close(g, wg.jit(wg.grad(loss))(x), rtol=1e-8)
    close(np.sum(g * t), wg.jvp(loss, (x,), (t,))[1], rtol=1e-8)


def test_schur_has_no_derivative_as_jaxs_has_none():
    a = r(3, 3)
    for f in (lambda a: L.schur(a)[0], lambda a: L.schur(a)[1]):
        with pytest.raises(NotImplementedError, match="lax.linalg.schur has no derivative "
                                                      "\\(JAX's has none either\\)"):
            wg.grad(lambda a: wnp.sum(f(a)))(a)
        with pytest.raises(NotImplementedError, match="schur has no derivative"):
            wg.jvp(f, (a,), (a,))
    t, q = L.schur(a)
    close(q @ t @ q.T, a)
    close(wg.jit(lambda a: L.schur(a)[0])(a), t)


def test_full_svd_vectors_of_a_non_square_matrix_have_no_derivative():
    with pytest.raises(NotImplementedError, match="use full_matrices=False"):
        wg.grad(lambda a: wnp.sum(L.svd(a)[0]))(r(4, 3))
    wg.grad(lambda a: wnp.sum(L.svd(a)[0]))(r(3, 3))                   # (square: fine)


# ---- transformations ---------------------------------------------------------------------------
BATCHED = {
    "lu tall": lambda a: L.lu(a[:, :3]),
    "lu wide": lambda a: L.lu(a[:3]),
    "qr pivoting": lambda a: L.qr(a[:, :3], pivoting=True),
    "qr tall": lambda a: L.qr(a[:, :2]),
    "hessenberg": L.hessenberg,
    "tridiagonal upper": lambda a: L.tridiagonal(a, lower=False),
    "schur": L.schur,
    "eig": lambda a: [canonical(v) if k else v for k, v in enumerate(L.eig(a))],
    "householder_product": lambda a: L.householder_product(a, a[0, :3]),
    "ormqr": lambda a: L.ormqr(a, a[1, :2], a, transpose=True),
    "qdwh": lambda a: L.qdwh(a)[:2],
    "cholesky_update": lambda a: L.cholesky_update(np.triu(a) + 5 * np.eye(4), a[0]),
}


@pytest.mark.parametrize("name", sorted(BATCHED))
def test_vmap_and_compile_match_a_loop(name):
    f = BATCHED[name]
    xs = r(3, 4, 4)
    loop = [_results(f(x)) for x in xs]
    eager = lambda x: [np.asarray(v) for v in _results(f(x))]
    if name == "eig":                      # (canonical is NumPy's: outside the transformation)
        g = lambda x: L.eig(x)
        batched = _results(wg.vmap(g)(xs))
        batched = [batched[0]] + [canonical(v) for v in batched[1:]]
        compiled = [list(_results(wg.jit(g)(x))) for x in xs]
        compiled = [[c[0]] + [canonical(v) for v in c[1:]] for c in compiled]
    else:
        batched = _results(wg.vmap(f)(xs))
        compiled = [_results(wg.jit(f)(x)) for x in xs]
    for k, parts in enumerate(zip(*loop)):
        close(batched[k], np.stack(parts), rtol=1e-9, atol=1e-10)
    for got, want in zip(compiled, loop):
        close_trees(list(got), [np.asarray(w) for w in want], rtol=1e-9, atol=1e-10)
    del eager


def test_gradients_under_jit_and_vmap():
    a = r(3, 5, 3)
    loss = lambda a: wnp.sum(L.lu(a)[0] ** 2) + wnp.sum(L.qr(a)[0][..., -1] ** 2)
    g = wg.grad(loss)(a)
    close(wg.jit(wg.grad(loss))(a), g)
    close(wg.vmap(wg.grad(loss))(a), g)


def _jax_program(jax, jnp, theta, x):
    """A program written for JAX, calling jax.lax.linalg and jax.lax.fft: run as it is
    with JAX and with `import wengert as jax`."""
    la = jax.lax.linalg
    k = jnp.exp(-(x[:, None] - x[None, :]) ** 2 * jnp.exp(theta[0])) + 0.5 * jnp.eye(x.shape[0])
    c = la.cholesky(k)
    alpha = la.triangular_solve(c, jnp.sin(x)[:, None], left_side=True, lower=True)
    v, w = la.eigh(k)
    q, r = la.qr(k[:, :3] * theta[1])
    spectrum = jax.lax.fft(alpha[:, 0] * theta[1], jax.lax.FftType.RFFT, (x.shape[0],))
    lu, _, perm = la.lu(k * theta[1])
    return (jnp.sum(alpha ** 2) + jnp.sum(jnp.log(w)) + jnp.sum(jnp.abs(jnp.diagonal(r)))
            + jnp.sum(jnp.abs(spectrum) ** 2) + jnp.sum(jnp.log(jnp.abs(jnp.diagonal(lu))))
            + jnp.sum(v[:, -1] ** 2) * theta[0] + jnp.sum(q[:, 0] ** 2) + perm[0] * 0.0)


def test_a_jax_program_runs_unchanged_with_jaxs_values_and_gradients(jax):
    import jax.numpy as jjnp
    theta, x = np.array([0.3, 1.7]), np.linspace(-1.0, 1.0, 6)
    want = jax.jit(jax.value_and_grad(lambda t: _jax_program(jax, jjnp, t, x)))(theta)
    got = wg.value_and_grad(_jax_program, argnums=2)(wg, wnp, theta, x)
    close(got[0], want[0])
    close(got[1], want[1])
    close(wg.jit(wg.grad(lambda t: _jax_program(wg, wnp, t, x)))(theta), want[1])


# ---- errors -----------------------------------------------------------------------------------
def test_errors_name_the_function_the_argument_and_the_shapes():
    sq = np.eye(3)
    cases = [
        (lambda: L.cholesky(np.ones((3, 2))), ValueError,
         r"cholesky: x must be square \(shape \[\.\.\., n, n\]\), got shape \(3, 2\)"),
        (lambda: L.cholesky(np.ones(3)), ValueError,
         r"cholesky: x must be a matrix or a stack of them .*got shape \(3,\)"),
        (lambda: L.eigh(np.array(["a"])), TypeError, "eigh: x must hold numbers"),
        (lambda: L.eigh(sq, subset_by_index=(2, 2)), ValueError,
         r"eigh: subset_by_index=\(2, 2\) must have 0 <= start < end <= 3"),
        (lambda: L.eigh(sq, subset_by_index=2), TypeError, "eigh: subset_by_index must be"),
        (lambda: L.svd(sq, subset_by_index=(0, 1)), ValueError,
         "svd: full_matrices and subset_by_index cannot both be set"),
        (lambda: L.triangular_solve(sq, np.ones((2, 3)), left_side=True), ValueError,
         r"triangular_solve: b must have 3 rows to match a \(left_side=True\); got a of "
         r"shape \(3, 3\) and b of shape \(2, 3\)"),
        (lambda: L.triangular_solve(sq, np.ones((3, 2))), ValueError,
         r"b must have 3 columns to match a \(left_side=False\)"),
        (lambda: L.triangular_solve(np.ones((2, 3, 3)), np.ones((4, 3, 1)), left_side=True),
         ValueError, r"triangular_solve: the batch dimensions of a of shape \(2, 3, 3\) and "
                     r"b of shape \(4, 3, 1\) do not broadcast together"),
        (lambda: L.tridiagonal_solve(np.ones(3), np.ones(3), np.ones(4), np.ones((3, 1))),
         ValueError, r"tridiagonal_solve: dl, d and du must have one shape \[\.\.\., m\]; got "
                     r"\(3,\), \(3,\) and \(4,\)"),
        (lambda: L.tridiagonal_solve(np.ones(3), np.ones(3), np.ones(3), np.ones(3)),
         ValueError, r"b must have shape \[\.\.\., 3, n\] for diagonals of shape \(3,\); got "
                     r"b of shape \(3,\)"),
        (lambda: L.tridiagonal_solve(np.ones(3), np.ones(3), np.ones(3), np.ones((3, 1)),
                                     perturb_singular=True), NotImplementedError,
         "perturb_singular=True"),
        (lambda: L.householder_product(np.ones((3, 5)), np.ones(2)), ValueError,
         r"householder_product: a must have at least as many rows as columns, got shape "
         r"\(3, 5\)"),
        (lambda: L.householder_product(np.ones((5, 3)), np.ones(4)), ValueError,
         r"taus of shape \(4,\) has more than min\(m, n\) = 3 reflectors for a of shape "
         r"\(5, 3\)"),
        (lambda: L.ormqr(np.ones((5, 3)), np.ones(3), np.ones((2, 5))), ValueError,
         r"ormqr with left=True expects c to have 5 rows.*a of shape \(5, 3\) and c of "
         r"shape \(2, 5\)"),
        (lambda: L.symmetric_product(np.ones((3, 2)), np.ones((2, 2))), ValueError,
         r"symmetric_product: .*got \(3, 2\) and \(2, 2\)"),
        (lambda: L.symmetric_product(np.ones((3, 2)) * 1j, np.ones((3, 3))), TypeError,
         "symmetric_product takes real matrices"),
        (lambda: L.cholesky_update(sq, np.ones(2)), ValueError,
         r"cholesky_update: w_vector must have shape \[\.\.\., n\] for r_matrix of shape "
         r"\[\.\.\., n, n\]; got r_matrix of shape \(3, 3\) and w_vector of shape \(2,\)"),
        (lambda: L.qdwh(np.ones((2, 3))), ValueError,
         r"qdwh: the input matrix of shape M x N must have M >= N, got shape \(2, 3\)"),
        (lambda: L.qdwh(np.ones((2, 3, 2))), ValueError,
         r"qdwh: x must be one matrix of shape \(M, N\)"),
        (lambda: L.qdwh(np.ones((3, 2)), dynamic_shape=(1, 2)), ValueError,
         r"dynamic_shape \(1, 2\) must fit in x's shape \(3, 2\)"),
        (lambda: L.lu_pivots_to_permutation(np.array([0, 1, 2]), 2), ValueError,
         r"permutation_size 2 must be at least the number of pivots, 3"),
        (lambda: L.lu_pivots_to_permutation(np.array([0, 5]), 3), ValueError,
         r"pivots must lie in \[0, 3\), got values from 0 to 5"),
        (lambda: L.lu_pivots_to_permutation(np.array([0.0, 1.0]), 3), TypeError,
         "pivots must be integers"),
        (lambda: L.eig(np.ones((2, 3))), ValueError, r"eig: x must be square"),
        (lambda: L.hessenberg(np.ones((2, 3))), ValueError, r"hessenberg: a must be square"),
    ]
    for call, kind, message in cases:
        with pytest.raises(kind, match=message):
            call()


def test_a_matrix_that_is_not_positive_definite_raises():
    with pytest.raises(np.linalg.LinAlgError):
        L.cholesky(-np.eye(2))
    with pytest.raises(np.linalg.LinAlgError):
        wg.grad(lambda a: wnp.sum(L.cholesky(a)))(-np.eye(2))


# ---- lax.fft -----------------------------------------------------------------------------------
FFTS = [("fft", (4,), "r"), ("FFT", (3, 4), "c"), ("ifft", (4,), "c"), ("IFFT", (2, 3, 4), "c"),
        ("rfft", (4,), "r"), ("rfft", (3, 5), "r"), ("irfft", (4,), "c"), ("irfft", (3, 5), "c"),
        ("fft", (), "r")]


def _fft_input(typ, lengths, kind, batch=(2,)):
    if typ.lower() == "irfft" and lengths:
        shape = batch + lengths[:-1] + (lengths[-1] // 2 + 1,)
    else:
        shape = batch + (lengths or (3,))
    return z(*shape) if kind == "c" else r(*shape)


@pytest.mark.parametrize("typ,lengths,kind", FFTS)
def test_fft_is_jaxs(typ, lengths, kind, jax):
    x = _fft_input(typ, lengths, kind)
    want = np.asarray(jax.lax.fft(x, typ, lengths))
    for got in (lax.fft(x, typ, lengths), traced(lambda x: lax.fft(x, typ, lengths), x),
                lax.fft(x, lax.FftType[typ.upper()], list(lengths))):
        assert got.dtype == want.dtype and got.shape == want.shape
        close(got, want)
    f = lambda x: lax.fft(x, typ, lengths)
    if kind == "c":
        check_complex_grads(f, x)
    else:
        check_grads(lambda x: wnp.real(f(x)) + wnp.imag(f(x)) ** 2, x)
    # JAX's VJP of a real loss of the transform
    loss = lambda fft, x: (lambda y: (y.real ** 2).sum() + (y.imag * y.real).sum())(fft(x))
    want = jax.grad(lambda x: loss(lambda x: jax.lax.fft(x, typ, lengths), x))(x)
    close(wg.grad(lambda x: loss(f, x))(x), want)


def test_fft_dtypes_under_jit_and_vmap(jax):
    x32 = r(2, 4).astype(np.float32)
    for typ in ("fft", "rfft"):
        want = jax.lax.fft(x32, typ, (4,))
        got = lax.fft(x32, typ, (4,))
        assert got.dtype == want.dtype == np.complex64
    spectrum = np.fft.rfft(x32).astype(np.complex64)
    assert lax.fft(spectrum, "irfft", (4,)).dtype == np.float32
    ints = np.arange(4)
    close(lax.fft(ints, "fft", (4,)), jax.lax.fft(ints, "fft", (4,)))
    x = r(3, 2, 4)
    f = lambda x: lax.fft(x, lax.FftType.RFFT, (2, 4))
    close(wg.vmap(f)(x), np.fft.rfftn(x, axes=(1, 2)))
    close(wg.jit(f)(x[0]), np.fft.rfft2(x[0]))
    close(wg.jit(wg.grad(lambda x: wnp.sum(wnp.abs(f(x)) ** 2)))(x[0]),
          wg.grad(lambda x: wnp.sum(wnp.abs(f(x)) ** 2))(x[0]))


def test_fft_errors():
    x = r(3, 4)
    cases = [
        (lambda: lax.fft(x, "Fft", (4,)), ValueError, "fft: unknown FFT type 'Fft'"),
        (lambda: lax.fft(x, 0, (4,)), TypeError, "fft_type must be a FftType or its name"),
        (lambda: lax.fft(x, "fft", (3,)), ValueError,
         r"fft: FFT needs x's last axes to be fft_lengths \(3,\), got x of shape \(3, 4\)"),
        (lambda: lax.fft(x, "rfft", (5,)), ValueError, r"RFFT needs x's last axes"),
        (lambda: lax.fft(x + 0j, "rfft", (4,)), ValueError, "RFFT takes real input"),
        (lambda: lax.fft(x, "irfft", (5,)), ValueError,
         r"IRFFT to lengths \(5,\) needs x's last axes to be \(3,\).*x of shape \(3, 4\)"),
        (lambda: lax.fft(x, "fft", (2, 3, 4)), ValueError,
         r"x of shape \(3, 4\) has fewer axes than fft_lengths \(2, 3, 4\)"),
        (lambda: lax.fft(x, "fft", (4.0,)), TypeError, "fft_lengths must be a sequence of "
                                                        "integers"),
    ]
    for call, kind, message in cases:
        with pytest.raises(kind, match=message):
            call()
    assert "fft" in lax.__all__ and "FftType" in lax.__all__
