"""Shape primitives the elementwise rules need: broadcasting a value to a shape and summing
it back.  They are each other's transpose, so each one's VJP is the other."""
from __future__ import annotations

import numpy as np

from .registry import defprimitive, shape_of

_F64 = np.dtype(np.float64)


def _sum_to_np(x, shape):
    x = np.asarray(x)
    if len(shape) == 1 and x.ndim == 2 and x.shape[1] == shape[0] and x.dtype == _F64:
        return np.add.reduce(x, axis=0)            # a dense layer's bias: the common case
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and x.shape[lead + i] != 1)
    # (keepdims: an array even where one element is left, so that the reshape is
    # NumPy's also for scalarize's object arrays, whose lone element would be a node)
    return x.sum(axis=axes, keepdims=True).reshape(shape) if axes else x.reshape(shape)


def _broadcast_to_np(x, shape):
    return np.broadcast_to(x, shape).copy()    # writable, like every other result


def _aval(args, params):
    return tuple(params["shape"]), args[0].dtype


sum_to = defprimitive("sum_to", _sum_to_np, cost="add", abstract_eval=_aval, linear=True,
                      complex=True,
                      doc="sum_to(x, shape=s): sum x over the axes broadcasting added.")
broadcast_to = defprimitive("broadcast_to", _broadcast_to_np, cost=None, abstract_eval=_aval,
                            linear=True, complex=True,
                            doc="broadcast_to(x, shape=s): x repeated to shape s.")

sum_to.defjvp(lambda ts, x, ans, shape: sum_to(ts[0], shape=shape))
sum_to.defvjp(lambda g, x, ans, shape: (broadcast_to(g, shape=shape_of(x)),))
broadcast_to.defjvp(lambda ts, x, ans, shape: broadcast_to(ts[0], shape=shape))
broadcast_to.defvjp(lambda g, x, ans, shape: (sum_to(g, shape=shape_of(x)),))

