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
from .special import scipy_module

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



# ---- SciPy's real trigonometric transforms: DCT and DST of types 1 to 4 ----------------------
# One primitive for scipy.fft's dctn and dstn, whose value is SciPy's own.  The inverse
# transforms need none of their own: SciPy's idct of a type is its dct of the inverse type
# under the opposite norm, bit for bit (wengert.scipy.fft maps them).
#
# Along one axis the transform is s · diag(l) A diag(r), with A SciPy's unnormalised
# matrix of its type, s the norm's scale (the same for types 2 and 3 of one length) and l,
# r the scalings `orthogonalize` puts on the first or last entries.  From SciPy's
# definitions (N points):
#     DCT-I    A_kn = c_n cos(πkn/(N-1)),        c = 1 at n = 0 and N-1, 2 elsewhere
#     DCT-II   A_kn = 2 cos(πk(2n+1)/2N)
#     DCT-III  A_kn = c_n cos(π(2k+1)n/2N),      c = 1 at n = 0, 2 elsewhere
#     DCT-IV   A_kn = 2 cos(π(2k+1)(2n+1)/4N)
#     DST-I    A_kn = 2 sin(π(k+1)(n+1)/(N+1))
#     DST-II   A_kn = 2 sin(π(k+1)(2n+1)/2N)
#     DST-III  A_kn = c_n sin(π(2k+1)(n+1)/2N),  c = 1 at n = N-1, 2 elsewhere
#     DST-IV   A_kn = 2 sin(π(2k+1)(2n+1)/4N)
# so Aᵀ = diag(p) A' diag(q) with A' the matrix of the type `_TRANSPOSED` names: DCT-IV,
# DST-I and DST-IV are symmetric; DCT-IIᵀ is DCT-III with the first entry of its input
# doubled, DCT-IIIᵀ DCT-II with the first entry of its result halved (DST: the last);
# DCT-Iᵀ = diag(d) DCT-I diag(1/d), d = ½ at both ends.  Orthogonalized (l, r: 1/√2 and
# √2 at those same ends), l·q = r' and p·r = l' make the transpose exactly the
# transposed type, orthogonalized, under the same norm.  A transform of several axes is
# the product of one such matrix per axis, and so is its transpose.

#: (kind, type) -> (the transposed type, p's (first, last), q's (first, last))
_TRANSPOSED = {
    ("dct", 1): (1, (0.5, 0.5), (2.0, 2.0)), ("dct", 2): (3, (1.0, 1.0), (2.0, 1.0)),
    ("dct", 3): (2, (0.5, 1.0), (1.0, 1.0)), ("dct", 4): (4, (1.0, 1.0), (1.0, 1.0)),
    ("dst", 1): (1, (1.0, 1.0), (1.0, 1.0)), ("dst", 2): (3, (1.0, 1.0), (1.0, 2.0)),
    ("dst", 3): (2, (1.0, 0.5), (1.0, 1.0)), ("dst", 4): (4, (1.0, 1.0), (1.0, 1.0)),
}

_TRIG_DTYPES: dict = {}


def _trig_dtype(dtype):
    """scipy.fft's result dtype for an input of `dtype` (float16 gives float32, ints
    float64, complex64 stays): asked of SciPy once per dtype, on two zeros."""
    if dtype not in _TRIG_DTYPES:
        _TRIG_DTYPES[dtype] = scipy_module("fft").dct(np.zeros(2, dtype)).dtype
    return _TRIG_DTYPES[dtype]


def _trig_np(x, kind, type, s, axes, norm, orthogonalize, workers):
    transform = getattr(scipy_module("fft"), kind + "n")
    return transform(x, type=type, s=s, axes=axes, norm=norm, orthogonalize=orthogonalize,
                     workers=workers)


trig_transform = defprimitive(
    "trig_transform", _trig_np, linear=True, complex=True,
    abstract_eval=lambda args, params: (_shape_with(args[0].shape, params["axes"], params["s"]),
                                        _trig_dtype(args[0].dtype)),
    doc="trig_transform(x, kind='dct' or 'dst', type=1..4, s=lengths, axes=axes, "
        "norm='backward', orthogonalize=False, workers=None): scipy.fft's dctn or dstn, x "
        "cropped or zero-padded to the lengths s along the distinct axes.")


def _edge_weights(g, n, axis, first, last):
    """1 along `axis` of length n but `first` on the first entry and `last` on the last
    (their product where n = 1), shaped to broadcast against g, in g's real dtype; None
    where all are 1."""
    if first == 1 and last == 1:
        return None
    w = np.ones(n, dtype=_real_dtype(dtype_of(g)))
    w[0] *= first
    w[-1] *= last
    shape = [1] * len(shape_of(g))
    shape[axis] = n
    return w.reshape(shape)


def _scaled(g, axes, ends):
    for ax, (first, last) in zip(axes, ends):
        w = _edge_weights(g, shape_of(g)[ax], ax, first, last)
        if w is not None:
            g = g * w
    return g


@trig_transform.defvjp
def _(g, x, ans, kind, type, s, axes, norm, orthogonalize, workers):
    transposed, p, q = _TRANSPOSED[kind, type]
    if not orthogonalize:
        g = _scaled(g, axes, [q] * len(axes))
    xbar = trig_transform(g, kind=kind, type=transposed, s=s, axes=axes, norm=norm,
                          orthogonalize=orthogonalize, workers=workers)
    if not orthogonalize:
        xbar = _scaled(xbar, axes, [p] * len(axes))
    return (_resize(xbar, axes, [shape_of(x)[ax] for ax in axes]),)
