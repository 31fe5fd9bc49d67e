"""solve_ivp(backend="c"): SciPy's explicit methods stepped in C (wengert/codegen/rk.py).

Values, step counts, dense output, options, warnings and failures against SciPy's own
solve_ivp; derivatives in args, y0, the end time and t_eval against closed forms, central
differences and the SciPy back-end's, in reverse and forward mode, to second order, and
under vmap; compiled code that follows a changed global; clear errors."""
import os
import shutil
import warnings

import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from fd import assert_close, fd_jacobian
from test_solve_ivp import decay, lotka_volterra, oscillator

scipy_integrate = pytest.importorskip("scipy.integrate")
from wengert.scipy.integrate import odeint, solve_ivp  # noqa: E402
from wengert.codegen import c as C  # noqa: E402

HAVE_CC = any(shutil.which(cc) for cc in (os.environ.get("CC") or "cc", "gcc", "clang"))
pytestmark = pytest.mark.skipif(not HAVE_CC, reason="no C compiler on this machine")

METHODS = ["RK23", "RK45", "DOP853"]
P = np.array([1.0, 0.5, 0.8, 0.3])
Y0 = np.array([1.0, 0.5])
T = np.linspace(0.0, 4.0, 9)


def tol(method):
    return dict(rtol=1e-7, atol=1e-9) if method == "RK23" else dict(rtol=1e-10, atol=1e-12)


def both(fun, t_span, y0, **kw):
    """The C solve and SciPy's own, with the same arguments."""
    return (solve_ivp(fun, t_span, y0, backend="c", **kw),
            scipy_integrate.solve_ivp(fun, t_span, y0, **kw))


# --- values: SciPy's steps ---------------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("span", [(0.0, 4.0), (4.0, 0.0)])
def test_values_and_counts_are_scipys(method, span):
    t_eval = T if span[1] > span[0] else T[::-1]
    got, want = both(lotka_volterra, span, Y0, method=method, t_eval=t_eval, args=(P,),
                     rtol=1e-8, atol=1e-8)
    assert got.nfev == want.nfev and got.njev == want.njev == 0
    assert (got.status, got.message, got.success) == (want.status, want.message, True)
    np.testing.assert_array_equal(got.t, want.t)
    assert_close(got.y, want.y, rtol=1e-11, atol=1e-13)
    # the solver's own steps: the same number, times equal up to rounding (which the
    # error estimate amplifies: it is a difference of nearly equal sums)
    got, want = both(lotka_volterra, span, Y0, method=method, args=(P,))
    assert got.nfev == want.nfev and got.t.shape == want.t.shape
    assert_close(got.t, want.t, rtol=1e-8, atol=1e-10)
    assert_close(got.y, want.y, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("method", METHODS)
def test_dense_output_is_scipys(method):
    got, want = both(oscillator, (0.0, 3.0), [1.0, 0.0], method=method, args=(2.0,),
                     dense_output=True)
    assert len(got.sol.interpolants) == len(want.sol.interpolants)
    ts = np.linspace(0.0, 3.0, 23)
    assert_close(got.sol(ts), want.sol(ts), rtol=1e-9, atol=1e-11)
    assert_close(got.sol(1.3), want.sol(1.3), rtol=1e-9, atol=1e-11)
    # with t_eval too: the interpolants still cover every step
    got, want = both(oscillator, (0.0, 3.0), [1.0, 0.0], method=method, args=(2.0,),
                     dense_output=True, t_eval=[0.5, 2.5])
    assert_close(got.sol.ts, want.sol.ts, rtol=1e-9)
    assert_close(got.y, want.y, rtol=1e-11, atol=1e-13)


def test_state_of_any_shape_and_pytree_args():
    def heat(t, u, params):                         # a 2x3 grid of decaying modes
        return -params["rate"] * u + params["source"]
    u0 = np.arange(6.0).reshape(2, 3)
    params = {"rate": np.array([[1.0], [2.0]]), "source": 0.5}
    got = solve_ivp(heat, (0.0, 1.0), u0, args=(params,), t_eval=[0.5, 1.0], backend="c",
                    rtol=1e-10, atol=1e-12)
    want = solve_ivp(heat, (0.0, 1.0), u0, args=(params,), t_eval=[0.5, 1.0],
                     rtol=1e-10, atol=1e-12)
    assert got.y.shape == want.y.shape == (2, 3, 2)
    assert_close(got.y, want.y, rtol=1e-11, atol=1e-13)
    rate = params["rate"]
    exact = 0.5 / rate + (u0 - 0.5 / rate) * np.exp(-rate * 1.0)
    assert_close(got.y[..., -1], exact, rtol=1e-8)
    dense = solve_ivp(heat, (0.0, 1.0), u0, args=(params,), backend="c", dense_output=True)
    assert dense.sol(0.25).shape == (2, 3) and dense.sol([0.1, 0.2]).shape == (2, 3, 2)


def test_options_tolerances_and_failure_are_scipys():
    atol = np.array([1e-9, 1e-6])
    got, want = both(lotka_volterra, (0.0, 4.0), Y0, args=(P,), rtol=1e-7, atol=atol,
                     max_step=0.05, t_eval=T)
    assert got.nfev == want.nfev
    assert_close(got.y, want.y, rtol=1e-11, atol=1e-13)
    got = solve_ivp(lotka_volterra, (0.0, 4.0), Y0, args=(P,), max_step=0.05, backend="c")
    assert np.max(np.diff(got.t)) <= 0.05 + 1e-15
    got, want = both(lotka_volterra, (0.0, 4.0), Y0, args=(P,), first_step=1e-3)
    assert got.nfev == want.nfev
    # a derivative that is nan from the start: a failure (SciPy's loop never ends)
    got = solve_ivp(lambda t, y: y * np.nan, (0.0, 1.0), [1.0], backend="c")
    assert got.status == -1 and not got.success
    # a solution that blows up: the same failure, at the same time, as SciPy
    got, want = both(lambda t, y: y * y, (0.0, 2.0), [1.0])
    assert (got.status, got.message, got.success) == (-1, want.message, False)
    assert got.nfev == want.nfev
    assert_close(got.t[-1], want.t[-1], rtol=1e-10)


def test_warnings_and_errors_of_the_options():
    for _ in range(2):                      # (every call, as SciPy warns)
        with pytest.warns(UserWarning, match="rtol` is too small"):
            solve_ivp(decay, (0.0, 1.0), [1.0], args=(0.5,), rtol=1e-20, backend="c")
    with pytest.warns(UserWarning, match="no effect for a chosen solver: `jac`"):
        solve_ivp(decay, (0.0, 1.0), [1.0], args=(0.5,), jac=None, backend="c")
    with pytest.raises(ValueError, match="`atol` has wrong shape"):
        solve_ivp(decay, (0.0, 1.0), [1.0], args=(0.5,), atol=[1e-6, 1e-6], backend="c")
    with pytest.raises(ValueError, match="`atol` must be positive"):
        solve_ivp(decay, (0.0, 1.0), [1.0], args=(0.5,), atol=-1.0, backend="c")
    with pytest.raises(ValueError, match="`max_step` must be positive"):
        solve_ivp(decay, (0.0, 1.0), [1.0], args=(0.5,), max_step=0.0, backend="c")
    with pytest.raises(ValueError, match="`first_step` exceeds bounds"):
        solve_ivp(decay, (0.0, 1.0), [1.0], args=(0.5,), first_step=2.0, backend="c")
    with pytest.raises(ValueError, match="not within `t_span`"):
        solve_ivp(decay, (0.0, 1.0), [1.0], args=(0.5,), t_eval=[2.0], backend="c")
    # a solve over no time is SciPy's
    got, want = both(decay, (1.0, 1.0), [1.0], args=(0.5,))
    assert_close(got.y, want.y) and got.t.shape == want.t.shape


# --- derivatives -----------------------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
def test_derivatives_against_closed_forms(method):
    """y(t1) = y0 exp(-k t1): d/dk, d/dy0, d/dt1, d²/dk², in both modes."""
    def end(k, y0, t1):
        return solve_ivp(decay, (0.0, t1), wnp.stack([y0]), args=(k,), method=method,
                         backend="c", **tol(method)).y[0, -1]
    k, y0, t1 = 0.7, 1.3, 2.0
    exact = y0 * np.exp(-k * t1)
    assert_close(end(k, y0, t1), exact, rtol=1e-7)
    close = dict(rtol=1e-5) if method == "RK23" else dict(rtol=1e-7)
    assert_close(wg.grad(end, argnums=(0, 1, 2))(k, y0, t1),
                 [-t1 * exact, exact / y0, -k * exact], **close)
    assert_close(wg.jacfwd(end, argnums=(0, 1, 2))(k, y0, t1),
                 [-t1 * exact, exact / y0, -k * exact], **close)
    assert_close(wg.hessian(end)(k, y0, t1), t1 * t1 * exact, **close)


@pytest.mark.parametrize("method", METHODS)
def test_gradients_match_differences_and_the_scipy_backend(method):
    """A fitting loss over 9 output times: the gradient in the rates, y0 and t_eval,
    against central differences of the C solve, and against the SciPy back-end's
    (the same steps: they agree far below the tolerance)."""
    def loss(p, y0, t_eval, backend="c"):
        sol = solve_ivp(lotka_volterra, (0.0, 4.0), y0, method=method, t_eval=t_eval,
                        args=(p,), backend=backend, **tol(method))
        return wnp.sum(wnp.log(sol.y) ** 2)
    t_eval = T[1:-1]
    grads = wg.grad(loss, argnums=(0, 1, 2))(P, Y0, t_eval)
    for g, scipy_g in zip(grads, wg.grad(loss, argnums=(0, 1, 2))(P, Y0, t_eval, "scipy")):
        assert_close(g, scipy_g, rtol=1e-8, atol=1e-10)
    h = 1e-5
    for k, x in enumerate((P, Y0, t_eval)):
        def along(v, k=k):
            args = [P, Y0, t_eval]
            args[k] = v
            return loss(*args)
        assert_close(grads[k], fd_jacobian(along, x, h), rtol=1e-5, atol=1e-7)
    # forward mode: forward sensitivities, solved in C too
    assert_close(wg.jacfwd(loss)(P, Y0, t_eval), grads[0], rtol=1e-6, atol=1e-8)


def test_per_example_gradients_under_vmap():
    def loss(p):
        sol = solve_ivp(lotka_volterra, (0.0, 4.0), Y0, t_eval=T, args=(p,), backend="c",
                        rtol=1e-10, atol=1e-12)
        return wnp.sum(sol.y[0] ** 2)
    batch = P * (1.0 + 0.1 * np.random.default_rng(0).normal(size=(3, 4)))
    mapped = wg.vmap(wg.grad(loss))(batch)
    # one solve of the three systems side by side, its tolerance split among them
    for row, p in zip(mapped, batch):
        assert_close(row, wg.grad(loss)(p), rtol=1e-6, atol=1e-8)
    # the gradient of a batched solve on numbers: the adjoint of the batched system in C
    assert_close(wg.grad(lambda b: wnp.sum(wg.vmap(loss)(b)))(batch), mapped,
                 rtol=1e-6, atol=1e-8)


def test_second_order_through_the_adjoint():
    """The Hessian of a loss in the rates: reverse over reverse takes the general adjoint
    rule (traced), which solves its systems in C as well."""
    def loss(p):
        sol = solve_ivp(lotka_volterra, (0.0, 2.0), Y0, t_eval=[1.0, 2.0], args=(p,),
                        backend="c", rtol=1e-10, atol=1e-12)
        return wnp.sum(sol.y ** 2)
    hess = wg.hessian(loss)(P)
    assert_close(hess, hess.T, rtol=1e-6, atol=1e-8)
    assert_close(hess, fd_jacobian(wg.grad(loss), P, 1e-5), rtol=1e-5, atol=1e-7)
    # reverse over reverse
    def norm(p):
        return wnp.sum(wg.grad(loss)(p) ** 2)
    assert_close(wg.grad(norm)(P), 2 * hess @ wg.grad(loss)(P), rtol=1e-6, atol=1e-8)
    # compiled (traced without values): the inner gradient's backward solves are one
    # node, differentiated by the general rule, which that node's derivative runs again
    assert_close(wg.compile(wg.hessian(loss), P)(P), hess, rtol=1e-10, atol=1e-12)
    assert_close(wg.compile(wg.grad(norm), P)(P), wg.grad(norm)(P), rtol=1e-10,
                 atol=1e-12)


# --- events ----------------------------------------------------------------------------------
def bounce(t, y, g):
    return [y[1], -g]


def floor(t, y, g):
    return y[0]


def apex(t, y, g):
    return y[1]


def level(t, y, g):             # crossed twice, up and down
    return y[0] - 10.5


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("output", [{}, {"t_eval": np.linspace(0.0, 10.0, 41)},
                                    {"dense_output": True}])
def test_events_are_scipys(method, output):
    """Terminal and non-terminal events, directions, a terminal count of 2: the same
    steps (nfev), event times to Brent's tolerance, states, status and dense output."""
    floor.terminal, floor.direction = True, -1
    level.terminal, level.direction = 2, 0
    for events in ([floor, apex], [apex, level], [level, floor]):
        got, want = both(bounce, (0.0, 10.0), [10.0, 5.0], method=method, args=(9.81,),
                         events=events, **output)
        assert (got.status, got.message, got.nfev) == (want.status, want.message, want.nfev)
        assert got.t.shape == want.t.shape
        assert_close(got.t, want.t, rtol=1e-13, atol=1e-13)
        assert_close(got.y, want.y, rtol=1e-12, atol=1e-12)
        for a, b in zip(got.t_events, want.t_events):
            assert a.shape == b.shape
            assert_close(a, b, rtol=1e-14, atol=1e-14)
        for a, b in zip(got.y_events, want.y_events):
            assert_close(a, b, rtol=1e-12, atol=1e-12)
        if output.get("dense_output"):
            s = np.linspace(0.0, got.t[-1], 9)
            assert_close(got.sol(s), want.sol(s), rtol=1e-12, atol=1e-12)
    del floor.terminal, floor.direction, level.terminal, level.direction


def test_events_backwards_with_a_shaped_state():
    """A solve from t = 7 back to 0 of a 2×1 state: cos t's zero crossings, 3π/2 then
    π/2, as SciPy finds them."""
    def spring(t, y):
        return [[y[1, 0]], [-y[0, 0]]]

    def zero(t, y):
        return y[0, 0]
    y7 = [[np.cos(7.0)], [-np.sin(7.0)]]
    got = solve_ivp(spring, (7.0, 0.0), y7, events=zero, backend="c", rtol=1e-10,
                    atol=1e-12)
    assert got.y_events[0].shape == (2, 2, 1)
    assert_close(got.t_events[0], [3 * np.pi / 2, np.pi / 2], rtol=1e-9)
    want = scipy_integrate.solve_ivp(lambda t, y: np.ravel(spring(t, y.reshape(2, 1))),
                                     (7.0, 0.0), np.ravel(y7),
                                     events=lambda t, y: y[0], rtol=1e-10, atol=1e-12)
    assert_close(got.t_events[0], want.t_events[0], rtol=1e-14, atol=1e-14)
    assert_close(got.y_events[0][:, :, 0], want.y_events[0], rtol=1e-12, atol=1e-12)


def test_event_errors():
    def branchy(t, y, g):
        return y[0] if y[0] > 0 else -y[0]
    with pytest.raises(ValueError, match="the events of bounce needs the value"):
        solve_ivp(bounce, (0.0, 1.0), [1.0, 0.0], args=(9.81,), events=branchy,
                  backend="c")
    with pytest.raises(ValueError, match="'both' must return a number, got shape \\(2,\\)"):
        def both(t, y, g):
            return y
        solve_ivp(bounce, (0.0, 1.0), [1.0, 0.0], args=(9.81,), events=both, backend="c")

    def halfway(t, y, g):
        return y[0] - 0.5
    halfway.terminal = 1.5
    with pytest.raises(ValueError, match="The `terminal` attribute of each event must be"):
        solve_ivp(bounce, (0.0, 1.0), [1.0, 0.0], args=(9.81,), events=halfway,
                  backend="c")


LEVEL = [0.5]


def test_a_changed_global_in_an_event_is_followed():
    def at_level(t, y, g):
        return y[0] - LEVEL[0]
    first = solve_ivp(bounce, (0.0, 1.0), [1.0, 0.0], args=(9.81,), events=at_level,
                      backend="c")
    LEVEL[0] = 0.8
    try:
        second = solve_ivp(bounce, (0.0, 1.0), [1.0, 0.0], args=(9.81,), events=at_level,
                           backend="c")
    finally:
        LEVEL[0] = 0.5
    assert_close(first.t_events[0], [np.sqrt(2 * 0.5 / 9.81)], rtol=1e-6)
    assert_close(second.t_events[0], [np.sqrt(2 * 0.2 / 9.81)], rtol=1e-6)


# --- traced gradients: the backward sweep as one node ----------------------------------------
def fit_loss(p, y0, t_eval):
    sol = solve_ivp(lotka_volterra, (0.0, 4.0), y0, t_eval=t_eval, args=(p,), backend="c",
                    rtol=1e-10, atol=1e-12)
    return wnp.sum(wnp.log(sol.y) ** 2)


def test_a_traced_gradient_sweeps_in_one_node():
    """Under tracing (wg.trace, wg.compile) the backward solves are one adjoint_sweep
    node, not one solve node per output interval; its numbers are the eager gradient's,
    which match central differences, in the rates, y0 and the times alike."""
    t_eval = T[1:-1]
    grad = wg.grad(fit_loss, argnums=(0, 1, 2))
    text = str(wg.trace(grad, P, Y0, t_eval))
    assert text.count("adjoint_sweep[") == 1
    assert text.count("solve_ivp[") == 1            # the forward solve alone
    eager = grad(P, Y0, t_eval)
    compiled = wg.compile(grad, P, Y0, t_eval)
    for got, want in zip(compiled(P, Y0, t_eval), eager):
        assert_close(got, want, rtol=1e-12, atol=1e-14)
    q = P * 1.1                                   # a compiled gradient at another point
    assert_close(compiled(q, Y0, t_eval)[0], fd_jacobian(lambda p: fit_loss(p, Y0, t_eval),
                                                         q, 1e-5), rtol=1e-5, atol=1e-7)
    assert_close(compiled(P, Y0, t_eval)[2],
                 fd_jacobian(lambda s: fit_loss(P, Y0, s), t_eval, 1e-5), rtol=1e-5,
                 atol=1e-7)


@pytest.mark.parametrize("in_axes", [(0, 0, None), (None, 0, None), (0, None, None)])
def test_per_example_sweeps_are_one_batched_sweep(in_axes):
    """vmap of a gradient: the examples' sweeps as one sweep of the batched system (shared
    arguments broadcast, so each example keeps its own cotangents), against one eager
    gradient per example; times mapped too (the general rule, one solve per example)."""
    rng = np.random.default_rng(3)
    t_eval = T[1:-1]
    args = [P * (1.0 + 0.1 * rng.normal(size=(3, 4))),
            Y0 * (1.0 + 0.1 * rng.normal(size=(3, 2))), t_eval]
    args = [a if axis == 0 else a[0] if a is not t_eval else a
            for a, axis in zip(args, in_axes)]
    grad = wg.grad(fit_loss, argnums=(0, 1, 2))
    mapped = wg.vmap(grad, in_axes=in_axes)(*args)
    for b in range(3):
        one = [a[b] if axis == 0 else a for a, axis in zip(args, in_axes)]
        for got, want in zip(mapped, grad(*one)):
            assert_close(got[b], want, rtol=1e-6, atol=1e-8)
    times = np.stack([t_eval, t_eval * 0.9])
    mapped = wg.vmap(grad, in_axes=(None, None, 0))(P, Y0, times)
    for b in range(2):
        for got, want in zip(mapped, grad(P, Y0, times[b])):
            assert_close(got[b], want, rtol=1e-6, atol=1e-8)


def test_first_step_longer_than_the_way_to_an_event_or_a_time_of_sol():
    """The solves to an event's time and to a time of sol(t) are shorter than t_span: the
    user's first_step is taken up to them (in C it was refused as exceeding bounds), and a
    first_step longer than t_span itself is SciPy's error, traced or not."""
    def hit_09(t, y, k):
        return y[0] - 0.9
    hit_09.terminal = True
    opts = dict(first_step=1.0, rtol=1e-10, atol=1e-12, backend="c")
    hit = lambda k: solve_ivp(decay, (0.0, 10.0), [1.0], args=(k,), events=hit_09,  # noqa
                              **opts).t_events[0][0]
    assert_close(wg.grad(hit)(0.7), np.log(0.9) / 0.7 ** 2, rtol=1e-6)   # t = -ln 0.9 / k
    at = lambda k: solve_ivp(decay, (0.0, 10.0), [1.0], args=(k,), dense_output=True,  # noqa
                             **opts).sol(0.05)[0]
    assert_close(wg.grad(at)(0.7), -0.05 * np.exp(-0.035), rtol=1e-6)
    with pytest.raises(ValueError, match="`first_step` exceeds bounds"):
        wg.grad(lambda k: solve_ivp(decay, (0.0, 1.0), [1.0], args=(k,), t_eval=[1.0],
                                    first_step=2.0, backend="c").y[0, 0])(0.5)


def test_a_large_batch_is_the_one_examples_code_in_a_loop():
    """vmap over a thousand examples: C runs one example's right-hand side (and its
    adjoint's) in a loop over them, rather than straight-line code a thousand times as long
    (which took half a minute to compile, and past C_MAX_OPERATIONS was refused).  A rate
    the examples share gets the sum of their cotangents."""
    rng = np.random.default_rng(5)
    batch = P * (1.0 + 0.2 * rng.random((1000, 4)))
    shared = np.array([0.3])

    def forced(t, y, p, c):
        return lotka_volterra(t, y, p) + c[0] * wnp.sin(t)

    def loss(p, c):
        sol = solve_ivp(forced, (0.0, 2.0), Y0, t_eval=[1.0, 2.0], args=(p, c),
                        backend="c", rtol=1e-10, atol=1e-12)
        return wnp.sum(sol.y ** 2)
    grads = wg.vmap(wg.grad(loss, argnums=(0, 1)), in_axes=(0, None))(batch, shared)
    total = wg.grad(lambda b, c: wnp.sum(wg.vmap(loss, in_axes=(0, None))(b, c)),
                    argnums=(0, 1))(batch, shared)
    assert_close(total[0], grads[0], rtol=1e-6, atol=1e-8)
    assert_close(total[1], np.sum(grads[1], axis=0), rtol=1e-6, atol=1e-8)
    for b in (0, 999):
        assert_close(grads[0][b], fd_jacobian(lambda p: loss(p, shared), batch[b], 1e-5),
                     rtol=1e-5, atol=1e-7)
        assert_close(grads[1][b], fd_jacobian(lambda c: loss(batch[b], c), shared, 1e-5),
                     rtol=1e-5, atol=1e-7)
    # forward mode: the tangent system's batch is a loop too
    assert_close(wg.vmap(wg.jacfwd(loss), in_axes=(0, None))(batch[:4], shared),
                 grads[0][:4], rtol=1e-6, atol=1e-8)


# --- compiled code and its inputs --------------------------------------------------------------
RATE = [0.5]


def global_decay(t, y):
    return -RATE[0] * y


def test_a_changed_global_is_followed():
    """C code holds a global's value from its trace; it is checked once per call and
    traced again when it no longer computes what the function does (derived systems
    too)."""
    def end(y0):
        return solve_ivp(global_decay, (0.0, 1.0), wnp.stack([y0]), backend="c",
                         rtol=1e-10, atol=1e-12).y[0, -1]
    try:
        for rate in (0.5, 2.0, 0.5):
            RATE[0] = rate
            assert_close(end(1.0), np.exp(-rate), rtol=1e-8)
            assert_close(wg.grad(end)(1.0), np.exp(-rate), rtol=1e-7)
    finally:
        RATE[0] = 0.5


STIFFNESS = [1.0]


def spring(t, y):
    return [y[1], -STIFFNESS[0] * y[0]]     # at y = (0, 1) the stiffness does not show


def test_a_changed_global_that_does_not_show_at_y0_is_followed():
    try:
        for k in (1.0, 4.0):
            STIFFNESS[0] = k
            got = solve_ivp(spring, (0.0, 3.0), [0.0, 1.0], backend="c", rtol=1e-10,
                            atol=1e-12).y[:, -1]
            w = np.sqrt(k)
            assert_close(got, [np.sin(3 * w) / w, np.cos(3 * w)], rtol=1e-8, atol=1e-10)
    finally:
        STIFFNESS[0] = 1.0


FORCING = [1.0]


def test_a_changed_global_that_shows_only_later_in_time_is_followed():
    # a forcing switched on for 0.6 < t < 0.9: the check of values at t0 and at a point
    # drawn in the first half of the span cannot see it, and the code made with the old
    # forcing was kept (QA: value and gradient of forcing 1 after forcing 3).  The C
    # code is now checked by the digest of f, which holds the global's value.
    def f(t, y, k):
        return -k * y * y + FORCING[0] * wnp.where((t > 0.6) & (t < 0.9), 1.0, 0.0)

    def end(k):
        return solve_ivp(f, (0.0, 1.0), [1.0], t_eval=[1.0], args=(k,), rtol=1e-12,
                         atol=1e-13, backend="c").y[0, 0]
    try:
        for FORCING[0] in (1.0, 3.0, 1.0):
            want = scipy_integrate.solve_ivp(f, (0.0, 1.0), [1.0], t_eval=[1.0], args=(1.0,),
                                             rtol=1e-12, atol=1e-13).y[0, 0]
            assert_close(end(1.0), want, rtol=1e-10)
            assert_close(wg.grad(end)(1.0), (end(1.0 + 1e-3) - end(1.0 - 1e-3)) / 2e-3,
                         rtol=1e-5)
    finally:
        FORCING[0] = 1.0


def test_a_changed_global_in_an_event_function_is_followed():
    # the event's threshold H matters only for t > 0.6, which no check of values sees
    # (QA: the crossing stayed at -ln 0.5 after H = 0.4).  y = e^(-k t) meets H at
    # t = -ln(H)/k, and dt/dk = ln(H)/k².
    H = [0.5]

    def hit(t, y, k):
        return y[0] - wnp.where(t > 0.6, H[0], -1.0)
    hit.terminal = True

    def decay(t, y, k):
        return -k * y

    def end(k):
        return solve_ivp(decay, (0.0, 1.0), [1.0], args=(k,), events=hit, rtol=1e-10,
                         atol=1e-12, backend="c").t[-1]
    for H[0] in (0.5, 0.4, 0.5):
        assert_close(end(1.0), -np.log(H[0]), rtol=1e-8)
        assert_close(wg.grad(end)(1.0), np.log(H[0]), rtol=1e-8)


def test_ctrl_c_stops_a_long_solve():
    """The loop asks Python's signal check every 1024 steps (a signal handler that
    raises stands in for Ctrl-C's)."""
    import signal
    import time

    def alarm(*_):
        raise KeyboardInterrupt
    fast = lambda t, y: [y[1], -1e4 * y[0]]           # noqa: E731  (ω = 100: tiny steps)
    solve_ivp(fast, (0.0, 0.01), [1.0, 0.0], backend="c")           # (compiled first)
    old = signal.signal(signal.SIGALRM, alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        start = time.perf_counter()
        with pytest.raises(KeyboardInterrupt):
            solve_ivp(fast, (0.0, 1e6), [1.0, 0.0], t_eval=[1e6], backend="c",
                      rtol=1e-12, atol=1e-12)
        assert time.perf_counter() - start < 5.0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, old)


def test_clear_errors():
    with pytest.raises(ValueError, match="runs the explicit methods RK23, RK45, DOP853"):
        solve_ivp(decay, (0.0, 1.0), [1.0], args=(0.5,), method="BDF", backend="c")
    with pytest.raises(ValueError, match="backend must be 'scipy' or 'c'"):
        solve_ivp(decay, (0.0, 1.0), [1.0], args=(0.5,), backend="fortran")
    with pytest.raises(ValueError, match="odeint is LSODA"):
        odeint(lambda y, t: -y, 1.0, [0.0, 1.0], backend="c")

    def branchy(t, y):
        if y[0] > 0.5:
            return -y
        return y
    with pytest.raises(ValueError, match="needs the value of y, t or args.*wnp.where"):
        solve_ivp(branchy, (0.0, 1.0), [1.0], backend="c")
    with pytest.raises(ValueError, match="needs the value.*np.array"):   # NumPy's array()
        solve_ivp(lambda t, y: np.array([y[1], -y[0]]), (0.0, 1.0), [1.0, 0.0], backend="c")
    with pytest.raises(ValueError, match="`y0` must be finite"):
        solve_ivp(decay, (0.0, 1.0), [np.nan], args=(0.5,), backend="c")
    with pytest.raises(TypeError, match="complex state or argument"):
        solve_ivp(decay, (0.0, 1.0), [1.0], args=(1j,), backend="c")
    with pytest.raises(ValueError, match="too large for straight-line C"):
        A = np.random.default_rng(0).normal(size=(150, 150))
        solve_ivp(lambda t, y: A @ y, (0.0, 1.0), np.ones(150), backend="c")
    with pytest.raises(TypeError, match="dtype int64"):
        solve_ivp(decay, (0.0, 1.0), [1.0], args=(np.array([2]),), backend="c")
    with pytest.raises(TypeError, match="complex"):
        solve_ivp(decay, (0.0, 1.0), [1.0 + 1j], args=(0.5,), backend="c")
    # a float32 argument is read as the double it converts to
    got = solve_ivp(decay, (0.0, 1.0), [1.0], args=(np.float32(0.5),), backend="c",
                    rtol=1e-10, atol=1e-12)
    assert_close(got.y[0, -1], np.exp(-0.5), rtol=1e-9)

    def solved(t, y):                   # linear algebra has no element-by-element form
        return wnp.linalg.solve(wnp.eye(2) * 2.0, y)
    with pytest.raises(ValueError, match="cannot write element by element"):
        solve_ivp(solved, (0.0, 1.0), [1.0, 2.0], backend="c")


def test_no_compiler_says_what_to_do(monkeypatch):
    def missing():
        raise C.CompilerNotFound("backend='c' needs a C compiler, and none was found")
    monkeypatch.setattr(C, "compiler", missing)
    with pytest.raises(C.CompilerNotFound, match="needs a C compiler"):
        solve_ivp(lambda t, y: -3.25 * y + 0.125, (0.0, 1.0), [1.0], backend="c")


def test_a_wengert_branch_compiles():
    """wnp.where is the traced spelling of an if: it is C's conditional."""
    def bang(t, y):
        return wnp.where(y > 0.5, -y, -0.5 * y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got, want = both(bang, (0.0, 2.0), [1.0], t_eval=[1.0, 2.0])
    assert_close(got.y, want.y, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("how", ["numbers", "compiled", "vmap"])
def test_reverse_mode_refuses_a_backward_solve_that_left_the_forward_one(how):
    # y' = s·A·y, eigenvalues -50 and -0.5: stable forward, e^100 unstable backward.  The
    # C loop's backward solves gave -1.7e15 where d/ds is -0.0074, silently, on numbers,
    # compiled and under vmap (the SciPy back-end's check had not reached them).
    from scipy.linalg import expm_frechet
    A = np.array([[-50.0, 0.0], [1.0, -0.5]])
    g = lambda s: solve_ivp(lambda t, y, s: s * (A @ y), (0.0, 2.0), [1.0, 0.0],  # noqa
                            method="RK45", t_eval=[2.0], args=(s,), rtol=1e-8, atol=1e-12,
                            backend="c").y[1, -1]
    exact = expm_frechet(2 * A, 2 * A, compute_expm=False)[1, 0]       # d/ds expm(2sA)
    assert abs(wg.jacfwd(g)(1.0) - exact) < 1e-7
    grad = {"numbers": wg.grad(g), "compiled": wg.compile(wg.grad(g), 1.0),
            "vmap": wg.vmap(wg.grad(g))}[how]
    with pytest.raises(RuntimeError, match="stiff or strongly damped.*Use forward mode"):
        grad(np.array([1.0, 1.0]) if how == "vmap" else 1.0)
