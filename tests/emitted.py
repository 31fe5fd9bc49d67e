"""A small evaluator for the code `outcode` emits, in both formats, written apart from
wengert so that it checks the emitter rather than trusting it.

It reads statements ``T := E;`` (ADDS format) or FORTRAN 77 fixed form (``T = E``, ``&``
continuations in column 6, ``C`` comments) and evaluates them in order.  Expressions are
parsed with Fortran's rules: a sign may only start an expression or a parenthesis (``A*-B``
is rejected), ``**`` is right associative, and in Fortran mode integer literals are integers,
so an integer division truncates as Fortran would.
"""
import math
import re
import sys

FUNCTIONS = {
    "SQRT": math.sqrt, "CBRT": lambda x: math.copysign(abs(x) ** (1 / 3), x),
    "EXP": math.exp, "LOG": math.log, "LOG10": math.log10, "SIN": math.sin, "COS": math.cos,
    "TAN": math.tan, "COTAN": lambda x: 1 / math.tan(x), "ASIN": math.asin,
    "ACOS": math.acos, "ATAN": math.atan, "ATAN2": math.atan2, "SINH": math.sinh,
    "COSH": math.cosh, "TANH": math.tanh, "ABS": abs, "SIGN": lambda a, b: math.copysign(a, b),
    # (FORTRAN's MERGE(a, b, condition), as the templates for what FORTRAN lacks use it)
    "MERGE": lambda a, b, c: a if c else b, "HUGE": lambda x: sys.float_info.max,
}
_RELATIONS = {".EQ.": lambda a, b: a == b, ".NE.": lambda a, b: a != b,
              ".GT.": lambda a, b: a > b, ".GE.": lambda a, b: a >= b,
              ".LT.": lambda a, b: a < b, ".LE.": lambda a, b: a <= b}
# (a number's point is not the first of .OR. after it: 0.OR. is 0 and .OR.)
TOKEN = re.compile(r"\s*(?:(?P<num>(\d+(?:\.(?![A-Z]{2,3}\.)\d*)?|\.\d+)([EeDd][+-]?\d+)?)"
                   r"|(?P<name>[A-Z][A-Z0-9_]*)"
                   r"|(?P<op>\*\*|:=|\.(?:EQ|NE|GT|GE|LT|LE|OR|AND)\.|[-+*/(),\[\]=]))")


def _tokens(text):
    pos, out = 0, []
    text = text.rstrip()
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            raise SyntaxError(f"bad character at {text[pos:pos + 10]!r}")
        pos = m.end()
        out.append(m.group("num") and ("num", m.group("num"))
                   or m.group("name") and ("name", m.group("name"))
                   or ("op", m.group("op")))
    return out


class _Expr:
    def __init__(self, tokens, env, fortran, operators):
        self.t, self.i, self.env = tokens, 0, env
        self.fortran, self.operators = fortran, operators

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else ("end", "")

    def take(self, value=None):
        tok = self.peek()
        if value is not None and tok[1] != value:
            raise SyntaxError(f"expected {value!r}, got {tok[1]!r}")
        self.i += 1
        return tok

    def expr(self):
        sign = 1
        if self.peek() in (("op", "-"), ("op", "+")):
            sign = -1 if self.take()[1] == "-" else 1
        v = self.term()
        v = -v if sign < 0 else v
        while self.peek() in (("op", "+"), ("op", "-")):
            op = self.take()[1]
            w = self.term()
            v = v + w if op == "+" else v - w
        return v

    def term(self):
        v = self.power()
        while self.peek() in (("op", "*"), ("op", "/")):
            op = self.take()[1]
            w = self.power()
            if op == "*":
                v = v * w
            elif isinstance(v, int) and isinstance(w, int):
                v = int(v / w)                       # Fortran's integer division
            else:
                v = v / w
        return v

    def power(self):
        v = self.atom()
        if self.peek() == ("op", "**"):
            self.take()
            return v ** self.power()                 # right associative
        return v

    def args(self, close):
        out = [self.logical()]
        while self.peek() == ("op", ","):
            self.take()
            out.append(self.logical())
        self.take(close)
        return out

    def logical(self):
        """An argument: an expression, or a condition (MERGE's third)."""
        return self.joined(".OR.", lambda: self.joined(".AND.", self.relation))

    def joined(self, word, part):
        """parts joined by .OR. or .AND. (every part is evaluated, as Fortran may)."""
        v = part()
        while self.peek() == ("op", word):
            self.take()
            w = part()
            v = (v or w) if word == ".OR." else (v and w)
        return v

    def relation(self):
        v = self.expr()
        if self.peek()[1] in _RELATIONS:
            return _RELATIONS[self.take()[1]](v, self.expr())
        return v

    def atom(self):
        kind, value = self.take()
        if kind == "num":
            text = value.upper().replace("D", "E")
            if self.fortran and re.fullmatch(r"\d+", text):
                return int(text)
            return float(text)
        if value == "(":
            v = self.expr()
            self.take(")")
            return v
        if kind != "name":
            raise SyntaxError(f"unexpected {value!r}")
        nxt = self.peek()
        # Fortran calls its intrinsic whatever the program declares; ADDS has no ABS or
        # SIGN, so there a declared operator of that name is the one called.
        if nxt == ("op", "(") and value in FUNCTIONS and (
                self.fortran or value not in self.operators):
            self.take()
            return float(FUNCTIONS[value](*self.args(")")))
        if value in self.operators:                   # a declared operator
            at = ()
            if nxt == ("op", "["):
                self.take()
                at = tuple(int(a) for a in self.args("]"))
            self.take("(")
            args = self.args(")")
            if self.fortran:
                rank = self.operators[value][1]
                at, args = tuple(int(a) for a in args[:rank]), args[rank:]
            return float(self.operators[value][0](at, *args))
        if nxt in (("op", "("), ("op", "[")):
            self.take()
            index = tuple(int(a) for a in self.args(")" if nxt[1] == "(" else "]"))
            return self.env[(value, index)]
        return self.env[(value, ())]


def statements(code, fortran):
    """(target text, expression text) pairs of emitted code."""
    if not fortran:
        out = []
        for line in code.splitlines():
            line = line.split("%")[0].strip()
            if line and not line.startswith("array "):      # (declarations)
                assert line.endswith(";"), line
                target, expr = line[:-1].split(":=")
                out.append((target.strip(), expr.strip()))
        return out
    joined = []
    for line in code.splitlines():
        if not line or line[0] in "Cc*":
            continue
        assert len(line) <= 72, f"past column 72: {line!r}"
        if len(line) > 5 and line[5] not in " 0":
            assert line[5] == "&" and not line[:5].strip(), line
            joined[-1] += line[6:]
        else:
            assert not line[:6].strip(), f"statement before column 7: {line!r}"
            joined.append(line[6:])
    return [tuple(s.split("=", 1)) for s in joined]


def run(code, env, fortran=False, operators=None):
    """Evaluate emitted code.  `env` maps (NAME, index tuple) to the inputs' values and
    receives every assigned variable.  `operators`: NAME -> (function(at, *args), rank)."""
    env = dict(env)
    for target, expr in statements(code, fortran):
        toks = _tokens(target.strip())
        name = toks[0][1]
        index = tuple(int(v) for k, v in toks[1:] if k == "num")
        p = _Expr(_tokens(expr), env, fortran, operators or {})
        value = p.expr()
        assert p.i == len(p.t), f"could not read all of {expr!r}"
        env[(name, index)] = float(value)
    return env
