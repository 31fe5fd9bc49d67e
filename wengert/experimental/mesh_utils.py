"""JAX's ``jax.experimental.mesh_utils``: arrays of devices in a mesh's shape, for
``jax.sharding.Mesh(devices, axis_names)``.  wengert has one device, so a mesh's axes all
have size 1 (see `wengert.sharding.make_mesh`).

Example:
    >>> import wengert as jax
    >>> from wengert.experimental import mesh_utils
    >>> devices = mesh_utils.create_device_mesh((jax.device_count(),))
    >>> jax.sharding.Mesh(devices, ("data",)).shape["data"]
    1
"""
import math

import numpy as np

from ..jax_compat import _CPU, Device

__all__ = ["create_device_mesh"]


def create_device_mesh(mesh_shape, devices=None, *, contiguous_submeshes=False,
                       allow_split_physical_axes=False):
    """The devices as an array of `mesh_shape`, as JAX's ``create_device_mesh``: its
    sizes must multiply to the number of devices, 1 here.

    Example:
        >>> create_device_mesh((1, 1)).shape
        (1, 1)
    """
    shape = tuple(int(s) for s in mesh_shape)
    devices = [_CPU] if devices is None else list(devices)
    if any(not isinstance(d, Device) for d in devices):
        raise ValueError("create_device_mesh: the devices must be jax.devices() (the CPU)")
    if math.prod(shape) != len(devices):
        raise ValueError(f"create_device_mesh: a mesh of shape {shape} needs "
                         f"{math.prod(shape)} devices, and there is {len(devices)} (wengert "
                         "runs on one: every axis has size 1; wg.pmap with an axis_name "
                         "emulates more, see wengert.sharding.make_mesh)")
    return np.array(devices, dtype=object).reshape(shape)
