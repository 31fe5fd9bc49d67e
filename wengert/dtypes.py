"""JAX's ``jax.dtypes``: dtypes are NumPy's, and 64-bit by default (JAX's with
``jax_enable_x64``), so canonicalising changes nothing.

Example:
    >>> import numpy as np, wengert as jax
    >>> jax.dtypes.canonicalize_dtype(np.float64), jax.dtypes.float0.itemsize
    (dtype('float64'), 0)
"""
import numpy as _np

from .jax_compat import float0

__all__ = ["canonicalize_dtype", "float0", "issubdtype", "result_type", "finfo", "iinfo",
           "scalar_type_of"]

issubdtype = _np.issubdtype
finfo = _np.finfo
iinfo = _np.iinfo


def canonicalize_dtype(dtype, allow_extended_dtype=False):
    """JAX's ``dtypes.canonicalize_dtype``: the dtype wengert computes in for `dtype`,
    which is `dtype` itself (JAX with ``jax_enable_x64`` keeps 64-bit types too).

    Example:
        >>> import numpy as np
        >>> canonicalize_dtype(np.int64), canonicalize_dtype(float)
        (dtype('int64'), dtype('float64'))
    """
    if dtype is None:
        raise TypeError("canonicalize_dtype: dtype must be a dtype, got None")
    return _np.dtype(dtype)


def result_type(*args, return_weak_type_flag=False):
    """JAX's ``dtypes.result_type``: NumPy 2's promotion of the arguments' dtypes (Python
    numbers give way to arrays, as in JAX); with ``return_weak_type_flag=True`` also
    whether all arguments were Python numbers.

    Example:
        >>> import numpy as np
        >>> result_type(np.ones(2, np.float32), 2.0)
        dtype('float32')
    """
    dtype = _np.result_type(*args)
    if return_weak_type_flag:
        weak = bool(args) and all(type(a) in (int, float, complex) for a in args)
        return dtype, weak
    return dtype


def scalar_type_of(x):
    """JAX's ``dtypes.scalar_type_of``: the Python type of x's elements (bool, int, float
    or complex).

    Example:
        >>> import numpy as np
        >>> scalar_type_of(np.ones(2, np.float32)), scalar_type_of(3)
        (<class 'float'>, <class 'int'>)
    """
    kind = _np.result_type(x).kind
    return {"b": bool, "i": int, "u": int, "f": float, "c": complex}[kind]
