"""wengert.numpy.fft: NumPy's discrete Fourier transforms, differentiable.

fft, ifft, fft2, ifft2, fftn, ifftn, rfft, irfft, rfft2, irfft2, rfftn, irfftn, hfft and
ihfft take traced values, real or complex, with NumPy's signatures, values and dtypes;
fftshift and ifftshift are rolls, so they differentiate too; fftfreq and rfftfreq are
NumPy's.  On plain values every function is NumPy's own.  The derivatives follow the
convention of docs/complex.md: the transpose of fft is fft, of rfft an irfft with the
interior bins halved (see `wengert.primitives.fft`).

Example:
    >>> import numpy, wengert as wg
    >>> import wengert.numpy as np
    >>> x = numpy.array([1.0, 2.0, 0.0, -1.0])
    >>> energy = lambda x: np.sum(np.abs(np.fft.fft(x)) ** 2)     # Parseval: 4 Σ x²
    >>> wg.grad(energy)(x)                                         # 2 · 4 · x
    array([ 8., 16.,  0., -8.])
"""
from __future__ import annotations

import operator
import warnings

import numpy as _np

from ..primitives import fft as F
from . import _numpy_unless_traced, _refuse, conj, roll, _one_axis as _axis
from .dispatch import rest_of as _rest_of

fftfreq = _np.fft.fftfreq
rfftfreq = _np.fft.rfftfreq

_NORMS = {None: "backward", "backward": "backward", "ortho": "ortho", "forward": "forward"}


# ---- NumPy's reading of the arguments, with its errors -----------------------------------------
def _norm(norm):
    """The norm's name (None is "backward"), or NumPy's ValueError."""
    try:
        return _NORMS[norm]
    except (KeyError, TypeError):           # (TypeError: an unhashable norm)
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or '
                         '"forward".') from None


def _length(n):
    """A transform's length as an int: NumPy's TypeError for a non-integer, its ValueError
    below 1."""
    if isinstance(n, bool):
        raise TypeError("an integer is required")
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    return n


def _one_axis(a, n, axis, norm, out, who, default=None):
    """(axis, n, norm) of a one-axis transform of the traced `a`; n defaults to
    `default(length along the axis)`, or that length."""
    _refuse(f"fft.{who}", out=out is not None)
    norm = _norm(norm)
    axis = _axis(axis, a.ndim, f"numpy.fft.{who}")
    if n is None:
        n = a.shape[axis] if default is None else default(a.shape[axis])
    return axis, _length(n), norm


def _lengths_and_axes(a, s, axes, out, who, halved=False):
    """NumPy's reading of `s` and `axes` for an n-dimensional transform: lists of lengths
    (None: the one-axis transform's default) and of non-negative axes.  `s` without
    `axes` means the last len(s) axes, and None in `s` the default length, both
    deprecated by NumPy 2 (its DeprecationWarning); -1 is the whole axis.  `halved`: an
    inverse real transform, whose last length defaults to 2(m - 1) for a half spectrum of
    m bins."""
    _refuse(f"fft.{who}", out=out is not None)
    if s is None:
        axes = list(range(a.ndim) if axes is None else axes)
        axes = [_axis(ax, a.ndim, f"numpy.fft.{who}") for ax in axes]
        s = [a.shape[ax] for ax in axes]
        if halved and axes:
            s[-1] = (s[-1] - 1) * 2
    else:
        s = list(s)
        if axes is None:
            warnings.warn(f"numpy.fft.{who}: `axes` should be given with `s` (deprecated in "
                          "NumPy 2.0)", DeprecationWarning, stacklevel=4)
            axes = range(-len(s), 0)
        axes = [_axis(ax, a.ndim, f"numpy.fft.{who}") for ax in axes]
        if len(s) != len(axes):
            raise ValueError("Shape and axes have different lengths.")
        if None in s:
            warnings.warn(f"numpy.fft.{who}: None in `s` is deprecated in NumPy 2.0; give the "
                          "length", DeprecationWarning, stacklevel=4)
        s = [a.shape[ax] if n is not None and n == -1 else n for n, ax in zip(s, axes)]
    return s, axes


def _complex_transform(a, s, axes, inverse, norm):
    """The complex transforms along `axes` in NumPy's order for an n-dimensional one, the
    last axis first.  One primitive for distinct axes; an axis named twice is transformed
    twice, one primitive after another."""
    if len(set(axes)) < len(axes):
        for n, ax in reversed(list(zip(s, axes))):
            a = _complex_transform(a, [n], [ax], inverse, norm)
        return a
    if not axes:
        return a                            # (NumPy's fftn of no axes: the array itself)
    s = tuple(a.shape[ax] if n is None else _length(n) for n, ax in zip(s, axes))
    return F.fftn(a, s=s, axes=tuple(axes), inverse=inverse, norm=norm)


def _real_input(a, who):
    if a.dtype.kind == "c":                 # (NumPy's rfft has no complex loop)
        raise TypeError(f"numpy.fft.{who} takes real input, not {a.dtype}: use fft for a "
                        "complex signal")
    return a


# ---- one axis ------------------------------------------------------------------------------
@_numpy_unless_traced(_np.fft.fft)
def fft(a, n=None, axis=-1, norm=None, out=None):
    """NumPy's ``fft``, differentiable: a complex-linear map whose matrix is symmetric, so
    its VJP is the same transform of the cotangent.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> k = 1               # d Re X_k / d x_j = cos(2π kj/N) for a real x
        >>> wg.grad(lambda x: np.real(np.fft.fft(x)[k]))(numpy.zeros(4)).round(12)
        array([ 1.,  0., -1.,  0.])
    """
    axis, n, norm = _one_axis(a, n, axis, norm, out, "fft")
    return F.fftn(a, s=(n,), axes=(axis,), inverse=False, norm=norm)


@_numpy_unless_traced(_np.fft.ifft)
def ifft(a, n=None, axis=-1, norm=None, out=None):
    """NumPy's ``ifft``, differentiable; its VJP is ifft of the cotangent.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> wg.grad(lambda x: np.real(np.fft.ifft(x)[0]))(numpy.zeros(4))   # 1/N each
        array([0.25, 0.25, 0.25, 0.25])
    """
    axis, n, norm = _one_axis(a, n, axis, norm, out, "ifft")
    return F.fftn(a, s=(n,), axes=(axis,), inverse=True, norm=norm)


@_numpy_unless_traced(_np.fft.rfft)
def rfft(a, n=None, axis=-1, norm=None, out=None):
    """NumPy's ``rfft`` of a real signal, differentiable: its VJP is an irfft of the
    conjugate cotangent with the interior bins halved (they stand for two bins each).

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> wg.grad(lambda x: np.sum(np.real(np.fft.rfft(x))))(numpy.zeros(4))
        array([3., 0., 1., 0.])
    """
    axis, n, norm = _one_axis(_real_input(a, "rfft"), n, axis, norm, out, "rfft")
    return F.rfft(a, n=n, axis=axis, norm=norm)


@_numpy_unless_traced(_np.fft.irfft)
def irfft(a, n=None, axis=-1, norm=None, out=None):
    """NumPy's ``irfft`` (n defaults to 2(m - 1) for m bins), differentiable: it reads only
    the real parts of the DC and Nyquist bins, and its VJP gives those bins real
    cotangents.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> y = numpy.array([1.0, 1.0, 1.0]) + 0j
        >>> wg.grad(lambda y: np.fft.irfft(y)[0])(y)         # 1/4 (1, 2, 1): bin 1 is twice
        array([0.25+0.j, 0.5 +0.j, 0.25+0.j])
    """
    axis, n, norm = _one_axis(a, n, axis, norm, out, "irfft", lambda m: (m - 1) * 2)
    return F.irfft(a, n=n, axis=axis, norm=norm)


@_numpy_unless_traced(_np.fft.hfft)
def hfft(a, n=None, axis=-1, norm=None, out=None):
    """NumPy's ``hfft``: the real spectrum of a signal with Hermitian symmetry, given by
    its first half; irfft of the conjugate under the opposite norm.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> np.fft.hfft(numpy.array([1.0, 2.0, 3.0]))     # the spectrum of [1, 2, 3, 2]
        array([ 8., -2.,  0., -2.])
    """
    axis, n, norm = _one_axis(a, n, axis, norm, out, "hfft", lambda m: (m - 1) * 2)
    return F.irfft(conj(a), n=n, axis=axis, norm=F.OPPOSITE[norm])


@_numpy_unless_traced(_np.fft.ihfft)
def ihfft(a, n=None, axis=-1, norm=None, out=None):
    """NumPy's ``ihfft`` of a real signal: the conjugate of rfft under the opposite norm.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> np.fft.ihfft(numpy.array([8.0, -2.0, 0.0, -2.0]))     # hfft's inverse
        array([1.-0.j, 2.-0.j, 3.-0.j])
    """
    axis, n, norm = _one_axis(_real_input(a, "ihfft"), n, axis, norm, out, "ihfft")
    return conj(F.rfft(a, n=n, axis=axis, norm=F.OPPOSITE[norm]))


# ---- several axes ------------------------------------------------------------------------------
@_numpy_unless_traced(_np.fft.fftn)
def fftn(a, s=None, axes=None, norm=None, out=None):
    """NumPy's ``fftn``, differentiable (its VJP is fftn of the cotangent).

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> wg.grad(lambda x: np.real(np.fft.fftn(x)[0, 0]))(numpy.zeros((2, 3)))
        array([[1., 1., 1.],
               [1., 1., 1.]])
    """
    s, axes = _lengths_and_axes(a, s, axes, out, "fftn")
    return _complex_transform(a, s, axes, False, _norm(norm))


@_numpy_unless_traced(_np.fft.ifftn)
def ifftn(a, s=None, axes=None, norm=None, out=None):
    """NumPy's ``ifftn``, differentiable (its VJP is ifftn of the cotangent).

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> wg.grad(lambda x: np.real(np.fft.ifftn(x)[0, 0]))(numpy.zeros((2, 2)))
        array([[0.25, 0.25],
               [0.25, 0.25]])
    """
    s, axes = _lengths_and_axes(a, s, axes, out, "ifftn")
    return _complex_transform(a, s, axes, True, _norm(norm))


@_numpy_unless_traced(_np.fft.fft2)
def fft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """NumPy's ``fft2``: `fftn` of the last two axes.

    Example:
        >>> import numpy, wengert.numpy as np
        >>> np.fft.fft2(numpy.ones((2, 2))).real
        array([[4., 0.],
               [0., 0.]])
    """
    return fftn(a, s, axes, norm, out)


@_numpy_unless_traced(_np.fft.ifft2)
def ifft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """NumPy's ``ifft2``: `ifftn` of the last two axes.

    Example:
        >>> import numpy, wengert.numpy as np
        >>> np.fft.ifft2(numpy.ones((2, 2))).real
        array([[1., 0.],
               [0., 0.]])
    """
    return ifftn(a, s, axes, norm, out)


@_numpy_unless_traced(_np.fft.rfftn)
def rfftn(a, s=None, axes=None, norm=None, out=None):
    """NumPy's ``rfftn`` of a real array: rfft along the last of `axes`, then fft along
    the others, as NumPy computes it.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> wg.grad(lambda x: np.real(np.fft.rfftn(x)[1, 1]))(numpy.zeros((2, 4)))
        array([[ 1.,  0., -1.,  0.],
               [-1.,  0.,  1.,  0.]])
    """
    s, axes = _lengths_and_axes(_real_input(a, "rfftn"), s, axes, out, "rfftn")
    norm = _norm(norm)
    n = a.shape[axes[-1]] if s[-1] is None else _length(s[-1])
    a = F.rfft(a, n=n, axis=axes[-1], norm=norm)
    return _complex_transform(a, s[:-1], axes[:-1], False, norm)


@_numpy_unless_traced(_np.fft.irfftn)
def irfftn(a, s=None, axes=None, norm=None, out=None):
    """NumPy's ``irfftn``: ifft along all of `axes` but the last, then irfft along it, as
    NumPy computes it (the last length defaults to 2(m - 1)).

    Example:
        >>> import numpy, wengert.numpy as np
        >>> np.fft.irfftn(numpy.ones((2, 3)))
        array([[1., 0., 0., 0.],
               [0., 0., 0., 0.]])
    """
    s, axes = _lengths_and_axes(a, s, axes, out, "irfftn", halved=True)
    norm = _norm(norm)
    # (NumPy's order: the first axis first, which the primitive's last-first order gives
    # for the axes reversed)
    a = _complex_transform(a, s[-2::-1], axes[-2::-1], True, norm)
    n = (a.shape[axes[-1]] - 1) * 2 if s[-1] is None else _length(s[-1])
    return F.irfft(a, n=n, axis=axes[-1], norm=norm)


@_numpy_unless_traced(_np.fft.rfft2)
def rfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """NumPy's ``rfft2``: `rfftn` of the last two axes.

    Example:
        >>> import numpy, wengert.numpy as np
        >>> np.fft.rfft2(numpy.ones((2, 4))).real
        array([[8., 0., 0.],
               [0., 0., 0.]])
    """
    return rfftn(a, s, axes, norm, out)


@_numpy_unless_traced(_np.fft.irfft2)
def irfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """NumPy's ``irfft2``: `irfftn` of the last two axes.

    Example:
        >>> import numpy, wengert.numpy as np
        >>> np.fft.irfft2(numpy.ones((2, 3)))
        array([[1., 0., 0., 0.],
               [0., 0., 0., 0.]])
    """
    return irfftn(a, s, axes, norm, out)


# ---- shifts: rolls, so they differentiate (their transpose is the opposite roll) -------------
def _half_shifts(x, axes, sign):
    if axes is None:
        axes = tuple(range(x.ndim))
    if isinstance(axes, (int, _np.integer)):
        return roll(x, sign * (x.shape[axes] // 2), axes)
    return roll(x, [sign * (x.shape[ax] // 2) for ax in axes], axes)


@_numpy_unless_traced(_np.fft.fftshift)
def fftshift(x, axes=None):
    """NumPy's ``fftshift``: the zero frequency moved to the middle (a roll by half of each
    axis), differentiable.

    Example:
        >>> import numpy, wengert.numpy as np
        >>> np.fft.fftshift(numpy.arange(5.0))
        array([3., 4., 0., 1., 2.])
    """
    return _half_shifts(x, axes, 1)


@_numpy_unless_traced(_np.fft.ifftshift)
def ifftshift(x, axes=None):
    """NumPy's ``ifftshift``, the inverse of `fftshift` (they differ for odd lengths).

    Example:
        >>> import numpy, wengert.numpy as np
        >>> np.fft.ifftshift(numpy.arange(5.0))
        array([2., 3., 4., 0., 1.])
    """
    return _half_shifts(x, axes, -1)


__getattr__ = _rest_of(_np.fft, globals())   # the rest of numpy.fft: NumPy's own
