"""wengert.lax.while_loop traced without values (wg.compile, wg.jit, wg.vmap): one `While`
node whose values equal the eager Python loop's (and, under vmap, each example's own
loop, examples finishing at different steps), JVPs against central differences and
closed forms, real JAX on the same programs, nesting with scan, and the clear refusal
of reverse mode where the number of steps is unknown."""
import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from fd import assert_close, fd_derivative, fd_jacobian
from test_loops import _runs_on_floats as runs_on_floats
from wengert import lax
from wengert.loops import While

TIGHT = dict(rtol=1e-13, atol=1e-14)


def newton_sqrt(a):
    """x <- (x + a/x)/2 from x = a until x² is a to 1e-12: sqrt(a), d/da = 1/(2 sqrt a)."""
    def body(s):
        x, k = s
        return (x + a / x) / 2.0, k + 1
    return lax.while_loop(lambda s: (abs(s[0] * s[0] - a) > 1e-12 * a) & (s[1] < 50),
                          body, (a, 0))[0]


def halve(x):
    """x / 2**k for the first k that gets below 1, and k: d/dx = 2**-k."""
    return lax.while_loop(lambda s: s[0] >= 1.0, lambda s: (s[0] / 2.0, s[1] + 1), (x, 0))


def bisect(c):
    """The root of t³ - c on [0, 4] by bisection to 1e-13: c ** (1/3)."""
    def body(s):
        lo, hi = s
        mid = (lo + hi) / 2.0
        below = mid ** 3 < c
        return wnp.where(below, mid, lo), wnp.where(below, hi, mid)
    lo, hi = lax.while_loop(lambda s: s[1] - s[0] > 1e-13, body, (0.0, 4.0))
    return (lo + hi) / 2.0


def whiles(graph):
    return [n for n in graph.live_nodes() if isinstance(n.op, While)]


def test_compiled_and_jitted_loops_are_one_node_with_the_eager_values():
    for f, args in [(newton_sqrt, [2.0, 0.3, 1e6]), (lambda x: halve(x)[0], [0.5, 3.0, 1e3]),
                    (lambda x: halve(x)[1], [0.5, 3.0, 1e3]), (bisect, [2.0, 27.0])]:
        compiled = wg.compile(f, 5.0)
        assert len(whiles(compiled.graph)) == 1
        jitted = wg.jit(f)
        for x in args:
            assert_close(compiled(x), f(x), **TIGHT)
            assert_close(jitted(x), f(x), **TIGHT)
    assert_close(wg.jit(bisect)(2.0), 2.0 ** (1 / 3), rtol=1e-12)
    assert wg.jit(halve)(100.0) == (0.78125, 7.0)
    assert wg.jit(halve)(0.25) == (0.25, 0.0)          # the test fails at once: no step


def test_the_body_is_traced_once_and_its_closure_becomes_arguments():
    calls = []

    def f(x, w):
        def body(v):
            calls.append(1)
            return v * w                               # w: a traced value closed over
        return lax.while_loop(lambda v: v < 100.0, body, x)
    compiled = wg.compile(f, 1.0, 2.0)
    assert len(calls) == 1
    assert compiled(1.0, 2.0) == 128.0 and compiled(1.0, 3.0) == 243.0
    assert compiled(500.0, 3.0) == 500.0
    assert len(calls) == 1                             # (no retrace for new values)
    node, = whiles(compiled.graph)
    assert [a.label() for a in node.args[:2]] == ["w", "x"]


def power_iteration(x):
    """The largest eigenvalue of x·A, iterating a vector until the eigenvalue settles (a
    pytree carry with an array in it)."""
    A = np.array([[2.0, 1.0], [1.0, 3.0]]) * x

    def body(s):
        v = A @ s["v"]
        return {"v": v / wnp.sqrt(v @ v), "lam": s["v"] @ v, "old": s["lam"]}
    s = lax.while_loop(lambda s: abs(s["lam"] - s["old"]) > 1e-12, body,
                       {"v": np.array([1.0, 0.0]), "lam": 1.0, "old": 0.0})
    return s["lam"]


def test_pytree_and_array_carries():
    f = power_iteration
    want = np.linalg.eigvalsh(np.array([[2.0, 1.0], [1.0, 3.0]]))[-1]
    assert_close(f(1.5), 1.5 * want, rtol=1e-10)
    assert_close(wg.jit(f)(1.5), f(1.5), **TIGHT)
    assert_close(wg.compile(wg.jacfwd(f), 1.5)(1.5), want, rtol=1e-6)


# --- forward mode ----------------------------------------------------------------------------
def test_jvps_under_compile_against_closed_forms_and_central_differences():
    d_sqrt = wg.compile(wg.jacfwd(newton_sqrt), 2.0)
    for a in [2.0, 0.3, 50.0]:
        assert_close(d_sqrt(a), 0.5 / np.sqrt(a), rtol=1e-10)
        assert_close(d_sqrt(a), fd_derivative(newton_sqrt, a), rtol=1e-6)
    d_halve = wg.jit(wg.jacfwd(lambda x: halve(x)[0]))
    for x, k in [(0.5, 0), (3.0, 2), (100.0, 7)]:
        assert d_halve(x) == 2.0 ** -k
    d_bisect = wg.jit(wg.jacfwd(bisect))
    assert d_bisect(2.0) == 0.0          # (wnp.where picks values: no derivative flows)
    out, tangent = wg.jit(lambda a: wg.jvp(newton_sqrt, (a,), (3.0,)))(4.0)
    assert_close(out, 2.0, **TIGHT)
    assert_close(tangent, 3.0 / 4.0, rtol=1e-10)


def test_forward_over_forward_gives_the_second_derivative():
    d2 = wg.compile(wg.jacfwd(wg.jacfwd(newton_sqrt)), 2.0)
    for a in [2.0, 9.0]:
        assert_close(d2(a), -0.25 * a ** -1.5, rtol=1e-8)
    assert_close(wg.jit(lambda a: wg.taylor(newton_sqrt, a, 1.0, order=3))(4.0),
                 [2.0, 0.25, -1 / 64, 1 / 512], rtol=1e-8)


def fixed_point(x, w):
    """v <- tanh(w v)/2 + x until it settles: the fixed point."""
    def body(s):
        v, _ = s
        return wnp.tanh(w @ v) / 2.0 + x, v
    return lax.while_loop(lambda s: wnp.max(wnp.abs(s[0] - s[1])) > 1e-13, body,
                          (x, x + 1.0))[0]


def test_jacfwd_of_an_array_loop_with_closed_over_weights():
    f = fixed_point
    rng = np.random.default_rng(3)
    x, w = rng.normal(size=3), rng.normal(size=(3, 3)) * 0.5
    jx, jw = wg.compile(wg.jacfwd(f, argnums=(0, 1)), x, w)(x, w)
    assert_close(jx, fd_jacobian(lambda x: f(x, w), x, 1e-6), rtol=1e-6, atol=1e-9)
    assert_close(jw, fd_jacobian(lambda w: f(x, w), w, 1e-6).reshape(3, 3, 3), rtol=1e-6,
                 atol=1e-9)
    v = f(x, w)                        # the implicit function theorem's closed form
    inner = np.diag(0.5 * (1.0 - np.tanh(w @ v) ** 2))
    assert_close(jx, np.linalg.inv(np.eye(3) - inner @ w), rtol=1e-10)


# --- vmap ------------------------------------------------------------------------------------
def test_vmap_lanes_that_finish_at_different_steps_equal_their_own_loops():
    xs = np.array([0.5, 3.0, 100.0, 1.0, 1e5])
    for f in [wg.vmap(halve), wg.jit(wg.vmap(halve))]:
        values, steps = f(xs)
        want = [halve(x) for x in xs]
        assert_close(values, [v for v, _ in want], **TIGHT)
        assert steps.tolist() == [k for _, k in want] == [0, 2, 7, 1, 17]
    a = np.array([0.01, 1.0, 2.0, 1e6])
    assert_close(wg.jit(wg.vmap(newton_sqrt))(a), [newton_sqrt(x) for x in a], **TIGHT)
    assert_close(wg.vmap(bisect)(np.array([2.0, 27.0, 0.5])),
                 [bisect(2.0), bisect(27.0), bisect(0.5)], **TIGHT)
    # jacfwd inside vmap: each example's tangent stops with it too
    assert wg.jit(wg.vmap(wg.jacfwd(lambda x: halve(x)[0])))(xs).tolist() == \
        [2.0 ** -k for k in [0, 2, 7, 1, 17]]


def test_vmap_over_a_closed_over_value_and_a_test_that_does_not_vary():
    def power(x, n):                   # the test reads only the counter and n: one loop
        return lax.while_loop(lambda s: s[1] < n, lambda s: (s[0] * x, s[1] + 1),
                              (1.0, 0.0))[0]
    xs = np.array([1.0, 2.0, 3.0])
    f = wg.jit(wg.vmap(power, in_axes=(0, None)))
    assert f(xs, 5.0).tolist() == [1.0, 32.0, 243.0] and f(xs, 2.0).tolist() == [1, 4, 9]
    node, = whiles(wg.compile(wg.vmap(power, in_axes=(0, None)), xs, 3.0).graph)
    assert node.op.n_carry == 2        # (no flag per example carried)
    # mapped over n instead: the test varies, each example runs its own count
    g = wg.jit(wg.vmap(power, in_axes=(None, 0)))
    assert g(2.0, np.array([0.0, 3.0, 10.0])).tolist() == [1.0, 8.0, 1024.0]


def test_eager_gradient_of_a_vmapped_loop_is_the_scan_of_its_steps():
    a = np.array([2.0, 9.0, 1e4])
    g = wg.grad(lambda a: wg.vmap(newton_sqrt)(a).sum())(a)
    assert_close(g, 0.5 / np.sqrt(a), rtol=1e-8)
    h = wg.hessian(lambda a: wg.vmap(newton_sqrt)(a).sum())(a[:2])
    assert_close(h, np.diag(-0.25 * a[:2] ** -1.5), rtol=1e-6, atol=1e-12)
    assert_close(wg.grad(wg.jit(newton_sqrt))(4.0), 0.25, rtol=1e-10)


# --- reverse mode without values: refused --------------------------------------------------
def test_reverse_mode_of_a_traced_loop_is_refused_clearly():
    message = (r"while_loop: reverse-mode differentiation .* number of steps is not known "
               r".*fori_loop or wg.scan.*wg.custom_root")
    with pytest.raises(ValueError, match=message):
        wg.compile(wg.grad(newton_sqrt), 2.0)
    with pytest.raises(ValueError, match=message):
        wg.jit(wg.grad(newton_sqrt))(2.0)
    with pytest.raises(ValueError, match=message):
        wg.vmap(wg.grad(newton_sqrt))(np.array([1.0, 2.0]))
    # the eager loop is differentiable in reverse mode, as before
    assert_close(wg.grad(newton_sqrt)(2.0), 0.5 / np.sqrt(2.0), rtol=1e-8)


def test_cond_fun_must_return_a_scalar():
    with pytest.raises(TypeError, match="while_loop: cond_fun's result must be a scalar"):
        wg.jit(lambda x: lax.while_loop(lambda v: v < 1.0, lambda v: v * 2.0, x))(
            np.ones(2))


# --- nesting -----------------------------------------------------------------------------------
def roots(a):
    """A while loop in each step of a scan."""
    return wg.scan(lambda c, x: (c + newton_sqrt(x * a), None), 0.0,
                   np.array([1.0, 2.0, 3.0]))[0]


def shrink(a):
    """A fori_loop (a scan) in each step of a while loop."""
    return lax.while_loop(lambda v: v > a,
                          lambda v: wg.fori_loop(0, 3, lambda i, u: u * 0.9, v), 10.0)


def nested(x):
    """A while loop in each step of a while loop."""
    def body(s):
        v, k = s
        return halve(v * 10.0)[0], k + 1
    return lax.while_loop(lambda s: s[1] < 3.0 + 0.0 * s[0], body, (x, 0.0))[0]


def test_while_inside_scan_and_scan_inside_while():
    want = np.sqrt(2.0 * np.array([1.0, 2.0, 3.0]))
    assert_close(wg.jit(roots)(2.0), want.sum(), rtol=1e-12)
    assert_close(wg.jit(wg.jacfwd(roots))(2.0), (want / 4.0).sum(), rtol=1e-9)
    assert_close(wg.jit(shrink)(1.0), shrink(1.0), **TIGHT)
    assert_close(wg.jit(shrink)(1.0), 10.0 * 0.9 ** 24, **TIGHT)
    assert_close(wg.jit(nested)(7.0), nested(7.0), **TIGHT)
    assert_close(wg.jit(wg.vmap(nested))(np.array([7.0, 0.3])), [nested(7.0), nested(0.3)],
                 **TIGHT)


# --- real JAX ----------------------------------------------------------------------------------
def jax_newton_sqrt():
    """JAX (float64: tests/conftest.py), and newton_sqrt written with it; skips where JAX
    is missing."""
    rjax = pytest.importorskip("jax")
    jnp = rjax.numpy

    def jnewton(a):
        def body(s):
            x, k = s
            return (x + a / x) / 2.0, k + 1
        return rjax.lax.while_loop(lambda s: (jnp.abs(s[0] * s[0] - a) > 1e-12 * a) &
                                   (s[1] < 50), body, (a, 0))[0]
    return rjax, jnewton


def test_agrees_with_jax_under_jit_and_vmap():
    rjax, jnewton = jax_newton_sqrt()
    a = np.array([0.01, 2.0, 9.0, 1e6])
    want = rjax.jit(rjax.vmap(jnewton))(a)
    assert_close(wg.jit(wg.vmap(newton_sqrt))(a), np.asarray(want), **TIGHT)
    want = rjax.jit(rjax.vmap(rjax.jacfwd(jnewton)))(a)
    assert_close(wg.jit(wg.vmap(wg.jacfwd(newton_sqrt)))(a), np.asarray(want), rtol=1e-12)

    def jhalve(x):
        return rjax.lax.while_loop(lambda s: s[0] >= 1.0, lambda s: (s[0] / 2.0, s[1] + 1),
                                   (x, 0))
    xs = np.array([0.5, 3.0, 100.0, 1.0, 1e5])
    jv, jk = rjax.jit(rjax.vmap(jhalve))(xs)
    v, k = wg.jit(wg.vmap(halve))(xs)
    assert_close(v, np.asarray(jv), **TIGHT)
    assert k.tolist() == np.asarray(jk).tolist()
    out, tangent = wg.jit(lambda x: wg.jvp(lambda x: halve(x)[0], (x,), (1.0,)))(100.0)
    jout, jtangent = rjax.jit(lambda x: rjax.jvp(lambda x: jhalve(x)[0], (x,), (1.0,)))(100.0)
    assert (out, tangent) == (float(jout), float(jtangent))


# --- a small scalar step runs as one while loop on Python floats, as Scan's body does -------
def _runs_on_floats(monkeypatch, on):
    """The While loops run on floats (test_loops' counter of Scan's)."""
    return runs_on_floats(monkeypatch, on, While)


def _bits(values, dtype=None):
    """Each value as (dtype, shape, bytes): equal only where the values are identical
    (with `dtype`, converted to it first: the eager loop carries a Python int as an int)."""
    return [(np.asarray(v, dtype).dtype, np.shape(v), np.asarray(v, dtype).tobytes())
            for v in (values if isinstance(values, tuple) else (values,))]


FLOAT_WHILES = {     # the loop, where to run it, the derivative of its first result
    "newton_sqrt": (newton_sqrt, [2.0, 0.3, 1e6, 1e-8], lambda a: 0.5 / np.sqrt(a)),
    "halve": (halve, [0.5, 3.0, 1e3, 0.25], lambda x: halve(x)[0] / x),
    "bisect": (bisect, [2.0, 27.0, 0.5], lambda c: 0.0),     # (selects of constants)
    "vector carry": (lambda x: lax.while_loop(
        lambda v: v[0] < 10.0, lambda v: v * wnp.array([1.5, 0.5]) + wnp.sin(v[::-1]),
        wnp.stack([x, -x]))[1], [0.7, 2.0], None),
}


@pytest.mark.parametrize("name", sorted(FLOAT_WHILES))
def test_scalar_loops_run_on_floats_with_the_array_forms_bits(name, monkeypatch):
    """Jitted and compiled, a small step's loop runs on floats, and gives bit for bit the
    values of the same loop on NumPy values and of the eager loop; so does its JVP (a
    scalar loop in turn), checked against the array form and by differences."""
    f, xs, df = FLOAT_WHILES[name]
    first = lambda x: f(x)[0] if isinstance(f(x), tuple) else f(x)     # noqa: E731
    fns = [wg.jit(f), wg.compile(f, xs[0]), wg.jit(wg.jacfwd(first))]
    runs = _runs_on_floats(monkeypatch, True)
    on_floats = [[_bits(fn(x)) for x in xs] for fn in fns]
    assert any(not r.startswith("while[jvp") for r in runs), runs
    assert any(r.startswith("while[jvp") for r in runs), runs
    monkeypatch.undo()
    runs = _runs_on_floats(monkeypatch, False)
    on_arrays = [[_bits(fn(x)) for x in xs] for fn in fns]
    assert not runs
    assert on_floats == on_arrays
    assert on_floats[0] == on_floats[1] == [_bits(f(x), float) for x in xs]    # eager's
    for x, ((_, _, d),) in zip(xs, on_floats[2]):
        want = fd_derivative(first, x) if df is None else df(x)
        assert_close(np.frombuffer(d)[0], want, rtol=1e-6 if df is None else 1e-12)


def test_jvp_of_newton_on_floats_is_the_closed_form(monkeypatch):
    runs = _runs_on_floats(monkeypatch, True)
    d = wg.jit(wg.jacfwd(newton_sqrt))
    for a in [0.3, 2.0, 1e6]:
        assert_close(d(a), 0.5 / np.sqrt(a), rtol=1e-12)
    dd = wg.jit(wg.jacfwd(wg.jacfwd(newton_sqrt)))
    assert_close(dd(2.0), -0.25 * 2.0 ** -1.5, rtol=1e-10)
    assert sum(r.startswith("while[jvp jvp") for r in runs) == 1, runs


def test_large_and_batched_loops_keep_numpy_code(monkeypatch):
    """A loop over 10,000 lanes is not written out element by element: it runs its NumPy
    code, and gives each lane's own loop's value."""
    a = np.linspace(0.1, 1e4, 10_000)
    runs = _runs_on_floats(monkeypatch, True)
    v = wg.jit(wg.vmap(newton_sqrt))
    got = v(a)
    assert not runs
    (node,) = whiles(wg.trace(wg.vmap(newton_sqrt), a))
    assert node.op._on_floats() is None
    assert_close(got[::997], [newton_sqrt(x) for x in a[::997]], **TIGHT)


def log_steps(x):
    """x <- log(x) - 1 while x > -5, and the count: from 0.5, the second log's is nan."""
    return lax.while_loop(lambda s: s[0] > -5.0,
                          lambda s: (wnp.log(s[0]) - 1.0, s[1] + 1.0), (x, 0.0))


def test_float_loop_gives_numpys_nan_where_math_raises(monkeypatch):
    """log of a negative raises in math: the loop is run again on NumPy values, which give
    nan as the eager loop does (and its number of steps is the same)."""
    f = log_steps
    runs = _runs_on_floats(monkeypatch, True)
    with np.errstate(all="ignore"):
        got = wg.jit(f)(0.5)
        want = f(0.5)
    assert runs
    assert np.isnan(got[0]) and got[1] == 2.0
    assert _bits(got) == _bits(want)
