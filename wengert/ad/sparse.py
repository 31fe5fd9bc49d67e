"""Sparse Jacobians: the sparsity pattern read off the graph, columns (or rows) grouped by
greedy colouring, and one sweep per group.

Two columns of a Jacobian that have no nonzero row in common can share a forward sweep:
seed both inputs at once and each output's tangent is the one nonzero of the two
(Curtis, Powell and Reid).  Grouping columns so that no two in a group share a row is
colouring the column intersection graph; the greedy distance-1 colouring used here needs
as many sweeps as the band is wide for a banded Jacobian (3 for a tridiagonal one) instead
of one per input.  Rows are grouped the same way for reverse sweeps, and whichever needs
fewer sweeps is used.

The pattern is structural: an entry is nonzero when some path of edges with declared
partials joins the input to the output.  It is found in one pass over the graph, each node
carrying the set of input elements it depends on (`_Deps`: an object array of them for an
array-valued node), united lazily, so that the cost follows the graph and the pattern's
entries.
"""
from __future__ import annotations

import numpy as np

from ..primitives.registry import REGISTRY
from ..primitives.array import decode_index
from . import forward, reverse
from .batched import all_at_once


# --------------------------------------------------------------------------------------
# the pattern
# --------------------------------------------------------------------------------------
class _Deps:
    """The set of input elements a value depends on, as a number that NumPy can move, sum
    and multiply: every arithmetic operation unites the sets, and a product with an exact
    zero is zero.  A structural primitive's own implementation run on arrays of these
    gives its pattern exactly.

    A set is either a leaf, a frozenset of input element numbers, or the union of `parts`
    (other `_Deps`), taken only when `members` asks.  Uniting is then O(1) where copying
    sets would make a sum of n terms, or a chain of n steps that each adds a term, cost
    n² (Python int bitsets, used before, cost n² bits even for a tridiagonal pattern: each
    set was as wide as the largest input number in it)."""
    __slots__ = ("s", "parts")

    def __init__(self, s, parts=None):
        self.s = s
        self.parts = parts

    def empty(self):
        return self.s is not None and not self.s

    def _join(self, other):
        if type(other) is not _Deps or other is self:
            return self
        s = other.s
        if s is not None and not s:
            return self
        s = self.s
        if s is not None and not s:
            return other
        return _Deps(None, (self, other))

    def __mul__(self, other):
        if type(other) is _Deps:
            return self._join(other)
        return 0 if other == 0 else self

    __add__ = __radd__ = __sub__ = __rsub__ = __truediv__ = __rtruediv__ = _join
    __rmul__ = __mul__

    def __neg__(self):
        return self

    __pos__ = __neg__

    def members(self) -> frozenset:
        """The set, computed from the parts once (by a walk, not by recursion: a chain of a
        million steps is a million deep) and kept."""
        if self.s is None:
            leaves, seen, stack = [], set(), [self]
            while stack:
                e = stack.pop()
                if e in seen:                       # (hashed by identity)
                    continue
                seen.add(e)
                if e.s is not None:
                    leaves.append(e.s)
                else:
                    stack.extend(e.parts)
            self.s = frozenset().union(*leaves)
            self.parts = None
        return self.s


NONE = _Deps(frozenset())
_join = np.frompyfunc(_Deps._join, 2, 1)             # element by element, broadcasting
_is_empty = np.frompyfunc(_Deps.empty, 1, 1)


def _united(deps):
    """The union of a list of `_Deps`."""
    deps = [e for e in deps if not e.empty()]
    if not deps:
        return NONE
    return deps[0] if len(deps) == 1 else _Deps(None, tuple(deps))


def _all(d):
    """The union of every set of d (one `_Deps`, or an object array of them)."""
    return d if type(d) is _Deps else _united(np.ravel(d).tolist())


def _as_array(d):
    """d as an object array (one `_Deps` as a 0-d one)."""
    if type(d) is _Deps:
        out = np.empty((), dtype=object)
        out[()] = d
        return out
    return d


def _shaped(d, shape):
    """Dependence sets d broadcast to `shape` (an object array, or a `_Deps` for a
    scalar)."""
    if shape == ():
        return _all(d)
    return np.broadcast_to(_as_array(d), shape)


def _index_set_deps(x, v, index):
    # (index_set's implementation copies x in x's dtype: a float x could not hold the sets
    # of a v that depends on the inputs)
    out = np.array(x, dtype=object)
    out[decode_index(index)] = v
    return out


def _put_along_deps(g, idx, axis, shape):
    # (put_along_axis's implementation starts from a float array; adding at every place
    # named covers both its put and its add)
    out = np.zeros(shape, dtype=object)
    g = np.broadcast_to(g, np.broadcast_shapes(np.shape(g), np.shape(idx)))
    grid = list(np.indices(g.shape, sparse=True))
    grid[axis] = np.broadcast_to(idx, g.shape)
    np.add.at(out, tuple(grid), g)
    return out


def _interp_deps(x, xp, fp, left, right):
    # Where x and xp are known (values), each value depends on the two neighbours of its
    # interval in fp, or on the end it is beyond; else on its own x, the ends, and all of
    # xp and fp.  (Every element a set: the numbers here are not interp's values.)
    if np.ndim(xp) != 1:
        raise NotImplementedError("rows of sample points: taken to mix them all")
    x, xp, fp = np.asarray(x), np.asarray(xp), np.asarray(fp, dtype=object)
    none = np.full(x.shape, NONE, dtype=object)
    if x.dtype != object and xp.dtype != object:
        j = np.clip(np.searchsorted(xp, x, side="right") - 1, 0, xp.size - 2)
        return none + np.where(x < xp[0], left, np.where(x > xp[-1], right,
                                                          fp[j] + fp[j + 1]))
    every = _united([e for e in np.concatenate([np.ravel(xp), fp]).tolist()
                     if type(e) is _Deps])
    return none + x + every + left + right


def _extremum_deps(x, axis, keepdims):
    # a maximum or minimum depends on every element it compares: the pattern of a sum
    return np.sum(x, axis=axis, keepdims=keepdims)


#: Structural primitives whose implementation only moves, sums and multiplies elements,
#: so that running it on `_Deps` gives their pattern.  Any other structural primitive is
#: taken to mix all the elements of its arguments.
BY_EVALUATION = frozenset({"reshape", "transpose", "sum", "prod", "cumsum", "cumprod",
                           "getitem", "index_add", "index_set", "take_along_axis",
                           "put_along_axis", "concatenate", "flip", "roll", "pad", "tril",
                           "matmul", "einsum", "broadcast_to", "sum_to", "amax", "amin",
                           "interp"})

#: Stand-ins run instead of the implementation, for the primitives of `BY_EVALUATION`
#: whose implementation cannot hold `_Deps` (or compares them).
STAND_INS = {"index_set": _index_set_deps, "put_along_axis": _put_along_deps,
             "amax": _extremum_deps, "amin": _extremum_deps, "interp": _interp_deps}

#: Structural primitives that map each element to one element of their first argument
#: (a cast, a conjugate): the pattern of that argument, and its known zeros.
ELEMENTWISE = frozenset({"astype", "conj"})

_deps_of = np.frompyfunc(lambda e: e if type(e) is _Deps else NONE, 1, 1)
_zero_of = np.frompyfunc(lambda e: type(e) is not _Deps and e == 0, 1, 1)


def _stand_in(a, d, zeros):
    """Argument a (dependence sets d) for a structural primitive: where its set is empty,
    the element is a constant, given as its value when the graph holds one, as 0 when it
    is known to be an exact zero (a structural zero: `diag`'s off-diagonal; a product with
    it is then zero, not a dependence), else as an unknown constant."""
    if a.shape == ():
        if not d.empty():
            return d
        if a.value is not None:
            return a.value
        return 0 if zeros is not None else d
    empty = np.asarray(_is_empty(d), dtype=bool)
    if not empty.any():
        return d
    out = np.array(d, dtype=object)
    if a.value is not None:
        known = np.broadcast_to(np.asarray(a.value), a.shape).astype(object)
        out[empty] = known[empty]
    elif zeros is not None:
        out[empty & zeros] = 0
    return out


def _evaluated(node, dep, zeros, run):
    """The dependence sets of a structural node from `run` (its implementation or stand-in)
    and the mask of its elements known to be exact zeros (None if none is), or None when
    `run` does not take `_Deps`."""
    args = []
    for a in node.args:
        d = dep.get(a.index)
        if d is not None:
            args.append(_stand_in(a, d, zeros.get(a.index)))
        elif a.value is not None:
            args.append(a.value)                    # its zeros are known
        else:
            args.append(NONE if a.shape == () else np.full(a.shape, NONE))
    try:
        out = np.asarray(run(*args, **node.params), dtype=object)
    except Exception:                               # anything it cannot do with _Deps
        return None
    if out.shape != node.shape:
        return None
    zero = np.asarray(_zero_of(out), dtype=bool)
    return _deps_of(out), (zero if zero.any() else None)


def sparsity(graph, inputs, outputs) -> list[list[int]]:
    """The structural sparsity pattern of the Jacobian of `outputs` with respect to
    `inputs` (nodes of `graph`; array-valued ones count element by element, in C order):
    for each output element, the sorted input elements it depends on.

    Elementwise primitives depend on the arguments whose partial is declared; the
    structural primitives of `BY_EVALUATION` (reshapes, indexing, sums, products, matmul,
    ...) are run on sets of input elements, so they map elements exactly as they move,
    sum or multiply them; any other structural primitive is taken to mix all elements of
    its arguments (a safe overestimate).  An element such a primitive gives as an exact 0
    (a structural zero) stays known as one, so that a product with it is zero too.  The
    work and memory follow the graph and the pattern's entries, not the number of inputs
    squared.

    Example:
        >>> import wengert as wg
        >>> from wengert.ad.sparse import sparsity
        >>> g = wg.trace(lambda x, y, z: (x * y, wg.math.sin(z), y > 0), 1.0, 2.0, 3.0)
        >>> sparsity(g, g.inputs, g.outputs)
        [[0, 1], [2], []]
    """
    dep = {}
    zeros = {}              # node index -> mask of the elements known to be exact zeros
    offset = 0
    for x in inputs:
        if x.shape == ():
            dep[x.index] = _Deps(frozenset((offset,)))
        else:
            sets = np.empty(x.size, dtype=object)
            sets[:] = [_Deps(frozenset((offset + k,))) for k in range(x.size)]
            dep[x.index] = sets.reshape(x.shape)
        offset += x.size
    for node in graph.between(inputs, outputs):
        op = node.op
        found = [(k, dep[a.index]) for k, a in enumerate(node.args) if a.index in dep]
        d = None
        if op.jvp is None and op.partials is not None:        # elementwise
            parts = [dk for k, dk in found if op.partials[k] is not None]
            d = NONE if not parts else parts[0]
            for dk in parts[1:]:
                d = d._join(dk) if type(d) is _Deps and type(dk) is _Deps else \
                    _join(_as_array(d), _as_array(dk))
            d = _shaped(d, node.shape)
        elif op.name in ELEMENTWISE and REGISTRY.get(op.name) is op and found \
                and found[0][0] == 0:
            d = _shaped(found[0][1], node.shape)
            if node.args[0].index in zeros and node.args[0].shape == node.shape:
                zeros[node.index] = zeros[node.args[0].index]
        elif op.name in BY_EVALUATION and REGISTRY.get(op.name) is op:
            got = _evaluated(node, dep, zeros, STAND_INS.get(op.name, op.impl))
            if got is not None:
                d, zero = got
                if zero is not None:
                    zeros[node.index] = zero
                d = d if node.shape != () else d[()] if type(d) is np.ndarray else d
        if d is None:
            d = _shaped(_united([_all(dk) for _, dk in found]), node.shape)
        dep[node.index] = d
    rows = []
    for o in outputs:
        d = dep.get(o.index)
        if d is None:               # independent of the inputs: a row of no entries for
            rows.extend([] for _ in range(o.size))      # each of its elements
            continue
        for e in (np.ravel(d).tolist() if o.shape != () else (d,)):
            rows.append(sorted(e.members()))
    return rows


# --------------------------------------------------------------------------------------
# colouring
# --------------------------------------------------------------------------------------
def transpose(rows, ncols) -> list[list[int]]:
    """The pattern by columns: for each column, the rows where it is nonzero."""
    cols = [[] for _ in range(ncols)]
    for i, r in enumerate(rows):
        for j in r:
            cols[j].append(i)
    return cols


def color_columns(rows, ncols) -> list[int]:
    """A greedy distance-1 colouring of the columns (Curtis–Powell–Reid): columns are taken
    in order, each getting the smallest colour no column sharing a nonzero row with it has.
    Columns of one colour can share one forward sweep.

    Example (a tridiagonal pattern needs 3 colours):
        >>> from wengert.ad.sparse import color_columns
        >>> rows = [[0, 1], [0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4]]
        >>> color_columns(rows, 5)
        [0, 1, 2, 0, 1]
    """
    if any(len(r) == ncols for r in rows):
        # a full row: every column needs a colour of its own (the greedy answer, without
        # its cost, cubic in n for a dense pattern)
        return list(range(ncols))
    cols = transpose(rows, ncols)
    colour = [-1] * ncols
    for j in range(ncols):
        taken = {colour[k] for i in cols[j] for k in rows[i]}
        c = 0
        while c in taken:
            c += 1
        colour[j] = c
    return colour


def color_rows(rows, ncols) -> list[int]:
    """The same colouring for rows (rows of one colour share one reverse sweep).

    Example (an arrow: one dense row needs its own sweep, the rest share one):
        >>> from wengert.ad.sparse import color_rows
        >>> color_rows([[0, 1, 2, 3], [1], [2], [3]], 4)
        [0, 1, 1, 1]
    """
    return color_columns(transpose(rows, ncols), len(rows))


def fewest_sweeps(rows, ncols):
    """("columns", colours) or ("rows", colours): the colouring of `color_columns` or of
    `color_rows` with fewer colours (columns on a tie).  A colouring of columns needs at
    least as many colours as the longest row has entries (they all meet in that row), and
    one of rows as many as the longest column: the second colouring is skipped where
    that bound shows it cannot win.

    Example (an arrow: one dense row, the rest diagonal; rows need 2 sweeps, columns 4):
        >>> from wengert.ad.sparse import fewest_sweeps
        >>> fewest_sweeps([[0, 1, 2, 3], [1], [2], [3]], 4)
        ('rows', [0, 1, 1, 1])
    """
    cols = transpose(rows, ncols)
    longest_row = max(map(len, rows), default=0)
    longest_col = max(map(len, cols), default=0)
    if longest_row <= longest_col:
        by_cols = color_columns(rows, ncols)
        if longest_col >= max(by_cols, default=-1) + 1:
            return "columns", by_cols
        by_rows = color_columns(cols, len(rows))          # (color_rows, transposed once)
    else:
        by_rows = color_columns(cols, len(rows))
        if longest_row > max(by_rows, default=-1) + 1:
            return "rows", by_rows
        by_cols = color_columns(rows, ncols)
    if max(by_rows, default=-1) < max(by_cols, default=-1):
        return "rows", by_rows
    return "columns", by_cols


# --------------------------------------------------------------------------------------
# compressed sweeps
# --------------------------------------------------------------------------------------
def _seeds(leaves, colours, c):
    """One seed per leaf for sweep colour c: 1 on the elements of that colour."""
    seeds = []
    k = 0
    for leaf in leaves:
        if leaf.shape == ():
            seeds.append(1.0 if colours[k] == c else None)
        else:
            mask = np.array(colours[k:k + leaf.size]) == c
            seeds.append(mask.reshape(leaf.shape).astype(np.float64) if mask.any() else None)
        k += leaf.size
    return seeds


def entry_dtype(values):
    """The dtype of numeric Jacobian entries: complex128 if any of `values` (numbers or
    arrays) is complex (a holomorphic function's), else float64."""
    for v in values:
        if np.iscomplexobj(v):
            return np.complex128
    return np.float64


def _flat(values, leaves, symbolic):
    """The sweep results, one per leaf, as one flat vector (a list with None for zero when
    symbolic, a float or complex array otherwise)."""
    if symbolic:
        return list(values)
    dtype = entry_dtype(v for v in values if v is not None)
    parts = []
    for v, leaf in zip(values, leaves):
        parts.append(np.zeros(leaf.size, dtype) if v is None else
                     np.ravel(np.asarray(v, dtype=dtype)))
    return np.concatenate(parts) if parts else np.zeros(0)


def compressed(graph, inputs, outputs, rows, colours, by="columns", symbolic=False):
    """The Jacobian entries from one sweep per colour, as coordinates (I, J, V), row by
    row: entry (I[k], J[k]) is V[k].  NumPy arrays when numeric (V complex for a
    holomorphic function: real seeds give its complex derivatives, by either sweep);
    lists, V of graph nodes, when symbolic (zeros left out).

    Args:
        rows: the sparsity pattern (`sparsity`), or None for a dense Jacobian (then every
            colour must hold one column, or one row).
        colours: a colour for every column (``by="columns"``: forward sweeps) or every row
            (``by="rows"``: reverse sweeps); no two of one colour may share a nonzero.
        symbolic: build the entries as graph nodes (scalar leaves only) or compute numbers.

    Example:
        >>> import wengert as wg
        >>> from wengert.ad.sparse import sparsity, color_columns, compressed
        >>> g = wg.trace(lambda x, y, z: (x * y, z * z), 1.0, 2.0, 3.0, abstract=False)
        >>> rows = sparsity(g, g.inputs, g.outputs)
        >>> cols = color_columns(rows, 3)
        >>> rows, cols                  # z's column shares no row with x's: one sweep
        ([[0, 1], [2]], [0, 1, 0])
        >>> I, J, V = compressed(g, g.inputs, g.outputs, rows, cols)
        >>> list(zip(I.tolist(), J.tolist(), V.tolist()))
        [(0, 0, 2.0), (0, 1, 1.0), (1, 2, 6.0)]
    """
    if symbolic and any(n.shape != () for n in list(inputs) + list(outputs)):
        raise NotImplementedError(
            "a Jacobian of array-valued functions inside another transformation needs the "
            "array primitives of wengert.numpy (stacking); use scalars, or take this "
            "Jacobian at the outermost level")
    if by not in ("columns", "rows"):
        raise ValueError(f"by must be 'columns' or 'rows', got {by!r}")
    plan = graph.between(inputs, outputs)
    m = sum(o.size for o in outputs)
    n = sum(x.size for x in inputs)
    forward_sweeps = by == "columns"
    seed_leaves, got_leaves = (inputs, outputs) if forward_sweeps else (outputs, inputs)
    size = m if forward_sweeps else n
    if rows is None:
        lines = None
    elif forward_sweeps:
        lines = transpose(rows, n)
    else:
        lines = rows
    members = {}
    for j, c in enumerate(colours):
        members.setdefault(c, []).append(j)
    order = sorted(members)
    batch = None
    if not symbolic:
        slot = {c: s for s, c in enumerate(order)}
        batch = all_at_once(plan, inputs, outputs, [slot[c] for c in colours], len(order),
                            forward_sweeps)
    if batch is not None and lines is None:
        # dense, one line per colour: the batch is the Jacobian (or its transpose), whose
        # coordinates are made at once, already row by row
        line = np.array([members[c][0] for c in order], dtype=np.int64)
        dense = np.zeros((size, len(colours)), batch.dtype)
        dense[:, line] = batch
        if not forward_sweeps:
            dense = dense.T
        rows_, cols_ = np.indices(dense.shape).reshape(2, -1)
        return rows_, cols_, dense.ravel()
    I, J, V = [], [], []
    for s, c in enumerate(order):
        if batch is not None:
            vec = batch[:, s]
        else:
            seeds = _seeds(seed_leaves, colours, c)
            if forward_sweeps:
                got = forward(plan, inputs, seeds, outputs, symbolic)
            else:
                got = reverse(plan, inputs, outputs, seeds, symbolic)
            vec = _flat(got, got_leaves, symbolic)
        for j in members[c]:
            at = lines[j] if lines is not None else range(size)
            if symbolic:
                at = [i for i in at if vec[i] is not None]
                V += [vec[i] for i in at]
            else:
                at = np.asarray(at, dtype=np.int64)
                V.append(vec[at])
            I.append(at)
            J.append([j] * len(at))
    if not forward_sweeps:
        I, J = J, I
    if symbolic:
        found = sorted(zip([i for part in I for i in part], [j for part in J for j in part], V),
                       key=lambda t: t[:2])
        return [t[0] for t in found], [t[1] for t in found], [t[2] for t in found]
    cat = (lambda parts, dtype: np.concatenate([np.asarray(p, dtype=dtype) for p in parts])
           if parts else np.zeros(0, dtype))
    I, J, V = cat(I, np.int64), cat(J, np.int64), cat(V, entry_dtype(V))
    order = np.lexsort((J, I))                  # row by row, as a reader expects
    return I[order], J[order], V[order]
