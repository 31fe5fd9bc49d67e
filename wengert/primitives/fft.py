"""Discrete Fourier transforms: the complex transform along some axes (forward or inverse),
and the real transforms `rfft` and `irfft` along one axis.  NumPy computes the values
(numpy.fft); the derivatives are linear maps written with these same primitives, so they
differentiate again.  All three are linear, so a JVP is the primitive applied to the
tangent; a VJP is the transpose of the map without conjugation (docs/complex.md):
Re Σ c·(J t) = Re Σ (Jᵀc)·t.

With σ the scale `norm` asks for (1, 1/√n or 1/n):

    fftn, ifftn: F_jk = σ exp(∓2πi jk/n) is symmetric, and a transform of several axes is
        a product of such matrices on different axes, so the transpose is the same
        transform.  Cropping or zero-padding the input to `s` first (a 0/1 matrix P)
        transposes to the opposite resizing: x̄ = Pᵀ F c.
    rfft: X_k = σ Σ_j x_j e^{-2πijk/n} (k ≤ n//2) of a real x, so
        x̄_j = σ Re Σ_k c_k e^{-2πijk/n} = σ Re Σ_k conj(c_k) e^{2πijk/n}.  irfft of a half
        spectrum Y sums Re Y_0, twice Re(Y_k e^{2πijk/n}) for each interior bin, and
        Re Y_{n/2} for an even n: so x̄ = irfft(w·conj(c)), w = ½ on the interior bins and
        1 on DC and Nyquist, under the opposite norm (whose inverse scales by σ).
    irfft: x_j = σ (Re Y_0 + 2 Σ Re(Y_k e^{2πijk/n}) + Re Y_{n/2} (-1)^j), the imaginary
        parts of DC and Nyquist ignored.  Ȳ_k = σ w'_k Σ_j c_j e^{2πijk/n} =
        w'·conj(rfft(c)) under the opposite norm, w' = 2 on the interior bins and 1 on DC
        and Nyquist, where rfft of a real c is real, as the ignored parts need.
"""
from __future__ import annotations

import numpy as np

from .registry import defprimitive, float_dtype, real_dtype, shape_of
from .array import dtype_of, getitem, pad
from . import scalar as S

# The norm whose inverse transform scales by what the forward one of `norm` does.
OPPOSITE = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _complex_dtype(dtype):
    return np.result_type(dtype, 1j)        # NumPy's: float32 -> complex64, ints -> complex128


def _real_dtype(dtype):
    return float_dtype(real_dtype(dtype))     # NumPy's: complex64 -> float32, ints -> float64


def _shape_with(shape, axes, lengths):
    shape = list(shape)
    for ax, n in zip(axes, lengths):
        shape[ax] = n
    return tuple(shape)


def _fftn_np(x, s, axes, inverse, norm):
    # numpy.fft.fftn of one axis is numpy.fft.fft, call for call: the same bits
    return (np.fft.ifftn if inverse else np.fft.fftn)(x, s=s, axes=axes, norm=norm)


fftn = defprimitive(
    "fftn", _fftn_np, linear=True, complex=True,
    abstract_eval=lambda args, params: (_shape_with(args[0].shape, params["axes"], params["s"]),
                                        _complex_dtype(args[0].dtype)),
    doc="fftn(x, s=lengths, axes=axes, inverse=False, norm='backward'): NumPy's fftn (or "
        "ifftn), x cropped or zero-padded to the lengths s along the distinct axes.")

rfft = defprimitive(
    "rfft", lambda x, n, axis, norm: np.fft.rfft(x, n=n, axis=axis, norm=norm),
    linear=True, complex=True,
    abstract_eval=lambda args, params: (
        _shape_with(args[0].shape, (params["axis"],), (params["n"] // 2 + 1,)),
        _complex_dtype(args[0].dtype)),
    doc="rfft(x, n=n, axis=axis, norm='backward'): NumPy's rfft of a real x, the n//2 + 1 "
        "bins of the spectrum of x cropped or zero-padded to length n.")

irfft = defprimitive(
    "irfft", lambda x, n, axis, norm: np.fft.irfft(x, n=n, axis=axis, norm=norm),
    linear=True, complex=True,
    abstract_eval=lambda args, params: (
        _shape_with(args[0].shape, (params["axis"],), (params["n"],)),
        _real_dtype(args[0].dtype)),
    doc="irfft(x, n=n, axis=axis, norm='backward'): NumPy's irfft, the real signal of "
        "length n whose half spectrum x is (its first n//2 + 1 bins, zero-padded).")


def _resize(x, axes, lengths):
    """x cropped (its first entries kept) or zero-padded at the end to `lengths` along
    `axes`: what numpy.fft does to an input of another length than n, and the transpose of
    the opposite resizing."""
    shape = shape_of(x)
    if all(shape[ax] == n for ax, n in zip(axes, lengths)):
        return x
    want = dict(zip(axes, lengths))
    if any(n < shape[ax] for ax, n in want.items()):
        x = getitem(x, index=tuple(("slice", None, want.get(ax), None)
                                   for ax in range(len(shape))))
    if any(n > shape[ax] for ax, n in want.items()):
        x = pad(x, pad_width=tuple((0, max(want.get(ax, d) - d, 0))
                                   for ax, d in enumerate(shape_of(x))))
    return x


def _bin_weights(g, n, axis, interior):
    """`interior` on the interior bins of a half spectrum of length n//2 + 1 along `axis`,
    1 on DC and (for an even n) on Nyquist, shaped to broadcast against g, in the real
    dtype of g (a complex64 cotangent stays complex64)."""
    w = np.full(n // 2 + 1, interior, dtype=_real_dtype(dtype_of(g)))
    w[0] = 1
    if n % 2 == 0:
        w[-1] = 1
    shape = [1] * len(shape_of(g))
    shape[axis] = len(w)
    return w.reshape(shape)


fftn.defvjp(lambda g, x, ans, s, axes, inverse, norm: (
    _resize(fftn(g, s=s, axes=axes, inverse=inverse, norm=norm), axes,
           [shape_of(x)[ax] for ax in axes]),))

rfft.defvjp(lambda g, x, ans, n, axis, norm: (
    _resize(irfft(S.conj(g) * _bin_weights(g, n, axis, 0.5), n=n, axis=axis,
                 norm=OPPOSITE[norm]), (axis,), (shape_of(x)[axis],)),))


@irfft.defvjp
def _(g, x, ans, n, axis, norm):
    spectrum = S.conj(rfft(g, n=n, axis=axis, norm=OPPOSITE[norm]))
    xbar = _resize(spectrum * _bin_weights(spectrum, n, axis, 2.0), (axis,),
                  (shape_of(x)[axis],))
    # a real x (hfft's input) in a graph that may hold no complex value, where the
    # sweep would not take the real part itself
    return (xbar if dtype_of(x).kind == "c" else S.real_part(xbar),)

