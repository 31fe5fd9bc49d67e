"""wengert.numpy.lib.stride_tricks: `sliding_window_view`, differentiable; the rest
(``as_strided``, which makes views of any memory) is NumPy's own, refused on traced values.
NumPy's protocol brings ``numpy.lib.stride_tricks.sliding_window_view`` of a traced value
here too.

Example:
    >>> import numpy, wengert as wg
    >>> from wengert.numpy.lib.stride_tricks import sliding_window_view
    >>> x = numpy.arange(4.0)
    >>> moving_average = lambda x: sliding_window_view(x, 3).mean(axis=-1)
    >>> moving_average(x).tolist()
    [1.0, 2.0]
    >>> wg.grad(lambda x: moving_average(x)[1])(x).round(4)
    array([0.    , 0.3333, 0.3333, 0.3333])
"""
import numpy as _np

from .. import _axes, _numpy_unless_traced, _stand_in, moveaxis, take
from ..dispatch import rest_of as _rest_of

_numpy = _np.lib.stride_tricks


@_numpy_unless_traced(_numpy.sliding_window_view)
def sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    """NumPy's ``sliding_window_view``, differentiable: along each axis of `axis` (all by
    default; one may come again) of length n, the n − w + 1 windows of length w, their
    dimension appended at the end, in order.  NumPy's is a view; here each window is
    gathered (``take`` with an index of shape (n − w + 1, w)), so that the derivative adds
    the cotangent of every window an element is in (a scatter-add).  A traced value cannot
    be written into: ``writeable=True`` is refused.

    Example:
        >>> import numpy, wengert as wg, wengert.numpy as np
        >>> from wengert.numpy.lib.stride_tricks import sliding_window_view
        >>> x = numpy.arange(6.0).reshape(2, 3)
        >>> sliding_window_view(x, (2, 2)).shape
        (1, 2, 2, 2)
        >>> wg.grad(lambda x: np.sum(sliding_window_view(x, 2, axis=-1)))(x)
        array([[1., 2., 1.],
               [1., 2., 1.]])
    """
    if writeable:
        raise NotImplementedError(
            "numpy.lib.stride_tricks.sliding_window_view(..., writeable=True) is not "
            "supported on traced values: a traced value is never written into; compute a "
            "new array from the windows instead")
    # NumPy's checks and errors, on a stand-in of x's shape (a view of one zero: no memory)
    _numpy.sliding_window_view(_stand_in(x), window_shape, axis)
    window_shape = tuple(window_shape) if _np.iterable(window_shape) else (window_shape,)
    axes = range(x.ndim) if axis is None else _axes(axis, x.ndim, "sliding_window_view",
                                                    repeats=True)
    # Each axis keeps its place, shortened to the windows' starts; the window's dimension
    # goes last.  (An axis windowed again is windowed in its starts, as NumPy's is.)
    for ax, w in zip(axes, window_shape):
        starts = _np.arange(x.shape[ax] - w + 1)
        x = moveaxis(take(x, starts[:, None] + _np.arange(w), axis=ax), ax + 1, -1)
    return x


__getattr__ = _rest_of(_numpy, globals())   # the rest of numpy.lib.stride_tricks: NumPy's
