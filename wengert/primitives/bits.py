"""Two primitives of XLA's behind ``wengert.lax``: `reduce_precision`, which works on the
bits of floating-point numbers (JAX's ``jax.lax.reduce_precision``, XLA's ReducePrecision),
and `rng_uniform`, draws from a generator that keeps state (``jax.lax.rng_uniform``).

    reduce_precision(x, exponent_bits=e, mantissa_bits=m)

rounds each element of a float array to the nearest number of a format with `e` exponent
bits and `m` mantissa bits (ties to even), in x's own dtype: a value beyond that format's
largest one becomes ±inf, and one at or below its smallest normal exponent becomes ±0
(the format has no subnormals).  NaN stays NaN.  ``e=5, m=10`` is float16's format (but
for its subnormals), ``e=8, m=7`` bfloat16's.

Derivative: as JAX declares it, reduce_precision is linear (``linear=True``): its JVP
rounds the tangent, its VJP the cotangent.  It is not linear in exact arithmetic, but
that is the rule a program ported from JAX relies on (a mixed-precision step whose
gradients are rounded as its values are).

    rng_uniform(a, b, shape=s)

draws numbers of shape s uniformly from [a, b) (scalars of one float or integer dtype)
from one generator kept here (NumPy's Philox, seeded with 0 when wengert is imported),
so that every evaluation draws new numbers: the node is neither interned nor folded, and
compiled code draws again at each call, as XLA's RngUniform does.  Its partials in a and
b are those of a + (b - a) u at the u drawn, (b - x)/(b - a) and (x - a)/(b - a), which
JAX does not offer; integer draws have none.

Example:
    >>> import numpy as np
    >>> reduce_precision(np.array([1 / 3, 70000.0], np.float32), exponent_bits=5,
    ...                  mantissa_bits=10).tolist()
    [0.333251953125, inf]
"""
from __future__ import annotations

import threading

import numpy as np

from .array import reshape
from .registry import defprimitive, shape_of


def _reduce_precision_np(x, exponent_bits, mantissa_bits):
    x = np.asarray(x)
    info = np.finfo(x.dtype)
    width = 8 * x.dtype.itemsize
    unsigned = np.dtype(f"uint{width}")
    word = unsigned.type
    have_m, have_e = info.nmant, info.nexp
    bits = np.array(x, order="C").view(unsigned)      # (a copy, 0-d kept 0-d)
    if mantissa_bits < have_m:
        # Round to nearest, ties to even: add half an ulp of the shorter mantissa, less one
        # unless the last kept bit is odd, then cut the dropped bits off.  A carry out of
        # the mantissa moves the exponent up, which is the right rounding too.
        drop = word(have_m - mantissa_bits)
        last = word(1) << drop
        odd = (bits & last) >> drop
        bits = (bits + ((last >> word(1)) - word(1) + odd)) & ~(last - word(1))
    if exponent_bits < have_e:
        sign = bits & (word(1) << word(width - 1))
        exponent = bits & (((word(1) << word(have_e)) - word(1)) << word(have_m))
        # the exponent field values the short format can hold, in the long one's bias
        bias, short_bias = (1 << (have_e - 1)) - 1, (1 << (exponent_bits - 1)) - 1
        too_big = exponent > (word(bias + short_bias) << word(have_m))
        too_small = exponent <= (word(bias - short_bias) << word(have_m))
        inf_bits = sign | (((word(1) << word(have_e)) - word(1)) << word(have_m))
        bits = np.where(too_big, inf_bits, np.where(too_small, sign, bits))
    out = np.where(np.isnan(x), x, bits.view(x.dtype))
    return out if out.ndim else out[()]


reduce_precision = defprimitive(
    "reduce_precision", _reduce_precision_np, cost="call", linear=True,
    abstract_eval=lambda args, params: (args[0].shape, args[0].dtype),
    doc="""reduce_precision(x, exponent_bits=e, mantissa_bits=m): x rounded to a float
    format of e exponent and m mantissa bits, in x's dtype (see the module's text).

    Example:
        >>> reduce_precision(1.0 + 2.0 ** -9, exponent_bits=8, mantissa_bits=7)
        np.float64(1.0)
    """)
reduce_precision.defvjp(lambda g, x, ans, exponent_bits, mantissa_bits: (
    reduce_precision(g, exponent_bits=exponent_bits, mantissa_bits=mantissa_bits),))
reduce_precision.defbatch(lambda args, mapped, node: node.op(args[0], **node.params))


# ---- draws from a generator with state ---------------------------------------------------------
_GENERATOR = np.random.Generator(np.random.Philox(0))
_GENERATOR_LOCK = threading.Lock()


def _rng_uniform_np(a, b, shape):
    a, b = np.asarray(a), np.asarray(b)
    with _GENERATOR_LOCK:
        if a.dtype.kind in "iu":
            return _GENERATOR.integers(a, b, size=shape, dtype=a.dtype)
        u = _GENERATOR.random(size=shape)
    return (a + (b - a) * u).astype(a.dtype)


rng_uniform = defprimitive(
    "rng_uniform", _rng_uniform_np, cost="call", internable=False, foldable=False,
    abstract_eval=lambda args, params: (params["shape"], args[0].dtype),
    doc="""rng_uniform(a, b, shape=s): numbers drawn uniformly from [a, b), new ones at each
    evaluation (see the module's text).

    Example:
        >>> import numpy as np
        >>> x = rng_uniform(np.float32(2.0), np.float32(3.0), shape=(4,))
        >>> x.dtype, bool(((2 <= x) & (x < 3)).all())
        (dtype('float32'), True)
    """)
rng_uniform.draws = True       # (codegen.scalarize leaves it to run, not to evaluate now)
rng_uniform.defpartials(lambda a, b, ans, shape: (b - ans) / (b - a),
                        lambda a, b, ans, shape: (ans - a) / (b - a))


def _rng_uniform_batch(args, mapped, node):
    """Bounds per example: one draw of the whole batch, each example's row between its
    own bounds (a and b given a trailing axis of 1 per drawn axis, to broadcast)."""
    size = next(shape_of(a)[0] for a, m in zip(args, mapped) if m)
    drawn = tuple(node.params["shape"])
    lined = [reshape(x, shape=(size,) + (1,) * len(drawn)) if m else x
             for x, m in zip(args, mapped)]
    return node.op(*lined, shape=(size,) + drawn)


rng_uniform.defbatch(_rng_uniform_batch)
