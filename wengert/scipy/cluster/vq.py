"""SciPy's `scipy.cluster.vq.vq`, differentiable: vector quantisation, each observation
assigned the nearest code of a code book, with its Euclidean distance.

On plain values it *is* SciPy's.  On traced values the codes are `argmin`'s (integers, no
derivative) and the distance is written with `wengert.numpy`, differentiable in the
observations and the code book to any order: the gradient of a distance d = ‖o − c‖ is
(o − c)/d in o and its negative in the chosen code c, other codes get none.  Where an
observation sits on its code (d = 0) the gradient is 0, the norm's subgradient there
(JAX's `jax.scipy.cluster.vq.vq` gives nan, from ‖·‖'s formula): a code book started
from observations, as k-means often is, still has a gradient.

Example: the distortion of a quantiser, and its gradient in the code book (each code is
pulled toward the observations it holds):

    >>> import numpy as np, wengert as wg
    >>> from wengert.scipy.cluster.vq import vq
    >>> obs = np.array([[0.0, 1.0], [0.0, -1.0], [4.0, 0.0]])
    >>> book = np.array([[0.0, 0.5], [5.0, 0.0]])
    >>> vq(obs, book)[0]
    array([0, 0, 1], dtype=int32)
    >>> wg.grad(lambda b: wg.numpy.sum(vq(obs, b)[1] ** 2))(book)
    array([[0., 2.],
           [2., 0.]])
"""
from __future__ import annotations

import numpy as _np
import scipy.cluster.vq as _svq

from ... import numpy as _wnp
from ..linalg import scipy_unless_traced

__all__ = ["vq"]


@scipy_unless_traced(_svq)
def vq(obs, code_book, check_finite=True):
    """(codes, dists): for each observation (a row of obs, shape (M, N), or an entry of a
    1-d obs) the index of the nearest code (a row of code_book, (K, N), or an entry of a
    1-d one) and the Euclidean distance to it, as SciPy's: ties go to the first code,
    codes are int32 for floating inputs (int64 for integers, as SciPy's), distances in
    the inputs' common floating dtype.  `check_finite` is SciPy's (on traced values it
    checks the numbers where they are known).

    Differentiable in obs and code_book: d dist = (o − c)·(do − dc)/dist, 0 where an
    observation coincides with its code; codes have no derivative.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy.cluster.vq import vq
        >>> book = np.array([[0.0, 0.0], [10.0, 0.0]])
        >>> wg.grad(lambda o: vq(o, book)[1][0])(np.array([[3.0, 4.0]]))
        array([[0.6, 0.8]])
    """
    obs, code_book = _wnp.asarray(obs), _wnp.asarray(code_book)
    dtype = _np.result_type(obs.dtype, code_book.dtype)
    if dtype.kind not in "biuf":
        raise TypeError(f"vq: observations and codes must be real numbers, got {obs.dtype} "
                        f"and {code_book.dtype}")
    if obs.ndim != code_book.ndim:
        raise ValueError(f"vq: observation and code_book should have the same number of "
                         f"dimensions, got shapes {obs.shape} and {code_book.shape}")
    if obs.ndim == 1:
        obs, code_book = obs[:, None], code_book[:, None]
    elif obs.ndim != 2:
        raise ValueError(f"vq: obs and code_book must have 1 or 2 dimensions, got shapes "
                         f"{obs.shape} and {code_book.shape}")
    if obs.shape[1] != code_book.shape[1]:
        raise ValueError(f"vq: obs and code_book should have the same number of features "
                         f"(columns), got shapes {obs.shape} and {code_book.shape}")
    if code_book.shape[0] == 0:
        raise ValueError(f"vq: the code book is empty (shape {code_book.shape})")
    floating = dtype.kind == "f"
    work = dtype if floating else _np.dtype(_np.float64)    # (SciPy's cdist: float64)
    obs, code_book = obs.astype(work), code_book.astype(work)
    squared = _wnp.sum((obs[:, None, :] - code_book[None, :, :]) ** 2, axis=-1)
    codes = _wnp.argmin(squared, axis=1)
    # the distance again from the chosen codes alone, so that the derivative touches
    # M x N numbers, not the M x K x N of every pair
    nearest = _wnp.sum((obs - _wnp.take(code_book, codes, axis=0)) ** 2, axis=-1)
    positive = nearest > 0
    dists = _wnp.where(positive, _wnp.sqrt(_wnp.where(positive, nearest, 1)), 0)
    return codes.astype(_np.int32 if floating else _np.int64), dists.astype(work)
