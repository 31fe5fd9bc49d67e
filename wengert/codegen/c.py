"""C from a graph of scalars: the C format of the emitter, compiled with the system's C
compiler and called through ctypes.

The generated function is self-contained (only ``<math.h>``)::

    void wg_f(const double *in, double *out)

with the inputs and outputs as flat arrays of doubles, in the order of the graph's inputs
and outputs (arrays in C order).  A Python function around it checks and unpacks the
arguments as the Python back-end does, fills ``in``, calls, and builds the result.

C's arithmetic is IEEE's, as NumPy's is: ``log(-1)`` is nan and ``1/0`` is inf, with no
exception and no warning.  The compiler is ``$CC``, else ``cc``, ``gcc`` or ``clang``;
`CompilerNotFound` says what to do when there is none.
"""
from __future__ import annotations

import ctypes
import hashlib
import math
import os
import shutil
import subprocess
import tempfile

import numpy as np

from ..primitives import scalar as S, special as SP
from ..primitives.nn import relu
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
    "wg_relu": "static double wg_relu(double x) { return (x > 0.0 || x != x) ? x : 0.0; }",
    "wg_remainder": """\
static double wg_remainder(double x, double y)
{
    double m = fmod(x, y);
    if (y == 0.0 || m != m) return m;
    if (m == 0.0) return copysign(0.0, y);
    return (m < 0) != (y < 0) ? m + y : m;
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


class CFormat(Format):
    """C99 on doubles: ``in[3]``, ``out[0]``, ``pow(x, 3)``; temporaries are declared
    where they are assigned (`function_source` writes ``const double``).

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

    def cast(self, node, arg):
        # a comparison is a C int: a quotient of two would be integer division
        return "(double)" if node.op is S.div and arg.dtype.kind == "b" else None

    def symbol(self, sym) -> str:
        return f"{sym.name}[{sym.index[0]}]" if sym.index else sym.name

    def number(self, value) -> str:
        value = float(value)
        if math.isnan(value):
            return "NAN"
        if math.isinf(value):
            return "INFINITY" if value > 0 else "-INFINITY"
        text = repr(value)
        return text if any(c in text for c in ".en") else text + ".0"

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


def function_source(scalar, name) -> str:
    """C source of a function ``void name(const double *in, double *out)`` computing the
    outputs of the scalar graph (a `Scalarized`) from its inputs.

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
    fmt = CFormat()
    names = {n.index: Symbol("in", (k,)) for k, n in enumerate(graph.inputs)}
    outs = [(Symbol("out", (k,)), o) for k, o in enumerate(graph.outputs)]
    code = emit(graph, graph.inputs, outs, fmt, names=names, rewrite=False)  # see emit.py
    body = []
    for st in code.statements:
        if st.temporary:
            body.append(f"    const double {st.target} = {st.expr};")
        else:
            body.extend("    " + line for line in fmt.statement(fmt.symbol(st.target), st.expr))
    helpers = [h for name, h in HELPERS.items() if any(name + "(" in line for line in body)]
    return "\n".join([
        f"/* wengert: {len(graph.outputs)} outputs from {len(graph.inputs)} inputs */",
        "#include <math.h>", "", *(helpers + [""] if helpers else []),
        f"void {name}(const double *restrict in, double *restrict out)", "{", *body, "}",
        ""])


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


def library(source):
    """The shared library compiled from C source, once per source in a process (a
    `ctypes.CDLL`: its functions are attributes).

    Example:
        >>> try:
        ...     lib = library("int answer(void) { return 42; }")
        ...     print(lib.answer())
        ... except CompilerNotFound:
        ...     print(42)
        42
    """
    global _build_dir
    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    lib = _loaded.get(digest)
    if lib is not None:
        return lib
    cc = compiler()
    if _build_dir is None:
        _build_dir = tempfile.mkdtemp(prefix="wengert-c-")     # private to this user
    c_path = os.path.join(_build_dir, f"{digest}.c")
    so_path = os.path.join(_build_dir, f"{digest}.so")
    with open(c_path, "w") as f:
        f.write(source)
    result = subprocess.run([cc, "-O2", "-std=c99", "-shared", "-fPIC", "-o", so_path,
                             c_path, "-lm"], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"the C compiler ({cc}) failed on the generated code:\n"
                           f"{result.stderr[-2000:]}")
    lib = _loaded[digest] = ctypes.CDLL(so_path)
    return lib


# --------------------------------------------------------------------------------------
# the compiled function's entry
# --------------------------------------------------------------------------------------
def c_name(fn_name) -> str:
    # "wg_" and the function's name, which must then not be one of the helpers' (a
    # function named remainder or sign would clash with wg_remainder or wg_sign)
    return "wg_" + Names(C_RESERVED | _HELPER_STEMS).user(fn_name)


_HELPER_STEMS = frozenset(name[len("wg_"):] for name in HELPERS)


def source_of(d, entry) -> str:
    """The C source of a compiled function's current entry."""
    if entry.flavour == "c":
        return entry.source
    from .scalarize import NotScalar, float_form
    try:
        scalar = float_form(entry.graph, 10 ** 7, 10 ** 6)
    except NotScalar as e:
        raise ValueError("code('c'): C is written for graphs of float64 scalars or of "
                         f"arrays it can write element by element; this graph has {e}") \
            from None
    return function_source(scalar, c_name(d.fn_name))


def entry(d, key, graph, scalar, params, form):
    """An entry of a compiled function (see `wengert.staged`) that runs C; `form` is the
    `CallForm` of its Python glue (its head mirrors the compiled function's signature)."""
    from ..staged import Entry
    name = c_name(d.fn_name)
    source = function_source(scalar, name)
    cfn = load(source, name)
    ns = d.ns
    n_in, n_out = len(scalar.graph.inputs), len(scalar.graph.outputs)
    in_t = ns.bind(ctypes.c_double * max(n_in, 1), "in_t")
    out_t = ns.bind(ctypes.c_double * max(n_out, 1), "out_t")
    call = ns.bind(cfn, "cfunction")
    names = ns.names.fork()
    names.taken.update([d.fn_name] + [n for n, _ in params])
    lines, leaves = py.prologue(params, names, ns, "_miss", form=form)
    pieces, scalars = [], []                 # runs of scalars become list displays
    for leaf in leaves + [None]:
        if leaf is not None and leaf.kind is not np.ndarray:
            scalars.append(leaf.name)
            continue
        if scalars:
            pieces.append(f"[{', '.join(scalars)}]")
            scalars = []
        if leaf is not None:
            pieces.append(f"{leaf.name}.ravel().tolist()")
    buf, out, vals = names.own("in"), names.own("out"), names.own("v")
    values = (pieces[0][1:-1] if len(pieces) == 1 and pieces[0][0] == "["
              else f"*({' + '.join(pieces)})" if pieces else "")
    body = [f"{buf} = {in_t}({values})",
            f"{out} = {out_t}()",
            f"{call}({buf}, {out})",
            f"{vals} = {out}[:]"]
    exprs, k = [], 0
    for shape, dtype in zip(scalar.out_shapes, scalar.out_dtypes):
        n = int(np.prod(shape, dtype=np.int64))
        if shape:
            arr = f"{ns.fixed('_np', np)}.array({vals}[{k}:{k + n}], {ns.bind(dtype, 'dtype')})"
            exprs.append(arr if len(shape) == 1 else f"{arr}.reshape({shape!r})")
        else:
            exprs.append(f"bool({vals}[{k}])" if dtype.kind == "b" else f"{vals}[{k}]")
        k += n
    body.append(f"return {py.build_tree(graph.out_tree, exprs, ns)}")
    glue = "\n".join([f"def {d.fn_name}({form.head}):", *lines,
                      *("    " + b for b in body)]) + "\n"
    function = py.make_function(glue, d.fn_name, ns)
    e = Entry(key, graph, scalar.graph, "c", source, function, params)
    e.glue = glue
    return e
