"""The few primitives `wengert.lax.linalg` (JAX's ``jax.lax.linalg``) needs beyond those of
`wengert.primitives.linalg` and `.scipy_linalg`: everything else there is written with
existing primitives.

* ``schur_t`` and ``schur_q``: the Schur form T and the Schur vectors Q of A = Q T Qᴴ,
  SciPy's (LAPACK's gees: the real Schur form, quasi-triangular, for a real matrix; the
  complex one for a complex matrix), one call for both (`linalg._factorizations`).  They
  have no derivative, as JAX's schur has none: their rules raise NotImplementedError.
* ``qr_pivots``: the column order p of the pivoted QR decomposition A[:, p] = Q R
  (LAPACK's geqp3, through SciPy), int32; piecewise constant, so without a derivative.
  The factors themselves are the QR decomposition of A[:, p], whose rules are qr's.

Each maps over leading (batch) axes, as a matrix function of NumPy's does, and so batches
under `wg.vmap` by calling itself on the stack.  SciPy is imported on first use.

Example:
    >>> import numpy as np
    >>> a = np.array([[1.0, 3.0], [0.0, 2.0]])          # triangular: its own Schur form
    >>> schur_t(a).tolist(), qr_pivots(a).tolist()
    ([[1.0, 3.0], [0.0, 2.0]], [1, 0])
"""
from __future__ import annotations

import numpy as np

from .batching import _same_call
from .linalg import _factorizations
from .registry import defprimitive, float_dtype
from .special import scipy_module


def _per_matrix(fn, a, *shapes_dtypes):
    """fn applied to each matrix of the stack a (leading axes), its results stacked: one
    array per (core shape, dtype) given."""
    a = np.asarray(a)
    batch = a.shape[:-2]
    outs = [np.empty(batch + s, d) for s, d in shapes_dtypes]
    for i in np.ndindex(*batch):
        for out, part in zip(outs, fn(a[i])):
            out[i] = part
    return outs


# ---- Schur -----------------------------------------------------------------------------------
def _schur_np(a):
    a = np.asarray(a)
    dtype = float_dtype(a.dtype)
    output = "complex" if dtype.kind == "c" else "real"
    schur = scipy_module("linalg").schur
    n = a.shape[-1]
    return _per_matrix(lambda m: schur(m.astype(dtype, copy=False), output=output,
                                       check_finite=False), a, ((n, n), dtype), ((n, n), dtype))


def _schur_of(a):
    return _factorizations.of("schur", _schur_np, a)


def _same(args, params):
    return args[0].shape, float_dtype(args[0].dtype)


def _no_schur_derivative(*args, **params):
    raise NotImplementedError(
        "lax.linalg.schur has no derivative (JAX's has none either): use eig or eigh for "
        "eigenvalues with derivatives, or hold the matrix constant with wg.stop_gradient")


schur_t = defprimitive("schur_t", lambda a: _schur_of(a)[0], cost="call", abstract_eval=_same,
                       complex=True,
                       doc="schur_t(a): the Schur form T of A = Q T Qᴴ (real and "
                       "quasi-triangular for a real A, upper triangular for a complex one); "
                       "no derivative.")
schur_q = defprimitive("schur_q", lambda a: _schur_of(a)[1], cost="call", abstract_eval=_same,
                       complex=True,
                       doc="schur_q(a): the unitary Schur vectors Q of A = Q T Qᴴ; no "
                       "derivative.")
for _prim in (schur_t, schur_q):
    _prim.defjvp(_no_schur_derivative)
    _prim.defvjp(_no_schur_derivative)
    _prim.defbatch(_same_call)


# ---- the column order of a pivoted QR ------------------------------------------------------
def _qr_pivots_np(a):
    a = np.asarray(a)
    qr = scipy_module("linalg").qr
    m, n = a.shape[-2:]
    if m == 0 or n == 0:                    # (LAPACK has nothing to order)
        return np.broadcast_to(np.arange(n, dtype=np.int32), a.shape[:-2] + (n,)).copy()
    return _per_matrix(lambda x: (qr(x.astype(float_dtype(x.dtype), copy=False), mode="r",
                                     pivoting=True, check_finite=False)[1],),
                       a, ((n,), np.int32))[0]


qr_pivots = defprimitive(
    "qr_pivots", _qr_pivots_np, cost="cmp", complex=True,
    abstract_eval=lambda args, params: (args[0].shape[:-2] + args[0].shape[-1:],
                                        np.dtype(np.int32)),
    doc="qr_pivots(a): the column order p of the pivoted QR decomposition A[:, p] = Q R "
        "(LAPACK's geqp3), whose R has a non-increasing diagonal; no derivative.")
qr_pivots.defpartials(None)
qr_pivots.defbatch(_same_call)


__all__ = ["schur_t", "schur_q", "qr_pivots"]
