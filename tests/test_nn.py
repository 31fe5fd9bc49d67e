"""wengert.nn against direct loop implementations, and their derivatives against finite
differences (seed 000's Conv2d, MaxPool2d, ReLU rules)."""
import numpy
import pytest

import wengert as wg
import wengert.nn as nn
import wengert.numpy as np
from wengert import REGISTRY
from wengert.primitives import nn as NN
from wengert.primitives import ndimage as _ndimage  # noqa: F401  (its fused primitive)
from fd import check_grads, assert_close
from test_numpy import _ops_exercised

rng = numpy.random.default_rng(11)


def conv2d_loops(x, w, b, stride, padding):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = numpy.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    ho = (h + 2 * padding - kh) // stride + 1
    wo = (wd + 2 * padding - kw) // stride + 1
    y = numpy.zeros((n, o, ho, wo))
    for i in range(n):
        for k in range(o):
            for p in range(ho):
                for q in range(wo):
                    win = xp[i, :, p * stride:p * stride + kh, q * stride:q * stride + kw]
                    y[i, k, p, q] = (win * w[k]).sum() + (b[k] if b is not None else 0.0)
    return y


def max_pool_loops(x, k, s):
    n, c, h, w = x.shape
    ho, wo = (h - k) // s + 1, (w - k) // s + 1
    y = numpy.zeros((n, c, ho, wo))
    for i in range(n):
        for j in range(c):
            for p in range(ho):
                for q in range(wo):
                    y[i, j, p, q] = x[i, j, p * s:p * s + k, q * s:q * s + k].max()
    return y


@pytest.mark.parametrize("stride, padding", [(1, 0), (1, 1), (2, 1), (2, 0)])
def test_conv2d_matches_loops_and_differentiates(stride, padding):
    x, w, b = rng.normal(size=(2, 3, 6, 5)), rng.normal(size=(4, 3, 3, 2)), rng.normal(size=4)
    assert_close(nn.conv2d(x, w, b, stride, padding), conv2d_loops(x, w, b, stride, padding),
                 rtol=1e-12, atol=1e-12)
    check_grads(lambda x, w, b: nn.conv2d(x, w, b, stride, padding), x, w, b)


def test_conv2d_gradients_follow_seed_000():
    """K̄ = Σ over windows of X ⊗ Ȳ, and B̄(k) = Σ_ij Ȳ(i, j, k)."""
    x, w, b = rng.normal(size=(1, 2, 4, 4)), rng.normal(size=(3, 2, 2, 2)), rng.normal(size=3)
    ybar = rng.normal(size=(1, 3, 3, 3))
    _, back = wg.vjp(lambda x, w, b: nn.conv2d(x, w, b), x, w, b)
    xbar, wbar, bbar = back(ybar)
    expect_w = numpy.zeros_like(w)
    expect_x = numpy.zeros_like(x)
    for k in range(3):
        for p in range(3):
            for q in range(3):
                expect_w[k] += x[0, :, p:p + 2, q:q + 2] * ybar[0, k, p, q]
                expect_x[0, :, p:p + 2, q:q + 2] += w[k] * ybar[0, k, p, q]
    assert_close(wbar, expect_w, rtol=1e-12, atol=1e-12)
    assert_close(xbar, expect_x, rtol=1e-12, atol=1e-12)
    assert_close(bbar, ybar.sum(axis=(0, 2, 3)), rtol=1e-12)


@pytest.mark.parametrize("k, s", [(2, 2), (3, 1), (2, 1)])
def test_max_pool_matches_loops_and_routes_to_the_argmax(k, s):
    x = rng.normal(size=(2, 3, 6, 6))
    assert_close(nn.max_pool2d(x, k, s), max_pool_loops(x, k, s))
    check_grads(lambda x: nn.max_pool2d(x, k, s) ** 2, x, order=2)
    ybar = numpy.ones(nn.max_pool2d(x, k, s).shape)
    (xbar,) = wg.vjp(lambda x: nn.max_pool2d(x, k, s), x)[1](ybar)
    if k == s:                       # disjoint windows: exactly one 1 per window
        assert xbar.sum() == ybar.sum() and set(numpy.unique(xbar)) <= {0.0, 1.0}


def test_relu_passes_where_x_nonnegative():
    x = numpy.array([-1.0, 0.0, 2.0])
    (g,) = wg.vjp(nn.relu, x)[1](numpy.ones(3))
    assert g.tolist() == [0.0, 1.0, 1.0]
    assert nn.relu(x).tolist() == [0.0, 0.0, 2.0]


def test_relu_keeps_integers_as_its_trace_says():
    # np.maximum(x, 0.0) made integers float64 while the traced value said int
    x = numpy.array([3, -2, 0], dtype=numpy.int8)
    y = nn.relu(x)
    assert y.dtype == numpy.int8 and y.tolist() == [3, 0, 0]
    graph = wg.trace(nn.relu, x)
    assert graph.outputs[0].dtype == numpy.int8 and graph(x).dtype == numpy.int8
    assert nn.relu(x.astype(numpy.float32)).dtype == numpy.float32


def test_softmax_log_softmax_and_cross_entropy_take_lists():
    # a list went to np.result_type as if it were a dtype ("Field elements must be ...")
    z, y = [[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]], [2, 0]
    for f in (nn.softmax, nn.log_softmax):
        assert_close(f(z), f(numpy.array(z)), rtol=0, atol=0)
    for reduction in ("mean", "none"):
        assert_close(nn.cross_entropy(z, y, reduction=reduction),
                     nn.cross_entropy(numpy.array(z), numpy.array(y), reduction=reduction),
                     rtol=0, atol=0)


def test_softmax_cross_entropy():
    logits, labels = rng.normal(size=(5, 4)), numpy.array([0, 3, 1, 1, 2])
    p = nn.softmax(logits)
    assert_close(p.sum(axis=1), numpy.ones(5), rtol=1e-14)
    g = wg.grad(nn.cross_entropy)(logits, labels)
    onehot = numpy.eye(4)[labels]
    assert_close(g, (p - onehot) / 5, rtol=1e-12, atol=1e-14)      # the textbook gradient
    check_grads(lambda z: nn.cross_entropy(z, labels) + nn.log_softmax(z).sum(), logits)


def test_small_cnn_second_order():
    x = rng.normal(size=(2, 1, 5, 5))

    def net(w, v):
        h = nn.max_pool2d(np.tanh(nn.conv2d(x, w, padding=1)), 2)
        return np.sum(np.tanh(h.reshape(2, -1) @ v))
    check_grads(net, rng.normal(size=(2, 1, 3, 3)), rng.normal(size=(8,)))


def test_every_nn_primitive_is_exercised():
    x, w = rng.normal(size=(1, 1, 4, 4)), rng.normal(size=(2, 1, 2, 2))
    labels = numpy.array([0, 2])

    def net(x, w):
        h, where = nn.max_pool2d(nn.relu(nn.conv2d(x, w)), 1, return_indices=True)
        h = nn.max_unpool2d(h, where, 1) ** 2
        logits = np.reshape(h, (1, -1))[:, :6].reshape(2, 3)
        return (nn.cross_entropy(logits, labels) + np.sum(nn.log_softmax(logits))
                + np.sum(nn.softmax(logits) * nn.one_hot(labels, 3)))
    seen = _ops_exercised(net, [x, w])
    declared = {name for name, p in REGISTRY.items() if p.builtin and any(
        p is v for v in vars(NN).values()) and (p.vjp or p.vjps or p.partials or p.jvp)}
    assert declared <= seen, declared - seen          # (one_hot has no derivative)


@pytest.mark.parametrize("side", [4, 5])     # windows tiling the image, and not
def test_max_pool_tie_goes_to_the_first_maximum(side):
    k = s = 2
    x = numpy.zeros((1, 1, side, side))
    x[0, 0, 0, 0] = x[0, 0, 0, 1] = x[0, 0, 1, 0] = 3.0       # a three-way tie in window 0
    y = nn.max_pool2d(x, k, s)
    (xbar,) = wg.vjp(lambda x: nn.max_pool2d(x, k, s), x)[1](numpy.ones(y.shape))
    assert xbar[0, 0, 0, 0] == 1.0 and xbar[0, 0, 0, 1] == 0.0 and xbar[0, 0, 1, 0] == 0.0
    # every window's cotangent lands somewhere, exactly once
    assert xbar.sum() == y.size


# ---- the fused primitives: log-softmax, cross-entropy, logsumexp ------------------------------
LABELS = numpy.array([0, 3, 1, 1, 2])
# For every primitive with a decomposition: sample differentiable arguments, and a function
# of them calling the primitive and its decomposition alike (``prim`` is either).
FUSED = {
    "logsumexp": [(lambda prim, x, axis=axis, keep=keep: prim(x, axis=axis, keepdims=keep),
                   (3, 4, 2))
                  for axis, keep in [((1,), False), ((0, 2), True), (None, False)]],
    "log_softmax": [(lambda prim, x, axis=axis: prim(x, axis=axis), shape)
                    for axis, shape in [(1, (5, 4)), (0, (3, 2)), (2, (2, 3, 4))]],
    "softmax": [(lambda prim, x, axis=axis: prim(x, axis=axis), shape)
                for axis, shape in [(1, (5, 4)), (0, (3, 2))]],
    "cross_entropy": [(lambda prim, x: prim(x, LABELS), (5, 4))],
    "cross_entropy_grad": [(lambda prim, x: prim(x, LABELS), (5, 4))],
    # a = x[0] and b = x[1]: both differentiated (b > 0 where the sum must be positive)
    "logsumexp_scaled": [
        (lambda prim, x: prim(x[0], x[1], axis=(1,), keepdims=False, signed=True), (2, 3, 4)),
        (lambda prim, x: prim(x[0], x[1] * x[1] + 0.1, axis=(0, 2), keepdims=True,
                              signed=False), (2, 3, 2, 4)),
        (lambda prim, x: prim(x[0, :, :1], x[1, :1], axis=None, keepdims=False, signed=True),
         (2, 3, 4))],
    # SciPy's functions, which wengert.scipy.special calls rather than compose: rgamma on
    # both sides of 0 (its rule at x <= 1/2 is the reflection), beta, betaln and betaln_da
    # (betaln's partial) at a, b > 0
    "rgamma": [(lambda prim, x: prim(x), (6,))],
    "betaln": [(lambda prim, x: prim(x[0] * x[0] / 4 + 0.3, x[1] * x[1] / 4 + 0.3), (2, 4))],
    "beta": [(lambda prim, x: prim(x[0] * x[0] / 4 + 0.3, x[1] * x[1] / 4 + 0.3), (2, 4))],
    "betaln_da": [(lambda prim, x: prim(x[0] * x[0] / 4 + 0.3, x[1] * x[1] / 4 + 0.3),
                   (2, 4))],
    # log1p(x) - x on both sides of its series' bounds ±1/2
    "log1pmx": [(lambda prim, x: prim(x * x / 8 - 0.6), (8,))],
    # scipy.ndimage's filters: the valid correlation of p = x[:6] with the kernel x[6:, :2]
    "correlate_valid": [(lambda prim, x: prim(x[:6], x[6:, :2]), (9, 4)),
                        (lambda prim, x: prim(x[:, :2], x[:2, 2:]), (5, 3))],
    # map_coordinates' B-spline weights at fractional positions u in (0, 1)
    "bspline_weights": [(lambda prim, x, k=k, d=d: prim(0.5 + 0.05 * x, degree=k,
                                                        derivative=d), (6,))
                        for k, d in [(3, 0), (2, 1), (5, 0), (4, 2)]],
}


def _fused_cases():
    return [(name, i) for name, cases in FUSED.items() for i in range(len(cases))]


def test_every_fused_primitive_is_tested():
    assert {name for name, p in REGISTRY.items() if p.decomposition is not None} == set(FUSED)


@pytest.mark.parametrize("name, case", _fused_cases())
def test_fused_primitive_agrees_with_its_decomposition(name, case):
    prim = REGISTRY[name]
    call, shape = FUSED[name][case]
    x, v = rng.normal(size=shape) * 3, rng.normal(size=shape)
    fused = lambda x: call(prim, x)
    plain = lambda x: call(prim.decomposition, x)
    assert_close(fused(x), plain(x), rtol=1e-13, atol=1e-13)
    check_grads(fused, x)                           # JVP, VJP, and both to second order
    # the rules give the decomposition's derivatives, forward and reverse, to second order
    jvp2 = lambda f: wg.jvp(lambda x: wg.jvp(f, (x,), (v,))[1], (x,), (v,))[1]
    assert_close(jvp2(fused), jvp2(plain), rtol=1e-12, atol=1e-12)
    ct = rng.normal(size=numpy.shape(fused(x)))
    pull = lambda f: (lambda x: wg.vjp(f, x)[1](ct)[0])
    assert_close(pull(fused)(x), pull(plain)(x), rtol=1e-12, atol=1e-12)
    assert_close(wg.vjp(pull(fused), x)[1](v)[0], wg.vjp(pull(plain), x)[1](v)[0],
                 rtol=1e-11, atol=1e-12)
    # Taylor mode (its own rule, or the decomposition's): coefficients are nested jvps / k!
    series = wg.taylor(fused, x, v, order=3)
    d = lambda f: (lambda x: wg.jvp(f, (x,), (v,))[1])
    assert_close(series[3], d(d(d(fused)))(x) / 6, rtol=1e-9, atol=1e-12)


def test_cross_entropy_is_one_node_and_its_gradient_the_textbook_one():
    logits = rng.normal(size=(5, 4))
    graph = wg.trace(lambda z: nn.cross_entropy(z, LABELS), logits)
    assert [n.op.name for n in graph.live_nodes() if n.op.name not in ("input", "const")] \
        == ["cross_entropy"]
    p = numpy.exp(logits) / numpy.exp(logits).sum(axis=1, keepdims=True)
    g = wg.grad(nn.cross_entropy)(logits, LABELS)
    assert_close(g, (p - numpy.eye(4)[LABELS]) / 5, rtol=1e-12, atol=1e-14)


def test_cross_entropy_with_traced_labels_compiles():
    logits = rng.normal(size=(5, 4))
    loss = lambda z, y: nn.cross_entropy(z, y)
    fast = wg.compile(wg.grad(loss), logits, LABELS)
    other = numpy.array([3, 3, 0, 1, 2])
    assert_close(fast(logits, other), wg.grad(loss)(logits, other), rtol=1e-13, atol=1e-15)


def test_cross_entropy_bad_labels_are_named():
    z = numpy.zeros((3, 4))
    with pytest.raises(ValueError, match=r"shape \(N, C\).*\(3, 4\).*\(2,\)"):
        nn.cross_entropy(z, numpy.array([0, 1]))
    with pytest.raises(TypeError, match="labels must be integers.*float64"):
        nn.cross_entropy(z, numpy.array([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match=r"range\(4\).*from 0 to 4"):
        nn.cross_entropy(z, numpy.array([0, 1, 4]))
    with pytest.raises(numpy.exceptions.AxisError, match="log_softmax: axis 2 .*dimension 2"):
        nn.log_softmax(z, axis=2)
    with pytest.raises(ValueError, match=r"one_hot: labels must lie in range\(3\).*-1 to 1"):
        nn.one_hot(numpy.array([0, -1, 1]), 3)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint64"])
@pytest.mark.parametrize("classes", [4, 200, 40000])
def test_labels_out_of_range_are_caught_for_every_integer_dtype(dtype, classes):
    # The check reads signed labels as unsigned in one pass; a negative label must still
    # fail when the class count is beyond what the unsigned trick can tell apart.
    top = min(classes - 1, numpy.iinfo(dtype).max)
    nn._check_labels(numpy.array([0, top], dtype=dtype), classes, "t")      # in range
    bad = [numpy.array([0, classes], dtype="int64")]
    if numpy.iinfo(dtype).min < 0:
        bad.append(numpy.array([top, -1], dtype=dtype))
    if classes <= numpy.iinfo(dtype).max:
        bad.append(numpy.array([0, classes], dtype=dtype))
    for labels in bad:
        with pytest.raises(ValueError, match=rf"range\({classes}\).*from {labels.min()} to "
                                             rf"{labels.max()}"):
            nn._check_labels(labels, classes, "t")


@pytest.mark.parametrize("dtype", [">i4", "<i2", ">i8", ">u2"])
def test_labels_in_either_byte_order(dtype):
    # The range check read '>i4' labels as native unsigned integers: valid big-endian
    # labels were refused as out of range
    labels = LABELS.astype(dtype)
    assert labels.dtype.str == dtype
    assert_close(nn.one_hot(labels, 4), numpy.eye(4)[LABELS], rtol=0, atol=0)
    assert_close(wg.trace(lambda y: nn.one_hot(y, 4), labels, abstract=False)(labels),
                 numpy.eye(4)[LABELS], rtol=0, atol=0)
    logits = rng.normal(size=(5, 4))
    assert nn.cross_entropy(logits, labels) == nn.cross_entropy(logits, LABELS)
    assert_close(wg.grad(nn.cross_entropy)(logits, labels),
                 wg.grad(nn.cross_entropy)(logits, LABELS), rtol=0, atol=0)
    bad = [numpy.array([0, 4, 1], dtype=dtype), numpy.array([0, 300, 1], dtype=dtype)]
    if dtype[1] == "i":
        bad.append(numpy.array([0, -1, 3], dtype=dtype))
    for labels in bad:
        for call in (lambda: nn.one_hot(labels, 4), lambda: nn.cross_entropy(
                numpy.zeros((3, 4)), labels)):
            with pytest.raises(ValueError, match=rf"range\(4\).*from {labels.min()} to "
                                                 rf"{labels.max()}"):
                call()


@pytest.mark.parametrize("call, error", [
    (lambda x: nn.max_pool2d(x, 4), r"a 4x4 window does not fit in images of shape \(1, 2, 3, 4\)"),
    (lambda x: nn.max_pool2d(x[0, 0], 2), r"\(N, C, H, W\) or one of shape \(C, H, W\), got \(3, 4\)"),
    (lambda x: nn.max_pool2d(x, 2, 0), "must be >= 1"),
    (lambda x: nn.conv2d(x, numpy.ones((3, 1, 2, 2))),
     r"kernels of shape \(O, 2, kh, kw\) for images of shape \(1, 2, 3, 4\), got \(3, 1, 2, 2\)"),
    (lambda x: nn.conv2d(x, numpy.ones((3, 2, 5, 5))),
     r"larger than images .* padding \(\(0, 0\), \(0, 0\)\)"),
    (lambda x: nn.conv2d(x, numpy.ones((3, 2, 2, 2)), stride=0), "stride must be >= 1")])
def test_conv_and_pool_shape_errors_name_the_shapes(call, error):
    # (a pool window larger than the image gave an empty result and a zero gradient)
    x = rng.normal(size=(1, 2, 3, 4))
    for run in (lambda: call(x), lambda: wg.grad(lambda t: np.sum(call(t)))(x)):
        with pytest.raises(ValueError, match=error):
            run()


def test_one_hot_refuses_a_number_of_classes_that_is_no_count():
    # classes=2.5 was truncated to 2 silently, and PyTorch's -1 read as range(-1)
    y = numpy.array([0, 1])
    with pytest.raises(TypeError, match="one_hot: classes must be an int.*2.5"):
        nn.one_hot(y, 2.5)
    with pytest.raises(ValueError, match="one_hot: classes must be >= 0, got -1 .*pass it"):
        nn.one_hot(y, -1)
    assert nn.one_hot(y, numpy.int64(3)).shape == (2, 3)


def test_one_hot():
    assert_close(nn.one_hot(LABELS, 4), numpy.eye(4)[LABELS], rtol=0, atol=0)
    graph = wg.trace(lambda y: nn.one_hot(y, 4), LABELS)
    assert_close(graph(LABELS[::-1]), numpy.eye(4)[LABELS[::-1]], rtol=0, atol=0)


def test_cross_entropy_gradient_reuses_the_forward_softmax_and_only_that():
    from wengert.primitives.nn import _saved_softmax, cross_entropy_grad
    logits = rng.normal(size=(5, 4))
    fresh = cross_entropy_grad(logits, LABELS)             # nothing saved: recomputed
    NN.cross_entropy(logits, LABELS)        # the primitive, as a recording or compiled call
    assert _saved_softmax.entry is not None
    assert_close(cross_entropy_grad(logits, LABELS), fresh, rtol=1e-15, atol=0)
    assert _saved_softmax.entry is None                  # taken over, not shared
    NN.cross_entropy(logits, LABELS)                       # (the primitive always keeps)
    other = logits.copy()                                  # equal values, other array
    assert_close(cross_entropy_grad(other, LABELS), fresh, rtol=1e-15, atol=0)
    del logits, other
    assert _saved_softmax.entry is None                  # forgotten with its logits


def test_an_evaluation_only_cross_entropy_keeps_nothing_and_gradients_still_reuse(
        monkeypatch):
    # an eager loss outside any gradient kept its softmax and a copy of its logits alive
    # (two more arrays of the logits' size, ~15% of the call) for a gradient that could
    # not come; a recorded or compiled forward pass still hands its softmax on
    from wengert.primitives.nn import _saved_softmax
    logits = rng.normal(size=(6, 4))
    labels = numpy.array([0, 3, 1, 2, 2, 0])
    assert_close(nn.cross_entropy(logits, labels), R_cross_entropy(logits, labels),
                 rtol=1e-15, atol=0)
    assert _saved_softmax.entry is None
    nn.cross_entropy(logits.astype(numpy.float32), labels, reduction="sum")
    assert _saved_softmax.entry is None
    taken, take = [], _saved_softmax.take

    def spy(source, key=None):
        found = take(source, key)
        taken.append(found is not None)
        return found
    monkeypatch.setattr(_saved_softmax, "take", spy)
    loss = lambda z: nn.cross_entropy(z, labels)            # noqa: E731
    p = numpy.exp(logits) / numpy.exp(logits).sum(axis=1, keepdims=True)
    want = (p - numpy.eye(4)[labels]) / 6
    assert_close(wg.grad(loss)(logits), want, rtol=1e-14, atol=1e-16)
    assert_close(wg.compile(wg.value_and_grad(loss), logits)(logits)[1], want, rtol=1e-14,
                 atol=1e-16)
    assert_close(wg.compile(wg.grad(loss), logits)(logits), want, rtol=1e-14, atol=1e-16)
    # eager, compiled value_and_grad: taken; compiled grad: no forward pass ran to keep it
    assert taken == [True, True, False]


def R_cross_entropy(z, y):
    lse = numpy.log(numpy.exp(z - z.max(axis=1, keepdims=True)).sum(axis=1)) + z.max(axis=1)
    return (lse - z[numpy.arange(len(y)), y]).mean()


def test_conv2d_weight_gradient_reuses_the_columns_of_a_recorded_forward_pass():
    from wengert.primitives.nn import _saved_columns
    x, w = rng.normal(size=(3, 2, 6, 5)), rng.normal(size=(4, 2, 3, 3))
    g = rng.normal(size=(3, 4, 3, 3))
    geo = dict(stride=(2, 2), padding=((1, 1), (1, 1)), dilation=(1, 1), groups=1)
    fresh = NN.conv2d_weight_grad(x, g, w_shape=w.shape, **geo)
    NN.conv2d(x, w, **geo)                                 # not recording: nothing kept
    assert _saved_columns.entry is None
    out, back = wg.vjp(lambda w: nn.conv2d(x, w, stride=2, padding=1), w)   # recorded
    assert _saved_columns.entry is not None
    g1 = rng.normal(size=(3, 4, 6, 5))                    # (stride 1)
    assert NN.conv2d_weight_grad(x, g1, w_shape=w.shape, **dict(geo, stride=(1, 1))).shape \
        == w.shape
    assert _saved_columns.entry is not None                # other parameters: not taken
    assert_close(back(g)[0], fresh, rtol=0, atol=0)
    assert _saved_columns.entry is None                    # taken over by the pullback
    assert_close(back(g)[0], fresh, rtol=0, atol=0)        # (and recomputed after that)
    assert_close(wg.grad(lambda w: np.sum(nn.conv2d(x, w, stride=2, padding=1) * g))(w),
                 fresh, rtol=1e-14)


@pytest.mark.parametrize("dtype, offset", [(numpy.float32, 1e5), (numpy.float64, 1e16)])
def test_log_softmax_and_cross_entropy_keep_their_digits_under_a_large_offset(dtype, offset):
    # x - (m + log s) lost the difference to the offset: float32 logits near 1e5 gave a
    # cross-entropy of 2.6875 for 2.68268, and float64 [1e16, 1e16] gave log_softmax 0
    # (QA, against PyTorch).  The reference: the same in float64 from x - max(x), exact.
    x = (offset + numpy.round(rng.normal(size=(16, 5)) * 8) / 8).astype(dtype)
    y = rng.integers(0, 5, size=16)
    d = x.astype(numpy.float64) - x.max(axis=1, keepdims=True)
    want = d - numpy.log(numpy.exp(d).sum(axis=1, keepdims=True))
    tol = 10 * numpy.finfo(dtype).eps
    assert_close(nn.log_softmax(x, axis=1), want, rtol=tol, atol=tol)
    assert_close(nn.cross_entropy(x, y), -want[numpy.arange(16), y].mean(), rtol=tol, atol=0)
    assert_close(nn.cross_entropy(x, y, reduction="sum"), -want[numpy.arange(16), y].sum(),
                 rtol=tol, atol=0)
    traced = wg.trace(lambda x: nn.log_softmax(x, axis=1), x)    # (the graph's value too)
    assert_close(traced(x), want, rtol=tol, atol=tol)
    # and the second derivative, which reads the decomposition: exact softmax Jacobian
    p = numpy.exp(want[0])
    h = wg.hessian(lambda v: nn.log_softmax(v, axis=0)[0])(x[0].astype(numpy.float64))
    assert_close(h, -(numpy.diag(p) - numpy.outer(p, p)), rtol=1e-6, atol=1e-9)


def test_a_row_holding_plus_inf_is_nan_throughout_as_in_torch_and_jax():
    # the shift was 0 for a +inf maximum: inf/inf = nan at the +inf, finite/inf = 0 beside
    # it, a nan easy to lose behind a mask; PyTorch, JAX and SciPy give a whole nan row
    x = numpy.array([[numpy.inf, 0.0, 1.0], [0.0, 1.0, 2.0], [numpy.inf, numpy.inf, 0.0]])
    labels, c = numpy.array([1, 2, 0]), rng.normal(size=(3, 3))
    finite = x[1] - numpy.log(numpy.exp(x[1]).sum())
    p = numpy.exp(finite)
    with numpy.errstate(invalid="ignore"):
        for f, want in ((nn.log_softmax, finite), (nn.softmax, p)):
            got = f(x, axis=1)
            assert numpy.isnan(got[[0, 2]]).all()
            assert_close(got[1], want, rtol=1e-15, atol=0)
            assert numpy.isnan(f(x.T, axis=0)[:, [0, 2]]).all()
        # the derivatives: nan rows where the value is, the rest untouched
        grads = {"log_softmax": wg.grad(lambda z: np.sum(nn.log_softmax(z, axis=1) * c))(x),
                 "softmax": wg.grad(lambda z: np.sum(nn.softmax(z, axis=1) * c))(x)}
        assert_close(grads["log_softmax"][1], c[1] - p * c[1].sum(), rtol=1e-14, atol=1e-15)
        assert_close(grads["softmax"][1], p * (c[1] - (p * c[1]).sum()), rtol=1e-14,
                     atol=1e-15)
        assert numpy.isnan(nn.cross_entropy(x, labels))
        grads["cross_entropy"] = wg.grad(lambda z: nn.cross_entropy(z, labels))(x)
        want = p.copy()
        want[labels[1]] -= 1
        assert_close(grads["cross_entropy"][1], want / 3, rtol=1e-14, atol=1e-16)
        for g in grads.values():
            assert numpy.isnan(g[[0, 2]]).all()
        try:
            import torch
        except ImportError:
            return
        F = torch.nn.functional
        t = torch.tensor(x)
        assert_close(nn.softmax(x, axis=1), F.softmax(t, 1).numpy(), rtol=1e-15, atol=0)
        numpy.testing.assert_array_equal(numpy.isnan(nn.log_softmax(x, axis=1)),
                                         numpy.isnan(F.log_softmax(t, 1).numpy()))
        assert numpy.isnan(F.cross_entropy(t, torch.tensor(labels)).item())


def test_what_a_forward_pass_saved_is_not_taken_after_its_input_changed_in_place():
    # a logged (compiled) loss, then the logits (a parameter) updated in place, then a compiled
    # gradient, whose forward pass does not run: it took the old softmax (QA: row 0
    # [-0.177, 0.056, 0.121] where it is [-0.139, 0.030, 0.109]).  Likewise conv2d's
    # columns of the images kept by an input gradient, then the next batch written
    # into the same buffer.
    y = numpy.array([0, 1, 2, 1])
    p = rng.normal(size=(4, 3))
    loss = lambda s: nn.cross_entropy(s, y)              # noqa: E731
    compiled = wg.compile(wg.grad(loss), p)
    wg.compile(loss, p)(p)              # (a compiled loss keeps its softmax, keyed by p)
    p -= 0.5 * rng.normal(size=p.shape)
    assert_close(compiled(p), wg.grad(loss)(p.copy()), rtol=1e-14, atol=0)

    x, w = rng.normal(size=(2, 1, 5, 5)), rng.normal(size=(3, 1, 3, 3))
    conv = lambda w, x: np.sum(nn.conv2d(x, w, padding=1) ** 2)     # noqa: E731
    compiled = wg.compile(wg.grad(conv), w, x)
    wg.grad(conv, argnums=1)(w, x)
    x[...] = rng.normal(size=x.shape)
    assert_close(compiled(w, x), wg.grad(conv)(w, x.copy()), rtol=1e-13, atol=0)


def test_pool_scatter_meets_a_cotangent_of_another_layout():
    # conv2d's result is (O, N, H, W) in memory: the scatter works in that layout, and a
    # cotangent in C order gives the same values as everything in C order
    x = rng.normal(size=(6, 5, 8, 8)).transpose(1, 0, 2, 3)
    two = (2, 2)
    y = NN._max_pool_np(x, two, two)
    g = rng.normal(size=y.shape)
    want = NN._pool_scatter_np(g, numpy.ascontiguousarray(x), numpy.ascontiguousarray(y),
                               two, two)
    got = NN._pool_scatter_np(g, x, y, two, two)
    assert_close(got, want, rtol=0, atol=0)
    assert got.strides == numpy.zeros_like(x).strides
    t = rng.normal(size=x.shape)
    assert_close(NN._pool_gather_np(t, x, y, two, two),
                 NN._pool_gather_np(t, numpy.ascontiguousarray(x), numpy.ascontiguousarray(y),
                                    two, two), rtol=0, atol=0)


def test_cross_entropy_gradients_in_threads_keep_their_own_softmax():
    import threading
    cases = [rng.normal(size=(5, 4)) for _ in range(2)]
    expect = [wg.grad(nn.cross_entropy)(z, LABELS) for z in cases]
    wrong = []

    def work(k):
        for _ in range(200):
            if not numpy.array_equal(wg.grad(nn.cross_entropy)(cases[k], LABELS), expect[k]):
                wrong.append(k)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong
