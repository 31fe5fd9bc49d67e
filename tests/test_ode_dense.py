"""solve_ivp's dense output on traced values: ``sol(t)`` as one more solve through the
times asked for, differentiable in y0, t0, args and t, in every mode; against closed
forms (an oscillator, exponential decay, a matrix exponential, a falling body), central
differences and SciPy's own ``sol(t)``; unsorted, repeated and out-of-span times,
backward integration, terminal events, wg.compile and wg.vmap."""
import pickle
import shutil

import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from fd import assert_close, check_grads, fd_jacobian
from ode_systems import lotka_volterra

scipy_integrate = pytest.importorskip("scipy.integrate")
from wengert.scipy.integrate import solve_ivp  # noqa: E402

TIGHT = dict(rtol=1e-10, atol=1e-12)
RNG = np.random.default_rng(7)


def oscillator(t, y, w):                # x'' = -w² x: x = cos(w (t - t0)) from (1, 0)
    return [y[1], -w * w * y[0]]


def decay(t, y, k):                     # y = y0 exp(-k (t - t0))
    return -k * y


def swing(w, t, t0=0.0, span=2.0, **kw):
    """x and v of the oscillator at the times t, by the dense output of a solve over
    [t0, t0 + span]."""
    r = solve_ivp(oscillator, wnp.stack([t0, t0 + span]), [1.0, 0.0], args=(w,),
                  dense_output=True, **dict(TIGHT, **kw))
    return r.sol(t)


def traced(f, *args):
    """f's value where its arguments are traced (the front-end's traced path)."""
    zeros = tuple(np.zeros_like(np.asarray(a, dtype=float)) for a in args)
    return wg.jvp(f, args, zeros)[0]


# --- values ------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["RK45", "DOP853", "Radau"])
def test_values_are_scipys_within_the_tolerance(method):
    ts = np.array([0.05, 0.4, 1.1, 1.7, 2.0])
    got = traced(lambda w: swing(w, ts, method=method), 1.3)
    want = scipy_integrate.solve_ivp(oscillator, (0.0, 2.0), [1.0, 0.0], args=(1.3,),
                                     method=method, dense_output=True, **TIGHT).sol(ts)
    assert got.shape == want.shape == (2, 5)
    assert_close(got, want, rtol=1e-8, atol=1e-10)
    assert_close(got[0], np.cos(1.3 * ts), rtol=1e-8, atol=1e-10)


def test_the_solution_object():
    seen = {}

    def f(w):
        r = solve_ivp(oscillator, (0.0, 2.0), [1.0, 0.0], args=(w,), dense_output=True,
                      t_eval=[1.0], **TIGHT)
        seen["sol"] = r.sol
        return r.sol(0.5)
    wg.jvp(f, (1.3,), (1.0,))
    sol = seen["sol"]
    want = scipy_integrate.solve_ivp(oscillator, (0.0, 2.0), [1.0, 0.0], args=(1.3,),
                                     dense_output=True).sol
    assert (sol.t_min, sol.t_max) == (want.t_min, want.t_max) == (0.0, 2.0)
    assert type(sol.t_min) is float and type(sol.t_max) is float
    assert "oscillator" in repr(sol) and "[0, 2]" in repr(sol) and "RK45" in repr(sol)
    # on plain values it is SciPy's own
    plain = solve_ivp(oscillator, (0.0, 2.0), [1.0, 0.0], args=(1.3,), dense_output=True)
    assert isinstance(plain.sol, scipy_integrate.OdeSolution)


def test_shapes_of_a_time_and_of_an_array_of_times():
    def shapes(w):
        r = solve_ivp(oscillator, (0.0, 2.0), [1.0, 0.0], args=(w,), dense_output=True)
        s = solve_ivp(decay, (0.0, 2.0), 1.0, args=(w,), dense_output=True)
        return [r.sol(0.5).shape, r.sol([0.5]).shape, r.sol(np.arange(3.0)).shape,
                r.sol(np.zeros(0)).shape, s.sol(0.5).shape, s.sol([0.5, 1.0]).shape]
    out = []
    wg.grad(lambda w: out.extend(shapes(w)) or w)(1.3)
    assert out == [(2,), (2, 1), (2, 3), (2, 0), (), (2,)]
    # SciPy's, for the one-dimensional state (whose sol refuses no times at all)
    plain = scipy_integrate.solve_ivp(oscillator, (0.0, 2.0), [1.0, 0.0], args=(1.3,),
                                      dense_output=True).sol
    assert out[:3] == [plain(0.5).shape, plain([0.5]).shape, plain(np.arange(3.0)).shape]


def test_a_state_of_two_dimensions():
    """X' = A X from X(0) = I: X(t) = expm(A t), sol(t) of shape (2, 2) (+ (m,))."""
    from scipy.linalg import expm
    A = np.array([[-0.5, 1.0], [-1.0, -0.2]])
    ts = np.array([1.5, 0.3, 0.9])

    def X(a, t):
        r = solve_ivp(lambda t, X, a: a @ X, (0.0, 2.0), np.eye(2), args=(a,),
                      dense_output=True, **TIGHT)
        return r.sol(t)
    got = traced(lambda a: X(a, ts), A)
    assert got.shape == (2, 2, 3) and traced(lambda a: X(a, 0.3), A).shape == (2, 2)
    for i, t in enumerate(ts):
        assert_close(got[..., i], expm(A * t), rtol=1e-8, atol=1e-10)
    jac = wg.jacrev(lambda a: X(a, ts))(A)
    assert jac.shape == (2, 2, 3, 2, 2)
    assert_close(jac, fd_jacobian(lambda a: X(a, ts), A, 1e-6).reshape(jac.shape),
                 rtol=1e-6, atol=1e-8)


# --- derivatives -------------------------------------------------------------------------------
def test_derivatives_in_args_and_t_against_closed_forms():
    """x = cos(w t): dx/dw = -t sin(w t), dx/dt = -w sin(w t), d²x/dw² = -t² cos(w t)."""
    w, ts = 1.3, np.array([1.7, 0.4, 1.1])
    x = lambda w, t: swing(w, t)[0]
    for jac in (wg.jacfwd, wg.jacrev):
        d_w, d_t = jac(x, argnums=(0, 1))(w, ts)
        assert_close(d_w, -ts * np.sin(w * ts), rtol=1e-8, atol=1e-10)
        assert_close(d_t, np.diag(-w * np.sin(w * ts)), rtol=1e-8, atol=1e-10)
    # a traced scalar time
    assert_close(wg.grad(x, argnums=(0, 1))(w, 0.8),
                 (-0.8 * np.sin(w * 0.8), -w * np.sin(w * 0.8)), rtol=1e-8, atol=1e-10)
    # second order: forward over reverse and reverse over reverse
    assert_close(wg.hessian(lambda w: x(w, 0.8))(w), -0.64 * np.cos(w * 0.8), rtol=1e-6)
    assert_close(wg.grad(wg.grad(lambda w: x(w, 0.8)))(w), -0.64 * np.cos(w * 0.8),
                 rtol=1e-6)
    # all of the Hessian in (w, t): d²x/dw dt = -sin(w t) - w t cos(w t)
    c, s = np.cos(w * 0.8), np.sin(w * 0.8)
    assert_close(wg.hessian(x, argnums=(0, 1))(w, 0.8),
                 ((-0.64 * c, -s - w * 0.8 * c), (-s - w * 0.8 * c, -w * w * c)),
                 rtol=1e-6)


def test_derivatives_in_y0_and_t0_against_closed_forms():
    """y = y0 exp(-k (t - t0)): d/dy0 = exp(-k (t - t0)), d/dk = -(t - t0) y,
    d/dt0 = k y, d/dt = -k y."""
    def y(y0, k, t0, t):
        r = solve_ivp(decay, wnp.stack([t0, t0 + 3.0]), wnp.stack([y0]), args=(k,),
                      dense_output=True, **TIGHT)
        return r.sol(t)[0]
    y0, k, t0, t = 1.5, 0.7, 0.4, 2.1
    value = y0 * np.exp(-k * (t - t0))
    want = (value / y0, -(t - t0) * value, k * value, -k * value)
    assert_close(traced(y, y0, k, t0, t), value, rtol=1e-9)
    assert_close(wg.grad(y, argnums=(0, 1, 2, 3))(y0, k, t0, t), want, rtol=1e-8)
    assert_close(wg.jacfwd(y, argnums=(0, 1, 2, 3))(y0, k, t0, t), want, rtol=1e-8)
    _, tangent = wg.jvp(y, (y0, k, t0, t), (1.0, 1.0, 1.0, 1.0))
    assert_close(tangent, sum(want), rtol=1e-8)


def test_derivatives_against_central_differences_at_random_points():
    """Lotka–Volterra, in its parameters, its initial state and unsorted times: JVP and
    VJP to first order, then forward over reverse and reverse over reverse."""
    def states(p, y0, t):
        r = solve_ivp(lambda t, y, p: lotka_volterra(y, t, p), (0.0, 3.0), y0, args=(p,),
                      dense_output=True, rtol=1e-11, atol=1e-11)
        return r.sol(t)
    p = np.array([1.0, 0.5, 0.8, 0.3]) + 0.1 * RNG.random(4)
    y0 = np.array([1.0, 0.7]) + 0.1 * RNG.random(2)
    t = RNG.uniform(0.1, 3.0, size=3)
    check_grads(states, p, y0, t, order=2, eps=1e-5, rtol=1e-5, atol=1e-7)


# --- times -------------------------------------------------------------------------------------
def test_unsorted_and_repeated_times():
    ts = np.array([1.2, 0.3, 1.9, 0.3, 0.0, 1.2, 2.0])
    out = traced(lambda w: swing(w, ts), 1.3)
    assert_close(out[0], np.cos(1.3 * ts), rtol=1e-8, atol=1e-10)
    assert np.array_equal(out[:, 1], out[:, 3]) and np.array_equal(out[:, 0], out[:, 5])
    order = np.argsort(ts)
    assert_close(traced(lambda w: swing(w, ts[order]), 1.3), out[:, order], rtol=1e-12,
                 atol=1e-14)
    d_w, d_t = wg.jacrev(lambda w, t: swing(w, t)[1], argnums=(0, 1))(1.3, ts)
    # v = -w sin(w t): dv/dw = -sin(w t) - w t cos(w t), dv/dt = -w² cos(w t)
    assert_close(d_w, -np.sin(1.3 * ts) - 1.3 * ts * np.cos(1.3 * ts), rtol=1e-8,
                 atol=1e-10)
    assert_close(d_t, np.diag(-1.69 * np.cos(1.3 * ts)), rtol=1e-8, atol=1e-10)
    assert_close(wg.jacfwd(lambda t: swing(1.3 + 0.0 * wnp.sum(t), t)[1])(ts),
                 np.diag(-1.69 * np.cos(1.3 * ts)), rtol=1e-8, atol=1e-10)


def test_backwards_in_time():
    """t_span = (2, 0): y = y0 exp(-k (t - 2)), t_min 0, t_max 2, times in any order."""
    ts = np.array([0.5, 1.5, 0.0, 1.0])
    seen = {}

    def y(y0, k, t):
        r = solve_ivp(decay, (2.0, 0.0), wnp.stack([y0]), args=(k,), dense_output=True,
                      **TIGHT)
        seen["span"] = (r.sol.t_min, r.sol.t_max)
        return r.sol(t)[0]
    value = 1.5 * np.exp(-0.7 * (ts - 2.0))
    assert_close(traced(y, 1.5, 0.7, ts), value, rtol=1e-9)
    assert seen["span"] == (0.0, 2.0)
    want = scipy_integrate.solve_ivp(decay, (2.0, 0.0), [1.5], args=(0.7,),
                                     dense_output=True, **TIGHT).sol(ts)[0]
    assert_close(traced(y, 1.5, 0.7, ts), want, rtol=1e-8)
    d_y0, d_k, d_t = wg.jacrev(y, argnums=(0, 1, 2))(1.5, 0.7, ts)
    assert_close(d_y0, value / 1.5, rtol=1e-8)
    assert_close(d_k, -(ts - 2.0) * value, rtol=1e-8, atol=1e-12)
    assert_close(d_t, np.diag(-0.7 * value), rtol=1e-8)
    assert_close(wg.jacfwd(y, argnums=1)(1.5, 0.7, ts), d_k, rtol=1e-8, atol=1e-12)


def test_times_outside_the_span_are_solved_for():
    """Before t0 and after tf, sol(t) is the solution of the ODE there (a solve
    backwards from t0, or on past tf), not SciPy's extrapolated polynomial."""
    w, t0 = 1.3, 0.5
    ts = np.array([3.4, -0.7, 1.0, 0.2, 2.6])          # [t0, tf] = [0.5, 2.5]
    x = lambda w, t0, t: swing(w, t, t0=t0)[0]
    assert_close(traced(x, w, t0, ts), np.cos(w * (ts - t0)), rtol=1e-8, atol=1e-10)
    d_w, d_t0, d_t = wg.jacrev(x, argnums=(0, 1, 2))(w, t0, ts)
    assert_close(d_w, -(ts - t0) * np.sin(w * (ts - t0)), rtol=1e-8, atol=1e-10)
    assert_close(d_t0, w * np.sin(w * (ts - t0)), rtol=1e-8, atol=1e-10)
    assert_close(d_t, np.diag(-w * np.sin(w * (ts - t0))), rtol=1e-8, atol=1e-10)
    d_w, d_t0 = wg.jacfwd(x, argnums=(0, 1))(w, t0, ts)
    assert_close(d_w, -(ts - t0) * np.sin(w * (ts - t0)), rtol=1e-8, atol=1e-10)
    assert_close(d_t0, w * np.sin(w * (ts - t0)), rtol=1e-8, atol=1e-10)
    # all of them on one side, before t0
    assert_close(traced(x, w, t0, ts[[1, 3]]), np.cos(w * (ts[[1, 3]] - t0)), rtol=1e-8)


def test_a_terminal_event_ends_the_solution():
    """A body dropped from h lands at √(2h/g): sol's t_max; within, x = h - g t²/2 and
    dx/dh = 1; past it the ODE's solution goes on, as the outside-span rule says."""
    g = 9.81

    def ground(t, y, g):
        return y[0]
    ground.terminal = True
    seen = {}

    def height(h, t):
        r = solve_ivp(lambda t, y, g: wnp.stack([y[1], -g + 0.0 * y[0]]), (0.0, 10.0),
                      wnp.stack([h, 0.0]), events=ground, args=(g,), dense_output=True,
                      **TIGHT)
        seen.update(status=r.status, span=(r.sol.t_min, r.sol.t_max))
        return r.sol(t)[0]
    ts = np.array([0.2, 0.6, 0.9])
    assert_close(traced(height, 2.0, ts), 2.0 - g * ts ** 2 / 2, rtol=1e-9)
    assert seen["status"] == 1
    assert seen["span"][0] == 0.0
    assert_close(seen["span"][1], np.sqrt(2 * 2.0 / g), rtol=1e-10)
    assert_close(wg.jacrev(height)(2.0, ts), np.ones(3), rtol=1e-8)
    assert_close(wg.jacfwd(height)(2.0, ts), np.ones(3), rtol=1e-8)


# --- tracing without values --------------------------------------------------------------------
def test_under_compile_with_t_eval():
    def x(w, t0, t):
        r = solve_ivp(oscillator, wnp.stack([t0, t0 + 2.0]), [1.0, 0.0], args=(w,),
                      t_eval=wnp.stack([t0 + 2.0]), dense_output=True, **TIGHT)
        return r.sol(t)[0]
    ts = np.array([1.7, -0.3, 0.4, 2.9])
    staged = wg.compile(x, 1.3, 0.0, ts)
    for w, t0, t in ((1.3, 0.0, ts), (0.9, 0.5, ts[::-1].copy()), (1.1, 0.2, ts + 0.3)):
        assert_close(staged(w, t0, t), np.cos(w * (t - t0)), rtol=1e-8, atol=1e-10)
    grads = wg.compile(wg.jacrev(x, argnums=(0, 1, 2)), 1.3, 0.0, ts)
    w, t0, t = 0.9, 0.5, ts[::-1].copy()
    s = np.sin(w * (t - t0))
    d_w, d_t0, d_t = grads(w, t0, t)
    assert_close(d_w, -(t - t0) * s, rtol=1e-8, atol=1e-10)
    assert_close(d_t0, w * s, rtol=1e-8, atol=1e-10)
    assert_close(d_t, np.diag(-w * s), rtol=1e-8, atol=1e-10)
    # plain times inside the traced function, a scalar one too
    at = wg.compile(lambda w: x(w, 0.0, 0.8) + wnp.sum(x(w, 0.0, np.array([0.2, 0.1]))),
                    1.3)
    assert_close(at(1.1), np.cos(0.88) + np.cos(0.22) + np.cos(0.11), rtol=1e-8)


def test_under_vmap():
    ws = np.array([0.8, 1.3, 1.7])
    x = lambda w: swing(w, np.array([1.5, 0.5]), t_eval=[2.0])[0]
    assert_close(wg.vmap(x)(ws), np.cos(np.outer(ws, [1.5, 0.5])), rtol=1e-8, atol=1e-10)
    assert_close(wg.vmap(wg.jacfwd(x))(ws), -np.array([1.5, 0.5]) * np.sin(
        np.outer(ws, [1.5, 0.5])), rtol=1e-8, atol=1e-10)
    # traced times (without values: one solve per example)
    at = lambda w, t: swing(w, t, t_eval=[2.0])[0]
    ts = np.array([0.3, 1.9, -0.4])
    assert_close(wg.vmap(at)(ws, ts), np.cos(ws * ts), rtol=1e-8, atol=1e-10)
    assert_close(wg.vmap(wg.grad(at, argnums=1))(ws, ts), -ws * np.sin(ws * ts),
                 rtol=1e-8, atol=1e-10)


def test_a_plain_solve_is_differentiated_in_the_time_alone():
    w = 1.3
    plain = solve_ivp(oscillator, (0.0, 2.0), [1.0, 0.0], args=(w,), dense_output=True,
                      **TIGHT)
    sol = plain.sol
    want = scipy_integrate.solve_ivp(oscillator, (0.0, 2.0), [1.0, 0.0], args=(w,),
                                     dense_output=True, **TIGHT).sol
    assert isinstance(sol, scipy_integrate.OdeSolution)
    ts = np.array([1.7, 0.3, 0.3, 2.4])                    # unsorted, repeated, past tf
    back = pickle.loads(pickle.dumps(sol))                 # as SciPy's own
    assert type(back) is scipy_integrate.OdeSolution and np.array_equal(back(ts), want(ts))
    assert np.array_equal(sol(ts), want(ts))               # plain times: SciPy's, exactly
    x = lambda t: sol(t)[0]
    assert_close(wg.grad(x)(0.5), -w * np.sin(w * 0.5), rtol=1e-8)
    assert_close(wg.grad(wg.grad(x))(0.5), -w * w * np.cos(w * 0.5), rtol=1e-7)
    J = wg.jacfwd(sol)(ts)                                 # (2, 4) by (4,)
    assert J.shape == (2, 4, 4)
    assert_close(np.einsum("ikk->ik", J), [-w * np.sin(w * ts), -w * w * np.cos(w * ts)],
                 rtol=1e-7, atol=1e-9)
    assert_close(wg.jacrev(sol)(ts), J, rtol=1e-7, atol=1e-9)
    # a state of two dimensions, whose sol SciPy's reshaped
    y0 = np.array([[1.0, 2.0], [3.0, 4.0]])
    sol2 = solve_ivp(decay, (0.0, 1.0), y0, args=(0.7,), dense_output=True, **TIGHT).sol
    g = wg.jacfwd(sol2)(0.4)
    assert g.shape == (2, 2)
    assert_close(g, -0.7 * y0 * np.exp(-0.7 * 0.4), rtol=1e-8)
    assert sol2(0.4).shape == (2, 2)


# --- errors ------------------------------------------------------------------------------------
def test_t_eval_none_still_needs_values():
    x = lambda w: solve_ivp(oscillator, (0.0, 2.0), [1.0, 0.0], args=(w,),
                            dense_output=True).sol(0.5)[0]
    with pytest.raises(ValueError, match="pass t_eval"):
        wg.compile(x, 1.3)


def test_times_of_two_dimensions():
    with pytest.raises(ValueError, match="a time or a 1-D array of times"):
        wg.grad(lambda w: wnp.sum(swing(w, np.ones((2, 2)))))(1.3)


def test_a_traced_time_after_an_empty_t_eval():
    """sol of a plain solve that reported no times still solves through a traced t."""
    for backend in ("scipy", "c") if shutil.which("cc") or shutil.which("gcc") else ("scipy",):
        sol = solve_ivp(lambda t, y: -0.5 * y, (0.0, 1.0), [1.0], dense_output=True,
                        t_eval=[], backend=backend, rtol=1e-10, atol=1e-12).sol
        np.testing.assert_allclose(wg.grad(lambda t: sol(t)[0])(0.5),
                                   -0.5 * np.exp(-0.25), rtol=1e-8)
