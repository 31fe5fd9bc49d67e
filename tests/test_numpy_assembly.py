"""wengert.numpy's functions that assemble arrays and take them apart (append, block, insert,
delete, choose, resize, apply_along_axis, ...), the gufuncs matvec and vecmat, and the
array API's cumulative_sum and cumulative_prod: derivatives of the first and second order
against central differences, values and dtypes against NumPy's, wg.vmap and wg.compile, the
value-dependent ones under abstract tracing, and the functions that write in place."""
import warnings

import numpy
import pytest

import wengert as wg
import wengert.numpy as np
from fd import check_grads, check_complex_grads

rng = numpy.random.default_rng(11)


def r(*shape):
    return rng.normal(size=shape)


def pos(*shape):
    return rng.uniform(0.5, 2.0, size=shape)


MASK = numpy.array([True, False, True])
PICK = numpy.array([[0, 2, 1, 1], [1, 0, 0, 2], [2, 2, 1, 0]])

# name -> (f, args): f of traced arguments, smooth, nonlinear so that the second order means
# something; each is also compared with NumPy on the plain arguments
CASES = {
    "append flat": (lambda x, y: np.append(x, y) ** 2, [r(2, 3), r(4)]),
    "append axis": (lambda x, y: np.sin(np.append(x, y, axis=-2)) * x.sum(), [r(2, 3), r(1, 3)]),
    "append plain values": (lambda x: np.append(x, numpy.arange(3), axis=0) ** 3, [r(2)]),
    "append to plain": (lambda v: np.append(numpy.ones((2, 2)), v * v, 1), [r(2, 1)]),
    "block 2d": (lambda a, b, c: np.block([[a, b ** 2], [c]]) * c.sum(),
                 [r(2, 2), r(2, 1), r(1, 3)]),
    "block 1d and scalar": (lambda a, b: np.block([a, 1.0, b * a[0]]) ** 2, [r(3), r(2)]),
    "block deeper than arrays": (lambda a, b: np.block([[[a]], [[b ** 2]]]), [r(2), r(2)]),
    "column_stack": (lambda x, y: np.column_stack([x, y ** 2, x * y[:, :1].T[0]]),
                     [r(3), r(3, 2)]),
    "dstack": (lambda x, y: np.dstack([x ** 2, y, x[..., None] * y]), [r(2, 3), r(2, 3, 2)]),
    "concat": (lambda x, y: np.concat([x, y * x], axis=-1) ** 2, [r(2, 2), r(2, 2)]),
    "concat axis None": (lambda x, y: np.concat((x, y ** 2), axis=None), [r(2, 2), r(3)]),
    "copy": (lambda x: np.copy(x) * x, [r(2, 3)]),
    "delete int": (lambda x: np.delete(x, 1) ** 2, [r(2, 3)]),
    "delete negative axis": (lambda x: np.delete(x, -1, -1) ** 2, [r(2, 3)]),
    "delete list": (lambda x: np.sin(np.delete(x, [0, 2], axis=0)), [r(4, 2)]),
    "delete slice": (lambda x: np.delete(x, slice(None, None, -2), 1) ** 3, [r(2, 5)]),
    "delete mask": (lambda x: np.delete(x, MASK, 0) * x[0], [r(3, 2)]),
    "insert scalar index": (lambda x, v: np.insert(x, 1, v, axis=1) ** 2, [r(3, 2), r(3)]),
    "insert values across": (lambda x, v: np.insert(x, [1], v * v, axis=-1), [r(3, 4), r(1, 2)]),
    "insert several": (lambda x, v: np.insert(x, [0, 0, 4], v, axis=-1) ** 2, [r(2, 4), r(2, 3)]),
    "insert slice flat": (lambda x, v: np.sin(np.insert(x, slice(1, None), v)), [r(2, 2), r(1)]),
    "insert mask": (lambda x, v: np.insert(x, MASK, v, 0) * v.sum(), [r(3, 2), r(2)]),
    "insert scalar traced": (lambda x, s: np.insert(x, -1, s * s, 0), [r(3), r(1)[0]]),
    "diagflat": (lambda x: np.diagflat(x ** 2, -1) @ np.diagflat(x, -1), [r(2, 2)]),
    "permute_dims": (lambda x: np.permute_dims(x, (2, -3, 1)) ** 2, [r(2, 3, 4)]),
    "compress": (lambda x: np.compress([True, False, True], x, axis=-1) ** 2, [r(2, 3)]),
    "compress flat short": (lambda x: np.sin(np.compress([False, True, True], x)), [r(2, 2)]),
    "compress traced condition": (lambda x: np.compress(x[0] > 0, x, axis=1) ** 2, [r(2, 5)]),
    "choose": (lambda x, y, z: np.choose(PICK, [x, y ** 2, z]) * x, [r(3, 4), r(4), r(3, 1)]),
    "choose wrap": (lambda x, y: np.choose(PICK - 2, (x, y), mode="wrap") ** 2, [r(3, 4), r(3, 4)]),
    "choose clip": (lambda x: np.choose(PICK + 1, x, mode="clip") ** 2, [r(3, 4)]),
    "extract": (lambda x, y: np.extract(x > 0, y * x), [r(3, 4), r(3, 4)]),
    "resize larger": (lambda x: np.resize(x, (3, 5)) ** 2, [r(2, 3)]),
    "resize smaller": (lambda x: np.sin(np.resize(x, 4)), [r(2, 3)]),
    "unstack": (lambda x: np.unstack(x, axis=-1)[0] * np.unstack(x, axis=-1)[2], [r(2, 3)]),
    "trim_zeros": (lambda x: np.trim_zeros(np.concatenate([numpy.zeros(2), x, numpy.zeros(1)]))
                   ** 2, [r(3)]),
    "trim_zeros axis": (lambda x: np.trim_zeros(np.pad(x, 1), "f", axis=-1) ** 2, [r(2, 2)]),
    "broadcast_arrays": (lambda x, y: [a ** 2 for a in np.broadcast_arrays(x, y, 2.0)],
                         [r(3), r(2, 1)]),
    "apply_along_axis": (lambda x: np.apply_along_axis(lambda v: v[::-1] * v[0], -1, x),
                         [r(2, 3, 2)]),
    "apply_along_axis scalar results": (lambda x: np.apply_along_axis(
        lambda v: np.sum(v ** 2), 0, x), [r(3, 2)]),
    "apply_along_axis matrix results": (lambda x: np.apply_along_axis(
        lambda v: np.outer(v, v), 1, x), [r(3, 2, 2)]),
    "apply_along_axis closure": (lambda w: np.apply_along_axis(
        lambda v: np.sin(v * w), 1, numpy.arange(6.0).reshape(2, 3)), [r(3)]),
    "apply_over_axes": (lambda x: np.apply_over_axes(np.sum, x ** 2, [0, -1]), [r(2, 3, 2)]),
    "ediff1d": (lambda x: np.ediff1d(x) ** 2, [r(2, 3)]),
    "ediff1d edges": (lambda x, b: np.ediff1d(x, to_end=b * b, to_begin=3) ** 2,
                      [r(4), r(2)]),
    "matvec": (lambda m, v: np.matvec(m, v), [r(2, 3, 4), r(4)]),
    "matvec broadcast": (lambda m, v: np.sin(np.matvec(m, v)), [r(1, 3, 2), r(4, 1, 2)]),
    "vecmat": (lambda v, m: np.vecmat(v, m), [r(3), r(2, 3, 4)]),
    "vecmat broadcast": (lambda v, m: np.vecmat(v, m) ** 2, [r(2, 1, 3), r(4, 3, 2)]),
    "cumulative_sum": (lambda x: np.cumulative_sum(x, axis=-1, include_initial=True) ** 2,
                       [r(2, 3)]),
    "cumulative_sum 1d": (lambda x: np.sin(np.cumulative_sum(x)), [r(4)]),
    "cumulative_prod": (lambda x: np.cumulative_prod(x, axis=0, include_initial=True),
                        [pos(3, 2)]),
    "cumulative_prod 1d": (lambda x: np.cumulative_prod(x) ** 2, [r(4)]),
    "r_": (lambda x, y: np.r_[x, 2.0, y ** 2, 0:3, -1:1:3j] * x[0], [r(3), r(2)]),
    "r_ of matrices": (lambda x, y: np.r_[x, y * x[:1]] ** 2, [r(2, 3), r(1, 3)]),
    "r_ directive": (lambda x, y: np.sin(np.r_["0,2,0", x, x * y]), [r(3), r(3)]),
    "r_ directive axis": (lambda x, y: np.r_["-1,3,-2", x, y] ** 2, [r(2, 3), r(2, 3)]),
    "c_": (lambda x, y: np.c_[x, x * y, np.outer(x, y)] ** 2, [r(3), r(3)]),
}

if hasattr(numpy, "row_stack"):
    def _row_stack(x, y):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return np.row_stack([x, y ** 2])
    CASES["row_stack"] = (_row_stack, [r(3), r(2, 3)])


@pytest.mark.parametrize("name", sorted(CASES))
def test_first_and_second_order(name):
    f, args = CASES[name]
    check_grads(f, *args, order=2)


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


def test_r_and_c_keep_numpys_dtypes_and_refuse_the_matrix_directive():
    # (a Python float joins float32 items without raising their precision, as in NumPy)
    x = r(3).astype(numpy.float32)
    _same(wg.vjp(lambda x: np.r_[x, 1.0, 0:2], x)[0], numpy.r_[x, 1.0, 0:2])
    _same(wg.vjp(lambda x: np.c_[x, x], x)[0], numpy.c_[x, x])
    with pytest.raises(NotImplementedError, match="numpy.matrix"):
        wg.grad(lambda x: np.sum(np.r_["r", x, x]))(x)
    with pytest.raises(ValueError, match="first entry"):
        wg.grad(lambda x: np.sum(np.r_[x, "0", x]))(x)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_are_numpys(name):
    # on plain arguments the same function is NumPy's (wengert.numpy hands them over)
    f, args = CASES[name]
    _same(wg.vjp(f, *args)[0], f(*args), exact="matvec" not in name and "vecmat" not in name)


def c(*shape):
    return r(*shape) + 1j * r(*shape)


# with complex values (JAX's and autograd's convention, docs/complex.md): each is linear, or
# a product (matvec, vecmat, cumulative_prod), so the derivatives are NumPy's conjugates
COMPLEX = {
    "append block stacks": lambda z, w: np.append(z, w) * np.block([z[0], w]).sum()
    + np.column_stack([z[0], w]).sum() + np.dstack([z, z]).sum()
    + np.concat([z, z], axis=None).sum() + np.copy(w).sum(),
    "delete insert diagflat": lambda z, w: np.insert(np.delete(z, [0, 2], 1), [0, 1], w[:1], 1)
    .sum() + np.diagflat(w, 1).sum() * z[0, 0],
    "permute compress choose extract": lambda z, w: np.permute_dims(z).sum()
    * np.compress([True, False, True], w).sum() + np.choose([1, 0, 1], [w, z[1]])
    + np.extract(numpy.array([[True], [False]]), z[:, :1]),
    "resize unstack trim broadcast": lambda z, w: np.resize(w, 5)[1:4] * np.unstack(z, axis=1)[0]
    .sum() + np.trim_zeros(np.pad(w, 1)) + np.broadcast_arrays(z[:1, 0], w)[0],
    "apply ediff1d": lambda z, w: np.apply_along_axis(lambda v: v * v[0], 1, z)[:, :2].sum(1)
    + np.apply_over_axes(np.sum, z, 0)[0, 0] + np.ediff1d(w, to_begin=w[2])[1:],
    "matvec vecmat": lambda z, w: np.matvec(z, w) + np.vecmat(w, z.T),
    "cumulative": lambda z, w: np.cumulative_sum(w, include_initial=True)[1:]
    * np.cumulative_prod(z, axis=-1)[:, 2, None],
}


@pytest.mark.parametrize("name", sorted(COMPLEX))
def test_complex_values(name):
    f = COMPLEX[name]
    z, w = c(2, 3), c(3)
    _same(wg.vjp(f, z, w)[0], f(z, w), exact=False)
    check_complex_grads(f, z, w)
    check_complex_grads(f, z, w.real)


x34, y34 = r(3, 4), r(3, 4)

# calls of a traced x (and y) compared with NumPy's on the plain ones: NumPy's reading of
# the arguments (indices, slices, masks, broadcasting, dtypes) and its errors
CALLS = """
np.append(x, y[:1], 0)
np.append(x.astype(numpy.float32), numpy.arange(3, dtype=numpy.int8))
np.append(x.astype(numpy.float32), numpy.ones(2, numpy.float32))
np.block([[x, y], [y, x]])
np.block(x)
np.block([x[0], 1.0, y[1].astype(numpy.float32)])
np.block([x, (y,)])
np.block([[x], y])
np.block([[x], []])
np.column_stack([x[0, 0], y[0, 0]])
np.dstack([x[0], y[0]])
np.delete(x, 1)
np.delete(x, [], 0)
np.delete(x, slice(1, 3))
np.delete(x, slice(0, 4, 2), axis=1)
np.delete(x, numpy.array([1]), axis=1)
np.delete(x, [-1, 0, 0], axis=1)
np.delete(x, 7, 1)
np.delete(x, 2, 2)
np.delete(x, [True, False], 0)
np.delete(x.astype(numpy.float32), -2, None)
np.insert(x, 1, 5.0)
np.insert(x, 1, y[:, 0], axis=1)
np.insert(x, [1], y[:, :2], axis=1)
np.insert(x, slice(1, None), 7.0, 1)
np.insert(x, [2, 0, 2], y[:, :3], axis=1)
np.insert(x, numpy.array([True, False, True]), y[:1], 0)
np.insert(x, -1, y[0], 0)
np.insert(x, 4, y[:, 0], 1)
np.insert(x, [], y[:0], 0)
np.insert(x, numpy.array([], int), 1.0, 0)
np.insert(x, [], y, 0)
np.insert(x, 5, 1.0, 1)
np.insert(x, [5], 1.0, 1)
np.insert(x, [[1]], 1.0, 1)
np.insert(x.astype(int), 1, y[0], 0)
np.insert(x.astype(numpy.float32), [0, 1], y[0, :2], None)
np.diagflat(x[:2, :2], -1)
np.diagflat(x[0].astype(int), 2)
np.permute_dims(x)
np.permute_dims(x, (0, 2))
np.compress([True, True, False, True], x)
np.compress([True, True, False, True], x, axis=0)
np.compress([False, True], x, axis=-1)
np.choose(numpy.array([0, 3, -1, 1]), [x, y])
np.choose(numpy.array([1, 0, 2, 0]), x)
np.choose(numpy.array([1, 0, 2, 0]), [x[0], 1.0, y[1].astype(numpy.float32)])
np.choose(numpy.array([0.0, 1.0]), [x[0, :2], y[0, :2]])
np.choose(numpy.array([0, 1]), [x, y])
np.choose(numpy.array([0, 1, 0, 1]), [x, y], mode="fold")
np.extract(x > 0, y)
np.extract(numpy.ones(20, bool), x)
np.resize(x, (5, 5))
np.resize(x, 7)
np.resize(x, (0, 3))
np.resize(x, (2, -1))
np.unstack(x)
np.unstack(x[0, 0])
np.trim_zeros(x * 0)
np.trim_zeros(np.pad(x, 1))
np.trim_zeros(np.pad(x, 1), "b", axis=0)
np.trim_zeros(np.pad(x, 1), "x")
np.trim_zeros(np.pad(x[0], 2), "bf", axis=())
np.broadcast_arrays(x, y[0], 2.0)
np.broadcast_arrays(x, y[:2])
np.apply_along_axis(lambda r: r[0] > 0, 1, x)
np.apply_along_axis(lambda r: r, 2, x)
np.apply_along_axis(lambda r: r, 1, x[:, :0])
np.apply_over_axes(np.mean, x, 1)
np.apply_over_axes(lambda a, ax: a[0], x, 1)
np.ediff1d(x, to_end=y[0], to_begin=3)
np.ediff1d(x[0], to_begin=y)
np.ediff1d(x.astype(int), to_begin=1.5)
np.ediff1d(x > 0)
np.ediff1d(x[:1, :1], to_begin=[1.0, 2.0])
np.matvec(x, y)
np.matvec(x[0], y[0])
np.vecmat(y[:1], x.T)
np.vecmat(y[0], x[:, :1])
np.vecmat(x[0] * 1j, numpy.ones((4, 2)) + 2j)
np.matvec(x.astype(numpy.float32), numpy.ones(4, numpy.float32))
np.cumulative_sum(x, axis=1, dtype=numpy.float32)
np.cumulative_sum(x)
np.cumulative_sum(x[0, 0], include_initial=True)
np.cumulative_prod(x.astype(numpy.float32), axis=-2, include_initial=True)
np.cumulative_sum(x, axis=2)
np.cumulative_sum(x[:, :0], axis=1, include_initial=True)
np.cumulative_sum(x, axis=0, out=numpy.zeros((3, 4)))
np.compress([True, False, True], x, 0, out=numpy.zeros((2, 4)))
np.choose(numpy.array([0, 1, 0, 1]), [x, y], out=numpy.zeros((3, 4)))
""".strip().splitlines()


@pytest.mark.parametrize("call", CALLS)
def test_calls_on_traced_values_follow_numpy(call):
    f = lambda x, y: eval(call)
    if "out=" in call:                              # refused on traced values, by name
        name = call[3:call.index("(")]
        with pytest.raises(NotImplementedError, match=rf"numpy\.{name}\(\.\.\., out=\.\.\.\)"):
            wg.vjp(f, x34, y34)
        return
    try:
        want = f(x34, y34)
    except Exception as e:                          # NumPy's error, or one of its kind
        with pytest.raises(type(e)):
            wg.vjp(f, x34, y34)
        return
    _same(wg.vjp(f, x34, y34)[0], want, exact="matvec" not in call and "vecmat" not in call)


def test_plain_calls_are_numpys():
    # with no traced argument, each function is NumPy's: the same object types and values
    a, b = r(3, 4), r(4)
    for call in ("append(a, b)", "block([[a], [a]])", "column_stack([b, b])",
                 "dstack([a, a])", "concat([a, a])", "copy(a)", "delete(a, 1, 0)",
                 "insert(a, [1, 2], 0.5, 1)", "diagflat(b)", "permute_dims(a)",
                 "compress([True, False], a)", "choose([0, 1, 0, 1], [b, 2 * b])",
                 "extract(a > 0, a)", "resize(a, (5, 2))", "unstack(a)",
                 "trim_zeros(numpy.array([0.0, 1.0, 0.0]))", "broadcast_arrays(a, b)",
                 "apply_along_axis(numpy.sort, 1, a)", "apply_over_axes(numpy.sum, a, 0)",
                 "ediff1d(b, to_begin=0)", "matvec(a, b)", "vecmat(b, a.T)",
                 "cumulative_sum(b, include_initial=True)", "cumulative_prod(a, axis=1)"):
        got = eval("np." + call, {"np": np, "numpy": numpy, "a": a, "b": b})
        want = eval("numpy." + call, {"numpy": numpy, "a": a, "b": b})
        assert type(got) is type(want), call
        _same(got, want)


def test_numpy_dispatches_to_them():
    # unmodified NumPy code on traced values: NumPy's protocols hand the calls over
    x = r(3)
    g = wg.grad(lambda x: numpy.sum(numpy.append(x, x ** 2)) + numpy.insert(x, 0, 1.0)[-1])(x)
    numpy.testing.assert_allclose(g, 1.0 + 2 * x + [0.0, 0.0, 1.0])
    g = wg.grad(lambda x: numpy.sum(numpy.block([[x], [x]]) * numpy.resize(x, (2, 3))))(x)
    numpy.testing.assert_allclose(g, 4 * x)
    m = r(2, 3)
    g = wg.grad(lambda x: numpy.sum(numpy.matvec(m, x)))(x)        # a gufunc: __array_ufunc__
    numpy.testing.assert_allclose(g, m.sum(0))
    g = wg.grad(lambda x: numpy.sum(numpy.delete(numpy.cumulative_sum(x), 0)))(x)
    numpy.testing.assert_allclose(g, [2.0, 2.0, 1.0])
    g = wg.grad(lambda x: numpy.sum(numpy.apply_along_axis(lambda v: v * v, 0, x)))(x)
    numpy.testing.assert_allclose(g, 2 * x)


# functions that need no value: batched by wg.vmap, and compiled
STAGED = {
    "append": lambda x, y: np.append(x, y, axis=-1),
    "block": lambda x, y: np.block([[x, y], [y, x]]),
    "column_stack dstack": lambda x, y: np.column_stack([x[:, 0], y])[:, 1:]
    + np.dstack([x, y])[..., 1],
    "delete insert": lambda x, y: np.insert(np.delete(x, [0, 2], 1), [1, 1], y[:, :2], 1),
    "insert scalar index": lambda x, y: np.insert(x, 2, y[:, 0], axis=1),
    "diagflat": lambda x, y: np.diagflat(x[0]) * y[0, 0],
    "compress extract": lambda x, y: np.compress([True, False, True], x, 0).sum()
    + np.extract(numpy.eye(3, 4, dtype=bool), y),
    "choose": lambda x, y: np.choose(PICK, [x, y, x * y]),
    "choose traced indices": lambda x, y: np.choose(np.argmax(x, 0), y, mode="wrap"),
    "resize unstack": lambda x, y: np.resize(x, (5, 3)).sum(0) + np.unstack(y, axis=1)[1],
    "broadcast_arrays": lambda x, y: np.broadcast_arrays(x[:1], y),
    "apply": lambda x, y: np.apply_along_axis(lambda v: v @ v, 1, x)
    + np.apply_over_axes(np.sum, y, 1)[:, 0],
    "ediff1d": lambda x, y: np.ediff1d(x, to_begin=y[0], to_end=1.0),
    "matvec vecmat": lambda x, y: np.matvec(x.T, y[:, 0]) + np.vecmat(x[:, 0], y),
    "cumulative": lambda x, y: np.cumulative_sum(x, axis=1, include_initial=True)
    * np.cumulative_prod(y, axis=-1, include_initial=True),
}


@pytest.mark.parametrize("name", sorted(STAGED))
def test_vmap_and_compile(name):
    f = STAGED[name]
    xs, ys = r(2, 3, 4), r(2, 3, 4)
    want = [f(a, b) for a, b in zip(xs, ys)]
    got = wg.vmap(f)(xs, ys)
    if isinstance(want[0], tuple):
        for i, g in enumerate(got):
            numpy.testing.assert_allclose(g, numpy.stack([w[i] for w in want]), rtol=1e-13)
    else:
        numpy.testing.assert_allclose(got, numpy.stack(want), rtol=1e-13, atol=1e-14)
    compiled = wg.compile(f, xs[0], ys[0])
    for a, b, w in zip(xs, ys, want):
        for g, w_ in zip(*(v if isinstance(w, tuple) else (v,) for v in (compiled(a, b), w))):
            numpy.testing.assert_allclose(g, w_, rtol=1e-13, atol=1e-14)
    # and the gradient, compiled, is the eager one
    loss = lambda x, y: sum(np.sum(o ** 2) for o in (
        f(x, y) if isinstance(want[0], tuple) else [f(x, y)]))
    grads = wg.compile(wg.grad(loss, argnums=(0, 1)), xs[0], ys[0])(xs[1], ys[1])
    for g, e in zip(grads, wg.grad(loss, argnums=(0, 1))(xs[1], ys[1])):
        numpy.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("call, what", [
    ("np.trim_zeros(x)", "trim_zeros"),
    ("np.extract(x > 0, x)", "numpy.extract"),
    ("np.compress(x[:, 0] > 0, x, axis=0)", "numpy.compress"),
    ("np.delete(x, np.argmax(x[0]), 1)", "numpy.delete"),
    ("np.insert(x, np.argmax(x[0]), 0.0, 1)", "numpy.insert"),
    ("np.choose(np.argmax(x, 0), x)", "choose"),
    ("np.choose(np.argmax(x, 0), x, mode='raise')", "'wrap'"),
])
def test_value_dependent_functions_need_a_value(call, what):
    f = lambda x: eval(call)
    x = r(3, 4)
    wg.vjp(f, x)                                    # eagerly: the value is there
    with pytest.raises(wg.ConcretizationError, match=what):
        wg.trace(f, x)
    with pytest.raises(wg.ConcretizationError):
        wg.vmap(f)(r(2, 3, 4))


def test_insert_and_delete_take_the_cheap_paths():
    # one index, or evenly spaced positions, are slices and joins: no integer-array
    # indexing (whose derivative scatters with numpy.add.at)
    text = str(wg.trace(lambda x: np.insert(np.delete(x, slice(0, 4, 2), 1), 1, 0.0, 1),
                        r(3, 4)))
    assert "array(" not in text and "index_add" not in text
    text = str(wg.trace(lambda x: np.delete(x, [0, 2, 4]), r(5)))
    assert "array(" not in text and "('slice', 1, 4, 2)" in text


def test_apply_along_axis_calls_func1d_once_per_slice():
    # a plain array and a func1d of traced variables: NumPy starts, wengert takes over from
    # the first result without calling func1d again
    calls = []

    def f(w):
        def row(v):
            calls.append(1)
            return v * w
        return np.sum(np.apply_along_axis(row, 1, numpy.ones((4, 2))))
    g = wg.grad(f)(numpy.array([1.0, 2.0]))
    assert g.tolist() == [4.0, 4.0] and len(calls) == 4
    calls.clear()
    assert numpy.apply_along_axis(lambda v: calls.append(1) or v, 0, numpy.ones((2, 3))).shape \
        == (2, 3) and len(calls) == 3


def test_choose_with_traced_indices_without_a_value_is_recorded():
    # mode 'wrap' and 'clip' need no value: the indices are recorded, wrapped or clipped
    x = r(3, 4)
    for mode in ("wrap", "clip"):
        f = lambda x: np.choose(np.argmax(x, 0) * 2 - 1, [x[0], x[1], x[2]], mode=mode)
        want = numpy.choose(numpy.argmax(x, 0) * 2 - 1, list(x), mode=mode)
        numpy.testing.assert_array_equal(wg.trace(f, x)(x), want)
        numpy.testing.assert_array_equal(wg.compile(f, x)(x), want)


def test_transpose_refuses_axes_out_of_range():
    # (they used to wrap round into another axis)
    with pytest.raises(numpy.exceptions.AxisError):
        wg.trace(lambda x: np.transpose(x, (0, 5)), r(2, 3))
    with pytest.raises(numpy.exceptions.AxisError):
        wg.trace(lambda x: np.permute_dims(x, (-3, 0)), r(2, 3))
    assert wg.trace(lambda x: np.transpose(x, (1, -2)), r(2, 3))(r(2, 3)).shape == (3, 2)


def test_diag_keeps_integer_dtypes():
    i = numpy.arange(3)
    for f in (lambda v: np.diag(v, 1), lambda v: np.diagflat(v)):
        got = wg.trace(f, i)
        assert got.outputs[0].dtype == f(i).dtype
        _same(got(i), f(i))


IN_PLACE = {
    "putmask": ("putmask(t, t > 0, 1.0)", r"np\.where\(mask, values, a\)"),
    "place": ("place(t, t > 0, [1.0])", r"wengert\.numpy\.place\(\.\.\., inplace=False\)"),
    "copyto": ("copyto(t, 1.0, where=t > 0)", r"np\.where\(where, src, dst\)"),
    "put": ("put(t, [0], 1.0)", r"wengert\.numpy\.put\(\.\.\., inplace=False\)"),
    "put_along_axis": ("put_along_axis(t, numpy.zeros((3, 1), int), 1.0, 1)",
                       r"wengert\.numpy\.put_along_axis\(\.\.\., inplace=False\)"),
    "fill_diagonal": ("fill_diagonal(t, 1.0)",
                      r"wengert\.numpy\.fill_diagonal\(\.\.\., inplace=False\)"),
}


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_functions_that_write_in_place_refuse_traced_values(name):
    call, alternative = IN_PLACE[name]
    message = rf"numpy\.{name} writes into its argument in place.*{alternative}"
    for ns in (np, numpy):                          # ours, and NumPy's through its protocol
        def writes_traced(x):
            eval(f"ns.{call}", {"ns": ns, "numpy": numpy, "t": x})
            return np.sum(x)
        with pytest.raises(NotImplementedError, match=message):
            wg.grad(writes_traced)(r(3, 3))
        with pytest.raises(NotImplementedError, match=message):
            wg.trace(writes_traced, r(3, 3))

    def writes_into_plain(v):                       # the values written are traced
        t = numpy.zeros((3, 3))
        eval(f"np.{call}".replace("1.0", "v"), {"np": np, "numpy": numpy, "t": t, "v": v})
        return np.sum(v)
    with pytest.raises(NotImplementedError, match=message):
        wg.grad(writes_into_plain)(2.0)


def test_in_place_functions_read_traced_indices_into_plain_arrays():
    # only the mask or the indices traced: nothing traced is written, NumPy reads their values
    def f(x):
        t = numpy.zeros(3)
        np.putmask(t, x > 0, 1.0)
        np.put(t, np.argmax(x), 5.0)
        return np.sum(x * t)
    x = numpy.array([1.0, -2.0, 3.0])
    assert wg.grad(f)(x).tolist() == [1.0, 0.0, 5.0]


def test_the_functional_alternatives_differentiate():
    # what the in-place errors of putmask and copyto suggest
    a, v = r(3, 3), 2.0
    mask = numpy.zeros(a.shape, bool)
    numpy.fill_diagonal(mask, True)
    g = wg.grad(lambda a, v: np.sum(np.where(mask, v, a) ** 2), argnums=(0, 1))(a, v)
    numpy.testing.assert_allclose(g[0], 2 * numpy.where(mask, 0.0, a))
    assert g[1] == pytest.approx(2 * v * 3)


# NumPy's functions that write into their first argument, and the calls that return the
# new array instead (JAX's inplace=False): (call, the array's shape, the values' shape)
WRITTEN = [
    ("put(a, [0, 5, -1, 0], v, inplace=False)", (2, 3), (3,)),        # repeated, v repeated
    ("put(a, [7, -9], v, mode='wrap', inplace=False)", (2, 3), (2,)),
    ("put(a, [7, 2], v, mode='clip', inplace=False)", (2, 3), ()),
    ("place(a, numpy.eye(3) > 0, v, inplace=False)", (3, 3), (2,)),
    ("place(a, numpy.eye(3) > 1, v, inplace=False)", (3, 3), (2,)),  # nothing placed
    ("put_along_axis(a, numpy.array([[1], [0], [2]]), v, 1, inplace=False)", (3, 3), (3, 1)),
    ("put_along_axis(a, numpy.array([[2, 0, 1]]), v, 0, inplace=False)", (3, 3), (1, 3)),
    ("put_along_axis(a, numpy.array([4, 0]), v, None, inplace=False)", (2, 3), ()),
    ("fill_diagonal(a, v, inplace=False)", (3, 3), (2,)),
    ("fill_diagonal(a, v, wrap=True, inplace=False)", (7, 3), (3,)),
    ("fill_diagonal(a, v, inplace=False)", (2, 2, 2), ()),
]


@pytest.mark.parametrize("call, ashape, vshape", WRITTEN, ids=[c[0] for c in WRITTEN])
def test_inplace_false_returns_what_numpy_writes_and_differentiates(call, ashape, vshape):
    from fd import check_grads
    a, v = r(*ashape), r(*vshape) if vshape else 0.7
    f = lambda a, v: eval("np." + call, {"np": np, "numpy": numpy, "a": a, "v": v})
    want = a.copy()
    eval("numpy." + call.replace(", inplace=False", ""), {"numpy": numpy, "a": want, "v": v})
    for got in (f(a, v), wg.trace(f, a, v)(a, v), wg.compile(f, a, v)(a, v)):
        numpy.testing.assert_array_equal(got, want)
    check_grads(lambda a, v: np.sum(np.sin(f(a, v)) * numpy.arange(a.size).reshape(a.shape)),
                a, v, order=2)


def test_inplace_false_keeps_numpys_errors_and_the_arrays_dtype():
    a = numpy.zeros((2, 2), numpy.float32)
    with pytest.raises(IndexError, match="index 4 is out of bounds"):
        wg.grad(lambda v: np.sum(np.put(a, [4], v, inplace=False)))(1.0)
    with pytest.raises(ValueError, match="Cannot insert from an empty array"):
        wg.trace(lambda v: np.place(a, a == 0, v[:0], inplace=False), numpy.ones(2, "f4"))
    # place casts safely (float64 values into float32 raise), traced or not
    for f in (lambda v: np.place(a, a == 0, v, inplace=False),
              lambda v: np.place(wg.stop_gradient(a * 1), a == 0, v, inplace=False)):
        with pytest.raises(TypeError, match="Cannot cast"):
            wg.grad(lambda v: np.sum(f(v)))(numpy.ones(2))
        with pytest.raises(TypeError, match="Cannot cast"):
            f(numpy.ones(2))
    out = wg.trace(lambda v: np.fill_diagonal(a, v, inplace=False), 2.0)
    assert out.outputs[0].dtype == numpy.float32
    assert np.put(numpy.arange(3), [1], 7.9, inplace=False).tolist() == [0, 7, 2]
    # nothing written: still a new array, never the caller's own
    b = numpy.arange(3.0)
    kept = wg.vjp(lambda v: np.put(b, [], v, inplace=False), numpy.ones(1))[0]
    assert kept is not b and kept.tolist() == b.tolist()


def test_in_place_functions_are_numpys_on_plain_arrays():
    a = r(3, 4)
    for call in ("putmask(t, t > 0, -1.0)", "place(t, t > 0, [7.0, 8.0])",
                 "copyto(t, 2.0, where=t < 0)", "put(t, [0, -1], [5.0, 6.0])",
                 "put_along_axis(t, numpy.array([[1], [0], [2]]), 9.0, 1)",
                 "fill_diagonal(t, 4.0, wrap=True)"):
        mine, theirs = a.copy(), a.copy()
        assert eval("np." + call, {"np": np, "numpy": numpy, "t": mine}) is None
        eval("numpy." + call, {"numpy": numpy, "t": theirs})
        numpy.testing.assert_array_equal(mine, theirs)


# ---- piecewise ------------------------------------------------------------------------------
PIECES = [  # (conditions of x, functions): a later condition wins; an extra one is the otherwise
    (lambda x: [x < 0], [lambda t: t ** 3, lambda t: numpy.sin(t) * 2]),
    (lambda x: [x < -0.5, x > 0.5], [lambda t: t * t.mean(), 4.0, lambda t: numpy.exp(t)]),
    (lambda x: [x < 1.0, x < 0.0], [lambda t: t ** 2, lambda t: -t]),      # overlapping
    (lambda x: x > 0, [lambda t: numpy.sqrt(t), 0.0]),   # sqrt only where it is defined
]


@pytest.mark.parametrize("case", range(len(PIECES)))
def test_piecewise_matches_numpy_and_differentiates(case):
    conds, funcs = PIECES[case]
    x = numpy.array([-1.7, -0.8, -0.3, 0.2, 0.7, 1.4, 2.2]).reshape(7)
    f = lambda x: np.piecewise(x, conds(wg.value(x)), funcs)     # noqa: E731
    numpy.testing.assert_allclose(f(x), numpy.piecewise(x, conds(x), funcs), rtol=1e-15)
    check_grads(f, x, order=2)                        # (away from the boundaries)
    g = lambda x: np.sum(numpy.piecewise(x, conds(x), funcs))   # noqa: E731  (NumPy's name)
    numpy.testing.assert_allclose(wg.grad(g)(x), wg.grad(lambda x: np.sum(f(x)))(x))


def test_piecewise_edge_cases_and_errors():
    x = numpy.array([[-1.0, 2.0], [3.0, -4.0]])
    f = lambda x: np.piecewise(x, x > 0, [lambda t: 3 * t, lambda t: -t])   # noqa: E731
    numpy.testing.assert_array_equal(f(x), numpy.piecewise(x, x > 0, [lambda t: 3 * t,
                                                                     lambda t: -t]))
    assert wg.grad(lambda x: np.sum(f(x)))(x).tolist() == [[-1.0, 3.0], [3.0, -1.0]]
    assert wg.grad(lambda s: np.piecewise(s, [s > 0], [lambda t: t * t]))(3.0) == 6.0
    # nothing holds and no otherwise: NumPy's 0, without derivative
    assert wg.grad(lambda s: np.piecewise(s, [s > 9], [lambda t: t * t]))(3.0) == 0.0
    with pytest.raises(ValueError, match="with 1 condition"):
        wg.grad(lambda x: np.sum(np.piecewise(x, [x > 0], [1.0, 2.0, 3.0])))(x)
    with pytest.raises(wg.ConcretizationError, match="condition by numpy.piecewise"):
        wg.compile(lambda x: np.piecewise(x, [x > 0], [lambda t: t]), x)
    plain = wg.compile(lambda x: np.piecewise(x, [numpy.array([[True, False],
                                                               [False, True]])],
                                                 [lambda t: 2 * t]), x)
    numpy.testing.assert_array_equal(plain(x), [[-2.0, 0.0], [0.0, -8.0]])


# ---- vectorize --------------------------------------------------------------------------------
def test_vectorize_by_vmap_or_by_element():
    x = numpy.array([-2.0, -0.3, 0.5, 1.7, 3.0])
    smooth = np.vectorize(lambda t: numpy.sin(t) * t ** 2)      # no branch: one vmap
    branchy = np.vectorize(lambda t: t * t / 2 if abs(t) < 1 else abs(t) - 0.5)
    for f in (smooth, branchy):
        numpy.testing.assert_allclose(f(wg.value(x)), numpy.vectorize(f.pyfunc)(x),
                                      rtol=1e-15)
        check_grads(f, x, order=2)
    numpy.testing.assert_allclose(wg.compile(smooth, x)(x + 1), smooth(x + 1), rtol=1e-15)
    with pytest.raises(wg.ConcretizationError):
        wg.compile(branchy, x)                   # (a branch needs values: eager calls)
    assert smooth(2.0) == numpy.vectorize(smooth.pyfunc)(2.0)   # plain: NumPy's


def test_vectorize_broadcasts_excludes_and_returns_tuples():
    x, y = numpy.array([0.5, 1.0, 2.0]), numpy.array([[1.0], [2.0]])
    both = np.vectorize(lambda a, b: (a * b, a + b))
    prod, total = both(x, y)
    assert prod.shape == total.shape == (2, 3)
    check_grads(lambda x, y: both(x, y)[0] + both(x, y)[1] ** 2, x, y, order=2)
    power = np.vectorize(lambda a, p: a ** p if a > 1 else a, excluded={"p"})
    assert wg.grad(lambda x: np.sum(power(x, p=3.0)))(x).tolist() == [1.0, 1.0, 12.0]
    with pytest.raises(NotImplementedError, match="signature"):
        wg.grad(lambda x: np.sum(np.vectorize(lambda v: v.sum(), signature="(n)->()")(x)))(x)
    with pytest.raises(ValueError, match="size 0 inputs"):
        wg.grad(lambda x: np.sum(np.vectorize(lambda t: t)(x[:0])))(x)
