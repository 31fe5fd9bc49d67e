"""wengert.numpy: every function's JVP and VJP against central differences on random
inputs of several shapes (broadcasting, negative axes), second order for smooth ones."""
import math
import warnings
from builtins import sum as builtins_sum

import numpy
import pytest

import wengert as wg
import wengert.numpy as np
from wengert import REGISTRY
from wengert.primitives import array as A, linalg as L, shape as SH
from fd import check_grads, assert_close, fd_jacobian

rng = numpy.random.default_rng(7)


def r(*shape):
    return rng.normal(size=shape)


def pos(*shape):
    return rng.uniform(0.5, 2.0, size=shape)


CASES = {
    # elementwise, with broadcasting
    "add bcast": (lambda x, y: x + y, [r(3, 4), r(4)]),
    "sub bcast": (lambda x, y: x - y, [r(2, 1, 3), r(4, 3)]),
    "mul bcast": (lambda x, y: x * y, [r(3, 1), r(1, 4)]),
    "div bcast": (lambda x, y: x / y, [r(3, 4), pos(3, 1)]),
    "power": (lambda x, y: np.power(x, y), [pos(3, 2), r(2)]),
    "square reciprocal": (lambda x: np.square(x) + np.reciprocal(x), [pos(4)]),
    "unary chain": (lambda x: np.tanh(np.sin(x) * np.exp(x / 3)) + np.log1p(np.abs(x) + 1)
                    + np.arctan2(x, 2.0) + np.sqrt(x * x + 1) + np.expm1(x / 4), [r(2, 3)]),
    "maximum minimum": (lambda x, y: np.maximum(x, y) * np.minimum(x, 2 * y),
                        [r(5), r(5) + 3]),
    "where": (lambda x, y: np.where(x > 0, x * y, y ** 2), [r(6), r(6)]),
    "clip": (lambda x: np.clip(x, -10.0, 10.0) * np.clip(x, None, 10.0), [r(4)]),
    # reductions
    "sum": (lambda x: np.sum(x), [r(3, 4)]),
    "sum axis": (lambda x: np.sum(x, axis=0) * np.sum(x, axis=-1, keepdims=True), [r(3, 3)]),
    "sum axes": (lambda x: x.sum(axis=(0, 2)), [r(2, 3, 4)]),
    "mean": (lambda x: np.mean(x, axis=-2, keepdims=True) ** 2, [r(3, 4)]),
    "prod": (lambda x: np.prod(x, axis=1), [pos(3, 4)]),
    "max": (lambda x: np.max(x, axis=-1) + x.max(), [r(3, 5)]),
    "min": (lambda x: np.min(x, axis=0, keepdims=True) * 2, [r(4, 3)]),
    "var std": (lambda x: np.var(x, axis=1) + np.std(x, axis=0, ddof=1), [r(4, 4)]),
    "numpy's argument order": (
        lambda x: np.sum(x, 0, numpy.float64) + x.mean(0, numpy.float64)
        + x.var(0, numpy.float64, None, 1) + np.std(x, 0, correction=1)
        + x.prod(1, None, None, False, 2.0).sum() + np.max(x, 1, None, False, 0.5).sum()
        + np.sum(x, where=x > 0, initial=1.0) + np.mean(x, where=x < 0), [pos(3, 4) - 1]),
    "argmax argmin astype": (lambda x: x * (np.argmax(x, axis=1)[:, None] == numpy.arange(4))
                             + x.argmin() + x * x.astype(int), [r(3, 4) * 3]),
    "searchsorted": (lambda a, v: v * np.searchsorted(a, v), [numpy.sort(r(6)), r(2, 3)]),
    "logsumexp": (lambda x: np.logsumexp(x, axis=-1) + np.logsumexp(x), [r(3, 4)]),
    # SciPy's scale factors b, broadcasting both ways; zero factors; the sign
    "logsumexp b": (lambda a, b: np.logsumexp(a, b=b) + np.logsumexp(a, -1, b[0], True).sum(),
                    [r(3, 4), pos(3, 4)]),
    "logsumexp b broadcast": (lambda a, b: np.logsumexp(a, -2, b, return_sign=True)[0],
                              [r(3, 1), r(2, 3, 4)]),
    "logsumexp b zeros": (lambda a, b: np.logsumexp(
        a, (0, -1), b * numpy.array([1.0, 0.0])[:, None, None], True), [r(2, 3, 4), pos(2, 1, 4)]),
    "logsumexp return_sign": (lambda a, b: np.logsumexp(a, 0, b, return_sign=True)[0]
                              * np.logsumexp(a, 0, b, return_sign=True)[1]
                              + np.logsumexp(a, return_sign=True)[0], [r(3, 2), r(3, 2)]),
    "cumsum": (lambda x: np.cumsum(x, axis=-1) ** 2 + np.cumsum(x)[-1], [r(3, 4)]),
    # contractions
    "matmul 2d": (lambda a, b: a @ b, [r(3, 4), r(4, 2)]),
    "matmul batch bcast": (lambda a, b: np.matmul(a, b), [r(2, 3, 4), r(4, 5)]),
    "matmul vec mat": (lambda a, b: a @ b, [r(4), r(2, 4, 3)]),
    "matmul mat vec": (lambda a, b: a @ b, [r(2, 3, 4), r(4)]),
    "matmul vec vec": (lambda a, b: np.matmul(a, b), [r(4), r(4)]),
    "dot": (lambda a, b, c: np.dot(a, b) + np.dot(b, c).sum() + a.dot(b).sum(),
            [r(2, 3), r(3), r(3)]),
    "dot nd": (lambda a, b: np.dot(a, b), [r(2, 3, 4), r(5, 4, 2)]),
    "tensordot": (lambda a, b: np.tensordot(a, b, axes=([1, 0], [0, 2])), [r(3, 2, 4),
                                                                          r(2, 5, 3)]),
    "tensordot int": (lambda a, b: np.tensordot(a, b, 2), [r(2, 3, 4), r(3, 4, 2)]),
    "einsum": (lambda a, b: np.einsum("bij,bjk->bik", a, b), [r(2, 3, 4), r(2, 4, 2)]),
    "einsum implicit": (lambda a, b: np.einsum("ij,jk", a, b), [r(3, 4), r(4, 2)]),
    "einsum ellipsis": (lambda a, b: np.einsum("...ij,...jk->...ik", a, b),
                        [r(2, 3, 4), r(4, 2)]),
    # (length-1 axes broadcast against longer ones: the cotangent sums back over them)
    "einsum broadcast ellipsis": (lambda a, b: np.einsum("...i,...i->...", a, b)
                                  + np.einsum("...ij,...jk->...ik", b[:, None], a.T)[0, :, 0],
                                  [r(1, 3), r(2, 3)]),
    "einsum broadcast letter": (lambda a, b: np.einsum("ij,ij->j", a, b), [r(1, 3), r(4, 3)]),
    "einsum sum-out": (lambda a, b: np.einsum("ij,k->i", a, b), [r(3, 4), r(2)]),
    "einsum repeated index": (lambda v, w: np.einsum("ii,ij->j", v, w)
                              + np.einsum("ij,jj->i", w.T, v).sum(), [r(3, 3), r(3, 2)]),
    "outer inner": (lambda a, b: np.outer(a, b).sum(axis=0) * np.inner(a, a), [r(3), r(4)]),
    "trace diag": (lambda a, v: np.trace(a) * np.diag(a) + np.diag(v, 1)[:-1, 1:].sum(0)
                   + np.diag(v)[0], [r(3, 3), r(3)]),
    # shapes
    "reshape order F": (lambda x: np.reshape(x, (3, 4), order="F")
                        * np.ravel(x, "F").reshape(3, 4) + x.reshape(3, 4, order="F"),
                        [r(4, 3)]),
    "reshape ravel": (lambda x: np.reshape(x, (4, -1)) * np.ravel(x).reshape(4, 3), [r(2, 6)]),
    "transpose": (lambda x: np.transpose(x, (2, 0, 1)) + x.T.transpose(0, 2, 1), [r(2, 3, 4)]),
    "swapaxes moveaxis": (lambda x: np.swapaxes(x, 0, -1) * np.moveaxis(x, 0, -1),
                          [r(3, 3, 3)]),
    "squeeze expand": (lambda x: np.expand_dims(np.squeeze(x, 1), -1) * 2, [r(3, 1, 2)]),
    "broadcast_to": (lambda x: np.broadcast_to(x, (2, 3, 4)), [r(3, 1)]),
    "concatenate": (lambda x, y: np.concatenate([x, y, x], axis=-1), [r(2, 3), r(2, 1)]),
    "stack": (lambda x, y: np.stack([x, y], axis=1), [r(2, 3), r(2, 3)]),
    "split": (lambda x: np.split(x, 2, axis=1)[1] * np.split(x, [1], axis=1)[0], [r(3, 4)]),
    "flip roll": (lambda x: np.flip(x, axis=0) + np.roll(x, 2, axis=-1) + np.roll(x, 1),
                  [r(3, 4)]),
    "tile repeat": (lambda x: np.tile(x, (2, 1)).sum(0) + np.repeat(x, 2, axis=0)[::2].sum(0)
                    + np.repeat(x, [1, 2, 0], axis=0).sum(0), [r(3, 2)]),
    "pad": (lambda x: np.pad(x, ((1, 2), (0, 1))) * np.pad(x, ((1, 2), (0, 1)), constant_values=1.0),
            [r(2, 2)]),
    "pad 0-d": (lambda x: np.pad(x * x, 2) + np.pad(x, 1, mode="edge"), [r()]),  # (unchanged)
    "hstack vstack": (lambda x: np.hstack([x, x]).sum() * np.vstack([x, x]), [r(3)]),
    "array of traced": (lambda x: np.array([[x[0], x[1]], [x[1] * 2, 1.0]]), [r(2)]),
    # indexing
    "basic slices": (lambda x: x[1:, ::-2] * x[0, None, :2], [r(3, 4)]),
    "integer arrays": (lambda x: x[numpy.array([0, 2, 2]), 1:] * 2, [r(3, 4)]),
    "repeated index accumulates": (lambda x: x[[0, 0, 1, 0]], [r(3)]),
    "repeated rows accumulate": (lambda x: x[[0, -1, 0]].sum(0)
                                 * x[numpy.array([[2], [0]]), [1, 0]], [r(3, 2, 2)]),
    "boolean mask": (lambda x: x[numpy.array([True, False, True])], [r(3, 2)]),
    "ellipsis": (lambda x: x[..., 1] + x[:, numpy.newaxis, 0, 1], [r(2, 3, 4)]),
    "index updates": (lambda x, v: np.at(x)[1:, 0].set(v) * np.at(x)[numpy.array([0, 2, 0])].max(v[0]),
                      [r(3, 2), r(2)]),
    "iterate": (lambda x: sum(row * i for i, row in enumerate(x)), [r(3, 2)]),
    "sort": (lambda x: np.sort(x, axis=-1) * numpy.arange(4), [r(3, 4)]),
    # linalg
    "inv": (lambda a: np.linalg.inv(a), [r(3, 3) + 3 * numpy.eye(3)]),
    "det": (lambda a: np.linalg.det(a), [r(3, 3) + 2 * numpy.eye(3)]),
    "slogdet": (lambda a: np.linalg.slogdet(a)[1] * np.linalg.slogdet(a)[0],
                [r(2, 3, 3) + 3 * numpy.eye(3)]),
    # (a complex matrix's slogdet, through its real and imaginary parts)
    "slogdet complex": (lambda a: np.linalg.slogdet(a * (1 + 0.5j)).logabsdet
                        + np.imag(np.linalg.slogdet(a + 1j * numpy.eye(3)).sign),
                        [r(3, 3) + 3 * numpy.eye(3)]),
    "solve vec": (lambda a, b: np.linalg.solve(a, b), [r(3, 3) + 3 * numpy.eye(3), r(3)]),
    "solve mat": (lambda a, b: np.linalg.solve(a, b), [r(3, 3) + 3 * numpy.eye(3), r(3, 2)]),
    # batch dimensions broadcast, and each cotangent is summed back to its argument's shape
    "solve batched vec": (lambda a, b: np.linalg.solve(a, b),
                          [r(2, 3, 3) + 3 * numpy.eye(3), r(3)]),
    "solve broadcast b": (lambda a, b: np.linalg.solve(a, b),
                          [r(3, 3) + 3 * numpy.eye(3), r(2, 3, 1)]),
    "solve broadcast both": (lambda a, b: np.linalg.solve(a, b),
                             [r(2, 1, 3, 3) + 3 * numpy.eye(3), r(4, 3, 2)]),
    "cholesky": (lambda a: np.linalg.cholesky(a @ a.T + 3 * numpy.eye(3)), [r(3, 3)]),
    "tensorsolve": (lambda a, b: np.linalg.tensorsolve(a, b),
                    [r(6, 2, 3) + 3 * numpy.eye(6).reshape(6, 2, 3), r(6)]),
    "tensorsolve axes": (lambda a, b: np.linalg.tensorsolve(a, b, axes=(0,)),
                         [numpy.moveaxis(r(2, 2, 4) + 3 * numpy.eye(4).reshape(2, 2, 4), 2, 0),
                          r(2, 2)]),
    "tensorinv": (lambda a: np.linalg.tensorinv(a, ind=1),
                  [r(4, 2, 2) + 3 * numpy.eye(4).reshape(4, 2, 2)]),
    "linalg cross": (lambda a, b: np.linalg.cross(a, b, axis=0), [r(3, 2), r(3, 1)]),
    "norm": (lambda x, m: np.linalg.norm(x) + np.linalg.norm(x, 1) + np.linalg.norm(x, 3)
             + np.linalg.norm(x, np.inf) + np.linalg.norm(m, "fro") + np.linalg.norm(m, 1)
             + np.linalg.norm(m, np.inf) + np.linalg.norm(m, 2)
             + np.linalg.norm(m, axis=0).sum(), [r(4), r(3, 3)]),
    "eigh": (lambda a: (np.linalg.eigh(a + a.T)[0],
                        np.linalg.eigh(a + a.T)[1] ** 2), [r(3, 3)]),
    "eigh upper": (lambda a: (np.linalg.eigvalsh(a + a.T, UPLO="U"),
                              np.linalg.eigh(a + a.T, UPLO="U")[1] ** 2), [r(3, 3)]),
    # (the vector of the largest eigenvalue alone, whose rule needs only that one simple:
    # v vᵀ's other three are 0, as a rotation matrix's quaternion matrix's repeat)
    "top eigenvector": (lambda a, v: (L.top_eigvecsh(np.swapaxes(a, -1, -2) @ a) ** 2,
                                      L.top_eigvecsh(v[:, None] * v[None, :]) ** 2),
                        [r(2, 4, 4), r(4)]),
    # NumPy's other arguments: cholesky's upper, norm's orders and axes, named results
    "cholesky upper": (lambda a: np.linalg.cholesky(a @ a.T + 3 * numpy.eye(3), upper=True)
                       - np.linalg.cholesky(a @ a.T + 3 * numpy.eye(3)).T, [r(3, 3)]),
    "cholesky upper batch": (lambda a: np.linalg.cholesky(
        np.swapaxes(a, -1, -2) @ a + numpy.eye(3), upper=True), [r(2, 4, 3)]),
    "norm vector orders": (lambda x: (
        np.linalg.norm(x, -1, axis=1) + np.linalg.norm(x, 0.5, axis=-1)
        + np.linalg.norm(x, -2.5, 1) + np.linalg.norm(x, numpy.int64(3), -1)
        + np.linalg.norm(x, 0, 1) + np.linalg.norm(x, 2, axis=-1),
        np.linalg.norm(x, 4, axis=0, keepdims=True)), [r(3, 4)]),
    "norm matrix orders": (lambda m, t: np.linalg.norm(m, -1) + np.linalg.norm(m, -np.inf)
                           + np.linalg.norm(m, "f") + np.linalg.norm(t, 2, axis=(2, 0))
                           + np.linalg.norm(t, 1, (-1, 0), True)[0, :, 0]
                           + np.linalg.norm(t, -np.inf, axis=(0, -1))
                           + np.linalg.norm(t, axis=(0, 1)).sum(), [r(3, 3), r(2, 3, 4)]),
    # QR of square, tall and batched matrices, every mode with a derivative
    "qr": (lambda sq, tall, batch, wide: (
        np.linalg.qr(sq).Q, np.linalg.qr(sq).R, np.linalg.qr(tall).Q, np.linalg.qr(tall, "r"),
        np.linalg.qr(batch).Q, np.linalg.qr(batch, mode="r"), np.linalg.qr(sq, "complete").Q,
        np.linalg.qr(wide).Q, np.linalg.qr(wide).R, np.linalg.qr(wide, "complete").R),
        [r(3, 3), r(5, 3), r(2, 4, 2), r(2, 3, 5)]),
    # numpy.linalg's functions built from the differentiable ones
    "matrix_power": (lambda a, t: (np.linalg.matrix_power(a, 3), np.linalg.matrix_power(a, -2),
                                   np.linalg.matrix_power(a, 1), np.linalg.matrix_power(t, 2),
                                   np.linalg.matrix_power(a, 0)),
                     [r(3, 3) + 3 * numpy.eye(3), r(2, 3, 3)]),
    "multi_dot": (lambda v, m, n, w: (np.linalg.multi_dot([v, m, n, w]),
                                      np.linalg.multi_dot([m, n, w]),
                                      np.linalg.multi_dot([v, m, n]),
                                      np.linalg.multi_dot([m.T, m, n, n.T]),
                                      np.linalg.multi_dot([m, n])),
                  [r(3), r(3, 4), r(4, 2), r(2)]),
    "linalg array api": (lambda x, y, t: (
        np.linalg.matmul(x, y), np.linalg.outer(x[0], y[:, 1]), np.linalg.tensordot(x, x),
        np.linalg.tensordot(t, x, axes=([1, 2], [0, 1])), np.linalg.diagonal(t, offset=1),
        np.linalg.trace(t), np.linalg.vecdot(t, x), np.linalg.vecdot(x, t, axis=-2),
        np.linalg.matrix_transpose(t)), [r(3, 4), r(4, 2), r(2, 3, 4)]),
    "vector_norm matrix_norm cond": (lambda x, t, m: (
        np.linalg.vector_norm(x), np.linalg.vector_norm(t, axis=(0, 2), keepdims=True),
        np.linalg.vector_norm(x, ord=3, axis=-1), np.linalg.matrix_norm(t),
        np.linalg.matrix_norm(t, ord="nuc", keepdims=True), np.linalg.cond(m),
        np.linalg.cond(t), np.linalg.cond(m, -2), np.linalg.cond(m, "fro")),
        [r(3, 4), r(2, 3, 4), r(3, 3) + 3 * numpy.eye(3)]),
    "pinv": (lambda tall, wide: (np.linalg.pinv(tall), np.linalg.pinv(wide),
                                 np.linalg.pinv(numpy.ones((2, 1, 1)) * tall[:3, :1])),
             [r(5, 3), r(2, 4)]),
    # singular values of every shape; U and Vh through functions their signs do not change
    "svdvals": (lambda sq, tall, wide, batch: (
        np.linalg.svd(sq, compute_uv=False), np.linalg.svd(tall, compute_uv=False),
        np.linalg.svd(wide, False, False), np.linalg.svdvals(batch)),
        [r(3, 3), r(5, 3), r(2, 4), r(2, 3, 4)]),
    "svd square": (lambda a: _svd_invariants(np.linalg.svd(a)), [r(3, 3)]),
    "svd tall": (lambda a: _svd_invariants(np.linalg.svd(a, full_matrices=False)), [r(5, 3)]),
    "svd wide": (lambda a: _svd_invariants(np.linalg.svd(a, full_matrices=False)), [r(2, 4)]),
    "svd batch": (lambda a: _svd_invariants(np.linalg.svd(a, full_matrices=False)),
                  [r(2, 3, 4)]),
    # full_matrices: the factor without extra vectors (Vh of a tall matrix, U of a wide one)
    "svd full": (lambda tall, wide: (np.linalg.svd(tall).Vh ** 2, np.linalg.svd(tall).S,
                                     np.linalg.svd(wide)[0] ** 2), [r(4, 2), r(2, 3)]),
    "svd hermitian": (lambda a: (_svd_invariants(np.linalg.svd(a + a.T, hermitian=True)),
                                 np.linalg.svd(a + a.T, compute_uv=False, hermitian=True)),
                      [r(3, 3)]),
    "norm singular values": (lambda m, t: np.linalg.norm(m, "nuc") * np.linalg.norm(m, -2)
                             + np.linalg.norm(m, 2) + np.linalg.norm(t, "nuc", (2, 0))
                             + np.linalg.norm(t, -2, (-1, 0), True)[0, :, 0]
                             + np.linalg.norm(t, 2, axis=(0, 1)).sum(), [r(3, 4), r(2, 3, 4)]),
    "linalg of lists of traced values": (lambda x, y: np.linalg.inv([[x + 3, y], [y, 2.0]])
                                         * np.linalg.det([[x, 1.0], [y, 2.0]]), [pos(), pos()]),
    "named results": (lambda a: np.linalg.slogdet(a).logabsdet * np.linalg.slogdet(a).sign
                      + np.linalg.eigh(a + a.T).eigenvalues.sum(), [r(3, 3) + 3 * numpy.eye(3)]),
    # NumPy's other elementwise functions (as autograd has them), broadcasting
    "inverse hyperbolic exp2 log2": (lambda x, p, u: np.arcsinh(x) + np.arccosh(p) * np.arctanh(u)
                                     + np.exp2(x) - np.log2(p), [r(3, 4), 1.2 + pos(4), r(3, 1) / 3]),
    "degrees radians sinc": (lambda x: np.deg2rad(x) * np.rad2deg(x) + np.radians(x)
                             + np.degrees(x) + np.sinc(x), [r(2, 3)]),
    "hypot logaddexp": (lambda x, y: np.hypot(x, y) + np.logaddexp(x, y)
                        * np.logaddexp2(y, 2 * x), [r(3, 4), r(4)]),
    "fmax fmin": (lambda x, y: np.fmax(x, y) * np.fmin(y, x), [r(3, 1), r(4)]),
    "remainder fmod": (lambda x, y: np.remainder(3 * x, y) + np.fmod(3 * x, y) * np.mod(x, 1.5)
                       + x % y, [r(3, 4), r(4) + 3]),
    "nan_to_num real imag angle": (lambda x: np.nan_to_num(x) * np.real(x) + np.conjugate(x)
                                   + np.imag(x) + np.angle(x) + np.real_if_close(x), [r(3)]),
    # NumPy's other structural functions
    "diff": (lambda x, y: np.diff(x).sum(1) + np.diff(x, 2, 0, prepend=1.0, append=y[:1]).sum(1),
             [r(3, 4), r(3)[:, None] * numpy.ones(4)]),
    "gradient": (lambda x: np.gradient(x)[0] * np.gradient(x, 2.0, axis=-1)
                 + np.gradient(x, [0.0, 1.0, 3.0], [0, 1, 2, 4])[1]
                 + np.gradient(x, numpy.arange(4.0), axis=1)
                 + np.gradient(x, 0.5, [0, 1, 3, 4.5], edge_order=2)[1]
                 + np.gradient(x, axis=0, edge_order=2), [r(3, 4)]),
    "pad modes take": (lambda x: np.pad(x, ((1, 4), (2, 0)), mode="reflect")[:5, :3]
                       * np.pad(x, 1, mode="edge")[:5, 1:4] + np.pad(x, 2, mode="wrap")[:5, :3]
                       + np.pad(x, (0, 2), mode="symmetric")[:5, 2:]
                       * np.take(x, [2, 0, 0], axis=1)[:1], [r(3, 3)]),
    "full full_like select": (lambda x: np.full((2, 3), x[1]) * np.full_like(x, x[0] ** 2)
                              + np.select([x < 0, x > 0.5], [x ** 3, np.sin(x)], x * 3),
                              [r(3)]),
    "tril triu": (lambda x, v: np.tril(x, -1) + np.triu(x, 1) * 2 + np.tril(v) * np.triu(v, -1),
                  [r(2, 3, 3), r(3)]),
    "rot90 fliplr flipud": (lambda x, t: np.rot90(x).T + np.rot90(x, 2) + np.rot90(x, -1, (1, 0)).T
                            + np.fliplr(x) * np.flipud(x) + np.rot90(t, 3, (2, 0)).sum((0, 2))[:, None],
                            [r(3, 4), r(2, 3, 4)]),
    "atleast_3d rollaxis": (lambda t, v: np.atleast_3d(v) * np.rollaxis(t, 2, 1)[:1, :, :1]
                            + np.atleast_3d(t[0]) + np.rollaxis(t, -1)[0, 0, 0]
                            + np.atleast_3d(t[0, 0, 0]), [r(2, 3, 4), r(4)]),
    "array_split hsplit vsplit dsplit": (lambda t: np.array_split(t, 3, axis=-1)[0]
                                         * np.dsplit(t, 2)[1] + np.array_split(t, [1, 3], 2)[1][..., :1]
                                         + np.vsplit(t, 2)[1][..., :2] + np.hsplit(t, [2])[1][..., 2:],
                                         [r(2, 3, 4)]),
    "copysign heaviside float_power ldexp": (
        lambda x, y, p: np.copysign(x, y) * np.heaviside(np.round(x), y) + np.float_power(p, x)
        + np.ldexp(x, [[1], [-2], [3]]) + np.isnan(x) * x + np.isinf(y) + np.signbit(x) * y,
        [r(3, 4), r(4), pos(3, 4)]),
    "nansum nanmean nanmax nanmin ptp": (
        lambda x: np.nansum(x, 1) * np.nanmean(x, 0)[:3] + np.nanmax(x, 0)[1:] * np.nanmin(x)
        + np.ptp(x, 1) + np.ptp(x) * np.nansum(x, keepdims=True)[0], [r(3, 4)]),
    "average": (lambda a, w: np.average(a, 1, w) + np.average(a, weights=a * a)
                + np.average(a, 0, returned=True)[0][:3] * np.average(a, (1, 0), w[None] * a,
                                                                      returned=True)[1], [r(3, 4), pos(4)]),
    "median quantile percentile": (
        lambda x: np.median(x, 0)[:3] + np.median(x, 1) * np.median(x)
        + np.quantile(x, 0.3, axis=1) + np.quantile(x, [0.2, 0.9], 0)[1, 1:]
        + np.percentile(x, 35.0, 1, keepdims=True)[:, 0], [r(3, 4)]),
    "trapezoid": (lambda y, x: np.trapezoid(y) + np.trapezoid(y, x, axis=0)[:3]
                  + np.trapezoid(y, y * x[:, None], axis=0)[1:], [r(3, 4), r(3)]),
    "take_along_axis meshgrid polyval": (
        lambda x, p: np.take_along_axis(x, numpy.array([[2, 0, 1, 1]]), 0)
        + np.meshgrid(x[0], x[1, :3])[0] + np.meshgrid(p, x[2], indexing="ij", sparse=True)[1]
        * np.polyval(p, x) + np.polyval(x[0], x[1]), [r(3, 4), r(3)]),
    "cumprod": (lambda x, z: np.cumprod(x, 1) * np.cumprod(z)[:4] + np.cumprod(x, axis=0)
                + numpy.multiply.accumulate(x, axis=1),
                [r(3, 4), numpy.array([1.5, 0.0, -2.0, 0.0, 0.7, 3.0, -1.1])]),
    "cov corrcoef": (lambda x, y: np.cov(x) + np.cov(x, rowvar=False, bias=True)[:3, :3]
                     + np.cov(x[0], y, ddof=0)[0, 1] * np.corrcoef(x) + np.corrcoef(x.T, rowvar=False)
                     + np.corrcoef(x[1], y)[0, 1], [r(3, 4), r(4)]),
    "vander convolve correlate": (
        lambda x, v: np.vander(x, 4) @ np.vander(v, 4, increasing=True).T
        + np.convolve(x, v, "same")[:, None] + np.correlate(x, v, "full")[1:-1, None]
        + np.convolve(v, x, "valid") * np.correlate(v[:2], x, "same")[:3, None], [r(3), r(3)]),
    "interp": (lambda x, fp: np.interp(x, [-2.0, -0.5, 0.1, 1.0, 1.5], fp)
               + np.interp(x * 3, [-1.0, 0.0, 2.0], fp[:3], left=fp[3], right=-fp[4])
               + np.interp(x, [0.5, 1.5, 2.0], fp[2:], period=1.3),
               [numpy.array([-3.0, -1.0, 0.05, 0.3, 1.2, 1.75, 2.5]), r(5)]),
    # (the sample points where they move: increasing, and away from every x)
    "interp in xp": (lambda x, z: np.interp(x, np.cumsum(np.exp(z)) - 2.5,
                                            numpy.array([1.0, -2.0, 0.5, 3.0, 2.0])),
                     [numpy.array([-3.0, -1.1, 0.05, 0.3, 1.2, 2.9]), 0.1 * r(5)]),
    "kron": (lambda a, b: np.kron(a, b) + np.kron(b, a).T, [r(2, 3), r(3, 2)]),
    "kron vector": (lambda a, b: np.kron(a, b), [r(2, 3), r(3)]),
    "cross": (lambda a, b, c: np.cross(a, b) + np.cross(c, a, axisa=0, axisc=0).T
              + np.cross(a, b, axis=-1), [r(2, 3), r(3), r(3, 2)]),
    "partition": (lambda x: np.partition(x, 1, axis=0) * np.partition(x, (0, 2))
                  + np.partition(x, -1, axis=None)[:4], [r(3, 4)]),
    "linspace": (lambda a, b: np.linspace(a, b, 5)[1:] @ np.linspace(b, a, 4, endpoint=False,
                                                                      axis=-1)
                 + np.linspace(a, 2.0, 3, retstep=True)[1], [r(4), r()]),
    # NumPy's array-likes: lists holding traced values where NumPy reads an array
    "array-likes": (lambda x, w: np.sum([x[0], x[1]]) + np.mean([x[0], 2 * x[1]])
                    * np.max([x[2], x[0]]) + np.exp([x[0], x[1]]) + np.add([x[1], x[2]], 1.0)
                    + np.dot([x[0], x[1]], w) + np.where(x[:2] > 0, [x[2], x[1]], 0.0)
                    + np.concatenate([[x[0]], x[1:2]]) + np.linalg.norm([x[0], x[1]])
                    + np.cumsum((x[2], x[0])) + np.diff([x[0], x[1], x[2]])
                    + np.matmul([x[1], x[0]], numpy.eye(2)) + np.kron([x[0], 1.0], [1.0])
                    + np.hypot([x[0], x[1]], x[2]) + np.linspace([x[0], x[1]], 3.0, 4)[1],
                    [r(3), r(2, 2)]),
    # a general matrix's eigenvalues and eigenvectors (complex, NumPy's normalization),
    # by their parts; b has real eigenvalues only
    "eig": (lambda a, b: (np.real(np.linalg.eigvals(a)), np.imag(np.linalg.eigvals(a)),
                          np.real(np.linalg.eig(a).eigenvectors),
                          np.imag(np.linalg.eig(a).eigenvectors),
                          np.real(np.linalg.eig(b).eigenvalues),
                          np.real(np.linalg.eig(b).eigenvectors)),
            [r(4, 4), r(3, 3) * 0.2 + numpy.diag([1.0, 2.0, 3.0])]),
    "det 4x4": (lambda a: np.linalg.det(a), [r(4, 4) + 2 * numpy.eye(4)]),   # (an SVD's Hessian)
}
def _svd_invariants(usv):
    """Functions of svd's factors that do not depend on the sign of a pair of singular
    vectors: U and Vh squared, their products u_i v_iᵀ, and the reconstruction U S Vh."""
    u, s, vh = usv
    k = s.shape[-1]
    u, vh = u[..., :k], vh[..., :k, :]
    return u ** 2, vh ** 2, u[..., :1, :] * np.swapaxes(vh[..., :, -1:], -1, -2), \
        (u * s[..., None, :]) @ vh


SMOOTH_SECOND_ORDER_SKIP = {"max", "min", "where", "clip", "maximum minimum", "sort",
                            "fmax fmin", "partition", "array-likes",
                            "norm", "eigh", "eigh upper", "numpy's argument order",
                            "argmax argmin astype", "norm matrix orders"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_first_and_second_order(name):
    f, args = CASES[name]
    order = 1 if name in SMOOTH_SECOND_ORDER_SKIP else 2
    check_grads(f, *args, order=order)


def test_tensor_solves_cross_and_integer_norms_are_numpys():
    a, b = r(6, 2, 3) + 3 * numpy.eye(6).reshape(6, 2, 3), r(6)
    c = numpy.moveaxis(r(2, 2, 4) + 3 * numpy.eye(4).reshape(2, 2, 4), 2, 0)
    m = numpy.array([[3, -1], [2, 5]])
    for name, args, kw in (("tensorsolve", (a, b), {}),
                           ("tensorsolve", (c, b[:4].reshape(2, 2)), {"axes": (0,)}),
                           ("tensorinv", (a.reshape(3, 2, 6),), {"ind": 2}),
                           ("cross", (r(2, 3), r(3)), {}), ("norm", (m, 1), {}),
                           ("norm", (m, "nuc"), {}), ("norm", (m[0], 3), {})):
        mine, theirs = getattr(np.linalg, name), getattr(numpy.linalg, name)
        arrays = [x for x in args if isinstance(x, numpy.ndarray)]
        rest = args[len(arrays):]
        want = theirs(*args, **kw)
        got = wg.compile(lambda *xs: mine(*xs, *rest, **kw), *arrays)(*arrays)
        assert numpy.asarray(got).dtype == want.dtype, name
        assert_close(got, want, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="3-dimensional vectors"):
        wg.grad(lambda u: np.sum(np.linalg.cross(u, u)))(r(2))
    with pytest.raises(numpy.linalg.LinAlgError, match="prod"):
        wg.grad(lambda a: np.sum(np.linalg.tensorsolve(a, b)))(r(6, 2, 2))
    with pytest.raises(ValueError, match="Invalid ind"):
        wg.grad(lambda a: np.sum(np.linalg.tensorinv(a, ind=0)))(r(2, 2))


def test_piecewise_second_order_where_defined():
    # max/min/sort/where are piecewise linear or smooth within a piece: second order holds
    # away from the switching points, which random inputs avoid
    for name in ("max", "where", "sort", "eigh", "eigh upper", "norm", "norm matrix orders"):
        f, args = CASES[name]
        check_grads(f, *args, order=2, rtol=1e-4, atol=1e-5)


def test_matmul_vjp_is_seed_000s_formula():
    X, Y = r(3, 4), r(4, 2)
    Zbar = r(3, 2)
    _, back = wg.vjp(lambda X, Y: X @ Y, X, Y)
    Xbar, Ybar = back(Zbar)
    assert_close(Xbar, Zbar @ Y.T, rtol=1e-14)
    assert_close(Ybar, X.T @ Zbar, rtol=1e-14)


def test_sum_over_axis_broadcasts_back():
    x = r(3, 4)
    (g,) = wg.vjp(lambda x: np.sum(x, axis=1), x)[1](numpy.array([1.0, 2.0, 3.0]))
    assert_close(g, numpy.repeat([[1.0], [2.0], [3.0]], 4, axis=1))


def test_broadcasting_cotangent_is_summed_to_each_operand():
    x, b = r(5, 3), r(3)
    gx, gb = wg.grad(lambda x, b: np.sum((x + b) ** 2), argnums=(0, 1))(x, b)
    assert gb.shape == (3,)
    assert_close(gb, 2 * (x + b).sum(axis=0))


def test_results_match_numpy_on_plain_arrays():
    x = r(3, 4)
    assert_close(np.logsumexp(x, axis=1), numpy.log(numpy.exp(x).sum(axis=1)))
    assert np.sum(x, axis=0).shape == (4,)
    assert type(np.sin(x)) is numpy.ndarray
    assert np.zeros(3).shape == (3,) and np.eye(2)[0, 0] == 1.0
    assert np.random is numpy.random


def test_numpy_functions_dispatch_on_traced_values():
    x = r(3, 4)
    f_ours = lambda x: np.sum(np.sin(x) * np.mean(x, axis=0))
    f_numpy = lambda x: numpy.sum(numpy.sin(x) * numpy.mean(x, axis=0))
    assert_close(wg.grad(f_numpy)(x), wg.grad(f_ours)(x), rtol=1e-14)
    g = wg.grad(lambda x: numpy.add.reduce(x * x, axis=1).sum() + numpy.maximum(x, 0).sum())(x)
    assert_close(g, 2 * x + (x >= 0))
    t = wg.trace(lambda x: numpy.tanh(x).T @ numpy.ones(3), x)
    assert "tanh" in str(t) and "matmul" in str(t)


def test_methods_and_properties_of_traced_arrays():
    x = r(2, 3)

    def f(x):
        assert x.shape == (2, 3) and x.ndim == 2 and x.size == 6 and len(x) == 2
        return (x.T.sum(axis=0) * x.mean(axis=1)).sum() + x.reshape(3, 2)[0, 1] + x[-1].max()
    check_grads(f, x)


def test_unsupported_functions_raise_a_clear_error():
    x = r(3)
    with pytest.raises(NotImplementedError, match=r"numpy\.lib\.stride_tricks\.as_strided is "
                       "not supported on traced values"):
        wg.grad(lambda x: np.lib.stride_tricks.as_strided(x, (2, 2), (8, 8)).sum())(x)
    with pytest.raises(NotImplementedError, match=r"numpy\.<lambda> \(vectorized\) is not "
                       "supported"):
        wg.grad(lambda x: numpy.frompyfunc(lambda a, b: a * b, 2, 1)(x, x).sum())(x)
    with pytest.raises(NotImplementedError, match="not supported"):
        wg.grad(lambda x: numpy.gcd(x, x).sum())(x)
    with pytest.raises(wg.ConcretizationError, match="NumPy array"):
        wg.grad(lambda x: numpy.asarray(x).sum())(x)
    assert np.setdiff1d(numpy.array([2, 1, 2]), [1]).tolist() == [2]    # plain: NumPy's
    # numpy.emath's functions share numpy's names, not their meaning (emath.log(-1) is
    # iπ): they were taken for numpy.log and gave nan; a Dual reaches them the same way
    for f in (numpy.emath.log, numpy.emath.sqrt):
        with pytest.raises(NotImplementedError, match=rf"numpy\.lib\.scimath\.{f.__name__} "
                           "is not supported on traced values"):
            wg.grad(lambda x: f(x).sum())(x)
        with pytest.raises(NotImplementedError, match="scimath"):
            f(wg.Dual(-1.0, 1.0))


def test_integer_and_bool_traced_arrays_read_by_numpy_are_their_values():
    # an index or a mask has no derivative to lose, so NumPy may read it (autograd's fluid
    # simulation indexes a plain array with floor(x).astype(int)); a float one is refused
    f = r(6)
    x = numpy.array([0.5, 2.7, 4.2])
    def loss(x):
        i = np.floor(x).astype(int)
        return np.sum(f[i] * x + f[:3][numpy.asarray(x > 1.0)].sum() * x)
    want = f[numpy.floor(x).astype(int)] + f[:3][x > 1.0].sum()
    assert_close(wg.grad(loss)(x), want, rtol=1e-15)
    with pytest.raises(wg.ConcretizationError, match="NumPy array"):
        wg.grad(lambda x: numpy.asarray(x * 2).sum())(x)
    with pytest.raises(wg.ConcretizationError, match="read as a NumPy array"):
        wg.trace(lambda x: np.sum(f[np.floor(x).astype(int)] * x), x)


def test_eigh_reads_the_triangle_uplo_names():
    m = r(3, 3)                                    # not symmetric: the triangles differ
    for uplo in ("L", "U"):
        vals, _ = wg.vjp(lambda a: np.linalg.eigvalsh(a, UPLO=uplo), m)
        assert_close(vals, numpy.linalg.eigvalsh(m, UPLO=uplo), rtol=1e-12)
        (w, v), _ = wg.vjp(lambda a: np.linalg.eigh(a, UPLO=uplo), m)
        assert_close(w, numpy.linalg.eigh(m, UPLO=uplo)[0], rtol=1e-12)


# the linear-algebra functions, each with a loss of its outputs for its gradient
LINALG = {
    "inv": lambda a: np.linalg.inv(a),
    "det": lambda a: np.linalg.det(a),
    "slogdet": lambda a: np.linalg.slogdet(a),
    "solve": lambda a: np.linalg.solve(a, a[..., 0]),
    "cholesky": lambda a: np.linalg.cholesky(a),
    "eigvalsh": lambda a: np.linalg.eigvalsh(a),
    "eigh": lambda a: np.linalg.eigh(a),
    "norm 2": lambda a: np.linalg.norm(a, 2),
    "norm nuc -2": lambda a: (np.linalg.norm(a, "nuc"), np.linalg.norm(a, -2, keepdims=True)),
    "svd": lambda a: np.linalg.svd(a),
    "svd thin": lambda a: np.linalg.svd(a[:, :2], full_matrices=False),
    "svd hermitian": lambda a: np.linalg.svd(a, hermitian=True),
    "svdvals": lambda a: np.linalg.svd(a, compute_uv=False),
}


def _linalg_loss(name):
    f = LINALG[name]
    return lambda a: sum(np.sum(out) for out in wg.tree.flatten(f(a))[0])


def _spd(n, dtype=numpy.float64):
    m = r(n, n)
    return (m @ m.T + n * numpy.eye(n)).astype(dtype)


def _dtype_mismatches(graph, *args):
    """The nodes whose recorded dtype is not the dtype of the value they compute."""
    values = graph.evaluate(list(args), outputs=graph.nodes)
    return [(n.label(), n.op.name, n.dtype, numpy.asarray(v).dtype)
            for n, v in zip(graph.nodes, values) if n.dtype != numpy.asarray(v).dtype]


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
@pytest.mark.parametrize("name", sorted(LINALG))
def test_linalg_records_the_dtype_it_computes(name, dtype):
    # eigvalsh's rule said float64 for every input: a float32 matrix's eigenvalues were
    # recorded as f64 although NumPy computes float32
    a = _spd(3, dtype)
    f, loss = LINALG[name], _linalg_loss(name)
    numpys = [numpy.asarray(o).dtype for o in wg.tree.flatten(f(a))[0]]
    abstract = wg.trace(f, wg.ShapeDtype(a.shape, dtype))
    assert [o.dtype for o in abstract.outputs] == numpys
    for graph in (abstract, wg.trace(f, a, abstract=False),
                  wg.trace(wg.grad(loss), wg.ShapeDtype(a.shape, dtype)),
                  wg.trace(wg.grad(loss), a, abstract=False)):
        assert _dtype_mismatches(graph, a) == []
    compiled = wg.compile(f, a)
    assert [numpy.asarray(o).dtype for o in wg.tree.flatten(compiled(a))[0]] == numpys
    assert [o.dtype for o in compiled.graph.outputs] == numpys
    assert wg.grad(loss)(a).dtype == dtype
    # the rules keep the dtype too (their masks promoted float32 derivatives to float64,
    # which an eager gradient casts back but a traced or compiled one did not)
    assert wg.trace(wg.grad(loss), wg.ShapeDtype(a.shape, dtype)).outputs[0].dtype == dtype
    assert wg.compile(wg.grad(loss), a)(a).dtype == dtype
    tangents = wg.jvp(f, (a,), (numpy.eye(3, dtype=dtype),))[1]
    assert [numpy.asarray(t).dtype for t in wg.tree.flatten(tangents)[0]] == numpys


def test_linalg_functions_have_numpys_signatures():
    import inspect
    for name in ("inv", "det", "slogdet", "solve", "cholesky", "eigh", "eigvalsh", "norm",
                 "svd", "svdvals", "qr", "matrix_power", "multi_dot", "matrix_transpose", "matmul",
                 "outer", "tensordot", "diagonal", "trace", "vecdot", "vector_norm",
                 "matrix_norm", "cond", "matrix_rank", "pinv", "lstsq"):
        assert inspect.signature(getattr(np.linalg, name)) == \
            inspect.signature(getattr(numpy.linalg, name)), name


def _linalg_calls():
    """Calls of the linear-algebra functions with every argument NumPy has, some of them
    errors: (expression, arguments)."""
    args = {"a": _spd(3), "m": r(3, 3), "v": r(4), "t": r(2, 3, 4), "b": r(3)}
    calls = ["cholesky(a)", "cholesky(a, upper=True)", "cholesky(a, upper=False)",
             "eigh(a)", "eigh(m, 'U')", "eigh(m, UPLO='u')", "eigvalsh(m, 'l')",
             "eigvalsh(m, UPLO='U')", "eigh(m, 'X')", "inv(a)", "det(a)", "slogdet(a)",
             "solve(a, b)", "solve(a, a)", "norm(m, axis=[0, 1])", "norm(m, 1, (1, 1))",
             "norm(m, 1, axis=(0, 5))", "norm(t, 2, (0, 1, 2))", "norm(m, 2, 1.0)",
             "svd(m)", "svd(t)", "svd(t, False)", "svd(t, True, False)", "svd(a, 0, 1, 1)",
             "svd(t[0].T, full_matrices=False, compute_uv=True)", "svd(a, hermitian=True)",
             "svd(m, compute_uv=False, hermitian=True)", "svd(t, hermitian=True)", "svd(v)",
             "svdvals(t)", "svdvals(m)", "svdvals(v)",
             "qr(m)", "qr(m, 'complete')", "qr(t)", "qr(t, 'r')", "qr(t[0])", "qr(v)",
             "qr(t[0].T, mode='complete')", "qr(t[0], 'r')", "qr(m, 'xyz')",
             "matrix_power(m, 3)", "matrix_power(a, -1)", "matrix_power(m, 0)",
             "matrix_power(m, numpy.int64(2))", "matrix_power(m, 1.5)", "matrix_power(v, 2)",
             "matrix_power(t, 2)", "matrix_power(numpy.zeros((2, 2)), -1)",
             "multi_dot([v[:3], m, a, b])", "multi_dot([m, a, m])", "multi_dot([m])",
             "multi_dot([m, t])", "multi_dot([m, t, m])", "multi_dot([v, m, a])",
             "matrix_transpose(t)", "matrix_transpose(v)", "matmul(m, b)", "matmul(v, m)",
             "outer(v, b)", "outer(m, b)", "tensordot(m, a, axes=1)", "tensordot(t, t, axes=3)",
             "diagonal(t)", "diagonal(t, offset=-1)", "trace(t, offset=1)", "trace(m)",
             "vecdot(m, b)", "vecdot(t, v)", "vecdot(m, v)", "vecdot(t, m.T, axis=-2)",
             "vector_norm(t)", "vector_norm(t, axis=(2, 0), ord=1)",
             "vector_norm(t, axis=1, keepdims=True, ord=inf)", "vector_norm(m, axis=(0, 0))",
             "matrix_norm(t)", "matrix_norm(m, ord=2)", "matrix_norm(t, keepdims=True, ord=-1)",
             "matrix_norm(v)", "cond(m)", "cond(t)", "cond(a, 1)", "cond(a, -inf)",
             "cond(t, 'fro')", "cond(v)", "matrix_rank(m)", "matrix_rank(t)",
             "matrix_rank(a, 0.5)", "matrix_rank(a, hermitian=True)", "matrix_rank(v)",
             "matrix_rank(t, rtol=0.9)", "pinv(m)", "pinv(t)", "pinv(t, 0.5)",
             "pinv(a, hermitian=True)", "pinv(m, rtol=0.5)", "pinv(m, 0.1, rtol=0.1)",
             "pinv(v)", "lstsq(t[0].T, v)", "lstsq(t[0], b[:2])", "lstsq(m, b)",
             "lstsq(m, m)", "lstsq(t[0].T, t[0].T)", "lstsq(t[0].T, v, rcond=0.5)",
             "lstsq(m, v)", "lstsq(v, v)"]
    for x, axes in (("v", [None, 0, -1]), ("m", [None, (0, 1), (1, 0), (-1, 0), 1]),
                    ("t", [None, (2, 0), -1])):
        for axis in axes:
            for ord in (None, "'fro'", "'f'", "'nuc'", "inf", "-inf", 0, 1, -1, 2, -2, 0.5,
                        3, -2.5):
                for keepdims in (False, True):
                    calls.append(f"norm({x}, {ord}, {axis}, {keepdims})")
    return calls, args


def _outcome(call, names, args, traced=False):
    """The result of the call with `names` (a module's), or the exception it raises; with
    `traced`, the arguments are traced values."""
    run = lambda *xs: eval(call, {"inf": numpy.inf, "numpy": numpy},
                           {**dict(zip(sorted(args), xs)), **names})
    xs = [args[n] for n in sorted(args)]
    try:
        return wg.vjp(run, *xs)[0] if traced else run(*xs)
    except Exception as e:                        # (NumPy's errors are part of its behaviour)
        return e


def test_linalg_on_plain_arrays_is_numpy_with_every_argument():
    calls, args = _linalg_calls()
    ours, theirs = vars(np.linalg), vars(numpy.linalg)
    for call in calls:
        got, want = _outcome(call, ours, args), _outcome(call, theirs, args)
        assert type(got) is type(want), call
        if isinstance(want, Exception):
            assert str(got) == str(want), call
            continue
        for g, w in zip(wg.tree.flatten(got)[0], wg.tree.flatten(want)[0]):
            assert type(g) is type(w) and numpy.result_type(g) == numpy.result_type(w), call
            numpy.testing.assert_array_equal(g, w, err_msg=call)


def test_linalg_on_traced_values_takes_every_argument():
    # (cholesky's upper was a TypeError, an axis out of range was taken modulo the number of
    # dimensions, lowercase UPLO and norm's 'f', -1 and -inf orders were refused, and
    # eigh and slogdet gave plain tuples)
    calls, args = _linalg_calls()
    for call in calls:
        want = _outcome(call, vars(numpy.linalg), args)
        got = _outcome(call, vars(np.linalg), args, traced=True)
        if isinstance(want, (Exception, tuple)):     # NumPy's error, or its named tuple
            assert type(got) is type(want), call
        if isinstance(want, Exception):
            continue
        for g, w in zip(wg.tree.flatten(got)[0], wg.tree.flatten(want)[0]):
            assert numpy.shape(g) == numpy.shape(w), call
            assert numpy.result_type(g) == numpy.result_type(w), call   # (lstsq's rank)
            assert_close(g, w, rtol=1e-12, atol=1e-12)
    # NumPy's own functions reach these through its dispatch, with every argument
    spd = args["a"]
    upper = wg.vjp(lambda a: numpy.linalg.cholesky(a, upper=True), spd)[0]
    assert_close(upper, numpy.linalg.cholesky(spd, upper=True), rtol=1e-13, atol=1e-13)
    assert_close(wg.grad(lambda a: numpy.linalg.norm(a, -numpy.inf, keepdims=True).sum())(spd),
                 wg.grad(lambda a: np.linalg.norm(a, -np.inf))(spd), rtol=0, atol=0)
    m = args["t"]
    assert_close(wg.grad(lambda a: numpy.linalg.svdvals(a).sum()
                         + numpy.linalg.norm(a[0], "nuc"))(m),
                 wg.grad(lambda a: np.linalg.svd(a, compute_uv=False).sum()
                         + np.linalg.norm(a[0], "nuc"))(m), rtol=0, atol=0)
    usv = wg.vjp(lambda a: numpy.linalg.svd(a, False), m)[0]
    assert type(usv) is type(numpy.linalg.svd(m))


def test_linalg_arguments_without_a_rule_are_named_on_traced_values():
    v = r(3)
    with pytest.raises(NotImplementedError, match=r"numpy\.linalg\.norm\(\.\.\., "
                                                  r"ord=1j\) is not supported"):
        wg.grad(lambda v: np.linalg.norm(v, 1j))(v)


@pytest.mark.parametrize("name", ["cholesky", "cholesky upper", "eigh", "eigh upper",
                                  "eigvalsh", "svd hermitian", "svdvals hermitian"])
def test_symmetric_derivatives_are_one_linear_map_for_every_tangent(name):
    # cholesky's and eigh's VJPs give the symmetric derivative, but their JVPs read a
    # tangent's asymmetric part too: wg.jvp disagreed with wg.vjp off symmetric tangents
    f = {"cholesky": lambda a: np.linalg.cholesky(a),
         "cholesky upper": lambda a: np.linalg.cholesky(a, upper=True),
         "eigh": lambda a: np.linalg.eigh(a).eigenvectors,
         "eigh upper": lambda a: np.linalg.eigh(a, "U").eigenvectors,
         "eigvalsh": lambda a: np.linalg.eigvalsh(a),
         "svd hermitian": lambda a: (np.linalg.svd(a, hermitian=True).U
                                     * np.linalg.svd(a, hermitian=True).Vh.T),
         "svdvals hermitian": lambda a: np.linalg.svd(a, False, False, True)}[name]
    a, v = _spd(3), r(3, 3)                        # v is not symmetric
    _, t = wg.jvp(f, (a,), (v,))
    assert_close(t, wg.jvp(f, (a,), ((v + v.T) / 2,))[1], rtol=1e-12, atol=1e-12)
    ct = r(*numpy.shape(t))
    (g,) = wg.vjp(f, a)[1](ct)
    assert_close(g, g.T, rtol=1e-12, atol=1e-12)
    assert_close(numpy.sum(ct * t), numpy.sum(g * v), rtol=1e-10, atol=1e-12)


# ---- the singular value decomposition ----------------------------------------------------------
SVD_SHAPES = [(3, 3), (5, 3), (3, 5), (2, 4, 3), (3, 2, 4)]


def _thin_factors(a):
    u, s, vh = numpy.linalg.svd(a, full_matrices=False)
    return u, s, numpy.swapaxes(vh, -1, -2)


@pytest.mark.parametrize("shape", SVD_SHAPES)
def test_svd_values_are_numpys(shape):
    a = r(*shape)
    for dtype in (numpy.float64, numpy.float32):
        a = a.astype(dtype)
        for kw in ({}, {"full_matrices": False}, {"compute_uv": False}):
            got = wg.vjp(lambda a: np.linalg.svd(a, **kw), a)[0]
            want = numpy.linalg.svd(a, **kw)
            assert type(got) is type(want)
            for g, w in zip(wg.tree.flatten(got)[0], wg.tree.flatten(want)[0]):
                assert g.shape == w.shape and g.dtype == w.dtype == dtype
                tol = 1e-12 if dtype == numpy.float64 else 1e-5
                assert_close(g, w, rtol=tol, atol=tol)
        assert wg.grad(lambda a: np.linalg.svdvals(a).sum())(a).dtype == dtype
        assert wg.trace(wg.grad(lambda a: np.sum(np.linalg.svd(a, False)[0][..., 0] ** 2)),
                        wg.ShapeDtype(shape, dtype)).outputs[0].dtype == dtype
    assert type(np.linalg.svd(a)) is type(numpy.linalg.svd(a))           # plain: NumPy's


@pytest.mark.parametrize("shape", SVD_SHAPES)
def test_gradient_of_the_nuclear_norm_is_u_vt(shape):
    a = r(*shape)
    u, s, v = _thin_factors(a)
    nuc = lambda a: np.sum(np.linalg.svd(a, compute_uv=False))
    assert_close(wg.grad(nuc)(a), u @ numpy.swapaxes(v, -1, -2), rtol=1e-12, atol=1e-12)
    if a.ndim == 2:
        assert_close(wg.grad(lambda a: np.linalg.norm(a, "nuc"))(a), u @ v.T,
                     rtol=1e-12, atol=1e-12)
        # the largest and smallest singular values: their own pair of singular vectors
        assert_close(wg.grad(lambda a: np.linalg.norm(a, 2))(a), numpy.outer(u[:, 0], v[:, 0]),
                     rtol=1e-12, atol=1e-12)
        assert_close(wg.grad(lambda a: np.linalg.norm(a, -2))(a),
                     numpy.outer(u[:, -1], v[:, -1]), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)])
def test_second_derivatives_of_the_nuclear_norm(shape):
    # against central differences of the closed-form gradient U Vᵀ (NumPy's own SVD)
    a, t = r(*shape), r(*shape)
    closed = lambda a: (lambda u, s, v: u @ v.T)(*_thin_factors(a))
    eps = 1e-6
    fd = (closed(a + eps * t) - closed(a - eps * t)) / (2 * eps)
    nuc = lambda a: np.linalg.norm(a, "nuc")
    assert_close(wg.hvp(nuc)(a, t), fd, rtol=1e-5, atol=1e-6)
    assert_close(wg.grad(lambda a: np.sum(wg.grad(nuc)(a) * t))(a), fd, rtol=1e-5, atol=1e-6)
    H = wg.hessian(nuc)(a)
    n = a.size
    assert_close(H.reshape(n, n), H.reshape(n, n).T, rtol=1e-10, atol=1e-10)
    assert_close(H, wg.jacfwd(wg.grad(nuc))(a), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("shape", SVD_SHAPES)
def test_svd_jvp_is_the_transpose_of_its_vjp(shape, full):
    # <JVP(t), c> = <t, VJP(c)> for all three factors at once (the same factors on both
    # sides, so no sign ambiguity); full_matrices=True only where U and Vh have no extra
    # vectors
    if full and shape[-1] != shape[-2]:
        return
    a, t = r(*shape), r(*shape)
    f = lambda a: np.linalg.svd(a, full_matrices=full)
    out, tan = wg.jvp(f, (a,), (t,))
    cts = tuple(r(*numpy.shape(o)) for o in out)
    (g,) = wg.vjp(f, a)[1](type(out)(*cts))
    lhs = sum(numpy.sum(c * x) for c, x in zip(cts, tan))
    assert_close(lhs, numpy.sum(g * t), rtol=1e-10, atol=1e-10)


def test_svd_of_full_matrices_differentiates_the_factor_without_extra_vectors():
    # a tall matrix's Vh (and a wide one's U) is the same with full_matrices=True; the rules
    # take the other factor from the thin decomposition, which relies on LAPACK's full
    # factors extending its thin ones with the same signs
    for shape in [(4, 2), (2, 4), (40, 3), (3, 40), (2, 30, 4)]:
        a = r(*shape)
        k = min(shape[-2:])
        full, thin = numpy.linalg.svd(a), numpy.linalg.svd(a, full_matrices=False)
        assert_close(full.U[..., :k], thin.U, rtol=0, atol=1e-12)
        assert_close(full.Vh[..., :k, :], thin.Vh, rtol=0, atol=1e-12)
        ok = "Vh" if shape[-2] > shape[-1] else "U"
        check_grads(lambda a: getattr(np.linalg.svd(a), ok) ** 2, a)


def test_linalg_functions_built_from_others():
    # multi_dot multiplies in the cheapest order: (AB)C here costs 10*100*5 + 10*5*50, where
    # A(BC) would cost 100*5*50 + 10*100*50
    A, B, C = r(10, 100), r(100, 5), r(5, 50)
    g = wg.trace(lambda A, B, C: np.linalg.multi_dot([A, B, C]), A, B, C)
    first = [n for n in g.nodes if n.op.name == "matmul"][0]
    assert [x.shape for x in first.args] == [(10, 100), (100, 5)]
    assert_close(g(A, B, C), numpy.linalg.multi_dot([A, B, C]), rtol=1e-12)
    # matrix_power(a, 0) is the identity: a constant, its derivative zero
    a = r(3, 3)
    assert_close(wg.grad(lambda a: np.linalg.matrix_power(a, 0).sum())(a), numpy.zeros((3, 3)))
    # pinv of a full-rank matrix is (AᵀA)⁻¹Aᵀ: so are its derivatives
    t = r(5, 3)
    ct = r(3, 5)
    assert_close(wg.vjp(np.linalg.pinv, t)[1](ct)[0],
                 wg.vjp(lambda t: np.linalg.inv(t.T @ t) @ t.T, t)[1](ct)[0], rtol=1e-9)
    # lstsq, eagerly (its residuals exist or not by the rank's value: without values, as
    # in wg.trace, it cannot tell)
    check_grads(lambda tall, wide, b: (
        np.linalg.lstsq(tall, b)[0], np.linalg.lstsq(tall, b)[1],
        np.linalg.lstsq(wide, b[:2])[0], np.linalg.lstsq(tall, numpy.ones((5, 2)) * b[:, None])[1]),
        t, r(2, 4), r(5))
    with pytest.raises(wg.ConcretizationError):
        wg.trace(lambda a: np.linalg.lstsq(a, numpy.ones(5))[0], t)
    assert wg.trace(lambda a: np.linalg.matrix_rank(a), t)(t) == 3        # traced: a node
    # NumPy 2's top-level vecdot and matrix_transpose are linalg's, by NumPy's dispatch too
    for ns in (np, numpy):
        check_grads(lambda t: (ns.vecdot(t, t), ns.matrix_transpose(t)), t)


def test_qr_closed_forms_errors_and_one_factorization(monkeypatch):
    a, w = r(5, 3), r(5, 3)
    # QR = A, so the derivative of <W, QR> is W; QᵀQ = I, so that of |Q|² is zero (tall
    # and wide matrices alike)
    for a_, w_ in ((a, w), (a.T, w.T)):
        assert_close(wg.grad(lambda a: np.sum(w_ * (np.linalg.qr(a).Q @ np.linalg.qr(a).R)))(a_),
                     w_, rtol=1e-10, atol=1e-12)
        assert_close(wg.grad(lambda a: np.sum(np.linalg.qr(a).Q ** 2))(a_),
                     numpy.zeros(a_.shape), atol=1e-12)
    calls = []
    qr = numpy.linalg.qr
    monkeypatch.setattr(numpy.linalg, "qr", lambda a, *args, **kw: (
        calls.append(1), qr(a, *args, **kw))[1])
    L._factorizations.entries.clear()               # (a's QR is kept from the above)
    wg.grad(lambda a: np.sum(np.linalg.qr(a).Q * np.linalg.qr(a).R[0, 0]))(a)
    assert len(calls) == 1                          # forward pass and rules share it
    monkeypatch.undo()
    with pytest.raises(NotImplementedError, match="use mode='reduced'"):
        wg.grad(lambda a: np.sum(np.linalg.qr(a, "complete").Q))(a)
    with pytest.raises(NotImplementedError, match="mode='raw'"):
        wg.grad(lambda a: np.sum(np.linalg.qr(a, "raw")[0]))(a)
    assert type(wg.vjp(lambda a: numpy.linalg.qr(a), a)[0]) is type(numpy.linalg.qr(a))


def test_det_has_its_derivative_at_singular_matrices():
    # the cofactor matrix, by minors: det's gradient everywhere (inv raises at these)
    def minors(a):
        n = a.shape[-1]
        return numpy.array([[(-1) ** (i + j) * numpy.linalg.det(
            numpy.delete(numpy.delete(a, i, 0), j, 1)) for j in range(n)] for i in range(n)])
    rank2 = numpy.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    for a in (rank2, numpy.diag([1.0, 0.0, 0.0]), numpy.zeros((3, 3)), r(3, 3)):
        assert_close(wg.grad(np.linalg.det)(a), minors(a), rtol=1e-12, atol=1e-12)
    batch = numpy.stack([rank2, r(3, 3)])
    g = wg.grad(lambda a: np.sum(np.linalg.det(a)))(batch)
    assert_close(g, numpy.stack([minors(b) for b in batch]), rtol=1e-12, atol=1e-12)
    # along a direction, against central differences of NumPy's det
    v, h = r(3, 3), 1e-6
    fd = (numpy.linalg.det(rank2 + h * v) - numpy.linalg.det(rank2 - h * v)) / (2 * h)
    assert_close(numpy.sum(wg.grad(np.linalg.det)(rank2) * v), fd, rtol=1e-6)
    assert_close(wg.jvp(np.linalg.det, (rank2,), (v,))[1], fd, rtol=1e-6)


def _det_series(a, b):
    """det(A + tB)'s coefficients, closed forms: det A, tr(C(A)ᵀB), tr(C(B)ᵀA), det B for
    3x3 (C the cofactor matrix, by minors); det A, tr(C(A)ᵀB), det B for 2x2."""
    def cof(m):
        n = m.shape[-1]
        if n == 1:
            return numpy.ones((1, 1))
        return numpy.array([[(-1) ** (i + j) * numpy.linalg.det(
            numpy.delete(numpy.delete(m, i, 0), j, 1)) for j in range(n)] for i in range(n)])
    d = numpy.linalg.det
    if a.shape[-1] == 1:
        return [a[0, 0], b[0, 0]]
    if a.shape[-1] == 2:
        return [d(a), numpy.sum(cof(a) * b), d(b)]
    return [d(a), numpy.sum(cof(a) * b), numpy.sum(cof(b) * a), d(b)]


@pytest.mark.parametrize("n", [1, 2, 3])
def test_det_to_every_order_at_and_next_to_singular_matrices(n):
    """Up to 3x3 det's Taylor series is its closed form at singular matrices (rank n-1,
    n-2 and 0) and at matrices 1e-10 from them, where inv's rule lost every digit, and
    its Hessian is the central difference of its (exact) gradient."""
    u, w = r(n, 1), r(1, n)
    points = [u @ w, u @ w + 1e-10 * numpy.eye(n), numpy.zeros((n, n)), r(n, n)]
    if n == 3:
        points.append(numpy.diag([2.0, 0.0, 0.0]))
    for a in points:
        b = r(n, n)
        want = _det_series(a, b)
        got = wg.taylor(np.linalg.det, a, b, order=n + 1)
        assert_close(got, want + [0.0], rtol=1e-12, atol=1e-12)
        # forward over forward, reverse over reverse, against the series
        second = wg.jvp(lambda m: wg.jvp(np.linalg.det, (m,), (b,))[1], (a,), (b,))[1]
        assert_close(second, 2 * want[2] if n > 1 else 0.0, rtol=1e-12, atol=1e-12)
        hess = wg.hessian(np.linalg.det)(a)
        assert_close(numpy.einsum("ijkl,ij,kl->", hess, b, b), second, rtol=1e-12, atol=1e-12)
        h = 1e-6
        g = wg.grad(np.linalg.det)
        assert_close(numpy.einsum("ijkl,kl->ij", hess, b), (g(a + h * b) - g(a - h * b)) / (2 * h),
                     rtol=1e-6, atol=1e-8)
    # batched, complex, and under vmap
    a = numpy.stack([u @ w, r(n, n)]) + 1j * numpy.stack([r(n, n), u @ w])
    b = r(2, n, n) + 1j * r(2, n, n)
    want = numpy.array([_det_series(x, y) for x, y in zip(a, b)]).T
    second = wg.jvp(lambda m: wg.jvp(np.linalg.det, (m,), (b,))[1], (a,), (b,))[1]
    numpy.testing.assert_allclose(second, 2 * want[2] if n > 1 else 0 * want[0], rtol=1e-12,
                                  atol=1e-12)
    # float32 and complex64 stay in their precision, at every order
    a32, b32 = points[-1].astype(numpy.float32), r(n, n).astype(numpy.float32)
    assert wg.hvp(np.linalg.det)(a32, b32).dtype == numpy.float32
    assert {numpy.asarray(c).dtype for c in wg.taylor(np.linalg.det, a32, b32, order=n + 1)} \
        == {numpy.dtype(numpy.float32)}
    a64, b64 = a32.astype(numpy.complex64), b32.astype(numpy.complex64)
    assert wg.jvp(lambda m: wg.jvp(np.linalg.det, (m,), (b64,))[1], (a64,), (b64,))[1].dtype \
        == numpy.complex64
    assert_close(wg.vmap(wg.hessian(lambda m: np.linalg.det(m).real))(a.real),
                 numpy.stack([wg.hessian(lambda m: np.linalg.det(m).real)(x) for x in a.real]),
                 rtol=1e-14, atol=1e-14)


def _exact_det_series(a, b):
    """det(A + tB)'s coefficients in t, exactly (SymPy, on the floats' exact values)."""
    import sympy
    t = sympy.Symbol("t")
    m = sympy.Matrix(a.shape[0], a.shape[1],
                     lambda i, j: sympy.Rational(a[i, j]) + t * sympy.Rational(b[i, j]))
    poly = sympy.Poly(m.det(method="berkowitz"), t)
    return [float(poly.coeff_monomial(t ** k)) for k in range(a.shape[0] + 1)]


def test_det_to_fourth_order_by_nested_grad():
    # the fourth nested grad of det (4x4 up) reached the third derivative's circle of
    # points, whose sum had an int axis: a TypeError in sum's reverse rule
    a, v = r(4, 4), r(4, 4)
    d = lambda t: np.linalg.det(a + t * v)
    series = wg.taylor(d, 0.3, 1.0, order=4)
    for k in range(1, 5):
        d = wg.grad(d)
        assert_close(d(0.3), math.factorial(k) * series[k], rtol=1e-10)


@pytest.mark.parametrize("n", [4, 5])
def test_det_derivatives_at_and_next_to_singular_matrices_from_4x4(n):
    """From 4x4 up det's Hessian comes from an SVD (cofactor_derivative), and its
    derivatives from that around a circle: the Taylor coefficients of det(A + tB) to
    fourth order at matrices of rank n-1, n-2 and 0 and 1e-10 from them, where the
    inv-based rule raised or lost its digits."""
    u, w = r(n, n - 2), r(n - 2, n)
    points = [r(n, n - 1) @ r(n - 1, n), u @ w, u @ w + 1e-10 * numpy.eye(n),
              numpy.zeros((n, n)), r(n, n)]
    for a in points:
        b = r(n, n)
        c = _exact_det_series(a, b)
        scale = max(1.0, max(abs(x) for x in c))
        second = wg.jvp(lambda m: wg.jvp(np.linalg.det, (m,), (b,))[1], (a,), (b,))[1]
        assert_close(second, 2 * c[2], rtol=1e-12, atol=1e-12 * scale)
        hess = wg.hessian(np.linalg.det)(a)
        assert_close(numpy.einsum("ijkl,ij,kl->", hess, b, b), 2 * c[2], rtol=1e-12,
                     atol=1e-12 * scale)
        h = 1e-6
        g = wg.grad(np.linalg.det)
        assert_close(numpy.einsum("ijkl,kl->ij", hess, b), (g(a + h * b) - g(a - h * b)) / (2 * h),
                     rtol=1e-6, atol=1e-8 * scale)
        # third order: forward, and reverse over reverse over reverse; fourth by Taylor
        third = wg.jvp(lambda m: wg.jvp(lambda q: wg.jvp(np.linalg.det, (q,), (b,))[1], (m,),
                                        (b,))[1], (a,), (b,))[1]
        assert_close(third, 6 * c[3], rtol=1e-10, atol=1e-12 * scale)
        dot = lambda f: (lambda m: np.sum(f(m) * b))
        assert_close(numpy.sum(wg.grad(dot(wg.grad(dot(wg.grad(np.linalg.det)))))(a) * b),
                     6 * c[3], rtol=1e-10, atol=1e-12 * scale)
        assert_close(wg.taylor(np.linalg.det, a, b, order=4), c[:5], rtol=1e-10,
                     atol=1e-12 * scale)
    # the third derivative as a tensor (batched directions) against differences of the
    # Hessian
    hessian = lambda m: numpy.asarray(wg.hessian(np.linalg.det)(m))
    for a in points[:2]:
        fd = (hessian(a + 1e-5 * b) - hessian(a - 1e-5 * b)) / 2e-5
        for tensor in (wg.jacfwd(wg.hessian(np.linalg.det))(a),
                       wg.jacrev(wg.hessian(np.linalg.det))(a)):
            assert_close(numpy.einsum("ijklmn,mn->ijkl", tensor, b), fd, rtol=1e-6,
                         atol=1e-7 * scale)
    # batched (one direction for the batch), complex, under vmap, and float32
    a = numpy.stack([points[1], r(n, n)]) + 1j * numpy.stack([r(n, n), points[0]])
    b = r(n, n) + 1j * r(n, n)
    second = wg.jvp(lambda m: wg.jvp(np.linalg.det, (m,), (numpy.broadcast_to(b, a.shape),))[1],
                    (a,), (numpy.broadcast_to(b, a.shape),))[1]
    h = 1e-5
    fd = [(numpy.linalg.det(x + h * b) - 2 * numpy.linalg.det(x) + numpy.linalg.det(x - h * b))
          / h ** 2 for x in a]
    numpy.testing.assert_allclose(second, fd, rtol=1e-5)       # (complex: not assert_close)
    real = a.real
    assert_close(wg.vmap(wg.hessian(np.linalg.det))(real),
                 numpy.stack([wg.hessian(np.linalg.det)(x) for x in real]), rtol=1e-14,
                 atol=1e-14)
    assert wg.hvp(np.linalg.det)(real[0].astype(numpy.float32),
                                 b.real.astype(numpy.float32)).dtype == numpy.float32


def test_svd_errors_are_clear():
    tall = r(4, 2)
    with pytest.raises(NotImplementedError, match=r"full_matrices=True\)'s U for a 4×2 matrix "
                                                  r"is not defined.*use full_matrices=False"):
        wg.grad(lambda a: np.sum(np.linalg.svd(a).U ** 2))(tall)
    with pytest.raises(NotImplementedError, match=r"Vh for a 2×4 matrix.*full_matrices=False"):
        wg.jvp(lambda a: np.linalg.svd(a).Vh, (tall.T,), (tall.T,))
    with pytest.raises(NotImplementedError, match=r"U for a 4×2"):
        wg.trace(wg.grad(lambda a: np.sum(np.linalg.svd(a)[0])), wg.ShapeDtype((4, 2)))
    # what has a derivative keeps it
    wg.grad(lambda a: np.sum(np.linalg.svd(a).U[:, :2] * 0) + np.sum(np.linalg.svd(a)[1]))
    with pytest.raises(numpy.linalg.LinAlgError, match="1-dimensional array given"):
        wg.grad(lambda v: np.linalg.svd(v, compute_uv=False).sum())(r(3))
    with pytest.raises(numpy.linalg.LinAlgError, match="1-dimensional array given"):
        wg.grad(lambda v: np.linalg.svdvals(v).sum())(r(3))
    with pytest.raises(numpy.linalg.LinAlgError, match="must be square"):
        wg.grad(lambda a: np.linalg.svd(a, hermitian=True).S.sum())(tall)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_svd_derivatives_at_repeated_singular_values():
    a = numpy.diag([2.0, 2.0, 1.0])
    # the singular values' derivatives need no differences: they stay finite
    assert_close(wg.grad(lambda a: np.linalg.norm(a, "nuc"))(a), numpy.eye(3))
    assert_close(wg.grad(lambda a: np.linalg.norm(a, 2))(a), numpy.diag([0.5, 0.5, 0.0]))
    # U's and V's divide by s_j² - s_i², zero for the repeated pair: inf or nan, with
    # NumPy's warning, as in every AD system, and ours
    with pytest.warns(RuntimeWarning) as seen:
        g = wg.grad(lambda a: np.sum(np.linalg.svd(a).U[0] ** 2 * numpy.arange(3.0)))(a)
    assert not numpy.isfinite(g).all()
    said = [str(w.message) for w in seen]
    assert any("divide by zero" in m for m in said)
    assert any("nearly repeated" in m and "loses all of its 16 digits" in m for m in said)


@pytest.mark.parametrize("how", ["eigh", "svd", "scipy eigh"])
def test_vector_derivatives_at_nearly_repeated_values_warn(how):
    # a few ulps apart, as computed ones are that should be equal, 1/(w_j - w_i) turned
    # rounding into a finite answer wrong in every digit, silently: U diag(S) Vh and
    # V diag(w) Vᵀ, which do not depend on the choice of vectors, have the derivative W
    # but gave 0.1-0.2 off (QA; JAX's is as wrong).  Now a warning says so, and only
    # then: the same matrix with its values 1e-6 apart is right to 1e-9 and quiet.
    import warnings
    from scipy.stats import ortho_group
    Q = ortho_group.rvs(4, random_state=1)
    W = rng.normal(size=(4, 4))
    if how == "svd":
        rebuilt = lambda a: np.linalg.svd(a).U * np.linalg.svd(a).S @ np.linalg.svd(a).Vh  # noqa
        want = W
    else:
        import wengert.scipy.linalg as wsl
        eigh = np.linalg.eigh if how == "eigh" else wsl.eigh
        rebuilt = lambda a: eigh(a)[1] * eigh(a)[0] @ eigh(a)[1].T             # noqa: E731
        want = (W + W.T) / 2
    f = lambda a: np.sum(rebuilt(a) * W)                                     # noqa: E731
    for gap, loud in [(0.0, True), (1e-6, False)]:
        a = Q @ numpy.diag([1.0, 1.0 + gap, 3.0, 4.0]) @ Q.T
        a = (a + a.T) / 2
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            g = wg.grad(f)(a)
        said = [str(w.message) for w in seen if "nearly repeated" in str(w.message)]
        assert bool(said) == loud
        if not loud:
            assert_close(g, want, rtol=1e-8, atol=1e-8)


def test_svd_records_one_node_per_factor_and_rules_share_them():
    # a square matrix's factors are recorded with full_matrices=False whatever the call
    # says, so the rules, which use the thin factors, find the user's nodes
    def f(a):
        u, s, vh = np.linalg.svd(a)
        return np.sum(u ** 2 * numpy.arange(3.0)) + np.sum(vh ** 2) + np.linalg.norm(a, "nuc")
    g = wg.trace(wg.grad(f), r(3, 3))
    names = [n.op.name for n in g.nodes]
    assert names.count("svd_u") == names.count("svd_vh") == names.count("svdvals") == 1
    assert "svd_u(a, full_matrices=False)" in str(wg.trace(f, r(3, 3)))


def test_an_eager_gradient_factorizes_each_matrix_once(monkeypatch):
    import gc
    calls = []
    svd, eigh = numpy.linalg.svd, numpy.linalg.eigh
    monkeypatch.setattr(numpy.linalg, "svd", lambda a, *args, **kw: (
        calls.append(("svd", kw.get("compute_uv", True))), svd(a, *args, **kw))[1])
    monkeypatch.setattr(numpy.linalg, "eigh", lambda a, *args: (
        calls.append(("eigh", True)), eigh(a, *args))[1])

    def f(a):
        u, s, vh = np.linalg.svd(a, full_matrices=False)
        w, v = np.linalg.eigh(a.T @ a)
        return np.sum(s) + np.sum(u[:, 0] ** 4) + np.sum(vh[0] ** 4) + np.sum(v[:, -1] ** 4) + w[0]

    a = r(5, 3)
    gc.collect()                    # (other tests' matrices, held in cycles, go first)
    L._factorizations.entries.clear()
    g = wg.grad(f)(a)
    # one SVD and one eigh with vectors (the forward pass and every rule share them); the
    # singular values alone are computed as NumPy's svdvals does, once (U's and Vh's rules
    # ask for them again)
    assert calls.count(("svd", True)) == 1 and calls.count(("eigh", True)) == 1
    assert calls.count(("svd", False)) == 1
    # the factors of a.T @ a went with it when the call ended; a's own stay with a
    assert sorted(k for k, _ in L._factorizations.entries) == ["svd", "svdvals"]
    check_grads(f, a, order=1)
    # an array changed in place is factorized again: the gradient is the new one
    b = r(5, 3)
    a[...] = b
    assert_close(wg.grad(f)(a), wg.grad(f)(b.copy()), rtol=1e-12)
    assert not numpy.allclose(wg.grad(f)(a), g)
    del a
    gc.collect()                    # (check_grads's pullbacks still held it, in cycles)
    assert not L._factorizations.entries


def test_printed_derivative_graphs_show_plain_parameters():
    text = str(wg.trace(wg.grad(lambda x: np.sum(np.sin(x) @ x.T)), r(2, 3)))
    assert "axes=(1, 0)" in text and "np." not in text


def test_shape_errors_name_both_shapes():
    with pytest.raises(ValueError, match=r"\(3, 4\).*\(5,\)|\(3,4\).*\(5,\)"):
        wg.grad(lambda x: np.sum(x @ numpy.ones(5)))(r(3, 4))
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(4,\)"):
        wg.trace(lambda x, y: x + y, r(2, 3), r(4))
    with pytest.raises(numpy.exceptions.AxisError, match="axis 2"):
        wg.grad(lambda x: np.sum(x, axis=2))(r(3, 4))
    # solve reads a 2-D b as matrices, as NumPy 2 does, even against a batch of A
    with pytest.raises(ValueError, match=r"solve: a of shape \(2, 3, 3\) and b of shape \(2, 3\)"):
        wg.grad(lambda a: np.sum(np.linalg.solve(a, numpy.ones((2, 3)))))(r(2, 3, 3))


def test_abstract_tracing_of_array_code():
    f = lambda w, x: np.mean(np.tanh(x @ w) ** 2)
    w, x = r(3, 2), r(5, 3)
    g = wg.trace(wg.grad(f), wg.ShapeDtype((3, 2)), wg.ShapeDtype((5, 3)))
    assert_close(g(w, x), wg.grad(f)(w, x), rtol=1e-14)


def test_jacobians_and_hessians_of_array_functions():
    f = lambda x: np.sum(np.sin(x) * x[::-1]) + np.prod(x[:2])
    x = r(4)
    H = wg.hessian(f)(x)
    assert H.shape == (4, 4)
    assert_close(H, H.T, rtol=1e-12, atol=1e-12)
    assert_close(wg.jacfwd(wg.grad(f))(x), H, rtol=1e-12, atol=1e-12)
    assert_close(wg.jacrev(wg.jacrev(f))(x), H, rtol=1e-12, atol=1e-12)
    J = wg.jacrev(lambda m: m @ numpy.arange(3.0))(r(2, 3))
    assert J.shape == (2, 2, 3)


def _ops_exercised(f, args):
    """Primitive names in the graphs of f, of its pullback and of its JVP."""
    from wengert.tree import flatten
    out = f(*args)
    cts = [numpy.ones(numpy.shape(o)) for o in flatten(out)[0]]
    ct = wg.tree.unflatten(flatten(out)[1], cts)
    names = set()
    for g in (wg.trace(f, *args),
              wg.trace(lambda *a: wg.vjp(f, *a)[1](ct), *args),
              wg.trace(lambda *a: wg.jvp(f, a, a)[1], *args),
              wg.trace(lambda *a: wg.jvp(lambda *b: wg.vjp(f, *b)[1](ct), a, a)[1], *args)):
        names |= {n.op.name for n in g.nodes}
    return names


def test_every_array_primitive_is_exercised_by_these_cases():
    seen = set()
    for f, args in CASES.values():
        seen |= _ops_exercised(f, args)
    declared = {name for name, p in REGISTRY.items() if p.builtin and any(
        p is v for m in (A, L, SH) for v in vars(m).values())}
    assert declared <= seen, f"array primitives no test exercises: {declared - seen}"


# ---- NumPy's signatures and behaviour (bug bash) ------------------------------------------------
def test_reductions_take_numpys_arguments_in_numpys_order():
    # a positional dtype was taken for keepdims: (1, 3) where NumPy gives (3,)
    x = r(2, 3)
    for f in (lambda v: v.sum(0, numpy.float64), lambda v: numpy.sum(v, 0, numpy.float64),
              lambda v: v.mean(0, numpy.float64), lambda v: np.sum(v, 0, float),
              lambda v: v.var(0, numpy.float64), lambda v: v.std(0, numpy.float64, None, 1),
              lambda v: v.max(0, None, True), lambda v: numpy.cumsum(v, 1, numpy.float64),
              lambda v: v.prod(1, numpy.float64, None, True)):
        value = wg.vjp(f, x)[0]
        assert value.shape == f(x).shape
        assert_close(value, f(x), rtol=1e-13)
    # a float dtype is a differentiable cast: float32 in, the cotangent back in float64
    g = wg.grad(lambda v: np.sum(v, dtype=numpy.float32) * 2)(x)
    assert g.dtype == numpy.float64
    assert_close(g, numpy.full((2, 3), 2.0))
    (value, back) = wg.vjp(lambda v: v.mean(0, numpy.float32), x)
    assert value.dtype == numpy.float32
    with pytest.raises(ValueError, match="ddof and correction"):
        wg.grad(lambda v: np.var(v, ddof=1, correction=1))(x)
    # ddof beyond the count: no negative variance, but NumPy's inf (and nan for a zero sum
    # of squares), with its warning
    w = numpy.array([[True, False, True], [True, True, True]])
    for f in (lambda v: np.var(v, axis=0, ddof=3), lambda v: np.std(v, axis=0, ddof=3),
              lambda v: np.var(v, axis=0, ddof=2, where=w)):
        with pytest.warns(RuntimeWarning, match="Degrees of freedom"), \
                numpy.errstate(all="ignore"):
            assert numpy.array_equal(wg.vjp(f, x)[0], f(x), equal_nan=True)
    with pytest.raises(ValueError, match="initial"):
        wg.grad(lambda v: np.max(v, where=v > 0))(x)


def _scipy_logsumexp_calls():
    a, b = r(3, 4), r(3, 4)
    a[0, 1], b[0, 1] = numpy.inf, 0.0                  # a factor 0 masks an inf ...
    a[1, 2], b[1, 2] = numpy.nan, 0.0                  # ... and a nan
    b[2] = -numpy.abs(b[2])                            # a negative sum: nan without the sign
    pairs = [(a, None), (a, b), (r(2, 3, 4), pos(2, 1, 4)), (r(3, 1), r(2, 3, 4)),
             (numpy.array([0.0, 1000.0]), numpy.array([1.0, 0.0])),
             (numpy.array([1.0, 1.0]), numpy.array([1.0, -1.0])),       # the sum is 0
             (numpy.full(3, -numpy.inf), None), (r(4).astype(numpy.float32), 2)]
    for a, b in pairs:
        for axis in (None, 0, -1, (0, -1)):
            if axis not in (None, 0, -1) and numpy.ndim(a) < 2:
                continue
            for keepdims in (False, True):
                for sign in (False, True):
                    yield a, dict(axis=axis, b=b, keepdims=keepdims, return_sign=sign)


def test_logsumexp_is_scipys_with_every_argument_on_plain_and_traced_values():
    special = pytest.importorskip("scipy.special")
    for a, kw in _scipy_logsumexp_calls():
        want = special.logsumexp(a, **kw)
        for got in (np.logsumexp(a, **kw),
                    wg.vjp(lambda a, b: np.logsumexp(a, **{**kw, "b": b}), a, kw["b"])[0]
                    if kw["b"] is not None else
                    wg.vjp(lambda a: np.logsumexp(a, **kw), a)[0]):
            for g, w in zip(wg.tree.flatten(got)[0], wg.tree.flatten(want)[0]):
                assert numpy.shape(g) == numpy.shape(w) and \
                    numpy.asarray(g).dtype == numpy.asarray(w).dtype, kw
                numpy.testing.assert_allclose(g, w, rtol=1e-6 if w.dtype == numpy.float32
                                              else 1e-12, err_msg=str(kw))
    # plain arrays give SciPy's types: a scalar for a full reduction, integers as float64
    assert type(np.logsumexp(numpy.array([1, 2]))) is type(special.logsumexp([1, 2]))
    assert np.logsumexp([1, 2]) == pytest.approx(special.logsumexp([1, 2]), rel=1e-14)
    # (an empty sum is 0: its sign is 0, where SciPy 1.17 says -1)
    assert np.logsumexp(numpy.zeros((0, 2)), axis=0, return_sign=True)[1].tolist() == [0, 0]


def test_logsumexp_derivatives_where_b_is_zero_or_the_sum_negative():
    a, b = numpy.array([0.0, numpy.inf, 1.0, 2.0]), numpy.array([1.0, 0.0, 2.0, 0.0])
    ga, gb = wg.grad(lambda a, b: np.logsumexp(a, b=b), argnums=(0, 1))(a, b)
    s = 1 + 2 * numpy.e
    # a term with factor 0 is left out: no derivative in its a (even an inf one), and its
    # b's is exp(a) / sum, as for any other (inf where a is inf)
    assert_close(ga, [1 / s, 0.0, 2 * numpy.e / s, 0.0], rtol=1e-14)
    assert_close(gb[[0, 2, 3]], numpy.exp(a[[0, 2, 3]]) / s, rtol=1e-14)
    assert gb[1] == numpy.inf
    # a negative sum: nan, and so its derivatives; with the sign, log|sum| and its own
    a, b = numpy.array([0.0, 1.0]), numpy.array([1.0, -1.0])
    f = lambda a, b: np.logsumexp(a, b=b)
    assert numpy.isnan(f(a, b))
    assert all(numpy.isnan(g).all() for g in wg.grad(f, argnums=(0, 1))(a, b))
    signed = lambda a, b: np.logsumexp(a, b=b, return_sign=True)[0]
    assert_close(wg.grad(signed, argnums=(0, 1))(a, b),
                 (b * numpy.exp(a) / (1 - numpy.e), numpy.exp(a) / (1 - numpy.e)), rtol=1e-14)
    # the sign has no derivative
    assert numpy.all(wg.grad(lambda b: np.logsumexp(a, b=b, return_sign=True)[1])(b) == 0)


@pytest.mark.parametrize("call", [
    "sum(x, out=numpy.empty(()))", "x.mean(out=numpy.empty(()))", "np.cumsum(x, 0, None, o)",
    "np.clip(x, 0, 1, o)", "np.dot(x, x.T, o)", "np.round(x, 1, o)",
    "np.matmul(x, x.T, out=o)", "numpy.add(x, 1, out=o)", "np.einsum('ij->i', x, out=o)"])
def test_out_on_traced_values_names_the_function_and_argument(call):
    o = numpy.empty((2, 3))
    ns = {"np": np, "numpy": numpy, "o": o, "sum": numpy.sum}
    with pytest.raises(NotImplementedError, match=r"out=\.\.\."):
        wg.grad(lambda x: np.sum(eval(call, ns, {"x": x})))(r(2, 3))


def test_augmented_assignment_into_a_numpy_array_says_to_make_a_new_one():
    # acc = np.zeros(n); acc += x: a JAX habit (JAX's arrays make += a new array), but
    # NumPy's arrays are written in place, which a traced x cannot be
    def f(x):
        acc = np.zeros(3)
        acc += x
        return np.sum(acc)
    with pytest.raises(NotImplementedError, match=r"write `a = a \+ x`"):
        wg.grad(f)(r(3))

    def g(x):
        acc = np.zeros(3)
        acc = acc + x           # (the spelling the error gives)
        return np.sum(acc ** 2)
    x = r(3)
    assert_close(wg.grad(g)(x), fd_jacobian(g, x, 1e-6), rtol=1e-8)


# x[index] with integers traced without values (a compiled function's argument, here), as
# NumPy's x[index] with their values: a traced x takes one index array, or scalar indices,
# among slices, None and Ellipsis (and plain integers, with scalar ones)
GATHERS = {
    "i": lambda i: (i,), "0, i": lambda i: (0, i), ":, i": lambda i: (slice(None), i),
    "..., i": lambda i: (Ellipsis, i), "i, :, i": lambda i: (i, slice(None), i),
    "None, :, -i": lambda i: (None, slice(None), -i),
    "0, -i, 1:": lambda i: (0, -i, slice(1, None)),
    "array": lambda i: (slice(None), numpy.array([[0, 1], [1, 1]]) + i),
    "array last": lambda i: (Ellipsis, numpy.array([2, 0]) - i),
}


@pytest.mark.parametrize("name", sorted(GATHERS))
def test_traced_integer_indices_without_values_gather(name):
    index = GATHERS[name]
    x = r(2, 3, 4)
    get = lambda x, i: x[index(i)] ** 2                                     # noqa: E731
    fast = wg.compile(get, x, numpy.int64(0))
    for i in (0, 1):
        numpy.testing.assert_array_equal(fast(x, numpy.int64(i)), x[index(i)] ** 2)
        check_grads(lambda x: fast(x, numpy.int64(i)), x, order=2)
        g = wg.compile(wg.grad(lambda x, i: np.sum(get(x, i) ** 2)), x, numpy.int64(0))
        assert_close(g(x, numpy.int64(i)), wg.grad(lambda x: np.sum(get(x, i) ** 2))(x),
                     rtol=1e-14)
    # and batched: one index per example
    xs, ids = r(3, 2, 3, 4), numpy.array([1, 0, 1])
    assert_close(wg.vmap(get)(xs, ids), [x[index(i)] ** 2 for x, i in zip(xs, ids)],
                 rtol=1e-15)


def test_a_loop_counter_indexes_traced_arrays_and_take_gathers_from_numpys():
    x = r(4)
    cubes = lambda x: wg.fori_loop(0, 4, lambda i, s: s + x[3 - i] ** 3 * i, 0.0)  # noqa: E731
    assert_close(cubes(x), builtins_sum(x[3 - i] ** 3 * i for i in range(4)), rtol=1e-14)
    check_grads(cubes, x, order=2)
    table = r(4, 2)
    rows = wg.compile(lambda w, i: np.take(table, i, axis=0) @ w, r(2), numpy.int64(0))
    for i in range(4):
        assert_close(rows(numpy.ones(2), numpy.int64(i)), table[i].sum(), rtol=1e-14)
    # NumPy's placement of an index array with an integer apart from it, and two index
    # arrays together, are refused by name; so is a float (a Python int compiled)
    for call in ("x[0, :, i]", "x[i, i]"):
        with pytest.raises(wg.ConcretizationError, match=r"np\.take|numpy\.take"):
            wg.compile(lambda x, i: eval(call), r(2, 3, 4), numpy.array([0, 1]))
    with pytest.raises(wg.ConcretizationError, match="numpy.int64"):
        wg.compile(lambda x, i: x[i], r(3), 1)


class _Names(dict):
    """The names of a module, for eval."""
    def __init__(self, module):
        super().__init__()
        self.module = module

    def __missing__(self, name):
        try:
            return getattr(self.module, name)
        except AttributeError:
            raise KeyError(name) from None


def test_plain_arrays_get_numpys_functions_with_every_argument():
    x = numpy.arange(6.0).reshape(2, 3) + 1
    m = x > 2
    calls = [
        "pad(numpy.arange(3.), 1, mode='reflect')",
        "reshape(x, (3, 2), order='F')", "reshape(x, shape=(3, 2))",
        "sum(x, dtype=numpy.float32, initial=1.0, where=m)",
        "max(x, initial=10.0, where=m)", "mean(x, dtype=numpy.float32)",
        "std(x, correction=1)", "cumsum(x, dtype=numpy.float32)",
        "concatenate([x, x], dtype=numpy.float32)",
        "stack([x, x], dtype=numpy.float32)", "clip(x, min=1, max=4)",
        "sort(x, kind='stable')", "argsort(x, kind='stable')",
        "array(x, copy=True, ndmin=3)", "einsum('ij,kj', x, x, optimize=True)",
        "zeros_like(x, shape=(4,))", "trace(x, dtype=numpy.float32)",
        "size(x, 1)", "add.reduce(x)", "maximum.accumulate(x, axis=1)",
        "add.outer(x[0], x[0])", "reciprocal(numpy.array([1, 2]))",
        "var(x, 1, None, None, 1)", "argmax(x, axis=0)",
        "round(x / 7, 2)", "logical_and(x, m)", "invert(m)",
        "floor_divide(x, 2)", "asarray([1, 2], dtype=numpy.float32)",
    ]
    for expr in calls:
        ours = eval(expr, {"numpy": numpy, "x": x, "m": m}, _Names(np))
        theirs = eval(expr, {"numpy": numpy, "x": x, "m": m}, _Names(numpy))
        assert type(ours) is type(theirs), expr
        assert numpy.asarray(ours).dtype == numpy.asarray(theirs).dtype, expr
        numpy.testing.assert_array_equal(ours, theirs, err_msg=expr)
    # SciPy's answer for an empty reduction: log(0)
    assert numpy.all(np.logsumexp(numpy.zeros((0, 3)), axis=0) == -numpy.inf)


def test_ufunc_methods_on_traced_values():
    x = r(3, 4)
    check_grads(lambda x: np.add.reduce(x) + np.maximum.reduce(x, axis=1).sum()
                + np.multiply.reduce(x + 3, axis=None) + np.add.accumulate(x)[-1], x, order=1)
    g = wg.grad(lambda x: np.add.reduce(x, axis=1).sum())(x)
    assert_close(g, numpy.ones((3, 4)))
    # every binary ufunc's methods (more in test_numpy_methods.py)
    assert_close(wg.vjp(np.maximum.accumulate, x)[0], numpy.maximum.accumulate(x), rtol=0)
    check_grads(np.maximum.accumulate, x, order=1)
    with pytest.raises(NotImplementedError,
                       match=r"numpy\.maximum\.at changes its first argument in place"):
        wg.grad(lambda x: np.maximum.at(x, [0], 1.0))(x)


@pytest.mark.parametrize("shape", [(0,), (0, 2), (2, 0)])
def test_all_and_any_of_an_empty_array_are_numpys(shape):
    # (as the extremum of the truth values, which an empty array has none of)
    x = numpy.zeros(shape)
    for axis in (None, 0, -1):
        for keepdims in (False, True):
            for name in ("all", "any"):
                got = []

                def f(x):
                    got.append(getattr(np, name)(x > 0, axis, keepdims=keepdims))
                    return np.sum(x)
                wg.grad(f)(x)
                want = getattr(numpy, name)(x > 0, axis, keepdims=keepdims)
                assert numpy.shape(got[0]) == want.shape
                assert numpy.array_equal(got[0], want)


def test_traced_values_have_the_array_methods():
    x = r(3, 4)

    def f(x):
        assert x.argmax() == numpy.argmax(wg.value(x)) and x.argmin(axis=0).shape == (4,)
        assert bool(x.any()) and bool((x > -10).all()) and not bool((x > 10).any())
        assert len(x.nonzero()) == 2 and x.ndim == 2 and x.size == 12
        assert x.real is x and x.conj() is x and not numpy.any(x.imag)
        assert x.astype(int).dtype == numpy.int64 and x.astype(numpy.float32).dtype.itemsize == 4
        assert x.mT.shape == (4, 3) and x.nbytes == 96
        return (x.round(1) + x).sum()
    assert_close(wg.grad(f)(x), numpy.ones((3, 4)))
    for method in ("item", "tolist"):
        with pytest.raises(wg.ConcretizationError, match=rf"x\.{method}\(\) of traced"):
            wg.grad(lambda x: getattr(x, method)())(x)
    with pytest.raises(NotImplementedError, match=r"sort.*in place.*wengert\.numpy\.sort"):
        wg.grad(lambda x: x.sort())(x)
    with pytest.raises(NotImplementedError, match=r"numpy\.ndarray\.byteswap"):
        wg.grad(lambda x: x.byteswap().sum())(x)
    for method in ("partition", "put", "fill", "resize"):
        with pytest.raises(NotImplementedError, match=rf"ndarray\.{method} .* in place"):
            wg.grad(lambda x: getattr(x, method)(1))(x)


@pytest.mark.parametrize("call", [
    lambda x: x.cumprod(axis=1), lambda x: x.take([0, 2, 2], axis=1),
    lambda x: x.compress([True, False, True], axis=0), lambda x: x.ravel().take(5),
    lambda x: x[x[:, 0].argpartition(1)], lambda x: x * x[0].searchsorted(0.1),
    lambda x: numpy.array([[0.0, 5.0], [-5.0, 0.2]]).clip(x[0, 0], x[1, 1]),
    lambda x: (x[2, :3] > 0).astype(int).choose([x[0, :3], x[1, :3]])])
def test_the_array_methods_numpy_code_calls_are_the_functions(call):
    # (these raised "no derivative rule" though the functions have theirs)
    x = r(3, 4)
    assert_close(wg.vjp(call, x)[0], call(x), rtol=0)      # (on a plain x: NumPy's own)
    check_grads(call, x, order=1)


@pytest.mark.parametrize("op,name", [
    (lambda x: x << 1, "left_shift"), (lambda x: 2 >> x, "right_shift"),
    (lambda x: numpy.gcd(x, 4), "gcd")])
def test_integer_functions_of_floats_name_the_numpy_function(op, name):
    with pytest.raises(NotImplementedError, match=rf"numpy\.{name} is not supported"):
        wg.grad(lambda x: np.sum(op(x)))(r(3))


# NumPy's ufuncs with one result, on traced integers and bools (and floats beside them):
# each call's dtype and values must be NumPy's, traced abstractly (wg.trace of ShapeDtypes,
# what wg.compile sees), compiled, eagerly inside a gradient, and under wg.vmap.
_EXACT_DTYPES = ["bool", "int8", "uint16", "int64"]


def _exact_array(dtype, k=0):
    if dtype == "bool":
        return numpy.array([True, False, True, True])
    return (numpy.array([1, 2, 3, 7]) + k).astype(dtype)


def _exact_calls():
    for name in sorted(dir(numpy)):
        uf = getattr(numpy, name)
        if not isinstance(uf, numpy.ufunc) or uf.nout != 1 or not hasattr(np, name) \
                or name in ("matmul", "vecdot", "matvec", "vecmat"):     # (gufuncs: below)
            continue
        if uf.nin == 1:
            combos = [(d,) for d in _EXACT_DTYPES]
        else:
            combos = [(d, d) for d in _EXACT_DTYPES] + [
                ("int8", "uint16"), ("bool", "int64"), ("int8", 3), ("uint16", 2.5),
                ("int64", "float32")]
        for combo in combos:
            yield pytest.param(name, combo, id=f"{name}-{'-'.join(map(str, combo))}")


@pytest.mark.parametrize("name,combo", list(_exact_calls()))
def test_ufuncs_on_traced_integers_and_bools_are_numpys(name, combo):
    npf, wf = getattr(numpy, name), getattr(np, name)
    args = [a if type(a) in (int, float) else
            _exact_array(a, k) if a != "float32" else numpy.linspace(0.5, 2, 4, dtype=a)
            for k, a in enumerate(combo)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = npf(*args)
        except TypeError:
            with pytest.raises((TypeError, NotImplementedError)):
                wg.trace(wf, *[a for a in args if type(a) not in (int, float)])
            return
        traced = [k for k, a in enumerate(args) if type(a) not in (int, float)]

        def f(*xs):
            full = list(args)
            for k, x in zip(traced, xs):
                full[k] = x
            return wf(*full)
        xs = [args[k] for k in traced]
        abstract = wg.trace(f, *[wg.ShapeDtype(x.shape, x.dtype) for x in xs])
        assert abstract.outputs[0].dtype == want.dtype
        for got in (wg.compile(f, *xs)(*xs), abstract(*xs),
                    wg.vmap(f)(*[numpy.stack([x, x]) for x in xs])[1]):
            assert got.dtype == want.dtype
            numpy.testing.assert_array_equal(got, want)
        seen = []           # eagerly, beside a gradient (the integers carry none)
        wg.grad(lambda t: seen.append(f(*xs)) or np.sum(t * t))(1.0)
        assert wg.value(seen[0]).dtype == want.dtype
        numpy.testing.assert_array_equal(wg.value(seen[0]), want)


def test_numpy_ufunc_nodes_print_and_compile_as_numpy_calls():
    i = numpy.arange(6)
    g = wg.trace(lambda i: np.gcd(i, 4) + np.right_shift(i, 1), wg.ShapeDtype((6,), numpy.int64))
    assert "numpy_ufunc(i, 4, ufunc=<ufunc 'gcd'>)" in str(g)
    f = wg.compile(lambda i: np.gcd(i, 4) + np.right_shift(i, 1), i)
    assert "np.gcd(" in f.source and "np.right_shift(" in f.source
    numpy.testing.assert_array_equal(f(i), numpy.gcd(i, 4) + (i >> 1))
    # NumPy's own functions and operators on traced integers: the same nodes
    numpy.testing.assert_array_equal(
        wg.vmap(lambda i: numpy.lcm(i, 6) ^ (i << 2))(i.reshape(3, 2)),
        numpy.lcm(i, 6).reshape(3, 2) ^ (i.reshape(3, 2) << 2))


def test_mixed_integer_and_float_arguments_keep_their_derivative():
    x, n = r(4), numpy.array([1, -2, 0, 3], dtype=numpy.int8)
    s = numpy.array([True, False, True, False])
    for f in (lambda x: np.ldexp(x, n), lambda x: np.copysign(x ** 2 + 1, n - 1),
              lambda x: np.power(x, n.astype(numpy.int64)), lambda x: np.hypot(x, s),
              lambda x: np.arctan2(x, n) + np.logaddexp(s, x), lambda x: np.fmod(x, n + 5)):
        assert f(x).dtype == numpy.float64
        check_grads(f, x, order=2)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16"])
def test_products_of_integers_and_bools_keep_numpys_dtype(dtype):
    a, b = _exact_array(dtype), _exact_array(dtype, 1)[::-1].copy()
    m = numpy.stack([a, b, a])
    for f in (np.matmul, np.vdot, np.linalg.vecdot, lambda u, v: np.dot(m, v),
              lambda u, v: np.vecdot(u, v)):
        npf = {np.matmul: numpy.matmul, np.vdot: numpy.vdot}.get(f)
        want = npf(a, b) if npf is not None else (
            numpy.linalg.vecdot(a, b) if f is np.linalg.vecdot else
            numpy.dot(m, b) if f.__code__.co_names[-1] == "dot" else numpy.vecdot(a, b))
        for got in (wg.compile(f, a, b)(a, b),
                    wg.trace(f, wg.ShapeDtype(a.shape, a.dtype), wg.ShapeDtype(b.shape, b.dtype))(a, b)):
            assert numpy.asarray(got).dtype == want.dtype
            numpy.testing.assert_array_equal(got, want)



def test_boolean_operators_on_traced_comparisons_eager_and_staged():
    x = numpy.array([-1.5, 0.5, 2.0, 0.2])

    def f(x):
        inside = (x > 0) & (x < 1)
        keep = ~inside | ((x > 1) ^ (x > 0))
        return np.sum(np.where(keep, x, 3 * x))
    expected = numpy.where(~((x > 0) & (x < 1)) | ((x > 1) ^ (x > 0)), 1.0, 3.0)
    assert_close(wg.grad(f)(x), expected)
    staged = wg.trace(wg.grad(f), wg.ShapeDtype((4,)))         # no values: recorded
    assert_close(staged(x), expected)
    with pytest.raises(TypeError, match="bitwise_and"):
        wg.grad(lambda x: np.sum(x & x))(x)


def test_astype_between_floats_is_differentiable():
    x = r(4)
    g = wg.grad(lambda v: np.sum(v.astype(numpy.float32) ** 2))(x)
    assert g.dtype == numpy.float64
    assert_close(g, 2 * x.astype(numpy.float32), rtol=1e-6)
    _, t = wg.jvp(lambda v: v.astype(numpy.float32) * 3, (x,), (numpy.ones(4),))
    assert t.dtype == numpy.float32 and numpy.all(t == 3)
    assert wg.grad(lambda v: np.sum(v * v.astype(bool)))(x).tolist() == \
        (x != 0).astype(float).tolist()


def test_assigning_a_traced_value_into_an_array_refuses_clearly():
    def f(v):
        a = numpy.zeros(3)
        a[0] = v[0]
        return np.sum(a)
    for run in (lambda: wg.grad(f)(numpy.ones(3)), lambda: wg.trace(f, numpy.ones(3))):
        with pytest.raises(wg.ConcretizationError, match="converted to a plain NumPy array"):
            run()


def test_einsum_needs_a_derivative_only_of_traced_operands_and_matches_numpys_errors():
    A_ = r(3, 3)
    g = wg.grad(lambda v: np.sum(np.einsum("ij,jj->i", v, numpy.eye(3) * 2)))(A_)
    assert_close(g, numpy.full((3, 3), 2.0))
    with pytest.raises(ValueError, match="no '...' ellipsis"):
        numpy.einsum("...i->i", numpy.ones((2, 3, 4)))          # NumPy's
    with pytest.raises(ValueError, match="no '...' ellipsis"):
        wg.grad(lambda v: np.sum(np.einsum("...i->i", v)))(numpy.ones((2, 3, 4)))
    assert_close(wg.grad(lambda v: np.sum(np.einsum("...i->i", v)))(r(4)), numpy.ones(4))


def test_float32_stays_float32():
    x = numpy.ones(2, numpy.float32)
    assert wg.vjp(lambda v: np.pad(v, 1, constant_values=2.0), x)[0].dtype == numpy.float32
    assert np.pad(x, 1, constant_values=2.0).dtype == numpy.float32
    assert wg.vjp(lambda v: np.diag(v), x)[0].dtype == numpy.float32
    assert wg.vjp(lambda v: np.array([v[0], v[1]], dtype=numpy.float32), r(2))[0].dtype == \
        numpy.float32
    assert wg.vjp(lambda v: np.pad(v, 1, constant_values=2.0), x)[0].tolist() == [2, 1, 1, 2]
    # max's and min's rules made their share of a tie float64, so a float32 JVP was float64
    m = numpy.arange(6, dtype=numpy.float32).reshape(2, 3)
    for f in (lambda v: np.max(v, axis=0), lambda v: np.min(v, axis=1, keepdims=True)):
        assert wg.jvp(f, (m,), (m,))[1].dtype == numpy.float32
        assert wg.trace(lambda v: wg.jvp(f, (v,), (v,))[1],
                        wg.ShapeDtype(m.shape, numpy.float32)).outputs[0].dtype == numpy.float32
    # so did maximum's, minimum's and where's (and through them pinv's, lstsq's, and
    # eig's vectors' in complex64), eagerly: NumPy's where of 1.0 and 0.0 is float64 (QA)
    a = rng.normal(size=(3, 3)).astype(numpy.float32)
    for f in (lambda v: np.maximum(v, 0.5), lambda v: np.minimum(v, v.T),
              lambda v: np.where(v > 0, v, 2 * v), np.linalg.pinv,
              lambda v: np.linalg.lstsq(v, numpy.ones(3, numpy.float32))[0],
              lambda v: np.linalg.eig(v)[1]):
        value, tangent = wg.jvp(f, (a,), (numpy.ones_like(a),))
        assert tangent.dtype == value.dtype, f


# ---- NumPy's other functions: NumPy's values and dtypes, derivatives where NumPy is special ----
def _more_calls(x, y, p, u):
    """Calls of the functions added for autograd's coverage, as (name, function, args)."""
    return [
        ("arcsinh", np.arcsinh, (x,)), ("arccosh", np.arccosh, (p,)),
        ("arctanh", np.arctanh, (u,)), ("exp2", np.exp2, (x,)), ("log2", np.log2, (p,)),
        ("deg2rad", np.deg2rad, (x,)), ("rad2deg", np.rad2deg, (x,)),
        ("radians", np.radians, (x,)), ("degrees", np.degrees, (x,)),
        ("sinc", np.sinc, (x,)), ("hypot", np.hypot, (x, y)),
        ("logaddexp", np.logaddexp, (x, y)), ("logaddexp2", np.logaddexp2, (x, y)),
        ("fmax", np.fmax, (x, y)), ("fmin", np.fmin, (x, y)),
        ("remainder", np.remainder, (3 * x, y)), ("fmod", np.fmod, (3 * x, y)),
        ("nan_to_num", np.nan_to_num, (x,)), ("real", np.real, (x,)), ("imag", np.imag, (x,)),
        ("conjugate", np.conjugate, (x,)), ("angle", np.angle, (x,)),
        ("angle deg", lambda v: np.angle(v, deg=True), (x,)),
        ("real_if_close", np.real_if_close, (x,)),
        ("diff", lambda v: np.diff(v, 2, axis=0, prepend=1.0, append=v[:1]), (x,)),
        ("gradient", lambda v: np.gradient(v, 0.5, [0, 1, 3, 4.5]), (x,)),
        ("gradient axis", lambda v: np.gradient(v, axis=-2), (x,)),
        ("gradient edge_order=2", lambda v: np.gradient(v, 0.5, [0, 1, 3, 4.5], edge_order=2),
         (x,)),
        ("gradient edge_order=2 axis", lambda v: np.gradient(v, [0, 0.5, 2], axis=0,
                                                               edge_order=2), (x,)),
        ("tril", lambda v: np.tril(v, 1), (x,)), ("triu", lambda v: np.triu(v, -1), (x,)),
        ("full", lambda v: np.full((2, 3, 4), v[0]), (x,)),
        ("pad edge", lambda v: np.pad(v, ((1, 2), (3, 0)), mode="edge"), (x,)),
        ("pad reflect", lambda v: np.pad(v, 5, mode="reflect"), (x,)),
        ("pad symmetric", lambda v: np.pad(v, (0, 6), mode="symmetric"), (x,)),
        ("pad wrap", lambda v: np.pad(v, 2, mode="wrap"), (x,)),
        ("take", lambda v: np.take(v, [[0, -1], [5, 3]]), (x,)),
        ("take axis", lambda v: np.take(v, [3, 0, 0], axis=1), (x,)),
        ("take wrap clip", lambda v: np.take(v, [7, -5], axis=0, mode="wrap")
         + np.take(v, [9, -2], axis=0, mode="clip"), (x,)),
        ("full dtype", lambda v: np.full(4, v[1, 2], dtype=numpy.float32), (x,)),
        ("full_like", lambda v: np.full_like(v, v[1, 2]), (x,)),
        ("select", lambda v, w: np.select([v < 0, v > 0.5], [v * 2, w], default=v), (x, y)),
        ("floor ceil trunc fix rint", lambda v: np.floor(v) + np.ceil(v) * np.trunc(v)
         - np.fix(v) * np.rint(v), (x,)),
        ("rot90", lambda v: np.rot90(v, 3, (1, 0)), (x,)), ("fliplr", np.fliplr, (x,)),
        ("flipud", np.flipud, (x,)), ("atleast_3d", np.atleast_3d, (y,)),
        ("rollaxis", lambda v: np.rollaxis(v, -1), (x,)),
        ("array_split", lambda v: np.array_split(v, 3, axis=1), (x,)),
        ("hsplit", lambda v: np.hsplit(v, 2), (x,)), ("vsplit", lambda v: np.vsplit(v, [1]), (x,)),
        ("dsplit", lambda v: np.dsplit(v[None], [1, 3]), (x,)),
        ("isnan isinf signbit", lambda v: (np.isnan(v / v), np.isinf(1 / v), np.signbit(v),
                                           np.signbit(v * 0), np.isnan(v > 0)), (x,)),
        ("copysign", np.copysign, (x, y)), ("copysign weak", lambda v: np.copysign(v, -1.0), (x,)),
        ("heaviside", lambda v, w: np.heaviside(np.round(v), w), (x, y)),
        ("heaviside weak", lambda v: np.heaviside(np.round(v), 0.5), (x,)),
        ("float_power", np.float_power, (p, x)), ("float_power 2", lambda v: np.float_power(v, 2), (x,)),
        ("ldexp", lambda v: np.ldexp(v, numpy.array([[1], [-3], [70]])), (x,)),
        ("isclose", lambda v, w: np.isclose(v, v + w * 1e-6), (x, y)),
        ("isclose equal_nan", lambda v: np.isclose(np.where(v > 0, v, numpy.nan), np.round(v, 1),
                                                                0.1, 0.5, True), (x,)),
        ("allclose array_equal", lambda v, w: (np.allclose(v, v + 1e-9), np.allclose(v, w),
                                               np.array_equal(v, v), np.array_equal(v, w)), (x, y)),
        ("count_nonzero flatnonzero argwhere", lambda v: (
            np.count_nonzero(np.round(v)), np.count_nonzero(np.round(v), axis=0, keepdims=True),
            np.flatnonzero(np.round(v)), np.argwhere(np.round(v))), (x,)),
        ("nansum", lambda v: np.nansum(np.where(v < 0, numpy.nan, v)), (x,)),
        ("nansum axis", lambda v: np.nansum(np.where(v > 0.5, numpy.nan, v), 1), (x,)),
        ("nanmean", lambda v: np.nanmean(np.where(v > 0.5, numpy.nan, v), 0), (x,)),
        ("nanmax nanmin", lambda v: (np.nanmax(np.where(v > 0.5, numpy.nan, v), 1),
                                     np.nanmin(np.where(v > 0.5, numpy.nan, v))), (x,)),
        ("ptp", lambda v: np.ptp(v, 1, keepdims=True), (x,)), ("average", np.average, (x,)),
        ("average weights", lambda v, w: np.average(v, 1, w, returned=True), (x, y)),
        ("average weights all", lambda v: np.average(v, weights=np.abs(v)), (x,)),
        ("average weights axes", lambda v: np.average(v, (1, 0), np.abs(v.T), keepdims=True), (x,)),
        ("median", np.median, (x,)), ("median axis", lambda v: np.median(v, 0), (x,)),
        ("median axis odd", lambda v: np.median(v, 1, keepdims=True), (x,)),
        ("median nan", lambda v: np.median(np.where(v > 1, numpy.nan, v), 1), (x,)),
        ("quantile", lambda v: np.quantile(v, 0.3), (x,)),
        ("quantile array", lambda v: np.quantile(v, [0.1, 0.5, 1.0], axis=1), (x,)),
        ("quantile strong", lambda v: np.quantile(v, numpy.float32(0.25), 0), (x,)),
        ("quantile integers", lambda v: np.quantile(v, numpy.array([0, 1])), (x,)),
        ("percentile", lambda v: np.percentile(v, 37, axis=0, keepdims=True), (x,)),
        ("percentile array", lambda v: np.percentile(v, numpy.array([0, 99.0]), (0, 1)), (x,)),
        ("trapezoid", np.trapezoid, (x,)), ("trapezoid x", lambda v, w: np.trapezoid(v, w), (x, y)),
        ("trapezoid dx", lambda v: np.trapezoid(v, dx=0.3, axis=0), (x,)),
        ("trapezoid 2-d x", lambda v: np.trapezoid(v, v ** 2, axis=0), (x,)),
        ("take_along_axis", lambda v: np.take_along_axis(v, numpy.argsort(v, 1), 1), (x,)),
        ("take_along_axis broadcast", lambda v: np.take_along_axis(v, numpy.array([[0], [-2]]), 0), (x,)),
        ("take_along_axis None", lambda v: np.take_along_axis(v, numpy.array([3, -1]), None), (x,)),
        ("meshgrid", lambda v: np.meshgrid(v[0], v[1, :2]), (x,)),
        ("meshgrid ij sparse", lambda v, w: np.meshgrid(v[0], w[:2], v[2], indexing="ij",
                                                        sparse=True), (x, y)),
        ("polyval", lambda v: np.polyval(v[0], v), (x,)),
        ("polyval plain p", lambda v: np.polyval([1.0, 2.0, -1.0], v), (x,)),
        ("cumprod", np.cumprod, (x,)), ("cumprod axis", lambda v: np.cumprod(v, 0), (x,)),
        ("cumprod dtype", lambda v: np.cumprod(v, -1, dtype=numpy.float64), (x,)),
        ("cov", np.cov, (x,)), ("cov rowvar", lambda v: np.cov(v, rowvar=False), (x,)),
        ("cov y bias", lambda v, w: np.cov(v, w, bias=True), (x, y)),
        ("cov ddof vector", lambda v: np.cov(v[0], ddof=2), (x,)),
        ("corrcoef", np.corrcoef, (x,)), ("corrcoef y", lambda v, w: np.corrcoef(v[0], w), (x, y)),
        ("corrcoef rowvar", lambda v: np.corrcoef(v, rowvar=False), (x,)),
        ("vander", lambda v: np.vander(v[0]), (x,)),
        ("vander N increasing", lambda v: np.vander(v[0], 6, increasing=True), (x,)),
        ("vander N=1", lambda v: np.vander(v[0], 1), (x,)),
        ("interp", lambda v: np.interp(v, [-1.0, -0.2, 0.3, 0.3, 1.0, 2.0], numpy.arange(6.0)), (x,)),
        ("interp fp", lambda v, w: np.interp(v * 2, [-1.0, -0.2, 0.3, 1.0], w), (x, y)),
        ("interp left right", lambda v, w: np.interp(v, [-0.5, 0.5], w[:2], -5, w[3]), (x, y)),
        ("interp period", lambda v: np.interp(v * 5, [-1.0, -0.2, 0.3, 1.0], [1.0, 3, 2, 0], period=2.5),
         (x,)),
        ("interp one point", lambda v: np.interp(v, [0.5], v[0, :1]), (x,)),
        ("kron", np.kron, (x, y)), ("cross", np.cross, (x[:, :3], y[1:])),
        ("partition", lambda v: np.partition(v, (0, 2), axis=-1), (x,)),
        ("argpartition", lambda v: np.argpartition(v, 1, axis=0), (x,)),
        ("linspace", lambda a, b: np.linspace(a, b, 7, axis=-1), (x, y)),
        ("linspace retstep", lambda a, b: np.linspace(a, b, 4, endpoint=False, retstep=True),
         (x[0], y)),
    ]


# (nanmean of a column that is all nan is nan with NumPy's warning, in wengert as in NumPy)
@pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning")
@pytest.mark.parametrize("dtype", [numpy.float64, numpy.float32])
def test_more_functions_give_numpys_values_and_dtypes(dtype):
    x, y = r(3, 4).astype(dtype), r(4).astype(dtype)
    p, u = pos(3, 4).astype(dtype) + 1, (r(3, 4) / 4).astype(dtype)
    for name, f, args in _more_calls(x, y, p, u):
        want = f(*args)
        got = wg.vjp(f, *args)[0]
        for g, w in zip(wg.tree.flatten(got)[0], wg.tree.flatten(want)[0]):
            assert numpy.asarray(g).dtype == numpy.asarray(w).dtype, name
            # (sinc: a series near 0, for its derivatives; float_power: NumPy's power of a
            # broadcast operand rounds apart from a whole array's with AVX-512: an ulp off)
            if name in ("sinc", "float_power"):
                numpy.testing.assert_array_max_ulp(g, w, maxulp=2)
            else:
                numpy.testing.assert_array_equal(g, w, err_msg=name)
    # the same through NumPy's own functions (dispatch), ufuncs and operators
    assert_close(wg.vjp(lambda v: numpy.arcsinh(v) + numpy.logaddexp(v, y) + v % 1.5
                        + numpy.sinc(v) + numpy.tril(v), x)[0],
                 numpy.arcsinh(x) + numpy.logaddexp(x, y) + x % 1.5 + numpy.sinc(x)
                 + numpy.tril(x), rtol=4 * numpy.finfo(dtype).eps, atol=0)   # (sinc's ulp)


def test_sinc_at_zero_is_the_series_to_fourth_order():
    d = [np.sinc]
    for _ in range(4):
        d.append(wg.grad(d[-1]))
    assert [f(0.0) for f in d] == pytest.approx(
        [1.0, 0.0, -numpy.pi ** 2 / 3, 0.0, numpy.pi ** 4 / 5], rel=1e-12, abs=1e-12)
    assert wg.taylor(np.sinc, 0.0, 1.0, order=4) == pytest.approx(
        [1.0, 0.0, -numpy.pi ** 2 / 6, 0.0, numpy.pi ** 4 / 120], rel=1e-12, abs=1e-12)
    assert numpy.all(numpy.isfinite(wg.grad(lambda v: np.sum(np.sinc(v)))(numpy.zeros(3))))
    # next to 0 as well: the quotient's derivatives cancel there (its fourth read -4.5e17
    # at 1e-8); sinc's k-th derivative is the series' (pi x)^(2j) terms differentiated
    def exact(x, k):
        return sum((-1) ** j * numpy.pi ** (2 * j) / math.factorial(2 * j + 1)
                   * math.factorial(2 * j) / math.factorial(2 * j - k) * x ** (2 * j - k)
                   for j in range(20) if 2 * j >= k)
    for x in (1e-8, 1e-5, 1e-3, 0.1, 0.159, 0.16, 0.3):
        assert [f(x) for f in d] == pytest.approx([exact(x, k) for k in range(5)],
                                                   rel=1e-12, abs=1e-14)


def test_hypot_and_logaddexp_derivatives_without_overflow():
    with numpy.errstate(over="raise", divide="raise", invalid="raise"):
        g = wg.grad(np.hypot, argnums=(0, 1))
        assert g(3e300, 4e300) == pytest.approx((0.6, 0.8), rel=1e-14)
        assert g(0.0, 0.0) == (0.0, 0.0)                     # hypot(x, 0) = |x|, as abs
        g = wg.grad(np.logaddexp, argnums=(0, 1))
        assert g(1000.0, 0.0) == (1.0, 0.0) and g(5.0, 5.0) == pytest.approx((0.5, 0.5))
        assert wg.grad(np.logaddexp2, argnums=(0, 1))(7.0, 7.0) == pytest.approx((0.5, 0.5))
        assert np.arcsinh(1e300) == numpy.arcsinh(1e300)
        assert wg.grad(np.arcsinh)(1e300) == pytest.approx(1e-300, rel=1e-14)


def test_sign_and_classification_functions_follow_numpy_and_their_derivatives():
    x = numpy.array([-1.5, -0.0, 0.0, 2.0, numpy.nan, numpy.inf, -numpy.inf])
    y = numpy.array([1.0, -1.0, -2.0, 0.5, 3.0, -1.0, 1.0])
    for v in (x, x.astype(numpy.float32), numpy.arange(-3, 4)):
        for name in ("isnan", "isinf", "signbit"):
            mine, theirs = getattr(np, name), getattr(numpy, name)
            for got in (wg.trace(mine, v)(v), wg.compile(mine, v)(v), wg.trace(theirs, v)(v)):
                assert got.dtype == bool and got.tolist() == theirs(v).tolist(), (name, v)
        for name in ("copysign", "heaviside"):
            want = getattr(numpy, name)(v, y)
            got = wg.compile(getattr(np, name), v, y)(v, y)
            assert got.dtype == want.dtype and numpy.array_equal(got, want, equal_nan=True)
            assert numpy.array_equal(numpy.signbit(got), numpy.signbit(want)), name
    x, y = x[:4], y[:4]
    gx, gy = wg.grad(lambda a, b: np.sum(np.copysign(a, b)), argnums=(0, 1))(x, y)
    assert gx.tolist() == [-1.0, 0.0, 0.0, 1.0] and gy.tolist() == [0.0] * 4
    gx, gh = wg.grad(lambda a, b: np.sum(np.heaviside(a, b)), argnums=(0, 1))(x, y)
    assert gx.tolist() == [0.0] * 4 and gh.tolist() == [0.0, 1.0, 1.0, 0.0]
    assert wg.grad(lambda a: np.sum(np.ldexp(a, numpy.arange(4) - 1)))(x).tolist() == \
        [0.5, 1.0, 2.0, 4.0]
    g = wg.grad(lambda a: np.sum(np.float_power(a, 3)))(numpy.float32([2.0]))
    assert g.dtype == numpy.float32 and g.tolist() == [12.0]
    for ns in (numpy, np):                          # ldexp takes integer exponents only
        with pytest.raises(TypeError, match="ldexp"):
            wg.grad(lambda a: ns.sum(ns.ldexp(a, numpy.array([1.5]))))(x)


def test_functions_of_values_need_values_and_isclose_is_elementwise():
    x, y = r(3, 4), r(4)
    for call in ("np.allclose(t, y)", "np.array_equal(t, y)",
                 "np.flatnonzero(t)", "np.argwhere(t)", "numpy.argwhere(t)"):
        f = lambda t: eval(call, {"np": np, "numpy": numpy, "y": y, "t": t})
        assert numpy.array_equal(wg.vjp(f, x)[0], eval(call, {"np": numpy, "numpy": numpy, "y": y,
                                                                    "t": x}))
        with pytest.raises(wg.ConcretizationError, match=call.split("(")[0].split(".")[1]):
            wg.trace(f, x)
    # count_nonzero and isclose need no value: they are recorded (isclose selects the
    # branch of a derivative)
    t = numpy.round(x)
    for kw in ({}, {"axis": 0}, {"axis": (0, 1), "keepdims": True}):
        want = numpy.count_nonzero(t, **kw)
        got = wg.compile(lambda t: numpy.count_nonzero(t, **kw), t)(t)
        assert numpy.array_equal(got, want) and numpy.asarray(got).dtype == numpy.intp
    z = numpy.array([1.0, numpy.nan, numpy.inf, -numpy.inf, 2.0, 1e-9])
    w = numpy.array([1.0 + 1e-7, numpy.nan, numpy.inf, numpy.inf, numpy.nan, 0.0])
    with numpy.errstate(all="raise"):
        for kw in ({}, {"equal_nan": True}, {"rtol": 0.0, "atol": 0.0}):
            assert wg.compile(lambda a, b: np.isclose(a, b, **kw), z, w)(z, w).tolist() == \
                numpy.isclose(z, w, **kw).tolist()
    g = wg.grad(lambda a: np.sum(np.where(np.isclose(a, 1.0, atol=0.5), a ** 2, a)))(x[0])
    assert g.tolist() == numpy.where(numpy.isclose(x[0], 1.0, atol=0.5), 2 * x[0], 1.0).tolist()


def test_statistics_derivatives_in_closed_form():
    v = numpy.array([3.0, 1.0, 4.0, 1.5, 9.0])
    assert wg.grad(np.median)(v).tolist() == [1.0, 0, 0, 0, 0]          # the middle element
    assert wg.grad(np.median)(v[:4]).tolist() == [0.5, 0, 0, 0.5]       # the two middle ones
    # quantile 'linear': q(n-1) = 0.3·4 = 1.2 between the sorted 1.5 and 3.0
    assert wg.grad(lambda v: np.quantile(v, 0.3))(v) == pytest.approx([0.2, 0, 0, 0.8, 0])
    a, w = r(5), pos(5)
    ga, gw = wg.grad(lambda a, w: np.average(a, weights=w), argnums=(0, 1))(a, w)
    avg = numpy.average(a, weights=w)
    assert_close(ga, w / w.sum(), rtol=1e-15)
    assert_close(gw, (a - avg) / w.sum(), rtol=1e-12)
    # NaNs are ignored and get no derivative, also in an all-NaN slice
    x = numpy.array([[1.0, numpy.nan, 3.0], [numpy.nan] * 3])
    for f, want in ((np.nansum, [[1, 0, 1], [0, 0, 0]]), (np.nanmax, [[0, 0, 1], [0, 0, 0]]),
                    (np.nanmean, [[0.5, 0, 0.5], [0, 0, 0]]), (np.nanmin, [[1, 0, 0], [0, 0, 0]])):
        with numpy.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            g = wg.grad(lambda t: np.sum(np.nan_to_num(f(t, 1))))(x)
        assert g.tolist() == want, f
    for f, message in ((np.nanmean, "Mean of empty slice"), (np.nanmax, "All-NaN slice")):
        with pytest.warns(RuntimeWarning, match=message):
            assert numpy.isnan(wg.vjp(lambda t: f(t, 1), x)[0][1])
    # a ptp of a constant has derivative zero (the max and min cancel, shared among ties)
    assert wg.grad(np.ptp)(numpy.ones(3)).tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(ZeroDivisionError, match="Weights sum to zero"):
        wg.grad(lambda a: np.average(a, weights=numpy.array([1.0, -1.0])))(numpy.ones(2))
    for ns in (numpy, np):
        with pytest.raises(TypeError, match="Axis must be specified"):
            wg.grad(lambda t: ns.sum(ns.average(t, weights=t[0])))(r(2, 3))
        with pytest.raises(ValueError, match="'bogus' is not a valid method"):
            wg.grad(lambda t: ns.sum(ns.quantile(t, 0.5, method="bogus")))(r(3))
    with pytest.raises(NotImplementedError, match="method='lower'"):
        wg.grad(lambda t: np.quantile(t, 0.5, method="lower"))(r(3))


def test_cumprod_derivatives_are_exact_at_zeros():
    x = numpy.array([2.0, 0.0, 3.0, 0.0, 1.5, -1.0])
    n = len(x)
    # d/dx_j Σ_i Π_{k<=i} x_k = Σ_{i>=j} Π_{k<=i, k≠j} x_k, by brute force
    want = [builtins_sum(numpy.prod(numpy.delete(x[:i + 1], j)) for i in range(j, n))
            for j in range(n)]
    g = wg.grad(lambda t: np.sum(np.cumprod(t)))(x)
    assert g.tolist() == want and not numpy.isnan(g).any()
    jf, jr = wg.jacfwd(np.cumprod)(x), wg.jacrev(np.cumprod)(x)
    assert numpy.array_equal(jf, jr) and jf[2].tolist() == [0, 6.0, 0, 0, 0, 0]
    h = wg.hessian(lambda t: np.sum(np.cumprod(t)))(x[:5])
    assert h[1, 3] == 2 * 3 + 2 * 3 * 1.5 and h[0, 1] == 1 + 3 and h[4, 4] == 0
    with numpy.errstate(all="raise"):
        wg.grad(lambda t: np.sum(np.cumprod(t, axis=None)))(numpy.zeros((2, 3)))


@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, False), (1, True),
                                           ((0, 2), False), ((2, 1), True)])
def test_prod_derivatives_are_the_products_of_the_others_even_at_zeros(axis, keepdims):
    """d prod / d x_i is the product of the other elements: at an exact zero too (one zero:
    the cofactor there, zeros elsewhere; two: all zeros), to second order, no nan."""
    x = rng.normal(size=(3, 4, 2))
    x[0, 1, 0] = 0.0
    x[2, 3, 1] = x[2, 0, 1] = 0.0
    f = lambda t: np.sum(np.sin(np.prod(t, axis=axis, keepdims=keepdims)))

    def brute(x):      # d f / d x_j = cos(the group's product) * (the others': x_j -> 1)
        axes = range(x.ndim) if axis is None else [a % x.ndim for a in numpy.atleast_1d(axis)]
        y = numpy.prod(x, axis=axis, keepdims=True)
        g = numpy.zeros_like(x)
        for j in numpy.ndindex(*x.shape):
            at = tuple(0 if k in axes else j[k] for k in range(x.ndim))
            x1 = x.copy()
            x1[j] = 1.0
            g[j] = numpy.cos(y[at]) * numpy.prod(x1, axis=axis, keepdims=True)[at]
        return g
    with numpy.errstate(all="raise"):
        g = wg.grad(f)(x)
        H = wg.hessian(f)(x)
    numpy.testing.assert_allclose(g, brute(x), rtol=1e-13, atol=1e-15)
    numpy.testing.assert_allclose(H.reshape(24, 24), fd_jacobian(wg.grad(f), x, 1e-5)
                                  .reshape(24, 24), rtol=1e-6, atol=1e-7)
    t = rng.normal(size=x.shape)
    numpy.testing.assert_allclose(wg.jvp(f, (x,), (t,))[1], numpy.sum(g * t), rtol=1e-12)
    assert wg.grad(np.prod)(numpy.array([0.0, 2.0, 3.0])).tolist() == [6.0, 0.0, 0.0]


def test_convolve_correlate_and_interp_follow_numpy():
    for n in range(1, 9):
        for m in range(1, 9):
            a, v = r(n), r(m)
            for mode in ("full", "same", "valid"):
                for mine, theirs in ((np.convolve, numpy.convolve), (np.correlate, numpy.correlate)):
                    f = lambda a, v: mine(a, v, mode)
                    # (one dot product per output, summed in matmul's order, not dot's)
                    assert_close(wg.compile(f, a, v)(a, v), theirs(a, v, mode), rtol=1e-13,
                                 atol=1e-14)
                    a32, v32 = a.astype(numpy.float32), v.astype(numpy.float32)
                    got, want = wg.vjp(f, a32, v32)[0], theirs(a32, v32, mode)
                    assert got.dtype == want.dtype and got.shape == want.shape
                    assert_close(got, want, rtol=1e-5, atol=1e-6)
    # interp: the slope in x, the two neighbours' weights in fp; flat beyond the ends; at
    # a sample point, the slope on its right (at the last, on its left), as JAX's
    xp, fp = numpy.array([0.0, 1.0, 3.0]), numpy.array([1.0, 5.0, -1.0])
    x = numpy.array([-1.0, 0.25, 2.0, 3.0, 4.0, numpy.nan])
    gx, gfp = wg.grad(lambda x, fp: np.nansum(np.interp(x, xp, fp)), argnums=(0, 1))(x, fp)
    assert gx.tolist() == [0.0, 4.0, -3.0, -3.0, 0.0, 0.0]
    at_points = wg.vjp(lambda x: np.interp(x, xp, fp), xp.copy())
    assert at_points[0].tolist() == fp.tolist()
    assert at_points[1](numpy.ones(3))[0].tolist() == [4.0, -3.0, -3.0]
    assert wg.jvp(lambda x: np.interp(x, xp, fp), (1.0,), (1.0,)) == (5.0, -3.0)
    assert gfp.tolist() == [0.75 + 1, 0.25 + 0.5, 0.5 + 1 + 1]
    f = wg.compile(lambda x, fp: np.interp(x, xp, fp, left=-7.0), x, fp)   # no value needed
    assert numpy.array_equal(f(x, fp), numpy.interp(x, xp, fp, left=-7.0), equal_nan=True)
    # in xp, the closed form: f = fp_j + Δf (x - xp_j) / Δxp moves with both neighbours
    xp = numpy.array([0.0, 1.0, 3.0, 4.5])
    fp = numpy.array([1.0, 5.0, -1.0, 2.0])
    x = numpy.array([0.25, 2.0, 4.0])
    dxp = wg.jacobian(lambda xp: np.interp(x, xp, fp))(xp)
    want = numpy.zeros((3, 4))
    for i, j in enumerate((0, 1, 2)):
        df, dx = fp[j + 1] - fp[j], xp[j + 1] - xp[j]
        want[i, j] = df * (x[i] - xp[j + 1]) / dx ** 2
        want[i, j + 1] = -df * (x[i] - xp[j]) / dx ** 2
    assert_close(dxp, want, rtol=1e-14)
    # cov's derivative: d Σ cov(x)_ij / dx = 0 for centred sums; d var = 2(x - mean)/(n - 1)
    v = r(5)
    assert_close(wg.grad(lambda v: np.cov(v))(v), 2 * (v - v.mean()) / 4, rtol=1e-13)
    with pytest.warns(RuntimeWarning, match="Degrees of freedom"):
        wg.vjp(lambda v: np.cov(v, ddof=5), v)
    # an index repeated in a lane adds its cotangents
    g = wg.grad(lambda t: np.sum(np.take_along_axis(t, numpy.array([[0, 0, 2]]), 1)))(r(2, 3))
    assert g.tolist() == [[2.0, 0.0, 1.0]] * 2
    for call in ("np.interp(x, [0.0, 1.0], x)", "np.vander(x, -1)"):
        with pytest.raises(ValueError):
            wg.grad(lambda t: np.sum(eval(call, {"np": np, "x": t})))(r(3))


@pytest.mark.parametrize("rows, n, m", [(6, 8, 3), (4, 20, 40)])   # (both ways of searching)
def test_searchsorted_and_interp_under_vmap_over_the_sorted_arrays(rows, n, m):
    a = numpy.sort(r(rows, n), axis=1)
    a[1, 2:5] = a[1, 2]                                     # ties
    v = r(rows, m)
    v[1, 0] = a[1, 2]
    nan_a, nan_v = a.copy(), v.copy()
    nan_a[2, -2:], nan_v[2, 0] = numpy.nan, numpy.nan       # (NaN sorts last)
    for side in ("left", "right"):
        search = wg.vmap(lambda a, v: np.searchsorted(a, v, side=side))
        for a_, v_ in ((a, v), (nan_a, nan_v), ((a * 10).astype(int), (v * 10).astype(int))):
            want = numpy.stack([numpy.searchsorted(a_[b], v_[b], side=side)
                                for b in range(rows)])
            assert numpy.array_equal(search(a_, v_), want)
            assert numpy.array_equal(wg.compile(search, a_, v_)(a_, v_), want)
        nested = wg.vmap(wg.vmap(lambda a, v: np.searchsorted(a, v, side=side)))
        a3, v3 = a.reshape(2, rows // 2, n), v.reshape(2, rows // 2, m)   # (vmap of vmap)
        assert numpy.array_equal(nested(a3, v3), [[numpy.searchsorted(r, u, side=side)
                                                   for r, u in zip(ra, rv)]
                                                  for ra, rv in zip(a3, v3)])
        shared = wg.vmap(lambda a: np.searchsorted(a, v[0], side=side))(a)
        assert numpy.array_equal(shared, [numpy.searchsorted(row, v[0], side=side)
                                          for row in a])
    # interp with a batch of sample points: values, and the derivative in them
    x = r(m)
    f = lambda xp, fp: np.interp(x, xp, fp)
    fp = r(rows, n)
    assert_close(wg.vmap(f)(a, fp), [numpy.interp(x, a[b], fp[b]) for b in range(rows)],
                 rtol=1e-14)
    a = numpy.sort(r(rows, n), axis=1)          # (distinct points)
    per_row = wg.vmap(wg.grad(lambda xp, fp: np.sum(f(xp, fp) ** 2)))(a, fp)
    for b in (0, rows - 1):
        assert_close(per_row[b], wg.grad(lambda xp: np.sum(f(xp, fp[b]) ** 2))(a[b]),
                     rtol=1e-13)


@pytest.mark.parametrize("dtype", [numpy.float64, numpy.float32, numpy.complex128])
def test_put_along_axis_adds_where_an_index_repeats(dtype):
    # take_along_axis's transpose: np.add.at's sums (one bincount for real floats), in
    # every axis, with indices from the end, broadcast ones, and permutations
    gen = numpy.random.default_rng(43)
    for shape, ishape, axis in [((5,), (9,), 0), ((3, 4), (3, 7), 1), ((3, 4), (6, 4), 0),
                                ((3, 4), (1, 4), 0), ((2, 3, 4), (2, 5, 4), 1),
                                ((2, 3, 4), (2, 3, 6), 2)]:
        idx = gen.integers(-shape[axis], shape[axis], ishape)
        gshape = numpy.broadcast_shapes(ishape, tuple(1 if d == axis else s
                                                      for d, s in enumerate(shape)))
        g = (gen.normal(size=gshape) * 10).astype(dtype)
        want = numpy.zeros(shape, dtype)
        grid = list(numpy.indices(gshape, sparse=True))
        grid[axis] = numpy.broadcast_to(idx, gshape)
        numpy.add.at(want, tuple(grid), g)
        got = A.put_along_axis(g, idx, axis=axis, shape=shape)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert_close(got.real, want.real, rtol=1e-6, atol=1e-5)
        assert_close(got.imag, want.imag, rtol=1e-6, atol=1e-5)
        order = numpy.argsort(gen.random(shape), axis=axis)         # (each place once)
        g = gen.normal(size=shape).astype(dtype)
        got = A.put_along_axis(g, order, axis=axis, shape=shape)
        assert numpy.array_equal(numpy.take_along_axis(got, order, axis), g)

def test_searchsorted_puts_values_in_order_only_where_that_pays():
    # (NumPy's binary search is several times faster on values in order, and so are its
    # interp's: many random values among many points are sorted first, nothing else)
    gen = numpy.random.default_rng(41)
    a = numpy.sort(gen.random(500))
    v = gen.random(5000)
    assert numpy.array_equal(A._lookup_order(v, a.size), numpy.argsort(v))
    # too few values or points, values in order already, not floats, or so many values
    # that the sort costs what it saves: as they are
    for v_, n in ((v[:100], 500), (v, 10), (numpy.sort(v), 500), ((v * 10).astype(int), 500),
                  (gen.random(1 << 18), 500)):
        assert A._lookup_order(v_, n) is None


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_with_values_put_in_order_is_numpys(side):
    gen = numpy.random.default_rng(42)
    a = numpy.sort(numpy.round(gen.random(500), 2))       # (repeated points)
    v = numpy.concatenate([gen.random(6000) * 1.2 - 0.1, a[::7],
                           [numpy.nan, numpy.inf, -numpy.inf, -0.0]])
    gen.shuffle(v)
    for a_, v_ in ((a, v), (a, v.reshape(-1, 2)), (numpy.append(a, [numpy.nan] * 2), v),
                   ((a * 100).astype(int), v * 100), (a, numpy.sort(v))):
        assert numpy.array_equal(A.searchsorted(a_, v_, side=side),
                                 numpy.searchsorted(a_, v_, side=side))
    # rows, with the values shared by every row (a broadcast view, or an axis of size 1)
    # and each its own
    rows = numpy.sort(gen.random((3, 500)), axis=1)
    for vs in (numpy.broadcast_to(v[:5000], (3, 5000)), v[None, :5000], gen.random((3, 5000))):
        want = [numpy.searchsorted(rows[b], vs[b % len(vs)], side=side) for b in range(3)]
        assert numpy.array_equal(A.searchsorted(rows, vs, side=side), want)
    # under vmap: values shared by every row, and sorted arrays shared by an outer batch
    search = lambda a, u: np.searchsorted(a, u, side=side)
    assert numpy.array_equal(wg.vmap(search, in_axes=(0, None))(rows, v[:5000]),
                             [numpy.searchsorted(r, v[:5000], side=side) for r in rows])
    u = gen.random((2, 3, 4))
    nested = wg.vmap(wg.vmap(search), in_axes=(None, 0))(rows[:, :6], u)
    assert numpy.array_equal(nested, [[numpy.searchsorted(rows[j, :6], u[i, j], side=side)
                                       for j in range(3)] for i in range(2)])


def test_fmax_fmin_nan_to_num_and_remainder_derivatives_follow_numpy():
    x = numpy.array([1.0, numpy.nan, 2.0, numpy.nan])
    y = numpy.array([0.0, 3.0, numpy.nan, numpy.nan])
    for f in (np.fmax, np.fmin):
        gx, gy = wg.grad(lambda a, b: np.sum(f(a, b)), argnums=(0, 1))(x, y)
        # the argument that is not nan gets the derivative (x if both are nan, as NumPy)
        assert gx.tolist() == [float(f is np.fmax), 0.0, 1.0, 1.0]
        assert gy.tolist() == [float(f is np.fmin), 1.0, 0.0, 0.0]
    v = numpy.array([1.5, numpy.nan, numpy.inf, -numpy.inf])
    assert wg.grad(lambda v: np.sum(np.nan_to_num(v, nan=1.0, posinf=9.0)))(v).tolist() == \
        [1.0, 0.0, 0.0, 0.0]
    assert wg.vjp(lambda v: np.nan_to_num(v, posinf=9.0), v)[0].tolist() == \
        numpy.nan_to_num(v, posinf=9.0).tolist()
    a, b = r(50) * 10, r(50)
    for f, n in ((np.remainder, numpy.floor), (np.fmod, numpy.trunc)):
        ga, gb = wg.grad(lambda a, b: np.sum(f(a, b)), argnums=(0, 1))(a, b)
        assert ga.tolist() == [1.0] * 50 and gb.tolist() == (-n(a / b)).tolist()


@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "fix", "rint", "round"])
def test_rounding_functions_have_numpys_values_dtypes_and_a_zero_derivative(name):
    x = numpy.array([-2.5, -1.0, -0.4, 0.0, 0.4, 1.5, 2.5, 7.0])
    mine, theirs = getattr(np, name), getattr(numpy, name)
    for v in (x, x.astype(numpy.float32), numpy.arange(-3, 3), numpy.arange(4, dtype=numpy.int32),
              numpy.array([True, False])):
        if name == "fix" and v.dtype == bool:
            continue                                  # (NumPy's fix refuses bools)
        want = theirs(v)
        for got in (wg.trace(mine, v)(v), wg.compile(mine, v)(v), wg.trace(theirs, v)(v)):
            assert got.dtype == want.dtype and numpy.array_equal(got, want), (v.dtype, got)
    # piecewise constant: the derivative is zero, first order and second
    assert_close(wg.grad(lambda v: np.sum(mine(v) * v))(x), theirs(x), rtol=0, atol=0)
    assert_close(wg.grad(lambda v: numpy.sum(theirs(v) * v * v))(x), 2 * x * theirs(x),
                 rtol=1e-15)
    assert wg.hessian(lambda t: mine(t) * t ** 3)(2.5) == 6 * 2.5 * theirs(2.5)


def test_cross_of_two_vectors_warns_as_numpy_2_does():
    a, b = r(2), r(3, 2)
    with pytest.warns(DeprecationWarning, match="2-dimensional vectors"):
        want = numpy.cross(a, b)
    with pytest.warns(DeprecationWarning, match="2-dimensional vectors"):
        got = wg.vjp(np.cross, a, b)[0]
    assert_close(got, want, rtol=0, atol=0)
    c = r(3)
    with pytest.warns(DeprecationWarning):
        check_grads(lambda a, b: np.cross(a, b) + np.cross(b, c).sum(-1), a, b)


@pytest.mark.parametrize("call, error", [
    ("np.diff(x, -1)", "order must be non-negative"), ("np.fliplr(x[0])", "Input must be >= 2-d"),
    ("np.rot90(x, 1, (0, 0))", "Axes must be different"), ("np.rot90(x, 1, (0, 3))", "out of range"),
    ("np.cross(x, x)", "incompatible dimensions"), ("np.array_split(x, 0)", "larger than 0"),
    ("np.split(x, 3, axis=1)", "equal division"), ("np.vsplit(x[0], 2)", "2 or more dimensions"),
    ("np.gradient(x[:1], axis=0)", "too small"), ("np.rollaxis(x, 0, 5)", "'start' arg"),
    ("np.partition(x, 9)", "out of bounds"),
    ("np.quantile(x, 1.5)", "Quantiles must be in the range"),
    ("np.percentile(x, [-1, 50])", "Percentiles must be in the range"),
    ("np.average(x, 1, weights=x[0, :3])", "Shape of weights must be consistent"),
    ("np.meshgrid(x[0], x[1], indexing='xx')", "Valid values for `indexing`"),
    ("np.take_along_axis(x, numpy.zeros(2, int), 1)", "same number of dimensions"),
    ("np.nanmax(x, 2)", "out of bounds"),
    ("np.convolve(x[0], x[1, :0])", "v cannot be empty"),
    ("np.correlate(x[0], x[1], 'bogus')", "mode must be one of"),
    ("np.correlate(x, x[0])", "object too deep"), ("np.vander(x)", "one-dimensional"),
    ("np.interp(x[0], [1.0, 2.0], x[1])", "same length"),
    ("np.interp(x[0], [1.0], x[1, :1], period=0)", "non-zero"),
    ("np.cov(x[None])", "more than 2 dimensions"),
    # axes out of range or repeated (these once wrapped round, or were moved twice)
    ("np.moveaxis(x, 0, 2)", "out of bounds"), ("np.moveaxis(x, [0, 1], [0, 0])", "repeated axis"),
    ("np.roll(x, 1, axis=2)", "out of bounds"), ("np.roll(x, 1, axis=-3)", "out of bounds"),
    ("np.gradient(x, axis=(1, 1))", "repeated axis"),
    ("np.sum(x, axis=(0, 0))", "duplicate value|repeated axis"),
    ("np.quantile(x, .5, axis=(0, 0))", "repeated axis"),
    ("np.trace(x, axis1=1, axis2=1)", "axis1 and axis2 cannot be the same"),
    ("np.trace(x, axis2=3)", "out of bounds")])
def test_more_functions_raise_numpys_errors_on_traced_values(call, error):
    x = r(2, 4)
    for v in (x, None):                                    # NumPy's, then wengert's
        run = (lambda: eval(call, {"np": numpy, "x": x, "numpy": numpy})) if v is not None else \
            (lambda: wg.grad(lambda t: np.sum(eval(call, {"np": np, "x": t, "numpy": numpy})))(x))
        with pytest.raises((ValueError, numpy.exceptions.AxisError), match=error):
            run()
    for ns in (numpy, np):                  # axis=True is no axis 1
        with pytest.raises(TypeError, match="integer"):
            wg.grad(lambda t: ns.sum(ns.sum(t, axis=True)))(x)
    for call, error in (("np.gradient(x, axis=0, edge_order=2)", "too small"),
                        ("np.gradient(x, edge_order=3)", "greater than 2")):
        for ns in (numpy, np):
            with pytest.raises(ValueError, match=error):
                wg.grad(lambda t: ns.sum(eval(call, {"np": ns, "x": t})))(x)


def test_array_likes_holding_traced_values_are_arrays():
    t, w = r(3), r(2, 2)
    c = numpy.array([True, False])
    calls = {
        "sum": lambda t: np.sum([t[0], t[1]]), "mean": lambda t: np.mean([t[0], t[1]]),
        "max": lambda t: np.max([t[0], t[2]]), "exp": lambda t: np.exp([t[0], t[1]]),
        "add": lambda t: np.add([t[0], t[1]], 1.0), "dot": lambda t: np.dot([t[0], t[1]], w),
        "where": lambda t: np.where(c, [t[0], t[1]], 0.0),
        "ufunc second": lambda t: np.multiply(t[:2], [t[2], 2.0]),
        "matmul": lambda t: np.matmul(w, (t[0], t[2])),
        "nested": lambda t: np.sum([[t[0], 1.0], [t[1], t[2]]], axis=0),
        "keyword": lambda t: np.sum(a=[t[0], t[1]]),
        "astype": lambda t: np.astype([t[0], t[1]], numpy.float64),
        "zeros_like": lambda t: np.zeros_like([t[0], t[1]]) + t[0],
        "concatenate": lambda t: np.concatenate([[t[0], t[1]], t]),
        "stack": lambda t: np.stack([t[:2], [t[2], t[0]]]),
        # a sequence of arrays by keyword is read item by item too (it was stacked whole)
        "sequence keyword": lambda t: np.hstack(tup=[t[:2], t]),
        "linalg": lambda t: np.linalg.det([[t[0], t[1]], [t[2], 1.0]]),
    }
    for name, f in calls.items():
        plain = f(t)
        assert_close(wg.vjp(f, t)[0], plain, rtol=0, atol=0)
        check_grads(f, t, order=1)
    # the eager graph is the stacking and the function: no conversion through NumPy
    assert "stack" not in str(wg.trace(lambda t: np.exp(t), t))


def test_numpy_function_with_the_traced_value_second():
    """numpy.take_along_axis(plain, traced indices): NumPy's dispatch reaches wengert's
    function with a plain first argument, which must not be handed back to NumPy."""
    import numpy
    x = numpy.arange(6.0).reshape(3, 2)
    f = lambda w: np.sum(numpy.take_along_axis(x, np.argsort(w, axis=0), axis=0) * w)
    w = numpy.array([[3.0, 1.0], [1.0, 2.0], [2.0, 3.0]])
    want = numpy.take_along_axis(x, numpy.argsort(w, axis=0), axis=0)
    numpy.testing.assert_allclose(wg.grad(f)(w), want)


def test_dtype_shape_and_layout_utilities_take_traced_values():
    """What NumPy's queries say of a traced value is what they say of an array of its shape
    and dtype; the layout functions are asarray; each is NumPy's on plain values."""
    x32 = numpy.linspace(0.5, 2.0, 6).astype(numpy.float32).reshape(2, 3)
    m = r(3, 3)

    def queries(x, mod):
        return (mod.result_type(x, 1.0), mod.can_cast(x, numpy.float16),
                mod.common_type(x), mod.min_scalar_type(x), mod.iscomplexobj(x),
                mod.isrealobj(x), mod.isfortran(x), mod.iterable(x),
                mod.isscalar(x[0, 0]) if mod is np else True)
    seen = []
    wg.grad(lambda x: seen.append(queries(x, np)) or np.sum(x))(x32)
    assert seen[0] == queries(x32, numpy)[:-1] + (True,)    # (a traced 0-d: a scalar)
    assert np.isscalar(1.0) and not np.isscalar(numpy.ones(2))
    rows, cols = [], []
    wg.grad(lambda m: rows.append(np.tril_indices_from(m)) or cols.append(
        np.diag_indices_from(m)) or np.sum(m))(m)
    assert [a.tolist() for a in rows[0]] == [a.tolist() for a in numpy.tril_indices_from(m)]
    assert [a.tolist() for a in cols[0]] == [a.tolist() for a in numpy.diag_indices_from(m)]
    for fn in (np.asanyarray, np.ascontiguousarray, np.asfortranarray, np.require,
               np.asarray_chkfinite):
        check_grads(lambda x: fn(x) ** 2, m, order=1)
        assert fn(numpy.float32(2.0), numpy.float64).dtype == numpy.float64
        assert wg.trace(lambda x: fn(x, numpy.float64), x32).outputs[0].dtype == \
            numpy.float64
    with pytest.raises(ValueError, match="must not contain infs or NaNs"):
        wg.grad(lambda x: np.sum(np.asarray_chkfinite(x * numpy.inf)))(m)
    assert_close(wg.compile(lambda x: np.asarray_chkfinite(x) * 2, m)(m), 2 * m)


def test_cond_of_singular_and_empty_matrices_is_numpys():
    # at a singular matrix of a stack NumPy's cond is inf; ours raised inv's LinAlgError
    # for the whole stack, and cond(zeros) was nan (0/0), not inf.  Empty matrices: the
    # 2-norm, pinv and matrix_rank raised amax's error (QA)
    s = numpy.array([[1.0, 2.0], [2.0, 4.0]])
    stack = numpy.stack([s, numpy.array([[2.0, 1.0], [0.5, 3.0]])])
    for p in [None, 2, -2, "fro", 1, -1, numpy.inf, -numpy.inf]:
        want = numpy.linalg.cond(stack, p)
        got, back = wg.vjp(lambda a: np.linalg.cond(a, p), stack)
        assert_close(got, want, rtol=1e-12, atol=0)
        g = back(numpy.array([0.0, 1.0]))[0]                # the regular one's derivative
        assert_close(g[1], wg.grad(lambda a: np.linalg.cond(a, p))(stack[1]), rtol=1e-12)
    assert np.linalg.cond(numpy.zeros((2, 2))) == numpy.linalg.cond(numpy.zeros((2, 2)))
    assert wg.vjp(np.linalg.cond, numpy.zeros((2, 2)))[0] == numpy.inf
    # ... and under vmap and compile, which trace without values: the singular ones were
    # found by their values, so there 0/0 came out nan and inv raised for the whole batch
    batch = numpy.stack([numpy.eye(2), numpy.zeros((2, 2)), s, stack[1]])
    for p in [None, 2, -2, "fro", 1, -1, numpy.inf, -numpy.inf]:
        want = numpy.linalg.cond(batch, p)
        with warnings.catch_warnings():
            warnings.simplefilter("error")          # (NumPy's cond says nothing either)
            assert_close(wg.vmap(lambda a: np.linalg.cond(a, p))(batch), want, rtol=1e-12)
            compiled = wg.compile(lambda a: np.linalg.cond(a, p), batch[3])
            assert_close([compiled(m) for m in batch], want, rtol=1e-12)
    e = numpy.zeros((0, 0))
    assert wg.vjp(lambda a: np.linalg.norm(a, 2), e)[0] == 0.0
    assert wg.vjp(np.linalg.pinv, e)[0].shape == (0, 0)
    assert wg.vjp(lambda a: np.linalg.matrix_rank(a) * 1.0, e)[0] == 0
    with pytest.raises(numpy.linalg.LinAlgError, match="cond is not defined on empty"):
        wg.vjp(np.linalg.cond, e)
    # NumPy's max-of-absolute-values norms are 0 over an empty axis (amax's initial=0):
    # they raised amax's error, and vector_norm over an empty axis a reshape error (QA)
    for x, call in [(numpy.zeros(0), lambda x, m: m.norm(x, numpy.inf)),
                    (numpy.zeros((0, 3)), lambda x, m: m.norm(x, numpy.inf)),
                    (numpy.zeros((3, 0)), lambda x, m: m.norm(x, 1)),
                    (numpy.zeros((0, 3)), lambda x, m: m.vector_norm(x, axis=-1)),
                    (numpy.zeros((3, 0)), lambda x, m: m.vector_norm(x, axis=0, ord=1))]:
        want = call(x, numpy.linalg)
        got = wg.vjp(lambda x: call(x, np.linalg), x)[0]
        assert numpy.shape(got) == want.shape and numpy.array_equal(got, want)
    # ... as `initial` is the result of max and min over nothing
    for axis, keepdims in [(0, False), (None, False), (1, True), ((0, 1), True)]:
        x = numpy.zeros((0, 3), numpy.float32)
        want = numpy.max(x, axis=axis, keepdims=keepdims, initial=0)
        got = wg.vjp(lambda x: np.max(x, axis=axis, keepdims=keepdims, initial=0), x)[0]
        assert got.shape == want.shape and got.dtype == want.dtype
        assert numpy.array_equal(got, want)
    import wengert.scipy.linalg as wsl
    for f in (wsl.sqrtm, lambda a: wsl.lu_factor(a)[0]):
        assert wg.grad(lambda a: np.sum(f(a)))(e).shape == (0, 0)


def test_an_empty_index_list_selects_nothing_as_numpys():
    # NumPy reads [] as no integers (np.array([]) would be floats, which index nothing)
    a = r(2, 3, 4)
    for index in (([],), (slice(None), []), (slice(None), [], slice(1, None))):
        value, back = wg.vjp(lambda t: t[index], a)
        assert value.shape == a[index].shape
        assert numpy.array_equal(back(numpy.ones(value.shape))[0], numpy.zeros_like(a))
    with pytest.raises(IndexError):
        wg.vjp(lambda t: t[numpy.array([])], a)           # (as NumPy's)


def test_median_of_an_empty_slice_is_nan_as_numpys():
    a = r(2, 3, 4)
    for kw in ({"axis": 1}, {"axis": 1, "keepdims": True}, {}):
        with pytest.warns(RuntimeWarning, match="Mean of empty slice"), \
                numpy.errstate(all="ignore"):
            value, back = wg.vjp(lambda t: np.median(t[:, :0], **kw), a)
            want = numpy.median(a[:, :0], **kw)
        assert numpy.shape(value) == numpy.shape(want) and numpy.isnan(value).all()
        assert not back(numpy.ones(numpy.shape(value)))[0].any()


def test_median_and_quantiles_along_an_axis_of_an_empty_array_are_empty():
    # (reshape(..., -1) of a size-0 array raised)
    e = numpy.zeros((2, 0))
    for f in (lambda t: np.median(t, axis=0), lambda t: np.percentile(t, [10, 90], axis=0),
              lambda t: np.quantile(t, 0.3, axis=0, keepdims=True)):
        got = wg.vjp(f, e)[0]
        with numpy.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = f(e)                         # (on a plain array: NumPy's own)
        assert got.shape == want.shape and got.size == 0


def test_logsumexp_over_an_empty_axis_has_a_zero_gradient():
    e = numpy.zeros((2, 0))
    assert numpy.array_equal(wg.vjp(lambda z: np.logsumexp(z, axis=1), e)[0], [-numpy.inf] * 2)
    assert wg.grad(lambda z: np.sum(np.logsumexp(z, axis=1)))(e).shape == (2, 0)


def test_deepcopy_of_a_traced_value_is_the_value():
    # (the copy landed in a graph of its own: the gradient was 0, silently)
    import copy
    import pickle
    x = r(3)

    def loss(x):
        state = copy.deepcopy({"w": x * 2.0, "name": "layer"})
        return np.sum(copy.copy(state["w"]) ** 2)
    assert_close(wg.grad(loss)(x), 8 * x, rtol=1e-15)
    with pytest.raises(TypeError, match="cannot be pickled"):
        wg.grad(lambda x: pickle.dumps(x) and x)(1.0)


def test_vectorize_gives_numpys_output_dtype_on_traced_values():
    # NumPy: otypes, else the first element's result; traced, both were ignored
    x = numpy.array([-1.0, 2.5, 3.7])
    clip0 = np.vectorize(lambda t: 0 if t < 0 else t)          # an int first: int output
    value = wg.vjp(clip0, x)[0]
    assert value.dtype == clip0(x).dtype and numpy.array_equal(value, clip0(x))
    f32 = np.vectorize(lambda a: a * 2, otypes=[numpy.float32])
    assert wg.vjp(f32, x)[0].dtype == numpy.float32 == f32(x).dtype
    soft = np.vectorize(lambda t: t * t if t < 1 else 2.0 * t - 1.0)
    assert wg.vjp(soft, x)[0].dtype == numpy.float64
    check_grads(lambda t: soft(t), x, order=1)


def test_var_with_where_ignores_what_the_mask_leaves_out():
    # a masked-out inf or nan made the whole gradient nan
    a = numpy.array([[1.0, numpy.inf, 2.0], [numpy.nan, 3.0, 4.0]])
    m = numpy.array([[1, 0, 1], [0, 1, 1]], bool)
    for fn, nan_fn in ((np.var, np.nanvar), (np.std, np.nanstd)):
        assert_close(wg.vjp(lambda t: fn(t, axis=1, where=m), a)[0],
                     numpy.var(a, axis=1, where=m) if fn is np.var else
                     numpy.std(a, axis=1, where=m), rtol=1e-15)
        g = wg.grad(lambda t: np.sum(fn(t, axis=1, where=m)))(a)
        want = wg.grad(lambda t: np.sum(nan_fn(t, axis=1)))(numpy.where(m, a, numpy.nan))
        assert_close(g, want, rtol=1e-15)
    keep = numpy.array([[1, 0, 1, 1], [1, 1, 0, 1], [0, 1, 1, 1]], bool)
    check_grads(lambda t: np.var(t, axis=0, where=keep), r(3, 4), order=2)


def test_select_dot_inner_and_angle_give_numpys_dtypes():
    x = r(4).astype(numpy.float32)
    sel = lambda t: np.select([t > 0, t < -1], [t, 2.0], 1.5)      # noqa: E731
    assert wg.vjp(sel, x)[0].dtype == numpy.select([x > 0, x < -1], [x, 2.0], 1.5).dtype
    for f in ("dot", "inner"):                  # (a Python float is a float64 array there)
        want = getattr(numpy, f)(x, 2.0)
        got = wg.vjp(lambda t: getattr(np, f)(t, 2.0), x)[0]
        assert got.dtype == want.dtype and numpy.array_equal(got, want)
    for dt in (numpy.int8, numpy.int16, numpy.uint8, numpy.bool_, numpy.float16):
        a = numpy.array([1, 0, 1], dt)
        assert wg.trace(np.angle, a).outputs[0].dtype == numpy.angle(a).dtype


def test_a_float16_mean_is_summed_in_float32_as_numpys():
    for seed in range(40):
        a = (numpy.random.default_rng(seed).normal(size=37) * 20).astype(numpy.float16)
        for f in ("mean", "average", "var", "std"):
            assert wg.vjp(getattr(np, f), a)[0] == getattr(numpy, f)(a), (f, seed)


def test_radians_and_degrees_dispatch_from_numpy():
    # NumPy's radians and degrees are ufuncs apart from deg2rad and rad2deg
    x = r(3)
    for f in (numpy.radians, numpy.degrees, numpy.deg2rad, numpy.rad2deg):
        assert_close(wg.vjp(f, x)[0], f(x), rtol=0)
        check_grads(f, x, order=1)


def test_traced_keywords_numpys_dispatch_does_not_look_at():
    # pad's constant_values, a reduction's initial, nan_to_num's nan: traced, with a plain
    # first argument, NumPy made them plain arrays (ConcretizationError)
    x = numpy.array([1.0, 2.0, 3.0])
    cases = [(lambda c: np.sum(np.pad(x * c, 1, constant_values=c)), 8.0),
             (lambda c: np.sum(np.pad(x, (1, 2), constant_values=c)), 3.0),
             (lambda c: np.sum(x, initial=c), 1.0), (lambda c: np.max(x, initial=c), 0.0),
             (lambda c: np.max(x, initial=2 * c), 2.0),
             (lambda c: np.sum(np.nan_to_num(numpy.array([numpy.nan, 1.0]), nan=c)), 1.0),
             (lambda c: np.sum(np.nan_to_num(x * c, nan=c)), 6.0)]
    for f, slope in cases:
        assert wg.grad(f)(1.7) == slope
        check_grads(f, 1.7, order=1)
    with pytest.raises(NotImplementedError, match="constant_values per axis"):
        wg.grad(lambda c: np.sum(np.pad(x, 1, constant_values=np.stack([c, c]))))(1.0)


def test_numpys_errors_for_wheres_and_pads_arguments():
    x = r(3)
    with pytest.raises(ValueError, match="either both or neither of x and y"):
        wg.grad(lambda t: np.sum(np.where(t > 0, t)))(x)
    for mode, kw in (("edge", "constant_values"), ("wrap", "reflect_type"),
                     ("constant", "stat_length")):
        with pytest.raises(ValueError, match=f"unsupported keyword arguments for mode '{mode}'"):
            wg.grad(lambda t: np.sum(np.pad(t, 1, mode=mode, **{kw: 1})))(x)


def test_tile_takes_a_traced_count():
    x = r(3)
    g = wg.grad(lambda t: np.sum(np.tile(t, np.sum(t > -10))))(x)     # count 3
    assert_close(g, numpy.full(3, 3.0), rtol=0)


def test_hypots_second_derivative_at_the_origin_is_abss():
    # hypot(x, 0) = |x|: gradient 0 there and Hessian 0, not the identity
    h = wg.hessian(lambda v: np.hypot(v[0], v[1]))(numpy.zeros(2))
    assert numpy.array_equal(h, numpy.zeros((2, 2)))
    check_grads(lambda v: np.hypot(v[0], v[1]), r(2), order=2)


@pytest.mark.parametrize("spec,shapes", [
    ("ij,jk->ik", [(70, 60), (60, 50)]),            # 210,000 multiply-adds: BLAS's
    ("bhwc,oh->bowc", [(2, 40, 30, 3), (20, 40)]),   # 144,000: BLAS's, a tensordot
    ("ij,jk->ik", [(5, 4), (4, 3)]),                # NumPy's own loop
])
def test_einsum_through_blas_or_not_gives_numpys_values_and_derivatives(spec, shapes):
    r = numpy.random.default_rng(3)
    a, b = (r.normal(size=s) for s in shapes)
    assert A._worth_blas((a, b), spec) == (shapes[0] != (5, 4))
    want = numpy.einsum(spec, a, b)
    assert_close(wg.jit(lambda a, b: np.einsum(spec, a, b))(a, b), want, rtol=1e-12)
    c = r.normal(size=want.shape)
    ga, gb = wg.grad(lambda a, b: np.sum(np.einsum(spec, a, b) * c), argnums=(0, 1))(a, b)
    ins, out = spec.split("->")
    sa, sb = ins.split(",")
    assert_close(ga, numpy.einsum(f"{out},{sb}->{sa}", c, b), rtol=1e-12)
    assert_close(gb, numpy.einsum(f"{out},{sa}->{sb}", c, a), rtol=1e-12)
