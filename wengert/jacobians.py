"""Cheaper Jacobians: one entry point with a choice of method, sparse Jacobians and
Hessians, the Jacobian as a graph, and what each method costs.

    wg.jacobian(f, mode="auto")      "fwd", "rev", "eliminate", "sparse" or "auto"
    wg.sparse_jacobian(f)            a scipy.sparse matrix, one sweep per colour
    wg.sparse_hessian(f)             the same for the Jacobian of the gradient
    wg.jacobian_graph(f, *args)      the Jacobian as a graph (for counting and code)
    wg.jacobian_costs(f, *args)      operations of each method, side by side

The methods (see docs/jacobians.md):

- ``fwd``: one forward sweep per input element (as `wg.jacfwd`, whose sweeps along an
  array's elements run batched);
- ``rev``: one reverse sweep per output element (as `wg.jacrev`);
- ``eliminate``: vertex elimination on the edge-partial graph after contracting umbrellas
  (seed 003), the strategy picked by counting (`wengert.ad.eliminate`); scalar graphs only;
- ``sparse``: the sparsity pattern from the graph, columns or rows grouped by colouring,
  one sweep per group (`wengert.ad.sparse`);
- ``auto``: when the Jacobian is built as a graph (inside another transformation, or by
  `jacobian_graph`), elimination on scalar graphs: its entries never cost more operations
  than the better sweep's.  When it is computed as numbers, forward or reverse mode,
  whichever needs fewer sweeps: elimination's analysis then costs more than the sweeps it
  saves (benchmarks/jacobians.py times both).

Every method takes ``holomorphic=True`` (complex inputs and outputs, and the complex
derivatives of a holomorphic f, as `wg.jacfwd` gives them): the edge partials are then
complex numbers, and sums of their path products are the chain rule as for real ones.
"""
from __future__ import annotations

import functools

import numpy as np

from .api import (_check_argnums, _check_fun, _real_jacobian, _recorded, _resolve_argnums,
                  trace, jacobian_by_sweeps)
from .ad.edges import NotEliminable
from .ad.eliminate import eliminated_entries
from .ad.sparse import sparsity, fewest_sweeps, compressed, entry_dtype
from .codegen.count import count_ops, total
from .graph.graph import Graph, ShapeDtype
from .graph.node import Node
from .tree import flatten, unflatten

__all__ = ["jacobian", "sparse_jacobian", "sparse_hessian", "jacobian_graph",
           "jacobian_costs", "format_costs"]

MODES = ("auto", "fwd", "rev", "eliminate", "sparse")


def _check_mode(mode, who):
    if mode not in MODES:
        raise ValueError(f"{who}: mode must be one of {', '.join(map(repr, MODES))}, "
                         f"got {mode!r}")


# --------------------------------------------------------------------------------------
# the Jacobian as coordinates, whatever the method
# --------------------------------------------------------------------------------------
def _scalar_graph(inputs, outputs) -> bool:
    if any(n.shape != () for n in list(inputs) + list(outputs)):
        return False
    plan = inputs[0].graph.between(inputs, outputs) if inputs else []
    return all(n.shape == () and n.op.partials is not None for n in plan)


def _fewer_sweeps(inputs, outputs):
    """"fwd" or "rev", whichever needs fewer sweeps (forward on a tie)."""
    n = sum(x.size for x in inputs)
    m = sum(o.size for o in outputs)
    return "fwd" if n <= m else "rev"


def _pick(inputs, outputs, symbolic):
    """The method "auto" stands for: elimination where its fewer operations are kept (a
    Jacobian built as a graph, run again and again), else the fewer sweeps."""
    if symbolic and _scalar_graph(inputs, outputs):
        return "eliminate"
    return _fewer_sweeps(inputs, outputs)


def jacobian_coordinates(graph, inputs, outputs, mode="auto", symbolic=False):
    """The Jacobian of `outputs` with respect to `inputs` (nodes of `graph`, array nodes
    counted element by element) as coordinates (I, J, V) of its nonzero entries, by
    `mode`.  Symbolic: V holds graph nodes (or floats); numeric: NumPy arrays.  This is the
    graph-level core of `jacobian`, for front-ends that already have a graph.

    Example:
        >>> import wengert as wg
        >>> from wengert.jacobians import jacobian_coordinates
        >>> g = wg.trace(lambda x, y: (x * y, x + y), 2.0, 3.0, abstract=False)
        >>> I, J, V = jacobian_coordinates(g, g.inputs, g.outputs, "sparse")
        >>> V.tolist()
        [3.0, 2.0, 1.0, 1.0]
    """
    _check_mode(mode, "jacobian")
    auto = mode == "auto"
    if auto:
        mode = _pick(inputs, outputs, symbolic)
    if mode == "eliminate":
        try:
            entries = eliminated_entries(graph, inputs, outputs, symbolic)
        except NotEliminable:
            if not auto:
                raise
            # (a real part taken on the way, in a graph with complex values: the sweeps
            # take it, products cannot)
            mode = _fewer_sweeps(inputs, outputs)
    if mode == "eliminate":
        I = [i for i, _ in entries]
        J = [j for _, j in entries]
        V = list(entries.values())
        if symbolic:
            return I, J, V
        return (np.array(I, dtype=np.int64), np.array(J, dtype=np.int64),
                np.array(V, dtype=entry_dtype(V)))
    n = sum(x.size for x in inputs)
    m = sum(o.size for o in outputs)
    if mode == "fwd":
        return compressed(graph, inputs, outputs, None, list(range(n)), "columns", symbolic)
    if mode == "rev":
        return compressed(graph, inputs, outputs, None, list(range(m)), "rows", symbolic)
    rows = sparsity(graph, inputs, outputs)
    by, colours = fewest_sweeps(rows, n)
    return compressed(graph, inputs, outputs, rows, colours, by, symbolic)


# --------------------------------------------------------------------------------------
# the public functions
# --------------------------------------------------------------------------------------
def _layout(call, coords, out_nodes, out_tree, single):
    """The Jacobian in `wg.jacfwd`'s layout: f's output structure, each leaf holding the
    differentiated arguments' structure, blocks of shape out.shape + in.shape."""
    I, J, V = coords
    ins = call.inputs
    split = call.split
    r0 = np.cumsum([0] + [o.size for o in out_nodes])
    c0 = np.cumsum([0] + [x.size for x in ins])
    if call.symbolic:
        entry = {(i, j): v for i, j, v in zip(I, J, V)}
        leaves = []
        for a, o in enumerate(out_nodes):
            zero = call.zeros(o)
            blocks = [call.jacobian_block(entry.get((r0[a], c0[b]), zero), o, x)
                      for b, x in enumerate(ins)]
            per_arg = split(blocks)
            leaves.append(per_arg[0] if single else tuple(per_arg))
        return unflatten(out_tree, leaves)
    dense = np.zeros((r0[-1], c0[-1]), V.dtype if V.dtype.kind == "c" else np.float64)
    dense[I, J] = V
    leaves = []
    plain = all(x.shape == () and x.dtype == np.float64 for x in ins) and not call.zero_d
    for a, o in enumerate(out_nodes):
        if o.shape == () and o.dtype == np.float64 and plain:
            blocks = dense[r0[a]].tolist()          # a row of floats, quickly
        else:
            blocks = [call.jacobian_block(dense[r0[a]:r0[a + 1], c0[b]:c0[b + 1]].reshape(
                o.shape + x.shape), o, x) for b, x in enumerate(ins)]
        per_arg = split(blocks)
        leaves.append(per_arg[0] if single else tuple(per_arg))
    return unflatten(out_tree, leaves)


def jacobian(f, argnums=0, mode="auto", *, has_aux=False, holomorphic=False):
    """The Jacobian of f, by the method `mode`; same result layout as `wg.jacfwd`.

    Args:
        f: the function (scalars, NumPy arrays, or pytrees of them, in and out).
        argnums: the argument(s) to differentiate, as in `wg.jacfwd`.
        mode: ``"fwd"`` (one forward sweep per input element), ``"rev"`` (one reverse
            sweep per output element), ``"eliminate"`` (vertex elimination after umbrella
            contraction, seed 003; scalar graphs only), ``"sparse"`` (one sweep per
            colour of a column or row colouring of the sparsity pattern), or ``"auto"``
            (computing numbers: the mode with fewer sweeps; building a graph, inside
            another transformation: elimination on scalar graphs, whose entries never
            cost more operations than the better sweep's).
        has_aux: f returns ``(output, aux)``; the new function returns ``(jacobian,
            aux)``, aux as f gave it (not differentiated), as in `wg.jacfwd`.
        holomorphic: complex inputs and outputs, and the complex derivatives of a
            holomorphic f, as `wg.jacfwd` and `wg.jacrev` give them, by any mode.  (A
            real value computed from complex ones on the way, such as ``real(z)``, has a
            derivative that is a real part, not a product: ``"eliminate"`` refuses such
            a graph and ``"auto"`` uses sweeps for it.)

    Example (seed 003's function: v1 = x1·x2, v2 = g(v1), f = (x1·v2, x2·v2)):
        >>> import wengert as wg
        >>> import wengert.math as wm
        >>> def f(x1, x2):
        ...     v2 = wm.exp(wm.sin(x1 * x2))
        ...     return x1 * v2, x2 * v2
        >>> J = wg.jacobian(f, argnums=(0, 1), mode="eliminate")(1.0, 2.0)
        >>> J == wg.jacfwd(f, argnums=(0, 1))(1.0, 2.0)
        True
        >>> wg.jacobian(lambda x: x * x, mode="sparse")(3.0)
        6.0
        >>> wg.jacobian(lambda z: z * z, holomorphic=True)(3j)
        6j
        >>> J = wg.jacobian(f, argnums=(0, 1), mode="eliminate", holomorphic=True)(1j, 2 + 0j)
        >>> J == wg.jacfwd(f, argnums=(0, 1), holomorphic=True)(1j, 2 + 0j)
        True
        >>> wg.jacobian(lambda x: (x * x, {"half": x / 2}), has_aux=True)(3.0)
        (6.0, {'half': 1.5})
    """
    _check_mode(mode, "jacobian")

    @_recorded(f, argnums, "jacobian", holomorphic, has_aux, forward_only=mode == "fwd")
    def jac_f(call, out_nodes, out_tree, single):
        arrays = not _scalar_graph(call.inputs, out_nodes)
        how = mode
        if arrays and (how == "auto" or how == "sparse" and call.symbolic):
            # (array blocks inside another transformation are assembled by the sweeps with
            # stack/reshape: the coordinate form holds scalar entries only)
            how = _fewer_sweeps(call.inputs, out_nodes)
        if arrays and how in ("fwd", "rev"):
            # jacfwd's and jacrev's sweeps: the directions along an array's elements run as
            # one batched sweep, where the coordinate form would sweep once per element
            return jacobian_by_sweeps(call, out_nodes, out_tree, single, how)
        coords = jacobian_coordinates(call.graph, call.inputs, out_nodes, how, call.symbolic)
        return _layout(call, coords, out_nodes, out_tree, single)

    return jac_f


def _scipy_sparse():
    try:
        import scipy.sparse
    except ImportError:
        raise ImportError("sparse_jacobian and sparse_hessian return scipy.sparse "
                          "matrices; install SciPy: pip install 'wengert[sparse]' (or "
                          "use wg.jacobian(f, mode='sparse') for a dense result)") from None
    return scipy.sparse


def sparse_jacobian(f, argnums=0, *, has_aux=False, holomorphic=False,
                    _who="sparse_jacobian"):
    """The Jacobian of f as a ``scipy.sparse.csr_matrix``: the sparsity pattern is read off
    the graph, columns (or rows) are grouped by greedy colouring, and one forward (or
    reverse) sweep per group computes it.  Rows are f's output elements and columns the
    differentiated input elements, each flattened in pytree and C order.  The matrix
    stores the structural pattern (an entry that happens to be zero stays stored).
    With ``holomorphic=True``, of a holomorphic f of complex arguments with complex
    results: a complex matrix of the derivatives ∂f_i/∂z_j, as `wg.jacfwd` gives them.
    With ``has_aux=True``, f returns ``(output, aux)`` and the new function ``(matrix,
    aux)``, as `wg.jacfwd`.  Needs SciPy (``pip install 'wengert[sparse]'``).

    Example (the Broyden tridiagonal function: 3 sweeps whatever n is):
        >>> import wengert as wg
        >>> def broyden(x):
        ...     n = len(x)
        ...     return [(3 - 2 * x[i]) * x[i] - (x[i - 1] if i else 0)
        ...             - 2 * (x[i + 1] if i < n - 1 else 0) + 1 for i in range(n)]
        >>> J = wg.sparse_jacobian(broyden)([0.5] * 6)
        >>> J.shape, J.nnz
        ((6, 6), 16)
        >>> J.toarray()[1]
        array([-1.,  1., -2.,  0.,  0.,  0.])
        >>> Jz = wg.sparse_jacobian(broyden, holomorphic=True)([0.5j] * 6)
        >>> Jz.toarray()[1]                         # ∂f_1/∂z_1 = 3 - 4z_1
        array([-1.+0.j,  3.-2.j, -2.+0.j,  0.+0.j,  0.+0.j,  0.+0.j])
        >>> J, r = wg.sparse_jacobian(lambda x: (broyden(x), sum(broyden(x))), has_aux=True)(
        ...     [0.5] * 6)
        >>> J.nnz, r
        (16, 4.5)
    """
    sp = _scipy_sparse()

    @_recorded(f, argnums, _who, holomorphic, has_aux)
    def sparse_f(call, out_nodes, out_tree, single):
        if call.symbolic:
            raise NotImplementedError(
                f"{_who} returns a SciPy matrix of numbers; inside another "
                "transformation use wg.jacobian(f, mode='sparse')")
        I, J, V = jacobian_coordinates(call.graph, call.inputs, out_nodes, "sparse")
        shape = (sum(o.size for o in out_nodes), sum(x.size for x in call.inputs))
        # in the dtype jacfwd's blocks have (float32 code, a float32 matrix), where the
        # coordinates are float64 or complex128
        floats = [n.dtype for n in (*out_nodes, *call.inputs) if n.dtype.kind in "fc"]
        dtype = np.result_type(*floats) if floats else V.dtype
        return sp.csr_matrix((V.astype(dtype, copy=False), (I, J)), shape=shape)

    return sparse_f


def sparse_hessian(f, argnums=0, *, has_aux=False, holomorphic=False):
    """The Hessian of a scalar function as a ``scipy.sparse.csr_matrix``: the sparse
    Jacobian of its gradient, so each colour costs one forward sweep over the gradient's
    graph (a Hessian-vector product).  With ``holomorphic=True``, of a holomorphic f of
    complex arguments with a complex result: the second complex derivatives
    ∂²f/∂z_i∂z_j, as `wg.hessian(f, holomorphic=True)` gives them.  With
    ``has_aux=True``, f returns ``(value, aux)`` and the new function ``(matrix, aux)``, as
    `wg.hessian`.  Needs SciPy.

    Example (extended Rosenbrock: a block-diagonal Hessian, 2 sweeps whatever n is):
        >>> import wengert as wg
        >>> def rosenbrock(x):
        ...     return sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2
        ...                for i in range(0, len(x), 2))
        >>> H = wg.sparse_hessian(rosenbrock)([1.0] * 4)
        >>> H.toarray()
        array([[ 802., -400.,    0.,    0.],
               [-400.,  200.,    0.,    0.],
               [   0.,    0.,  802., -400.],
               [   0.,    0., -400.,  200.]])
        >>> H = wg.sparse_hessian(rosenbrock, holomorphic=True)([1j] * 4)
        >>> H.toarray()[:2, :2]                     # [[1200z₀² - 400z₁ + 2, -400z₀], ...]
        array([[-1198.-400.j,     0.-400.j],
               [    0.-400.j,   200.  +0.j]])
        >>> H, value = wg.sparse_hessian(lambda x: (rosenbrock(x),) * 2, has_aux=True)(
        ...     [1.0] * 4)
        >>> H.shape, value
        ((4, 4), 0.0)
    """
    from .api import value_and_grad
    # (value_and_grad rather than grad, so that errors name sparse_hessian)
    value_and_gradient = value_and_grad(f, argnums, has_aux, holomorphic=holomorphic,
                                        _who="sparse_hessian")

    @functools.wraps(f)
    def gradient(*args, **kwargs):
        value, g = value_and_gradient(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return sparse_jacobian(gradient, argnums, has_aux=has_aux, holomorphic=holomorphic,
                           _who="sparse_hessian")


# --------------------------------------------------------------------------------------
# the Jacobian as a graph, and what it costs
# --------------------------------------------------------------------------------------
def jacobian_graph(f, *args, argnums=0, mode="auto", abstract=True, holomorphic=False):
    """The Jacobian of f at arguments like `args`, as a `Graph` whose outputs are its
    entries (traced with abstract values unless ``abstract=False``): the derivative code
    a back-end emits, counts (`count_ops`) or evaluates (call the graph).

    `f` may also be a `Graph` (with inputs and outputs, as `wg.trace` makes): then the
    result is the dense Jacobian of all its outputs with respect to all its inputs, a
    tuple of rows; the given graph is not changed.  ``holomorphic=True``: the complex
    derivatives of a holomorphic f of complex arguments, as in `jacobian`.

    `mode` is as in `jacobian`: ``"auto"`` (the default) eliminates on scalar code and
    sweeps array code, ``"eliminate"`` takes scalar code only.

    Example:
        >>> import wengert as wg
        >>> g = wg.jacobian_graph(lambda x, y: x * wg.math.sin(y), 2.0, 3.0, argnums=(0, 1))
        >>> print(g)
        graph(x: f64[], y: f64[]):
          %2: f64[] = sin(y)
          %3: f64[] = cos(y)
          %4: f64[] = mul(x, %3)
          return %2, %4
        >>> g(2.0, 0.0)
        (0.0, 2.0)
        >>> import numpy as np, wengert.numpy as wnp
        >>> jg = wg.jacobian_graph(wnp.sin, np.zeros(2))      # array code: by sweeps
        >>> jg(np.array([0.0, np.pi])).round(12) + 0.0
        array([[ 1.,  0.],
               [ 0., -1.]])
    """
    _check_mode(mode, "jacobian_graph")
    if not isinstance(f, Graph):
        return trace(jacobian(f, argnums, mode, holomorphic=holomorphic), *args,
                     abstract=abstract)
    g = f.inline_copies()
    _check_graph_dtypes(g.inputs, g.outputs, "jacobian_graph", holomorphic)
    if _has_arrays(g, g.inputs):
        return trace(jacobian(_graph_function(g), tuple(range(len(g.inputs))), mode,
                              holomorphic=holomorphic), *_examples(g))
    I, J, V = jacobian_coordinates(g, g.inputs, g.outputs, mode, symbolic=True)
    m, n = len(g.outputs), len(g.inputs)
    entry = {(i, j): v for i, j, v in zip(I, J, V)}
    zero = 0j if holomorphic else 0.0
    g.outputs = [g.lift(entry.get((i, j), zero)) for i in range(m) for j in range(n)]
    g.out_tree = flatten(tuple(tuple(range(n)) for _ in range(m)))[1]
    return g


def jacobian_costs(f, *args, argnums=0, modes=None, abstract=True, holomorphic=False):
    """Operations of the Jacobian code by each method, side by side: for each mode, the
    `count_ops` of the Jacobian's entries built as graph nodes (what straight-line code
    computing the Jacobian, with the function values it needs, would execute, the same
    count as that of its `jacobian_graph`), plus ``"total"``.  The key ``"function"``
    holds the count of f itself.  f is traced once (abstractly unless
    ``abstract=False``); `f` may also be a `Graph`, differentiated with respect to all its
    inputs.  ``holomorphic=True`` counts the complex derivatives of a holomorphic f of
    complex arguments (complex operations count as one each, as in `count_ops`).
    `modes` defaults to ``("fwd", "rev", "eliminate")``, and to ``("fwd", "rev")`` for
    array code, which elimination does not take (asking for it there is an error).

    Example (seed 003's function, g a chain of 20 operations):
        >>> import wengert as wg
        >>> def f(x1, x2):
        ...     v = x1 * x2
        ...     for _ in range(10):
        ...         v = wg.math.sin(v) * 0.9
        ...     return x1 * v, x2 * v
        >>> c = wg.jacobian_costs(f, 1.0, 2.0, argnums=(0, 1))
        >>> {m: c[m]["total"] for m in c}
        {'function': 23, 'fwd': 77, 'rev': 77, 'eliminate': 58}
        >>> print(wg.format_costs(c))
        mode         add   mul   div  call   pow   neg   cmp  total
        function       0    13     0    10     0     0     0     23
        fwd            2    55     0    20     0     0     0     77
        rev            2    55     0    20     0     0     0     77
        eliminate      1    37     0    20     0     0     0     58
    """
    for mode in modes or ():
        _check_mode(mode, "jacobian_costs")
    if isinstance(f, Graph):
        g = f.inline_copies()               # build in a copy: f stays as it was
        inputs = g.inputs
    else:
        _check_fun(f, "jacobian_costs")
        nums, _ = _check_argnums(argnums, "jacobian_costs")
        g = trace(f, *args, abstract=abstract)
        sizes = [tree.num_leaves for tree in g.in_tree.subtrees]
        starts = np.cumsum([0] + sizes)
        inputs = [g.inputs[k] for i in _resolve_argnums(nums, len(args), "jacobian_costs")
                  for k in range(starts[i], starts[i + 1])]
    _check_graph_dtypes(inputs, g.outputs, "jacobian_costs", holomorphic)
    if modes is None:       # (elimination where "auto" takes it: scalars all the way)
        modes = ("fwd", "rev", "eliminate") if _scalar_graph(inputs, g.outputs) else \
            ("fwd", "rev")
    if _has_arrays(g, inputs):
        out = {"function": _with_total(count_ops(g, g.outputs))}
        position = {id(x): k for k, x in enumerate(g.inputs)}     # (== would record)
        wrt = tuple(position[id(x)] for x in inputs)
        for mode in modes:
            jg = trace(jacobian(_graph_function(g), wrt, mode, holomorphic=holomorphic),
                       *_examples(g))
            out[mode] = _with_total(count_ops(jg, jg.outputs))
        return out
    return graph_jacobian_costs(g, inputs, g.outputs, modes)


def _has_arrays(graph, inputs) -> bool:
    """Whether an input or output is an array: then there are no scalar coordinates to
    take the Jacobian by (elimination, `jacobian_coordinates`), and it is taken by sweeps
    of the graph as a function."""
    return any(n.shape != () for n in (*inputs, *graph.outputs))


def _graph_function(graph):
    """The graph as a function of its flat inputs, returning the tuple of its outputs."""
    return lambda *xs: tuple(graph.evaluate(list(xs)))


def _examples(graph):
    return [ShapeDtype(n.shape, n.dtype) for n in graph.inputs]


def _check_graph_dtypes(inputs, outputs, who, holomorphic):
    """`jacobian`'s rule for a traced graph: real inputs and outputs, or with
    ``holomorphic=True`` complex ones (a complex graph's Jacobian means the complex
    derivative only when f is holomorphic, which the user asserts by saying so)."""
    if not holomorphic:
        _real_jacobian(inputs, outputs, who, offers_holomorphic=True)
        return
    for kind, nodes in (("an argument", inputs), ("a result", outputs)):
        for n in nodes:
            if n.dtype.kind != "c":
                raise TypeError(f"{who}(holomorphic=True) needs complex arguments and "
                                f"results, but {kind} has dtype {n.dtype} (shape "
                                f"{n.shape}): make it complex (x + 0j), or leave out "
                                "holomorphic=True")


def graph_jacobian_costs(graph, inputs, outputs, modes=("fwd", "rev", "eliminate")):
    """`jacobian_costs` of `outputs` with respect to `inputs`, nodes of `graph` (other
    inputs count as parameters).  The derivative nodes built to count are removed again,
    so the graph is left as it was.

    Example:
        >>> import wengert as wg
        >>> g = wg.trace(lambda x, y: x * y + wg.math.sin(x), 1.0, 2.0)
        >>> n = len(g.nodes)
        >>> graph_jacobian_costs(g, g.inputs[:1], g.outputs)["rev"]["total"]   # y + cos x
        2
        >>> len(g.nodes) == n
        True
    """
    size = len(graph.nodes)
    try:
        out = {"function": _with_total(count_ops(graph, outputs))}
        for mode in modes:
            _check_mode(mode, "jacobian_costs")
            # Every mode builds into the one graph; each counts all the nodes its entries
            # need, whoever made them, so sharing does not change the counts.
            _, _, entries = jacobian_coordinates(graph, inputs, outputs, mode, symbolic=True)
            out[mode] = _with_total(count_ops(graph, [v for v in entries if type(v) is Node]))
        return out
    finally:
        graph.truncate(size)


def _with_total(counts):
    return {**counts, "total": total(counts)}


def format_costs(costs) -> str:
    """`jacobian_costs` as a text table, one row per mode.

    Example:
        >>> import wengert as wg
        >>> print(wg.format_costs(wg.jacobian_costs(lambda x: wg.math.sin(x), 1.0)))
        mode         add   mul   div  call   pow   neg   cmp  total
        function       0     0     0     1     0     0     0      1
        fwd            0     0     0     1     0     0     0      1
        rev            0     0     0     1     0     0     0      1
        eliminate      0     0     0     1     0     0     0      1
        >>> wg.format_costs({})
        Traceback (most recent call last):
            ...
        ValueError: format_costs: no costs to format (give it what jacobian_costs returns)
    """
    if not costs:
        # (the columns come from the first row: without one, next() raised a bare
        # StopIteration, which says nothing and ends a generator that calls this silently)
        raise ValueError("format_costs: no costs to format (give it what jacobian_costs "
                         "returns)")
    columns = list(next(iter(costs.values())))
    # (each column as wide as its widest count needs: a big graph's run to six digits)
    widths = [max(6 if c != columns[-1] else 7,
                  1 + max(len(str(counts[c])) for counts in costs.values()))
              for c in columns]
    lines = ["mode      " + "".join(f"{c:>{w}}" for c, w in zip(columns, widths))]
    for mode, counts in costs.items():
        lines.append(f"{mode:<10}" + "".join(f"{counts[c]:>{w}}"
                                             for c, w in zip(columns, widths)))
    return "\n".join(lines)
