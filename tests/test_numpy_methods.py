"""The methods of the binary ufuncs on traced values (outer, reduce, accumulate, reduceat),
sliding_window_view, kaiser, and the functions that read a traced value's value (printing,
array_equiv): derivatives against central differences to second order, values and dtypes
against NumPy's, wg.compile and wg.vmap, and the errors NumPy gives or wengert refuses with."""
import numpy
import pytest

import wengert as wg
import wengert.numpy as np
from wengert.numpy.lib.stride_tricks import sliding_window_view
from fd import check_grads, check_complex_grads, assert_close

rng = numpy.random.default_rng(23)


def r(*shape):
    return rng.normal(size=shape)


def value(f, *args):
    """f's result on traced args (eager tracing, with values), as plain values."""
    return wg.value(wg.vjp(f, *args)[0])


def same(got, want, rtol=1e-13):
    """Equal values (within rounding of NumPy's order where a primitive reduces), shapes
    and dtypes."""
    assert numpy.shape(got) == numpy.shape(want), (numpy.shape(got), numpy.shape(want))
    assert numpy.result_type(got) == numpy.result_type(want), \
        (numpy.result_type(got), numpy.result_type(want))
    numpy.testing.assert_allclose(got, want, rtol=rtol, atol=1e-300)


def numpys_reduce(u, x, **kw):
    """``u.reduce(x, **kw)`` as NumPy defines it: a left fold, u(u(x₀, x₁), x₂)...
    NumPy 2.4's AVX-512 loops for arctan2 and power reduce a contiguous axis wrongly
    (``numpy.arctan2.reduce([1.0, 2.0, 3.0])`` is arctan2(1, 3) on such a CPU), so for
    those the reference folds with the ufunc itself, one slice at a time."""
    axis = kw.get("axis", 0)
    if u not in (numpy.arctan2, numpy.power) or not isinstance(axis, int):
        return u.reduce(x, **kw)
    rows = list(numpy.moveaxis(numpy.asarray(x), axis, 0))
    if "initial" in kw:
        rows.insert(0, numpy.full(numpy.shape(rows[0]), kw["initial"]))
    out = rows[0]
    for row in rows[1:]:
        out = u(out, row)
    return numpy.expand_dims(out, axis) if kw.get("keepdims") else out


# binary ufuncs, each with an input range where it is smooth
SMOOTH = {"hypot": r, "logaddexp": r, "logaddexp2": r, "subtract": r, "divide": r,
          "arctan2": r, "add": r, "multiply": r,
          "power": lambda *s: rng.uniform(0.5, 1.5, size=s)}


# ---- reduce ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(SMOOTH))
def test_reduce_along_an_axis_is_numpys_left_fold_and_differentiates(name):
    u = getattr(numpy, name)
    x = SMOOTH[name](3, 4)
    for kw in ({}, {"axis": 1}, {"axis": -1, "keepdims": True}, {"axis": -2, "initial": 1.5}):
        f = lambda x: u.reduce(x, **kw)
        same(value(f, x), numpys_reduce(u, x, **kw), rtol=1e-12)
        same(value(lambda x: getattr(np, name).reduce(x, **kw), x), numpys_reduce(u, x, **kw),
             rtol=1e-12)
    # (central differences of NumPy's own fold on plain values, wengert's on traced ones)
    check_grads(lambda x: u.reduce(x, axis=-1) if isinstance(x, wg.Node)
                else numpys_reduce(u, x, axis=-1), x)


def test_reduce_of_several_axes_where_numpy_allows_it():
    x = r(2, 3, 4)
    for name in ("hypot", "logaddexp", "logaddexp2", "fmax", "maximum", "add"):
        u = getattr(numpy, name)
        for kw in ({"axis": None}, {"axis": (0, 2)}, {"axis": (-1, 0), "keepdims": True},
                   {"axis": ()}):
            same(value(lambda x: u.reduce(x, **kw), x), u.reduce(x, **kw), rtol=1e-12)
    check_grads(lambda x: numpy.hypot.reduce(x, axis=(0, -1)), x)
    check_grads(lambda x: numpy.logaddexp.reduce(x, axis=None, keepdims=True), x)
    # a ufunc that is not reorderable: NumPy's error
    for kw in ({"axis": None}, {"axis": (0, 1)}):
        with pytest.raises(ValueError, match="'subtract' is not reorderable"):
            wg.grad(lambda x: numpy.subtract.reduce(x, **kw).sum())(x)
    same(value(lambda x: numpy.subtract.reduce(x, axis=None), x[0, 0]),
         numpy.subtract.reduce(x[0, 0], axis=None))            # one axis: allowed


def test_reduce_edge_cases_are_numpys():
    x = r(3, 4)
    empty = numpy.zeros((0, 3))
    for u, kw in ((numpy.hypot, {}), (numpy.logaddexp, {}), (numpy.subtract, {"initial": 2.0}),
                  (numpy.power, {"axis": 1}), (numpy.subtract, {"axis": ()}),
                  (numpy.hypot, {"axis": ()}), (numpy.logaddexp2, {"axis": (), "initial": 1.0})):
        for a in (empty, abs(x) + 0.5):
            same(value(lambda a: u.reduce(a, **kw), a), numpys_reduce(u, a, **kw), rtol=1e-12)
    # NumPy starts from the identity where the ufunc has one: hypot(0, -3) = 3
    for a in (numpy.float64(-3.0), numpy.array([-3.0]), numpy.array([[-3.0]])):
        for axis in (None, ()):
            same(value(lambda a: numpy.hypot.reduce(a, axis=axis), a),
                 numpy.hypot.reduce(a, axis=axis))
    with pytest.raises(ValueError, match="zero-size array to reduction operation subtract"):
        wg.vjp(lambda a: numpy.subtract.reduce(a), empty)
    with pytest.raises(numpy.exceptions.AxisError):
        wg.vjp(lambda a: numpy.hypot.reduce(a, axis=2), x)
    # dtypes: float32 stays, dtype= is computed in, ints become NumPy's float
    x32 = x.astype(numpy.float32)
    same(value(lambda a: np.astype(numpy.hypot.reduce(np.astype(a, numpy.float32)),
                                   numpy.float32), x), numpy.hypot.reduce(x32), rtol=1e-6)
    same(value(lambda a: numpy.hypot.reduce(a, dtype=numpy.float32), x),
         numpy.hypot.reduce(x, dtype=numpy.float32), rtol=1e-6)
    same(value(lambda a: numpy.hypot.reduce(np.astype(a, int)), x * 10),
         numpy.hypot.reduce((x * 10).astype(int)))
    with pytest.raises(TypeError, match="ufunc less"):
        wg.vjp(lambda a: numpy.less.reduce(a), x)
    with pytest.raises(ValueError, match="single value"):
        wg.vjp(lambda a: numpy.divmod.reduce(a), x)
    with pytest.raises(ValueError, match="binary functions"):
        wg.vjp(lambda a: numpy.sin.reduce(a), x)


def test_reduce_with_a_traced_initial_and_the_fast_mappings():
    x = r(4)
    check_grads(lambda x, s: numpy.subtract.reduce(x, initial=s), x, numpy.array(0.5))
    check_grads(lambda x, s: numpy.add.reduce(x, initial=s), x, numpy.array(0.5))
    # add/multiply/maximum/minimum stay their one-primitive functions
    graph = wg.trace(lambda x: numpy.add.reduce(x), x)
    assert len(graph.nodes) < 4, graph
    same(value(lambda a: numpy.maximum.reduce(a, dtype=numpy.float32), x),
         numpy.maximum.reduce(x, dtype=numpy.float32))
    same(value(lambda a: numpy.add.reduce(a, where=a > 0), x), numpy.add.reduce(x, where=x > 0))
    with pytest.raises(NotImplementedError, match=r"numpy\.hypot\.reduce\(\.\.\., where=\.\.\.\)"):
        wg.vjp(lambda a: numpy.hypot.reduce(a, where=a > 0), x)
    with pytest.raises(NotImplementedError, match="out="):
        wg.vjp(lambda a: numpy.hypot.reduce(a, out=numpy.zeros(())), x)


# ---- accumulate, reduceat, outer ---------------------------------------------------------
@pytest.mark.parametrize("name", sorted(SMOOTH))
def test_accumulate_stacks_the_partial_results(name):
    u = getattr(numpy, name)
    x = SMOOTH[name](3, 4)
    for kw in ({}, {"axis": 1}, {"axis": -1}, {"axis": (0,)}):
        same(value(lambda x: u.accumulate(x, **kw), x), u.accumulate(x, **kw), rtol=1e-12)
    check_grads(lambda x: u.accumulate(x, axis=-1), x)


def test_accumulate_of_a_long_axis_and_the_edge_cases():
    x = r(40, 3)        # (rows read through halves: several levels)
    same(value(lambda x: numpy.hypot.accumulate(x), x), numpy.hypot.accumulate(x))
    check_grads(lambda x: numpy.logaddexp.accumulate(x), x, order=1)
    same(value(lambda x: numpy.maximum.accumulate(x, axis=1), x),
         numpy.maximum.accumulate(x, axis=1))
    same(value(lambda a: numpy.subtract.accumulate(a), numpy.zeros((0, 2))), numpy.zeros((0, 2)))
    with pytest.raises(ValueError, match="multiple axes"):
        wg.vjp(lambda a: numpy.hypot.accumulate(a, axis=None), x)
    with pytest.raises(TypeError, match="scalar"):
        wg.vjp(lambda a: numpy.hypot.accumulate(a), 2.0)


@pytest.mark.parametrize("name", ["hypot", "subtract", "add", "maximum", "logaddexp"])
def test_reduceat_follows_numpys_rule(name):
    u = getattr(numpy, name)
    x = r(3, 5)
    for indices, axis in (([0, 2, 1, 4], 1), ([1, 1, 3], -1), ([2, 0], 0), ([4], -1),
                          ([], 1), (numpy.array([0, 3]), 1)):
        same(value(lambda x: u.reduceat(x, indices, axis=axis), x),
             u.reduceat(x, indices, axis=axis), rtol=1e-12)
    check_grads(lambda x: u.reduceat(x, [0, 3, 1, 2], axis=-1), x)
    # traced indices: integers without derivative, read by value
    idx = numpy.array([0.0, 2.0])
    same(value(lambda x, i: u.reduceat(x, np.astype(i, int), axis=1), x, idx),
         u.reduceat(x, [0, 2], axis=1), rtol=1e-12)
    with pytest.raises(IndexError, match="out-of-bounds"):
        wg.vjp(lambda x: u.reduceat(x, [0, 5], axis=1), x)
    with pytest.raises(ValueError, match="multiple axes"):
        wg.vjp(lambda x: u.reduceat(x, [0], axis=None), x)


def test_outer_is_the_ufunc_of_a_reshaped_against_b():
    a, b = r(2, 3), r(4)
    for name in ("multiply", "subtract", "hypot", "arctan2", "logaddexp", "maximum"):
        u = getattr(numpy, name)
        same(value(lambda a, b: u.outer(a, b), a, b), u.outer(a, b))
        same(value(lambda b: getattr(np, name).outer(2.0, b), b), u.outer(2.0, b))
        check_grads(lambda a, b: u.outer(a, b), a, b)
    q, m = value(lambda a, b: numpy.divmod.outer(a, b), a, b)       # two outputs
    same(q, numpy.divmod.outer(a, b)[0])
    same(m, numpy.divmod.outer(a, b)[1])
    with pytest.raises(TypeError, match="non-trivial signature"):
        wg.vjp(lambda a: numpy.matmul.outer(a, a), a)
    with pytest.raises(NotImplementedError, match=r"numpy\.multiply\.outer\(\.\.\., dtype="):
        wg.vjp(lambda a: numpy.multiply.outer(a, a, dtype=numpy.float32), a)


def test_ufunc_methods_of_complex_values():
    z = r(3, 4) + 1j * r(3, 4)
    check_complex_grads(lambda z: numpy.subtract.accumulate(z, axis=1), z)
    check_complex_grads(lambda z: numpy.multiply.outer(z[0], z[1]), z)
    check_complex_grads(lambda z: numpy.divide.reduceat(z, [0, 2], axis=-1), z)
    same(value(lambda z: numpy.divide.reduce(z, axis=1), z), numpy.divide.reduce(z, axis=1))
    with pytest.raises(TypeError, match="ufunc 'hypot' not supported"):
        wg.vjp(lambda z: numpy.hypot.reduce(z), z)


def test_ufunc_methods_compile_and_vmap():
    x = r(5, 3)
    fns = [lambda x: numpy.hypot.reduce(x, axis=0),
           lambda x: numpy.logaddexp.accumulate(x, axis=-1),
           lambda x: numpy.subtract.reduceat(x, [0, 2, 1], axis=0),
           lambda x: numpy.arctan2.outer(x[0], x[:, 1])]
    for f in fns:
        y = r(5, 3)
        same(wg.compile(f, x)(y), f(y), rtol=1e-12)
        g = lambda x: np.sum(f(x) ** 2)
        assert_close(wg.compile(wg.grad(g), x)(y), wg.grad(g)(y), rtol=1e-12)
        batch = r(2, 5, 3)
        assert_close(wg.vmap(f)(batch), numpy.stack([f(b) for b in batch]), rtol=1e-12)


def test_ufunc_at_and_ufuncs_without_a_rule_are_refused():
    x = r(3)
    with pytest.raises(NotImplementedError,
                       match=r"numpy\.add\.at changes its first argument in place.* "
                             r"wengert\.numpy\.at\(a\)\[i\]\.add\(b\)"):
        wg.grad(lambda x: numpy.add.at(x, [0], 1.0))(x)
    with pytest.raises(NotImplementedError, match=r"a\.at\[i\]\.max\(b\)"):
        wg.grad(lambda x: numpy.maximum.at(x, [0], 1.0))(x)
    with pytest.raises(NotImplementedError, match=r"numpy\.add\.at"):
        wg.grad(lambda x: numpy.add.at(numpy.zeros(3), [0, 0], x[:2]))(x)
    with pytest.raises(NotImplementedError, match=r"numpy\.gcd\.reduce is not supported"):
        wg.grad(lambda x: numpy.gcd.reduce(x))(x)
    # the alternative the message names: a scatter-add, differentiable (or bincount's)
    i, b = numpy.array([0, 2, 0]), r(3)
    want = x.copy()
    numpy.add.at(want, i, b)
    same(np.at(x)[i].add(b), want)
    assert_close(wg.grad(lambda b: np.sum(np.at(x)[i].add(b) * x))(b), x[i])
    same(np.add(x, np.bincount(i, weights=b, minlength=len(x))), want)
    g = wg.grad(lambda b: np.sum(np.bincount(i, weights=b, minlength=3) * x))(b)
    assert_close(g, x[i])


# ---- a generalized ufunc's axes, axis and keepdims ---------------------------------------
@pytest.mark.parametrize("ufunc, shapes, kwargs", [
    (numpy.vecdot, [(3, 2), (3, 2)], dict(axis=0)),
    (numpy.vecdot, [(3, 2), (3, 1)], dict(axis=0, keepdims=True)),
    (numpy.vecdot, [(4, 3, 2), (3, 1)], dict(axes=[(1,), 0])),
    (numpy.vecdot, [(4, 3, 2), (4, 3, 2)], dict(axes=[(1,), (1,), (0,)], keepdims=True)),
    (numpy.vecdot, [(2, 3, 4), (2, 3, 4)], dict(axes=[(1,), (1,)], keepdims=True)),
    (numpy.vecdot, [(2, 3, 4), (3, 1)], dict(axes=[numpy.int64(1), numpy.int64(0)])),
    (numpy.matmul, [(3, 4, 5), (5, 2)], dict(axes=[(1, 2), (0, 1), (0, 1)])),
    (numpy.matmul, [(4, 3, 5), (2, 3)], dict(axes=[(0, 1), (1, 0), (1, 0)])),
    (numpy.matmul, [(3,), (3, 2)], dict(axes=[(0,), (0, 1), (0,)])),
    (numpy.matvec, [(2, 3, 4), (3,)], dict(axes=[(0, 1), (0,), (0,)])),
    (numpy.vecmat, [(3,), (3, 5)], dict(axes=[(0,), (0, 1), (0,)])),
])
def test_gufunc_axes_on_traced_values(ufunc, shapes, kwargs):
    """numpy.vecdot(a, b, axis=0), numpy.matmul(a, b, axes=...): values and shapes as
    NumPy's, derivatives against central differences to second order."""
    if not hasattr(numpy, ufunc.__name__):
        pytest.skip(f"this NumPy has no {ufunc.__name__}")
    args = [r(*s) for s in shapes]
    f = lambda *a: ufunc(*a, **kwargs)
    same(value(f, *args), f(*args))
    check_grads(f, *args)
    check_grads(lambda *a: getattr(np, ufunc.__name__)(*a, **kwargs), *args, order=1)


def test_gufunc_axes_errors_are_numpys():
    a = r(3, 2)
    for kwargs, error in ((dict(axis=5), numpy.exceptions.AxisError),
                          (dict(axes=[(0,)]), ValueError),
                          (dict(axes=[(0,), (0,), (0,)]), numpy.exceptions.AxisError)):
        with pytest.raises(error) as want:
            numpy.vecdot(a, a, **kwargs)
        with pytest.raises(error) as got:
            wg.grad(lambda a: np.sum(numpy.vecdot(a, a, **kwargs)))(a)
        assert str(got.value) == str(want.value)


# ---- sliding_window_view -----------------------------------------------------------------
SWV = numpy.lib.stride_tricks.sliding_window_view


@pytest.mark.parametrize("shape, window, axis", [
    ((6,), 3, None), ((4, 5), (2, 3), None), ((4, 5), 2, -1), ((3, 4, 5), (2, 2), (0, 2)),
    ((3, 4, 5), (2, 3), (-1, 1)), ((7,), (2, 3), (0, 0)), ((4, 5), 1, 0), ((4, 5), (4,), 0)])
def test_sliding_window_view_gathers_numpys_windows(shape, window, axis):
    x = r(*shape)
    want = SWV(x, window, axis)
    for f in (lambda x: sliding_window_view(x, window, axis),
              lambda x: SWV(x, window, axis),                  # NumPy's own, by its protocol
              lambda x: np.lib.stride_tricks.sliding_window_view(x, window, axis=axis)):
        same(value(f, x), want, rtol=0)
    check_grads(lambda x: sliding_window_view(x, window, axis) ** 2, x)


def test_sliding_window_view_compiles_vmaps_and_refuses_what_numpy_refuses():
    x = r(3, 6)
    f = lambda x: np.mean(sliding_window_view(x, 3, axis=-1), axis=-1)      # moving average
    same(wg.compile(f, x)(x + 1), SWV(x + 1, 3, axis=-1).mean(axis=-1))
    assert_close(wg.vmap(f)(x), numpy.stack([f(row) for row in x]), rtol=1e-14)
    assert_close(wg.grad(lambda x: np.sum(f(x)))(x)[0], [1 / 3, 2 / 3, 1, 1, 2 / 3, 1 / 3])
    with pytest.raises(NotImplementedError, match=r"writeable=True\) is not supported"):
        wg.vjp(lambda x: sliding_window_view(x, 2, writeable=True), x)
    with pytest.raises(ValueError, match="window shape cannot be larger"):
        wg.vjp(lambda x: SWV(x, 7, axis=1), x)
    with pytest.raises(ValueError, match="must provide window_shape for all dimensions"):
        wg.vjp(lambda x: sliding_window_view(x, 2), x)
    with pytest.raises(numpy.exceptions.AxisError):
        wg.vjp(lambda x: sliding_window_view(x, 2, axis=2), x)
    assert np.lib.stride_tricks.sliding_window_view(x, 2, 1).flags.writeable is False  # plain


# ---- kaiser ------------------------------------------------------------------------------
def test_kaiser_differentiates_in_beta():
    for M in (1, 2, 5, 8):
        for beta in (0.5, 3.0, 8.6):
            same(value(lambda b: np.kaiser(M, b), beta), numpy.kaiser(M, beta))
        check_grads(lambda b: np.kaiser(M, b), numpy.array(2.5))
    for M in (0, -2):
        same(value(lambda b: np.kaiser(M, b), 2.0), numpy.kaiser(M, 2.0))
    same(value(lambda b: np.kaiser(5, b), numpy.float32(2.0)), numpy.kaiser(5, numpy.float32(2)))
    # a traced M is a length, read by value
    same(value(lambda m, b: np.kaiser(np.astype(m, int), b), 6.0, 1.5), numpy.kaiser(6, 1.5))
    # d/dβ of the end value I0(0)/I0(β) is -I1(β)/I0(β)²
    g = wg.grad(lambda b: np.kaiser(5, b)[0])(2.0)
    assert_close(g, -wg.grad(np.i0)(2.0) / numpy.i0(2.0) ** 2, rtol=1e-12)
    assert_close(wg.compile(lambda b: np.kaiser(6, b), 1.0)(3.0), numpy.kaiser(6, 3.0),
                 rtol=1e-14)
    assert_close(wg.vmap(lambda b: np.kaiser(4, b))(numpy.array([1.0, 2.0])),
                 [numpy.kaiser(4, 1.0), numpy.kaiser(4, 2.0)], rtol=1e-14)


# ---- values without derivative: printing, array_equiv ------------------------------------
PRINTERS = ["array_str", "array_repr", "array2string", "format_float_positional",
            "format_float_scientific"]


@pytest.mark.parametrize("name", PRINTERS)
def test_printing_a_traced_value_prints_its_value(name):
    x = numpy.array([1.25, -2.0 / 3.0], dtype=numpy.float32)
    printer = getattr(np, name)
    # what NumPy prints: the array and its element (an array of shape (), where NumPy's
    # array_str wants one), or the element alone (a float32 scalar) for format_float_*
    plain = [x[1]] if name.startswith("format") else [x, numpy.asarray(x[1])]
    printed = []

    def f(x):
        parts = [x[1]] if name.startswith("format") else [x, x[1]]
        printed.extend(printer(p) for p in parts)
        if not name.startswith("format"):
            printed.append(getattr(numpy, name)(x))    # NumPy's own, by its protocol
        return np.sum(x * x)
    assert_close(wg.grad(f)(x), 2 * x)
    want = [getattr(numpy, name)(p) for p in plain]
    if not name.startswith("format"):
        want.append(want[0])                           # (NumPy's own, of the whole x)
    assert printed == want, (printed, want)
    assert [printer(p) for p in plain] == want[:len(plain)]            # plain: NumPy's
    for no_values in (lambda f: wg.compile(f, x), lambda f: wg.trace(f, x)):
        with pytest.raises(wg.ConcretizationError, match=fr"printed by numpy\.{name}\(\) "
                           "while tracing without values"):
            no_values(f)
    with pytest.raises(wg.ConcretizationError, match=fr"printed by numpy\.{name}\(\) while "
                       "wg.vmap traced one example"):
        wg.vmap(f)(numpy.ones((2, 2)))


def test_array_equiv_reads_the_values():
    x = r(2, 3)
    seen = []

    def f(x):
        seen.extend([np.array_equiv(x, x[0:1] * 0 + x), numpy.array_equiv(x[0], x[1]),
                     np.array_equiv(x, x[:, :2])])
        return np.sum(x)
    wg.grad(f)(x)
    assert seen == [True, False, False]
    assert all(type(s) is bool for s in seen)
    with pytest.raises(wg.ConcretizationError, match="array_equiv"):
        wg.compile(lambda x: np.sum(x) if np.array_equiv(x, 1.0) else 0.0, x)
