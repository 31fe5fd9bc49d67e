"""wg.compile: compiled and eager results agree (values, first and second derivatives, on
the examples of the other tests), retracing on new shapes, dtypes and static values,
pytrees, errors, and the generated source."""
import collections
import math
import time

import numpy
import pytest

import wengert as wg
import wengert.math as wm
import wengert.numpy as np
from wengert.codegen import c as wg_c
from wengert.tree import flatten
from fd import assert_close
from test_numpy import CASES, SMOOTH_SECOND_ORDER_SKIP
from test_seeds import powell, powell_grad, powell_hessian

rng = numpy.random.default_rng(5)


def same(a, b, rtol=1e-10, atol=1e-12):
    la, ta = flatten(a)
    lb, tb = flatten(b)
    assert ta == tb, f"structure {ta} != {tb}"
    for x, y in zip(la, lb):
        assert numpy.shape(x) == numpy.shape(y)
        numpy.testing.assert_allclose(numpy.asarray(x, float), numpy.asarray(y, float),
                                      rtol=rtol, atol=atol)


def f000(x1, x2):
    return x1 * x2 + wm.sin(x1)


def f3(x, y, z):
    return x * wm.sin(y) + z ** 3 * x


# ---- scalar examples: values, derivatives of first and second order ------------------------
SCALAR = [
    ("seed 000", f000, (2.0, 3.0)),
    ("three args", f3, (0.7, -1.2, 0.4)),
    ("exp sin", lambda x: wm.exp(2 * x) * wm.sin(x), (0.3,)),
    ("Example 1", lambda a, x: (a + 1) * wm.exp(x) + (a - 1) / (wm.exp(x) + 1), (0.5, 1.5)),
    ("functions", lambda x, y: wm.sqrt(x * x + y) + wm.log(y) * wm.tanh(x) - wm.atan2(x, y)
     + wm.cosh(x) / wm.sinh(y) + wm.cbrt(x) + wm.cotan(y) + wm.log10(y) + wm.asin(x / 4)
     + wm.acos(x / 3) + wm.atan(y) + x ** y + np.expm1(x) + np.log1p(y), (0.8, 1.3)),
    ("piecewise", lambda x, y: wg.select(x > y, x * y, x - y) + abs(x) + wm.sign(y)
     + np.maximum(x, y) * np.minimum(x, 2.0) + wg.nn.relu(x - y), (0.8, 1.3)),
    ("numpy's other functions", lambda x, y: np.arcsinh(x) * np.arccosh(y + 1) + np.arctanh(x / 2)
     + np.exp2(x) * np.log2(y) + np.hypot(x, y) * np.logaddexp(x, y) + np.logaddexp2(y, x)
     + np.remainder(3 * x, y) * np.fmod(-3 * x, y) + np.sinc(x) + np.fmax(x, y), (0.8, 1.3)),
]


@pytest.mark.parametrize("name", [c[0] for c in SCALAR])
@pytest.mark.parametrize("backend", ["python", "numpy"])
def test_scalar_functions_and_derivatives(name, backend):
    _, f, args = next(c for c in SCALAR if c[0] == name)
    nums = tuple(range(len(args)))
    for fn in (f, wg.grad(f, argnums=nums), wg.hessian(f, argnums=nums),
               wg.value_and_grad(f, argnums=nums), wg.grad(wg.grad(f))):
        c = wg.compile(fn, *args, backend=backend)
        same(c(*args), fn(*args))
        other = tuple(a * 0.9 + 0.05 for a in args)       # same shapes: no retrace
        same(c(*other), fn(*other))
        assert len(c.cache) == 1


def test_float_code_for_scalar_graphs_and_numpy_code_for_large_arrays():
    c = wg.compile(wg.grad(f000, argnums=(0, 1)), 2.0, 3.0)
    assert "_math.cos(x1)" in c.source and "_np" not in c.source
    assert c.entry.flavour == "float"
    big = wg.compile(wg.grad(lambda x: np.sum(np.sin(x) ** 2)), numpy.ones(5000))
    assert big.entry.flavour == "numpy" and "_np.sin" in big.source
    x = rng.normal(size=5000)
    same(big(x), 2 * numpy.sin(x) * numpy.cos(x))
    # few operations but many outputs to pack (10,000, mostly zeros): NumPy code
    rosen = lambda x: np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    h = wg.compile(wg.hessian(rosen), numpy.ones(100))
    assert h.entry.flavour == "numpy"
    x = rng.normal(size=100)
    same(h(x), wg.hessian(rosen)(x))


@pytest.mark.parametrize("order", [1, 2, 3, 4, 5])
def test_any_order(order):
    d = lambda x: wm.exp(2 * x) * wm.sin(x)
    for _ in range(order):
        d = wg.grad(d)
    closed = ((2 + 1j) ** order * numpy.exp((2 + 1j) * 0.3)).imag
    assert wg.compile(d, 0.3)(0.3) == pytest.approx(closed, rel=1e-12)


# ---- Powell's function (seed 002, Example 2) -------------------------------------------------
@pytest.mark.parametrize("kind", ["tuple", "array"])
def test_powell_gradient_hessian_and_php(kind):
    x = (3.0, -1.0, 0.0, 1.0)
    p = (0.5, -0.25, 1.0, 2.0)
    if kind == "array":
        x, p = numpy.array(x), numpy.array(p)
    g = wg.compile(wg.grad(powell), x)
    H = wg.compile(wg.hessian(powell), x)
    fgp = wg.compile(lambda x, p: (powell(x), wg.grad(powell)(x),
                                   np.dot(np.array(p), np.array(wg.hvp(powell)(x, p)))), x, p)
    for _ in range(3):
        xv = tuple(rng.uniform(-2, 2, 4)) if kind == "tuple" else rng.uniform(-2, 2, 4)
        assert_close(g(xv), powell_grad(xv), rtol=1e-13, atol=1e-11)
        assert_close(H(xv), powell_hessian(xv), rtol=1e-13, atol=1e-10)
        f, gv, php = fgp(xv, p)
        Hm = numpy.array(powell_hessian(xv))
        assert f == pytest.approx(powell(xv), rel=1e-14)
        assert php == pytest.approx(numpy.array(p) @ Hm @ numpy.array(p), rel=1e-12)
    assert type(g(x)) is (tuple if kind == "tuple" else numpy.ndarray)
    assert g.entry.flavour == "float"             # the 4-vector was scalarised


def test_powell_counts_are_no_higher_than_casadis():
    # CasADi's gradient: 8 additions, 14 multiplications, 2 negations (24 operations)
    c = wg.compile(wg.grad(powell), numpy.ones(4)).count()
    assert c["add"] <= 8 and c["neg"] <= 2
    assert c["mul"] + 2 * c["pow"] <= 14           # x**3 is two multiplications at most
    plain = wg.compile(wg.grad(powell), numpy.ones(4)).count(plain=True)
    assert sum(plain.values()) > sum(c.values())


# ---- arrays: every case of the NumPy layer's tests, values and derivatives -------------------
@pytest.mark.parametrize("name", sorted(CASES))
def test_array_cases_agree_with_eager(name):
    f, args = CASES[name]
    out = f(*args)
    leaves, tree = flatten(out)
    from wengert.tree import unflatten
    ct = unflatten(tree, [rng.normal(size=numpy.shape(o)) for o in leaves])
    vs = tuple(rng.normal(size=numpy.shape(a)) for a in args)
    first = lambda *a: wg.vjp(f, *a)[1](ct)
    fns = [f, first]
    if name not in SMOOTH_SECOND_ORDER_SKIP:
        fns.append(lambda *a: wg.jvp(first, a, vs)[1])
    for fn in fns:
        expected = fn(*args)
        for backend in ("python", "numpy"):
            same(wg.compile(fn, *args, backend=backend)(*args), expected, rtol=1e-9,
                 atol=1e-10)


def test_mlp_gradient_with_pytree_parameters():
    def loss(params, x, y):
        h = np.tanh(x @ params["w1"] + params["b1"])
        return np.mean((h @ params["w2"] + params["b2"] - y) ** 2)
    params = {"w1": rng.normal(size=(3, 8)), "b1": numpy.zeros(8),
              "w2": rng.normal(size=(8, 1)), "b2": numpy.zeros(1)}
    x, y = rng.normal(size=(16, 3)), rng.normal(size=(16, 1))
    c = wg.compile(wg.value_and_grad(loss), params, x, y)
    v, g = c(params, x, y)
    v0, g0 = wg.value_and_grad(loss)(params, x, y)
    assert v == pytest.approx(v0, rel=1e-12) and set(g) == set(params)
    same(g, g0)


def test_convolution_network_compiles_to_numpy():
    x, w = rng.normal(size=(2, 1, 6, 6)), rng.normal(size=(3, 1, 3, 3))
    f = lambda w: np.sum(wg.nn.max_pool2d(wg.nn.relu(wg.nn.conv2d(x, w, padding=1)), 2) ** 2)
    c = wg.compile(wg.grad(f), w)
    assert c.entry.flavour == "numpy"
    same(c(w), wg.grad(f)(w))


# ---- retracing ------------------------------------------------------------------------------
def test_retrace_on_new_shape_dtype_and_structure():
    f = wg.grad(lambda x: np.sum(x ** 3))
    c = wg.compile(f, numpy.ones(3))
    first = c.source
    same(c(numpy.arange(3.0)), 3 * numpy.arange(3.0) ** 2)
    same(c(numpy.arange(5.0)), 3 * numpy.arange(5.0) ** 2)     # new shape: traced again
    assert len(c.cache) == 2 and c.source != first and "(5,)" in c.source
    same(c(numpy.arange(3.0)), 3 * numpy.arange(3.0) ** 2)     # back to the first entry:
    assert "(5,)" in c.source and len(c.cache) == 2     # tried second, no trace, no swap
    x32 = numpy.arange(3.0, dtype=numpy.float32)
    r = c(x32)
    assert r.dtype == f(x32).dtype and len(c.cache) == 3        # new dtype: traced again
    g = wg.compile(lambda t: t[0] * t[1], (1.0, 2.0))
    assert g((2.0, 3.0)) == 6.0 and g([2.0, 3.0]) == 6.0 and len(g.cache) == 2


def test_ints_and_numpy_scalars_are_floats():
    c = wg.compile(wg.grad(lambda x: x ** 3), 1.0)
    assert c(2) == 12.0 and type(c(2)) is float
    # a NumPy float64 is strongly typed where a Python float is weak (NumPy 2): it gets an
    # entry of its own, which still returns a Python float
    assert c(numpy.float64(2.0)) == 12.0 and type(c(numpy.float64(2.0))) is float
    assert len(c.cache) == 2


def test_ints_0d_arrays_and_numpy_bools_skip_the_slow_path(monkeypatch):
    """A leaf argument that the trace makes canonical (an int, a 0-d float64 array, a
    NumPy bool) is converted and the code called again, without binding the call to f's
    signature and looking it up (the slow path); static arguments and defaults are not
    converted, and a call on traced values still reaches f with its own arguments."""
    from wengert import staged
    bound = []
    bind = staged._Params.bind
    monkeypatch.setattr(staged._Params, "bind",
                        lambda self, *a, **k: bound.append(1) or bind(self, *a, **k))

    def f(x, flag, n=3, *, k=2.0):
        return wg.select(flag, wm.sin(x) * n * k, x ** n)
    c = wg.compile(f, static_argnums=2)
    want = f(0.5, True)
    assert c(0.5, True) == want and len(bound) == 1
    for x in (0.5, numpy.array(0.5), numpy.float64(0.5)):
        for flag in (True, numpy.True_, 1):
            got = c(x, flag, k=2)
            assert got == pytest.approx(want) and type(got) is float
    assert (c(0.5, False, 3), c(0.5, False, 2)) == (0.125, 0.25)     # static: an int
    # one trace per canonical signature: k left out; with k given, (x, flag) of types
    # (float, bool), (np.float64, bool), (float, float) and (np.float64, float); and n=2
    assert len(c.cache) == 6
    c(0.5, True, k=1.0)                     # (float, bool) with k given made current
    n = len(bound)
    assert c(1, numpy.True_, k=1) == pytest.approx(f(1.0, True, k=1.0)) and len(bound) == n
    # inside a transformation the call reaches f as it was made: `i` stays an int index
    g = wg.compile(lambda v, i: v[i] * v[i])
    assert wg.grad(lambda v: g(v, 1))(numpy.arange(3.0)).tolist() == [0.0, 2.0, 0.0]


@pytest.mark.parametrize("backend", ["python", "numpy"])
def test_a_0d_result_is_a_number_of_its_dtype(backend):
    """docs/compile.md: a 0-d result is a Python float (bool) at float64 (bool), a NumPy
    scalar of its dtype otherwise, whatever the arguments and the code's flavour."""
    total = wg.compile(lambda x: np.sum(np.sin(x) * 2), backend=backend)
    for x in (numpy.array(1.0), numpy.float64(1.0), 1.0, numpy.ones(3), numpy.ones(300)):
        r = total(x)
        assert type(r) is float and math.isclose(r, numpy.sum(numpy.sin(x) * 2), rel_tol=1e-14)
    for x in (numpy.array(1.0, numpy.float32), numpy.ones(3, numpy.float32)):
        assert type(total(x)) is numpy.float32
    assert type(wg.compile(lambda x: np.sum(x * 1j), backend=backend)(numpy.ones(3))) \
        is numpy.complex128
    assert type(wg.compile(np.argmax, backend=backend)(numpy.ones(3))) is numpy.int64
    # NumPy code holds these as 0-d arrays: where of scalars, a constant made by asarray
    for f, kind, want in [(lambda x: np.where(x > 0, 1, 2), numpy.int64, 1),
                          (lambda x: np.where(x > 0, 2, 1) * 3, numpy.int64, 6),
                          (lambda x: np.asarray(3), numpy.int64, 3),
                          (lambda x: np.where(x < 0, numpy.float32(1), numpy.float32(2)),
                           numpy.float32, 2.0),
                          (lambda x: np.asarray(x + 2j), numpy.complex128, 1 + 2j)]:
        got = wg.compile(f, 1.0, backend=backend)(1.0)
        assert type(got) is kind and got == want
    grad = wg.compile(wg.grad(lambda x: np.sin(x) * 2), backend=backend)
    assert type(grad(numpy.array(1.0))) is float and grad(numpy.array(1.0)) == 2 * math.cos(1)


@pytest.mark.parametrize("backend", ["python", "float", "numpy", "c"])
def test_reductions_of_empty_arrays_keep_their_dtype(backend):
    # written element by element, an empty sum is no element at all: NumPy's int 0
    f = lambda x: (np.sum(x), np.prod(x), x.sum(axis=0), np.all(x > 0))
    x = numpy.zeros((0, 2))
    try:
        got = wg.compile(f, backend=backend)(x)
    except wg_c.CompilerNotFound:
        pytest.skip("no C compiler")
    for g, want in zip(got, f(x)):
        assert numpy.asarray(g).dtype == numpy.asarray(want).dtype
        assert numpy.array_equal(g, want)


def test_static_arguments_are_baked_in_and_retraced():
    def f(x, n, mode):
        y = x
        for _ in range(n):                        # Python control flow on a static value
            y = wm.sin(y) if mode == "sin" else y * x
        return y
    c = wg.compile(f, 0.5, 3, "sin", static_argnums=(1, 2))
    assert c(0.5, 3, "sin") == f(0.5, 3, "sin")
    assert c(0.5, 2, "mul") == pytest.approx(0.125) and len(c.cache) == 2
    with pytest.raises(TypeError, match="hashable"):
        c(0.5, [1], "sin")


def test_static_values_match_by_type_as_well_as_value():
    # True == 1 == 1.0, but code traced for one must not serve the others
    traces = []

    def f(x, n):
        traces.append(n)                           # runs at trace time only
        return x * 2 if n is True else x * 3 if type(n) is int else x * 4
    c = wg.compile(f, 1.0, True, static_argnums=1)
    assert [c(1.0, True), c(1.0, 1), c(1.0, 1.0), c(1.0, True), c(1.0, 1)] == [2, 3, 4, 2, 3]
    assert len(c.cache) == 3 and len(traces) == 3
    big = int("1000")                              # equal to the example, not the same object
    c(1.0, 1000)
    assert c(1.0, big) == 3.0 and len(traces) == 4
    # NumPy scalars by their own type, tuples by their elements' types too
    itemsize = wg.compile(lambda x, s: x * numpy.asarray(s).dtype.itemsize, 1.0,
                          numpy.float32(1), static_argnums=1)
    assert itemsize(1.0, numpy.float32(1)) == 4.0 and itemsize(1.0, numpy.float64(1)) == 8.0
    t = wg.compile(lambda x, s: x * 2 if s[0] is True else x * 3, 1.0, (True, "a"),
                   static_argnums=1)
    assert t(1.0, (True, "a")) == 2.0 and t(1.0, (1, "a")) == 3.0 and len(t.cache) == 2
    assert t(1.0, (True, "a")) == 2.0 and len(t.cache) == 2
    fs = wg.compile(lambda x, s: x * 2 if any(e is True for e in s) else x * 3,
                    static_argnums=1)
    assert [fs(1.0, frozenset({1})), fs(1.0, frozenset({True}))] == [3.0, 2.0]
    assert len(fs.cache) == 2                                     # ({1} == {True})
    with pytest.raises(TypeError, match="static argument 's' .tuple. must be hashable"):
        t(1.0, (True, ["a"]))


def test_a_nan_static_value_matches_any_nan_of_its_type():
    traces = []

    def f(x, s):
        traces.append(s)
        return x + 1.0
    c = wg.compile(f, static_argnums=1)
    assert c(1.0, math.nan) == c(1.0, float("nan")) == c(1.0, (math.nan, 1.0)[0]) == 2.0
    assert len(traces) == 1
    c(1.0, numpy.float32("nan")), c(1.0, (float("nan"),)), c(1.0, (float("nan"),))
    assert len(traces) == 3 and len(c.cache) == 3
    c(1.0, complex(math.nan, 1.0)), c(1.0, complex(math.nan, 1.0))       # part by part
    assert len(traces) == 4 and c(1.0, complex(math.nan, 2.0)) and len(traces) == 5


def test_a_negative_zero_static_value_is_not_a_positive_zero():
    c = wg.compile(lambda x, s: x / s, static_argnums=1)
    with numpy.errstate(divide="ignore", invalid="ignore"):
        for s in (0.0, -0.0, numpy.float32(-0.0), complex(1.0, -0.0), 0.0, -0.0):
            want, got = numpy.divide(2.0, s), c(2.0, s)
            assert got == want
            for part in (numpy.real, numpy.imag):
                assert numpy.signbit(part(got)) == numpy.signbit(part(want))
        assert len(c.cache) == 4
        t = wg.compile(lambda x, s: x / s[0], static_argnums=1)
        assert t(1.0, (0.0,)) == numpy.inf and t(1.0, (-0.0,)) == -numpy.inf


def test_alternating_signatures_neither_retrace_nor_go_wrong():
    traces = []

    def f(x, n=1):
        traces.append(n)
        return x * n
    c = wg.compile(f, static_argnames="n")
    a3, a4 = numpy.arange(3.0), numpy.arange(4.0)
    for _ in range(3):
        same(c(a3), a3)
        same(c(a4), a4)
        same(c(a3, n=2), 2 * a3)
        same(c(a3, n=3), 3 * a3)
    assert len(traces) == len(c.cache) == 4
    # two signatures in turn: the code is not swapped, so the current entry stays put
    c(2.0, n=2), c(2.0, n=3)
    entry = c.entry
    for _ in range(3):
        assert c(2.0, n=2) == 4.0 and c.entry is entry
        assert c(2.0, n=3) == 6.0 and c.entry is entry
    assert c(2.0) == 2.0 and c.entry is not entry        # a third one is swapped in
    assert len(traces) == len(c.cache) == 7
    # the keyword-only parameter the generated code renames goes through the slow path
    def g(x, *, input=1.0):
        return x * input
    cg = wg.compile(g, 1.0)
    assert [cg(2.0), cg(numpy.ones(2))[0], cg(2.0), cg(numpy.ones(2), input=3.0)[0]] == [2, 1, 2, 3]
    for backend in ("c", "numpy"):
        cb = wg.compile(lambda x, k: x * k, 1.0, 2, static_argnums=1, backend=backend)
        assert [cb(1.0, 2), cb(1.0, 3), cb(1.0, 2), cb(1.0, 3)] == [2, 3, 2, 3]
        assert len(cb.cache) == 2


def test_value_dependent_branch_names_a_way_out():
    def f(x):
        return x if x > 0 else -x
    with pytest.raises(wg.ConcretizationError, match=r"wg\.select.*static_argnums"):
        wg.compile(f, 1.0)
    c = wg.compile(lambda x: wg.select(x > 0, x, -x), 1.0)
    assert c(-2.0) == 2.0 and c(3.0) == 3.0
    # a boolean mask as an index: where() keeps the shape (take_along_axis would not fit)
    import wengert.numpy as wnp
    x = numpy.array([1.0, -2.0, 3.0])
    with pytest.raises(wg.ConcretizationError, match=r"boolean mask.*where\(mask, x, 0\)"):
        wg.compile(wg.grad(lambda x: wnp.sum(x[x > 0] ** 2)), x)
    c = wg.compile(wg.grad(lambda x: wnp.sum(wnp.where(x > 0, x, 0) ** 2)), x)
    assert c(x).tolist() == [2.0, 0.0, 6.0]
    # float() and wg.value have no number while compiling: stop_gradient is the way
    for f in (lambda x: float(x[0]) * x, lambda x: wg.value(x[0]) * x):
        with pytest.raises(wg.ConcretizationError, match=r"wg\.stop_gradient\(x\)"):
            wg.compile(f, x)
    assert wg.compile(lambda x: wg.stop_gradient(x[0]) * x, x)(x).tolist() == [1.0, -2.0, 3.0]


def test_pytrees_in_and_out():
    Point = collections.namedtuple("Point", "x y")
    f = lambda p, d: {"sum": p.x + d["a"][0], "prod": [p.x * p.y, d["b"]], "none": None}
    args = (Point(2.0, 3.0), {"a": (1.0,), "b": numpy.ones(2)})
    c = wg.compile(f, *args)
    out = c(*args)
    assert out["sum"] == 3.0 and out["prod"][0] == 6.0 and out["none"] is None
    same(out, f(*args))
    j = wg.compile(wg.jacfwd(lambda p: {"s": p.x + p.y, "p": p.x * p.y}), Point(2.0, 3.0))
    assert j(Point(2.0, 3.0)) == {"s": Point(1.0, 1.0), "p": Point(3.0, 2.0)}
    # a result nested deeper than Python's parser takes as one literal (200 levels)
    deep = 2.0
    for i in range(300):
        deep = (deep, None) if i % 2 else [deep]
    got = wg.compile(lambda x, t: (t, x * 3.0, "tag"))(1.0, deep)
    assert got == (deep, 3.0, "tag")


def test_domain_errors_follow_numpy_as_eager_does():
    c = wg.compile(lambda x: wm.log(x) + 1 / x, 1.0)
    assert c.entry.flavour == "float"
    with numpy.errstate(all="ignore"):
        assert math.isnan(c(-1.0))
        assert c(0.0) == math.inf or math.isnan(c(0.0))
        assert c(2.0) == pytest.approx(math.log(2.0) + 0.5)


def test_lazy_compile_and_composition_with_transformations():
    c = wg.compile(lambda x, y: x * wm.exp(y))
    assert c.entry is None
    assert c(2.0, 0.0) == 2.0 and c.entry is not None
    # called on traced values, a compiled function traces through the original
    assert wg.grad(c, argnums=(0, 1))(2.0, 0.0) == (1.0, 2.0)


def test_compile_a_graph():
    g = wg.trace(lambda x, y: x * y + 1.0, 2.0, 3.0)
    c = wg.compile(g)
    assert c(2.0, 5.0) == 11.0


def test_a_compiled_graph_refuses_other_shapes_clearly():
    c = wg.compile(wg.trace(lambda x: x * x * x, numpy.ones(2)))
    assert list(c(numpy.full(2, 2.0))) == [8.0, 8.0]
    for other in (numpy.ones(3), 1.0):
        with pytest.raises(ValueError, match=r"traced with \(float64\[2\]\), got"):
            c(other)


def test_a_trace_inside_a_transformation_refuses_a_closed_over_traced_value():
    # as a constant of the inner trace, `a` would lose its derivative: the result would be
    # a silent 0 where 4.0 is right
    for inner in (lambda a: wg.compile(lambda x: a * x * x, 1.0)(2.0),
                  lambda a: wg.trace(lambda x: a * x * x, 1.0)(2.0),
                  lambda a: wg.jacobian_graph(lambda y: a * y ** 3, 2.0)(2.0)):
        with pytest.raises(ValueError, match="enclosing transformation.*as an argument"):
            wg.grad(inner)(3.0)
    # passed as an argument it differentiates; a constant may still be closed over
    assert wg.grad(lambda a: wg.compile(lambda a, x: a * x * x)(a, 2.0))(3.0) == 4.0
    assert wg.grad(lambda a: wg.trace(lambda x: 2.0 * x, 1.0)(a))(3.0) == 2.0


def test_count_and_plain_count():
    c = wg.compile(wg.value_and_grad(lambda x: wm.exp(x) * wm.exp(x) + wm.exp(x)), 1.0)
    counts = c.count()
    assert counts["call"] == 1                    # exp(x) once: interned
    assert sum(c.count(plain=True).values()) > sum(counts.values())


def test_compile_time_of_a_two_thousand_operation_gradient():
    def f(x):
        for _ in range(125):
            x = wm.sin(x) * 1.0001 + 0.1 * x * x - wm.cos(x) / 3
        return x
    t = time.perf_counter()
    c = wg.compile(wg.grad(f), 0.3)
    elapsed = time.perf_counter() - t
    assert sum(c.count().values()) >= 1000
    assert c(0.3) == pytest.approx(wg.grad(f)(0.3), rel=1e-12)
    assert elapsed < 2.0                          # the benchmark's goal is 0.5 s


def test_bad_arguments():
    with pytest.raises(TypeError, match="function"):
        wg.compile(3.0)
    with pytest.raises(ValueError, match="backend"):
        wg.compile(lambda x: x, 1.0, backend="fortran")
    with pytest.raises(ValueError, match="out of range"):
        wg.compile(lambda x: x, 1.0, static_argnums=3)
    c = wg.compile(lambda x: x * 2, 1.0)
    with pytest.raises(TypeError):
        c(1.0, 2.0)
    with pytest.raises(ValueError, match="backend='python'"):
        wg.compile(lambda a: np.linalg.inv(a), numpy.eye(2), backend="float")


def test_an_aux_that_holds_strings_none_and_flags_is_returned_as_eager_gives_it():
    import shutil
    backends = ["python", "numpy", "float"]
    if any(shutil.which(cc) for cc in ("cc", "gcc", "clang")):
        backends.append("c")
    marker = object()

    def loss(x, y):
        value = x * x * y + wm.sin(y)
        return value, {"name": "sq", "none": None, "ok": True, "step": 1, "obj": marker,
                       "twice": 2 * x, "tags": ("a", b"b")}
    g = wg.grad(loss, argnums=(0, 1), has_aux=True)
    for backend in backends:
        c = wg.compile(g, 0.5, 1.5, backend=backend)
        for x, y in rng.uniform(-2.0, 2.0, (3, 2)):
            (dx, dy), aux = c(x, y)
            (ex, ey), eaux = g(x, y)
            assert aux == eaux and aux["obj"] is marker and type(aux["ok"]) is bool
            assert type(aux["step"]) is int and aux["twice"] == 2 * x
            num = [(loss(x + 1e-6, y)[0] - loss(x - 1e-6, y)[0]) / 2e-6,
                   (loss(x, y + 1e-6)[0] - loss(x, y - 1e-6)[0]) / 2e-6]
            assert_close((dx, dy), num)
            assert_close((dx, dy), (ex, ey), rtol=1e-12)
    assert wg.trace(lambda x: (x, "s"), 1.0)(2.0) == (2.0, "s")
    # a constant array is still computed by the code: a fresh copy on every call
    c = wg.compile(lambda x: (x, numpy.array([1.0, 2.0]), "s"), 1.0, backend="numpy")
    c(1.0)[1][0] = 5.0
    assert c(1.0)[1][0] == 1.0


def test_text_or_objects_made_from_traced_values_are_refused_clearly():
    # at trace time a traced value has no value: its text would be garbage, frozen
    with pytest.raises(wg.ConcretizationError, match="made from a traced value"):
        wg.compile(wg.grad(lambda x: (x * x, f"loss={x * x}"), has_aux=True), 1.0)

    class Box:
        def __init__(self, v):
            self.v = v
    with pytest.raises(TypeError, match="Box holding a traced value.*'v'"):
        wg.compile(lambda x: (x, Box([1.0, x])), 1.0)
    assert wg.grad(lambda x: (x * x, f"loss={x * x}"), has_aux=True)(3.0) == (6.0, "loss=9.0")

    class Slotted:
        __slots__ = ("v",)

        def __init__(self, v):
            self.v = v
    for make, holds in ((lambda x: {x * 2.0}, "set holding a traced value .an element"),
                        (lambda x: frozenset([x]), "frozenset holding"),
                        (lambda x: numpy.array([x, 1.0], dtype=object), "ndarray holding"),
                        (lambda x: ValueError(x), "ValueError holding"),
                        (lambda x: Slotted(x), "Slotted holding a traced value .attribute 'v'")):
        with pytest.raises(TypeError, match=holds):
            wg.compile(make)(1.0)
    with pytest.raises(wg.ConcretizationError, match="made from a traced value"):
        wg.compile(lambda x: str(x).encode())(1.0)
    with pytest.raises(wg.ConcretizationError, match=r"format\(x, '.2f'\) of traced variable x"):
        wg.compile(lambda x: format(x, ".2f"))(1.0)
    assert format(wg.grad(lambda x: (x, format(x, ".2f")), has_aux=True)(3.0)[1]) == "3.00"
    assert wg.compile(lambda x: (x, {1.0, "a"}, numpy.array(["a"], dtype=object)))(2.0)[0] == 2.0


def _count_misses(c):
    """Count the calls of a compiled function that leave its generated code for the slow
    path (`_miss`), to see that a call form runs the code directly."""
    ns = c.__globals__
    miss, calls = ns["_miss"], []

    def counting(*args, **kwargs):
        calls.append(1)
        return miss(*args, **kwargs)
    ns["_miss"] = counting
    return calls


def test_keyword_arguments_and_defaults_behave_as_in_a_call_of_f():
    import inspect

    def f(x, y=2.0, *, scale=3.0, mode="sin"):
        return (wm.sin(x) if mode == "sin" else wm.cos(x)) * y * scale
    c = wg.compile(f, 0.5, static_argnames="mode")   # examples bind as a call: y, scale
    # and mode take their defaults
    assert str(inspect.signature(c)) == str(inspect.signature(f))
    misses = _count_misses(c)
    for x, y, s in rng.uniform(-2.0, 2.0, (3, 3)).tolist():   # (NumPy's float64 scalars
        assert c(x) == pytest.approx(f(x))                  # would be entries of their own)
        assert c(x, y) == pytest.approx(f(x, y))
        assert c(x=x, scale=s) == pytest.approx(f(x, scale=s))
        assert c(x, scale=s, y=y) == pytest.approx(f(x, y, scale=s))
        assert c(y=y, x=x, mode="cos") == pytest.approx(f(x, y, mode="cos"))
    assert len(c.cache) <= 5
    # the defaults run the code for them directly, with no trip through the slow path
    misses.clear()
    for x in rng.uniform(-2.0, 2.0, 5).tolist():
        assert c(x) == pytest.approx(f(x))
    assert len(misses) <= 1
    misses.clear()
    for x in rng.uniform(-2.0, 2.0, 5).tolist():
        assert c(x, scale=1.5) == pytest.approx(f(x, scale=1.5))
    assert len(misses) <= 1
    # a parameter left out is f's default, a constant of the trace
    assert "6.0" in wg.compile(f, 0.5).source
    # derivatives through keywords, against central differences
    g = wg.compile(wg.grad(f, argnums=(0, 1)), 0.5, 1.0)
    for x, y in rng.uniform(-2.0, 2.0, (3, 2)):
        num = [(f(x + 1e-6, y, scale=1.5) - f(x - 1e-6, y, scale=1.5)) / 2e-6,
               (f(x, y + 1e-6, scale=1.5) - f(x, y - 1e-6, scale=1.5)) / 2e-6]
        assert_close(g(x, y, scale=1.5), num)
        assert_close(g(x, y=y, scale=1.5), num)
    assert wg.grad(lambda s: c(0.5, scale=s))(2.0) == pytest.approx(f(0.5) / 3.0)
    # what f refuses, the compiled function refuses with Python's own message
    for bad, msg in [(lambda: c(), "missing 1 required positional argument: 'x'"),
                     (lambda: c(1.0, z=2.0), "unexpected keyword argument 'z'"),
                     (lambda: c(1.0, x=2.0), "multiple values for argument 'x'"),
                     (lambda: c(1.0, 2.0, 3.0), "positional arguments but 3 were given")]:
        with pytest.raises(TypeError, match=msg):
            bad()
    with pytest.raises(TypeError, match="example arguments: missing a required argument: 'y'"):
        wg.compile(lambda x, y: x * y, 1.0)


def test_static_argnames_and_settings_given_by_keyword():
    def f(x, n=2, *, mode="sin"):
        y = x
        for _ in range(n):
            y = wm.sin(y) if mode == "sin" else y * x
        return y
    c = wg.compile(f, 0.5, static_argnames=("n", "mode"))
    assert c(0.5) == f(0.5) and c(0.5, 3, mode="mul") == pytest.approx(f(0.5, 3, mode="mul"))
    assert c(0.5, n=1) == f(0.5, n=1) and len(c.cache) == 3
    assert wg.compile(f, 0.5, static_argnums=1)(0.5, 3) == f(0.5, 3)
    # a str given for a traced parameter names the parameter and the way out
    with pytest.raises(TypeError, match=r"argument 'mode' is a str.*static_argnames=\('mode',\)"):
        wg.compile(f, 0.5)(0.5, mode="mul")
    with pytest.raises(TypeError, match=r"argument 'p' holds a str.*static_argnums=\(0,\)"):
        wg.compile(lambda p: p["a"], {"a": 1.0, "b": "s"})
    with pytest.raises(ValueError, match="static_argnames names 'm', which is not"):
        wg.compile(f, 0.5, static_argnames="m")
    with pytest.raises(ValueError, match="static_argnums=2 is out of range"):
        wg.compile(f, 0.5, static_argnums=2)


def test_var_positional_unusual_names_and_var_keyword():
    cv = wg.compile(lambda *xs: xs[0] * xs[-1], 1.0, 2.0)
    assert (cv(1.0, 3.0), cv(1.0, 2.0, 4.0), cv(2.0)) == (3.0, 4.0, 4.0)
    assert len(cv.cache) == 3
    # names generated code must not use (a builtin, a leading underscore) still bind
    def u(input, _scale=2.0, *, max=1.0):
        return input * _scale + max
    cu = wg.compile(u, 1.0)
    assert cu(1.0) == 3.0 and cu(1.0, _scale=3.0) == 4.0 and cu(input=2.0, max=0.0) == 4.0
    assert cu(1.0, 4.0, max=5.0) == 9.0 and wg.grad(cu)(1.0, _scale=3.0) == 3.0
    with pytest.raises(TypeError, match="unexpected keyword argument 'scale'"):
        cu(1.0, scale=3.0)
    assert wg.compile(u, 1.0, backend="c")(2.0, max=1.0) == 5.0

    def po(x, /, y=1.0):
        return x + y
    assert wg.compile(po, 1.0)(1.0, y=2.0) == 3.0
    with pytest.raises(TypeError, match="positional-only"):
        wg.compile(po, 1.0)(x=1.0)

    def wk(x, **options):
        return x * 2
    cw = wg.compile(wk, 1.0)
    assert cw(3.0) == 6.0
    with pytest.raises(TypeError, match=r"\*\*options was given 'a'.*parameters of f"):
        cw(1.0, a=3.0)
    # a NumPy function: its keyword-only parameters keep their defaults (not passed)
    assert wg.compile(numpy.sin, 1.0)(2.0) == pytest.approx(math.sin(2.0))
    # a wrapper passing (*args, **kwargs) on binds as what it wraps; one with parameters
    # of its own (hvp's x, v) binds as itself
    import functools

    def logged(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return fn(*args, **kwargs)
        return wrapper
    assert wg.compile(logged(u), 1.0)(1.0, max=2.0) == 4.0
    assert wg.compile(wg.hvp(lambda x: x ** 3), 2.0, 1.0)(2.0, 1.0) == 12.0


# --------------------------------------------------------------------------------------
# weak typing: a Python number argument gives way to the array's dtype (NumPy 2, JAX)
# --------------------------------------------------------------------------------------
X32 = numpy.linspace(0.5, 1.5, 3, dtype=numpy.float32)
XI = numpy.arange(1, 4)

WEAK_CASES = {
    "float32 * Python float": (lambda x, s: x * s, X32, 2.5),
    "float32 * Python int": (lambda x, s: x * s, X32, 3),
    "int * Python float": (lambda x, s: x * s, XI, 2.5),
    "chain": (lambda x, s: (x * s + 1.0) * s, X32, 2.5),
    "2 * s stays weak": (lambda x, s: x - wm.sin(2 * s) / s, X32, 2.5),
    "reduction": (lambda x, s: np.sum(x * s) + s, X32, 2.5),
    "comparison": (lambda x, s: np.where(x < s, x, s), X32, 1.0),
    "NumPy float64 is strong": (lambda x, s: x * s, X32, numpy.float64(2.5)),
}


def _dtype(v):
    return numpy.result_type(v)


@pytest.mark.parametrize("name", WEAK_CASES)
def test_python_number_arguments_are_weak_in_traces_and_compiled_code(name):
    f, x, s = WEAK_CASES[name]
    eager = f(x, s)
    want = numpy.result_type(eager)
    assert wg.trace(f, x, s).outputs[0].dtype == want
    assert _dtype(wg.trace(f, x, s)(x, s)) == want
    for backend in ("python", "numpy"):
        got = wg.compile(f, x, s, backend=backend)(x, s)
        assert _dtype(got) == want, backend
        assert_close(got, eager, rtol=1e-6)


@pytest.mark.parametrize("x", [X32, XI, numpy.arange(1, 4, dtype=numpy.int32)],
                         ids=["float32", "int", "int32"])
@pytest.mark.parametrize("y", [3.0, numpy.int64(3), numpy.int8(3), numpy.float32(3.0),
                               numpy.float64(3.0), 3, 2.5], ids=repr)
def test_an_integral_exponent_keeps_numpy_dtype(x, y):
    # x ** y with an integral y is powi, whose n is a parameter: y's own dtype used to be
    # lost (float32 ** np.int64(3) stayed float32, int ** 3.0 stayed an int)
    want = numpy.result_type(x ** y)
    f = lambda x: x ** y
    assert wg.trace(f, x).outputs[0].dtype == want
    got = wg.compile(f, x)(x)
    assert _dtype(got) == want
    assert_close(got, x ** y)
    if x.dtype.kind == "f":
        assert wg.vjp(f, x)[0].dtype == want
        g = wg.grad(lambda x: np.sum(f(x)))(x)
        assert g.dtype == x.dtype                   # a gradient has its argument's dtype
        assert_close(g, float(y) * x.astype(numpy.float64) ** (float(y) - 1), rtol=1e-6)


@pytest.mark.parametrize("name", ["float32 * Python float", "chain", "2 * s stays weak",
                                  "reduction", "NumPy float64 is strong"])
def test_gradients_of_weakly_typed_functions_agree_and_are_right(name):
    f, x, s = WEAK_CASES[name]

    def loss(x, s):
        return np.sum(f(x, s) ** 2)
    g = wg.grad(loss, argnums=(0, 1))
    gx, gs = g(x, s)
    compiled = wg.compile(g, x, s)(x, s)
    traced = wg.trace(g, x, s)
    for got in (compiled, traced(x, s)):
        assert [_dtype(v) for v in got] == [_dtype(gx), _dtype(gs)]
        assert_close(got[0], gx, rtol=1e-6)
        assert_close(got[1], gs, rtol=1e-6)
    assert [n.dtype for n in traced.outputs] == [_dtype(gx), _dtype(gs)]
    assert gx.dtype == numpy.float32            # a gradient has its argument's dtype
    # central differences in float64, around the float32 point
    x64, h = x.astype(numpy.float64), 1e-6
    fd_s = (loss(x64, float(s) + h) - loss(x64, float(s) - h)) / (2 * h)
    assert_close(gs, fd_s, rtol=1e-4, atol=1e-4)
    v = rng.normal(size=x.shape)
    fd_x = (loss(x64 + h * v, float(s)) - loss(x64 - h * v, float(s))) / (2 * h)
    assert_close(numpy.dot(gx, v), fd_x, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("backend", ["python", "float"])
def test_constant_elements_next_to_a_transposed_argument(backend):
    # NumPy's concatenate keeps its parts' layout: of transposed parts, the element-by-element
    # code's object array was in Fortran order, and its constants were never made nodes
    b = numpy.arange(6.0).reshape(2, 3)
    B = rng.random((3, 2))
    for f, x in [(lambda b: np.concatenate([np.zeros((3, 1)), b.T], axis=1), b),
                 (lambda b: np.pad(b.T, 1), b),
                 (wg.vmap(lambda r: np.pad(r, 1), in_axes=1), b),
                 (wg.vmap(lambda x: np.concatenate([x, np.zeros(1)]), in_axes=1), B),
                 (wg.vmap(np.tril, in_axes=2), rng.random((2, 2, 3)))]:
        compiled = wg.compile(f, x, backend=backend)
        numpy.testing.assert_array_equal(compiled(x), f(x))
        assert compiled.entry.flavour == "float"


def test_a_python_float_and_a_numpy_float64_compile_apart():
    f = wg.compile(lambda x, s: x * s)
    assert f(X32, 2.0).dtype == numpy.float32
    assert f(X32, numpy.float64(2.0)).dtype == numpy.float64
    assert f(X32, numpy.array(2.0)).dtype == numpy.float64     # a 0-d array is strong too
    assert f(X32, 2.0).dtype == numpy.float32 and len(f.cache) == 2


def test_a_numpy_float64_constant_is_strong_in_compiled_code():
    f = lambda x: x * numpy.float64(2.0) + 1.0
    assert wg.compile(f, X32)(X32).dtype == f(X32).dtype == numpy.float64
    g = lambda x: x * 2.0
    assert wg.compile(g, X32)(X32).dtype == numpy.float32


@pytest.mark.parametrize("backend", ["python", "numpy", "float"])
def test_a_bool_argument_read_as_a_number_is_float64_in_numpy_code(backend):
    # NumPy's exp and sin of a bool scalar are float16: e came out 2.71875 where the
    # graph (and eager evaluation) say float64 (QA)
    f = lambda x, b: x * wm.exp(b) + wm.sin(b) * b + np.where(b, x, 2.0)      # noqa: E731
    x = numpy.linspace(0.5, 1.5, 1000 if backend == "python" else 3)
    c = wg.compile(f, x, True, backend=backend)
    for b in (True, False):
        assert_close(c(x, b), x * math.exp(b) + math.sin(b) * b + (x if b else 2.0),
                     rtol=1e-15, atol=0)


def test_python_code_of_a_c_function_is_python():
    import shutil
    if not any(shutil.which(cc) for cc in ("cc", "gcc", "clang")):
        pytest.skip("no C compiler")
    c = wg.compile(lambda x, y: x * y + wm.sin(x), 2.0, 3.0, backend="c")
    text = c.code("python")                    # (it was the C source)
    namespace = {"_math": math, "_miss": None}
    exec(text, namespace)
    assert namespace["compiled"](2.0, 3.0) == c(2.0, 3.0) == 6.0 + math.sin(2.0)
    assert "double" in c.code("c")


def test_an_index_update_with_a_traced_scalar_in_float_code():
    """x.at[1].set(x[3]) written element by element: element 1 is x[3]'s symbol (a
    0-d array of it once held a node as a constant, and the call failed)."""
    x = numpy.array([0.3, -1.0, 2.0, 0.5])

    def f(x):
        return np.maximum(np.at(x)[1].set(x[3]), x)

    def loss(x):
        return np.sum(np.where(np.at(x)[1].set(x[3] * x[0]) > 0, x * x, -x))
    compiled = wg.compile(f)
    numpy.testing.assert_array_equal(compiled(x), [0.3, 0.5, 2.0, 0.5])
    numpy.testing.assert_array_equal(compiled(x), f(x))
    g = wg.compile(wg.grad(loss))
    assert_close(g(x), wg.grad(loss)(x), rtol=1e-15, atol=0)
    h = 1e-6
    fd = [(loss(x + h * e) - loss(x - h * e)) / (2 * h) for e in numpy.eye(4)]
    assert_close(g(x), fd, rtol=1e-6, atol=1e-8)


def test_arrays_with_an_equal_dtype_of_another_identity_run_the_same_code():
    # unpickled arrays, ctypes buffers and dtypes with metadata failed the guard's identity
    # test forever after ("a bug in wengert"), and so did every plain call after one
    import ctypes
    import pickle
    f = lambda x: np.sum(x * x)                                         # noqa: E731
    odd = [pickle.loads(pickle.dumps(numpy.arange(3.0))),
           numpy.ctypeslib.as_array((ctypes.c_double * 3)(0.0, 1.0, 2.0)),
           numpy.arange(3.0).astype(numpy.dtype(numpy.float64, metadata={"unit": "m"}))]
    for first in (numpy.arange(3.0), odd[0]):
        c = wg.compile(f)
        for x in [first] + odd + [numpy.arange(3.0)]:
            assert c(x) == 5.0
    # big-endian dtypes, of which NumPy makes a new object per array, have no object of
    # NumPy's own to be made: the first seen stands for all
    big = [numpy.arange(3.0).astype(">f8"), numpy.arange(3.0).astype(">f8"),
           numpy.frombuffer(numpy.arange(3.0).byteswap().tobytes(), ">f8")]
    assert big[0].dtype is not big[1].dtype
    c = wg.compile(lambda x: x * 2.0)
    for x in big + big:
        assert c(x).tolist() == [0.0, 2.0, 4.0]
    assert len(c.cache) == 1


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_array_subclasses_are_refused_by_name():
    # (the guard tested their type only, and float code read a whole np.matrix as one
    # number: sum(x * x) of three elements gave [5 6 9])
    c = wg.compile(lambda x: np.sum(x * x))
    for x in (numpy.asmatrix(numpy.arange(3.0)), numpy.ma.masked_array(numpy.arange(3.0))):
        with pytest.raises(TypeError, match="plain NumPy arrays, not (matrix|MaskedArray)"):
            c(x)
    assert c(numpy.arange(3.0)) == 5.0


def test_true_division_of_integers_stays_a_float_when_simplified():
    # (x / 1 was simplified to the int x: later products wrapped around)
    n = numpy.int64(5)
    g = lambda a: (a / 1) * 3_000_000_000 * 3_000_000_000                 # noqa: E731
    for f in (lambda a: a / 1, g, lambda a: np.mean(np.stack([a]))):
        got, want = wg.compile(f)(n), f(n)
        assert numpy.result_type(got) == numpy.result_type(want) == numpy.float64
        assert got == want


def test_python_complex_arguments_follow_numpy_at_zero():
    # (Python's complex arithmetic raised ZeroDivisionError where NumPy gives inf+nanj)
    with numpy.errstate(all="ignore"):
        got = wg.compile(lambda z: 1.0 / z)(0j)
        want = 1.0 / numpy.complex128(0j)
    assert numpy.isinf(got.real) and numpy.isnan(got.imag) and numpy.isnan(want.imag)


def test_a_compiled_graph_checks_its_arguments_structure():
    # (a dict of other keys was bound to the inputs in sorted-key order, silently)
    g = wg.trace(lambda p, x: p["w"] * x + p["b"], {"w": 2.0, "b": 1.0}, 3.0)
    c = wg.compile(g)
    assert c({"w": 2.0, "b": 1.0}, 3.0) == g({"w": 2.0, "b": 1.0}, 3.0) == 7.0
    for p in ({"a": 2.0, "w": 1.0}, (2.0, 1.0)):
        with pytest.raises(ValueError, match="structure it was traced with"):
            c(p, 3.0)


def test_jit_is_compile_under_jaxs_name_and_keywords():
    import functools

    @wg.jit
    def f(x):
        return wg.math.sin(x) * x
    assert f(2.0) == wg.compile(lambda x: wg.math.sin(x) * x)(2.0)
    power = functools.partial(wg.jit, static_argnums=1)(lambda x, n: x ** n)
    assert power(2.0, 3) == 8.0 and power(2.0, 2) == 4.0
    g = wg.jit(wg.grad(lambda x, n=2: x ** n), static_argnames="n", donate_argnums=0,
               backend="cpu")
    assert g(3.0, n=3) == 27.0
    assert wg.jit(static_argnums=(1,))(lambda x, n: x * n)(2.0, 5) == 10.0
    with pytest.raises(TypeError, match="unexpected keyword arguments \\['foo'\\]"):
        wg.jit(lambda x: x, foo=1)
    with pytest.raises(ValueError, match="backend 'gpu' is not available"):
        wg.jit(lambda x: x, backend="gpu")


def test_compiled_numpy_code_frees_each_temporary_after_its_last_use():
    """The backward part of a compiled gradient lets the forward activations and the
    cotangents go as it uses them: the peak holds the activations, the gradient and a
    few cotangents, not every cotangent as well."""
    import tracemalloc
    rng = numpy.random.default_rng(3)
    layers, width, batch = 6, 64, 128
    params = [rng.normal(size=(width, width)) / 8.0 for _ in range(layers)]
    x = rng.normal(size=(batch, width))

    def loss(ws, x):
        for w in ws:
            x = np.tanh(x @ w)
        return np.sum(x ** 2)
    g = wg.compile(wg.grad(loss), params, x)
    assert "del " in g.source
    assert_close(g(params, x), wg.grad(loss)(params, x), rtol=1e-12, atol=1e-12)
    tracemalloc.start()
    g(params, x)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    activation, gradient = batch * width * 8, layers * width * width * 8
    # every activation and every cotangent kept would be gradient + 2 * layers * activation
    assert peak < gradient + (layers + 3) * activation


def test_a_method_call_on_a_compound_operand_is_parenthesised():
    """``(v*v).sum(axis=1)``, not ``v*v.sum(axis=1)``: the temporaries' name scan once
    shadowed the pattern that tells a single name from an expression."""
    x = numpy.arange(9.0).reshape(3, 3) / 10
    f = lambda x: np.sum(np.linalg.inv(x + numpy.eye(3)) ** 2, axis=1)     # noqa: E731
    g = wg.compile(f, x)
    assert_close(g(x), f(x), rtol=1e-12, atol=0)
    h = lambda x: np.reshape(np.linalg.inv(x + numpy.eye(3)) * 2.0, (9,))  # noqa: E731
    assert_close(wg.compile(h, x)(x), h(x), rtol=1e-12, atol=0)
