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
`wengert.math`, NumPy's ufuncs (``np.sin(d)``), and NumPy object arrays of duals
(``np.sin(array_of_duals)``).  Their parts may be NumPy arrays (a direction for a whole
array at once).  A comparison returns a plain bool, so ``if d > 0:`` works.

Example:
    >>> import wengert as wg, wengert.math as wm
    >>> f = lambda x1, x2: x1 * x2 + wm.sin(x1)
    >>> f(wg.Dual(2.0, 1.0), 3.0)          # ⟨f, ∂f/∂x1⟩ at (2, 3): x2 + cos x1
    Dual(6.909297426825682, 2.5838531634528574)
"""
from __future__ import annotations

import numpy as np

from .ad.forward import tangent as _tangent
from .primitives import scalar as _scalar
from .primitives.array import dtype_of
from .primitives.registry import NO_PARAMS, OVERLOADS, REGISTRY, shape_of

__all__ = ["Dual"]


class Dual:
    """A dual number ⟨primal, tangent⟩ = primal + tangent·ε, ε² = 0: forward mode by
    operator overloading, the lightest way to one directional derivative.

    Args:
        primal: the value: a float, a NumPy array, a traced value or another Dual.
        tangent: its derivative along the chosen direction (default 0: a constant).

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

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs:
            return NotImplemented
        if ufunc is np.power:
            return _scalar.power(*inputs)          # integer exponents exactly, as x ** n
        prim = _ufunc_primitives().get(ufunc)
        if prim is None:
            return NotImplemented
        return apply(prim, inputs, NO_PARAMS)


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
        raise TypeError(f"wg.Dual is for real numbers, and {op.name} gave a complex value; "
                        "use wg.jvp, which takes complex values (docs/complex.md)")
    if op.dtype_rule == "bool":
        return ans                        # a comparison: no derivative, a plain bool
    ts = [a.tangent if type(a) is Dual else None for a in args]
    shape = shape_of(ans)
    t = _tangent(op, ts, xs, ans, params, shape)
    if t is None:                         # sign, or a Dual only in select's condition
        t = 0.0 if shape == () else np.zeros(shape)
    return Dual(ans, t)


OVERLOADS[Dual] = apply

_UFUNCS = {}


def _ufunc_primitives():
    """NumPy ufunc -> the primitive it implements, read off the registry."""
    if not _UFUNCS:
        _UFUNCS.update((p.impl, p) for p in REGISTRY.values() if isinstance(p.impl, np.ufunc))
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
    # NumPy object arrays of duals call a method named after the ufunc (np.sin -> d.sin()).
    for prim in REGISTRY.values():
        if isinstance(prim.impl, np.ufunc) and not hasattr(Dual, prim.impl.__name__):
            nin = prim.impl.nin
            method = ((lambda p: lambda a: apply(p, (a,), NO_PARAMS)) if nin == 1 else
                      (lambda p: lambda a, b: apply(p, (a, b), NO_PARAMS)))(prim)
            method.__name__ = prim.impl.__name__
            setattr(Dual, method.__name__, method)


_install()
