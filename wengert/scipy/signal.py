"""SciPy's convolutions and linear filters (`scipy.signal`), differentiable: convolve,
correlate, fftconvolve, oaconvolve, convolve2d, correlate2d, lfilter and sosfilt, for
filters, deconvolution and signal models fitted by gradient.

On plain values each function *is* SciPy's (the same call, the same result and errors).
On traced values it records the primitive `wengert.primitives.signal.convolve` (or
`.lfilter`), whose value is SciPy's own and whose rules are convolutions (filters) again,
so the derivatives in every argument exist to any order, under `wg.vmap` and
`wg.compile` too.  Complex arrays are holomorphic in what is convolved, and
`correlate`'s conjugate of its second argument has the conjugate's derivative
(docs/complex.md).  What is not covered on traced values (the boundaries 'wrap' and
'symm' of convolve2d, a nonzero fillvalue, fftconvolve or oaconvolve over some of the
axes, the filters' initial conditions zi, the other functions of scipy.signal) raises
NotImplementedError naming it, never a wrong number.

Example: the derivative of a smoothed signal in the filter's taps is the signal itself,
shifted:

    >>> import numpy as np, wengert as wg
    >>> from wengert.scipy import signal
    >>> x = np.array([1.0, 2.0, 4.0, 8.0])
    >>> wg.jacfwd(lambda taps: signal.convolve(x, taps, mode="valid"))(np.ones(2) / 2)
    array([[2., 1.],
           [4., 2.],
           [8., 4.]])
"""
from __future__ import annotations

import numpy as _np
import scipy.signal as _ss

from .. import numpy as _wnp
from ..numpy.dispatch import rest_of as _rest_of
from ..primitives import signal as _P
from .linalg import scipy_unless_traced

__all__ = ["convolve", "correlate", "fftconvolve", "oaconvolve", "convolve2d", "correlate2d",
           "lfilter", "sosfilt"]

_scipy_unless_traced = scipy_unless_traced(_ss)


def _checked(in1, in2, mode, method="auto"):
    """in1 and in2 as arrays, after SciPy's checks of them and of mode and method."""
    in1, in2 = _wnp.asarray(in1), _wnp.asarray(in2)
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"acceptable mode flags are 'valid', 'same', or 'full', got {mode!r}")
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"acceptable method flags are 'auto', 'direct', or 'fft', "
                         f"got {method!r}")
    if in1.ndim != in2.ndim:
        raise ValueError(f"in1 and in2 should have the same dimensionality, got shapes "
                         f"{in1.shape} and {in2.shape}")
    if mode == "valid" and not _P.valid_covers(in1.shape, in2.shape):
        raise ValueError(f"For 'valid' mode, one must be at least as large as the other in "
                         f"every dimension, got shapes {in1.shape} and {in2.shape}")
    return in1, in2


def _flipped_conj(x):
    return _wnp.flip(_wnp.conj(x)) if x.ndim else _wnp.conj(x)


def _convolve(in1, in2, mode, method):
    if in1.ndim == 0:                       # (SciPy's too: two numbers are multiplied)
        return in1 * in2
    return _P.convolve(in1, in2, mode=mode, method=method)


@_scipy_unless_traced
def convolve(in1, in2, mode="full", method="auto"):
    """The N-dimensional convolution of in1 and in2 (the same number of axes), y_n =
    Σ_k in1_k in2_(n-k): 'full' all of it, 'same' in1's shape from its centre, 'valid'
    where one covers the other.  `method` ('auto', 'direct', 'fft') is SciPy's choice of
    algorithm, for the value and for the derivatives' convolutions.

    Differentiable in both arguments to any order: dy = d(in1) ∗ in2 + in1 ∗ d(in2), and
    the cotangents are cross-correlations of ȳ with the other argument.

    Example: the gradient of Σ (x ∗ k)² in the kernel k:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import signal
        >>> x = np.array([1.0, -1.0, 2.0])
        >>> wg.grad(lambda k: wg.numpy.sum(signal.convolve(x, k) ** 2))(np.array([1.0, 0.5]))
        array([9., 0.])
    """
    in1, in2 = _checked(in1, in2, mode, method)
    return _convolve(in1, in2, mode, method)


@_scipy_unless_traced
def correlate(in1, in2, mode="full", method="auto"):
    """The N-dimensional cross-correlation of in1 and in2, z_k = Σ_l in1_(l+k) conj(in2_l)
    up to SciPy's offsets: the convolution of in1 with in2 reversed and conjugated, cut to
    `mode` as `convolve` is.  Differentiable in both arguments to any order.

    Example: a correlation at lag 0 is an inner product, whose gradient in in2 is in1:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import signal
        >>> x = np.array([1.0, 2.0, 3.0])
        >>> wg.grad(lambda y: signal.correlate(x, y, mode="valid")[0])(np.ones(3))
        array([1., 2., 3.])
    """
    in1, in2 = _checked(in1, in2, mode, method)
    return _convolve(in1, _flipped_conj(in2), mode, method)


@_scipy_unless_traced
def fftconvolve(in1, in2, mode="full", axes=None):
    """`convolve(in1, in2, mode, method='fft')`: the convolution by FFTs, SciPy's for
    large arrays.  On traced values `axes` must be None or name every axis (a
    convolution over some axes only is refused: `wg.vmap` over the others does it).

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import signal
        >>> wg.grad(lambda a: signal.fftconvolve(a, np.ones(2))[1])(np.array([1.0, 2.0]))
        array([1., 1.])
    """
    return _convolve(*_all_axes("fftconvolve", in1, in2, mode, axes), mode, "fft")


@_scipy_unless_traced
def oaconvolve(in1, in2, mode="full", axes=None):
    """The convolution by SciPy's overlap-add method: FFTs of blocks of the larger array,
    fast when one array is much larger than the other (a long signal through a filter).
    `convolve` in value, to rounding; its derivatives' convolutions are overlap-add too.
    On traced values `axes` must be None or name every axis, as for `fftconvolve`.

    Example: the gradient of a long filtered signal's energy in the filter's taps:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import signal
        >>> x = np.sin(np.arange(1000) / 10)
        >>> g = wg.grad(lambda k: wg.numpy.sum(signal.oaconvolve(x, k) ** 2))(np.ones(3))
        >>> np.allclose(g, wg.grad(lambda k: wg.numpy.sum(signal.convolve(x, k) ** 2))(
        ...     np.ones(3)))
        True
    """
    return _convolve(*_all_axes("oaconvolve", in1, in2, mode, axes), mode, "oa")


def _all_axes(name, in1, in2, mode, axes):
    """in1 and in2 checked (`_checked`), and `axes` (of fftconvolve, oaconvolve) None or
    naming every axis: the primitive convolves over all of them."""
    in1, in2 = _checked(in1, in2, mode)
    if axes is not None and sorted(
            a % max(in1.ndim, 1) for a in ((axes,) if isinstance(axes, int) else axes)) \
            != list(range(in1.ndim)):
        raise NotImplementedError(
            f"scipy.signal.{name} over some of the axes (axes={axes!r} of {in1.ndim}) is "
            "not supported on traced values: use wg.vmap over the others")
    return in1, in2


def _two_d(name, in1, in2, mode, boundary, fillvalue):
    """in1 and in2 as 2-D arrays, after SciPy's checks and those of what traced values
    support (the zero fill)."""
    in1, in2 = _checked(in1, in2, mode)
    if in1.ndim != 2:
        raise ValueError(f"{name} inputs must both be 2-D arrays, got shapes {in1.shape} "
                         f"and {in2.shape}")
    if boundary not in ("fill", "pad"):
        raise NotImplementedError(
            f"scipy.signal.{name}(..., boundary={boundary!r}) is not supported on traced "
            "values: only boundary='fill' with fillvalue=0 is (pad in1 with wengert.numpy."
            "pad(..., mode='wrap' or 'symmetric') and use mode='valid')")
    if _wnp.asarray(fillvalue).ndim or fillvalue != 0:
        raise NotImplementedError(
            f"scipy.signal.{name}(..., fillvalue={fillvalue!r}) is not supported on "
            "traced values: only fillvalue=0 is")
    return in1, in2


@_scipy_unless_traced
def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0):
    """The 2-D convolution of in1 and in2, `convolve(in1, in2, mode)` for 2-D arrays, with
    SciPy's direct method.  On traced values the boundary is the zero fill (SciPy's
    default); 'wrap', 'symm' and a nonzero fillvalue are refused by name.

    Example: a 3×3 box blur's gradient in the image counts the windows each pixel is in:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import signal
        >>> blur = lambda im: wg.numpy.sum(signal.convolve2d(im, np.ones((3, 3)), "valid"))
        >>> wg.grad(blur)(np.zeros((4, 4)))
        array([[1., 2., 2., 1.],
               [2., 4., 4., 2.],
               [2., 4., 4., 2.],
               [1., 2., 2., 1.]])
    """
    in1, in2 = _two_d("convolve2d", in1, in2, mode, boundary, fillvalue)
    return _convolve(in1, in2, mode, "direct")


@_scipy_unless_traced
def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0):
    """The 2-D cross-correlation of in1 and in2, as SciPy's: `correlate` for 2-D arrays,
    but for two of SciPy's own choices, kept here so that values agree: 'same' is
    centred ⌊n/2⌋ (not ⌊(n-1)/2⌋) into the full result for a kernel of even length n,
    and 'valid' with in2 the larger is conjugated.  Boundaries as `convolve2d`.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import signal
        >>> im = np.arange(9.0).reshape(3, 3)
        >>> wg.grad(lambda k: signal.correlate2d(im, k, "valid")[0, 0])(np.ones((2, 2)))
        array([[0., 1.],
               [3., 4.]])
    """
    in1, in2 = _two_d("correlate2d", in1, in2, mode, boundary, fillvalue)
    kernel = _flipped_conj(in2)
    if mode == "same":
        full = _convolve(in1, kernel, "full", "direct")
        (p, q), (m, n) = in2.shape, in1.shape
        return full[p // 2:p // 2 + m, q // 2:q // 2 + n]
    out = _convolve(in1, kernel, mode, "direct")
    if mode == "valid" and in1.shape != in2.shape and all(
            p <= q for p, q in zip(in1.shape, in2.shape)):
        return _wnp.conj(out)
    return out


@_scipy_unless_traced
def lfilter(b, a, x, axis=-1, zi=None):
    """The linear recursive (IIR) filter a ∗ y = b ∗ x along `axis` of x, from rest:
    a₀ y_n = Σ_k b_k x_(n-k) - Σ_(k≥1) a_k y_(n-k).  Differentiable in the numerator b,
    the denominator a and the signal x, to any order: the derivatives are filters again
    (in x, the same filter run backwards in time), so fitting a filter's coefficients to
    a response, or a signal through a known filter, is a gradient away.  Initial
    conditions (`zi`) are not supported on traced values.

    Example: the impulse response of y_n = x_n + p y_(n-1) is p^n, whose derivative in
    the pole p is n p^(n-1); over four samples at p = 1/2 they sum to 0 + 1 + 1 + 3/4:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import signal
        >>> impulse = np.array([1.0, 0.0, 0.0, 0.0])
        >>> response = lambda p: signal.lfilter([1.0], wg.numpy.stack([1.0, -p]), impulse)
        >>> wg.grad(lambda p: wg.numpy.sum(response(p)))(0.5)
        2.75
    """
    _from_rest("lfilter", zi)
    b, a, x = _wnp.asarray(b), _wnp.asarray(a), _wnp.asarray(x)
    for name, c in (("b", b), ("a", a)):
        if c.ndim != 1 or not c.shape[0]:
            raise ValueError(f"Parameter {name} is not a non-empty 1d array, since "
                             f"{name}.shape={c.shape}!")
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"selected axis is out of range: axis={axis} of x of shape {x.shape}")
    x = _wnp.moveaxis(x, axis, -1)
    return _wnp.moveaxis(_P.lfilter(b, a, x), -1, axis)


@_scipy_unless_traced
def sosfilt(sos, x, axis=-1, zi=None):
    """A filter in second-order sections (each row of `sos` the numerator b₀ b₁ b₂ and
    denominator 1 a₁ a₂ of one section, as `scipy.signal.butter(..., output='sos')` makes
    them), run as a cascade of `lfilter`s, from rest; differentiable in `sos` and x as
    `lfilter` is.  Values agree with SciPy's to rounding.  Initial conditions (`zi`) are
    not supported on traced values.

    Example: a fourth-order Butterworth low-pass filter's response is linear in the
    signal, so its Jacobian there is the filter itself, a lower-triangular matrix:

        >>> import numpy as np, scipy.signal, wengert as wg
        >>> from wengert.scipy import signal
        >>> sos = scipy.signal.butter(4, 0.2, output="sos")
        >>> J = wg.jacfwd(lambda x: signal.sosfilt(sos, x))(np.zeros(5))
        >>> bool(np.allclose(J[:, 0], scipy.signal.sosfilt(sos, np.eye(5)[0]))), float(J[0, 1])
        (True, 0.0)
    """
    _from_rest("sosfilt", zi)
    sos = _wnp.atleast_2d(_wnp.asarray(sos))
    if sos.ndim != 2 or sos.shape[1] != 6:
        raise ValueError(f"sos array must be shape (n_sections, 6), got {sos.shape}")
    leading = sos[:, 3]
    leading = getattr(leading, "value", leading)       # (a traced sos's, where it has one)
    if leading is not None and not (_np.asarray(leading) == 1).all():
        raise ValueError("sos[:, 3] should be all ones")
    for k in range(sos.shape[0]):
        x = lfilter(sos[k, :3], sos[k, 3:], x, axis=axis)
    return x


def _from_rest(name, zi):
    """Refuse the initial conditions `zi` of filter `name` on traced values."""
    if zi is not None:
        raise NotImplementedError(
            f"scipy.signal.{name}(..., zi=...) is not supported on traced values: only the "
            "filter from rest is (zi=None)")


# SciPy's other functions: SciPy's on plain values, a clear error on traced ones
__getattr__ = _rest_of(_ss, globals())
