"""The `wengert` command.

    wengert demo             the worked example of seed 000, in forward and reverse mode
    wengert run FILE.adds    run a program in the ADDS language (seed 002; docs/adds.md)
    wengert repl             an interactive ADDS session (prompt `adds> `)
    wengert count FILE.adds  operation counts of its outcode/count statements (Table 2)
    wengert draw FILE.adds   a picture of its computational graph (Graphviz)
    wengert                  the session on a terminal; a program read from piped input
"""
from __future__ import annotations

import argparse
import math
import sys


def demo(out=sys.stdout) -> int:
    """Print seed 000's example: f(x1, x2) = x1*x2 + sin(x1) at (2, 3), its graph, its
    partial derivatives by forward and reverse mode against the closed forms, and the
    graph of its gradient."""
    import wengert as wg
    import wengert.math as wm

    def f(x1, x2):
        return x1 * x2 + wm.sin(x1)

    x1, x2 = 2.0, 3.0
    p = lambda *a: print(*a, file=out)
    p("f(x1, x2) = x1*x2 + sin(x1)   at (x1, x2) = (2, 3)   [seed 000]")
    p()
    p("The computational graph (Wengert list):")
    p(wg.trace(f, x1, x2))
    p()
    value, d1 = wg.jvp(f, (x1, x2), (1.0, 0.0))
    _, d2 = wg.jvp(f, (x1, x2), (0.0, 1.0))
    p(f"f                        = {value!r:<22} closed form x1*x2 + sin x1 = "
      f"{x1 * x2 + math.sin(x1)!r}")
    p(f"forward mode  df/dx1     = {d1!r:<22} closed form x2 + cos x1   = "
      f"{x2 + math.cos(x1)!r}")
    p(f"forward mode  df/dx2     = {d2!r:<22} closed form x1            = {x1!r}")
    g1, g2 = wg.grad(f, argnums=(0, 1))(x1, x2)
    p(f"reverse mode  df/dx1     = {g1!r:<22}")
    p(f"reverse mode  df/dx2     = {g2!r:<22}")
    h = wg.hessian(f, argnums=(0, 1))(x1, x2)
    p(f"Hessian                  = {h!r}   closed form ((-sin x1, 1), (1, 0))")
    p()
    p("The graph of the gradient (reverse mode, itself differentiable):")
    p(wg.trace(wg.grad(f, argnums=(0, 1)), x1, x2))
    return 0


ADDS_HELP = """\
The ADDS language (seed 002; the guide is docs/adds.md).  Statements end with ';',
'%' starts a comment, names are case-insensitive and printed upper-cased:

  a := e;  a[i,j] := e;         assign (declares a with e's type); 1-based indices
  array a[2,3], b[4];           declare arrays; an unknown scalar name is an input
  operator f[2,5](4);           declare an opaque operator of 4 scalar operands
  + - * / **  vp(u,w) tp(a) vec(e1,...,en)  sqrt cbrt exp log log10 sin cos tan
  cotan asin acos atan atan2 sinh cosh tanh
  dfu(f,x) dfd(f,x)             Jacobian by forward / reverse mode
  dfuv(f,x,y) dfdv(f,x,y)       directional derivative / adjoint (vector-Jacobian)
  err(f,x,eps)                  Iri's rounding-error estimate of f
  outcode(x1,...) f1,...;       emit straight-line code for f1,... with inputs x1,...
  count(x1,...) f1,...;         its operation counts, as a comment
  on fort; off fort;            FORTRAN 77 fixed form / the input format
  on echo; off echo;            echo statements to standard error
  in "file"; out "file"; shut "file"; write "text"; comment text; clear; free;

Examples: wengert run examples/powell.adds
          echo 'f := x*sin(x); g := dfd(f, x); outcode(x) f, g;' | wengert"""


def _run_adds(path=None) -> int:
    """Run an ADDS program from a file (or standard input); 1 after the first mistake."""
    from .adds import AddsError, Session
    from .adds.interpreter import source_text
    session = Session()
    try:
        if path is None:        # (bytes, decoded as a file's are)
            session.execute(source_text(sys.stdin.buffer.read()), "<stdin>")
        else:
            session.run_file(path)
    except AddsError as e:
        print(e, file=sys.stderr)
        return 1
    return 0


def _quiet_session(path, optimize):
    """The program run quietly, with interning and simplification on (what wengert emits)
    or off (plain AD), and without writing its `out` files (a second run, of plain AD,
    would replace what the program wrote there).  None after reporting a mistake.  The
    plain run emits no code: it only keeps each outcode/count statement's graph (the
    code, never read, could hold what the emitter refuses, a constant inf, say, that
    simplification removes in `run`)."""
    import io
    from .adds import AddsError, Session
    session = Session(stdout=io.StringIO(), stderr=io.StringIO(), optimize=optimize,
                      keep_requests=True, write_files=False, emit=optimize)
    try:
        session.run_file(path)
    except AddsError as e:
        print(e, file=sys.stderr)
        return None
    return session


def count_program(path, out=None, jacobian=False) -> int:
    """Print seed 002's Table 2 for each outcode/count statement of an ADDS program: a =
    the function alone, b = function and derivatives by plain AD (no interning, no
    simplification), c = what wengert emits.  With `jacobian`, also the operations of the
    Jacobian of each statement's outputs with respect to its inputs by forward mode,
    reverse mode and vertex elimination (seed 003), side by side."""
    from .codegen.count import count_ops, table
    out = out or sys.stdout
    emitted = _quiet_session(path, True)
    plain = None if emitted is None else _quiet_session(path, False)
    if plain is None:
        return 1
    if not emitted.requests:
        print(f"{path}: no outcode or count statement, so nothing to count", file=out)
        return 0
    rows = []
    for (label, graph, outs, derived, _, function), (_, pgraph, pouts, *_) in zip(
            emitted.requests, plain.requests):
        nodes, pnodes = [n for _, n in outs], [n for _, n in pouts]
        rows.append((label, count_ops(graph, function, derived), count_ops(pgraph, pnodes),
                     count_ops(graph, nodes)))
    print("a: the function alone; b: function and derivatives by plain AD (no interning or "
          "simplification); c: what wengert emits", file=out)
    for line in table(rows):
        print(line, file=out)
    if jacobian:
        from .jacobians import graph_jacobian_costs, format_costs
        for label, graph, outs, _, xs, _ in emitted.requests:
            print(f"\nJacobian of {label}: operations by mode", file=out)
            if not xs:
                print("  (no inputs named: nothing to differentiate)", file=out)
                continue
            costs = graph_jacobian_costs(graph, xs, [n for _, n in outs])
            for line in format_costs(costs).splitlines():
                print("  " + line, file=out)
    return 0


def draw_program(path, output=None, out=None) -> int:
    """Draw the graph of an ADDS program's last outcode/count statement (or of all its
    variables), derivative nodes beside the function's."""
    import os
    from .codegen import draw
    out = out or sys.stdout
    if output is not None and not output.strip():   # (-o '' silently meant FILE.svg)
        print("wengert draw: -o needs a file name (FILE.svg, FILE.png, FILE.pdf or "
              "FILE.dot)", file=sys.stderr)
        return 1
    session = _quiet_session(path, True)    # (what wengert emits is what is drawn)
    if session is None:
        return 1
    if session.requests:
        _, graph, outs, derived, *_ = session.requests[-1]
    else:
        graph, derived = session.graph, frozenset(session.derived)
        outs = [(name, n) for name, v in session.variables.items() for n in v.reshape(-1)]
    names = [s if isinstance(s, str) else session.format.symbol(s) for s, _ in outs]
    dot = draw.to_dot([(graph, [n for _, n in outs], None, derived, names)])
    output = output or os.path.splitext(path)[0] + ".svg"
    try:
        draw.Drawing(dot).save(output)
    except draw.GraphvizNotFound as e:
        print(f"wengert draw: {e}", file=sys.stderr)
        return 1
    except draw.DrawError as e:             # dot refused or crashed: the text needs no dot
        ext = os.path.splitext(output)[1].lower()
        if ext not in (".svg", ".png", ".pdf", ""):
            # (most likely a format dot does not know: its message lists all ~50 it does)
            print(f"wengert draw: dot cannot write {output} (a {ext or 'file'} file); "
                  "-o takes FILE.svg, FILE.png, FILE.pdf or FILE.dot (the DOT text, which "
                  "needs no dot)", file=sys.stderr)
            return 1
        print(f"wengert draw: {str(e).rstrip('.')}; -o {os.path.splitext(output)[0]}.dot "
              "writes the graph as DOT text without running dot", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"wengert draw: cannot write {output}: {e.strerror}", file=sys.stderr)
        return 1
    print(f"wrote {output}", file=out)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="wengert",
        description="wengert: automatic differentiation on one computational graph.  "
                    "With no command: an interactive ADDS session on a terminal, or the "
                    "ADDS program read from piped standard input.",
        epilog=ADDS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("demo", help="print seed 000's example derivatives, both modes")
    run = sub.add_parser("run", help="run an ADDS program (see below)",
                         description="Run the ADDS program in FILE; stop at the first "
                                     "mistake with its position (exit status 1).")
    run.add_argument("file", metavar="FILE.adds", help="the program ('-': standard input)")
    sub.add_parser("repl", help="an interactive ADDS session (prompt 'adds> ')",
                   description="An interactive ADDS session: a statement may span lines "
                               "until its ';'; a mistake is reported and the session goes "
                               "on.  Line editing and history on a terminal.")
    count = sub.add_parser("count", help="operation counts of an ADDS program (Table 2)",
                           description="Run the ADDS program in FILE with and without "
                                       "interning and simplification, and print for each "
                                       "outcode/count statement seed 002's Table 2: a = the "
                                       "function alone, b = function and derivatives by "
                                       "plain AD, c = what wengert emits.")
    count.add_argument("file", metavar="FILE.adds")
    count.add_argument("--jacobian", action="store_true",
                       help="also the Jacobian of each statement's outputs with respect to "
                            "its inputs by forward mode, reverse mode and vertex elimination "
                            "(seed 003), side by side")
    draw = sub.add_parser("draw", help="draw the graph of an ADDS program (Graphviz)",
                          description="Draw the computational graph of FILE's last "
                                      "outcode/count statement (or of all its variables): "
                                      "operations as nodes, the flow as arrows, the nodes "
                                      "only derivatives need filled, beside the function.")
    draw.add_argument("file", metavar="FILE.adds")
    draw.add_argument("-o", "--output", metavar="OUT",
                      help="the picture: .svg (default FILE.svg), .png, .pdf or .dot")
    args = parser.parse_args(argv)
    if args.command == "count":
        return count_program(args.file, jacobian=args.jacobian)
    if args.command == "draw":
        return draw_program(args.file, args.output)
    if args.command == "demo":
        return demo()
    if args.command == "run":
        return _run_adds(None if args.file == "-" else args.file)
    if args.command == "repl" or (args.command is None and sys.stdin.isatty()):
        from .adds import Session
        from .adds.repl import repl
        return repl(Session())
    return _run_adds()


def entry() -> int:
    """Console entry point: `main`, quiet when the reader of a pipe goes away (`| head`),
    and a clean message (exit status 1) when standard output cannot be written (a full
    disk): Python would report it at exit as an ignored exception, with status 120.
    Ctrl-C ends a command with one line and status 130 (128 + SIGINT, as shells report
    a command a signal ended), not a traceback from wherever the program was."""
    status = None
    try:
        status = main()
        sys.stdout.flush()
    except KeyboardInterrupt:
        try:
            sys.stdout.flush()          # (what was written before stays written)
        except OSError:
            _drop_stdout()
        print("wengert: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        _drop_stdout()
        return 1
    except OSError as e:
        if e.filename is not None:      # (not standard output: main's to report)
            raise
        _drop_stdout()
        print(f"wengert: cannot write standard output: {e.strerror}", file=sys.stderr)
        return 1
    return status


def _drop_stdout():
    """Send what is left for standard output nowhere, so that exiting does not fail."""
    import os
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(entry())
