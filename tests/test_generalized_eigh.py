"""wengert.scipy.linalg.eigh(a, b): the generalized symmetric-definite eigenproblem
A v = λ B v (types 2 and 3: A B v = λ v, B A v = λ v), differentiable in A and in B.

Values are SciPy's, bit for bit, on plain and traced arguments, real and complex; the
derivatives are checked against central differences (to second order), against closed
forms (diagonal matrices, a chain of two masses on springs), against the same problem
reduced by hand to a standard one with a Cholesky factor (wengert's other rules, and
PyTorch's), and for the Hermitian-part convention.  tests/test_scipy_linalg.py has the
generalized cases in its tables too (vmap, compile, errors)."""
import numpy as np
import pytest
import scipy.linalg as sl

import wengert as wg
import wengert.numpy as wnp
from wengert.scipy import linalg
from fd import assert_close, check_complex_grads, check_grads

rng = np.random.default_rng(20260601)


def r(*shape):
    return rng.normal(size=shape)


def z(*shape):
    return rng.normal(size=shape) + 1j * rng.normal(size=shape)


def H(x):
    return wnp.conj(wnp.swapaxes(x, -1, -2))


def herm(x):
    """The Hermitian (symmetric) part: any direction becomes an allowed one."""
    return (x + H(x)) / 2


def pd(x):
    """A Hermitian (symmetric) positive-definite matrix made from any square x."""
    return x @ H(x) + x.shape[-1] * np.eye(x.shape[-1])


OPTIONS = [{}, {"lower": False}, {"type": 2}, {"type": 3}, {"subset_by_index": [1, 2]},
           {"subset_by_index": [0, 1], "type": 2}, {"subset_by_index": [2, 3], "type": 3},
           {"driver": "gv"}, {"driver": "gvx", "subset_by_index": [1, 3]}]


def _name(kw):
    return ",".join(f"{k}={v}" for k, v in kw.items()) or "default"


# ---- values ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw", OPTIONS, ids=_name)
@pytest.mark.parametrize("kind", ["real", "complex"])
def test_values_are_scipys_and_solve_the_problem(kind, kw):
    make = r if kind == "real" else z
    a, b = herm(make(4, 4)), pd(make(4, 4))
    ws, vs = sl.eigh(a, b, **kw)
    for f in (lambda a, b: linalg.eigh(a, b, **kw), ):
        plain = f(a, b)
        traced = wg.vjp(f, a, b)[0]
        staged = wg.trace(f, a, b)(a, b)
        for w, v in (plain, traced, staged):
            np.testing.assert_array_equal(w, ws)      # SciPy's: the eigenvectors' phases too
            np.testing.assert_array_equal(v, vs)
            assert v.dtype == vs.dtype and w.dtype == ws.dtype == np.float64
    only = wg.vjp(lambda a, b: linalg.eigh(a, b, eigvals_only=True, **kw), a, b)[0]
    np.testing.assert_array_equal(only, sl.eigh(a, b, eigvals_only=True, **kw))
    only = wg.vjp(lambda a, b: linalg.eigvalsh(a, b, **kw), a, b)[0]
    np.testing.assert_array_equal(only, sl.eigvalsh(a, b, **kw))
    # which problem each type solves, and how its eigenvectors are normalised
    t = kw.get("type", 1)
    lam = vs * ws[None, :]
    left, right = {1: (a @ vs, b @ lam), 2: (a @ b @ vs, lam), 3: (b @ a @ vs, lam)}[t]
    np.testing.assert_allclose(left, right, rtol=1e-10, atol=1e-10)
    norm = np.linalg.inv(b) if t == 3 else b
    np.testing.assert_allclose(vs.conj().T @ norm @ vs, np.eye(vs.shape[1]), atol=1e-10)


def test_float32_stays_float32():
    a, b = herm(r(3, 3)).astype(np.float32), pd(r(3, 3)).astype(np.float32)
    f = lambda a, b: wnp.sum(linalg.eigh(a, b)[0]) + wnp.sum(linalg.eigh(a, b)[1] ** 2)
    w, v = wg.vjp(lambda a, b: linalg.eigh(a, b), a, b)[0]
    assert w.dtype == v.dtype == np.float32
    assert all(g.dtype == np.float32 for g in wg.grad(f, argnums=(0, 1))(a, b))


def test_stacks_broadcast_as_scipys_and_gradients_sum_back():
    a, b = herm(r(2, 1, 3, 3)), pd(r(4, 3, 3))
    w, v = wg.vjp(lambda a, b: linalg.eigh(a, b), a, b)[0]
    ws, vs = sl.eigh(a, b)
    np.testing.assert_array_equal(w, ws)
    np.testing.assert_array_equal(v, vs)
    # one b for a stack of a's: its gradient is the sum of each problem's
    a, b = herm(r(3, 3, 3)), pd(r(3, 3))
    f = lambda a, b: wnp.sum(linalg.eigh(a, b)[0] ** 2) + wnp.sum(linalg.eigh(a, b)[1] ** 2)
    ga, gb = wg.grad(f, argnums=(0, 1))(a, b)
    assert ga.shape == a.shape and gb.shape == b.shape
    each = [wg.grad(f, argnums=(0, 1))(a[k], b) for k in range(3)]
    assert_close(ga, np.stack([e[0] for e in each]), rtol=1e-12, atol=1e-14)
    assert_close(gb, sum(e[1] for e in each), rtol=1e-12, atol=1e-14)


def test_an_eager_gradient_solves_the_problem_once(monkeypatch):
    # the eigenvalues, the eigenvectors and every rule share one SciPy call
    calls = []
    real = sl.eigh
    monkeypatch.setattr(sl, "eigh", lambda *a, **k: calls.append(1) or real(*a, **k))
    a, b, c = herm(r(4, 4)), pd(r(4, 4)), r(4, 4)
    f = lambda a, b: wnp.sum(linalg.eigh(a, b)[0] ** 2) + wnp.sum(linalg.eigh(a, b)[1] ** 2 * c)
    wg.grad(f, argnums=(0, 1))(a, b)
    assert len(calls) == 1


# ---- derivatives against central differences --------------------------------------------------
# (random directions of check_grads are made symmetric by herm; the eigenvectors enter
# through functions that do not depend on their signs or phases)
def _invariants(wv):
    """The eigenvalues, |V|², and V diag(sin w) Vᴴ (a matrix function of the pencil)."""
    w, v = wv
    return w, wnp.abs(v) ** 2, (v * wnp.sin(w)[..., None, :]) @ H(v)


@pytest.mark.parametrize("kw", OPTIONS, ids=_name)
def test_real_derivatives_to_second_order(kw):
    f = lambda a, b: _invariants(linalg.eigh(herm(a), pd(b), **kw))
    check_grads(f, r(4, 4), r(4, 4), order=2)
    check_grads(lambda a, b: linalg.eigh(herm(a), pd(b), eigvals_only=True, **kw),
                r(4, 4), r(4, 4), order=2)


@pytest.mark.parametrize("kw", OPTIONS, ids=_name)
def test_complex_derivatives_to_second_order(kw):
    f = lambda a, b: _invariants(linalg.eigh(herm(a), pd(b), **kw))
    check_complex_grads(f, z(4, 4), z(4, 4), order=2)
    # a real A with a complex B, and the other way round
    check_complex_grads(lambda a, b: f(a, b)[1], r(4, 4), z(4, 4), order=1)
    check_complex_grads(lambda a, b: f(a, b)[2], z(4, 4), r(4, 4), order=1)


@pytest.mark.parametrize("kw", [{}, {"type": 2}, {"type": 3}, {"subset_by_index": [1, 2]}],
                         ids=_name)
@pytest.mark.parametrize("kind", ["real", "complex"])
def test_derivatives_are_the_hermitian_parts_one_linear_map_for_every_tangent(kind, kw):
    # eigh reads one triangle of A and of B, and differentiates as a function of their
    # Hermitian parts: any tangent's JVP is its Hermitian part's, the cotangents are
    # Hermitian, and the two are transposes (Re <c, J v> = Re <J'c, v>) for every v
    make = r if kind == "real" else z
    f = lambda a, b: _invariants(linalg.eigh(a, b, **kw))
    a, b = herm(make(3, 3)), pd(make(3, 3))
    va, vb = make(3, 3), make(3, 3)
    _, t = wg.jvp(f, (a, b), (va, vb))
    _, t_herm = wg.jvp(f, (a, b), (herm(va), herm(vb)))
    cts = [r(*np.shape(x)) if not np.iscomplexobj(x) else z(*np.shape(x)) for x in t]
    ga, gb = wg.vjp(f, a, b)[1](tuple(cts))
    for x, y in zip(t, t_herm):
        assert np.max(np.abs(x - y)) <= 1e-12 * np.max(np.abs(y))
    for g in (ga, gb):
        assert np.max(np.abs(g - g.conj().T)) <= 1e-12 * np.max(np.abs(g))
    lhs = sum(np.sum(c * x) for c, x in zip(cts, t)).real
    assert_close(lhs, (np.sum(ga * va) + np.sum(gb * vb)).real, rtol=1e-10, atol=1e-12)


def _parametrised(theta, base, dirs, kw):
    """Σ c_j λ_j + Σ λ_j² + Σ |V|² ∘ C along A(θ) = A₀ + Σ θ_k A_k, B(θ) likewise."""
    (a0, b0, c, cw), (da, db) = base, dirs
    a = a0 + wnp.tensordot(theta, da, axes=1)
    b = b0 + wnp.tensordot(theta, db, axes=1)
    w, v = linalg.eigh(a, b, **kw)
    return wnp.sum(cw * w) + wnp.sum(w ** 2) + wnp.sum(v ** 2 * c)


@pytest.mark.parametrize("kw", [{}, {"type": 2}, {"type": 3}, {"subset_by_index": [0, 1]}],
                         ids=_name)
def test_hessian_against_differences_of_the_gradient(kw):
    n, p = 4, 3
    base = (herm(r(n, n)), pd(r(n, n)), r(n, 2 if "subset_by_index" in kw else n),
            r(2 if "subset_by_index" in kw else n))
    dirs = (np.stack([herm(r(n, n)) for _ in range(p)]),
            np.stack([herm(r(n, n)) for _ in range(p)]))
    f = lambda theta: _parametrised(theta, base, dirs, kw)
    theta, h = 0.1 * r(p), 1e-5
    hess = wg.hessian(f)(theta)
    g = wg.grad(f)
    fd = np.stack([(g(theta + h * e) - g(theta - h * e)) / (2 * h) for e in np.eye(p)])
    assert_close(hess, fd, rtol=1e-6, atol=1e-7)
    assert_close(hess, hess.T, rtol=1e-10, atol=1e-12)
    # and the gradient against differences of the function
    fd1 = [(f(theta + h * e) - f(theta - h * e)) / (2 * h) for e in np.eye(p)]
    assert_close(g(theta), fd1, rtol=1e-7, atol=1e-8)


# ---- closed forms ------------------------------------------------------------------------------
def test_diagonal_pencils():
    # A = diag(k), B = diag(m): λ_i = k_i/m_i, v_i = e_i/√m_i (type 1); type 2 and 3 have
    # λ_i = k_i m_i, with v_i = e_i/√m_i (type 2) and e_i √m_i (type 3, Vᵀ B⁻¹ V = I)
    k, m = np.array([3.0, 1.0, 8.0]), np.array([2.0, 0.5, 1.0])
    for t, lam, dlam_dk, dlam_dm, v2 in [
            (1, k / m, 1 / m, -k / m ** 2, 1 / m),
            (2, k * m, m, k, 1 / m),
            (3, k * m, m, k, m)]:
        order = np.argsort(lam)
        f = lambda k, m: linalg.eigh(wnp.diag(k), wnp.diag(m), type=t)
        w, v = f(k, m)
        assert_close(w, lam[order], rtol=1e-14)
        assert_close(v ** 2, np.diag(v2)[:, order], rtol=1e-14, atol=1e-15)
        for jac in (wg.jacfwd, wg.jacrev):
            jk, jm = jac(lambda k, m: f(k, m)[0], argnums=(0, 1))(k, m)
            assert_close(jk, np.diag(dlam_dk)[order], rtol=1e-13, atol=1e-15)
            assert_close(jm, np.diag(dlam_dm)[order], rtol=1e-13, atol=1e-15)
            # v_i² = 1/m_i (or m_i): d/dm_i = ∓1/m_i² (or 1); k does not move them
            jk, jm = jac(lambda k, m: wnp.sum(f(k, m)[1] ** 2, axis=1), argnums=(0, 1))(k, m)
            assert_close(jk, 0.0, rtol=0, atol=1e-14)
            assert_close(jm, np.diag(np.ones(3) if t == 3 else -1 / m ** 2), rtol=1e-13,
                         atol=1e-14)


def _chain(k1, k2, m1, m2):
    """Stiffness and mass matrices of wall - k1 - m1 - k2 - m2."""
    K = wnp.stack([wnp.stack([k1 + k2, -k2]), wnp.stack([-k2, k2])])
    M = wnp.stack([wnp.stack([m1, 0.0 * m1]), wnp.stack([0.0 * m2, m2])])
    return K, M


def test_two_masses_on_springs():
    # det(K - λM) = 0:  λ² - sλ + p = 0,  s = (k1 + k2)/m1 + k2/m2,  p = k1 k2/(m1 m2),
    # λ = (s ∓ √(s² - 4p))/2, the squared frequencies; the mode shape (1, r) has
    # r = (k1 + k2 - λ m1)/k2
    k1, k2, m1, m2 = 3.0, 2.0, 1.5, 0.5
    s, p = (k1 + k2) / m1 + k2 / m2, k1 * k2 / (m1 * m2)
    root = np.sqrt(s * s - 4 * p)
    lam = np.array([(s - root) / 2, (s + root) / 2])
    ds = np.array([1 / m1, 1 / m1 + 1 / m2])                    # ∂s/∂(k1, k2)
    dp = np.array([k2, k1]) / (m1 * m2)
    dlam = np.stack([(ds - sg * (s * ds - 2 * dp) / root) / 2 for sg in (1, -1)])

    def omega(k):
        return wnp.sqrt(linalg.eigh(*_chain(k[0], k[1], m1, m2), eigvals_only=True))
    k = np.array([k1, k2])
    assert_close(omega(k), np.sqrt(lam), rtol=1e-14)
    # dω = dλ / 2ω
    for jac in (wg.jacfwd, wg.jacrev):
        assert_close(jac(omega)(k), dlam / (2 * np.sqrt(lam))[:, None], rtol=1e-12)

    # the mode shapes: v₂²/v₁² = r², independent of the eigenvectors' signs
    def ratio(k):
        v = linalg.eigh(*_chain(k[0], k[1], m1, m2))[1]
        return v[1] ** 2 / v[0] ** 2
    rr = (k1 + k2 - lam * m1) / k2
    assert_close(ratio(k), rr ** 2, rtol=1e-12)
    dr = np.stack([(1 - m1 * dlam[:, 0]) / k2, (1 - m1 * dlam[:, 1]) / k2 - rr / k2], axis=1)
    assert_close(wg.jacrev(ratio)(k), 2 * rr[:, None] * dr, rtol=1e-10)

    # second derivatives of the lower frequency² against differences of the closed form's
    # gradient above
    def grad_closed(k):
        a, b = k
        s, p = (a + b) / m1 + b / m2, a * b / (m1 * m2)
        root = np.sqrt(s * s - 4 * p)
        dp = np.array([b, a]) / (m1 * m2)
        return (ds - (s * ds - 2 * dp) / root) / 2
    lowest = lambda k: linalg.eigh(*_chain(k[0], k[1], m1, m2), eigvals_only=True)[0]
    h = 1e-5
    fd = np.stack([(grad_closed(k + h * e) - grad_closed(k - h * e)) / (2 * h)
                   for e in np.eye(2)])
    assert_close(wg.hessian(lowest)(k), fd, rtol=1e-7, atol=1e-9)
    # and in the masses: dλ = -λ vᵀ dM v, so ∂λ_i/∂m_j = -λ_i v_ji²
    w, v = sl.eigh(*_chain(k1, k2, m1, m2))
    g = wg.jacrev(lambda m: linalg.eigh(*_chain(k1, k2, m[0], m[1]), eigvals_only=True))(
        np.array([m1, m2]))
    assert_close(g, -w[:, None] * v.T ** 2, rtol=1e-12)


def test_a_scaled_identity_divides_the_eigenvalues():
    # B = βI: λ = eig(A)/β, and dλ/dβ = -λ/β
    a, beta = herm(r(4, 4)), 2.5
    f = lambda beta: linalg.eigh(a, beta * np.eye(4), eigvals_only=True)
    assert_close(f(beta), np.linalg.eigvalsh(a) / beta, rtol=1e-12)
    assert_close(wg.jacfwd(f)(beta), -np.linalg.eigvalsh(a) / beta ** 2, rtol=1e-10)


# ---- against the problem reduced by hand --------------------------------------------------------
def _reduced(a, b, t):
    """eigh(a, b, type=t) as LAPACK reduces it, with wengert.numpy's cholesky, solve and
    eigh, whose rules are independent of the generalized ones: B = L Lᴴ, then the standard
    problem of C = L⁻¹ A L⁻ᴴ (type 1) or Lᴴ A L (types 2, 3), and V = L⁻ᴴ W (types 1, 2)
    or L W (type 3).  Its eigenvectors' signs (phases) can differ from SciPy's."""
    L = wnp.linalg.cholesky(b)
    if t == 1:
        c = wnp.linalg.solve(L, H(wnp.linalg.solve(L, a)))
    else:
        c = H(L) @ a @ L
    w, W = wnp.linalg.eigh(c)
    return w, (L @ W if t == 3 else wnp.linalg.solve(H(L), W))


@pytest.mark.parametrize("t", [1, 2, 3])
@pytest.mark.parametrize("kind", ["real", "complex"])
def test_gradients_equal_the_reduction_to_a_standard_problem(kind, t):
    make = r if kind == "real" else z
    a, b, c = herm(make(4, 4)), pd(make(4, 4)), r(4, 4)
    loss = lambda wv: wnp.sum(wv[0] ** 3) + wnp.sum(wnp.abs(wv[1]) ** 2 * c) \
        + wnp.sum(wnp.real(_invariants(wv)[2]) * c)
    ours = wg.grad(lambda a, b: loss(linalg.eigh(a, b, type=t)), argnums=(0, 1))(a, b)
    # (the reduction reads A's full matrix and B's lower triangle: its gradients are made
    # Hermitian to compare, as the problem's are)
    theirs = wg.grad(lambda a, b: loss(_reduced(herm(a), herm(b), t)), argnums=(0, 1))(a, b)
    for g, h in zip(ours, theirs):
        assert np.max(np.abs(g - h)) <= 1e-10 * np.max(np.abs(h))


def test_gradients_equal_pytorchs_reduction():
    torch = pytest.importorskip("torch")
    a, b, c = herm(r(4, 4)), pd(r(4, 4)), r(4, 4)

    def loss(w, v, lib):
        return (w ** 3).sum() + (v ** 2 * c).sum() if lib is wnp else \
            (w ** 3).sum() + (v ** 2 * torch.from_numpy(c)).sum()
    ours = wg.grad(lambda a, b: loss(*linalg.eigh(a, b), wnp), argnums=(0, 1))(a, b)
    ta, tb = (torch.tensor(x, requires_grad=True) for x in (a, b))
    L = torch.linalg.cholesky((tb + tb.T) / 2)
    lower = lambda x: torch.linalg.solve_triangular(L, x, upper=False)
    cc = lower(lower((ta + ta.T) / 2).T)
    w, W = torch.linalg.eigh(cc)
    v = torch.linalg.solve_triangular(L.T, W, upper=True)
    loss(w, v, torch).backward()
    assert_close(ours[0], ta.grad.numpy(), rtol=1e-9, atol=1e-11)
    assert_close(ours[1], tb.grad.numpy(), rtol=1e-9, atol=1e-11)


# ---- what is refused, and Taylor mode ----------------------------------------------------------
@pytest.mark.parametrize("kind", ["real", "complex"])
def test_b_not_positive_definite_raises_scipys_linalgerror(kind):
    a = herm(r(3, 3)) if kind == "real" else herm(z(3, 3))
    b = -np.eye(3)
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        sl.eigh(a, b)
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        wg.grad(lambda b: wnp.sum(linalg.eigh(a, b)[0]))(b)
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        wg.jvp(lambda a: linalg.eigh(a, b, eigvals_only=True), (a,), (a,))


def test_what_scipy_refuses_it_refuses_on_traced_values_too():
    a, b = herm(r(3, 3)), pd(r(3, 3))
    with pytest.raises(ValueError, match='"evr" does not accept input b'):
        wg.grad(lambda a: wnp.sum(linalg.eigh(a, b, driver="evr")[0]))(a)
    with pytest.raises(ValueError, match='"gvd" cannot compute subsets'):
        wg.grad(lambda a: wnp.sum(linalg.eigh(a, b, driver="gvd", subset_by_index=[0, 1])[0]))(a)
    with pytest.raises(NotImplementedError, match="subset_by_value"):
        wg.grad(lambda a: wnp.sum(linalg.eigh(a, b, subset_by_value=(0, 9))[0]))(a)


def test_taylor_mode_from_the_jvp():
    """The generalized eigenproblem has no Taylor rule of its own: its series comes from
    its JVP, against nested jvp."""
    a, b, v = herm(r(3, 3)), pd(r(3, 3)), herm(r(3, 3))
    f = lambda a: linalg.eigh(a, b)[1] ** 2
    got = wg.taylor(f, a, v, order=2)
    assert_close(got[1], wg.jvp(f, (a,), (v,))[1], rtol=1e-12)
    d1 = lambda t: wg.jvp(lambda s: f(a + s * v), (t,), (1.0,))[1]
    assert_close(got[2], wg.jvp(d1, (0.0,), (1.0,))[1] / 2, rtol=1e-9, atol=1e-12)
