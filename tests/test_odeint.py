"""wengert.scipy.integrate.odeint: SciPy's values; derivatives against closed forms and
central differences in every mode (adjoint VJP, forward-sensitivity JVP, second order);
SciPy's conventions (tfirst, scalar and decreasing t, repeats); clear errors."""
import warnings

import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from fd import assert_close, fd_jacobian
from ode_systems import forced, lotka_volterra

scipy_integrate = pytest.importorskip("scipy.integrate")
from wengert.scipy.integrate import odeint  # noqa: E402
from wengert.scipy import integrate as wint  # noqa: E402

TIGHT = dict(rtol=1e-12, atol=1e-12)     # solver tolerances for closed-form comparisons
FD = dict(rtol=1e-11, atol=1e-11)        # ... for comparisons with central differences




P = np.array([1.0, 0.5, 0.8, 0.3])
Y0 = np.array([1.0, 0.5])
T = np.linspace(0.0, 4.0, 9)
PARAMS = {"spring": np.array([2.0, 0.3]), "amp": 0.7}


def test_reachable_as_wengert_scipy_integrate():
    import os
    import subprocess
    import sys
    code = ("import wengert.scipy as s, sys; assert 'wengert.scipy.integrate' not in "
            "sys.modules; print(s.integrate.odeint.__module__, s.stats.__name__)")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=root).stdout.split()
    assert out == ["wengert.scipy.integrate", "wengert.scipy.stats"]


# --- values ------------------------------------------------------------------------------
def test_plain_values_are_scipys():
    want = scipy_integrate.odeint(lotka_volterra, Y0, T, args=(P,))
    got = odeint(lotka_volterra, Y0, T, args=(P,))
    assert np.array_equal(got, want)


def test_traced_values_are_scipys():
    """The solve under a transformation is SciPy's call of func, the same numbers."""
    want = scipy_integrate.odeint(lotka_volterra, Y0, T, args=(P,))
    ys, _ = wg.vjp(lambda p: odeint(lotka_volterra, Y0, T, args=(p,)), P)
    assert np.array_equal(ys, want)
    ys, _ = wg.jvp(lambda y0, t: odeint(lotka_volterra, y0, t, args=(P,)), (Y0, T),
                   (np.ones(2), np.zeros(9)))
    assert np.array_equal(ys, want)
    loss = lambda p: wnp.sum(odeint(lotka_volterra, Y0, T, args=(p,), rtol=1e-6))
    value, _ = wg.value_and_grad(loss)(P)
    assert value == np.sum(scipy_integrate.odeint(lotka_volterra, Y0, T, args=(P,),
                                                  rtol=1e-6))


def test_one_node_in_the_graph():
    g = wg.trace(lambda p: odeint(lotka_volterra, Y0, T, args=(p,)), P)
    ops = [n.op.name for n in g.nodes if n.op.name not in ("input", "const")]
    assert ops == ["odeint[lotka_volterra]"]


# --- closed forms --------------------------------------------------------------------------
def decay(y, t, k):
    return -k * y


def test_exponential_decay_derivatives():
    """y = y0 exp(-k (t - t0)): dy/dk = -(t - t0) y, dy/dy0 = y / y0, dy_i/dt_i = -k y_i,
    dy_i/dt0 = k y_i (i > 0; y_0 is y0 itself)."""
    k, y0, t = 0.7, 2.0, np.array([0.5, 1.0, 1.7, 3.0])
    solve = lambda k, y0, t: odeint(decay, y0, t, args=(k,), **TIGHT)[:, 0]
    y = y0 * np.exp(-k * (t - t[0]))
    assert_close(solve(k, y0, t), y, rtol=1e-10, atol=0)
    dt = np.diag(-k * y)
    dt[0, 0] = 0.0                                     # y_0 is y0, whatever t0 is
    dt[1:, 0] = k * y[1:]
    for jac in (wg.jacrev, wg.jacfwd):
        dk, dy0, dtt = jac(solve, argnums=(0, 1, 2))(k, y0, t)
        assert_close(dk, -(t - t[0]) * y, rtol=1e-9, atol=1e-12)
        assert_close(dy0, y / y0, rtol=1e-9, atol=1e-12)
        assert_close(dtt, dt, rtol=1e-9, atol=1e-12)


def test_harmonic_oscillator_derivatives():
    """x'' = -w² x from (x0, v0): x = x0 cos wt + v0/w sin wt."""
    def osc(y, t, w):
        return [y[1], -w * w * y[0]]
    t = np.linspace(0.0, 3.0, 7)
    x0, v0, w = 0.4, -1.2, 1.7

    def exact(x0, v0, w):
        return x0 * np.cos(w * t) + v0 / w * np.sin(w * t)
    solve = lambda x0, v0, w: odeint(osc, wnp.stack([x0, v0]), t, args=(w,), **TIGHT)[:, 0]
    assert_close(solve(x0, v0, w), exact(x0, v0, w), rtol=1e-9, atol=1e-10)
    want = (np.cos(w * t), np.sin(w * t) / w,
            -x0 * t * np.sin(w * t) - v0 / w ** 2 * np.sin(w * t) + v0 / w * t * np.cos(w * t))
    for jac in (wg.jacrev, wg.jacfwd):
        for got, w_ in zip(jac(solve, argnums=(0, 1, 2))(x0, v0, w), want):
            assert_close(got, w_, rtol=1e-8, atol=1e-9)


def test_logistic_growth_derivatives():
    """y' = r y (1 - y/K): y = K / (1 + (K/y0 - 1) exp(-r t))."""
    def logistic(y, t, r, K):
        return r * y * (1 - y / K)
    t = np.linspace(0.0, 6.0, 7)

    def exact(r, K, y0):
        return K / (1 + (K / y0 - 1) * wnp.exp(-r * t))
    solve = lambda r, K, y0: odeint(logistic, y0, t, args=(r, K), **TIGHT)[:, 0]
    x = (0.9, 10.0, 0.5)
    assert_close(solve(*x), exact(*x), rtol=1e-9, atol=1e-10)
    want = wg.jacfwd(exact, argnums=(0, 1, 2))(*x)         # derivatives of the formula
    for jac in (wg.jacrev, wg.jacfwd):
        for got, w_ in zip(jac(solve, argnums=(0, 1, 2))(*x), want):
            assert_close(got, w_, rtol=1e-8, atol=1e-9)


# --- against central differences -----------------------------------------------------------
def forced_loss(y0, t, params):
    ys = odeint(forced, y0, t, args=(params,), **FD)
    return wnp.sum(wnp.sin(ys[:, 0]) * ys[:, 1]) + 0.5 * wnp.sum(ys[-1] ** 2)


def test_gradient_against_differences():
    """y0, a pytree of args, and every time of t, through a non-autonomous system."""
    y0, t = np.array([1.0, -0.5]), np.array([0.0, 0.4, 1.1, 1.5, 2.6])
    g_y0, g_t, g_p = wg.grad(forced_loss, argnums=(0, 1, 2))(y0, t, PARAMS)
    h = 1e-5
    assert_close(g_y0, fd_jacobian(lambda v: forced_loss(v, t, PARAMS), y0, h), rtol=1e-6)
    assert_close(g_t, fd_jacobian(lambda v: forced_loss(y0, v, PARAMS), t, h), rtol=1e-6)
    with_spring = lambda s: forced_loss(y0, t, {"spring": s, "amp": PARAMS["amp"]})
    assert_close(g_p["spring"], fd_jacobian(with_spring, PARAMS["spring"], h), rtol=1e-6)
    with_amp = lambda a: forced_loss(y0, t, {"spring": PARAMS["spring"], "amp": a})
    assert_close(g_p["amp"], (with_amp(0.7 + h) - with_amp(0.7 - h)) / (2 * h), rtol=1e-6)
    assert type(g_p["amp"]) is float


def test_jvp_against_differences():
    y0, t = np.array([1.0, -0.5]), np.array([0.0, 0.4, 1.1, 1.5, 2.6])
    rng = np.random.default_rng(0)
    dy0, dt, ds = rng.normal(size=2), rng.normal(size=5), rng.normal(size=2)
    solve = lambda y0, t, s: odeint(forced, y0, t, args=({"spring": s, "amp": 0.7},), **FD)
    _, tangent = wg.jvp(solve, (y0, t, PARAMS["spring"]), (dy0, dt, ds))
    h = 1e-5
    fd = (solve(y0 + h * dy0, t + h * dt, PARAMS["spring"] + h * ds) -
          solve(y0 - h * dy0, t - h * dt, PARAMS["spring"] - h * ds)) / (2 * h)
    assert_close(tangent, fd, rtol=1e-6, atol=1e-8)


def test_jacobians_agree_in_both_modes():
    """jacrev (adjoint: one backward solve per output, batched through wg.vmap) and
    jacfwd (sensitivities) of every output with respect to everything."""
    solve = lambda p, y0, t: odeint(lotka_volterra, y0, t, args=(p,), **FD)
    rev = wg.jacrev(solve, argnums=(0, 1, 2))(P, Y0, T)
    fwd = wg.jacfwd(solve, argnums=(0, 1, 2))(P, Y0, T)
    for r, f in zip(rev, fwd):
        assert_close(r, f, rtol=1e-7, atol=1e-8)
    assert_close(rev[0], fd_jacobian(lambda p: solve(p, Y0, T), P, 1e-5), rtol=1e-6, atol=1e-8)


def lv_loss(p, y0=Y0, t=T):
    ys = odeint(lotka_volterra, y0, t, args=(p,), **FD)
    return wnp.sum((ys - 1.0) ** 2)


def test_hessian_against_differences_of_the_gradient():
    """Forward over reverse: the adjoint's own solves are odeint nodes, differentiated
    by forward sensitivities of the adjoint system."""
    H = wg.hessian(lv_loss)(P)
    fd = fd_jacobian(wg.grad(lv_loss), P, 1e-5)
    assert_close(H, H.T, rtol=1e-7, atol=1e-7)
    assert_close(H, fd, rtol=1e-5, atol=1e-6)


def test_second_order_in_y0_and_t():
    y0, t = np.array([1.0, -0.5]), np.array([0.0, 0.4, 1.1, 1.5])
    H = wg.hessian(forced_loss, argnums=(0, 1))(y0, t, PARAMS)
    g = wg.grad(forced_loss, argnums=(0, 1))
    h = 1e-5
    assert_close(H[0][0], fd_jacobian(lambda v: g(v, t, PARAMS)[0], y0, h), rtol=1e-5, atol=1e-6)
    assert_close(H[1][1], fd_jacobian(lambda v: g(y0, v, PARAMS)[1], t, h), rtol=1e-5, atol=1e-6)
    assert_close(H[0][1], fd_jacobian(lambda v: g(y0, v, PARAMS)[0], t, h), rtol=1e-5, atol=1e-6)


def test_reverse_over_reverse():
    """The gradient of a function of a gradient: the adjoint of the adjoint system."""
    def penalty(p):
        return wnp.sum(wg.grad(lv_loss)(p) ** 2)
    assert_close(wg.grad(penalty)(P), fd_jacobian(penalty, P, 1e-5), rtol=1e-5, atol=1e-6)


def test_hvp_against_hessian():
    v = np.array([0.3, -1.0, 0.5, 2.0])
    assert_close(wg.hvp(lv_loss)(P, v), wg.hessian(lv_loss)(P) @ v, rtol=1e-8, atol=1e-8)


# --- SciPy's conventions -------------------------------------------------------------------
def test_scalar_y0_gives_a_column_as_in_scipy():
    t = np.array([0.0, 1.0, 2.0])
    assert odeint(decay, 1.0, t, args=(0.5,)).shape == (3, 1)
    out = wg.jacrev(lambda k: odeint(decay, 1.0, t, args=(k,), **TIGHT))(0.5)
    assert out.shape == (3, 1)
    assert_close(out[:, 0], -t * np.exp(-0.5 * t), rtol=1e-9, atol=1e-12)


def test_tfirst_and_list_results():
    def f(t, y, w):
        return [y[1], -w * w * y[0]]
    t = np.linspace(0.0, 1.0, 4)
    want = scipy_integrate.odeint(f, [1.0, 0.0], t, args=(2.0,), tfirst=True)
    assert np.array_equal(odeint(f, [1.0, 0.0], t, args=(2.0,), tfirst=True), want)
    g = wg.grad(lambda w: odeint(f, [1.0, 0.0], t, args=(w,), tfirst=True, **TIGHT)[-1, 0])
    assert_close(g(2.0), -np.sin(2.0), rtol=1e-9)


def test_decreasing_and_repeated_times():
    k = 0.6
    for t in (np.array([3.0, 2.0, 0.5]), np.array([0.0, 1.0, 1.0, 2.0])):
        solve = lambda k, t: odeint(decay, 1.5, t, args=(k,), **TIGHT)[:, 0]
        y = 1.5 * np.exp(-k * (t - t[0]))
        assert_close(solve(k, t), y, rtol=1e-9)
        for jac in (wg.jacrev, wg.jacfwd):
            dk, dt = jac(solve, argnums=(0, 1))(k, t)
            assert_close(dk, -(t - t[0]) * y, rtol=1e-8, atol=1e-12)
            want = np.diag(-k * y)
            want[0, 0] = 0.0
            want[1:, 0] += k * y[1:]
            assert_close(dt, want, rtol=1e-8, atol=1e-12)


def test_one_time_is_y0():
    f = lambda y0, k: wnp.sum(odeint(decay, y0, [2.0], args=(k,)) * 3.0)
    assert wg.grad(f, argnums=(0, 1))(np.array([1.0, 2.0]), 0.5)[0].tolist() == [3.0, 3.0]
    assert wg.grad(f, argnums=1)(np.array([1.0, 2.0]), 0.5) == 0.0


def test_state_of_several_dimensions():
    """A matrix ODE (SciPy refuses y0 of two dimensions; here func sees y0's shape):
    X' = A X, X(t) = expm(A t) X0."""
    A = np.array([[0.0, 1.0], [-2.0, -0.3]])
    t = np.array([0.0, 0.5, 1.0])
    f = lambda X, t, A: A @ X
    out = odeint(f, np.eye(2), t, args=(A,), **TIGHT)
    assert out.shape == (3, 2, 2)
    from scipy.linalg import expm
    assert_close(out[-1], expm(A), rtol=1e-9, atol=1e-10)
    g = wg.grad(lambda A: wnp.sum(odeint(f, np.eye(2), t, args=(A,), **TIGHT)[-1]))(A)
    fd = fd_jacobian(lambda A: np.sum(expm(A)), A, 1e-6).reshape(2, 2)
    assert_close(g, fd, rtol=1e-6, atol=1e-8)


def test_integer_times_and_held_arguments():
    """Integer t (as SciPy takes it), an int and a string among args (held fixed)."""
    def f(y, t, k, n, mode):
        return -k * y ** n if mode == "power" else -k * y
    t = np.arange(4)
    g = wg.grad(lambda k: odeint(f, 1.0, t, args=(k, 1, "power"), **TIGHT)[-1, 0])(0.5)
    assert_close(g, -3 * np.exp(-1.5), rtol=1e-9)


def test_keywords_pass_to_scipy():
    kw = dict(hmax=0.05, mxordn=4, rtol=1e-9, atol=1e-9)
    want = scipy_integrate.odeint(decay, [1.0], T, args=(0.5,), **kw)
    ys, _ = wg.vjp(lambda k: odeint(decay, [1.0], T, args=(k,), **kw), 0.5)
    assert np.array_equal(ys, want)


def test_critical_times():
    """tcrit at a jump of the rate: y' = -k y before t = 1.5, -2k y after.  SciPy's
    critical times work forwards only; the adjoint's backward solves go without."""
    f = lambda y, t, k: -k * y * (1 + (t > 1.5))
    t = np.linspace(0.0, 3.0, 4)
    total = lambda k: wnp.sum(odeint(f, 1.0, t, args=(k,), tcrit=[1.5], **TIGHT))
    k = 0.5
    assert_close(total(k), 1 + np.exp(-k) + np.exp(-2.5 * k) + np.exp(-4.5 * k), rtol=1e-9)
    want = -np.exp(-k) - 2.5 * np.exp(-2.5 * k) - 4.5 * np.exp(-4.5 * k)
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # (no ODEintWarning from LSODA)
        assert_close(wg.grad(total)(k), want, rtol=1e-8)
        assert_close(wg.jacfwd(total)(k), want, rtol=1e-8)


# --- the other transformations -------------------------------------------------------------
def test_compiled_gradient():
    g = wg.compile(wg.grad(lv_loss), P)
    assert_close(g(P), wg.grad(lv_loss)(P), rtol=1e-12, atol=0)
    assert_close(g(P + 0.1), wg.grad(lv_loss)(P + 0.1), rtol=1e-12, atol=0)


def test_compiled_derived_systems_are_kept():
    """A fitting loop solves the same problem again and again: the adjoint system's
    compiled right-hand side is made once."""
    wg.grad(lv_loss)(P)
    prims = [p for p in wint._PRIMITIVES.values() if p.system.func is lotka_volterra]
    adjoints = {id(p._adjoint) for p in prims if p._adjoint is not None}
    wg.grad(lv_loss)(P + 0.1)
    assert {id(p._adjoint) for p in prims if p._adjoint is not None} == adjoints
    assert all(p._adjoint.system._code for p in prims if p._adjoint is not None)


SCALE = 1.0


def scaled_decay(y, t, k):
    return -k * SCALE * y                      # reads a global


def test_compiled_code_follows_a_changed_global():
    """The compiled adjoint step holds SCALE as it was traced; a later call of odeint
    sees the change (the code is checked against func once per call) and traces again."""
    global SCALE
    t = np.array([0.0, 2.0])
    g = wg.grad(lambda k: odeint(scaled_decay, 1.0, t, args=(k,), **TIGHT)[-1, 0])
    try:
        for SCALE in (1.0, 3.0):
            assert_close(g(0.5), -2 * SCALE * np.exp(-SCALE), rtol=1e-9)
    finally:
        SCALE = 1.0


def test_uncompilable_right_hand_side_runs_eagerly():
    """A Python branch on a value cannot be compiled: the adjoint runs eagerly."""
    def switched(y, t, k):
        if t < 1.0:                        # a branch on the time, fine for SciPy
            return -k * y
        return -2 * k * y
    t = np.array([0.0, 0.5, 2.0])
    g = wg.grad(lambda k: odeint(switched, 1.0, t, args=(k,), **TIGHT)[-1, 0])(0.3)
    # y(2) = exp(-k - 2k) : d/dk = -3 exp(-3k)
    assert_close(g, -3 * np.exp(-0.9), rtol=1e-6)


# --- errors --------------------------------------------------------------------------------
def test_wrong_shape_from_func():
    bad = lambda y, t, k: wnp.concatenate([y, y]) * k
    with pytest.raises(ValueError, match=r"odeint: func returned dy/dt of shape \(4,\) for a "
                                         r"state y of shape \(2,\)"):
        wg.grad(lambda k: wnp.sum(odeint(bad, Y0, T, args=(k,))))(1.0)
    with pytest.raises(ValueError, match="shape"):
        odeint(lambda X, t: X[0], np.eye(2), T)


def test_times_must_be_monotonic():
    with pytest.raises(ValueError, match="monotonically increasing or monotonically "
                                         "decreasing"):
        wg.grad(lambda k: wnp.sum(odeint(decay, 1.0, [0.0, 2.0, 1.0], args=(k,))))(1.0)
    with pytest.raises(ValueError, match="monotonically"):
        odeint(decay, 1.0, [0.0, 2.0, 1.0], args=(1.0,))
    with pytest.raises(ValueError, match="monotonically"):
        wg.grad(lambda t: wnp.sum(odeint(decay, 1.0, t, args=(1.0,))))(np.array([0., 2., 1.]))


def test_complex_values_are_refused():
    for y0, k in ((np.array([1.0 + 1j]), 0.5), (np.array([1.0]), 0.5 + 0.1j)):
        with pytest.raises(TypeError, match="odeint: complex values"):
            odeint(decay, y0, T, args=(k,))
        with pytest.raises(TypeError, match="odeint: complex values"):
            wg.grad(lambda x: wnp.real(wnp.sum(odeint(decay, y0 * x, T, args=(k,)))))(1.0)


def test_closing_over_a_traced_value_is_an_error():
    def loss(k):
        return wnp.sum(odeint(lambda y, t: -k * y, 1.0, T))
    with pytest.raises(ValueError, match="pass that value in args"):
        wg.grad(loss)(0.5)
    def loss2(k, y0):
        return wnp.sum(odeint(lambda y, t: -k * y, y0, T))
    with pytest.raises(ValueError, match="pass that value in args"):
        wg.grad(loss2, argnums=(0, 1))(0.5, 1.0)


def test_scipy_options_for_one_system_are_refused_when_traced():
    with pytest.raises(NotImplementedError, match="full_output"):
        wg.grad(lambda k: wnp.sum(odeint(decay, 1.0, T, args=(k,), full_output=True)))(0.5)
    ys, info = odeint(decay, 1.0, T, args=(0.5,), full_output=True)    # plain: SciPy's
    assert "nst" in info


def test_taylor_mode_to_fourth_order():
    """wg.derivatives through odeint (nested sensitivities), in a parameter and in the
    times: Σ_i exp(-k t_i) and its derivatives (-t_i)^j exp(-k t_i)."""
    t = np.linspace(0.0, 2.0, 6)
    f = lambda k: wnp.sum(odeint(decay, 1.0, t, args=(k,), **TIGHT))
    want = [np.sum((-t) ** j * np.exp(-0.5 * t)) for j in range(5)]
    assert_close(wg.derivatives(f, 4)(0.5), want, rtol=1e-8, atol=1e-10)
    stretch = lambda s: wnp.sum(odeint(decay, 1.0, s * t, args=(0.5,), **TIGHT))
    want = [np.sum((-0.5 * t) ** j * np.exp(-0.5 * t)) for j in range(4)]
    assert_close(wg.derivatives(stretch, 3)(1.0), want, rtol=1e-8, atol=1e-10)


@pytest.mark.filterwarnings("ignore::scipy.integrate.ODEintWarning")
@pytest.mark.parametrize("which", ["odeint"])     # (solve_ivp's LSODA too: 27 s to fail)
def test_reverse_mode_refuses_a_backward_solve_that_left_the_forward_one(which):
    # y' = s·A·y with eigenvalues -50 and -0.5: stable forward, e^(100) unstable backward,
    # and the adjoint re-solves y backward: grad gave 2.7e14 (LSODA) and a value 47% off
    # (odeint), silently (QA).  Forward mode is right, against the closed form.
    from scipy.linalg import expm_frechet
    from wengert.scipy.integrate import solve_ivp
    A = np.array([[-50.0, 0.0], [1.0, -0.5]])
    if which == "odeint":
        g = lambda s: odeint(lambda y, t, s: s * (A @ y), [1.0, 0.0], [0.0, 2.0], args=(s,),
                             rtol=1e-8, atol=1e-12)[-1, 1]
    else:
        g = lambda s: solve_ivp(lambda t, y, s: s * (A @ y), (0.0, 2.0), [1.0, 0.0],
                                method=which, t_eval=[2.0], args=(s,), rtol=1e-8,
                                atol=1e-12).y[1, -1]
    exact = expm_frechet(2 * A, 2 * A, compute_expm=False)[1, 0]       # d/ds expm(2sA)
    assert abs(wg.jacfwd(g)(1.0) - exact) < 1e-7
    with pytest.raises(RuntimeError, match="stiff or strongly damped.*Use forward mode"):
        wg.grad(g)(1.0)


def test_compiled_derived_systems_notice_a_global_that_changes_only_later_in_time():
    # a forcing of size G switched on for 0.3 < t < 0.7: at (y0, t0) the right-hand side
    # is the same for every G, so a check of values there kept the code made with G = 1
    # (QA: grad -0.4676 after G = 3, where it is -0.7472).  The reference: the same
    # function made afresh (a new object, so nothing kept), at the same G.
    from wengert.scipy.integrate import solve_ivp
    G = [1.0]

    def made():
        def f(t, y, k):
            return -k * y * y + G[0] * wnp.where((t > 0.3) & (t < 0.7), 1.0, 0.0)

        def y1(k):
            return solve_ivp(f, (0.0, 1.0), [1.0], t_eval=[1.0], args=(k,), rtol=1e-10,
                             atol=1e-12).y[0, 0]
        return y1
    kept = made()
    seen = set()
    for G[0] in (1.0, 3.0, 1.0):
        fresh = made()
        for d in (wg.grad, wg.jacfwd):
            assert abs(d(kept)(0.7) - d(fresh)(0.7)) < 1e-9
        seen.add(round(float(wg.grad(kept)(0.7)), 3))
    assert len(seen) == 2


# ---- from the integrate audit (2026-11-24) ------------------------------------------------------
def test_tolerances_per_element_reach_the_derived_solves_as_one_number():
    # (odepack refused the n-long arrays for the larger adjoint and tangent systems)
    f = lambda y, t, k: [-k * y[0], k * y[0] - 0.5 * y[1]]                # noqa: E731
    t = np.linspace(0.0, 2.0, 5)
    tol = dict(atol=np.array([1e-10, 1e-12]), rtol=1e-10)
    loss = lambda k: odeint(f, [1.0, 0.0], t, args=(k,), **tol)[-1, 1]     # noqa: E731
    want = fd_jacobian(lambda k: odeint(f, [1.0, 0.0], t, args=(float(k[0]),), **tol)[-1, 1],
                       np.array([0.7]), 1e-5)[0]
    assert_close(wg.jacfwd(loss)(0.7), want, rtol=1e-6)
    assert_close(wg.grad(loss)(0.7), want, rtol=1e-6)


def test_a_failed_integration_raises_on_traced_values():
    # SciPy warns ("Excess work done") and returns what it has: its jacfwd came out 2e-312
    f = lambda y, t, k: -k * y                                           # noqa: E731
    with pytest.raises(RuntimeError, match="odeint: the integration failed .*Excess work"):
        wg.jacfwd(lambda k: odeint(f, [1.0], [0.0, 1e4], args=(k,), mxstep=5)[-1, 0])(0.7)
