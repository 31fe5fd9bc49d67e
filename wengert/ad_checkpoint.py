"""JAX's ``jax.ad_checkpoint``: `checkpoint` (`remat`) and its policies, and
`checkpoint_name`, the names that JAX's policies ``save_only_these_names(...)`` and the
like refer to.

wengert's checkpoint keeps none of f's intermediates whatever the policy (but
``everything_saveable``: see `wengert.checkpointing.checkpoint_policies`), so a name
changes no result: `checkpoint_name` is the identity, as JAX's is outside a policy.

Example:
    >>> import wengert as jax, wengert.numpy as jnp
    >>> from wengert.ad_checkpoint import checkpoint_name
    >>> def f(x):
    ...     h = checkpoint_name(jnp.sin(x), name="h")
    ...     return jnp.sin(h)
    >>> policy = jax.checkpoint_policies.save_only_these_names("h")
    >>> round(float(jax.grad(jax.checkpoint(f, policy=policy))(1.0)), 6)
    0.360039
"""
from __future__ import annotations

from .checkpointing import checkpoint, checkpoint_policies, remat

__all__ = ["checkpoint", "remat", "checkpoint_policies", "checkpoint_name",
           "print_saved_residuals"]


def checkpoint_name(x, name):
    """x itself, as JAX's ``jax.ad_checkpoint.checkpoint_name(x, name)``: a name for a
    checkpoint policy, which wengert accepts and does not follow (see the module).

    Example:
        >>> checkpoint_name(2.0, "h")
        2.0
    """
    if not isinstance(name, str):
        raise TypeError(f"checkpoint_name: name must be a str, got {type(name).__name__}")
    return x


def print_saved_residuals(f, *args, **kwargs):
    """JAX's diagnostic of which values its reverse mode saves; not offered: wengert keeps
    values by another plan (an eager gradient keeps every value the rules read, a
    `checkpoint` only f's arguments and result, a compiled one what its generated code
    holds), which has no list of residuals to print.  Raises NotImplementedError.

    Example:
        >>> print_saved_residuals(lambda x: x * x, 1.0)
        Traceback (most recent call last):
        ...
        NotImplementedError: print_saved_residuals: wengert has no list of saved residuals ...
    """
    raise NotImplementedError(
        "print_saved_residuals: wengert has no list of saved residuals to print (an eager "
        "gradient keeps every value its rules read, a checkpoint only its function's "
        "arguments and result); wg.trace(f, *args) prints the graph, and "
        "wg.make_jaxpr(wg.grad(f))(*args) the gradient's")
