"""wengert.lax.while_loop compiled to C (``wg.compile(..., backend="c")``): one C
``while`` over a function of the loop's step, whose values equal the eager Python loop's
(loops whose number of steps depends on the input, that run no step, vector and pytree
carries, a counter beside the value), its JVPs (while loops in turn) against closed
forms, central differences, the Python back-end and JAX, nesting with scan and vmap, and
the clear refusals: reverse mode, an integer carry narrower than int64 (int64 ones are
tests/test_c_integers.py's)."""
import re

import numpy as np
import pytest

import wengert as wg
from fd import assert_close, fd_derivative, fd_jacobian
from test_loops import HAVE_CC
from test_while_loop import (FLOAT_WHILES, bisect, fixed_point, halve, jax_newton_sqrt,
                             log_steps, nested, newton_sqrt, power_iteration, roots,
                             shrink, whiles)
from wengert import lax

pytestmark = pytest.mark.skipif(not HAVE_CC, reason="no C compiler on this machine")

TIGHT = dict(rtol=1e-13, atol=1e-14)
RNG = np.random.default_rng(47)


def c_compiled(f, *args):
    """f compiled to C, checked to hold its loop as a C while loop (scalarised, or in
    loop mode where its body holds arrays: cloops)."""
    compiled = wg.compile(f, *args, backend="c")
    assert re.search(r"while \((wg_)?go\d*\) {", compiled.source)
    return compiled


def counted_growth(x):
    """x grows by a step that reads the counter until it passes 10: the value and the
    number of steps (a Python int in the first carry is a float counter, as in scan)."""
    return lax.while_loop(lambda s: s[0] < 10.0,
                          lambda s: (s[0] * 1.5 + 0.1 * s[1], s[1] + 1), (x, 0))


CASES = {       # the function, the example it is compiled at, where it is run
    "newton": (newton_sqrt, 2.0, [2.0, 0.3, 1e6, 1e-8]),
    "steps depend on x": (halve, 5.0, [3.0, 1e3, 1e5, 1.0]),
    "no step": (halve, 5.0, [0.25, 0.5, -7.0]),
    "bisection": (bisect, 2.0, [2.0, 27.0, 0.5]),
    "vector carry": (FLOAT_WHILES["vector carry"][0], 0.7, [0.7, 2.0, 11.0]),
    "pytree with an array": (power_iteration, 1.5, [1.5, 0.2, 7.0]),
    "float and counter": (counted_growth, 1.0, [1.0, 0.01, 9.9, 10.0]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_c_while_loops_equal_the_eager_loops(name):
    f, example, points = CASES[name]
    compiled = c_compiled(f, example)
    assert len(whiles(compiled.graph)) == 1
    for x in points:
        assert_close(compiled(x), f(x), **TIGHT)


def test_the_number_of_steps_is_the_eager_loops_and_zero_where_the_test_fails_at_once():
    compiled = c_compiled(halve, 5.0)
    for x, k in [(0.25, 0), (0.5, 0), (3.0, 2), (100.0, 7), (1e5, 17)]:
        assert compiled(x) == halve(x) == (x / 2.0 ** k, k)
    counted = c_compiled(counted_growth, 1.0)
    for x in RNG.uniform(0.01, 12.0, size=5):
        value, steps = counted(x)
        want = counted_growth(x)
        assert steps == want[1] and type(steps) is float
        assert_close(value, want[0], **TIGHT)


def test_c_source_is_one_loop_with_a_function_for_the_step():
    source = c_compiled(newton_sqrt, 2.0).source
    assert source.count("while (") == 1
    assert "static void wg_newton_sqrt_loop1(" in source


def test_nan_where_numpy_gives_nan():
    """C's log of a negative is nan, as NumPy's: the loop goes on as the eager one does."""
    with np.errstate(all="ignore"):
        got, want = c_compiled(log_steps, 0.5)(0.5), log_steps(0.5)
    assert np.isnan(got[0]) and np.isnan(want[0]) and got[1] == want[1] == 2.0


# --- forward mode: the JVP of a while loop is a while loop -----------------------------------
def test_jacfwd_in_c_against_closed_forms_differences_and_the_python_back_end():
    d_sqrt = c_compiled(wg.jacfwd(newton_sqrt), 2.0)
    d_python = wg.compile(wg.jacfwd(newton_sqrt), 2.0)
    assert [n.op.name for n in whiles(d_sqrt.graph)] == ["while[jvp body]"]
    for a in RNG.uniform(0.1, 50.0, size=4):
        assert_close(d_sqrt(a), 0.5 / np.sqrt(a), rtol=1e-12)
        assert_close(d_sqrt(a), fd_derivative(newton_sqrt, a), rtol=1e-6)
        assert_close(d_sqrt(a), d_python(a), **TIGHT)
    d_halve = c_compiled(wg.jacfwd(lambda x: halve(x)[0]), 5.0)
    for x, k in [(0.5, 0), (3.0, 2), (100.0, 7)]:
        assert d_halve(x) == 2.0 ** -k
    d_power = c_compiled(wg.jacfwd(power_iteration), 1.5)
    want = np.linalg.eigvalsh(np.array([[2.0, 1.0], [1.0, 3.0]]))[-1]
    for x in RNG.uniform(0.5, 3.0, size=3):
        assert_close(d_power(x), want, rtol=1e-9)
        assert_close(d_power(x), fd_derivative(power_iteration, x, 1e-5), rtol=1e-7)
    jvp = c_compiled(lambda a: wg.jvp(newton_sqrt, (a,), (3.0,)), 4.0)
    out, tangent = jvp(4.0)
    assert_close(out, 2.0, **TIGHT)
    assert_close(tangent, 3.0 / 4.0, rtol=1e-12)


def test_second_derivative_is_a_while_loop_of_a_while_loops_jvp():
    d2 = c_compiled(wg.jacfwd(wg.jacfwd(newton_sqrt)), 2.0)
    assert [n.op.name for n in whiles(d2.graph)] == ["while[jvp jvp body]"]
    for a in RNG.uniform(0.5, 20.0, size=3):
        assert_close(d2(a), -0.25 * a ** -1.5, rtol=1e-9)
        assert_close(d2(a), fd_derivative(wg.jacfwd(newton_sqrt), a, 1e-5), rtol=1e-6)


def test_jacfwd_of_a_vector_loop_with_closed_over_weights():
    x, w = RNG.normal(size=3), RNG.normal(size=(3, 3)) * 0.5
    compiled = c_compiled(wg.jacfwd(fixed_point, argnums=(0, 1)), x, w)
    assert_close(compiled(x, w)[0], wg.compile(wg.jacfwd(fixed_point), x, w)(x, w),
                 rtol=1e-12, atol=1e-14)
    for _ in range(2):
        x, w = RNG.normal(size=3), RNG.normal(size=(3, 3)) * 0.5
        jx, jw = compiled(x, w)
        assert_close(jx, fd_jacobian(lambda x: fixed_point(x, w), x, 1e-6), rtol=1e-6,
                     atol=1e-9)
        assert_close(jw, fd_jacobian(lambda w: fixed_point(x, w), w, 1e-6).reshape(3, 3, 3),
                     rtol=1e-6, atol=1e-9)
        v = fixed_point(x, w)         # the implicit function theorem's closed form
        inner = np.diag(0.5 * (1.0 - np.tanh(w @ v) ** 2))
        assert_close(jx, np.linalg.inv(np.eye(3) - inner @ w), rtol=1e-10)


# --- nesting and vmap --------------------------------------------------------------------------
NESTED = {
    "scan in while": (shrink, 1.0, [1.0, 0.05, 20.0]),
    "while in scan": (roots, 2.0, [2.0, 0.7]),
    "while in while": (nested, 7.0, [7.0, 0.3]),
    "vmap, lanes ending apart": (wg.vmap(halve), np.ones(5), [np.array([0.5, 3.0, 100.0,
                                                                        1.0, 1e5])]),
    "vmap of jacfwd": (wg.vmap(wg.jacfwd(newton_sqrt)), np.ones(4),
                       [np.array([0.01, 1.0, 2.0, 1e6])]),
}


@pytest.mark.parametrize("name", sorted(NESTED))
def test_nested_and_batched_loops_in_c(name):
    f, example, points = NESTED[name]
    compiled = c_compiled(f, example)
    for x in points:
        assert_close(compiled(x), f(x), **TIGHT)


def test_jacfwd_of_a_while_loop_inside_a_scan():
    d = c_compiled(wg.jacfwd(roots), 2.0)
    for a in [2.0, 0.7]:
        assert_close(d(a), (np.sqrt(a * np.array([1.0, 2.0, 3.0])) / (2 * a)).sum(),
                     rtol=1e-12)
        assert_close(d(a), fd_derivative(roots, a), rtol=1e-6)


# --- refusals ---------------------------------------------------------------------------------
def test_reverse_mode_is_refused_as_under_the_python_back_end():
    message = (r"while_loop: reverse-mode differentiation .* number of steps is not known "
               r".*fori_loop or wg.scan.*wg.custom_root")
    for transform in (wg.grad, wg.jacrev):
        with pytest.raises(ValueError, match=message):
            wg.compile(transform(newton_sqrt), 2.0, backend="c")


def test_an_int64_carry_is_computed_and_a_narrower_one_refused_naming_the_body():
    def f(x, zero):                   # np.int64: an integer, where a Python int is a float
        return lax.while_loop(lambda s: s[0] >= 1.0, lambda s: (s[0] / 2.0, s[1] + 1),
                              (x, zero))
    c = wg.compile(f, 3.0, np.int64(0), backend="c")
    assert "int64_t" in c.source
    for x in (3.0, 0.5, 1e300):
        got, want = c(x, np.int64(0)), wg.compile(f)(x, np.int64(0))
        assert got == want and type(got[1]) is type(want[1]) is np.int64
    with pytest.raises(ValueError, match=r"dtype int32 \(add\) \(C computes float64, int64 "
                                         r"and bool values\), in the body of "
                                         r"while\[<lambda>\]: use backend='python'"):
        wg.compile(f, 3.0, np.int32(0), backend="c")
    assert wg.compile(f, 3.0, np.int32(0))(3.0, np.int32(0)) == (0.75, 2)   # (Python's)


# --- real JAX -------------------------------------------------------------------------------
def test_agrees_with_jax_jit():
    rjax, jnewton = jax_newton_sqrt()
    value, d = c_compiled(newton_sqrt, 2.0), c_compiled(wg.jacfwd(newton_sqrt), 2.0)
    jvalue, jd = rjax.jit(jnewton), rjax.jit(rjax.jacfwd(jnewton))
    for a in [0.01, 2.0, 9.0, 1e6]:
        assert_close(value(a), float(jvalue(a)), **TIGHT)
        assert_close(d(a), float(jd(a)), rtol=1e-12)
