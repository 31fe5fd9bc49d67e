"""wengert.scipy.integrate.solve_ivp: SciPy's values and result; derivatives in y0,
t_span, t_eval and args against closed forms and central differences for every method,
in every mode (adjoint VJP, forward-sensitivity JVP, second order, Taylor), under
compile and vmap; the exact Jacobian handed to the implicit methods; clear errors."""
import math
import warnings

import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
import ode_systems
from fd import assert_close, check_grads, fd_jacobian

scipy_integrate = pytest.importorskip("scipy.integrate")
from wengert.scipy.integrate import solve_ivp  # noqa: E402
from wengert.scipy import integrate as wint  # noqa: E402

METHODS = ["RK45", "RK23", "DOP853", "Radau", "BDF", "LSODA"]
IMPLICIT = ["Radau", "BDF", "LSODA"]


def tight(method):
    """Solver tolerances for comparisons with closed forms: rtol 1e-10, atol 1e-12, but
    for RK23, whose third order needs ~10⁴ steps for them (seconds per derivative)."""
    return dict(rtol=1e-8, atol=1e-10) if method == "RK23" else dict(rtol=1e-10, atol=1e-12)


def agree(method):
    """How closely a derivative so solved meets the exact one."""
    return dict(rtol=1e-5, atol=1e-7) if method == "RK23" else dict(rtol=1e-7, atol=1e-9)


def lotka_volterra(t, y, p):
    return ode_systems.lotka_volterra(y, t, p)


def forced(t, y, params):
    return ode_systems.forced(y, t, params)


def decay(t, y, k):
    return -k * y


def oscillator(t, y, w):
    return [y[1], -w * w * y[0]]              # (a list, as SciPy users write it)


P = np.array([1.0, 0.5, 0.8, 0.3])
Y0 = np.array([1.0, 0.5])
T = np.linspace(0.0, 4.0, 9)
PARAMS = {"spring": np.array([2.0, 0.3]), "amp": 0.7}


# --- values: SciPy's -----------------------------------------------------------------------
@pytest.mark.parametrize("method", ["RK45", "RK23", "DOP853"])
def test_plain_values_are_scipys(method):
    for t_eval in (T, None):
        want = scipy_integrate.solve_ivp(lotka_volterra, (0.0, 4.0), Y0, method=method,
                                         t_eval=t_eval, args=(P,))
        got = solve_ivp(lotka_volterra, (0.0, 4.0), Y0, method=method, t_eval=t_eval,
                        args=(P,))
        assert type(got) is type(want)
        for field in ("t", "y", "nfev", "njev", "nlu", "status", "message", "success"):
            assert np.array_equal(got[field], want[field]), field


def lv_jacobian(t, y, p):
    return np.array([[p[0] - p[1] * y[1], -p[1] * y[0]],
                     [p[3] * y[1], -p[2] + p[3] * y[0]]])


def robertson(t, y, k):
    """Robertson's chemical kinetics, stiff: rates 0.04, 3e7, 1e4."""
    return wnp.stack([-k[0] * y[0] + k[2] * y[1] * y[2],
                      k[0] * y[0] - k[1] * y[1] ** 2 - k[2] * y[1] * y[2],
                      k[1] * y[1] ** 2])


def robertson_jacobian(t, y, k):
    return np.array([[-k[0], k[2] * y[2], k[2] * y[1]],
                     [k[0], -2 * k[1] * y[1] - k[2] * y[2], -k[2] * y[1]],
                     [0.0, 2 * k[1] * y[1], 0.0]])


K = np.array([0.04, 3e7, 1e4])


@pytest.mark.parametrize("method", IMPLICIT)
def test_implicit_methods_get_the_exact_jacobian(method):
    """The solve is SciPy's given ∂f/∂y by hand: SciPy calls fun as often (nfev, which
    leaves out the calls of Radau's and BDF's finite differences), and more without."""
    calls = [0]

    def counted(t, y, k):
        calls[0] += type(y) is np.ndarray           # (SciPy's calls, not wengert's tracing)
        return robertson(t, y, k)

    def run(solve, **kw):
        calls[0] = 0
        return solve(counted, (0.0, 100.0), [1.0, 0.0, 0.0], method=method, args=(K,),
                     t_eval=[1.0, 10.0, 100.0], rtol=1e-6, atol=1e-10, **kw), calls[0]
    got, n_got = run(solve_ivp)
    want, n_want = run(scipy_integrate.solve_ivp, jac=robertson_jacobian)
    assert_close(got.y, want.y, rtol=1e-12, atol=1e-16)
    assert (got.nfev, got.njev) == (want.nfev, want.njev) and got.njev > 0
    assert n_got == n_want == got.nfev
    _, n_fd = run(scipy_integrate.solve_ivp)                          # SciPy's default
    assert n_fd > n_want


def test_the_exact_jacobian_is_wengerts():
    prim = wint._primitive(lotka_volterra, (2,), wint.flatten((P,))[1], ((P.shape, P.dtype),),
                           (), True, {}, "BDF")
    jac = prim.jacobian([P], Y0, 0.0)
    assert_close(jac(0.3, np.array([0.7, 1.3]), P), lv_jacobian(0.3, [0.7, 1.3], P),
                 rtol=1e-15, atol=0)


@pytest.mark.parametrize("method", ["Radau", "BDF"])
def test_the_jacobian_at_the_start_is_not_computed_twice(method, monkeypatch):
    """Whether wengert can differentiate fun is found by its Jacobian at (t0, y0), which
    is also the first SciPy asks for: it is handed over, not computed again."""
    made = [0]
    real = wint._Jacobian.rhs

    def counted(self, *args):
        made[0] += 1
        return real(self, *args)
    monkeypatch.setattr(wint._Jacobian, "rhs", counted)
    found = solve_ivp(robertson, (0.0, 100.0), [1.0, 0.0, 0.0], method=method, args=(K,),
                      rtol=1e-6, atol=1e-10)
    assert 0 < found.njev == made[0]
    want = scipy_integrate.solve_ivp(robertson, (0.0, 100.0), [1.0, 0.0, 0.0], method=method,
                                     args=(K,), rtol=1e-6, atol=1e-10, jac=robertson_jacobian)
    assert_close(found.y[:, -1], want.y[:, -1], rtol=1e-12, atol=1e-16)


def test_undifferentiable_fun_gets_finite_differences():
    """A fun that leaves wengert (math.exp wants a number) is SciPy's finite
    differences, silently, on plain and traced values."""
    def f(t, y, k):
        return [-k * y[0] * math.exp(-float(y[0]))]
    for method in IMPLICIT:
        want = scipy_integrate.solve_ivp(f, (0.0, 2.0), [1.0], method=method, args=(0.5,))
        got = solve_ivp(f, (0.0, 2.0), [1.0], method=method, args=(0.5,))
        assert np.array_equal(got.y, want.y) and got.njev == want.njev
        ys, _ = wg.vjp(lambda y0: solve_ivp(f, (0.0, 2.0), y0, method=method, t_eval=[2.0],
                                            args=(0.5,)).y, np.array([1.0]))
        assert_close(ys, want.y[:, -1:], rtol=1e-12, atol=0)


def test_user_jacobian_and_sparsity_are_scipys():
    for method in ("BDF", "Radau"):
        for kw in (dict(jac=lv_jacobian), dict(jac_sparsity=np.ones((2, 2)))):
            want = scipy_integrate.solve_ivp(lotka_volterra, (0.0, 4.0), Y0, method=method,
                                             t_eval=T, args=(P,), **kw)
            got = solve_ivp(lotka_volterra, (0.0, 4.0), Y0, method=method, t_eval=T,
                            args=(P,), **kw)
            assert np.array_equal(got.y, want.y) and got.njev == want.njev
            ys, _ = wg.vjp(lambda p: solve_ivp(lotka_volterra, (0.0, 4.0), Y0, method=method,
                                               t_eval=T, args=(p,), **kw).y, P)
            assert np.array_equal(ys, want.y)


@pytest.mark.parametrize("method", METHODS)
def test_traced_values_are_the_plain_ones(method):
    """The solve under a transformation is the plain call's, to the last bit: with
    t_eval, and without (the solver's own steps, not interpolated)."""
    for t_eval in (T, None):
        want = solve_ivp(lotka_volterra, (0.0, 4.0), Y0, method=method, t_eval=t_eval,
                         args=(P,))
        t, ys = wg.vjp(lambda p: (lambda r: (r.t, r.y))(
            solve_ivp(lotka_volterra, (0.0, 4.0), Y0, method=method, t_eval=t_eval,
                      args=(p,))), P)[0]
        assert np.array_equal(ys, want.y) and np.array_equal(t, want.t)


def test_traced_result_fields():
    found = []
    wg.grad(lambda p: found.append(solve_ivp(lotka_volterra, (0.0, 4.0), Y0, t_eval=T,
                                             args=(p,))) or wnp.sum(found[0].y))(P)
    want = scipy_integrate.solve_ivp(lotka_volterra, (0.0, 4.0), Y0, t_eval=T, args=(P,))
    r = found[0]
    assert (r.status, r.success, r.message, r.nfev) == (0, True, want.message, want.nfev)
    assert r.sol is None and r.t_events is None and r.y_events is None


def test_one_solve_in_the_graph():
    g = wg.trace(lambda p: solve_ivp(lotka_volterra, (0.0, 4.0), Y0, t_eval=T,
                                     args=(p,)).y, P)
    solves = [n.op.name for n in g.nodes if n.op.name.startswith(("solve_ivp", "odeint"))]
    assert solves == ["solve_ivp[lotka_volterra]"]


# --- closed forms ----------------------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
def test_exponential_decay_derivatives(method):
    """y = y0 exp(-k (t - t0)): dy/dk = -(t - t0) y, dy/dy0 = y / y0, dy_i/dt_i = -k y_i,
    dy/dt0 = k y; y(t) does not depend on tf."""
    k, y0, t_eval = 0.7, 2.0, np.array([0.5, 1.0, 1.7, 3.0])

    def solve(k, y0, t_eval, t0, tf):
        return solve_ivp(decay, (t0, tf), wnp.stack([y0]), method=method, t_eval=t_eval,
                         args=(k,), **tight(method)).y[0]
    x = (k, y0, t_eval, 0.2, 3.5)
    y = y0 * np.exp(-k * (t_eval - 0.2))
    assert_close(solve(*x), y, **agree(method))
    for jac in (wg.jacrev, wg.jacfwd):
        dk, dy0, dt, dt0, dtf = jac(solve, argnums=(0, 1, 2, 3, 4))(*x)
        assert_close(dk, -(t_eval - 0.2) * y, **agree(method))
        assert_close(dy0, y / y0, **agree(method))
        assert_close(dt, np.diag(-k * y), **agree(method))
        assert_close(dt0, k * y, **agree(method))
        assert np.all(dtf == 0.0)


@pytest.mark.parametrize("method", METHODS)
def test_harmonic_oscillator_derivatives(method):
    """x'' = -w² x from rest at 1: x = cos wt, d/dw = -t sin wt, and at the end of
    t_span (t_eval=None) d x(T)/dT = v(T) = -w sin wT, d v(T)/dT = -w² x(T)."""
    w, t_eval = 1.3, np.linspace(0.0, 3.0, 4)
    x = lambda w: solve_ivp(oscillator, (0.0, 3.0), [1.0, 0.0], method=method, t_eval=t_eval,
                            args=(w,), **tight(method)).y[0]
    assert_close(x(w), np.cos(w * t_eval), **agree(method))
    for jac in (wg.jacrev, wg.jacfwd):
        assert_close(jac(x)(w), -t_eval * np.sin(w * t_eval), **agree(method))
    end = lambda T: solve_ivp(oscillator, (0.0, T), [1.0, 0.0], method=method, args=(w,),
                              **tight(method)).y[:, -1]
    for jac in (wg.jacrev, wg.jacfwd):
        assert_close(jac(end)(2.5), [-w * np.sin(2.5 * w), -w * w * np.cos(2.5 * w)],
                     **agree(method))


def test_end_time_in_t_span_and_t_eval():
    """One T both ends t_span and is its last output time: d y(T)/dT = f(y(T), T)."""
    def end(T, k):
        return solve_ivp(decay, (0.0, T), [1.0], t_eval=wnp.stack([0.5, T]), args=(k,),
                         **tight("RK45")).y[0, -1]
    for jac in (wg.jacrev, wg.jacfwd):
        assert_close(jac(end)(2.0, 0.4), -0.4 * np.exp(-0.8), rtol=1e-8, atol=0)


def test_result_times_follow_t_span():
    """With t_eval=None, result.t's ends are t_span's (traced), its steps constants."""
    def ends(t0, tf):
        return solve_ivp(decay, (t0, tf), [1.0], args=(0.5,)).t
    jac = wg.jacrev(ends, argnums=(0, 1))(0.0, 2.0)
    steps = len(ends(0.0, 2.0))
    assert steps > 3
    want0, want1 = np.zeros(steps), np.zeros(steps)
    want0[0], want1[-1] = 1.0, 1.0
    assert np.array_equal(jac[0], want0) and np.array_equal(jac[1], want1)


def test_backwards_in_time():
    """tf < t0, as SciPy allows: y(t) = y0 exp(-k (t - t0)) for t < t0."""
    t_eval = np.array([1.5, 1.0, 0.0])
    solve = lambda k, t0: solve_ivp(decay, (t0, 0.0), [1.0], t_eval=t_eval, args=(k,),
                                    **tight("DOP853")).y[0]
    y = np.exp(-0.5 * (t_eval - 2.0))
    assert_close(solve(0.5, 2.0), y, rtol=1e-9)
    for jac in (wg.jacrev, wg.jacfwd):
        dk, dt0 = jac(solve, argnums=(0, 1))(0.5, 2.0)
        assert_close(dk, -(t_eval - 2.0) * y, rtol=1e-8)
        assert_close(dt0, 0.5 * y, rtol=1e-8)


# --- against central differences ------------------------------------------------------------
def forced_outputs(y0, t_eval, spring, method="RK45"):
    params = {"spring": spring, "amp": 0.7}
    return solve_ivp(forced, (0.0, 2.6), y0, method=method, t_eval=t_eval, args=(params,),
                     rtol=1e-11, atol=1e-12).y


X_Y0, X_T = np.array([1.0, -0.5]), np.array([0.4, 1.1, 1.5, 2.5])   # (t_eval ± ε within
#                                                                          t_span)


@pytest.mark.parametrize("method", ["RK45", "DOP853", "Radau", "BDF", "LSODA"])
def test_first_order_against_differences(method):
    """JVP along random directions of y0, t_eval and a leaf of a pytree in args, against
    central differences, and the VJP by the dot-product test."""
    check_grads(lambda *a: forced_outputs(*a, method=method), X_Y0, X_T, PARAMS["spring"],
                order=1, eps=1e-5, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("method", ["DOP853", "BDF"])
def test_second_order_against_differences(method):
    """The same checks applied to the pullback (forward over reverse, and reverse over
    reverse: the adjoint system's own solves, differentiated again)."""
    check_grads(lambda *a: forced_outputs(*a, method=method), X_Y0, X_T, PARAMS["spring"],
                order=2, eps=1e-5, rtol=1e-6, atol=1e-8)


def test_gradient_of_a_pytree_against_differences():
    def loss(y0, params):
        ys = solve_ivp(forced, (0.0, 2.6), y0, t_eval=X_T, args=(params,), method="DOP853",
                       rtol=1e-11, atol=1e-12).y
        return wnp.sum(wnp.sin(ys[0]) * ys[1])
    g = wg.grad(loss, argnums=1)(X_Y0, PARAMS)
    h = 1e-5
    spring = lambda s: loss(X_Y0, {"spring": s, "amp": 0.7})
    assert_close(g["spring"], fd_jacobian(spring, PARAMS["spring"], h), rtol=1e-6)
    amp = lambda a: loss(X_Y0, {"spring": PARAMS["spring"], "amp": a})
    assert_close(g["amp"], (amp(0.7 + h) - amp(0.7 - h)) / (2 * h), rtol=1e-6)


@pytest.mark.parametrize("method", METHODS)
def test_reverse_equals_forward(method):
    """Every output in everything, by the adjoint method and by sensitivities (solved to
    1e-8: this compares two solutions of other ODEs, to that accuracy)."""
    solve = lambda p, y0, t: solve_ivp(lotka_volterra, (0.0, 4.0), y0, method=method,
                                       t_eval=t, args=(p,), rtol=1e-8, atol=1e-10).y
    rev = wg.jacrev(solve, argnums=(0, 1, 2))(P, Y0, T[::2])
    fwd = wg.jacfwd(solve, argnums=(0, 1, 2))(P, Y0, T[::2])
    for r, f in zip(rev, fwd):
        assert_close(r, f, rtol=1e-5, atol=1e-7)


def lv_loss(p, method="BDF"):
    ys = solve_ivp(lotka_volterra, (0.0, 4.0), Y0, method=method, t_eval=T[::2], args=(p,),
                   **tight(method)).y
    return wnp.sum((ys - 1.0) ** 2)


def test_hessian_against_differences_of_the_gradient():
    H = wg.hessian(lv_loss)(P)
    assert_close(H, H.T, rtol=1e-7, atol=1e-7)
    assert_close(H, fd_jacobian(wg.grad(lv_loss), P, 1e-5), rtol=1e-5, atol=1e-6)


def test_taylor_mode():
    """wg.derivatives through solve_ivp (nested sensitivities): Σ_i exp(-k t_i) and its
    derivatives Σ (-t_i)^j exp(-k t_i); wg.taylor in the rate and the end time at once,
    against the series of the closed form exp(-k T)."""
    t = np.linspace(0.0, 2.0, 6)
    f = lambda k: wnp.sum(solve_ivp(decay, (0.0, 2.0), [1.0], t_eval=t, args=(k,),
                                    method="DOP853", **tight("DOP853")).y)
    want = [np.sum((-t) ** j * np.exp(-0.5 * t)) for j in range(4)]
    assert_close(wg.derivatives(f, 3)(0.5), want, rtol=1e-8, atol=1e-10)
    end = lambda x: solve_ivp(decay, (0.0, x[1]), [1.0], args=(x[0],), method="DOP853",
                              **tight("DOP853")).y[0, -1]
    got = wg.taylor(end, (0.5, 2.0), (1.0, 0.5), order=3)
    want = wg.taylor(lambda x: wnp.exp(-x[0] * x[1]), (0.5, 2.0), (1.0, 0.5), order=3)
    assert_close(got, want, rtol=1e-8, atol=1e-10)


# --- shapes ------------------------------------------------------------------------------------
def test_state_of_several_dimensions():
    """X' = A X, X(t) = expm(A t): fun sees y0's shape, result.y has shape
    y0.shape + (len(t),), on plain and traced values alike."""
    from scipy.linalg import expm
    A = np.array([[0.0, 1.0], [-2.0, -0.3]])
    f = lambda t, X, A: A @ X
    for method in ("RK45", "BDF"):
        out = solve_ivp(f, (0.0, 1.0), np.eye(2), method=method, t_eval=[0.5, 1.0], args=(A,),
                        **tight(method))
        assert out.y.shape == (2, 2, 2)
        assert_close(out.y[..., -1], expm(A), rtol=1e-8, atol=1e-9)
        g = wg.grad(lambda A: wnp.sum(solve_ivp(f, (0.0, 1.0), np.eye(2), method=method,
                                                t_eval=[1.0], args=(A,),
                                                **tight(method)).y))(A)
        assert_close(g, fd_jacobian(lambda A: np.sum(expm(A)), A, 1e-6).reshape(2, 2),
                     rtol=1e-6, atol=1e-8)


def test_scalar_state():
    out = solve_ivp(decay, (0.0, 1.0), 1.0, t_eval=[0.5, 1.0], args=(0.5,), **tight("RK45"))
    assert out.y.shape == (2,)
    g = wg.grad(lambda k: solve_ivp(decay, (0.0, 1.0), 1.0, t_eval=[1.0], args=(k,),
                                    **tight("RK45")).y[0])(0.5)
    assert_close(g, -np.exp(-0.5), rtol=1e-9)


def test_dense_output_and_events_of_several_dimensions_on_plain_values():
    def hit(t, X):
        return X[0, 0] - 0.5
    hit.terminal = True
    out = solve_ivp(lambda t, X: -X, (0.0, 2.0), np.eye(2), dense_output=True, events=hit,
                    rtol=1e-8, atol=1e-10)
    assert out.status == 1 and out.y_events[0].shape == (1, 2, 2)
    assert_close(out.t_events[0], [np.log(2.0)], rtol=1e-7)
    assert_close(out.y_events[0][0], 0.5 * np.eye(2), rtol=1e-7, atol=1e-9)
    assert out.sol(0.3).shape == (2, 2) and out.sol([0.1, 0.3]).shape == (2, 2, 2)
    assert_close(out.sol(0.3), np.exp(-0.3) * np.eye(2), rtol=1e-7, atol=1e-9)


def test_scipys_conventions():
    """args as a list, args=None, an OdeSolver class, integer times, vectorized fun."""
    want = scipy_integrate.solve_ivp(decay, (0, 2), [1.0], t_eval=[1, 2], args=[0.5])
    got = solve_ivp(decay, (0, 2), [1.0], t_eval=[1, 2], args=[0.5])
    assert np.array_equal(got.y, want.y)
    g = wg.grad(lambda k: solve_ivp(decay, (0, 2), [1.0], t_eval=[1, 2], args=[k],
                                    method=scipy_integrate.DOP853, **tight("DOP853")).y[0, 1])
    assert_close(g(0.5), -2 * np.exp(-1.0), rtol=1e-9)
    g = wg.grad(lambda y0: solve_ivp(lambda t, y: -0.5 * y, (0, 2), y0, t_eval=[2],
                                     **tight("RK45")).y[0, 0])
    assert_close(g(np.array([1.0])), [np.exp(-1.0)], rtol=1e-9)
    for method in ("RK45", "Radau"):
        want = scipy_integrate.solve_ivp(decay, (0, 2), [1.0, 2.0], method=method, args=(0.5,),
                                         vectorized=True)
        got = solve_ivp(decay, (0, 2), [1.0, 2.0], method=method, args=(0.5,),
                        vectorized=True)
        assert_close(got.y, want.y, rtol=1e-6)
        g = wg.grad(lambda k: solve_ivp(decay, (0, 2), [1.0, 2.0], method=method,
                                        t_eval=[2], args=(k,), vectorized=True,
                                        **tight(method)).y[0, 0])
        assert_close(g(0.5), -2 * np.exp(-1.0), rtol=1e-8)


def test_vectorized_calls_of_the_traced_solve():
    """SciPy's finite differences call a vectorized fun with k states at once: on traced
    values too, in y0's shape."""
    seen = []

    def f(t, X, k):
        seen.append(np.shape(X))
        return -k * X
    tree = wint.flatten((0.5,))[1]
    prim = wint._primitive(f, (2, 2), tree, (((), np.dtype(float)),), (0,), True,
                           dict(vectorized=True), "BDF")
    rhs = prim.system.bind([0.5], np.ones(4), 0.0)
    assert_close(rhs(np.arange(12.0).reshape(4, 3), 0.0), -0.5 * np.arange(12.0).reshape(4, 3))
    assert seen == [(2, 2, 3)]


def test_options_reach_the_derived_systems():
    """The adjoint is solved by the user's method and tolerances and step bound (one
    tolerance for a per-element atol); not by options of the user's system alone."""
    options = dict(rtol=1e-9, atol=np.array([1e-10, 1e-11]), max_step=0.1, first_step=1e-3)
    wg.grad(lambda p: wnp.sum(solve_ivp(lotka_volterra, (0.0, 4.0), Y0, method="Radau",
                                        t_eval=T, args=(p,), jac=lv_jacobian,
                                        **options).y))(P)
    prim = [p for p in wint._PRIMITIVES.values() if p.system.func is lotka_volterra and
            p.options.get("max_step") == 0.1][-1]
    assert prim._adjoint.method == "Radau"
    assert prim._adjoint.options == dict(rtol=1e-9, atol=1e-11, max_step=0.1)
    assert prim._adjoint._jacobian is not None    # (asked for its exact ∂f/∂y)


# --- the other transformations ----------------------------------------------------------------
def test_compiled_gradient():
    g = wg.compile(wg.grad(lv_loss), P)
    assert_close(g(P), wg.grad(lv_loss)(P), rtol=1e-12, atol=0)
    assert_close(g(P + 0.1), wg.grad(lv_loss)(P + 0.1), rtol=1e-12, atol=0)


def test_compiled_in_the_times():
    end = lambda T: solve_ivp(decay, (0.0, T), [1.0], t_eval=wnp.stack([T]), args=(0.5,),
                              **tight("RK45")).y[0, 0]
    g = wg.compile(wg.grad(end), 2.0)
    for T_ in (2.0, 3.0):
        assert_close(g(T_), -0.5 * np.exp(-0.5 * T_), rtol=1e-9)


def test_vmap():
    """One solve for the batch (more in test_ode_vmap.py): the examples' values and
    gradients to the solver's tolerance."""
    ps = P + 0.05 * np.arange(3)[:, None]
    solve = lambda p: solve_ivp(lotka_volterra, (0.0, 4.0), Y0, t_eval=T, args=(p,),
                                **tight("RK45")).y
    assert_close(wg.vmap(solve)(ps), np.stack([solve(p) for p in ps]), **agree("RK45"))
    grads = wg.vmap(wg.grad(lambda p: lv_loss(p, "RK45")))(ps)
    assert_close(grads, np.stack([wg.grad(lv_loss)(p, "RK45") for p in ps]),
                 **agree("RK45"))


# --- errors ------------------------------------------------------------------------------------
def test_t_eval_none_needs_values():
    end = lambda k: solve_ivp(decay, (0.0, 1.0), [1.0], args=(k,)).y[0, -1]
    with pytest.raises(ValueError, match="pass t_eval"):
        wg.compile(end, 0.5)
    with pytest.raises(ValueError, match="pass t_eval"):
        wg.vmap(end)(np.array([0.5, 0.6]))


def test_failed_solve():
    """y' = y² blows up at t = 1: SciPy reports status -1; on traced values, an error."""
    blow = lambda t, y, k: k * y ** 2
    out = solve_ivp(blow, (0.0, 2.0), [1.0], args=(1.0,))
    assert out.status == -1 and not out.success
    for t_eval in ([1.5, 2.0], None):
        with pytest.raises(RuntimeError, match="solve_ivp: the solver failed .*" + out.message):
            wg.grad(lambda k: solve_ivp(blow, (0.0, 2.0), [1.0], t_eval=t_eval,
                                        args=(k,)).y[0, -1])(1.0)


def test_complex_values_are_refused_when_traced():
    with pytest.raises(TypeError, match="solve_ivp: complex values"):
        wg.grad(lambda k: wnp.real(solve_ivp(decay, (0.0, 1.0), [1.0 + 1j], t_eval=[1.0],
                                             args=(k,)).y[0, 0]))(0.5)
    want = scipy_integrate.solve_ivp(decay, (0.0, 1.0), [1.0 + 1j], args=(0.5,))  # plain:
    assert np.array_equal(solve_ivp(decay, (0.0, 1.0), [1.0 + 1j], args=(0.5,)).y, want.y)


def test_closing_over_a_traced_value_is_an_error():
    for method in ("RK45", "BDF"):
        with pytest.raises(ValueError, match="solve_ivp: .* pass that value in args"):
            wg.grad(lambda k: solve_ivp(lambda t, y: -k * y, (0.0, 1.0), [1.0],
                                        method=method).y[0, -1])(0.5)
        with pytest.raises(ValueError, match="pass that value in args"):
            wg.grad(lambda k: solve_ivp(lambda t, y: -k * y, (0.0, 1.0), wnp.stack([k]),
                                        method=method, t_eval=[1.0]).y[0, -1])(0.5)


def test_shape_errors_name_shapes():
    bad = lambda t, y, k: wnp.concatenate([y, y]) * k
    with pytest.raises(ValueError, match=r"solve_ivp: fun returned dy/dt of shape \(4,\) for "
                                         r"a state y of shape \(2,\)"):
        wg.grad(lambda k: wnp.sum(solve_ivp(bad, (0.0, 1.0), Y0, t_eval=T[:2],
                                            args=(k,)).y))(1.0)
    with pytest.raises(ValueError, match=r"shape \(4,\) for a state y of shape \(2,\)"):
        solve_ivp(bad, (0.0, 1.0), Y0, args=(1.0,))
    with pytest.raises(ValueError, match=r"shape \(2,\) for a state y of shape \(2, 2\)"):
        solve_ivp(lambda t, X: X[0], (0.0, 1.0), np.eye(2))
    with pytest.raises(ValueError, match=r"t_span must be two times \(t0, tf\), got shape "
                                         r"\(3,\)"):
        wg.grad(lambda k: solve_ivp(decay, (0.0, 1.0, 2.0), [1.0], args=(k,)).y[0, -1])(0.5)
    with pytest.raises(ValueError, match=r"t_eval must be one-dimensional, got shape \(1, 2\)"):
        wg.grad(lambda k: solve_ivp(decay, (0.0, 1.0), [1.0], t_eval=[[0.5, 1.0]],
                                    args=(k,)).y[0, -1])(0.5)


def test_bad_times_and_method():
    solve = lambda k, t_eval, method="RK45": solve_ivp(decay, (0.0, 1.0), [1.0], t_eval=t_eval,
                                                       args=(k,), method=method).y[0, -1]
    for t_eval, message in (([0.5, 2.0], "not within `t_span`"),
                            ([0.5, 0.2], "not properly sorted")):
        for f in (lambda: solve(0.5, t_eval), lambda: wg.grad(solve)(0.5, t_eval)):
            with pytest.raises(ValueError, match=message):       # (SciPy's messages)
                f()
    with pytest.raises(ValueError, match="`method` must be one of"):
        wg.grad(solve)(0.5, [1.0], "rk4")
    with pytest.raises(ValueError, match="sorted"):             # (found at run time)
        wg.compile(lambda t: solve_ivp(decay, (0.0, 1.0), [1.0], t_eval=t,
                                       args=(0.5,)).y, np.array([0.2, 0.5]))(
            np.array([0.5, 0.2]))


def test_args_must_unpack():
    for solve in (solve_ivp, lambda *a, **kw: wg.grad(
            lambda k: solve_ivp(*a[:2], wnp.stack([k]), **kw).y[0, 0])(1.0)):
        with pytest.raises(TypeError, match="Supplied 'args' cannot be unpacked"):
            solve(decay, (0.0, 1.0), [1.0], t_eval=[1.0], args=0.5)


def test_empty_interval():
    """t0 = tf: y stays y0 (SciPy reports it twice with t_eval=None)."""
    want = scipy_integrate.solve_ivp(decay, (1.0, 1.0), [2.0], args=(0.5,))
    ys, pull = wg.vjp(lambda y0: solve_ivp(decay, (1.0, 1.0), y0, args=(0.5,)).y,
                      np.array([2.0]))
    assert np.array_equal(ys, want.y)
    assert_close(pull(np.ones((1, 2)))[0], [2.0], rtol=0, atol=0)


def test_no_warnings_from_the_derived_solves():
    """SciPy warns of options a method does not read: the derived systems get only
    those that apply (no jac for an explicit method, ...)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for method in METHODS:
            wg.grad(lv_loss)(P, method)


def test_a_zero_length_span_with_t_eval_under_a_derivative_reports_no_work():
    # it crashed (prim.stats unset by the early return), or reported the nfev of the
    # previous solve of the same function (QA)
    def decay(t, y, k):
        return -k * y
    seen = []

    def f(k, span):
        sol = solve_ivp(decay, span, [1.0], t_eval=[1.0], args=(k,))
        seen.append(sol.nfev)
        return sol.y
    wg.jacfwd(lambda k: f(k, (0.0, 1.0)))(0.5)
    J = wg.jacfwd(lambda k: f(k, (1.0, 1.0)))(0.5)
    assert seen[0] > 0 and seen[1] == 0 and np.all(np.asarray(J) == 0.0)


# ---- from the integrate audit (2026-11-24) ------------------------------------------------------
def test_a_vectorized_fun_is_called_with_columns_on_traced_values_too():
    # SciPy calls a vectorized fun with y of shape (n, k): a fun written so (y[0, :]) got a
    # 1-D y under wg.grad and raised IndexError
    def fun(t, y, k):
        return wnp.stack([y[1, :], -k * y[0, :]])
    for method in ("RK45", "BDF"):
        solve = lambda k: solve_ivp(fun, (0.0, 1.0), [1.0, 0.0], method=method,  # noqa
                                    vectorized=True, args=(k,), rtol=1e-10, atol=1e-12).y[0, -1]
        assert_close(solve(2.0), math.cos(math.sqrt(2.0)), rtol=1e-7)
        w = math.sqrt(2.0)
        assert_close(wg.grad(solve)(2.0), -math.sin(w) / (2 * w), rtol=1e-6)   # d cos(√k)/dk


def test_first_step_longer_than_the_way_to_an_event_or_a_time_of_sol():
    # the solves to an event's time or to a time of sol(t) kept the user's first_step,
    # which SciPy refuses where it is longer than the span
    f = lambda t, y, k: -k * y                                           # noqa: E731

    def ev(t, y, k):
        return y[0] - 0.9
    ev.terminal = True
    opts = dict(first_step=1.0, rtol=1e-10, atol=1e-12)
    hit = lambda k: solve_ivp(f, (0.0, 10.0), [1.0], args=(k,), events=ev,  # noqa: E731
                              **opts).t_events[0][0]
    assert_close(wg.grad(hit)(0.7), math.log(0.9) / 0.7 ** 2, rtol=1e-6)   # t = -ln 0.9 / k
    at = lambda k: solve_ivp(f, (0.0, 10.0), [1.0], args=(k,), dense_output=True,  # noqa
                             **opts).sol(0.05)[0]
    assert_close(wg.grad(at)(0.7), -0.05 * math.exp(-0.035), rtol=1e-6)


def test_first_step_is_checked_against_t_span_on_traced_values_too():
    # traced, a first_step longer than t_span was taken up to it silently, where SciPy
    # (and the plain call) refuses it
    f = lambda t, y, k: -k * y                                           # noqa: E731
    for first, message in ((2.0, "exceeds bounds"), (-1.0, "must be positive")):
        with pytest.raises(ValueError, match=message):
            scipy_integrate.solve_ivp(f, (0.0, 1.0), [1.0], args=(0.5,), first_step=first)
        with pytest.raises(ValueError, match=message):
            wg.grad(lambda k: solve_ivp(f, (0.0, 1.0), [1.0], args=(k,), t_eval=[1.0],
                                        first_step=first).y[0, 0])(0.5)


def test_reverse_mode_through_robertson_says_why_it_refuses():
    # LSODA's backward re-solve of a stiff system went non-finite, and the next interval's
    # solve started from it: SciPy's "y0 must be finite" came out, not the documented error
    def rob(t, y, k1, k2, k3):
        return wnp.stack([-k1 * y[0] + k3 * y[1] * y[2],
                          k1 * y[0] - k2 * y[1] ** 2 - k3 * y[1] * y[2], k2 * y[1] ** 2])
    out = lambda k1: solve_ivp(rob, (0.0, 100.0), [1.0, 0.0, 0.0], method="LSODA",  # noqa
                               t_eval=[1.0, 10.0, 100.0], args=(k1, 3e7, 1e4), rtol=1e-9,
                               atol=1e-13).y[0, -1]
    assert np.isfinite(wg.jacfwd(out)(0.04))
    with pytest.raises(RuntimeError, match="stiff or strongly damped.*Use forward mode"):
        wg.grad(out)(0.04)


def test_an_empty_state_and_an_event_that_never_happens_as_scipys():
    f = lambda t, y, k: -k * y                                           # noqa: E731
    loss = lambda k: wnp.sum(solve_ivp(f, (0.0, 1.0), np.zeros(0), args=(k,),  # noqa: E731
                                       t_eval=[0.5]).y) + k
    assert wg.grad(loss)(0.7) == 1.0                 # (reverse mode hit a zero-size max)

    def never(t, y, k):
        return y[0] + 5.0
    got = {}

    def first(k):
        got["r"] = solve_ivp(f, (0.0, 1.0), [1.0, 2.0], args=(k,), events=[never])
        return got["r"].y[0, -1]
    wg.grad(first)(0.7)
    want = scipy_integrate.solve_ivp(f, (0.0, 1.0), [1.0, 2.0], args=(0.7,), events=[never])
    assert np.shape(got["r"].y_events[0]) == np.shape(want.y_events[0]) == (0,)


def test_an_event_or_jac_closing_over_a_traced_value_is_refused_in_words():
    f = lambda t, y, k: -k * y                                           # noqa: E731

    def crossing(c, y0):
        def ev(t, y, k):
            return y[0] - c
        ev.terminal = True
        return solve_ivp(f, (0.0, 5.0), y0(c), events=ev, args=(0.7,)).t_events[0][0]
    for y0 in (lambda c: [1.0], lambda c: wnp.stack([1.0 + 0.0 * c])):     # plain or traced
        with pytest.raises(ValueError, match="event function ev computes with a traced "
                                             "value .* pass that value in args"):
            wg.grad(lambda c: crossing(c, y0))(0.3)
    with pytest.raises(ValueError, match="jac .* computes with a traced value"):
        wg.grad(lambda k: solve_ivp(f, (0.0, 1.0), wnp.stack([1.0 + 0.0 * k]), method="BDF",
                                    args=(0.7,), jac=lambda t, y, a: -k * np.eye(1)).y[0, -1])(
            0.7)
