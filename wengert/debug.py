"""JAX's ``jax.debug``: `print` and `callback`, for looking at values inside transformed
functions.

Where a traced value has its value (an eager `wg.grad`, or everything under
``jax.disable_jit()``) they see it.  A graph traced without values (`wg.jit`, `wg.vmap`,
a `wg.scan` body) keeps only what its outputs need, so it has no place for a print that
runs on every call: there `print` prints once, when the function is traced, with the
shapes and dtypes of its traced arguments (``Traced<f64[3]>``), and `callback` is not
called (a warning says so).  Run the function under ``jax.disable_jit()`` to see values on
every call.

Example:
    >>> import wengert as jax
    >>> jax.grad(lambda x: jax.debug.print("x = {}", x) or x * x)(3.0)
    x = 3.0
    6.0
"""
import builtins
import warnings

from .graph.node import Node
from .graph.node import _type_str
from .tree import flatten, tree_map

__all__ = ["print", "callback"]


class _Traced:
    """A traced value without a value, as `print` shows it (any format spec)."""

    def __init__(self, node):
        self.text = f"Traced<{_type_str(node.shape, node.dtype)}>"

    def __format__(self, spec):
        return self.text

    def __repr__(self):
        return self.text


def _shown(x):
    if type(x) is Node:
        return x.value if x.value is not None else _Traced(x)
    return x


def print(fmt, *args, ordered=False, partitioned=False, skip_format_check=False, **kwargs):
    """JAX's ``jax.debug.print``: ``print(fmt.format(*args, **kwargs))`` with the values of
    traced arguments where they have values, their shapes where they have none (see the
    module: under `wg.jit` it prints once, when traced).  ``ordered`` and
    ``partitioned`` are accepted: calls print in program order on one CPU.

    Example:
        >>> import numpy as np, wengert as jax
        >>> jax.debug.print("norm {n:.3f}", n=np.linalg.norm(np.ones(4)))
        norm 2.000
        >>> f = jax.jit(lambda x: jax.debug.print("x is {}", x) or 2 * x)
        >>> f(np.ones(3))                     # printed once, while traced
        x is Traced<f64[3]>
        array([2., 2., 2.])
    """
    if not isinstance(fmt, str):
        raise TypeError(f"debug.print: the format must be a string, got {type(fmt).__name__}")
    args, kwargs = tree_map(_shown, (args, kwargs))
    builtins.print(fmt.format(*args, **kwargs))


def callback(callback, *args, ordered=False, partitioned=False, **kwargs):
    """JAX's ``jax.debug.callback``: ``callback(*args, **kwargs)`` for its side effects,
    with the values of traced arguments.  Where a traced argument has no value (under
    `wg.jit`, `wg.vmap`), the callback is not called, with a warning (see the module).
    Returns None.

    Example:
        >>> import wengert as jax
        >>> seen = []
        >>> jax.grad(lambda x: jax.debug.callback(seen.append, x) or x ** 2)(3.0)
        6.0
        >>> seen
        [3.0]
    """
    if not callable(callback):
        raise TypeError(f"debug.callback expects a function, got {type(callback).__name__}")
    args, kwargs = tree_map(_shown, (args, kwargs))
    if any(isinstance(x, _Traced) for x in flatten((args, kwargs))[0]):
        warnings.warn("debug.callback: its arguments are traced without values (under "
                      "jit or vmap), so it is not called; run under jax.disable_jit() to "
                      "call it with values", stacklevel=2)
        return None
    callback(*args, **kwargs)
    return None
