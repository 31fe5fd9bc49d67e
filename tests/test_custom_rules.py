"""wg.custom_jvp and wg.custom_vjp (JAX's custom derivatives): the rules are used, in every
mode where they apply, to second order, against finite differences and closed forms."""
import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from fd import check_grads, fd_jacobian

rng = np.random.default_rng(20261123)


# ---- custom_jvp --------------------------------------------------------------------------------
@wg.custom_jvp
def scaled_sin(p, x):
    """p["a"] * sin(x) + p["b"]: pytree and array arguments."""
    return p["a"] * wnp.sin(x) + p["b"]


@scaled_sin.defjvp
def _scaled_sin_jvp(primals, tangents):
    (p, x), (tp, tx) = primals, tangents
    return scaled_sin(p, x), tp["a"] * wnp.sin(x) + p["a"] * wnp.cos(x) * tx + tp["b"]


def test_a_correct_jvp_rule_gives_every_derivative_to_second_order():
    p = {"a": 1.3, "b": rng.normal(size=3)}
    x = rng.normal(size=3)
    flat = lambda a, b, x: scaled_sin({"a": a, "b": b}, x)
    check_grads(flat, p["a"], p["b"], x, order=2)
    J = wg.jacrev(lambda x: scaled_sin(p, x))(x)
    np.testing.assert_allclose(J, np.diag(1.3 * np.cos(x)), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(wg.jacfwd(lambda x: scaled_sin(p, x))(x), J, rtol=1e-14)
    g = wg.grad(lambda p: wnp.sum(scaled_sin(p, x)))(p)
    assert g["a"] == pytest.approx(np.sum(np.sin(x)), rel=1e-14)
    np.testing.assert_allclose(g["b"], np.ones(3))
    H = wg.hessian(lambda x: wnp.sum(scaled_sin(p, x)))(x)
    np.testing.assert_allclose(H, np.diag(-1.3 * np.sin(x)), rtol=1e-13, atol=1e-15)


def test_the_rule_is_used_not_the_function_a_straight_through_estimator():
    @wg.custom_jvp
    def hard_round(x):
        return wnp.round(x)

    @hard_round.defjvp
    def _(primals, tangents):
        return hard_round(primals[0]), tangents[0]        # pretend it is the identity
    x = np.array([0.2, 1.7, -2.4])
    np.testing.assert_array_equal(hard_round(x), np.round(x))
    np.testing.assert_array_equal(wg.grad(lambda x: wnp.sum(hard_round(x) * x))(x),
                                  np.round(x) + x)
    np.testing.assert_array_equal(wg.jvp(hard_round, (x,), (np.ones(3),))[1], np.ones(3))
    # compiled and batched, the same rule
    g = wg.compile(wg.grad(lambda x: wnp.sum(hard_round(x) ** 2)))(x)
    np.testing.assert_allclose(g, 2 * np.round(x))
    per = wg.vmap(wg.grad(lambda x: hard_round(x) * 3.0))(x)
    np.testing.assert_array_equal(per, [3.0, 3.0, 3.0])


def test_defjvps_one_rule_per_argument_summed_and_none_for_zero():
    @wg.custom_jvp
    def f(x, y):
        return wnp.sin(x) * y

    f.defjvps(lambda tx, ans, x, y: wnp.cos(x) * y * tx, lambda ty, ans, x, y: wnp.sin(x) * ty)
    x, y = rng.normal(size=3), rng.normal(size=3)
    check_grads(f, x, y, order=2)
    # the rule, not the function: y's share left out is a zero derivative in y
    @wg.custom_jvp
    def g(x, y):
        return wnp.sin(x) * y

    g.defjvps(lambda tx, ans, x, y: wnp.cos(x) * y * tx, None)
    gx, gy = wg.grad(lambda x, y: wnp.sum(g(x, y)), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, np.cos(x) * y, rtol=1e-15)
    np.testing.assert_array_equal(gy, np.zeros(3))
    h = wg.custom_jvp(lambda x: x * 2.0)
    h.defjvps(None)
    assert wg.grad(h)(1.5) == 0.0
    k = wg.custom_jvp(lambda x, y: x * y)
    k.defjvps(None)
    with pytest.raises(TypeError, match="takes 2 arguments, but defjvps was given 1"):
        wg.grad(k)(1.0, 2.0)
    with pytest.raises(TypeError, match="nondiff_argnums"):
        wg.custom_jvp(lambda n, x: x * n, nondiff_argnums=(0,)).defjvps(None)


def test_custom_jvp_nondiff_argnums_go_first_to_the_rule():
    seen = []

    @wg.custom_jvp
    def power(n, x):
        return x ** n

    def rule(n, primals, tangents):
        seen.append(n)
        x, = primals
        t, = tangents
        return power(n, x), n * x ** (n - 1) * t
    power = wg.custom_jvp(power.fun, nondiff_argnums=(0,))
    power.defjvp(rule)
    assert wg.grad(lambda x: power(3, x))(2.0) == pytest.approx(12.0)
    assert wg.grad(wg.grad(lambda x: power(3, x)))(2.0) == pytest.approx(12.0)
    assert set(seen) == {3}
    with pytest.raises(TypeError, match="nondiff_argnums holds a traced value"):
        wg.grad(lambda n: power(n, 2.0))(3.0)


def test_a_loop_body_with_other_nondiff_arguments_is_another_loop():
    # a scan caches its loop by the body's digest, which read the rule's layout as "...":
    # the body with k = 3 reused the loop traced with k = 2 (11.25 for 30.375), for
    # custom_vjp and a nondiff function too
    power = wg.custom_jvp(lambda x, k: x ** k, nondiff_argnums=(1,))
    power.defjvp(lambda k, xs, ts: (power(xs[0], k), k * xs[0] ** (k - 1) * ts[0]))
    applied = wg.custom_vjp(lambda x, f: f(x), nondiff_argnums=(1,))
    applied.defvjp(lambda x, f: (f(x), x),
                   lambda f, x, g: (g * {wnp.sin: wnp.cos, wnp.exp: wnp.exp}[f](x),))
    xs = np.array([1.0, 2.0])
    for k in (2, 3, 4):
        loop = lambda a: wg.scan(lambda c, x: (c + power(a * x, k), None), 0.0, xs)[0]  # noqa
        value, slope = wg.value_and_grad(loop)(1.5)
        assert value == pytest.approx(np.sum((1.5 * xs) ** k))
        assert slope == pytest.approx(np.sum(k * 1.5 ** (k - 1) * xs ** k))
    for f, df in ((wnp.sin, np.cos), (wnp.exp, np.exp)):
        loop = lambda a: wg.scan(lambda c, x: (c + applied(a * x, f), None), 0.0, xs)[0]  # noqa
        assert wg.grad(loop)(0.5) == pytest.approx(np.sum(xs * df(0.5 * xs)))


def _rule_of(tangent):
    @wg.custom_jvp
    def f(x):
        return wnp.sin(x)

    @f.defjvp
    def _(primals, tangents):
        return wnp.sin(primals[0]), tangent(primals[0], tangents[0])
    return f


@pytest.mark.parametrize("bad,message", [
    (lambda x, t: wnp.cos(x) * t + 1.0, "for zero tangents"),            # affine
    (lambda x, t: wnp.cos(x) * t ** 2, "random tangent"),                # nonlinear
    (lambda x, t: wnp.sin(t) * wnp.cos(x) + t * 0.0, "random tangent"),
])
def test_a_rule_that_is_not_linear_in_the_tangents_is_refused_in_reverse_mode(bad, message):
    """Reverse mode transposes the rule: a rule that is not linear would make wg.grad
    disagree with wg.jvp, so it is refused, at scalars and arrays, where values exist."""
    f = _rule_of(bad)
    for x in (0.3, rng.normal(size=4)):
        with pytest.raises(ValueError, match=f"custom_jvp rule of 'f' is not linear.*{message}"):
            wg.grad(lambda x: wnp.sum(f(x)))(x)
    good = _rule_of(lambda x, t: wnp.cos(x) * t)
    x = rng.normal(size=4)
    np.testing.assert_allclose(wg.grad(lambda x: wnp.sum(good(x)))(x), np.cos(x), rtol=1e-15)


def test_a_linear_rule_at_a_singular_point_is_not_refused():
    """t / (2 sqrt(x)) at x = 0 is linear with an infinite slope: nan and inf, as the
    plain rule gives, and no linearity error; the check runs at the next regular point."""
    @wg.custom_jvp
    def root(x):
        return wnp.sqrt(x)
    root.defjvp(lambda p, t: (wnp.sqrt(p[0]), t[0] / (2 * wnp.sqrt(p[0]))))
    with np.errstate(all="ignore"):
        assert np.isinf(wg.grad(root)(0.0))
    assert wg.grad(root)(4.0) == 0.25
    assert wg.grad(lambda x: 0.0 * root(x))(4.0) == 0.0        # a zero cotangent


def test_the_linearity_check_accepts_rules_that_mix_arguments_and_outputs():
    """A linear rule in several tangents, of a pytree result, passes (and is right)."""
    p = {"a": 0.7, "b": rng.normal(size=3)}
    x = rng.normal(size=3)
    g = wg.grad(lambda a, b, x: wnp.sum(scaled_sin({"a": a, "b": b}, x) ** 2),
                argnums=(0, 1, 2))(p["a"], p["b"], x)
    y = p["a"] * np.sin(x) + p["b"]
    np.testing.assert_allclose(g[0], np.sum(2 * y * np.sin(x)), rtol=1e-13)
    np.testing.assert_allclose(g[1], 2 * y, rtol=1e-13)
    np.testing.assert_allclose(g[2], 2 * y * p["a"] * np.cos(x), rtol=1e-13)


def test_a_tangent_of_the_wrong_shape_names_both_shapes():
    @wg.custom_jvp
    def f(x):
        return x ** 2
    f.defjvp(lambda p, t: (p[0] ** 2, np.ones(5)))
    for run in (lambda: wg.grad(lambda x: wnp.sum(f(x)))(np.ones(3)),
                lambda: wg.jvp(f, (np.ones(3),), (np.ones(3),))):
        with pytest.raises(ValueError, match=r"tangent of shape \(5,\), where f's result "
                                             r"has shape \(3,\)"):
            run()
    f.defjvp(lambda p, t: (p[0] ** 2, 0.0))                # a scalar zero broadcasts
    np.testing.assert_array_equal(wg.jvp(f, (np.ones(3),), (np.ones(3),))[1], np.zeros(3))


# ---- custom_vjp --------------------------------------------------------------------------------
def test_custom_vjp_with_residuals_against_finite_differences_to_second_order():
    calls = {"fwd": 0}

    @wg.custom_vjp
    def f(x, y):
        return wnp.sin(x) * y

    def fwd(x, y):
        calls["fwd"] += 1
        return f(x, y), (wnp.cos(x), wnp.sin(x), y)

    def bwd(res, g):
        cos_x, sin_x, y = res
        return g * cos_x * y, wnp.sum(g * sin_x)       # y is a scalar: its cotangent too
    f.defvjp(fwd, bwd)
    x, y = rng.normal(size=4), 1.7
    out, back = wg.vjp(f, x, y)
    np.testing.assert_allclose(out, np.sin(x) * y, rtol=1e-15)
    ct = rng.normal(size=4)
    gx, gy = back(ct)
    J = fd_jacobian(lambda v: np.sin(v[:4]) * v[4], np.append(x, y), 1e-6)
    np.testing.assert_allclose(np.append(gx, gy), ct @ J, rtol=1e-7)
    assert calls["fwd"] == 1
    # second order: the rule is written with wengert.numpy, so it differentiates again
    H = wg.hessian(lambda x: wnp.sum(f(x, y)))(x)
    np.testing.assert_allclose(H, np.diag(-np.sin(x) * y), rtol=1e-13, atol=1e-15)
    gg = wg.grad(lambda y: wg.grad(lambda y: wnp.sum(f(x, y)) ** 2)(y))(y)
    assert gg == pytest.approx(2 * np.sum(np.sin(x)) ** 2, rel=1e-12)


def test_custom_vjp_nondiff_argnums_and_pytrees():
    @wg.custom_vjp
    def weighted(scale, p):
        return scale * (p["u"] @ p["v"])

    def fwd(scale, p):
        return weighted(scale, p), p

    def bwd(scale, p, g):
        return ({"u": scale * g * p["v"], "v": None},)      # v: declared zero on purpose
    weighted = wg.custom_vjp(weighted.fun, nondiff_argnums=(0,))
    weighted.defvjp(fwd, bwd)
    p = {"u": rng.normal(size=3), "v": rng.normal(size=3)}
    g = wg.grad(lambda p: weighted(2.0, p))(p)
    np.testing.assert_allclose(g["u"], 2.0 * p["v"], rtol=1e-15)
    np.testing.assert_array_equal(g["v"], np.zeros(3))


def test_custom_vjp_refuses_forward_mode_as_jax_does():
    @wg.custom_vjp
    def f(x):
        return x * 2.0
    f.defvjp(lambda x: (f(x), None), lambda res, g: (g * 2.0,))
    assert wg.grad(f)(1.0) == 2.0
    with pytest.raises(TypeError, match="custom_vjp function 'f' has no forward-mode rule"):
        wg.jvp(f, (1.0,), (1.0,))


def test_a_function_named_like_a_built_in_primitive_is_its_own():
    @wg.custom_jvp
    def logsumexp(x):
        return wnp.log(wnp.sum(wnp.exp(x)))
    logsumexp.defjvp(lambda p, t: (logsumexp(*p), wnp.sum(wnp.exp(p[0] - logsumexp(*p))
                                                           * t[0])))
    x = np.array([0.0, np.log(3.0)])
    np.testing.assert_allclose(wg.grad(logsumexp)(x), [0.25, 0.75], rtol=1e-15)
    assert "logsumexp_user" in str(wg.trace(logsumexp, x))


def test_errors():
    @wg.custom_jvp
    def no_rule(x):
        return x
    with pytest.raises(TypeError, match="has no rule"):
        no_rule(2.0)                              # (as in JAX, even on plain numbers)
    with pytest.raises(TypeError, match=r"has no rule: declare it with @no_rule\.defjvp"):
        wg.grad(no_rule)(1.0)

    @wg.custom_vjp
    def g(x):
        return x * x
    with pytest.raises(TypeError, match=r"declare it with g\.defvjp\(fwd, bwd\)"):
        wg.grad(g)(1.0)
    g.defvjp(lambda x: g(x), lambda res, ct: (ct,))
    with pytest.raises(TypeError, match=r"fwd must return \(output, residuals\)"):
        wg.grad(g)(1.0)
    g.defvjp(lambda x: (g(x), None), lambda res, ct: (ct, ct))
    with pytest.raises(TypeError, match=r"one cotangent per differentiable argument \(1\)"):
        wg.grad(g)(1.0)

    @wg.custom_jvp
    def named(x):
        return x, "label"
    named.defjvp(lambda p, t: (named(*p), t))
    with pytest.raises(TypeError, match="returned a str.*must return arrays or numbers"):
        wg.grad(lambda x: named(x)[0])(1.0)

    @wg.custom_jvp
    def pair(x):
        return (x, x)
    pair.defjvp(lambda p, t: (pair(*p), t[0]))          # one tangent for two results
    with pytest.raises(TypeError, match="the rule of 'pair' returned a result of structure"):
        wg.jvp(lambda x: pair(x)[0], (1.0,), (1.0,))
    with pytest.raises(TypeError, match="decorates a function"):
        wg.custom_vjp(3.0)

    @wg.custom_jvp
    def one(x):
        return x * 2.0
    one.defjvp(lambda p, t: (one(*p), (t[0] * 2.0,)))   # a 1-tuple for one result
    for transform in (lambda: wg.jvp(one, (1.0,), (1.0,)), lambda: wg.grad(one)(1.0)):
        with pytest.raises(TypeError, match="the rule of 'one' returned a result of "
                           r"structure \(\*,\), where f's result is one array or number"):
            transform()


# ---- several results ----------------------------------------------------------------------------
@wg.custom_jvp
def polar(x, y):
    """(r, θ) of (x, y), a tuple of arrays."""
    return wnp.hypot(x, y), wnp.arctan2(y, x)


@polar.defjvp
def _polar_jvp(primals, tangents):
    (x, y), (dx, dy) = primals, tangents
    r, theta = polar(x, y)
    return (r, theta), ((x * dx + y * dy) / r, (x * dy - y * dx) / r ** 2)


def test_a_jvp_rule_with_several_results_in_every_mode_to_second_order():
    x, y = rng.normal(size=3), rng.normal(size=3) + 2.0
    both = lambda x, y: wnp.concatenate(polar(x, y))
    check_grads(both, x, y, order=2)
    J = wg.jacrev(both, argnums=(0, 1))(x, y)
    r2 = x * x + y * y
    np.testing.assert_allclose(J[0], np.vstack([np.diag(x / np.sqrt(r2)), np.diag(-y / r2)]),
                               rtol=1e-13)
    np.testing.assert_allclose(wg.jacfwd(both, argnums=(0, 1))(x, y), J, rtol=1e-13)
    # each result alone, and under vmap and compile
    g = wg.grad(lambda x: wnp.sum(polar(x, y)[1]))(x)
    np.testing.assert_allclose(g, -y / r2, rtol=1e-13)
    per_row = wg.vmap(wg.grad(lambda x, y: polar(x, y)[0]))(x, y)
    np.testing.assert_allclose(per_row, x / np.sqrt(r2), rtol=1e-13)
    compiled = wg.compile(wg.grad(lambda x: wnp.sum(polar(x, y)[1])), x)
    np.testing.assert_allclose(compiled(x), g, rtol=1e-13)


def test_the_results_keep_their_shapes_and_dtypes():
    @wg.custom_jvp
    def stats(x):
        return {"mean": wnp.mean(x, axis=0), "count": x.shape[0],
                "x32": wnp.astype(x, np.float32)}
    stats.defjvp(lambda p, t: (stats(*p), {"mean": wnp.mean(t[0], axis=0), "count": 0.0,
                                           "x32": wnp.astype(t[0], np.float32)}))
    x = rng.normal(size=(4, 2))
    out = wg.jvp(stats, (x,), (np.ones((4, 2)),))
    values, tangents = out
    assert values["mean"].shape == (2,) and values["x32"].dtype == np.float32
    np.testing.assert_allclose(tangents["mean"], np.ones(2))
    g = wg.grad(lambda x: wnp.sum(stats(x)["mean"]) + wnp.sum(stats(x)["x32"]))(x)
    np.testing.assert_allclose(g, np.full((4, 2), 1.25), rtol=1e-6)


@wg.custom_vjp
def split_scale(x, s):
    """({"scaled": x s, "total": Σx}), a dict of results, with a hand-written VJP."""
    return {"scaled": x * s, "total": wnp.sum(x)}


def _split_fwd(x, s):
    return split_scale(x, s), (x, s)


def _split_bwd(res, g):
    x, s = res
    return g["scaled"] * s + g["total"], wnp.sum(g["scaled"] * x)


split_scale.defvjp(_split_fwd, _split_bwd)


def test_a_vjp_rule_with_several_results_against_finite_differences():
    x, s = rng.normal(size=3), 1.7

    def loss(x, s):
        out = split_scale(x, s)
        return wnp.sum(wnp.sin(out["scaled"])) * out["total"]
    gx, gs = wg.grad(loss, argnums=(0, 1))(x, s)
    np.testing.assert_allclose(gx, fd_jacobian(lambda v: loss(v, s), x, 1e-6),
                               rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(gs, fd_jacobian(lambda v: loss(x, v[0]), np.array([s]),
                                               1e-6)[0], rtol=1e-7)
    # second order, reverse over reverse (no forward mode, as in JAX): the bwd is written
    # with wengert.numpy, so it differentiates again
    H = wg.jacrev(wg.grad(lambda x: loss(x, s)))(x)
    np.testing.assert_allclose(H, fd_jacobian(wg.grad(lambda x: loss(x, s)), x, 1e-6),
                               rtol=1e-6, atol=1e-8)


def test_a_dual_goes_through_the_custom_rule():
    # wg.Dual skipped the rule: safe_norm's tangent at 0 was nan (the rule's is 0), a
    # custom_jvp with a rule of its own gave cos's tangent, and a custom_vjp function
    # returned a forward tangent where wg.jvp refuses (QA)
    @wg.custom_jvp
    def safe_norm(x):
        return wnp.sqrt(wnp.sum(x * x))

    @safe_norm.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        n = safe_norm(x)
        return n, wnp.sum(x * t) / wnp.where(n == 0, 1.0, n)
    d = safe_norm(wg.Dual(np.zeros(2), np.array([1.0, 0.0])))
    assert d.primal == 0.0 and d.tangent == 0.0

    @wg.custom_jvp
    def doubled(x):
        return wnp.sin(x)
    doubled.defjvp(lambda p, t: (doubled(p[0]), 2.0 * t[0]))
    assert doubled(wg.Dual(0.3, 1.0)).tangent == 2.0 == wg.jvp(doubled, (0.3,), (1.0,))[1]

    @wg.custom_vjp
    def clip_gradient(x):
        return x
    clip_gradient.defvjp(lambda x: (x, None), lambda res, g: (wnp.clip(g, -1.0, 1.0),))
    with pytest.raises(TypeError, match="has no forward-mode rule"):
        clip_gradient(wg.Dual(1.0, 5.0))
    assert clip_gradient(1.0) == 1.0                          # (plain values as before)


@pytest.mark.parametrize("kind", ["jvp", "vjp"])
def test_a_function_closing_over_a_traced_value_is_refused(kind):
    # grad used to return a wrong number (3.0 for d(w·w)/dw = 6.0) or an internal node
    def loss(w):
        if kind == "jvp":
            @wg.custom_jvp
            def c(x):
                return x * w
            c.defjvp(lambda p, t: (c(p[0]), t[0] * w))
        else:
            @wg.custom_vjp
            def c(x):
                return x * w
            c.defvjp(lambda x: (c(x), None), lambda r, g: (g * w,))
        return c(w)
    assert loss(3.0) == 9.0                  # nothing traced: f is called as it is
    message = f"custom_{kind} function 'c' computes with a traced value .* closes over"
    for run in (lambda: wg.grad(loss)(3.0), lambda: wg.vmap(loss)(np.arange(3.0)),
                lambda: wg.compile(wg.grad(loss))(3.0)):
        with pytest.raises(ValueError, match=message):
            run()
    if kind == "jvp":
        with pytest.raises(ValueError, match=message):
            wg.jvp(loss, (3.0,), (1.0,))

    # so is one whose arguments are all constants: a straight-through round of w·2 gave
    # round's derivative, 0, where the rule says 2 (f itself was called, the rule skipped)
    def through_constant(w):
        if kind == "jvp":
            @wg.custom_jvp
            def c(x):
                return wnp.round(w * x)
            c.defjvps(lambda t, ans, x: w * t)
        else:
            @wg.custom_vjp
            def c(x):
                return wnp.round(w * x)
            c.defvjp(lambda x: (c(x), None), lambda r, g: (g * w,))
        return c(2.0)
    assert through_constant(1.3) == 3.0
    for run in (lambda: wg.grad(through_constant)(1.3),
                lambda: wg.vmap(through_constant)(np.arange(3.0))):
        with pytest.raises(ValueError, match=message):
            run()

    # passed as an argument, the same function differentiates: d(w·w)/dw = 2w
    def fixed(w):
        @wg.custom_jvp
        def c(x, w):
            return x * w
        c.defjvp(lambda p, t: (c(*p), t[0] * p[1] + p[0] * t[1]))
        return c(w, w)
    assert abs(wg.grad(fixed)(3.0) - 6.0) < 1e-15


def test_shapes_found_on_stand_ins_raise_no_warnings():
    # under wg.compile a user's primitive is run on zeros to learn its result's shape;
    # 1/0 there warned the user of a division they never made
    import warnings

    @wg.primitive
    def reciprocal(x):
        return 1.0 / x
    reciprocal.defpartials(lambda x, ans: -ans * ans)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f = wg.compile(lambda x: reciprocal(x) * 2.0, np.ones(3))
        assert np.array_equal(f(np.full(3, 4.0)), np.full(3, 0.5))
