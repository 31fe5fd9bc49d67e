"""``jax.flatten_util``: `ravel_pytree`, a pytree of arrays as one vector and the function
that rebuilds it (`wengert.tree.ravel_pytree`, under the module name JAX programs import).

Example:
    >>> import numpy as np
    >>> from wengert.flatten_util import ravel_pytree
    >>> v, unravel = ravel_pytree({"w": np.ones((2, 2)), "b": np.zeros(2)})
    >>> v.shape, unravel(v)["w"].shape
    ((6,), (2, 2))
"""
from .tree import ravel_pytree

__all__ = ["ravel_pytree"]
