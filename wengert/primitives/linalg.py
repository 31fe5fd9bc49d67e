"""Linear-algebra primitives (square matrices, with leading batch dimensions) and their
derivatives as linear maps.

Matrix calculus used below, with A⁻ᵀ = (A⁻¹)ᵀ:
    inv:      d(A⁻¹) = -A⁻¹ dA A⁻¹               Ā = -A⁻ᵀ B̄ A⁻ᵀ        (B = A⁻¹)
    det:      d det A = det A · tr(A⁻¹ dA)        Ā = ḡ det A · A⁻ᵀ
    solve:    x = A⁻¹ b:  dx = A⁻¹(db - dA x)     b̄ = A⁻ᵀ x̄,  Ā = -b̄ xᵀ
    cholesky: A = LLᵀ:  dL = L Φ(L⁻¹ dA L⁻ᵀ)      Ā = sym(L⁻ᵀ Φ(Lᵀ L̄) L⁻¹)
              where Φ keeps the lower triangle and halves the diagonal
    eigh:     A = V diag(w) Vᵀ:  dw = diag(Vᵀ dA V),  dV = V (F ∘ (Vᵀ dA V)),
              F_ij = 1/(w_j - w_i) off the diagonal, 0 on it
"""
from __future__ import annotations

import numpy as np

from .registry import defprimitive, float_dtype, shape_of
from .array import matmul, swapaxes, sum as _sum, tril, reshape, dtype_of
from .shape import sum_to


def _same(args, params):
    return args[0].shape, float_dtype(args[0].dtype)


def _batch_scalar(args, params):
    return args[0].shape[:-2], float_dtype(args[0].dtype)


def _solve_aval(args, params):
    a, b = args[0].shape, args[1].shape
    shape = a[:-1] if len(b) == 1 else np.broadcast_shapes(a[:-2], b[:-2]) + b[-2:]
    return shape, float_dtype(args[0].dtype, args[1].dtype)


def _T(x):
    return swapaxes(x, -1, -2)


def _sym(x):
    return 0.5 * (x + _T(x))


def _lin(name, impl, aval, cost="call"):
    return defprimitive(name, impl, cost=cost, abstract_eval=aval)


def _last2(a):
    n = len(shape_of(a))
    return (n - 2, n - 1)


def _expand2(s):
    """A batch of scalars as a batch of 1x1 matrices, to scale matrices."""
    return reshape(s, shape=shape_of(s) + (1, 1))


inv = _lin("inv", np.linalg.inv, _same)
inv.defvjp(lambda g, a, ans: (-matmul(_T(ans), matmul(g, _T(ans))),))
inv.defjvp(lambda ts, a, ans: -matmul(ans, matmul(ts[0], ans)))

det = _lin("det", np.linalg.det, _batch_scalar)
det.defvjp(lambda g, a, ans: (_expand2(g * ans) * _T(inv(a)),))
det.defjvp(lambda ts, a, ans: ans * _sum(_T(inv(a)) * ts[0], axis=_last2(a), keepdims=False))

logabsdet = _lin("logabsdet", lambda a: np.linalg.slogdet(a)[1], _batch_scalar)
logabsdet.defvjp(lambda g, a, ans: (_expand2(g) * _T(inv(a)),))
logabsdet.defjvp(lambda ts, a, ans: _sum(_T(inv(a)) * ts[0], axis=_last2(a), keepdims=False))
signdet = _lin("signdet", lambda a: np.linalg.slogdet(a)[0], _batch_scalar, cost="cmp")
signdet.defpartials(None)


def _solve_np(a, b):
    return np.linalg.solve(a, b)


def _vector(b):
    """Whether solve reads b as one vector, not as matrices: as NumPy 2 does, only when b
    is 1-D. Its rules then work on the vector as a column."""
    return len(shape_of(b)) == 1


def _col(v):
    return reshape(v, shape=shape_of(v) + (1,))


def _uncol(x):
    return reshape(x, shape=shape_of(x)[:-1])


solve = _lin("solve", _solve_np, _solve_aval)


# Batch dimensions broadcast between A and b, so each cotangent is summed back to its own
# argument's shape.
@solve.defvjp
def _(g, a, b, ans):
    if _vector(b):
        gb = _uncol(solve(_T(a), _col(g)))
        ga = -matmul(_col(gb), reshape(ans, shape=shape_of(ans)[:-1] + (1,) + shape_of(ans)[-1:]))
    else:
        gb = solve(_T(a), g)
        ga = -matmul(gb, _T(ans))
    return sum_to(ga, shape=shape_of(a)), sum_to(gb, shape=shape_of(b))


@solve.defjvp
def _(ts, a, b, ans):
    rhs = ts[1]
    if ts[0] is not None:
        ax = _uncol(matmul(ts[0], _col(ans))) if _vector(b) else matmul(ts[0], ans)
        rhs = -ax if rhs is None else rhs - ax
    return _uncol(solve(a, _col(rhs))) if _vector(b) else solve(a, rhs)


def _eye(n, like):
    """The identity in `like`'s dtype: the rules' masks must not promote a float32
    derivative to float64 (an eager gradient is cast back to its argument's dtype, a traced
    one is not)."""
    return np.eye(n, dtype=dtype_of(like))


def _phi(x):
    n = shape_of(x)[-1]
    return tril(x, k=0) * (1.0 - 0.5 * _eye(n, x))


cholesky = _lin("cholesky", np.linalg.cholesky, _same)


@cholesky.defvjp
def _(g, a, ans):
    L = ans
    p = _phi(matmul(_T(L), g))
    # Ā = L⁻ᵀ P L⁻¹, by two triangular solves (written as general solves), symmetrised
    x = solve(_T(L), _T(solve(_T(L), _T(p))))
    return (_sym(x),)


# cholesky and eigh read one triangle, but their derivatives are the symmetric ones (the
# VJPs give symmetric cotangents): a JVP reads the tangent's symmetric part, so that it is
# the VJP's transpose for every tangent, not only for symmetric ones.
@cholesky.defjvp
def _(ts, a, ans):
    L = ans
    inner = solve(L, _T(solve(L, _T(_sym(ts[0])))))        # L⁻¹ dA L⁻ᵀ
    return matmul(L, _phi(inner))


def _eigvals_aval(args, params):
    return args[0].shape[:-1], float_dtype(args[0].dtype)


# The triangle read is a parameter, UPLO="U" (absent for "L"), as in NumPy: the upper
# triangle of A is the lower one of Aᵀ, but LAPACK's eigenvectors of the two can differ in
# sign.  The derivatives are the symmetric ones, whichever triangle is read.
eigvalsh = _lin("eigvalsh", lambda a, UPLO="L": np.linalg.eigvalsh(a, UPLO), _eigvals_aval)
eigvecsh = _lin("eigvecsh", lambda a, UPLO="L": np.linalg.eigh(a, UPLO)[1], _same)


def _diag_part(m):
    """The diagonal of a (batch of) matrix as a (batch of) vector."""
    n = shape_of(m)[-1]
    return _sum(m * _eye(n, m), axis=(len(shape_of(m)) - 1,), keepdims=False)


def _F(w):
    n = shape_of(w)[-1]
    diff = reshape(w, shape=shape_of(w)[:-1] + (1, n)) - reshape(w, shape=shape_of(w) + (1,))
    eye = _eye(n, w)
    # 1/(w_j - w_i) off the diagonal; the diagonal (0/0) is masked by adding the identity
    return (1.0 - eye) / (diff + eye)


# (the eigenvectors once per rule: on arrays each eigvecsh is an eigh of its own)
@eigvalsh.defvjp
def _(g, a, ans, **tri):
    V = eigvecsh(a, **tri)
    return (matmul(V * reshape(g, shape=shape_of(g)[:-1] + (1,) + shape_of(g)[-1:]), _T(V)),)


@eigvalsh.defjvp
def _(ts, a, ans, **tri):
    V = eigvecsh(a, **tri)
    return _diag_part(matmul(_T(V), matmul(ts[0], V)))


@eigvecsh.defvjp
def _(g, a, ans, **tri):
    V = ans
    inner = _F(eigvalsh(a, **tri)) * matmul(_T(V), g)
    x = matmul(V, matmul(inner, _T(V)))
    return (_sym(x),)


# (eigvalsh's JVP, diag(Vᵀ dA V), reads only dA's symmetric part by itself)
eigvecsh.defjvp(lambda ts, a, ans, **tri: matmul(ans, _F(eigvalsh(a, **tri)) * matmul(
    _T(ans), matmul(_sym(ts[0]), ans))))

__all__ = ["inv", "det", "logabsdet", "signdet", "solve", "cholesky", "eigvalsh", "eigvecsh"]
