"""SciPy's linear algebra (`scipy.linalg`) as primitives, for `wengert.scipy.linalg`.

Each primitive is evaluated by SciPy's own function (imported on first use, so wengert
imports without SciPy), so a traced value is SciPy's; its rules are written with
primitives, so they differentiate again.  Batch dimensions in front of the matrices
broadcast as SciPy's do.

Matrix calculus used below (Ã the triangle of A that is read, op(Ã) = Ã, Ãᵀ or Ãᴴ):

    solve_triangular:  op(Ã) x = b:   dx = op(Ã)⁻¹ (db - op(dÃ) x)
                       b̄ = op(Ã)⁻ᵀ x̄,  Ā = -tri(b̄ xᵀ) (op = id), -tri(x b̄ᵀ) (op = ᵀ)
                       or -tri(conj(x b̄ᵀ)) (op = ᴴ)
    solve_banded:      A x = b, A banded:  dx = A⁻¹ (db - dA x),  b̄ = A⁻ᵀ x̄ (Aᵀ is banded
                       too, l and u swapped),  Ā = -b̄ xᵀ on the band
    expm:              d e^A = L(A, dA), the Fréchet derivative, which is the top-right
                       block of exp([[A, dA], [0, A]]);   Ā = L(Aᵀ, Ḡ)
    solve_sylvester:   AX + XB = Q:   A dX + dX B = dQ - dA X - X dB
                       Q̄ solves Aᵀ Q̄ + Q̄ Bᵀ = X̄,  Ā = -Q̄ Xᵀ,  B̄ = -Xᵀ Q̄
    sqrtm:             X² = A:        X dX + dX X = dA;   Ā solves Xᵀ Ā + Ā Xᵀ = Ḡ
    lu_factor:         P A = L U (L unit lower, U upper, packed into one matrix LU):
                       F = L⁻¹ P dA U⁻¹,  dL = L tril(F, -1),  dU = triu(F) U
                       Ā = Pᵀ L⁻ᵀ (tril(Lᵀ L̄, -1) + triu(Ū Uᵀ)) U⁻ᵀ
    symmetrize:        the symmetric matrix one triangle of A holds, with the symmetric
                       derivative (dA + dAᵀ)/2 (the convention of cholesky and eigh); with
                       hermitian=True the Hermitian one, (dA + dAᴴ)/2
    eigh(A):           A = V Λ Vᴴ:  dλ = Re diag(Vᴴ dA V),  dV = V (F ∘ (Vᴴ herm(dA) V))
    eigh(A, B):        A V = B V Λ, Vᵀ B V = I:  dλ_i = v_iᵀ (dA - λ_i dB) v_i,
                       dV = V (F ∘ (Vᵀ dA V - Vᵀ dB V Λ)) - ½ V diag(Vᵀ dB V)
                       (types 2 and 3, and the cotangents: at gen_eigh_values below)

Complex matrices (the convention of docs/complex.md, JAX's and autograd's).  expm,
solve_sylvester, sqrtm, lu_factor, solve_banded and solve_triangular with op = id or ᵀ are
holomorphic: the formulas above hold as written, their VJPs transposing without
conjugating, and their JVPs are complex-linear (so holomorphic=True works).
solve_triangular with op = ᴴ (trans=2, SciPy's 'C') reads conj(A): its rules conjugate
where the formulas say.  The Hermitian readers (symmetrize(hermitian=True), eigh_values,
eigh_vectors, gen_eigh_*) have the Hermitian derivative: a change dA counts as its
Hermitian part (dA + dAᴴ)/2, as wengert.primitives.linalg's cholesky and eigh do, and
their VJPs are the adjoints of the JVPs applied to the conjugated cotangent and
conjugated back.

Their Taylor rules are in wengert.ad.taylor: solve_triangular's, solve_sylvester's and
sqrtm's solve the same equations for each coefficient; expm's reads the coefficients off
the exponential of a block upper-triangular Toeplitz matrix (`block_upper`).  (Taylor mode
is for real numbers: a complex graph is refused before they are reached.)
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .registry import defprimitive, float_dtype, real_dtype, shape_of
from .array import (matmul, tril, reshape, concatenate, getitem, zeros_like, pad, flip,
                    dtype_of, sum as _sum)
from .shape import sum_to
from . import linalg as L, scalar as S
# (the transpose; the conjugate transpose, the conjugate and the Hermitian part, which are
# the transpose, the array itself and the symmetric part of a real matrix)
from .linalg import _T, _H, _cj, _herm
from .special import scipy_module


def scipy_linalg():
    """SciPy's `scipy.linalg`, or an ImportError that says how to install it.

    Example:
        >>> scipy_linalg().expm([[0.0]]).tolist()
        [[1.0]]
    """
    return scipy_module("linalg")


def _triu(x, k=0):
    """The upper triangle from diagonal k up (tril's complement)."""
    return x - tril(x, k=k - 1)


def _col(v):
    return reshape(v, shape=shape_of(v) + (1,))


def _uncol(x):
    return reshape(x, shape=shape_of(x)[:-1])


def _batch_of(*shapes_and_cores):
    """The broadcast batch shape of arrays, each given as (shape, number of core axes)."""
    return np.broadcast_shapes(*[s[:len(s) - k] for s, k in shapes_and_cores])


def _prim(name, impl, aval, doc):
    return defprimitive(name, impl, cost="call", abstract_eval=aval, doc=doc)


# ---- solve_triangular ------------------------------------------------------------------------
def _solve_triangular_np(a, b, trans, lower, unit_diagonal):
    return scipy_linalg().solve_triangular(a, b, trans=trans, lower=lower,
                                           unit_diagonal=unit_diagonal, check_finite=False)


def _solve_aval(args, params):
    """b is one vector if 1-D, else a stack of matrices (SciPy's and NumPy 2's reading)."""
    a, b = args[0].shape, args[1].shape
    shape = a[:-2] + b if len(b) == 1 else _batch_of((a, 2), (b, 2)) + b[-2:]
    return shape, float_dtype(args[0].dtype, args[1].dtype)


solve_triangular = _prim(
    "solve_triangular", _solve_triangular_np, _solve_aval,
    "solve_triangular(a, b, trans=t, lower=l, unit_diagonal=u): x with op(A) x = b, A the "
    "triangle of a that `lower` names (its diagonal taken as ones if `unit_diagonal`), op "
    "the transpose if trans = 1, the conjugate transpose if trans = 2 (a complex a's 'C'; "
    "scipy.linalg.solve_triangular).")


def _read(x, lower, unit_diagonal):
    """The part of a matrix a triangular solve reads: its lower or upper triangle, without
    the diagonal if that is taken as ones."""
    if lower:
        return tril(x, k=-1 if unit_diagonal else 0)
    return _triu(x, 1 if unit_diagonal else 0)


def _times(m, x, vector):
    """m @ x, x one vector or a stack of matrices."""
    return _uncol(matmul(m, _col(x))) if vector else matmul(m, x)


def _like_b(solve, a, rhs, b, **params):
    """solve(a, rhs) for a right-hand side shaped like x: read as b is read, so that with a
    vector b the rows of a batch of x's (b broadcast against a stack of a's) stay vectors,
    not one matrix."""
    if len(shape_of(b)) == 1:
        return _uncol(solve(a, _col(rhs), **params))
    return solve(a, rhs, **params)


_OP = {0: lambda x: x, 1: _T, 2: _H}          # op for trans = 0, 1, 2


@solve_triangular.defjvp
def _(ts, a, b, ans, **params):
    rhs = ts[1]
    if ts[0] is not None:
        da = _read(ts[0], params["lower"], params["unit_diagonal"])
        ax = _times(_OP[params["trans"]](da), ans, len(shape_of(b)) == 1)
        rhs = -ax if rhs is None else rhs - ax
    return _like_b(solve_triangular, a, rhs, b, **params)


@solve_triangular.defvjp
def _(g, a, b, ans, trans, lower, unit_diagonal):
    tri = dict(lower=lower, unit_diagonal=unit_diagonal)
    if trans == 2:
        # b̄ = (A⁻ᴴ)ᵀ x̄ = conj(A)⁻¹ x̄ = conj(A⁻¹ conj(x̄)), and Re Σ b̄·(dAᴴ x) is
        # Re Σ dA·conj(x b̄ᵀ): the transpose's cotangent, conjugated
        gb = _cj(_like_b(solve_triangular, a, _cj(g), b, trans=0, **tri))
    else:
        gb = _like_b(solve_triangular, a, g, b, trans=1 - trans, **tri)
    if len(shape_of(b)) == 1:
        gb2, x2 = _col(gb), _col(ans)
    else:
        gb2, x2 = gb, ans
    outer = matmul(x2, _T(gb2)) if trans else matmul(gb2, _T(x2))
    ga = -_read(_cj(outer) if trans == 2 else outer, lower, unit_diagonal)
    return sum_to(ga, shape=shape_of(a)), sum_to(gb, shape=shape_of(b))


# ---- solve_banded ----------------------------------------------------------------------------
# A banded matrix is kept as SciPy keeps it: ab[u + i - j, j] = A[i, j], its l + u + 1
# diagonals as rows (l below the main one, u above).  The rules need three things from
# that storage without ever making the n×n matrix: dA x, b̄ xᵀ read on the band, and the
# band of Aᵀ.  Each is a gather along the diagonals (`_along_diagonals`), so the rules are
# graph operations and differentiate again.
def _solve_banded_np(ab, b, l, u):
    return scipy_linalg().solve_banded((l, u), ab, b, check_finite=False)


# (its result's shape is solve_triangular's: ab, like a, has two core axes)
solve_banded = _prim(
    "solve_banded", _solve_banded_np, _solve_aval,
    "solve_banded(ab, b, l=l, u=u): x with A x = b, A the banded matrix whose diagonals "
    "are the rows of ab, ab[u + i - j, j] = A[i, j] (scipy.linalg.solve_banded).")


def _along_diagonals(x, offsets, per_row):
    """out[..., r, i] = x[..., i + offsets[r]], zero where that is outside x's last axis;
    with `per_row`, x has the rows already and out[..., r, i] = x[..., r, i + offsets[r]].
    (One slice per row, not a gather: slices are views, and their cotangents add into
    zeros without NumPy's slow add.at.)"""
    shape = shape_of(x)
    n = shape[-1]
    reach = max(abs(int(o)) for o in offsets)
    padded = pad(x, pad_width=((0, 0),) * (len(shape) - 1) + ((reach, reach),))
    rows = []
    for r, o in enumerate(offsets):
        cols = ("slice", reach + int(o), reach + int(o) + n, None)
        rows.append(getitem(padded, index=(Ellipsis, r, cols) if per_row else (Ellipsis, cols)))
    ndim = len(shape) + (0 if per_row else 1)
    return concatenate(*[_unit_axis(row, -2) for row in rows], axis=ndim - 2)


def _band_transpose(ab, l, u):
    """The band of Aᵀ (l and u swap): abᵀ[l + j - i, i] = A[j, i] = ab[u + i - j, j]."""
    return _along_diagonals(flip(ab, axes=(-2,)), np.arange(l + u + 1) - l, per_row=True)


def _sum_axis(x, axis):
    """x summed over one axis, counted from the end."""
    return _sum(x, axis=(len(shape_of(x)) + axis,), keepdims=False)


def _unit_axis(x, axis):
    """x with a new axis of length one, at position `axis` (negative) of the result."""
    s = shape_of(x)
    return reshape(x, shape=s[:len(s) + axis + 1] + (1,) + s[len(s) + axis + 1:])


def _rows_first(x, vector):
    """x (a vector, or a stack of matrices, as b is read) as (..., k, n): its columns as
    rows, so that the gathers run along its last axis."""
    return _T(_col(x)) if vector else _T(x)


@solve_banded.defjvp
def _(ts, ab, b, ans, l, u):
    vector = len(shape_of(b)) == 1
    rhs = ts[1]
    if ts[0] is not None:
        # (dA x)_i = Σ_r dab[r, i + u - r] x[i + u - r]
        shifts = u - np.arange(l + u + 1)
        da = _along_diagonals(ts[0], shifts, per_row=True)              # (..., R, n)
        xs = _along_diagonals(_rows_first(ans, vector), shifts, per_row=False)
        dax = _T(_sum_axis(_unit_axis(da, -3) * xs, -2))
        dax = _uncol(dax) if vector else dax
        rhs = -dax if rhs is None else rhs - dax
    return _like_b(solve_banded, ab, rhs, b, l=l, u=u)


@solve_banded.defvjp
def _(g, ab, b, ans, l, u):
    vector = len(shape_of(b)) == 1
    gb = _like_b(solve_banded, _band_transpose(ab, l, u), g, b, l=u, u=l)
    # Ā = -b̄ xᵀ on the band: ab̄[r, j] = -Σ_k b̄[j + r - u, k] x[j, k]
    gbs = _along_diagonals(_rows_first(gb, vector), np.arange(l + u + 1) - u, per_row=False)
    xs = _unit_axis(_rows_first(ans, vector), -2)
    gab = -_sum_axis(gbs * xs, -3)
    return sum_to(gab, shape=shape_of(ab)), sum_to(gb, shape=shape_of(b))


# ---- expm ------------------------------------------------------------------------------------
def _same_aval(args, params):
    return args[0].shape, float_dtype(args[0].dtype)


expm = _prim("expm", lambda a: scipy_linalg().expm(a), _same_aval,
             "expm(a): the matrix exponential e^A (scipy.linalg.expm).")


def block_upper(blocks):
    """The block upper-triangular Toeplitz matrix [[B0, B1, ..., Bk], [0, B0, ..., Bk-1],
    ..., [0, ..., 0, B0]] of square blocks (a stack of them), None blocks zero.

    Example:
        >>> import numpy as np
        >>> block_upper([np.eye(1), None, 2 * np.eye(1)]).tolist()
        [[1.0, 0.0, 2.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    first = blocks[0]
    nd = len(shape_of(first))
    zero = zeros_like(first)
    k = len(blocks)
    rows = []
    for i in range(k):
        row = [zero] * i + [zero if c is None else c for c in blocks[:k - i]]
        rows.append(concatenate(*row, axis=nd - 1))
    return concatenate(*rows, axis=nd - 2)


def top_block(x, n, j):
    """Block (0, j) of a matrix of n×n blocks (a stack of them).

    Example:
        >>> import numpy as np
        >>> top_block(np.arange(16.0).reshape(4, 4), 2, 1).tolist()
        [[2.0, 3.0], [6.0, 7.0]]
    """
    return getitem(x, index=(Ellipsis, ("slice", 0, n, None),
                             ("slice", j * n, (j + 1) * n, None)))


def frechet_expm(a, e):
    """L(A, E), the derivative of e^A along E: the top-right block of exp([[A, E], [0, A]])
    (written with primitives: it differentiates again).

    Example:
        >>> import numpy as np
        >>> a, e = np.diag([0.0, 1.0]), np.eye(2)
        >>> np.allclose(frechet_expm(a, e), np.diag(np.exp([0.0, 1.0])))   # d e^(a+tI)/dt
        True
    """
    return top_block(expm(block_upper([a, e])), shape_of(a)[-1], 1)


expm.defjvp(lambda ts, a, ans: frechet_expm(a, ts[0]))
expm.defvjp(lambda g, a, ans: (frechet_expm(_T(a), g),))


# ---- Sylvester equations and the matrix square root ----------------------------------------
def _sylvester_np(a, b, q, derivative_of=None):
    if derivative_of is not None:
        _refuse_singular(a, b, derivative_of)
    else:
        warn_if_singular(a, b, "solve_sylvester")
    # One dtype for all three: SciPy (1.17) takes a real A's real Schur form, whose 2×2
    # blocks LAPACK's complex trsyl reads as triangular, and returns a wrong X when B or Q
    # is complex (scipy/scipy#26177; the fix proposed there promotes as here)
    if any(np.iscomplexobj(x) for x in (a, b, q)):
        dtype = np.result_type(a, b, q)
        a, b, q = (np.asarray(x, dtype=dtype) for x in (a, b, q))
    return scipy_linalg().solve_sylvester(a, b, q)


def _singular(a, b):
    """Whether the Sylvester equation AX + XB = Q is singular, or nearly (for any matrix of
    a stack): an eigenvalue of A and one of -B coincide, to within n·√ε of the largest."""
    if 0 in shape_of(a)[-1:] + shape_of(b)[-1:] or not (
            np.isfinite(a).all() and np.isfinite(b).all()):
        return False                    # (nothing to solve; non-finite: SciPy's to say)
    la, lb = np.linalg.eigvals(a), np.linalg.eigvals(b)
    gap = np.abs(la[..., :, None] + lb[..., None, :]).min(axis=(-2, -1))
    size = np.maximum(np.abs(la).max(axis=-1), np.abs(lb).max(axis=-1))
    n = max(shape_of(a)[-1], shape_of(b)[-1])
    return bool(np.any(gap <= n * np.sqrt(np.finfo(float_dtype(a)).eps) * size))


def warn_if_singular(a, b, who):
    """A RuntimeWarning where `who`'s Sylvester equation is singular or nearly: its
    solution is not unique, or does not exist, and SciPy returns large numbers without a
    word (and so would the derivatives, which solve with the same matrices)."""
    if _singular(a, b):
        warnings.warn(f"{who}: the equation is singular or nearly (an eigenvalue of A is "
                      "that of -B to within n·√ε of the largest; for a Lyapunov equation, "
                      "two eigenvalues of A sum to about 0 with the second conjugated): "
                      "its solution and derivatives are unreliable", RuntimeWarning,
                      stacklevel=3)


def _refuse_singular(a, b, who):
    """The Sylvester equation AX + XB = Q is singular where an eigenvalue of A and one of -B
    coincide; for the derivative of `who` (sqrtm: A = B = sqrtm(M)) that means the
    derivative does not exist, and solving would give a wrong number without a word."""
    if _singular(a, b):
        raise NotImplementedError(
            f"{who} has no derivative at a singular matrix: its derivative solves "
            "sqrtm(A)·dX + dX·sqrtm(A) = dA, which is singular there")


def _sylvester_aval(args, params):
    a, b, q = (x.shape for x in args)
    return (_batch_of((a, 2), (b, 2), (q, 2)) + q[-2:],
            float_dtype(*[x.dtype for x in args]))


solve_sylvester = _prim(
    "solve_sylvester", _sylvester_np, _sylvester_aval,
    "solve_sylvester(a, b, q): X with AX + XB = Q (scipy.linalg.solve_sylvester); with "
    "derivative_of='sqrtm' it refuses a singular equation (sqrtm's derivative).")


@solve_sylvester.defjvp
def _(ts, a, b, q, ans, **of):
    rhs = ts[2]
    for term in (None if ts[0] is None else matmul(ts[0], ans),
                 None if ts[1] is None else matmul(ans, ts[1])):
        if term is not None:
            rhs = -term if rhs is None else rhs - term
    return solve_sylvester(a, b, rhs, **of)


@solve_sylvester.defvjp
def _(g, a, b, q, ans, **of):
    gq = solve_sylvester(_T(a), _T(b), g, **of)
    return (sum_to(-matmul(gq, _T(ans)), shape=shape_of(a)),
            sum_to(-matmul(_T(ans), gq), shape=shape_of(b)),
            sum_to(gq, shape=shape_of(q)))


def _sqrtm_np(a):
    x = scipy_linalg().sqrtm(a)
    if np.iscomplexobj(x) and not np.iscomplexobj(a):
        # (the result's dtype would depend on the values, not on a's dtype)
        raise NotImplementedError(
            "sqrtm of a real matrix whose principal square root is complex (it has a "
            "negative real eigenvalue) is not supported on traced values: pass it as a "
            "complex matrix (a + 0j), whose square root is complex whatever its values")
    return x


sqrtm = _prim("sqrtm", _sqrtm_np, _same_aval,
              "sqrtm(a): the principal square root X of A, X² = A (scipy.linalg.sqrtm).")
sqrtm.defjvp(lambda ts, a, ans: solve_sylvester(ans, ans, ts[0], derivative_of="sqrtm"))
sqrtm.defvjp(lambda g, a, ans: (solve_sylvester(_T(ans), _T(ans), g,
                                                derivative_of="sqrtm"),))


# ---- LU --------------------------------------------------------------------------------------
def _lu_np(a):
    lu, piv = scipy_linalg().lu_factor(a, check_finite=False)    # (a list for a stack)
    return lu, piv


def _lu_of(a):
    return L._factorizations.of("scipy_lu_factor", _lu_np, a)


lu_factor = _prim("lu_factor", lambda a: _lu_of(a)[0], _same_aval,
                  "lu_factor(a): L and U of P·A = L·U packed in one square matrix (L's unit "
                  "diagonal left out), as scipy.linalg.lu_factor's first result.")
# (min(m, n) interchanges: a rectangular matrix's too, which wengert.lax.linalg.lu takes)
lu_pivots = _prim("lu_pivots", lambda a: _lu_of(a)[1],
                  lambda args, params: (args[0].shape[:-2] + (min(args[0].shape[-2:]),),
                                        np.dtype(np.int32)),
                  "lu_pivots(a): the row interchanges of lu_factor (row i was swapped with "
                  "row piv[i]), scipy.linalg.lu_factor's second result; no derivative.")
lu_pivots.cost = "cmp"
lu_pivots.defpartials(None)


def _order(piv):
    """The rows that LAPACK's interchanges (i with piv[i], for i = 0, 1, ...) bring to each
    place: (P x)[i] = x[order[i]]."""
    piv = np.asarray(piv)
    n = piv.shape[-1]
    flat = piv.reshape(math.prod(piv.shape[:-1]), n)      # (not -1: n may be 0)
    order = np.broadcast_to(np.arange(n), flat.shape).copy()
    rows = np.arange(flat.shape[0])
    for i in range(n):
        j = flat[:, i]
        here = order[:, i].copy()
        order[:, i] = order[rows, j]
        order[rows, j] = here
    return order.reshape(piv.shape)


def _swap_rows_np(x, piv, inverse):
    order = _order(piv)
    if inverse:
        order = np.argsort(order, axis=-1)
    x = np.asarray(x)
    batch = np.broadcast_shapes(x.shape[:-2], order.shape[:-1])
    x = np.broadcast_to(x, batch + x.shape[-2:])
    index = np.broadcast_to(order, batch + order.shape[-1:])[..., None]
    return np.take_along_axis(x, index, axis=-2)


def _swap_rows_aval(args, params):
    x, piv = args[0].shape, args[1].shape
    return _batch_of((x, 2), (piv, 1)) + x[-2:], args[0].dtype


# P x, the rows of x interchanged as lu_factor's pivots say (Pᵀ x if `inverse`): linear in
# x, so its derivatives are itself and its transpose
lu_swap_rows = _prim("lu_swap_rows", _swap_rows_np, _swap_rows_aval,
                     "lu_swap_rows(x, piv, inverse=i): P·x (Pᵀ·x if `inverse`), the rows of "
                     "the matrices x interchanged as the pivots piv of lu_factor say.")
lu_swap_rows.cost = None
lu_swap_rows.defjvp(lambda ts, x, piv, ans, inverse: lu_swap_rows(ts[0], piv, inverse=inverse))
lu_swap_rows.defvjp(lambda g, x, piv, ans, inverse: (
    sum_to(lu_swap_rows(g, piv, inverse=not inverse), shape=shape_of(x)), None))


def _unit_lower_solve(lu, x, trans=0):
    return solve_triangular(lu, x, trans=trans, lower=True, unit_diagonal=True)


def _upper_solve(lu, x, trans=0):
    return solve_triangular(lu, x, trans=trans, lower=False, unit_diagonal=False)


def _unit_lower(lu):
    n = shape_of(lu)[-1]
    return tril(lu, k=-1) + np.eye(n, dtype=dtype_of(lu))


@lu_factor.defjvp
def _(ts, a, ans):
    lu = ans
    y = _unit_lower_solve(lu, lu_swap_rows(ts[0], lu_pivots(a), inverse=False))   # L⁻¹ P dA
    F = _T(_upper_solve(lu, _T(y), trans=1))                                       # · U⁻¹
    return matmul(_unit_lower(lu), tril(F, k=-1)) + matmul(_triu(F), _triu(lu))


@lu_factor.defvjp
def _(g, a, ans):
    lu = ans
    M = tril(matmul(_T(_unit_lower(lu)), tril(g, k=-1)), k=-1) \
        + _triu(matmul(_triu(g), _T(_triu(lu))))
    z = _unit_lower_solve(lu, M, trans=1)                       # L⁻ᵀ M
    z = _T(_upper_solve(lu, _T(z)))                             # · U⁻ᵀ
    return (lu_swap_rows(z, lu_pivots(a), inverse=True),)       # Pᵀ ·


# ---- symmetric matrices read from one triangle ---------------------------------------------
def _symmetrize_np(a, lower, hermitian=False):
    a = np.asarray(a)
    tri, half = (np.tril(a), np.tril(a, -1)) if lower else (np.triu(a), np.triu(a, 1))
    mirror = np.swapaxes(half, -1, -2)
    if hermitian:
        # (LAPACK's Hermitian solvers ignore the diagonal's imaginary parts)
        diagonal = np.real(np.diagonal(a, 0, -2, -1))
        diagonal = diagonal[..., None] * np.eye(a.shape[-1], dtype=diagonal.dtype)
        return half + np.conj(mirror) + diagonal
    return tri + mirror


def _symmetric_part(x, hermitian=False):
    """(X + Xᵀ)/2, or with `hermitian` (X + Xᴴ)/2: symmetrize's derivative, a linear map
    that is its own adjoint (so its own VJP, with the VJPs' conjugations)."""
    return _herm(x) if hermitian else 0.5 * (x + _T(x))


symmetrize = _prim("symmetrize", _symmetrize_np, _same_aval,
                   "symmetrize(a, lower=l): the symmetric matrix that a's lower (upper) "
                   "triangle holds, as SciPy's solvers for symmetric matrices read it (a "
                   "complex one too: complex symmetric, Aᵀ = A); its derivative is the "
                   "symmetric one, (dA + dAᵀ)/2, as cholesky's and eigh's.  With "
                   "hermitian=True the Hermitian matrix (the diagonal's real part), and "
                   "the Hermitian derivative (dA + dAᴴ)/2.")
symmetrize.cost = "add"
symmetrize.defjvp(lambda ts, a, ans, lower, **h: _symmetric_part(ts[0], **h))
symmetrize.defvjp(lambda g, a, ans, lower, **h: (_symmetric_part(g, **h),))


# ---- eigh with SciPy's eigenvectors ----------------------------------------------------------
# SciPy's eigh (LAPACK's syevr by default) and NumPy's (syevd) give eigenvectors of opposite
# signs about as often as not, and so do SciPy's eigh with and without subset_by_index:
# these two primitives are SciPy's values.  Parameters: UPLO="U" for the upper triangle,
# driver, and subset=(lo, hi) for the eigenpairs lo..hi (ascending), each absent for
# SciPy's default.  The derivatives are the symmetric (Hermitian) ones, as
# wengert.primitives.linalg's eigvalsh and eigvecsh have them, and hold for any signs (a
# complex matrix's: phases): a rule uses the eigenvectors it is given (`ans`), or NumPy's
# where only their products v vᴴ matter.  A complex eigenvector's derivative is the one
# with Im(vᴴ dv) = 0 (F's zero diagonal), as eigvecsh's is.
def _eigh_np(a, UPLO="L", driver=None, subset=None, values_only=False):
    return scipy_linalg().eigh(a, lower=UPLO == "L", driver=driver, check_finite=False,
                               eigvals_only=values_only,
                               subset_by_index=None if subset is None else list(subset))


def _eigh_values_np(a, values_only=False, **p):
    # (eigvals_only=True computes them differently: in the last bits, with some drivers)
    if values_only:
        return L._factorizations.of("scipy_eigvalsh", lambda a, *k: _eigh_np(
            a, **dict(k), values_only=True), a, *sorted(p.items()))
    return _eigh_vectors_np(a, both=True, **p)[0]


def _eigh_vectors_np(a, both=False, **p):
    wv = L._factorizations.of("scipy_eigh", lambda a, *k: _eigh_np(a, **dict(k)),
                              a, *sorted(p.items()))
    return wv if both else wv[1]


def _count(args, params):
    n = args[0].shape[-1]
    subset = params.get("subset")
    return n if subset is None else subset[1] - subset[0] + 1


eigh_values = _prim(
    "eigh_values", _eigh_values_np,
    lambda args, params: (args[0].shape[:-2] + (_count(args, params),),
                          real_dtype(float_dtype(args[0].dtype))),
    "eigh_values(a): the eigenvalues of a symmetric (Hermitian) matrix, ascending, as scipy.linalg.eigh "
    "gives them (parameters UPLO='U', driver, subset=(lo, hi) where not the default, and "
    "values_only=True for eigh(..., eigvals_only=True)'s).")
eigh_vectors = _prim(
    "eigh_vectors", _eigh_vectors_np,
    lambda args, params: (args[0].shape[:-1] + (_count(args, params),),
                          float_dtype(args[0].dtype)),
    "eigh_vectors(a): the eigenvectors of a symmetric (Hermitian) matrix, as "
    "scipy.linalg.eigh gives them (LAPACK's signs and phases), with eigh_values' parameters.")


def _rows(g):
    return reshape(g, shape=shape_of(g)[:-1] + (1,) + shape_of(g)[-1:])


@eigh_values.defjvp
def _(ts, a, ans, values_only=False, **p):
    return _re_diag(eigh_vectors(a, **p), _herm(ts[0]))       # Re diag(Vᴴ herm(dA) V)


@eigh_values.defvjp
def _(g, a, ans, values_only=False, **p):
    V = eigh_vectors(a, **p)
    return (_cj(matmul(V * _rows(g), _H(V))),)                # conj(V diag(ḡ) Vᴴ)


def _all_pairs(a, ans, p):
    """(every eigenvector, F with F_ij = 1/(w_j - w_i) for the wanted eigenvalues j, 0 where
    i is j itself)."""
    tri = {"UPLO": p["UPLO"]} if "UPLO" in p else {}
    if "subset" not in p:
        return ans, L._F(eigh_values(a, **p))
    lo, hi = p["subset"]
    F = L._F(L.eigvalsh(a, **tri))
    return L.eigvecsh(a, **tri), getitem(F, index=(Ellipsis, ("slice", lo, hi + 1, None)))


@eigh_vectors.defjvp
def _(ts, a, ans, **p):
    V, F = _all_pairs(a, ans, p)
    return matmul(V, F * matmul(_H(V), matmul(_herm(ts[0]), ans)))


@eigh_vectors.defvjp
def _(g, a, ans, **p):
    V, F = _all_pairs(a, ans, p)
    return (_cj(_herm(matmul(V, matmul(F * matmul(_H(V), _cj(g)), _H(ans))))),)



# ---- the generalized problem A v = λ B v ---------------------------------------------------
# scipy.linalg.eigh(a, b): B positive definite, the eigenvectors B-normalised (Vᴴ B V = I).
# Two primitives again, gen_eigh_values(a, b) and gen_eigh_vectors(a, b), evaluated by
# SciPy (LAPACK's sygvd/hegvd by default), with eigh's parameters and `type` (absent for
# SciPy's default 1): type 2 is A B v = λ v, type 3 B A v = λ v.
#
# Why primitives, and not SciPy's own reduction (B = L Lᴴ, the standard eigh of
# L⁻¹ A L⁻ᴴ, V = L⁻ᴴ W) written with wengert's cholesky, solve_triangular and eigh, which
# would differentiate by itself: that composition's values agree with SciPy's only to
# rounding, and its eigenvectors have the other sign about half the time (measured on
# random problems: 38 of 100 at n = 5, 984 of 2000 at n = 100), so SciPy's values would
# take a second SciPy call to fix the signs.  Here SciPy's result is the value, from one
# call, and the rules need neither L nor B: only the eigenpairs.
#
# The derivatives (type 1, distinct eigenvalues).  With dV = V C, differentiating
# A V = B V Λ and Vᴴ B V = I gives  P := Vᴴ dA V - Vᴴ dB V Λ = CΛ - ΛC + dΛ  and
# C + Cᴴ = -Vᴴ dB V.  So dλ = diag(P), C = F ∘ P off the diagonal (F_ij = 1/(λ_j - λ_i)),
# and C's diagonal is -½ diag(Vᴴ dB V), the normalisation's (its imaginary part, a turn of
# the eigenvector's free phase, is taken 0: the derivative keeps vᴴ B dv real):
#     dλ_j = v_jᴴ (dA - λ_j dB) v_j,        dV = V (F ∘ P) - ½ V diag(Vᴴ dB V).
# Types 2 and 3 are type 1 of another pair with the same eigenpairs and normalisation:
# A B v = λ v is (B A B) v = λ B v, and B A v = λ v is A v = λ B⁻¹ v.  Written with
# U = V⁻ᴴ (= B V for type 2, B⁻¹ V for type 3, and AB V = VΛ, VᴴB A = ΛVᴴ), their P is
#     type 2:  P = Uᴴ dA U + Λ Vᴴ dB V,   diagonal term -½ diag(Vᴴ dB V)
#     type 3:  P = Vᴴ dA V + Uᴴ dB U Λ,   diagonal term +½ diag(Uᴴ dB U)
# So every type has P = Xᴴ dA X + σ(Yᴴ dB Y) and the diagonal term c·½ diag(Yᴴ dB Y), with
#     type 1:  X = Y = V,        σ(Q) = -QΛ,  c = -1
#     type 2:  X = U, Y = V,     σ(Q) = ΛQ,   c = -1
#     type 3:  X = V, Y = U,     σ(Q) = QΛ,   c = +1
# and the cotangents are the adjoints of that: for cotangents λ̄ and V̄,
#     M = F ∘ (Vᴴ V̄) + diag(λ̄),  Ā = X M Xᴴ,  B̄ = Y σ(M) Yᴴ + c·½ Y diag(d) Yᴴ,
#     d_j = Re (Vᴴ V̄)_jj
# (σ is its own adjoint: Λ is real and diagonal).  With subset_by_index the rows of P and
# of M run over every eigenpair (the left factors X, Y, V above are every eigenvector), its
# columns over the wanted ones, as eigh's do.  Complex matrices: each ᵀ a ᴴ, and the VJPs
# the adjoints of conjugated cotangents conjugated back, as wengert.primitives.linalg's
# eigh's are; every change dA, dB counts as its Hermitian part (both are read from one
# triangle), and the cotangents are Hermitian.
def _gen_eigh_np(a, b, UPLO="L", driver=None, subset=None, type=1, values_only=False):
    return scipy_linalg().eigh(a, b, lower=UPLO == "L", driver=driver, type=type,
                               check_finite=False, eigvals_only=values_only,
                               subset_by_index=None if subset is None else list(subset))


def _gen_eigh_values_np(a, b, values_only=False, **p):
    if values_only:
        return L._factorizations.of("scipy_gen_eigvalsh", lambda a, b, *k: _gen_eigh_np(
            a, b, **dict(k), values_only=True), a, *sorted(p.items()), b=b)
    return _gen_eigh_vectors_np(a, b, both=True, **p)[0]


def _gen_eigh_vectors_np(a, b, both=False, **p):
    wv = L._factorizations.of("scipy_gen_eigh", lambda a, b, *k: _gen_eigh_np(
        a, b, **dict(k)), a, *sorted(p.items()), b=b)
    return wv if both else wv[1]


def _gen_aval(vectors):
    def aval(args, params):
        a, b = args[0].shape, args[1].shape
        batch, k = _batch_of((a, 2), (b, 2)), _count(args, params)
        dtype = float_dtype(args[0].dtype, args[1].dtype)
        return (batch + (a[-1], k), dtype) if vectors else (batch + (k,), real_dtype(dtype))
    return aval


gen_eigh_values = _prim(
    "gen_eigh_values", _gen_eigh_values_np, _gen_aval(False),
    "gen_eigh_values(a, b): the eigenvalues of A v = λ B v (B positive definite; A, B "
    "symmetric or Hermitian), ascending, as scipy.linalg.eigh(a, b) gives them, with "
    "eigh_values' parameters and type=2 (A B v = λ v) or 3 (B A v = λ v).")
gen_eigh_vectors = _prim(
    "gen_eigh_vectors", _gen_eigh_vectors_np, _gen_aval(True),
    "gen_eigh_vectors(a, b): the B-normalised eigenvectors (Vᴴ B V = I) of A v = λ B v, "
    "as scipy.linalg.eigh(a, b) gives them (LAPACK's signs and phases), with "
    "gen_eigh_values' parameters.")


def _every_pair(a, b, V, w, p):
    """(every eigenvalue, every eigenvector): the wanted ones w and V themselves unless
    `subset` leaves some out."""
    if "subset" not in p:
        return w, V
    # (by SciPy's default driver: which one computes them does not change the derivative)
    full = {k: v for k, v in p.items() if k in ("UPLO", "type")}
    return gen_eigh_values(a, b, **full), gen_eigh_vectors(a, b, **full)


def _sandwiches(a, b, V, Va, p):
    """((X_all, X), (Y_all, Y)) of P = X_allᴴ dA X + σ(Y_allᴴ dB Y), for the wanted
    eigenvectors V and every one, V_all (see above: X and Y are V or U)."""
    t = p.get("type", 1)
    if t == 1:
        return (Va, V), (Va, V)
    Ua = _H(L.inv(Va))                  # U = V⁻ᴴ, B V (type 2) or B⁻¹ V (type 3)
    # (a subset's U: Ua's columns for it, with V's signs, which U_allᴴ V = V_all⁻¹ V holds)
    U = matmul(Ua, matmul(_H(Ua), V)) if "subset" in p else Ua
    return ((Ua, U), (Va, V)) if t == 2 else ((Va, V), (Ua, U))


def _wanted_sandwiches(a, b, V, w, p):
    """(X, Y) of `_sandwiches`, the wanted columns only: every eigenpair is needed only for
    U of a subset."""
    if p.get("type", 1) == 1:
        return V, V
    (_, X), (_, Y) = _sandwiches(a, b, V, _every_pair(a, b, V, w, p)[1], p)
    return X, Y


def _re_diag(Z, M):
    """Re diag(Zᴴ M Z), without forming the k×k product."""
    return S.real_part(_sum(_cj(Z) * matmul(M, Z), axis=(len(shape_of(Z)) - 2,),
                            keepdims=False))


def _sigma(Q, w_all, w, t):
    """The dB term's σ(Q) (and its adjoint, the same map): -QΛ, Λ_all Q or QΛ."""
    if t == 1:
        return -(Q * _rows(w))
    return _col(w_all) * Q if t == 2 else Q * _rows(w)


def _half_c(t):
    """c·½ of the diagonal term, which keeps the normalisation."""
    return 0.5 if t == 3 else -0.5


@gen_eigh_values.defjvp
def _(ts, a, b, ans, values_only=False, **p):
    t = p.get("type", 1)
    X, Y = _wanted_sandwiches(a, b, gen_eigh_vectors(a, b, **p), ans, p)
    dw = None if ts[0] is None else _re_diag(X, _herm(ts[0]))
    if ts[1] is not None:                   # (σ(Q)'s diagonal: ∓λ_j Q_jj)
        dwb = (-ans if t == 1 else ans) * _re_diag(Y, _herm(ts[1]))
        dw = dwb if dw is None else dw + dwb
    return dw


def _values_vjp_a(g, a, b, ans, values_only=False, **p):
    X, _ = _wanted_sandwiches(a, b, gen_eigh_vectors(a, b, **p), ans, p)
    return sum_to(_cj(matmul(X * _rows(g), _H(X))), shape=shape_of(a))


def _values_vjp_b(g, a, b, ans, values_only=False, **p):
    t = p.get("type", 1)
    _, Y = _wanted_sandwiches(a, b, gen_eigh_vectors(a, b, **p), ans, p)
    gw = g * (-ans if t == 1 else ans)
    return sum_to(_cj(matmul(Y * _rows(gw), _H(Y))), shape=shape_of(b))


gen_eigh_values.defvjp(_values_vjp_a, _values_vjp_b)


def _wanted_columns(F, p):
    if "subset" not in p:
        return F
    lo, hi = p["subset"]
    return getitem(F, index=(Ellipsis, ("slice", lo, hi + 1, None)))


@gen_eigh_vectors.defjvp
def _(ts, a, b, ans, **p):
    t = p.get("type", 1)
    w = gen_eigh_values(a, b, **p)
    wa, Va = _every_pair(a, b, ans, w, p)
    (Xa, X), (Ya, Y) = _sandwiches(a, b, ans, Va, p)
    P = None if ts[0] is None else matmul(_H(Xa), matmul(_herm(ts[0]), X))
    if ts[1] is not None:
        dB = _herm(ts[1])
        Pb = _sigma(matmul(_H(Ya), matmul(dB, Y)), wa, w, t)
        P = Pb if P is None else P + Pb
    dV = matmul(Va, _wanted_columns(L._F(wa), p) * P)
    if ts[1] is not None:
        dV = dV + ans * _rows(_half_c(t) * _re_diag(Y, dB))
    return dV


def _vectors_M(g, a, b, ans, p):
    """(M = F ∘ (V_allᴴ V̄) for the conjugated cotangent, λ_all, λ, V_all)."""
    w = gen_eigh_values(a, b, **p)
    wa, Va = _every_pair(a, b, ans, w, p)
    return _wanted_columns(L._F(wa), p) * matmul(_H(Va), _cj(g)), wa, w, Va


def _vectors_vjp_a(g, a, b, ans, **p):
    M, wa, w, Va = _vectors_M(g, a, b, ans, p)
    (Xa, X), _ = _sandwiches(a, b, ans, Va, p)
    return sum_to(_cj(_herm(matmul(Xa, matmul(M, _H(X))))), shape=shape_of(a))


def _vectors_vjp_b(g, a, b, ans, **p):
    t = p.get("type", 1)
    M, wa, w, Va = _vectors_M(g, a, b, ans, p)
    _, (Ya, Y) = _sandwiches(a, b, ans, Va, p)
    d = S.real_part(_sum(_cj(ans) * _cj(g), axis=(len(shape_of(ans)) - 2,), keepdims=False))
    gb = matmul(Ya, matmul(_sigma(M, wa, w, t), _H(Y))) \
        + matmul(Y * _rows(_half_c(t) * d), _H(Y))
    return sum_to(_cj(_herm(gb)), shape=shape_of(b))


gen_eigh_vectors.defvjp(_vectors_vjp_a, _vectors_vjp_b)

# Whose rules hold for complex values: the holomorphic ones as written (their VJPs
# transpose without conjugating), solve_triangular's conjugate transpose and the Hermitian
# readers with the conjugations above.  Every primitive here does.
for _p in (solve_triangular, solve_banded, expm, solve_sylvester, sqrtm, lu_factor, lu_pivots,
           lu_swap_rows, symmetrize, eigh_values, eigh_vectors, gen_eigh_values,
           gen_eigh_vectors):
    _p.complex = True

__all__ = ["solve_triangular", "solve_banded", "expm", "frechet_expm", "block_upper",
           "top_block", "solve_sylvester", "sqrtm",
           "lu_factor", "lu_pivots", "lu_swap_rows", "symmetrize", "eigh_values",
           "eigh_vectors", "gen_eigh_values", "gen_eigh_vectors", "scipy_linalg"]
