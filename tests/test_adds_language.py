"""The ADDS language (seed 002, §2): types and the typing rules of each operator, partial
indexing, declarations, derivative operators (types, differentiable again), declared
operators with their d/u/v derivative operators, err, and the statements."""
import io
import math
import os

import numpy as np
import pytest

from adds_util import (code, lark_shapes, our_shapes, random_env, random_program, run, values,
                        without_inner_ends)
from wengert.adds import AddsError, Session


def types(program, *names):
    s, _ = run(program)
    return [s.variables[n.upper()].shape for n in names]


def test_contraction_rule_of_the_paper():
    assert types("array a[2,3,4], b[4,3]; c := a*b;", "c") == [(2, 3, 3)]
    assert types("array u[3], w[3], m[2,3]; s := u*w; v := m*u; t := 2*m; r := m*3;",
                 "s", "v", "t", "r") == [(), (2,), (2, 3), (2, 3)]


def test_contraction_values():
    s, _ = run("array m[2,3], u[3]; v := m*u;")
    env = random_env(s, np.random.default_rng(0))
    m = np.array([[env[("M", (i, j))] for j in (1, 2, 3)] for i in (1, 2)])
    u = np.array([env[("U", (j,))] for j in (1, 2, 3)])
    np.testing.assert_allclose(values(s, "v", env), m @ u)


def test_vp_tp_vec_and_matrix_power_types():
    assert types("array u[3], w[3], a[2,3], m[3,3]; c := vp(u, w); t := tp(a); "
                 "v := vec(a, a, a); q := m**4; e := vec(1, 2);",
                 "c", "t", "v", "q", "e") == [(3,), (3, 2), (3, 2, 3), (3, 3), (2,)]


def test_vp_values():
    s, _ = run("u := vec(u1, u2, u3); w := vec(w1, w2, w3); c := vp(u, w);")
    env = random_env(s, np.random.default_rng(1))
    u = [env[(f"U{i}", ())] for i in (1, 2, 3)]
    w = [env[(f"W{i}", ())] for i in (1, 2, 3)]
    np.testing.assert_allclose(values(s, "c", env), np.cross(u, w))


@pytest.mark.parametrize("program, message", [
    ("array a[2], b[3]; c := a + b;", "+: the operands must have the same type, got [2] and [3]"),
    ("array a[2], b[3]; c := a - b;", "got [2] and [3]"),
    ("array a[2,3], b[2]; c := a*b;", "cannot multiply [2,3] by [2]"),
    ("array a[2], b[2]; c := a/b;", "the divisor must be a scalar, got [2] / [2]"),
    ("array a[2,3]; c := a**2;", "got [2,3] ** []"),
    ("array m[2,2]; c := m**x;", "positive integer constant power, got [2,2] ** []"),
    ("array m[2,2]; c := m**0;", "positive integer constant power"),
    ("array u[2], w[3]; c := vp(u, w);", "two operands of type [3], got [2] and [3]"),
    ("array u[3]; c := tp(u);", "needs a matrix (rank 2), got [3]"),
    ("array a[2], b[3]; c := vec(a, b);", "one type, got [2] and [3]"),
    ("array a[2], b[3]; c := atan2(a, b);", "one type, got [2] and [3]"),
    ("array x[2], y[3]; c := dfuv(x*x, x, y);", "x of type [2] and y of type [3]"),
    ("array x[2], y[3]; c := dfdv(x, x, y);", "f of type [2] and y of type [3]"),
    ("array a[2]; a := 1;", "A has type [2], the value assigned has type []"),
    ("array a[2,3]; a[1] := vec(1, 2);", "A[1] has type [3], the value assigned has type [2]"),
])
def test_type_errors_name_both_types(program, message):
    with pytest.raises(AddsError, match=None) as info:
        run(program)
    assert message in info.value.message


def test_square_matrix_power_values_and_scalar_powers():
    s, _ = run("array m[2,2]; q := m**5; r := x**(-2); t := x**0.5; u := x**0;")
    env = random_env(s, np.random.default_rng(2), 0.5, 1.5)
    m = np.array([[env[("M", (i, j))] for j in (1, 2)] for i in (1, 2)])
    np.testing.assert_allclose(values(s, "q", env), np.linalg.matrix_power(m, 5))
    x = env[("X", ())]
    np.testing.assert_allclose([values(s, n, env) for n in "rtu"], [x ** -2, x ** 0.5, 1])
    assert [n.op.name for n in s.graph.live_nodes(list(s.variables["T"].reshape(-1)))][-1] \
        == "pow"


def test_partial_indexing_and_indexed_assignment():
    s, _ = run("""array a[2,3];
        r := a[2];            % type [3]: a[2,1] .. a[2,3]
        e := a[2,3];
        b := a;
        a[1] := vec(1, 2, 3);
        a[2,2] := 7;
    """)
    assert s.variables["R"].shape == (3,) and s.variables["E"].shape == ()
    assert s.variables["R"][2] is s.variables["E"][()]
    assert [n.value for n in s.variables["A"][0]] == [1.0, 2.0, 3.0]
    assert s.variables["A"][1, 1].value == 7.0
    assert s.variables["B"][0, 0].op.name == "input"          # b kept the old values
    assert s.variables["R"][1].op.name == "input"


def test_implicit_declaration_case_insensitivity_and_constants():
    s, out = run("F := 2*X + 1.5e0*x + 2.5D-1*X + 1; Outcode(X) f;")
    # one X: its terms are collected by the emitter's pass, 2 + 1.5 + 0.25 = 3.75
    assert out == "F := 1+X*3.75;\n"
    assert set(s.variables) == {"F", "X"} and s.variables["F"].shape == ()


def test_derivative_operator_types_of_the_paper():
    assert types("array f[2], x[3], y[3], z[2]; f := vec(x*x, x[1]*x[2]); "
                 "a := dfu(f, x); b := dfd(f, x); c := dfuv(f, x, y); d := dfdv(f, x, z);",
                 "a", "b", "c", "d") == [(2, 3), (2, 3), (2,), (3,)]


def test_dfu_and_dfd_give_the_same_jacobian_and_differentiate_again():
    s, _ = run("""x := vec(x1, x2);
        f := vec(x1*sin(x2), exp(x1*x2), x1/x2);
        ju := dfu(f, x);  jd := dfd(f, x);
        h := dfd(dfd(f[2], x), x);     % a Hessian: a derivative of a derivative
        hu := dfu(dfu(f[2], x), x);""")
    env = random_env(s, np.random.default_rng(3), 0.5, 1.5)
    np.testing.assert_allclose(values(s, "ju", env), values(s, "jd", env), rtol=1e-13)
    x1, x2 = env[("X1", ())], env[("X2", ())]
    e = math.exp(x1 * x2)
    hess = [[x2 * x2 * e, e + x1 * x2 * e], [e + x1 * x2 * e, x1 * x1 * e]]
    np.testing.assert_allclose(values(s, "h", env), hess, rtol=1e-12)
    np.testing.assert_allclose(values(s, "hu", env), hess, rtol=1e-12)


def test_err_is_iris_formula():
    """f = x*y + sin(x): operations v1 = x*y, v2 = sin(x), v3 = v1 + v2 = f, each with
    df/dv = 1.  err = sqrt((v1^2 + v2^2 + v3^2)/3) * eps."""
    s, _ = run("f := x*y + sin(x); e := err(f, vec(x, y), eps);")
    env = {("X", ()): 0.7, ("Y", ()): -1.3, ("EPS", ()): 2.0 ** -52}
    v1, v2 = 0.7 * -1.3, math.sin(0.7)
    expected = math.sqrt((v1 ** 2 + v2 ** 2 + (v1 + v2) ** 2) / 3) * 2.0 ** -52
    assert values(s, "e", env) == pytest.approx(expected, rel=1e-14)


def test_err_weights_each_operation_by_its_adjoint():
    """f = (x*y)*z: v1 = x*y with df/dv1 = z, v2 = f with df/dv2 = 1."""
    s, _ = run("f := x*y*z; e := err(f, vec(x, y, z), 1);")
    x, y, z = 1.5, 2.0, -0.5
    env = {("X", ()): x, ("Y", ()): y, ("Z", ()): z}
    expected = math.sqrt(((z * x * y) ** 2 + (x * y * z) ** 2) / 3)
    assert values(s, "e", env) == pytest.approx(expected, rel=1e-14)
    s, _ = run("array x[2]; e := err(vec(x[1]*x[2], x[1]+x[2]), x, 1);")
    assert s.variables["E"].shape == (2,)


def test_err_counts_a_shared_node_once_with_its_whole_adjoint():
    """u = x*y reaches f = u*u + sin(u) along three edges: one term, adjoint 2u + cos u."""
    s, _ = run("u := x*y; f := u*u + sin(u); e := err(f, vec(x, y), 1);")
    x, y = 0.8, -1.7
    u = x * y
    terms = [(2 * u + math.cos(u)) * u, u * u, math.sin(u), u * u + math.sin(u)]
    expected = math.sqrt(sum(t * t for t in terms) / 3)
    assert values(s, "e", {("X", ()): x, ("Y", ()): y}) == pytest.approx(expected, rel=1e-14)


def test_err_of_what_simplification_removed_is_zero():
    s, _ = run("e1 := err(x-x, x, 1); e2 := err((x+y)-(y+x), vec(x, y), 1); "
               "e3 := err(sqrt(x)/y, vec(x, y), 1);")
    env = {("X", ()): 2.0, ("Y", ()): 3.0}
    assert values(s, "e1", env) == 0 and values(s, "e2", env) == 0
    r = math.sqrt(2.0)       # sqrt(x) with adjoint 1/y, then the quotient with adjoint 1
    assert values(s, "e3", env) == pytest.approx(math.sqrt(2 * (r / 3) ** 2 / 3), rel=1e-14)


def test_err_is_the_size_of_the_error_mpmath_measures():
    """A sum of 100 numbers of [0, 1) left to right: the estimate is the root mean square
    of the partial sums (each with adjoint 1) times eps/sqrt(3); the error measured against
    mpmath's exact sum is of its size (a random walk: about half of it on average)."""
    mpmath = pytest.importorskip("mpmath")
    n, eps = 100, 2.0 ** -53
    s, _ = run(f"array x[{n}]; f := {'+'.join(f'x[{i}]' for i in range(1, n + 1))}; "
               "e := err(f, x, eps);")
    rng = np.random.default_rng(3)
    ratios = []
    for _ in range(40):
        xs = rng.uniform(0, 1, n)
        env = {("X", (i + 1,)): float(v) for i, v in enumerate(xs)}
        env[("EPS", ())] = eps
        partial = np.cumsum(xs)[1:]
        estimate = values(s, "e", env)
        assert estimate == pytest.approx(math.sqrt(np.sum(partial ** 2) / 3) * eps, rel=1e-12)
        exact = mpmath.fsum(mpmath.mpf(float(v)) for v in xs)
        ratios.append(float(abs(mpmath.mpf(float(values(s, "f", env))) - exact)) / estimate)
    assert 0.2 < np.mean(ratios) < 1.5 and max(ratios) < 4


def test_operator_declaration_application_and_indexing():
    s, _ = run("operator f[2,5](4); array x[3]; y := f(t, x); r := f[1](t, x); "
               "z := f[2,5](x, t);")
    assert s.variables["Y"].shape == (2, 5) and s.variables["R"].shape == (5,)
    assert s.variables["R"][4] is s.variables["Y"][0, 4]
    assert s.variables["Z"][()].params == {"at": (2, 5)}


def test_derived_operators_have_the_papers_types():
    s, _ = run("""operator h[2](3);
        x := vec(x1, x2, x3);
        y := h(x);
        a := dfu(y, x); b := dfuv(y, x, vec(1, 0, 2)); c := dfdv(y, x, vec(1, 1));""")
    table = {name: (op.shape, op.n) for name, op in s.operators.items()}
    assert table == {"H": ((2,), 3), "DH": ((2, 3), 3), "UH": ((2,), 6), "VH": ((3,), 5)}
    assert s.variables["B"][0].op.name == "UH"
    # one call of VH per element of h's result, each weighted by its own adjoint
    c = s.variables["C"][0]
    assert c.op.name == "add" and {a.op.name for a in c.args} == {"VH"}
    assert s.variables["A"][1, 2].op.name == "DH"
    assert s.variables["A"][1, 2].params == {"at": (2, 3)}


def test_derived_operators_differentiate_again():
    s, _ = run("operator g(2); f := g(x, y); h := dfd(dfd(f, vec(x, y)), vec(x, y));")
    assert {"DG", "DDG"} <= set(s.operators)
    assert s.operators["DDG"].shape == (2, 2)
    assert s.variables["H"][0, 1].params == {"at": (1, 2)}


def test_derived_operators_never_take_a_name_in_use():
    # P's V operator would be VP, the vector product: it is VP1, and vp still works.
    s, _ = run("operator p(1); g := dfdv(p(x), x, 1); w := vp(vec(x, 1, 2), vec(1, 2, 3));")
    assert s.variables["G"][()].op.name == "VP1"
    assert s.operators["VP1"].origin == (s.operators["P"], "V") and "VP" not in s.operators
    assert s.variables["W"].shape == (3,)
    # DH is a variable (declared before, or being assigned): H's D operator is DH1.
    for program, dh in (("dh := 2*x; g := dfd(h(x), x);", "mul"),
                        ("dh := dfd(h(x), x); g := dh;", "DH1")):
        s, _ = run("operator h(1); " + program)
        assert s.variables["G"][()].op.name == "DH1"
        assert s.variables["DH"][()].op.name == dh and "DH" not in s.operators
    # A user's own DH is not taken for H's derivative, even with the type it would have.
    s, _ = run("operator h(1), dh[1](1); g := dfu(h(x), x); k := dh(x);")
    assert s.variables["G"][()].op.name == "DH1" and s.variables["K"][0].op.name == "DH"
    assert s.operators["DH"].origin is None
    # Second derivatives too: DH1's own D operator is DDH1.
    s, _ = run("operator h(1); dh := 1; g := dfd(dfd(h(x), x), x);")
    assert s.variables["G"][()].op.name == "DDH1"


def test_statements_io_echo_write_comment_clear_free(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lib.adds").write_text("g := x*x;\n")
    err = io.StringIO()
    out = io.StringIO()
    s = Session(stdout=out, stderr=err)
    s.execute("""comment this is ignored, even := and (;
        on echo; in "lib.adds"; off echo;
        out "code.txt"; outcode(x) g; write "done"; shut "code.txt";
        write "back";
        on fort; outcode(x) g; off fort;
        unused := exp(x) + sin(x);
    """)
    assert (tmp_path / "code.txt").read_text() == "G := X*X;\ndone\n"
    assert out.getvalue() == "back\n      G = X*X\n"
    assert "g := x*x;" in err.getvalue() and "off echo;" in err.getvalue()
    before = len(s.graph.nodes)
    s.variables.pop("UNUSED")
    s.execute("free;")
    assert len(s.graph.nodes) < before
    s.execute("outcode(x) g;")
    assert out.getvalue().endswith("G := X*X;\n")
    s.execute("clear; f := 1;")
    assert set(s.variables) == {"F"} and len(s.graph.nodes) == 1


def test_in_reads_relative_to_the_including_file(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.adds").write_text('in "b.adds"; f := g + 1;')
    (tmp_path / "sub" / "b.adds").write_text("g := x*x;")
    s = Session(stdout=io.StringIO())
    s.run_file(str(tmp_path / "sub" / "a.adds"))
    assert set(s.variables) == {"F", "G", "X"}


def test_in_nests_deeper_than_python_recursion_could(tmp_path):
    # Each `in` once took some Python frames, so 200 nested files were a RecursionError
    # (an internal error); the files being read are a stack now.
    depth = 2000
    for i in range(depth):
        (tmp_path / f"f{i}.adds").write_text(f'a{i} := x + {i};\nin "f{i + 1}.adds";\n')
    (tmp_path / f"f{depth}.adds").write_text("g := x*x;\n")
    s = Session(stdout=io.StringIO())
    s.run_file(str(tmp_path / "f0.adds"))
    assert "G" in s.variables and f"A{depth - 1}" in s.variables and not s._undo
    # a mistake at the bottom undoes every `in` around it, and names the innermost file
    (tmp_path / f"f{depth}.adds").write_text("g := x*x;\ng := vec(1, 2);\n")
    s = Session(stdout=io.StringIO())
    s.execute("y := 1;")
    nodes = len(s.graph.nodes)
    with pytest.raises(AddsError) as info:
        s.execute('in "f0.adds";', directory=str(tmp_path))
    assert info.value.filename.endswith(f"f{depth}.adds") and info.value.line == 2
    assert set(s.variables) == {"Y"} and len(s.graph.nodes) == nodes and not s._reading
    # the REPL reports it once and goes on
    errors = []
    s.execute('in "f0.adds"; z := 2;', directory=str(tmp_path), on_error=errors.append)
    assert len(errors) == 1 and set(s.variables) == {"Y", "Z"}


@pytest.mark.parametrize("path", sorted(
    p for p in os.listdir(os.path.join(os.path.dirname(__file__), "..", "examples"))
    if p.endswith(".adds")))
def test_every_example_runs(path, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)                      # an example may write files with out
    out = io.StringIO()
    Session(stdout=out).run_file(os.path.join(os.path.dirname(__file__), "..", "examples",
                                              path))
    assert out.getvalue()


def _iterate(f, n, x):
    for _ in range(n):
        x = f(x)
    return x


@pytest.mark.parametrize("expr, expected", [
    ("+".join(f"x{i}" for i in range(600)), sum(range(600))),
    ("sin(" * 2000 + "x" + ")" * 2000, _iterate(math.sin, 2000, 0.5)),
    ("-" * 5000 + "x", 0.5),
    ("-" * 5001 + "x", -0.5),
    ("x**" * 3000 + "x", _iterate(lambda y: 0.5 ** y, 3000, 0.5)),
    ("(" * 20000 + "x" + ")" * 20000 + "*a[" + "(" * 3000 + "2" + ")" * 3000 + "]", 1.0),
])
def test_deep_expressions_need_no_recursion(expr, expected):
    # The interpreter walks expression trees with an explicit stack, not Python's.
    s, _ = run(f"array a[2]; f := {expr};")
    env = {("X", ()): 0.5, ("A", (1,)): 1.0, ("A", (2,)): 2.0}
    env.update({(f"X{i}", ()): float(i) for i in range(600)})
    assert values(s, "f", env) == pytest.approx(expected, rel=1e-12)
    assert code(s, "outcode() f;")
    assert code(s, "outcode() f;", fortran=True)


def test_deep_expression_errors_point_at_the_innermost_mistake():
    program = "f := " + "sin(" * 3000 + "vec(1,2)+1" + ")" * 3000 + ";"
    with pytest.raises(AddsError) as info:
        run(program)
    assert info.value.column == len("f := " + "sin(" * 3000) + 1
    assert "[2] and []" in info.value.message


def test_the_parser_agrees_with_lark_on_every_statement():
    # Statements are parsed one by one, and an assignment of a form seen before is made
    # from that form's tree: the trees and positions must be those lark gives the whole
    # text, the first time and again (from the forms), and with other names and numbers.
    rng = np.random.default_rng(0)
    for _ in range(150):
        text = random_program(rng)
        want = without_inner_ends(lark_shapes(text))
        assert not isinstance(want, tuple), want            # (valid programs only)
        got = our_shapes(text)
        assert without_inner_ends(got) == want
        assert our_shapes(text) == got
        renamed = text.replace("y1", "zz9").replace("2.5", "7.25")
        assert without_inner_ends(our_shapes(renamed)) == without_inner_ends(
            lark_shapes(renamed))


def test_lark_parses_each_form_of_statement_once():
    # A long program of a few forms: lark reads the first statement of each form, the
    # rest are made from its tree (lark used to read all of the text).
    import lark
    read = []
    parse = lark.Lark.parse

    def spy(self, text, *args, **kwargs):
        read.append(len(text))
        return parse(self, text, *args, **kwargs)
    program = "x0 := y;\n" + "".join(f"x{i} := x{i - 1}*2 + sin(x{i - 1});\n"
                                     for i in range(1, 3000))
    lark.Lark.parse = spy
    try:
        s, _ = run(program)
    finally:
        lark.Lark.parse = parse
    assert sum(read) < len(program) / 100
    assert s.variables["X2999"][()].args[0].op.name == "mul"


def test_a_hundred_thousand_statements_and_ten_thousand_terms():
    # Neither the parser nor the interpreter recurses over the program or an expression.
    s, _ = run("y := x;\n" + "y := cos(y);\n" * 100000
               + "f := " + " + ".join(f"y*{i}" for i in range(10000)) + ";\n")
    assert len(s.graph.nodes) > 120000
    want = 0.25
    for _ in range(100000):
        want = math.cos(want)
    assert values(s, "f", {("X", ()): 0.25}) == pytest.approx(want * sum(range(10000)),
                                                               rel=1e-9)


def test_free_drops_what_outcode_and_count_added_to_the_graph():
    # (docs/adds.md: the rewriting pass adds its nodes to the session's graph; a long
    # interactive session gets them back with free)
    s = Session(stdout=io.StringIO())
    s.execute("f := x*(3*y) + 2*(x*y); g := dfd(f, x); h := f*g + sin(f); free;")
    before = len(s.graph.nodes)
    s.execute("outcode(x) f; count(x) h; outcode(y) g, h;")
    grown = len(s.graph.nodes)
    s.execute("outcode(x) f; count(x) h; outcode(y) g, h;")   # the same again: nothing
    assert len(s.graph.nodes) == grown > before
    s.execute("free;")
    assert len(s.graph.nodes) == before
