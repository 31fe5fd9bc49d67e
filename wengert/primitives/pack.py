"""Several values in one flat array, and back.

A graph node has one value; a checkpointed call (`wg.checkpoint`) returns several.  Its
node holds them packed end to end in one flat array, and `part` hands each one out.
`part` and `place` are linear and each other's transpose, so each one's JVP is itself and
its VJP is the other: the cotangents of the parts add up, in the reverse sweep's usual
way, into one cotangent for the packed array.
"""
from __future__ import annotations

import numpy as np

from .registry import defprimitive, shape_of


def _part_np(x, start, stop, shape):
    out = np.asarray(x)[start:stop].reshape(shape)
    return out[()] if shape == () else out.copy()


def _place_np(x, start, size):
    x = np.asarray(x)
    out = np.zeros(size, dtype=x.dtype)
    out[start:start + x.size] = x.ravel()
    return out


# (linear maps that copy numbers: their rules hold for complex values as written)
part = defprimitive(
    "part", _part_np, cost=None, linear=True, complex=True,
    abstract_eval=lambda args, params: (tuple(params["shape"]), args[0].dtype),
    doc="""part(x, start=i, stop=j, shape=s): the flat slice x[i:j] reshaped to s.

    Example:
        >>> from wengert.primitives.pack import part
        >>> import numpy as np
        >>> part(np.arange(5.0), start=1, stop=3, shape=(2,))
        array([1., 2.])
    """)
place = defprimitive(
    "place", _place_np, cost=None, linear=True, complex=True,
    abstract_eval=lambda args, params: ((params["size"],), args[0].dtype),
    doc="""place(x, start=i, size=n): zeros of length n with x, flattened, at i.

    Example:
        >>> from wengert.primitives.pack import place
        >>> place(7.0, start=1, size=3)
        array([0., 7., 0.])
    """)

part.defjvp(lambda ts, x, ans, start, stop, shape:
            part(ts[0], start=start, stop=stop, shape=shape))
part.defvjp(lambda g, x, ans, start, stop, shape:
            (place(g, start=start, size=shape_of(x)[0]),))
place.defjvp(lambda ts, x, ans, start, size: place(ts[0], start=start, size=size))
place.defvjp(lambda g, x, ans, start, size:
             (part(g, start=start, stop=start + int(np.prod(shape_of(x), dtype=np.int64)),
                   shape=shape_of(x)),))
