"""wengert.scipy.spatial.transform: RigidTransform and RotationSpline.

Values against SciPy's (random transforms, single and stacked, and the edge cases: the
identity, half-turns, the cube's rotations where the quaternion's sign is a tie, angles at
the series' threshold, a dual quaternion with a zero real part), on plain and traced
arguments; derivatives against central differences to second order at random points and at
the singular ones (exponential coordinates at and near the identity, near a half-turn);
SciPy's spline rates to rounding, the rates and accelerations as the derivatives in time of
the rotations and rates; pytrees through jit, vmap, grad and compile; and the errors."""

import numpy as np
import pytest
from scipy.spatial.transform import (RigidTransform as ST, Rotation as SR,
                                     RotationSpline as SSpline)

import wengert as wg
import wengert.numpy as wnp
from wengert.scipy.spatial.transform import RigidTransform, Rotation, RotationSpline
from wengert.scipy.spatial.transform._rotation import _compose
from fd import check_grads
from test_spatial_transform import cube     # (the 24 rotations of a cube)

rng = np.random.default_rng(20260615)
PI = np.pi


def same(got, want, tol=1e-12):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol, atol=tol)


def traced_value(f, *args):
    """f's value by the traced path: its arguments traced (by wg.vjp)."""
    return wg.vjp(f, *args)[0]


def quats(*shape):
    return rng.normal(size=shape + (4,))


def ours_of(q, t):
    return RigidTransform.from_components(t, Rotation.from_quat(q))


def pair(q, t):
    """Ours and SciPy's transform of the same quaternions and translations."""
    return ours_of(q, t), ST.from_components(t, SR.from_quat(q))


def homogeneous(block):
    """4×4 matrices from 3×4 blocks [R, t] (the last row (0, 0, 0, 1))."""
    last = np.broadcast_to([0.0, 0.0, 0.0, 1.0], block.shape[:-2] + (1, 4))
    return wnp.concatenate([block, last], axis=-2)


def conversions(tf):
    return {"matrix": tf.as_matrix(), "exp_coords": tf.as_exp_coords(),
            "dual_quat": tf.as_dual_quat(),
            "dual_quat scalar_first": tf.as_dual_quat(scalar_first=True),
            "rotation": tf.rotation.as_quat(), "translation": tf.translation,
            "components": np.concatenate([tf.as_components()[0],
                                          tf.as_components()[1].as_quat()], axis=-1)}


# ---- RigidTransform: values against SciPy --------------------------------------------------
@pytest.mark.parametrize("shape", [(), (6,), (2, 3)])
def test_conversions_are_scipys(shape):
    q, t = quats(*shape), rng.normal(size=shape + (3,))
    ours, theirs = pair(q, t)
    assert ours.shape == theirs.shape and ours.single == theirs.single
    for name, want in conversions(theirs).items():
        same(conversions(ours)[name], want)
    # the traced path: the same operations, the same numbers
    for name in ("matrix", "exp_coords", "dual_quat", "rotation"):
        same(traced_value(lambda q, t: conversions(ours_of(q, t))[name], q, t),
             conversions(theirs)[name])


@pytest.mark.parametrize("shape", [(), (6,), (2, 3)])
def test_constructors_are_scipys(shape):
    q, t = quats(*shape), rng.normal(size=shape + (3,))
    m = ST.from_components(t, SR.from_quat(q)).as_matrix()
    noisy = m.copy()
    noisy[..., :3, :3] += 0.1 * rng.normal(size=shape + (3, 3))    # the nearest rotation
    exp = rng.normal(size=shape + (6,)) * 1.5                        # angles beyond π too
    dual = rng.normal(size=shape + (8,))                              # not unit
    r = Rotation.from_quat(q)
    cases = [
        (lambda m: RigidTransform.from_matrix(m), ST.from_matrix, m),
        (lambda m: RigidTransform(m), ST, noisy),
        (lambda e: RigidTransform.from_exp_coords(e), ST.from_exp_coords, exp),
        (lambda e: RigidTransform.from_exp_coords(e), ST.from_exp_coords, exp * 1e-9),
        (lambda d: RigidTransform.from_dual_quat(d), ST.from_dual_quat, dual),
        (lambda d: RigidTransform.from_dual_quat(d, scalar_first=True),
         lambda d: ST.from_dual_quat(d, scalar_first=True), dual),
        (lambda t: RigidTransform.from_translation(t), ST.from_translation, t),
        (lambda q: RigidTransform.from_rotation(Rotation.from_quat(q)),
         lambda q: ST.from_rotation(SR.from_quat(q)), q),
    ]
    for ours, theirs, x in cases:
        want = theirs(x)
        for name, value in conversions(want).items():
            same(conversions(ours(x))[name], value, 1e-11)
        same(traced_value(lambda x: ours(x).as_matrix(), x), want.as_matrix(), 1e-11)
    # broadcasting the translations' shape with the rotations'
    t4 = rng.normal(size=(4, 1) + shape + (3,))
    same(RigidTransform.from_components(t4, r).as_matrix(),
         ST.from_components(t4, SR.from_quat(q)).as_matrix())
    same(RigidTransform.identity(shape=shape).as_matrix(), ST.identity(shape=shape).as_matrix())
    same(RigidTransform.identity(4).as_matrix(), ST.identity(4).as_matrix())
    assert RigidTransform.identity(0).shape == (0,) and RigidTransform.identity().single


def test_edge_cases_are_scipys():
    """The identity, half-turns (about the axes, and a general one), near them, the cube's
    rotations (whose quaternions tie in magnitude: SciPy's sign is its tie break), exact
    exponential coordinates at the series' threshold (angle 2) and at π."""
    axis = np.array([0.48, -0.6, 0.64])
    rotvecs = [np.zeros(3), [PI, 0, 0], [0, PI, 0], [0, 0, PI], PI * axis,
               (PI - 1e-9) * axis, 1e-9 * axis, 2.0 * axis, (2 - 1e-12) * axis,
               (2 + 1e-12) * axis, 0.5 * axis, 2 * PI * axis]
    rotations = SR.from_rotvec(rotvecs)
    t = rng.normal(size=(len(rotations), 3))
    ours, theirs = pair(rotations.as_quat(), t)
    for name, want in conversions(theirs).items():
        same(conversions(ours)[name], want, 1e-11)
    # the cube's: SciPy's sign is its matrix's rounding's (here: the first of x, y, z, w
    # positive), so the dual quaternions are compared up to sign
    ours, theirs = pair(SR.from_matrix(cube()).as_quat(), rng.normal(size=(24, 3)))
    for name in ("matrix", "exp_coords", "translation"):
        same(conversions(ours)[name], conversions(theirs)[name], 1e-11)
    sign = np.sign(np.sum(ours.as_dual_quat() * theirs.as_dual_quat(), axis=-1))
    same(ours.as_dual_quat(), sign[:, None] * theirs.as_dual_quat())
    exp = np.concatenate([rotvecs, rng.normal(size=(len(rotvecs), 3))], axis=-1)
    for name, want in conversions(ST.from_exp_coords(exp)).items():
        same(conversions(RigidTransform.from_exp_coords(exp))[name], want, 1e-11)
    same(RigidTransform.identity().as_exp_coords(), np.zeros(6))
    # a real part of 0 stands for the identity (SciPy's), the dual part as given
    dual = np.array([[0, 0, 0, 0, 1.0, 2.0, 3.0, 4.0], [0, 0, 0, 1e-300, 1, 2, 3, 4]])
    for name, want in conversions(ST.from_dual_quat(dual)).items():
        same(conversions(RigidTransform.from_dual_quat(dual))[name], want)


def test_operations_are_scipys():
    (p, sp), (q, sq) = pair(quats(5), rng.normal(size=(5, 3))), pair(quats(5),
                                                                      rng.normal(size=(5, 3)))
    same((p * q).as_matrix(), (sp * sq).as_matrix())
    same((p[0] * q).as_matrix(), (sp[0] * sq).as_matrix())
    same((p * q[1]).as_matrix(), (sp * sq[1]).as_matrix())
    same((p[:1] * q).as_matrix(), (sp[:1] * sq).as_matrix())
    same(p.inv().as_matrix(), sp.inv().as_matrix())
    same(traced_value(lambda m: (RigidTransform(m) * RigidTransform(m).inv()).as_matrix(),
                      sp.as_matrix()), np.broadcast_to(np.eye(4), (5, 4, 4)))
    v = rng.normal(size=(5, 3))
    for inverse in (False, True):
        for tf, stf, x in ((p, sp, v), (p[2], sp[2], v), (p, sp, v[0]), (p[2], sp[2], v[0]),
                           (p, sp, v[None] * np.ones((2, 1, 1)))):
            same(tf.apply(x, inverse), stf.apply(x, inverse))
        same(traced_value(lambda x: p.apply(x, inverse), v), sp.apply(v, inverse))
    nd, snd = pair(quats(2, 3), rng.normal(size=(2, 3, 3)))
    same(nd.apply(v[:3]), snd.apply(v[:3]))
    same(nd.apply(np.ones((4, 1, 1, 3))), snd.apply(np.ones((4, 1, 1, 3))))
    # powers: SciPy 1.17 rounds a power to single precision (a float32 argument in its
    # compiled code), so its powers are compared where n is exact in float32; elsewhere
    # they are exp(n log p) in double precision, and SciPy's within its rounding
    for n in (0.5, -2.5, 3, 0, 1, -1, 0.25, 3.75, -0.125, 2):
        same((p ** n).as_matrix(), (sp ** n).as_matrix(), 1e-11)
        same((p[0] ** n).as_matrix(), (sp[0] ** n).as_matrix(), 1e-11)
    same((p ** 0.3).as_matrix(), RigidTransform.from_exp_coords(0.3 * p.as_exp_coords())
         .as_matrix())
    same((p ** 0.3).as_matrix(), (sp ** 0.3).as_matrix(), 1e-6)
    same((p ** -0.3).as_matrix(), (p.inv() ** 0.3).as_matrix())
    same((p ** np.float64(0.5)).as_matrix(), (sp ** 0.5).as_matrix(), 1e-11)
    same((p ** np.array(0.5)).as_matrix(), (sp ** 0.5).as_matrix(), 1e-11)
    same(traced_value(lambda n: (p ** n).as_matrix(), np.array(0.5)), (sp ** 0.5).as_matrix(),
         1e-11)


def test_mean_is_scipys():
    tf, stf = pair(quats(5), rng.normal(size=(5, 3)))
    w = rng.uniform(size=5)
    canonical = lambda x: x.rotation.as_quat(canonical=True)
    for kwargs in ({}, {"weights": w}, {"axis": 0}, {"weights": w, "axis": (0,)}):
        ours, theirs = tf.mean(**kwargs), stf.mean(**kwargs)
        same(ours.translation, theirs.translation)
        same(canonical(ours), canonical(theirs))
    nd, snd = pair(quats(2, 3), rng.normal(size=(2, 3, 3)))
    w2 = rng.uniform(size=(2, 3))
    for kwargs in ({}, {"axis": 0}, {"axis": -1}, {"axis": (0, 0)}, {"weights": w2},
                   {"weights": w2, "axis": 1}):
        ours, theirs = nd.mean(**kwargs), snd.mean(**kwargs)
        assert ours.shape == theirs.shape
        same(ours.translation, theirs.translation)
        same(canonical(ours), canonical(theirs))
    same(tf[0].mean().as_matrix(), stf[0].mean().as_matrix())
    same(traced_value(lambda w: tf.mean(weights=w).translation, w),
         stf.mean(weights=w).translation)


def test_stacks_index_iterate_concatenate_and_set_as_scipys():
    tf, stf = pair(quats(6), rng.normal(size=(6, 3)))
    for index in (2, -1, slice(1, 4), [0, 3], np.array([True, False] * 3),
                  slice(None, None, -2)):
        same(tf[index].as_matrix(), stf[index].as_matrix())
        assert tf[index].single == stf[index].single
    assert len(tf) == 6 and [x.single for x in tf] == [True] * 6
    same(RigidTransform.concatenate([tf[0], tf[1:3], tf]).as_matrix(),
         ST.concatenate([stf[0], stf[1:3], stf]).as_matrix())
    same(RigidTransform.concatenate(tf).as_matrix(), stf.as_matrix())
    nd, snd = pair(quats(2, 3), rng.normal(size=(2, 3, 3)))
    same(RigidTransform.concatenate([nd, nd]).as_matrix(),
         ST.concatenate([snd, snd]).as_matrix())
    same(nd[1].as_matrix(), snd[1].as_matrix())
    ours, theirs = RigidTransform.identity(4), ST.identity(4)
    ours[1:3] = tf[:2]
    theirs[1:3] = stf[:2]
    ours[0] = tf[5]
    theirs[0] = stf[5]
    same(ours.as_matrix(), theirs.as_matrix())
    # set with traced values: a new leaf, differentiable in both
    def put(t):
        target = RigidTransform.identity(3)
        target[1] = RigidTransform.from_translation(t)
        return wnp.sum(target.translation ** 2)
    same(wg.grad(put)(np.array([1.0, 2.0, 3.0])), [2.0, 4.0, 6.0])


# ---- RigidTransform: derivatives -----------------------------------------------------------
def _e(*shape):
    return rng.normal(size=shape + (6,))


RIGID_CASES = {
    "from_matrix": (lambda b: RigidTransform.from_matrix(homogeneous(b)).as_exp_coords(),
                    np.concatenate([SR.random(3, rng=1).as_matrix()
                                    + 0.1 * rng.normal(size=(3, 3, 3)),
                                    rng.normal(size=(3, 3, 1))], axis=-1)),
    "from_components as_matrix": (
        lambda t, q: RigidTransform.from_components(t, Rotation.from_quat(q)).as_matrix(),
        rng.normal(size=(3, 3)), quats(3)),
    "from_exp_coords": (lambda e: RigidTransform.from_exp_coords(e).as_matrix(), _e(3) * 1.5),
    "as_exp_coords": (lambda t, q: RigidTransform.from_components(
        t, Rotation.from_quat(q)).as_exp_coords(), rng.normal(size=(3, 3)), quats(3)),
    "from_dual_quat": (lambda d: RigidTransform.from_dual_quat(d).as_matrix(),
                       rng.normal(size=(3, 8))),
    "as_dual_quat scalar_first": (
        lambda e: RigidTransform.from_exp_coords(e).as_dual_quat(scalar_first=True), _e(3)),
    "rotation and translation": (
        lambda e: wnp.concatenate([RigidTransform.from_exp_coords(e).rotation.as_quat(),
                                   RigidTransform.from_exp_coords(e).translation], axis=-1),
        _e(3)),
    "apply": (lambda e, v: RigidTransform.from_exp_coords(e).apply(v), _e(3),
              rng.normal(size=(3, 3))),
    "apply inverse, one transform": (
        lambda e, v: RigidTransform.from_exp_coords(e).apply(v, inverse=True), _e(),
        rng.normal(size=(4, 3))),
    "compose and inv": (lambda e, f: (RigidTransform.from_exp_coords(e)
                                      * RigidTransform.from_exp_coords(f).inv()).as_matrix(),
                        _e(3), _e()),
    "pow in the transform": (lambda e: (RigidTransform.from_exp_coords(e) ** -0.7).as_matrix(),
                             _e(3)),
    "pow in n": (lambda e, n: (RigidTransform.from_exp_coords(e) ** n).as_matrix(), _e(3),
                 np.array(0.7)),
    "mean": (lambda e, w: RigidTransform.from_exp_coords(e).mean(weights=w ** 2).as_matrix(),
             _e(4), rng.normal(size=4)),
    "mean over an axis": (lambda e: RigidTransform.from_exp_coords(e).mean(axis=1).as_matrix(),
                          _e(2, 3)),
}


@pytest.mark.parametrize("name", sorted(RIGID_CASES))
def test_rigid_derivatives_match_central_differences_to_second_order(name):
    f, *args = RIGID_CASES[name]
    check_grads(f, *args, order=2)


_AXIS = np.array([0.48, -0.6, 0.64])


@pytest.mark.parametrize("angle", [0.0, 1e-9, 1e-4, 2 - 1e-9, 2 + 1e-9, 3.0, PI - 1e-3])
def test_exp_coords_through_the_identity(angle):
    """exp and log at and near the identity (J's coefficients 0/0 there: series), on both
    sides of the series' threshold (angle 2), and near a half-turn."""
    e = np.r_[_AXIS * angle, 1.0, -2.0, 0.5]
    exp = lambda e: RigidTransform.from_exp_coords(e).as_matrix()
    log = lambda e: RigidTransform.from_exp_coords(e).as_exp_coords()
    check_grads(exp, e, order=2)
    check_grads(log, e, order=2)
    same(wg.jacfwd(log)(e), np.eye(6), 1e-9)
    assert np.all(np.isfinite(wg.hessian(lambda e: exp(e)[0, 3])(e)))
    if angle == 0.0:
        # d exp(ξ) p at 0 = [-[p]×, I] (the generators); the translation's second
        # derivative along (φ, ρ) is φ×ρ (a of J is ½ there)
        p = np.array([0.3, -0.2, 0.5])
        moved = lambda e: RigidTransform.from_exp_coords(e).apply(p)
        same(wg.jacfwd(moved)(e * 0), np.c_[-np.cross(np.eye(3), p), np.eye(3)])
        phi, rho = rng.normal(size=3), rng.normal(size=3)
        second = wg.jvp(lambda s: wg.jvp(lambda u: RigidTransform.from_exp_coords(
            u * np.r_[phi, rho]).translation, (s,), (1.0,))[1], (0.0,), (1.0,))[1]
        same(second, np.cross(phi, rho))


def twist(e):
    """The 4×4 twist [[φ]×, ρ; 0, 0] of exponential coordinates (φ, ρ)."""
    out = np.zeros((4, 4))
    out[:3, :3] = np.cross(np.eye(3), e[:3])           # [φ]×
    out[:3, 3] = e[3:]
    return out


@pytest.mark.parametrize("scale", [0.0, 1e-9, 0.3, 1.0, 2.5])
def test_exp_coords_are_the_matrix_exponential(scale):
    """from_exp_coords(ξ) is expm of its twist (SciPy's expm, to rounding), and its
    derivative along the line tξ is twist(ξ) · exp(tξ)."""
    from scipy.linalg import expm
    e = _e() * scale
    same(RigidTransform.from_exp_coords(e).as_matrix(), expm(twist(e)), 1e-12)
    for t in (0.0, 0.7):
        line = lambda t: RigidTransform.from_exp_coords(t * e).as_matrix()
        same(wg.jacfwd(line)(t), twist(e) @ expm(t * twist(e)), 1e-12)
        same(wg.jacfwd(wg.jacfwd(line))(t), twist(e) @ twist(e) @ expm(t * twist(e)), 1e-11)


# ---- RigidTransform: pytrees and transformations -------------------------------------------
def test_a_pose_pipeline_under_jit_vmap_grad_and_compile():
    """Points seen by a camera: world points moved by the inverse of a pose exp(ξ) base,
    the residuals against observations; the same numbers eagerly, jitted, compiled,
    per example under vmap, and the gradient compiled."""
    base = RigidTransform.from_exp_coords(_e())
    points, seen = rng.normal(size=(8, 3)), rng.normal(size=(8, 3))

    def residuals(xi):
        pose = RigidTransform.from_exp_coords(xi) * base
        return pose.apply(points, inverse=True) - seen

    loss = lambda xi: wnp.sum(residuals(xi) ** 2)
    xi = 0.1 * _e()
    same(wg.jit(residuals)(xi), residuals(xi))
    same(wg.compile(residuals, xi)(xi), residuals(xi))
    grad = wg.grad(loss)
    same(wg.compile(grad, xi)(xi), grad(xi))
    batch = 0.1 * _e(4)
    same(wg.vmap(residuals)(batch), np.stack([residuals(x) for x in batch]))
    same(wg.vmap(grad)(batch), np.stack([grad(x) for x in batch]))
    check_grads(loss, xi, order=2)
    # transforms as arguments and results
    tf = RigidTransform.from_exp_coords(_e(5))
    out = wg.jit(lambda e: RigidTransform.from_exp_coords(e))(_e(5))
    assert isinstance(out, RigidTransform) and out.shape == (5,)
    same(wg.jit(lambda tf: tf.as_exp_coords())(tf), tf.as_exp_coords())
    same(wg.vmap(lambda tf, v: tf.apply(v))(tf, points[:5]), tf.apply(points[:5]))
    out = wg.vmap(lambda t: RigidTransform.from_translation(t))(points[:5])
    assert isinstance(out, RigidTransform) and out.shape == (5,)
    same(out.as_matrix(), ST.from_translation(points[:5]).as_matrix())
    g = wg.grad(lambda tf: wnp.sum(tf.apply(points[:5]) ** 2))(tf)
    assert isinstance(g, RigidTransform)
    m = tf.as_matrix()
    same(wg.compile(lambda m: RigidTransform.from_matrix(m).as_exp_coords(), m)(m),
         tf.as_exp_coords())


# ---- RigidTransform: errors ----------------------------------------------------------------
def test_rigid_errors_are_scipys():
    one, five = RigidTransform.identity(), RigidTransform.from_exp_coords(_e(5))
    sone, sfive = ST.identity(), ST.from_matrix(five.as_matrix())
    bad_row = np.eye(4)
    bad_row[3, 2] = 1.0
    left = np.diag([1.0, 1.0, -1.0, 1.0])
    cases = [
        (lambda T: T.from_matrix(np.eye(3)), ValueError,
         r"Expected `matrix` to have shape \(\.\.\., 4, 4\), got \(3, 3\)"),
        (lambda T: T.from_matrix(np.stack([np.eye(4), bad_row])), ValueError,
         r"last row of transformation matrix 1 to be exactly \[0, 0, 0, 1\], "
         r"got \[0\. 0\. 1\. 1\.\]"),
        (lambda T: T.from_matrix(left), ValueError,
         r"Non-positive determinant \(left-handed or null coordinate frame\) in rotation "
         r"matrix 0"),
        (lambda T: T.from_translation(np.ones(4)), ValueError,
         r"`translation` to have shape \(\.\.\., 3\), got \(4,\)"),
        (lambda T: T.from_components(np.ones((2, 3)), Rotation.identity(3) if T is
                                     RigidTransform else SR.identity(3)), ValueError,
         r"Cannot broadcast \(2,\) transforms in first to \(3,\) transforms in second object"),
        (lambda T: T.from_components(np.ones(3), np.eye(3)), TypeError,
         "Expected `rotation` to be a `Rotation` instance"),
        (lambda T: T.from_rotation(np.eye(3)), TypeError, "to be a `Rotation` instance"),
        (lambda T: T.from_exp_coords(np.ones(5)), ValueError,
         r"`exp_coords` to have shape \(\.\.\., 6\), got \(5,\)"),
        (lambda T: T.from_dual_quat(np.ones(7)), ValueError,
         r"`dual_quat` to have shape \(8,\), or \(N, 8\), got \(7,\)"),
        (lambda T: T.identity(2, shape=3), ValueError, "Only one of `num` and `shape`"),
        (lambda T: T.concatenate([T.identity(), Rotation.identity()]), TypeError,
         "input must contain RigidTransform objects only"),
        (lambda T: T.concatenate([]), IndexError, None),
    ]
    for f, error, match in cases:
        with pytest.raises(error, match=match or "at least one RigidTransform"):
            f(RigidTransform)
        with pytest.raises(error):
            f(ST)
    w5 = np.ones(5)
    for ours, theirs, error, match in [
            (lambda: one[0], lambda: sone[0], TypeError, "Single transform is not subscriptable"),
            (lambda: len(one), lambda: len(sone), TypeError, "Single transform has no len"),
            (lambda: five[10], lambda: sfive[10], IndexError, "out of bounds"),
            (lambda: five * five[:2], lambda: sfive * sfive[:2], ValueError,
             r"Cannot broadcast \(5,\) transforms in first to \(2,\) transforms"),
            (lambda: five * Rotation.identity(), lambda: sfive * SR.identity(), TypeError,
             "unsupported operand"),
            (lambda: five.apply(np.ones(4)), lambda: sfive.apply(np.ones(4)), ValueError,
             r"vector to have shape \(N, 3\), or \(3,\), got \(4,\)"),
            (lambda: five.apply(np.ones((4, 3))), lambda: sfive.apply(np.ones((4, 3))),
             ValueError, r"transforms of shape \(5,\) to vectors of shape \(4,\)"),
            (lambda: five ** "a", lambda: sfive ** "a", TypeError, "real number"),
            (lambda: five ** np.ones(2), lambda: sfive ** np.ones(2), TypeError,
             "must be a real number, got array"),
            (lambda: five.mean(weights=-w5), lambda: sfive.mean(weights=-w5), ValueError,
             "`weights` must be non-negative"),
            (lambda: five.mean(weights=w5[:4]), lambda: sfive.mean(weights=w5[:4]),
             ValueError, "got 4 values and 5 transforms"),
            (lambda: five.mean(weights=np.ones((2, 5))),
             lambda: sfive.mean(weights=np.ones((2, 5))), ValueError,
             r"to be 1 dimensional, got \(2, 5\)"),
            (lambda: five.mean(weights=0 * w5), lambda: sfive.mean(weights=0 * w5),
             ZeroDivisionError, "Weights sum to zero"),
            (lambda: five.mean(axis=1), lambda: sfive.mean(axis=1), ValueError,
             r"axis \(1,\) is out of bounds for transform with shape \(5,\)"),
            (lambda: RigidTransform.identity(shape=(2, 3)).mean(weights=np.ones(3)),
             lambda: ST.identity(shape=(2, 3)).mean(weights=np.ones(3)), ValueError,
             r"match transform shape, got shape \(3,\) for \(2, 3\)"),
            (lambda: one.__setitem__(0, one), lambda: sone.__setitem__(0, sone), TypeError,
             "Single transform is not subscriptable"),
            (lambda: five.__setitem__(0, Rotation.identity()),
             lambda: sfive.__setitem__(0, SR.identity()), TypeError,
             "value must be a RigidTransform")]:
        with pytest.raises(error, match=match):
            ours()
        with pytest.raises(error):
            theirs()
    # checks of values are made where there are values: traced eagerly too
    with pytest.raises(ValueError, match="last row"):
        wg.grad(lambda m: RigidTransform.from_matrix(m).translation[0])(bad_row)


# ---- RotationSpline ------------------------------------------------------------------------
def spline_pair(n, seed):
    r = np.random.default_rng(seed)
    q = r.normal(size=(n, 4))
    t = np.cumsum(r.uniform(0.3, 2.0, size=n))
    return (RotationSpline(t, Rotation.from_quat(q)), SSpline(t, SR.from_quat(q)), q, t)


@pytest.mark.parametrize("n", [2, 3, 4, 9])
def test_rotation_spline_is_scipys(n):
    ours, theirs, q, t = spline_pair(n, n)
    tq = np.r_[t, rng.uniform(t[0], t[-1], size=15), t[0] - 0.7, t[-1] + 0.4]  # (extrapolated)
    same(ours(tq).as_quat(), theirs(tq).as_quat())
    for order in (1, 2):
        same(ours(tq, order), theirs(tq, order), 1e-11)
        same(ours(tq[5], order), theirs(tq[5], order), 1e-11)
    assert ours(tq[5]).single and not ours(tq[5:6]).single
    same(ours(tq[5]).as_quat(), theirs(tq[5]).as_quat())
    assert ours(np.zeros(0), 1).shape == (0, 3)
    # traced keys, key times and query times: the same numbers
    for order in (1, 2):
        same(traced_value(lambda q, t, tq: RotationSpline(t, Rotation.from_quat(q))(tq, order),
                          q, t, tq), theirs(tq, order), 1e-11)
    same(traced_value(lambda q: RotationSpline(t, Rotation.from_quat(q))(tq).as_quat(), q),
         theirs(tq).as_quat())


def test_rotation_spline_edge_cases_are_scipys():
    """Equal consecutive keys (a rotation vector of 0: the series), steps of nearly a
    half-turn, a key exactly at the identity, times far from 1."""
    z = SR.from_rotvec([[0, 0, 0], [0, 0, 0], [0, 0, PI - 1e-6], [0, PI - 1e-3, 0],
                        [0.3, 0.2, 0.1], [0.3, 0.2, 0.1], [0, 0, 0]])
    for times in (np.arange(7.0), np.cumsum(rng.uniform(1e-3, 1e-2, size=7)),
                  1e3 * np.arange(7.0) ** 1.5):
        ours = RotationSpline(times, Rotation.from_quat(z.as_quat()))
        theirs = SSpline(times, z)
        tq = np.r_[times, np.sort(rng.uniform(times[0], times[-1], size=20))]
        same(ours(tq).as_quat(), theirs(tq).as_quat(), 1e-11)
        scale = np.abs(theirs(tq, 1)).max()
        same(ours(tq, 1) / scale, theirs(tq, 1) / scale, 1e-11)
        scale = np.abs(theirs(tq, 2)).max()
        same(ours(tq, 2) / scale, theirs(tq, 2) / scale, 1e-10)


def test_rotation_spline_rates_are_the_derivatives_in_time():
    """Order 1 is the body's angular rate of order 0 (q̇ = ½ q ⊗ (ω, 0)), order 2 the
    derivative of order 1: checked by differentiating in the query time, inside the
    intervals and at the keys (where both are continuous: left and right limits agree)."""
    ours, theirs, _, t = spline_pair(5, 11)
    for s in np.r_[rng.uniform(t[0], t[-1], size=4), t[1:-1]]:
        q_dot = wg.jacfwd(lambda s: ours(s).as_quat())(s)
        omega = theirs(s, 1)                                        # SciPy's rates
        same(q_dot, 0.5 * _compose(ours(s).as_quat(), np.r_[omega, 0.0]), 1e-11)
        same(wg.jacfwd(lambda s: ours(s, 1))(s), theirs(s, 2), 1e-10)
    for key in t[1:-1]:
        for order in (1, 2):
            same(ours(key - 1e-9, order), ours(key + 1e-9, order), 1e-6)


SPLINE_QUERIES = np.array([0.2, 0.75, 1.1, 2.9, 3.5])      # (one past the end)
SPLINE_KEYS = (rng.normal(size=(5, 4)), np.array([0.0, 0.7, 0.8, 0.5, 1.1]))


@pytest.mark.parametrize("order", [0, 1, 2])
def test_rotation_spline_derivatives_to_second_order(order):
    """In the key rotations, the key times (as increments) and the query times, through
    SciPy's iteration: central differences, to second order, away from the keys (where
    the acceleration's derivative in time jumps); to first order at a key (the rotation's
    and the rate's; the acceleration's is one-sided there, the later interval's)."""
    def f(q, dt, tq):
        out = RotationSpline(wnp.cumsum(dt), Rotation.from_quat(q))(tq, order)
        return out.as_matrix() if order == 0 else out     # (q flips sign at a key)
    check_grads(f, *SPLINE_KEYS, SPLINE_QUERIES, order=2)
    keys = np.cumsum(SPLINE_KEYS[1])[1:4]
    if order < 2:
        check_grads(f, *SPLINE_KEYS, keys, order=1)
    else:   # the acceleration has a kink at a key: the derivative is the later interval's
        h = 1e-7
        right = (f(*SPLINE_KEYS, keys + h) - f(*SPLINE_KEYS, keys)) / h
        got = wg.jvp(lambda tq: f(*SPLINE_KEYS, tq), (keys,), (np.ones(3),))[1]
        np.testing.assert_allclose(got, right, rtol=1e-5, atol=1e-5)
    # two equal keys: the rotation vector between them is 0 (the series)
    q = SPLINE_KEYS[0].copy()
    q[2] = q[1]
    check_grads(f, q, SPLINE_KEYS[1], SPLINE_QUERIES, order=2)


def test_rotation_spline_passes_through_jit_vmap_grad_and_compile():
    ours, theirs, q, t = spline_pair(6, 3)
    tq = rng.uniform(t[0], t[-1], size=7)
    rates = lambda q, tq: RotationSpline(t, Rotation.from_quat(q))(tq, 1)
    # without values, all 10 of SciPy's iterations: its numbers still, to rounding
    same(wg.jit(rates)(q, tq), theirs(tq, 1))
    same(wg.compile(rates, q, tq)(q, tq), theirs(tq, 1))
    same(wg.vmap(lambda s: ours(s, 2))(tq), theirs(tq, 2))
    same(wg.jit(lambda sp, s: sp(s, 1))(ours, tq), theirs(tq, 1))
    keys = rng.normal(size=(3, 6, 4))
    same(wg.vmap(rates, in_axes=(0, None))(keys, tq),
         np.stack([SSpline(t, SR.from_quat(k))(tq, 1) for k in keys]))
    loss = lambda q: wnp.sum(rates(q, tq) ** 2)
    same(wg.compile(wg.grad(loss), q)(q), wg.grad(loss)(q), 1e-10)
    g = wg.grad(lambda sp: wnp.sum(sp(tq, 1) ** 2))(ours)
    assert isinstance(g, RotationSpline) and isinstance(g.rotations, Rotation)


def test_rotation_spline_errors_are_scipys():
    keys = Rotation.random(4, rng=0)
    skeys = SR.from_quat(keys.as_quat())
    t = [0.0, 1.0, 2.5, 4.0]
    for args, sargs, match in (
            ((t, Rotation.random(rng=0)), (t, SR.random(rng=0)), "sequence of rotations"),
            ((t[:1], keys[:1]), (t[:1], skeys[:1]), "at least 2 rotations"),
            ((t[:3], keys), (t[:3], skeys), "got 4 rotations and 3 timestamps"),
            (([0, 2, 1, 3], keys), ([0, 2, 1, 3], skeys), "strictly increasing"),
            (([t], keys), ([t], skeys), "`times` must be 1-dimensional"),
            ((t, Rotation.random(shape=(2, 2), rng=0)), (t, SR.random(shape=(2, 2), rng=0)),
             "more than 1 leading dimension")):
        with pytest.raises(ValueError, match=match):
            RotationSpline(*args)
        with pytest.raises(ValueError):
            SSpline(*sargs)
    spline, sspline = RotationSpline(t, keys), SSpline(t, skeys)
    for args, match in (((1.0, 3), "`order` must be 0, 1 or 2"),
                        (([[1.0]],), "at most 1-dimensional")):
        with pytest.raises(ValueError, match=match):
            spline(*args)
        with pytest.raises(ValueError):
            sspline(*args)
    with pytest.raises(TypeError, match="must be a `Rotation`"):
        RotationSpline(t, skeys)
    with pytest.raises(ValueError, match="strictly increasing"):
        wg.grad(lambda t: RotationSpline(t, keys)(1.0, 1)[0])(np.array([0, 2.0, 1, 3]))
