"""Several values in one flat array, and back.

A graph node has one value; a checkpointed call (`wg.checkpoint`) returns several.  Its
node holds them packed end to end in one flat array, and `part` hands each one out.
`part` and `place` are linear and each other's transpose, so each one's JVP is itself and
its VJP is the other: the cotangents of the parts add up, in the reverse sweep's usual
way, into one cotangent for the packed array.
"""
from __future__ import annotations

import numpy as np

from ..graph.node import Node
from .array import astype, concatenate, dtype_of, reshape
from .registry import defprimitive, shape_of
from .scalar import real_part


def _part_np(x, start, stop, shape):
    x = np.asarray(x)
    out = x[start:stop].reshape(shape)
    if shape == ():
        return out[()]
    # A view saves copying a large part (a loop's stacked residuals: megabytes), but keeps
    # the whole pack alive as long as the part is: so only a quarter of the pack or more.
    return out if 4 * out.size >= x.size else out.copy()


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

def _bitcast_np(x, dtype):
    a = np.asarray(x)
    out = (a if a.flags.c_contiguous else a.copy()).view(dtype)
    return out[()] if out.ndim == 0 else out


# (a 64-bit integer above 2**53 has no float64 of its value, so a pack of floats holds
# its bits instead: packing only copies, and the bits come back unchanged)
bitcast = defprimitive(
    "bitcast", _bitcast_np, cost=None,
    abstract_eval=lambda args, params: (args[0].shape, np.dtype(params["dtype"])),
    doc="""bitcast(x, dtype=d): x's bits read as dtype d, of the same item size (NumPy's
    ``x.view(d)``): how `Layout` packs 64-bit integers among float64 values.  Integer
    bits carry no derivative.

    Example:
        >>> import numpy as np
        >>> from wengert.primitives.pack import bitcast
        >>> big = np.uint64(2**64 - 1)
        >>> bitcast(bitcast(big, dtype="float64"), dtype="uint64") == big
        True
    """)
bitcast.defpartials(None)

part.defjvp(lambda ts, x, ans, start, stop, shape:
            part(ts[0], start=start, stop=stop, shape=shape))
part.defvjp(lambda g, x, ans, start, stop, shape:
            (place(g, start=start, size=shape_of(x)[0]),))
place.defjvp(lambda ts, x, ans, start, size: place(ts[0], start=start, size=size))
place.defvjp(lambda g, x, ans, start, size:
             (part(g, start=start, stop=start + int(np.prod(shape_of(x), dtype=np.int64)),
                   shape=shape_of(x)),))


class Layout:
    """Where each of several values sits in one packed flat array, and how to put them
    there and take them out: the layout of a checkpointed call's results
    (`wengert.checkpointing`) and of a scan's (`wengert.loops`).

    One value is its own pack.  Several are raveled end to end in their common dtype;
    integer and boolean values ride along as floats (exact below 2**53) and `unpack`
    gives each its own dtype back.  64-bit integers ride along as their bits (`bitcast`;
    in a complex pack, as real parts), exact beyond 2**53 (a loop's hash or random state).

    Example:
        >>> import numpy as np
        >>> from wengert.primitives.pack import Layout
        >>> layout = Layout([((2,), np.dtype(float)), ((), np.dtype(float))])
        >>> packed = layout.pack([np.array([1.0, 2.0]), 3.0])
        >>> packed, layout.unpack(packed)[1]
        (array([1., 2., 3.]), 3.0)
    """

    def __init__(self, avals):
        self.shapes = [tuple(int(d) for d in s) for s, _ in avals]
        self.dtypes = [np.dtype(d) for _, d in avals]
        self.spans, start = [], 0
        for shape in self.shapes:
            size = int(np.prod(shape, dtype=np.int64))
            self.spans.append((start, start + size))
            start += size
        self.size = start
        dtype = np.result_type(*self.dtypes)
        self.dtype = dtype if dtype.kind in "fc" or len(self.dtypes) == 1 else np.dtype(float)
        # (a complex128 pack holds them as the real parts: a copy keeps the bits)
        self.bits = [len(self.dtypes) > 1 and self.dtype in (np.float64, np.complex128) and
                     d.kind in "iu" and d.itemsize == 8 for d in self.dtypes]
        self._numbers = all(s == () for s in self.shapes) and not any(self.bits)

    def __len__(self):
        return len(self.shapes)

    def aval(self):
        """(shape, dtype) of the packed value."""
        if len(self.shapes) == 1:
            return self.shapes[0], self.dtypes[0]
        return (self.size,), self.dtype

    def pack(self, values, out=None):
        """The values (arrays, numbers or traced values) as one packed value.  `out`: the
        array to pack them in, from `places`; a value that is its place there already is
        not copied again.
        """
        if len(self.shapes) == 1:
            return values[0]
        if any(type(v) is Node for v in values):      # symbolic: a sum of placed nodes
            total = None
            for k, (v, (start, _)) in enumerate(zip(values, self.spans)):
                p = place(self._as_bits(k, v), start=start, size=self.size)
                total = p if total is None else total + p
            return total
        if out is None and self._numbers:
            # (scalars only, a while loop's carry say: one conversion, where a slice
            # assignment costs about a microsecond a value)
            return np.array(values, self.dtype)
        if out is None:
            out = np.empty(self.size, self.dtype)
        for k, (v, (a, b)) in enumerate(zip(values, self.spans)):
            if self.bits[k]:
                out[a:b] = np.asarray(v, self.dtypes[k]).ravel().view(np.float64)
            elif type(v) is not np.ndarray or v.base is not out:
                out[a:b] = np.ravel(v)
        return out

    def _as_bits(self, k, v):
        """Value k as the pack holds it: a 64-bit integer's bits as float64 (a zero
        derivative given as floats is its bits already)."""
        if self.bits[k] and dtype_of(v).kind in "iu":
            return bitcast(astype(v, dtype=self.dtypes[k]), dtype="float64")
        return v

    def places(self):
        """An array to pack in, and each value's place in it: an array of the value's
        shape to write it into (a view of the pack), or None where the value's dtype is
        not the pack's.  A producer that writes its values there saves `pack` a copy.

        Example:
            >>> import numpy as np
            >>> from wengert.primitives.pack import Layout
            >>> layout = Layout([((2,), np.dtype(float)), ((), np.dtype(float))])
            >>> out, (a, b) = layout.places()
            >>> a[:] = [1.0, 2.0]
            >>> layout.pack([a, 3.0], out)
            array([1., 2., 3.])
        """
        if len(self.shapes) == 1:
            out = np.empty(self.shapes[0], self.dtypes[0])
            return out, [out]
        out = np.empty(self.size, self.dtype)
        return out, [out[a:b].reshape(shape) if dtype == self.dtype else None
                     for (a, b), shape, dtype in zip(self.spans, self.shapes, self.dtypes)]

    def pack_batch(self, values, size):
        """Values with a leading batch axis of `size` (wg.vmap's), packed example by
        example: the value of the batched node, ``size`` packs in a row."""
        if len(self.shapes) == 1:
            return values[0]
        # (each example's size spelled out: -1 is undefined in a batch of none)
        return concatenate(*[reshape(self._as_bits(k, v), shape=(size, b - a))
                             for k, (v, (a, b)) in enumerate(zip(values, self.spans))],
                           axis=1)

    def unpack(self, packed):
        """The packed value (or its node) as the list of values."""
        if len(self.shapes) == 1:
            return [packed]
        values = []
        for (a, b), shape, dtype, bits in zip(self.spans, self.shapes, self.dtypes,
                                              self.bits):
            v = part(packed, start=a, stop=b, shape=shape)
            if bits:
                if self.dtype.kind == "c":
                    v = real_part(v)
                values.append(bitcast(v, dtype=dtype.name))
                continue
            if dtype.kind != "c" and self.dtype.kind == "c":     # a real value, complex pack
                v = real_part(v)
            values.append(v if dtype_of(v) == dtype else astype(v, dtype=dtype))
        return values
