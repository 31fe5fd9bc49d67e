"""SciPy's `scipy.special`, differentiable: use it as `autograd.scipy.special`.

On plain values each function calls SciPy's own (same arguments, same result, same
dtype); on traced values it records a primitive of `wengert.primitives.special` (or a
composition of them), whose derivatives are written with primitives too, so they can be
differentiated again.  Names SciPy has and this module does not (the Bessel functions
kv and hankel1, the inverses of the incomplete gamma and beta functions, ...) are SciPy's
on plain values and raise NotImplementedError, naming themselves, on traced values.

Example:
    >>> import wengert as wg
    >>> from wengert.scipy import special
    >>> special.expit(0.0), wg.grad(special.expit)(0.0)
    (np.float64(0.5), 0.25)
"""
from __future__ import annotations

import functools

import numpy as _np
import scipy.special as _sc

from .. import numpy as _wnp
from ..numpy import _traced
from ..dual import accepts_duals as _accepts_duals
from ..graph.node import Node as _Node
from ..numpy.dispatch import rest_of as _rest_of
from ..primitives import special as _P
from ..primitives.array import axes_last as _axes_last

__all__ = ["erf", "erfc", "erfinv", "gammaln", "digamma", "psi", "polygamma", "gamma",
           "rgamma", "beta", "betaln", "gammainc", "gammaincc", "betainc", "betaincc", "stdtr",
           "multigammaln", "i0", "i1", "i0e", "i1e", "iv", "ive", "j0", "j1", "jv", "jn", "y0",
           "y1", "yv", "yn", "erfcinv", "gammasgn", "expit", "logit", "ndtr",
           "log_ndtr", "erfcx", "xlogy", "xlog1py", "logsumexp", "softmax", "log_softmax",
           "bessel_jn"]


def _scipy_unless_traced(scipy_fn):
    """`fn` on traced arguments (lists holding traced values made one traced array);
    SciPy's `scipy_fn`, called as the caller called it, otherwise."""
    def decorate(fn):
        @_accepts_duals
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if _traced(*args, *kwargs.values()):
                return fn(*_wnp._arrays(args), **kwargs)
            return scipy_fn(*args, **kwargs)
        return wrapper
    return decorate


def _ufunc(prim, scipy_fn, example):
    """SciPy's ufunc on plain values, the primitive on traced ones."""
    def fn(*args):
        if _traced(*args):
            return prim(*_wnp._arrays(args))
        if any(type(a) is _np.ndarray and a.dtype == object for a in args):
            # (object arrays, of Duals say: SciPy's ufuncs have no object loop, so one call
            # per element, as NumPy's own ufuncs make on them)
            return _np.frompyfunc(fn, len(args), 1)(*args)
        return scipy_fn(*args)
    fn.__name__ = fn.__qualname__ = prim.name
    fn.__doc__ = f"""{prim.__doc__}

    SciPy's ``scipy.special.{scipy_fn.__name__}`` on plain values; differentiable on
    traced values (positional arguments only, as ufunc keywords do not apply).

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy import special
{example}
    """
    return fn


erf = _ufunc(_P.erf, _sc.erf, """\
        >>> round(wg.grad(special.erf)(0.0), 6)          # 2/√π
        1.128379""")
erfc = _ufunc(_P.erfc, _sc.erfc, """\
        >>> round(wg.grad(special.erfc)(0.0), 6)         # -2/√π
        -1.128379""")
erfinv = _ufunc(_P.erfinv, _sc.erfinv, """\
        >>> round(wg.grad(special.erfinv)(0.0), 6)       # √π/2
        0.886227""")
gammaln = _ufunc(_P.gammaln, _sc.gammaln, """\
        >>> round(wg.grad(special.gammaln)(4.0), 6)      # ψ(4) = -γ + 1 + 1/2 + 1/3
        1.256118""")
digamma = _ufunc(_P.digamma, _sc.psi, """\
        >>> round(wg.grad(special.digamma)(1.0), 6)      # ψ'(1) = π²/6
        1.644934""")
psi = digamma
gamma = _ufunc(_P.gamma, _sc.gamma, """\
        >>> round(wg.grad(special.gamma)(1.0), 6)        # Γ'(1) = -γ
        -0.577216""")
expit = _ufunc(_P.expit, _sc.expit, """\
        >>> wg.grad(special.expit)(0.0), wg.grad(special.expit)(1000.0)
        (0.25, 0.0)""")
logit = _ufunc(_P.logit, _sc.logit, """\
        >>> wg.grad(special.logit)(0.5)                  # 1/(p(1-p))
        4.0""")
ndtr = _ufunc(_P.ndtr, _sc.ndtr, """\
        >>> round(wg.grad(special.ndtr)(0.0), 6)         # 1/√(2π)
        0.398942""")
log_ndtr = _ufunc(_P.log_ndtr, _sc.log_ndtr, """\
        >>> round(wg.grad(special.log_ndtr)(-50.0), 4)   # about -x for x << 0
        50.02""")
erfcx = _ufunc(_P.erfcx, _sc.erfcx, """\
        >>> round(wg.grad(special.erfcx)(0.0), 6)        # -2/√π
        -1.128379""")
xlogy = _ufunc(_P.xlogy, _sc.xlogy, """\
        >>> g = wg.grad(special.xlogy, argnums=(0, 1))
        >>> g(0.0, 2.0) == (special.xlogy(1.0, 2.0), 0.0)    # (log y, x/y)
        True""")
xlog1py = _ufunc(_P.xlog1py, _sc.xlog1py, """\
        >>> wg.grad(special.xlog1py, argnums=(0, 1))(2.0, 0.0)
        (0.0, 2.0)""")
rgamma = _ufunc(_P.rgamma, _sc.rgamma, """\
        >>> round(wg.grad(special.rgamma)(1.0), 6)       # γ
        0.577216
        >>> float(special.rgamma(-2.0)), round(wg.grad(special.rgamma)(-2.0), 12)   # a pole: 2!
        (0.0, 2.0)""")
betaln = _ufunc(_P.betaln, _sc.betaln, """\
        >>> round(float(special.betaln(2.0, 3.0)), 6), round(wg.grad(special.betaln)(1.0, 1.0), 6)
        (-2.484907, -1.0)""")
i0 = _ufunc(_P.i0, _sc.i0, """\
        >>> round(wg.grad(wg.grad(special.i0))(0.0), 6)      # I₀'' = (I₀ + I₂)/2
        0.5""")
i1 = _ufunc(_P.i1, _sc.i1, """\
        >>> wg.grad(special.i1)(0.0)                     # I₁' = (I₀ + I₂)/2
        0.5""")
i0e = _ufunc(_P.i0e, _sc.i0e, """\
        >>> round(wg.grad(special.i0e)(1.0), 6)          # e^-x (I₁ - I₀)
        -0.257849""")
i1e = _ufunc(_P.i1e, _sc.i1e, """\
        >>> round(wg.grad(special.i1e)(1.0), 6)          # e^-x ((I₀ + I₂)/2 - I₁)
        0.049939""")
j0 = _ufunc(_P.j0, _sc.j0, """\
        >>> wg.grad(special.j0)(1.0) == -float(special.j1(1.0))    # J₀' = -J₁
        True""")
j1 = _ufunc(_P.j1, _sc.j1, """\
        >>> wg.grad(special.j1)(0.0)                     # J₁' = (J₀ - J₂)/2
        0.5""")
y0 = _ufunc(_P.y0, _sc.y0, """\
        >>> wg.grad(special.y0)(1.0) == -float(special.y1(1.0))    # Y₀' = -Y₁
        True""")
y1 = _ufunc(_P.y1, _sc.y1, """\
        >>> round(wg.grad(special.y1)(1.0), 6)           # (Y₀ - Y₂)/2
        0.86947""")
erfcinv = _ufunc(_P.erfcinv, _sc.erfcinv, """\
        >>> round(wg.grad(special.erfcinv)(1.0), 6)      # -√π/2
        -0.886227""")
gammasgn = _ufunc(_P.gammasgn, _sc.gammasgn, """\
        >>> float(special.gammasgn(-0.5)), wg.grad(special.gammasgn)(-0.5)
        (-1.0, 0.0)""")
beta = _ufunc(_P.beta, _sc.beta, """\
        >>> round(wg.grad(special.beta)(1.0, 1.0), 6)   # d/da 1/a at a = 1
        -1.0
        >>> round(float(special.beta(wg.stop_gradient(-1.5), 1.0)), 6)   # 1/a
        -0.666667""")

gammainc = _ufunc(_P.gammainc, _sc.gammainc, """\
        >>> import math
        >>> wg.grad(special.gammainc, argnums=1)(1.0, 0.5) == math.exp(-0.5)   # 1 - e^-x
        True
        >>> round(wg.grad(special.gammainc)(2.0, 1.0), 10)   # in a (gammainc_da)
        -0.2761960457
        >>> round(wg.grad(wg.grad(special.gammainc))(2.0, 1.0), 10)   # twice (gammainc_daa)
        0.2051188223
        >>> wg.grad(wg.grad(wg.grad(special.gammainc)))(2.0, 1.0)     # thrice: not written
        Traceback (most recent call last):
        ...
        NotImplementedError: gammainc: the third derivative with respect to a (the shape) is not implemented: hold it constant (a plain number, or wg.stop_gradient)""")
gammaincc = _ufunc(_P.gammaincc, _sc.gammaincc, """\
        >>> import math
        >>> wg.grad(special.gammaincc, argnums=1)(1.0, 0.5) == -math.exp(-0.5)  # e^-x
        True""")
stdtr = _ufunc(_P.stdtr, _sc.stdtr, """\
        >>> round(wg.grad(special.stdtr, argnums=1)(1.0, 0.0), 12)    # Cauchy: 1/π
        0.318309886184""")
betainc = _ufunc(_P.betainc, _sc.betainc, """\
        >>> wg.grad(special.betainc, argnums=2)(2.0, 1.0, 0.5)     # x²: 2x
        1.0""")
# (SciPy has betaincc from 1.11 on; before, the primitive's own fallback)
betaincc = _ufunc(_P.betaincc, getattr(_sc, "betaincc", _P._betaincc_np), """\
        >>> wg.grad(special.betaincc, argnums=2)(2.0, 1.0, 0.5)    # 1 - x²: -2x
        -1.0""")


def _fixed_order(name, n, x, kind):
    """(order, x) for polygamma, iv, jv, ...: the order one finite constant of `kind`
    ("real", "integer" or "non-negative integer"; an array of one repeated value is fine:
    x is broadcast to its shape, as SciPy's ufunc does), never a traced value."""
    if type(n) is _Node:
        n = n._concrete(f"used as the order of {name}")
    shape = _np.shape(n)
    orders = _np.unique(_np.asarray(n))
    ok = orders.size == 1 and orders.dtype.kind in "iuf" and _np.isfinite(orders[0])
    if ok and kind != "real":
        ok = orders[0] == int(orders[0]) and (kind == "integer" or orders[0] >= 0)
    if not ok:
        raise ValueError(f"{name} on traced values takes one finite {kind} order, got {n!r}")
    x = _wnp._array_like(x)
    if shape and _np.broadcast_shapes(shape, _np.shape(x)) != _np.shape(x):
        x = _wnp.broadcast_to(x, _np.broadcast_shapes(shape, _np.shape(x)))
    return _P._order(orders[0]), x


def _order_call(name, scipy_fn, of, n, x, kind="real"):
    """SciPy's ``scipy_fn(n, x)`` of a fixed order n (polygamma, iv, jv, ...): SciPy's own
    on plain x, else ``of(x, order)`` on the traced one (see `_fixed_order`)."""
    if not _traced(x):
        if _traced(n):
            raise TypeError(f"{name}: the order is not differentiable; pass a number")
        return scipy_fn(n, x)
    n, x = _fixed_order(name, n, x, kind)
    return of(x, n)


@_accepts_duals
def polygamma(n, x):
    """ψ⁽ⁿ⁾(x), the n-th derivative of the digamma function (SciPy's ``polygamma``).

    `n` is a fixed non-negative integer (not differentiated); the derivative in `x` is
    ``polygamma(n + 1, x)``.  On traced float32 values the result stays float32 (SciPy's
    own gives float64).

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy import special
        >>> round(float(special.polygamma(1, 1.0)), 6), round(wg.grad(lambda x: special.polygamma(1, x))(1.0), 6)
        (1.644934, -2.404114)
    """
    return _order_call("polygamma", _sc.polygamma,
                       lambda x, n: _P.digamma(x) if n == 0 else _P.polygamma(x, n=n),
                       n, x, "non-negative integer")


@_accepts_duals
def iv(v, x):
    """Iᵥ(x), the modified Bessel function of the first kind of real order v (SciPy's
    ``iv``), for real x.

    `v` is a fixed number (not differentiated); the derivative in `x` is
    (Iᵥ₋₁(x) + Iᵥ₊₁(x))/2, Bessel functions again, so every order of derivative is exact,
    at x = 0 too.  On traced float32 values the result stays float32.

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy import special
        >>> d = wg.grad(lambda x: special.iv(2, x))
        >>> round(d(1.0), 6), round(float(special.iv(1, 1.0) + special.iv(3, 1.0)) / 2, 6)
        (0.293664, 0.293664)
    """
    return _order_call("iv", _sc.iv, _P._iv_of, v, x)


@_accepts_duals
def ive(v, x):
    """e^-|x| Iᵥ(x), the exponentially scaled Bessel function (SciPy's ``ive``), which
    does not overflow for large x; for real x.

    `v` is a fixed number (not differentiated); the derivative in `x` is
    (iveᵥ₋₁(x) + iveᵥ₊₁(x))/2 - sign(x) iveᵥ(x) (at 0 the mean of its one-sided slopes).

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy import special
        >>> round(wg.grad(lambda x: special.ive(0, x))(1000.0), 9)    # e^-x I₀ ≈ 1/√(2πx)
        -6.31e-06
    """
    return _order_call("ive", _sc.ive, _P._ive_of, v, x)


@_accepts_duals
def jv(v, x):
    """Jᵥ(x), the Bessel function of the first kind of real order v (SciPy's ``jv``).

    `v` is a fixed number (not differentiated); the derivative in `x` is
    (Jᵥ₋₁(x) - Jᵥ₊₁(x))/2, Bessel functions again, to every order.  As SciPy's: nan for
    x < 0 unless v is whole.  On traced float32 values the result stays float32.

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy import special
        >>> d = wg.grad(lambda x: special.jv(2, x))
        >>> round(d(1.0), 6), round(float(special.jv(1, 1.0) - special.jv(3, 1.0)) / 2, 6)
        (0.210244, 0.210244)
    """
    return _order_call("jv", _sc.jv, _P._jv_of, v, x)


@_accepts_duals
def jn(n, x):
    """Jₙ(x) of an integer order n: SciPy's ``jn``, which is ``jv`` (see there).

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy import special
        >>> wg.grad(lambda x: special.jn(1, x))(0.0)        # (J₀ - J₂)/2 at 0
        0.5
    """
    return _order_call("jn", _sc.jn, _P._jv_of, n, x)


@_accepts_duals
def yv(v, x):
    """Yᵥ(x), the Bessel function of the second kind of real order v, for x > 0 (SciPy's
    ``yv``; nan for x < 0, -inf at 0).

    `v` is a fixed number (not differentiated); the derivative in `x` is
    (Yᵥ₋₁(x) - Yᵥ₊₁(x))/2.  On traced float32 values the result stays float32.

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy import special
        >>> d = wg.grad(lambda x: special.yv(2, x))
        >>> round(d(1.0), 6), round(float(special.yv(1, 1.0) - special.yv(3, 1.0)) / 2, 6)
        (2.520152, 2.520152)
    """
    return _order_call("yv", _sc.yv, _P._yv_of, v, x)


@_accepts_duals
def yn(n, x):
    """Yₙ(x) of an integer order n (SciPy's ``yn``), as ``yv``; on traced values the order
    must be whole (SciPy truncates it, with a warning).

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy import special
        >>> wg.grad(lambda x: special.yn(0, x))(1.0) == -float(special.y1(1.0))
        True
    """
    return _order_call("yn", _sc.yn, _P._yv_of, n, x, "integer")


@_accepts_duals
def multigammaln(a, d):
    """The log of the multivariate gamma function of dimension d (an integer constant):
    d(d-1)/4 log π + Σ_{j=1..d} gammaln(a - (j-1)/2) (SciPy's ``multigammaln``).

    Example:
        >>> import wengert as wg
        >>> from wengert.scipy import special
        >>> float(special.multigammaln(2.0, 1)) == float(special.gammaln(2.0))
        True
    """
    if not _traced(a, d):
        return _sc.multigammaln(a, d)
    if type(d) is _Node:
        raise TypeError("multigammaln: the dimension d is an integer, not differentiable")
    if _np.ndim(d) or d != _np.floor(d):
        raise ValueError("d should be a positive integer (dimension)")     # (SciPy's)
    d = int(d)
    total = d * (d - 1) / 4 * _np.log(_np.pi)
    for j in range(d):
        total = total + _P.gammaln(a - j / 2)
    return total


@_accepts_duals
def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """``log(sum(b * exp(a)))`` over `axis`, without overflow: SciPy's ``logsumexp``
    (every argument, `b` and `return_sign` included), differentiable in `a` and `b`.
    The same function as `wengert.numpy.logsumexp` on traced values.

    Example:
        >>> import wengert as wg, numpy as np
        >>> from wengert.scipy import special
        >>> wg.grad(special.logsumexp)(np.zeros(4))        # the softmax
        array([0.25, 0.25, 0.25, 0.25])
    """
    if not _traced(a, b):
        return _sc.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign)
    a = _wnp.asarray(a)
    if a.ndim == 0:                 # SciPy reads a number as one element along axis 0
        a = _wnp.reshape(a, (1,))
    return _wnp.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign)


def _over_axis(fn, x, axis):
    # SciPy's axis=None is every element at once, and a tuple of axes every element of each
    # slice across them: those axes joined last into one (`_axes_last`), shaped back after
    x = _wnp.asarray(x)
    if x.ndim == 0 and axis in (None, 0, -1):       # (SciPy's: one element)
        return _wnp.reshape(fn(_wnp.reshape(x, (1,)), axis=0), ())
    if axis is None:
        axis = tuple(range(x.ndim))
    if not isinstance(axis, tuple):
        return fn(x, axis=axis)
    flat, back = _axes_last(x, _wnp._norm_axis(axis, x.ndim, fn.__name__))
    return back(fn(flat, axis=-1))


@_accepts_duals
def softmax(x, axis=None):
    """exp(x) / sum(exp(x)) over `axis` (None: all elements), SciPy's ``softmax``.

    Example:
        >>> import wengert as wg, numpy as np
        >>> from wengert.scipy import special
        >>> special.softmax(np.zeros(2)).tolist()
        [0.5, 0.5]
    """
    if not _traced(x):
        return _sc.softmax(x, axis=axis)
    from .. import nn
    return _over_axis(nn.softmax, x, axis)


@_accepts_duals
def log_softmax(x, axis=None):
    """x - logsumexp(x) over `axis` (None: all elements), SciPy's ``log_softmax``.

    Example:
        >>> import wengert as wg, numpy as np
        >>> from wengert.scipy import special
        >>> wg.grad(lambda x: special.log_softmax(x)[0])(np.zeros(2)).tolist()
        [0.5, -0.5]
    """
    if not _traced(x):
        return _sc.log_softmax(x, axis=axis)
    from .. import nn
    return _over_axis(nn.log_softmax, x, axis)


# ---- JAX's own names in jax.scipy.special ------------------------------------------------------
@_accepts_duals
def bessel_jn(z, *, v, n_iter=50):
    """J₀(z), J₁(z), ..., Jᵥ(z), the Bessel functions of the first kind of the orders 0 to
    `v`, stacked: shape ``(v + 1,) + z.shape``, in z's float dtype (float64 for
    integers), as JAX's ``jax.scipy.special.bessel_jn``.  Each is `jv`, SciPy's value, so
    it is accurate at every z, where JAX's backward recurrence of `n_iter` steps is nan at
    z = 0 and loses digits once |z| nears n_iter (6e-5 at z = 40 with the default 50):
    `n_iter` is checked and changes nothing.  Differentiable in z to every order
    (Jₙ' = (Jₙ₋₁ - Jₙ₊₁)/2).

    Example:
        >>> import wengert as wg, numpy as np
        >>> from wengert.scipy import special
        >>> special.bessel_jn(np.array([0.0, 1.0]), v=2).round(6).tolist()
        [[1.0, 0.765198], [0.0, 0.440051], [0.0, 0.114903]]
        >>> round(float(wg.grad(lambda z: special.bessel_jn(z, v=1)[0])(1.0)), 6)   # -J₁
        -0.440051
    """
    if isinstance(v, bool) or not isinstance(v, (int, _np.integer)):
        raise TypeError(f"bessel_jn: the order v must be an integer, got {v!r}")
    if v < 0:
        raise ValueError(f"bessel_jn: the order v must be non-negative, got {v}")
    if isinstance(n_iter, bool) or not isinstance(n_iter, (int, _np.integer)) or n_iter < 1:
        raise ValueError(f"bessel_jn: n_iter must be a positive integer, got {n_iter!r}")
    dtype = _wnp.result_type(z)
    if dtype.kind not in "iuf":
        raise ValueError(f"bessel_jn: z must be real, got {dtype}")
    dtype = dtype if dtype.kind == "f" else _np.dtype(_np.float64)
    if not _traced(z):
        z = _np.asarray(z, dtype)
        return _np.stack([_sc.jv(n, z) for n in range(v + 1)]).astype(dtype)
    z = _wnp.astype(z, dtype)
    return _wnp.stack([jv(n, z) for n in range(v + 1)])


# SciPy's other functions: SciPy's on plain values, a clear error on traced ones
__getattr__ = _rest_of(_sc, globals())
