"""solve_ivp's events on traced values: event times differentiable by the implicit
function theorem (g(τ, y(τ)) = 0), the states there, terminal events that end the
solve; against closed forms (a falling body, an oscillator's zero crossings), central
differences and SciPy's own values; the errors where no values are known.  Every test
runs with both back-ends: SciPy's, and the C loop's (backend="c"), which locates the
events in C."""
import functools
import os
import shutil

import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from fd import assert_close, fd_jacobian

scipy_integrate = pytest.importorskip("scipy.integrate")
from wengert.scipy.integrate import solve_ivp as _solve_ivp  # noqa: E402

TIGHT = dict(rtol=1e-10, atol=1e-12)
G = 9.81
HAVE_CC = any(shutil.which(cc) for cc in (os.environ.get("CC") or "cc", "gcc", "clang"))


@pytest.fixture(autouse=True, params=["scipy", pytest.param("c", marks=pytest.mark.skipif(
    not HAVE_CC, reason="no C compiler on this machine"))])
def backend(request, monkeypatch):
    """The back-end of every solve_ivp call in this module's tests."""
    monkeypatch.setitem(globals(), "solve_ivp",
                        functools.partial(_solve_ivp, backend=request.param))
    return request.param


def fall(t, y, g):                      # height and velocity under gravity g
    return wnp.stack([y[1], -g + 0.0 * y[0]])


def ground(t, y, g):
    return y[0]


ground.terminal = True
ground.direction = -1


def landing(h, g=G, t0=0.0, **kw):
    return solve_ivp(fall, wnp.stack([t0, t0 + 10.0]), wnp.stack([h, 0.0]), events=ground,
                     args=(g,), **TIGHT, **kw)


def oscillator(t, y, w):
    return [y[1], -w * w * y[0]]


def zero(t, y, w):
    return y[0]


def swing(t, y, w):                     # the velocity passes 0.5 (either way)
    return y[1] - 0.5


def crossings(w, span=(0.0, 10.0)):
    return solve_ivp(oscillator, span, [1.0, 0.0], events=[zero, swing], args=(w,), **TIGHT)


# --- values ------------------------------------------------------------------------------------
def test_values_are_scipys(backend):
    both = lambda w: (crossings(w).t_events, crossings(w).y_events)
    (t_events, y_events), _ = wg.jvp(both, (1.3,), (1.0,))
    want = scipy_integrate.solve_ivp(oscillator, (0.0, 10.0), [1.0, 0.0],
                                     events=[zero, swing], args=(1.3,), **TIGHT)
    for j in range(2):
        if backend == "scipy":
            assert np.array_equal(t_events[j], want.t_events[j])      # SciPy's times
        else:           # (SciPy's steps; the root on each, to Brent's tolerance of 4 ε)
            assert_close(t_events[j], want.t_events[j], rtol=1e-14, atol=1e-14)
        assert_close(y_events[j], want.y_events[j], rtol=1e-8, atol=1e-9)


def test_a_terminal_event_ends_the_solve_as_in_scipy():
    t_eval = np.linspace(0.0, 1.0, 11)
    seen = {}

    def solved(h):
        r = landing(h, t_eval=t_eval)
        seen.update(status=r.status, message=r.message)
        return r.t, r.y
    (r_t, r_y), _ = wg.jvp(solved, (2.0,), (1.0,))
    status, message = seen["status"], seen["message"]
    want = scipy_integrate.solve_ivp(fall, (0.0, 10.0), [2.0, 0.0], events=ground,
                                     args=(G,), t_eval=t_eval, **TIGHT)
    assert (status, message) == (want.status, want.message) == \
        (1, "A termination event occurred.")
    assert np.array_equal(r_t, want.t) and len(r_t) == 7      # t ≤ √(2·2/9.81) = 0.6386
    t = t_eval[:7]
    assert_close(r_y, [2.0 - G * t ** 2 / 2, -G * t], rtol=1e-9, atol=1e-9)


# --- derivatives -------------------------------------------------------------------------------
def test_the_landing_time_and_speed_against_closed_forms():
    """t = t0 + √(2h/g), v = -√(2gh)."""
    t_hit = lambda h, g, t0: landing(h, g, t0).t_events[0][0]
    v_hit = lambda h, g, t0: landing(h, g, t0).y_events[0][0, 1]
    h, g, t0 = 2.0, G, 0.5
    assert_close(t_hit(h, g, t0), t0 + np.sqrt(2 * h / g), rtol=1e-10)
    want_t = (1 / np.sqrt(2 * h * g), -np.sqrt(2 * h / g) / (2 * g), 1.0)
    want_v = (-np.sqrt(g / (2 * h)), -np.sqrt(h / (2 * g)), 0.0)
    for fn, want in ((t_hit, want_t), (v_hit, want_v)):
        assert_close(wg.grad(fn, argnums=(0, 1, 2))(h, g, t0), want, rtol=1e-7, atol=1e-9)
        assert_close(wg.jacfwd(fn, argnums=(0, 1, 2))(h, g, t0), want, rtol=1e-7, atol=1e-9)
    # second order: d²t/dh² = -(2h)^(-3/2) g^(-1/2)
    assert_close(wg.hessian(t_hit)(h, g, t0), -(2 * h) ** -1.5 * g ** -0.5, rtol=1e-6)


def test_the_end_of_a_terminated_solve():
    """With t_eval=None the last time is the event's, traced, and y there is the
    landing state: d(last t)/dh = 1/√(2gh), d(last v)/dh = -√(g/2h)."""
    end = lambda h: landing(h).t[-1]
    speed = lambda h: landing(h).y[1, -1]
    assert_close(wg.grad(end)(2.0), 1 / np.sqrt(2 * 2.0 * G), rtol=1e-7)
    assert_close(wg.grad(speed)(2.0), -np.sqrt(G / (2 * 2.0)), rtol=1e-7)
    # a time of t_eval before the event: the usual derivative, unchanged by it
    at = lambda h: landing(h, t_eval=[0.5]).y[0, 0]
    assert_close(wg.grad(at)(2.0), 1.0, rtol=1e-9)


def test_zero_crossings_of_an_oscillator():
    """x = cos(w t) crosses 0 at t_k = (π/2 + kπ)/w: dt_k/dw = -t_k/w; backwards in
    time from t = 10, at t_k = 10 - (π/2 + kπ)/w."""
    w = 1.3
    k = np.arange(4)
    forward = lambda w: crossings(w).t_events[0]
    want = -(np.pi / 2 + np.pi * k) / w ** 2
    assert_close(wg.jacfwd(forward)(w), want, rtol=1e-8, atol=1e-10)
    assert_close(wg.jacrev(forward)(w), want, rtol=1e-8, atol=1e-10)
    backward = lambda w: crossings(w, (10.0, 0.0)).t_events[0]
    assert_close(backward(w), 10.0 - (np.pi / 2 + np.pi * k) / w, rtol=1e-9)
    assert_close(wg.jacfwd(backward)(w), -want, rtol=1e-8, atol=1e-10)


def test_states_at_events_against_central_differences():
    def f(p):
        r = solve_ivp(lambda t, y, p: wnp.stack([p[0] * y[1], -p[1] * y[0] - 0.1 * y[1]]),
                      (0.0, 8.0), wnp.stack([p[2], 0.0]), events=[zero, swing], args=(p,),
                      **TIGHT)
        return wnp.concatenate([r.t_events[0], wnp.ravel(r.y_events[1])])
    p = np.array([1.1, 0.9, 1.2])
    assert_close(wg.jacrev(f)(p), fd_jacobian(f, p, 1e-6), rtol=1e-5, atol=1e-7)
    assert_close(wg.jacfwd(f)(p), fd_jacobian(f, p, 1e-6), rtol=1e-5, atol=1e-7)


def test_an_event_that_never_happens_and_a_state_of_two_dimensions():
    never = lambda t, y, w: 5.0 + y[0, 0]
    r = wg.jvp(lambda w: solve_ivp(lambda t, y, w: wnp.stack([y[1], -w * w * y[0]]),
                                   (0.0, 5.0), np.array([[1.0], [0.0]]), args=(w,),
                                   events=[never, lambda t, y, w: y[0, 0]], **TIGHT).y_events,
               (1.3,), (1.0,))
    values, tangents = r
    assert values[0].shape == (0, 2, 1) and values[1].shape == (2, 2, 1)
    assert_close(values[1][:, 0, 0], 0.0, atol=1e-9)
    # y at a crossing is (0, ±w): its w-derivative, ±1 in the velocity
    assert_close(np.abs(tangents[1][:, 1, 0]), 1.0, rtol=1e-6)


# --- errors ------------------------------------------------------------------------------------
def test_events_need_values():
    t_hit = lambda h: landing(h).t_events[0][0]
    with pytest.raises(ValueError, match="with events, the event times are known only"):
        wg.compile(t_hit, 2.0)
    with pytest.raises(ValueError, match="call the function eagerly"):
        wg.vmap(t_hit)(np.array([1.0, 2.0]))


def test_with_t_eval_the_solve_ends_at_the_terminal_event_not_the_one_nearest_t_eval():
    # the end time was the event occurrence nearest the last t_eval point kept: with an
    # event at 1.1 before the terminal one at 1.5 and t_eval = [0.5, 1, 2], the traced
    # solve ended at 1.1, and with a second zero as terminal it crashed on t_eval (QA)
    import wengert.numpy as wnp
    from wengert.scipy.integrate import solve_ivp

    def passing(t, y, c):
        return y[0] - 1.1

    def stop(t, y, c):
        return y[0] - 1.5
    stop.terminal = True

    def run(c):
        return solve_ivp(lambda t, y, c: [c], (0.0, 3.0), [0.0], t_eval=[0.5, 1.0, 2.0],
                         events=[passing, stop], args=(c,), dense_output=True,
                         rtol=1e-10, atol=1e-12)
    ends = []
    wg.grad(lambda c: (ends.append(run(c).sol.t_max), run(c).y[0, -1])[1])(1.0)
    assert abs(float(wg.value(ends[0])) - 1.5) < 1e-9

    def zero(t, y, a):
        return y[0]
    zero.terminal = 2

    def osc(a):
        return solve_ivp(lambda t, y, a: [y[1], -y[0]], (0.0, 10.0), wnp.stack([a, 0.0]),
                         t_eval=[1.0, 2.0], events=zero, args=(a,), rtol=1e-10,
                         atol=1e-12).y[0, -1]
    assert abs(wg.grad(osc)(1.0) - np.cos(2.0)) < 1e-8
