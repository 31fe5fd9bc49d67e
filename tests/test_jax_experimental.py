"""wengert.experimental (JAX's jax.experimental.ode and .jet), wengert.flatten_util and
wg.typeof: JAX's signatures and JAX's answers, derivatives against central differences
and closed forms, and the errors."""
import math

import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from wengert.experimental.jet import jet
from wengert.experimental.ode import odeint
from fd import assert_close, check_grads

rng = np.random.default_rng(11)


# ---- ode ------------------------------------------------------------------------------------
def lotka(y, t, a, b):
    prey, pred = y["prey"], y["pred"]
    return {"prey": a * prey - b * prey * pred, "pred": b * prey * pred - pred}


def test_odeint_takes_jaxs_call_and_gives_jaxs_answer(jax):
    from jax.experimental.ode import odeint as jodeint
    y0 = {"prey": 1.2, "pred": np.array(0.8)}
    t = np.linspace(0.0, 3.0, 7)
    ours = odeint(lotka, y0, t, 1.1, 0.7)
    theirs = jodeint(lotka, y0, t, 1.1, 0.7)
    assert set(ours) == {"prey", "pred"} and ours["prey"].shape == (7,)
    for k in ours:
        assert_close(ours[k], np.asarray(theirs[k]), rtol=1e-6, atol=1e-8)
    # derivatives in the parameters and the initial state, against JAX's
    loss = lambda y0, a, b, solve: solve(lotka, y0, t, a, b)["pred"][-1]
    ours_g = wg.grad(lambda y0, a, b: loss(y0, a, b, odeint), argnums=(0, 1, 2))(y0, 1.1, 0.7)
    theirs_g = jax.grad(lambda y0, a, b: loss(y0, a, b, jodeint), argnums=(0, 1, 2))(
        y0, 1.1, 0.7)
    assert_close(ours_g[1], float(theirs_g[1]), rtol=1e-5)
    assert_close(ours_g[2], float(theirs_g[2]), rtol=1e-5)
    assert_close(ours_g[0]["prey"], float(theirs_g[0]["prey"]), rtol=1e-5)


def test_odeint_state_shapes_and_derivatives_against_closed_forms():
    t = np.array([0.0, 0.5, 2.0])
    # a scalar state: shape (len(t),), not SciPy's (len(t), 1)
    ys = odeint(lambda y, t, k: -k * y, 2.0, t, 0.9)
    assert ys.shape == (3,)
    assert_close(ys, 2.0 * np.exp(-0.9 * t), rtol=1e-7)
    dk = wg.grad(lambda k: odeint(lambda y, t, k: -k * y, 2.0, t, k)[-1])(0.9)
    assert_close(dk, -2.0 * 2.0 * np.exp(-0.9 * 2.0), rtol=1e-6)
    # a matrix state and a linear system: y(t) = expm(A t) y0
    import scipy.linalg as sl
    A = rng.normal(size=(2, 2)) * 0.5
    y0 = rng.normal(size=(2, 3))
    ys = odeint(lambda y, t, A: A @ y, y0, t, A, rtol=1e-10, atol=1e-10)
    assert ys.shape == (3, 2, 3)
    assert_close(ys[-1], sl.expm(A * 2.0) @ y0, rtol=1e-7, atol=1e-9)
    check_grads(lambda y0, A: odeint(lambda y, t, A: A @ y, y0, t, A, rtol=1e-10,
                                     atol=1e-10)[-1], y0, A, order=1, rtol=1e-4, atol=1e-6)


def test_odeint_errors():
    t = np.array([0.0, 1.0])
    with pytest.raises(ValueError, match="y0's structure"):
        odeint(lambda y, t: {"a": -y["a"]}, {"a": 1.0, "b": 2.0}, t)
    with pytest.raises(ValueError, match=r"shape \(2,\) for a leaf of y0 of shape \(3,\)"):
        odeint(lambda y, t: -y[:2], np.ones(3), t)
    with pytest.raises(TypeError, match="func must be a function"):
        odeint(3.0, 1.0, t)
    with pytest.raises(ValueError, match="no arrays"):
        odeint(lambda y, t: y, {}, t)


# ---- jet ------------------------------------------------------------------------------------
CURVES = {
    "sin of a cube": (lambda x: wnp.sin(x ** 3), lambda jnp: (lambda x: jnp.sin(x ** 3))),
    "exp-log mix": (lambda x: wnp.exp(x) * wnp.log1p(x * x),
                    lambda jnp: (lambda x: jnp.exp(x) * jnp.log1p(x * x))),
    "tanh of a sum": (lambda x: wnp.tanh(wnp.sum(x) * x),
                      lambda jnp: (lambda x: jnp.tanh(jnp.sum(x) * x))),
}


@pytest.mark.parametrize("name", sorted(CURVES))
@pytest.mark.parametrize("scaled", [True, False])
def test_jet_against_jaxs(jax, name, scaled):
    from jax.experimental.jet import jet as jjet
    import jax.numpy as jnp
    ours_f, make = CURVES[name]
    x = rng.uniform(0.2, 0.9, size=3)
    terms = [rng.normal(size=3) for _ in range(4)]
    f0, fs = jet(ours_f, (x,), (terms,), factorial_scaled=scaled)
    g0, gs = jjet(make(jnp), (x,), (terms,), factorial_scaled=scaled)
    assert_close(f0, np.asarray(g0), rtol=1e-13)
    assert len(fs) == 4
    for a, b in zip(fs, gs):
        assert_close(a, np.asarray(b), rtol=1e-10, atol=1e-12)


def test_jet_terms_are_derivatives_of_the_curve():
    # along x(t) = x + t v + t² w / 2, term k is d^k/dt^k f(x(t)) at 0: against
    # central differences of the composite, and (scaled=False) those over k!
    f = lambda x, y: x * wnp.sin(y) + x ** 2
    x, y, v, w = 0.7, 1.3, 0.4, -0.2
    _, (d1, d2) = jet(f, (x, y), ((v, 0.0), (w, 0.5)))
    curve = lambda t: (x + t * v) * math.sin(y + t * w + 0.25 * t * t) + (x + t * v) ** 2
    h = 1e-4
    assert_close(d1, (curve(h) - curve(-h)) / (2 * h), rtol=1e-7)
    assert_close(d2, (curve(h) - 2 * curve(0.0) + curve(-h)) / h ** 2, rtol=1e-5)
    _, (c1, c2) = jet(f, (x, y), ((v, 0.0), (w, 0.25)), factorial_scaled=False)
    assert_close([c1, c2], [d1, d2 / 2], rtol=1e-12)
    # pytrees in and out; the result differentiates
    g = lambda p: {"s": p["a"] * p["b"], "d": p["a"] - p["b"]}
    p0, (p1,) = jet(g, ({"a": 2.0, "b": 3.0},), (({"a": 1.0, "b": -1.0},),))
    assert p0 == {"s": 6.0, "d": -1.0} and p1 == {"s": 1.0, "d": 2.0}
    slope = wg.grad(lambda x: jet(lambda z: wnp.exp(2.0 * z), (x,), ((1.0, 0.0),))[1][1])
    assert_close(slope(0.3), 8.0 * math.exp(0.6), rtol=1e-12)


def test_jet_errors():
    with pytest.raises(ValueError, match="one series per primal"):
        jet(lambda x, y: x * y, (1.0, 2.0), ([1.0],))
    with pytest.raises(ValueError, match="same number of terms"):
        jet(lambda x, y: x * y, (1.0, 2.0), ([1.0], [1.0, 0.0]))
    with pytest.raises(ValueError, match="term 1 of series 0"):
        jet(lambda p: p["a"], ({"a": 1.0},), ([2.0],))
    with pytest.raises(TypeError, match="tuples or lists"):
        jet(wnp.sin, 1.0, ([1.0],))


# ---- flatten_util, typeof, import wengert as jax ------------------------------------------
def test_flatten_util_and_typeof_as_jaxs(jax):
    import jax.flatten_util
    import jax.numpy as jnp
    tree = {"w": rng.normal(size=(2, 3)), "b": rng.normal(size=3), "s": (1.5, np.arange(2.0))}
    ours, unravel = wg.flatten_util.ravel_pytree(tree)
    theirs, _ = jax.flatten_util.ravel_pytree(tree)
    assert_close(ours, np.asarray(theirs), rtol=0)
    assert_close(unravel(ours)["w"], tree["w"], rtol=0)
    for x in (np.ones((2, 3), np.float32), np.arange(4), 2.0, np.float64(1.0)):
        ours, theirs = wg.typeof(x), jax.typeof(jnp.asarray(x) if not isinstance(x, float)
                                                 else x)
        assert ours.shape == theirs.shape
    assert wg.typeof(2.0).weak and not wg.typeof(np.ones(2)).weak
    assert wg.jit(lambda x: wnp.zeros(wg.typeof(x).shape[0]) + x)(np.ones(3)).shape == (3,)
    with pytest.raises(TypeError, match="tree_map"):
        wg.typeof({"a": 1.0})


def test_import_wengert_as_jax_reaches_the_experimental_modules():
    import wengert as jax
    ys = jax.experimental.ode.odeint(lambda y, t: -y, 1.0, np.array([0.0, 1.0]))
    assert_close(ys[1], math.exp(-1.0), rtol=1e-7)
    assert jax.experimental.jet.jet(wnp.exp, (0.0,), ([1.0],)) == (1.0, [1.0])
