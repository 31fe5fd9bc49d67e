"""Array graphs as C loops (``wg.compile(..., backend="c")``, `wengert.codegen.cloops`):
every primitive the loops write and every way they fuse, against the NumPy back-end and
eager evaluation: bit for bit for + - * /, comparisons and where (which C computes as
NumPy does), gathers and scatter-adds at index arrays (repeats added in NumPy's order),
within a few ulps for libm's functions, within rounding for sums and matrix products
(whose order differs; BLAS's, SciPy's, and the loops without it).  Gradients and Hessians
are checked against eager derivatives and central differences; what the loops do not
write falls back to scalarised C or is refused by name.

Small arrays are scalarised unless told otherwise, so most tests set the threshold of
loop mode to 0 (the `loops` fixture)."""
import math
import threading

import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from fd import assert_close, fd_jacobian
from test_loops import HAVE_CC
from wengert.codegen import cloops

pytestmark = pytest.mark.skipif(not HAVE_CC, reason="no C compiler on this machine")

RNG = np.random.default_rng(7)


@pytest.fixture
def loops(monkeypatch):
    """Loop mode for arrays of any size."""
    monkeypatch.setattr(cloops, "LOOP_ELEMENTS", 0)


def looped(f, *args):
    """f compiled to C loops (checked: not scalarised)."""
    c = wg.compile(f, *args, backend="c")
    c(*args)
    assert getattr(c.entry, "looped", False), c.entry.flavour
    return c


def numpy_compiled(f, *args):
    return wg.compile(f, *args, backend="numpy")(*args)


def same(a, b):
    """Equal bit for bit where they are numbers (nan equal to nan, -0.0 to -0.0)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    if a.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(a), np.signbit(b))
    np.testing.assert_array_equal(a, b)


def ulps(a, b, n=4):
    np.testing.assert_array_max_ulp(np.asarray(a), np.asarray(b), maxulp=n)


def rosen(x):
    return wnp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def heat(u):
    """A Laplacian residual on the interior of a grid, squared and summed."""
    r = 4 * u[1:-1, 1:-1] - u[2:, 1:-1] - u[:-2, 1:-1] - u[1:-1, 2:] - u[1:-1, :-2]
    return wnp.sum(r ** 2)


# ---- elementwise, broadcasting, fusion -------------------------------------------------
def test_arithmetic_with_broadcasting_is_numpy_bit_for_bit(loops):
    def f(x, y, s):
        a = (x * y - s) / (y + 2.0)
        return a, -a + x, x * 3.0 - y[None, :] / s, wnp.where(x > y, a, x - s)
    args = (RNG.normal(size=(5, 6)), RNG.normal(size=6), 0.7)
    got = looped(f, *args)(*args)
    for g, e, n in zip(got, f(*args), numpy_compiled(f, *args)):
        same(g, e)
        same(g, n)


def test_one_loop_computes_a_chain_and_stores_only_what_is_read(loops):
    c = looped(lambda x: wnp.sum(wnp.exp(-x * x) * 2.0 + x), RNG.normal(size=50))
    # (with libmvec's exp the sum is pairwise: the loop over its runs of 8 and the rest)
    assert c.source.count("for (") == (4 if "pairwise" in c.source else 1)
    assert "*restrict t" not in c.source        # no temporary array at all


def test_numpy_conventions_of_c_functions(loops):
    x = np.array([-2.5, -1.0, -0.0, 0.0, 0.5, 3.0, np.nan, np.inf, -np.inf])
    y = np.array([1.5, -0.0, 2.0, -3.0, np.nan, 0.5, 1.0, 2.0, -1.0])

    def f(x, y):
        return (wnp.sign(x), wnp.maximum(x, y), wnp.minimum(x, y), wnp.remainder(x, y),
                wnp.floor_divide(x, y), wnp.abs(x), x < y, x == y, x != y, x >= y)
    got = looped(f, x, y)(x, y)
    with np.errstate(all="ignore"):
        expected = f(x, y)
    for g, e in zip(got, expected):
        same(g, e)


def test_math_functions_within_ulps(loops):
    x = RNG.uniform(0.1, 3.0, size=200)
    fs = [wnp.exp, wnp.log, wnp.sin, wnp.cos, wnp.tanh, wnp.sqrt, wnp.log1p, wnp.expm1,
          wnp.arctan, wnp.cbrt, lambda v: v ** 3, lambda v: v ** 0.5, lambda v: v ** -2]
    c = looped(lambda x: [f(x) for f in fs], x)
    for f, g in zip(fs, c(x)):
        ulps(g, f(x))


def test_tanh_vectorises_through_libmvec_where_glibc_has_it(loops):
    x = np.concatenate([RNG.normal(scale=3.0, size=1000), [0.0, -0.0, np.inf, -np.inf,
                                                           np.nan, 1e-300, -25.0]])
    c = looped(wnp.tanh, x)
    assert ("__simd__" in c.source) == cloops._libmvec("tanh")
    got = c(x)
    ulps(got, np.tanh(x), 2)
    same(np.signbit(got), np.signbit(np.tanh(x)))


def _wide_arguments(name):
    """Random values over wide ranges, tiny, subnormal and special ones (and huge ones
    for the trigonometric functions)."""
    n = 4000
    sign = np.where(RNG.random(n) < 0.5, -1.0, 1.0)
    parts = [RNG.uniform(-10, 10, n), RNG.uniform(-1, 1, n), RNG.uniform(-750, 750, n),
             sign * 10.0 ** RNG.uniform(-300, 300, n), sign * 10.0 ** RNG.uniform(-20, -3, n),
             sign * RNG.uniform(0, 2.2e-308, n), 1 + RNG.normal(scale=1e-3, size=n),
             [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 1.0, -1.0]]
    if name in ("sin", "cos", "tan"):
        parts.append(np.arange(1, n + 1) * (np.pi / 2) + RNG.normal(scale=1e-6, size=n))
    return np.concatenate(parts)


UNARY = {"exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
         "log10": np.log10, "log1p": np.log1p, "sin": np.sin, "cos": np.cos, "tan": np.tan,
         "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh,
         "cosh": np.cosh, "tanh": np.tanh, "acosh": np.arccosh, "atanh": np.arctanh,
         "cbrt": np.cbrt}


@pytest.mark.parametrize("name", list(UNARY))
def test_libmvec_functions_within_3_ulps_of_numpy(loops, name):
    if not cloops._libmvec(name):
        pytest.skip(f"no libmvec {name} here")
    x = _wide_arguments(name)
    f = getattr(wnp, UNARY[name].__name__)
    c = looped(f, x)
    assert "__simd__" in c.source
    got = c(x)
    with np.errstate(all="ignore"):
        want = UNARY[name](x)
    same(np.isnan(got), np.isnan(want))
    ulps(got, want, 3)              # (inf only where NumPy's is, the same inf)
    zero = want == 0
    same(np.signbit(got[zero]), np.signbit(want[zero]))


@pytest.mark.parametrize("name", ["pow", "atan2", "hypot"])
def test_libmvec_functions_of_two_arguments_within_3_ulps(loops, name):
    if not cloops._libmvec(name):
        pytest.skip(f"no libmvec {name} here")
    n = 4000
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, 1.0, -1.0, 0.5, 2.0])
    a, b = (v.ravel() for v in np.meshgrid(special, special))
    x = np.concatenate([10.0 ** RNG.uniform(-10, 10, n), -RNG.uniform(0, 20, n),
                        1 + RNG.normal(scale=1e-8, size=n), RNG.uniform(0, 2.2e-308, n), a])
    y = np.concatenate([RNG.uniform(-30, 30, n), RNG.integers(-50, 50, n).astype(float),
                        RNG.uniform(-1e6, 1e6, n), RNG.uniform(-2, 2, n), b])
    f = {"pow": lambda x, y: x ** y, "atan2": wnp.arctan2, "hypot": wnp.hypot}[name]
    c = looped(f, x, y)
    assert "__simd__" in c.source
    got = c(x, y)
    with np.errstate(all="ignore"):
        want = {"pow": np.power, "atan2": np.arctan2, "hypot": np.hypot}[name](x, y)
    same(np.isnan(got), np.isnan(want))
    ulps(got, want, 3)
    zero = want == 0
    same(np.signbit(got[zero]), np.signbit(want[zero]))


def test_erf_vectorises_within_3_ulps_of_scipy(loops):
    special = pytest.importorskip("scipy.special")
    from wengert.scipy import special as wsp
    if not cloops._libmvec("erf"):
        pytest.skip("no libmvec erf here")
    x = _wide_arguments("erf")
    c = looped(wsp.erf, x)
    got = c(x)
    same(np.isnan(got), np.isnan(special.erf(x)))
    ulps(got, special.erf(x), 3)


# ---- the x86-64 level the loops are compiled for ----------------------------------------
def test_the_target_is_the_widest_level_the_machine_runs_and_the_variable_allows(
        monkeypatch):
    monkeypatch.delenv(cloops.TARGET_VARIABLE, raising=False)
    monkeypatch.setattr(cloops, "_RUNS", {"x86-64-v4": False, "x86-64-v3": True})
    assert cloops.target() == "x86-64-v3"
    assert cloops.flags() == cloops.FLAGS + ("-march=x86-64-v3",)
    monkeypatch.setattr(cloops, "_RUNS", {"x86-64-v4": True, "x86-64-v3": True})
    assert cloops.target() == "x86-64-v4"
    assert cloops.flags() == cloops.FLAGS + cloops.LEVELS["x86-64-v4"]
    monkeypatch.setenv(cloops.TARGET_VARIABLE, "x86-64-v3")
    assert cloops.target() == "x86-64-v3"
    monkeypatch.setenv(cloops.TARGET_VARIABLE, "x86-64")
    assert cloops.target() == "x86-64" and cloops.flags() == cloops.FLAGS
    monkeypatch.setattr(cloops, "_RUNS", {"x86-64-v4": False, "x86-64-v3": False})
    monkeypatch.setenv(cloops.TARGET_VARIABLE, "x86-64-v4")
    assert cloops.target() == "x86-64"          # (never a level the machine does not run)
    monkeypatch.setenv(cloops.TARGET_VARIABLE, "avx512")
    with pytest.raises(ValueError, match="WENGERT_C_TARGET='avx512'.*x86-64-v3"):
        cloops.target()


# (the features of each level, as Linux names them in /proc/cpuinfo)
LEVEL_FEATURES = {"x86-64-v3": {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe",
                                "xsave"},
                  "x86-64-v4": {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}}


def test_the_probe_never_claims_a_level_the_processor_lacks(monkeypatch):
    monkeypatch.setattr(cloops, "_RUNS", {})
    try:
        with open("/proc/cpuinfo") as f:
            features = set(next(line for line in f if line.startswith("flags")).split())
    except (OSError, StopIteration):
        features = None
    for level in cloops.LEVELS:
        runs = cloops._runs(level)
        if features is not None:
            has = LEVEL_FEATURES[level] <= features and \
                (level == "x86-64-v3" or LEVEL_FEATURES["x86-64-v3"] <= features)
            assert has or not runs, level
    monkeypatch.setattr(cloops, "_RUNS", {})
    monkeypatch.setattr(cloops.platform, "machine", lambda: "aarch64")
    assert not any(cloops._runs(level) for level in cloops.LEVELS)
    assert cloops.target() == "x86-64"


def test_loops_are_compiled_with_the_targets_flags_and_agree_with_the_baselines(
        loops, monkeypatch):
    # (+ - * / and a pairwise sum give the same bits in 2, 4 or 8 lanes; libm's functions
    # are each within 3 ulps of NumPy's, tested above at the machine's target)
    seen, library = [], cloops.C.library
    monkeypatch.setattr(cloops.C, "library",
                        lambda source, flags=(): seen.append(flags) or library(source, flags))

    def f(x, y):
        return wnp.sum((x * y - 1.5) / (y + 2.0)), x * 3.0 - y / 0.7
    x, y = RNG.normal(size=1003), RNG.normal(size=1003)
    monkeypatch.delenv(cloops.TARGET_VARIABLE, raising=False)
    wide = looped(f, x, y)(x, y)
    assert seen[-1] == cloops.flags()
    monkeypatch.setenv(cloops.TARGET_VARIABLE, "x86-64")
    baseline = looped(f, x, y)(x, y)
    assert seen[-1] == cloops.FLAGS
    for w, b, n in zip(wide, baseline, numpy_compiled(f, x, y)):
        same(w, b)
        same(w, n)


@pytest.mark.parametrize("columns", [1, 3, 5, 6, 7, 9, 16])
def test_a_select_reads_an_arm_that_only_it_reads_before_choosing(loops, columns):
    # (in ``c ? z[k] : b`` the compiler reads z[k] only where c holds, with masked loads
    # in vectors, which GCC 12.2 permuted wrongly for AVX-512 (GCC PR 114375): a 5 x 6
    # ``where`` read zeros, and so did these at 3 to 16 columns, read in the arm.  Read
    # first, the arm is a value)
    def f(x, y, z):
        return wnp.where(x > y[None, :], z, x - 0.7)
    x, z = RNG.normal(size=(2, 5, columns))
    y = RNG.normal(size=columns)
    c = looped(f, x, y, z)
    assert "= z[" in c.source and "? z[" not in c.source
    same(c(x, y, z), numpy_compiled(f, x, y, z))


def test_int64_and_bool_arrays(loops):
    i = RNG.integers(-50, 50, size=40)
    j = RNG.integers(1, 9, size=40)
    x = RNG.normal(size=40)

    def f(i, j, x):
        m = (i > 0) & (x < 0.5)
        return (i // j, i % j, i * j - 3, wnp.where(m, i, j), wnp.sum(m), m, ~m,
                i.astype(np.float64) * x, (x * 10).astype(np.int64), wnp.sum(i * j))
    got = looped(f, i, j, x)(i, j, x)
    for g, e in zip(got, f(i, j, x)):
        same(g, e)


def test_scalar_arguments_and_results(loops):
    def f(x, s, k):
        return wnp.sum(x * s) + 1.0, x * s + k, wnp.max(x) > s
    x = RNG.normal(size=20)
    c = looped(f, x, 0.5, np.int64(3))
    v, a, b = c(x, 0.5, np.int64(3))
    assert type(v) is float and type(b) is bool
    assert_close(v, float(np.sum(x * 0.5)) + 1.0, rtol=1e-14)
    same(a, x * 0.5 + 3)
    assert b == bool(x.max() > 0.5)


# ---- views and data movement -------------------------------------------------------------
def test_strided_and_negative_slices(loops):
    def f(x, m):
        return (x[::-2] * 2.0, x[1:-1:3] + x[2::3][:x[1:-1:3].shape[0]], m[::-1, 1::2] * 3.0,
                m[2, ::-1] + 1.0, m[:, 3] - m[1, 2], wnp.flip(m, 0) + m)
    args = (RNG.normal(size=31), RNG.normal(size=(6, 7)))
    got = looped(f, *args)(*args)
    for g, e in zip(got, f(*args)):
        same(g, e)


def test_reshape_transpose_broadcast(loops):
    def f(x, v):
        y = x.T * v                                    # transpose, broadcast
        z = wnp.reshape(x, (4, 6)) + 1.0               # reshape of a contiguous array
        w = wnp.reshape(x.T, (24,)) * 2.0              # reshape of a transpose: a copy
        b = wnp.broadcast_to(v[None, :], (4, 6)) - y
        return y, z, w, b, wnp.swapaxes(x[None], 0, 2) * 1.5
    x, v = RNG.normal(size=(6, 4)), RNG.normal(size=6)
    got = looped(f, x, v)(x, v)
    for g, e in zip(got, f(x, v)):
        same(g, e)


def test_concatenate_pad_index_add(loops):
    def f(x, y):
        return (wnp.concatenate([x * 2.0, y, x[:3]]), wnp.pad(x * y[:x.shape[0]], (2, 3)),
                wnp.stack([x, -x]) + 1.0)
    x, y = RNG.normal(size=10), RNG.normal(size=12)
    got = looped(f, x, y)(x, y)
    for g, e in zip(got, f(x, y)):
        same(g, e)
    g = wg.grad(lambda m: wnp.sum(m[1:, ::2] ** 2) + wnp.sum(wnp.sin(m[:-1, 1:])))
    m = RNG.normal(size=(5, 6))
    ulps(looped(g, m)(m), g(m))
    g = wg.grad(lambda x: x[3] * x[5] + wnp.sum(x ** 3))     # scatters of single elements
    same(looped(g, x)(x), g(x))


def test_heat_gradient_is_one_split_loop_without_temporaries(loops):
    u = RNG.normal(size=(40, 50))
    g = wg.grad(heat)
    c = looped(g, u)
    assert "memset" not in c.source and "*restrict t" not in c.source
    assert c.source.count("/* 40x50:") == 1          # one loop nest, split into boxes
    same(c(u), numpy_compiled(g, u))
    same(c(u), g(u))


def test_pads_and_scatters_read_in_place_are_numpy_bit_for_bit(loops):
    def f(x, y):
        a = wnp.pad(x * 2.0, ((1, 2), (0, 3)))                     # pad with zeros
        b = wg.vjp(lambda v: v[1:-1, 2:], x)[1](y)[0]              # index_add of a slice
        c = wg.vjp(lambda v: v[::-1, 1], x)[1](x[:, 0])[0]         # reversed, 0-d dim
        d = wnp.concatenate([x[:, :2] - 1.0, x * y[0, 0], -x[:, 3:]], axis=1)
        return (a[1:-2, :-3] + b - c, a.T * 3.0, wnp.sum(a, axis=0), d + b[:, :1],
                wnp.exp(a)[::2, ::-3])
    x, y = RNG.normal(size=(6, 7)), RNG.normal(size=(4, 5))
    c = looped(f, x, y)
    assert "memset" not in c.source
    for got, e, n in zip(c(x, y), f(x, y), numpy_compiled(f, x, y)):
        same(got, e)
        same(got, n)


def test_signed_zeros_of_pads_and_scatters(loops):
    """index_add adds into zeros (-0.0 becomes 0.0, as NumPy's ``zeros + v``); pad and
    concatenate copy (-0.0 stays)."""
    x = np.array([[-0.0, 0.0, -1.0], [2.0, -0.0, -0.0]])

    def f(x):
        scatter = wg.vjp(lambda v: v[:, 1:], np.zeros((2, 4)))[1](x)[0]
        return (scatter, wnp.pad(x, 1), wnp.concatenate([x, -x]), scatter * 1.0,
                wnp.pad(x, 1) * 1.0, scatter + wnp.pad(x, ((0, 0), (1, 0))))
    for got, e, n in zip(looped(f, x)(x), f(x), numpy_compiled(f, x)):
        same(got, e)
        same(got, n)


def test_empty_regions_and_stepped_regions(loops):
    def f(x):
        empty = wnp.concatenate([x[:0] * 2.0, x + 1.0, x[3:3]])          # empty parts
        padded = wnp.pad(x, (0, 0)) + wnp.pad(x[:4], (0, 6)) * 2.0
        stepped = wg.vjp(lambda v: v[1::3], x)[1](x[:3] * 2.0)[0]      # filled in memory
        strided = wnp.pad(x * 3.0, (5, 2))[::2] - 1.0                  # a strided read
        return empty, padded, stepped + x, strided, wnp.pad(x, (2, 1))[::-1] * x[0]
    x = RNG.normal(size=10)
    c = looped(f, x)
    for got, e, n in zip(c(x), f(x), numpy_compiled(f, x)):
        same(got, e)
        same(got, n)


def test_padded_values_read_elsewhere_are_filled_in_memory(loops):
    def f(x, m):
        p = wnp.pad(x * 2.0, (1, 1))
        return p, p @ m, wnp.reshape(p, (3, 4)) * 2.0, wnp.reshape(wnp.pad(x, (2, 2)) + x[0],
                                                                 (2, 7)) - 1.0
    x, m = RNG.normal(size=10), RNG.normal(size=(12, 3))
    got = looped(f, x, m)(x, m)
    for g, e in zip(got, f(x, m)):
        np.testing.assert_allclose(g, e, rtol=1e-13, atol=1e-15)
    for g, e in zip(got[:1] + got[2:], f(x, m)[:1] + f(x, m)[2:]):
        same(g, e)


def test_too_many_boxes_fill_memory_instead(loops, monkeypatch):
    monkeypatch.setattr(cloops, "MAX_BOXES", 2)
    u = RNG.normal(size=(9, 8))
    g = wg.grad(heat)
    c = looped(g, u)
    assert "memset" in c.source
    same(c(u), numpy_compiled(g, u))


def stencil3(u):
    """A 7-point Laplacian residual on a 3-D grid, squared and summed."""
    r = (6 * u[1:-1, 1:-1, 1:-1] - u[2:, 1:-1, 1:-1] - u[:-2, 1:-1, 1:-1]
         - u[1:-1, 2:, 1:-1] - u[1:-1, :-2, 1:-1] - u[1:-1, 1:-1, 2:] - u[1:-1, 1:-1, :-2])
    return wnp.sum(wnp.tanh(r) ** 2)


@pytest.mark.parametrize("f, shape", [(heat, (6, 8)), (stencil3, (5, 6, 4)),
                                      (lambda x: wnp.sum(wnp.pad(x, (3, 1))[2:] *
                                                         wnp.pad(x, (1, 3))[:-2] ** 3), (9,)),
                                      (lambda x: wnp.sum(wnp.sin(x[::2, 1:]) * x[1::2, :-1]),
                                       (6, 5))])
def test_gradients_of_stencils_against_central_differences(loops, f, shape):
    g = wg.grad(f)
    for _ in range(2):
        x = RNG.uniform(-1.5, 1.5, size=shape)
        got = looped(g, x)(x)
        np.testing.assert_allclose(got, numpy_compiled(g, x), rtol=1e-12, atol=1e-14)
        fd = fd_jacobian(lambda v: float(f(v)), x, 1e-6).reshape(shape)
        assert_close(got, fd, rtol=1e-6, atol=1e-6)


def test_results_that_are_arguments_views_constants_or_repeated(loops):
    k = RNG.normal(size=7)

    def f(x):
        y = x * 2.0
        return x, x[::-1], y, y, k, np.zeros(3) + 0.0 * x[:3], wnp.ones(4)
    x = RNG.normal(size=7)
    c = looped(f, x)
    got = c(x)
    for g, e in zip(got, f(x)):
        same(g, e)
    assert got[2] is not got[3]
    got[2][0] = 99.0                   # (results are the caller's arrays)
    assert c(x)[2][0] == 2 * x[0]


def test_a_broadcast_scalar_result_is_read_after_its_copy_is_written(loops):
    # A scalar computed early, viewed as (1,) and broadcast to a result: the copy of it
    # to memory is a loop of its own, made late; the result's store once joined an
    # earlier loop of its shape and read that memory before it was written (garbage).
    # Found by tools/fuzz.py (the gradient of a sum beside a loop's results).
    def f(x, y):
        s = wnp.sum(y) * 2.0
        return x * s + 1.0, wnp.broadcast_to(wnp.reshape(s, (1,)), (3,))
    c = looped(f, np.zeros(3), np.zeros(3))   # (so its workspace holds no good value)
    x, y = RNG.normal(size=3), RNG.normal(size=3)
    for g, e in zip(c(x, y), f(x, y)):
        same(g, e)


def test_non_contiguous_and_read_only_arguments(loops):
    c = looped(lambda x: x * 2.0 + 1.0, np.ones(6))
    base = RNG.normal(size=12)
    same(c(base[::2]), base[::2] * 2.0 + 1.0)
    ro = base[:6].copy()
    ro.flags.writeable = False
    same(c(ro), ro * 2.0 + 1.0)


# ---- reductions ----------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [None, 0, 1, 2, (0, 2), (1, 2), (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_over_every_axis(loops, axis, keepdims):
    x = RNG.uniform(0.5, 1.5, size=(3, 4, 5))
    x[1, 2, 3] = np.nan if axis == (0, 1) else x[1, 2, 3]

    def f(x):
        return (wnp.sum(x, axis, keepdims=keepdims), wnp.max(x, axis, keepdims=keepdims),
                wnp.min(x, axis, keepdims=keepdims), wnp.prod(x, axis, keepdims=keepdims),
                wnp.mean(x * 2.0, axis, keepdims=keepdims))
    got = looped(f, x)(x)
    for g, e in zip(got, f(x)):
        assert np.shape(g) == np.shape(e)
        np.testing.assert_allclose(g, e, rtol=1e-14)


def spread(shape):
    """Values of magnitudes from 1e-5 to 1e5 and both signs: sums that round often."""
    return RNG.normal(size=shape) * 10.0 ** RNG.uniform(-5, 5, size=shape)


@pytest.mark.parametrize("n", [8, 9, 127, 128, 129, 1000, 8193, 100_003])
def test_full_sums_of_contiguous_arrays_are_numpy_bit_for_bit(loops, n):
    x, y = spread(n), spread(n)

    def f(x, y):
        return wnp.sum(x * y - 1.0), wnp.sum(x), wnp.mean(wnp.reshape(x, (1, n)) * 2.0)
    for got, e in zip(looped(f, x, y)(x, y), f(x, y)):
        assert got == e


@pytest.mark.parametrize("shape", [(3, 8), (5, 131), (2, 3, 1000)])
def test_sums_along_the_last_axis_and_over_the_first_are_numpy_bit_for_bit(loops, shape):
    x = spread(shape)

    def f(x):
        return (wnp.sum(x * 3.0, axis=-1), wnp.sum(x, axis=-1, keepdims=True),
                wnp.sum(x - 1.0, axis=0))
    for got, e in zip(looped(f, x)(x), f(x)):
        same(got, e)


@pytest.mark.parametrize("axis", [None, 0, 1, 2, (0, 2), (1, 2), (0, 1)])
def test_other_sums_within_their_error_bound(loops, axis):
    """Elsewhere the loops add runs along the innermost loop pairwise and runs in order:
    the error is at most (runs + log2(run) + 8) * eps * sum(|x|), as NumPy's own bound
    for such sums."""
    x = spread((40, 3, 300))[:, :, ::-1][:, :, 1:]        # (not contiguous: no one run)
    axes = (0, 1, 2) if axis is None else np.atleast_1d(axis)
    terms = np.moveaxis(x * 1.5, axes, range(-len(axes), 0))
    terms = terms.reshape(-1, math.prod(terms.shape[-len(axes):]))
    exact = np.array([math.fsum(t) for t in terms])
    eps = np.finfo(float).eps
    for keepdims in (False, True):
        f = lambda x: wnp.sum(x * 1.5, axis, keepdims=keepdims)              # noqa: E731
        got = np.ravel(looped(f, x)(x))
        bound = (x.size // 299 + 64) * eps * np.sum(np.abs(terms), axis=1)
        assert np.all(np.abs(got - exact) <= bound)


def test_sums_of_calls_add_in_order_and_sums_of_few_terms_too(loops):
    x = spread(1000)
    # (asinh: a scalar libm call; libmvec's are in lanes, where their loop vectorises)
    c = looped(lambda x: (wnp.sum(wnp.arcsinh(x * 1e-5)), wnp.sum(x[:7] * 2.0)), x)
    assert "pairwise" not in c.source
    c = looped(lambda x: wnp.sum(wnp.exp(x * 1e-5)), x)
    assert ("pairwise" in c.source) == cloops._libmvec("exp")
    c = looped(lambda x: wnp.sum(x * x), x)
    assert "pairwise" in c.source


def test_sum_to_of_broadcasting(loops):
    g = wg.grad(lambda b, x: wnp.sum(wnp.tanh(x + b) * x), argnums=0)
    b, x = RNG.normal(size=(1, 5)), RNG.normal(size=(4, 3, 5))
    np.testing.assert_allclose(looped(g, b, x)(b, x), g(b, x), rtol=1e-13)


def test_softmax_reads_its_max_after_the_loop(loops):
    def softmax(x):
        e = wnp.exp(x - wnp.max(x, axis=1, keepdims=True))
        return e / wnp.sum(e, axis=1, keepdims=True)
    x = RNG.normal(size=(4, 9))
    np.testing.assert_allclose(looped(softmax, x)(x), softmax(x), rtol=1e-14)


# ---- matrix products -------------------------------------------------------------------------
def test_matmul_of_vectors_and_matrices(loops):
    a, b = RNG.normal(size=(4, 6)), RNG.normal(size=(6, 3))
    u, v = RNG.normal(size=6), RNG.normal(size=4)

    def f(a, b, u, v):
        return a @ b, u @ b, a @ u, u @ u, a.T @ v, (a @ b).T @ v
    got = looped(f, a, b, u, v)(a, b, u, v)
    for g, e in zip(got, f(a, b, u, v)):
        np.testing.assert_allclose(g, e, rtol=1e-13, atol=1e-14)


def no_scipy_blas(monkeypatch):
    """SciPy's BLAS as if SciPy were not installed."""
    import sys
    monkeypatch.setitem(sys.modules, "scipy.linalg.cython_blas", None)   # (ImportError)
    monkeypatch.setattr(cloops, "_DGEMM", {})


@pytest.mark.parametrize("shape", [(40, 50, 30), (1, 300, 20), (64, 1, 70), (30, 200, 1)])
def test_matrix_products_call_blas_with_each_transpose_flag(loops, shape):
    if cloops.dgemm_address() is None:
        pytest.skip("no SciPy BLAS")
    m, k, n = shape
    a, b = RNG.normal(size=(m, k)), RNG.normal(size=(k, n))
    at, bt = a.T.copy(), b.T.copy()

    def f(a, b, at, bt):      # (the transposes are views with swapped strides: no copy)
        return a @ b, at.T @ b, a @ bt.T, at.T @ bt.T, (at.T @ b) * 2.0 + 1.0
    args = (a, b, at, bt)
    c = looped(f, *args)
    assert c.source.count("wg_gemm(wg_dgemm") == 5 and "for (long k" not in c.source
    for got, want in zip(c(*args), numpy_compiled(f, *args)):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13 * np.abs(want).max())


def test_small_products_and_products_of_vectors_stay_loops(loops):
    a, b, u = RNG.normal(size=(8, 8)), RNG.normal(size=(8, 8)), RNG.normal(size=300)
    c = looped(lambda a, b, u: (a @ b, u @ u), a, b, u)
    assert "wg_gemm" not in c.source and "for (long k" in c.source
    # (a broadcast operand is no matrix BLAS reads: loops too)
    f = lambda a, v: a @ wnp.broadcast_to(v[:, None], (40, 40))             # noqa: E731
    a, v = RNG.normal(size=(40, 40)), RNG.normal(size=40)
    c = looped(f, a, v)
    assert "wg_gemm(wg_dgemm" not in c.source
    np.testing.assert_allclose(c(a, v), f(a, v), rtol=1e-13, atol=1e-13 * np.abs(f(a, v)).max())


def test_matrix_products_without_scipy_are_loops(loops, monkeypatch):
    no_scipy_blas(monkeypatch)
    assert cloops.dgemm_address() is None
    a, b = RNG.normal(size=(30, 40)), RNG.normal(size=(30, 20))
    f = lambda a, b: a.T @ b                                                # noqa: E731
    c = looped(f, a, b)
    assert "wg_gemm" not in c.source
    np.testing.assert_allclose(c(a, b), f(a, b), rtol=1e-13, atol=1e-13 * np.abs(f(a, b)).max())


# ---- gathers and scatter-adds at index arrays ------------------------------------------
IDX = np.array([3, -1, 3, 0, 5, 3, -6])             # (repeated, negative)


def gather_cases():
    # (data of their own: drawn from RNG, they changed with the tests run before)
    draw = np.random.default_rng(31)
    table, cols = draw.normal(size=(6, 5)), np.array([[0, -2], [4, 4]])
    along = draw.integers(-5, 5, size=(6, 3))
    return {
        "x[idx]": (lambda x: x[IDX] * 2.0, (table,)),
        "x[:, idx]": (lambda x: x[:, cols] + 1.0, (table,)),
        "x[i] traced": (lambda x, i: x[i] * x[i], (table[:, 0].copy(), IDX)),
        "take axis 0": (lambda x, i: wnp.take(x, i, axis=0) - 1.0, (table, IDX)),
        "take_along_axis": (lambda x, i: wnp.take_along_axis(x, i, axis=1) ** 2,
                            (table, along)),
        "int64 rows": (lambda x, i: x[i], (draw.integers(-9, 9, size=(6, 3)), IDX)),
    }


@pytest.mark.parametrize("case", list(gather_cases()))
def test_gathers_and_their_scatter_add_gradients_are_numpy_bit_for_bit(loops, case):
    f, args = gather_cases()[case]
    c = looped(f, *args)
    assert "wg_index(" in c.source
    same(c(*args), numpy_compiled(f, *args))
    if args[0].dtype != np.float64:
        return
    # (a cube, not sin: the loops' vector cos may differ from NumPy's in the last bits,
    # and the check is of the order of the adds)
    g = wg.grad(lambda x, *rest: wnp.sum(f(x, *rest) * f(x, *rest) * f(x, *rest)))
    got = looped(g, *args)
    assert "scatter-add" in got.source
    same(got(*args), numpy_compiled(g, *args))       # (repeats added in NumPy's order)
    fd = fd_jacobian(lambda v: float(np.sum(f(v, *args[1:]) ** 3)), args[0], 1e-6)
    # (differences of a sum of sixth powers lose about eps * sum / h to rounding)
    assert_close(got(*args), fd.reshape(args[0].shape), rtol=1e-6,
                 atol=1e-8 * np.abs(fd).max())


def test_many_repeats_sum_in_numpys_order(loops):
    v = RNG.normal(size=5000) * 10.0 ** RNG.integers(-8, 8, size=5000)
    i = RNG.integers(-3, 3, size=5000)              # (each of 6 places about 800 times)

    def put(v, i):                      # (put_along_axis: take_along_axis's transpose)
        return wg.vjp(lambda x: wnp.take_along_axis(x, i, axis=0), np.zeros(6))[1](v)[0]
    c = looped(put, v, i)
    same(c(v, i), numpy_compiled(put, v, i))
    want = np.zeros(6)
    np.add.at(want, i, v)
    same(c(v, i), want)


@pytest.mark.parametrize("bad", [6, -7, 100])
def test_indices_out_of_bounds_raise_indexerror(loops, bad):
    x, i = RNG.normal(size=(6, 5)), IDX.copy()
    i[4] = bad
    words = f"index {bad} is out of bounds for an axis of size 6"
    gather = looped(lambda x, i: wnp.take(x, i, axis=0) * 2.0, x, IDX)
    with pytest.raises(IndexError, match=words):
        gather(x, i)
    w = RNG.normal(size=(7, 5))        # (a gradient that is a scatter alone)
    scatter = looped(wg.grad(lambda x, i: wnp.sum(wnp.take(x, i, axis=0) * w)), x, IDX)
    assert "gather" not in scatter.source
    with pytest.raises(IndexError, match=words):
        scatter(x, i)
    same(scatter(x, IDX), numpy_compiled(
        wg.grad(lambda x, i: wnp.sum(wnp.take(x, i, axis=0) * w)), x, IDX))


def test_large_embedding_gradients_are_loops_not_refused():
    table, i = RNG.normal(size=(2000, 128)), RNG.integers(-2000, 2000, size=512)
    f = wg.grad(lambda t, i: wnp.sum((t[i] * 2.0 - 1.0) ** 2))
    c = wg.compile(f, table, i, backend="c")      # (512 000 elements: scalarised, refused)
    assert c.entry.looped and len(c.source) < 5000
    same(c(table, i), numpy_compiled(f, table, i))


# ---- derivatives -------------------------------------------------------------------------------
def mlp_loss(params, x, y):
    (w1, b1), (w2, b2) = params
    h = wnp.tanh(x @ w1 + b1)
    return wnp.mean((h @ w2 + b2 - y) ** 2)


@pytest.mark.parametrize("name", ["rosen", "heat", "mlp"])
def test_gradients_against_eager_and_central_differences(loops, name):
    if name == "rosen":
        f, args = rosen, (RNG.uniform(-1, 1, size=30),)
    elif name == "heat":
        f, args = heat, (RNG.normal(size=(7, 9)),)
    else:
        params = ((RNG.normal(size=(3, 5)), RNG.normal(size=5)),
                  (RNG.normal(size=(5, 2)), RNG.normal(size=2)))
        x, y = RNG.normal(size=(6, 3)), RNG.normal(size=(6, 2))
        f = lambda w1: mlp_loss(((w1, params[0][1]), params[1]), x, y)     # noqa: E731
        args = (params[0][0],)
    g = wg.grad(f)
    got = looped(g, *args)(*args)
    np.testing.assert_allclose(got, g(*args), rtol=1e-12, atol=1e-13)
    fd = fd_jacobian(lambda v: float(f(v)), args[0], 1e-6).reshape(args[0].shape)
    assert_close(got, fd, rtol=1e-6, atol=1e-6)
    if name == "rosen":              # the gradient's sums are none: bit for bit
        same(got, numpy_compiled(g, *args))


def classifier(sizes, batch, seed=3):
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        params += [rng.normal(scale=fan_in ** -0.5, size=(fan_in, fan_out)),
                   rng.normal(scale=0.1, size=fan_out)]
    return params, rng.normal(size=(batch, sizes[0])), rng.integers(0, sizes[-1], size=batch)


def ce_loss(params, x, y):
    """benchmarks/arrays.py's MLP: tanh layers, the fused softmax cross-entropy."""
    h = x
    for i in range(0, len(params), 2):
        h = h @ params[i] + params[i + 1]
        h = wnp.tanh(h) if i + 2 < len(params) else h
    return wg.nn.cross_entropy(h, y)


@pytest.mark.parametrize("batch", [1, 24])
def test_mlp_cross_entropy_gradient_with_blas(loops, batch):
    params, x, y = classifier((30, 20, 20, 5), batch)
    g = wg.value_and_grad(ce_loss)
    c = looped(g, params, x, y)
    blas = cloops.dgemm_address() is not None and batch > 1
    assert ("wg_gemm(wg_dgemm" in c.source) == blas
    (value, got), (v0, want) = c(params, x, y), g(params, x, y)
    np.testing.assert_allclose(value, v0, rtol=1e-13)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    for k in (0, 2, 5):            # central differences at a few entries of a few params
        p = params[k]
        for j in RNG.choice(p.size, 3, replace=False):
            def at(t):
                q = list(params)
                q[k] = p.copy().reshape(-1)
                q[k][j] += t
                q[k] = q[k].reshape(p.shape)
                return float(ce_loss(q, x, y))
            fd = (at(1e-6) - at(-1e-6)) / 2e-6
            assert_close(got[k].reshape(-1)[j], fd, rtol=1e-6, atol=1e-8)


def test_cross_entropy_labels_are_checked_as_by_the_numpy_code(loops):
    params, x, y = classifier((30, 20, 5), 12)
    c = looped(wg.grad(ce_loss), params, x, y)
    python = wg.compile(wg.grad(ce_loss), params, x, y, backend="python")
    assert c.entry.looped and "checked_labels" in c.entry.glue
    for bad in (5, -1, -100):
        z = y.copy()
        z[3] = bad
        with pytest.raises(ValueError, match="labels must lie in range") as eager:
            python(params, x, z)
        with pytest.raises(ValueError) as compiled:
            c(params, x, z)
        assert str(compiled.value) == str(eager.value)
    # the entry keeps its own parameters beside the checks' (their loop variable once
    # replaced them, and code("python") then failed)
    assert "def " in c.code("python")


def test_cross_entropy_of_extreme_rows(loops):
    z = RNG.normal(size=(6, 30))
    z[1] = -np.inf                 # (no class: nan, as NumPy gives)
    z[2, 4] = np.inf
    z[3, :5] = 1e300
    y = np.array([0, 1, 4, 0, 29, 7])
    g = lambda z, y: wg.grad(wg.nn.cross_entropy)(z, y)                     # noqa: E731
    with np.errstate(all="ignore"):
        want = numpy_compiled(g, z, y)
        got = looped(g, z, y)(z, y)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-16, equal_nan=True)


def test_second_derivatives(loops):
    def f(x):
        return wnp.sum(wnp.sin(x[1:] * x[:-1])) + wnp.sum(wnp.exp(-x ** 2))
    x, v = RNG.normal(size=8), RNG.normal(size=8)
    h = wg.hessian(f)
    np.testing.assert_allclose(looped(h, x)(x), h(x), rtol=1e-12, atol=1e-13)
    hvp = lambda x, v: wg.jvp(wg.grad(f), (x,), (v,))[1]                  # noqa: E731
    got = looped(hvp, x, v)(x, v)
    np.testing.assert_allclose(got, h(x) @ v, rtol=1e-12, atol=1e-13)
    fd = (np.asarray(wg.grad(f)(x + 1e-6 * v)) - np.asarray(wg.grad(f)(x - 1e-6 * v))) / 2e-6
    assert_close(got, fd, rtol=1e-6, atol=1e-6)


# ---- choice, fallbacks, refusals -----------------------------------------------------------
def test_large_arrays_are_loops_and_small_ones_scalarised():
    small = wg.compile(wg.grad(rosen), np.ones(5), backend="c")
    assert not getattr(small.entry, "looped", False) and "in[0]" in small.source
    n = 200_000                  # scalarised, it would be refused or take minutes
    x = RNG.uniform(-1, 1, size=n)
    big = wg.compile(wg.grad(rosen), x, backend="c")
    assert big.entry.looped and len(big.source) < 2000
    same(big(x), numpy_compiled(wg.grad(rosen), x))
    assert big.count()["mul"] > n                      # counted as the NumPy code's
    assert "def " in big.code("python")


def test_what_loops_do_not_write_is_scalarised_or_refused_by_name(loops):
    gather = lambda x: x[np.array([2, 0, 1]), np.array([1, 1, 0])] * 2.0  # noqa: E731
    x = RNG.normal(size=(4, 3))
    c = wg.compile(gather, x, backend="c")
    assert not getattr(c.entry, "looped", False)
    same(c(x), gather(x))
    with pytest.raises(ValueError, match="sort"):
        wg.compile(lambda x: wnp.sort(x) * 2.0, np.ones(300_000), backend="c")


def test_calls_in_threads_do_not_share_temporaries():
    f = lambda x: (x[1:] * x[:-1]) @ (wnp.exp(x[::-1])[1:] + 1.0)           # noqa: E731
    x0 = RNG.normal(size=4000)
    c = looped(f, x0)
    xs = [RNG.normal(size=4000) for _ in range(8)]
    expected = [f(x) for x in xs]
    out = [None] * len(xs)

    def run(k):
        for _ in range(50):
            out[k] = c(xs[k])
    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_allclose(out, expected, rtol=1e-12)
