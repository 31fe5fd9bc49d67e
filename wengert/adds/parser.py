"""The grammar of the ADDS language (seed 002, §2) and its parser.

The grammar below, read by lark's LALR parser, is the language's definition.  A program
is parsed statement by statement, into `Tree`\\ s of `Token`\\ s that the interpreter
walks; each knows where it starts in the text (`pos`), so an error can name its file,
line and column.  Keywords and names are case-insensitive (names are upper-cased here, as
ADDS upper-cases its input); the text of strings is kept as written, since it may be a
file name.

Precedence, loosest first: ``+ -``, then ``* /``, then unary minus, then ``**`` (right
associative, so ``-x**2`` is ``-(x**2)`` and ``a**b**c`` is ``a**(b**c)``, as in Fortran).

Why statement by statement, and what is remembered.  Lark spends some microseconds on
every token, so a program of 100,000 statements took it half a minute; but programs that
long are written by programs, and their statements repeat a few forms (``x1 := x0*2 +
sin(x0);`` with other names and numbers).  So a fast scanner (`_scan`, one regular
expression) cuts the text into statements and tokens, and an assignment is parsed by lark
only the first time its *form* (the kinds of its tokens: name, number, ``*``, ...) is seen:
an LALR parse depends on nothing else, so lark's tree for that statement, with its names,
numbers and positions taken out, is a `_Template` that gives the tree of every later
statement of the same form.  Every other statement (declarations, ``outcode``, ...) and
every statement with a mistake in it is parsed by lark itself, so messages are lark's.

The whole text is checked before anything runs (`statements`), so a syntax error anywhere
(or a byte that is not UTF-8, even in a remark) means that nothing ran, but in the REPL,
which runs the statements around it; a statement's tree is made when it is about to run
(`build`), so a long program never holds all of its trees at once.
"""
from __future__ import annotations

import functools
import re

import lark

from .errors import AddsError

# Terminals the scanner below matches too: one spelling for both.
_NAME = r"[A-Za-z][A-Za-z0-9_]*"
_NUMBER = r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eEdD][+-]?[0-9]+)?"
_STRING = r'"[^"\n]*"'
_COMMENT = r"comment\b[^;]*"
_BLANK = r"[ \t\f\r\n]"
_REMARK = r"%[^\n]*"

GRAMMAR = r"""
start: (_stmt? ";")*

_stmt: assign | array_decl | operator_decl | outcode | count | clear | free
     | in_stmt | out_stmt | shut_stmt | on_stmt | off_stmt | write_stmt | comment_stmt

assign: ref ":=" expr
ref: NAME [index]
index: "[" expr ("," expr)* "]"

array_decl: "array"i shape_decl ("," shape_decl)*
shape_decl: NAME dims
dims: "[" INT ("," INT)* "]"
operator_decl: "operator"i op_decl ("," op_decl)*
op_decl: NAME [dims] "(" INT ")"

outcode: "outcode"i refs refs
count: "count"i refs refs
refs: "(" [ref ("," ref)*] ")" | ref ("," ref)*

clear: "clear"i
free: "free"i
in_stmt: "in"i STRING
out_stmt: "out"i STRING
shut_stmt: "shut"i STRING
on_stmt: "on"i NAME
off_stmt: "off"i NAME
write_stmt: "write"i STRING
comment_stmt: COMMENT

?expr: sum
?sum: product
    | sum "+" product -> add
    | sum "-" product -> sub
?product: unary
    | product "*" unary -> mul
    | product "/" unary -> div
?unary: power
    | "-" unary -> neg
    | "+" unary
?power: atom
    | atom "**" unary -> pow
?atom: NUMBER -> number
    | ref
    | call
    | "(" expr ")"
    | call index -> indexed
    | "(" expr ")" index -> indexed
call: NAME [index] "(" [expr ("," expr)*] ")"

COMMENT.2: /%(comment)s/i
NAME: /%(name)s/
INT: /[0-9]+/
NUMBER.0: /%(number)s/
STRING: /%(string)s/

%%ignore /%(blank)s+/
%%ignore /%(remark)s/
""" % {"comment": _COMMENT, "name": _NAME, "number": _NUMBER, "string": _STRING,
       "blank": _BLANK, "remark": _REMARK}

#: The words that begin a statement (``array``, ``outcode``, ...), upper-cased: at a
#: statement's start such a name is the keyword, elsewhere a name.
KEYWORDS = frozenset(w.upper() for w in re.findall(r'"(\w+)"i', GRAMMAR))

# How the parser's token names read in an error message.
_READABLE = {
    "SEMICOLON": "';'", "LPAR": "'('", "RPAR": "')'", "LSQB": "'['", "RSQB": "']'",
    "COMMA": "','", "PLUS": "'+'", "MINUS": "'-'", "STAR": "'*'", "SLASH": "'/'",
    "__ANON_0": "':='", "NAME": "a name", "NUMBER": "a number", "INT": "an integer",
    "STRING": "a string in double quotes", "$END": "the end of the input",
}


class Tree:
    """A construct of a statement: `data` names it (``"assign"``, ``"add"``, ``"ref"``,
    ...; the grammar's rule or alias), `children` are its parts in order (trees, tokens,
    and None for an optional part left out), `pos` is where its first character is in the
    text; a statement also has `end`, just past its last character (its ``;`` excluded).
    """

    __slots__ = ("data", "children", "pos", "end")

    def __init__(self, data, children, pos, end=None):
        self.data, self.children, self.pos, self.end = data, children, pos, end

    def __repr__(self):
        return f"Tree({self.data!r}, {self.children!r})"


class Token(str):
    """A name (upper-cased), number, integer, string or comment of the text: the string,
    with its `type` (``"NAME"``, ``"NUMBER"``, ...) and `pos` (where it starts)."""

    def __new__(cls, type_, value, pos):
        token = str.__new__(cls, value)
        token.type, token.pos = type_, pos
        return token

    def __repr__(self):
        return f"Token({self.type!r}, {str(self)!r})"


def position(text: str, pos: int) -> tuple:
    """(line, column) of offset `pos` of `text`, both from 1, as lark counts them.

    Example:
        >>> position("f := x;\\ng := y;", 13)
        (2, 6)
    """
    return text.count("\n", 0, pos) + 1, pos - text.rfind("\n", 0, pos)


@functools.lru_cache(maxsize=None)
def _parser():
    return lark.Lark(GRAMMAR, parser="lalr", propagate_positions=True,
                     maybe_placeholders=True)


def parse(text: str, filename: str = "<input>") -> list:
    """The statements of an ADDS program, as `Tree`\\ s.  Names are upper-cased.

    Example:
        >>> [s.data for s in parse("array x[2]; f := x*x; outcode(x) f;")]
        ['array_decl', 'assign', 'outcode']
        >>> parse("f := (a+1;", "f.adds")
        Traceback (most recent call last):
        ...
        wengert.adds.errors.AddsError: f.adds:1:10: error: unexpected ';', expected ...
    """
    return [build(s) for s in statements(text, filename)]


def statements(text: str, filename: str = "<input>", errors: bool = False) -> list:
    """The statements of a program, syntax checked but not yet made into trees: give
    each to `build` (in order, as each is about to run).  Raises `AddsError` at the first
    syntax error; with `errors`, a statement with a syntax error is its `AddsError`
    instead, which `build` raises, and the others are read as usual (the REPL runs the
    statements of a line around a bad one, as it does around one that fails to run).

    Example:
        >>> [type(s).__name__ for s in statements("f := 1; g := +*; h := 3;", errors=True)]
        ['tuple', 'AddsError', 'tuple']
    """
    out = []
    # A byte that is not UTF-8 (a lone surrogate: see interpreter.source_text) is an
    # error wherever it is, in a string or a remark too, not only where it is a token:
    # in a string, `write` wrote it to standard output as it was, and to an `out` file
    # not at all.  It is the mistake of the statement it is in (or before).
    bad = _NOT_UTF8.search(text)
    for statement in _scan(text):
        stop = statement[3]
        try:
            if bad is not None and bad.start() <= (len(text) if stop is None else stop):
                at, bad = bad.start(), _NOT_UTF8.search(text, bad.end())
                raise _not_utf8(text, at, filename)
            _statement(out, text, filename, *statement)
        except AddsError as e:
            if not errors:
                raise
            out.append(e)
    if bad is not None:                         # (in a remark after the last statement)
        e = _not_utf8(text, bad.start(), filename)
        if not errors:
            raise e
        out.append(e)
    return out


def _statement(out, text, filename, kinds, values, positions, stop):
    """Append to `out` the statement of one piece `_scan` cut (lark parses the rest of
    the text as one piece where the text ends before a ';')."""
    if kinds[0] == "comment":
        if stop is not None:
            pos = positions[0]
            out.append(Tree("comment_stmt", [Token("COMMENT", values[0], pos)], pos,
                            pos + len(values[0])))
            return
    elif kinds[0] == "N" and values[0].upper() not in KEYWORDS and stop is not None:
        template = _TEMPLATES.get(kinds)
        if template is not None:
            out.append((template, values, positions))
            return
        tree = _lark(text, positions[0], stop + 1, filename)[0]
        if len(kinds) > _LONGEST_FORM:
            out.append(tree)
            return
        if len(_TEMPLATES) >= _MAX_TEMPLATES:
            _TEMPLATES.clear()
        template = _TEMPLATES[kinds] = _Template(tree, positions)
        out.append((template, values, positions))   # (smaller than the tree)
        return
    out.extend(_lark(text, positions[0], len(text) if stop is None else stop + 1, filename))


def build(statement) -> Tree:
    """The tree of one of the `statements` (raising the syntax error that one is)."""
    if type(statement) is Tree:
        return statement
    if type(statement) is AddsError:
        raise statement
    template, values, positions = statement
    return template.make(values, positions)


# --------------------------------------------------------------------------------------
# the scanner
# --------------------------------------------------------------------------------------
# One token after blanks: a remark (1), name (2), number (3), operator (4), ';' (5),
# string (6), or any other character but a blank (7), which only lark can explain.  (So
# every character is in a match but blanks at the end, which finditer may skip.)
_TOKEN = re.compile(rf"{_BLANK}*(?:({_REMARK})|({_NAME})|({_NUMBER})|(:=|\*\*|[-+*/()\[\],])"
                    rf"|(;)|({_STRING})|([^ \t\f\r\n]))")
#: A ``comment`` statement, which runs to the next ``;`` whatever it holds (the REPL asks too).
COMMENT_STATEMENT = re.compile(_COMMENT, re.IGNORECASE)


def _scan(text):
    """The statements of `text` as ``(kinds, values, positions, stop)``: the kinds of
    their tokens (``"N"`` a name, ``"#"`` a number, ``'"'`` a string, ``"?"`` a character
    no token starts with, an operator itself; a comment statement is one token of kind
    ``"comment"``), the tokens' texts and offsets, and the offset of the ``;`` that ends
    the statement (None: the text ends first).  Strings and remarks (``%``) are skipped
    over as lark's lexer does, so a ``;`` in them ends nothing."""
    out = []
    kinds, values, positions = [], [], []
    kind_of = (None, None, "N", "#", None, None, '"', "?")
    pos = 0
    while pos is not None:
        resume, pos = pos, None
        for m in _TOKEN.finditer(text, resume):
            g = m.lastindex
            if g == 5:                                  # ';'
                if kinds:       # (tuples of strings and ints: the collector skips them)
                    out.append((tuple(kinds), tuple(values), tuple(positions), m.start(5)))
                    kinds, values, positions = [], [], []
                continue
            if g == 1:                                  # a remark
                continue
            value = m.group(g)
            if g == 4:
                kinds.append(value)
            else:
                if g == 2 and not kinds and value[0] in "cC":
                    start = m.start(2)
                    comment = COMMENT_STATEMENT.match(text, start)
                    if comment is not None:     # it runs to the next ';', whatever it holds
                        stop = text.find(";", start)
                        out.append((("comment",), (comment.group(),), (start,),
                                    None if stop < 0 else stop))
                        pos = None if stop < 0 else stop + 1
                        break
                kinds.append(kind_of[g])
            values.append(value)
            positions.append(m.start(g))
    if kinds:
        out.append((tuple(kinds), tuple(values), tuple(positions), None))
    return out


# --------------------------------------------------------------------------------------
# lark, and templates of its trees
# --------------------------------------------------------------------------------------
def _lark(text, start, stop, filename) -> list:
    """The statements in ``text[start:stop]``, parsed by lark, as `Tree`\\ s."""
    piece = text[start:stop]
    try:
        tree = _parser().parse(piece)
    except lark.exceptions.UnexpectedInput as e:
        raise _syntax_error(e, text, start, filename) from None
    return [_convert(stmt, start) for stmt in tree.children]


def _convert(root, offset) -> Tree:
    """A lark tree as a `Tree` (names upper-cased, offsets into the whole text), without
    recursion over its depth."""
    done = {}
    stack = [(root, False)]
    while stack:
        node, ready = stack.pop()
        if not ready:
            stack.append((node, True))
            stack.extend((c, False) for c in node.children if isinstance(c, lark.Tree))
            continue
        children = []
        for c in node.children:
            if isinstance(c, lark.Tree):
                children.append(done.pop(id(c)))
            elif isinstance(c, lark.Token):
                value = c.value.upper() if c.type == "NAME" else c.value
                children.append(Token(c.type, value, c.start_pos + offset))
            else:
                children.append(c)
        meta = node.meta
        done[id(node)] = Tree(str(node.data), children, meta.start_pos + offset,
                              meta.end_pos + offset)
    return done.pop(id(root))


_TEMPLATES = {}               # kinds of an assignment's tokens -> its _Template
_MAX_TEMPLATES = 1000         # (a program of many forms: start again rather than grow)
_LONGEST_FORM = 200           # tokens: a longer statement is seldom repeated


class _Template:
    """The tree of every assignment of one form, from lark's tree of one of them: the
    steps that rebuild it, children before their parent, with token indices in place of
    tokens and positions.  `make` takes a statement's token texts and offsets and runs
    the steps."""

    def __init__(self, tree, positions):
        first = {p: i for i, p in enumerate(positions)}      # offset -> token index
        steps = []                # ("token", type, index), None, ("tree", data, n, index)
        stack = [(tree, False)]
        while stack:
            node, ready = stack.pop()
            if type(node) is Tree:
                if ready:
                    steps.append(("tree", node.data, len(node.children), first[node.pos]))
                else:
                    stack.append((node, True))
                    stack.extend((c, False) for c in reversed(node.children))
            elif node is None:
                steps.append(None)
            else:
                steps.append(("token", node.type, first[node.pos]))
        self.steps = steps

    def make(self, values, positions) -> Tree:
        stack = []
        push = stack.append
        for step in self.steps:
            if step is None:
                push(None)
            elif step[0] == "token":
                _, kind, i = step
                value = values[i]
                push(Token(kind, value.upper() if kind == "NAME" else value, positions[i]))
            else:
                _, data, n, i = step
                children = stack[len(stack) - n:]
                del stack[len(stack) - n:]
                push(Tree(data, children, positions[i]))
        tree = stack.pop()
        tree.end = positions[-1] + len(values[-1])
        return tree


# --------------------------------------------------------------------------------------
# syntax errors
# --------------------------------------------------------------------------------------
def _describe(token) -> str:
    if token.type == "$END":
        return "end of input"
    return repr(str(token))


_NOT_UTF8 = re.compile("[\udc80-\udcff]")


def _not_utf8(text, pos, filename) -> AddsError:
    """The error for the byte that is not UTF-8 at offset `pos` of `text`."""
    return AddsError(f"byte 0x{ord(text[pos]) - 0xdc00:02X} is not UTF-8 text").at(
        filename, text, *position(text, pos))


def _syntax_error(e, text, offset, filename) -> AddsError:
    """`AddsError` for lark's error in the piece of `text` from `offset` on."""
    if isinstance(e, lark.exceptions.UnexpectedCharacters):
        pos = offset + e.pos_in_stream
        char = text[pos]
        if "\udc80" <= char <= "\udcff":          # an undecodable byte (surrogateescape)
            return _not_utf8(text, pos, filename)
        if char == '"':                         # (a closed string is a token)
            msg = "this string is not closed by a '\"' on its line"
        else:
            msg = f"unexpected character {char!r}"
    else:
        token = getattr(e, "token", None)
        expected = sorted({_READABLE.get(t, repr(t.lower()) if t.isalpha() else t)
                           for t in getattr(e, "expected", ()) or ()})
        if token is None or token.type == "$END":
            msg = "the input ends in the middle of a statement (a ';' is missing?)"
            return AddsError(msg).at(filename, text, *position(text, len(text.rstrip())))
        msg = f"unexpected {_describe(token)}"
        if expected:
            msg += ", expected " + " or ".join(expected[:6]) + (" ..." if len(expected) > 6
                                                                 else "")
        pos = offset + token.start_pos
    return AddsError(msg).at(filename, text, *position(text, pos))
