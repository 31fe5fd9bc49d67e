"""Straight-line code from a graph: one emitter, pluggable output formats (seed 002, §3.4).

What to compute, in which order, and under which names is decided once, here; a `Format`
(see `formats.py`) only spells the result in one language.

For the ADDS and FORTRAN text (``rewrite=True``), the outputs are first **rewritten** by the
pass of `wengert.graph.passes` (products reassociated, linear combinations collected, dot
products transposed), which sees the whole graph at once, as the construction-time rules
cannot; nodes it leaves alone keep their numbers.  Those rewrites are exact for real
numbers, not for floats (``(x + 2**52) - 2**52`` becomes ``x``), so the code that
`wg.compile` runs (Python, C) is emitted without them: it rounds as the function it was
traced from.  Then the schedule follows ADDS's output part:

1. **mark down** from the outputs (Algorithm 2): only what they need is emitted;
2. **mark up** from the named inputs (Algorithm 3) splits that into the part that depends
   on the inputs and the part that depends on parameters alone;
3. the **parameter part is emitted first** (hoisted: a caller evaluating the code for many
   inputs can keep it), then the input part, each in creation order;
4. a node **used once**, by a node of its own part, gets no statement: its expression is
   **inlined** into its user.  A node used more than once, or used across the parts, is
   assigned to a temporary named after the node (``V0003`` for node 3).

Rendering is one loop over the nodes in creation order, each node's text built from its
arguments' texts: there is no recursion over the graph's depth.  An inlined expression that
would grow past the format's `max_expression` characters is given a temporary instead, so
no statement grows without bound (Fortran 77 allows 19 continuation lines), and so is one
that the format's text of its user writes more than once (`Format.repeated_arguments`:
FORTRAN's cbrt), which would be computed that often.  (A call with very many arguments,
each a name, cannot be cut: it is the one statement that may grow past the bound.)

Temporaries are named ``<prefix><index>`` with a prefix that no user name (input, output or
any name passed as ``reserved``) can be confused with: ``V`` unless a user name looks like
``V0003``, then ``W``, and so on.  A user name the format reserves (`Format.reserved`:
FORTRAN's intrinsics) is written with a digit appended, and a comment says so; so is a
declared operator named like a function of the language (`Format.reserved_functions`: a
call of ABS reaches FORTRAN's intrinsic), like a variable, or like another operator.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from ..graph.passes import optimize
from ..primitives import scalar as P
from ..primitives.registry import CONST, INPUT

# Precedence of rendered expressions: what needs parentheses where.
ADD, MUL, POW, ATOM = 1, 2, 3, 4
NEG = ADD                     # prefix minus binds like + and - (Fortran, Python, C agree)
_INFIX = {P.add: ADD, P.sub: ADD, P.mul: MUL, P.div: MUL}


class EmitError(ValueError):
    """The graph cannot be written in the format (e.g. a constant inf or nan)."""


@dataclass(frozen=True)
class Symbol:
    """A user's name for a scalar in emitted code: a variable and its 1-based index
    (empty for a scalar), e.g. ``Symbol("G", (2,))`` is ``G[2]`` / ``G(2)``.

    Example:
        >>> Symbol("G", (2,)).base, Symbol("F").index
        ('G', ())
    """
    name: str
    index: tuple = ()

    @property
    def base(self) -> str:
        return self.name


@dataclass
class Statement:
    """One emitted assignment: `target` (a temporary's name or a user's Symbol), the
    expression text, whether the target is a new temporary, and the node whose value it
    is (a typed language declares a temporary, or stores a value, by its dtype)."""
    target: object
    expr: str
    temporary: bool
    node: object = None


@dataclass
class Code:
    """What the emitter decided: the statements in order, the names of the temporaries,
    and the nodes of each part.  ``lines`` is the text in the chosen format.  The first
    ``hoisted`` statements compute the parameter part alone (a loop writes them before
    it: see `python.loop_source`)."""
    statements: list
    temporaries: list
    parameter_part: list
    input_part: list
    lines: list
    hoisted: int = 0

    def __str__(self):
        return "\n".join(self.lines)


def _prefix_for(reserved) -> str:
    """The first of V, W, T, U, ... (then VV, ...) that no reserved name starts followed
    by digits only."""
    names = {str(n).upper() for n in reserved}
    for length in range(1, 4):
        for letter in "VWTUZ":
            prefix = letter * length
            pattern = re.compile(re.escape(prefix) + r"[0-9]+$")
            if not any(pattern.match(n) for n in names):
                return prefix
    raise EmitError("no free prefix for temporaries")


def _user_functions(fmt, ops) -> dict:
    """{primitive: name} of the primitives among `ops` that are not wengert's own (declared
    operators, custom primitives), in order of first appearance, if the format writes
    them as calls of their names."""
    if not fmt.calls_by_name:
        return {}
    out = {}
    for op in ops:
        if not op.builtin and op not in out:
            out[op] = fmt.function(op.name)
    return out


def emit(graph, inputs, outputs, fmt, names=None, reserved=(), rewrite=True) -> Code:
    """Straight-line code computing `outputs` from `inputs` (see the module doc).

    Args:
        graph: the Graph.
        inputs: the nodes the code is a function of (mark up starts there); every other
            input node of the graph it reads is a parameter.
        outputs: ``(Symbol, node)`` pairs: what to assign, in this order.
        fmt: a `Format` instance (`AddsFormat()`, `FortranFormat()`).
        names: ``{node index: Symbol}`` for the input nodes (default: the node's name).
        reserved: further user names that temporaries must not look like.
        rewrite: run the rewriting pass first (operation counts as ADDS's; results
            exact for real numbers, not bit for bit the traced function's).

    Example (seed 002's Example 1):
        >>> import wengert as wg
        >>> from wengert.codegen.formats import AddsFormat
        >>> g = wg.Graph()
        >>> a, x = g.input(wg.ShapeDtype(), "A"), g.input(wg.ShapeDtype(), "X")
        >>> f = (a + 1.0) * wg.math.exp(x) + (a - 1.0) / (wg.math.exp(x) + 1.0)
        >>> print(emit(g, [x], [(Symbol("F"), f)], AddsFormat()))
        V0003 := A+1;
        V0006 := A-1;
        V0004 := EXP(X);
        F := V0003*V0004+V0006/(1+V0004);
    """
    names = dict(names or {})
    # a name given twice (`outcode(x) f, f;`, or `a, a[1]`) is assigned once: the
    # second assignment repeated the first, as F := F (the last one given wins)
    outputs = list(dict(outputs).items())
    out_nodes = [n for _, n in outputs]
    if rewrite:
        out_nodes = optimize(graph, out_nodes)
    outputs = [(sym, node) for (sym, _), node in zip(outputs, out_nodes)]
    live = graph.mark_down(out_nodes) if out_nodes else set()
    top = max(live, default=-1)
    nodes = graph.nodes
    order = sorted(live)
    # (every value carries dependence here, comparisons too: a bool computed from an
    # input is no parameter)
    up = graph.mark_up(list(inputs), top, floats_only=False) & live if inputs else set()
    params = [i for i in order if i not in up]
    ins = [i for i in order if i in up]

    # Uses of each node: by live nodes and by outputs.  `user` keeps the (last) user node.
    uses, user = {}, {}
    for i in order:
        for a in nodes[i].args:
            uses[a.index] = uses.get(a.index, 0) + 1
            user[a.index] = i
    for node in out_nodes:
        uses[node.index] = uses.get(node.index, 0) + 1
        user[node.index] = None

    def user_symbol(node) -> Symbol:
        return names.get(node.index) or Symbol(node.name or f"IN{node.index}")

    # A user name that the format's own code uses (FORTRAN's ABS in cbrt) would shadow it:
    # it is renamed (ABS1, the first free one), and a comment says so.  So is a user's
    # function (a declared operator) named like one of the language's own (a call of ABS
    # reaches FORTRAN's intrinsic), like a variable of the code, or like another function.
    user_inputs = {user_symbol(nodes[i]).base for i in order if nodes[i].op is INPUT}
    used = {s.base for s, _ in outputs} | user_inputs
    functions = _user_functions(fmt, [nodes[i].op for i in order])
    taken = ({str(n).upper() for n in reserved} | {b.upper() for b in used} | fmt.reserved
             | fmt.reserved_functions | {f.upper() for f in functions.values()})
    renamed, notes = {}, []

    def fresh(base) -> str:
        """base with the first number that makes it a free name, cut to the language's
        longest (FORTRAN's 63 characters: ADDS takes names of any length)."""
        for k in itertools.count(1):
            name = f"{base[:fmt.max_name - len(str(k))]}{k}"
            if name.upper() not in taken:
                taken.add(name.upper())
                return name

    long = f"LONGER THAN {fmt.max_name} CHARACTERS"
    for base in sorted(b for b in used if b.upper() in fmt.reserved or len(b) > fmt.max_name):
        renamed[base] = fresh(base)
        why = f"{base} IS RESERVED" if base.upper() in fmt.reserved else long
        notes.append(f"{base} IS WRITTEN {renamed[base]} ({why})")
    variables = {renamed.get(b, b).upper() for b in used}
    seen = set()
    for op, name in functions.items():
        key = name.upper()
        why = (f"{name} IS RESERVED" if key in fmt.reserved_functions else
               f"{name} IS ALSO A VARIABLE" if key in variables else
               f"{name} NAMES ANOTHER OPERATOR TOO" if key in seen else
               long if len(name) > fmt.max_name else None)
        seen.add(key)
        if why is not None:
            functions[op] = fresh(name)
            notes.append(f"OPERATOR {name} IS WRITTEN {functions[op]} ({why})")

    def rename(sym) -> Symbol:
        return Symbol(renamed[sym.base], sym.index) if sym.base in renamed else sym

    def symbol_of(node) -> Symbol:
        return rename(user_symbol(node))

    outputs = [(rename(sym), node) for sym, node in outputs]
    input_bases = {renamed.get(b, b) for b in user_inputs}
    prefix = _prefix_for(set(reserved) | input_bases | {s.base for s, _ in outputs}
                         | set(functions.values()))
    width = max(4, len(str(top)))

    def temp(i) -> str:
        return f"{prefix}{i:0{width}d}"

    # Outputs by node; those named like an input are assigned last, so that no statement
    # overwrites a variable that a later statement still reads.
    outs_of, last = {}, []
    for sym, node in outputs:
        if sym.base in input_bases:
            last.append((sym, node))
        else:
            outs_of.setdefault(node.index, []).append(sym)
    late_nodes = {node.index for _, node in last}

    text = {}                     # node index -> (text, precedence)
    inlined = set()               # nodes whose text is an expression not yet assigned
    statements, temporaries = [], []

    def assign(target, expr, temporary, node):
        statements.append(Statement(target, expr, temporary, node))

    def spill(i):
        """Give node i (inlined so far) a temporary, assigned now."""
        name = temp(i)
        assign(name, text[i][0], True, nodes[i])
        temporaries.append(name)
        text[i] = (name, ATOM)
        inlined.discard(i)

    def leaf_text(node):
        if node.op is CONST:
            value = node.value
            s = fmt.number(value)
            return s, (NEG if s.startswith("-") else ATOM)
        return fmt.symbol(symbol_of(node)), ATOM

    def operand(arg, prec, right=False):
        s, p = arg
        if p < prec or (right and p == prec) or (prec == POW and p == POW):
            return f"({s})"
        return s

    def render(node):
        """The text of node from its arguments' texts, and its precedence."""
        op, args = node.op, []
        for a in node.args:
            s, p = text[a.index]
            cast = fmt.cast(node, a)     # (for this use only: see Format.cast)
            args.append((f"{cast}({s})", ATOM) if cast is not None else (s, p))
        spelled = fmt.method(node, [s for s, _ in args])
        if spelled is not None:
            return spelled, ATOM
        if op in _INFIX:
            prec = _INFIX[op]
            return f"{operand(args[0], prec)}{op.infix}{operand(args[1], prec, True)}", prec
        if op is P.neg:
            return f"-{operand(args[0], MUL, fmt.minus_binds_tightly)}", NEG
        if op is P.powi and fmt.power:
            return f"{operand(args[0], POW)}{fmt.power}{fmt.exponent(node.params['n'])}", POW
        if op is P.pow and fmt.power and fmt.pow_infix:
            return f"{operand(args[0], POW)}{fmt.power}{operand(args[1], POW, True)}", POW
        call_args = [s for s, _ in args]
        if op is P.powi:
            call_args.append(str(node.params["n"]))
        if op in functions:
            fmt.refuse_lost_parameters(op, node.params)
            return fmt.call(functions[op], call_args, node.params), ATOM
        return fmt.apply(op, call_args, node.params), ATOM

    def bound(node):
        """Give a temporary to each inlined argument that the format's text of the node
        writes more than once (FORTRAN's cbrt: 8 times): it would be computed that often,
        which `count` does not count, and its text written that often.  Then spill the
        longest inlined arguments while the node's text would be too long (an argument
        written twice counting twice)."""
        times = fmt.repeated_arguments(node)
        for k in times:
            if node.args[k].index in inlined:
                spill(node.args[k].index)
        weight = {}                 # argument -> times its text is written
        for k, a in enumerate(node.args):
            weight[a.index] = weight.get(a.index, 0) + times.get(k, 1)
        total = sum(len(text[a][0]) * n for a, n in weight.items())
        if total <= fmt.max_expression:
            return
        # (longest first, the first of equals first; spilling one leaves the others'
        # lengths as they are, so one sort orders them all: a gather's table may have
        # thousands of inlined elements)
        for a in sorted((a for a in weight if a in inlined), key=lambda a: -len(text[a][0])):
            if total <= fmt.max_expression:
                return
            before = len(text[a][0])
            spill(a)
            total -= (before - len(text[a][0])) * weight[a]

    hoisted = 0
    for part in (params, ins):
        hoisted = len(statements)  # (the parameter part's, once the input part begins)
        tail = []                  # outputs that are leaves: assigned at the end of the part
        same_part = set(part)
        for i in part:
            node = nodes[i]
            if not node.args:      # constants and inputs are written where they are used
                text[i] = leaf_text(node)
                tail.extend((sym, text[i][0], node) for sym in outs_of.get(i, ()))
                continue
            bound(node)
            text[i] = render(node)
            # (what that text reads that is no node's value, a C table of a gather's
            # elements, is assigned first)
            for target, expr in fmt.declarations():
                assign(target, expr, True, node)
            syms = outs_of.get(i, [])
            single = uses.get(i, 0) == 1
            if syms and i not in late_nodes:
                # F := expression; later uses read F, other outputs of the node copy it
                assign(syms[0], text[i][0], False, node)
                text[i] = (fmt.symbol(syms[0]), ATOM)
                for sym in syms[1:]:
                    assign(sym, text[i][0], False, node)
            elif single and not syms and user.get(i) in same_part and i not in late_nodes:
                inlined.add(i)                                # used once, in its own part
            else:
                spill(i)
                for sym in syms:
                    assign(sym, text[i][0], False, node)
        for sym, s, node in tail:
            assign(sym, s, False, node)
    # A late output may overwrite an input that a later one still reads, as in a swap
    # (X := Y; Y := X): such an input is copied to a temporary before the first of them.
    targets = [fmt.symbol(sym) for sym, _ in last]
    for k, (sym, node) in enumerate(last):
        if node.op is INPUT and text[node.index][0] in targets[:k]:
            spill(node.index)
    for sym, node in last:
        if text[node.index][0] != fmt.symbol(sym):        # (X := X would change nothing)
            assign(sym, text[node.index][0], False, node)

    lines = []
    for note in notes:
        lines.extend(fmt.comment(note))
    for st in statements:
        target = st.target if isinstance(st.target, str) else fmt.symbol(st.target)
        lines.extend(fmt.statement(target, st.expr))
    return Code(statements, temporaries, [nodes[i] for i in params],
                [nodes[i] for i in ins], lines, hoisted)
