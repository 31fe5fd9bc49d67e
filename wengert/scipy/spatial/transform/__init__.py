"""SciPy's `scipy.spatial.transform.Rotation` and `Slerp` (JAX's
`jax.scipy.spatial.transform`), `RotationSpline` and `RigidTransform`, differentiable: for
fitting orientations and poses by gradient descent through rotations.

`Rotation` holds unit quaternions (x, y, z, w) and takes SciPy's constructors
(`from_quat`, `from_matrix`, `from_rotvec`, `from_euler`, `from_davenport`, `from_mrp`,
`identity`, `random`, `concatenate`, `create_group`), conversions (`as_quat`, `as_matrix`,
`as_rotvec`, `as_euler`, `as_davenport`, `as_mrp`), `apply`, `inv`, `magnitude`, `mean`,
`reduce`, composition ``p * q``, powers, indexing and `approx_equal`, for single
rotations and stacks of any leading shape, with SciPy's values (its quaternion signs and
Euler angle ranges included) and its errors.  Every one
is written with `wengert.numpy` operations, so derivatives flow through all of them to
any order, under `wg.vmap`, `wg.jit` and `wg.compile`; a Rotation is a pytree (its
quaternions are the leaf), so it passes into and out of those transformations.
`Slerp(times, rotations)` and `RotationSpline(times, rotations)` (with angular rates and
accelerations) interpolate, differentiable in the query times, the key times and the key
rotations.  `RigidTransform` (SciPy 1.16+) holds poses, a rotation's quaternion and a
translation, with SciPy's constructors and conversions (matrices, components, exponential
coordinates, dual quaternions), `apply`, composition, powers, `inv` and `mean`, all
differentiable and a pytree too.

Where a conversion has no derivative the rule is stated (docs/scipy.md, "Rotations"):
`as_rotvec` and `from_rotvec` are smooth through the identity (series there), `from_matrix`
differentiates through the nearest rotation (the derivative of SciPy's own projection of a
matrix that is not orthogonal), and `as_euler` at gimbal lock holds its third angle at 0
(as its value), so the first angle carries the whole derivative of the angle it shares.

Example: the gradient of an angle of Euler angles, through a matrix:

    >>> import numpy as np, wengert as wg
    >>> from wengert.scipy.spatial.transform import RigidTransform, Rotation, Slerp
    >>> def yaw_of(angles):
    ...     return Rotation.from_matrix(Rotation.from_euler("ZYX", angles).as_matrix()
    ...                                 ).as_euler("ZYX")[0]
    >>> wg.grad(yaw_of)(np.array([0.3, 0.2, 0.1])).round(12) + 0.0     # (no -0.0)
    array([1., 0., 0.])
    >>> key = Rotation.from_euler("z", [[0.0], [90.0]], degrees=True)
    >>> Slerp([0.0, 1.0], key)(0.5).as_euler("xyz", degrees=True).round(12)
    array([ 0.,  0., 45.])
    >>> pose = RigidTransform.from_exp_coords([0.0, 0.0, 0.0, 1.0, 2.0, 3.0])
    >>> pose.apply([1.0, 1.0, 1.0])
    array([2., 3., 4.])
"""
from ._rigid_transform import RigidTransform
from ._rotation import Rotation
from ._rotation_spline import RotationSpline
from ._slerp import Slerp

__all__ = ["RigidTransform", "Rotation", "RotationSpline", "Slerp"]


def __getattr__(name):
    import scipy.spatial.transform as _st
    if hasattr(_st, name):
        raise AttributeError(
            f"wengert.scipy.spatial.transform has Rotation, Slerp, RotationSpline and "
            f"RigidTransform; {name} is not offered "
            f"(use scipy.spatial.transform.{name} on plain values)")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
