"""Linear-algebra primitives (square matrices, with leading batch dimensions) and their
derivatives as linear maps.

Matrix calculus used below, with A⁻ᵀ = (A⁻¹)ᵀ:
    inv:      d(A⁻¹) = -A⁻¹ dA A⁻¹               Ā = -A⁻ᵀ B̄ A⁻ᵀ        (B = A⁻¹)
    det:      d det A = det A · tr(A⁻¹ dA)        Ā = ḡ det A · A⁻ᵀ
    logdet:   d log det A = tr(A⁻¹ dA)            Ā = ḡ A⁻ᵀ     (a complex A's slogdet)
    solve:    x = A⁻¹ b:  dx = A⁻¹(db - dA x)     b̄ = A⁻ᵀ x̄,  Ā = -b̄ xᵀ
    cholesky: A = LLᵀ:  dL = L Φ(L⁻¹ dA L⁻ᵀ)      Ā = sym(L⁻ᵀ Φ(Lᵀ L̄) L⁻¹)
              where Φ keeps the lower triangle and halves the diagonal
    eigh:     A = V diag(w) Vᵀ:  dw = diag(Vᵀ dA V),  dV = V (F ∘ (Vᵀ dA V)),
              F_ij = 1/(w_j - w_i) off the diagonal, 0 on it
    eig:      A V = V diag(λ) (a general A; λ and V complex):  dλ = diag(V⁻¹ dA V),
              dV = V (F ∘ (V⁻¹ dA V) + diag(c)), c keeping NumPy's normalization (below)
    svd:      A = U S Vᵀ (m×n, thin: U m×k, S = diag(s) k×k, V n×k, k = min(m, n)),
              with dP = Uᵀ dA V and F_ij = 1/(s_j² - s_i²) off the diagonal, 0 on it:
              ds = diag(dP)                                            s̄ -> Ā = U diag(s̄) Vᵀ
              dU = U (F ∘ (dP S + S dPt)) + (I - UUᵀ) dA V S⁻¹
                                  Ū -> Ā = U (F ∘ (UᵀŪ - ŪᵀU)) S Vᵀ + (I - UUᵀ) Ū S⁻¹ Vᵀ
              dV = V (F ∘ (S dP + dPt S)) + (I - VVᵀ) dAᵀ U S⁻¹
                                  V̄ -> Ā = U S (F ∘ (VᵀV̄ - V̄ᵀV)) Vᵀ + U S⁻¹ V̄ᵀ (I - VVᵀ)
              (the (I - UUᵀ) terms vanish unless m > k, the (I - VVᵀ) ones unless n > k;
              J. Townsend, "Differentiating the singular value decomposition", 2016)

Complex matrices.  inv, det, logdet and solve are holomorphic: the same formulas, whose
VJPs transpose without conjugating (JAX's and autograd's convention, docs/complex.md).  The
factorizations are not (they involve Aᴴ).  Their JVPs are the real ones with each
transpose a conjugate transpose ᴴ, and their VJPs the adjoints of those JVPs under the real
inner product Re tr(Xᴴ Y), applied to the conjugate of the cotangent and conjugated back:
for the convention's Re Σ c·dw = Re Σ Ā·dA, Ā = conj(J*(conj c)).  Written out:
    cholesky: A = LLᴴ (L's diagonal real):  dL = L Φ(L⁻¹ herm(dA) L⁻ᴴ)
              Ā = conj herm(L⁻ᴴ Φ(Lᴴ c̄) L⁻¹),  herm(X) = (X + Xᴴ)/2
    eigh:     A = V diag(w) Vᴴ (w real):  dw = Re diag(Vᴴ dA V),  dV = V (F ∘ (Vᴴ herm(dA) V))
              w̄ -> Ā = conj(V diag(w̄) Vᴴ);  V̄ -> Ā = conj herm(V (F ∘ (Vᴴ c̄)) Vᴴ)
              (each eigenvector's phase is free: dV is the derivative with Im(vᴴdv) = 0)
    svd:      A = U S Vᴴ, dP = Uᴴ dA V:  ds = Re diag(dP),
              dU = U (F ∘ (dP S + S dPᴴ) + i Im diag(dP) S⁻¹) + (I - UUᴴ) dA V S⁻¹,
              dV = V (F ∘ (S dP + dPᴴ S)) + (I - VVᴴ) dAᴴ U S⁻¹  (Vᴴ dV's diagonal 0);
              the VJPs, with G = conj(Ū), H = conj(V̄h), X = UᴴG, Y = Vᴴ Hᴴ:
              s̄ -> conj(U diag(s̄) Vᴴ)
              Ū -> conj(U ((F ∘ (X - Xᴴ)) S + i Im diag(X) S⁻¹) Vᴴ + (G - UX) S⁻¹ Vᴴ)
              V̄h -> conj(U (S (F ∘ (Y - Yᴴ)) Vᴴ + S⁻¹ (H - Yᴴ Vᴴ)))
              (a pair u_k, v_k turns by a common phase freely: the i Im diag term turns
              u_k alone, as much as u_k v_kᴴ turns)
    qr:       R's diagonal real (LAPACK's): Ω = Qᴴ dQ gains i Im P_kk on its diagonal, and
              copyltu mirrors by ᴴ with a real diagonal (see QR below)
"""
from __future__ import annotations

import threading
import warnings
import weakref

import numpy as np

from .registry import defprimitive, float_dtype, real_dtype, shape_of
from . import scalar as S
from .array import (matmul, swapaxes, sum as _sum, tril, reshape, dtype_of, getitem,
                    concatenate, amax, roll)
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


# A complex matrix's rules are the real ones with conjugate transposes: each helper below is
# its real counterpart (or nothing) on a real array, so the real path does no extra work.
def _is_complex(x):
    return dtype_of(x).kind == "c"


def _H(x):
    """The conjugate transpose (a real matrix's transpose)."""
    return S.conj(_T(x)) if _is_complex(x) else _T(x)


def _cj(x):
    """The conjugate (a real array itself)."""
    return S.conj(x) if _is_complex(x) else x


def _herm(x):
    """The Hermitian part (X + Xᴴ)/2 (a real matrix's symmetric part)."""
    return 0.5 * (x + _H(x))


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

def _cofactor_np(a):
    """The cofactor matrix det(A) A⁻ᵀ, which det's derivative is, also where A is
    singular: there from the SVD A = U S Vh, whose cofactor matrix is
    det(U) det(Vh) conj(U) diag(∏_{j≠i} s_j) conj(Vh) (the products leave out one singular
    value each, so a single zero one leaves one term)."""
    try:
        return np.linalg.det(a)[..., None, None] * np.swapaxes(np.linalg.inv(a), -1, -2)
    except np.linalg.LinAlgError:
        pass
    u, s, vh = np.linalg.svd(a)
    ones = np.ones(s.shape[:-1] + (1,), s.dtype)
    before = np.cumprod(np.concatenate([ones, s[..., :-1]], axis=-1), axis=-1)
    after = np.cumprod(np.concatenate([ones, s[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    scale = (np.linalg.det(u) * np.linalg.det(vh))[..., None, None]
    # (A⁻ᵀ = conj(U) S⁻¹ conj(Vh) for a unitary U and Vh: the conjugates are no-ops for a
    # real matrix)
    return scale * np.matmul(np.conj(u) * (before * after)[..., None, :], np.conj(vh))


# det's derivative is the cofactor matrix, a primitive of its own so that it exists at a
# singular matrix too (as in PyTorch; det(A) A⁻ᵀ would raise there).
cofactor = _lin("cofactor", _cofactor_np, _same)
_CHECKERBOARD = np.array([[1.0, -1.0], [-1.0, 1.0]])


def _rolled(x, p, q):
    """R[i, j] = x[i + p, j + q], the indices taken modulo the matrix's size."""
    return roll(x, shift=(-p, -q), axis=_last2(x))


def _cyclic(x, y):
    """x[i+1, j+1] y[i+2, j+2] - x[i+1, j+2] y[i+2, j+1] (modulo 3): a 3x3 matrix's cofactor
    matrix is _cyclic(A, A), each entry a 2x2 minor with its sign."""
    return _rolled(x, 1, 1) * _rolled(y, 2, 2) - _rolled(x, 1, 2) * _rolled(y, 2, 1)


def _cofactor_derivative(a, e):
    """d cofactor(A)[E].  Up to 3x3 the cofactor matrix is a polynomial in A's entries
    (constant, linear, quadratic), and so is this: exact at every order, at a singular
    matrix and next to one.  From 4x4 up it is the primitive `cofactor_derivative`, from
    an SVD, whose own derivative is a sum of it around a circle: exact at singular
    matrices too, to every order.
    It is its own transpose (E ↦ d cofactor(A)[E] is the Hessian of det), so the VJP is
    this with the cotangent for E."""
    n = shape_of(a)[-1]
    if n == 1:
        return 0.0 * e
    if n == 2:     # (the signs in e's precision: float32 stays float32)
        return _CHECKERBOARD.astype(real_dtype(dtype_of(e))) * _rolled(e, 1, 1)
    if n == 3:
        return _cyclic(a, e) + _cyclic(e, a)
    return cofactor_derivative(a, e)


def _products_but_two(s):
    """P[..., i, j] = the product of the singular values s other than s_i and s_j (i ≠ j),
    0 on the diagonal: from products before i, between i and j, and after j, without
    dividing (a zero singular value is the case that matters)."""
    n = s.shape[-1]
    ones = np.ones(s.shape[:-1] + (1,), s.dtype)
    before = np.cumprod(np.concatenate([ones, s[..., :-1]], axis=-1), axis=-1)
    after = np.cumprod(np.concatenate([ones, s[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    i = np.arange(n)
    upper = i[:, None] < i[None, :]
    # row i: the product of s_l for i < l <= j, shifted one column to leave out s_j
    within = np.cumprod(np.where(upper, s[..., None, :], 1.0), axis=-1)
    between = np.concatenate([np.ones(s.shape[:-1] + (n, 1), s.dtype), within[..., :-1]],
                             axis=-1)
    p = np.where(upper, before[..., :, None] * between * after[..., None, :], 0.0)
    return p + np.swapaxes(p, -1, -2)


def _cofactor_derivative_np(a, e):
    """d cofactor(A)[E], at singular matrices too.  With the SVD A = U S Vh and
    F = Uᴴ E Vhᴴ, A + tE = U (S + tF) Vh, so
    adj(A + tE) = det(U) det(Vh) Vhᴴ adj(S + tF) Uᴴ (a unitary matrix's adjugate is its
    determinant times its inverse).  The derivative of
    a diagonal matrix's adjugate is D_ii = Σ_{k≠i} F_kk P_ik and D_ij = -F_ij P_ij (i ≠ j),
    P_ij the product of the singular values other than s_i and s_j (2x2 minors of
    S + tF); the cofactor matrix is the adjugate's transpose."""
    u, s, vh = np.linalg.svd(a)
    f = np.matmul(np.matmul(np.conj(np.swapaxes(u, -1, -2)), e),
                  np.conj(np.swapaxes(vh, -1, -2)))
    p = _products_but_two(s)
    d = -f * p
    i = np.arange(s.shape[-1])
    d[..., i, i] = np.matmul(p, f[..., i, i][..., None])[..., 0]
    scale = (np.linalg.det(u) * np.linalg.det(vh))[..., None, None]
    return scale * np.matmul(np.matmul(np.conj(u), np.swapaxes(d, -1, -2)), np.conj(vh))


def _pair_aval(args, params):
    a, e = args
    return np.broadcast_shapes(a.shape, e.shape), float_dtype(a.dtype, e.dtype)


# The Hessian of det from 4x4 up, a primitive of its own so that it exists at a singular
# matrix (the derivative of det(A) A⁻ᵀ, written with inv, does not).
cofactor_derivative = _lin("cofactor_derivative", _cofactor_derivative_np, _pair_aval)


def _cofactor_second(a, e, t):
    """The derivative of d cofactor(A)[E] in A along T, at singular matrices too.  It is a
    polynomial of degree n - 2 in s along A + sT, so its coefficient of s is exact from
    n - 1 points on a circle, s_k = r ω^k: (1/(n-1)r) Σ_k d cofactor(A + s_k T)[E] ω^-k
    (a discrete Fourier transform; r is |A|/|T|, where the terms are of A's size).
    Symmetric in E and T, as det's third derivative is in all three."""
    n = shape_of(a)[-1]
    m = n - 1
    rank = max(len(shape_of(x)) for x in (a, e, t))
    circle = np.exp(2j * np.pi * np.arange(m) / m).reshape((m,) + (1,) * rank)
    # (the result does not depend on r: no derivative flows into it, nor into sqrt at 0)
    fixed_a, fixed_t = S.stop_gradient(a), S.stop_gradient(t)
    size_a, size_t = (S.sqrt(_sum(S.real_part(x * _cj(x)), axis=_last2(x), keepdims=True))
                      for x in (fixed_a, fixed_t))
    r = S.maximum(size_a, size_t) / S.select(S.eq(size_t, 0.0), 1.0, size_t)
    points = cofactor_derivative(a + (r * circle) * t, e)
    out = _sum(points * np.conj(circle), axis=(0,), keepdims=False) / (m * r)
    complex_in = any(_is_complex(x) for x in (a, e, t))
    return out if complex_in else S.real_part(out)


@cofactor_derivative.defjvp
def _(ts, a, e, ans):
    out = None if ts[0] is None else _cofactor_second(a, e, ts[0])
    if ts[1] is not None:
        de = cofactor_derivative(a, ts[1])
        out = de if out is None else out + de
    return out


# <G, d cofactor(A)[E]> is det's second derivative d²det[E, G]: its derivative in A is
# d³det[E, G, ·], symmetric in its three directions, so each VJP is a JVP.
cofactor_derivative.defvjp(lambda g, a, e, ans: (
    sum_to(_cofactor_second(a, e, g), shape=shape_of(a)),
    sum_to(cofactor_derivative(a, g), shape=shape_of(e))))


@cofactor.defjvp
def _(ts, a, ans):
    return _cofactor_derivative(a, ts[0])


@cofactor.defvjp
def _(g, a, ans):
    return (_cofactor_derivative(a, g),)


det = _lin("det", np.linalg.det, _batch_scalar)
det.defvjp(lambda g, a, ans: (_expand2(g) * cofactor(a),))
det.defjvp(lambda ts, a, ans: _sum(cofactor(a) * ts[0], axis=_last2(a), keepdims=False))

logabsdet = _lin("logabsdet", lambda a: np.linalg.slogdet(a)[1], _batch_scalar)
signdet = _lin("signdet", lambda a: np.linalg.slogdet(a)[0], _batch_scalar, cost="cmp")
signdet.defpartials(None)


def _logdet_np(a):
    sign, logabs = np.linalg.slogdet(a)
    return logabs + 1j * np.angle(sign)          # (exact: 1j·x is (±0, x) for a finite x)


def _logdet_aval(args, params):
    shape, dtype = _batch_scalar(args, params)
    return shape, np.result_type(dtype, 1j)


# A complex matrix's slogdet: log det A = log|det A| + i arg det A, holomorphic, with
# logabsdet's rules (its logabsdet is the real part, its sign exp(i arg det A)); logabsdet
# and signdet are for real matrices, where the sign is piecewise constant.
logdet = _lin("logdet", _logdet_np, _logdet_aval)
for _p in (logabsdet, logdet):          # d log det A = tr(A⁻¹ dA), |det A| for a real A
    _p.defvjp(lambda g, a, ans: (_expand2(g) * _T(inv(a)),))
    _p.defjvp(lambda ts, a, ans: _sum(_T(inv(a)) * ts[0], axis=_last2(a), keepdims=False))


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


# (A complex matrix's VJPs below are written as the adjoint under Re tr(Xᴴ Y), with
# conjugate transposes, applied to the conjugate of the cotangent and conjugated back: the
# transpose without conjugation of JAX's and autograd's convention, docs/complex.md.)
@cholesky.defvjp
def _(g, a, ans):
    L = ans
    g = _cj(g)
    p = _phi(matmul(_H(L), g))
    # Ā = L⁻ᴴ P L⁻¹, by two triangular solves (written as general solves), Hermitian part
    x = solve(_H(L), _H(solve(_H(L), _H(p))))
    return (_cj(_herm(x)),)


# cholesky and eigh read one triangle, but their derivatives are the symmetric (Hermitian)
# ones (the VJPs give symmetric cotangents): a JVP reads the tangent's Hermitian part, so
# that it is the VJP's transpose for every tangent, not only for symmetric ones.
@cholesky.defjvp
def _(ts, a, ans):
    L = ans
    inner = solve(L, _H(solve(L, _H(_herm(ts[0])))))        # L⁻¹ dA L⁻ᴴ
    return matmul(L, _phi(inner))


def _eigvals_aval(args, params):
    return args[0].shape[:-1], real_dtype(float_dtype(args[0].dtype))


class _Factorizations(threading.local):
    """The last factorization of each kind (eigh with its UPLO, svd with its parameters,
    and the values alone), kept for the primitives that share it.  eigh's eigenvectors and
    svd's U and Vh are primitives of their own (a node each), yet one LAPACK call gives them
    all, and an eager gradient asks for them again and again: the forward pass, then most
    rules (svdvals's VJP needs U and V; U's and Vh's rules need the values).  Without this,
    an eager gradient through U, S and Vh ran nine SVDs.

    An entry is found only for the same array object with the same contents: a copy is kept
    and compared (O(n²) against the factorization's O(n³)), so an array changed in place
    between calls is factorized again, and a result never depends on what was asked before
    (it is what the call would compute).  An entry goes when its array is freed (an eager
    gradient's intermediate matrix: when the call ends), or when another matrix is
    factorized the same way.  One set per thread."""

    def __init__(self):
        self.entries = {}       # (kind, params) -> (weakrefs to the matrices, their copies,
        #                         factors)

    def of(self, kind, factorize, a, *params, b=None):
        """factorize(a, *params), computed once per matrix (see the class); with `b`, the
        second matrix of a pair (the generalized eigenproblem's), factorize(a, b, *params),
        once per pair, both compared as `a` is."""
        key = (kind, params)
        arrays = (a,) if b is None else (a, b)
        entry = self.entries.get(key)
        if entry is not None and all(ref() is x and np.array_equal(copy, x)
                                     for ref, copy, x in zip(entry[0], entry[1], arrays)):
            return entry[2]
        factors = factorize(*arrays, *params)
        if all(type(x) is np.ndarray for x in arrays):
            forget = lambda ref: self._forget(key, ref)
            self.entries[key] = (tuple(weakref.ref(x, forget) for x in arrays),
                                 tuple(x.copy() for x in arrays), factors)
        return factors

    def _forget(self, key, ref):
        entry = self.entries.get(key)
        if entry is not None and any(r is ref for r in entry[0]):
            del self.entries[key]


_factorizations = _Factorizations()


# The triangle read is a parameter, UPLO="U" (absent for "L"), as in NumPy: the upper
# triangle of A is the lower one of Aᵀ, but LAPACK's eigenvectors of the two can differ in
# sign.  The derivatives are the symmetric ones, whichever triangle is read.  (eigvalsh
# computes the eigenvalues alone, as numpy.linalg.eigvalsh does, never eigh's: its value
# is NumPy's whatever was computed before.)
eigvalsh = _lin("eigvalsh", lambda a, UPLO="L": _factorizations.of(
    "eigvalsh", np.linalg.eigvalsh, a, UPLO), _eigvals_aval)
eigvecsh = _lin("eigvecsh", lambda a, UPLO="L": _factorizations.of(
    "eigh", np.linalg.eigh, a, UPLO)[1], _same)


def _diag_part(m):
    """The diagonal of a (batch of) matrix as a (batch of) vector."""
    n = shape_of(m)[-1]
    return _sum(m * _eye(n, m), axis=(len(shape_of(m)) - 1,), keepdims=False)


#: How close (relative to the largest) two eigenvalues, or squared singular values, may be
#: before a derivative through the vectors warns: 1/(w_j - w_i) then multiplies a rounding
#: error of about eps·|w| into an error of eps·|w|/gap, 2e-8 at this gap and O(1) at a few
#: ulps, where it is finite and wrong (JAX's and PyTorch's are too).
NEARLY_REPEATED = 1e-8


def _F(w):
    """1/(w_j - w_i) off the diagonal, 0 on it: the eigen- and singular-vector rules'
    factor.  Where w holds values, nearly repeated ones raise a RuntimeWarning (see
    `NEARLY_REPEATED`)."""
    _warn_if_nearly_repeated(w)
    n = shape_of(w)[-1]
    diff = reshape(w, shape=shape_of(w)[:-1] + (1, n)) - reshape(w, shape=shape_of(w) + (1,))
    eye = _eye(n, w)
    # 1/(w_j - w_i) off the diagonal; the diagonal (0/0) is masked by adding the identity
    return (1.0 - eye) / (diff + eye)


def _warn_if_nearly_repeated(w):
    v = getattr(w, "value", w)                  # (a node's value, or the array itself)
    if v is None or np.shape(v)[-1] < 2:       # (traced without values: nothing to see)
        return
    v = np.asarray(v)
    n = v.shape[-1]
    gaps = np.abs(v[..., :, None] - v[..., None, :])
    gaps[..., np.arange(n), np.arange(n)] = np.inf
    scale = np.max(np.abs(v), axis=-1)
    closest = np.min(gaps, axis=(-2, -1)) / np.where(scale > 0, scale, 1.0)
    worst = float(np.min(closest, initial=np.inf))      # (initial: a stack of none)
    if worst < NEARLY_REPEATED:
        # (the message names digits, not the gap: Python shows each text once a place)
        digits = "all" if worst < 1e-15 else f"about {-np.log10(worst):.0f}"
        warnings.warn(
            "linalg: repeated or nearly repeated eigenvalues (or squared singular values): "
            "a derivative through the eigenvectors (singular vectors) divides by their "
            f"difference and loses {digits} of its 16 digits, and may be wrong entirely even "
            "where the function does not depend on the choice of vectors (docs/numpy.md); "
            "the values' own derivatives (eigvalsh, svdvals) are not affected",
            RuntimeWarning, stacklevel=3)


# (the eigenvectors once per rule: on arrays each eigvecsh is an eigh of its own)
@eigvalsh.defvjp
def _(g, a, ans, **tri):
    V = eigvecsh(a, **tri)
    # V diag(ḡ) Vᴴ, conjugated (ḡ is real: the eigenvalues are)
    return (_cj(matmul(V * reshape(g, shape=shape_of(g)[:-1] + (1,) + shape_of(g)[-1:]),
                       _H(V))),)


@eigvalsh.defjvp
def _(ts, a, ans, **tri):
    V = eigvecsh(a, **tri)
    # (Re diag(Vᴴ dA V) reads only dA's Hermitian part by itself)
    return S.real_part(_diag_part(matmul(_H(V), matmul(ts[0], V))))


@eigvecsh.defvjp
def _(g, a, ans, **tri):
    V = ans
    inner = _F(eigvalsh(a, **tri)) * matmul(_H(V), _cj(g))
    x = matmul(V, matmul(inner, _H(V)))
    return (_cj(_herm(x)),)


# A complex eigenvector is NumPy's up to a phase e^{iθ}, which the derivative cannot follow:
# it is the one with Im(vᴴ dv) = 0 (F's zero diagonal), right for a function that does
# not depend on the phases.
eigvecsh.defjvp(lambda ts, a, ans, **tri: matmul(ans, _F(eigvalsh(a, **tri)) * matmul(
    _H(ans), matmul(_herm(ts[0]), ans))))


# ---- the eigenvector of the largest eigenvalue ---------------------------------------------
# top_eigvecsh(a): the last column of numpy.linalg.eigh(a)'s eigenvectors (a real symmetric
# a, its lower triangle read; LAPACK's sign), for quaternions: a rotation's from its matrix
# and the mean of rotations.  eigvecsh's rule divides by the difference of every pair of
# eigenvalues, so it fails where the others repeat, as they do there (a rotation matrix's
# quaternion matrix has eigenvalues 3, -1, -1, -1).  The top vector's needs only its own
# eigenvalue λ to be simple: from A v = λ v and vᵀv = 1,
#     (λI - A) dv = (I - vvᵀ) dA v,  vᵀdv = 0   =>   dv = (I - vvᵀ) B⁻¹ (I - vvᵀ) dA v,
# B = λI - A + |λ| vvᵀ (symmetric; invertible when λ is simple and not 0; B v = |λ| v, so
# B⁻¹ keeps v's complement; |λ|, the matrix's scale, keeps B as well conditioned as the
# gap allows).  Its transpose: Ā = sym(u vᵀ), u = (I - vvᵀ) B⁻¹ (I - vvᵀ) v̄.  As eigh's,
# the derivatives are the symmetric ones, whichever triangle is read.
def _top_eigvecsh_np(a):
    return np.linalg.eigh(a)[1][..., -1]


top_eigvecsh = _lin("top_eigvecsh", _top_eigvecsh_np,
                    lambda args, params: (args[0].shape[:-1], float_dtype(args[0].dtype)))


def _top_solve(a, v, y):
    """(I - vvᵀ) B⁻¹ (I - vvᵀ) y for columns y, B = λI - A + |λ| vvᵀ (see above), A read
    from a's lower triangle; a warning where λ is (nearly) repeated."""
    _warn_if_top_repeated(a)
    n = shape_of(a)[-1]
    full = tril(a, k=0) + _T(tril(a, k=-1))
    col = _col(v)
    lam = matmul(_T(col), matmul(full, col))                  # (..., 1, 1): vᵀAv
    b = lam * _eye(n, a) - full + S.abs(lam) * matmul(col, _T(col))
    project = lambda x: x - col * matmul(_T(col), x)
    return project(solve(b, project(y)))


def _warn_if_top_repeated(a):
    v = getattr(a, "value", a)
    if v is None or np.shape(v)[-1] < 2 or np.size(v) == 0:
        return
    w = np.linalg.eigvalsh(np.asarray(v))
    scale = np.max(np.abs(w), axis=-1)
    gap = (w[..., -1] - w[..., -2]) / np.where(scale > 0, scale, 1.0)
    if np.min(gap) < NEARLY_REPEATED:
        warnings.warn(
            "linalg: the largest eigenvalue is repeated or nearly so: the eigenvector "
            "that belongs to it is not determined by the matrix, and its derivative "
            "divides by the gap (a mean of rotations that has no unique answer)",
            RuntimeWarning, stacklevel=4)


top_eigvecsh.defjvp(lambda ts, a, ans: _uncol(_top_solve(a, ans, matmul(
    _herm(ts[0]), _col(ans)))))
top_eigvecsh.defvjp(lambda g, a, ans: (_herm(matmul(_top_solve(a, ans, _col(g)),
                                                    _T(_col(ans)))),))


# ---- eigenvalues and eigenvectors of a general matrix --------------------------------------
# Two primitives, as eigh is: eigvals(a), numpy.linalg.eigvals's values, and eigvecs(a),
# numpy.linalg.eig's vectors.  Both are complex whatever a is (JAX's dtypes: NumPy's
# eig gives a real matrix real results when every eigenvalue happens to be real, which
# depends on the values, not the dtypes).  LAPACK finds the eigenvalues in the same
# order with and without the vectors, so λ_j belongs to v_j (a test checks A V = V Λ).
# With P = V⁻¹ dA V (A V = V Λ gives V⁻¹ dV = F ∘ P + diag(c), F_ij = 1/(λ_j - λ_i)):
#     dλ = diag(P)                         λ̄ -> Ā = V⁻ᵀ diag(λ̄) Vᵀ     (holomorphic)
#     dV = W + V diag(c),  W = V (F ∘ P)
# where c holds NumPy's normalization (LAPACK's geev): each v_j has unit length, so
# Re(v_jᴴ dv_j) = 0, and its largest component v_kj is real, so Im(dv_kj / v_kj) = 0:
#     c_j = -Re(v_jᴴ w_j) - i Im(w_kj / v_kj)
# This is real-linear, not complex-linear, and its VJP (the adjoint of conjugated
# cotangents, conjugated back) reads, with G the conjugated cotangent and h_j = (VᴴG)_jj:
#     G_W = G - V diag(Re h) - i M diag(Im h / v_k),  M_ij = 1 where i = k(j) (0 elsewhere)
#     Ā = conj(V⁻ᴴ (conj(F) ∘ (Vᴴ G_W)) Vᴴ)
def _eig_dtype(dtype):
    return np.result_type(float_dtype(dtype), 1j)


def _eigvals_np(a):
    w = np.linalg.eigvals(a)
    return w.astype(_eig_dtype(a.dtype), copy=False)


def _eigvecs_np(a):
    v = np.linalg.eig(a)[1]
    return v.astype(_eig_dtype(a.dtype), copy=False)


eigvals = _lin("eigvals", lambda a: _factorizations.of("eigvals", _eigvals_np, a),
               lambda args, params: (args[0].shape[:-1], _eig_dtype(args[0].dtype)))
eigvecs = _lin("eigvecs", lambda a: _factorizations.of("eig", _eigvecs_np, a),
               lambda args, params: (args[0].shape, _eig_dtype(args[0].dtype)))


@eigvals.defjvp
def _(ts, a, ans):
    V = eigvecs(a)
    return _diag_part(matmul(inv(V), matmul(ts[0], V)))


@eigvals.defvjp
def _(g, a, ans):
    V = eigvecs(a)
    return (matmul(_T(inv(V)) * _row(g), _T(V)),)


def _largest(V):
    """The mask M of each column's largest component (by modulus), which LAPACK makes
    real; and that component, a row (1×n)."""
    size = S.abs(V)
    axis = (len(shape_of(V)) - 2,)
    M = S.indicator(S.eq(size, amax(size, axis=axis, keepdims=True)), size)
    return M, _sum(M * V, axis=axis, keepdims=True)


@eigvecs.defjvp
def _(ts, a, ans):
    V = ans
    W = matmul(V, _F(eigvals(a)) * matmul(inv(V), matmul(ts[0], V)))
    M, vk = _largest(V)
    axis = (len(shape_of(V)) - 2,)
    norm = S.real_part(_sum(_cj(V) * W, axis=axis, keepdims=True))       # Re(v_jᴴ w_j)
    if _is_complex(V):
        phase = S.imag(_sum(M * W, axis=axis, keepdims=True) / vk)       # Im(w_kj / v_kj)
        return W - V * (norm + 1j * phase)
    return W - V * norm


@eigvecs.defvjp
def _(g, a, ans):
    V = ans
    G = _cj(g)
    M, vk = _largest(V)
    axis = (len(shape_of(V)) - 2,)
    h = _sum(_cj(V) * G, axis=axis, keepdims=True)                       # (VᴴG)_jj, a row
    GW = G - V * S.real_part(h)
    if _is_complex(h):
        GW = GW - 1j * M * (S.imag(h) / _cj(vk))
    inner = S.conj(_F(eigvals(a))) * matmul(_H(V), GW)
    Vinv_h = _H(inv(V))
    return (_cj(matmul(Vinv_h, matmul(inner, _H(V)))),)


# ---- singular values and vectors ------------------------------------------------------------
# Three primitives, as eigh is two: svdvals(a) gives s (numpy.linalg.svd's values alone),
# svd_u(a) U and svd_vh(a) Vh, from one call of numpy.linalg.svd (`_factorizations`; LAPACK
# is deterministic, so the U and Vh of one matrix agree in sign).  full_matrices is a
# parameter of svd_u and svd_vh (a square matrix's factors are the same either way, and
# wengert.numpy passes False for it, so that a rule's factors are the user's nodes);
# hermitian=True is one of all three (absent when False), and then A is read as symmetric,
# as NumPy reads it (through eigh, from its lower triangle), and the derivatives are the
# symmetric ones, as eigh's are.
def _svd_np(a, part, full_matrices=False, hermitian=False):
    return _factorizations.of("svd", _svd_all, a, full_matrices, hermitian)[part]


def _svd_all(a, full_matrices, hermitian):
    return np.linalg.svd(a, full_matrices=full_matrices, hermitian=hermitian)


def _svd_values(a, hermitian):
    return np.linalg.svd(a, compute_uv=False, hermitian=hermitian)


def _svd_shape(args, params):
    """(batch shape, m, n, k) of svd's argument."""
    s = args[0].shape
    return s[:-2], s[-2], s[-1], min(s[-2], s[-1])


def _svdvals_aval(args, params):
    batch, m, n, k = _svd_shape(args, params)
    return batch + (k,), real_dtype(float_dtype(args[0].dtype))


def _svd_u_aval(args, params):
    batch, m, n, k = _svd_shape(args, params)
    return batch + (m, m if params["full_matrices"] else k), float_dtype(args[0].dtype)


def _svd_vh_aval(args, params):
    batch, m, n, k = _svd_shape(args, params)
    return batch + (n if params["full_matrices"] else k, n), float_dtype(args[0].dtype)


svdvals = _lin("svdvals", lambda a, hermitian=False: _factorizations.of(
    "svdvals", _svd_values, a, hermitian), _svdvals_aval)
svd_u = _lin("svd_u", lambda a, full_matrices, **h: _svd_np(a, 0, full_matrices, **h),
             _svd_u_aval)
svd_vh = _lin("svd_vh", lambda a, full_matrices, **h: _svd_np(a, 2, full_matrices, **h),
              _svd_vh_aval)


def _mk(a):
    s = shape_of(a)
    return s[-2], s[-1], min(s[-2], s[-1])


def _no_extra_vectors(a, full_matrices, which):
    """Refuse the derivative of full_matrices' extra columns of U (m > n) or rows of Vh
    (n > m): any orthonormal basis of the complement would do, LAPACK picks one, and its
    derivative is not defined."""
    m, n, k = _mk(a)
    if full_matrices and (m if which == "U" else n) > k:
        raise NotImplementedError(
            f"the derivative of svd(..., full_matrices=True)'s {which} for a {m}×{n} matrix "
            f"is not defined (its extra {'columns' if which == 'U' else 'rows'} are any "
            "basis of the complement): use full_matrices=False, whose factors have one")


# A rule needs the other factor of the same decomposition, thin: svd_u(a, False) for
# svd_vh(a, full_matrices=True)'s rules too.  LAPACK computes full factors as the thin ones
# with columns (rows of Vh) added, so their signs agree (a test checks it).
def _thin_u(a, h):
    return svd_u(a, full_matrices=False, **h)


def _thin_v(a, h):
    """V, not Vh: Vhᴴ."""
    return _H(svd_vh(a, full_matrices=False, **h))


def _row(s):
    """A batch of vectors as a batch of 1×k rows: x * _row(s) is x S (columns scaled)."""
    return reshape(s, shape=shape_of(s)[:-1] + (1,) + shape_of(s)[-1:])


def _column(s):
    """A batch of vectors as a batch of k×1 columns: _column(s) * x is S x (rows scaled)."""
    return reshape(s, shape=shape_of(s) + (1,))


def _symmetric_in(dA, h):
    return _herm(dA) if h else dA


def _symmetric_out(Abar, h):
    return (_herm(Abar) if h else Abar,)


def _phase_part(X, s):
    """diag(i Im X_kk / s_k), the part of a complex matrix's derivative that turns the
    phases of u_k and v_k apart (u_k v_kᴴ turns with it), or None for a real X."""
    if not _is_complex(X):
        return None
    n = shape_of(X)[-1]
    return 1j * (S.imag(X) * _eye(n, s)) / _row(s)


@svdvals.defvjp
def _(g, a, ans, **h):
    U, V = _thin_u(a, h), _thin_v(a, h)
    # U diag(ḡ) Vᴴ, conjugated (ḡ is real)
    return _symmetric_out(_cj(matmul(U * _row(g), _H(V))), h)


@svdvals.defjvp
def _(ts, a, ans, **h):
    U, V = _thin_u(a, h), _thin_v(a, h)
    # Re diag(Uᴴ dA V)_k = Re Σ_i conj(U_ik) (dA V)_ik, without forming the k×k product
    return S.real_part(_sum(_cj(U) * matmul(_symmetric_in(ts[0], h), V),
                          axis=(len(shape_of(a)) - 2,), keepdims=False))


@svd_u.defjvp
def _(ts, a, ans, full_matrices, **h):
    _no_extra_vectors(a, full_matrices, "U")
    U, s, V = ans, svdvals(a, **h), _thin_v(a, h)
    dAV = matmul(_symmetric_in(ts[0], h), V)
    dP = matmul(_H(U), dAV)
    inner = _F(s * s) * (dP * _row(s) + _column(s) * _H(dP))
    phase = _phase_part(dP, s)          # (a complex matrix: Uᴴ dU's imaginary diagonal)
    dU = matmul(U, inner if phase is None else inner + phase)
    m, n, k = _mk(a)
    if m > k:
        dU = dU + (dAV - matmul(U, dP)) / _row(s)
    return dU


@svd_u.defvjp
def _(g, a, ans, full_matrices, **h):
    _no_extra_vectors(a, full_matrices, "U")
    U, s, V = ans, svdvals(a, **h), _thin_v(a, h)
    g = _cj(g)
    X = matmul(_H(U), g)
    inner = _F(s * s) * (X - _H(X)) * _row(s)
    phase = _phase_part(X, s)
    inner = matmul(U, inner if phase is None else inner + phase)
    m, n, k = _mk(a)
    if m > k:
        inner = inner + (g - matmul(U, X)) / _row(s)
    return _symmetric_out(_cj(matmul(inner, _H(V))), h)


@svd_vh.defjvp
def _(ts, a, ans, full_matrices, **h):
    _no_extra_vectors(a, full_matrices, "Vh")
    U, s, V = _thin_u(a, h), svdvals(a, **h), _H(ans)
    dAtU = matmul(_H(_symmetric_in(ts[0], h)), U)          # dAᴴ U
    dPt = matmul(_H(V), dAtU)                               # dPᴴ
    # (V's phases are held: Vᴴ dV's diagonal is 0, U's rule turns u_k instead)
    dV = matmul(V, _F(s * s) * (_column(s) * _H(dPt) + dPt * _row(s)))
    m, n, k = _mk(a)
    if n > k:
        dV = dV + (dAtU - matmul(V, dPt)) / _row(s)
    return _H(dV)


@svd_vh.defvjp
def _(g, a, ans, full_matrices, **h):
    _no_extra_vectors(a, full_matrices, "Vh")
    U, s, Vh = _thin_u(a, h), svdvals(a, **h), ans
    g = _cj(g)
    Y = matmul(Vh, _H(g))                       # VᴴV̄, with V̄ = ḡᴴ
    inner = matmul(_column(s) * (_F(s * s) * (Y - _H(Y))), Vh)
    m, n, k = _mk(a)
    if n > k:
        inner = inner + (g - matmul(_H(Y), Vh)) / _column(s)
    return _symmetric_out(_cj(matmul(U, inner)), h)


# ---- QR ------------------------------------------------------------------------------------
# A = QR, Q with orthonormal columns, R upper triangular: two primitives, qr_q(a) and
# qr_r(a), from one call of numpy.linalg.qr (`_factorizations`).  `complete` is a parameter
# of both (mode='complete'; wengert.numpy passes False for a square matrix, whose factors
# are the same either way).  The derivatives, for m >= n (a tall or square A of full column
# rank), with P = Qᵀ dA R⁻¹ and Ω = tril(P, -1) - tril(P, -1)ᵀ (so Qᵀ dQ = Ω, skew):
#     dR = (P - Ω) R          dQ = Q (Ω - P) + dA R⁻¹
#     Ā = (Q̄ + Q copyltu(M)) R⁻ᵀ,  M = R R̄ᵀ - Q̄ᵀ Q,  copyltu(M) = tril(M) + tril(M, -1)ᵀ
# (the reverse form as in H.-J. Liao et al., "Differentiable programming tensor networks",
# 2019, and in PyTorch).  A complex A's: P = Qᴴ dA R⁻¹, and since LAPACK's R has a real
# diagonal, so has dR = (P - Ω) R: Ω = tril(P, -1) - tril(P, -1)ᴴ + i Im diag(P),
# skew-Hermitian.  The adjoint (of conjugated cotangents, conjugated back) is
# (Q̄ + Q N) R⁻ᴴ with M = R R̄ᴴ - Q̄ᴴ Q and N = tril(M, -1) + tril(M, -1)ᴴ + Re diag(M).
def _qr_all(a, complete):
    return np.linalg.qr(a, mode="complete" if complete else "reduced")


def _qr_shapes(args, params):
    batch, m, n, k = _svd_shape(args, params)
    return batch, m, n, m if params["complete"] else k


def _qr_q_aval(args, params):
    batch, m, n, k = _qr_shapes(args, params)
    return batch + (m, k), float_dtype(args[0].dtype)


def _qr_r_aval(args, params):
    batch, m, n, k = _qr_shapes(args, params)
    return batch + (k, n), float_dtype(args[0].dtype)


qr_q = _lin("qr_q", lambda a, complete: _factorizations.of("qr", _qr_all, a, complete)[0],
            _qr_q_aval)
qr_r = _lin("qr_r", lambda a, complete: _factorizations.of("qr", _qr_all, a, complete)[1],
            _qr_r_aval)


def _qr_differentiable(a, complete):
    m, n, k = _mk(a)
    if complete and m > n:
        raise NotImplementedError(
            f"qr(..., mode='complete') of a {m}×{n} matrix is not differentiated (Q's extra "
            "columns are any basis of the complement and have no derivative; R is the "
            "reduced R above rows of zeros): use mode='reduced'")


def _right_rinv(B, R):
    """B R⁻¹, by a solve with Rᵀ (no inverse formed)."""
    return _T(solve(_T(R), _T(B)))


def _right_rinvH(B, R):
    """B R⁻ᴴ (B R⁻ᵀ for a real R)."""
    return _H(solve(R, _H(B)))


def _copyltu(M):
    """M's lower triangle, mirrored above the diagonal by the conjugate transpose; a
    complex M's diagonal made real (the Hermitian matrix with M's strict lower triangle
    and Re diag M)."""
    if _is_complex(M):
        low = tril(M, k=-1)
        return low + _H(low) + S.real_part(M) * _eye(shape_of(M)[-1], S.real_part(M))
    return tril(M, k=0) + _T(tril(M, k=-1))


def _skew(P):
    """Ω = Qᴴ dQ from P = Qᴴ dX R₁⁻¹: P's strict lower triangle, minus its conjugate
    transpose above the diagonal; for a complex P, i Im P_kk on the diagonal too (dR's
    diagonal stays real, as LAPACK's R's is)."""
    low = tril(P, k=-1)
    omega = low - _H(low)
    if _is_complex(P):
        omega = omega + 1j * (S.imag(P) * _eye(shape_of(P)[-1], S.imag(P)))
    return omega


def _columns(x, lo, hi):
    return getitem(x, index=(Ellipsis, ("slice", lo, hi, None)))


# A wide A (m < n) is [X | Y] with X its first m columns: Q R₁ = X is X's own QR, and
# R = [R₁ | QᵀY].  So Q and R₁ follow X by the square formulas, and R₂ = QᵀY by the product
# rule.  `_left` gives (X, R₁), or (A, R) when A is not wide.
def _left(a, R):
    m, n, k = _mk(a)
    return (_columns(a, 0, m), _columns(R, 0, m)) if n > m else (a, R)


def _qr_tangents(dA, a, Q, R):
    """(dQ, dR) for a tangent dA."""
    m, n, k = _mk(a)
    X, R1 = _left(a, R)
    dX = _columns(dA, 0, m) if n > m else dA
    dXR = _right_rinv(dX, R1)
    P = matmul(_H(Q), dXR)                      # Qᴴ dX R₁⁻¹
    omega = _skew(P)                            # Qᴴ dQ, skew-Hermitian
    dQ = matmul(Q, omega - P) + dXR
    dR = matmul(P - omega, R1)
    if n > m:
        Y, dY = _columns(a, m, n), _columns(dA, m, n)
        dR = concatenate(dR, matmul(_H(dQ), Y) + matmul(_H(Q), dY), axis=len(shape_of(a)) - 1)
    return dQ, dR


def _qr_cotangent(Qbar, Rbar, a, Q, R):
    """Ā for cotangents Q̄ and R̄ (None where zero)."""
    m, n, k = _mk(a)
    X, R1 = _left(a, R)
    # (a complex matrix's: the adjoint of conjugated cotangents, conjugated back)
    Qbar = None if Qbar is None else _cj(Qbar)
    Rbar = None if Rbar is None else _cj(Rbar)
    Ybar = None
    if n > m and Rbar is not None:              # R₂ = QᴴY: Ȳ = Q R̄₂, and Q̄ gains Y R̄₂ᴴ
        Rbar2, Rbar = _columns(Rbar, m, n), _columns(Rbar, 0, m)
        Ybar = matmul(Q, Rbar2)
        QY = matmul(_columns(a, m, n), _H(Rbar2))
        Qbar = QY if Qbar is None else Qbar + QY
    M = None if Rbar is None else matmul(R1, _H(Rbar))
    if Qbar is not None:
        QbQ = matmul(_H(Qbar), Q)
        M = -QbQ if M is None else M - QbQ
    inner = matmul(Q, _copyltu(M))
    Xbar = _cj(_right_rinvH(inner if Qbar is None else Qbar + inner, R1))
    if n > m:
        if Ybar is None:                        # (Q does not depend on Y)
            Ybar = np.zeros(shape_of(a)[:-1] + (n - m,), dtype=dtype_of(Xbar))
        return concatenate(Xbar, _cj(Ybar), axis=len(shape_of(a)) - 1)
    return Xbar


@qr_q.defjvp
def _(ts, a, ans, complete):
    _qr_differentiable(a, complete)
    return _qr_tangents(ts[0], a, ans, qr_r(a, complete=complete))[0]


@qr_r.defjvp
def _(ts, a, ans, complete):
    _qr_differentiable(a, complete)
    return _qr_tangents(ts[0], a, qr_q(a, complete=complete), ans)[1]


@qr_q.defvjp
def _(g, a, ans, complete):
    _qr_differentiable(a, complete)
    return (_qr_cotangent(g, None, a, ans, qr_r(a, complete=complete)),)


@qr_r.defvjp
def _(g, a, ans, complete):
    _qr_differentiable(a, complete)
    return (_qr_cotangent(None, g, a, qr_q(a, complete=complete), ans),)


# Whose rules hold for complex values: holomorphic matrix functions, whose VJPs are the
# plain transposes of their JVPs in JAX's and autograd's convention (docs/complex.md), and
# the factorizations, whose rules above take conjugate transposes for a complex matrix.
for _p in (inv, det, cofactor, cofactor_derivative, solve, logdet, cholesky, eigvalsh,
           eigvecsh, eigvals, eigvecs, svdvals, svd_u, svd_vh, qr_q, qr_r):
    _p.complex = True

__all__ = ["inv", "det", "cofactor", "cofactor_derivative", "logabsdet", "signdet", "logdet",
           "solve", "cholesky", "eigvalsh", "eigvecsh", "eigvals", "eigvecs", "svdvals",
           "svd_u", "svd_vh", "qr_q", "qr_r"]
