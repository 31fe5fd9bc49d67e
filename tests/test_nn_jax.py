"""wengert.nn as jax.nn: the activations JAX has, their values and derivatives (against
jax.nn where JAX is installed, and against central differences), softmax's where=,
dot_product_attention, and jax.nn.initializers' distributions."""
import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
import wengert.nn as nn
from wengert import random as jr

from fd import check_grads


RNG = np.random.default_rng(1234)
# random points, each kink of the functions below, and large magnitudes
KINKS = np.array([-6.0, -3.0, -1.0, 0.0, 1.0, 3.0, 6.0])
LARGE = np.array([-1e6, -800.0, -50.0, 50.0, 800.0, 1e6])
POINTS = np.concatenate([RNG.normal(scale=4.0, size=40), KINKS, LARGE])

ELEMENTWISE = ["relu6", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh", "celu",
               "selu", "soft_sign", "mish", "squareplus", "sparse_plus", "sparse_sigmoid",
               "swish", "tanh", "identity", "silu", "sigmoid", "softplus", "log_sigmoid",
               "elu"]


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_values_and_derivatives_match_jax_at_kinks_and_far_out(jax, name):
    ours, theirs = getattr(nn, name), getattr(jax.nn, name)
    # (far left JAX's squareplus cancels, where ours is exact: tested on its own below)
    points = POINTS[POINTS > -100] if name == "squareplus" else POINTS
    np.testing.assert_allclose(ours(points), np.asarray(theirs(points)), rtol=1e-12,
                               atol=1e-300)
    # the derivative at every point, kinks included (JAX's convention there); atol: both
    # compute derivatives such as tanh's 1 - tanh² to within about 1e-16, and JAX's celu
    # has derivative 0 at -50, where exp(-50) = 1.9e-22 is (see test_far_tails_are_exact)
    d_ours = np.array([wg.grad(ours)(float(x)) for x in points])
    d_theirs = np.array([float(jax.grad(theirs)(float(x))) for x in points])
    np.testing.assert_allclose(d_ours, d_theirs, rtol=1e-11, atol=1e-15)


def test_far_tails_are_exact():
    assert wg.grad(nn.celu)(-50.0) == np.exp(-50.0)
    assert nn.selu(-1e6) == -nn._SELU_SCALE * nn._SELU_ALPHA
    assert nn.mish(-800.0) == 0.0 and nn.mish(800.0) == 800.0


def test_derivatives_at_kinks_are_jaxs(jax):
    # spelled out (independently of the loop above): JAX's choices at the kinks
    assert [wg.grad(nn.relu6)(x) for x in (0.0, 6.0)] == [0.0, 0.0]
    assert [wg.grad(nn.hard_tanh)(x) for x in (-1.0, 1.0)] == [1.0, 1.0]
    assert [wg.grad(nn.hard_sigmoid)(x) for x in (-3.0, 3.0)] == [0.0, 0.0]
    assert [wg.grad(nn.sparse_sigmoid)(x) for x in (-1.0, 1.0)] == [0.25, 0.25]
    assert [wg.grad(nn.sparse_plus)(x) for x in (-1.0, 1.0)] == [0.0, 1.0]


def test_squareplus_with_b_and_its_far_negative_tail(jax):
    x = RNG.normal(scale=3.0, size=20)
    np.testing.assert_allclose(nn.squareplus(x, 0.5), jax.nn.squareplus(x, 0.5),
                               rtol=1e-12)
    # far left the sum x + sqrt(x² + b) cancels to 0 in floats; the value is b / (4|x|)
    far = np.array([-1e8, -1e12, -1e200])
    np.testing.assert_allclose(nn.squareplus(far), 4.0 / (4 * np.abs(far)), rtol=1e-14)
    assert np.isfinite(nn.squareplus(np.array([1e200]))).all()
    with pytest.raises(ValueError, match="positive"):
        nn.squareplus(1.0, b=0.0)


def test_log1mexp_against_jax_and_its_accuracy(jax):
    x = np.concatenate([10.0 ** RNG.uniform(-20, 2.5, 40), [np.log(2.0), 1e-300, 700.0]])
    np.testing.assert_allclose(nn.log1mexp(x), jax.nn.log1mexp(x), rtol=1e-13)
    # against the exact series near 0: log(x - x²/2 + ...) = log x - x/2 + ...
    tiny = np.array([1e-10, 1e-15])
    np.testing.assert_allclose(nn.log1mexp(tiny), np.log(tiny) - tiny / 2, rtol=1e-15)
    # JAX's values outside the domain: -inf at 0, nan below
    with np.errstate(divide="ignore", invalid="ignore"):
        out = nn.log1mexp(np.array([0.0, -1.0]))
    assert out[0] == -np.inf and np.isnan(out[1])
    d_ours = [wg.grad(nn.log1mexp)(float(v)) for v in x[:-2]]
    d_theirs = [float(jax.grad(jax.nn.log1mexp)(float(v))) for v in x[:-2]]
    np.testing.assert_allclose(d_ours, d_theirs, rtol=1e-10)


SMOOTH = ["celu", "selu", "soft_sign", "mish", "squareplus", "sparse_plus", "swish",
          "tanh", "log1mexp", "hard_tanh", "relu6", "hard_silu"]


@pytest.mark.parametrize("name", SMOOTH)
def test_derivatives_against_finite_differences(name):
    f = getattr(nn, name)
    x = RNG.uniform(0.1, 5.0, size=7) if name == "log1mexp" else RNG.normal(scale=2, size=7)
    if name in ("hard_tanh", "relu6", "hard_silu"):       # piecewise: away from the kinks
        x = np.array([-7.0, -2.5, -0.5, 0.5, 2.5, 4.0, 7.0])
    # second order only where the function is twice differentiable there
    order = 1 if name in ("sparse_plus", "hard_tanh", "relu6", "hard_silu") else 2
    check_grads(f, x, order=order)


def test_glu_logsumexp_logmeanexp_standardize_match_jax(jax):
    x = RNG.normal(scale=3, size=(3, 4, 6))
    where = RNG.random((3, 4, 6)) < 0.7
    np.testing.assert_allclose(nn.glu(x), jax.nn.glu(x), rtol=1e-13)
    np.testing.assert_allclose(nn.glu(x, axis=1), jax.nn.glu(x, axis=1), rtol=1e-13)
    for kw in ({}, {"axis": 1}, {"axis": (0, 2), "keepdims": True}, {"where": where},
               {"axis": -1, "where": where}):
        np.testing.assert_allclose(nn.logsumexp(x, **kw), jax.nn.logsumexp(x, **kw),
                                   rtol=1e-13)
        np.testing.assert_allclose(nn.logmeanexp(x, **kw), jax.nn.logmeanexp(x, **kw),
                                   rtol=1e-12, atol=1e-14)
    b = RNG.normal(size=(3, 4, 6))
    for ours, theirs in zip(nn.logsumexp(x, axis=2, b=b, return_sign=True),
                            jax.nn.logsumexp(x, axis=2, b=b, return_sign=True)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    for kw in ({}, {"axis": (0, 1)}, {"where": where}, {"algorithm": "stable"},
               {"mean": 0.5, "variance": 2.0}, {"epsilon": 0.1, "axis": None}):
        np.testing.assert_allclose(nn.standardize(x, **kw), jax.nn.standardize(x, **kw),
                                   rtol=1e-9, atol=1e-12)
    # "fast" cancels below 0 (mean(x²) - mean² = -2 here, whose sqrt with epsilon 1e-5
    # would be nan): made 0, as JAX's clip makes it
    far = 1e8 + np.array([1.0, 2.0, 1.0, 0.0, 2.0, 2.0])
    assert np.mean(far ** 2) - np.mean(far) ** 2 < -1e-5
    np.testing.assert_allclose(nn.standardize(far), jax.nn.standardize(far), rtol=1e-12)
    assert np.isfinite(wg.grad(lambda a: wnp.sum(nn.standardize(a) * far))(far)).all()
    with pytest.raises(ValueError, match="even"):
        nn.glu(np.ones(3))
    with pytest.raises(ValueError, match="algorithm"):
        nn.standardize(x, algorithm="slow")


def test_gradients_of_reductions_match_jax(jax):
    x = RNG.normal(scale=3, size=(4, 6))
    where = RNG.random((4, 6)) < 0.6
    where[0] = False                                         # a row left out whole
    makers = [
        lambda m, np_: lambda a: np_.sum(m.logsumexp(a[1:], axis=1, where=where[1:])),
        lambda m, np_: lambda a: np_.sum(m.logmeanexp(a, axis=0)),
        lambda m, np_: lambda a: np_.sum(m.standardize(a) * x),
        lambda m, np_: lambda a: np_.sum(m.softmax(a, where=where) * x),
        lambda m, np_: lambda a: np_.sum(np_.where(where, m.log_softmax(a, where=where) * x,
                                                   0.0)),
        lambda m, np_: lambda a: np_.sum(m.glu(a, axis=0) ** 2)]
    for make in makers:
        ours = wg.grad(make(nn, wnp))(x)
        theirs = jax.grad(make(jax.nn, jax.numpy))(x)
        np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-10, atol=1e-13)


def test_reductions_against_finite_differences():
    x = RNG.normal(size=(3, 4))
    where = RNG.random((3, 4)) < 0.7
    where[:, 0] = True
    check_grads(lambda a: nn.logsumexp(a, axis=1, where=where), x)
    check_grads(lambda a: nn.logmeanexp(a, axis=0), x)
    check_grads(lambda a: nn.standardize(a, algorithm="stable"), x)
    check_grads(lambda a: nn.softmax(a, where=where), x)
    check_grads(lambda a: nn.glu(a), x)


def test_softmax_where_matches_jax(jax):
    x = RNG.normal(size=(5, 7))
    where = RNG.random((5, 7)) < 0.5
    where[1] = False
    np.testing.assert_allclose(nn.softmax(x, where=where), jax.nn.softmax(x, where=where),
                               rtol=1e-13, atol=1e-300)
    np.testing.assert_array_equal(np.isinf(nn.log_softmax(x, where=where)), ~where)
    np.testing.assert_allclose(nn.log_softmax(x, where=where)[where],
                               np.asarray(jax.nn.log_softmax(x, where=where))[where],
                               rtol=1e-13)
    np.testing.assert_allclose(nn.softmax(x, axis=0, where=where[0]),
                               jax.nn.softmax(x, axis=0, where=where[0]), rtol=1e-13)
    with pytest.raises(ValueError, match="broadcast"):
        nn.softmax(x, where=np.ones(3, bool))


def test_one_hot_takes_jaxs_dtype_and_axis(jax):
    labels = np.array([[0, 2], [1, 1]])
    for kw in ({}, {"dtype": np.int32}, {"axis": 0}, {"axis": 1, "dtype": np.float32}):
        ours, theirs = nn.one_hot(labels, 3, **kw), jax.nn.one_hot(labels, 3, **kw)
        np.testing.assert_array_equal(ours, theirs)
        assert ours.dtype == theirs.dtype
    with pytest.raises(ValueError, match="axis"):
        nn.one_hot(labels, 3, axis=3)


ATTENTION = [
    dict(),
    dict(is_causal=True),
    dict(scale=0.3, bias=True),
    dict(mask=True),
    dict(mask=True, is_causal=True, bias=True),
    dict(query_seq_lengths=np.array([2, 4], np.int32),
         key_value_seq_lengths=np.array([3, 5], np.int32)),
    dict(local_window_size=(1, 2)),
    dict(local_window_size=1, is_causal=True),
]


def _attention_by_loops(q, k, v, bias=None, mask=None, scale=None, is_causal=False,
                        query_seq_lengths=None, key_value_seq_lengths=None,
                        local_window_size=None):
    """The reference: one head of one example at a time, written from the definition."""
    B, T, N, H = q.shape
    S, K = k.shape[1], k.shape[2]
    scale = 1 / np.sqrt(H) if scale is None else scale
    out, lse = np.zeros_like(q), np.zeros((B, T, N))
    for b in range(B):
        for n in range(N):
            kn = n // (N // K)
            logits = q[b, :, n] @ k[b, :, kn].T * scale
            if bias is not None:
                logits = logits + np.broadcast_to(bias, (B, N, T, S))[b, n]
            keep = np.ones((T, S), bool)
            if mask is not None:
                keep &= np.broadcast_to(mask, (B, N, T, S))[b, n]
            t, s = np.arange(T)[:, None], np.arange(S)[None, :]
            if is_causal:
                keep &= s <= t
            if local_window_size is not None:
                left, right = (local_window_size,) * 2 if np.isscalar(local_window_size) \
                    else local_window_size
                keep &= (s >= t - left) & (s <= t + right)
            if key_value_seq_lengths is not None:
                keep &= s < key_value_seq_lengths[b]
            if query_seq_lengths is not None:
                keep &= t < query_seq_lengths[b]
            logits = np.where(keep, logits, -0.7 * np.finfo(np.float32).max)
            w = np.exp(logits - logits.max(axis=1, keepdims=True))
            lse[b, :, n] = np.log(w.sum(axis=1)) + logits.max(axis=1)
            out[b, :, n] = (w / w.sum(axis=1, keepdims=True)) @ v[b, :, kn]
            if query_seq_lengths is not None:
                out[b, query_seq_lengths[b]:, n] = 0.0
    return out, lse


def _attention_case(kw, heads, rng):
    N, K = heads
    B, T, S, H = 2, 4, 5, 3
    q, k, v = rng.normal(size=(B, T, N, H)), rng.normal(size=(B, S, K, H)), \
        rng.normal(size=(B, S, K, H))
    kw = dict(kw)
    if kw.get("bias") is True:
        kw["bias"] = rng.normal(size=(1, N, T, S))
    if kw.get("mask") is True:
        kw["mask"] = rng.random((B, 1, T, S)) < 0.6
    return q, k, v, kw


@pytest.mark.parametrize("kw", ATTENTION, ids=[",".join(k) or "plain" for k in ATTENTION])
@pytest.mark.parametrize("heads", [(4, 4), (4, 2), (3, 1)], ids=["mha", "gqa", "mqa"])
def test_dot_product_attention_against_loops(kw, heads):
    q, k, v, kw = _attention_case(kw, heads, np.random.default_rng(7))
    ours, res = nn.dot_product_attention(q, k, v, return_residual=True, **kw)
    expected, lse = _attention_by_loops(q, k, v, **kw)
    np.testing.assert_allclose(ours, expected, rtol=1e-13, atol=1e-14)
    real = lse > -1e30                              # (queries with a key to attend to)
    np.testing.assert_allclose(res[real], lse[real], rtol=1e-13)


@pytest.mark.parametrize("kw", ATTENTION, ids=[",".join(k) or "plain" for k in ATTENTION])
@pytest.mark.parametrize("heads", [(4, 4), (4, 2), (3, 1)], ids=["mha", "gqa", "mqa"])
def test_dot_product_attention_matches_jax(jax, kw, heads):
    # JAX forms the logits in float32 even with x64 (~1e-7 apart from float64's), so
    # this checks the conventions (masks, groups, padding), not the last digits
    q, k, v, kw = _attention_case(kw, heads, np.random.default_rng(7))
    ours = nn.dot_product_attention(q, k, v, **kw)
    theirs = jax.nn.dot_product_attention(q, k, v, **kw)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    g_ours = wg.grad(lambda q, k, v: wnp.sum(nn.dot_product_attention(q, k, v, **kw) ** 2),
                     argnums=(0, 1, 2))(q, k, v)
    g_theirs = jax.grad(lambda q, k, v: (jax.nn.dot_product_attention(q, k, v, **kw) ** 2)
                        .sum(), argnums=(0, 1, 2))(q, k, v)
    for a, b in zip(g_ours, g_theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_dot_product_attention_unbatched_derivatives_and_errors():
    rng = np.random.default_rng(8)
    q, k, v = rng.normal(size=(3, 2, 4)), rng.normal(size=(5, 2, 4)), \
        rng.normal(size=(5, 2, 4))
    out = nn.dot_product_attention(q, k, v, is_causal=True)
    batched = nn.dot_product_attention(q[None], k[None], v[None], is_causal=True)
    np.testing.assert_allclose(out, batched[0], rtol=1e-15)
    # by hand: head 0 of query 1 attends keys 0 and 1
    logits = k[:2, 0] @ q[1, 0] / 2.0
    w = np.exp(logits - logits.max())
    np.testing.assert_allclose(out[1, 0], (w / w.sum()) @ v[:2, 0], rtol=1e-13)
    check_grads(lambda q, k, v: nn.dot_product_attention(q, k, v, is_causal=True), q, k, v)
    with pytest.raises(ValueError, match="multiple"):
        nn.dot_product_attention(rng.normal(size=(3, 3, 4)), k, v)
    with pytest.raises(ValueError, match="implementation"):
        nn.dot_product_attention(q, k, v, implementation="cudnn")
    with pytest.raises(TypeError, match="boolean"):
        nn.dot_product_attention(q, k, v, mask=np.ones((1, 2, 3, 5)))
    with pytest.raises(ValueError, match="broadcast"):
        nn.dot_product_attention(q, k, v, bias=np.ones((1, 2, 3, 4)))


# ---- initializers --------------------------------------------------------------------------
def _fans(shape):
    field = int(np.prod(shape[:-2]))
    return shape[-2] * field, shape[-1] * field


@pytest.mark.parametrize("name, scale, mode, dist", [
    ("glorot_uniform", 1.0, "avg", "uniform"), ("glorot_normal", 1.0, "avg", "normal"),
    ("lecun_uniform", 1.0, "in", "uniform"), ("lecun_normal", 1.0, "in", "normal"),
    ("he_uniform", 2.0, "in", "uniform"), ("he_normal", 2.0, "in", "normal"),
    ("kaiming_normal", 2.0, "in", "normal"), ("xavier_uniform", 1.0, "avg", "uniform")])
@pytest.mark.parametrize("shape", [(300, 200), (3, 3, 40, 60)])
def test_named_initializers_have_jaxs_variance_and_support(name, scale, mode, dist, shape):
    init = getattr(nn.initializers, name)()
    w = init(jr.PRNGKey(3), shape)
    assert w.shape == shape and w.dtype == np.float64
    fan_in, fan_out = _fans(shape)
    n = fan_in if mode == "in" else (fan_in + fan_out) / 2
    std = np.sqrt(scale / n)
    assert abs(w.std() / std - 1) < 0.03
    assert abs(w.mean()) < 0.03 * std
    if dist == "uniform":           # uniform on ±√3 std
        assert np.abs(w).max() <= np.sqrt(3) * std and np.abs(w).max() > 0.99 * np.sqrt(3) * std
    else:                           # truncated at two deviations of the untruncated normal
        bound = 2 * std / 0.87962566103423978
        assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert init(jr.PRNGKey(3), shape, np.float32).dtype == np.float32
    np.testing.assert_array_equal(init(jr.PRNGKey(3), shape), w)       # keyed, repeatable


def test_variance_scaling_modes_axes_and_errors(jax):
    key = jr.PRNGKey(0)
    for mode in ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"):
        for kw in ({}, {"in_axis": 0, "out_axis": 2, "batch_axis": 1}):
            shape = (40, 3, 50)
            w = nn.initializers.variance_scaling(3.0, mode, "normal", **kw)(key, shape)
            # JAX's own initializer's deviation, from many draws of JAX's
            jw = jax.nn.initializers.variance_scaling(3.0, mode, "normal", **kw)(
                jax.random.PRNGKey(0), shape)
            assert abs(w.std() / np.asarray(jw).std() - 1) < 0.06
    with pytest.raises(ValueError, match="mode"):
        nn.initializers.variance_scaling(1.0, "fan_sum", "normal")
    with pytest.raises(ValueError, match="distribution"):
        nn.initializers.variance_scaling(1.0, "fan_in", "cauchy")
    with pytest.raises(ValueError, match="out of range"):
        nn.initializers.glorot_normal()(key, (5,))
    with pytest.raises(TypeError, match="float dtype"):
        nn.initializers.he_normal()(key, (3, 4), np.int32)


def test_simple_initializers_and_orthogonal():
    key = jr.PRNGKey(5)
    assert nn.initializers.zeros(key, (2, 3)).sum() == 0
    assert nn.initializers.ones(key, [4]).tolist() == [1.0] * 4
    assert (nn.initializers.constant(-2.5)(key, (3,)) == -2.5).all()
    u = nn.initializers.uniform(0.5)(key, (20000,))
    assert u.min() >= 0 and u.max() < 0.5 and abs(u.mean() - 0.25) < 0.005
    g = nn.initializers.normal(2.0)(key, (20000,))
    assert abs(g.std() - 2.0) < 0.05
    t = nn.initializers.truncated_normal(2.0, lower=-1.0, upper=3.0)(key, (20000,))
    assert t.min() >= -2.0 and t.max() <= 6.0 and t.mean() > 0.3
    for shape, axis in (((6, 4), -1), ((4, 6), -1), ((2, 3, 5), 1)):
        w = nn.initializers.orthogonal(scale=2.0, column_axis=axis)(key, shape)
        m = np.moveaxis(w, axis, -1).reshape(-1, shape[axis])
        small = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
        np.testing.assert_allclose(small, 4.0 * np.eye(min(m.shape)), atol=1e-12)
    d = nn.initializers.delta_orthogonal()(key, (3, 4, 2, 5))
    np.testing.assert_allclose(d[1, 1] @ d[1, 1].T, np.eye(2), atol=1e-12)
    assert np.abs(d).sum() == pytest.approx(np.abs(d[1, 1]).sum())
    with pytest.raises(ValueError, match="at most"):
        nn.initializers.delta_orthogonal()(key, (3, 3, 5, 2))


def test_initializers_under_jit_draw_from_the_key():
    init = nn.initializers.he_uniform()
    f = wg.jit(lambda k: init(k, (4, 3)))
    k1, k2 = jr.split(jr.PRNGKey(9))
    np.testing.assert_array_equal(f(k1), init(k1, (4, 3)))
    assert not np.array_equal(f(k1), f(k2))
