"""The computational graph (Wengert list) and how nodes enter it.

Every node is created through `Graph.apply`, which does what seed 002 (ADDS, §3.2) does
when it meets an operation:

1. constants are interned by value (one node per value, the paper's ``*numlist*``);
2. an operation on constants only is folded into a constant (IEEE arithmetic: ``0/0`` is
   nan); any other is simplified if it can be (``x+0 -> x``, ``x/x -> 1``; the rules are
   in `simplify.py`);
3. an existing node with the same operation, arguments and parameters is looked up and
   returned (Algorithm 1, common-subexpression elimination by construction), with the
   arguments of commutative operations in creation order;
4. only then is a new node made, its value computed if its arguments have values.

Steps 1-3 are switched off together by ``wg.options(optimize=False)`` (or
``Graph(optimize=False)``) to count what plain AD would compute, except that Python floats
stay interned (a constant computes nothing).

Mark down (Algorithm 2) and mark up (Algorithm 3) select the nodes the outputs need and the
nodes that depend on the inputs; every sweep in `wengert.ad` works on their intersection.
All graph walks are loops over creation order: there is no recursion over graph depth.
"""
from __future__ import annotations

import hashlib
import sys

import numpy as np

from ..primitives.registry import CONST as _CONST, INPUT as _INPUT, COPY as _COPY
from ..primitives.registry import NO_PARAMS as _NO_PARAMS, OVERLOADS as _OVERLOADS
from ..primitives.registry import shape_of as _shape_of, _canonical_scalar, is_weak
from ..primitives.registry import weak_result, _PYTHON_SCALARS, issparse as _is_sparse
from .active import ieee_arithmetic, is_recording, optimizing
from .node import Node, _type_str
from ..errors import GraphTooLarge, NoValue

F64 = np.dtype(np.float64)
I64 = np.dtype(np.int64)
BOOL = np.dtype(np.bool_)


# --------------------------------------------------------------------------------------
# abstract values
# --------------------------------------------------------------------------------------
class ShapeDtype:
    """An abstract value: a shape and a dtype, no numbers.  Pass one to `wg.trace` (or
    `wg.compile`) where an example value would do.  ``weak=True`` stands for a Python
    number, whose dtype gives way to the other operand's (NumPy 2's and JAX's rule, see
    `wengert.primitives.registry.is_weak`); an example value that is a Python number
    stands for one of those.

    Example:
        >>> import numpy as np, wengert as wg
        >>> wg.trace(lambda x: 2.0 * x, wg.ShapeDtype(())).outputs[0].value is None
        True
        >>> x32 = wg.ShapeDtype((3,), np.float32)
        >>> for s in (wg.ShapeDtype(()), wg.ShapeDtype((), weak=True)):
        ...     print(wg.trace(lambda x, s: x * s, x32, s).outputs[0].dtype)
        float64
        float32
    """

    __slots__ = ("shape", "dtype", "weak", "sharding")

    def __init__(self, shape=(), dtype=np.float64, weak=False, *, weak_type=None,
                 sharding=None):
        # (JAX's ShapeDtypeStruct(shape, dtype, weak_type=, sharding=) is this class; a
        # sharding is the one device's, wengert.sharding, kept as it is given)
        if sharding is not None:
            from ..sharding import check_shardings
            check_shardings(sharding, _Shaped(shape), "ShapeDtype")
        self.sharding = sharding
        if isinstance(shape, (int, np.integer)):
            raise TypeError(f"ShapeDtype: the shape must be a tuple of ints, got {shape!r} "
                            f"(write ({shape},))")
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak = bool(weak if weak_type is None else weak_type)

    @property
    def weak_type(self):
        """JAX's name for `weak`."""
        return self.weak

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def __eq__(self, other):
        if type(other) is not ShapeDtype:
            return NotImplemented
        return (self.shape, self.dtype, self.weak) == (other.shape, other.dtype, other.weak)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak))

    def __repr__(self):
        weak = ", weak" if self.weak else ""
        return f"ShapeDtype({_type_str(self.shape, self.dtype)}{weak})"


class _Shaped:
    """Something of a shape, for a sharding's check against it."""

    __slots__ = ("shape",)

    def __init__(self, shape):
        self.shape = tuple(shape) if not isinstance(shape, (int, np.integer)) else (shape,)


def shape_dtype(value) -> ShapeDtype:
    """The abstract value of a concrete one: weak for a Python number."""
    if type(value) is ShapeDtype:
        return value
    return ShapeDtype(*aval(value), weak=type(value) in _PYTHON_SCALARS)


def aval(value):
    """(shape, dtype) of a concrete value; fast for Python scalars."""
    t = type(value)
    if t is np.ndarray:
        return value.shape, value.dtype
    if t is float:
        return (), F64
    if t is int:
        return (), I64
    if t is bool:
        return (), BOOL
    if t is ShapeDtype or t is Node:
        return value.shape, value.dtype
    a = np.asarray(value)
    return a.shape, a.dtype


def canonical(value):
    """Values are kept as Python scalars when they are scalars of float64/bool (fast),
    NumPy arrays otherwise."""
    t = type(value)
    if t is float or t is int or t is bool:
        return value
    if t is np.ndarray:
        return float(value) if value.ndim == 0 and value.dtype == F64 else value
    if t is np.float64:
        return float(value)
    if t is np.bool_:
        return bool(value)
    if isinstance(value, (list, tuple)):
        return np.asarray(value)
    return value


def number(value):
    """A 0-d array as the scalar it holds, and any scalar as scalar values are: a Python
    float or bool for float64 and bool, a NumPy scalar for other dtypes (as a primitive
    on scalars gives them); arrays with dimensions unchanged."""
    if type(value) is np.ndarray:
        if value.ndim:
            return value
        value = value[()]
    return _canonical_scalar(value)


def _const_key(value):
    t = type(value)
    if t is float:
        # A float keys itself, except that 0.0 == -0.0 and nan != nan: those key by their
        # bits.  Every other kind of value keys as a tuple, so 1 and 1.0 stay apart.
        return value if (value and value == value) else (float, value.hex())
    if t is int or t is bool:
        return (t, value)
    if t is np.ndarray and value.size > 64:
        # A large array (a batch of data) is one constant per object: hashing its bytes on
        # every call would cost more than the sharing saves.  The node keeps the object
        # alive, so its id is not reused while the graph lives.
        return ("id", id(value))
    a = np.asarray(value)
    return (a.dtype.str, a.shape, a.tobytes())


def _digest_value(h, v):
    """Feed a constant or a parameter to the hash `h`: arrays by their bytes (their repr
    elides the middle of a large one), an object with a ``digest_into(h)`` method by what
    it feeds (a parameter whose repr is short for printing), anything else by its repr."""
    if hasattr(type(v), "digest_into"):
        h.update(type(v).__name__.encode())
        v.digest_into(h)
    elif isinstance(v, (np.ndarray, np.generic)):
        a = np.ascontiguousarray(v)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes() if a.dtype.kind != "O" else repr(a.tolist()).encode())
    elif isinstance(v, (tuple, list)):
        h.update(f"{type(v).__name__}{len(v)}".encode())
        for x in v:
            _digest_value(h, x)
    else:
        h.update(f"{type(v).__name__}:{v!r}".encode())


def _params_key(params):
    if not params:
        return ()
    try:
        key = tuple(sorted(params.items()))
        hash(key)
        return key
    except TypeError:           # unhashable parameters: the node is not interned
        return None


# --------------------------------------------------------------------------------------
# the graph
# --------------------------------------------------------------------------------------
class Graph:
    """A computational graph: nodes in creation order, which is a topological order.

    Attributes:
        nodes: every node, ``nodes[i].index == i``.
        inputs, outputs: the nodes a traced function reads and returns (set by `wg.trace`).
        optimize: whether interning and simplification are on (see `wg.options`).
        ieee: whether simplification keeps to the rewrites exact in IEEE arithmetic.
        straight_line: derivative rules must not build conditionals (`select`) in it:
            ADDS's language and FORTRAN 77, which its programs are emitted in, have no
            conditional expression.  A rule then uses its plain formula (see `pow`).
        max_nodes: making a node past this many raises `GraphTooLarge` (no limit unless
            given; ADDS sets one).

    A graph returned by `wg.trace` is callable: ``graph(*args)`` evaluates it.  ``str(graph)``
    prints the part the outputs need as SSA text.

    Example:
        >>> import wengert as wg
        >>> g = wg.trace(lambda x, y: x * y + wg.math.sin(x), 2.0, 3.0)
        >>> print(g)
        graph(x: f64[], y: f64[]):
          %2: f64[] = mul(x, y)
          %3: f64[] = sin(x)
          %4: f64[] = add(%2, %3)
          return %4
        >>> g(2.0, 3.0)
        6.909297426825682
    """

    def __init__(self, optimize=None, straight_line=False, ieee=None, max_nodes=None):
        self.nodes: list[Node] = []
        self.max_nodes = sys.maxsize if max_nodes is None else max_nodes
        self.optimize = optimizing() if optimize is None else bool(optimize)
        self.ieee = ieee_arithmetic() if ieee is None else bool(ieee)
        self.nested_optimize = self.optimize    # the setting once a transformation nests
        #                                         in it (an eager call's graph: api._Call)
        self.straight_line = straight_line
        self._table = {}          # (op, params, *arg indices) -> node: Algorithm 1
        self._consts = {}         # constant key -> node: ADDS's *numlist*
        self._originals = {}      # id -> a user's array whose copy is a constant
        self.inputs: list[Node] = []
        self.outputs: list[Node] = []
        self.in_tree = None       # pytree structure of the traced function's arguments
        self.out_tree = None      # ... and of its result
        self._users = []          # users of each node, derived on demand (users_of)
        self.complex = False      # whether it holds a complex value: the sweeps then
        #                           keep real values' derivatives real (docs/complex.md)
        self.captured = None      # wg.vmap's trace of one example, wg.scan's of its
        #                           body, wg.linearize's of f: {id: (value of an enclosing
        #                           trace, the input standing for it here)}
        self.tracer = None        # "vmap", "scan", "fori_loop" or "linearize": which traces
        #                           it is, for the errors of a branch on a traced value
        self.forward_only = False  # an eager jvp's, jacfwd's or Taylor expansion's graph:
        #                           no reverse sweep will read the values kept for one (a
        #                           reverse transformation nested in it sweeps
        #                           symbolically), so a loop need not keep its residuals

    # --- making nodes ---------------------------------------------------------------------
    def _new(self, op, args, params, shape, dtype, value, name=None):
        if len(self.nodes) >= self.max_nodes:
            raise self._too_large()
        node = Node(self, len(self.nodes), op, args, params, shape, dtype, value, name)
        self.nodes.append(node)
        if dtype is not F64 and dtype.kind == "c":
            self.complex = True
        return node

    def _too_large(self):
        return GraphTooLarge(self.max_nodes)

    def const(self, value, weak=None, snapshot=False) -> Node:
        """The node of a constant, one per value (interned).  A Python number is weakly
        typed (see `is_weak`); a NumPy float64 scalar or 0-d array is strong, as in NumPy
        2, though its value is kept as a Python float like every float64 scalar's.
        ``weak=False`` makes a Python number strong (a value computed from strong ones).
        With `snapshot`, a writeable array (a user's) is kept as a copy: see `_snapshot`."""
        if type(value) is float and value and weak is not False:
            node = self._consts.get(value)      # nonzero, non-nan floats: keyed by themselves
            if node is not None:
                return node
        if snapshot and isinstance(value, np.ndarray) and value.flags.writeable:
            if value.ndim:
                return self._snapshot(value)
            value = np.array(value)             # (0-d: a copy, then as any value)
        made = canonical(value)
        if weak is None and type(made) is float and type(value) is not float:
            weak = False        # np.float64 or a 0-d float64 array: strong, as in NumPy 2
        value = made
        strong = weak is False and type(value) in _PYTHON_SCALARS
        if not self.optimize:
            node = self._new(_CONST, (), _NO_PARAMS, *aval(value), value)
            if type(value) is float and value == value and value and not strong:
                # even unoptimised, a Python float used again (the 0.9 of x = 0.9 * x + 1
                # in a loop) is one node: a constant computes nothing, so sharing it
                # changes no count, and an eager loop records half the nodes
                self._consts[value] = node
        else:
            key = _const_key(value)
            if strong:
                key = ("strong", key)           # apart from the weak Python number
            node = self._consts.get(key)
            if node is None:
                node = self._consts[key] = self._new(_CONST, (), _NO_PARAMS, *aval(value),
                                                     value)
        if strong:
            node.weak = False
        return node

    def _snapshot(self, array) -> Node:
        """The constant of a user's writeable array: a copy, so that changing the array in
        place afterwards (a buffer refilled, a parameter stepped) cannot change what the
        graph computes or its derivatives -- the array is taken by value when used, as
        JAX takes it.  A large array is one constant per object (see `_const_key`) while
        it holds the same numbers; changed, it is a new constant."""
        if not self.optimize:
            return self._new(_CONST, (), _NO_PARAMS, array.shape, array.dtype, np.array(array))
        key = _const_key(array)
        node = self._consts.get(key)
        if node is not None and (key[0] != "id" or np.array_equal(
                node.value, array, equal_nan=array.dtype.kind in "fc")):
            return node
        if key[0] == "id":
            self._originals[id(array)] = array       # (its id is the key: kept alive)
        made = canonical(np.array(array))
        node = self._consts[key] = self._new(_CONST, (), _NO_PARAMS, *aval(made), made)
        return node

    def input(self, value=None, name=None, shape=None, dtype=None, weak=None) -> Node:
        """A new independent variable.  With ``value=None`` it is abstract (shape/dtype only).
        It is weakly typed (see `is_weak`) if `weak` says so, or else if `value` is a Python
        number or a weak `ShapeDtype`."""
        if type(value) is np.ndarray and value.ndim:       # the common case: an array
            return self._new(_INPUT, (), _NO_PARAMS, value.shape, value.dtype, value, name)
        if value is not None and not isinstance(value, ShapeDtype):
            if weak is None:
                weak = type(value) in _PYTHON_SCALARS
            value = canonical(value)
            shape, dtype = aval(value)
        elif value is not None:
            if weak is None:
                weak = value.weak
            shape, dtype, value = value.shape, value.dtype, None
        node = self._new(_INPUT, (), _NO_PARAMS, tuple(shape), np.dtype(dtype), value, name)
        node.weak = bool(weak) and not node.shape
        return node

    def copy(self, node: Node, name=None) -> Node:
        """A new variable equal to `node` (seed 003's copy ``w := u``): the independent
        variable of a nested transformation.  Never interned, so the inner derivative is
        taken with respect to the copy alone: this is what keeps the perturbations of
        nested derivatives apart."""
        return self._new(_COPY, (node,), _NO_PARAMS, node.shape, node.dtype, node.value, name)

    def lift(self, x) -> Node:
        """`x` as a node of this graph: nodes of other (finished) graphs and plain values
        become constants."""
        if type(x) is Node:
            if x.graph is self:
                return x
            if x.op is not _CONST and is_recording(x.graph):
                if self.captured is not None:
                    return self._capture(x)
                # An enclosing transformation's value: as a constant here its derivative
                # would silently be lost.
                raise ValueError(
                    f"traced value {x.label()} of an enclosing transformation is used in a "
                    "separate trace (wg.trace, wg.compile, wg.jacobian_graph ...), where it "
                    "would be a constant and its derivative would be lost; pass it to the "
                    "traced function as an argument instead of closing over it")
            if x.value is None:
                raise ValueError(
                    f"traced value {x.label()} belongs to another trace that has no values; "
                    "a traced value escaped the function that was being transformed"
                    + x.graph.released_hint())
            return self.const(x.value)
        if isinstance(x, (str, bytes)) or x is None:
            raise TypeError(f"cannot use {type(x).__name__} {x!r} as a number in a traced "
                            "computation")
        if type(x) is not np.ndarray and _is_sparse(x):
            # (NumPy would hold it as an opaque object, and x * A compute nonsense)
            raise TypeError(f"a scipy.sparse {type(x).__name__} cannot be a constant of a "
                            "traced computation: multiply it by traced values (A @ x), or "
                            "use A.toarray()")
        return self.const(x, snapshot=True)

    def _capture(self, x) -> Node:
        """The input standing for `x`, a value of an enclosing trace that the function
        closes over (wg.vmap: the batched graph is then evaluated with `x` itself there, so
        its derivative flows through)."""
        held = self.captured.get(id(x))
        if held is None:
            # (linearize's trace is evaluated only where x is, so it may know x's value:
            # f can then branch on it, as it could eagerly)
            value = x.value if self.tracer == "linearize" else None
            inner = self.input(ShapeDtype(x.shape, x.dtype) if value is None else value,
                               name=f"captured{len(self.captured)}", weak=is_weak(x))
            held = self.captured[id(x)] = (x, inner)   # (x kept alive: its id stays its own)
        return held[1]

    def apply(self, op, args, params=None) -> Node:
        """The node for ``op(*args, **params)``: simplified, found, or made (see module doc).

        This is the hot path of eager tracing, hence the inlined checks."""
        if not params:
            params = _NO_PARAMS
        nodes = []
        values = []
        all_const = True
        consts = self._consts
        for a in args:
            if type(a) is not Node or a.graph is not self:
                if type(a) is int and self.optimize and op.elementwise and _meets_float(args):
                    a = float(a)          # x + 1 and x + 1.0 are one node (one constant)
                # a float constant seen before is one lookup away (see const())
                c = consts.get(a) if type(a) is float else None
                if c is None and type(a) is np.ndarray and not self.optimize and a.ndim \
                        and a.dtype.kind in "biuf":
                    # an eager call's data (x of x @ w, a classifier's labels): lift's
                    # checks and canonical form are for other values
                    c = self._new(_CONST, (), _NO_PARAMS, a.shape, a.dtype,
                                  a.copy() if a.flags.writeable else a)  # see _snapshot
                if c is None:
                    overload = _OVERLOADS.get(type(a))
                    if overload is None and type(a) is not np.ndarray and _is_sparse(a):
                        # a constant scipy.sparse matrix: its product with a traced
                        # value is a primitive of its own, anything else is refused
                        from ..scipy.sparse import operand as overload
                    if overload is not None:        # a traced value met a wg.Dual
                        return overload(op, args, params)
                    c = self.lift(a)
                a = c
            if a.op is not _CONST:
                all_const = False
            nodes.append(a)
            values.append(a.value)
        key = None
        if self.optimize:
            if op.commutative and nodes[1].index < nodes[0].index:
                nodes.reverse()
                values.reverse()
            # Constants fold before any rule: the rules hold for real numbers, not in
            # IEEE's corners (x/x -> 1 would make 0/0 one, x*0 -> 0 would make inf*0 zero),
            # and a constant is no unknown number that a rule must guess about.
            if all_const and op.foldable:
                try:
                    value = op.evaluate(values, params)
                except NoValue:     # (a loop whose body holds a collective: no constant)
                    pass
                else:
                    return self.const(value, None if type(value) is np.ndarray else
                                      weak_result(op, nodes))
            if op.simplify is not None:
                found = op.simplify(self, nodes, params)
                if found is not None:
                    return found
            if op.internable:
                # keys hold only ints and strings, which the cycle collector need not track
                if params is _NO_PARAMS:
                    key = (op.uid, *[n.index for n in nodes]) if len(nodes) > 2 else \
                        (op.uid, nodes[0].index, nodes[1].index) if len(nodes) == 2 else \
                        (op.uid, nodes[0].index)
                else:
                    pkey = _params_key(params)
                    if pkey is not None:
                        key = (op.uid, pkey, *[n.index for n in nodes])
                if key is not None:
                    found = self._table.get(key)
                    if found is not None:
                        return found
        for v in values:
            if v is None:
                shape, dtype = op.abstract_eval(nodes, params)
                value = None
                break
        else:
            try:
                if values and type(values[0]) is np.ndarray:
                    # Array values straight to the implementation: node values are never
                    # floats for the fast path, nor wg.Duals (those are caught above).
                    value = op.impl(*values, **params)
                    if type(value) is not np.ndarray:
                        value = _canonical_scalar(value)
                else:
                    value = op.evaluate(values, params)
            except NoValue:
                # a collective (or a loop holding one): its value depends on the other
                # examples of a vmap, which computes it; here it is abstract
                value = None
                shape, dtype = op.abstract_eval(nodes, params)
            if type(value) is np.ndarray:
                shape, dtype = value.shape, value.dtype
                if dtype is not F64 and op.elementwise:
                    for v in values:        # (inlined: float32 array code asks every time)
                        if type(v) is float or type(v) is int:
                            value = _strongly_typed(op, nodes, values, params, value)
                            shape, dtype = aval(value)
                            break
                if not shape and type(value) is np.ndarray:
                    value = number(value)       # (a rule's 0-d array: scalars are numbers)
            elif type(value) is float:
                shape, dtype = (), F64
            elif value is not None:
                if op.elementwise and isinstance(value, np.generic):   # (a float32 scalar)
                    value = _strongly_typed(op, nodes, values, params, value)
                shape, dtype = aval(value)
        if self.complex or (dtype is not F64 and dtype.kind == "c"):
            _complex_check(self, op, nodes, dtype)
        if len(self.nodes) >= self.max_nodes:
            raise self._too_large()
        node = Node(self, len(self.nodes), op, tuple(nodes), params, shape, dtype, value)
        self.nodes.append(node)
        if key is not None:
            self._table[key] = node
        return node

    def _lookup(self, op, args, params=None):
        """The node `apply` would return for ``op(*args)`` by interning (step 3), if it
        exists: no rule is tried and no node is made.  Used by the rewriting passes."""
        key = _intern_key(op, args, params)
        return None if key is None else self._table.get(key)

    def remake(self, node, args) -> Node:
        """`node`'s operation on `args` (nodes of this graph) exactly as it is: an equal
        node found by interning, or a new one with `node`'s shape, dtype, value and name.
        No rule is tried, so the copy has `node`'s structure; this is how the emitter's
        pass (`passes.py`) copies part of a graph and brings its result back.

        Example:
            >>> import wengert as wg
            >>> g, h = wg.Graph(), wg.Graph()
            >>> y = wg.math.exp(g.input(wg.ShapeDtype(), "x"))
            >>> x2 = h.remake(y.args[0], [])
            >>> print(h.format([h.remake(y, [x2])]))
            graph(x: f64[]):
              %1: f64[] = exp(x)
              return %1
        """
        op = node.op
        if op is _CONST:
            return self.const(node.value, is_weak(node))
        if op is _INPUT or op is _COPY:           # never interned: each is a variable
            made = self._new(op, tuple(args), _NO_PARAMS, node.shape, node.dtype,
                             node.value, node.name)
            if op is _INPUT:
                made.weak = is_weak(node)
            return made
        key = _intern_key(op, args, node.params) if self.optimize and op.internable \
            else None
        if key is not None:
            found = self._table.get(key)
            if found is not None:
                return found
        made = self._new(op, tuple(args), node.params, node.shape, node.dtype, node.value)
        if key is not None:
            self._table[key] = made
        return made

    def users_of(self, node) -> list:
        """The nodes that take `node` as an argument (the ADDS paper's ``to`` list), in
        creation order.  Derived from the arguments, brought up to date when asked."""
        users = self._users
        nodes = self.nodes
        for i in range(len(users), len(nodes)):
            users.append([])
            for a in nodes[i].args:
                if a.graph is self:
                    users[a.index].append(nodes[i])
        return list(users[node.index])

    def truncate(self, size) -> None:
        """Forget every node created from position `size` on, as if they had never been
        made: the intern tables forget them too.  This is how an interactive session undoes
        a statement that failed half-way (nothing made before `size` may use them, and
        nothing does: arguments always come before their users).

        Example:
            >>> import wengert as wg
            >>> g = wg.Graph()
            >>> x = g.input(wg.ShapeDtype(), "x")
            >>> y = wg.math.exp(x)
            >>> g.truncate(1)
            >>> len(g.nodes), wg.math.exp(x) is y
            (1, False)
        """
        if size >= len(self.nodes):
            return
        del self.nodes[size:]
        del self._users[size:]
        for users in self._users:
            while users and users[-1].index >= size:
                users.pop()                      # users are kept in creation order
        self._table = {k: n for k, n in self._table.items() if n.index < size}
        self._consts = {k: n for k, n in self._consts.items() if n.index < size}
        self.inputs = [n for n in self.inputs if n.index < size]
        self.outputs = [n for n in self.outputs if n.index < size]

    # --- Algorithms 2 and 3 of seed 002 -----------------------------------------------------
    def mark_down(self, outputs, start=0):
        """Indices of the nodes the `outputs` need (Algorithm 2), ignoring nodes before
        `start`.  One pass in reverse creation order."""
        nodes = self.nodes
        top = max((o.index for o in outputs), default=-1)
        marked = bytearray(top + 1)
        for o in outputs:
            marked[o.index] = 1
        for i in range(top, start - 1, -1):
            if marked[i]:
                for a in nodes[i].args:
                    marked[a.index] = 1
        return {i for i in range(start, top + 1) if marked[i]}

    def mark_up(self, inputs, stop=None, floats_only=True):
        """Indices of the nodes that depend on the `inputs` (Algorithm 3), up to `stop`.
        One pass in creation order.  Dependence is carried by floating-point values only:
        a comparison's bool result depends on nothing, as far as derivatives go.  With
        ``floats_only=False`` it is carried by every value (what the emitter asks: a bool
        computed from an input is no parameter)."""
        nodes = self.nodes
        stop = len(nodes) - 1 if stop is None else stop
        marked = self._marked_up(inputs, stop, floats_only)
        return {i for i in range(len(marked)) if marked[i]}

    def _marked_up(self, inputs, stop, floats_only=True):
        """mark_up as a bytearray over indices 0..stop (1 = depends on the inputs)."""
        nodes = self.nodes
        marked = bytearray(stop + 1)
        start = stop + 1
        for x in inputs:
            if x.index <= stop:
                marked[x.index] = 1
                start = min(start, x.index)
        for i in range(start + 1, stop + 1):
            node = nodes[i]
            for a in node.args:
                if marked[a.index]:
                    if not floats_only or node.dtype.kind in "fc":
                        marked[i] = 1
                    break
        return marked

    def between(self, inputs, outputs) -> list[Node]:
        """The nodes, in creation order, that depend on `inputs` and that `outputs` need:
        the nodes that carry a tangent or an adjoint (all of floating-point dtype).  The
        inputs themselves are not included."""
        if not inputs or not outputs:
            return []
        top = max(o.index for o in outputs)
        up = self._marked_up(inputs, top)
        # mark down (Algorithm 2) within the mark-up set, in one reverse pass: need[i] = 1
        # for a node the outputs need; inputs are where the walk stops
        need = bytearray(top + 1)
        for o in outputs:
            if up[o.index]:
                need[o.index] = 1
        for x in inputs:
            if x.index <= top:
                need[x.index] = 0
                up[x.index] = 0
        nodes = self.nodes
        found = []
        first = top
        for x in inputs:
            if x.index < first:
                first = x.index
        for i in range(top, first - 1, -1):
            if need[i]:
                node = nodes[i]
                found.append(node)
                for a in node.args:
                    if up[a.index]:
                        need[a.index] = 1
        found.reverse()
        return found

    # --- reading the graph ------------------------------------------------------------------
    def live_nodes(self, outputs=None) -> list[Node]:
        """The nodes the outputs need, in creation order (all nodes if there are no outputs)."""
        outputs = self.outputs if outputs is None else outputs
        if not outputs:
            return list(self.nodes)
        return [self.nodes[i] for i in sorted(self.mark_down(outputs))]

    def format(self, outputs=None) -> str:
        """SSA text of the part of the graph the outputs need (see `Graph`)."""
        outputs = self.outputs if outputs is None else outputs
        live = self.live_nodes(outputs)
        inputs = self.inputs or [n for n in live if n.op is _INPUT]
        ins = ", ".join(f"{n.label()}: {_type_str(n.shape, n.dtype)}" for n in inputs)
        lines = [f"graph({ins}):"]
        given = {n.index for n in inputs}
        for n in live:
            if n.index in given or n.op is _CONST:
                continue
            if n.op is _INPUT:
                lines.append(f"  {n.label()}: {_type_str(n.shape, n.dtype)} = input")
                continue
            lines.append(f"  {n.label()}: {_type_str(n.shape, n.dtype)} = {_call_text(n)}")
        outs = ", ".join(_operand_text(o) for o in outputs)
        lines.append(f"  return {outs}")
        return "\n".join(lines)

    __str__ = format

    def digest(self) -> bytes:
        """A digest of what the graph computes: each node's operation, operands,
        parameters, type and weak typing, and every constant's value (so a global that a
        traced function read, now another number, makes another digest).  Two graphs with
        one digest compute the same function of their inputs.

        Example:
            >>> import wengert as wg
            >>> k = 2.0
            >>> before = wg.trace(lambda x: k * x, 1.0).digest()
            >>> before == wg.trace(lambda y: k * y, 5.0).digest()
            True
            >>> k = 3.0
            >>> before == wg.trace(lambda x: k * x, 1.0).digest()
            False
        """
        h = hashlib.blake2b(digest_size=20)
        for n in self.nodes:
            # (the uid tells apart primitives that share a name: two loops' scans)
            h.update(repr((n.op.name, n.op.uid, [a.index for a in n.args], n.shape,
                           n.dtype.str, getattr(n, "weak", None))).encode())
            for name, v in sorted(n.params.items()) if n.params else ():
                h.update(name.encode())
                _digest_value(h, v)
            if n.op is _CONST:
                _digest_value(h, n.value)
        for group in (self.inputs, self.outputs):
            h.update(repr([n.index for n in group]).encode())
        return h.digest()

    def __repr__(self):
        return f"<Graph: {len(self.nodes)} nodes, {len(self.inputs)} inputs, " \
               f"{len(self.outputs)} outputs>"

    def released_hint(self) -> str:
        """What to add to an error about a node without a value when its graph is a
        finished eager transformation's: such a graph let go of the values its sweep did
        not need (see `wengert.ad.reverse.drop_unread`)."""
        if self.nodes:
            return ""
        return (" (a finished gradient keeps only the values it needs; return an "
                "intermediate as auxiliary output, has_aux=True, to keep it)")

    def release(self):
        """Drop every node.  Nodes and their graph refer to each other, so a graph nobody
        uses any more waits for Python's cycle collector; a transformation that is done
        with a graph of its own (a checkpoint's recomputation) releases it to return the
        memory at once.

        Example:
            >>> import wengert as wg
            >>> g = wg.trace(lambda x: x * x, 2.0)
            >>> g.release()
            >>> len(g.nodes)
            0
        """
        self.nodes = []
        self._table = {}
        self._consts = {}
        self._originals = {}
        self._users = []
        self.inputs = []
        self.outputs = []

    # --- passes ----------------------------------------------------------------------------
    def inline_copies(self) -> "Graph":
        """A new graph for the same outputs with every copy replaced by the node it copies,
        rebuilt through `apply` so that nodes which differed only through a copy are
        interned into one.  Copies matter only while derivatives are being taken (they keep
        nested perturbations apart); a finished graph is simpler without them."""
        return self.rebuilt(lambda new, node, new_of:
                            new_of[node.args[0].index] if node.op is _COPY else None)

    def rebuilt(self, replace) -> "Graph":
        """A new graph for the same outputs, each live node made again through `apply`,
        save where ``replace(new, node, new_of)`` gives the node's stand-in in the new
        graph `new` (``new_of`` maps old node indices to the new nodes made so far, and
        `replace` may add to it).  The rewriting passes over a finished graph build on it.

        Example:
            >>> import wengert as wg
            >>> g = wg.trace(lambda x: wg.math.sin(x) * 2.0, 1.0)
            >>> twice = g.rebuilt(lambda new, node, new_of: wg.math.cos(new_of[0])
            ...                   if node.op.name == "sin" else None)
            >>> twice(0.0)
            2.0
        """
        new = Graph(optimize=self.optimize, straight_line=self.straight_line, ieee=self.ieee)
        new_of = {}
        for node in self.inputs:
            v = node.value if node.value is not None else ShapeDtype(node.shape, node.dtype)
            new_of[node.index] = new.input(v, node.name, weak=is_weak(node))
        for node in self.live_nodes():
            if node.index in new_of:
                continue
            if node.op is _CONST:
                new_of[node.index] = new.const(node.value, is_weak(node))
                continue
            if node.op is _INPUT:
                raise ValueError(f"the outputs need input {node.label()}, which is not one "
                                 "of the graph's inputs")
            found = replace(new, node, new_of)
            new_of[node.index] = found if found is not None else new.apply(
                node.op, [new_of[a.index] for a in node.args], node.params)
        new.inputs = [new_of[n.index] for n in self.inputs]
        new.outputs = [new_of[n.index] for n in self.outputs]
        new.in_tree, new.out_tree = self.in_tree, self.out_tree
        return new

    def split(self, unknown, known_values, outputs=None):
        """Partial evaluation: compute now what does not depend on the inputs `unknown`,
        and return the rest as a graph of them.

        The graph's other inputs take `known_values` (in the order of ``self.inputs``;
        traced values of an enclosing trace record what is computed into it).  Returns
        ``(values, rest, residuals)``: ``values[k]`` is output k's value where it does
        not depend on `unknown`, else None; `rest` is a graph whose inputs are `unknown`
        followed by one input per traced value it needs, ``residuals`` (plain values it
        needs are its constants), and whose outputs are `outputs` (default: all of this
        graph's).  So ``rest.evaluate(u + residuals)`` is ``self.evaluate(..., outputs)``
        with `unknown` bound to u.
        This is what `wg.linearize` does to the JVP traced at its point.

        Example:
            >>> import wengert as wg
            >>> g = wg.trace(lambda t, x: wg.math.exp(x) * t, 1.0, 0.0)
            >>> values, rest, residuals = g.split([g.inputs[0]], [1.0])
            >>> print(rest)                     # exp(1.0) was computed
            graph(t: f64[]):
              %2: f64[] = mul(t, 2.718281828459045)
              return %2
            >>> values, residuals, rest.evaluate([2.0])
            ([None], [], [5.43656365691809])
        """
        unknown_ids = {n.index for n in unknown}
        known_inputs = [n for n in self.inputs if n.index not in unknown_ids]
        if len(known_values) != len(known_inputs):
            raise ValueError(f"split: {len(known_inputs)} known inputs, got "
                             f"{len(known_values)} values")
        depends = self._marked_up(unknown, len(self.nodes) - 1, floats_only=False)
        env = {n.index: v for n, v in zip(known_inputs, known_values)}
        outputs = self.outputs if outputs is None else outputs
        live = self.live_nodes()
        for node in live:                                  # the known part, computed now
            if depends[node.index] or node.index in env:
                continue
            env[node.index] = self._value_of(node, env)
        rest = Graph(optimize=self.optimize, straight_line=self.straight_line, ieee=self.ieee)
        new_of = {n.index: rest.input(ShapeDtype(n.shape, n.dtype), n.name, weak=is_weak(n))
                  for n in unknown}
        residuals, held = [], []

        def seen(node):             # a node as the rest sees it: known ones on first sight
            got = new_of.get(node.index)
            if got is None:
                v = env[node.index]
                if type(v) is Node:
                    residuals.append(v)
                    got = rest.input(ShapeDtype(node.shape, node.dtype), f"r{len(held)}",
                                     weak=is_weak(node))
                    held.append(got)
                else:
                    got = rest.const(v, is_weak(node))
                new_of[node.index] = got
            return got

        for node in live if outputs is self.outputs else self.live_nodes(outputs):
            if depends[node.index] and node.index not in new_of:
                new_of[node.index] = rest.apply(node.op, [seen(a) for a in node.args],
                                                node.params)
        rest.outputs = [seen(o) for o in outputs]
        rest.inputs = [new_of[n.index] for n in unknown] + held
        values = [None if depends[o.index] else env[o.index] for o in self.outputs]
        return values, rest, residuals

    # --- evaluating -------------------------------------------------------------------------
    def evaluate(self, input_values, outputs=None):
        """Values of `outputs` (default: the graph's outputs) when the graph's inputs take
        `input_values` (a flat list, one per input node).

        Each operation is a call of its primitive, so the inputs may also be traced values
        (the graph's operations are then recorded into their trace: a graph is a function
        that transformations can differentiate or expand) or `wg.Dual` numbers."""
        outputs = self.outputs if outputs is None else outputs
        if len(input_values) != len(self.inputs):
            raise ValueError(f"the graph has {len(self.inputs)} inputs, got "
                             f"{len(input_values)} values")
        values = {}
        for node, v in zip(self.inputs, input_values):
            shape = _shape_of(v)
            if shape != node.shape:
                raise ValueError(f"input {node.label()} has shape {node.shape}, "
                                 f"got a value of shape {shape}")
            t = type(v)
            if t is not float and t is not int and t is not bool:
                v = _checked_input(node, v)
            values[node.index] = canonical(v)
        for node in self.live_nodes(outputs):
            if node.index not in values:
                values[node.index] = self._value_of(node, values)
        return [values[o.index] for o in outputs]

    @staticmethod
    def _value_of(node, values):
        """`node`'s value, given `values` (node index -> value) of its arguments."""
        if node.op is _CONST:
            return node.value
        if node.op is _INPUT:
            raise ValueError(f"the outputs need input {node.label()}, which is not one of "
                             "the graph's inputs")
        args = [values[a.index] for a in node.args]
        v = node.op(*args, **node.params)
        if isinstance(v, (np.ndarray, np.generic)) and v.dtype != node.dtype:
            # (float64 scalar values are Python floats, which NumPy takes as weak; a
            # float32 scalar plus one of them stays a float32 scalar)
            return _strongly_typed(node.op, node.args, args, node.params, v)
        return v

    def __call__(self, *args):
        from ..tree import flatten, unflatten
        leaves, tree = flatten(args)
        if self.in_tree is not None and tree != self.in_tree:
            raise ValueError(f"arguments do not match the traced structure: expected "
                             f"{self.in_tree}, got {tree}")
        outs = self.evaluate(leaves)
        return unflatten(self.out_tree, outs) if self.out_tree is not None else outs


def _checked_input(node, v):
    """A value for input `node`, in the node's dtype where NumPy casts to it safely (an
    int8 array for a float64 input: the operations then compute in the dtypes they were
    traced with, not sin(int8)'s float16).  Refused: text (NumPy's error would come from
    deep inside some operation), and a complex number for a real input (its real rules,
    abs's sign or max's comparison, would silently give wrong values).  Traced values,
    Duals and object arrays of them pass as they are."""
    t = type(v)
    numpy_value = isinstance(v, (np.ndarray, np.generic))
    kind = ("c" if t is complex else "U" if t is str or t is bytes else
            v.dtype.kind if numpy_value else None)
    if kind is None or kind == "O":
        return v
    if kind in "biuf" or (kind == "c" and node.dtype.kind == "c"):
        if numpy_value and v.dtype != node.dtype and np.can_cast(v.dtype, node.dtype):
            return v.astype(node.dtype)
        return v
    what = f"a value of dtype {v.dtype}" if numpy_value else f"a {t.__name__}"
    why = ("trace it with a complex example to evaluate it at complex points" if kind == "c"
           else "a graph computes with numbers")
    raise TypeError(f"input {node.label()} has dtype {node.dtype}, got {what}: {why}")


def _intern_key(op, args, params):
    """The key `apply` interns ``op(*args)`` under (commutative arguments in creation
    order); None if the parameters are not hashable."""
    indices = [n.index for n in args]
    if op.commutative and indices[1] < indices[0]:
        indices.reverse()
    if params:
        pkey = _params_key(params)
        return None if pkey is None else (op.uid, pkey, *indices)
    return (op.uid, *indices)


def _complex_check(graph, op, nodes, dtype):
    """Refuse a primitive whose rules are written for real numbers only (``op.complex`` is
    False) on complex arguments or with a complex result: its derivative would be wrong
    without a word.  Notes that the graph now holds complex values."""
    if dtype.kind == "c":
        graph.complex = True
    if op.complex:
        return
    if dtype.kind == "c" or any(n.dtype.kind == "c" for n in nodes):
        kinds = ", ".join(str(n.dtype) for n in nodes)
        hint = "see docs/complex.md for what handles complex values" if op.builtin else \
            "declare it with wg.primitive(complex=True) if its rules hold for them"
        raise TypeError(f"{op.name} of complex values ({kinds}) is not supported on traced "
                        f"values: its derivative rules are for real numbers ({hint})")


def _strongly_typed(op, nodes, values, params, value):
    """`value` (of ``op(*nodes)``), computed again where NumPy took a strong scalar for a
    weak one.  Every float64 scalar value is a Python float (the fast paths take those),
    and NumPy 2 promotes Python numbers weakly; so ``float32 array * np.float64(2.0)``
    would come out float32 where NumPy (and an abstract trace) make it float64.  A result
    of dtype float64 or int64 is what strong operands give too: those are not asked."""
    dtype = value.dtype if isinstance(value, (np.ndarray, np.generic)) else None
    if dtype is None or dtype is F64 or dtype is I64 or dtype is BOOL:
        return value
    strong = None
    for k, (n, v) in enumerate(zip(nodes, values)):
        t = type(v)
        if (t is float or t is int) and not is_weak(n):
            if strong is None:
                strong = list(values)
            strong[k] = np.float64(v) if t is float else np.int64(v)
    if strong is None:
        return value
    value = op.impl(*strong, **params)
    return value if type(value) is np.ndarray else _canonical_scalar(value)


def _meets_float(args) -> bool:
    for b in args:
        if type(b) is Node and b.dtype.kind == "f":
            return True
    return False


def _operand_text(n: Node) -> str:
    if n.op is _CONST:
        v = n.value
        if n.shape == ():
            return repr(v)
        if n.size <= 4:                        # small arrays inline, with their values
            return np.array2string(np.asarray(v), separator=", ").replace("\n", "")
        return f"const {_type_str(n.shape, n.dtype)}"
    return n.label()


def _call_text(n: Node) -> str:
    parts = [_operand_text(a) for a in n.args]
    parts += [f"{k}={v!r}" for k, v in n.params.items()]
    return f"{n.op.name}({', '.join(parts)})"

