"""The one registry of primitives, and how a primitive is declared.

A primitive is everything wengert knows about one elementary operation: how to evaluate
it (`impl`, with an optional fast path for Python floats), its printed name, its cost
class for operation counts, and its derivative.  Scalar and elementwise primitives declare
only their **partial derivatives**, one expression per argument in terms of the arguments
and the result ``ans`` (ChainRules' ``@scalar_rule``)::

    sin.defpartials(lambda x, ans: cos(x))
    div.defpartials(lambda x, y, ans: 1 / y, lambda x, y, ans: -ans / y)

Forward mode, reverse mode (and later elimination and rounding-error estimates) all read
those edge partials.  Structural primitives (sums, reshapes, matmul, ...) declare a JVP and a
VJP as linear maps instead (`defjvp`, `defvjp`).

Rules are written with primitives, which work on plain numbers and on traced nodes alike:
called on numbers a rule computes a number, called on nodes it builds a graph, so every
derivative can be differentiated again.
"""
from __future__ import annotations

import itertools
import sys

import numpy as np

from ..errors import NoValue
from ..graph.active import _state as _active
from ..graph.node import Node

#: Every primitive by name.  Adding a primitive adds one entry here.
REGISTRY: dict[str, "Primitive"] = {}

NO_PARAMS: dict = {}

#: Value types that carry out primitives themselves (operator overloading, seed 000's other
#: implementation style): when an argument of a primitive has such a type, the primitive
#: returns ``OVERLOADS[type](prim, args, params)``.  `wg.Dual` registers itself here.
OVERLOADS: dict = {}


def issparse(x) -> bool:
    """Whether `x` is a scipy.sparse matrix or array, another kind of value a primitive can
    meet (wengert.scipy.sparse takes it).  False, without importing SciPy, where
    scipy.sparse was never imported: then nothing can be one.

    Example:
        >>> issparse(np.eye(2))
        False
    """
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(x)

#: Cost classes: the columns of seed 002's operation counts (additions and subtractions,
#: multiplications, divisions, function calls, powers), plus negations and comparisons,
#: which other tools (CasADi) count apart.  None: free (constants, inputs, copies).
COST_CLASSES = ("add", "mul", "div", "call", "pow", "neg", "cmp")

_INEXACT = frozenset("fc")

_uids = itertools.count()


def one_element(v):
    """A Python or NumPy scalar as an array of one element (None, and an array, stay as
    they are), for redoing a rule in NumPy where Python floats raised (1/0.0 at a pole,
    or an array divided by a scalar 0.0): on arrays NumPy gives inf or nan, with its
    warning, and every primitive hands back an array (on a NumPy scalar it would hand
    back a Python float, which raises again)."""
    if v is None or type(v) is np.ndarray and v.ndim:
        return v
    return np.full(1, v, dtype=np.result_type(v, np.float64))


def from_one_element(p, values=()):
    """`one_element`'s result back as a Python scalar, where all `values` (what the rule
    was redone on) were scalars: else its one element broadcasts as the scalar did."""
    if any(type(v) is np.ndarray and v.ndim for v in values):
        return p
    return p[0].item() if isinstance(p, np.ndarray) and p.shape == (1,) else p


class Primitive:
    """An elementary operation: evaluation, printed name, cost class and derivative rule.

    Calling a primitive evaluates it on plain values, or records it on traced values.

    Example:
        >>> import wengert as wg
        >>> wg.math.sin(0.0), wg.math.sin.name, wg.math.sin.cost
        (0.0, 'sin', 'call')
    """

    def __init__(self, name, impl, *, fast=None, cost="call", infix=None, commutative=False,
                 abstract_eval=None, dtype_rule="float", internable=True, foldable=True,
                 linear=False, complex=False, doc=None):
        if cost is not None and cost not in COST_CLASSES:
            raise ValueError(f"cost class must be one of {COST_CLASSES} or None, got {cost!r}")
        self.name = name
        self.uid = next(_uids)              # identity in intern keys (names can be re-declared)
        self.impl = impl
        self.fast = fast                    # Python-float fast path, NumPy semantics on error
        self.cost = cost                    # which column of an operation count it adds to
        self.infix = infix                  # "+" for add: how code emitters print it
        self.commutative = commutative      # arguments sorted by creation order (ADDS)
        self.dtype_rule = dtype_rule        # "float", "promote", "bool", "real" or
        #                                     "complex" (elementwise; "real": promote,
        #                                     then a complex dtype's parts: abs, real,
        #                                     imag; "complex": promote, then the complex
        #                                     dtype of such parts)
        self._abstract_eval = abstract_eval
        self.internable = internable        # False for inputs and copies: each is new
        self.foldable = foldable            # evaluated at construction on constants
        self.linear = linear                # linear in its arguments (jointly): add, neg,
        #                                     sums, reshapes; Taylor mode and elimination
        #                                     apply such a primitive to each coefficient
        self.complex = complex              # its rules hold for complex values too (JAX's
        #                                     and autograd's convention, docs/complex.md);
        #                                     Graph.apply refuses complex values otherwise
        self.partials = None                # tuple: one callable per argument (or None)
        self.jvp = None                     # jvp(tangents, *args, ans, **params)
        self.vjp = None                     # vjp(cotangent, *args, ans, **params) -> tuple
        self.vjps = None                    # or one such function per argument
        self.asks_active = False            # vjp also takes ``active=`` (a flag per
        #                                     argument: whether its cotangent is wanted)
        self.sweep_reads = (None, None, None, {})   # what the rules read, by active-argument
        #                                     mask: wengert.ad.reverse._needs fills it in
        self.batch = None                   # batch(args, mapped, node) -> the batched
        #                                     result, for wg.vmap (wengert.primitives.
        #                                     batching); None: one call per example
        self.resolve = None                 # a collective's value across the examples of
        #                                     the vmap binding its axis name: resolve(args,
        #                                     mapped, node, size) -> (value, mapped)
        #                                     (wengert.primitives.collective)
        self.simplify = None                # simplify(graph, args, params) -> node or None
        self.decomposition = None           # the same function written with other
        #                                     primitives, for a primitive fused for speed:
        #                                     the reference its rules are tested against,
        #                                     and Taylor mode's route where it has no rule
        self.builtin = False                # declared by wengert itself (not replaceable)
        self.ufunc = None                   # () -> the ufunc `impl` calls, or None: its
        #                                     loops decide the result dtype where they do
        #                                     not follow NumPy's promotion (SciPy's give
        #                                     float64 for float32 and a Python float)
        self.elementwise = False            # a built-in acting element by element with
        #                                     broadcasting (scalarised by compile; its int
        #                                     literals meet floats as floats)
        self.__doc__ = doc

    def __repr__(self):
        return f"<primitive {self.name}>"

    # --- use ---------------------------------------------------------------------------------
    def __call__(self, *args, **params):
        graph = None
        arrays = True                       # only NumPy arrays: straight to the implementation
        for a in args:
            t = type(a)
            if t is Node:
                if graph is None:
                    graph = a.graph
                elif a.graph is not graph:
                    graph = _innermost({x.graph for x in args if type(x) is Node}, graph)
                    break
            elif t is not np.ndarray:
                arrays = False
        if graph is not None:
            return graph.apply(self, args, params)
        try:
            if arrays and args:             # (an eager sweep's rules call primitives so)
                out = self.impl(*args, **params)
                return out if type(out) is np.ndarray else _canonical_scalar(out)
            return self.evaluate(args, params)
        except NoValue:
            # a collective (or a loop holding one) of values that are not traced: its value
            # depends on the other examples of a vmap, which computes it from the graph
            # being traced (a rule's constant cotangent, a scan over constants)
            stack = _active.stack
            if not stack or stack[-1] is None:
                raise
            return stack[-1].apply(self, args, params)

    def evaluate(self, values, params=NO_PARAMS):
        """The value of the operation on concrete values.

        Python floats take the fast path (the `math` module); where it fails (log of a
        negative, division by zero, overflow) NumPy computes the result instead, so the
        answer follows NumPy's conventions (nan or inf, with a RuntimeWarning).  A value of a
        type in `OVERLOADS` (a `wg.Dual`) computes the operation itself."""
        fast = self.fast
        if fast is not None:
            for v in values:
                t = type(v)
                if t is not float and t is not int and t is not bool:
                    break
            else:
                try:
                    return fast(*values, **params)
                except (ValueError, ZeroDivisionError, OverflowError):
                    pass
        for v in values:            # not on the float fast path: costs eager tracing nothing
            if type(v) in OVERLOADS:
                return OVERLOADS[type(v)](self, values, params)
        out = self.impl(*values, **params)
        if type(out) is np.ndarray:
            return out
        return _canonical_scalar(out)

    def partial(self, k, xs, ans, params):
        """The partial derivative with respect to argument k, on nodes or on values
        (None where it is structurally zero)."""
        rule = self.partials[k]
        if rule is None or type(rule) is float:
            return rule
        try:
            p = rule(*xs, ans, **params)
        except ArithmeticError:
            # Python floats raise where NumPy gives inf or nan (1/0.0): redo it in NumPy,
            # and hand back a Python float like every other scalar value
            p = from_one_element(rule(*map(one_element, xs), one_element(ans), **params),
                                 (*xs, ans))
        if not self.builtin and p is not None:
            check_partial_shape(self, p, shape_of(ans), k)
        return p

    def abstract_eval(self, args, params):
        """(shape, dtype) of the result from the arguments' shapes and dtypes."""
        if self._abstract_eval is not None:
            return self._abstract_eval(args, params)
        return elementwise_aval(self, args)

    # --- declaring the derivative ------------------------------------------------------------
    def defpartials(self, *partials):
        """Declare the partial derivatives, one callable per argument (``None`` for an
        argument that carries no derivative, a float for a constant one: ``1.0`` for
        each argument of ``add``).  Each callable takes the arguments, then the result
        ``ans``, then the parameters as keywords, and is written with wengert primitives so
        it builds a graph when traced.  Returns the primitive.

        Example:
            >>> import wengert as wg, numpy as np
            >>> softplus = wg.primitive(lambda x: np.logaddexp(0.0, x), name="softplus")
            >>> softplus.defpartials(lambda x, ans: 1 / (1 + wg.math.exp(-x)))
            <primitive softplus>
            >>> round(wg.grad(softplus)(0.0), 6)
            0.5
        """
        self.partials = tuple(float(p) if isinstance(p, (int, float)) else p
                              for p in partials)
        return self

    def defjvp(self, jvp):
        """Declare the JVP as a linear map: ``jvp(tangents, *args, ans, **params)`` returns the
        tangent of the result; ``tangents`` has one entry per argument, None where zero.
        Use it for structural (non-elementwise) primitives.  Returns the primitive."""
        self.jvp = jvp
        return self

    def defvjp(self, *vjps):
        """Declare the VJP as a linear map, in one of two forms (returns the primitive):

        * one function, ``vjp(cotangent, *args, ans, **params)``, returning a tuple with one
          cotangent per argument (None where zero) — for primitives with a variable number
          of arguments, or whose cotangents share work;
        * one function per argument (None for an argument without derivative), each
          returning that argument's cotangent: only the arguments that need a cotangent
          are asked (autograd's form), so ``x @ w`` with data ``x`` costs one product.
        """
        if len(vjps) == 1:
            self.vjp, self.vjps = vjps[0], None
        else:
            self.vjp, self.vjps = None, tuple(vjps)
        return self


    def defbatch(self, rule):
        """Declare how `wg.vmap` applies the primitive to a batch at once:
        ``rule(args, mapped, node)`` gets the arguments (those with ``mapped[k]`` true carry
        the batch as a new leading axis 0, the others are shared by every example) and
        `node`, the operation on one example (its ``params``, ``shape``, ``dtype`` and
        ``args``: the arguments' per-example shapes), and returns the result with the batch
        on axis 0 (another shape raises a ValueError: it would broadcast into wrong
        numbers).  Without a rule, vmap calls the primitive once per example and stacks
        the results: right, but slower.  Returns the primitive.

        Example:
            >>> import wengert as wg, numpy as np
            >>> double = wg.primitive(lambda x: 2 * x, name="double2")
            >>> double.defvjp(lambda g, x, ans: (2 * g,))
            <primitive double2>
            >>> double.defbatch(lambda args, mapped, node: double(args[0]))
            <primitive double2>
            >>> wg.vmap(double)(np.arange(3.0))
            array([0., 2., 4.])
        """
        self.batch = rule
        return self


def _canonical_scalar(out):
    """NumPy scalars of float64 and bool become Python's, which the fast paths take."""
    t = type(out)
    if t is np.float64:
        return float(out)
    if t is np.bool_:
        return bool(out)
    return out


def _innermost(graphs, default):
    """Arguments from different graphs happen when a stale node from a finished trace meets
    a live one: the innermost graph still recording wins (the stale node becomes a
    constant there)."""
    for g in reversed(_active.stack):
        if g in graphs:
            return g
    return default


# --------------------------------------------------------------------------------------
# shape and dtype rules
# --------------------------------------------------------------------------------------
def is_weak(node) -> bool:
    """Whether a node is *weakly typed*, as Python scalars are in NumPy 2 and JAX: its dtype
    gives way to the other operand's, so ``float32 array * s`` stays float32.  Weak are
    constants that are Python numbers, inputs made from Python numbers (`Graph.input`: a
    NumPy scalar such as ``np.float64(2.0)`` is strong, as in NumPy 2), and the results of
    elementwise primitives whose arguments are all weak (``2 * s`` is as weak as ``s``).

    Worked out from the graph when first asked and kept in the node's ``weak`` slot:
    dtypes are derived from weakness only where they are derived abstractly, so eager
    tracing of arrays never asks."""
    try:
        return node.weak
    except AttributeError:
        pass
    todo = [node]           # a loop, not recursion: a chain of weak scalars may be long
    while todo:
        n = todo[-1]
        if hasattr(n, "weak"):
            todo.pop()
            continue
        op = n.op
        if op is CONST:
            n.weak = type(n.value) in _PYTHON_SCALARS
        elif n.shape or op is INPUT or (op is not COPY and not _keeps_weakness(op)):
            n.weak = False  # (an input is weak only if Graph.input said so)
        else:
            unknown = [a for a in n.args if not hasattr(a, "weak")]
            if unknown:
                todo.extend(unknown)
                continue
            n.weak = all(a.weak for a in n.args)
        todo.pop()
    return node.weak


def _keeps_weakness(op) -> bool:
    return op.elementwise and op.dtype_rule != "bool"


def weak_result(op, args) -> bool:
    """Whether ``op(*args)`` (nodes) is weakly typed, before any node for it exists (a
    constant folded from them): `is_weak`'s rule."""
    return _keeps_weakness(op) and all(is_weak(a) for a in args)


_PYTHON_SCALARS = (float, int, bool, complex)

# What NumPy's promotion is shown in place of a weak operand: a Python number of its kind
# (its value does not matter, and an abstract one has none).
_WEAK_STAND_IN = {"f": 0.0, "i": 0, "b": False, "c": 0j}

_F64 = np.dtype(np.float64)


def elementwise_aval(op, args):
    """Broadcast shapes; dtype by the primitive's dtype rule."""
    if op.dtype_rule != "bool" and op.dtype_rule != "complex":
        for a in args:      # float64 scalars (every node of an ADDS program): nothing to do
            if a.dtype is not _F64 or a.shape:
                break
        else:
            return (), _F64
    shape = args[0].shape
    for a in args[1:]:
        if a.shape != shape:
            try:
                shape = np.broadcast_shapes(shape, a.shape)
            except ValueError:
                shapes = " and ".join(str(x.shape) for x in args)
                raise ValueError(f"{op.name}: operands of shapes {shapes} cannot be "
                                 "broadcast together") from None
    if op.dtype_rule == "bool":
        return shape, np.dtype(np.bool_)
    weak = [is_weak(a) for a in args]
    ufunc = op.ufunc() if op.ufunc is not None else None
    if ufunc is not None:
        found = numpy_dtype(ufunc, args, weak)
        if found is not None:
            return shape, found
    if type(op.impl) is np.ufunc:
        for a, w in zip(args, weak):
            if a.dtype.kind in "biu" and not w:
                # An integer or bool operand: NumPy's loops decide, and no promotion rule
                # says what they do (sin of int8 is float16, of int32 float64; power of
                # ints is an int; true division of ints is float64)
                found = numpy_dtype(op.impl, args, weak)
                if found is not None:
                    return shape, found
                break
    if all(weak):
        dtype = np.result_type(*[a.dtype for a in args])
    else:
        dtype = np.result_type(*[_WEAK_STAND_IN.get(a.dtype.kind, a.dtype) if w else a.dtype
                                 for a, w in zip(args, weak)])
    if op.dtype_rule == "float" and dtype.kind not in _INEXACT:
        dtype = np.dtype(np.float64)
    elif op.dtype_rule == "real" and dtype.kind == "c":
        dtype = real_dtype(dtype)                     # complex128's parts are float64
    elif op.dtype_rule == "complex":
        dtype = np.result_type(dtype, 1j)             # (1j is weak: float32 -> complex64)
    return shape, dtype


_UFUNC_DTYPES: dict = {}


def numpy_dtype(ufunc, args, weak=None):
    """The dtype NumPy's `ufunc` gives for arguments of these dtypes (nodes; `weak` tells
    which are weakly typed Python numbers, found with `is_weak` if None), or None if NumPy
    has no loop for them (the call then fails with NumPy's own error when it runs).

    Example:
        >>> import numpy as np, wengert as wg
        >>> g = wg.Graph()
        >>> numpy_dtype(np.sin, [g.input(wg.ShapeDtype((2,), np.int8))])
        dtype('float16')
    """
    if weak is None:
        weak = [is_weak(a) for a in args]
    key = (ufunc, *[_WEAK_TYPE.get(a.dtype.kind, a.dtype) if w else a.dtype
                    for a, w in zip(args, weak)])
    found = _UFUNC_DTYPES.get(key, False)
    if found is False:
        try:
            found = ufunc.resolve_dtypes(key[1:] + (None,) * ufunc.nout)[ufunc.nin]
        except (TypeError, ValueError):     # no loop (NumPy says so when it runs)
            found = None
        if len(_UFUNC_DTYPES) < 4096:
            _UFUNC_DTYPES[key] = found
    return found


# How `ufunc.resolve_dtypes` is told a weakly typed operand: by the Python type
_WEAK_TYPE = {"f": float, "i": int, "c": complex, "b": np.dtype(np.bool_)}


def power_by_squaring(x, n, times):
    """x to the integer power n >= 1 by repeated squaring, ``times`` the multiplication:
    about 2·log2(n) products, not n - 1 (ADDS's matrix ``m ** n``, numpy.linalg's
    matrix_power).

    Example:
        >>> power_by_squaring(3, 5, lambda a, b: a * b)
        243
    """
    result, square = None, x
    while True:                     # the binary digits of n, lowest first
        if n & 1:
            result = square if result is None else times(result, square)
        n >>= 1
        if not n:
            return result
        square = times(square, square)


def real_dtype(dtype):
    """The dtype of `dtype`'s real and imaginary parts: float64 for complex128, complex64's
    float32; a real dtype is its own.

    Example:
        >>> import numpy as np
        >>> real_dtype(np.dtype(np.complex64)), real_dtype(np.dtype(np.int32))
        (dtype('float32'), dtype('int32'))
    """
    return np.empty(0, dtype).real.dtype


def float_dtype(*xs):
    """The dtype of a float result computed from `xs` (arrays, scalars or dtypes): their
    own if floating (a float32 stays float32), float64 for ints and bools.

    Example:
        >>> import numpy as np
        >>> float_dtype(np.ones(2, np.float32)), float_dtype(np.dtype(int)), float_dtype(2.0)
        (dtype('float32'), dtype('float64'), dtype('float64'))
    """
    # (dtypes, not the values: a traced value would ask NumPy's dispatch; and a Python
    # float is weak, so 1.0 promotes ints and bools only)
    return np.result_type(*[getattr(x, "dtype", x) for x in xs], 1.0)


def shape_of(x) -> tuple:
    """Shape of a node or of a concrete value (sweeps ask this of every tangent: the common
    types are answered without a call into NumPy)."""
    t = type(x)
    if t is Node or t is np.ndarray:
        return x.shape
    if t is float:
        return ()
    return np.shape(x)


def known_value(x):
    """x's value where it is known: a plain value as it is, a traced value's own (an eager
    transformation records values); None for a value traced without one (`wg.compile`,
    `wg.vmap`), where a front-end must build nodes rather than read numbers.

    Example:
        >>> known_value(2.0)
        2.0
    """
    return x.value if type(x) is Node else x


def broadcasts_to(shape, to) -> bool:
    """Whether an array of `shape` broadcasts to `to` exactly (a tangent or weight that
    may be given smaller than the value it belongs to)."""
    try:
        return np.broadcast_shapes(shape, to) == to
    except ValueError:
        return False


# A built-in rule is tested; a user's rule (wg.primitive) is checked as it runs, since a
# (co)tangent of the wrong shape would otherwise broadcast, or be indexed, into a
# derivative that is silently wrong.
def user_cotangents(op, args, cts):
    """The cotangents a user primitive's one-function VJP returned, as a tuple, checked: one
    per argument, each of its argument's shape.  A bare cotangent is taken for the only
    argument of a one-argument primitive, as autograd's rules return it.

    Example:
        >>> import wengert as wg, numpy as np
        >>> sumsq = wg.primitive(lambda x: np.sum(x ** 2), name="sumsq")
        >>> sumsq = sumsq.defvjp(lambda g, x, ans: 2 * g * x)     # (x̄,) or a bare x̄
        >>> wg.grad(sumsq)(np.array([[1.0, 2.0], [3.0, 4.0]])).tolist()
        [[2.0, 4.0], [6.0, 8.0]]
    """
    if not isinstance(cts, (tuple, list)):
        if len(args) != 1:
            raise TypeError(f"the VJP of primitive {op.name!r} returned a "
                            f"{type(cts).__name__}, not a tuple of {len(args)} cotangents (one "
                            "per argument, None where zero)")
        cts = (cts,)
    if len(cts) != len(args):
        raise ValueError(f"the VJP of primitive {op.name!r} returned {len(cts)} cotangents "
                         f"for its {len(args)} arguments (one per argument, None where zero)")
    for k, (a, c) in enumerate(zip(args, cts)):
        if c is not None:
            check_rule_shape(op, c, a.shape, k)
    return cts


def check_rule_shape(op, value, shape, position=None):
    """A user primitive's JVP must give a tangent of the result's shape, and its VJP a
    cotangent of each argument's shape (`position`: which argument).

    Example:
        >>> import wengert as wg, numpy as np
        >>> p = wg.primitive(lambda x: np.sum(x ** 2), name="sumsq_bad")
        >>> p = p.defvjp(lambda g, x, ans: (2 * g,))          # forgot the x
        >>> wg.grad(p)(np.ones(3))
        Traceback (most recent call last):
        ...
        ValueError: the VJP of primitive 'sumsq_bad' returned a cotangent of shape () for argument 0, which has shape (3,)
    """
    got = tuple(shape_of(value))
    if got != tuple(shape):
        if position is None:
            raise ValueError(f"the JVP of primitive {op.name!r} returned a tangent of shape "
                             f"{got}, but its result has shape {tuple(shape)}")
        raise ValueError(f"the VJP of primitive {op.name!r} returned a cotangent of shape "
                         f"{got} for argument {position}, which has shape {tuple(shape)}")


def check_partial_shape(op, value, shape, position):
    """A user primitive's partial multiplies the (co)tangent elementwise, so it must
    broadcast to the result's shape: one of another shape would silently broadcast the
    derivative into the wrong shape.

    Example:
        >>> import wengert as wg, numpy as np
        >>> p = wg.primitive(np.sin, name="sin_bad").defpartials(lambda x, ans: np.ones(2))
        >>> wg.grad(p)(0.5)
        Traceback (most recent call last):
        ...
        ValueError: the partial of primitive 'sin_bad' in argument 0 has shape (2,), which does not broadcast to its result's shape (): partials are for elementwise functions (declare one that mixes elements with defjvp and defvjp)
    """
    got = tuple(shape_of(value))
    if got != tuple(shape) and (len(got) > len(shape) or
                                any(g != 1 and g != s for g, s in zip(got[::-1], shape[::-1]))):
        raise ValueError(f"the partial of primitive {op.name!r} in argument {position} has "
                         f"shape {got}, which does not broadcast to its result's shape "
                         f"{tuple(shape)}: partials are for elementwise functions (declare "
                         "one that mixes elements with defjvp and defvjp)")


def differentiable(node) -> bool:
    """Whether a node carries derivatives (floating or complex dtype)."""
    return node.dtype.kind in _INEXACT


# --------------------------------------------------------------------------------------
# declaring primitives
# --------------------------------------------------------------------------------------
def defprimitive(name, impl, **kwargs) -> Primitive:
    """Create a primitive and enter it in the registry under `name`."""
    if name in REGISTRY:
        raise ValueError(f"a primitive named {name!r} exists already")
    prim = Primitive(name, impl, **kwargs)
    prim.builtin = True
    prim.elementwise = kwargs.get("abstract_eval") is None
    REGISTRY[name] = prim
    return prim


def primitive(fn=None, *, name=None, cost="call", shape=None, complex=False):
    """Make a Python function of numbers a new primitive (a user's custom rule).

    The function is evaluated on plain numbers or NumPy arrays; wengert never looks inside.
    Declare its derivative on the result with `Primitive.defpartials` (elementwise
    functions: one partial per argument) or `Primitive.defjvp` / `Primitive.defvjp`
    (structural functions).  Under abstract tracing the result's shape and dtype are found
    by running the function on stand-ins of the arguments' shapes; `shape`, if given, is
    ``shape(*arg_shapes) -> result shape`` instead, for functions that cannot run on zeros.
    Declaring a name again replaces the earlier declaration, so a notebook cell can be
    re-run (anonymous lambdas each get a name of their own).  Built-in names are refused
    as `name`; a function that has one (``def logsumexp``) is registered as
    ``logsumexp_user``.  Complex arguments are refused unless ``complex=True`` says that
    the rules hold for them, in JAX's and autograd's convention (docs/complex.md).

    Example:
        >>> import wengert as wg, numpy as np
        >>> @wg.primitive
        ... def logistic(x):
        ...     return 1 / (1 + np.exp(-x))
        >>> logistic.defpartials(lambda x, ans: ans * (1 - ans))
        <primitive logistic>
        >>> wg.grad(logistic)(0.0)
        0.25
        >>> wg.grad(wg.grad(logistic))(0.0)   # the partial is a graph: differentiable again
        0.0
    """
    def make(f):
        pname = name or getattr(f, "__name__", "primitive")
        if pname == "<lambda>":            # anonymous: never replace another by accident
            pname = f"lambda_{next(_uids)}"
        old = REGISTRY.get(pname)
        if old is not None and old.builtin:
            if name is not None:
                raise ValueError(f"{pname!r} names a built-in primitive; choose another name")
            # a function named like a built-in (autograd code redefining logsumexp with
            # its own gradient): registered beside it, under a name of its own that a
            # re-run cell replaces
            pname = f"{pname}_user"
        if shape is not None:
            def aeval(args, params):
                return tuple(shape(*[a.shape for a in args])), np.dtype(np.float64)
        else:
            def aeval(args, params):       # run it on zero-strided stand-ins of the shapes
                from .array import by_example
                return by_example(prim, args, params)
        prim = Primitive(pname, f, cost=cost, abstract_eval=aeval, complex=complex)
        REGISTRY[pname] = prim
        return prim
    return make if fn is None else make(fn)


# The three primitives every graph needs: constants, inputs and copies of variables.
CONST = defprimitive("const", None, cost=None, internable=False, foldable=False)
INPUT = defprimitive("input", None, cost=None, internable=False, foldable=False)
COPY = defprimitive("copy", lambda x: x, cost=None, internable=False, foldable=False,
                    linear=True,
                    abstract_eval=lambda args, params: (args[0].shape, args[0].dtype))
COPY.defpartials(1.0)
