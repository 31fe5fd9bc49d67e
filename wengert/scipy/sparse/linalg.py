"""scipy.sparse.linalg, differentiable: `spsolve`, and the Krylov solvers `cg`, `gmres` and
`bicgstab` (JAX's ``jax.scipy.sparse.linalg``).

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

__all__ = ["spsolve", "cg", "gmres", "bicgstab"]


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


# ---- Krylov solvers ----------------------------------------------------------------------------
# cg, gmres and bicgstab solve A x = b by SciPy's own iterations, on numbers.  Where anything
# is traced, the solve is one lax.custom_linear_solve (a `Solution` node): its derivatives are
# the implicit function theorem's for A x - b = 0, ẋ = A⁻¹ (ḃ - Ȧ x) and b̄ = A⁻ᵀ x̄, each one
# more solve by the same method, so they are as accurate as the solution, whatever the
# iterations did on the way to it (nothing is differentiated through them).


def cg(A, b, x0=None, *, rtol=None, atol=0.0, maxiter=None, M=None, callback=None, tol=None):
    """Conjugate gradients: the x of A x = b for a symmetric positive definite A, as SciPy's
    ``scipy.sparse.linalg.cg`` and JAX's ``jax.scipy.sparse.linalg.cg``, differentiable in b
    and in A (its entries, or the traced values a function A closes over).

    Args:
        A: the matrix: a 2-D array (traced or not), a scipy.sparse matrix, a
            `wengert.scipy.sparse` array with traced entries, or a function ``x -> A x`` of
            pytrees shaped like b (JAX's form, matrix-free); a SciPy ``LinearOperator``
            where nothing is traced.
        b: the right-hand side: a vector for a matrix A, any pytree of real arrays for a
            function A.
        x0: the starting guess, shaped like b (default zeros); it gets no derivative.
        rtol, atol: stop at ``‖b - A x‖ ≤ max(rtol ‖b‖, atol)`` (defaults 1e-5, 0, SciPy's
            and JAX's).  ``tol`` is JAX's name for rtol.
        maxiter: the most iterations (default 10 n, n the number of unknowns).
        M: a preconditioner approximating A⁻¹: a matrix, or a function of pytrees as A.
        callback: SciPy's ``callback(xk)``, called after each iteration of each solve (the
            derivatives' solves too).

    Returns:
        ``(x, info)``: x shaped like b (float64), and SciPy's info (0: converged; k > 0:
        not converged after k iterations) where nothing is traced.  Where anything is
        traced, info is None, as JAX's, and a solve that does not converge warns
        (RuntimeWarning) and returns its last iterate.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy.sparse.linalg import cg
        >>> A, b = np.array([[4.0, 1.0], [1.0, 3.0]]), np.array([1.0, 2.0])
        >>> x, info = cg(A, b, rtol=1e-12)
        >>> bool(np.allclose(x, np.linalg.solve(A, b))), info
        (True, 0)
        >>> g = wg.grad(lambda b: cg(A, b, rtol=1e-12)[0][0])(b)    # row 0 of A⁻¹
        >>> bool(np.allclose(g, np.linalg.inv(A)[0]))
        True
    """
    return _krylov("cg", A, b, x0, rtol, tol, atol, maxiter, M, callback, {})


def gmres(A, b, x0=None, *, rtol=None, atol=0.0, restart=None, maxiter=None, M=None,
          callback=None, callback_type=None, tol=None, solve_method=None):
    """Restarted GMRES: the x of A x = b for a square regular A, as SciPy's
    ``scipy.sparse.linalg.gmres`` and JAX's ``jax.scipy.sparse.linalg.gmres``,
    differentiable in b and in A.  The arguments and the result are `cg`'s, and:

    Args:
        restart: the Krylov vectors kept before a restart (default 20).
        maxiter: the most restart cycles (SciPy's and JAX's meaning).
        callback_type: SciPy's ("legacy", "pr_norm" or "x").
        solve_method: JAX's ("batched" or "incremental", how JAX orthogonalises on an
            accelerator); accepted, and SciPy's iteration runs either way.

    The reverse sweep solves with Aᵀ (with Mᵀ for a matrix M; a function M serves as it
    is).

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy.sparse.linalg import gmres
        >>> A, b = np.array([[1.0, 2.0], [-3.0, 1.0]]), np.array([1.0, 2.0])
        >>> x, info = gmres(A, b, rtol=1e-12)
        >>> bool(np.allclose(x, np.linalg.solve(A, b))), info
        (True, 0)
        >>> J = wg.jacrev(lambda A: gmres(A, b, rtol=1e-12)[0])(A)   # ∂x/∂A = -A⁻¹ ⊗ x
        >>> bool(np.allclose(J, -np.einsum("ij,k->ijk", np.linalg.inv(A), x)))
        True
    """
    if solve_method not in (None, "batched", "incremental"):
        raise ValueError(f"gmres: solve_method must be 'batched' or 'incremental', got "
                         f"{solve_method!r:.40}")
    options = {} if callback_type is None else {"callback_type": callback_type}
    if restart is not None:
        _check_count("gmres", "restart", restart)
        options["restart"] = int(restart)
    return _krylov("gmres", A, b, x0, rtol, tol, atol, maxiter, M, callback, options)


def bicgstab(A, b, x0=None, *, rtol=None, atol=0.0, maxiter=None, M=None, callback=None,
             tol=None):
    """BiCGSTAB: the x of A x = b for a square regular A, as SciPy's
    ``scipy.sparse.linalg.bicgstab`` and JAX's ``jax.scipy.sparse.linalg.bicgstab``,
    differentiable in b and in A.  The arguments and the result are `cg`'s; the reverse
    sweep solves with Aᵀ, as `gmres`'s does.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy.sparse.linalg import bicgstab
        >>> A = np.array([[3.0, 1.0, 0.0], [-1.0, 4.0, 1.0], [0.0, 2.0, 5.0]])
        >>> solve = lambda b: bicgstab(A, b, rtol=1e-12)[0]
        >>> b = np.array([1.0, 2.0, 3.0])
        >>> bool(np.allclose(wg.jacfwd(solve)(b), np.linalg.inv(A)))
        True
    """
    return _krylov("bicgstab", A, b, x0, rtol, tol, atol, maxiter, M, callback, {})


def _krylov(name, A, b, x0, rtol, tol, atol, maxiter, M, callback, options):
    """SciPy's solver `name` on A x = b: as it is where nothing is traced (with its info),
    else one lax.custom_linear_solve whose solves run it (info None)."""
    import warnings
    import numpy as np
    import scipy.sparse.linalg as sla
    from ... import lax
    if tol is not None:
        if rtol is not None:
            raise TypeError(f"{name}: tol (JAX's name) and rtol (SciPy's) are the same "
                            "option; give one")
        rtol = tol
    rtol = 1e-5 if rtol is None else rtol
    for option, value in (("rtol", rtol), ("atol", atol)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) \
                or not 0 <= value < np.inf:
            raise ValueError(f"{name}: {option} must be a number ≥ 0, got {value!r:.40}")
    if maxiter is not None:
        _check_count(name, "maxiter", maxiter)
    matvec = _matvec(name, A, b)
    method = getattr(sla, name)

    def solver(transposed, warn):
        def solve(mv, rhs):
            # (SciPy solves for one flat vector: lax's _Unknown goes between it and b's
            # pytree, on numbers here)
            shape = lax._Unknown(rhs, name, "b")
            n = sum(shape.sizes)
            op = sla.LinearOperator((n, n), dtype=np.float64, matvec=lambda v: shape.flat(
                mv(shape.unflat(v)), "the value of A"))
            start = None if x0 is None else shape.flat(_numbers(x0, "x0"), "x0")
            x, info = method(op, shape.flat(rhs, "b"), x0=start, rtol=rtol, atol=atol,
                             maxiter=maxiter, M=_preconditioner(M, shape, n, transposed),
                             callback=callback, **options)
            if warn and info:
                what = (f"did not reach rtol={rtol:g} (atol={atol:g}) in {info} iterations"
                        if info > 0 else f"broke down (SciPy's info {info})")
                warnings.warn(f"{name}: the solve {what}; its last iterate is returned",
                              RuntimeWarning, stacklevel=2)
            return shape.unflat(x), info
        return solve
    if lax._untraced((b, x0)) and not _traced(A):
        return lax.custom_linear_solve(matvec, b, solver(False, False), has_aux=True)
    if isinstance(A, sla.LinearOperator):
        raise TypeError(f"{name}: a SciPy LinearOperator A applies to numbers only, and here "
                        "something is traced; give A as a matrix or as a function x -> A x "
                        "of wengert.numpy operations")

    def solve(transposed):
        run = solver(transposed, True)
        return lambda mv, rhs: run(mv, rhs)[0]
    # (a transpose_solve for every method: a matrix M is transposed with A, which for
    # cg's symmetric A and M changes nothing)
    x = lax.custom_linear_solve(matvec, b, solve(False), transpose_solve=solve(True))
    return x, None


def _check_count(name, option, value):
    import numpy as np
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name}: {option} must be a positive integer, got {value!r:.40}")


def _matvec(name, A, b):
    """x -> A x, for A a function (JAX's matrix-free form), a matrix or an operator."""
    import numpy as np
    import scipy.sparse.linalg as sla
    from ... import numpy as wnp
    if isinstance(A, sla.LinearOperator):
        shape = A.shape
    elif callable(A):
        return A
    elif issparse(A) or isinstance(A, SparseArray) or _traced(A):
        shape = A.shape
    else:
        try:
            A = np.asarray(A)
        except (TypeError, ValueError):
            raise TypeError(f"{name}: A must be a matrix, a function x -> A x or a "
                            f"LinearOperator, got {type(A).__name__}") from None
        shape = A.shape
    b_shape = b.shape if _traced(b) else np.shape(b) if isinstance(
        b, (np.ndarray, np.generic, int, float, list)) else None
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"{name}: A must be a square matrix, got shape {tuple(shape)}")
    if b_shape is None or tuple(b_shape) != (shape[0],):
        raise ValueError(f"{name}: the matrix A of shape {tuple(shape)} takes a vector b of "
                         f"shape {(shape[0],)}, got "
                         f"{tuple(b_shape) if b_shape is not None else type(b).__name__}"
                         " (a pytree b goes with a function A)")
    if isinstance(A, sla.LinearOperator):
        return A.matvec
    if issparse(A) or isinstance(A, SparseArray):
        return lambda x: A @ x
    return lambda x: wnp.matmul(A, x)


def _numbers(tree, name):
    """`tree` with each traced leaf replaced by its value (a preconditioner or a start runs
    on numbers); refused where it has none (traced without values)."""
    from ...tree import tree_map

    def value(x):
        if not _traced(x):
            return x
        if x.value is None:
            raise ValueError(f"{name} is traced without values here (wg.compile, wg.jit or "
                             "wg.vmap), and the solve runs on numbers; pass it as a "
                             "constant, or compute it inside M")
        return x.value
    return tree_map(value, tree)


def _preconditioner(M, shape, n, transposed):
    """M as SciPy takes it: a matrix (transposed for the transposed systems), or an operator
    applying a function M to pytrees shaped like b."""
    import numpy as np
    import scipy.sparse.linalg as sla
    if M is None or isinstance(M, sla.LinearOperator):
        return M
    if callable(M):
        return sla.LinearOperator((n, n), dtype=np.float64, matvec=lambda v: shape.flat(
            _numbers(M(shape.unflat(v)), "what M returns"), "the value of M"))
    M = M if issparse(M) else np.asarray(_numbers(M, "M"))
    if M.shape != (n, n):
        raise ValueError(f"M must be a square matrix of the unknowns' size {n}, got shape "
                         f"{M.shape}")
    return M.T if transposed else M
