"""Helpers for the ADDS tests: run a program, evaluate its graph numerically, take
finite differences of its source function."""
import io

import numpy as np

from wengert.adds import Session


def run(program, session=None):
    """(session, output text) after running `program`."""
    out = io.StringIO()
    session = session or Session(stdout=out, stderr=io.StringIO())
    session.stdout = out
    session.execute(program)
    return session, out.getvalue()


def code(session, statement, fortran=False):
    """The text one outcode/count statement prints, in the chosen format."""
    out = io.StringIO()
    session.stdout, session.fort = out, fortran
    session.execute(statement)
    return out.getvalue()


def values(session, name, env):
    """The numbers of variable `name` when the inputs take the values in `env`
    ((NAME, index) -> float), by evaluating the graph itself."""
    var = session.variables[name.upper()]
    nodes = list(var.reshape(-1))
    vals = {}
    for node in session.graph.live_nodes(nodes):
        if node.is_const:
            vals[node.index] = node.value
        elif not node.args:
            sym = session.symbols[node.index]
            vals[node.index] = env[(sym.name, sym.index)]
        else:
            vals[node.index] = node.op.evaluate([vals[a.index] for a in node.args],
                                                node.params)
    return np.array([vals[n.index] for n in nodes]).reshape(var.shape)


def random_env(session, rng, low=-1.0, high=1.0, ranges=None):
    """A random value for every input of the session's graph."""
    env = {}
    for i, sym in session.symbols.items():
        lo, hi = (ranges or {}).get(sym.name, (low, high))
        env[(sym.name, sym.index)] = float(rng.uniform(lo, hi))
    return env


def input_keys(session, name):
    """The (NAME, index) keys of the inputs a variable holds, in order."""
    by_node = {i: (s.name, s.index) for i, s in session.symbols.items()}
    return [by_node[n.index] for n in session.variables[name.upper()].reshape(-1)]


def fd_jacobian(session, f, x, env, h=1e-6):
    """∂f/∂x by central differences of the graph of f; shape f ++ x."""
    keys = input_keys(session, x)
    cols = []
    for k in keys:
        up, dn = dict(env), dict(env)
        up[k] += h
        dn[k] -= h
        cols.append((values(session, f, up) - values(session, f, dn)) / (2 * h))
    fshape = session.variables[f.upper()].shape
    return np.stack(cols, axis=-1).reshape(fshape + session.variables[x.upper()].shape)


def outputs(env, session, name):
    """The values an evaluation of emitted code assigned to variable `name`."""
    name = name.upper()
    shape = session.variables[name].shape
    return np.array([env[(name, tuple(j + 1 for j in i))] for i in np.ndindex(*shape)]
                    ).reshape(shape)


# --- the parser against lark's parse of the whole text (how it worked before) ------------
def _lark_reference():
    import lark

    from wengert.adds import parser
    return lark.Lark(parser.GRAMMAR, parser="lalr", propagate_positions=True,
                     maybe_placeholders=True)


def lark_shapes(text, filename="f.adds"):
    """What lark makes of the whole text: the statements as nested tuples (rule,
    children, start, end), tokens as (type, value, start) with names upper-cased; or
    ("error", message) with the message the parser would give for lark's error."""
    import lark

    from wengert.adds import parser
    if not hasattr(lark_shapes, "lark"):
        lark_shapes.lark = _lark_reference()
    try:
        tree = lark_shapes.lark.parse(text)
    except lark.exceptions.UnexpectedInput as e:
        return ("error", str(parser._syntax_error(e, text, 0, filename)))

    def shape(t):
        if isinstance(t, lark.Tree):
            return (str(t.data), [shape(c) for c in t.children], t.meta.start_pos,
                    t.meta.end_pos)
        if isinstance(t, lark.Token):
            return (t.type, t.value.upper() if t.type == "NAME" else t.value, t.start_pos)
        return t
    return [shape(s) for s in tree.children]


def our_shapes(text, filename="f.adds"):
    """The same from wengert's parser (statement ends only: it keeps no other)."""
    from wengert.adds import AddsError, parser
    try:
        statements = parser.parse(text, filename)
    except AddsError as e:
        return ("error", str(e))

    def shape(t, end=None):
        if isinstance(t, parser.Tree):
            return (t.data, [shape(c) for c in t.children], t.pos, end)
        if isinstance(t, parser.Token):
            return (t.type, str(t), t.pos)
        return t
    return [shape(s, s.end) for s in statements]


def without_inner_ends(shapes):
    """Lark's shapes with the end offsets of all but statements left out."""
    def strip(t):
        if isinstance(t, tuple) and len(t) == 4 and isinstance(t[1], list):
            return (t[0], [strip(c) for c in t[1]], t[2], None)
        return t
    if isinstance(shapes, tuple):
        return shapes
    return [(s[0], [strip(c) for c in s[1]], s[2], s[3]) for s in shapes]


def random_program(rng, statements=12):
    """A random ADDS program of every kind of statement (not necessarily meaningful:
    the parser's job only), with random blanks, remarks and letter case."""
    names = ["x", "y1", "A_b", "in", "count", "comment", "commentary", "input", "vp", "Dh"]
    numbers = ["1", "2.5", ".5", "3.", "1e3", "2.5d0", "1.E-2", "07"]

    def blank():
        return str(rng.choice(["", "", " ", "  ", "\n", "\t", " % a remark ; \"\n", "\r\n"]))

    def case(word):
        return "".join(c.upper() if rng.random() < 0.3 else c for c in word)

    def expr(depth=0):
        r = rng.random()
        if depth > 4 or r < 0.3:
            return str(rng.choice(names + numbers))
        if r < 0.4:
            return f"{rng.choice(names)}[{expr(depth + 1)}]"
        if r < 0.5:
            args = ",".join(expr(depth + 1) for _ in range(int(rng.integers(0, 3))))
            index = f"[{expr(depth + 1)}]" if rng.random() < 0.2 else ""
            return f"{rng.choice(names + ['sin', 'vec'])}{index}({args})"
        if r < 0.55:
            return f"({expr(depth + 1)})[1{blank()},2]"
        if r < 0.65:
            return f"{rng.choice(['-', '+'])}{blank()}{expr(depth + 1)}"
        if r < 0.72:
            return f"({blank()}{expr(depth + 1)}{blank()})"
        op = rng.choice(["+", "-", "*", "/", "**"])
        return f"{expr(depth + 1)}{blank()}{op}{blank()}{expr(depth + 1)}"

    kinds = ["assign"] * 8 + ["array", "operator", "outcode", "count", "clear", "free", "in",
                              "write", "on", "comment", "empty"]
    out = []
    for _ in range(statements):
        kind = rng.choice(kinds)
        if kind == "assign":
            index = f"[{expr(3)}]" if rng.random() < 0.2 else ""
            target = rng.choice(["x", "y1", "A_b", "input", "commentary", "Counts", "Dh"])
            s = f"{target}{index}{blank()}:={blank()}{expr()}"
        elif kind in ("array", "operator"):
            decl = [f"{rng.choice(names)}[2,{int(rng.integers(1, 9))}]" + (
                "(3)" if kind == "operator" else "") for _ in range(int(rng.integers(1, 3)))]
            s = f"{case(kind)} {', '.join(decl)}"
        elif kind in ("outcode", "count"):
            s = f"{case(kind)}({rng.choice(names)}) {rng.choice(names)},{rng.choice(names)}[2]"
        elif kind in ("clear", "free"):
            s = case(kind)
        elif kind in ("in", "write"):
            s = f'{case(kind)} "a;b%c"'
        elif kind == "on":
            s = f"{case('on')} {rng.choice(['echo', 'FORT'])}"
        elif kind == "comment":
            s = f'{case("comment")} say "hi" 50% {rng.choice(names)}'
        else:
            s = ""
        after = " " if kind == "comment" else blank()       # (a comment holds a remark)
        out.append(blank() + s + after + ";")
    return "".join(out) + blank()
