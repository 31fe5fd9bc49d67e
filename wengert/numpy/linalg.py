"""wengert.numpy.linalg: NumPy's linear algebra, differentiable.

inv, det, slogdet, solve, cholesky, norm, eigh (and eigvalsh) take traced values; the rest
is NumPy's (and refuses traced values by name).

Example:
    >>> import wengert as wg
    >>> import wengert.numpy as np
    >>> a = np.array([[2.0, 1.0], [1.0, 3.0]])
    >>> g = wg.grad(lambda a: np.linalg.det(a))(a)     # d det / dA = det(A) A^-T
    >>> bool(np.allclose(g, np.linalg.det(a) * np.linalg.inv(a).T))
    True
"""
from __future__ import annotations

import numpy as _np

from ..graph.node import Node
from ..primitives import linalg as L
from . import _traced, _shape, sqrt, sum, abs, amax, amin, moveaxis, reshape, swapaxes
from .dispatch import unsupported as _unsupported

LinAlgError = _np.linalg.LinAlgError


def _square(a, name):
    s = _shape(a)
    if len(s) < 2 or s[-1] != s[-2]:
        raise ValueError(f"{name}: expected a square matrix (or a stack of them), got shape {s}")


def inv(a):
    """The inverse; derivative d(A⁻¹) = -A⁻¹ dA A⁻¹."""
    if type(a) is not Node:
        return _np.linalg.inv(a)
    _square(a, "inv")
    return L.inv(a)


def det(a):
    """The determinant; derivative d det A = det A · tr(A⁻¹ dA)."""
    if type(a) is not Node:
        return _np.linalg.det(a)
    _square(a, "det")
    return L.det(a)


def slogdet(a):
    """(sign, log|det|); the sign has no derivative."""
    if type(a) is not Node:
        return _np.linalg.slogdet(a)
    _square(a, "slogdet")
    return L.signdet(a), L.logabsdet(a)


def solve(a, b):
    """The solution x of a x = b; derivative dx = A⁻¹(db - dA x)."""
    if not _traced(a, b):
        return _np.linalg.solve(a, b)
    _square(a, "solve")
    sa, sb = _shape(a), _shape(b)
    # b is one vector if it is 1-D, else a stack of matrices (NumPy 2's reading)
    fits = sb == sa[-1:] if len(sb) == 1 else len(sb) >= 2 and sb[-2] == sa[-1]
    if fits and len(sb) > 1:
        try:
            _np.broadcast_shapes(sa[:-2], sb[:-2])
        except ValueError:
            fits = False
    if not fits:
        raise ValueError(f"solve: a of shape {sa} and b of shape {sb} do not match")
    return L.solve(a, b)


def cholesky(a):
    """The lower-triangular Cholesky factor L of a symmetric positive-definite A = LLᵀ."""
    if type(a) is not Node:
        return _np.linalg.cholesky(a)
    _square(a, "cholesky")
    return L.cholesky(a)


def eigh(a, UPLO="L"):
    """Eigenvalues (ascending) and eigenvectors of a symmetric matrix.  The derivative
    assumes distinct eigenvalues (it divides by their differences)."""
    if type(a) is not Node:
        return _np.linalg.eigh(a, UPLO)
    a = _lower(a, UPLO, "eigh")
    return L.eigvalsh(a), L.eigvecsh(a)


def eigvalsh(a, UPLO="L"):
    """Eigenvalues (ascending) of a symmetric matrix."""
    if type(a) is not Node:
        return _np.linalg.eigvalsh(a, UPLO)
    return L.eigvalsh(_lower(a, UPLO, "eigvalsh"))


def _lower(a, UPLO, who):
    """The matrix whose lower triangle holds the triangle `UPLO` names, which is what the
    primitives read: the upper triangle of A is the lower one of Aᵀ."""
    _square(a, who)
    if UPLO not in ("L", "U"):
        raise ValueError(f"{who}: UPLO must be 'L' or 'U', got {UPLO!r}")
    return a if UPLO == "L" else swapaxes(a, -1, -2)


def norm(x, ord=None, axis=None, keepdims=False):
    """Vector and matrix norms: for vectors ord None/2, 1, inf, -inf and p > 0; for
    matrices ord None/'fro', 1, inf, 2 (the largest singular value)."""
    if type(x) is not Node:
        return _np.linalg.norm(x, ord, axis, keepdims)
    nd = x.ndim
    if axis is None:
        if ord is None or (ord == "fro" and nd == 2) or (ord == 2 and nd == 1):
            return sqrt(sum(x * x, axis=None, keepdims=keepdims))
        axis = tuple(range(nd))
    axis = (axis,) if isinstance(axis, (int, _np.integer)) else tuple(axis)
    if len(axis) == 1:
        if ord is None or ord == 2:
            return sqrt(sum(x * x, axis=axis, keepdims=keepdims))
        if ord == _np.inf:
            return amax(abs(x), axis=axis, keepdims=keepdims)
        if ord == -_np.inf:
            return amin(abs(x), axis=axis, keepdims=keepdims)
        if ord == 1:
            return sum(abs(x), axis=axis, keepdims=keepdims)
        if isinstance(ord, (int, float)) and ord > 0:
            return sum(abs(x) ** ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)
    elif len(axis) == 2:
        r, c = (a % nd for a in axis)
        if ord is None or ord == "fro":
            return sqrt(sum(x * x, axis=axis, keepdims=keepdims))
        if ord in (1, _np.inf):
            # 1: the largest column sum of |x|; inf: the largest row sum
            inner, outer = (r, c) if ord == 1 else (c, r)
            out = amax(sum(abs(x), axis=inner, keepdims=True), axis=outer, keepdims=True)
            return out if keepdims else reshape(out, tuple(
                d for i, d in enumerate(x.shape) if i not in (r, c)))
        if ord == 2:
            m = moveaxis(x, (r, c), (-2, -1))
            gram = m.swapaxes(-1, -2) @ m
            top = sqrt(L.eigvalsh(gram)[..., -1])
            if keepdims:
                shape = list(x.shape)
                shape[r] = shape[c] = 1
                top = reshape(top, tuple(shape))
            return top
    raise NotImplementedError(f"wengert.numpy.linalg.norm: ord={ord!r} with axis={axis} is "
                              "not supported on traced values")


def __getattr__(name):
    attr = getattr(_np.linalg, name)
    if callable(attr) and not isinstance(attr, type):
        attr = _unsupported(f"numpy.linalg.{name}", attr)
    globals()[name] = attr
    return attr
