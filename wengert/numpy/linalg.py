"""wengert.numpy.linalg: NumPy's linear algebra, differentiable.

inv, det, slogdet, solve, cholesky, norm, eigh (and eigvalsh), svd (and svdvals) take traced
values; the rest is NumPy's (and refuses traced values by name).

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

from ..primitives import linalg as L
from . import (_norm_axis, _one_axis, _numpy_unless_traced, _shape, asarray, sqrt, sum,
               abs, amax, amin, moveaxis, reshape, swapaxes)
from .dispatch import unsupported as _unsupported

LinAlgError = _np.linalg.LinAlgError

# NumPy 2 returns named tuples (w, v = eigh(a) and eigh(a).eigenvalues alike); traced
# results take the same types (plain tuples under NumPy 1)
_EighResult = type(_np.linalg.eigh(_np.eye(1)))
_SlogdetResult = type(_np.linalg.slogdet(_np.eye(1)))
_SVDResult = type(_np.linalg.svd(_np.eye(1)))


def _named(kind, *values):
    return values if kind is tuple else kind(*values)


# Every function below has NumPy's signature.  Without a traced argument the call goes to
# NumPy unchanged (every argument, result and error is NumPy's); with one, a list holding
# traced values is stacked first, as numpy.asarray would.
def _matrix(a, who):
    """`a` as a traced square matrix (or stack of them)."""
    a = asarray(a)
    s = a.shape
    if len(s) < 2 or s[-1] != s[-2]:
        raise ValueError(f"{who}: expected a square matrix (or a stack of them), got shape {s}")
    return a


@_numpy_unless_traced(_np.linalg.inv, any_argument=True)
def inv(a):
    """The inverse; derivative d(A⁻¹) = -A⁻¹ dA A⁻¹.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> wg.grad(lambda a: np.linalg.inv(a).sum())(numpy.eye(2) * 2).tolist()
        [[-0.25, -0.25], [-0.25, -0.25]]
    """
    return L.inv(_matrix(a, "inv"))


@_numpy_unless_traced(_np.linalg.det, any_argument=True)
def det(a):
    """The determinant; derivative d det A = det A · tr(A⁻¹ dA).

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> wg.grad(lambda a: np.linalg.det(a))(numpy.eye(2) * 2).tolist()
        [[2.0, 0.0], [0.0, 2.0]]
    """
    return L.det(_matrix(a, "det"))


@_numpy_unless_traced(_np.linalg.slogdet, any_argument=True)
def slogdet(a):
    """(sign, log|det|), as NumPy's named tuple (sign, logabsdet); the sign has no
    derivative.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> wg.grad(lambda a: np.linalg.slogdet(a).logabsdet)(numpy.eye(2) * 2).tolist()
        [[0.5, 0.0], [0.0, 0.5]]
    """
    a = _matrix(a, "slogdet")
    return _named(_SlogdetResult, L.signdet(a), L.logabsdet(a))


@_numpy_unless_traced(_np.linalg.solve, any_argument=True)
def solve(a, b):
    """The solution x of a x = b; derivative dx = A⁻¹(db - dA x).  b is one vector only
    when it is 1-D (NumPy 2's reading), and batch dimensions broadcast.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> wg.grad(lambda b: np.linalg.solve(numpy.eye(2) * 2, b).sum())(numpy.ones(2))
        array([0.5, 0.5])
    """
    a, b = _matrix(a, "solve"), asarray(b)
    sa, sb = a.shape, _shape(b)
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


@_numpy_unless_traced(_np.linalg.cholesky, any_argument=True)
def cholesky(a, /, *, upper=False):
    """The Cholesky factor of a symmetric positive-definite A: lower-triangular L with
    A = LLᵀ, read from A's lower triangle; with ``upper=True`` the upper-triangular
    U = Lᵀ with A = UᵀU, read from A's upper triangle (as NumPy does).  The derivative is
    the symmetric one (the same change in A_ij and A_ji).

    Example:
        >>> import numpy, wengert.numpy as np
        >>> np.linalg.cholesky(numpy.array([[4.0, 2.0], [2.0, 2.0]]), upper=True).tolist()
        [[2.0, 1.0], [0.0, 1.0]]
    """
    a = _matrix(a, "cholesky")
    if upper:
        # A's upper triangle is Aᵀ's lower one, and UᵀU = A is LLᵀ = A for L = Uᵀ
        return swapaxes(L.cholesky(swapaxes(a, -1, -2)), -1, -2)
    return L.cholesky(a)


@_numpy_unless_traced(_np.linalg.eigh, any_argument=True)
def eigh(a, UPLO="L"):
    """Eigenvalues (ascending) and eigenvectors of a symmetric matrix, read from the
    triangle `UPLO` names, as NumPy's named tuple (eigenvalues, eigenvectors).  The
    derivative is the symmetric one and assumes distinct eigenvalues (it divides by their
    differences).

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> a = numpy.array([[2.0, 1.0], [1.0, 2.0]])
        >>> wg.grad(lambda a: np.linalg.eigh(a).eigenvalues[-1])(a).round(6).tolist()
        [[0.5, 0.5], [0.5, 0.5]]
    """
    a, tri = _triangle(a, UPLO, "eigh")
    return _named(_EighResult, L.eigvalsh(a, **tri), L.eigvecsh(a, **tri))


@_numpy_unless_traced(_np.linalg.eigvalsh, any_argument=True)
def eigvalsh(a, UPLO="L"):
    """Eigenvalues (ascending) of a symmetric matrix, read from the triangle `UPLO` names.

    Example:
        >>> import numpy, wengert.numpy as np
        >>> np.linalg.eigvalsh(numpy.array([[2.0, 1.0], [1.0, 2.0]])).tolist()
        [1.0, 3.0]
    """
    a, tri = _triangle(a, UPLO, "eigvalsh")
    return L.eigvalsh(a, **tri)


def _triangle(a, UPLO, who):
    """(the matrix, the primitives' parameters naming the triangle to read: none for the
    lower one)."""
    a = _matrix(a, who)
    uplo = UPLO.upper() if isinstance(UPLO, str) else UPLO        # NumPy takes 'l' and 'u'
    if uplo not in ("L", "U"):
        raise ValueError(f"{who}: UPLO argument must be 'L' or 'U', got {UPLO!r}")
    return a, ({} if uplo == "L" else {"UPLO": "U"})


def _svd_input(a, hermitian):
    """`a` as a traced matrix (or stack of them), with NumPy's errors."""
    a = asarray(a)
    s = a.shape
    if len(s) < 2:
        raise LinAlgError(f"{len(s)}-dimensional array given. Array must be at least "
                          "two-dimensional")
    if hermitian and s[-1] != s[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")
    return a, ({"hermitian": True} if hermitian else {})


@_numpy_unless_traced(_np.linalg.svd, any_argument=True)
def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """The singular value decomposition A = U diag(S) Vh, as NumPy's named tuple
    (U, S, Vh), the singular values S descending; only S with ``compute_uv=False``.

    S is differentiable for every shape, and so are U and Vh if the singular values are
    distinct and nonzero: their derivatives divide by the differences s_j² - s_i² (and,
    for a non-square matrix, by the singular values), so where those vanish they are inf
    or nan, with NumPy's divide-by-zero warning.  (U and Vh are only defined up to the sign
    of each pair of singular vectors, so differentiate functions that do not depend on it,
    such as U diag(S) Vh.)  With ``full_matrices=True`` the extra columns of a tall
    matrix's U (rows of a wide one's Vh) are any basis of the complement and have no
    derivative: a derivative through them raises NotImplementedError, which says to use
    ``full_matrices=False``.  With ``hermitian=True`` A is read as symmetric, as NumPy
    reads it, and the derivative is the symmetric one.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> a = numpy.array([[3.0, 0.0], [0.0, -2.0], [0.0, 0.0]])
        >>> np.linalg.svd(a, compute_uv=False).round(6).tolist()
        [3.0, 2.0]
        >>> nuclear_norm = lambda a: np.linalg.svd(a, compute_uv=False).sum()
        >>> wg.grad(nuclear_norm)(a).round(6).tolist()           # U Vᵀ
        [[1.0, 0.0], [0.0, -1.0], [0.0, 0.0]]
        >>> u, s, vh = wg.vjp(lambda a: np.linalg.svd(a, full_matrices=False), a)[0]
        >>> u.shape, s.shape, vh.shape
        ((3, 2), (2,), (2, 2))
    """
    a, h = _svd_input(a, hermitian)
    if not compute_uv:
        return L.svdvals(a, **h)
    m, n = a.shape[-2:]
    # (a square matrix's factors are the same either way: one spelling, one node)
    full = bool(full_matrices) and m != n
    return _named(_SVDResult, L.svd_u(a, full_matrices=full, **h), L.svdvals(a, **h),
                  L.svd_vh(a, full_matrices=full, **h))


if hasattr(_np.linalg, "svdvals"):              # NumPy 2
    @_numpy_unless_traced(_np.linalg.svdvals, any_argument=True)
    def svdvals(x, /):
        """The singular values, descending: ``svd(x, compute_uv=False)``.

        Example:
            >>> import numpy, wengert as wg, wengert.numpy as np
            >>> wg.grad(lambda x: np.linalg.svdvals(x)[0])(numpy.diag([1.0, 2.0])).tolist()
            [[0.0, 0.0], [0.0, 1.0]]
        """
        return L.svdvals(_svd_input(x, False)[0])


def _no_rule(ord, what):
    return NotImplementedError(
        f"numpy.linalg.norm(..., ord={ord!r}) is not supported on traced values for {what}: "
        "wengert.numpy has no rule for it")


@_numpy_unless_traced(_np.linalg.norm, any_argument=True)
def norm(x, ord=None, axis=None, keepdims=False):
    """Vector and matrix norms, with NumPy's orders: for vectors None/2, inf, -inf, 0 (the
    count of nonzeros, no derivative) and any other real p; for matrices None/'fro'/'f', 1,
    -1, inf, -inf, 2 and -2 (the largest and smallest singular value) and 'nuc' (the sum of
    the singular values).

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> wg.grad(lambda v: np.linalg.norm(v, 1))(numpy.array([3.0, -4.0])).tolist()
        [1.0, -1.0]
    """
    x = asarray(x)
    nd = x.ndim
    if axis is None:
        if ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1):
            return sqrt(sum(x * x, axis=None, keepdims=keepdims))
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        try:
            axis = (int(axis),)
        except Exception as e:
            raise TypeError("'axis' must be None, an integer or a tuple of integers") from e
    if len(axis) == 1:
        return _vector_norm(x, ord, _norm_axis(axis, nd, "norm"), keepdims)
    if len(axis) == 2:
        r, c = (_one_axis(a, nd, "norm") for a in axis)
        if r == c:
            raise ValueError("Duplicate axes given.")
        return _matrix_norm(x, ord, r, c, keepdims)
    raise ValueError("Improper number of dimensions to norm.")


def _vector_norm(x, ord, axis, keepdims):
    if ord == _np.inf:
        return amax(abs(x), axis=axis, keepdims=keepdims)
    if ord == -_np.inf:
        return amin(abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        # the number of nonzero elements: piecewise constant, so no derivative
        return sum((x != 0).astype(x.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return sum(abs(x), axis=axis, keepdims=keepdims)
    if ord is None or ord == 2:
        return sqrt(sum(x * x, axis=axis, keepdims=keepdims))
    try:
        ord + 1
    except TypeError:
        raise ValueError(f"Invalid norm order '{ord}' for vectors") from None
    if not isinstance(ord, (int, float, _np.integer, _np.floating)):
        raise _no_rule(ord, "vectors")
    p = float(ord)      # (a Python float: a float32 x stays float32, as in NumPy)
    return sum(abs(x) ** p, axis=axis, keepdims=keepdims) ** (1.0 / p)


def _matrix_norm(x, ord, r, c, keepdims):
    if ord is None or ord in ("fro", "f"):
        return sqrt(sum(x * x, axis=(r, c), keepdims=keepdims))
    if ord in (1, -1, _np.inf, -_np.inf):
        # 1: the largest column sum of |x|, inf: the largest row sum; -1, -inf the smallest
        inner, outer = (r, c) if ord in (1, -1) else (c, r)
        pick = amax if ord > 0 else amin
        out = pick(sum(abs(x), axis=inner, keepdims=True), axis=outer, keepdims=True)
    elif ord in (2, -2, "nuc"):
        # the largest or smallest singular value or their sum, as NumPy computes them (the
        # derivative of a tie between largest or smallest ones is shared among them); a
        # matrix already in the last two axes is not moved, so that svd(x)'s own nodes,
        # and their rules, are the norm's
        s = L.svdvals(x if (r, c) == (x.ndim - 2, x.ndim - 1) else
                      moveaxis(x, (r, c), (-2, -1)))
        out = {2: amax, -2: amin, "nuc": sum}[ord](s, axis=-1)
        if not keepdims:
            return out
    else:
        raise ValueError("Invalid norm order for matrices.")
    if keepdims:
        return reshape(out, tuple(1 if i in (r, c) else d for i, d in enumerate(x.shape)))
    return reshape(out, tuple(d for i, d in enumerate(x.shape) if i not in (r, c)))


def __getattr__(name):
    attr = getattr(_np.linalg, name)
    if callable(attr) and not isinstance(attr, type):
        attr = _unsupported(f"numpy.linalg.{name}", attr)
    globals()[name] = attr
    return attr
