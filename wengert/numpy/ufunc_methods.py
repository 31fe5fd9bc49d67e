"""The methods of NumPy's ufuncs on traced values: ``outer``, ``reduce``, ``accumulate`` and
``reduceat`` of every binary ufunc wengert.numpy differentiates.  NumPy's protocol brings
them here from ``numpy.hypot.reduce(x)`` and from ``wengert.numpy.hypot.reduce(x)`` alike
(which is NumPy's method) when x is traced.

``outer(a, b)`` is the ufunc of a, reshaped to ``a.shape + (1,) * b.ndim``, against b.  The
reductions are the left fold NumPy computes, one call of the ufunc per element along the
axis, in NumPy's order, ((a₀ op a₁) op a₂) ..., so their derivatives of every order are the
ufunc's; add, multiply, maximum and minimum keep their one-primitive functions (`sum`,
`prod`, `max`, `min`, `cumsum`, `cumprod`).  What NumPy checks before it computes (the
axes, the dtypes, whether a ufunc may reduce over several axes, an empty reduction without
an identity, reduceat's indices) it checks here too: its own method runs first on a small
plain array of ones standing in for the traced one, and gives the errors and the result's
dtype.  ``ufunc.at`` writes into its argument and stays refused.

A generalized ufunc's keywords ``axes``, ``axis`` and ``keepdims`` (``numpy.vecdot(a, b,
axis=0)``) are here too (`gufunc_call`): they only say where the core dimensions are.

Example:
    >>> import numpy, wengert as wg
    >>> x = numpy.array([3.0, 4.0, 12.0])
    >>> float(numpy.hypot.reduce(x))
    13.0
    >>> wg.grad(lambda x: numpy.hypot.reduce(x))(x) * 13      # x / |x|
    array([ 3.,  4., 12.])
"""
from __future__ import annotations

import math
import operator

import numpy as _np

from ..graph.node import Node

# methods that are one wengert.numpy function, which takes the method's arguments (with the
# method's default axis 0, not the function's None)
FAST = {("add", "reduce"): "sum", ("multiply", "reduce"): "prod",
        ("maximum", "reduce"): "max", ("minimum", "reduce"): "min",
        ("add", "accumulate"): "cumsum", ("multiply", "accumulate"): "cumprod"}


def call(ufunc, op, method, inputs, kwargs):
    """NumPy's ``ufunc.method(*inputs, **kwargs)`` where an input is traced; `op` records
    the ufunc itself on traced values.  (NumPy's protocol hands the method's arguments
    after the arrays over as keywords; ``out`` has been refused already.)"""
    import wengert.numpy as wnp
    name = FAST.get((ufunc.__name__, method))
    if method == "accumulate" and type(kwargs.get("axis")) is tuple \
            and len(kwargs["axis"]) == 1:
        kwargs["axis"] = kwargs["axis"][0]      # (accumulate takes one axis, or a 1-tuple)
    if name is not None and len(inputs) == 1 and type(inputs[0]) is Node:
        kwargs.setdefault("axis", 0)
        a = inputs[0]
        if name in ("max", "min"):
            # (max and min take no dtype: the method compares in the one asked for)
            dtype = kwargs.pop("dtype", None)
            a = a if dtype is None else wnp.astype(a, dtype)
        return getattr(wnp, name)(a, **kwargs)
    if method == "outer":
        return _outer(ufunc, op, *inputs, **kwargs)
    if method == "reduce":
        return _reduce(ufunc, op, *inputs, **kwargs)
    if method == "accumulate":
        return _accumulate(ufunc, op, *inputs, **kwargs)
    if method == "reduceat":
        return _reduceat(ufunc, op, *inputs, **kwargs)
    raise NotImplementedError(f"numpy.{ufunc.__name__}.{method} is not supported on traced "
                              "values")


# ---- a generalized ufunc's axes ----------------------------------------------------------------
GUFUNC_KEYWORDS = frozenset(("axes", "axis", "keepdims"))


def gufunc_call(ufunc, op, inputs, kwargs):
    """NumPy's ``gufunc(*inputs, axes=..., axis=..., keepdims=...)`` (matmul, vecdot,
    matvec, vecmat) where an input is traced: each operand's core dimensions moved from
    where `axes` puts them to the end, `op` (which takes them last), and the output's moved
    back, or for `keepdims` the reduced axis put back with length 1.  NumPy's own call on
    stand-ins checks the keywords first and gives its errors.

    Example:
        >>> import numpy, wengert as wg
        >>> a = numpy.arange(6.0).reshape(3, 2)
        >>> wg.grad(lambda a: numpy.sum(numpy.vecdot(a, a, axis=0)))(a)        # 2a
        array([[ 0.,  2.],
               [ 4.,  6.],
               [ 8., 10.]])
    """
    import wengert.numpy as wnp
    nin = ufunc.nin
    want = _np.ndim(ufunc(*map(_ones, inputs), **kwargs))
    inputs = [wnp.asarray(x) if type(x) is not Node else x for x in inputs]
    axes, keepdims = kwargs.get("axes"), kwargs.get("keepdims", False)
    if axes is None:
        axis = kwargs.get("axis")
        axes = [(-1,)] * nin if axis is None else [(axis,)] * nin
        if axis is not None and keepdims:
            axes.append((axis,))    # (axis= places the kept axis too; axes= without an
            #                         output entry leaves it last, as NumPy does)
    axes = [tuple(map(operator.index, a)) if isinstance(a, (tuple, list))
            else (operator.index(a),) for a in axes]
    moved = [x if not core else wnp.moveaxis(x, core, tuple(range(-len(core), 0)))
             for x, core in zip(inputs, axes)]
    y = op(*moved)
    if keepdims:            # (signatures like (n),(n)->(): the core axis back, of length 1)
        y = wnp.expand_dims(y, axes[nin] if len(axes) > nin else -1)
    elif len(axes) > nin and axes[nin]:
        core = axes[nin]
        y = wnp.moveaxis(y, tuple(range(-len(core), 0)), core)
    assert wnp.ndim(y) == want, (ufunc, wnp.shape(y), want)
    return y


# ---- NumPy's checks, on stand-ins -------------------------------------------------------------
def _ones(x, shape=None):
    """A plain stand-in for `x` in NumPy's own method: ones of x's dtype (no ufunc warns
    about ones), with `shape` or x's dimensions capped at 1 (an empty one stays empty, for
    NumPy's error about a reduction without identity).  Python numbers stay as they are:
    their type is weak."""
    if isinstance(x, (int, float, complex)):
        return x
    import wengert.numpy as wnp
    x = x if type(x) is Node else _np.asarray(x)
    dims = tuple(x.shape) if type(x) is Node else x.shape
    return _np.ones(tuple(min(d, 1) for d in dims) if shape is None else shape,
                    wnp.result_type(x))


def _numpy_checks(ufunc, method, *args, **kwargs):
    """NumPy's ``ufunc.method`` on the stand-ins `args` (and traced keywords replaced by
    stand-ins): its errors, and a result of the dtype it gives."""
    kwargs = {k: _ones(v) if type(v) is Node else v for k, v in kwargs.items()}
    with _np.errstate(all="ignore"):
        return getattr(ufunc, method)(*args, **kwargs)


def _array(a):
    import wengert.numpy as wnp
    return a if type(a) is Node else wnp.asarray(a)


# ---- the methods ----------------------------------------------------------------------------
def _outer(ufunc, op, a, b, **kwargs):
    import wengert.numpy as wnp
    wnp._refuse(f"{ufunc.__name__}.outer", **{k: True for k in kwargs})
    _numpy_checks(ufunc, "outer", _ones(a), _ones(b))
    a, b = _array(a), _array(b)
    return op(wnp.reshape(a, tuple(a.shape) + (1,) * len(wnp.shape(b))), b)


def _rows(x):
    """x[0], x[1], ... (along the first axis), each read from a half of a half ... of x:
    the reverse sweep then scatters each row's cotangent into an array of a few rows, each
    of those into one of twice as many, and so on, O(n log n) rows in all, where reading
    the rows from x itself would scatter each into zeros of x's size, O(n²)."""
    n = x.shape[0]
    if n <= 4:
        for i in range(n):
            yield x[i]
    else:
        yield from _rows(x[:n // 2])
        yield from _rows(x[n // 2:])


def _partials(op, x, start):
    """The partial results of the left fold of `op` along x's first axis, from `start`
    (unless it is NumPy's no-value): x₀ (or start op x₀), then that op x₁, ..."""
    acc = start
    for row in _rows(x):
        acc = row if acc is _np._NoValue else op(acc, row)
        yield acc


def _in_dtype(x, dtype):
    """`x` (traced or plain) in the dtype NumPy's method computes in."""
    import wengert.numpy as wnp
    if type(x) is Node:
        return x if x.dtype == dtype else wnp.astype(x, dtype)
    return _np.asarray(x, dtype)


def _reduce(ufunc, op, a, axis=0, dtype=None, keepdims=False, initial=_np._NoValue,
            where=True, out=None):
    import wengert.numpy as wnp
    wnp._refuse(f"{ufunc.__name__}.reduce", where=where is not True)
    dt = _numpy_checks(ufunc, "reduce", _ones(a), axis=axis, dtype=dtype,
                       keepdims=keepdims, initial=initial).dtype
    x = _in_dtype(_array(a), dt)
    ndim = x.ndim
    axes = tuple(range(ndim)) if axis is None else wnp._norm_axis(axis, ndim, "reduce")
    rest = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    # the reduced axes first, as one (NumPy's order over several is that of the flat array)
    x = wnp.reshape(wnp.moveaxis(x, axes, tuple(range(len(axes)))),
                    (math.prod(x.shape[i] for i in axes),) + rest)
    # NumPy's reduce starts from `initial`, else from the ufunc's identity where it has one
    # (so hypot.reduce([-3.0]) is hypot(0, -3.0) = 3.0), else from the first element
    if initial is _np._NoValue and ufunc.identity is not None:
        initial = ufunc.identity
    if initial is not _np._NoValue:
        initial = _in_dtype(initial, dt)
    if x.shape[0] == 0:
        # (a sum over nothing: zeros of the right shape, still traced, with no derivative)
        result = _in_dtype(wnp.sum(x, axis=0) + initial, dt)
    else:
        for result in _partials(op, x, initial):
            pass
    if keepdims:
        result = wnp.reshape(result, tuple(1 if i in axes else d
                                           for i, d in enumerate(wnp.shape(a))))
    return result


def _accumulate(ufunc, op, a, axis=0, dtype=None, out=None):
    import wengert.numpy as wnp
    dt = _numpy_checks(ufunc, "accumulate", _ones(a), axis=axis, dtype=dtype).dtype
    a = _in_dtype(_array(a), dt)
    ax = wnp._one_axis(axis, a.ndim, "accumulate")
    if a.shape[ax] == 0:
        return a
    return wnp.stack(list(_partials(op, wnp.moveaxis(a, ax, 0), _np._NoValue)), axis=ax)


def _reduceat(ufunc, op, a, indices, axis=0, dtype=None, out=None):
    import wengert.numpy as wnp
    # indices are integers, without derivative: their value is what counts
    indices = wnp._value_of(indices, f"used as indices by numpy.{ufunc.__name__}.reduceat")
    shape = list(_ones(a).shape)
    if isinstance(axis, (int, _np.integer)) and -len(shape) <= axis < len(shape):
        shape[axis] = wnp.shape(a)[axis]      # (the real length, for NumPy's index checks)
    dt = _numpy_checks(ufunc, "reduceat", _ones(a, tuple(shape)), indices, axis=axis,
                       dtype=dtype).dtype
    a = _in_dtype(_array(a), dt)
    ax = wnp._one_axis(axis, a.ndim, "reduceat")
    x = wnp.moveaxis(a, ax, 0)
    starts = [int(i) for i in _np.asarray(indices).ravel()]
    ends = starts[1:] + [x.shape[0]]
    if not starts:
        return wnp.moveaxis(x[:0], 0, ax)
    # NumPy's rule: a piece up to the next index, or the element alone where that is not past it
    fast = FAST.get((ufunc.__name__, "reduce"))
    pieces = []
    for start, end in zip(starts, ends):
        piece = x[start:max(end, start + 1)]
        if fast is not None:
            pieces.append(getattr(wnp, fast)(piece, axis=0))
        else:
            for last in _partials(op, piece, _np._NoValue):
                pass
            pieces.append(last)
    return _in_dtype(wnp.stack(pieces, axis=ax), dt)

