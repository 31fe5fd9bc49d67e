"""JAX's ``jax.random`` on wengert's graph: functional, splittable keys, so that code written
with it ports by its imports (``import wengert as jax`` makes ``jax.random.normal(key, ...)``
this module's).

A **key** is a NumPy ``uint32`` array of shape (2,), JAX's raw key: ``PRNGKey(seed)`` and
``key(seed)`` both make one (wengert has no typed keys, so `key_data` and `wrap_key_data`
hand the array through, and `key_dtype` is uint32).  A key is spent by drawing from it;
`split` and `fold_in` derive new keys whose streams are independent of it and of each
other.  The same key always gives
the same numbers: eagerly, under `wg.compile`/`wg.jit` (where a key argument is traced
without a value and each draw is a node of the graph, computed from the key every time the
compiled code runs) and under `wg.vmap` (a batch of keys is drawn from at once, and each
example gets what it would get alone).

The bits come from Philox4x64-10, NumPy's counter-based generator, keyed by the key
(wengert.primitives.random), not from JAX's Threefry: the numbers have the same
distributions as JAX's, not the same values.

**Derivatives.**  Parameters that JAX reparameterises are differentiable, with the key
fixed: ``normal(key) * sigma + mu``; `uniform`'s ``minval`` and ``maxval``;
`truncated_normal`'s bounds; `triangular`'s three parameters (by its quantile
function); `gamma`'s and `loggamma`'s shape ``a`` by JAX's implicit reparameterisation
gradient, to second order, and so `beta`, `dirichlet`, `t`, `chisquare`, `f`, and the
``p`` of `generalized_normal` and `ball`; `multivariate_normal`'s mean and covariance;
`double_sided_maxwell`'s location and scale; `wald`'s mean (as JAX's, the derivative of
the draw, which jumps with the choice between two roots: its average is not that of
the mean); the scale parameters of `weibull_min`, `pareto`, `rayleigh` and
`lognormal`.  Discrete draws (`bernoulli`, `categorical`, `randint`, `choice`'s
indices, `permutation`'s order, `poisson`, `geometric`, `binomial`, `multinomial`) have
a zero derivative with respect to their probabilities, counts, rates or logits, as in
JAX (a ``stop_gradient``); `choice` and `permutation` of an array are differentiable in
the array's entries.  A key has no derivative.

Example:
    >>> import wengert as wg, wengert.numpy as wnp
    >>> from wengert import random
    >>> key = random.PRNGKey(0)
    >>> key, sub = random.split(key)
    >>> eps = random.normal(sub, (3,))
    >>> eps.shape, eps.dtype
    ((3,), dtype('float64'))
    >>> def loss(mu, key):          # a Monte Carlo estimate of E[(mu + eps)^2]
    ...     return wnp.mean((mu + random.normal(key, (1000,))) ** 2)
    >>> bool(wg.grad(loss)(0.5, key) == wg.jit(wg.grad(loss))(0.5, key))
    True
"""
from __future__ import annotations

import math as _math
import operator as _operator

import numpy as _np

from . import numpy as _wnp
from .graph.node import Node as _Node
from .primitives import random as _R
from .primitives.registry import broadcasts_to, shape_of as _shape_of
from .primitives.scalar import stop_gradient as _stop_gradient

__all__ = [
    # keys
    "PRNGKey", "key", "split", "fold_in", "key_data", "wrap_key_data", "clone", "key_impl",
    "key_dtype",
    # draws
    "normal", "uniform", "bernoulli", "categorical", "randint", "choice", "permutation",
    "truncated_normal", "multivariate_normal", "gamma", "loggamma", "beta", "dirichlet",
    "exponential", "laplace", "logistic", "gumbel", "poisson", "t", "cauchy", "rademacher",
    "orthogonal", "bits", "chisquare", "f", "lognormal", "pareto", "weibull_min",
    "rayleigh", "maxwell", "geometric", "binomial", "multinomial", "triangular", "wald",
    "generalized_normal", "double_sided_maxwell", "ball",
]

_F64 = _np.dtype(_np.float64)
_I64 = _np.dtype(_np.int64)
_U32 = _np.dtype(_np.uint32)


# ---- checking arguments ----------------------------------------------------------------------
def _dtype_of(x):
    return x.dtype if type(x) is _Node or isinstance(x, _np.ndarray) else _np.asarray(x).dtype


def _check_key(key, name):
    """A single key (uint32, shape (2,)): anything else is refused with what a key is."""
    if type(key) is not _Node:
        key = _np.asarray(key)
    shape, dtype = tuple(key.shape), key.dtype
    if dtype != _U32:
        hint = ""
        if type(key) is _Node and dtype.kind == "f" and shape == (2,):
            # (wg.grad differentiates integer arguments as numbers: a key it was asked to
            # differentiate arrives as floats)
            hint = ("; a key has no derivative: differentiate with respect to the other "
                    "arguments (argnums)")
        raise TypeError(f"{name}: a key is a uint32 array of shape (2,), as PRNGKey(seed), "
                        f"key(seed) and split(key) give; got a {dtype} array of shape "
                        f"{shape}{hint}")
    if shape != (2,):
        if shape[-1:] == (2,):
            raise ValueError(f"{name} takes a single key, of shape (2,), but was given a "
                             f"key array of shape {shape}: map over it with wg.vmap, "
                             f"vmap(lambda k: {name}(k, ...))(keys), as in JAX")
        raise TypeError(f"{name}: a key is a uint32 array of shape (2,), as PRNGKey(seed) "
                        f"gives; got shape {shape}")
    return key


def _shape(shape, name, what="shape"):
    """A shape as a tuple of non-negative ints (an int is a shape of one axis)."""
    if isinstance(shape, (int, _np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        out = tuple(_operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"{name}: {what} must be a tuple of ints, got {shape!r}") from None
    if any(d < 0 for d in out):
        raise ValueError(f"{name}: {what} {out} has a negative dimension")
    return out


def _float_dtype(dtype, name, complex_ok=False):
    """The result dtype: float64 by default (wengert's, JAX's with jax_enable_x64)."""
    dtype = _F64 if dtype is None else _np.dtype(dtype)
    if dtype.kind != "f" and not (complex_ok and dtype.kind == "c"):
        kinds = "a float or complex" if complex_ok else "a float"
        raise ValueError(f"dtype argument to `{name}` must be {kinds} dtype, got {dtype}")
    return dtype


def _int_dtype(dtype, name):
    dtype = _I64 if dtype is None else _np.dtype(dtype)
    if dtype.kind not in "iu":
        raise TypeError(f"{name}: dtype must be an integer dtype, got {dtype}")
    return dtype


def _as_float(x, dtype, name, what):
    """A real parameter in `dtype`: integers are converted (they have no derivative); a
    traced float keeps its derivative through the cast."""
    if type(x) is _Node:
        if x.dtype.kind == "c":
            raise TypeError(f"{name}: {what} must be real, got {x.dtype}")
        return x if x.dtype == dtype else x.astype(dtype)
    x = _np.asarray(x)
    if x.dtype.kind not in "biuf":
        raise TypeError(f"{name}: {what} must be a real number or array, got {x.dtype}")
    return x.astype(dtype, copy=False)


def _check_shape(name, shape, **params):
    """Each parameter's shape must broadcast to `shape`, the draw's (JAX's rule): naming
    both shapes where one does not."""
    for what, x in params.items():
        own = tuple(_shape_of(x))
        if not broadcasts_to(own, shape):
            raise ValueError(f"{name}: {what} of shape {own} does not broadcast to the shape "
                             f"argument {shape}; give a shape that it broadcasts to, or "
                             f"shape=None for the parameters' own")


def _default_shape(name, shape, **params):
    """`shape` checked against the parameters, or theirs broadcast together if None."""
    if shape is None:
        try:
            return _np.broadcast_shapes(*[tuple(_shape_of(x)) for x in params.values()])
        except ValueError:
            shapes = ", ".join(f"{k} {tuple(_shape_of(x))}" for k, x in params.items())
            raise ValueError(f"{name}: the parameters' shapes do not broadcast together: "
                             f"{shapes}") from None
    shape = _shape(shape, name)
    _check_shape(name, shape, **params)
    return shape


def _concrete_int(x, name, what):
    """An int that decides a shape: it must be known when traced."""
    if type(x) is _Node:
        if x.value is None:
            raise TypeError(f"{name}: {what} decides the result's shape, so it must be a "
                            "concrete int, not a value traced without one (make it a "
                            "static argument)")
        x = x.value
    return _operator.index(_np.asarray(x).item()) if _np.ndim(x) == 0 else None


# ---- keys ---------------------------------------------------------------------------------------
def PRNGKey(seed):
    """The key of an integer seed: a uint32 array of shape (2,) holding the seed's high and
    low 32 bits, as JAX's ``PRNGKey`` (``PRNGKey(0)`` is ``[0, 0]``, a negative seed is
    taken in two's complement).  The seed may be traced (an argument of a compiled
    function).

    Example:
        >>> PRNGKey(0), PRNGKey(7)
        (array([0, 0], dtype=uint32), array([0, 7], dtype=uint32))
    """
    if type(seed) is _Node:
        # (a float too: wg.jit traces a Python int argument as a float; its integer part)
        if seed.dtype.kind not in "iuf" or seed.shape != ():
            raise TypeError(f"PRNGKey: the seed must be an integer scalar, got a {seed.dtype} "
                            f"value of shape {seed.shape}")
        return _R.random_key(seed)
    if isinstance(seed, int) and not isinstance(seed, bool) and \
            not -2 ** 63 <= seed < 2 ** 64:
        raise OverflowError(f"PRNGKey: the seed {seed} does not fit in 64 bits")
    if _np.ndim(seed) != 0:
        raise TypeError(f"PRNGKey accepts a scalar seed, but was given an array of shape "
                        f"{_np.shape(seed)}: use wg.vmap for a batch of seeds")
    if isinstance(seed, bool) or _np.asarray(seed).dtype.kind not in "iu":
        raise TypeError(f"PRNGKey: the seed must be an integer, got {seed!r}")
    return _R.random_key(_np.asarray(seed))


def key(seed, *, impl=None):
    """A key from an integer seed: the same as `PRNGKey` (JAX's ``key`` makes a typed key;
    wengert's keys are all raw uint32 arrays).  ``impl`` must be None or wengert's one
    implementation, ``"philox4x64"`` (see `key_impl`).

    Example:
        >>> key(0)
        array([0, 0], dtype=uint32)
    """
    _check_impl(impl, "key")
    return PRNGKey(seed)


_IMPL = "philox4x64"          # the name `key_impl` gives wengert's one implementation


def _check_impl(impl, name):
    if impl is not None and impl != _IMPL:
        raise ValueError(f"{name}: impl={impl!r} is not offered: wengert's keys have one "
                         f"implementation ({_IMPL!r}, NumPy's Philox), so leave impl=None")


def split(key, num=2):
    """`num` new keys derived from `key` (an int, or a tuple for a shape of keys): an array
    of shape ``num + (2,)``.  Their streams are independent of each other and of key's
    own; the usual step is ``key, sub = split(key)``, then draw from ``sub``.

    Example:
        >>> k1, k2 = split(PRNGKey(0))
        >>> k1.dtype, split(PRNGKey(0), 4).shape, split(PRNGKey(0), (2, 3)).shape
        (dtype('uint32'), (4, 2), (2, 3, 2))
    """
    key = _check_key(key, "split")
    return _R.random_split(key, shape=_shape(num, "split", "num"))


def fold_in(key, data):
    """The key derived from `key` and an integer `data` (a step number, a worker's index):
    ``fold_in(key, i)`` for i = 0, 1, ... are independent keys, so a loop can make one per
    step without carrying a key along.  `data` may be traced (a loop counter); it is
    taken modulo 2**64 (JAX takes it as a uint32), and a float is cut to its integer part,
    as JAX does (`wg.jit` traces a Python int argument as a float).

    Example:
        >>> a, b = fold_in(PRNGKey(0), 1), fold_in(PRNGKey(0), 2)
        >>> a.shape, bool((a == b).all())
        ((2,), False)
    """
    key = _check_key(key, "fold_in")
    if type(data) is _Node:
        if data.dtype.kind not in "iuf" or data.shape != ():
            raise TypeError(f"fold_in: data must be an integer scalar, got a {data.dtype} "
                            f"value of shape {data.shape}")
        return _R.random_fold_in(key, data)
    if _np.ndim(data) != 0:
        raise TypeError(f"fold_in accepts a scalar, but was given an array of shape "
                        f"{_np.shape(data)}: use wg.vmap for a batch")
    if isinstance(data, int) and not isinstance(data, bool) and \
            not -2 ** 63 <= data < 2 ** 64:
        raise OverflowError(f"fold_in: data {data} does not fit in 64 bits")
    if isinstance(data, bool) or _np.asarray(data).dtype.kind not in "iuf":
        raise TypeError(f"fold_in: data must be an integer, got {data!r}")
    return _R.random_fold_in(key, _np.asarray(data))


def key_data(keys):
    """The uint32 words of a key array: the array itself, since wengert's keys are raw
    (JAX's ``key_data`` unwraps a typed key).

    Example:
        >>> key_data(PRNGKey(3))
        array([0, 3], dtype=uint32)
    """
    return _check_key_array(keys, "key_data")


def wrap_key_data(key_bits_array, *, impl=None):
    """A key array from its uint32 words (shape (..., 2)): checked and handed back, as
    wengert's keys are the words themselves.

    Example:
        >>> wrap_key_data(_np.array([0, 3], _np.uint32))
        array([0, 3], dtype=uint32)
    """
    _check_impl(impl, "wrap_key_data")
    return _check_key_array(key_bits_array, "wrap_key_data")


def clone(key):
    """The key itself (JAX's ``clone`` copies a key for its reuse checker; wengert has
    none, and keys are never changed in place).

    Example:
        >>> clone(PRNGKey(1))
        array([0, 1], dtype=uint32)
    """
    return _check_key_array(key, "clone")


def key_impl(keys):
    """The name of the implementation behind a key array: ``"philox4x64"``, wengert's
    only one (JAX answers ``"threefry2x32"`` for its default keys).  `impl` arguments
    accept this name, or None.

    Example:
        >>> key_impl(PRNGKey(0)), key_impl(split(PRNGKey(0), 3))
        ('philox4x64', 'philox4x64')
    """
    _check_key_array(keys, "key_impl")
    return _IMPL


def key_dtype(impl_spec=None):
    """The dtype of wengert's keys: ``uint32``, since a key is a raw uint32 array of shape
    (..., 2) (JAX's ``key_dtype`` gives the dtype of its typed keys, such as
    ``key<fry>``, which wengert does not have).  So ``issubdtype(key.dtype, key_dtype())``
    holds for every key here; `impl_spec` must be None or ``"philox4x64"`` (see
    `key_impl`).

    Example:
        >>> key_dtype(), PRNGKey(0).dtype == key_dtype()
        (dtype('uint32'), True)
    """
    _check_impl(impl_spec, "key_dtype")
    return _U32


def _check_key_array(keys, name):
    if type(keys) is not _Node:
        keys = _np.asarray(keys)
    if keys.dtype != _U32 or tuple(keys.shape)[-1:] != (2,):
        raise TypeError(f"{name}: key data is a uint32 array of shape (..., 2); got a "
                        f"{keys.dtype} array of shape {tuple(keys.shape)}")
    return keys


# ---- continuous draws -----------------------------------------------------------------------
def _draw(key, dist, shape, dtype):
    return _numpy_scalar(_R.random_draw(key, dist=dist, shape=shape, dtype=dtype))


def _numpy_scalar(x):
    """A draw of shape () as a NumPy scalar (as JAX's is a 0-d array, with a shape and a
    dtype): a primitive evaluated on values hands back Python's float or bool."""
    t = type(x)
    if t is float:
        return _np.float64(x)
    if t is bool:
        return _np.bool_(x)
    if t is _np.ndarray and not x.ndim:
        return x[()]
    return x


def normal(key, shape=(), dtype=None):
    """Standard normal numbers of the given shape (float64 by default; a complex dtype
    gives real and imaginary parts of variance 1/2 each, as in JAX).  A normal of mean mu
    and deviation sigma is ``mu + sigma * normal(key, shape)``, differentiable in both.

    Example:
        >>> z = normal(PRNGKey(0), (10000,))
        >>> z.shape, bool(abs(z.mean()) < 0.05), bool(abs(z.std() - 1) < 0.05)
        ((10000,), True, True)
        >>> normal(PRNGKey(0), (2,), dtype="complex128").dtype
        dtype('complex128')
    """
    key = _check_key(key, "normal")
    shape = _shape(shape, "normal")
    dtype = _float_dtype(dtype, "normal", complex_ok=True)
    if dtype.kind == "c":
        real = _np.empty(0, dtype).real.dtype
        parts = _draw(key, "normal", shape + (2,), real) * real.type(_math.sqrt(0.5))
        return parts[..., 0] + 1j * parts[..., 1]
    return _draw(key, "normal", shape, dtype)


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Uniform numbers in [minval, maxval) of the given shape: ``minval + u * (maxval -
    minval)`` with u uniform in [0, 1), so differentiable in minval and maxval (traced
    ones too), whose shapes must broadcast to `shape`.

    Example:
        >>> import wengert as wg
        >>> u = uniform(PRNGKey(0), (5,), minval=2.0, maxval=3.0)
        >>> bool(((2 <= u) & (u < 3)).all())
        True
        >>> g = wg.grad(lambda b: uniform(PRNGKey(0), minval=0.0, maxval=b))(2.0)
        >>> bool(g == uniform(PRNGKey(0)))              # d/d maxval = u
        True
    """
    key = _check_key(key, "uniform")
    shape = _shape(shape, "uniform")
    dtype = _float_dtype(dtype, "uniform")
    _check_shape("uniform", shape, minval=minval, maxval=maxval)
    lo = _as_float(minval, dtype, "uniform", "minval")
    hi = _as_float(maxval, dtype, "uniform", "maxval")
    u = _draw(key, "uniform", shape, dtype)
    return _broadcast(lo + u * (hi - lo), shape)


def _broadcast(x, shape):
    return x if tuple(_shape_of(x)) == shape else _wnp.broadcast_to(x, shape)


def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Standard normal numbers truncated to [lower, upper], by the quantile function of
    the truncated distribution at a uniform draw (computed in logs, on the side of zero
    where the tail is, so that a far interval such as [10, 11] keeps its digits).
    Differentiable in the bounds, as in JAX.  `shape` defaults to the bounds' shapes
    broadcast together.  Needs SciPy.

    Example:
        >>> import wengert as wg
        >>> z = truncated_normal(PRNGKey(0), -1.0, 1.0, (1000,))
        >>> bool(((-1 <= z) & (z <= 1)).all())
        True
        >>> bool((truncated_normal(PRNGKey(0), 10.0, 11.0, (100,)) < 11).all())
        True
        >>> g = wg.grad(lambda a: truncated_normal(PRNGKey(0), a, a + 1.0))(0.0)
        >>> bool(0 < g < 1)
        True
    """
    key = _check_key(key, "truncated_normal")
    dtype = _float_dtype(dtype, "truncated_normal")
    shape = _default_shape("truncated_normal", shape, lower=lower, upper=upper)
    lo = _as_float(lower, _F64, "truncated_normal", "lower")
    hi = _as_float(upper, _F64, "truncated_normal", "upper")
    z = _R.truncated_normal_ppf(_draw(key, "uniform", shape, _F64), lo, hi)
    return _numpy_scalar(_cast(_broadcast(z, shape), dtype))


def _cast(x, dtype):
    if _dtype_of(x) == dtype:
        return x
    return x.astype(dtype) if type(x) is _Node or isinstance(x, _np.ndarray) else \
        dtype.type(x)


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    """Normal vectors with the given mean (..., n) and covariance (..., n, n): ``mean +
    A z`` with ``A Aᵀ = cov`` (``method``: "cholesky", or "eigh" and "svd" for a
    covariance that is only semi-definite) and z standard normal.  The result has shape
    ``shape + (n,)``, `shape` defaulting to the batch shapes of mean and cov broadcast
    together.  Differentiable in mean and cov.

    Example:
        >>> import numpy as np
        >>> cov = np.array([[2.0, 0.5], [0.5, 1.0]])
        >>> x = multivariate_normal(PRNGKey(0), np.zeros(2), cov, (20000,))
        >>> x.shape, bool(np.allclose(np.cov(x.T), cov, atol=0.05))
        ((20000, 2), True)
    """
    key = _check_key(key, "multivariate_normal")
    dtype = _float_dtype(dtype, "multivariate_normal")
    if method not in ("cholesky", "eigh", "svd"):
        raise ValueError(f"multivariate_normal: method must be one of 'cholesky', 'eigh', "
                         f"'svd', got {method!r}")
    mean = _as_float(mean, dtype, "multivariate_normal", "mean")
    cov = _as_float(cov, dtype, "multivariate_normal", "cov")
    ms, cs = tuple(_shape_of(mean)), tuple(_shape_of(cov))
    if len(ms) < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == "
                         f"{len(ms)}")
    n = ms[-1]
    if len(cs) < 2 or cs[-2:] != (n, n):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n} "
                         f"(mean's last axis), but got cov.shape == {cs}")
    if shape is None:
        try:
            shape = _np.broadcast_shapes(ms[:-1], cs[:-2])
        except ValueError:
            raise ValueError(f"multivariate_normal: the batch shapes of mean {ms[:-1]} and "
                             f"cov {cs[:-2]} do not broadcast together") from None
    else:
        shape = _shape(shape, "multivariate_normal")
        for what, own in (("mean's batch shape", ms[:-1]), ("cov's batch shape", cs[:-2])):
            if not broadcasts_to(own, shape):
                raise ValueError(f"multivariate_normal: {what} {own} does not broadcast to "
                                 f"the shape argument {shape}")
    if method == "cholesky":
        factor = _wnp.linalg.cholesky(cov)
    elif method == "eigh":
        w, v = _wnp.linalg.eigh(cov)
        factor = v * _wnp.sqrt(_wnp.maximum(w, 0.0))[..., None, :]
    else:
        u, s, _ = _wnp.linalg.svd(cov)
        factor = u * _wnp.sqrt(s)[..., None, :]
    z = _draw(key, "normal", shape + (n,), dtype)
    return mean + _wnp.matmul(factor, z[..., None])[..., 0]


def loggamma(key, a, shape=None, dtype=None):
    """The logarithms of Gamma(a, 1) draws: for a small `a` (1e-3), where the draws
    themselves underflow to 0, their logarithms are still accurate.  Marsaglia and
    Tsang's method (for a < 1, Gamma(a + 1) times U^(1/a), in logs).  Differentiable in
    `a` by JAX's implicit reparameterisation gradient: with u = P(a, z) held fixed (P the
    distribution function), dz/da = -(∂P/∂a)/(∂P/∂z), computed without SciPy's help for
    ∂P/∂a (wengert.primitives.incomplete), so the derivative needs SciPy.  Its own
    derivative, the second in `a`, is the derivative along that path (z moving with a
    at fixed P), as JAX's forward derivative of its gradient is; a third derivative is
    not implemented.  a <= 0 gives -inf (a = 0) or nan, as JAX.

    Example:
        >>> import wengert as wg
        >>> float(wg.grad(lambda a: loggamma(PRNGKey(0), a))(2.0)) > 0
        True
        >>> f = lambda a: loggamma(PRNGKey(0), a)
        >>> bool(abs(wg.grad(wg.grad(f))(2.0) - wg.jacfwd(wg.grad(f))(2.0)) < 1e-12)
        True
    """
    return _loggamma(key, a, shape, dtype, "loggamma")


def _loggamma(key, a, shape, dtype, name):
    key = _check_key(key, name)
    dtype = _float_dtype(dtype, name)
    shape = _default_shape(name, shape, a=a)
    a = _as_float(a, dtype, name, "a")
    return _numpy_scalar(_R.random_loggamma(key, a, shape=shape, dtype=dtype))


def gamma(key, a, shape=None, dtype=None):
    """Gamma(a, 1) draws (shape `a`, scale 1; scale θ by multiplying by θ), differentiable
    in `a` by the implicit reparameterisation gradient, as in JAX (see `loggamma`).

    Example:
        >>> import wengert as wg
        >>> x = gamma(PRNGKey(0), 3.0, (20000,))
        >>> bool(abs(x.mean() - 3) < 0.05), bool(abs(x.var() - 3) < 0.15)
        (True, True)
        >>> # d E[x]/da = 1: the average derivative of the draws
        >>> g = wg.grad(lambda a: gamma(PRNGKey(0), a, (20000,)).mean())(3.0)
        >>> bool(abs(g - 1) < 0.02)
        True
    """
    return _wnp.exp(_loggamma(key, a, shape, dtype, "gamma"))


def chisquare(key, df, shape=None, dtype=None):
    """Chi-square draws with `df` degrees of freedom: 2 Gamma(df/2), differentiable in df.

    Example:
        >>> x = chisquare(PRNGKey(0), 4.0, (20000,))
        >>> bool(abs(x.mean() - 4) < 0.1)
        True
    """
    return 2.0 * _wnp.exp(_loggamma(key, _half(df), shape, dtype, "chisquare"))


def _half(x):
    return x / 2 if type(x) is _Node else _np.asarray(x, _F64) / 2


def beta(key, a, b, shape=None, dtype=None):
    """Beta(a, b) draws: X/(X + Y) with X ~ Gamma(a), Y ~ Gamma(b) (from two keys split
    from `key`), in logs, so that small a and b do not give 0/0.  Differentiable in a and
    b (implicitly, through gamma).

    Example:
        >>> x = beta(PRNGKey(0), 2.0, 3.0, (20000,))
        >>> bool(abs(x.mean() - 0.4) < 0.01)
        True
    """
    key = _check_key(key, "beta")
    dtype = _float_dtype(dtype, "beta")
    shape = _default_shape("beta", shape, a=a, b=b)
    ka, kb = split(key)
    la, lb = _loggamma(ka, a, shape, dtype, "beta"), _loggamma(kb, b, shape, dtype, "beta")
    return _wnp.exp(la - _wnp.logaddexp(la, lb))


def dirichlet(key, alpha, shape=None, dtype=None):
    """Dirichlet(alpha) draws (alpha's last axis holds the concentrations): normalised
    Gamma draws, as a softmax of their logarithms so that small concentrations keep
    their digits.  The result has shape ``shape + alpha.shape[-1:]``, `shape` defaulting
    to ``alpha.shape[:-1]``.  Differentiable in alpha.

    Example:
        >>> import numpy as np
        >>> x = dirichlet(PRNGKey(0), np.array([1.0, 2.0, 3.0]), (5000,))
        >>> x.shape, bool(np.allclose(x.sum(-1), 1)), bool(np.allclose(x.mean(0),
        ...                                                [1/6, 2/6, 3/6], atol=0.01))
        ((5000, 3), True, True)
    """
    from . import nn
    key = _check_key(key, "dirichlet")
    dtype = _float_dtype(dtype, "dirichlet")
    own = tuple(_shape_of(alpha))
    if not own:
        raise ValueError("dirichlet requires alpha.ndim >= 1, got alpha.ndim == 0")
    if shape is None:
        shape = own[:-1]
    else:
        shape = _shape(shape, "dirichlet")
        if not broadcasts_to(own[:-1], shape):
            raise ValueError(f"dirichlet: alpha's batch shape {own[:-1]} (its shape {own} "
                             f"without the last axis) does not broadcast to the shape "
                             f"argument {shape}")
    return nn.softmax(_loggamma(key, alpha, shape + own[-1:], dtype, "dirichlet"), axis=-1)


def exponential(key, shape=(), dtype=None):
    """Exponential draws of rate 1: -log(u), u uniform in (0, 1).  Rate λ: divide by λ.

    Example:
        >>> bool(abs(exponential(PRNGKey(0), (20000,)).mean() - 1) < 0.03)
        True
    """
    return -_wnp.log(_open(key, shape, dtype, "exponential"))


def _open(key, shape, dtype, name):
    """Uniform draws in (0, 1): never 0 or 1, for the logarithms of the transforms."""
    key = _check_key(key, name)
    return _draw(key, "open", _shape(shape, name), _float_dtype(dtype, name))


def laplace(key, shape=(), dtype=None):
    """Laplace draws of location 0 and scale 1 (density exp(-|x|)/2).

    Example:
        >>> x = laplace(PRNGKey(0), (20000,))
        >>> bool(abs(x.var() - 2) < 0.1)
        True
    """
    v = 2.0 * _open(key, shape, dtype, "laplace") - 1.0
    return -_wnp.sign(v) * _wnp.log1p(-_wnp.abs(v))


def logistic(key, shape=(), dtype=None):
    """Standard logistic draws: log(u/(1 - u)), u uniform in (0, 1).

    Example:
        >>> x = logistic(PRNGKey(0), (20000,))
        >>> bool(abs(x.var() - 3.14159 ** 2 / 3) < 0.15)
        True
    """
    u = _open(key, shape, dtype, "logistic")
    return _wnp.log(u) - _wnp.log1p(-u)


def gumbel(key, shape=(), dtype=None, mode=None):
    """Standard Gumbel draws: -log(-log(u)), u uniform in (0, 1).  ``mode`` ("low" or
    "high", JAX's choice of precision for the far tail) is accepted; the uniform draws
    have 53 bits either way.

    Example:
        >>> bool(abs(gumbel(PRNGKey(0), (20000,)).mean() - 0.5772) < 0.03)
        True
    """
    _check_mode(mode, "gumbel")
    return -_wnp.log(-_wnp.log(_open(key, shape, dtype, "gumbel")))


def _check_mode(mode, name):
    if mode not in (None, "low", "high"):
        raise ValueError(f"{name}: mode must be None, 'low' or 'high', got {mode!r}")


def cauchy(key, shape=(), dtype=None):
    """Standard Cauchy draws: tan(π (u - 1/2)), u uniform in (0, 1).

    Example:
        >>> x = cauchy(PRNGKey(0), (20001,))
        >>> bool(abs(float(__import__("numpy").median(x))) < 0.05)
        True
    """
    return _wnp.tan(_math.pi * (_open(key, shape, dtype, "cauchy") - 0.5))


def t(key, df, shape=None, dtype=None):
    """Student's t draws with `df` degrees of freedom: z·√(df/(2 G)), z standard normal,
    G ~ Gamma(df/2) (from two keys split from `key`); differentiable in df.

    Example:
        >>> x = t(PRNGKey(0), 5.0, (20000,))
        >>> bool(abs(x.var() - 5 / 3) < 0.15)
        True
    """
    key = _check_key(key, "t")
    dtype = _float_dtype(dtype, "t")
    shape = _default_shape("t", shape, df=df)
    kn, kg = split(key)
    half = _half(_as_float(df, dtype, "t", "df"))
    return normal(kn, shape, dtype) * _wnp.sqrt(half / gamma(kg, half, shape, dtype))


def f(key, dfnum, dfden, shape=None, dtype=None):
    """F draws: (X₁/dfnum)/(X₂/dfden) with X₁, X₂ chi-square (two keys split from key).

    Example:
        >>> x = f(PRNGKey(0), 5.0, 10.0, (20000,))
        >>> bool(abs(x.mean() - 10 / 8) < 0.05)
        True
    """
    key = _check_key(key, "f")
    dtype = _float_dtype(dtype, "f")
    shape = _default_shape("f", shape, dfnum=dfnum, dfden=dfden)
    k1, k2 = split(key)
    return (chisquare(k1, dfnum, shape, dtype) / dfnum) / (chisquare(k2, dfden, shape, dtype)
                                                             / dfden)


def lognormal(key, sigma=1.0, shape=None, dtype=None):
    """Log-normal draws: exp(sigma z), z standard normal; differentiable in sigma.

    Example:
        >>> x = lognormal(PRNGKey(0), 0.5, (20000,))
        >>> bool(abs(x.mean() - 1.1331) < 0.02)
        True
    """
    key = _check_key(key, "lognormal")
    dtype = _float_dtype(dtype, "lognormal")
    shape = _default_shape("lognormal", shape, sigma=sigma)
    return _wnp.exp(_as_float(sigma, dtype, "lognormal", "sigma") * normal(key, shape, dtype))


def pareto(key, b, shape=None, dtype=None):
    """Pareto draws of shape b (scale 1, support x >= 1): exp(E/b), E exponential;
    differentiable in b.

    Example:
        >>> x = pareto(PRNGKey(0), 3.0, (20000,))
        >>> bool(x.min() >= 1), bool(abs(x.mean() - 1.5) < 0.03)
        (True, True)
    """
    key = _check_key(key, "pareto")
    dtype = _float_dtype(dtype, "pareto")
    shape = _default_shape("pareto", shape, b=b)
    return _wnp.exp(exponential(key, shape, dtype) / _as_float(b, dtype, "pareto", "b"))


def weibull_min(key, scale, concentration, shape=(), dtype=None):
    """Weibull draws: scale · E^(1/concentration), E exponential; differentiable in both.

    Example:
        >>> x = weibull_min(PRNGKey(0), 2.0, 1.0, (20000,))      # exponential, mean 2
        >>> bool(abs(x.mean() - 2) < 0.06)
        True
    """
    key = _check_key(key, "weibull_min")
    dtype = _float_dtype(dtype, "weibull_min")
    shape = _shape(shape, "weibull_min")
    _check_shape("weibull_min", shape, scale=scale, concentration=concentration)
    e = exponential(key, shape, dtype)
    k = _as_float(concentration, dtype, "weibull_min", "concentration")
    return _as_float(scale, dtype, "weibull_min", "scale") * e ** (1.0 / k)


def rayleigh(key, scale, shape=None, dtype=None):
    """Rayleigh draws: scale · √(2E), E exponential; differentiable in scale.

    Example:
        >>> x = rayleigh(PRNGKey(0), 1.0, (20000,))
        >>> bool(abs(x.mean() - 1.2533) < 0.02)
        True
    """
    key = _check_key(key, "rayleigh")
    dtype = _float_dtype(dtype, "rayleigh")
    shape = _default_shape("rayleigh", shape, scale=scale)
    return _as_float(scale, dtype, "rayleigh", "scale") * _wnp.sqrt(
        2.0 * exponential(key, shape, dtype))


def maxwell(key, shape=(), dtype=None):
    """Maxwell draws: the length of a standard normal vector in three dimensions.

    Example:
        >>> x = maxwell(PRNGKey(0), (20000,))
        >>> bool(abs(x.mean() - 1.5958) < 0.02)
        True
    """
    key = _check_key(key, "maxwell")
    shape = _shape(shape, "maxwell")
    z = normal(key, shape + (3,), _float_dtype(dtype, "maxwell"))
    return _wnp.sqrt(_wnp.sum(z * z, axis=-1))


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    """Double-sided Maxwell draws, density ∝ z² exp(-z²/2) for z = (x - loc)/scale: a
    Maxwell draw with a random sign, scaled and shifted (the two from keys split from
    `key`); differentiable in loc and scale.  As in JAX, `shape` is put in front of the
    shape of loc and scale broadcast together: the result has ``shape + that``.

    Example:
        >>> import numpy as np
        >>> x = double_sided_maxwell(PRNGKey(0), 1.0, 2.0, (20000,))
        >>> bool(abs(x.mean() - 1) < 0.05), bool(abs(x.var() - 12) < 0.4)   # var 3·scale²
        (True, True)
        >>> double_sided_maxwell(PRNGKey(0), np.zeros(3), 1.0, (2,)).shape
        (2, 3)
    """
    key = _check_key(key, "double_sided_maxwell")
    dtype = _float_dtype(dtype, "double_sided_maxwell")
    own = _default_shape("double_sided_maxwell", None, loc=loc, scale=scale)
    shape = _shape(shape, "double_sided_maxwell") + tuple(own)
    k_size, k_sign = split(key)
    size = maxwell(k_size, shape, dtype) * rademacher(k_sign, shape, dtype)
    return size * _as_float(scale, dtype, "double_sided_maxwell", "scale") + \
        _as_float(loc, dtype, "double_sided_maxwell", "loc")


def triangular(key, left, mode, right, shape=None, dtype=None):
    """Triangular draws on [left, right] with the peak of the density at `mode`, by the
    quantile function at a uniform draw u: ``left + √(u (right - left)(mode - left))``
    below u = (mode - left)/(right - left), ``right - √((1 - u)(right - left)(right -
    mode))`` above; so differentiable in all three, as in JAX.  They must satisfy left <=
    mode <= right, left < right (not checked: they may be traced).  `shape` defaults to
    their shapes broadcast together.

    Example:
        >>> import wengert as wg
        >>> x = triangular(PRNGKey(0), 0.0, 1.0, 4.0, (20000,))
        >>> bool(x.min() >= 0 and x.max() <= 4), bool(abs(x.mean() - 5 / 3) < 0.03)
        (True, True)
        >>> g = wg.grad(lambda c: triangular(PRNGKey(0), 0.0, c, 4.0, (20000,)).mean())(1.0)
        >>> bool(abs(g - 1 / 3) < 0.02)                 # d E[x]/d mode = 1/3
        True
    """
    key = _check_key(key, "triangular")
    dtype = _float_dtype(dtype, "triangular")
    shape = _default_shape("triangular", shape, left=left, mode=mode, right=right)
    a = _as_float(left, dtype, "triangular", "left")
    c = _as_float(mode, dtype, "triangular", "mode")
    b = _as_float(right, dtype, "triangular", "right")
    u = _draw(key, "uniform", shape, dtype)
    width = b - a
    below = u * width < c - a               # u < F(mode), without dividing by the width
    # Each side's radicand is replaced by 1 where that side is not taken: at mode = left
    # (or right) the other side's is 0, and its infinite derivative times the zero
    # cotangent the select passes it would be nan.
    rising = a + _wnp.sqrt(_wnp.where(below, u * width * (c - a), 1.0))
    falling = b - _wnp.sqrt(_wnp.where(below, 1.0, (1.0 - u) * width * (b - c)))
    return _numpy_scalar(_broadcast(_wnp.where(below, rising, falling), shape))


def wald(key, mean, shape=None, dtype=None):
    """Wald (inverse Gaussian) draws of the given mean and shape parameter 1, by Michael,
    Schucany and Haas's transformation (1976): with y = z², z standard normal, the
    smaller root x of the quadratic it gives, or mean²/x with probability x/(mean + x)
    (z and that choice from keys split from `key`).  x is computed as ``mean/(1 + t +
    √(t(2 + t)))``, t = mean·y/2, which is the usual formula without its cancellation for
    large mean·y.  Differentiable in mean by the implicit reparameterisation gradient
    (as gamma's): with u = F(x; mean) held fixed (F the distribution function),
    dx/dmean = -(∂F/∂mean)/f(x) = (2/mean²) e^(2/mean) Φ(-b) / f(x), b = (x/mean + 1)/√x,
    whose average over draws is d E[x]/d mean = 1, and which differentiates again along
    the same path.  (JAX differentiates the transformation instead: at a fixed key the
    draw jumps where the choice between x and mean²/x changes with the mean, so the
    average of its derivative is not 1: about 1.24 at mean 2.  The draws are the same
    process; the derivatives differ.)  A mean that is not positive and finite gives nan.
    `shape` defaults to mean's.

    Example:
        >>> x = wald(PRNGKey(0), 2.0, (20000,))
        >>> bool(abs(x.mean() - 2) < 0.1), bool(abs(x.var() / 8 - 1) < 0.15)   # var mean³
        (True, True)
        >>> import wengert as wg, wengert.numpy as wnp
        >>> g = wg.grad(lambda m: wnp.mean(wald(PRNGKey(0), m, (20000,))))(2.0)
        >>> bool(abs(g - 1) < 0.05)                         # d E[x]/d mean = 1
        True
    """
    key = _check_key(key, "wald")
    dtype = _float_dtype(dtype, "wald")
    shape = _default_shape("wald", shape, mean=mean)
    mu = _as_float(mean, dtype, "wald", "mean")
    valid = (mu > 0) & (mu < _np.inf)
    mu = _wnp.where(valid, mu, 1.0)         # (a stand-in where the result is nan)
    k_normal, k_choice = split(key)
    z = normal(k_normal, shape, dtype)
    t = mu * (z * z) / 2
    root = mu / (1.0 + t + _wnp.sqrt(t * (2.0 + t)))
    u = _draw(k_choice, "uniform", shape, dtype)
    x = _wnp.where(u * (mu + root) <= mu, root, mu * mu / root)
    # the draw's derivative in the mean: the implicit one (see the docstring), not that of
    # the transformation above, which jumps where the choice of root changes
    x = _R.wald_reparam(mu, _stop_gradient(x))
    return _numpy_scalar(_broadcast(_wnp.where(valid, x, _np.nan), shape))


def generalized_normal(key, p, shape=(), dtype=None):
    """Draws of the generalized normal distribution, density ∝ exp(-|x|^p) (p = 2: a normal
    of variance 1/2; p = 1: Laplace): a random sign times G^(1/p), G ~ Gamma(1/p) (from
    keys split from `key`), formed as exp(log G / p) so that a large p, whose G
    underflows, keeps its digits.  Differentiable in p, through gamma's implicit
    derivative, as in JAX.  p > 0, a number or an array that broadcasts to `shape`; p <=
    0 gives nan.

    Example:
        >>> import wengert as wg
        >>> x = generalized_normal(PRNGKey(0), 2.0, (20000,))
        >>> bool(abs(x.var() - 0.5) < 0.02)
        True
        >>> float(wg.grad(lambda p: generalized_normal(PRNGKey(0), p) ** 2)(1.5)) != 0
        True
    """
    key = _check_key(key, "generalized_normal")
    dtype = _float_dtype(dtype, "generalized_normal")
    shape = _shape(shape, "generalized_normal")
    _check_shape("generalized_normal", shape, p=p)
    p = _as_float(p, dtype, "generalized_normal", "p")
    return _generalized_normal(key, p, shape, dtype, "generalized_normal")


def _generalized_normal(key, p, shape, dtype, name):
    k_size, k_sign = split(key)
    valid = p > 0
    p = _wnp.where(valid, p, 1.0)           # (no 1/0 where p is 0: nan there below)
    log_g = _loggamma(k_size, 1.0 / p, shape, dtype, name)
    x = rademacher(k_sign, shape, dtype) * _wnp.exp(log_g / p)
    return _numpy_scalar(_wnp.where(valid, x, _np.nan))


def ball(key, d, p=2, shape=(), dtype=None):
    """Points uniform in the unit ball of the p-norm in d dimensions, shape ``shape +
    (d,)``: g/(Σ|gᵢ|^p + e)^(1/p) for d generalized normal draws g (`generalized_normal`)
    and an exponential e, by Barthe, Guédon, Mendelson and Naor (2005).  d is a concrete
    int; p > 0 a number, differentiable (through gamma's implicit derivative), as in
    JAX.

    Example:
        >>> import numpy as np
        >>> x = ball(PRNGKey(0), 3, shape=(20000,))
        >>> x.shape, bool(np.linalg.norm(x, axis=-1).max() <= 1)
        ((20000, 3), True)
        >>> r = np.linalg.norm(x, axis=-1)              # P(r <= 1/2) = (1/2)^3
        >>> bool(abs(np.mean(r <= 0.5) - 0.125) < 0.01)
        True
    """
    key = _check_key(key, "ball")
    dtype = _float_dtype(dtype, "ball")
    d = _concrete_int(d, "ball", "d")
    if d is None or d < 0:
        raise ValueError(f"ball: d, the dimension, must be a non-negative int, got {d!r}")
    shape = _shape(shape, "ball")
    if tuple(_shape_of(p)) != ():
        raise ValueError(f"ball: p must be a number (one norm for every point), got an "
                         f"array of shape {tuple(_shape_of(p))}")
    p = _as_float(p, dtype, "ball", "p")
    k_g, k_e = split(key)
    g = _generalized_normal(k_g, p, shape + (d,), dtype, "ball")
    e = exponential(k_e, shape, dtype)
    radius = (_wnp.sum(_wnp.abs(g) ** p, axis=-1) + e) ** (1.0 / p)
    return g / radius[..., None]


def orthogonal(key, n, shape=(), dtype=None, m=None):
    """Orthogonal n×n matrices, uniform (Haar) on the orthogonal group, or with ``m``, n×m
    matrices with orthonormal columns (m <= n) or rows (m > n): Q of the QR factorisation
    of a normal matrix, its columns' signs fixed by R's diagonal.  Shape ``shape + (n,
    m)``.

    Example:
        >>> import numpy as np
        >>> q = orthogonal(PRNGKey(0), 3)
        >>> bool(np.allclose(q @ q.T, np.eye(3)))
        True
        >>> orthogonal(PRNGKey(0), 3, (2,), m=2).shape
        (2, 3, 2)
    """
    key = _check_key(key, "orthogonal")
    shape = _shape(shape, "orthogonal")
    dtype = _float_dtype(dtype, "orthogonal")
    n = _operator.index(n)
    m = n if m is None else _operator.index(m)
    tall, thin = max(n, m), min(n, m)
    q, r = _wnp.linalg.qr(normal(key, shape + (tall, thin), dtype))
    q = q * _wnp.sign(_wnp.diagonal(r, axis1=-2, axis2=-1))[..., None, :]
    return q if n >= m else _wnp.swapaxes(q, -1, -2)


# ---- discrete draws ---------------------------------------------------------------------------
def bernoulli(key, p=0.5, shape=None, mode="low"):
    """True with probability p (a float, or an array whose shape broadcasts to `shape`;
    `shape` defaults to p's): ``uniform < p``.  Outside [0, 1] p acts as its bound would
    (p < 0 never, p > 1 always; nan never), as in JAX.  No derivative in p (JAX: zero).
    ``mode`` ("low", "high") is accepted; the uniform draws have 53 bits either way.

    Example:
        >>> b = bernoulli(PRNGKey(0), 0.3, (10000,))
        >>> b.dtype, bool(abs(b.mean() - 0.3) < 0.02)
        (dtype('bool'), True)
    """
    key = _check_key(key, "bernoulli")
    if mode not in ("low", "high"):
        raise ValueError(f"bernoulli: mode must be 'low' or 'high', got {mode!r}")
    if _dtype_of(p).kind != "f":
        raise TypeError(f"bernoulli: the probability p must have a floating dtype, got "
                        f"{_dtype_of(p)}")
    shape = _default_shape("bernoulli", shape, p=p)
    return _numpy_scalar(_draw(key, "uniform", shape, _F64) < _stop_gradient(p))


def rademacher(key, shape=(), dtype=None):
    """-1 or 1 with probability 1/2 each (int64 by default; a float dtype too).

    Example:
        >>> r = rademacher(PRNGKey(0), (1000,))
        >>> r.dtype, sorted(set(r.tolist()))
        (dtype('int64'), [-1, 1])
    """
    key = _check_key(key, "rademacher")
    dtype = _I64 if dtype is None else _np.dtype(dtype)
    if dtype.kind not in "iuf":
        raise ValueError(f"rademacher: dtype must be an integer or float dtype, got {dtype}")
    heads = _draw(key, "uniform", _shape(shape, "rademacher"), _F64) < 0.5
    return _numpy_scalar(_cast(_wnp.where(heads, 1, -1), dtype))


def randint(key, shape, minval, maxval, dtype=None):
    """Integers uniform in [minval, maxval) (int64 by default; bounds broadcast to `shape`,
    and may be traced).  The bounds are clipped to what the dtype holds, and an empty
    range gives minval, as in JAX.

    Example:
        >>> r = randint(PRNGKey(0), (1000,), 0, 6)
        >>> r.dtype, int(r.min()), int(r.max())
        (dtype('int64'), 0, 5)
    """
    key = _check_key(key, "randint")
    shape = _shape(shape, "randint")
    dtype = _np.dtype(_I64 if dtype is None else dtype)
    if dtype.kind not in "iu":
        raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
    _check_shape("randint", shape, minval=minval, maxval=maxval)
    for what, x in (("minval", minval), ("maxval", maxval)):
        if _dtype_of(x).kind not in "biu":
            raise TypeError(f"randint: {what} must be an integer or integer array, got "
                            f"{_dtype_of(x)}")
    return _R.random_integers(key, minval, maxval, shape=shape, dtype=dtype)


def poisson(key, lam, shape=None, dtype=None):
    """Poisson counts of rate `lam` (int64 by default): inversion of the distribution
    function for lam < 10, Hörmann's transformed rejection (PTRS) above; each count is a
    function of its own rate and position.  A negative, nan or infinite rate gives -1
    (JAX: -1 for negative and nan rates).  No derivative in lam (JAX: zero).

    Example:
        >>> x = poisson(PRNGKey(0), 4.0, (20000,))
        >>> x.dtype, bool(abs(x.mean() - 4) < 0.05), bool(abs(x.var() - 4) < 0.15)
        (dtype('int64'), True, True)
    """
    key = _check_key(key, "poisson")
    dtype = _int_dtype(dtype, "poisson")
    shape = _default_shape("poisson", shape, lam=lam)
    lam = _stop_gradient(_as_float(lam, _F64, "poisson", "lam"))
    return _R.random_poisson(key, lam, shape=shape, dtype=dtype)


def geometric(key, p, shape=None, dtype=None):
    """The number of Bernoulli(p) trials up to the first success (1, 2, ...; int64 by
    default): ceil(log(u)/log(1 - p)).  No derivative in p.

    Example:
        >>> x = geometric(PRNGKey(0), 0.25, (20000,))
        >>> int(x.min()), bool(abs(x.mean() - 4) < 0.1)
        (1, True)
    """
    key = _check_key(key, "geometric")
    dtype = _int_dtype(dtype, "geometric")
    shape = _default_shape("geometric", shape, p=p)
    p = _stop_gradient(_as_float(p, _F64, "geometric", "p"))
    u = _draw(key, "open", shape, _F64)
    return _cast(_wnp.maximum(_wnp.ceil(_wnp.log(u) / _wnp.log1p(-p)), 1.0), dtype)


def binomial(key, n, p, shape=None, dtype=None):
    """Binomial(n, p) counts, the number of successes in n trials of probability p, as
    floats (float64 by default), as JAX's: inversion of the distribution function where
    n·min(p, 1 - p) < 10, Hörmann's transformed rejection (BTRS) above; each count a
    function of its own parameters and position.  A fractional n is taken at its integer
    part; n = inf gives inf (0 for p = 0); n < 0, p outside [0, 1] or nan give nan, as in
    JAX.  `shape` defaults to n's and p's broadcast together.  No derivative in n or p
    (JAX: zero).

    Example:
        >>> x = binomial(PRNGKey(0), 20, 0.3, (20000,))
        >>> x.dtype, bool(abs(x.mean() - 6) < 0.05), bool(abs(x.var() - 4.2) < 0.15)
        (dtype('float64'), True, True)
    """
    key = _check_key(key, "binomial")
    dtype = _float_dtype(dtype, "binomial")
    shape = _default_shape("binomial", shape, n=n, p=p)
    n = _stop_gradient(_as_float(n, _F64, "binomial", "n"))
    p = _stop_gradient(_as_float(p, _F64, "binomial", "p"))
    return _numpy_scalar(_R.random_binomial(key, n, p, shape=shape, dtype=dtype))


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    """Multinomial counts of n trials over the outcomes along p's last axis (floats, as
    JAX's), p normalised by its sum.  The result has shape ``p.shape``, or ``shape +
    p.shape[-1:]`` (`shape` is the batch shape, which p's without its last axis and n's
    must broadcast to, as JAX documents; JAX 0.10's code reads it as the whole shape).

    The counts are split down a binary tree over the outcomes: a node's count goes to its
    left half by a binomial draw with the left half's share of the node's probability,
    the rest to the right, one vectorised `binomial` per level, so log₂ of the number of
    outcomes draws (JAX draws one binomial per outcome in turn; ``unroll``, its loop's
    unrolling, is accepted and has no use here).  No derivative in n or p (JAX: zero).

    Example:
        >>> import numpy as np
        >>> x = multinomial(PRNGKey(0), 10, np.array([0.2, 0.3, 0.5]), shape=(20000,))
        >>> x.shape, bool((x.sum(-1) == 10).all())
        ((20000, 3), True)
        >>> bool(np.allclose(x.mean(0), [2, 3, 5], atol=0.05))
        True
    """
    key = _check_key(key, "multinomial")
    dtype = _float_dtype(dtype, "multinomial")
    if not isinstance(unroll, (bool, int, _np.integer)):
        raise TypeError(f"multinomial: unroll must be an int or a bool, got {unroll!r}")
    p = _stop_gradient(_as_float(p, _F64, "multinomial", "p"))
    n = _stop_gradient(_as_float(n, _F64, "multinomial", "n"))
    own = tuple(_shape_of(p))
    if not own:
        raise ValueError("multinomial: p must have at least one axis (the outcomes, last)")
    if shape is None:
        shape = own[:-1]
    else:
        shape = _shape(shape, "multinomial")
        if not broadcasts_to(own[:-1], shape):
            raise ValueError(f"multinomial: p's batch shape {own[:-1]} (its shape {own} "
                             f"without the outcomes' axis) does not broadcast to the shape "
                             f"argument {shape}")
    if not broadcasts_to(tuple(_shape_of(n)), shape):
        raise ValueError(f"multinomial: n of shape {tuple(_shape_of(n))} does not broadcast "
                         f"to the batch shape {shape}")
    outcomes = own[-1]
    levels = max(outcomes - 1, 0).bit_length()
    width = 1 << levels                     # outcomes padded with zeros to a power of two
    probs = _wnp.broadcast_to(p, shape + (outcomes,))
    if width > outcomes:
        probs = _wnp.concatenate([probs, _np.zeros(shape + (width - outcomes,))], axis=-1)
    counts = _wnp.broadcast_to(n, shape)[..., None]
    keys = split(key, levels)
    for level in range(levels):
        nodes = 1 << level
        halves = _wnp.sum(_wnp.reshape(probs, shape + (nodes, 2, width // (2 * nodes))),
                          axis=-1)
        total = halves[..., 0] + halves[..., 1]
        share = halves[..., 0] / _wnp.where(total > 0, total, 1.0)
        left = binomial(keys[level], counts, _wnp.clip(share, 0.0, 1.0))
        counts = _wnp.reshape(_wnp.stack([left, counts - left], axis=-1),
                              shape + (2 * nodes,))
    return _numpy_scalar(_cast(counts[..., :outcomes], dtype))


def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
    """Indices drawn with probabilities softmax(logits) along `axis` (int64), by the
    Gumbel-max trick: argmax(logits + Gumbel noise).  The result has logits' shape without
    `axis`, or `shape`, which must end in a shape that one broadcasts to (its leading
    dimensions are independent draws).  ``replace=False`` draws distinct indices (the
    Gumbel top-k: as many as the leading dimensions of `shape` hold).  No derivative in
    the logits (JAX: zero).

    Example:
        >>> import numpy as np
        >>> c = categorical(PRNGKey(0), np.log(np.array([0.2, 0.3, 0.5])), shape=(20000,))
        >>> c.dtype, np.round(np.bincount(c) / 20000, 2).tolist()
        (dtype('int64'), [0.2, 0.3, 0.5])
    """
    key = _check_key(key, "categorical")
    _check_mode(mode, "categorical")
    logits = _stop_gradient(_as_float(logits, _F64, "categorical", "logits"))
    own = tuple(_shape_of(logits))
    if not own:
        raise ValueError("categorical: logits must have at least one axis (the categories)")
    if not -len(own) <= axis < len(own):
        raise ValueError(f"categorical: axis {axis} is out of range for logits of shape {own}")
    axis %= len(own)
    batch = own[:axis] + own[axis + 1:]
    shape = batch if shape is None else _shape(shape, "categorical")
    if not broadcasts_to(batch, shape):
        raise ValueError(f"categorical: logits of shape {own} without axis {axis} have shape "
                         f"{batch}, which does not broadcast to the shape argument {shape}")
    prefix = shape[:len(shape) - len(batch)]
    rest = list(shape[len(prefix):])
    rest.insert(axis, own[axis])
    if replace:
        g = gumbel(key, prefix + tuple(rest))
        return _wnp.argmax(g + logits, axis=len(prefix) + axis)
    count = _math.prod(prefix)
    if count > own[axis]:
        raise ValueError(f"categorical: with replace=False, the {count} draws of shape "
                         f"{prefix} cannot exceed the {own[axis]} categories")
    noisy = gumbel(key, tuple(rest)) + logits
    top = _wnp.argsort(-noisy, axis=axis)
    top = _wnp.moveaxis(top, axis, 0)[:count]
    return _wnp.reshape(top, prefix + tuple(shape[len(prefix):]))


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    """Draws from `a` (an int n for range(n), or an array's entries along `axis`), with
    replacement or not, uniformly or with probabilities `p`: JAX's ``choice``.  The result
    has shape ``shape`` for an int, ``a.shape[:axis] + shape + a.shape[axis+1:]`` for an
    array, and is differentiable in an array's entries (not in p: JAX gives zero).

    Example:
        >>> import numpy as np
        >>> choice(PRNGKey(0), 5, (3,), replace=False).dtype
        dtype('int64')
        >>> x = choice(PRNGKey(0), np.array([10.0, 20.0, 30.0]), (20000,),
        ...            p=np.array([0.5, 0.25, 0.25]))
        >>> bool(abs(x.mean() - 17.5) < 0.2)
        True
    """
    key = _check_key(key, "choice")
    _check_mode(mode, "choice")
    shape = _shape(shape, "choice")
    n = _concrete_int(a, "choice", "a") if _np.ndim(a) == 0 else None
    if n is None:
        own = tuple(_shape_of(a))
        if not -len(own) <= axis < len(own):
            raise ValueError(f"choice: axis {axis} is out of range for a of shape {own}")
        axis %= len(own)
        n = own[axis]
    draws = _math.prod(shape)
    if draws == 0:
        out = _np.zeros(shape, _I64)
        return out if n is not None and _np.ndim(a) == 0 else _wnp.take(a, out, axis=axis)
    if n <= 0:
        raise ValueError("choice: a must be greater than 0 unless no samples are taken")
    if not replace and draws > n:
        raise ValueError(f"choice: cannot take a larger sample (size {draws}) than the "
                         f"population (size {n}) when replace=False")
    if p is None:
        if replace:
            index = _R.random_integers(key, 0, n, shape=shape, dtype=_I64)
        else:
            index = _wnp.reshape(permutation(key, n)[:draws], shape)
    else:
        if tuple(_shape_of(p)) != (n,):
            raise ValueError(f"choice: p must be None or a 1D vector with the same size as "
                             f"a.shape[axis]: p has shape {tuple(_shape_of(p))} and "
                             f"a.shape[axis] is {n}")
        p = _stop_gradient(_as_float(p, _F64, "choice", "p"))
        if replace:
            cdf = _wnp.cumsum(p)
            u = _draw(key, "uniform", shape, _F64)
            # (1 - u in (0, 1]: the first index whose cumulative probability reaches it)
            index = _wnp.minimum(_wnp.searchsorted(cdf, cdf[-1] * (1.0 - u)), n - 1)
        else:
            positive = p > 0
            logp = _wnp.where(positive, _wnp.log(_wnp.where(positive, p, 1.0)), -_np.inf)
            index = _wnp.reshape(_wnp.argsort(-(gumbel(key, (n,)) + logp))[:draws], shape)
    if _np.ndim(a) == 0:
        return index
    return _wnp.take(a, index, axis=axis)


def permutation(key, x, axis=0, independent=False):
    """A random permutation of range(x) for an int x, or of an array's entries along `axis`
    (``independent=True``: each slice along the axis permuted on its own): the order of
    64-bit random sort keys.  Differentiable in the array's entries.

    Example:
        >>> import numpy as np
        >>> sorted(permutation(PRNGKey(0), 5).tolist())
        [0, 1, 2, 3, 4]
        >>> permutation(PRNGKey(0), np.arange(6.0).reshape(3, 2)).shape
        (3, 2)
    """
    key = _check_key(key, "permutation")
    if _np.ndim(x) == 0 and not (type(x) is _Node):
        if _np.asarray(x).dtype.kind not in "iu":
            raise TypeError("permutation: x must be an integer or at least one-dimensional")
        n = _operator.index(_np.asarray(x).item())
        return _wnp.argsort(_draw(key, "bits", (n,), _np.dtype(_np.uint64)))
    own = tuple(_shape_of(x))
    if not own:
        raise TypeError("permutation: x must be an integer or at least one-dimensional")
    if not -len(own) <= axis < len(own):
        raise ValueError(f"permutation: axis {axis} is out of range for x of shape {own}")
    axis %= len(own)
    if independent:
        order = _wnp.argsort(_draw(key, "bits", own, _np.dtype(_np.uint64)), axis=axis)
        return _wnp.take_along_axis(x, order, axis=axis)
    order = _wnp.argsort(_draw(key, "bits", (own[axis],), _np.dtype(_np.uint64)))
    return _wnp.take(x, order, axis=axis)


def bits(key, shape=(), dtype=None):
    """Raw random bits as unsigned integers (uint64 by default, as JAX's with
    jax_enable_x64; uint8, uint16, uint32 too).

    Example:
        >>> bits(PRNGKey(0), (2,), "uint32").dtype
        dtype('uint32')
    """
    key = _check_key(key, "bits")
    dtype = _np.dtype(_np.uint64) if dtype is None else _np.dtype(dtype)
    if dtype.kind != "u":
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got "
                         f"{dtype}")
    return _draw(key, "bits", _shape(shape, "bits"), dtype)


# ---- what is not here ---------------------------------------------------------------------------
_NOT_OFFERED = {
    "KeyArray": "keys are uint32 arrays of shape (2,)",
    "PRNGKeyArray": "keys are uint32 arrays of shape (2,)",
    "default_prng_impl": "wengert has one key implementation, key_impl(key) names it",
}


def __getattr__(name):
    if name in _NOT_OFFERED:
        raise AttributeError(f"wengert.random has no {name!r} (jax.random's): "
                             f"{_NOT_OFFERED[name]}")
    raise AttributeError(f"module 'wengert.random' has no attribute {name!r}")
