"""wengert.numpy's functions that assemble arrays and take them apart."""
import numpy
import pytest

import wengert as wg
import wengert.numpy as np

rng = numpy.random.default_rng(11)


def r(*shape):
    return rng.normal(size=shape)


def pos(*shape):
    return rng.uniform(0.5, 2.0, size=shape)


def _same(got, want, exact=True):
    """got (a traced function's value) is NumPy's want: the same structure, shapes, dtypes
    and values."""
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w, exact)
        return
    assert numpy.shape(got) == numpy.shape(want)
    assert numpy.result_type(got) == numpy.result_type(want), (numpy.result_type(got),
                                                               numpy.result_type(want))
    if exact:
        numpy.testing.assert_array_equal(got, want)
    else:
        numpy.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15)


def test_transpose_refuses_axes_out_of_range():
    # (they used to wrap round into another axis)
    with pytest.raises(numpy.exceptions.AxisError):
        wg.trace(lambda x: np.transpose(x, (0, 5)), r(2, 3))
    assert wg.trace(lambda x: np.transpose(x, (1, -2)), r(2, 3))(r(2, 3)).shape == (3, 2)


def test_diag_keeps_integer_dtypes():
    i = numpy.arange(3)
    for f in (lambda v: np.diag(v, 1), lambda v: np.diag(v, -2)):
        got = wg.trace(f, i)
        assert got.outputs[0].dtype == f(i).dtype
        _same(got(i), f(i))
