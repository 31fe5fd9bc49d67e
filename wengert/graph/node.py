"""A node of the computational graph, which is also the traced value user code sees.

A node records one operation of the Wengert list: its primitive (`op`), its argument
nodes (`args`), its parameters, its shape and dtype, its value when it is known (eager
tracing) and the nodes that use it (`users`, the ADDS paper's ``to`` list).  Python
operators on nodes build new nodes, so ordinary code written for floats traces itself.
"""
from __future__ import annotations

import math

from ..errors import ConcretizationError


def _type_str(shape, dtype) -> str:
    short = {"float64": "f64", "float32": "f32", "int64": "i64", "int32": "i32",
             "bool": "bool", "complex128": "c128"}.get(dtype.name, dtype.name)
    return f"{short}[{','.join(str(d) for d in shape)}]"


# The traces that have no values of their own, by `Graph.tracer`: what was being traced
# (for the error of a branch on a traced value), and what follows the advice.
_TRACERS = {
    "scan": ("wg.scan traced its body, which runs once for every step", ""),
    "fori_loop": ("wg.fori_loop traced its body, which runs once for every i", ""),
    "vmap": ("wg.vmap traced one example, whose mapped arguments have no single value",
             ", which vmap batches"),
    "linearize": ("wg.linearize traced f at a point that has no value here (inside wg.vmap, "
                  "wg.scan or wg.compile)", ""),
    "shard_map": ("shard_map traced f, whose arguments sharded over a mesh axis have no "
                  "single value (in JAX they vary from device to device)", ""),
    "custom_vmap": ("custom_vmap traced f for the shapes of its result (as JAX traces it)",
                    ""),
}


class Node:
    """One operation in the graph; stands for its value in traced code.

    Attributes:
        graph: the Graph that owns the node.
        index: creation position in the graph (a topological order).
        op: the Primitive.
        args: tuple of argument nodes.
        params: dict of static parameters (for example ``{"n": 2}`` for ``x**2``).
        shape, dtype: as in NumPy.
        value: the concrete value, or None while tracing abstractly.
        users: nodes that take this node as an argument, in creation order (derived from
            the graph on demand: eager tracing never pays for it).
        weak: whether the node is weakly typed, as a Python scalar is (see
            `wengert.primitives.registry.is_weak`, which reads it).  Unset until someone
            asks: eager tracing never pays for it.

    Example:
        >>> import wengert as wg
        >>> g = wg.trace(lambda x: x * x + 1.0, 3.0)
        >>> out = g.outputs[0]
        >>> out.op.name, out.shape, out.dtype.name
        ('add', (), 'float64')
    """

    __slots__ = ("graph", "index", "op", "args", "params", "shape", "dtype", "value",
                 "name", "weak", "__weakref__")

    # Python must hand mixed expressions like `ndarray * node` to the node.
    __array_priority__ = 1000

    def __init__(self, graph, index, op, args, params, shape, dtype, value, name=None):
        self.graph = graph
        self.index = index
        self.op = op
        self.args = args
        self.params = params
        self.shape = shape
        self.dtype = dtype
        self.value = value
        self.name = name

    # --- what the node is -------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        # (math.prod, not NumPy's: sweeps and seedings ask this of every scalar node)
        return math.prod(self.shape)

    @property
    def users(self) -> list:
        return self.graph.users_of(self)

    @property
    def is_const(self) -> bool:
        return self.op.name == "const"

    def label(self) -> str:
        """How the node is named in printed graphs: its variable name, or %index."""
        return self.name if self.name is not None else f"%{self.index}"

    def __repr__(self) -> str:
        val = "" if self.value is None else f" = {self.value!r}"
        return f"<Node {self.label()}: {_type_str(self.shape, self.dtype)} {self.op.name}{val}>"

    def __format__(self, spec):
        # f"{x:.3f}" in eager code prints the number; an abstract node prints itself, but
        # has no number to format to a spec (".3f" of its text was NumPy's ValueError)
        if self.value is None and spec:
            raise ConcretizationError(
                f"format(x, {spec!r}) of traced variable {self.label()} while tracing "
                "without values (wg.trace / wg.compile): it has no number yet. Format the "
                "result after the call, or call the function eagerly (wg.grad(f)(x)), "
                "where traced values have their numbers")
        return format(repr(self) if self.value is None else self.value, spec)

    # --- Python's hash is identity: graphs key dicts and sets by node ------------------
    __hash__ = object.__hash__

    # A traced value never changes, so a copy is the value itself.  (Python's deep copy
    # would copy the graph with it: the copy's derivative was lost without a word.)
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce_ex__(self, protocol):
        raise TypeError(f"traced value {self.label()} cannot be pickled: it stands for a "
                        "value being differentiated; pickle wg.value(x), the number, if "
                        "that is what you mean")

    # --- reading the value --------------------------------------------------------------
    def _concrete(self, what):
        if self.value is None:
            # an index is a gather, not a branch: say which function takes traced indices
            instead = None
            indexing = "index" in what or "indices" in what
            if "update" in what:
                # a write: take_along_axis (a read) does not apply.  (What x.at[...]
                # takes traced is in wengert.numpy.updates.IndexUpdate._picked.)
                instead = ("x.at[...] takes traced scalar integers among slices (x.at[i], "
                           "x.at[:, i]); for an index array, update in such steps, or "
                           "write the update as a select: for a vector x, x.at[idx].set(v) "
                           "is wengert.numpy.where(wengert.numpy.isin(wengert.numpy.arange("
                           "len(x)), idx), v, x)")
            elif indexing and self.dtype.kind == "b":
                # a mask selects a number of elements its values decide: no fixed shape
                instead = ("A boolean mask selects as many elements as its values say, "
                           "so x[mask] has no shape before they are known: keep the shape "
                           "with wengert.numpy.where(mask, x, 0) (then sum, say)")
            elif indexing and self.dtype.kind not in "iu":
                # (a Python int argument of wg.compile is traced as a weak float)
                instead = (f"It is a {self.dtype} value, and an index must be an integer: "
                           "pass an integer as a NumPy integer (numpy.int64(i)), not a "
                           "Python int, which is traced as a float, or mark it static")
            elif indexing:
                # (what x[i] takes is in wengert.numpy._getitem_gathered)
                instead = ("A traced x takes traced integer indices, x[i] or x[:, i] (one "
                           "index array, or scalar indices with slices): index in such "
                           "steps, or with wengert.numpy.take(x, i, axis=k), which takes "
                           "them")
            elif what == "read as a NumPy array" and self.dtype.kind in "iu":
                # (table[i] on a NumPy table: NumPy's indexing converts i, with no dispatch)
                instead = ("If it indexes a NumPy array, table[i], write "
                           "wengert.numpy.take(table, i, axis=0), which takes traced "
                           "indices; if it decides a branch, write it as "
                           "wengert.numpy.where(cond, a, b) (or wg.select)")
            during = _TRACERS.get(self.graph.tracer)
            if during is not None:
                while_, batched = during
                if indexing and self.dtype.kind not in "iub":
                    batched = ""        # (an integer is what is missing, not a batch rule)
                raise ConcretizationError(
                    f"the value of traced variable {self.label()} was {what} while "
                    f"{while_}, so Python cannot decide it. " + (
                        instead + batched + "." if instead else
                        "Write a value-dependent branch as wengert.numpy.where(cond, a, b) "
                        "(or wg.select)" + batched + "."))
            raise ConcretizationError(
                f"the value of traced variable {self.label()} was {what} while tracing "
                "without values (wg.trace / wg.compile), so Python cannot decide it. " + (
                    instead + ", or call the function eagerly with concrete "
                    "arguments, e.g. wg.grad(f)(x)." if instead else
                    "A value-dependent `if`, `while` or `and`/`or` needs a concrete "
                    "value: write the branch as wg.select(cond, a, b) (or "
                    "wengert.numpy.where), or call the function eagerly with concrete "
                    "arguments, e.g. wg.grad(f)(x)."))
        return self.value

    def __bool__(self):
        return bool(self._concrete("used as a truth value"))

    def __int__(self):
        return int(self._concrete("converted to int"))

    def __index__(self):
        value = self._concrete("used as an index")
        if self.dtype.kind not in "iu":
            # (as NumPy's float64 and bool refuse it: a float length or index would be
            # truncated, silently, with a zero derivative)
            raise TypeError(f"traced value {self.label()} of dtype {self.dtype} cannot be "
                            "interpreted as an integer (an index, a length, a count): "
                            "only integer values can")
        return int(value)

    def __float__(self):
        raise self._cut_off("float()")

    def _cut_off(self, what):
        # float() (or x.item()) would return a number cut off from the graph: the derivative
        # through it would silently become zero.  Make that a decision the user writes down.
        if self.value is None:
            # (tracing without values: there is no number, so wg.value cannot help)
            how = ("or wg.stop_gradient(x) for the value without its derivative (it stays "
                   "traced: there is no number while tracing without values).")
        else:
            how = "or wg.value(x) if you really want the number without its derivative."
        err = ConcretizationError(
            f"{what} of traced variable {self.label()} would drop its derivative. Use the "
            "functions of wengert.math (wengert.math.sin, not math.sin) on traced values, "
            + how)
        err.node = self         # (see graph.active.recording, which may need it)
        return err

    def _to_array_error(self):
        """The error for a conversion to a plain NumPy array (numpy.asarray(x), or
        ``array[i] = x``), which would drop the derivative."""
        return ConcretizationError(
            f"traced value {self.label()} was converted to a plain NumPy array, which would "
            "drop its derivative. Use the functions of wengert.numpy on traced values (or "
            "NumPy's own functions, which dispatch to them), or wg.value(x) for the number "
            "itself.")

    def __len__(self):
        if not self.shape:
            raise TypeError(f"len() of a scalar traced value {self.label()}")
        return self.shape[0]

    # Arithmetic and comparison operators (x*y, x**2, 2-x, -x, x<y) are attached in
    # primitives/scalar.py, next to the primitives they build.
