"""wengert.numpy.lib: NumPy's ``numpy.lib``, with `stride_tricks.sliding_window_view`
differentiable (`wengert.numpy.lib.stride_tricks`); the rest is NumPy's own, and its
functions refuse traced values by name.

Example:
    >>> import numpy, wengert as wg, wengert.numpy as np
    >>> windows = lambda x: np.lib.stride_tricks.sliding_window_view(x, 2)
    >>> windows(numpy.arange(3.0)).tolist()
    [[0.0, 1.0], [1.0, 2.0]]
    >>> wg.grad(lambda x: np.sum(windows(x)))(numpy.arange(3.0))   # the middle is in both
    array([1., 2., 1.])
"""
import numpy as _np

from ..dispatch import rest_of as _rest_of
from . import stride_tricks

__all__ = ["stride_tricks"]         # (the one submodule of its own; the rest: NumPy's)
__getattr__ = _rest_of(_np.lib, globals())   # the rest of numpy.lib: NumPy's own
