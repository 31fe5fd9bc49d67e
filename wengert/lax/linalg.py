"""JAX's ``jax.lax.linalg`` on wengert's graph: the same functions, signatures and results,
differentiable, so that code calling them ports by its imports (``import wengert as jax``
makes ``jax.lax.linalg.qr(...)`` this module's).

This is a thin layer of JAX's signatures over what wengert has already: the
factorizations of `wengert.numpy.linalg` (cholesky, eigh, eig, svd, qr) and the primitives
of `wengert.scipy.linalg` (triangular and banded solves, LU), whose derivative rules carry
over, to any order, under `wg.vmap` and `wg.compile`.  What JAX computes in LAPACK's packed
forms and wengert had no primitive for (hessenberg, tridiagonal, householder_product,
ormqr, the extra columns of a tall matrix's complete Q) is written here with Householder
reflectors made as LAPACK makes them (its sign and scaling conventions, so the values are
LAPACK's to rounding) and their compact WY form, and so differentiates too.  qdwh is the
QDWH iteration written with qr, cholesky and triangular solves.  Only ``schur`` has no
derivative (nor has JAX's), and two small primitives of `wengert.primitives.lax_linalg`
give Schur's factors and a pivoted QR's column order.

Batches: every function maps over leading axes (``[..., m, n]``), cholesky_update too
(JAX's takes one matrix), and their batch dimensions broadcast (JAX asks for equal ones);
qdwh takes one matrix, as JAX's does.  Results have JAX's types: ``lu``, ``eig``,
``schur``, ``hessenberg`` and ``tridiagonal`` give lists, the others tuples (or one
array).

Where wengert differs from JAX on purpose (docs/jax.md lists them): a failed Cholesky
factorization raises LinAlgError (JAX returns NaNs); eigh and svd take ``subset_by_index``
on the CPU (JAX raises NotImplementedError there); hessenberg, tridiagonal,
householder_product, ormqr, symmetric_product and cholesky_update differentiate (JAX's do
not); eig's eigenvectors differentiate whatever ``enable_eigvec_derivs`` says, under the
same assumptions (distinct eigenvalues, no tie for an eigenvector's largest component), and
its left eigenvectors of a real matrix may differ from LAPACK's by a sign; qdwh
differentiates in reverse mode too; ``tridiagonal_solve(..., perturb_singular=True)`` is a
NotImplementedError.  dtypes are promoted (JAX asks for equal ones) and integers are read
as floats.

Example:
    >>> import numpy as np, wengert as wg
    >>> from wengert.lax import linalg
    >>> a = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> v, w = linalg.eigh(a)                     # JAX's order: eigenvectors first
    >>> w.round(6).tolist()
    [1.438447, 5.561553]
    >>> g = wg.grad(lambda a: linalg.eigh(a)[1][-1])(a)     # d λ_max / dA = v vᵀ
    >>> bool(np.allclose(g, np.outer(v[:, -1], v[:, -1])))
    True
"""
from __future__ import annotations

import enum as _enum
import math as _math
import operator as _operator

import numpy as _np

from .. import numpy as _wnp
from ..graph.node import Node as _Node
from ..primitives import linalg as _L, scipy_linalg as _P
from ..primitives.lax_linalg import qr_pivots as _qr_pivots, schur_q as _schur_q, \
    schur_t as _schur_t
from ..primitives.registry import float_dtype as _float_dtype, known_value as _value
from ..primitives.special import scipy_module as _scipy_module

__all__ = ["cholesky", "cholesky_update", "eig", "eigh", "hessenberg", "householder_product",
           "lu", "lu_pivots_to_permutation", "ormqr", "qdwh", "qr", "schur", "svd",
           "symmetric_product", "triangular_solve", "tridiagonal", "tridiagonal_solve",
           "SvdAlgorithm", "EighImplementation", "EigImplementation"]


class SvdAlgorithm(_enum.Enum):
    """JAX's choice of SVD algorithm (``svd(..., algorithm=...)``): accepted, and every
    member computes LAPACK's (NumPy's) SVD here, as JAX's default does on the CPU.

    Example:
        >>> SvdAlgorithm("QR").name
        'QR'
    """
    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


class EighImplementation(_enum.Enum):
    """JAX's choice of eigh algorithm (``eigh(..., implementation=...)``): accepted, and
    every member computes LAPACK's (NumPy's) eigh here.

    Example:
        >>> EighImplementation.QR.value
        'qr'
    """
    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


class EigImplementation(_enum.Enum):
    """JAX's choice of eig implementation (``eig(..., implementation=...)``): accepted, and
    every member computes LAPACK's (NumPy's) eig here, on the CPU.

    Example:
        >>> EigImplementation.LAPACK.value
        'lapack'
    """
    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


# ---- reading the arguments ---------------------------------------------------------------------
def _array(x, who, name="x"):
    """x as a floating or complex array (integers and booleans read as float64)."""
    x = _wnp.asarray(x)
    if x.dtype.kind not in "fc":
        if x.dtype.kind not in "biu":
            raise TypeError(f"{who}: {name} must hold numbers, got dtype {x.dtype}")
        x = _wnp.astype(x, _float_dtype(x.dtype))
    return x


def _matrix(x, who, name="x", square=True):
    """x as a (stack of) matrix, square unless told otherwise, or a ValueError naming the
    function, the argument and its shape."""
    x = _array(x, who, name)
    if x.ndim < 2:
        raise ValueError(f"{who}: {name} must be a matrix or a stack of them (shape "
                         f"[..., {'n, n' if square else 'm, n'}]), got shape {x.shape}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{who}: {name} must be square (shape [..., n, n]), got shape "
                         f"{x.shape}")
    return x


def _batch(who, *named_shapes):
    """The broadcast batch shape of (name, shape, number of core axes) triples, or a
    ValueError naming the arrays and their shapes."""
    try:
        return _np.broadcast_shapes(*[s[:len(s) - k] for _, s, k in named_shapes])
    except ValueError:
        shapes = " and ".join(f"{n} of shape {s}" for n, s, _ in named_shapes)
        raise ValueError(f"{who}: the batch dimensions of {shapes} do not broadcast "
                         "together") from None


def _member(value, kind, who, name):
    """None or a member of the enum `kind` (JAX's settings that change nothing here)."""
    if value is not None and not isinstance(value, kind):
        raise TypeError(f"{who}: {name} must be None or a {kind.__name__}, got {value!r}")


def _subset(subset_by_index, size, who):
    """JAX's ``subset_by_index=(start, end)``: the indices start..end-1 of `size`."""
    try:
        start, end = (_operator.index(i) for i in subset_by_index)
    except (TypeError, ValueError):
        raise TypeError(f"{who}: subset_by_index must be a pair of integers (start, end), "
                        f"got {subset_by_index!r}") from None
    if not 0 <= start < end <= size:
        raise ValueError(f"{who}: subset_by_index=({start}, {end}) must have 0 <= start < "
                         f"end <= {size}")
    return start, end


def _is_complex(x):
    return x.dtype.kind == "c"


def _T(x):
    return _wnp.swapaxes(x, -1, -2)


def _H(x):
    return _wnp.conj(_T(x)) if _is_complex(x) else _T(x)


def _cj(x):
    return _wnp.conj(x) if _is_complex(x) else x


def _diag_matrix(d, dtype):
    """The (stack of) diagonal matrix with diagonal d."""
    return _wnp.astype(d[..., :, None] * _np.eye(d.shape[-1], dtype=d.dtype), dtype)


def _hermitian_from(x, lower):
    """The symmetric (Hermitian) matrix whose lower (upper) triangle x holds, the other
    triangle ignored, a complex diagonal's imaginary part too (as LAPACK reads it).  Made
    with linear operations, so its derivative is exact: a change in the triangle that is
    not read changes nothing."""
    tri, k = (_wnp.tril, -1) if lower else (_wnp.triu, 1)
    strict = tri(x, k)
    if _is_complex(x):
        diagonal = _wnp.real(_wnp.diagonal(x, axis1=-2, axis2=-1))
        return strict + _H(strict) + _diag_matrix(diagonal, x.dtype)
    return tri(x) + _T(strict)


def _symmetrized(x):
    """(x + xᴴ)/2, JAX's ``symmetrize_input``."""
    return (x + _H(x)) / 2


def _traced(*xs):
    return any(type(x) is _Node for x in xs)


# ---- Cholesky --------------------------------------------------------------------------------
def cholesky(x, *, symmetrize_input=True):
    """The lower-triangular Cholesky factor L of A = L Lᴴ, as ``jax.lax.linalg.cholesky``:
    A is (x + xᴴ)/2 with ``symmetrize_input`` (the default), else the Hermitian matrix
    x's lower triangle holds (its upper triangle is not read).  x is ``[..., n, n]``,
    symmetric (Hermitian) positive definite.

    Derivatives: those of `wengert.numpy.linalg.cholesky`, dL = L Φ(L⁻¹ dA L⁻ᴴ), to any
    order; through the symmetrization a change dx counts as (dx + dxᴴ)/2, and without it
    a change in the upper triangle counts for nothing (the derivative of the function as
    it reads x).  A matrix that is not positive definite raises LinAlgError (JAX's gives
    NaNs).

    Example:
        >>> import numpy as np, wengert as wg
        >>> a = np.array([[4.0, 2.0], [2.0, 2.0]])
        >>> cholesky(a).tolist()
        [[2.0, 0.0], [1.0, 1.0]]
        >>> logdet = lambda a: 2 * wg.numpy.sum(wg.numpy.log(wg.numpy.diagonal(cholesky(a))))
        >>> bool(np.allclose(wg.grad(logdet)(a), np.linalg.inv(a)))
        True
    """
    x = _matrix(x, "cholesky")
    a = _symmetrized(x) if symmetrize_input else _hermitian_from(x, lower=True)
    return _wnp.linalg.cholesky(a)


def cholesky_update(r_matrix, w_vector):
    """The upper-triangular Cholesky factor R' of Rᵀ R + w wᵀ, from the factor R of A =
    Rᵀ R (its upper triangle is read), as ``jax.lax.linalg.cholesky_update``: R' is the R
    of the QR decomposition of [R; wᵀ] (orthogonal transformations, as JAX's Givens
    rotations are), its rows signed so that its diagonal is positive.  Real matrices
    ``[..., n, n]`` and vectors ``[..., n]`` (JAX's: one of each).

    Differentiable in R and w (JAX's is not): the derivative of that QR's R.

    Example:
        >>> import numpy as np, wengert as wg
        >>> r = np.array([[2.0, 1.0], [0.0, 1.0]])
        >>> w = np.array([1.0, 2.0])
        >>> new = cholesky_update(r, w)
        >>> bool(np.allclose(new.T @ new, r.T @ r + np.outer(w, w)))
        True
        >>> g = wg.grad(lambda w: wg.numpy.sum(cholesky_update(r, w) ** 2))(w)   # tr(R'ᵀR')
        >>> g.round(6).tolist()                                              # = ... + |w|²
        [2.0, 4.0]
    """
    who = "cholesky_update"
    r = _matrix(r_matrix, who, "r_matrix")
    w = _array(w_vector, who, "w_vector")
    if _is_complex(r) or _is_complex(w):
        raise TypeError(f"{who} takes real matrices, as JAX's does; got {r.dtype} and "
                        f"{w.dtype}")
    if w.ndim < 1 or w.shape[-1] != r.shape[-1]:
        raise ValueError(f"{who}: w_vector must have shape [..., n] for r_matrix of shape "
                         f"[..., n, n]; got r_matrix of shape {r.shape} and w_vector of "
                         f"shape {w.shape}")
    batch = _batch(who, ("r_matrix", r.shape, 2), ("w_vector", w.shape, 1))
    n = r.shape[-1]
    stacked = _wnp.concatenate([_wnp.broadcast_to(_wnp.triu(r), batch + (n, n)),
                                _wnp.broadcast_to(w[..., None, :], batch + (1, n))], axis=-2)
    new = _wnp.linalg.qr(stacked, mode="r")
    sign = _wnp.sign(_wnp.diagonal(new, axis1=-2, axis2=-1))
    return new * _wnp.where(sign == 0, 1.0, sign)[..., :, None]


# ---- eigenproblems ---------------------------------------------------------------------------
def eig(x, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True,
        enable_eigvec_derivs=False, implementation=None, use_magma=None):
    """The eigenvalues w and the left and right eigenvectors of a general square matrix,
    as ``jax.lax.linalg.eig``: the list ``[w, vl, vr]`` (vl or vr left out when not asked
    for), complex, in LAPACK's order.  Column j of vr is the right eigenvector of w[j]
    (A vr_j = w_j vr_j), of vl the left one (vl_jᴴ A = w_j vl_jᴴ), each of unit length with
    its largest component real (LAPACK's normalization).

    The eigenvalues and right eigenvectors are `wengert.numpy.linalg.eig`'s (NumPy's
    values, and derivatives with dλ_j = (V⁻¹ dA V)_jj); the left eigenvectors are the
    columns of V⁻ᴴ normalized as LAPACK does, which for a complex matrix are LAPACK's
    and for a real one may differ from them by a sign.  Eigenvectors differentiate
    whether or not `enable_eigvec_derivs` is set (JAX's only with it), under the
    assumptions JAX names: distinct eigenvalues, and no two components of an eigenvector
    tied for largest.  `implementation` and `use_magma` are accepted and change nothing
    (one CPU implementation).

    Example:
        >>> import numpy as np, wengert as wg
        >>> a = np.array([[2.0, 1.0], [0.0, 3.0]])
        >>> w, vl, vr = eig(a)
        >>> w.tolist()
        [(2+0j), (3+0j)]
        >>> left = vl.conj().T                          # rows: left eigenvectors
        >>> bool(np.allclose(a @ vr, vr * w)), bool(np.allclose(left @ a, w[:, None] * left))
        (True, True)
        >>> wg.grad(lambda a: wg.numpy.real(eig(a)[0][1]))(a).round(6).tolist()  # u vᵀ/uᵀv
        [[0.0, 0.0], [1.0, 1.0]]
    """
    _member(implementation, EigImplementation, "eig", "implementation")
    x = _matrix(x, "eig")
    out = [_L.eigvals(x)]
    if compute_left_eigenvectors or compute_right_eigenvectors:
        vr = _L.eigvecs(x)
        if compute_left_eigenvectors:
            out.append(_unit_largest_real(_H(_L.inv(vr))))
        if compute_right_eigenvectors:
            out.append(vr)
    return out


def _unit_largest_real(y):
    """y's columns scaled to unit length, each with its largest component (by modulus)
    real and positive, as LAPACK normalizes eigenvectors."""
    size2 = _wnp.real(y * _wnp.conj(y))
    k = _wnp.argmax(size2, axis=-2, keepdims=True)
    largest = _wnp.take_along_axis(y, k, axis=-2)
    scale = _wnp.conj(largest) / _wnp.sqrt(_wnp.real(largest * _wnp.conj(largest))
                                          * _wnp.sum(size2, axis=-2, keepdims=True))
    return y * scale


def eigh(x, *, lower=True, symmetrize_input=True, sort_eigenvalues=True,
         subset_by_index=None, implementation=None):
    """The eigenvectors v and eigenvalues w (ascending) of a symmetric (Hermitian) matrix,
    as ``jax.lax.linalg.eigh``: the tuple ``(v, w)``, **eigenvectors first** (NumPy's and
    SciPy's eigh give the values first), ``v[..., :, i]`` the eigenvector of ``w[..., i]``.
    The matrix is (x + xᴴ)/2 with ``symmetrize_input`` (the default), else the Hermitian
    matrix that x's lower (``lower=True``) or upper triangle holds.  With
    ``subset_by_index=(start, end)`` only the eigenpairs start..end-1 (SciPy's selection;
    JAX's raises NotImplementedError on the CPU).  `sort_eigenvalues` and
    `implementation` are accepted: the eigenvalues always come ascending.

    Derivatives: `wengert.numpy.linalg.eigh`'s (and `wengert.scipy.linalg.eigh`'s for a
    subset), dw = diag(Vᴴ dA V), dV = V (F ∘ (Vᴴ dA V)), which assume distinct
    eigenvalues; each eigenvector has a free sign (phase) that its derivative does not
    follow, so differentiate what does not depend on it (w, |v|², v vᴴ).  Through the
    symmetrization a change counts as its Hermitian part; without it, a change in the
    triangle not read counts for nothing.

    Example:
        >>> import numpy as np, wengert as wg
        >>> a = np.array([[2.0, 1.0], [1.0, 2.0]])
        >>> v, w = eigh(a)
        >>> w.tolist(), bool(np.allclose(a @ v, v * w))
        ([1.0, 3.0], True)
        >>> wg.grad(lambda a: eigh(a)[1][0])(a).round(6).tolist()        # v₀ v₀ᵀ
        [[0.5, -0.5], [-0.5, 0.5]]
        >>> eigh(np.diag([3.0, 1.0, 2.0]), subset_by_index=(1, 3))[1].tolist()
        [2.0, 3.0]
    """
    _member(implementation, EighImplementation, "eigh", "implementation")
    x = _matrix(x, "eigh")
    a = _symmetrized(x) if symmetrize_input else _hermitian_from(x, lower)
    if subset_by_index is None:
        w, v = _wnp.linalg.eigh(a)
        return v, w
    start, end = _subset(subset_by_index, x.shape[-1], "eigh")
    subset = (start, end - 1)                       # (SciPy's last index is included)
    return _P.eigh_vectors(a, subset=subset), _P.eigh_values(a, subset=subset)


def schur(x, *, compute_schur_vectors=True, sort_eig_vals=False, select_callable=None):
    """The Schur decomposition A = Q T Qᴴ of a square matrix, as
    ``jax.lax.linalg.schur``: the list ``[T, Q]``, or ``[T]`` without
    `compute_schur_vectors` (JAX's list of one).  T is the real Schur form of a real
    matrix (quasi-triangular: 2×2 blocks for complex pairs of eigenvalues) and the
    triangular one of a complex matrix; Q is orthogonal (unitary).  SciPy's (LAPACK's
    gees) values, as JAX's.  `sort_eig_vals` and `select_callable` are accepted and
    unused, as in JAX.

    No derivative, as JAX's has none: differentiating through it raises
    NotImplementedError (eig and eigh differentiate).

    Example:
        >>> import numpy as np
        >>> a = np.array([[1.0, 2.0], [0.5, 3.0]])
        >>> t, q = schur(a)
        >>> bool(np.allclose(q @ t @ q.T, a)), bool(np.allclose(np.tril(t, -1), 0.0))
        (True, True)
    """
    x = _matrix(x, "schur")
    t = _schur_t(x)
    return [t, _schur_q(x)] if compute_schur_vectors else [t]


# ---- singular values ---------------------------------------------------------------------------
def svd(x, *, full_matrices=True, compute_uv=True, subset_by_index=None, algorithm=None):
    """The singular value decomposition x = U diag(s) Vh, as ``jax.lax.linalg.svd``: the
    tuple ``(u, s, vh)``, or s alone without `compute_uv`; s descending, u ``[..., m, m]``
    and vh ``[..., n, n]`` with `full_matrices` (the default), else ``[..., m, k]`` and
    ``[..., k, n]``, k = min(m, n).  With ``subset_by_index=(start, end)`` (which needs
    ``full_matrices=False``, as in JAX) the singular triples start..end-1 only, where
    JAX's raises NotImplementedError on the CPU.  `algorithm` is accepted: every
    `SvdAlgorithm` computes LAPACK's SVD here.

    Derivatives: `wengert.numpy.linalg.svd`'s; s differentiates for every shape, u and vh
    where the singular values are distinct and nonzero, and not through the extra
    columns that `full_matrices` adds to a non-square matrix's u or vh
    (NotImplementedError, as JAX's); each pair of singular vectors has a free sign
    (phase), so differentiate what does not depend on it.

    Example:
        >>> import numpy as np, wengert as wg
        >>> a = np.array([[3.0, 0.0], [0.0, -2.0], [0.0, 0.0]])
        >>> svd(a, compute_uv=False).round(12).tolist()
        [3.0, 2.0]
        >>> [m.shape for m in svd(a)], [m.shape for m in svd(a, full_matrices=False)]
        ([(3, 3), (2,), (2, 2)], [(3, 2), (2,), (2, 2)])
        >>> wg.grad(lambda a: svd(a, compute_uv=False)[0])(a).tolist()     # u₀ v₀ᵀ
        [[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]]
    """
    _member(algorithm, SvdAlgorithm, "svd", "algorithm")
    x = _matrix(x, "svd", square=False)
    if subset_by_index is not None:
        if full_matrices:
            raise ValueError("svd: full_matrices and subset_by_index cannot both be set "
                             "(pass full_matrices=False)")
        start, end = _subset(subset_by_index, min(x.shape[-2:]), "svd")
    if not compute_uv:
        s = _wnp.linalg.svd(x, compute_uv=False)
        return s if subset_by_index is None else s[..., start:end]
    u, s, vh = _wnp.linalg.svd(x, full_matrices=bool(full_matrices))
    if subset_by_index is not None:
        u, s, vh = u[..., :, start:end], s[..., start:end], vh[..., start:end, :]
    return u, s, vh


def qdwh(x, *, is_hermitian=False, max_iterations=None, eps=None, dynamic_shape=None):
    """The polar decomposition x = u h (u with orthonormal columns, h Hermitian positive
    semidefinite) of a full-rank M×N matrix, M >= N, by the QR-based dynamically weighted
    Halley iteration (Nakatsukasa, Bai and Gygi, SIAM J. Matrix Anal. Appl. 31, 2010), as
    ``jax.lax.linalg.qdwh``: the tuple ``(u, h, num_iters, is_converged)``.

    The same iteration as JAX's: x scaled by 1/sqrt(‖x‖₁‖x‖∞), the lower bound l₀ = eps,
    the weights (a, b, c) of the paper from l (a QR-based step while c > 100, a
    Cholesky-based one after), then Halley's steps (a, b, c) = (3, 1, 3) until
    ‖uₖ - uₖ₋₁‖_F <= (5 eps)^(1/3) or `max_iterations` (10) steps, one Newton–Schulz
    refinement, and h = (uᴴx + xᴴu)/2.  ``dynamic_shape=(m, n)`` reads only the leading
    m×n block of x and pads u and h with zeros, as JAX does; `is_hermitian` is unused, as
    in JAX's.

    Differentiable in every mode (JAX's only in forward mode): the derivative of the
    steps taken, which are qr, cholesky and triangular solves.  Where the number of steps
    is known (an eager call) the loop stops when it converges; traced without values
    (`wg.compile`, `wg.vmap`) it runs up to `max_iterations` steps, each one after
    convergence leaving u as it is.

    Example:
        >>> import numpy as np, wengert as wg
        >>> x = np.array([[2.0, 1.0], [0.0, 1.0], [1.0, 0.0]])
        >>> u, h, k, converged = qdwh(x)
        >>> bool(np.allclose(u @ h, x)), bool(np.allclose(u.T @ u, np.eye(2))), bool(converged)
        (True, True, True)
        >>> g = wg.grad(lambda x: wg.numpy.trace(qdwh(x)[1]))(x)   # d tr(h) = d Σσ: u
        >>> bool(np.allclose(g, u))
        True
    """
    who = "qdwh"
    x = _array(x, who)
    if x.ndim != 2:
        raise ValueError(f"{who}: x must be one matrix of shape (M, N), M >= N, as in JAX; "
                         f"got shape {x.shape}")
    M, N = x.shape
    if M < N:
        raise ValueError(f"{who}: the input matrix of shape M x N must have M >= N, got shape "
                         f"{x.shape}")
    iterations = 10 if max_iterations is None else _operator.index(max_iterations)
    eps = float(_np.finfo(x.dtype).eps) if eps is None else float(eps)
    if dynamic_shape is None:
        return _qdwh(x, iterations, eps)
    try:
        m, n = (_operator.index(k) for k in dynamic_shape)
    except (TypeError, ValueError):
        raise TypeError(f"{who}: dynamic_shape must be a pair of integers (m, n), got "
                        f"{dynamic_shape!r}") from None
    if not (0 < n <= m <= M and n <= N):
        raise ValueError(f"{who}: dynamic_shape {(m, n)} must fit in x's shape {x.shape} with "
                         "m >= n > 0")
    u, h, k, converged = _qdwh(x[:m, :n], iterations, eps)
    return (_wnp.pad(u, ((0, M - m), (0, N - n))), _wnp.pad(h, ((0, N - n), (0, N - n))), k,
            converged)


def _qdwh_weights(eps, max_iterations):
    """The (a, b, c) of each step while the bound l on the smallest singular value of the
    iterate has not reached 1 (the paper's dynamical weights, from l alone: fixed before
    the iteration runs)."""
    l, weights = eps, []
    while l + 5 * eps < 1 and len(weights) < max_iterations:
        l2 = l * l
        d = (4 * (1 - l2) / (l2 * l2)) ** (1 / 3)
        a = _math.sqrt(1 + d) + 0.5 * _math.sqrt(8 - 4 * d + 8 * (2 - l2)
                                                 / (l2 * _math.sqrt(1 + d)))
        b = (a - 1) ** 2 / 4
        c = a + b - 1
        l = l * (a + b * l2) / (1 + c * l2)
        weights.append((a, b, c))
    return weights


def _qdwh_qr_step(u, a, b, c):
    """u ← (b/c) u + (a - b/c)/√c Q₁ Q₂ᴴ, with [√c u; I] = [Q₁; Q₂] R (no inverse)."""
    m, n = u.shape
    q = _wnp.linalg.qr(_wnp.concatenate([_math.sqrt(c) * u, _np.eye(n, dtype=u.dtype)]))[0]
    return (b / c) * u + ((a - b / c) / _math.sqrt(c)) * (q[:m] @ _H(q[m:]))


def _qdwh_cholesky_step(u, a, b, c):
    """u ← (b/c) u + (a - b/c) u (I + c uᴴu)⁻¹, the inverse by the Cholesky factor."""
    n = u.shape[-1]
    factor = _wnp.linalg.cholesky(c * (_H(u) @ u) + _np.eye(n, dtype=u.dtype))
    adjoint = 2 if _is_complex(u) else 1
    y = _P.solve_triangular(factor, _H(u), trans=0, lower=True, unit_diagonal=False)
    y = _P.solve_triangular(factor, y, trans=adjoint, lower=True, unit_diagonal=False)
    return (b / c) * u + (a - b / c) * _H(y)


def _qdwh(x, max_iterations, eps):
    tol = (5 * eps) ** (1 / 3)
    one, inf = _wnp.linalg.norm(x, 1), _wnp.linalg.norm(x, _np.inf)
    scale = _wnp.where(one == 0, 1.0, one * inf)
    u = x / _wnp.astype(_wnp.sqrt(scale), x.dtype)
    going = True                        # (not converged: the QR steps do not test)
    weights = _qdwh_weights(eps, max_iterations)
    for a, b, c in weights:
        if c > 100:
            u = _qdwh_qr_step(u, a, b, c)
        else:
            new = _qdwh_cholesky_step(u, a, b, c)
            going = _wnp.linalg.norm(new - u) > tol
            u = new
    steps = len(weights)
    for _ in range(steps, max_iterations):
        known = _value(going)
        if known is not None and not known:
            break
        new = _qdwh_cholesky_step(u, 3.0, 1.0, 3.0)
        moved = _wnp.linalg.norm(new - u) > tol
        if known is not None:           # (an eager step, taken)
            u, going, steps = new, moved, steps + 1
        else:                           # (traced without values: a step where not converged)
            u = _wnp.where(going, new, u)
            steps = steps + _wnp.astype(going, _np.int64)
            going = going & moved
    u = 1.5 * u - 0.5 * (u @ (_H(u) @ u))
    h = _H(u) @ x
    h = (h + _H(h)) / 2
    converged = _wnp.logical_not(going)
    if isinstance(steps, int):                  # (arrays, as JAX's: int64 and bool)
        steps = _np.asarray(steps, _np.int64)
    if not isinstance(converged, _Node):
        converged = _np.asarray(converged)
    return u, h, steps, converged


# ---- Householder reflectors ------------------------------------------------------------------
def _reflector(alpha, x):
    """LAPACK's elementary reflector (xLARFG) for a stack of vectors [alpha; x] (alpha
    ``[...]``, x ``[..., k]``): (beta, tau, v) with H = I - tau [1; v] [1; v]ᴴ and
    Hᴴ [alpha; x] = [beta; 0], beta real, of the sign opposite to Re(alpha); H = I (tau 0,
    beta alpha) where x is zero and alpha real.  Written so that no branch divides by
    zero, so its derivatives are finite wherever it is smooth."""
    size2 = _wnp.sum(_wnp.real(x * _cj(x)), axis=-1)
    real = _wnp.real(alpha)
    identity = size2 == 0
    if _is_complex(alpha):
        identity = identity & (_wnp.imag(alpha) == 0)
    norm = _wnp.sqrt(_wnp.where(identity, 1.0, _wnp.real(alpha * _cj(alpha)) + size2))
    beta = _wnp.where(real >= 0, -norm, norm)
    tau = _wnp.where(identity, 0.0, (beta - alpha) / beta)
    v = _wnp.where(identity[..., None], 0.0, x / (alpha - beta)[..., None])
    return _wnp.where(identity, real, beta), _wnp.astype(tau, alpha.dtype), \
        _wnp.astype(v, x.dtype)


def _unit(v, before, dtype):
    """[0 (`before` of them), 1, v] along the last axis: a reflector's vector."""
    batch = v.shape[:-1]
    return _wnp.concatenate([_np.zeros(batch + (before,), dtype), _np.ones(batch + (1,), dtype),
                             _wnp.astype(v, dtype)], axis=-1)


def _reduce(m):
    """The reduction of the (stack of) square matrix m to upper Hessenberg form by the
    reflectors H₀, ..., H_{n-2} that LAPACK's gehd2 makes: Hᵢ zeroes column i below its
    subdiagonal, and m ← Hᵢᴴ m Hᵢ.  Returns (the Hessenberg matrix, the reflectors' vectors
    v packed below the subdiagonal, taus ``[..., n-1]``, the subdiagonal's betas)."""
    n = m.shape[-1]
    dtype = m.dtype
    batch = m.shape[:-2]
    packed, taus, betas = [], [], []
    for i in range(n - 1):
        column = m[..., :, i]
        beta, tau, v = _reflector(column[..., i + 1], column[..., i + 2:])
        u = _unit(v, i + 1, dtype)
        m = m - (tau[..., None, None] * (m @ u[..., :, None])) * _cj(u)[..., None, :]
        m = m - (_cj(tau)[..., None, None] * u[..., :, None]) * (_cj(u)[..., None, :] @ m)
        # (column i below the diagonal is what the reflector makes of it: beta, zeros)
        new = _wnp.concatenate([column[..., :i + 1], _wnp.astype(beta, dtype)[..., None],
                                _np.zeros(batch + (n - i - 2,), dtype)], axis=-1)
        m = _wnp.where(_np.arange(n) == i, new[..., :, None], m)
        packed.append(_wnp.concatenate([_np.zeros(batch + (i + 2,), dtype), v], axis=-1))
        taus.append(tau)
        betas.append(beta)
    packed.append(_np.zeros(batch + (n,), dtype))
    packed = _wnp.stack(packed, axis=-1)
    taus = _wnp.stack(taus, axis=-1) if taus else _np.zeros(batch + (0,), dtype)
    betas = _wnp.stack(betas, axis=-1) if betas else \
        _np.zeros(batch + (0,), _np.zeros((), dtype).real.dtype)
    return m, packed, taus, betas


def _lapack(name, a):
    """SciPy's LAPACK routine `name` for a's dtype (s, d, c or z)."""
    return _scipy_module("linalg").lapack.get_lapack_funcs((name,), (a,))[0]


def hessenberg(a):
    """The reduction of a square matrix to upper Hessenberg form, A = Q H Qᴴ, in LAPACK's
    packed form (gehrd), as ``jax.lax.linalg.hessenberg``: the list ``[a, taus]``, where
    a's upper triangle and first subdiagonal hold H and its entries below the subdiagonal
    the Householder vectors, Q = H₀ H₁ ··· H_{n-2} with Hᵢ = I - taus[i] vᵢ vᵢᴴ,
    vᵢ = [0, ..., 0, 1 (at i + 1), a[i+2:, i]] (`householder_product(a[..., 1:, :-1],
    taus)` is Q's lower right block).

    On plain arrays LAPACK's gehrd (JAX's values); on traced ones the same reflectors
    written with wengert.numpy, so it differentiates (JAX's does not) wherever the
    reflectors are smooth: everywhere but where a column below its subdiagonal is zero.

    Example:
        >>> import numpy as np, wengert as wg
        >>> x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 10.0]])
        >>> h, taus = hessenberg(x)
        >>> q = np.eye(3)
        >>> q[1:, 1:] = householder_product(h[1:, :-1], taus)
        >>> bool(np.allclose(q @ np.triu(h, -1) @ q.T, x))
        True
        >>> g = wg.grad(lambda x: wg.numpy.sum(hessenberg(x)[0] ** 2))(x)
        >>> g.shape
        (3, 3)
    """
    x = _matrix(a, "hessenberg", "a")
    n = x.shape[-1]
    if not _traced(x) and n > 1:
        gehrd = _lapack("gehrd", x)
        out = _np.empty(x.shape, x.dtype)
        taus = _np.empty(x.shape[:-2] + (n - 1,), x.dtype)
        for i in _np.ndindex(*x.shape[:-2]):
            out[i], tau, _ = gehrd(x[i])
            taus[i] = tau[:n - 1]
        return [out, taus]
    m, packed, taus, _ = _reduce(x)
    return [m + packed, taus]


def tridiagonal(a, *, lower=True):
    """The reduction of a symmetric (Hermitian) matrix to tridiagonal form, A = Q T Qᴴ, in
    LAPACK's packed form (sytrd, hetrd), as ``jax.lax.linalg.tridiagonal``: the list
    ``[a, d, e, taus]``.  With ``lower=True`` A is read from a's lower triangle, and a's
    diagonal and first subdiagonal return T, the entries below them the Householder
    vectors (Q = H₀ ··· H_{n-2}, as `hessenberg`'s); with ``lower=False`` from the upper
    triangle, T in the diagonal and first superdiagonal and the vectors above them
    (Q = H_{n-2} ··· H₀).  The triangle not read is returned as it was.  d is T's diagonal
    and e its off-diagonal (real, also for a complex matrix), taus the reflectors' scalars.

    On plain arrays LAPACK's sytrd/hetrd (JAX's values); on traced ones the same
    reflectors written with wengert.numpy, so it differentiates (JAX's does not) wherever
    the reflectors are smooth.

    Example:
        >>> import numpy as np, wengert as wg
        >>> s = np.array([[4.0, 1.0, 2.0], [1.0, 3.0, 0.5], [2.0, 0.5, 1.0]])
        >>> packed, d, e, taus = tridiagonal(s)
        >>> t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
        >>> bool(np.allclose(np.linalg.eigvalsh(t), np.linalg.eigvalsh(s)))
        True
        >>> g = wg.grad(lambda s: wg.numpy.sum(tridiagonal(s)[1]))(s)   # Σd = tr S
        >>> bool(np.allclose(g, np.eye(3)))
        True
    """
    x = _matrix(a, "tridiagonal", "a")
    n = x.shape[-1]
    if not _traced(x) and n > 1:
        name = "hetrd" if _is_complex(x) else "sytrd"
        trd = _lapack(name, x)
        real = _np.zeros((), x.dtype).real.dtype
        outs = [_np.empty(x.shape, x.dtype), _np.empty(x.shape[:-1], real),
                _np.empty(x.shape[:-2] + (n - 1,), real),
                _np.empty(x.shape[:-2] + (n - 1,), x.dtype)]
        for i in _np.ndindex(*x.shape[:-2]):
            result = trd(x[i], lower=int(bool(lower)))
            for out, part in zip(outs, result[:4]):
                out[i] = part
        return outs
    if not lower:       # (the upper triangle's reduction is the lower one's, turned around)
        flipped = _wnp.flip(x, axis=(-2, -1))
        packed, d, e, taus = tridiagonal(flipped, lower=True)
        return [_wnp.flip(packed, axis=(-2, -1)), _wnp.flip(d, axis=-1),
                _wnp.flip(e, axis=-1), _wnp.flip(taus, axis=-1)]
    m, packed, taus, betas = _reduce(_hermitian_from(x, lower=True))
    d = _wnp.real(_wnp.diagonal(m, axis1=-2, axis2=-1))
    t = _diag_matrix(d, x.dtype) + _wnp.tril(m, -1)
    return [_wnp.triu(x, 1) + t + packed, d, betas, taus]


def _reflectors(a, taus, who):
    """The reflectors' vectors vⱼ = [0, ..., 1 (at j), a[j+1:, j]] as the columns of
    ``[..., m, k]`` (k = len(taus)), and taus, after JAX's shape checks."""
    m, n = a.shape[-2:]
    if taus.ndim < 1:
        raise ValueError(f"{who}: taus must have shape [..., k], got shape {taus.shape}")
    k = taus.shape[-1]
    if k > min(m, n):
        raise ValueError(f"{who}: taus of shape {taus.shape} has more than min(m, n) = "
                         f"{min(m, n)} reflectors for a of shape {a.shape}")
    dtype = _np.result_type(a.dtype, taus.dtype)
    vectors = _wnp.tril(a[..., :, :k], -1) + _np.eye(m, k, dtype=dtype)
    return _wnp.astype(vectors, dtype), _wnp.astype(taus, dtype)


def _triangular_factor(vectors, taus):
    """T, upper triangular ``[..., k, k]``, with H₀ H₁ ··· H_{k-1} = I - Y T Yᴴ (Y the
    vectors ``[..., m, k]``, Hⱼ = I - tauⱼ yⱼ yⱼᴴ): the compact WY form, by the recurrence
    T ← [[T, -tauⱼ T Yᴴyⱼ], [0, tauⱼ]], which a zero tau (an identity reflector) leaves
    well defined.  Products with Q are then a few matrix products, not k passes over
    them."""
    batch = _np.broadcast_shapes(vectors.shape[:-2], taus.shape[:-1])
    k = taus.shape[-1]
    gram = _H(vectors) @ vectors
    t = _np.zeros(batch + (0, 0), taus.dtype)
    for j in range(k):
        tau = _wnp.broadcast_to(taus[..., j, None, None], batch + (1, 1))
        column = -tau * (t @ gram[..., :j, j:j + 1])
        t = _wnp.concatenate([_wnp.concatenate([t, column], axis=-1),
                              _wnp.concatenate([_np.zeros(batch + (1, j), taus.dtype), tau],
                                               axis=-1)], axis=-2)
    return t


def householder_product(a, taus):
    """The first n columns of Q = H₀ H₁ ··· H_{k-1}, Hⱼ = I - taus[j] vⱼ vⱼᴴ with
    vⱼ = [0, ..., 0, 1 (at j), a[j+1:, j]], as ``jax.lax.linalg.householder_product``
    (LAPACK's orgqr/ungqr): a ``[..., m, n]`` with m >= n holds the vectors below its
    diagonal, taus ``[..., k]``, k <= n; the result has a's shape.  Given geqrf's packed
    QR (`ormqr`'s example) it is the QR decomposition's Q.

    Computed as I - Y T Yᴴ (the compact WY form, T by its recurrence) with wengert.numpy,
    so it differentiates in a and taus (JAX's does not), to any order.

    Example:
        >>> import numpy as np, wengert as wg
        >>> a = np.array([[9.0, 9.0], [0.5, 9.0], [0.5, 0.5]])       # vectors below the diagonal
        >>> q = householder_product(a, np.array([1.2, 1.5]))
        >>> q.shape
        (3, 2)
        >>> v = np.array([1.0, 0.5, 0.5])
        >>> bool(np.allclose(householder_product(a, np.array([1.2]))[:, 0],
        ...                  (np.eye(3) - 1.2 * np.outer(v, v))[:, 0]))
        True
    """
    who = "householder_product"
    a = _matrix(a, who, "a", square=False)
    taus = _array(taus, who, "taus")
    m, n = a.shape[-2:]
    if m < n:
        raise ValueError(f"{who}: a must have at least as many rows as columns, got shape "
                         f"{a.shape}")
    vectors, taus = _reflectors(a, taus, who)
    _batch(who, ("a", a.shape, 2), ("taus", taus.shape, 1))
    # Q's first n columns: I - Y T (Y's first n rows)ᴴ
    t = _triangular_factor(vectors, taus)
    return _np.eye(m, n, dtype=vectors.dtype) - vectors @ (t @ _H(vectors[..., :n, :]))


def ormqr(a, taus, c, *, left=True, transpose=False):
    """Q c, Qᴴ c, c Q or c Qᴴ without forming Q = H₀ ··· H_{k-1} (`householder_product`'s
    reflectors from a ``[..., m, n]`` and taus ``[..., k]``), as ``jax.lax.linalg.ormqr``
    (LAPACK's ormqr/unmqr): Q is m×m; ``left=True`` multiplies c ``[..., m, p]`` from the
    left, ``left=False`` c ``[..., p, m]`` from the right; ``transpose=True`` uses Qᴴ (Qᵀ of
    a real Q).

    Computed with Q = I - Y T Yᴴ (the compact WY form) as three matrix products with
    wengert.numpy, so it differentiates in a, taus and c (JAX's does not).

    Example: Q of a QR decomposition from its packed form (LAPACK's geqrf, here SciPy's),
    and Q times a matrix:

        >>> import numpy as np, scipy.linalg
        >>> x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        >>> (packed, taus), r = scipy.linalg.qr(x, mode="raw")
        >>> q = np.linalg.qr(x, mode="complete")[0]
        >>> bool(np.allclose(ormqr(packed, taus, np.eye(3)), q))
        True
        >>> bool(np.allclose(ormqr(packed, taus, np.eye(3), left=False, transpose=True), q.T))
        True
    """
    who = "ormqr"
    a = _matrix(a, who, "a", square=False)
    taus = _array(taus, who, "taus")
    c = _matrix(c, who, "c", square=False)
    m = a.shape[-2]
    if (c.shape[-2] if left else c.shape[-1]) != m:
        raise ValueError(f"{who} with left={bool(left)} expects c to have {m} "
                         f"{'rows' if left else 'columns'}, as the Householder matrix a has "
                         f"rows; got a of shape {a.shape} and c of shape {c.shape}")
    vectors, taus = _reflectors(a, taus, who)
    _batch(who, ("a", a.shape, 2), ("taus", taus.shape, 1), ("c", c.shape, 2))
    # Q = I - Y T Yᴴ, Qᴴ = I - Y Tᴴ Yᴴ
    t = _triangular_factor(vectors, taus)
    t = _H(t) if transpose else t
    if left:
        return c - vectors @ (t @ (_H(vectors) @ c))
    return c - ((c @ vectors) @ t) @ _H(vectors)


# ---- LU --------------------------------------------------------------------------------------
def _permutation(pivots, size):
    """The permutation (P x)[i] = x[perm[i]] that LAPACK's row interchanges (i with
    pivots[i], i = 0, 1, ...) make, of length `size`, as an int32 array (a node where the
    pivots are traced)."""
    batch, k = pivots.shape[:-1], pivots.shape[-1]
    if k < size:
        rest = _np.broadcast_to(_np.arange(k, size, dtype=_np.int32), batch + (size - k,))
        pivots = _wnp.concatenate([pivots, rest], axis=-1)
    rows = _np.arange(size, dtype=_np.int32)[:, None]
    return _P.lu_swap_rows(rows, pivots, inverse=False)[..., 0]


def lu(x):
    """The LU decomposition with partial pivoting P A = L U of a ``[..., m, n]`` matrix,
    as ``jax.lax.linalg.lu``: the list ``[lu, pivots, permutation]``, L (unit diagonal left
    out) and U packed in `lu` (x's shape), pivots the min(m, n) row interchanges (int32;
    row i was swapped with row pivots[i]) and permutation P's rows (int32, length m:
    P A = A[permutation]).  LAPACK's getrf (SciPy's lu_factor).

    Derivatives: `wengert.scipy.linalg.lu_factor`'s, F = L⁻¹ P dA U⁻¹, dL = L tril(F, -1),
    dU = triu(F) U, for a square matrix; a wide one's extra columns of U are L⁻¹ P A₂ (a
    triangular solve); a tall one is factorized as the square [A, E] whose extra columns E
    are Pᵀ's last m - n columns, which leaves the pivots as they are and makes the
    factors' extra blocks I: its derivative is the square one's (at O(m³) cost).  The
    pivots have no derivative.

    Example:
        >>> import numpy as np, wengert as wg
        >>> a = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]])
        >>> packed, pivots, perm = lu(a)
        >>> pivots.tolist(), perm.tolist()
        ([2, 2], [2, 0, 1])
        >>> l = np.tril(packed, -1) + np.eye(3, 2)
        >>> bool(np.allclose(l @ np.triu(packed)[:2], a[perm]))
        True
        >>> wg.grad(lambda a: lu(a)[0][0, 0])(a).tolist()     # U₀₀ = a₂₀, the pivot
        [[0.0, 0.0], [0.0, 0.0], [1.0, 0.0]]
    """
    x = _matrix(x, "lu", square=False)
    m, n = x.shape[-2:]
    if m == n:
        packed, pivots = _P.lu_factor(x), _P.lu_pivots(x)
    elif m < n:                 # (the pivots are the left square block's)
        left = x[..., :, :m]
        packed, pivots = _P.lu_factor(left), _P.lu_pivots(left)
        upper = _P.solve_triangular(packed, _P.lu_swap_rows(x[..., :, m:], pivots,
                                                             inverse=False),
                                    trans=0, lower=True, unit_diagonal=True)
        packed = _wnp.concatenate([packed, upper], axis=-1)
    else:
        pivots = _P.lu_pivots(x)
        order = _permutation(pivots, m)
        # E = Pᵀ [0; I]: P [A, E] = [P A, [0; I]], whose elimination leaves [0; I] as it is
        extra = _wnp.astype(_T(order[..., n:, None] == _np.arange(m)), x.dtype)
        packed = _P.lu_factor(_wnp.concatenate([x, extra], axis=-1))[..., :, :n]
    return [packed, pivots, _permutation(pivots, m)]


def lu_pivots_to_permutation(pivots, permutation_size):
    """The permutation that LU's row interchanges make, as
    ``jax.lax.linalg.lu_pivots_to_permutation``: pivots ``[..., k]`` (row i swapped with
    row pivots[i], for i = 0, 1, ...), the result ``[..., permutation_size]`` (int32),
    with P A = A[permutation].  permutation_size must be at least k and larger than every
    pivot (checked where the pivots have values).

    Example:
        >>> import numpy as np
        >>> lu_pivots_to_permutation(np.array([2, 2, 3], np.int32), 5).tolist()
        [2, 0, 3, 1, 4]
    """
    who = "lu_pivots_to_permutation"
    size = _operator.index(permutation_size)
    pivots = _wnp.asarray(pivots)
    if pivots.dtype.kind not in "iu":
        raise TypeError(f"{who}: pivots must be integers, got dtype {pivots.dtype}")
    if pivots.ndim < 1:
        raise ValueError(f"{who}: pivots must have shape [..., k], got shape {pivots.shape}")
    if size < pivots.shape[-1]:
        raise ValueError(f"{who}: permutation_size {size} must be at least the number of "
                         f"pivots, {pivots.shape[-1]} (pivots of shape {pivots.shape})")
    known = _value(pivots)
    if known is not None and known.size and (known.min() < 0 or known.max() >= size):
        raise ValueError(f"{who}: pivots must lie in [0, {size}), got values from "
                         f"{known.min()} to {known.max()}")
    return _permutation(_wnp.astype(pivots, _np.int32), size)


# ---- QR ------------------------------------------------------------------------------------
def qr(x, *, pivoting=False, full_matrices=True, use_magma=None):
    """The QR decomposition A = Q R of a ``[..., m, n]`` matrix, as ``jax.lax.linalg.qr``:
    the tuple ``(q, r)``; q ``[..., m, m]`` and r ``[..., m, n]`` with `full_matrices` (the
    default), else ``[..., m, k]`` and ``[..., k, n]``, k = min(m, n).  With `pivoting`
    the column-pivoted decomposition A[:, p] = Q R, whose R has a non-increasing
    diagonal: the tuple ``(q, r, p)``, p int32 (LAPACK's geqp3 order).

    Derivatives: `wengert.numpy.linalg.qr`'s, where the first k columns are independent
    (with `pivoting`, those of A[:, p]: p has no derivative).  A tall matrix's complete
    Q (`full_matrices`) has m - n extra columns, LAPACK's Householder reflectors applied
    to [0; I]: traced, they are computed from those reflectors made again with
    wengert.numpy (LAPACK's values to rounding), so they differentiate too, as JAX's do.
    Where a column is already zero below the diagonal LAPACK's reflector is the identity,
    and beside it nearly a reflection, so Q jumps there: the derivative given is the
    identity's (JAX's: nan).

    Example:
        >>> import numpy as np, wengert as wg
        >>> a = np.array([[3.0, 1.0], [4.0, 2.0], [0.0, 2.0]])
        >>> q, r = qr(a)
        >>> q.shape, r.shape, bool(np.allclose(q @ r, a))
        ((3, 3), (3, 2), True)
        >>> q, r, p = qr(a, pivoting=True)
        >>> p.tolist(), bool(np.allclose(q @ r, a[:, p]))
        ([0, 1], True)
        >>> g = wg.grad(lambda a: wg.numpy.abs(qr(a)[1][0, 0]))(a)      # |r₀₀| = |a₀|
        >>> (g.round(6) + 0.0).tolist()
        [[0.6, 0.0], [0.8, 0.0], [0.0, 0.0]]
    """
    x = _matrix(x, "qr", square=False)
    if pivoting:
        p = _qr_pivots(x)
        x = _wnp.take_along_axis(x, p[..., None, :], axis=-1)
    q, r = _qr(x, bool(full_matrices))
    return (q, r, p) if pivoting else (q, r)


def _qr(x, full_matrices):
    m, n = x.shape[-2:]
    if not full_matrices or m <= n or not _traced(x):
        q, r = _wnp.linalg.qr(x, mode="complete" if full_matrices else "reduced")
        return q, r
    q, r = _wnp.linalg.qr(x)
    # the extra columns: LAPACK's Q is H₀ ··· H_{n-1}, whose last m - n columns are the
    # reflectors applied to [0; I]; made again here so that they have a derivative
    vectors, taus = _householder_qr(x)
    t = _triangular_factor(vectors, taus)
    extra = _np.eye(m, m - n, -n, dtype=x.dtype) - vectors @ (t @ _H(vectors[..., n:, :]))
    zeros = _np.zeros(x.shape[:-2] + (m - n, n), r.dtype)
    return _wnp.concatenate([q, extra], axis=-1), _wnp.concatenate([r, zeros], axis=-2)


def _householder_qr(x):
    """The reflectors of LAPACK's geqrf for a (stack of) tall matrix: their vectors as
    the columns of ``[..., m, n]`` (unit diagonal) and their taus ``[..., n]``."""
    n = x.shape[-1]
    vectors, taus = [], []
    for j in range(n):
        column = x[..., j:, j]
        beta, tau, v = _reflector(column[..., 0], column[..., 1:])
        u = _unit(v, j, x.dtype)
        # (only the columns right of j are needed from here on)
        x = x - (_cj(tau)[..., None, None] * u[..., :, None]) * (_cj(u)[..., None, :] @ x)
        vectors.append(u)
        taus.append(tau)
    return _wnp.stack(vectors, axis=-1), _wnp.stack(taus, axis=-1)


# ---- solves and products ---------------------------------------------------------------------
def triangular_solve(a, b, *, left_side=False, lower=False, transpose_a=False,
                     conjugate_a=False, unit_diagonal=False):
    """X with op(A) X = B (``left_side=True``) or X op(A) = B (the default), A the
    triangle of a that `lower` names (the other is not read; its diagonal taken as ones
    with `unit_diagonal`), op(A) = A, Aᵀ (`transpose_a`), conj(A) (`conjugate_a`) or Aᴴ
    (both), as ``jax.lax.linalg.triangular_solve``: a ``[..., m, m]``, b ``[..., m, n]``
    (left) or ``[..., n, m]`` (right), or one vector ``[m]``; the result has b's shape.
    Batch dimensions broadcast (JAX asks for equal ones).

    Derivatives: those of `wengert.scipy.linalg.solve_triangular`, dX = op(A)⁻¹(dB -
    op(dA) X) (on the triangle read), to any order; real or complex.

    Example:
        >>> import numpy as np, wengert as wg
        >>> a = np.array([[2.0, 0.0], [1.0, 4.0]])
        >>> triangular_solve(a, np.array([[2.0], [9.0]]), left_side=True, lower=True).tolist()
        [[1.0], [2.0]]
        >>> triangular_solve(a, np.array([[2.0, 9.0]]), lower=True, transpose_a=True).tolist()
        [[1.0, 2.0]]
        >>> wg.grad(lambda b: wg.numpy.sum(triangular_solve(a, b, left_side=True,
        ...                                                 lower=True)))(np.ones(2)).tolist()
        [0.375, 0.25]
    """
    who = "triangular_solve"
    a = _matrix(a, who, "a")
    b = _array(b, who, "b")
    m = a.shape[-1]
    if b.ndim < 1:
        raise ValueError(f"{who}: b must be a vector or a (stack of) matrix, got shape "
                         f"{b.shape}")
    vector = b.ndim == 1
    rows = b.shape[-1] if vector else b.shape[-2] if left_side else b.shape[-1]
    if rows != m:
        side = "rows" if left_side or vector else "columns"
        raise ValueError(f"{who}: b must have {m} {side} to match a (left_side="
                         f"{bool(left_side)}); got a of shape {a.shape} and b of shape "
                         f"{b.shape}")
    if not vector:
        _batch(who, ("a", a.shape, 2), ("b", b.shape, 2))
    transposed, conjugated = bool(transpose_a), bool(conjugate_a) and _is_complex(a)
    if not left_side:
        # X op(A) = B  ⇔  op(A)ᵀ Xᵀ = Bᵀ: the same solve from the left with op transposed
        transposed = not transposed
        if not vector:
            return _T(_solve_left(a, _T(b), lower, transposed, conjugated, unit_diagonal))
    return _solve_left(a, b, lower, transposed, conjugated, unit_diagonal)


def _solve_left(a, b, lower, transposed, conjugated, unit_diagonal):
    """op(A) X = B for op = id, ᵀ, conj or ᴴ: SciPy's trans 0, 1 and 2, and conj(A) X = B
    as A conj(X) = conj(B)."""
    params = dict(lower=bool(lower), unit_diagonal=bool(unit_diagonal))
    if conjugated and not transposed:
        return _wnp.conj(_P.solve_triangular(a, _wnp.conj(b), trans=0, **params))
    trans = (2 if conjugated else 1) if transposed else 0
    return _P.solve_triangular(a, b, trans=trans, **params)


def tridiagonal_solve(dl, d, du, b, *, perturb_singular=False):
    """X with A X = B, A the tridiagonal matrix with ``A[i, i-1] = dl[i]``,
    ``A[i, i] = d[i]`` and ``A[i, i+1] = du[i]`` (dl[0] and du[m-1] are not read), as
    ``jax.lax.linalg.tridiagonal_solve``: dl, d and du ``[..., m]``, b ``[..., m, n]``
    (batch dimensions broadcast).  LAPACK's gtsv with partial pivoting (SciPy's
    solve_banded with l = u = 1); a singular matrix raises LinAlgError (JAX's gives NaNs),
    and ``perturb_singular=True`` is a NotImplementedError.

    Derivatives: `wengert.scipy.linalg.solve_banded`'s, in dl, d, du and b, to any order,
    without forming A: dX = A⁻¹(dB - dA X), b̄ = A⁻ᵀ x̄ (another tridiagonal solve).

    Example:
        >>> import numpy as np, wengert as wg
        >>> dl, d, du = np.array([0.0, 1.0, 1.0]), np.full(3, 4.0), np.array([1.0, 1.0, 0.0])
        >>> a = np.diag(d) + np.diag(du[:-1], 1) + np.diag(dl[1:], -1)
        >>> x = tridiagonal_solve(dl, d, du, np.ones((3, 1)))
        >>> bool(np.allclose(a @ x, 1.0))
        True
        >>> g = wg.grad(lambda d: wg.numpy.sum(tridiagonal_solve(dl, d, du, np.ones((3, 1)))))(d)
        >>> bool(np.allclose(g, -np.linalg.solve(a.T, np.ones(3)) * x[:, 0]))   # -x̄ᵢ xᵢ
        True
    """
    who = "tridiagonal_solve"
    if perturb_singular:
        raise NotImplementedError(f"{who}(..., perturb_singular=True) is not offered: LAPACK's "
                                  "gtsv without perturbation is; a singular system raises "
                                  "LinAlgError")
    dl, d, du = (_array(v, who, name) for v, name in ((dl, "dl"), (d, "d"), (du, "du")))
    b = _array(b, who, "b")
    if not dl.shape == d.shape == du.shape or d.ndim < 1:
        raise ValueError(f"{who}: dl, d and du must have one shape [..., m]; got "
                         f"{dl.shape}, {d.shape} and {du.shape}")
    m = d.shape[-1]
    if b.ndim < 2 or b.shape[-2] != m:
        raise ValueError(f"{who}: b must have shape [..., {m}, n] for diagonals of shape "
                         f"{d.shape}; got b of shape {b.shape}")
    _batch(who, ("the diagonals", d.shape, 1), ("b", b.shape, 2))
    dtype = _np.result_type(dl.dtype, d.dtype, du.dtype)
    zero = _np.zeros(d.shape[:-1] + (1,), dtype)
    # SciPy's band storage: ab[u + i - j, j] = A[i, j], u = l = 1
    ab = _wnp.stack([_wnp.concatenate([zero, _wnp.astype(du[..., :-1], dtype)], axis=-1),
                     _wnp.astype(d, dtype),
                     _wnp.concatenate([_wnp.astype(dl[..., 1:], dtype), zero], axis=-1)],
                    axis=-2)
    return _P.solve_banded(ab, b, l=1, u=1)


def symmetric_product(a_matrix, c_matrix, *, alpha=1.0, beta=0.0, symmetrize_output=False):
    """α A Aᵀ + β C for A ``[..., m, n]`` and C ``[..., m, m]``, as
    ``jax.lax.linalg.symmetric_product``; with `symmetrize_output` the upper triangle is
    replaced by the transpose of the lower one (for a C that is not symmetric: JAX's CPU
    result, which is the whole product otherwise).  Real matrices, as JAX's.

    Written with matmul, so it differentiates (JAX's does not), in A, C, alpha and beta.

    Example:
        >>> import numpy as np, wengert as wg
        >>> a = np.array([[1.0, 2.0], [0.0, 1.0]])
        >>> symmetric_product(a, np.eye(2), alpha=2.0, beta=1.0).tolist()
        [[11.0, 4.0], [4.0, 3.0]]
        >>> wg.grad(lambda a: wg.numpy.trace(symmetric_product(a, np.eye(2))))(a).tolist()
        [[2.0, 4.0], [0.0, 2.0]]
    """
    who = "symmetric_product"
    a = _matrix(a_matrix, who, "a_matrix", square=False)
    c = _matrix(c_matrix, who, "c_matrix")
    if _is_complex(a) or _is_complex(c):
        raise TypeError(f"{who} takes real matrices, as JAX's does; got {a.dtype} and "
                        f"{c.dtype}")
    if c.shape[-1] != a.shape[-2]:
        raise ValueError(f"{who}: a_matrix of shape [..., m, n] needs c_matrix of shape "
                         f"[..., m, m]; got {a.shape} and {c.shape}")
    _batch(who, ("a_matrix", a.shape, 2), ("c_matrix", c.shape, 2))
    out = alpha * (a @ _T(a)) + beta * c
    if symmetrize_output:
        out = _wnp.tril(out) + _T(_wnp.tril(out, -1))
    return out


def __getattr__(name):
    # (JAX's primitives, cholesky_p and the like, and anything else it has: say so)
    if name.endswith("_p") and name[:-2] in __all__:
        raise AttributeError(f"wengert.lax.linalg has no {name!r}: JAX's primitives are not "
                             f"offered; call {name[:-2]} (wengert's own primitives are in "
                             "wg.REGISTRY)")
    raise AttributeError(f"wengert.lax.linalg has no {name!r}: JAX's jax.lax.linalg.{name} is "
                         "not offered (see docs/jax.md)")
