"""Convolutions and pooling as C loops (``wg.compile(..., backend="c")``,
`wengert.codegen.cloops`): conv2d and its two gradients against the NumPy back-end and
eager evaluation within rounding (their sums add in another order), with BLAS and with
loops; max pooling, its gradient (pool_scatter), its tangent (pool_gather) and its indices
(pool_argmax) bit for bit, ties, nans and overlapping windows included.  Gradients and
second derivatives are checked against eager derivatives and central differences."""
import sys

import numpy as np
import pytest

import wengert as wg
import wengert.nn as nn
import wengert.numpy as wnp
from fd import assert_close
from test_c_loops import HAVE_CC, looped, numpy_compiled, same
from wengert.codegen import cloops
from wengert.primitives import nn as P

pytestmark = pytest.mark.skipif(not HAVE_CC, reason="no C compiler on this machine")

RNG = np.random.default_rng(11)


@pytest.fixture
def loops(monkeypatch):
    """Loop mode for arrays of any size."""
    monkeypatch.setattr(cloops, "LOOP_ELEMENTS", 0)


def close(a, b, rtol=1e-12):
    """a equals b within rounding of their sums: normwise, to rtol of b's largest entry."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_allclose(a, b, rtol=0, atol=rtol * max(np.abs(b).max(), 1e-300))


# (images, kernels, stride, padding ((top, bottom), (left, right)), dilation, groups)
GEOMETRIES = {
    "plain": ((2, 1, 6, 6), (3, 1, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    "stride 2, channels": ((2, 3, 9, 9), (4, 3, 3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 1),
    "asymmetric padding": ((2, 3, 7, 8), (4, 3, 3, 2), (2, 3), ((2, 0), (1, 3)), (1, 1), 1),
    "dilation 2": ((2, 2, 9, 9), (3, 2, 3, 3), (1, 1), ((2, 2), (2, 2)), (2, 2), 1),
    "groups 2": ((2, 4, 7, 7), (6, 2, 3, 3), (1, 2), ((0, 2), (1, 1)), (2, 1), 2),
    "depthwise": ((2, 3, 6, 6), (3, 1, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 3),
    "batch 1, non-square": ((1, 2, 5, 11), (2, 2, 2, 4), (2, 1), ((0, 0), (2, 1)), (1, 2), 1),
}


def conv(geometry):
    """The conv2d primitive of this geometry (asymmetric padding, which wengert.nn's
    conv2d only writes for padding='same')."""
    _, _, stride, padding, dilation, groups = geometry
    return lambda x, w: P.conv2d(x, w, stride=stride, padding=padding, dilation=dilation,
                                 groups=groups)


@pytest.fixture(params=["blas", "loops"])
def products(request, monkeypatch):
    """Convolutions' products by BLAS (where SciPy lends it) or by loops."""
    if request.param == "blas" and cloops.dgemm_address() is None:
        pytest.skip("no SciPy BLAS")
    monkeypatch.setattr(cloops, "CONV_BLAS_WORK", 0 if request.param == "blas" else 10 ** 18)
    return request.param


@pytest.mark.parametrize("name", list(GEOMETRIES))
def test_convolution_and_its_gradients_against_numpy_and_eager(loops, products, name):
    geometry = GEOMETRIES[name]
    f = conv(geometry)
    x, w = RNG.normal(size=geometry[0]), RNG.normal(size=geometry[1])
    r = RNG.normal(size=f(x, w).shape)
    g = wg.grad(lambda x, w: wnp.sum(f(x, w) * r), argnums=(0, 1))
    c = looped(lambda x, w: (f(x, w), *g(x, w)), x, w)
    for prim in ("conv2d", "conv2d_input_grad", "conv2d_weight_grad"):
        assert f"{prim}:" in c.source
    assert ("wg_gemm(" in c.source) == (products == "blas")
    got = c(x, w)
    for a, b, e in zip(got, numpy_compiled(lambda x, w: (f(x, w), *g(x, w)), x, w),
                       (f(x, w), *g(x, w))):
        close(a, b)
        close(a, e)


def test_convolution_of_views_constants_and_nans(loops):
    # images given transposed (read through their strides), kernels transposed (copied
    # C-contiguous for the product), a constant kernel; a nan spreads to its windows only
    xt, w = RNG.normal(size=(7, 6, 3, 2)), RNG.normal(size=(4, 3, 3, 3))
    xt[2, 3, 1, 0] = np.nan
    k = RNG.normal(size=(2, 4, 2, 2))

    def f(xt, w):
        y = nn.conv2d(wnp.transpose(xt, (3, 2, 0, 1)), wnp.transpose(w, (0, 1, 3, 2)),
                      padding=1)
        return y, nn.conv2d(y, k, stride=2)
    for a, b in zip(looped(f, xt, w)(xt, w), numpy_compiled(f, xt, w)):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        assert np.isnan(a).any() and not np.isnan(a).all()
        close(np.nan_to_num(a), np.nan_to_num(b))


def test_convolution_derivatives_against_central_differences(loops):
    geometry = GEOMETRIES["groups 2"]
    f = conv(geometry)
    x, w = RNG.normal(size=geometry[0]), RNG.normal(size=geometry[1])

    def loss(x, w):
        return wnp.sum(wnp.tanh(f(x, w)))
    g = wg.grad(loss, argnums=(0, 1))
    gx, gw = looped(g, x, w)(x, w)
    for got, arg in ((gx, 0), (gw, 1)):
        e = RNG.normal(size=got.shape)
        shifted = [lambda t: [x + t * e, w][arg], lambda t: [x, w + t * e][arg]]

        def at(t):
            return float(loss(*[shifted[k](t) if k == arg else (x, w)[k] for k in (0, 1)]))
        fd = (at(1e-6) - at(-1e-6)) / 2e-6
        assert_close(np.sum(got * e), fd, rtol=1e-7, atol=1e-8)
    # second order: the Hessian of the loss along (v, u), forward over reverse; the rules
    # of the convolutions' derivatives are convolutions again, all in C
    v, u = RNG.normal(size=x.shape), RNG.normal(size=w.shape)

    def hvp(x, w, v, u):
        return wg.jvp(lambda x, w: g(x, w), (x, w), (v, u))[1]
    c = looped(hvp, x, w, v, u)
    assert "conv2d_input_grad:" in c.source and "conv2d_weight_grad:" in c.source
    got = c(x, w, v, u)
    for a, b in zip(got, hvp(x, w, v, u)):
        close(a, b, 1e-11)
    fd = [(np.asarray(p) - np.asarray(m)) / 2e-6 for p, m in
          zip(g(x + 1e-6 * v, w + 1e-6 * u), g(x - 1e-6 * v, w - 1e-6 * u))]
    for a, b in zip(got, fd):
        assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_average_pooling_is_a_convolution_in_c(loops):
    x = RNG.normal(size=(2, 3, 7, 7))
    for options in (dict(stride=2, padding=1), dict(stride=1, padding=1,
                                                    count_include_pad=False)):
        g = wg.grad(lambda x: wnp.sum(nn.avg_pool2d(x, 3, **options) ** 2))
        c = looped(g, x)
        assert "conv2d_input_grad:" in c.source
        close(c(x), g(x))


def test_empty_batches_and_no_kernels(loops):
    f = wg.grad(lambda x, w: wnp.sum(nn.conv2d(x, w, padding=1) ** 2), argnums=(0, 1))
    for x, w in ((np.ones((0, 2, 9, 9)), np.ones((3, 2, 3, 3))),
                 (np.ones((4, 2, 9, 9)), np.ones((0, 2, 3, 3)))):
        for a, b in zip(wg.compile(f, x, w, backend="c")(x, w), f(x, w)):
            same(a, b)


# ---- pooling: bit for bit ------------------------------------------------------------------
POOLS = {
    "2x2": dict(kernel_size=2),
    "overlapping": dict(kernel_size=3, stride=1),
    "padded, ceil_mode": dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    "dilated, non-square": dict(kernel_size=(2, 3), stride=(1, 2), dilation=(2, 1)),
    "apart": dict(kernel_size=(2, 1), stride=(3, 2)),
}


def pool_data(kind, shape=(2, 3, 7, 8)):
    if kind == "random":
        return RNG.normal(size=shape)
    if kind == "ties":              # repeated maxima, zeros of both signs
        return RNG.integers(0, 3, size=shape) * RNG.choice([1.0, -1.0, 0.0], size=shape)
    x = RNG.normal(size=shape)      # nans (several in a window), infinities
    x[0, 0, 1, 1] = x[1, 2, 3, 3] = x[1, 2, 3, 4] = x[1, 2, 4, 4] = np.nan
    x[0, 1, :, 2], x[1, 0, 2, :] = np.inf, -np.inf
    return x


@pytest.mark.parametrize("kind", ["random", "ties", "nan"])
@pytest.mark.parametrize("name", list(POOLS))
def test_max_pooling_and_its_derivatives_are_numpy_bit_for_bit(loops, name, kind):
    options = POOLS[name]
    x = pool_data(kind)
    v = RNG.normal(size=x.shape)

    def pool(x):
        return nn.max_pool2d(x, **options)
    ct = RNG.normal(size=pool(x).shape)
    fs = {"max_pool2d": (pool, (x,)),
          "pool_scatter": (wg.grad(lambda x: wnp.sum(pool(x) * ct)), (x,)),
          "pool_gather": (lambda x, v: wg.jvp(pool, (x,), (v,))[1], (x, v)),
          "pool_argmax": (lambda x: nn.max_pool2d(x, return_indices=True, **options)[1],
                          (x,))}
    for prim, (f, args) in fs.items():
        c = looped(f, *args)
        assert f"{prim}:" in c.source
        with np.errstate(all="ignore"):
            got, want, eager = c(*args), numpy_compiled(f, *args), f(*args)
        same(got, want)
        # (equal values: a traced padding adds its -inf border as a constant with zeros
        # inside, which makes -0.0 0.0, where eager NumPy's pad keeps it)
        np.testing.assert_array_equal(got, eager)


def test_ties_go_to_the_first_maximum_and_overlapping_windows_add(loops):
    x = np.array([[[[1.0, 3.0, 3.0, 0.0],
                    [3.0, 2.0, 3.0, 3.0],
                    [0.0, 0.0, np.nan, 1.0]]]])
    # windows 2x2, stride 1: [[3, 3, 3], [3, nan, nan]], the first 3 of each window and
    # the first nan getting the window's cotangent, summed where windows share it
    ct = np.array([[[[1.0, 10.0, 100.0], [1000.0, 1e4, 1e5]]]])
    g = wg.grad(lambda x: wnp.sum(nn.max_pool2d(x, 2, stride=1) * ct))
    want = [[[[0.0, 11.0, 100.0, 0.0], [1000.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.1e5, 0.0]]]]
    got = looped(g, x)(x)
    same(got, np.array(want))
    same(got, g(x))


def test_pool_derivatives_against_central_differences(loops):
    x = RNG.normal(size=(2, 2, 7, 7))
    options = POOLS["padded, ceil_mode"]

    def loss(x):
        return wnp.sum(wnp.sin(nn.max_pool2d(x, **options)) ** 2)
    g = wg.grad(loss)
    got = looped(g, x)(x)
    e = RNG.normal(size=x.shape)
    fd = (float(loss(x + 1e-6 * e)) - float(loss(x - 1e-6 * e))) / 2e-6
    assert_close(np.sum(got * e), fd, rtol=1e-7, atol=1e-8)
    hvp = lambda x, v: wg.jvp(g, (x,), (v,))[1]                             # noqa: E731
    c = looped(hvp, x, e)
    assert "pool_gather:" in c.source and "pool_scatter:" in c.source
    got = c(x, e)
    close(got, hvp(x, e))
    fd = (np.asarray(g(x + 1e-6 * e)) - np.asarray(g(x - 1e-6 * e))) / 2e-6
    assert_close(got, fd, rtol=1e-5, atol=1e-6)


# ---- the CNN of benchmarks/arrays.py ------------------------------------------------------------
def cnn_loss(params, x, y):
    k, kb, w, b = params
    h = nn.max_pool2d(nn.relu(nn.conv2d(x, k, kb, padding=1)), 2)
    return nn.cross_entropy(wnp.reshape(h, (h.shape[0], -1)) @ w + b, y)


def test_cnn_gradient_compiles_to_loops_and_agrees():
    sys.path.insert(0, "benchmarks")
    try:
        import arrays
    finally:
        sys.path.remove("benchmarks")
    params, x, y = arrays.cnn_data()
    g = wg.grad(cnn_loss)
    c = looped(g, params, x, y)         # (no fixture: large enough for loops by itself)
    got = c(params, x, y)
    for a, b, e in zip(got, numpy_compiled(g, params, x, y), g(params, x, y)):
        close(a, b)
        close(a, e)
    for k in (0, 1):                    # central differences at a few kernel entries
        for j in RNG.choice(params[k].size, 3, replace=False):
            def at(t):
                q = list(params)
                q[k] = params[k].copy().reshape(-1)
                q[k][j] += t
                q[k] = q[k].reshape(params[k].shape)
                return float(cnn_loss(q, x, y))
            fd = (at(1e-6) - at(-1e-6)) / 2e-6
            assert_close(got[k].reshape(-1)[j], fd, rtol=1e-6, atol=1e-8)


def test_what_the_loops_do_not_write_is_refused_by_name(loops):
    x = RNG.normal(size=(2, 3, 8, 8))
    unpool = wg.trace(lambda x: nn.max_unpool2d(*nn.max_pool2d(x, 2, return_indices=True),
                                                2), x)
    with pytest.raises(cloops.NotLooped, match="max_unpool"):
        cloops.function_source(unpool, "f")
    integers = wg.trace(lambda x: nn.conv2d(x, RNG.normal(size=(2, 3, 3, 3))),
                        np.ones((2, 3, 8, 8), np.int64))
    with pytest.raises(cloops.NotLooped, match="conv2d of other than float64"):
        cloops.function_source(integers, "f")
