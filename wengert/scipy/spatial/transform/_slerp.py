"""`Slerp`: SciPy's spherical linear interpolation between key rotations, written with
`Rotation`'s differentiable operations: the interval of a query is `searchsorted` (an
integer, without derivative: the interpolant is continuous where a query crosses a key
time), and within it the rotation is key_i * exp(α · log(key_i⁻¹ key_{i+1})), α the
query's fraction of the interval, so derivatives flow to the query times, the key times
and the key rotations (`as_rotvec` is smooth where two keys are equal)."""
from __future__ import annotations

import numpy as _np

from .... import numpy as _wnp
from ....tree import register_pytree_node_class
from ._rotation import Rotation, _floats, _known

__all__ = ["Slerp"]


@register_pytree_node_class
class Slerp:
    """Spherical linear interpolation of rotations (SciPy's `Slerp`; JAX's, whose
    ``Slerp.init(times, rotations)`` is the constructor here too): between consecutive
    key times, the rotation turns at a constant rate about a fixed axis from one key to
    the next.

    `times` are strictly increasing, one per key rotation (at least 2, a 1-D stack).
    Differentiable in the query times, the key times and the key rotations; a pytree of
    ``times``, ``timedelta``, ``rotations`` and ``rotvecs`` (JAX's fields), so it passes
    through `wg.jit`, `wg.grad` and `wg.vmap`.

    Example:
        >>> import numpy as np, wengert as wg
        >>> keys = Rotation.from_euler("z", [[0.0], [90.0], [180.0]], degrees=True)
        >>> slerp = Slerp([0.0, 1.0, 3.0], keys)
        >>> slerp([0.5, 2.0]).as_rotvec(degrees=True).round(9)
        array([[  0.,   0.,  45.],
               [  0.,   0., 135.]])
        >>> rate = wg.grad(lambda t: slerp(t).as_rotvec()[2])(2.0)   # (π/2)/2 per unit
        >>> bool(np.isclose(rate, np.pi / 4))
        True
    """

    def __init__(self, times, rotations):
        if not isinstance(rotations, Rotation):
            raise TypeError("`rotations` must be a `Rotation` instance, got "
                            f"{type(rotations).__name__}")
        if rotations.single or len(rotations) == 1:
            raise ValueError("`rotations` must be a sequence of at least 2 rotations.")
        if len(rotations.shape) > 1:
            raise ValueError("Rotations with more than 1 leading dimension are not "
                             f"supported (got a stack of shape {rotations.shape}).")
        times = _floats(times)
        if times.ndim != 1:
            raise ValueError("Expected times to be specified in a 1 dimensional array, got "
                             f"{times.ndim} dimensions.")
        if times.shape[0] != len(rotations):
            raise ValueError("Expected number of rotations to be equal to number of "
                             f"timestamps given, got {len(rotations)} rotations and "
                             f"{times.shape[0]} timestamps.")
        self.times = times
        self.timedelta = times[1:] - times[:-1]
        known = _known(self.timedelta)
        if known is not None and _np.any(known <= 0):
            raise ValueError("Times must be in strictly increasing order.")
        self.rotations = rotations
        self.rotvecs = (rotations[:-1].inv() * rotations[1:]).as_rotvec()

    @classmethod
    def init(cls, times, rotations):
        """JAX's constructor: ``Slerp(times, rotations)``.

        Example:
            >>> Slerp.init([0.0, 1.0], Rotation.random(2, rng=0))(1.0).single
            True
        """
        return cls(times, rotations)

    def tree_flatten(self):
        return (self.times, self.timedelta, self.rotations, self.rotvecs), None

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        slerp = object.__new__(cls)
        slerp.times, slerp.timedelta, slerp.rotations, slerp.rotvecs = children
        return slerp

    def __call__(self, times):
        """The interpolated rotations at `times` (a number: one rotation; a 1-D array: a
        stack), each within the key times (both ends included; ValueError otherwise).

        Example:
            >>> keys = Rotation.from_rotvec([[0.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
            >>> Slerp([0.0, 2.0], keys)(0.5).as_rotvec()
            array([0.  , 0.  , 0.25])
        """
        t = _floats(times)
        if t.ndim > 1:
            raise ValueError(f"`times` must be at most 1-dimensional, got shape {t.shape}.")
        known, keys = _known(t), _known(self.times)
        if known is not None and keys is not None and (
                _np.any(known < keys[0]) or _np.any(known > keys[-1])):
            raise ValueError("Interpolation times must be within the range "
                             f"[{keys[0]}, {keys[-1]}], both inclusive.")
        # the interval holding each query; the first key time belongs to the first
        last = self.times.shape[0] - 2
        index = _wnp.clip(_wnp.searchsorted(self.times, t) - 1, 0, last)
        alpha = (t - _wnp.take(self.times, index)) / _wnp.take(self.timedelta, index)
        step = Rotation.from_rotvec(_wnp.take(self.rotvecs, index, axis=0) * alpha[..., None])
        return self.rotations[index] * step
