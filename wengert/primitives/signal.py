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

from .registry import defprimitive, float_dtype, shape_of
from .array import flip, pad
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
    terms = [convolve(ts[0], b, mode=mode, method=method) if ts[0] is not None else None,
             convolve(a, ts[1], mode=mode, method=method) if ts[1] is not None else None]
    terms = [t for t in terms if t is not None]
    return terms[0] if len(terms) == 1 else terms[0] + terms[1]


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


__all__ = ["convolve", "window", "valid_covers"]
