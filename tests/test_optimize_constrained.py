"""wengert.scipy.optimize with constraints and bounds: derivatives of constrained
minimisers (KKT conditions) against closed forms and central differences, to second
order; active sets that change under compile and vmap; the exact constraint Jacobians
given to SciPy; warnings where the derivative cannot be trusted."""
import warnings

import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from fd import assert_close, check_grads, fd_derivative, fd_jacobian

so = pytest.importorskip("scipy.optimize")
from wengert.scipy import optimize as opt  # noqa: E402

RNG = np.random.default_rng(11)


# ---- an equality-constrained quadratic: the KKT matrix in closed form ------------------
Q = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
A_EQ = np.array([[1.0, 1.0, 1.0], [1.0, -1.0, 2.0]])


def qp(b, c, method="SLSQP", linear=False):
    """min ½xᵀQx − bᵀx  s.t.  A x = c."""
    if linear:
        constraints = so.LinearConstraint(A_EQ, c, c)
    else:
        constraints = {"type": "eq", "fun": lambda x, c: A_EQ @ x - c, "args": (c,)}
    options = {"ftol": 1e-12} if method == "SLSQP" else {"gtol": 1e-12, "xtol": 1e-14}
    return opt.minimize(lambda x, b: 0.5 * x @ Q @ x - b @ x, np.zeros(3), args=(b,),
                        method=method, constraints=constraints, options=options).x


def kkt_inverse():
    k = np.block([[Q, A_EQ.T], [A_EQ, np.zeros((2, 2))]])
    return np.linalg.inv(k)


@pytest.mark.parametrize("method", ["SLSQP", "trust-constr"])
def test_equality_constrained_quadratic_closed_form(method):
    b, c = np.array([1.0, -2.0, 0.5]), np.array([1.0, 0.3])
    # [Q Aᵀ; A 0] [x; μ] = [b; c], so dx/db and dx/dc are blocks of its inverse
    k = kkt_inverse()
    x = qp(b, c, method)
    assert_close(x, (k @ np.concatenate([b, c]))[:3], atol=1e-8)
    jb, jc = wg.jacfwd(qp, argnums=(0, 1))(b, c, method)
    assert_close(jb, k[:3, :3], rtol=1e-6, atol=1e-8)
    assert_close(jc, k[:3, 3:], rtol=1e-6, atol=1e-8)
    assert_close(wg.jacrev(qp)(b, c, method), jb, rtol=1e-9, atol=1e-11)


def test_linear_constraint_object():
    b, c = np.array([1.0, -2.0, 0.5]), np.array([1.0, 0.3])
    assert_close(wg.jacfwd(lambda b: qp(b, c, linear=True))(b), kkt_inverse()[:3, :3],
                 rtol=1e-6, atol=1e-8)


# ---- an inequality: projection onto a ball ----------------------------------------------
def project(y, r, method="SLSQP", quartic=0.0):
    """argmin |x − y|² (+ quartic Σx⁴)  s.t.  |x|² ≤ r²."""
    # (trust-constr stops on gtol with its barrier parameter at ~1e-5, that far inside
    # the boundary, unless it starts smaller)
    options = {"SLSQP": {"ftol": 1e-10}, "trust-constr": {"gtol": 1e-10, "xtol": 1e-12,
                                                         "initial_barrier_parameter": 1e-4},
               "COBYLA": {"tol": 1e-10, "maxiter": 5000}, "COBYQA": {}}[method]
    return opt.minimize(lambda x, y: wnp.sum((x - y) ** 2) + quartic * wnp.sum(x ** 4),
                        np.full(3, 0.1), args=(y,), method=method, options=options,
                        constraints=[{"type": "ineq", "fun": lambda x, r: r ** 2 - x @ x,
                                      "args": (r,)}])


Y = np.array([1.0, 2.0, -0.5])


@pytest.mark.parametrize("method,tol", [("SLSQP", 1e-7), ("trust-constr", 1e-6),
                                        ("COBYLA", 1e-5)])
def test_projection_onto_a_ball_closed_form(method, tol):
    r = 0.7
    n = np.linalg.norm(Y)
    f = lambda y, r: project(y, r, method).x        # noqa: E731
    assert_close(f(Y, r), r * Y / n, atol=tol)
    jy, jr = wg.jacfwd(f, argnums=(0, 1))(Y, r)
    assert_close(jy, r / n * (np.eye(3) - np.outer(Y, Y) / n ** 2), atol=tol)   # the sphere
    assert_close(jr, Y / n, atol=tol)
    inside = 0.1 * Y                                 # the constraint does not hold: x = y
    assert_close(wg.jacfwd(f)(inside, r), np.eye(3), atol=tol)
    assert_close(wg.jacfwd(f, argnums=1)(inside, r), np.zeros(3), atol=tol)


def test_optimal_value_by_the_envelope_theorem():
    # f* = (|y| − r)², so df*/dr = −2(|y| − r): the multiplier's (a shadow price)
    r = 0.7
    g = wg.grad(lambda r: project(Y, r).fun)(r)
    assert_close(g, -2 * (np.linalg.norm(Y) - r), rtol=1e-7)


def test_constrained_minimiser_second_order():
    check_grads(lambda y: project(y, 0.7, quartic=0.1).x, Y, order=2, eps=1e-4, rtol=1e-4,
                atol=1e-6)
    check_grads(lambda r: project(Y, r, quartic=0.1).x, 0.7, order=2, eps=1e-4, rtol=1e-4,
                atol=1e-6)


def test_taylor_coefficients_of_a_constrained_minimiser():
    f = lambda y: project(y, 0.7, quartic=0.1).x              # noqa: E731
    v = np.array([0.3, -1.0, 0.5])
    coefs = wg.taylor(f, Y, v, order=2)
    d1 = lambda y: wg.jvp(f, (y,), (v,))[1]                     # noqa: E731
    assert_close(coefs[1], d1(Y), rtol=1e-9, atol=1e-12)
    assert_close(2 * coefs[2], wg.jvp(d1, (Y,), (v,))[1], rtol=1e-8, atol=1e-11)


# ---- general: nonlinear objective and constraints, parameters in both ------------------
def general(theta):
    """min (x0 − θ0)² + 2(x1 − 1)² + x2⁴ + θ1 x0 x2  s.t.  x0 + x1² + x2 = θ2,
    x0 x1 ≥ θ3, x2 ≥ −1 (which does not hold), bounds x1 ≤ θ-free 0.9 (which does)."""
    def objective(x, t):
        return (x[0] - t[0]) ** 2 + 2 * (x[1] - 1) ** 2 + x[2] ** 4 + t[1] * x[0] * x[2]
    constraints = [{"type": "eq", "fun": lambda x, t: x[0] + x[1] ** 2 + x[2] - t[2],
                    "args": (theta,)},
                   {"type": "ineq", "fun": lambda x, t: x[0] * x[1] - t[3], "args": (theta,)},
                   {"type": "ineq", "fun": lambda x: x[2] + 1.0}]
    return opt.minimize(objective, np.array([1.0, 0.5, 0.5]), args=(theta,), method="SLSQP",
                        constraints=constraints, bounds=[(None, None), (None, 0.9),
                                                         (None, None)],
                        options={"ftol": 1e-11, "maxiter": 500}).x


THETA = np.array([1.5, 0.3, 2.0, 1.7])


def test_general_problem_against_central_differences():
    x = general(THETA)
    assert abs(x[1] - 0.9) < 1e-9 and abs(x[0] * x[1] - THETA[3]) < 1e-8   # both hold
    for theta in (THETA, THETA + 0.05 * RNG.normal(size=4)):
        assert_close(wg.jacfwd(general)(theta), fd_jacobian(general, theta, 1e-4), rtol=1e-5,
                     atol=1e-6)


def test_general_problem_second_order():
    check_grads(general, THETA, order=2, eps=1e-3, rtol=1e-3, atol=1e-5)


# ---- bounds -----------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["L-BFGS-B", "TNC", "SLSQP", "trust-constr"])
def test_bounds_that_hold_clip_the_derivative(method):
    # argmin |x − t|² on x ≤ 1, x0 ≥ −2: x = clip(t), dx/dt = 1 where no bound holds
    options = {"L-BFGS-B": {"gtol": 1e-12}, "TNC": {"gtol": 1e-12}, "SLSQP": {"ftol": 1e-12},
               "trust-constr": {"gtol": 1e-12, "xtol": 1e-14}}[method]
    f = lambda t: opt.minimize(lambda x, t: wnp.sum((x - t) ** 2) + 0.1 * wnp.sum(x ** 4),  # noqa
                               np.zeros(3), args=(t,), method=method, options=options,
                               bounds=so.Bounds([-2.0, -np.inf, -np.inf], [1.0, 1.0, 1.0])).x
    t = np.array([-5.0, 2.0, 0.3])
    x = f(t)
    assert_close(x[:2], [-2.0, 1.0], atol=1e-5)
    d = wg.jacfwd(f)(t)
    free = 1 / (1 + 0.6 * x[2] ** 2)         # from 2(x − t) + 0.4x³ = 0
    assert_close(d, np.diag([0.0, 0.0, free]), atol=1e-5)


def test_an_equal_pair_of_bounds_fixes_an_element():
    loss = lambda x, th: wnp.sum((x - th) ** 2) + th[0] * x[0] * x[1] * x[2]    # noqa: E731
    th = np.array([0.4, -0.3, 0.8])
    fixed = lambda th: opt.minimize(loss, np.zeros(3), args=(th,),           # noqa: E731
                                    bounds=[(None, None), (None, None), (0.2, 0.2)],
                                    options={"gtol": 1e-12, "ftol": 1e-15}).x
    # the same as minimising over x0, x1 with x2 = 0.2, an unconstrained problem
    reduced = lambda th: opt.minimize(                                        # noqa: E731
        lambda y, th: loss(wnp.concatenate([y, wnp.array([0.2])]), th), np.zeros(2),
        args=(th,), tol=1e-12).x
    d = wg.jacfwd(fixed)(th)
    assert_close(d[2], np.zeros(3), atol=1e-12)
    assert_close(d[:2], wg.jacfwd(reduced)(th), rtol=1e-6, atol=1e-8)


def test_bounds_broadcast_to_x0s_shape_plain_and_traced():
    # a Bounds side broadcasts to x0's shape (SciPy's take one dimension: a 2-D side was
    # refused), and a traced scalar side is every element's (its derivative reached x[0]
    # alone, without a word)
    target = np.array([[0.0, 1.0], [2.0, 3.0]])
    fit = lambda lo: opt.minimize(lambda x: wnp.sum((x - target) ** 2),     # noqa: E731
                                  np.zeros((2, 2)), bounds=so.Bounds(lo, np.inf)).x
    lo = np.array([[1.5, -1.0], [-1.0, 3.5]])
    assert_close(fit(lo), np.maximum(target, lo), atol=1e-6)
    assert_close(wg.jacfwd(fit)(lo), fd_jacobian(fit, lo, 1e-4).reshape(2, 2, 2, 2), atol=1e-5)
    assert_close(wg.jacfwd(fit)(2.5), (target < 2.5).astype(float), atol=1e-8)
    row = np.array([2.5, 0.5])                                    # one bound per column
    assert_close(wg.jacfwd(fit)(row), (target < row)[..., None] * np.eye(2), atol=1e-8)
    with pytest.raises(ValueError, match=r"lb of shape \(3,\) .* x0's shape \(2, 2\)"):
        fit(np.zeros(3))
    # Bounds(v, v) with one traced v fixes the elements (as the pair (v, v) does)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = wg.jacfwd(lambda v: opt.minimize(lambda x: wnp.sum((x - 1.0) ** 2), np.zeros(2),
                                             bounds=so.Bounds(v, v)).x)(np.array([0.0, 2.0]))
    assert_close(d, np.eye(2), atol=1e-12)


@pytest.mark.parametrize("method", [None, "SLSQP"])
def test_one_pair_of_bounds_is_every_elements_as_scipy_broadcasts_it(method):
    # (the traced solve bounded x[0] alone: x[1] sat on the bound with derivative 0)
    target = np.array([2.0, 0.5, 3.0])
    fit = lambda top: opt.minimize(lambda x: wnp.sum((x - target) ** 2),     # noqa: E731
                                   np.zeros(3), bounds=[(0.0, top)], method=method).x
    theirs = so.minimize(lambda x: np.sum((x - target) ** 2), np.zeros(3),
                         bounds=[(0.0, 1.0)], method=method).x
    assert_close(fit(1.0), theirs, atol=1e-6)
    assert_close(wg.jacfwd(fit)(1.0), fd_jacobian(fit, 1.0, 1e-4)[..., 0], atol=1e-6)
    assert_close(wg.jacfwd(fit)(1.0), [1.0, 0.0, 1.0], atol=1e-8)
    with pytest.raises(ValueError, match=r"2 \(min, max\) bounds for x0 of shape \(3,\)"):
        opt.minimize(lambda x: wnp.sum(x ** 2), np.zeros(3), bounds=[(0, 1)] * 2)


DATA_T = np.linspace(0.0, 2.0, 12)
DATA = 3.0 * np.exp(-1.1 * DATA_T) + 0.05 * np.cos(5 * DATA_T)


def decay(p, y):
    return p[0] * wnp.exp(-p[1] * DATA_T) - y


def test_least_squares_with_a_bound_that_holds():
    fit = lambda y: opt.least_squares(decay, [2.0, 1.0], args=(y,),   # noqa: E731
                                      bounds=([0.0, 0.0], [2.5, 10.0])).x
    assert abs(fit(DATA)[0] - 2.5) < 1e-9
    # p0 stays at 2.5; p1 moves as the fit of p1 alone with p0 = 2.5
    alone = lambda y: opt.least_squares(                               # noqa: E731
        lambda q, y: decay(wnp.concatenate([wnp.array([2.5]), q]), y), [1.0], args=(y,)).x
    d = wg.jacfwd(fit)(DATA)
    assert_close(d[0], np.zeros(DATA.size), atol=1e-10)
    assert_close(d[1], wg.jacfwd(alone)(DATA)[0], rtol=1e-6, atol=1e-9)


def test_curve_fit_with_a_bound_that_holds():
    model = lambda t, a, k: a * wnp.exp(-k * t)                   # noqa: E731
    fit = lambda y: opt.curve_fit(model, DATA_T, y, p0=[2.0, 0.5],  # noqa: E731
                                  bounds=([0.0, 0.0], [10.0, 0.9]))[0]
    assert abs(fit(DATA)[1] - 0.9) < 1e-9
    alone = lambda y: opt.curve_fit(lambda t, a: model(t, a, 0.9), DATA_T, y,  # noqa: E731
                                    p0=[2.0])[0]
    d = wg.jacfwd(fit)(DATA)
    assert_close(d[1], np.zeros(DATA.size), atol=1e-10)
    assert_close(d[0], wg.jacfwd(alone)(DATA)[0], rtol=1e-6, atol=1e-9)


def test_least_squares_and_curve_fit_bounds_may_be_traced():
    # a bound that holds moves its parameter one for one, and the others as the fit with
    # that parameter fixed there; checked against central differences of the solve
    fit = lambda hi: opt.least_squares(decay, [2.0, 1.0], args=(DATA,),    # noqa: E731
                                       bounds=([0.0, 0.0], [hi, 10.0]), xtol=1e-14,
                                       ftol=1e-14, gtol=1e-14).x
    d = wg.jacfwd(fit)(2.5)
    assert_close(d, fd_derivative(fit, 2.5, 1e-5), rtol=1e-5, atol=1e-7)
    assert_close(d[0], 1.0, atol=1e-9)
    # a traced scalar side is every parameter's, and under vmap each solve gets its own
    t = np.array([0.0, 1.0, 2.0])
    clip = lambda lo: opt.least_squares(lambda x: x - t, np.full((3,), 5.0),  # noqa: E731
                                        bounds=(lo, np.inf)).x
    assert_close(wg.vmap(wg.jacfwd(clip))(np.array([0.5, 1.5])),
                 [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]], atol=1e-6)
    model = lambda x, a, k: a * wnp.exp(-k * x)                   # noqa: E731
    curve = lambda hi: opt.curve_fit(model, DATA_T, DATA, p0=[2.0, 0.5],  # noqa: E731
                                     bounds=([0.0, 0.0], [10.0, hi]))[0]
    d = wg.jacfwd(curve)(0.9)
    assert_close(d, fd_derivative(curve, 0.9, 1e-5), rtol=1e-4, atol=1e-6)
    assert_close(d[1], 1.0, atol=1e-9)


# ---- transformations: the active set is found at run time ------------------------------
def test_compiled_derivative_follows_a_change_of_active_set():
    f = lambda y: project(y, 0.7).x                 # noqa: E731
    compiled = wg.compile(wg.jacfwd(f), Y)          # traced where the constraint holds
    assert_close(compiled(0.1 * Y), np.eye(3), atol=1e-7)     # where it does not
    assert_close(compiled(2 * Y), wg.jacfwd(f)(2 * Y), rtol=1e-9, atol=1e-12)


def test_vmap_with_a_different_active_set_per_example():
    ys = np.stack([Y, 0.1 * Y, -2 * Y])
    batched = wg.vmap(wg.jacfwd(lambda y: project(y, 0.7).x))(ys)
    for y, d in zip(ys, batched):
        assert_close(d, wg.jacfwd(lambda y: project(y, 0.7).x)(y), rtol=1e-9, atol=1e-12)
    assert_close(batched[1], np.eye(3), atol=1e-7)


def test_x_of_any_shape_reaches_the_constraints_in_that_shape():
    target = np.array([[1.0, 2.0], [0.5, -1.0]])
    shapes = []

    def total(x, s):
        shapes.append(np.shape(x))
        return s - wnp.sum(x)                       # Σx ≤ s
    f = lambda s: opt.minimize(lambda x: wnp.sum((x - target) ** 2), np.zeros((2, 2)),  # noqa
                               constraints={"type": "ineq", "fun": total, "args": (s,)},
                               options={"ftol": 1e-12}).x
    x = f(1.0)
    assert x.shape == (2, 2) and set(shapes) == {(2, 2)}
    assert_close(x, target - (target.sum() - 1.0) / 4, atol=1e-8)    # the plane Σx = 1
    assert_close(wg.jacfwd(f)(1.0), np.full((2, 2), 0.25), atol=1e-8)


# ---- the solver gets exact constraint Jacobians -----------------------------------------
def test_slsqp_gets_the_exact_jacobian_of_a_constraint():
    circle = lambda x: 1.0 - x[0] ** 2 - 2 * x[1] ** 2            # noqa: E731
    exact = lambda x: np.array([[-2 * x[0], -4 * x[1]]])           # noqa: E731
    f = lambda x: (x[0] - 2) ** 2 + (x[1] - 1) ** 2                # noqa: E731
    ours = opt.minimize(f, [0.1, 0.1], method="SLSQP",
                        constraints=[{"type": "ineq", "fun": circle}], options={"ftol": 1e-12})
    theirs = so.minimize(f, [0.1, 0.1], method="SLSQP",
                         jac=lambda x: np.array([2 * (x[0] - 2), 2 * (x[1] - 1)]),
                         constraints=[{"type": "ineq", "fun": circle, "jac": exact}],
                         options={"ftol": 1e-12})
    assert ours.nit == theirs.nit
    assert_close(ours.x, theirs.x, rtol=1e-12, atol=1e-13)


def test_trust_constr_gets_exact_constraint_hessians():
    # SciPy's default for a dict constraint is a quasi-Newton Hessian, which warns on a
    # linear one ("delta_grad == 0.0"); the exact one is zero, and is used
    b, c = np.array([1.0, -2.0, 0.5]), np.array([1.0, 0.3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = qp(b, c, "trust-constr")
    assert_close(x, (kkt_inverse() @ np.concatenate([b, c]))[:3], atol=1e-8)
    curved = {"type": "ineq", "fun": lambda x: 1.0 - x[0] ** 2 - 2 * x[1] ** 2}
    found = opt.minimize(lambda x: (x[0] - 2) ** 2 + (x[1] - 1) ** 2, [0.1, 0.1],
                         method="trust-constr", constraints=curved,
                         options={"initial_barrier_parameter": 1e-4, "gtol": 1e-10})
    reference = so.minimize(lambda x: (x[0] - 2) ** 2 + (x[1] - 1) ** 2, [0.1, 0.1],
                            method="SLSQP", constraints=curved, options={"ftol": 1e-12})
    assert_close(found.x, reference.x, atol=1e-8)


def test_a_nonlinear_constraints_own_hessian_gets_x_in_x0s_shape():
    # fun and jac get x in x0's shape; hess did not (it got SciPy's flat x, and its
    # natural x.shape * 2 result was refused)
    seen = []

    def disc(x):
        return wnp.array([1.0 - x[0, 0] ** 2 - 2 * x[1, 1] ** 2 - x[0, 1] ** 2 - x[1, 0] ** 2])

    def hess(x, v):
        seen.append(np.shape(x))
        return wg.hessian(lambda x: v @ disc(x))(x)
    target = np.array([[2.0, 1.0], [0.5, -1.0]])
    f = lambda x: wnp.sum((x - target) ** 2)                      # noqa: E731
    c = so.NonlinearConstraint(disc, 0.0, np.inf, jac=wg.jacfwd(disc), hess=hess)
    found = opt.minimize(f, np.full((2, 2), 0.1), method="trust-constr", constraints=c,
                         options={"initial_barrier_parameter": 1e-4, "gtol": 1e-10})
    flat = lambda x: disc(np.reshape(x, (2, 2)))                   # noqa: E731
    reference = so.minimize(lambda x: f(x.reshape(2, 2)), np.full(4, 0.1), method="SLSQP",
                            constraints={"type": "ineq", "fun": flat},
                            options={"ftol": 1e-12})
    assert seen and set(seen) == {(2, 2)}
    assert found.x.shape == (2, 2)
    assert_close(found.x.ravel(), reference.x, atol=1e-7)


def test_constraint_jacobian_given_is_used():
    calls = []

    def jac(x):
        calls.append(1)
        return np.array([[1.0, 1.0]])
    found = opt.minimize(lambda x: wnp.sum(x ** 2), [1.0, 2.0], method="SLSQP",
                         constraints={"type": "eq", "fun": lambda x: x[0] + x[1] - 1, "jac": jac})
    assert calls and np.allclose(found.x, [0.5, 0.5])


# ---- what cannot be trusted is said -----------------------------------------------------
def test_a_constraint_that_holds_with_a_zero_multiplier_warns_and_gives_one_side():
    # y on the sphere: the constraint holds, but pulls with no force (weakly active).  The
    # projection onto the ball is y inside and 0.7 y/|y| outside: the derivative is
    # one-sided, and wengert gives that of the side where the constraint does not hold (its
    # KKT system was singular there, and raised, although the warning promised a side)
    y = 0.7 * Y / np.linalg.norm(Y)
    with pytest.warns(RuntimeWarning, match="constraint 0 .*weakly active.*does not hold"):
        d = wg.jacfwd(lambda y: project(y, 0.7).x)(y)
    assert_close(d, np.eye(3), atol=1e-6)
    inside = fd_jacobian(lambda y: project(y, 0.7).x, 0.999 * y, 1e-6)    # (that side)
    assert_close(d, inside, atol=1e-4)


def test_weakly_active_bounds_and_lp_rows_give_one_side():
    # x = clip(a, 0, 2) at a = (0, 2): each bound holds with a zero multiplier
    clip = lambda a: opt.minimize(lambda x, a: wnp.sum((x - a) ** 2), [1.0, 1.0],  # noqa
                                  args=(a,), bounds=[(0, None), (0, 2)]).x
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert_close(wg.jacfwd(clip)(np.array([0.0, 2.0])), np.eye(2), atol=1e-8)
    said = " ".join(str(w.message) for w in caught)
    assert "lower bound on x [0] holds" in said and "upper bound on x [1] holds" in said
    # max x + 2y s.t. x <= b0, y <= b1, x + y <= b2 at b = (1, 1, 2): three rows hold at
    # the vertex (1, 1), but the multipliers (0, 1, 1) leave row 0 weak.  Where it does
    # not hold (b0 > b2 - b1), x = b2 - b1 and y = b1.
    A = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    lp = lambda b: opt.linprog([-1.0, -2.0], A_ub=A, b_ub=b).x            # noqa: E731
    b = np.array([1.0, 1.0, 2.0])
    with pytest.warns(RuntimeWarning, match=r"A_ub row \[0\] holds.*weakly active"):
        d = wg.jacfwd(lp)(b)
    assert_close(d, [[0.0, -1.0, 1.0], [0.0, 1.0, 0.0]], atol=1e-10)
    assert_close(d, fd_jacobian(lp, b + [1e-3, 0.0, 0.0], 1e-6), atol=1e-6)   # (that side)


def stops_at_once(fun, x0, args=(), **ignored):         # a custom method, which lies
    return so.OptimizeResult(x=np.asarray(x0, dtype=float), fun=fun(x0, *args),
                             success=True, nit=0)


def test_a_constraint_of_no_values_is_none():
    # (a dict constraint may return an empty array, as SciPy's SLSQP takes it)
    fit = lambda a: opt.minimize(lambda x, a: wnp.sum((x - a) ** 2), np.zeros(2),  # noqa: E731
                                 args=(a,), constraints={"type": "ineq",
                                                         "fun": lambda x: x[:0]}).x
    a = np.array([1.0, -2.0])
    assert_close(fit(a), a, atol=1e-6)
    assert_close(wg.jacfwd(fit)(a), fd_jacobian(fit, a, 1e-4), atol=1e-6)


@pytest.mark.filterwarnings("ignore:.*no KKT point")
def test_a_violated_constraint_warns():
    with pytest.warns(RuntimeWarning, match="violates constraint 0"):
        wg.jacfwd(lambda y: opt.minimize(
            lambda x, y: wnp.sum((x - y) ** 2), np.ones(3), args=(y,), method=stops_at_once,
            constraints={"type": "ineq", "fun": lambda x: 0.5 - x @ x}).x)(Y)


def test_a_point_that_is_no_kkt_point_warns():
    with pytest.warns(RuntimeWarning, match="no KKT point"):
        wg.grad(lambda y: opt.minimize(
            lambda x, y: wnp.sum((x - y) ** 2), np.zeros(3), args=(y,), method=stops_at_once,
            constraints={"type": "ineq", "fun": lambda x: 1.0 - x[0]}).x[0])(Y)


def test_dependent_constraints_that_hold_warn():
    twice = [{"type": "ineq", "fun": lambda x: 1.0 - x[0]},     # one boundary, twice
             {"type": "ineq", "fun": lambda x: 2.0 - 2 * x[0]}]
    with pytest.warns(RuntimeWarning, match="linearly dependent"):
        wg.jacfwd(lambda y: opt.minimize(lambda x, y: wnp.sum((x - y) ** 2), np.zeros(2),
                                         args=(y,), constraints=twice,
                                         options={"ftol": 1e-12}).x)(np.array([3.0, 1.0]))


def test_malformed_constraints_are_refused():
    bad = lambda y, c: opt.minimize(lambda x, y: wnp.sum((x - y) ** 2), np.zeros(2),  # noqa
                                    args=(y,), constraints=c).x
    with pytest.raises(ValueError, match="constraint 0 must be a dict with 'type'"):
        wg.grad(lambda y: bad(y, [{"type": "less", "fun": lambda x: x[0]}])[0])(np.ones(2))
    with pytest.raises(TypeError, match="constraint 1 is a tuple"):
        wg.grad(lambda y: bad(y, [{"type": "eq", "fun": lambda x: x[0]}, (1, 2)])[0])(
            np.ones(2))


def test_a_method_that_ignores_constraints_gives_the_unconstrained_derivative():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")           # (SciPy: BFGS cannot handle constraints)
        d = wg.jacfwd(lambda y: opt.minimize(
            lambda x, y: wnp.sum((x - y) ** 2), np.zeros(3), args=(y,), method="BFGS",
            constraints={"type": "ineq", "fun": lambda x: 0.5 - x @ x}).x)(Y)
    assert_close(d, np.eye(3), atol=1e-7)
