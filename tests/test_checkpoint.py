"""Checkpointing: the same derivatives (to 1e-12) in every mode and order, one node per
checkpointed call, clear errors, the packing primitives, and less memory (tracemalloc)."""
import gc
import math
import tracemalloc

import numpy as np
import pytest

import wengert as wg
import wengert.math as wm
from wengert.checkpointing import _plain_loop
from wengert.primitives.pack import part, place
from wengert.primitives.shape import sum_to
from fd import fd_derivative, assert_close

TIGHT = dict(rtol=1e-12, atol=1e-14)


def block(x, w):
    """Several results, an array among them."""
    for _ in range(20):
        x = wm.tanh(w * x) + 0.1 * x
    return {"x": x, "both": np.array([1.0, 2.0]) * x * w}


def loss(w, b=block):
    out = b(np.array([0.3, -0.2]), w)
    total = lambda a: sum_to(a, shape=())
    return (total(out["x"] * out["both"]) + wm.sin(total(out["x"]))) * w


def loss_checkpointed(w):
    return loss(w, wg.checkpoint(block))


def test_plain_values_just_run_f():
    f = wg.checkpoint(lambda x: x * 2)
    assert f(3.0) == 6.0 and f.__name__ == "<lambda>"


@pytest.mark.parametrize("mode", ["grad", "jvp", "vjp", "grad_grad", "hessian", "taylor"])
def test_derivatives_unchanged_in_every_mode(mode):
    w = 1.3
    run = {
        "grad": lambda f: wg.grad(f)(w),
        "jvp": lambda f: wg.jvp(f, (w,), (0.7,)),
        "vjp": lambda f: wg.vjp(f, w)[1](2.0),
        "grad_grad": lambda f: wg.grad(wg.grad(f))(w),
        "hessian": lambda f: wg.hessian(f)(w),
        "taylor": lambda f: wg.taylor(f, w, 1.0, order=4),
    }[mode]
    assert_close(run(loss_checkpointed), run(loss), **TIGHT)


def test_abstract_trace_through_a_checkpoint():
    graph = wg.trace(wg.grad(loss_checkpointed), 1.0)
    assert_close(graph(1.3), wg.grad(loss)(1.3), **TIGHT)
    assert_close(graph(0.4), wg.grad(loss)(0.4), **TIGHT)


def test_a_checkpointed_call_is_one_node():
    graph = wg.trace(loss_checkpointed, 1.0)
    names = [n.op.name for n in graph.live_nodes()]
    assert names.count("checkpoint[block]") == 1
    assert "tanh" not in names


def test_numpy_scalars_and_0d_arrays_reach_f_as_numpy_scalars():
    # f ran on the node's value, a Python float, and could not index or reshape it as it
    # can a 0-d array or NumPy scalar (or the traced value it gets without the checkpoint)
    import wengert.numpy as wnp
    ones32 = np.ones(3, np.float32)

    def f(x, y):
        return wnp.sum((x * y)[None] * ones32)
    for x in (np.array(0.5), np.float64(0.5)):
        g = wg.grad(wg.checkpoint(f), argnums=(0, 1))(x, 2.0)
        assert g == wg.grad(f, argnums=(0, 1))(x, 2.0) == (6.0, 1.5)
    # a Python float stays one, and weak: x * float32 ones is float32, as without it
    g = lambda x: x * ones32
    assert wg.jacrev(wg.checkpoint(g))(0.5).dtype == wg.jacrev(g)(0.5).dtype == np.float32
    assert wg.jacrev(wg.checkpoint(g))(np.float64(0.5)).dtype == np.float64


def test_integer_arguments_are_held_fixed():
    @wg.checkpoint
    def power_loop(x, n):
        for _ in range(n):
            x = wm.sin(x) + x
        return x
    plain = lambda x: power_loop.__wrapped__(x, 5)
    assert_close(wg.grad(lambda x: power_loop(x, 5))(0.4), wg.grad(plain)(0.4), **TIGHT)


def test_static_argnums_hold_settings_as_jaxs():
    # (a string argument raised "cannot use str 'sin' as a number in a traced computation")
    act = wg.checkpoint(lambda x, kind: wm.tanh(x) if kind == "tanh" else wm.sin(x),
                        static_argnums=1)
    for kind, slope in (("sin", math.cos(0.3)), ("tanh", 1 - math.tanh(0.3) ** 2)):
        assert_close(wg.grad(lambda x: act(x, kind))(0.3), slope, **TIGHT)
    assert_close(wg.hessian(lambda x: act(x, "sin"))(0.3), -math.sin(0.3), **TIGHT)
    assert act(0.3, "sin") == math.sin(0.3)                      # (plain values: f runs)
    power = wg.checkpoint(lambda k, x: x ** k, static_argnums=(-2,))
    assert_close(wg.grad(lambda x: power(3, x))(2.0), 12.0, **TIGHT)
    with pytest.raises(TypeError, match="static arguments \\[1\\] must be hashable"):
        wg.grad(lambda x: act(x, ["sin"]))(0.3)
    with pytest.raises(TypeError, match="static_argnums must be an int or a tuple"):
        wg.checkpoint(lambda x: x, static_argnums="x")


def test_static_argnums_with_another_argument_count_each_call_as_written():
    # (the cache was keyed by the static values alone: a call with one more positional
    # argument ran with the first call's count, dropping it (value of the default, zero
    # derivative), and one with fewer raised a bare StopIteration)
    def layer(x, act, scale=1.0):
        return (wm.tanh(x) if act == "tanh" else wm.sin(x)) * scale
    for calls in (((0.5, "tanh"), (0.5, "tanh", 3.0)), ((0.5, "sin", 3.0), (0.5, "sin"))):
        ck = wg.checkpoint(layer, static_argnums=(1,))
        for x, act, *scale in calls:
            plain = lambda x: layer(x, act, *scale)
            assert ck(x, act, *scale) == plain(x)
            assert_close(wg.grad(lambda x: ck(x, act, *scale))(x),
                         fd_derivative(plain, x), rtol=1e-8)
            if scale:
                assert_close(wg.grad(lambda s: ck(x, act, s))(scale[0]),
                             fd_derivative(lambda s: layer(x, act, s), scale[0]), rtol=1e-8)
            assert_close(wg.grad(lambda x: ck(x, act, scale=2.0))(x),
                         fd_derivative(lambda x: layer(x, act, scale=2.0), x), rtol=1e-8)
    # (a negative index names another argument for another count)
    last = wg.checkpoint(lambda *a: a[-1] ** 2 if a[-2] == "sq" else a[-1], static_argnums=-2)
    assert_close(wg.grad(lambda x: last("sq", x))(3.0), 6.0, **TIGHT)
    assert_close(wg.grad(lambda x: last(x, "sq", 3.0))(1.0), 0.0, **TIGHT)


def test_closing_over_a_traced_value_is_an_error():
    def f(w):
        return wg.checkpoint(lambda x: x * w)(1.0 + w)
    with pytest.raises(ValueError, match="closes over"):
        wg.grad(f)(2.0)


def test_results_must_be_floats():
    with pytest.raises(TypeError, match="must return floats or float arrays, got results "
                                        "of dtype bool"):
        wg.grad(lambda x: x * wg.checkpoint(lambda y: (y > 0.5, y < 0.0))(x)[0])(1.0)
    with pytest.raises(TypeError, match="must return a result"):
        wg.grad(lambda x: x + len(wg.checkpoint(lambda y: ())(x)))(1.0)


def test_integer_results_ride_along_without_a_derivative():
    # (a step counter in checkpointed_loop's state, which its docs allow, was refused:
    # "a checkpointed function must return floats")
    def step(state, k):
        x, i = state
        return x + 0.1 * wm.sin(k * x) * i, i + 1

    def final(k, loop):
        return loop(step, (1.0, 0), 7, k)
    x, i = final(0.8, wg.checkpointed_loop)
    assert (x, i) == final(0.8, _plain_loop) and i == 7
    f = lambda k: final(k, wg.checkpointed_loop)[0]
    plain = lambda k: final(k, _plain_loop)[0]
    assert_close(wg.grad(f)(0.8), fd_derivative(plain, 0.8), rtol=1e-8)
    assert_close(wg.hessian(f)(0.8), fd_derivative(wg.grad(plain), 0.8), rtol=1e-7)
    assert_close(wg.jvp(f, (0.8,), (1.0,))[1], wg.grad(plain)(0.8), **TIGHT)
    assert_close(wg.taylor(f, 0.8, 1.0, order=3), wg.taylor(plain, 0.8, 1.0, order=3),
                 **TIGHT)
    assert_close(wg.vmap(wg.grad(f))(np.array([0.8, 0.9])),
                 [wg.grad(plain)(0.8), wg.grad(plain)(0.9)], **TIGHT)
    assert_close(wg.compile(wg.grad(f), 0.8)(0.8), wg.grad(plain)(0.8), **TIGHT)
    (_, i), (_, di) = wg.jvp(lambda k: final(k, wg.checkpointed_loop), (0.8,), (1.0,))
    assert i == 7 and di == 0.0


# ---- the loop helper ---------------------------------------------------------------------------
def euler(state, k, c):
    """One explicit Euler step of the damped oscillator x'' = -k x - c x'."""
    x, v = state
    h = 0.001
    return (x + h * v, v + h * (-k * x - c * v))


def final_energy(params, n, loop):
    k, c = params
    x, v = loop(euler, (1.0, 0.0), n, k, c)
    return 0.5 * v * v + 0.5 * k * x * x


@pytest.mark.parametrize("n, every", [(0, None), (1, None), (7, 3), (250, None), (250, 1),
                                      (250, 400)])
def test_checkpointed_loop_gradient_is_unchanged(n, every):
    loop = lambda *a: wg.checkpointed_loop(*a, every=every)
    got = wg.grad(lambda p: final_energy(p, n, loop))((2.0, 0.3))
    expected = wg.grad(lambda p: final_energy(p, n, _plain_loop))((2.0, 0.3))
    assert_close(got, expected, **TIGHT)
    assert final_energy((2.0, 0.3), n, loop) == final_energy((2.0, 0.3), n, _plain_loop)


def test_checkpointed_loop_against_finite_differences():
    f = lambda k: final_energy((k, 0.3), 500, wg.checkpointed_loop)
    assert_close(wg.grad(f)(2.0), fd_derivative(f, 2.0), rtol=1e-7)


def test_checkpointed_loop_bad_arguments():
    with pytest.raises(ValueError, match="n must be >= 0"):
        wg.checkpointed_loop(euler, (1.0, 0.0), -1, 1.0, 0.0)
    with pytest.raises(ValueError, match="every must be >= 1"):
        wg.checkpointed_loop(euler, (1.0, 0.0), 5, 1.0, 0.0, every=0)
    # a float count used to meet a bare operator.index TypeError
    with pytest.raises(TypeError, match="checkpointed_loop: n must be an integer, got float"):
        wg.checkpointed_loop(euler, (1.0, 0.0), 2.5, 1.0, 0.0)
    with pytest.raises(TypeError, match="every must be an integer, got float 2.0"):
        wg.checkpointed_loop(euler, (1.0, 0.0), 5, 1.0, 0.0, every=2.0)


def peak_bytes(fn):
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_checkpointing_cuts_the_peak_memory_of_a_long_loop():
    n = 2500
    plain = wg.grad(lambda p: final_energy(p, n, _plain_loop))
    checkpointed = wg.grad(lambda p: final_energy(p, n, wg.checkpointed_loop))
    assert_close(checkpointed((2.0, 0.3)), plain((2.0, 0.3)), **TIGHT)
    without, with_ = peak_bytes(lambda: plain((2.0, 0.3))), peak_bytes(
        lambda: checkpointed((2.0, 0.3)))
    # measured about 20x; a generous bound keeps the test independent of the machine
    assert with_ * 5 < without, (with_, without)


# ---- packing several results into one node --------------------------------------------------------
def test_part_and_place_are_each_others_transpose():
    rng = np.random.default_rng(3)
    x, g = rng.normal(size=6), rng.normal(size=(2, 1))
    lhs = np.vdot(part(x, start=2, stop=4, shape=(2, 1)), g)     # <part x, g> = <x, place g>
    assert lhs == pytest.approx(np.vdot(x, place(g, start=2, size=6)))
    f = lambda x: wm.sin(part(x, start=1, stop=3, shape=(2,)))
    assert_close(wg.jacrev(f)(x), wg.jacfwd(f)(x), **TIGHT)
    assert_close(wg.jacrev(f)(x)[0], [0, np.cos(x[1]), 0, 0, 0, 0], **TIGHT)
    h = lambda y: place(wm.exp(y), start=1, size=4)
    assert_close(wg.jacrev(h)(0.5), [0, np.exp(0.5), 0, 0], **TIGHT)


def test_an_argument_updated_in_place_is_the_same_on_every_run():
    # f was given the graph's stored array: x *= 2 changed it, and the sweep's run of f
    # again started from 2x (the gradient was 2cos(4x), and x's own term saw 2x)
    def f(x):
        x *= 2.0
        return np.sum(np.sin(x))
    x = np.array([0.3, 0.7])
    expected = 2 * np.cos(2 * x) + 2 * x
    for ckpt in (wg.checkpoint(f), f):
        got = wg.grad(lambda x: ckpt(x) + np.sum(x ** 2))(x.copy())
        np.testing.assert_allclose(got, expected, rtol=1e-14)
    np.testing.assert_allclose(wg.jacfwd(wg.checkpoint(f))(x.copy()), 2 * np.cos(2 * x))


def test_each_output_keeps_its_own_dtype():
    # the leaves are packed into one array of the common dtype: a float32 leaf beside a
    # float64 one came back float64, and so did its Jacobian block
    f = lambda v: (np.sin(v), np.float64(2.0) * v[0])
    x = np.array([0.3, 0.7], np.float32)
    for g in (f, wg.checkpoint(f)):
        out = wg.vjp(g, x)[0]
        assert (out[0].dtype, np.result_type(out[1])) == (np.float32, np.float64)
        assert wg.jacrev(g)(x)[0].dtype == np.float32
    out = wg.vjp(wg.checkpoint(lambda v: (v * 1j, v[0])), x)[0]   # complex pack, real leaf
    assert out[0].dtype == np.complex64 and np.result_type(out[1]) == np.float32


def test_keyword_arguments():
    """Arguments by keyword, traced ones too, differentiate as by position."""
    def block(x, scale=1.0, shift=0.0):
        return wm.tanh(x * scale) + shift * x

    def loss(x, s):
        return wg.checkpoint(block)(x, scale=s, shift=0.5)
    got = wg.grad(loss, argnums=(0, 1))(0.5, 2.0)
    want = wg.grad(lambda x, s: block(x, scale=s, shift=0.5), argnums=(0, 1))(0.5, 2.0)
    assert_close(got, want, rtol=1e-15, atol=0)
    # d/dx = s sech²(sx) + 0.5, d/ds = x sech²(sx)
    sech2 = 1 / np.cosh(1.0) ** 2
    assert_close(got, (2.0 * sech2 + 0.5, 0.5 * sech2), rtol=1e-14)


def test_compiled_checkpointed_loop_keeps_about_sqrt_n_states():
    """Compiled, the forward part calls each segment as one function and keeps only its
    output; the backward part records each segment again and deletes its arrays once
    used, so the peak holds O(√n) states, not n (nor 2n as before)."""
    import wengert.numpy as wnp
    x = np.linspace(0.0, 1.0, 2000)
    step = lambda x: x + 0.01 * wnp.sin(x)
    n = 100
    checkpointed = wg.compile(wg.grad(lambda x: wnp.sum(wg.checkpointed_loop(step, x, n))), x)
    plain = wg.compile(wg.grad(lambda x: wnp.sum(_plain_loop(step, x, n))), x)
    peaks = []
    for g in (checkpointed, plain):
        g(x)
        tracemalloc.start()
        got = g(x)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert_close(got, wg.grad(lambda x: wnp.sum(_plain_loop(step, x, n)))(x), rtol=1e-12)
    assert peaks[0] < 4 * math.isqrt(n) * x.nbytes < peaks[1]
