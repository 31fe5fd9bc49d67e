"""wengert.scipy.spatial.transform: Rotation and Slerp.

Values against SciPy's (random rotations, single and stacked, and the edge cases: the
identity, rotations by π, the 24 rotations of the cube, where from_matrix's sign is a tie,
gimbal lock in all 24 Euler sequences, SciPy's lock tolerance); values and derivatives
against JAX's; derivatives against central differences to second order at random points
and at the singular ones (the identity for from_rotvec and as_rotvec, exactly and nearly,
and both sides of the series' thresholds), the stated derivative at gimbal lock; pytrees
through jit, vmap, grad and compile; and the errors."""
import itertools
import warnings

import numpy as np
import pytest
from scipy.spatial.transform import Rotation as SR, Slerp as SSlerp

import wengert as wg
import wengert.numpy as wnp
from wengert.scipy.spatial.transform import Rotation, Slerp
from fd import assert_close, check_grads, fd_jacobian

rng = np.random.default_rng(20260614)

SEQS = ["".join(p) for p in itertools.product("xyz", repeat=3) if p[0] != p[1] != p[2]]
SEQS += [s.upper() for s in SEQS]
PI = np.pi


def quats(*shape):
    return rng.normal(size=shape + (4,))


def same(got, want, tol=1e-12):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol, atol=tol)


def traced_value(f, *args):
    """f's value by the traced path: its arguments traced (by wg.vjp)."""
    return wg.vjp(f, *args)[0]


def cube():
    """The 24 rotations of a cube: signed permutation matrices of determinant 1, whose
    quaternions tie in magnitude (SciPy's from_matrix breaks the tie)."""
    out = []
    for perm in itertools.permutations(range(3)):
        for signs in itertools.product([1.0, -1.0], repeat=3):
            m = np.zeros((3, 3))
            m[range(3), perm] = signs
            if np.linalg.det(m) > 0:
                out.append(m)
    return np.array(out)


EDGE_QUATS = np.array([[0, 0, 0, 1.0], [0, 0, 0, -1.0], [1.0, 0, 0, 0], [0, -1.0, 0, 0],
                       [0, 0, 1.0, 0], [1, 1, 0, 0.0], [0, 1, -1, 0.0], [1e-9, 0, 0, 1.0],
                       [-1e-9, 2e-9, 0, -1.0], [1, 0, 0, 1e-12], [1, 0, 0, -1e-12]])


# ---- values against SciPy ----------------------------------------------------------------
@pytest.mark.parametrize("shape", [(), (7,), (2, 3)])
def test_conversions_are_scipys(shape):
    q = quats(*shape)
    ours, theirs = Rotation.from_quat(q), SR.from_quat(q)
    assert ours.shape == theirs.shape and ours.single == theirs.single
    same(ours.as_quat(), theirs.as_quat())
    same(ours.as_quat(canonical=True), theirs.as_quat(canonical=True))
    same(ours.as_quat(scalar_first=True), theirs.as_quat(scalar_first=True))
    same(ours.as_matrix(), theirs.as_matrix())
    same(ours.as_rotvec(), theirs.as_rotvec())
    same(ours.as_rotvec(degrees=True), theirs.as_rotvec(degrees=True), 1e-11)
    same(ours.as_mrp(), theirs.as_mrp())
    same(ours.magnitude(), theirs.magnitude())
    same(ours.inv().as_quat(), theirs.inv().as_quat())
    for seq in SEQS:
        same(ours.as_euler(seq), theirs.as_euler(seq))
    same(ours.as_euler("zxz", degrees=True), theirs.as_euler("zxz", degrees=True), 1e-11)
    # the traced path: the same operations, the same numbers
    same(traced_value(lambda q: Rotation.from_quat(q).as_euler("XZY"), q),
         theirs.as_euler("XZY"))


@pytest.mark.parametrize("shape", [(), (7,), (2, 3)])
def test_constructors_are_scipys(shape):
    v = rng.normal(size=shape + (3,)) * 2
    for scale in (1.0, 1e-3, 1e-9, 0.0):                     # the identity, and near it
        same(Rotation.from_rotvec(v * scale).as_quat(), SR.from_rotvec(v * scale).as_quat())
    same(Rotation.from_rotvec(v * 60, degrees=True).as_quat(),
         SR.from_rotvec(v * 60, degrees=True).as_quat())
    same(Rotation.from_mrp(v).as_quat(), SR.from_mrp(v).as_quat())
    q = quats(*shape)
    same(Rotation.from_quat(q, scalar_first=True).as_quat(),
         SR.from_quat(q, scalar_first=True).as_quat())
    m = SR.from_quat(q).as_matrix()
    same(Rotation.from_matrix(m).as_quat(), SR.from_matrix(m).as_quat())
    noisy = m + 0.2 * rng.normal(size=m.shape)       # not orthogonal: the nearest rotation
    ok = np.linalg.det(noisy) > 0
    noisy = np.where(ok[..., None, None], noisy, m)
    same(Rotation.from_matrix(noisy).as_quat(), SR.from_matrix(noisy).as_quat(), 1e-11)
    same(Rotation.from_matrix(3 * m).as_quat(), SR.from_matrix(3 * m).as_quat())
    angles = rng.uniform(-7, 7, size=shape + (3,))
    for seq in SEQS:
        same(Rotation.from_euler(seq, angles).as_quat(), SR.from_euler(seq, angles).as_quat())
        same(Rotation.from_euler(seq[:2], angles[..., :2]).as_quat(),
             SR.from_euler(seq[:2], angles[..., :2]).as_quat())
        same(Rotation.from_euler(seq[0], angles[..., :1]).as_quat(),
             SR.from_euler(seq[0], angles[..., :1]).as_quat())
    same(Rotation.from_euler("Y", 0.7).as_quat(), SR.from_euler("Y", 0.7).as_quat())
    same(Rotation.from_euler("xyz", angles * 50, degrees=True).as_quat(),
         SR.from_euler("xyz", angles * 50, degrees=True).as_quat())


def test_edge_cases_are_scipys():
    ours, theirs = Rotation.from_quat(EDGE_QUATS), SR.from_quat(EDGE_QUATS)
    for name in ("as_quat", "as_matrix", "as_rotvec", "as_mrp", "magnitude"):
        same(getattr(ours, name)(), getattr(theirs, name)())
    same(ours.as_quat(canonical=True), theirs.as_quat(canonical=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # (gimbal lock: both warn)
        for seq in SEQS:
            same(ours.as_euler(seq), theirs.as_euler(seq))
    # the cube's rotations: components equal in magnitude, where from_matrix's sign is
    # SciPy's tie break (the first of x, y, z, w)
    m = cube()
    same(Rotation.from_matrix(m).as_quat(), SR.from_matrix(m).as_quat())
    same(Rotation.from_matrix(m).as_rotvec(), SR.from_matrix(m).as_rotvec())
    same(Rotation.identity(3).as_quat(), SR.identity(3).as_quat())
    same(Rotation.identity(shape=(2, 1)).as_matrix(), SR.identity(shape=(2, 1)).as_matrix())
    assert Rotation.identity(0).shape == (0,)


@pytest.mark.parametrize("seq", SEQS)
def test_gimbal_lock_is_scipys_with_its_warning(seq):
    proper = seq[0].lower() == seq[2].lower()
    ends = [0.0, PI] if proper else [PI / 2, -PI / 2]
    for end, off, (a, c) in itertools.product(
            ends, [0.0, 5e-8, 2e-7, 1e-5], [(0.3, 0.2), (3.0, 3.1), (-PI, PI)]):
        middle = end + off if end <= 0 else end - off
        angles = [a, middle, c]
        want_warning = off < 1e-7
        with warnings.catch_warnings(record=True) as ours_w:
            warnings.simplefilter("always")
            ours = Rotation.from_euler(seq, angles).as_euler(seq)
        with warnings.catch_warnings(record=True) as theirs_w:
            warnings.simplefilter("always")
            theirs = SR.from_euler(seq, angles).as_euler(seq)
        same(ours, theirs)
        assert [str(w.message) for w in ours_w] == [str(w.message) for w in theirs_w]
        assert bool(ours_w) == want_warning
        if want_warning:
            assert ours[2] == 0 and ours_w[0].category is UserWarning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Rotation.from_euler(seq, [0.3, ends[0], 0.2]).as_euler(seq, suppress_warnings=True)


def test_composition_apply_and_mean_are_scipys():
    p, q = quats(5), quats(5)
    P, Q, SP, SQ = Rotation.from_quat(p), Rotation.from_quat(q), SR.from_quat(p), SR.from_quat(q)
    same((P * Q).as_quat(), (SP * SQ).as_quat())
    same((P[0] * Q).as_quat(), (SP[0] * SQ).as_quat())
    same((P * Q[1]).as_quat(), (SP * SQ[1]).as_quat())
    same((P[:1] * Q).as_quat(), (SP[:1] * SQ).as_quat())
    v = rng.normal(size=(5, 3))
    for inverse in (False, True):
        same(P.apply(v, inverse), SP.apply(v, inverse))
        same(P[2].apply(v, inverse), SP[2].apply(v, inverse))
        same(P.apply(v[0], inverse), SP.apply(v[0], inverse))
        same(P[2].apply(v[0], inverse), SP[2].apply(v[0], inverse))
        same(P[2].apply(v[:1], inverse), SP[2].apply(v[:1], inverse))
    # the mean's sign is LAPACK's eigenvector's, as SciPy's: the same for the same matrix,
    # but SciPy sums it in another order, so a rare one differs by its rounding (canonical)
    w = rng.uniform(size=5)
    canonical = lambda r: r.as_quat(canonical=True)
    same(canonical(P.mean()), canonical(SP.mean()))
    same(canonical(P.mean(weights=w)), canonical(SP.mean(weights=w)))
    same(P[0].mean().as_quat(), SP[0].mean().as_quat())
    stack = Rotation.from_quat(quats(2, 3))
    scipys = SR.from_quat(stack.as_quat())
    for axis in (0, 1, -1, (0, 1)):
        same(canonical(stack.mean(axis=axis)), canonical(scipys.mean(axis=axis)))
    for k in range(20):
        same(Rotation.random(4, rng=k).mean().as_quat(), SR.random(4, rng=k).mean().as_quat())
    for n in (0.5, -2.5, 3, 0, 1, -1):
        same((P ** n).as_quat(), (SP ** n).as_quat())
    close = Rotation.from_rotvec([[1e-9, 0, 0], [1e-3, 0, 0]]) * P[:2]
    assert (P[:2].approx_equal(close) == SP[:2].approx_equal(SR.from_quat(close.as_quat()))).all()
    assert P[:2].approx_equal(close, atol=0.1, degrees=True).tolist() == [True, True]


def test_stacks_index_iterate_and_concatenate_as_scipys():
    q = quats(6)
    r, s = Rotation.from_quat(q), SR.from_quat(q)
    for index in (2, -1, slice(1, 4), [0, 3], np.array([True, False] * 3), slice(None, None, -2)):
        same(r[index].as_quat(), s[index].as_quat())
        assert r[index].single == s[index].single
    assert len(r) == 6 and [x.single for x in r] == [True] * 6
    same(Rotation.concatenate([r[0], r[1:3], r]).as_quat(),
         SR.concatenate([s[0], s[1:3], s]).as_quat())
    nd = Rotation.from_quat(quats(2, 3))
    same(nd[1].as_quat(), SR.from_quat(nd.as_quat())[1].as_quat())
    same(nd[:, 0].as_quat(), nd.as_quat()[:, 0])        # (SciPy's takes one index only)
    assert len(nd) == 2 and bool(r[0])


def test_random_is_scipys_for_a_seed():
    same(Rotation.random(5, rng=3).as_quat(), SR.random(5, rng=3).as_quat())
    same(Rotation.random(rng=3).as_quat(), SR.random(rng=3).as_quat())
    same(Rotation.random(shape=(2, 2), rng=3).as_quat(), SR.random(shape=(2, 2), rng=3).as_quat())
    same(Rotation.random(rng=np.random.default_rng(4)).as_quat(),
         SR.random(rng=np.random.default_rng(4)).as_quat())
    same(Rotation.random(2, random_state=5).as_quat(), SR.random(2, random_state=5).as_quat())
    # JAX's form: a key of wengert.random (the same key, the same rotations)
    key = wg.random.PRNGKey(1)
    a, b = Rotation.random(key, 3), Rotation.random(key, 3)
    assert a.shape == (3,) and np.array_equal(a.as_quat(), b.as_quat())
    same(np.linalg.norm(a.as_quat(), axis=-1), np.ones(3))


def test_slerp_is_scipys():
    q = quats(5)
    times = np.array([0.0, 0.4, 1.5, 2.0, 3.7])
    ours, theirs = Slerp(times, Rotation.from_quat(q)), SSlerp(times, SR.from_quat(q))
    t = np.r_[times, rng.uniform(0, 3.7, size=20)]
    same(ours(t).as_quat(), theirs(t).as_quat())
    same(ours(1.1).as_quat(), theirs(1.1).as_quat())
    assert ours(1.1).single and not ours([1.1]).single
    same(Slerp.init(times, Rotation.from_quat(q))(t).as_quat(), theirs(t).as_quat())
    # equal keys: a rotation that stays put (as_rotvec at the identity)
    rep = np.r_[q[:1], q[:1], q[1:2]]
    same(Slerp([0, 1, 2], Rotation.from_quat(rep))(t[5:] / 2).as_quat(),
         SSlerp([0, 1, 2], SR.from_quat(rep))(t[5:] / 2).as_quat())


# ---- against JAX -------------------------------------------------------------------------
def _jax():
    jax = pytest.importorskip("jax")      # (in float64, as tests/conftest.py runs it)
    from jax.scipy.spatial.transform import Rotation as JR, Slerp as JSlerp
    return jax, JR, JSlerp


def _jax_cases(JR, JSlerp):
    """name -> (wengert's function, JAX's, arguments): the same code with either class."""
    v, w = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    times = np.array([0.0, 1.0, 2.5])
    cases = {
        "as_matrix": (lambda R: lambda q: R.from_quat(q).as_matrix(), quats(3)),
        "as_rotvec": (lambda R: lambda q: R.from_quat(q).as_rotvec(), quats(3)),
        "as_mrp": (lambda R: lambda q: R.from_quat(q).as_mrp(), quats(3)),
        "magnitude": (lambda R: lambda q: R.from_quat(q).magnitude(), quats(3)),
        "as_quat canonical": (lambda R: lambda q: R.from_quat(q).as_quat(True), quats(3)),
        "from_rotvec": (lambda R: lambda v: R.from_rotvec(v).as_quat(), v),
        "from_mrp": (lambda R: lambda v: R.from_mrp(v).as_quat(), v),
        "apply": (lambda R: lambda q, v: R.from_quat(q).apply(v), quats(3), w),
        "apply inverse": (lambda R: lambda q, v: R.from_quat(q).apply(v, inverse=True),
                          quats(3), w),
        "compose": (lambda R: lambda p, q: (R.from_quat(p) * R.from_quat(q)).as_quat(),
                    quats(3), quats(3)),
        "inv": (lambda R: lambda q: R.from_quat(q).inv().as_matrix(), quats(3)),
        "mean": (lambda R: lambda q: R.from_quat(q).mean().as_matrix(), quats(4)),
    }
    for seq in ("xyz", "ZYX", "zxz", "YXY", "xzy"):
        cases[f"as_euler {seq}"] = (lambda R, s=seq: lambda q: R.from_quat(q).as_euler(s),
                                    quats(3))
        cases[f"from_euler {seq}"] = (lambda R, s=seq: lambda a: R.from_euler(s, a).as_quat(),
                                      rng.uniform(-3, 3, size=(3, 3)))
    slerp = lambda R: JSlerp.init if R is JR else Slerp
    keys = np.ones((3, 4)) + np.arange(12.0).reshape(3, 4) ** 0.5
    cases["slerp in t"] = (lambda R: lambda t: slerp(R)(times, R.from_quat(keys))(t).as_matrix(),
                           np.array([0.3, 1.0, 2.2]))
    cases["slerp in keys"] = (lambda R: lambda q: slerp(R)(times, R.from_quat(q))(
        np.array([0.3, 1.0, 2.2])).as_matrix(), quats(3))
    return cases


@pytest.mark.parametrize("name", sorted(_jax_cases(Rotation, Slerp)))
def test_values_and_derivatives_equal_jaxs(name):
    jax, JR, JSlerp = _jax()
    make, *args = _jax_cases(JR, JSlerp)[name]
    ours, theirs = make(Rotation), make(JR)
    same(ours(*args), theirs(*args), 1e-11)
    argnums = tuple(range(len(args)))
    for ours_d, theirs_d in ((wg.jacrev(ours, argnums), jax.jacrev(theirs, argnums)),
                             (wg.jacfwd(ours, argnums), jax.jacfwd(theirs, argnums))):
        for a, b in zip(ours_d(*args), theirs_d(*args)):
            same(a, b, 1e-10)


def test_from_matrix_derivative_along_rotations_is_jaxs():
    """JAX's from_matrix is Markley's method without SciPy's orthogonalisation, so the
    two derivatives agree where a rotation matrix moves as one, R(I + Ω) with Ω skew."""
    jax, JR, _ = _jax()
    m = Rotation.random(rng=8).as_matrix()
    for _ in range(3):
        omega = rng.normal(size=3)
        skew = np.cross(np.eye(3), omega)
        ours = wg.jvp(lambda m: Rotation.from_matrix(m).as_quat(), (m,), (m @ skew,))[1]
        theirs = jax.jvp(lambda m: JR.from_matrix(m).as_quat(), (m,), (m @ skew,))[1]
        same(ours, theirs, 1e-10)


# ---- derivatives against central differences -------------------------------------------------
def _q(*shape):
    return quats(*shape)


DERIVATIVE_CASES = {
    "from_quat as_matrix": (lambda q: Rotation.from_quat(q).as_matrix(), _q(3)),
    "as_quat canonical scalar_first": (
        lambda q: Rotation.from_quat(q).as_quat(canonical=True, scalar_first=True), _q(2, 2)),
    "as_rotvec": (lambda q: Rotation.from_quat(q).as_rotvec(degrees=True), _q(3)),
    "as_mrp": (lambda q: Rotation.from_quat(q).as_mrp(), _q(3)),
    "magnitude": (lambda q: Rotation.from_quat(q).magnitude(), _q(3)),
    "from_rotvec": (lambda v: Rotation.from_rotvec(v, degrees=True).as_quat(),
                    rng.normal(size=(3, 3)) * 60),
    "from_mrp": (lambda v: Rotation.from_mrp(v).as_quat(), rng.normal(size=(3, 3))),
    "from_matrix": (lambda m: Rotation.from_matrix(m).as_quat(),
                    SR.random(3, rng=1).as_matrix() + 0.2 * rng.normal(size=(3, 3, 3))),
    "from_matrix of rotations": (lambda m: Rotation.from_matrix(m).as_rotvec(),
                                 SR.random(3, rng=2).as_matrix()),
    "from_euler intrinsic": (lambda a: Rotation.from_euler("ZXZ", a).as_quat(),
                             rng.uniform(-3, 3, size=(2, 3))),
    "from_euler extrinsic degrees": (lambda a: Rotation.from_euler("xy", a, True).as_quat(),
                                     rng.uniform(-180, 180, size=(2, 2))),
    "apply": (lambda q, v: Rotation.from_quat(q).apply(v), _q(3), rng.normal(size=(3, 3))),
    "apply inverse, one rotation": (lambda q, v: Rotation.from_quat(q).apply(v, True),
                                    _q(), rng.normal(size=(4, 3))),
    "compose": (lambda p, q: (Rotation.from_quat(p) * Rotation.from_quat(q)).as_quat(),
                _q(3), _q()),
    "pow": (lambda q, n: (Rotation.from_quat(q) ** n).as_quat(), _q(3), np.array(0.7)),
    "mean": (lambda q, w: Rotation.from_quat(q).mean(weights=w ** 2).as_quat(), _q(4),
             rng.normal(size=4)),
    "mean over an axis": (lambda q: Rotation.from_quat(q).mean(axis=1).as_matrix(), _q(2, 3)),
    "slerp in query, key times and keys": (
        lambda q, t, tq: Slerp(wnp.cumsum(t ** 2), Rotation.from_quat(q))(tq).as_quat(),
        _q(3), np.array([0.3, 1.0, 1.2]), np.array([0.5, 1.5, 2.2])),
}
for _seq in SEQS:
    DERIVATIVE_CASES[f"as_euler {_seq}"] = (
        lambda q, s=_seq: Rotation.from_quat(q).as_euler(s), _q(3))


@pytest.mark.parametrize("name", sorted(DERIVATIVE_CASES))
def test_derivatives_match_central_differences_to_second_order(name):
    f, *args = DERIVATIVE_CASES[name]
    check_grads(f, *args, order=2)


# The identity, where sin(θ/2)/θ and θ/sin(θ/2) are 0/0: exactly there, near it, and on both
# sides of the thresholds where the series give way to the formulas (θ = 0.5 for from_rotvec,
# tan(θ/2) = 0.1 for as_rotvec).
_AXIS = np.array([0.48, -0.6, 0.64])


@pytest.mark.parametrize("angle", [0.0, 1e-9, 1e-4, 0.5 - 1e-9, 0.5 + 1e-9, 2.0])
def test_from_rotvec_through_the_identity(angle):
    v = _AXIS * angle
    check_grads(lambda v: Rotation.from_rotvec(v).as_quat(), v, order=2)
    jac = wg.jacfwd(lambda v: Rotation.from_rotvec(v).as_quat())(v)
    assert np.all(np.isfinite(jac))
    if angle == 0.0:                            # d(sin(θ/2) u, cos(θ/2)) = (I/2, 0)
        same(jac, np.r_[np.eye(3) / 2, np.zeros((1, 3))])
        same(wg.hessian(lambda v: Rotation.from_rotvec(v).as_quat()[3])(v), -np.eye(3) / 4)


@pytest.mark.parametrize("angle", [0.0, 1e-9, 1e-4, 2 * np.arctan(0.1) * (1 - 1e-9),
                                   2 * np.arctan(0.1) * (1 + 1e-9), 3.0])
def test_as_rotvec_through_the_identity(angle):
    q = np.r_[np.sin(angle / 2) * _AXIS, np.cos(angle / 2)]
    f = lambda q: Rotation.from_quat(q).as_rotvec()
    check_grads(f, q, order=2)
    if angle == 0.0:        # rotvec = 2 xyz/w + O(|xyz|³): (2I, 0); x's Hessian: -2/w²
        same(wg.jacrev(f)(q), np.c_[2 * np.eye(3), np.zeros(3)])
        hessian = np.zeros((4, 4))
        hessian[0, 3] = hessian[3, 0] = -2.0
        same(wg.hessian(lambda q: f(q)[0])(q), hessian)
    # the round trip through the identity
    rotvec = _AXIS * angle
    same(wg.jacfwd(lambda v: Rotation.from_rotvec(v).as_rotvec())(rotvec), np.eye(3), 1e-9)


def test_magnitude_at_the_identity_has_derivative_zero():
    """The angle is a norm's kink there (|θ|): 0, as abs has at 0, not nan."""
    q = np.array([0.0, 0.0, 0.0, 1.0])
    same(wg.grad(lambda q: Rotation.from_quat(q).magnitude())(q), np.zeros(4))
    near = np.r_[1e-6 * _AXIS, 1.0]        # near it: the norm's gradient (2/w)·xyz/|xyz|
    same(wg.grad(lambda q: Rotation.from_quat(q).magnitude())(near),
         np.r_[2 * _AXIS, -2e-6], 1e-9)


@pytest.mark.parametrize("seq", ["xyz", "XYZ", "zxz", "ZXZ", "yzx"])
def test_as_euler_at_gimbal_lock_has_the_stated_derivative(seq):
    """Locked, the third angle is 0 and the first carries the shared angle (a - c or
    a + c in from_euler's angles), so d first = (1, 0, ∓1), d middle = 0 (a kink),
    d third = 0: the derivative of the values returned, finite.  Along the lock
    (moving a and c) it is the central differences'."""
    proper = seq[0].lower() == seq[2].lower()
    for end in ([0.0, PI] if proper else [PI / 2, -PI / 2]):
        angles = np.array([0.3, end, 0.2])
        f = lambda a: Rotation.from_euler(seq, a).as_euler(seq, suppress_warnings=True)
        jac = wg.jacfwd(f)(angles)
        assert np.all(np.isfinite(jac))
        same(jac, wg.jacrev(f)(angles))
        same(jac[1:], np.zeros((2, 3)))
        along = fd_jacobian(lambda ac: f(np.array([ac[0], end, ac[1]])), angles[[0, 2]], 1e-6)
        assert_close(jac[:, [0, 2]], along, rtol=1e-7, atol=1e-8)
        assert abs(jac[0, 0]) == pytest.approx(1) and abs(jac[0, 2]) == pytest.approx(1)
    # near lock, the true derivative: large, as 1/(distance)
    end = 0.0 if proper else PI / 2
    near = np.array([0.3, end + (1e-3 if proper else -1e-3), 0.2])
    check_grads(lambda a: Rotation.from_euler(seq, a).as_euler(seq), near, order=1,
                eps=1e-7, rtol=1e-5)
    assert np.abs(wg.jacfwd(lambda a: Rotation.from_euler(seq, a).as_quat())(near)).max() < 1
    assert np.abs(wg.jacfwd(lambda q: Rotation.from_quat(q).as_euler(seq))(
        Rotation.from_euler(seq, near).as_quat())).max() > 100


def test_from_matrix_derivative_is_the_nearest_rotations():
    """d quat(polar(M)): the polar factor moves by R Ω with Ω skew, ω = ((tr P) I - P)⁻¹ x,
    x the axial vector of Rᵀ dM - dMᵀ R (P = Rᵀ M): checked against that closed form."""
    m = SR.random(rng=3).as_matrix() @ np.diag([1.0, 1.5, 2.5]) + 0.1 * rng.normal(size=(3, 3))
    dm = rng.normal(size=(3, 3))
    u, _, vt = np.linalg.svd(m)
    R = u @ vt
    P = R.T @ m
    X = R.T @ dm - dm.T @ R
    omega = np.linalg.solve(np.trace(P) * np.eye(3) - P, [X[2, 1], X[0, 2], X[1, 0]])
    want = R @ np.cross(np.eye(3), omega)                   # R [ω]×
    got = wg.jvp(lambda m: Rotation.from_matrix(m).as_matrix(), (m,), (dm,))[1]
    same(got, want, 1e-10)


def test_a_mean_without_an_answer_warns_in_its_derivative():
    two = Rotation.from_rotvec([[0.0, 0.0, 0.0], [PI, 0.0, 0.0]])   # orthogonal quaternions
    with pytest.warns(RuntimeWarning, match="largest eigenvalue is repeated"):
        wg.jacrev(lambda q: Rotation.from_quat(q).mean().as_quat())(two.as_quat())


# ---- pytrees and transformations ---------------------------------------------------------
def test_rotations_pass_through_jit_vmap_grad_and_compile():
    r = Rotation.random(5, rng=0)
    v = rng.normal(size=(5, 3))
    out = wg.jit(lambda v: Rotation.from_rotvec(v))(v)
    assert isinstance(out, Rotation) and out.shape == (5,)
    same(out.as_quat(), Rotation.from_rotvec(v).as_quat())
    same(wg.jit(lambda r: r.as_euler("xyz"))(r), r.as_euler("xyz"))
    same(wg.vmap(lambda r, v: r.apply(v))(r, v), r.apply(v))
    same(wg.vmap(lambda v: Rotation.from_rotvec(v).as_euler("ZYX"))(v),
         Rotation.from_rotvec(v).as_euler("ZYX"))
    out = wg.vmap(lambda v: Rotation.from_rotvec(v))(v)
    assert isinstance(out, Rotation) and out.shape == (5,)
    # a gradient with respect to a Rotation is a Rotation-shaped pytree, its quaternions'
    loss = lambda r: wnp.sum(r.apply(v) ** 3)
    g = wg.grad(loss)(r)
    assert isinstance(g, Rotation)
    same(g.quat, wg.grad(lambda q: loss(Rotation._of(q)))(r.quat))
    m = r.as_matrix()
    compiled = wg.compile(lambda m: Rotation.from_matrix(m).as_rotvec(), m)
    same(compiled(m), r.as_rotvec())
    grad_m = wg.grad(lambda m: wnp.sum(Rotation.from_matrix(m).as_rotvec() ** 2))
    same(wg.compile(grad_m, m)(m), grad_m(m))
    stack = Rotation.random(shape=(4, 3), rng=1)
    same(wg.vmap(lambda r: r.mean().as_matrix())(stack), stack.mean(axis=1).as_matrix())
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # (no values under compile: no lock warning)
        locked = Rotation.from_euler("xyz", [0.3, PI / 2, 0.2])
        wg.compile(lambda r: r.as_euler("xyz"), locked)(locked)


def test_slerp_passes_through_jit_and_vmap():
    slerp = Slerp([0.0, 1.0, 2.0], Rotation.random(3, rng=2))
    t = np.array([0.5, 1.5, 2.0])
    same(wg.jit(lambda t: slerp(t).as_quat())(t), slerp(t).as_quat())
    same(wg.jit(lambda t: slerp(t).as_quat())(1.5), slerp(1.5).as_quat())
    same(wg.vmap(lambda t: slerp(t).as_quat())(t), slerp(t).as_quat())
    same(wg.jit(lambda s, t: s(t).as_quat())(slerp, t), slerp(t).as_quat())
    g = wg.grad(lambda s: wnp.sum(s(t).as_rotvec()))(slerp)
    assert isinstance(g, Slerp) and isinstance(g.rotations, Rotation)


def test_taylor_coefficients_through_the_series_and_the_eigenvector():
    """wg.derivatives through from_rotvec's and as_rotvec's series at the identity (sin(t/2)
    and 2 atan(t)) and through from_matrix's eigenvector (a round trip: t itself)."""
    z = lambda t: 0.0 * t
    f = lambda t: Rotation.from_rotvec(wnp.stack([z(t), z(t), t])).as_quat()[2]
    same(wg.derivatives(f, order=4)(0.0), [0.0, 0.5, 0.0, -0.125, 0.0])
    g = lambda t: Rotation.from_quat(wnp.stack([t, z(t), z(t), 1.0 + z(t)])).as_rotvec()[0]
    same(wg.derivatives(g, order=4)(0.0), [0.0, 2.0, 0.0, -4.0, 0.0])
    h = lambda t: Rotation.from_matrix(Rotation.from_rotvec(
        wnp.stack([t, 0.2 + z(t), 0.1 + z(t)])).as_matrix()).as_rotvec()[0]
    same(wg.derivatives(h, order=3)(0.3), [0.3, 1.0, 0.0, 0.0], 1e-12)


def test_traced_scalars_in_lists():
    f = lambda a: Rotation.from_quat([a, 0.0, 0.0, 1.0]).as_rotvec()[0]
    same(wg.grad(f)(0.0), 2.0)
    g = lambda a: Rotation.from_euler("zyx", [a, 2 * a, 0.1]).as_euler("zyx")[1]
    same(wg.grad(g)(0.2), 2.0)


# ---- errors -------------------------------------------------------------------------------
def test_errors_are_scipys_and_name_what_is_wrong():
    with pytest.raises(ValueError,
                       match=r"Expected `quat` to have shape \(\.\.\., 4\), got \(3,\)"):
        Rotation.from_quat([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="Found zero norm quaternions in `quat`."):
        Rotation.from_quat(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="Found zero norm"):     # traced, with values
        wg.grad(lambda q: Rotation.from_quat(q).as_matrix()[0, 0])(np.zeros(4))
    for seq, match in (("xyw", "got xyw"), ("xYz", "got xYz"), ("xxz", "different, got xxz"),
                       ("xyzx", "upto 3 characters, got xyzx"), ("", "non-empty")):
        with pytest.raises(ValueError, match=match):
            Rotation.from_euler(seq, [0.1, 0.2, 0.3][:max(len(seq), 1)])
    with pytest.raises(ValueError, match="Expected 3 axes, got xy"):
        Rotation.identity().as_euler("xy")
    with pytest.raises(ValueError, match=r"got 2 \(angles of shape \(4, 2\) for the 3 axes"):
        Rotation.from_euler("xyz", np.zeros((4, 2)))
    with pytest.raises(ValueError, match=r"rotations of shape \(2,\) to vectors of shape \(3,\)"):
        Rotation.random(2, rng=0).apply(np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"Expected input of shape \(\.\.\., 3\), got \(4,\)"):
        Rotation.random(2, rng=0).apply(np.zeros(4))
    with pytest.raises(ValueError, match=r"Cannot broadcast \(2,\) rotations in first to "
                                         r"\(3,\) rotations in second object."):
        Rotation.random(2, rng=0) * Rotation.random(3, rng=0)
    with pytest.raises(ValueError, match=r"Non-positive determinant .* rotation matrix 1"):
        Rotation.from_matrix(np.stack([np.eye(3), -np.eye(3)]))
    with pytest.raises(ValueError, match=r"got \(3, 4\)"):
        Rotation.from_matrix(np.zeros((3, 4)))
    with pytest.raises(ValueError, match=r"`rot_vec`.* got \(2,\)"):
        Rotation.from_rotvec([1.0, 2.0])
    with pytest.raises(ValueError, match=r"`mrp`.* got \(2,\)"):
        Rotation.from_mrp([1.0, 2.0])
    with pytest.raises(ValueError, match=r"shape \(3,\), got \(2,\)"):
        Rotation.random(3, rng=0).mean(weights=[1.0, 2.0])
    with pytest.raises(ValueError, match="non-negative"):
        Rotation.random(3, rng=0).mean(weights=[1.0, -2.0, 3.0])
    with pytest.raises(TypeError, match="Single rotation is not subscriptable."):
        Rotation.identity()[0]
    with pytest.raises(TypeError, match="Single rotation has no len"):
        len(Rotation.identity())
    with pytest.raises(AttributeError, match="rotation is not offered"):
        __import__("wengert.scipy.spatial.transform", fromlist=["_"]).rotation


# ---- align_vectors -------------------------------------------------------------------------
def _alignment_cases():
    a, b = rng.normal(size=(6, 3)), rng.normal(size=(6, 3))
    w = rng.uniform(0.3, 2.0, size=6)
    one_inf = w.copy()
    one_inf[2] = np.inf
    return [(a, b), (a, b, w), (a[:1], b[:1]), (a[0], b[0]), (a[:1], b[:1], [4.0]),
            (a[:1], b[:1], [np.inf]), (a, b, one_inf), (a[:2], b[:2], [np.inf, 1.0]),
            ([[1.0, 0, 0]], [[-1.0, 0, 0]]), ([[0, 0, 2.0]], [[0, 0, -1.0]]),
            ([[0, 1.0, 0]], [[0, -1.0, 0]]),            # opposite: SciPy's half-turns
            (a[:3], SR.random(rng=1).apply(a[:3]))]     # an exact fit: rssd 0


def test_align_vectors_is_scipys():
    for case in _alignment_cases():
        theirs, their_rssd = SR.align_vectors(*case)
        ours, rssd = Rotation.align_vectors(*case)
        assert type(rssd) is float
        same(ours.as_quat(), theirs.as_quat())            # the sign too
        # (SciPy's rssd, √(Σw(|a|²+|b|²) - 2Σs), keeps √ε of cancellation at an exact
        # fit, 6e-8 where the distances give 2e-15)
        same(rssd, their_rssd, 1e-7)
        traced = traced_value(lambda a, b: Rotation.align_vectors(a, b, *case[2:])[0].as_quat(),
                              np.asarray(case[0], float), np.asarray(case[1], float))
        same(traced, theirs.as_quat())
    a, b, w = rng.normal(size=(5, 3)), rng.normal(size=(5, 3)), rng.uniform(0.5, 2, 5)
    theirs = SR.align_vectors(a, b, w, return_sensitivity=True)
    ours = Rotation.align_vectors(a, b, w, return_sensitivity=True)
    same(ours[2], theirs[2], 1e-10)
    # compiled: the same rotation, a, b and the weights as arguments
    fitted = wg.compile(lambda a, b, w: Rotation.align_vectors(a, b, w)[0].as_quat())
    same(fitted(a, b, w), theirs[0].as_quat())


def test_align_vectors_derivatives():
    a, b, w = rng.normal(size=(5, 3)), rng.normal(size=(5, 3)), rng.uniform(0.5, 2, 5)
    check_grads(lambda a, b, w: Rotation.align_vectors(a, b, w)[0].as_matrix(), a, b, w,
                order=2)
    check_grads(lambda a, b, w: Rotation.align_vectors(a, b, w)[1], a, b, w, order=2)
    check_grads(lambda a, b, w: Rotation.align_vectors(a, b, w, True)[2], a, b, w, order=1)
    # one pair, and one infinite weight: the least turn, then the turn about the first
    check_grads(lambda a, b: Rotation.align_vectors(a, b)[0].as_quat(), a[0], b[0], order=2)
    primary = lambda a, b, w: Rotation.align_vectors(
        a, b, wnp.concatenate([wnp.array([np.inf]), w]))[0].as_matrix()
    check_grads(lambda a, b, w: primary(a, b, w), a, b, w[1:], order=2)
    # a closed form: rotating the bᵢ by C₀ and perturbing along a rotation's generator
    # turns the fit by the same angle (d/dt of the fitted rotvec is the generator's axis)
    c0 = SR.random(rng=3)
    axis = np.array([0.0, 0.6, 0.8])
    angle = lambda t: Rotation.align_vectors(
        Rotation.from_rotvec(axis * t).apply(c0.apply(b)), b)[0] * Rotation.from_quat(
        c0.inv().as_quat())
    same(wg.jacfwd(lambda t: angle(t).as_rotvec())(0.0), axis, 1e-9)


def test_align_vectors_errors_and_warning_are_scipys():
    a, b = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    for args, kwargs, match in (
            ((a, b[:3]), {}, r"same shapes, got \(4, 3\) and \(3, 3\)"),
            ((a, b, [1.0, 1.0]), {}, "got 2 values and 4 vectors"),
            ((a, b, [1.0, -1.0, 1.0, 1.0]), {}, "may not contain negative values"),
            ((a, b, [1.0, np.inf, np.inf, 1.0]), {}, "Only one infinite weight"),
            ((a, b, [1.0, np.inf, 1.0, 1.0]), {"return_sensitivity": True},
             "Cannot return sensitivity matrix"),
            ((a[:1], b[:1]), {"return_sensitivity": True}, "Cannot return sensitivity"),
            ((a[:, :2], b[:, :2]), {}, r"shape \(3,\) or \(N, 3\)")):
        with pytest.raises(ValueError, match=match):
            Rotation.align_vectors(*args, **kwargs)
        with pytest.raises(ValueError):
            SR.align_vectors(*args, **kwargs)
    line_a, line_b = [[1.0, 0, 0], [2.0, 0, 0]], [[0, 1.0, 0], [0, 3.0, 0]]
    with pytest.warns(UserWarning, match="not uniquely or poorly defined"):
        found, _ = Rotation.align_vectors(line_a, line_b)
    same(found.apply([0, 1.0, 0]), [1.0, 0, 0])         # one of the optimal rotations


def test_slerp_errors_are_scipys():
    keys = Rotation.random(3, rng=0)
    for times, rotations, match in (
            ([0.0], Rotation.random(1, rng=0), "at least 2 rotations"),
            ([0.0, 1.0], Rotation.random(rng=0), "at least 2 rotations"),
            ([0.0, 1.0], keys, "got 3 rotations and 2 timestamps"),
            ([0.0, 2.0, 1.0], keys, "strictly increasing"),
            ([[0.0, 1.0, 2.0]], keys, "1 dimensional array, got 2"),
            ([0.0, 1.0], Rotation.random(shape=(2, 2), rng=0), "more than 1 leading")):
        with pytest.raises(ValueError, match=match):
            Slerp(times, rotations)
    slerp = Slerp([0.0, 1.0, 2.0], keys)
    with pytest.raises(ValueError, match=r"within the range \[0.0, 2.0\], both inclusive"):
        slerp(2.5)
    with pytest.raises(ValueError, match="at most 1-dimensional"):
        slerp([[0.5]])
    with pytest.raises(TypeError, match="must be a `Rotation`"):
        Slerp([0.0, 1.0], SR.random(2, rng=0))


# ---- Davenport angles ----------------------------------------------------------------------
def _davenport_axes(angle, seed):
    """Three axes, the second orthogonal to the others, the third the first turned about
    the second by `angle`, each of a random length (they are normalised)."""
    r = np.random.default_rng(seed)
    n1 = r.normal(size=3)
    n1 /= np.linalg.norm(n1)
    n2 = np.cross(n1, r.normal(size=3))
    n2 /= np.linalg.norm(n2)
    n3 = SR.from_rotvec(n2 * angle).apply(n1)
    return np.array([n1, n2, n3]) * r.uniform(0.5, 2.0, size=(3, 1))


def _wrapped(a, b, tol):
    """a = b as angles (the first and third may land on -π or π by rounding)."""
    d = np.angle(np.exp(1j * (np.asarray(a) - np.asarray(b))))
    np.testing.assert_allclose(d, 0, atol=tol)


@pytest.mark.parametrize("angle", [0.3, -0.3, 1.7, -1.7, PI / 2, -PI / 2, 0.0, PI, 3.0])
def test_davenport_angles_are_scipys(angle):
    """Both orders, random rotations, axes at any angle between the first and third: the
    middle angle's interval depends on it ([θ, θ + π] or its negative)."""
    axes = _davenport_axes(angle, 7)
    q = quats(50)
    for order in ("e", "extrinsic", "i", "intrinsic"):
        ours = Rotation.from_quat(q).as_davenport(axes, order)
        theirs = SR.from_quat(q).as_davenport(axes, order)
        _wrapped(ours, theirs, 1e-12)
        same(ours[:, 1], theirs[:, 1])
        _wrapped(traced_value(lambda q: Rotation.from_quat(q).as_davenport(axes, order), q),
                 theirs, 1e-12)
        same(Rotation.from_quat(q).as_davenport(axes, order, degrees=True)[:, 1],
             theirs[:, 1] * 180 / PI, 1e-10)
        same(Rotation.from_davenport(axes, order, theirs).as_quat(),
             SR.from_davenport(axes, order, theirs).as_quat())
        same(Rotation.from_davenport(axes, order, theirs * 180 / PI, degrees=True).as_quat(),
             SR.from_davenport(axes, order, theirs * 180 / PI, degrees=True).as_quat())
        same(traced_value(lambda a, n: Rotation.from_davenport(n, order, a).as_quat(),
                          theirs, axes), SR.from_davenport(axes, order, theirs).as_quat())


def test_davenport_shapes_and_fewer_axes_are_scipys():
    axes = _davenport_axes(1.1, 3)
    for n_axes, angles in ((1, 0.7), (1, [0.7]), (1, [[0.7], [0.2]]), (2, [0.7, -0.4]),
                           (2, rng.normal(size=(4, 2))), (3, rng.normal(size=(2, 3, 3)))):
        ax = axes[0] if n_axes == 1 and np.ndim(angles) == 0 else axes[:n_axes]
        for order in "ei":
            ours, theirs = Rotation.from_davenport(ax, order, angles), \
                SR.from_davenport(ax, order, angles)
            assert ours.shape == theirs.shape
            same(ours.as_quat(), theirs.as_quat())
    stacked = np.broadcast_to(axes, (4, 3, 3))        # a stack of axes, one per rotation
    angles = rng.normal(size=(4, 3))
    same(Rotation.from_davenport(stacked, "e", angles).as_quat(),
         SR.from_davenport(stacked, "e", angles).as_quat())
    same(Rotation.from_davenport(axes, "e", angles).as_davenport(stacked, "e"),
         SR.from_davenport(axes, "e", angles).as_davenport(axes, "e"))


@pytest.mark.parametrize("seq", SEQS[:12])
def test_davenport_at_gimbal_lock_is_scipys_with_its_warning(seq):
    """About the coordinate axes, Davenport's angles are Euler's, the lock included (the
    third angle 0, SciPy's warning); near lock both are ill-conditioned (an error of
    rounding over the distance to it)."""
    axes = np.eye(3)[[_SEQ.index(c) for c in seq]]
    proper = seq[0] == seq[2]
    for order, end, off, (a, c) in itertools.product(
            "ei", [0.0, PI] if proper else [PI / 2, -PI / 2], [0.0, 5e-8, 2e-7, 1e-5],
            [(0.3, 0.2), (3.0, 3.1), (-PI, PI)]):
        middle = end + off if end <= 0 else end - off
        r = SR.from_davenport(axes, order, [a, middle, c])
        with warnings.catch_warnings(record=True) as ours_w:
            warnings.simplefilter("always")
            ours = Rotation.from_quat(r.as_quat()).as_davenport(axes, order)
        with warnings.catch_warnings(record=True) as theirs_w:
            warnings.simplefilter("always")
            theirs = r.as_davenport(axes, order)
        _wrapped(ours, theirs, 1e-9)
        assert [str(w.message) for w in ours_w] == [str(w.message) for w in theirs_w]
        euler = seq if order == "e" else seq.upper()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _wrapped(ours, Rotation.from_quat(r.as_quat()).as_euler(euler), 1e-9)


_SEQ = "xyz"


def test_davenport_derivatives():
    """In the angles, the quaternions and the axes: the axes moved as they may move, turned
    together (by exp(ω)) and stretched (they are normalised), staying orthogonal."""
    base = _davenport_axes(1.1, 5)
    axes = lambda omega, lengths: wnp.matmul(base * lengths[:, None],
                                             wnp.swapaxes(Rotation.from_rotvec(omega)
                                                          .as_matrix(), 0, 1))
    omega, lengths = np.array([0.1, -0.2, 0.3]), np.array([1.0, 2.0, 0.5])
    for order in "ei":
        check_grads(lambda a, w, s: Rotation.from_davenport(axes(w, s), order, a).as_quat(),
                    rng.uniform(-3, 3, size=(3, 3)), omega, lengths, order=2)
        check_grads(lambda q, w, s: Rotation.from_quat(q).as_davenport(axes(w, s), order),
                    quats(3), omega, lengths, order=2)
    # at gimbal lock: finite, the third angle's and the middle's 0 (as as_euler's)
    locked = Rotation.from_davenport(base, "e", [0.3, 1.1, 0.2])   # (the interval: [1.1 - π, 1.1])
    jac = wg.jacfwd(lambda q: Rotation.from_quat(q).as_davenport(
        base, "e", suppress_warnings=True))(locked.as_quat())
    assert np.all(np.isfinite(jac)) and np.all(jac[1:] == 0)


def test_davenport_errors_are_scipys():
    axes = np.eye(3)
    for args, match in (
            (([[1, 0, 0], [1, 1, 0], [0, 0, 1.0]], "e", [1, 2, 3]), "must be orthogonal"),
            (([[1, 0, 0], [0, 1, 0], [0, 1, 1.0]], "e", [1, 2, 3]), "must be orthogonal"),
            (([[1, 0, 0], [1e-6, 1, 0], [0, 0, 1.0]], "e", [1, 2, 3]), "must be orthogonal"),
            ((axes, "x", [1, 2, 3]), "order should be 'e'/'extrinsic' for extrinsic"),
            ((axes, "e", [1, 2]), "got 2 angles and 3 axes"),
            ((np.eye(4)[:, :3], "e", [1, 2, 3, 4]), "Expected up to 3 axes, got 4"),
            (([1.0, 0, 0], "e", [1.0, 2.0]), "got 2 angles and 1 axes")):
        with pytest.raises(ValueError, match=match):
            Rotation.from_davenport(*args)
        with pytest.raises(ValueError):
            SR.from_davenport(*args)
    Rotation.from_davenport([[1, 0, 0], [1e-7, 1, 0], [0, 0, 1.0]], "e", [1, 2, 3])   # in tol
    for args, match in (((axes[:2], "e"), "Expected 3 axes, got 2"),
                        ((axes, "x"), "order should be"),
                        (([[1, 0, 0], [1, 1, 0], [1, 0, 0.0]], "e"), "must be orthogonal")):
        with pytest.raises(ValueError, match=match):
            Rotation.identity().as_davenport(*args)
        with pytest.raises(ValueError):
            SR.identity().as_davenport(*args)


# ---- reduce and create_group ---------------------------------------------------------------
GROUPS = ["I", "O", "T", "D1", "D3", "C1", "C4"]


@pytest.mark.parametrize("group", GROUPS)
def test_create_group_is_scipys(group):
    for axis in ("Z", "x", "Y"):
        same(Rotation.create_group(group, axis).as_quat(),
             SR.create_group(group, axis).as_quat())


def test_reduce_is_scipys():
    """One side given: SciPy's rotation and indices.  Both: pairs tie in angle (that of
    l p r is that of p r l), so the angle is SciPy's and the rotation the pair's chosen
    (the first, to 1e-12), which SciPy's rounding may not pick."""
    q = quats(40)
    ours, theirs = Rotation.from_quat(q), SR.from_quat(q)
    for name in ("I", "O", "D3", "C4"):
        g, sg = Rotation.create_group(name), SR.create_group(name)
        for kwargs, skwargs in (({"left": g}, {"left": sg}), ({"right": g}, {"right": sg})):
            got, want = ours.reduce(**kwargs, return_indices=True), \
                theirs.reduce(**skwargs, return_indices=True)
            same(got[0].as_quat(), want[0].as_quat())
            for a, b in zip(got[1:], want[1:]):
                assert (a is None and b is None) or np.array_equal(a, b)
            same(traced_value(lambda q: Rotation.from_quat(q).reduce(**kwargs).as_quat(), q),
                 want[0].as_quat())
            got, want = ours[3].reduce(**kwargs, return_indices=True), \
                theirs[3].reduce(**skwargs, return_indices=True)
            assert got[0].single and [np.shape(k) for k in got[1:] if k is not None] == [(1,)]
            same(got[0].as_quat(), want[0].as_quat())
    for left, right in (("I", "T"), ("O", "O"), ("C4", "C3"), ("D2", "C4")):
        g, h = Rotation.create_group(left), Rotation.create_group(right)
        got, i, j = ours.reduce(g, h, return_indices=True)
        want = theirs.reduce(SR.create_group(left), SR.create_group(right))
        same(got.magnitude(), want.magnitude())
        same(got.as_quat(), (g[i] * ours * h[j]).as_quat())
        all_angles = np.stack([[(g[a] * ours * h[b]).magnitude() for b in range(len(h))]
                               for a in range(len(g))])
        same(got.magnitude(), all_angles.min(axis=(0, 1)))
    assert ours.reduce().approx_equal(ours).all() and ours.reduce(return_indices=True)[1:] == (
        None, None)


def test_reduce_derivatives_and_compile():
    g, h = Rotation.create_group("O"), Rotation.create_group("C3")
    q = quats(5)
    check_grads(lambda q: Rotation.from_quat(q).reduce(left=g).as_quat(), q, order=2)
    check_grads(lambda q: Rotation.from_quat(q).reduce(g, h).as_matrix(), q, order=2)
    check_grads(lambda q, l: Rotation.from_quat(q).reduce(left=Rotation.from_quat(l))
                .as_quat(), q, g.as_quat() + 0.01 * rng.normal(size=(24, 4)), order=1)
    f = lambda q: Rotation.from_quat(q).reduce(g, h).as_quat()
    same(wg.compile(f, q)(q), f(q))
    same(wg.vmap(f)(q), f(q))


def test_reduce_and_create_group_errors_are_scipys():
    for group, axis, error, match in (("X", "Z", ValueError, "must be one of 'I', 'O', 'T'"),
                                      ("C0", "Z", ValueError, "Group order must be positive"),
                                      ("C3", "w", ValueError, "`axis` must be one of"),
                                      (3, "Z", ValueError, "must be a string")):
        with pytest.raises(error, match=match):
            Rotation.create_group(group, axis)
        with pytest.raises(error):
            SR.create_group(group, axis)
    with pytest.raises(TypeError, match="must be Rotation instances"):
        Rotation.random(3, rng=0).reduce(left=np.eye(3))
