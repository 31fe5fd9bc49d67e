"""wengert.numpy: NumPy's interface, differentiable.

Write ``import wengert.numpy as np`` where you would write ``import numpy as np`` (or
``autograd.numpy``): the functions take traced values and plain arrays alike, with NumPy's
semantics (broadcasting, dtype promotion, ``axis`` and ``keepdims``, negative axes).  On
plain arrays they *are* NumPy's functions; on traced values they record primitives whose
derivatives are linear maps.

NumPy's own functions work on traced values too (``numpy.sin(x)``, ``numpy.sum(x)``),
through NumPy's dispatch protocols.  A NumPy function wengert has no rule for raises
`NotImplementedError` naming it when it meets a traced value — never a silent wrong
derivative.  ``wengert.numpy.random`` is NumPy's.

Example:
    >>> import wengert as wg
    >>> import wengert.numpy as np
    >>> def loss(w, x, y):
    ...     return np.mean((np.tanh(x @ w) - y) ** 2)
    >>> x = np.ones((4, 3)); y = np.zeros(4); w = np.array([0.1, -0.2, 0.3])
    >>> wg.grad(loss)(w, x, y).shape
    (3,)
"""
from __future__ import annotations

import builtins
import math as _math

import numpy as _np

from ..graph.node import Node
from ..primitives import array as A
from ..primitives import scalar as S
from ..primitives import shape as SH

random = _np.random
newaxis = None
pi, e, inf, nan = _np.pi, _np.e, _np.inf, _np.nan
ndarray = _np.ndarray
float64, float32, int64, int32 = _np.float64, _np.float32, _np.int64, _np.int32


def _traced(*xs) -> bool:
    for x in xs:
        if type(x) is Node:
            return True
        if type(x) in (list, tuple) and _traced(*x):
            return True
    return False


def _shape(x):
    return x.shape if type(x) is Node else _np.shape(x)


def _norm_axis(axis, ndim, name):
    """None, or a sorted tuple of non-negative axes (NumPy's AxisError if out of range)."""
    if axis is None:
        return None
    axes = (axis,) if isinstance(axis, (int, _np.integer)) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise _np.exceptions.AxisError(
                f"{name}: axis {a} is out of bounds for an array of dimension {ndim}")
        out.append(int(a) % ndim)
    return tuple(sorted(out))


def _one_axis(axis, ndim, name):
    return _norm_axis(axis, ndim, name)[0]


# ---- elementwise: the scalar primitives as ufuncs ------------------------------------------
add, subtract, multiply = S.add, S.sub, S.mul
divide = true_divide = S.div
negative = S.neg
sqrt, cbrt, exp, log, log10, log1p, expm1 = S.sqrt, S.cbrt, S.exp, S.log, S.log10, \
    S.log1p, S.expm1
sin, cos, tan = S.sin, S.cos, S.tan
arcsin, arccos, arctan, arctan2 = S.asin, S.acos, S.atan, S.atan2
sinh, cosh, tanh = S.sinh, S.cosh, S.tanh
abs = absolute = fabs = S.abs
sign = S.sign
maximum, minimum = S.maximum, S.minimum
less, less_equal, greater, greater_equal, equal, not_equal = S.lt, S.le, S.gt, S.ge, S.eq, S.ne
stop_gradient = S.stop_gradient


def power(x, y):
    """``x ** y`` elementwise (integer exponents exactly, any sign of x)."""
    return S.power(x, y)


def square(x):
    """``x ** 2`` elementwise."""
    return S.power(x, 2)


def reciprocal(x):
    """``1 / x`` elementwise."""
    return S.div(1.0, x)


def where(condition, x=None, y=None):
    """``x`` where ``condition`` holds, else ``y`` (elementwise); the derivative flows
    through the branch selected.  With one argument, NumPy's index form (not traced)."""
    if x is None and y is None:
        return _np.where(_value_of(condition))
    return S.select(condition, x, y)


def clip(a, a_min=None, a_max=None):
    """``a`` limited to ``[a_min, a_max]``; the derivative is 1 inside, 0 where clipped."""
    if not _traced(a, a_min, a_max):
        return _np.clip(a, a_min, a_max)
    if a_min is not None:
        a = S.maximum(a, a_min)
    if a_max is not None:
        a = S.minimum(a, a_max)
    return a


def _value_of(x):
    if type(x) is Node:
        return x._concrete("used as an index")
    return x


# ---- reductions ----------------------------------------------------------------------------
def _reduction(prim, npfn):
    def reduce(a, axis=None, keepdims=False):
        if type(a) is not Node:
            return npfn(a, axis=axis, keepdims=keepdims)
        return prim(a, axis=_norm_axis(axis, a.ndim, prim.name), keepdims=bool(keepdims))
    reduce.__name__ = npfn.__name__
    reduce.__doc__ = f"NumPy's ``{npfn.__name__}``, differentiable."
    return reduce


sum = _reduction(A.sum, _np.sum)
prod = _reduction(A.prod, _np.prod)
max = amax = _reduction(A.amax, _np.max)
min = amin = _reduction(A.amin, _np.min)


def mean(a, axis=None, keepdims=False):
    """NumPy's ``mean``, differentiable."""
    if type(a) is not Node:
        return _np.mean(a, axis=axis, keepdims=keepdims)
    axes = _norm_axis(axis, a.ndim, "mean")
    n = a.size if axes is None else _math.prod([a.shape[i] for i in axes])
    return sum(a, axis=axes, keepdims=keepdims) / n


def var(a, axis=None, ddof=0, keepdims=False):
    """NumPy's ``var``, differentiable."""
    if type(a) is not Node:
        return _np.var(a, axis=axis, ddof=ddof, keepdims=keepdims)
    axes = _norm_axis(axis, a.ndim, "var")
    n = a.size if axes is None else _math.prod([a.shape[i] for i in axes])
    d = a - mean(a, axis=axes, keepdims=True)
    return sum(d * d, axis=axes, keepdims=keepdims) / (n - ddof)


def std(a, axis=None, ddof=0, keepdims=False):
    """NumPy's ``std``, differentiable."""
    if type(a) is not Node:
        return _np.std(a, axis=axis, ddof=ddof, keepdims=keepdims)
    return sqrt(var(a, axis=axis, ddof=ddof, keepdims=keepdims))


def logsumexp(a, axis=None, keepdims=False):
    """``log(sum(exp(a)))`` computed stably (as scipy.special.logsumexp); its gradient is
    the softmax.  One primitive, with its own derivative rules."""
    axes = _norm_axis(axis, len(_shape(a)), "logsumexp")
    return A.logsumexp(a, axis=axes, keepdims=bool(keepdims))


def cumsum(a, axis=None):
    """NumPy's ``cumsum``, differentiable (over the flattened array when axis is None)."""
    if type(a) is not Node:
        return _np.cumsum(a, axis=axis)
    if axis is None:
        a, axis = ravel(a), 0
    return A.cumsum(a, axis=_one_axis(axis, a.ndim, "cumsum"))


# ---- shapes --------------------------------------------------------------------------------
def reshape(a, newshape, order="C"):
    """NumPy's ``reshape`` (C order), differentiable; one dimension may be -1."""
    if order != "C":
        raise NotImplementedError("wengert.numpy.reshape supports order='C' only")
    if type(a) is not Node:
        return _np.reshape(a, newshape)
    if isinstance(newshape, (int, _np.integer)):
        newshape = (newshape,)
    shape = _np.empty(a.shape, dtype=_np.bool_).reshape(newshape).shape   # resolves -1
    return A.reshape(a, shape=tuple(shape))


def ravel(a):
    """NumPy's ``ravel``, differentiable."""
    return reshape(a, -1) if type(a) is Node else _np.ravel(a)


def transpose(a, axes=None):
    """NumPy's ``transpose``, differentiable."""
    if type(a) is not Node:
        return _np.transpose(a, axes)
    n = a.ndim
    axes = tuple(reversed(range(n))) if axes is None else tuple(int(x) % n for x in axes)
    if sorted(axes) != list(range(n)):
        raise ValueError(f"transpose: axes {axes} don't match an array of shape {a.shape}")
    return A.transpose(a, axes=axes)


def swapaxes(a, axis1, axis2):
    """NumPy's ``swapaxes``, differentiable."""
    if type(a) is not Node:
        return _np.swapaxes(a, axis1, axis2)
    axes = list(range(a.ndim))
    i, j = _one_axis(axis1, a.ndim, "swapaxes"), _one_axis(axis2, a.ndim, "swapaxes")
    axes[i], axes[j] = axes[j], axes[i]
    return A.transpose(a, axes=tuple(axes))


def moveaxis(a, source, destination):
    """NumPy's ``moveaxis``, differentiable."""
    if type(a) is not Node:
        return _np.moveaxis(a, source, destination)
    src, dst = _norm_list(source, a.ndim), _norm_list(destination, a.ndim)
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination need the same number of axes")
    order = [i for i in range(a.ndim) if i not in src]
    for d, s_ in sorted(zip(dst, src)):
        order.insert(d, s_)
    return A.transpose(a, axes=tuple(order))


def _norm_list(axes, ndim):
    axes = [axes] if isinstance(axes, (int, _np.integer)) else list(axes)
    return [int(x) % ndim for x in axes]


def squeeze(a, axis=None):
    """NumPy's ``squeeze``, differentiable."""
    if type(a) is not Node:
        return _np.squeeze(a, axis)
    return A.reshape(a, shape=_np.squeeze(_np.empty(a.shape, _np.bool_), axis).shape)


def expand_dims(a, axis):
    """NumPy's ``expand_dims``, differentiable."""
    if type(a) is not Node:
        return _np.expand_dims(a, axis)
    return A.reshape(a, shape=_np.expand_dims(_np.empty(a.shape, _np.bool_), axis).shape)


def broadcast_to(a, shape):
    """NumPy's ``broadcast_to`` (returning a new array), differentiable."""
    if type(a) is not Node:
        return _np.broadcast_to(a, shape)
    shape = (shape,) if isinstance(shape, (int, _np.integer)) else tuple(shape)
    _np.broadcast_shapes(a.shape, shape)     # NumPy's error if it cannot
    return SH.broadcast_to(a, shape=shape)


def concatenate(arrays, axis=0):
    """NumPy's ``concatenate``, differentiable."""
    arrays = list(arrays)
    if not _traced(*arrays):
        return _np.concatenate(arrays, axis=axis)
    if axis is None:
        return concatenate([ravel(x) for x in arrays], axis=0)
    nd = len(_shape(arrays[0]))
    return A.concatenate(*arrays, axis=_one_axis(axis, nd, "concatenate"))


def stack(arrays, axis=0):
    """NumPy's ``stack``, differentiable."""
    arrays = list(arrays)
    if not _traced(*arrays):
        return _np.stack(arrays, axis=axis)
    shapes = {tuple(_shape(x)) for x in arrays}
    if len(shapes) != 1:
        raise ValueError(f"stack: all arrays must have the same shape, got "
                         f"{' and '.join(map(str, sorted(shapes)))}")
    nd = len(shapes.pop()) + 1
    ax = _one_axis(axis, nd, "stack")
    return concatenate([expand_dims(x, ax) for x in arrays], axis=ax)


def hstack(arrays):
    """NumPy's ``hstack``, differentiable."""
    arrays = [atleast_1d(x) for x in arrays]
    return concatenate(arrays, axis=0 if len(_shape(arrays[0])) == 1 else 1)


def vstack(arrays):
    """NumPy's ``vstack``, differentiable."""
    return concatenate([atleast_2d(x) for x in arrays], axis=0)


def atleast_1d(a):
    return reshape(a, (1,)) if len(_shape(a)) == 0 else a


def atleast_2d(a):
    a = atleast_1d(a)
    return reshape(a, (1,) + tuple(_shape(a))) if len(_shape(a)) == 1 else a


def split(a, indices_or_sections, axis=0):
    """NumPy's ``split``, differentiable: a list of pieces."""
    if type(a) is not Node:
        return _np.split(a, indices_or_sections, axis=axis)
    ax = _one_axis(axis, a.ndim, "split")
    n = a.shape[ax]
    if isinstance(indices_or_sections, (int, _np.integer)):
        if n % indices_or_sections:
            raise ValueError(f"split: an axis of length {n} does not divide into "
                             f"{indices_or_sections} equal sections")
        step = n // indices_or_sections
        bounds = list(range(0, n + 1, step))
    else:
        bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    pre = (slice(None),) * ax
    return [a[pre + (slice(lo, hi),)] for lo, hi in zip(bounds[:-1], bounds[1:])]


def flip(a, axis=None):
    """NumPy's ``flip``, differentiable."""
    if type(a) is not Node:
        return _np.flip(a, axis)
    axes = tuple(range(a.ndim)) if axis is None else _norm_axis(axis, a.ndim, "flip")
    return A.flip(a, axes=axes)


def roll(a, shift, axis=None):
    """NumPy's ``roll``, differentiable."""
    if type(a) is not Node:
        return _np.roll(a, shift, axis)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), a.shape)
    axes = (axis,) if isinstance(axis, (int, _np.integer)) else tuple(axis)
    shifts = (shift,) * len(axes) if isinstance(shift, (int, _np.integer)) else tuple(shift)
    return A.roll(a, shift=tuple(int(s) for s in shifts),
                  axis=tuple(int(x) % a.ndim for x in axes))


def tile(a, reps):
    """NumPy's ``tile``, differentiable."""
    if type(a) is not Node:
        return _np.tile(a, reps)
    reps = (reps,) if isinstance(reps, (int, _np.integer)) else tuple(reps)
    nd = builtins.max(len(reps), a.ndim)
    shape = (1,) * (nd - a.ndim) + a.shape
    reps = (1,) * (nd - len(reps)) + reps
    # (r0, s0, r1, s1, ...) by broadcasting, then merged pairwise
    x = reshape(a, tuple(v for d in shape for v in (1, d)))
    x = broadcast_to(x, tuple(v for r, d in zip(reps, shape) for v in (r, d)))
    return reshape(x, tuple(r * d for r, d in zip(reps, shape)))


def repeat(a, repeats, axis=None):
    """NumPy's ``repeat``, differentiable."""
    if type(a) is not Node:
        return _np.repeat(a, repeats, axis)
    if axis is None:
        a, axis = ravel(a), 0
    ax = _one_axis(axis, a.ndim, "repeat")
    idx = _np.repeat(_np.arange(a.shape[ax]), repeats)
    return a[(slice(None),) * ax + (idx,)]


def pad(array, pad_width, mode="constant", constant_values=0):
    """NumPy's ``pad`` in mode 'constant', differentiable in the array."""
    if type(array) is not Node:
        return _np.pad(array, pad_width, mode=mode, constant_values=constant_values)
    if mode != "constant":
        raise NotImplementedError(f"wengert.numpy.pad: mode {mode!r} is not supported on "
                                  "traced values (only 'constant')")
    widths = tuple((int(lo), int(hi)) for lo, hi in
                   _np.broadcast_to(_np.asarray(pad_width), (array.ndim, 2)))
    out = A.pad(array, pad_width=widths)
    if constant_values != 0:
        out = out + _np.pad(_np.zeros(array.shape), widths, constant_values=constant_values)
    return out


# ---- contractions --------------------------------------------------------------------------
def matmul(a, b):
    """NumPy's ``matmul`` (``a @ b``), differentiable; seed 000's rule X̄ = Z̄Yᵀ, Ȳ = XᵀZ̄."""
    if type(a) is not Node and type(b) is not Node and not _traced(a, b):
        return _np.matmul(a, b)
    sa = a.shape if type(a) is Node or type(a) is _np.ndarray else _np.shape(a)
    sb = b.shape if type(b) is Node or type(b) is _np.ndarray else _np.shape(b)
    if not sa or not sb:
        raise ValueError(f"matmul: operands must have at least one dimension, got shapes "
                         f"{sa} and {sb}")
    if sa[-1] != (sb[0] if len(sb) == 1 else sb[-2]):
        raise ValueError(f"matmul: shapes {sa} and {sb} do not align "
                         f"({sa[-1]} != {sb[0] if len(sb) == 1 else sb[-2]})")
    # the layers of a network, data or nodes into nodes of one graph: no graph search
    if type(b) is Node and (type(a) is _np.ndarray or type(a) is Node and a.graph is b.graph):
        return b.graph.apply(A.matmul, (a, b))
    return A.matmul(a, b)


def dot(a, b):
    """NumPy's ``dot``, differentiable."""
    if not _traced(a, b):
        return _np.dot(a, b)
    na, nb = len(_shape(a)), len(_shape(b))
    if na == 0 or nb == 0:
        return multiply(a, b)
    if na <= 2 and nb <= 2:
        return matmul(a, b)
    return tensordot(a, b, axes=([na - 1], [builtins.max(nb - 2, 0)]))


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def tensordot(a, b, axes=2):
    """NumPy's ``tensordot``, differentiable (as an einsum)."""
    if not _traced(a, b):
        return _np.tensordot(a, b, axes)
    na, nb = len(_shape(a)), len(_shape(b))
    if isinstance(axes, (int, _np.integer)):
        ax_a, ax_b = list(range(na - axes, na)), list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, (int, _np.integer)) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, (int, _np.integer)) else list(ax_b)
        ax_a, ax_b = [x % na for x in ax_a], [x % nb for x in ax_b]
    sa = list(_LETTERS[:na])
    sb = list(_LETTERS[na:na + nb])
    for i, j in zip(ax_a, ax_b):
        sb[j] = sa[i]
    out = [c for i, c in enumerate(sa) if i not in ax_a] + \
          [c for j, c in enumerate(sb) if j not in ax_b]
    return A.einsum(a, b, subscripts=f"{''.join(sa)},{''.join(sb)}->{''.join(out)}")


def einsum(subscripts, *operands):
    """NumPy's ``einsum``, differentiable (explicit or implicit output, ``...`` allowed)."""
    if not _traced(*operands):
        return _np.einsum(subscripts, *operands)
    subscripts = subscripts.replace(" ", "")
    ins, arrow, out = subscripts.partition("->")
    ins = ins.split(",")
    if len(ins) != len(operands):
        raise ValueError(f"einsum: {len(ins)} operand subscripts for {len(operands)} operands")
    ell = ""
    if "..." in subscripts:
        # spell the broadcast dimensions with unused letters, right-aligned as NumPy does
        spare = [c for c in _LETTERS if c not in subscripts]
        ranks = [len(_shape(o)) - (len(s) - 3) for s, o in zip(ins, operands) if "..." in s]
        ell = "".join(spare[:builtins.max(ranks)])
        ins = [s.replace("...", ell[len(ell) - (len(_shape(o)) - (len(s) - 3)):])
               if "..." in s else s for s, o in zip(ins, operands)]
        out = out.replace("...", ell)
    if not arrow:
        counts = {}
        for s in ins:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    return A.einsum(*operands, subscripts=",".join(ins) + "->" + out)


def outer(a, b):
    """NumPy's ``outer``, differentiable."""
    if not _traced(a, b):
        return _np.outer(a, b)
    return multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))


def inner(a, b):
    """NumPy's ``inner``, differentiable."""
    if not _traced(a, b):
        return _np.inner(a, b)
    if len(_shape(a)) == 0 or len(_shape(b)) == 0:
        return multiply(a, b)
    return tensordot(a, b, axes=([-1], [-1]))


def diagonal(a, offset=0, axis1=0, axis2=1):
    """NumPy's ``diagonal``, differentiable (the diagonal becomes the last axis)."""
    if type(a) is not Node:
        return _np.diagonal(a, offset, axis1, axis2)
    x = moveaxis(a, (axis1, axis2), (-2, -1))
    n, m = x.shape[-2:]
    i = _np.arange(builtins.max(0, -offset), builtins.min(n, m - offset))
    return x[(Ellipsis, i, i + offset)]


def trace(a, offset=0, axis1=0, axis2=1):
    """NumPy's ``trace``, differentiable."""
    if type(a) is not Node:
        return _np.trace(a, offset, axis1, axis2)
    return sum(diagonal(a, offset, axis1, axis2), axis=-1)


def diag(v, k=0):
    """NumPy's ``diag``, differentiable: a vector's diagonal matrix, or a matrix's diagonal."""
    if type(v) is not Node:
        return _np.diag(v, k)
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError(f"diag: input must be 1-d or 2-d, got shape {v.shape}")
    n = v.shape[0] + builtins.abs(k)
    i = _np.arange(v.shape[0])
    rows, cols = (i, i + k) if k >= 0 else (i - k, i)
    return A.index_add(v, index=A.encode_index((rows, cols)), shape=(n, n))


def sort(a, axis=-1):
    """NumPy's ``sort``, differentiable (the derivative follows the permutation)."""
    if type(a) is not Node:
        return _np.sort(a, axis)
    if axis is None:
        a, axis = ravel(a), 0
    ax = _one_axis(axis, a.ndim, "sort")
    return A.take_along_axis(a, A.argsort(a, axis=ax), axis=ax)


def argsort(a, axis=-1):
    """NumPy's ``argsort`` (integers: no derivative)."""
    if type(a) is not Node:
        return _np.argsort(a, axis)
    return A.argsort(a, axis=_one_axis(axis, a.ndim, "argsort"))


# ---- creation: NumPy's, also for traced arguments where only the shape matters ---------------
def zeros_like(a, dtype=None):
    return _np.zeros(_shape(a), dtype or (a.dtype if type(a) is Node else _np.asarray(a).dtype))


def ones_like(a, dtype=None):
    return _np.ones(_shape(a), dtype or (a.dtype if type(a) is Node else _np.asarray(a).dtype))


def full_like(a, fill_value, dtype=None):
    return _np.full(_shape(a), fill_value,
                    dtype or (a.dtype if type(a) is Node else _np.asarray(a).dtype))


def array(obj, dtype=None):
    """NumPy's ``array``; nested lists holding traced values are stacked (differentiably)."""
    if not _traced(obj):
        return _np.array(obj, dtype=dtype)
    if type(obj) is Node:
        return obj
    return stack([array(x) for x in obj])


asarray = array


def isfinite(x):
    """NumPy's ``isfinite`` (bools: no derivative)."""
    return S.lt(S.abs(x), inf) if type(x) is Node else _np.isfinite(x)


def shape(a):
    return _shape(a)


def ndim(a):
    return len(_shape(a))


def size(a):
    return _math.prod(_shape(a))


from . import linalg  # noqa: E402
from .dispatch import install as _install, unsupported as _unsupported  # noqa: E402

_install()


def __getattr__(name):
    """Everything else is NumPy's: constants, dtypes, creation functions — and a function
    wengert has no rule for refuses traced values by name."""
    try:
        attr = getattr(_np, name)
    except AttributeError:
        raise AttributeError(f"module 'wengert.numpy' has no attribute {name!r}") from None
    if callable(attr) and not isinstance(attr, type):
        attr = _unsupported(f"numpy.{name}", attr)
    globals()[name] = attr
    return attr
