"""wengert.example_libraries (JAX's jax.example_libraries): stax's layers applied to the
same parameters as JAX's apply_fun (values to 1e-12; derivatives with respect to the
parameters and the inputs against JAX's and central differences), initialisers by shapes
and statistics, the optimizers and schedules against JAX's over hundreds of steps, under
wg.jit, differentiated through, saved and restored, and the errors."""
import pickle

import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from wengert.example_libraries import optimizers, stax
from wengert.tree import flatten, unflatten

from fd import assert_close, check_grads


@pytest.fixture(scope="module")
def jstax(jax):
    from jax.example_libraries import stax as jstax
    return jstax


@pytest.fixture(scope="module")
def jopt(jax):
    from jax.example_libraries import optimizers as jopt
    return jopt


def to_numpy(jax, tree):
    return jax.tree.map(np.asarray, tree)


def plain_shape(shape):
    """An output shape (or a list of them) with NumPy's integers made Python's."""
    if isinstance(shape, (list, tuple)) and shape and isinstance(shape[0], (list, tuple)):
        return [plain_shape(s) for s in shape]
    return tuple(int(d) for d in shape)


# ---- stax ---------------------------------------------------------------------------------
# name: (a function of the stax module making the layer, input shape); applied to both
# libraries' modules, so each case is the same program written once
LAYERS = {
    "Dense": (lambda s: s.Dense(5), (4, 3)),
    "Dense_3d_inputs": (lambda s: s.Dense(2), (2, 4, 3)),
    "Conv": (lambda s: s.Conv(4, (3, 3)), (2, 7, 6, 3)),
    "Conv_same_strided": (lambda s: s.Conv(4, (3, 2), (2, 2), "SAME"), (2, 7, 6, 3)),
    "Conv_pairs": (lambda s: s.Conv(3, (2, 3), (1, 2), ((1, 0), (2, 1))), (2, 5, 6, 2)),
    "GeneralConv_NCHW": (lambda s: s.GeneralConv(("NCHW", "OIHW", "NCHW"), 4, (3, 3),
                                                 (2, 1), "SAME"), (2, 3, 7, 6)),
    "GeneralConv_mixed": (lambda s: s.GeneralConv(("NHWC", "OIHW", "NCHW"), 3, (2, 3)),
                          (2, 5, 6, 2)),
    "GeneralConv_1d": (lambda s: s.GeneralConv(("NCH", "OIH", "NCH"), 4, (3,), (2,)),
                       (2, 3, 9)),
    "ConvTranspose_same": (lambda s: s.ConvTranspose(3, (3, 3), (2, 2), "SAME"),
                           (2, 4, 5, 2)),
    "ConvTranspose_valid": (lambda s: s.ConvTranspose(3, (3, 2), (2, 3), "VALID"),
                            (2, 4, 5, 2)),
    "ConvTranspose_pairs": (lambda s: s.ConvTranspose(2, (3, 3), (2, 1), ((1, 2), (0, 1))),
                            (1, 4, 3, 2)),
    "ConvTranspose_stride_below_kernel": (lambda s: s.ConvTranspose(2, (2, 2), (3, 3),
                                                                    "SAME"), (1, 3, 2, 2)),
    "Conv1DTranspose": (lambda s: s.Conv1DTranspose(3, (4,), (2,), "SAME"), (2, 6, 2)),
    "GeneralConvTranspose_NCHW": (lambda s: s.GeneralConvTranspose(
        ("NCHW", "OIHW", "NCHW"), 2, (3, 2), (2, 2), "VALID"), (2, 3, 4, 4)),
    "BatchNorm": (lambda s: s.BatchNorm(), (4, 3, 3, 2)),
    "BatchNorm_axis0": (lambda s: s.BatchNorm(axis=0), (6, 3)),
    "BatchNorm_no_center": (lambda s: s.BatchNorm(axis=(0, 1), center=False), (4, 3, 2)),
    "BatchNorm_no_scale": (lambda s: s.BatchNorm(axis=(0, 2), scale=False), (4, 3, 2)),
    "MaxPool": (lambda s: s.MaxPool((2, 2)), (2, 5, 6, 3)),
    "MaxPool_same": (lambda s: s.MaxPool((3, 2), (2, 2), "SAME"), (2, 5, 6, 3)),
    "MaxPool_spec": (lambda s: s.MaxPool((2, 2), (2, 2), spec="NCHW"), (2, 3, 6, 5)),
    "SumPool": (lambda s: s.SumPool((2, 3), (1, 2)), (2, 5, 6, 3)),
    "AvgPool": (lambda s: s.AvgPool((2, 2), (2, 2)), (2, 6, 6, 3)),
    "AvgPool_same": (lambda s: s.AvgPool((3, 3), (2, 2), "SAME"), (2, 5, 6, 3)),
    "AvgPool_same_spec": (lambda s: s.AvgPool((3, 2), (2, 1), "SAME", spec="NCHW"),
                          (2, 3, 5, 4)),
    "Flatten": (lambda s: s.Flatten, (2, 3, 4, 2)),
    "Identity": (lambda s: s.Identity, (3, 4)),
    "Tanh": (lambda s: s.Tanh, (3, 4)),
    "Relu": (lambda s: s.Relu, (3, 4)),
    "Exp": (lambda s: s.Exp, (3, 4)),
    "LogSoftmax": (lambda s: s.LogSoftmax, (3, 4)),
    "Softmax": (lambda s: s.Softmax, (3, 4)),
    "Softplus": (lambda s: s.Softplus, (3, 4)),
    "Sigmoid": (lambda s: s.Sigmoid, (3, 4)),
    "Elu": (lambda s: s.Elu, (3, 4)),
    "LeakyRelu": (lambda s: s.LeakyRelu, (3, 4)),
    "Selu": (lambda s: s.Selu, (3, 4)),
    "Gelu": (lambda s: s.Gelu, (3, 4)),
    "elementwise_kwargs": (lambda s: s.elementwise(s.leaky_relu, negative_slope=0.3), (3, 4)),
    "mlp": (lambda s: s.serial(s.Dense(8), s.Relu, s.Dense(3), s.LogSoftmax), (5, 4)),
    "cnn": (lambda s: s.serial(s.Conv(4, (3, 3), padding="SAME"), s.BatchNorm(), s.Relu,
                               s.MaxPool((2, 2), (2, 2)), s.Flatten, s.Dense(5), s.Softmax),
            (3, 6, 6, 2)),
    "residual": (lambda s: s.serial(s.FanOut(2), s.parallel(s.serial(s.Dense(3), s.Tanh,
                                                                     s.Dense(3)), s.Identity),
                                    s.FanInSum, s.Gelu), (4, 3)),
    "concat": (lambda s: s.serial(s.FanOut(3), s.parallel(s.Dense(2), s.Dense(4), s.Identity),
                                  s.FanInConcat()), (4, 3)),
    "concat_axis0": (lambda s: s.serial(s.FanOut(2), s.parallel(s.Dense(2), s.Dense(2)),
                                        s.FanInConcat(axis=0)), (4, 3)),
    "shape_dependent": (lambda s: s.shape_dependent(lambda shape: s.Dense(shape[-1] + 1)),
                        (4, 3)),
    "decoder": (lambda s: s.serial(s.Dense(18), s.Elu, reshape_layer((3, 3, 2)),
                                   s.ConvTranspose(3, (3, 3), (2, 2), "SAME"), s.Selu,
                                   s.AvgPool((2, 2)), s.Flatten, s.Dense(2), s.Sigmoid),
                (2, 4)),
}


def reshape_layer(shape):
    """A layer of one's own, as JAX's tutorials write them: a pair of functions."""
    return (lambda rng, input_shape: ((input_shape[0],) + shape, ()),
            lambda params, x, **kwargs: x.reshape((-1,) + shape))


def jax_setup(jax, jstax, name, seed=0):
    """JAX's layer initialised by JAX, its parameters as NumPy arrays, and inputs."""
    make, in_shape = LAYERS[name]
    init, apply = make(jstax)
    out_shape, params = init(jax.random.PRNGKey(seed), in_shape)
    x = np.random.default_rng(seed).normal(size=in_shape)
    return apply, plain_shape(out_shape), to_numpy(jax, params), x


@pytest.mark.parametrize("name", LAYERS)
def test_layer_matches_jax_on_the_same_parameters(jax, jstax, name):
    japply, jshape, params, x = jax_setup(jax, jstax, name)
    init, apply = LAYERS[name][0](stax)
    out_shape, own = init(wg.random.PRNGKey(0), LAYERS[name][1])
    # JAX's output shape and parameters of JAX's structure and shapes (not values)
    assert plain_shape(out_shape) == jshape
    assert jax.tree.structure(own) == jax.tree.structure(params)
    assert [np.shape(a) for a in jax.tree.leaves(own)] == \
        [np.shape(a) for a in jax.tree.leaves(params)]
    y = apply(params, x)
    assert np.shape(y) == jshape
    assert_close(y, np.asarray(japply(params, x)), rtol=1e-12, atol=1e-13)
    # wengert's own parameters fit too
    assert np.shape(apply(own, x)) == jshape


@pytest.mark.parametrize("name", LAYERS)
def test_layer_derivatives_match_jax_and_central_differences(jax, jstax, name):
    japply, jshape, params, x = jax_setup(jax, jstax, name, seed=1)
    apply = LAYERS[name][0](stax)[1]
    ct = np.random.default_rng(2).normal(size=jshape)
    _, jback = jax.vjp(japply, params, x)
    jgp, jgx = jback(ct)
    if jax.tree.leaves(params):
        gp, gx = wg.vjp(lambda p, x: apply(p, x), params, x)[1](ct)
    else:           # (wg.vjp refuses an argument with nothing to differentiate, JAX not)
        gp, (gx,) = params, wg.vjp(lambda x: apply(params, x), x)[1](ct)
    assert_close(gx, np.asarray(jgx), rtol=1e-10, atol=1e-12)
    assert jax.tree.structure(gp) == jax.tree.structure(params)
    for a, b in zip(jax.tree.leaves(gp), jax.tree.leaves(jgp)):
        assert_close(a, np.asarray(b), rtol=1e-10, atol=1e-12)
    # and against central differences, the parameters and inputs as flat arguments
    leaves, tree = flatten(params)
    order = 2 if name in ("Dense", "BatchNorm", "Gelu", "AvgPool_same", "mlp") else 1
    check_grads(lambda *a: apply(unflatten(tree, a[:-1]), a[-1]), *leaves, x, order=order)


@pytest.mark.parametrize("name", ["cnn", "residual", "decoder", "ConvTranspose_valid"])
def test_layers_under_jit_and_vmap(jax, jstax, name):
    _, _, params, x = jax_setup(jax, jstax, name)
    apply = LAYERS[name][0](stax)[1]
    eager = apply(params, x)
    assert_close(wg.jit(apply)(params, x), eager, rtol=1e-13, atol=1e-14)
    g = wg.grad(lambda p, x: wnp.sum(apply(p, x) ** 2) + wnp.sum(flatten(p)[0][0]),
                argnums=(0, 1))
    for a, b in zip(flatten(wg.jit(g)(params, x))[0], flatten(g(params, x))[0]):
        assert_close(a, b, rtol=1e-12, atol=1e-13)
    if "BatchNorm" not in repr(name) and name != "cnn":      # (statistics of the batch)
        one = wg.vmap(lambda xi: apply(params, xi[None])[0])(x)
        assert_close(one, eager, rtol=1e-13, atol=1e-14)


def test_activation_functions_and_layers_keep_jaxs_conventions_at_kinks(jax, jstax):
    # the derivatives at 0 are JAX's (relu 0, leaky_relu 1), and gelu is the tanh form
    points = np.concatenate([np.random.default_rng(3).normal(scale=3, size=20),
                             [0.0, -0.0, 1e-300, -50.0, 50.0]])
    for name in ("relu", "leaky_relu", "elu", "selu", "gelu", "softplus", "sigmoid"):
        ours, theirs = getattr(stax, name), getattr(jstax, name)
        assert_close(ours(points), np.asarray(theirs(points)), rtol=1e-13, atol=1e-15)
        d = [wg.grad(ours)(float(p)) for p in points]
        jd = [float(jax.grad(theirs)(float(p))) for p in points]
        # (atol: in the tails both cancel, gelu' at -6 and sigmoid' at 10 as 1 - s, JAX's
        # differently; sigmoid' at -50 is 2e-22, JAX's 0)
        assert_close(d, jd, rtol=1e-12, atol=1e-14)
    assert wg.grad(stax.relu)(0.0) == 0.0 and wg.grad(stax.leaky_relu)(0.0) == 1.0
    for name in ("softmax", "log_softmax", "logsoftmax", "standardize"):
        x = np.random.default_rng(4).normal(size=(3, 5))
        assert_close(getattr(stax, name)(x), np.asarray(getattr(jstax, name)(x)),
                     rtol=1e-13, atol=1e-14)
    # the layers built from them, applied at 0
    for layer in ("Relu", "LeakyRelu", "Gelu", "Elu"):
        f = lambda x: wnp.sum(getattr(stax, layer)[1]((), x))
        jf = lambda x: jax.numpy.sum(getattr(jstax, layer)[1]((), x))
        assert_close(wg.grad(f)(np.zeros(3)), np.asarray(jax.grad(jf)(np.zeros(3))),
                     rtol=0, atol=0)


def test_max_pool_gives_a_tie_to_the_first_largest_element_as_jaxs(jax, jstax):
    # relu'd images are full of ties (zeros); windows overlapping (SAME, stride 1) or not
    x = np.maximum(np.random.default_rng(6).normal(size=(2, 6, 6, 3)).round(0), 0.0)
    for args in [((2, 2), (2, 2)), ((3, 3), (1, 1), "SAME"), ((2, 3), (1, 2), "VALID")]:
        apply, japply = stax.MaxPool(*args)[1], jstax.MaxPool(*args)[1]
        weights = np.random.default_rng(7).normal(size=np.shape(apply((), x)))
        g = wg.grad(lambda x: wnp.sum(apply((), x) * weights))(x)
        jg = jax.grad(lambda x: jax.numpy.sum(japply((), x) * weights))(x)
        assert_close(g, np.asarray(jg), rtol=1e-15, atol=0)


def test_batch_norm_of_a_constant_channel_is_finite_as_jaxs(jax, jstax):
    # mean(x²) - mean² cancels below 0 here: JAX clips it, and so does wengert
    x = 1e8 + np.array([[1.0, 2.0, 1.0, 0.0, 2.0, 2.0], [0.0] * 6]).T
    assert (np.mean(x ** 2, 0) - np.mean(x, 0) ** 2).min() < -1e-5      # (-2: sqrt is nan)
    params = (np.zeros(2), np.ones(2))
    y = stax.BatchNorm(axis=0)[1](params, x)
    assert np.isfinite(y).all()
    assert_close(y, np.asarray(jstax.BatchNorm(axis=0)[1](params, x)), rtol=1e-12, atol=0)
    assert_close(y[:, 0], (x[:, 0] - x[:, 0].mean()) / np.sqrt(1e-5), rtol=1e-12)


def test_minus_one_batch_sizes_pass_through_as_in_jax(jax, jstax):
    cases = [lambda s: s.serial(s.Conv(4, (3, 3), (2, 2), "SAME"), s.Relu, s.Flatten,
                                s.Dense(10)),
             lambda s: s.ConvTranspose(2, (3, 3), (2, 2)),
             lambda s: s.serial(s.Dense(6), s.FanOut(2), s.parallel(s.Dense(2), s.Dense(3)),
                                s.FanInConcat()),
             lambda s: s.serial(s.Conv(2, (2, 2)), s.MaxPool((2, 2)), s.Flatten)]
    for make, shape in zip(cases, [(-1, 8, 8, 1), (-1, 5, 5, 3), (-1, 4), (-1, 6, 6, 1)]):
        ours = make(stax)[0](wg.random.PRNGKey(0), shape)[0]
        theirs = make(jstax)[0](jax.random.PRNGKey(0), shape)[0]
        assert plain_shape(ours) == plain_shape(theirs), (shape, ours, theirs)


def test_initialisers_have_jaxs_shapes_and_distributions(jax, jstax):
    for make, shape in [(lambda s: s.Dense(300), (-1, 200)),
                        (lambda s: s.GeneralConv(("NCHW", "OIHW", "NCHW"), 48, (3, 3)),
                         (1, 40, 9, 9)),
                        (lambda s: s.ConvTranspose(40, (4, 4)), (-1, 5, 5, 30))]:
        (W, b) = make(stax)[0](wg.random.PRNGKey(1), shape)[1]
        (jW, jb) = to_numpy(jax, make(jstax)[0](jax.random.PRNGKey(1), shape)[1])
        assert W.shape == jW.shape and b.shape == jb.shape
        assert W.dtype == jW.dtype == np.float64
        assert abs(W.std() / jW.std() - 1) < 0.05, (W.std(), jW.std())
        assert abs(W.mean()) < 0.05 * W.std() and abs(W).max() <= 2 * W.std() * 1.2
        assert abs(b.std() / jb.std() - 1) < 0.3, (b.std(), jb.std())
        assert not np.array_equal(W, make(stax)[0](wg.random.PRNGKey(2), shape)[1][0])
    # Glorot: fan_in + fan_out from the kernel's I and O axes; biases 0.01 (Dense), 1e-6
    W, b = stax.Dense(300)[0](wg.random.PRNGKey(0), (-1, 500))[1]
    assert abs(W.std() * np.sqrt((500 + 300) / 2) - 1) < 0.03 and abs(b.std() / 0.01 - 1) < 0.2
    W, b = stax.Conv(64, (5, 5))[0](wg.random.PRNGKey(0), (-1, 9, 9, 32))[1]
    fans = (32 + 64) * 25
    assert abs(W.std() * np.sqrt(fans / 2) - 1) < 0.03 and abs(b.std() / 1e-6 - 1) < 0.2
    beta, gamma = stax.BatchNorm()[0](wg.random.PRNGKey(0), (2, 3, 3, 4))[1]
    assert beta.tolist() == [0.0] * 4 and gamma.tolist() == [1.0] * 4
    assert stax.BatchNorm(center=False, scale=False)[0](wg.random.PRNGKey(0),
                                                        (2, 3, 3, 4))[1] == ((), ())
    # the initialisers stax names, and their aliases
    key = wg.random.PRNGKey(3)
    assert stax.glorot is stax.glorot_normal and stax.randn is stax.normal
    assert stax.ones(key, (2,)).tolist() == [1.0, 1.0] and stax.zeros(key, (1,)).tolist() == [0.0]
    draw = stax.randn(2.0)(key, (20000,))
    assert abs(draw.std() / 2.0 - 1) < 0.03
    assert abs(stax.glorot(0, 1)(key, (400, 100)).std() * np.sqrt(250) - 1) < 0.03


def test_dropout_keeps_with_probability_rate_as_jaxs_does(jax, jstax):
    init, apply = stax.Dropout(0.75)
    x = np.random.default_rng(5).normal(size=(200, 100))
    key = wg.random.PRNGKey(7)
    y = apply((), x, rng=key)
    kept = y != 0
    assert abs(kept.mean() - 0.75) < 0.01
    assert_close(y[kept], x[kept] / 0.75, rtol=1e-15)
    jy = np.asarray(jstax.Dropout(0.75)[1]((), x, rng=jax.random.PRNGKey(7)))
    assert abs((jy != 0).mean() - kept.mean()) < 0.02          # the same rate of keeping
    # the same key, the same mask: eagerly, compiled, and so the derivative is mask / rate
    assert np.array_equal(wg.jit(lambda x, k: apply((), x, rng=k))(x, key), y)
    g = wg.grad(lambda x: wnp.sum(apply((), x, rng=key) * x))(x)
    assert_close(g, 2 * x * kept / 0.75, rtol=1e-14, atol=0)
    check_grads(lambda x: apply((), x, rng=key), x[:3, :4])
    # other modes pass the inputs on; serial gives each dropout layer its own key
    assert stax.Dropout(0.5, mode="test")[1]((), x, rng=key) is x
    net = stax.serial(stax.Dropout(0.5), stax.Dropout(0.5))[1]
    masks = [stax.serial(stax.Dropout(0.5))[1]([()], np.ones(1000), rng=k) != 0
             for k in wg.random.split(key)]
    assert not np.array_equal(*masks)
    assert abs((net([(), ()], np.ones(20000), rng=key) != 0).mean() - 0.25) < 0.02
    with pytest.raises(ValueError, match="Dropout: apply_fun needs a key"):
        apply((), x)


def test_stax_errors_name_the_layer_and_the_shapes():
    key = wg.random.PRNGKey(0)
    init, apply = stax.Dense(4)
    _, params = init(key, (2, 3))
    with pytest.raises(ValueError, match=r"Dense: inputs of shape \(2, 5\) do not fit W of "
                                         r"shape \(3, 4\)"):
        apply(params, np.ones((2, 5)))
    with pytest.raises(TypeError, match="Dense: out_dim must be a positive integer"):
        stax.Dense(2.5)
    with pytest.raises(ValueError, match="Dense: out_dim must be a positive integer"):
        stax.Dense(0)
    with pytest.raises(TypeError, match=r"serial: layer 1 must be an \(init_fun, apply_fun\) "
                                        r"pair.*call it, Dense\(...\)"):
        stax.serial(stax.Relu, stax.Dense)
    with pytest.raises(ValueError, match="parallel: needs at least one layer"):
        stax.parallel()
    with pytest.raises(ValueError, match=r"Conv: input_shape \(2, 8, 8\) must have 4 axes"):
        stax.Conv(3, (3, 3))[0](key, (2, 8, 8))
    conv_params = stax.Conv(3, (3, 3))[0](key, (2, 8, 8, 1))[1]
    with pytest.raises(ValueError, match=r"Conv: inputs of shape \(8, 8, 1\) must have 4 axes"):
        stax.Conv(3, (3, 3))[1](conv_params, np.ones((8, 8, 1)))
    with pytest.raises(ValueError, match=r"GeneralConv: dimension_numbers .* must name N and C"):
        stax.GeneralConv(("NHWC", "HWIO", "NHWX"), 3, (3, 3))
    with pytest.raises(ValueError, match=r"Conv: strides \(1,\) must have one entry per axis"):
        stax.Conv(3, (3, 3), (1,))
    with pytest.raises(ValueError, match="ConvTranspose: padding 'FULL'"):
        stax.ConvTranspose(3, (3, 3), padding="FULL")[0](key, (1, 4, 4, 1))
    with pytest.raises(ValueError, match=r"MaxPool: inputs of shape \(4, 4\) must have 4 axes"):
        stax.MaxPool((2, 2))[1]((), np.ones((4, 4)))
    with pytest.raises(ValueError, match="AvgPool: spec 'NHW'"):
        stax.AvgPool((2, 2), spec="NHW")
    with pytest.raises(ValueError, match=r"FanInSum: the inputs must have one shape"):
        stax.FanInSum[1]((), [np.ones(2), np.ones(3)])
    with pytest.raises(ValueError, match=r"FanInConcat: the input shapes"):
        stax.FanInConcat()[0](key, [(2, 3), (3, 3)])
    with pytest.raises(ValueError, match=r"BatchNorm: axis \(0, 3\) must name distinct axes"):
        stax.BatchNorm(axis=(0, 3))[0](key, (2, 3))
    with pytest.raises(ValueError, match=r"serial: 2 layers take 2 parameters, got 1"):
        stax.serial(stax.Relu, stax.Tanh)[1]([()], np.ones(2))


# ---- optimizers ---------------------------------------------------------------------------
OPTIMIZERS = {
    "sgd": lambda o: o.sgd(0.05),
    "sgd_exponential_decay": lambda o: o.sgd(o.exponential_decay(0.1, 50, 0.5)),
    "momentum": lambda o: o.momentum(0.02, 0.9),
    "nesterov_staircase": lambda o: o.nesterov(o.inverse_time_decay(0.02, 20, 0.5, True), 0.8),
    "adagrad": lambda o: o.adagrad(0.1),
    "adagrad_polynomial": lambda o: o.adagrad(o.polynomial_decay(0.1, 100, 0.01, 2.0), 0.0),
    "rmsprop": lambda o: o.rmsprop(0.01),
    "rmsprop_inverse_time": lambda o: o.rmsprop(o.inverse_time_decay(0.02, 30, 0.3), 0.8, 1e-6),
    "rmsprop_momentum": lambda o: o.rmsprop_momentum(0.005, gamma=0.8, momentum=0.7),
    "adam": lambda o: o.adam(1e-2),
    "adam_piecewise": lambda o: o.adam(o.piecewise_constant([50, 150], [0.03, 0.01, 0.003]),
                                       b1=0.8, b2=0.99, eps=1e-6),
    "adamax": lambda o: o.adamax(0.02),
    "sm3": lambda o: o.sm3(0.1),
    "sm3_no_momentum": lambda o: o.sm3(0.05, momentum=0.0),
}


def start_params():
    rng = np.random.default_rng(10)
    return {"w": rng.normal(size=(3, 4)), "b": rng.normal(size=4), "s": np.array(0.7),
            "k": [rng.normal(size=(2, 3, 2)), (rng.normal(size=5),)]}


def gradient_sequence(steps=300):
    """Random gradients, some exactly 0 (the first steps of "b", a column of "w", a whole
    step), which take adagrad's and sm3's zero-accumulator branch."""
    rng = np.random.default_rng(11)
    out = []
    for t in range(steps):
        g = {"w": rng.normal(size=(3, 4)), "b": rng.normal(size=4) * (t >= 10),
             "s": np.array(rng.normal()), "k": [rng.normal(size=(2, 3, 2)) * 3,
                                                (rng.normal(size=5) * 1e-3,)]}
        g["w"][:, 1] *= t >= 5
        if t == 20:
            g = wg.tree.tree_map(np.zeros_like, g)
        out.append(g)
    return out


def state_numbers(state):
    """The numbers of a state (JAX's sm3 also keeps each shape as ints), each raveled."""
    leaves = [np.asarray(v) for v in flatten(state.packed_state)[0]]
    return [np.ravel(v) for v in leaves if v.dtype.kind == "f"]


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_optimizer_matches_jax_step_for_step(jax, jopt, name):
    opt_init, opt_update, get_params = OPTIMIZERS[name](optimizers)
    j_init, j_update, j_get = OPTIMIZERS[name](jopt)
    if not name.startswith("sm3"):      # (JAX's sm3 state holds each shape as ints: eager)
        j_update = jax.jit(j_update)    # (else JAX compiles adam's b1 ** (i + 1) per i)
    state, jstate = opt_init(start_params()), j_init(start_params())
    for i, g in enumerate(gradient_sequence()):
        state, jstate = opt_update(i, g, state), j_update(i, g, jstate)
        if i % 50 == 49:
            ours, theirs = get_params(state), to_numpy(jax, j_get(jstate))
            assert jax.tree.structure(ours) == jax.tree.structure(theirs)
            for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs)):
                assert_close(a, b, rtol=1e-12, atol=1e-13)
    moved = flatten(get_params(state))[0]
    assert all(not np.allclose(a, b) for a, b in zip(moved, flatten(start_params())[0]))
    # the whole state (moments, accumulators) too
    ours, theirs = state_numbers(state), state_numbers(to_numpy(jax, jstate))
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert_close(a, b, rtol=1e-11, atol=1e-13)


def feedback_loss(lib_numpy):
    """A loss coupling all the leaves, so that each step's gradient depends on the steps
    before it (the optimizers are compared on their own trajectories)."""
    def loss(p):
        w, b, s, (k, (v,)) = p["w"], p["b"], p["s"], p["k"]
        h = lib_numpy.tanh(w @ b + s * lib_numpy.sum(k, axis=(1, 2)).mean())
        return lib_numpy.sum(h ** 2) + 0.1 * lib_numpy.sum((v - s) ** 2) + 0.05 * lib_numpy.sum(
            w ** 2) + lib_numpy.sum(lib_numpy.cos(k)) * 0.1
    return loss


@pytest.mark.parametrize("name", ["sgd_exponential_decay", "momentum", "adagrad",
                                  "rmsprop_momentum", "adam_piecewise", "adamax", "sm3"])
def test_compiled_update_on_its_own_trajectory_matches_jax(jax, jopt, name):
    opt_init, opt_update, get_params = OPTIMIZERS[name](optimizers)
    j_init, j_update, j_get = OPTIMIZERS[name](jopt)
    loss, jloss = feedback_loss(wnp), feedback_loss(jax.numpy)
    traces = []

    @wg.jit
    def update(i, opt_state):           # JAX's tutorial step, compiled
        traces.append(i)
        return opt_update(i, wg.grad(loss)(get_params(opt_state)), opt_state)

    jgrad = jax.jit(jax.grad(jloss))

    def jupdate(i, opt_state):
        return j_update(i, jgrad(j_get(opt_state)), opt_state)
    if not name.startswith("sm3"):      # (JAX's sm3 state holds each shape as ints, which
        jupdate = jax.jit(jupdate)      # jax.jit traces, and then get_params cannot reshape)

    state, jstate = opt_init(start_params()), j_init(start_params())
    first = loss(start_params())
    for i in range(200):
        state, jstate = update(i, state), jupdate(i, jstate)
    assert len(traces) <= 2, len(traces)        # not once per step
    assert isinstance(state, optimizers.OptimizerState)
    # (each library's own gradients differ in the last places; 200 steps on a nonlinear
    # loss grow that to about 1e-9)
    for a, b in zip(flatten(get_params(state))[0], jax.tree.leaves(j_get(jstate))):
        assert_close(a, np.asarray(b), rtol=1e-7, atol=1e-9)
    assert loss(get_params(state)) < 0.8 * first


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_compiled_update_is_the_eager_update(name):
    opt_init, opt_update, get_params = OPTIMIZERS[name](optimizers)
    step = wg.jit(lambda i, g, s: opt_update(i, g, s))
    state = compiled = opt_init(start_params())
    for i, g in enumerate(gradient_sequence(60)):
        state, compiled = opt_update(i, g, state), step(i, g, compiled)
    for a, b in zip(flatten(get_params(compiled))[0], flatten(get_params(state))[0]):
        assert_close(a, b, rtol=1e-13, atol=1e-15)


SCHEDULES = {
    "constant": lambda o: o.constant(0.3),
    "exponential_decay": lambda o: o.exponential_decay(0.1, 30, 0.7),
    "inverse_time_decay": lambda o: o.inverse_time_decay(0.1, 30, 0.7),
    "inverse_time_decay_staircase": lambda o: o.inverse_time_decay(0.1, 30, 0.7, True),
    "polynomial_decay": lambda o: o.polynomial_decay(0.2, 100, 0.01, 0.5),
    "piecewise_constant": lambda o: o.piecewise_constant([10, 100, 200], [1.0, 0.5, 0.1, 0.0]),
    "make_schedule_number": lambda o: o.make_schedule(0.25),
    "make_schedule_function": lambda o: o.make_schedule(lambda i: 1.0 / (i + 1)),
}


@pytest.mark.parametrize("name", SCHEDULES)
def test_schedules_match_jax_eager_and_compiled(jax, jopt, name):
    ours, theirs = SCHEDULES[name](optimizers), SCHEDULES[name](jopt)
    compiled = wg.jit(lambda i: ours(i) + 0.0)
    for i in [0, 1, 9, 10, 11, 29, 30, 31, 99, 100, 101, 150, 200, 201, 1000]:
        expected = float(theirs(i))
        assert_close(ours(i), expected, rtol=1e-14, atol=0)
        assert_close(compiled(i), expected, rtol=1e-14, atol=0)


def test_l2_norm_and_clip_grads_match_jax_and_differentiate(jax, jopt):
    tree = {"a": np.array([3.0, -1.0]), "b": [np.full((2, 2), 0.5), 2.0]}
    assert_close(optimizers.l2_norm(tree), float(jopt.l2_norm(tree)), rtol=1e-15)
    for max_norm in (1.0, 10.0):
        ours = optimizers.clip_grads(tree, max_norm)
        theirs = to_numpy(jax, jopt.clip_grads(tree, max_norm))
        for a, b in zip(flatten(ours)[0], jax.tree.leaves(theirs)):
            assert_close(a, b, rtol=1e-15, atol=0)
    leaves, td = flatten(tree)
    clipped = lambda *a: optimizers.clip_grads(unflatten(td, a), 2.0)
    check_grads(clipped, *leaves)
    jg = jax.grad(lambda t: jopt.l2_norm(jopt.clip_grads(t, 2.0)) ** 2 + t["a"][0])(tree)
    g = wg.grad(lambda t: optimizers.l2_norm(optimizers.clip_grads(t, 2.0)) ** 2
                + t["a"][0])(tree)
    for a, b in zip(flatten(g)[0], jax.tree.leaves(jg)):
        assert_close(a, np.asarray(b), rtol=1e-12, atol=1e-14)


META = {"sgd": lambda o, lr: o.sgd(lr), "momentum": lambda o, lr: o.momentum(lr, 0.9),
        "adam": lambda o, lr: o.adam(lr), "rmsprop": lambda o, lr: o.rmsprop(lr),
        "adam_decay": lambda o, lr: o.adam(o.exponential_decay(lr, 3, 0.5)),
        "sm3": lambda o, lr: o.sm3(lr)}


@pytest.mark.parametrize("name", META)
def test_meta_gradient_through_the_steps_matches_jax_and_differences(jax, jopt, name):
    def run(lib, jnp, grad, lr):
        opt_init, opt_update, get_params = META[name](lib, lr)
        loss = feedback_loss(jnp)
        state = opt_init(start_params())
        for i in range(6):
            state = opt_update(i, grad(loss)(get_params(state)), state)
        return loss(get_params(state))

    ours = lambda lr: run(optimizers, wnp, wg.grad, lr)
    lr = 0.03
    g = wg.grad(ours)(lr)
    jg = float(jax.jit(jax.grad(lambda lr: run(jopt, jax.numpy, jax.grad, lr)))(lr))
    assert_close(g, jg, rtol=1e-9)
    h = 1e-6
    assert_close(g, (ours(lr + h) - ours(lr - h)) / (2 * h), rtol=1e-6)


def test_optimizer_state_saves_and_restores(jax, jopt):
    opt_init, opt_update, get_params = optimizers.adam(0.01)
    grads = gradient_sequence(10)
    state = opt_init(start_params())
    for i in range(5):
        state = opt_update(i, grads[i], state)
    marked = optimizers.unpack_optimizer_state(state)
    assert wg.tree.tree_structure(marked, is_leaf=lambda x: isinstance(
        x, optimizers.JoinPoint)) == wg.tree.tree_structure(start_params())
    restored = optimizers.pack_optimizer_state(pickle.loads(pickle.dumps(marked)))
    assert restored.tree_def == state.tree_def and restored.subtree_defs == state.subtree_defs
    for i in range(5, 10):
        state, restored = opt_update(i, grads[i], state), opt_update(i, grads[i], restored)
    for a, b in zip(flatten(state)[0], flatten(restored)[0]):
        assert np.array_equal(a, b)
    # JAX's unpacked state has the same JoinPoint contents
    jstate = jopt.adam(0.01)[0](start_params())
    jmarked = jopt.unpack_optimizer_state(jstate)
    ours = optimizers.unpack_optimizer_state(opt_init(start_params()))
    assert [len(list(j)[0]) for j in jax.tree.leaves(jmarked)] == \
        [len(o.subtree) for o in flatten(ours)[0]]


def test_optimizer_decorator_lifts_a_new_optimizer_to_pytrees():
    @optimizers.optimizer
    def sign_sgd(step_size):
        step_size = optimizers.make_schedule(step_size)
        return (lambda x0: (x0, 0.0), lambda i, g, s: (s[0] - step_size(i) * wnp.sign(g),
                                                     s[1] + 1.0), lambda s: s[0])
    assert sign_sgd.__name__ == "sign_sgd"
    opt_init, opt_update, get_params = sign_sgd(0.5)
    state = opt_update(0, {"a": np.array([2.0, -3.0]), "b": 0.1},
                       opt_init({"a": np.zeros(2), "b": 1.0}))
    assert get_params(state)["a"].tolist() == [-0.5, 0.5] and get_params(state)["b"] == 0.5
    assert [s[1] for s in flatten(state.packed_state, is_leaf=lambda x: isinstance(
        x, list))[0]] == [1.0, 1.0]                          # each leaf's step count
    assert isinstance(optimizers.sgd(0.1), optimizers.Optimizer)

    @optimizers.optimizer
    def bad(step_size):
        return lambda x: x, lambda i, g, x: (x, x), lambda x: x
    with pytest.raises(TypeError, match="bad's update: the update made a state of structure"):
        bad(0.1).update_fn(0, np.ones(2), bad(0.1).init_fn(np.ones(2)))


def test_optimizer_errors_name_the_function_and_the_shapes():
    opt_init, opt_update, get_params = optimizers.adam(0.1)
    state = opt_init({"w": np.zeros((2, 3)), "b": np.zeros(3)})
    with pytest.raises(TypeError, match=r"adam's update: the gradients have structure "
                                        r"\{'w': \*\}, the parameters"):
        opt_update(0, {"w": np.zeros((2, 3))}, state)
    with pytest.raises(ValueError, match=r"adam's update: the gradient at \['w'\] has shape "
                                         r"\(3, 2\), its parameter \(2, 3\)"):
        opt_update(0, {"w": np.zeros((3, 2)), "b": np.zeros(3)}, state)
    with pytest.raises(TypeError, match="adam's update: opt_state must be the OptimizerState"):
        opt_update(0, {"w": np.zeros((2, 3)), "b": np.zeros(3)}, get_params(state))
    with pytest.raises(TypeError, match="adam's get_params: opt_state must be"):
        get_params({"w": 1.0})
    with pytest.raises(TypeError, match="make_schedule: the step size must be a number"):
        optimizers.sgd([0.1, 0.2])
    with pytest.raises(TypeError, match="make_schedule: the step size must be a number"):
        optimizers.adam("fast")
    with pytest.raises(ValueError, match="piecewise_constant: there must be one value more "
                                         "than there are boundaries, got 2 boundaries and 2"):
        optimizers.piecewise_constant([1, 2], [1.0, 2.0])
    with pytest.raises(ValueError, match=r"piecewise_constant: boundaries and values must be "
                                         r"sequences, got shapes \(1, 1\) and \(2,\)"):
        optimizers.piecewise_constant([[1]], [1.0, 2.0])
    with pytest.raises(TypeError, match="pack_optimizer_state: takes the pytree that "
                                        "unpack_optimizer_state made.*leaf 0 is float"):
        optimizers.pack_optimizer_state({"a": 1.0})


def test_jax_example_libraries_is_reachable_as_jax_names_it():
    import wengert as jax
    assert jax.example_libraries.stax is stax and jax.example_libraries.optimizers is optimizers
    for name in stax.__all__:
        assert hasattr(stax, name), name
    for name in optimizers.__all__:
        assert hasattr(optimizers, name), name


def test_jax_names_are_all_here(jstax, jopt):
    def public(m):
        return {n for n, v in vars(m).items() if not n.startswith("_") and (
            n[0].isupper() or callable(v) and getattr(v, "__module__", "").startswith(
                "jax.example"))}
    assert public(jstax) - set(stax.__all__) == set()
    missing = {n for n in public(jopt) if n not in optimizers.__all__}
    assert missing <= {"InitFn", "UpdateFn", "ParamsFn", "Step", "Schedule", "Array",
                       "Params", "State", "Updates", "NamedTuple", "Any", "Callable"}, missing
