"""SciPy's convolution (`scipy.signal.convolve`) as a primitive, for `wengert.scipy.signal`.

convolve(a, b, mode) is y = a ∗ b in N dimensions, y_n = Σ_k a_k b_(n-k), cut to `mode`:
'full' keeps all of it (shape s_a + s_b - 1), 'same' a's shape from its centre, 'valid'
the part where one array covers the other.  Every mode is the full convolution read from
an offset o (per axis), so with the cotangent ȳ put back at o in zeros (ȳ_full):

    JVP:  dy = da ∗ b + a ∗ db                        (bilinear)
    VJP:  ā = ȳ_full ⋆ b,   b̄ = ȳ_full ⋆ a           (⋆ the 'valid' cross-correlation,
                                                      a convolution with the other flipped)

Both are convolutions again, so the rules differentiate to any order.  Complex arrays
are holomorphic (their VJPs transpose without conjugating, docs/complex.md).  The value
is SciPy's own, with the method (`'auto'`, `'direct'`, `'fft'`, or `'oa'`: SciPy's
overlap-add `oaconvolve`) it was asked for; the rules' convolutions use the same method.
"""
from __future__ import annotations

import numpy as np

from .registry import defprimitive, float_dtype, shape_of
from .array import flip, pad, reshape, sum_nonzero
from .special import scipy_module


def valid_covers(sa, sb):
    """Whether 'valid' has a result: one shape at least the other's on every axis (SciPy
    refuses anything else)."""
    return all(p >= q for p, q in zip(sa, sb)) or all(p <= q for p, q in zip(sa, sb))


def window(sa, sb, mode):
    """(offset, length) per axis of `mode`'s part of the full convolution of shapes sa, sb
    (SciPy's: 'same' is centred on the full result, `(n_b - 1) // 2` in)."""
    if mode == "full":
        return [(0, p + q - 1) for p, q in zip(sa, sb)]
    if mode == "same":
        return [((q - 1) // 2, p) for p, q in zip(sa, sb)]
    return [(min(p, q) - 1, abs(p - q) + 1) for p, q in zip(sa, sb)]


def _convolve_np(a, b, mode, method):
    signal = scipy_module("signal")
    if method == "oa":
        return signal.oaconvolve(a, b, mode=mode)
    return signal.convolve(a, b, mode=mode, method=method)


def _convolve_aval(args, params):
    sa, sb = args[0].shape, args[1].shape
    return (tuple(n for _, n in window(sa, sb, params["mode"])),
            float_dtype(args[0].dtype, args[1].dtype))


convolve = defprimitive(
    "convolve", _convolve_np, cost="call", abstract_eval=_convolve_aval,
    doc="convolve(a, b, mode=m, method=meth): the N-dimensional convolution of a and b "
        "(the same number of axes) cut to mode 'full', 'same' or 'valid' "
        "(scipy.signal.convolve).")
convolve.complex = True


@convolve.defjvp
def _(ts, a, b, ans, mode, method):
    return sum_nonzero([
        convolve(ts[0], b, mode=mode, method=method) if ts[0] is not None else None,
        convolve(a, ts[1], mode=mode, method=method) if ts[1] is not None else None])


@convolve.defvjp
def _(g, a, b, ans, mode, method):
    sa, sb = shape_of(a), shape_of(b)
    spans = window(sa, sb, mode)
    full = [p + q - 1 for p, q in zip(sa, sb)]
    if mode != "full":
        g = pad(g, pad_width=tuple((o, f - o - n) for (o, n), f in zip(spans, full)))
    axes = tuple(range(len(sa)))
    return (convolve(g, flip(b, axes=axes), mode="valid", method=method),
            convolve(g, flip(a, axes=axes), mode="valid", method=method))


# --------------------------------------------------------------------------------------
# lfilter: a linear recursive (IIR) filter along the last axis
# --------------------------------------------------------------------------------------
# y = lfilter(b, a, x) solves a ∗ y = b ∗ x for n = 0..N-1, the convolutions causal and cut
# to N samples, with nothing before sample 0 (SciPy's lfilter without zi).  Differentiated:
#
#     da ∗ y + a ∗ dy = db ∗ x + b ∗ dx,  so  dy = lfilter(b, a, dx) + lfilter(db, a, x)
#                                                 - lfilter(da, a, y)
#
# (filters commute).  The filter is a lower-triangular Toeplitz matrix along the axis, so
# its transpose is the same filter run backwards in time: x̄ = flip(lfilter(b, a, flip(ȳ))).
# With w = flip(lfilter([1], a, flip(ȳ))), b̄_k = Σ_n w_n x_(n-k) and ā_k = -Σ_n w_n y_(n-k)
# (summed over the other axes too): correlations at lags 0..len-1, one valid convolution.
def _lfilter_np(b, a, x):
    return scipy_module("signal").lfilter(b, a, x)


lfilter = defprimitive(
    "lfilter", _lfilter_np, cost="call",
    abstract_eval=lambda args, params: (tuple(args[2].shape), float_dtype(*args)),
    doc="lfilter(b, a, x): the linear filter a ∗ y = b ∗ x along x's last axis, from rest "
        "(scipy.signal.lfilter without zi).")
lfilter.complex = True


@lfilter.defjvp
def _(ts, b, a, x, ans):
    db, da, dx = ts
    return sum_nonzero([lfilter(b, a, dx) if dx is not None else None,
                         lfilter(db, a, x) if db is not None else None,
                         -lfilter(da, a, ans) if da is not None else None])


def _backwards(c, a, v):
    """The transpose of lfilter(c, a, ·) applied to v: the filter run from the end."""
    last = (len(shape_of(v)) - 1,)
    return flip(lfilter(c, a, flip(v, axes=last)), axes=last)


def _lags(w, v, m):
    """Σ_n w_n v_(n-k) over the last axis and the others, for k = 0..m-1: the valid
    convolution of w, padded with m-1 zeros at its end, with v reversed on every axis."""
    shape = shape_of(v)
    if not shape[-1]:                               # (no samples: nothing to correlate)
        return np.zeros(m, float_dtype(w, v))
    axes = tuple(range(len(shape)))
    widths = tuple((0, 0) for _ in shape[:-1]) + ((0, m - 1),)
    out = convolve(pad(w, pad_width=widths), flip(v, axes=axes), mode="valid", method="auto")
    return reshape(out, shape=(m,))


@lfilter.defvjp
def _(g, b, a, x, ans):
    w = _backwards(np.ones(1, float_dtype(a)), a, g)
    return (_lags(w, x, shape_of(b)[0]), -_lags(w, ans, shape_of(a)[0]),
            _backwards(b, a, g))


__all__ = ["convolve", "lfilter", "window", "valid_covers"]
