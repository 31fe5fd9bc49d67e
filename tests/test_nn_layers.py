"""wengert.nn's activations, pooling, normalisation, dropout and losses: values against
direct NumPy references and (where installed) torch.nn.functional, derivatives to second
order against finite differences, extreme inputs, wg.vmap against a loop, and the errors."""
import math

import numpy
import pytest

import wengert as wg
import wengert.nn as nn
import wengert.numpy as np
from fd import check_grads, assert_close

rng = numpy.random.default_rng(2024)


def away_from_zero(shape, gap=0.2):
    """Random points at least `gap` from 0 (the kinks of elu, leaky_relu, l1, huber)."""
    x = rng.normal(size=shape)
    return numpy.where(x >= 0, x + gap, x - gap)


def torch_f():
    torch = pytest.importorskip("torch")
    return torch, torch.nn.functional


def T(a):
    import torch
    return torch.from_numpy(numpy.asarray(a, dtype=float))


_erf = numpy.vectorize(math.erf)

# name: (function, NumPy reference, PyTorch's function of a tensor)
ACTIVATIONS = {
    "sigmoid": (nn.sigmoid, lambda x: 1 / (1 + numpy.exp(-x)), lambda F, t: F.sigmoid(t)),
    "log_sigmoid": (nn.log_sigmoid, lambda x: -numpy.log1p(numpy.exp(-x)),
                    lambda F, t: F.logsigmoid(t)),
    "softplus": (nn.softplus, lambda x: numpy.log1p(numpy.exp(x)), lambda F, t: F.softplus(t)),
    "softplus_beta": (lambda x: nn.softplus(x, beta=2.5),
                      lambda x: numpy.log1p(numpy.exp(2.5 * x)) / 2.5,
                      lambda F, t: F.softplus(t, beta=2.5)),
    "silu": (nn.silu, lambda x: x / (1 + numpy.exp(-x)), lambda F, t: F.silu(t)),
    "gelu": (nn.gelu, lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
             lambda F, t: F.gelu(t)),
    "gelu_tanh": (lambda x: nn.gelu(x, approximate=True),
                  lambda x: 0.5 * x * (1 + numpy.tanh(math.sqrt(2 / math.pi)
                                                      * (x + 0.044715 * x ** 3))),
                  lambda F, t: F.gelu(t, approximate="tanh")),
    "elu": (nn.elu, lambda x: numpy.where(x > 0, x, numpy.exp(x) - 1), lambda F, t: F.elu(t)),
    "elu_alpha": (lambda x: nn.elu(x, alpha=0.5),
                  lambda x: numpy.where(x > 0, x, 0.5 * (numpy.exp(x) - 1)),
                  lambda F, t: F.elu(t, alpha=0.5)),
    "leaky_relu": (nn.leaky_relu, lambda x: numpy.where(x > 0, x, 0.01 * x),
                   lambda F, t: F.leaky_relu(t)),
    "leaky_relu_slope": (lambda x: nn.leaky_relu(x, 0.2), lambda x: numpy.where(x > 0, x, 0.2 * x),
                         lambda F, t: F.leaky_relu(t, 0.2)),
}


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_values_and_derivatives(name):
    f, ref, _ = ACTIVATIONS[name]
    x = away_from_zero((3, 4)) * 2
    y = f(x)
    assert type(y) is numpy.ndarray and y.dtype == numpy.float64
    assert_close(y, ref(x), rtol=1e-12, atol=1e-14)
    check_grads(f, x)
    # vmap is the loop
    assert_close(wg.vmap(f)(x), numpy.stack([f(r) for r in x]), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_against_torch(name):
    torch, F = torch_f()
    f, _, tf = ACTIVATIONS[name]
    x = rng.normal(size=50) * 4
    # (1e-11: PyTorch's exp and log1p are its own, vectorised, a few ulps from NumPy's)
    assert_close(f(x), tf(F, T(x)).numpy(), rtol=1e-11, atol=1e-14)
    t = T(x).requires_grad_()
    tf(F, t).sum().backward()
    assert_close(wg.grad(lambda x: np.sum(f(x)))(x), t.grad.numpy(), rtol=1e-11, atol=1e-14)


@pytest.mark.parametrize("name", ["sigmoid", "log_sigmoid", "softplus", "silu", "gelu",
                                  "gelu_tanh", "elu"])
def test_activation_extremes_are_finite_with_the_right_limits(name):
    f, _, _ = ACTIVATIONS[name]
    x = numpy.array([-1000.0, -40.0, 40.0, 1000.0])
    with numpy.errstate(over="raise", invalid="raise", divide="raise"):          # no overflow, nan or division by 0 anywhere
        y = f(x)
        g = wg.grad(lambda x: np.sum(f(x)))(x)
        h = wg.vmap(wg.grad(wg.grad(lambda s: f(s))))(x)
    assert numpy.all(numpy.isfinite(y)) and numpy.all(numpy.isfinite(g))
    assert numpy.all(numpy.isfinite(h))
    limits = {"sigmoid": ([0.0, 1.0], [0.0, 0.0]), "log_sigmoid": ([-1000.0, 0.0], [1.0, 0.0]),
              "softplus": ([0.0, 1000.0], [0.0, 1.0]), "silu": ([0.0, 1000.0], [0.0, 1.0]),
              "gelu": ([0.0, 1000.0], [0.0, 1.0]), "gelu_tanh": ([0.0, 1000.0], [0.0, 1.0]),
              "elu": ([-1.0, 1000.0], [0.0, 1.0])}
    values, slopes = limits[name]
    assert_close(y[[0, 3]], values, rtol=1e-15, atol=0)
    assert_close(g[[0, 3]], slopes, rtol=1e-15, atol=0)


def test_sigmoid_is_accurate_in_the_left_tail_and_at_zero():
    assert_close(nn.sigmoid(numpy.array([-40.0, -700.0])), [math.exp(-40) / (1 + math.exp(-40)),
                                                            math.exp(-700)], rtol=1e-14, atol=0)
    assert wg.grad(nn.sigmoid)(0.0) == 0.25
    assert wg.grad(nn.silu)(0.0) == 0.5
    assert wg.grad(wg.grad(nn.softplus))(0.0) == 0.25


def test_kink_derivatives_follow_pytorch():
    zero = numpy.zeros(1)
    assert wg.grad(lambda x: np.sum(nn.leaky_relu(x, 0.2)))(zero).tolist() == [0.2]
    assert wg.grad(lambda x: np.sum(nn.elu(x, 0.5)))(zero).tolist() == [0.5]


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float16])
def test_activations_trace_and_keep_float32_and_float16(dtype):
    # (float16: SciPy's expit and erf, under sigmoid, silu and gelu, return float64)
    x = rng.normal(size=(2, 3)).astype(dtype)
    for name, (f, _, _) in ACTIVATIONS.items():
        assert f(x).dtype == dtype, name
        assert wg.grad(lambda x: np.sum(f(x)))(x).dtype == dtype, name
        graph = wg.trace(f, x)
        assert graph.outputs[0].dtype == dtype, name
        tol = 1e-6 if dtype == numpy.float32 else 2e-3
        assert_close(graph(x), f(x), rtol=tol, atol=tol)
        assert_close(f(x), f(x.astype(numpy.float64)), rtol=tol, atol=tol)


# ---- erf without SciPy (the exact gelu's) ------------------------------------------------------
def _erf_grid():
    """erf's arguments to check: a dense grid over [-7, 7] (beyond ±6 erf rounds to ±1), tiny
    values down to the smallest subnormal, both sides of the approximations' joints
    (0.46875 and 4), and signed zeros."""
    tiny = numpy.geomspace(5e-324, 1e-2, 20001)
    joints = numpy.concatenate([numpy.linspace(j - 1e-9, j + 1e-9, 501) for j in (0.46875, 4.0)])
    x = numpy.concatenate([numpy.linspace(-7, 7, 140001), tiny, joints,
                           numpy.nextafter(0.46875, [0.0, 1.0]), [0.0]])
    return numpy.concatenate([x, -x])


def test_erf_without_scipy_is_accurate_to_a_few_ulp():
    """wengert's own erf (W. J. Cody's rational approximations in NumPy) against
    math.erf: measured at most 4.6e-16 relative (4 units in the last place) wherever erf
    is a normal number; erfc at most 1.1e-15 relative down to the smallest normal."""
    from wengert.primitives.special import erf_numpy, erfc_numpy
    x = _erf_grid()
    want = numpy.array([math.erf(v) for v in x])
    got = erf_numpy(x)
    normal = numpy.abs(want) >= numpy.finfo(float).tiny
    rel = numpy.abs(got[normal] - want[normal]) / numpy.abs(want[normal])
    assert rel.max() <= 1e-15, (rel.max(), x[normal][rel.argmax()])
    # subnormal erf (|x| < 2e-308): within a unit of the last (subnormal) place
    assert numpy.all(numpy.abs(got[~normal] - want[~normal]) <= 5e-324)
    assert numpy.array_equal(numpy.signbit(got), numpy.signbit(x))          # odd, -0.0 too
    xc = numpy.concatenate([numpy.linspace(-6, 26.5, 130001), x[numpy.abs(x) < 1]])
    want_c = numpy.array([math.erfc(v) for v in xc])
    got_c = erfc_numpy(xc)
    normal = want_c >= numpy.finfo(float).tiny
    rel_c = numpy.abs(got_c[normal] - want_c[normal]) / want_c[normal]
    assert rel_c.max() <= 2e-15, (rel_c.max(), xc[normal][rel_c.argmax()])


def test_erf_without_scipy_at_the_edges():
    from wengert.primitives.special import erf_numpy, erfc_numpy
    x = numpy.array([numpy.inf, -numpy.inf, numpy.nan, 1e300, -1e300, 6.0, 27.3, 30.0])
    with numpy.errstate(all="raise"):                    # no overflow on the way
        e, c = erf_numpy(x), erfc_numpy(x)
    assert e[[0, 3, 5, 6, 7]].tolist() == [1.0] * 5 and e[[1, 4]].tolist() == [-1.0] * 2
    assert c.tolist()[:2] == [0.0, 2.0] and c[[3, 6, 7]].tolist() == [0.0] * 3
    assert numpy.isnan(e[2]) and numpy.isnan(c[2])
    assert erf_numpy(numpy.float32([0.5])).dtype == numpy.float32
    assert type(erf_numpy(0.5)) is numpy.float64 and erf_numpy(0.5) == math.erf(0.5)
    assert_close(erf_numpy(numpy.array([1, 2])), [math.erf(1), math.erf(2)], rtol=1e-15, atol=0)
    assert erf_numpy(numpy.zeros((2, 0, 3))).shape == (2, 0, 3)
    with pytest.raises(TypeError, match="erf: expected real numbers, got dtype complex128"):
        erf_numpy(numpy.array([1j]))


def test_erf_without_scipy_against_scipy():
    special = pytest.importorskip("scipy.special")
    from wengert.primitives.special import erf_numpy, erfc_numpy
    x = _erf_grid()
    assert_close(erf_numpy(x), special.erf(x), rtol=1e-15, atol=0)
    # SciPy's erfc is the less accurate one beyond 4: 6e-14 from the true value at 23,
    # where this one is within 8e-16 (by mpmath)
    xc = numpy.linspace(-6, 26, 20001)
    assert_close(erfc_numpy(xc), special.erfc(xc), rtol=1e-13, atol=0)


def test_exact_gelu_with_wengerts_own_erf(monkeypatch):
    """The erf primitive evaluated by wengert's NumPy erf, as where SciPy is missing: the
    same gelu and derivatives, to rounding, and its derivatives by central differences
    (second order), batched and compiled."""
    from wengert.primitives import special
    x = away_from_zero((3, 4)) * 2
    ref = 0.5 * x * (1 + _erf(x / math.sqrt(2)))
    monkeypatch.setattr(special.erf, "impl", special.erf_numpy)
    y = nn.gelu(x)
    # (1 + erf(x/√2) cancels for negative x: erf's last bits weigh more there)
    assert_close(y, ref, rtol=1e-13, atol=1e-16)
    check_grads(nn.gelu, x)
    assert_close(wg.vmap(nn.gelu)(x), y, rtol=0, atol=0)
    g = wg.grad(lambda x: np.sum(nn.gelu(x)))
    assert_close(wg.compile(g, x)(x), g(x), rtol=1e-14, atol=1e-16)
    # d/dx x Φ(x) = Φ(x) + x φ(x)
    phi = numpy.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    assert_close(g(x), 0.5 * (1 + _erf(x / math.sqrt(2))) + x * phi, rtol=1e-14, atol=1e-16)


def test_exact_gelu_needs_no_scipy():
    """In a process where SciPy cannot be imported, wengert imports, and the exact gelu
    and its gradient are the ones computed here."""
    import json
    import os
    import subprocess
    import sys
    x = [-30.0, -3.0, -1.0, -1e-20, 0.0, 0.5, 2.0, 40.0]
    code = ("import sys, json; sys.modules['scipy'] = None\n"
            "import numpy, wengert as wg, wengert.nn as nn, wengert.numpy as np\n"
            f"x = numpy.array({x!r})\n"
            "g = wg.grad(lambda x: np.sum(nn.gelu(x)))(x)\n"
            "print(json.dumps([nn.gelu(x).tolist(), g.tolist(),\n"
            "                  sorted(m for m in sys.modules if m.startswith('scipy.'))]))\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(nn.__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    y, g, loaded = json.loads(out.stdout)
    assert loaded == []
    x = numpy.array(x)
    assert_close(y, 0.5 * x * (1 + _erf(x / math.sqrt(2))), rtol=1e-15, atol=0)
    phi = numpy.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    # (rounding differs in that formula: exp(-x²/2) of x = -30 is good to 450 ulp)
    assert_close(g, 0.5 * (1 + _erf(x / math.sqrt(2))) + x * phi, rtol=1e-12, atol=1e-16)


def test_gelu_approximate_is_named():
    with pytest.raises(ValueError, match=r"approximate must be False or True \('none' or "
                                         r"'tanh'.*'fast'"):
        nn.gelu(numpy.ones(2), approximate="fast")
    with pytest.raises(ValueError, match="beta must be positive"):
        nn.softplus(numpy.ones(2), beta=0)


# ---- pooling and linear ---------------------------------------------------------------------
def avg_pool_loops(x, k, s):
    n, c, h, w = x.shape
    ho, wo = (h - k) // s + 1, (w - k) // s + 1
    y = numpy.zeros((n, c, ho, wo))
    for p in range(ho):
        for q in range(wo):
            y[:, :, p, q] = x[:, :, p * s:p * s + k, q * s:q * s + k].mean(axis=(2, 3))
    return y


@pytest.mark.parametrize("k, s, side", [(2, None, 6), (2, 2, 7), (3, 1, 6), (3, 2, 7),
                                        (2, 3, 8)])
def test_avg_pool_matches_loops_torch_and_differentiates(k, s, side):
    x = rng.normal(size=(2, 3, side, side + 1))
    y = nn.avg_pool2d(x, k, s)
    assert_close(y, avg_pool_loops(x, k, k if s is None else s), rtol=1e-13, atol=1e-14)
    check_grads(lambda x: nn.avg_pool2d(x, k, s) ** 2, x)
    assert_close(wg.vmap(lambda x: nn.avg_pool2d(x, k, s))(x[:, None]), y[:, None],
                 rtol=1e-13, atol=1e-14)
    try:
        import torch.nn.functional as F
    except ImportError:
        return
    assert_close(y, F.avg_pool2d(T(x), k, s).numpy(), rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("call, error", [
    (lambda x: nn.avg_pool2d(x, 4), r"a 4x4 window does not fit in images of shape \(1, 2, 3, 4\)"),
    (lambda x: nn.avg_pool2d(x[0, 0], 2), r"\(N, C, H, W\) or one of shape \(C, H, W\), got \(3, 4\)"),
    (lambda x: nn.avg_pool2d(x, 2, 0), "must be >= 1"),
    (lambda x: nn.linear(x, numpy.ones((3, 5))),
     r"weight of shape \(out_features, in_features\).*x of shape \(1, 2, 3, 4\) and weight "
     r"of shape \(3, 5\)"),
    (lambda x: nn.linear(x, numpy.ones((3, 4)), numpy.ones(4)),
     r"bias of shape \(3,\) for weight of shape \(3, 4\), got \(4,\)")])
def test_pool_and_linear_errors_name_the_shapes(call, error):
    x = rng.normal(size=(1, 2, 3, 4))
    for run in (lambda: call(x), lambda: wg.grad(lambda t: np.sum(call(t)))(x)):
        with pytest.raises(ValueError, match=error):
            run()


def test_linear_is_pytorch_layout():
    x, w, b = rng.normal(size=(5, 3)), rng.normal(size=(4, 3)), rng.normal(size=4)
    assert_close(nn.linear(x, w, b), x @ w.T + b, rtol=1e-14, atol=1e-15)
    assert_close(nn.linear(x[0], w), w @ x[0], rtol=1e-14, atol=1e-15)
    check_grads(nn.linear, x, w, b)
    assert_close(wg.vmap(nn.linear, in_axes=(0, None, None))(x, w, b), x @ w.T + b,
                 rtol=1e-14, atol=1e-15)
    try:
        import torch.nn.functional as F
    except ImportError:
        return
    assert_close(nn.linear(x, w, b), F.linear(T(x), T(w), T(b)).numpy(), rtol=1e-13)


# ---- normalisation ----------------------------------------------------------------------------
def layer_norm_ref(x, k, w=None, b=None, eps=1e-5):
    axes = tuple(range(x.ndim - k, x.ndim))
    m = x.mean(axis=axes, keepdims=True)
    v = ((x - m) ** 2).mean(axis=axes, keepdims=True)
    y = (x - m) / numpy.sqrt(v + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


@pytest.mark.parametrize("shape, normalized", [((4, 5), 5), ((2, 3, 4), (3, 4)),
                                               ((6,), [6])])
def test_layer_norm(shape, normalized):
    x = rng.normal(size=shape) * 3 + 1
    ns = (normalized,) if isinstance(normalized, int) else tuple(normalized)
    w, b = rng.normal(size=ns), rng.normal(size=ns)
    assert_close(nn.layer_norm(x, normalized, w, b), layer_norm_ref(x, len(ns), w, b),
                 rtol=1e-12, atol=1e-13)
    assert_close(nn.layer_norm(x, normalized), layer_norm_ref(x, len(ns)), rtol=1e-12,
                 atol=1e-13)
    check_grads(lambda x, w, b: nn.layer_norm(x, normalized, w, b, eps=1e-3), x, w, b)
    if len(shape) > 1:
        assert_close(wg.vmap(lambda x: nn.layer_norm(x, normalized, w, b))(x),
                     nn.layer_norm(x, normalized, w, b), rtol=1e-13, atol=1e-13)
    try:
        import torch.nn.functional as F
    except ImportError:
        return
    assert_close(nn.layer_norm(x, normalized, w, b),
                 F.layer_norm(T(x), ns, T(w), T(b)).numpy(), rtol=1e-10, atol=1e-12)


def test_layer_norm_axis_form():
    x = rng.normal(size=(3, 4, 5))
    assert_close(nn.layer_norm(x), layer_norm_ref(x, 1), rtol=1e-12, atol=1e-13)
    assert_close(nn.layer_norm(x, axis=(-2, -1)), nn.layer_norm(x, (4, 5)), rtol=0, atol=0)
    y = nn.layer_norm(x, axis=1, weight=numpy.full((4, 1), 2.0), bias=1.0)
    assert_close(y, 2 * numpy.moveaxis(layer_norm_ref(numpy.moveaxis(x, 1, -1), 1), -1, 1) + 1,
                 rtol=1e-12, atol=1e-12)
    check_grads(lambda x: nn.layer_norm(x, axis=(0, 2)), x)


def test_batch_norm():
    x = rng.normal(size=(5, 3, 4, 2)) * 2 + 1
    w, b = rng.normal(size=3), rng.normal(size=3)
    m = x.mean(axis=(0, 2, 3), keepdims=True)
    v = x.var(axis=(0, 2, 3), keepdims=True)
    ref = (x - m) / numpy.sqrt(v + 1e-5) * w[:, None, None] + b[:, None, None]
    assert_close(nn.batch_norm(x, None, None, w, b, training=True), ref, rtol=1e-12,
                 atol=1e-13)
    check_grads(lambda x, w, b: nn.batch_norm(x, None, None, w, b, True, eps=1e-3), x, w, b)
    x2 = rng.normal(size=(6, 4))                   # (N, C) and a channels-last axis
    assert_close(nn.batch_norm(x2, training=True, axis=-1),
                 (x2 - x2.mean(0)) / numpy.sqrt(x2.var(0) + 1e-5), rtol=1e-12, atol=1e-13)
    # vmap over independent batches: each normalised with its own statistics
    xs = rng.normal(size=(3, 6, 4))
    w4 = w[:1].repeat(4)
    assert_close(wg.vmap(lambda x: nn.batch_norm(x, weight=w4, training=True))(xs),
                 numpy.stack([nn.batch_norm(x, weight=w4, training=True) for x in xs]),
                 rtol=1e-13, atol=1e-13)


def test_batch_norm_running_statistics_as_pytorchs():
    x = rng.normal(size=(5, 3, 4, 2)) * 2 + 1
    w, b = rng.normal(size=3), rng.normal(size=3)
    mean, var = rng.normal(size=3), rng.uniform(0.5, 2.0, size=3)
    m0, v0 = mean.copy(), var.copy()
    # training: the batch's statistics normalise; the running ones move towards them
    g = wg.grad(lambda x, w: np.sum(nn.batch_norm(x, mean, var, w, b, True, 0.3) ** 3),
                argnums=(0, 1))(x, w)
    assert_close(mean, 0.7 * m0 + 0.3 * x.mean(axis=(0, 2, 3)), rtol=1e-14)
    assert_close(var, 0.7 * v0 + 0.3 * x.var(axis=(0, 2, 3), ddof=1), rtol=1e-14)
    # the statistics are state: the gradient is the one without them
    want = wg.grad(lambda x, w: np.sum(nn.batch_norm(x, None, None, w, b, True) ** 3),
                   argnums=(0, 1))(x, w)
    for got, w_ in zip(g, want):
        assert_close(got, w_, rtol=1e-13)
    # evaluation (PyTorch's default): normalised by the running statistics, differentiable
    # in all of x, them, the weight and the bias
    ref = (x - mean[:, None, None]) / numpy.sqrt(var[:, None, None] + 1e-5) \
        * w[:, None, None] + b[:, None, None]
    assert_close(nn.batch_norm(x, mean, var, w, b), ref, rtol=1e-13, atol=1e-14)
    check_grads(lambda x, m, v, w, b: nn.batch_norm(x, m, v, w, b), x, mean, var, w, b)
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return
    assert_close(nn.batch_norm(x, None, None, w, b, training=True),
                 F.batch_norm(T(x), None, None, T(w), T(b), training=True).numpy(),
                 rtol=1e-10, atol=1e-12)
    rm, rv = torch.tensor(m0), torch.tensor(v0)
    mean, var = m0.copy(), v0.copy()
    for training in (True, True, False):
        want = F.batch_norm(T(x), rm, rv, T(w), T(b), training, 0.2, 1e-4).numpy()
        assert_close(nn.batch_norm(x, mean, var, w, b, training, 0.2, 1e-4), want,
                     rtol=1e-10, atol=1e-12)
        assert_close(mean, rm.numpy(), rtol=1e-13)
        assert_close(var, rv.numpy(), rtol=1e-13)


def test_batch_norm_refuses_what_it_cannot_update():
    x = rng.normal(size=(4, 3))
    with pytest.raises(TypeError, match="updates running_mean in place, so it must be a "
                                        "writeable NumPy array of floats, got list"):
        nn.batch_norm(x, [0.0] * 3, numpy.ones(3), training=True)
    frozen = numpy.zeros(3)
    frozen.flags.writeable = False
    with pytest.raises(TypeError, match="running_var in place"):
        nn.batch_norm(x, None, frozen, training=True)
    with pytest.raises(wg.ConcretizationError, match="pass running_mean=None and "
                                                     "running_var=None there"):
        wg.compile(lambda x: nn.batch_norm(x, numpy.zeros(3), numpy.ones(3), training=True))(x)
    with pytest.raises(TypeError, match="must be a writeable NumPy array of floats, got Node"):
        wg.grad(lambda m: np.sum(nn.batch_norm(x, m, numpy.ones(3), training=True)))(
            numpy.zeros(3))



def test_batch_norm_of_an_empty_batch_is_empty_as_pytorchs():
    mean, var = numpy.zeros(3), numpy.ones(3)
    y = nn.batch_norm(numpy.zeros((0, 3, 2)), mean, var, numpy.ones(3), numpy.ones(3),
                      training=True)
    assert y.shape == (0, 3, 2) and mean.tolist() == [0.0] * 3 and var.tolist() == [1.0] * 3
    g = wg.grad(lambda x: np.sum(nn.batch_norm(x, training=True)))(numpy.zeros((0, 3)))
    assert g.shape == (0, 3)


@pytest.mark.parametrize("call, error, kind", [
    (lambda x: nn.layer_norm(x, (3, 5)),
     r"normalized_shape \(3, 5\) must be the trailing dimensions of x, got x of shape "
     r"\(2, 3, 4\)", ValueError),
    (lambda x: nn.layer_norm(x, 4, numpy.ones(3)), r"weight of shape \(4,\), got \(3,\)",
     ValueError),
    (lambda x: nn.layer_norm(x, 4, axis=-1), "not both", ValueError),
    (lambda x: nn.layer_norm(x, axis=3), "layer_norm: axis 3", numpy.exceptions.AxisError),
    (lambda x: nn.batch_norm(x, None, None, numpy.ones(4), training=True),
     r"weight of shape \(3,\) for 3 channels \(axis 1 of x of shape \(2, 3, 4\)\), got \(4,\)",
     ValueError),
    (lambda x: nn.batch_norm(x, numpy.ones(2), numpy.ones(3)),
     r"running_mean of shape \(3,\) for 3 channels", ValueError),
    (lambda x: nn.batch_norm(x[:1, :, :1], training=True), "more than 1 value per channel",
     ValueError),
    (lambda x: nn.batch_norm(x), "running_mean and running_var must be given when "
     r"training=False \(PyTorch's default\); pass training=True", ValueError),
    (lambda x: nn.batch_norm(x[0, 0]), r"shape \(N, C, \.\.\.\), got \(4,\)", ValueError)])
def test_normalisation_errors(call, error, kind):
    x = rng.normal(size=(2, 3, 4))
    for run in (lambda: call(x), lambda: wg.grad(lambda t: np.sum(call(t)))(x)):
        with pytest.raises(kind, match=error):
            run()


# ---- dropout --------------------------------------------------------------------------------
def test_dropout():
    x = rng.normal(size=(200, 50))
    y = nn.dropout(x, 0.3, numpy.random.default_rng(5))
    kept = y != 0
    assert abs(kept.mean() - 0.7) < 0.01
    assert_close(y[kept], x[kept] / 0.7, rtol=1e-15, atol=0)
    mask = (numpy.random.default_rng(5).random(x.shape) >= 0.3) / 0.7
    g = wg.grad(lambda x: np.sum(nn.dropout(x, 0.3, numpy.random.default_rng(5))))(x)
    assert_close(g, mask, rtol=1e-15, atol=0)            # the mask over (1 - rate)
    check_grads(lambda x: nn.dropout(x, 0.3, numpy.random.default_rng(5)) ** 2, x[:3, :4])
    assert nn.dropout(x, 0, numpy.random.default_rng(0)) is x
    assert_close(nn.dropout(x, 1.0, numpy.random.default_rng(0)), numpy.zeros_like(x), 0, 0)
    assert nn.dropout(x.astype(numpy.float32), 0.5, numpy.random.default_rng(0)).dtype \
        == numpy.float32
    # vmap traces one example: one mask for the batch, as the loop with one seed
    xs = rng.normal(size=(4, 6))
    f = lambda x: nn.dropout(x, 0.5, numpy.random.default_rng(3))
    assert_close(wg.vmap(f)(xs), numpy.stack([f(r) for r in xs]), rtol=0, atol=0)


def test_dropout_with_a_mask_given_and_compiled():
    # under wg.compile a mask drawn from rng was drawn once, when traced, and reused by
    # every call, silently (QA): a compiled training step trained with one fixed mask.
    # Now that is refused, and the mask comes in as an argument.
    x = rng.normal(size=(5, 4))
    keep = rng.random(x.shape) >= 0.3
    assert_close(nn.dropout(x, 0.3, mask=keep), x * keep / 0.7, rtol=1e-15, atol=0)
    assert_close(nn.dropout(x, 0.3, mask=keep[0]), x * keep[0] / 0.7, rtol=1e-15, atol=0)
    loss = lambda x, keep: np.sum(nn.dropout(x, 0.3, mask=keep) ** 2)     # noqa: E731
    assert_close(wg.grad(loss)(x, keep), 2 * x * keep / 0.49, rtol=1e-14, atol=0)
    step = wg.compile(wg.grad(loss), x, keep)
    for _ in range(2):                                     # a fresh mask each call
        keep = rng.random(x.shape) >= 0.3
        assert_close(step(x, keep), 2 * x * keep / 0.49, rtol=1e-14, atol=0)
    drawn = numpy.random.default_rng(0)
    with pytest.raises(ValueError, match="under wg.compile a mask drawn from rng is drawn "
                                         "once.*mask=keep"):
        wg.compile(lambda x: nn.dropout(x, 0.3, drawn), x)(x)
    assert wg.compile(lambda x: nn.dropout(x, 0.0, drawn), x)(x).shape == x.shape  # (none)


def test_dropout_with_a_key():
    """A wengert.random key: drawn from on every call of compiled code, and a mask per
    example under vmap over keys."""
    from wengert import random
    x = rng.normal(size=(5, 4))
    key = random.PRNGKey(3)
    keep = random.bernoulli(key, 0.7, x.shape)
    assert_close(nn.dropout(x, 0.3, key), x * keep / 0.7, rtol=1e-15, atol=0)
    loss = lambda x, key: np.sum(nn.dropout(x, 0.3, key) ** 2)     # noqa: E731
    step = wg.jit(wg.grad(loss))
    for seed in range(3):
        k = random.PRNGKey(seed)
        assert_close(step(x, k), wg.grad(loss)(x, k), rtol=1e-14, atol=0)
        assert_close(step(x, k), 2 * x * random.bernoulli(k, 0.7, x.shape) / 0.49,
                     rtol=1e-14, atol=0)
    keys = random.split(key, 5)
    masks = wg.vmap(lambda row, k: nn.dropout(row, 0.3, k))(x, keys)
    assert_close(masks, numpy.stack([nn.dropout(r, 0.3, k) for r, k in zip(x, keys)]),
                 rtol=0, atol=0)
    assert nn.dropout(x.astype(numpy.float32), 0.5, key).dtype == numpy.float32


def test_dropout_errors():
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator.*int"):
        nn.dropout(numpy.ones(3), 0.5, 0)
    with pytest.raises(ValueError, match=r"rate must lie in \[0, 1\], got 1.5"):
        nn.dropout(numpy.ones(3), 1.5, numpy.random.default_rng(0))
    with pytest.raises(TypeError, match="either rng .* or mask, not both"):
        nn.dropout(numpy.ones(3), 0.5, numpy.random.default_rng(0), mask=numpy.ones(3))
    with pytest.raises(TypeError, match="either rng .* or mask, not neither"):
        nn.dropout(numpy.ones(3), 0.5)


# ---- losses ---------------------------------------------------------------------------------
def _huber_ref(d, delta):
    a = numpy.abs(d)
    return numpy.where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta))


def _bce_ref(z, t):
    p = 1 / (1 + numpy.exp(-z))
    return -(t * numpy.log(p) + (1 - t) * numpy.log(1 - p))


# name: (loss(a, b, reduction), elementwise NumPy reference, PyTorch's loss, second argument)
LOSSES = {
    "mse_loss": (nn.mse_loss, lambda a, b: (a - b) ** 2,
                 lambda F, a, b, r: F.mse_loss(a, b, reduction=r), "normal"),
    "l1_loss": (nn.l1_loss, lambda a, b: numpy.abs(a - b),
                lambda F, a, b, r: F.l1_loss(a, b, reduction=r), "normal"),
    "huber_loss": (nn.huber_loss, lambda a, b: _huber_ref(a - b, 1.0),
                   lambda F, a, b, r: F.huber_loss(a, b, reduction=r), "normal"),
    "huber_loss_delta": (lambda a, b, reduction="mean": nn.huber_loss(a, b, reduction, 0.5),
                         lambda a, b: _huber_ref(a - b, 0.5),
                         lambda F, a, b, r: F.huber_loss(a, b, reduction=r, delta=0.5),
                         "normal"),
    "bce_with_logits": (nn.binary_cross_entropy_with_logits, _bce_ref,
                        lambda F, a, b, r: F.binary_cross_entropy_with_logits(a, b, reduction=r),
                        "probabilities"),
}


def _loss_args(kind, shape=(4, 3)):
    a = rng.normal(size=shape) * 2
    if kind == "probabilities":
        return a, rng.uniform(size=shape)
    # differences away from the kinks of l1 (0) and huber (±delta)
    d = rng.uniform(0.1, 0.4, size=shape) * rng.choice([-1, 1], size=shape)
    d += rng.choice([0.0, 0.5, 1.0, 2.0], size=shape) * numpy.sign(d)
    return a, a - d


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name", LOSSES)
def test_loss_values_and_derivatives(name, reduction):
    loss, ref, _, kind = LOSSES[name]
    a, b = _loss_args(kind)
    expect = {"mean": numpy.mean, "sum": numpy.sum, "none": lambda v: v}[reduction](ref(a, b))
    assert_close(loss(a, b, reduction=reduction), expect, rtol=1e-12, atol=1e-14)
    check_grads(lambda a, b: loss(a, b, reduction=reduction), a, b)
    per_row = wg.vmap(lambda a, b: loss(a, b, reduction=reduction))(a, b)
    assert_close(per_row, numpy.stack([loss(x, y, reduction=reduction) for x, y in zip(a, b)]),
                 rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name", LOSSES)
def test_loss_against_torch(name, reduction):
    torch, F = torch_f()
    loss, _, tloss, kind = LOSSES[name]
    a, b = _loss_args(kind)
    ta, tb = T(a).requires_grad_(), T(b).requires_grad_()
    out = tloss(F, ta, tb, reduction)
    assert_close(loss(a, b, reduction=reduction), out.detach().numpy(), rtol=1e-12, atol=1e-14)
    out.sum().backward()
    ga, gb = wg.grad(lambda a, b: np.sum(loss(a, b, reduction=reduction)), argnums=(0, 1))(a, b)
    assert_close(ga, ta.grad.numpy(), rtol=1e-11, atol=1e-14)
    assert_close(gb, tb.grad.numpy(), rtol=1e-11, atol=1e-14)


def test_bce_with_logits_extremes():
    z = numpy.array([-1000.0, -1000.0, 1000.0, 1000.0, 0.0])
    t = numpy.array([0.0, 1.0, 0.0, 1.0, 0.5])
    with numpy.errstate(over="raise", invalid="raise", divide="raise"):
        y = nn.binary_cross_entropy_with_logits(z, t, reduction="none")
        g = wg.grad(lambda z: nn.binary_cross_entropy_with_logits(z, t, reduction="sum"))(z)
    assert_close(y, [0.0, 1000.0, 1000.0, 0.0, math.log(2)], rtol=1e-15, atol=0)
    assert_close(g, [0.0, -1.0, 1.0, 0.0, 0.0], rtol=0, atol=0)      # sigmoid(z) - t


LABELS = numpy.array([0, 3, 1, 1, 2])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_and_cross_entropy_reductions(reduction):
    z = rng.normal(size=(5, 4))
    logp = z - numpy.log(numpy.exp(z).sum(axis=1, keepdims=True))
    rows = -logp[numpy.arange(5), LABELS]
    expect = {"mean": rows.mean(), "sum": rows.sum(), "none": rows}[reduction]
    assert_close(nn.nll_loss(logp, LABELS, reduction=reduction), expect, rtol=1e-13, atol=1e-15)
    assert_close(nn.cross_entropy(z, LABELS, reduction=reduction), expect, rtol=1e-13, atol=1e-15)
    check_grads(lambda p: nn.nll_loss(p, LABELS, reduction=reduction), logp)
    check_grads(lambda z: nn.cross_entropy(z, LABELS, reduction=reduction), z)
    # traced labels (compiled) and vmap over batches of examples
    g = wg.grad(lambda z, y: np.sum(nn.nll_loss(nn.log_softmax(z), y, reduction=reduction)))
    fast = wg.compile(g, z, LABELS)
    assert_close(fast(z, LABELS[::-1].copy()), g(z, LABELS[::-1].copy()), rtol=1e-13, atol=1e-15)
    zs, ys = rng.normal(size=(3, 5, 4)), rng.integers(0, 4, size=(3, 5))
    assert_close(wg.vmap(lambda z, y: nn.cross_entropy(z, y, reduction=reduction))(zs, ys),
                 numpy.stack([nn.cross_entropy(z, y, reduction=reduction) for z, y in zip(zs, ys)]),
                 rtol=1e-13, atol=1e-15)
    try:
        import torch.nn.functional as F
    except ImportError:
        return
    assert_close(nn.cross_entropy(z, LABELS, reduction=reduction),
                 F.cross_entropy(T(z), T(LABELS).long(), reduction=reduction).numpy(),
                 rtol=1e-12, atol=1e-15)
    assert_close(nn.nll_loss(logp, LABELS, reduction=reduction),
                 F.nll_loss(T(logp), T(LABELS).long(), reduction=reduction).numpy(),
                 rtol=1e-12, atol=1e-15)


def test_cross_entropy_sum_keeps_the_fused_primitive():
    z = rng.normal(size=(5, 4))
    for reduction in ("mean", "sum"):
        graph = wg.trace(lambda z: nn.cross_entropy(z, LABELS, reduction=reduction), z)
        ops = [n.op.name for n in graph.live_nodes() if n.op.name not in ("input", "const")]
        assert ops[0] == "cross_entropy" and len(ops) <= 2, ops


@pytest.mark.parametrize("call, error", [
    (lambda a: nn.mse_loss(a, a, reduction="avg"),
     r"mse_loss: reduction must be 'mean', 'sum' or 'none', got 'avg'"),
    (lambda a: nn.l1_loss(a, a, reduction=None), "l1_loss: reduction must be .*got None"),
    (lambda a: nn.cross_entropy(a, numpy.array([0, 1]), reduction="batchmean"),
     "cross_entropy: reduction must be"),
    (lambda a: nn.mse_loss(a, a[:1]),
     r"mse_loss: input and target must have the same shape, got input of shape \(2, 3\) "
     r"and target of shape \(1, 3\)"),
    (lambda a: nn.huber_loss(a, a.T), r"huber_loss: input and target .*\(3, 2\)"),
    (lambda a: nn.huber_loss(a, a, delta=0), "delta must be positive"),
    (lambda a: nn.binary_cross_entropy_with_logits(a, a[0]),
     r"input and target must have the same shape, got input of shape \(2, 3\) and "
     r"target of shape \(3,\)"),
    (lambda a: nn.nll_loss(a, numpy.array([0, 1, 2])),
     r"nll_loss: expected input of shape \(N, C\), .* and target of class indices of shape "
     r"\(N,\), .*got input of shape \(2, 3\) and target of shape \(3,\)"),
    (lambda a: nn.nll_loss(a, numpy.array([0, 3])), r"nll_loss: labels must lie in range\(3\)")])
def test_loss_errors(call, error):
    a = rng.normal(size=(2, 3))
    for run in (lambda: call(a), lambda: wg.grad(lambda t: np.sum(call(t)))(a)):
        with pytest.raises(ValueError, match=error):
            run()


@pytest.mark.parametrize("call, error, kind", [
    # (a tuple axis was cut to its first axis: softmax over (0, 1) summed to 3, not 1)
    (lambda x: nn.softmax(x, axis=(0, 1)), r"softmax: axis must be one integer, got \(0, 1\)",
     TypeError),
    (lambda x: nn.log_softmax(x, None), "log_softmax: axis must be one integer, got None",
     TypeError),
    (lambda x: nn.batch_norm(x[None], training=True, axis=(1, 2)),
     r"batch_norm: axis must be one integer, got \(1, 2\)", TypeError),
    (lambda x: nn.layer_norm(x, 3.0), "normalized_shape must be an int or a tuple of ints",
     TypeError),
    (lambda x: nn.dropout(x, 0.5, mask=numpy.ones(2, bool)),
     r"a mask of shape \(2,\) does not broadcast to x's shape \(2, 3\)", ValueError),
    (lambda x: nn.cross_entropy(x, nn.softmax(x), ignore_index=None),
     "cross_entropy: ignore_index must be an int", TypeError),
    (lambda x: nn.nll_loss(x, numpy.array([0, 1]), ignore_index=1.5),
     "nll_loss: ignore_index must be an int", TypeError),
    (lambda x: nn.conv2d(x[None, None], numpy.ones((1, 1, 0, 3))),
     r"kernels of shape \(1, 1, 0, 3\) have no taps", ValueError),
    (lambda x: nn.max_unpool2d(x[None, None], numpy.zeros((1, 1, 2, 3), int), 2, 2, 3),
     r"unpool to \(-2, 0\), which is empty", ValueError)])
def test_audited_arguments_are_refused_by_name(call, error, kind):
    x = rng.normal(size=(2, 3))
    for run in (lambda: call(x), lambda: wg.grad(lambda t: np.sum(call(t)))(x)):
        with pytest.raises(kind, match=error):
            run()


def test_audited_layers_take_what_pytorch_takes():
    # a list of kernels, as the images may be
    x, w = rng.normal(size=(1, 2, 4, 4)), rng.normal(size=(3, 2, 2, 2))
    assert_close(nn.conv2d(x, w.tolist()), nn.conv2d(x, w), rtol=0, atol=0)
    # one pooled image (C, H, W) with its indices unpools as a batch of one
    y, where = nn.max_pool2d(x[0], 2, return_indices=True)
    assert_close(nn.max_unpool2d(y, where, 2), nn.max_unpool2d(y[None], where[None], 2)[0],
                 rtol=0, atol=0)
    g = wg.grad(lambda y: np.sum(nn.max_unpool2d(y, where, 2) ** 2))(y)
    assert_close(g, 2 * y, rtol=0, atol=0)
    # booleans pad with False (-inf was True: the padded windows came out True)
    b = numpy.zeros((1, 1, 2, 2), bool)
    b[0, 0, 1, 1] = True
    got = nn.max_pool2d(b, 2, stride=1, padding=1)
    expected = nn.max_pool2d(b.astype(float), 2, stride=1, padding=1) > 0
    assert got.dtype == bool and (got == expected).all() and not got.all()
    # integer running statistics cannot take the update in place: refused by name
    with pytest.raises(TypeError, match="writeable NumPy array of floats, got int64 array"):
        nn.batch_norm(rng.normal(size=(4, 2)), numpy.zeros(2, int), numpy.ones(2, int),
                      training=True)


def test_binary_cross_entropy_at_subnormal_probabilities():
    # the clamped log p (at -100) has derivative 0 in p; 1/p overflowed below 5.6e-309,
    # and 0 * inf made the gradient nan.  d/dp of -(t·(-100) + (1 - t) log(1 - p)) is
    # (1 - t)/(1 - p)
    t = numpy.array([0.2, 0.2, 0.2])
    p = numpy.array([1e-310, 1e-300, 1e-50])
    loss = lambda p: nn.binary_cross_entropy(p, t, reduction="sum")
    assert loss(p) == pytest.approx(3 * 0.2 * 100, rel=1e-15)
    assert_close(wg.grad(loss)(p), (1 - t) / (1 - p), rtol=1e-15, atol=0)
    q = numpy.array([1e-40, 0.3])          # above e^-100 the log itself: t/p - (1-t)/(1-p)
    assert_close(wg.grad(lambda q: nn.binary_cross_entropy(q, t[:2], reduction="sum"))(q),
                 -(t[:2] / q - (1 - t[:2]) / (1 - q)), rtol=1e-14, atol=0)
    check_grads(lambda q: nn.binary_cross_entropy(q, t[:2], reduction="sum"),
                numpy.array([0.01, 0.3]), order=2)


def test_small_mlp_second_order():
    """The pieces together: a layer-normalised GELU network with dropout, a Hessian-vector
    product of its loss against finite differences."""
    x, y = rng.normal(size=(6, 4)), rng.normal(size=(6, 2))

    def net(w1, w2):
        h = nn.gelu(nn.layer_norm(nn.linear(x, w1), 5))
        h = nn.dropout(h, 0.2, numpy.random.default_rng(0))
        return nn.huber_loss(nn.linear(h, w2), y) + nn.mse_loss(nn.silu(h), h)
    check_grads(net, rng.normal(size=(5, 4)), rng.normal(size=(2, 5)))


def test_sigmoid_without_scipy_is_the_same_function(monkeypatch):
    """Where SciPy is missing sigmoid is composed from wengert.numpy: the same values and
    derivatives as SciPy's expit primitive, to rounding, in the tails too."""
    x = numpy.array([-800.0, -30.0, -2.0, 0.0, 0.5, 3.0, 40.0, 800.0])
    with_scipy = nn.sigmoid(x), wg.grad(lambda x: np.sum(nn.sigmoid(x) ** 2))(x)
    monkeypatch.setattr(nn, "_HAVE_SCIPY", False)
    composed = nn.sigmoid(x), wg.grad(lambda x: np.sum(nn.sigmoid(x) ** 2))(x)
    for a, b in zip(with_scipy, composed):
        numpy.testing.assert_allclose(a, b, rtol=1e-14, atol=0)
    check_grads(nn.sigmoid, x[1:-1], order=2)


def test_the_public_names_are_the_layers_each_with_an_example():
    import inspect
    import wengert as wg
    import wengert.nn as nn
    public = {name for name, obj in vars(nn).items()
              if not name.startswith("_") and (inspect.isfunction(obj) and obj.__module__ ==
                                               nn.__name__ or isinstance(obj, wg.Primitive))}
    public.add("initializers")                # (jax.nn.initializers: a module of wengert's)
    assert public == set(nn.__all__)          # (imports such as Node and P are not among them)
    for name in nn.__all__:
        assert ">>>" in (getattr(nn, name).__doc__ or ""), name
