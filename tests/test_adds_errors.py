"""Every mistake in an ADDS program gets one clear message with file, line, column and a
caret, never a Python traceback; a failing statement changes nothing."""
import io

import numpy as np
import pytest

from adds_util import lark_shapes, our_shapes, random_program, without_inner_ends
from wengert.adds import AddsError, Session


def error(program, filename="prog.adds"):
    s = Session(stdout=io.StringIO(), stderr=io.StringIO())
    with pytest.raises(AddsError) as info:
        s.execute(program, filename)
    return info.value, s


def test_syntax_error_has_file_line_column_and_caret():
    e, _ = error("f := x;\ng := (x + ;\n")
    assert (e.filename, e.line, e.column) == ("prog.adds", 2, 11)
    assert str(e) == ("prog.adds:2:11: error: unexpected ';', expected '(' or '+' or '-' or "
                      "a name or a number\n    g := (x + ;\n              ^")


def test_the_line_shown_is_the_line_named():
    # Only \n ends a line; the source line shown was str.splitlines', which ends one at
    # \f (a blank here) and others too, so another line was shown above the caret.
    e, _ = error("f := x*x;\n\f\ng := f + 1;\f\nh := (g;\n")
    assert str(e) == ("prog.adds:4:8: error: unexpected ';', expected ')'\n"
                      "    h := (g;\n           ^")
    for c in "\v\x1c\x1d\x1e\x85\u2028\u2029":
        e, _ = error(f"f := x*x;\ng := 1;{c}\nh := 2;\n")
        assert str(e) == (f"prog.adds:2:8: error: unexpected character {c!r}\n"
                          "    g := 1; \n           ^")


def test_missing_semicolon_and_bad_character():
    e, _ = error("f := x")
    assert "a ';' is missing" in e.message and e.line == 1
    e, _ = error("f := x $ y;")
    assert e.message == "unexpected character '$'" and e.column == 8
    e, _ = error('write "ok";\nwrite "oops;\n')
    assert e.message == "this string is not closed by a '\"' on its line"
    assert (e.line, e.column) == (2, 7)


@pytest.mark.parametrize("literal, kind", [("1e999", "above"), ("2.5D+400", "above"),
                                           ("1d-999", "below"), ("0.0001e-321", "below")])
def test_a_number_a_double_cannot_hold_is_refused_where_it_is_written(literal, kind):
    # (1e999 was read as inf, and 1d-999 as 0, without a word)
    e, _ = error(f"f := x;\ng := 2 + {literal}*x;\n")
    assert (e.line, e.column) == (2, 10)
    assert f"the number {literal} is out of the range of double precision ({kind}" in e.message
    assert float(literal.upper().replace("D", "E")) in (0.0, np.inf)


def test_numbers_at_the_edges_of_double_precision_are_kept():
    s = Session(stdout=io.StringIO(), stderr=io.StringIO())
    s.execute("a := 4.9e-324 + 0.0e0 + 0d0 + 000.000;\nb := 1.7976931348623157e308;\n",
              "prog.adds")
    assert s.variables["A"][()].value == 5e-324
    assert s.variables["B"][()].value == np.finfo(float).max


def test_type_error_points_at_the_expression():
    e, _ = error("array a[2], b[3];\nc := a + b;")
    assert (e.line, e.column) == (2, 6)
    assert "[2] and [3]" in e.message


@pytest.mark.parametrize("program, message", [
    ("f := y[1];", "undefined name Y"),
    ("f := x; outcode(x) g;", "undefined name G"),
    ("f := x; outcode(q) f;", "undefined name Q"),
    ("f := foo(x);", "undefined operator FOO (declare it: operator FOO(n);)"),
    ("x := 1; f := x(2);", "X is a variable, not an operator"),
    ("operator h(2); f := h + 1;", "H is an operator; apply it to operands"),
    ("array a[2,3]; f := a[3];", "index 3 of A is out of range 1..2"),
    ("array a[2,3]; f := a[1,0];", "index 0 of A is out of range 1..3"),
    # past 2**53 the index as a float's digits, not the integer it was rounded to
    ("array a[2]; f := a[99999999999999999999];", "index 1e+20 of A is out of range 1..2"),
    ("array a[2]; f := a[1e300];", "index 1e+300 of A is out of range 1..2"),
    ("array a[2]; f := a[1,1];", "A has type [2]: 2 indices are too many"),
    ("array a[2]; f := a[x];", "an index must be an integer constant"),
    ("array a[2]; f := a[1.5];", "an index must be an integer constant"),
    ("operator f[2,5](4); array x[3]; y := f(x);",
     "operator F[2,5](4) takes 4 scalar operands in all, got 3"),
    ("operator g(1); y := g(a, b);", "operator G(1) takes 1 scalar operand in all, got 2"),
    ('in "no-such-file.adds";', 'in: there is no file "no-such-file.adds"'),
    ('shut "x.txt";', 'shut: "x.txt" is not open for output'),
    ("on speed;", "on takes ECHO or FORT, got SPEED"),
    ("f := sin(x, y);", "SIN takes 1 operand, got 2"),
    ("f := dfu(x);", "DFU takes 2 operands, got 1"),
    ("f := vec();", "VEC needs at least one operand"),
    ("f := x*x; g := dfd(f, vec(x, x));", "must be distinct"),
    # (expressions are refused: the message offered "or an expression of variables")
    ("f := x*x; g := dfd(f, 2);", "cannot differentiate with respect to the constant 2.0: "
     "the variable of differentiation must be a variable"),
    ("c := 2; f := x*c; g := dfd(f, c);", "cannot differentiate with respect to the constant"),
    ("array sin[2];", "SIN is a built-in operator"),
    # DH is what differentiating H declared: not a name for a variable any more
    ("operator h(1); g := dfd(h(x), x); dh := g;", "DH is an operator DH[1](1) (the D "
     "operator of H, declared by differentiating it); it cannot be assigned to"),
    ("operator h(1); g := dfd(h(x), x); array dh[2];", "DH is already declared: it is the "
     "operator DH[1](1) (the D operator of H"),
    ("array a[2]; array a[3];", "A is already a variable of type [2]"),
    ("array a[0];", "array bounds must be at least 1"),
    ("array a[99999999999];", "array A is too large (99999999999 elements; at most 1000000)"),
    ("array a[100000]; f := dfd(a, a);", "the Jacobian, of type [100000,100000], is too large"),
    ("operator h[9999,9999](1);", "the result of operator H is too large (99980001 "
     "elements; at most 1000000)"),
    # NumPy allows 64 indices: more was an internal error
    (f"array a[{','.join(['1'] * 65)}];", "array A has rank 65, too large (at most 64 "
     "indices)"),
    ("f := " + "vec(" * 65 + "x" + ")" * 65 + ";", "has rank 65, too large"),
    (f"array a[{','.join(['1'] * 33)}], b[{','.join(['1'] * 34)}]; c := a*b;",
     "has rank 65, too large"),
    (f"array a[{','.join(['1'] * 33)}]; g := dfd(a, a);", "the Jacobian, of type [1,1,"),
    # a matrix product of order n makes ~2n**3 nodes: refused before it starts
    ("array a[200,200]; b := a*a;", "*: the product of [200,200] by [200,200] would make "
     "up to 15960000 nodes; the program may have at most 4000000"),
    ("array a[200,200]; b := a**3;", "*: the product of [200,200] by [200,200] would make "
     "up to 15960000 nodes"),
    ("f := log(0) + x; outcode(x) f;", "the code would contain the constant -inf"),
    # constants fold before x/x -> 1 and x*0 -> 0 could turn nan into 1 or 0
    ("f := (0/0) + x; outcode(x) f;", "the code would contain the constant nan"),
    ("f := x*(0/0); outcode(x) f;", "the code would contain the constant nan"),
    ("f := x + 0*(1/0); outcode(x) f;", "the code would contain the constant nan"),
])
def test_each_mistake_has_one_clear_message(program, message):
    e, _ = error(program)
    assert message in e.message and "internal error" not in e.message
    assert e.located and "Traceback" not in str(e)
    assert "expression of variables" not in e.message


@pytest.mark.parametrize("wrt", ["2*x", "-x", "x*1", "x+0", "sin(x)", "vec(x, 2*y)",
                                 "dfd(f, x)", "tp(vec(vec(x), vec(-y)))", "vec(x, y)[1]+0"])
@pytest.mark.parametrize("call", ["dfd(f, {})", "dfu(f, {})", "dfuv(f, {0}, {0})",
                                  "dfdv(f, {}, f)", "err(f, {}, 1)"])
def test_derivatives_are_with_respect_to_variables_only(call, wrt):
    # dfd(f, 2*x) and dfd(f, -x) gave 0 without a word: the expression is a new node,
    # which f cannot depend on
    program = "f := x*x + y; g := " + call.format(wrt) + ";"
    e, s = error(program)
    name = call[:call.index("(")].upper()
    assert e.message.startswith(f"{name}: the second operand must be a variable (a name, "
                                "an element or part of one like a[2], or vec(...) or "
                                "tp(...) of them), not an expression")
    assert e.column == program.index(wrt, program.index(call[:4])) + 1
    assert "G" not in s.variables


def test_derivatives_with_respect_to_names_elements_vec_and_tp():
    s = run_quietly("array a[2,2]; y := 2*x; f := y*y + a[1,2]*x;"
                       "g := dfd(f, y); h := dfu(f, vec(x, y)); k := dfd(f, (a[1]));"
                       "m := dfd(f, tp(a)); n := dfuv(f, vec(x, y)[2], 1); p := dfd(f, a);")
    assert s.variables["H"].shape == (2,) and s.variables["M"].shape == (2, 2)
    out = io.StringIO()
    s.stdout = out
    s.execute("outcode(x) g, k, n;")
    # df/dy = 2y = 4x, df/da[1] = (0, x)
    assert sorted(out.getvalue().splitlines()) == ["G := X*4;", "K[1] := 0;", "K[2] := X;",
                                                   "N := G;"]


def run_quietly(program):
    s = Session(stdout=io.StringIO(), stderr=io.StringIO())
    s.execute(program)
    return s


def test_a_failing_statement_changes_nothing():
    s = Session(stdout=io.StringIO())
    s.execute("array a[2]; f := a*a;")
    nodes, variables = len(s.graph.nodes), dict(s.variables)
    with pytest.raises(AddsError):
        s.execute("g := dfd(exp(a[1]) * f, a) + vec(1, 2, 3);")     # fails after building
    assert len(s.graph.nodes) == nodes and s.variables == variables
    with pytest.raises(AddsError):
        s.execute("operator h[2](1); z := h(f) + dfd(h(f), vec(f));")
    assert "H" in s.operators and "DH" not in s.operators       # the declaration stays
    s.execute("g := dfd(f, a); outcode(a) g;")                      # and goes on
    assert sorted(s.stdout.getvalue().splitlines()) == ["G[1] := A[1]*2;",
                                                        "G[2] := A[2]*2;"]


def test_a_program_past_the_node_limit_is_stopped_and_undone(monkeypatch):
    # every element of every value is a node: a program that would hold more than
    # MAX_NODES of them stops with a located error rather than running out of memory
    from wengert.adds import types
    monkeypatch.setattr(types, "MAX_NODES", 50)
    s = Session(stdout=io.StringIO())
    s.execute("array a[3,3]; b := a + a;")
    nodes = len(s.graph.nodes)
    with pytest.raises(AddsError) as info:
        s.execute("c := tp(b) + b;\nd := a*vec(1, 2, 3) + c[1];\ne := exp(c);\nf := sin(e);")
    e = info.value
    assert e.message == "the program is too large: its graph would exceed 50 nodes"
    assert (e.line, e.column) == (4, 1) and e.located
    assert sorted(s.variables) == ["A", "B", "C", "D", "E"]     # the statements before it
    assert len(s.graph.nodes) <= 50
    held = len(s.graph.nodes)
    # (what the graph holds is said: "up to 45 nodes; at most 50" read as a contradiction)
    with pytest.raises(AddsError, match=r"would make up to 45 nodes; the program may have "
                                        rf"at most 50 \(it has {held} already\)"):
        s.execute("g := a*b;")
    assert len(s.graph.nodes) <= 50 and "G" not in s.variables
    assert len(s.graph.nodes) > nodes            # (c, d and e were kept)
    s.execute("clear; array a[2,2]; g := a*a;")                 # clear makes room again
    assert s.variables["G"].shape == (2, 2)


def test_error_in_an_included_file_names_that_file(tmp_path):
    (tmp_path / "inner.adds").write_text("f := 1;\nf := vec(1, 2);\n")
    e, _ = error(f'in "{tmp_path / "inner.adds"}";')
    assert e.filename.endswith("inner.adds") and e.line == 2


def test_a_file_cannot_include_itself(tmp_path):
    (tmp_path / "loop.adds").write_text('in "loop.adds";')
    s = Session(stdout=io.StringIO())
    with pytest.raises(AddsError, match="already being read"):
        s.run_file(str(tmp_path / "loop.adds"))


def test_a_file_cannot_include_itself_through_a_symbolic_link(tmp_path):
    # sub/f.adds is f.adds: without resolving links, the path grew sub/sub/... until the
    # system refused it
    (tmp_path / "sub").symlink_to(".")
    (tmp_path / "f.adds").write_text('in "sub/f.adds";')
    with pytest.raises(AddsError) as info:
        Session(stdout=io.StringIO()).run_file(str(tmp_path / "f.adds"))
    assert info.value.message == ('in: "sub/f.adds" is already being read (a file cannot '
                                  "include itself)")


def test_in_a_directory_says_it_is_one(tmp_path):
    e, _ = error(f'in "{tmp_path}";')
    assert e.message == f'in: "{tmp_path}" is a directory, not a file' and e.column == 1


def test_syntax_errors_are_lark_s_with_positions_in_the_whole_text():
    # Statement by statement, a syntax error is still reported as lark reports it for the
    # whole text: same message, file, line, column and caret (and a program a change
    # leaves valid still parses as lark parses it).
    rng = np.random.default_rng(1)
    damage = [";", "(", ")", "[", "]", ",", '"', "$", ":=", "**", "%", "\n", "comment ",
              "array ", "1.5.2", "\udc80", ""]
    errors = 0
    for _ in range(400):
        text = random_program(rng, statements=6)
        at = int(rng.integers(0, len(text) + 1))
        cut = int(rng.integers(0, 3))
        text = text[:at] + str(rng.choice(damage)) + text[at + cut:]
        want, got = lark_shapes(text), our_shapes(text)
        if "\udc80" in text:
            # A byte that is not UTF-8 is an error wherever it is, in a string or a remark
            # too, where lark takes it: the error is lark's if it comes in a statement
            # before it, else the byte's
            errors += 1
            at = text.index("\udc80")
            line, column = text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)
            byte = AddsError("byte 0x80 is not UTF-8 text").at("f.adds", text, line, column)
            assert got in (want, ("error", str(byte))), text
        elif isinstance(want, tuple):
            errors += 1
            assert got == want, text
        else:
            assert without_inner_ends(got) == without_inner_ends(want), text
    assert errors > 200


def test_a_syntax_error_anywhere_means_nothing_runs():
    out = io.StringIO()
    s = Session(stdout=out, stderr=io.StringIO())
    with pytest.raises(AddsError) as info:
        s.execute('write "first"; f := x;\n' * 3 + "g := (x + ;\n", "p.adds")
    assert (info.value.line, info.value.column) == (4, 11)
    assert out.getvalue() == "" and "F" not in s.variables


def test_a_failing_include_is_undone_whole(tmp_path):
    # Statements of an included file that ran are undone with the `in` statement when a
    # later one of them fails, as any failing statement's effects are.
    (tmp_path / "lib.adds").write_text("a := x*x;\narray b[2];\nc := a + b;\n")
    s = Session(stdout=io.StringIO())
    s.execute("f := y;")
    nodes, variables = len(s.graph.nodes), dict(s.variables)
    with pytest.raises(AddsError) as info:
        s.execute(f'in "{tmp_path / "lib.adds"}";')
    assert info.value.filename.endswith("lib.adds") and info.value.line == 3
    assert len(s.graph.nodes) == nodes and s.variables == variables
    assert set(s.symbols) == {n.index for n in s.graph.nodes if not n.args and
                              not n.is_const}


@pytest.mark.parametrize("program, column, message", [
    ("operator h(1), sin(2);", 16, "SIN is a built-in operator; choose another name for the "
     "operator"),
    ("operator h(1),\n  dfu[2](1);", 3, "DFU is a built-in operator"),
    ("array a[2], vec[3];", 13, "VEC is a built-in operator; choose another name for the "
     "array"),
    ("array a[2]; operator g(1), a(2);", 28, "A is already a variable of type [2]"),
    ("operator g(0);", 10, "operator G must take at least one operand"),
    # capped as array sizes are (each operand gets a rule at once: 10**20 never finished)
    ("operator h(1), g(99999999999999999999);", 16, "operator G takes too many operands "
     "(99999999999999999999; at most 1000000)"),
    ("operator h(1), g(1000001);", 16, "operator G takes too many operands"),
    ("operator h(1), f[99999999999999999999](1);", 16, "the result of operator F is too "
     "large (99999999999999999999 elements; at most 1000000)"),
])
def test_a_wrong_declaration_is_pointed_at(program, column, message):
    # An operator may not be named like one of ADDS's own (SIN, SQRT, VP, DFU, ...); the
    # caret points at the declaration that is wrong, not at the statement's start.
    e, s = error(program)
    assert e.column == column and message in e.message
    assert "SIN" not in s.operators and "H" not in s.operators


@pytest.mark.parametrize("program, ref, message", [
    ("f := x;\ng := vec(x, y);\noutcode(x)\n   g[3];", "g[3]", "index 3 of G is out of range"),
    ("f := x;\ncount(x)\n   f[1];", "f[1]", "F has type []: 1 indices are too many"),
    ("array a[2];\ncount(\n  a[0]) a;", "a[0]", "index 0 of A is out of range 1..2"),
    ("f := x;\noutcode(x) f,\n  q;", "q", "undefined name Q"),
])
def test_a_mistake_in_an_outcode_or_count_reference_is_pointed_at(program, ref, message):
    # the caret was under the keyword, lines before the reference that is wrong
    e, _ = error(program)
    at = program.index(ref)
    line = program.count("\n", 0, at) + 1
    column = at - (program.rfind("\n", 0, at) + 1) + 1
    assert message in e.message and (e.line, e.column) == (line, column)
