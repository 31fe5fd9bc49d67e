"""wengert.scipy.optimize's scalar root finders beyond root_scalar: the bracketing
methods (brentq, brenth, ridder, bisect, toms748) and newton, scalar and vectorised.
Roots against closed forms and central differences to second order, the exact f′ that
newton gets, SciPy's results on plain values, compile and vmap."""
import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from fd import assert_close, check_grads, fd_derivative, fd_jacobian

so = pytest.importorskip("scipy.optimize")
from wengert.scipy import optimize as opt  # noqa: E402

BRACKETING = ["brentq", "brenth", "ridder", "bisect", "toms748"]
CUBE = lambda x, c: x ** 3 - c          # noqa: E731  (the root c^(1/3), d/dc = 1 / 3x²)


@pytest.mark.parametrize("method", BRACKETING)
def test_a_bracketed_root_against_its_closed_form(method):
    find = getattr(opt, method)
    root = lambda c: find(CUBE, 0.0, 4.0, args=(c,))     # noqa: E731
    for c in (0.5, 2.0, 9.0):
        x = root(c)
        assert_close(x, c ** (1 / 3), rtol=1e-10)
        assert_close(wg.grad(root)(c), 1 / (3 * x * x), rtol=1e-9)
        assert_close(wg.grad(root)(c), fd_derivative(root, c, 1e-5), rtol=1e-6)
    check_grads(lambda c: root(c), np.array(2.0), order=2, eps=1e-4, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("method", BRACKETING)
def test_plain_values_and_full_output_are_scipys(method):
    find, theirs = getattr(opt, method), getattr(so, method)
    assert find(CUBE, 0.0, 4.0, args=(2.0,)) == theirs(CUBE, 0.0, 4.0, args=(2.0,))
    x, r = find(CUBE, 0.0, 4.0, args=(2.0,), full_output=True)
    assert r.converged and r.root == x
    x, r = wg.jvp(lambda c: find(CUBE, 0.0, 4.0, args=(c,), full_output=True)[0], (2.0,),
                  (1.0,))
    assert_close(r, 1 / (3 * x * x), rtol=1e-9)


KEPLER = lambda E, M, e: E - e * wnp.sin(E) - M    # noqa: E731  (dE/dM = 1 / (1 - e cos E))


def test_newton_gets_the_exact_derivative():
    x, found = opt.newton(KEPLER, 1.0, args=(1.0, 0.3), full_output=True)
    secant = so.newton(lambda E: E - 0.3 * np.sin(E) - 1.0, 1.0, full_output=True)[1]
    assert_close(x, secant.root, rtol=1e-10)
    assert found.method == "newton" and secant.method == "secant"
    assert found.iterations < secant.iterations
    # with x1, the secant method as asked; a callable fprime gets the args
    assert opt.newton(KEPLER, 1.0, args=(1.0, 0.3), x1=1.1, full_output=True)[1].method \
        == "secant"
    calls = []
    opt.newton(KEPLER, 1.0, args=(1.0, 0.3),
               fprime=lambda E, M, e: calls.append(M) or 1 - e * np.cos(E))
    assert calls and set(calls) == {1.0}


def test_newton_root_against_its_closed_form_to_second_order():
    anomaly = lambda M: opt.newton(KEPLER, M, args=(M, 0.3), tol=1e-13)  # noqa: E731
    for M in (0.3, 1.0, 2.5):
        E = anomaly(M)
        assert_close(wg.grad(anomaly)(M), 1 / (1 - 0.3 * np.cos(E)), rtol=1e-10)
    # d²E/dM² = -e sin E (dE/dM)³
    E = anomaly(1.0)
    d1 = 1 / (1 - 0.3 * np.cos(E))
    assert_close(wg.grad(wg.grad(anomaly))(1.0), -0.3 * np.sin(E) * d1 ** 3, rtol=1e-8)
    check_grads(lambda e: opt.newton(KEPLER, 1.0, args=(1.0, e), tol=1e-13), np.array(0.4),
                order=2, eps=1e-5, rtol=1e-5)


def test_vectorised_newton():
    M = np.array([0.5, 1.0, 2.0, 3.0])
    solve = lambda M, e: opt.newton(KEPLER, M, args=(M, e), tol=1e-13)  # noqa: E731
    E = solve(M, 0.3)
    assert_close(E, so.newton(lambda E: E - 0.3 * np.sin(E) - M, M, tol=1e-13), rtol=1e-12)
    J = wg.jacfwd(solve)(M, 0.3)
    assert_close(J, np.diag(1 / (1 - 0.3 * np.cos(E))), rtol=1e-10, atol=1e-14)
    de = wg.jacfwd(solve, argnums=1)(M, 0.3)
    assert_close(de, fd_jacobian(lambda e: solve(M, e), 0.3, 1e-6).ravel(), rtol=1e-6)
    assert_close(wg.compile(solve, M, 0.3)(M + 0.1, 0.2), solve(M + 0.1, 0.2), rtol=1e-12)
    batched = wg.vmap(wg.grad(lambda M: opt.newton(KEPLER, M, args=(M, 0.3), tol=1e-13)))(M)
    assert_close(batched, np.diag(J), rtol=1e-10)


def quadratic_roots(x, c):
    """x0 + x1 = c, x0 x1 = 1: the roots of t² - c t + 1."""
    return [x[0] + x[1] - c, x[0] * x[1] - 1.0]


def test_fsolve_against_its_closed_form_and_scipy():
    bigger = lambda c: opt.fsolve(quadratic_roots, [2.0, 0.5], args=(c,), xtol=1e-13)[0]  # noqa
    for c in (2.5, 3.0, 5.0):
        x = bigger(c)
        assert_close(wg.grad(bigger)(c), x / (2 * x - c), rtol=1e-9)     # dx/dc
        assert_close(wg.grad(bigger)(c), fd_derivative(bigger, c, 1e-6), rtol=1e-6)
    check_grads(lambda c: opt.fsolve(quadratic_roots, [2.0, 0.5], args=(c,), xtol=1e-13),
                np.array(3.0), order=2, eps=1e-5, rtol=1e-5)
    plain = opt.fsolve(quadratic_roots, [2.0, 0.5], args=(3.0,), full_output=True)
    theirs = so.fsolve(quadratic_roots, [2.0, 0.5], args=(3.0,), full_output=True)
    assert_close(plain[0], theirs[0], rtol=1e-9)
    assert plain[2] == theirs[2] == 1 and set(theirs[1]) <= set(plain[1])
    assert plain[1]["njev"] >= 1                     # the exact Jacobian was used...
    assert plain[1]["nfev"] < theirs[1]["nfev"]      # ...where SciPy differenced


def test_fsolve_shapes_fprime_and_warnings():
    x = opt.fsolve(lambda x: x ** 2 - 2.0, np.ones((2, 2)))
    assert x.shape == (4,) and np.allclose(x, np.sqrt(2.0))          # SciPy's: 1-D
    calls = []
    opt.fsolve(quadratic_roots, [2.0, 0.5], args=(3.0,),
               fprime=lambda x, c: calls.append(c) or [[1.0, 1.0], [x[1], x[0]]])
    assert calls and set(calls) == {3.0}
    with pytest.warns(RuntimeWarning, match="not making good progress"):
        opt.fsolve(lambda x: x ** 2 + 1.0, 1.0)
    # fsolve's errors name fsolve and its own argument (fprime), not root's
    with pytest.raises(TypeError, match="^fsolve: wengert could not .* fprime=False"):
        opt.fsolve(lambda x: [float(x[0]) - 1.0], [0.0])


@pytest.mark.parametrize("tol", [1e-8, 1e-12])
def test_a_double_root_or_a_flat_minimum_raises_rather_than_a_noise_figure(tol):
    # x*(a) = 1 + √a: at a = 0 the root is double and dx/da infinite.  J = 2(x* - 1) is
    # then the solver's stopping error, and dx/da came out 6.7e7 or 5.5e11 as tol went
    # (found by QA); the docs promise LinAlgError
    f = lambda x, a: (x - 1.0) ** 2 - a
    with pytest.raises(np.linalg.LinAlgError, match="singular at the solution, or nearly"):
        wg.grad(lambda a: opt.newton(f, 2.0, args=(a,), tol=tol))(0.0)
    # a flat minimum: (x² - a)² at a = 0 has f'' = 0 at x* = 0 (dx/da came out -33)
    g = lambda x, a: (x[0] ** 2 - a) ** 2
    with pytest.raises(np.linalg.LinAlgError, match="changes by"):
        wg.grad(lambda a: opt.minimize(g, [1.0], args=(a,)).x[0])(0.0)
    # ... also where ∂F/∂x is singular in one direction only, and by forward mode
    h = lambda x, a: (x[0] ** 2 - a[0]) ** 2 + (x[1] - a[1]) ** 2
    with pytest.raises(np.linalg.LinAlgError, match="changes by"):
        wg.jacfwd(lambda a: opt.minimize(h, [1.0, 0.0], args=(a,)).x)(np.array([0.0, 1.0]))
    # near but regular: roots 1 ± 0.01 apart, dx/da = 1/(2√a) = 50 (and d²x/da² = -1/(4a^1.5))
    a = 1e-4
    solve = lambda a: opt.newton(f, 2.0, args=(a,), tol=tol)
    assert_close(wg.grad(solve)(a), 50.0, rtol=1e-6)
    assert_close(wg.grad(wg.grad(solve))(a), -0.25 / a ** 1.5, rtol=1e-5)
