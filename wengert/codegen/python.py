"""Python source from a graph: the format of the emitter for Python, and the function
around the emitted statements.

Two flavours of one format:

* ``"float"``: straight-line Python on floats with the `math` module, for scalar graphs
  (small arrays are scalarised first, see `scalarize.py`).  Nothing runs but the arithmetic
  itself, which is what makes tiny problems fast.  Where `math` raises and NumPy would
  give inf or nan (``log(-1)``, ``1/0``, overflow), the call is redone by the NumPy flavour,
  so results follow NumPy's conventions as eager evaluation does.
* ``"numpy"``: NumPy calls, for array graphs.  A primitive is spelled by the table below, or
  as its NumPy function when its implementation is one (``numpy.sin``, ``numpy.where``), or
  else as a call of its registered implementation bound in the function's namespace: every
  primitive of the registry, a user's too, has a spelling, and a new primitive needs no
  entry anywhere.

The generated function takes the traced function's arguments (pytrees as they are),
checks that they have the traced structure, shapes and dtypes (the guard: anything else
goes to `_miss`, which retraces), unpacks them, computes, and builds the result's pytree.
Names come from `names.Names`: no user text reaches the source unsanitised.
"""
from __future__ import annotations

import itertools
import math
import re

import numpy as np

from ..graph.graph import F64
from ..primitives import array as A
from ..primitives import scalar as S
from ..primitives.registry import CONST, INPUT, is_weak
from ..tree import CUSTOM, HELD, LEAF, registered, unflatten
from .emit import Symbol, emit
from .formats import Format
from .names import Names

FLOAT, NUMPY = "float", "numpy"

_CMP = {S.lt: "<", S.le: "<=", S.gt: ">", S.ge: ">=", S.eq: "==", S.ne: "!="}


def _literal(value) -> bool:
    """Whether repr(value) is a Python literal that evaluates back to an equal value (so it
    may appear in source): plain numbers, strings, None and tuples of them."""
    t = type(value)
    if t is float:
        return math.isfinite(value)
    if t in (int, bool, str, type(None)):
        return True
    if t is tuple:
        return all(_literal(v) for v in value)
    return False


class Namespace:
    """The globals of generated functions and the names under which objects are bound
    there (one name per object)."""

    def __init__(self, names=None):
        self.names = names or Names()
        self.globals = {"__builtins__": __builtins__}
        self._bound = {}

    def bind(self, obj, stem) -> str:
        key = id(obj)
        found = self._bound.get(key)
        if found is not None and self.globals[found] is obj:
            return found
        name = self.names.own(stem)
        self.globals[name] = obj
        self._bound[key] = name
        return name

    def fixed(self, name, obj) -> str:
        """Bind `obj` under the given name of the code's own (``_np``, ``_miss``)."""
        self.globals[name] = obj
        return name


class PythonFormat(Format):
    """Python spelling, `FLOAT` or `NUMPY` flavour (see the module doc).  Constants that
    are not plain numbers (arrays, inf, nan) are bound in the namespace.

    Example:
        >>> import wengert as wg
        >>> from wengert.codegen.emit import emit, Symbol
        >>> g = wg.trace(lambda x: wg.math.sin(x) * x + 1.0, 0.5)
        >>> print(emit(g, g.inputs, [(Symbol("y"), g.outputs[0])], PythonFormat(FLOAT)))
        y = x*_math.sin(x)+1.0
    """

    power = "**"
    pow_infix = False              # x**y: Python's ** can return a complex number
    minus_binds_tightly = True     # -a*b is (-a)*b: NumPy has no negative of a bool a
    max_expression = 400           # well inside what Python's parser nests

    def __init__(self, flavour=FLOAT, namespace=None):
        self.flavour = flavour
        self.ns = namespace or Namespace()
        self._np = self.ns.fixed("_np", np)
        self._math = self.ns.fixed("_math", math)

    def symbol(self, sym) -> str:
        return sym.name

    def number(self, value) -> str:
        t = type(value)
        if t is float:
            if math.isfinite(value):
                return repr(value)
        elif t is bool or t is int:
            return repr(value)
        return self.ns.bind(value, "k")

    def cast(self, node, arg):
        # NumPy code types a scalar by its Python type: a Python number is weak, a NumPy
        # scalar strong (NumPy 2).  The code's scalars are NumPy's (arguments are made
        # np.float64, NumPy functions return its scalars), its literals Python's; where
        # that differs from the graph and shows in the result's dtype (a float64 scalar
        # meeting float32), the operand is cast to what the graph says.
        if self.flavour != NUMPY or arg.shape or not node.op.elementwise:
            return None
        if arg.op is CONST:         # a literal: weak, unless the graph's is strong
            if type(arg.value) is float and not is_weak(arg) and \
                    any(b.dtype != arg.dtype for b in node.args):
                return f"{self._np}.float64"
            return None
        if arg.dtype.kind == "b" and node.dtype.kind in "fc" and node.op is not S.select:
            # a bool the graph reads as a number: NumPy's float functions would take it
            # in their float16 loop (np.sin(np.True_) is float16)
            return f"{self._np}.{node.dtype.name}"
        # (a comparison's operands meet in their own dtype, not in its bool)
        meet = node.dtype if node.dtype.kind != "b" else _operands_dtype(node)
        if arg.dtype != meet and is_weak(arg) and not is_weak(node):
            return _PYTHON_TYPE.get(arg.dtype.kind)
        return None

    def method(self, node, args):
        # x.reshape(...) where x is an array: np.reshape's dispatch costs ~2 us a call,
        # and a batched or differentiated graph reshapes often (a Python float has no
        # method: a scalar argument keeps the call)
        if self.flavour != NUMPY or not node.args or not node.args[0].shape:
            return None
        if node.op is A.reshape:
            return f"{_atom(args[0])}.reshape({tuple(node.params['shape'])!r})"
        if node.op is A.sum:        # (np.sum's dispatch is ~2 us too: a loss in a loop)
            axis, keep = node.params["axis"], node.params["keepdims"]
            inside = ", ".join(([f"axis={axis!r}"] if axis is not None else []) +
                               (["keepdims=True"] if keep else []))
            return f"{_atom(args[0])}.sum({inside})"
        return None

    def statement(self, target, expr) -> list:
        return [f"{target} = {expr}"]

    def comment(self, text) -> list:
        return [f"# {line}" for line in text.splitlines()]

    def _kwargs(self, params) -> str:
        if not params:
            return ""
        if not all(type(k) is str and k.isidentifier() for k in params):
            return f", **{self.ns.bind(dict(params), 'k')}"
        return "".join(f", {k}={v!r}" if _literal(v) else f", {k}={self.ns.bind(v, 'k')}"
                       for k, v in params.items())

    def apply(self, op, args, params) -> str:
        if op in _CMP:
            return f"({args[0]} {_CMP[op]} {args[1]})"
        if op is S.stop_gradient:
            return args[0]
        if self.flavour == FLOAT:
            return self._float_call(op, args, params)
        return self._numpy_call(op, args, params)

    def _float_call(self, op, args, params):
        if op is S.select:
            return f"({args[1]} if {args[0]} else {args[2]})"
        if op is S.abs:
            return f"abs({args[0]})"
        if op is S.pow:
            return f"{self._math}.pow({args[0]}, {args[1]})"
        fast = op.fast
        if fast is not None and getattr(math, getattr(fast, "__name__", ""), None) is fast:
            return f"{self._math}.{fast.__name__}({', '.join(args)})"
        if fast is not None and not params:
            fn = fast
        else:                       # a user's primitive: its evaluation, on floats
            fn = _Evaluate(op)
        return f"{self.ns.bind(fn, _stem(op))}({', '.join(args)}{self._kwargs(params)})"

    def _numpy_call(self, op, args, params):
        if op is A.getitem:
            return f"{_atom(args[0])}[{self._index(params['index'])}]"
        if op is A.matmul:
            return f"({_atom(args[0])} @ {_atom(args[1])})"
        if op is A.transpose and params["axes"]:
            # (an array of one axis or more is an ndarray here: its method is a view, and
            # half the cost of the primitive's implementation, which also takes floats)
            axes = tuple(params["axes"])
            return f"{_atom(args[0])}.T" if axes == (1, 0) else \
                f"{_atom(args[0])}.transpose({axes!r})"
        if op is S.numpy_ufunc and getattr(np, params["ufunc"].__name__, None) is \
                params["ufunc"]:
            return f"{self._np}.{params['ufunc'].__name__}({', '.join(args)})"
        impl = op.impl
        name = getattr(impl, "__name__", "")
        if name and getattr(np, name, None) is impl:          # a NumPy function itself
            return f"{self._np}.{name}({', '.join(args)}{self._kwargs(params)})"
        return f"{self.ns.bind(impl, _stem(op))}({', '.join(args)}{self._kwargs(params)})"

    def _index(self, index) -> str:
        parts = []
        for i in A.decode_index(index):
            if type(i) is slice:
                a, b, c = (("" if v is None else repr(v)) for v in (i.start, i.stop, i.step))
                parts.append(f"{a}:{b}" + (f":{c}" if c else ""))
            elif i is None:
                parts.append("None")
            elif i is Ellipsis:
                parts.append("...")
            elif _literal(i):
                parts.append(repr(i))
            else:
                parts.append(self.ns.bind(i, "k"))
        return ", ".join(parts) or "()"


_PYTHON_TYPE = {"f": "float", "i": "int"}


def _operands_dtype(node):
    """The dtype a node's operands meet in: their strong dtypes promoted (a weak scalar
    takes the other operand's), or theirs if all are weak."""
    strong = [a.dtype for a in node.args if not is_weak(a)]
    return np.result_type(*(strong or [a.dtype for a in node.args]))


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*$")


def _atom(text) -> str:
    """An argument's text as an operand of an infix operator or a subscript: the emitter
    hands call arguments over unparenthesised, and ``a+b @ c`` is not ``(a+b) @ c``."""
    return text if _NAME.match(text) else f"({text})"


class _Evaluate:
    """A primitive's evaluation on plain values, with its keyword parameters."""

    def __init__(self, op):
        self.op = op

    def __call__(self, *values, **params):
        return self.op.evaluate(values, params)


def _stem(op) -> str:
    return "".join(c if c.isalnum() else "_" for c in op.name)[:24] or "op"


# --------------------------------------------------------------------------------------
# the function around the statements
# --------------------------------------------------------------------------------------
class CallForm:
    """How a generated function takes its arguments, when they are more than positional
    parameters (`wengert.staged` mirrors the compiled function's signature).

    ``head`` is the text between the parentheses of its ``def``; ``forward`` passes all
    of them on to a function with the same head (``x, *args, k=k``), ``miss_call`` to
    the slow path, which binds them to the user's own parameter names.  ``varargs`` is
    ``(pack, element names)`` for a ``*args`` parameter: the prologue checks its length
    and unpacks it into the element names, which name slots of `params` as any parameter
    does.  ``varkw`` is the name of a ``**kwargs`` parameter, which must be empty."""

    def __init__(self, head, forward, miss_call, varargs=None, varkw=None):
        self.head, self.forward, self.miss_call = head, forward, miss_call
        self.varargs, self.varkw = varargs, varkw


def static_key(value):
    """What a static value is matched by, in the cache key and in the guard alike: its type
    and its value, and for a tuple or a frozenset its elements' too.  Equality alone is
    too weak: ``True == 1 == 1.0``, yet code traced for one can be wrong for another
    (``n is True``, ``type(n)(...)``, a float's dtype).  A nan matches any nan of its
    type: by ``==`` it would match nothing, not even itself, and compile again on every
    call.  ``-0.0`` does not match ``0.0``: ``1 / s`` tells them apart."""
    if isinstance(value, tuple):
        return (type(value), tuple(static_key(v) for v in value))
    if isinstance(value, frozenset):             # ({1} == {True}, as 1 == True)
        return (type(value), frozenset(static_key(v) for v in value))
    if isinstance(value, (complex, np.complexfloating)):      # each part as a float is
        return (type(value), static_key(float(value.real)), static_key(float(value.imag)))
    if _nan(value):
        return (type(value), "nan")
    if _zero(value):            # -0.0 == 0.0, yet 1/x or copysign tells them apart
        return (type(value), value, math.copysign(1.0, value))
    return (type(value), value)


def _nan(value) -> bool:
    return isinstance(value, (float, np.floating)) and value != value


def _zero(value) -> bool:
    return isinstance(value, (float, np.floating)) and value == 0


_PLAIN_TYPES = {int: "int", float: "float", str: "str"}


def _static_test(var, value, ns) -> str:
    """The guard's test that `var` is not the static value the code was traced for: true
    exactly where `static_key` differs.  It asks ``is`` first, because a setting usually is
    the very object it was (flags, None, small ints, names in the source), and then the
    code is as fast as a single comparison."""
    if value is None or type(value) is bool:      # singletons: identity is the key
        return f"{var} is not {value!r}"
    k = ns.bind(value, "static")
    key = static_key(value)
    if key != (type(value), value):     # (a key of its own: a tuple's, a nan's, a zero's)
        key = ns.bind(key, "key")
        return f"({var} is not {k} and {ns.fixed('_static_key', static_key)}({var}) != {key})"
    t = _PLAIN_TYPES.get(type(value)) or ns.bind(type(value), "type")
    return f"({var} is not {k} and (type({var}) is not {t} or {var} != {k}))"


class Leaf:
    """One array or number of the arguments: its variable name in the code, the type its
    value has once made canonical, its shape and dtype."""

    def __init__(self, name, kind, shape, dtype):
        self.name, self.kind, self.shape, self.dtype = name, kind, shape, dtype


def prologue(params, names, ns, miss, indent="    ", form=None):
    """Lines that check and unpack the arguments.

    `params`: one ``(name, spec)`` per positional argument, where spec is ``("static",
    value)`` (matched as `static_key` says), ``("default", value)`` (the very object: a
    parameter left at its default) or ``("tree", treedef, kinds)`` with `kinds` one
    ``(type, shape, dtype)`` per leaf.  Returns ``(lines, leaves)``: the leaves in pytree
    order, each a `Leaf`.  A failed check returns ``miss(*arguments)``, or ``miss(form.miss_call)`` where a
    `CallForm` says how the function takes its arguments (then `params` name its slots).

    Example:
        >>> from wengert.tree import flatten
        >>> tree = flatten((1.0, 2.0))[1]
        >>> lines, leaves = prologue([("p", ("tree", tree, [(float, (), None)] * 2))],
        ...                          Names(), Namespace(), "_miss")
        >>> print("\\n".join(lines))
            if type(p) is not tuple or len(p) != 2:
                return _miss(p)
            p_0, p_1 = p
            if type(p_0) is not float or type(p_1) is not float:
                return _miss(p)
        >>> [leaf.name for leaf in leaves]
        ['p_0', 'p_1']
    """
    args = form.miss_call if form is not None else ", ".join(n for n, _ in params)
    call_miss = f"return {miss}({args})"
    lines, leaf_checks, leaves = [], [], []

    def check(conds):
        if conds:
            lines.append(f"{indent}if {' or '.join(conds)}:")
            lines.append(f"{indent}    {call_miss}")

    if form is not None and form.varargs is not None:
        pack, elements = form.varargs
        n = len(elements)
        check([f"len({pack}) != {n}" if n else pack])
        if n:
            lines.append(f"{indent}{', '.join(elements)}{',' if n == 1 else ''} = {pack}")
    if form is not None and form.varkw is not None:
        check([form.varkw])
    for name, spec in params:
        if spec[0] == "static":
            leaf_checks.append(_static_test(name, spec[1], ns))
            continue
        if spec[0] == "default":
            leaf_checks.append(f"{name} is not {ns.bind(spec[1], 'default')}")
            continue
        _, tree, kinds = spec
        kinds = iter(kinds)
        todo = [(name, tree)]
        while todo:                   # pytrees nest shallowly; a work list all the same
            var, t = todo.pop(0)
            if t.kind == LEAF:
                kind, shape, dtype = next(kinds)
                leaves.append(Leaf(var, kind, shape, dtype))
                if kind is float:
                    leaf_checks.append(f"type({var}) is not float")
                elif kind is np.ndarray:
                    leaf_checks.append(
                        f"type({var}) is not {ns.fixed('_ndarray', np.ndarray)} or "
                        f"{var}.shape != {shape!r} or {var}.dtype is not "
                        f"{ns.bind(dtype, 'dtype')}")
                else:
                    leaf_checks.append(f"type({var}) is not {ns.bind(kind, 'type')}")
                continue
            if t.kind == "none":
                leaf_checks.append(f"{var} is not None")
                continue
            n = len(t.subtrees)
            if t.kind == "dict":
                keys = [repr(k) if type(k) in (str, int) else ns.bind(k, "key")
                        for k in t.meta]
                check([f"type({var}) is not dict",
                       f"{var}.keys() != {ns.bind(frozenset(t.meta), 'keys')}"])
                subs = [names.user(f"{var}_{k}") for k in t.meta]
                lines.extend(f"{indent}{s} = {var}[{k}]" for s, k in zip(subs, keys))
            else:
                items = var                 # the sequence the children are unpacked from
                if t.kind == CUSTOM:        # a registered class: its flatten gives them
                    cls, aux = t.meta
                    check([f"type({var}) is not {ns.bind(cls, 'type')}"])
                    items, aux_var = names.user(f"{var}_children"), names.user(f"{var}_aux")
                    lines.append(f"{indent}{items}, {aux_var} = "
                                 f"{ns.bind(registered(cls)[0], 'flatten')}({var})")
                    check([f"len({items}) != {n}", f"{aux_var} != {ns.bind(aux, 'aux')}"])
                elif t.kind == "namedtuple":
                    check([f"type({var}) is not {ns.bind(t.meta, 'type')}"])
                else:
                    check([f"type({var}) is not {t.kind}", f"len({var}) != {n}"])
                subs = [names.user(f"{var}_{i}") for i in range(n)]
                if n:
                    lines.append(f"{indent}{', '.join(subs)}{',' if n == 1 else ''} = {items}")
            todo[:0] = list(zip(subs, t.subtrees))
    check(leaf_checks)
    return lines, leaves


def build_tree(tree, exprs, ns) -> str:
    """The expression of a pytree whose leaves are the expressions `exprs` (in order).

    Example:
        >>> from wengert.tree import flatten
        >>> build_tree(flatten({"a": (1.0, 2.0), "b": None})[1], ["u", "v"], Namespace())
        "{'a': (u, v), 'b': None}"
    """
    if _depth(tree) > 50:
        # (a literal nested that deep is past what Python's parser takes: 200 levels)
        return (f"{ns.fixed('_unflatten', unflatten)}({ns.bind(tree, 'tree')}, "
                f"[{', '.join(exprs)}])")
    exprs = iter(exprs)

    def build(t):
        if t.kind == LEAF:
            return next(exprs)
        if t.kind == "none":
            return "None"
        if t.kind == HELD:          # a value that is no number, as it was at trace time
            return repr(t.meta) if _literal(t.meta) else ns.bind(t.meta, "const")
        parts = [build(c) for c in t.subtrees]    # recursion over the pytree's nesting
        if t.kind == "dict":
            return "{" + ", ".join(f"{ns.bind(k, 'key') if type(k) not in (str, int) else repr(k)}: {p}"
                                   for k, p in zip(t.meta, parts)) + "}"
        if t.kind == "list":
            return "[" + ", ".join(parts) + "]"
        if t.kind == "namedtuple":
            return f"{ns.bind(t.meta, 'type')}({', '.join(parts)})"
        tup = "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        if t.kind == CUSTOM:
            cls, aux = t.meta
            return f"{ns.bind(registered(cls)[1], 'unflatten')}({ns.bind(aux, 'aux')}, {tup})"
        return tup

    return build(tree)


def _depth(tree) -> int:
    """How deeply a pytree nests (a work list: no recursion over it)."""
    deepest, todo = 0, [(tree, 0)]
    while todo:
        t, d = todo.pop()
        deepest = max(deepest, d)
        todo.extend((c, d + 1) for c in t.subtrees)
    return deepest


def output_expr(node, expr, flavour, ns) -> str:
    """What the function returns for one output: Python floats and bools for float64 and
    bool scalars (as eager evaluation gives), NumPy scalars for the others, and a fresh
    array for an array constant.  NumPy code may hold a scalar as a 0-d array (``where``
    of scalars, a constant made by ``asarray``): ``[()]`` makes it a NumPy scalar, and
    leaves one as it is."""
    if flavour == NUMPY and node.shape == ():
        if node.dtype == F64:
            return f"float({expr})"
        if node.dtype.kind == "b":
            return f"bool({expr})"
        return f"{expr}[()]"
    if node.op is CONST and isinstance(node.value, np.ndarray):
        return f"{expr}.copy()"
    return expr


def _scatter(base, index, values):
    out = base.copy()
    out.flat[index] = values
    return out


def array_expr(elements, nodes, shape, dtype, ns) -> str:
    """An array of `shape` built from scalar element expressions (scalarised outputs).
    Where most elements are constants (the zeros of a sparse Hessian), a constant array
    is copied and only the others are written into it."""
    np_ = ns.fixed("_np", np)
    dt = ns.bind(dtype, "dtype")
    if not elements:
        return f"{np_}.zeros({shape!r}, {dt})"
    computed = [k for k, n in enumerate(nodes) if n.op is not CONST]
    if len(computed) * 2 < len(nodes):
        base = ns.bind(np.array([n.value if n.op is CONST else 0 for n in nodes],
                                dtype).reshape(shape), "k")
        if not computed:
            return f"{base}.copy()"
        return (f"{ns.fixed('_scatter', _scatter)}({base}, "
                f"{ns.bind(np.array(computed, dtype=np.intp), 'k')}, "
                f"[{', '.join(elements[k] for k in computed)}])")
    arr = f"{np_}.array([{', '.join(elements)}], {dt})"
    return arr if len(shape) == 1 else f"{arr}.reshape({shape!r})"


def function_source(fn_name, params, graph, flavour, ns, scalar=None, fallback=None,
                    miss="_miss", form=None):
    """The source of a Python function computing `graph` (see the module doc).

    Args:
        fn_name: a safe name for the function (from `Names.user`).
        params: the arguments, as for `prologue`.
        graph: the graph to compute; its inputs are the argument leaves in order, its
            outputs the result's leaves; ``graph.out_tree`` the result's structure.
        flavour: `FLOAT` or `NUMPY`.
        ns: the `Namespace` (shared by all entries of one compiled function).
        scalar: the `Scalarized` version of graph, to compute instead (float flavour).
        fallback: the name of a function to call with the arguments when math raises.
        form: a `CallForm`, where the function takes more than positional parameters.

    Example:
        >>> import wengert as wg
        >>> g = wg.trace(lambda x: x * x, np.ones(2))
        >>> print(function_source("square", [("x", ("tree", g.in_tree.subtrees[0],
        ...       [(np.ndarray, (2,), np.dtype(np.float64))]))], g, NUMPY, Namespace()))
        def square(x):
            if type(x) is not _ndarray or x.shape != (2,) or x.dtype is not _dtype0:
                return _miss(x)
            _r0 = x*x
            return _r0
        <BLANKLINE>
    """
    names = ns.names.fork()                # local variables: fresh for each function
    names.taken.update([fn_name] + [n for n, _ in params])
    fmt = PythonFormat(flavour, ns)
    lines, leaves = prologue(params, names, ns, miss, form=form)
    body = []
    # the graph that is emitted, and its input names
    target = scalar.graph if scalar is not None else graph
    symbols = {}
    if scalar is not None:
        inputs = iter(target.inputs)
        for leaf in leaves:
            size = int(np.prod(leaf.shape, dtype=np.int64))
            if leaf.kind is np.ndarray:
                elems = [names.user(f"{leaf.name}_{k}") for k in range(size)]
                flat = f"{leaf.name}.tolist()" if len(leaf.shape) == 1 else \
                    f"{leaf.name}.ravel().tolist()"
                if elems:
                    body.append(f"{', '.join(elems)}{',' if size == 1 else ''} = {flat}")
            elif leaf.kind is np.float64:       # float code takes Python floats (in a
                elems = [names.user(f"{leaf.name}_f")]  # name of its own: the fallback
                body.append(f"{elems[0]} = float({leaf.name})")  # gets the argument)
            else:
                elems = [leaf.name]
            for e in elems:
                symbols[next(inputs).index] = Symbol(e)
    else:
        for leaf, node in zip(leaves, target.inputs):
            symbols[node.index] = Symbol(leaf.name)
            if leaf.kind is float:      # NumPy's scalars give inf and nan where floats raise
                body.append(f"{leaf.name} = {fmt._np}.float64({leaf.name})")
            elif leaf.kind is complex:  # (and complex ones where Python's complex does)
                body.append(f"{leaf.name} = {fmt._np}.complex128({leaf.name})")
    outs = [(Symbol(names.own("r")), o) for o in target.outputs]
    code = emit(target, target.inputs, outs, fmt, names=symbols, reserved=names.taken,
                rewrite=False)    # (rounds as the traced function: see emit.py)
    exprs = [output_expr(o, s.name, flavour, ns) for s, o in outs]
    if flavour == NUMPY:
        body.extend(_freeing(fmt, code, exprs))
    else:                               # (floats: nothing worth freeing)
        body.extend(_lines(fmt, code.statements))
    if scalar is not None:
        grouped, k = [], 0
        for shape, dtype in zip(scalar.out_shapes, scalar.out_dtypes):
            n = int(np.prod(shape, dtype=np.int64))
            part = exprs[k:k + n]
            grouped.append(array_expr(part, target.outputs[k:k + n], shape, dtype, ns)
                           if shape else part[0])
            k += n
        exprs = grouped
    body.append(f"return {build_tree(graph.out_tree, exprs, ns)}")
    head = forward = ", ".join(n for n, _ in params)
    if form is not None:
        head, forward = form.head, form.forward
    src = [f"def {fn_name}({head}):", *lines]
    if fallback is not None:
        src.append("    try:")
        src.extend("        " + line for line in body)
        src.append("    except (ArithmeticError, ValueError):   # math raised: NumPy gives "
                   "inf or nan")
        src.append(f"        return {fallback}({forward})")
    else:
        src.extend("    " + line for line in body)
    return "\n".join(src) + "\n"


def loop_source(fn_name, scalar, n_consts, n_carry, ns, until=False):
    """The source of a Python function that runs a whole loop on Python floats: `scalar`
    is the float form of a scan's body (inputs consts + carry + one step's xs, outputs
    carry + ys, each array as its elements), written once inside a ``for``, so that a step
    costs its arithmetic and no call.  What depends on the consts alone is computed
    before the loop.

    The function is ``fn_name(n, start, *rows)``: `start` the elements of the consts and
    the initial carry, in order; `rows` one list per scanned array with elements, of its
    elements step by step (an element, or a list of them where a step reads several);
    ``n`` the number of steps, read where no array is scanned.  It returns a list of the
    elements of the final carry, and a list of one list per y of its elements step by
    step (as `rows`).  Math raises where NumPy would give inf or nan, as in the float
    flavour.

    With ``until`` (a while loop's step: no xs, and one y, whether to go on), the function
    is ``fn_name(go, start)``, as `array_loop_source`'s: ``while go:`` runs the step,
    whose y is the next `go`, and it returns the elements of the final carry and the
    number of steps taken.

    Example:
        >>> import wengert as wg
        >>> from wengert.codegen.scalarize import scalar_form
        >>> body = wg.trace(lambda w, c, x: (c * wg.math.exp(w) + x, c), 0.0, 0.0, 0.0)
        >>> print(loop_source("run", scalar_form(body), 1, 1, Namespace()), end="")
        def run(n, start, _rows0):
            w, c = start
            V0003 = _math.exp(w)
            _ys0 = []
            _y1 = _ys0.append
            for x in _rows0:
                V0005 = x+c*V0003
                _y0 = c
                c = V0005
                _y1(_y0)
            return [c], [_ys0]
    """
    names = ns.names.fork()
    names.taken.update([fn_name, "n", "start"])
    graph = scalar.graph
    fmt = PythonFormat(FLOAT, ns)
    sizes = [int(np.prod(shape, dtype=np.int64)) for shape in scalar.in_shapes]
    k1 = n_consts + n_carry
    symbols = {n.index: Symbol(names.user(n.label())) for n in graph.inputs}
    groups, k = [], 0                   # the symbols of each body input's elements
    for size in sizes:
        groups.append([symbols[n.index] for n in graph.inputs[k:k + size]])
        k += size
    carry = [s for g in groups[n_consts:k1] for s in g]
    x_groups = [g for g in groups[k1:] if g]
    n_carry_elements = len(carry)
    # the carry's new values are assigned to its own names, last (emit orders them)
    outs = list(zip(carry, graph.outputs[:n_carry_elements]))
    y_groups, k = [], n_carry_elements
    for shape in scalar.out_shapes[n_carry:]:
        size = int(np.prod(shape, dtype=np.int64))
        group = [Symbol(names.own("y")) for _ in range(size)]
        outs.extend(zip(group, graph.outputs[k:k + size]))
        y_groups.append(group)
        k += size
    # (what the consts alone give is the parameter part: computed before the loop)
    stepped = graph.inputs[sum(sizes[:n_consts]):]
    code = emit(graph, stepped, outs, fmt, names=symbols, reserved=names.taken,
                rewrite=False)    # (rounds as the traced function: see emit.py)

    def unpack(group):
        return group[0].name if len(group) == 1 else \
            "(" + ", ".join(s.name for s in group) + ")"

    rows = [names.own("rows") for _ in x_groups]
    start = [s.name for g in groups[:k1] for s in g]
    go = names.own("go") if until else None
    src = [f"def {fn_name}({go}, start):" if until else
           f"def {fn_name}(n, start{''.join(', ' + r for r in rows)}):"]
    if start:
        src.append(_unpacked(start, "start"))
    src.extend(_lines(fmt, code.statements[:code.hoisted], "    "))
    if until:
        i = names.own("i")
        src += [f"    {i} = 0", f"    while {go}:"]
        src.extend(_lines(fmt, code.statements[code.hoisted:], "        "))
        # (the test is a y of its own, as in array_loop_source: one that the consts alone
        # give is computed before the loop, and must not replace the first test)
        src += [f"        {go} = {y_groups[0][0].name}", f"        {i} += 1"]
        src.append(f"    return [{', '.join(s.name for s in carry)}], {i}")
        return "\n".join(src) + "\n"
    ys, appends = [names.own("ys") for _ in y_groups], [names.own("y") for _ in y_groups]
    for y, a in zip(ys, appends):
        src.append(f"    {y} = []")
        src.append(f"    {a} = {y}.append")
    if rows:
        src.append(f"    for {', '.join(unpack(g) for g in x_groups)} in "
                   f"{'zip(' + ', '.join(rows) + ')' if len(rows) > 1 else rows[0]}:")
    else:
        src.append(f"    for _ in {ns.fixed('_repeat', itertools.repeat)}(None, n):")
    body = _lines(fmt, code.statements[code.hoisted:], "        ")
    for group, a in zip(y_groups, appends):
        body.append(f"        {a}({unpack(group) if group else '()'})")
    src.extend(body or ["        pass"])
    src.append(f"    return [{', '.join(s.name for s in carry)}], [{', '.join(ys)}]")
    return "\n".join(src) + "\n"


def array_loop_source(fn_name, body, n_consts, n_carry, ns, until=False):
    """The source of a Python function that runs a whole loop on NumPy values: the
    statements of `body` (a scan's body graph: inputs consts + carry + one step's xs,
    outputs carry + ys) written once inside a ``for``.  A step then costs its NumPy calls:
    no call of a compiled body, no check of its arguments, and what depends on the consts
    alone (``W.T`` of a recurrent layer's gradient) is computed once, before the loop.

    The function is ``fn_name(steps, start, rows, ys)``: `steps` the step indices in the
    order they run; `start` the consts and the initial carry (arrays, and NumPy scalars
    for scalars: NumPy's conventions, inf and nan, as in the NumPy flavour); `rows` one
    array per scanned input, read at ``rows[k][i]``; `ys` one array per y, written at
    ``ys[k][i]``.  It returns the final carry, as a list.

    With ``until`` (a while loop's body: no xs, and one y, whether to go on), the function
    is ``fn_name(go, start)``: ``while go:`` runs the body, whose y is the next `go`.  It
    returns the final carry and the number of steps taken (what a gradient needs).

    Example:
        >>> import wengert as wg
        >>> body = wg.trace(lambda w, c, x: (c * wg.math.exp(w) + x, c), 0.0, 0.0, 0.0)
        >>> print(array_loop_source("run", body, 1, 1, Namespace()), end="")
        def run(steps, start, rows, ys):
            w, c = start
            _rows0, = rows
            _ys0, = ys
            V0003 = _np.exp(w)
            for _i0 in steps:
                x = _rows0[_i0]
                V0005 = x+c*V0003
                _y0 = c
                c = V0005
                _ys0[_i0] = _y0
            return [float(c)]
    """
    names = ns.names.fork()
    names.taken.update([fn_name, "steps", "start", "rows", "ys"])
    fmt = PythonFormat(NUMPY, ns)
    k1 = n_consts + n_carry
    symbols = {n.index: Symbol(names.user(n.label())) for n in body.inputs}
    start = [symbols[n.index].name for n in body.inputs[:k1]]
    carry = [symbols[n.index] for n in body.inputs[n_consts:k1]]
    xs = [symbols[n.index].name for n in body.inputs[k1:]]
    ys = [Symbol(names.own("y")) for _ in body.outputs[n_carry:]]
    # (the carry's new values are assigned to its own names, last: emit orders them)
    outs = list(zip(carry + ys, body.outputs))
    code = emit(body, body.inputs[n_consts:], outs, fmt, names=symbols,
                reserved=names.taken, rewrite=False)   # (rounds as the traced function)
    row_names, y_names = [names.own("rows") for _ in xs], [names.own("ys") for _ in ys]
    i = names.own("i")

    if until:
        go = names.own("go")
        src = [f"def {fn_name}({go}, start):", _unpacked(start, "start")]
        src.extend(_lines(fmt, code.statements[:code.hoisted], "    "))
        src += [f"    {i} = 0", f"    while {go}:"]
    else:
        src = [f"def {fn_name}(steps, start, rows, ys):"]
        src += [_unpacked(v, w) for v, w in ((start, "start"), (row_names, "rows"),
                                             (y_names, "ys")) if v]
        src.extend(_lines(fmt, code.statements[:code.hoisted], "    "))
        src.append(f"    for {i} in steps:")
    loop = [f"        {x} = {r}[{i}]" for x, r in zip(xs, row_names)]
    loop.extend(_lines(fmt, code.statements[code.hoisted:], "        "))
    for c, o in zip(carry, body.outputs):
        if o.shape == () and o.dtype == F64 and (o.op is CONST or o.op is not INPUT and
                                                  not o.op.builtin):
            # (a float's division by zero raises, NumPy's gives inf: a scalar carry stays
            # a NumPy scalar where a constant or a user's primitive gives a float)
            loop.append(f"        {c.name} = {fmt._np}.float64({c.name})")
    if until:
        loop += [f"        {go} = {ys[0].name}", f"        {i} += 1"]
    else:
        loop.extend(f"        {b}[{i}] = {y.name}" for b, y in zip(y_names, ys))
    src.extend(loop)
    final = [output_expr(o, c.name, NUMPY, ns) for c, o in zip(carry, body.outputs)]
    src.append(f"    return [{', '.join(final)}]" + (f", {i}" if until else ""))
    return "\n".join(src) + "\n"


def _unpacked(names, whole):
    """The line of a generated loop that unpacks the sequence `whole` into `names`."""
    return f"    {', '.join(names)}{',' if len(names) == 1 else ''} = {whole}"


def _lines(fmt, statements, indent=""):
    """The source lines of emitted statements (`emit.Statement`)."""
    return [indent + line for st in statements for line in fmt.statement(
        st.target if isinstance(st.target, str) else st.target.name, st.expr)]


_TOKEN = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")     # (a word of an expression)


def _freeing(fmt, code, returned):
    """The lines of NumPy code's statements, each temporary deleted after the statement
    that reads it last: a gradient's backward part then lets each forward array go once
    it has been used for the last time, as an eager sweep does, rather than holding every
    one until the function returns (a deep network's compiled gradient peaks at about
    half the memory)."""
    temporaries = {t for t in code.temporaries if isinstance(t, str)}
    if not temporaries:
        return _lines(fmt, code.statements)
    last = {}
    for k, st in enumerate(code.statements):
        for t in _TOKEN.findall(st.expr):       # (a name per token: linear in the text)
            if t in temporaries:
                last[t] = k
    kept = set(_TOKEN.findall(" ".join(returned)))  # (read by the return: never freed)
    freed = {}
    for t, k in last.items():
        if t not in kept:
            freed.setdefault(k, []).append(t)
    lines = []
    for k, st in enumerate(code.statements):
        lines.extend(_lines(fmt, [st]))
        if k in freed and k < len(code.statements) - 1:    # (the return frees the rest)
            lines.append("del " + ", ".join(sorted(freed[k])))
    return lines


def make_function(source, fn_name, ns):
    """Execute generated source in the namespace and return the function it defines.

    Example:
        >>> ns = Namespace()
        >>> _ = ns.fixed("_np", np)
        >>> make_function("def f(x):\\n    return x * x\\n", "f", ns)(4.0)
        16.0
    """
    code = compile(source, f"<wengert {fn_name}>", "exec")
    exec(code, ns.globals)
    return ns.globals.pop(fn_name)

