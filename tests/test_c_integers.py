"""int64 and bool values in C (``wg.compile(..., backend="c")``): typed temporaries, NumPy's
integer arithmetic bit for bit (wrap-around, floor division and remainder with NumPy's
signs, its 0 for a division by zero, astype's truncation), int64 arguments and results
that keep every bit, and integer loop carries: fori_loop with a traced number of steps,
while loops counting, scans carrying an integer state; their forward-mode derivatives
against central differences; and the clear refusals of what C does not write.

Every value is checked exactly against plain NumPy (or Python's integers) and against the
Python back-end."""
import platform

import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from fd import assert_close, fd_derivative
from test_loops import HAVE_CC
from wengert import lax
from wengert.tree import flatten

pytestmark = pytest.mark.skipif(not HAVE_CC, reason="no C compiler on this machine")

I = np.int64
MIN, MAX = -2 ** 63, 2 ** 63 - 1
EDGES = [0, 1, -1, 2, -2, 7, -7, 3037000500, -3037000500, 2 ** 62, MIN, MAX, MIN + 1]
# int64s whose bits are nans as doubles (-1 is a quiet nan's, 0x7FF0000000000001 a
# signalling one's): they must come through the arrays of doubles unchanged
NAN_BITS = [-1, MIN, 0x7FF0000000000001, 0x7FF8000000000000, -2 ** 52]
X86 = platform.machine().lower() in ("x86_64", "amd64")


def numbers(tree):
    """The Python back-end's results with its 0-d arrays as scalars (its NumPy code's
    ``where`` gives one)."""
    leaves, tree = flatten(tree)
    return [v[()] if isinstance(v, np.ndarray) and v.shape == () else v for v in leaves]


def c_compiled(f, *args):
    compiled = wg.compile(f, *args, backend="c")
    assert compiled.entry.flavour == "c"
    return compiled


def assert_same(got, want):
    """Exactly equal pytrees: the same values (nans where nans), dtypes and result types
    (a 0-d int64 is a NumPy int64, a float64 a Python float, a bool a Python bool)."""
    got, want = flatten(got)[0], flatten(want)[0]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, np.ndarray) and w.shape == ():
            w = w[()]
        if type(w) is np.float64:
            w = float(w)
        if type(w) is np.bool_:
            w = bool(w)
        assert type(g) is type(w), (g, w)
        assert np.asarray(g).dtype == np.asarray(w).dtype, (g, w)
        assert np.array_equal(g, w, equal_nan=np.asarray(w).dtype.kind == "f"), (g, w)
        if np.asarray(w).dtype.kind == "f":                   # (signed zeros too)
            real = ~np.isnan(w)
            assert np.array_equal(np.signbit(g)[real], np.signbit(w)[real]), (g, w)


# --- straight-line integer arithmetic -------------------------------------------------------
def arithmetic(i, j):
    return (i + j, i - j, i * j, -i, abs(i), wnp.absolute(j), wnp.sign(i),
            wnp.maximum(i, j), wnp.minimum(i, j), wnp.fmax(i, j),
            i // j, i % j, wnp.fmod(i, j), wnp.divmod(i, j),
            i ** 2, i ** 3, wnp.square(j), i ** 1,
            i < j, i <= j, i == j, i != j, wnp.where(i < j, i, j), wnp.clip(i, -5, j),
            wnp.floor(i), wnp.ceil(j), wnp.trunc(i), wnp.round(i),
            i & j, i | j, i ^ j, ~i, wnp.logical_and(i, j), wnp.logical_xor(i, j),
            wnp.logical_not(i))


def test_integer_arithmetic_is_numpys_bit_for_bit():
    compiled = c_compiled(arithmetic, I(3), I(4))
    assert "const int64_t" in compiled.source or "int64_t wg_" in compiled.source
    python = wg.compile(arithmetic, I(3), I(4))
    with np.errstate(all="ignore"):                 # (NumPy warns; the values are its)
        for a in EDGES:
            for b in EDGES:
                want = arithmetic(I(a), I(b))
                assert_same(compiled(I(a), I(b)), want)
                assert_same(numbers(python(I(a), I(b))), want)


def test_overflow_wraps_and_division_is_floored_as_numpy_and_python_say():
    """The cases spelled out: NumPy's int64 is Python's integer arithmetic modulo 2**64,
    with floor division and a remainder of the divisor's sign; a division by zero gives 0
    and INT64_MIN // -1 wraps to itself."""
    f = c_compiled(lambda i, j: (i + j, i * j, -i, abs(i), i // j, i % j, wnp.fmod(i, j)),
                   I(1), I(1))

    def wrapped(v):
        return (v + 2 ** 63) % 2 ** 64 - 2 ** 63
    for a, b in [(MAX, 1), (MIN, -1), (MIN, 2), (2 ** 40, 2 ** 40), (-7, 2), (7, -2),
                 (-7, -2), (7, 0), (MIN, 0), (0, 0), (-1, MAX)]:
        got = f(I(a), I(b))
        assert [type(v) for v in got] == [np.int64] * 7
        quotient = 0 if b == 0 else wrapped(a // b)
        remainder = 0 if b == 0 else a % b
        truncated = 0 if b == 0 else abs(a) % abs(b) * (1 if a >= 0 else -1)
        assert [int(v) for v in got] == [wrapped(a + b), wrapped(a * b), wrapped(-a),
                                         wrapped(abs(a)), quotient, remainder, truncated]


def test_mixed_integer_and_float_arithmetic_promotes_as_numpy_does():
    def mixed(x, i, j):
        return (x * i, i / j, wnp.true_divide(i, j), i + 0.5, wnp.sqrt(i), wnp.sin(j),
                wnp.hypot(i, j), (i < x), wnp.where(x < 1.0, i, x), wnp.maximum(i, x))
    compiled = c_compiled(mixed, 0.5, I(3), I(4))
    with np.errstate(all="ignore"):
        for x in (0.5, -2.25, np.inf):
            for a, b in [(3, 4), (2 ** 53 + 1, 3), (-7, 0), (MAX, -1)]:
                assert_same(compiled(x, I(a), I(b)), mixed(np.float64(x), I(a), I(b)))


def test_conversions_truncate_toward_zero_and_round_to_nearest():
    to_int = c_compiled(lambda x: x.astype(np.int64), 1.5)
    for x in [2.5, -2.5, 0.99, -0.99, -0.0, 1e18, -9.2e18, 2.0 ** 62 + 2048.0]:
        assert_same(to_int(x), np.float64(x).astype(np.int64))
    # nan, ±inf and values past int64 give INT64_MIN, NumPy's value on x86-64
    with np.errstate(invalid="ignore"):
        for x in [np.nan, np.inf, -np.inf, 2.0 ** 63, -2.0 ** 64, 1e300]:
            assert to_int(x) == MIN and type(to_int(x)) is np.int64
            if X86:
                assert to_int(x) == np.float64(x).astype(np.int64)
    to_float = c_compiled(lambda i: (i.astype(np.float64), i * 1.0, i.astype(bool)), I(1))
    for a in [2 ** 53 + 1, 2 ** 63 - 1, MIN, -3, 0]:
        assert_same(to_float(I(a)), (np.float64(a), I(a) * 1.0, I(a).astype(bool)))
    from_bool = c_compiled(lambda x, y: ((x < y).astype(np.int64) + I(40),
                                         (x < y) * I(3)), 1.0, 2.0)
    assert_same(from_bool(1.0, 2.0), (I(41), I(3)))
    assert_same(from_bool(2.0, 1.0), (I(40), I(0)))


def test_bools_are_logic_where_numpy_makes_them_so():
    def logic(x, y):
        a, b = x < y, x < 2.0 * y
        return (a + b, a * b, a & b, a | b, a ^ b, ~a, wnp.maximum(a, b), wnp.minimum(a, b),
                wnp.logical_xor(a, b), (a + b) * 1.0)
    compiled = c_compiled(logic, 0.3, 0.7)
    assert "const int " in compiled.source or "||" in compiled.source
    for x, y in [(0.3, 0.7), (0.3, 0.2), (0.3, 0.1), (np.nan, 1.0), (-1.0, -1.0)]:
        assert_same(compiled(x, y), logic(np.float64(x), np.float64(y)))


def test_int64_arguments_and_results_keep_every_bit():
    values = np.array(NAN_BITS + EDGES, dtype=np.int64)
    f = c_compiled(lambda i, a: (i, a, a[::-1] * I(3) + i, a.sum(), a.max(), a[2]),
                   I(0), values)
    for i in NAN_BITS + [0, MAX]:
        for a in (values, values[::-1].copy(), values.reshape(2, -1)[:, ::2].ravel()):
            with np.errstate(all="ignore"):
                want = (I(i), a, a[::-1] * I(3) + I(i), a.sum(), a.max(), a[2])
            if a.shape != values.shape:
                continue
            assert_same(f(I(i), a), want)
    strided = np.arange(2 * values.size, dtype=np.int64)[::2] * 2 ** 40  # (not contiguous)
    matrix = c_compiled(lambda a: (a.reshape(3, -1) // 3, a.reshape(3, -1).sum(axis=0)),
                        strided[:18])
    assert_same(matrix(strided[:18]), (strided[:18].reshape(3, -1) // 3,
                                       strided[:18].reshape(3, -1).sum(axis=0)))


def test_a_python_int_is_a_float_argument_and_a_numpy_int64_an_int64_one():
    f = wg.compile(lambda x, n: x * n + n // 2, backend="c")
    assert f(2.0, 5) == 12.0 and type(f(2.0, 5)) is float
    assert "wg_floor_divide(" in f.source                   # (5.0 // 2: a float's)
    assert f(2.0, I(5)) == 12.0 and type(f(2.0, I(5))) is float
    assert "wg_ifloordiv(" in f.source and len(f.cache) == 2


def test_float_floor_division_is_numpys():
    """(A Python int argument is a float: its ``n // 2`` is NumPy's float floor_divide,
    signed zeros, infinities and nans included.)"""
    f = c_compiled(lambda x, y: (x // y, x % y), 1.0, 1.0)
    values = [0.0, -0.0, 1.0, -1.0, 7.5, -7.5, 0.1, 1e-300, 3e300, np.inf, -np.inf, np.nan,
              2.0 ** 53 + 2.0, 5e-324]
    with np.errstate(all="ignore"):
        for x in values:
            for y in values:
                assert_same(f(x, y), (np.float64(x) // np.float64(y),
                                      np.float64(x) % np.float64(y)))


# --- loops: fori_loop with a traced trip count ----------------------------------------------
def horner(x, n):
    return lax.fori_loop(0, n, lambda i, v: v * x + i, 1.0)


def horner_plain(x, n):
    v = 1.0
    for i in range(n):
        v = v * x + i
    return v


def test_fori_loop_with_a_traced_number_of_steps_compiles_to_a_c_while_loop():
    compiled = c_compiled(horner, 2.0, I(3))
    assert "while (wg_go) {" in compiled.source
    python = wg.compile(horner, 2.0, I(3))
    for x in (2.0, -0.5, 1.25):
        for n in (-3, 0, 1, 2, 5, 40):
            assert compiled(x, I(n)) == horner_plain(x, n) == python(x, I(n))


def test_a_python_int_trip_count_is_truncated_as_astype_does():
    compiled = c_compiled(horner, 2.0, 3)                   # (n traced as a weak float)
    python = wg.compile(horner, 2.0, 3)
    for n in (0, 3, 7, 3.9, -2.5, 0.5):
        assert compiled(2.0, n) == horner_plain(2.0, int(n)) == python(2.0, n)
    with np.errstate(invalid="ignore"):
        for n in (np.nan, 1e19, -np.inf):                   # INT64_MIN steps: none
            assert compiled(2.0, n) == 1.0
            if X86:
                assert python(2.0, n) == 1.0


def test_both_bounds_traced_and_a_loop_inside_a_counted_loop():
    window = c_compiled(lambda x, a, b: lax.fori_loop(a, b, lambda i, v: v + i * x, 0.0),
                        1.5, I(-3), I(4))
    for a, b in [(-3, 4), (5, 2), (0, 0), (-10, 10)]:
        assert window(1.5, I(a), I(b)) == sum(i * 1.5 for i in range(a, b))

    def triangle(x, n):
        inner = lambda i, v: v + lax.fori_loop(0, i, lambda j, w: w + j * x, 0.0)  # noqa: E731
        return lax.fori_loop(0, n, inner, 0.0)
    nested = c_compiled(triangle, 0.5, I(6))
    assert nested.source.count("while (wg_go) {") == 2
    for n in (0, 1, 6, 13):
        assert nested(0.5, I(n)) == sum(j * 0.5 for i in range(n) for j in range(i))


def series(x, n):
    """exp(x) by n terms of its series: the term of step i divided by i + 1."""
    return lax.fori_loop(0, n, lambda i, c: (c[0] + c[1], c[1] * x / (i + 1)), (0.0, 1.0))[0]


def wave(x, n):
    """Floats that depend on the counter in value and in derivative."""
    return lax.fori_loop(0, n, lambda i, v: v * wnp.cos(x) + wnp.sin(i * x) / (i + 1), x)


def test_jacfwd_of_counted_loops_against_central_differences_and_python():
    for f, x0 in ((horner, 1.1), (series, 0.7), (wave, 0.3)):
        d = c_compiled(wg.jacfwd(f), x0, I(3))
        d_python = wg.compile(wg.jacfwd(f), x0, I(3))
        assert "while (wg_go) {" in d.source
        for n in (0, 1, 4, 25):
            for x in (x0, -0.4):
                want = fd_derivative(lambda t: f(t, n), x)
                assert_close(d(x, I(n)), want, rtol=1e-7, atol=1e-8)
                assert_close(d(x, I(n)), d_python(x, I(n)), rtol=1e-13, atol=1e-14)
    assert_close(c_compiled(series, 0.7, I(3))(0.7, I(30)), np.exp(0.7), rtol=1e-15)
    d2 = c_compiled(wg.jacfwd(wg.jacfwd(wave)), 0.3, I(3))
    assert_close(d2(0.3, I(9)), fd_derivative(lambda t: wg.jacfwd(wave)(t, 9), 0.3, 1e-5),
                 rtol=1e-6)


def test_vmap_of_a_counted_loop_in_c():
    batched = c_compiled(wg.vmap(horner, in_axes=(0, None)), np.array([1.0, 2.0]), I(4))
    xs = np.array([0.5, 2.0, -1.0])
    for n in (0, 4, 9):
        assert np.array_equal(batched(xs, I(n)), [horner_plain(x, n) for x in xs])
    # each example its own number of steps: the loop goes on while any does
    ns = np.array([0, 3, 7, -2, 12], dtype=np.int64)
    per_n = c_compiled(wg.vmap(horner, in_axes=(None, 0)), 2.0, ns)
    d = c_compiled(wg.jacfwd(wg.vmap(horner, in_axes=(None, 0))), 2.0, ns)
    assert np.array_equal(per_n(1.5, ns), [horner_plain(1.5, n) for n in ns])
    assert_close(d(1.5, ns), [fd_derivative(lambda t: horner_plain(t, n), 1.5) for n in ns],
                 rtol=1e-8)


# --- loops carrying integers ----------------------------------------------------------------
def collatz(n):
    """The number of Collatz steps from n to 1: an int64 carry, halved or tripled."""
    return lax.while_loop(
        lambda s: s[0] != 1,
        lambda s: (wnp.where(s[0] % 2 == 0, s[0] // 2, 3 * s[0] + 1), s[1] + 1), (n, I(0)))


def collatz_plain(n):
    steps = 0
    while n != 1:
        n, steps = (n // 2 if n % 2 == 0 else 3 * n + 1), steps + 1
    return steps


def test_while_loop_with_an_integer_counter_counts_exactly():
    compiled = c_compiled(collatz, I(27))
    python = wg.compile(collatz, I(27))
    for n in (1, 2, 7, 27, 97, 2 ** 40 + 1, 989345275647):
        got = compiled(I(n))
        assert_same(got, (I(1), I(collatz_plain(n))))
        assert_same(python(I(n)), got)

    def halvings(x):
        return lax.while_loop(lambda s: s[0] >= 1.0, lambda s: (s[0] / 2.0, s[1] + 1),
                              (x, I(0)))
    counted = c_compiled(halvings, 3.0)
    for x, k in [(0.5, 0), (3.0, 2), (1e10, 34), (1e300, 997)]:
        assert_same(counted(x), (x / 2.0 ** k, I(k)))
    d = c_compiled(wg.jacfwd(lambda x: halvings(x)[0]), 3.0)
    for x, k in [(0.5, 0), (3.0, 2), (1e10, 34)]:
        assert d(x) == 2.0 ** -k


def test_a_while_loop_whose_only_carry_is_an_integer_and_tests_with_and():
    doubling = c_compiled(lambda n: lax.while_loop(lambda i: i < 1000, lambda i: 2 * i + 1, n),
                          I(3))
    for n in (3, 0, 999, 1000, -5):       # (-5 doubles down to -2**63 - 1, which wraps)
        i = n
        while i < 1000:
            i = (2 * i + 1 + 2 ** 63) % 2 ** 64 - 2 ** 63
        assert_same(doubling(I(n)), I(i))

    def until(x, n):
        return lax.while_loop(lambda s: (s[0] < n) & (s[1] > 1e-3),
                              lambda s: (s[0] + 1, s[1] * 0.5), (I(0), x))
    compiled = c_compiled(until, 1.0, I(20))
    for x, n in [(1.0, 20), (1.0, 3), (1e-4, 5), (7.0, 100)]:
        k, v = 0, x
        while k < n and v > 1e-3:
            k, v = k + 1, v * 0.5
        assert_same(compiled(x, I(n)), (I(k), v))


LCG_A, LCG_C = 6364136223846793005, 1442695040888963407     # (Knuth's MMIX, wrapping)


def lcg(seed, w):
    """A 64-bit linear congruential generator as a scan: its state wraps at every step;
    the ys are the states and a float made from them."""
    def step(s, _):
        new = s * I(LCG_A) + I(LCG_C)
        return new, (s, (new >> 0 if False else new) % 1000 * w)
    return wg.scan(step, seed, length=12)


def test_a_scan_carrying_a_wrapping_integer_state_and_stacking_int64_ys():
    compiled = c_compiled(lcg, I(1), 0.5)
    for seed in (1, -1, MIN, 12345):
        s, states, floats = seed, [], []
        for _ in range(12):
            new = (s * LCG_A + LCG_C + 2 ** 63) % 2 ** 64 - 2 ** 63
            states.append(s)
            floats.append(new % 1000 * 0.25)
            s = new
        with np.errstate(over="ignore"):
            python = wg.compile(lcg, I(1), 0.5)(I(seed), 0.25)
        got = compiled(I(seed), 0.25)
        assert_same(got, (I(s), (np.array(states, np.int64), np.array(floats))))
        assert_same(python, got)
    reverse = c_compiled(lambda ks, x: wg.scan(lambda c, k: (c * x + k, k * k), I(0) * 0.0, ks,
                                               reverse=True), np.arange(3), 0.5)
    ks = np.array([3, -2 ** 40, 7, MAX], dtype=np.int64)
    c, want = 0.0, []
    with np.errstate(over="ignore"):
        for k in ks[::-1]:
            c, y = c * 0.5 + k, k * k
            want.append(y)
    assert_same(reverse(ks, 0.5), (c, np.array(want[::-1], dtype=np.int64)))


def test_a_static_fori_loops_index_is_an_int64_in_a_table():
    compiled = c_compiled(lambda x: wg.fori_loop(0, 20, lambda i, v: v + i * i * x + i // 3,
                                                 0.0), 0.5)
    assert "static const int64_t" in compiled.source
    for x in (0.5, -3.0):
        assert compiled(x) == sum(i * i * x + i // 3 for i in range(20))
    d = c_compiled(wg.grad(lambda x: wg.fori_loop(0, 20, lambda i, v: v * wnp.cos(i * x),
                                                  1.0)), 0.1)
    want = fd_derivative(lambda x: wg.fori_loop(0, 20, lambda i, v: v * np.cos(i * x), 1.0),
                         0.1)
    assert_close(d(0.1), want, rtol=1e-7)


def test_reverse_mode_where_floats_depend_on_integers():
    def f(x, n):
        k = n // 3 + n % 5
        return x * x * k + wnp.sin(x * (n - 2 * k)) + (k > 2) * x
    grad = c_compiled(wg.grad(f), 0.3, I(7))
    python = wg.compile(wg.grad(f), 0.3, I(7))
    for n in (-8, 0, 7, 11, 123):
        for x in (0.3, -1.7):
            assert_close(grad(x, I(n)), fd_derivative(lambda t: f(t, I(n)), x),
                         rtol=1e-7, atol=1e-8)
            assert grad(x, I(n)) == python(x, I(n))


# --- what C does not write ------------------------------------------------------------------
@pytest.mark.parametrize("f, args, words", [
    (lambda i, j: i ** j, (I(2), I(3)), "writes no pow of int64 values"),
    (lambda i: i << 2, (I(2),), "no spelling for NumPy's left_shift of int64"),
    (lambda i: wnp.gcd(i, 6), (I(4),), "no spelling for NumPy's gcd"),
    (lambda i: wnp.round(i, -1), (I(15),), "writes no round of int64 values"),
    (lambda i: i + np.uint64(1), (np.uint64(3),),
     "dtype uint64 (add) (C computes float64, int64 and bool values)"),
    (lambda x: (x > 1.0).sum() * 1.0, (np.array([1.0, 2.0]),),
     "sum of bool values, whose elements written one by one would be bool where NumPy's "
     "are int64"),
    (lambda x, n: lax.fori_loop(0, n, lambda i, s: s + wnp.sort(x * s)[0], 0.0),
     (np.ones(3), I(3)),
     "argsort, a primitive that has no element-by-element form, in the body of while["),
    (lambda x: wg.scan(lambda c, _: ((c[0] * x, c[1] + 1), None), (1.0, np.int32(0)),
                       length=3)[0][1], (2.0,),
     "dtype int32 (add) (C computes float64, int64 and bool values), in the body of scan["),
])
def test_refusals_say_what_c_does_not_write(f, args, words):
    with pytest.raises(ValueError) as info:
        wg.compile(f, *args, backend="c")
    assert words in str(info.value)
    wg.compile(f, *args)(*args)                     # (the Python back-end computes it)


def test_code_c_of_a_python_entry_is_the_c_entrys_source():
    python, c = wg.compile(collatz, I(27)), c_compiled(collatz, I(27))
    assert python.code("c") == c.source
    assert "int64_t" in c.source and "memcpy" in c.source
