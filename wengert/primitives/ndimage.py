"""The primitives under `wengert.scipy.ndimage`: the valid cross-correlation of its
filters, and the B-spline weights of its interpolation at orders 2 to 5.

correlate_valid(p, w) is y_i = Σ_k w_k p_(i+k) over every axis (p and w have the same
number of axes, w no longer than p on any): the filter's output where the kernel lies
wholly inside p.  A filter with a boundary mode is this primitive applied to the input
padded as the mode says (wengert.scipy.ndimage builds the padding from gathers and
concatenations, whose transposes fold the edges' cotangents back).  Bilinear, so

    JVP:  dy = correlate_valid(dp, w) + correlate_valid(p, dw)
    VJP:  p̄ = correlate_valid(ȳ padded with K − 1 zeros on each side, w flipped)
          w̄ = correlate_valid(p, ȳ)                    (ȳ as the kernel: K results)

Both are the primitive again, so the rules differentiate to any order.  Complex values
are holomorphic (the VJP transposes without conjugating, docs/complex.md).

The value is SciPy's own arithmetic: `scipy.ndimage.correlate1d` (a kernel along one
axis) or `scipy.ndimage.correlate` on p, cut to the valid part, so a filter of a padded
array is SciPy's filter to the last bit.  A result smaller than the kernel (the kernel's
cotangent) is summed window by window instead.  It is one primitive rather than a sum of
K shifted slices (its `decomposition`, the reference for its rules and Taylor mode's
route) because that sum costs K array operations forward and about 3K back: a 512 × 512
Gaussian blur (17 taps per axis) took 27 ms for the value and 70 ms for a gradient that
way (46 and 206 ms as a tensordot of sliding windows), 7.6 and 14 ms with the primitive
(benchmarks/ndimage_filters.py).

bspline_weights(u, degree=k, derivative=d) is the d-th derivative in u of the k + 1
weights with which a B-spline of degree k reads its coefficients around a point whose
fractional position is u (map_coordinates at orders 2 to 5), stacked on a new first axis.
Its derivative is the same primitive with d + 1 (a B-spline's derivative is a difference
of B-splines of one degree less), so the rules are one line each and go to any order:

    JVP:  dw = du · bspline_weights(u, degree=k, derivative=d + 1)
    VJP:  ū = Σ_j ḡ_j · bspline_weights(u, degree=k, derivative=d + 1)_j

Its decomposition is the Cox–de Boor recursion written with the graph's operations (about
35 of them at degree 3, 75 at degree 5, per axis; Taylor mode's route).  As one primitive
the gradient of a cubic warp of a 256 × 256 image at 65,536 points in image and
coordinates took 51 ms instead of the composition's 74 (benchmarks/scipy_fft_ndimage.py,
its warp3 problem), and the graph holds one node per axis instead of dozens.
"""
from __future__ import annotations

import math

import numpy as np

from .array import (concatenate, encode_index, flip, getitem, pad, reshape, sum, sum_nonzero,
                    transpose)
from .registry import defprimitive, shape_of
from .special import scipy_module


def valid_shape(sp, sw):
    return tuple(a - b + 1 for a, b in zip(sp, sw))


def _correlate_valid_np(p, w):
    p, w = np.asarray(p), np.asarray(w)
    dtype = np.result_type(p.dtype, w.dtype, np.float64)
    p = p.astype(dtype, copy=False)
    out_shape = valid_shape(p.shape, w.shape)
    if p.ndim == 0:
        return p * w
    if not math.prod(out_shape) or not w.size:
        return np.zeros(out_shape, dtype)
    if math.prod(out_shape) < w.size:
        # few results from a long kernel (the kernel's cotangent): one sum per result
        out = np.empty(out_shape, dtype)
        for j in np.ndindex(*out_shape):
            out[j] = np.sum(p[tuple(slice(a, a + n) for a, n in zip(j, w.shape))] * w)
        return out
    ndimage = scipy_module("ndimage")
    w = np.conj(w)                  # (SciPy's correlate conjugates complex weights)
    long = [a for a, k in enumerate(w.shape) if k > 1]
    if len(long) <= 1:
        axis = long[0] if long else 0
        full = ndimage.correlate1d(p, w.reshape(-1), axis=axis, mode="constant")
    else:
        full = ndimage.correlate(p, w, mode="constant")
    # (SciPy centres a kernel of length K on its element K // 2)
    return full[tuple(slice(k // 2, k // 2 + n) for k, n in zip(w.shape, out_shape))]


def _correlate_valid_aval(args, params):
    sp, sw = args[0].shape, args[1].shape
    if len(sp) != len(sw) or any(a < b for a, b in zip(sp, sw)):
        raise ValueError(f"correlate_valid: a kernel of shape {sw} does not fit in an array "
                         f"of shape {sp}")
    return valid_shape(sp, sw), np.result_type(args[0].dtype, args[1].dtype, np.float64)


correlate_valid = defprimitive(
    "correlate_valid", _correlate_valid_np, cost="call", abstract_eval=_correlate_valid_aval,
    doc="correlate_valid(p, w): y_i = Σ_k w_k p_(i+k), the kernel w wholly inside p "
        "(shape p.shape − w.shape + 1; the filters of wengert.scipy.ndimage).")
correlate_valid.complex = True


@correlate_valid.defjvp
def _(ts, p, w, ans):
    return sum_nonzero([correlate_valid(ts[0], w) if ts[0] is not None else None,
                        correlate_valid(p, ts[1]) if ts[1] is not None else None])


def _p_cotangent(g, p, w, ans):
    sw = shape_of(w)
    axes = tuple(range(len(sw)))
    return correlate_valid(pad(g, pad_width=tuple((k - 1, k - 1) for k in sw)),
                           flip(w, axes=axes))


correlate_valid.defvjp(_p_cotangent, lambda g, p, w, ans: correlate_valid(p, g))


def _decomposition(p, w):
    """Σ_k w_k p[k : k + n], one shifted slice per tap: the primitive's definition."""
    sw = shape_of(w)
    out_shape = valid_shape(shape_of(p), sw)
    total = None
    for k in np.ndindex(*sw):
        window = getitem(p, index=encode_index(tuple(slice(a, a + n)
                                                     for a, n in zip(k, out_shape))))
        term = getitem(w, index=k) * window
        total = term if total is None else total + term
    return total


correlate_valid.decomposition = _decomposition


def _batched(args, mapped, node):
    """A batch of arrays with one kernel: the batch axis is one more axis to correlate
    along, the kernel's of length one.  A batch of kernels: None (one call per example)."""
    (p, w), (_, mw) = args, mapped
    if mw:
        return None
    return correlate_valid(p, reshape(w, shape=(1,) + tuple(shape_of(w))))


correlate_valid.defbatch(_batched)


# ---- B-spline weights: what map_coordinates reads at orders 2 to 5 ----------------------
def cox_de_boor(u, order):
    """The order + 1 weights of the uniform B-spline of degree `order` on the order + 1
    coefficients around a point whose fractional part past the first one's knot is u in
    [0, 1), first coefficient first: the Cox–de Boor recursion b_d(u + i) = ((u + i)
    b_(d−1)(u + i) + (d + 1 − u − i) b_(d−1)(u + i − 1)) / d, sums of products of
    nonnegative numbers, so each weight is good to a few ulps.  u may be a number, a
    Fraction, an array or a node."""
    b = [1]                             # b[i] = b_d(u + i), i = 0, ..., d
    for d in range(1, order + 1):
        grown = []
        for i in range(d + 1):
            rising = (u + i) * b[i] if i < d else None
            falling = (d + 1 - i - u) * b[i - 1] if i else None
            term = rising if falling is None else falling if rising is None else \
                rising + falling
            grown.append(term / d)
        b = grown
    return b[::-1]


def _bspline_weights_np(u, degree, derivative):
    u = np.asarray(u, dtype=np.float64)
    if derivative > degree:
        return np.zeros((degree + 1,) + u.shape)
    w = np.stack([np.broadcast_to(np.asarray(b, dtype=np.float64), u.shape)
                  for b in cox_de_boor(u, degree - derivative)])
    for _ in range(derivative):
        # B_k' = B_(k−1)(x) − B_(k−1)(x − 1): weight j's slope is the lower degree's
        # weight j − 1 minus its weight j (zero beyond its ends)
        edge = np.zeros((1,) + u.shape)
        w = np.concatenate([edge, w]) - np.concatenate([w, edge])
    return w


def _bspline_weights_aval(args, params):
    return (params["degree"] + 1,) + tuple(args[0].shape), np.dtype(np.float64)


bspline_weights = defprimitive(
    "bspline_weights", _bspline_weights_np, cost="call", abstract_eval=_bspline_weights_aval,
    doc="bspline_weights(u, degree=k, derivative=d): the d-th derivative in u of the k + 1 "
        "weights of a degree-k B-spline at fractional position u, stacked on a new first "
        "axis (map_coordinates at orders 2 to 5).")
bspline_weights.defjvp(lambda ts, u, ans, degree, derivative: ts[0] * bspline_weights(
    u, degree=degree, derivative=derivative + 1))
bspline_weights.defvjp(lambda g, u, ans, degree, derivative: (sum(g * bspline_weights(
    u, degree=degree, derivative=derivative + 1), axis=(0,), keepdims=False),))
bspline_weights.defbatch(lambda args, mapped, node: transpose(
    bspline_weights(args[0], **node.params),
    axes=(1, 0) + tuple(range(2, len(node.shape) + 1))))


def _bspline_decomposition(u, degree, derivative):
    """The recursion written with the graph's operations (Taylor mode's route, and the
    reference for the rules)."""
    shape = (1,) + tuple(shape_of(u))
    if derivative > degree:
        rows = [reshape(u * 0.0, shape=shape)] * (degree + 1)
        return rows[0] if degree == 0 else concatenate(*rows, axis=0)
    rows = [reshape(u * 0.0 + b if isinstance(b, int) else b, shape=shape)
            for b in cox_de_boor(u, degree - derivative)]
    w = rows[0] if len(rows) == 1 else concatenate(*rows, axis=0)
    for _ in range(derivative):
        edge = reshape(u * 0.0, shape=shape)
        w = concatenate(edge, w, axis=0) - concatenate(w, edge, axis=0)
    return w


bspline_weights.decomposition = _bspline_decomposition
