"""scipy.sparse.linalg, differentiable in the right-hand side: `spsolve`.

``spsolve(A, b)`` with a constant scipy.sparse matrix A and a traced b records one
`sparse_solve` (wengert.primitives.sparse): x = A⁻¹ b is linear in b, with the JVP
A⁻¹ db and the VJP b̄ = A⁻ᵀ x̄, solves with the LU factors of the first (SciPy's
SuperLU), to any order, under `wg.vmap` (the batch as more right-hand sides) and
`wg.compile`.  On plain values it *is* SciPy's spsolve.  A matrix with traced entries, a
`wengert.scipy.sparse.SparseArray` (``csr_array((data, indices, indptr))`` with traced
data), records one `sparse_data_solve`, differentiable in the entries too (the adjoint
method: datā_k = -b̄[row_k]·x[col_k] with b̄ = A⁻ᵀ x̄).

Example:
    >>> import numpy as np, scipy.sparse as sp, wengert as wg
    >>> from wengert.scipy.sparse.linalg import spsolve
    >>> A = sp.csc_array(np.array([[4.0, 1.0], [1.0, 3.0]]))
    >>> g = wg.grad(lambda b: spsolve(A, b)[0])(np.array([1.0, 2.0]))   # row 0 of A⁻¹
    >>> bool(np.allclose(g, np.linalg.inv(A.toarray())[0]))
    True
"""
from __future__ import annotations


from ...graph.node import Node
from ...primitives import sparse as P
from . import issparse, _kind
from ._traced import SparseArray

__all__ = ["spsolve"]


def _traced(x) -> bool:
    return type(x) is Node


def spsolve(A, b, permc_spec=None, use_umfpack=True):
    """SciPy's ``spsolve``: the x of A x = b for a square sparse A, differentiable in b.

    b of shape (n,) or (n, 1) gives x of shape (n,), b of shape (n, k) gives (n, k), as in
    SciPy.  `permc_spec` orders the columns of the LU factorisation (SciPy's); on traced
    values the solve is SuperLU's (`use_umfpack` asks for UMFPACK on plain values only).

    Example:
        >>> import numpy as np, scipy.sparse as sp, wengert as wg
        >>> A = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(3, 3), format="csc")
        >>> J = wg.jacfwd(lambda b: spsolve(A, b))(np.ones(3))
        >>> bool(np.allclose(J, np.linalg.inv(A.toarray())))
        True
    """
    if isinstance(A, SparseArray):
        return _solve_traced(A, b, permc_spec)
    if _traced(A):
        raise NotImplementedError(
            "spsolve with a traced dense matrix A is not supported: wengert differentiates "
            "spsolve(A, b) for a scipy.sparse A and for a sparse matrix with traced entries "
            "built by wengert.scipy.sparse.csr_array((data, indices, indptr)) or "
            "coo_array((data, (row, col))). For a dense traced matrix use "
            "wengert.numpy.linalg.solve(A, b)")
    if not _traced(b):
        from scipy.sparse.linalg import spsolve as scipy_spsolve
        return scipy_spsolve(A, b, permc_spec=permc_spec, use_umfpack=use_umfpack)
    if not issparse(A):
        raise TypeError(f"spsolve: A must be a scipy.sparse matrix, got {type(A).__name__}")
    m, n = A.shape if len(A.shape) == 2 else (None, None)
    if m is None or m != n:
        raise ValueError(f"spsolve: the matrix must be square, got a {_kind(A)} of shape "
                         f"{A.shape}")
    if b.ndim not in (1, 2) or b.shape[0] != n:
        raise ValueError(f"spsolve: the matrix of shape {A.shape} and the right-hand side of "
                         f"shape {b.shape} do not match")
    if b.ndim == 2 and b.shape[1] == 1:
        b = b.reshape(n)                    # (SciPy's: one column is a vector)
    return P.sparse_solve(b, matrix=P.held(A), transpose=False,
                          permc_spec="COLAMD" if permc_spec is None else permc_spec)


def _solve_traced(A, b, permc_spec):
    """spsolve for a sparse matrix with traced entries (b traced or not)."""
    import numpy as np
    if issparse(b) or isinstance(b, SparseArray):
        raise NotImplementedError("spsolve with a sparse right-hand side and a matrix with "
                                  "traced entries is not supported: give b as a dense array")
    if not _traced(b):
        b = np.asarray(b)
    m, n = A.shape
    if m != n:
        raise ValueError(f"spsolve: the matrix must be square, got shape {A.shape}")
    if b.ndim not in (1, 2) or b.shape[0] != n:
        raise ValueError(f"spsolve: the matrix of shape {A.shape} and the right-hand side of "
                         f"shape {b.shape} do not match")
    if b.ndim == 2 and b.shape[1] == 1:
        b = b.reshape(n)
    return P.sparse_data_solve(A.data, b, pattern=A.pattern, transpose=A.transposed,
                               permc_spec="COLAMD" if permc_spec is None else permc_spec)
