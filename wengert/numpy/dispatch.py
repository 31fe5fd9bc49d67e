"""Traced values behave like NumPy arrays: methods and properties (``x.T``, ``x.sum()``,
``x[...]``, ``x @ y``), and NumPy's dispatch protocols, so that unmodified code calling
``numpy.sin(x)`` or ``numpy.sum(x)`` on a traced value records it too.

Example:
    >>> import numpy
    >>> import wengert as wg
    >>> wg.grad(lambda x: numpy.sum(numpy.sin(x) ** 2))(numpy.array([0.5, 1.0])).round(4)
    array([0.8415, 0.9093])
"""
from __future__ import annotations

import functools

import numpy as _np

from ..graph.node import Node
from ..primitives import array as A


def unsupported(qualname, fn):
    """`fn` (a NumPy function) for plain values; a clear error for traced ones."""
    from . import _traced

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _traced(*args, *kwargs.values()):
            raise NotImplementedError(
                f"{qualname} is not supported on traced values: wengert has no derivative "
                "rule for it. Write it with supported functions (see docs/numpy.md), or "
                "declare it as a primitive with wg.primitive and its derivative.")
        return fn(*args, **kwargs)
    wrapper.wengert_unsupported = True
    return wrapper


# ---- indexing ---------------------------------------------------------------------------------
def _getitem(x, index):
    if not isinstance(index, tuple):
        index = (index,)
    # a traced index (integers, masks) has no derivative: its value is what matters
    index = tuple(i._concrete("used as an index") if type(i) is Node else i for i in index)
    return A.getitem(x, index=A.encode_index(index if len(index) != 1 else index[0]))


def _iter(x):
    if not x.shape:
        raise TypeError(f"iteration over a scalar traced value {x.label()}")
    for i in range(x.shape[0]):
        yield x[i]


# ---- NumPy's protocols --------------------------------------------------------------------------
def _ufuncs():
    import wengert.numpy as wnp
    table = {}
    for uf in ("add subtract multiply divide true_divide negative power sqrt cbrt exp log "
               "log10 log1p expm1 sin cos tan arcsin arccos arctan arctan2 sinh cosh tanh "
               "absolute fabs sign maximum minimum less less_equal greater greater_equal "
               "equal not_equal square reciprocal isfinite matmul").split():
        table[getattr(_np, uf)] = getattr(wnp, uf)
    table[_np.positive] = lambda x: x
    return table


_REDUCE = {"add": "sum", "multiply": "prod", "maximum": "amax", "minimum": "amin"}


def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    if method == "__call__" and not kwargs:         # `array @ x`, numpy.sin(x): the usual
        fn = _UFUNCS.get(ufunc)
        if fn is not None:
            return fn(*inputs)
    import wengert.numpy as wnp
    if kwargs.get("out") is not None:
        raise NotImplementedError(f"numpy.{ufunc.__name__}(..., out=...) cannot write a "
                                  "traced value into an array")
    if method == "reduce" and ufunc.__name__ in _REDUCE and len(inputs) == 1:
        axis = kwargs.pop("axis", 0)
        keepdims = kwargs.pop("keepdims", False)
        if not kwargs:
            return getattr(wnp, _REDUCE[ufunc.__name__])(inputs[0], axis=axis,
                                                          keepdims=keepdims)
    name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
    raise NotImplementedError(f"numpy.{name} is not supported on traced values: wengert has "
                              "no derivative rule for it (or for these keyword arguments)")


def array_function(self, func, types, args, kwargs):
    import wengert.numpy as wnp
    module = func.__module__ or "numpy"
    namespace = wnp.linalg if module.endswith("linalg") else wnp
    ours = namespace.__dict__.get(func.__name__)
    if ours is None or getattr(ours, "wengert_unsupported", False) or not callable(ours):
        raise NotImplementedError(
            f"{module}.{func.__name__} is not supported on traced values: wengert has no "
            "derivative rule for it")
    return ours(*args, **kwargs)


def _array(self, dtype=None, copy=None):
    # An object array may hold traced values (ADDS keeps its arrays of scalar nodes that
    # way); anything else would be the numbers without their derivative.
    if dtype is not None and _np.dtype(dtype) == object:
        out = _np.empty((), dtype=object)
        out[()] = self
        return out
    _refuse_array(self)


def _refuse_array(self):
    from ..errors import ConcretizationError
    raise ConcretizationError(
        f"traced value {self.label()} was converted to a plain NumPy array, which would drop "
        "its derivative. Use the functions of wengert.numpy on traced values (or NumPy's own "
        "functions, which dispatch to them), or wg.value(x) for the number itself.")


_UFUNCS = {}


def install():
    """Attach the array methods and protocols to Node."""
    import wengert.numpy as wnp
    _UFUNCS.update(_ufuncs())
    methods = {
        "__getitem__": _getitem,
        "__iter__": _iter,
        "__matmul__": wnp.matmul,
        "__rmatmul__": lambda a, b: wnp.matmul(b, a),
        "__array_ufunc__": array_ufunc,
        "__array_function__": array_function,
        "__array__": _array,
        "sum": lambda x, axis=None, keepdims=False: wnp.sum(x, axis, keepdims),
        "mean": lambda x, axis=None, keepdims=False: wnp.mean(x, axis, keepdims),
        "prod": lambda x, axis=None, keepdims=False: wnp.prod(x, axis, keepdims),
        "max": lambda x, axis=None, keepdims=False: wnp.amax(x, axis, keepdims),
        "min": lambda x, axis=None, keepdims=False: wnp.amin(x, axis, keepdims),
        "var": lambda x, axis=None, ddof=0, keepdims=False: wnp.var(x, axis, ddof, keepdims),
        "std": lambda x, axis=None, ddof=0, keepdims=False: wnp.std(x, axis, ddof, keepdims),
        "cumsum": lambda x, axis=None: wnp.cumsum(x, axis),
        "reshape": lambda x, *shape: wnp.reshape(
            x, shape[0] if len(shape) == 1 else shape),
        "transpose": lambda x, *axes: wnp.transpose(
            x, (axes[0] if len(axes) == 1 else axes) or None),
        "swapaxes": lambda x, a, b: wnp.swapaxes(x, a, b),
        "ravel": lambda x: wnp.ravel(x),
        "flatten": lambda x: wnp.ravel(x),
        "squeeze": lambda x, axis=None: wnp.squeeze(x, axis),
        "dot": lambda x, y: wnp.dot(x, y),
        "clip": lambda x, a_min=None, a_max=None: wnp.clip(x, a_min, a_max),
        "copy": lambda x: x,
        "T": property(lambda x: wnp.transpose(x)),
    }
    for name, fn in methods.items():
        setattr(Node, name, fn)
