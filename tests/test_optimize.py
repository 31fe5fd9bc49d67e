"""wengert.scipy.optimize: SciPy's solutions; the exact derivatives given to the solvers;
derivatives of solutions (implicit function theorem) against closed forms and central
differences of the solve, to second order; composition with jacfwd, vmap and compile;
clear errors."""
import inspect
import warnings

import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from fd import assert_close, check_grads, fd_jacobian

so = pytest.importorskip("scipy.optimize")
from wengert.scipy import optimize as opt  # noqa: E402
from wengert.scipy import _derivatives  # noqa: E402

RNG = np.random.default_rng(7)
A = RNG.normal(size=(5, 3))
B = RNG.normal(size=5)


# ---- objectives --------------------------------------------------------------------------
def smooth_loss(x, theta):
    """A strictly convex objective whose minimiser moves nonlinearly with theta (3,)."""
    r = A @ x - B * theta[0]
    return wnp.sum(r ** 2) + theta[1] * wnp.sum(x ** 4) + wnp.exp(theta[2]) * wnp.sum(x ** 2)


THETA = np.array([0.8, 0.3, -0.5])


def argmin(theta, method="BFGS", **kw):
    kw.setdefault("tol", 1e-9)        # (BFGS: |gradient| ~ 1e-10, and success)
    return opt.minimize(smooth_loss, np.zeros(3), args=(theta,), method=method, **kw).x


def polished_argmin(theta):
    """The minimiser exact to rounding (plain numbers, for central differences): a few
    Newton steps from BFGS's, whose gradient is only ~1e-10."""
    x = so.minimize(smooth_loss, np.zeros(3), args=(theta,), method="BFGS").x
    for _ in range(6):
        x = x - np.linalg.solve(wg.hessian(smooth_loss)(x, theta), wg.grad(smooth_loss)(x, theta))
    return x


# ---- plain values: SciPy's results -------------------------------------------------------
def test_finite_differences_asked_for_give_scipy_result_exactly():
    rosen = lambda x: (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2   # noqa: E731
    ours = opt.minimize(rosen, [-1.2, 1.0], jac="2-point")
    theirs = so.minimize(rosen, [-1.2, 1.0], jac="2-point")
    assert ours.nfev == theirs.nfev and np.array_equal(ours.x, theirs.x)


def test_exact_gradient_is_given_where_none_is():
    rosen = lambda x: (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2   # noqa: E731
    ours = opt.minimize(rosen, [-1.2, 1.0], method="BFGS", tol=1e-12)
    grad = lambda x: np.array([-2 * (1 - x[0]) - 400 * x[0] * (x[1] - x[0] ** 2),   # noqa
                               200 * (x[1] - x[0] ** 2)])
    theirs = so.minimize(rosen, [-1.2, 1.0], jac=grad, method="BFGS", tol=1e-12)
    assert ours.nit == theirs.nit
    assert_close(ours.x, theirs.x, rtol=1e-12, atol=1e-12)
    assert_close(ours.jac, grad(ours.x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("method", ["Newton-CG", "trust-ncg", "trust-krylov", "trust-exact",
                                    "dogleg", "trust-constr", "CG", "L-BFGS-B", "TNC",
                                    "SLSQP", "Nelder-Mead", "Powell"])
def test_every_method_solves_with_the_derivatives_it_reads(method):
    convex = lambda x: wnp.sum((x - 1.0) ** 2) + 0.1 * wnp.sum(x ** 4)   # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # SciPy warns of a derivative a method ignores
        found = opt.minimize(convex, np.zeros(4), method=method)
    # the minimiser of (x-1)² + 0.1x⁴ solves 2(x-1) + 0.4x³ = 0
    x = found.x
    assert_close(2 * (x - 1) + 0.4 * x ** 3, np.zeros(4), atol=1e-3 if method in
                 ("Nelder-Mead", "Powell", "TNC", "SLSQP") else 1e-5)


def test_user_hessian_and_callable_jacobian_are_used_as_given():
    calls = []
    f = lambda x: wnp.sum(x ** 2)                      # noqa: E731

    def jac(x):
        calls.append("jac")
        return 2 * x

    def hess(x):
        calls.append("hess")
        return 2 * np.eye(x.size)
    found = opt.minimize(f, np.ones(3), method="trust-exact", jac=jac, hess=hess)
    assert "jac" in calls and "hess" in calls
    assert_close(found.x, np.zeros(3), atol=1e-8)


def test_a_hessian_you_give_for_an_x0_of_any_shape_is_taken_in_x0s_shape():
    # (x of shape (2, 2) makes a natural Hessian (2, 2, 2, 2); SciPy refused it)
    target = np.arange(4.0).reshape(2, 2)
    f = lambda x, a: wnp.sum((x - a * target) ** 2) + wnp.sum(x ** 4)   # noqa: E731
    solve = lambda a: opt.minimize(f, np.zeros((2, 2)), args=(a,), method="trust-exact",  # noqa
                                   tol=1e-10, hess=lambda x, a: wg.hessian(f)(x, a)).x
    assert_close(solve(1.0), opt.minimize(f, np.zeros((2, 2)), args=(1.0,),
                                          method="trust-exact").x, atol=1e-7)
    assert_close(wg.jacfwd(solve)(1.0), fd_jacobian(solve, 1.0, 1e-5)[..., 0], atol=1e-6)


def test_x0_of_any_shape():
    target = np.arange(6.0).reshape(2, 3)
    found = opt.minimize(lambda x: wnp.sum((x - target) ** 2), np.zeros((2, 3)))
    assert found.x.shape == (2, 3)
    assert_close(found.x, target, atol=1e-6)
    t = wg.grad(lambda s: wnp.sum(opt.minimize(lambda x, s: wnp.sum((x - s * target) ** 2),
                                               np.zeros((2, 3)), args=(s,)).x))(1.0)
    assert_close(t, target.sum(), rtol=1e-6)


@pytest.mark.parametrize("who", ["minimize", "root", "least_squares", "leastsq", "fsolve"])
def test_a_number_x0_is_one_element_as_scipy_takes_it(who):
    # (SciPy code indexes x: fun gets x of shape (1,), and the solution has it)
    equation = lambda x, c: x[0] ** 3 - c                               # noqa: E731
    solve = {"minimize": lambda c: opt.minimize(lambda x, c: equation(x, c) ** 2, 1.0,
                                                args=(c,), tol=1e-14).x,
             "root": lambda c: opt.root(equation, 1.0, args=(c,)).x,
             "least_squares": lambda c: opt.least_squares(equation, 1.0, args=(c,)).x,
             "leastsq": lambda c: opt.leastsq(equation, 1.0, args=(c,))[0],
             "fsolve": lambda c: opt.fsolve(equation, 1.0, args=(c,))}[who]
    x = solve(2.0)
    assert np.shape(x) == (1,)
    assert_close(x, [2 ** (1 / 3)], rtol=1e-6)
    d = wg.jacfwd(solve)(2.0)
    assert np.shape(d) == (1,)
    assert_close(d, fd_jacobian(solve, 2.0, 1e-5)[..., 0], rtol=1e-5)


def test_a_number_x0_takes_bounds_and_p0_as_scipy_does():
    # (a `Bounds` holds its sides 1-d; curve_fit's p0 may be a number)
    found = opt.least_squares(lambda x: x ** 3 - 2, 0.5, bounds=(0.0, 1.0))
    assert_close(found.x, so.least_squares(lambda x: x ** 3 - 2, 0.5, bounds=(0.0, 1.0)).x)
    top = lambda u: opt.minimize(lambda x: (x[0] - 2) ** 2, 0.5,           # noqa: E731
                                 bounds=so.Bounds(0.0, u)).x[0]
    assert top(1.5) == pytest.approx(1.5) and wg.grad(top)(1.5) == pytest.approx(1.0)
    t = np.arange(1.0, 4.0)
    slope = lambda s: opt.curve_fit(lambda x, a: a * x, t, s * t ** 1.1, p0=1.0)[0][0]  # noqa
    assert wg.grad(slope)(2.0) == pytest.approx(fd_jacobian(slope, 2.0, 1e-6), rel=1e-6)


def test_callbacks_see_x_in_x0s_shape():
    # fun gets x in x0's shape, so the callback must too (SciPy hands it the flat x), in
    # each of SciPy's signatures: xk, intermediate_result (told apart by the name), and
    # trust-constr's (xk, state); root's (x, f) and least_squares' likewise
    target = np.arange(6.0).reshape(2, 3)
    f = lambda x: wnp.sum((x - target) ** 2)
    seen = []

    def result_callback(intermediate_result):
        seen.append(intermediate_result.x.shape)
    opt.minimize(f, np.zeros((2, 3)), callback=lambda xk: seen.append(xk.shape))
    opt.minimize(f, np.zeros((2, 3)), callback=result_callback)
    opt.minimize(f, np.zeros((2, 3)), method="trust-constr",
                 callback=lambda xk, state: seen.append(xk.shape))
    opt.root(lambda x: x - target, np.zeros((2, 3)), method="krylov",
             callback=lambda x, fx: seen.append(x.shape))
    opt.least_squares(lambda x: wnp.ravel(x - target), np.zeros((2, 3)),
                      callback=result_callback)
    # ... on a traced solve too
    wg.grad(lambda s: wnp.sum(opt.minimize(lambda x, s: wnp.sum((x - s * target) ** 2),
                                           np.zeros((2, 3)), args=(s,),
                                           callback=result_callback).x))(1.0)
    assert len(seen) > 6 and set(seen) == {(2, 3)}


def test_jac_true_with_traced_args_traces_the_derivative_fun_returns_too():
    # the solution's derivative needs fun's value traced; its derivative part comes along
    target = np.array([1.0, -2.0])
    good = lambda x, a: (wnp.sum((x - a * target) ** 2), 2 * (x - a * target))  # noqa: E731
    assert_close(wg.grad(lambda a: wnp.sum(opt.minimize(good, np.zeros(2), args=(a,),
                                                        jac=True).x))(1.5), target.sum())
    numpy_only = lambda x, a: (wnp.sum((x - a) ** 2), 2 * (np.asarray(x) - a))  # noqa: E731
    with pytest.raises(wg.ConcretizationError, match="^minimize: with jac=True .*leave jac"):
        wg.grad(lambda a: opt.minimize(numpy_only, np.zeros(2), args=(a,), jac=True).x[0])(1.5)
    cube = lambda x, a: (x ** 3 - a, np.diag(3 * np.asarray(x) ** 2))      # noqa: E731
    with pytest.raises(wg.ConcretizationError, match="^root: with jac=True"):
        wg.grad(lambda a: opt.root(cube, np.ones(2), args=(a,), jac=True).x[0])(2.0)


@pytest.mark.parametrize("who", ["minimize", "root", "fsolve", "fixed_point", "newton",
                                 "least_squares", "leastsq"])
def test_a_pytree_x0_is_refused_in_words(who):
    # (NumPy makes an object array of a dict, which SciPy reports as a float() TypeError)
    with pytest.raises(TypeError, match=f"^{who}: x0 must be .*ravel_pytree"):
        getattr(opt, who)(lambda p: p["a"] - 1.0, {"a": 0.0})
    with pytest.raises(TypeError, match=f"^{who}: x0 must be"):
        getattr(opt, who)(lambda x: x - 1.0, [0.0, [1.0, 2.0]])


# ---- minimize: derivatives of the minimiser ---------------------------------------------
@pytest.mark.parametrize("method", ["BFGS", "Newton-CG", "trust-exact", "L-BFGS-B"])
def test_minimiser_jacobian_against_central_differences(method):
    kw = dict(options={"gtol": 1e-12, "ftol": 1e-15}) if method == "L-BFGS-B" else {}
    f = lambda th: argmin(th, method, **kw)            # noqa: E731
    # (differences of minimisers exact to rounding: those of a method that stops at
    # |gradient| ~ 1e-10 would be off by ~1e-10 / h)
    reference = fd_jacobian(polished_argmin, THETA, 1e-4)
    assert_close(wg.jacfwd(f)(THETA), reference, rtol=1e-6, atol=1e-8)
    assert_close(wg.jacrev(f)(THETA), wg.jacfwd(f)(THETA), rtol=1e-10, atol=1e-12)


def test_minimiser_second_order():
    check_grads(lambda th: argmin(th), THETA, order=2, eps=1e-4, rtol=1e-4, atol=1e-6)


def test_quadratic_minimiser_closed_form():
    # min ½xᵀMx - θᵀx: x* = M⁻¹θ, dx*/dθ = M⁻¹
    m = A.T @ A + np.eye(3)
    f = lambda th: opt.minimize(lambda x, th: 0.5 * x @ m @ x - th @ x, np.zeros(3),   # noqa
                                args=(th,), tol=1e-12).x
    assert_close(f(THETA), np.linalg.solve(m, THETA), rtol=1e-7, atol=1e-8)
    assert_close(wg.jacrev(f)(THETA), np.linalg.inv(m), rtol=1e-10, atol=1e-12)


def test_ridge_closed_form_and_the_value_by_the_envelope_theorem():
    def fit(lam):
        return opt.minimize(lambda w, lam: wnp.sum((A @ w - B) ** 2) + lam * w @ w,
                            np.zeros(3), args=(lam,), tol=1e-12)
    m = A.T @ A + 0.7 * np.eye(3)
    w = np.linalg.solve(m, A.T @ B)
    assert_close(wg.jacfwd(lambda lam: fit(lam).x)(0.7), -np.linalg.solve(m, w), rtol=1e-7)
    # d/dλ min_w L(w, λ) = ∂L/∂λ at w* = |w*|²
    assert_close(wg.grad(lambda lam: fit(lam).fun)(0.7), w @ w, rtol=1e-7)


def test_pytree_args_with_held_constants():
    def loss(x, p):
        assert p["name"] == "quartic"
        return wnp.sum((x - p["centre"]) ** 2) + p["k"] * wnp.sum(x ** 4)

    def f(centre, k):
        return opt.minimize(loss, np.zeros(2), args=({"centre": centre, "k": k,
                                                      "name": "quartic"},), tol=1e-9).x
    c = np.array([0.5, -1.0])
    x = f(c, 0.2)
    # 2(x - c) + 4k x³ = 0: dx/dc = 2 / (2 + 12k x²), dx/dk = -4x³ / (2 + 12k x²)
    d = 2 + 12 * 0.2 * x ** 2
    jc, jk = wg.jacfwd(f, argnums=(0, 1))(c, 0.2)
    assert_close(jc, np.diag(2 / d), rtol=1e-6, atol=1e-9)
    assert_close(jk, -4 * x ** 3 / d, rtol=1e-6)


def test_bounds_that_do_not_hold_leave_the_derivative_unconstrained():
    # (bounds that hold: tests/test_optimize_constrained.py)
    f = lambda th, b: opt.minimize(smooth_loss, np.zeros(3), args=(th,), bounds=b,   # noqa
                                   options={"gtol": 1e-12, "ftol": 1e-15}).x
    loose = [(-10.0, 10.0)] * 3
    assert_close(wg.jacfwd(lambda th: f(th, loose))(THETA), wg.jacfwd(argmin)(THETA),
                 rtol=1e-5, atol=1e-7)


def test_vmap_solves_one_problem_per_example():
    thetas = THETA + 0.1 * RNG.normal(size=(4, 3))
    batched = wg.vmap(lambda th: argmin(th))(thetas)
    # (batched arithmetic may round apart from one example's, and the iterations then
    # stop at another point within the solver's tolerance: 1e-7 apart, not 1e-9)
    assert_close(batched, np.stack([argmin(th) for th in thetas]), rtol=1e-6, atol=1e-10)
    per_example = wg.vmap(wg.jacfwd(lambda th: argmin(th)))(thetas)
    assert_close(per_example[2], wg.jacfwd(argmin)(thetas[2]), rtol=1e-8, atol=1e-10)


def test_matrix_free_linear_solves_give_the_dense_derivative():
    n = 200
    m = RNG.normal(size=(n + 20, n)) / np.sqrt(n)
    y = RNG.normal(size=n + 20)

    def ridge(lam, linear_solve, **kw):
        return opt.minimize(lambda w, lam: wnp.sum((m @ w - y) ** 2) + lam * w @ w +
                            0.1 * wnp.sum(w ** 4), np.zeros(n), args=(lam,),
                            linear_solve=linear_solve, **kw).x
    dense = wg.jacfwd(lambda lam: ridge(lam, "dense"))(0.3)
    for how in ("cg", "gmres"):
        assert_close(wg.jacfwd(lambda lam: ridge(lam, how))(0.3), dense, rtol=1e-7, atol=1e-9)
    # with a bound that holds: the KKT matrix is indefinite, so gmres (cg would refuse)
    held = [(None, None)] * (n - 1) + [(0.0, 0.0)]
    dense = wg.jacfwd(lambda lam: ridge(lam, "dense", bounds=held, method="L-BFGS-B"))(0.3)
    gm = wg.jacfwd(lambda lam: ridge(lam, "gmres", bounds=held, method="L-BFGS-B"))(0.3)
    assert_close(gm, dense, rtol=1e-7, atol=1e-9)
    assert abs(gm[-1]) < 1e-8                    # (gmres: to its tol, 1e-10)
    # root, fixed_point and least_squares take it too
    big = lambda c, how: opt.root(quadratic_roots, [2.0, 0.5], args=(c,),   # noqa: E731
                                  linear_solve=how).x
    c = np.array([3.0, 1.0])
    assert_close(wg.jacfwd(lambda c: big(c, "gmres"))(c), wg.jacfwd(lambda c: big(c, "dense"))(c),
                 rtol=1e-8, atol=1e-10)
    fp = lambda a, how: opt.fixed_point(lambda x, a: wnp.cos(a * x), 0.5, args=(a,),  # noqa
                                        linear_solve=how)
    assert_close(wg.grad(lambda a: fp(a, "gmres"))(1.0), wg.grad(lambda a: fp(a, "dense"))(1.0),
                 rtol=1e-9)
    ls = lambda y, how: opt.least_squares(decay, [1.0, 1.0], args=(y,),       # noqa: E731
                                          linear_solve=how).x
    assert_close(wg.jacfwd(lambda y: ls(y, "cg"))(DATA), wg.jacfwd(lambda y: ls(y, "dense"))(DATA),
                 rtol=1e-7, atol=1e-9)
    with pytest.raises(ValueError, match="linear_solve must be 'dense', 'cg', 'gmres'"):
        opt.minimize(lambda x: wnp.sum(x ** 2), np.ones(2), linear_solve="lu")


def test_compile_of_a_gradient_through_minimize():
    def loss(th):
        return wnp.sum(argmin(th) ** 2)
    compiled = wg.compile(wg.grad(loss), THETA)
    assert_close(compiled(THETA + 0.1), wg.grad(loss)(THETA + 0.1), rtol=1e-9, atol=1e-12)


# ---- root, fixed_point ------------------------------------------------------------------
def quadratic_roots(x, c):
    """x0 + x1 = c0, x0 x1 = c1: the roots of t² - c0 t + c1."""
    return [x[0] + x[1] - c[0], x[0] * x[1] - c[1]]


@pytest.mark.parametrize("method", ["hybr", "lm", "broyden1", "krylov"])
def test_root_closed_form(method):
    c = np.array([3.0, 1.0])

    def big(c):
        return opt.root(quadratic_roots, [2.0, 0.5], args=(c,), method=method,
                        tol=1e-13).x[0]
    x = big(c)
    assert_close(x, (3 + np.sqrt(5)) / 2, rtol=1e-9)
    # t² - c0 t + c1 = 0 at t = x: dx/dc0 = x / (2x - c0), dx/dc1 = -1 / (2x - c0)
    assert_close(wg.grad(big)(c), [x / (2 * x - 3), -1 / (2 * x - 3)], rtol=1e-8)


def test_root_second_order_and_fun_traced():
    def f(x, p):
        return wnp.tanh(x) + p[0] * x - p[1] * wnp.cos(x[::-1])
    sol = lambda p: opt.root(f, np.zeros(2), args=(p,), tol=1e-12).x    # noqa: E731
    p = np.array([1.5, 0.7])
    check_grads(sol, p, order=2, eps=1e-4, rtol=1e-5, atol=1e-7)
    residual = wg.jacfwd(lambda p: opt.root(f, np.zeros(2), args=(p,), tol=1e-12).fun)(p)
    assert_close(residual, np.zeros((2, 2)), atol=1e-8)   # F stays 0 along the solution


def test_root_jacobian_given_to_hybr_is_exact():
    seen = []

    def f(x):
        seen.append(type(x))
        return wnp.array([x[0] ** 3 + x[1] - 1.0, x[1] ** 3 - x[0] + 1.0])
    found = opt.root(f, [0.5, 0.5])
    assert found.success and found.nfev < so.root(f, [0.5, 0.5]).nfev
    assert_close(f(found.x), np.zeros(2), atol=1e-10)


def test_fixed_point_closed_form_and_second_order():
    # x = cos(a x): dx/da = -x sin(ax) / (1 + a sin(ax))
    solve = lambda a: opt.fixed_point(lambda x, a: wnp.cos(a * x), 0.5, args=(a,),   # noqa
                                      xtol=1e-14)
    x = float(solve(1.0))
    assert_close(wg.grad(solve)(1.0), -x * np.sin(x) / (1 + np.sin(x)), rtol=1e-8)
    check_grads(lambda a: solve(a), np.array(1.2), order=2, eps=1e-4, rtol=1e-5)


# ---- scalar roots -----------------------------------------------------------------------
def test_brentq_cube_root_to_second_order():
    cube_root = lambda c: opt.brentq(lambda x, c: x ** 3 - c, 0.0, 4.0, args=(c,))  # noqa
    assert_close(cube_root(2.0), 2.0 ** (1 / 3), rtol=1e-12)
    assert_close(wg.grad(cube_root)(2.0), 2.0 ** (-2 / 3) / 3, rtol=1e-10)
    assert_close(wg.grad(wg.grad(cube_root))(2.0), -2 / 9 * 2.0 ** (-5 / 3), rtol=1e-9)
    x, r = opt.brentq(lambda x: x ** 2 - 2.0, 0.0, 2.0, full_output=True)
    assert r.converged and x == so.brentq(lambda x: x ** 2 - 2.0, 0.0, 2.0)


@pytest.mark.parametrize("kw", [dict(x0=1.0), dict(x0=1.0, method="halley"),
                                dict(bracket=[0.0, 3.0]), dict(x0=1.0, x1=1.5),
                                dict(bracket=[0.0, 3.0], method="bisect")])
def test_root_scalar_kepler_closed_form(kw):
    kepler = lambda E, M, e: E - e * wnp.sin(E) - M       # noqa: E731
    solve = lambda M, e: opt.root_scalar(kepler, args=(M, e), xtol=1e-14, **kw).root  # noqa
    E = solve(1.0, 0.3)
    assert_close(E - 0.3 * np.sin(E), 1.0, atol=1e-12)
    # dE/dM = 1 / (1 - e cos E), dE/de = sin E / (1 - e cos E)
    dM, de = wg.grad(solve, argnums=(0, 1))(1.0, 0.3)
    assert_close([dM, de], [1 / (1 - 0.3 * np.cos(E)), np.sin(E) / (1 - 0.3 * np.cos(E))],
                 rtol=1e-9)


def test_root_scalar_newton_gets_exact_derivatives():
    f = lambda x: x ** 3 - 2 * x - 5                      # noqa: E731
    ours = opt.root_scalar(f, x0=2.0)
    assert ours.method == "newton" and ours.converged
    assert ours.iterations == so.root_scalar(f, x0=2.0, fprime=lambda x: 3 * x ** 2 - 2).iterations
    halley = opt.root_scalar(f, x0=2.0, method="halley")
    assert halley.converged and abs(f(halley.root)) < 1e-12


def test_root_scalar_with_fprime_true():
    f = lambda x, c: (x ** 2 - c, 2 * x)                  # noqa: E731
    sqrt = lambda c: opt.root_scalar(f, args=(c,), x0=1.0, fprime=True).root   # noqa: E731
    assert_close(wg.grad(sqrt)(2.0), 0.5 / np.sqrt(2.0), rtol=1e-10)


# ---- least_squares ----------------------------------------------------------------------
T = np.linspace(0.0, 3.0, 12)
DATA = 2.0 * np.exp(-1.3 * T) + 0.05 * np.sin(5 * T)


def decay(p, y, t=T):
    return p[0] * wnp.exp(-p[1] * t) - y


# SciPy's robust losses ρ(z), as its documentation gives them
RHO = {"linear": lambda z: z, "soft_l1": lambda z: 2 * ((1 + z) ** 0.5 - 1),
       "huber": lambda z: wnp.where(z <= 1, z, 2 * wnp.sqrt(wnp.maximum(z, 1.0)) - 1),
       "cauchy": lambda z: wnp.log(1 + z), "arctan": lambda z: wnp.arctan(z)}


def polished_fit(y, loss, scale):
    """The robust fit exact to rounding (for central differences): Newton steps on the
    cost ½ C² Σ ρ((r/C)²) from SciPy's solution, which stops at relative changes ~1e-8."""
    def cost(p):
        r = decay(p, y)
        return 0.5 * scale ** 2 * wnp.sum(RHO[loss](r * r / scale ** 2))
    x = so.least_squares(decay, [1.0, 1.0], args=(y,), loss=loss, f_scale=scale).x
    start = x
    for _ in range(8):
        x = x - np.linalg.solve(wg.hessian(cost)(x), wg.grad(cost)(x))
    assert_close(x, start, rtol=1e-5)                  # (the same minimum as SciPy's)
    return x


@pytest.mark.parametrize("loss", ["linear", "soft_l1", "huber", "cauchy", "arctan"])
def test_least_squares_sensitivities_against_central_differences(loss):
    fit = lambda y: opt.least_squares(decay, [1.0, 1.0], args=(y,), loss=loss,   # noqa: E731
                                      f_scale=0.05, ftol=1e-15, xtol=1e-15, gtol=1e-15).x
    reference = fd_jacobian(lambda y: polished_fit(y, loss, 0.05), DATA, 1e-5)
    assert_close(wg.jacfwd(fit)(DATA), reference, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("loss", ["soft_l1", "huber", "cauchy"])
def test_least_squares_in_the_scale_of_a_robust_loss(loss):
    # (f_scale, where an outlier stops counting, is a hyperparameter one tunes; traced, it
    # was converted to a float and raised)
    y = DATA.copy()
    y[3] += 1.0
    fit = lambda s: opt.least_squares(decay, [1.0, 1.0], args=(y,), loss=loss,   # noqa: E731
                                      f_scale=s, ftol=1e-15, xtol=1e-15, gtol=1e-15).x
    reference = fd_jacobian(lambda s: polished_fit(y, loss, s), 0.1, 1e-5)[..., 0]
    assert_close(wg.jacfwd(fit)(0.1), reference, rtol=1e-6, atol=1e-8)
    cost = lambda s: opt.least_squares(decay, [1.0, 1.0], args=(y,), loss=loss,  # noqa: E731
                                       f_scale=s).cost
    assert wg.grad(cost)(0.1) == pytest.approx(fd_jacobian(cost, 0.1, 1e-5), rel=1e-6)


def test_least_squares_linear_model_closed_form_and_kwargs():
    # a linear model's fit is the pseudo-inverse: dx*/dy = A⁺
    resid = lambda x, y, scale=1.0: scale * (A @ x - y)   # noqa: E731
    fit = lambda y: opt.least_squares(resid, np.zeros(3), args=(y,),      # noqa: E731
                                      kwargs={"scale": 2.0}).x
    assert_close(fit(B), np.linalg.lstsq(A, B, rcond=None)[0], rtol=1e-8)
    assert_close(wg.jacrev(fit)(B), np.linalg.pinv(A), rtol=1e-9, atol=1e-12)
    cost = lambda y: opt.least_squares(resid, np.zeros(3), args=(y,)).cost   # noqa: E731
    r = A @ np.linalg.lstsq(A, B, rcond=None)[0] - B
    assert_close(wg.grad(cost)(B), -r, rtol=1e-7, atol=1e-10)        # envelope theorem


def test_least_squares_exact_jacobian_by_default():
    found = opt.least_squares(decay, [1.0, 1.0], args=(DATA,))
    j = np.stack([np.exp(-found.x[1] * T), -found.x[0] * T * np.exp(-found.x[1] * T)], 1)
    assert_close(found.jac, j, rtol=1e-12, atol=1e-14)
    theirs = so.least_squares(decay, [1.0, 1.0], args=(DATA,), jac="2-point")
    ours = opt.least_squares(decay, [1.0, 1.0], args=(DATA,), jac="2-point")
    assert np.array_equal(ours.x, theirs.x)
    if "workers" in inspect.signature(so.least_squares).parameters:      # (SciPy 1.16)
        calls = []
        spread = lambda f, xs: calls.append(1) or map(f, xs)            # noqa: E731
        ours = opt.least_squares(decay, [1.0, 1.0], args=(DATA,), jac="2-point",
                                 workers=spread)
        assert calls and np.array_equal(ours.x, theirs.x)


# ---- errors -----------------------------------------------------------------------------
def test_closure_over_a_traced_value_is_refused():
    with pytest.raises(ValueError, match="closes over.*pass that value as an argument"):
        wg.grad(lambda c: opt.minimize(lambda x: wnp.sum((x - c) ** 2), np.zeros(2)).x[0])(1.0)
    with pytest.raises(ValueError, match="closes over"):
        wg.grad(lambda c: opt.brentq(lambda x: x - c, -5.0, 5.0))(1.0)


def test_singular_jacobian_at_the_solution():
    # x² = c at c = 0: a double root, no derivative
    with pytest.raises(np.linalg.LinAlgError, match="singular at the solution"):
        wg.grad(lambda c: opt.root(lambda x, c: x * x - c, [0.0], args=(c,)).x[0])(0.0)


def test_solver_that_does_not_converge_warns():
    with pytest.warns(RuntimeWarning, match="did not converge"):
        wg.grad(lambda th: argmin(th, options={"maxiter": 2})[0])(THETA)


def test_undifferentiable_function_says_how_to_go_on():
    def opaque(x):
        return float(np.sum(np.asarray(x, dtype=float) ** 2))   # leaves wengert
    with pytest.raises(TypeError, match="could not differentiate opaque.*jac='2-point'"):
        opt.minimize(opaque, np.ones(2))
    assert_close(opt.minimize(opaque, np.ones(2), jac="2-point").x, np.zeros(2), atol=1e-6)


def test_an_objective_that_returns_a_vector_is_named_as_such():
    # (it was reported as a function wengert could not differentiate, with the advice to
    # give jac: the objective itself is wrong)
    with pytest.raises(ValueError, match=r"returned a value of shape \(2,\); the objective "
                                         "must return a number"):
        opt.minimize(lambda x: x ** 2, np.ones(2))
    with pytest.raises(ValueError, match="must return a number"):
        wg.grad(lambda a: opt.minimize(lambda x, a: x - a, np.ones(2), args=(a,),
                                       method="Nelder-Mead").x[0])(1.0)
    # (SciPy takes one value in an array, and so does this)
    assert_close(opt.minimize(lambda x: (x - 2) ** 2, np.ones(1)).x, [2.0], atol=1e-6)


def test_root_needs_a_square_system_for_derivatives_except_lm():
    with pytest.raises(TypeError, match="mismatch between the input and output shape"):
        wg.grad(lambda c: opt.root(lambda x, c: [x[0] - c, x[1], x[0] * x[1]], np.zeros(2),
                                   args=(c,), method="hybr").x[0])(1.0)


def test_root_lm_with_more_equations_than_unknowns_is_a_least_squares_point():
    # lm is MINPACK's least squares: with A x = b(a) overdetermined, x* = (AᵀA)⁻¹Aᵀ b(a)
    rng = np.random.default_rng(3)
    A = rng.normal(size=(5, 2))
    b = lambda a: wnp.array([1.0, a, a * a, 2.0, wnp.sin(a)])
    db = np.array([0.0, 1.0, 2 * 0.7, 0.0, np.cos(0.7)])
    fit = lambda a: opt.root(lambda x, a: A @ x - b(a), np.zeros(2), args=(a,), method="lm").x
    pinv = np.linalg.solve(A.T @ A, A.T)
    assert_close(fit(0.7), pinv @ b(0.7), rtol=1e-8)
    assert_close(wg.jacobian(fit)(0.7), pinv @ db, rtol=1e-8)
    # nonlinear, with a residual left at the point (so F's second derivatives count): as
    # least_squares' derivative, and central differences of the fit to the solver's
    # accuracy
    def F(x, a):
        return wnp.array([x[0] ** 2 - a, x[0] * x[1] - 1, x[1] - a * x[0],
                          wnp.exp(-x[0]) - 0.3 * a])
    fit = lambda a: opt.root(F, np.ones(2), args=(a,), method="lm", tol=1e-14).x
    want = wg.jacobian(lambda a: opt.least_squares(F, np.ones(2), args=(a,)).x)(1.3)
    assert_close(wg.jacobian(fit)(1.3), want, rtol=1e-8)
    assert_close(wg.jacobian(fit)(1.3), fd_jacobian(fit, 1.3, 1e-4)[:, 0], rtol=1e-3)


def test_complex_values_are_refused():
    with pytest.raises(TypeError, match="complex values are not supported"):
        wg.grad(lambda c: opt.minimize(lambda x, c: wnp.sum(x ** 2) * c, np.zeros(2),
                                       args=(c,)).x[0].real, holomorphic=False)(1.0 + 0j)


def test_unknown_loss_is_refused():
    with pytest.raises(ValueError, match="loss must be one of"):
        wg.jacfwd(lambda y: opt.least_squares(decay, [1.0, 1.0], args=(y,),
                                              loss="bogus").x)(DATA)


# ---- the derivatives handed to SciPy: compiled once hot ---------------------------------
def rosen(x):
    return wnp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def test_a_hot_derivative_is_compiled_and_reused_by_the_next_solve():
    _derivatives._KERNELS.clear()
    x0 = np.where(np.arange(6) % 2 == 0, -1.2, 1.0)
    first = opt.minimize(rosen, x0, method="BFGS")
    assert first.njev > _derivatives.HOT
    codes = [c for _, c in _derivatives._KERNELS.values() if c is not False]
    assert len(codes) == 1 and "def " in codes[0].source
    second = opt.minimize(rosen, x0, method="BFGS")       # from the cache, checked first
    # (the compiled gradient's rounding differs from the eager sweep's in the last bits)
    assert second.nit == first.nit and np.allclose(second.x, first.x, rtol=1e-10, atol=0)
    theirs = so.minimize(rosen, x0, method="BFGS", jac=wg.grad(rosen))
    assert_close(first.x, theirs.x, rtol=1e-12, atol=1e-12)


def test_compiled_derivative_notices_data_that_changed_between_solves():
    centre = np.array([1.0, 2.0, 3.0])

    def loss(x):                          # reads the global centre, not an argument
        return wnp.sum((x - centre) ** 4) + wnp.sum((x - centre) ** 2)
    for target in ([1.0, 2.0, 3.0], [-1.0, 0.5, 4.0]):
        centre[:] = target
        found = opt.minimize(loss, np.zeros(3), method="BFGS",
                             options={"gtol": 1e-10, "maxiter": 500})
        assert_close(found.x, target, atol=1e-6)


@pytest.mark.parametrize("method", ["BFGS", "CG"])     # (L-BFGS-B, SLSQP too; slower)
def test_compiled_derivative_notices_a_change_that_does_not_show_at_the_first_point(method):
    # a grid search over a global penalty: at x0 = 0 the gradient, -2 Xᵀy, is the same for
    # every lam, so a check of values there let the gradient compiled with lam = 10 solve
    # lam = 1, and report success with x off by 0.3
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 40)) @ np.diag(np.logspace(0, 1, 40))
    y = rng.normal(size=60)
    lam = [10.0]

    def ridge(w):
        return wnp.sum((X @ w - y) ** 2) + lam[0] * wnp.sum(w ** 2)
    for lam[0] in (10.0, 1.0, 10.0):
        found = opt.minimize(ridge, np.zeros(40), method=method, options={"maxiter": 5000})
        exact = np.linalg.solve(X.T @ X + lam[0] * np.eye(40), X.T @ y)
        assert_close(found.x, exact, rtol=1e-3, atol=1e-3)


def test_a_branch_on_a_value_keeps_the_derivative_eager():
    def kinked(x):                        # a Python branch: no compiled code for it
        s = wnp.sum(x ** 2)
        return s if float(wg.value(s)) < 1.0 else 2 * wnp.sqrt(s) - 1
    found = opt.minimize(kinked, np.full(4, 3.0), method="BFGS")
    assert_close(found.x, np.zeros(4), atol=1e-6)


def test_scipy_calls_the_users_function_at_every_point():
    calls = []

    def logged(x):
        if type(x) is np.ndarray:         # (not the traced calls that take its gradient)
            calls.append(1)
        return rosen(x)
    found = opt.minimize(logged, np.array([-1.2, 1.0, -1.2, 1.0]), method="BFGS")
    assert found.nfev > _derivatives.HOT and len(calls) == found.nfev + 1   # (+1: the first check)


# ---- curve_fit --------------------------------------------------------------------------
XS = np.linspace(0.0, 4.0, 25)
YS = 3.0 * np.exp(-0.7 * XS) + 0.05 * np.cos(9 * XS)
SIGMA = 0.05 + 0.02 * XS


def exp_model(x, a, k):
    return a * wnp.exp(-k * x)


def exp_jac(x, a, k):
    return np.stack([np.exp(-k * x), -a * x * np.exp(-k * x)], axis=1)


@pytest.mark.parametrize("sigma", [None, SIGMA, np.diag(SIGMA ** 2) + 1e-4])
@pytest.mark.parametrize("method", ["lm", "trf"])
def test_curve_fit_is_scipys_with_the_exact_jacobian(sigma, method):
    ours = opt.curve_fit(exp_model, XS, YS, p0=[1.0, 1.0], sigma=sigma, method=method)
    theirs = so.curve_fit(exp_model, XS, YS, p0=[1.0, 1.0], sigma=sigma, method=method,
                          jac=exp_jac)
    assert_close(ours[0], theirs[0], rtol=1e-10, atol=0)
    assert_close(ours[1], theirs[1], rtol=1e-8, atol=0)
    traced = opt.curve_fit(exp_model, XS, wg.numpy.asarray(YS) * 1.0, p0=[1.0, 1.0],
                           sigma=sigma, method=method)
    assert_close(traced[1], theirs[1], rtol=1e-8, atol=0)     # (SciPy's pcov, recomputed)


@pytest.mark.parametrize("sigma", [None, SIGMA, np.diag(SIGMA ** 2) + 1e-4])
def test_curve_fit_linear_model_closed_form(sigma):
    # a polynomial fit is weighted least squares: popt = (AᵀWA)⁻¹AᵀW y
    poly = lambda x, c0, c1, c2: c0 + c1 * x + c2 * x ** 2        # noqa: E731
    a = np.stack([np.ones_like(XS), XS, XS ** 2], axis=1)
    w = np.eye(XS.size) if sigma is None else np.linalg.inv(
        sigma if np.ndim(sigma) == 2 else np.diag(sigma ** 2))
    expected = np.linalg.solve(a.T @ w @ a, a.T @ w)
    got = wg.jacrev(lambda y: opt.curve_fit(poly, XS, y, sigma=sigma)[0])(YS)
    assert_close(got, expected, rtol=1e-8, atol=1e-12)


def test_curve_fit_scaling_identity_and_pcov_against_central_differences():
    fit = lambda y: opt.curve_fit(exp_model, XS, y, p0=[1.0, 1.0], sigma=SIGMA,   # noqa
                                  xtol=1e-15, ftol=1e-15)
    popt = fit(YS)[0]
    d = wg.jacfwd(lambda y: fit(y)[0])(YS)
    assert_close(d @ YS, [popt[0], 0.0], atol=1e-9)    # y scaled: a scales, k does not
    plain_pcov = lambda y: so.curve_fit(exp_model, XS, y, p0=[1.0, 1.0], sigma=SIGMA,  # noqa
                                        jac=exp_jac, xtol=1e-15, ftol=1e-15)[1]
    direction = np.random.default_rng(2).normal(size=YS.size)
    h = 1e-5
    fd = (plain_pcov(YS + h * direction) - plain_pcov(YS - h * direction)) / (2 * h)
    tangent = wg.jvp(lambda y: fit(y)[1], (YS,), (direction,))[1]
    assert_close(tangent, fd, rtol=1e-5, atol=1e-12)


def test_curve_fit_derivative_in_x_and_parameter_count_from_the_signature():
    fit = lambda x: opt.curve_fit(exp_model, x, YS, xtol=1e-15, ftol=1e-15)[0]   # noqa
    # (h = 1e-3: the fits stop ~1e-10 from the exact one, noise of ~1e-10/h in differences)
    assert_close(wg.jacfwd(fit)(XS), fd_jacobian(fit, XS, 1e-3), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="number of fit parameters"):
        opt.curve_fit(lambda *a: a[0], XS, YS)


def test_curve_fit_finite_differences_on_request():
    ours = opt.curve_fit(exp_model, XS, YS, p0=[1.0, 1.0], jac=False)
    theirs = so.curve_fit(exp_model, XS, YS, p0=[1.0, 1.0])
    assert np.array_equal(ours[0], theirs[0]) and np.array_equal(ours[1], theirs[1])


def test_functions_that_return_their_own_derivatives():
    # jac=True: fun returns (value, gradient) / (F, J); the solution is still differentiated
    def loss(x, c):
        return wnp.sum((x - c) ** 2 + x ** 4), 2 * (x - c) + 4 * x ** 3
    c = np.array([0.5, -1.0])
    f = lambda c: opt.minimize(loss, np.zeros(2), args=(c,), jac=True, tol=1e-12).x   # noqa
    x = f(c)
    assert_close(wg.jacfwd(f)(c), np.diag(2 / (2 + 12 * x ** 2)), rtol=1e-8, atol=1e-12)

    def system(x, c):
        return wnp.stack([x[0] + x[1] - c, x[0] * x[1] - 1.0]), \
            np.array([[1.0, 1.0], [wg.value(x[1]), wg.value(x[0])]])
    big = lambda c: opt.root(system, [2.0, 0.5], args=(c,), jac=True).x[0]   # noqa: E731
    x = big(3.0)
    assert_close(wg.grad(big)(3.0), x / (2 * x - 3.0), rtol=1e-9)


def test_least_squares_bounds_that_do_not_hold_leave_the_derivative_unconstrained():
    fit = lambda y: opt.least_squares(decay, [3.0, 1.0], args=(y,),    # noqa: E731
                                      bounds=([0.0, 0.0], [10.0, 10.0])).x
    assert_close(wg.jacfwd(fit)(DATA),
                 wg.jacfwd(lambda y: opt.least_squares(decay, [1.0, 1.0], args=(y,)).x)(DATA),
                 rtol=1e-5, atol=1e-7)


# ---- from the audit of wengert.scipy.optimize --------------------------------------------
def test_solves_with_plain_args_inside_an_outer_transformation():
    # (the exact derivative handed to SciPy was swept into the outer graph, and the solve
    # failed, blaming the function: "could not differentiate")
    f = lambda s: s * opt.minimize(lambda x: wnp.sum((x - 1) ** 2 + x ** 4), np.zeros(2)).x.sum()
    x = so.minimize(lambda x: np.sum((x - 1) ** 2 + x ** 4), np.zeros(2), tol=1e-12).x.sum()
    assert wg.grad(f)(2.0) == pytest.approx(x, rel=1e-6)
    assert wg.jvp(f, (2.0,), (1.0,))[1] == pytest.approx(x, rel=1e-6)
    assert_close(wg.vmap(f)(np.array([1.0, 2.0])), [x, 2 * x], rtol=1e-6)
    assert wg.compile(f, 2.0)(3.0) == pytest.approx(3 * x, rel=1e-6)
    # a nested solve whose inner problem has no outer parameter: x(c) solves
    # x - c + x³ = 0, the outer root c(t) solves x(c) = t, so dc/dt = 1 + 3t²
    inner = lambda c: opt.minimize(lambda x, c: wnp.sum((x - c) ** 2 + 0.5 * x ** 4),
                                   np.zeros(2), args=(c,)).x
    t = np.array([1.0, 0.5])
    J = wg.jacfwd(lambda t: opt.root(lambda c, t: inner(c) - t, np.ones(2), args=(t,)).x)(t)
    assert_close(J, np.diag(1 + 3 * t ** 2), rtol=1e-5, atol=1e-7)
    # the start of a solve gets no derivative, inside a transformation too
    assert wg.grad(lambda x0: opt.root_scalar(lambda x: x ** 3 - 2, x0=x0).root)(1.0) == 0.0
    for solve, root in ((lambda s: s * opt.newton(lambda x: x ** 3 - 2, 1.0), 2 ** (1 / 3)),
                        (lambda s: s * opt.least_squares(lambda x: x ** 2 - 2,
                                                         np.ones(1)).x[0], 2 ** 0.5)):
        assert wg.grad(solve)(2.0) == pytest.approx(root, rel=1e-7)


def test_root_scalar_passes_args_to_the_derivatives_you_give():
    cube = lambda x, c: x ** 3 - c
    assert opt.root_scalar(cube, args=(8.0,), x0=1.0, fprime=lambda x, c: 3 * x ** 2).root \
        == pytest.approx(2.0, rel=1e-12)
    assert opt.root_scalar(cube, args=(8.0,), x0=1.0, fprime=lambda x, c: 3 * x ** 2,
                           fprime2=lambda x, c: 6 * x, method="halley").root \
        == pytest.approx(2.0, rel=1e-12)
    g = wg.grad(lambda c: opt.root_scalar(cube, args=(c,), x0=1.0,
                                          fprime=lambda x, c: 3 * x ** 2).root)(8.0)
    assert g == pytest.approx(1 / 12, rel=1e-10)               # d c^(1/3) / dc


def test_unconverged_bracketing_and_newton_solves_warn():
    # (disp=False: SciPy returns its last iterate without an error; the derivative at it
    # was given without a word)
    h = lambda x, c: x ** 3 + x - c
    for solve in (lambda c: opt.brentq(h, 0, 5, args=(c,), maxiter=2, disp=False),
                  lambda c: opt.newton(h, 10.0, args=(c,), maxiter=2, disp=False)):
        with pytest.warns(RuntimeWarning, match="did not converge"):
            wg.grad(solve)(3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = opt.brentq(h, 0, 5, args=(3.0,))
        assert wg.grad(lambda c: opt.brentq(h, 0, 5, args=(c,)))(3.0) == \
            pytest.approx(1 / (3 * x ** 2 + 1), rel=1e-10)


def test_newton_full_output_of_an_array_is_scipys_named_tuple():
    f = lambda x, c: x ** 2 - c
    c = np.array([2.0, 3.0])
    ours = opt.newton(f, np.ones(2), args=(c,), full_output=True)
    theirs = so.newton(f, np.ones(2), args=(c,), full_output=True)
    assert ours._fields == theirs._fields == ("root", "converged", "zero_der")
    assert_close(ours.root, theirs.root, rtol=1e-14)
    assert (ours.converged == theirs.converged).all()
    J = wg.jacfwd(lambda c: opt.newton(f, np.ones(2), args=(c,), full_output=True).root)(c)
    assert_close(J, np.diag(0.5 / np.sqrt(c)), rtol=1e-10)
    root, info = opt.newton(lambda x: x ** 2 - 2, 1.0, full_output=True)    # a scalar's
    assert root == pytest.approx(2 ** 0.5) and info.converged


def test_curve_fit_omits_nans_on_request():
    x = np.arange(6.0)
    y = 1 + 2 * x + 0.1 * np.sin(x)
    y[2] = np.nan
    line = lambda x, a, b: a + b * x
    for sigma in (None, np.linspace(0.5, 1.5, 6)):
        assert_close(opt.curve_fit(line, x, y, sigma=sigma, nan_policy="omit")[0],
                     so.curve_fit(line, x, y, sigma=sigma, nan_policy="omit")[0], rtol=1e-10)
    # d popt / d y is the pseudo-inverse of the design matrix of the points kept, 0 for the
    # point left out
    J = wg.jacfwd(lambda y: opt.curve_fit(line, x, y, nan_policy="omit")[0])(y)
    kept = np.delete(x, 2)
    assert_close(np.delete(J, 2, axis=1), np.linalg.pinv(np.stack([np.ones(5), kept], 1)),
                 rtol=1e-8, atol=1e-10)
    assert (J[:, 2] == 0).all()


def test_linprog_and_minimize_take_a_variable_fixed_by_a_traced_bound():
    # (lb = ub = v became two dependent inequalities: a singular system)
    J = wg.jacfwd(lambda v: opt.linprog([-1.0, -1.0], A_ub=[[1.0, 1.0]], b_ub=[3.0],
                                        bounds=[(0, None), (v, v)]).x)(1.0)
    assert_close(J, [-1.0, 1.0], rtol=1e-9, atol=1e-12)           # x = (3 - v, v)
    # minimize's bounds may be traced: min (x - 3)² + 0.1 x₀x₁ with x₁ = v gives
    # x₀ = 3 - 0.05 v; with x₀ ≤ v active, x₀ = v and x₁ = 3 - 0.05 v
    f = lambda x: wnp.sum((x - 3.0) ** 2) + 0.1 * x[0] * x[1]
    for method in ("L-BFGS-B", "SLSQP", "TNC", None):
        J = wg.jacfwd(lambda v: opt.minimize(f, np.zeros(2), method=method,
                                             bounds=[(0, None), (v, v)]).x)(1.0)
        assert_close(J, [-0.05, 1.0], rtol=1e-6, atol=1e-8)
        J = wg.jacfwd(lambda v: opt.minimize(f, np.zeros(2), method=method,
                                             bounds=[(0, v), (0.0, 10.0)]).x)(1.0)
        assert_close(J, [1.0, -0.05], rtol=1e-6, atol=1e-8)
        J = wg.jacfwd(lambda v: opt.minimize(f, np.zeros(2), method=method,
                                             bounds=[(0, v), (0.0, 10.0)]).x)(10.0)
        assert_close(J, [0.0, 0.0], rtol=0, atol=1e-8)            # (not active)
    assert_close(wg.vmap(lambda v: opt.minimize(f, np.zeros(2), method="L-BFGS-B",
                                                bounds=[(0, v), (0, None)]).x)(
        np.array([1.0, 2.0])), [[1.0, 2.95], [2.0, 2.9]], rtol=1e-6)
    with pytest.warns(RuntimeWarning, match="cannot handle"):     # (ignored, as SciPy's)
        g = wg.grad(lambda v: opt.minimize(f, np.zeros(2), method="BFGS",
                                           bounds=[(0, v), (0, v)]).x.sum())(1.0)
    assert g == 0.0


def test_a_solve_that_stopped_short_warns_and_is_not_called_singular():
    a = np.array([1.0, 2.0])
    # maxiter=1: it warned, then called the regular Hessian 2 + 12x² singular
    with pytest.warns(RuntimeWarning, match="did not converge"):
        g = wg.grad(lambda a: opt.minimize(lambda x, a: wnp.sum((x - a) ** 2 + x ** 4),
                                           np.zeros(2), args=(a,),
                                           options={"maxiter": 1}).x.sum())(a)
    assert np.isfinite(g).all()
    # SciPy's own test passed (|g| < gtol for a tiny objective) far from the minimum: the
    # derivative there was given without a word
    tiny = lambda x, a: 1e-6 * (wnp.sum((x - a) ** 2) + wnp.sum(x ** 4))
    with pytest.warns(RuntimeWarning, match="far from satisfying the condition"):
        wg.jacfwd(lambda a: opt.minimize(tiny, np.zeros(2), args=(a,)).x)(a)


def test_ways_out_of_an_undifferentiable_function_work():
    import math
    residual = lambda x: np.array([math.exp(float(x[0])) - 2.0])       # plain floats only
    x, ier = opt.leastsq(residual, np.zeros(1), Dfun=False)
    assert x[0] == pytest.approx(math.log(2), rel=1e-7) and ier in (1, 2, 3, 4)
    for who, call, way in (
            ("leastsq", lambda: opt.leastsq(residual, np.zeros(1)), "Dfun=False"),
            ("newton", lambda: opt.newton(lambda x: math.exp(x) - 2.0, 0.0), "x1=")):
        with pytest.raises(TypeError, match=f"{who}: wengert could not differentiate.*{way}"):
            call()
    sol = opt.root(residual, np.zeros(1), jac=False)
    assert sol.x[0] == pytest.approx(math.log(2), rel=1e-7)
    # col_deriv describes the user's Jacobian; wengert's is given in rows either way
    f = lambda x: wnp.stack([x[0] + 2 * x[1] - 3.0, x[0] ** 2 - x[1]])
    plain = opt.fsolve(f, np.array([0.5, 0.5]), full_output=True)
    by_columns = opt.fsolve(f, np.array([0.5, 0.5]), col_deriv=1, full_output=True)
    assert_close(by_columns[0], plain[0], rtol=1e-12)
    assert by_columns[1]["nfev"] == plain[1]["nfev"]
