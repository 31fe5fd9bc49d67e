"""`RotationSpline`: SciPy's interpolation of rotations with continuous angular rate and
angular acceleration, written with `wengert.numpy`, so that it differentiates in the query
times, the key times and the key rotations.

Between keys i and i+1 (times tᵢ, tᵢ₊₁ = tᵢ + hᵢ) the rotation is Rᵢ exp(θ(τ)), τ = t - tᵢ,
θ a cubic with θ(0) = 0 and θ(hᵢ) = φᵢ = log(Rᵢ⁻¹ Rᵢ₊₁), the rotation vector to the next key.
The body's angular rate is ω = J(θ) θ̇ and its angular acceleration α = J(θ) θ̈ + N(θ, θ̇), J
the right Jacobian of SO(3)'s exponential and N the term quadratic in θ̇
(`_exp_series`).  So θ̇(0) = ωᵢ and θ̇(hᵢ) = J(φᵢ)⁻¹ ωᵢ₊₁, and the cubic is the Hermite one
of those ends.  The rates at the two end keys are the chords' (φ₀/h₀ and φₙ₋₂/hₙ₋₂); those
at the inner keys make α continuous there, an equation for each inner key j

    2/hⱼ₋₁ J(φⱼ₋₁) ωⱼ₋₁ + 4 (1/hⱼ₋₁ + 1/hⱼ) ωⱼ + 2/hⱼ J(φⱼ)⁻¹ ωⱼ₊₁
        = 6 (φⱼ₋₁/hⱼ₋₁² + φⱼ/hⱼ²) - N(φⱼ₋₁, J(φⱼ₋₁)⁻¹ ωⱼ),

linear but for N.  SciPy solves it by fixed-point iteration: N from the current rates, then
the block-tridiagonal linear system (a banded solve), until the rates change by less than
1e-9 (relative to 1 + |ω|) or 10 times.  This module runs the same iteration with
`wengert.numpy` (the banded solve is `wengert.scipy.linalg.solve_banded`), from SciPy's
start (ωⱼ = φⱼ₋₁/hⱼ₋₁), with SciPy's test where the values are known (eagerly, also under
`wg.grad`): the same rates as SciPy's to rounding, and a derivative that is the
iteration's, by composition.  Why this rather than the implicit function theorem at the
exact fixed point: the values are SciPy's, not a closer fixed point's (SciPy's stop leaves
them ~1e-10 from it), and the derivative of the iteration differs from the fixed point's by
as little, since its tangents converge at the iteration's rate; it needs nothing but
composition, to any order.  Under `wg.compile` and `wg.vmap`, where no values decide when
to stop, all 10 iterations are run (a fixed point closer still: values within SciPy's
tolerance of its own).
"""
from __future__ import annotations

import numpy as _np

from .... import numpy as _wnp
from ....tree import register_pytree_node_class
from ...linalg import solve_banded as _solve_banded
from . import _exp_series
from ._rotation import Rotation, _floats, _known

__all__ = ["RotationSpline"]


def _skew(v):
    """[v]× (..., 3, 3)."""
    x, y, z = v[..., 0], v[..., 1], v[..., 2]
    zero = _wnp.zeros_like(x)
    return _wnp.stack([_wnp.stack([zero, -z, y], axis=-1),
                       _wnp.stack([z, zero, -x], axis=-1),
                       _wnp.stack([-y, x, zero], axis=-1)], axis=-2)


def _jacobian(phi, inverse=False):
    """The right Jacobian J(φ) = I - a [φ]× + b [φ]×² of SO(3)'s exponential, or its
    inverse I + ½ [φ]× + c [φ]×², as matrices (..., 3, 3)."""
    s = _exp_series.squared_norm(phi)[..., None, None]
    k = _skew(phi)
    k2 = _wnp.matmul(k, k)
    if inverse:
        return _np.eye(3) + 0.5 * k + _exp_series.inverse_coefficient(s) * k2
    return _np.eye(3) - _exp_series.one_minus_cos(s) * k + _exp_series.theta_minus_sin(s) * k2


def _rate(theta, theta_dot):
    """The angular rate J(θ) θ̇ of a rotation R exp(θ(t)), R fixed (in the body's frame)."""
    return _exp_series.jacobian_times(theta, theta_dot, sign=-1)


def _quadratic_term(theta, theta_dot):
    """N(θ, θ̇): the angular acceleration of R exp(θ(t)) is J(θ) θ̈ + N(θ, θ̇), with
    N = (θ·θ̇) (d θ×θ̇ + e θ×(θ×θ̇)) + b θ̇×(θ×θ̇)."""
    s = _exp_series.squared_norm(theta)[..., None]
    along = _wnp.sum(theta * theta_dot, axis=-1)[..., None]
    cross = _wnp.cross(theta, theta_dot)
    return along * (_exp_series.acceleration_d(s) * cross
                    + _exp_series.acceleration_e(s) * _wnp.cross(theta, cross)) \
        + _exp_series.theta_minus_sin(s) * _wnp.cross(theta_dot, cross)


def _band(lower, diagonal, upper):
    """The block-tridiagonal matrix of 3×3 blocks, `diagonal` (m,) times I on the diagonal,
    `lower` (m - 1, 3, 3) below it (block row r + 1, column r) and `upper` (m - 1, 3, 3)
    above it (row r, column r + 1), in `solve_banded`'s storage for 5 diagonals below and
    5 above: ab[5 + i - j, j] = A[i, j].  Each of ab's rows holds, in column 3k + c, one
    entry of block column k, column c: of the upper block of row k - 1 (ab rows 0-4), the
    diagonal (row 5) or the lower block of row k + 1 (rows 6-10)."""
    m = diagonal.shape[0]
    zero = _np.zeros(m - 1)
    edge = _np.zeros((1, 3))
    rows = []
    for row in range(11):
        if row == 5:
            rows.append(_wnp.reshape(diagonal[:, None] * _np.ones(3), (3 * m,)))
            continue
        blocks, offset = (upper, 2) if row < 5 else (lower, 8)
        # entry (a, c) of a block sits in ab row offset + a - c
        cols = [blocks[:, row - offset + c, c] if 0 <= row - offset + c <= 2 else zero
                for c in range(3)]
        cols = _wnp.stack(cols, axis=-1)
        parts = [edge, cols] if row < 5 else [cols, edge]
        rows.append(_wnp.reshape(_wnp.concatenate(parts, axis=0), (3 * m,)))
    return _wnp.stack(rows, axis=0)


@register_pytree_node_class
class RotationSpline:
    """Interpolation of rotations with continuous angular rate and angular acceleration
    (SciPy's `RotationSpline`): between consecutive keys the rotation vector from the
    earlier key is a cubic in time, the rates at the inner keys chosen so that the angular
    acceleration is continuous (see the module's notes; the end keys' rates are the
    chords').  ``spline(times, order)`` gives the rotations (order 0), the angular rates
    (1) or the angular accelerations (2), in the body's frame, in radians per unit time.

    `times` are strictly increasing, one per key rotation (at least 2, a 1-D stack).
    Differentiable in the query times (the derivative of order 0 is order 1's rate, of
    order 1 is order 2's), the key times and the key rotations; a pytree of ``times``,
    ``rotations`` and the cubics' coefficients, so it passes through `wg.jit`, `wg.grad`
    and `wg.vmap`.

    Example:
        >>> import numpy as np, wengert as wg
        >>> keys = Rotation.from_euler("z", [[0.0], [90.0], [180.0]], degrees=True)
        >>> spline = RotationSpline([0.0, 1.0, 2.0], keys)
        >>> spline(1.5).as_euler("xyz", degrees=True).round(9) + 0.0
        array([  0.,   0., 135.])
        >>> spline([0.0, 1.0], order=1).round(12) + 0.0      # π/2 per unit about z
        array([[0.        , 0.        , 1.57079633],
               [0.        , 0.        , 1.57079633]])
        >>> def rate_at_one(q):                  # how the middle key moves that rate
        ...     return RotationSpline([0.0, 1.0, 2.0], Rotation.from_quat(q))(1.0, 1)[2]
        >>> wg.grad(rate_at_one)(keys.as_quat()).shape
        (3, 4)
    """

    #: SciPy's iteration for the inner keys' rates: at most this many steps, ...
    MAX_ITER = 10
    #: ... stopping when each rate changed by less than TOL (1 + |rate|).
    TOL = 1e-9

    def __init__(self, times, rotations):
        if not isinstance(rotations, Rotation):
            raise TypeError("`rotations` must be a `Rotation` instance, got "
                            f"{type(rotations).__name__}")
        if rotations.single:
            raise ValueError("`rotations` must be a sequence of rotations.")
        if len(rotations.shape) > 1:
            raise ValueError("Rotations with more than 1 leading dimension are not "
                             "supported.")
        if len(rotations) == 1:
            raise ValueError("`rotations` must contain at least 2 rotations.")
        times = _floats(times)
        if times.ndim != 1:
            raise ValueError("`times` must be 1-dimensional.")
        if times.shape[0] != len(rotations):
            raise ValueError("Expected number of rotations to be equal to number of "
                             f"timestamps given, got {len(rotations)} rotations and "
                             f"{times.shape[0]} timestamps.")
        dt = times[1:] - times[:-1]
        known = _known(dt)
        if known is not None and _np.any(known <= 0):
            raise ValueError("Values in `times` must be in a strictly increasing order.")
        rotvecs = (rotations[:-1].inv() * rotations[1:]).as_rotvec()
        if len(rotations) == 2:
            rates = rotvecs / dt[:, None]
            rotvecs_dot = rates
        else:
            rates, rotvecs_dot = self._rates(dt, rotvecs)
        h = dt[:, None]
        self.times = times
        self.rotations = rotations
        self.coefficients = _wnp.stack([(-2 * rotvecs + h * rates + h * rotvecs_dot) / h ** 3,
                                        (3 * rotvecs - 2 * h * rates - h * rotvecs_dot) / h ** 2,
                                        rates])

    def _rates(self, dt, rotvecs):
        """The angular rates at the keys 0 … n - 2 (the starts of the intervals) and the
        rotation vectors' derivatives at the intervals' ends, by SciPy's iteration."""
        first, last = rotvecs[:1] / dt[0], rotvecs[-1:] / dt[-1]
        jac = _jacobian(rotvecs)
        jac_inv = _jacobian(rotvecs, inverse=True)
        h = dt[:, None, None]
        ab = _band(2 * jac[1:-1] / h[1:-1], 4 * (1 / dt[:-1] + 1 / dt[1:]),
                   2 * jac_inv[1:-1] / h[1:-1])
        rhs = 6 * (rotvecs[:-1] / dt[:-1, None] ** 2 + rotvecs[1:] / dt[1:, None] ** 2)
        # the end keys' rates, known, on the right-hand side (both in one row if m = 1)
        rhs = _wnp.at(rhs)[0].add(-2 / dt[0] * _wnp.matmul(jac[0], first[0]))
        rhs = _wnp.at(rhs)[-1].add(-2 / dt[-1] * _wnp.matmul(jac_inv[-1], last[0]))
        inner = rotvecs[:-1] / dt[:-1, None]                    # SciPy's start
        for _ in range(self.MAX_ITER):
            ends_dot = _wnp.matmul(jac_inv[:-1], inner[..., None])[..., 0]
            new = _wnp.reshape(_solve_banded(
                (5, 5), ab, _wnp.reshape(rhs - _quadratic_term(rotvecs[:-1], ends_dot), (-1,))),
                inner.shape)
            change = _known(_wnp.abs(new - inner))
            size = _known(_wnp.abs(new))
            inner = new
            if change is not None and size is not None and _np.all(
                    change < self.TOL * (1 + size)):
                break
        later = _wnp.concatenate([inner, last], axis=0)           # keys 1 … n - 1
        rotvecs_dot = _wnp.matmul(jac_inv, later[..., None])[..., 0]
        return _wnp.concatenate([first, inner], axis=0), rotvecs_dot

    def tree_flatten(self):
        return (self.times, self.rotations, self.coefficients), None

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        spline = object.__new__(cls)
        spline.times, spline.rotations, spline.coefficients = children
        return spline

    def __call__(self, times, order=0):
        """The interpolated rotations at `times` (order 0: a `Rotation`, one for a number,
        a stack for a 1-D array), or their angular rates (order 1) or angular
        accelerations (order 2), (..., 3), in the body's frame.  Times outside the keys'
        extrapolate the end intervals' cubics (as SciPy's).

        Example:
            >>> import numpy as np
            >>> keys = Rotation.from_rotvec([[0.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
            >>> spline = RotationSpline([0.0, 2.0], keys)
            >>> spline(0.5).as_rotvec(), spline(0.5, 1), spline(0.5, 2)
            (array([0.  , 0.  , 0.25]), array([0. , 0. , 0.5]), array([0., 0., 0.]))
        """
        if order not in (0, 1, 2):
            raise ValueError("`order` must be 0, 1 or 2.")
        t = _floats(times)
        if t.ndim > 1:
            raise ValueError("`times` must be at most 1-dimensional.")
        single = t.ndim == 0
        if single:
            t = _wnp.reshape(t, (1,))
        last = self.times.shape[0] - 2
        index = _wnp.clip(_wnp.searchsorted(self.times, t, side="right") - 1, 0, last)
        tau = (t - _wnp.take(self.times, index))[:, None]
        c = _wnp.take(self.coefficients, index, axis=1)
        theta = ((c[0] * tau + c[1]) * tau + c[2]) * tau
        if order == 0:
            result = self.rotations[index] * Rotation.from_rotvec(theta)
        else:
            theta_dot = (3 * c[0] * tau + 2 * c[1]) * tau + c[2]
            if order == 1:
                result = _rate(theta, theta_dot)
            else:
                result = _rate(theta, 6 * c[0] * tau + 2 * c[1]) \
                    + _quadratic_term(theta, theta_dot)
        return result[0] if single else result
