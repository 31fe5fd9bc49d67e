"""JAX's older ``jax.experimental.shard_map.shard_map(f, mesh, in_specs, out_specs,
check_rep=True, auto=frozenset())``, deprecated in JAX for ``jax.shard_map``: the same
function (`wengert.sharding.shard_map`) with the old signature, so programs written for
it run.  ``check_rep`` is ``check_vma``; ``auto`` names the mesh axes f is *not* manual
over (the others are).

Example:
    >>> import numpy as np, wengert as jax
    >>> from wengert.experimental.shard_map import shard_map
    >>> mesh = jax.make_mesh((1,), ("i",))
    >>> shard_map(lambda x: jax.lax.psum(x, "i"), mesh, jax.P("i"), jax.P())(np.ones(2))
    array([1., 1.])
"""
from ..sharding import shard_map as _shard_map

__all__ = ["shard_map"]


def shard_map(f, mesh, in_specs, out_specs, check_rep=True, auto=frozenset()):
    """`wengert.sharding.shard_map` with JAX's older, positional signature: f manual over
    every mesh axis but those in `auto`, ``check_rep`` for ``check_vma``.

    Example:
        >>> import numpy as np, wengert as jax
        >>> mesh = jax.make_mesh((1,), ("i",))
        >>> shard_map(lambda x: 2 * x, mesh, jax.P("i"), jax.P("i"))(np.ones(2))
        array([2., 2.])
    """
    auto = frozenset(auto)
    unknown = auto - set(getattr(mesh, "axis_names", ()))
    if unknown:
        raise ValueError(f"shard_map: auto names {sorted(unknown, key=str)}, which the mesh "
                         f"does not have (its axes: {getattr(mesh, 'axis_names', ())})")
    manual = frozenset(n for n in getattr(mesh, "axis_names", ()) if n not in auto) \
        if auto else frozenset()
    return _shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                      axis_names=manual, check_vma=check_rep)
