"""SciPy's `scipy.linalg`, differentiable: triangular and Cholesky solves for Gaussian
processes, banded solves (symmetric ones too), the matrix exponential and square root,
Sylvester and Lyapunov equations, LU, eigh (the generalized problem A v = λ B v too),
inv, det, solve and block_diag.

On plain values each function *is* SciPy's (the same call, the same result and errors).
On traced values it records wengert primitives (`wengert.primitives.scipy_linalg`, whose
values are SciPy's own, and `wengert.primitives.linalg`), differentiable to second order
and beyond, under `wg.vmap` and `wg.compile` too.  Real and complex matrices, with the
derivatives of docs/complex.md (JAX's and autograd's convention): expm, expm_frechet,
solve_sylvester, sqrtm, inv, det, lu_factor, solve_banded, solve_triangular (but for
trans='C'), and solve, lu_solve and inv without a symmetric or Hermitian structure are
holomorphic, so ``holomorphic=True`` gives their complex derivatives.  Batches of
matrices (leading axes) are taken where SciPy takes them.  Where a derivative does not
exist or is not implemented (eigh's subset_by_value, sqrtm of a singular matrix or of a
real one with a complex root) the call raises NotImplementedError, never a wrong number.
Functions not listed here are SciPy's on plain values and raise NotImplementedError,
naming themselves, on traced values.

Functions that read one triangle of a symmetric matrix (cholesky, cho_factor, eigh (a and
b), and solve or inv with assume_a='sym', 'her' or 'pos') take their values from that
triangle, as SciPy does, and have the symmetric derivative, as
`wengert.numpy.linalg.cholesky` and `eigh` have: a change in A_ij counts half in A_ij and
half in A_ji.  For a complex matrix, those that read a Hermitian one (cholesky,
cho_factor, eigh, 'her', 'pos') have the Hermitian derivative, (dA + dAᴴ)/2, and 'sym'
(a complex symmetric matrix, Aᵀ = A) the symmetric one, (dA + dAᵀ)/2, which is
holomorphic.

Example:
    >>> import numpy as np, wengert as wg
    >>> from wengert.scipy import linalg
    >>> a = np.array([[0.0, 1.0], [-2.0, -3.0]])
    >>> d = wg.jvp(lambda t: linalg.expm(t * a), (1.0,), (1.0,))[1]   # d/dt e^(tA) = A e^(tA)
    >>> bool(np.allclose(d, a @ linalg.expm(a)))
    True

    A spin-½ in a field along x turns by e^(-iHt), H = σx/2: the probability that it has
    flipped is sin²(t/2), with the derivative sin(t)/2:

    >>> sx = np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> flip = lambda t: wg.numpy.abs(linalg.expm(-0.5j * t * sx)[1, 0]) ** 2
    >>> bool(np.isclose(flip(1.0), np.sin(0.5) ** 2)), bool(np.isclose(wg.grad(flip)(1.0), np.sin(1.0) / 2))
    (True, True)
"""
from __future__ import annotations

import functools
import inspect
import operator

import numpy as _np
import scipy.linalg as _sl

from .. import numpy as _wnp
from ..dual import accepts_duals as _accepts_duals
from ..graph.node import Node as _Node
from ..numpy import _traced
from ..numpy.dispatch import rest_of as _rest_of
from ..primitives import linalg as _L, scipy_linalg as _P
from ..primitives.registry import float_dtype as _float_dtype

__all__ = ["solve_triangular", "solve_banded", "solveh_banded", "cholesky", "cho_factor",
           "cho_solve", "expm", "expm_frechet", "solve_sylvester", "solve_continuous_lyapunov",
           "inv", "det", "solve", "lu_factor", "lu_solve", "eigh", "eigvalsh", "block_diag",
           "sqrtm"]

LinAlgError = _np.linalg.LinAlgError


def scipy_unless_traced(module, adapt=None):
    """A decorator: the function of the same name in SciPy's `module` on plain arguments
    (called as the caller called it, after `adapt`, if given, has checked the arguments,
    a dict by name, or edited them in place); the decorated `fn` when any argument, or an
    item of a list or tuple argument, is traced.

    Example:
        >>> @scipy_unless_traced(_sl)
        ... def det(a):
        ...     return "traced"
        >>> float(det([[2.0]]))
        2.0
    """
    def decorate(fn):
        scipy_fn = getattr(module, fn.__name__)
        signature = inspect.signature(fn)

        @_accepts_duals
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if _traced(*args, *kwargs.values()):
                if "check_finite" in signature.parameters:
                    _check_finite(signature.bind(*args, **kwargs))
                return fn(*args, **kwargs)
            if adapt is not None:
                bound = signature.bind(*args, **kwargs)
                adapt(bound.arguments)
                args, kwargs = bound.args, bound.kwargs
            return scipy_fn(*args, **kwargs)
        return wrapper
    return decorate


def _check_finite(bound):
    """SciPy's check_finite (True by default) on traced arguments whose values are known
    (an eager call: under wg.compile and wg.vmap there are none to check): a nan or an
    inf raises its ValueError, where the traced solve went on to a wrong number."""
    bound.apply_defaults()
    if not bound.arguments["check_finite"]:
        return
    for name, v in bound.arguments.items():
        if name == "lu_and_piv":
            continue                            # (SciPy's lu_solve checks b alone)
        for x in (v if isinstance(v, tuple) else (v,)):     # ((c, lower))
            if type(x) is _Node:
                x = x.value                     # (None where the trace has no values)
            if isinstance(x, _np.ndarray) and x.dtype.kind in "fc" and \
                    not _np.isfinite(x).all():
                raise ValueError("array must not contain infs or NaNs")


_scipy_unless_traced = scipy_unless_traced(_sl)


def _at_least_2d(x):
    """x as an array of at least two axes, as SciPy's np.atleast_2d makes it."""
    x = _wnp.asarray(x)
    return _wnp.atleast_2d(x) if x.ndim < 2 else x


def _is_square(a):
    return a.ndim >= 2 and a.shape[-1] == a.shape[-2]


def _column_of(b, n):
    """Whether b's rows match an n×n matrix: b is one vector if 1-D, else a stack of
    matrices (SciPy's reading)."""
    if b.ndim == 0:
        return False
    return (b.shape[0] if b.ndim == 1 else b.shape[-2]) == n


def _as_columns(b):
    """(b as a stack of matrices, a function that gives a result b's own form back)."""
    if b.ndim == 1:
        return _wnp.reshape(b, b.shape + (1,)), lambda x: _wnp.reshape(x, x.shape[:-1])
    return b, lambda x: x


def _batches(what, *shapes_and_cores):
    """The broadcast batch shape, or SciPy's ValueError naming both shapes."""
    try:
        return _np.broadcast_shapes(*[s[:len(s) - k] for s, k in shapes_and_cores])
    except ValueError:
        shapes = " and ".join(str(s) for s, _ in shapes_and_cores)
        raise ValueError(f"{what}: the batch dimensions of the arrays of shapes {shapes} "
                         "cannot be broadcast together") from None


_TRANS = {0: 0, "N": 0, 1: 1, "T": 1, 2: 2, "C": 2}


def _is_complex(x):
    return x.dtype.kind == "c"


def _trans(trans, a):
    """0, 1 or 2 (op = id, ᵀ, ᴴ) for SciPy's `trans`; ᴴ is ᵀ for a real matrix a, so that
    a real matrix's solve is the holomorphic one whatever it is asked as."""
    try:
        t = _TRANS[trans]
    except (KeyError, TypeError):
        raise ValueError(f"trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}") from None
    return 1 if t == 2 and not _is_complex(a) else t


def _adjoint(a):
    """ᴴ's `trans` for a's triangular solves: 2 for a complex matrix, 1 (ᵀ) for a real one."""
    return 2 if _is_complex(a) else 1


# ---- triangular and Cholesky solves ------------------------------------------------------------
@_scipy_unless_traced
def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=True):
    """x with op(A) x = b, A the triangle of `a` that `lower` names (the upper one by
    default), op the transpose for ``trans=1`` ('T'), the conjugate transpose for 2 ('C';
    the transpose of a real A), A's diagonal taken as ones if `unit_diagonal`.  b is one
    vector if 1-D, else a matrix (or a stack of them).  Real or complex.

    Derivatives: dx = op(A)⁻¹(db - op(dA) x), which is a triangular solve too, and the
    cotangents b̄ = op(A)⁻ᵀ x̄, Ā = -b̄ xᵀ (op = id), -x b̄ᵀ (op = ᵀ) or -conj(x b̄ᵀ)
    (op = ᴴ) on the triangle read (the other triangle, and a unit diagonal, get zero).
    Holomorphic (complex-linear JVPs, for ``holomorphic=True``) but for 'C', which reads
    conj(A).  `overwrite_b` has no effect on traced values; `check_finite` checks their
    numbers where they are known (eagerly).

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import linalg
        >>> L = np.array([[2.0, 0.0], [1.0, 4.0]])
        >>> linalg.solve_triangular(L, np.array([2.0, 9.0]), lower=True).tolist()
        [1.0, 2.0]
        >>> wg.grad(lambda b: linalg.solve_triangular(L, b, lower=True).sum())(np.ones(2))
        array([0.375, 0.25 ])

        A complex triangle: the Jacobian in b is the triangle's inverse, and with 'C' its
        conjugate transpose's:

        >>> Z = np.array([[2j, 0.0], [1.0, 1 + 1j]])
        >>> f = lambda b, trans: linalg.solve_triangular(Z, b, lower=True, trans=trans)
        >>> J = wg.jacfwd(lambda b: f(b, 0), holomorphic=True)(np.ones(2) + 0j)
        >>> bool(np.allclose(J, np.linalg.inv(Z)))
        True
        >>> J = wg.jacfwd(lambda b: f(b, "C"), holomorphic=True)(np.ones(2) + 0j)
        >>> bool(np.allclose(J, np.linalg.inv(Z.conj().T)))
        True
    """
    a, b = _wnp.asarray(a), _wnp.asarray(b)
    if not _is_square(a):
        raise ValueError("expected square matrix")
    if not _column_of(b, a.shape[-1]):
        core = b.shape if b.ndim < 2 else b.shape[-2:]
        raise ValueError(f"shapes of a {a.shape[-2:]} and b {core} are incompatible")
    if b.ndim > 1:
        _batches("solve_triangular", (a.shape, 2), (b.shape, 2))
    return _P.solve_triangular(a, b, trans=_trans(trans, a), lower=bool(lower),
                               unit_diagonal=bool(unit_diagonal))


@_scipy_unless_traced
def solve_banded(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True):
    """x with A x = b, A the banded matrix with l diagonals below the main one and u above,
    stored as SciPy stores it: ``ab[u + i - j, j] == A[i, j]`` (`ab` has l + u + 1 rows).
    b is one vector, or a matrix whose columns are right-hand sides; leading axes of ab
    and b are batches, as in SciPy.

    Differentiable in ab and b to any order, without ever forming A: dx = A⁻¹(db - dA x),
    b̄ = A⁻ᵀ x̄ (a banded solve with Aᵀ's band) and ab̄ = -b̄ xᵀ read on the band.  Entries
    of ab outside the matrix (the corners SciPy ignores) have derivative 0.  Complex bands
    are holomorphic (docs/complex.md).  `overwrite_*` are SciPy's on plain values;
    traced values are never overwritten, and `check_finite` checks their numbers where
    they are known (eagerly).

    Example: a tridiagonal system (l = u = 1) and the derivative of its solution in the
    right-hand side, A⁻¹:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import linalg
        >>> ab = np.array([[0.0, 1.0, 1.0], [4.0, 4.0, 4.0], [1.0, 1.0, 0.0]])
        >>> A = np.diag([4.0] * 3) + np.diag([1.0] * 2, 1) + np.diag([1.0] * 2, -1)
        >>> J = wg.jacfwd(lambda b: linalg.solve_banded((1, 1), ab, b))(np.ones(3))
        >>> bool(np.allclose(J, np.linalg.inv(A)))
        True
    """
    try:
        l, u = (operator.index(k) for k in l_and_u)
    except (TypeError, ValueError):
        raise ValueError(f"(l, u) must be a pair of integers, got {l_and_u!r}") from None
    if l < 0 or u < 0:
        raise ValueError(f"the numbers of lower and upper diagonals must not be negative, "
                         f"got (l, u) = ({l}, {u})")
    ab, b = _wnp.asarray(ab), _wnp.asarray(b)
    if ab.ndim < 2:
        raise ValueError(f"ab must have at least two axes (l + u + 1 rows of the matrix's "
                         f"diagonals), got shape {ab.shape}")
    if not _column_of(b, ab.shape[-1]):
        raise ValueError(f"shapes of ab {ab.shape} and b {b.shape} are not compatible: "
                         f"b needs {ab.shape[-1]} rows")
    if l + u + 1 != ab.shape[-2]:
        raise ValueError(f"invalid values for the number of lower and upper diagonals: "
                         f"l+u+1 ({l + u + 1}) does not equal ab.shape[-2] ({ab.shape[-2]})")
    _batches("solve_banded", (ab.shape, 2), (b.shape, 2 if b.ndim > 1 else 1))
    return _P.solve_banded(ab, b, l=l, u=u)


@_scipy_unless_traced
def solveh_banded(ab, b, overwrite_ab=False, overwrite_b=False, lower=False,
                  check_finite=True):
    """x with A x = b, A a symmetric (Hermitian, if complex) positive-definite banded
    matrix stored by one triangle, as SciPy stores it: upper form (the default)
    ``ab[u + i - j, j] == A[i, j]`` for i <= j, lower form ``ab[i - j, j] == A[i, j]`` for
    i >= j, u = ab.shape[-2] - 1 diagonals on each side.  b is one vector or a matrix of
    right-hand sides; leading axes of ab and b are batches.

    The band is mirrored into both triangles and solved by `solve_banded`, so the
    derivatives are its (dx = A⁻¹(db − dA x), A never formed), with dA symmetric: an
    entry of `ab` stands for two entries of A and gets both their derivatives.  The
    diagonal's imaginary part is ignored, as LAPACK does.  On plain values this is
    SciPy's function, which refuses a matrix that is not positive definite; on traced
    values any nonsingular symmetric band is solved (no factorization checks it).

    Example: a symmetric tridiagonal system by its upper form, whose derivative in b is
    A⁻¹:

        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import linalg
        >>> ab = np.array([[0.0, 1.0, 1.0], [4.0, 4.0, 4.0]])
        >>> A = np.diag([4.0] * 3) + np.diag([1.0] * 2, 1) + np.diag([1.0] * 2, -1)
        >>> J = wg.jacfwd(lambda b: linalg.solveh_banded(ab, b))(np.ones(3))
        >>> bool(np.allclose(J, np.linalg.inv(A)))
        True
    """
    ab, b = _wnp.asarray(ab), _wnp.asarray(b)
    if ab.ndim < 2:
        raise ValueError(f"ab must have at least two axes (u + 1 rows of the matrix's "
                         f"diagonals), got shape {ab.shape}")
    u, n = ab.shape[-2] - 1, ab.shape[-1]
    hermitian = _is_complex(ab)
    diag = ab[..., 0 if lower else u, :]
    if hermitian:
        diag = _wnp.real(diag).astype(ab.dtype)

    def mirrored(row, k):
        # diagonal k of the other triangle: the stored one moved by k columns, and
        # conjugated (Aᴴ = A), with zeros where it leaves the matrix
        row = _wnp.conj(row) if hermitian else row
        pad = [(0, 0)] * (row.ndim - 1)
        return (_wnp.pad(row[..., k:], pad + [(0, k)]) if not lower else
                _wnp.pad(row[..., :n - k], pad + [(k, 0)]))

    stored = {k: ab[..., k if lower else u - k, :] for k in range(1, u + 1)}
    other = {k: mirrored(stored[k], min(k, n)) for k in stored}
    above = [(other if lower else stored)[k] for k in range(u, 0, -1)]
    below = [(stored if lower else other)[k] for k in range(1, u + 1)]
    full = _wnp.stack(above + [diag] + below, axis=-2)
    return solve_banded((u, u), full, b)


def _cholesky_input(a):
    a = _at_least_2d(a)
    if not _is_square(a):
        raise ValueError(f"Input array is expected to be square but has the shape: "
                         f"{a.shape}.")
    return a


@_scipy_unless_traced
def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """The Cholesky factor of a symmetric (Hermitian) positive-definite matrix: the
    upper-triangular U with A = UᴴU by default (SciPy's default, unlike NumPy's), the
    lower L with A = LLᴴ if `lower`; read from that triangle of A.  LinAlgError if A is
    not positive definite.

    Derivative: the symmetric (Hermitian) one of `wengert.numpy.linalg.cholesky`,
    dL = L Φ(L⁻¹ dA L⁻ᴴ) with Φ the lower triangle with half the diagonal: a change dA
    counts as its Hermitian part (dA + dAᴴ)/2.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import linalg
        >>> a = np.array([[4.0, 2.0], [2.0, 2.0]])
        >>> linalg.cholesky(a).tolist()
        [[2.0, 1.0], [0.0, 1.0]]
        >>> logdet = lambda a: 2 * wg.numpy.sum(wg.numpy.log(wg.numpy.diag(linalg.cholesky(a))))
        >>> bool(np.allclose(wg.grad(logdet)(a), np.linalg.inv(a)))   # d log det A = A⁻¹
        True

        A Hermitian one: log det H = 2 Σ log U_kk, whose gradient is conj(H⁻¹):

        >>> h = np.array([[2.0, 1j], [-1j, 2.0]])
        >>> logdet = lambda h: 2 * wg.numpy.sum(wg.numpy.log(wg.numpy.real(
        ...     wg.numpy.diag(linalg.cholesky(h)))))
        >>> bool(np.allclose(wg.grad(logdet)(h), np.linalg.inv(h).conj()))
        True
    """
    return _wnp.linalg.cholesky(_cholesky_input(a), upper=not lower)


@_scipy_unless_traced
def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """(c, lower): the Cholesky factor of `a` (symmetric or Hermitian positive definite)
    for `cho_solve`, in c's upper triangle (lower if `lower`).  On traced values c is the factor itself, zero in the other triangle
    (SciPy leaves arbitrary numbers there), and `lower` a plain bool.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import linalg
        >>> a, b = np.array([[4.0, 2.0], [2.0, 2.0]]), np.array([1.0, 1.0])
        >>> linalg.cho_solve(linalg.cho_factor(a), b).tolist()
        [0.0, 0.5]
        >>> g = wg.grad(lambda a: linalg.cho_solve(linalg.cho_factor(a), b).sum())(a)
        >>> bool(np.allclose(g, -np.linalg.solve(a, np.ones(2))[:, None] * [0.0, 0.5]))
        True
    """
    return cholesky(a, lower=lower), bool(lower)


def _flag(lower):
    """cho_factor's `lower`: a bool, or a batched SciPy result's array of equal flags."""
    flags = _np.asarray(lower)
    if flags.size and flags.min() != flags.max():
        raise NotImplementedError("cho_solve with factors of both triangles in one batch is "
                                  "not supported on traced values")
    return bool(flags.flat[0]) if flags.size else False


@_scipy_unless_traced
def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """x with A x = b, from ``(c, lower) = cho_factor(A)``: two triangular solves, one
    with the factor's conjugate transpose (A = L Lᴴ or Uᴴ U).

    Derivatives: those of the triangular solves, in b and in the factor's triangle (so
    through cho_factor in A: the Hermitian derivative).  Holomorphic in b.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import linalg
        >>> a = np.array([[2.0, 1.0], [1.0, 2.0]])
        >>> f = lambda b: linalg.cho_solve(linalg.cho_factor(a, lower=True), b)
        >>> bool(np.allclose(wg.jacfwd(f)(np.ones(2)), np.linalg.inv(a)))
        True
    """
    c, lower = c_and_lower
    lower = _flag(lower)
    c, b = _wnp.asarray(c), _wnp.asarray(b)
    if not _is_square(c):
        raise ValueError("The factored matrix c is not square.")
    if not _column_of(b, c.shape[-1]):
        raise ValueError(f"incompatible dimensions ({c.shape} and {b.shape})")
    b, back = _as_columns(b)
    _batches("cho_solve", (c.shape, 2), (b.shape, 2))
    h = _adjoint(c)
    if lower:               # A = L Lᴴ
        y = _P.solve_triangular(c, b, trans=0, lower=True, unit_diagonal=False)
        x = _P.solve_triangular(c, y, trans=h, lower=True, unit_diagonal=False)
    else:                   # A = Uᴴ U
        y = _P.solve_triangular(c, b, trans=h, lower=False, unit_diagonal=False)
        x = _P.solve_triangular(c, y, trans=0, lower=False, unit_diagonal=False)
    return back(x)


# ---- matrix functions ------------------------------------------------------------------------
def _matrix_function_input(a):
    a = _wnp.asarray(a)
    if a.ndim < 2:
        raise LinAlgError("The input array must be at least two-dimensional")
    if a.shape[-1] != a.shape[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")
    return a


@_scipy_unless_traced
def expm(A):
    """The matrix exponential e^A (of each matrix of a stack), real or complex.

    Derivative: the Fréchet derivative L(A, dA), the top-right block of
    exp([[A, dA], [0, A]]) (one exponential of twice the size); the cotangent is
    L(Aᵀ, Ḡ).  Both are exponentials again, so they differentiate to any order.  e^A is
    holomorphic: for a complex A the same formulas hold (``holomorphic=True`` gives
    dvec(e^A)/dvec(A)), and a real loss of e^(-iHt) has the gradient of docs/complex.md.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import linalg
        >>> a = np.array([[0.0, 1.0], [-1.0, 0.0]])             # e^(tA) turns by t radians
        >>> linalg.expm(np.pi / 2 * a).round(12).tolist()
        [[0.0, 1.0], [-1.0, 0.0]]
        >>> wg.grad(lambda t: linalg.expm(t * a)[0, 1])(0.0)     # d sin t / dt at 0
        1.0

        The propagator of a Hamiltonian H, U(t) = e^(-iHt), has dU/dt = -iH U:

        >>> h = np.array([[1.0, 0.5 - 0.5j], [0.5 + 0.5j, -1.0]])
        >>> du = wg.jvp(lambda t: linalg.expm(-1j * t * h), (0.3,), (1.0,))[1]
        >>> bool(np.allclose(du, -1j * h @ linalg.expm(-0.3j * h)))
        True
    """
    return _P.expm(_matrix_function_input(A))


@_scipy_unless_traced
def expm_frechet(A, E, method=None, compute_expm=True, check_finite=True):
    """(e^A, L(A, E)), the exponential and its Fréchet derivative in the direction E (only
    L(A, E) if not `compute_expm`), both differentiable (in A and E; holomorphic in both
    for complex ones).  `method` has no effect on traced values: L is read off
    exp([[A, E], [0, A]]).

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import linalg
        >>> a, e = np.diag([0.0, 1.0]), np.eye(2)
        >>> f = lambda s: linalg.expm_frechet(s * a, e, compute_expm=False)
        >>> f(1.0).round(6).tolist()                       # d e^(A + tI)/dt = e^A
        [[1.0, 0.0], [0.0, 2.718282]]
        >>> round(wg.jacfwd(lambda s: f(s)[1, 1])(1.0), 6)     # d e^s / ds
        2.718282
    """
    a, e = _wnp.asarray(A), _wnp.asarray(E)
    if a.ndim != 2 or not _is_square(a):
        raise ValueError("expected A to be a square matrix")
    if e.shape != a.shape:
        raise ValueError(f"expected E to be the same shape as A: A has shape {a.shape}, "
                         f"E has shape {e.shape}")
    if method not in (None, "SPS", "blockEnlarge"):
        raise ValueError(f"Unknown implementation {method}")
    frechet = _P.frechet_expm(a, e)
    return (_P.expm(a), frechet) if compute_expm else frechet


@_scipy_unless_traced
def sqrtm(A, disp=_np._NoValue, blocksize=_np._NoValue):
    """The principal square root X of A (X² = A, eigenvalues in the right half-plane).

    Derivative: dX solves the Sylvester equation X dX + dX X = dA (the cotangent
    Xᵀ Ā + Ā Xᵀ = X̄), holomorphic for a complex A.  At a singular matrix that equation
    is singular and the derivative does not exist: it raises NotImplementedError.  On
    traced values a real matrix must have a real square root (SciPy returns a complex one
    for a real matrix with a negative real eigenvalue, a dtype that depends on the
    values: refused, pass a + 0j instead), and SciPy's deprecated ``disp=False`` is
    refused; `blocksize` has no effect.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import linalg
        >>> a = np.array([[4.0, 1.0], [0.0, 9.0]])
        >>> linalg.sqrtm(a).tolist()
        [[2.0, 0.2], [0.0, 3.0]]
        >>> wg.grad(lambda s: linalg.sqrtm(s * a)[0, 0])(4.0)    # d √(4s)/ds = 1/√s
        0.5
        >>> root = lambda s: linalg.sqrtm(np.diag([4.0, -1.0]) * s + 0j)   # a complex root
        >>> root(1.0).tolist(), wg.jvp(root, (1.0,), (1.0,))[1].tolist()   # d √(±s)/ds
        ([[(2+0j), 0j], [0j, 1j]], [[(1+0j), 0j], [0j, 0.5j]])
    """
    if disp is not _np._NoValue and not disp:
        raise NotImplementedError("scipy.linalg.sqrtm(..., disp=False) is not supported on "
                                  "traced values (SciPy deprecates it): use disp's default")
    return _P.sqrtm(_matrix_function_input(A))


# ---- Sylvester and Lyapunov equations ----------------------------------------------------------
def _warn_if_singular_sylvester(arguments):
    """SciPy's solve_sylvester gives large numbers for a singular equation without a word:
    wengert warns (on traced values its primitive does, for solve_continuous_lyapunov too,
    whose SciPy function warns itself)."""
    a, b = (_np.asarray(arguments[k]) for k in ("a", "b"))
    if _is_square(a) and _is_square(b):
        _P.warn_if_singular(a, b, "solve_sylvester")


@scipy_unless_traced(_sl, adapt=_warn_if_singular_sylvester)
def solve_sylvester(a, b, q):
    """X with AX + XB = Q, A n×n, B m×m, Q n×m (stacks broadcast), real or complex.

    Derivative: a Sylvester equation again, A dX + dX B = dQ - dA X - X dB; the cotangent
    Q̄ solves Aᵀ Q̄ + Q̄ Bᵀ = X̄, and Ā = -Q̄ Xᵀ, B̄ = -Xᵀ Q̄ (holomorphic in A, B and Q).
    Real and complex arguments together are made complex first on traced values: SciPy
    1.17's own call returns no solution for some of them (a real A or B with complex
    eigenvalues; scipy/scipy#26177), and on plain values it is SciPy's call.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import linalg
        >>> a, b = np.diag([1.0, 2.0]), np.diag([3.0])
        >>> linalg.solve_sylvester(a, b, np.array([[4.0], [10.0]])).tolist()
        [[1.0], [2.0]]
        >>> wg.grad(lambda q: linalg.solve_sylvester(a, b, q).sum())(np.ones((2, 1))).tolist()
        [[0.25], [0.2]]
    """
    a, b, q = (_wnp.asarray(x) for x in (a, b, q))
    for x in (a, b):
        if not _is_square(x):
            raise ValueError("expected square matrix")
    n, m = a.shape[-1], b.shape[-1]
    if q.ndim < 2 or q.shape[-2:] != (n, m):
        raise ValueError(f"solve_sylvester: q of shape {q.shape} does not match a of shape "
                         f"{a.shape} and b of shape {b.shape} (q must be {n}×{m})")
    _batches("solve_sylvester", (a.shape, 2), (b.shape, 2), (q.shape, 2))
    return _P.solve_sylvester(a, b, q)


@_scipy_unless_traced
def solve_continuous_lyapunov(a, q):
    """X with AX + XAᴴ = Q (the continuous Lyapunov equation; Aᴴ is Aᵀ for a real A;
    stacks broadcast).

    Derivative: the Sylvester equation A dX + dX Aᴴ = dQ - dA X - X dAᴴ (a Lyapunov
    equation), through `solve_sylvester` with B = Aᴴ; values agree with SciPy's to
    rounding.  Holomorphic in Q, not in a complex A (Aᴴ conjugates it).

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import linalg
        >>> a = np.diag([-1.0, -2.0])                   # X_ij = Q_ij / (a_i + a_j)
        >>> linalg.solve_continuous_lyapunov(a, np.ones((2, 2))).round(6).tolist()
        [[-0.5, -0.333333], [-0.333333, -0.25]]
        >>> dx = wg.jvp(lambda s: linalg.solve_continuous_lyapunov(s * a, np.eye(2)),
        ...             (1.0,), (1.0,))[1]
        >>> dx.round(6).tolist()                        # d/ds 1/(2 s a_i) = -1/(2 s² a_i)
        [[0.5, 0.0], [0.0, 0.25]]
    """
    a, q = _wnp.asarray(a), _wnp.asarray(q)
    for name, x in (("a", a), ("q", q)):
        if not _is_square(x):
            raise ValueError(f"Matrix {name} should be square.")
    if a.shape[-2:] != q.shape[-2:]:
        raise ValueError(f"Matrix a and q should have the same shape (a has shape {a.shape}, "
                         f"q has shape {q.shape}).")
    _batches("solve_continuous_lyapunov", (a.shape, 2), (q.shape, 2))
    ah = _wnp.swapaxes(a, -1, -2)
    return _P.solve_sylvester(a, _wnp.conj(ah) if _is_complex(a) else ah, q)


# ---- inverse, determinant, general solves ----------------------------------------------------
_STRUCTURES = {None: "general", "gen": "general", "general": "general", "banded": "general",
               "diagonal": "diagonal", "tridiagonal": "tridiagonal",
               "upper triangular": "upper triangular",
               "lower triangular": "lower triangular", "sym": "sym", "symmetric": "sym",
               "her": "her", "hermitian": "her", "pos": "pos", "positive definite": "pos"}
_INV_STRUCTURES = (None, "gen", "general", "diagonal", "upper triangular",
                   "lower triangular", "pos", "sym", "her")


def _structure(assume_a, allowed=None):
    try:
        kind = _STRUCTURES[assume_a]
    except (KeyError, TypeError):
        kind = None
    if kind is None or (allowed is not None and assume_a not in allowed):
        raise ValueError(f"{assume_a} is not a recognized matrix structure")
    return kind


def _symmetric(a, kind, lower):
    """The symmetric matrix (for 'her' and a complex a, the Hermitian one) that the
    triangle `lower` names holds."""
    if kind == "her" and _is_complex(a):
        return _P.symmetrize(a, lower=bool(lower), hermitian=True)
    return _P.symmetrize(a, lower=bool(lower))


def _square_input(a):
    a = _at_least_2d(a)
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"Expected square matrix, got a1.shape={a.shape}")
    return a


@_scipy_unless_traced
def inv(a, overwrite_a=False, check_finite=True, *, assume_a=None, lower=False):
    """The inverse of a square matrix (of each of a stack), with SciPy's `assume_a`:
    'general' (or None: NumPy's inverse), 'diagonal' (the diagonal alone is read),
    'upper triangular' / 'lower triangular' (a triangular solve), 'pos' (Cholesky, from
    the triangle `lower` names), 'sym' / 'her' (from that triangle: for a complex matrix
    'sym' is complex symmetric, Aᵀ = A, and 'her' Hermitian, its diagonal's imaginary
    part ignored as LAPACK does).

    Derivative: d(A⁻¹) = -A⁻¹ dA A⁻¹ on the part of A that is read; for 'pos', 'sym' and
    'her' the symmetric one (for a complex A: 'sym' (dA + dAᵀ)/2, holomorphic, and 'pos'
    and 'her' the Hermitian one, (dA + dAᴴ)/2).  Holomorphic but for 'pos' and 'her'.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import linalg
        >>> g = wg.grad(lambda a: linalg.inv(a)[0, 0])(np.diag([2.0, 4.0]))   # -1/a₀₀²
        >>> (g + 0.0).tolist()
        [[-0.25, 0.0], [0.0, 0.0]]
    """
    a = _wnp.asarray(a)
    if a.ndim < 2:
        raise ValueError(f"Expected at least ndim=2, got a1.ndim={a.ndim}")
    a = _square_input(a)
    kind = _structure(assume_a, _INV_STRUCTURES)
    eye = _np.eye(a.shape[-1], dtype=_float_dtype(a.dtype))
    if kind == "diagonal":
        return eye / _wnp.expand_dims(_wnp.diagonal(a, 0, -2, -1), -2)
    if kind in ("upper triangular", "lower triangular"):
        return _P.solve_triangular(a, eye, trans=0, lower=kind[0] == "l", unit_diagonal=False)
    if kind == "pos":
        return cho_solve(cho_factor(a, lower=lower), eye)
    if kind in ("sym", "her"):
        a = _symmetric(a, kind, lower)
    return _L.inv(a)


@_scipy_unless_traced
def det(a, overwrite_a=False, check_finite=True):
    """The determinant (of each matrix of a stack).

    Derivative: d det A = tr(Cᵀ dA), C the cofactor matrix (det A · A⁻ᵀ where A is
    invertible), which exists at singular matrices too (`wengert.numpy.linalg.det`);
    holomorphic for a complex A.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import linalg
        >>> wg.grad(linalg.det)(np.array([[2.0, 1.0], [1.0, 3.0]])).round(6).tolist()
        [[3.0, -1.0], [-1.0, 2.0]]
        >>> z = np.array([[1j, 2.0], [1.0, 3j]])     # det = 3i·i - 2: its cofactor matrix
        >>> bool(np.allclose(wg.grad(linalg.det, holomorphic=True)(z), [[3j, -1], [-2, 1j]]))
        True
    """
    a = _wnp.asarray(a)
    if a.ndim < 2:
        raise ValueError("The input array must be at least two-dimensional.")
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"Last 2 dimensions of the array must be square but received "
                         f"shape {a.shape}.")
    # (SciPy's det is in double precision for every input, float32 and complex64 too)
    return _L.det(a.astype(_np.complex128 if a.dtype.kind == "c" else _np.float64))


@_scipy_unless_traced
def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True,
          assume_a=None, transposed=False):
    """x with A x = b (Aᵀ x = b if `transposed`), b one vector if 1-D, else a matrix (or
    a stack of them), with SciPy's `assume_a`: None, 'general' or 'banded' (NumPy's solve:
    the derivative is the general one, as SciPy's structure detection only picks a faster
    route to the same numbers), 'diagonal' and 'tridiagonal' (only that band is read),
    'upper triangular' / 'lower triangular' (`solve_triangular`), 'pos' (Cholesky:
    `cho_solve`), 'sym' / 'her' (NumPy's solve of the symmetric matrix the triangle
    `lower` names holds: complex symmetric for 'sym', Hermitian for 'her').  Complex
    values as SciPy takes them: `transposed` with a complex a or b is SciPy's
    NotImplementedError.

    Derivative: dx = A⁻¹(db - dA x) on the part of A that is read; for 'pos', 'sym' and
    'her' the symmetric one (as `inv`'s: Hermitian for a complex A with 'pos' and 'her').
    Holomorphic in b, and in A but for 'pos' and 'her'.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import linalg
        >>> a, b = np.array([[2.0, 1.0], [1.0, 2.0]]), np.array([3.0, 3.0])
        >>> linalg.solve(a, b, assume_a="pos").round(6).tolist()
        [1.0, 1.0]
        >>> g = wg.grad(lambda a: linalg.solve(a, b, assume_a="pos").sum())(a)
        >>> g.round(6).tolist()                         # symmetric: -(A⁻¹1 xᵀ + x 1ᵀA⁻¹)/2
        [[-0.333333, -0.333333], [-0.333333, -0.333333]]

        An impedance network, Z i = v with Z = R + iωL: the current's sensitivity to ω is
        dZ/dω = iL, so di/dω = -Z⁻¹ (iL) i:

        >>> r, l, v = np.array([[2.0, -1.0], [-1.0, 3.0]]), np.diag([0.5, 0.2]), np.ones(2)
        >>> current = lambda w: linalg.solve(r + 1j * w * l, v)
        >>> di = wg.jvp(current, (2.0,), (1.0,))[1]
        >>> bool(np.allclose(di, -np.linalg.solve(r + 2j * l, 1j * l @ current(2.0))))
        True
    """
    a, b = _square_input(a), _wnp.asarray(b)
    if transposed and (_is_complex(a) or _is_complex(b)):     # (b's dtype is a's too)
        raise NotImplementedError("scipy.linalg.solve can currently not solve a^T x = b or "
                                  "a^H x = b for complex matrices.")
    if not _column_of(b, a.shape[-1]):
        raise ValueError(f"incompatible shapes: a1.shape={a.shape} and b1.shape={b.shape}")
    if b.ndim > 1:
        _batches("solve", (a.shape, 2), (b.shape, 2))
    kind = _structure(assume_a)
    if kind == "diagonal":
        d = _wnp.diagonal(a, 0, -2, -1)
        return b / (d if b.ndim == 1 else _wnp.expand_dims(d, -1))
    if kind in ("upper triangular", "lower triangular"):
        return _P.solve_triangular(a, b, trans=int(bool(transposed)), lower=kind[0] == "l",
                                   unit_diagonal=False)
    if kind == "pos":
        return cho_solve(cho_factor(a, lower=lower), b)
    if kind in ("sym", "her"):
        a = _symmetric(a, kind, lower)
    elif kind == "tridiagonal":
        a = _wnp.tril(a, 1) - _wnp.tril(a, -2)
    if transposed and kind not in ("sym", "her"):
        a = _wnp.swapaxes(a, -1, -2)
    return _L.solve(a, b)


# ---- LU --------------------------------------------------------------------------------------
@_scipy_unless_traced
def lu_factor(a, overwrite_a=False, check_finite=True):
    """(lu, piv): the LU factorization P A = L U with partial pivoting, L (unit diagonal
    left out) and U packed in `lu`, piv the row interchanges (row i was swapped with row
    piv[i]).  On traced values: square matrices (or stacks of them), and the result a
    tuple (SciPy's is a list for a stack).

    Derivative: with F = L⁻¹ P dA U⁻¹, dL = L tril(F, -1) and dU = triu(F) U (the pivots
    are piecewise constant: they have none); holomorphic for a complex A.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import linalg
        >>> a = np.array([[1.0, 2.0], [3.0, 4.0]])
        >>> lu, piv = linalg.lu_factor(a)
        >>> lu.round(6).tolist(), piv.tolist()
        ([[3.0, 4.0], [0.333333, 0.666667]], [1, 1])
        >>> logabsdet = lambda a: wg.numpy.sum(wg.numpy.log(wg.numpy.abs(
        ...     wg.numpy.diagonal(linalg.lu_factor(a)[0]))))
        >>> bool(np.allclose(wg.grad(logabsdet)(a), np.linalg.inv(a).T))
        True
    """
    a = _at_least_2d(a)
    if not _is_square(a):
        raise NotImplementedError(f"scipy.linalg.lu_factor of a non-square matrix (shape "
                                  f"{a.shape}) is not supported on traced values")
    return _P.lu_factor(a), _P.lu_pivots(a)


def _trans_as_number(arguments):
    """SciPy's lu_solve takes `trans` as 0, 1 or 2 only (its solve_triangular, and
    wengert's lu_solve, the letters too)."""
    if isinstance(arguments.get("trans"), str) and arguments["trans"] in _TRANS:
        arguments["trans"] = _TRANS[arguments["trans"]]


@scipy_unless_traced(_sl, adapt=_trans_as_number)
def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """x with A x = b (Aᵀ x = b for ``trans=1`` or 'T', Aᴴ x = b for 2 or 'C', which is
    Aᵀ for a real A), from ``(lu, piv) = lu_factor(A)``: the pivots' interchanges and two
    triangular solves.  (SciPy's own takes the numbers only; this passes it a letter as
    its number.)  A zero pivot (a singular A) raises LinAlgError on traced values, where
    SciPy's gives infinities.

    Derivatives: those of the triangular solves (in b, and in lu's triangles, so through
    lu_factor in A: altogether the derivative of A⁻¹b).  Complex matrices too: holomorphic
    but for ``trans='C'``, which reads conj(A).

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import linalg
        >>> a, b = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, 1.0])
        >>> linalg.lu_solve(linalg.lu_factor(a), b).tolist()
        [-1.0, 1.0]
        >>> g = wg.grad(lambda a: linalg.lu_solve(linalg.lu_factor(a), b)[0])(a)
        >>> bool(np.allclose(g, -np.outer(np.linalg.inv(a).T[:, 0], [-1.0, 1.0])))
        True
    """
    lu, piv = lu_and_piv
    lu, b = _wnp.asarray(lu), _wnp.asarray(b)
    if not _is_square(lu):
        raise ValueError(f"expected a square lu, got shape {lu.shape}")
    if not _column_of(b, lu.shape[-1]):
        raise ValueError(f"Shapes of lu {lu.shape} and b {b.shape} are incompatible")
    b, back = _as_columns(b)
    _batches("lu_solve", (lu.shape, 2), (b.shape, 2))
    if not hasattr(piv, "dtype") or piv.dtype.kind not in "iu":
        piv = _np.asarray(piv, dtype=_np.int32)
    trans = _trans(trans, lu)
    if trans == 0:                          # L U x = P b
        y = _P.lu_swap_rows(b, piv, inverse=False)
        y = _P.solve_triangular(lu, y, trans=0, lower=True, unit_diagonal=True)
        x = _P.solve_triangular(lu, y, trans=0, lower=False, unit_diagonal=False)
    else:                                   # Aᵀ = Uᵀ Lᵀ P: x = Pᵀ L⁻ᵀ U⁻ᵀ b (ᴴ for 'C')
        y = _P.solve_triangular(lu, b, trans=trans, lower=False, unit_diagonal=False)
        y = _P.solve_triangular(lu, y, trans=trans, lower=True, unit_diagonal=True)
        x = _P.lu_swap_rows(y, piv, inverse=True)
    return back(x)


# ---- symmetric eigenproblems -------------------------------------------------------------------
@_scipy_unless_traced
def eigh(a, b=None, *, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         type=1, check_finite=True, subset_by_index=None, subset_by_value=None, driver=None):
    """Eigenvalues (ascending, real) and eigenvectors of a symmetric (complex Hermitian)
    matrix A, read from the triangle `lower` names; with `b`, of the generalized problem A v = λ B v, B symmetric
    (Hermitian) positive definite and read from the same triangle, the eigenvectors
    B-normalised (Vᴴ B V = I), and with ``type=2`` of A B v = λ v, with ``type=3`` of
    B A v = λ v (then Vᴴ B⁻¹ V = I).  The tuple (w, v), or w alone if `eigvals_only`;
    with ``subset_by_index=(lo, hi)`` the eigenpairs lo..hi only.  The values are SciPy's
    (the eigenvectors' signs too, which NumPy's eigh often picks the other way).

    Derivatives: the symmetric ones of `wengert.numpy.linalg.eigh`, dw = diag(Vᵀ dA V) and
    dV = V (F ∘ (Vᵀ dA V)) with F_ij = 1/(w_j - w_i); with `b`, in A and in B,
    dw_i = v_iᵀ (dA - w_i dB) v_i and dV = V (F ∘ (Vᵀ dA V - Vᵀ dB V diag(w)))
    - ½ V diag(Vᵀ dB V), whose last term keeps Vᵀ B V = I (types 2 and 3: see
    `wengert.primitives.scipy_linalg`).  They assume distinct eigenvalues, and only
    functions that do not depend on the eigenvectors' signs have meaningful ones (w, v²,
    v vᵀ, V f(w) Vᵀ do not: v[0] does).  Complex Hermitian matrices (with and without
    `b`) have the same derivatives with each ᵀ a ᴴ, in the convention of docs/complex.md:
    a change counts as its Hermitian part, and each eigenvector has a free phase instead
    of a sign (the derivative keeps vᴴ B dv real; |v|², v vᴴ, V f(w) Vᴴ do not depend on
    it).  A B that is not positive definite raises SciPy's LinAlgError.  Refused on traced values (NotImplementedError):
    ``subset_by_value`` (how many eigenvalues it gives depends on their values).

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import linalg
        >>> a = np.array([[2.0, 1.0], [1.0, 2.0]])
        >>> wg.grad(lambda a: linalg.eigh(a, eigvals_only=True)[1])(a).round(6).tolist()
        [[0.5, 0.5], [0.5, 0.5]]

        A Hermitian one: the gradient of an eigenvalue is conj(v vᴴ), v its eigenvector:

        >>> h = np.array([[1.0, 1j], [-1j, 1.0]])                 # eigenvalues 0 and 2
        >>> w, v = linalg.eigh(h)
        >>> g = wg.grad(lambda h: linalg.eigvalsh(h)[1])(h)
        >>> bool(np.allclose(g, np.conj(np.outer(v[:, 1], v[:, 1].conj())))), w.tolist()
        (True, [0.0, 2.0])

        Two masses on springs, K v = ω² M v: the squared frequencies and mass-normalised
        modes, and how the lower frequency² moves with each mass, -ω² v_j²:

        >>> k = np.array([[2.0, -1.0], [-1.0, 1.0]])
        >>> m = np.array([1.0, 2.0])
        >>> w, v = linalg.eigh(k, np.diag(m))
        >>> w.round(6).tolist()                                    # (5 ∓ √17)/4
        [0.219224, 2.280776]
        >>> bool(np.allclose(v.T @ np.diag(m) @ v, np.eye(2)))
        True
        >>> lowest = lambda m: linalg.eigh(k, wg.numpy.diag(m), eigvals_only=True)[0]
        >>> bool(np.allclose(wg.grad(lowest)(m), -w[0] * v[:, 0] ** 2))
        True
    """
    if subset_by_value is not None:
        raise NotImplementedError("scipy.linalg.eigh(..., subset_by_value=...) is not "
                                  "supported on traced values (how many eigenvalues it gives "
                                  "depends on their values): use subset_by_index")
    a = _wnp.asarray(a)
    if not _is_square(a):
        raise ValueError('expected square "a" matrix')
    params = {} if lower else {"UPLO": "U"}
    if b is not None:
        b = _generalized_input(a, b, type)
        if type != 1:
            params["type"] = int(type)
    if driver is not None:
        params["driver"] = driver
    if subset_by_index is not None:
        lo, hi = (operator.index(i) for i in subset_by_index)
        n = a.shape[-1]
        if not 0 <= lo <= hi < n:
            raise ValueError(f"Requested eigenvalue indices are not valid. Valid range is "
                             f"[0, {n - 1}] and start <= end, but start={lo}, end={hi} is "
                             "given")
        params["subset"] = (lo, hi)
    if b is not None:
        if eigvals_only:
            return _P.gen_eigh_values(a, b, values_only=True, **params)
        return _P.gen_eigh_values(a, b, **params), _P.gen_eigh_vectors(a, b, **params)
    if eigvals_only:
        return _P.eigh_values(a, values_only=True, **params)
    return _P.eigh_values(a, **params), _P.eigh_vectors(a, **params)


def _generalized_input(a, b, type):
    """b as an array, after SciPy's checks of b and `type` (and the batch shapes')."""
    b = _wnp.asarray(b)
    if not _is_square(b):
        raise ValueError('expected square "b" matrix')
    if b.shape[-1] != a.shape[-1]:
        raise ValueError(f"wrong b dimensions {b.shape[-2:]}, should be {a.shape[-2:]} "
                         f"(a has shape {a.shape}, b has shape {b.shape})")
    _batches("eigh", (a.shape, 2), (b.shape, 2))
    if type not in (1, 2, 3):
        raise ValueError('"type" keyword only accepts 1, 2, and 3.')
    return b


@_scipy_unless_traced
def eigvalsh(a, b=None, *, lower=True, overwrite_a=False, overwrite_b=False, type=1,
             check_finite=True, subset_by_index=None, subset_by_value=None, driver=None):
    """The eigenvalues of a symmetric or Hermitian matrix (of A v = λ B v with `b`),
    ascending:
    ``eigh(..., eigvals_only=True)``.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import linalg
        >>> wg.grad(lambda a: linalg.eigvalsh(a).sum())(np.diag([1.0, 2.0])).tolist()  # tr
        [[1.0, 0.0], [0.0, 1.0]]
    """
    return eigh(a, b, lower=lower, eigvals_only=True, type=type,
                subset_by_index=subset_by_index, subset_by_value=subset_by_value,
                driver=driver)


# ---- block matrices ----------------------------------------------------------------------------
@_scipy_unless_traced
def block_diag(*arrs):
    """The block-diagonal matrix of the arguments (a 1-D one is a row, a number a 1×1
    block; leading batch axes broadcast): compositions of concatenations, so it is linear
    and each block's cotangent is its block of the result's.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy import linalg
        >>> linalg.block_diag(np.ones((1, 2)), 2.0).tolist()
        [[1.0, 1.0, 0.0], [0.0, 0.0, 2.0]]
        >>> wg.grad(lambda x: (linalg.block_diag(x, x) ** 2).sum())(np.ones(2)).tolist()
        [4.0, 4.0]
    """
    blocks = [_at_least_2d(x) for x in (arrs or ([],))]
    batch = _batches("block_diag", *[(x.shape, 2) for x in blocks])
    dtype = _np.result_type(*[x.dtype for x in blocks])
    width = sum(x.shape[-1] for x in blocks)
    rows, before = [], 0
    for x in blocks:
        r, c = x.shape[-2:]
        row = [_wnp.zeros(batch + (r, before), dtype), _wnp.broadcast_to(x, batch + (r, c)),
               _wnp.zeros(batch + (r, width - before - c), dtype)]
        rows.append(_wnp.concatenate(row, axis=-1))
        before += c
    return _wnp.concatenate(rows, axis=-2)


# SciPy's other functions: SciPy's on plain values, a clear error on traced ones
__getattr__ = _rest_of(_sl, globals())
