"""`Rotation`: SciPy's class, written with `wengert.numpy` on the quaternions it holds.

A rotation is a unit quaternion (x, y, z, w), scalar last as in SciPy; a stack of them is
an array (..., 4).  Plain arrays give NumPy's arithmetic and SciPy's numbers (to
rounding); traced ones record the same operations, so each constructor, conversion and
`apply` differentiates by composition.  Where a formula has a removable singularity or no
derivative, the choice is made here, once:

* the identity, for `from_rotvec` (sin(θ/2)/θ) and `as_rotvec` (θ/sin(θ/2)): a series in
  θ² below a threshold, where the formula's derivative would lose digits by cancellation;
  each branch is computed at a harmless point where it is not taken, so the other's
  infinite partial never meets the 0 cotangent of a ``where`` (0 · inf = nan);
* `magnitude` and `as_euler`'s middle angle at their kinks (the identity; gimbal lock),
  which are norms there: derivative 0, as ``abs`` has at 0;
* `from_matrix`: the quaternion of the nearest rotation, the eigenvector of the largest
  eigenvalue of a 4×4 matrix linear in the matrix (Bar-Itzhack's), so that its derivative
  is that of SciPy's orthogonalisation followed by Markley's method, with no branch: the
  branch SciPy chooses sets only the sign, reproduced here by its rule (the largest
  component positive, the first of x, y, z, w where several are as large);
* `as_euler` at gimbal lock: SciPy sets the third angle to 0 and the first to the angle
  the two share; so do these, and the derivative is that of those values (the third's 0,
  the first's the shared angle's).  Near lock the derivatives are the true ones, large as
  1/sin of the distance to it.
"""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as _np

from .... import numpy as _wnp
from ....graph.node import Node as _Node
from ....numpy import _traced
from ....primitives.linalg import top_eigvecsh as _top_eigvecsh
from ....primitives.scalar import stop_gradient as _stop_gradient
from ....tree import register_pytree_node_class

__all__ = ["Rotation"]

#: SciPy's tolerance on the middle Euler angle (its distance from 0 or π, in radians)
#: within which it declares gimbal lock.
GIMBAL_LOCK = 1e-7

# Series at the identity.  from_rotvec: sin(θ/2)/θ and cos(θ/2) in s = θ², used for θ < 0.5;
# as_rotvec: atan(t)/t in t² (t = tan(θ/2)), used for t < 0.1.  Each is kept to terms
# below 1e-20, so values and derivatives are exact to rounding; past the thresholds the
# formulas' derivatives lose no more than a few ulps to cancellation.
_HALF_SINC = [(-1) ** k / (2 ** (2 * k + 1) * math.factorial(2 * k + 1)) for k in range(8)]
_HALF_COS = [(-1) ** k / (4 ** k * math.factorial(2 * k)) for k in range(8)]
_ATAN_OVER = [(-1) ** k / (2 * k + 1) for k in range(10)]
_ROTVEC_SERIES_BELOW = 0.25           # θ² (θ < 0.5 rad)
_ATAN_SERIES_BELOW = 0.01             # t² = (|xyz|/w)² (θ < 0.2 rad)

_SEQ_AXES = "xyz"


# ---- helpers on plain and traced arrays ----------------------------------------------------
def _known(x):
    """x's numbers where they are known (plain, or traced eagerly), else None (under
    `wg.compile` and `wg.vmap`): checks of values are made only where there are values."""
    if type(x) is _Node:
        return None if x.value is None else _np.asarray(x.value)
    return _np.asarray(x)


def _floats(x):
    """x as a float array: plain values (lists, ints) as NumPy float64, as SciPy makes
    them; traced ones as they are (ints cast to float64)."""
    if _traced(x):
        x = _wnp.asarray(x)
        return x if x.dtype.kind in "fc" else x.astype(_np.float64)
    return _np.array(x, dtype=_np.float64)


def _polynomial(coefficients, s):
    out = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        out = out * s + c
    return out


def _series_or(s, small, coefficients, formula, harmless):
    """Σ cₖ sᵏ where `small`, formula(s) elsewhere.  Each branch is computed at a harmless
    point where it is not taken (0 for the series, `harmless` for the formula), so neither
    has an infinite partial there for the ``where``'s zero cotangent to turn into nan."""
    series = _polynomial(coefficients, _wnp.where(small, s, 0.0))
    return _wnp.where(small, series, formula(_wnp.where(small, harmless, s)))


def _sqrt_or_zero(s):
    """√s for s ≥ 0, with derivative 0 at s = 0 (a norm's kink: √ has none there)."""
    positive = s > 0
    return _wnp.where(positive, _wnp.sqrt(_wnp.where(positive, s, 1.0)), 0.0)


def _components(q):
    return q[..., 0], q[..., 1], q[..., 2], q[..., 3]


def _compose(p, q):
    """The Hamilton product p ⊗ q of quaternions (x, y, z, w): the rotation q, then p."""
    px, py, pz, pw = _components(p)
    qx, qy, qz, qw = _components(q)
    return _wnp.stack([pw * qx + px * qw + py * qz - pz * qy,
                       pw * qy - px * qz + py * qw + pz * qx,
                       pw * qz + px * qy - py * qx + pz * qw,
                       pw * qw - px * qx - py * qy - pz * qz], axis=-1)


def _canonical_sign(q):
    """+1 or -1 per quaternion: -1 where w < 0, or w is 0 and the first nonzero of x, y, z
    is negative (SciPy's ``canonical``: the first nonzero of w, x, y, z positive)."""
    x, y, z, w = _components(q)
    flip = (w < 0) | ((w == 0) & ((x < 0) | ((x == 0) & ((y < 0) | ((y == 0) & (z < 0))))))
    return _wnp.where(flip, -1.0, 1.0)


def _w_nonnegative(q):
    """q with w ≥ 0 (q and -q are the same rotation), as SciPy's as_mrp takes it (w = 0
    is left as it is; as_rotvec takes the canonical sign)."""
    return q * _wnp.where(q[..., 3] < 0, -1.0, 1.0)[..., None]


def _elementary(axis, angle):
    """The quaternions of rotations by `angle` about the coordinate `axis` (0, 1, 2)."""
    half = angle / 2
    s, c = _wnp.sin(half), _wnp.cos(half)
    zero = _wnp.zeros_like(s)
    parts = [zero, zero, zero, c]
    parts[axis] = s
    return _wnp.stack(parts, axis=-1)


def _check_seq(seq):
    """The axes (0, 1, 2) of a sequence such as 'xyz' or 'ZXZ', and whether it is
    extrinsic (lower case); SciPy's errors for the others."""
    if not isinstance(seq, str) or not 1 <= len(seq) <= 3:
        raise ValueError("Expected axis specification to be a non-empty string of upto 3 "
                         f"characters, got {seq}")
    if not (set(seq) <= set("xyz") or set(seq) <= set("XYZ")):
        raise ValueError("Expected axes from `seq` to be from ['x', 'y', 'z'] or "
                         f"['X', 'Y', 'Z'], got {seq}")
    if any(a == b for a, b in zip(seq, seq[1:])):
        raise ValueError(f"Expected consecutive axes to be different, got {seq}")
    return [_SEQ_AXES.index(c) for c in seq.lower()], seq.islower()


def _extrinsic_angles(q, i, j, k, third_zero):
    """Angles (a, b, c) of the extrinsic rotations about axes i, j, k (R = R_k(c) R_j(b)
    R_i(a)) of unit quaternions q, by Bernardes and Viollet's direct method ("Quaternion to
    Euler angles conversion", PLOS ONE 2022), in SciPy's ranges: a and c in [-π, π], b in
    [0, π] (i = k) or [-π/2, π/2].  At gimbal lock (b within `GIMBAL_LOCK` of an end of
    its range) only a + c or a - c is defined: `third_zero` sets c to 0 (else a) and the
    other carries it; the second result says where that happened."""
    proper = i == k
    if proper:
        k = 3 - i - j
    sign = (i - j) * (j - k) * (k - i) // 2          # the permutation's parity
    w = q[..., 3]
    qi, qj, qk = q[..., i], q[..., j], sign * q[..., k]
    if proper:
        a, b, c, d = w, qi, qj, qk
    else:   # (a Tait-Bryan sequence as a proper one, about axes turned by 45°)
        a, b, c, d = w - qj, qi + qk, qj + w, qk - qi
    ab, cd = a * a + b * b, c * c + d * d
    middle = 2 * _wnp.arctan2(_sqrt_or_zero(cd), _sqrt_or_zero(ab))
    at_zero = _wnp.abs(middle) <= GIMBAL_LOCK
    at_pi = _wnp.abs(middle - _np.pi) <= GIMBAL_LOCK
    # the half sum and half difference; where a lock leaves (a, b) or (c, d) near 0 its
    # angle is not used, and is computed of (1, 0) so that its partials stay finite
    half_sum = _wnp.arctan2(_wnp.where(at_pi, 0.0, b), _wnp.where(at_pi, 1.0, a))
    half_diff = _wnp.arctan2(_wnp.where(at_zero, 0.0, d), _wnp.where(at_zero, 1.0, c))
    first, third = half_sum - half_diff, half_sum + half_diff
    locked = at_zero | at_pi
    # locked, the middle angle is at a kink (the end of its range, which it reaches as a
    # norm reaches 0): its derivative there is 0, not the direction rounding gives (a, b)
    middle = _wnp.where(locked, _stop_gradient(middle), middle)
    if third_zero:
        first = _wnp.where(at_zero, 2 * half_sum, _wnp.where(at_pi, -2 * half_diff, first))
        third = _wnp.where(locked, 0.0, third)
    else:
        third = _wnp.where(at_zero, 2 * half_sum, _wnp.where(at_pi, 2 * half_diff, third))
        first = _wnp.where(locked, 0.0, first)
    if not proper:
        third = sign * third
        middle = middle - _np.pi / 2
    wrap = lambda t: _wnp.where(t < -_np.pi, t + 2 * _np.pi,
                                _wnp.where(t > _np.pi, t - 2 * _np.pi, t))
    return _wnp.stack([wrap(first), middle, wrap(third)], axis=-1), locked


def _quaternion_matrix(m):
    """The symmetric 4×4 K with qᵀ K q = tr(mᵀ R(q)) for unit q (Bar-Itzhack's, times 3):
    the quaternion of the rotation nearest to m is K's top eigenvector."""
    m00, m01, m02 = m[..., 0, 0], m[..., 0, 1], m[..., 0, 2]
    m10, m11, m12 = m[..., 1, 0], m[..., 1, 1], m[..., 1, 2]
    m20, m21, m22 = m[..., 2, 0], m[..., 2, 1], m[..., 2, 2]
    rows = [[m00 - m11 - m22, m01 + m10, m02 + m20, m21 - m12],
            [m01 + m10, m11 - m00 - m22, m12 + m21, m02 - m20],
            [m02 + m20, m12 + m21, m22 - m00 - m11, m10 - m01],
            [m21 - m12, m02 - m20, m10 - m01, m00 + m11 + m22]]
    return _wnp.stack([_wnp.stack(row, axis=-1) for row in rows], axis=-2)


def _largest_positive(q):
    """q with its largest component positive, the first of x, y, z, w where several are
    as large (to 1e-13): the sign SciPy's from_matrix gives (Markley's method builds the
    quaternion from that component)."""
    sq = q * q
    first = _wnp.argmax(sq >= _wnp.max(sq, axis=-1, keepdims=True) - 1e-13, axis=-1)
    picked = _wnp.take_along_axis(q, first[..., None], axis=-1)
    return q * _wnp.where(picked < 0, -1.0, 1.0)


def _least_turn(a, b):
    """The quaternion of the rotation of least angle carrying b onto a's direction: the
    half-way quaternion (b × a, |a||b| + a·b), normalised, smooth but at opposite vectors,
    where it is a half-turn about b × e, e the axis of b's smallest component (SciPy's)."""
    cross = _wnp.cross(b, a)
    w = _wnp.sqrt(_wnp.sum(a * a) * _wnp.sum(b * b)) + _wnp.sum(a * b)
    kb = _known(b)
    if kb is not None and _known(a) is not None and \
            _known(w) <= 1e-12 * _np.sqrt(_np.sum(_known(a) ** 2) * _np.sum(kb ** 2)):
        # opposite: the half-way quaternion is 0; its derivative has no limit here either
        e = _np.eye(3)[int(_np.argmin(_np.abs(kb)))]
        axis = _np.cross(kb, e)
        return _np.concatenate([axis / _np.linalg.norm(axis), [0.0]])
    q = _wnp.concatenate([cross, _wnp.reshape(w, (1,))])
    return q / _wnp.sqrt(_wnp.sum(q * q))


def _turn_about(axis, c, a, w):
    """The quaternion of the turn about `axis` that best carries the vectors c onto a, in
    the weights w: it maximises Σ wᵢ aᵢ·R(θ)cᵢ = A cos θ + S sin θ + const, at
    θ = atan2(S, A)."""
    n = axis / _wnp.sqrt(_wnp.sum(axis * axis))
    along_a, along_c = _wnp.sum(a * n, axis=-1), _wnp.sum(c * n, axis=-1)
    A = _wnp.sum(w * (_wnp.sum(a * c, axis=-1) - along_a * along_c))
    S = _wnp.sum(w * _wnp.sum(a * _wnp.cross(n, c), axis=-1))
    half = _wnp.arctan2(S, A) / 2
    return _wnp.concatenate([_wnp.sin(half) * n, _wnp.reshape(_wnp.cos(half), (1,))])


def _locked_angles(angles, locked, degrees, suppress_warnings):
    """`as_euler`'s and `as_davenport`'s angles, in degrees if asked, after SciPy's warning
    where any of them is at gimbal lock (`locked`, where its numbers are known)."""
    known = _known(locked)
    if known is not None and _np.any(known) and not suppress_warnings:
        # (stacklevel 3: the user's call of as_euler or as_davenport)
        warnings.warn("Gimbal lock detected. Setting third angle to zero since it is "
                      "not possible to uniquely determine all angles.", UserWarning,
                      stacklevel=3)
    return angles * (180 / _np.pi) if degrees else angles


def _broadcast_batch(first, second, message):
    try:
        return _np.broadcast_shapes(first, second)
    except ValueError:
        raise ValueError(message) from None


def _generator(rng, random_state):
    if random_state is not None:
        if rng is not None:
            raise ValueError("pass `rng` or `random_state` (SciPy's older name), not both")
        # SciPy's legacy meaning: a seed is a RandomState's
        if isinstance(random_state, numbers.Integral):
            return _np.random.RandomState(random_state)
        return random_state
    if isinstance(rng, (_np.random.Generator, _np.random.RandomState)):
        return rng
    return _np.random.default_rng(rng)


def _is_key(x):
    """A PRNG key of `wengert.random` (JAX's raw key: uint32, shape (2,))."""
    return (type(x) is _Node or isinstance(x, _np.ndarray)) and x.dtype == _np.uint32 \
        and _np.shape(x) == (2,)


def _davenport_order(order):
    """True for an extrinsic order ('e', 'extrinsic'), False for intrinsic (SciPy's)."""
    if order in ("e", "extrinsic"):
        return True
    if order in ("i", "intrinsic"):
        return False
    raise ValueError("order should be 'e'/'extrinsic' for extrinsic sequences or "
                     f"'i'/'intrinsic' for intrinsic sequences, got {order}")


def _unit_axes(axes):
    """Davenport axes (..., k, 3) made unit, with SciPy's check: consecutive axes
    orthogonal (|cos| ≤ 1e-7), where the axes' values are known."""
    n = axes / _wnp.sqrt(_wnp.sum(axes * axes, axis=-1, keepdims=True))
    known = _known(n)
    if known is not None and known.shape[-2] > 1 and _np.any(
            _np.abs(_np.sum(known[..., 1:, :] * known[..., :-1, :], axis=-1)) > 1e-7):
        raise ValueError("Consecutive axes must be orthogonal.")
    return n


def _about(axis, angle):
    """The quaternions of turns by `angle` about the unit `axis`, broadcasting the two's
    leading shapes."""
    half = angle / 2
    xyz = _wnp.sin(half)[..., None] * axis
    w = _wnp.broadcast_to(_wnp.cos(half)[..., None], tuple(xyz.shape[:-1]) + (1,))
    return _wnp.concatenate([xyz, w], axis=-1)


# ---- the class ---------------------------------------------------------------------------
@register_pytree_node_class
class Rotation:
    """Rotations in 3 dimensions, as SciPy's `scipy.spatial.transform.Rotation` (and JAX's
    `jax.scipy.spatial.transform.Rotation`): one rotation or a stack of any leading shape,
    held as unit quaternions (x, y, z, w).  Make one with a ``from_...`` constructor,
    `identity`, `random` or `concatenate`; ``Rotation(quat)`` is `from_quat`.

    Differentiable: every constructor, conversion and `apply` is written with
    `wengert.numpy` operations, so `wg.grad`, `wg.jvp`, `wg.jacfwd`, `wg.hessian`,
    `wg.vmap` and `wg.compile` go through them.  A Rotation is a pytree whose leaf is its
    quaternion array: it may be an argument or a result of those transformations.

    Example:
        >>> import numpy as np, wengert as wg
        >>> r = Rotation.from_euler("z", 90, degrees=True)
        >>> r.apply([1.0, 0.0, 0.0]).round(12)
        array([0., 1., 0.])
        >>> r.as_quat().round(12)
        array([0.        , 0.        , 0.70710678, 0.70710678])
        >>> def loss(rotvec):                       # turn x onto y
        ...     return np.sum((Rotation.from_rotvec(rotvec).apply([1.0, 0, 0])
        ...                    - np.array([0.0, 1, 0])) ** 2)
        >>> wg.grad(loss)(np.zeros(3))              # at the identity: about -z
        array([ 0.,  0., -2.])
    """

    def __init__(self, quat, normalize=True, copy=True, scalar_first=False):
        quat = _floats(quat)
        if quat.ndim == 0 or quat.shape[-1] != 4:
            raise ValueError(f"Expected `quat` to have shape (..., 4), got {quat.shape}.")
        if scalar_first:
            quat = _wnp.roll(quat, -1, axis=-1)
        if normalize:
            squares = _wnp.sum(quat * quat, axis=-1, keepdims=True)
            known = _known(squares)
            if known is not None and _np.any(known == 0):
                raise ValueError("Found zero norm quaternions in `quat`.")
            quat = quat / _wnp.sqrt(squares)
        elif copy and isinstance(quat, _np.ndarray):
            quat = quat.copy()
        self._quat = quat

    @classmethod
    def _of(cls, quat):
        """A Rotation holding `quat` as it is (no check, no normalisation): for results
        already unit, and for pytree leaves, which may be anything (a vmap's batch
        tracer, an axis spec, None)."""
        r = object.__new__(cls)
        r._quat = quat
        return r

    def tree_flatten(self):
        return (self._quat,), None

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls._of(children[0])

    # ---- constructors ------------------------------------------------------------------
    @classmethod
    def from_quat(cls, quat, *, scalar_first=False):
        """Rotations from quaternions (..., 4), scalar last (x, y, z, w) unless
        `scalar_first`; each is normalised (a zero one raises ValueError, as SciPy's).

        Example:
            >>> Rotation.from_quat([0.0, 0.0, 2.0, 2.0]).as_quat().round(6)
            array([0.      , 0.      , 0.707107, 0.707107])
            >>> Rotation.from_quat([1.0, 0.0, 0.0, 0.0], scalar_first=True).as_quat()
            array([0., 0., 0., 1.])
        """
        return cls(quat, normalize=True, scalar_first=scalar_first)

    @classmethod
    def from_matrix(cls, matrix, *, assume_valid=False):
        """Rotations from matrices (..., 3, 3).  A matrix that is not orthogonal stands
        for the rotation nearest to it (its orthogonal polar factor, as in SciPy); one
        with a determinant ≤ 0 raises ValueError.  The derivative is that of the nearest
        rotation: smooth wherever the determinant is positive (see the module's notes).
        `assume_valid` (SciPy's) is accepted and changes nothing: there is no cheaper
        path to skip.

        Example:
            >>> import numpy as np
            >>> m = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
            >>> Rotation.from_matrix(m).as_rotvec().round(6)
            array([0.      , 0.      , 1.570796])
            >>> Rotation.from_matrix(2 * np.array(m)).as_rotvec().round(6)   # scaled
            array([0.      , 0.      , 1.570796])
        """
        m = _floats(matrix)
        if m.ndim < 2 or m.shape[-2:] != (3, 3):
            raise ValueError("Expected `matrix` to have shape (3, 3) or (N, 3, 3), got "
                             f"{m.shape}")
        known = _known(m)
        if known is not None and not assume_valid and known.size:
            det = _np.linalg.det(known)
            bad = _np.flatnonzero(_np.ravel(det) <= 0)
            if bad.size:
                i = int(bad[0])
                raise ValueError("Non-positive determinant (left-handed or null coordinate "
                                 f"frame) in rotation matrix {i}: "
                                 f"{known.reshape(-1, 3, 3)[i]}.")
        return cls._of(_largest_positive(_top_eigvecsh(_quaternion_matrix(m))))

    @classmethod
    def from_rotvec(cls, rotvec, degrees=False):
        """Rotations from rotation vectors (..., 3): the axis times the angle (radians, or
        degrees).  Smooth through the zero vector (a series there).

        Example:
            >>> import numpy as np, wengert as wg
            >>> Rotation.from_rotvec([0.0, 0.0, np.pi]).as_quat().round(12)
            array([0., 0., 1., 0.])
            >>> wg.jacfwd(lambda v: Rotation.from_rotvec(v).as_quat())(np.zeros(3))
            array([[0.5, 0. , 0. ],
                   [0. , 0.5, 0. ],
                   [0. , 0. , 0.5],
                   [0. , 0. , 0. ]])
        """
        v = _floats(rotvec)
        if v.ndim == 0 or v.shape[-1] != 3:
            raise ValueError(f"Expected `rot_vec` to have shape (3,) or (N, 3), got {v.shape}")
        if degrees:
            v = v * (_np.pi / 180)
        s = _wnp.sum(v * v, axis=-1)
        small = s < _ROTVEC_SERIES_BELOW
        half_sinc = _series_or(s, small, _HALF_SINC,
                               lambda s: _wnp.sin(_wnp.sqrt(s) / 2) / _wnp.sqrt(s), 1.0)
        half_cos = _series_or(s, small, _HALF_COS, lambda s: _wnp.cos(_wnp.sqrt(s) / 2), 1.0)
        return cls._of(_wnp.concatenate([half_sinc[..., None] * v, half_cos[..., None]],
                                        axis=-1))

    @classmethod
    def from_mrp(cls, mrp):
        """Rotations from modified Rodrigues parameters (..., 3): the axis times
        tan(angle/4).

        Example:
            >>> Rotation.from_mrp([0.0, 0.0, 1.0]).as_rotvec().round(6)   # tan(π/4): π
            array([0.      , 0.      , 3.141593])
        """
        p = _floats(mrp)
        if p.ndim == 0 or p.shape[-1] != 3:
            raise ValueError(f"Expected `mrp` to have shape (3,) or (N, 3), got {p.shape}")
        s = _wnp.sum(p * p, axis=-1, keepdims=True)
        return cls._of(_wnp.concatenate([2 * p, 1 - s], axis=-1) / (1 + s))

    @classmethod
    def from_euler(cls, seq, angles, degrees=False):
        """Rotations from Euler angles: `seq` names up to 3 axes, upper case for
        intrinsic rotations ('ZYX': about the turning body's axes), lower case for
        extrinsic ('xyz': about the fixed ones); `angles` is (..., len(seq)) (or a
        number, for one axis), in radians or degrees.

        Example:
            >>> Rotation.from_euler("ZYX", [90, 0, 0], degrees=True).as_rotvec().round(6)
            array([0.      , 0.      , 1.570796])
            >>> len(Rotation.from_euler("x", [[0.1], [0.2], [0.3]]))
            3
        """
        axes, extrinsic = _check_seq(seq)
        a = _floats(angles)
        if len(axes) == 1 and a.ndim == 0:
            a = a[None]
        if a.ndim == 0 or a.shape[-1] != len(axes):
            raise ValueError("Expected last dimension of `angles` to match number of "
                             f"sequence axes specified, got "
                             f"{a.shape[-1] if a.ndim else 1} (angles of shape {a.shape} "
                             f"for the {len(axes)} axes of {seq!r}).")
        if degrees:
            a = a * (_np.pi / 180)
        q = None
        for n, axis in enumerate(axes):
            e = _elementary(axis, a[..., n])
            # extrinsic: each next rotation turns what came before; intrinsic: it turns
            # about the axes carried along, so it acts first
            q = e if q is None else (_compose(e, q) if extrinsic else _compose(q, e))
        return cls._of(q)

    @classmethod
    def from_davenport(cls, axes, order, angles, degrees=False):
        """Rotations from Davenport angles: turns by `angles` (..., k) about up to 3 axes
        (`axes` (..., k, 3), or one axis (3,)), consecutive ones orthogonal (the first and
        third need not be, as they must for Euler angles); `order` is 'e' or 'extrinsic'
        (about the fixed axes) or 'i' or 'intrinsic' (about the turning body's).  The
        axes are normalised; the shape is that of the axes' and angles' leading axes
        broadcast.  Differentiable in the angles and the axes.

        Example:
            >>> import numpy as np
            >>> axes = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 1.0]]    # x, y, x + z
            >>> r = Rotation.from_davenport(axes, "e", [30.0, 20.0, 10.0], degrees=True)
            >>> r.as_davenport(axes, "e", degrees=True).round(9)
            array([30., 20., 10.])
            >>> Rotation.from_davenport([0.0, 0.0, 2.0], "e", np.pi / 2).as_rotvec().round(6)
            array([0.      , 0.      , 1.570796])
        """
        extrinsic = _davenport_order(order)
        n = _floats(axes)
        if n.ndim == 1:
            n = _wnp.reshape(n, (1,) + tuple(n.shape))
        if n.shape[-1] != 3:
            raise ValueError(f"Expected `axes` to have shape (..., [1 or 2 or 3], 3), got "
                             f"{n.shape}.")
        k = n.shape[-2]
        if k > 3:
            raise ValueError(f"Expected up to 3 axes, got {k}")
        n = _unit_axes(n)
        a = _floats(angles)
        if a.ndim == 0:
            a = _wnp.reshape(a, (1,))
        if a.shape[-1] != k:
            raise ValueError(f"Expected `angles` to match number of axes, got {a.shape[-1]} "
                             f"angles and {k} axes.")
        if degrees:
            a = a * (_np.pi / 180)
        q = None
        for i in range(k):
            e = _about(n[..., i, :], a[..., i])
            q = e if q is None else (_compose(e, q) if extrinsic else _compose(q, e))
        return cls._of(q)

    @classmethod
    def align_vectors(cls, a, b, weights=None, return_sensitivity=False):
        """The rotation C that best carries the vectors b onto the vectors a (N, 3): the
        one minimising Σ wᵢ |aᵢ - C bᵢ|², as SciPy's ``Rotation.align_vectors`` (Wahba's
        problem, Kabsch's for point sets), with its results ``(rotation, rssd)`` or, with
        `return_sensitivity`, ``(rotation, rssd, sensitivity)``: rssd is √(Σ wᵢ |aᵢ -
        C bᵢ|²) and sensitivity the 3×3 covariance of the rotation's error.

        * N > 1: the top eigenvector of Bar-Itzhack's 4×4 matrix of B = Σ wᵢ aᵢ bᵢᵀ,
          as `from_matrix` finds the rotation nearest a matrix; differentiable in a, b and
          the weights wherever the rotation is unique (all aᵢ on one line, or all bᵢ,
          is not: SciPy's warning, and no derivative there).
        * One pair (or one infinite weight among them): the rotation of least angle
          carrying b onto a's direction (a half-turn for opposite vectors, about SciPy's
          axis); with an infinite weight the others then choose the turn about a.
        * At most one weight may be infinite; none negative.

        Example:
            >>> import numpy as np, wengert as wg
            >>> turn = Rotation.from_euler("z", 30, degrees=True)
            >>> b = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
            >>> found, rssd = Rotation.align_vectors(turn.apply(b), b)
            >>> found.as_euler("xyz", degrees=True).round(9) + 0.0, round(rssd, 9)
            (array([ 0.,  0., 30.]), 0.0)
            >>> def yaw(a):                          # the fitted angle, as a function of a
            ...     return Rotation.align_vectors(a, b)[0].as_rotvec()[2]
            >>> wg.grad(yaw)(turn.apply(b)).shape
            (3, 3)
        """
        a, b = _floats(a), _floats(b)
        if a.ndim == 1:
            a = _wnp.reshape(a, (1,) + a.shape)
        if b.ndim == 1:
            b = _wnp.reshape(b, (1,) + b.shape)
        if a.shape != b.shape:
            raise ValueError(f"Expected inputs `a` and `b` to have same shapes, got "
                             f"{a.shape} and {b.shape} respectively.")
        if a.ndim != 2 or a.shape[1] != 3:
            raise ValueError(f"Expected inputs `a` and `b` to have shape (3,) or (N, 3), got "
                             f"{a.shape}.")
        n = a.shape[0]
        if n == 0:
            raise ValueError("Expected at least one pair of vectors, got none.")
        w = _np.ones(n) if weights is None else _floats(weights)
        if w.ndim == 0:
            w = _wnp.reshape(w, (1,))
        if w.shape != (n,):
            raise ValueError(f"Expected `weights` to have number of values equal to number "
                             f"of input vectors, got {w.shape[0] if w.ndim else 1} values "
                             f"and {n} vectors.")
        known = _known(w)
        infinite = _np.zeros(n, bool) if known is None else _np.isinf(known)
        if known is not None and (known < 0).any():
            raise ValueError("`weights` may not contain negative values")
        if infinite.sum() > 1:
            raise ValueError("Only one infinite weight is allowed")
        if return_sensitivity and (n == 1 or infinite.any()):
            raise ValueError("Cannot return sensitivity matrix with an infinite weight or "
                             "one vector pair")
        if n == 1 or infinite.any():
            k = int(_np.flatnonzero(infinite)[0]) if infinite.any() else 0
            q = _least_turn(a[k], b[k])
            finite = _wnp.where(infinite, 0.0, w)
            if n > 1:
                q = _compose(_turn_about(a[k], cls._of(q).apply(b), a, finite), q)
            found = cls._of(q)
            if infinite.any():
                w = finite
        else:
            B = _wnp.matmul(_wnp.swapaxes(w[:, None] * a, 0, 1), b)
            found = cls._of(_largest_positive(_top_eigvecsh(_quaternion_matrix(B))))
            known_b = _known(B)
            if known_b is not None:
                sv = _np.linalg.svd(known_b, compute_uv=False)
                if sv[1] + sv[2] < 1e-16 * sv[0]:
                    warnings.warn("Optimal rotation is not uniquely or poorly defined for "
                                  "the given sets of vectors.", UserWarning, stacklevel=2)
        miss = a - found.apply(b)
        rssd = _sqrt_or_zero(_wnp.sum(w * _wnp.sum(miss * miss, axis=-1)))
        if type(rssd) is not _Node:
            rssd = float(rssd)                  # (SciPy's is a float)
        if not return_sensitivity:
            return found, rssd
        # From the singular values s of B with the sign of det B on the smallest (those of
        # the symmetric Cᵀ B): κ = Σ sᵢsⱼ = ((tr CᵀB)² - |B|²)/2, ζ = Π(sᵢ + sⱼ) =
        # tr(CᵀB) κ - det B; the sensitivity is mean(w) (κ I + B Bᵀ) / ζ (SciPy's).
        fit = _wnp.sum(found.as_matrix() * B)
        kappa = (fit * fit - _wnp.sum(B * B)) / 2
        zeta = fit * kappa - _wnp.linalg.det(B)
        sensitivity = _wnp.mean(w) / zeta * (kappa * _np.eye(3) + _wnp.matmul(
            B, _wnp.swapaxes(B, 0, 1)))
        return found, rssd, sensitivity

    @classmethod
    def identity(cls, num=None, *, shape=None):
        """The identity rotation: one, `num` of them, or a stack of `shape`.

        Example:
            >>> Rotation.identity().as_quat()
            array([0., 0., 0., 1.])
            >>> Rotation.identity(2).as_matrix().shape
            (2, 3, 3)
        """
        batch = _batch_shape(num, shape, "identity")
        q = _np.zeros(batch + (4,))
        q[..., 3] = 1.0
        return cls._of(q)

    @classmethod
    def random(cls, num=None, rng=None, *, shape=None, random_state=None):
        """Rotations drawn uniformly: one, `num` of them, or a stack of `shape`.  `rng` is
        SciPy's: a seed, a NumPy Generator, or None (fresh entropy); ``random_state`` is
        SciPy's older name (a seed there is a RandomState's).  SciPy's numbers for the
        same seed.  JAX's form, ``random(key, num)`` with a key of `wengert.random`, draws
        with that key instead (wengert's numbers, not JAX's).

        Example:
            >>> Rotation.random(3, rng=0).as_quat().shape
            (3, 4)
            >>> from wengert import random
            >>> Rotation.random(random.PRNGKey(0), 2).as_matrix().shape
            (2, 3, 3)
        """
        if _is_key(num):
            from .... import random as _random
            draw = _random.normal(num, _batch_shape(rng, shape, "random") + (4,))
        else:
            draw = _generator(rng, random_state).normal(
                size=_batch_shape(num, shape, "random") + (4,))
        return cls.from_quat(draw)

    @classmethod
    def concatenate(cls, rotations):
        """One stack of the rotations given (single ones count as one each), in order.

        Example:
            >>> r = Rotation.concatenate([Rotation.identity(), Rotation.random(2, rng=0)])
            >>> len(r)
            3
        """
        if isinstance(rotations, Rotation):
            rotations = [rotations]
        rotations = list(rotations)
        if not rotations:
            raise ValueError("concatenate needs at least one Rotation")
        for r in rotations:
            if not isinstance(r, Rotation):
                raise TypeError("input must contain Rotation objects only, got "
                                f"{type(r).__name__}")
            if r._quat.ndim > 2:
                raise ValueError("concatenate takes single rotations and 1-D stacks; got "
                                 f"a stack of shape {r.shape}")
        return cls._of(_wnp.concatenate([r._quat[None] if r.single else r._quat
                                         for r in rotations], axis=0))

    # ---- conversions -------------------------------------------------------------------
    def as_quat(self, canonical=False, *, scalar_first=False):
        """The quaternions (..., 4), scalar last (x, y, z, w) unless `scalar_first`.
        q and -q are the same rotation: `canonical` picks the one whose first nonzero of
        w, x, y, z is positive (w ≥ 0); otherwise the sign is the one held (SciPy's).

        Example:
            >>> r = Rotation.from_quat([0.0, 0.0, 0.0, -1.0])
            >>> r.as_quat(), r.as_quat(canonical=True), r.as_quat(scalar_first=True)
            (array([ 0.,  0.,  0., -1.]), array([-0., -0., -0.,  1.]), array([-1.,  0.,  0.,  0.]))
        """
        q = self._quat
        if canonical:
            q = q * _canonical_sign(q)[..., None]
        elif isinstance(q, _np.ndarray):
            q = q.copy()
        if scalar_first:
            q = _wnp.roll(q, 1, axis=-1)
        return q

    def as_matrix(self):
        """The rotation matrices (..., 3, 3).

        Example:
            >>> import numpy as np
            >>> Rotation.from_rotvec([0.0, 0.0, np.pi / 2]).as_matrix().round(12)
            array([[ 0., -1.,  0.],
                   [ 1.,  0.,  0.],
                   [ 0.,  0.,  1.]])
        """
        x, y, z, w = _components(self._quat)
        xx, yy, zz, ww = x * x, y * y, z * z, w * w
        xy, xz, xw, yz, yw, zw = x * y, x * z, x * w, y * z, y * w, z * w
        rows = [[xx - yy - zz + ww, 2 * (xy - zw), 2 * (xz + yw)],
                [2 * (xy + zw), -xx + yy - zz + ww, 2 * (yz - xw)],
                [2 * (xz - yw), 2 * (yz + xw), -xx - yy + zz + ww]]
        return _wnp.stack([_wnp.stack(row, axis=-1) for row in rows], axis=-2)

    def as_rotvec(self, degrees=False):
        """The rotation vectors (..., 3): the axis times the angle, in [0, π] (radians,
        or degrees).  Smooth through the identity (a series there); at an angle of π the
        vector jumps to its negative, and the derivative is the one on the side SciPy
        takes (the canonical quaternion's, w ≥ 0).

        Example:
            >>> import numpy as np, wengert as wg
            >>> Rotation.from_euler("x", 30, degrees=True).as_rotvec(degrees=True).round(9)
            array([30.,  0.,  0.])
            >>> wg.jacfwd(lambda q: Rotation.from_quat(q).as_rotvec())(
            ...     np.array([0.0, 0.0, 0.0, 1.0]))           # at the identity: 2 I, 0
            array([[2., 0., 0., 0.],
                   [0., 2., 0., 0.],
                   [0., 0., 2., 0.]])
        """
        q = self._quat * _canonical_sign(self._quat)[..., None]
        xyz, w = q[..., :3], q[..., 3]
        n2 = _wnp.sum(xyz * xyz, axis=-1)
        small = n2 < _ATAN_SERIES_BELOW * w * w
        # small angles: 2 atan(t)/(t w), t = |xyz|/w, as a series in t²; the others:
        # 2 atan2(|xyz|, w)/|xyz|
        w_safe = _wnp.where(small, w, 1.0)
        series = 2 * _polynomial(_ATAN_OVER, _wnp.where(small, n2 / (w_safe * w_safe), 0.0)) \
            / w_safe
        n = _wnp.sqrt(_wnp.where(small, 1.0, n2))
        formula = 2 * _wnp.arctan2(n, _wnp.where(small, 1.0, w)) / n
        rotvec = _wnp.where(small, series, formula)[..., None] * xyz
        return rotvec * (180 / _np.pi) if degrees else rotvec

    def as_mrp(self):
        """Modified Rodrigues parameters (..., 3): the axis times tan(angle/4), of norm at
        most 1 (SciPy's sign: w ≥ 0).

        Example:
            >>> import numpy as np
            >>> Rotation.from_rotvec([0.0, 0.0, np.pi / 2]).as_mrp().round(6)   # tan(π/8)
            array([0.      , 0.      , 0.414214])
        """
        q = _w_nonnegative(self._quat)
        return q[..., :3] / (1 + q[..., 3:])

    def as_euler(self, seq, degrees=False, *, suppress_warnings=False):
        """Euler angles (..., 3) for the 3-axis sequence `seq` (upper case intrinsic,
        lower case extrinsic, as in `from_euler`), SciPy's: the first and third in
        [-π, π], the second in [0, π] for sequences such as 'zxz' and in [-π/2, π/2] for
        those such as 'xyz'.  At gimbal lock (the second angle within 1e-7 of an end of
        its range) only the sum or difference of the others is defined: as SciPy, this
        sets the third to 0, gives the first the whole, and warns (UserWarning) unless
        `suppress_warnings`.  The derivative there is that of those values (0 for the
        third, the shared angle's for the first; 0 for the second, which is at a kink).

        Example:
            >>> Rotation.from_euler("ZYX", [10, 20, 30], degrees=True).as_euler(
            ...     "ZYX", degrees=True).round(9)
            array([10., 20., 30.])
            >>> Rotation.from_euler("xyz", [10, 90, 30], degrees=True).as_euler(
            ...     "xyz", degrees=True, suppress_warnings=True).round(9)
            array([-20.,  90.,   0.])
        """
        axes, extrinsic = _check_seq(seq)
        if len(axes) != 3:
            raise ValueError(f"Expected 3 axes, got {seq}.")
        q = self._quat
        if extrinsic:
            angles, locked = _extrinsic_angles(q, *axes, third_zero=True)
        else:
            # intrinsic rotations about i, j, k are extrinsic ones about k, j, i, in
            # reverse order: their third angle is the extrinsic first
            angles, locked = _extrinsic_angles(q, *axes[::-1], third_zero=False)
            angles = angles[..., ::-1]
        return _locked_angles(angles, locked, degrees, suppress_warnings)

    def as_davenport(self, axes, order, degrees=False, *, suppress_warnings=False):
        """Davenport angles (..., 3) about the 3 `axes` (..., 3, 3) (consecutive ones
        orthogonal), extrinsic or intrinsic by `order` ('e'/'extrinsic', 'i'/'intrinsic'),
        SciPy's: the first and third in [-π, π], the second in an interval of length π
        fixed by the axes, [θ, θ + π] or [-θ - π, -θ] (θ ≤ 0 the signed angle, about the
        second axis, between the first and third).  About the coordinate axes these are
        `as_euler`'s angles.  Gimbal lock (the second angle within 1e-7 of an end of its
        interval) is `as_euler`'s: the third angle set to 0, a UserWarning unless
        `suppress_warnings`, the derivative that of the values returned.

        How: the third axis is the first turned about the second by θ, so R_{n3}(c) =
        R_{n2}(θ) R_{n1}(c) R_{n2}(-θ), and R_{n2}(-θ) R is an Euler sequence n1, n2, n1
        with middle angle b - θ: in the frame (n1, n2, n1 × n2), `as_euler`'s angles.

        Example:
            >>> import numpy as np
            >>> r = Rotation.from_euler("xyz", [10, 20, 30], degrees=True)
            >>> r.as_davenport(np.eye(3), "extrinsic", degrees=True).round(9)
            array([10., 20., 30.])
        """
        extrinsic = _davenport_order(order)
        n = _floats(axes)
        if n.ndim < 2 or n.shape[-2] != 3 or n.shape[-1] != 3:
            raise ValueError(f"Expected 3 axes, got {n.shape[-2] if n.ndim >= 2 else 1}.")
        n = _unit_axes(n)
        if not extrinsic:       # (intrinsic turns are extrinsic ones in reverse order)
            n = n[..., ::-1, :]
        n1, n2, n3 = n[..., 0, :], n[..., 1, :], n[..., 2, :]
        theta = _wnp.arctan2(_wnp.sum(_wnp.cross(n1, n3) * n2, axis=-1),
                             _wnp.sum(n1 * n3, axis=-1))
        # SciPy's interval for the middle angle: θ ≤ 0 (about the middle axis reversed,
        # and the middle angle negated, where θ > 0)
        flip = theta > 0
        n2 = _wnp.where(flip[..., None], -n2, n2)
        theta = _wnp.where(flip, -theta, theta)
        q = _compose(_about(n2, -theta), self._quat)
        v = q[..., :3]
        q = _wnp.stack([_wnp.sum(v * n1, axis=-1), _wnp.sum(v * n2, axis=-1),
                        _wnp.sum(v * _wnp.cross(n1, n2), axis=-1), q[..., 3]], axis=-1)
        angles, locked = _extrinsic_angles(q, 0, 1, 0, third_zero=extrinsic)
        middle = angles[..., 1] + theta
        angles = _wnp.stack([angles[..., 0], _wnp.where(flip, -middle, middle),
                             angles[..., 2]], axis=-1)
        if not extrinsic:
            angles = angles[..., ::-1]
        return _locked_angles(angles, locked, degrees, suppress_warnings)

    def reduce(self, left=None, right=None, return_indices=False):
        """The rotations reduced by the rotation groups `left` and `right` (stacks of
        rotations; None is the identity): q = l * p * r with l from `left` and r from
        `right` chosen for the smallest angle (the largest |w|), as SciPy's.  Where pairs
        tie (to 1e-12 in |w|) the first in the order (l, r) is taken: with both sides
        given they always do (the angle of l p r is that of p r l), and SciPy's choice
        among them is made by its rounding, so its q may be another of the same angle.
        With `return_indices`, also the
        indices of the l and r chosen (None for a side not given; arrays of one for a
        single rotation, as SciPy's).  The choice is an integer, without derivative; q
        differentiates in p, left and right through the products.

        Example:
            >>> import numpy as np
            >>> square = Rotation.create_group("C4")            # quarter-turns about z
            >>> turn = Rotation.from_euler("z", 100, degrees=True)
            >>> reduced, l, r = turn.reduce(left=square, return_indices=True)
            >>> reduced.as_euler("xyz", degrees=True).round(9) + 0.0, l, r
            (array([ 0.,  0., 10.]), array([3]), None)
        """
        for side in (left, right):
            if side is not None and not isinstance(side, Rotation):
                raise TypeError(f"`left` and `right` must be Rotation instances, got "
                                f"{type(side).__name__}")
        p = self._quat
        batch = tuple(p.shape[:-1])
        flat = _wnp.reshape(p, (-1, 4))                             # (N, 4)
        ls = None if left is None else _wnp.reshape(left._quat, (-1, 4))
        rs = None if right is None else _wnp.reshape(right._quat, (-1, 4))
        # |w| of l ⊗ p ⊗ r for every p, l, r, (N, L, R), a side not given the identity
        one = _np.array([[0.0, 0.0, 0.0, 1.0]])
        ls_, rs_ = (one if ls is None else ls), (one if rs is None else rs)
        lp = _compose(ls_[None, :, :], flat[:, None, :])
        w = lp[..., None, 3] * rs_[:, 3] - _wnp.sum(lp[..., None, :3] * rs_[:, :3], axis=-1)
        w = _wnp.reshape(_wnp.abs(w), (w.shape[0], -1))
        # the first pair within 1e-12 of the largest: pairs tie exactly whenever both
        # sides are given (the angle of l p r is that of p r l), and SciPy's choice among
        # them is its rounding's
        n_right = rs_.shape[0]
        best = _wnp.argmax(w >= _wnp.max(w, axis=-1, keepdims=True) - 1e-12, axis=-1)
        i, j = best // n_right, best % n_right
        q = flat
        if ls is not None:
            q = _compose(_wnp.take(ls, i, axis=0), q)
        if rs is not None:
            q = _compose(q, _wnp.take(rs, j, axis=0))
        reduced = Rotation._of(_wnp.reshape(q, batch + (4,)))
        if not return_indices:
            return reduced
        index = lambda k: _wnp.reshape(k, batch if batch else (1,))
        return (reduced, None if ls is None else index(i), None if rs is None else index(j))

    @classmethod
    def create_group(cls, group, axis="Z"):
        """A rotation group's elements (SciPy's, in its order and signs; constants, so
        they are SciPy's own): 'I' (icosahedral, 60), 'O' (octahedral, 24), 'T'
        (tetrahedral, 12), 'Dn' (dihedral, 2n) and 'Cn' (cyclic, n) about `axis` ('X',
        'Y' or 'Z', either case).  SciPy's errors for other names.

        Example:
            >>> len(Rotation.create_group("O")), len(Rotation.create_group("D3", axis="x"))
            (24, 6)
        """
        import scipy.spatial.transform as _st
        return cls._of(_np.asarray(_st.Rotation.create_group(group, axis).as_quat()))

    # ---- operations --------------------------------------------------------------------
    def apply(self, vectors, inverse=False):
        """The rotations applied to vectors (..., 3) (or their inverses, with `inverse`),
        broadcasting as NumPy does: one rotation to many vectors, many to one, or pairs.

        Example:
            >>> import numpy as np
            >>> r = Rotation.from_rotvec([[0.0, 0.0, np.pi / 2], [np.pi / 2, 0.0, 0.0]])
            >>> r.apply([1.0, 1.0, 0.0]).round(12)
            array([[-1.,  1.,  0.],
                   [ 1.,  0.,  1.]])
        """
        v = _floats(vectors)
        if v.ndim == 0 or v.shape[-1] != 3:
            raise ValueError(f"Expected input of shape (..., 3), got {v.shape}.")
        _broadcast_batch(self.shape, v.shape[:-1],
                         f"Cannot broadcast rotations of shape {self.shape} to vectors "
                         f"of shape {v.shape[:-1]} (the vectors' shape, without its last "
                         "axis of 3, must broadcast with the rotations')")
        m = self.as_matrix()
        if inverse:
            m = _wnp.swapaxes(m, -1, -2)
        return _wnp.matmul(m, v[..., None])[..., 0]

    def inv(self):
        """The inverse rotations.

        Example:
            >>> import numpy as np
            >>> r = Rotation.random(rng=1)
            >>> (r * r.inv()).magnitude().round(12)
            np.float64(0.0)
        """
        return Rotation._of(self._quat * _np.array([-1.0, -1.0, -1.0, 1.0]))

    def magnitude(self):
        """The angles of the rotations, in [0, π] radians.  Its derivative at the identity
        (where the angle is a norm's kink) is 0.

        Example:
            >>> import numpy as np
            >>> Rotation.from_rotvec([0.0, 0.3, 0.4]).magnitude().round(12)
            np.float64(0.5)
        """
        q = self._quat
        n = _sqrt_or_zero(_wnp.sum(q[..., :3] * q[..., :3], axis=-1))
        return 2 * _wnp.arctan2(n, _wnp.abs(q[..., 3]))

    def mean(self, weights=None, axis=None):
        """The mean rotation (Markley's: the quaternion that maximises the weighted sum of
        squared dot products, the top eigenvector of Σ wᵢ qᵢqᵢᵀ), over all rotations or
        the stack's `axis` (an int or a tuple).  `weights` (non-negative) has the stack's
        shape.  Its sign is LAPACK's eigenvector's, as SciPy's (which sums the matrix in
        another order: a rare mean's rounding differs enough to flip it).  Where the top
        eigenvalue repeats there is no one mean, and the derivative warns
        (RuntimeWarning).

        Example:
            >>> r = Rotation.from_euler("z", [[-10.0], [30.0]], degrees=True)
            >>> r.mean().as_rotvec(degrees=True).round(9)
            array([ 0.,  0., 10.])
            >>> r.mean(weights=[1.0, 0.0]).as_rotvec(degrees=True).round(9)
            array([  0.,   0., -10.])
        """
        q, batch = self._quat, self.shape
        if weights is None:
            w = _np.ones(batch)
        else:
            w = _floats(weights)
            if w.shape != batch:
                raise ValueError("Expected `weights` to have the rotations' shape "
                                 f"{batch}, got {w.shape} (SciPy: number of values equal "
                                 "to number of rotations)")
            known = _known(w)
            if known is not None and _np.any(known < 0):
                raise ValueError("`weights` must be non-negative.")
        if axis is None:
            axes = tuple(range(len(batch)))
        else:
            axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
            if any(not -len(batch) <= a < len(batch) for a in axes):
                raise ValueError(f"axis {axis} is out of bounds for rotations of shape "
                                 f"{batch}")
            axes = tuple(a % len(batch) for a in axes)
        outer = w[..., None, None] * q[..., :, None] * q[..., None, :]
        return Rotation._of(_top_eigvecsh(_wnp.sum(outer, axis=axes)))

    def approx_equal(self, other, atol=None, degrees=False):
        """Whether each rotation is within angle `atol` (1e-8 radians unless given; in
        degrees with `degrees`) of `other`'s, broadcasting as composition does.

        Example:
            >>> import numpy as np
            >>> r = Rotation.from_rotvec([0.0, 0.0, 1.0])
            >>> r.approx_equal(Rotation.from_rotvec([0.0, 0.0, 1.0 + 1e-10]))
            np.True_
            >>> bool(r.approx_equal(Rotation.identity(), atol=60, degrees=True))
            True
        """
        if atol is None:
            atol = 1e-8
        elif degrees:
            atol = atol * _np.pi / 180
        return (other * self.inv()).magnitude() < atol

    def __mul__(self, other):
        """The composition ``p * q``: q, then p (quaternion product), broadcasting one
        rotation with a stack, or two stacks of shapes that broadcast.

        Example:
            >>> z90 = Rotation.from_euler("z", 90, degrees=True)
            >>> (z90 * z90).as_rotvec().round(6)
            array([0.      , 0.      , 3.141593])
        """
        if not isinstance(other, Rotation):
            return NotImplemented
        _broadcast_batch(self.shape, other.shape,
                         f"Cannot broadcast {self.shape} rotations in first to "
                         f"{other.shape} rotations in second object.")
        return Rotation._of(_compose(self._quat, other._quat))

    def __pow__(self, n, modulus=None):
        """The rotations composed with themselves `n` times (any real n, negative too):
        the same axis, n times the angle (the angle taken in [0, π]).

        Example:
            >>> (Rotation.from_rotvec([0.0, 0.0, 0.6]) ** 0.5).as_rotvec().round(12)
            array([0. , 0. , 0.3])
        """
        if modulus is not None:
            raise NotImplementedError("modular exponentiation is not supported")
        if isinstance(n, numbers.Number) and n == 0:        # (SciPy's exact special cases)
            return Rotation.identity(shape=self.shape)
        if isinstance(n, numbers.Number) and n == -1:
            return self.inv()
        if isinstance(n, numbers.Number) and n == 1:
            return Rotation._of(self._quat)
        return Rotation.from_rotvec(n * self.as_rotvec())

    def __getitem__(self, index):
        """The rotations at `index` of the stack (NumPy's indexing of its leading axes).

        Example:
            >>> r = Rotation.random(4, rng=0)
            >>> r[0].single, len(r[1:]), len(r[[0, 2]])
            (True, 3, 2)
        """
        if self.single:
            raise TypeError("Single rotation is not subscriptable.")
        if type(index) is _Node:        # (traced integers: a NumPy array cannot take them)
            return Rotation._of(_wnp.take(self._quat, index, axis=0))
        index = index if isinstance(index, tuple) else (index,)
        return Rotation._of(self._quat[index + (slice(None),)])

    def __len__(self):
        """The stack's length (its first axis); a single rotation has none (TypeError).

        Example:
            >>> len(Rotation.identity(shape=(2, 3)))
            2
        """
        if self.single:
            raise TypeError("Single rotation has no len().")
        return self._quat.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __bool__(self):
        return True         # (a Rotation is a value, never empty or false; SciPy's too)

    @property
    def single(self):
        """Whether this is one rotation, not a stack.

        Example:
            >>> Rotation.identity().single, Rotation.identity(1).single
            (True, False)
        """
        return self._quat.ndim == 1

    @property
    def shape(self):
        """The stack's shape (() for a single rotation).

        Example:
            >>> Rotation.identity(shape=(2, 3)).shape
            (2, 3)
        """
        return tuple(self._quat.shape[:-1])

    @property
    def quat(self):
        """The quaternions held, (..., 4), scalar last: JAX's name (its Rotation is a
        named tuple of them).

        Example:
            >>> Rotation.identity().quat
            array([0., 0., 0., 1.])
        """
        return self._quat

    def __repr__(self):
        return f"Rotation.from_quat({self._quat!r})"


def _batch_shape(num, shape, name):
    if num is not None and shape is not None:
        raise ValueError(f"{name}: give `num` or `shape`, not both")
    if shape is not None:
        return (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    if num is None:
        return ()
    if not isinstance(num, numbers.Integral):
        raise TypeError(f"{name}: `num` must be an int or None, got {num!r} (a stack of "
                        "several dimensions is `shape=`)")
    return (int(num),)
