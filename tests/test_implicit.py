"""wg.custom_root: the derivative of a solver's solution by the implicit function theorem,
against closed forms and central differences of the solver itself, to second order;
composition with jacfwd, vmap and compile; clear errors."""
import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from fd import assert_close, check_grads


@wg.custom_root(lambda x, a: x * x - a)
def newton_sqrt(x0, a):
    x = x0
    for _ in range(60):
        x = 0.5 * (x + a / x)
    return x


def test_plain_values_are_the_solvers_own():
    calls = []

    @wg.custom_root(lambda x, a: x - a)
    def solve(x0, a):
        calls.append((x0, a))
        return ["as", "returned"]               # (not even a number: plain is untouched)
    assert solve(1.0, 2.0) == ["as", "returned"] and calls == [(1.0, 2.0)]


def test_scalar_root_closed_forms_to_third_order():
    a = 2.0
    assert_close(newton_sqrt(1.0, a), np.sqrt(a), rtol=1e-15)
    d = lambda f: wg.grad(f, argnums=1)                   # noqa: E731
    assert_close(d(newton_sqrt)(1.0, a), 0.5 * a ** -0.5, rtol=1e-14)
    assert_close(d(d(newton_sqrt))(1.0, a), -0.25 * a ** -1.5, rtol=1e-13)
    assert_close(d(d(d(newton_sqrt)))(1.0, a), 0.375 * a ** -2.5, rtol=1e-12)
    assert wg.grad(newton_sqrt, argnums=0)(1.0, a) == 0.0      # nearby starts: same root
    assert wg.jvp(lambda a: newton_sqrt(1.0, a), (a,), (1.0,))[1] == \
        pytest.approx(0.5 * a ** -0.5, rel=1e-14)


def markov_condition(p, P):
    return wnp.concatenate([(p @ P - p)[1:], wnp.sum(p, keepdims=True) - 1])


@wg.custom_root(markov_condition)
def steady_state(p0, P):
    p = p0
    for _ in range(2000):
        p = p @ P
    return p / p.sum()


def random_chain(n, seed):
    rng = np.random.default_rng(seed)
    P = rng.random((n, n)) + 0.1
    return P / P.sum(axis=1, keepdims=True)


def test_stationary_distribution_against_differences_of_the_solver():
    P = random_chain(4, 0)
    p0 = np.full(4, 0.25)
    f = lambda P: steady_state(p0, P)                      # noqa: E731
    jac = wg.jacrev(f)(P)
    assert jac.shape == (4, 4, 4)
    rng = np.random.default_rng(1)
    for _ in range(3):
        # (along perturbations that keep P stochastic: off them the power iteration and
        # the condition p P = p describe different things)
        v = rng.normal(size=(4, 4))
        v -= v.mean(axis=1, keepdims=True)
        h = 1e-6
        fd = (steady_state(p0, P + h * v) - steady_state(p0, P - h * v)) / (2 * h)
        assert_close(np.tensordot(jac, v, axes=2), fd, rtol=1e-6, atol=1e-9)
    assert_close(wg.jacfwd(f)(P), jac, rtol=1e-10, atol=1e-13)


def test_nonlinear_system_to_second_order():
    # tanh(x) + A x = b(θ), solved by Newton's method in plain NumPy
    A = np.array([[3.0, 0.5, 0.0], [0.2, 2.5, 0.3], [0.0, 0.4, 2.0]])

    def F(x, theta):
        return wnp.tanh(x) + A @ x - wnp.stack([wnp.sin(theta[0]), theta[1] * theta[2],
                                                 theta[0] ** 2])

    @wg.custom_root(F)
    def solve(x0, theta):
        x = x0
        for _ in range(40):
            r = np.tanh(x) + A @ x - np.array([np.sin(theta[0]), theta[1] * theta[2],
                                               theta[0] ** 2])
            x = x - np.linalg.solve(np.diag(1 - np.tanh(x) ** 2) + A, r)
        return x
    theta = np.array([0.7, -0.4, 1.3])
    check_grads(lambda th: solve(np.zeros(3), th), theta, order=2, eps=1e-5, rtol=1e-6,
                atol=1e-9)


def test_pytree_parameters_and_held_constants():
    def cond(x, p):
        assert p["name"] == "shifted"
        return x ** 3 + p["k"] * x - p["c"]

    @wg.custom_root(cond)
    def solve(x0, p):
        x = x0
        for _ in range(60):
            x = x - (x ** 3 + p["k"] * x - p["c"]) / (3 * x ** 2 + p["k"])
        return x
    c = np.array([1.0, 5.0])
    x = solve(np.ones(2), {"k": 2.0, "c": c, "name": "shifted"})
    gk, gc = wg.grad(lambda k, c: wnp.sum(solve(np.ones(2), {"k": k, "c": c,
                                                             "name": "shifted"})),
                     argnums=(0, 1))(2.0, c)
    # 3x² ẋ + k ẋ + x k̇ = ċ:  dx/dc = 1/(3x² + k), dx/dk = -x/(3x² + k)
    assert_close(gc, 1 / (3 * x ** 2 + 2.0), rtol=1e-12)
    assert_close(gk, np.sum(-x / (3 * x ** 2 + 2.0)), rtol=1e-12)


def test_vmap_and_compile():
    a = np.array([2.0, 3.0, 5.0])
    assert_close(wg.vmap(lambda a: newton_sqrt(1.0, a))(a), np.sqrt(a), rtol=1e-15)
    assert_close(wg.vmap(wg.grad(newton_sqrt, argnums=1), in_axes=(None, 0))(1.0, a),
                 0.5 / np.sqrt(a), rtol=1e-13)
    compiled = wg.compile(wg.grad(newton_sqrt, argnums=1), 1.0, 2.0)
    assert_close(compiled(1.0, 7.0), 0.5 / np.sqrt(7.0), rtol=1e-13)


# ---- errors ------------------------------------------------------------------------------
def test_condition_of_the_wrong_size():
    @wg.custom_root(lambda x, a: wnp.stack([x[0] - a, x[1] - a, x[0] * x[1]]))
    def solve(x0, a):
        return np.full(2, a)
    with pytest.raises(ValueError, match="condition of solve returned 3 values for an x of 2"):
        wg.grad(lambda a: solve(np.zeros(2), a)[0])(1.0)


def test_solver_result_of_the_wrong_size():
    @wg.custom_root(lambda x, a: x - a)
    def solve(x0, a):
        return np.full(3, a)
    with pytest.raises(ValueError, match="solve returned 3 numbers for an x0 of 2"):
        wg.grad(lambda a: solve(np.zeros(2), a)[0])(1.0)


def test_closure_over_a_traced_value():
    def outer(a, b):
        @wg.custom_root(lambda x, a: x - a - b)
        def solve(x0, a):
            return x0 * 0 + a + b               # reads b, not given: its derivative is lost
        return solve(np.zeros(1), a)[0]
    with pytest.raises(ValueError, match="closes over.*pass that value as an argument"):
        wg.grad(outer, argnums=(0, 1))(1.0, 2.0)
    # a solver called on plain arguments runs as it is: its own operations differentiate
    inner = lambda b: wg.custom_root(lambda x: x - b)(lambda x0: x0 * 0 + b)(0.0)  # noqa
    assert wg.grad(inner)(2.0) == 1.0


def test_singular_condition_has_no_derivative():
    @wg.custom_root(lambda x, a: wnp.stack([x[0] + x[1] - a, 2 * x[0] + 2 * x[1] - 2 * a]))
    def solve(x0, a):
        return np.array([a, 0.0])
    with pytest.raises(np.linalg.LinAlgError, match="singular at the solution"):
        wg.grad(lambda a: solve(np.zeros(2), a)[0])(1.0)


def test_condition_must_be_callable():
    with pytest.raises(TypeError, match="needs a condition function"):
        wg.custom_root(3.0)


# ---- Taylor mode ------------------------------------------------------------------------
@pytest.mark.parametrize("linear_solve", ["dense", "cg"])
def test_taylor_coefficients_of_a_solution_closed_form(linear_solve):
    cube = wg.custom_root(lambda x, a: x ** 3 - a, linear_solve=linear_solve)(
        lambda x0, a: np.cbrt(a))
    a = 8.0
    # d^k/da^k a^(1/3): 1/3 a^(-2/3), -2/9 a^(-5/3), 10/27 a^(-8/3), -80/81 a^(-11/3)
    closed = [a ** (1 / 3), a ** (-2 / 3) / 3, -2 / 9 * a ** (-5 / 3), 10 / 27 * a ** (-8 / 3),
              -80 / 81 * a ** (-11 / 3)]
    assert_close(wg.derivatives(lambda a: cube(1.0, a), order=4)(a), closed, rtol=1e-12,
                 atol=0)


def test_taylor_of_a_vector_solution_against_nested_jvps():
    m = np.array([[2.0, 0.3, 0.0], [0.1, 1.5, 0.2], [0.0, 0.4, 1.0]])

    @wg.custom_root(lambda x, th: m @ x + x ** 3 / 3 - wnp.sin(th))
    def solve(x0, th):
        x = x0
        for _ in range(60):
            x = x - np.linalg.solve(m + np.diag(x ** 2), m @ x + x ** 3 / 3 - np.sin(th))
        return x
    f = lambda th: solve(np.zeros(3), th)                          # noqa: E731
    th, v = np.array([0.5, -0.7, 0.2]), np.array([1.0, 0.3, -0.5])
    coefs = wg.taylor(f, th, v, order=3)
    d1 = lambda th: wg.jvp(f, (th,), (v,))[1]                      # noqa: E731
    d2 = lambda th: wg.jvp(d1, (th,), (v,))[1]                     # noqa: E731
    d3 = wg.jvp(d2, (th,), (v,))[1]
    assert_close(coefs[1], d1(th), rtol=1e-10, atol=1e-12)
    assert_close(2 * coefs[2], d2(th), rtol=1e-9, atol=1e-12)
    assert_close(6 * coefs[3], d3, rtol=1e-8, atol=1e-11)
