"""The scalar functions of wengert, as a namespace like Python's `math`.

They take plain numbers (and return plain numbers, with NumPy's conventions for domain
errors: ``log(-1.0)`` is nan with a RuntimeWarning, ``log(0.0)`` is -inf) or traced values
(and record the operation).  NumPy arrays work elementwise.

Example:
    >>> import wengert as wg
    >>> import wengert.math as wm
    >>> wm.sin(0.5) == __import__("math").sin(0.5)
    True
    >>> wg.grad(lambda x: wm.sin(x ** 2))(1.0) == 2 * wm.cos(1.0)
    True
"""
import math as _math

from .primitives.scalar import (  # noqa: F401
    sqrt, cbrt, exp, log, log10, sin, cos, tan, cotan, asin, acos, atan, atan2, sinh, cosh,
    tanh, abs, sign, maximum, minimum, select, power, lt, le, gt, ge, eq, ne,
)

cot = cotan
fabs = abs
pow = power
where = select
pi = _math.pi
e = _math.e
inf = _math.inf
nan = _math.nan

__all__ = ["sqrt", "cbrt", "exp", "log", "log10", "sin", "cos", "tan", "cotan", "cot", "asin",
           "acos", "atan", "atan2", "sinh", "cosh", "tanh", "abs", "fabs", "sign", "maximum",
           "minimum", "select", "where", "power", "pow", "lt", "le", "gt", "ge", "eq", "ne",
           "pi", "e", "inf", "nan"]
