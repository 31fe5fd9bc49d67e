"""Dual numbers x + x'ε with ε² = 0: the lightest forward mode (seed 000).

A `Dual` carries a value (the *primal*) and its derivative along one direction (the
*tangent*).  Ordinary Python code computes with it as with a float: no graph, no tracing,
nothing stored but the two parts.  A plain number c taking part in an operation counts as
⟨c, 0⟩ (lifting).  Evaluating f at ⟨x, 1⟩ gives ⟨f(x), f'(x)⟩; at ⟨x, v⟩ with x and v in
Rⁿ, the directional derivative ∇f(x)·v in one pass.

The rule table is seed 000's, and it is not written here again: every primitive already
declares its partial derivatives in the registry, and a dual number is one step of
forward mode, ``g(⟨u,u'⟩, ⟨v,v'⟩) = ⟨g(u,v), g_u(u,v)·u' + g_v(u,v)·v'⟩`` — exactly
`wengert.ad.forward.tangent`.  So ⟨u,u'⟩·⟨v,v'⟩ = ⟨uv, u'v + uv'⟩ because mul's partials are
(v, u), and a new primitive works on duals the moment it declares its partials.

Duals go through the operators (+ - * / ** and comparisons), the functions of
`wengert.math`, NumPy's ufuncs (``np.sin(d)``), the ufuncs of `scipy.special` that
`wengert.scipy.special` differentiates (``erf``, ``gammaln``, ``expit``, ...), NumPy's
and wengert.scipy's whole-array functions (``np.dot(d, W)``, by one `wg.jvp`: see
`through`), and NumPy object arrays of duals (``np.sin(array_of_duals)``).  Their parts
may be NumPy arrays (a direction for a whole array at once).  A comparison returns a
plain bool, so ``if d > 0:`` works.

Example:
    >>> import wengert as wg, wengert.math as wm
    >>> f = lambda x1, x2: x1 * x2 + wm.sin(x1)
    >>> f(wg.Dual(2.0, 1.0), 3.0)          # ⟨f, ∂f/∂x1⟩ at (2, 3): x2 + cos x1
    Dual(6.909297426825682, 2.5838531634528574)
"""
from __future__ import annotations

import functools

import numpy as np

from .ad.forward import tangent as _tangent
from .graph.node import Node
from .primitives import scalar as _scalar
from .primitives.array import dtype_of
from .primitives.registry import NO_PARAMS, OVERLOADS, REGISTRY, broadcasts_to, shape_of

__all__ = ["Dual"]


class Dual:
    """A dual number ⟨primal, tangent⟩ = primal + tangent·ε, ε² = 0: forward mode by
    operator overloading, the lightest way to one directional derivative.

    Args:
        primal: the value: a float, a NumPy array, a traced value or another Dual.
        tangent: its derivative along the chosen direction (default 0: a constant), of
            the primal's shape or one that broadcasts to it.  A list is read as an array.

    Raises:
        TypeError: a part that is not a real number, an array of them, a traced value
            or a Dual (complex values: use `wg.jvp`).
        ValueError: a tangent whose shape does not broadcast to the primal's.

    Example:
        >>> import wengert as wg, wengert.math as wm
        >>> y = wm.exp(wg.Dual(0.0, 1.0)) * 3 + 1
        >>> y.primal, y.tangent
        (4.0, 3.0)
        >>> d = wg.Dual(2.0, 1.0)
        >>> d / (1 + d ** 2)                    # ⟨u/v, (u'v − uv')/v²⟩
        Dual(0.4, -0.12)

    Array-valued parts give the derivative of an elementwise function at every point:

        >>> import numpy as np
        >>> wm.sin(wg.Dual(np.array([0.0, np.pi]), 1.0)).tangent
        array([ 1., -1.])

    A Dual whose parts are Duals carries a second perturbation: f'' is the tangent's
    tangent.  (Keep the two directions apart yourself: Duals carry no tags.)

        >>> x = wg.Dual(wg.Dual(3.0, 1.0), wg.Dual(1.0, 0.0))
        >>> (x ** 3).tangent.tangent           # d²/dx² x³ at 3
        18.0
    """

    __slots__ = ("primal", "tangent")

    def __init__(self, primal, tangent=0.0):
        if type(primal) is not float or type(tangent) is not float:
            primal, tangent = _checked(primal, tangent)
        self.primal = primal
        self.tangent = tangent

    @property
    def shape(self) -> tuple:
        """The primal's shape (NumPy's ``np.shape`` reads it)."""
        return shape_of(self.primal)

    def __repr__(self):
        return f"Dual({self.primal!r}, {self.tangent!r})"

    def __bool__(self):
        return bool(self.primal)

    def __float__(self):
        # float() would silently drop the tangent, as math.sin(d) would: say so instead.
        raise TypeError("float() of a Dual would drop its tangent: use d.primal for the "
                        "value, and wengert.math's functions (not the math module's) on Duals")

    def __len__(self):
        if self.shape == ():
            raise TypeError("len() of a Dual of shape (), as of a number")
        return self.shape[0]

    @property
    def ndim(self) -> int:
        """The primal's number of axes."""
        return len(self.shape)

    @property
    def T(self) -> "Dual":
        """The transpose, as an array's ``.T``."""
        return np.transpose(self)

    def sum(self, axis=None, keepdims=False):
        """``np.sum(d, axis, keepdims=...)``, as an array's ``.sum()``.

        Example:
            >>> import numpy as np, wengert as wg
            >>> wg.Dual(np.array([1.0, 2.0]), 1.0).sum()
            Dual(3.0, 2.0)
        """
        return np.sum(self, axis=axis, keepdims=keepdims)

    def reshape(self, *shape):
        """``np.reshape(d, shape)``, as an array's ``.reshape(2, 3)`` or
        ``.reshape((2, 3))``."""
        return np.reshape(self, shape[0] if len(shape) == 1 else shape)

    def __array__(self, dtype=None, copy=None):
        # A scalar Dual is one object of an object array (np.array([d1, d2])).  An array
        # Dual would be hidden whole in a 0-d object array, where comparisons and sums
        # fail far from here (SciPy's logsumexp: 'truth value of an array'): say which
        # function took it, and what takes Duals.
        if self.shape != ():
            where = _foreign_caller()
            raise TypeError(
                f"{where + ' ' if where else ''}converts a Dual of shape {self.shape} to a "
                "NumPy array, which holds it as one object and does not differentiate it: "
                "use a function that takes Duals (NumPy's own, wengert.numpy's, "
                "wengert.scipy's: wengert.scipy.special.logsumexp for SciPy's) or wg.jvp")
        out = np.empty((), dtype=object)
        out[()] = self
        return out

    def __getitem__(self, index):
        # (the tangent broadcast to the primal's shape, as whole-array functions take it)
        return _made(self.primal[index], _tangent_like(self.tangent, self.primal)[index])

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__" and not kwargs:
            if ufunc is np.power:
                return _scalar.power(*inputs)      # integer exponents exactly, as x ** n
            prim = _ufunc_primitives().get(ufunc)
            # (a gufunc, matmul, goes as whole-array functions do: its JVP, unlike an
            # elementwise one, needs each tangent of its primal's shape, and a scalar
            # tangent, the documented default, does not broadcast through core dimensions)
            if prim is not None and ufunc.signature is None:
                return apply(prim, inputs, NO_PARAMS)
        # np.add.reduce(d), np.sin(d, where=m), a ufunc with no primitive: as traced
        return through(ufunc if method == "__call__" else getattr(ufunc, method),
                       inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        # np.sum(d), np.dot(d, W), np.linalg.solve(A, d): without this NumPy would take a
        # Dual for one object element and compute garbage (np.dot(d, W) a Dual per entry)
        return through(func, args, kwargs)


def _foreign_caller():
    """``module.function`` of the outermost call, in the first package outside wengert up
    the stack, that reached `Dual.__array__` (scipy.special's logsumexp, not the helper
    of SciPy's that converted its argument; NumPy's sum for np.sum([d1, d2])); None if
    there is none."""
    import sys
    frames, f = [], sys._getframe(2)
    while f is not None:
        frames.append(f)
        f = f.f_back
    package = lambda f: f.f_globals.get("__name__", "").split(".")[0]
    for i, f in enumerate(frames):
        top = package(f)
        if top != "wengert":
            while i + 1 < len(frames) and package(frames[i + 1]) == top:
                i += 1
            name = frames[i].f_code.co_name
            return f"{frames[i].f_globals.get('__name__', '?')}.{name}"
    return None


def _made(primal, tangent) -> Dual:
    """A Dual of parts an operation computed: the checks of `Dual` are already true."""
    d = object.__new__(Dual)
    d.primal = primal
    d.tangent = tangent
    return d


def _not_real(what) -> TypeError:
    """The error for a complex value met by a Dual (`what` says where)."""
    return TypeError(f"wg.Dual is for real numbers, and {what}; use wg.jvp, which takes "
                     "complex values (docs/complex.md)")


def _checked(primal, tangent):
    """A user's parts of a Dual, checked: real numbers, arrays of them, traced values or
    Duals (a list becomes an array), and a tangent whose shape broadcasts to the primal's.
    Caught here, a string or a misshapen tangent would otherwise fail deep inside the
    first operation, or give a result of the wrong shape."""
    parts = []
    for part, what in ((primal, "primal"), (tangent, "tangent")):
        if type(part) in (list, tuple):
            part = np.asarray(part)
        if type(part) is not Dual and not isinstance(part, Node):
            kind = np.asarray(part).dtype.kind if isinstance(
                part, (int, float, complex, np.ndarray, np.generic)) else None
            if kind == "c":
                raise _not_real(f"its {what} is complex")
            if kind is None or kind not in "biuf":
                raise TypeError(f"a Dual's {what} must be a real number, an array of them, "
                                f"a traced value or a Dual, not {type(part).__name__}"
                                + (f" of dtype {part.dtype}" if kind else ""))
        parts.append(part)
    primal, tangent = parts
    p, t = shape_of(primal), shape_of(tangent)
    if t != p and not broadcasts_to(t, p):
        raise ValueError(f"a Dual's tangent of shape {t} does not fit its primal of "
                         f"shape {p}: it must have the primal's shape, or one that "
                         "broadcasts to it (a scalar: the same derivative everywhere)")
    return primal, tangent


def through(fn, args, kwargs=None):
    """``fn(*args, **kwargs)`` where arguments are Duals, by one forward sweep
    (`wg.jvp`) of `fn` traced on their primals: how a Dual goes through whole-array
    functions (np.sum, np.dot, np.linalg.solve, scipy.special.logsumexp, ...), with
    exactly the functions and errors that tracing has.  Duals may be arguments or sit in
    lists and tuples among them; results are Duals where they are real floats, the
    rest (an argmax, a shape) as computed.  Nested Duals (Duals for parts) go through a
    level at a time: the primal part by `through` again, the tangent part by `through`
    of fn's `wg.jvp`.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.dual import through
        >>> through(np.dot, (wg.Dual(np.array([1.0, 2.0]), np.array([1.0, 0.0])),
        ...                  np.array([3.0, 4.0])))
        Dual(11.0, 3.0)
        >>> through(np.sum, (wg.Dual(wg.Dual(np.array([1.0, 2.0]), 1.0), 1.0) ** 2,))
        Dual(Dual(5.0, 6.0), Dual(6.0, 4.0))
    """
    from .api import jvp
    from .tree import flatten, unflatten
    kwargs = kwargs or {}
    leaves, tree = flatten((tuple(args), kwargs))
    at = [k for k, x in enumerate(leaves) if type(x) is Dual]
    name = getattr(fn, "__name__", type(fn).__name__)

    def traced(*xs):
        filled = list(leaves)
        for k, x in zip(at, xs):
            filled[k] = x
        a, kw = unflatten(tree, filled)
        return fn(*a, **kw)

    if any(type(leaves[k].primal) is Dual or type(leaves[k].tangent) is Dual for k in at):
        # ⟨P, T⟩ with Duals for parts: fn(⟨P, T⟩) = ⟨fn(P), fn'(P)·T⟩, and both parts are
        # functions (fn, and jvp of fn) taken at Duals one level down: so `through` again
        out = through(traced, [leaves[k].primal for k in at])
        n = len(at)
        tout = through(lambda *pt: jvp(traced, pt[:n], pt[n:])[1],
                       [leaves[k].primal for k in at] +
                       [_tangent_like(leaves[k].tangent, leaves[k].primal) for k in at])
        outs, out_tree = flatten(out)
        touts = flatten(tout)[0]
        return unflatten(out_tree, [_made(o, t) if _floating(o) else o
                                    for o, t in zip(outs, touts)])
    primals = [np.asarray(leaves[k].primal, float) if not _floating(leaves[k].primal)
               else leaves[k].primal for k in at]
    tangents = [_tangent_like(leaves[k].tangent, p) for k, p in zip(at, primals)]
    out, tout = jvp(traced, primals, tangents)
    outs, out_tree = flatten(out)
    touts = flatten(tout)[0]
    res = []
    for o, t in zip(outs, touts):
        if _floating(o) and dtype_of(o).kind == "c":
            raise _not_real(f"{name} gave a complex value")
        res.append(_made(o, t) if _floating(o) else o)
    return unflatten(out_tree, res)


def has_duals(args, kwargs=None) -> bool:
    """Whether a Dual is among `args` (or kwargs' values), or in a list or tuple there."""
    for a in (*args, *kwargs.values()) if kwargs else args:
        if type(a) is Dual or (type(a) in (list, tuple) and has_duals(a)):
            return True
    return False


def accepts_duals(fn):
    """`fn`, taking Duals among its arguments by `through`: for a front end that would
    hand a Dual to SciPy, which reads it as an opaque object.  Traced, `fn` sees values
    it differentiates.

    Example:
        >>> import numpy as np, wengert as wg, wengert.numpy as wnp
        >>> from wengert.dual import accepts_duals
        >>> norm2 = accepts_duals(lambda v: wnp.sum(v * v))
        >>> norm2(wg.Dual(np.array([3.0, 4.0]), np.array([1.0, 0.0])))
        Dual(25.0, 6.0)
    """
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if has_duals(args, kwargs):
            return through(fn, args, kwargs)
        return fn(*args, **kwargs)
    return wrapper


def _floating(x) -> bool:
    return type(x) is Dual or type(x) is float or dtype_of(x).kind in "fc"


def _tangent_like(t, primal):
    """A Dual's tangent as `wg.jvp` takes it: the primal's shape and float dtype (a
    scalar tangent is the same derivative at every element).  Either may be a Dual
    (nested Duals): then its parts are made like the innermost primal."""
    if type(t) is Dual:
        return _made(_tangent_like(t.primal, primal), _tangent_like(t.tangent, primal))
    while type(primal) is Dual:
        primal = primal.primal
    if not _floating(primal):
        primal = np.asarray(primal, float)
    dtype = dtype_of(primal)
    if np.shape(t) == np.shape(primal) and dtype_of(t) == dtype:
        return t
    try:
        t = np.broadcast_to(np.asarray(t, dtype), np.shape(primal))
    except ValueError:
        raise ValueError(f"a Dual's tangent of shape {np.shape(t)} does not fit its primal "
                         f"of shape {np.shape(primal)}") from None
    return t if t.ndim else t[()]


def apply(op, args, params):
    """``op(*args, **params)`` where some arguments are Duals: the primal through the
    primitive, the tangent by one step of forward mode (`wengert.ad.forward.tangent`).

    Example:
        >>> import wengert as wg
        >>> from wengert.dual import apply
        >>> apply(wg.REGISTRY["mul"], (wg.Dual(2.0, 1.0), wg.Dual(5.0, 0.5)), {})
        Dual(10.0, 6.0)
    """
    xs = [a.primal if type(a) is Dual else a for a in args]
    ans = op(*xs, **params)
    if type(ans) is not float and type(ans) is not Dual and dtype_of(ans).kind == "c":
        # (a Dual's tangent would need the sweeps' rule that a real value's tangent is
        # real: wg.jvp has it)
        raise _not_real(f"{op.name} gave a complex value")
    if op.dtype_rule == "bool":
        return ans                        # a comparison: no derivative, a plain bool
    # (a tangent of a Python 0, as a constant Dual(2.0) has, is a structural zero, as in
    # JAX: else its partial multiplies it, and pow's log(x) at x < 0 made a nan of 0)
    ts = [None if type(a) is not Dual else
          None if (type(a.tangent) is float or type(a.tangent) is int) and a.tangent == 0
          else a.tangent for a in args]
    shape = shape_of(ans)
    t = _tangent(op, ts, xs, ans, params, shape)
    if t is None:                         # sign, or a Dual only in select's condition
        t = 0.0 if shape == () else np.zeros(shape)
    return _made(ans, t)


OVERLOADS[Dual] = apply

_UFUNCS = {}


def _ufunc_primitives():
    """NumPy or SciPy ufunc -> the primitive it implements, read off the registry (a
    `scipy.special` primitive names its ufunc in `prim.ufunc`, as SciPy may be absent).
    wengert's own primitives only: a user's ``wg.primitive(np.sin, name=...)``, with
    rules of its own, must not take over numpy.sin on every Dual."""
    if not _UFUNCS:
        for p in REGISTRY.values():
            if not p.builtin:
                continue
            if isinstance(p.impl, np.ufunc):
                _UFUNCS[p.impl] = p
            elif p.ufunc is not None and p.ufunc() is not None:
                _UFUNCS[p.ufunc()] = p
    return _UFUNCS


def _install():
    # Operators and comparisons: straight to `apply`, no dispatch on the way.
    def binary(prim):
        return (lambda a, b: apply(prim, (a, b), NO_PARAMS),
                lambda a, b: apply(prim, (b, a), NO_PARAMS))

    P = _scalar
    for name, prim in (("add", P.add), ("sub", P.sub), ("mul", P.mul), ("truediv", P.div)):
        method, reflected = binary(prim)
        setattr(Dual, f"__{name}__", method)
        setattr(Dual, f"__r{name}__", reflected)
    for name, prim in (("lt", P.lt), ("le", P.le), ("gt", P.gt), ("ge", P.ge), ("eq", P.eq),
                       ("ne", P.ne)):
        setattr(Dual, f"__{name}__", binary(prim)[0])
    Dual.__hash__ = None                  # == compares values, as for floats in an array
    Dual.__pow__ = lambda a, b: P.power(a, b)
    Dual.__rpow__ = lambda a, b: P.power(b, a)
    Dual.__neg__ = lambda a: apply(P.neg, (a,), NO_PARAMS)
    Dual.__pos__ = lambda a: a
    Dual.__abs__ = lambda a: apply(P.abs, (a,), NO_PARAMS)
    # (d @ array reaches np.matmul through the array's operator; d @ d needs one of its own)
    Dual.__matmul__ = lambda a, b: np.matmul(a, b)
    Dual.__rmatmul__ = lambda a, b: np.matmul(b, a)
    # % and // as NumPy's remainder and floor_divide (the sign of the divisor), divmod as
    # both; floor, ceil, trunc and round (Python's round(d) and NumPy's object loops of
    # np.floor ... call these) as NumPy's, half to even, with a zero tangent
    for name, prim in (("mod", P.remainder), ("floordiv", P.floor_divide)):
        method, reflected = binary(prim)
        setattr(Dual, f"__{name}__", method)
        setattr(Dual, f"__r{name}__", reflected)
    Dual.__divmod__ = lambda a, b: (a // b, a % b)
    Dual.__rdivmod__ = lambda a, b: (b // a, b % a)
    for name, prim in (("floor", P.floor), ("ceil", P.ceil), ("trunc", P.trunc)):
        setattr(Dual, f"__{name}__", (lambda p: lambda a: apply(p, (a,), NO_PARAMS))(prim))
    Dual.__round__ = lambda a, ndigits=None: apply(
        P.round, (a,), {"decimals": 0 if ndigits is None else ndigits})
    # NumPy object arrays of duals call a method named after the ufunc (np.sin -> d.sin()):
    # one for every ufunc of NumPy's, each the ufunc itself, so an element goes as an array
    # Dual does (`__array_ufunc__`); the SciPy ones wengert differentiates are found when
    # first asked for (`_scipy_method`), so that importing wengert does not import SciPy
    for name, ufunc in vars(np).items():
        if isinstance(ufunc, np.ufunc) and not hasattr(Dual, ufunc.__name__):
            setattr(Dual, ufunc.__name__, _method(ufunc))
    Dual.__getattr__ = _scipy_method


def _method(ufunc):
    method = lambda *a: ufunc(*a)       # noqa: E731  (d.erf() is erf(d))
    method.__name__ = ufunc.__name__
    return method


def _scipy_method(d, name):
    """``d.erf``, for NumPy's object loops of a SciPy ufunc wengert differentiates: set on
    the class when first asked for (only a name not found otherwise comes here)."""
    if not name.startswith("_"):
        for ufunc in _ufunc_primitives():
            if ufunc.__name__ == name:
                setattr(Dual, name, _method(ufunc))
                return getattr(d, name)
    raise AttributeError(f"'Dual' object has no attribute {name!r}")


_install()
