"""SciPy's `scipy.spatial`, the part that fits poses: `wengert.scipy.spatial.transform`
(`Rotation`, `Slerp`, `RotationSpline` and `RigidTransform`), differentiable in every
constructor's argument, every conversion and `apply`, under `wg.vmap` and `wg.compile`
too (docs/scipy.md, "Rotations").

SciPy's other names here (`KDTree`, `distance`, `ConvexHull`, ...) are SciPy's own: they
work on plain values, and a traced value handed to them raises the ConcretizationError that
says it would lose its derivative.

Example:
    >>> import numpy as np, wengert as wg
    >>> from wengert.scipy.spatial.transform import Rotation
    >>> turn = lambda angle: Rotation.from_rotvec(np.array([0.0, 0.0, 1.0]) * angle)
    >>> turn(np.pi / 2).apply([1.0, 0.0, 0.0]).round(12)       # x onto y
    array([0., 1., 0.])
    >>> wg.grad(lambda a: turn(a).apply([1.0, 0.0, 0.0])[1])(0.0)   # d sin(a)/da at 0
    1.0
"""
from . import transform

__all__ = ["transform"]


def __getattr__(name):
    import scipy.spatial
    return getattr(scipy.spatial, name)
