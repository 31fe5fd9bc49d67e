"""The ADDS interpreter: a session that runs statements on one computational graph.

A `Session` holds the graph, the variables (name -> value, an object array of nodes), the
declared operators, and the I/O state (``out`` files, ``on echo``, ``on fort``).  Every
statement runs atomically: if it fails, the graph, the variables and the operators are as
they were before it, so an interactive session can go on.  (The dictionaries journal
what a statement changes, so that it can be undone: copying them before each statement
made a long program's run time grow with the square of its length.)

Names not yet defined that are read as scalars become input nodes (the paper's ``in``
nodes); arrays are declared by ``array`` or by a first assignment.
"""
from __future__ import annotations

import io
import os
import sys

import numpy as np

from ..codegen.count import count_ops
from ..codegen.emit import EmitError, Symbol, emit
from ..codegen.formats import ADDS_FUNCTIONS, AddsFormat, FortranFormat
from ..errors import GraphTooLarge
from ..graph.graph import Graph, ShapeDtype
from ..primitives import scalar as P
from . import derivatives as D
from . import types as T
from .errors import AddsError
from .parser import Tree, build, position, statements

#: The sixteen scalar functions of §2.4 ⑧, by ADDS name: (primitive, number of operands).
FUNCTIONS = {f.name.upper(): (f, 2 if f is P.atan2 else 1) for f in ADDS_FUNCTIONS}

#: The other built-in operators: name -> number of operands (None: one or more).
SPECIAL = {"VP": 2, "TP": 1, "VEC": None, "DFU": 2, "DFD": 2, "DFUV": 3, "DFDV": 3, "ERR": 3}

_COUNT_NAMES = (("add", "ADDITIONS/SUBTRACTIONS"), ("mul", "MULTIPLICATIONS"),
                ("div", "DIVISIONS"), ("call", "FUNCTION CALLS"), ("pow", "POWERS"),
                ("neg", "NEGATIONS"), ("cmp", "COMPARISONS"))


class Session:
    """An ADDS session: run programs with `execute` (text) or `run_file` (a file).

    Output (``outcode``, ``count``, ``write``) goes to `stdout` unless an ``out`` statement
    redirects it; ``on echo`` echoes statements to `stderr`.  With ``keep_requests=True``
    the session keeps each ``outcode``/``count`` statement's graph and outputs in
    `requests` (what ``wengert count`` and ``wengert draw`` read); with ``emit=False`` as
    well, those statements only keep their request and write nothing.

    Example (seed 002's Example 1):
        >>> s = Session()
        >>> s.execute("f := (a+1)*exp(x)+(a-1)/(exp(x)+1); outcode(x)f;")
        V0002 := A+1;
        V0006 := A-1;
        V0004 := EXP(X);
        F := V0002*V0004+V0006/(1+V0004);
    """

    def __init__(self, stdout=None, stderr=None, optimize=True, keep_requests=False,
                 write_files=True, emit=True):
        self.optimize = optimize        # False: plain AD, for column b of `wengert count`
        # False: `out "file"` writes to memory (`wengert count` and `draw` run a program
        # only to look at its graphs, and must not replace the files it writes)
        self.write_files = write_files
        # (label, graph, outputs, derived, inputs, function) per outcode/count statement, for
        # `wengert count` and `draw`; other sessions keep none (they would hold every graph
        # of a long interactive session alive)
        self.requests = [] if keep_requests else None
        # False: outcode and count write nothing (the plain AD run of `wengert count`, whose
        # text nobody reads: what the emitter would refuse there, a constant inf, say, is
        # often what simplification removes in `run`, which must not make count fail)
        self.emit = emit
        self._done = {}                 # id(subexpression) -> its value, see `value`
        self.stdout = stdout if stdout is not None else sys.stdout
        self.stderr = stderr if stderr is not None else sys.stderr
        self.out = None                 # None: self.stdout (looked up when written to)
        self.files = {}                 # name of an `out` file -> open file
        self.echo = False
        self.fort = False
        self.directional = False        # set while dfuv/dfdv run (see derivatives.py)
        self._target = None             # the name an assignment running assigns to
        self._reading = []              # files being read by `in`, outermost first
        self._undo = []                 # how to undo the running statement's changes
        self.clear()

    def clear(self) -> None:
        """Empty the graph and forget variables and operators (the ``clear`` statement)."""
        self.graph = self._new_graph()
        # The nodes derivative operators (dfd, err, ...) made and the user's own statements
        # do not need: index -> the indices of the function's nodes they are derivatives of
        # (Table 2's a counts that function).  Journaled: a statement that reaches such a
        # node takes it out (see `_own`), and undoing the statement puts it back.
        self.derived = _Journaled(self._undo)
        self._clean = bytearray()       # node index -> 1: no derived node in its cone
        self.variables = _Journaled(self._undo)   # name -> object array of nodes
        self.operators = _Journaled(self._undo)   # name -> derivatives.Operator
        self.symbols = _Journaled(self._undo)     # input node index -> Symbol (its name)

    def _new_graph(self) -> Graph:
        return Graph(optimize=self.optimize, straight_line=True, max_nodes=T.MAX_NODES)

    # --- running text -----------------------------------------------------------------------
    def execute(self, text: str, filename: str = "<input>", directory: str = None,
                on_error=None) -> None:
        """Parse `text` and run its statements in order.  The first failing statement
        raises `AddsError` (with its position) after being undone; those before it stay
        done, and a syntax error anywhere means that none ran.  With `on_error` (the
        REPL), a failing statement's error is passed to it instead, a syntax error's too,
        and the statements around it still run.  `directory` is where ``in`` looks for
        relative file names (default: the current directory)."""
        self._run(_Source(statements(text, filename, errors=on_error is not None), text,
                          filename, directory), on_error)

    def run_file(self, path: str) -> None:
        """Run the program in the file `path` (``in`` statements in it are relative to its
        directory).

        Example:
            >>> import tempfile, pathlib
            >>> with tempfile.TemporaryDirectory() as d:
            ...     p = pathlib.Path(d, "f.adds")
            ...     _ = p.write_text("y := x*x; count(x) y;")
            ...     Session().run_file(str(p))
            % COUNT: ADDITIONS/SUBTRACTIONS 0, MULTIPLICATIONS 1, DIVISIONS 0, FUNCTION CALLS 0, POWERS 0
        """
        self._run(_open(path), None)

    def _run(self, source, on_error) -> None:
        """Run the statements of `source` and of the files their ``in`` statements read.

        The files being read are a stack, not a recursion, so ``in`` may nest as deep as
        files can be written.  An ``in`` statement stays running until its file's last
        statement is done: if one of them fails, it is undone, and so is every ``in``
        statement around it (innermost first), as a failing statement's effects are."""
        stack = []

        def push(src):
            stack.append(src)
            if src.path is not None:
                self._reading.append(src.path)

        def pop():
            src = stack.pop()
            if src.path is not None:
                self._reading.pop()
            return src

        push(source)
        try:
            with np.errstate(all="ignore"):
                while stack:
                    src = stack[-1]
                    if src.next == len(src.pending):    # its `in` statement is done
                        pop()
                        if len(stack) == 1:
                            self._undo.clear()
                        continue
                    item, src.pending[src.next] = src.pending[src.next], None
                    src.next += 1                       # (its tree lives while it runs)
                    try:
                        inner = self._atomic(build(item), src)
                    except BaseException as e:
                        while len(stack) > 1:           # the `in` statements around it
                            self._rollback(pop().started)
                        if on_error is None or not isinstance(e, AddsError):
                            raise
                        on_error(e)
                        continue
                    if inner is not None:
                        push(inner)
                    elif len(stack) == 1:
                        self._undo.clear()              # (nothing can be undone now)
        finally:
            while stack:
                pop()

    def _atomic(self, stmt, src):
        """Run one statement of `src`; if it fails, undo it and raise its located error.
        An ``in`` statement returns the `_Source` it opens (whose statements then run as
        part of it), with the means to undo it; any other returns None."""
        started = self._started()
        where = self._where = (src.filename, src.text)
        try:
            if self.echo:
                print(src.text[stmt.pos:stmt.end] + ";", file=self.stderr)
            inner = self._statement(stmt, src.directory)
        except BaseException as e:
            self._rollback(started)
            if isinstance(e, AddsError):
                raise _located(e, stmt, where)
            if isinstance(e, GraphTooLarge):    # (every element of every value is a node)
                raise _located(AddsError(f"the program is too large: its graph would exceed "
                                         f"{e.max_nodes} nodes"), stmt, where) from None
            if isinstance(e, Exception) and not isinstance(e, BrokenPipeError):
                raise _located(AddsError(f"internal error: {type(e).__name__}: {e}"), stmt,
                               where) from e
            raise
        if inner is not None:
            inner.started = started
        return inner

    def _started(self):
        """What `_rollback` needs to undo the statement about to run."""
        return (len(self._undo), self.graph, len(self.graph.nodes), self.variables,
                self.operators, self.symbols, self.derived)

    def _rollback(self, started):
        """Undo everything done since `_started` gave `started`."""
        undo = self._undo
        mark, graph, size, self.variables, self.operators, self.symbols, self.derived = \
            started
        while len(undo) > mark:
            table, key, old = undo.pop()
            if old is _ABSENT:
                dict.pop(table, key, None)
            else:
                dict.__setitem__(table, key, old)
        self.graph = graph
        graph.truncate(size)
        # (the marks of nodes made since are not journaled: they go with the nodes)
        for i in [i for i in self.derived if i >= size]:
            dict.__delitem__(self.derived, i)
        self._clean = bytearray()       # (what it knew may rest on marks taken out since)

    def _write(self, lines) -> None:
        out = self.out if self.out is not None else self.stdout
        try:
            for line in lines:
                print(line, file=out)
        except BrokenPipeError:
            raise                   # (the reader went away: the command ends quietly)
        except OSError as e:        # a full disk, say: a clean message, not an internal error
            raise AddsError(f"cannot write {self._out_name(out)}: {e.strerror}") from None
        except UnicodeEncodeError as e:     # (a stream that is not UTF-8: the program is)
            raise AddsError(f"cannot write {e.object[e.start]!r} to {self._out_name(out)}"
                            ) from None

    def _out_name(self, out) -> str:
        """The name of an output stream in a message."""
        for name, f in self.files.items():
            if f is out:
                return name
        return "standard output"

    @property
    def format(self):
        """The output format chosen by ``on fort`` / ``off fort``."""
        return FortranFormat() if self.fort else AddsFormat()

    # --- statements ---------------------------------------------------------------------------
    def _statement(self, stmt, directory):
        kind = stmt.data
        c = stmt.children
        if kind == "assign":
            self._assign(c[0], c[1])
        elif kind == "array_decl":
            for decl in c:
                name, dims = decl.children
                try:
                    self._declare_array(name, _dims(dims))
                except AddsError as e:          # (at the declaration that is wrong)
                    raise _located(e, decl, self._where)
        elif kind == "operator_decl":
            for decl in c:
                name, dims, n = decl.children
                try:
                    self._declare_operator(name, _dims(dims) if dims else (), int(n))
                except AddsError as e:
                    raise _located(e, decl, self._where)
        elif kind in ("outcode", "count"):
            self._outcode(kind, c[0], c[1])
        elif kind == "clear":
            self.clear()
        elif kind == "free":
            self._free()
        elif kind == "in_stmt":
            return self._include(_string(c[0]), directory)
        elif kind == "out_stmt":
            name = _string(c[0])
            if name not in self.files:
                try:
                    self.files[name] = open(name, "w", encoding="utf-8") \
                        if self.write_files else io.StringIO()
                except OSError as e:
                    raise AddsError(f"out: cannot write {name}: {e.strerror}") from None
            self.out = self.files[name]
        elif kind == "shut_stmt":
            name = _string(c[0])
            f = self.files.pop(name, None)
            if f is None:
                raise AddsError(f'shut: "{name}" is not open for output (see out)')
            self.out = None
            try:
                f.close()           # (closed even if writing what was left failed)
            except OSError as e:
                raise AddsError(f"shut: cannot write {name}: {e.strerror}") from None
        elif kind in ("on_stmt", "off_stmt"):
            what = str(c[0])
            if what not in ("ECHO", "FORT"):
                raise _located(AddsError(f"{kind[:-5]} takes ECHO or FORT, got {what}"), c[0],
                               self._where)
            setattr(self, what.lower(), kind == "on_stmt")
        elif kind == "write_stmt":
            self._write([_string(c[0])])
        # comment_stmt: nothing to do

    def _assign(self, ref, expr):
        name, index = ref.children
        name = str(name)
        self._target = name     # (no operator that differentiating declares takes it)
        try:
            value = self.value(expr)
        finally:
            self._target = None
        old = self.variables.get(name)
        if name in self.operators:
            raise AddsError(f"{name} is an {self.operators[name].describe()}; it cannot be "
                            "assigned to")
        if name in FUNCTIONS or name in SPECIAL:
            raise AddsError(f"{name} is an operator; it cannot be assigned to")
        if index is None:
            if old is not None and old.shape != value.shape:
                raise _located(AddsError(f"{name} has type {T.type_str(old)}, the value "
                                         f"assigned has type {T.type_str(value)}"),
                               expr, self._where)
            self.variables[name] = value
            return
        if old is None:
            raise AddsError(f"undefined name {name}: declare an array before assigning to "
                            f"its elements (array {name}[...];)")
        at = self._indices(index)
        part = T.index(old, at, name)
        if part.shape != value.shape:
            raise _located(AddsError(f"{name}[{','.join(map(str, at))}] has type "
                                     f"{T.type_str(part)}, the value assigned has type "
                                     f"{T.type_str(value)}"), expr, self._where)
        new = old.copy()
        new[tuple(i - 1 for i in at)] = value[()] if value.ndim == 0 else value
        self.variables[name] = new

    def _check_new_name(self, name, what):
        if name in FUNCTIONS or name in SPECIAL:
            raise AddsError(f"{name} is a built-in operator; choose another name for the "
                            f"{what}")
        if name in self.variables:
            raise AddsError(f"{name} is already a variable of type "
                            f"{T.type_str(self.variables[name])}")
        if name in self.operators:
            raise AddsError(f"{name} is already declared: it is the "
                            f"{self.operators[name].describe()}")

    def _declare_array(self, name, shape):
        name = str(name)
        self._check_new_name(name, "array")
        T.check_size(shape, f"array {name}")
        self.variables[name] = T.build(shape, lambda i: self._input(name, tuple(
            j + 1 for j in i)))

    def _declare_operator(self, name, shape, n):
        name = str(name)
        self._check_new_name(name, "operator")
        if n < 1:
            raise AddsError(f"operator {name} must take at least one operand")
        # Each operand gets a derivative rule when the operator is declared, so a count
        # beyond what one value can hold is a typo that would take forever, not a program.
        if n > T.MAX_ELEMENTS:
            raise AddsError(f"operator {name} takes too many operands ({n}; at most "
                            f"{T.MAX_ELEMENTS})")
        T.check_size(shape, f"the result of operator {name}")
        D.Operator(name, shape, n, self.operators, lambda: self.directional,
                   self._name_taken)

    def _name_taken(self, name) -> bool:
        """Whether a name not among the operators is in use: a variable, a built-in, or
        the variable the statement running assigns to."""
        return (name in self.variables or name in FUNCTIONS or name in SPECIAL
                or name == self._target)

    def _input(self, name, index=()):
        sym = Symbol(str(name), index)
        node = self.graph.input(ShapeDtype(), AddsFormat().symbol(sym))
        self.symbols[node.index] = sym
        return node

    def _outcode(self, kind, inputs, outputs):
        def variable(r):
            """The value of reference r, a mistake in it pointed at where it is written
            (the statement's start is the keyword, maybe lines before)."""
            try:
                return self._variable(r)
            except AddsError as e:
                raise _located(e, r, self._where)

        # (a constant among the inputs, as a[1] after a[1] := 3, is no input: mark up from
        # it made every node that uses a 3 depend on the inputs, and kept b*3 from being
        # hoisted)
        xs = [n for n in T.flat([variable(r) for r in inputs.children if r is not None])
              if not n.is_const]
        outs = []
        for r in outputs.children:
            name, index = r.children
            value = variable(r)
            at = self._indices(index) if index is not None else ()
            for i in np.ndindex(*value.shape):
                outs.append((Symbol(name, at + tuple(j + 1 for j in i)), value[i]))
        if self.requests is not None:
            ins = ",".join(_ref_text(r) for r in inputs.children if r is not None)
            label = f"{kind}({ins}) " + ",".join(_ref_text(r) for r in outputs.children)
            self.requests.append((label, self.graph, outs, frozenset(self.derived), list(xs),
                                  self._function_of([n for _, n in outs])))
        if not self.emit:
            return
        fmt = self.format
        if kind == "count":
            tally = count_ops(self.graph, [n for _, n in outs])
            words = [f"{label} {tally[c]}" for c, label in _COUNT_NAMES
                     if c in ("add", "mul", "div", "call", "pow") or tally[c]]
            self._write(fmt.comment("COUNT: " + ", ".join(words)))
            return
        try:
            code = emit(self.graph, xs, outs, fmt, names=self.symbols,
                        reserved=set(self.variables) | set(self.operators))
        except EmitError as e:
            raise AddsError(f"outcode: {e}") from None
        self._write(self._derived_notes(code, fmt) + code.lines)

    def _derived_notes(self, code, fmt) -> list:
        """Comments naming the derivative operators in `code` that could not have their
        usual names (DH taken by a variable, say, so H's is DH1)."""
        called = {n.op for n in code.parameter_part + code.input_part}
        lines = []
        for op in self.operators.values():
            if op.origin is not None and op.primitive in called:
                base, prefix = op.origin
                if op.name != prefix + base.name:
                    lines += fmt.comment(f"{op.name} IS THE {prefix} OPERATOR OF {base.name} "
                                         f"({prefix}{base.name} IS TAKEN)")
        return lines

    def _free(self):
        """Rebuild the graph with only the nodes the variables still need."""
        old = self.graph
        roots = T.flat(list(self.variables.values()))
        new = self._new_graph()
        new_of, symbols = {}, _Journaled(self._undo)
        for i in sorted(old.mark_down(roots)) if roots else ():
            node = old.nodes[i]
            new_of[i] = new.remake(node, [new_of[a.index] for a in node.args])
            if i in self.symbols:
                symbols[new_of[i].index] = self.symbols[i]
        self.derived = _Journaled(self._undo, {
            new_of[i].index: frozenset(new_of[j].index for j in self.derived[i] if j in new_of)
            for i in new_of if i in self.derived})
        self._clean = bytearray()
        self.graph, self.symbols = new, symbols
        self.variables = _Journaled(self._undo, {
            name: T.build(v.shape, lambda i, v=v: new_of[v[i].index])
            for name, v in self.variables.items()})

    def _include(self, name, directory):
        """The file an ``in`` statement reads, opened (`_run` runs it)."""
        path = name if os.path.isabs(name) else os.path.join(directory or os.getcwd(), name)
        # resolved, so that a file reached again through a symbolic link is still itself
        if os.path.realpath(path) in self._reading:
            raise AddsError(f'in: "{name}" is already being read (a file cannot include '
                            "itself)")
        if os.path.isdir(path):
            raise AddsError(f'in: "{name}" is a directory, not a file')
        if not os.path.isfile(path):
            raise AddsError(f'in: there is no file "{name}"'
                            + (f" in {directory}" if directory else ""))
        return _open(path)

    # --- expressions ----------------------------------------------------------------------------
    def value(self, tree) -> np.ndarray:
        """The value of an expression tree: an object array of nodes.  An error inside
        gets the position of the innermost construct that failed.

        There is no recursion over the depth of the expression: its subexpressions are
        evaluated innermost first, in the order a recursive walk would take (so inputs and
        nodes are made in the same order), and each construct's ``self.value(operand)``
        then only takes the operand's value from `_done`."""
        done = self._done.pop(id(tree), _ABSENT)
        if done is not _ABSENT:
            return done
        graph = self.graph
        try:
            for t, in_index in _innermost_first(tree):
                # Indices are built with simplification on even in a plain session
                # (`wengert count`'s column b), so a[x-x+1] is a[1] there as in `run`.
                graph.optimize = self.optimize or in_index
                try:
                    # (looked at before _value takes the operands' values out of _done)
                    operands = self._operands(t) if self.derived else None
                    start = len(graph.nodes)
                    result = self._done[id(t)] = self._value(t)
                    if operands is not None:
                        self._own(result, operands, start)
                except AddsError as e:
                    raise _located(e, t, self._where)
            return self._done.pop(id(tree))
        except BaseException:
            self._done.clear()
            raise
        finally:
            graph.optimize = self.optimize

    def _operands(self, tree):
        """The values of the operands of an operation the user wrote (``a*b``, ``sin(a)``,
        ``vec(a, b)``, ``h(a)``, a number: none), or None for a variable (whose nodes are
        whatever its value is) and for the derivative operators (what they make is
        derived)."""
        kind, c = tree.data, tree.children
        if kind == "ref" or (kind == "call" and c[0] in _DIFFERENTIATING):
            return None
        if kind == "call":
            c = c[2:]
        elif kind == "indexed":
            c = c[:1]
        done = self._done
        return [done[id(a)] for a in c if type(a) is Tree]

    def _own(self, result, operands, start):
        """Take out of `derived` the nodes that an operation of the user's own, made from
        `start` on, reached: the user's statement needs them, so they are the function's,
        not a derivative's, in ``wengert count``'s column a and in ``wengert draw``.  By
        interning, ``h := 2*x`` after ``g := dfd(x*x, x)`` is the node dfd made.

        Only if no operand needs a derived node: ``g*1`` is g itself and ``-(-g)`` too,
        and they stay derivatives.  The nodes looked at are those the result reaches
        through derived nodes and nodes the operation made (simplification may give back
        a node a derivative made, as ``x+x`` gives ``2*x``), not through the older nodes
        that are not derived: those are the operands' and already what they are."""
        derived = self.derived
        if result.ndim == 0:        # (most often a new node of older operands: nothing to do)
            n = result[()]
            i = n.index
            if i not in derived and (i < start or all(
                    a.index < start and a.index not in derived for a in n.args)):
                return
        found, seen = [], set()
        stack = T.flat([result])
        while stack:
            n = stack.pop()
            i = n.index
            if i in seen:
                continue
            seen.add(i)
            if i in derived:
                found.append(i)
            elif i < start:
                continue
            stack.extend(n.args)
        if found and all(self._is_clean(n) for n in T.flat(operands)):
            for i in found:
                del derived[i]              # (journaled: undone if the statement fails)

    def _is_clean(self, node) -> bool:
        """Whether neither `node` nor any node it needs is derived.  By an explicit stack;
        what is found clean is remembered (marks are only ever taken out of `derived`
        between rollbacks, so a clean node stays clean)."""
        derived, known = self.derived, self._clean
        if len(known) < len(self.graph.nodes):
            known.extend(bytes(len(self.graph.nodes) - len(known)))
        stack = [node]
        while stack:
            n = stack[-1]
            if known[n.index]:
                stack.pop()
                continue
            if n.index in derived:
                return False
            pending = [a for a in n.args if not known[a.index]]
            if not pending:
                known[n.index] = 1
                stack.pop()
            elif any(a.index in derived for a in pending):
                return False
            else:
                stack.extend(pending)
        return True

    def _value(self, tree):
        kind, c = tree.data, tree.children
        if kind == "number":
            value = _number(c[0])
            mantissa = str(c[0]).upper().replace("D", "E").split("E")[0]
            if np.isinf(value) or (value == 0 and mantissa.strip("0.")):
                # (a double cannot hold it: FORTRAN refuses such a constant too)
                raise _located(AddsError(
                    f"the number {c[0]} is out of the range of double precision "
                    f"({'above 1.8e308' if value else 'below 4.9e-324, it would be 0'})"),
                    c[0], self._where)
            return T.scalar(self.graph.const(value))
        if kind == "ref":
            return self._variable(tree, read=True)
        if kind == "call":
            return self._call(tree)
        if kind == "neg":
            return T.neg(self.value(c[0]))
        if kind == "indexed":
            return T.index(self.value(c[0]), self._indices(c[1]), "the value")
        if kind == "pow":
            return T.power(self.value(c[0]), self.value(c[1]), self._constant_integer)
        return _BINARY[kind](self.value(c[0]), self.value(c[1]))

    def _variable(self, ref, read=False):
        """The value of a variable reference ``a`` or ``a[i, ...]``.  Reading an unknown
        scalar name (``read=True``) makes it an input, as ADDS does."""
        name, index = ref.children
        value = self.variables.get(name)
        if value is None:
            if name in self.operators or name in FUNCTIONS or name in SPECIAL:
                raise _located(AddsError(f"{name} is an operator; apply it to operands: "
                                         f"{name}(...)"), name, self._where)
            if not read or index is not None:
                raise _located(AddsError(f"undefined name {name}"), name, self._where)
            value = self.variables[str(name)] = T.scalar(self._input(name))
        if index is None:
            return value
        return T.index(value, self._indices(index), name)

    def _indices(self, index) -> tuple:
        out = []
        for e in index.children:
            n = self._constant_integer(self.value(e))
            if n is None:
                raise _located(AddsError("an index must be an integer constant"), e,
                               self._where)
            out.append(n)
        return tuple(out)

    def _constant_integer(self, value):
        """The integer constant a scalar value is, if it is one, as `run` reads it.

        A session without simplification (column b of ``wengert count``) has no constant
        where a variable's value simplifies to one: after ``n := x - x + 2``, N is an add
        node.  Its cone is then built again in a graph that simplifies, as ``run`` built
        it (the same rules, applied in the same order: arguments first), to see whether it
        comes to a constant.  So ``a[n]`` and ``m**n`` are read there as ``run`` reads them,
        and ``x**n`` is multiplications in both.  (Only for a node with no value, in such
        a session: a session that simplifies has made its constants already.)"""
        n = T.constant_integer(value)
        if n is not None or self.optimize or value.ndim != 0:
            return n
        node = value[()]
        scratch = Graph(optimize=True, straight_line=True, ieee=self.graph.ieee)
        copy = {}
        for m in self.graph.live_nodes([node]):         # (in creation order: no recursion)
            if m.is_const:
                copy[m.index] = scratch.const(m.value)
            elif not m.args:
                copy[m.index] = scratch.input(ShapeDtype(m.shape, m.dtype), m.name)
            else:
                copy[m.index] = scratch.apply(m.op, [copy[a.index] for a in m.args], m.params)
        return T.constant_integer(T.scalar(copy[node.index]))

    def _call(self, tree):
        name, index, *args = tree.children
        args = [a for a in args if a is not None]
        if name in self.operators:
            values = [self.value(a) for a in args]
            result = self.operators[name].apply(T.flat(values))
        elif name in FUNCTIONS:
            prim, arity = FUNCTIONS[name]
            self._arity(name, arity, args)
            values = [self.value(a) for a in args]
            if arity == 2 and values[0].shape != values[1].shape:
                raise AddsError(f"{name}: the operands must have one type, got "
                                f"{T.type_str(values[0])} and {T.type_str(values[1])}")
            result = T.elementwise(prim, *values)
        elif name in SPECIAL:
            self._arity(name, SPECIAL[name], args)
            if name in _DIFFERENTIATING and not _names_variables(args[1]):
                raise _located(AddsError(
                    f"{name}: the second operand must be a variable (a name, an element or "
                    "part of one like a[2], or vec(...) or tp(...) of them), not an "
                    "expression; to differentiate with respect to 2*x, say, assign "
                    "y := 2*x and write the function with y"), args[1], self._where)
            result = self._special(name, args)
        elif name in self.variables:
            raise _located(AddsError(f"{name} is a variable, not an operator: index it with "
                                     f"{name}[...]"), name, self._where)
        else:
            raise _located(AddsError(f"undefined operator {name} (declare it: operator "
                                     f"{name}(n);)"), name, self._where)
        if index is not None:
            result = T.index(result, self._indices(index), f"{name}(...)")
        return result

    @staticmethod
    def _arity(name, arity, args):
        if arity is None and not args:
            raise AddsError(f"{name} needs at least one operand")
        if arity is not None and len(args) != arity:
            raise AddsError(f"{name} takes {arity} operand{'s' if arity > 1 else ''}, got "
                            f"{len(args)}")

    def _special(self, name, args):
        values = [self.value(a) for a in args]
        start = len(self.graph.nodes)
        try:
            return self._special_values(name, values)
        finally:
            if name.startswith("DF") or name == "ERR":   # what they make is derived
                function = frozenset(i for n in T.flat([values[0]])
                                     for i in self.derived.get(n.index, (n.index,)))
                self.derived.update(dict.fromkeys(range(start, len(self.graph.nodes)),
                                                  function))

    def _function_of(self, nodes):
        """The function `nodes` compute, without derivatives: the nodes that are not
        derived, and the function each derived one is a derivative of."""
        picked = {}
        for n in nodes:
            for i in self.derived.get(n.index, (n.index,)):
                picked.setdefault(i, self.graph.nodes[i])
        return list(picked.values())

    def _special_values(self, name, values):
        if name == "VP":
            return T.vp(*values)
        if name == "TP":
            return T.tp(*values)
        if name == "VEC":
            return T.vec(*values)
        if name == "ERR":
            return D.err(*values)
        if name in ("DFUV", "DFDV"):
            with D.directional(self):
                return (D.dfuv if name == "DFUV" else D.dfdv)(*values)
        return (D.dfu if name == "DFU" else D.dfd)(*values)


#: The operators whose second operand is what they differentiate with respect to.
_DIFFERENTIATING = frozenset({"DFU", "DFD", "DFUV", "DFDV", "ERR"})


def _names_variables(tree) -> bool:
    """Whether an expression is written as variables: a name, an indexed one (``a[2]``),
    or ``vec``/``tp`` of such (or a number, which `derivatives` refuses as a constant).
    Any other expression makes new nodes, and a function defined before cannot depend on
    them: differentiating with respect to ``2*x`` gave 0 without a word.  (By an explicit
    stack: the depth of `tree` does not matter.)"""
    stack = [tree]
    while stack:
        t = stack.pop()
        if t.data == "indexed":
            stack.append(t.children[0])
        elif t.data == "call" and t.children[0] in ("VEC", "TP"):
            stack.extend(a for a in t.children[2:] if a is not None)
        elif t.data not in ("ref", "number"):   # (a constant gets its own message)
            return False
    return True


_BINARY = {"add": T.add, "sub": T.sub, "mul": T.mul, "div": T.div, "pow": T.power}

_EXPRESSIONS = frozenset({"number", "ref", "call", "neg", "indexed", *_BINARY})


def _innermost_first(tree) -> list:
    """The expression subtrees of `tree` (itself last), each after its operands, in the
    order `Session._value` evaluates them: a call's operands before its index.  Each comes
    with whether it is part of an index.  By an explicit stack, so the depth of the
    expression does not matter: the walk visits each tree before its operands, the last
    operand first, and the reverse of that order is the one wanted."""
    out, stack = [], [(tree, False)]
    while stack:
        t, in_index = stack.pop()
        data, children = t.data, t.children
        if data in _EXPRESSIONS:
            out.append((t, in_index))
        elif data == "index":
            in_index = True
        if data == "call":                  # NAME, index, operands...
            children = children[2:] + children[1:2]
        for c in children:
            if type(c) is Tree:
                stack.append((c, in_index))
    out.reverse()
    return out


def _located(error, where, source):
    """Attach the position of a tree or token to an error (if it has none yet)."""
    pos = getattr(where, "pos", None)
    if error.located or pos is None:
        return error
    filename, text = source
    return error.at(filename, text, *position(text, pos))


_ABSENT = object()


class _Source:
    """A text being run: its statements (`pending`, run up to `next`), its file name
    and directory (where its ``in`` statements look), `path` as `_reading` names it if it
    is a file, and `started`, how to undo the ``in`` statement that opened it."""

    __slots__ = ("pending", "next", "text", "filename", "directory", "path", "started")

    def __init__(self, pending, text, filename, directory, path=None):
        self.pending, self.next, self.text = pending, 0, text
        self.filename, self.directory, self.path = filename, directory, path
        self.started = None


def source_text(data: bytes) -> str:
    """The text of a program from its bytes, read the same way from a file and from
    standard input, so that positions and messages are the same: UTF-8, a byte that is
    not UTF-8 becoming a lone surrogate (which the parser reports where it stands), each
    line end (``\\r\\n`` or a lone ``\\r``) a ``\\n``, and a byte-order mark at the start
    (which some Windows editors write) dropped.

    Example:
        >>> source_text(b"\\xef\\xbb\\xbff := x;\\r\\ng := y;\\rh := \\xe9;")
        'f := x;\\ng := y;\\nh := \\udce9;'
    """
    text = data.decode("utf-8", errors="surrogateescape").removeprefix("\ufeff")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _open(path) -> _Source:
    """The program in the file `path`, read and syntax checked."""
    try:
        with open(path, "rb") as f:
            text = source_text(f.read())
    except OSError as e:
        raise AddsError(f"cannot read {path}: {e.strerror}") from None
    return _Source(statements(text, path), text, path,
                   os.path.dirname(os.path.abspath(path)), os.path.realpath(path))


class _Journaled(dict):
    """A dictionary that notes, in the list `log`, how to undo each change made to it by
    item assignment or deletion (what a statement does to the session's tables)."""

    __slots__ = ("log",)

    def __init__(self, log, *args):
        super().__init__(*args)
        self.log = log

    def __setitem__(self, key, value):
        self.log.append((self, key, self.get(key, _ABSENT)))
        super().__setitem__(key, value)

    def __delitem__(self, key):
        self.log.append((self, key, self[key]))
        super().__delitem__(key)


def _dims(tree) -> tuple:
    dims = tuple(int(t) for t in tree.children)
    if any(d < 1 for d in dims):
        raise AddsError(f"array bounds must be at least 1, got [{','.join(map(str, dims))}]")
    return dims


def _ref_text(ref) -> str:
    """A variable reference as written (``G`` or ``G[1]``), for labels."""
    name, index = ref.children
    if index is None:
        return str(name)
    at = [str(e.children[0]) if e.data == "number" else "..." for e in index.children]
    return f"{name}[{','.join(at)}]"


def _string(token) -> str:
    return str(token)[1:-1]


def _number(token) -> float:
    return float(str(token).upper().replace("D", "E"))

