"""A gather element by element: the primitives `wengert.codegen.scalarize` writes a
gather or scatter at a traced index with, for C, where every element is a scalar.

Every index is checked against its axis once (`checked_index`), then each element of the
result is picked from its lane of the operand by it (`pick`), which C writes as a read of
an array; and put_along_axis, take_along_axis's transpose, becomes for each element of a
lane the sum of what the indices put there (`scatter_sum`), which C writes as a read of a
table the values are added into.  All are elementwise, so vmap and the graph's folding
take them as they take the others.  They appear only in graphs made for code generation,
after every derivative is taken, so they declare no derivative rules (checked_index's
integer result has none to declare).
"""
from __future__ import annotations

import numpy as np

from .array import _checked_index
from .registry import defprimitive


# (not folded: a constant index out of bounds raises when the code runs, as NumPy's would)
checked_index = defprimitive(
    "checked_index", _checked_index, cost="cmp", foldable=False,
    abstract_eval=lambda args, params: (args[0].shape, np.dtype(np.int64)),
    doc="""checked_index(i, size=n): the index i of an axis of length n counted from its
    start (i + n for a negative i, as NumPy reads it); an IndexError where it is outside
    [-n, n).

    Example:
        >>> from wengert.primitives.elements import checked_index
        >>> int(checked_index(-1, size=4)), int(checked_index(2, size=4))
        (3, 2)
    """)
checked_index.elementwise = True
checked_index.defpartials(None)


def _pick_aval(args, params):
    return (np.broadcast_shapes(*[a.shape for a in args]),
            np.result_type(*[a.dtype for a in args[1:]]))


pick = defprimitive(
    "pick", lambda w, *lane: np.choose(w, lane), cost=None, abstract_eval=_pick_aval,
    doc="""pick(w, e0, e1, ...): e_w, the element at index w (from 0, as `checked_index`
    gives it) of the ones that follow: NumPy's choose.

    Example:
        >>> from wengert.primitives.elements import pick
        >>> float(pick(2, 10.0, 11.0, 12.0))
        12.0
    """)
pick.elementwise = True


def _scatter_sum(*args, at, size):
    m = len(args) // 2
    out = 0.0                   # (bincount's start, so that -0.0 added to it is 0.0)
    for w, g in zip(args[:m], args[m:]):
        out = out + np.where(np.asarray(w) == at, g, 0.0)
    return out if np.ndim(out) else out[()]


def _scatter_sum_aval(args, params):
    # (added into float64 zeros, as put_along_axis adds integers and bools)
    return (np.broadcast_shapes(*[a.shape for a in args]),
            np.result_type(np.float64, *[a.dtype for a in args[len(args) // 2:]]))


scatter_sum = defprimitive(
    "scatter_sum", _scatter_sum, cost="add", abstract_eval=_scatter_sum_aval,
    doc="""scatter_sum(w0, w1, ..., g0, g1, ..., at=j, size=n): the sum of the g_k whose
    index w_k (from 0, as `checked_index` gives it, below n) is j, added from 0.0 in
    order: element j of put_along_axis's lane, which C writes as a read of a table the
    g_k are added into.

    Example:
        >>> from wengert.primitives.elements import scatter_sum
        >>> float(scatter_sum(1, 0, 1, 10.0, 20.0, 30.0, at=1, size=2))
        40.0
    """)
scatter_sum.elementwise = True
