"""SciPy's convolutions and linear filters (`scipy.signal`), differentiable: convolve,
correlate, fftconvolve, oaconvolve, convolve2d, correlate2d, lfilter and sosfilt (from
rest or from a state zi), lfilter_zi and sosfilt_zi, the zero-phase filtfilt and
sosfiltfilt, and savgol_filter, for filters, deconvolution, smoothing and signal models
fitted by gradient.

On plain values each function *is* SciPy's (the same call, the same result and errors).
On traced values it records the primitive `wengert.primitives.signal.convolve` (or
`.lfilter`), whose value is SciPy's own and whose rules are convolutions (filters) again,
so the derivatives in every argument exist to any order, under `wg.vmap` and
`wg.compile` too.  Complex arrays are holomorphic in what is convolved, and
`correlate`'s conjugate of its second argument has the conjugate's derivative
(docs/complex.md).  What is not covered on traced values (the boundaries 'wrap' and
'symm' of convolve2d, a nonzero fillvalue, fftconvolve or oaconvolve over some of the
axes, filtfilt's method 'gust', the other functions of scipy.signal) raises
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

import operator as _operator

import numpy as _np
import scipy.signal as _ss

from .. import numpy as _wnp
from ..errors import ConcretizationError
from ..numpy.dispatch import rest_of as _rest_of
from ..primitives import signal as _P
from .linalg import scipy_unless_traced

__all__ = ["convolve", "correlate", "fftconvolve", "oaconvolve", "convolve2d", "correlate2d",
           "lfilter", "lfilter_zi", "filtfilt", "sosfilt", "sosfilt_zi", "sosfiltfilt",
           "savgol_filter"]

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
    if 0 in in1.shape or 0 in in2.shape:
        # nothing to convolve, so no derivative: SciPy's empty result (fftconvolve's and
        # oaconvolve's np.array([]); SciPy's convolve by FFT itself fails on it)
        dtype = _np.result_type(_wnp.result_type(in1), _wnp.result_type(in2))
        plain = _np.zeros(in1.shape, dtype), _np.zeros(in2.shape, dtype)
        return _ss.fftconvolve(*plain, mode) if method in ("fft", "oa") else \
            _ss.convolve(*plain, mode, method="direct")
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
    if axes is None:
        return in1, in2
    listed = [_operator.index(a) for a in axes] if _np.ndim(axes) else \
        [_operator.index(axes)]
    # (SciPy's checks and words, before what traced values do not support)
    if not listed:
        raise ValueError("when provided, axes cannot be empty")
    if any(not -in1.ndim <= a < in1.ndim for a in listed):
        raise ValueError("axes exceeds dimensionality of input")
    listed = [a % in1.ndim for a in listed]
    if len(set(listed)) != len(listed):
        raise ValueError("all axes must be unique")
    if sorted(listed) != list(range(in1.ndim)):
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
    if boundary not in ("fill", "pad", "circular", "wrap", "symmetric", "symm"):
        raise ValueError("Acceptable boundary flags are 'fill', 'circular' (or 'wrap'), and "
                         "'symmetric' (or 'symm').")
    if _wnp.size(fillvalue) != 1:
        raise ValueError("`fillvalue` must be scalar or an array with one element.")
    if mode == "valid":             # (the boundary is never read: SciPy's any of them)
        return in1, in2
    if boundary not in ("fill", "pad"):
        raise NotImplementedError(
            f"scipy.signal.{name}(..., boundary={boundary!r}) is not supported on traced "
            "values: only boundary='fill' with fillvalue=0 is (pad in1 with wengert.numpy."
            "pad(..., mode='wrap' or 'symmetric') and use mode='valid')")
    # (a traced fill would need its derivative, the border's, even where it is 0)
    if _wnp._traced(fillvalue) or _np.ravel(fillvalue)[0] != 0:
        raise NotImplementedError(
            f"scipy.signal.{name}(..., fillvalue={fillvalue!r}) is not supported on "
            "traced values: only fillvalue=0 is")
    return in1, in2


def _empty_2d(scipy_f, in1, in2, mode):
    """SciPy's result where in1 or in2 is empty (None where neither is): zeros, whatever
    the values, of a shape SciPy's direct method gives (it can be (1, 4) for (0, 3) and
    (2, 2)), so SciPy's own call on zeros says which, or raises as it would."""
    if in1.size and in2.size:
        return None
    return scipy_f(_np.zeros(in1.shape, in1.dtype), _np.zeros(in2.shape, in2.dtype), mode)


@_scipy_unless_traced
def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0):
    """The 2-D convolution of in1 and in2, `convolve(in1, in2, mode)` for 2-D arrays, with
    SciPy's direct method.  On traced values the boundary is the zero fill (SciPy's
    default); 'wrap', 'symm' and a nonzero fillvalue are refused by name, but for
    mode='valid', which never reads the boundary.

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
    empty = _empty_2d(_ss.convolve2d, in1, in2, mode)
    return empty if empty is not None else _convolve(in1, in2, mode, "direct")


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
    empty = _empty_2d(_ss.correlate2d, in1, in2, mode)
    if empty is not None:
        return empty
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
    """The linear recursive (IIR) filter a ∗ y = b ∗ x along `axis` of x:
    a₀ y_n = Σ_k b_k x_(n-k) - Σ_(k≥1) a_k y_(n-k).  Differentiable in the numerator b,
    the denominator a, the signal x and the initial conditions zi, to any order: the
    derivatives are filters again (in x, the same filter run backwards in time), so
    fitting a filter's coefficients to a response, or a signal through a known filter,
    is a gradient away.

    With `zi` (the initial state of SciPy's direct form II, shape x's with `axis` of
    length max(len(a), len(b)) - 1; see `lfilter_zi`) it returns (y, zf), zf the final
    state, as SciPy's.  The response to zi is that of 1/a to a₀·zi as a signal, and zf
    a sum of the last samples of x and y, so both are differentiable as y is.

    Example: the impulse response of y_n = x_n + p y_(n-1) is p^n, whose derivative in
    the pole p is n p^(n-1); over four samples at p = 1/2 they sum to 0 + 1 + 1 + 3/4:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import signal
        >>> impulse = np.array([1.0, 0.0, 0.0, 0.0])
        >>> response = lambda p: signal.lfilter([1.0], wg.numpy.stack([1.0, -p]), impulse)
        >>> wg.grad(lambda p: wg.numpy.sum(response(p)))(0.5)
        2.75
    """
    # (a number for b or a, lfilter(taps, 1.0, x): one coefficient, as SciPy's atleast_1d)
    b, a, x = _wnp.atleast_1d(b), _wnp.atleast_1d(a), _wnp.asarray(x)
    for name, c in (("b", b), ("a", a)):
        if c.ndim != 1 or not c.shape[0]:
            raise ValueError(f"Parameter {name} is not a non-empty 1d array, since "
                             f"{name}.shape={c.shape}!")
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"selected axis is out of range: axis={axis} of x of shape {x.shape}")
    x = _wnp.moveaxis(x, axis, -1)
    y = _P.lfilter(b, a, x)
    if zi is None:
        return _wnp.moveaxis(y, -1, axis)
    m = max(a.shape[0], b.shape[0]) - 1
    zi = _state(_wnp.asarray(zi), x, axis, m)
    n = x.shape[-1]
    if m:                       # the response to zi: 1/a applied to a₀·zi, then zeros
        start = zi[..., :n] if m >= n else _zeros_after(zi, n)
        y = y + _P.lfilter(_wnp.ones(1, dtype=a.dtype), a, a[0] * start)
    return _wnp.moveaxis(y, -1, axis), _wnp.moveaxis(_final_state(b, a, x, y, zi, m), -1, axis)


def _state(zi, x, axis, m):
    """zi with `axis` last, broadcast to x's other axes, after SciPy's check of its shape:
    as x's with `axis` of length m, or 1 where x's is not."""
    expected = list(x.shape[:-1])
    expected.insert(axis % x.ndim, m)
    if zi.ndim != x.ndim or any(z != e and z != 1 or (k == axis % x.ndim and z != e)
                                for k, (z, e) in enumerate(zip(zi.shape, expected))):
        raise ValueError(f"Unexpected shape for zi: expected {tuple(expected)}, found "
                         f"{zi.shape}.")
    zi = _wnp.moveaxis(zi, axis, -1)
    return _wnp.broadcast_to(zi, x.shape[:-1] + (m,))


def _final_state(b, a, x, y, zi, m):
    """The filter's state after the last sample (SciPy's zf): in direct form II
    transposed, with b and a divided by a₀ and padded to m + 1 terms, state i is
    Σ_j (b_(i+1+j) x_(n-1-j) - a_(i+1+j) y_(n-1-j)) over the samples there are, and
    zi_(i+n) where the signal is shorter than the state."""
    n = x.shape[-1]
    bn, an = _zeros_after(b / a[0], m + 1), _zeros_after(a / a[0], m + 1)
    xr, yr = _wnp.flip(x, -1), _wnp.flip(y, -1)
    states = []
    for i in range(m):
        k = min(m - i, n)
        state = _wnp.sum(bn[i + 1:i + 1 + k] * xr[..., :k] - an[i + 1:i + 1 + k] * yr[..., :k],
                         axis=-1)
        states.append(state + zi[..., i + n] if i + n < m else state)
    if not states:
        return _wnp.zeros(y.shape[:-1] + (0,), dtype=y.dtype)
    return _wnp.stack(states, axis=-1)


def _zeros_after(c, length):
    """c extended with zeros along its last axis to `length` samples."""
    gap = length - c.shape[-1]
    return _wnp.pad(c, [(0, 0)] * (c.ndim - 1) + [(0, gap)]) if gap else c


def _known(x):
    """x's value: itself if plain, a traced value's where it has one, else None."""
    return getattr(x, "value", x)


@_scipy_unless_traced
def lfilter_zi(b, a):
    """The initial state of `lfilter` in which its step response is at rest (the steady
    state of a unit input), to be scaled by a signal's first sample: the solution of
    (I - Aᵀ)z = b[1:] - a[1:]·b₀ with A the companion matrix of a, after b and a are
    divided by a₀, as SciPy computes it.  Differentiable in b and a (through the solve).

    Example: y_n = (1 - p) x_n + p y_(n-1) at rest under x = 1 (y = 1) keeps the state
    y - (1 - p) x = p, whose derivative in p is 1:

        >>> import wengert as wg
        >>> from wengert.scipy import signal
        >>> float(signal.lfilter_zi([0.5], [1.0, -0.5])[0])
        0.5
        >>> float(wg.grad(lambda p: signal.lfilter_zi(wg.numpy.stack([1 - p]),
        ...                                            wg.numpy.stack([1.0, -p]))[0])(0.5))
        1.0
    """
    b, a = _wnp.atleast_1d(_wnp.asarray(b)), _wnp.atleast_1d(_wnp.asarray(a))
    for name, c in (("Numerator b", b), ("Denominator a", a)):
        if c.ndim != 1:
            raise ValueError(f"{name} must be 1-D.")
    lead = _known(a[0])
    while a.shape[0] > 1 and lead is not None and lead == 0.0:     # (SciPy's, by value)
        a = a[1:]
        lead = _known(a[0])
    if lead is not None and lead == 0.0:
        raise ValueError("There must be at least one nonzero `a` coefficient.")
    b, a = b / a[0], a / a[0]
    n = max(a.shape[0], b.shape[0])
    b, a = _zeros_after(b, n), _zeros_after(a, n)
    if n == 1:                                  # (SciPy's error: a filter without state)
        raise ValueError("The length of `a` along the last axis must be at least 2.")
    # I - Aᵀ, A the companion matrix of a (first row -a[1:], ones below the diagonal):
    # its first column is e₀ + a[1:], and -1 stands above the diagonal
    # (in the coefficients' dtype: float32 ones give a float32 state, as SciPy's)
    eye = _np.eye(n - 1, dtype=_np.result_type(_wnp.result_type(a), 1.0))
    first_column = _wnp.reshape(a[1:], (n - 1, 1)) * eye[:1]
    system = eye - _np.eye(n - 1, k=1, dtype=eye.dtype) + first_column
    return _wnp.linalg.solve(system, b[1:] - a[1:] * b[0])


@_scipy_unless_traced
def filtfilt(b, a, x, axis=-1, padtype="odd", padlen=None, method="pad", irlen=None):
    """The filter (b, a) applied forward and then backward along `axis`: zero phase, and
    the square of the filter's gain, as SciPy's ``filtfilt``.  The signal is first
    extended at both ends (`padtype` 'odd', 'even', 'constant' or None, `padlen`
    samples, by default 3·max(len(a), len(b))), and each pass starts from `lfilter_zi`'s
    steady state scaled by its first sample, so that the ends do not ring.
    Differentiable in b, a and x, as `lfilter` is.  Only ``method='pad'`` (Gustafsson's
    method is not implemented on traced values).

    Example: a constant passes a filter of unit gain unchanged, and its derivative in
    the signal sums to the gain, 1, over each output:

        >>> import numpy as np, scipy.signal, wengert as wg
        >>> from wengert.scipy import signal
        >>> b, a = scipy.signal.butter(2, 0.3)
        >>> np.round(signal.filtfilt(b, a, np.ones(12)), 12)[:3]
        array([1., 1., 1.])
        >>> J = wg.jacfwd(lambda x: signal.filtfilt(b, a, x))(np.ones(12))
        >>> bool(np.allclose(J.sum(axis=1), 1.0))
        True
    """
    if method not in ("pad", "gust"):
        raise ValueError("method must be 'pad' or 'gust'.")
    if method == "gust":
        raise NotImplementedError("scipy.signal.filtfilt(..., method='gust') is not supported "
                                  "on traced values: only method='pad' is")
    b, a = _wnp.atleast_1d(_wnp.asarray(b)), _wnp.atleast_1d(_wnp.asarray(a))
    return _zero_phase(lambda x, zi: lfilter(b, a, x, zi=zi), lfilter_zi(b, a), x, axis,
                       padtype, padlen, max(a.shape[0], b.shape[0]))


def _zero_phase(run, zi, x, axis, padtype, padlen, ntaps):
    """filtfilt's method 'pad': x extended at both ends of `axis` (by padlen samples, or
    3·ntaps), filtered by ``run(x, state) -> (y, final state)`` forward from the steady
    state zi scaled by its first sample, then backward from zi scaled by the last sample
    of the result, and cut back to x's length.  zi's last axis is the state's."""
    x = _wnp.asarray(x)
    if x.ndim == 0:
        raise ValueError("x must be at least 1-D")
    if padtype not in ("even", "odd", "constant", None):
        raise ValueError(f"Unknown value '{padtype}' given to padtype. padtype must be "
                         "'even', 'odd', 'constant', or None.")
    edge = 0 if padtype is None else (3 * ntaps if padlen is None else padlen)
    x = _wnp.moveaxis(x, axis, -1)
    if x.shape[-1] <= edge:
        raise ValueError(f"The length of the input vector x must be greater than padlen, "
                         f"which is {edge}.")
    if edge > 0:
        x = _extended(x, edge, padtype)
    # (the state's axis last, after axes of length 1 for x's other axes)
    zi = _wnp.reshape(zi, zi.shape[:-1] + (1,) * (x.ndim - 1) + zi.shape[-1:])
    y, _ = run(x, zi * x[..., :1])
    y, _ = run(_wnp.flip(y, -1), zi * y[..., -1:])
    y = _wnp.flip(y, -1)
    if edge > 0:
        y = y[..., edge:-edge]
    return _wnp.moveaxis(y, -1, axis)


def _extended(x, n, padtype):
    """x with n samples added at each end of its last axis: mirrored through the end
    sample ('odd'), mirrored ('even') or the end sample repeated ('constant')."""
    first, last = x[..., :1], x[..., -1:]
    left, right = _wnp.flip(x[..., 1:n + 1], -1), _wnp.flip(x[..., -n - 1:-1], -1)
    if padtype == "odd":
        left, right = 2 * first - left, 2 * last - right
    elif padtype == "constant":
        left = _wnp.repeat(first, n, axis=-1)
        right = _wnp.repeat(last, n, axis=-1)
    return _wnp.concatenate([left, x, right], axis=-1)


@_scipy_unless_traced
def sosfilt(sos, x, axis=-1, zi=None):
    """A filter in second-order sections (each row of `sos` the numerator b₀ b₁ b₂ and
    denominator 1 a₁ a₂ of one section, as `scipy.signal.butter(..., output='sos')` makes
    them), run as a cascade of `lfilter`s; differentiable in `sos`, x and `zi` as
    `lfilter` is.  Values agree with SciPy's to rounding.  With `zi` (shape
    (n_sections, ..., 2), x's shape with `axis` of length 2 after the first axis) it
    returns (y, zf), as SciPy's.

    Example: a fourth-order Butterworth low-pass filter's response is linear in the
    signal, so its Jacobian there is the filter itself, a lower-triangular matrix:

        >>> import numpy as np, scipy.signal, wengert as wg
        >>> from wengert.scipy import signal
        >>> sos = scipy.signal.butter(4, 0.2, output="sos")
        >>> J = wg.jacfwd(lambda x: signal.sosfilt(sos, x))(np.zeros(5))
        >>> bool(np.allclose(J[:, 0], scipy.signal.sosfilt(sos, np.eye(5)[0]))), float(J[0, 1])
        (True, 0.0)
    """
    sos = _sections(sos)
    sections = sos.shape[0]
    if zi is None:
        for k in range(sections):
            x = lfilter(sos[k, :3], sos[k, 3:], x, axis=axis)
        return x
    zi, x = _wnp.asarray(zi), _wnp.asarray(x)
    expected = list(x.shape)
    expected[axis] = 2
    expected = (sections, *expected)
    if zi.shape != expected:
        raise ValueError(f"Invalid zi shape. With axis={axis!r}, an input with shape "
                         f"{x.shape}, and an sos array with {sections} sections, zi must "
                         f"have shape {expected}, got {zi.shape}.")
    finals = []
    for k in range(sections):
        x, final = lfilter(sos[k, :3], sos[k, 3:], x, axis=axis, zi=zi[k])
        finals.append(final)
    return x, _wnp.stack(finals)


def _sections(sos):
    """sos as an array of second-order sections, after SciPy's checks."""
    sos = _wnp.atleast_2d(_wnp.asarray(sos))
    if sos.ndim != 2 or sos.shape[1] != 6:
        raise ValueError(f"sos array must be shape (n_sections, 6), got {sos.shape}")
    leading = _known(sos[:, 3])
    if leading is not None and not (_np.asarray(leading) == 1).all():
        raise ValueError("sos[:, 3] should be all ones")
    # The leading 1s are constants: the filter is SciPy's only where they are 1, so they
    # have no derivative (one along them would step out of that).  Not known while
    # tracing without values, a value other than 1 gives nan, not a normalised filter.
    dtype = _np.result_type(_wnp.result_type(sos), 1.0)
    ones = _wnp.where(sos[:, 3:4] == 1, dtype.type(1), dtype.type(_np.nan))
    return _wnp.concatenate([sos[:, :3], _wnp.stop_gradient(ones), sos[:, 4:]], axis=1)


@_scipy_unless_traced
def sosfilt_zi(sos):
    """The initial state of `sosfilt` in which its step response is at rest, shape
    (n_sections, 2), as SciPy's: each section's `lfilter_zi`, scaled by the gain at
    frequency 0 (sum(b)/sum(a)) of the sections before it, whose steady output is its
    input.  Differentiable in sos.

    Example: a unit input through a filter at rest gives the constant response at once:

        >>> import numpy as np, scipy.signal
        >>> from wengert.scipy import signal
        >>> sos = scipy.signal.butter(4, 0.2, output="sos")
        >>> y, _ = signal.sosfilt(sos, np.ones(5), zi=signal.sosfilt_zi(sos))
        >>> bool(np.allclose(y, 1.0))
        True
    """
    # (SciPy's checks, which are not sosfilt's: a 1-D sos is refused, and a leading
    # coefficient other than 1 is a section's a[0], which lfilter_zi divides by)
    sos = _wnp.asarray(sos)
    if sos.ndim != 2 or sos.shape[1] != 6:
        raise ValueError(f"sos must be shape (n_sections, 6), got {sos.shape}")
    states, gain = [], 1.0
    for k in range(sos.shape[0]):
        b, a = sos[k, :3], sos[k, 3:]
        states.append(gain * lfilter_zi(b, a))
        gain = gain * (_wnp.sum(b) / _wnp.sum(a))
    return _wnp.stack(states)


@_scipy_unless_traced
def sosfiltfilt(sos, x, axis=-1, padtype="odd", padlen=None):
    """A filter in second-order sections applied forward and then backward along `axis`,
    as SciPy's ``sosfiltfilt``: `filtfilt`'s zero phase and squared gain, with `sosfilt`'s
    better-conditioned cascade.  Each pass starts from `sosfilt_zi`'s steady state scaled
    by its first sample, after the signal is extended at both ends as `filtfilt` extends
    it (by default by 3·(2·n_sections + 1) samples, less 3 for each section pair whose
    zero and pole at the origin SciPy discounts, read from sos's values).
    Differentiable in sos and x.

    Example: a fourth-order low-pass filter leaves a constant unchanged, and the
    derivative of each output in the signal sums to the gain, 1:

        >>> import numpy as np, scipy.signal, wengert as wg
        >>> from wengert.scipy import signal
        >>> sos = scipy.signal.butter(4, 0.2, output="sos")
        >>> J = wg.jacfwd(lambda x: signal.sosfiltfilt(sos, x))(np.ones(40))
        >>> bool(np.allclose(J.sum(axis=1), 1.0))
        True
    """
    sos = _sections(sos)
    sections = sos.shape[0]
    ntaps = 2 * sections + 1
    if padlen is None and padtype is not None:
        # (SciPy's default length reads sos's values: which b₂ and a₂ are 0)
        values = _known(sos)
        if values is None:
            raise ConcretizationError(
                "sosfiltfilt: the default padlen depends on the values of sos, which are "
                "not known while tracing without values; pass padlen (SciPy's default is "
                "3 * (2 * n_sections + 1 - min(#(sos[:, 2] == 0), #(sos[:, 5] == 0))))")
        values = _np.asarray(values)
        ntaps -= min(int((values[:, 2] == 0).sum()), int((values[:, 5] == 0).sum()))
    return _zero_phase(lambda x, zi: sosfilt(sos, x, zi=zi), sosfilt_zi(sos), x, axis,
                       padtype, padlen, ntaps)


#: savgol_filter's modes other than 'interp', as numpy.pad's that extend a signal as
#: scipy.ndimage extends it
_SAVGOL_PADS = {"mirror": "reflect", "nearest": "edge", "wrap": "wrap", "constant": "constant"}


@_scipy_unless_traced
def savgol_filter(x, window_length, polyorder, deriv=0, delta=1.0, axis=-1, mode="interp",
                  cval=0.0):
    """The Savitzky-Golay filter along `axis` of x, as SciPy's: each sample replaced by
    the value (or `deriv`-th derivative, for samples `delta` apart) at it of the
    polynomial of degree `polyorder` fitted by least squares to the `window_length`
    samples around it.  It is linear in x: a convolution with SciPy's `savgol_coeffs`,
    over x extended as `mode` says ('mirror', 'nearest', 'wrap', or 'constant' with
    `cval`), or, for 'interp' (the default), over x itself with the first and last
    window_length // 2 samples taken from the polynomial fitted to the first and last
    windows.  Differentiable in x, in cval and in delta.

    Example: the smoothed derivative of samples of t² is 2t, exactly (a quadratic fits
    them), and the derivative of the output in the signal is the filter:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import signal
        >>> t = np.arange(1.0, 7.0)
        >>> signal.savgol_filter(t ** 2, 5, 2, deriv=1).round(12).tolist()
        [2.0, 4.0, 6.0, 8.0, 10.0, 12.0]
        >>> J = wg.jacfwd(lambda x: signal.savgol_filter(x, 5, 2))(t ** 2)
        >>> bool(np.allclose(J @ t ** 2, t ** 2))
        True
    """
    if mode not in ("mirror", "constant", "nearest", "interp", "wrap"):
        raise ValueError("mode must be 'mirror', 'constant', 'nearest' 'wrap' or 'interp'.")
    x = _wnp.asarray(x)
    if x.dtype not in (_np.float32, _np.float64):   # (SciPy's: single or double precision)
        x = x.astype(_np.float64)
    if x.ndim == 0:
        raise ValueError("x must be at least 1-D")
    x = _wnp.moveaxis(x, axis, -1)
    n, w = x.shape[-1], window_length
    if mode == "interp" and w > n:
        raise ValueError("If mode is 'interp', window_length must be less than or equal "
                         "to the size of x.")
    if x.size == 0:                     # (nothing to filter, no edges to extend)
        return _wnp.moveaxis(x * 0.0, -1, axis)
    # SciPy's coefficients for delta = 1, scaled here: delta may be traced
    kernel = _ss.savgol_coeffs(w, polyorder, deriv=deriv).astype(x.dtype)
    shape = (1,) * (x.ndim - 1) + (w,)

    def convolved(x):                   # valid mode: samples (w - 1) // 2 on to n - w // 2
        return _convolve(x, _np.reshape(kernel, shape), "valid", "direct")

    if mode == "interp":
        half = w // 2
        # The edges are the fitted polynomials' values: linear maps of the first and last
        # windows, read off SciPy's own filter of the unit windows
        edges = _ss.savgol_filter(_np.eye(w), w, polyorder, deriv=deriv, axis=-1,
                                  mode="interp").astype(x.dtype)
        y = _wnp.concatenate([x[..., :w] @ edges[:, :half],
                              convolved(x)[..., half - (w - 1) // 2:],
                              x[..., n - w:] @ edges[:, w - half:]], axis=-1)
    else:
        pads = [(0, 0)] * (x.ndim - 1) + [((w - 1) // 2, w // 2)]
        if mode == "constant":
            # (cval - 0 around x: the pad of zeros, plus cval where it is, so cval may be
            # traced)
            rim = _np.pad(_np.zeros(n, dtype=x.dtype), pads[-1], constant_values=1.0)
            padded = _wnp.pad(x, pads) + cval * rim
        else:
            padded = _wnp.pad(x, pads, mode=_SAVGOL_PADS[mode])
        y = convolved(padded)
    if deriv:
        y = y / delta ** deriv
    return _wnp.moveaxis(y, -1, axis)


# SciPy's other functions: SciPy's on plain values, a clear error on traced ones
__getattr__ = _rest_of(_ss, globals())
