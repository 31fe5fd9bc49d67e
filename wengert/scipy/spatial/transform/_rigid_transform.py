"""`RigidTransform`: SciPy's class (1.16+), written with `wengert.numpy` on a rotation's
quaternion and a translation, so that every constructor, conversion, `apply` and
composition differentiates by composition.

A transform x ↦ R x + t is held as the unit quaternion of R (x, y, z, w) and t; a stack of
them as arrays (..., 4) and (..., 3) of one batch shape.  SciPy holds the 4×4 matrix; the
two agree to rounding, and this form composes without re-orthogonalising and hands its
rotation out without an eigenproblem.  The choices where a formula is singular:

* exponential coordinates (φ, ρ) ↦ (exp φ, J(φ) ρ) and back (the log, ρ = J(φ)⁻¹ t):
  J's coefficients are 0/0 at the identity, so below an angle of 2 they are series in θ²
  (`_exp_series`), smooth through it to any order; at an angle of π the rotation vector
  jumps to its negative (as `as_rotvec`'s), and the log's derivative is that of the side
  SciPy takes;
* the rotation handed out (`rotation`, `as_components`, `as_dual_quat`) has SciPy's sign,
  that of `Rotation.from_matrix` (the largest component positive), a piecewise constant
  factor, so the derivative is that of the quaternion held times it.  Where two
  components tie in magnitude (a half-turn about a diagonal, the cube's rotations) the
  first of x, y, z, w is made positive; SciPy's choice there is made by the rounding of
  the matrix it holds, and may be the other (the same rotation).
"""
from __future__ import annotations

import numbers

import numpy as _np

from .... import numpy as _wnp
from ....graph.node import Node as _Node
from ....tree import register_pytree_node_class
from . import _exp_series
from ._rotation import (Rotation, _batch_shape, _broadcast_batch, _compose, _floats,
                        _known, _largest_positive)

__all__ = ["RigidTransform"]

_CONJUGATE = _np.array([-1.0, -1.0, -1.0, 1.0])
_LAST_ROW = _np.array([0.0, 0.0, 0.0, 1.0])


def _pure(v):
    """The quaternions (v, 0) of vectors v (..., 3)."""
    return _wnp.concatenate([v, _wnp.zeros_like(v[..., :1])], axis=-1)


def _rotate(q, v, inverse=False):
    m = Rotation._of(q).as_matrix()
    if inverse:
        m = _wnp.swapaxes(m, -1, -2)
    return _wnp.matmul(m, v[..., None])[..., 0]


def _axes(axis, shape):
    """The stack's axes a mean runs over (SciPy's rules; repeated axes count once)."""
    if axis is None:
        return tuple(range(len(shape)))
    axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
    for a in axes:
        if not -len(shape) <= a < len(shape):
            raise ValueError(f"axis {tuple(axes)} is out of bounds for transform with shape "
                             f"{shape}.")
    return tuple(sorted({a % len(shape) for a in axes}))


@register_pytree_node_class
class RigidTransform:
    """Rigid transforms in 3 dimensions (poses, SE(3)), as SciPy's
    `scipy.spatial.transform.RigidTransform`: x ↦ R x + t, a rotation followed by a
    translation; one transform or a stack of any leading shape.  Make one with a
    ``from_...`` constructor, `identity` or `concatenate`; ``RigidTransform(matrix)`` is
    `from_matrix`.

    Differentiable: every constructor, conversion, `apply`, composition, power and `mean`
    is written with `wengert.numpy` operations, so `wg.grad`, `wg.jvp`, `wg.hessian`,
    `wg.vmap` and `wg.compile` go through them.  A RigidTransform is a pytree whose leaves
    are its quaternions (..., 4) and translations (..., 3): it may be an argument or a
    result of those transformations.  ``RigidTransform(matrix, normalize=False)`` takes the
    rotation block as a rotation without checking it (SciPy keeps the matrix as given;
    here its nearest rotation is held).

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy.spatial.transform import Rotation
        >>> pose = RigidTransform.from_components(
        ...     [1.0, 2.0, 3.0], Rotation.from_euler("z", 90, degrees=True))
        >>> pose.apply([1.0, 0.0, 0.0]).round(12)
        array([1., 3., 3.])
        >>> def moved(exp_coords):                  # a point moved by exp(ξ)
        ...     return RigidTransform.from_exp_coords(exp_coords).apply([1.0, 0.0, 0.0])
        >>> wg.jacfwd(moved)(np.zeros(6)).round(12) + 0.0   # at the identity: [-p]×, I
        array([[ 0.,  0.,  0.,  1.,  0.,  0.],
               [ 0.,  0.,  1.,  0.,  1.,  0.],
               [ 0., -1.,  0.,  0.,  0.,  1.]])
    """

    def __init__(self, matrix, normalize=True, copy=True):
        m = _floats(matrix)
        if m.ndim < 2 or m.shape[-2:] != (4, 4):
            raise ValueError(f"Expected `matrix` to have shape (..., 4, 4), got {m.shape}.")
        known = _known(m)
        if known is not None and known.size:
            last = known[..., 3, :].reshape(-1, 4)
            bad = _np.flatnonzero(_np.any(last != _LAST_ROW, axis=-1))
            if bad.size:
                i = int(bad[0])
                raise ValueError(f"Expected last row of transformation matrix {i} to be "
                                 f"exactly [0, 0, 0, 1], got {last[i]}.")
        rotation = Rotation.from_matrix(m[..., :3, :3], assume_valid=not normalize)
        self._quat = rotation._quat
        self._translation = m[..., :3, 3]

    @classmethod
    def _of(cls, quat, translation):
        """A RigidTransform holding `quat` and `translation` as they are (no check): for
        results already unit, and for pytree leaves, which may be anything."""
        tf = object.__new__(cls)
        tf._quat, tf._translation = quat, translation
        return tf

    def tree_flatten(self):
        return (self._quat, self._translation), None

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls._of(*children)

    # ---- constructors ------------------------------------------------------------------
    @classmethod
    def from_matrix(cls, matrix):
        """Transforms from 4×4 matrices (..., 4, 4), ``[[R, t], [0, 0, 0, 1]]``.  The last
        row must be exactly (0, 0, 0, 1); a rotation block that is not orthogonal stands
        for its nearest rotation (as in SciPy), one with a determinant ≤ 0 raises
        ValueError.  The derivative is `Rotation.from_matrix`'s in R, the identity in t.

        Example:
            >>> m = [[0.0, -1.0, 0.0, 1.0], [1.0, 0.0, 0.0, 2.0], [0.0, 0.0, 1.0, 3.0],
            ...      [0.0, 0.0, 0.0, 1.0]]
            >>> tf = RigidTransform.from_matrix(m)
            >>> tf.translation, tf.rotation.as_rotvec().round(6)
            (array([1., 2., 3.]), array([0.      , 0.      , 1.570796]))
        """
        return cls(matrix)

    @classmethod
    def from_rotation(cls, rotation):
        """Pure rotations (translation 0) from a `Rotation` (one or a stack).

        Example:
            >>> from wengert.scipy.spatial.transform import Rotation
            >>> RigidTransform.from_rotation(Rotation.from_rotvec([0.0, 0.0, 0.5])
            ...                              ).as_exp_coords()
            array([0. , 0. , 0.5, 0. , 0. , 0. ])
        """
        if not isinstance(rotation, Rotation):
            raise TypeError("Expected `rotation` to be a `Rotation` instance, got "
                            f"{type(rotation)}.")
        q = rotation._quat
        return cls._of(q, _np.zeros(tuple(q.shape[:-1]) + (3,)))

    @classmethod
    def from_translation(cls, translation):
        """Pure translations from vectors (..., 3).

        Example:
            >>> RigidTransform.from_translation([1.0, 2.0, 3.0]).apply([1.0, 1.0, 1.0])
            array([2., 3., 4.])
        """
        t = _floats(translation)
        if t.ndim == 0 or t.shape[-1] != 3:
            raise ValueError(f"Expected `translation` to have shape (..., 3), got {t.shape}.")
        return cls._of(Rotation.identity(shape=tuple(t.shape[:-1]))._quat, t)

    @classmethod
    def from_components(cls, translation, rotation):
        """The transforms x ↦ rotation(x) + translation: the rotation first, then the
        translation; the shapes of the translations (without the last axis) and the
        rotations broadcast.

        Example:
            >>> from wengert.scipy.spatial.transform import Rotation
            >>> tf = RigidTransform.from_components([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
            ...                                     Rotation.from_rotvec([0.0, 0.0, 0.3]))
            >>> tf.shape, tf.rotation.shape
            ((2,), (2,))
        """
        t = _floats(translation)
        if t.ndim == 0 or t.shape[-1] != 3:
            raise ValueError(f"Expected `translation` to have shape (..., 3), got {t.shape}.")
        if not isinstance(rotation, Rotation):
            raise TypeError("Expected `rotation` to be a `Rotation` instance, got "
                            f"{type(rotation)}.")
        batch = _broadcast_batch(tuple(t.shape[:-1]), rotation.shape,
                                 f"Cannot broadcast {tuple(t.shape[:-1])} transforms in first "
                                 f"to {rotation.shape} transforms in second object.")
        return cls._of(_broadcast(rotation._quat, batch + (4,)), _broadcast(t, batch + (3,)))

    @classmethod
    def from_exp_coords(cls, exp_coords):
        """Transforms from exponential coordinates (..., 6), (φ, ρ): the exponential of the
        twist [[φ]×, ρ; 0, 0], the rotation exp(φ) (`Rotation.from_rotvec`) and the
        translation J(φ) ρ, J the left Jacobian of SO(3)'s exponential.  Smooth through
        φ = 0 (series there), to any order.

        Example:
            >>> import numpy as np
            >>> tf = RigidTransform.from_exp_coords([0.0, 0.0, np.pi / 2, 1.0, 0.0, 0.0])
            >>> tf.translation.round(12)                  # (sin θ, 1 - cos θ, 0)/θ, θ = π/2
            array([0.63661977, 0.63661977, 0.        ])
        """
        e = _floats(exp_coords)
        if e.ndim == 0 or e.shape[-1] != 6:
            raise ValueError(f"Expected `exp_coords` to have shape (..., 6), got {e.shape}.")
        phi, rho = e[..., :3], e[..., 3:]
        return cls._of(Rotation.from_rotvec(phi)._quat,
                       _exp_series.jacobian_times(phi, rho))

    @classmethod
    def from_dual_quat(cls, dual_quat, *, scalar_first=False):
        """Transforms from dual quaternions (..., 8): the real part (4, a rotation's
        quaternion) then the dual part (4, ½ (t, 0) ⊗ real), each scalar last unless
        `scalar_first`.  Any dual quaternion is taken as the unit one it stands for: the
        real part normalised, the dual part divided by its norm (its component along the
        real part, which the unit ones lack, is ignored); a real part of 0 stands for the
        identity rotation, as in SciPy.

        Example:
            >>> tf = RigidTransform.from_dual_quat([0.0, 0.0, 0.0, 2.0, 1.0, 2.0, 3.0, 0.0])
            >>> tf.translation, tf.rotation.as_quat()
            (array([1., 2., 3.]), array([0., 0., 0., 1.]))
        """
        d = _floats(dual_quat)
        if d.ndim == 0 or d.shape[-1] != 8:
            raise ValueError(f"Expected `dual_quat` to have shape (8,), or (N, 8), got "
                             f"{d.shape}.")
        real, dual = d[..., :4], d[..., 4:]
        if scalar_first:
            real, dual = _wnp.roll(real, -1, axis=-1), _wnp.roll(dual, -1, axis=-1)
        n2 = _wnp.sum(real * real, axis=-1, keepdims=True)
        zero = n2 == 0
        real = _wnp.where(zero, _LAST_ROW, real)
        n2 = _wnp.where(zero, 1.0, n2)
        # t = 2 vec(dual ⊗ conj(real)) / |real|², the translation of the unit dual quaternion
        t = 2 * _compose(dual, real * _CONJUGATE)[..., :3] / n2
        return cls._of(real / _wnp.sqrt(n2), t)

    @classmethod
    def identity(cls, num=None, *, shape=None):
        """The identity transform: one, `num` of them, or a stack of `shape`.

        Example:
            >>> RigidTransform.identity(2).as_matrix().shape
            (2, 4, 4)
        """
        if num is not None and shape is not None:
            raise ValueError("Only one of `num` and `shape` can be specified.")
        batch = _batch_shape(num, shape, "identity")
        return cls._of(Rotation.identity(shape=batch)._quat, _np.zeros(batch + (3,)))

    @classmethod
    def concatenate(cls, transforms):
        """One stack of the transforms given (single ones count as one each), along the
        first axis; a single RigidTransform is copied.

        Example:
            >>> tf = RigidTransform.concatenate(
            ...     [RigidTransform.identity(), RigidTransform.identity(2)])
            >>> len(tf)
            3
        """
        if isinstance(transforms, RigidTransform):
            return cls._of(*(_copy(x) for x in transforms.tree_flatten()[0]))
        transforms = list(transforms)
        for tf in transforms:
            if not isinstance(tf, RigidTransform):
                raise TypeError("input must contain RigidTransform objects only")
        if not transforms:
            raise IndexError("concatenate needs at least one RigidTransform (got none)")
        stacked = lambda x, single: x[None] if single else x
        return cls._of(
            _wnp.concatenate([stacked(tf._quat, tf.single) for tf in transforms], axis=0),
            _wnp.concatenate([stacked(tf._translation, tf.single) for tf in transforms],
                             axis=0))

    # ---- conversions -------------------------------------------------------------------
    def as_matrix(self):
        """The 4×4 matrices (..., 4, 4), ``[[R, t], [0, 0, 0, 1]]``.

        Example:
            >>> RigidTransform.from_translation([1.0, 2.0, 3.0]).as_matrix()
            array([[1., 0., 0., 1.],
                   [0., 1., 0., 2.],
                   [0., 0., 1., 3.],
                   [0., 0., 0., 1.]])
        """
        top = _wnp.concatenate([Rotation._of(self._quat).as_matrix(),
                                self._translation[..., None]], axis=-1)
        bottom = _np.broadcast_to(_LAST_ROW, tuple(top.shape[:-2]) + (1, 4))
        return _wnp.concatenate([top, bottom], axis=-2)

    def as_components(self):
        """``(translation, rotation)``: the transform is rotation(x) + translation.

        Example:
            >>> t, r = RigidTransform.from_exp_coords([0.0, 0.0, 0.0, 1.0, 2.0, 3.0]
            ...                                       ).as_components()
            >>> t, r.as_quat()
            (array([1., 2., 3.]), array([0., 0., 0., 1.]))
        """
        return self.translation, self.rotation

    def as_exp_coords(self):
        """Exponential coordinates (..., 6), (φ, ρ): the log of `from_exp_coords`, φ the
        rotation vector (`Rotation.as_rotvec`, angle in [0, π]) and ρ = J(φ)⁻¹ t.  Smooth
        through the identity (series there); at an angle of π, φ jumps to -φ, and the
        derivative is that of the side SciPy takes.

        Example:
            >>> import numpy as np, wengert as wg
            >>> tf = RigidTransform.from_exp_coords([0.1, 0.2, 0.3, 1.0, 2.0, 3.0])
            >>> tf.as_exp_coords().round(12)
            array([0.1, 0.2, 0.3, 1. , 2. , 3. ])
            >>> log = lambda e: RigidTransform.from_exp_coords(e).as_exp_coords()
            >>> bool(np.allclose(wg.jacfwd(log)(np.zeros(6)), np.eye(6)))   # at the identity
            True
        """
        phi = Rotation._of(self._quat).as_rotvec()
        rho = _exp_series.inverse_jacobian_times(phi, self._translation)
        return _wnp.concatenate([phi, rho], axis=-1)

    def as_dual_quat(self, *, scalar_first=False):
        """Unit dual quaternions (..., 8): the rotation's quaternion (SciPy's sign: the
        largest component positive) and ½ (t, 0) ⊗ it, each scalar last unless
        `scalar_first`.

        Example:
            >>> RigidTransform.from_translation([2.0, 4.0, 6.0]).as_dual_quat()
            array([0., 0., 0., 1., 1., 2., 3., 0.])
        """
        real = _largest_positive(self._quat)
        dual = 0.5 * _compose(_pure(self._translation), real)
        if scalar_first:
            real, dual = _wnp.roll(real, 1, axis=-1), _wnp.roll(dual, 1, axis=-1)
        return _wnp.concatenate([real, dual], axis=-1)

    # ---- operations --------------------------------------------------------------------
    def apply(self, vector, inverse=False):
        """The transforms applied to vectors (..., 3): R v + t (or the inverse, Rᵀ (v - t),
        with `inverse`), broadcasting the transforms' shape with the vectors' (without
        their last axis) as NumPy does.

        Example:
            >>> from wengert.scipy.spatial.transform import Rotation
            >>> tf = RigidTransform.from_components([1.0, 0.0, 0.0],
            ...                                     Rotation.from_euler("z", 90, degrees=True))
            >>> tf.apply([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]).round(12) + 0.0
            array([[1., 1., 0.],
                   [0., 0., 0.]])
            >>> tf.apply(tf.apply([0.3, 0.2, 0.1]), inverse=True).round(12)
            array([0.3, 0.2, 0.1])
        """
        v = _floats(vector)
        if v.ndim == 0 or v.shape[-1] != 3:
            raise ValueError(f"Expected vector to have shape (N, 3), or (3,), got {v.shape}.")
        _broadcast_batch(self.shape, tuple(v.shape[:-1]),
                         f"Cannot broadcast transforms of shape {self.shape} to vectors of "
                         f"shape {tuple(v.shape[:-1])} (the vectors' shape, without its last "
                         "axis of 3, must broadcast with the transforms')")
        if inverse:
            return _rotate(self._quat, v - self._translation, inverse=True)
        return _rotate(self._quat, v) + self._translation

    def inv(self):
        """The inverse transforms: x ↦ Rᵀ (x - t).

        Example:
            >>> tf = RigidTransform.from_exp_coords([0.3, -0.2, 0.1, 1.0, 2.0, 3.0])
            >>> (tf * tf.inv()).as_exp_coords().round(12) + 0.0
            array([0., 0., 0., 0., 0., 0.])
        """
        return RigidTransform._of(self._quat * _CONJUGATE,
                                  -_rotate(self._quat, self._translation, inverse=True))

    def mean(self, weights=None, axis=None):
        """The mean transform: the rotations' mean (`Rotation.mean`, the chordal L2 mean,
        Markley's) and the translations' weighted average, over all transforms or the
        stack's `axis` (an int or a tuple).  `weights` (non-negative, not all 0) has the
        stack's shape.

        Example:
            >>> from wengert.scipy.spatial.transform import Rotation
            >>> tf = RigidTransform.from_components(
            ...     [[0.0, 0.0, 0.0], [2.0, 0.0, 0.0]],
            ...     Rotation.from_euler("z", [[-10.0], [30.0]], degrees=True))
            >>> m = tf.mean()
            >>> m.translation, m.rotation.as_euler("xyz", degrees=True).round(9)
            (array([1., 0., 0.]), array([ 0.,  0., 10.]))
            >>> tf.mean(weights=[3.0, 1.0]).translation
            array([0.5, 0. , 0. ])
        """
        shape = self.shape
        if weights is not None:
            w = _floats(weights)
            if len(shape) <= 1 and w.ndim != 1:
                raise ValueError(f"Expected `weights` to be 1 dimensional, got {w.shape}.")
            if len(shape) == 1 and w.shape[0] != shape[0]:
                raise ValueError("Expected `weights` to have number of values equal to "
                                 f"number of transforms, got {w.shape[0]} values and "
                                 f"{shape[0]} transforms.")
            if len(shape) > 1 and w.shape != shape:
                raise ValueError(f"Expected `weights` to match transform shape, got shape "
                                 f"{w.shape} for {shape} transformations.")
            known = _known(w)
            if known is not None and _np.any(known < 0):
                raise ValueError("`weights` must be non-negative.")
            if known is not None and known.size and _np.sum(known) == 0:
                raise ZeroDivisionError("Weights sum to zero, can't be normalized")
            if not shape:
                return RigidTransform._of(_copy(self._quat), _copy(self._translation))
        if not shape:
            return RigidTransform._of(_copy(self._quat), _copy(self._translation))
        axes = _axes(axis, shape)
        rotation = Rotation._of(self._quat).mean(weights=weights if weights is None else w,
                                                 axis=axes)
        t = self._translation
        if weights is None:
            translation = _wnp.mean(t, axis=axes)
        else:
            translation = _wnp.sum(w[..., None] * t, axis=axes) / _wnp.sum(w, axis=axes)[
                ..., None]
        return RigidTransform._of(rotation._quat, translation)

    def __mul__(self, other):
        """The composition ``p * q``: q, then p (p's matrix times q's), broadcasting one
        transform with a stack, or two stacks of shapes that broadcast.

        Example:
            >>> p = RigidTransform.from_translation([1.0, 0.0, 0.0])
            >>> q = RigidTransform.from_exp_coords([0.0, 0.0, 0.0, 0.0, 2.0, 0.0])
            >>> (p * q).translation
            array([1., 2., 0.])
        """
        if not isinstance(other, RigidTransform):
            return NotImplemented
        _broadcast_batch(self.shape, other.shape,
                         f"Cannot broadcast {self.shape} transforms in first to "
                         f"{other.shape} transforms in second object.")
        return RigidTransform._of(_compose(self._quat, other._quat),
                                  self._translation + _rotate(self._quat, other._translation))

    def __pow__(self, n, modulus=None):
        """The transforms composed with themselves `n` times, any real n: the exponential
        of n times the exponential coordinates (a screw motion's fraction: n = 0.5 is
        half-way from the identity along it).  A negative n inverts first; n = 0, 1 and
        -1 are the identity, a copy and `inv` exactly (SciPy's).  n may be traced (then
        the power is exp(n log p) throughout, the same but at a half-turn).

        Example:
            >>> tf = RigidTransform.from_exp_coords([0.0, 0.0, 1.0, 2.0, 0.0, 0.0])
            >>> (tf ** 0.5).as_exp_coords().round(12) + 0.0
            array([0. , 0. , 0.5, 1. , 0. , 0. ])
            >>> bool(((tf ** 0.5) * (tf ** 0.5)).as_matrix().round(12).tolist()
            ...      == tf.as_matrix().round(12).tolist())
            True
        """
        if modulus is not None:
            raise NotImplementedError("modular exponentiation is not supported")
        if type(n) is _Node:
            if n.shape != ():
                raise TypeError(f"the power must be a number, got an array of shape "
                                f"{n.shape}")
            return RigidTransform.from_exp_coords(n * self.as_exp_coords())
        if isinstance(n, _np.ndarray) and n.ndim == 0:
            n = n[()]
        if not isinstance(n, numbers.Real):
            raise TypeError(f"the power must be a real number, got {n!r}")
        if n == 0:
            return RigidTransform.identity(shape=self.shape)
        if n == 1:
            return RigidTransform._of(_copy(self._quat), _copy(self._translation))
        if n == -1:
            return self.inv()
        if n < 0:
            return self.inv() ** -n
        return RigidTransform.from_exp_coords(n * self.as_exp_coords())

    def __getitem__(self, index):
        """The transforms at `index` of the stack (NumPy's indexing of its leading axes).

        Example:
            >>> tf = RigidTransform.from_translation([[1.0, 0, 0], [2.0, 0, 0], [3.0, 0, 0]])
            >>> tf[1].translation, tf[1:].shape
            (array([2., 0., 0.]), (2,))
        """
        if self.single:
            raise TypeError("Single transform is not subscriptable.")
        if type(index) is _Node:        # (traced integers: a NumPy array cannot take them)
            return RigidTransform._of(_wnp.take(self._quat, index, axis=0),
                                      _wnp.take(self._translation, index, axis=0))
        index = index if isinstance(index, tuple) else (index,)
        return RigidTransform._of(self._quat[index + (slice(None),)],
                                  self._translation[index + (slice(None),)])

    def __setitem__(self, index, value):
        """Replace the transforms at `index` with `value`'s (broadcast to them): the leaves
        become new arrays (``x.at[index].set``), differentiable in both.

        Example:
            >>> tf = RigidTransform.identity(3)
            >>> tf[1] = RigidTransform.from_translation([0.0, 0.0, 5.0])
            >>> tf.translation
            array([[0., 0., 0.],
                   [0., 0., 5.],
                   [0., 0., 0.]])
        """
        if self.single:
            raise TypeError("Single transform is not subscriptable.")
        if not isinstance(value, RigidTransform):
            raise TypeError("value must be a RigidTransform object")
        self._quat = _wnp.at(self._quat)[index].set(value._quat)
        self._translation = _wnp.at(self._translation)[index].set(value._translation)

    def __len__(self):
        """The stack's length (its first axis); a single transform has none (TypeError).

        Example:
            >>> len(RigidTransform.identity(shape=(2, 3)))
            2
        """
        if self.single:
            raise TypeError("Single transform has no len")
        return self._quat.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __bool__(self):
        return True

    @property
    def single(self):
        """Whether this is one transform, not a stack.

        Example:
            >>> RigidTransform.identity().single, RigidTransform.identity(1).single
            (True, False)
        """
        return self._quat.ndim == 1

    @property
    def shape(self):
        """The stack's shape (() for a single transform).

        Example:
            >>> RigidTransform.identity(shape=(2, 3)).shape
            (2, 3)
        """
        return tuple(self._quat.shape[:-1])

    @property
    def rotation(self):
        """The rotations (a `Rotation`, SciPy's sign: the largest component positive).

        Example:
            >>> from wengert.scipy.spatial.transform import Rotation
            >>> tf = RigidTransform.from_rotation(Rotation.from_quat([0.0, 0.0, -1.0, -1.0]))
            >>> tf.rotation.as_quat().round(6) + 0.0        # (held: -z, -w)
            array([0.      , 0.      , 0.707107, 0.707107])
        """
        return Rotation._of(_largest_positive(self._quat))

    @property
    def translation(self):
        """The translations (..., 3).

        Example:
            >>> RigidTransform.from_translation([1.0, 2.0, 3.0]).translation
            array([1., 2., 3.])
        """
        return _copy(self._translation)

    def __repr__(self):
        return f"RigidTransform.from_matrix({self.as_matrix()!r})"


def _copy(x):
    return x.copy() if isinstance(x, _np.ndarray) else x


def _broadcast(x, shape):
    if tuple(x.shape) == shape:
        return x
    return _wnp.broadcast_to(x, shape)
