"""outcode and count: the structure of the paper's Example 1, emitted programs evaluated
numerically against finite differences (both formats), Fortran that gfortran compiles,
the counts of Example 2, and an emitter that neither recurses nor grows without bound."""
import pathlib
import re
import shutil
import subprocess

import numpy as np
import pytest

import emitted
from adds_util import code, fd_jacobian, input_keys, outputs, random_env, run, values
from wengert.codegen.formats import FortranFormat

EXAMPLES = pathlib.Path(__file__).parent.parent / "examples"


def test_example_1_has_the_papers_structure():
    s, _ = run("f := (a+1)*exp(x)+(a-1)/(exp(x)+1);")
    lines = code(s, "outcode(x)f;").splitlines()
    # Three temporaries: A+1 and A-1 hoisted (parameters only, used by the x part), EXP(X)
    # shared (used twice); then F with everything else inlined.
    assert [re.sub(r"V\d{4}", "V", line) for line in lines] == [
        "V := A+1;", "V := A-1;", "V := EXP(X);", "F := V*V+V/(1+V);"]
    names = [line.split(" := ")[0] for line in lines[:3]]
    assert lines[3] == f"F := {names[0]}*{names[2]}+{names[1]}/(1+{names[2]});"


def test_example_1_in_fortran():
    s, _ = run("f := (a+1)*exp(x)+(a-1)/(exp(x)+1);")
    text = code(s, "outcode(x)f;", fortran=True)
    assert all(line.startswith("      ") for line in text.splitlines())
    assert text.splitlines()[-1].strip().startswith("F = ")


def _check_derivatives(program, x, pairs, ranges=None, seed=0, operators=None, points=3):
    """For `pairs` of (derivative variable, function variable): the emitted code (both
    formats) of outcode(x) for all of them agrees with the graph and with central
    differences of the function at random points."""
    s, _ = run(program)
    names = sorted({n for pair in pairs for n in pair})
    rng = np.random.default_rng(seed)
    for fortran in (False, True):
        text = code(s, f"outcode({x}) {', '.join(names)};", fortran)
        for _ in range(points):
            env = random_env(s, rng, ranges=ranges)
            got = emitted.run(text, env, fortran, operators)
            for name in names:
                np.testing.assert_allclose(outputs(got, s, name), values(s, name, env),
                                           rtol=1e-12, atol=1e-12)
            for d, f in pairs:
                np.testing.assert_allclose(outputs(got, s, d), fd_jacobian(s, f, x, env),
                                           rtol=1e-5, atol=1e-6)
    return s


def test_example_1_derivatives():
    _check_derivatives("f := (a+1)*exp(x)+(a-1)/(exp(x)+1); g := dfd(f, x); h := dfu(g, x);",
                       "x", [("g", "f"), ("h", "g")])


def test_powell_gradient_and_php_against_finite_differences():
    program = (EXAMPLES / "powell.adds").read_text()
    program = program[:program.index("count")]
    s = _check_derivatives(program + "h := dfu(g, x);", "x", [("g", "f"), ("h", "g")])
    rng = np.random.default_rng(1)
    env = random_env(s, rng)
    p = np.array([env[k] for k in input_keys(s, "p")])
    np.testing.assert_allclose(values(s, "php", env), p @ fd_jacobian(s, "g", "x", env) @ p,
                               rtol=1e-5)


def test_all_sixteen_functions_first_and_second_derivatives():
    program = """
        x := vec(s, t);
        f := sqrt(s) + cbrt(s) + exp(s) + log(s) + log10(s) + sin(s) + cos(s) + tan(s)
             + cotan(s) + asin(t) + acos(t) + atan(s) + atan2(s, t) + sinh(t) + cosh(t)
             + tanh(s) + s**t + t**3 - 1/s**2 + cbrt(-s);
        g := dfd(f, x);
        h := dfu(g, x);
    """
    _check_derivatives(program, "x", [("g", "f"), ("h", "g")],
                       ranges={"S": (0.2, 1.2), "T": (-0.8, 0.8)})


def test_arrays_contraction_transpose_vp_and_matrix_power():
    program = """
        array a[2,3], m[2,2];
        x := vec(x1, x2, x3);
        y := a*x;                      % [2,3]*[3] -> [2]
        f := y*y + tp(a)[2]*y;         % inner products
        w := vp(x, vec(1, x1, x3*x3));
        q := m**3;
        gf := dfd(f, x);  jw := dfu(w, x);  jq := dfd(q, m);  jy := dfu(y, x);
    """
    s = _check_derivatives(program, "x", [("gf", "f"), ("jw", "w"), ("jy", "y")])
    env = random_env(s, np.random.default_rng(2))
    a = np.array([[env[("A", (i, j))] for j in (1, 2, 3)] for i in (1, 2)])
    np.testing.assert_allclose(values(s, "jy", env), a, rtol=1e-13)      # d(Ax)/dx = A
    m = np.array([[env[("M", (i, j))] for j in (1, 2)] for i in (1, 2)])
    np.testing.assert_allclose(values(s, "q", env), m @ m @ m, rtol=1e-13)
    np.testing.assert_allclose(values(s, "jq", env), fd_jacobian(s, "q", "m", env),
                               rtol=1e-5, atol=1e-6)


def test_declared_operators_in_emitted_code():
    """f(t, x) opaque; its derivative operators appear in the code, and with numeric
    definitions consistent with f the emitted code gives the right numbers."""
    program = """
        operator h[2](3);
        x := vec(x1, x2);
        y := h(t, x);
        f := y*y;
        g := dfd(f, x);
        gu := dfuv(f, x, vec(1, 2));
        gv := dfdv(y, x, vec(3, 4));
    """
    s, _ = run(program)
    assert {"H", "DH", "UH", "VH"} <= set(s.operators)

    def h(at, t, a, b):
        return [t * a * b, math_sin(a) + t * b][at[0] - 1]

    def dh(at, t, a, b):
        return [[a * b, t * b, t * a], [b, math_cos(a), t]][at[0] - 1][at[1] - 1]

    def uh(at, t, a, b, dt, da, db):
        return sum(dh(at + (k,), t, a, b) * d for k, d in zip((1, 2, 3), (dt, da, db)))

    def vh(at, t, a, b, w1, w2):
        return sum(w * dh((i, at[0]), t, a, b) for i, w in zip((1, 2), (w1, w2)))

    ops = {"H": (h, 1), "DH": (dh, 2), "UH": (uh, 1), "VH": (vh, 1)}
    rng = np.random.default_rng(3)
    for fortran in (False, True):
        text = code(s, "outcode(x) f, g, gu, gv;", fortran)
        assert "UH" in text and "VH" in text and "DH" in text
        env = random_env(s, rng)
        t, a, b = env[("T", ())], env[("X1", ())], env[("X2", ())]
        got = emitted.run(text, env, fortran, ops)
        y = np.array([h((1,), t, a, b), h((2,), t, a, b)])
        jac = np.array([[dh((i, k), t, a, b) for k in (2, 3)] for i in (1, 2)])
        np.testing.assert_allclose(outputs(got, s, "f"), y @ y)
        np.testing.assert_allclose(outputs(got, s, "g"), 2 * y @ jac)
        np.testing.assert_allclose(outputs(got, s, "gu"), 2 * y @ jac @ [1, 2])
        np.testing.assert_allclose(outputs(got, s, "gv"), np.array([3, 4]) @ jac)


def math_sin(x):
    return float(np.sin(x))


def math_cos(x):
    return float(np.cos(x))


def test_fortran_lines_stay_within_column_72():
    s, _ = run("x := vec(a, b, c, d, e); f := (x*x)**3 + exp(x*x) * sin(x*x) "
               "+ cos(x*x)/(1 + x*x); g := dfd(f, x); h := dfu(g, x);")
    text = code(s, "outcode(x) f, g, h;", fortran=True)
    lines = text.splitlines()
    assert any(line[5] == "&" for line in lines)
    assert all(len(line) <= 72 for line in lines)
    env = random_env(s, np.random.default_rng(4))
    got = emitted.run(text, env, fortran=True)
    np.testing.assert_allclose(outputs(got, s, "h"), values(s, "h", env), rtol=1e-12)


def test_no_integer_division_in_fortran():
    s, _ = run("f := 1/(2*x) + x/3 + (1/3)*x + 2**(-1)*x; g := dfd(f, x);")
    text = code(s, "outcode(x) f, g;", fortran=True)
    env = {("X", ()): 0.7}
    got = emitted.run(text, env, fortran=True)
    np.testing.assert_allclose(got[("F", ())], 1 / 1.4 + 0.7 / 3 + 0.7 / 3 + 0.35)
    np.testing.assert_allclose(got[("G", ())], -1 / (2 * 0.49) + 2 / 3 + 0.5)


def test_temporaries_never_look_like_user_names():
    s, _ = run("v0003 := x*x; f := exp(v0003) + exp(v0003)*v0003;")
    text = code(s, "outcode(x) f;")
    assert not re.search(r"\bV\d{4} :=", text)
    assert re.search(r"\bW\d{4} :=", text)


def test_an_output_named_like_an_input_is_assigned_last():
    s, _ = run("y := x; x := x*x + 1; z := x*y;")
    text = code(s, "outcode(y) x, z;")
    got = emitted.run(text, {("X", ()): 2.0})
    assert got[("X", ())] == 5.0 and got[("Z", ())] == 10.0


def test_long_chain_emits_without_recursion_and_bounded_statements():
    chain = "y := x;\n" + "y := sin(y) + y;\n" * 3000
    s, _ = run(chain)
    for fortran in (False, True):
        text = code(s, "outcode(x) y;", fortran)
        statements = emitted.statements(text, fortran)
        assert len(statements) > 3
        assert max(len(e) for _, e in statements) < 2200
    got = emitted.run(text, {("X", ()): 0.1}, fortran=True)
    np.testing.assert_allclose(got[("Y", ())], values(s, "y", {("X", ()): 0.1}), rtol=1e-12)


def test_count_prints_a_comment():
    s, _ = run("f := x*x + sin(x)/y;")
    assert code(s, "count(x) f;") == ("% COUNT: ADDITIONS/SUBTRACTIONS 1, MULTIPLICATIONS 1, "
                                      "DIVISIONS 1, FUNCTION CALLS 1, POWERS 0\n")
    fort = code(s, "count(x) f;", fortran=True).splitlines()
    assert all(line.startswith("C ") and len(line) <= 72 for line in fort)


def test_example_2_counts():
    """Paper: f in 7 additions + 12 multiplications; f, g, p'Hp in 22 + 34, and 18 + 30
    possible.  wengert: 7 + 10, and 18 + 30 (with one negation): the emitter's pass
    (wengert/graph/passes.py) transposes p·(Hp) into (Jp)ᵀD(Jp)."""
    program = (EXAMPLES / "powell.adds").read_text()
    program = program[:program.index("count")]
    s, _ = run(program)
    f = code(s, "count(p) f;")
    assert "ADDITIONS/SUBTRACTIONS 7," in f and "MULTIPLICATIONS 10," in f
    total = code(s, "count(p) f, g, php;")
    adds = int(re.search(r"ADDITIONS/SUBTRACTIONS (\d+)", total).group(1))
    muls = int(re.search(r"MULTIPLICATIONS (\d+)", total).group(1))
    assert (adds, muls) == (18, 30)
    assert "NEGATIONS 1" in total


# --- gfortran ------------------------------------------------------------------------------
def _fortran_program(session, body, outputs_):
    dims = []
    for name, value in session.variables.items():
        if value.ndim:
            dims.append(f"{name}({','.join(map(str, value.shape))})")
    lines = ["      PROGRAM WGTEST", "      IMPLICIT DOUBLE PRECISION (A-Z)"]
    lines += [f"      DIMENSION {d}" for d in dims]
    env = random_env(session, np.random.default_rng(5), 0.3, 0.9)
    for (name, index), v in sorted(env.items()):
        ref = f"{name}({','.join(map(str, index))})" if index else name
        lines.append(f"      {ref} = {v!r}D0")
    lines += body.splitlines()
    for name in outputs_:
        name = name.upper()
        for i in np.ndindex(*session.variables[name].shape):
            ref = f"{name}({','.join(str(j + 1) for j in i)})" if i else name
            lines.append(f"      WRITE(*,'(ES26.17)') {ref}")
    lines.append("      END")
    return "\n".join(lines) + "\n", env


def _with_functions(source, functions):
    """A program's source followed by external functions (text indented any way), in
    fixed form."""
    return source + "".join(f"      {line.strip()}\n" for line in functions.strip().splitlines())


def _compile_and_run(tmp_path, source):
    """The numbers a Fortran program prints, compiled with gfortran."""
    (tmp_path / "t.f").write_text(source)
    subprocess.run(["gfortran", "-std=legacy", "-o", str(tmp_path / "t"), str(tmp_path / "t.f")],
                   check=True, capture_output=True, cwd=tmp_path)
    printed = subprocess.run([str(tmp_path / "t")], check=True, capture_output=True,
                             text=True).stdout.split()
    return [float(v) for v in printed]


def _check_with_gfortran(tmp_path, session, body, outs):
    """Compile and run the emitted `body` with gfortran; compare with the graph."""
    source, env = _fortran_program(session, body, outs)
    expected = np.concatenate([values(session, n, env).reshape(-1) for n in outs])
    np.testing.assert_allclose(_compile_and_run(tmp_path, source), expected, rtol=1e-12)


@pytest.mark.skipif(shutil.which("gfortran") is None, reason="gfortran is not installed")
@pytest.mark.parametrize("which", ["powell", "functions"])
def test_gfortran_compiles_and_runs_the_emitted_code(tmp_path, which):
    if which == "powell":
        program = (EXAMPLES / "powell.adds").read_text()
        program = program[:program.index("count")]
        x, outs = "p", ["f", "g", "php"]
    else:
        program = ("x := vec(s, t); f := sqrt(s)*cbrt(t) + exp(s)*log(t) + log10(s)*sin(t)"
                   " + cos(s)*tan(t) + cotan(s)*asin(t) + acos(s)*atan(t) + atan2(s, t)"
                   " + sinh(s)*cosh(t)*tanh(s) + s**t; g := dfd(f, x); h := dfu(g, x);")
        x, outs = "x", ["f", "g", "h"]
    s, _ = run(program)
    body = code(s, f"outcode({x}) {', '.join(outs)};", fortran=True)
    _check_with_gfortran(tmp_path, s, body, outs)


@pytest.mark.skipif(shutil.which("gfortran") is None, reason="gfortran is not installed")
def test_long_statements_stay_within_fortran_77s_nineteen_continuation_lines(tmp_path):
    # a sum of 300 terms c·sin(x·d) and its gradient: cut only before + and -, its
    # statements once ran to 25 continuation lines
    rng = np.random.default_rng(5)
    terms = [f"{rng.uniform(-1, 1)!r}*sin(x{i % 7 + 1}*{rng.uniform()!r})" for i in range(300)]
    xs = ",".join(f"x{i}" for i in range(1, 8))
    s, _ = run(f"f := {' + '.join(terms)}; g := dfd(f, vec({xs}));")
    body = code(s, f"outcode({xs}) f, g;", fortran=True)
    run_lengths, n = [], 0
    for line in body.splitlines():
        n = n + 1 if line.startswith("     &") else 0
        run_lengths.append(n)
    assert 10 <= max(run_lengths) <= 19
    _check_with_gfortran(tmp_path, s, body, ["f", "g"])


@pytest.mark.skipif(shutil.which("gfortran") is None, reason="gfortran is not installed")
def test_fortran_names_longer_than_63_characters_are_cut(tmp_path):
    """gfortran takes names of up to 63 characters; ADDS's may be longer.  Cut, they stay
    apart from each other and from a name of 62 characters that ends as a cut one would."""
    a, q = "a" * 80, "q" * 70
    s, _ = run(f"operator {q}(1); f := {a}*x + sin({a}) + {'a' * 61}1; g := {q}(x);")
    body = code(s, "outcode(x) f, g;", fortran=True)
    assert f"{a.upper()[:10]}" in body and "(LONGER THAN 63 CHARACTERS)" in body
    code_lines = [line for line in body.splitlines() if not line.startswith("C")]
    joined = code_lines[0][6:] + "".join(
        line[6:] if line.startswith("     &") else "\n" + line[6:] for line in code_lines[1:])
    names = set(re.findall(r"[A-Z][A-Z0-9_]*", joined))
    assert max(map(len, names)) == 63 and len({n for n in names if n.startswith("AAA")}) == 2
    cut_a, cut_q = sorted(n for n in names if len(n) == 63)
    source = ("      SUBROUTINE T(X, F, G,\n     & " + cut_a + ",\n     & " + "A" * 61 + "1)\n"
              "      IMPLICIT DOUBLE PRECISION (A-Z)\n" + body + "\n      END\n")
    (tmp_path / "t.f").write_text(source)
    subprocess.run(["gfortran", "-std=legacy", "-c", str(tmp_path / "t.f")], check=True,
                   capture_output=True, cwd=tmp_path)


def test_fortran_cuts_never_pass_column_72():
    # A cut after a comma may not put the comma in column 73 (compilers drop it).
    s, _ = run("operator q(40); f := q(" + ",".join(["x"] * 40) + ");")
    assert max(map(len, code(s, "outcode() f;", fortran=True).splitlines())) <= 72
    fmt = FortranFormat()
    rng = np.random.default_rng(11)
    for _ in range(300):
        names = ["X", "AB", "X12", "F(1,2)", "2D0", "1.5D-3"]
        terms = []
        for _ in range(int(rng.integers(1, 12))):
            args = rng.choice(names, size=int(rng.integers(1, 30)))
            terms.append(f"Q{int(rng.integers(0, 100))}({','.join(args)})")
        expr = "".join(str(rng.choice(["+", "-", "*", "/", "**"])) + t for t in terms)[1:]
        lines = fmt.statement("F", expr)
        assert max(map(len, lines)) <= 72
        assert lines[0].startswith("      ") and all(line.startswith("     &")
                                                     for line in lines[1:])
        assert lines[0][6:] + "".join(line[6:] for line in lines[1:]) == f"F = {expr}"


@pytest.mark.parametrize("program, outs", [
    ("t := x; x := y; y := t;", ["x", "y"]),
    ("array a[2]; b := vec(a[2], a[1]); a := b;", ["a"]),
    ("c := vec(p, q, r); p := c[3]; q := c[1]+c[2]; r := c[1];", ["p", "q", "r"]),
    ("array a[5]; a := vec(a[4], a[1], a[5], a[3], a[2]); b := a[1]*a[1];", ["a", "b"]),
])
def test_copies_between_inputs_keep_the_old_values(program, outs):
    # Plain copies whose outputs are named like inputs (a swap): executed in order, the
    # statements must not read an input that an earlier one has overwritten.
    s, _ = run(program)
    env = random_env(s, np.random.default_rng(7))
    for fortran in (False, True):
        got = emitted.run(code(s, f"outcode() {', '.join(outs)};", fortran), env, fortran)
        for name in outs:
            np.testing.assert_array_equal(outputs(got, s, name), values(s, name, env))


def test_an_output_named_twice_is_assigned_once():
    s, _ = run("f := x*y; array a[2]; a[1] := a[1]*2;")
    assert code(s, "outcode(x) f, f;").splitlines() == ["F := X*Y;"]
    assert code(s, "outcode(a) a, a[1];").count("A[1] :=") == 1


def test_an_input_output_as_itself_is_not_assigned():
    s, _ = run("f := x*2; y := x;")
    for fortran in (False, True):
        text = code(s, "outcode(x) x, f, y;", fortran)
        assert not re.search(r"^\s*X (:)?= X;?$", text, re.M), text
        env = random_env(s, np.random.default_rng(1))
        got = emitted.run(text, env, fortran)
        for name in ("x", "f", "y"):
            np.testing.assert_array_equal(outputs(got, s, name), values(s, name, env))


def test_fortran_call_arguments_are_never_integers(tmp_path):
    # Fortran does not convert arguments: Q(X,2) hands an INTEGER to a DOUBLE PRECISION
    # dummy, and gfortran rejects ATAN2(X,1).  Element indices stay integers.
    s, _ = run("operator q(2); operator h[2](3); f := q(x, 2) + atan2(x, 1) + atan2(-2, x);"
               " g := h[2](x, 0, 1);")
    text = code(s, "outcode(x) f, g;", fortran=True)
    assert "Q(X,2D0)" in text and "ATAN2(X,1D0)" in text and "ATAN2(-2D0,X)" in text
    assert "H(2,X,0D0,1D0)" in text
    if shutil.which("gfortran") is None:
        return
    s, _ = run("f := atan2(x, 1) + atan2(2, x) + x**2 + 1/x;")
    body = code(s, "outcode(x) f;", fortran=True)
    _check_with_gfortran(tmp_path, s, body, ["f"])


def test_fortran_renames_variables_named_like_intrinsics():
    # A variable ABS would hide the intrinsic ABS that cbrt is written with.
    s, _ = run("abs := x*x; abs1 := 2*x; array sign[2]; f := cbrt(abs) + abs1 + sign[1];")
    text = code(s, "outcode(x) f, abs;", fortran=True)
    assert text.splitlines()[0] == "C ABS IS WRITTEN ABS2 (ABS IS RESERVED)"
    assert text.splitlines()[1] == "C SIGN IS WRITTEN SIGN1 (SIGN IS RESERVED)"
    env = random_env(s, np.random.default_rng(3))
    env = {("SIGN1" if name == "SIGN" else name, i): v for (name, i), v in env.items()}
    got = emitted.run(text, env, fortran=True)
    assert ("ABS", ()) not in got
    np.testing.assert_allclose(got[("ABS2", ())], got[("X", ())] ** 2)
    np.testing.assert_allclose(got[("F", ())], np.cbrt(got[("X", ())] ** 2)
                               + 2 * got[("X", ())] + got[("SIGN1", (1,))])
    assert code(s, "outcode(x) abs1;", fortran=True) == "      ABS1 = X*2\n"  # names in use
    assert code(s, "outcode(x) abs;") == "ABS := X*X;\n"             # ADDS keeps them


def test_operators_named_like_intrinsics_are_renamed_in_fortran(tmp_path):
    # ABS and MAX are declared operators here, and DABS is made by differentiating ABS:
    # in Fortran a call ABS(X) (or DABS, MAX) reaches the intrinsic, whatever the program
    # defines, and cbrt's code calls the intrinsic ABS too.
    s, _ = run("operator abs(1), max(2); f := abs(x)*max(x, y) + cbrt(x); "
               "g := dfd(f, vec(x, y));")
    text = code(s, "outcode(x, y) f, g;", fortran=True)
    lines = text.splitlines()
    assert lines[:3] == ["C OPERATOR ABS IS WRITTEN ABS1 (ABS IS RESERVED)",
                         "C OPERATOR MAX IS WRITTEN MAX2 (MAX IS RESERVED)",   # MAX1 is one
                         "C OPERATOR DABS IS WRITTEN DABS1 (DABS IS RESERVED)"]
    assert "SIGN(MERGE(ABS(X)**(1D0/3)," in text and "ABS1(X)" in text
    assert "DMAX(1,X,Y)" in text                      # no intrinsic: written as it is

    def expected(x, y):
        a, m = x * x + 1, x * y + x           # ABS(a) = a**2+1, MAX(a, b) = a*b+a
        return {"F": a * m + np.cbrt(x),
                "G": [2 * x * m + a * (y + 1) + 1 / (3 * np.cbrt(x) ** 2), a * x]}

    ops = {"ABS1": (lambda at, a: a * a + 1, 0), "MAX2": (lambda at, a, b: a * b + a, 0),
           "DABS1": (lambda at, a: 2 * a, 1),
           "DMAX": (lambda at, a, b: [b + 1, a][at[0] - 1], 1)}
    env = {("X", ()): 0.7, ("Y", ()): -1.3}
    got = emitted.run(text, env, True, ops)
    want = expected(0.7, -1.3)
    np.testing.assert_allclose(got[("F", ())], want["F"], rtol=1e-13)
    np.testing.assert_allclose([got[("G", (1,))], got[("G", (2,))]], want["G"], rtol=1e-13)
    # The ADDS format has no ABS or MAX: there the names stay.
    adds = code(s, "outcode(x, y) f, g;")
    assert "ABS(X)" in adds and "DABS[1](X)" in adds and "%" not in adds
    got = emitted.run(adds, env, False, {"ABS": ops["ABS1"], "MAX": ops["MAX2"],
                                         "DABS": ops["DABS1"], "DMAX": ops["DMAX"]})
    np.testing.assert_allclose(got[("F", ())], want["F"], rtol=1e-13)
    if shutil.which("gfortran") is None:
        return
    source, env = _fortran_program(s, text, ["f", "g"])
    functions = """
        DOUBLE PRECISION FUNCTION ABS1(A)
        DOUBLE PRECISION A
        ABS1 = A*A+1
        END
        DOUBLE PRECISION FUNCTION MAX2(A, B)
        DOUBLE PRECISION A, B
        MAX2 = A*B+A
        END
        DOUBLE PRECISION FUNCTION DABS1(I, A)
        INTEGER I
        DOUBLE PRECISION A
        DABS1 = 2*A
        END
        DOUBLE PRECISION FUNCTION DMAX(I, A, B)
        INTEGER I
        DOUBLE PRECISION A, B
        DMAX = A
        IF (I .EQ. 1) DMAX = B+1
        END"""
    source = _with_functions(source, functions)
    printed = _compile_and_run(tmp_path, source)
    want = expected(env[("X", ())], env[("Y", ())])
    np.testing.assert_allclose(printed, [want["F"], *want["G"]], rtol=1e-12)


def test_derived_operator_and_variable_of_one_name(tmp_path):
    # The user's DH and H's D operator: the operator is DH1 (a comment says so), so the
    # code reads the variable DH and calls DH1, in both formats and in gfortran.
    s, _ = run("operator h(1); dh := x*x; f := h(x)*dh; g := dfd(f, x);")
    h, dh1 = (lambda at, a: a ** 3), (lambda at, a: 3 * a * a)     # H and its derivative
    ops = {"H": (h, 0), "DH1": (dh1, 1)}
    x = 0.6
    want = {"F": x ** 5, "G": 3 * x ** 2 * x ** 2 + x ** 3 * 2 * x}
    for fortran in (False, True):
        text = code(s, "outcode(x) f, g, dh;", fortran)
        assert text.splitlines()[0].endswith("DH1 IS THE D OPERATOR OF H (DH IS TAKEN)")
        assert ("DH1(1,X)" if fortran else "DH1[1](X)") in text
        got = emitted.run(text, {("X", ()): x}, fortran, ops)
        assert got[("DH", ())] == pytest.approx(x * x)
        assert got[("F", ())] == pytest.approx(want["F"])
        assert got[("G", ())] == pytest.approx(want["G"])
    if shutil.which("gfortran") is None:
        return
    source, env = _fortran_program(s, text, ["f", "g", "dh"])
    functions = """
        DOUBLE PRECISION FUNCTION H(A)
        DOUBLE PRECISION A
        H = A**3
        END
        DOUBLE PRECISION FUNCTION DH1(I, A)
        INTEGER I
        DOUBLE PRECISION A
        DH1 = 3*A*A
        END"""
    source = _with_functions(source, functions)
    x = env[("X", ())]
    np.testing.assert_allclose(_compile_and_run(tmp_path, source),
                               [x ** 5, 5 * x ** 4, x * x], rtol=1e-12)


def test_fortran_statement_words_are_names_like_any_other(tmp_path):
    # Fortran reserves no words: variables and operators named IF, DO, END, DATA, CALL
    # are written as they are (only intrinsic functions are renamed) and gfortran reads
    # them as names.
    s, _ = run("operator if(1), end(2); do := x*x; data := do + 1; call := if(do)*end(do, x);")
    text = code(s, "outcode(x) do, data, call;", fortran=True)
    assert "C " not in text and "CALL = IF(DO)*END(DO,X)" in text
    if shutil.which("gfortran") is None:
        return
    source, env = _fortran_program(s, text, ["do", "data", "call"])
    functions = """
        DOUBLE PRECISION FUNCTION IF(A)
        DOUBLE PRECISION A
        IF = A+3
        END
        DOUBLE PRECISION FUNCTION END(A, B)
        DOUBLE PRECISION A, B
        END = A*B
        END"""
    source = _with_functions(source, functions)
    x = env[("X", ())]
    np.testing.assert_allclose(_compile_and_run(tmp_path, source),
                               [x * x, x * x + 1, (x * x + 3) * (x * x * x)], rtol=1e-12)


# --- FORTRAN templates that write an argument more than once -------------------------------
def _fortran_lines(body):
    """Each statement of fixed-form text joined from its lines, and its continuation
    lines' count."""
    out = []
    for line in body.splitlines():
        if line.startswith("     &"):
            text, n = out[-1]
            out[-1] = (text + line[6:], n + 1)
        elif not line.startswith("C"):
            out.append((line[6:], 0))
    return out


def test_fortran_cbrt_writes_an_expression_argument_once():
    # FORTRAN's cbrt writes x 8 times: cbrt(sin(x)*y + exp(z)) was one statement with 8
    # SINs, 8 multiplications and 8 additions, where count says 1 of each
    s, _ = run("f := cbrt(sin(x)*y + exp(z));")
    counted = code(s, "count(x) f;")
    body = code(s, "outcode(x) f;", fortran=True)
    joined = "\n".join(text for text, _ in _fortran_lines(body))
    assert "FUNCTION CALLS 3," in counted and "MULTIPLICATIONS 1," in counted
    assert joined.count("SIN(") == 1 and joined.count("EXP(") == 1
    assert len(re.findall(r"(?<![*(D])[*](?![*])", joined.replace("**", "^"))) == 1
    env = {("X", ()): 0.3, ("Y", ()): -2.5, ("Z", ()): 0.1}
    expected = np.cbrt(np.sin(0.3) * -2.5 + np.exp(0.1))
    assert emitted.run(body, env, fortran=True)[("F", ())] == pytest.approx(expected, 1e-14)


@pytest.mark.parametrize("name, arity", [
    ("cbrt", 1), ("sign", 1), ("log1p", 1), ("expm1", 1), ("log2", 1), ("round", 1),
    ("floor", 1), ("ceil", 1), ("maximum", 2), ("logaddexp", 2), ("cotan", 1)])
def test_fortran_templates_get_a_temporary_for_an_expression_they_repeat(name, arity):
    import wengert as wg
    from wengert.codegen.emit import Symbol, emit
    from wengert.primitives import scalar as P
    g = wg.Graph()
    x, y = g.input(wg.ShapeDtype(), "X"), g.input(wg.ShapeDtype(), "Y")
    arg = P.add(P.mul(P.sin(x), y), 1.0)
    out = getattr(P, name)(*([arg, P.cos(y)] if arity == 2 else [arg]))
    body = str(emit(g, [x, y], [(Symbol("F"), out)], FortranFormat()))
    # whatever the template, sin(x)*y + 1 and cos(y) are computed once
    assert body.count("SIN(") == 1 and body.count("COS(") == (arity == 2)
    # and only where a template writes an argument twice is it given a temporary
    temporaries = re.findall(r"^ {6}(V\d+) =", body, re.M)
    assert len(temporaries) == (0 if name == "cotan" else arity), body


@pytest.mark.skipif(shutil.which("gfortran") is None, reason="gfortran is not installed")
def test_fortran_cbrt_of_a_long_sum_keeps_to_nineteen_continuation_lines(tmp_path):
    # cbrt of a 40-term sum was one statement of 32 continuation lines
    terms = "+".join(f"x{i}*y{i}" for i in range(1, 41))
    s, _ = run(f"f := cbrt({terms});")
    body = code(s, "outcode(x1) f;", fortran=True)
    assert max(n for _, n in _fortran_lines(body)) <= 19
    _check_with_gfortran(tmp_path, s, body, ["f"])


def test_a_constant_among_the_inputs_changes_nothing_that_is_hoisted():
    # a[1] := 3 made the interned constant 3 an input of outcode(a): b*3 "depended" on it
    # and was no longer hoisted (F := A[2]+3*B)
    program = "array a[2]; f := b*3 + a[2]; outcode(a) f;"
    for text in (program, program.replace("f :=", "a[1] := 3; f :=")):
        _, out = run(text)
        hoisted, last = out.splitlines()
        temporary, expression = hoisted[:-1].split(" := ")
        assert "B" in expression and "A" not in expression     # the parameter part first
        assert last.startswith("F := ") and temporary in last
        env = {("A", (2,)): 0.7, ("B", ()): -1.3}
        assert emitted.run(out, env)[("F", ())] == pytest.approx(-1.3 * 3 + 0.7, 1e-15)
