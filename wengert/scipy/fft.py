"""SciPy's real trigonometric transforms (`scipy.fft`), differentiable: the discrete
cosine transforms dct, idct, dctn, idctn and the sine transforms dst, idst, dstn, idstn,
of all four types (JAX's `jax.scipy.fft` has type 2 alone), under every norm (None or
"backward", "ortho", "forward", and `orthogonalize`), with the input cropped or
zero-padded to `n` (or `s`), along any axis or axes.

On plain values each function *is* SciPy's.  On traced values it records one primitive,
`wengert.primitives.fft.trig_transform`, whose value is scipy.fft's own (an inverse
transform is SciPy's forward transform of the inverse type under the opposite norm, which
is how SciPy computes it, bit for bit).  The transforms are linear, so the JVP is the
same transform of the tangent and the VJP its transpose, another DCT (DST) of the
transposed type with the first or last entry scaled: derivatives of any order, under
`wg.vmap` and `wg.compile` too.  A complex input has its real and imaginary parts
transformed, as SciPy does, and is holomorphic (the matrix is real).  The complex
transforms (fft, rfft, ...) are `wengert.numpy.fft`'s.

Example: the gradient of the energy in the first DCT-II coefficients (a JPEG-style
low-pass) is the same transform's transpose applied to those coefficients:

    >>> import numpy as np, wengert as wg
    >>> from wengert.scipy import fft
    >>> x = np.array([1.0, 2.0, 0.0, -1.0])
    >>> low = lambda x: wg.numpy.sum(fft.dct(x, norm="ortho")[:2] ** 2)
    >>> c = fft.dct(x, norm="ortho")
    >>> bool(np.allclose(wg.grad(low)(x), fft.idct(2 * c * (np.arange(4) < 2), norm="ortho")))
    True
"""
from __future__ import annotations


import numpy as _np
import scipy.fft as _sf

from .. import numpy as _wnp
from ..primitives import fft as _F
from .linalg import scipy_unless_traced

__all__ = ["dct", "idct", "dctn", "idctn", "dst", "idst", "dstn", "idstn"]

_scipy_unless_traced = scipy_unless_traced(_sf)

_NORMS = {None: "backward", "backward": "backward", "ortho": "ortho", "forward": "forward"}
_OPPOSITE = {"backward": "forward", "ortho": "ortho", "forward": "backward"}
_INVERSE_TYPE = {1: 1, 2: 3, 3: 2, 4: 4}


def _type(type, who):
    if isinstance(type, (bool, _np.bool_)) or not isinstance(type, (int, _np.integer)) \
            or type not in (1, 2, 3, 4):
        raise ValueError(f"scipy.fft.{who}: type must be 1, 2, 3 or 4, got {type!r}")
    return int(type)


def _norm(norm, who):
    try:
        return _NORMS[norm]
    except (KeyError, TypeError):
        raise ValueError(f'scipy.fft.{who}: invalid norm value {norm!r}; should be None, '
                         '"backward", "ortho" or "forward"') from None


def _length(n, who, least):
    if isinstance(n, (bool, _np.bool_)) or not isinstance(n, (int, _np.integer)):
        raise TypeError(f"scipy.fft.{who}: the number of points must be an integer, "
                        f"got {n!r}")
    if n < least:
        raise ValueError(f"scipy.fft.{who}: invalid number of data points ({n}) specified"
                         + ("; a type-1 DCT needs at least 2" if least == 2 else ""))
    return int(n)


def _checked(x, who, type, norm, orthogonalize, workers):
    """The traced array and the primitive's settings for a transform of `type` under
    `norm`: SciPy's checks, with errors that name the function and the argument."""
    x = _wnp.asarray(x)
    if x.dtype.kind not in "biufc":
        raise TypeError(f"scipy.fft.{who}: the input must be numbers, not {x.dtype}")
    type, norm = _type(type, who), _norm(norm, who)
    if orthogonalize is None:
        orthogonalize = norm == "ortho"         # (SciPy's default)
    elif not isinstance(orthogonalize, (bool, _np.bool_)):
        raise TypeError(f"scipy.fft.{who}: orthogonalize must be None, True or False, "
                        f"got {orthogonalize!r}")
    if workers is not None:
        if isinstance(workers, (bool, _np.bool_)) \
                or not isinstance(workers, (int, _np.integer)) or workers == 0:
            raise ValueError(f"scipy.fft.{who}: workers must be None or a nonzero integer, "
                             f"got {workers!r}")
        workers = int(workers)
    return x, type, norm, bool(orthogonalize), workers


def _transform(x, kind, type, s, axes, norm, orthogonalize, workers, inverse):
    """The primitive along the distinct `axes` (lengths s, None: the input's); an inverse
    transform as SciPy computes it, the forward one of the inverse type under the
    opposite norm."""
    if not axes:
        return x.astype(_F._trig_dtype(x.dtype))        # (SciPy: a copy, as floats)
    who = ("i" if inverse else "") + kind
    least = 2 if (kind, type) == ("dct", 1) else 1
    s = tuple(_length(x.shape[ax] if n is None or n == -1 else n, who, least)
              for n, ax in zip(s, axes))
    if inverse:
        type, norm = _INVERSE_TYPE[type], _OPPOSITE[norm]
    return _F.trig_transform(x, kind=kind, type=type, s=s, axes=tuple(axes), norm=norm,
                             orthogonalize=orthogonalize, workers=workers)


def _one(kind, inverse, x, type, n, axis, norm, orthogonalize, workers):
    who = ("i" if inverse else "") + kind
    x, type, norm, orthogonalize, workers = _checked(x, who, type, norm, orthogonalize,
                                                     workers)
    if x.ndim == 0:
        raise ValueError(f"scipy.fft.{who}: the input must have at least one axis, got a "
                         "0-d array")
    if not isinstance(axis, (int, _np.integer)) or isinstance(axis, (bool, _np.bool_)):
        raise TypeError(f"scipy.fft.{who}: axis must be one integer, got {axis!r}")
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"scipy.fft.{who}: axis {axis} is out of bounds for an array of "
                         f"shape {x.shape}")
    axis = int(axis) % x.ndim
    return _transform(x, kind, type, (n,), (axis,), norm, orthogonalize, workers, inverse)


def _sequence(v, what, who):
    if isinstance(v, (int, _np.integer)) and not isinstance(v, (bool, _np.bool_)):
        return [int(v)]
    try:
        v = list(v)
    except TypeError:
        raise TypeError(f"scipy.fft.{who}: {what} must be an integer or a sequence of "
                        f"integers, got {v!r}") from None
    for a in v:
        if isinstance(a, (bool, _np.bool_)) or not isinstance(a, (int, _np.integer)):
            raise TypeError(f"scipy.fft.{who}: {what} must be integers, got {a!r}")
    return [int(a) for a in v]


def _many(kind, inverse, x, type, s, axes, norm, orthogonalize, workers):
    """SciPy's reading of `s` and `axes`: `s` without `axes` names the last len(s)
    axes, neither means all of them, -1 in `s` an axis's own length; an axis named twice
    is refused."""
    who = ("i" if inverse else "") + kind + "n"
    x, type, norm, orthogonalize, workers = _checked(x, who, type, norm, orthogonalize,
                                                     workers)
    s = None if s is None else _sequence(s, "s", who)
    if axes is None:
        axes = list(range(x.ndim if s is None else len(s)))
        axes = [ax + x.ndim - len(axes) for ax in axes]
        if s is not None and len(s) > x.ndim:
            raise ValueError(f"scipy.fft.{who}: s names {len(s)} lengths, but the input "
                             f"has shape {x.shape}")
    else:
        axes = _sequence(axes, "axes", who)
        for ax in axes:
            if not -x.ndim <= ax < x.ndim:
                raise ValueError(f"scipy.fft.{who}: axis {ax} is out of bounds for an array "
                                 f"of shape {x.shape}")
        axes = [ax % x.ndim for ax in axes]
        if len(set(axes)) != len(axes):
            raise ValueError(f"scipy.fft.{who}: all axes must be unique, got {axes}")
    if s is None:
        s = [None] * len(axes)
    elif len(s) != len(axes):
        raise ValueError(f"scipy.fft.{who}: s ({s}) and axes ({axes}) must have the same "
                         "length")
    return _transform(x, kind, type, s, axes, norm, orthogonalize, workers, inverse)


@_scipy_unless_traced
def dct(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
        orthogonalize=None):
    """The discrete cosine transform of x along `axis`, as SciPy's: of type 1, 2 (the
    default, JPEG's), 3 or 4, x cropped or zero-padded to `n` points, scaled by `norm`
    (None or "backward": not at all; "ortho": orthonormal, with `orthogonalize` True by
    default; "forward": by the inverse's factor).  `overwrite_x` is accepted and changes
    nothing on traced values (no array is written); `workers` is SciPy's, for the value
    and for the derivatives' transforms.

    Linear: the JVP is the DCT of the tangent, the VJP the transpose (for type 2, a type-3
    DCT of the cotangent with its first entry doubled; an orthonormal DCT's transpose is
    its inverse).

    Example: the DCT-II's derivative in x_n at the coefficient k is 2 cos(πk(2n+1)/2N):

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import fft
        >>> wg.grad(lambda x: fft.dct(x)[1])(np.zeros(3)).round(12)
        array([ 1.73205081,  0.        , -1.73205081])
    """
    return _one("dct", False, x, type, n, axis, norm, orthogonalize, workers)


@_scipy_unless_traced
def idct(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
         orthogonalize=None):
    """The inverse of `dct` of the same type and norm: SciPy's, which is the DCT of the
    inverse type (1 and 4 their own, 2 and 3 each other's) under the opposite norm
    ("backward" here scales by 1/(2N), 1/(2(N-1)) for type 1).  Differentiable as `dct`.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import fft
        >>> x = np.array([1.0, 2.0, 0.5])
        >>> fft.idct(fft.dct(x, type=3), type=3)
        array([1. , 2. , 0.5])
        >>> wg.grad(lambda c: fft.idct(c)[0])(np.zeros(3))      # 1/(2N) · (1, 2cos, 2cos)
        array([0.16666667, 0.28867513, 0.16666667])
    """
    return _one("dct", True, x, type, n, axis, norm, orthogonalize, workers)


@_scipy_unless_traced
def dst(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
        orthogonalize=None):
    """The discrete sine transform of x along `axis`, as SciPy's: types 1 to 4, arguments
    as `dct`'s.  Differentiable as `dct` (the DST-II's transpose is a DST-III with the
    last entry doubled).

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import fft
        >>> wg.grad(lambda x: fft.dst(x, type=1)[0])(np.zeros(3)).round(12)   # 2 sin(π(n+1)/4)
        array([1.41421356, 2.        , 1.41421356])
    """
    return _one("dst", False, x, type, n, axis, norm, orthogonalize, workers)


@_scipy_unless_traced
def idst(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
         orthogonalize=None):
    """The inverse of `dst` of the same type and norm (SciPy's: the DST of the inverse
    type under the opposite norm).  Differentiable as `dct`.

    Example:
        >>> import numpy as np
        >>> from wengert.scipy import fft
        >>> fft.idst(fft.dst(np.array([1.0, -2.0]), type=4, norm="ortho"), type=4, norm="ortho")
        array([ 1., -2.])
    """
    return _one("dst", True, x, type, n, axis, norm, orthogonalize, workers)


@_scipy_unless_traced
def dctn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None,
         orthogonalize=None):
    """The multidimensional DCT: `dct` along each of `axes` (all by default, or the last
    len(s)), x cropped or zero-padded to the lengths `s` (-1: an axis's own), as SciPy's.
    One primitive for all the axes; its transpose is the transposed type's along the same
    axes.

    Example: the 2-D DCT-II of an 8x8 block, as JPEG takes it; the gradient of its DC
    coefficient is 4 everywhere (2 per axis):

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import fft
        >>> wg.grad(lambda b: fft.dctn(b)[0, 0])(np.zeros((8, 8)))[:2, :3]
        array([[4., 4., 4.],
               [4., 4., 4.]])
    """
    return _many("dct", False, x, type, s, axes, norm, orthogonalize, workers)


@_scipy_unless_traced
def idctn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None,
          orthogonalize=None):
    """The inverse of `dctn` (SciPy's), arguments as `dctn`'s.  Differentiable as `dctn`.

    Example:
        >>> import numpy as np
        >>> from wengert.scipy import fft
        >>> b = np.arange(6.0).reshape(2, 3)
        >>> bool(np.allclose(fft.idctn(fft.dctn(b, norm="ortho"), norm="ortho"), b))
        True
    """
    return _many("dct", True, x, type, s, axes, norm, orthogonalize, workers)


@_scipy_unless_traced
def dstn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None,
         orthogonalize=None):
    """The multidimensional DST: `dst` along each of `axes`, arguments as `dctn`'s.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import fft
        >>> wg.grad(lambda b: fft.dstn(b, type=1)[0, 0])(np.zeros((1, 1)))   # (2 sin(π/2))²
        array([[4.]])
    """
    return _many("dst", False, x, type, s, axes, norm, orthogonalize, workers)


@_scipy_unless_traced
def idstn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None,
          orthogonalize=None):
    """The inverse of `dstn` (SciPy's), arguments as `dctn`'s.

    Example:
        >>> import numpy as np
        >>> from wengert.scipy import fft
        >>> b = np.arange(6.0).reshape(3, 2)
        >>> bool(np.allclose(fft.idstn(fft.dstn(b, type=3), type=3), b))
        True
    """
    return _many("dst", True, x, type, s, axes, norm, orthogonalize, workers)


def __getattr__(name):
    # scipy.fft's complex transforms are NumPy's, differentiable in wengert.numpy.fft
    if name in ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
                "irfft2", "rfftn", "irfftn", "hfft", "ihfft", "fftshift", "ifftshift",
                "fftfreq", "rfftfreq"):
        raise AttributeError(f"wengert.scipy.fft has the DCTs and DSTs only: for {name}, "
                             f"use wengert.numpy.fft.{name} (NumPy's signature)")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
