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
import functools
import inspect
import math as _math
import operator
import string as _string
import sys as _sys

import numpy as _np

from ..dual import accepts_duals as _accepts_duals
from ..graph.node import Node
from ..primitives import array as A
from ..primitives import scalar as S
from ..primitives import shape as SH
from ..primitives import special as SP
from ..primitives.registry import Primitive as _Primitive, is_weak as _is_weak, \
    numpy_dtype as _numpy_dtype, real_dtype as _real_dtype

random = _np.random
# and a submodule, so that ``import wengert.numpy.random as npr`` works, as autograd's does
_sys.modules[__name__ + ".random"] = random
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
    """None, or a sorted tuple of non-negative axes (NumPy's errors: `_axes`)."""
    return None if axis is None else tuple(sorted(_axes(axis, ndim, name)))


def _axes(axis, ndim, name, argument="axis", repeats=False):
    """`axis` (an int or a sequence of them) as non-negative axes in the order given, with
    NumPy's errors: AxisError for one out of range, ValueError for one repeated (unless
    `repeats`), TypeError for what is not an integer (``axis=True`` is no axis 1)."""
    axes = (axis,) if isinstance(axis, (int, _np.integer)) else tuple(axis)
    out = []
    for a in axes:
        if isinstance(a, (bool, _np.bool_)) or not isinstance(a, (int, _np.integer)):
            raise TypeError(f"{name}: {argument} must be an integer or a tuple of integers, "
                            f"got {a!r}")
        if not -ndim <= a < ndim:
            raise _np.exceptions.AxisError(
                f"{name}: axis {a} is out of bounds for an array of dimension {ndim}")
        out.append(int(a) % ndim)
    if not repeats and len(set(out)) != len(out):
        raise ValueError(f"{name}: repeated axis in `{argument}` argument")
    return out


def _one_axis(axis, ndim, name):
    """One axis, made non-negative; a TypeError for a tuple (or None), which the caller
    would otherwise cut to one of its axes, silently."""
    if not isinstance(axis, (int, _np.integer)):
        raise TypeError(f"{name}: axis must be one integer, got {axis!r}")
    return _axes(axis, ndim, name)[0]


# ---- NumPy's functions for plain values, ours for traced ones --------------------------------
_NoValue = _np._NoValue      # NumPy's "argument not given", in the signatures below as in its


def _array_like(a):
    """`a`, or one traced array if it is a list or tuple that holds traced values, as
    NumPy reads an array-like (``wengert.numpy.asarray`` stacks it, differentiably): the
    one place where wengert.numpy's functions and ufuncs take ``[x, y]`` for an array."""
    return asarray(a) if (type(a) is list or type(a) is tuple) and _traced(a) else a


def _arrays(args):
    """`args` with each made `_array_like`."""
    for a in args:
        if type(a) is list or type(a) is tuple:
            break
    else:
        return args
    return tuple(_array_like(a) for a in args)


def _keyword_arrays(kwargs):
    return dict(zip(kwargs, _arrays(tuple(kwargs.values())))) if kwargs else kwargs


def _numpy_unless_traced(npfn, *, any_argument=False, array_likes="all"):
    """Decorator for a function written for traced values with `npfn`'s signature: a call
    without traced arguments goes to NumPy's `npfn` with the caller's arguments unchanged,
    so on plain values wengert.numpy *is* NumPy (every argument, result dtype and error).

    Only the first argument is looked at, with a type test (the hot path), unless
    `any_argument` (functions of several arrays: clip, concatenate, einsum, ...).

    A list or tuple holding traced values, where NumPy would read an array, becomes one
    traced array (`_arrays`) before `fn` sees it: the first argument, or with
    `any_argument` every argument (`array_likes="all"`), the items of the first, a
    sequence of arrays (``"items"``: concatenate, stack), or none (``"none"``: array and
    asarray, which do the stacking)."""
    def decorate(fn):
        # (the sequence of arrays, for "items": fn's first parameter, by position or name;
        # asked only then: a signature costs ~20 us, and a hundred functions are decorated)
        sequence = next(iter(inspect.signature(fn).parameters), None) \
            if array_likes == "items" else None
        if any_argument:
            def wrapper(*args, **kwargs):
                if _traced(*args, *kwargs.values()):
                    if array_likes == "items":
                        args = (_arrays(args[0]),) + _arrays(args[1:]) if args else args
                        kwargs = {k: _arrays(v) if k == sequence else _array_like(v)
                                  for k, v in kwargs.items()}
                    elif array_likes == "all":
                        args, kwargs = _arrays(args), _keyword_arrays(kwargs)
                    return fn(*args, **kwargs)
                return npfn(*args, **kwargs)
        else:
            def wrapper(*args, **kwargs):
                if args:
                    a = args[0]
                    if type(a) is Node:
                        return fn(*args, **kwargs)
                    if type(a) is list or type(a) is tuple:
                        a = _array_like(a)
                        if type(a) is Node:
                            return fn(a, *args[1:], **kwargs)
                if kwargs and _traced(*kwargs.values()):
                    # a traced keyword: every argument given by keyword, or one NumPy's
                    # dispatch does not look at (sum's initial, pad's constant_values),
                    # which NumPy would make a plain array
                    return traced(*args, **_keyword_arrays(kwargs))
                return npfn(*args, **kwargs)

            def traced(*args, **kwargs):
                # NumPy's dispatch found a traced argument after the first (a plain array
                # taken along traced indices): the wrapper, which looks at the first only,
                # would hand it back to NumPy, and NumPy back to us
                if args and (type(args[0]) is list or type(args[0]) is tuple):
                    args = (_array_like(args[0]),) + args[1:]
                return fn(*args, **kwargs)
            wrapper.traced = traced
        return functools.wraps(fn)(wrapper)
    return decorate


def _refuse(fname, **given):
    """NotImplementedError naming the first argument in `given` (name -> whether the caller
    set it) that wengert cannot honour on traced values: never silently ignored."""
    for arg, is_set in given.items():
        if is_set:
            why = ("a traced value cannot be written into an array; use the result instead"
                   if arg == "out" else "wengert.numpy has no rule for this argument")
            raise NotImplementedError(f"numpy.{fname}(..., {arg}=...) is not supported on "
                                      f"traced values: {why}")


def astype(x, dtype):
    """`x` cast to `dtype`, as ``x.astype(dtype)``: differentiable between floating dtypes
    (the cotangent is cast back); to an integer or bool dtype a value without derivative,
    like a comparison's."""
    x = _array_like(x)
    if type(x) is not Node:
        return _np.asarray(x).astype(dtype)
    dtype = _np.dtype(dtype)
    if dtype == x.dtype:
        return x
    if dtype.kind not in "fc":
        x = S.stop_gradient(x)
    return A.astype(x, dtype=dtype)


def _cast(x, dtype, casting, fname):
    """`x` cast to `dtype` under NumPy's `casting` rule (NumPy's TypeError if it forbids)."""
    if not _np.can_cast(A.dtype_of(x), dtype, casting):
        raise TypeError(f"{fname}: cannot cast from {A.dtype_of(x)} to {_np.dtype(dtype)} "
                        f"according to the rule {casting!r}")
    return astype(x, dtype)


def _float_cast(fname, a, dtype):
    """`a` in the floating `dtype` a mean or variance is computed in."""
    if dtype is None:
        return a
    if _np.dtype(dtype).kind not in "fc":
        raise NotImplementedError(f"numpy.{fname}(..., dtype={_np.dtype(dtype)}) is not "
                                  "supported on traced values: only floating dtypes")
    return astype(a, dtype)


def _stand_in(a):
    """A plain array of `a`'s shape and dtype (a zero-strided view: no memory), for the
    functions where only those matter (zeros_like, shape, size, ...)."""
    a = _array_like(a)
    return _np.broadcast_to(_np.zeros((), a.dtype), a.shape) if type(a) is Node else a


def _about_shape(npfn):
    """NumPy's `npfn`, for which every traced argument is only a shape and a dtype
    (zeros_like, shape, result_type, diag_indices_from, ...)."""
    @functools.wraps(npfn)
    def wrapper(*args, **kwargs):
        return npfn(*[_stand_in(a) for a in args],
                    **{k: _stand_in(v) for k, v in kwargs.items()})
    return wrapper


# ---- elementwise: the scalar primitives as ufuncs ------------------------------------------
class _Ufunc:
    """One of NumPy's ufuncs in wengert.numpy: on traced values it records its primitive;
    on plain values it *is* NumPy's ufunc, keywords and methods (``reduce``, ``accumulate``,
    ``outer``, ``at``, ...) included.  Those methods and keywords on traced values go
    through NumPy's protocol to `wengert.numpy.dispatch`: ``outer``, ``reduce``,
    ``accumulate`` and ``reduceat`` of a binary ufunc are written with the ufunc itself
    (`wengert.numpy.ufunc_methods`: ``add.reduce`` is `sum`, ``add.accumulate`` `cumsum`),
    ``at`` (in place) and other keywords raise `NotImplementedError` naming themselves.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> wnp.add.reduce(wnp.arange(4.0)), wnp.maximum.accumulate(wnp.array([1, 3, 2]))
        (np.float64(6.0), array([1, 3, 3]))
        >>> wg.grad(lambda x: wnp.add.reduce(wnp.sin(x)))(wnp.zeros(2))
        array([1., 1.])
        >>> wg.grad(lambda x: wnp.sum(wnp.subtract.outer(x, x ** 2)))(wnp.ones(2))
        array([-2., -2.])
    """

    def __init__(self, npufunc, traced=None):
        self.numpy = npufunc            # NumPy's ufunc
        self.traced = traced            # the function for traced values (None: refused)
        self.unary_primitive = isinstance(traced, _Primitive) and npufunc.nin == 1
        self.__name__ = npufunc.__name__
        self.__doc__ = f"NumPy's ``{npufunc.__name__}``" + (
            ", differentiable." if traced is not None else " (not on traced values).")

    def __call__(self, *args, **kwargs):
        if not kwargs:
            for x in args:
                t = type(x)
                if t is Node:
                    if len(args) > 1 or x.dtype.kind in "biu" or self.traced is None:
                        return self.record(*args)
                    # (np.tanh(h) in an eager gradient: the graph Primitive.__call__ finds)
                    return x.graph.apply(self.traced, args) if self.unary_primitive else \
                        self.traced(x)
                if (t is list or t is tuple) and _traced(x):    # [x, y] for an array
                    return self.record(*args)
        # NumPy's, which hands traced values (with keywords) to wengert.numpy.dispatch
        return self.numpy(*args, **kwargs)

    def record(self, *args):
        """The call on arguments some of which are traced (NumPy's protocol comes here
        too): NumPy's ufunc itself where only integers and bools are traced, since nothing
        flows through them (`exact_ufunc`), else the function with derivative rules."""
        args = _arrays(args)
        found = exact_ufunc(self.numpy, args, self.traced is None)
        if found is not None:
            return found
        if self.traced is None:         # NumPy's protocol: another name's rule, or refused
            return self.numpy(*args)
        return self.traced(*args)

    def __getattr__(self, name):
        return getattr(self.numpy, name)

    def __repr__(self):
        return f"<wengert.numpy ufunc {self.__name__!r}>"


def exact_ufunc(ufunc, args, always=False):
    """NumPy's `ufunc` on `args` as one `numpy_ufunc` node, if every traced one among them
    is an integer or bool array: then no derivative can flow through the call, and NumPy's
    own loop gives the values and the dtype (sin of an int8 array is float16, an integer
    reciprocal truncates, gcd and left_shift exist).  Otherwise None, and a ufunc with a
    bool result also gets None (unless `always`): comparisons and logical functions have
    primitives of their own, which every back-end can write.  NumPy's TypeError where it
    has no loop for the dtypes.

    Example:
        >>> import numpy as np, wengert as wg, wengert.numpy as wnp
        >>> f = wg.compile(lambda i: (wnp.sin(i), wnp.left_shift(i, 2)), np.arange(3, dtype=np.int8))
        >>> f(np.arange(3, dtype=np.int8))
        (array([0.    , 0.8413, 0.909 ], dtype=float16), array([0, 4, 8], dtype=int8))
    """
    if ufunc.nout != 1:
        return None
    traced = False
    for x in args:
        if type(x) is Node:
            if x.dtype.kind not in "biu":
                return None
            traced = True
        elif _kind(x) == "c":       # (numpy_ufunc is real: complex goes by the primitives)
            return None
    if not traced:
        return None
    out = _numpy_dtype(ufunc, [x if type(x) is Node else _np.asarray(x) for x in args],
                       [_is_weak(x) if type(x) is Node else type(x) in (int, float, complex)
                        for x in args])              # (a Python number is weak: NumPy 2)
    if out is not None and out.kind == "b" and not always:
        return None
    # (where NumPy has no loop, the node's evaluation raises NumPy's TypeError)
    return S.numpy_ufunc(*args, ufunc=ufunc)


def _kind(x):
    """The dtype kind of a ufunc's argument: a node, an array, a number or a list."""
    return A.dtype_of(x if type(x) is Node or hasattr(x, "dtype") or
                      isinstance(x, (int, float, complex)) else _np.asarray(x)).kind


def _real_ufunc(npufunc, traced):
    """A ufunc NumPy has no complex loop for, written with primitives that take complex
    values: a complex argument gets NumPy's TypeError, not a value NumPy would not give."""
    def fn(*xs):
        if builtins.any(_kind(x) == "c" for x in xs):
            raise TypeError(f"ufunc {npufunc.__name__!r} not supported for the input types, "
                            "and the inputs could not be safely coerced to any supported "
                            "types according to the casting rule ''safe''")
        return traced(*xs)
    return _Ufunc(npufunc, fn)


add, subtract, multiply = _Ufunc(_np.add, S.add), _Ufunc(_np.subtract, S.sub), \
    _Ufunc(_np.multiply, S.mul)
divide = true_divide = _Ufunc(_np.divide, S.div)
negative = _Ufunc(_np.negative, S.neg)
positive = _Ufunc(_np.positive, lambda x: x)
sqrt, cbrt, exp, log, log10, log1p, expm1 = (
    _Ufunc(_np.sqrt, S.sqrt), _Ufunc(_np.cbrt, S.cbrt), _Ufunc(_np.exp, S.exp),
    _Ufunc(_np.log, S.log), _Ufunc(_np.log10, S.log10), _Ufunc(_np.log1p, S.log1p),
    _Ufunc(_np.expm1, S.expm1))
sin, cos, tan = _Ufunc(_np.sin, S.sin), _Ufunc(_np.cos, S.cos), _Ufunc(_np.tan, S.tan)
arcsin, arccos, arctan, arctan2 = (_Ufunc(_np.arcsin, S.asin), _Ufunc(_np.arccos, S.acos),
                                   _Ufunc(_np.arctan, S.atan), _Ufunc(_np.arctan2, S.atan2))
sinh, cosh, tanh = _Ufunc(_np.sinh, S.sinh), _Ufunc(_np.cosh, S.cosh), _Ufunc(_np.tanh, S.tanh)
abs = absolute = _Ufunc(_np.absolute, S.abs)
fabs = _real_ufunc(_np.fabs, S.abs)


def _sign(x):
    # NumPy's sign of a complex z is z/|z| (0 at 0): not piecewise constant like the real
    # sign primitive, so it is written out, part by part (sign(3+4j) is 0.6+0.8j, where
    # a complex division gives 0.6000000000000001+0.8j); NumPy's own way of computing it
    # may still differ from this one in the last bit
    # At 0, where z/|z| jumps, the value 0 and the derivative 0 (as abs's there): x is
    # read as 0 and |x| as 1, not x/1, whose derivative was 1.
    if A.dtype_of(x).kind != "c":
        return S.sign(x)
    size = S.abs(x)
    zero = S.eq(size, 0.0)
    x, size = S.select(zero, 0.0, x), S.select(zero, 1.0, size)
    return S.make_complex(S.div(S.real(x), size), S.div(S.imag(x), size))


sign = _Ufunc(_np.sign, _sign)
maximum, minimum = _Ufunc(_np.maximum, S.maximum), _Ufunc(_np.minimum, S.minimum)
less, less_equal, greater, greater_equal, equal, not_equal = (
    _Ufunc(_np.less, S.lt), _Ufunc(_np.less_equal, S.le), _Ufunc(_np.greater, S.gt),
    _Ufunc(_np.greater_equal, S.ge), _Ufunc(_np.equal, S.eq), _Ufunc(_np.not_equal, S.ne))
power = _Ufunc(_np.power, S.power)
square = _Ufunc(_np.square, lambda x: S.power(x, 2))
reciprocal = _Ufunc(_np.reciprocal, lambda x: S.div(1.0, x))


def _isfinite(x):
    if A.dtype_of(x).kind == "c":       # the parts apart: |x| overflows for huge finite ones
        return S.minimum(_isfinite(S.real(x)), _isfinite(S.imag(x)))
    return S.lt(S.abs(x), inf)


isfinite = _Ufunc(_np.isfinite, _isfinite)


def _rint(x):
    # NumPy's rint of an integer or bool array is a float array (float16 for bools)
    kind = A.dtype_of(x).kind
    if kind in "iub":
        x = astype(x, _np.rint(_np.zeros((), A.dtype_of(x))).dtype)
    return S.round(x, decimals=0)


rint = _Ufunc(_np.rint, _rint)
floor, ceil, trunc = _Ufunc(_np.floor, S.floor), _Ufunc(_np.ceil, S.ceil), \
    _Ufunc(_np.trunc, S.trunc)
stop_gradient = S.stop_gradient
arcsinh, arccosh, arctanh = (_Ufunc(_np.arcsinh, S.asinh), _Ufunc(_np.arccosh, S.acosh),
                             _Ufunc(_np.arctanh, S.atanh))
exp2, log2 = _Ufunc(_np.exp2, S.exp2), _Ufunc(_np.log2, S.log2)
hypot = _Ufunc(_np.hypot, S.hypot)
logaddexp, logaddexp2 = _Ufunc(_np.logaddexp, S.logaddexp), _Ufunc(_np.logaddexp2, S.logaddexp2)
remainder = mod = _Ufunc(_np.remainder, S.remainder)
fmod = _Ufunc(_np.fmod, S.fmod)


def _angle_factor(x, numerator, denominator):
    """x · (numerator/denominator), the constant in x's own precision as NumPy has it (a
    float32 array is scaled by float32(180)/float32(pi), not by float32(180/pi))."""
    dt = A.dtype_of(x)
    if dt == _np.float16:               # (NumPy's half loop computes in float32)
        return astype(_angle_factor(astype(x, _np.float32), numerator, denominator), dt)
    if dt.kind == "f" and dt != _np.float64:
        return S.mul(x, dt.type(numerator) / dt.type(denominator))
    return S.mul(x, numerator / denominator)


# (NumPy's radians and degrees are ufuncs of their own, not deg2rad's and rad2deg's other
# names: each needs its own entry for numpy.radians(x) to dispatch)
deg2rad = _real_ufunc(_np.deg2rad, lambda x: _angle_factor(x, pi, 180.0))
radians = _real_ufunc(_np.radians, lambda x: _angle_factor(x, pi, 180.0))
rad2deg = _real_ufunc(_np.rad2deg, lambda x: _angle_factor(x, 180.0, pi))
degrees = _real_ufunc(_np.degrees, lambda x: _angle_factor(x, 180.0, pi))


def _fmax_like(npufunc, compare):
    """fmax, fmin: the larger (smaller) of x and y, the one that is not nan if only one is
    (NumPy's rule: x where x compares so or y is nan); the derivative goes to the argument
    chosen."""
    def traced(x, y):
        return S.select(S.maximum(compare(x, y), S.ne(y, y)), x, y)
    return _Ufunc(npufunc, traced)


fmax, fmin = _fmax_like(_np.fmax, S.ge), _fmax_like(_np.fmin, S.le)


# ---- a float's parts and neighbours: floor_divide, divmod, modf, frexp, spacing, nextafter ---
def _as_numpy_computes(npufunc, x):
    """`x` cast to the dtype NumPy's unary float ufunc computes it in (float64 for integers,
    float16 for bools, a float's own)."""
    out = npufunc(_np.zeros((), A.dtype_of(x)))
    dt = (out[0] if npufunc.nout > 1 else out).dtype
    return astype(x, dt) if dt != A.dtype_of(x) else x


def _no_bools(*xs):
    # NumPy's // and % of bools are int8's (its loop for them)
    return [astype(x, _np.int8) if _kind(x) == "b" else x for x in xs]


def _floor_divide(x, y):
    return S.floor_divide(*_no_bools(x, y))


def _divmod(x, y):
    x, y = _no_bools(x, y)
    return S.floor_divide(x, y), S.remainder(x, y)


floor_divide = _real_ufunc(_np.floor_divide, _floor_divide)
floor_divide.__doc__ = """NumPy's ``floor_divide`` (``x // y``), as NumPy computes it (which
floor(x/y) is not always: 1.0 // 0.1 is 9.0); its derivative is zero.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> wg.grad(lambda x: wnp.sum(x // 0.1 + x))(wnp.array([1.0, 2.5]))
        array([1., 1.])
"""
divmod = _real_ufunc(_np.divmod, _divmod)
divmod.__doc__ = """NumPy's ``divmod``: (``x // y``, ``x % y``), the quotient's derivative
zero, the remainder's 1 in x and -(x // y) in y (as `remainder`).

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> q, r = wnp.divmod(wnp.array([7.5, -7.5]), 2.0)
        >>> q.tolist(), r.tolist()
        ([3.0, -4.0], [1.5, 0.5])
        >>> wg.grad(lambda y: wnp.sum(wnp.divmod(7.5, y)[1]))(2.0)      # -(7.5 // 2)
        -3.0
"""
def _modf(x):
    x = _as_numpy_computes(_np.modf, x)
    return S.modf_fraction(x), S.trunc(x)


modf = _real_ufunc(_np.modf, _modf)
modf.__doc__ = """NumPy's ``modf``: (fractional part, integral part), both with x's sign.
The fractional part's derivative is 1, the integral part's 0 (both jump at the
integers).

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> frac, whole = wnp.modf(wnp.array([2.75, -0.5]))
        >>> frac.tolist(), whole.tolist()
        ([0.75, -0.5], [2.0, -0.0])
        >>> wg.grad(lambda x: wnp.sum(wnp.modf(x)[0] + 2 * wnp.modf(x)[1]))(wnp.array([2.75]))
        array([1.])
"""


def _frexp(x):
    x = _as_numpy_computes(_np.frexp, x)
    return S.frexp_mantissa(x), S.frexp_exponent(x)


frexp = _real_ufunc(_np.frexp, _frexp)
frexp.__doc__ = """NumPy's ``frexp``: x = m·2**e with 0.5 <= |m| < 1 (m = x, e = 0 at 0,
±inf and nan).  The mantissa's derivative is 2**-e; the exponent is an int32 without
derivative.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> m, e = wnp.frexp(wnp.array([12.0, -0.375]))
        >>> m.tolist(), e.tolist()
        ([0.75, -0.75], [4, -1])
        >>> wg.grad(lambda x: wnp.sum(wnp.frexp(x)[0]))(wnp.array([12.0, -0.375]))
        array([0.0625, 2.    ])
"""
spacing = _real_ufunc(_np.spacing, lambda x: S.spacing(_as_numpy_computes(_np.spacing, x)))
spacing.__doc__ = """NumPy's ``spacing``: the distance from x to the next float away from
zero (negative for negative x).  Its derivative is zero: it is constant between powers of
two.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> wnp.spacing(wnp.array([1.0, -4.0])).tolist() == [2.0 ** -52, -(2.0 ** -50)]
        True
        >>> wg.grad(lambda x: wnp.sum(wnp.spacing(x)))(wnp.array([1.0, 3.0]))
        array([0., 0.])
"""
nextafter = _real_ufunc(_np.nextafter, S.nextafter)
nextafter.__doc__ = """NumPy's ``nextafter``: the float after x towards y.  Its value works
on traced values (eagerly, under ``wg.compile`` and ``wg.vmap``), but, as in JAX, it has
no derivative rule: differentiating through it raises `NotImplementedError` (a derivative
in x would be 1 between the floats and undefined at them).  To use its value as a
constant in a gradient, give it ``wg.stop_gradient(x)`` (nothing behind a stop_gradient
is differentiated, compiled or not).

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> f = lambda x: x * (wnp.nextafter(wg.stop_gradient(x), wnp.inf) - x)
        >>> wg.grad(f)(1.0) == 2.0 ** -52 - 1.0
        True
"""


@_numpy_unless_traced(_np.i0)
def i0(x):
    """NumPy's ``i0``, the modified Bessel function of the first kind of order 0, evaluated
    by NumPy; its derivative is I₁ (SciPy's i1 where installed, else wengert's own, within
    about 2e-15 of it), whose own derivative is I₀ - I₁/x, so every order works.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> float(wnp.i0(1.0)) == float(wg.value(wg.trace(wnp.i0, 1.0)(1.0)))
        True
        >>> print(f"{wg.grad(wnp.i0)(1.0):.12f}")             # I₁(1)
        0.565159103992
    """
    if A.dtype_of(x).kind == "c":
        raise TypeError("i0 not supported for complex values")
    if A.dtype_of(x).kind != "f":
        x = astype(x, _np.float64)
    return SP.i0(x)


@_numpy_unless_traced(_np.kaiser, any_argument=True)
def kaiser(M, beta):
    """NumPy's ``kaiser`` window, differentiable in `beta`: NumPy's formula,
    I₀(β √(1 − ((n − α)/α)²)) / I₀(β) for n = 0, ..., M − 1 and α = (M − 1)/2, with `i0`
    (ones(1) for M = 1, empty for M < 1).  M is a length: a traced M is read by its value.

    Example:
        >>> import wengert as wg, wengert.numpy as np
        >>> np.kaiser(3, 2.0).round(4)
        array([0.4387, 1.    , 0.4387])
        >>> print(f"{wg.grad(lambda beta: np.kaiser(3, beta)[0])(2.0):.4f}")   # -I₁(2)/I₀(2)²
        -0.3061
    """
    M = _value_of(M, "used as a window length by numpy.kaiser")
    # (NumPy's values: its errors, and its dtype, float64 at least)
    values = _np.array([0.0, M, _stand_in(beta)])
    M = values[1]
    beta = astype(beta, values.dtype)
    if M == 1:
        return _np.ones(1, values.dtype)
    n = _np.arange(0, M)
    alpha = (M - 1) / 2.0
    return i0(beta * _np.sqrt(1 - ((n - alpha) / alpha) ** 2.0)) / i0(beta)


# ---- classification and sign: bools without derivative, and the functions built on them ----
isnan = _Ufunc(_np.isnan, lambda x: S.ne(x, x))


def _isinf(x):
    if A.dtype_of(x).kind == "c":       # (as isfinite's)
        return S.maximum(_isinf(S.real(x)), _isinf(S.imag(x)))
    return S.eq(S.abs(x), inf)


isinf = _Ufunc(_np.isinf, _isinf)


def _signbit(x):
    # atan2(x, -1) is -π for -0.0 and below zero exactly where x's sign bit is set (the
    # sign of a nan is not read: False, where NumPy reads the bit of a -nan)
    if A.dtype_of(x).kind in "iub":
        return S.lt(x, 0)
    return S.lt(S.atan2(x, -1.0), 0)


signbit = _real_ufunc(_np.signbit, _signbit)


@_numpy_unless_traced(_np.isposinf)
def isposinf(x, out=None):
    """NumPy's ``isposinf``: bools, no derivative (recorded, so it traces without values).

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> wg.trace(wnp.isposinf, wnp.array([1.0, wnp.inf, -wnp.inf]))(
        ...     wnp.array([wnp.inf, 2.0, -wnp.inf])).tolist()
        [True, False, False]
    """
    return _signed_inf("isposinf", x, out, lambda x: logical_not(signbit(x)))


@_numpy_unless_traced(_np.isneginf)
def isneginf(x, out=None):
    """NumPy's ``isneginf``: bools, no derivative (recorded, as `isposinf`).

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> wg.trace(wnp.isneginf, wnp.ones(3))(wnp.array([1.0, wnp.inf, -wnp.inf])).tolist()
        [False, False, True]
    """
    return _signed_inf("isneginf", x, out, signbit)


def _signed_inf(fname, x, out, sign_test):
    _refuse(fname, out=out is not None)
    if A.dtype_of(x).kind == "c":          # (NumPy's: signbit has no complex loop)
        raise TypeError(f"This operation is not supported for {A.dtype_of(x)} values "
                        "because it would be ambiguous.")
    return logical_and(isinf(x), sign_test(x))


@_numpy_unless_traced(_np.iscomplex)
def iscomplex(x):
    """NumPy's ``iscomplex``: where the imaginary part is not zero (bools, no derivative);
    all False for a real dtype.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> wg.trace(wnp.iscomplex, wnp.ones(2, complex))(wnp.array([1 + 2j, 3 + 0j])).tolist()
        [True, False]
    """
    if A.dtype_of(x).kind == "c":
        return S.ne(S.imag(x), 0.0)
    return _np.zeros(x.shape, bool)[()]


@_numpy_unless_traced(_np.isreal)
def isreal(x):
    """NumPy's ``isreal``: where the imaginary part is zero (bools, no derivative); all True
    for a real dtype.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> wg.trace(wnp.isreal, wnp.ones(2, complex))(wnp.array([1 + 2j, 3 + 0j])).tolist()
        [False, True]
    """
    return imag(x) == 0


def _float_result(*xs):
    """The float dtype NumPy gives a float ufunc of `xs`: their promotion, a weak traced
    value (a Python number's) giving way as a Python number does; float64 for integers."""
    from ..primitives.registry import is_weak, _WEAK_STAND_IN
    return _np.result_type(*[_WEAK_STAND_IN[x.dtype.kind] if type(x) is Node and is_weak(x)
                             else A.dtype_of(x) if type(x) is Node else x for x in xs], 1.0)


def _copysign(x, y):
    # |x| with y's sign: the derivative in x is sign(x)·(±1), through abs; none in y
    dt = _float_result(x, y)
    x = S.abs(astype(x, dt) if A.dtype_of(x) != dt else x)
    return S.select(_signbit(y), S.neg(x), x)


copysign = _real_ufunc(_np.copysign, _copysign)


def _heaviside(x, h):
    # 0 below zero, h at zero, 1 above, nan for nan (no derivative in x; 1 in h at zero)
    dt = _float_result(x, h)
    step = S.select(S.gt(x, 0), 1.0, S.select(S.lt(x, 0), 0.0, S.stop_gradient(x)))
    out = S.select(S.eq(x, 0), h, step)
    return astype(out, dt) if A.dtype_of(out) != dt else out


heaviside = _real_ufunc(_np.heaviside, _heaviside)


def _float_power(x, y):
    # NumPy computes it in float64 (complex128 for complex arguments) whatever the inputs
    if not _traced(x):
        x = _np.asarray(x)
    if not _traced(y):
        y = y if type(y) in (int, float, bool, complex) else _np.asarray(y)
    dt = _np.complex128 if A.dtype_of(x).kind == "c" or A.dtype_of(y).kind == "c" \
        else _np.float64
    x = astype(x, dt)
    y = astype(y, dt) if _traced(y) else dt(y) if type(y) in (int, float, bool, complex) \
        else _np.asarray(y, dt)
    return S.power(x, y)


float_power = _Ufunc(_np.float_power, _float_power)


def _ldexp(x, n):
    # x·2**n, exact; n is an integer without derivative
    n = n if _traced(n) else _np.asarray(n)
    if A.dtype_of(n).kind not in "iub":
        raise TypeError("ufunc 'ldexp' not supported for the input types, and the inputs "
                        "could not be safely coerced to any supported types according to "
                        "the casting rule ''safe''")
    dt = _float_result(x)
    x = astype(x, dt) if A.dtype_of(x) != dt else x
    two_n = S.exp2(astype(n, dt)) if _traced(n) else _np.ldexp(_np.ones((), dt), n)
    return S.mul(x, two_n)


ldexp = _real_ufunc(_np.ldexp, _ldexp)


def _conj_complex(x):
    """x's conjugate if it is complex, else x itself: the conjugate the sums of products
    (vdot, vecdot, correlate) take, where NumPy's conjugate of a bool array, int8, would
    change their dtype."""
    return S.conj(x) if A.dtype_of(x).kind == "c" else x


conjugate = conj = _Ufunc(_np.conjugate, _conj_complex)


def _bool_only(npufunc, on_bools):
    """A logical ufunc on traced values: written with comparisons for bools (a value without
    derivative); integers' bitwise form is not supported, and floats are NumPy's TypeError."""
    def traced(*xs):
        kinds = {A.dtype_of(x).kind for x in xs}
        if kinds <= {"b"}:
            return on_bools(*xs)
        if kinds & {"f", "c"}:
            raise TypeError(f"ufunc {npufunc.__name__!r} not supported for floating inputs")
        raise NotImplementedError(f"numpy.{npufunc.__name__} is not supported on traced "
                                  "integer values")
    return _Ufunc(npufunc, traced)


# On bools, and is the minimum, or the maximum, xor inequality, not equality with False.
bitwise_and = _bool_only(_np.bitwise_and, S.minimum)
bitwise_or = _bool_only(_np.bitwise_or, S.maximum)
bitwise_xor = _bool_only(_np.bitwise_xor, S.ne)
invert = bitwise_not = _bool_only(_np.invert, lambda x: S.eq(x, False))


def _truth(x):
    return x if A.dtype_of(x).kind == "b" else S.ne(x, 0)


logical_and = _Ufunc(_np.logical_and, lambda x, y: S.minimum(_truth(x), _truth(y)))
logical_or = _Ufunc(_np.logical_or, lambda x, y: S.maximum(_truth(x), _truth(y)))
logical_xor = _Ufunc(_np.logical_xor, lambda x, y: S.ne(_truth(x), _truth(y)))
logical_not = _Ufunc(_np.logical_not, lambda x: S.eq(_truth(x), False))


@_numpy_unless_traced(_np.round)
def round(a, decimals=0, out=None):
    """NumPy's ``round`` (half to even); its derivative is zero."""
    _refuse("round", out=out is not None)
    if A.dtype_of(a).kind == "b":
        a = astype(a, _np.float16)          # (NumPy's round of bools: its float16 loop)
    return S.round(a, decimals=int(decimals))


around = round


@_numpy_unless_traced(_np.fix)
def fix(x, out=None):
    """NumPy's ``fix`` (rounding towards zero, as `trunc`); its derivative is zero."""
    _refuse("fix", out=out is not None)
    return S.trunc(x)


@_numpy_unless_traced(_np.where, any_argument=True)
def where(condition, x=None, y=None, /):
    """``x`` where ``condition`` holds, else ``y`` (elementwise); the derivative flows
    through the branch selected.  With one argument, NumPy's index form (on the value)."""
    if x is None and y is None:
        return _np.where(_value_of(condition))
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    return S.select(condition, x, y)


@_numpy_unless_traced(_np.clip, any_argument=True)
def clip(a, a_min=_NoValue, a_max=_NoValue, out=None, *, min=_NoValue, max=_NoValue,
         **kwargs):
    """``a`` limited to ``[a_min, a_max]``; the derivative is 1 inside, 0 where clipped."""
    _refuse("clip", out=out is not None, **{k: True for k in kwargs})
    lo = min if a_min is _NoValue else a_min
    hi = max if a_max is _NoValue else a_max
    if lo is not _NoValue and lo is not None:
        a = S.maximum(a, lo)
    if hi is not _NoValue and hi is not None:
        a = S.minimum(a, hi)
    return a


@_numpy_unless_traced(_np.sinc)
def sinc(x):
    """NumPy's ``sinc``, sin(πx)/(πx) and 1 at 0, differentiable.  Where |πx| < 1/2 the
    value and the derivatives come from the series Σ (-1)ᵏ (πx)²ᵏ/(2k+1)! to k = 10 (its
    remainder is below 1e-29 there, and its derivatives' too), elsewhere from the
    quotient: the quotient's k-th derivative cancels as 1/(πx)ᵏ near 0, and at 0 is
    0/0 (it is computed at 1 there instead)."""
    small = S.lt(S.abs(x), 0.5 / pi)
    y = S.mul(pi, S.select(small, 1.0, x))
    z = S.mul(pi, x)
    z2 = S.mul(z, z)
    series = _SINC_SERIES[-1]
    for c in reversed(_SINC_SERIES[:-1]):     # Horner's rule in (πx)²
        series = S.add(S.mul(series, z2), c)
    return S.select(small, series, S.div(S.sin(y), y))


_SINC_SERIES = [(-1) ** k / _math.factorial(2 * k + 1) for k in range(11)]


@_numpy_unless_traced(_np.nan_to_num)
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NumPy's ``nan_to_num``: nan, inf and -inf replaced by numbers (by default 0 and the
    largest finite numbers of x's dtype).  The derivative is 1 where x is finite, 0 where
    a value was replaced.  (A traced value has no memory: ``copy`` changes nothing.)"""
    dt = A.dtype_of(x)
    if dt.kind == "c":                      # NumPy's: the two parts apart
        parts = [nan_to_num(part(x), copy, nan, posinf, neginf) for part in (S.real, S.imag)]
        return S.make_complex(*parts)
    if dt.kind != "f":
        return x                            # integers and bools hold no nan or inf
    big = _np.finfo(dt)

    def number(v):                          # (in x's dtype, as NumPy's; traced or not)
        return astype(v, dt) if _traced(v) else dt.type(v)
    hi = big.max if posinf is None else number(posinf)
    lo = big.min if neginf is None else number(neginf)
    replacement = S.select(S.ne(x, x), number(nan), S.select(S.gt(x, 0), hi, lo))
    return S.select(isfinite(x), x, replacement)


@_numpy_unless_traced(_np.real)
def real(val):
    """NumPy's ``real``: the real part of a complex value, a real value itself.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> g = wg.grad(lambda x: wnp.real(wnp.exp(1j * x)))(0.5)    # d cos(x)/dx
        >>> f"{g:.12f} {-wnp.sin(0.5):.12f}"
        '-0.479425538604 -0.479425538604'
    """
    return S.real(val) if A.dtype_of(val).kind == "c" else val


@_numpy_unless_traced(_np.imag)
def imag(val):
    """NumPy's ``imag``: the imaginary part of a complex value; zeros (a constant) for a
    real one.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> wg.grad(lambda x: wnp.imag(wnp.exp(1j * x)))(0.0)     # d sin(x)/dx at 0
        1.0
    """
    if A.dtype_of(val).kind == "c":
        return S.imag(val)
    return _np.zeros(_shape(val), A.dtype_of(val))


@_numpy_unless_traced(_np.angle)
def angle(z, deg=False):
    """NumPy's ``angle``: the argument atan2(Im z, Re z) of a complex value, in radians
    (degrees with ``deg``); for a real value 0 or π by its sign, with derivative zero.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> wg.grad(lambda x: wnp.angle(1.0 + 1j * x))(0.0)     # d atan(x)/dx at 0
        1.0
    """
    if A.dtype_of(z).kind == "c":
        out = S.atan2(S.imag(z), S.real(z))
    else:
        out = S.stop_gradient(S.atan2(0, z))     # (NumPy's dtype: int8 gives float16)
    return S.mul(out, 180 / pi) if deg else out     # (NumPy's a *= 180/pi)


@_numpy_unless_traced(_np.real_if_close)
def real_if_close(a, tol=100):
    """NumPy's ``real_if_close``: the real part of a complex value whose imaginary parts
    are all within `tol` machine epsilons of zero (which reads its value), else itself."""
    if A.dtype_of(a).kind != "c":
        return a
    value = _value_of(a, "read by numpy.real_if_close")
    return S.real(a) if _np.isrealobj(_np.real_if_close(value, tol)) else a


@_numpy_unless_traced(_np.unwrap, any_argument=True)
def unwrap(p, discont=None, axis=-1, *, period=2 * pi):
    """NumPy's ``unwrap``, differentiable: p plus the multiples of `period` that undo each
    jump larger than `discont`, computed as NumPy does.  The corrections are piecewise
    constant, so the derivative in p is 1 (and a traced `period` gets the multiple of
    itself added).

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> p = wnp.array([3.0, -3.0, -2.5])                  # a jump of 2π - 6 across π
        >>> (wnp.unwrap(p) - p).round(6).tolist()
        [0.0, 6.283185, 6.283185]
        >>> wg.grad(lambda p: wnp.sum(wnp.unwrap(p) ** 2) / 2)(p).round(4).tolist()
        [3.0, 3.2832, 3.7832]
    """
    p = asarray(p)
    dd = diff(p, axis=axis)
    if discont is None:
        discont = period / 2
    ax = _one_axis(axis, p.ndim, "unwrap")
    later = (slice(None),) * ax + (slice(1, None),)
    dtype = _np.result_type(A.dtype_of(dd), A.dtype_of(period) if _traced(period) else period)
    if dtype.kind in "iu":
        # integers: a period of 2k leaves the boundary ±k ambiguous (NumPy's rule)
        interval_high, rem = builtins.divmod(_value_of(period, "read by unwrap"), 2)
        boundary_ambiguous = rem == 0
    else:
        interval_high, boundary_ambiguous = period / 2, True
    interval_low = -interval_high
    ddmod = remainder(dd - interval_low, period) + interval_low
    if boundary_ambiguous:
        # a jump of exactly half a period keeps its direction
        ddmod = where(logical_and(equal(ddmod, interval_low), greater(dd, 0)),
                      interval_high, ddmod)
    correction = where(less(abs(dd), discont), 0, ddmod - dd)
    first = (slice(None),) * ax + (slice(None, 1),)
    out = concatenate([p[first], p[later] + cumsum(correction, ax)], ax)
    return astype(out, dtype)


@_numpy_unless_traced(_np.sort_complex)
def sort_complex(a):
    """NumPy's ``sort_complex``: sorted along the last axis by real part, then imaginary
    part, as a complex array; the derivative follows the permutation (as `sort`'s).

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> wnp.sort_complex(wnp.array([1 + 2j, 1 - 1j, 0 + 5j])).tolist()
        [5j, (1-1j), (1+2j)]
        >>> wg.grad(lambda a: wnp.real(wnp.sort_complex(a)[0]))(wnp.array([3.0, 2.0]))
        array([0., 1.])
    """
    if A.dtype_of(a).kind != "c":
        b = sort(a)
        char = A.dtype_of(a).char
        return astype(b, "F" if char in "bhBH" else "G" if char == "g" else "D")
    order = lexsort((S.imag(a), S.real(a)))
    return take_along_axis(a, order, -1)


def _value_of(x, what="used as an index"):
    if type(x) is Node:
        return x._concrete(what)
    return x


# ---- reductions ----------------------------------------------------------------------------
# What `where=` and `initial=` mean for each reduction: the value masked-out elements take
# (None: no identity, NumPy then wants `initial`), and how `initial` joins the result.
_JOIN = {A.sum: (0.0, S.add), A.prod: (1.0, S.mul), A.amax: (None, S.maximum),
         A.amin: (None, S.minimum)}


def _reduce(fname, prim, a, axis, dtype, out, keepdims, initial, where):
    """NumPy's reduction `fname` of a traced `a` by primitive `prim`."""
    if dtype is not None or out is not None or initial is not _NoValue or where is not True:
        _refuse(fname, out=out is not None)
        if dtype is not None:
            a = astype(a, dtype)            # NumPy reduces in the dtype asked for
        fill, join = _JOIN[prim]
        if where is not True:
            if fill is None:
                if initial is _NoValue:
                    raise ValueError(f"reduction operation {fname!r} does not have an "
                                     "identity, so to use a where mask one has to specify "
                                     "'initial'")
                fill = initial
            a = S.select(where, a, fill)
    axes = _norm_axis(axis, a.ndim, fname)
    if initial is not _NoValue and _JOIN[prim][0] is None and 0 in [
            a.shape[i] for i in (range(a.ndim) if axes is None else axes)]:
        # max or min over nothing: `initial` alone (NumPy's; the primitive has no identity
        # to start from, and a constant has no derivative, as nothing reached it)
        shape = tuple(1 if axes is None or i in axes else d for i, d in enumerate(a.shape)
                      if keepdims or not (axes is None or i in axes))
        return _np.full(shape, initial, dtype=_np.result_type(a.dtype, initial))
    out = prim(a, axis=axes, keepdims=bool(keepdims))
    return out if initial is _NoValue else join(out, initial)


@_numpy_unless_traced(_np.sum)
def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True):
    """NumPy's ``sum``, differentiable."""
    return _reduce("sum", A.sum, a, axis, dtype, out, keepdims, initial, where)


@_numpy_unless_traced(_np.prod)
def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True):
    """NumPy's ``prod``, differentiable."""
    return _reduce("prod", A.prod, a, axis, dtype, out, keepdims, initial, where)


@_numpy_unless_traced(_np.max)
def max(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True):
    """NumPy's ``max``, differentiable (the derivative is shared among tied elements)."""
    return _reduce("max", A.amax, a, axis, None, out, keepdims, initial, where)


@_numpy_unless_traced(_np.min)
def min(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True):
    """NumPy's ``min``, differentiable (the derivative is shared among tied elements)."""
    return _reduce("min", A.amin, a, axis, None, out, keepdims, initial, where)


amax, amin = max, min


def _count(a, axes, keepdims, where):
    """How many elements a mean over `axes` divides by."""
    if where is True:
        return a.size if axes is None else _math.prod([a.shape[i] for i in axes])
    # (in the precision of a's parts: a float32 or complex64 mean stays so, as NumPy's)
    real = _real_dtype(_float_result(a))
    return sum(broadcast_to(astype(S.select(where, 1.0, 0.0), real), a.shape), axes,
               keepdims=keepdims)


@_numpy_unless_traced(_np.mean)
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """NumPy's ``mean``, differentiable."""
    _refuse("mean", out=out is not None)
    half = dtype is None and A.dtype_of(a) == _np.float16
    # (NumPy sums a float16 mean in float32 and rounds once at the end)
    a = _float_cast("mean", a, _np.float32 if half else dtype)
    axes = _norm_axis(axis, a.ndim, "mean")
    m = sum(a, axes, keepdims=keepdims, where=where) / _count(a, axes, keepdims, where)
    return astype(m, _np.float16) if half else m


_mean = mean            # (var and std have an argument called mean)


def _ddof(ddof, correction):
    if correction is _NoValue:
        return ddof
    if ddof != 0:
        raise ValueError("ddof and correction can't be provided simultaneously.")
    return correction


@_numpy_unless_traced(_np.var)
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
        mean=_NoValue, correction=_NoValue):
    """NumPy's ``var``, differentiable (``ddof`` or ``correction``, a given ``mean``); of
    complex values the mean of |x - mean|², a real value, as NumPy's."""
    _refuse("var", out=out is not None)
    ddof = _ddof(ddof, correction)
    a = _float_cast("var", a, dtype)
    axes = _norm_axis(axis, a.ndim, "var")
    # (a float16 variance's mean is summed in float16, as NumPy's, unlike a float16 mean)
    half = _np.float16 if A.dtype_of(a) == _np.float16 else None
    d = a - (_mean(a, axes, half, keepdims=True, where=where) if mean is _NoValue else mean)
    if where is not True:
        # (a masked-out inf or nan, the data where= leaves out, would make the whole
        # gradient nan through d², whose cotangent there is 0 times 2d)
        d = S.select(where, d, 0.0)
    # (NumPy divides by no fewer than 0 degrees of freedom: ddof beyond the count gives
    # inf, not a negative variance)
    dof = _count(a, axes, keepdims, where) - ddof
    _warn("Degrees of freedom <= 0 for slice", dof <= 0)
    dof = builtins.max(dof, 0) if isinstance(dof, (int, float)) else maximum(dof, 0)
    # (summed in the dtype asked for, as NumPy's: a complex one gives a complex variance)
    return sum(_abs2(d), axes, dtype, keepdims=keepdims, where=where) / dof


def _abs2(x):
    """|x|², real: x·x, or for a complex x Re(x·x̄) as NumPy's var and norm compute it (x·x
    would be the complex square, and abs(x)**2 rounds differently from NumPy)."""
    if A.dtype_of(x).kind == "c":
        return S.real(S.mul(x, S.conj(x)))
    return x * x


@_numpy_unless_traced(_np.std)
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
        mean=_NoValue, correction=_NoValue):
    """NumPy's ``std``, differentiable."""
    _refuse("std", out=out is not None)
    return sqrt(var(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean,
                    correction=correction))


@_accepts_duals       # (not NumPy's: no __array_function__ takes a Dual here)
def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """``log(sum(b * exp(a)))`` over `axis`, computed stably: scipy.special.logsumexp, with
    its arguments and conventions.  `b` (scale factors, 1 if None) broadcasts against `a`;
    a factor 0 leaves its term out, whatever `a` holds there.  A negative sum gives nan,
    unless ``return_sign``, which gives ``(log|sum|, sign)`` with the sign -1, 0 or 1
    (without derivative).  Differentiable in `a` and `b`; without `b` the gradient is the
    softmax.  (Without `b` one primitive, with its own rules; with `b` another.)

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> value, sign = np.logsumexp([1.0, 2.0], b=[1.0, -1.0], return_sign=True)
        >>> print(f"{value:.6f}", sign)
        1.541325 -1.0
        >>> wg.grad(lambda b: np.logsumexp(numpy.zeros(2), b=b))(numpy.array([1.0, 3.0]))
        array([0.25, 0.25])
    """
    if _traced(a, b):
        a = asarray(a)
        b = None if b is None else asarray(b) if type(b) in (list, tuple) else b
    else:
        a = _np.asarray(a)
        b = b if b is None or isinstance(b, (int, float)) else _np.asarray(b)
    if A.dtype_of(a).kind not in "fc":
        a = astype(a, _np.float64)          # (SciPy's answer for integers: float64)
    if b is None:
        axes = _norm_axis(axis, len(_shape(a)), "logsumexp")
        out = A.logsumexp(a, axis=axes, keepdims=bool(keepdims))
        sign = A.logsumexp_sign(a, 1.0, axis=axes, keepdims=bool(keepdims)) \
            if return_sign else None
    else:
        try:
            full = _np.broadcast_shapes(_shape(a), _shape(b))
        except ValueError:
            raise ValueError(f"logsumexp: a of shape {_shape(a)} and b of shape {_shape(b)} "
                             "cannot be broadcast together") from None
        axes = _norm_axis(axis, len(full), "logsumexp")
        out = A.logsumexp_scaled(a, b, axis=axes, keepdims=bool(keepdims),
                                 signed=bool(return_sign))
        sign = A.logsumexp_sign(a, b, axis=axes, keepdims=bool(keepdims)) \
            if return_sign else None
    if type(out) is _np.ndarray and out.ndim == 0:
        out = out[()]                       # a scalar, as SciPy gives
        sign = None if sign is None else sign[()]
    return (out, sign) if return_sign else out


def _accumulated(prim, name, a, axis, dtype, out):
    """cumsum and cumprod: over the flattened array when axis is None."""
    _refuse(name, out=out is not None)
    if dtype is not None:
        a = astype(a, dtype)
    if axis is None:
        a, axis = ravel(a), 0
    return prim(a, axis=_one_axis(axis, a.ndim, name))


@_numpy_unless_traced(_np.cumsum)
def cumsum(a, axis=None, dtype=None, out=None):
    """NumPy's ``cumsum``, differentiable (over the flattened array when axis is None)."""
    return _accumulated(A.cumsum, "cumsum", a, axis, dtype, out)


@_numpy_unless_traced(_np.cumprod)
def cumprod(a, axis=None, dtype=None, out=None):
    """NumPy's ``cumprod``, differentiable, and exactly so where the array holds zeros: the
    derivatives are written without dividing by x (a scan of products, see
    `wengert.primitives.array.cumprod`)."""
    return _accumulated(A.cumprod, "cumprod", a, axis, dtype, out)


def _cumulative(fname, accumulate, identity, x, axis, dtype, out, include_initial):
    """cumulative_sum and cumulative_prod (the array API's): `accumulate` (cumsum or
    cumprod) along `axis`, which a 1-D array may leave out, with ``include_initial`` the
    identity first."""
    _refuse(fname, out=out is not None)
    x = atleast_1d(x)
    if axis is None:
        if x.ndim >= 2:
            raise ValueError("For arrays which have more than one dimension ``axis`` "
                             "argument is required.")
        axis = 0
    res = accumulate(x, axis, dtype)
    if include_initial:
        ax = _one_axis(axis, res.ndim, fname)
        shape = list(res.shape)
        shape[ax] = 1
        res = concatenate([_np.full(shape, identity, res.dtype), res], axis=ax)
    return res


if hasattr(_np, "cumulative_sum"):          # (NumPy 2.1)
    @_numpy_unless_traced(_np.cumulative_sum)
    def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        """NumPy's ``cumulative_sum``, differentiable: `cumsum` along `axis` (needed for
        more than one dimension), with ``include_initial`` a 0 first.

        Example:
            >>> import numpy, wengert as wg, wengert.numpy as np
            >>> np.cumulative_sum(numpy.array([1.0, 2.0, 3.0]), include_initial=True).tolist()
            [0.0, 1.0, 3.0, 6.0]
            >>> wg.grad(lambda x: np.sum(np.cumulative_sum(x, axis=-1)))(numpy.ones((1, 3)))
            array([[3., 2., 1.]])
        """
        return _cumulative("cumulative_sum", cumsum, 0, x, axis, dtype, out, include_initial)

    @_numpy_unless_traced(_np.cumulative_prod)
    def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        """NumPy's ``cumulative_prod``, differentiable (exactly where x holds zeros, as
        `cumprod`): `cumprod` along `axis` (needed for more than one dimension), with
        ``include_initial`` a 1 first.

        Example:
            >>> import numpy, wengert as wg, wengert.numpy as np
            >>> np.cumulative_prod(numpy.array([2.0, 3.0]), include_initial=True).tolist()
            [1.0, 2.0, 6.0]
            >>> wg.grad(lambda x: np.sum(np.cumulative_prod(x)))(numpy.array([2.0, 0.0]))
            array([1., 2.])
        """
        return _cumulative("cumulative_prod", cumprod, 1, x, axis, dtype, out,
                           include_initial)


@_numpy_unless_traced(_np.argmax)
def argmax(a, axis=None, out=None, *, keepdims=False):
    """NumPy's ``argmax``: integers, no derivative (a value like a comparison's)."""
    _refuse("argmax", out=out is not None)
    return A.argmax(a, axis=None if axis is None else _one_axis(axis, a.ndim, "argmax"),
                    keepdims=bool(keepdims))


@_numpy_unless_traced(_np.argmin)
def argmin(a, axis=None, out=None, *, keepdims=False):
    """NumPy's ``argmin``: integers, no derivative (a value like a comparison's)."""
    _refuse("argmin", out=out is not None)
    return A.argmin(a, axis=None if axis is None else _one_axis(axis, a.ndim, "argmin"),
                    keepdims=bool(keepdims))


@_numpy_unless_traced(_np.all)
def all(a, axis=None, out=None, keepdims=False, *, where=True):
    """NumPy's ``all``: a bool without derivative (the minimum of the truth values)."""
    _refuse("all", out=out is not None, where=where is not True)
    return _logical_reduction(_np.all, min, a, axis, keepdims)


@_numpy_unless_traced(_np.any)
def any(a, axis=None, out=None, keepdims=False, *, where=True):
    """NumPy's ``any``: a bool without derivative (the maximum of the truth values)."""
    _refuse("any", out=out is not None, where=where is not True)
    return _logical_reduction(_np.any, max, a, axis, keepdims)


def _logical_reduction(numpy_f, extremum, a, axis, keepdims):
    """`all` / `any` as the `extremum` of the truth values; of an empty array (which has
    no extremum, but an identity: True for all, False for any) as NumPy's of a constant."""
    truth = _truth(a)
    shape = A.shape_of(truth)
    if 0 in shape:
        return numpy_f(_np.zeros(shape, bool), axis, keepdims=keepdims)
    return extremum(truth, axis, keepdims=keepdims)


@_numpy_unless_traced(_np.nonzero)
def nonzero(a):
    """NumPy's ``nonzero`` of the value (index arrays, which depend on it: like indexing
    with a traced mask, not possible while tracing without values)."""
    return _np.nonzero(a._concrete("used by nonzero()"))


@_numpy_unless_traced(_np.isclose, any_argument=True)
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """NumPy's ``isclose``, elementwise on traced values as NumPy computes it
    (|a − b| <= atol + rtol·|b| where b is finite, or a == b): bools, no derivative."""
    def prepared(v):
        if type(v) is Node or isinstance(v, (int, float, complex)):
            return v
        return _np.asanyarray(v)
    x, y = prepared(a), prepared(b)
    dt = getattr(y, "dtype", None)
    if dt is not None and dt.kind != "m":
        dt = _float_result(y)
        y = astype(y, dt) if A.dtype_of(y) != dt else y
    elif isinstance(y, int):
        y = float(y)
    # (inf − inf is left out rather than computed under NumPy's errstate, which a
    # compiled function would not have: where either is not finite only x == y counts)
    finite = logical_and(isfinite(x), isfinite(y))
    xf, yf = where(finite, x, 0), where(finite, y, 0)
    result = logical_or(logical_and(less_equal(abs(xf - yf), atol + rtol * abs(yf)), finite),
                        equal(x, y))
    if equal_nan:
        result = logical_or(result, logical_and(isnan(x), isnan(y)))
    return result


def _on_values(npfn, what="read by", doc=None, scalar=False):
    """NumPy's `npfn` of the values of traced arguments: for functions whose results
    (bools, counts, indices, strings) have no derivative and depend on the values, so that,
    like indexing with a traced mask, they are not possible while tracing without values
    (the ConcretizationError says the value was `what` ``npfn()``).  A value is an array of
    its node's dtype (a scalar node's may be a Python number), or with `scalar` a NumPy
    scalar where it has shape () (format_float_positional prints a 0-d float32 array as a
    Python float)."""
    what = f"{what} numpy.{npfn.__name__}()"
    as_value = (lambda v, dtype: _np.asarray(v, dtype)[()]) if scalar else _np.asarray

    def fn(*args, **kwargs):
        value = lambda v: as_value(v._concrete(what), v.dtype) if type(v) is Node else v
        return npfn(*[value(v) for v in args], **{k: value(v) for k, v in kwargs.items()})
    fn.__name__ = fn.__qualname__ = npfn.__name__
    fn.__doc__ = doc or (f"NumPy's ``{npfn.__name__}`` of the values (no derivative; not "
                         "while tracing without values).")
    return _numpy_unless_traced(npfn, any_argument=True)(fn)


allclose = _on_values(_np.allclose)
array_equal = _on_values(_np.array_equal)
array_equiv = _on_values(_np.array_equiv, doc="""NumPy's ``array_equiv`` of the values: a
    bool, no derivative (not while tracing without values, as `array_equal`).

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> wg.grad(lambda x: np.sum(x) if np.array_equiv(x, 1.0) else 0.0)(numpy.ones(2))
        array([1., 1.])
    """)


@_numpy_unless_traced(_np.count_nonzero)
def count_nonzero(a, axis=None, *, keepdims=False):
    """NumPy's ``count_nonzero``: how many elements (over `axis`) are not zero, an
    integer without derivative.  Traced, so it works while tracing without values too
    (where NumPy gives a Python int, a traced value of shape ()).

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> f = wg.compile(lambda x: np.count_nonzero(x > 0.5, axis=0), numpy.eye(3))
        >>> f(numpy.array([[0.0, 1.0], [0.7, 0.2]]))
        array([1, 1])
    """
    return sum(not_equal(a, 0), axis=axis, keepdims=keepdims)


flatnonzero = _on_values(_np.flatnonzero)
argwhere = _on_values(_np.argwhere)

# printing: the string of a traced value's value (a string has no derivative), where it has
# one; while tracing without values (wg.compile, wg.vmap, wg.trace) a ConcretizationError
for _name, _printed in (("array_str", "1.5"), ("array_repr", "array(1.5)"),
                        ("array2string", "1.5"), ("format_float_positional", "1.5"),
                        ("format_float_scientific", "1.5e+00")):
    _doc = f"""NumPy's ``{_name}`` of a traced value's value (a string: no derivative);
    while tracing without values (``wg.compile``, ``wg.vmap``, ``wg.trace``) a
    `ConcretizationError`.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> def loss(x):
        ...     print(np.{_name}(x[0]))
        ...     return np.sum(x ** 2)
        >>> wg.grad(loss)(numpy.array([1.5, 2.0]))
        {_printed}
        array([3., 4.])
    """
    globals()[_name] = _on_values(getattr(_np, _name), "printed by", _doc,
                                  scalar=_name.startswith("format"))


# ---- NaN-ignoring reductions and statistics ---------------------------------------------------
def _holds(*conditions) -> bool:
    """Whether any of the traced bools `conditions` holds somewhere, where their values are
    known (never while tracing without values)."""
    for c in conditions:
        value = c.value if type(c) is Node else c
        if value is not None and _np.any(value):
            return True
    return False


def _warn(message, *conditions, stacklevel=4):
    """NumPy's RuntimeWarning `message` if any of the traced bools `conditions` holds (see
    `_holds`); `stacklevel` 4 points at the caller of a function that calls this."""
    import warnings
    if _holds(*conditions):
        warnings.warn(message, RuntimeWarning, stacklevel=stacklevel)


@_numpy_unless_traced(_np.nansum)
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True):
    """NumPy's ``nansum``: the sum with NaNs counted as zero, which get no derivative."""
    if A.dtype_of(a).kind in "fc":
        a = S.select(S.ne(a, a), 0.0, a)
    return sum(a, axis, dtype, out, keepdims, initial, where)


@_numpy_unless_traced(_np.nanmean)
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """NumPy's ``nanmean``: the mean of the elements that are not NaN (which get no
    derivative); an all-NaN slice is nan, with NumPy's RuntimeWarning."""
    _refuse("nanmean", out=out is not None, where=where is not True)
    if A.dtype_of(a).kind not in "fc":
        return mean(a, axis, dtype, keepdims=keepdims)
    a = _float_cast("nanmean", a, dtype)
    axes = _norm_axis(axis, a.ndim, "nanmean")
    keep = S.eq(a, a)
    count = sum(astype(keep, A.dtype_of(a)), axes, keepdims=keepdims)
    # (an all-NaN slice is nan without a division by its count 0, whose derivative would
    # send nan to the NaNs)
    empty = S.eq(count, 0)
    total = sum(S.select(keep, a, 0.0), axes, keepdims=keepdims)
    out = S.select(empty, nan, total / S.select(empty, 1.0, count))
    _warn("Mean of empty slice", empty)
    return out


def _nan_extremum(fname, reduce, fill):
    npfn = getattr(_np, fname)

    def fn(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True):
        _refuse(fname, out=out is not None, initial=initial is not _NoValue,
                where=where is not True)
        if A.dtype_of(a).kind not in "fc":
            return reduce(a, axis, keepdims=keepdims)
        nan_ = S.ne(a, a)
        all_nan = all(nan_, axis, keepdims=keepdims)
        out = S.select(all_nan, nan, reduce(S.select(nan_, fill, a), axis, keepdims=keepdims))
        _warn("All-NaN slice encountered", all_nan)
        return out
    fn.__name__ = fn.__qualname__ = fname
    fn.__doc__ = (f"NumPy's ``{fname}``: NaNs are ignored (they get no derivative), an all-NaN "
                  "slice is nan with NumPy's RuntimeWarning; ties share the derivative.")
    return _numpy_unless_traced(npfn)(fn)


nanmax = _nan_extremum("nanmax", max, -inf)       # (this module's max and min)
nanmin = _nan_extremum("nanmin", min, inf)


def _nan_as(a, fill):
    """`a` with its NaNs replaced by `fill`, as NumPy's nan-functions replace them (the NaNs
    get no derivative); `a` itself if its dtype holds no NaN."""
    if A.dtype_of(a).kind not in "fc":
        return a
    return S.select(S.ne(a, a), fill, a)


@_numpy_unless_traced(_np.nanprod)
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True):
    """NumPy's ``nanprod``: the product with NaNs counted as one (they get no derivative).

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> wg.grad(lambda a: wnp.nanprod(a))(wnp.array([2.0, wnp.nan, 3.0]))
        array([3., 0., 2.])
    """
    return prod(_nan_as(a, 1.0), axis, dtype, out, keepdims, initial, where)


@_numpy_unless_traced(_np.nancumsum)
def nancumsum(a, axis=None, dtype=None, out=None):
    """NumPy's ``nancumsum``: the cumulative sum with NaNs counted as zero (they get no
    derivative).

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> wg.grad(lambda a: wnp.nancumsum(a)[-1] * 2)(wnp.array([1.0, wnp.nan, 3.0]))
        array([2., 0., 2.])
    """
    return cumsum(_nan_as(a, 0.0), axis, dtype, out)


@_numpy_unless_traced(_np.nancumprod)
def nancumprod(a, axis=None, dtype=None, out=None):
    """NumPy's ``nancumprod``: the cumulative product with NaNs counted as one (they get no
    derivative; exact at zeros, as `cumprod`).

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> wg.grad(lambda a: wnp.nancumprod(a)[-1])(wnp.array([2.0, wnp.nan, 3.0]))
        array([3., 0., 2.])
    """
    return cumprod(_nan_as(a, 1.0), axis, dtype, out)


@_numpy_unless_traced(_np.nanvar)
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
           mean=_NoValue, correction=_NoValue):
    """NumPy's ``nanvar``: the variance of the elements that are not NaN (which get no
    derivative), ``ddof`` or ``correction``, ``where``, a given ``mean``.  A slice with
    no more than ``ddof`` of them is nan, with NumPy's RuntimeWarning, and sends no
    derivative anywhere.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> a = wnp.array([1.0, wnp.nan, 3.0])
        >>> float(wnp.nanvar(a)), wg.grad(wnp.nanvar)(a).tolist()     # 2(x - mean)/n
        (1.0, [-1.0, 0.0, 1.0])
    """
    _refuse("nanvar", out=out is not None)
    if A.dtype_of(a).kind not in "fc":
        return var(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean,
                   correction=correction)
    total, dof, bad = _nan_squares("nanvar", a, axis, dtype, ddof, keepdims, where, mean,
                                   correction)
    return S.select(bad, nan, total / S.select(bad, 1.0, dof))


@_numpy_unless_traced(_np.nanstd)
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
           mean=_NoValue, correction=_NoValue):
    """NumPy's ``nanstd``: the square root of `nanvar` (NaNs get no derivative; a slice
    with no more than ``ddof`` numbers is nan, with NumPy's warning, and sends no
    derivative anywhere).

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> a = wnp.array([[1.0, wnp.nan, 3.0], [wnp.nan, 2.0, 4.0]])
        >>> wg.grad(lambda a: wnp.sum(wnp.nanstd(a, axis=1)))(a).tolist()
        [[-0.5, 0.0, 0.5], [0.0, -0.5, 0.5]]
    """
    _refuse("nanstd", out=out is not None)
    if A.dtype_of(a).kind not in "fc":
        return std(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean,
                   correction=correction)
    total, dof, bad = _nan_squares("nanstd", a, axis, dtype, ddof, keepdims, where, mean,
                                   correction)
    # (the square root of 1 where the slice is bad: sqrt(0)'s infinite derivative would
    # meet the zero cotangent there as nan)
    return S.select(bad, nan, sqrt(S.select(bad, 1.0, total / S.select(bad, 1.0, dof))))


def _nan_squares(fname, a, axis, dtype, ddof, keepdims, where, mean, correction):
    """For nanvar and nanstd: (the sum of squared deviations from the mean of the numbers,
    the degrees of freedom, where those are <= 0), NumPy's RuntimeWarning if they are."""
    if dtype is not None and _np.dtype(dtype).kind not in "fc":
        raise TypeError("If a is inexact, then dtype must be inexact")
    ddof = _ddof(ddof, correction)
    axes = _norm_axis(axis, a.ndim, fname)
    keep = S.eq(a, a)
    if where is not True:
        keep = logical_and(keep, where if _traced(where) else _np.asarray(where))
    real = _real_dtype(A.dtype_of(a) if dtype is None else _np.dtype(dtype))
    count = sum(astype(broadcast_to(keep, a.shape), real), axes, keepdims=True)
    if mean is _NoValue:
        empty = S.eq(count, 0)
        mean = sum(S.select(keep, a, 0.0), axes, dtype, keepdims=True) \
            / S.select(empty, 1.0, count)
    # (deviations in a's dtype, where NumPy subtracts in place)
    d = S.select(keep, astype(a - mean, A.dtype_of(a)), 0.0)
    total = sum(_abs2(d), axes, dtype, keepdims=keepdims)
    dof = (count if keepdims else reshape(count, _shape(total))) - ddof
    bad = S.le(dof, 0)
    _warn("Degrees of freedom <= 0 for slice.", bad, stacklevel=5)
    return total, dof, bad


@_numpy_unless_traced(_np.nanargmax)
def nanargmax(a, axis=None, out=None, *, keepdims=False):
    """NumPy's ``nanargmax``: integers, no derivative (NaNs are passed over).  An all-NaN
    slice is NumPy's ValueError, where the values are known (eager tracing; under
    ``wg.compile`` it is not checked).

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> def f(x):
        ...     return x[wnp.nanargmax(x)] ** 2
        >>> wg.grad(f)(wnp.array([1.0, wnp.nan, 3.0]))
        array([0., 0., 6.])
    """
    return _nan_arg("nanargmax", argmax, -inf, a, axis, out, keepdims)


@_numpy_unless_traced(_np.nanargmin)
def nanargmin(a, axis=None, out=None, *, keepdims=False):
    """NumPy's ``nanargmin``: integers, no derivative (as `nanargmax`).

    Example:
        >>> import wengert.numpy as wnp
        >>> int(wnp.nanargmin(wnp.array([wnp.nan, 3.0, 1.0])))
        2
    """
    return _nan_arg("nanargmin", argmin, inf, a, axis, out, keepdims)


def _nan_arg(fname, arg, fill, a, axis, out, keepdims):
    _refuse(fname, out=out is not None)
    if A.dtype_of(a).kind in "fc":
        nan_ = S.ne(a, a)
        if a.size and _holds(all(nan_, axis)):
            raise ValueError("All-NaN slice encountered")
        a = S.select(nan_, fill, a)
    return arg(a, axis, keepdims=keepdims)


@_numpy_unless_traced(_np.nanmedian)
def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """NumPy's ``nanmedian``, differentiable: the middle of the sorted numbers of each slice
    (the mean of the two middle ones for an even count), which get the derivative; the
    NaNs get none.  An all-NaN slice is nan, with NumPy's RuntimeWarning.  The count of
    each slice is recorded, not read, so it traces without values.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> a = wnp.array([[4.0, wnp.nan, 1.0, 2.0], [wnp.nan, 5.0, 6.0, wnp.nan]])
        >>> wnp.nanmedian(a, axis=1).tolist()
        [2.0, 5.5]
        >>> wg.grad(lambda a: wnp.sum(wnp.nanmedian(a, axis=1)))(a).tolist()
        [[0.0, 0.0, 0.0, 1.0], [0.0, 0.5, 0.5, 0.0]]
    """
    _refuse("nanmedian", out=out is not None)
    a = asarray(a)
    if A.dtype_of(a).kind not in "fc":
        return median(a, axis, keepdims=keepdims)
    if a.size == 0:
        return nanmean(a, axis, keepdims=keepdims)
    return _nan_quantile("nanmedian", a, 0.5, axis, keepdims, "linear", True)


@_numpy_unless_traced(_np.nanquantile)
def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None):
    """NumPy's ``nanquantile`` by its default method 'linear' (the others are refused by
    name, as `quantile`'s), differentiable in `a`: the two sorted numbers of each slice
    that are interpolated get the derivative, the NaNs none.  An all-NaN slice is nan,
    with NumPy's RuntimeWarning.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> a = wnp.array([3.0, wnp.nan, 1.0, 2.0])
        >>> float(wnp.nanquantile(a, 0.25))                   # 1 + (2 - 1)·0.5
        1.5
        >>> wg.grad(lambda a: wnp.nanquantile(a, 0.25))(a).tolist()
        [0.0, 0.0, 0.5, 0.5]
    """
    _refuse("nanquantile", out=out is not None, weights=weights is not None)
    _constant_q("nanquantile", q)
    a = asarray(a)
    if A.dtype_of(a).kind == "c":
        raise TypeError(f"a must be an array of real numbers, not {A.dtype_of(a)}")
    if A.dtype_of(a).kind != "f":                       # (no NaN to leave out)
        return quantile(a, q, axis, None, False, method, keepdims)
    weak = type(q) in (int, float)
    if not _np.all((_np.asarray(q) >= 0) & (_np.asarray(q) <= 1)):
        raise ValueError("Quantiles must be in the range [0, 1]")
    if a.size == 0:
        return nanmean(a, axis, keepdims=keepdims)
    return _nan_quantile("nanquantile", a, q, axis, keepdims, method, weak=weak)


@_numpy_unless_traced(_np.nanpercentile)
def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None):
    """NumPy's ``nanpercentile`` (`nanquantile` of q/100), differentiable in `a`.

    Example:
        >>> import wengert.numpy as wnp
        >>> float(wnp.nanpercentile(wnp.array([3.0, wnp.nan, 1.0, 2.0]), 50))
        2.0
    """
    _refuse("nanpercentile", out=out is not None, weights=weights is not None)
    _constant_q("nanpercentile", q)
    a = asarray(a)
    if A.dtype_of(a).kind == "c":
        raise TypeError(f"a must be an array of real numbers, not {A.dtype_of(a)}")
    if A.dtype_of(a).kind != "f":
        return percentile(a, q, axis, None, False, method, keepdims)
    weak = type(q) in (int, float)
    q = _np.true_divide(q, 100)
    if not _np.all((q >= 0) & (q <= 1)):
        raise ValueError("Percentiles must be in the range [0, 100]")
    if a.size == 0:
        return nanmean(a, axis, keepdims=keepdims)
    return _nan_quantile("nanpercentile", a, q, axis, keepdims, method, weak=weak)


def _constant_q(fname, q):
    if _traced(q):
        raise NotImplementedError(f"numpy.{fname} with traced q is not supported: only the "
                                  "array carries a derivative")


def _nan_quantile(fname, a, q, axis, keepdims, method, median=False, weak=False):
    """The q-th quantiles (method 'linear') of the numbers of each slice of `a`, the NaNs
    left out: the NaNs sort last, and the count of numbers n of each slice (recorded)
    places NumPy's positions q(n − 1) among the first n sorted values."""
    _quantile_method(fname, method)
    x, kept = _along_last(a, axis, fname)
    s = sort(x, axis=-1)
    count = sum(astype(S.eq(x, x), _np.intp), -1, keepdims=True)
    last = S.maximum(count - 1, 0)              # (the index of the last number; 0 if none)

    def at(k):                                  # the sorted values at indices k (..., Q)
        return take_along_axis(s, S.minimum(S.maximum(k, 0), last), -1)
    if median:
        # (NumPy's nanmedian halves the sum of the middle one taken twice for an odd count)
        out = (at(S.floor_divide(count - 1, 2)) + at(S.floor_divide(count, 2))) / 2
        out, qshape = reshape(out, tuple(x.shape[:-1])), ()
    else:
        qa = _np.asanyarray(q)
        qshape = qa.shape
        flat = qa.ravel()
        if qa.dtype.kind in "iub":              # q in {0, 1}: no interpolation
            out = at((count - 1) * flat.astype(_np.intp))
        else:
            # NumPy's virtual positions (n − 1)·q in q's dtype, the floor and the next
            # index (the last number for positions at or beyond it), the fraction between
            virtual = astype(count - 1, qa.dtype) * flat
            prev = S.floor(virtual)
            gamma = virtual - prev
            beyond = S.ge(virtual, astype(count - 1, qa.dtype))
            prev = astype(prev, _np.intp)
            lo = at(S.select(beyond, last, prev))
            hi = at(S.select(beyond, last, prev + 1))
            if weak:        # (NumPy's fraction is then a Python float, in the array's dtype)
                t, rest = astype(gamma, A.dtype_of(s)), astype(1.0 - gamma, A.dtype_of(s))
            else:
                t, rest = gamma, 1.0 - gamma
            d = hi - lo
            out = S.select(S.ge(gamma, 0.5), hi - d * rest, lo + d * t)
        out = moveaxis(out, -1, 0)
        out = reshape(out, qshape + tuple(x.shape[:-1]))
    empty = reshape(S.eq(count, 0), tuple(x.shape[:-1]))
    out = S.select(empty, nan, out)
    _warn("All-NaN slice encountered", empty, stacklevel=5)
    if keepdims:
        out = reshape(out, tuple(qshape) + kept)
    return out


@_numpy_unless_traced(_np.ptp)
def ptp(a, axis=None, out=None, keepdims=False):
    """NumPy's ``ptp`` (max − min), differentiable."""
    _refuse("ptp", out=out is not None)
    return max(a, axis, keepdims=keepdims) - min(a, axis, keepdims=keepdims)


@_numpy_unless_traced(_np.average, any_argument=True)
def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """NumPy's ``average``, differentiable in `a` and in `weights` (sum(a·w)/sum(w));
    with ``returned`` also the sum of the weights."""
    a = asarray(a)
    if weights is None:
        avg = mean(a, axis, keepdims=keepdims)
        scl = _np.asarray(a.size / builtins.max(_math.prod(_shape(avg)), 1),
                          A.dtype_of(avg))[()]
    else:
        w = asarray(weights)
        dt = _np.result_type(A.dtype_of(a), A.dtype_of(w), *(
            ["f8"] if A.dtype_of(a).kind in "iub" else []))
        if _shape(a) != _shape(w):
            if axis is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            axes = tuple(_axes(axis, a.ndim, "average"))
            if tuple(_shape(w)) != tuple(a.shape[i] for i in axes):
                raise ValueError("Shape of weights must be consistent with shape of a along "
                                 "specified axis.")
            # weights along `axis` (in the order given), broadcast over the other axes
            order = sorted(range(len(axes)), key=lambda i: axes[i])
            w = transpose(w, order) if order != list(range(len(axes))) else w
            w = reshape(w, tuple(d if i in axes else 1 for i, d in enumerate(a.shape)))
            w = broadcast_to(w, a.shape)
        scl = sum(astype(w, dt), axis, keepdims=keepdims)
        if _holds(S.eq(scl, 0)):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
        avg = sum(astype(a, dt) * astype(w, dt), axis, keepdims=keepdims) / scl
    if returned:
        if _shape(scl) != _shape(avg):
            scl = broadcast_to(scl, _shape(avg))
        return avg, scl
    return avg


@_numpy_unless_traced(_np.median)
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """NumPy's ``median``, differentiable: the middle of the sorted values (the mean of the
    two middle ones for an even count), so the derivative goes to those; nan if the slice
    holds a NaN."""
    _refuse("median", out=out is not None)
    return _quantile("median", a, 0.5, axis, keepdims)


def _along_last(a, axis, fname):
    """`a` with the axes `axis` (None: all) merged into a last one, and the shape a keepdims
    result has."""
    axes = tuple(range(a.ndim)) if axis is None else _norm_axis(axis, a.ndim, fname)
    others = [i for i in range(a.ndim) if i not in axes]
    kept = tuple(1 if i in axes else d for i, d in enumerate(a.shape))
    x = transpose(a, others + list(axes)) if others + list(axes) != list(range(a.ndim)) else a
    # (the merged length written out: -1 cannot be solved for where another axis is 0)
    merged = _math.prod([a.shape[i] for i in axes])
    return reshape(x, tuple(a.shape[i] for i in others) + (merged,)), kept


_QUANTILE_METHODS = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation",
                     "interpolated_inverted_cdf", "hazen", "weibull", "linear",
                     "median_unbiased", "normal_unbiased", "lower", "higher", "midpoint",
                     "nearest")


def _quantile_method(fname, method):
    """NumPy's ValueError for a method it does not know; the methods other than 'linear'
    are refused by name."""
    if method not in _QUANTILE_METHODS:
        raise ValueError(f"{method!r} is not a valid method. Use one of: "
                         f"{', '.join(_QUANTILE_METHODS)}")
    if method != "linear":
        raise NotImplementedError(f"numpy.{fname}(..., method={method!r}) is not supported "
                                  "on traced values (only 'linear')")


def _quantile(fname, a, q, axis, keepdims, method="linear", weak=False):
    """The q-th quantiles of `a` by NumPy's method 'linear': the sorted values at
    floor(q(n−1)) and the next, interpolated as NumPy does; a slice holding a NaN gives nan."""
    _quantile_method(fname, method)
    if _traced(q):
        raise NotImplementedError(f"numpy.{fname} with traced q is not supported: only the "
                                  "array carries a derivative")
    a = asarray(a)
    if A.dtype_of(a).kind in "iub":
        a = astype(a, _np.float64)
    x, kept = _along_last(a, axis, fname)
    n = x.shape[-1]
    s = sort(x, axis=-1)
    if fname == "median":
        if n == 0:              # NumPy's: the mean of nothing, nan, with its warnings
            _warn("Mean of empty slice", True, stacklevel=5)
            out = sum(x, axis=-1) * _np.nan
            return reshape(out, kept) if keepdims else reshape(out, x.shape[:-1])
        lo, hi = (n - 1) // 2, n // 2
        out = s[..., lo] if lo == hi else (s[..., lo] + s[..., hi]) / 2
        qshape = ()
    else:
        # NumPy's positions and weights, from the plain q: (n − 1)·q, its floor and the
        # next index (the last for q = 1), and the fraction between (a Python float, weak,
        # for a Python number q)
        qa = _np.asanyarray(q)
        virtual = _np.asanyarray((n - 1) * qa)
        qshape = qa.shape
        if virtual.dtype.kind in "iu":
            out = moveaxis(s[..., virtual.ravel()], -1, 0)
        else:
            prev = _np.floor(virtual)
            gamma = _np.asanyarray(virtual - prev, dtype=virtual.dtype)
            nxt = prev + 1
            above, below = virtual >= n - 1, virtual < 0
            prev, nxt = _np.where(above, -1, _np.where(below, 0, prev)), \
                _np.where(above, -1, _np.where(below, 0, nxt))
            lo = moveaxis(s[..., prev.astype(_np.intp).ravel()], -1, 0)
            hi = moveaxis(s[..., nxt.astype(_np.intp).ravel()], -1, 0)
            t = float(gamma) if weak else gamma.reshape((-1,) + (1,) * (x.ndim - 1))
            d = hi - lo
            out = where(_np.asarray(t) >= 0.5, hi - d * (1 - t), lo + d * t)
        out = reshape(out, qshape + tuple(x.shape[:-1]))
    if n and A.dtype_of(a).kind in "fc":
        has_nan = S.ne(s[..., -1], s[..., -1])
        out = S.select(has_nan, nan, out)
    if keepdims:
        out = reshape(out, tuple(qshape) + kept)
    return out


@_numpy_unless_traced(_np.quantile)
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None, interpolation=None):
    """NumPy's ``quantile`` by its default method 'linear', differentiable in `a`: the
    derivative goes to the two sorted values interpolated."""
    _refuse("quantile", out=out is not None, weights=weights is not None,
            interpolation=interpolation is not None)
    _constant_q("quantile", q)                  # (before NumPy reads it)
    if not _np.all((_np.asarray(q) >= 0) & (_np.asarray(q) <= 1)):
        raise ValueError("Quantiles must be in the range [0, 1]")
    return _quantile("quantile", a, q, axis, keepdims, method, type(q) in (int, float))


@_numpy_unless_traced(_np.percentile)
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    """NumPy's ``percentile`` (``quantile`` of q/100), differentiable in `a`."""
    _refuse("percentile", out=out is not None, weights=weights is not None,
            interpolation=interpolation is not None)
    _constant_q("percentile", q)                # (before NumPy reads it)
    weak = type(q) in (int, float)
    q = _np.true_divide(q, 100)
    if not _np.all((q >= 0) & (q <= 1)):
        raise ValueError("Percentiles must be in the range [0, 100]")
    return _quantile("percentile", a, q, axis, keepdims, method, weak)


@_numpy_unless_traced(_np.trapezoid, any_argument=True)
def trapezoid(y, x=None, dx=1.0, axis=-1):
    """NumPy's ``trapezoid`` (the trapezoidal rule along `axis`), differentiable in `y` and
    in the sample points `x` or spacing `dx`."""
    y = asarray(y)
    ax = _one_axis(axis, y.ndim, "trapezoid")
    if x is None:
        d = dx
    else:
        x = asarray(x)
        if len(_shape(x)) == 1:
            d = diff(x)
            d = reshape(d, tuple(-1 if i == ax else 1 for i in range(y.ndim)))
        else:
            d = diff(x, axis=ax)
    later = (slice(None),) * ax + (slice(1, None),)
    earlier = (slice(None),) * ax + (slice(None, -1),)
    return sum(d * (y[later] + y[earlier]) / 2.0, ax)


@_numpy_unless_traced(_np.take_along_axis)
def take_along_axis(arr, indices, axis=-1):
    """NumPy's ``take_along_axis``, differentiable in `arr` (integer `indices`)."""
    if type(indices) is Node and indices.value is None:
        # traced without values (an argsort's, or a batch of indices under wg.vmap):
        # recorded as they are (NumPy's indexing takes negative ones too)
        if indices.dtype.kind not in "iu":
            raise IndexError("`indices` must be an integer array")
    else:
        indices = _np.asarray(_value_of(indices, "used as indices"))
        if indices.dtype.kind not in "iu":
            raise IndexError("`indices` must be an integer array")
    if axis is None:
        if indices.ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        arr, axis = ravel(arr), 0
    if indices.ndim != arr.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    ax = _one_axis(axis, arr.ndim, "take_along_axis")
    shape = tuple(_np.broadcast_shapes(
        tuple(arr.shape[:ax]) + (1,) + tuple(arr.shape[ax + 1:]), indices.shape))
    if type(indices) is Node:
        if indices.shape != shape:
            indices = broadcast_to(indices, shape)
    else:
        indices = _np.ascontiguousarray(_np.broadcast_to(
            _np.where(indices < 0, indices + arr.shape[ax], indices), shape))
    base = list(shape)
    base[ax] = arr.shape[ax]
    arr = broadcast_to(arr, tuple(base)) if tuple(base) != arr.shape else arr
    return A.take_along_axis(arr, indices, axis=ax)


@_numpy_unless_traced(_np.meshgrid, any_argument=True)
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """NumPy's ``meshgrid`` ('xy' or 'ij' indexing, sparse or not), differentiable: each
    coordinate vector repeated (a traced value has no memory: ``copy`` changes nothing)."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    nd = len(xi)
    shapes = [(1,) * i + (-1,) + (1,) * (nd - i - 1) for i in range(nd)]
    if indexing == "xy" and nd > 1:
        shapes[0] = (1, -1) + (1,) * (nd - 2)
        shapes[1] = (-1, 1) + (1,) * (nd - 2)
    out = [reshape(asarray(x), s) for x, s in zip(xi, shapes)]
    if not sparse:
        full = _np.broadcast_shapes(*[_shape(x) for x in out])
        out = [broadcast_to(x, full) for x in out]
    return tuple(out)


@_numpy_unless_traced(_np.polyval, any_argument=True)
def polyval(p, x):
    """NumPy's ``polyval`` (Horner's rule, as NumPy computes it), differentiable in the
    coefficients and in x."""
    p, x = asarray(p), asarray(x)
    y = _np.zeros(_shape(x), A.dtype_of(x))
    for i in range(_shape(p)[0]):           # (one step per coefficient, as NumPy's)
        y = y * x + p[i]
    return y


@_numpy_unless_traced(_np.cov, any_argument=True)
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """NumPy's ``cov``, differentiable: the centred rows (or columns, ``rowvar=False``)
    times their conjugate transpose, over N − ddof (``bias``: N)."""
    _refuse("cov", fweights=fweights is not None, aweights=aweights is not None)
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    m = asarray(m)
    if len(_shape(m)) > 2:
        raise ValueError("m has more than 2 dimensions")
    if dtype is None:
        dtype = _np.result_type(A.dtype_of(m), *([] if y is None else [A.dtype_of(asarray(y))]),
                                _np.float64)
    X = _array_of(m, dtype, 2)
    if not rowvar and X.shape[0] != 1:
        X = transpose(X)
    if y is not None:
        y = asarray(y)
        if len(_shape(y)) > 2:
            raise ValueError("y has more than 2 dimensions")
        y = _array_of(y, dtype, 2)
        if not rowvar and y.shape[0] != 1:
            y = transpose(y)
        X = concatenate((X, y), axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    fact = X.shape[1] - ddof
    if fact <= 0:
        import warnings
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=3)
        fact = 0.0
    X = X - mean(X, axis=1, keepdims=True)
    with _np.errstate(divide="ignore"):
        c = dot(X, conj(transpose(X))) * _np.true_divide(1, fact)     # (Hermitian)
    return squeeze(c)


@_numpy_unless_traced(_np.corrcoef, any_argument=True)
def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """NumPy's ``corrcoef``, differentiable: ``cov`` scaled by the standard deviations on
    its diagonal, clipped to [-1, 1] as NumPy does."""
    c = cov(x, y, rowvar, dtype=dtype)
    if len(_shape(c)) == 0:
        return c / c
    # (a complex covariance's diagonal is real, and NumPy clips the two parts apart)
    complex_ = A.dtype_of(c).kind == "c"
    stddev = sqrt(real(diagonal(c)) if complex_ else diagonal(c))
    c = c / stddev[:, None]
    c = c / stddev[None, :]
    if complex_:
        return S.make_complex(clip(real(c), -1, 1), clip(imag(c), -1, 1))
    return clip(c, -1, 1)


@_numpy_unless_traced(_np.vander)
def vander(x, N=None, increasing=False):
    """NumPy's ``vander``: the powers of x as NumPy computes them (a cumulative product),
    differentiable."""
    if x.ndim != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = x.shape[0]
    N = n if N is None else operator.index(N)
    dt = _np.promote_types(x.dtype, int)
    x = astype(x, dt)
    if N < 0:
        raise ValueError("negative dimensions are not allowed")
    ones = _np.ones((n, builtins.min(N, 1)), dt)
    if N <= 1:
        return ones                         # (no power of x: constants)
    v = concatenate([ones, cumprod(broadcast_to(x[:, None], (n, N - 1)), axis=1)], axis=1)
    return v if increasing else flip(v, 1)


_CORRELATE_MODES = ("valid", "same", "full")


def _correlate_full(a, v, mode):
    """c_k = Σ_j a_{k+j} v_j (a zero outside its range) over the offsets `mode` keeps, as
    NumPy's correlate: a windows of the zero-padded a times v."""
    if isinstance(mode, int) and 0 <= mode < 3:
        mode = _CORRELATE_MODES[mode]
    if mode not in _CORRELATE_MODES:
        raise ValueError(f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")
    if len(_shape(a)) > 1 or len(_shape(v)) > 1:
        raise ValueError("object too deep for desired array")
    n, m = _shape(a)[0], _shape(v)[0]
    if n == 0:
        raise ValueError("a cannot be empty")
    if m == 0:
        raise ValueError("v cannot be empty")
    dt = _np.result_type(A.dtype_of(a), A.dtype_of(v))
    a, v = astype(a, dt), astype(v, dt)
    if mode == "full":
        start, length = 0, n + m - 1
    elif mode == "valid":
        start, length = builtins.min(n, m) - 1, builtins.abs(n - m) + 1
    else:
        start = (m - 1) // 2 if n >= m else builtins.min(n, m) // 2
        length = builtins.max(n, m)
    padded = pad(a, (m - 1, m - 1))
    windows = padded[_np.arange(start, start + length)[:, None] + _np.arange(m)]
    return matmul(windows, v)


@_numpy_unless_traced(_np.correlate, any_argument=True)
def correlate(a, v, mode="valid"):
    """NumPy's ``correlate`` of 1-D arrays (modes 'valid', 'same', 'full'), differentiable
    in both; a complex v is conjugated, as NumPy does (c_k = Σ_j a_{k+j} conj(v_j))."""
    a, v = atleast_1d(asarray(a)), atleast_1d(asarray(v))
    v = _conj_complex(v)
    if len(_shape(a)) == 1 and len(_shape(v)) == 1 and 0 < _shape(a)[0] < _shape(v)[0] \
            and mode not in ("same", 1):
        # (NumPy correlates the longer with the shorter and reverses: the same sums, in
        # NumPy's order)
        return flip(_correlate_full(v, a, mode), 0)
    return _correlate_full(a, v, mode)


@_numpy_unless_traced(_np.convolve, any_argument=True)
def convolve(a, v, mode="full"):
    """NumPy's ``convolve`` of 1-D arrays (modes 'full', 'same', 'valid'), differentiable
    in both: the correlation with v reversed (the longer array first, as NumPy)."""
    a, v = atleast_1d(asarray(a)), atleast_1d(asarray(v))
    if _shape(v)[0] > _shape(a)[0]:
        a, v = v, a
    if _shape(a)[0] == 0:
        raise ValueError("a cannot be empty")
    if _shape(v)[0] == 0:
        raise ValueError("v cannot be empty")
    return _correlate_full(a, flip(v, 0), mode)


@_numpy_unless_traced(_np.interp, any_argument=True)
def interp(x, xp, fp, left=None, right=None, period=None):
    """NumPy's ``interp`` (piecewise linear, float64 or for a complex fp complex128),
    differentiable in `x` (the slope), in `fp` (the weights of the two neighbours), in
    `xp` (where the two neighbours sit) and in `left` and `right`.  It is one primitive,
    whose value is NumPy's own and whose rules find the interval of each x by a binary
    search, so no value is needed (it works under ``wg.compile``, and under ``wg.vmap``
    over x, the sample points and the ends).  At a sample point the derivative in x is the
    slope on its right (at the last one, on its left), as JAX's; outside [xp_0, xp_-1]
    it is 0, and a nan x has none (nor has a repeated last point a slope).  A complex `fp`
    is two real interpolations, and a `period` maps x and xp into one period first; a
    traced `period` is refused, and so is a period with traced `xp` (the points are
    sorted by value first).

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> xp, fp = wnp.array([1.0, 2.0, 4.0]), wnp.array([10.0, 20.0, 0.0])
        >>> float(wnp.interp(1.5, xp, fp))
        15.0
        >>> wg.grad(lambda x: wnp.interp(x, xp, fp))(3.0)          # the slope
        -10.0
        >>> wg.grad(lambda fp: wnp.interp(3.0, xp, fp))(fp).tolist()  # the two weights
        [0.0, 0.5, 0.5]
        >>> wg.grad(lambda xp: wnp.interp(1.5, xp, fp))(xp).tolist()  # where they sit
        [-5.0, -5.0, 0.0]
    """
    if _traced(period) or (period is not None and _traced(xp)):
        raise NotImplementedError("numpy.interp with a traced period, or a period and traced "
                                  "xp, is not supported: xp is sorted by its values")
    xp, fp, x = asarray(xp), asarray(fp), asarray(x)
    for name, a in (("x", x), ("xp", xp)):
        if A.dtype_of(a).kind == "c":
            raise TypeError(f"Cannot cast array data from dtype('{A.dtype_of(a)}') to "
                            f"dtype('float64') according to the rule 'safe' ({name})")
    xp = astype(xp, _np.float64)
    if A.dtype_of(fp).kind == "c":
        # NumPy interpolates the real and imaginary parts apart, each as a real fp
        def part(f):
            return interp(x, xp, f(fp), None if left is None else f(left),
                          None if right is None else f(right), period)
        return S.make_complex(part(real), part(imag))
    for end in (left, right):
        if end is not None and _kind(end) == "c":
            raise TypeError("must be real number, not complex")
    fp = astype(fp, _np.float64)
    x = astype(x, _np.float64)
    if len(_shape(xp)) != 1 or len(_shape(fp)) != 1:
        raise ValueError("Data points must be 1D sequences")
    if _shape(xp)[0] != _shape(fp)[0]:
        raise ValueError("fp and xp are not of the same length")
    if _shape(xp)[0] == 0:
        raise ValueError("array of sample points is empty")
    if period is not None:
        if period == 0:
            raise ValueError("period must be a non-zero value")
        period = builtins.abs(period)
        left = right = None
        x = remainder(x, period)
        xp = xp % period
        order = _np.argsort(xp)
        xp, fp = xp[order], fp[order]
        xp = _np.concatenate((xp[-1:] - period, xp, xp[0:1] + period))
        fp = concatenate((fp[-1:], fp, fp[0:1]))
    n = _shape(xp)[0]
    first, last = fp[0], fp[n - 1]
    left = first if left is None else astype(left, _np.float64) if _traced(left) else \
        float(left)
    right = last if right is None else astype(right, _np.float64) if _traced(right) else \
        float(right)
    if n == 1:          # (no interval: a step at xp_0, where NumPy gives nan x fp_0 too)
        return where(x < xp[0], left, where(x > xp[0], right, first))
    return A.interp(x, xp, fp, left, right)


# ---- searching, counting and sets: integer and bool results, and histograms -----------------
# Positions, counts, memberships and orders have no derivative.  Those whose shape is known
# from the arguments' shapes are recorded (they trace without values, as comparisons do);
# those whose shape depends on the values (bincount, unique) read them, so they need an
# eager call.  What flows through them differentiably are values gathered (unique) or
# added up (bincount's and the histograms' weights).
@_numpy_unless_traced(_np.searchsorted, any_argument=True)
def searchsorted(a, v, side="left", sorter=None):
    """NumPy's ``searchsorted``: where the values `v` would go in the sorted 1-D `a`
    (integers, no derivative), recorded, so that it traces without values.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> f = wg.compile(lambda a, v: wnp.searchsorted(a, v, side="right"),
        ...                wnp.zeros(3), wnp.zeros(2))
        >>> f(wnp.array([1.0, 2.0, 3.0]), wnp.array([2.0, 0.5])).tolist()
        [2, 0]
    """
    a, v = asarray(a), asarray(v)
    if len(_shape(a)) != 1:
        raise ValueError("object too deep for desired array")
    if sorter is not None:
        a = take_along_axis(a, asarray(sorter), 0) if _traced(sorter) else \
            a[_np.asarray(sorter)]
    return A.searchsorted(a, v, side=side)


@_numpy_unless_traced(_np.digitize, any_argument=True)
def digitize(x, bins, right=False):
    """NumPy's ``digitize``: the index of the bin of each x (integers, no derivative),
    recorded through `searchsorted`.  Whether the bins increase or decrease is read from
    their values, so traced bins need an eager call.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> f = wg.compile(lambda x: wnp.digitize(x, [0.0, 1.0, 2.0]), wnp.zeros(3))
        >>> f(wnp.array([-1.0, 0.5, 2.0])).tolist()
        [0, 1, 3]
    """
    x = asarray(x)
    if A.dtype_of(x).kind == "c":
        raise TypeError("x may not be complex")
    b = _np.asarray(_value_of(bins, "read by numpy.digitize (whether the bins increase "
                                    "or decrease)"))
    if b.ndim != 1:
        raise ValueError("object too deep for desired array")
    side = "left" if right else "right"     # (NumPy's: the arguments are swapped below)
    if _np.all(b[:-1] <= b[1:]):
        return A.searchsorted(bins, x, side=side) if _traced(bins) else \
            A.searchsorted(b, x, side=side)
    if _np.all(b[:-1] >= b[1:]):
        return len(b) - A.searchsorted(flip(asarray(bins), 0), x, side=side)
    raise ValueError("bins must be monotonically increasing or decreasing")


@_numpy_unless_traced(_np.lexsort, any_argument=True, array_likes="items")
def lexsort(keys, axis=-1):
    """NumPy's ``lexsort``: the order that sorts by the last key, then by the one before,
    and so on (integers, no derivative): stable sorts by each key in turn, from the first,
    so it is recorded and traces without values.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> f = wg.compile(lambda a, b: wnp.lexsort((a, b)), wnp.zeros(4), wnp.zeros(4))
        >>> f(wnp.array([4.0, 3.0, 2.0, 1.0]), wnp.array([1.0, 0.0, 1.0, 0.0])).tolist()
        [3, 1, 2, 0]
    """
    keys = [asarray(k) for k in (keys if type(keys) in (list, tuple) else
                                 [keys[i] for i in range(len(keys))])]
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    if len({tuple(_shape(k)) for k in keys}) != 1:
        raise ValueError("all keys need to be the same shape")
    if not _shape(keys[0]):
        return _np.intp(0)                  # (numbers: NumPy's answer, whatever they are)
    ax = _one_axis(axis, len(_shape(keys[0])), "lexsort")
    order = argsort(keys[0], ax, kind="stable")
    for k in keys[1:]:                      # (each sort stable: ties keep the order so far)
        order = take_along_axis(order, argsort(take_along_axis(k, order, ax), ax,
                                               kind="stable"), ax)
    return order


@_numpy_unless_traced(_np.isin, any_argument=True)
def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """NumPy's ``isin``: whether each element is among `test_elements` (bools, no
    derivative), recorded: a binary search in the sorted test elements, so it traces
    without values (`kind` picks NumPy's algorithm, and changes nothing here).

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> f = wg.compile(lambda e, t: wnp.isin(e, t), wnp.zeros(3), wnp.zeros(2))
        >>> f(wnp.array([1.0, 2.0, wnp.nan]), wnp.array([2.0, wnp.nan])).tolist()
        [False, True, False]
    """
    if kind not in (None, "sort", "table"):
        raise ValueError(f"Invalid kind: '{kind}'. Please use None, 'sort' or 'table'.")
    e, t = asarray(element), ravel(asarray(test_elements))
    if kind == "table" and not (A.dtype_of(e).kind in "uib" and A.dtype_of(t).kind in "uib"):
        raise ValueError("The 'table' method is only supported for boolean or integer "
                         "arrays. Please select 'sort' or None for kind.")
    flat = ravel(e)
    if _shape(t)[0] == 0:
        found = _np.zeros(_shape(flat), bool)
    elif A.dtype_of(e).kind == "c" or A.dtype_of(t).kind == "c":
        # (no order for complex values: every pair compared)
        found = any(equal(expand_dims(flat, -1), t), -1)
    else:
        t = sort(t)
        at = S.minimum(A.searchsorted(t, flat, side="left"), _shape(t)[0] - 1)
        found = equal(take_along_axis(t, at, 0), flat)
    found = reshape(found, _shape(e))
    return logical_not(found) if invert else found


@_numpy_unless_traced(_np.bincount, any_argument=True)
def bincount(x, weights=None, minlength=0):
    """NumPy's ``bincount``.  Its length (the largest x + 1) is read from the values of x,
    which are indices without derivative; the `weights` are differentiable: each count
    is a sum of weights (a scatter-add), whose derivative gathers the cotangent back.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> x = wnp.array([0, 2, 2])
        >>> wnp.bincount(x, wnp.array([0.5, 1.0, 2.0])).tolist()
        [0.5, 0.0, 3.0]
        >>> wg.grad(lambda w: wnp.bincount(x, w)[2] * 2)(wnp.array([0.5, 1.0, 2.0]))
        array([0., 2., 2.])
    """
    _int_indices(x, "Cannot cast array data from dtype('{}') to dtype('int64') according "
                    "to the rule 'safe'")
    xv = _np.asarray(_value_of(x, "read by numpy.bincount (its length is the largest "
                                  "value plus one)"))
    counts = _np.bincount(xv, minlength=minlength)      # (NumPy's checks and length)
    if weights is None:
        return counts
    if not _traced(weights):
        return _np.bincount(xv, weights, minlength)
    w = asarray(weights)
    if _shape(w) != xv.shape:
        raise ValueError("The weights and list don't have the same length.")
    if A.dtype_of(w).kind == "c":
        raise TypeError(f"Cannot cast array data from {A.dtype_of(w)!r} to "
                        "dtype('float64') according to the rule 'safe'")
    return A.put_along_axis(astype(w, _np.float64), xv.astype(_np.intp), axis=0,
                            shape=counts.shape)


def _int_indices(x, message="only int indices permitted, not {}"):
    """NumPy's TypeError for traced indices that are not integers (before their values are
    read, so that tracing without values says what is wrong with them)."""
    if type(x) is Node and x.dtype.kind not in "iub":
        raise TypeError(message.format(x.dtype))


def _outer_edges(a, range_):
    """NumPy's outer bin edges: `range_`, or a's smallest and largest values (traced: their
    derivative flows into the edges), widened by 1/2 each way if they are equal; NumPy's
    errors for a bad range (where the values are known)."""
    if range_ is not None:
        first, last = range_
        if _holds(S.gt(first, last)) if _traced(first, last) else first > last:
            raise ValueError("max must be larger than min in range parameter.")
        known, what = (first, last), "supplied"
    elif _math.prod(_shape(a)) == 0:
        return 0, 1
    else:
        first, last = min(a), max(a)
        known, what = (first, last), "autodetected"
    values = [v.value if type(v) is Node else v for v in known]
    if builtins.all(v is not None for v in values) and \
            not (_np.isfinite(values[0]) and _np.isfinite(values[1])):
        raise ValueError(f"{what} range of [{values[0]}, {values[1]}] is not finite")
    if not _traced(first, last):
        return (first - 0.5, last + 0.5) if first == last else (first, last)
    same = S.eq(first, last)
    return S.select(same, first - 0.5, first), S.select(same, last + 0.5, last)


def _increasing(edges, strictly, message):
    """NumPy's ValueError `message` if the edges fail to increase (where values are known)."""
    earlier, later = edges[:-1], edges[1:]
    bad = (S.ge if strictly else S.gt)(earlier, later) if type(edges) is Node else \
        (earlier >= later if strictly else earlier > later)
    if _holds(bad):
        raise ValueError(message)


def _histogram_edges(a, bins, range_, weights):
    """(the edges, whether NumPy takes them as equal bins) for histogram."""
    if isinstance(bins, str):
        if weights is not None:
            raise TypeError("Automated estimation of the number of bins is not supported "
                            "for weighted data")
        # (the number of bins depends on the values: NumPy's estimate of them)
        bins = len(_np.histogram_bin_edges(_value_of(a, f"read by numpy.histogram (bins="
                                                        f"{bins!r} estimates from them)"),
                                           bins, range_)) - 1
    if _np.ndim(bins) == 0 and not _traced(bins):
        try:
            n = operator.index(bins)
        except TypeError as e:
            raise TypeError("`bins` must be an integer, a string, or an array") from e
        if n < 1:
            raise ValueError("`bins` must be positive, when an integer")
        if not (_traced(range_) or (range_ is None and _traced(a))):
            # (plain edges: NumPy's own, from a stand-in of a's dtype where the range is set)
            sample = a if range_ is None else _np.zeros(0, A.dtype_of(a))
            return _np.histogram_bin_edges(sample, n, range_), True
        first, last = _outer_edges(a, range_)
        dt = A.dtype_of(a) if A.dtype_of(a).kind == "f" else _np.dtype(_np.float64)
        edges = linspace(first, last, n + 1, dtype=dt)
        _increasing(edges, True, f"Too many bins for data range. Cannot create {n} "
                                 "finite-sized bins.")
        return edges, True
    edges = asarray(bins)
    if len(_shape(edges)) != 1:
        raise ValueError("`bins` must be 1d, when an array")
    _increasing(edges, False, "`bins` must increase monotonically, when an array")
    return edges, False


def _up_to(sorted_a, edges):
    """How many of the sorted values lie below each edge (at or below the last)."""
    return concatenate([A.searchsorted(sorted_a, edges[:-1], side="left"),
                        A.searchsorted(sorted_a, edges[-1:], side="right")])


@_numpy_unless_traced(_np.histogram_bin_edges, any_argument=True)
def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """NumPy's ``histogram_bin_edges``: the edges `histogram` uses, differentiable where
    NumPy derives them from a's smallest and largest values (no `range`); a string
    `bins` estimates their number from the values (eager calls only).

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> a = wnp.array([0.5, 1.5, 1.7, 3.0])
        >>> wnp.histogram_bin_edges(a, bins=2).tolist()
        [0.5, 1.75, 3.0]
        >>> wg.grad(lambda a: wnp.histogram_bin_edges(a, bins=2)[1])(a)   # (min + max) / 2
        array([0.5, 0. , 0. , 0.5])
    """
    a = ravel(asarray(a))
    if weights is not None and _shape(weights) != _shape(a):
        raise ValueError("weights should have the same shape as a.")
    edges, _ = _histogram_edges(a, bins, range, weights)
    return edges


@_numpy_unless_traced(_np.histogram, any_argument=True)
def histogram(a, bins=10, range=None, density=None, weights=None):
    """NumPy's ``histogram``.  The counts are piecewise constant in `a` (no derivative);
    the `weights` are differentiable (each bin sums its weights), and so are the edges
    NumPy derives from a's smallest and largest values when `range` is not given, and the
    density (counts over their sum and the bin widths).  With equal bins the weights are
    added up by bin (as NumPy's bincount), with given edges by differences of their
    cumulative sums, as NumPy does.  Recorded: traces without values, except for a
    string `bins`, which estimates the number of bins from the values.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> a = wnp.array([0.5, 1.5, 1.7, 3.0])
        >>> counts, edges = wnp.histogram(a, bins=3, range=(0, 3))
        >>> counts.tolist(), edges.tolist()
        ([1, 2, 1], [0.0, 1.0, 2.0, 3.0])
        >>> wg.grad(lambda w: wnp.histogram(a, 3, (0, 3), weights=w)[0][1])(wnp.ones(4))
        array([0., 1., 1., 0.])
    """
    a = asarray(a)
    if weights is not None:
        weights = asarray(weights)
        if _shape(weights) != _shape(a):
            raise ValueError("weights should have the same shape as a.")
        weights = ravel(weights)
    a = ravel(a)
    if A.dtype_of(a) == _np.bool_:
        import warnings
        warnings.warn("Converting input from bool to <class 'numpy.uint8'> for "
                      "compatibility.", RuntimeWarning, stacklevel=3)
        a = astype(a, _np.uint8)
    edges, equal_bins = _histogram_edges(a, bins, range, weights)
    nbins = _shape(edges)[0] - 1
    if weights is None:
        n = diff(_up_to(sort(a), edges))
    elif equal_bins:
        # each value's bin (the last includes its right edge), or one past the last for
        # values outside, which are dropped; the weights added up by bin in float64 (or
        # complex128), as NumPy's bincount adds them
        bin_ = A.searchsorted(edges, a, side="right") - 1
        bin_ = where(equal(a, edges[-1]), nbins - 1, bin_)
        inside = logical_and(greater_equal(a, edges[0]), less_equal(a, edges[-1]))
        bin_ = where(inside, bin_, nbins)
        wide = _np.complex128 if A.dtype_of(weights).kind == "c" else _np.float64
        n = A.put_along_axis(astype(weights, wide), bin_, axis=0, shape=(nbins + 1,))
        n = astype(n[:nbins], A.dtype_of(weights))
    else:
        order = argsort(a)
        sorted_a = take_along_axis(a, order, 0)
        cumulative = concatenate([_np.zeros(1, A.dtype_of(weights)),
                                  cumsum(take_along_axis(weights, order, 0))])
        n = diff(take_along_axis(cumulative, _up_to(sorted_a, edges), 0))
    if density:
        n = n / astype(diff(edges), _np.float64) / sum(n)
    return n, edges


@_numpy_unless_traced(_np.histogramdd, any_argument=True, array_likes="none")
def histogramdd(sample, bins=10, range=None, density=None, weights=None):
    """NumPy's ``histogramdd``: counts (floats) of the N points of `sample` (an (N, D) array
    or D arrays of N values) in the D-dimensional bins, as `histogram` in each dimension;
    differentiable in the `weights`, in the edges taken from the sample's extent, and
    through the density.  Recorded: traces without values.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> points = wnp.array([[0.1, 0.2], [0.6, 0.9], [0.7, 0.8]])
        >>> hist, edges = wnp.histogramdd(points, bins=2, range=[(0, 1), (0, 1)])
        >>> hist.tolist()
        [[1.0, 0.0], [0.0, 2.0]]
        >>> w = wnp.array([1.0, 2.0, 3.0])
        >>> wg.grad(lambda w: wnp.histogramdd(points, 2, [(0, 1), (0, 1)], weights=w)[0][1, 1])(w)
        array([0., 1., 1.])
    """
    if (type(sample) is Node or type(sample) is _np.ndarray) and len(_shape(sample)) == 2:
        points = sample
    else:           # (D arrays of N values)
        points = transpose(atleast_2d(asarray(sample)))
    N, D = _shape(points)
    if weights is not None:
        weights = asarray(weights)
    try:
        if len(bins) != D:
            raise ValueError("The dimension of bins must be equal to the dimension of the "
                             "sample x.")
    except TypeError:
        bins = D * [bins]
    if range is None:
        range = (None,) * D
    elif len(range) != D:
        raise ValueError("range argument must have one entry per dimension")
    edges, flat, stride = [], 0, 1
    for i in reversed(builtins.range(D)):       # (the flat index: the last axis fastest)
        column = points[:, i]
        if _np.ndim(bins[i]) == 0 and not _traced(bins[i]):
            if bins[i] < 1:
                raise ValueError(f"`bins[{i}]` must be positive, when an integer")
            first, last = _outer_edges(column, range[i])
            try:
                n = operator.index(bins[i])
            except TypeError as e:
                raise TypeError(f"`bins[{i}]` must be an integer, when a scalar") from e
            e = linspace(first, last, n + 1)
        elif len(_shape(bins[i])) == 1:
            e = asarray(bins[i])
            _increasing(e, False, f"`bins[{i}]` must be monotonically increasing, when an "
                                  "array")
        else:
            raise ValueError(f"`bins[{i}]` must be a scalar or 1d array")
        edges.insert(0, e)
        # the bin of each point: 0 below the first edge, len(e) beyond the last (outliers),
        # the last edge itself in the last bin
        k = A.searchsorted(e, column, side="right")
        k = where(equal(column, e[-1]), k - 1, k)
        flat = flat + k * stride
        stride *= _shape(e)[0] + 1
    nbin = tuple(_shape(e)[0] + 1 for e in edges)
    if weights is not None and A.dtype_of(weights).kind == "c":
        raise TypeError(f"Cannot cast array data from {A.dtype_of(weights)!r} to "
                        "dtype('float64') according to the rule 'safe'")
    w = _np.ones(N) if weights is None else astype(weights, _np.float64)
    hist = A.put_along_axis(w, flat, axis=0, shape=(stride,))
    hist = reshape(hist, nbin)[(slice(1, -1),) * D]   # (the outliers dropped)
    if density:
        total = sum(hist)
        for i, e in enumerate(edges):
            hist = hist / reshape(diff(e), tuple(-1 if j == i else 1 for j in builtins.range(D)))
        hist = hist / total
    return hist, edges


@_numpy_unless_traced(_np.histogram2d, any_argument=True, array_likes="none")
def histogram2d(x, y, bins=10, range=None, density=None, weights=None):
    """NumPy's ``histogram2d``: `histogramdd` of the points (x, y), returning (counts, x
    edges, y edges); differentiable as it.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> x, y = wnp.array([0.1, 0.6, 0.7]), wnp.array([0.2, 0.9, 0.8])
        >>> hist, xe, ye = wnp.histogram2d(x, y, bins=2, range=[(0, 1), (0, 1)])
        >>> hist.tolist(), xe.tolist()
        ([[1.0, 0.0], [0.0, 2.0]], [0.0, 0.5, 1.0])
    """
    if len(x) != len(y):
        raise ValueError("x and y must have the same length.")
    try:
        N = len(bins)
    except TypeError:
        N = 1
    if N not in (1, 2):
        bins = [asarray(bins)] * 2
    hist, edges = histogramdd([x, y], bins, range, density, weights)
    return hist, edges[0], edges[1]


def _first_of_each(ar, value, found, axis, equal_nan, indices=None):
    """The unique values `found` (NumPy's, from `value`) as a gather of `ar` at the first
    occurrence of each (`indices`, or found here), so that they carry its derivative; a
    NaN gets none.  Integer and bool values are NumPy's own."""
    if A.dtype_of(ar).kind not in "fc":
        return found
    if indices is None:
        kw = {} if equal_nan else {"equal_nan": False}
        first, indices = _np.unique(value, return_index=True, axis=axis, **kw)
        if axis is None and not _np.array_equal(first, found, equal_nan=True):
            # (an unsorted result, NumPy's hash order: each value's place among the sorted)
            indices = indices[_np.searchsorted(first, found)]
    out = ravel(ar)[indices] if axis is None else take(ar, indices, axis)
    return where(isnan(out), nan, out) if _np.isnan(found).any() else out


def _unique_value(ar, fname):
    return _np.asarray(_value_of(ar, f"read by numpy.{fname} (how many values it finds "
                                     "depends on them)"))


@_numpy_unless_traced(_np.unique)
def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, sorted=True):
    """NumPy's ``unique``, of the values (its length depends on them: eager calls only).
    The unique values are `ar` gathered at the first occurrence of each, which gets their
    derivative (NaNs get none); indices, inverse and counts are integers.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> x = wnp.array([2.0, 1.0, 2.0, 3.0])
        >>> values, counts = wnp.unique(x, return_counts=True)
        >>> values.tolist(), counts.tolist()
        ([1.0, 2.0, 3.0], [1, 2, 1])
        >>> wg.grad(lambda x: wnp.sum(wnp.unique(x) ** 2))(x)        # the first 2.0 only
        array([4., 2., 0., 6.])
    """
    value = _unique_value(ar, "unique")
    kw = {} if sorted is True else {"sorted": sorted}
    out = _np.unique(value, return_index, return_inverse, return_counts, axis,
                     equal_nan=equal_nan, **kw)
    parts = list(out) if return_index or return_inverse or return_counts else [out]
    parts[0] = _first_of_each(ar, value, parts[0], axis, equal_nan,
                              out[1] if return_index else None)
    return tuple(parts) if len(parts) > 1 else parts[0]


def _set_operation(npfn):
    """union1d, intersect1d, setdiff1d, setxor1d: NumPy's on the values (eager calls only:
    how many values they find depends on them), each value found then gathered from the
    first place it has in ar1, else ar2, which gets its derivative (a NaN gets none)."""
    name = npfn.__name__

    @_numpy_unless_traced(npfn, any_argument=True)
    def fn(ar1, ar2, *args, **kwargs):
        values = [_unique_value(a, name) for a in (ar1, ar2)]
        out = npfn(*values, *args, **kwargs)
        found = out[0] if type(out) is tuple else out        # (intersect1d's indices)
        if found.dtype.kind not in "fc":
            return out
        joined = concatenate([ravel(asarray(ar1)), ravel(asarray(ar2))])
        flat = _np.concatenate([_np.ravel(v) for v in values])
        first, places = _np.unique(flat, return_index=True)
        gathered = joined[places[_np.searchsorted(first, found)]] if found.size else \
            joined[:0]
        if _np.isnan(found).any():
            gathered = where(isnan(gathered), nan, gathered)
        return (gathered,) + out[1:] if type(out) is tuple else gathered
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"NumPy's ``{name}``, of the values (eager calls only); each value found "
                  "is gathered from its first place in ar1, else in ar2, which gets its "
                  "derivative.\n\n"
                  "    Example:\n"
                  "        >>> import wengert as wg, wengert.numpy as wnp\n"
                  "        >>> x = wnp.array([3.0, 1.0, 2.0])\n"
                  f"        >>> wg.grad(lambda x: wnp.sum(wnp.{name}(x, [2.0, 5.0]) ** 2))(x)"
                  "\n"
                  f"        array({_np.array2string(_SET_EXAMPLES[name], separator=', ')})\n")
    return fn


# (the gradients of the docstrings' examples: 2x where x's value is in the result)
_SET_EXAMPLES = {"union1d": _np.array([6.0, 2.0, 4.0]), "intersect1d": _np.array([0.0, 0.0, 4.0]),
                 "setdiff1d": _np.array([6.0, 2.0, 0.0]), "setxor1d": _np.array([6.0, 2.0, 0.0])}
union1d = _set_operation(_np.union1d)
intersect1d = _set_operation(_np.intersect1d)
setdiff1d = _set_operation(_np.setdiff1d)
setxor1d = _set_operation(_np.setxor1d)


def _unique_api(npfn):
    """NumPy 2's unique_all, unique_counts, unique_inverse, unique_values: NumPy's on the
    values, the values themselves gathered from x (differentiable, as `unique`'s)."""
    name = npfn.__name__

    def fn(x):
        value = _unique_value(x, name)
        out = npfn(value)
        if name == "unique_values":
            return _first_of_each(x, value, out, None, False)
        indices = out.indices if name == "unique_all" else None
        return out._replace(values=_first_of_each(x, value, out.values, None, False, indices))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"NumPy's ``{name}``, of the values (eager calls only); the values are "
                  "x gathered at the first occurrence of each, differentiable (NaNs get "
                  "none), as `unique`'s.\n\n"
                  "    Example:\n"
                  "        >>> import wengert as wg, wengert.numpy as wnp\n"
                  "        >>> x = wnp.array([3.0, 1.0, 3.0])\n"
                  f"        >>> wg.grad(lambda x: wnp.sum(wnp.{name}(x)"
                  f"{'' if name == 'unique_values' else '.values'} ** 2))(x)\n"
                  "        array([6., 2., 0.])\n")
    return _numpy_unless_traced(npfn)(fn)


if hasattr(_np, "unique_all"):      # (NumPy 2)
    unique_all = _unique_api(_np.unique_all)
    unique_counts = _unique_api(_np.unique_counts)
    unique_inverse = _unique_api(_np.unique_inverse)
    unique_values = _unique_api(_np.unique_values)


@_numpy_unless_traced(_np.unravel_index, any_argument=True)
def unravel_index(indices, shape, order="C"):
    """NumPy's ``unravel_index`` of the values (integers, no derivative; NumPy checks that
    they are in range, so it needs an eager call).

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> def f(x):
        ...     i, j = wnp.unravel_index(wnp.argmax(x), x.shape)
        ...     return x[i, j] * (i + j)
        >>> wg.grad(f)(wnp.array([[1.0, 5.0], [2.0, 3.0]]))
        array([[0., 1.],
               [0., 0.]])
    """
    _int_indices(indices)
    return _np.unravel_index(_value_of(indices, "read by numpy.unravel_index (NumPy checks "
                                                "the range)"), shape, order)


@_numpy_unless_traced(_np.ravel_multi_index, any_argument=True, array_likes="none")
def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """NumPy's ``ravel_multi_index`` (integers, no derivative).  With ``mode='wrap'`` or
    ``'clip'`` it is recorded (it traces without values); with 'raise', NumPy's range
    check reads the values, so it needs an eager call.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> f = wg.compile(lambda i, j: wnp.ravel_multi_index((i, j), (3, 4), mode="wrap"),
        ...                wnp.zeros(2, int), wnp.zeros(2, int))
        >>> f(wnp.array([1, 2]), wnp.array([3, 5])).tolist()
        [7, 9]
    """
    for i in (multi_index if type(multi_index) in (list, tuple) else [multi_index]):
        _int_indices(i)
    dims = tuple(int(d) for d in _np.atleast_1d(_value_of(dims, "read by "
                                                            "numpy.ravel_multi_index")))
    modes = (mode,) * len(dims) if isinstance(mode, str) else tuple(mode)
    if len(multi_index) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
    if not builtins.all(m in ("wrap", "clip") for m in modes) or order not in ("C", "F"):
        what = "read by numpy.ravel_multi_index (mode='raise' checks the range)"
        return _np.ravel_multi_index(tuple(_value_of(i, what) for i in multi_index), dims,
                                     mode, order)
    flat, stride = 0, 1
    axes = reversed(builtins.range(len(dims))) if order == "C" else builtins.range(len(dims))
    for k in axes:
        i = asarray(multi_index[k])
        if A.dtype_of(i).kind not in "iu":
            raise TypeError(f"only int indices permitted, not {A.dtype_of(i)}")
        i = remainder(i, dims[k]) if modes[k] == "wrap" else clip(i, 0, dims[k] - 1)
        flat = flat + astype(i, _np.intp) * stride
        stride *= dims[k]
    return flat


# ---- shapes --------------------------------------------------------------------------------
@_numpy_unless_traced(_np.reshape)
def reshape(a, /, shape, order="C", *, copy=None):
    """NumPy's ``reshape`` (order 'C' or 'F'), differentiable; one dimension may be -1.
    (A traced value is never a view, so ``copy`` changes nothing.)"""
    if order == "F":                        # Fortran order is C order of the transposes
        s = (shape,) if isinstance(shape, (int, _np.integer)) else tuple(shape)
        return transpose(reshape(transpose(a), s[::-1]))
    if order != "C":
        raise NotImplementedError(f"numpy.reshape(..., order={order!r}) is not supported on "
                                  "traced values (only 'C' and 'F')")
    if isinstance(shape, (int, _np.integer)):
        shape = (shape,)
    shape = _np.empty(a.shape, dtype=_np.bool_).reshape(shape).shape   # resolves -1
    return A.reshape(a, shape=tuple(shape))


@_numpy_unless_traced(_np.ravel)
def ravel(a, order="C"):
    """NumPy's ``ravel`` (order 'C' or 'F'), differentiable."""
    return reshape(a, -1, order)


@_numpy_unless_traced(_np.transpose)
def transpose(a, axes=None):
    """NumPy's ``transpose``, differentiable."""
    n = a.ndim
    # (each axis in range, NumPy's AxisError else: not wrapped round into another one)
    axes = tuple(reversed(range(n))) if axes is None else \
        tuple(_one_axis(x, n, "transpose") for x in axes)
    if sorted(axes) != list(range(n)):
        raise ValueError(f"transpose: axes {axes} don't match an array of shape {a.shape}")
    return A.transpose(a, axes=axes)


@_numpy_unless_traced(_np.swapaxes)
def swapaxes(a, axis1, axis2):
    """NumPy's ``swapaxes``, differentiable."""
    axes = list(range(a.ndim))
    i, j = _one_axis(axis1, a.ndim, "swapaxes"), _one_axis(axis2, a.ndim, "swapaxes")
    axes[i], axes[j] = axes[j], axes[i]
    return A.transpose(a, axes=tuple(axes))


@_numpy_unless_traced(_np.moveaxis)
def moveaxis(a, source, destination):
    """NumPy's ``moveaxis``, differentiable."""
    src = _axes(source, a.ndim, "moveaxis", "source")
    dst = _axes(destination, a.ndim, "moveaxis", "destination")
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination need the same number of axes")
    order = [i for i in range(a.ndim) if i not in src]
    for d, s_ in sorted(zip(dst, src)):
        order.insert(d, s_)
    return A.transpose(a, axes=tuple(order))


@_numpy_unless_traced(_np.squeeze)
def squeeze(a, axis=None):
    """NumPy's ``squeeze``, differentiable."""
    return A.reshape(a, shape=_np.squeeze(_stand_in(a), axis).shape)


@_numpy_unless_traced(_np.expand_dims)
def expand_dims(a, axis):
    """NumPy's ``expand_dims``, differentiable."""
    return A.reshape(a, shape=_np.expand_dims(_stand_in(a), axis).shape)


@_numpy_unless_traced(_np.broadcast_to)
def broadcast_to(array, shape, subok=False):
    """NumPy's ``broadcast_to`` (returning a new array), differentiable."""
    shape = (shape,) if isinstance(shape, (int, _np.integer)) else tuple(shape)
    _np.broadcast_shapes(array.shape, shape)     # NumPy's error if it cannot
    return SH.broadcast_to(array, shape=shape)


def _joined(fname, arrays, out, dtype, casting):
    """The arrays of a concatenate or stack, cast to `dtype` as NumPy would."""
    _refuse(fname, out=out is not None)
    arrays = list(arrays)
    if dtype is not None:
        arrays = [_cast(x, dtype, casting, fname) for x in arrays]
    return arrays


@_numpy_unless_traced(_np.concatenate, any_argument=True, array_likes="items")
def concatenate(arrays, /, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """NumPy's ``concatenate``, differentiable."""
    arrays = _joined("concatenate", arrays, out, dtype, casting)
    if axis is None:
        return concatenate([ravel(x) for x in arrays], axis=0)
    nd = len(_shape(arrays[0]))
    return A.concatenate(*arrays, axis=_one_axis(axis, nd, "concatenate"))


@_numpy_unless_traced(_np.stack, any_argument=True, array_likes="items")
def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """NumPy's ``stack``, differentiable."""
    arrays = _joined("stack", arrays, out, dtype, casting)
    shapes = {tuple(_shape(x)) for x in arrays}
    if len(shapes) != 1:
        raise ValueError(f"stack: all arrays must have the same shape, got "
                         f"{' and '.join(map(str, sorted(shapes)))}")
    nd = len(shapes.pop()) + 1
    ax = _one_axis(axis, nd, "stack")
    return concatenate([expand_dims(x, ax) for x in arrays], axis=ax)


@_numpy_unless_traced(_np.hstack, any_argument=True, array_likes="items")
def hstack(tup, *, dtype=None, casting="same_kind"):
    """NumPy's ``hstack``, differentiable."""
    arrays = [atleast_1d(x) for x in tup]
    return concatenate(arrays, axis=0 if len(_shape(arrays[0])) == 1 else 1, dtype=dtype,
                       casting=casting)


@_numpy_unless_traced(_np.vstack, any_argument=True, array_likes="items")
def vstack(tup, *, dtype=None, casting="same_kind"):
    """NumPy's ``vstack``, differentiable."""
    return concatenate([atleast_2d(x) for x in tup], axis=0, dtype=dtype, casting=casting)


def _each(fn, arys):
    """NumPy's convention for atleast_*: one array for one argument, else a tuple."""
    out = tuple(fn(a) for a in arys)
    return out[0] if len(out) == 1 else out


@_numpy_unless_traced(_np.atleast_1d, any_argument=True)
def atleast_1d(*arys):
    """NumPy's ``atleast_1d``, differentiable."""
    return _each(lambda a: reshape(a, (1,)) if len(_shape(a)) == 0 else a, arys)


@_numpy_unless_traced(_np.atleast_2d, any_argument=True)
def atleast_2d(*arys):
    """NumPy's ``atleast_2d``, differentiable."""
    def one(a):
        a = atleast_1d(a)
        return reshape(a, (1,) + tuple(_shape(a))) if len(_shape(a)) == 1 else a
    return _each(one, arys)


@_numpy_unless_traced(_np.atleast_3d, any_argument=True)
def atleast_3d(*arys):
    """NumPy's ``atleast_3d``, differentiable: (N,) becomes (1, N, 1), (M, N) (M, N, 1)."""
    def one(a):
        s = tuple(_shape(a))
        shape = {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}.get(len(s), s)
        return reshape(a, shape) if shape != s else a
    return _each(one, arys)


def _pieces(ary, bounds, ax):
    """The slices of `ary` between consecutive `bounds` along axis `ax` (Python's slicing
    rules for bounds out of range, as NumPy's split)."""
    pre = (slice(None),) * ax
    return [ary[pre + (slice(lo, hi),)] for lo, hi in zip(bounds[:-1], bounds[1:])]


@_numpy_unless_traced(_np.array_split)
def array_split(ary, indices_or_sections, axis=0):
    """NumPy's ``array_split``, differentiable: a list of pieces; n sections of an axis of
    length l are l//n + 1 long for the first l % n, l//n for the rest."""
    ax = _one_axis(axis, ary.ndim, "array_split")
    n = ary.shape[ax]
    if isinstance(indices_or_sections, (int, _np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        each, extras = builtins.divmod(n, sections)
        sizes = [each + 1] * extras + [each] * (sections - extras)
        bounds = [0] + [int(b) for b in _np.cumsum(sizes)]
    else:
        bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    return _pieces(ary, bounds, ax)


@_numpy_unless_traced(_np.split)
def split(ary, indices_or_sections, axis=0):
    """NumPy's ``split``, differentiable: a list of pieces."""
    if isinstance(indices_or_sections, (int, _np.integer)):
        n = ary.shape[_one_axis(axis, ary.ndim, "split")]
        if n % indices_or_sections:
            raise ValueError("array split does not result in an equal division")
    return array_split(ary, indices_or_sections, axis)


def _split_along(fname, axis, least):
    """hsplit, vsplit, dsplit: split along `axis` (axis(ndim) for hsplit) of an array of
    at least `least` dimensions."""
    npfn = getattr(_np, fname)

    def fn(ary, indices_or_sections):
        if ary.ndim < least:
            raise ValueError(f"{fname} only works on arrays of {least} or more dimensions")
        return split(ary, indices_or_sections, axis(ary.ndim))
    fn.__name__ = fname
    fn.__doc__ = f"NumPy's ``{fname}``, differentiable: a list of pieces."
    return _numpy_unless_traced(npfn)(fn)


hsplit = _split_along("hsplit", lambda nd: 1 if nd > 1 else 0, 1)
vsplit = _split_along("vsplit", lambda nd: 0, 2)
dsplit = _split_along("dsplit", lambda nd: 2, 3)


@_numpy_unless_traced(_np.flip)
def flip(m, axis=None):
    """NumPy's ``flip``, differentiable."""
    axes = tuple(range(m.ndim)) if axis is None else _norm_axis(axis, m.ndim, "flip")
    return A.flip(m, axes=axes)


@_numpy_unless_traced(_np.fliplr)
def fliplr(m):
    """NumPy's ``fliplr`` (the second axis reversed), differentiable."""
    if m.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return A.flip(m, axes=(1,))


@_numpy_unless_traced(_np.flipud)
def flipud(m):
    """NumPy's ``flipud`` (the first axis reversed), differentiable."""
    if m.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return A.flip(m, axes=(0,))


@_numpy_unless_traced(_np.rot90)
def rot90(m, k=1, axes=(0, 1)):
    """NumPy's ``rot90``, differentiable: k quarter turns from the first of `axes` towards
    the second (flips and a transpose, as NumPy does it)."""
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    nd = m.ndim
    if axes[0] == axes[1] or builtins.abs(axes[0] - axes[1]) == nd:
        raise ValueError("Axes must be different.")
    if not builtins.all(-nd <= a < nd for a in axes):
        raise ValueError(f"Axes={axes} out of range for array of ndim={nd}.")
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, axes[0]), axes[1])
    order = list(range(nd))
    order[axes[0]], order[axes[1]] = order[axes[1]], order[axes[0]]
    if k == 1:
        return transpose(flip(m, axes[1]), order)
    return flip(transpose(m, order), axes[1])


@_numpy_unless_traced(_np.rollaxis)
def rollaxis(a, axis, start=0):
    """NumPy's ``rollaxis`` (`moveaxis` is the newer spelling), differentiable."""
    n = a.ndim
    axis = _one_axis(axis, n, "rollaxis")
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise _np.exceptions.AxisError(f"'start' arg requires {-n} <= start < {n + 1}, but "
                                       f"{start} was passed in")
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start) if axis != start else a


@_numpy_unless_traced(_np.roll)
def roll(a, shift, axis=None):
    """NumPy's ``roll``, differentiable."""
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), a.shape)
    axes = _axes(axis, a.ndim, "roll", repeats=True)    # (rolled twice: NumPy's too)
    shifts, axes = _np.broadcast_arrays(_np.asarray(shift, dtype=_np.intp), axes)
    if shifts.ndim > 1:
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    return A.roll(a, shift=tuple(shifts.tolist()), axis=tuple(axes.tolist()))


@_numpy_unless_traced(_np.tile)
def tile(A, reps):
    """NumPy's ``tile``, differentiable."""
    a = A                                   # (NumPy's name; the primitives are not used here)
    # (a 0-d count, plain or traced, is one number: operator.index reads it, as NumPy's)
    reps = (operator.index(reps),) if not len(_shape(reps)) else tuple(reps)
    nd = builtins.max(len(reps), a.ndim)
    shape = (1,) * (nd - a.ndim) + a.shape
    reps = (1,) * (nd - len(reps)) + reps
    # (r0, s0, r1, s1, ...) by broadcasting, then merged pairwise
    x = reshape(a, tuple(v for d in shape for v in (1, d)))
    x = broadcast_to(x, tuple(v for r, d in zip(reps, shape) for v in (r, d)))
    return reshape(x, tuple(r * d for r, d in zip(reps, shape)))


@_numpy_unless_traced(_np.repeat)
def repeat(a, repeats, axis=None):
    """NumPy's ``repeat``, differentiable."""
    if axis is None:
        a, axis = ravel(a), 0
    ax = _one_axis(axis, a.ndim, "repeat")
    idx = _np.repeat(_np.arange(a.shape[ax]), repeats)
    return a[(slice(None),) * ax + (idx,)]


@_numpy_unless_traced(_np.take, any_argument=True)
def take(a, indices, axis=None, out=None, mode="raise"):
    """NumPy's ``take`` (elements at integer `indices` along `axis`, of the flattened array
    without one), differentiable in `a`: integer-array indexing.  The indices may be traced
    without values (a loop's counter, a batch of them under `wg.vmap`, an argument of
    `wg.compile`): then it is a gather, as in JAX.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> table = numpy.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        >>> wg.vmap(lambda i: np.take(table, i, axis=0))(numpy.array([2, 0])).tolist()
        [[5.0, 6.0], [1.0, 2.0]]
    """
    _refuse("take", out=out is not None)
    a = asarray(a)
    if type(indices) is not Node or indices.value is not None:
        indices = _np.asarray(_value_of(indices, "used as indices"))
    elif indices.dtype.kind not in "iu":
        raise IndexError("arrays used as indices must be of integer (or boolean) type")
    if axis is None:
        a, axis = ravel(a), 0
    ax = _one_axis(axis, a.ndim, "take")
    n = a.shape[ax]
    traced = type(indices) is Node
    if mode == "wrap":
        indices = mod(indices, n) if traced else _np.mod(indices, n)
    elif mode == "clip":
        indices = clip(indices, 0, n - 1) if traced else _np.clip(indices, 0, n - 1)
    elif mode != "raise":
        raise ValueError("clipmode must be one of 'clip', 'raise', or 'wrap'")
    if traced:
        return _gather(a, indices, ax)
    return a[(slice(None),) * ax + (indices,)]


def _gather(a, indices, ax):
    """NumPy's ``take(a, indices, axis=ax)`` for integer `indices` traced without values,
    as `take_along_axis`, which records them: one index per slice of `a` along `ax`."""
    rest = tuple(a.shape[:ax]) + tuple(a.shape[ax + 1:])
    k = tuple(indices.shape)
    flat = reshape(indices, (int(_np.prod(k)),) + (1,) * len(rest))
    out = reshape(take_along_axis(moveaxis(a, ax, 0), flat, axis=0), k + rest)
    if ax and k:        # (the indices' axes where `ax` was)
        out = moveaxis(out, tuple(range(len(k))), tuple(range(ax, ax + len(k))))
    return out


def _getitem_gathered(x, index):
    """x[index] where entries of `index` are integers traced without values (`gathered`):
    the other entries index first, each traced one becomes a `take` along its axis.  NumPy
    places the result of several index arrays, or of one with integers, by rules of its
    own, so a traced entry is taken with basic entries (slices, None, ...) and, where all
    traced ones are scalars, with integers; else its value is asked for (the error)."""
    traced = [i for i in index if type(i) is Node]
    scalars = builtins.all(i.shape == () for i in traced)
    for i in index:
        plain_int = isinstance(i, (int, _np.integer)) and not isinstance(i, bool)
        if not (type(i) is Node or i is None or i is Ellipsis or isinstance(i, slice)
                or (plain_int and scalars)) or (len(traced) > 1 and not scalars):
            return x[tuple(t._concrete("used as an index") if type(t) is Node else t
                           for t in index)]
    basic, taken = A.split_traced(index, x.ndim, lambda i: type(i) is Node)
    out = x[basic]
    for axis, i in reversed(taken):     # (the last first: the earlier axes stay where they are)
        out = take(out, i, axis=axis)
    return out


# the keywords each of NumPy's pad modes takes
_PAD_KEYWORDS = {"constant": {"constant_values"}, "edge": set(), "wrap": set(),
                 "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
                 "linear_ramp": {"end_values"}, "empty": set(),
                 **dict.fromkeys(("maximum", "mean", "median", "minimum"), {"stat_length"})}


@_numpy_unless_traced(_np.pad)
def pad(array, pad_width, mode="constant", **kwargs):
    """NumPy's ``pad``, differentiable in the array, in the modes 'constant', and 'edge',
    'reflect', 'symmetric' and 'wrap', which copy the array's own values: those are
    indexing, whose derivative adds each copy's cotangent back to the value copied (the
    statistics modes are NumPy's, for plain arrays)."""
    widths = tuple((int(lo), int(hi)) for lo, hi in
                   _np.broadcast_to(_np.asarray(pad_width), (array.ndim, 2)))
    if not widths:                  # a 0-d array has no axis to pad: NumPy returns it
        return array
    allowed = _PAD_KEYWORDS.get(mode)
    if allowed is not None and set(kwargs) - allowed:       # (NumPy's error, NumPy's words)
        raise ValueError(f"unsupported keyword arguments for mode {mode!r}: "
                         f"{set(kwargs) - allowed}")
    if mode in ("edge", "reflect", "symmetric", "wrap"):
        if kwargs.pop("reflect_type", "even") != "even":
            raise NotImplementedError("numpy.pad: reflect_type='odd' is not supported on "
                                      "traced values")
        _refuse("pad", **{k: True for k in kwargs})
        out = array
        for ax, (lo, hi) in enumerate(widths):
            if lo or hi:        # where each padded position copies from: NumPy's own padding
                idx = _np.pad(_np.arange(array.shape[ax]), (lo, hi), mode=mode)
                out = out[(slice(None),) * ax + (idx,)]
        return out
    if mode != "constant":
        raise NotImplementedError(f"numpy.pad: mode {mode!r} is not supported on traced "
                                  "values (only 'constant', 'edge', 'reflect', 'symmetric' "
                                  "and 'wrap')")
    constant_values = kwargs.pop("constant_values", 0)
    _refuse("pad", **{k: True for k in kwargs})
    out = A.pad(array, pad_width=widths)
    if _traced(constant_values):
        if len(_shape(constant_values)):
            raise NotImplementedError("numpy.pad: constant_values per axis are not supported "
                                      "when traced; give one traced number, or pad in steps")
        # the border takes the constant (in the array's dtype, as NumPy's), differentiably
        border = _np.pad(_np.zeros(array.shape, bool), widths, constant_values=True)
        return S.select(border, astype(constant_values, A.dtype_of(array)), out)
    if _np.any(_np.asarray(constant_values) != 0):
        # the border: the constants around zeros of the array's dtype (float32 stays so)
        out = out + _np.pad(_np.zeros(array.shape, array.dtype), widths,
                            constant_values=constant_values)
    return out


@_numpy_unless_traced(_np.tril)
def tril(m, k=0):
    """NumPy's ``tril`` (zeros above the k-th diagonal of the last two axes; a vector is
    first repeated into a square matrix), differentiable."""
    if m.ndim == 1:
        m = broadcast_to(m, m.shape * 2)
    return A.tril(m, k=int(k))


@_numpy_unless_traced(_np.triu)
def triu(m, k=0):
    """NumPy's ``triu`` (zeros below the k-th diagonal), differentiable: the lower
    triangle of the transpose, transposed back."""
    if m.ndim == 1:
        m = broadcast_to(m, m.shape * 2)
    return swapaxes(A.tril(swapaxes(m, -1, -2), k=-int(k)), -1, -2)


def _broadcast_edge(x, shape, ax):
    """diff's prepend/append: a scalar repeated to `shape` with length 1 along `ax`."""
    x = asarray(x) if type(x) is not Node else x
    if len(_shape(x)) == 0:
        edge = list(shape)
        edge[ax] = 1
        x = broadcast_to(x, tuple(edge))
    return x


@_numpy_unless_traced(_np.diff, any_argument=True)
def diff(a, n=1, axis=-1, prepend=_NoValue, append=_NoValue):
    """NumPy's ``diff``, differentiable: the n-th differences along `axis`, after joining
    `prepend` and `append` (scalars are repeated to one slice)."""
    if n == 0:
        return a
    if n < 0:
        raise ValueError("order must be non-negative but got " + repr(n))
    a = asarray(a)
    if a.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    ax = _one_axis(axis, a.ndim, "diff")
    parts = [a]
    if prepend is not _NoValue:
        parts.insert(0, _broadcast_edge(prepend, a.shape, ax))
    if append is not _NoValue:
        parts.append(_broadcast_edge(append, a.shape, ax))
    if len(parts) > 1:
        a = concatenate(parts, ax)
    later = (slice(None),) * ax + (slice(1, None),)
    earlier = (slice(None),) * ax + (slice(None, -1),)
    step = S.ne if a.dtype == _np.bool_ else S.sub
    for _ in range(n):
        a = step(a[later], a[earlier])
    return a


def _spacings(f, varargs, axes):
    """gradient's spacing of each axis as NumPy holds it: a number, or the differences of
    coordinates (one number if they are uniform)."""
    if not varargs:
        return [1.0] * len(axes)
    if len(varargs) == 1 and _np.ndim(varargs[0]) == 0:
        return list(varargs) * len(axes)
    if len(varargs) != len(axes):
        raise TypeError("invalid number of arguments")
    out = []
    for d, ax in zip(varargs, axes):
        if _traced(d):
            raise NotImplementedError("numpy.gradient with traced spacings is not supported: "
                                      "only the values of f carry a derivative")
        if _np.ndim(d) == 0:
            out.append(d)
            continue
        d = _np.asarray(d)
        if d.ndim != 1:
            raise ValueError("distances must be either scalars or 1d")
        if len(d) != f.shape[ax]:
            raise ValueError("when 1d, distances must match the length of the corresponding "
                             "dimension")
        if d.dtype.kind in "iub":
            d = d.astype(_np.float64)
        dd = _np.diff(d)
        out.append(dd[0] if (dd == dd[0]).all() else dd)
    return out


@_numpy_unless_traced(_np.gradient)
def gradient(f, *varargs, axis=None, edge_order=1):
    """NumPy's ``gradient``, differentiable in f: central differences inside, one-sided
    ones of first (``edge_order=1``) or second order (``edge_order=2``) at the edges;
    spacings as NumPy takes them (one number, one per axis, or coordinates).  One array
    for one axis, else a tuple.  The result is linear in f, so its derivative is the same
    differences of f's tangent."""
    if edge_order not in (1, 2):
        raise ValueError("'edge_order' greater than 2 not supported")
    if axis is None:
        axes = tuple(range(f.ndim))
    else:
        axes = tuple(_axes(axis, f.ndim, "gradient"))   # in the order given, as NumPy's
    if f.dtype.kind in "iub":
        f = astype(f, _np.float64)
    outs = []
    for ax, dx in zip(axes, _spacings(f, varargs, axes)):
        n = f.shape[ax]
        if n < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                             "least (edge_order + 1) elements are required.")
        at = lambda lo, hi: f[(slice(None),) * ax + (slice(lo, hi),)]
        uniform = _np.ndim(dx) == 0
        if uniform:
            inner = (at(2, None) - at(None, -2)) / (2.0 * dx)
        else:
            d1, d2 = dx[:-1], dx[1:]
            along = (-1,) + (1,) * (f.ndim - ax - 1)
            a = (-d2 / (d1 * (d1 + d2))).reshape(along)
            b = ((d2 - d1) / (d1 * d2)).reshape(along)
            c = (d1 / (d2 * (d1 + d2))).reshape(along)
            inner = a * at(None, -2) + b * at(1, -1) + c * at(2, None)
        if edge_order == 1:
            first, last = (dx, dx) if uniform else (dx[0], dx[-1])
            head = (at(1, 2) - at(0, 1)) / first
            tail = (at(n - 1, n) - at(n - 2, n - 1)) / last
        else:
            # the parabola through the first (last) three points, differentiated at the end
            # point, with NumPy's coefficients
            if uniform:
                lead, back = (-1.5 / dx, 2.0 / dx, -0.5 / dx), (0.5 / dx, -2.0 / dx, 1.5 / dx)
            else:
                h1, h2 = dx[0], dx[1]
                lead = (-(2.0 * h1 + h2) / (h1 * (h1 + h2)), (h1 + h2) / (h1 * h2),
                        -h1 / (h2 * (h1 + h2)))
                h1, h2 = dx[-2], dx[-1]
                back = (h2 / (h1 * (h1 + h2)), -(h2 + h1) / (h1 * h2),
                        (2.0 * h2 + h1) / (h2 * (h1 + h2)))
            head = lead[0] * at(0, 1) + lead[1] * at(1, 2) + lead[2] * at(2, 3)
            tail = back[0] * at(n - 3, n - 2) + back[1] * at(n - 2, n - 1) + back[2] * at(n - 1, n)
        pieces = [head, inner, tail]
        outs.append(astype(concatenate([p for p in pieces if p.shape[ax]], ax), f.dtype))
    return outs[0] if len(outs) == 1 else tuple(outs)


@_numpy_unless_traced(_np.kron, any_argument=True)
def kron(a, b):
    """NumPy's ``kron`` (the Kronecker product), differentiable: the two arrays with
    interleaved axes of length 1, multiplied, and the pairs of axes merged."""
    a, b = asarray(a), asarray(b)
    na, nb = len(_shape(a)), len(_shape(b))
    if na == 0 or nb == 0:
        return multiply(a, b)
    nd = builtins.max(na, nb)
    sa = (1,) * (nd - na) + tuple(_shape(a))
    sb = (1,) * (nd - nb) + tuple(_shape(b))
    out = multiply(reshape(a, tuple(v for d in sa for v in (d, 1))),
                   reshape(b, tuple(v for d in sb for v in (1, d))))
    return reshape(out, tuple(x * y for x, y in zip(sa, sb)))


@_numpy_unless_traced(_np.cross, any_argument=True)
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """NumPy's ``cross``, differentiable: of 3-vectors (a 2-vector's third component is
    0), and of two 2-vectors the z component; vectors along `axisa` and `axisb`, the
    result's along `axisc` (`axis` sets all three)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = asarray(a), asarray(b)
    if len(_shape(a)) < 1 or len(_shape(b)) < 1:
        raise ValueError("At least one array has zero dimension")
    a = moveaxis(a, _one_axis(axisa, a.ndim, "cross"), -1)
    b = moveaxis(b, _one_axis(axisb, b.ndim, "cross"), -1)
    na, nb = a.shape[-1], b.shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n"
                         "(dimension must be 2 or 3)")
    if na == 2 or nb == 2:
        import warnings
        warnings.warn("Arrays of 2-dimensional vectors are deprecated. Use arrays of "
                      "3-dimensional vectors instead. (deprecated in NumPy 2.0)",
                      DeprecationWarning, stacklevel=3)
    a0, a1, b0, b1 = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    z = a0 * b1 - a1 * b0
    if na == 2 and nb == 2:
        return z
    # (the missing third component is 0: NumPy leaves its products out)
    if na == 3 and nb == 3:
        a2, b2 = a[..., 2], b[..., 2]
        x, y = a1 * b2 - a2 * b1, a2 * b0 - a0 * b2
    elif na == 2:
        b2 = b[..., 2]
        x, y = a1 * b2, -(a0 * b2)
    else:
        a2 = a[..., 2]
        x, y = -(a2 * b1), a2 * b0
    shape = _np.broadcast_shapes(_shape(x), _shape(y), _shape(z))
    out = stack([broadcast_to(c, shape) if _shape(c) != shape else c for c in (x, y, z)], -1)
    return moveaxis(out, -1, _one_axis(axisc, len(shape) + 1, "cross"))


# ---- assembling and taking apart: compositions of the joins, gathers and reshapes above ------
@_numpy_unless_traced(_np.append, any_argument=True)
def append(arr, values, axis=None):
    """NumPy's ``append``, differentiable in both: `values` joined to the end of `arr` along
    `axis` (both flattened when it is None), by `concatenate`.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> np.append(numpy.ones((1, 2)), [[5.0, 6.0]], axis=0).tolist()
        [[1.0, 1.0], [5.0, 6.0]]
        >>> wg.grad(lambda x: np.sum(np.append(x, x ** 2)))(numpy.array([1.0, 2.0]))
        array([3., 5.])
    """
    arr, values = asarray(arr), asarray(values)
    if axis is None:
        arr, values, axis = ravel(arr), ravel(values), 0
    return concatenate((arr, values), axis=axis)


def _block_layout(arrays):
    """How deep the lists of ``block(arrays)`` nest and the most dimensions of an array in
    them, with NumPy's errors for a tuple, an empty list and uneven depths."""
    depth, ndim = None, 0
    todo = [(arrays, ())]
    while todo:                             # (depth first, left to right, as NumPy reports)
        x, index = todo.pop()
        where = "arrays" + "".join(f"[{i}]" for i in index)
        if type(x) is tuple:
            raise TypeError(f"{where} is a tuple. Only lists can be used to arrange blocks, "
                            "and np.block does not allow implicit conversion from tuple to "
                            "ndarray.")
        if type(x) is list:
            if not x:
                raise ValueError(f"List at {where} cannot be empty")
            todo.extend((y, index + (i,)) for i, y in reversed(list(enumerate(x))))
            continue
        if depth is None:
            depth = len(index)
        elif len(index) != depth:
            raise ValueError(f"List depths are mismatched. First element was at depth {depth}, "
                             f"but there is an element at depth {len(index)} ({where})")
        ndim = builtins.max(ndim, len(_shape(x)))
    return depth, ndim


@_numpy_unless_traced(_np.block, any_argument=True, array_likes="none")
def block(arrays):
    """NumPy's ``block``, differentiable: the innermost lists joined along the last axis,
    the lists holding them along the one before, and so on, each array first given the
    dimensions it lacks in front (as NumPy does); a `concatenate` per list.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> np.block([[numpy.eye(2), numpy.zeros((2, 1))], [numpy.ones((1, 3))]]).tolist()
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 1.0]]
        >>> wg.grad(lambda a: np.sum(np.block([[a, 2 * a], [a, a]])))(numpy.ones((1, 1)))
        array([[5.]])
    """
    depth, ndim = _block_layout(arrays)
    ndim = builtins.max(ndim, depth)

    def joined(x, level):
        # (recursion over the nesting of the caller's lists, a few levels, not the graph)
        if level == depth:
            x = asarray(x)
            missing = ndim - len(_shape(x))
            return reshape(x, (1,) * missing + tuple(_shape(x))) if missing else x
        return concatenate([joined(y, level + 1) for y in x], axis=level - depth)
    return joined(arrays, 0)


@_numpy_unless_traced(_np.column_stack, any_argument=True, array_likes="items")
def column_stack(tup):
    """NumPy's ``column_stack``, differentiable: 1-D arrays (and scalars) become columns,
    and the columns and 2-D arrays are joined along the second axis.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> np.column_stack([numpy.arange(2.0), numpy.ones(2)]).tolist()
        [[0.0, 1.0], [1.0, 1.0]]
        >>> wg.grad(lambda x: np.sum(np.column_stack([x, x ** 2])))(numpy.array([1.0, 2.0]))
        array([3., 5.])
    """
    columns = []
    for v in tup:
        a = asarray(v)
        s = tuple(_shape(a))
        if len(s) < 2:
            a = reshape(a, (-1, 1) if s else (1, 1))
        columns.append(a)
    return concatenate(columns, 1)


@_numpy_unless_traced(_np.dstack, any_argument=True, array_likes="items")
def dstack(tup):
    """NumPy's ``dstack``, differentiable: the arrays made at least 3-D (as `atleast_3d`)
    and joined along the third axis.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> np.dstack([numpy.zeros(2), numpy.ones(2)]).shape
        (1, 2, 2)
        >>> wg.grad(lambda x: np.sum(np.dstack([x, 3 * x])))(numpy.ones((2, 2))).tolist()
        [[4.0, 4.0], [4.0, 4.0]]
    """
    arrays = atleast_3d(*tup)
    return concatenate(arrays if type(arrays) is tuple else (arrays,), 2)


if hasattr(_np, "row_stack"):               # (deprecated in NumPy 2.0; gone in later ones)
    @_numpy_unless_traced(_np.row_stack, any_argument=True, array_likes="items")
    def row_stack(tup, *, dtype=None, casting="same_kind"):
        """NumPy's ``row_stack``, the deprecated name of `vstack` (with NumPy's warning).

        Example:
            >>> import warnings, numpy, wengert.numpy as np
            >>> with warnings.catch_warnings():
            ...     warnings.simplefilter("ignore", DeprecationWarning)
            ...     np.row_stack([numpy.zeros(2), numpy.ones(2)]).tolist()
            [[0.0, 0.0], [1.0, 1.0]]
        """
        import warnings
        warnings.warn("`row_stack` alias is deprecated. Use `np.vstack` directly.",
                      DeprecationWarning, stacklevel=3)
        return vstack(tup, dtype=dtype, casting=casting)


concat = concatenate        # (the array API's name: NumPy's concat is its concatenate)


class _Concatenator:
    """NumPy's ``r_`` and ``c_``, taking traced items: ``np.r_[a, 0.0, b]`` joins its items
    along the first axis and ``np.c_[a, b]`` makes 1-D items columns and joins them side by
    side, differentiably.  Slices are ranges and a leading string such as ``"0,2"`` sets
    the axis, the least number of dimensions and where a 1-D item's axis goes, as in NumPy.
    (NumPy's own ``numpy.r_`` converts its items to arrays itself, before any dispatch, so
    unmodified NumPy code cannot hand it traced values: use this one.)

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> wg.grad(lambda x: np.sum(np.r_[x, 2.0, x ** 2]))(numpy.array([1.0, 3.0]))
        array([3., 7.])
        >>> wg.grad(lambda x: np.sum(np.c_[x, x ** 2] * [[1.0, 10.0]]))(numpy.array([1.0, 3.0]))
        array([21., 61.])
    """

    def __init__(self, plain, axis, ndmin, trans1d):
        self._plain = plain             # NumPy's object, for items none of which is traced
        self._settings = (axis, ndmin, trans1d)

    def __getitem__(self, key):
        items = key if type(key) is tuple else (key,)
        if not _traced(*items):
            return self._plain[key]
        axis, ndmin, trans1d = self._settings
        if isinstance(items[0], str):
            directive, items = items[0], items[1:]
            if directive in ("r", "c"):
                raise NotImplementedError(
                    f"np.r_[{directive!r}, ...] makes a numpy.matrix, which a traced value "
                    "cannot be: leave the directive out for an array")
            try:
                given = [int(s) for s in directive.split(",")]
            except ValueError:
                raise ValueError(f"unknown special directive {directive!r}") from None
            axis, ndmin, trans1d = (given + [ndmin, trans1d][len(given) - 1:])[:3]
        parts = []
        for item in items:
            if isinstance(item, str):
                raise ValueError("special directives must be the first entry.")
            part = asarray(_np.r_[item] if isinstance(item, slice) else item)
            parts.append(self._at_least(part, ndmin, trans1d))
        # (Python numbers are weak, as in NumPy: r_[float32 array, 1.0] stays float32)
        dtype = _np.result_type(*[i if type(i) in (bool, int, float, complex) else p.dtype
                                  for i, p in zip(items, parts)])
        parts = [p if p.dtype == dtype else astype(p, dtype) for p in parts]
        return concatenate(parts, axis=axis)

    @staticmethod
    def _at_least(part, ndmin, trans1d):
        """`part` with `ndmin` dimensions: new axes in front, then (unless trans1d is -1,
        and for an item that had some axes) its own axes moved to start at `trans1d`."""
        nd = len(_shape(part))
        if nd >= ndmin:
            return part
        part = reshape(part, (1,) * (ndmin - nd) + tuple(_shape(part)))
        if trans1d == -1 or nd == 0:
            return part
        start = trans1d if trans1d >= 0 else trans1d + ndmin - nd + 1
        new = list(range(ndmin - nd))
        own = list(range(ndmin - nd, ndmin))
        return transpose(part, new[:start] + own + new[start:])


r_ = _Concatenator(_np.r_, 0, 1, -1)
c_ = _Concatenator(_np.c_, -1, 2, 0)


@_numpy_unless_traced(_np.copy)
def copy(a, order="K", subok=False):
    """NumPy's ``copy``: a traced value is never changed in place, so it is its own copy
    (``order`` and ``subok`` are about memory, which it does not have).

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> wg.grad(lambda x: np.sum(np.copy(x) * x))(numpy.array([1.0, 2.0]))
        array([2., 4.])
    """
    return a


def _positions_along(a, positions, ax):
    """`a`'s slices at the increasing integer `positions` along axis `ax`: one slice where
    they are evenly spaced (cheaper than an index array, and so is its derivative), else
    integer-array indexing."""
    pre = (slice(None),) * ax
    positions = _np.asarray(positions, _np.intp)
    if positions.size == 0:
        return a[pre + (slice(0, 0),)]
    step = int(positions[1] - positions[0]) if positions.size > 1 else 1
    if step > 0 and (_np.diff(positions) == step).all():
        return a[pre + (slice(int(positions[0]), int(positions[-1]) + 1, step),)]
    return a[pre + (positions,)]


def _positions(n, ax):
    """0, 1, ..., n - 1 along the last of ax + 1 axes: NumPy's delete and compress of it
    are the positions they keep, read by NumPy itself from their argument (so its slices,
    masks, lists and errors are NumPy's, the axis named in them too)."""
    return _np.arange(n).reshape((1,) * ax + (n,))


@_numpy_unless_traced(_np.delete)
def delete(arr, obj, axis=None):
    """NumPy's ``delete``, differentiable in `arr`: the other slices along `axis` (of the
    flattened array when it is None) taken by indexing.  `obj` is read as NumPy reads it (an
    index, a slice, a list, a boolean mask); a traced `obj` needs its value.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> np.delete(numpy.arange(6.0).reshape(2, 3), [0, 2], axis=-1).tolist()
        [[1.0], [4.0]]
        >>> wg.grad(lambda x: np.sum(np.delete(x, slice(None, None, 2)) ** 2))(
        ...     numpy.array([1.0, 2.0, 3.0, 4.0]))
        array([0., 4., 0., 8.])
    """
    arr = asarray(arr)
    if axis is None:
        arr, axis = ravel(arr), 0
    ax = _one_axis(axis, len(_shape(arr)), "delete")
    obj = _value_of(obj, "used as indices by numpy.delete")
    kept = _np.delete(_positions(_shape(arr)[ax], ax), obj, ax).ravel()
    return _positions_along(arr, kept, ax)


@_numpy_unless_traced(_np.insert, any_argument=True)
def insert(arr, obj, values, axis=None):
    """NumPy's ``insert``, differentiable in `arr` and in `values` (cast to arr's dtype, as
    NumPy writes them into an array of it): before one index, the values (broadcast as
    NumPy does) between two slices of `arr`, joined; before several, `arr` and the values
    joined and taken in their new order by indexing.  `obj` is read as NumPy reads it; a
    traced `obj` needs its value.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> np.insert(numpy.zeros((2, 2)), 1, [5.0, 6.0], axis=1).tolist()
        [[0.0, 5.0, 0.0], [0.0, 6.0, 0.0]]
        >>> wg.grad(lambda v: np.sum(np.insert(numpy.zeros(3), [0, 2], v) ** 2))(
        ...     numpy.array([1.0, 2.0]))
        array([2., 4.])
    """
    arr = asarray(arr)
    if axis is None:
        arr, axis = ravel(arr), 0
    nd = len(_shape(arr))
    ax = _one_axis(axis, nd, "insert")
    n = _shape(arr)[ax]
    obj = _value_of(obj, "used as indices by numpy.insert")
    if isinstance(obj, slice):
        indices = _np.arange(*obj.indices(n), dtype=_np.intp)
    else:
        indices = _np.array(obj)
        if indices.dtype == bool:
            if indices.ndim != 1:
                raise ValueError("boolean array argument obj to insert must be one "
                                 "dimensional")
            indices = _np.flatnonzero(indices)
        elif indices.ndim > 1:
            raise ValueError("index array argument obj to insert must be one dimensional "
                             "or scalar")
    values = astype(asarray(values), A.dtype_of(arr))
    pre = (slice(None),) * ax
    slot = list(_shape(arr))
    if indices.size == 1:
        # one place: the values get arr's dimensions in front; a scalar index puts their
        # first axis along `axis` (NumPy's a[:, i:i+1] = values, not a[:, i] = values)
        index = indices.item()
        if index < -n or index > n:
            raise IndexError(f"index {obj} is out of bounds for axis {ax} with size {n}")
        if index < 0:
            index += n
        vshape = tuple(_shape(values))
        if len(vshape) < nd:
            values = reshape(values, (1,) * (nd - len(vshape)) + vshape)
        if indices.ndim == 0:
            values = moveaxis(values, 0, ax)
        slot[ax] = _shape(values)[ax]
        values = broadcast_to(values, tuple(slot))
        return concatenate([arr[pre + (slice(None, index),)], values,
                            arr[pre + (slice(index, None),)]], ax)
    if indices.size == 0 and not isinstance(obj, _np.ndarray):
        indices = indices.astype(_np.intp)
    # NumPy's new places of the values: each index shifted by the values placed before it
    indices[indices < 0] += n
    numnew = len(indices)
    indices[indices.argsort(kind="mergesort")] += _np.arange(numnew)
    kept = _np.ones(n + numnew, dtype=bool)
    kept[indices] = False
    source = _np.empty(n + numnew, _np.intp)    # where each place takes from: arr, values
    source[kept] = _np.arange(n)
    source[indices] = n + _np.arange(numnew)
    slot[ax] = numnew
    joined = concatenate([arr, broadcast_to(values, tuple(slot))], ax)
    return joined[pre + (source,)]


@_numpy_unless_traced(_np.diagflat)
def diagflat(v, k=0):
    """NumPy's ``diagflat``, differentiable: the flattened `v` on the k-th diagonal of a
    square matrix (`diag` of it).

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> np.diagflat([[1.0, 2.0]], 1).tolist()
        [[0.0, 1.0, 0.0], [0.0, 0.0, 2.0], [0.0, 0.0, 0.0]]
        >>> wg.grad(lambda v: np.trace(np.diagflat(v) @ np.diagflat(v)))(numpy.ones((1, 2)))
        array([[2., 2.]])
    """
    return diag(ravel(v), k)


@_numpy_unless_traced(_np.permute_dims)
def permute_dims(a, axes=None):
    """NumPy's ``permute_dims`` (the array API's name of `transpose`), differentiable.

    Example:
        >>> import numpy, wengert.numpy as np
        >>> np.permute_dims(numpy.zeros((2, 3, 4)), (2, 0, 1)).shape
        (4, 2, 3)
    """
    return transpose(a, axes)


@_numpy_unless_traced(_np.compress, any_argument=True)
def compress(condition, a, axis=None, out=None):
    """NumPy's ``compress``, differentiable in `a`: the slices along `axis` (of the
    flattened array when it is None) where `condition` holds, by indexing.  A traced
    condition needs its value, as a traced boolean mask in indexing does.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> np.compress([False, True], numpy.arange(4.0).reshape(2, 2), axis=0).tolist()
        [[2.0, 3.0]]
        >>> wg.grad(lambda x: np.sum(np.compress(x > 1, x) ** 2))(numpy.array([1.0, 2.0, 3.0]))
        array([0., 4., 6.])
    """
    _refuse("compress", out=out is not None)
    condition = _value_of(condition, "used as a mask by numpy.compress")
    a = asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    ax = _one_axis(axis, len(_shape(a)), "compress")
    kept = _np.compress(condition, _positions(_shape(a)[ax], ax), ax).ravel()
    return _positions_along(a, kept, ax)


@_numpy_unless_traced(_np.choose, any_argument=True, array_likes="none")
def choose(a, choices, out=None, mode="raise"):
    """NumPy's ``choose``, differentiable in the choices: element by element the choice
    `a` names (``mode`` 'raise', 'wrap' or 'clip' for the others), `a` and the choices
    broadcast, by `take_along_axis` of the choices stacked.  A traced `a` is recorded with
    'wrap' and 'clip'; with 'raise' its range is checked on its value.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> np.choose([1, 0, 1], [numpy.zeros(3), numpy.arange(3.0)]).tolist()
        [0.0, 0.0, 2.0]
        >>> wg.grad(lambda x: np.sum(np.choose([0, 1], [x, 2 * x])))(numpy.ones(2))
        array([1., 2.])
    """
    _refuse("choose", out=out is not None)
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError("clipmode must be one of 'clip', 'raise', or 'wrap'")
    if type(choices) is Node or isinstance(choices, _np.ndarray):
        options = [choices[i] for i in range(_shape(choices)[0])]
    else:
        options = [asarray(c) for c in choices]
    n = len(options)
    if type(a) is not Node or a.value is not None or mode == "raise":
        a = _np.asarray(_value_of(a, "checked by numpy.choose(mode='raise') (with 'wrap' "
                                     "or 'clip' it needs no value)"))
        if not _np.can_cast(a.dtype, _np.intp, "safe"):
            raise TypeError(f"Cannot cast array data from {a.dtype!r} to "
                            f"{_np.dtype(_np.intp)!r} according to the rule 'safe'")
        if mode == "raise" and ((a < 0) | (a >= n)).any():
            raise ValueError("invalid entry in choice array")
        a = _np.mod(a, n) if mode == "wrap" else _np.clip(a, 0, n - 1)
    else:                                   # (no value: wg.trace, wg.compile, wg.vmap)
        a = remainder(a, n) if mode == "wrap" else clip(a, 0, n - 1)
    shape = _np.broadcast_shapes(_shape(a), *[_shape(c) for c in options])
    stacked = stack([broadcast_to(c, shape) for c in options])
    return take_along_axis(stacked, expand_dims(broadcast_to(a, shape), 0), axis=0)[0]


@_numpy_unless_traced(_np.extract, any_argument=True)
def extract(condition, arr):
    """NumPy's ``extract``, differentiable in `arr`: the elements of the flattened `arr`
    where the flattened `condition` holds, by indexing.  A traced condition needs its
    value, as a traced boolean mask in indexing does.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> wg.grad(lambda x: np.sum(np.extract(x > 0, x) ** 2))(numpy.array([[-1.0, 2.0]]))
        array([[0., 4.]])
    """
    condition = _value_of(condition, "used as a mask by numpy.extract")
    return take(ravel(asarray(arr)), _np.nonzero(_np.ravel(condition))[0])


@_numpy_unless_traced(_np.resize)
def resize(a, new_shape):
    """NumPy's ``resize``, differentiable: the flattened `a` repeated as often as it takes
    to fill `new_shape` (a broadcast, cut and reshaped), so the derivative of each element
    gathers those of its copies.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> np.resize(numpy.arange(3.0), (2, 2)).tolist()
        [[0.0, 1.0], [2.0, 0.0]]
        >>> wg.grad(lambda x: np.sum(np.resize(x, 5)))(numpy.ones(2))
        array([3., 2.])
    """
    new_shape = (new_shape,) if isinstance(new_shape, (int, _np.integer)) else tuple(new_shape)
    a = ravel(a)
    new_size = 1
    for d in new_shape:
        new_size *= d
        if d < 0:
            raise ValueError("all elements of `new_shape` must be non-negative")
    n = a.shape[0]
    if n == 0 or new_size == 0:
        return _np.zeros(new_shape, a.dtype)    # (nothing to repeat: no derivative)
    repeats = -(-new_size // n)
    return reshape(reshape(broadcast_to(a, (repeats, n)), (-1,))[:new_size], new_shape)


if hasattr(_np, "unstack"):                 # (NumPy 2.1)
    @_numpy_unless_traced(_np.unstack)
    def unstack(x, /, *, axis=0):
        """NumPy's ``unstack``, differentiable: the slices along `axis`, a tuple.

        Example:
            >>> import numpy, wengert as wg, wengert.numpy as np
            >>> [v.tolist() for v in np.unstack(numpy.eye(2), axis=-1)]
            [[1.0, 0.0], [0.0, 1.0]]
            >>> wg.grad(lambda x: np.unstack(x)[1] @ np.unstack(x)[0])(numpy.eye(2))
            array([[0., 1.],
                   [1., 0.]])
        """
        if x.ndim == 0:
            raise ValueError("Input array must be at least 1-d.")
        ax = _one_axis(axis, x.ndim, "unstack")
        return tuple(x[(slice(None),) * ax + (i,)] for i in range(x.shape[ax]))


@_numpy_unless_traced(_np.trim_zeros)
def trim_zeros(filt, trim="fb", axis=None):
    """NumPy's ``trim_zeros``, differentiable in what is kept: the leading ('f') and
    trailing ('b') zeros cut off along `axis` (all axes when it is None), by slicing.  Where
    to cut depends on the values: it reads them (eagerly; under ``wg.trace`` and
    ``wg.compile`` a `ConcretizationError`).

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> np.trim_zeros(numpy.array([0.0, 1.0, 0.0, 2.0, 0.0]), "f").tolist()
        [1.0, 0.0, 2.0, 0.0]
        >>> wg.grad(lambda x: np.sum(np.trim_zeros(x) ** 2))(numpy.array([0.0, 3.0, 0.0]))
        array([0., 6., 0.])
    """
    trim = trim.lower()
    if trim not in {"fb", "bf", "f", "b"}:
        raise ValueError(f"unexpected character(s) in `trim`: {trim!r}")
    nd = filt.ndim
    axes = tuple(range(nd)) if axis is None else _norm_axis(axis, nd, "trim_zeros")
    if not axes:
        return filt
    nonzero = _np.argwhere(filt._concrete("read by numpy.trim_zeros, whose cut depends on "
                                          "the values"))
    if nonzero.size == 0:                   # all zeros: nothing is left
        start = stop = [0] * nd
    else:
        start, stop = list(nonzero.min(axis=0)), list(nonzero.max(axis=0) + 1)
        start = start if "f" in trim else [None] * nd
        stop = stop if "b" in trim else [None] * nd
    return filt[tuple(slice(start[i], stop[i]) if i in axes else slice(None)
                      for i in range(nd))]


@_numpy_unless_traced(_np.broadcast_arrays, any_argument=True)
def broadcast_arrays(*args, subok=False):
    """NumPy's ``broadcast_arrays``, differentiable: each argument broadcast to their
    common shape (a tuple; an argument of that shape is itself).

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> [a.shape for a in np.broadcast_arrays(numpy.ones(3), numpy.ones((2, 1)))]
        [(2, 3), (2, 3)]
        >>> wg.grad(lambda x: np.sum(np.broadcast_arrays(x, numpy.ones((2, 1)))[0]))(
        ...     numpy.ones(3))
        array([2., 2., 2.])
    """
    args = [asarray(x) for x in args]
    shape = _np.broadcast_shapes(*[_shape(x) for x in args])
    return tuple(x if tuple(_shape(x)) == shape else broadcast_to(x, shape) for x in args)


class _TracedResult(Exception):
    """apply_along_axis's func1d gave a traced value for a plain array (a closure over a
    traced one), which NumPy cannot store: the first result, for wengert to go on with."""

    def __init__(self, result):
        super().__init__()
        self.result = result


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """NumPy's ``apply_along_axis``, differentiable: `func1d` of each 1-D slice along
    `axis`, the results stacked where that axis was (cast to the first one's dtype, as
    NumPy stores them).  A plain array goes to NumPy, unless `func1d` gives traced values
    (it uses a traced variable): NumPy cannot hold those, and wengert takes over from the
    first result.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> np.apply_along_axis(lambda r: r[::-1], -1, numpy.arange(4.0).reshape(2, 2)).tolist()
        [[1.0, 0.0], [3.0, 2.0]]
        >>> data = numpy.arange(6.0).reshape(3, 2)
        >>> wg.grad(lambda w: np.sum(np.apply_along_axis(lambda r: r @ w, 1, data)))(
        ...     numpy.ones(2))
        array([6., 9.])
    """
    first = []                  # (the first result, if wengert takes over from NumPy)
    if not _traced(arr, *args, *kwargs.values()):
        calls = []

        def probe(*a, **k):
            out = func1d(*a, **k)
            if not calls and _traced(out):
                raise _TracedResult(out)
            calls.append(None)
            return out
        try:
            return _np.apply_along_axis(probe, axis, arr, *args, **kwargs)
        except _TracedResult as result:
            first.append(result.result)
    arr = asarray(arr)
    ax = _one_axis(axis, len(_shape(arr)), "apply_along_axis")
    view = moveaxis(arr, ax, -1)
    outer = tuple(_shape(view)[:-1])
    if _math.prod(outer) == 0:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    results = []
    for ind in _np.ndindex(outer):
        out = first.pop() if first else func1d(view[ind + (Ellipsis,)], *args, **kwargs)
        results.append(asarray(out))
    dtype, inner = A.dtype_of(results[0]), tuple(_shape(results[0]))
    out = reshape(stack([astype(r, dtype) for r in results]), outer + inner)
    # the result's axes where `axis` was, the slices' around them (NumPy's permutation)
    nd, k = len(outer) + len(inner), len(inner)
    order = list(range(ax)) + list(range(nd - k, nd)) + list(range(ax, nd - k))
    return transpose(out, order) if order != list(range(nd)) else out


@_numpy_unless_traced(_np.apply_over_axes, any_argument=True, array_likes="none")
def apply_over_axes(func, a, axes):
    """NumPy's ``apply_over_axes``, differentiable: ``func(a, axis)`` for each axis in turn,
    each result given back the axis it reduced (as NumPy does).

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> np.apply_over_axes(np.sum, numpy.ones((2, 3, 4)), [0, -1]).shape
        (1, 3, 1)
        >>> total = lambda x: np.apply_over_axes(np.sum, x ** 2, (0, 1))[0, 0]
        >>> wg.grad(total)(numpy.ones((2, 2)))
        array([[2., 2.],
               [2., 2.]])
    """
    val = asarray(a)
    nd = len(_shape(val))
    for axis in ((axes,) if _np.ndim(axes) == 0 else axes):
        axis = axis + nd if axis < 0 else axis
        res = func(val, axis)
        if len(_shape(res)) != nd:
            res = expand_dims(res, axis)
            if len(_shape(res)) != nd:
                raise ValueError("function is not returning an array of the correct shape")
        val = res
    return val


@_numpy_unless_traced(_np.ediff1d, any_argument=True)
def ediff1d(ary, to_end=None, to_begin=None):
    """NumPy's ``ediff1d``, differentiable: the differences of the flattened array, with
    `to_begin` and `to_end` (flattened, cast to its dtype) joined before and after.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> np.ediff1d(numpy.array([1.0, 4.0, 9.0]), to_begin=0.0).tolist()
        [0.0, 3.0, 5.0]
        >>> wg.grad(lambda x: np.sum(np.ediff1d(x, to_end=x[:1]) ** 2))(numpy.array([1.0, 3.0]))
        array([-2.,  4.])
    """
    ary = ravel(asarray(ary))
    dtype = A.dtype_of(ary)
    parts = [ary[1:] - ary[:-1]]                # (bools: NumPy's TypeError)
    for name, edge in (("to_begin", to_begin), ("to_end", to_end)):
        if edge is None:
            continue
        edge = asarray(edge)
        if not _np.can_cast(A.dtype_of(edge), dtype, casting="same_kind"):
            raise TypeError(f"dtype of `{name}` must be compatible with input `ary` under "
                            "the `same_kind` rule.")
        edge = astype(ravel(edge), dtype)
        if name == "to_begin":
            parts.insert(0, edge)
        else:
            parts.append(edge)
    return parts[0] if len(parts) == 1 else concatenate(parts)


# ---- functions that write into their argument: not on traced values ------------------------
def _in_place(fname, given, alternative):
    """Refuse NumPy's `fname`, which writes into an array in place, if any of the arrays it
    writes or the values it writes, `given`, is traced: a traced value is never changed, and
    a plain array cannot hold one.  `alternative` says how to compute the new array."""
    if _traced(*given):
        raise NotImplementedError(
            f"numpy.{fname} writes into its argument in place, which is not possible with "
            f"traced values (a traced value is never changed, and a NumPy array cannot hold "
            f"one): compute the new array instead, {alternative}")


def _written(fname, write, a, v, inplace):
    """NumPy's in-place `fname` (``write(a, v)``), or with ``inplace=False`` (JAX's
    spelling) the new array it would leave, differentiable in `a` and `v`."""
    if inplace:
        _in_place(fname, (a, v), f"with wengert.numpy.{fname}(..., inplace=False), which "
                  "returns it (JAX's spelling)")
        return write(a, v)
    if not _traced(a, v):
        out = _np.array(a, copy=True)           # (NumPy's own, on a copy)
        write(out, v)
        return out
    from .updates import written
    return written(a, v, write)


@_numpy_unless_traced(_np.putmask, any_argument=True, array_likes="none")
def putmask(a, /, mask, values):
    """NumPy's ``putmask`` on plain arrays (it writes into `a`); with a traced `a` or
    `values` it raises `NotImplementedError`: write ``a = np.where(mask, values, a)``.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> a = numpy.arange(3.0); np.putmask(a, a > 0, -1.0); a.tolist()
        [0.0, -1.0, -1.0]
        >>> wg.grad(lambda x: np.sum(np.where(x > 0, -x, x)))(numpy.arange(3.0))
        array([ 1., -1., -1.])
    """
    _in_place("putmask", (a, values), "a = np.where(mask, values, a) (values of a's shape, "
              "or broadcasting to it; putmask repeats a shorter one)")
    return _np.putmask(a, _value_of(mask, "used as a mask by numpy.putmask"), values)


def place(arr, mask, vals, *, inplace=True):
    """NumPy's ``place``: ``arr[mask] = vals``, `vals` repeated as needed.  NumPy writes into
    `arr`, which a traced value cannot be: with ``inplace=False`` (JAX's spelling) it
    returns the new array instead, differentiable in `arr` and `vals`, plain arrays too.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> a = numpy.zeros(3); np.place(a, [True, False, True], [1.0, 2.0]); a.tolist()
        [1.0, 0.0, 2.0]
        >>> f = lambda v: np.sum(np.place(numpy.ones(3), [True, False, True], v,
        ...                               inplace=False) ** 2)
        >>> wg.grad(f)(numpy.array([1.0, 2.0]))
        array([2., 4.])
    """
    def write(dst, v):          # (the mask read once the refusal above has passed)
        _np.place(dst, _value_of(mask, "used as a mask by numpy.place"), v)
    return _written("place", write, arr, vals, inplace)


@_numpy_unless_traced(_np.copyto, any_argument=True, array_likes="none")
def copyto(dst, src, casting="same_kind", where=True):
    """NumPy's ``copyto`` on plain arrays (it writes into `dst`); with a traced `dst` or
    `src` it raises `NotImplementedError`: write ``dst = np.where(where, src, dst)``.

    Example:
        >>> import numpy, wengert.numpy as np
        >>> a = numpy.zeros(2); np.copyto(a, [1.0, 2.0], where=[False, True]); a.tolist()
        [0.0, 2.0]
    """
    _in_place("copyto", (dst, src), "dst = np.where(where, src, dst), or without `where` "
              "dst = src (np.broadcast_to and astype for its shape and dtype)")
    return _np.copyto(dst, src, casting, _value_of(where, "used as a mask by numpy.copyto"))


def put(a, ind, v, mode="raise", *, inplace=True):
    """NumPy's ``put``: ``a.flat[ind] = v``, `v` repeated as needed.  NumPy writes into `a`,
    which a traced value cannot be: with ``inplace=False`` (JAX's spelling) it returns the
    new array instead, differentiable in `a` and `v`, plain arrays too.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> a = numpy.zeros(3); np.put(a, [0, 2], [1.0, 2.0]); a.tolist()
        [1.0, 0.0, 2.0]
        >>> wg.grad(lambda v: np.sum(np.put(numpy.ones(3), [0, 2], v, inplace=False) ** 2))(
        ...     numpy.array([1.0, 2.0]))
        array([2., 4.])
    """
    def write(dst, vals):
        _np.put(dst, _value_of(ind, "used as the indices of a numpy.put update"), vals, mode)
    return _written("put", write, a, v, inplace)


def put_along_axis(arr, indices, values, axis, inplace=True):
    """NumPy's ``put_along_axis``, which writes into `arr`; with ``inplace=False`` (JAX's
    spelling) it returns the new array instead, differentiable in `arr` and `values`.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> a = numpy.zeros((2, 2)); np.put_along_axis(a, numpy.array([[1], [0]]), 5.0, 1)
        >>> a.tolist()
        [[0.0, 5.0], [5.0, 0.0]]
        >>> top = lambda x: np.put_along_axis(x, np.argmax(x, 1, keepdims=True), 0.0, 1,
        ...                                   inplace=False)     # each row's largest: 0
        >>> wg.grad(lambda x: np.sum(top(x)))(numpy.array([[1.0, 3.0], [4.0, 2.0]]))
        array([[1., 0.],
               [0., 1.]])
    """
    def write(dst, v):
        where = _value_of(indices, "used as the indices of a numpy.put_along_axis update")
        _np.put_along_axis(dst, where, v, axis)
    return _written("put_along_axis", write, arr, values, inplace)


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    """NumPy's ``fill_diagonal``, which writes into `a`; with ``inplace=False`` (JAX's
    spelling) it returns the new array instead, differentiable in `a` and `val`.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> a = numpy.zeros((2, 2)); np.fill_diagonal(a, 3.0); a.tolist()
        [[3.0, 0.0], [0.0, 3.0]]
        >>> wg.grad(lambda v: np.sum(np.fill_diagonal(numpy.ones((2, 2)), v,
        ...                                           inplace=False)))(3.0)
        2.0
    """
    def write(dst, v):
        _np.fill_diagonal(dst, v, wrap)
    return _written("fill_diagonal", write, a, val, inplace)


# ---- contractions --------------------------------------------------------------------------
def matmul(a, b, /, **kwargs):
    """NumPy's ``matmul`` (``a @ b``), differentiable; seed 000's rule X̄ = Z̄Yᵀ, Ȳ = XᵀZ̄."""
    if type(b) is Node and not kwargs and \
            (type(a) is _np.ndarray or type(a) is Node and a.graph is b.graph) and \
            len(a.shape) == 2 and len(b.shape) == 2 and a.shape[1] == b.shape[0]:
        # (a network's layer, the usual case: the graph Primitive.__call__ would find,
        # without its loop over the arguments, on the hot path of every eager gradient)
        return b.graph.apply(A.matmul, (a, b))
    if type(a) is not Node and type(b) is not Node and not _traced(a, b):
        return _np.matmul(a, b, **kwargs)
    if kwargs:
        from .ufunc_methods import GUFUNC_KEYWORDS, gufunc_call
        if kwargs.keys() <= GUFUNC_KEYWORDS:        # (where the core axes are)
            return gufunc_call(_np.matmul, matmul, (a, b), kwargs)
        _refuse("matmul", **{k: True for k in kwargs})
    a, b = _arrays((a, b))
    sa = a.shape if type(a) is Node or type(a) is _np.ndarray else _np.shape(a)
    sb = b.shape if type(b) is Node or type(b) is _np.ndarray else _np.shape(b)
    if not sa or not sb:
        raise ValueError(f"matmul: operands must have at least one dimension, got shapes "
                         f"{sa} and {sb}")
    if sa[-1] != (sb[0] if len(sb) == 1 else sb[-2]):
        raise ValueError(f"matmul: shapes {sa} and {sb} do not align "
                         f"({sa[-1]} != {sb[0] if len(sb) == 1 else sb[-2]})")
    return A.matmul(a, b)


@_numpy_unless_traced(_np.dot, any_argument=True)
def dot(a, b, out=None):
    """NumPy's ``dot``, differentiable."""
    _refuse("dot", out=out is not None)
    na, nb = len(_shape(a)), len(_shape(b))
    if na == 0 or nb == 0:
        return multiply(_strong(a), _strong(b))
    if na <= 2 and nb <= 2:
        return matmul(a, b)
    return tensordot(a, b, axes=([na - 1], [builtins.max(nb - 2, 0)]))


@_numpy_unless_traced(_np.tensordot, any_argument=True)
def tensordot(a, b, axes=2):
    """NumPy's ``tensordot``, differentiable (as an einsum)."""
    na, nb = len(_shape(a)), len(_shape(b))
    if isinstance(axes, (int, _np.integer)):
        ax_a, ax_b = list(range(na - axes, na)), list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, (int, _np.integer)) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, (int, _np.integer)) else list(ax_b)
        ax_a, ax_b = [x % na for x in ax_a], [x % nb for x in ax_b]
    sa = list(_string.ascii_letters[:na])
    sb = list(_string.ascii_letters[na:na + nb])
    for i, j in zip(ax_a, ax_b):
        sb[j] = sa[i]
    out = [c for i, c in enumerate(sa) if i not in ax_a] + \
          [c for j, c in enumerate(sb) if j not in ax_b]
    return A.einsum(a, b, subscripts=f"{''.join(sa)},{''.join(sb)}->{''.join(out)}")


@_numpy_unless_traced(_np.einsum, any_argument=True)
def einsum(subscripts, *operands, out=None, dtype=None, order="K", casting="safe",
           optimize=False):
    """NumPy's ``einsum``, differentiable (explicit or implicit output, ``...`` allowed).
    ``optimize`` (the order of the contractions) and ``order`` (memory layout) change
    nothing on traced values."""
    _refuse("einsum", out=out is not None)
    if not isinstance(subscripts, str):
        raise NotImplementedError("numpy.einsum's interleaved form (operand, sublist, ...) "
                                  "is not supported on traced values: write the subscripts "
                                  "as a string")
    if dtype is not None:
        operands = [_cast(o, dtype, casting, "einsum") for o in operands]
    subscripts = subscripts.replace(" ", "")
    ins, arrow, out = subscripts.partition("->")
    ins = ins.split(",")
    if len(ins) != len(operands):
        raise ValueError(f"einsum: {len(ins)} operand subscripts for {len(operands)} operands")
    ell = ""
    if "..." in subscripts:
        # spell the broadcast dimensions with unused letters, right-aligned as NumPy does
        spare = [c for c in _string.ascii_letters if c not in subscripts]
        ranks = [len(_shape(o)) - (len(s) - 3) for s, o in zip(ins, operands) if "..." in s]
        ell = "".join(spare[:builtins.max(ranks)])
        ins = [s.replace("...", ell[len(ell) - (len(_shape(o)) - (len(s) - 3)):])
               if "..." in s else s for s, o in zip(ins, operands)]
        if arrow and ell and "..." not in out:
            raise ValueError("output has more dimensions than subscripts given in einstein "
                             "sum, but no '...' ellipsis provided to broadcast the extra "
                             "dimensions.")
        out = out.replace("...", ell)
    if not arrow:
        counts = {}
        for s in ins:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    return A.einsum(*operands, subscripts=",".join(ins) + "->" + out)


@_numpy_unless_traced(_np.outer, any_argument=True)
def outer(a, b, out=None):
    """NumPy's ``outer``, differentiable."""
    _refuse("outer", out=out is not None)
    return multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))


@_numpy_unless_traced(_np.inner, any_argument=True)
def inner(a, b, /):
    """NumPy's ``inner``, differentiable."""
    if len(_shape(a)) == 0 or len(_shape(b)) == 0:
        return multiply(_strong(a), _strong(b))
    return tensordot(a, b, axes=([-1], [-1]))


def _strong(x):
    """A Python number as NumPy's functions that are not ufuncs take it: a 0-d array, of
    a strong dtype (dot(float32 array, 2.0) is float64, as multiply's would not be)."""
    return _np.asarray(x) if type(x) in (bool, int, float, complex) else x


@_numpy_unless_traced(_np.vdot, any_argument=True)
def vdot(a, b, /):
    """NumPy's ``vdot``, differentiable: Σ conj(a)·b over the flattened arrays (a's
    conjugate, unlike dot's)."""
    a, b = ravel(asarray(a)), ravel(asarray(b))
    if a.shape != b.shape:
        raise ValueError("vectors have different lengths")
    return matmul(_conj_complex(a), b)


def _core_dims(fname, x, least, signature):
    """`x` (an array-like) as an array with at least `least` dimensions, for the gufunc
    `fname` with `signature` (NumPy's ValueError else)."""
    x = asarray(x)
    if len(_shape(x)) < least:
        raise ValueError(f"{fname}: Input operand does not have enough dimensions (has "
                         f"{len(_shape(x))}, gufunc core with signature {signature} requires "
                         f"{least})")
    return x


def _matvec(x1, x2):
    """NumPy's ``matvec``: the matrices of x1 (the last two axes) times the vectors of x2
    (the last axis), the other axes broadcast; differentiable, a `matmul`.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> np.matvec(numpy.eye(2) * 2, numpy.ones((3, 2))).tolist()
        [[2.0, 2.0], [2.0, 2.0], [2.0, 2.0]]
        >>> wg.grad(lambda v: np.sum(np.matvec(numpy.eye(2) * 2, v)))(numpy.ones(2))
        array([2., 2.])
    """
    sig = "(m,n),(n)->(m)"
    x1, x2 = _core_dims("matvec", x1, 2, sig), _core_dims("matvec", x2, 1, sig)
    if _shape(x1)[-1] != _shape(x2)[-1]:
        raise ValueError(f"matvec: Input operand 1 has a mismatch in its core dimension 0, "
                         f"with gufunc signature {sig} (size {_shape(x2)[-1]} is different "
                         f"from {_shape(x1)[-1]})")
    return matmul(x1, expand_dims(x2, -1))[..., 0]


def _vecmat(x1, x2):
    """NumPy's ``vecmat``: the conjugated vectors of x1 (the last axis) times the matrices
    of x2 (the last two axes), the other axes broadcast; differentiable, a `matmul`.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> np.vecmat(numpy.array([1.0, 2.0]), numpy.arange(4.0).reshape(2, 2)).tolist()
        [4.0, 7.0]
        >>> wg.grad(lambda m: np.sum(np.vecmat(numpy.array([1.0, 2.0]), m)))(numpy.eye(2))
        array([[1., 1.],
               [2., 2.]])
    """
    sig = "(n),(n,m)->(m)"
    x1, x2 = _core_dims("vecmat", x1, 1, sig), _core_dims("vecmat", x2, 2, sig)
    if _shape(x1)[-1] != _shape(x2)[-2]:
        raise ValueError(f"vecmat: Input operand 1 has a mismatch in its core dimension 0, "
                         f"with gufunc signature {sig} (size {_shape(x2)[-2]} is different "
                         f"from {_shape(x1)[-1]})")
    return matmul(expand_dims(_conj_complex(x1), -2), x2)[..., 0, :]


if hasattr(_np, "matvec"):      # NumPy 2.2's gufuncs (axes= goes to NumPy's, as for vecdot)
    matvec, vecmat = _Ufunc(_np.matvec, _matvec), _Ufunc(_np.vecmat, _vecmat)
    matvec.__doc__, vecmat.__doc__ = _matvec.__doc__, _vecmat.__doc__


@_numpy_unless_traced(_np.diagonal)
def diagonal(a, offset=0, axis1=0, axis2=1):
    """NumPy's ``diagonal``, differentiable (the diagonal becomes the last axis)."""
    pair = _axes((axis1, axis2), a.ndim, "diagonal", repeats=True)
    if pair[0] == pair[1]:
        raise ValueError("diagonal: axis1 and axis2 cannot be the same")
    x = moveaxis(a, pair, (-2, -1))
    n, m = x.shape[-2:]
    i = _np.arange(builtins.max(0, -offset), builtins.min(n, m - offset))
    return x[(Ellipsis, i, i + offset)]


@_numpy_unless_traced(_np.trace)
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """NumPy's ``trace``, differentiable."""
    return sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype, out=out)


@_numpy_unless_traced(_np.diag)
def diag(v, k=0):
    """NumPy's ``diag``, differentiable: a vector's diagonal matrix, or a matrix's diagonal."""
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError(f"diag: input must be 1-d or 2-d, got shape {v.shape}")
    n = v.shape[0] + builtins.abs(k)
    i = _np.arange(v.shape[0])
    rows, cols = (i, i + k) if k >= 0 else (i - k, i)
    out = A.index_add(v, index=A.encode_index((rows, cols)), shape=(n, n))
    # (index_add adds into zeros of a floating dtype: integers and bools keep theirs, as
    # NumPy's diag does)
    return out if A.dtype_of(out) == v.dtype else astype(out, v.dtype)


def _sort_args(fname, order):
    # any kind sorts to the same values, and wengert's argsort is stable
    _refuse(fname, order=order is not None)


@_numpy_unless_traced(_np.sort)
def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """NumPy's ``sort``, differentiable (the derivative follows the permutation)."""
    _sort_args("sort", order)
    if axis is None:
        a, axis = ravel(a), 0
    ax = _one_axis(axis, a.ndim, "sort")
    return A.take_along_axis(a, A.argsort(a, axis=ax), axis=ax)


@_numpy_unless_traced(_np.partition)
def partition(a, kth, axis=-1, kind="introselect", order=None):
    """NumPy's ``partition``, differentiable: the same arrangement as NumPy's (the k-th
    element in its sorted place, no larger ones before it, no smaller after), and the
    derivative follows it, as sort's does."""
    _sort_args("partition", order)
    if axis is None:
        a, axis = ravel(a), 0
    ax = _one_axis(axis, a.ndim, "partition")
    return A.take_along_axis(a, _argpartition(a, kth, ax), axis=ax)


def _argpartition(a, kth, ax):
    kth = int(kth) if _np.ndim(kth) == 0 else tuple(int(k) for k in _np.ravel(kth))
    return A.argpartition(a, kth=kth, axis=ax)


@_numpy_unless_traced(_np.argpartition)
def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """NumPy's ``argpartition`` (integers: no derivative)."""
    _sort_args("argpartition", order)
    if axis is None:
        a, axis = ravel(a), 0
    return _argpartition(a, kth, _one_axis(axis, a.ndim, "argpartition"))


@_numpy_unless_traced(_np.argsort)
def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """NumPy's ``argsort`` (integers: no derivative; stable whatever the ``kind``)."""
    _sort_args("argsort", order)
    if axis is None:
        a, axis = ravel(a), 0
    return A.argsort(a, axis=_one_axis(axis, a.ndim, "argsort"))


# ---- polynomials (coefficients highest power first, as numpy.poly*) -----------------------
def _coefficients(fname, *ps, at_least_1d=True):
    """The coefficient arrays (at least 1-D, unless not `at_least_1d`); a poly1d is
    refused, since it cannot hold traced values."""
    if builtins.any(isinstance(p, _np.poly1d) for p in ps):
        raise NotImplementedError(f"numpy.{fname} of a poly1d is not supported on traced "
                                  "values (a poly1d cannot hold them): pass p.coeffs")
    return [atleast_1d(asarray(p)) if at_least_1d else asarray(p) for p in ps]


def _real_if_conjugate(coefficients, zeros, what):
    """NumPy's rule for poly: complex coefficients whose zeros come in conjugate pairs
    are real (which reads the zeros' values)."""
    if A.dtype_of(coefficients).kind != "c":
        return coefficients
    z = _np.asarray(_value_of(zeros, what), complex)
    return real(coefficients) if _np.all(_np.sort(z) == _np.sort(z.conjugate())) else \
        coefficients


@_numpy_unless_traced(_np.poly)
def poly(seq_of_zeros):
    """NumPy's ``poly``: the coefficients of the monic polynomial with the given zeros (or
    a square matrix's eigenvalues), multiplied out one factor (x − zₖ) at a time, as NumPy
    does; differentiable in the zeros (and in the matrix, through `linalg.eigvals`).

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> wnp.poly(wnp.array([1.0, 2.0])).tolist()          # (x - 1)(x - 2)
        [1.0, -3.0, 2.0]
        >>> wg.jacrev(wnp.poly)(wnp.array([1.0, 2.0])).tolist()
        [[0.0, 0.0], [-1.0, -1.0], [2.0, 1.0]]
    """
    (z,) = _coefficients("poly", seq_of_zeros)
    shape = _shape(z)
    if len(shape) == 2 and shape[0] == shape[1] and shape[0] != 0:
        z = linalg.eigvals(z)
    elif len(shape) == 1:
        z = astype(z, _np.mintypecode(A.dtype_of(z).char))
    else:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    if _shape(z)[0] == 0:
        return 1.0
    a = _np.ones((1,), A.dtype_of(z))
    zero = _np.zeros((1,), A.dtype_of(z))
    for k in range(_shape(z)[0]):           # a·(x − zₖ): NumPy's convolve with [1, −zₖ]
        a = concatenate([a, zero]) - z[k] * concatenate([zero, a])
    return _real_if_conjugate(a, z, "read by numpy.poly (its result is real if the zeros "
                              "come in conjugate pairs)")


def _aligned(a1, a2):
    """The two coefficient arrays, the shorter padded with leading zeros (of its dtype)."""
    n1, n2 = _shape(a1)[0], _shape(a2)[0]
    if n2 > n1:
        a1 = concatenate([_np.zeros(n2 - n1, A.dtype_of(a1)), a1])
    elif n1 > n2:
        a2 = concatenate([_np.zeros(n1 - n2, A.dtype_of(a2)), a2])
    return a1, a2


@_numpy_unless_traced(_np.polyadd, any_argument=True)
def polyadd(a1, a2):
    """NumPy's ``polyadd``, differentiable: the sum, the shorter padded with leading zeros.

    Example:
        >>> import wengert.numpy as wnp
        >>> wnp.polyadd(wnp.array([1.0, 2.0]), wnp.array([1.0, 0.0, 3.0])).tolist()
        [1.0, 1.0, 5.0]
    """
    a1, a2 = _aligned(*_coefficients("polyadd", a1, a2))
    return a1 + a2


@_numpy_unless_traced(_np.polysub, any_argument=True)
def polysub(a1, a2):
    """NumPy's ``polysub``, differentiable: the difference, as `polyadd`.

    Example:
        >>> import wengert.numpy as wnp
        >>> wnp.polysub(wnp.array([1.0, 2.0]), wnp.array([1.0, 0.0, 3.0])).tolist()
        [-1.0, 1.0, -1.0]
    """
    a1, a2 = _aligned(*_coefficients("polysub", a1, a2))
    return a1 - a2


def _leading_zeros_dropped(fname, p):
    """`p` without its leading zeros (all but one if all are), as NumPy's poly1d keeps
    coefficients; which those are is read from the values.  (A zero dropped gets no
    derivative: NumPy's result is shorter there.)"""
    value = _np.asarray(_value_of(p, f"read by numpy.{fname} (leading zero coefficients "
                                     "are dropped, as poly1d drops them)"))
    nonzero_ = _np.flatnonzero(value)
    start = int(nonzero_[0]) if nonzero_.size else builtins.max(value.shape[0] - 1, 0)
    return p[start:] if start else p


@_numpy_unless_traced(_np.polymul, any_argument=True)
def polymul(a1, a2):
    """NumPy's ``polymul``, differentiable: the convolution of the coefficients, leading
    zero coefficients dropped first, as NumPy does (which reads their values; the
    dropped zeros get no derivative).

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> wnp.polymul(wnp.array([1.0, 2.0]), wnp.array([1.0, -2.0])).tolist()
        [1.0, 0.0, -4.0]
        >>> wg.grad(lambda a: wnp.polymul(a, wnp.array([1.0, -2.0]))[1])(wnp.array([1.0, 2.0]))
        array([-2.,  1.])
    """
    a1, a2 = _coefficients("polymul", a1, a2)
    return convolve(_leading_zeros_dropped("polymul", a1),
                    _leading_zeros_dropped("polymul", a2))


@_numpy_unless_traced(_np.polydiv, any_argument=True)
def polydiv(u, v):
    """NumPy's ``polydiv``: (quotient, remainder) of long division, computed as NumPy does,
    differentiable in both.  Leading remainder coefficients within 1e-8 of zero are
    dropped, as NumPy drops them (which reads their values).

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> q, r = wnp.polydiv(wnp.array([1.0, -3.0, 2.0, 1.0]), wnp.array([1.0, -1.0]))
        >>> q.tolist(), r.tolist()
        ([1.0, -2.0, 0.0], [1.0])
        >>> wg.grad(lambda v: wnp.polydiv(wnp.array([1.0, 0.0, -4.0]), v)[1][0])(
        ...     wnp.array([1.0, -1.0]))                        # r = v1²/v0² - 4
        array([-2., -2.])
    """
    u, v = _coefficients("polydiv", u, v)
    u, v = u + 0.0, v + 0.0
    dt = _np.result_type(A.dtype_of(u), A.dtype_of(v))
    m, n = _shape(u)[0] - 1, _shape(v)[0] - 1
    scale = 1.0 / v[0]
    r = astype(u, dt)
    q = []
    for k in range(m - n + 1):
        d = scale * r[k]
        q.append(d)
        r = concatenate([r[:k], r[k:k + n + 1] - d * v, r[k + n + 1:]])
    q = astype(stack(q), dt) if q else _np.zeros((1,), dt)
    while _shape(r)[0] > 1 and _np.allclose(
            _value_of(r[0], "read by numpy.polydiv (leading remainder coefficients near "
                            "zero are dropped)"), 0, rtol=1e-14):
        r = r[1:]
    return q, r


@_numpy_unless_traced(_np.polyder)
def polyder(p, m=1):
    """NumPy's ``polyder``, the m-th derivative's coefficients: linear in p, so
    differentiable to every order.

    Example:
        >>> import wengert.numpy as wnp
        >>> wnp.polyder(wnp.array([1.0, 1.0, 1.0, 1.0]), 2).tolist()      # of x³ + x² + x + 1
        [6.0, 2.0]
    """
    m = int(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive (see polyint)")
    (p,) = _coefficients("polyder", p, at_least_1d=False)
    if m == 0:
        return p
    for _ in range(m):
        n = len(p) - 1
        p = p[:-1] * _np.arange(n, 0, -1)
    return p


@_numpy_unless_traced(_np.polyint, any_argument=True)
def polyint(p, m=1, k=None):
    """NumPy's ``polyint``, the m-th antiderivative's coefficients, with integration
    constants `k` (a number for all, or one per integration): differentiable in p and k.

    Example:
        >>> import wengert.numpy as wnp
        >>> wnp.polyint(wnp.array([3.0, 2.0, 1.0]), k=5.0).tolist()       # x³ + x² + x + 5
        [1.0, 1.0, 1.0, 5.0]
    """
    m = int(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    k = atleast_1d(_np.zeros(m, float) if k is None else asarray(k))
    if _shape(k)[0] == 1 and m > 1:
        k = k[0] * _np.ones(m, float)
    if _shape(k)[0] < m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
    (p,) = _coefficients("polyint", p, at_least_1d=False)
    for i in range(m):
        p = concatenate([p / _np.arange(len(p), 0, -1), k[i:i + 1]])
    return p


@_numpy_unless_traced(_np.polyfit, any_argument=True)
def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """NumPy's ``polyfit``: the least-squares coefficients, computed as NumPy does (the
    weighted Vandermonde matrix, its columns scaled to unit length, `linalg.lstsq`), so
    differentiable in x, y and w where the rank does not change; ``full`` (residuals,
    rank, singular values, rcond) and ``cov`` (True or 'unscaled') too.  The rank is read
    from the values (NumPy's RankWarning when it falls short), so it needs an eager call.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> x = wnp.array([0.0, 1.0, 2.0, 3.0])
        >>> wnp.polyfit(x, 2 * x + 1, 1).round(12).tolist()
        [2.0, 1.0]
        >>> wg.jacrev(lambda y: wnp.polyfit(x, y, 1))(2 * x + 1).round(3).tolist()
        [[-0.3, -0.1, 0.1, 0.3], [0.7, 0.4, 0.1, -0.2]]
    """
    if _traced(rcond):
        raise NotImplementedError("numpy.polyfit with a traced rcond is not supported: it "
                                  "is a threshold, without derivative")
    order = int(deg) + 1
    x, y = asarray(x) + 0.0, asarray(y) + 0.0
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if len(_shape(x)) != 1:
        raise TypeError("expected 1D vector for x")
    if _shape(x)[0] == 0:
        raise TypeError("expected non-empty vector for x")
    if not 1 <= len(_shape(y)) <= 2:
        raise TypeError("expected 1D or 2D array for y")
    if _shape(x)[0] != _shape(y)[0]:
        raise TypeError("expected x and y to have same length")
    if rcond is None:
        rcond = _shape(x)[0] * _np.finfo(A.dtype_of(x)).eps
    lhs, rhs = vander(x, order), y
    if w is not None:
        w = asarray(w) + 0.0
        if len(_shape(w)) != 1:
            raise TypeError("expected a 1-d array for weights")
        if _shape(w)[0] != _shape(y)[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = lhs * w[:, None]
        rhs = rhs * (w[:, None] if len(_shape(rhs)) == 2 else w)
    scale = sqrt(sum(lhs * lhs, axis=0))
    lhs = lhs / scale
    c, resids, rank, s = linalg.lstsq(lhs, rhs, rcond)
    c = transpose(transpose(c) / scale)
    if int(rank) != order and not full:
        import warnings
        warnings.warn("Polyfit may be poorly conditioned", _np.exceptions.RankWarning,
                      stacklevel=3)
    if full:
        return c, resids, rank, s, rcond
    if not cov:
        return c
    base = linalg.inv(dot(transpose(lhs), lhs)) / outer(scale, scale)
    if cov == "unscaled":
        factor = 1
    else:
        if _shape(x)[0] <= order:
            raise ValueError("the number of data points must exceed order to scale the "
                             "covariance matrix")
        factor = resids / (_shape(x)[0] - order)
    return c, (base if len(_shape(y)) == 1 else base[:, :, None]) * factor


@_numpy_unless_traced(_np.roots)
def roots(p):
    """NumPy's ``roots``: the eigenvalues of the companion matrix, differentiable through
    `linalg.eigvals` where they are distinct.  Which leading and trailing coefficients
    are zero is read from the values (as NumPy strips them), and so is whether the roots
    are all real (then real, as NumPy's; else complex), so it needs an eager call.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> wnp.roots(wnp.array([1.0, -3.0, 2.0])).tolist()
        [2.0, 1.0]
        >>> wg.grad(lambda p: wnp.roots(p)[0])(wnp.array([1.0, -3.0, 2.0])).tolist()
        [-4.0, -2.0, -1.0]
    """
    p = atleast_1d(asarray(p))
    if len(_shape(p)) != 1:
        raise ValueError("Input must be a rank-1 array.")
    value = _np.asarray(_value_of(p, "read by numpy.roots (its zero coefficients are "
                                     "stripped)"))
    nonzero_ = _np.flatnonzero(value)
    if nonzero_.size == 0:
        return _np.array([])
    trailing = _shape(p)[0] - int(nonzero_[-1]) - 1
    p = p[int(nonzero_[0]):int(nonzero_[-1]) + 1]
    if A.dtype_of(p).kind not in "fc":
        p = astype(p, float)
    n = _shape(p)[0]
    if n > 1:
        # the companion matrix: -p[1:]/p[0] above the shifted identity
        top = reshape(-p[1:] / p[0], (1, n - 1))
        z = linalg.eigvals(concatenate([top, _np.eye(n - 2, n - 1, dtype=A.dtype_of(p))]))
        if not _np.any(_np.imag(_value_of(z, "read by numpy.roots"))):
            z = real(z)                 # (NumPy's eigvals are real when all of them are)
    else:
        z = _np.array([])
    return concatenate([z, _np.zeros(trailing, A.dtype_of(z))]) if trailing else z


# ---- creation: NumPy's, also for traced arguments where only the shape matters ---------------
@_numpy_unless_traced(_np.linspace, any_argument=True)
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    """NumPy's ``linspace``, differentiable in `start` and `stop` (arrays broadcast, the
    samples run along `axis`), computed as NumPy does: start + i·step, the last sample
    `stop` itself."""
    _refuse("linspace", device=device is not None and device != "cpu")
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    if dtype is not None and _np.dtype(dtype).kind not in "fc":
        raise NotImplementedError(f"numpy.linspace(..., dtype={_np.dtype(dtype)}) is not "
                                  "supported on traced values: only floating dtypes")
    dt = A.float_dtype(start, stop)             # (a Python float is weak: float32 stays)
    start, stop = astype(start, dt), astype(stop, dt)
    delta = stop - start
    div = num - 1 if endpoint else num
    i = _np.arange(num, dtype=dt).reshape((-1,) + (1,) * len(_shape(delta)))
    if div > 0:
        step = delta / div
        y = i * step + start
        if endpoint and num > 1:                # the last sample is stop itself
            last = broadcast_to(stop, _shape(y)[1:])
            y = concatenate([y[:-1], expand_dims(last, 0)], 0)
    else:
        step = nan                              # (no step between fewer than two samples)
        y = i * delta + start
    if axis != 0:
        y = moveaxis(y, 0, axis)
    if dtype is not None:
        y = astype(y, dtype)
    return (y, step) if retstep else y


@_numpy_unless_traced(_np.logspace, any_argument=True)
def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """NumPy's ``logspace``: ``base ** linspace(start, stop, ...)``, differentiable in
    `start`, `stop` and `base` (arrays broadcast, as NumPy's).

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> wnp.logspace(0.0, 2.0, 3).tolist()
        [1.0, 10.0, 100.0]
        >>> g = wg.grad(lambda s: wnp.sum(wnp.logspace(0.0, s, 3, base=2.0)))(2.0)
        >>> bool(abs(g - (0.5 * 2 ** 1 + 4) * wnp.log(2)) < 1e-12)   # d/ds of 1 + 2^(s/2) + 2^s
        True
    """
    if not isinstance(base, (float, int)) and len(_shape(base)):
        # an array of bases broadcasts with start and stop, along the samples' axis
        nd = len(_np.broadcast_shapes(_shape(start), _shape(stop), _shape(base)))
        start, stop, base = (array(x, ndmin=nd) for x in (start, stop, base))
        base = expand_dims(base, axis)
    out = power(base, linspace(start, stop, num=num, endpoint=endpoint, axis=axis))
    return out if dtype is None else astype(out, dtype)


@_numpy_unless_traced(_np.geomspace, any_argument=True)
def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """NumPy's ``geomspace``, computed as NumPy does (`logspace` of the logarithms of
    start and stop turned positive, the end points start and stop themselves),
    differentiable in `start` and `stop`.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> wnp.geomspace(-1.0, -8.0, 4).tolist()
        [-1.0, -2.0, -4.0, -8.0]
        >>> wg.jacrev(lambda s: wnp.geomspace(1.0, s, 3))(4.0).round(12).tolist()
        [0.0, 0.25, 1.0]
    """
    start, stop = asarray(start), asarray(stop)
    if _holds(equal(start, 0), equal(stop, 0)):
        raise ValueError("Geometric sequence cannot include zero")
    dt = _np.result_type(A.dtype_of(start), A.dtype_of(stop), float(num),
                         _np.zeros((), dtype))
    dtype = dt if dtype is None else _np.dtype(dtype)
    start, stop = astype(start, dt), astype(stop, dt)
    # (turned positive real, and back at the end: negative and complex ends too)
    out_sign = sign(start)
    start, stop = start / out_sign, stop / out_sign
    out = logspace(log10(start), log10(stop), num=num, endpoint=endpoint, dtype=dt)
    if num > 0:         # the ends are start and stop, not 10**log10 of them
        rest = _shape(out)[1:]
        ends = [expand_dims(broadcast_to(start, rest), 0), out[1:]]
        if num > 1 and endpoint:
            ends[1:] = [out[1:-1], expand_dims(broadcast_to(stop, rest), 0)]
        out = concatenate(ends, 0)
    out = out * out_sign
    if axis != 0:
        out = moveaxis(out, 0, axis)
    return astype(out, dtype)


zeros_like = _about_shape(_np.zeros_like)
ones_like = _about_shape(_np.ones_like)
empty_like = _about_shape(_np.empty_like)


@_numpy_unless_traced(_np.full, any_argument=True, array_likes="none")
def full(shape, fill_value, dtype=None, order="C", **kwargs):
    """NumPy's ``full``: a traced fill value (a number, or an array that broadcasts to
    `shape`) is repeated, and its derivative is the sum of the result's."""
    _refuse("full", **{k: True for k, v in kwargs.items() if v is not None})
    fill = asarray(fill_value)
    shape = (int(shape),) if _np.ndim(shape) == 0 else tuple(int(d) for d in shape)
    return broadcast_to(astype(fill, A.dtype_of(fill) if dtype is None else dtype), shape)


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **kwargs):
    """NumPy's ``full_like``: `a` gives only a shape and a dtype; a traced fill value is
    repeated, as by `full`."""
    like = _stand_in(a)
    if not _traced(fill_value):
        return _np.full_like(like, fill_value, dtype, order, subok, shape, **kwargs)
    return full(like.shape if shape is None else shape, fill_value,
                like.dtype if dtype is None else dtype, **kwargs)


@_numpy_unless_traced(_np.select, any_argument=True, array_likes="none")
def select(condlist, choicelist, default=0):
    """NumPy's ``select``: from the first choice whose condition holds, else `default`,
    elementwise; the derivative flows through the choice selected (`where` nested)."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if not len(condlist):
        raise ValueError("select with an empty condition list is not possible")
    for i, c in enumerate(condlist):
        if A.dtype_of(asarray(c)) != _np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    result = default
    for c, v in zip(reversed(condlist), reversed(choicelist)):
        result = where(c, v, result)
    # NumPy's dtype, of all the choices and the default at once: the nested where would
    # promote two Python numbers (weak, beside a float32 choice) to float64 on their own
    dtype = _np.result_type(*[v if type(v) in (bool, int, float, complex) else
                              A.dtype_of(v if type(v) is Node else _np.asarray(v))
                              for v in (*choicelist, default)])
    return result if A.dtype_of(asarray(result)) == dtype else astype(result, dtype)


@_numpy_unless_traced(_np.piecewise, any_argument=True, array_likes="none")
def piecewise(x, condlist, funclist, *args, **kw):
    """NumPy's ``piecewise``, differentiable: each function called, as NumPy calls it, on
    the elements of x where its condition holds (so it need not be defined elsewhere),
    a constant placed as it is; a later condition wins, an extra last function is the
    otherwise, and 0 is left where none holds.  The pieces are joined and gathered back
    into x's shape, so each element's derivative is its own piece's.  The conditions are
    read by value (as a boolean mask in indexing is).

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> x = numpy.array([-2.0, -0.5, 1.0, 4.0])
        >>> huber = lambda x: np.piecewise(x, [abs(x) <= 1], [lambda t: t * t / 2,
        ...                                                    lambda t: abs(t) - 0.5])
        >>> huber(x).tolist()
        [1.5, 0.125, 0.5, 3.5]
        >>> wg.grad(lambda x: np.sum(huber(x)))(x).tolist()
        [-1.0, -0.5, 1.0, 1.0]
    """
    x = asarray(x)
    shape_x = tuple(_shape(x))
    n2 = len(funclist)
    # NumPy's reading: one condition, or a list of them
    if _np.isscalar(condlist) or type(condlist) is Node or (
            not isinstance(condlist[0], (list, _np.ndarray, Node)) and len(shape_x) != 0):
        condlist = [condlist]
    conds = [_np.broadcast_to(_np.asarray(_value_of(c, "used as a condition by "
                                                    "numpy.piecewise"), dtype=bool), shape_x)
             for c in condlist]
    n = len(conds)
    if n == n2 - 1:
        conds.append(~_np.any(conds, axis=0) if conds else _np.ones(shape_x, bool))
    elif n != n2:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are "
                         "expected")
    dtype = A.dtype_of(x)
    parts = [_np.zeros(1, dtype)]               # (place 0: where no condition holds)
    source = _np.zeros(shape_x, _np.intp)
    start = 1
    for cond, func in zip(conds, funclist):
        count = int(cond.sum())
        if not callable(func):
            parts.append(reshape(astype(asarray(func), dtype), (1,)))
            source[cond] = start
            start += 1
        elif count:
            values = broadcast_to(asarray(func(x[cond], *args, **kw)), (count,))
            parts.append(astype(values, dtype))
            source[cond] = start + _np.arange(count)
            start += count
    return concatenate(parts)[source]


class vectorize:
    """NumPy's ``vectorize``: `pyfunc` of numbers applied to each element of its
    (broadcast) arguments, differentiable on traced values.  As one `wg.vmap` (one trace
    of pyfunc, run on all elements at once) where pyfunc has no Python branch on its
    values; otherwise, as NumPy does it, one call per element (each a few nodes of the
    graph).  Arguments named in `excluded` are passed as they are; the output dtypes are
    NumPy's (`otypes`, else those of the first element's results); `cache` is NumPy's
    (plain values only); a `signature` is refused on traced values.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> soft = np.vectorize(lambda t: t * t / 2 if abs(t) < 1 else abs(t) - 0.5)
        >>> x = numpy.array([-2.0, 0.5, 3.0])
        >>> soft(x).tolist()
        [1.5, 0.125, 2.5]
        >>> wg.grad(lambda x: np.sum(soft(x)))(x)              # a branch: one call each
        array([-1. ,  0.5,  1. ])
        >>> wg.grad(lambda x: np.sum(np.vectorize(lambda t: t ** 3)(x)))(x)  # one vmap
        array([12.  ,  0.75, 27.  ])
    """

    def __init__(self, pyfunc, otypes=None, doc=None, excluded=None, cache=False,
                 signature=None):
        self._numpy = _np.vectorize(pyfunc, otypes, doc, excluded, cache, signature)
        self.pyfunc = pyfunc
        self.excluded = set(excluded or ())
        self.signature = signature
        self.__doc__ = pyfunc.__doc__ if doc is None else doc

    def __call__(self, *args, **kwargs):
        if not _traced(*args, *kwargs.values()):
            return self._numpy(*args, **kwargs)
        if self.signature is not None:
            raise NotImplementedError("numpy.vectorize(..., signature=...) is not supported "
                                      "on traced values: use wg.vmap over the core "
                                      "dimensions' loop")
        positions = [i for i in range(len(args)) if i not in self.excluded]
        names = [k for k in kwargs if k not in self.excluded]
        arrays = [asarray(args[i]) for i in positions] + [asarray(kwargs[k]) for k in names]
        shape = _np.broadcast_shapes(*[tuple(_shape(a)) for a in arrays])
        n = _math.prod(shape)
        if n == 0:
            raise ValueError("cannot call `vectorize` on size 0 inputs unless `otypes` is "
                             "set")
        flat = [ravel(broadcast_to(a, shape)) for a in arrays]

        def one(*elements):
            call_args, call_kwargs = list(args), dict(kwargs)
            for i, e in zip(positions, elements):
                call_args[i] = e
            for k, e in zip(names, elements[len(positions):]):
                call_kwargs[k] = e
            return self.pyfunc(*call_args, **call_kwargs)

        from ..errors import ConcretizationError
        from ..vectorize import vmap
        first = None
        try:
            out = vmap(one)(*flat)
        except ConcretizationError:     # (a branch on a value: NumPy's loop, element-wise)
            results = [one(*[f[i] for f in flat]) for i in builtins.range(n)]
            first = results[0]
            out = tuple(stack(r) for r in zip(*results)) if type(first) is tuple \
                else stack(results)
        outs = out if type(out) is tuple else (out,)
        # NumPy's output dtypes: otypes, else those of the first element's results (an int
        # there makes the output int, as it does for plain values)
        otypes = self._numpy.otypes
        if otypes is not None:
            dtypes = [_np.dtype(t) for t in otypes]
        elif first is not None:
            dtypes = [A.dtype_of(r if type(r) is Node else _np.asarray(r))
                      for r in (first if type(first) is tuple else (first,))]
        else:
            dtypes = [A.dtype_of(o) for o in outs]
        outs = tuple(reshape(o if A.dtype_of(o) == dt else astype(o, dt), shape)
                     for o, dt in zip(outs, dtypes))
        return outs if type(out) is tuple else outs[0]


shape = _about_shape(_np.shape)
ndim = _about_shape(_np.ndim)
size = _about_shape(_np.size)


def _array_of(obj, dtype, ndmin):
    """The traced value NumPy's ``array(obj, dtype, ndmin=ndmin)`` stands for: nested
    lists are stacked (differentiably)."""
    out = obj if type(obj) is Node else stack([_array_of(x, None, 0) for x in obj]) \
        if type(obj) in (list, tuple) else _np.asarray(obj)
    if dtype is not None:
        out = astype(out, dtype)
    if ndmin > len(_shape(out)):
        out = reshape(out, (1,) * (ndmin - len(_shape(out))) + tuple(_shape(out)))
    return out


@_numpy_unless_traced(_np.array, any_argument=True, array_likes="none")
def array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, ndmax=0,
          like=None):
    """NumPy's ``array``; nested lists holding traced values are stacked (differentiably).
    (A traced value has no memory layout: ``copy`` and ``order`` change nothing.)"""
    _refuse("array", ndmax=ndmax != 0, like=like is not None)
    return _array_of(object, dtype, ndmin)


@_numpy_unless_traced(_np.asarray, any_argument=True, array_likes="none")
def asarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    """NumPy's ``asarray``; nested lists holding traced values are stacked (differentiably)."""
    _refuse("asarray", like=like is not None)
    return _array_of(a, dtype, 0)


# what they say of a traced value is said of its shape and dtype alone
for _name in ("result_type", "can_cast", "common_type", "min_scalar_type", "iscomplexobj",
              "isrealobj", "isfortran", "diag_indices_from", "tril_indices_from",
              "triu_indices_from", "iterable", "einsum_path"):
    globals()[_name] = _about_shape(getattr(_np, _name))


def isscalar(element):
    """NumPy's ``isscalar``; a traced value of shape () is a scalar (it stands for a number,
    as in JAX), other traced values are not.

    Example:
        >>> import wengert as wg, wengert.numpy as np
        >>> wg.grad(lambda x: x * 2 if np.isscalar(x) else np.sum(x))(3.0)
        2.0
    """
    if type(element) is Node:
        return element.shape == ()
    return _np.isscalar(element)


def _as_array_of_layout(fname, npfn):
    """asanyarray, ascontiguousarray, asfortranarray and require: a traced value has no
    memory layout (nor subclass) to arrange, so each is `asarray` with its dtype."""
    @_numpy_unless_traced(npfn, any_argument=True, array_likes="none")
    def fn(a, dtype=None, *args, like=None, **kwargs):
        _refuse(fname, like=like is not None)
        return _array_of(a, dtype, 0)
    fn.__name__ = fn.__qualname__ = fname
    fn.__doc__ = (f"NumPy's ``{fname}``: on traced values `asarray` (a traced value has no "
                  "memory layout to arrange), with its dtype.")
    return fn


asanyarray = _as_array_of_layout("asanyarray", _np.asanyarray)
ascontiguousarray = _as_array_of_layout("ascontiguousarray", _np.ascontiguousarray)
asfortranarray = _as_array_of_layout("asfortranarray", _np.asfortranarray)
require = _as_array_of_layout("require", _np.require)


@_numpy_unless_traced(_np.asarray_chkfinite, any_argument=True, array_likes="none")
def asarray_chkfinite(a, dtype=None, order=None):
    """NumPy's ``asarray_chkfinite``: `asarray`, with NumPy's ValueError where a value is
    inf or nan (checked where the values are known: eagerly, not under ``wg.compile``).

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> wg.grad(lambda x: np.sum(np.asarray_chkfinite(x) ** 2))(numpy.array([1.0, 2.0]))
        array([2., 4.])
    """
    out = _array_of(a, dtype, 0)
    known = out.value if type(out) is Node else out
    if known is not None and A.dtype_of(out).kind in "fc" and not _np.isfinite(known).all():
        raise ValueError("array must not contain infs or NaNs")
    return out


from . import linalg, fft, lib  # noqa: E402
from .updates import at  # noqa: E402  (JAX's x.at[i].set(v), for NumPy's arrays too)

# NumPy's submodules that have differentiable functions here, by the last part of their name
# (which NumPy's protocol gives, as func.__module__: numpy.linalg, numpy.lib.stride_tricks)
_SUBMODULES = {"linalg": linalg, "fft": fft, "stride_tricks": lib.stride_tricks}
from .dispatch import install as _install, unsupported as _unsupported  # noqa: E402

if hasattr(_np, "vecdot"):      # NumPy 2's top-level names for two of linalg's functions
    vecdot = _Ufunc(_np.vecdot, linalg.vecdot)          # (a gufunc: axis= goes to NumPy's)
    matrix_transpose = linalg.matrix_transpose

_install()


def __getattr__(name):
    """Everything else is NumPy's: constants, dtypes, creation functions — and a function
    wengert has no rule for refuses traced values by name."""
    try:
        attr = getattr(_np, name)
    except AttributeError:
        raise AttributeError(f"module 'wengert.numpy' has no attribute {name!r}") from None
    if isinstance(attr, _np.ufunc):
        attr = _Ufunc(attr)     # NumPy's; on traced values its protocol refuses by name
    elif callable(attr) and not isinstance(attr, type):
        attr = _unsupported(f"numpy.{name}", attr)
    globals()[name] = attr
    return attr
