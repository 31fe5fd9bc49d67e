"""wengert.lax.custom_root and custom_linear_solve, JAX's solves with implicit derivatives:
values and derivatives against closed forms, central differences of the solvers themselves
(to second order) and JAX; pytrees, has_aux, vmap and compile; clear errors."""
import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from wengert import lax
from wengert.tree import ravel_pytree
from fd import assert_close, check_grads

rng = np.random.default_rng(1729)


def assert_near(actual, desired, rtol=1e-6, atol=1e-13):
    """fd's assert_close with a tolerance below the values' scale (its default atol of 1e-6
    would pass a derivative off in its seventh digit)."""
    assert_close(actual, desired, rtol=rtol, atol=atol)


# ---- solvers on numbers, as a JAX program would write them --------------------------------------
def newton(f, x):
    """Scalar Newton steps: the solve is never differentiated, only run."""
    for _ in range(40):
        x = x - f(x) / wg.grad(f)(x)
    return x


def tree_newton(f, x):
    """Newton steps on a pytree unknown, by its raveled vector."""
    w, unravel = ravel_pytree(x)
    F = lambda w: ravel_pytree(f(unravel(w)))[0]            # noqa: E731
    for _ in range(40):
        w = w - np.linalg.solve(wg.jacfwd(F)(w), F(w))
    return unravel(w)


def scalar_solve(g, y):                 # JAX's documented tangent_solve for a scalar
    return y / g(1.0)


def jacobian_solve(g, y):               # ... and for a pytree: a solve with g's Jacobian
    v, unravel = ravel_pytree(y)
    J = wg.jacobian(lambda w: ravel_pytree(g(unravel(w)))[0])(v)
    return unravel(wnp.linalg.solve(J, v))


def cg(matvec, b):
    """Conjugate gradients with a Python loop on the residual's value: no derivative
    could go through it, and none needs to."""
    x = np.zeros_like(b)
    r = p = b - matvec(x)
    while np.linalg.norm(r) > 1e-14 * np.linalg.norm(b):
        Ap = matvec(p)
        alpha = (r @ r) / (p @ Ap)
        x, r_new = x + alpha * p, r - alpha * Ap
        p, r = r_new + (r_new @ r_new) / (r @ r) * p, r_new
    return x


def cube_root(a, x0=1.0):
    return lax.custom_root(lambda x: x ** 3 - a, x0, newton, scalar_solve)


def spd(n):
    M = rng.normal(size=(n, n))
    return M @ M.T + n * np.eye(n)


def regular(n):
    return rng.normal(size=(n, n)) + 2 * n ** 0.5 * np.eye(n)


# ---- custom_root --------------------------------------------------------------------------------
def test_cube_root_against_closed_forms_to_third_order_and_differences():
    for a in rng.uniform(0.5, 20.0, size=3):
        x = a ** (1 / 3)
        assert_near(cube_root(a), x, rtol=1e-14)
        assert_near(wg.grad(cube_root)(a), 1 / (3 * x ** 2), rtol=1e-13)     # 1/(3x²)
        assert_near(wg.jvp(cube_root, (a,), (1.0,))[1], 1 / (3 * x ** 2), rtol=1e-13)
        assert_near(wg.grad(wg.grad(cube_root))(a), -2 / 9 * a ** (-5 / 3), rtol=1e-12)
        assert_near(wg.jacfwd(wg.jacfwd(cube_root))(a), -2 / 9 * a ** (-5 / 3), rtol=1e-12)
        assert_near(wg.grad(wg.grad(wg.grad(cube_root)))(a), 10 / 27 * a ** (-8 / 3),
                     rtol=1e-11)
        check_grads(cube_root, np.array(a))           # central differences of the solver
    assert wg.grad(lambda x0: cube_root(8.0, x0))(1.0) == 0.0     # the guess: no derivative


def vector_problem(A, c, a):
    """f(x) = 0 for x = {"u": u (2,), "v": v ()}: u and v couple, and f closes over A, c and
    a, the values differentiated."""
    def f(x):
        u, v = x["u"], x["v"]
        return {"u": A @ u + a * u ** 3 + v - c[:2],
                "v": v + wnp.sin(v) + 0.1 * wnp.sum(u) - c[2]}
    return lax.custom_root(f, {"u": np.zeros(2), "v": 0.0}, tree_newton, jacobian_solve)


def test_pytree_root_against_the_implicit_function_theorem_and_differences():
    A = regular(2)
    c, a = rng.normal(size=3), 0.3
    x = vector_problem(A, c, a)
    u, v = x["u"], x["v"]
    assert_near(A @ u + a * u ** 3 + v, c[:2], atol=1e-12)
    # dx/dc = J⁻¹ and dx/da = -J⁻¹ (u³, 0), J = ∂f/∂x written out
    J = np.block([[A + 3 * a * np.diag(u ** 2), np.ones((2, 1))],
                  [0.1 * np.ones((1, 2)), np.array([[1 + np.cos(v)]])]])
    flat = lambda x: wnp.concatenate([x["u"], wnp.reshape(x["v"], (1,))])   # noqa: E731
    assert_near(wg.jacfwd(lambda c: flat(vector_problem(A, c, a)))(c), np.linalg.inv(J),
                 rtol=1e-10)
    assert_near(wg.jacrev(lambda c: flat(vector_problem(A, c, a)))(c), np.linalg.inv(J),
                 rtol=1e-10)
    assert_near(wg.grad(lambda a: flat(vector_problem(A, c, a))[1])(a),
                 -np.linalg.solve(J, np.append(u ** 3, 0.0))[1], rtol=1e-10)
    check_grads(vector_problem, A, c, np.array(a))     # first and second order


def test_values_plain_and_has_aux():
    def counting_newton(f, x):
        return newton(f, x), {"steps": 40}
    found = lax.custom_root(lambda x: x ** 2 - 2.0, 1.0, counting_newton, scalar_solve,
                            has_aux=True)
    assert_near(found[0], np.sqrt(2.0), rtol=1e-15)
    assert found[1] == {"steps": 40}

    def root_and_aux(a):
        return lax.custom_root(lambda x: x ** 2 - a, 1.0, counting_newton, scalar_solve,
                               has_aux=True)
    assert wg.grad(lambda a: root_and_aux(a)[0])(2.0) == pytest.approx(0.5 / np.sqrt(2.0))
    out, aux = wg.vjp(root_and_aux, 2.0)[0]
    assert aux == {"steps": 40} and np.isclose(out, np.sqrt(2.0))
    # nothing traced: solve's own result, untouched
    assert lax.custom_root(lambda x: x - 2.0, 1.0, lambda f, x: 2, scalar_solve) == 2


def test_custom_root_under_vmap_and_compile():
    a = rng.uniform(1.0, 30.0, size=4)
    x = a ** (1 / 3)
    assert_near(wg.vmap(cube_root)(a), x, rtol=1e-14)
    assert_near(wg.vmap(wg.grad(cube_root))(a), 1 / (3 * x ** 2), rtol=1e-13)
    compiled = wg.compile(wg.grad(cube_root), 2.0)
    assert_near([compiled(v) for v in a], 1 / (3 * x ** 2), rtol=1e-13)
    assert_near(wg.jit(wg.grad(wg.grad(cube_root)))(a[0]), -2 / 9 * a[0] ** (-5 / 3),
                 rtol=1e-12)
    A, c = regular(2), rng.normal(size=3)
    cs = np.stack([c, c + 0.1])
    want = np.stack([vector_problem(A, c, 0.3)["u"] for c in cs])
    assert_near(wg.vmap(lambda c: vector_problem(A, c, 0.3)["u"])(cs), want, rtol=1e-12)
    g = lambda c: wg.jacrev(lambda c: vector_problem(A, c, 0.3)["u"])(c)   # noqa: E731
    assert_near(wg.compile(g, c)(c), g(c), rtol=1e-12)


def test_custom_root_refuses_what_it_cannot_solve_clearly():
    with pytest.raises(TypeError, match="value of f must have the structure of initial_guess"):
        lax.custom_root(lambda x: (x, x), 1.0, newton, scalar_solve)
    with pytest.raises(TypeError, match="value of f must have the structure of initial_guess"):
        wg.grad(lambda a: lax.custom_root(lambda x: (a * x, x), 1.0, newton, scalar_solve))(2.0)
    with pytest.raises(ValueError, match=r"value of f must have the shapes of initial_guess, "
                                         r"\[\(\)\], got \[\(2,\)\]"):
        wg.grad(lambda a: lax.custom_root(lambda x: wnp.stack([x, a]), 1.0, newton,
                                          scalar_solve))(2.0)
    with pytest.raises(ValueError, match="the root <lambda> returned must have the shapes"):
        wg.grad(lambda a: lax.custom_root(lambda x: x - a, 1.0, lambda f, x: np.ones(2),
                                          scalar_solve))(2.0)
    with pytest.raises(ValueError, match="the solution tangent_solve returned must have"):
        wg.grad(lambda a: lax.custom_root(lambda x: x ** 3 - a, 1.0, newton,
                                          lambda g, y: wnp.stack([y, y])))(8.0)
    with pytest.raises(TypeError, match="with has_aux=True, newton must return"):
        lax.custom_root(lambda x: x - 1.0, 1.0, newton, scalar_solve, has_aux=True)
    with pytest.raises(ValueError, match="has_aux=True .* traced without values"):
        wg.jit(lambda a: lax.custom_root(lambda x: x - a, 1.0, lambda f, x: (a, 0),
                                         scalar_solve, has_aux=True))(2.0)
    with pytest.raises(TypeError, match="tangent_solve must be a function"):
        lax.custom_root(lambda x: x, 1.0, newton, None)
    with pytest.raises(TypeError, match="initial_guess holds no arrays"):
        lax.custom_root(lambda x: x, {}, newton, scalar_solve)


# ---- custom_linear_solve ------------------------------------------------------------------------
def dense_solve(A, b, **options):
    """A x = b by solves that close over A (as JAX's factorisation examples do)."""
    return lax.custom_linear_solve(lambda x: A @ x, b, lambda mv, b: wnp.linalg.solve(A, b),
                                   lambda vm, c: wnp.linalg.solve(A.T, c), **options)


def matrix_free_solve(A, b):
    """A x = b by solves that see only matvec and vecmat (dense, from their Jacobians)."""
    def solve(mv, b):
        return np.linalg.solve(wg.jacfwd(mv)(b), b)
    return lax.custom_linear_solve(lambda x: A @ x, b, solve, solve)


@pytest.mark.parametrize("linear_solve", [dense_solve, matrix_free_solve])
def test_linear_solve_against_closed_forms_and_differences(linear_solve):
    n = 4
    A, b = regular(n), rng.normal(size=n)
    x = np.linalg.solve(A, b)
    assert_near(linear_solve(A, b), x, rtol=1e-12)
    # reverse: b̄ = A⁻ᵀ x̄ and Ā = -b̄ xᵀ
    xbar = rng.normal(size=n)
    Abar, bbar = wg.vjp(linear_solve, A, b)[1](xbar)
    assert_near(bbar, np.linalg.solve(A.T, xbar), rtol=1e-11)
    assert_near(Abar, -np.outer(np.linalg.solve(A.T, xbar), x), rtol=1e-11)
    # forward: ẋ = A⁻¹ (ḃ - Ȧ x)
    Adot, bdot = rng.normal(size=(n, n)), rng.normal(size=n)
    xdot = wg.jvp(linear_solve, (A, b), (Adot, bdot))[1]
    assert_near(xdot, np.linalg.solve(A, bdot - Adot @ x), rtol=1e-11)
    check_grads(linear_solve, A, b)                    # first and second order


def test_derivatives_through_what_matvec_closes_over():
    n = 5
    L, theta, b = 0.3 * rng.normal(size=(n, n)), rng.normal(size=n), rng.normal(size=n)

    def solve_theta(theta, b):
        D = wnp.exp(theta)                             # A = diag(exp θ) + L
        by_jacobian = lambda mv, b: np.linalg.solve(wg.jacfwd(mv)(b), b)   # noqa: E731
        return lax.custom_linear_solve(lambda x: D * x + L @ x, b, by_jacobian, by_jacobian)
    A = np.diag(np.exp(theta)) + L
    x = np.linalg.solve(A, b)
    xbar = rng.normal(size=n)
    bbar = np.linalg.solve(A.T, xbar)
    # θ̄ = -(∂(A x)/∂θ)ᵀ b̄, and ∂(A x)_i/∂θ_i = exp(θ_i) x_i
    assert_near(wg.vjp(solve_theta, theta, b)[1](xbar)[0], -bbar * np.exp(theta) * x,
                 rtol=1e-11)
    check_grads(solve_theta, theta, b)


def test_symmetric_uses_solve_for_the_transpose_with_a_loop_no_derivative_goes_through():
    n = 6
    S, b = spd(n), rng.normal(size=n)
    calls = []

    def counted_cg(mv, b):
        calls.append(1)
        return cg(mv, b)

    def solve(S, b):
        return lax.custom_linear_solve(lambda x: S @ x, b, counted_cg, symmetric=True)
    x = np.linalg.solve(S, b)
    assert_near(solve(S, b), x, rtol=1e-12)
    xbar = rng.normal(size=n)
    Sbar, bbar = wg.vjp(solve, S, b)[1](xbar)
    assert_near(bbar, np.linalg.solve(S, xbar), rtol=1e-11)
    assert_near(Sbar, -np.outer(np.linalg.solve(S, xbar), x), rtol=1e-11)
    assert len(calls) == 3              # the plain value's, then vjp's and its cotangent's
    check_grads(solve, S, b, order=1)


def test_pytree_right_hand_side_and_has_aux():
    A = spd(3)

    def solve(A, b, **options):
        mv = lambda x: {"u": A @ x["u"], "v": 2.0 * x["v"]}            # noqa: E731
        so = lambda mv, b: ({"u": np.linalg.solve(wg.jacfwd(lambda u: mv(
            {"u": u, "v": 0.0})["u"])(b["u"]), b["u"]), "v": b["v"] / 2}, "aux")
        return lax.custom_linear_solve(mv, b, so, symmetric=True, has_aux=True)
    b = {"u": rng.normal(size=3), "v": 3.0}
    x, aux = solve(A, b)
    assert aux == "aux"
    assert_near(x["u"], np.linalg.solve(A, b["u"]), rtol=1e-12)
    assert_near(x["v"], 1.5)
    gb = wg.grad(lambda b: wnp.sum(solve(A, b)[0]["u"]) + solve(A, b)[0]["v"])(b)
    assert_near(gb["u"], np.linalg.solve(A, np.ones(3)), rtol=1e-11)
    assert_near(gb["v"], 0.5)
    out = wg.jvp(lambda b: solve(A, b)[0], (b,), ({"u": np.ones(3), "v": 1.0},))[1]
    assert_near(out["u"], np.linalg.solve(A, np.ones(3)), rtol=1e-11)
    assert_near(out["v"], 0.5)
    check_grads(lambda A, u: solve(A, {"u": u, "v": 1.0})[0], A, b["u"])


def test_forward_only_without_transpose_solve_and_reverse_refused_clearly():
    n = 3
    A, b = regular(n), rng.normal(size=n)

    def forward_only(A, b):
        return lax.custom_linear_solve(lambda x: A @ x, b, lambda mv, b: wnp.linalg.solve(A, b))
    x = np.linalg.solve(A, b)
    Adot = rng.normal(size=(n, n))
    assert_near(wg.jvp(forward_only, (A, b), (Adot, np.zeros(n)))[1],
                 -np.linalg.solve(A, Adot @ x), rtol=1e-11)
    assert_near(wg.jacfwd(forward_only, argnums=1)(A, b), np.linalg.inv(A), rtol=1e-11)
    with pytest.raises(TypeError, match="reverse mode .* needs transpose_solve"):
        wg.grad(lambda b: wnp.sum(forward_only(A, b)))(b)
    with pytest.raises(TypeError, match="reverse mode .* needs transpose_solve"):
        wg.compile(wg.grad(lambda b: wnp.sum(forward_only(A, b))), b)    # (traced: at once)


def test_custom_linear_solve_under_vmap_and_compile():
    n = 4
    S = spd(n)
    bs = rng.normal(size=(3, n))

    def solve(S, b):
        return lax.custom_linear_solve(lambda x: S @ x, b, cg, symmetric=True)
    want = np.linalg.solve(S, bs.T).T
    assert_near(wg.vmap(solve, in_axes=(None, 0))(S, bs), want, rtol=1e-12)
    Ss = np.stack([S, S + np.eye(n)])
    assert_near(wg.vmap(solve, in_axes=(0, None))(Ss, bs[0]),
                 [np.linalg.solve(M, bs[0]) for M in Ss], rtol=1e-12)
    loss = lambda S, b: wnp.sum(solve(S, b) ** 2)                     # noqa: E731
    grads = wg.grad(loss, argnums=(0, 1))
    compiled = wg.compile(grads, S, bs[0])
    for b in bs:
        x = np.linalg.solve(S, b)
        bbar = np.linalg.solve(S, 2 * x)
        got = compiled(S, b)
        assert_near(got[1], bbar, rtol=1e-11)
        assert_near(got[0], -np.outer(bbar, x), rtol=1e-11)
    assert_near(wg.vmap(grads, in_axes=(None, 0))(S, bs)[1],
                 [np.linalg.solve(S, 2 * np.linalg.solve(S, b)) for b in bs], rtol=1e-11)
    assert_near(wg.jit(wg.jacfwd(solve, argnums=1))(S, bs[0]), np.linalg.inv(S), rtol=1e-11)


def test_custom_linear_solve_refuses_what_it_cannot_solve_clearly():
    A = regular(2)
    with pytest.raises(ValueError, match="value of matvec must have the shapes of b"):
        lax.custom_linear_solve(lambda x: x[0], np.ones(2), cg)
    with pytest.raises(TypeError, match="value of matvec must have the structure of b"):
        wg.grad(lambda b: wnp.sum(lax.custom_linear_solve(
            lambda x: (x, x), b, lambda mv, b: b, symmetric=True)))(np.ones(2))
    with pytest.raises(ValueError, match="the solution <lambda> returned must have the shapes"):
        lax.custom_linear_solve(lambda x: A @ x, np.ones(2), lambda mv, b: b[0])
    with pytest.raises(TypeError, match="transpose_solve must be a function"):
        lax.custom_linear_solve(lambda x: A @ x, np.ones(2), lambda mv, b: b, "yes")
    # a solve that closes over a traced value runs on its value eagerly; traced without
    # values (compile, jit, vmap) it cannot
    with pytest.raises(ValueError, match="closes over, and that has no value here"):
        wg.jit(wg.grad(lambda A: wnp.sum(dense_solve(A, np.ones(2)))))(A)
    with pytest.raises(ValueError, match="has_aux=True .* traced without values"):
        wg.jit(lambda b: lax.custom_linear_solve(lambda x: 2 * x, b, lambda mv, b: (b / 2, 0),
                                                 has_aux=True))(np.ones(2))


# ---- against JAX --------------------------------------------------------------------------------
def _programs(jax, jnp):
    """The same JAX program, for wengert (``import wengert as jax``) and for JAX."""
    A0 = np.array([[3.0, 1.0], [0.5, 2.0]])

    def newton(f, x):
        for _ in range(30):
            x = x - jnp.linalg.solve(jax.jacobian(f)(x), f(x))
        return x

    def tangent_solve(g, y):
        return jnp.linalg.solve(jax.jacobian(g)(y), y)

    def root(a, c):
        return jax.lax.custom_root(lambda x: A0 @ x + a * x ** 3 - c, jnp.zeros(2), newton,
                                   tangent_solve)

    def linear(A, b):
        return jax.lax.custom_linear_solve(lambda x: A @ x, b,
                                           lambda mv, b: jnp.linalg.solve(A, b),
                                           lambda vm, c: jnp.linalg.solve(A.T, c))

    def tree(A, b):
        mv = lambda x: {"u": A @ x["u"], "v": 2.0 * x["v"]}             # noqa: E731
        so = lambda mv, b: {"u": jnp.linalg.solve(A, b["u"]), "v": b["v"] / 2}  # noqa: E731
        x = jax.lax.custom_linear_solve(mv, b, so, symmetric=True)
        return jnp.sum(x["u"] ** 2) + x["v"] ** 2

    root_sum = lambda a, c: jnp.sum(root(a, c) ** 2)                  # noqa: E731
    linear_sum = lambda A, b: jnp.sum(jnp.sin(linear(A, b)))          # noqa: E731
    return {
        "root": lambda a, c: root(a, c),
        "root grad": jax.grad(root_sum, argnums=(0, 1)),
        "root jvp": lambda a, c: jax.jvp(root, (a, c), (0.7, jnp.ones(2)))[1],
        "root hessian": jax.hessian(root_sum),
        "linear grad": jax.grad(linear_sum, argnums=(0, 1)),
        "linear jacfwd": jax.jacfwd(linear, argnums=(0, 1)),
        "linear hessian": jax.hessian(linear_sum, argnums=1),
        "tree grad": jax.grad(tree, argnums=(0, 1)),
    }


def test_values_and_derivatives_agree_with_jax(jax):
    import jax.numpy as jnp
    ours, theirs = _programs(wg, wnp), _programs(jax, jnp)
    a, c = 0.3, np.array([1.0, 2.0])
    A, b = regular(3), rng.normal(size=3)
    S = spd(2)
    args = {"root": (a, c), "linear": (A, b), "tree": (S, {"u": np.ones(2), "v": 3.0})}
    for name in ours:
        x, y = args[name.split()[0]]
        got, want = ours[name](x, y), theirs[name](x, y)
        got, want = (jax.tree_util.tree_leaves(t) for t in (got, want))
        assert len(got) == len(want), name
        for g, w in zip(got, want):
            assert_near(g, np.asarray(w), rtol=1e-10, atol=1e-12)


def test_a_root_in_each_step_of_a_scan():
    def chained(a):             # c <- cbrt(c x + a) over xs, one root a step
        step = lambda c, x: (cube_root(c * x + a), c)                    # noqa: E731
        return lax.scan(step, 1.0, np.array([1.0, 2.0, 3.0]))[0]

    def by_numpy(a):
        c = 1.0
        for x in (1.0, 2.0, 3.0):
            c = np.cbrt(c * x + a)
        return c
    a = rng.uniform(1.0, 5.0)
    assert_near(chained(a), by_numpy(a), rtol=1e-14)
    fd = (by_numpy(a + 1e-6) - by_numpy(a - 1e-6)) / 2e-6
    assert_near(wg.grad(chained)(a), fd, rtol=1e-8)
    assert_near(wg.jit(wg.grad(chained))(a), wg.grad(chained)(a), rtol=1e-14)
