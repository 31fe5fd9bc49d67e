"""ADDS values and the paper's typing rules (seed 002, §2.1 and §2.4).

An ADDS value of type ``[n1,...,nk]`` is a NumPy object array of that shape whose elements
are scalar graph nodes; a scalar (type ``[]``) is a 0-d object array.  Every array operation
decomposes into scalar operations on those nodes, as ADDS does, so the graph only ever
holds scalar nodes and every scalar primitive, rule and simplification applies unchanged.

Each function here checks the paper's rule for its operator and raises `AddsError` naming
both types when the operands do not fit.
"""
from __future__ import annotations

import math

import numpy as np

from ..primitives import scalar as P
from ..primitives.registry import power_by_squaring
from .errors import AddsError


def type_str(value_or_shape) -> str:
    """The paper's notation for a type: ``[]`` for a scalar, ``[2,3]`` for an array.

    Example:
        >>> type_str((2, 3)), type_str(())
        ('[2,3]', '[]')
    """
    shape = value_or_shape if isinstance(value_or_shape, tuple) else value_or_shape.shape
    return "[" + ",".join(str(n) for n in shape) + "]"


#: The most elements one value may have: each is a node of the graph (a few hundred bytes),
#: so a million take some hundreds of megabytes; more is a typo rather than a program.
MAX_ELEMENTS = 10 ** 6


#: The most nodes a session's graph may hold (`wengert.Graph`'s ``max_nodes``): some
#: hundreds of bytes and a few microseconds each, so a second or two of building per
#: million.  A matrix product of order n makes about 2n**3 of them, so this is what stops
#: ``a*a`` of two [200,200] arrays (16 million nodes) before it starts, not minutes later.
MAX_NODES = 4 * 10 ** 6


#: The most indices a value may have: values are NumPy arrays, and NumPy allows no more
#: (64 since NumPy 2, 32 before).
MAX_RANK = 64 if int(np.__version__.split(".")[0]) >= 2 else 32


def check_size(shape, what=None):
    """Raise `AddsError` if a value of type `shape` would be too large (`MAX_ELEMENTS`) or
    of too high a rank (`MAX_RANK`); `what` names it in the message (by default, "a value
    of type ...").

    Example:
        >>> check_size((2000, 1000), "A")
        Traceback (most recent call last):
        ...
        wengert.adds.errors.AddsError: error: A is too large (2000000 elements; at most 1000000)
        >>> check_size((1,) * 65, "A")
        Traceback (most recent call last):
        ...
        wengert.adds.errors.AddsError: error: A has rank 65, too large (at most 64 indices)
    """
    if len(shape) > MAX_RANK:           # (NumPy would refuse it: an internal error)
        what = what or f"a value of type {type_str(shape)}"
        raise AddsError(f"{what} has rank {len(shape)}, too large (at most {MAX_RANK} "
                        "indices)")
    n = math.prod(shape)
    if n > MAX_ELEMENTS:
        what = what or f"a value of type {type_str(shape)}"     # (formatted only if needed)
        raise AddsError(f"{what} is too large ({n} elements; at most {MAX_ELEMENTS})")


def check_room(graph, need, what):
    """Raise `AddsError` if `need` more nodes would take `graph` past its ``max_nodes``.

    Example:
        >>> import wengert as wg
        >>> check_room(wg.Graph(max_nodes=10), 16, "*: the product of [2,2] by [2,2]")
        Traceback (most recent call last):
        ...
        wengert.adds.errors.AddsError: error: *: the product of [2,2] by [2,2] would make up to 16 nodes; the program may have at most 10 (it has 0 already)
    """
    if len(graph.nodes) + need > graph.max_nodes:
        # (what the graph holds already: "up to 15 nodes; at most 60" read as nonsense)
        raise AddsError(f"{what} would make up to {need} nodes; the program may have at most "
                        f"{graph.max_nodes} (it has {len(graph.nodes)} already)")


def scalar(node) -> np.ndarray:
    """A node as an ADDS scalar value (a 0-d object array)."""
    out = np.empty((), dtype=object)
    out[()] = node
    return out


def build(shape, element) -> np.ndarray:
    """The value of type `shape` whose element at each index tuple is ``element(index)``,
    made in row-major order (so nodes are created in the order the paper lists them).

    Example:
        >>> build((2, 2), lambda i: i[0] * 10 + i[1]).tolist()
        [[0, 1], [10, 11]]
    """
    if not shape:                       # a scalar (most values of most programs)
        return scalar(element(()))
    check_size(shape)
    out = np.empty(shape, dtype=object)
    for index in np.ndindex(*shape):
        out[index] = element(index)
    return out


def elementwise(fn, *values) -> np.ndarray:
    """``fn`` applied to corresponding elements of values of one type."""
    if not values[0].shape:
        return scalar(fn(*[v[()] for v in values]))
    return build(values[0].shape, lambda i: fn(*[v[i] for v in values]))


def _same_type(what, a, b):
    if a.shape != b.shape:
        raise AddsError(f"{what}: the operands must have the same type, got {type_str(a)} "
                        f"and {type_str(b)}")


def add(a, b):
    """``a + b``: elementwise, on operands of one type."""
    _same_type("+", a, b)
    return elementwise(P.add, a, b)


def sub(a, b):
    """``a - b``: elementwise, on operands of one type."""
    _same_type("-", a, b)
    return elementwise(P.sub, a, b)


def neg(a):
    """``-a``: elementwise."""
    return elementwise(P.neg, a)


def _dot(terms):
    """Σ of the products in `terms`, left to right (the order one writes it)."""
    total = None
    for x, y in terms:
        p = P.mul(x, y)
        total = p if total is None else P.add(total, p)
    return total


def mul(a, b):
    """``a * b``: a scalar times anything, or the contraction of the last index of `a` with
    the first index of `b`: types ``[n1..nj, n] * [n, m1..mk] -> [n1..nj, m1..mk]``
    (two vectors give their inner product, a scalar).

    Example:
        >>> import wengert as wg
        >>> g = wg.Graph()
        >>> a = build((2, 3, 4), lambda i: g.input(wg.ShapeDtype(), "a"))
        >>> b = build((4, 3), lambda i: g.input(wg.ShapeDtype(), "b"))
        >>> type_str(mul(a, b))
        '[2,3,3]'
    """
    if a.ndim == 0:
        return elementwise(lambda y: P.mul(a[()], y), b)
    if b.ndim == 0:
        return elementwise(lambda x: P.mul(x, b[()]), a)
    n = a.shape[-1]
    if b.shape[0] != n:
        raise AddsError(f"*: cannot multiply {type_str(a)} by {type_str(b)}: the last index of "
                        f"the left operand ranges to {n}, the first of the right to "
                        f"{b.shape[0]}")
    lead, trail = a.shape[:-1], b.shape[1:]
    check_size(lead + trail)            # (build's check, first: its message says more)
    check_room(a.flat[0].graph, math.prod(lead + trail) * (2 * n - 1),
               f"*: the product of {type_str(a)} by {type_str(b)}")
    return build(lead + trail, lambda i: _dot(
        (a[i[:len(lead)] + (k,)], b[(k,) + i[len(lead):]]) for k in range(n)))


def div(a, b):
    """``a / b``: each element of `a` divided by the scalar `b`."""
    if b.ndim != 0:
        raise AddsError(f"/: the divisor must be a scalar, got {type_str(a)} / {type_str(b)}")
    return elementwise(lambda x: P.div(x, b[()]), a)


def constant_integer(value):
    """The integer a scalar value stands for, if it is a constant integer, else None.
    Inputs carry no value, so a node with one was computed from constants alone: in a
    plain session (no folding) ``n := 1+1`` is an add node, and still the integer 2."""
    if value.ndim != 0 or value[()].value is None:
        return None
    v = value[()].value
    return int(v) if float(v).is_integer() else None


def power(a, b, integer=constant_integer):
    """``a ** b``: a scalar to a scalar power, or a square matrix to a positive integer
    power.  A constant integer exponent is computed by multiplications (repeated squaring),
    as ADDS decomposes it; any other exponent is the ``pow`` function.  `integer` tells
    which integer constant `b` is, if any (a session without simplification sees more
    than `constant_integer` does: see `Session._constant_integer`).

    Example:
        >>> import wengert as wg
        >>> g = wg.Graph()
        >>> x = scalar(g.input(wg.ShapeDtype(), "x"))
        >>> [n.op.name for n in g.live_nodes([power(x, scalar(g.const(4.0)))[()]])]
        ['input', 'mul', 'mul']
    """
    n = integer(b)
    if a.ndim == 0 and b.ndim == 0:
        x = a[()]
        if n is None:
            return scalar(P.pow(x, b[()]))
        if n == 0:
            return scalar(x.graph.const(1.0))
        y = power_by_squaring(x, abs(n), P.mul)
        return scalar(y if n > 0 else P.div(1.0, y))
    if a.ndim == 2 and a.shape[0] == a.shape[1] and b.ndim == 0:
        if n is None or n < 1:
            raise AddsError(f"**: a matrix can only be raised to a positive integer constant "
                            f"power, got {type_str(a)} ** {type_str(b)}")
        return power_by_squaring(a, n, mul)
    raise AddsError(f"**: defined for a scalar to a scalar power and a square matrix to a "
                    f"positive integer power, got {type_str(a)} ** {type_str(b)}")


def vp(u, w):
    """``vp(u, w)``: the vector (cross) product of two vectors of type [3]."""
    if u.shape != (3,) or w.shape != (3,):
        raise AddsError(f"vp: the vector product needs two operands of type [3], got "
                        f"{type_str(u)} and {type_str(w)}")
    def component(i):
        j, k = (i[0] + 1) % 3, (i[0] + 2) % 3
        return P.sub(P.mul(u[j], w[k]), P.mul(u[k], w[j]))
    return build((3,), component)


def tp(a):
    """``tp(a)``: the transpose of a matrix (type [n,m] -> [m,n])."""
    if a.ndim != 2:
        raise AddsError(f"tp: the transpose needs a matrix (rank 2), got {type_str(a)}")
    return a.T.copy()


def vec(*values):
    """``vec(e1, ..., en)``: n operands of one type ``[m..]`` stacked into ``[n, m..]``."""
    if not values:
        raise AddsError("vec: needs at least one operand")
    for v in values[1:]:
        if v.shape != values[0].shape:
            raise AddsError(f"vec: the operands must have one type, got "
                            f"{type_str(values[0])} and {type_str(v)}")
    check_size((len(values),) + values[0].shape)
    out = np.empty((len(values),) + values[0].shape, dtype=object)
    for i, v in enumerate(values):
        out[i] = v[()] if v.ndim == 0 else v
    return out


def index(value, indices, what):
    """``a[i1, ..., ij]`` with 1-based indices: an element (j = rank) or, for j < rank, the
    sub-array of type ``[n_{j+1}, ..., n_k]`` (partial indexing)."""
    if len(indices) > value.ndim:
        raise AddsError(f"{what} has type {type_str(value)}: {len(indices)} indices are "
                        f"too many")
    at = []
    for i, n in zip(indices, value.shape):
        if not 1 <= i <= n:
            # (past 2**53 the integer is a float's rounding, not what was written:
            # 99999999999999999999 read 100000000000000000000, 1e300 had 301 digits)
            shown = i if abs(i) < 2 ** 53 else f"{float(i):g}"
            raise AddsError(f"index {shown} of {what} is out of range 1..{n} (its type is "
                            f"{type_str(value)})")
        at.append(i - 1)
    # a copy: a later indexed assignment to the variable must not change this value
    return value[tuple(at)].copy() if len(at) < value.ndim else scalar(value[tuple(at)])


def flat(values) -> list:
    """The scalar nodes of several values, in order (row-major within each)."""
    return [n for v in values for n in v.reshape(-1)]
