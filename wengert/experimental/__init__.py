"""JAX's ``jax.experimental`` modules that programs reach for, with JAX's signatures:

* `wengert.experimental.ode`: ``odeint(func, y0, t, *args, rtol, atol, mxstep, hmax)``,
  an ODE solve differentiable in y0, t and args (SciPy's LSODA underneath, where JAX's is
  Dormand-Prince: the same solution to the tolerances, not the same rounding);
* `wengert.experimental.jet`: ``jet(fun, primals, series)``, Taylor mode (wengert's
  `wg.taylor`) in JAX's derivative-scaled convention;
* `wengert.experimental.shard_map`: JAX's older ``shard_map(f, mesh, in_specs,
  out_specs, check_rep)`` (`wengert.sharding.shard_map`), and
  `wengert.experimental.mesh_utils`: ``create_device_mesh``, on the one device.

So ``from jax.experimental.ode import odeint`` becomes ``from wengert.experimental.ode
import odeint``, and ``import wengert as jax`` programs find ``jax.experimental.ode``.

Example:
    >>> import numpy as np
    >>> from wengert.experimental.ode import odeint
    >>> ys = odeint(lambda y, t, k: -k * y, 1.0, np.array([0.0, 1.0]), 2.0)
    >>> ys.shape, bool(abs(ys[1] - np.exp(-2.0)) < 1e-7)
    ((2,), True)
"""
from . import jet, mesh_utils, ode, shard_map  # noqa: F401

__all__ = ["jet", "ode", "shard_map", "mesh_utils"]
