"""The `wengert` command: run, repl (driven through a pipe), piped programs, --help."""
import io
import os
import pathlib
import subprocess
import sys

import pytest

from wengert.adds import AddsError, Session

ROOT = pathlib.Path(__file__).parent.parent


def wengert(*args, stdin=""):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "wengert", *args], input=stdin, text=True,
                          capture_output=True, env=env, cwd=ROOT, timeout=60)


def test_run_powell_prints_counts_and_fortran():
    r = wengert("run", "examples/powell.adds")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("C COUNT: ADDITIONS/SUBTRACTIONS 7, MULTIPLICATIONS 10")
    assert any(line.startswith("      PHP = ") for line in lines)
    assert all(len(line) <= 72 for line in lines)


def test_run_reports_a_mistake_with_position_and_no_traceback(tmp_path):
    bad = tmp_path / "bad.adds"
    bad.write_text("array a[2];\nf := a * vec(1, 2, 3);\n")
    r = wengert("run", str(bad))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"{bad}:2:6: error: *: cannot multiply [2] by [3]")
    assert r.stderr.splitlines()[-1] == "         ^"
    r = wengert("run", str(tmp_path / "missing.adds"))
    assert r.returncode == 1 and "cannot read" in r.stderr and "Traceback" not in r.stderr


def test_piped_standard_input_is_a_program():
    r = wengert(stdin="f := x*sin(x);\ng := dfd(f, x);\noutcode(x) f, g;\n")
    assert r.returncode == 0
    assert r.stdout == "V0001 := SIN(X);\nF := X*V0001;\nG := V0001+X*COS(X);\n"


def test_repl_through_a_pipe_survives_mistakes_and_keeps_the_graph():
    session = "\n".join([
        "f := x*",                 # a statement spanning lines
        "   exp(x);",
        "g := f + ;",              # syntax error
        "g := f + vec(1, 2);",     # type error: nothing changes
        "h := undefined_op(x);",
        "g := dfd(f, x); outcode(x) f, g;",
        "count(x) g;",
    ]) + "\n"
    r = wengert("repl", stdin=session)
    assert r.returncode == 0
    assert r.stdout == ("V0001 := EXP(X);\nF := X*V0001;\nG := V0001+F;\n"
                        "% COUNT: ADDITIONS/SUBTRACTIONS 1, MULTIPLICATIONS 1, DIVISIONS 0, "
                        "FUNCTION CALLS 1, POWERS 0\n")
    errors = r.stderr.splitlines()
    assert errors[0].startswith("<stdin>:3:10: error: unexpected ';'")
    assert any(e.startswith("<stdin>:4:6: error:") for e in errors)
    assert any("undefined operator UNDEFINED_OP" in e for e in errors)
    assert "Traceback" not in r.stderr


def test_help_documents_the_commands_and_the_language():
    r = wengert("--help")
    for word in ("run", "repl", "demo", "outcode", "dfuv", "err(f,x,eps)", "on fort",
                 "operator", "adds> "):
        assert word in r.stdout
    assert wengert("demo").returncode == 0


def test_only_count_and_draw_sessions_keep_their_requests():
    # An interactive session must not hold every outcode statement's graph alive.
    import io
    from wengert.adds import Session
    program = "f := x*x; outcode(x)f; clear; g := y+1; outcode(y)g;"
    plain = Session(stdout=io.StringIO())
    plain.execute(program)
    assert plain.requests is None
    kept = Session(stdout=io.StringIO(), keep_requests=True)
    kept.execute(program)
    assert [label for label, *_ in kept.requests] == ["outcode(X) F", "outcode(Y) G"]


def test_count_and_draw_leave_the_programs_out_files_alone(tmp_path):
    """count runs the program twice (the second time as plain AD) and draw once more: the
    file the program writes keeps what `run` wrote there."""
    written = tmp_path / "side.txt"
    program = tmp_path / "side.adds"
    program.write_text(f'f := sin(x)*sin(x)*y; g := dfd(f, x);\nout "{written}";\n'
                       f'outcode(x) f, g;\nshut "{written}";\n')
    assert wengert("run", str(program)).returncode == 0
    text = written.read_text()
    assert "G := 2*(V0006*COS(X));" in text
    for args in (["count", str(program)], ["draw", "-o", str(tmp_path / "p.dot"), str(program)]):
        written.write_text(text + "% kept\n")
        r = wengert(*args)
        assert r.returncode == 0, r.stderr
        assert written.read_text() == text + "% kept\n"


def test_a_file_that_is_not_utf8_gets_a_located_error(tmp_path):
    bad = tmp_path / "nonutf.adds"
    bad.write_bytes(b"f := x\xff;\n")
    (tmp_path / "outer.adds").write_text(f'in "{bad}";\n')
    for args in (["run", str(bad)], ["count", str(bad)],
                 ["draw", "-o", str(tmp_path / "p.svg"), str(bad)],
                 ["run", str(tmp_path / "outer.adds")]):
        r = wengert(*args)
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
        assert r.stderr.startswith(f"{bad}:1:7: error: byte 0xFF is not UTF-8 text"), r.stderr


def test_draw_reports_what_dot_and_the_file_system_refuse(tmp_path, monkeypatch, capsys):
    from wengert.cli import draw_program
    fake = tmp_path / "dot"          # a dot that knows no format, whether Graphviz is here
    fake.write_text("#!/bin/sh\necho 'Format: \"xyz\" not recognized.' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    program = str(ROOT / "examples" / "powell.adds")
    assert draw_program(program, str(tmp_path / "p.png")) == 1
    assert capsys.readouterr().err == (f'wengert draw: dot failed: Format: "xyz" not '
                                       f'recognized; -o {tmp_path}/p.dot writes the graph '
                                       "as DOT text without running dot\n")
    # a format that is not one -o names: said in a line, not dot's list of ~50 formats
    assert draw_program(program, str(tmp_path / "p.xyz")) == 1
    assert capsys.readouterr().err == (f"wengert draw: dot cannot write {tmp_path}/p.xyz (a "
                                       ".xyz file); -o takes FILE.svg, FILE.png, FILE.pdf or "
                                       "FILE.dot (the DOT text, which needs no dot)\n")
    # -o '' meant FILE.svg, silently
    assert draw_program(program, "") == 1 and "-o needs a file name" in capsys.readouterr().err
    assert not (ROOT / "examples" / "powell.svg").exists()
    assert draw_program(program, str(tmp_path / "no-such-dir" / "p.dot")) == 1
    assert capsys.readouterr().err == (f"wengert draw: cannot write {tmp_path}/no-such-dir/p.dot:"
                                       " No such file or directory\n")


def test_repl_runs_the_statements_after_a_failing_one_on_its_line():
    r = wengert("repl", stdin='a := 1; b := vec(1,2)+1; c := 3; outcode() c;\n'
                              'comment say "hi;\ncomment this is 50% done;\noutcode() a;\n')
    assert r.returncode == 0 and r.stdout == "C := 3;\nA := 1;\n"
    assert r.stderr.startswith("<stdin>:1:14: error: +:") and len(r.stderr.splitlines()) == 3


def wengert_bytes(*args, stdin=b""):
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONIOENCODING="utf-8")
    return subprocess.run([sys.executable, "-m", "wengert", *args], input=stdin,
                          capture_output=True, env=env, cwd=ROOT, timeout=60)


def test_standard_input_is_read_as_a_file_is():
    # Bytes that are not UTF-8 were a UnicodeDecodeError traceback, and lone CRs were no
    # line ends, when piped: standard input is decoded as a file is now.
    for args in ([], ["run", "-"], ["repl"]):
        r = wengert_bytes(*args, stdin=b"f := x*x;\ng := x\xe9;\n")
        assert b"Traceback" not in r.stderr and r.returncode == (0 if args == ["repl"] else 1)
        assert r.stderr.decode().startswith(
            "<stdin>:2:7: error: byte 0xE9 is not UTF-8 text\n    g := x"), r.stderr
        r = wengert_bytes(*args, stdin=b"f := x*x;\rg := f $ 1;\r")
        assert r.stderr.decode() == ("<stdin>:2:8: error: unexpected character '$'\n"
                                     "    g := f $ 1;\n           ^\n"), r.stderr
        # a byte-order mark (some Windows editors write one) is no character of the program
        r = wengert_bytes(*args, stdin=b"\xef\xbb\xbff := x*x;\r\noutcode(x) f;\r\n")
        assert r.returncode == 0 and r.stdout == b"F := X*X;\n", r.stderr


def test_repl_reports_an_unterminated_string_at_its_line_and_goes_on():
    # A string cannot span lines; the session waited for its closing quote, so the rest
    # of the input was swallowed and an unlocated "ended in the middle" closed it.
    r = wengert("repl", stdin='write "oops;\nf := x*x;\noutcode(x) f;\n')
    assert r.returncode == 0 and r.stdout == "F := X*X;\n"
    assert r.stderr == ("<stdin>:1:7: error: this string is not closed by a '\"' on its line\n"
                        '    write "oops;\n          ^\n'), r.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_output_that_cannot_be_written_is_a_clean_error():
    # A full disk was an internal error (OSError), or Python's "Exception ignored" at exit.
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    program = str(ROOT / "examples" / "powell.adds")
    for args, message in [(["run", program], f"{program}:13:1: error: cannot write standard "
                                             "output: No space left on device"),
                          (["count", program], "wengert: cannot write standard output: No "
                                               "space left on device")]:
        with open("/dev/full", "w") as full:
            r = subprocess.run([sys.executable, "-m", "wengert", *args], stdout=full,
                               stderr=subprocess.PIPE, text=True, env=env, timeout=60)
        assert r.returncode == 1 and r.stderr.startswith(message), r.stderr
        assert "Traceback" not in r.stderr and "Exception" not in r.stderr
    e = pytest.raises(AddsError, Session(stdout=io.StringIO()).execute,
                      'out "/dev/full"; write "x"; shut "/dev/full";').value
    assert (e.line, e.column) == (1, 29)
    assert e.message == "shut: cannot write /dev/full: No space left on device"


def test_a_byte_that_is_not_utf8_is_an_error_wherever_it_is(tmp_path):
    # In a string it was written to standard output as it was (and to an `out` file not
    # at all, with a message showing "caf\udce9"); in a remark it was no error at all.
    # The docs say: an error at its position, and nothing runs.
    for program in (b'f := 1; write "ok"; write "caf\xe9";\n',
                    b'f := 1; write "ok";\n% caf\xe9\n',
                    b'f := 1; write "ok"; comment caf\xe9;\n'):
        (tmp_path / "p.adds").write_bytes(program)
        at = program.index(b"\xe9")
        line = program.count(b"\n", 0, at) + 1
        column = at - (program.rfind(b"\n", 0, at) + 1) + 1
        r = wengert_bytes("run", str(tmp_path / "p.adds"))
        assert r.returncode == 1 and r.stdout == b"", r.stderr
        message, source, caret = r.stderr.decode().splitlines()
        assert message == (f"{tmp_path / 'p.adds'}:{line}:{column}: error: byte 0xE9 is not "
                           "UTF-8 text")
        assert "?" in source and caret.index("^") == source.index("?")   # under the byte


def test_a_character_a_stream_cannot_encode_is_a_clean_error():
    out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    e = pytest.raises(AddsError, Session(stdout=out).execute, 'write "caf\u00e9";').value
    assert e.message == "cannot write 'é' to standard output" and e.located


def test_draw_names_the_signal_that_killed_dot(tmp_path, monkeypatch, capsys):
    # dot crashes on some huge graphs; a signal leaves stderr empty, so the message was
    # "dot failed: " and nothing more
    from wengert.cli import draw_program
    fake = tmp_path / "dot"
    fake.write_text("#!/bin/sh\nkill -SEGV $$\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert draw_program(str(ROOT / "examples" / "powell.adds"), str(tmp_path / "p.svg")) == 1
    assert capsys.readouterr().err == ("wengert draw: dot was killed by signal 11 (SIGSEGV); "
                                       f"-o {tmp_path}/p.dot writes the graph as DOT text "
                                       "without running dot\n")


@pytest.mark.parametrize("index, accepted", [("x-x+1", True), ("n", True), ("n-1", True),
                                             ("2*x/x", False), ("x", False), ("1.5", False)])
def test_plain_and_simplifying_sessions_read_the_same_indices(index, accepted):
    # `wengert count` reruns a program without simplification (its column b); it refused
    # a[x-x+1] and a[n] with n := 1+1, which `wengert run` accepts
    program = f"array a[2]; n := 1+1; f := a[{index}]*y; count(y) f;"
    for optimize in (True, False):
        s = Session(stdout=io.StringIO(), optimize=optimize)
        if accepted:
            s.execute(program)
            assert s.variables["F"][()].args[0] is s.variables["A"][1 if index == "n" else 0]
        else:
            with pytest.raises(AddsError, match="an index must be an integer constant"):
                s.execute(program)
    # and the plain session stays plain outside its indices
    s = Session(stdout=io.StringIO(), optimize=False)
    s.execute("array a[1]; f := a[x-x+1]*(y-y);")
    assert s.variables["F"][()].args[1].op.name == "sub"


# --- wengert count's column a: the function alone --------------------------------------------
def _column_a(program):
    """Column a of `wengert count` for the last outcode/count statement of `program`."""
    from wengert.codegen.count import count_ops
    s = Session(stdout=io.StringIO(), keep_requests=True)
    s.execute(program)
    _, graph, _, derived, _, function = s.requests[-1]
    return {k: n for k, n in count_ops(graph, function, derived).items() if n}


@pytest.mark.parametrize("derivative, program, by_hand", [
    # the user's nodes were first made, and interned, by the derivative before them
    ("f := x*x; g := dfd(f, x);", "h := 2*x + sin(x); count(x) h;",
     {"add": 1, "mul": 1, "call": 1}),
    ("g := dfd(sin(x), x);", "f := cos(x) + 1; count(x) f;", {"add": 1, "call": 1}),
    ("f := sin(x)*y; g := dfd(f, x);", "h := cos(x)*y + 1; count(x) h;",
     {"add": 1, "mul": 1, "call": 1}),
    # simplification gives back the node dfd made (x+x is 2*x), or its constant (6)
    ("g := dfd(x*x*sin(y), x);", "h := x + x; count(x) h;", {"mul": 1}),
    ("g := dfd(3*x*x, x); outcode(x) g;", "h := 6*y + 1; count(y) h;", {"add": 1, "mul": 1}),
    ("g := dfu(vec(sin(x), cos(y)), vec(x, y));", "h := vec(cos(x), sin(y))*vec(1, 2); "
     "count(x) h;", {"add": 1, "mul": 1, "call": 2}),
])
def test_count_column_a_is_the_users_function_whatever_a_derivative_made_first(
        derivative, program, by_hand):
    # Column a counted h (or f) as derivative code: 1 call of 1 add, 1 mul, 1 call, and
    # none at all of cos(x) + 1.  It is what the program without the derivative gives.
    assert _column_a(derivative + program) == by_hand == _column_a(program)


@pytest.mark.parametrize("program", [
    "g := dfd(sin(x), x); k := g*1; count(x) k;",             # k is g itself
    "g := dfd(sin(x), x); m := -g; k := -m; count(x) k;",      # -(-g) is g
    "g := dfd(sin(x), x); k := vec(g, g)[2]; count(x) k;",
])
def test_a_derivative_reached_through_a_derivative_stays_one(program):
    # The node is g's, and g is the derivative of sin(x): column a is sin(x), 1 call
    assert _column_a(program) == {"call": 1}


def test_a_failing_statement_leaves_the_derivative_marks_as_they_were(tmp_path):
    s = Session(stdout=io.StringIO(), keep_requests=True)
    s.execute("g := dfd(sin(x), x);")
    marks = dict(s.derived)
    cos = s.variables["G"][()]
    assert cos.index in marks                   # cos(x), made by dfd
    with pytest.raises(AddsError, match=r"\+: the operands must have the same type"):
        s.execute("f := cos(x) + vec(1, 2);")   # reaches cos(x), then fails
    assert dict(s.derived) == marks
    s.execute("f := cos(x) + 1;")
    assert cos.index not in s.derived
    # a failing `in` is undone whole, with the `clear` or `free` it ran
    s.execute("h := dfd(sin(x)*x, x);")
    marks = dict(s.derived)
    assert marks
    for undone in ("clear; g := dfd(sin(y), y); k := cos(y);", "free;"):
        (tmp_path / "inner.adds").write_text(f"{undone} f := y + vec(1, 2);")
        with pytest.raises(AddsError):
            s.execute(f'in "{tmp_path / "inner.adds"}";')
        assert dict(s.derived) == marks


def test_draw_fills_only_what_derivatives_alone_need(tmp_path):
    from wengert.cli import draw_program
    program = tmp_path / "p.adds"
    program.write_text("g := dfd(x*sin(x), x);\nf := cos(x) + 1;\ncount(x) f, g;\n")
    assert draw_program(str(program), str(tmp_path / "p.dot"), io.StringIO()) == 0
    lines = (tmp_path / "p.dot").read_text().splitlines()
    # g = sin(x) + x*cos(x): cos(x) is f's too, and drawn as the function's; x*cos(x) and
    # the sum are g's alone
    [cos] = [line for line in lines if 'label="cos"' in line]
    assert "filled" not in cos
    assert sum("filled" in line for line in lines if 'label="×"' in line) == 1
    assert sum("filled" in line for line in lines if 'label="+"' in line) == 1


# --- wengert count reads a program as run does ------------------------------------------------
def _count_columns(tmp_path, program):
    """{column: {kind: n}} of `wengert count`'s table for a one-statement program."""
    from wengert.cli import count_program
    path = tmp_path / "p.adds"
    path.write_text(program)
    out = io.StringIO()
    assert count_program(str(path), out) == 0
    kinds = out.getvalue().splitlines()[-1].strip()
    columns = {}
    for part in kinds.split(";  "):
        column, _, counts = part.partition(": ")
        columns[column] = {} if counts == "none" else {
            k: int(n) for n, k in (c.split() for c in counts.split(", "))}
    return columns


@pytest.mark.parametrize("program, direct, b_by_hand", [
    # an index, a matrix power and a scalar power that only simplification shows to be
    # the integer constant 2 (3): count failed on the first two, and counted the third
    # as pow (and x - x + 3) in column b, as multiplications in column c
    ("array a[3]; n := x - x + 2; b := a[n]*y; count(y) b;",
     "array a[3]; b := a[2]*y; count(y) b;", {"mul": 1}),
    ("array m[2,2]; n := 0*x + 2; f := m**n; count(m) f;",
     "array m[2,2]; f := m**2; count(m) f;", {"add": 4, "mul": 8}),
    ("n := x - x + 3; f := y**n; count(y) f;", "f := y**3; count(y) f;", {"mul": 2}),
])
def test_count_reads_integer_constants_as_run_does(tmp_path, program, direct, b_by_hand):
    counted = _count_columns(tmp_path, program)
    assert counted == _count_columns(tmp_path, direct)
    assert counted["b"] == b_by_hand


def test_count_does_not_emit_the_plain_run(tmp_path):
    # In `run`, 0*(x*inf) is 0 and F := Y; the plain run kept the constant inf, which
    # outcode cannot write, and count failed with "outcode: the code would contain ..."
    # (the inf was written 1e999, which is now refused where it is written)
    program = "f := y + 0*(x*(1e308*1e308)); outcode(y) f;"
    assert wengert("run", "-", stdin=program).stdout == "F := Y;\n"
    assert _count_columns(tmp_path, program) == {"a": {}, "b": {"add": 1, "mul": 3}, "c": {}}


def test_repl_runs_the_statements_around_a_syntax_error_on_its_line():
    # the syntax error dropped the whole line: f := 1 never ran, and the next line said
    # "undefined name F"
    r = wengert("repl", stdin="f := 1; g := x +* 2; h := 3;\noutcode() f, h;\n")
    assert r.returncode == 0 and r.stdout == "F := 1;\nH := 3;\n", r.stderr
    [message, _, caret] = r.stderr.splitlines()
    assert message.startswith("<stdin>:1:17: error: unexpected '*'")
    assert caret.index("^") - 4 == "f := 1; g := x +* 2;".index("*")
    # a file or a piped program still runs nothing after a syntax error anywhere
    r = wengert("run", "-", stdin="f := 1; outcode() f; g := x +* 2;\n")
    assert r.returncode == 1 and r.stdout == ""


def test_ctrl_c_during_run_is_one_line_and_status_130(monkeypatch, capsys):
    # It was a Python traceback from wherever the program was.  (In process: a real
    # SIGINT to a child raced the program's end, which a fast machine reached first.)
    from wengert import cli

    def interrupted(argv=None):
        print("started")
        raise KeyboardInterrupt
    monkeypatch.setattr(cli, "main", interrupted)
    assert cli.entry() == 130
    out, err = capsys.readouterr()
    assert out == "started\n" and err == "wengert: interrupted\n"


def test_ctrl_c_in_the_repl_undoes_the_statement_and_goes_on(monkeypatch):
    from wengert.adds.repl import repl
    s = Session(stdout=io.StringIO(), stderr=io.StringIO())
    assign = s._assign

    def slow(ref, expr):                    # (Ctrl-C while a := ... runs, half done)
        if ref.children[0] == "A":
            s.value(expr)                   # (sin(f) made, then the interrupt)
            raise KeyboardInterrupt
        return assign(ref, expr)
    monkeypatch.setattr(s, "_assign", slow)
    s.execute("f := x*x;")
    nodes = len(s.graph.nodes)
    assert repl(s, io.StringIO("a := sin(f); b := 2;\ng := f + 1;\noutcode(x) g;\n")) == 0
    assert s.stderr.getvalue().startswith("interrupted: the statement running was undone")
    assert "A" not in s.variables and "B" not in s.variables
    assert len(s.graph.nodes) == nodes + 2          # sin(f) undone; f + 1 and its 1 made
    reference = Session(stdout=io.StringIO())
    reference.execute("f := x*x; g := f + 1; outcode(x) g;")
    assert s.stdout.getvalue() == reference.stdout.getvalue()
