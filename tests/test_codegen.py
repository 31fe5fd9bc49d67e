"""Back-ends over the one emitter: C compiled with the system compiler, Python, FORTRAN and
ADDS text of a compiled function; injection attempts; operation counts (Table 2, and
`wengert count` against the ADDS output); pictures (`wg.draw`, `wengert draw`)."""
import ast
import io
import math
import os
import re
import shutil
from pathlib import Path

import numpy
import pytest

import wengert as wg
import wengert.math as wm
from wengert.codegen.emit import EmitError
from wengert import cli
from wengert.codegen import c as C, draw as D
import emitted
from test_compile import SCALAR, same
from test_seeds import powell, powell_grad, powell_hessian

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")
HAVE_CC = any(shutil.which(cc) for cc in (os.environ.get("CC") or "cc", "gcc", "clang"))
needs_cc = pytest.mark.skipif(not HAVE_CC, reason="no C compiler on this machine")
rng = numpy.random.default_rng(3)


# ---- C ------------------------------------------------------------------------------------------
@needs_cc
@pytest.mark.parametrize("kind", ["tuple", "array"])
def test_c_powell_gradient_and_hessian(kind):
    x = (3.0, -1.0, 0.0, 1.0) if kind == "tuple" else numpy.array([3.0, -1.0, 0.0, 1.0])
    g = wg.compile(wg.grad(powell), x, backend="c")
    H = wg.compile(wg.hessian(powell), x, backend="c")
    assert "void wg_powell(const double *restrict in, double *restrict out)" in g.source
    for _ in range(3):
        xv = rng.uniform(-2, 2, 4)
        xv = tuple(xv) if kind == "tuple" else xv
        numpy.testing.assert_allclose(g(xv), powell_grad(xv), rtol=1e-13, atol=1e-11)
        numpy.testing.assert_allclose(H(xv), powell_hessian(xv), rtol=1e-13, atol=1e-10)


@needs_cc
@pytest.mark.parametrize("name", [c[0] for c in SCALAR])
def test_c_agrees_with_python_on_the_scalar_examples(name):
    _, f, args = next(c for c in SCALAR if c[0] == name)
    nums = tuple(range(len(args)))
    for fn in (f, wg.grad(f, argnums=nums), wg.hessian(f, argnums=nums)):
        same(wg.compile(fn, *args, backend="c")(*args), fn(*args), rtol=1e-12)


@needs_cc
def test_c_functions_named_like_the_helpers_compile():
    # the C function is "wg_" + its name: remainder and sign clashed with the helpers
    # wg_remainder and wg_sign ("conflicting types")
    import wengert.numpy as wnp

    def remainder(x, y):
        return wnp.remainder(x, y) * 2.0

    def sign(x):
        return wnp.sign(x) * 2.0 + x
    assert wg.compile(remainder, 5.0, 3.0, backend="c")(-5.0, 3.0) == 2.0 * (-5.0 % 3.0)
    assert wg.compile(sign, 2.0, backend="c")(-3.0) == -5.0


@needs_cc
def test_c_build_directory_goes_with_the_process(tmp_path):
    # each process compiles into a private temporary directory; left behind, every run
    # that used backend="c" would leave one in the temporary directory for good
    import subprocess
    import sys
    code = ("import wengert as wg; from wengert.codegen import c\n"
            "assert wg.compile(lambda x: x * x, 3.0, backend='c')(2.0) == 4.0\n"
            "print(c._build_dir)")
    env = dict(os.environ, TMPDIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout.strip()
    assert out.startswith(str(tmp_path)) and not os.path.exists(out)
    assert os.listdir(tmp_path) == []


@needs_cc
def test_c_follows_ieee_like_numpy():
    c = wg.compile(lambda x: wm.log(x) + wm.sqrt(x) + 1 / x, 1.0, backend="c")
    assert math.isnan(c(-1.0)) and c(0.0) == math.inf or math.isnan(c(0.0))
    m = wg.compile(lambda x, y: wm.maximum(x, y) + wm.sign(x), 1.0, 2.0, backend="c")
    assert math.isnan(m(float("nan"), 1.0)) and m(-0.0, -1.0) == 0.0


def _two_sum_error(a, b):             # Knuth's TwoSum: the rounding error of a + b
    s = a + b
    bb = s - a
    return (a - (s - bb)) + (b - bb)


def _kahan(x):                          # compensated summation
    s = c = 0.0
    for k in range(x.shape[0]):
        y = x[k] - c
        t = s + y
        c = (t - s) - y
        s = t
    return s


_ROUNDING_IDIOMS = [
    ("round to integer", lambda x: (x + 2.0 ** 52) - 2.0 ** 52, (2.7,)),
    ("two-sum error", _two_sum_error, (1e16, 1.5)),
    ("exact step", lambda x, h: (x + h) - x, (1.0, 1e-17)),
    ("constants", lambda x: 3.0 * (3.0 * x) - 0.1 * (7.0 * x), (0.1,)),
    ("kahan", _kahan, (numpy.array([1e16, 1.0, 1.0, 1.0, 1.0, -1e16]),)),
]


@pytest.mark.parametrize("backend", ["python", pytest.param("c", marks=needs_cc)])
@pytest.mark.parametrize("name,f,args", _ROUNDING_IDIOMS, ids=[c[0] for c in _ROUNDING_IDIOMS])
def test_compiled_code_rounds_as_the_function_does(backend, name, f, args):
    """Float code is emitted without the real-number rewrites of ADDS's pass: idioms that
    rely on rounding give the traced function's numbers bit for bit, at random points
    too."""
    c = wg.compile(f, *args, backend=backend)
    assert c.entry.flavour in ("float", "c")
    assert c(*args) == f(*args)
    gen = numpy.random.default_rng(3)
    for _ in range(20):
        pts = [gen.normal(size=numpy.shape(a)) * 10.0 ** gen.integers(-3, 17) for a in args]
        pts = [p if numpy.ndim(p) else float(p) for p in pts]
        assert c(*pts) == f(*pts)


@needs_cc
def test_c_source_of_a_python_compiled_function_compiles_and_agrees():
    c = wg.compile(wg.grad(powell), numpy.ones(4))
    src = c.code("c")
    fn = C.load(src, "wg_powell")
    import ctypes
    x = rng.uniform(-1, 1, 4)
    out = (ctypes.c_double * 4)()
    fn((ctypes.c_double * 4)(*x), out)
    numpy.testing.assert_allclose(list(out), powell_grad(x), rtol=1e-13)


def test_missing_c_compiler_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setattr(C.shutil, "which", lambda name: None)
    with pytest.raises(C.CompilerNotFound, match="apt-get install gcc"):
        wg.compile(lambda x: x * x, 1.0, backend="c")


def test_c_refuses_what_it_cannot_write():
    with pytest.raises(ValueError, match="backend='python'"):
        wg.compile(lambda a: wg.numpy.linalg.det(a), numpy.eye(2), backend="c")


def test_refusals_of_element_by_element_code_say_why():
    inv = wg.compile(wg.numpy.linalg.inv, numpy.eye(3) + 0.1)
    for language in ("fortran", "adds", "c"):
        with pytest.raises(ValueError, match="inv, a primitive that has no element-by-"):
            inv.code(language)
    either = lambda x, y: ((x < y) + (x < 2 * y)) * 1.0      # NumPy's True + True is True
    with pytest.raises(ValueError, match="sum of truth values"):
        wg.compile(either, 0.3, 0.7, backend="float")
    if HAVE_CC:                         # (C's bools are typed: the sum is its ||)
        c = wg.compile(either, 0.3, 0.7, backend="c")
        assert "||" in c.source
        for x, y in [(0.3, 0.7), (0.3, 0.2), (0.3, 0.1), (numpy.nan, 1.0)]:
            assert c(x, y) == either(numpy.float64(x), numpy.float64(y))
    with pytest.raises(ValueError, match="dtype float32"):
        wg.compile(lambda x: x * 2, numpy.ones(2, numpy.float32), backend="float")
    large = wg.compile(lambda x: wg.numpy.sum(wg.numpy.sin(x)),
                       wg.ShapeDtype((10 ** 7,), numpy.float64))
    with pytest.raises(ValueError, match="arrays of 20,000,001 elements in all, more than"):
        large.code("fortran")


def test_text_of_a_long_scalar_graph():
    # 9,000 steps of 3 operations: FORTRAN text was refused above 20,000 nodes, as if the
    # graph had arrays
    def f(x):
        for _ in range(9000):
            x = wm.sin(x) * 0.5 + 0.25
        return x
    text = wg.compile(f, 0.3).code("fortran")
    assert text.count("SIN(") == 9000


# ---- Python, FORTRAN and ADDS text ------------------------------------------------------------
def test_generated_python_parses_and_names_temporaries_after_nodes():
    c = wg.compile(wg.grad(powell), (1.0, 2.0, 3.0, 4.0))
    tree = ast.parse(c.source)
    assert isinstance(tree.body[0], ast.FunctionDef) and tree.body[0].name == "powell"
    assert re.search(r"\bV\d{4} = ", c.source)
    # used once: inlined, so fewer statements than operations
    statements = [line for line in c.source.splitlines() if " = " in line]
    assert len(statements) < sum(c.count().values())


@pytest.mark.parametrize("language", ["fortran", "adds"])
def test_fortran_and_adds_text_of_a_compiled_function(language):
    c = wg.compile(wg.grad(powell), (1.0, 2.0, 3.0, 4.0))
    text = c.code(language)
    x = tuple(rng.uniform(-2, 2, 4))
    env = emitted.run(text, {(f"X_{i}", ()): v for i, v in enumerate(x)},
                      fortran=language == "fortran")
    numpy.testing.assert_allclose([env[("Y", (k,))] for k in (1, 2, 3, 4)], powell_grad(x),
                                  rtol=1e-13)
    a = wg.compile(wg.grad(lambda x: (x ** 2).sum()), numpy.ones(2)).code(language)
    assert ("X(2)" if language == "fortran" else "X[2]") in a


@pytest.mark.parametrize("language, names", [
    ("fortran", {"X": "X1", "max": "MAX2", "Max": "MAX3"}),   # MAX1 is an intrinsic too
    ("adds", {"X": "X1", "max": "MAX", "Max": "MAX1"})])
def test_text_gives_custom_primitives_names_of_their_own(language, names):
    # A primitive named like an argument (X), like a FORTRAN intrinsic (a call of MAX would
    # reach the intrinsic), or like another but for case: each is called by a name of its
    # own, and a comment says which.
    twice = wg.primitive(lambda v: 2 * v, name="x").defpartials(lambda v, ans: 2.0)
    thrice = wg.primitive(lambda v: 3 * v, name="max").defpartials(lambda v, ans: 3.0)
    square = wg.primitive(lambda v: v * v, name="Max").defpartials(lambda v, ans: 2 * v)
    text = wg.compile(lambda x, y: twice(x) + thrice(y) * square(x), 1.0, 2.0).code(language)
    for name, written in names.items():
        if written != name.upper():
            assert f"OPERATOR {name.upper()} IS WRITTEN {written} (" in text
    ops = {names["X"]: (lambda at, v: 2 * v, 0), names["max"]: (lambda at, v: 3 * v, 0),
           names["Max"]: (lambda at, v: v * v, 0)}
    env = emitted.run(text, {("X", ()): 1.5, ("Y_", ()): -2.0}, language == "fortran", ops)
    assert env[("Y", (1,))] == pytest.approx(2 * 1.5 + 3 * -2.0 * 1.5 ** 2)


def _rounding(x):
    import wengert.numpy as wnp
    return wnp.floor(x) * 3 + wnp.ceil(x) * 5 + wnp.trunc(x) * 7 + wnp.round(x) * 11 \
        + wnp.round(x, 1) * 13 + wnp.round(x, -1) * 17


needs_gfortran = pytest.mark.skipif(shutil.which("gfortran") is None,
                                    reason="gfortran is not installed")


def _fortran_rows(tmp_path, text, names, rows, n):
    """Y(1..n) of FORTRAN statements `text`, compiled with gfortran and run once for each
    row of values of the input variables `names`: an array, one row per row."""
    import subprocess
    lines = ["      PROGRAM T", "      IMPLICIT DOUBLE PRECISION (A-Z)", "      INTEGER I, K",
             f"      DIMENSION Y({n}), XS({len(rows)},{len(names)})"]
    def literal(v):             # (Fortran 77 has no nan or inf: ZZ is a zero variable)
        return (f"{v:.17e}".replace("e", "D") if math.isfinite(v) else
                "ZZ/ZZ" if math.isnan(v) else f"{'-' * (v < 0)}1D0/ZZ")
    lines += ["      ZZ = 0D0"]
    lines += [f"      XS({i + 1},{j + 1}) = {literal(float(v))}"
              for i, row in enumerate(rows) for j, v in enumerate(row)]
    lines += [f"      DO 10 I = 1, {len(rows)}"]
    lines += [f"      {name} = XS(I,{j + 1})" for j, name in enumerate(names)]
    lines += text.splitlines()
    lines += [f"      WRITE(*,'(ES30.17E3)') (Y(K), K = 1, {n})", "   10 CONTINUE", "      END"]
    (tmp_path / "t.f").write_text("\n".join(lines) + "\n")
    subprocess.run(["gfortran", "-std=legacy", "-o", str(tmp_path / "t"), "t.f"], check=True,
                   capture_output=True, cwd=tmp_path)
    out = subprocess.run([str(tmp_path / "t")], check=True, capture_output=True, text=True)
    return numpy.array([float(v) for v in out.stdout.split()]).reshape(len(rows), n)


@needs_gfortran
def test_fortran_rounding_is_numpys(tmp_path):
    # FORTRAN's FLOOR and CEILING are INTEGER, wrong past 2**31, and its ANINT rounds halves
    # away from zero where NumPy rounds them to even: the text must be NumPy's all the same
    xs = [-2.5, -2.0, -0.5, 0.0, 0.5, 1.5, 2.0, 2.5, 0.25, 0.35, -0.45, 15.0, 25.0, 3e9 + 0.5,
          -3e9 - 0.5, 1e300]
    text = wg.compile(_rounding, 1.0).code("fortran")
    assert "FLOOR" not in text and "CEILING" not in text
    got = _fortran_rows(tmp_path, text, ["X"], [[x] for x in xs], 1)
    assert list(got[:, 0]) == [float(_rounding(numpy.float64(x))) for x in xs]
    # each alone, for the sign of a zero: ceil(-0.5) is -0.0, as NumPy's
    import wengert.numpy as wnp
    xs = [-0.5, -0.0, 0.0, 0.3, -0.3, -1.0, 2.5, -2.5]
    for rounding in (wnp.floor, wnp.ceil, wnp.trunc, wnp.round, wnp.rint):
        f = lambda x: rounding(x)               # (the input is X: round's argument is a)
        got = _fortran_rows(tmp_path, wg.compile(f, 1.0).code("fortran"), ["X"],
                            [[x] for x in xs], 1)[:, 0]
        want = f(numpy.array(xs))
        numpy.testing.assert_array_equal(got, want)
        numpy.testing.assert_array_equal(numpy.signbit(got), numpy.signbit(want))


def _fortran_terms(x, y):
    """One output for each primitive the FORTRAN text writes other than by its own name."""
    import wengert.numpy as wnp
    from wengert.scipy import special
    return (wm.sign(x), abs(x), wnp.maximum(x, y) * wnp.minimum(x, 2.0),
            wg.select(x > y, x * y, x - y),
            (x <= y) * 1.0 + (x >= y) * 2.0 + (x == y) * 4.0 + (x != y) * 8.0,
            wnp.remainder(3 * x, y) + wnp.fmod(-3 * x, y), wnp.hypot(x, y), wnp.exp2(x),
            wg.nn.relu(x - y), wnp.arcsinh(x) * wnp.arccosh(y * y + 1) + wnp.arctanh(x / 4),
            special.erf(x) + special.erfc(y), wm.cotan(x + 0.1) + wm.cbrt(x),
            wnp.round(x) + 2 * wnp.floor(y) + 3 * wnp.ceil(x) + 4 * wnp.trunc(y),
            wnp.where(wnp.logical_and(x > 0, y > 0), x, y) + wg.stop_gradient(x) * y,
            wg.select(x, 1.0, 0.0) + wg.select(x * y, y, 2.0),      # (conditions not 0 or 1)
            wnp.where(wnp.logical_or(x > 1, wnp.logical_and(y < 2, x < y)), x, 2.0),
            wnp.expm1(x) + wnp.log1p(y * y),
            # (a sum of truth values is their OR, a product their AND: True + True is True)
            ((x < y) + (x < 2 * y)) * 1.0 + ((x > y) * (x > 0.5 * y) + (y > 1)) * 2.0 + x,
            wnp.log2(x * x + 0.75) + wnp.logaddexp(x, y) + wnp.logaddexp2(y, x),
            special.expit(x) + special.logit(1 / (1 + y * y)) + special.xlogy(x, y * y + 0.5)
            + special.xlog1py(y, x * x))


@needs_gfortran
@pytest.mark.parametrize("order", [0, 1, 2])
def test_fortran_text_of_every_spelled_primitive_compiles_and_agrees(tmp_path, order):
    # Each primitive FORTRAN lacks is written with functions it has (sign as MERGE and
    # SIGN, comparisons as DOUBLE PRECISION 0 and 1, select as MERGE), or refused: the text
    # compiles, and its values and derivatives are the compiled function's, at the kinks
    # (0, -0, x = y, halves) too.
    fn = _fortran_terms
    for _ in range(order):
        fn = wg.jacfwd(fn, argnums=(0, 1))
    c = wg.compile(fn, 0.3, 1.1)
    rows = [(-2.5, 0.7), (-0.5, -1.2), (0.0, 2.0), (0.5, 0.5), (1.5, -0.3), (0.3, 1.1),
            (-0.0, 1.0), (2.5, 2.5), (0.0, -0.0), (-0.0, 0.0), (math.nan, 1.0)]
    with numpy.errstate(all="ignore"):             # (cbrt's derivative is inf at 0)
        want = numpy.array([numpy.ravel(wg.tree.flatten(c(x, y))[0]) for x, y in rows])
    got = _fortran_rows(tmp_path, c.code("fortran"), ["X", "Y_"], rows, want.shape[1])
    numpy.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
    if order == 0:          # (the text's rewrites may give a derivative's zero another sign)
        signed = ~numpy.isnan(want)                         # (a nan's sign means nothing)
        numpy.testing.assert_array_equal(numpy.signbit(got[signed]),
                                         numpy.signbit(want[signed]))


@needs_gfortran
def test_fortran_expm1_and_log1p_are_within_two_ulps(tmp_path):
    # Goldberg's log1p and Kahan's expm1: tiny arguments keep their digits (EXP(X)-1
    # would keep none at 1e-17), and the ends are NumPy's
    rng = numpy.random.default_rng(8)
    xs = numpy.concatenate([rng.uniform(-1, 1, 300), rng.choice([-1, 1], 300)
                            * 10 ** rng.uniform(-20, 2.8, 300)])
    xs = numpy.concatenate([xs[xs > -1], [0.0, -0.0, 1e-300, -1.0, math.inf, -math.inf,
                                          math.nan, 700.0, -40.0, 709.7, 710.0, -746.0,
                                          1e306, 1.7e308, -1.5, 5e-324]])
    import wengert.numpy as wnp
    text = wg.compile(lambda x: (wnp.expm1(x), wnp.log1p(x)), 0.5).code("fortran")
    got = _fortran_rows(tmp_path, text, ["X"], [[x] for x in xs], 2)
    with numpy.errstate(all="ignore"):
        want = numpy.stack([numpy.expm1(xs), numpy.log1p(xs)], axis=1)
    finite = numpy.isfinite(want) & (want != 0)
    ulps = numpy.abs(got[finite] - want[finite]) / numpy.spacing(numpy.abs(want[finite]))
    assert ulps.max() <= 2
    numpy.testing.assert_array_equal(got[~finite], want[~finite])
    numpy.testing.assert_array_equal(numpy.signbit(got[want == 0]), numpy.signbit(want[want == 0]))


@needs_gfortran
def test_fortran_log2_logaddexp_and_scipys_logistic_functions_are_within_two_ulps(tmp_path):
    # written with the functions FORTRAN has, each within 2 ulps of NumPy's and SciPy's
    # (log2 exact at powers of two, logit accurate next to 1/2; xlog1py's product rounds
    # once more than log1p), their ends NumPy's
    import wengert.numpy as wnp
    from scipy import special as sc
    from wengert.scipy import special
    rng = numpy.random.default_rng(11)
    n = 400
    xs = numpy.concatenate([rng.uniform(-1, 3, n), 10 ** rng.uniform(-310, 308, n),
                            2.0 ** rng.integers(-1074, 1024, n), 1 + rng.integers(-9, 9, n)
                            * 2.2e-16, rng.uniform(0, 1, n), 0.5 + rng.uniform(-1e-9, 1e-9, n),
                            [0.0, -0.0, -1.0, 1.0, 0.3, 0.65, math.inf, -math.inf, math.nan]])
    ys = rng.uniform(-40, 40, len(xs))
    ys[:12] = [math.inf, -math.inf, math.nan, 0.0, -0.0, 1.0, 700, -700, 1e-300, 3.0, 3.0,
               math.inf]
    xs[:12] = [1.0, -5.0, 1.0, 0.0, 2.0, 1.0, 3.0, 3.0, 0.0, 3.0, 3.0 + 1e-15, math.inf]
    text = wg.compile(lambda x, y: (wnp.log2(x), wnp.logaddexp(x, y), wnp.logaddexp2(y, x),
                                    special.expit(y), special.logit(x), special.xlogy(y, x),
                                    special.xlog1py(y, x)), 0.5, 0.3).code("fortran")
    got = _fortran_rows(tmp_path, text, ["X", "Y_"], list(zip(xs, ys)), 7)
    with numpy.errstate(all="ignore"):
        want = numpy.stack([numpy.log2(xs), numpy.logaddexp(xs, ys), numpy.logaddexp2(ys, xs),
                            sc.expit(ys), sc.logit(xs), sc.xlogy(ys, xs), sc.xlog1py(ys, xs)],
                           axis=1)
    finite = numpy.isfinite(want) & (want != 0)
    with numpy.errstate(all="ignore"):
        ulps = numpy.where(finite, numpy.abs(got - want) / numpy.spacing(numpy.abs(want)), 0)
    assert (ulps.max(axis=0) <= [2, 2, 2, 2, 2, 2, 3]).all(), ulps.max(axis=0)
    numpy.testing.assert_array_equal(got[~finite], want[~finite])
    powers = numpy.flatnonzero(numpy.frexp(xs)[0] == 0.5)
    numpy.testing.assert_array_equal(got[powers, 0], numpy.log2(xs[powers]))


@needs_gfortran
def test_fortran_cbrt_is_within_three_ulps(tmp_path):
    # |x|**(1D0/3) alone was ~60 ulps off at 1e-300 (1D0/3 is not a third), its derivative
    # 1/(3 cbrt(x)**2) ~120: one Newton step mends both (the derivative, two of cbrt's
    # errors and two roundings, within 8); 0, -0.0, inf and nan are NumPy's
    rng = numpy.random.default_rng(12)
    xs = numpy.concatenate([rng.choice([-1, 1], 400) * 10 ** rng.uniform(-320, 308, 400),
                            rng.uniform(-3, 3, 100), [0.0, -0.0, math.inf, -math.inf,
                                                      math.nan, 5e-324, 8.0, -27.0]])
    c = wg.compile(lambda x: (wm.cbrt(x), wg.grad(wm.cbrt)(x)), 0.5)
    got = _fortran_rows(tmp_path, c.code("fortran"), ["X"], [[x] for x in xs], 2)
    with numpy.errstate(all="ignore"):
        want = numpy.array([c(x) for x in xs])          # (the value: NumPy's cbrt)
    finite = numpy.isfinite(want) & (want != 0)
    with numpy.errstate(invalid="ignore"):                 # (inf - inf where not finite)
        ulps = numpy.where(finite, abs(got - want) / numpy.spacing(abs(want)), 0).max(axis=0)
    assert (ulps <= [3, 8]).all(), ulps
    numpy.testing.assert_array_equal(got[~finite], want[~finite])
    numpy.testing.assert_array_equal(numpy.signbit(got[want == 0]),
                                     numpy.signbit(want[want == 0]))


@needs_gfortran
def test_fortran_gamma_functions(tmp_path):
    from wengert.scipy import special
    c = wg.compile(lambda x: (special.gamma(x), special.gammaln(x)), 1.5)
    rows = [[0.5], [1.5], [-2.5], [7.25], [30.0], [-math.inf]]  # (gammaln(-inf): -inf)
    got = _fortran_rows(tmp_path, c.code("fortran"), ["X"], rows, 2)
    numpy.testing.assert_allclose(got, [c(*r) for r in rows], rtol=1e-13)


@pytest.mark.parametrize("backend", ["python", "numpy", pytest.param("c", marks=needs_cc)])
def test_sign_is_numpys_at_signed_zeros_and_nan(backend):
    # NumPy's sign is +0.0 at -0.0 (and nan at nan): the scalar code, C and NumPy agree
    # with it, so the derivative of abs at -0.0 does not depend on the backend
    sign = wg.compile(wm.sign, 1.0, backend=backend)
    dabs = wg.compile(wg.grad(abs), 1.0, backend=backend)
    for x in (-0.0, 0.0, math.nan, -2.0, math.inf):
        want = numpy.sign(x)
        for got in (sign(x), dabs(x), wm.sign(x), wg.grad(abs)(x)):
            assert (got == want and math.copysign(1, got) == math.copysign(1, want)
                    or math.isnan(got) and math.isnan(want)), (x, got)


@needs_gfortran
def test_fortran_text_keeps_what_gfortran_would_not_compile_or_would_read_otherwise(tmp_path):
    import wengert.numpy as wnp
    from wengert.scipy import special
    # inputs named like the intrinsics the text calls are renamed (MERGE, AINT, GAMMA...)
    def f(merge, aint, gamma, hypot):
        return (wg.select(merge < aint, merge, aint) * wnp.floor(aint) + special.gamma(gamma)
                + wnp.hypot(hypot, merge))
    args = (1.3, 0.7, 2.5, -0.4)
    text = wg.compile(f, *args).code("fortran")
    for name in ("MERGE", "AINT", "GAMMA", "HYPOT"):
        assert f"C {name} IS WRITTEN {name}1 ({name} IS RESERVED)" in text
    got = _fortran_rows(tmp_path, text, ["MERGE1", "AINT1", "GAMMA1", "HYPOT1"], [args], 1)
    numpy.testing.assert_allclose(got[0, 0], f(*args), rtol=1e-13)
    # a constant -0.0 keeps its sign (0 would be +0.0), and an exponent past INTEGER's range
    # is written as a real one
    g = lambda x: (x / wm.sin(-0.0), wm.atan2(-0.0, x), x ** 3000000000, (-x) ** 3000000001)
    text = wg.compile(g, 1.0).code("fortran")
    got = _fortran_rows(tmp_path, text, ["X"], [[1.0], [-1.0]], 4)
    with numpy.errstate(all="ignore"):
        numpy.testing.assert_array_equal(got, [g(numpy.float64(1.0)), g(numpy.float64(-1.0))])
    assert "-0.0" in wg.compile(g, 1.0).code("adds")
    # MOD of a constant 0 is refused (gfortran rejects it; NumPy gives nan)
    for h in (lambda x: wnp.fmod(x, 0.0), lambda x, y: wnp.remainder(x, y - y)):
        with pytest.raises(EmitError, match="MOD of a constant 0"):
            wg.compile(h, *(1.0,) * h.__code__.co_argcount).code("fortran")


def test_adds_text_renames_inputs_named_like_its_operators_and_keywords():
    from wengert.adds import Session
    def f(sin, count, fort):
        return wm.sin(sin) * count + fort
    text = wg.compile(f, 0.5, 2.0, 3.0).code("adds")
    assert "% SIN IS WRITTEN SIN1 (SIN IS RESERVED)" in text and "COUNT1" in text
    Session(stdout=io.StringIO()).execute(text)
    env = emitted.run(text, {("SIN1", ()): 0.5, ("COUNT1", ()): 2.0, ("FORT", ()): 3.0},
                      fortran=False)
    assert env[("Y", (1,))] == pytest.approx(f(0.5, 2.0, 3.0), rel=1e-15)


@pytest.mark.parametrize("backend", ["python", "numpy", pytest.param("c", marks=needs_cc)])
def test_backends_agree_with_numpy_on_comparisons_in_arithmetic_and_ties(backend):
    # found by differential testing against eager NumPy values: a comparison's operands
    # cast to Python floats (1/0 raised ZeroDivisionError), -a*b with a bool a (NumPy has no
    # negative of a bool), a quotient of two comparisons (C ints), maximum at a tie of
    # signed zeros (the first argument, where NumPy gives the second)
    import wengert.numpy as wnp
    cases = [
        (lambda x, y: 1.0 / ((x < y) * 1.0), (1.0, 0.0)),
        (lambda x, y: ((x < y) * 1.0) ** -1, (1.0, 0.0)),
        (lambda x, y: -(wnp.logical_and(x < 1, y < 1) * wm.sin(y)), (0.5, 0.5)),
        (lambda x, y: (x < y) / (x < 2 * y) + x, (0.7, 0.3)),
        (lambda x, y: (x < y) / (x < 2 * y) + x, (-1.5, -1.0)),
        (lambda x, y: wm.atan2(x, wm.maximum(x, y)) + wm.atan2(y, wm.minimum(y, x)), (0.0, -0.0)),
        (lambda x, y: wm.atan2(x, wm.maximum(x, y)) + wm.atan2(y, wm.minimum(y, x)), (-0.0, 0.0)),
    ]
    for f, point in cases:
        with numpy.errstate(all="ignore"):
            want = f(*map(numpy.float64, point))
            got = wg.compile(f, 0.3, 1.1, backend=backend)(*point)
        numpy.testing.assert_array_equal(got, want)
        assert math.copysign(1, got) == math.copysign(1, want) or math.isnan(want)


@pytest.mark.parametrize("f, name", [
    (numpy.spacing, "spacing"),
    (lambda x: __import__("wengert.scipy.special").scipy.special.erfinv(x), "erfinv"),
    (lambda x: wg.grad(__import__("wengert.scipy.special").scipy.special.gamma)(x), "digamma")])
def test_fortran_refuses_what_it_cannot_write(f, name):
    # FORTRAN has no SPACING of NumPy's meaning, no ERFINV, no DIGAMMA: the text refuses
    # them by name rather than write a call of nothing
    with pytest.raises(EmitError, match=f"FORTRAN has no {name}"):
        wg.compile(f, 0.5).code("fortran")


def test_adds_text_is_the_adds_language():
    # The ADDS text reads back as ADDS: its sixteen functions and arithmetic, nothing else
    from wengert.adds import Session
    f = lambda x, y: wm.atan2(x, y) * wm.cbrt(y) + wm.cotan(x) ** 3
    text = wg.compile(wg.grad(f, argnums=(0, 1)), 0.4, 1.3).code("adds")
    out = io.StringIO()
    Session(stdout=out).execute(f"{text}count(x, y_) y;")     # (its arrays declared)
    assert "FUNCTION CALLS" in out.getvalue()
    env = emitted.run(text, {("X", ()): 0.4, ("Y_", ()): 1.3}, fortran=False)
    numpy.testing.assert_allclose([env[("Y", (1,))], env[("Y", (2,))]],
                                  wg.grad(f, argnums=(0, 1))(0.4, 1.3), rtol=1e-14)
    # array inputs are declared too, with their shapes
    text = wg.compile(lambda x, w: (x * x) @ w, numpy.ones((2, 3)), numpy.ones(3)).code("adds")
    assert text.startswith("array X[2,3];\narray W[3];\narray Y[2];\n")
    out = io.StringIO()
    Session(stdout=out).execute(f"{text}outcode(x, w) y;")
    assert out.getvalue().count(":=") == 2
    for f, name in [(abs, "abs"), (lambda x: wm.maximum(x, 1.0), "maximum"),
                    (lambda x: wg.select(x > 0, x, 1.0), "gt"), (numpy.log1p, "log1p")]:
        with pytest.raises(EmitError, match=f"ADDS has no {name}"):
            wg.compile(f, 0.5).code("adds")


def test_code_rejects_unknown_languages():
    with pytest.raises(ValueError, match="language"):
        wg.compile(lambda x: x, 1.0).code("rust")


# ---- injection --------------------------------------------------------------------------------
def _payload(marker):
    return (f"x):\n    open({str(marker)!r}, 'w').close()\n    return 0\ndef y(*a, **k"
            f"); open({str(marker)!r}, 'w') #\" */ ]; {{ }}")


def test_user_names_stay_unique_when_the_user_takes_a_suffix_first():
    from wengert.codegen.names import Names
    n = Names()
    texts = ["x", "x_2", "x", "x", "x-1", "x", "a" * 40, "a" * 33, "for"]
    names = [n.user(t) for t in texts]
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"[A-Za-z][0-9A-Za-z_]*", m) for m in names)
    assert all(m not in n.reserved for m in names)


@pytest.mark.parametrize("backend", ["python", "numpy",
                                     pytest.param("c", marks=needs_cc)])
def test_user_text_cannot_inject_code(tmp_path, backend):
    marker = tmp_path / "pwned"
    payload = _payload(marker)

    def f(d, y):
        return d[payload] * y + evil(y)
    f.__name__ = payload
    evil = wg.primitive(lambda x: 3 * x, name=payload + "'")
    evil.defpartials(lambda x, ans: 3.0)

    args = ({payload: 2.0}, 5.0)
    if backend == "c":                            # C has no spelling for a custom primitive
        evil = wm.sin
        args = ({payload: 2.0}, 5.0)
    c = wg.compile(f, *args, backend=backend)
    assert c(*args) == pytest.approx(f(*args))
    g = wg.compile(wg.grad(f, argnums=1), *args, backend=backend)
    assert g(*args) == pytest.approx(wg.grad(f, argnums=1)(*args))
    graph = wg.trace(lambda x: x * 2.0, 1.0)
    graph.inputs[0].name = payload
    assert wg.compile(graph, backend=backend)(4.0) == 8.0
    for text in (c.source, g.source, c.code("adds"), c.code("fortran")):
        assert not re.search(r"\bopen\s*\(", text.replace(repr(payload), "'...'"))
    if backend != "c":
        for text in (c.source, g.source):
            calls = [n.func.id for n in ast.walk(ast.parse(text))
                     if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
            assert "open" not in calls
    assert not marker.exists()
    dot = wg.draw(graph).dot
    assert payload not in dot and 'label="x):\\n' in dot      # quoted, newlines escaped


# ---- operation counts ---------------------------------------------------------------------------
def _run(*argv):
    out = io.StringIO()
    import contextlib
    with contextlib.redirect_stdout(out):
        status = cli.main(list(argv))
    return status, out.getvalue()


def _kinds(text):
    return {k: int(n) for n, k in re.findall(r"(\d+) (\w+)", text)}


def _ops_in(code):
    """Operations in emitted ADDS-format code, read off its text: binary + and - are
    additions, a sign is a negation, then * / ** and function calls."""
    counts = {"add": 0, "mul": 0, "div": 0, "call": 0, "pow": 0, "neg": 0}
    for line in code.splitlines():
        expr = line.split(":=", 1)[1]
        expr = re.sub(r"\(-[0-9.]+(?:[ED][-+]?[0-9]+)?\)", "C", expr)   # (-2): a constant
        tokens = re.findall(r"\*\*|[A-Z][A-Z0-9_]*\(|[A-Z0-9_.\[\],]+|[-+*/()]", expr)
        prev = None
        for t in tokens:
            if t in "+-":
                counts["add" if prev not in (None, "(", "+", "-", "*", "/", "**") else
                       "neg"] += 1
            elif t == "*":
                counts["mul"] += 1
            elif t == "/":
                counts["div"] += 1
            elif t == "**":
                counts["pow"] += 1
            elif len(t) > 1 and t.endswith("("):
                counts["call"] += 1
            prev = t
    return {k: v for k, v in counts.items() if v}


@pytest.mark.parametrize("example", ["example1.adds", "powell.adds"])
def test_wengert_count_matches_the_adds_output_and_the_emitted_code(example, tmp_path):
    path = os.path.join(EXAMPLES, example)
    status, table = _run("count", path)
    assert status == 0 and "b/a" in table
    rows = table.splitlines()
    outcode = [i for i, r in enumerate(rows) if r.startswith("outcode")][-1]
    c_kinds = _kinds(rows[outcode + 1].split("c:")[1])
    # the code the program emits, in the input format, read operation by operation
    program = Path(path).read_text().replace("on fort;", "")
    with open(tmp_path / "p.adds", "w") as f:
        f.write(program)
    _, out = _run("run", str(tmp_path / "p.adds"))
    code = "\n".join(line for line in out.splitlines() if ":=" in line)
    assert _ops_in(code) == c_kinds
    # and the program's own count statements say the same
    for line in out.splitlines():
        if line.startswith("% COUNT"):
            said = {"add": "ADDITIONS/SUBTRACTIONS", "mul": "MULTIPLICATIONS"}
            for k, word in said.items():
                n = int(re.search(word + r" (\d+)", line).group(1))
                assert n in [_kinds(r.split("c:")[1]).get(k, 0)
                             for r in rows if r.startswith("  a:")]


def test_table_2s_a_is_the_function_whatever_derivatives_are_asked(tmp_path):
    """Column a counts the function differentiated (sin(x)*y: 1 mul, 1 call), not the
    part of it that the derivatives asked for happen to reuse; and a derivative of a
    derivative goes back to the same function."""
    path = tmp_path / "a.adds"
    path.write_text("f := sin(x)*y; g := dfd(f, x); h := dfd(g, x);\n"
                    "count(x) g; count(x) f, g; count(x) h;\n")
    status, table = _run("count", str(path))
    assert status == 0
    rows = table.splitlines()
    for label in ("count(X) G", "count(X) F,G", "count(X) H"):
        i = next(k for k, r in enumerate(rows) if r.startswith(label + " "))
        assert _kinds(rows[i + 1].split("a:")[1].split(";")[0]) == {"mul": 1, "call": 1}, \
            rows[i:i + 2]
    path = os.path.join(EXAMPLES, "jacobian.adds")       # f, then its Jacobians JU, JD
    rows = _run("count", path)[1].splitlines()
    assert len({r.split()[2] for r in rows if r.startswith("count(")}) == 1


_COUNT_WORDS = {"add": "ADDITIONS/SUBTRACTIONS", "mul": "MULTIPLICATIONS", "div": "DIVISIONS",
                "call": "FUNCTION CALLS", "pow": "POWERS", "neg": "NEGATIONS"}


def _said(out):
    """The counts of the first COUNT comment of an ADDS session's output."""
    line = next(line for line in out.splitlines() if line.startswith("% COUNT"))
    found = {k: re.search(w + r" (\d+)", line) for k, w in _COUNT_WORDS.items()}
    return {k: int(m.group(1)) for k, m in found.items() if m and int(m.group(1))}


def _adds_output(program):
    from wengert.adds import Session
    out = io.StringIO()
    Session(stdout=out).execute(program)
    return out.getvalue()


@pytest.mark.parametrize("program, outs", [
    ("f := x**7*y**(-5) - x/y; g := dfd(f, vec(x,y)); h := dfd(g, vec(x,y));", "f,g,h"),
    ("f := cbrt(x)+cotan(x)+x**y+x**2.5+2.5d0/x+x/3+x**(-2)+0.1*x+atan2(x,y)+log10(x)"
     "+sqrt(x*y)+exp(-x)*sinh(y)/cosh(x)+tanh(x)*asin(y)*acos(y)*atan(x); "
     "g := dfd(f, vec(x,y)); h := dfu(g, vec(x,y));", "f,g,h"),
    ("x := vec(x1, x2, x3, x4); p := vec(p1, p2, p3, p4); "
     "f := (x1 + 10*x2)**2 + 5*(x3 - x4)**2 + (x2 - 2*x3)**4 + 10*(x1 - x4)**4; "
     "g := dfd(f, x); php := p*dfuv(g, x, p);", "f,g,php"),
])
def test_a_count_depends_on_its_outputs_alone(program, outs):
    """A count, and the code outcode emits, do not depend on what ran before them (the
    emitter's pass once found the nodes an earlier count had left in the session's graph,
    and counted differently the second time)."""
    first = _said(_adds_output(program + f"count() {outs};"))
    again = _said(_adds_output(program + f"count() {outs}; count() g; count() {outs};")
                  .split("\n", 2)[2])
    code = _adds_output(program + f"count() {outs}; outcode() {outs};")
    emitted = "\n".join(line for line in code.splitlines() if ":=" in line)
    assert first == again == _ops_in(emitted)


def test_table_2_columns_for_powell():
    _, table = _run("count", os.path.join(EXAMPLES, "powell.adds"))
    row = [r for r in table.splitlines() if r.startswith("count(P) F,G,PHP")][0].split()
    a, b, c = (int(v) for v in row[2:5])
    assert a == 17 and c < b                      # interning and simplification pay
    assert c <= 24 + 42 + 3                       # CasADi's f, g and p'Hp: 69 operations


def test_python_count_columns():
    a = wg.compile(powell, (1.0, 2.0, 3.0, 4.0)).count()
    vg = wg.compile(wg.value_and_grad(powell), (1.0, 2.0, 3.0, 4.0))
    b, c = vg.count(plain=True), vg.count()
    assert sum(a.values()) < sum(c.values()) < sum(b.values())


def test_count_without_requests_says_so(tmp_path):
    p = tmp_path / "f.adds"
    p.write_text("f := x*x;")
    status, out = _run("count", str(p))
    assert status == 0 and "nothing to count" in out


# ---- pictures -----------------------------------------------------------------------------------
def test_draw_writes_dot_with_operations_and_the_derivative_beside():
    d = wg.draw(lambda x1, x2: x1 * x2 + wm.sin(x1), 2.0, 3.0, derivative=True)
    assert d.dot.startswith("digraph") and d.dot.count("subgraph cluster_") == 2
    for label in ('"×"', '"sin"', '"cos"', '"x1"', 'label="gradient"'):
        assert label in d.dot
    c = wg.compile(wg.grad(powell), (1.0, 2.0, 3.0, 4.0))
    assert 'label="^3"' in wg.draw(c).dot


def test_draw_saves_dot_without_graphviz_and_says_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setattr(D.shutil, "which", lambda name: None)
    d = wg.draw(lambda x: x * x, 1.0)
    d.save(tmp_path / "g.dot")
    assert (tmp_path / "g.dot").read_text().startswith("digraph")
    with pytest.raises(D.GraphvizNotFound, match="apt-get install graphviz"):
        d.save(tmp_path / "g.svg")
    assert d._repr_svg_() is None
    status = cli.main(["draw", os.path.join(EXAMPLES, "example1.adds"), "-o",
                       str(tmp_path / "e.svg")])
    assert status == 1


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_draw_renders_svg(tmp_path):
    wg.draw(lambda x: wm.exp(x) * x, 1.0, path=tmp_path / "g.svg")
    assert "<svg" in (tmp_path / "g.svg").read_text()
    status, out = _run("draw", os.path.join(EXAMPLES, "powell.adds"), "-o",
                       str(tmp_path / "p.svg"))
    assert status == 0 and "<svg" in (tmp_path / "p.svg").read_text()


def test_wengert_draw_writes_dot_text(tmp_path):
    status, out = _run("draw", os.path.join(EXAMPLES, "example1.adds"), "-o",
                       str(tmp_path / "e.dot"))
    text = (tmp_path / "e.dot").read_text()
    assert status == 0 and '"EXP"' not in text and 'label="exp"' in text and '"F"' in text


@needs_cc
def test_c_computes_numpys_other_functions_as_numpy_does():
    import wengert.numpy as wnp
    f = lambda x, y: (wnp.remainder(x, y), wnp.fmod(x, y), wnp.logaddexp(x, y),
                      wnp.logaddexp2(x, y), wnp.hypot(x, y), wnp.arcsinh(x), wnp.exp2(x))
    c = wg.compile(f, 1.0, 2.0, backend="c")
    for x, y in ((-3.0, 2.0), (3.0, -2.0), (-4.0, 2.0), (2.5, 2.5), (-1e3, 7.0), (0.3, -1e-3)):
        want = [numpy.remainder(x, y), numpy.fmod(x, y), numpy.logaddexp(x, y),
                numpy.logaddexp2(x, y), numpy.hypot(x, y), numpy.arcsinh(x), numpy.exp2(x)]
        got = c(x, y)
        numpy.testing.assert_allclose(got, want, rtol=1e-15, atol=0)
        assert [math.copysign(1, v) for v in got[:2]] == [math.copysign(1, v) for v in want[:2]]


@needs_cc
def test_c_computes_scipys_functions_as_scipy_does():
    # expit by SciPy's one formula, logit accurate next to 1/2 (log(p/(1-p)) loses digits
    # there: SciPy takes log1p's), and gammaln(-inf) = -inf where lgamma gives inf
    from scipy import special as sc
    from wengert.scipy import special
    c = wg.compile(lambda p, x: (special.logit(p), special.expit(x), special.gammaln(x)),
                   0.5, 1.0, backend="c")
    ps = numpy.concatenate([numpy.linspace(0.0, 1.0, 201), 0.5 + numpy.linspace(-1e-9, 1e-9, 21)])
    xs = numpy.concatenate([numpy.linspace(-40, 40, len(ps) - 6),
                            [-numpy.inf, numpy.inf, -800.0, 800.0, -2.0, -0.0]])
    with numpy.errstate(all="ignore"):
        got = numpy.array([c(p, x) for p, x in zip(ps, xs)])
        want = numpy.stack([sc.logit(ps), sc.expit(xs), sc.gammaln(xs)], axis=1)
    numpy.testing.assert_allclose(got[:, :2], want[:, :2], rtol=4e-16, atol=0)
    # (lgamma's and SciPy's differ by an ulp, which near gammaln's zeros at 1 and 2 is
    # more than that relatively)
    numpy.testing.assert_allclose(got[:, 2], want[:, 2], rtol=1e-14, atol=1e-15)


def test_text_formats_refuse_a_call_that_would_drop_a_parameter():
    """A user's primitive with a parameter, written SCALED(X) in ADDS or FORTRAN, would
    read as one function: k=3 and k=5 were both SCALED(X)."""
    @wg.primitive
    def scaled(x, k=2.0):
        return x * k
    scaled.defpartials(lambda x, ans, k: k + 0 * x)
    c = wg.compile(lambda x: scaled(x, k=3.0) + scaled(x, k=5.0), 1.0)
    assert c(1.0) == 8.0
    for language in ("adds", "fortran"):
        with pytest.raises(EmitError, match=f"{language.upper()} has no scaled with its "
                                            "parameter k=3.0, and a call would lose it"):
            c.code(language)
    plain = wg.compile(lambda x: scaled(x) * 2, 1.0)      # (no parameter: a call is exact)
    assert plain.code("adds").strip() == "array Y[1];\nY[1] := SCALED(X)*2;"


@pytest.mark.parametrize("axis, keepdims", [(None, False), (0, False), (1, True),
                                            ((0, 1), True)])
@pytest.mark.parametrize("dtype", [numpy.float32, numpy.int8, numpy.float64])
def test_a_sum_is_written_as_the_arrays_method_with_numpys_result(axis, keepdims, dtype):
    # x.sum(...) skips np.sum's dispatch; its values and dtype must stay np.sum's (an
    # int8 sum is int64)
    x = (numpy.arange(12) % 5).reshape(3, 4).astype(dtype)
    f = lambda x: wg.numpy.sum(x * x, axis=axis, keepdims=keepdims)
    c = wg.compile(f, x, backend="numpy")
    assert ".sum(" in c.source and "_sum" not in c.source
    got, want = c(x), numpy.sum(x * x, axis=axis, keepdims=keepdims)
    assert numpy.result_type(got) == want.dtype and numpy.shape(got) == want.shape
    assert numpy.allclose(got, want, rtol=1e-6)


# ---- long straight-line C in parts -------------------------------------------------------
def _long(x, y):
    """~3,000 nodes of + - * / and a sine (C's and NumPy's agree bit for bit on the
    arithmetic), reading far back into the chain."""
    first, acc = x, y
    for k in range(600):
        acc = acc * 0.999 + x / (1.5 + k) - first * 1e-4
        x = x - acc * 1e-3
    return acc + wm.sin(first), x * y


def _long_loss(x, y):
    a, b = _long(x, y)
    return a * b


@needs_cc
def test_long_straight_line_c_is_cut_into_parts_that_agree(monkeypatch):
    c = wg.compile(_long, 0.3, 0.7, backend="c")
    assert "_part2(" in c.source and "noinline" in c.source
    assert c(0.3, 0.7) == wg.compile(_long, 0.3, 0.7)(0.3, 0.7)
    g = wg.compile(wg.grad(_long_loss, argnums=(0, 1)), 0.3, 0.7, backend="c")
    expected = wg.grad(_long_loss, argnums=(0, 1))(0.3, 0.7)
    same(g(0.3, 0.7), expected, rtol=1e-12)
    # in one function, as before: the same numbers
    monkeypatch.setattr(C, "PART_NODES", 10 ** 9)
    one = wg.compile(wg.grad(_long_loss, argnums=(0, 1)), 0.3, 0.7, backend="c")
    assert "_part" not in one.source
    assert one(0.3, 0.7) == g(0.3, 0.7)


@needs_cc
def test_parts_pass_int64_and_bool_values_and_their_kept_values_off_the_stack(monkeypatch):
    monkeypatch.setattr(C, "PART_NODES", 3)
    monkeypatch.setattr(C, "_ON_STACK", 2)          # (wg_v allocated: the malloc path)

    def f(x, i):
        j = i * 3 + 1
        b = x > 0.5
        return wg.numpy.where(b, x * j, x - j), j * i, b, x, 2.0

    args = (numpy.linspace(0, 1, 7), numpy.int64(5))
    c = wg.compile(f, *args, backend="c")
    assert "malloc(" in c.source and "_part3(" in c.source
    got, want = c(*args), f(*args)
    for g_, w in zip(got, want):
        numpy.testing.assert_array_equal(g_, w)
        assert numpy.asarray(g_).dtype == numpy.asarray(w).dtype


@needs_cc
def test_parts_still_raise_numpys_index_error(monkeypatch):
    monkeypatch.setattr(C, "PART_NODES", 2)
    f = wg.compile(lambda x, i: x[i] * 2.0 + x[0] * x[1] - x[2], numpy.ones(4), numpy.int64(0),
                   backend="c")
    assert "_part2(" in f.source
    assert f(numpy.arange(4.0), numpy.int64(-1)) == 6.0 + 0.0 * 1.0 - 2.0
    with pytest.raises(IndexError, match="index 4 is out of bounds for an axis of size 4"):
        f(numpy.arange(4.0), numpy.int64(4))


@needs_cc
def test_c_refuses_too_much_element_by_element_code_for_what_the_loops_refuse(monkeypatch):
    # (cumsum: no loop form, so scalarised; past LARGEST characters, refused before gcc
    # runs, since its time grows faster than the code)
    monkeypatch.setattr(C, "LARGEST", 2000)
    x = numpy.linspace(0.0, 1.0, 300)
    with pytest.raises(ValueError, match=r"KB of C written element by element, more than "
                       r"the 2 KB .* as loops it has cumsum"):
        wg.compile(lambda x: wg.numpy.cumsum(x) * 2.0, x, backend="c")
    # a scalar program is not limited: nothing else would write it
    c = wg.compile(_long, 0.3, 0.7, backend="c")
    assert len(c.source) > 2000 and c(0.3, 0.7) == _long(0.3, 0.7)
