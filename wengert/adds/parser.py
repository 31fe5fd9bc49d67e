"""The grammar of the ADDS language (seed 002, §2) and its parser.

Lark's LALR parser reads a whole input into a list of statements, each a `lark.Tree` whose
``meta`` holds its position; the interpreter walks those trees.  Keywords and names are
case-insensitive (names are upper-cased here, as ADDS upper-cases its input); the text of
strings is kept as written, since it may be a file name.

Precedence, loosest first: ``+ -``, then ``* /``, then unary minus, then ``**`` (right
associative, so ``-x**2`` is ``-(x**2)`` and ``a**b**c`` is ``a**(b**c)``, as in Fortran).
"""
from __future__ import annotations

import functools

import lark

from .errors import AddsError

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

COMMENT.2: /comment\b[^;]*/i
NAME: /[A-Za-z][A-Za-z0-9_]*/
INT: /[0-9]+/
NUMBER.0: /([0-9]+\.?[0-9]*|\.[0-9]+)([eEdD][+-]?[0-9]+)?/
STRING: /"[^"\n]*"/

%ignore /[ \t\f\r\n]+/
%ignore /%[^\n]*/
"""

# How the parser's token names read in an error message.
_READABLE = {
    "SEMICOLON": "';'", "LPAR": "'('", "RPAR": "')'", "LSQB": "'['", "RSQB": "']'",
    "COMMA": "','", "PLUS": "'+'", "MINUS": "'-'", "STAR": "'*'", "SLASH": "'/'",
    "__ANON_0": "':='", "NAME": "a name", "NUMBER": "a number", "INT": "an integer",
    "STRING": "a string in double quotes", "$END": "the end of the input",
}


@functools.lru_cache(maxsize=None)
def _parser():
    return lark.Lark(GRAMMAR, parser="lalr", propagate_positions=True,
                     maybe_placeholders=True)


def parse(text: str, filename: str = "<input>") -> list:
    """The statements of an ADDS program, as lark trees.  Names are upper-cased.

    Example:
        >>> [str(s.data) for s in parse("array x[2]; f := x*x; outcode(x) f;")]
        ['array_decl', 'assign', 'outcode']
        >>> parse("f := (a+1;", "f.adds")
        Traceback (most recent call last):
        ...
        wengert.adds.errors.AddsError: f.adds:1:10: error: unexpected ';', expected ...
    """
    try:
        tree = _parser().parse(text)
    except lark.exceptions.UnexpectedInput as e:
        raise _syntax_error(e, text, filename) from None
    for stmt in tree.children:
        for node in stmt.iter_subtrees():
            node.children = [_upper(c) for c in node.children]
    return tree.children


def _upper(child):
    if isinstance(child, lark.Token) and child.type == "NAME":
        return child.update(value=child.value.upper())
    return child


def _describe(token) -> str:
    if token.type == "$END":
        return "end of input"
    return repr(str(token))


def _syntax_error(e, text, filename) -> AddsError:
    if isinstance(e, lark.exceptions.UnexpectedCharacters):
        char = text[e.pos_in_stream]
        if "\udc80" <= char <= "\udcff":          # an undecodable byte (surrogateescape)
            msg = f"byte 0x{ord(char) - 0xdc00:02X} is not UTF-8 text"
        else:
            msg = f"unexpected character {char!r}"
    else:
        token = getattr(e, "token", None)
        expected = sorted({_READABLE.get(t, repr(t.lower()) if t.isalpha() else t)
                           for t in getattr(e, "expected", ()) or ()})
        if token is None or token.type == "$END":
            msg = "the input ends in the middle of a statement (a ';' is missing?)"
            line, column = _end_position(text)
            return AddsError(msg).at(filename, text, line, column)
        msg = f"unexpected {_describe(token)}"
        if expected:
            msg += ", expected " + " or ".join(expected[:6]) + (" ..." if len(expected) > 6
                                                                 else "")
    return AddsError(msg).at(filename, text, e.line, e.column)


def _end_position(text):
    stripped = text.rstrip()
    line = stripped.count("\n") + 1
    column = len(stripped) - (stripped.rfind("\n") + 1) + 1
    return line, column
