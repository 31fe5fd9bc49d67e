"""C from a graph of scalars: the C format of the emitter, compiled with the system's C
compiler and called through ctypes.

The generated function is self-contained (only ``<math.h>``)::

    void wg_f(const double *in, double *out)

with the inputs and outputs as flat arrays of doubles, in the order of the graph's inputs
and outputs (arrays in C order).  A Python function around it checks and unpacks the
arguments as the Python back-end does, fills ``in``, calls, and builds the result.

Values are typed as NumPy types them: a float64 is a ``double``, an int64 an ``int64_t``
and a bool an ``int`` (0 or 1), and integer arithmetic is NumPy's (`INTEGER_HELPERS`:
wrap-around, floor division and remainder with NumPy's signs and its zero for a division
by zero).  Every array the code keeps numbers in (``in``, ``out``, a loop's carry and
values) is an array of doubles, in which an int64 is held as its bits (``wg_f64``,
``wg_i64``: a ``memcpy``, one register move) as a loop's value holds it among floats
(`wengert.primitives.pack.Layout`): copies between them, one by one or by ``memcpy``, move
bits unchanged, and one layout serves every value.

A loop (`wg.scan`, `wengert.lax.while_loop`, kept as one node by ``float_form(...,
loops=True)``) is written as a C ``for`` or ``while`` loop over a static function of its
body; see `_looped`.

A gather at a traced index (``x[i]``, ``take``, a dynamic slice: take_along_axis, which
`scalarize` writes as ``checked_index`` and ``pick`` nodes) reads the array the operand's
elements are in, ``in[3+i]``, or a table of them (`CFormat._pick`); a scatter-add (its
transpose, put_along_axis: ``scatter_sum`` nodes) adds into a table of zeros.  Each index
is checked (``wg_index``), and the functions then take a third argument,
``int64_t *wg_bad``, where the first index out of bounds is noted, and return 2 (see
`checks_indices`): Python raises NumPy's IndexError.

C's arithmetic is IEEE's, as NumPy's is: ``log(-1)`` is nan and ``1/0`` is inf, with no
exception and no warning.  The compiler is ``$CC``, else ``cc``, ``gcc`` or ``clang``;
`CompilerNotFound` says what to do when there is none.
"""
from __future__ import annotations

import atexit
import ctypes
import hashlib
import math
import os
import platform
import re
import shutil
import struct
import subprocess
import tempfile
import warnings
from dataclasses import dataclass

import numpy as np

from ..graph.graph import Graph, ShapeDtype
from ..primitives import array as A, elements as E, scalar as S, special as SP
from ..primitives.nn import relu
from ..primitives.pack import bitcast, part
from ..primitives.registry import CONST, INPUT
from .emit import EmitError, Symbol, emit
from .formats import Format
from .names import C_RESERVED, Names
from . import python as py


class CompilerNotFound(RuntimeError):
    """No C compiler on this machine."""


_FUNCTIONS = {S.sqrt: "sqrt", S.cbrt: "cbrt", S.exp: "exp", S.log: "log", S.log10: "log10",
              S.sin: "sin", S.cos: "cos", S.tan: "tan", S.asin: "asin", S.acos: "acos",
              S.atan: "atan", S.atan2: "atan2", S.log1p: "log1p", S.expm1: "expm1",
              S.sinh: "sinh", S.cosh: "cosh", S.tanh: "tanh", S.pow: "pow", S.powi: "pow",
              S.abs: "fabs", S.sign: "wg_sign", S.maximum: "wg_max", S.minimum: "wg_min",
              S.asinh: "asinh", S.acosh: "acosh", S.atanh: "atanh", S.exp2: "exp2",
              S.log2: "log2", S.hypot: "hypot", S.fmod: "fmod", S.remainder: "wg_remainder",
              S.floor_divide: "wg_floor_divide",
              S.logaddexp: "wg_logaddexp", S.logaddexp2: "wg_logaddexp2", relu: "wg_relu",
              S.floor: "floor", S.ceil: "ceil", S.trunc: "trunc",
              SP.erf: "erf", SP.erfc: "erfc", SP.gammaln: "wg_lgamma", SP.gamma: "tgamma",
              SP.rgamma: "wg_rgamma",
              SP.expit: "wg_expit", SP.logit: "wg_logit", SP.ndtr: "wg_ndtr",
              SP.xlogy: "wg_xlogy", SP.xlog1py: "wg_xlog1py"}
_TEMPLATES = {S.cotan: "(1.0/tan({0}))", S.select: "({0} ? {1} : {2})",
              S.stop_gradient: "{0}", S.lt: "({0} < {1})", S.le: "({0} <= {1})",
              S.gt: "({0} > {1})", S.ge: "({0} >= {1})", S.eq: "({0} == {1})",
              S.ne: "({0} != {1})"}

# NumPy's conventions where C's functions differ: sign keeps 0 and nan, maximum and
# minimum propagate nan (fmax would drop it) and give y at a tie (0.0 and -0.0),
# remainder takes the sign of y (fmod: of x); and NumPy's functions C lacks, computed as
# NumPy computes them.
HELPERS = {
    "wg_sign": "static double wg_sign(double x) "
               "{ return x > 0 ? 1.0 : x < 0 ? -1.0 : x == 0 ? 0.0 : x; }",
    "wg_max": "static double wg_max(double x, double y) { return (x > y || x != x) ? x : y; }",
    "wg_min": "static double wg_min(double x, double y) { return (x < y || x != x) ? x : y; }",
    # (x itself unless x <= 0, so nan stays; one comparison, where the form with || was
    # a branch that random signs mispredict: a ReLU loop ran 4.6 times faster)
    "wg_relu": "static double wg_relu(double x) { return x <= 0.0 ? 0.0 : x; }",
    "wg_remainder": """\
static double wg_remainder(double x, double y)
{
    double m = fmod(x, y);
    if (y == 0.0 || m != m) return m;
    if (m == 0.0) return copysign(0.0, y);
    return (m < 0) != (y < 0) ? m + y : m;
}""",
    # (NumPy's npy_divmod: the quotient of x - fmod(x, y), floored by the remainder's sign
    # and snapped to the nearest integer; 0 with the sign of x / y)
    "wg_floor_divide": """\
static double wg_floor_divide(double x, double y)
{
    if (y == 0.0) return x / y;
    double m = fmod(x, y), q = (x - m) / y;
    if (m != 0.0 && (y < 0) != (m < 0)) q -= 1.0;
    if (q == 0.0) return copysign(0.0, x / y);
    double f = floor(q);
    return q - f > 0.5 ? f + 1.0 : f;
}""",
    "wg_logaddexp": """\
static double wg_logaddexp(double x, double y)
{
    double d = x - y;
    if (x == y) return x + 0.693147180559945309417232121458;
    return d > 0 ? x + log1p(exp(-d)) : d <= 0 ? y + log1p(exp(d)) : d;
}""",
    # SciPy's special functions that <math.h> can write (digamma, polygamma, erfinv,
    # log_ndtr, and betaln and beta without lgamma's cancellation, it cannot: apply refuses
    # them by name)
    "wg_rgamma": "static double wg_rgamma(double x) "
                 "{ return (x <= 0.0 && x == floor(x)) ? 0.0 : 1.0 / tgamma(x); }",
    # (as SciPy: gammaln(-inf) is -inf where lgamma's is inf; expit one formula; logit
    # from 0.3 to 0.65, where p/(1-p) is near 1, a difference of log1p's)
    "wg_lgamma": "static double wg_lgamma(double x) "
                 "{ return (x < 0 && isinf(x)) ? x : lgamma(x); }",
    "wg_expit": "static double wg_expit(double x) { return 1.0 / (1.0 + exp(-x)); }",
    "wg_logit": "static double wg_logit(double p) { return (p >= 0.3 && p <= 0.65) ? "
                "log1p(2.0 * (p - 0.5)) - log1p(-2.0 * (p - 0.5)) : log(p / (1.0 - p)); }",
    "wg_ndtr": "static double wg_ndtr(double x) "
               "{ return 0.5 * erfc(-x * 0.707106781186547524400844362105); }",
    "wg_xlogy": "static double wg_xlogy(double x, double y) "
                "{ return (x == 0.0 && y == y) ? 0.0 : x * log(y); }",
    "wg_xlog1py": "static double wg_xlog1py(double x, double y) "
                  "{ return (x == 0.0 && y == y) ? 0.0 : x * log1p(y); }",
    "wg_logaddexp2": """\
static double wg_logaddexp2(double x, double y)
{
    double d = x - y;
    if (x == y) return x + 1.0;
    return d > 0 ? x + log1p(exp2(-d)) * 1.442695040888963407359924681002
         : d <= 0 ? y + log1p(exp2(d)) * 1.442695040888963407359924681002 : d;
}""",
}


# int64 arithmetic as NumPy's: on uint64_t, where C's wraps (a signed overflow is
# undefined behaviour in C), and back by memcpy, which is defined for every bit pattern
# (a conversion of a uint64_t above INT64_MAX to int64_t is the compiler's choice); the
# division by zero NumPy gives 0 for (with a warning) is 0, and INT64_MIN // -1 wraps,
# where C's division traps.  (stdint.h and string.h come in with them.)
INTEGER_HELPERS = {
    "wg_i64": "static int64_t wg_i64(double x) { int64_t i; memcpy(&i, &x, sizeof i); "
              "return i; }",
    "wg_f64": "static double wg_f64(int64_t i) { double x; memcpy(&x, &i, sizeof x); "
              "return x; }",
    "wg_wrap": "static int64_t wg_wrap(uint64_t u) { int64_t i; memcpy(&i, &u, sizeof i); "
               "return i; }",
    "wg_iadd": "static int64_t wg_iadd(int64_t x, int64_t y) "
               "{ return wg_wrap((uint64_t)x + (uint64_t)y); }",
    "wg_isub": "static int64_t wg_isub(int64_t x, int64_t y) "
               "{ return wg_wrap((uint64_t)x - (uint64_t)y); }",
    "wg_imul": "static int64_t wg_imul(int64_t x, int64_t y) "
               "{ return wg_wrap((uint64_t)x * (uint64_t)y); }",
    "wg_ineg": "static int64_t wg_ineg(int64_t x) { return wg_wrap(-(uint64_t)x); }",
    "wg_iabs": "static int64_t wg_iabs(int64_t x) { return x < 0 ? wg_ineg(x) : x; }",
    "wg_isign": "static int64_t wg_isign(int64_t x) { return (x > 0) - (x < 0); }",
    "wg_imax": "static int64_t wg_imax(int64_t x, int64_t y) { return x > y ? x : y; }",
    "wg_imin": "static int64_t wg_imin(int64_t x, int64_t y) { return x < y ? x : y; }",
    "wg_ipow": """\
static int64_t wg_ipow(int64_t x, int64_t n)
{
    uint64_t r = 1, b = (uint64_t)x;
    for (; n > 0; n >>= 1) {
        if (n & 1) r *= b;
        b *= b;
    }
    return wg_wrap(r);
}""",
    "wg_ifloordiv": """\
static int64_t wg_ifloordiv(int64_t x, int64_t y)
{
    if (y == 0) return 0;
    if (y == -1) return wg_ineg(x);
    int64_t q = x / y;
    return (x % y != 0 && (x < 0) != (y < 0)) ? q - 1 : q;
}""",
    "wg_iremainder": """\
static int64_t wg_iremainder(int64_t x, int64_t y)
{
    if (y == 0 || y == -1) return 0;
    int64_t r = x % y;
    return (r != 0 && (r < 0) != (y < 0)) ? r + y : r;
}""",
    "wg_ifmod": "static int64_t wg_ifmod(int64_t x, int64_t y) "
                "{ return (y == 0 || y == -1) ? 0 : x % y; }",
    # (NumPy's astype: toward zero; nan, inf and values out of range give INT64_MIN, as
    # on x86-64, where C's conversion would be undefined)
    "wg_itrunc": "static int64_t wg_itrunc(double x) { return (x >= -9223372036854775808.0 "
                 "&& x < 9223372036854775808.0) ? (int64_t)x : INT64_MIN; }",
    # (a gather's index, counted from the start as NumPy reads it; one out of bounds is
    # noted, the first only, for the function to return 2 and Python to raise NumPy's
    # IndexError, and 0 stands in for it, so that no read leaves the array.  The noting
    # is a function of its own: inlined at each of hundreds of indices, its stores made
    # GCC's out-of-SSA pass take a minute on 300 of them)
    "wg_bad_index": """\
static void wg_bad_index(int64_t i, int64_t n, int64_t *bad)
{
    if (!bad[0]) { bad[0] = 1; bad[1] = i; bad[2] = n; }
}""",
    "wg_index": """\
static int64_t wg_index(int64_t i, int64_t n, int64_t *bad)
{
    const int64_t j = i < 0 ? i + n : i;
    if ((uint64_t)j < (uint64_t)n) return j;
    wg_bad_index(i, n, bad);
    return 0;
}""",
}

_INTEGER = {S.add: "wg_iadd", S.sub: "wg_isub", S.mul: "wg_imul", S.neg: "wg_ineg",
            S.abs: "wg_iabs", S.sign: "wg_isign", S.maximum: "wg_imax", S.minimum: "wg_imin",
            S.floor_divide: "wg_ifloordiv", S.remainder: "wg_iremainder",
            S.fmod: "wg_ifmod"}
# (NumPy's True + True is True: a bool's arithmetic is logic)
_BOOLEAN = {S.add: "({0} || {1})", S.mul: "({0} && {1})", S.maximum: "({0} || {1})",
            S.minimum: "({0} && {1})", S.abs: "({0})"}
_LOGICAL = {np.logical_and: "({0} && {1})", np.logical_or: "({0} || {1})",
            np.logical_xor: "(!({0}) != !({1}))", np.logical_not: "(!({0}))",
            np.bitwise_and: "({0} & {1})", np.bitwise_or: "({0} | {1})",
            np.bitwise_xor: "({0} ^ {1})", np.invert: "(~{0})"}
_AS_LOGIC = {np.bitwise_and: np.logical_and, np.bitwise_or: np.logical_or,
             np.bitwise_xor: np.logical_xor, np.invert: np.logical_not}
_INFIX = {S.add: "+", S.sub: "-", S.mul: "*", S.div: "/", S.neg: "-"}


@dataclass(frozen=True)
class Bits(Symbol):
    """An int64 read from an array of doubles, which holds it as its bits: ``in[3]`` is
    written ``wg_i64(in[3])``."""


def _slot(array, k, dtype) -> Symbol:
    """The symbol of element k of one of the code's arrays of doubles, holding a value of
    `dtype` (the emitter reads an output back by its symbol too)."""
    return Bits(array, (k,)) if dtype == np.int64 else Symbol(array, (k,))


def _ctype(node) -> str:
    """The C type of a temporary holding node's value."""
    return "int64_t" if node.dtype == np.int64 else "int" if node.dtype.kind == "b" else \
        "double"


class CFormat(Format):
    """C99: ``in[3]``, ``out[0]``, ``pow(x, 3)``; temporaries are declared where they are
    assigned (`function_source` writes ``const double``, or ``const int64_t`` and ``const
    int`` for int64 and bool values), integer arithmetic is `INTEGER_HELPERS`'.

    Example:
        >>> import wengert as wg
        >>> from wengert.codegen.emit import emit, Symbol
        >>> g = wg.trace(lambda x: wg.math.sin(x) ** 3 / 2, 0.5)
        >>> print(emit(g, g.inputs, [(Symbol("out", (0,)), g.outputs[0])], CFormat(),
        ...            names={g.inputs[0].index: Symbol("in", (0,))}))
        out[0] = pow(sin(in[0]),3)/2.0;
    """

    power = None
    max_expression = 2000

    def __init__(self):
        self._tables = {}           # (C type, static, elements' texts) -> table, per block
        self._pending = []          # tables the last text reads, not yet declared
        self._made = 0              # tables named in the function (wg_t1, wg_t2, ...)
        self._on_stack = 0          # numbers in its tables of computed elements

    def block(self):
        """Start a block of statements (a function's, or a segment's of one with loops):
        the tables of the blocks before are out of scope here."""
        self._tables = {}

    def declarations(self) -> list:
        pending, self._pending = self._pending, []
        return pending

    def cast(self, node, arg):
        # a bool or an integer is a C int or int64_t: a quotient of two would be integer
        # division, where NumPy's true_divide is a float's
        return "(double)" if node.op is S.div and arg.dtype.kind in "biu" else None

    def symbol(self, sym) -> str:
        text = f"{sym.name}[{sym.index[0]}]" if sym.index else sym.name
        return f"wg_i64({text})" if isinstance(sym, Bits) else text

    def number(self, value) -> str:
        if isinstance(value, (bool, np.bool_)):
            return "1" if value else "0"
        if isinstance(value, (int, np.integer)) and -2 ** 63 <= value < 2 ** 63:
            # (-9223372036854775808 would be the negation of a literal too large for
            # int64_t)
            return "(-9223372036854775807-1)" if value == -2 ** 63 else str(int(value))
        value = float(value)
        if math.isnan(value):
            if struct.unpack("<q", struct.pack("<d", abs(value)))[0] != _QUIET_NAN:
                raise EmitError("the C back-end writes a constant nan as NAN, and this one "
                                "has other bits (an int64's, as a loop holds it): compile "
                                "with the Python back-end")
            return "NAN"
        if math.isinf(value):
            return "INFINITY" if value > 0 else "-INFINITY"
        text = repr(value)
        return text if any(c in text for c in ".en") else text + ".0"

    def method(self, node, args):
        op, dtype = node.op, node.dtype
        if op is E.checked_index:
            return f"wg_index({args[0]},{node.params['size']},wg_bad)"
        if op is E.pick:
            return self._pick(node, args)
        if op is E.scatter_sum:
            return self._scatter_sum(node, args)
        if op is A.astype:
            return _conversion(node, args[0])
        if op is bitcast:
            return f"wg_i64({args[0]})" if dtype == np.int64 else f"wg_f64({args[0]})"
        if op is S.numpy_ufunc:
            return self._ufunc(node, args)
        if dtype == np.int64:
            return _integer(op, node.params, args)
        if dtype.kind == "b" and op in _BOOLEAN:
            return _BOOLEAN[op].format(*args)
        return None

    def _pick(self, node, args):
        """The C of ``pick`` (a gather's element at a traced index, `scalarize`): a read
        of the array its elements are in, where they are a run of one array's elements
        at equal steps (an argument's, a loop body's input's: ``in[3+4*i]``); else a read
        of a table of them, declared once per block (`declarations`), ``static`` where
        they are constants."""
        at, lane = args[0], args[1:]
        at = at if _atomic(at) else f"({at})"
        run = _run_of(lane)
        if run is not None:
            array, start, step, bits = run
            offset = at if step == 1 else f"{step}*{at}"
            text = f"{array}[{start}+{offset}]" if start else f"{array}[{offset}]"
            return f"wg_i64({text})" if bits else text
        static = all(a.op is CONST for a in node.args[1:])
        table = self._table((_ctype(node), static, tuple(lane)), len(lane), static)
        if table is not None:
            self._pending.append((table, "{" + ", ".join(lane) + "}"))
        return f"{self._tables[(_ctype(node), static, tuple(lane))]}[{at}]"

    def _scatter_sum(self, node, args):
        """The C of ``scatter_sum`` (an element of a scatter-add's lane, `scalarize`): a
        read of a table of zeros that each value is added into at its index, declared
        once per block for the elements of the lane."""
        size, m = node.params["size"], len(args) // 2
        key = ("scatter", size, tuple(args))
        table = self._table(key, size, False)
        if table is not None:
            table.adds = list(zip(args[:m], args[m:]))
            self._pending.append((table, "{0}"))
        return f"{self._tables[key]}[{node.params['at']}]"

    def _table(self, key, size, static):
        """A new `Table` for `key` in this block, None where it has one already."""
        if key in self._tables:
            return None
        if not static:
            self._on_stack += size
            if self._on_stack > _TABLES_ON_STACK:
                raise EmitError(f"the C back-end gathers from arrays of computed values (and "
                                "adds a scatter's into one) on the stack, up to "
                                f"{_TABLES_ON_STACK:,} numbers in a function, and this one "
                                "needs more: compile with the Python back-end")
        self._made += 1
        self._tables[key] = table = Table(f"wg_t{self._made}", size, static)
        return table

    def _ufunc(self, node, args):
        """The C of ``numpy_ufunc``, NumPy's ufunc on integers and bools (how
        wengert.numpy records ``i // j``, ``maximum(i, j)``, ``sin(i)`` of int64 values):
        as the primitive of the same ufunc, an integer's (`_integer`), a bool's logic, or
        a float's of its arguments as doubles, which is how NumPy computes it."""
        ufunc, dtype = node.params["ufunc"], node.dtype
        prim = _ufunc_primitives().get(ufunc)
        if ufunc is np.positive:
            return f"({args[0]})"
        if ufunc is np.square and dtype == np.int64:
            return f"wg_ipow({args[0]},2)"
        if dtype.kind == "b" and ufunc in _LOGICAL:
            return _LOGICAL[_AS_LOGIC.get(ufunc, ufunc)].format(*args)   # (~True is False)
        if dtype.kind == "b" and prim in _TEMPLATES:                      # (comparisons)
            return _TEMPLATES[prim].format(*args)
        if dtype == np.int64 and ufunc in _LOGICAL:
            # (a bool argument may be a double in the code: 0.0 or 1.0)
            return _LOGICAL[ufunc].format(*[a if n.dtype == np.int64 else f"((int64_t)({a}))"
                                            for a, n in zip(args, node.args)])
        if dtype == np.int64 and prim is not None:
            return _integer(prim, {}, args)
        if dtype == np.float64 and prim is not None:
            doubles = [f"((double)({a}))" for a in args]
            if prim in _INFIX:
                return f"({_INFIX[prim].join(doubles)})" if len(doubles) == 2 else \
                    f"(-{doubles[0]})"
            return self.apply(prim, doubles, {})
        name = getattr(ufunc, "__name__", "?")
        raise EmitError(f"the C back-end has no spelling for NumPy's {name} of "
                        f"{', '.join(str(a.dtype) for a in node.args)} values: of NumPy's "
                        "ufuncs on integers it writes the arithmetic, logic and math "
                        "functions of int64 values and bools; compile with the Python "
                        "back-end")

    def apply(self, op, args, params) -> str:
        if op in _TEMPLATES:
            return _TEMPLATES[op].format(*args)
        if op is S.round and not params.get("decimals"):
            return f"nearbyint({args[0]})"      # half to even, as NumPy's round
        name = _FUNCTIONS.get(op)
        if name is None and getattr(SP, op.name, None) is op:
            raise EmitError(f"the C back-end has no spelling for SciPy's {op.name!r}: "
                            "<math.h> has no such function; compile with the Python "
                            "back-end (wg.compile without backend='c')")
        if name is None:
            raise EmitError(f"the C back-end has no spelling for primitive {op.name!r}: it "
                            "writes scalar arithmetic and the functions of <math.h>")
        return f"{name}({','.join(args)})"

    def statement(self, target, expr) -> list:
        return [f"{target} = {expr};"]

    def comment(self, text) -> list:
        return ["/* " + line.replace("*/", "* /") + " */" for line in text.splitlines()]


_QUIET_NAN = 0x7FF8000000000000

#: The most numbers a function keeps in its tables of computed elements to gather from
#: (512 KiB of doubles: a thread's stack has megabytes).
_TABLES_ON_STACK = 65536


class Table(str):
    """The name of a C table of a gather's elements (`CFormat._pick`), as the target of
    its declaration: with its length, whether it is ``static`` (of constants), and for a
    scatter's (`CFormat._scatter_sum`) the ``(index, value)`` texts added into it.

    Example:
        >>> t = Table("wg_t1", 4, True)
        >>> t, t.size, t.static, t.adds
        ('wg_t1', 4, True, None)
    """

    def __new__(cls, name, size, static):
        table = super().__new__(cls, name)
        table.size, table.static, table.adds = size, static, None
        return table


_ELEMENT = re.compile(r"(wg_i64\()?([A-Za-z_]\w*)\[(\d+)\](\))?")


def _run_of(texts):
    """``(array, start, step, bits)`` where `texts` are the C of the elements of one
    array at ``start``, ``start + step``, ... (``in[3]``, ``in[7]``, ...; `bits`: each
    read as ``wg_i64(in[3])``), else None."""
    found = [_ELEMENT.fullmatch(t) for t in texts]
    if not all(found):
        return None
    names = {(m[2], bool(m[1]), bool(m[4])) for m in found}
    if len(names) != 1:
        return None
    array, bits, closed = names.pop()
    if bits != closed:
        return None
    at = [int(m[3]) for m in found]
    step = at[1] - at[0] if len(at) > 1 else 1
    if step <= 0 or any(b - a != step for a, b in zip(at, at[1:])):
        return None
    return array, at[0], step, bits


def _atomic(text) -> bool:
    """Whether C text needs no parentheses as an operand: a name, an array element or
    a call."""
    if re.fullmatch(r"[\w\[\]]+", text):
        return True
    head = re.match(r"\w+\(", text)
    if not head or not text.endswith(")"):
        return False
    depth = 0
    for k in range(head.end() - 1, len(text)):
        depth += {"(": 1, ")": -1}.get(text[k], 0)
        if depth == 0:
            return k == len(text) - 1
    return False


def _integer(op, params, args):
    """The C of primitive `op` giving an int64 (None where the format's templates write
    it: select and stop_gradient); `EmitError` for what it does not write."""
    if op in _INTEGER:
        return f"{_INTEGER[op]}({','.join(args)})"
    if op is S.powi and params["n"] >= 0:
        return f"wg_ipow({args[0]},{params['n']})"
    if op in (S.floor, S.ceil, S.trunc) or op is S.round and \
            (params.get("decimals") or 0) >= 0:
        return f"({args[0]})"               # (an integer rounds to itself)
    if op is S.select or op is S.stop_gradient:
        return None
    raise EmitError(f"the C back-end writes no {op.name} of int64 values: it writes their "
                    "+, -, *, //, %, fmod, abs, sign, maximum, minimum, powers with a fixed "
                    "exponent, comparisons, logic and conversions; convert to float64 "
                    "(astype) or compile with the Python back-end")


_UFUNCS = {}


def _ufunc_primitives():
    """{NumPy ufunc: the scalar primitive that computes it}, made when first asked."""
    if not _UFUNCS:
        from ..primitives.registry import Primitive
        _UFUNCS.update({op.impl: op for op in vars(S).values()
                        if isinstance(op, Primitive) and isinstance(op.impl, np.ufunc)})
        _UFUNCS.update({np.fmax: S.maximum, np.fmin: S.minimum})     # (no nan in an int)
    return _UFUNCS


def _conversion(node, arg):
    """The C of ``astype`` as `scalarize` leaves it: to int64 (from float64 toward zero,
    from bool or a narrower integer as it is) or to float64 (from int64 or bool)."""
    src, dst = node.args[0].dtype, node.dtype
    if dst == np.int64:
        return f"wg_itrunc({arg})" if src == np.float64 else f"((int64_t)({arg}))"
    if dst == np.float64 and (src == np.int64 or src.kind == "b"):
        return f"((double)({arg}))"
    raise EmitError(f"the C back-end writes no conversion from {src} to {dst}")


def function_source(scalar, name) -> str:
    """C source of a function ``void name(const double *in, double *out)`` computing the
    outputs of the scalar graph (a `Scalarized`) from its inputs.

    A graph with loops (scans and while loops, scalarised with ``loops=True``) gives a C
    loop for each, over a static function of its body (see `_looped`), and the function
    returns an int: 0, or 1 if it could not allocate the loops' arrays.

    Example:
        >>> import wengert as wg
        >>> from wengert.codegen.scalarize import scalarize
        >>> g = wg.trace(lambda x, y: wg.math.maximum(x, y) * y, 1.0, 2.0)
        >>> print(function_source(scalarize(g), "wg_f"))
        /* wengert: 1 outputs from 2 inputs */
        #include <math.h>
        <BLANKLINE>
        static double wg_max(double x, double y) { return (x > y || x != x) ? x : y; }
        <BLANKLINE>
        void wg_f(const double *restrict in, double *restrict out)
        {
            out[0] = in[1]*wg_max(in[0],in[1]);
        }
        <BLANKLINE>
    """
    graph = scalar.graph
    definitions = _definitions(scalar, name, "")
    text = "\n".join(definitions)
    helpers = _integer_helpers(text) + [h for h_name, h in HELPERS.items()
                                        if h_name + "(" in text]
    everything = "\n".join(helpers + [text])
    includes = ["#include <math.h>"]
    if scalar.loops or "malloc(" in text:
        includes += ["#include <stdlib.h>", "#include <string.h>"]
    elif "memcpy(" in everything:
        includes += ["#include <string.h>"]
    if "int64_t" in everything:
        includes += ["#include <stdint.h>"]
    return "\n".join([
        f"/* wengert: {len(graph.outputs)} outputs from {len(graph.inputs)} inputs */",
        *includes, "", *(helpers + [""] if helpers else []), *definitions])


def _integer_helpers(text):
    """The integer helpers `text` calls and those they call in turn (wg_iabs calls
    wg_ineg, which calls wg_wrap), in the table's order, which defines each before use."""
    names, calls = set(), text
    while True:
        found = {h for h in INTEGER_HELPERS if h + "(" in calls} - names
        if not found:
            return [code for h, code in INTEGER_HELPERS.items() if h in names]
        names |= found
        calls = "\n".join(INTEGER_HELPERS[h] for h in found)


def _definitions(scalar, name, storage):
    """The C functions for a scalar graph: its loops' bodies (and theirs), then its own
    function `name` (``static`` where `storage` says so)."""
    graph = scalar.graph
    fmt = CFormat()
    if _long(scalar):
        return _in_parts(scalar, name, storage, fmt)
    if not scalar.loops:
        names = {n.index: _slot("in", k, n.dtype) for k, n in enumerate(graph.inputs)}
        outs = [(_slot("out", k, o.dtype), o) for k, o in enumerate(graph.outputs)]
        code = _statements(graph, graph.inputs, outs, names, fmt)
        if not checks_indices(scalar):
            return [f"{storage}void {name}(const double *restrict in, double *restrict out)",
                    "{", *code, "}", ""]
        return [f"{storage}int {name}({_PARAMETERS}{_BAD})", "{", *code,
                "    return wg_bad[0] ? 2 : 0;", "}", ""]
    return _looped(scalar, name, storage, fmt)


_PARAMETERS = "const double *restrict in, double *restrict out"
_BAD = ", int64_t *restrict wg_bad"

#: Straight-line code of more nodes than this is cut into functions of this many
#: (`_in_parts`): gcc's optimiser takes time quadratic in the length of a function, and
#: linear in the number of functions.  Measured with gcc 12 -O2: the gradient of a chain
#: of 4,000 sines took 16 s to compile as one function, 7.3 s in parts; of 16,000, 290 s
#: as one; a Rosenbrock gradient of 1,000 elements 6.0 s, 1.3 s in parts, and ran as fast.
PART_NODES = 1000


def _long(scalar) -> bool:
    """Whether a `Scalarized` is straight-line code (no loops) of more than `PART_NODES`
    operations, written in parts (`_in_parts`): its function then returns an int."""
    return not scalar.loops and sum(n.op is not INPUT and n.op is not CONST
                                    for n in scalar.graph.live_nodes()) > PART_NODES


def _parts(scalar) -> list:
    """The operations of a `_long` `Scalarized` in runs of `PART_NODES` for `_in_parts`,
    each reading only what it or earlier runs make."""
    graph = scalar.graph
    # Each output's cone in turn, depth first (a loop, not recursion: graphs are deep):
    # what an output needs is made just before it, so a run shares few values with the
    # next (in the graph's order, a gradient's forward values would all be made first
    # and read runs later, each kept in memory).
    order, seen = [], set()
    for out in graph.outputs:
        todo = [(out, False)]
        while todo:
            n, ready = todo.pop()
            if n.index in seen or n.op is INPUT or n.op is CONST:
                continue
            if ready:
                seen.add(n.index)
                order.append(n)
                continue
            todo.append((n, True))
            todo.extend((a, False) for a in reversed(n.args) if a.index not in seen)
    return [order[k:k + PART_NODES] for k in range(0, len(order), PART_NODES)]


def _in_parts(scalar, name, storage, fmt):
    """Long straight-line code as a ``static`` function per run of `_parts` (kept out of
    line: inlined, they would be the one long function again), and `name` calling them in
    turn.  A value one part makes and a later one reads is kept in ``wg_v``, an array
    on `name`'s stack, or allocated where it is long (`name` returns 1 where it cannot
    be: `entry` raises MemoryError)."""
    graph = scalar.graph
    runs = _parts(scalar)
    part_of = {n.index: s for s, run in enumerate(runs) for n in run}
    kept = {}                                       # node index -> its slot in wg_v
    for s, run in enumerate(runs):
        for a in (a for n in run for a in n.args):
            if part_of.get(a.index, s) < s and a.index not in kept:
                kept[a.index] = len(kept)
    where = {n.index: ("in", k) for k, n in enumerate(graph.inputs)}
    where.update((i, ("wg_v", k)) for i, k in kept.items())
    checks = checks_indices(scalar)
    head = f"{_PARAMETERS}, double *restrict wg_v{_BAD if checks else ''}"
    lines, calls = [], []
    for s, run in enumerate(runs):
        new, made, names, inputs, node_of = _subgraph(run, where)
        last = s == len(runs) - 1        # (the last writes the outputs made before it)
        outs = [(_slot("out", k, o.dtype), node_of(o)) for k, o in enumerate(graph.outputs)
                if part_of.get(o.index) == s or last and o.index not in part_of]
        outs += [(_slot("wg_v", kept[n.index], n.dtype), made[n.index]) for n in run
                 if n.index in kept]
        part = f"{name}_part{s + 1}"
        lines += [f"static __attribute__((noinline)) void {part}({head})", "{",
                  *_statements(new, inputs, outs, names, fmt), "}", ""]
        calls.append(f"    {part}(in, out, wg_v{', wg_bad' if checks else ''});")
    size = max(len(kept), 1)
    if size <= _ON_STACK:
        memory, free = [f"    double wg_v[{size}];"], []
    else:
        memory = [f"    double *wg_v = malloc({size} * sizeof(double));",
                  "    if (!wg_v) return 1;"]
        free = ["    free(wg_v);"]
    return lines + [f"{storage}int {name}({_PARAMETERS}{_BAD if checks else ''})", "{",
                    *memory, *calls, *free,
                    f"    return {'wg_bad[0] ? 2 : 0' if checks else '0'};", "}", ""]


def checks_indices(scalar) -> bool:
    """Whether the code of a `Scalarized` (its loops' bodies included) checks a traced
    index (``checked_index``): its functions then take ``int64_t *wg_bad``, where the
    first index out of bounds is noted (``{1, index, length}``), and return 2 when there
    is one.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.codegen.scalarize import float_form
        >>> g = wg.trace(lambda x, i: x[i], np.ones(3), np.int64(0))
        >>> checks_indices(float_form(g, integers=True))
        True
    """
    todo = [scalar]
    while todo:
        s = todo.pop()
        if any(n.op is E.checked_index for n in s.graph.live_nodes()):
            return True
        todo.extend(s.loops.values())
    return False


def _statements(graph, inputs, outs, names, fmt, indent="    "):
    """Straight-line C for `outs` ((Symbol, node) pairs) of `graph`, a block of its
    own."""
    fmt.block()
    code = emit(graph, inputs, outs, fmt, names=names, rewrite=False)  # see emit.py
    lines = []
    for st in code.statements:
        if isinstance(st.target, Table) and st.target.adds is not None:
            lines.append(f"{indent}double {st.target}[{st.target.size}] = {st.expr};")
            lines += [f"{indent}{st.target}[{w}] += {g};" for w, g in st.target.adds]
        elif isinstance(st.target, Table):
            static = "static " if st.target.static else ""
            lines.append(f"{indent}{static}const {_ctype(st.node)} {st.target}"
                         f"[{st.target.size}] = {st.expr};")
        elif st.temporary:
            lines.append(f"{indent}const {_ctype(st.node)} {st.target} = {st.expr};")
        else:           # (into an array of doubles: an int64 as its bits)
            expr = f"wg_f64({st.expr})" if st.node.dtype == np.int64 else st.expr
            target = fmt.symbol(Symbol(st.target.name, st.target.index))
            lines.extend(indent + line for line in fmt.statement(target, expr))
    return lines


def _looped(scalar, name, storage, fmt):
    """The C functions of a scalar graph with loops: each loop's body as a static
    function, then ``int name(in, out)``.

    The graph is cut at its loops into segments of straight-line code: the first
    computes the arguments of the first loop, then the loop runs, and so on; the last
    computes the outputs.  Each loop's arguments and value are arrays (``wg_a1``,
    ``wg_l1``: the value's elements, which ``part`` nodes read, are ``wg_l1[k]``); a value
    computed in one segment and read in a later one is kept in ``wg_v``.  All of them are
    one allocation, made when the function is called, since a loop's arrays can be too
    large for the stack.  A run of arguments or outputs that is a run of some array's
    elements (or of constants) is copied with one ``memcpy``."""
    graph = scalar.graph
    live = graph.live_nodes()
    loops = [n for n in live if n.op in scalar.loops]
    lines, body_of = [], {}
    for n in loops:
        if n.op not in body_of:
            body_of[n.op] = f"{name}_loop{len(body_of) + 1}"
            lines += _definitions(scalar.loops[n.op], body_of[n.op], "static ")
    where = {n.index: ("in", k) for k, n in enumerate(graph.inputs)}
    of_loop = {n.index: j for j, n in enumerate(loops, 1)}
    for n in live:                                  # a loop's elements, as ``part`` reads
        if n.op is part and n.args[0].index in of_loop:
            where[n.index] = (f"wg_l{of_loop[n.args[0].index]}", n.params["start"])
    # segment s computes loop s's arguments (the last: the outputs), from what is known
    targets = [list(n.args) for n in loops] + [list(graph.outputs)]
    segment, members = {}, []
    for s, wanted in enumerate(targets):
        mine, todo = [], list(wanted)
        while todo:                         # (a loop, not recursion: graphs are deep)
            n = todo.pop()
            if n.index in segment or n.index in where or n.op is CONST:
                continue
            if n.op is INPUT:
                raise EmitError(f"an input, {n.label()}, that is not the graph's")
            segment[n.index] = s
            mine.append(n)
            todo.extend(n.args)
        members.append(sorted(mine, key=lambda n: n.index))
    kept = {}                                # node index -> its slot in wg_v
    for s, (mine, wanted) in enumerate(zip(members, targets)):
        for n in [a for m in mine for a in m.args] + wanted:
            if segment.get(n.index, s) < s and n.index not in kept:
                kept[n.index] = len(kept)
    # the allocation: wg_v, then each loop's arguments, value, and body's in and out
    arrays, size = [("wg_v", len(kept))], len(kept)
    for j, n in enumerate(loops, 1):
        body = scalar.loops[n.op].graph
        local = _local(n.op.loop)
        for array, count in ((f"wg_a{j}", len(n.args)), (f"wg_l{j}", n.shape[0]),
                             (f"wg_io{j}", 0 if local else len(body.inputs)),
                             (f"wg_res{j}", 0 if local else len(body.outputs))):
            arrays.append((array, count))
            size += count
    checks = checks_indices(scalar)
    code = [f"{storage}int {name}({_PARAMETERS}{_BAD if checks else ''})", "{",
            f"    double *wg_mem = malloc({size + 1} * sizeof(double));",
            "    if (!wg_mem) return 1;"]
    offset = 0
    for array, count in arrays:
        if count:
            code.append(f"    double *const {array} = " +
                        (f"wg_mem + {offset};" if offset else "wg_mem;"))
        offset += count
    tables, steps = [], []
    for s, (mine, wanted) in enumerate(zip(members, targets)):
        dest = f"wg_a{s + 1}" if s < len(loops) else "out"
        steps += ["    {", *_segment(graph, mine, s, wanted, dest, where, segment, kept,
                                 tables, fmt), "    }"]
        if any(m.op is E.checked_index for m in mine):
            # (an index out of bounds: stop here, before a loop runs on what it read)
            steps.append("    if (wg_bad[0]) { free(wg_mem); return 2; }")
        for i in kept:          # later segments read this segment's kept values there
            if segment[i] == s:
                where[i] = ("wg_v", kept[i])
        if s < len(loops):
            n = loops[s]
            body = scalar.loops[n.op]
            steps += _loop_block(n.op.loop, s + 1, body_of[n.op], bool(body.loops),
                                 checks_indices(body))
    # (the tables of constants inside the function: a body's function has its own)
    return lines + code + ["    " + t for t in tables] + steps + [
        "    free(wg_mem);", "    return 0;", "}", ""]


def _subgraph(nodes, where):
    """`nodes` (in the graph's order) remade in a graph of their own, whose straight-line
    C is one segment or part of a function: a value made before them is an input there,
    read at ``where[its index]`` (an array and an offset).  Returns that graph, ``made``
    (index -> new node), the inputs' symbols, the inputs, and ``node_of``, which remakes
    one more node read (a constant, or a value made before) on demand."""
    new, made, names, inputs = Graph(optimize=False), {}, {}, []

    def node_of(a):
        if a.index not in made:
            if a.op is CONST:
                made[a.index] = new.remake(a, [])
            else:                               # (known before: an input here)
                made[a.index] = new.input(ShapeDtype((), a.dtype), f"in{a.index}")
                names[made[a.index].index] = _slot(*where[a.index], a.dtype)
                inputs.append(made[a.index])
        return made[a.index]

    for n in nodes:
        made[n.index] = new.remake(n, [node_of(a) for a in n.args])
    return new, made, names, inputs, node_of


def _segment(graph, mine, s, wanted, dest, where, segment, kept, tables, fmt):
    """The statements of one segment: the nodes `mine`, the `wanted` values written to
    ``dest[0], dest[1], ...``, and the values later segments read written to wg_v."""
    new, made, names, inputs, node_of = _subgraph(mine, where)
    outs, lines = [], []
    # (a run of int64 constants is a table of int64_t, copied as bits)
    runs = _runs([None if segment.get(n.index) == s else
                  (_CONST_OF[n.dtype == np.int64], n.value) if n.op is CONST else
                  where[n.index] for n in wanted])
    for start, count, source in runs:
        if source is None or count < (8 if source[0] in _CONSTS else 2):
            outs += [(_slot(dest, k, wanted[k].dtype), node_of(wanted[k]))
                     for k in range(start, start + count)]
        elif source[0] in _CONSTS:
            table = f"wg_k{len(tables) + 1}"
            values = ", ".join(fmt.number(wanted[k].value)
                               for k in range(start, start + count))
            ctype = "int64_t" if source[0] == "iconst" else "double"
            tables.append(f"static const {ctype} {table}[{count}] = {{{values}}};")
            lines += ["        " + c for c in _copy(dest, start, table, 0, count,
                                                    source[0] == "iconst")]
        else:
            lines += ["        " + c for c in _copy(dest, start, *source, count)]
    outs += [(_slot("wg_v", kept[i], made[i].dtype), made[i]) for i in sorted(kept)
             if segment[i] == s]
    return (_statements(new, inputs, outs, names, fmt, " " * 8) if outs else []) + lines


_CONST_OF = {False: "const", True: "iconst"}
_CONSTS = frozenset(_CONST_OF.values())


def _runs(sources):
    """`sources` (per element: None, ``("const", value)``, ``("iconst", value)`` for an
    int64, or ``(array, offset)``) in runs ``(start, count, source of the first)`` of
    elements that one copy can move."""
    runs = []
    for k, src in enumerate(sources):
        if runs and src is not None and runs[-1][2] is not None:
            start, count, first = runs[-1]
            if first[0] in _CONSTS and src[0] == first[0] or \
                    src[0] == first[0] and src[1] == first[1] + count:
                runs[-1] = (start, count + 1, first)
                continue
        runs.append((k, 1, src))
    return runs


def _copy(dst, a, src, b, n, bits=False) -> list:
    """C statements copying n doubles from ``src + b`` to ``dst + a`` (offsets: ints or
    C text).  A few are copied one by one: a loop's carry so copied stays in registers,
    where a memcpy keeps it in memory (twice the time per step).  With `bits`, `src` is
    of int64_t, whose bits a memcpy moves."""
    if n > _ONE_BY_ONE or bits:
        at = lambda p, k: p if k == 0 else f"{p} + {k}"
        return [f"memcpy({at(dst, a)}, {at(src, b)}, {n} * sizeof(double));"]

    def at(p, k, i):
        return f"{p}[{k + i}]" if type(k) is int else f"{p}[{k} + {i}]" if i else f"{p}[{k}]"
    return [f"{at(dst, a, i)} = {at(src, b, i)};" for i in range(n)]


_ONE_BY_ONE = 8


def _row(start, row) -> str:
    """C text of the offset of row ``wg_s`` of rows of `row` elements from `start`."""
    step = "wg_s" if row == 1 else f"wg_s * {row}"
    return f"{start} + {step}" if start else step


def _local(loop) -> bool:
    """Whether a loop's body takes its inputs and outputs in local arrays (up to
    `_ON_STACK` numbers in all), which the compiler can keep in registers once it has
    inlined the body: in the allocation, any store might change them."""
    return _size(loop.body.inputs + loop.body.outputs) <= _ON_STACK


_ON_STACK = 4096


def _loop_block(loop, j, body, allocates, checks=False):
    """The C of loop `j` (a `Scan` or a `While`): its carry in the body's input array, a
    call of `body` per step, the final carry at the value's head.  A scan's steps are a
    ``for`` (`_scan_steps`); a while loop's a ``while`` on its test, which the body gives
    after the new carry, as the Python float form's ``while go:`` (`python.loop_source`).
    A body that `allocates` (has loops of its own) returns 1 where it could not, one that
    `checks` indices (`checks_indices`) 2 where one is out of bounds: the loop stops
    there, and the function returns the same."""
    ins, outs = loop.body.inputs, loop.body.outputs
    fixed = _size(ins[:loop.n_consts + loop.n_carry])       # (elements)
    head, carried = _size(ins[:loop.n_consts]), _size(outs[:loop.n_carry])
    a, l, io, res = f"wg_a{j}", f"wg_l{j}", f"wg_io{j}", f"wg_res{j}"
    call = f"{body}({io}, {res}{', wg_bad' if checks else ''})"
    code = "wg_bad[0] ? 2 : 1" if allocates and checks else "1" if allocates else "2"
    call = f"if ({call}) {{ free(wg_mem); return {code}; }}" if allocates or checks \
        else call + ";"
    step = [call] + _copy(io, head, res, 0, carried)        # (the new carry read next)
    if loop.until:
        title = "while its test holds"
        steps = [f"int wg_go = {a}[{fixed}] != 0.0;", "while (wg_go) {",
                 *_indented(step + [f"wg_go = {res}[{carried}] != 0.0;"]), "}"]
    else:
        title = f"{loop.length} steps"
        steps = _scan_steps(loop, a, l, io, res, step)
    block = []
    if _local(loop):
        block.append(f"double {io}[{max(_size(ins), 1)}], {res}[{max(_size(outs), 1)}];")
    block += _copy(io, 0, a, 0, fixed) + steps + _copy(l, 0, io, head, carried)
    return [f"    /* {loop.name}: {title} */", "    {", *_indented(block, 2), "    }"]


def _scan_steps(scan, a, l, io, res, step):
    """The ``for`` of a scan's steps (`_loop_block`): each copies its rows of the xs
    (after the consts and the first carry in ``a``) to the body's inputs after the carry,
    runs `step`, and stores the ys (after the final carry in ``l``) row by row."""
    ins, outs = scan.body.inputs, scan.body.outputs
    k1, nc = scan.n_consts + scan.n_carry, scan.n_carry
    first = [f"const long wg_s = {scan.length - 1} - wg_i;" if scan.reverse else
             "const long wg_s = wg_i;"]
    offset = source = _size(ins[:k1])
    for x in ins[k1:]:
        first += _copy(io, offset, a, _row(source, x.size), x.size)
        offset, source = offset + x.size, source + scan.length * x.size
    last = []
    offset = target = _size(outs[:nc])
    for y in outs[nc:]:
        last += _copy(l, _row(target, y.size), res, offset, y.size)
        offset, target = offset + y.size, target + scan.length * y.size
    return [f"for (long wg_i = 0; wg_i < {scan.length}; ++wg_i) {{",
            *_indented(first + step + last), "}"]


def _size(nodes):
    """The number of elements of `nodes`' values."""
    return sum(n.size for n in nodes)


def _indented(lines, levels=1):
    return ["    " * levels + line for line in lines]


# --------------------------------------------------------------------------------------
# compiling and loading
# --------------------------------------------------------------------------------------
def compiler() -> str:
    """The C compiler to use: $CC, else cc, gcc or clang on the PATH (`CompilerNotFound`
    if there is none).

    Example:
        >>> import os
        >>> try:
        ...     found = os.path.isabs(compiler())
        ... except CompilerNotFound:
        ...     found = True
        >>> found
        True
    """
    for cc in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cc and shutil.which(cc):
            return shutil.which(cc)
    raise CompilerNotFound(
        "backend='c' needs a C compiler, and none was found (tried $CC, cc, gcc, clang). "
        "Install one (Debian/Ubuntu: apt-get install gcc; macOS: xcode-select --install), "
        "or use the Python back-end: wg.compile(f, ...) without backend='c'.")


_build_dir = None
_loaded = {}


def load(source, name):
    """Compile C source into a shared library (once per source in a process) and return
    its function `name`, ready to call with two ctypes double arrays.

    Example:
        >>> import ctypes
        >>> src = "void twice(const double *in, double *out) { out[0] = 2 * in[0]; }"
        >>> try:
        ...     fn = load(src, "twice")
        ... except CompilerNotFound:
        ...     fn = lambda i, o: o.__setitem__(0, 2 * i[0])
        >>> out = (ctypes.c_double * 1)()
        >>> fn((ctypes.c_double * 1)(21.0), out)
        >>> out[0]
        42.0
    """
    fn = getattr(library(source), name)
    fn.argtypes = [ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double)]
    fn.restype = None
    return fn


def library(source, flags=()):
    """The shared library compiled from C source, once per source (and extra compiler
    `flags`) in a process (a `ctypes.CDLL`: its functions are attributes).

    Where the environment variable ``WENGERT_CACHE_DIR`` names a directory, the library
    is also kept there, under a hash of the source, the compiler's command, the compiler
    (its path and ``--version``) and the machine, and later processes load it from there
    instead of compiling (`_cached`, `_keep`).

    Example:
        >>> try:
        ...     lib = library("int answer(void) { return 42; }")
        ...     print(lib.answer())
        ... except CompilerNotFound:
        ...     print(42)
        42
    """
    global _build_dir
    digest = hashlib.sha256("\n".join([*flags, source]).encode()).hexdigest()[:20]
    lib = _loaded.get(digest)
    if lib is not None:
        return lib
    cc = compiler()
    # (-ffp-contract=off: no fused a*b+c, which rounds once where NumPy rounds twice;
    # clang fuses by default)
    options = ["-O2", *flags, "-std=c99", "-ffp-contract=off", "-shared", "-fPIC"]
    cached = _cache_path(cc, options, source)
    lib = _cached(cached) if cached else None
    if lib is not None:
        _loaded[digest] = lib
        return lib
    if _build_dir is None or not os.path.isdir(_build_dir):
        # (made again where it went away while the process ran: a cleaner of /tmp, or
        # another process's clean-up, removed it, and every compile after would fail)
        _build_dir = tempfile.mkdtemp(prefix="wengert-c-")     # private to this user
        # the libraries stay mapped once loaded, so the directory can go when the process
        # does; left behind, every process that compiled C would leave one in /tmp
        atexit.register(shutil.rmtree, _build_dir, ignore_errors=True)
    c_path = os.path.join(_build_dir, f"{digest}.c")
    so_path = os.path.join(_build_dir, f"{digest}.so")
    with open(c_path, "w") as f:
        f.write(source)
    result = subprocess.run([cc, *options, "-o", so_path, c_path, "-lm"],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"the C compiler ({cc}) failed on the generated code:\n"
                           f"{result.stderr[-2000:]}")
    lib = _loaded[digest] = ctypes.CDLL(so_path)
    if cached:
        _keep(so_path, cached)
    return lib


# --------------------------------------------------------------------------------------
# the persistent cache (opt-in: WENGERT_CACHE_DIR)
# --------------------------------------------------------------------------------------
CACHE_VARIABLE = "WENGERT_CACHE_DIR"
_identities = {}            # compiler path -> its --version output
_unwritable = set()         # cache directories already warned about


def _cache_path(cc, options, source):
    """The file a library compiled by `cc` with `options` from `source` is kept in, in
    the directory ``$WENGERT_CACHE_DIR`` names; None where it names none.  The key holds
    all that makes the library what it is: the source, the options (``-lm`` and the
    paths aside, which are always the same or do not matter), the compiler's path and
    its ``--version`` (an upgraded compiler writes another library), and the machine
    and system (a directory shared between hosts)."""
    directory = os.environ.get(CACHE_VARIABLE)
    if not directory:
        return None
    if cc not in _identities:
        try:
            _identities[cc] = subprocess.run([cc, "--version"], capture_output=True,
                                             text=True).stdout
        except OSError:
            _identities[cc] = ""
    key = "\0".join([cc, _identities[cc], platform.machine(), platform.system(),
                     *options, source])
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    return os.path.join(os.path.expanduser(directory), f"wg-{digest}.so")


def _cached(path):
    """The library kept at `path`, or None where there is none or it does not load (a
    corrupt or foreign file: it is compiled again, and the new library replaces it)."""
    if not os.path.exists(path):
        return None
    try:
        return ctypes.CDLL(path)
    except OSError:
        return None


def _keep(so_path, path):
    """Copy the library at `so_path` to `path` in the cache, atomically: into a new file
    of the same directory, then renamed over `path`, so that a process reading it sees a
    whole library, and of two processes writing it the last one's (the same) stays.  A
    library already loaded from `path` keeps its mapping: a rename does not change the
    file it mapped.  A directory that cannot be written warns once, and the library is
    used without the cache."""
    directory = os.path.dirname(path)
    temporary = None
    try:
        os.makedirs(directory, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".wg-", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "wb") as out, open(so_path, "rb") as f:
            shutil.copyfileobj(f, out)
        os.replace(temporary, path)
    except OSError as e:
        if temporary is not None:
            try:
                os.remove(temporary)
            except OSError:
                pass
        if directory not in _unwritable:
            _unwritable.add(directory)
            warnings.warn(f"{CACHE_VARIABLE}={directory!r}: cannot keep compiled C there "
                          f"({e}); compiling without the cache", RuntimeWarning,
                          stacklevel=3)


# --------------------------------------------------------------------------------------
# the compiled function's entry
# --------------------------------------------------------------------------------------
def c_name(fn_name) -> str:
    # "wg_" and the function's name, which must then not be one of the helpers' (a
    # function named remainder or sign would clash with wg_remainder or wg_sign)
    return "wg_" + Names(C_RESERVED | _HELPER_STEMS).user(fn_name)


# (and of the integer helpers, and of the parameter wg_bad: a function named index would
# be wg_index, the helper's name)
_HELPER_STEMS = frozenset([name[len("wg_"):] for name in {**HELPERS, **INTEGER_HELPERS}]
                          + ["bad"])


def source_of(d, entry) -> str:
    """The C source of a compiled function's current entry."""
    if entry.flavour == "c":
        return entry.source
    from .scalarize import NotScalar, float_form
    try:
        scalar = float_form(entry.graph, 10 ** 7, 10 ** 6, loops=True, integers=True)
    except NotScalar as e:
        raise ValueError("code('c'): C is written for graphs of float64, int64 and bool "
                         "scalars or of arrays it can write element by element; this graph "
                         f"has {e}") from None
    return function_source(scalar, c_name(d.fn_name))


_PACK_INT, _UNPACK_DOUBLE = struct.Struct("<q").pack, struct.Struct("<d").unpack
_PACK_DOUBLE, _UNPACK_INT = struct.Struct("<d").pack, struct.Struct("<q").unpack


def _int64_of_bits(x):
    """The int64 whose bits the double x holds (a NumPy int64, as NumPy's 0-d results)."""
    return np.int64(_UNPACK_INT(_PACK_DOUBLE(x))[0])


def _failed(bad, fn_name):
    """Raise what a C function that returned an error says: an IndexError for the index
    it noted in `bad` (`checks_indices`), as NumPy's, else the MemoryError of loops that
    could not allocate."""
    if bad[0]:
        raise IndexError(f"index {bad[1]} is out of bounds for an axis of size {bad[2]} (in "
                         f"the C code of {fn_name}, which checks each index it computes)")
    raise MemoryError(f"the C code of {fn_name} could not allocate its arrays")


#: The most C (in characters) written element by element for a graph of arrays that the
#: loops refused (`entry`'s ``largest``): the compiler's time grows faster than the code
#: (a Rosenbrock gradient of 2,000 elements, 254 KB: 3.4 s; a random program with an
#: einsum and a scan whose body holds 3,900 elements, 1.1 MB: 426 s).
LARGEST = 400_000


def entry(d, key, graph, scalar, params, form, largest=None):
    """An entry of a compiled function (see `wengert.staged`) that runs C; `form` is the
    `CallForm` of its Python glue (its head mirrors the compiled function's signature).
    Raises `NotScalar` where the C is longer than `largest` characters (not compiled)."""
    from ..staged import Entry
    from .scalarize import NotScalar
    name = c_name(d.fn_name)
    source = function_source(scalar, name)
    if largest is not None and len(source) > largest:
        raise NotScalar(f"{len(source) // 1000:,} KB of C written element by element, more "
                        f"than the {largest // 1000:,} KB it compiles in reasonable time")
    cfn = load(source, name)
    ns = d.ns
    checks = checks_indices(scalar)
    allocates = bool(scalar.loops) or _long(scalar)
    if allocates or checks:         # it returns 1 where it could not allocate, 2 where an
        cfn.restype = ctypes.c_int  # index was out of bounds
    if checks:
        cfn.argtypes = cfn.argtypes[:2] + [ctypes.POINTER(ctypes.c_int64)]
    n_in, n_out = len(scalar.graph.inputs), len(scalar.graph.outputs)
    in_t = ns.bind(ctypes.c_double * max(n_in, 1), "in_t")
    out_t = ns.bind(ctypes.c_double * max(n_out, 1), "out_t")
    call = ns.bind(cfn, "cfunction")
    names = ns.names.fork()
    names.taken.update([d.fn_name] + [n for n, _ in params])
    lines, leaves = py.prologue(params, names, ns, "_miss", form=form)
    # (an int64 goes in as its bits: see the module's doc)
    as_double = ns.bind(_UNPACK_DOUBLE, "as_double")
    int_bits = ns.bind(_PACK_INT, "int_bits")
    f64 = ns.bind(np.dtype(np.float64), "dtype")
    np_ = ns.fixed("_np", np)
    buf, out, vals = names.own("in"), names.own("out"), names.own("v")
    if any(leaf.kind is np.ndarray for leaf in leaves):
        # Arrays are copied into a NumPy buffer that C reads in place: building the ctypes
        # array from a list of Python floats took 88 us for 1000 numbers, 10 times the C.
        body = [f"{buf} = {np_}.empty({max(n_in, 1)})"]
        k = 0
        for leaf in leaves:
            if leaf.kind is np.ndarray:
                n = int(np.prod(leaf.shape, dtype=np.int64))
                flat = f"{leaf.name}.ravel()" + (f".view({f64})" if leaf.dtype == np.int64
                                                 else "")
                body.append(f"{buf}[{k}:{k + n}] = {flat}")
            else:
                n = 1
                body.append(f"{buf}[{k}] = " + (f"{as_double}({int_bits}({leaf.name}))[0]"
                                                if leaf.dtype == np.int64 else leaf.name))
            k += n
        passed = f"{in_t}.from_buffer({buf})"
    else:
        # (scalars alone: a list display straight into the ctypes array is quickest)
        values = ", ".join(f"{as_double}({int_bits}({leaf.name}))[0]"
                           if leaf.dtype == np.int64 else leaf.name for leaf in leaves)
        body = [f"{buf} = {in_t}({values})"]
        passed = buf
    arrays_out = any(shape for shape in scalar.out_shapes)
    if arrays_out:      # (the same for the results: views of one NumPy buffer)
        body.append(f"{out} = {np_}.empty({max(n_out, 1)})")
        args = f"{passed}, {out_t}.from_buffer({out})"
    else:
        body.append(f"{out} = {out_t}()")
        args = f"{passed}, {out}"
    if checks:
        bad = names.own("bad")
        body += [f"{bad} = {ns.bind(ctypes.c_int64 * 3, 'bad_t')}()",
                 f"if {call}({args}, {bad}): {ns.bind(_failed, 'failed')}({bad}, "
                 f"{d.fn_name!r})"]
    elif allocates:
        body.append(f"if {call}({args}): raise {ns.bind(MemoryError, 'MemoryError')}('the "
                    f"C code of {d.fn_name} could not allocate its arrays')")
    else:
        body.append(f"{call}({args})")
    body.append(f"{vals} = {out}" if arrays_out else f"{vals} = {out}[:]")
    exprs, k = [], 0
    for shape, dtype in zip(scalar.out_shapes, scalar.out_dtypes):
        n = int(np.prod(shape, dtype=np.int64))
        if shape:
            arr = f"{vals}[{k}:{k + n}]"
            if dtype == np.int64:
                arr += f".view({ns.bind(dtype, 'dtype')})"
            elif dtype != np.float64:
                arr += f".astype({ns.bind(dtype, 'dtype')})"
            exprs.append(arr if len(shape) == 1 else f"{arr}.reshape({shape!r})")
        elif dtype == np.int64:
            exprs.append(f"{ns.bind(_int64_of_bits, 'int64_of_bits')}({vals}[{k}])")
        else:
            exprs.append(f"bool({vals}[{k}])" if dtype.kind == "b" else
                         f"float({vals}[{k}])" if arrays_out else f"{vals}[{k}]")
        k += n
    body.append(f"return {py.build_tree(graph.out_tree, exprs, ns)}")
    glue = "\n".join([f"def {d.fn_name}({form.head}):", *lines,
                      *("    " + b for b in body)]) + "\n"
    function = py.make_function(glue, d.fn_name, ns)
    e = Entry(key, graph, scalar.graph, "c", source, function, params)
    e.glue = glue
    return e
