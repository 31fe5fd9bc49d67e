"""custom_root(..., linear_solve="cg" | "gmres" | a function): the implicit derivative by
matrix-free solves.  The Krylov solvers against NumPy's; derivatives of solutions against
central differences of the solver and against the dense rules, to third order; a large
problem against a hand-written adjoint; composition with jvp, vjp, vmap, compile; errors."""
import re

import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from fd import assert_close, check_grads
from wengert.graph.active import current_graph
from wengert.implicit import LinearSolveError, cg, gmres


# ---- the Krylov solvers on matrices ---------------------------------------------------------
def spd(n, seed, spread=10.0):
    rng = np.random.default_rng(seed)
    q = np.linalg.qr(rng.normal(size=(n, n)))[0]
    return q @ np.diag(np.linspace(1.0, spread, n)) @ q.T


def counted(A):
    """matvec of A, counting its calls."""
    def matvec(y):
        matvec.calls += 1
        return A @ y
    matvec.calls = 0
    return matvec


@pytest.mark.parametrize("solver", [cg, gmres])
def test_solvers_reach_their_tolerance(solver):
    rng = np.random.default_rng(0)
    A = spd(60, 1)
    if solver is gmres:
        A = A + 0.5 * rng.normal(size=(60, 60))        # not symmetric, nor definite
    b = rng.normal(size=60)
    for tol in (1e-6, 1e-10, 1e-13):
        y = solver(lambda y: A @ y, b, tol=tol)
        assert np.linalg.norm(A @ y - b) <= tol * np.linalg.norm(b)
    assert_close(y, np.linalg.solve(A, b), rtol=1e-10, atol=1e-12)
    assert np.array_equal(solver(lambda y: A @ y, np.zeros(60)), np.zeros(60))
    assert np.all(np.isnan(solver(lambda y: A @ y, np.full(60, np.nan))))


def test_cg_takes_steps_by_the_conditioning_not_by_n():
    def matvec(y):                              # 4 - cos(kπ/(n+1)): κ < 5/3
        matvec.calls += 1
        return 4 * y - np.r_[y[1:], 0.0] / 2 - np.r_[0.0, y[:-1]] / 2
    for n in (100, 3000):
        matvec.calls = 0
        b = np.random.default_rng(2).normal(size=n)
        y = cg(matvec, b)
        assert matvec.calls < 30 and np.linalg.norm(matvec(y) - b) < 1e-10 * np.linalg.norm(b)


def test_gmres_restarts_and_full_gmres_is_exact_in_n_steps():
    rng = np.random.default_rng(4)
    A = spd(40, 5) + 0.5 * rng.normal(size=(40, 40))
    b = rng.normal(size=40)
    for restart in (2, 5, 40, 1000):                   # (more than n: n is all there is)
        y = gmres(lambda y: A @ y, b, restart=restart, maxiter=4000)
        assert np.linalg.norm(A @ y - b) <= 1e-10 * np.linalg.norm(b)
    matvec = counted(rng.normal(size=(12, 12)) + 4 * np.eye(12))
    gmres(matvec, rng.normal(size=12), restart=12)
    assert matvec.calls <= 12 + 1                       # n steps, one true residual


def test_solver_failures_say_why():
    A = spd(50, 6, spread=1e4)
    b = np.ones(50)
    with pytest.raises(LinearSolveError, match=r"CG reached a relative residual of \S+ "
                                                 r"after 5 steps, not tol = 1e-10") as e:
        cg(lambda y: A @ y, b, maxiter=5)
    assert e.value.reason == "maxiter" and e.value.iterations == 5
    assert 1e-10 < e.value.residual < 1
    assert isinstance(e.value, np.linalg.LinAlgError)
    with pytest.raises(LinearSolveError, match="GMRES reached .* after 3 steps") as e:
        gmres(lambda y: A @ y, b, maxiter=3)
    assert e.value.reason == "maxiter"
    with pytest.raises(LinearSolveError, match=r"positive definite, but pᵀAp = -\S+ ≤ 0 "
                                                 "at step 1") as e:
        cg(lambda y: -(A @ y), b)
    assert e.value.reason == "indefinite"
    # indefinite, with pᵀAp > 0 at first: found later
    D = np.diag(np.r_[np.linspace(1, 2, 10), -1.0])
    with pytest.raises(LinearSolveError, match="positive definite"):
        cg(lambda y: D @ y, np.r_[np.ones(10), 0.1])
    singular = np.diag(np.r_[np.ones(5), 0.0])
    with pytest.raises(LinearSolveError, match="GMRES (found A singular|stalls)") as e:
        gmres(lambda y: singular @ y, np.ones(6))
    assert e.value.reason in ("singular", "stalled")
    with pytest.raises(LinearSolveError, match="nan or inf") as e:
        cg(lambda y: y * np.inf, b)
    assert e.value.reason == "nonfinite"


def test_cg_reports_a_residual_rounding_keeps_above_tol():
    # κ ~ 1e13: the recurrence's residual falls below 1e-13, the true one cannot
    A = spd(30, 7, spread=1e13)
    with pytest.raises(LinearSolveError, match="stalls at a relative") as e:
        cg(lambda y: A @ y, np.ones(30), tol=1e-13, maxiter=10 ** 6)
    assert e.value.reason == "stalled" and e.value.iterations < 10 ** 5


# ---- problems ------------------------------------------------------------------------------
def tridiagonal_solve(lower, diag, upper, r):
    """The Thomas algorithm (no pivoting: for the diagonally dominant systems here)."""
    n = len(diag)
    c, d = np.zeros(n), np.zeros(n)
    c[0], d[0] = upper[0] / diag[0], r[0] / diag[0]
    for i in range(1, n):
        m = diag[i] - lower[i - 1] * c[i - 1]
        c[i] = upper[i] / m if i < n - 1 else 0.0
        d[i] = (r[i] - lower[i - 1] * d[i - 1]) / m
    x = np.zeros(n)
    x[-1] = d[-1]
    for i in range(n - 2, -1, -1):
        x[i] = d[i] - c[i] * x[i + 1]
    return x


def shifted(u):
    """(u_{i+1}, u_{i-1}) with zeros beyond the ends (Dirichlet boundaries)."""
    z = wnp.zeros(1)
    return wnp.concatenate([u[1:], z]), wnp.concatenate([z, u[:-1]])


def source(theta, n):
    k = np.arange(n)
    return theta[1] + theta[2] * wnp.sin(0.3 * k) + theta[3] ** 2 * wnp.cos(0.05 * k)


def poisson(u, theta):
    """-u'' + θ₀ u³ + u = f(θ) on a grid of spacing 1: J = L + diag(1 + 3θ₀u²), SPD."""
    up, down = shifted(u)
    return 2 * u - up - down + theta[0] * u ** 3 + u - source(theta, u.shape[0])


def advection(u, theta):
    """-u'' + θ₄ u' + θ₀ u³ + u = f(θ): J is not symmetric."""
    up, down = shifted(u)
    return poisson(u, theta) + theta[4] * (up - down) / 2


def newton(condition):
    """A plain-NumPy Newton solver of a tridiagonal condition, to a residual of 1e-13."""
    def solve(u0, theta):
        theta = np.asarray(theta, dtype=float)
        n = u0.size
        f = theta[1] + theta[2] * np.sin(0.3 * np.arange(n)) + \
            theta[3] ** 2 * np.cos(0.05 * np.arange(n))
        c = theta[4] / 2 if condition is advection else 0.0
        u = np.cbrt(f / theta[0])
        for _ in range(100):
            up, down = np.r_[u[1:], 0.0], np.r_[0.0, u[:-1]]
            r = 3 * u - up - down + theta[0] * u ** 3 - f + c * (up - down)
            if np.max(np.abs(r)) < 1e-13:
                return u
            u = u - tridiagonal_solve(np.full(n - 1, -1.0 - c), 3 + 3 * theta[0] * u ** 2,
                                      np.full(n - 1, -1.0 + c), r)
        raise RuntimeError("newton did not converge")
    return solve


METHODS = ("dense", "cg", "gmres")
SOLVERS = {(cond.__name__, m): wg.custom_root(cond, linear_solve=m)(newton(cond))
           for cond in (poisson, advection) for m in METHODS}


def theta_at(seed):
    rng = np.random.default_rng(seed)
    return np.array([rng.uniform(0.5, 2.0), rng.uniform(1.0, 2.0), rng.uniform(-0.5, 0.5),
                     rng.uniform(0.5, 1.0), rng.uniform(-0.5, 0.5)])


# ---- derivatives against differences, and against the dense rules --------------------------
@pytest.mark.parametrize("method", ["cg", "gmres"])
@pytest.mark.parametrize("seed", [0, 1])
def test_symmetric_problem_against_central_differences_to_second_order(method, seed):
    solve = SOLVERS["poisson", method]
    check_grads(lambda th: solve(np.zeros(25), th), theta_at(seed), order=2, eps=1e-5,
                rtol=1e-6, atol=1e-8, seed=seed)


@pytest.mark.parametrize("seed", [2, 3])
def test_unsymmetric_problem_by_gmres_against_central_differences(seed):
    solve = SOLVERS["advection", "gmres"]
    check_grads(lambda th: solve(np.zeros(25), th), theta_at(seed), order=2, eps=1e-5,
                rtol=1e-6, atol=1e-8, seed=seed)


@pytest.mark.parametrize("problem,method", [("poisson", "cg"), ("poisson", "gmres"),
                                            ("advection", "gmres")])
def test_iterative_equals_dense_to_third_order(problem, method):
    theta, n = theta_at(5), 60
    iterative, dense = SOLVERS[problem, method], SOLVERS[problem, "dense"]

    def loss(solve):
        return lambda th: wnp.sum(wnp.sin(solve(np.zeros(n), th)) * np.linspace(1, 2, n))
    for transform in (wg.grad, wg.hessian, lambda f: wg.jacfwd(wg.hessian(f))):
        want = transform(loss(dense))(theta)
        assert_close(transform(loss(iterative))(theta), want, rtol=1e-8,
                     atol=1e-9 * np.max(np.abs(want)))
    x = lambda solve: (lambda th: solve(np.zeros(n), th))  # noqa: E731
    want = wg.jacfwd(x(dense))(theta)                      # forward sweeps: J y = v
    assert_close(wg.jacfwd(x(iterative))(theta), want, rtol=1e-8,
                 atol=1e-9 * np.max(np.abs(want)))
    assert_close(wg.jacrev(x(iterative))(theta), want, rtol=1e-8,
                 atol=1e-9 * np.max(np.abs(want)))


def test_a_function_of_yours_solves_both_systems():
    seen = []

    def solve_by_matrix(matvec, b):
        # runs on plain numbers, whatever order of derivative is being taken
        assert current_graph() is None and type(b) is np.ndarray
        A = np.stack([matvec(e) for e in np.eye(b.size)], axis=1)
        assert np.array_equal(matvec(b[:, None]), matvec(list(b)))     # (any vector)
        assert type(A) is np.ndarray
        seen.append(A)
        return np.linalg.solve(A, b)
    mine = wg.custom_root(advection, linear_solve=solve_by_matrix)(newton(advection))
    theta, n = theta_at(6), 30

    def loss(solve):
        return lambda th: wnp.sum(solve(np.zeros(n), th) ** 3)
    assert_close(wg.hessian(loss(mine))(theta),
                 wg.hessian(loss(SOLVERS["advection", "dense"]))(theta), rtol=1e-11,
                 atol=1e-12)
    # J and Jᵀ (the condition is not symmetric, so they differ)
    assert any(np.allclose(a, b.T) and not np.allclose(a, b) for a in seen for b in seen)


def test_large_problem_against_a_hand_written_adjoint():
    # n = 3000: the dense rules would build a 3000 × 3000 Jacobian and factorise it
    n, theta = 3000, theta_at(7)
    w = np.cos(np.arange(n) / 100.0)
    u = newton(poisson)(np.zeros(n), theta)

    def adjoint_gradient(theta):
        # L(θ) = Σ w u², λ = J⁻ᵀ ∂L/∂u (J symmetric, tridiagonal), dL/dθ = -λᵀ ∂F/∂θ
        u = newton(poisson)(np.zeros(n), theta)
        lam = tridiagonal_solve(np.full(n - 1, -1.0), 3 + 3 * theta[0] * u ** 2,
                                np.full(n - 1, -1.0), 2 * w * u)
        k = np.arange(n)
        dF = np.stack([u ** 3, -np.ones(n), -np.sin(0.3 * k),
                       -2 * theta[3] * np.cos(0.05 * k), np.zeros(n)], axis=1)
        return -lam @ dF
    want = adjoint_gradient(theta)
    for method in ("cg", "gmres"):
        loss = lambda th: wnp.sum(w * SOLVERS["poisson", method](np.zeros(n), th) ** 2)  # noqa
        assert_close(wg.grad(loss)(theta), want, rtol=1e-8, atol=1e-8 * np.max(np.abs(want)))
        # second order: the Hessian's columns against differences of the gradient
        hess = wg.hessian(loss)(theta)
        for i in (0, 3):
            e = np.eye(5)[i] * 1e-5
            fd = (adjoint_gradient(theta + e) - adjoint_gradient(theta - e)) / 2e-5
            assert_close(hess[:, i], fd, rtol=1e-5, atol=1e-5 * np.max(np.abs(fd)))
    assert u.shape == (n,)


# ---- composition -----------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["cg", "gmres"])
def test_jvp_vjp_vmap_and_compile(method):
    solve, dense = SOLVERS["poisson", method], SOLVERS["poisson", "dense"]
    theta, n = theta_at(8), 40
    x = lambda th: solve(np.zeros(n), th)                  # noqa: E731
    x_dense = lambda th: dense(np.zeros(n), th)            # noqa: E731
    v = np.random.default_rng(9).normal(size=5)
    assert_close(wg.jvp(x, (theta,), (v,))[1], wg.jvp(x_dense, (theta,), (v,))[1],
                 rtol=1e-8, atol=1e-10)
    ct = np.random.default_rng(10).normal(size=n)
    assert_close(wg.vjp(x, theta)[1](ct)[0], wg.vjp(x_dense, theta)[1](ct)[0],
                 rtol=1e-8, atol=1e-10)
    loss = lambda th: wnp.sum(x(th) ** 2)                  # noqa: E731
    thetas = np.stack([theta_at(s) for s in (11, 12, 13)])
    want = np.stack([wg.grad(lambda th: wnp.sum(x_dense(th) ** 2))(t) for t in thetas])
    assert_close(wg.vmap(wg.grad(loss))(thetas), want, rtol=1e-8, atol=1e-10)
    compiled = wg.compile(wg.grad(loss), theta)
    assert_close(compiled(thetas[1]), want[1], rtol=1e-8, atol=1e-10)
    compiled_hvp = wg.compile(lambda th, v: wg.hvp(loss)(th, v), theta, v)
    assert_close(compiled_hvp(thetas[2], v),
                 wg.hessian(lambda th: wnp.sum(x_dense(th) ** 2))(thetas[2]) @ v,
                 rtol=1e-7, atol=1e-9)


def test_pytree_parameters_and_held_constants():
    def cond(x, p):
        assert p["name"] == "cubic"
        return x ** 3 + p["k"] * x - p["c"]

    @wg.custom_root(cond, linear_solve="cg", tol=1e-12)
    def solve(x0, p):
        x = x0
        for _ in range(60):
            x = x - (x ** 3 + p["k"] * x - p["c"]) / (3 * x ** 2 + p["k"])
        return x
    c = np.linspace(1.0, 5.0, 7)
    x = solve(np.ones(7), {"k": 2.0, "c": c, "name": "cubic"})
    gk, gc = wg.grad(lambda k, c: wnp.sum(solve(np.ones(7), {"k": k, "c": c,
                                                             "name": "cubic"})),
                     argnums=(0, 1))(2.0, c)
    assert_close(gc, 1 / (3 * x ** 2 + 2.0), rtol=1e-11)          # (3x² + k) ẋ = ċ - x k̇
    assert_close(gk, np.sum(-x / (3 * x ** 2 + 2.0)), rtol=1e-11)


# ---- the graph: one node a solve, no nesting -------------------------------------------------
def solve_names(graph):
    return [m.group(1) for m in re.finditer(r"= (\w+\[[^\]]*\])\(", str(graph))]


def test_the_linear_solves_are_nodes_that_never_nest():
    solve = SOLVERS["poisson", "cg"]
    loss = lambda th: wnp.sum(solve(np.zeros(10), th) ** 3)   # noqa: E731
    theta = theta_at(14)
    first = solve_names(wg.trace(wg.grad(loss), theta))
    assert first == ["custom_root[solve]", "cg[J^T of solve]"]
    third = solve_names(wg.trace(wg.jacfwd(wg.hessian(loss)), theta))
    # at any order the systems solved are J's and Jᵀ's (right-hand sides carry the rest)
    assert set(third) == {"custom_root[solve]", "cg[J^T of solve]", "cg[J of solve]"}
    assert third.count("cg[J of solve]") >= 2


# ---- errors -----------------------------------------------------------------------------------
def test_unknown_linear_solve_and_misplaced_options():
    cond = lambda x, a: x - a                               # noqa: E731
    with pytest.raises(ValueError, match="linear_solve must be 'dense', 'cg', 'gmres' or a "
                                         r"function linear_solve\(matvec, b\) -> y, got 'bicg'"):
        wg.custom_root(cond, linear_solve="bicg")
    with pytest.raises(ValueError, match="restart= is an option of linear_solve='gmres', "
                                         "not of 'cg'"):
        wg.custom_root(cond, linear_solve="cg", restart=10)
    with pytest.raises(ValueError, match="tol= is an option of linear_solve='cg' or "
                                         "'gmres', not of 'dense'"):
        wg.custom_root(cond, tol=1e-8)
    with pytest.raises(ValueError, match="maxiter= is an option of linear_solve='cg' or "
                                         "'gmres', not of a function"):
        wg.custom_root(cond, linear_solve=lambda matvec, b: b, maxiter=10)
    for bad in ({"tol": 0.0}, {"tol": -1e-8}, {"tol": float("nan")}, {"tol": True},
                {"maxiter": 0}, {"maxiter": 2.5}, {"maxiter": True}, {"restart": 0}):
        with pytest.raises(ValueError, match="must be a positive"):
            wg.custom_root(cond, linear_solve="gmres", **bad)


def test_non_convergence_names_the_residual_and_the_option():
    solve = wg.custom_root(poisson, linear_solve="cg", maxiter=3)(newton(poisson))
    with pytest.raises(LinearSolveError,
                       match=r"custom_root: the derivative of solve's solution solves Jᵀ y "
                             r"= v .* by cg: CG reached a relative residual of \S+ after 3 "
                             r"steps, not tol = 1e-10; raise maxiter= \(now 3\) or tol= "
                             r"\(now 1e-10\) of custom_root, or take linear_solve='gmres' "
                             "or 'dense'") as e:
        wg.grad(lambda th: wnp.sum(solve(np.zeros(30), th)))(theta_at(15))
    assert isinstance(e.value, np.linalg.LinAlgError) and e.value.residual > 1e-10
    # forward mode says which system it is too; gmres is advised the dense solve
    solve = wg.custom_root(poisson, linear_solve="gmres", maxiter=2, restart=1)(
        newton(poisson))
    with pytest.raises(LinearSolveError, match=r"solves J y = v \(for a forward sweep\).*"
                                               "GMRES reached .*linear_solve='dense'"):
        wg.jvp(lambda th: solve(np.zeros(30), th), (theta_at(15),), (np.ones(5),))


def test_cg_on_a_condition_whose_jacobian_is_not_positive_definite():
    # x³ = a, written a - x³: J = -3x², negative definite; gmres and dense do not mind
    make = lambda m: wg.custom_root(lambda x, a: a - x ** 3, linear_solve=m)(  # noqa: E731
        lambda x0, a: np.cbrt(a))
    a = np.array([1.0, 8.0, 27.0])
    loss = lambda solve: (lambda a: wnp.sum(solve(np.ones(3), a)))   # noqa: E731
    with pytest.raises(LinearSolveError, match=r"pᵀAp = -\S+ ≤ 0 at step 1; cg needs J "
                                               "symmetric positive definite .* take "
                                               "linear_solve='gmres' or 'dense'") as e:
        wg.grad(loss(make("cg")))(a)
    assert e.value.reason == "indefinite"
    assert_close(wg.grad(loss(make("gmres")))(a), 1 / (3 * np.cbrt(a) ** 2), rtol=1e-10)


def test_singular_jacobian_by_gmres():
    @wg.custom_root(lambda x, a: wnp.stack([x[0] + x[1] - a, 2 * x[0] + 2 * x[1] - 2 * a]),
                    linear_solve="gmres")
    def solve(x0, a):
        return np.array([a, 0.0])
    with pytest.raises(np.linalg.LinAlgError, match="gmres: GMRES (found A singular|stalls)"):
        wg.grad(lambda a: solve(np.zeros(2), a)[0])(1.0)


def test_a_function_of_yours_that_returns_the_wrong_thing():
    for returned, error, message in [
            (lambda b: b[:-1], ValueError, "by the linear_solve function, which returned 2 "
                                           "numbers for a system of 3"),
            (lambda b: b * np.nan, LinearSolveError, "which returned nan or inf")]:
        solve = wg.custom_root(lambda x, a: x - a,
                               linear_solve=lambda matvec, b: returned(b))(
            lambda x0, a: a * np.ones(3))
        with pytest.raises(error, match=message):
            wg.grad(lambda a: wnp.sum(solve(np.zeros(3), a)))(1.0)


def test_a_condition_with_a_rule_that_cannot_be_differentiated():
    # products J y by the pullback of the pullback need F's VJP rules to differentiate;
    # a rule of plain NumPy cannot, and then first derivatives take J y from its JVP rule
    cube = wg.primitive(lambda x: x ** 3, name="plain_cube")
    cube.defjvp(lambda ts, x, ans: 3 * np.asarray(x) ** 2 * np.asarray(ts[0]))
    cube.defvjp(lambda g, x, ans: (3 * np.asarray(x) ** 2 * np.asarray(g),))

    @wg.custom_root(lambda x, a: x + cube(x) - a, linear_solve="cg")
    def solve(x0, a):
        x = x0
        for _ in range(50):
            x = x - (x + x ** 3 - a) / (1 + 3 * x ** 2)
        return x
    a = np.array([1.0, 2.0, 3.0])
    x = solve(np.zeros(3), a)
    assert_close(wg.jvp(lambda a: solve(np.zeros(3), a), (a,), (np.ones(3),))[1],
                 1 / (1 + 3 * x ** 2), rtol=1e-12)
    assert_close(wg.grad(lambda a: wnp.sum(solve(np.zeros(3), a)))(a), 1 / (1 + 3 * x ** 2),
                 rtol=1e-12)
