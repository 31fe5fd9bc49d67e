"""Output formats of the emitter: how one language spells names, numbers, calls,
assignments and comments.  The emitter (`emit.py`) decides everything else.

A format is a small class with these members (subclass `Format` and override):

* ``symbol(sym)``: a user's variable or array element, e.g. ``G[2]`` or ``G(2)``;
* ``number(value)``: a constant (raise `EmitError` for one the language cannot write);
* ``call(name, args, params)``: a function or declared operator applied to argument texts;
* ``apply(op, args, params)``: a primitive applied to argument texts (default: ``call``
  with its name; formats that bind implementations override it);
* ``reserved``: names a user's variable may not be written with (the functions the
  format's own code calls); ``calls_by_name``: whether a primitive that is not wengert's
  own (a declared operator) is written as a call of its name, and then
  ``reserved_functions``: the names such a call may not use, since it would reach the
  language's own function (the emitter renames both kinds);
* ``power``: the infix power operator (``"**"``), or None to write powers as calls;
  ``pow_infix``: whether ``x**y`` for a real y is written with it too;
  ``minus_binds_tightly``: whether ``-a*b`` reads ``(-a)*b`` (Python), so that a negated
  product is written ``-(a*b)``;
* ``cast(node, arg)``: a function to wrap the text of argument `arg` of `node` in, or None
  (Python's NumPy code keeps a weakly typed scalar weak so);
* ``statement(target, expr)``: the lines assigning an expression to a name;
* ``comment(text)``: the lines of a comment;
* ``max_expression``: how long an inlined expression may grow before it gets a temporary;
* ``declarations()``: temporaries the text just given by ``method`` reads that are no
  node's value (C's table of a gather's elements), which the emitter assigns first;
* ``repeated_arguments(node)``: ``{position: times}`` for the arguments that the text of
  `node` writes more than once (FORTRAN's cbrt writes its argument 8 times): the emitter
  gives such an argument a temporary unless its text is a name or a number.

Here are `AddsFormat` (the input language: ``F := ...;``) and `FortranFormat` (FORTRAN 77
fixed form, what ADDS wrote after ``on fort;``); `python.PythonFormat` and `c.CFormat` are
the formats of `wg.compile`.
"""
from __future__ import annotations

import math
import re
import textwrap

from ..primitives import scalar as P, special as SP
from ..primitives.nn import relu
from .emit import EmitError


class Format:
    """The interface, with the defaults most languages share.

    Example:
        >>> from wengert.codegen.emit import Symbol
        >>> f = AddsFormat()
        >>> f.symbol(Symbol("A", (1, 2))), f.number(0.5), f.call("exp", ["X"], {})
        ('A[1,2]', '0.5', 'EXP(X)')
    """

    power = "**"
    pow_infix = True                # x**y for real y too (False: written as a call)
    minus_binds_tightly = False     # whether -a*b reads (-a)*b: then -(a*b) is written
    max_expression = 1000
    brackets = "[]"                 # around an array element's indices
    reserved = frozenset()          # names the format's code uses: user names are renamed
    max_name = 10 ** 9              # the longest name the language takes (longer: cut)
    calls_by_name = False           # a user's primitive is written as a call of its name
    reserved_functions = frozenset()    # names such a call may not have
    language = "this format"        # in error messages

    def symbol(self, sym) -> str:
        if not sym.index:
            return sym.name
        return f"{sym.name}{self.brackets[0]}{','.join(map(str, sym.index))}{self.brackets[1]}"

    def number(self, value) -> str:
        raise NotImplementedError

    def exponent(self, n) -> str:
        """The integer exponent n of ``x**n``."""
        return str(n) if n >= 0 else f"({n})"

    def function(self, name) -> str:
        """The spelling of a primitive's name (upper case, as ADDS writes it)."""
        return name.upper()

    def call(self, name, args, params) -> str:
        return f"{self.function(name)}({','.join(args)})"

    def apply(self, op, args, params) -> str:
        """The text of primitive `op` applied to argument texts: by default `call` with
        the primitive's name.  Formats that bind implementations (Python, C) override it."""
        self.refuse_lost_parameters(op, params)
        return self.call(op.name, args, params)

    def refuse_lost_parameters(self, op, params):
        """Raise EmitError where a call of `op` by name would drop a parameter: the call
        POLYGAMMA(X) of polygamma(x, n=2), or SCALED(X) of a user's scaled(x, k=3.0),
        would read as another function.  (A declared operator's element ``at`` is
        written as indices.)"""
        lost = sorted(k for k in (params or {}) if k != "at")
        if lost:
            raise EmitError(f"{self.language} has no "
                            f"{op.name} with its parameter{'s' * (len(lost) > 1)} "
                            f"{', '.join(f'{k}={params[k]!r}' for k in lost)}, and a call "
                            "would lose it: emit code for the graph without it")

    def method(self, node, args):
        """The text of `node` where this format spells it otherwise than its operator or
        `apply` would (None: as they do): a faster method of its first argument in
        NumPy code, logic for arithmetic on truth values in FORTRAN."""
        return None

    def declarations(self) -> list:
        """``(target, expression)`` pairs of the temporaries that the text just given by
        `method` reads and that are no node's value (C's table of the elements a gather
        picks from): the emitter assigns them before that text is used, and the format
        forgets them.  Default: none."""
        return []

    def repeated_arguments(self, node) -> dict:
        """``{position: times}`` for the arguments of `node` whose text appears more than
        once in its text (a template of the format's own).  Default: none, each argument
        is written once."""
        return {}

    def cast(self, node, arg):
        """The name of a function that the text of argument `arg` is wrapped in where
        `node` uses it (None: none), for a language whose own typing would differ from the
        graph's.  Scalar languages have one float type: nothing to do."""
        return None

    def statement(self, target, expr) -> list:
        raise NotImplementedError

    def comment(self, text) -> list:
        raise NotImplementedError


#: The sixteen scalar functions of the ADDS language (seed 002, §2.4 ⑧).  With the
#: arithmetic operators they are all the ADDS text can write.
ADDS_FUNCTIONS = tuple(getattr(P, name) for name in (
    "sqrt", "cbrt", "exp", "log", "log10", "sin", "cos", "tan", "cotan", "asin", "acos",
    "atan", "atan2", "sinh", "cosh", "tanh"))

#: The built-in operators of the ADDS language: a declared operator written with one of
#: these names would read back as the built-in.
ADDS_BUILTINS = frozenset([f.name.upper() for f in ADDS_FUNCTIONS]
                          + "VP TP VEC DFU DFD DFUV DFDV ERR".split())

#: The intrinsic functions of FORTRAN 77 and of gfortran (Fortran 2018 and GNU extensions,
#: as gfortran 12 with -std=legacy knows them: its -Wintrinsic-shadow warns for each).  A
#: call of a function named like one of them reaches the intrinsic unless the function is
#: declared EXTERNAL, which code meant to be pasted into a program cannot do; so a
#: declared operator with such a name is written with another.
FORTRAN_INTRINSICS = frozenset("""
    ABS ACCESS ACHAR ACOS ACOSD ACOSH ADJUSTL ADJUSTR AIMAG AINT ALGAMA ALL ALLOCATED ALOG
    ALOG10 AMAX0 AMAX1 AMIN0 AMIN1 AMOD AND ANINT ANY ASIN ASIND ASINH ASSOCIATED ATAN
    ATAN2 ATAN2D ATAND ATANH BESJ0 BESJ1 BESJN BESSEL_J0 BESSEL_J1 BESSEL_JN BESSEL_Y0
    BESSEL_Y1 BESSEL_YN BESY0 BESY1 BESYN BGE BGT BIT_SIZE BLE BLT BTEST CABS CCOS CCOTAN
    CDABS CDCOS CDEXP CDLOG CDSIN CDSQRT CEILING CEXP CHAR CHDIR CHMOD CLOG CMPLX
    COMMAND_ARGUMENT_COUNT COMPLEX CONJG COS COSD COSH COTAN COTAND COUNT CSHIFT CSIN CSQRT
    CTIME DABS DACOS DACOSD DACOSH DASIN DASIND DASINH DATAN DATAN2 DATAN2D DATAND DATANH
    DBESJ0 DBESJ1 DBESJN DBESY0 DBESY1 DBESYN DBLE DCMPLX DCONJG DCOS DCOSD DCOSH DCOTAN
    DCOTAND DDIM DERF DERFC DEXP DFLOAT DGAMMA DIGITS DIM DIMAG DINT DLGAMA DLOG DLOG10
    DMAX1 DMIN1 DMOD DNINT DOT_PRODUCT DPROD DREAL DSHIFTL DSHIFTR DSIGN DSIN DSIND DSINH
    DSQRT DTAN DTAND DTANH DTIME EOSHIFT EPSILON ERF ERFC ERFC_SCALED ETIME EXP EXPONENT
    EXTENDS_TYPE_OF FDATE FGET FGETC FINDLOC FLOAT FLOOR FNUM FPUT FPUTC FRACTION FSTAT
    FTELL GAMMA GETCWD GETGID GETPID GETUID HOSTNM HUGE HYPOT IABS IACHAR IALL IAND IANY
    IARGC IBCLR IBITS IBSET ICHAR IDIM IDINT IDNINT IEOR IERRNO IFIX IMAG IMAGE_INDEX
    IMAGPART INDEX INT INT2 INT8 IOR IPARITY IRAND IS_CONTIGUOUS IS_IOSTAT_END
    IS_IOSTAT_EOR ISATTY ISHFT ISHFTC ISIGN ISNAN KILL KIND LBOUND LCOBOUND LEADZ LEN
    LEN_TRIM LGAMMA LGE LGT LINK LLE LLT LNBLNK LOC LOG LOG10 LOG_GAMMA LOGICAL LONG LSHIFT
    LSTAT MALLOC MASKL MASKR MATMUL MAX MAX0 MAX1 MAXEXPONENT MAXLOC MAXVAL MCLOCK MCLOCK8
    MERGE MERGE_BITS MIN MIN0 MIN1 MINEXPONENT MINLOC MINVAL MOD MODULO NEAREST NEW_LINE
    NINT NORM2 NOT NULL NUM_IMAGES OR PACK PARITY POPCNT POPPAR PRECISION PRESENT PRODUCT
    RADIX RAN RAND RANGE RANK REAL REALPART RENAME REPEAT RESHAPE RRSPACING RSHIFT
    SAME_TYPE_AS SCALE SCAN SECNDS SECOND SELECTED_CHAR_KIND SELECTED_INT_KIND
    SELECTED_REAL_KIND SET_EXPONENT SHAPE SHIFTA SHIFTL SHIFTR SHORT SIGN SIGNAL SIN SIND
    SINH SIZE SIZEOF SNGL SPACING SPREAD SQRT STAT STORAGE_SIZE SUM SYMLNK SYSTEM TAN TAND
    TANH TEAM_NUMBER THIS_IMAGE TIME TIME8 TINY TRAILZ TRANSFER TRANSPOSE TRIM TTYNAM
    UBOUND UCOBOUND UMASK UNLINK UNPACK VERIFY XOR ZABS ZCOS ZEXP ZLOG ZSIN ZSQRT
""".split())


def _negative_zero(value) -> bool:
    """-0.0, which an integer's spelling (0) would turn into 0.0."""
    return value == 0 and math.copysign(1.0, value) < 0


def _finite(value):
    value = float(value)
    if not math.isfinite(value):
        raise EmitError(f"the code would contain the constant {value} (a constant "
                        "expression such as log(0) or 1/0 folded to it)")
    return value


class AddsFormat(Format):
    """The ADDS input format: ``V0003 := A+1;``, array elements ``G[1]``, ``%`` comments.
    What it writes reads back as ADDS.

    A declared operator is written as a call of its name, which may not be the name of
    one of the language's built-in operators.

    Example:
        >>> AddsFormat().statement("F", "X*X"), AddsFormat().comment("hello")
        (['F := X*X;'], ['% hello'])
    """

    calls_by_name = True
    reserved_functions = ADDS_BUILTINS
    language = "ADDS"

    @property
    def reserved(self):
        # a variable named like an operator (SIN) or a keyword (COUNT) would not read back
        from ..adds.parser import KEYWORDS          # (the ADDS package imports this module)
        return ADDS_BUILTINS | KEYWORDS

    def number(self, value) -> str:
        value = _finite(value)
        if value.is_integer() and abs(value) < 1e15 and not _negative_zero(value):
            return str(int(value))
        return repr(value).upper()

    def call(self, name, args, params) -> str:
        at = params.get("at") if params else None
        index = f"[{','.join(str(i) for i in at)}]" if at else ""
        return f"{self.function(name)}{index}({','.join(args)})"

    def apply(self, op, args, params) -> str:
        # (a user's primitive is a call of its name and never comes here)
        if op not in ADDS_FUNCTIONS:
            raise EmitError(f"ADDS has no {op.name}: its language has the arithmetic "
                            "operators and sixteen functions (SQRT ... TANH), so this text "
                            "would not read back; take the \"python\", \"c\" or "
                            "\"fortran\" text")
        return super().apply(op, args, params)

    def statement(self, target, expr) -> list:
        return [f"{target} := {expr};"]

    def comment(self, text) -> list:
        return [f"% {line}" for line in text.splitlines()]


def _operand(text) -> str:
    """`text` as an operand of an operator: parenthesised unless it is a name, a number or
    a call (whose own parentheses close at its end)."""
    if re.fullmatch(r"[A-Z0-9_.]+", text):
        return text
    head = re.match(r"[A-Z][A-Z0-9_]*\(", text)
    if head and text.endswith(")"):
        depth = 0
        for i in range(head.end() - 1, len(text)):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            if depth == 0:
                return text if i == len(text) - 1 else f"({text})"
    return f"({text})"


_TRUTH = "MERGE(1D0,0D0,"


def _is_truth(text) -> bool:
    """Whether `text` is a comparison's, ``MERGE(1D0,0D0,X.LT.Y)`` (DOUBLE PRECISION, since
    the code's variables are)."""
    return text.startswith(_TRUTH) and _operand(text) == text


def _condition(text) -> str:
    """The LOGICAL expression of a truth value's text: a comparison's test is read back
    out of its MERGE; any other value is true where it is not 0."""
    if _is_truth(text):
        return text[len(_TRUTH):-1]
    return f"{_operand(text)}.NE.0"


def _logical(x, y, logical) -> str:
    """The truth value of truth values x and y combined by `logical` (.AND., .OR.)."""
    return f"{_TRUTH}({_condition(x)}){logical}({_condition(y)}))"


def _extremum(x, y, test, logical) -> str:
    """maximum (test .GT., logical .OR.) or minimum (.LT., .AND.) as NumPy's: NaN
    propagates and a tie (0.0 and -0.0) gives y, where MAX's result is the compiler's.
    Of two comparisons (logical_or, logical_and) it is their LOGICAL combination."""
    if _is_truth(x) and _is_truth(y):
        return _logical(x, y, logical)
    return f"MERGE({x},{y},{x}{test}{y}.OR.{x}.NE.{x})"


#: FORTRAN's names of the primitives it has (intrinsics of Fortran 2008 included:
#: gfortran has them all, with -std=legacy too): SQRT ... TANH, ABS, HYPOT, ASINH, ERF,
#: GAMMA as wengert names them.
_FORTRAN_NAMES = {}
_FORTRAN_NAMES.update({op: op.name.upper() for op in ADDS_FUNCTIONS + (
    P.abs, P.hypot, P.asinh, P.acosh, P.atanh, SP.erf, SP.erfc, SP.gamma)})
del _FORTRAN_NAMES[P.cotan], _FORTRAN_NAMES[P.cbrt]    # (Fortran has neither: below)

_LOGICAL = {P.add: ".OR.", P.mul: ".AND."}

_COMPARISONS = {P.lt: ".LT.", P.le: ".LE.", P.gt: ".GT.", P.ge: ".GE.", P.eq: ".EQ.",
                P.ne: ".NE."}

_LN2 = "0.6931471805599453D0"          # (NumPy's constants, rounded to double)
_LOG2E = "1.4426950408889634D0"


def _log1p(x) -> str:
    """Goldberg's log1p (within 2 ulps: 1 + x rounds, and the quotient with the same
    rounding undoes it), its ends written out (where the quotient is 0/0 or inf/inf).
    The quotient is taken first: LOG(1+X)*X would overflow from X = 2.5e305."""
    return (f"MERGE({x},LOG(1+{_operand(x)})*({_operand(x)}/((1+{_operand(x)})-1)),"
            f"1+{_operand(x)}.EQ.1.OR.{_operand(x)}.GT.HUGE(1D0))")


#: The primitives FORTRAN writes with others, each a function of its arguments' texts
#: (which bind less tightly than a call: `_operand` brackets them for an operator; a
#: comparison binds less tightly than all arithmetic).  sign is 0 at 0 and -0 and nan at nan
#: as NumPy's (SIGN(1D0,X) would be 1 and +-1); a truth value is a DOUBLE PRECISION 1 or 0;
#: NumPy rounds halves to even where ANINT rounds them away from zero, and FLOOR and
#: CEILING are INTEGER (wrong past 2**31): AINT steps.
def _cbrt(x) -> str:
    """cbrt: |x|**(1/3) corrected by one Newton step (1D0/3 is not a third: alone, it is
    some 60 ulps off at 1e-300), its sign x's; 0, inf and nan as they are."""
    y = f"ABS({x})**(1D0/3)"
    return (f"SIGN(MERGE({y},{y}-({y}-ABS({x})/({y})**2)/3,{y}.EQ.0.OR.{y}.GT.HUGE(1D0)),"
            f"{x})")


_FORTRAN_TEMPLATES = {
    P.cotan: lambda x: f"(1/TAN({x}))",
    P.cbrt: lambda x: _cbrt(x),
    P.sign: lambda x: f"MERGE(SIGN(1D0,{x}),{x}-{_operand(x)},ABS({x}).GT.0)",
    P.exp2: lambda x: f"(2D0**{_operand(x)})",
    P.log1p: _log1p,
    # Kahan's expm1 (within 2 ulps, as log1p below), its ends written out: where exp(x)
    # is 1 (x), where exp(x) - 1 is -1 or inf (that)
    P.expm1: lambda x: (f"MERGE({x},MERGE(EXP({x})-1,(EXP({x})-1)*({_operand(x)}/LOG(EXP({x}))),"
                        f"EXP({x})-1.EQ.-1.OR.EXP({x}).GT.HUGE(1D0)),EXP({x}).EQ.1)"),
    # log2 as exponent and fraction (exact at powers of 2), the two of one sign so that
    # neither cancels the other next to 1; inf as it is
    P.log2: lambda x: (f"MERGE({x},MERGE(EXPONENT({x})-1+LOG(2*FRACTION({x}))/{_LN2},"
                       f"EXPONENT({x})+LOG(FRACTION({x}))/{_LN2},{x}.GE.1),"
                       f"{x}.GT.HUGE(1D0))"),
    # NumPy's: the larger plus log1p of the smaller's share, and at x = y (infinities
    # too) x + log 2
    P.logaddexp: lambda x, y: (f"MERGE({_operand(x)}+{_LN2},MAX({x},{y})+"
                               f"{_log1p(f'EXP(-ABS({x}-{_operand(y)}))')},{x}.EQ.{y})"),
    P.logaddexp2: lambda x, y: (f"MERGE({_operand(x)}+1,MAX({x},{y})+{_LOG2E}*"
                                f"{_log1p(f'2D0**(-ABS({x}-{_operand(y)}))')},{x}.EQ.{y})"),
    # SciPy's: 1/(1 + exp(-x)); log(x/(1 - x)), and from 0.3 to 0.65 (where that quotient
    # is near 1) log1p(s) - log1p(-s), s = 2(x - 1/2); xlogy and xlog1py 0 at x = 0
    # unless y is nan
    SP.expit: lambda x: f"(1/(1+EXP(-{_operand(x)})))",
    SP.logit: lambda x: (f"MERGE({_log1p(f'2*({x}-0.5D0)')}-{_log1p(f'(-2*({x}-0.5D0))')},"
                         f"LOG({_operand(x)}/(1-{_operand(x)})),"
                         f"{x}.GE.0.3D0.AND.{x}.LE.0.65D0)"),
    SP.xlogy: lambda x, y: f"MERGE(0D0,{_operand(x)}*LOG({y}),{x}.EQ.0.AND.{y}.EQ.{y})",
    SP.xlog1py: lambda x, y: (f"MERGE(0D0,{_operand(x)}*{_operand(_log1p(y))},"
                              f"{x}.EQ.0.AND.{y}.EQ.{y})"),
    # (SciPy's gammaln(-inf) is -inf, LOG_GAMMA's inf)
    SP.gammaln: lambda x: f"MERGE({x},LOG_GAMMA({x}),{x}.LT.-HUGE(1D0))",
    P.stop_gradient: _operand,
    P.maximum: lambda x, y: _extremum(x, y, ".GT.", ".OR."),
    P.minimum: lambda x, y: _extremum(x, y, ".LT.", ".AND."),
    relu: lambda x: f"MERGE({x},0D0,{x}.GT.0.OR.{x}.NE.{x})",
    P.fmod: lambda x, y: f"MOD({x},{_nonzero(y)})",
    P.remainder: lambda x, y: f"MODULO({x},{_nonzero(y)})",
    P.round: lambda x: (f"MERGE(2*ANINT({_operand(x)}/2),ANINT({x}),"
                        f"ABS({x}-AINT({x})).EQ.0.5D0)"),
    P.trunc: lambda x: f"AINT({x})",
    P.floor: lambda x: f"(AINT({x})-MERGE(1D0,0D0,{x}.LT.AINT({x})))",
    # (less -1, not plus 1: -0.0 - 0 keeps ceil(-0.5) = -0.0, as NumPy's)
    P.ceil: lambda x: f"(AINT({x})-MERGE(-1D0,0D0,{x}.GT.AINT({x})))",
    **{op: (lambda x, y, t=t: f"{_TRUTH}{x}{t}{y})") for op, t in _COMPARISONS.items()},
    P.select: lambda c, a, b: f"MERGE({a},{b},{_condition(c)})",
}


#: The intrinsics the templates call (with `_FORTRAN_NAMES`, the names a variable may not
#: have: it would hide the function).
_FORTRAN_TEMPLATE_CALLS = frozenset(
    "TAN SIGN ABS MERGE AINT ANINT MOD MODULO HUGE EXPONENT FRACTION MAX LOG_GAMMA".split())


def _nonzero(y) -> str:
    """The divisor of MOD and MODULO, which gfortran refuses to compile as a constant 0
    (NumPy's fmod(x, 0) is nan, a constant FORTRAN cannot write either)."""
    if y in ("0", "0D0", "-0.0D0"):
        raise EmitError("the code would take MOD of a constant 0 (NumPy gives nan, which "
                        "FORTRAN cannot write; a constant expression folded to it)")
    return y


class FortranFormat(Format):
    """FORTRAN 77 fixed form: statements from column 7, continuation lines marked by ``&``
    in column 6, nothing past column 72, comments with ``C`` in column 1.

    Constants that are not integers are written in double precision (``0.5D0``), so none
    loses digits.  Integer constants in arithmetic are written as integers: every division
    in the code has a variable on one side at least (a division of two constants is folded
    when the graph is built), so Fortran's integer division never happens.  As arguments of
    a call they are written in double precision (``ATAN2(X,1D0)``), since Fortran does not
    convert arguments.  Functions Fortran 77 lacks are written with those it has:
    ``cotan(x)`` as ``(1/TAN(x))``, ``cbrt(x)`` as ``SIGN(ABS(x)**(1D0/3),x)`` with a
    Newton step; sign,
    rounding, maximum, comparisons and ``select`` with MERGE, as NumPy computes them;
    expm1 and log1p within 2 ulps, not as ``EXP(X)-1``, which would lose the digits
    they exist to keep, and so log2, logaddexp, logaddexp2 and SciPy's expit, logit,
    xlogy and xlog1py (`_FORTRAN_TEMPLATES`); gfortran's intrinsics of later standards
    by their names (`_FORTRAN_NAMES`: HYPOT, ASINH, ERF, GAMMA, ...).  Any other of
    wengert's primitives (erfinv, digamma, spacing, ...) raises `EmitError`: a call of a
    function FORTRAN does not have would not compile.  A declared operator
    ``F[2,3](...)`` becomes a call with its element's indices first, ``F(2,3,...)``; it
    may not be named like an intrinsic function (`FORTRAN_INTRINSICS`), whose name the
    call would reach instead.

    Example:
        >>> print("\\n".join(FortranFormat().statement("F", "X1*X2+" * 14 + "1")))
              F = X1*X2+X1*X2+X1*X2+X1*X2+X1*X2+X1*X2+X1*X2+X1*X2+X1*X2+X1*X2
             &+X1*X2+X1*X2+X1*X2+X1*X2+1
    """

    width = 72                      # nothing past column 72
    body = 72 - 6                   # columns 7..72 hold the statement
    # (with a statement's few more characters, at 44 or more a line (`_wrap`) within the
    # 20 lines, first and 19 continuations, FORTRAN 77 allows)
    max_expression = 700
    brackets = "()"
    _INTEGER = re.compile(r"-?[0-9]+")
    # The intrinsics the code calls: a user's variable of that name would shadow one.
    reserved = frozenset(_FORTRAN_NAMES.values()) | _FORTRAN_TEMPLATE_CALLS
    calls_by_name = True
    reserved_functions = FORTRAN_INTRINSICS
    max_name = 63                   # (Fortran 2003's limit, which gfortran keeps)
    language = "FORTRAN"

    def number(self, value) -> str:
        value = _finite(value)
        if value.is_integer() and abs(value) < 2 ** 31 and not _negative_zero(value):
            return str(int(value))
        mantissa, _, exponent = repr(value).partition("e")
        return f"{mantissa}D{int(exponent or 0)}"

    def exponent(self, n) -> str:
        # an INTEGER has 32 bits: a larger power is a real one (of an integral value,
        # which a negative x may have)
        if abs(n) < 2 ** 31:
            return super().exponent(n)
        return self.number(float(n)) if n > 0 else f"({self.number(float(n))})"

    def _real(self, args):
        # Fortran passes an argument as it is: an integer constant where DOUBLE PRECISION
        # is expected is read as garbage (a declared operator) or rejected (ATAN2), so
        # constant arguments are written as reals; an element's indices stay integers.
        return [a + "D0" if self._INTEGER.fullmatch(a) else a for a in args]

    def apply(self, op, args, params) -> str:
        # (by the primitive, not its name: a user's function may be called cbrt; and a
        # user's primitive is a call of its name that never comes here)
        if op is P.round and params.get("decimals"):
            # x scaled by 10**decimals, rounded to an integer, and scaled back, as NumPy
            decimals = params["decimals"]
            scale = self.number(10.0 ** abs(decimals))
            up, down = ("*", "/") if decimals > 0 else ("/", "*")
            scaled = self.apply(P.round, [f"{_operand(args[0])}{up}{scale}"], {})
            return f"({scaled}{down}{scale})"
        args = self._real(args)
        if op in _FORTRAN_NAMES:
            return f"{_FORTRAN_NAMES[op]}({','.join(args)})"
        if op in _FORTRAN_TEMPLATES:
            return _FORTRAN_TEMPLATES[op](*args)
        self.refuse_lost_parameters(op, params)
        raise EmitError(f"FORTRAN has no {op.name}, and this text does not write it with the "
                        "functions it has (see FortranFormat): write it with those in the "
                        "function, or take the \"python\" or \"c\" text")

    def repeated_arguments(self, node) -> dict:
        # The templates write x as often as they need it (cbrt 8 times, round 4): an
        # expression there would be computed that often, past what `count` says, and grow
        # the statement past FORTRAN 77's 19 continuation lines.  Marks stand for the
        # arguments in a trial text (the templates are pure functions of their texts).
        if node.op not in _FORTRAN_TEMPLATES and node.op is not P.round:
            return {}
        marks = [f"@{k}@" for k in range(len(node.args))]
        text = self.apply(node.op, marks, node.params)
        return {k: text.count(m) for k, m in enumerate(marks) if text.count(m) > 1}

    def method(self, node, args):
        # NumPy's sum of truth values is their OR and their product their AND (True +
        # True is True), where the DOUBLE PRECISION 1s would add up to 2
        if node.dtype.kind == "b" and node.op in _LOGICAL:
            return _logical(*args, _LOGICAL[node.op])
        return None

    def call(self, name, args, params) -> str:
        at = params.get("at") if params else None
        lead = [str(i) for i in at] if at else []
        return f"{self.function(name)}({','.join(lead + self._real(args))})"

    def statement(self, target, expr) -> list:
        return self._wrap(f"{target} = {expr}")

    def comment(self, text) -> list:
        return ["C " + part for line in text.splitlines()
                for part in textwrap.wrap(line, self.width - 2) or [""]]

    # Where a statement is best cut, best first: before + or - (not a sign of an exponent,
    # as in 1D-5), then before * or / (not inside **), then after a comma.
    _CUTS = (re.compile(r"(?<=[A-Z0-9)])(?<![0-9.][DE])[-+]"),
             re.compile(r"(?<=[A-Z0-9)])(?<!\*)[*/](?!\*)"),
             re.compile(r"(?<=,)"))

    def _wrap(self, text) -> list:
        """Cut a statement into a first line and continuation lines, at an operator or
        after a comma where possible (a cut anywhere is legal in fixed form)."""
        lines, first = [], True
        while True:
            if len(text) <= self.body:
                lines.append(("      " if first else "     &") + text)
                return lines
            cut = self.body
            for pattern in self._CUTS:
                # text[:cut] must fit: a cut before an operator may sit at self.body,
                # but the zero-width match after a comma can land one further.  A cut
                # in the line's first two thirds is passed over for a worse kind of cut
                # (at worst mid-token, legal in fixed form): every line holds 44
                # characters or more, so `max_expression` characters fit in FORTRAN 77's
                # 19 continuation lines (terms of 36 characters made lines of 38, and a
                # 1000-character statement 26 lines)
                cuts = [m.start() for m in pattern.finditer(text, 2 * self.body // 3,
                                                            self.body + 1)
                        if m.start() <= self.body]
                if cuts:
                    cut = max(cuts)
                    break
            lines.append(("      " if first else "     &") + text[:cut])
            text, first = text[cut:], False
