"""JAX's top-level names (wengert.jax_compat, dtypes, debug, remat): what each means on one
CPU, its errors, and a typical JAX training script run unchanged against JAX itself."""
import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from wengert.errors import ConcretizationError


# ---- config and the debugging flags ----------------------------------------------------
def test_config_update_and_reads():
    wg.config.update("jax_enable_x64", True)
    assert wg.config.jax_enable_x64 is True and wg.config.x64_enabled
    wg.config.update("jax_platform_name", "cpu")
    wg.config.update("jax_platforms", "cuda,cpu")          # JAX falls back to the CPU
    wg.config.update("jax_default_matmul_precision", "highest")     # no effect, silent
    with pytest.raises(ValueError, match="CPU only"):
        wg.config.update("jax_platforms", "tpu")
    with pytest.raises(AttributeError, match="Unrecognized"):
        wg.config.update("enable_x64", True)
    with pytest.raises(AttributeError, match="Unrecognized"):
        wg.config.jax_no_such_setting
    with pytest.warns(UserWarning, match="not a setting wengert knows"):
        wg.config.update("jax_some_future_flag", 3)
    assert wg.config.jax_some_future_flag == 3
    with pytest.raises(AttributeError):
        wg.config.jax_enable_x64 = False


def test_x64_false_is_stored_with_a_warning_and_changes_no_dtype():
    with pytest.warns(UserWarning, match="float64"):
        with wg.enable_x64(False):
            assert wg.config.jax_enable_x64 is False
            assert wnp.ones(2).dtype == np.float64       # numerics unchanged
    assert wg.config.jax_enable_x64 is True


def test_disable_jit_runs_functions_jitted_before_and_inside_eagerly():
    seen = []

    @wg.jit
    def f(x):
        seen.append(type(x))
        return x * 2.0
    assert f(1.0) == 2.0 and f(1.0) == 2.0
    traced = len(seen)                                     # traced once
    with wg.disable_jit():
        assert f(3.0) == 6.0 and f(3.0) == 6.0
        g = wg.jit(lambda x: seen.append("g") or x + 1)
        assert g(1.0) == 2.0 and g(1.0) == 2.0
        assert seen[traced:] == [float, float, "g", "g"]    # values, on every call
    n = len(seen)
    assert f(3.0) == 6.0 and f(4.0) == 8.0 and len(seen) == n     # compiled again after it
    wg.config.update("jax_disable_jit", True)
    try:
        assert f(5.0) == 10.0 and seen.count(float) == 3
    finally:
        wg.config.update("jax_disable_jit", False)


def test_debug_nans_and_infs():
    sub = wg.jit(lambda x, y: x - y)        # float code: Python's inf - inf raises nothing
    with wg.debug_nans():
        with pytest.raises(FloatingPointError, match="nan in the result"):
            sub(np.inf, np.inf)
        with pytest.raises(FloatingPointError, match="invalid value"):
            wg.grad(lambda x: wnp.sum(wnp.log(x)))(np.array([1.0, -1.0]))
        with pytest.raises(FloatingPointError, match="invalid value"):
            wg.jit(lambda x: wnp.sqrt(x))(np.array([-1.0, 2.0]))
        assert sub(3.0, 1.0) == 2.0
    assert np.isnan(sub(np.inf, np.inf))                  # off again
    assert np.geterr()["invalid"] != "raise"
    with wg.debug_infs():
        with pytest.raises(FloatingPointError, match="divide by zero"):
            wg.jit(lambda x: 1.0 / x)(np.zeros(2))
    with np.errstate(divide="ignore"):
        assert wg.jit(lambda x: 1.0 / x)(np.zeros(2))[0] == np.inf


# ---- devices -------------------------------------------------------------------------------
def test_devices_and_processes():
    assert wg.devices() == wg.local_devices() == [wg.devices("cpu")[0]]
    assert wg.devices()[0].platform == "cpu"
    assert (wg.device_count(), wg.local_device_count(), wg.process_index(),
            wg.process_count(), wg.default_backend()) == (1, 1, 0, 1, "cpu")
    with pytest.raises(ValueError, match="CPU"):
        wg.devices("gpu")


def test_device_put_copies_and_device_get_refuses_traced_values():
    x = np.arange(3.0)
    tree = wg.device_put({"x": x, "n": 2.0}, wg.devices()[0])
    x[0] = 9.0
    assert tree["x"][0] == 0.0 and isinstance(tree["n"], np.ndarray)
    assert wg.device_put(x, may_alias=True) is x
    with pytest.raises(TypeError, match="device"):
        wg.device_put(x, "gpu:0")
    with pytest.raises(TypeError, match="str"):
        wg.device_put("text")
    host = wg.device_get(tree)
    host["x"][1] = 7.0
    assert tree["x"][1] == 1.0
    with pytest.raises(ConcretizationError, match="traced"):
        wg.grad(lambda v: wg.device_get(v) * v)(1.0)
    assert wg.block_until_ready(tree) is tree


# ---- types ---------------------------------------------------------------------------------
def test_array_isinstance_and_shape_dtype_struct():
    assert isinstance(np.ones(2), wg.Array) and isinstance(np.float32(1), wg.Array)
    assert not isinstance(1.0, wg.Array) and not isinstance("a", wg.Array)
    assert wg.jit(lambda x: x * isinstance(x, wg.Array))(np.ones(2)).tolist() == [1.0, 1.0]
    s = wg.ShapeDtypeStruct((2, 3), np.float32, weak_type=False)
    assert (s.shape, s.dtype, s.ndim, s.size, s.weak_type) == ((2, 3), np.float32, 2, 6,
                                                               False)
    assert wg.eval_shape(lambda a: a.T, s) == wg.ShapeDtypeStruct((3, 2), np.float32)
    assert wg.eval_shape(lambda a: a.T, s) != wg.ShapeDtypeStruct((3, 2), np.float64)
    assert wg.compile(lambda a: a * 2, s)(np.ones((2, 3), np.float32)).dtype == np.float32
    with pytest.raises(TypeError, match="ShapeDtype: expected a Sharding"):
        wg.ShapeDtypeStruct((2,), float, sharding="x")     # (the one device's are taken:
    mesh = wg.make_mesh((1,), ("x",))                      #  tests/test_sharding.py)
    assert wg.ShapeDtypeStruct((2,), float, sharding=wg.NamedSharding(
        mesh, wg.P("x"))).sharding.spec == wg.P("x")
    assert wg.dtypes.canonicalize_dtype(np.int32) == np.int32
    assert wg.dtypes.float0.itemsize == 0 and wg.float0 is wg.dtypes.float0


# ---- transformations ------------------------------------------------------------------------
def test_remat_policies_and_static_arguments():
    f = lambda x, n: wnp.sin(x) ** n                     # noqa: E731
    expected = wg.grad(f)(0.7, 3)
    for policy in (None, wg.checkpoint_policies.nothing_saveable,
                   wg.checkpoint_policies.dots_with_no_batch_dims_saveable,
                   wg.checkpoint_policies.save_any_names_but_these("a")):
        g = wg.remat(f, policy=policy, prevent_cse=False, static_argnums=1)
        assert wg.grad(g)(0.7, 3) == pytest.approx(expected, rel=1e-15)
    by_name = wg.checkpoint(lambda x, *, n: wnp.sin(x) ** n, static_argnames="n")
    assert wg.grad(lambda x: by_name(x, n=3))(0.7) == pytest.approx(expected, rel=1e-15)
    by_name2 = wg.checkpoint(f, static_argnames=("n",))
    assert wg.grad(by_name2)(0.7, 3) == pytest.approx(expected, rel=1e-15)
    assert wg.grad(lambda x: by_name2(x, n=3))(0.7) == pytest.approx(expected, rel=1e-15)
    assert wg.remat(f, policy=wg.checkpoint_policies.everything_saveable) is f
    with pytest.raises(TypeError, match="policy"):
        wg.remat(f, policy="dots")
    with pytest.raises(TypeError, match="namespace"):
        wg.checkpoint_policies()


def test_custom_gradient():
    @wg.custom_gradient
    def scaled(x, y):
        return x * y, lambda g: (10 * g * y, 100 * g * x)
    assert wg.grad(scaled, argnums=(0, 1))(2.0, 3.0) == (30.0, 200.0)
    assert scaled(2.0, 3.0) == 6.0

    @wg.custom_gradient
    def one(x):
        return wnp.sin(x), lambda g: g * wnp.cos(x)      # one cotangent, not in a tuple
    x = np.array([0.3, 1.2])
    np.testing.assert_allclose(wg.grad(lambda x: wnp.sum(one(x)))(x), np.cos(x))
    # its vjp differentiates again: d²/dx² sin(x)² = 2 cos 2x, against differences too
    d = wg.grad(lambda x: one(x) ** 2)
    h = 1e-6
    assert wg.grad(d)(0.3) == pytest.approx(2 * np.cos(0.6), rel=1e-12)
    assert wg.grad(d)(0.3) == pytest.approx((d(0.3 + h) - d(0.3 - h)) / (2 * h), rel=1e-8)

    @wg.custom_gradient
    def wrong(x):
        return x
    with pytest.raises(TypeError, match="value, vjp"):
        wg.grad(wrong)(1.0)


def test_linear_transpose_is_the_transpose():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(4, 3))
    t = wg.linear_transpose(lambda x: {"y": A @ x, "z": 2 * x}, np.zeros(3))
    ct = {"y": rng.normal(size=4), "z": rng.normal(size=3)}
    (xt,) = t(ct)
    np.testing.assert_allclose(xt, A.T @ ct["y"] + 2 * ct["z"], rtol=1e-14)
    t2 = wg.linear_transpose(lambda a, b: a + b, 1.0, wg.ShapeDtypeStruct((), np.float64))
    assert t2(3.0) == (3.0, 3.0)
    with pytest.raises(ValueError, match="not linear"):
        wg.linear_transpose(lambda x: x + 1.0, 1.0)


def test_closure_convert_hoists_traced_values():
    def loss(w):
        f, consts = wg.closure_convert(lambda x: wnp.sin(w * x) * w, 1.0)
        assert len(consts) == 1
        return f(2.0, *consts)
    assert wg.grad(loss)(0.5) == pytest.approx(2 * 0.5 * np.cos(1.0) + np.sin(1.0), rel=1e-14)
    f, consts = wg.closure_convert(lambda x: x * 2, 1.0)
    assert consts == [] and f(3.0) == 6.0


def test_make_jaxpr():
    graph = wg.make_jaxpr(lambda x, y: wnp.sin(x) * y)(1.0, np.ones(3))
    text = str(graph)
    assert "sin(x)" in text and "f64[3]" in text
    graph, shape = wg.make_jaxpr(lambda x, n: x ** n, static_argnums=1, return_shape=True)(
        np.ones((2, 2), np.float32), 3)
    assert shape == wg.ShapeDtypeStruct((2, 2), np.float32)
    assert "n=3" in str(graph) or "powi" in str(graph)
    with pytest.raises(ValueError, match="axis_env"):
        wg.make_jaxpr(abs, axis_env=[("i", 2)])


def test_pmap_is_vmap_over_the_leading_axis():
    xs = np.arange(6.0).reshape(3, 2)
    out = wg.pmap(lambda x, w: x @ w, axis_name="batch", in_axes=(0, None))(xs, np.ones(2))
    np.testing.assert_array_equal(out, xs.sum(axis=1))
    out = wg.pmap(lambda x, p: x ** p, static_broadcasted_argnums=(1,))(xs, 2)
    np.testing.assert_array_equal(out, xs ** 2)
    with pytest.raises(ValueError, match="CPU"):
        wg.pmap(abs, backend="gpu")


def test_pure_callback_eager_compiled_vmapped_and_not_differentiable():
    calls = []

    def host(x):
        calls.append(np.shape(x))
        return np.cumsum(x, axis=-1)
    spec = wg.ShapeDtypeStruct((3,), np.float64)
    x = np.array([1.0, 2.0, 3.0])
    assert wg.pure_callback(host, spec, x).tolist() == [1.0, 3.0, 6.0]
    f = wg.jit(lambda x: wg.pure_callback(host, spec, x * 2) + 1)
    assert f(x).tolist() == [3.0, 7.0, 13.0] and f(x).tolist() == [3.0, 7.0, 13.0]
    calls.clear()
    xs = np.arange(6.0).reshape(2, 3)
    seq = wg.vmap(lambda x: wg.pure_callback(host, spec, x, vmap_method="sequential"))(xs)
    assert calls == [(3,), (3,)]
    calls.clear()
    batched = wg.vmap(lambda x: wg.pure_callback(host, spec, x, vmap_method="expand_dims"))(xs)
    assert calls == [(2, 3)]
    np.testing.assert_array_equal(seq, np.cumsum(xs, axis=1))
    np.testing.assert_array_equal(batched, seq)
    with pytest.raises(NotImplementedError, match="vmap_method"):
        wg.vmap(lambda x: wg.pure_callback(host, spec, x))(xs)
    with pytest.raises(TypeError, match="no derivative"):
        wg.grad(lambda x: wnp.sum(wg.pure_callback(host, spec, x)))(x)
    # a derivative that does not pass through it is fine
    assert wg.grad(lambda s: s * wnp.sum(wg.pure_callback(host, spec, x)))(2.0) == 10.0
    with pytest.raises(ValueError, match="shape"):
        wg.pure_callback(host, wg.ShapeDtypeStruct((2,), np.float64), x)
    with pytest.raises(ValueError, match="vmap_method"):
        wg.pure_callback(host, spec, x, vmap_method="parallel")


def test_names_and_scopes_change_nothing():
    f = lambda x: x * 2                                    # noqa: E731
    assert wg.named_call(f, name="double") is f
    with wg.named_scope("block"), wg.ensure_compile_time_eval():
        assert wg.jit(f)(2.0) == 4.0
    with pytest.raises(TypeError, match="string"):
        with wg.named_scope(3):
            pass


def test_debug_print_and_callback(capsys):
    wg.grad(lambda x: wg.debug.print("x={x:.2f} y={}", x * 2, x=x) or x * x)(1.5)
    assert capsys.readouterr().out == "x=1.50 y=3.0\n"
    f = wg.jit(lambda x: wg.debug.print("traced {}", x) or x + 1)
    f(np.ones(2))
    f(np.ones(2))
    assert capsys.readouterr().out == "traced Traced<f64[2]>\n"     # once, when traced
    seen = []
    with pytest.warns(UserWarning, match="not called"):
        wg.jit(lambda x: wg.debug.callback(seen.append, x) or x)(1.0)
    with wg.disable_jit():
        wg.jit(lambda x: wg.debug.callback(seen.append, x) or x)(1.0)
    assert seen == [1.0]


# ---- a JAX script, unchanged ------------------------------------------------------------
SCRIPT = '''
jax.config.update("jax_enable_x64", True)
print(jax.devices(), jax.default_backend())

def init_mlp(key, sizes):
    params = []
    keys = jax.random.split(key, len(sizes) - 1)
    for k, (m, n) in zip(keys, zip(sizes[:-1], sizes[1:])):
        wk, bk = jax.random.split(k)
        params.append({"w": jax.nn.initializers.glorot_normal()(wk, (m, n)),
                       "b": jax.nn.initializers.normal(0.1)(bk, (n,))})
    return params

def forward(params, x):
    *hidden, last = params
    for i, layer in enumerate(hidden):
        x = x @ layer["w"] + layer["b"]
        x = jax.nn.relu(x) if i % 2 == 0 else jax.nn.gelu(x, approximate=True)
    return jax.nn.log_softmax(x @ last["w"] + last["b"])

def loss(params, x, labels):
    logp = forward(params, x)
    return -jnp.mean(jnp.sum(jax.nn.one_hot(labels, 3) * logp, axis=-1))

@jax.jit
def step(params, x, labels):
    value, grads = jax.value_and_grad(loss)(params, x, labels)
    return value, jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)

params = init_mlp(jax.random.PRNGKey(0), [4, 16, 16, 3])
losses = []
for _ in range(5):
    value, params = step(params, x, labels)
    losses.append(float(value))
params = jax.block_until_ready(params)
'''


def _run(jax_module, jnp_module, draws, x, labels):
    """The script with jax.random's draws in the initializers replaced by `draws` (shared
    NumPy arrays, since wengert's random numbers are not JAX's)."""
    inits = jax_module.nn.initializers
    originals = inits.glorot_normal, inits.normal
    it = iter(draws or ())

    def drawn(*args, **kwargs):
        return lambda key, shape, dtype=None: jnp_module.asarray(next(it))
    namespace = {"jax": jax_module, "jnp": jnp_module, "x": x, "labels": labels}
    try:
        if draws is not None:
            inits.glorot_normal = inits.normal = drawn
        exec(SCRIPT, namespace)
    finally:
        inits.glorot_normal, inits.normal = originals
    return namespace["losses"], namespace["params"]


def test_a_jax_training_script_runs_unchanged_and_agrees_with_jax(capsys, jax):
    rng = np.random.default_rng(0)
    x, labels = rng.normal(size=(32, 4)), rng.integers(0, 3, size=32)
    # first as written, with wengert's own random draws
    losses, params = _run(wg, wnp, None, x, labels)
    assert losses[-1] < losses[0] and all(np.isfinite(losses))
    assert capsys.readouterr().out.startswith("[CpuDevice(id=0)] cpu")
    # then with the draws shared, against JAX
    sizes = [4, 16, 16, 3]
    draws = []
    for m, n in zip(sizes[:-1], sizes[1:]):
        draws += [rng.normal(size=(m, n)) * np.sqrt(2 / (m + n)), 0.1 * rng.normal(size=n)]
    ours, our_params = _run(wg, wnp, draws, x, labels)
    theirs, their_params = _run(jax, jax.numpy, draws, x, labels)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    for a, b in zip(wg.tree.leaves(our_params), jax.tree_util.tree_leaves(their_params)):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-9, atol=1e-12)
