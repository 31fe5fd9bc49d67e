"""JAX's own autodiff tutorials run on wengert: the Autodiff Cookbook, "Custom derivative
rules" (custom_jvp and custom_vjp) and "Advanced automatic differentiation" (stop_gradient,
straight-through estimators, per-example gradients, checkpointing).

Each program is written once, as a function of the two modules a JAX program imports
(``jax`` and ``jax.numpy``), and run twice: on real JAX (float64) and on wengert
(``import wengert as jax; import wengert.numpy as jnp``); every number it returns must
agree, and where the tutorial states a closed form, it is checked too.  Data come from
NumPy, since the two random generators differ (Threefry, Philox)."""
from collections import namedtuple
from functools import partial

import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from wengert.test_util import check_grads

from fd import assert_close

rjax = pytest.importorskip("jax")                  # (in float64: tests/conftest.py)
rjnp = rjax.numpy
pytest.importorskip("jax.ad_checkpoint")           # (an attribute once imported)

Point = namedtuple("Point", ["x", "y"])
rng = np.random.default_rng(0)
INPUTS = np.array([[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30],
                   [0.74, -2.49, 1.39]])
TARGETS = np.array([True, True, False, True])
W0, B0, DIRECTION = rng.normal(size=3), float(rng.normal()), rng.normal(size=3)
X, V = rng.normal(size=(3, 2)), rng.normal(size=(3, 2))
COVECTORS, VECTORS = rng.normal(size=(7, 4)), rng.normal(size=(7, 3))


def _leaves(tree):
    """A program's result as a flat list of arrays (dicts by sorted key; namedtuples are
    tuples), the same for JAX's arrays and wengert's."""
    if isinstance(tree, dict):
        return [x for k in sorted(tree) for x in _leaves(tree[k])]
    if isinstance(tree, (tuple, list)):
        return [x for t in tree for x in _leaves(t)]
    return [np.asarray(tree)]


def agree(program, rtol=1e-10):
    """Run `program(jax, jnp)` on JAX and on wengert; every number must agree.  Returns
    wengert's result, for closed forms."""
    with rjax.disable_jit():        # (the same numbers, in two thirds of JAX's time)
        expected = program(rjax, rjnp)
    got = program(wg, wnp)
    e, g = _leaves(expected), _leaves(got)
    assert len(e) == len(g)
    for a, b in zip(e, g):
        assert a.shape == b.shape
        assert_close(np.real(b), np.real(a), rtol=rtol, atol=1e-12)
        assert_close(np.imag(b), np.imag(a), rtol=rtol, atol=1e-12)
    return got


# ---- The Autodiff Cookbook ---------------------------------------------------------------
def logistic_model(jnp):
    def sigmoid(x):
        return 0.5 * (jnp.tanh(x / 2) + 1)

    def predict(W, b, inputs):
        return sigmoid(jnp.dot(inputs, W) + b)

    def loss(W, b):
        preds = predict(W, b, jnp.array(INPUTS))
        label_probs = preds * TARGETS + (1 - preds) * (1 - TARGETS)
        return -jnp.sum(jnp.log(label_probs))
    return predict, loss


def test_cookbook_grad_of_grad_of_tanh():
    def program(jax, jnp):
        g = jax.grad(jnp.tanh)
        return g(2.0), jax.grad(g)(2.0), jax.grad(jax.grad(g))(2.0)
    d1, d2, d3 = agree(program)
    t = np.tanh(2.0)
    assert_close([d1, d2, d3], [1 - t ** 2, -2 * t * (1 - t ** 2),
                                (1 - t ** 2) * (6 * t ** 2 - 2)], rtol=1e-12)


def test_cookbook_argnums_pytrees_and_value_and_grad():
    def program(jax, jnp):
        predict, loss = logistic_model(jnp)
        W, b = jnp.array(W0), jnp.array(B0)

        def loss2(params):
            return loss(params["W"], params["b"])
        value, both = jax.value_and_grad(loss, (0, 1))(W, b)
        return (jax.grad(loss, argnums=0)(W, b), jax.grad(loss, 1)(W, b),
                jax.grad(loss, (0, 1))(W, b), jax.grad(loss2)({"W": W, "b": b}),
                value, both, loss(W, b))
    out = agree(program)
    _, loss = logistic_model(np)
    eps = 1e-6
    assert_close(out[1], (loss(W0, B0 + eps) - loss(W0, B0 - eps)) / (2 * eps), rtol=1e-7)
    assert_close(out[4], loss(W0, B0), rtol=1e-14)


def test_cookbook_checks_against_numerical_differences():
    def program(jax, jnp):
        _, loss = logistic_model(jnp)
        W, b = jnp.array(W0), jnp.array(B0)
        eps = 1e-4
        unit = jnp.array(DIRECTION) / jnp.sqrt(jnp.vdot(DIRECTION, DIRECTION))
        numerical = (loss(W + eps / 2. * unit, b) - loss(W - eps / 2. * unit, b)) / eps
        return numerical, jnp.vdot(jax.grad(loss)(W, b), unit)
    numerical, autodiff = agree(program)
    assert_close(autodiff, numerical, rtol=1e-7)


def test_cookbook_check_grads_is_jax_test_util_check_grads():
    _, loss = logistic_model(wnp)
    check_grads(loss, (W0, B0), order=2)
    wg.test_util.check_grads(loss, (W0, B0), order=2, modes=("rev",))


def test_check_grads_finds_a_wrong_rule_in_either_mode_and_order():
    @wg.custom_jvp
    def f(x):
        return wnp.sin(x)
    f.defjvps(lambda t, ans, x: wnp.cos(x) * t)
    check_grads(f, (0.7,), order=3)

    @wg.custom_jvp
    def wrong(x):
        return wnp.sin(x)
    wrong.defjvps(lambda t, ans, x: 1.01 * wnp.cos(x) * t)
    for mode in ("fwd", "rev"):
        with pytest.raises(AssertionError, match="central difference"):
            check_grads(wrong, (0.7,), order=1, modes=(mode,))

    @wg.custom_jvp
    def wrong_second(x):              # first derivative right, its derivative wrong
        return x ** 3
    wrong_second.defjvps(lambda t, ans, x: wg.stop_gradient(3 * x ** 2) * t)
    check_grads(wrong_second, (0.7,), order=1)
    with pytest.raises(AssertionError, match="of JVP of f|of VJP of f"):
        check_grads(wrong_second, (0.7,), order=2)
    with pytest.raises(ValueError, match="modes"):
        check_grads(f, (0.7,), order=1, modes=("lin",))


def test_cookbook_hessian_vector_products_three_ways():
    def program(jax, jnp):
        def f(X):
            return jnp.sum(jnp.tanh(X) ** 2)

        def hvp_revrev(f, x, v):
            return jax.grad(lambda x: jnp.vdot(jax.grad(f)(x), v))(x)

        def hvp(f, primals, tangents):            # forward-over-reverse
            return jax.jvp(jax.grad(f), primals, tangents)[1]

        def hvp_revfwd(f, primals, tangents):
            return jax.grad(lambda primals: jax.jvp(f, primals, tangents)[1])(primals)
        X_, V_ = jnp.array(X), jnp.array(V)
        return (hvp_revrev(f, X_, V_), hvp(f, (X_,), (V_,)), hvp_revfwd(f, (X_,), (V_,)),
                jnp.tensordot(jax.hessian(f)(X_), V_, 2))
    a, b, (c,), d = agree(program)
    t = np.tanh(X)
    closed = (2 * (1 - t ** 2) ** 2 - 4 * t ** 2 * (1 - t ** 2)) * V     # diagonal Hessian
    for h in (a, b, c, d):
        assert_close(h, closed, rtol=1e-12)


def test_cookbook_jacobians_and_hessians():
    def program(jax, jnp):
        predict, _ = logistic_model(jnp)
        inputs = jnp.array(INPUTS)

        def f(W):
            return predict(W, B0, inputs)

        def predict_dict(params, inputs):
            return predict(params["W"], params["b"], inputs)
        W = jnp.array(W0)
        return (jax.jacfwd(f)(W), jax.jacrev(f)(W), jax.jacfwd(jax.jacrev(f))(W),
                jax.hessian(f)(W), jax.jacrev(predict_dict)({"W": W, "b": jnp.array(B0)},
                                                            inputs))
    J, J2, H, H2, J_dict = agree(program)
    s = 1 / (1 + np.exp(-(INPUTS @ W0 + B0)))
    assert_close(J, (s * (1 - s))[:, None] * INPUTS, rtol=1e-12)
    assert H.shape == (4, 3, 3) and J_dict["b"].shape == (4,)


def test_cookbook_jvp_vjp_and_vector_valued_gradients():
    def program(jax, jnp):
        predict, _ = logistic_model(jnp)

        def f(W):
            return predict(W, B0, jnp.array(INPUTS))
        y, u = jax.jvp(f, (jnp.array(W0),), (jnp.array(DIRECTION),))
        y2, vjp_fun = jax.vjp(f, jnp.array(W0))

        def vgrad(f, x):
            y, vjp_fn = jax.vjp(f, x)
            return vjp_fn(jnp.ones(y.shape))[0]
        return y, u, y2, vjp_fun(jnp.array(COVECTORS[0])), vgrad(lambda x: 3 * x ** 2,
                                                                 jnp.ones((2, 2)))
    *_, pulled = agree(program)
    assert_close(pulled, 6 * np.ones((2, 2)), rtol=1e-15)


def test_cookbook_matrix_jacobian_products_with_vmap():
    def program(jax, jnp):
        predict, _ = logistic_model(jnp)

        def f(W):
            return predict(W, B0, jnp.array(INPUTS))
        W = jnp.array(W0)

        def loop_mjp(f, x, M):        # (JAX 0.10's vstack takes no tuples: [0])
            y, vjp_fun = jax.vjp(f, x)
            return jnp.vstack([vjp_fun(mi)[0] for mi in M])

        def vmap_mjp(f, x, M):
            y, vjp_fun = jax.vjp(f, x)
            outs, = jax.vmap(vjp_fun)(M)
            return outs

        def loop_jmp(f, W, M):
            return jnp.vstack([jax.jvp(f, (W,), (mi,))[1] for mi in M])

        def vmap_jmp(f, W, M):
            return jax.vmap(lambda s: jax.jvp(f, (W,), (s,))[1])(M)

        def our_jacrev(f):
            def jacfun(x):
                y, vjp_fun = jax.vjp(f, x)
                J, = jax.vmap(vjp_fun, in_axes=0)(jnp.eye(len(y)))
                return J
            return jacfun

        def our_jacfwd(f):
            def jacfun(x):
                Jt = jax.vmap(lambda s: jax.jvp(f, (x,), (s,))[1], in_axes=1)(
                    jnp.eye(len(x)))
                return jnp.transpose(Jt)
            return jacfun
        U, S = jnp.array(COVECTORS), jnp.array(VECTORS)
        return (loop_mjp(f, W, U), vmap_mjp(f, W, U), loop_jmp(f, W, S), vmap_jmp(f, W, S),
                our_jacrev(f)(W), our_jacfwd(f)(W), jax.jacrev(f)(W))
    loop_vs, vmap_vs, loop_js, vmap_js, jr, jf, J = agree(program)
    assert_close(vmap_vs, loop_vs, rtol=1e-14)
    assert_close(vmap_js, loop_js, rtol=1e-14)
    assert_close(jr, J, rtol=1e-14)
    assert_close(jf, J, rtol=1e-14)


def test_cookbook_jit_of_the_linear_part_of_dynamic_python():
    def program(jax, jnp):
        def f(x):
            try:
                if x < 3:
                    return 2 * x ** 3
                else:
                    raise ValueError
            except ValueError:
                return jnp.pi * x
        y, f_vjp = jax.vjp(f, 4.)
        return y, jax.jit(f_vjp)(1.)
    y, (g,) = agree(program)
    assert_close([y, g], [4 * np.pi, np.pi], rtol=1e-15)


def test_cookbook_complex_jvp_and_vjp_conventions():
    def program(jax, jnp):
        out = []
        for a, b, c, d, x, y, re, im in np.random.default_rng(5).uniform(size=(3, 8)):
            def fun(z):
                x, y = jnp.real(z), jnp.imag(z)
                return u(x, y) + v(x, y) * 1j

            def u(x, y):
                return a * x + b * y

            def v(x, y):
                return c * x + d * y
            z = x + y * 1j
            _, ans = jax.jvp(fun, (z,), (re + im * 1j,))
            _, fun_vjp = jax.vjp(fun, z)
            out += [ans, fun_vjp(jnp.array(re + im * 1j))[0]]
            out += [jax.grad(u, 0)(x, y) * re + jax.grad(u, 1)(x, y) * im
                    + jax.grad(v, 0)(x, y) * re * 1j + jax.grad(v, 1)(x, y) * im * 1j,
                    jax.grad(u, 0)(x, y) * re + jax.grad(v, 0)(x, y) * (-im)
                    + jax.grad(u, 1)(x, y) * re * (-1j) + jax.grad(v, 1)(x, y) * im * 1j]
        return out
    out = agree(program)
    for ans, pulled, jvp_expected, vjp_expected in zip(*[iter(out)] * 4):
        assert_close(ans.real, jvp_expected.real, rtol=1e-14)
        assert_close(ans.imag, jvp_expected.imag, rtol=1e-14)
        assert_close(pulled.real, vjp_expected.real, rtol=1e-14)
        assert_close(pulled.imag, vjp_expected.imag, rtol=1e-14)


def test_cookbook_complex_gradients_and_holomorphic():
    def program(jax, jnp):
        def f(z):
            x, y = jnp.real(z), jnp.imag(z)
            return x ** 2 + y ** 2
        A = jnp.array([[5., 2. + 3j, 5j], [2. - 3j, 7., 1. + 7j], [-5j, 1. - 7j, 12.]])

        def g(X):
            L = jnp.linalg.cholesky(X)
            return jnp.sum((L - jnp.sin(L)) ** 2)
        return (jax.grad(f)(3. + 4j), jax.grad(jnp.sin, holomorphic=True)(3. + 4j),
                jax.grad(jnp.conjugate, holomorphic=True)(3. + 4j),
                jax.grad(g, holomorphic=True)(A))
    df, dsin, dconj, _ = agree(program)
    assert df == 6 - 8j and dsin == np.cos(3 + 4j) and dconj == 1
    for grad in (wg.grad, rjax.grad):              # a complex output needs holomorphic=True
        with pytest.raises(TypeError):
            grad(wnp.sin if grad is wg.grad else rjnp.sin)(3. + 4j)


# (the tutorial's naive programs make inf and nan on purpose: NumPy warns)
naive_overflow = pytest.mark.filterwarnings("ignore:overflow|divide by zero:RuntimeWarning")


# ---- Custom derivative rules --------------------------------------------------------------
def test_custom_jvp_and_vjp_summary():
    def program(jax, jnp):
        @jax.custom_jvp
        def f(x, y):
            return jnp.sin(x) * y

        @f.defjvp
        def f_jvp(primals, tangents):
            x, y = primals
            x_dot, y_dot = tangents
            return f(x, y), jnp.cos(x) * x_dot * y + jnp.sin(x) * y_dot

        @jax.custom_jvp
        def f2(x, y):
            return jnp.sin(x) * y
        f2.defjvps(lambda x_dot, primal_out, x, y: jnp.cos(x) * x_dot * y,
                   lambda y_dot, primal_out, x, y: jnp.sin(x) * y_dot)

        @jax.custom_vjp
        def f3(x, y):
            return jnp.sin(x) * y

        def f3_fwd(x, y):
            return f3(x, y), (jnp.cos(x), jnp.sin(x), y)

        def f3_bwd(res, g):
            cos_x, sin_x, y = res
            return (cos_x * g * y, sin_x * g)
        f3.defvjp(f3_fwd, f3_bwd)
        return [(g(2., 3.), jax.jvp(g, (2., 3.), (1., 0.)), jax.grad(g)(2., 3.))
                for g in (f, f2)] + [jax.grad(f3)(2., 3.), jax.grad(f3, (0, 1))(2., 3.)]
    out = agree(program)
    assert_close(out[0][2], 3 * np.cos(2.0), rtol=1e-15)
    assert_close(out[3], [3 * np.cos(2.0), np.sin(2.0)], rtol=1e-15)


@naive_overflow
def test_custom_jvp_log1pexp_is_stable():
    def program(jax, jnp):
        def naive(x):
            return jnp.log(1. + jnp.exp(x))

        @jax.custom_jvp
        def log1pexp(x):
            return jnp.log(1. + jnp.exp(x))

        @log1pexp.defjvp
        def log1pexp_jvp(primals, tangents):
            x, = primals
            x_dot, = tangents
            return log1pexp(x), (1 - 1 / (1 + jnp.exp(x))) * x_dot

        @jax.custom_jvp
        def by_defjvps(x):
            return jnp.log(1. + jnp.exp(x))
        by_defjvps.defjvps(lambda t, ans, x: (1 - 1 / (1 + jnp.exp(x))) * t)
        out = [naive(3.), jax.grad(naive)(1000.)]      # (exp(1000) is inf in float64)
        for f in (naive, log1pexp, by_defjvps):
            out += [jax.jit(f)(3.), jax.jit(jax.grad(f))(3.),
                    jax.vmap(jax.jit(jax.grad(f)))(jnp.arange(3.))]
        return out + [jax.grad(log1pexp)(1000.), jax.grad(by_defjvps)(1000.)]
    out = agree(program)
    assert np.isnan(out[1])                          # the naive rule: 0 * inf
    assert out[-2] == out[-1] == 1.0
    assert_close(out[-3], 1 / (1 + np.exp(-np.arange(3.))), rtol=1e-14)


@naive_overflow
def test_custom_jvp_enforces_a_convention_at_a_boundary():
    def program(jax, jnp):
        def naive(x):
            return x / (1 + jnp.sqrt(x))

        @jax.custom_jvp
        def f(x):
            return x / (1 + jnp.sqrt(x))

        @f.defjvp
        def f_jvp(primals, tangents):
            x, = primals
            x_dot, = tangents
            return f(x), ((jnp.sqrt(x) + 2) / (2 * (jnp.sqrt(x) + 1) ** 2)) * x_dot
        return jax.grad(naive)(0.), jax.grad(f)(0.), jax.grad(f)(4.)
    nan, one, at4 = agree(program)
    assert np.isnan(nan) and one == 1.0 and at4 == 4 / 18


def test_custom_vjp_clips_gradients():
    def program(jax, jnp):
        @jax.custom_vjp
        def clip_gradient(lo, hi, x):
            return x

        def clip_gradient_fwd(lo, hi, x):
            return x, (lo, hi)

        def clip_gradient_bwd(res, g):
            lo, hi = res
            return (None, None, jnp.clip(g, lo, hi))
        clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)

        def clip_sin(x):
            return jnp.sin(clip_gradient(-0.75, 0.75, x))
        t = jnp.linspace(0, 10, 50)
        return (clip_sin(t), jax.vmap(jax.grad(clip_sin))(t),
                jax.jit(jax.vmap(jax.grad(clip_sin)))(t))
    _, g, g_jit = agree(program)
    t = np.linspace(0, 10, 50)
    assert_close(g, np.clip(np.cos(t), -0.75, 0.75), rtol=1e-15)
    assert_close(g_jit, g, rtol=1e-15)


def fixed_point_program(jax, jnp):
    """The tutorial's implicit differentiation of a fixed point (a while_loop, whose rule
    runs jax.vjp and fixed_point again), for Newton's square root."""
    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def fixed_point(f, a, x_guess):
        def cond_fun(carry):
            x_prev, x = carry
            return jnp.abs(x_prev - x) > 1e-6

        def body_fun(carry):
            _, x = carry
            return x, f(a, x)
        _, x_star = jax.lax.while_loop(cond_fun, body_fun, (x_guess, f(a, x_guess)))
        return x_star

    def fixed_point_fwd(f, a, x_init):
        x_star = fixed_point(f, a, x_init)
        return x_star, (a, x_star)

    def rev_iter(f, packed, u):
        a, x_star, x_star_bar = packed
        _, vjp_x = jax.vjp(lambda x: f(a, x), x_star)
        return x_star_bar + vjp_x(u)[0]

    def fixed_point_rev(f, res, x_star_bar):
        a, x_star = res
        _, vjp_a = jax.vjp(lambda a: f(a, x_star), a)
        a_bar, = vjp_a(fixed_point(partial(rev_iter, f), (a, x_star, x_star_bar),
                                   x_star_bar))
        return a_bar, jnp.zeros_like(x_star)
    fixed_point.defvjp(fixed_point_fwd, fixed_point_rev)

    def newton_sqrt(a):
        return fixed_point(lambda a, x: 0.5 * (x + a / x), a, a)
    return newton_sqrt


def test_custom_vjp_implicit_fixed_point_to_second_order():
    # (the rule runs jax.vjp on plain numbers inside the outer grad's trace: its result
    # was that trace's node, and the primitive refused it as a closed-over value)
    def program(jax, jnp):
        newton_sqrt = fixed_point_program(jax, jnp)
        return (newton_sqrt(2.), jax.grad(newton_sqrt)(2.),
                jax.grad(jax.grad(newton_sqrt))(2.), jax.grad(jnp.sqrt)(2.),
                jax.grad(jax.grad(jnp.sqrt))(2.))
    root, d1, d2, sqrt_d1, sqrt_d2 = agree(program, rtol=1e-9)
    assert_close([root, d1, d2], [np.sqrt(2), 0.5 / np.sqrt(2), -0.25 * 2 ** -1.5],
                 rtol=1e-9)
    assert_close([d1, d2], [sqrt_d1, sqrt_d2], rtol=1e-9)


def test_custom_rule_still_refuses_a_closed_over_traced_value():
    # (f runs on plain numbers now; a traced value it closes over is still refused,
    # directly or through a transformation f runs)
    def outer(w, inner):
        @wg.custom_vjp
        def g(x):
            return inner(x, w)
        g.defvjp(lambda x: (g(x), None), lambda r, ct: (ct,))
        return g(2.0 * w)
    for inner in (lambda x, w: x * w, lambda x, w: wg.grad(lambda y: y * y * w)(x)):
        with pytest.raises(ValueError, match="closes over|separate trace"):
            wg.grad(outer)(3.0, inner)


def test_custom_jvp_and_vjp_basic_usage():
    def program(jax, jnp):
        @jax.custom_jvp
        def f(x):
            return jnp.sin(x)
        f.defjvp(lambda primals, tangents: (f(primals[0]), jnp.cos(primals[0]) * tangents[0]))

        @jax.custom_jvp
        def g(x, y):
            return x ** 2 * y
        g.defjvps(lambda x_dot, primal_out, x, y: 2 * x * y * x_dot, None)

        @jax.custom_jvp
        def branchy(x):
            return jnp.sin(x) if x > 0 else jnp.cos(x)

        @branchy.defjvp
        def branchy_jvp(primals, tangents):
            x, = primals
            return branchy(x), (2 if x > 0 else 3) * tangents[0]

        @jax.custom_vjp
        def h(x):
            return jnp.sin(x)
        h.defvjp(lambda x: (h(x), jnp.cos(x)), lambda cos_x, y_bar: (cos_x * y_bar,))
        y, h_vjp = jax.vjp(h, 3.)
        return (f(3.), jax.jvp(f, (3.,), (1.,)), jax.grad(f)(3.), jax.grad(jax.grad(f))(3.),
                jax.vmap(f)(jnp.arange(3.)), jax.jit(f)(3.), jax.grad(g)(2., 3.),
                jax.grad(g, 1)(2., 3.), jax.grad(branchy)(1.), jax.grad(branchy)(-1.),
                h(3.), jax.grad(h)(3.), y, h_vjp(1.))
    out = agree(program)
    assert out[6] == 12.0 and out[7] == 0.0 and out[8] == 2.0 and out[9] == 3.0

    def no_forward_mode(jax, jnp):          # custom_vjp has no forward mode, in either
        h = jax.custom_vjp(lambda x: jnp.sin(x))
        h.defvjp(lambda x: (h(x), jnp.cos(x)), lambda c, g: (c * g,))
        with pytest.raises(TypeError):
            jax.jvp(h, (3.,), (1.,))
    no_forward_mode(rjax, rjnp)
    no_forward_mode(wg, wnp)


def test_custom_rules_on_pytrees_and_debugging_in_bwd():
    def program(jax, jnp):
        @jax.custom_jvp
        def f(pt):
            return {"a": pt.x ** 2, "b": (jnp.sin(pt.x), jnp.cos(pt.y))}

        @f.defjvp
        def f_jvp(primals, tangents):
            pt, = primals
            t, = tangents
            return f(pt), {"a": 2 * pt.x * t.x,
                           "b": (jnp.cos(pt.x) * t.x, -jnp.sin(pt.y) * t.y)}

        @jax.custom_vjp
        def f2(pt):
            return {"a": pt.x ** 2, "b": (jnp.sin(pt.x), jnp.cos(pt.y))}

        def f2_bwd(pt, g):
            a_bar, (b0_bar, b1_bar) = g["a"], g["b"]
            return (Point(2 * pt.x * a_bar + jnp.cos(pt.x) * b0_bar,
                          -jnp.sin(pt.y) * b1_bar),)
        f2.defvjp(lambda pt: (f2(pt), pt), f2_bwd)
        seen = []

        @jax.custom_vjp
        def debug(x):
            return x
        debug.defvjp(lambda x: (x, x), lambda x, g: seen.append((x, g)) or (g,))
        pt = Point(1., 2.)
        grads = [jax.grad(lambda pt: g(pt)["a"] + g(pt)["b"][0])(pt) for g in (f, f2)]
        assert all(type(g) is Point for g in grads)
        return f(pt), f2(pt), grads, jax.grad(lambda x: jnp.sin(debug(x ** 2)))(3.), seen
    out = agree(program)
    assert_close(out[2][0], [2 + np.cos(1.0), 0.0], rtol=1e-15)
    assert_close(out[4][0], [9.0, np.cos(9.0)], rtol=1e-15)


def test_custom_rules_with_nondiff_argnums():
    def program(jax, jnp):
        @partial(jax.custom_jvp, nondiff_argnums=(0,))
        def app(f, x):
            return f(x)
        app.defjvp(lambda f, primals, tangents: (f(primals[0]), 2. * tangents[0]))

        @partial(jax.custom_jvp, nondiff_argnums=(0, 2))
        def app2(f, x, g):
            return f(g(x))
        app2.defjvp(lambda f, g, primals, tangents: (f(g(primals[0])), 3. * tangents[0]))

        @partial(jax.custom_vjp, nondiff_argnums=(0,))
        def app3(f, x):
            return f(x)
        app3.defvjp(lambda f, x: (f(x), x), lambda f, x, g: (5 * g,))
        cube, times5 = (lambda x: x ** 3), (lambda y: 5 * y)
        return (app(cube, 3.), jax.grad(app, 1)(cube, 3.), app2(cube, 3., times5),
                jax.grad(app2, 1)(cube, 3., times5), app3(lambda x: x ** 2, 4.),
                jax.grad(app3, 1)(lambda x: x ** 2, 4.))
    assert [float(x) for x in agree(program)] == [27.0, 2.0, 3375.0, 3.0, 16.0, 5.0]


# ---- Advanced automatic differentiation -------------------------------------------------
def test_advanced_higher_order_and_meta_learning():
    features = np.random.default_rng(1).normal(size=(6, 3))
    labels = features @ np.array([1., -1., 2.])

    def program(jax, jnp):
        f = lambda x: x ** 3 + 2 * x ** 2 - 3 * x + 1             # noqa: E731
        ds = [jax.grad(f)]
        for _ in range(3):
            ds.append(jax.grad(ds[-1]))

        def loss_fn(params, data):
            x, y = data
            return jnp.mean((x @ params - y) ** 2)

        def meta_loss_fn(params, data):
            grads = jax.grad(loss_fn)(params, data)
            return loss_fn(params - 0.1 * grads, data)
        p = jnp.array([0.5, 0.2, -0.3])
        return ([d(1.) for d in ds], jax.jacfwd(jax.grad(lambda x: jnp.dot(x, x)))(
            jnp.array([1., 2., 3.])), jax.grad(meta_loss_fn)(p, (features, labels)),
            jax.jit(jax.grad(meta_loss_fn))(p, (features, labels)))
    derivatives, H, meta, meta_jit = agree(program)
    assert [float(d) for d in derivatives] == [4.0, 10.0, 6.0, 0.0]
    assert_close(H, 2 * np.eye(3), rtol=1e-15)
    assert_close(meta_jit, meta, rtol=1e-12)


def test_advanced_stop_gradient_td0_and_per_example_gradients():
    def program(jax, jnp):
        value_fn = lambda theta, state: jnp.dot(theta, state)     # noqa: E731
        theta = jnp.array([0.1, -0.1, 0.])
        s_tm1, r_t, s_t = jnp.array([1., 2., -1.]), jnp.array(1.), jnp.array([2., 1., 0.])

        def td_loss(theta, s_tm1, r_t, s_t):
            v_tm1 = value_fn(theta, s_tm1)
            target = r_t + value_fn(theta, s_t)
            return -0.5 * ((jax.lax.stop_gradient(target) - v_tm1) ** 2)
        batch = [jnp.stack([a, a]) for a in (s_tm1, r_t, s_t)]
        per_example = jax.jit(jax.vmap(jax.grad(td_loss), in_axes=(None, 0, 0, 0)))
        return (jax.grad(td_loss)(theta, s_tm1, r_t, s_t), per_example(theta, *batch),
                jax.vmap(jax.grad(td_loss))(jnp.stack([theta, theta]), *batch),
                (r_t + value_fn(theta, s_t) - value_fn(theta, s_tm1))
                * jax.grad(value_fn)(theta, s_tm1))
    delta, per_example, batched, by_hand = agree(program)
    assert_close(delta, [1.2, 2.4, -1.2], rtol=1e-14)
    assert_close(by_hand, delta, rtol=1e-14)
    assert_close(per_example, [delta, delta], rtol=1e-14)


def test_stop_gradient_takes_pytrees():
    # (wg.stop_gradient of a dict handed the dict back, its leaves not stopped: a wrong
    # gradient, silently)
    def program(jax, jnp):
        def f(p):
            return jnp.sum(jax.lax.stop_gradient(p)["a"] * p["a"]) * p["b"]

        def g(p):
            return jnp.sum(jax.lax.stop_gradient(p)[0] * p[1])
        return (jax.grad(f)({"a": jnp.array([1., 2.]), "b": jnp.array(3.)}),
                jax.grad(g)([jnp.array([1., 2.]), jnp.array([3., 4.])]))
    by_dict, by_list = agree(program)
    assert_close(by_dict["a"], [3., 6.], rtol=1e-15)
    assert_close(by_list[0], [0., 0.], rtol=1e-15)
    assert wg.stop_gradient is wg.lax.stop_gradient
    with pytest.raises(TypeError, match="pytrees"):
        wnp.stop_gradient({"a": 1.0})          # the primitive: one array


def test_advanced_straight_through_estimator():
    def program(jax, jnp):
        def straight_through_round(x):
            zero = x - jax.lax.stop_gradient(x)
            return zero + jax.lax.stop_gradient(jnp.round(x))
        return (straight_through_round(3.2), jax.grad(jnp.round)(3.2),
                jax.grad(straight_through_round)(3.2),
                jax.jit(jax.grad(straight_through_round))(3.2))
    assert [float(x) for x in agree(program)] == [3.0, 0.0, 1.0, 1.0]


def test_advanced_linearize_and_gauss_newton_products():
    A = np.random.default_rng(2).normal(size=(4, 3))

    def program(jax, jnp):
        f = lambda x: jnp.sin(x) * jnp.cos(x) ** 2              # noqa: E731
        x, v = jnp.array([0.3, 1.2, -0.7]), jnp.array([1., 2., 3.])
        y, f_jvp = jax.linearize(f, x)
        r = lambda w: jnp.tanh(A @ w)                              # noqa: E731
        w = jnp.array([0.1, 0.2, 0.3])
        _, r_jvp = jax.linearize(r, w)
        _, r_vjp = jax.vjp(r, w)
        return (y, f_jvp(v), jax.jit(f_jvp)(v), jax.jvp(f, (x,), (v,))[1],
                r_vjp(r_jvp(v))[0], jax.linear_transpose(r_jvp, w)(r_jvp(v))[0])
    _, t, t_jit, t_jvp, gn, gn2 = agree(program)
    assert_close(t, t_jvp, rtol=1e-14)
    J = (1 - np.tanh(A @ [0.1, 0.2, 0.3]) ** 2)[:, None] * A
    assert_close(gn, J.T @ J @ [1., 2., 3.], rtol=1e-12)


def test_gradient_checkpointing_tutorial():
    r = np.random.default_rng(3)
    W1, W2, W3, x = (r.normal(size=(5, 4)), r.normal(size=(6, 5)), r.normal(size=(7, 6)),
                     r.normal(size=4))
    Ws = r.normal(size=(5, 3, 3)) * 0.5

    def program(jax, jnp):
        checkpoint_name = jax.ad_checkpoint.checkpoint_name
        policies = jax.checkpoint_policies

        def g(W, x):
            return jnp.sin(jnp.dot(W, x))

        def f(W1, W2, W3, x):
            return g(W3, g(W2, g(W1, x)))

        def f2(W1, W2, W3, x):
            for W in (W1, W2, W3):
                x = jax.checkpoint(g)(W, x)
            return x

        def f4(W1, W2, W3, x):
            for W, name in ((W1, "a"), (W2, "b"), (W3, "c")):
                x = checkpoint_name(g(W, x), name=name)
            return x
        variants = [f, f2, jax.checkpoint(f, policy=policies.dots_with_no_batch_dims_saveable),
                    jax.remat(f4, policy=policies.save_only_these_names("a")),
                    jax.checkpoint(f4, policy=policies.save_any_names_but_these("b")),
                    jax.checkpoint(f4, policy=policies.save_anything_except_these_names("c")),
                    jax.checkpoint(f4, policy=policies.nothing_saveable)]
        grads = [jax.grad(lambda *a: jnp.sum(v(*a)), argnums=(0, 1, 2, 3))(W1, W2, W3, x)
                 for v in variants]

        def net(Ws, x):                 # a checkpointed layer in a scan
            return jnp.sum(jax.lax.scan(lambda x, W: (jax.checkpoint(g)(W, x), None),
                                        x, Ws)[0])

        @partial(jax.checkpoint, static_argnums=(1,))
        def sines(x, n):
            for _ in range(n):
                x = jnp.sin(x)
            return x
        return (grads, jax.jit(jax.grad(lambda *a: jnp.sum(f2(*a))))(W1, W2, W3, x),
                jax.grad(net)(Ws, x[:3]), jax.jit(jax.grad(net))(Ws, x[:3]),
                jax.grad(sines)(1.0, 3))
    grads, *_ = agree(program)
    for other in grads[1:]:
        for a, b in zip(other, grads[0]):
            assert_close(a, b, rtol=1e-13)


def test_ad_checkpoint_names_and_the_residuals_it_cannot_print():
    assert wg.ad_checkpoint.checkpoint_name(wnp.ones(2), "h") is not None
    with pytest.raises(TypeError, match="str"):
        wg.ad_checkpoint.checkpoint_name(1.0, 3)
    assert wg.ad_checkpoint.checkpoint is wg.checkpoint
    with pytest.raises(NotImplementedError, match="saved residuals"):
        wg.ad_checkpoint.print_saved_residuals(lambda x: x * x, 1.0)


def test_fixed_point_under_jit_and_vmap():
    # (the tutorial's jit(vmap(newton_sqrt)): the while_loop is one node, run until every
    # example has converged; its gradient is the custom rule's, whose own while_loop
    # is run forward, so it is compiled and batched too)
    def program(jax, jnp):
        newton_sqrt = fixed_point_program(jax, jnp)
        a = jnp.array([3., 4., 5., 0.5])
        return (jax.jit(jax.vmap(newton_sqrt))(a), jax.jit(jax.vmap(jax.grad(newton_sqrt)))(a))
    roots, grads = agree(program, rtol=1e-9)
    a = np.array([3., 4., 5., 0.5])
    assert_close(roots, np.sqrt(a), rtol=1e-9)
    assert_close(grads, 0.5 / np.sqrt(a), rtol=1e-6)
