"""wengert.scipy.optimize.linprog: derivatives of a linear program's solution in every
piece of its data against central differences and closed forms (the inverse of the
binding rows, HiGHS's own dual values as shadow prices), second order in the
constraint matrix; active sets that change under compile and vmap; warnings and errors
where there is no derivative to give."""
import numpy as np
import pytest

import wengert as wg
from fd import assert_close, check_grads, fd_jacobian

so = pytest.importorskip("scipy.optimize")
from wengert.scipy.optimize import linprog  # noqa: E402

RNG = np.random.default_rng(5)


def random_lp(n=4, m=7, seed=0):
    """A feasible, bounded LP with a unique vertex solution: positive rows (x ≥ 0 keeps
    every row bounded), right-hand sides that admit x = 0, one equality row through a
    point inside."""
    rng = np.random.default_rng(seed)
    A = rng.uniform(0.1, 1.0, (m, n))
    b = rng.uniform(1.0, 2.0, m)
    c = -rng.uniform(0.5, 1.0, n)
    A_eq = rng.normal(size=(1, n))
    b_eq = A_eq @ np.full(n, 0.1)
    return c, A, b, A_eq, b_eq


LP = random_lp()


def solution(c, A, b, A_eq, b_eq):
    return linprog(c, A_ub=A, b_ub=b, A_eq=A_eq, b_eq=b_eq).x


# ---- first order: every argument against central differences ---------------------------
@pytest.mark.parametrize("k", range(5))
def test_every_argument_against_central_differences(k):
    J = wg.jacfwd(solution, argnums=k)(*LP)
    fd = fd_jacobian(lambda v: solution(*LP[:k], v, *LP[k + 1:]), LP[k], 1e-6)
    assert_close(J, fd.reshape(J.shape), rtol=1e-6, atol=1e-8)
    assert_close(wg.jacrev(solution, argnums=k)(*LP), J, rtol=1e-10, atol=1e-12)


def test_a_vertex_moves_with_the_inverse_of_its_binding_rows():
    """x = B⁻¹ b_B at a nondegenerate vertex (B the rows that hold): dx/db_B = B⁻¹, and
    dx/dc = 0 (the vertex stays optimal for small changes of the costs)."""
    c, A, b, A_eq, b_eq = LP
    found = so.linprog(c, A_ub=A, b_ub=b, A_eq=A_eq, b_eq=b_eq)
    ub = np.flatnonzero(found.ineqlin.residual < 1e-9)
    lower = np.flatnonzero(found.x < 1e-9)
    B = np.vstack([A[ub], A_eq, np.eye(4)[lower]])
    assert B.shape == (4, 4)                              # a nondegenerate vertex
    inv = np.linalg.inv(B)
    assert_close(wg.jacfwd(solution, argnums=2)(*LP)[:, ub], inv[:, :len(ub)], rtol=1e-9)
    assert_close(np.delete(wg.jacfwd(solution, argnums=2)(*LP), ub, axis=1), 0.0, atol=1e-12)
    assert_close(wg.jacfwd(solution, argnums=4)(*LP)[:, 0], inv[:, len(ub)], rtol=1e-9)
    assert_close(wg.jacfwd(solution, argnums=0)(*LP), 0.0, atol=1e-12)


def test_shadow_prices_are_highs_dual_values():
    """The envelope theorem: d fun / d b is the multiplier, which HiGHS reports as the
    marginals; d fun / dc is x."""
    c, A, b, A_eq, b_eq = LP
    found = so.linprog(c, A_ub=A, b_ub=b, A_eq=A_eq, b_eq=b_eq)
    fun = lambda *a: linprog(a[0], A_ub=a[1], b_ub=a[2], A_eq=a[3], b_eq=a[4]).fun  # noqa
    gc, gb, gbeq = wg.grad(fun, argnums=(0, 2, 4))(*LP)
    assert_close(gb, found.ineqlin.marginals, rtol=1e-9, atol=1e-12)
    assert_close(gbeq, found.eqlin.marginals, rtol=1e-9, atol=1e-12)
    assert_close(gc, found.x, rtol=1e-9, atol=1e-12)


def test_bounds_given_and_traced():
    """An upper bound that holds moves its variable one for one; the marginals of the
    bounds are d fun / d bound."""
    c = np.array([-1.0, -2.0])
    A, b = np.array([[1.0, 1.0], [1.0, -1.0]]), np.array([4.0, 1.0])

    def solve(hi):
        return linprog(c, A_ub=A, b_ub=b, bounds=[(0.0, hi[0]), (-1.0, hi[1])])

    hi = np.array([3.0, 2.5])
    found = so.linprog(c, A_ub=A, b_ub=b, bounds=[(0.0, 3.0), (-1.0, 2.5)])
    assert_close(solve(hi).x, found.x, rtol=1e-12)
    J = wg.jacfwd(lambda hi: solve(hi).x)(hi)
    assert_close(J, fd_jacobian(lambda hi: solve(hi).x, hi, 1e-6), rtol=1e-6, atol=1e-9)
    assert_close(J[1], [0.0, 1.0], atol=1e-12)                 # x1 sits on its bound
    assert_close(wg.grad(lambda hi: solve(hi).fun)(hi), found.upper.marginals, rtol=1e-9,
                 atol=1e-12)


def test_one_pair_of_bounds_for_all_and_a_fixed_variable():
    c = np.array([1.0, -1.0, 0.5])
    A, b = np.array([[1.0, 2.0, 1.0]]), np.array([5.0])
    pair = lambda b: linprog(c, A_ub=A, b_ub=b, bounds=(-1.0, 2.0)).x  # noqa: E731
    assert_close(pair(b), so.linprog(c, A_ub=A, b_ub=b, bounds=(-1.0, 2.0)).x, atol=1e-12)
    assert_close(wg.jacfwd(pair)(b), fd_jacobian(pair, b, 1e-6), rtol=1e-6, atol=1e-9)
    # x0 = b - 0.5 on the row (x2 is fixed at 0.5), x1 on its lower bound
    costs, bounds = np.array([-1.0, -1.0, 0.5]), [(None, 2.0), (0.0, 1.0), (0.5, 0.5)]
    fixed = lambda b: linprog(costs, A_ub=A, b_ub=b, bounds=bounds).x  # noqa: E731
    b = np.array([2.0])
    assert_close(fixed(b), so.linprog(costs, A_ub=A, b_ub=b, bounds=bounds).x, atol=1e-12)
    J = wg.jacfwd(fixed)(b)
    assert_close(J, fd_jacobian(fixed, b, 1e-6), rtol=1e-6, atol=1e-9)
    assert_close(J, [[1.0], [0.0], [0.0]], atol=1e-12)          # the fixed one stays


def test_slack_and_con_are_traced():
    c, A, b, A_eq, b_eq = LP
    slack = lambda b: linprog(c, A_ub=A, b_ub=b, A_eq=A_eq, b_eq=b_eq).slack  # noqa: E731
    found = so.linprog(c, A_ub=A, b_ub=b, A_eq=A_eq, b_eq=b_eq)
    assert_close(slack(b), found.slack, atol=1e-9)
    assert_close(wg.jacfwd(slack)(b), fd_jacobian(slack, b, 1e-6), rtol=1e-6, atol=1e-8)
    con = lambda beq: linprog(c, A_ub=A, b_ub=b, A_eq=A_eq, b_eq=beq).con  # noqa: E731
    assert_close(con(b_eq), 0.0, atol=1e-9)
    assert_close(wg.jacfwd(con)(b_eq), 0.0, atol=1e-9)         # it keeps holding


# ---- second order: x = B⁻¹ b is nonlinear in the rows ------------------------------------
def test_second_order_in_the_constraint_rows():
    c, A, b, A_eq, b_eq = LP
    check_grads(lambda A, A_eq: solution(c, A, b, A_eq, b_eq), A, A_eq, order=2, eps=1e-6,
                rtol=1e-5, atol=1e-7)


def test_hessian_of_the_optimal_value_in_b_is_zero_inside_a_piece():
    """The optimal value is piecewise linear in b: zero curvature where the vertex's rows
    stay the same."""
    c, A, b, A_eq, b_eq = LP
    fun = lambda b: linprog(c, A_ub=A, b_ub=b, A_eq=A_eq, b_eq=b_eq).fun  # noqa: E731
    assert_close(wg.hessian(fun)(b), np.zeros((7, 7)), atol=1e-9)


# ---- transformations: the binding rows are found at run time -----------------------------
FACTORY = (np.array([-3.0, -5.0]), np.array([[1.0, 2.0], [3.0, 2.0]]))


def factory(b):
    return linprog(FACTORY[0], A_ub=FACTORY[1], b_ub=b).x


def test_compiled_derivative_follows_a_change_of_binding_rows():
    b = np.array([14.0, 18.0])          # both machines bind
    compiled = wg.compile(wg.jacfwd(factory), b)
    assert_close(compiled(b), np.linalg.inv(FACTORY[1]), rtol=1e-9)
    other = np.array([14.0, 60.0])      # the first machine and x₁ ≥ 0 bind: x = (14, 0)
    assert_close(compiled(other), wg.jacfwd(factory)(other), atol=1e-12)
    assert_close(compiled(other), [[1.0, 0.0], [0.0, 0.0]], atol=1e-12)


def test_vmap_with_different_binding_rows_per_example():
    bs = np.array([[14.0, 18.0], [14.0, 60.0], [30.0, 18.0]])
    batched = wg.vmap(wg.jacfwd(factory))(bs)
    for b, d in zip(bs, batched):
        assert_close(d, wg.jacfwd(factory)(b), atol=1e-12)


# ---- plain values, errors and warnings --------------------------------------------------
def test_plain_values_are_scipys_call():
    c, A, b, A_eq, b_eq = LP
    got = linprog(c, A_ub=A, b_ub=b, A_eq=A_eq, b_eq=b_eq)
    want = so.linprog(c, A_ub=A, b_ub=b, A_eq=A_eq, b_eq=b_eq)
    assert type(got) is type(want) and got.keys() == want.keys()
    assert_close(got.x, want.x, rtol=0, atol=0)


def test_an_empty_block_of_rows_is_no_constraint():
    # (SciPy takes A_ub of shape (0, n); the traced solve failed in a reshape of size 0)
    c = np.array([-1.0, -2.0])
    box = lambda u: linprog(c, A_ub=np.zeros((0, 2)), b_ub=np.zeros(0),        # noqa: E731
                            bounds=(0, u)).x
    theirs = so.linprog(c, A_ub=np.zeros((0, 2)), b_ub=np.zeros(0), bounds=(0, 1.5)).x
    assert_close(box(1.5), theirs)
    assert_close(wg.jacfwd(box)(1.5), fd_jacobian(box, 1.5, 1e-4)[..., 0], atol=1e-8)


def test_infeasible_and_unbounded_problems_raise():
    with pytest.raises(ValueError, match="infeasible.*no solution to differentiate"):
        wg.grad(lambda b: linprog([1.0], A_ub=[[1.0]], b_ub=b).fun)(np.array([-1.0]))
    with pytest.raises(ValueError, match="unbounded.*no solution to differentiate"):
        wg.grad(lambda c: linprog(c, bounds=(None, None)).fun)(np.array([1.0]))


def test_shapes_that_do_not_fit_name_both():
    with pytest.raises(ValueError, match=r"A_ub of shape \(2, 3\) and b_ub of shape \(3,\) "
                                         r"do not fit c of shape \(2,\)"):
        wg.grad(lambda c: linprog(c, A_ub=np.ones((2, 3)), b_ub=np.ones(3)).fun)(np.ones(2))
    with pytest.raises(ValueError, match="b_eq is given without A_eq"):
        wg.grad(lambda c: linprog(c, b_eq=[1.0]).fun)(np.ones(1))
    with pytest.raises(ValueError, match="bounds must be one .* or 3 of them"):
        wg.grad(lambda c: linprog(c, bounds=[(0, 1), (0, 1)]).fun)(np.ones(3))


def test_mixed_integer_programs_are_refused_on_traced_values():
    with pytest.raises(NotImplementedError, match="mixed-integer program"):
        wg.grad(lambda c: linprog(c, bounds=(0, 3), integrality=[1]).fun)(np.array([1.0]))


def test_a_degenerate_vertex_warns():
    # three rows hold at (1, 1) in two dimensions: the vertex is degenerate
    A, b = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), np.array([1.0, 1.0, 2.0])
    with pytest.warns(RuntimeWarning, match="linearly dependent|zero multiplier"):
        try:
            wg.jacfwd(lambda b: linprog([-1.0, -1.0], A_ub=A, b_ub=b).x)(b)
        except np.linalg.LinAlgError:
            pass                        # (and the KKT matrix may be singular outright)


def test_an_optimum_that_is_not_unique_warns():
    # c is parallel to the binding row: every point of an edge is optimal
    with pytest.warns(RuntimeWarning, match="zero multiplier"):
        try:
            wg.jacfwd(lambda b: linprog([-1.0, -1.0], A_ub=[[1.0, 1.0]], b_ub=b,
                                        bounds=(0, 3)).x)(np.array([2.0]))
        except np.linalg.LinAlgError:
            pass


@pytest.mark.parametrize("slack", [2e-5, 1e-6])
@pytest.mark.parametrize("solver", ["linprog", "SLSQP"])
def test_a_redundant_row_near_the_vertex_is_not_taken_for_one_that_holds(solver, slack):
    # Two rows hold at x* = (0.5, 0.5) with multipliers 1 and 0.3; a third, their sum,
    # misses by `slack`.  All three are near enough to be candidates, and a fit of the
    # multipliers over all of them put weight on the redundant row and none on one that
    # holds: dx/db came out O(1) wrong, with a warning about weak activity (found by QA).
    import warnings
    from wengert.scipy.optimize import minimize
    B = np.array([[1.0, 0.25], [0.65, -0.2]])
    c = -(B.T @ np.array([1.0, 0.3]))
    A = np.vstack([B, B[0] + B[1]])
    b = np.r_[B @ [0.5, 0.5], (B[0] + B[1]) @ [0.5, 0.5] + slack]

    def solve(b):
        if solver == "linprog":
            return linprog(c, A_ub=A, b_ub=b, bounds=(None, None)).x
        return minimize(lambda x: c @ x, np.zeros(2), method="SLSQP",
                        constraints={"type": "ineq", "fun": lambda x, b: b - A @ x,
                                     "args": (b,)}, options={"ftol": 1e-14}).x
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        J = wg.jacfwd(solve)(b)
    assert_close(J, np.c_[np.linalg.inv(B), np.zeros(2)], rtol=1e-8, atol=1e-8)


def test_a_redundant_row_near_a_vertex_is_no_singular_system():
    # the same geometry with other costs raised LinAlgError ("a double root, a flat
    # minimum") although the vertex (1, 1) is nondegenerate
    A = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    J = wg.jacfwd(lambda b: linprog([-1.0, -3.0], A_ub=A, b_ub=b, bounds=(None, None)).x)(
        np.array([1.0, 1.0, 2.0 + 1e-5]))
    assert_close(J, [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], atol=1e-10)
