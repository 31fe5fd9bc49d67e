"""SciPy's `scipy.cluster`, differentiable where JAX's `jax.scipy.cluster` is:
`wengert.scipy.cluster.vq.vq`, each observation's nearest code and its distance, the
distance differentiable in the observations and the code book (for k-means or a learned
quantiser fitted by gradient).

Example:
    >>> import numpy as np, wengert as wg
    >>> from wengert.scipy.cluster.vq import vq
    >>> book = np.array([[0.0, 0.0], [3.0, 4.0]])
    >>> vq(np.array([[3.0, 3.0]]), book)
    (array([1], dtype=int32), array([1.]))
"""
from . import vq  # noqa: F401

__all__ = ["vq"]
