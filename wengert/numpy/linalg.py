"""wengert.numpy.linalg: NumPy's linear algebra, differentiable.

inv, det, slogdet, solve, cholesky, norm, eigh (and eigvalsh), eig (and eigvals), svd (and
svdvals), qr, and the functions written with them (matrix_power, multi_dot, pinv, lstsq,
cond, matrix_rank, the array API's vector_norm, matrix_norm, vecdot, ...) take traced
values; the rest is NumPy's (and refuses traced values by name).  All of them take complex
matrices too, with derivatives in JAX's and autograd's convention (docs/complex.md):
cholesky and eigh of Hermitian matrices, eig, svd and qr of any.  An eigenvector of eigh,
or a pair of singular vectors of svd, is NumPy's up to a phase that its derivative cannot
follow: differentiate functions that do not depend on it.

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

import operator

from ..primitives import linalg as L
from ..primitives.registry import float_dtype, power_by_squaring, real_dtype
from . import (_norm_axis, _one_axis, _numpy_unless_traced, _refuse, _shape, asarray, sqrt,
               sum, abs, amax, amin, moveaxis, reshape, swapaxes, matmul as _matmul,
               tensordot as _tensordot, diagonal as _diagonal, dot as _dot, where,
               zeros_like, conj as _conj, _conj_complex, _abs2, exp as _exp, real as _real,
               imag as _imag, transpose as _transpose, cross as _cross, _value_of,
               isnan as _isnan, any as _any)
from .dispatch import rest_of as _rest_of

LinAlgError = _np.linalg.LinAlgError

# NumPy 2 returns named tuples (w, v = eigh(a) and eigh(a).eigenvalues alike); traced
# results take the same types (plain tuples under NumPy 1)
_EighResult = type(_np.linalg.eigh(_np.eye(1)))
_EigResult = type(_np.linalg.eig(_np.eye(1)))
_SlogdetResult = type(_np.linalg.slogdet(_np.eye(1)))
_SVDResult = type(_np.linalg.svd(_np.eye(1)))
_QRResult = type(_np.linalg.qr(_np.eye(1)))


def _named(kind, *values):
    return values if kind is tuple else kind(*values)


# Every function below has NumPy's signature.  Without a traced argument the call goes to
# NumPy unchanged (every argument, result and error is NumPy's); with one, a list holding
# traced values is stacked first, as numpy.asarray would.
def _at_least_2d(a):
    """`a` as a traced matrix (or stack of them), with NumPy's error for fewer axes
    (LinAlgError is a ValueError)."""
    a = asarray(a)
    if a.ndim < 2:
        raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least "
                          "two-dimensional")
    return a


def _matrix(a, who):
    """`a` as a traced square matrix (or stack of them), with NumPy's errors."""
    a = _at_least_2d(a)
    s = a.shape
    if s[-1] != s[-2]:
        raise LinAlgError(f"Last 2 dimensions of the array must be square (the shape of "
                          f"{who}'s argument is {s})")
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
    """The determinant; derivative d det A = tr(Cᵀ dA), C the cofactor matrix (det A · A⁻ᵀ
    where A is invertible), which exists at singular matrices too.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> wg.grad(lambda a: np.linalg.det(a))(numpy.eye(2) * 2).tolist()
        [[2.0, 0.0], [0.0, 2.0]]
        >>> wg.grad(lambda a: np.linalg.det(a))(numpy.diag([3.0, 0.0])).tolist()  # singular
        [[0.0, 0.0], [0.0, 3.0]]
    """
    return L.det(_matrix(a, "det"))


@_numpy_unless_traced(_np.linalg.slogdet, any_argument=True)
def slogdet(a):
    """(sign, log|det|), as NumPy's named tuple (sign, logabsdet); a real matrix's sign has
    no derivative.  A complex matrix's are the parts of log det A = log|det A| + i arg det A
    (one holomorphic primitive): logabsdet its real part, and the sign e^{i arg det A}, which
    moves with A (0 for a singular matrix, as NumPy's).

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> wg.grad(lambda a: np.linalg.slogdet(a).logabsdet)(numpy.eye(2) * 2).tolist()
        [[0.5, 0.0], [0.0, 0.5]]
    """
    a = _matrix(a, "slogdet")
    if a.dtype.kind == "c":
        log = L.logdet(a)
        logabs = _real(log)
        sign = where(logabs == -_np.inf, 0j, _exp(1j * _imag(log)))
        return _named(_SlogdetResult, sign, logabs)
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
    """The Cholesky factor of a symmetric (Hermitian) positive-definite A: lower-triangular
    L with A = LLᴴ, read from A's lower triangle; with ``upper=True`` the upper-triangular
    U = Lᴴ with A = UᴴU, read from A's upper triangle (as NumPy does).  The derivative is
    the symmetric (Hermitian) one: a change in A_ij counts as half in A_ij and half in
    conj(A_ji).

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> np.linalg.cholesky(numpy.array([[4.0, 2.0], [2.0, 2.0]]), upper=True).tolist()
        [[2.0, 1.0], [0.0, 1.0]]
        >>> a = numpy.array([[2.0, 1j], [-1j, 2.0]])
        >>> logdet = lambda a: 2 * np.sum(np.log(np.real(np.diagonal(np.linalg.cholesky(a)))))
        >>> bool(numpy.allclose(wg.grad(logdet)(a), numpy.linalg.inv(a).conj()))
        True
    """
    a = _matrix(a, "cholesky")
    if upper:
        # A's upper triangle is Aᵀ's lower one, and Aᵀ = conj(A) = conj(L) conj(L)ᴴ for a
        # Hermitian A: the factor of Aᵀ is conj(L), whose transpose is U = Lᴴ
        return swapaxes(L.cholesky(swapaxes(a, -1, -2)), -1, -2)
    return L.cholesky(a)


@_numpy_unless_traced(_np.linalg.eigh, any_argument=True)
def eigh(a, UPLO="L"):
    """Eigenvalues (ascending, real) and eigenvectors of a symmetric (Hermitian) matrix,
    read from the triangle `UPLO` names, as NumPy's named tuple (eigenvalues,
    eigenvectors).  The derivative is the symmetric (Hermitian) one and assumes distinct
    eigenvalues (it divides by their differences).

    Each eigenvector is NumPy's up to a sign (a real matrix) or a phase e^{iθ} (a complex
    one), which LAPACK picks and a derivative cannot follow: the derivative of V is the one
    that keeps vᴴdv real, so a function's gradient is meaningful only if the function does
    not depend on the phases, as the eigenvalues, |V|² and V f(diag(w)) Vᴴ do (JAX says
    the same of its eigh).

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> a = numpy.array([[2.0, 1.0], [1.0, 2.0]])
        >>> wg.grad(lambda a: np.linalg.eigh(a).eigenvalues[-1])(a).round(6).tolist()
        [[0.5, 0.5], [0.5, 0.5]]
        >>> h = numpy.array([[2.0, 1j], [-1j, 2.0]])            # eigenvalues 1 and 3
        >>> g = wg.grad(lambda h: np.linalg.eigh(h).eigenvalues[-1])(h)   # conj(v vᴴ)
        >>> bool(numpy.allclose(g, [[0.5, -0.5j], [0.5j, 0.5]]))
        True
    """
    a, tri = _triangle(a, UPLO, "eigh")
    return _named(_EighResult, L.eigvalsh(a, **tri), L.eigvecsh(a, **tri))


@_numpy_unless_traced(_np.linalg.eigvalsh, any_argument=True)
def eigvalsh(a, UPLO="L"):
    """Eigenvalues (ascending, real) of a symmetric (Hermitian) matrix, read from the
    triangle `UPLO` names.

    Example:
        >>> import numpy, wengert.numpy as np
        >>> np.linalg.eigvalsh(numpy.array([[2.0, 1.0], [1.0, 2.0]])).tolist()
        [1.0, 3.0]
    """
    a, tri = _triangle(a, UPLO, "eigvalsh")
    return L.eigvalsh(a, **tri)


@_numpy_unless_traced(_np.linalg.eig, any_argument=True)
def eig(a):
    """Eigenvalues and right eigenvectors of a general square matrix, as NumPy's named
    tuple (eigenvalues, eigenvectors), in NumPy's (LAPACK's) order and normalization: each
    eigenvector has unit length and its largest component real.  The derivatives are those
    of NumPy's factors, with that normalization (dλ_j = (V⁻¹ dA V)_jj), where the
    eigenvalues are distinct (they divide by their differences) and no two components of
    an eigenvector tie for the largest.

    Unlike NumPy's, the results are complex even when every eigenvalue of a real matrix is
    real (NumPy's dtype would depend on the values, which a traced value may not have; JAX
    does the same); their values are NumPy's.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> a = numpy.array([[0.0, 1.0], [-2.0, -3.0]])          # eigenvalues -1 and -2
        >>> np.linalg.eig(numpy.array([[0.0, 1.0], [-1.0, 0.0]])).eigenvalues.tolist()
        [1j, -1j]
        >>> g = wg.grad(lambda a: np.real(np.linalg.eig(a).eigenvalues[0]))(a)   # of -1
        >>> g.round(6).tolist()                          # u vᵀ/(uᵀv), u the left eigenvector
        [[2.0, -2.0], [1.0, -1.0]]
    """
    a = _matrix(a, "eig")
    return _named(_EigResult, L.eigvals(a), L.eigvecs(a))


@_numpy_unless_traced(_np.linalg.eigvals, any_argument=True)
def eigvals(a):
    """Eigenvalues of a general square matrix, in NumPy's order, complex (see `eig`);
    derivative dλ_j = (V⁻¹ dA V)_jj, holomorphic, where they are distinct.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> a = numpy.array([[1.0, 2.0], [0.0, 3.0]])
        >>> wg.vjp(np.linalg.eigvals, a)[0].tolist()              # (NumPy's are real here)
        [(1+0j), (3+0j)]
        >>> wg.grad(lambda a: np.real(np.linalg.eigvals(a)[1]))(a).tolist()   # u vᵀ/(uᵀv)
        [[0.0, 0.0], [1.0, 1.0]]
    """
    return L.eigvals(_matrix(a, "eigvals"))


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
    a = _at_least_2d(a)
    s = a.shape
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
    or nan, with NumPy's divide-by-zero warning; where they nearly vanish (relative to the
    largest, 1e-8 or less) they lose digits, all of them a few ulps from a repeat, and a
    RuntimeWarning says so.  U and Vh are only defined up to the sign
    (of a complex matrix: the phase e^{iθ}) of each pair u_k, v_k of singular vectors, which
    LAPACK picks and a derivative cannot follow, so differentiate functions that do not
    depend on it, such as U diag(S) Vh, |U|² or u_k v_kᴴ (JAX says the same of its svd).
    With ``full_matrices=True`` the extra columns of a tall
    matrix's U (rows of a wide one's Vh) are any basis of the complement and have no
    derivative: a derivative through them raises NotImplementedError, which says to use
    ``full_matrices=False``.  With ``hermitian=True`` A is read as symmetric (Hermitian),
    as NumPy reads it, and the derivative is the symmetric (Hermitian) one.

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
        >>> z = numpy.diag([1j, -2.0])                  # complex: conj(U Vh)
        >>> bool(numpy.allclose(wg.grad(nuclear_norm)(z), numpy.diag([-1j, -1.0])))
        True
    """
    a, h = _svd_input(a, hermitian)
    if not compute_uv:
        return L.svdvals(a, **h)
    m, n = a.shape[-2:]
    # (a square matrix's factors are the same either way: one spelling, one node)
    full = bool(full_matrices) and m != n
    return _named(_SVDResult, L.svd_u(a, full_matrices=full, **h), L.svdvals(a, **h),
                  L.svd_vh(a, full_matrices=full, **h))


@_numpy_unless_traced(_np.linalg.qr, any_argument=True)
def qr(a, mode="reduced"):
    """The QR decomposition A = QR, Q with orthonormal columns and R upper triangular, as
    NumPy's named tuple (Q, R); only R with ``mode='r'``.  Differentiable where the first
    min(m, n) columns are linearly independent (the derivative solves with R's leading
    square block), in modes 'reduced' and 'r', and in mode 'complete' unless A is tall
    (its Q's extra columns have no derivative: that raises NotImplementedError saying to
    use 'reduced').  Modes 'raw' and 'economic' are refused on traced values.  R's
    diagonal is NumPy's (LAPACK's): real, of either sign, for a complex matrix too, which
    makes the factorization unique and its derivative that of NumPy's factors.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> a = numpy.array([[3.0, 1.0], [4.0, 2.0], [0.0, 2.0]])
        >>> q, r = np.linalg.qr(a)
        >>> bool(numpy.allclose(q @ r, a)), float(abs(r[0, 0]))
        (True, 5.0)
        >>> g = wg.grad(lambda a: np.abs(np.linalg.qr(a, mode="r")[0, 0]))(a)  # |r₀₀| = |a₀|
        >>> (g.round(6) + 0.0).tolist()
        [[0.6, 0.0], [0.8, 0.0], [0.0, 0.0]]
        >>> z = numpy.array([[3j, 1.0], [4.0, 2j]])
        >>> g = wg.grad(lambda z: np.abs(np.linalg.qr(z).R[0, 0]))(z)          # conj(z₀)/|z₀|
        >>> bool(numpy.allclose(g[:, 0], [-0.6j, 0.8]))
        True
    """
    a = _at_least_2d(a)
    if mode in ("raw", "economic"):
        raise NotImplementedError(f"numpy.linalg.qr(..., mode={mode!r}) is not supported on "
                                  "traced values: use mode='reduced', 'complete' or 'r'")
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"Unrecognized mode '{mode}'")
    m, n = a.shape[-2:]
    # (a square matrix's factors are the same in both modes: one spelling, one node)
    complete = mode == "complete" and m != n
    r = L.qr_r(a, complete=complete)
    if mode == "r":
        return r
    return _named(_QRResult, L.qr_q(a, complete=complete), r)


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
    if x.dtype.kind not in "fc":
        x = x.astype(_np.float64)           # (as NumPy's: an integer matrix's 1-norm too)
    nd = x.ndim
    if axis is None:
        if ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1):
            return sqrt(sum(_abs2(x), axis=None, keepdims=keepdims))
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


def _empty_max(x, axes):
    """amax's `initial` where it reduces over nothing: 0, NumPy's norms' (their max of
    absolute values is 0 over an empty axis, where their min raises)."""
    return {"initial": 0} if 0 in [x.shape[a] for a in axes] else {}


def _vector_norm(x, ord, axis, keepdims):
    if ord == _np.inf:
        return amax(abs(x), axis=axis, keepdims=keepdims, **_empty_max(x, axis))
    if ord == -_np.inf:
        return amin(abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        # the number of nonzero elements: piecewise constant, so no derivative
        return sum((x != 0).astype(real_dtype(x.dtype)), axis=axis, keepdims=keepdims)
    if ord == 1:
        return sum(abs(x), axis=axis, keepdims=keepdims)
    if ord is None or ord == 2:
        return sqrt(sum(_abs2(x), axis=axis, keepdims=keepdims))
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
        return sqrt(sum(_abs2(x), axis=(r, c), keepdims=keepdims))
    if ord in (1, -1, _np.inf, -_np.inf):
        # 1: the largest column sum of |x|, inf: the largest row sum; -1, -inf the smallest
        inner, outer = (r, c) if ord in (1, -1) else (c, r)
        sums = sum(abs(x), axis=inner, keepdims=True)
        out = (amax(sums, axis=outer, keepdims=True, **_empty_max(sums, (outer,))) if ord > 0
               else amin(sums, axis=outer, keepdims=True))
    elif ord in (2, -2, "nuc"):
        # the largest or smallest singular value or their sum, as NumPy computes them (the
        # derivative of a tie between largest or smallest ones is shared among them); a
        # matrix already in the last two axes is not moved, so that svd(x)'s own nodes,
        # and their rules, are the norm's
        s = L.svdvals(x if (r, c) == (x.ndim - 2, x.ndim - 1) else
                      moveaxis(x, (r, c), (-2, -1)))
        out = _largest(s)[..., 0] if ord == 2 else {-2: amin, "nuc": sum}[ord](s, axis=-1)
        if not keepdims:
            return out
    else:
        raise ValueError("Invalid norm order for matrices.")
    if keepdims:
        return reshape(out, tuple(1 if i in (r, c) else d for i, d in enumerate(x.shape)))
    return reshape(out, tuple(d for i, d in enumerate(x.shape) if i not in (r, c)))


# ---- built from the above ----------------------------------------------------------------
# (functions written with differentiable ones: their derivatives, to any order, come free)
@_numpy_unless_traced(_np.linalg.matrix_power, any_argument=True)
def matrix_power(a, n):
    """A square matrix to the integer power n, by repeated squaring; n < 0 is a power of
    the inverse, n = 0 the identity (no derivative).

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> a = numpy.array([[1.0, 1.0], [0.0, 2.0]])
        >>> np.linalg.matrix_power(a, 3).tolist()
        [[1.0, 7.0], [0.0, 8.0]]
        >>> wg.grad(lambda a: np.linalg.matrix_power(a, 2).sum())(a).tolist()  # JAᵀ + AᵀJ
        [[3.0, 3.0], [5.0, 5.0]]
    """
    a = _matrix(a, "matrix_power")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError("exponent must be an integer") from None
    if n == 0:
        # the identity in a's shape and dtype (a float matrix stays float), a constant
        return zeros_like(a) + _np.eye(a.shape[-1], dtype=a.dtype)
    if n < 0:
        a, n = inv(a), -n
    return power_by_squaring(a, n, _matmul)


@_numpy_unless_traced(_np.linalg.tensorsolve, any_argument=True)
def tensorsolve(a, b, axes=None):
    """The x with ``tensordot(a, x, x.ndim) == b``: a's trailing axes (after moving
    `axes` to the end) are x's, and a is solved as the square matrix of them, by `solve`.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> a = numpy.eye(6).reshape(6, 2, 3) * 2.0
        >>> np.linalg.tensorsolve(a, numpy.ones(6)).shape
        (2, 3)
        >>> wg.grad(lambda b: np.sum(np.linalg.tensorsolve(a, b)))(numpy.ones(6)).tolist()
        [0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    """
    a, b = asarray(a), asarray(b)
    if axes is not None:
        moved = [k % a.ndim for k in axes]
        a = _transpose(a, [k for k in range(a.ndim) if k not in moved] + moved)
    shape = tuple(a.shape[b.ndim:])
    size = int(_np.prod(shape))
    if size * size != int(_np.prod(a.shape)):
        raise LinAlgError("Input arrays must satisfy the requirement "
                          "prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])")
    return reshape(solve(reshape(a, (size, size)), reshape(b, (size,))), shape)


@_numpy_unless_traced(_np.linalg.tensorinv)
def tensorinv(a, ind=2):
    """The inverse of `a` for `tensordot` over its first `ind` axes: a read as the square
    matrix of its first ind axes by the rest, inverted by `inv`, of shape
    ``a.shape[ind:] + a.shape[:ind]``.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> a = numpy.eye(6).reshape(2, 3, 6) * 4.0
        >>> np.linalg.tensorinv(a).shape
        (6, 2, 3)
        >>> float(wg.grad(lambda a: np.linalg.tensorinv(a)[0, 0, 0])(a)[0, 0, 0])   # -1/16
        -0.0625
    """
    a = asarray(a)
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    rows = int(_np.prod(a.shape[ind:]))
    return reshape(inv(reshape(a, (rows, -1))), tuple(a.shape[ind:]) + tuple(a.shape[:ind]))


if hasattr(_np.linalg, "cross"):        # (NumPy 2's array-API name)
    @_numpy_unless_traced(_np.linalg.cross, any_argument=True)
    def cross(x1, x2, /, *, axis=-1):
        """The cross product of 3-vectors along `axis` (the array API's; `numpy.cross`
        takes 2-vectors too), differentiable.

        Example:
            >>> import numpy, wengert as wg, wengert.numpy as np
            >>> wg.jacfwd(lambda u: np.linalg.cross(u, numpy.array([0.0, 0.0, 1.0])))(
            ...     numpy.ones(3)).tolist()
            [[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
        """
        x1, x2 = asarray(x1), asarray(x2)
        if x1.shape[axis] != 3 or x2.shape[axis] != 3:
            raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, "
                             f"but they are {x1.shape[axis]} and {x2.shape[axis]} "
                             "dimensional instead.")
        return _cross(x1, x2, axis=axis)


@_numpy_unless_traced(_np.linalg.multi_dot, any_argument=True, array_likes="items")
def multi_dot(arrays, *, out=None):
    """The product of two or more matrices in the order of fewest multiplications (as
    NumPy picks it); the first may be a 1-D row and the last a 1-D column.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> v, m = numpy.ones(2), numpy.array([[1.0, 2.0], [3.0, 4.0]])
        >>> float(np.linalg.multi_dot([v, m, v]))
        10.0
        >>> wg.grad(lambda m: np.linalg.multi_dot([v, m, m, v]))(m).tolist()  # vvᵀmᵀ + mᵀvvᵀ
        [[7.0, 11.0], [9.0, 13.0]]
    """
    _refuse("linalg.multi_dot", out=out is not None)
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    if len(arrays) == 2:
        return _dot(*arrays)                # (as NumPy: no order to choose, no checks)
    arrays = [asarray(a) for a in arrays]
    row, column = arrays[0].ndim == 1, arrays[-1].ndim == 1
    if row:
        arrays[0] = reshape(arrays[0], (1, -1))
    if column:
        arrays[-1] = reshape(arrays[-1], (-1, 1))
    for a in arrays:
        if a.ndim != 2:
            raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be "
                              "two-dimensional")
    out = _chain(arrays, _chain_order([a.shape[0] for a in arrays] + [arrays[-1].shape[1]]),
                 0, len(arrays) - 1)
    if row and column:
        return reshape(out, ())
    return reshape(out, (-1,)) if row or column else out


def _chain_order(dims):
    """split[i][j]: where the cheapest product of matrices i..j splits (the textbook
    dynamic program over chain lengths; matrix k is dims[k] x dims[k+1])."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(arrays, split, i, j):
    """The product of arrays[i..j] as `split` orders it, with an explicit stack (a chain
    of any length, no recursion)."""
    results = {}
    todo = [(i, j, False)]
    while todo:
        lo, hi, ready = todo.pop()
        if lo == hi:
            results[lo, hi] = arrays[lo]
        elif ready:
            k = split[lo][hi]
            results[lo, hi] = _matmul(results.pop((lo, k)), results.pop((k + 1, hi)))
        else:
            k = split[lo][hi]
            todo += [(lo, hi, True), (lo, k, False), (k + 1, hi, False)]
    return results[i, j]


@_numpy_unless_traced(_np.linalg.matrix_transpose, any_argument=True)
def matrix_transpose(x, /):
    """The last two axes swapped.

    Example:
        >>> import numpy, wengert.numpy as np
        >>> np.linalg.matrix_transpose(numpy.zeros((4, 2, 3))).shape
        (4, 3, 2)
    """
    x = asarray(x)
    if x.ndim < 2:
        raise ValueError(f"Input array must be at least 2-dimensional, but it is {x.ndim}")
    return swapaxes(x, -1, -2)


@_numpy_unless_traced(_np.linalg.matmul, any_argument=True)
def matmul(x1, x2, /):
    """``x1 @ x2`` (the array API's name in numpy.linalg).

    Example:
        >>> import numpy, wengert.numpy as np
        >>> np.linalg.matmul(numpy.eye(2), numpy.ones(2)).tolist()
        [1.0, 1.0]
    """
    return _matmul(asarray(x1), asarray(x2))


@_numpy_unless_traced(_np.linalg.outer, any_argument=True)
def outer(x1, x2, /):
    """The outer product of two 1-D arrays (the array API's: other shapes are refused).

    Example:
        >>> import numpy, wengert.numpy as np
        >>> np.linalg.outer(numpy.ones(2), numpy.arange(3.0)).tolist()
        [[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]]
    """
    x1, x2 = asarray(x1), asarray(x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"Input arrays must be one-dimensional, but they are "
                         f"x1.ndim={x1.ndim} and x2.ndim={x2.ndim}.")
    return reshape(x1, (-1, 1)) * reshape(x2, (1, -1))


@_numpy_unless_traced(_np.linalg.tensordot, any_argument=True)
def tensordot(x1, x2, /, *, axes=2):
    """`numpy.tensordot` (the array API's name in numpy.linalg).

    Example:
        >>> import numpy, wengert.numpy as np
        >>> float(np.linalg.tensordot(numpy.ones((2, 3)), numpy.ones((2, 3))))
        6.0
    """
    return _tensordot(x1, x2, axes)


@_numpy_unless_traced(_np.linalg.diagonal, any_argument=True)
def diagonal(x, /, *, offset=0):
    """The diagonals of the matrices in the last two axes.

    Example:
        >>> import numpy, wengert.numpy as np
        >>> np.linalg.diagonal(numpy.arange(8.0).reshape(2, 2, 2)).tolist()
        [[0.0, 3.0], [4.0, 7.0]]
    """
    return _diagonal(asarray(x), offset, -2, -1)


@_numpy_unless_traced(_np.linalg.trace, any_argument=True)
def trace(x, /, *, offset=0, dtype=None):
    """The traces of the matrices in the last two axes (numpy.trace takes the first two).

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> wg.grad(lambda x: np.linalg.trace(x).sum())(numpy.ones((2, 2, 2)))[0].tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    return sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


@_numpy_unless_traced(_np.linalg.vecdot, any_argument=True)
def vecdot(x1, x2, /, *, axis=-1):
    """The dot products of the vectors along `axis`, the rest broadcast; x1 is conjugated
    (Σ conj(x1)·x2, as NumPy's).

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> np.linalg.vecdot(numpy.ones((2, 3)), numpy.arange(3.0)).tolist()
        [3.0, 3.0]
        >>> wg.grad(lambda v: np.linalg.vecdot(v, v))(numpy.array([1.0, 2.0])).tolist()
        [2.0, 4.0]
    """
    x1, x2 = asarray(x1), asarray(x2)
    # each operand's own axis (as NumPy's gufunc reads it) moved last, the rest broadcast
    x1, x2 = (moveaxis(x, _one_axis(axis, x.ndim, "vecdot"), -1) for x in (x1, x2))
    if x1.shape[-1] != x2.shape[-1]:
        raise ValueError(f"vecdot: x1 of shape {x1.shape} and x2 of shape {x2.shape} (axis "
                         f"{axis} moved last) differ in length along it")
    out = sum(_conj_complex(x1) * x2, axis=-1)
    dtype = _np.result_type(x1.dtype, x2.dtype)
    # (an integer or bool vecdot stays in its dtype, as NumPy's: the sum has promoted it,
    # and casting back wraps around as NumPy's own arithmetic would have; for bools, any)
    return out if out.dtype == dtype else out.astype(dtype)


@_numpy_unless_traced(_np.linalg.vector_norm, any_argument=True)
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """The vector norm over `axis` (all axes, flattened, by default; a tuple of axes is
    one vector), with `norm`'s vector orders.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> g = wg.grad(lambda x: np.linalg.vector_norm(x))(numpy.array([[3.0], [4.0]]))
        >>> g.round(6).tolist()
        [[0.6], [0.8]]
    """
    x = asarray(x)
    nd = x.ndim
    axes = tuple(range(nd)) if axis is None else _norm_axis(axis, nd, "vector_norm")
    # the axes moved to the end and merged into one: a vector norm over one axis
    rest = [i for i in range(nd) if i not in axes]
    v = reshape(moveaxis(x, axes, tuple(range(nd - len(axes), nd))),
                tuple(x.shape[i] for i in rest) + (int(_np.prod([x.shape[i] for i in axes])),))
    out = _vector_norm(v, ord, (v.ndim - 1,), False)
    if keepdims:
        out = reshape(out, tuple(1 if i in axes else d for i, d in enumerate(x.shape)))
    return out


@_numpy_unless_traced(_np.linalg.matrix_norm, any_argument=True)
def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """`norm` of the matrices in the last two axes, with its matrix orders.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> float(np.linalg.matrix_norm(numpy.diag([3.0, -4.0]), ord="nuc"))
        7.0
    """
    return norm(asarray(x), ord=ord, axis=(-2, -1), keepdims=keepdims)


@_numpy_unless_traced(_np.linalg.cond, any_argument=True)
def cond(x, p=None):
    """The condition number in the norm `p`: for None, 2 and -2 the ratio of extreme
    singular values, else ``norm(x, p) * norm(inv(x), p)``.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> float(np.linalg.cond(numpy.diag([1.0, 4.0])))
        4.0
        >>> wg.grad(lambda d: np.linalg.cond(np.diag(d)))(numpy.array([1.0, 4.0])).tolist()
        [-4.0, 1.0]
    """
    x = _at_least_2d(x)
    if 0 in x.shape[-2:]:
        raise _np.linalg.LinAlgError("cond is not defined on empty arrays")   # (NumPy's)
    if p is None or p == 2 or p == -2:
        s = L.svdvals(x)
        big, small = s[..., 0], s[..., -1]
        if p == -2:
            big, small = small, big
        # big/small, inf where small is 0 (NumPy's: 0/0 too), without dividing by 0 in
        # the graph (which vmap and compile run later, outside any errstate)
        zero = small == 0
        return where(zero, _np.inf, big / where(zero, 1.0, small))
    x = _matrix(x, "cond")
    # NumPy's value at a singular matrix (of a stack) is inf, not inv's LinAlgError.  The
    # singular ones are those whose LU has a zero pivot, where inv fails (slogdet's sign
    # is 0, from the same LU): they are inverted as the identity and their condition
    # number made inf (a constant: no derivative).  In the graph, not by the values, so
    # that vmap and compile, which trace without values, do the same.
    with _np.errstate(invalid="ignore"):       # (a nan in x: NumPy's cond says nothing)
        # (signdet is for real matrices: a complex one's det is 0 at a zero pivot too)
        singular = (L.det(x) if x.dtype.kind == "c" else L.signdet(x)) == 0
    safe = where(singular[..., None, None], _np.eye(x.shape[-1], dtype=x.dtype), x)
    r = norm(x, p, axis=(-2, -1)) * norm(inv(safe), p, axis=(-2, -1))
    return _nan_to_inf(where(singular, _np.inf, r), x)


def _nan_to_inf(r, x):
    """NumPy's cond: a nan (0/0) is inf unless x itself holds a nan (in the graph)."""
    with _np.errstate(invalid="ignore"):
        return where(_isnan(r) & ~_any(_isnan(x), axis=(-2, -1)), _np.inf, r)


@_numpy_unless_traced(_np.linalg.matrix_rank, any_argument=True)
def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """The number of singular values above the tolerance (NumPy's defaults); an integer,
    so no derivative.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> int(np.linalg.matrix_rank(numpy.ones((3, 3))))
        1
    """
    A = asarray(A)
    if A.ndim < 2:                  # NumPy's answer for a vector or a number
        return int(sum((A != 0).astype(_np.int64), axis=None) > 0)
    A, h = _svd_input(A, hermitian)
    s = L.svdvals(A, **h)
    big = _largest(s)
    if tol is None:
        if rtol is None:
            rtol = max(A.shape[-2:]) * _np.finfo(s.dtype).eps
        tol = big * asarray(rtol)[..., None] if _np.ndim(rtol) else big * rtol
    else:
        tol = asarray(tol)[..., None] if _np.ndim(tol) else tol
    return sum((s > tol).astype(_np.int64), axis=-1)


@_numpy_unless_traced(_np.linalg.pinv, any_argument=True)
def pinv(a, rcond=None, hermitian=False, *, rtol=_np._NoValue):
    """The Moore-Penrose pseudo-inverse V diag(1/s) Uᴴ, singular values below the cutoff
    (NumPy's: ``rcond`` or ``rtol`` times the largest) taken as zero.  Differentiable
    where the rank does not change, with distinct singular values (svd's rules; the
    phases of the singular vectors cancel, so a complex matrix's is differentiable too).

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> a = numpy.array([[2.0, 0.0], [0.0, 4.0], [0.0, 0.0]])
        >>> np.linalg.pinv(a).tolist()
        [[0.5, 0.0, 0.0], [0.0, 0.25, 0.0]]
        >>> wg.grad(lambda a: np.linalg.pinv(a)[0, 0])(a).round(6).tolist()
        [[-0.25, 0.0], [0.0, 0.0], [0.0, 0.0]]
    """
    a = _at_least_2d(a)
    if rcond is None:
        rcond = max(a.shape[-2:]) * _np.finfo(float_dtype(a.dtype)).eps \
            if rtol is _np._NoValue or rtol is None else rtol
    elif rtol is not _np._NoValue:
        raise ValueError("`rtol` and `rcond` can't be both set.")
    return _pinv_of(svd(a, full_matrices=False, hermitian=hermitian), rcond)[0]


def _pinv_of(usv, rcond):
    """(the pseudo-inverse from a thin svd, which singular values it kept: those above
    rcond times the largest)."""
    u, s, vh = usv
    keep = s > asarray(rcond)[..., None] * _largest(s)
    # 1/s where kept, 0 elsewhere (the where's other branch never divides by a zero)
    inverse = where(keep, 1.0 / where(keep, s, 1.0), 0.0)
    # V diag(1/s) Uᴴ (the conjugates are a complex matrix's only)
    return _matmul(_ctranspose(vh) * inverse[..., None, :], _ctranspose(u)), keep


def _largest(s):
    """The largest singular value of each matrix (kept as an axis); 0 for an empty one, as
    NumPy's matrix_rank, pinv and 2-norm take it."""
    if s.shape[-1] == 0:
        return sum(s, axis=-1, keepdims=True)            # (zeros, of the kept shape)
    return amax(s, axis=-1, keepdims=True)


def _ctranspose(x):
    """The conjugate transpose of the last two axes (a real matrix's transpose)."""
    x = swapaxes(x, -1, -2)
    return _conj(x) if x.dtype.kind == "c" else x


@_numpy_unless_traced(_np.linalg.lstsq, any_argument=True)
def lstsq(a, b, rcond=None):
    """The least-squares solution x of a x ≈ b, as NumPy's tuple (x, residuals, rank, s):
    x = pinv(a) b, differentiable where a's rank does not change; the residuals (sums of
    squared residuals of each column, empty unless a has full column rank and more rows
    than columns) are differentiable too.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> a, b = numpy.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), numpy.array([1.0, 2.0, 4.0])
        >>> x, res, rank, s = np.linalg.lstsq(a, b)
        >>> x.round(6).tolist(), int(rank)
        ([1.333333, 2.333333], 2)
        >>> wg.grad(lambda b: np.linalg.lstsq(a, b)[0].sum())(b).round(6).tolist()
        [0.333333, 0.333333, 0.666667]
    """
    a, b = asarray(a), asarray(b)
    if a.ndim != 2:
        raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be two-dimensional")
    m, n = a.shape
    if b.ndim not in (1, 2) or b.shape[0] != m:
        raise LinAlgError("Incompatible dimensions")
    usv = svd(a, full_matrices=False)
    s = usv[1]
    eps = _np.finfo(s.dtype).eps
    rcond = eps * max(m, n) if rcond is None else rcond
    # NumPy (LAPACK gelsd) takes singular values below rcond times the largest as zero;
    # a negative rcond means machine precision.  One svd gives x, the rank and s.
    inverse, keep = _pinv_of(usv, eps if rcond < 0 else rcond)
    x = _matmul(inverse, b)
    rank = sum(keep.astype(_np.int64), axis=-1).astype(_np.int32)    # (LAPACK's, NumPy's)
    # (the residuals' shape depends on the rank's value)
    known = _value_of(rank, "read by numpy.linalg.lstsq, whose residuals are empty unless "
                      "a has full column rank,")
    if int(known) == n and m > n:
        r = _matmul(a, x) - b
        residuals = sum(_abs2(r), axis=0)     # (|r|², real for a complex b too)
        residuals = reshape(residuals, (1,)) if b.ndim == 1 else residuals
    else:
        residuals = _np.empty((0,), dtype=s.dtype)
    return x, residuals, rank, s


__getattr__ = _rest_of(_np.linalg, globals())   # the rest of numpy.linalg: NumPy's own
