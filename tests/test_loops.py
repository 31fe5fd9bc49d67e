"""wg.scan and wg.fori_loop: the values of the Python loops they stand for, derivatives
against central differences (first and second order) and against the unrolled loop and
closed forms, every transformation (jvp, vjp, vmap, compile, Taylor mode, nesting), one
node per loop whatever its length, and clear errors."""
import os
import shutil

import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
import wengert.scipy.special as wsp
from fd import assert_close, check_complex_grads, check_grads, fd_derivative

TIGHT = dict(rtol=1e-12, atol=1e-13)
RNG = np.random.default_rng(31)
XS = RNG.normal(size=(5, 3))
W0 = RNG.normal(size=(3, 3)) * 0.5
H0 = RNG.normal(size=3)


# --- one model, as a scan and as the Python loop it stands for -------------------------------
def rnn_scan(W, h0, xs, reverse=False):
    def step(h, x):
        h = wnp.tanh(W @ h + x)
        return h, {"sq": (h * h).sum(), "h": h}
    h, ys = wg.scan(step, h0, xs, reverse=reverse)
    return (h * h).sum() + ys["sq"].sum() + (ys["h"] * xs).sum()


def rnn_loop(W, h0, xs, reverse=False):
    h, total = h0, 0.0
    order = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
    for i in order:
        h = wnp.tanh(W @ h + xs[i])
        total = total + (h * h).sum() + (h * xs[i]).sum()
    return (h * h).sum() + total


@pytest.mark.parametrize("reverse", [False, True])
def test_value_is_the_loops(reverse):
    assert_close(rnn_scan(W0, H0, XS, reverse), rnn_loop(W0, H0, XS, reverse), **TIGHT)
    traced = wg.grad(lambda W: rnn_scan(W, H0, XS, reverse) * 1.0, has_aux=False)
    assert np.all(np.isfinite(traced(W0)))


def test_plain_values_stack_ys_as_jax_does():
    carry, ys = wg.scan(lambda c, x: (c + x, (c, {"twice": 2 * x})), 0.0,
                        np.array([1.0, 2.0, 3.0]), reverse=True)
    assert carry == 6.0
    assert_close(ys[0], [5.0, 3.0, 0.0], **TIGHT)            # ys keep xs's order
    assert_close(ys[1]["twice"], [2.0, 4.0, 6.0], **TIGHT)


def test_plain_values_stack_ys_in_the_traced_loops_dtype():
    # The first y is the Python float 0.0, weak: it used to make the float32 stack float64
    step = lambda c, x: (c + x, (c, 2 * c))
    xs = np.arange(4, dtype=np.float32)
    carry, ys = wg.scan(step, 0.0, xs)
    traced = wg.compile(lambda xs: wg.scan(step, 0.0, xs))(xs)
    for got, want in zip(ys, traced[1]):
        assert got.dtype == want.dtype == np.float32
        assert_close(got, want, **TIGHT)
    assert_close(ys[0], [0.0, 0.0, 1.0, 3.0], **TIGHT)
    # a NumPy float64 y is strong, as in NumPy: then the stack is float64
    ys = wg.scan(lambda c, x: (c + x, c), np.float64(0.0), xs)[1]
    assert ys.dtype == np.float64


@pytest.mark.parametrize("reverse", [False, True])
def test_first_and_second_order_against_differences(reverse):
    check_grads(lambda W, h0, xs: rnn_scan(W, h0, xs, reverse), W0, H0, XS, order=2)


@pytest.mark.parametrize("reverse", [False, True])
def test_derivatives_equal_the_unrolled_loops(reverse):
    for argnums in (0, 1, 2):
        got = wg.grad(rnn_scan, argnums)(W0, H0, XS, reverse)
        want = wg.grad(rnn_loop, argnums)(W0, H0, XS, reverse)
        assert_close(got, want, **TIGHT)
    f = lambda w: rnn_scan(w.reshape(3, 3), H0, XS, reverse)
    g = lambda w: rnn_loop(w.reshape(3, 3), H0, XS, reverse)
    assert_close(wg.hessian(f)(W0.ravel()), wg.hessian(g)(W0.ravel()), rtol=1e-10,
                 atol=1e-12)
    assert_close(wg.jacfwd(f)(W0.ravel()), wg.jacrev(g)(W0.ravel()), **TIGHT)


def test_ys_derivatives_against_differences():
    """Every stacked y, a pytree of them, and the carry: the whole output's Jacobian."""
    def f(v, xs):
        (a, b), ys = wg.scan(lambda c, x: ((c[0] * v + x, wnp.sin(c[1]) + x[0]),
                                           {"u": c[0] * c[1], "v": wnp.exp(-x * v)}),
                             (np.ones(2), 0.3), xs)
        return a, b, ys
    check_grads(f, np.array([0.7, -0.4]), RNG.normal(size=(4, 2)), order=2)


def test_fori_loop_closed_form_to_third_order():
    power = lambda x: wg.fori_loop(0, 4, lambda i, p: p * x, x)        # x ** 5
    x = 1.3
    assert_close(power(x), x ** 5, **TIGHT)
    d1, d2, d3 = wg.grad(power), wg.grad(wg.grad(power)), wg.grad(wg.grad(wg.grad(power)))
    assert_close([d1(x), d2(x), d3(x)], [5 * x ** 4, 20 * x ** 3, 60 * x ** 2], **TIGHT)
    taylor = wg.derivatives(power, order=4)(x)                      # Taylor mode (by JVP)
    assert_close(taylor, [x ** 5, 5 * x ** 4, 20 * x ** 3, 60 * x ** 2, 120 * x],
                 rtol=1e-11, atol=1e-11)
    assert_close(wg.jvp(power, (x,), (1.0,))[1], 5 * x ** 4, **TIGHT)


def test_fori_loop_reads_its_index():
    f = lambda x: wg.fori_loop(2, 6, lambda i, c: c * x + i, 1.0)
    plain = lambda x: ((((x + 2) * x + 3) * x + 4) * x + 5)
    assert_close(f(0.8), plain(0.8), **TIGHT)
    assert_close(wg.grad(f)(0.8), fd_derivative(plain, 0.8), rtol=1e-8)
    assert wg.fori_loop(3, 3, lambda i, c: c + 1.0, 2.0) == 2.0         # no steps
    assert wg.fori_loop(5, 2, lambda i, c: c + 1.0, 2.0) == 2.0


def _horner(lo, n):
    """The polynomial in x that ``fori_loop(lo, n, lambda i, c: c * x + i, 1.0)`` is."""
    c = np.poly1d([1.0])
    for i in range(lo, n):
        c = c * np.poly1d([1.0, 0.0]) + i
    return c


@pytest.mark.parametrize("bounds", [(0, 4), (2, 7), (5, 5), (6, 2)])
def test_fori_loop_bounds_traced_without_values(bounds):
    # bounds that are arguments of wg.jit: a while_loop counting i, as JAX lowers it
    lo, n = bounds
    f = lambda x, lo, n: wg.fori_loop(lo, n, lambda i, c: c * x + i, 1.0)
    x = 0.7
    p = _horner(lo, n)
    for lo_, n_ in [(lo, n), (np.int64(lo), np.int32(n))]:  # Python ints: weak floats
        assert_close(wg.jit(f)(x, lo_, n_), p(x), **TIGHT)
    assert_close(wg.jit(wg.jacfwd(f))(x, lo, n), p.deriv()(x), **TIGHT)
    assert_close(wg.jit(wg.jacfwd(wg.jacfwd(f)))(x, lo, n), p.deriv(2)(x), **TIGHT)
    assert_close(wg.jit(wg.jacfwd(f))(x, lo, n), fd_derivative(p, x), rtol=1e-8, atol=1e-10)
    # each example of a vmap over the bounds runs its own number of steps
    xs, ns = np.array([0.3, 0.7, 1.1]), np.array([0, 3, 6])
    assert_close(wg.jit(wg.vmap(f, in_axes=(0, None, 0)))(xs, 0, ns),
                 [_horner(0, k)(a) for a, k in zip(xs, ns)], **TIGHT)
    with pytest.raises(ValueError, match="reverse-mode"):
        wg.jit(wg.grad(f))(x, lo, n)


def test_fori_loop_traced_bounds_against_jax(jax):
    body = lambda x: (lambda i, c: c * x + i * i)
    ours = wg.jit(lambda x, n: wg.fori_loop(1, n, body(x), x))
    theirs = jax.jit(lambda x, n: jax.lax.fori_loop(1, n, body(x), x))
    for n in (1, 2, 5):
        assert_close(ours(0.9, n), float(theirs(0.9, n)), **TIGHT)
        assert_close(wg.jit(wg.jacfwd(lambda x, n: wg.fori_loop(1, n, body(x), x)))(0.9, n),
                     float(jax.jacfwd(lambda x: theirs(x, n))(0.9)), **TIGHT)


def test_closed_over_values_differentiate():
    """Weights the body closes over (a traced value of the enclosing grad) become the
    loop's arguments, so their derivatives flow; a global array stays a constant."""
    f = lambda W: wg.scan(lambda h, x: (wnp.tanh(W @ h + x), None), H0, XS)[0].sum()
    g = lambda W: rnn_loop_h(W, H0, XS).sum()
    assert_close(wg.grad(f)(W0), wg.grad(g)(W0), **TIGHT)
    graph = wg.trace(f, W0)
    (loop,) = [n for n in graph.nodes if n.op.name.startswith("scan[")]
    assert loop.op.n_consts == 1 and loop.args[0] is graph.inputs[0]


def rnn_loop_h(W, h, xs):
    for x in xs:
        h = wnp.tanh(W @ h + x)
    return h


def test_one_node_whatever_the_length():
    step = lambda s, _: ((s[0] + 1e-3 * s[1], s[1] - 1e-3 * 2.0 * s[0]), None)
    for n in (10, 10_000):
        f = lambda x: wg.scan(step, (x, 0.0), length=n)[0][0]
        graph = wg.trace(wg.grad(f), 1.0)
        assert len(graph.nodes) < 40, len(graph.nodes)
        compiled = wg.compile(wg.grad(f), 1.0)
        assert_close(compiled(1.0), wg.grad(f)(1.0), **TIGHT)


def test_long_loop_reverse_mode():
    """200,000 steps: the loop is iterative, and reverse mode keeps one carry per step."""
    n = 200_000
    f = lambda k: wg.scan(lambda c, _: (c + 1e-5 * wnp.sin(k * c), None), 0.5, length=n)[0]
    assert_close(wg.grad(f)(1.5), fd_derivative(f, 1.5, 1e-5), rtol=1e-6)


def test_compile_and_eager_agree():
    f = lambda W, xs: rnn_scan(W, H0, xs)
    compiled = wg.compile(f, W0, XS)
    assert_close(compiled(W0, XS), rnn_loop(W0, H0, XS), **TIGHT)
    assert "scan" in compiled.source and compiled.source.count("\n") < 12
    grad = wg.compile(wg.grad(f), W0, XS)
    assert_close(grad(W0, XS), wg.grad(rnn_loop)(W0, H0, XS), **TIGHT)


def test_vmap_over_xs_init_and_closed_over_values():
    batch = np.stack([XS, 2 * XS, -XS])
    assert_close(wg.vmap(lambda xs: rnn_scan(W0, H0, xs))(batch),
                 [rnn_loop(W0, H0, xs) for xs in batch], **TIGHT)
    h0s = RNG.normal(size=(4, 3))
    assert_close(wg.vmap(lambda h0: rnn_scan(W0, h0, XS))(h0s),
                 [rnn_loop(W0, h0, XS) for h0 in h0s], **TIGHT)
    Ws = np.stack([W0, -W0, 0.5 * W0])
    per_example = wg.vmap(wg.grad(rnn_scan), in_axes=(0, None, None))(Ws, H0, XS)
    assert_close(per_example, [wg.grad(rnn_loop)(W, H0, XS) for W in Ws], **TIGHT)
    assert_close(wg.grad(lambda W: wg.vmap(lambda xs: rnn_scan(W, H0, xs))(batch).sum())(W0),
                 sum(wg.grad(rnn_loop)(W0, H0, xs) for xs in batch), **TIGHT)


def test_nested_loops_and_a_derivative_inside_the_body():
    xs = RNG.normal(size=(4, 2))

    def nested(w):
        inner = lambda v, x: wg.scan(lambda c, xi: (wnp.sin(c * v + xi), c), 0.1, x)[0]
        return wg.scan(lambda c, x: (c + inner(w * c, x), None), 0.2, xs)[0]

    def nested_loop(w):
        c = 0.2
        for x in xs:
            ci = 0.1
            for xi in x:
                ci = wnp.sin(ci * (w * c) + xi)
            c = c + ci
        return c
    for k in range(3):
        assert_close(nested(0.7), nested_loop(0.7), **TIGHT)
        nested, nested_loop = wg.grad(nested), wg.grad(nested_loop)

    def inner_grad(w):
        slope = lambda c: wg.grad(lambda u: wnp.sin(u * w))(c)
        return wg.scan(lambda c, x: (c + slope(c) * x, None), 0.3, xs[:, 0])[0]
    check_grads(inner_grad, np.array(0.9), order=2)


def test_loops_with_the_same_name_stay_apart():
    xs = np.ones(3)
    times = lambda w: wg.scan(lambda c, x: (c + wg.scan(lambda d, y: (d * w, None), c,
                                                         xs)[0], None), 1.0, xs)[0]
    plus = lambda w: wg.scan(lambda c, x: (c + wg.scan(lambda d, y: (d + w, None), c,
                                                        xs)[0], None), 1.0, xs)[0]
    assert (times(2.0), plus(2.0)) == (729.0, 50.0)
    assert (wg.grad(times)(2.0), wg.grad(plus)(2.0)) == (2916.0, 21.0)


def test_float32_int_and_weak_carries():
    x32 = XS[:, 0].astype(np.float32)
    f = lambda w: wg.scan(lambda c, x: (c * w + x, None), 0.0, x32)[0]    # weak 0.0
    g = wg.grad(f)(np.float32(0.9))
    assert type(g) is np.float32
    assert_close(g, fd_derivative(lambda w: f(np.float64(w)), 0.9), rtol=1e-4)

    def counted(w):
        (c, k), ks = wg.scan(lambda s, x: ((s[0] * w + x, s[1] + 1), s[1]),
                             (0.0, np.int64(0)), XS[:, 1])
        assert wnp.asarray(k).dtype == np.int64 and wnp.asarray(ks).dtype == np.int64
        return c * k + ks.sum()
    assert_close(wg.grad(counted)(1.2), fd_derivative(counted, 1.2), rtol=1e-8)


def _lcg(w, seed=np.uint64(42), length=6):
    """A float carry beside a uint64 random state (a 64-bit LCG, wrapping) and an int64
    hash of it, some of whose bit patterns are float64 nans and subnormals."""
    def step(c, _):
        x, s = c
        s = s * np.uint64(6364136223846793005) + np.uint64(1442695040888963407)
        h = s.astype(np.int64) if isinstance(s, wg.Node) else np.int64(s.view(np.int64))
        return (x * w + 1.0, s), (h, x)
    return wg.scan(step, (1.0, seed), length=length)


def test_64_bit_integer_carries_and_ys_stay_exact():
    # (they were packed as float64 values, rounded above 2**53: a traced loop's state
    # differed from the plain loop's in its last 10 bits)
    with np.errstate(over="ignore"):
        (x, s), (h, xs) = _lcg(0.9)
        assert s > 2 ** 53 and (h < 0).any() and (np.abs(h) > 2 ** 53).all()
        for traced in (wg.compile(_lcg, 0.9)(0.9), wg.jvp(_lcg, (0.9,), (1.0,))[0]):
            (_, s2), (h2, _) = traced
            assert s2 == s and s2.dtype == np.uint64 and np.array_equal(h2, h)
            assert h2.dtype == np.int64
        # an eager gradient's loop keeps its residuals in the same pack
        seen = []

        def f(w):
            (x, s), (h, xs) = _lcg(w)
            seen.append((wg.value(s), wg.value(h)))
            return x + xs.sum()
        assert_close(wg.grad(f)(0.9), fd_derivative(lambda w: f(w), 0.9), rtol=1e-8)
        assert seen[0][0] == s and np.array_equal(seen[0][1], h)
        # batched: each example's pack holds its own state's bits
        seeds = np.array([42, 2 ** 64 - 3], np.uint64)
        (_, sb), (hb, _) = wg.vmap(lambda w, seed: _lcg(w, seed))(np.array([0.9, 1.1]), seeds)
        for k in range(2):
            (_, sk), (hk, _) = _lcg(0.9, seeds[k])
            assert sb[k] == sk and np.array_equal(hb[k], hk)
        # beside a complex carry the pack is complex: the bits ride as real parts
        (_, sc), (hc, _) = wg.compile(_lcg, 0.9 + 0.1j)(0.9 + 0.1j)
        assert sc == s and np.array_equal(hc, h)


def test_a_carry_that_changes_dtype_is_refused_on_plain_values_too():
    # (the plain loop let float32 become float64, and an int64 counter a float, where the
    # traced one, and JAX, refuse: code ran eagerly and failed under grad)
    x = np.array([0.5, 0.25])
    for run in (lambda: wg.scan(lambda c, x: (c * x, None), np.float32(1.0), x),
                lambda: wg.fori_loop(0, 3, lambda i, v: v + 0.5, np.int64(0)),
                lambda: wg.compile(lambda x: wg.scan(lambda c, x: (c * x, None),
                                                     np.float32(1.0), x)[0], x)(x)):
        with pytest.raises(TypeError, match="carry leaf 0 goes into f as .* comes out as"):
            run()
    # a weak Python number gives way either way, as in the traced loop
    assert wg.scan(lambda c, x: (c * 2.0, None), np.float32(1.0), length=3)[0].dtype == \
        np.float32
    assert wg.scan(lambda c, x: (c + x, None), 0.0, x.astype(np.float32))[0].dtype == \
        np.float32


def test_a_leaf_that_is_no_number_is_refused_in_words():
    # (a traced loop raised NumPy's "data type 'tag' not understood")
    for run in (lambda: wg.scan(lambda c, x: (c, None), (1.0, "tag"), np.ones(2)),
                lambda: wg.grad(lambda a: wg.scan(lambda c, x: ((c[0] * a, c[1]), None),
                                                  (1.0, "tag"), np.ones(2))[0][0])(2.0)):
        with pytest.raises(TypeError, match="leaf 1 of init is a str .* numbers and arrays"):
            run()


def test_complex_holomorphic():
    z = np.array([1 + 2j, 0.5 - 1j, -0.3j])
    f = lambda a: wg.scan(lambda c, x: (c * a + x, c * c), 0j, z)
    a = 0.3 + 0.1j
    np.testing.assert_allclose(wg.grad(lambda a: f(a)[0], holomorphic=True)(a),
                               2 * z[0] * a + z[1], **TIGHT)      # c = z0 a² + z1 a + z2
    check_complex_grads(lambda a, z: wg.scan(lambda c, x: (c * a + x, wnp.sin(c)), 0j, z),
                        np.array(a), z, order=2)


def test_zero_steps():
    assert wg.grad(lambda w: wg.scan(lambda c, x: (c * w, x), w, np.zeros(0))[0])(2.0) == 1.0
    carry, ys = wg.scan(lambda c, x: (c, x * 2), 1.0, np.zeros((0, 2)))
    assert carry == 1.0 and ys.shape == (0, 2)


@pytest.mark.parametrize("call, error, words", [
    (lambda: wg.grad(lambda w: wg.scan(lambda c, x: c * w, 0.0, XS)[0])(1.0),
     TypeError, "must return a pair"),
    (lambda: wg.grad(lambda w: wg.scan(lambda c, x: ((c, c), None), w, XS)[0])(1.0),
     TypeError, "structure it was given"),
    (lambda: wg.grad(lambda w: wg.scan(lambda c, x: (c * x, None), w, XS)[0])(1.0),
     TypeError, "shape () and comes out with shape (3,)"),
    (lambda: wg.grad(lambda w: wg.scan(lambda c, x: (c * 1j * w, None), np.float64(1.0),
                                       XS)[0].real)(1.0),
     TypeError, "as float64 and comes out as complex128"),
    (lambda: wg.scan(lambda c, x: ((c, c), None), 0.0, XS), TypeError,
     "structure it was given"),
    (lambda: wg.scan(lambda c, x: (c * x, None), 0.0, XS), TypeError,
     "shape () and comes out with shape (3,)"),
    (lambda: wg.scan(lambda c, x: (c, None), 0.0, (np.ones(3), np.ones(4))),
     ValueError, "xs leaf 1 of shape (4,) has 4"),
    (lambda: wg.scan(lambda c, x: (c, None), 0.0, np.ones(3), length=4),
     ValueError, "but length=4"),
    (lambda: wg.scan(lambda c, x: (c, None), 0.0, 1.0), ValueError, "scalar"),
    (lambda: wg.scan(lambda c, x: (c, None), 0.0), ValueError, "length="),
    (lambda: wg.scan(lambda c, x: (c, None), 0.0, length=-1), ValueError, ">= 0"),
    (lambda: wg.scan(lambda c, x: (c, None), 0.0, length=2.5), TypeError, "integer"),
    (lambda: wg.scan(3, 0.0, np.ones(3)), TypeError, "function"),
    (lambda: wg.grad(lambda w: wg.fori_loop(0, w, lambda i, c: c, 1.0))(1.0),
     TypeError, "upper must be an integer, got float"),
    (lambda: wg.fori_loop(0, 2.5, lambda i, c: c, 1.0), TypeError, "must be an integer"),
    (lambda: wg.jit(lambda n: wg.fori_loop(0, n, lambda i, c: c, 1.0))(np.ones(2)),
     TypeError, "upper must be an integer scalar, got a traced float64 of shape (2,)"),
    (lambda: wg.jit(lambda n: wg.fori_loop(n, 3, lambda i, c: c, 1.0))(np.float64(1)),
     TypeError, "lower must be an integer scalar"),
    (lambda: wg.grad(lambda w: wg.scan(lambda c, x: (c * w if c > 0 else c, None), 1.0,
                                       np.ones(3))[0])(1.0),
     wg.ConcretizationError, "wg.scan traced its body"),
    # (NumPy's "all input arrays must have the same shape", naming neither scan nor y)
    (lambda: wg.scan(lambda c, x: (c + 1.0, np.ones(int(c) + 1)), 0.0, length=3),
     ValueError, "y leaf 0 has shape (1,) at step 0 and (2,) at step 1"),
    (lambda: wg.scan(lambda c, x: (c + 1.0, (x, np.ones(1 + (c > 1)))), 0.0, np.ones(4),
                     reverse=True), ValueError, "y leaf 1 has shape (1,) at step 0 and (2,) "
                                                "at step 2"),
    # (the eager loop's packed node, "node %4 has shape (13,)")
    (lambda: wg.jacobian(lambda a: wg.scan(lambda c, x: (c * wnp.sin(a * x), c), 0.5,
                                           np.arange(3.0))[0], mode="eliminate")(0.7),
     NotImplementedError, "wg.fori_loop or while_loop of <lambda>) is one node"),
    (lambda: wg.jacobian_graph(lambda a: wg.fori_loop(0, 3, lambda i, c: c * a, a), 0.7,
                               mode="eliminate"),
     NotImplementedError, "Use mode='rev' or 'fwd'"),
    (lambda: wg.jacobian(lambda a: wg.checkpoint(wnp.sin)(a), mode="eliminate")(0.7),
     NotImplementedError, "a checkpointed call (checkpoint[sin]) is one node"),
])
def test_clear_errors(call, error, words):
    with pytest.raises(error) as info:
        call()
    assert words in str(info.value)


def test_eager_gradient_runs_two_loops(monkeypatch):
    """An eager gradient keeps the body's residuals in the loop's value, so the reverse
    sweep runs one loop (the body's VJP) after the forward one, not a second forward."""
    from wengert.loops import Scan
    runs = []
    run = Scan.run
    monkeypatch.setattr(Scan, "run", lambda self, args: runs.append(self.name) or
                        run(self, args))
    got = wg.grad(rnn_scan)(W0, H0, XS)
    assert [name.split()[0] for name in runs] == ["scan[keep", "scan[vjp"], runs
    assert_close(got, wg.grad(rnn_loop)(W0, H0, XS), **TIGHT)



def test_forward_mode_keeps_no_residuals(monkeypatch):
    """Eager forward mode (jvp, jacfwd, a Taylor expansion, and a checkpoint's JVP) runs
    the loop and its JVP loop; it kept every step's residuals for a reverse sweep that
    never came, memory growing with the number of steps."""
    from wengert.loops import Scan
    runs = []
    run = Scan.run
    monkeypatch.setattr(Scan, "run", lambda self, args: runs.append(self.name) or
                        run(self, args))

    def f(w):
        return rnn_scan(W0 * w, H0, XS)

    def along(w):
        return rnn_loop(W0 * w, H0, XS)
    slope = fd_derivative(along, 0.7)
    ck = wg.checkpoint(f)
    for forward in (lambda: wg.jvp(f, (0.7,), (1.0,))[1], lambda: wg.jacfwd(f)(0.7),
                    lambda: wg.jacobian(f, mode="fwd")(0.7),
                    lambda: wg.taylor(f, 0.7, 1.0, order=2)[1],
                    lambda: wg.jvp(ck, (0.7,), (1.0,))[1]):
        runs.clear()
        assert_close(forward(), slope, rtol=1e-7)
        assert not any(name.startswith("scan[keep") for name in runs), runs
    # a reverse sweep nested in forward mode (forward over reverse) sweeps symbolically,
    # reading the residuals from a forward loop of its own
    runs.clear()
    assert_close(wg.hessian(f)(0.7), fd_derivative(wg.grad(along), 0.7), rtol=1e-7)
    assert_close(wg.hvp(f)(0.7, 1.0), fd_derivative(wg.grad(along), 0.7), rtol=1e-7)
    runs.clear()
    wg.grad(f)(0.7)                          # (reverse mode still keeps them)
    assert [name.split()[0] for name in runs] == ["scan[keep", "scan[vjp"], runs


def test_forward_mode_memory_stays_flat_in_the_number_of_steps():
    import tracemalloc
    W = RNG.normal(size=(32, 32)) / 6

    def peak(length):
        def f(w):
            step = lambda h, _: (wnp.tanh(w * (W @ h)), None)
            return wg.scan(step, np.ones(32), length=length)[0].sum()
        tracemalloc.start()
        try:
            wg.jvp(f, (1.0,), (1.0,))
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    peak(250), peak(4000)                   # (each loop traced and generated once)
    # (keeping residuals: 0.4 MB at 250 steps, 6 MB at 4000; without, 20 kB for both)
    assert peak(4000) < 2 * peak(250) + 100_000


def test_compiled_value_and_gradient_run_two_loops(monkeypatch):
    """The loop that gives the value reads it from its gradient's forward loop (its twin,
    which also keeps the residuals): compiled code runs each loop once."""
    from wengert.loops import Scan
    f = wg.compile(wg.value_and_grad(rnn_scan), W0, H0, XS)
    runs = []
    run = Scan.run
    monkeypatch.setattr(Scan, "run", lambda self, args: runs.append(self.name) or
                        run(self, args))
    value, grad = f(W0, H0, XS)
    assert [name.split()[0] for name in runs] == ["scan[keep", "scan[vjp"], runs
    assert_close(value, rnn_loop(W0, H0, XS), **TIGHT)
    assert_close(grad, wg.grad(rnn_loop)(W0, H0, XS), **TIGHT)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("unroll", [2, 3, 5, True])
def test_unroll_takes_several_steps_per_step(unroll, reverse):
    """unroll=k: the same values and derivatives (to rounding: sums of cotangents group
    differently), k steps per traced step, the remainder after (before, reversed)."""
    def f(w, xs, unroll=1):
        step = lambda c, x: (wnp.sin(c * w + x[0]), {"a": c * x[1], "b": c})
        c, ys = wg.scan(step, 0.3, xs, reverse=reverse, unroll=unroll)
        return c + (ys["a"] * np.arange(len(xs))).sum() + ys["b"][3]
    xs = RNG.normal(size=(11, 2))
    assert_close(f(0.7, xs, unroll), f(0.7, xs), **TIGHT)
    for argnums in (0, 1):
        assert_close(wg.grad(f, argnums)(0.7, xs, unroll), wg.grad(f, argnums)(0.7, xs),
                     **TIGHT)
    assert_close(wg.hessian(f)(0.7, xs, unroll), wg.hessian(f)(0.7, xs), **TIGHT)
    graph = wg.trace(lambda w: f(w, xs, unroll), 0.7)
    steps = [n.op.length for n in graph.nodes if n.op.name.startswith("scan[")]
    k = 11 if unroll is True else unroll
    assert steps == ([11 // k, 11 % k] if 11 % k else [11 // k])
    power = lambda x: wg.fori_loop(0, 7, lambda i, p: p * x, x)        # x ** 8
    unrolled = lambda x: wg.fori_loop(0, 7, lambda i, p: p * x, x, unroll=unroll)
    assert_close(wg.grad(unrolled)(1.5), wg.grad(power)(1.5), **TIGHT)
    assert_close(wg.grad(unrolled)(1.5), 8 * 1.5 ** 7, **TIGHT)


@pytest.mark.parametrize("unroll, error, words", [
    (0, ValueError, "unroll must be >= 1"), (1.5, TypeError, "integer or a bool")])
def test_unroll_errors(unroll, error, words):
    with pytest.raises(error, match=words):
        wg.grad(lambda w: wg.scan(lambda c, x: (c * w, None), 1.0, XS, unroll=unroll)[0])(1.0)
    with pytest.raises(error, match=words):                   # (on plain values too)
        wg.scan(lambda c, x: (c * 2.0, None), 1.0, XS, unroll=unroll)

# --- C: each loop a C loop over a function of its body ---------------------------------------
HAVE_CC = any(shutil.which(cc) for cc in (os.environ.get("CC") or "cc", "gcc", "clang"))
needs_cc = pytest.mark.skipif(not HAVE_CC, reason="no C compiler on this machine")


def oscillator(k, steps=200):
    def step(s, _):
        x, v = s
        return (x + 0.01 * v, v - 0.01 * k * x), x * v
    (x, v), ys = wg.scan(step, (1.0, 0.0), length=steps)
    return 0.5 * v * v + 0.5 * k * x * x + ys.sum()


def nested_c(w, xs):
    inner = lambda v, x: wg.scan(lambda c, xi: (wnp.sin(c * v + xi), c), 0.1, x)[0]
    return wg.scan(lambda c, x: (c + inner(w * c, x), c * x), 0.2, xs)


C_CASES = {
    "rnn": (lambda W, xs: rnn_scan(W, H0, xs), (W0, XS)),
    "rnn reversed": (lambda W, xs: rnn_scan(W, H0, xs, reverse=True), (W0, XS)),
    "oscillator": (oscillator, (2.0,)),
    "fori_loop reads i": (lambda x: wg.fori_loop(2, 9, lambda i, p: p * x + i / 7, x), (0.9,)),
    "nested": (lambda w, xs: (nested_c(w, xs)[0] + nested_c(w, xs)[1].sum()),
               (0.7, RNG.normal(size=(4, 3)))),
    "nested fori_loops": (lambda w: wg.fori_loop(0, 10, lambda j, c: wg.fori_loop(
        0, 12, lambda i, p: p * 0.9 + w * i / 12, c) + j * 0.01, w), (1.0,)),
    "pytrees": (lambda v, xs: wg.scan(lambda c, x: ((c[0] * v + x, wnp.sin(c[1]) + x[0]),
                                                    {"a": c[0] * x, "b": c[1]}),
                                      (np.zeros(3), 0.5), xs)[1]["a"].sum(), (1.1, XS)),
    "counter compared": (lambda x: wg.fori_loop(0, 6, lambda i, p: wnp.where(i < 3, p * x,
                                                                             p + x), x),
                         (0.8,)),
    "zero steps": (lambda w: wg.scan(lambda c, x: (c * w, x), w * w, np.zeros(0))[0], (1.5,)),
    "vmapped": (lambda W, xs: wg.vmap(lambda x: rnn_scan(W, H0, x))(xs).sum(),
                (W0, np.stack([XS, -XS]))),
}


@needs_cc
@pytest.mark.parametrize("name", sorted(C_CASES))
def test_c_loops_agree_with_eager(name):
    """Values, gradients and Hessians compiled to C (loops as C loops) equal eager ones."""
    f, args = C_CASES[name]
    for fn in (f, wg.grad(f), wg.hessian(f)):
        compiled = wg.compile(fn, *args, backend="c")
        # (scalarised, or in loop mode where its arrays are large: a body's call a step)
        assert "for (long wg_i = 0;" in compiled.source or \
            getattr(compiled.entry, "looped", False) and "a call of" in compiled.source
        assert_close(compiled(*args), fn(*args), **TIGHT)


@needs_cc
def test_c_gradient_against_differences_at_random_points():
    grad = wg.compile(wg.grad(oscillator), 2.0, backend="c")
    for k in np.random.default_rng(5).uniform(0.5, 3.0, size=4):
        assert_close(grad(k), fd_derivative(oscillator, k, 1e-5), rtol=1e-7)
    grad2 = wg.compile(wg.grad(wg.grad(oscillator)), 2.0, backend="c")
    assert_close(grad2(1.3), fd_derivative(wg.grad(oscillator), 1.3, 1e-5), rtol=1e-7)


@needs_cc
def test_c_code_is_one_loop_whatever_the_length():
    sources = [wg.compile(wg.grad(lambda k: oscillator(k, n)), 2.0, backend="c").source
               for n in (10, 10_000)]
    assert len(sources[0].splitlines()) == len(sources[1].splitlines()) < 150
    # fori_loop's counter is a table of numbers, not a statement per step
    power = wg.compile(lambda x: wg.fori_loop(0, 5000, lambda i, p: p * 0.999 + i, x), 1.0,
                       backend="c")
    assert len(power.source.splitlines()) < 60
    assert_close(power(1.0), wg.fori_loop(0, 5000, lambda i, p: p * 0.999 + i, 1.0), **TIGHT)


@needs_cc
@pytest.mark.parametrize("f, words", [
    (lambda w: wg.scan(lambda c, x: (c + wnp.sort(x * w)[0], None), 0.0, XS)[0],
     "argsort, a primitive that has no element-by-element form, in the body of "
     "scan[<lambda>]: use backend='python'"),
    (lambda w: wg.scan(lambda c, x: ((c[0] * w, c[1] + 1), None),
                       (0.0, np.int32(0)), XS)[0][0],             # (int64: test_c_integers)
     "int32 (add) (C computes float64, int64 and bool values), in the body of "
     "scan[<lambda>]: use backend='python'"),
    (lambda w: wg.scan(lambda c, x: (c + wsp.digamma(x[0] * w + 3), None), 0.0,
                       XS)[0],
     "no spelling for SciPy's 'digamma'"),
])
def test_c_refuses_bodies_it_cannot_write(f, words):
    with pytest.raises(ValueError) as info:
        wg.compile(f, 1.0, backend="c")
    assert words in str(info.value)


# --- the default back-end: a small body's loop as one Python function on floats -------------
FLOAT_CASES = dict({k: v for k, v in C_CASES.items() if k != "zero steps"}, **{
    "bool and constant ys": (lambda w, xs: wg.scan(
        lambda c, x: (c * w + x[1], (c > x[0], w * w, x)), 0.3, xs, reverse=True)[1][2].sum()
        * w, (0.8, XS)),
    "vector carry, empty y": (lambda w: wg.scan(
        lambda c, _: (wnp.cos(c[::-1] * w), np.zeros(0)), np.arange(3.0), length=7)[0]
        .sum(), (0.4,)),
})


def _runs_on_floats(monkeypatch, on, kind=None):
    """The names of the loops (Scans, or of `kind`: While) run on floats; with `on`
    False, every such loop runs its NumPy code."""
    from wengert.loops import Scan
    kind = kind or Scan
    runs = []
    float_run = kind._float_run
    monkeypatch.setattr(kind, "_float_run", lambda self, *a: runs.append(self.name) or
                        float_run(self, *a))
    if not on:
        monkeypatch.setattr(kind, "_on_floats", lambda self: None)
    return runs


@pytest.mark.parametrize("name", sorted(FLOAT_CASES))
def test_float_loops_agree_with_numpy_loops(name, monkeypatch):
    """Values, gradients and Hessians with each small loop run as one function on floats
    equal those of the loop calling its body's NumPy code step by step."""
    f, args = FLOAT_CASES[name]
    fns = (f, wg.grad(f), wg.hessian(f))
    runs = _runs_on_floats(monkeypatch, True)
    on_floats = [fn(*args) for fn in fns]
    assert runs, "no loop ran on floats"
    monkeypatch.undo()
    runs = _runs_on_floats(monkeypatch, False)
    for fn, got in zip(fns, on_floats):
        assert_close(got, fn(*args), **TIGHT)
    assert not runs


def test_bodies_that_sort_or_gather_by_the_counter_differentiate_the_first_time():
    # making the loop's float form ran take_along_axis on arrays of nodes, whose IndexError
    # escaped: the first grad raised, a second call (with no float form) gave the answer
    x = np.array([1.0, 2.0, 3.0])
    gathered = lambda x: wg.scan(                                             # noqa: E731
        lambda v, i: (v + wnp.take_along_axis(x, i[None], axis=0)[0] ** 2, None),
        0.0, np.arange(3))[0]
    sorted_ = lambda c: wnp.sum(wg.scan(                                      # noqa: E731
        lambda c, _: (wnp.sort(c) * 0.9 + 0.01, None), c, length=4)[0] * [1.0, 2.0, 3.0])
    for f, at in ((gathered, x), (sorted_, np.array([0.3, -0.2, 0.5]))):
        for transform in (wg.grad, wg.hessian, lambda f: wg.compile(wg.grad(f), at)):
            check = transform(f)(at)                  # (a fresh loop: the first call)
            assert np.all(np.isfinite(check))
        check_grads(f, at, order=2)


def test_float_loop_against_differences_at_random_points(monkeypatch):
    runs = _runs_on_floats(monkeypatch, True)
    for k in np.random.default_rng(5).uniform(0.5, 3.0, size=3):
        check_grads(oscillator, k, order=2)
    assert runs


def test_float_loop_gives_numpys_nan_and_inf(monkeypatch):
    """Where math raises (log of a negative, division by zero), the loop is run again by
    NumPy, which gives nan and inf as eager NumPy code does."""
    f = wg.compile(lambda w: wg.scan(lambda c, _: (c - w, (wnp.log(c), 1.0 / c)), 2.0,
                                     length=4)[1], 1.0)
    tried = _runs_on_floats(monkeypatch, True)
    with np.errstate(all="ignore"):
        logs, inverses = f(1.0)
    assert tried
    assert_close(logs, [np.log(2.0), 0.0, -np.inf, np.nan], **TIGHT)
    assert_close(inverses, [0.5, 1.0, np.inf, -1.0], **TIGHT)


def test_large_bodies_keep_numpy_calls():
    """A body of matrix products is not written out element by element (which would take
    seconds to find too large), neither by the loop nor by wg.compile."""
    from wengert.loops import Scan
    from wengert.staged import may_be_faster
    W = RNG.normal(size=(64, 64)) / 8
    f = lambda W: wg.scan(lambda h, x: (wnp.tanh(W @ h + x), None), np.zeros((64, 8)),
                          np.ones((3, 64, 8)))[0].sum()
    g = wg.trace(wg.grad(f), W)
    loops = [n.op for n in g.nodes if isinstance(n.op, Scan)]
    assert loops and not any(may_be_faster(loop.body) for loop in loops)
    assert all(loop._on_floats() is None for loop in loops)


def test_numpy_loop_keeps_numpys_nan_and_inf(monkeypatch):
    """Run as NumPy code, a scalar carry stays a NumPy scalar: a constant carried on (the
    float 0.0) divides to inf, not ZeroDivisionError, compiled and under a derivative."""
    _runs_on_floats(monkeypatch, False)
    f = lambda w: wg.scan(lambda c, _: (0.0 * w, (w / c, wnp.log(c - 0.5))), 1.0,
                          length=3)[1]
    with np.errstate(all="ignore"):
        ratios, logs = wg.compile(f, 2.0)(2.0)
        assert_close(ratios, [2.0, np.inf, np.inf], **TIGHT)
        assert_close(logs, [np.log(0.5), np.nan, np.nan], **TIGHT)
        # (0 * inf is nan: the cotangent 0 of the later ratios meets their partial 1/0)
        unrolled = wg.grad(lambda w: w / 1.0 + 0.0 * (w / (0.0 * w)) + 0.0 * (w / (0.0 * w)))
        assert_close(wg.grad(lambda w: f(w)[0][0])(2.0), unrolled(2.0), **TIGHT)


def test_numpy_loop_computes_what_the_consts_give_once():
    """The loop on NumPy values computes what depends only on the closed-over values (the
    transpose of W in a recurrent layer's gradient) before its first step."""
    from wengert.codegen.python import Namespace, array_loop_source
    W, h, x = RNG.normal(size=(4, 4)), np.zeros((4, 2)), np.ones((4, 2))
    body = wg.trace(lambda W, h, x: (wnp.tanh(W.T @ h + x), None), W, h, x)
    src = array_loop_source("run", body, 1, 1, Namespace())
    assert src.index("W.T") < src.index("for ")
    f = lambda W: wg.scan(lambda h, x: (wnp.tanh(W.T @ h + x), None), h,
                          np.ones((5, 4, 2)))[0].sum()
    check_grads(f, W, order=2)
