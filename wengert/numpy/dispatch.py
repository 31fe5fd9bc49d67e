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
    """`fn` (a NumPy function) for plain values; a clear error for traced ones (and for
    `wg.Dual`s, which go through what tracing takes)."""
    from . import _traced
    from ..dual import has_duals

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _traced(*args, *kwargs.values()) or has_duals(args, kwargs):
            raise NotImplementedError(
                f"{qualname} is not supported on traced values: wengert has no derivative "
                "rule for it. Write it with supported functions (see docs/numpy.md), or "
                "declare it as a primitive with wg.primitive and its derivative.")
        return fn(*args, **kwargs)
    wrapper.wengert_unsupported = True
    return wrapper


def rest_of(npmodule, namespace):
    """A submodule's ``__getattr__`` for what it does not define (`wengert.numpy.linalg`
    and `.fft`): the attribute of `npmodule` (numpy.linalg, numpy.fft), a function made
    `unsupported` on traced values, remembered in `namespace` (the module's globals)."""
    def __getattr__(name):
        attr = getattr(npmodule, name)
        if callable(attr) and not isinstance(attr, type):
            attr = unsupported(f"{npmodule.__name__}.{name}", attr)
        namespace[name] = attr
        return attr
    return __getattr__


# ---- indexing ---------------------------------------------------------------------------------
def _getitem(x, index):
    if not isinstance(index, tuple):
        index = (index,)
    if any(type(i) is Node for i in index):
        # a traced index (integers, masks) has no derivative: its value is what matters;
        # integers traced without one (a loop's counter, under vmap or compile) gather
        if any(type(i) is Node and i.value is None and i.dtype.kind in "iu" for i in index):
            import wengert.numpy as wnp
            return wnp._getitem_gathered(x, index)
        index = tuple(i._concrete("used as an index") if type(i) is Node else i
                      for i in index)
    return A.getitem(x, index=A.encode_index(index if len(index) != 1 else index[0]))


def _setitem(x, index, value):
    raise TypeError(
        f"traced value {x.label()} cannot be assigned to in place (x[...] = v): the trace "
        "has recorded it already, and other names may refer to it. Make a new array instead: "
        "x = x.at[index].set(v) (JAX's; also .add, .multiply, .min, .max, ...), or "
        "wengert.numpy.where(mask, v, x)")


def _iter(x):
    if not x.shape:
        raise TypeError(f"iteration over a scalar traced value {x.label()}")
    for i in range(x.shape[0]):
        yield x[i]


# ---- NumPy's protocols --------------------------------------------------------------------------
def _ufuncs():
    """NumPy's ufunc -> the function recording it on traced values, from wengert.numpy's."""
    import wengert.numpy as wnp
    table = {u.numpy: u.record for u in vars(wnp).values()
             if isinstance(u, wnp._Ufunc) and u.traced is not None}
    table[_np.matmul] = wnp.matmul
    # (plain_array.clip(lo, hi) with a traced bound calls NumPy's internal clip ufunc)
    clip = getattr(getattr(getattr(_np, "_core", None), "umath", None), "clip", None)
    if isinstance(clip, _np.ufunc):
        table[clip] = wnp.clip
    return table


# numpy.<ufunc>.at(a, i, b) as a functional update (wengert.numpy.updates)
_AT_METHODS = {"add": "add", "subtract": "subtract", "multiply": "multiply",
               "divide": "divide", "power": "power", "minimum": "min", "maximum": "max"}


# the augmented assignments that call a ufunc with out= their left side
_INPLACE = {"add": "+=", "subtract": "-=", "multiply": "*=", "divide": "/=",
            "true_divide": "/=", "floor_divide": "//=", "power": "**=", "remainder": "%=",
            "matmul": "@=", "bitwise_and": "&=", "bitwise_or": "|=", "bitwise_xor": "^=",
            "left_shift": "<<=", "right_shift": ">>="}


def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    if method == "__call__" and not kwargs:         # `array @ x`, numpy.sin(x): the usual
        fn = _UFUNCS.get(ufunc)
        if fn is not None:
            return fn(*inputs)
        import wengert.numpy as wnp
        found = wnp.exact_ufunc(ufunc, wnp._arrays(inputs), True)     # (gcd, left_shift)
        if found is not None:
            return found
        ours = _scipy_special(ufunc)
        if ours is not None:                        # scipy.special.gammaln(x), unmodified
            return ours(*inputs)
    public = _scipy_internal_name(ufunc)
    module = "scipy.special" if public or _is_scipy_special(ufunc) else "numpy"
    name = public or ufunc.__name__
    name = name if method == "__call__" else f"{name}.{method}"
    if method == "at":
        update = _AT_METHODS.get(ufunc.__name__)
        instead = (f"a = wengert.numpy.at(a)[i].{update}(b) (JAX's a.at[i].{update}(b)), "
                   f"which applies every repeated index as numpy.{name} does"
                   if update else f"np.where(mask, np.{ufunc.__name__}(...), a) with a mask "
                   "of the places")
        raise NotImplementedError(
            f"numpy.{name} changes its first argument in place, which a traced value cannot "
            f"be: compute a new array instead, {instead}")
    out = kwargs.get("out")
    if out is not None:
        hint = ""
        op = _INPLACE.get(ufunc.__name__)
        if op and type(out) is tuple and len(out) == 1 and inputs and out[0] is inputs[0]:
            # what `a += x` calls for a NumPy array a (say a = np.zeros(n), a JAX habit,
            # where arrays cannot be written and += makes a new one)
            hint = (f"; `a {op} x` on a NumPy array `a` writes into it so: write "
                    f"`a = a {op[:-1]} x`, which makes a new array")
        raise NotImplementedError(f"numpy.{name}(..., out=...) cannot write a traced value "
                                  "into an array" + hint)
    fn = _UFUNCS.get(ufunc)
    if fn is not None and method != "__call__":
        from .ufunc_methods import call
        return call(ufunc, fn, method, inputs, kwargs)
    if fn is not None and ufunc.signature is not None:
        from .ufunc_methods import GUFUNC_KEYWORDS, gufunc_call
        if kwargs.keys() <= GUFUNC_KEYWORDS:        # numpy.vecdot(a, b, axis=0)
            return gufunc_call(ufunc, fn, inputs, kwargs)
    raise NotImplementedError(f"{module}.{name} is not supported on traced values: wengert "
                              "has no derivative rule for it"
                              + (f" with the arguments {sorted(kwargs)}" if kwargs else ""))


def _is_scipy_special(ufunc) -> bool:
    """Whether `ufunc` is one of scipy.special's (imported by the caller already)."""
    import sys
    special = sys.modules.get("scipy.special")
    return special is not None and getattr(special, ufunc.__name__, None) is ufunc


def _scipy_internal_name(ufunc):
    """The name to report for one of SciPy's internal ufuncs (scipy.special.zeta is a
    Python function calling ``_zeta``): its public function's name where scipy.special
    has one, else its own (``_beta_pdf``, behind scipy.stats); None for any other."""
    import sys
    internal = sys.modules.get("scipy.special._ufuncs")
    if internal is None or not ufunc.__name__.startswith("_") \
            or getattr(internal, ufunc.__name__, None) is not ufunc:
        return None
    public = _SCIPY_CALLERS.get(ufunc.__name__, ufunc.__name__.lstrip("_"))
    return public if callable(getattr(sys.modules["scipy.special"], public, None)) \
        else ufunc.__name__


# SciPy's internal ufuncs whose public caller has another name (zeta(x) calls _riemann_zeta)
_SCIPY_CALLERS = {"_riemann_zeta": "zeta"}


def _scipy_special(ufunc):
    """wengert.scipy.special's function of the same name for a scipy.special ufunc, which
    has derivative rules (None if there is none): so that code calling SciPy's own
    gammaln or erf on traced values differentiates."""
    if not _is_scipy_special(ufunc):
        return None
    from wengert.scipy import special as ours
    fn = ours.__dict__.get(ufunc.__name__)
    return fn if callable(fn) else None


def array_function(self, func, types, args, kwargs):
    import wengert.numpy as wnp
    module = func.__module__ or "numpy"
    # (numpy's own namespace, or one of the submodules wengert mirrors; another module's
    # function of the same name, numpy.emath.log say, is not numpy.log)
    namespace = wnp if module == "numpy" else wnp._SUBMODULES.get(module.rpartition(".")[2])
    ours = namespace.__dict__.get(func.__name__) if namespace is not None else None
    if ours is None or getattr(ours, "wengert_unsupported", False) or not callable(ours):
        raise NotImplementedError(
            f"{module}.{func.__name__} is not supported on traced values: wengert has no "
            "derivative rule for it")
    return getattr(ours, "traced", ours)(*args, **kwargs)


def _array(self, dtype=None, copy=None):
    # An object array may hold traced values (ADDS keeps its arrays of scalar nodes that
    # way); anything else would be the numbers without their derivative.
    if dtype is not None and _np.dtype(dtype) == object:
        out = _np.empty((), dtype=object)
        out[()] = self
        return out
    if self.dtype.kind in "iub":
        # An integer or bool array has no derivative to lose: an index or a mask that
        # NumPy reads (``plain[np.floor(x).astype(int)]``) is its value, as in indexing.
        return _np.asarray(self._concrete("read as a NumPy array"), dtype=dtype)
    return _refuse_array(self)


def _refuse_array(self):
    import sys
    if "scipy.sparse" in sys.modules:
        # scipy.sparse's `A @ x` reads x with numpy.asanyarray: its caller decides
        # whether this is that product (then the object array SciPy hands on to x) or
        # another sparse operation, refused by name (wengert.scipy.sparse)
        from ..scipy.sparse import conversion
        found = conversion(self, sys._getframe(2))
        if found is not None:
            return found
    raise self._to_array_error()


_UFUNCS = {}


def _refuse_method(name, advice=""):
    def method(x, *args, **kwargs):
        raise NotImplementedError(f"numpy.ndarray.{name} is not supported on traced values"
                                  + (advice or ": wengert has no derivative rule for it"))
    method.__name__ = name
    return method


def _item(x, *args):
    raise x._cut_off("x.item()")


def _tolist(x):
    raise x._cut_off("x.tolist()")


def _astype(x, dtype, order="K", casting="unsafe", subok=True, copy=True):
    # (order, subok and copy are about memory, which a traced value does not have)
    import wengert.numpy as wnp
    return wnp._cast(x, dtype, casting, "ndarray.astype")


def _numpy_ufunc(name):
    # NumPy's own, so that its protocol sends a traced value to array_ufunc (which refuses
    # the ufuncs wengert has no rule for, by name)
    ufunc = getattr(_np, name)
    return lambda a, b: ufunc(a, b)


def install():
    """Attach the array methods, operators and protocols to Node.  The methods are the
    functions of wengert.numpy, which take NumPy's arguments in NumPy's order; an ndarray
    method wengert has no rule for raises NotImplementedError naming it."""
    import wengert.numpy as wnp
    from .updates import at
    _UFUNCS.update(_ufuncs())
    methods = {
        "__getitem__": _getitem,
        "__iter__": _iter,
        "__matmul__": wnp.matmul,
        "__rmatmul__": lambda a, b: wnp.matmul(b, a),
        "__array_ufunc__": array_ufunc,
        "__array_function__": array_function,
        "__array__": _array,
        # on bools: values without derivative, like comparisons (integers: not supported)
        "__invert__": lambda a: wnp.invert(a),
        "__and__": lambda a, b: wnp.bitwise_and(a, b),
        "__rand__": lambda a, b: wnp.bitwise_and(b, a),
        "__or__": lambda a, b: wnp.bitwise_or(a, b),
        "__ror__": lambda a, b: wnp.bitwise_or(b, a),
        "__xor__": lambda a, b: wnp.bitwise_xor(a, b),
        "__rxor__": lambda a, b: wnp.bitwise_xor(b, a),
        "__round__": lambda x, ndigits=None: wnp.round(x, ndigits or 0),
        "reshape": lambda x, *shape, order="C", copy=None: wnp.reshape(
            x, shape[0] if len(shape) == 1 else shape, order),
        "transpose": lambda x, *axes: wnp.transpose(
            x, (axes[0] if len(axes) == 1 else axes) or None),
        "flatten": wnp.ravel,
        "copy": lambda x, order="C": x,
        "astype": _astype,
        "item": _item,
        "tolist": _tolist,
        "conj": lambda x: wnp.conj(x),
        "conjugate": lambda x: wnp.conj(x),
        "sort": _refuse_method("sort", ": it sorts in place, which a traced value cannot "
                               "be; write x = wengert.numpy.sort(x)"),
        "T": property(lambda x: wnp.transpose(x)),
        "mT": property(lambda x: wnp.swapaxes(x, -1, -2)),
        "real": property(lambda x: wnp.real(x)),
        "imag": property(lambda x: wnp.imag(x)),
        "itemsize": property(lambda x: x.dtype.itemsize),
        "at": property(lambda x: at(x)),
        "__setitem__": _setitem,
        "nbytes": property(lambda x: x.size * x.dtype.itemsize),
    }
    # the methods that are wengert.numpy's functions of the same name and arguments
    for name in ("sum mean prod max min var std cumsum cumprod argmax argmin all any clip "
                 "round repeat diagonal trace argsort argpartition nonzero dot swapaxes "
                 "squeeze ravel take searchsorted choose").split():
        methods[name] = getattr(wnp, name)
    methods["compress"] = lambda x, condition, axis=None, out=None: wnp.compress(
        condition, x, axis, out)                # (the method takes its arguments swapped)
    for name, instead in (("partition", "x = wengert.numpy.partition(x, kth)"),
                          ("put", "x = wengert.numpy.put(x, ind, v, inplace=False)"),
                          ("fill", "x = wengert.numpy.full_like(x, value)"),
                          ("resize", "x = wengert.numpy.resize(x, shape)")):
        methods[name] = _refuse_method(name, ": it changes the array in place, which a "
                                       f"traced value cannot be; write {instead}")
    # Python operators wengert has no rule for: NumPy's ufuncs, which refuse by name
    for op, ufunc in (("floordiv", "floor_divide"), ("mod", "remainder"),
                      ("divmod", "divmod"), ("lshift", "left_shift"),
                      ("rshift", "right_shift")):
        methods[f"__{op}__"] = _numpy_ufunc(ufunc)
        methods[f"__r{op}__"] = (lambda f: lambda a, b: f(b, a))(_numpy_ufunc(ufunc))
    for name, fn in methods.items():
        setattr(Node, name, fn)
    # every other method of an ndarray: a clear error rather than an AttributeError
    for name in dir(_np.ndarray):
        if not name.startswith("_") and not hasattr(Node, name) and \
                callable(getattr(_np.ndarray, name)):
            setattr(Node, name, _refuse_method(name))
