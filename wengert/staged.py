"""Staged compilation: `compile` traces a function once per argument signature, optimises
its graph, generates code, and returns a function that runs the generated code.

The ADDS idea (seed 002): derive once, then evaluate straight-line code that does no graph
work at run time.  The steps, each a small graph-to-graph or graph-to-text step:

1. **trace** the function with abstract values of the arguments' shapes and dtypes (static
   arguments are baked in as constants), through any transformations it contains;
   interning, simplification and constant folding run as the graph is built, so what
   depends only on static arguments and constants is computed now, once (hoisted);
2. **scalarise** a graph of small arrays into a graph of scalars (`codegen.scalarize`);
3. **emit** the nodes the outputs need (dead code is never written) with the one emitter,
   single-use temporaries inlined, in Python (`codegen.python`) or C (`codegen.c`);
4. **dispatch**: the function returned *is* the generated code.  Its first lines check
   that the arguments have the traced structure, shapes and dtypes; anything else goes to
   the slow path, which finds (or traces) the entry for the new signature and puts that
   entry's code in place.  So a call costs the generated code and nothing more.
"""
from __future__ import annotations

import inspect
import threading
import types

import numpy as np

from .api import _check_fun, _param_names, trace
from .codegen import python as py
from .codegen.count import count_ops
from .codegen.scalarize import not_float, scalarize

# Rough costs on CPython: an arithmetic operation on floats, and a NumPy call on small
# arrays plus its cost per element.  They decide between the float and NumPy flavours.
FLOAT_OP_S, NUMPY_CALL_S, NUMPY_ELEMENT_S = 30e-9, 2e-6, 2e-9
from .errors import ConcretizationError
from .graph.active import options
from .graph.graph import Graph, ShapeDtype, aval, canonical
from .graph.node import Node
from .primitives.registry import CONST
from .tree import flatten, hold_constants, unflatten

BACKENDS = ("python", "numpy", "float", "c")


class Entry:
    """What one trace produced: the optimised graph, the graph the code computes (its
    scalarised form where there is one), the generated source and function."""

    def __init__(self, key, graph, emitted, flavour, source, function, params):
        self.key = key
        self.graph = graph              # the optimised graph of the function
        self.emitted = emitted          # the graph the code computes
        self.flavour = flavour          # "float", "numpy" or "c"
        self.source = source
        self.function = function
        self.params = params            # the argument specs of the prologue


def _leaf(x):
    """A leaf as compiled code receives it: Python ints become floats (as in `trace`), NumPy
    float64 scalars and 0-d arrays become floats."""
    if type(x) is int:
        return float(x)
    return canonical(x)


def _kind(x):
    shape, dtype = aval(x)
    return (type(x), shape, dtype)


class _Dispatcher:
    """The slow path of a compiled function: signatures, the cache, tracing, code swaps."""

    def __init__(self, f, static, backend, name):
        self.f = f
        self.static = static
        self.backend = backend
        self.ns = py.Namespace()
        self.fn_name = self.ns.names.user(name)
        self.arg_names = None
        self.cache = {}
        self.function = None
        self.ns.fixed("_miss", self.miss)
        self._local = threading.local()

    # --- signatures ------------------------------------------------------------------------
    def signature(self, args):
        """(key, canonical args, prologue specs) of a call."""
        key, canon, specs = [], list(args), []
        for i, a in enumerate(args):
            if i in self.static:
                try:
                    hash(a)
                except TypeError:
                    raise TypeError(f"compile: static argument {i} ({type(a).__name__}) must "
                                    "be hashable: it is part of the cache key") from None
                key.append(("static", type(a), a))
                specs.append(("static", a))
                continue
            leaves, tree = flatten(a)
            leaves = [_leaf(x) for x in leaves]
            kinds = tuple(_kind(x) for x in leaves)
            key.append((tree, kinds))
            canon[i] = unflatten(tree, leaves)
            specs.append(("tree", tree, kinds))
        return tuple(key), canon, specs

    # --- the slow path ---------------------------------------------------------------------
    def miss(self, *args):
        """Called by the generated guard when the arguments differ from the traced ones."""
        if _traced(args):
            # inside another transformation: trace through f itself, so it differentiates
            return self.f(*args)
        if len(args) != len(self.arg_names or args):
            raise TypeError(f"{self.fn_name}() was compiled for {len(self.arg_names)} "
                            f"arguments, got {len(args)}")
        key, canon, specs = self.signature(args)
        entry = self.cache.get(key)
        if entry is None:
            entry = self.cache[key] = self.build(key, canon, specs)
        self.use(entry)
        if getattr(self._local, "retry", False):
            raise AssertionError("compile: the guard of the generated code rejects the "
                                 "arguments it was generated for (a bug in wengert)")
        self._local.retry = True
        try:
            return entry.function(*canon)
        finally:
            self._local.retry = False

    def use(self, entry):
        """Make `entry` the code the compiled function runs."""
        fn = self.function
        fn.__code__ = entry.function.__code__
        fn.source, fn.graph = entry.source, entry.graph
        fn.entry = entry

    # --- tracing and code generation ---------------------------------------------------------
    def dynamic(self, canon):
        return [a for i, a in enumerate(canon) if i not in self.static]

    def traced_function(self, canon):
        """f as a function of its dynamic arguments only (static ones baked in), keeping
        f's parameter names for the graph's inputs."""
        f, static, n = self.f, self.static, len(canon)
        fixed = {i: canon[i] for i in static}

        def dynamic_f(*dyn):
            it = iter(dyn)
            return f(*[fixed[i] if i in fixed else next(it) for i in range(n)])

        names = _param_names(f)
        names = [names[i] if i < len(names) else f"arg{i}" for i in range(n)]
        dynamic_f.__signature__ = inspect.Signature(
            [inspect.Parameter(names[i], inspect.Parameter.POSITIONAL_ONLY)
             for i in range(n) if i not in static])
        return dynamic_f

    def trace(self, canon, optimize=True):
        if isinstance(self.f, Graph):
            got = [aval(x) for x in flatten(canon)[0]]
            want = [(n.shape, n.dtype) for n in self.f.inputs]
            if got != want:
                show = lambda avals: ", ".join(f"{d}{list(s)}" for s, d in avals)
                raise ValueError(f"a compiled graph runs on the shapes and dtypes it was "
                                 f"traced with ({show(want)}), got ({show(got)}); trace "
                                 "the function again, or compile the function itself")
            return self.f
        dyn = [_abstract(x) for x in self.dynamic(canon)]
        with options(optimize=optimize):
            try:
                return trace(self.traced_function(canon), *dyn)
            except ConcretizationError as e:
                raise ConcretizationError(
                    f"{e} If the branch is on an argument that is a setting rather than "
                    "data, mark it static: wg.compile(f, ..., static_argnums=(i,)).") from None

    def build(self, key, canon, specs):
        graph = self.trace(canon)
        if not isinstance(self.f, Graph):
            _hold_constant_outputs(graph)
        if self.arg_names is None:
            self.arg_names = self.param_names(len(canon))
        params = list(zip(self.arg_names, specs))
        backend = self.backend
        scalar = None
        if backend != "numpy" and not_float(graph.live_nodes()) is None:
            scalar = (scalarize(graph) if backend == "python" else
                      scalarize(graph, 10 ** 7, 10 ** 6))
            if backend == "python" and scalar is not None and not _faster(scalar, graph):
                scalar = None
        if backend in ("float", "c") and scalar is None:
            raise ValueError(f"compile(backend={backend!r}) needs a graph of float64 scalars "
                             "or of arrays it can write element by element; this one has "
                             f"{_why_not_scalar(graph)}: use backend='python'")
        if backend == "c":
            from .codegen import c
            return c.entry(self, key, graph, scalar, params)
        flavour = py.FLOAT if scalar is not None else py.NUMPY
        fallback = None
        if flavour == py.FLOAT:
            fallback = self.ns.bind(_Lazy(self, graph, params), "numpy_version")
        source = py.function_source(self.fn_name, params, graph, flavour, self.ns, scalar,
                                    fallback)
        function = py.make_function(source, self.fn_name, self.ns)
        emitted = scalar.graph if scalar is not None else graph
        return Entry(key, graph, emitted, flavour, source, function, params)

    def param_names(self, n):
        names = [] if isinstance(self.f, Graph) else _param_names(self.f)
        return [self.ns.names.user(names[i] if i < len(names) else f"arg{i}")
                for i in range(n)]


class _Lazy:
    """The NumPy flavour of an entry, built the first time the float flavour needs it."""

    def __init__(self, dispatcher, graph, params):
        self.d, self.graph, self.params = dispatcher, graph, params
        self.function = None

    def __call__(self, *args):
        if self.function is None:
            ns = py.Namespace()
            ns.fixed("_miss", self.d.miss)
            name = ns.names.user(self.d.fn_name)
            src = py.function_source(name, self.params, self.graph, py.NUMPY, ns)
            self.function = py.make_function(src, name, ns)
        return self.function(*args)


def _hold_constant_outputs(graph):
    """Hold the graph's constant int scalar outputs (an aux's step count, say) in its
    result's structure, as a trace holds strings: a constant needs no code, and float
    code (Python floats, C doubles) has no ints.  (Not when all outputs are: a graph
    without outputs reads as all of its nodes.)"""
    outs = graph.outputs
    held = [o.op is CONST and o.shape == () and not_float([o]) is not None for o in outs]
    if any(held) and not all(held):
        values = [o.value if h else o for o, h in zip(outs, held)]
        graph.outputs, graph.out_tree = hold_constants(graph.out_tree, values,
                                                       lambda v: type(v) is not Node)


def _faster(scalar, graph) -> bool:
    """Whether straight-line float code should beat NumPy calls on the arrays."""
    ops = [n for n in graph.live_nodes() if n.args]
    numpy_s = len(ops) * NUMPY_CALL_S + sum(n.size for n in ops) * NUMPY_ELEMENT_S
    return sum(1 for n in scalar.graph.live_nodes() if n.args) * FLOAT_OP_S <= numpy_s


def _why_not_scalar(graph) -> str:
    odd = not_float(graph.live_nodes())
    if odd is not None:
        return f"a value of dtype {odd.dtype}"
    return "large arrays or a primitive that has no element-by-element form"


def _abstract(x):
    leaves, tree = flatten(x)
    return unflatten(tree, [ShapeDtype(*aval(v)) for v in leaves])


def _traced(args) -> bool:
    leaves, _ = flatten(args)
    return any(type(v) is Node for v in leaves)


def compile(f, *example_args, static_argnums=(), backend="python"):
    """Compile f: trace it once per argument signature, optimise its graph, generate code.

    Args:
        f: a function of numbers, arrays and pytrees of them; any transformation of one
            (``wg.grad(f)``, ``wg.hessian(f)``); or a `Graph` (from `wg.trace`).
        *example_args: arguments of the shapes and dtypes to compile for (their values are
            not used).  With none, f is compiled at its first call.
        static_argnums: positions of arguments that are settings rather than data (ints,
            strings, flags): their values are baked into the code, and a call with other
            values compiles again.  They must be hashable.
        backend: ``"python"`` (default) writes straight-line Python on floats when the
            graph is small and of float64 scalars or small arrays, and NumPy code
            otherwise; ``"float"`` / ``"numpy"`` ask for one of the two; ``"c"`` compiles
            a scalar graph with the system's C compiler (see `wengert.codegen.c`).

    Returns:
        A function with f's arguments.  Calls with other shapes or dtypes compile again (a
        cache keyed by them).  It has attributes ``source`` (the generated code), ``graph``
        (the optimised graph), ``count()`` (operations by kind; ``count(plain=True)``
        counts plain AD, with interning and simplification off) and ``code(language)``
        (the same computation as "python", "c", "fortran" or "adds" text).  Leaves of
        the result that are not numbers or arrays (a string or an object in an aux) are
        returned as f returned them at trace time; text made from a traced value is
        refused (`ConcretizationError`).

    A Python ``if`` on a traced value cannot be compiled (`ConcretizationError`): write
    it with ``wg.select`` / ``wengert.numpy.where``, or make the argument static.

    Example:
        >>> import wengert as wg
        >>> def f(x, y):
        ...     return x * y + wg.math.sin(x)
        >>> df = wg.compile(wg.grad(f, argnums=(0, 1)), 2.0, 3.0)
        >>> df(2.0, 3.0)
        (2.5838531634528574, 2.0)
        >>> print(df.source)
        def f(x, y):
            if type(x) is not float or type(y) is not float:
                return _miss(x, y)
            try:
                _r0 = y+_math.cos(x)
                _r1 = x
                return (_r0, _r1)
            except (ArithmeticError, ValueError):   # math raised: NumPy gives inf or nan
                return _numpy_version0(x, y)
        <BLANKLINE>
        >>> df.count()
        {'add': 1, 'mul': 0, 'div': 0, 'call': 1, 'pow': 0, 'neg': 0, 'cmp': 0}
    """
    if backend not in BACKENDS:
        raise ValueError(f"compile: backend must be one of {BACKENDS}, got {backend!r}")
    if isinstance(f, Graph):
        return _compile_graph(f, backend)
    _check_fun(f, "compile")
    static = _static_argnums(static_argnums, len(example_args) if example_args else None)
    name = getattr(f, "__name__", None) or "compiled"
    if name == "<lambda>":
        name = "compiled"
    d = _Dispatcher(f, static, backend, name)
    _start(d, f, example_args if example_args or not _param_names(f) else None)
    return d.function


def _start(d, f, examples):
    """Make the public function (its own function object: entries' code is swapped into
    it), compiled for the examples if there are any."""
    src = f"def {d.fn_name}(*args):\n    return _miss(*args)\n"
    fn = d.function = types.FunctionType(py.make_function(src, d.fn_name, d.ns).__code__,
                                         d.ns.globals, d.fn_name)
    fn.__doc__ = getattr(f, "__doc__", None)
    fn.__wrapped__ = f
    fn.source, fn.graph, fn.entry = None, None, None
    fn.count = lambda plain=False: _count(d, plain)
    fn.code = lambda language="python": _code(d, language)
    fn.cache = d.cache
    if examples is not None:
        d.arg_names = d.param_names(len(examples))
        key, canon, specs = d.signature(examples)
        d.use(d.cache.setdefault(key, d.build(key, canon, specs)))


def _current(d):
    entry = d.function.entry
    if entry is None:
        raise ValueError("this compiled function has not been called yet: call it (or pass "
                         "example arguments to wg.compile) first")
    return entry


def _count(d, plain):
    """Operations of the current entry by kind: of the emitted code, or (plain=True) of
    the graph traced with interning and simplification off."""
    entry = _current(d)
    if not plain:
        return count_ops(entry.emitted)
    if isinstance(d.f, Graph):
        raise ValueError("count(plain=True) needs the function, not a graph")
    canon = [spec[1] if spec[0] == "static" else unflatten(
        spec[1], [ShapeDtype(s, t) for _, s, t in spec[2]]) for _, spec in entry.params]
    return count_ops(d.trace(canon, optimize=False))


def _code(d, language):
    from .codegen import c, text
    entry = _current(d)
    if language == "python":
        return entry.source
    if language == "c":
        return c.source_of(d, entry)
    if language in ("fortran", "adds"):
        return text.source_of(entry, language)
    raise ValueError(f"code: language must be 'python', 'c', 'fortran' or 'adds', got "
                     f"{language!r}")


def _static_argnums(static_argnums, nargs):
    if isinstance(static_argnums, int) and not isinstance(static_argnums, bool):
        static_argnums = (static_argnums,)
    try:
        nums = tuple(int(i) for i in static_argnums)
    except TypeError:
        raise TypeError(f"compile: static_argnums must be an int or a tuple of ints, got "
                        f"{static_argnums!r}") from None
    if nargs is not None:
        for i in nums:
            if not -nargs <= i < nargs:
                raise ValueError(f"compile: static_argnums={i} is out of range for "
                                 f"{nargs} example arguments")
        nums = tuple(i % nargs for i in nums)
    return frozenset(nums)


def _compile_graph(graph, backend):
    """A graph (from wg.trace) compiled to a function of its inputs, for its shapes."""
    if graph.in_tree is None:
        raise ValueError("compile: the graph has no argument structure; make it with "
                         "wg.trace")
    examples = unflatten(graph.in_tree, [_example(n) for n in graph.inputs])
    d = _Dispatcher(graph, frozenset(), backend, "graph")
    _start(d, graph, list(examples))
    return d.function


def _example(node):
    """A value of the node's shape and dtype, for the signature of a graph's arguments."""
    if node.shape == () and node.dtype == np.float64:
        return 0.0
    return np.zeros(node.shape, node.dtype)
