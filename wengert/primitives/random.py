"""Random draws from a key: the primitives under `wengert.random` (JAX's ``jax.random``).

A key is two uint32 words (NumPy's ``uint32[2]``, as JAX's raw keys are).  Every number is
read off **Philox4x64-10**, NumPy's own counter-based bit generator, with the key's 64 bits
as Philox's key: the word at position i of a stream is lane i % 4 of the block whose
counter is ``(i // 4 + 1, data, domain, stream)``.  A counter-based generator is a
function of (key, counter) with no state, so

* a draw is a pure function of its key: the same key gives the same numbers, eagerly,
  under `wg.compile` (where the key is traced without a value and the draw is a node of
  the graph, evaluated when the compiled code runs) and under `wg.vmap`;
* any word can be computed on its own (`words_at`), which is what lets a batch of keys
  (`wg.vmap` over ``split(key, n)``) run as one vectorised computation, and a rejection
  sampler (gamma, poisson) redraw only the elements it rejected, each from a position of
  its own, so that an element's value depends on its own parameter and position only;
* `split` and `fold_in` are Philox too, in domains of their own (the counter's third
  word), so a derived key's stream is unrelated to its parent's.

One key's long stream is NumPy's C implementation (``numpy.random.Philox.random_raw``);
many short streams (a batch of keys) are `philox`, the same rounds in vectorised NumPy:
the two agree bit for bit (tests/test_random.py).  The numbers differ from JAX's, whose
generator is Threefry.

The primitives, each with a value computed in NumPy from the key when the graph runs:

    random_key(seed)                      a key from an integer seed
    random_split(key, shape=s)            keys, shape s + (2,)
    random_fold_in(key, data)             a key from a key and an integer
    random_draw(key, dist=, shape=, dtype=)       uniform [0, 1), uniform (0, 1),
                                                  standard normal, or raw bits
    random_integers(key, lo, hi, shape=, dtype=)  integers in [lo, hi)
    random_loggamma(key, a, shape=, dtype=)       log of a Gamma(a, 1) draw
    random_poisson(key, lam, shape=, dtype=)      Poisson(lam) counts
    random_binomial(key, n, p, shape=, dtype=)    Binomial(n, p) counts (floats)

and elementwise functions: `truncated_normal_ppf(u, lower, upper)`, the quantile function
of the normal distribution truncated to [lower, upper], at a uniform draw;
`loggamma_grad(a, log_z)` with its partial `loggamma_grad_da`, the derivative of a gamma
draw below; and `wald_reparam(mean, x)`, a Wald draw x with its implicit derivative in
the mean.

Derivatives.  A key has none (it is integers).  A draw that is a smooth function of its
parameters for a fixed key is differentiable in them, as JAX reparameterises: uniform
and normal draws are transformed by ordinary primitives; `truncated_normal_ppf` has
partials in its bounds; `random_loggamma` has JAX's implicit reparameterisation gradient
in its shape a: with the draw z and u = P(a, z) held fixed (P the regularised incomplete
gamma function, the distribution function), dz/da = -(∂P/∂a)(a, z) / (∂P/∂z)(a, z)
(`loggamma_grad`, in logs).  That derivative is differentiable in turn, along the same
path (z moving with a at fixed u, as JAX's forward derivative of its random_gamma_grad
does): its partials in a, by ∂²P/∂a² (`incomplete.gammainc_daa`), and in log z, by the
density's logarithmic derivatives; a third derivative raises NotImplementedError.
Integer draws have no derivative (JAX: a zero one).

Batching.  Every keyed primitive takes a key array of any shape K + (2,) and draws
K + shape: element (k, i) from key k at position i of `shape`.  So `wg.vmap` over keys,
or over parameters with one key, is one call of the primitive with the batch in K (the
rules at the end), and each example gets exactly what it would get alone.

Example:
    >>> import numpy as np
    >>> key = random_key(0)
    >>> key
    array([0, 0], dtype=uint32)
    >>> a = random_draw(key, dist="normal", shape=(3,), dtype=np.dtype(np.float64))
    >>> b = random_draw(random_split(key, shape=(1,))[0], dist="normal", shape=(3,),
    ...                 dtype=np.dtype(np.float64))
    >>> bool(np.all(a == random_draw(key, dist="normal", shape=(3,),
    ...                                dtype=np.dtype(np.float64)))), bool(np.any(a == b))
    (True, False)
"""
from __future__ import annotations

import math
import threading

import numpy as np

from .registry import defprimitive, shape_of
from .batching import _elementwise, batched, lift_rank
from . import scalar as S
from .array import reshape
from . import special as SP

# ---- Philox4x64-10 ------------------------------------------------------------------------------
# Random123's constants (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", 2011),
# which NumPy's Philox uses.
_M0, _M1 = 0xD2E7470EE14C6C93, 0xCA5A826395121157
_W0, _W1 = 0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B
_LOW32, _32 = np.uint64(0xFFFFFFFF), np.uint64(32)

# The counter's third word says what a block is for, so that no two uses share a block.
DRAW, SPLIT, FOLD_IN = 0, 1, 2


def _mulhi(m_hi, m_lo, b):
    """The high 64 bits of the 128-bit product m·b (uint64 arrays; m split in halves),
    from four 32-bit partial products: NumPy has no 128-bit integers."""
    b_hi, b_lo = b >> _32, b & _LOW32
    lh, hl = m_lo * b_hi, m_hi * b_lo
    carry = ((m_lo * b_lo) >> _32) + (lh & _LOW32) + (hl & _LOW32)
    return m_hi * b_hi + (lh >> _32) + (hl >> _32) + (carry >> _32)


def philox(c0, c1, c2, c3, k0, k1):
    """The four words of Philox4x64-10's block at counter (c0, c1, c2, c3) under key
    (k0, k1): uint64 arrays, broadcast together, every block computed at once.  Equal to
    NumPy's ``Philox(key=(k0, k1), counter=(c0 - 1, c1, c2, c3)).random_raw(4)``.

    Example:
        >>> import numpy as np
        >>> u = lambda v: np.uint64(v)
        >>> mine = np.array(philox(u(1), u(0), u(0), u(0), u(7), u(0)))
        >>> bool(np.all(mine == np.random.Philox(key=7).random_raw(4)))
        True
    """
    words = np.broadcast_arrays(*[np.asarray(v, np.uint64) for v in (c0, c1, c2, c3, k0, k1)])
    shape, n = words[0].shape, words[0].size
    c0, c1, c2, c3, k0, k1 = [w.ravel() for w in words]
    # A round multiplies counter words 0 and 2, so they sit in one array (c0, c2) of
    # 2n: every NumPy call does both, on contiguous arrays of one shape, which is what a
    # batch of a few thousand keys spends its time on.  The words passed on, and the key,
    # are kept in the swapped order (c3, c1) and (k1, k0), so that a round's new (c0, c2)
    # is the halves of hi ^ (c3, c1) ^ (k1, k0) swapped, and its new (c3, c1) is lo.
    a = np.concatenate([c0, c2])
    passed = np.concatenate([c3, c1])
    key = np.concatenate([k1, k0])
    m = np.repeat(np.array([_M0, _M1], np.uint64), n)
    m_hi, m_lo = m >> _32, m & _LOW32
    bump = np.repeat(np.array([_W1, _W0], np.uint64), n)
    for r in range(10):
        if r:
            key += bump
        hi = _mulhi(m_hi, m_lo, a)
        lo = m * a
        hi ^= passed
        hi ^= key
        a = np.concatenate([hi[n:], hi[:n]])
        passed = lo
    return tuple(w.reshape(shape) for w in (a[:n], passed[n:], a[n:], passed[:n]))


class _BitGenerator(threading.local):
    """One NumPy Philox per thread, re-keyed for each stream (setting its state costs a
    few microseconds, making one thirty)."""
    philox = None


_local = _BitGenerator()
_NO_BUFFER = np.zeros(4, np.uint64)


def _c_stream(key64, count, c1, domain, stream):
    bg = _local.philox
    if bg is None:
        bg = _local.philox = np.random.Philox(key=0)
    bg.state = {"bit_generator": "Philox",
                "state": {"counter": np.array([0, c1, domain, stream], np.uint64),
                          "key": np.array([key64, 0], np.uint64)},
                "buffer": _NO_BUFFER, "buffer_pos": 4, "has_uint32": 0, "uinteger": 0}
    return bg.random_raw(count)


# Which way a batch of keys goes, by a cost model measured on the C stream (~6 µs to
# re-key it, then 6 ns a word) and on `philox` (~200 µs of NumPy calls, then ~50 ns a
# word): vectorised across keys where B keys of `count` words each cost less so, which
# is for many keys with a few words each (`wg.vmap` over ``split(key, 1000)``).
def _vectorise(keys, count):
    return keys * (6.0 - 0.044 * count) > 200.0


def key64(keys):
    """The 64 bits of each key (uint32 array of shape (..., 2)), as uint64: the first word
    high, as JAX's PRNGKey(seed) puts a seed's high bits first.

    Example:
        >>> int(key64(np.array([1, 2], np.uint32)))
        4294967298
    """
    keys = np.asarray(keys, np.uint32)
    return (keys[..., 0].astype(np.uint64) << _32) | keys[..., 1].astype(np.uint64)


def as_keys(words):
    """uint64 words as keys: uint32 arrays of shape words.shape + (2,), `key64` undone.

    Example:
        >>> as_keys(np.array(4294967298, np.uint64))
        array([1, 2], dtype=uint32)
    """
    words = np.asarray(words, np.uint64)
    return np.stack([(words >> _32).astype(np.uint32), (words & _LOW32).astype(np.uint32)],
                    axis=-1)


def streams(keys, count, domain=DRAW, stream=0):
    """Words 0 .. count-1 of each key's stream: keys (B, 2) uint32 -> (B, count) uint64.

    Example:
        >>> keys = np.array([[0, 1], [0, 2]], np.uint32)
        >>> w = streams(keys, 5)
        >>> w.shape, bool(np.all(w[1] == np.random.Philox(key=2).random_raw(5)))
        ((2, 5), True)
    """
    k = key64(keys)
    out = np.empty((len(k), count), np.uint64)
    if count == 0 or len(k) == 0:
        return out
    if not _vectorise(len(k), count):
        for b, kb in enumerate(k.tolist()):
            out[b] = _c_stream(kb, count, 0, domain, stream)
        return out
    blocks = -(-count // 4)
    lanes = philox(np.arange(1, blocks + 1, dtype=np.uint64)[None, :], 0, domain, stream,
                   k[:, None], 0)
    return np.stack(lanes, axis=-1).reshape(len(k), 4 * blocks)[:, :count]


def words_at(k64, position, domain=DRAW, stream=0):
    """The word at `position` of the stream of each key (`key64` values), arrays
    broadcast together: random access, for what a rejection sampler redraws.

    Example:
        >>> k = key64(np.array([0, 3], np.uint32))
        >>> bool(words_at(k, np.arange(6))[5] == np.random.Philox(key=3).random_raw(6)[5])
        True
    """
    position = np.asarray(position, np.uint64)
    lanes = philox(position // np.uint64(4) + np.uint64(1), 0, domain, stream, k64, 0)
    lane = (position % np.uint64(4)).astype(np.intp)
    return np.choose(lane, lanes)


# ---- words into numbers ------------------------------------------------------------------------
def uniform_from(words, dtype, open_interval=False):
    """Uniform numbers of a float dtype from uint64 words: the top bits as a fraction, in
    [0, 1), or in (0, 1) with `open_interval` (half a step in: never 0, never 1, and
    symmetric about 1/2, for the logarithms of exponential and Gumbel draws).  Each is
    exact in `dtype` (float32 takes 24 bits, not a rounded float64 that could be 1.0).

    Example:
        >>> w = np.array([0, 2 ** 64 - 1], np.uint64)
        >>> uniform_from(w, np.dtype(np.float64)).tolist()
        [0.0, 0.9999999999999999]
        >>> uniform_from(w, np.dtype(np.float32), open_interval=True).tolist()
        [5.960464477539063e-08, 0.9999999403953552]
    """
    bits = np.finfo(dtype).nmant + (0 if open_interval else 1)
    k = (words >> np.uint64(64 - bits)).astype(np.float64)
    if open_interval:
        k += 0.5
    k *= 2.0 ** -bits
    return k.astype(dtype, copy=False)


def normal_from(words, n):
    """n standard normal numbers (float64) from 2·ceil(n/2) words, by Box and Muller: each
    pair of words gives a radius r = √(-2 log u₁) and an angle θ = 2π(u₂ - 1/2), whose
    r cos θ and r sin θ are two independent normals.  cos θ and sin θ are computed from
    t = tan(θ/2) as (1 - t²)/(1 + t²) and 2t/(1 + t²): one call of a trigonometric
    function instead of two, the dearer half of the work.  No rejection, so each number
    is a function of its own two words.

    Example:
        >>> z = normal_from(np.random.Philox(key=0).random_raw(100000), 100000)
        >>> bool(abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01)
        True
    """
    words = words.reshape(words.shape[:-1] + (-1, 2))
    f64 = np.dtype(np.float64)
    radius = uniform_from(words[..., 0], f64, open_interval=True)
    np.log(radius, out=radius)
    radius *= -2.0
    np.sqrt(radius, out=radius)
    t = uniform_from(words[..., 1], f64)
    t -= 0.5
    t *= math.pi
    np.tan(t, out=t)                        # (at u₂ = 0, tan(-π/2) is -1.6e16: finite)
    tt = t * t
    radius /= tt + 1.0
    t *= 2.0
    np.subtract(1.0, tt, out=tt)
    out = np.empty(words.shape, f64)
    np.multiply(radius, tt, out=out[..., 0])          # r cos θ
    np.multiply(radius, t, out=out[..., 1])           # r sin θ
    return out.reshape(out.shape[:-2] + (-1,))[..., :n]


def _bits_from(words, n, dtype):
    """n unsigned integers of `dtype` from words: uint64 whole, smaller ones from the
    low and high halves of each word (truncated to 8 or 16 bits)."""
    if dtype.itemsize == 8:
        return words[..., :n]
    halves = np.stack([words & _LOW32, words >> _32], axis=-1)
    return halves.reshape(words.shape[:-1] + (-1,))[..., :n].astype(dtype)


def _scalar_out(out):
    """A 0-d result as a NumPy scalar, as wengert's other primitives give one."""
    return out[()] if out.ndim == 0 else out


def _batch(key, shape):
    """(keys as (B, 2), the key array's batch shape K, the number of elements per key)."""
    key = np.asarray(key, np.uint32)
    return key.reshape(-1, 2), key.shape[:-1], math.prod(shape)


# ---- keys ------------------------------------------------------------------------------------
def _as_words(x):
    """Integers as uint64 words, negative ones in two's complement; floats (a Python int
    that wg.jit traced as a float) by their integer part."""
    x = np.asarray(x)
    if x.dtype.kind == "u":
        return x.astype(np.uint64)
    return x.astype(np.int64).view(np.uint64)


def _key_np(seed):
    # a seed's 64 bits, as JAX's PRNGKey takes them (high word first)
    return as_keys(_as_words(seed))


def _split_np(key, shape):
    keys, batch, n = _batch(key, shape)
    words = streams(keys, n, domain=SPLIT)
    return as_keys(words).reshape(batch + tuple(shape) + (2,))


def _fold_in_np(key, data):
    key = np.asarray(key, np.uint32)
    data = _as_words(data)
    k = key64(key)
    k, data = np.broadcast_arrays(k, data)
    return as_keys(philox(1, data, FOLD_IN, 0, k, 0)[0])


def _key_shape(args, params, extra=()):
    return tuple(args[0].shape[:-1]) + tuple(params["shape"]) + tuple(extra)


random_key = defprimitive(
    "random_key", _key_np, cost="call",
    abstract_eval=lambda args, params: (tuple(args[0].shape) + (2,), np.dtype(np.uint32)),
    doc="random_key(seed): the key (uint32[2]) of an integer seed: its high and low 32 bits.")
random_split = defprimitive(
    "random_split", _split_np, cost="call",
    abstract_eval=lambda args, params: (_key_shape(args, params, (2,)), np.dtype(np.uint32)),
    doc="random_split(key, shape=s): keys of shape s + (2,) derived from key.")
random_fold_in = defprimitive(
    "random_fold_in", _fold_in_np, cost="call",
    abstract_eval=lambda args, params: (
        np.broadcast_shapes(args[0].shape[:-1], args[1].shape) + (2,), np.dtype(np.uint32)),
    doc="random_fold_in(key, data): the key derived from key and the integer data.")


# ---- draws -----------------------------------------------------------------------------------
def _draw_np(key, dist, shape, dtype):
    keys, batch, n = _batch(key, shape)
    dtype = np.dtype(dtype)
    if dist == "normal":
        out = normal_from(streams(keys, 2 * -(-n // 2)), n).astype(dtype)
    elif dist == "bits":
        per_word = 1 if dtype.itemsize == 8 else 2
        out = _bits_from(streams(keys, -(-n // per_word)), n, dtype)
    elif dist in ("uniform", "open"):
        out = uniform_from(streams(keys, n), dtype, open_interval=dist == "open")
    else:
        raise ValueError(f"random_draw: dist must be one of {DISTS}, got {dist!r}")
    return _scalar_out(out.reshape(batch + tuple(shape)))


DISTS = ("uniform", "open", "normal", "bits")


def _draw_aval(args, params):
    if params["dist"] not in DISTS:
        raise ValueError(f"random_draw: dist must be one of {DISTS}, got {params['dist']!r}")
    return _key_shape(args, params), np.dtype(params["dtype"])


random_draw = defprimitive(
    "random_draw", _draw_np, cost="call", abstract_eval=_draw_aval,
    doc="random_draw(key, dist=d, shape=s, dtype=t): uniform on [0, 1) (d 'uniform'), on "
        "(0, 1) ('open'), standard normal ('normal') or raw bits ('bits') of shape s.")


def _integers_np(key, lo, hi, shape, dtype):
    keys, batch, n = _batch(key, shape)
    dtype = np.dtype(dtype)
    info = np.iinfo(dtype)
    full = batch + tuple(shape)
    # The bounds clipped to what the dtype holds (hi is exclusive: up to one past its
    # maximum), an empty range [lo, hi) giving lo, as JAX's randint does: in Python's
    # integers, at the bounds' own shape (usually ()), since 2**64, the span of the
    # whole uint64 range, fits in no NumPy integer.
    lo, hi = np.broadcast_arrays(np.asarray(lo), np.asarray(hi))
    own = lo.shape
    lo = [min(max(int(v), info.min), info.max) for v in lo.ravel().tolist()]
    hi = [min(max(int(v), info.min), info.max + 1) for v in hi.ravel().tolist()]
    span = [max(h - v, 0) for v, h in zip(lo, hi)]
    as_words = lambda vs: np.broadcast_to(
        np.array([v % (1 << 64) for v in vs], np.uint64).reshape(own), full)
    whole = np.broadcast_to(np.array([s == 1 << 64 for s in span]).reshape(own), full)
    span64, base = as_words(span), as_words(lo)
    words = streams(keys, n).reshape(full)
    # the high word of words·span, a number in [0, span): biased by span / 2**64 at most,
    # with no rejection, so that each number comes from its own word
    offset = np.where(whole, words, _mulhi(span64 >> _32, span64 & _LOW32, words))
    with np.errstate(over="ignore"):
        out = base + offset                         # (two's complement: wraps to lo + k)
    return _scalar_out(out.view(np.int64).astype(dtype) if info.min < 0 else
                       out.astype(dtype))


random_integers = defprimitive(
    "random_integers", _integers_np, cost="call",
    abstract_eval=lambda args, params: (_key_shape(args, params), np.dtype(params["dtype"])),
    doc="random_integers(key, lo, hi, shape=s, dtype=t): integers in [lo, hi), uniform.")


# ---- gamma: Marsaglia and Tsang, element by element -----------------------------------------
def _mt_round(words, d, c):
    """One round of Marsaglia and Tsang's method for Gamma(α) (α >= 1, d = α - 1/3,
    c = 1/√(9d)) per element, from three words each: (log of the candidate, accepted)."""
    x = normal_from(words[..., :2].reshape(words.shape[:-1] + (2,)), 1)[..., 0]
    u = uniform_from(words[..., 2], np.dtype(np.float64), open_interval=True)
    t = 1.0 + c * x
    positive = t > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        log_v = 3.0 * np.log(np.where(positive, t, 1.0))
        accept = positive & (np.log(u) < 0.5 * x * x + d - d * np.exp(log_v) + d * log_v)
    return np.log(d) + log_v, accept


_MAX_ROUNDS = 1000      # each round accepts at least 95% (α >= 1): never reached


def _loggamma_np(key, a, shape, dtype):
    keys, batch, n = _batch(key, shape)
    full = batch + tuple(shape)
    a = np.broadcast_to(np.asarray(a, np.float64), full).reshape(len(keys), n)
    valid = (a > 0) & (a < np.inf)
    boost = valid & (a < 1)                 # Gamma(a) = Gamma(a + 1) · U^(1/a)
    alpha = np.where(valid, np.where(boost, a + 1.0, a), 1.0)
    d = alpha - 1.0 / 3.0
    c = 1.0 / np.sqrt(9.0 * d)
    out = np.empty((len(keys), n))
    if n and len(keys):
        # round 1 from each key's stream 1, all elements at once; the few rejected are
        # redrawn in round r from stream r at their own positions (3i, 3i+1, 3i+2)
        log_z, ok = _mt_round(streams(keys, 3 * n, stream=1).reshape(len(keys), n, 3), d, c)
        out[ok] = log_z[ok]
        rows, cols = np.nonzero(~ok)
        k = key64(keys)
        for r in range(2, _MAX_ROUNDS + 2):
            if not len(rows):
                break
            position = 3 * cols.astype(np.uint64)
            words = np.stack([words_at(k[rows], position + np.uint64(j), stream=r)
                              for j in range(3)], axis=-1)
            log_z, ok = _mt_round(words, d[rows, cols], c[rows, cols])
            out[rows[ok], cols[ok]] = log_z[ok]
            rows, cols = rows[~ok], cols[~ok]
        else:
            raise RuntimeError("random_loggamma: the sampler did not accept in "
                               f"{_MAX_ROUNDS} rounds")
        if boost.any():
            u = uniform_from(streams(keys, n, stream=0), np.dtype(np.float64),
                             open_interval=True)
            out = np.where(boost, out + np.log(u) / np.where(boost, a, 1.0), out)
    # a = 0: the draw is 0 (log -inf); a = inf: inf; a < 0 or nan: nan (JAX's values)
    out = np.where(valid, out, np.where(a == 0, -np.inf, np.where(a == np.inf, np.inf,
                                                                   np.nan)))
    return _scalar_out(out.reshape(full).astype(dtype))


# Where the draw z is below this, ∂P/∂a and the density both underflow or lose digits:
# there P(a, z) = z^a/Γ(a+1)·(1 - a z/(a+1) + O(z²)), whose derivative in a at fixed P
# gives d log z/da = (ψ(a+1) - log z + r/(a+1)) / (a (1 - r)), r = z/(a+1), to O(z²).
_SMALL_LOG_Z = math.log(1e-6)


def _small_z_series(a, log_z):
    """The series' numerator and denominator, and r (arrays; log_z below _SMALL_LOG_Z)."""
    r = np.exp(log_z) / (a + 1.0)
    return SP.scipy_module("special").digamma(a + 1.0) - log_z + r / (a + 1.0), \
        a * (1.0 - r), r


def _split_small(a, log_z):
    a, log_z = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(log_z, np.float64))
    small = log_z < _SMALL_LOG_Z
    # (stand-ins where the other formula is used: no warnings from either)
    return a, small, np.where(small, _SMALL_LOG_Z, log_z), np.where(small, log_z,
                                                                    _SMALL_LOG_Z)


def _loggamma_grad_np(a, log_z):
    """d log z/da at fixed P(a, z) = u: -(∂P/∂a)/(z·∂P/∂z), the density written in logs
    (z·∂P/∂z = exp(a log z - z - log Γ(a))); the small-z series below 1e-6."""
    from .incomplete import gammainc_da
    sc = SP.scipy_module("special")
    with np.errstate(all="ignore"):
        a, small, w, w_small = _split_small(a, log_z)
        z = np.exp(w)
        general = -gammainc_da(a, z) / np.exp(a * w - z - sc.gammaln(a))
        num, den, _ = _small_z_series(a, w_small)
        return _scalar_out(np.where(small, num / den, general))


def _loggamma_grad_da_np(a, log_z):
    """∂/∂a of `loggamma_grad` at fixed log z: for g = -P_a/G (G = z·∂P/∂z, whose
    logarithmic derivative in a is log z - ψ(a)), ∂g/∂a = -P_aa/G - g (log z - ψ(a));
    below z = 1e-6, the series' derivative."""
    from .incomplete import gammainc_daa
    sc = SP.scipy_module("special")
    with np.errstate(all="ignore"):
        g = _loggamma_grad_np(a, log_z)
        a, small, w, w_small = _split_small(a, log_z)
        z = np.exp(w)
        general = -gammainc_daa(a, z) / np.exp(a * w - z - sc.gammaln(a)) \
            - g * (w - sc.digamma(a))
        num, den, r = _small_z_series(a, w_small)
        series = (sc.polygamma(1, a + 1.0) - 2.0 * r / (a + 1.0) ** 2
                  - g * ((1.0 - r) + a * r / (a + 1.0))) / den
        return _scalar_out(np.where(small, series, general))


loggamma_grad = defprimitive(
    "loggamma_grad", _loggamma_grad_np, cost="call",
    doc="loggamma_grad(a, log_z): d log z/da for a Gamma(a) draw z at fixed P(a, z), JAX's "
        "implicit reparameterisation (P the regularised incomplete gamma function).")
loggamma_grad_da = defprimitive(
    "loggamma_grad_da", _loggamma_grad_da_np, cost="call",
    doc="loggamma_grad_da(a, log_z): the partial of loggamma_grad in a, at fixed log_z "
        "(by ∂²P/∂a², incomplete.gammainc_daa).")


def _loggamma_grad_dw(a, w, ans):
    """∂/∂ log z of `loggamma_grad`: -(log z - ψ(a)) - g (a - z), from G's logarithmic
    derivatives (∂P_a/∂ log z = G (log z - ψ(a)), ∂ log G/∂ log z = a - z); below z =
    1e-6, the series' own derivative, which has no cancellation where log z is large and
    negative."""
    small = S.lt(w, _SMALL_LOG_Z)
    w_general = S.select(small, 0.0, w)
    general = -(w_general - SP.digamma(a)) - ans * (a - S.exp(w_general))
    r = S.exp(S.select(small, w, _SMALL_LOG_Z)) / (a + 1.0)
    series = (r / (a + 1.0) - 1.0) / (a * (1.0 - r)) + ans * r / (1.0 - r)
    return S.select(small, series, general)


def _third_derivative(*args, **params):
    raise NotImplementedError(
        "gamma: the third derivative of a gamma draw with respect to its shape a is not "
        "implemented (the first two are): hold a constant (wg.stop_gradient) at that order")


loggamma_grad.defpartials(lambda a, w, ans: loggamma_grad_da(a, w), _loggamma_grad_dw)
loggamma_grad_da.defpartials(_third_derivative, _third_derivative)
random_loggamma = defprimitive(
    "random_loggamma", _loggamma_np, cost="call",
    abstract_eval=lambda args, params: (_key_shape(args, params), np.dtype(params["dtype"])),
    doc="random_loggamma(key, a, shape=s, dtype=t): log of Gamma(a, 1) draws (Marsaglia and "
        "Tsang's method, log-space for a < 1), differentiable in a (implicitly).")
random_loggamma.defpartials(None, lambda key, a, ans, shape, dtype: loggamma_grad(a, ans))


# ---- poisson ------------------------------------------------------------------------------------
_LOG_FACTORIALS = np.array([math.lgamma(k + 1.0) for k in range(128)])


def _log_factorial(k):
    """log k! for float arrays of integers k >= 0: a table below 128, Stirling's series
    above (its next term is below 1e-18 there)."""
    small = k < 128
    x = np.where(small, 128.0, k) + 1.0
    stirling = ((x - 0.5) * np.log(x) - x + 0.5 * math.log(2 * math.pi) + 1 / (12 * x)
                - 1 / (360 * x ** 3) + 1 / (1260 * x ** 5))
    return np.where(small, _LOG_FACTORIALS[np.where(small, k, 0).astype(np.intp)], stirling)


_PTRS_FROM = 10.0       # below: inversion, one uniform each; from here: PTRS


def _poisson_inversion(u, lam):
    """The smallest k with P(K <= k) >= u: a walk up the distribution function of each
    element, all at once, dropping those that have arrived (at most ~40 steps for
    lam < 10; where the remaining mass is below rounding, the walk stops)."""
    k = np.zeros(lam.shape)
    p = np.exp(-lam)
    cdf = p.copy()
    todo = np.nonzero(u > cdf)[0]
    while len(todo):
        k[todo] += 1.0
        p[todo] *= lam[todo] / k[todo]
        cdf[todo] += p[todo]
        todo = todo[(u[todo] > cdf[todo]) & (p[todo] > 1e-17 * cdf[todo])]
    return k


def _ptrs_round(u, v, lam):
    """One round of Hörmann's transformed rejection with squeeze (PTRS, 1993) for
    lam >= 10: (candidate, accepted)."""
    slam, loglam = np.sqrt(lam), np.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2.0)
    u = u - 0.5
    us = 0.5 - np.abs(u)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.floor((2.0 * a / us + b) * u + lam + 0.43)
        quick = (us >= 0.07) & (v <= vr)
        possible = (k >= 0) & ~((us < 0.013) & (v > us))
        kk = np.where(possible, k, 0.0)
        accept = quick | possible & (
            np.log(v) + np.log(inv_alpha) - np.log(a / (us * us) + b)
            <= -lam + kk * loglam - _log_factorial(kk))
    return k, accept


def _by_rejection(out, keys, k64, per_key, small, large, params, inversion, one_round, name,
                  open_interval=False):
    """Fill `out` with counts drawn from two uniforms per element (u, v): where `small`,
    by ``inversion(u, *params)``; where `large`, by rounds of ``one_round(u, v, *params)``
    -> (counts, accepted), each element rejected drawing again from stream r at its own
    positions, so that it gets what it would get alone (vmap over keys needs no loop).
    (Poisson's PTRS and binomial's BTRS; `params` are arrays of out's size.)"""
    f64 = np.dtype(np.float64)
    words = streams(keys, 2 * per_key).reshape(-1, 2)       # two words per element
    u = uniform_from(words[:, 0], f64, open_interval)
    v = uniform_from(words[:, 1], f64, open_interval)
    if small.any():
        out[small] = inversion(u[small], *[p[small] for p in params])
    todo = np.nonzero(large)[0]
    position = 2 * (np.arange(out.size) % max(per_key, 1)).astype(np.uint64)
    for r in range(1, _MAX_ROUNDS + 1):
        if not len(todo):
            break
        if r > 1:       # redraws: stream r, the element's own positions
            u[todo] = uniform_from(words_at(k64[todo], position[todo], stream=r), f64,
                                   open_interval)
            v[todo] = uniform_from(words_at(k64[todo], position[todo] + np.uint64(1),
                                            stream=r), f64, open_interval)
        k, ok = one_round(u[todo], v[todo], *[p[todo] for p in params])
        out[todo[ok]] = k[ok]
        todo = todo[~ok]
    else:
        raise RuntimeError(f"{name}: no acceptance in {_MAX_ROUNDS} rounds")


def _poisson_np(key, lam, shape, dtype):
    keys, batch, n = _batch(key, shape)
    full = batch + tuple(shape)
    lam = np.broadcast_to(np.asarray(lam, np.float64), full).reshape(-1)
    k64 = np.repeat(key64(keys), n)
    out = np.full(lam.shape, -1.0)          # a rate < 0, nan or inf: -1 (JAX: -1 for < 0)
    if lam.size:
        small = (lam >= 0) & (lam < _PTRS_FROM)
        large = (lam >= _PTRS_FROM) & (lam < np.inf)
        _by_rejection(out, keys, k64, n, small, large, (lam,), _poisson_inversion,
                      _ptrs_round, "random_poisson")
    info = np.iinfo(dtype)
    big = out >= float(info.max)            # (a count past the dtype: its maximum)
    out = np.where(big, 0.0, np.maximum(out, info.min)).astype(dtype)
    out[big] = info.max
    return _scalar_out(out.reshape(full))


random_poisson = defprimitive(
    "random_poisson", _poisson_np, cost="call",
    abstract_eval=lambda args, params: (_key_shape(args, params), np.dtype(params["dtype"])),
    doc="random_poisson(key, lam, shape=s, dtype=t): Poisson counts (inversion for lam < 10, "
        "Hörmann's PTRS above); -1 where lam is negative, nan or infinite.")


# ---- binomial -----------------------------------------------------------------------------------
def _stirling_error(x):
    """log x! - ((x + 1/2) log x - x + log(2π)/2), for float arrays of integers x >= 1: the
    table below 128 (the difference loses ~1e-13 there, of a value above 6e-4), Stirling's
    series above (its next term is below 1e-18)."""
    small = x < 128
    xs = np.where(small, x, 1.0)
    table = _LOG_FACTORIALS[xs.astype(np.intp)] - (xs + 0.5) * np.log(xs) + xs \
        - 0.5 * math.log(2 * math.pi)
    xl = np.where(small, 128.0, x)
    series = 1 / (12 * xl) - 1 / (360 * xl ** 3) + 1 / (1260 * xl ** 5)
    return np.where(small, table, series)


def _deviance(x, mean):
    """x log(x/mean) + mean - x >= 0 without its cancellation near x = mean, where it is
    (x - mean)²/(2 mean) + ...: with v = (x - mean)/(x + mean), (x - mean) v + 2x Σⱼ
    v^(2j+1)/(2j+1), j >= 1, for |v| < 0.1 (ten terms: below 1e-20 after)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        v = (x - mean) / (x + mean)
        near = np.abs(v) < 0.1
        vv = np.where(near, v, 0.0)
        v2, power, tail = vv * vv, vv, np.zeros_like(vv)
        for j in range(1, 11):
            power = power * v2
            tail += power / (2 * j + 1)
        far = x * np.log(x / mean) + mean - x
    return np.where(near, (x - mean) * vv + 2 * x * tail, far)


def _log_binomial_pmf(k, n, q):
    """log of the Binomial(n, q) probability of k (0 < k < n, floats), by Loader's
    "saddle point" form (2000): log n!/(k!(n-k)!) q^k (1-q)^(n-k) as Stirling errors and
    deviances, none of which is large, so that it keeps its digits for n in the billions,
    where log n! - log k! - log (n-k)! would lose them."""
    return (_stirling_error(n) - _stirling_error(k) - _stirling_error(n - k)
            - _deviance(k, n * q) - _deviance(n - k, n * (1.0 - q))
            + 0.5 * np.log(n / (2 * math.pi * k * (n - k))))


_BTRS_FROM = 10.0       # n·q below: inversion, one uniform each; from here: BTRS


def _binomial_inversion(u, n, q):
    """The smallest k with P(K <= k) >= u, K ~ Binomial(n, q), q <= 1/2, n·q < 10: a walk
    up the distribution function of each element, all at once, dropping those that
    have arrived (a few dozen steps at most; where the remaining mass is below rounding,
    the walk stops)."""
    k = np.zeros(n.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        odds = q / (1.0 - q)
        p = np.exp(n * np.log1p(-q))        # P(K = 0): above e^-14 for n·q < 10, q <= 1/2
    cdf = p.copy()
    todo = np.nonzero((u > cdf) & (n > 0))[0]
    while len(todo):
        k[todo] += 1.0
        p[todo] *= (n[todo] - k[todo] + 1.0) / k[todo] * odds[todo]
        cdf[todo] += p[todo]
        todo = todo[(u[todo] > cdf[todo]) & (k[todo] < n[todo])
                    & (p[todo] > 1e-17 * cdf[todo])]
    return k


def _btrs_round(u, v, n, q):
    """One round of Hörmann's transformed rejection with squeeze for the binomial (BTRS,
    1993), n·q >= 10, q <= 1/2: (candidate, accepted)."""
    spq = np.sqrt(n * q * (1.0 - q))
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * q
    c = n * q + 0.5
    vr = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    mode = np.floor((n + 1.0) * q)
    u = u - 0.5
    us = 0.5 - np.abs(u)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.floor((2.0 * a / us + b) * u + c)
        quick = (us >= 0.07) & (v <= vr)
        inside = (k >= 0) & (k <= n)
        # (k = 0 and k = n are far in the tails for n·q >= 10: their exact logarithms)
        kk = np.where(inside & (k > 0) & (k < n), k, np.maximum(mode, 1.0))
        log_pmf = np.where(k == 0, n * np.log1p(-q), np.where(
            k == n, n * np.log(q), _log_binomial_pmf(kk, n, q)))
        accept = quick | inside & (np.log(v * alpha / (a / (us * us) + b))
                                   <= log_pmf - _log_binomial_pmf(mode, n, q))
    return k, accept


def _binomial_np(key, n, p, shape, dtype):
    keys, batch, m = _batch(key, shape)
    full = batch + tuple(shape)
    n = np.broadcast_to(np.asarray(n, np.float64), full).reshape(-1)
    p = np.broadcast_to(np.asarray(p, np.float64), full).reshape(-1)
    k64 = np.repeat(key64(keys), m)
    with np.errstate(invalid="ignore"):
        invalid = ~((n >= 0) & (p >= 0) & (p <= 1))          # (nan included)
        n = np.floor(n)                     # a fractional count: its integer part, as JAX
        flip = p > 0.5                      # the failures, K' = n - K ~ Binomial(n, 1 - p)
        q = np.where(invalid, 0.0, np.where(flip, 1.0 - p, p))
        finite = ~invalid & (n < np.inf)
        small = finite & (n * q < _BTRS_FROM)
        large = finite & ~small
    out = np.zeros(n.shape)
    if n.size:
        _by_rejection(out, keys, k64, m, small, large, (n, q), _binomial_inversion,
                      _btrs_round, "random_binomial", open_interval=True)
    with np.errstate(invalid="ignore"):
        out = np.where(flip, n - out, out)
        # n = inf: inf successes, unless there can be none (p = 0); JAX's nan for a count
        # that is negative or nan and for p outside [0, 1] or nan
        out = np.where(n == np.inf, np.where(p > 0, np.inf, 0.0), out)
    out = np.where(invalid, np.nan, out)
    return _scalar_out(out.reshape(full).astype(dtype))


random_binomial = defprimitive(
    "random_binomial", _binomial_np, cost="call",
    abstract_eval=lambda args, params: (_key_shape(args, params), np.dtype(params["dtype"])),
    doc="random_binomial(key, n, p, shape=s, dtype=t): Binomial(n, p) counts as floats "
        "(inversion for n·min(p, 1-p) < 10, Hörmann's BTRS above); nan where n < 0 or p is "
        "outside [0, 1].")


for _p in (random_key, random_split, random_fold_in, random_draw):
    _p.defpartials(*[None] * (2 if _p is random_fold_in else 1))
random_integers.defpartials(None, None, None)
random_poisson.defpartials(None, None)
random_binomial.defpartials(None, None, None)


# ---- the truncated normal's quantile function -------------------------------------------------
def _special():
    return SP.scipy_module("special")


def _truncated_normal_ppf_np(u, lower, upper):
    """z with Φ(z) = Φ(l) + u (Φ(h) - Φ(l)), in logs, on the lower side of 0: where the
    interval's middle is positive the mirror image -z of [-h, -l] at 1 - u is computed
    instead, so a far tail ([10, 11]) keeps its digits (Φ near 1 would lose them)."""
    sc = _special()
    u, lower, upper = np.broadcast_arrays(*[np.asarray(v, np.float64)
                                            for v in (u, lower, upper)])
    with np.errstate(invalid="ignore"):
        flip = lower + upper > 0
    lo, hi = np.where(flip, -upper, lower), np.where(flip, -lower, upper)
    with np.errstate(divide="ignore"):
        log_u, log_1mu = np.log(u), np.log1p(-u)
    # log((1 - u') Φ(lo) + u' Φ(hi)), u' = u or 1 - u: a sum of two positive terms
    target = np.logaddexp(np.where(flip, log_u, log_1mu) + sc.log_ndtr(lo),
                          np.where(flip, log_1mu, log_u) + sc.log_ndtr(hi))
    z = sc.ndtri_exp(target)
    z = np.clip(np.where(flip, -z, z), lower, upper)
    return _scalar_out(z)


def _mirrored(lower, upper, z):
    flip = S.gt(lower + upper, 0.0)
    lo, hi = S.select(flip, -upper, lower), S.select(flip, -lower, upper)
    zz = S.select(flip, -z, z)
    log_lo, log_hi, log_z = SP.log_ndtr(lo), SP.log_ndtr(hi), SP.log_ndtr(zz)
    # (Φ(lo) - Φ(hi))/Φ(hi), in [-1, 0): the interval's mass over Φ(hi), negated
    mass = S.expm1(log_lo - log_hi)
    return flip, lo, hi, zz, log_lo, log_hi, log_z, mass


def _dz_dlo(flip, lo, hi, zz, log_lo, log_hi, log_z, mass):
    # φ(lo)/φ(z) · (Φ(hi) - Φ(z))/(Φ(hi) - Φ(lo)), mirrored coordinates
    return S.exp((zz * zz - lo * lo) / 2) * S.expm1(log_z - log_hi) / mass


def _dz_dhi(flip, lo, hi, zz, log_lo, log_hi, log_z, mass):
    # φ(hi)/φ(z) · (Φ(z) - Φ(lo))/(Φ(hi) - Φ(lo))
    return S.exp((zz * zz - hi * hi) / 2 + log_z - log_hi) * S.expm1(log_lo - log_z) / mass


def _partial_u(u, lower, upper, ans):
    parts = _mirrored(lower, upper, ans)
    zz, log_hi, mass = parts[3], parts[5], parts[7]
    # (Φ(hi) - Φ(lo))/φ(z), the same in either orientation
    return -mass * S.exp(log_hi + zz * zz / 2) * math.sqrt(2 * math.pi)


def _partial_lower(u, lower, upper, ans):
    parts = _mirrored(lower, upper, ans)
    return S.select(parts[0], _dz_dhi(*parts), _dz_dlo(*parts))


def _partial_upper(u, lower, upper, ans):
    parts = _mirrored(lower, upper, ans)
    return S.select(parts[0], _dz_dlo(*parts), _dz_dhi(*parts))


truncated_normal_ppf = defprimitive(
    "truncated_normal_ppf", _truncated_normal_ppf_np, cost="call",
    doc="truncated_normal_ppf(u, lower, upper): the quantile at u of the standard normal "
        "distribution truncated to [lower, upper] (SciPy's log_ndtr and ndtri_exp).")
truncated_normal_ppf.defpartials(_partial_u, _partial_lower, _partial_upper)


def _wald_dx_dmu(mu, x, ans):
    """dx/dμ of a Wald draw x (shape parameter 1) at a fixed value of its distribution
    function F = Φ(a) + e^(2/μ) Φ(-b), a = (x/μ - 1)/√x, b = (x/μ + 1)/√x:
    -(∂F/∂μ)/f(x).  In ∂F/∂μ the two terms in φ cancel (e^(2/μ) φ(b) = φ(a)), leaving
    (2/μ²) e^(2/μ) Φ(-b); with the density f, in logs, so that e^(2/μ) for a small mean
    does not overflow.  Of `ans` (the draw as the primitive returns it), so that its own
    derivative follows x moving with μ."""
    x = ans
    b = (x / mu + 1.0) / S.sqrt(x)
    log_f = -0.5 * math.log(2 * math.pi) - 1.5 * S.log(x) - (x - mu) ** 2 / (2.0 * mu * mu * x)
    return S.exp(math.log(2.0) - 2.0 * S.log(mu) + 2.0 / mu + SP.log_ndtr(-b) - log_f)


wald_reparam = defprimitive(
    "wald_reparam", lambda mu, x: _scalar_out(np.array(np.broadcast_to(
        x, np.broadcast_shapes(np.shape(mu), np.shape(x))))),
    cost="call",
    doc="wald_reparam(mean, x): the Wald draw x itself, whose derivative in the mean is the "
        "implicit one, at a fixed value of the distribution function (x has none: it is "
        "the draw).")
wald_reparam.defpartials(_wald_dx_dmu, None)


# ---- batching: the batch joins the key array's batch dimensions -----------------------------
def _keyed(args, mapped, node):
    """random_draw, random_integers, random_loggamma, random_poisson, random_split: the
    batch of keys (a shared key broadcast to it) is the key array's leading batch
    dimension, and batched parameters line up with the result, which has it in front."""
    size = next(shape_of(a)[0] for a, m in zip(args, mapped) if m)
    rank = len(node.shape)
    key = batched(args[0], mapped[0], size)
    return node.op(key, *[lift_rank(a, m, rank) for a, m in zip(args[1:], mapped[1:])],
                   **node.params)


def _fold_in_batch(args, mapped, node):
    """random_fold_in: the key's batch dimensions and data's broadcast, with the batch in
    front of both."""
    rank = len(node.shape) - 1                  # the result's batch dimensions, per example
    (key, data), (mk, md) = args, mapped
    if mk:
        s = tuple(shape_of(key))
        key = reshape(key, shape=s[:1] + (1,) * (rank - (len(s) - 2)) + s[1:])
    return node.op(key, lift_rank(data, md, rank))


for _p in (random_draw, random_integers, random_loggamma, random_poisson, random_binomial,
           random_split):
    _p.defbatch(_keyed)
random_fold_in.defbatch(_fold_in_batch)
random_key.defbatch(lambda args, mapped, node: node.op(args[0]))
# (declared here: batching.py gives elementwise primitives their rule when it is imported,
# which is before this module defines this one)
truncated_normal_ppf.defbatch(_elementwise)
wald_reparam.defbatch(_elementwise)
loggamma_grad.defbatch(_elementwise)
loggamma_grad_da.defbatch(_elementwise)
