"""wg.vmap of odeint and solve_ivp: a batch of solves is one solve of the examples'
systems side by side.  Values and derivatives (per-example gradients, the gradient of a
batch's total, forward sensitivities, second order) against per-example solves at tight
tolerances and central differences; the accuracy each example gets at loose ones; what
SciPy is handed (one call, the tolerances, the banded or sparse block Jacobian); and the
cases that fall back to one solve per example."""
import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from fd import assert_close, fd_jacobian
from ode_systems import forced, lotka_volterra

scipy_integrate = pytest.importorskip("scipy.integrate")
from wengert.scipy.integrate import odeint, solve_ivp  # noqa: E402
from wengert.scipy import integrate as wint  # noqa: E402

TIGHT = dict(rtol=1e-11, atol=1e-11)
P = np.array([1.0, 0.5, 0.8, 0.3])
Y0 = np.array([1.0, 0.5])
T = np.linspace(0.0, 4.0, 9)
RNG = np.random.default_rng(7)
PS = P * (1.0 + 0.2 * RNG.random((4, 4)))             # a batch of four rate vectors
Y0S = Y0 * (1.0 + 0.5 * RNG.random((4, 2)))           # ... and of initial states


def lv_ivp(t, y, p):
    return lotka_volterra(y, t, p)


def solve_lv(p, y0=Y0, **tol):
    return odeint(lotka_volterra, y0, T, args=(p,), **(tol or TIGHT))


def loss(p, y0=Y0):
    ys = solve_lv(p, y0)
    return wnp.sum(ys[1:] ** 2) + wnp.sum(wnp.log(ys[-1]))


def counting(monkeypatch, name):
    """Count SciPy's calls of `name` (odeint or solve_ivp) and keep their keywords."""
    calls = []
    real = getattr(scipy_integrate, name)

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)
    if name == "odeint":
        monkeypatch.setattr(wint, "_scipy_odeint", lambda: spy)
    else:
        class Module:
            solve_ivp = staticmethod(spy)
            OdeSolver = scipy_integrate.OdeSolver
        monkeypatch.setattr(wint, "_scipy_integrate", lambda: Module)
    return calls


# --- values --------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["params", "y0", "both"])
def test_values_are_the_examples(which, monkeypatch):
    fn = {"params": lambda p: solve_lv(p), "y0": lambda y0: solve_lv(P, y0),
          "both": lambda p, y0: solve_lv(p, y0)}[which]
    args = {"params": (PS,), "y0": (Y0S,), "both": (PS, Y0S)}[which]
    want = np.stack([fn(*a) for a in zip(*args)])
    calls = counting(monkeypatch, "odeint")
    got = wg.vmap(fn)(*args)
    assert len(calls) == 1                                # one solve for the batch
    assert got.shape == (4, len(T), 2)
    assert_close(got, want, rtol=1e-8, atol=1e-10)


def test_each_example_keeps_its_accuracy():
    """At loose tolerances each example of a batched solve is as accurate as its own
    solve was asked to be: solve_ivp's RK methods measure a root mean square over the
    state, so the batch's tolerances are divided by √batch."""
    ps = P * (1.0 + 0.3 * RNG.random((16, 4)))
    exact = np.stack([solve_ivp(lv_ivp, (0.0, 4.0), Y0, t_eval=T, args=(p,),
                                method="DOP853", rtol=1e-12, atol=1e-12).y for p in ps])
    for method in ("RK45", "RK23", "BDF"):
        one = lambda p: solve_ivp(lv_ivp, (0.0, 4.0), Y0, t_eval=T, args=(p,),
                                  method=method, rtol=1e-4, atol=1e-6).y
        alone = np.stack([one(p) for p in ps])
        batch = wg.vmap(one)(ps)
        worst_alone = np.abs(alone - exact).max(axis=(1, 2))
        worst_batch = np.abs(batch - exact).max(axis=(1, 2))
        assert np.all(worst_batch <= 2.0 * worst_alone.max()), method


@pytest.mark.parametrize("method", ["RK45", "DOP853", "Radau", "BDF", "LSODA"])
def test_solve_ivp_values(method, monkeypatch):
    one = lambda p, y0: solve_ivp(lv_ivp, (0.0, 4.0), y0, t_eval=T, args=(p,),
                                  method=method, **TIGHT).y
    want = np.stack([one(p, y0) for p, y0 in zip(PS, Y0S)])
    calls = counting(monkeypatch, "solve_ivp")
    got = wg.vmap(one)(PS, Y0S)
    assert len(calls) == 1
    assert_close(got, want, rtol=1e-7, atol=1e-9)


def test_shared_and_pytree_arguments():
    """A pytree of parameters, one leaf per example and one shared; a non-autonomous
    system (∂f/∂t ≠ 0)."""
    amps = np.array([0.3, 0.7, 1.1])

    def one(amp, spring):
        return odeint(forced, Y0, T, args=({"spring": spring, "amp": amp},), **TIGHT)
    spring = np.array([2.0, 0.3])
    got = wg.vmap(one, in_axes=(0, None))(amps, spring)
    assert_close(got, np.stack([one(a, spring) for a in amps]), rtol=1e-8, atol=1e-10)


def test_nested_vmap_and_compile():
    grid = PS[:3, None, :] * np.array([1.0, 1.1])[None, :, None]      # (3, 2, 4)
    nested = wg.vmap(wg.vmap(solve_lv))(grid)
    assert_close(nested, np.stack([[solve_lv(p) for p in row] for row in grid]),
                 rtol=1e-8, atol=1e-10)
    compiled = wg.compile(wg.vmap(solve_lv), PS)
    for ps in (PS, PS * 1.05):
        assert_close(compiled(ps), np.stack([solve_lv(p) for p in ps]), rtol=1e-8,
                     atol=1e-10)


# --- derivatives ---------------------------------------------------------------------------
def test_per_example_gradients():
    got = wg.vmap(wg.grad(loss))(PS)
    assert_close(got, np.stack([wg.grad(loss)(p) for p in PS]), rtol=1e-7, atol=1e-9)
    fd = np.stack([fd_jacobian(lambda q: loss(q), p, 1e-6) for p in PS])
    assert_close(got, fd, rtol=1e-5, atol=1e-7)
    both = wg.vmap(wg.grad(loss, argnums=(0, 1)))(PS, Y0S)
    for k in range(2):
        assert_close(both[k], np.stack([wg.grad(loss, argnums=k)(p, y0)
                                        for p, y0 in zip(PS, Y0S)]), rtol=1e-7, atol=1e-9)


def test_gradient_of_a_batch_total():
    """Reverse mode through the batched solve: shared rates, per-example initial states."""
    total = lambda p: wnp.sum(wg.vmap(lambda y0: loss(p, y0))(Y0S))
    want = sum(wg.grad(loss)(P, y0) for y0 in Y0S)
    assert_close(wg.grad(total)(P), want, rtol=1e-7, atol=1e-9)
    assert_close(wg.grad(total)(P), fd_jacobian(total, P, 1e-6), rtol=1e-5, atol=1e-7)


def test_forward_sensitivities_and_jacobians():
    jf = wg.vmap(wg.jacfwd(loss))(PS)
    assert_close(jf, np.stack([wg.grad(loss)(p) for p in PS]), rtol=1e-7, atol=1e-9)
    # the batched primitive's own JVP: a tangent of the batch's shared rates
    ends = lambda p: wg.vmap(lambda y0: solve_lv(p, y0)[-1])(Y0S)
    jac = wg.jacfwd(ends)(P)
    assert jac.shape == (4, 2, 4)
    assert_close(jac, fd_jacobian(ends, P, 1e-6), rtol=1e-5, atol=1e-7)
    assert_close(jac, wg.jacrev(ends)(P), rtol=1e-7, atol=1e-9)


def test_second_order():
    decay = lambda y, t, k: -k * y
    end = lambda k, y0: odeint(decay, y0, [0.0, 1.5], args=(k,), **TIGHT)[-1, 0]
    ks, y0s = np.array([0.3, 0.7, 1.2]), np.array([1.0, 2.0, 0.5])
    got = wg.vmap(wg.hessian(end))(ks, y0s)               # d²/dk² y0 e^{-1.5k}
    assert_close(got, 2.25 * y0s * np.exp(-1.5 * ks), rtol=1e-6, atol=1e-9)


def test_time_derivatives_are_summed_over_the_batch():
    """The output times are shared: their cotangent is the batch's sum."""
    total = lambda tf: wnp.sum(wg.vmap(lambda p: odeint(
        lotka_volterra, Y0, wnp.stack([0.0, tf]), args=(p,), **TIGHT)[-1])(PS))
    assert_close(wg.grad(total)(2.5), fd_jacobian(total, np.array(2.5), 1e-5),
                 rtol=1e-6, atol=1e-8)


# --- what SciPy is handed ------------------------------------------------------------------
def test_lsoda_is_told_the_blocks_are_banded(monkeypatch):
    calls = counting(monkeypatch, "odeint")
    wg.vmap(lambda p: solve_lv(p, rtol=1e-6, atol=1e-8))(PS)
    assert calls[0]["ml"] == calls[0]["mu"] == 1            # n - 1 for 2 states
    assert calls[0]["rtol"] == 1e-6                          # LSODA: the largest error


def test_rk_tolerances_are_divided_by_root_batch(monkeypatch):
    calls = counting(monkeypatch, "solve_ivp")
    atol = np.array([1e-6, 1e-7])
    wg.vmap(lambda p: solve_ivp(lv_ivp, (0.0, 4.0), Y0, t_eval=T, args=(p,), rtol=1e-5,
                                atol=atol).y)(PS)
    assert calls[0]["rtol"] == pytest.approx(1e-5 / 2)
    assert_close(calls[0]["atol"], np.tile(atol, 4) / 2, rtol=1e-15, atol=0)


@pytest.mark.parametrize("method", ["Radau", "BDF"])
def test_implicit_methods_get_a_sparse_block_jacobian(method, monkeypatch):
    from scipy import sparse
    from scipy.linalg import block_diag
    calls = counting(monkeypatch, "solve_ivp")
    wg.vmap(lambda p, y0: solve_ivp(lv_ivp, (0.0, 4.0), y0, t_eval=T, args=(p,),
                                    method=method).y)(PS, Y0S)
    jac = calls[0]["jac"](1.0, Y0S.ravel())
    assert sparse.issparse(jac) and jac.shape == (8, 8)
    blocks = [wg.jacfwd(lambda y: lv_ivp(1.0, y, p))(y0) for p, y0 in zip(PS, Y0S)]
    assert_close(jac.toarray(), block_diag(*blocks), rtol=1e-14, atol=0)


def test_finite_differences_use_the_block_pattern(monkeypatch):
    """Where wengert's ∂f/∂y is of no use (here infinite, at the cube root's zero),
    Radau's finite differences know the blocks: n calls per Jacobian, not n × batch."""
    fun = lambda t, y, k: -k * wnp.cbrt(y)
    calls = counting(monkeypatch, "solve_ivp")
    ks = np.array([0.5, 1.0, 1.2])
    got = wg.vmap(lambda k: solve_ivp(fun, (0.0, 1.0), [0.0, 1.0], t_eval=[1.0], args=(k,),
                                      method="Radau").y)(ks)
    assert "jac" not in calls[0] and calls[0]["jac_sparsity"].shape == (6, 6)
    assert_close(got[:, 1, 0], (1.0 - 2.0 * ks / 3.0) ** 1.5, rtol=1e-3, atol=0)


# --- one solve per example -----------------------------------------------------------------
def test_falls_back_where_fun_branches_on_a_value(monkeypatch):
    def kinked(y, t, k):
        if t < 1.0:                     # (Python control flow on the time: no tracing)
            return -k * y
        return -2.0 * k * y
    one = lambda k: odeint(kinked, [1.0], [0.0, 0.5], args=(k,), **TIGHT)[-1, 0]
    ks = np.array([0.5, 1.0, 1.5])
    calls = counting(monkeypatch, "odeint")
    assert_close(wg.vmap(one)(ks), np.exp(-0.5 * ks), rtol=1e-8, atol=0)
    assert len(calls) == 3


def test_falls_back_for_times_per_example_and_a_users_jacobian(monkeypatch):
    decay = lambda t, y, k: -k * y
    calls = counting(monkeypatch, "solve_ivp")
    tfs = np.array([0.5, 1.0])
    got = wg.vmap(lambda tf: solve_ivp(decay, (0.0, tf), [1.0], t_eval=wnp.stack([tf]),
                                       args=(0.7,), **TIGHT).y[0, 0])(tfs)
    assert_close(got, np.exp(-0.7 * tfs), rtol=1e-8, atol=0)
    assert len(calls) == 2
    jac = lambda t, y, k: [[-k]]
    got = wg.vmap(lambda k: solve_ivp(decay, (0.0, 1.0), [1.0], t_eval=[1.0], args=(k,),
                                      method="Radau", jac=jac, **TIGHT).y[0, 0])(tfs)
    assert_close(got, np.exp(-tfs), rtol=1e-8, atol=0)
    assert len(calls) == 4
