"""``jax.lax.fft`` and ``jax.lax.FftType``, for `wengert.lax` (which imports them: its
``fft`` is this function, as JAX's ``jax.lax.fft`` is a function): the transforms of
`wengert.numpy.fft` over the last ``len(fft_lengths)`` axes, with JAX's arguments, shape
rules and dtypes.

Example:
    >>> import numpy as np
    >>> fft(np.array([1.0, 0.0, 0.0, 0.0]), FftType.FFT, (4,)).tolist()
    [(1+0j), (1+0j), (1+0j), (1+0j)]
"""
from __future__ import annotations

import enum
import operator

import numpy as np

from .. import numpy as _wnp


class FftType(enum.IntEnum):
    """Which transform ``fft`` computes, as ``jax.lax.FftType``: FFT and IFFT (complex to
    complex, forward and inverse), RFFT (real to the half spectrum) and IRFFT (back).

    Example:
        >>> FftType.RFFT, int(FftType.IRFFT)
        (<FftType.RFFT: 2>, 3)
    """
    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


# (JAX's names: each in lower or upper case)
_NAMES = {spelling: typ for typ in FftType
          for spelling in (typ.name.lower(), typ.name)}


def _fft_type(fft_type):
    """A FftType from a member or one of JAX's names ('fft' or 'FFT', ...)."""
    if isinstance(fft_type, FftType):
        return fft_type
    if isinstance(fft_type, str):
        if fft_type not in _NAMES:
            raise ValueError(f"fft: unknown FFT type {fft_type!r} (one of 'fft', 'ifft', "
                             "'rfft', 'irfft', in lower or upper case, or a FftType)")
        return _NAMES[fft_type]
    raise TypeError(f"fft: fft_type must be a FftType or its name, got {fft_type!r}")


def _as(x, kind):
    """x as floating ('f') or complex ('c') numbers of its precision (integers and
    booleans as float64), as JAX converts a transform's input."""
    if x.dtype.kind == kind:
        return x
    real = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    return _wnp.astype(x, real if kind == "f" else np.result_type(real, np.complex64))


def fft(x, fft_type, fft_lengths):
    """The discrete Fourier transform of x over its last ``len(fft_lengths)`` axes, as
    ``jax.lax.fft``: `fft_type` a `FftType` or its name (``"fft"``, ``"IFFT"``, ...).

    * FFT, IFFT: complex to complex (x converted to complex), the inverse divided by the
      number of points, as NumPy's; x's last axes must have the lengths `fft_lengths`.
    * RFFT: a real x (complex is a ValueError) whose last axes have the lengths
      `fft_lengths`, to the half spectrum: the last axis becomes ``n // 2 + 1``.
    * IRFFT: a half spectrum back to a real signal of the shape `fft_lengths`: x's last
      axis must be ``fft_lengths[-1] // 2 + 1`` and the others `fft_lengths[:-1]`.

    float32 stays float32 (complex64), integers read as float64; no lengths: x as
    converted.  These are `wengert.numpy.fft`'s ``fftn``, ``ifftn``, ``rfftn`` and
    ``irfftn``, so they differentiate as those do (JAX's convention for complex numbers,
    docs/complex.md), to any order, under `vmap` and `compile`.

    Example:
        >>> import numpy as np, wengert as wg
        >>> x = np.array([[1.0, 2.0, 0.0, -1.0], [0.0, 1.0, 0.0, 0.0]])
        >>> fft(x, "rfft", (4,)).shape, fft(x, "fft", (2, 4)).shape
        ((2, 3), (2, 4))
        >>> bool(np.allclose(fft(fft(x, "rfft", (2, 4)), "irfft", (2, 4)), x))
        True
        >>> energy = lambda x: wg.numpy.sum(wg.numpy.abs(fft(x, "fft", (4,))) ** 2)
        >>> wg.grad(energy)(x[0]).tolist()                         # Parseval: 2·4·x
        [8.0, 16.0, 0.0, -8.0]
    """
    typ = _fft_type(fft_type)
    try:
        lengths = tuple(operator.index(n) for n in fft_lengths)
    except TypeError:
        raise TypeError(f"fft: fft_lengths must be a sequence of integers, got "
                        f"{fft_lengths!r}") from None
    x = _wnp.asarray(x)
    if x.dtype.kind not in "biufc":
        raise TypeError(f"fft: x must hold numbers, got dtype {x.dtype}")
    k = len(lengths)
    if typ == FftType.RFFT:
        if x.dtype.kind == "c":
            raise ValueError(f"fft: RFFT takes real input, got {x.dtype} (use FFT)")
        x = _as(x, "f")
    else:
        x = _as(x, "c")
    if k == 0:
        return x
    if k > x.ndim:
        raise ValueError(f"fft: x of shape {x.shape} has fewer axes than fft_lengths "
                         f"{lengths}")
    if any(n < 1 for n in lengths):
        raise ValueError(f"fft: fft_lengths must be positive, got {lengths}")
    axes = tuple(range(x.ndim - k, x.ndim))
    minor = x.shape[x.ndim - k:]
    if typ == FftType.IRFFT:
        want = lengths[:-1] + (lengths[-1] // 2 + 1,)
        if minor != want:
            raise ValueError(f"fft: IRFFT to lengths {lengths} needs x's last axes to be "
                             f"{want} (the last one n // 2 + 1), got x of shape {x.shape}")
        return _wnp.fft.irfftn(x, s=lengths, axes=axes)
    if minor != lengths:
        raise ValueError(f"fft: {typ.name} needs x's last axes to be fft_lengths {lengths}, "
                         f"got x of shape {x.shape}")
    if typ == FftType.RFFT:
        return _wnp.fft.rfftn(x, s=lengths, axes=axes)
    transform = _wnp.fft.fftn if typ == FftType.FFT else _wnp.fft.ifftn
    return transform(x, s=lengths, axes=axes)
