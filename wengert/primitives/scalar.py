"""Scalar (elementwise) primitives and their partial derivatives.

Each primitive is declared once: evaluation (NumPy, with a `math` fast path for Python
floats), cost class, and one partial derivative per argument, written in terms of the
arguments and the result ``ans``.  The rule table reads like the math:

    d sin(x)/dx = cos(x)         d (x/y)/dy = -ans/y         d tan(x)/dx = 1 + ans**2

Elementwise on arrays too: NumPy broadcasting applies, and the sweeps sum a cotangent back
to each argument's shape.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ..graph.node import Node
from .registry import _WEAK_STAND_IN, defprimitive, elementwise_aval, is_weak, numpy_dtype
from . import shape as _shape

_LN10 = math.log(10.0)


def _fail(*args, **kwargs):
    raise ValueError  # send the call to the NumPy implementation


def _sign(x):
    if x > 0:
        return 1.0
    if x < 0:
        return -1.0
    return x if x != x else 0.0         # nan stays nan; -0.0 gives 0.0, as NumPy's sign


def _max(x, y):
    # nan propagates, and a tie (0.0 and -0.0) gives y, as np.maximum
    return _promoted(x if (x > y or x != x) else y, x, y)


def _min(x, y):
    return _promoted(x if (x < y or x != x) else y, x, y)


def _promoted(r, x, y):
    """r, one of the Python numbers x and y, in the type NumPy gives the pair (float over
    int over bool): maximum(1.0, 1) is 1.0, not the int 1, whose integer type would mark
    the result as having no derivative (the gradient at the tie read 0, not 1)."""
    if type(x) is type(y):
        return r
    return float(r) if type(x) is float or type(y) is float else int(r)


def _powi(x, n):
    return x ** n


def _powi_np(x, n):
    x = np.asarray(x)
    if n < 0 and x.dtype.kind in "iub":
        x = x.astype(np.float64)            # NumPy refuses negative integer powers of ints
    return np.power(x, n)


def _cotan(x):
    return 1.0 / math.tan(x)


def _select(c, a, b):
    return a if c else b


def _cbrt(x):
    return math.cbrt(x) if hasattr(math, "cbrt") else _fail()


def _scalar(name, impl, fast, cost="call", **kw):
    return defprimitive(name, impl, fast=fast, cost=cost, **kw)


# ---- arithmetic ------------------------------------------------------------------------
add = _scalar("add", np.add, operator.add, "add", infix="+", commutative=True,
              dtype_rule="promote", linear=True)
sub = _scalar("sub", np.subtract, operator.sub, "add", infix="-", dtype_rule="promote",
              linear=True)
mul = _scalar("mul", np.multiply, operator.mul, "mul", infix="*", commutative=True,
              dtype_rule="promote")
div = _scalar("div", np.true_divide, operator.truediv, "div", infix="/")
neg = _scalar("neg", np.negative, operator.neg, "neg", infix="-", dtype_rule="promote",
              linear=True)
powi = _scalar("powi", _powi_np, _powi, "pow", infix="**", dtype_rule="promote",
               doc="x**n for a fixed integer n (a parameter, not an argument).")
pow = _scalar("pow", np.power, math.pow, "pow", infix="**",
              doc="x**y for real x and y: nan where x < 0 and y is not an integer.")

add.defpartials(1.0, 1.0)
sub.defpartials(1.0, -1.0)
mul.defpartials(lambda x, y, ans: y, lambda x, y, ans: x)
div.defpartials(lambda x, y, ans: 1 / y, lambda x, y, ans: -ans / y)
neg.defpartials(-1.0)
# x**0 = 1 for every x, so its derivative is 0, where n x**(n-1) reads 0 · inf = nan at
# x = 0 (and poisons a polynomial's c0 x**0 term): 0 · ans keeps the shape, and is 0
powi.defpartials(lambda x, ans, n: n * powi(x, n=n - 1) if n else 0.0 * ans)


def pow_log(x, ans=None):
    """log x, as the derivative of x**y in y uses it (x**y log x).  At x = 0 the product
    would be 0 · -inf = nan, yet 0**y = 0 for every y > 0, so its derivative there is 0:
    log reads 1 in place of 0 (as in JAX and autograd).  A real x with a complex power
    `ans` is the complex x + 0i, as NumPy takes it: log of a negative real is nan, of
    -2 + 0i is log 2 + iπ.  A straight-line graph (ADDS) has no conditional to write that
    with and keeps the plain log."""
    if type(x) is Node and x.graph.straight_line:
        return log(x)
    x = select(eq(x, 0.0), 1.0, x)
    if ans is not None and kind_of(ans) == "c" and kind_of(x) != "c":
        x = make_complex(x, 0.0)
    return log(x)


def pow_dx(x, y):
    """y x**(y-1), as the derivative of x**y in x uses it.  Where y = 0 it is 0 (x**0 = 1
    for every x), though the product reads 0 · inf = nan at x = 0 (as in JAX).  Only
    there is it replaced: elsewhere the product stays, whose own derivative in y at y = 0
    is x**-1 (a select on y == 0 alone made that 0, and second derivatives of x**y and
    x**x wrong).  A straight-line graph (ADDS) has no conditional and keeps the plain
    product."""
    d = y * pow(x, y - 1)
    if type(d) is Node and d.graph.straight_line:
        return d
    return select(eq(y, 0.0), select(eq(x, 0.0), 0.0, d), d)


pow.defpartials(lambda x, y, ans: pow_dx(x, y), lambda x, y, ans: pow_log(x, ans) * ans)

# ---- elementary functions ----------------------------------------------------------------
sqrt = _scalar("sqrt", np.sqrt, math.sqrt)
cbrt = _scalar("cbrt", np.cbrt, _cbrt)
exp = _scalar("exp", np.exp, math.exp)
log = _scalar("log", np.log, math.log)
log10 = _scalar("log10", np.log10, math.log10)
sin = _scalar("sin", np.sin, math.sin)
cos = _scalar("cos", np.cos, math.cos)
tan = _scalar("tan", np.tan, math.tan)
cotan = _scalar("cotan", lambda x: 1.0 / np.tan(x), _cotan)
asin = _scalar("asin", np.arcsin, math.asin)
acos = _scalar("acos", np.arccos, math.acos)
atan = _scalar("atan", np.arctan, math.atan)
atan2 = _scalar("atan2", np.arctan2, math.atan2)
log1p = _scalar("log1p", np.log1p, math.log1p)
expm1 = _scalar("expm1", np.expm1, math.expm1)
sinh = _scalar("sinh", np.sinh, math.sinh)
cosh = _scalar("cosh", np.cosh, math.cosh)
tanh = _scalar("tanh", np.tanh, math.tanh)

sqrt.defpartials(lambda x, ans: 0.5 / ans)
cbrt.defpartials(lambda x, ans: 1 / (3 * ans ** 2))
exp.defpartials(lambda x, ans: ans)
log.defpartials(lambda x, ans: 1 / x)
log10.defpartials(lambda x, ans: (1 / _LN10) / x)
sin.defpartials(lambda x, ans: cos(x))
cos.defpartials(lambda x, ans: -sin(x))
tan.defpartials(lambda x, ans: 1 + ans ** 2)
cotan.defpartials(lambda x, ans: -(1 + ans ** 2))
asin.defpartials(lambda x, ans: 1 / _sqrt_one_minus_square(x))
acos.defpartials(lambda x, ans: -1 / _sqrt_one_minus_square(x))
atan.defpartials(lambda x, ans: 1 / (1 + x ** 2))
atan2.defpartials(lambda y, x, ans: x / (x ** 2 + y ** 2),
                  lambda y, x, ans: -y / (x ** 2 + y ** 2))
log1p.defpartials(lambda x, ans: 1 / (1 + x))
expm1.defpartials(lambda x, ans: exp(x))     # (ans + 1 cancels to 1 past x = -36)
sinh.defpartials(lambda x, ans: cosh(x))
cosh.defpartials(lambda x, ans: sinh(x))
tanh.defpartials(lambda x, ans: 1 - ans ** 2)

# ---- NumPy's other elementwise functions (wengert.numpy's arcsinh, hypot, logaddexp, ...) ---
# Primitives where a composition would lose accuracy, overflow, or differ from NumPy's value
# (exp2 as pow(2, x) and log2 as log(x)/ln 2 are an ulp off NumPy's now and then); without a
# `math` fast path where Python's function is not NumPy's (math.hypot is more exact).
_LN2 = math.log(2.0)

asinh = _scalar("asinh", np.arcsinh, math.asinh)
acosh = _scalar("acosh", np.arccosh, math.acosh)
atanh = _scalar("atanh", np.arctanh, math.atanh)
exp2 = _scalar("exp2", np.exp2, getattr(math, "exp2", None))     # (math.exp2: Python 3.11)
log2 = _scalar("log2", np.log2, math.log2)
hypot = _scalar("hypot", np.hypot, None, doc="hypot(x, y): sqrt(x² + y²) without overflow.")
logaddexp = _scalar("logaddexp", np.logaddexp, None,
                    doc="logaddexp(x, y): log(exp(x) + exp(y)) without overflow.")
logaddexp2 = _scalar("logaddexp2", np.logaddexp2, None,
                     doc="logaddexp2(x, y): log2(2**x + 2**y) without overflow.")
remainder = _scalar("remainder", np.remainder, operator.mod, dtype_rule="promote",
                    doc="remainder(x, y): x - floor(x/y)·y, the sign of y (Python's %).")
fmod = _scalar("fmod", np.fmod, math.fmod, dtype_rule="promote",
               doc="fmod(x, y): x - trunc(x/y)·y, the sign of x (C's fmod).")



def _shift(c, s, z):
    """c + s·z for a real c and s = ±1, with the sign of a complex z's imaginary part kept
    where it is zero: NumPy's 1 - (2+0j) is -1+0j, on the other side of sqrt's cut from
    -1-0j, and so would be the derivative of arcsin at 2+0j (where arcsin's value is the
    one from above the cut)."""
    if kind_of(z) != "c":
        return c + s * z
    return make_complex(c + s * real(z), s * imag(z))


def _sqrt_one_minus_square(x):
    """sqrt(1 - x²) as sqrt(1 - x)·sqrt(1 + x): on the principal branches of a complex
    x (Kahan's form, exact on the cuts with `_shift`), and for a real x without the
    rounding of x² near ±1 (at 1 - 1e-10, 1 - x² kept 6 digits)."""
    if kind_of(x) != "c":
        return sqrt((1 - x) * (1 + x))
    return sqrt(_shift(1.0, -1.0, x)) * sqrt(_shift(1.0, 1.0, x))


def _asinh_partial(x, ans):
    """1/sqrt(x² + 1): for a real x by hypot, without overflow; for a complex one as
    arcsin's at ix (asinh(z) = -i asin(iz)), ix made from the parts, exactly: 1j·z loses
    the sign of a zero part."""
    if kind_of(x) != "c":
        return 1 / hypot(x, 1.0)
    return 1 / _sqrt_one_minus_square(make_complex(-imag(x), real(x)))


# acosh's is 1/(sqrt(x - 1) sqrt(x + 1)), not 1/sqrt(x² - 1): the same for real x > 1 but
# not on every branch of a complex x (at -2 the two differ in sign), and x² overflows past
# 1.3e154; nor is atanh's 1/(1 - x²), which rounds x² near 1
asinh.defpartials(_asinh_partial)
acosh.defpartials(lambda x, ans: 1 / (sqrt(_shift(-1.0, 1.0, x)) * sqrt(_shift(1.0, 1.0, x))))
atanh.defpartials(lambda x, ans: 1 / ((1 - x) * (1 + x)))
exp2.defpartials(lambda x, ans: _LN2 * ans)
log2.defpartials(lambda x, ans: (1 / _LN2) / x)


def _hypot_partial(x, ans):
    # x/ans; at x = y = 0 (ans = 0) the subgradient 0, as abs has (hypot(x, 0) = |x|), and
    # so is its derivative there, as abs's is (x/1 would make the Hessian the identity)
    at_zero = eq(ans, 0.0)
    return select(at_zero, 0.0, x) / select(at_zero, 1.0, ans)


hypot.defpartials(lambda x, y, ans: _hypot_partial(x, ans),
                  lambda x, y, ans: _hypot_partial(y, ans))


def logaddexp_share(x, y, power=None, first=True):
    """x's share (`first`) or y's of the softmax of (x, y) in base e (`power` exp, the
    default) or 2 (exp2): 1/(1 + b^(y-x)), the partials of logaddexp, computed with
    b^(-|x-y|) <= 1, which does not overflow, taken from x - y or y - x by select (not
    abs: each side's derivative holds at a tie, where the share's is 1/4·ln b and abs's
    kink would give 0).  Not b^(x - ans), whose ans is rounded to its size: at
    (1e16, 1e16) that gave (1, 1).

    Example:
        >>> float(logaddexp_share(1e16, 1e16)), float(logaddexp_share(800.0, 0.0))
        (0.5, 1.0)
    """
    power = exp if power is None else power
    d = x - y
    ahead = ge(d, 0.0)
    z = power(select(ahead, -d, d))
    r = 1 / (1 + z)
    return select(ahead, r, z * r) if first else select(ahead, z * r, r)


logaddexp.defpartials(lambda x, y, ans: logaddexp_share(x, y, exp, True),
                      lambda x, y, ans: logaddexp_share(x, y, exp, False))
logaddexp2.defpartials(lambda x, y, ans: logaddexp_share(x, y, exp2, True),
                       lambda x, y, ans: logaddexp_share(x, y, exp2, False))


def _quotient(x, y, ans):
    # both are x - n·y for an integer n (floored or truncated x/y): n read back from the
    # result, rounded, so the partial in y is exact and itself has derivative zero
    return -round((x - ans) / y, decimals=0)


remainder.defpartials(1.0, _quotient)
fmod.defpartials(1.0, _quotient)

# ---- piecewise: abs, sign, maximum, minimum, comparisons, select -----------------------------
abs = _scalar("abs", np.abs, operator.abs, dtype_rule="real")
sign = _scalar("sign", np.sign, _sign, dtype_rule="promote")
maximum = _scalar("maximum", np.maximum, _max, commutative=False, dtype_rule="promote")
minimum = _scalar("minimum", np.minimum, _min, commutative=False, dtype_rule="promote")
lt = _scalar("lt", np.less, operator.lt, "cmp", infix="<", dtype_rule="bool")
le = _scalar("le", np.less_equal, operator.le, "cmp", infix="<=", dtype_rule="bool")
gt = _scalar("gt", np.greater, operator.gt, "cmp", infix=">", dtype_rule="bool")
ge = _scalar("ge", np.greater_equal, operator.ge, "cmp", infix=">=", dtype_rule="bool")
eq = _scalar("eq", np.equal, operator.eq, "cmp", infix="==", dtype_rule="bool")
ne = _scalar("ne", np.not_equal, operator.ne, "cmp", infix="!=", dtype_rule="bool")
select = _scalar(
    "select", np.where, _select, "cmp",
    abstract_eval=lambda args, params: (elementwise_aval(select, args)[0],
                                        elementwise_aval(maximum, args[1:])[1]),
    doc="""select(cond, a, b): a where cond holds, else b (elementwise, like numpy.where).

    The way to write a piecewise function that can be traced without values: both branches
    are in the graph, and the derivative flows through the one selected.

    Example:
        >>> import wengert as wg
        >>> relu = lambda x: wg.select(x > 0, x, 0.0)
        >>> wg.grad(relu)(2.0), wg.grad(relu)(-2.0)
        (1.0, 0.0)
    """)

def _stopped(x):
    if isinstance(x, (tuple, list, dict)):
        # (the identity would hand the container back, its traced values not stopped)
        raise TypeError(f"stop_gradient of a {type(x).__name__}: this is the primitive, "
                        "of one array; wg.stop_gradient (wengert.lax's) takes pytrees")
    return x


stop_gradient = _scalar("stop_gradient", _stopped, lambda x: x, None, linear=True,
                        dtype_rule="promote", doc="""stop_gradient(x): x, as a constant for
    differentiation (its derivative is zero).

    Example:
        >>> import wengert as wg
        >>> wg.grad(lambda x: x * wg.stop_gradient(x))(3.0)
        3.0
    """)
stop_gradient.defpartials(lambda x, ans: None)

# (no float fast path: Python's round(x, n) rounds the decimal value, NumPy's x * 10**n)
round = _scalar("round", lambda x, decimals=0: np.round(x, decimals), None,
                dtype_rule="promote", doc="round(x, decimals=n): NumPy's round (half to even).")
# (no float fast path either: math.floor returns an int, NumPy's floor of a float a float,
# and of an int or bool array that same dtype)
floor = _scalar("floor", np.floor, None, dtype_rule="promote",
                doc="floor(x): the largest integer <= x, in x's dtype (NumPy's).")
ceil = _scalar("ceil", np.ceil, None, dtype_rule="promote",
               doc="ceil(x): the smallest integer >= x, in x's dtype (NumPy's).")
trunc = _scalar("trunc", np.trunc, None, dtype_rule="promote",
                doc="trunc(x): x rounded towards zero, in x's dtype (NumPy's trunc and fix).")

def _abs_partial(x, ans):
    # For complex z, |z|' is z̄/|z| (0 at 0): a real result takes the real part of its
    # tangent t, Re(z̄ t)/|z|, and hands z̄/|z| times its real cotangent back to z.
    if kind_of(x) != "c":
        return sign(x)
    return conj(x) / select(eq(ans, 0.0), 1.0, ans)


abs.defpartials(_abs_partial)
sign.defpartials(lambda x, ans: None)                       # zero almost everywhere
for _step in (round, floor, ceil, trunc):
    _step.defpartials(None)                                # zero almost everywhere


def indicator(c, ans, where=True):
    """1 where c is `where`, 0 elsewhere, in ans's precision: a partial that keeps a float32
    tangent float32 (Python's 1.0 would make NumPy's where float64).

    Example:
        >>> import numpy as np
        >>> x = np.array([1.0, -2.0], np.float32)
        >>> m = indicator(x > 0, x)
        >>> m.tolist(), m.dtype.name
        ([1.0, 0.0], 'float32')
    """
    one, zero = 1.0, 0.0
    dtype = getattr(ans, "dtype", None)
    if dtype is not None and dtype.kind in "fc":
        real = np.finfo(dtype).dtype            # (a complex result's real precision)
        if real.itemsize < 8:                   # (float64: Python's weak 1.0 is right)
            one, zero = real.type(1), real.type(0)
    return select(c, one, zero) if where else select(c, zero, one)


# At a tie maximum(x, x) passes the whole derivative to its first argument.
maximum.defpartials(lambda x, y, ans: indicator(x >= y, ans),
                    lambda x, y, ans: indicator(x >= y, ans, False))
minimum.defpartials(lambda x, y, ans: indicator(x <= y, ans),
                    lambda x, y, ans: indicator(x <= y, ans, False))
for _cmp in (lt, le, gt, ge, eq, ne):
    _cmp.defpartials(None, None)
select.elementwise = True                   # (its own shape rule only adds the condition)
select.defpartials(None,
                   lambda c, a, b, ans: indicator(c, ans),
                   lambda c, a, b, ans: indicator(c, ans, False))


# Reverse mode selects the cotangent rather than multiplying it by the partial: an inf or
# nan cotangent then leaves the branch not taken at 0 (sqrt(where(x > 0, x, 0)) at x = 0,
# a mean over a masked-out slice), as JAX's does, where inf * 0 would make it nan.
def _select_vjp(taken):
    def vjp(g, c, a, b, ans):
        x = a if taken else b
        ct = select(c, g, 0.0) if taken else select(c, 0.0, g)
        shape = np.shape(x)
        return ct if shape == np.shape(ct) else _shape.sum_to(ct, shape=shape)
    return vjp


select.defvjp(None, _select_vjp(True), _select_vjp(False))


# ---- a float's representation: floor_divide, spacing, nextafter, modf, frexp ---------------
# NumPy's own evaluation, since the compositions differ from it: floor(x/y) is not NumPy's
# x // y (1.0 // 0.1 is 9.0, floor(1.0/0.1) is 10.0), and x - trunc(x) loses modf's signed
# zeros and gives nan at ±inf.
def _int32_result(args, params):
    return elementwise_aval(abs, args)[0], np.dtype(np.int32)


floor_divide = _scalar("floor_divide", np.floor_divide, None, "div", dtype_rule="promote",
                       doc="floor_divide(x, y): NumPy's x // y (as its divmod computes it).")
spacing = _scalar("spacing", np.spacing, None, doc="spacing(x): the distance from |x| to the "
                  "next float away from zero, with x's sign (NumPy's).")
nextafter = _scalar("nextafter", np.nextafter, None,
                    doc="nextafter(x, y): the float after x towards y (NumPy's).")
modf_fraction = _scalar("modf_fraction", lambda x: np.modf(x)[0], None, "add",
                        doc="modf_fraction(x): x - trunc(x), NumPy's modf(x)[0] (with "
                        "x's sign; 0 at ±inf).")
frexp_mantissa = _scalar("frexp_mantissa", lambda x: np.frexp(x)[0], None,
                         doc="frexp_mantissa(x): m of x = m·2**e with 0.5 <= |m| < 1 "
                         "(NumPy's frexp(x)[0]).")
frexp_exponent = _scalar("frexp_exponent", lambda x: np.frexp(x)[1], None, "cmp",
                         abstract_eval=_int32_result,
                         doc="frexp_exponent(x): the int32 e of x = m·2**e (NumPy's "
                         "frexp(x)[1]).")
frexp_exponent.elementwise = True


# ---- NumPy's own ufuncs, where nothing flows through them ----------------------------------
def _ufunc_aval(args, params):
    ufunc = params["ufunc"]
    shape = np.broadcast_shapes(*[a.shape for a in args])
    dtype = numpy_dtype(ufunc, args)
    if dtype is None:                   # (no loop: as NumPy's call would, refused)
        raise TypeError(f"ufunc {ufunc.__name__!r} not supported for the input types "
                        f"{', '.join(str(a.dtype) for a in args)}")
    return shape, dtype


numpy_ufunc = _scalar(
    "numpy_ufunc", lambda *xs, ufunc: ufunc(*xs), None, "cmp", abstract_eval=_ufunc_aval,
    doc="""numpy_ufunc(*xs, ufunc=f): NumPy's ufunc f itself, for integer and bool
    arguments (gcd, left_shift, sin of an int8 array, ...): its values and dtypes are
    NumPy's, and no derivative flows through it, as none reaches an integer.

    Example:
        >>> import numpy as np, wengert as wg, wengert.numpy as wnp
        >>> g = wg.trace(lambda i: wnp.gcd(i, 6), np.arange(4))
        >>> print(g)
        graph(i: i64[4]):
          %2: i64[4] = numpy_ufunc(i, 6, ufunc=<ufunc 'gcd'>)
          return %2
        >>> g(np.arange(4))
        array([6, 1, 2, 3])
    """)
numpy_ufunc.elementwise = True          # (batched as one: vmap)
numpy_ufunc.defjvp(lambda ts, *xs, **params: None)
numpy_ufunc.defvjp(lambda g, *xs, **params: (None,) * (len(xs) - 1))


def _no_nextafter_derivative(*args, **params):
    # (declared as its JVP and VJP, not as partials: no sweep or test takes it for a
    # function with partial derivatives)
    raise NotImplementedError(
        "numpy.nextafter has no derivative rule (JAX has none either): give it "
        "wg.stop_gradient(x) to use its value as a constant, or write x itself where a "
        "derivative 1 is meant")


floor_divide.defpartials(None, None)                # piecewise constant
spacing.defpartials(None)
nextafter.defjvp(_no_nextafter_derivative).defvjp(_no_nextafter_derivative)
modf_fraction.defpartials(1.0)                      # (jumps at the integers)
frexp_exponent.defpartials(None)


def _frexp_partial(x, ans):
    # m = x·2**-e exactly, so the partial 2**-e is m/x exactly; m == x where e = 0, which
    # covers 0 and ±inf too (e = 0 there): the partial 1, without computing 0/0 or inf/inf
    same = eq(ans, x)
    return select(same, 1.0, ans) / select(same, 1.0, x)


frexp_mantissa.defpartials(_frexp_partial)


# ---- complex values: parts and conjugate --------------------------------------------------
real = _scalar("real", np.real, None, None, linear=True, complex=True, dtype_rule="real",
               doc="real(z): the real part (z itself for a real z).")
imag = _scalar("imag", np.imag, None, None, linear=True, complex=True, dtype_rule="real",
               doc="imag(z): the imaginary part (zeros for a real z).")
conj = _scalar("conj", np.conjugate, None, None, linear=True, dtype_rule="promote",
               complex=True, doc="conj(z): the complex conjugate (z itself for a real z).")
# A real result's tangent is the real part of what its partial gives (the sweeps take it),
# so Re and Im are the partials 1 and -i: Re(t) and Re(-i t) = Im(t) forward, and c and
# -i c back to z, as in JAX and autograd.  conj is not complex-linear, so it has rules.
real.defpartials(1.0)
imag.defpartials(lambda x, ans: -1j if kind_of(x) == "c" else None)     # (a real x: 0)
conj.defjvp(lambda ts, x, ans: conj(ts[0]))
conj.defvjp(lambda g, x, ans: (conj(g),))


def _complex_np(re, im):
    # the parts written in place: re + im·1j is not exact, since 1j·inf is (nan, inf);
    # the dtype from the arguments as given (a Python float is weak: float32 parts give
    # complex64, as NumPy's re + 1j·im does)
    out = np.empty(np.broadcast_shapes(np.shape(re), np.shape(im)), np.result_type(re, im, 1j))
    out.real = re
    out.imag = im
    return out if out.ndim else out[()]


make_complex = _scalar("complex", _complex_np, lambda re, im: complex(re, im), "add",
                       linear=True, complex=True, dtype_rule="complex",
                       doc="complex(re, im): re + i·im from real parts, exactly.")
# Re(c · (dre + i dim)) = Re(c) dre + Re(i c) dim: the partials 1 and i, whose products
# with a cotangent the sweeps take the real part of for the real parts
make_complex.defpartials(1.0, lambda re, im, ans: 1j)


def kind_of(x):
    """The dtype kind of a node or a value: "c" for complex."""
    t = type(x)
    if t is float:
        return "f"
    if t is Node or t is np.ndarray:
        return x.dtype.kind
    primal = getattr(x, "primal", None)         # a Dual (of Duals, in nested forward mode)
    if primal is not None:
        return kind_of(primal)
    return np.result_type(x).kind


def real_part(v):
    """v's real part where v (a cotangent, a tangent: node or value) is complex, else v:
    how a derivative reaching a real value from a complex one is made real."""
    if kind_of(v) != "c":
        return v
    if type(v) is Node:
        return real(v)
    v = np.real(v)
    return float(v) if type(v) is np.float64 else v     # (float64 scalars are floats)


# Whose rules hold for complex values as written (holomorphic functions: f' is the same
# formula; abs, asinh and acosh choose theirs above).  The rest refuse complex values.
for _prim in (add, sub, mul, div, neg, powi, pow, sqrt, exp, log, log10, log2, exp2, sin, cos,
              tan, cotan, asin, acos, atan, log1p, expm1, sinh, cosh, tanh, asinh, acosh,
              atanh, abs, eq, ne, select, stop_gradient, round):
    _prim.complex = True


def power(x, y):
    """``x ** y``: an integer exponent gives `powi` (exact, any sign of x), any other
    exponent `pow`.

    Example:
        >>> import wengert as wg
        >>> wg.math.power(2.0, 3), wg.grad(lambda x: wg.math.power(x, 3))(2.0)
        (8.0, 12.0)
    """
    if type(y) is not Node and type(y) is not bool:
        if isinstance(y, (int, np.integer)) or (
                isinstance(y, (float, np.floating)) and float(y).is_integer()
                and -2 ** 31 < y < 2 ** 31):
            if type(y) is not int:      # a float or NumPy scalar exponent has a dtype
                x = _in_power_dtype(x, y)
            return powi(x, n=int(y))
    return pow(x, y)


def _in_power_dtype(x, y):
    """x, cast to the dtype NumPy gives ``x ** y``: `powi` takes y as a parameter, whose
    dtype would otherwise be lost (float32 ** np.int64(3) is float64, int32 ** 3.0 is
    float64).  A Python number or a Dual x is left as it is."""
    if type(x) is Node:
        xd = _WEAK_STAND_IN.get(x.dtype.kind, x.dtype) if is_weak(x) else x.dtype
    elif isinstance(x, (np.ndarray, np.generic)):
        xd = x.dtype
    else:
        return x
    want = np.result_type(xd, 0.0 if type(y) is float else y.dtype)
    if want == x.dtype:
        return x
    from .array import astype       # (array.py loads after this module)
    return astype(x, dtype=want)


# ---- Python operators on traced values ----------------------------------------------------
def _binary(prim, reflected=False):
    # Straight to the node's graph when the other operand is a number or a node of the
    # same graph (the common case); otherwise through the primitive, which picks the graph.
    if reflected:
        def method(a, b):
            if type(b) is not Node:
                return a.graph.apply(prim, (b, a))
            return prim(b, a)
    else:
        def method(a, b):
            if type(b) is not Node or b.graph is a.graph:
                return a.graph.apply(prim, (a, b))
            return prim(a, b)
    method.__name__ = prim.name
    return method


def _install_operators():
    for name, prim in (("add", add), ("sub", sub), ("mul", mul), ("truediv", div)):
        setattr(Node, f"__{name}__", _binary(prim))
        setattr(Node, f"__r{name}__", _binary(prim, reflected=True))
    for name, prim in (("lt", lt), ("le", le), ("gt", gt), ("ge", ge), ("eq", eq), ("ne", ne)):
        setattr(Node, f"__{name}__", _binary(prim))
    Node.__pow__ = lambda a, b: power(a, b)
    Node.__rpow__ = lambda a, b: power(b, a)
    Node.__neg__ = lambda a: a.graph.apply(neg, (a,))
    Node.__pos__ = lambda a: a
    Node.__abs__ = lambda a: a.graph.apply(abs, (a,))


_install_operators()
