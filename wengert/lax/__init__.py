"""JAX's ``jax.lax`` on wengert's graph, so that code written with it ports by its imports
(``import wengert as jax`` makes ``jax.lax.cond(...)`` this module's).

What it holds, by kind:

* **control flow**: `cond`, `switch`, `while_loop`, `fori_loop`, `scan`, `map`,
  `associative_scan`.  Where the predicate or index has a value (an eager `grad`, `jacfwd`,
  `hessian`), only the branch taken runs, as a Python ``if`` would.  Traced without values
  (`wg.compile`, `wg.vmap`) every branch is traced and the results are selected, which is
  what ``jax.lax.cond`` does under ``vmap``: the derivative flows through the branch taken.
  `while_loop` runs eagerly only: its number of steps is not known before it runs (JAX
  cannot reverse-differentiate it at all; here it is a Python loop, differentiable).
* **dynamic slicing**: `dynamic_slice`, `dynamic_update_slice` and their ``_in_dim`` and
  ``index`` forms, with JAX's index rules (a negative start counts from the end, and a
  start is clamped so that the slice fits).  A start traced without a value (a loop's
  counter) becomes a gather (or a masked select for an update).
* **gather and scatter** with XLA's dimension numbers: `gather`, `scatter`,
  `scatter_add`, ``scatter_sub``/``mul``/``min``/``max``, `scatter_apply`, `index_take`,
  with JAX's handling of windows that do not fit (`GatherScatterMode`: by default a
  gather clips and a scatter drops).  Each is one gather from the flattened operand, or
  one index update of it, at positions computed in NumPy where the indices have values
  and on the graph where they have none; the derivatives are those rules'.
* **windows and reductions**: `reduce_window` (max, sum, min and product pooling with
  padding and dilations) and `reduce`, for the monoids `add`, `mul`, `max`, `min`.
* **elementwise functions and structure**: ``lax.exp``, ``lax.logistic``, ``lax.rsqrt``,
  ``lax.integer_pow``, ``lax.clamp``, ``lax.dot_general``, ``lax.reduce_sum``,
  ``lax.conv_general_dilated`` (1-D and 2-D, any layout), ``lax.conv_transpose`` and the
  rest of their kind, written with `wengert.numpy`, so every derivative rule is that
  function's.  ``precision=`` is accepted (a `Precision`) and ignored.

* **solves with implicit derivatives**: `custom_root` and `custom_linear_solve`, whose
  solvers run on numbers and whose derivatives are the implicit function theorem's
  (`wengert.custom_root`'s `Solution` node, whose arguments are the traced values f or
  matvec closes over, found by `wengert.closure_convert`).

* **collectives** over the examples of ``wg.vmap(f, axis_name=...)`` or ``wg.pmap``, or
  over the mesh axes of ``shard_map`` (`wengert.sharding`): `psum`, `pmean`, `pmax`,
  `pmin`, `all_gather`, `psum_scatter`, `ppermute`, `axis_index`, `axis_size`,
  `all_to_all`, `pswapaxes`, `pshuffle`, `pbroadcast`, `pcast` (`wengert.collectives`).

* **Fourier transforms and linear algebra**: `fft` with `FftType` (`wengert.lax._fft`,
  over `wengert.numpy.fft`), and the module `linalg`, JAX's ``jax.lax.linalg``
  (`wengert.lax.linalg`: cholesky, eigh, qr, svd, lu, triangular_solve, ...).

* **the rest of JAX's names**, in the last section: the bits of integers and floats
  (`clz`, `population_count`, `mulhi`, `bitcast_convert_type`, `reduce_precision`),
  grouped products (`ragged_dot`, `ragged_dot_general`), `approx_max_k` and
  `approx_min_k`, unshared convolutions (`conv_general_dilated_local`) and the shape
  helpers of convolutions, the gamma gradients (`igamma_grad_a`, `random_gamma_grad`) and
  the bit generators (`rng_bit_generator`, `rng_uniform`).

``with_sharding_constraint`` (`wengert.sharding`) checks its shardings and returns its
argument: on one device nothing moves.  A name of ``jax.lax`` that is not here
(``ragged_all_to_all``, the primitives ``*_p``) raises an AttributeError that says so.

Example:
    >>> import wengert as wg
    >>> from wengert import lax
    >>> def f(x):
    ...     return lax.cond(x > 0, lambda x: x ** 2, lambda x: -x, x)
    >>> wg.grad(f)(3.0), wg.grad(f)(-3.0)
    (6.0, -1.0)
    >>> wg.compile(wg.grad(f), 1.0)(-2.0)        # traced without values: both, selected
    -1.0
"""
from __future__ import annotations

import builtins as _builtins
import enum as _enum
import math as _math
import operator as _operator
from typing import NamedTuple as _NamedTuple

import numpy as _np

from .. import numpy as _wnp
from ..graph.active import current_graph as _current_graph
from ..graph.node import Node
from ..collectives import (all_gather, all_to_all, axis_index, axis_size, pbroadcast, pcast,
                          pmax, pmean, pmin, ppermute, pshuffle, psum, psum_scatter, pswapaxes)
from ..sharding import with_sharding_constraint
from ..loops import fori_loop, scan
from ..primitives import array as _A
from ..primitives.registry import is_weak, known_value as _value
from ..primitives import scalar as _S
from ..primitives.scalar import select
from ..tree import flatten as _flatten, tree_map as _tree_map, unflatten as _unflatten
from . import linalg  # (jax.lax.linalg)
from ._fft import FftType, fft

__all__ = [
    # control flow
    "cond", "switch", "while_loop", "fori_loop", "scan", "map", "associative_scan",
    "select", "select_n", "stop_gradient",
    # solves with implicit derivatives
    "custom_root", "custom_linear_solve",
    # dynamic slicing
    "dynamic_slice", "dynamic_slice_in_dim", "dynamic_index_in_dim", "dynamic_update_slice",
    "dynamic_update_slice_in_dim", "dynamic_update_index_in_dim",
    # gather and scatter
    "gather", "GatherDimensionNumbers", "GatherScatterMode", "index_take", "scatter",
    "scatter_add", "scatter_sub", "scatter_mul", "scatter_min", "scatter_max",
    "scatter_apply", "ScatterDimensionNumbers",
    # static slicing and structure
    "slice", "slice_in_dim", "index_in_dim", "reshape", "transpose", "squeeze", "expand_dims",
    "broadcast", "broadcast_in_dim", "concatenate", "pad", "rev", "collapse", "split",
    "full", "full_like", "iota", "broadcasted_iota", "convert_element_type",
    "broadcast_shapes", "broadcast_to_rank", "stack", "unstack", "tile", "empty",
    "optimization_barrier",
    # reductions, scans, sorting
    "reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and", "reduce_or",
    "reduce_xor", "reduce", "reduce_window", "reduce_window_shape_tuple", "padtype_to_pads",
    "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp",
    "sort", "sort_key_val", "top_k",
    # products
    "dot", "dot_general", "batch_matmul", "conv", "conv_general_dilated",
    "conv_with_general_padding", "conv_transpose", "conv_general_dilated_patches",
    "conv_dimension_numbers", "ConvDimensionNumbers", "DotDimensionNumbers", "Precision",
    # elementwise
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "cbrt",
    "ceil", "clamp", "conj", "cos", "cosh", "digamma", "div", "eq", "erf", "erf_inv", "erfc",
    "exp", "exp2", "expm1", "floor", "ge", "gt", "igamma", "igammac", "imag", "integer_pow",
    "is_finite", "le", "lgamma", "log", "log1p", "logistic", "lt", "max", "min", "mul", "ne",
    "neg", "nextafter", "polygamma", "pow", "real", "reciprocal", "rem", "round", "rsqrt",
    "sign", "sin", "sinh", "sqrt", "square", "sub", "tan", "tanh", "zeta",
    "bessel_i0e", "bessel_i1e", "betainc", "complex", "RoundingMethod",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    "shift_left", "shift_right_arithmetic", "shift_right_logical",
    # collectives, inside wg.vmap or wg.pmap with axis_name (wengert.collectives)
    "psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute", "axis_index",
    "axis_size", "all_to_all", "pswapaxes", "pshuffle", "pbroadcast", "pcast",
    # shardings, on one device: the value itself (wengert.sharding)
    "with_sharding_constraint",
    # Fourier transforms, and the module linalg (jax.lax.linalg)
    "fft", "FftType", "linalg",
]


# ---- control flow ------------------------------------------------------------------------------
def cond(pred, true_fun, false_fun, *operands):
    """``true_fun(*operands)`` if `pred` else ``false_fun(*operands)``, as ``jax.lax.cond``.

    `pred` is a scalar (bool or number).  Where its value is known, only the branch taken
    runs; traced without one (`wg.compile`, `wg.vmap`), both run and their results (of
    one structure and shapes) are selected leaf by leaf with `select`.

    Example:
        >>> import wengert as wg
        >>> relu = lambda x: cond(x > 0, lambda x: x, lambda x: 0.0 * x, x)
        >>> wg.grad(relu)(2.0), wg.vmap(relu)(__import__("numpy").array([-1.0, 2.0])).tolist()
        (1.0, [-0.0, 2.0])
    """
    _check_scalar(pred, "cond", "pred")
    known = _value(pred)
    if known is not None:
        return true_fun(*operands) if bool(known) else false_fun(*operands)
    return _selected(pred, true_fun(*operands), false_fun(*operands), "cond", "true_fun",
                     "false_fun")


def switch(index, branches, *operands):
    """``branches[index](*operands)``, as ``jax.lax.switch``: `index` (a scalar integer) is
    clamped to ``[0, len(branches) - 1]``.  Traced without a value, every branch runs and
    the results are selected, as in `cond`.

    Example:
        >>> import wengert as wg
        >>> f = lambda i, x: switch(i, [lambda x: x, lambda x: x ** 2, lambda x: x ** 3], x)
        >>> wg.grad(f, argnums=1)(1, 3.0), wg.grad(f, argnums=1)(7, 3.0)
        (6.0, 27.0)
    """
    branches = list(branches)
    if not branches:
        raise ValueError("switch: branches is empty; it needs at least one function")
    _check_scalar(index, "switch", "index")
    last = len(branches) - 1
    known = _value(index)
    if known is not None:
        at = _operator.index(_np.asarray(known).item())
        return branches[_builtins.min(_builtins.max(at, 0), last)](*operands)
    results = [b(*operands) for b in branches]
    at = _wnp.clip(index, 0, last)
    out = results[0]
    for k in range(1, len(results)):
        out = _selected(at == k, results[k], out, "switch", f"branches[{k}]",
                        "branches[0]" if k == 1 else "the branches before it")
    return out


def _selected(pred, on_true, on_false, who, true_name, false_name):
    """`on_true` where pred holds, else `on_false`, leaf by leaf, for a pred traced without
    a value: the two must have one structure and shapes, as JAX requires."""
    (a, da), (b, db) = _flatten(on_true), _flatten(on_false)
    if da != db:
        raise TypeError(f"{who}: {true_name} and {false_name} return different structures, "
                        f"{da} and {db}; traced without a value, both run and one result "
                        "is selected, so they must match")
    out = []
    for k, (x, y) in enumerate(zip(a, b)):
        sx, sy = _wnp.shape(x), _wnp.shape(y)
        if sx != sy:
            raise TypeError(f"{who}: {true_name} and {false_name} return shapes {sx} and "
                            f"{sy} (leaf {k}); traced without a value, both run and one "
                            "result is selected, so they must match")
        out.append(select(pred, x, y))
    return _unflatten(da, out)


def _check_scalar(x, who, name):
    shape = _wnp.shape(x)
    if shape != ():
        raise TypeError(f"{who}: {name} must be a scalar, got shape {shape}")


def stop_gradient(x):
    """x, as a constant for differentiation (its derivative is zero), as
    ``jax.lax.stop_gradient``: x an array or number, or a pytree of them (each leaf is
    stopped).

    Example:
        >>> import wengert as wg
        >>> def f(p):                        # d/da (stop(a) · a) · b = stop(a) · b
        ...     return stop_gradient(p)["a"] * p["a"] * p["b"]
        >>> wg.grad(f)({"a": 2.0, "b": 3.0})
        {'a': 6.0, 'b': 4.0}
    """
    return _tree_map(_S.stop_gradient, x)


def while_loop(cond_fun, body_fun, init_val):
    """``val = init_val; while cond_fun(val): val = body_fun(val)``, as ``jax.lax.while_loop``.

    Where ``cond_fun``'s result has a value (plain values, an eager `grad`, `jvp` or
    `hessian`) it runs as this Python loop, so it is differentiable in every mode (JAX's
    is not in reverse mode).  Traced without values (`wg.compile`, `wg.jit`, `wg.vmap`)
    cond_fun and body_fun are traced once each and the loop is one node of the graph
    (`wengert.loops.While`), run by one generated loop (a C ``while`` under
    ``wg.compile(..., backend="c")``); the carry follows `scan`'s rules (a Python int in
    it is a float).  There:

    * forward mode (`jvp`, `jacfwd`, to any order) is a while loop carrying tangents;
    * `vmap` runs until every example's cond_fun fails, each example's carry kept as it
      was once its own has (JAX's semantics): each gets the value of its own loop;
    * reverse mode (`grad`, `vjp`, `jacrev`) raises ValueError, as JAX does: the number
      of steps is not known when the graph is built.  Differentiate eagerly, write a
      fixed number of steps (`fori_loop`, `scan`), or give a solver's result its
      implicit derivative (`custom_root`).  (On values, inside an eager `grad`, the
      node's VJP is that of a scan of the steps it took.)

    Example:
        >>> import wengert as wg
        >>> def halve_until_small(x):        # x / 2**k for the first k that gets below 1
        ...     return while_loop(lambda v: v >= 1.0, lambda v: v / 2.0, x)
        >>> halve_until_small(10.0), wg.grad(halve_until_small)(10.0)
        (0.625, 0.0625)
        >>> import numpy as np
        >>> wg.jit(wg.vmap(halve_until_small))(np.array([10.0, 3.0, 0.5]))
        array([0.625, 0.75 , 0.5  ])
        >>> wg.jit(wg.vmap(wg.jacfwd(halve_until_small)))(np.array([10.0, 3.0, 0.5]))
        array([0.0625, 0.25  , 1.    ])
    """
    val = init_val
    while True:
        go = cond_fun(val)
        _check_scalar(go, "while_loop", "cond_fun's result")
        known = _value(go)
        if known is None:
            from ..loops import traced_while_loop
            return traced_while_loop(cond_fun, body_fun, val, go)
        if not bool(known):
            return val
        val = body_fun(val)


def map(f, xs, *, batch_size=None):  # noqa: A001  (jax.lax.map: shadows the builtin here)
    """``stack([f(x) for x in xs])`` over the leading axis of the pytree `xs`, as
    ``jax.lax.map``: a `scan` without a carry.  With `batch_size`, `f` is mapped with
    `wg.vmap` over batches of that many (the remainder in one batch of its own).

    Example:
        >>> import numpy as np
        >>> map(lambda row: row @ row, np.arange(6.0).reshape(3, 2)).tolist()
        [1.0, 13.0, 41.0]
    """
    if batch_size is None:
        return scan(lambda carry, x: (carry, f(x)), None, xs)[1]
    from ..vectorize import vmap
    batch_size = _operator.index(batch_size)
    leaves, tree = _flatten(xs)
    if not leaves:
        raise ValueError("map: xs has no arrays to map over")
    n = _wnp.shape(leaves[0])[0]
    whole, rest = divmod(n, batch_size)
    parts = []
    if whole:
        batched = _unflatten(tree, [_wnp.reshape(x[:whole * batch_size],
                                                 (whole, batch_size) + _wnp.shape(x)[1:])
                                    for x in leaves])
        ys = scan(lambda carry, x: (carry, vmap(f)(x)), None, batched)[1]
        parts.append(_tree_map(lambda y: _wnp.reshape(y, (whole * batch_size,)
                                                      + _wnp.shape(y)[2:]), ys))
    if rest:
        parts.append(vmap(f)(_unflatten(tree, [x[whole * batch_size:] for x in leaves])))
    if len(parts) == 1:
        return parts[0]
    return _tree_map(lambda a, b: _wnp.concatenate([a, b]), parts[0], parts[1])


def associative_scan(fn, elems, reverse=False, axis=0):
    """The inclusive scan of `elems` (a pytree of arrays) along `axis` with the associative
    ``fn(a, b)``, as ``jax.lax.associative_scan``: ``out[i] = fn(out[i-1], elems[i])``.
    It runs sequentially, as one `scan` (JAX's runs in log depth on accelerators; on a
    CPU one pass is the least work), so it is differentiable to any order.

    Example:
        >>> import numpy as np
        >>> associative_scan(lambda a, b: a * b, np.array([1.0, 2.0, 3.0, 4.0])).tolist()
        [1.0, 2.0, 6.0, 24.0]
    """
    leaves, tree = _flatten(elems)
    if not leaves:
        return elems
    moved = [_wnp.moveaxis(x, axis, 0) for x in leaves]
    if reverse:
        moved = [_wnp.flip(x, 0) for x in moved]
    first = _unflatten(tree, [x[0] for x in moved])

    def step(carry, x):
        out = fn(carry, x)
        return out, out
    _, rest = scan(step, first, _unflatten(tree, [x[1:] for x in moved]))
    outs = [_wnp.concatenate([_wnp.expand_dims(a, 0), b])
            for a, b in zip(_flatten(first)[0], _flatten(rest)[0])]
    if reverse:
        outs = [_wnp.flip(x, 0) for x in outs]
    return _unflatten(tree, [_wnp.moveaxis(x, 0, axis) for x in outs])


def select_n(which, *cases):
    """``cases[which]`` elementwise, as ``jax.lax.select_n``: `which` is boolean (two
    cases: False picks the first) or an integer array in ``range(len(cases))``.

    Example:
        >>> import numpy as np
        >>> select_n(np.array([0, 2, 1]), np.zeros(3), np.ones(3), np.full(3, 2.0)).tolist()
        [0.0, 2.0, 1.0]
    """
    if not cases:
        raise ValueError("select_n: it needs at least one case")
    out = cases[0]
    for k in range(1, len(cases)):
        out = select(which == k if k > 1 or _wnp.result_type(which) != _np.bool_
                     else which, cases[k], out)
    return out


# ---- solves with implicit derivatives ----------------------------------------------------------
class _Unknown:
    """The structure and shapes of a solve's unknown (a pytree of arrays), and the way
    between such a pytree and the flat float vector that wengert's `Solution` solves for.
    `who` and `what` (the argument the unknown is shaped like) name the errors."""

    def __init__(self, example, who, what):
        leaves, self.tree = _flatten(example)
        self.who, self.what = who, what
        if not leaves:
            raise TypeError(f"{who}: {what} holds no arrays")
        for x in leaves:
            if not (type(x) is Node or isinstance(x, (int, float, _np.number, _np.ndarray))
                    and _np.asarray(x).dtype.kind in "biuf"):
                raise TypeError(f"{who}: the leaves of {what} must be real numbers or arrays, "
                                f"got {x!r:.60}")
        self.shapes = [tuple(_wnp.shape(x)) for x in leaves]
        self.sizes = [_math.prod(s) for s in self.shapes]

    def check(self, tree, what):
        """`tree` itself, once it is found to have the unknown's structure and shapes."""
        leaves, found = _flatten(tree)
        if found != self.tree:
            raise TypeError(f"{self.who}: {what} must have the structure of {self.what}, "
                            f"{self.tree}, got {found}")
        shapes = [tuple(_wnp.shape(x)) for x in leaves]
        if shapes != self.shapes:
            raise ValueError(f"{self.who}: {what} must have the shapes of {self.what}, "
                             f"{self.shapes}, got {shapes}")
        return tree

    def flat(self, tree, what):
        """The leaves of `tree` (shaped like the unknown) as one float64 vector."""
        parts = [_wnp.ravel(x) for x in _flatten(self.check(tree, what))[0]]
        v = parts[0] if len(parts) == 1 else _wnp.concatenate(parts)
        return v if _wnp.result_type(v) == _np.float64 else _wnp.astype(v, _np.float64)

    def unflat(self, v):
        """The vector `v` as a pytree shaped like the unknown."""
        if len(self.shapes) == 1:
            return _unflatten(self.tree, [_wnp.reshape(v, self.shapes[0])])
        bounds = _np.cumsum([0] + self.sizes).tolist()
        return _unflatten(self.tree, [_wnp.reshape(v[a:b], s) for s, a, b
                                      in zip(self.shapes, bounds, bounds[1:])])


def _values(tree, who, what):
    """`tree` with each traced leaf replaced by its value.  What a solve returns is not
    differentiated (its derivatives are the implicit function theorem's), so a solve may
    compute with traced values it closes over (a factorisation of the matrix, say)."""
    def value(x):
        if type(x) is not Node:
            return x
        if x.value is None:
            raise ValueError(
                f"{who}: {what} computes with a traced value that it closes over, and that "
                "has no value here (wg.compile, wg.jit or wg.vmap trace without values, and "
                "the solve runs on numbers when the traced function is called); compute "
                "that value inside the solve, or take the solve out of the compiled function")
        return x.value
    return _tree_map(value, tree)


def _with_aux(found, has_aux, who, name):
    """(solution, aux) of what `name` returned: aux only with has_aux."""
    if not has_aux:
        return found, None
    if not (isinstance(found, (tuple, list)) and len(found) == 2):
        raise TypeError(f"{who}: with has_aux=True, {name} must return (solution, aux), got "
                        f"{found!r:.60}")
    return found[0], found[1]


def _solved(who, name, unknown, x0, params, condition, run, linear, has_aux):
    """The result of a traced solve: one `wengert.implicit.Solution` node for the flat
    unknown (its derivatives by the implicit function theorem), shaped like the unknown,
    and with has_aux the aux of the solve that made it."""
    from ..implicit import solution
    v, prim = solution(who, name, x0, tuple(params), lambda shape, tree: condition,
                       lambda shape, tree: run, linear)[:2]
    out = unknown.unflat(v)
    if not has_aux:
        return out
    if type(v) is Node and v.value is None:
        raise ValueError(f"{who}: with has_aux=True the solve runs where it is called, but "
                         "here it is traced without values (wg.compile, wg.jit or wg.vmap), "
                         "and its aux is not known until the traced function runs; call it "
                         "with has_aux=False there")
    return out, prim.result


def _linear(unknown, solve, who, name, has_aux=False):
    """A linear solve of JAX's kind, ``solve(g, y)`` on pytrees shaped like the unknown, as
    the function ``(matvec, b) -> y`` on flat vectors that `wengert.implicit` asks for.
    With has_aux, solve returns ``(y, aux)``, and a derivative's solve has no use for aux."""
    def flat_solve(matvec, b):
        def g(y):
            return unknown.unflat(matvec(unknown.flat(y, f"the argument of {name}'s g")))
        y = _with_aux(solve(g, unknown.unflat(b)), has_aux, who, name)[0]
        return unknown.flat(_values(y, who, name), f"the solution {name} returned")
    return flat_solve


def _untraced(start):
    """Whether a solve from `start` has nothing traced to differentiate: no graph is being
    built, so its function closes over no traced value, and `start` holds none."""
    return _current_graph() is None and not any(type(v) is Node for v in _flatten(start)[0])


def _solve_untraced(unknown, solve, f, start, has_aux, name, value_of, result):
    """`solve(f, start)`, nothing being traced: the answer itself, with f's values and
    the solution checked against the unknown's structure and shapes."""
    found, aux = _with_aux(solve(lambda y: unknown.check(f(y), value_of), start), has_aux,
                           unknown.who, name)
    unknown.check(found, result)
    return (found, aux) if has_aux else found


def _check_functions(who, **functions):
    for name, f in functions.items():
        if not callable(f):
            raise TypeError(f"{who}: {name} must be a function, got {f!r:.60}")


def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
    """A root x of ``f(x) = 0``, found by ``solve(f, initial_guess)``, and differentiable
    with respect to the traced values f closes over, as ``jax.lax.custom_root``.

    solve runs on numbers and is not differentiated (a loop of Newton steps, a library):
    the derivative comes from the implicit function theorem, ``ẋ = -J⁻¹ (∂f/∂θ θ̇)`` with
    J = ∂f/∂x at the root, and ``tangent_solve(g, y)`` does the solving with J: g is the
    linear map of f's derivative at the root, and it returns the z with ``g(z) = y``
    (``lambda g, y: y / g(1.0)`` for a scalar x; ``lambda g, y: jnp.linalg.solve(
    jax.jacobian(g)(y), y)`` for a small vector).  A reverse sweep hands tangent_solve
    the transposed map, g(z) = Jᵀ z, and so needs one that solves with the g it is given
    (JAX transposes tangent_solve instead, which also admits one that ignores g).
    initial_guess gets no derivative.  The solve is one `Solution` node of
    `wengert.custom_root` (which takes the parameters as arguments), the traced values f
    closes over made its arguments by `closure_convert`.

    solve and tangent_solve may compute with traced values they close over: they get
    those values, as numbers.  Traced without values (`wg.compile`, `wg.jit`, `wg.vmap`)
    the solves run only when the traced function is called, where such a value is not
    known, and it is refused (f, which is traced, may close over anything).

    Args:
        f: ``f(x)``, of x shaped like initial_guess (a pytree of arrays), returning that
            structure and those shapes.
        initial_guess: where solve starts.
        solve: ``solve(f, initial_guess)``, the root, shaped like initial_guess (with
            has_aux, ``(root, aux)``).
        tangent_solve: ``tangent_solve(g, y)``, the z with ``g(z) = y``.
        has_aux: whether solve returns ``(root, aux)``; aux is returned as it is, not
            differentiated (where traced without values, say under `wg.jit`, it is not
            known, and is refused).

    Returns:
        The root (float64 arrays where anything is traced), or ``(root, aux)``.

    Raises TypeError or ValueError where f's value, the root or tangent_solve's solution
    (each checked where it is made) is not shaped like initial_guess.

    Example:
        >>> import wengert as jax, wengert.numpy as jnp
        >>> def newton(f, x):
        ...     for _ in range(30):
        ...         x = x - f(x) / jax.grad(f)(x)
        ...     return x
        >>> def cube_root(a):                   # x³ = a, so dx/da = 1 / (3 x²)
        ...     return jax.lax.custom_root(lambda x: x ** 3 - a, 1.0, newton,
        ...                                lambda g, y: y / g(1.0))
        >>> print(f"{float(cube_root(8.0)):.12f}", jax.grad(cube_root)(8.0), 1 / 12)
        2.000000000000 0.08333333333333333 0.08333333333333333
    """
    who = "lax.custom_root"
    _check_functions(who, f=f, solve=solve, tangent_solve=tangent_solve)
    x = _Unknown(initial_guess, who, "initial_guess")
    name = getattr(solve, "__name__", "solve")
    if _untraced(initial_guess):
        return _solve_untraced(x, solve, f, initial_guess, has_aux, name, "the value of f",
                               f"the root {name} returned")
    from ..implicit import _LinearSolve
    from ..jax_compat import closure_convert
    x0 = x.flat(initial_guess, "initial_guess")
    f_of, consts = closure_convert(f, x.unflat(x0))

    def condition(v, *consts):
        return x.flat(f_of(x.unflat(v), *consts), "the value of f")

    def run(v0, consts):
        found, aux = _with_aux(
            solve(lambda y: x.check(f_of(y, *consts), "the value of f"), x.unflat(v0)),
            has_aux, who, name)
        return x.flat(_values(found, who, name), f"the root {name} returned"), \
            _values(aux, who, name)
    linear = _LinearSolve(_linear(x, tangent_solve, who, "tangent_solve"), who=who)
    return _solved(who, name, x, x0, consts, condition, run, linear, has_aux)


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False,
                        has_aux=False):
    """The x with ``matvec(x) = b``, found by ``solve(matvec, b)``, and differentiable with
    respect to b and to the traced values matvec closes over, as
    ``jax.lax.custom_linear_solve``.

    solve runs on numbers and is not differentiated.  The derivatives are the implicit
    function theorem's for ``A x - b = 0``: ``ẋ = A⁻¹ (ḃ - Ȧ x)`` by `solve`, and
    ``b̄ = A⁻ᵀ x̄``, ``θ̄ = -(∂(A x)/∂θ)ᵀ b̄`` by ``transpose_solve(vecmat, x̄)``, vecmat
    the transposed map ``y -> Aᵀ y`` (found by reverse mode).  The solve is one
    `Solution` node of `wengert.custom_root` with the condition ``matvec(x) - b``, the
    traced values matvec closes over made its arguments by `closure_convert`.

    solve and transpose_solve may compute with traced values they close over (a
    factorisation of A, as in JAX's examples): they get those values, as numbers.
    Traced without values (`wg.compile`, `wg.jit`, `wg.vmap`) the solves run only when
    the traced function is called, where such a value is not known, and it is refused:
    there, solve from matvec and vecmat alone.

    Args:
        matvec: the linear map ``x -> A x``, of pytrees shaped like b.
        b: the right-hand side, a pytree of arrays.
        solve: ``solve(matvec, b)``, the x with ``matvec(x) = b`` (with has_aux,
            ``(x, aux)``).
        transpose_solve: ``transpose_solve(vecmat, c)``, the y with ``vecmat(y) = c``
            (with has_aux, ``(y, aux)``, as solve): needed by reverse mode (`grad`,
            `vjp`, `jacrev`), which raises a TypeError without it, unless `symmetric`.
        symmetric: whether A is symmetric, so that solve serves as transpose_solve.
        has_aux: whether solve returns ``(x, aux)``; aux is returned as it is, not
            differentiated (where traced without values, it is refused).

    Returns:
        x (float64 arrays where anything is traced), or ``(x, aux)``.

    Raises TypeError or ValueError where matvec's value or a solve's solution (each
    checked where it is made) is not shaped like b.

    Example:
        >>> import numpy as np, wengert as jax, wengert.numpy as jnp
        >>> def linear_solve(A, b):
        ...     return jax.lax.custom_linear_solve(
        ...         lambda x: A @ x, b, lambda mv, b: jnp.linalg.solve(A, b),
        ...         lambda vm, c: jnp.linalg.solve(A.T, c))
        >>> A, b = np.array([[2.0, 1.0], [1.0, 3.0]]), np.array([1.0, 2.0])
        >>> linear_solve(A, b).tolist()
        [0.2, 0.6]
        >>> jax.grad(lambda b: linear_solve(A, b)[0])(b).tolist()     # row 0 of A⁻¹
        [0.6, -0.2]
    """
    who = "lax.custom_linear_solve"
    _check_functions(who, matvec=matvec, solve=solve)
    if transpose_solve is not None:
        _check_functions(who, transpose_solve=transpose_solve)
    rhs = _Unknown(b, who, "b")
    name = getattr(solve, "__name__", "solve")
    if _untraced(b):
        return _solve_untraced(rhs, solve, matvec, b, has_aux, name, "the value of matvec",
                               f"the solution {name} returned")
    from ..implicit import _LinearSolve
    from ..jax_compat import closure_convert
    b_flat = rhs.flat(b, "b")
    matvec_of, consts = closure_convert(matvec, rhs.unflat(b_flat))

    def condition(v, b_flat, *consts):
        return rhs.flat(matvec_of(rhs.unflat(v), *consts), "the value of matvec") - b_flat

    def run(v0, leaves):
        b_flat, consts = leaves[0], leaves[1:]
        found, aux = _with_aux(
            solve(lambda v: rhs.check(matvec_of(v, *consts), "the value of matvec"),
                  rhs.unflat(b_flat)), has_aux, who, name)
        return rhs.flat(_values(found, who, name), f"the solution {name} returned"), \
            _values(aux, who, name)
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    if transpose_solve is None:
        transposed = dict(no_transpose=(
            f"{who}: reverse mode (grad, vjp, jacrev) solves with the transpose of matvec, "
            "which needs transpose_solve= (a solve of vecmat(y) = c), or symmetric=True if "
            "matvec is symmetric; forward mode (jvp, jacfwd) needs only solve"))
    else:
        transposed = dict(transpose=_linear(rhs, transpose_solve, who, "transpose_solve",
                                            has_aux))
    linear = _LinearSolve(_linear(rhs, solve, who, name, has_aux), who=who, **transposed)
    return _solved(who, name, rhs, _np.zeros(b_flat.shape[0]), (b_flat, *consts),
                   condition, run, linear, has_aux)


# ---- dynamic slicing ---------------------------------------------------------------------------
def _starts(operand, start_indices, sizes, who):
    """Each axis' start, as JAX places it: a negative one counts from the end, and it is
    clamped so that ``sizes`` elements fit.  Plain ints where the starts have values,
    traced integers where they do not."""
    shape = _wnp.shape(operand)
    start_indices = list(start_indices)
    if len(start_indices) != len(shape) or len(sizes) != len(shape):
        raise TypeError(f"{who}: operand of shape {shape} takes {len(shape)} start indices "
                        f"and sizes, got {len(start_indices)} and {len(sizes)}")
    out = []
    for s, n, k in zip(start_indices, shape, sizes):
        if not 0 <= k <= n:
            raise TypeError(f"{who}: a slice of size {k} does not fit in an axis of {n} "
                            f"(operand shape {shape}, sizes {tuple(sizes)})")
        known = _value(s)
        if known is not None:
            i = _operator.index(_np.asarray(known).item())
            out.append(_builtins.min(_builtins.max(i + n if i < 0 else i, 0), n - k))
        else:
            if _wnp.result_type(s).kind not in "iu":
                hint = ("; wg.compile takes a Python int argument as a weak float (see "
                        "docs/compile.md): pass it as a NumPy integer (numpy.int64(i)) or "
                        "mark it static") if is_weak(s) else ""
                raise TypeError(f"{who}: start indices must be integers, got "
                                f"{_wnp.result_type(s)}{hint}")
            out.append(_wnp.clip(select(s < 0, s + n, s), 0, n - k))
    return out


def dynamic_slice(operand, start_indices, slice_sizes):
    """``operand[s0:s0+k0, s1:s1+k1, ...]`` with starts that may be traced (a loop's
    counter), as ``jax.lax.dynamic_slice``; starts are placed as JAX places them (negative
    from the end, clamped to fit).

    Example:
        >>> import numpy as np, wengert as wg
        >>> x = np.arange(10.0)
        >>> dynamic_slice(x, (8,), (3,)).tolist()          # clamped: starts at 7
        [7.0, 8.0, 9.0]
        >>> wg.fori_loop(0, 3, lambda i, s: s + dynamic_slice(x, (2 * i,), (2,)), np.zeros(2))
        array([6., 9.])
    """
    sizes = tuple(_operator.index(k) for k in slice_sizes)
    starts = _starts(operand, start_indices, sizes, "dynamic_slice")
    index = tuple(_np.s_[s:s + k] if type(s) is int else _np.s_[:]
                  for s, k in zip(starts, sizes))
    out = operand[index] if index else operand
    for axis, (s, k) in enumerate(zip(starts, sizes)):
        if type(s) is not int:            # (traced: a gather of the k from s on)
            out = _wnp.take(out, s + _np.arange(k), axis=axis)
    return out


def dynamic_update_slice(operand, update, start_indices):
    """`operand` with the block at `start_indices` replaced by `update`, as
    ``jax.lax.dynamic_update_slice`` (starts placed as JAX does); differentiable in both.
    With traced starts it is a select of `update` gathered into place.

    Example:
        >>> import numpy as np
        >>> dynamic_update_slice(np.zeros(5), np.ones(2), (4,)).tolist()    # clamped to 3
        [0.0, 0.0, 0.0, 1.0, 1.0]
    """
    shape = _wnp.shape(operand)
    sizes = _wnp.shape(update)
    if len(sizes) != len(shape):
        raise TypeError(f"dynamic_update_slice: update of shape {sizes} and operand of shape "
                        f"{shape} must have the same number of axes")
    starts = _starts(operand, start_indices, sizes, "dynamic_update_slice")
    update = _wnp.astype(update, _wnp.result_type(operand)) \
        if _wnp.result_type(update) != _wnp.result_type(operand) else update
    if all(type(s) is int for s in starts):
        return _wnp.at(operand)[tuple(_np.s_[s:s + k] for s, k in zip(starts, sizes))].set(
            update)
    # Traced starts: each position of operand takes update's element at (position - start)
    # where that lies in the block, gathered along each axis, and keeps its own elsewhere.
    inside = True
    placed = update
    for axis, (s, n, k) in enumerate(zip(starts, shape, sizes)):
        pos = _np.arange(n)
        offset = pos - s
        placed = _wnp.take(placed, _wnp.clip(offset, 0, _builtins.max(k - 1, 0)), axis=axis)
        here = (offset >= 0) & (offset < k)
        inside = inside & _wnp.reshape(here, (n,) + (1,) * (len(shape) - axis - 1))
    return _wnp.where(inside, placed, operand)


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0):
    """`dynamic_slice` along one axis.

    Example:
        >>> import numpy as np
        >>> dynamic_slice_in_dim(np.arange(10.0), -3, 2).tolist()     # from the end
        [7.0, 8.0]
    """
    shape = _wnp.shape(operand)
    axis = _axis(axis, len(shape), "dynamic_slice_in_dim")
    starts = [0] * len(shape)
    starts[axis] = start_index
    sizes = list(shape)
    sizes[axis] = slice_size
    return dynamic_slice(operand, starts, sizes)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True):
    """The slice at `index` along `axis` (kept as an axis of 1 unless ``keepdims=False``).

    Example:
        >>> import numpy as np
        >>> dynamic_index_in_dim(np.arange(6.0).reshape(2, 3), 1, axis=1, keepdims=False)
        array([1., 4.])
    """
    out = dynamic_slice_in_dim(operand, index, 1, axis)
    return out if keepdims else _wnp.squeeze(out, _axis(axis, _wnp.ndim(operand), "index"))


def dynamic_update_slice_in_dim(operand, update, start_index, axis):
    """`dynamic_update_slice` along one axis.

    Example:
        >>> import numpy as np
        >>> dynamic_update_slice_in_dim(np.zeros((2, 3)), np.ones((2, 1)), 2, 1).tolist()
        [[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]]
    """
    n = _wnp.ndim(operand)
    axis = _axis(axis, n, "dynamic_update_slice_in_dim")
    starts = [0] * n
    starts[axis] = start_index
    return dynamic_update_slice(operand, update, starts)


def dynamic_update_index_in_dim(operand, update, index, axis):
    """The slice at `index` along `axis` replaced by `update` (with or without that axis).

    Example:
        >>> import numpy as np
        >>> dynamic_update_index_in_dim(np.zeros((2, 2)), np.ones(2), 0, 0).tolist()
        [[1.0, 1.0], [0.0, 0.0]]
    """
    n = _wnp.ndim(operand)
    axis = _axis(axis, n, "dynamic_update_index_in_dim")
    if _wnp.ndim(update) == n - 1:
        update = _wnp.expand_dims(update, axis)
    return dynamic_update_slice_in_dim(operand, update, index, axis)


def _axis(axis, ndim, who):
    axis = _operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{who}: axis {axis} is out of range for {ndim} axes")
    return axis % ndim


# ---- gather and scatter with dimension numbers -------------------------------------------------
class GatherDimensionNumbers(_NamedTuple):
    """How the axes of `gather`'s operand, start indices and result relate, as
    ``jax.lax.GatherDimensionNumbers`` (XLA's, with the index vector always the last axis
    of the start indices).

    * offset_dims: the result's axes that run over a slice (increasing);
    * collapsed_slice_dims: operand axes of slice size 1 that the result drops;
    * start_index_map: the operand axis each entry of an index vector starts;
    * operand_batching_dims, start_indices_batching_dims: operand axes (slice size 1) that
      run along these axes of the start indices, as a batch.

    Example:
        >>> dn = GatherDimensionNumbers((1,), (0,), (0,))    # rows of a matrix by index
        >>> dn.offset_dims, dn.collapsed_slice_dims, dn.operand_batching_dims
        ((1,), (0,), ())
    """
    offset_dims: tuple
    collapsed_slice_dims: tuple
    start_index_map: tuple
    operand_batching_dims: tuple = ()
    start_indices_batching_dims: tuple = ()


class ScatterDimensionNumbers(_NamedTuple):
    """How the axes of `scatter`'s operand, indices and updates relate, as
    ``jax.lax.ScatterDimensionNumbers`` (the mirror of `GatherDimensionNumbers`; the
    index vector is the last axis of the indices).

    * update_window_dims: the axes of the updates that run over a window (increasing);
    * inserted_window_dims: operand axes of window size 1 that the updates lack;
    * scatter_dims_to_operand_dims: the operand axis each entry of an index vector starts;
    * operand_batching_dims, scatter_indices_batching_dims: operand axes that run along
      these axes of the indices (and of the updates), as a batch.

    Example:
        >>> ScatterDimensionNumbers((), (0,), (0,)).inserted_window_dims
        (0,)
    """
    update_window_dims: tuple
    inserted_window_dims: tuple
    scatter_dims_to_operand_dims: tuple
    operand_batching_dims: tuple = ()
    scatter_indices_batching_dims: tuple = ()


class GatherScatterMode(_enum.Enum):
    """What `gather` and the scatters do with a window that does not fit in the operand,
    as ``jax.lax.GatherScatterMode``: ``CLIP`` moves its start so that it fits;
    ``FILL_OR_DROP`` gives a gathered window of ``fill_value`` and drops a scattered one;
    ``PROMISE_IN_BOUNDS`` promises it does not happen (what happens then is XLA's: a
    gather clips, a scatter drops).  The strings ``"clip"``, ``"fill"``, ``"drop"`` and
    ``"promise_in_bounds"`` name them too.

    Example:
        >>> GatherScatterMode.from_any("drop")
        <GatherScatterMode.FILL_OR_DROP: 2>
    """
    CLIP = 1
    FILL_OR_DROP = 2
    PROMISE_IN_BOUNDS = 3

    @staticmethod
    def from_any(s):
        """The mode `s` names (a mode, one of the strings, or None: ``FILL_OR_DROP``, as
        JAX's ``from_any``; `gather` and the scatters read their own ``mode=None``)."""
        if isinstance(s, GatherScatterMode):
            return s
        if s is None:
            return GatherScatterMode.FILL_OR_DROP
        named = {"clip": GatherScatterMode.CLIP, "fill": GatherScatterMode.FILL_OR_DROP,
                 "drop": GatherScatterMode.FILL_OR_DROP,
                 "promise_in_bounds": GatherScatterMode.PROMISE_IN_BOUNDS}
        if isinstance(s, str) and s in named:
            return named[s]
        raise ValueError(f"Unknown gather mode {s!r}: a GatherScatterMode or one of "
                         "'clip', 'fill', 'drop', 'promise_in_bounds'")


def _clips(mode, scatter):
    """Whether a window that does not fit is moved to fit (else filled or dropped).
    ``mode=None`` and PROMISE_IN_BOUNDS are XLA's own handling, which JAX's results show:
    a gather clips and a scatter drops."""
    if mode is None:
        return not scatter
    mode = GatherScatterMode.from_any(mode)
    if mode is GatherScatterMode.PROMISE_IN_BOUNDS:
        return not scatter
    return mode is GatherScatterMode.CLIP


def _dims(ds, who, name):
    try:
        return tuple(_operator.index(d) for d in ds)
    except TypeError:
        raise TypeError(f"{who}: {name} must be a sequence of integers, got {ds!r}") from None


def _check_axes(axes, n, who, name, increasing=True):
    if any(not 0 <= a < n for a in axes) or len(set(axes)) != len(axes) or \
            (increasing and list(axes) != sorted(axes)):
        raise ValueError(f"{who}: {name} {axes} must be distinct"
                         + (", increasing" if increasing else "")
                         + f" axes in range({n})")


def _index_array(indices, who, name):
    """The indices as an integer array: plain where they have a value, traced where not."""
    known = _value(indices)
    if known is not None:
        indices = _np.asarray(known)
    if _wnp.result_type(indices).kind not in "iu":
        raise TypeError(f"{who}: {name} must be integers, got {_wnp.result_type(indices)}")
    if _wnp.ndim(indices) == 0:
        raise TypeError(f"{who}: {name} must have at least one axis (the index vectors "
                        "are its last), got a scalar")
    return indices


def _window_places(shape, sizes, indices, index_map, operand_batching, indices_batching,
                   rank, batch_positions, window_positions, window_dims, clip):
    """The flat position in an operand of `shape` of every element of a gather's result
    (a scatter's updates), an integer array broadcasting to that result of `rank` axes, and
    where its window fits (None: everywhere).

    The result's axes `batch_positions` run along the indices' batch axes, its
    `window_positions` over the window's axes `window_dims` of the operand (of `sizes`).
    A window's start: the index vector's entries on the axes of `index_map`, the batch
    position on `operand_batching`, 0 elsewhere; a start that does not let the window fit
    is moved to fit (clipped), and where not `clip`, marked in the mask too."""
    batch_shape = _wnp.shape(indices)[:-1]
    indices = _wnp.astype(indices, _np.int64)       # (strides times an int32 can overflow)
    strides = [_math.prod(shape[d + 1:]) for d in range(len(shape))]
    flat = _np.zeros((1,) * rank, _np.int64)
    fits = None
    for k, d in enumerate(index_map):
        placed = [1] * rank
        for b, p in zip(batch_shape, batch_positions):
            placed[p] = b
        start = _wnp.reshape(indices[..., k], tuple(placed))
        last = shape[d] - sizes[d]
        if not clip:
            inside = (start >= 0) & (start <= last)
            fits = inside if fits is None else fits & inside
        flat = flat + _wnp.clip(start, 0, last) * strides[d]
    for d, b in zip(operand_batching, indices_batching):
        placed = [1] * rank
        placed[batch_positions[b]] = batch_shape[b]
        flat = flat + _np.arange(batch_shape[b]).reshape(placed) * strides[d]
    for p, d in zip(window_positions, window_dims):
        placed = [1] * rank
        placed[p] = sizes[d]
        flat = flat + _np.arange(sizes[d]).reshape(placed) * strides[d]
    return flat, fits


def _fill(fill_value, dtype):
    """JAX's default fill: NaN for inexact types, the most negative integer for signed ones,
    the largest for unsigned ones, True for booleans."""
    if fill_value is not None:
        return fill_value
    dtype = _np.dtype(dtype)
    if dtype.kind in "fc":
        return _np.nan
    if dtype.kind == "b":
        return True
    return _np.iinfo(dtype).min if dtype.kind == "i" else _np.iinfo(dtype).max


def gather(operand, start_indices, dimension_numbers, slice_sizes, *, unique_indices=False,
           indices_are_sorted=False, mode=None, fill_value=None):
    """Slices of `operand` at `start_indices`, arranged by `dimension_numbers` (a
    `GatherDimensionNumbers`), as ``jax.lax.gather`` (XLA's Gather).

    Each index vector (the last axis of `start_indices`) starts a slice of `slice_sizes`;
    the result's ``offset_dims`` run over the slice, its other axes over the indices'
    batch axes.  A slice that does not fit is handled by `mode` (see `GatherScatterMode`):
    by default it is clipped to fit, as JAX's is; ``"fill"`` gives `fill_value` (NaN for
    floats) instead.  Negative indices do not count from the end.

    It is one gather from the flattened operand at positions computed in NumPy, so it is
    differentiable in `operand` (the cotangent adds into the places read); start indices
    traced without values (`wg.compile`, `wg.vmap`) are computed on the graph instead.
    The hints `unique_indices` and `indices_are_sorted` change nothing.

    Example:
        >>> import numpy as np
        >>> x = np.arange(12.0).reshape(3, 4)
        >>> dn = GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
        ...                             start_index_map=(0,))
        >>> gather(x, np.array([[2], [0]]), dn, (1, 4)).tolist()        # rows 2 and 0
        [[8.0, 9.0, 10.0, 11.0], [0.0, 1.0, 2.0, 3.0]]
        >>> gather(x[0], np.array([[3]]), GatherDimensionNumbers((1,), (), (0,)), (2,),
        ...        mode="fill").tolist()           # x[0, 3:5] does not fit
        [[nan, nan]]
    """
    who = "gather"
    if not isinstance(dimension_numbers, GatherDimensionNumbers):
        raise TypeError(f"{who}: dimension_numbers must be a GatherDimensionNumbers, got "
                        f"{type(dimension_numbers).__name__}")
    shape = tuple(_wnp.shape(operand))
    indices = _index_array(start_indices, who, "start_indices")
    ishape = tuple(_wnp.shape(indices))
    offset, collapsed, index_map, obatch, ibatch = (
        _dims(d, who, name) for d, name in zip(dimension_numbers, dimension_numbers._fields))
    sizes = _dims(slice_sizes, who, "slice_sizes")
    n = len(shape)
    if len(sizes) != n or any(not 0 <= k <= m for k, m in zip(sizes, shape)):
        raise ValueError(f"{who}: slice_sizes {sizes} must give one size in 0..n for each "
                         f"axis of the operand of shape {shape}")
    _check_axes(collapsed, n, who, "collapsed_slice_dims")
    _check_axes(obatch, n, who, "operand_batching_dims")
    _check_axes(index_map, n, who, "start_index_map", increasing=False)
    _check_axes(ibatch, len(ishape) - 1, who, "start_indices_batching_dims", increasing=False)
    if set(collapsed) & set(obatch) or set(index_map) & set(obatch):
        raise ValueError(f"{who}: operand_batching_dims {obatch} must not be among "
                         f"collapsed_slice_dims {collapsed} or start_index_map {index_map}")
    if any(sizes[d] != 1 for d in collapsed + obatch):
        raise ValueError(f"{who}: slice_sizes {sizes} must be 1 on the collapsed and "
                         f"batching axes {collapsed + obatch}")
    if ishape[-1] != len(index_map):
        raise ValueError(f"{who}: start_indices of shape {ishape} hold index vectors of "
                         f"{ishape[-1]}, but start_index_map {index_map} names {len(index_map)}"
                         " axes")
    if len(obatch) != len(ibatch) or any(shape[d] != ishape[b] for d, b in zip(obatch, ibatch)):
        raise ValueError(f"{who}: operand_batching_dims {obatch} of the operand of shape "
                         f"{shape} must pair with start_indices_batching_dims {ibatch} of "
                         f"start_indices of shape {ishape}, axis by axis of one size")
    window = [d for d in range(n) if d not in collapsed and d not in obatch]
    rank = len(ishape) - 1 + len(offset)
    _check_axes(offset, rank, who, "offset_dims")
    if len(window) != len(offset):
        raise ValueError(f"{who}: offset_dims {offset} must name one result axis for each "
                         f"operand axis not collapsed or batched, {tuple(window)}")
    batch_positions = [p for p in range(rank) if p not in offset]
    clip = _clips(mode, scatter=False)
    flat, fits = _window_places(shape, sizes, indices, index_map, obatch, ibatch, rank,
                                batch_positions, offset, window, clip)
    out_shape = [0] * rank
    for p, b in zip(batch_positions, ishape[:-1]):
        out_shape[p] = b
    for p, d in zip(offset, window):
        out_shape[p] = sizes[d]
    flat = _wnp.broadcast_to(flat, tuple(out_shape))
    if _math.prod(shape) == 0:          # (nothing to read: only empty slices fit)
        return _wnp.zeros(tuple(out_shape), _wnp.result_type(operand))
    out = _wnp.take(_wnp.reshape(operand, (-1,)), flat)
    if fits is None or (type(fits) is not Node and fits.all()):
        return out
    dtype = _wnp.result_type(operand)
    return _wnp.where(fits, out, _np.asarray(_fill(fill_value, dtype), dtype))


def index_take(src, idxs, axes):
    """``src[i0, i1, ...]`` on `axes`, the k-th result the element (or the slice over the
    other axes) at ``idxs[0][k]``, ``idxs[1][k]``, ..., as ``jax.lax.index_take``: each
    index is taken modulo its axis' length (so -1 is the last).

    Example:
        >>> import numpy as np
        >>> x = np.arange(12.0).reshape(3, 4)
        >>> index_take(x, (np.array([2, -1]), np.array([1, 5])), (0, 1)).tolist()
        [9.0, 9.0]
    """
    axes = _dims(axes, "index_take", "axes")
    idxs = list(idxs)
    shape = tuple(_wnp.shape(src))
    _check_axes(axes, len(shape), "index_take", "axes", increasing=False)
    if len(idxs) != len(axes):
        raise ValueError(f"index_take: one index array for each of the axes {axes}, got "
                         f"{len(idxs)}")
    lengths = {tuple(_wnp.shape(i)) for i in idxs}
    if len(lengths) > 1 or any(len(s) != 1 for s in lengths):
        raise ValueError(f"index_take: idxs must be 1-D arrays of one length, got shapes "
                         f"{sorted(lengths)}")
    vectors = _wnp.stack([_wnp.mod(_index_array(i, "index_take", "idxs"), shape[a])
                          for i, a in zip(idxs, axes)], axis=-1) if idxs else \
        _np.zeros((0, 0), _np.int64)
    rest = [d for d in range(len(shape)) if d not in axes]
    dn = GatherDimensionNumbers(offset_dims=tuple(range(1, 1 + len(rest))),
                                collapsed_slice_dims=tuple(sorted(axes)), start_index_map=axes)
    return gather(src, vectors, dn, tuple(1 if d in axes else shape[d]
                                          for d in range(len(shape))))


def _scatter_sum(values, flat, n):
    """Zeros of length n with each of `values` added at its `flat` position (repeats add)."""
    if type(flat) is not Node:
        return _wnp.at(_wnp.zeros(n, _wnp.result_type(values)))[flat].add(values)
    out = _A.put_along_axis(values, flat, axis=0, shape=(n,))
    dtype = _wnp.result_type(values)
    return out if _wnp.result_type(out) == dtype else _wnp.astype(out, dtype)


def _segments(op, flat, keep, values, n):
    """For positions named by `flat` traced without values: (op folded over the values that
    name each position, in their order, where named; whether each position is named).
    The values are sorted by position (stably), folded within runs of one position by a
    segmented scan in log2 rounds (each value combined with the one 2^r before it if that
    names the same position), and the last of each run, now its fold, written."""
    m = _wnp.shape(flat)[0]
    key = flat if keep is None else _wnp.where(keep, flat, n)     # (n: a slot for dropped)
    order = _wnp.argsort(key, kind="stable")
    key, v = _wnp.take(key, order), _wnp.take(values, order)
    shift = 1
    while shift < m:
        same = key[shift:] == key[:-shift]
        v = _wnp.concatenate([v[:shift], _wnp.where(same, op(v[:-shift], v[shift:]),
                                                    v[shift:])])
        shift *= 2
    last = _wnp.concatenate([key[1:] != key[:-1], _np.ones(_builtins.min(m, 1), bool)])
    slot = _wnp.where(last, key, n)
    folded = _scatter_sum(_wnp.where(last, v, _np.zeros((), _wnp.result_type(v))), slot,
                          n + 1)[:n]
    named = _scatter_sum(_wnp.where(last & (key < n), 1.0, 0.0), slot, n + 1)[:n] > 0.5
    return folded, named


_COMBINE = {"add": _wnp.add, "mul": _wnp.multiply, "min": _wnp.minimum,
            "max": _wnp.maximum, "set": lambda a, b: b}


def _scatter(operand, indices, updates, dimension_numbers, mode, how, who, update_shape=None):
    """The scatters: `operand` with the windows of `updates` combined into it by `how`
    ("add", "mul", "min", "max", "set", or a function of one array: scatter_apply)."""
    if not isinstance(dimension_numbers, ScatterDimensionNumbers):
        raise TypeError(f"{who}: dimension_numbers must be a ScatterDimensionNumbers, got "
                        f"{type(dimension_numbers).__name__}")
    shape = tuple(_wnp.shape(operand))
    dtype = _wnp.result_type(operand)
    indices = _index_array(indices, who, "scatter_indices")
    ishape = tuple(_wnp.shape(indices))
    ushape = tuple(update_shape) if update_shape is not None else tuple(_wnp.shape(updates))
    window_pos, inserted, index_map, obatch, ibatch = (
        _dims(d, who, name) for d, name in zip(dimension_numbers, dimension_numbers._fields))
    n = len(shape)
    _check_axes(inserted, n, who, "inserted_window_dims")
    _check_axes(obatch, n, who, "operand_batching_dims")
    _check_axes(index_map, n, who, "scatter_dims_to_operand_dims", increasing=False)
    _check_axes(ibatch, len(ishape) - 1, who, "scatter_indices_batching_dims",
                increasing=False)
    _check_axes(window_pos, len(ushape), who, "update_window_dims")
    if set(inserted) & set(obatch) or set(index_map) & set(obatch):
        raise ValueError(f"{who}: operand_batching_dims {obatch} must not be among "
                         f"inserted_window_dims {inserted} or scatter_dims_to_operand_dims "
                         f"{index_map}")
    if ishape[-1] != len(index_map):
        raise ValueError(f"{who}: scatter_indices of shape {ishape} hold index vectors of "
                         f"{ishape[-1]}, but scatter_dims_to_operand_dims {index_map} names "
                         f"{len(index_map)} axes")
    if len(obatch) != len(ibatch) or any(shape[d] != ishape[b] for d, b in zip(obatch, ibatch)):
        raise ValueError(f"{who}: operand_batching_dims {obatch} of the operand of shape "
                         f"{shape} must pair with scatter_indices_batching_dims {ibatch} of "
                         f"scatter_indices of shape {ishape}, axis by axis of one size")
    window = [d for d in range(n) if d not in inserted and d not in obatch]
    scatter_pos = [p for p in range(len(ushape)) if p not in window_pos]
    if len(window) != len(window_pos) or \
            tuple(ushape[p] for p in scatter_pos) != ishape[:-1] or \
            any(ushape[p] > shape[d] for p, d in zip(window_pos, window)):
        raise ValueError(f"{who}: updates of shape {ushape} do not fit: with "
                         f"update_window_dims {window_pos}, their other axes must be the "
                         f"batch axes of scatter_indices, {ishape[:-1]}, and their windows "
                         f"no larger than the operand's axes {tuple(window)} of {shape}")
    sizes = [1] * n
    for p, d in zip(window_pos, window):
        sizes[d] = ushape[p]
    flat, fits = _window_places(shape, sizes, indices, index_map, obatch, ibatch,
                                len(ushape), scatter_pos, window_pos, window,
                                _clips(mode, scatter=True))
    flat = _wnp.reshape(_wnp.broadcast_to(flat, ushape), (-1,))
    keep = None if fits is None else _wnp.reshape(_wnp.broadcast_to(fits, ushape), (-1,))
    x = _wnp.reshape(operand, (-1,))
    size = _math.prod(shape)
    if callable(how):
        values = None
    else:
        values = _wnp.reshape(updates, (-1,))
        if _wnp.result_type(values) != dtype:
            values = _wnp.astype(values, dtype)
    if type(flat) is not Node:          # the positions are known: NumPy's index updates
        if keep is not None:
            flat = flat[keep]
            values = None if values is None else values[keep]
        out = _known_scatter(x, flat, values, how, dtype)
    else:
        out = _traced_scatter(x, flat, keep, values, how, dtype, size)
    return _wnp.reshape(out, shape)


def _known_scatter(x, flat, values, how, dtype):
    target = _wnp.at(x)[flat]
    if callable(how):
        return target.apply(how)
    if how in ("min", "max"):
        best = getattr(_wnp.at(_S.stop_gradient(x))[flat], how)(_S.stop_gradient(values))
        return _ties_shared(x, flat, None, values, best, dtype)
    return {"add": target.add, "mul": target.multiply, "set": target.set}[how](values)


def _traced_scatter(x, flat, keep, values, how, dtype, size):
    if callable(how):
        # each position takes how as often as it is named: a count traced without a value,
        # so as many rounds as there are updates, each applying how where it is still due
        ones = _np.ones(_wnp.shape(flat), _np.float64)
        times = _scatter_sum(ones if keep is None else _wnp.where(keep, ones, 0.0),
                             _wnp.where(keep, flat, 0) if keep is not None else flat, size)
        for r in range(_wnp.shape(flat)[0]):
            x = _wnp.where(times > r + 0.5, how(x), x)
        return x
    if how == "add":
        if keep is not None:
            values = _wnp.where(keep, values, _np.zeros((), dtype))
            flat = _wnp.where(keep, flat, 0)
        return x + _scatter_sum(values, flat, size)
    op = _COMBINE[how]
    if how in ("min", "max"):
        folded, named = _segments(op, flat, keep, _S.stop_gradient(values), size)
        best = _wnp.where(named, op(_S.stop_gradient(x), folded), _S.stop_gradient(x))
        return _ties_shared(x, flat, keep, values, best, dtype)
    folded, named = _segments(op, flat, keep, values, size)
    return _wnp.where(named, op(x, folded), x)


def _ties_shared(x, flat, keep, values, best, dtype):
    """scatter_min/max: `best` (their values, computed without derivative), with JAX's
    derivative: each result's tangent is the mean of the tangents of the operand element
    and the updates that equal it (the winners; all of them at a tie).  An infinite result
    (an operand of -inf that no update reached, as segment_max starts from) has derivative
    0: its winners are left out of the share, whose value would be inf - inf, nan."""
    if _np.dtype(dtype).kind not in "fc":
        return best
    size = _wnp.shape(x)[0]
    if type(flat) is Node and keep is not None:
        flat = _wnp.where(keep, flat, 0)
    finite = _wnp.isfinite(_S.stop_gradient(best))
    won = values == _wnp.take(best, flat)
    if keep is not None:
        won = won & keep
    zero = _np.zeros((), dtype)
    kept = x == best
    count = _wnp.where(kept, 1.0, 0.0) + _scatter_sum(_wnp.where(won, 1.0, 0.0), flat, size)
    shared = _wnp.where(kept & finite, x, zero) + _scatter_sum(
        _wnp.where(won & _wnp.take(finite, flat), values, zero), flat, size)
    share = shared / _wnp.maximum(count, 1.0)
    # (the value is best's, exactly: the mean of equal numbers can round away from them)
    return best + (share - _S.stop_gradient(share))


def _scatter_doc(name, how, result):
    def scatter_fn(operand, scatter_indices, updates, dimension_numbers, *,
                   indices_are_sorted=False, unique_indices=False, mode=None):
        return _scatter(operand, scatter_indices, updates, dimension_numbers, mode, how, name)
    scatter_fn.__name__ = scatter_fn.__qualname__ = name
    scatter_fn.__doc__ = f"""`operand` with `updates` {_SCATTER_VERB[how]} at
    `scatter_indices`, as ``jax.lax.{name}`` (XLA's Scatter): `dimension_numbers` (a
    `ScatterDimensionNumbers`) says which axes of `updates` are windows and where each
    goes.  A window that does not fit in `operand` is dropped (``mode=None`` or
    ``"drop"``, JAX's default) or moved to fit (``"clip"``).  {_SCATTER_REPEATS[how]}
    Differentiable in `operand` and `updates`; indices traced without values work too.

    Example:
        >>> import numpy as np
        >>> dn = ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
        ...                              scatter_dims_to_operand_dims=(0,))
        >>> {name}(np.full(4, 2.0), np.array([[1], [1], [3], [7]]),
        ...        np.array([3.0, 5.0, -1.0, 9.0]), dn).tolist()    # (index 7: dropped)
        {result}
    """
    return scatter_fn


_SCATTER_VERB = {"add": "added", "mul": "multiplied in", "min": "combined by minimum",
                 "max": "combined by maximum", "set": "written"}
_SCATTER_REPEATS = {
    "add": "Repeated indices add every update.",
    "mul": "Repeated indices multiply by every update.",
    "min": "Repeated indices take the least; the derivative goes to the operand element and "
           "updates equal to the result, shared equally among them at a tie (as JAX's).",
    "max": "Repeated indices take the greatest; the derivative goes to the operand element "
           "and updates equal to the result, shared equally among them at a tie (as "
           "JAX's).",
    "set": "Of repeated indices the last update is kept (JAX leaves it unspecified; "
           "NumPy's assignment keeps the last), and it alone has a derivative.",
}
scatter_add = _scatter_doc("scatter_add", "add", "[2.0, 10.0, 2.0, 1.0]")
scatter_mul = _scatter_doc("scatter_mul", "mul", "[2.0, 30.0, 2.0, -2.0]")
scatter_min = _scatter_doc("scatter_min", "min", "[2.0, 2.0, 2.0, -1.0]")
scatter_max = _scatter_doc("scatter_max", "max", "[2.0, 5.0, 2.0, 2.0]")
scatter = _scatter_doc("scatter", "set", "[2.0, 5.0, 2.0, -1.0]")


def scatter_sub(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted=False, unique_indices=False, mode=None):
    """`scatter_add` of ``-updates``, as ``jax.lax.scatter_sub``.

    Example:
        >>> import numpy as np
        >>> dn = ScatterDimensionNumbers((), (0,), (0,))
        >>> scatter_sub(np.zeros(3), np.array([[0], [0]]), np.array([1.0, 2.0]), dn).tolist()
        [-3.0, 0.0, 0.0]
    """
    return _scatter(operand, scatter_indices, _wnp.negative(updates), dimension_numbers,
                    mode, "add", "scatter_sub")


def scatter_apply(operand, scatter_indices, func, dimension_numbers, *, update_shape=(),
                  indices_are_sorted=False, unique_indices=False, mode=None):
    """`operand` with ``func`` applied to the elements that windows of `update_shape` at
    `scatter_indices` name, as ``jax.lax.scatter_apply`` (`func` acts elementwise; an
    element named k times takes it k times, as JAX's).  Traced without values, the indices
    cost one application of `func` to the whole operand per update element.

    Example:
        >>> import numpy as np
        >>> dn = ScatterDimensionNumbers((), (0,), (0,))
        >>> scatter_apply(np.arange(1.0, 5.0), np.array([[1], [1], [3]]), lambda v: 10 * v,
        ...               dn, update_shape=(3,)).tolist()
        [1.0, 200.0, 3.0, 40.0]
    """
    if not callable(func):
        raise TypeError(f"scatter_apply: func must be a function of one array, got {func!r}")
    return _scatter(operand, scatter_indices, None, dimension_numbers, mode, func,
                    "scatter_apply", update_shape=tuple(update_shape))


# ---- static slicing and structure -------------------------------------------------------------
def slice(operand, start_indices, limit_indices, strides=None):  # noqa: A001
    """``operand[start:limit:stride, ...]`` axis by axis, as ``jax.lax.slice``.

    Example:
        >>> import numpy as np
        >>> slice(np.arange(10.0), (1,), (8,), (3,)).tolist()
        [1.0, 4.0, 7.0]
    """
    strides = strides or (1,) * len(start_indices)
    return operand[tuple(_np.s_[a:b:s] for a, b, s in zip(start_indices, limit_indices,
                                                            strides))]


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
    """`slice` along one axis.

    Example:
        >>> import numpy as np
        >>> slice_in_dim(np.arange(6.0).reshape(2, 3), 1, 3, axis=1).tolist()
        [[1.0, 2.0], [4.0, 5.0]]
    """
    axis = _axis(axis, _wnp.ndim(operand), "slice_in_dim")
    return operand[(_np.s_[:],) * axis + (_np.s_[start_index:limit_index:stride],)]


def index_in_dim(operand, index, axis=0, keepdims=True):
    """The slice at the (plain) `index` along `axis`.

    Example:
        >>> import numpy as np
        >>> index_in_dim(np.arange(6.0).reshape(2, 3), -1, axis=1).tolist()
        [[2.0], [5.0]]
    """
    axis = _axis(axis, _wnp.ndim(operand), "index_in_dim")
    n = _wnp.shape(operand)[axis]
    index = _operator.index(index)
    if not -n <= index < n:
        raise IndexError(f"index_in_dim: index {index} is out of bounds for an axis of {n}")
    out = operand[(_np.s_[:],) * axis + (_np.s_[index % n:index % n + 1],)]
    return out if keepdims else _wnp.squeeze(out, axis)


def reshape(operand, new_sizes, dimensions=None):
    """`operand` transposed by `dimensions` (where given), then reshaped, as
    ``jax.lax.reshape``.

    Example:
        >>> import numpy as np
        >>> reshape(np.arange(6.0).reshape(2, 3), (3, 2), dimensions=(1, 0)).tolist()
        [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    """
    if dimensions is not None:
        operand = _wnp.transpose(operand, tuple(dimensions))
    return _wnp.reshape(operand, tuple(new_sizes))


def transpose(operand, permutation):
    """`operand`'s axes in the order `permutation`.

    Example:
        >>> import numpy as np
        >>> transpose(np.zeros((2, 3, 4)), (2, 0, 1)).shape
        (4, 2, 3)
    """
    return _wnp.transpose(operand, tuple(permutation))


def squeeze(array, dimensions):
    """`array` without the axes of length 1 in `dimensions`.

    Example:
        >>> import numpy as np
        >>> squeeze(np.zeros((1, 3, 1)), (0, 2)).shape
        (3,)
    """
    return _wnp.squeeze(array, tuple(dimensions))


def expand_dims(array, dimensions):
    """`array` with new axes of length 1 at `dimensions`.

    Example:
        >>> import numpy as np
        >>> expand_dims(np.zeros(3), (0, 2)).shape
        (1, 3, 1)
    """
    return _wnp.expand_dims(array, tuple(dimensions))


def broadcast(operand, sizes):
    """`operand` repeated over new leading axes of `sizes`.

    Example:
        >>> import numpy as np
        >>> broadcast(np.ones(3), (2,)).shape
        (2, 3)
    """
    return _wnp.broadcast_to(operand, tuple(sizes) + tuple(_wnp.shape(operand)))


def broadcast_in_dim(operand, shape, broadcast_dimensions):
    """`operand` broadcast to `shape`, its axis k becoming axis
    ``broadcast_dimensions[k]``, as ``jax.lax.broadcast_in_dim``.

    Example:
        >>> import numpy as np
        >>> broadcast_in_dim(np.array([1.0, 2.0]), (2, 3), (0,)).tolist()
        [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]
    """
    shape = tuple(shape)
    dims = tuple(broadcast_dimensions)
    old = _wnp.shape(operand)
    if len(dims) != len(old) or list(dims) != sorted(dims):
        raise TypeError(f"broadcast_in_dim: broadcast_dimensions {dims} must name one "
                        f"increasing axis of {shape} for each axis of {old}")
    placed = [1] * len(shape)
    for d, n in zip(dims, old):
        placed[d] = n
    return _wnp.broadcast_to(_wnp.reshape(operand, tuple(placed)), shape)


def concatenate(operands, dimension):
    """`operands` joined along axis `dimension`.

    Example:
        >>> import numpy as np
        >>> concatenate([np.zeros(2), np.ones(1)], 0).tolist()
        [0.0, 0.0, 1.0]
    """
    return _wnp.concatenate(list(operands), axis=dimension)


def pad(operand, padding_value, padding_config):
    """`operand` padded with `padding_value`: ``(low, high, interior)`` per axis, as
    ``jax.lax.pad`` (interior: that many between neighbours; a negative low or high crops).

    Example:
        >>> import numpy as np
        >>> pad(np.array([1.0, 2.0, 3.0]), 0.0, [(1, -1, 1)]).tolist()
        [0.0, 1.0, 0.0, 2.0, 0.0]
    """
    shape = _wnp.shape(operand)
    config = [tuple(_operator.index(v) for v in c) for c in padding_config]
    if len(config) != len(shape) or any(len(c) != 3 or c[2] < 0 for c in config):
        raise ValueError(f"pad: padding_config must hold one (low, high, interior) per axis "
                         f"of {shape}, with interior >= 0; got {padding_config}")
    # the interior and the positive edges first, into a filled array; then the crops
    low = [_builtins.max(lo, 0) for lo, _, _ in config]
    grown = [lo + n + (n - 1) * inner * (n > 0) + _builtins.max(hi, 0)
             for lo, n, (_, hi, inner) in zip(low, shape, config)]
    dtype = _wnp.result_type(operand)
    out = _wnp.full(tuple(grown), padding_value, dtype=dtype) if type(padding_value) \
        is not Node else _wnp.broadcast_to(_wnp.astype(padding_value, dtype), tuple(grown))
    out = _wnp.at(out)[tuple(_np.s_[lo:lo + (n - 1) * (inner + 1) + 1:inner + 1]
                             for lo, n, (_, _, inner) in zip(low, shape, config))].set(operand)
    crop = tuple(_np.s_[-_builtins.min(lo, 0):g + _builtins.min(hi, 0)]
                 for g, (lo, hi, _) in zip(grown, config))
    return out[crop]


def rev(operand, dimensions):
    """`operand` reversed along `dimensions`.

    Example:
        >>> import numpy as np
        >>> rev(np.arange(3.0), (0,)).tolist()
        [2.0, 1.0, 0.0]
    """
    return _wnp.flip(operand, tuple(dimensions)) if tuple(dimensions) else operand


def collapse(operand, start_dimension, stop_dimension=None):
    """Axes ``start_dimension`` up to `stop_dimension` merged into one.

    Example:
        >>> import numpy as np
        >>> collapse(np.zeros((2, 3, 4)), 1).shape
        (2, 12)
    """
    shape = _wnp.shape(operand)
    stop = len(shape) if stop_dimension is None else stop_dimension
    return _wnp.reshape(operand, shape[:start_dimension]
                        + (_math.prod(shape[start_dimension:stop]),) + shape[stop:])


def split(operand, sizes, axis=0):
    """`operand` cut along `axis` into pieces of `sizes`.

    Example:
        >>> import numpy as np
        >>> [p.tolist() for p in split(np.arange(5.0), (2, 3))]
        [[0.0, 1.0], [2.0, 3.0, 4.0]]
    """
    bounds = _np.cumsum(list(sizes))[:-1].tolist()
    return _wnp.split(operand, bounds, axis=axis)


def full(shape, fill_value, dtype=None):
    """An array of `shape` filled with `fill_value`.

    Example:
        >>> full((2,), 3.0).tolist()
        [3.0, 3.0]
    """
    if type(fill_value) is Node:
        return _wnp.broadcast_to(fill_value if dtype is None else
                                 _wnp.astype(fill_value, dtype), tuple(shape))
    return _np.full(shape, fill_value, dtype)


def full_like(x, fill_value, dtype=None, shape=None):
    """An array like `x` (its shape and dtype, unless given) filled with `fill_value`.

    Example:
        >>> import numpy as np
        >>> full_like(np.zeros(2, np.float32), 1.0).dtype
        dtype('float32')
    """
    return full(_wnp.shape(x) if shape is None else shape, fill_value,
                _wnp.result_type(x) if dtype is None else dtype)


def iota(dtype, size):
    """``0, 1, ..., size - 1`` in `dtype`.

    Example:
        >>> iota(int, 3).tolist()
        [0, 1, 2]
    """
    return _np.arange(size, dtype=dtype)


def broadcasted_iota(dtype, shape, dimension):
    """Each element's index along `dimension`, in an array of `shape`.

    Example:
        >>> broadcasted_iota(int, (2, 3), 1).tolist()
        [[0, 1, 2], [0, 1, 2]]
    """
    shape = tuple(shape)
    placed = [1] * len(shape)
    placed[dimension] = shape[dimension]
    return _np.broadcast_to(_np.arange(shape[dimension], dtype=dtype).reshape(placed), shape)


def convert_element_type(operand, new_dtype):
    """`operand` in `new_dtype` (a float to an integer rounds toward zero, as a cast).

    Example:
        >>> convert_element_type(2.7, int)
        array(2)
    """
    return _wnp.astype(_wnp.asarray(operand), new_dtype)


# ---- reductions, scans, sorting ---------------------------------------------------------------
def _reducer(fn, name, example, result):
    def reduce(operand, axes):
        return fn(operand, axis=tuple(axes))
    reduce.__name__ = reduce.__qualname__ = name
    reduce.__doc__ = f"""`operand` reduced over `axes` ({fn.__name__}), as ``jax.lax.{name}``.

    Example:
        >>> import numpy as np
        >>> {name}({example}, (1,)).tolist()
        {result}
    """
    return reduce


_M = "np.array([[1.0, 2.0], [3.0, 4.0]])"
reduce_sum = _reducer(_wnp.sum, "reduce_sum", _M, "[3.0, 7.0]")
reduce_prod = _reducer(_wnp.prod, "reduce_prod", _M, "[2.0, 12.0]")
reduce_max = _reducer(_wnp.max, "reduce_max", _M, "[2.0, 4.0]")
reduce_min = _reducer(_wnp.min, "reduce_min", _M, "[1.0, 3.0]")
reduce_and = _reducer(_wnp.all, "reduce_and", _M + " > 1.5", "[False, True]")
reduce_or = _reducer(_wnp.any, "reduce_or", _M + " > 1.5", "[True, True]")


def argmax(operand, axis, index_dtype):
    """The index of the largest element along `axis`, in `index_dtype`.

    Example:
        >>> import numpy as np
        >>> argmax(np.array([1.0, 3.0, 2.0]), 0, np.int32)
        array(1, dtype=int32)
    """
    return _wnp.astype(_wnp.argmax(operand, axis=axis), index_dtype)


def argmin(operand, axis, index_dtype):
    """The index of the smallest element along `axis`, in `index_dtype`.

    Example:
        >>> import numpy as np
        >>> argmin(np.array([1.0, 3.0, 0.5]), 0, np.int32)
        array(2, dtype=int32)
    """
    return _wnp.astype(_wnp.argmin(operand, axis=axis), index_dtype)


def _cumulative(fn, name, result):
    def cumulative(operand, axis=0, reverse=False):
        if reverse:
            return _wnp.flip(fn(_wnp.flip(operand, axis), axis=axis), axis)
        return fn(operand, axis=axis)
    cumulative.__name__ = cumulative.__qualname__ = name
    cumulative.__doc__ = f"""The running {name[3:]} of `operand` along `axis` (from the end
    with ``reverse=True``), as ``jax.lax.{name}``.

    Example:
        >>> import numpy as np
        >>> {name}(np.array([1.0, 3.0, 2.0])).round(4).tolist()
        {result}
    """
    return cumulative


cumsum = _cumulative(_wnp.cumsum, "cumsum", "[1.0, 4.0, 6.0]")
cumprod = _cumulative(_wnp.cumprod, "cumprod", "[1.0, 3.0, 6.0]")
cummax = _cumulative(_wnp.maximum.accumulate, "cummax", "[1.0, 3.0, 3.0]")
cummin = _cumulative(_wnp.minimum.accumulate, "cummin", "[1.0, 1.0, 1.0]")
cumlogsumexp = _cumulative(_wnp.logaddexp.accumulate, "cumlogsumexp",
                           "[1.0, 3.1269, 3.4076]")


def sort(operand, dimension=-1, is_stable=True, num_keys=1):
    """`operand` sorted along `dimension`, as ``jax.lax.sort``; a tuple of operands is
    sorted together by its first `num_keys` (lexicographically), and a tuple is returned.

    Example:
        >>> import numpy as np
        >>> keys, vals = sort((np.array([2.0, 1.0, 3.0]), np.array([20.0, 10.0, 30.0])))
        >>> vals.tolist()
        [10.0, 20.0, 30.0]
    """
    if not isinstance(operand, (tuple, list)):
        return _wnp.sort(operand, axis=dimension)
    operands = list(operand)
    if not 1 <= num_keys <= len(operands):
        raise ValueError(f"sort: num_keys must be in 1..{len(operands)}, got {num_keys}")
    # (the order is piecewise constant in the keys: it carries no derivative, and the
    # operands are gathered by it, so they do)
    keys = [_wnp.moveaxis(k, dimension, -1) for k in operands[:num_keys]]
    order = _wnp.moveaxis(_wnp.lexsort(tuple(keys[::-1]), axis=-1), -1, dimension)
    return tuple(_wnp.take_along_axis(x, order, axis=dimension) for x in operands)


def sort_key_val(keys, values, dimension=-1, is_stable=True):
    """`keys` sorted along `dimension` and `values` in the same order.

    Example:
        >>> import numpy as np
        >>> sort_key_val(np.array([2.0, 1.0]), np.array([5.0, 7.0]))[1].tolist()
        [7.0, 5.0]
    """
    return sort((keys, values), dimension, is_stable, 1)


def top_k(operand, k):
    """The `k` largest elements along the last axis, largest first, and their indices,
    as ``jax.lax.top_k``; differentiable in the values (the cotangent goes to the
    elements picked).

    Example:
        >>> import numpy as np
        >>> vals, idx = top_k(np.array([1.0, 4.0, 2.0, 3.0]), 2)
        >>> vals.tolist(), idx.tolist()
        ([4.0, 3.0], [1, 3])
    """
    k = _operator.index(k)
    n = _wnp.shape(operand)[-1]
    if not 0 <= k <= n:
        raise ValueError(f"top_k: k={k} is outside 0..{n} (the last axis of "
                         f"{_wnp.shape(operand)})")
    idx = _wnp.astype(_wnp.argsort(-operand, axis=-1, kind="stable")[..., :k], _np.int32)
    return _wnp.take_along_axis(operand, idx, axis=-1), idx


# ---- reductions with a computation, windows -----------------------------------------------------
# The computations `reduce` and `reduce_window` recognise: JAX's monoids, each by the names
# a program may hand over (lax's, jax.numpy's and NumPy's functions, the operator module's).
_MONOID_NAMES = {"add": "add", "mul": "mul", "multiply": "mul", "max": "max",
                 "maximum": "max", "min": "min", "minimum": "min"}


def _monoid(computation, who):
    """(name, the elementwise combination, the reduction over axes) of a recognised
    computation; else NotImplementedError naming what is."""
    table = {"add": (_wnp.add, _wnp.sum), "mul": (_wnp.multiply, _wnp.prod),
             "max": (_wnp.maximum, _wnp.max), "min": (_wnp.minimum, _wnp.min)}
    known = {_wnp.add: "add", _operator.add: "add", _np.add: "add",
             _wnp.multiply: "mul", _operator.mul: "mul", _np.multiply: "mul",
             _wnp.maximum: "max", _np.maximum: "max", _wnp.minimum: "min", _np.minimum: "min"}
    try:
        name = known.get(computation)
    except TypeError:                       # (an unhashable callable)
        name = None
    module = getattr(computation, "__module__", None) or ""
    if name is None and module.split(".")[0] == "jax":      # JAX's own lax.add, jnp.maximum
        name = _MONOID_NAMES.get(getattr(computation, "__name__", ""))
    if name is None:
        raise NotImplementedError(
            f"{who}: computation {getattr(computation, '__name__', computation)!r} is not "
            "supported: only the monoids lax.add, lax.mul, lax.max and lax.min (or "
            "jax.numpy's / NumPy's add, multiply, maximum, minimum, operator.add and "
            "operator.mul)")
    return (name,) + table[name]


def _identity(name, dtype):
    """The identity of a monoid in `dtype`: combining it changes nothing."""
    dtype = _np.dtype(dtype)
    if name in ("add", "mul"):
        return 0 if name == "add" else 1
    if dtype.kind in "fc":
        return -_np.inf if name == "max" else _np.inf
    if dtype.kind == "b":
        return name == "min"
    return _np.iinfo(dtype).min if name == "max" else _np.iinfo(dtype).max


def _with_init(combine, name, init, result, dtype):
    """``combine(init, result)``, as XLA folds the initial value in once, skipped where
    init is the monoid's identity (the result is the same)."""
    known = _value(init)
    if known is not None and _np.shape(known) == () and \
            _np.asarray(known, dtype) == _identity(name, dtype):
        return result
    if type(init) is not Node:
        init = _np.asarray(init, dtype)
    return combine(init, result)


def _single(operand, init, who):
    """The one array of a pytree of operands (and its initial value), and how to put the
    result back: several operands take a computation on tuples, which is not offered."""
    leaves, tree = _flatten(operand)
    inits, init_tree = _flatten(init)
    if len(leaves) != 1 or len(inits) != 1:
        raise NotImplementedError(f"{who}: only one operand is supported (several, with a "
                                  f"computation on tuples, are not); got {len(leaves)} "
                                  f"operands and {len(inits)} initial values")
    if _wnp.shape(inits[0]) != ():
        raise TypeError(f"{who}: init_value must be a scalar, got shape "
                        f"{_wnp.shape(inits[0])}")
    return leaves[0], inits[0], lambda out: _unflatten(tree, [out])


def reduce(operands, init_values, computation, dimensions):  # noqa: A001
    """`operands` reduced over the axes `dimensions` by `computation` starting from
    `init_values`, as ``jax.lax.reduce``, for the monoids `computation` may be:
    ``lax.add``, ``lax.mul``, ``lax.max``, ``lax.min`` (``reduce_sum`` and its kind).
    One operand (an array, or a pytree of one).

    Example:
        >>> import numpy as np
        >>> x = np.array([[1.0, 5.0], [3.0, 2.0]])
        >>> reduce(x, -np.inf, max, (0,)).tolist(), float(reduce(x, 0.0, add, (0, 1)))
        ([3.0, 5.0], 11.0)
    """
    operand, init, put_back = _single(operands, init_values, "reduce")
    name, combine, reducer = _monoid(computation, "reduce")
    dims = _dims(dimensions, "reduce", "dimensions")
    _check_axes(dims, _wnp.ndim(operand), "reduce", "dimensions", increasing=False)
    dtype = _wnp.result_type(operand)
    out = reducer(operand, axis=dims) if dims else operand
    return put_back(_with_init(combine, name, init, out, dtype))


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    """The ``(low, high)`` padding of each axis that `padding` (``"VALID"``, ``"SAME"`` or
    ``"SAME_LOWER"``) means for windows of `window_shape` moved by `window_strides` over
    `in_shape`, as ``jax.lax.padtype_to_pads``: SAME pads so that there are
    ``ceil(n / stride)`` windows, the odd one more at the end (SAME_LOWER: at the start).

    Example:
        >>> padtype_to_pads((5, 6), (3, 2), (2, 1), "SAME")
        [(1, 1), (0, 1)]
    """
    kind = padding.upper() if isinstance(padding, str) else padding
    if kind not in ("VALID", "SAME", "SAME_LOWER"):
        raise ValueError(f"padding {padding!r} is not one of 'VALID', 'SAME', 'SAME_LOWER' "
                         "(or a sequence of (low, high) pairs)")
    if not len(in_shape) == len(window_shape) == len(window_strides):
        raise ValueError(f"padtype_to_pads: in_shape {tuple(in_shape)}, window_shape "
                         f"{tuple(window_shape)} and window_strides {tuple(window_strides)} "
                         "need one entry per axis")
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    pads = []
    for n, k, s in zip(in_shape, window_shape, window_strides):
        total = _builtins.max((-(-int(n) // int(s)) - 1) * int(s) + int(k) - int(n), 0)
        small = total // 2
        pads.append((small, total - small) if kind == "SAME" else (total - small, small))
    return pads


def _window_settings(shape, window_dimensions, window_strides, padding, base_dilation,
                     window_dilation, who):
    n = len(shape)
    dims = _dims(window_dimensions, who, "window_dimensions")
    strides = (1,) * n if window_strides is None else _dims(window_strides, who,
                                                            "window_strides")
    base = (1,) * n if base_dilation is None else _dims(base_dilation, who, "base_dilation")
    spread = (1,) * n if window_dilation is None else _dims(window_dilation, who,
                                                            "window_dilation")
    for name, v in (("window_dimensions", dims), ("window_strides", strides),
                    ("base_dilation", base), ("window_dilation", spread)):
        if len(v) != n or any(k < 1 for k in v):
            raise ValueError(f"{who}: {name} {v} must hold one positive integer for each "
                             f"axis of the operand of shape {tuple(shape)}")
    dilated = [(m - 1) * b + 1 if m else 0 for m, b in zip(shape, base)]
    spans = [(k - 1) * d + 1 for k, d in zip(dims, spread)]
    if isinstance(padding, str):
        pads = padtype_to_pads(dilated, spans, strides, padding)
    else:
        pads = [tuple(_operator.index(v) for v in p) for p in padding]
        if len(pads) != n or any(len(p) != 2 for p in pads):
            raise ValueError(f"{who}: padding {padding!r} must be 'VALID', 'SAME', "
                             f"'SAME_LOWER' or one (low, high) pair for each axis of the "
                             f"operand of shape {tuple(shape)}")
    out = tuple(_builtins.max((m + lo + hi - k) // s + 1, 0)
                for m, (lo, hi), k, s in zip(dilated, pads, spans, strides))
    return dims, strides, base, spread, pads, out


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None):
    """The shape `reduce_window` gives (padding: ``(low, high)`` pairs), as
    ``jax.lax.reduce_window_shape_tuple``.

    Example:
        >>> reduce_window_shape_tuple((7, 6), (3, 2), (2, 2), ((1, 1), (0, 0)))
        (4, 3)
    """
    return _window_settings(tuple(operand_shape), window_dimensions, window_strides,
                            padding, base_dilation, window_dilation,
                            "reduce_window_shape_tuple")[-1]


def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None,
                  padding="VALID", base_dilation=None, window_dilation=None):
    """`computation` over each window of `operand`, as ``jax.lax.reduce_window`` (XLA's
    ReduceWindow): windows of `window_dimensions`, moved by `window_strides`, their taps
    `window_dilation` apart, over `operand` padded by `padding` (``"VALID"``, ``"SAME"``,
    ``"SAME_LOWER"`` or ``(low, high)`` pairs) and spread by `base_dilation`.  The padding
    and the holes take no part (as XLA's), and `init_value` is folded into each result once.
    `computation` is ``lax.add``, ``lax.mul``, ``lax.max`` or ``lax.min`` (sum, product,
    max and min pooling).

    It is one slice of the padded operand for each place in a window (the product of
    `window_dimensions`, not of the result), combined elementwise, so its derivatives are
    those of the slices and of `computation`: a window's max passes its cotangent to its
    largest element (to the first of them at a tie, in row-major order).

    Example:
        >>> import numpy as np
        >>> x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        >>> reduce_window(x, -np.inf, max, (2, 2), (1, 1), "VALID").tolist()
        [[5.0, 6.0]]
        >>> reduce_window(x, 0.0, add, (1, 2), (1, 2), "SAME").tolist()
        [[3.0, 3.0], [9.0, 6.0]]
    """
    who = "reduce_window"
    operand, init, put_back = _single(operand, init_value, who)
    name, combine, _ = _monoid(computation, who)
    shape = tuple(_wnp.shape(operand))
    dtype = _wnp.result_type(operand)
    dims, strides, base, spread, pads, out_shape = _window_settings(
        shape, window_dimensions, window_strides, padding, base_dilation, window_dilation,
        who)
    if 0 in out_shape:
        return put_back(full(out_shape, init, dtype))
    # (the padding and holes are the monoid's identity, so that they take no part)
    fill = _np.asarray(_identity(name, dtype), dtype)
    if any(lo or hi for lo, hi in pads) or any(b > 1 for b in base):
        operand = pad(operand, fill, [(lo, hi, b - 1) for (lo, hi), b in zip(pads, base)])
    acc = None
    for offsets in _np.ndindex(*dims):
        piece = operand[tuple(_np.s_[o * d:o * d + (m - 1) * s + 1:s]
                              for o, d, m, s in zip(offsets, spread, out_shape, strides))]
        acc = piece if acc is None else combine(acc, piece)
    return put_back(_with_init(combine, name, init, acc, dtype))


def _precision(precision, who):
    """JAX's `precision` argument, checked and ignored: None, a `Precision` or its name,
    or a pair of them (one for each operand)."""
    for p in precision if isinstance(precision, (tuple, list)) else (precision,):
        if p is not None and not isinstance(p, Precision):
            try:
                Precision(p)
            except ValueError:
                raise ValueError(f"{who}: precision {precision!r} is not a Precision, one of "
                                 "its names, or a pair of them") from None


# ---- products ---------------------------------------------------------------------------------
def dot(lhs, rhs, precision=None, preferred_element_type=None):
    """The product of vectors and matrices (``lhs @ rhs`` for 1-D and 2-D operands).

    Example:
        >>> import numpy as np
        >>> dot(np.ones((2, 3)), np.ones(3)).tolist()
        [3.0, 3.0]
    """
    _precision(precision, "dot")
    out = _wnp.dot(lhs, rhs)
    return out if preferred_element_type is None else _wnp.astype(out, preferred_element_type)


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    """The general contraction of ``jax.lax.dot_general``: ``dimension_numbers`` is
    ``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``; the result's axes
    are the batch axes, then lhs's free axes, then rhs's.  One `einsum`.

    Example:
        >>> import numpy as np
        >>> a, b = np.ones((5, 2, 3)), np.ones((5, 3, 4))
        >>> dot_general(a, b, (((2,), (1,)), ((0,), (0,)))).shape      # a batched matmul
        (5, 2, 4)
    """
    _precision(precision, "dot_general")
    (lc, rc), (lb, rb) = dimension_numbers
    lc, rc, lb, rb = (tuple(_operator.index(d) for d in ds) for ds in (lc, rc, lb, rb))
    nl, nr = _wnp.ndim(lhs), _wnp.ndim(rhs)
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise TypeError(f"dot_general: dimension_numbers {dimension_numbers} must pair "
                        "each contracting and batch axis of lhs with one of rhs")
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    ls = [None] * nl
    rs = [None] * nr
    for a, b in list(zip(lb, rb)) + list(zip(lc, rc)):
        ls[a] = rs[b] = next(letters)
    ls = [c or next(letters) for c in ls]
    rs = [c or next(letters) for c in rs]
    out = [ls[a] for a in lb] + [c for k, c in enumerate(ls) if k not in lb and k not in lc] \
        + [c for k, c in enumerate(rs) if k not in rb and k not in rc]
    result = _wnp.einsum(f"{''.join(ls)},{''.join(rs)}->{''.join(out)}", lhs, rhs)
    if preferred_element_type is not None:
        result = _wnp.astype(result, preferred_element_type)
    return result


def batch_matmul(lhs, rhs, precision=None):
    """``lhs @ rhs`` over leading batch axes.

    Example:
        >>> import numpy as np
        >>> batch_matmul(np.ones((4, 2, 3)), np.ones((4, 3, 1))).shape
        (4, 2, 1)
    """
    _precision(precision, "batch_matmul")
    return _wnp.matmul(lhs, rhs)


class ConvDimensionNumbers(_NamedTuple):
    """Where a convolution's axes are, as ``jax.lax.ConvDimensionNumbers``: each spec
    lists axis numbers, batch (or out-feature) first, then feature (in-feature), then the
    spatial axes in the order they pair up.  `conv_dimension_numbers` makes one from
    strings such as ``("NHWC", "HWIO", "NHWC")``.

    Example:
        >>> ConvDimensionNumbers((0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3)).lhs_spec
        (0, 1, 2, 3)
    """
    lhs_spec: tuple
    rhs_spec: tuple
    out_spec: tuple


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers):
    """`dimension_numbers` (None, a `ConvDimensionNumbers`, or three strings such as
    ``("NHWC", "HWIO", "NHWC")``) as a `ConvDimensionNumbers` for operands of these
    shapes, as ``jax.lax.conv_dimension_numbers``.  None is ``("NCHW", "OIHW", "NCHW")``
    (in as many spatial axes as there are); in strings, N and C name lhs's and out's batch
    and feature axes, O and I rhs's, and the other letters pair spatial axes up, in the
    order rhs lists them.

    Example:
        >>> conv_dimension_numbers((8, 32, 32, 3), (5, 5, 3, 16), ("NHWC", "HWIO", "NHWC"))
        ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))
    """
    n = len(lhs_shape)
    if len(rhs_shape) != n or n < 2:
        raise TypeError(f"conv: lhs and rhs must have one number of axes (at least 2), got "
                        f"shapes {tuple(lhs_shape)} and {tuple(rhs_shape)}")
    if dimension_numbers is None:
        return ConvDimensionNumbers(*(tuple(range(n)),) * 3)
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return ConvDimensionNumbers(*(tuple(_operator.index(a) for a in s)
                                      for s in dimension_numbers))
    specs = tuple(dimension_numbers)
    if len(specs) != 3 or not all(isinstance(s, str) and len(s) == n for s in specs):
        raise TypeError(f"conv: dimension_numbers must be None, a ConvDimensionNumbers or "
                        f"three strings of {n} letters (such as ('NCHW', 'OIHW', 'NCHW')), "
                        f"got {dimension_numbers!r}")
    lhs, rhs, out = specs
    spatial = [c for c in rhs if c not in "OI"]
    if sorted(rhs) != sorted("OI" + "".join(spatial)) or len(set(rhs)) != n or any(
            sorted(s) != sorted("NC" + "".join(spatial)) for s in (lhs, out)):
        raise TypeError(f"conv: dimension_numbers {dimension_numbers!r} must name N and C "
                        "in lhs and out, O and I in rhs, and the same spatial letters, once "
                        "each, in all three")
    return ConvDimensionNumbers(*(tuple(s.index(c) for c in first + "".join(spatial))
                                  for s, first in ((lhs, "NC"), (rhs, "OI"), (out, "NC"))))


def _conv_canonical(lhs, rhs, strides, pads, lhs_dilation, rhs_dilation, groups, who):
    """A convolution of lhs (N, C, *spatial) and rhs (O, C/groups, *spatial) to
    (N, O, *spatial): `wengert.nn.conv2d`, with lhs dilation as an interior padding (the
    holes are zeros), and 1-D as 2-D with an axis of one."""
    from .. import nn
    k = _wnp.ndim(lhs) - 2
    if k not in (1, 2):
        raise NotImplementedError(f"{who}: only 1-D and 2-D convolutions are supported, got "
                                  f"{k} spatial axes (shapes {_wnp.shape(lhs)} and "
                                  f"{_wnp.shape(rhs)})")
    config = [(lo, hi, d - 1) for (lo, hi), d in zip(pads, lhs_dilation)]
    if any(any(c) for c in config):        # (negative edges crop, after the holes: XLA's)
        lhs = pad(lhs, _np.zeros((), _wnp.result_type(lhs)), [(0, 0, 0)] * 2 + config)
    if k == 1:
        lhs, rhs = _wnp.expand_dims(lhs, 2), _wnp.expand_dims(rhs, 2)
        strides, rhs_dilation = (1,) + tuple(strides), (1,) + tuple(rhs_dilation)
    out = nn.conv2d(lhs, rhs, stride=tuple(strides), dilation=tuple(rhs_dilation),
                    groups=groups)
    return _wnp.squeeze(out, 2) if k == 1 else out


def _spatial(v, k, who, name, default=1):
    v = (default,) * k if v is None else _dims(v, who, name)
    if len(v) != k or any(d < 1 for d in v):
        raise ValueError(f"{who}: {name} {v} must hold one positive integer for each of "
                         f"the {k} spatial axes")
    return v


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None):
    """A 1-D or 2-D convolution, as ``jax.lax.conv_general_dilated`` (XLA's Conv,
    cross-correlation as in deep learning): `dimension_numbers` says where the axes are
    (see `conv_dimension_numbers`; by default lhs ``(N, C, H, W)``, rhs
    ``(O, C/groups, kh, kw)``, out ``(N, O, Ho, Wo)``).  `padding` is ``"VALID"``,
    ``"SAME"``, ``"SAME_LOWER"`` or ``(low, high)`` pairs (negative ones crop);
    `lhs_dilation` spreads the input (a transposed convolution: see `conv_transpose`),
    `rhs_dilation` the kernel.  It is `wengert.nn.conv2d`, whose derivatives are
    convolutions again.  `batch_group_count` is refused by name; `precision` is ignored.

    Example:
        >>> import numpy as np
        >>> conv_general_dilated(np.ones((1, 1, 4, 4)), np.ones((1, 1, 3, 3)), (1, 1),
        ...                      "SAME")[0, 0].tolist()[0]
        [4.0, 6.0, 6.0, 4.0]
        >>> conv_general_dilated(np.ones((1, 4, 4, 2)), np.ones((3, 3, 2, 5)), (1, 1), "SAME",
        ...                      dimension_numbers=("NHWC", "HWIO", "NHWC")).shape
        (1, 4, 4, 5)
    """
    _precision(precision, "conv_general_dilated")
    who = "conv_general_dilated"
    if batch_group_count != 1:
        raise NotImplementedError(f"{who}: batch_group_count is not supported")
    dn = conv_dimension_numbers(_wnp.shape(lhs), _wnp.shape(rhs), dimension_numbers)
    lhs = _wnp.transpose(lhs, dn.lhs_spec)
    rhs = _wnp.transpose(rhs, dn.rhs_spec)
    k = _wnp.ndim(lhs) - 2
    strides = _spatial(window_strides, k, who, "window_strides")
    spread_in = _spatial(lhs_dilation, k, who, "lhs_dilation")
    spread = _spatial(rhs_dilation, k, who, "rhs_dilation")
    if isinstance(padding, str):
        if any(d > 1 for d in spread_in):
            raise ValueError(f"{who}: padding {padding!r} with lhs_dilation {spread_in} is "
                             "not defined (as in JAX): give (low, high) pairs, or use "
                             "conv_transpose")
        dilated = [(n - 1) * d + 1 if n else 0
                   for n, d in zip(_wnp.shape(lhs)[2:], spread_in)]
        spans = [(n - 1) * d + 1 for n, d in zip(_wnp.shape(rhs)[2:], spread)]
        pads = padtype_to_pads(dilated, spans, strides, padding)
    else:
        pads = [tuple(_operator.index(v) for v in p) for p in padding]
        if len(pads) != k or any(len(p) != 2 for p in pads):
            raise ValueError(f"{who}: padding {padding!r} must be a string or one (low, "
                             f"high) pair for each of the {k} spatial axes")
    out = _conv_canonical(lhs, rhs, strides, pads, spread_in, spread, feature_group_count,
                          who)
    out = _wnp.transpose(out, tuple(_np.argsort(dn.out_spec)))
    return out if preferred_element_type is None else _wnp.astype(out, preferred_element_type)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """`conv_general_dilated` without dilations, as ``jax.lax.conv``.

    Example:
        >>> import numpy as np
        >>> conv(np.ones((1, 1, 3, 3)), np.ones((1, 1, 2, 2)), (1, 1), "VALID").shape
        (1, 1, 2, 2)
    """
    _precision(precision, "conv")
    return conv_general_dilated(lhs, rhs, window_strides, padding,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
    """`conv_general_dilated` in the default layout with both dilations, as
    ``jax.lax.conv_with_general_padding``.

    Example:
        >>> import numpy as np
        >>> conv_with_general_padding(np.ones((1, 1, 3, 3)), np.ones((1, 1, 2, 2)), (1, 1),
        ...                           ((1, 1), (0, 0)), (2, 1), None).shape
        (1, 1, 6, 2)
    """
    _precision(precision, "conv_with_general_padding")
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation,
                                rhs_dilation, preferred_element_type=preferred_element_type)


def _transpose_pads(span, stride, padding):
    """The padding of a transposed convolution whose forward convolution has `padding`
    ("SAME" or "VALID"): the input spread by the stride is padded so that the output is
    ``n * stride`` long (SAME) or ``n * stride + max(span - stride, 0)`` (VALID), the
    larger half before where the total is odd and the stride allows it."""
    if padding == "SAME":
        total = span + stride - 2
        before = span - 1 if stride > span - 1 else -(-total // 2)
    else:
        total = span + stride - 2 + _builtins.max(span - stride, 0)
        before = span - 1
    return before, total - before


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel=False, precision=None, preferred_element_type=None,
                   use_consistent_padding=False):
    """A transposed ("fractionally strided") convolution, as ``jax.lax.conv_transpose``:
    the input spread `strides` apart, then convolved with stride 1.  The default layout is
    TensorFlow's, ``("NHWC", "HWIO", "NHWC")`` (``"NHC"``... in 1-D).  `padding` ``"SAME"``
    makes the output `strides` times the input, ``"VALID"`` as large as the convolution
    it transposes takes; pairs are the transposed convolution's own padding, unless
    ``use_consistent_padding=True``, when they are the forward convolution's (PyTorch's
    meaning).  ``transpose_kernel=True`` flips the kernel and swaps its I and O axes, which
    makes this the derivative of a forward convolution with that kernel (Keras's
    Conv2DTranspose).

    Example:
        >>> import numpy as np
        >>> conv_transpose(np.ones((1, 3, 3, 1)), np.ones((2, 2, 1, 1)), (2, 2),
        ...                "SAME").shape
        (1, 6, 6, 1)
    """
    _precision(precision, "conv_transpose")
    who = "conv_transpose"
    k = _wnp.ndim(lhs) - 2
    if dimension_numbers is None:
        if not 1 <= k <= 2:
            raise NotImplementedError(f"{who}: only 1-D and 2-D convolutions are supported, "
                                      f"got lhs of shape {_wnp.shape(lhs)}")
        space = "HW"[:k]
        dimension_numbers = ("N" + space + "C", space + "IO", "N" + space + "C")
    dn = conv_dimension_numbers(_wnp.shape(lhs), _wnp.shape(rhs), dimension_numbers)
    strides = _spatial(strides, k, who, "strides")
    spread = _spatial(rhs_dilation, k, who, "rhs_dilation")
    sizes = [_wnp.shape(rhs)[a] for a in dn.rhs_spec[2:]]
    spans = [(n - 1) * d + 1 for n, d in zip(sizes, spread)]
    if isinstance(padding, str):
        kind = padding.upper()
        if kind not in ("SAME", "VALID"):
            raise ValueError(f"{who}: padding {padding!r} is not one of 'SAME', 'VALID' or "
                             "(low, high) pairs")
        pads = [_transpose_pads(n, s, kind) for n, s in zip(spans, strides)]
    else:
        pads = [tuple(_operator.index(v) for v in p) for p in padding]
        if len(pads) != k or any(len(p) != 2 for p in pads):
            raise ValueError(f"{who}: padding {padding!r} must be 'SAME', 'VALID' or one "
                             f"(low, high) pair for each of the {k} spatial axes")
        if use_consistent_padding:   # (the forward convolution's padding, transposed)
            pads = [(n - 1 - lo, n - 1 - hi) for n, (lo, hi) in zip(spans, pads)]
    if transpose_kernel:
        rhs = _wnp.swapaxes(_wnp.flip(rhs, dn.rhs_spec[2:]), dn.rhs_spec[0], dn.rhs_spec[1])
    return conv_general_dilated(lhs, rhs, (1,) * k, pads, lhs_dilation=strides,
                                rhs_dilation=spread, dimension_numbers=dn,
                                preferred_element_type=preferred_element_type)


def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding,
                                 lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                                 precision=None, preferred_element_type=None):
    """The patches `conv_general_dilated` would multiply with a kernel of spatial shape
    `filter_shape`, as ``jax.lax.conv_general_dilated_patches``: the output's feature axis
    holds each patch flattened, channel first, then the spatial axes in rhs's order.  A
    convolution with an identity kernel, so its derivative is a convolution too.

    Example:
        >>> import numpy as np
        >>> x = np.arange(9.0).reshape(1, 1, 3, 3)
        >>> conv_general_dilated_patches(x, (2, 2), (1, 1), "VALID")[0, :, 0, 0].tolist()
        [0.0, 1.0, 3.0, 4.0]
    """
    _precision(precision, "conv_general_dilated_patches")
    filter_shape = _dims(filter_shape, "conv_general_dilated_patches", "filter_shape")
    k = len(filter_shape)
    dn = conv_dimension_numbers(_wnp.shape(lhs), (1, 1) + filter_shape, dimension_numbers)
    channels = _wnp.shape(lhs)[dn.lhs_spec[1]]
    size = _math.prod(filter_shape)
    eye = _np.eye(channels * size, dtype=_wnp.result_type(lhs))
    kernel = eye.reshape((channels * size, channels) + filter_shape)   # (O, I, *spatial)
    rhs = _np.transpose(kernel, _np.argsort(dn.rhs_spec))               # in rhs's layout
    if _wnp.ndim(lhs) != k + 2:
        raise TypeError(f"conv_general_dilated_patches: filter_shape {filter_shape} needs "
                        f"an lhs of {k + 2} axes, got shape {_wnp.shape(lhs)}")
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation,
                                rhs_dilation, dn, preferred_element_type=preferred_element_type)


# ---- elementwise ------------------------------------------------------------------------------
def _special(name):
    import wengert.scipy.special as special
    return getattr(special, name)


abs = _wnp.abs  # noqa: A001
acos, acosh, asin, asinh = _wnp.arccos, _wnp.arccosh, _wnp.arcsin, _wnp.arcsinh
atan, atan2, atanh = _wnp.arctan, _wnp.arctan2, _wnp.arctanh
add, sub, mul, neg = _wnp.add, _wnp.subtract, _wnp.multiply, _wnp.negative
cbrt, ceil, floor, conj = _wnp.cbrt, _wnp.ceil, _wnp.floor, _wnp.conj
cos, cosh, sin, sinh, tan, tanh = _wnp.cos, _wnp.cosh, _wnp.sin, _wnp.sinh, _wnp.tan, _wnp.tanh
exp, exp2, expm1, log, log1p = _wnp.exp, _wnp.exp2, _wnp.expm1, _wnp.log, _wnp.log1p
eq, ne, lt, le, gt, ge = (_wnp.equal, _wnp.not_equal, _wnp.less, _wnp.less_equal,
                          _wnp.greater, _wnp.greater_equal)
max, min = _wnp.maximum, _wnp.minimum  # noqa: A001
imag, real, sign, sqrt, square = _wnp.imag, _wnp.real, _wnp.sign, _wnp.sqrt, _wnp.square
is_finite, nextafter, pow = _wnp.isfinite, _wnp.nextafter, _wnp.power  # noqa: A001
bitwise_and, bitwise_or, bitwise_xor = _wnp.bitwise_and, _wnp.bitwise_or, _wnp.bitwise_xor
bitwise_not = _wnp.invert
rem = _wnp.fmod                 # (C's remainder: the sign of x, as lax.rem)


def div(x, y):
    """``x / y``; for integers rounded toward zero, as ``jax.lax.div`` (not floor).

    Example:
        >>> import numpy as np
        >>> div(np.array([7, -7]), np.array([2, 2])).tolist(), float(div(7.0, 2.0))
        ([3, -3], 3.5)
    """
    if _wnp.result_type(x, y).kind in "iu":
        q = _wnp.floor_divide(_wnp.abs(x), _wnp.abs(y))
        return _wnp.where((_wnp.sign(x) * _wnp.sign(y)) < 0, -q, q)
    return _wnp.true_divide(x, y)


def clamp(min, x, max):  # noqa: A002  (jax.lax.clamp's own argument names and order)
    """`x` clipped to ``[min, max]``: note the order, as ``jax.lax.clamp``.

    Example:
        >>> import numpy as np
        >>> clamp(0.0, np.array([-1.0, 0.5, 2.0]), 1.0).tolist()
        [0.0, 0.5, 1.0]
    """
    return _wnp.clip(x, min, max)


def integer_pow(x, y):
    """``x ** y`` for a Python integer `y`.

    Example:
        >>> integer_pow(2.0, 3)
        8.0
    """
    return _wnp.power(x, _operator.index(y)) if type(x) is Node else x ** _operator.index(y)


def logistic(x):
    """``1 / (1 + exp(-x))``, the logistic sigmoid.

    Example:
        >>> float(logistic(0.0))
        0.5
    """
    return _special("expit")(x)


def rsqrt(x):
    """``1 / sqrt(x)``.

    Example:
        >>> float(rsqrt(4.0))
        0.5
    """
    return 1.0 / _wnp.sqrt(x)


def reciprocal(x):
    """``1 / x``.

    Example:
        >>> float(reciprocal(4.0))
        0.25
    """
    return 1.0 / x


def round(x, rounding_method=0):  # noqa: A001
    """`x` rounded to an integer value: halves away from zero (``rounding_method=0``, JAX's
    default) or to even (``1``; NumPy's).  Its derivative is 0, as floor's.

    Example:
        >>> import numpy as np
        >>> round(np.array([0.5, 1.5, -2.5])).tolist(), round(np.array([0.5, 1.5]), 1).tolist()
        ([1.0, 2.0, -3.0], [0.0, 2.0])
    """
    method = int(rounding_method)
    if method == 1:
        return _wnp.round(x)
    if method != 0:
        raise ValueError(f"round: rounding_method must be 0 (away from zero) or 1 (to even), "
                         f"got {rounding_method!r}")
    return _wnp.sign(x) * _wnp.floor(_wnp.abs(x) + 0.5)


def erf(x):
    """The error function.

    Example:
        >>> float(erf(0.0))
        0.0
    """
    return _special("erf")(x)


def erfc(x):
    """``1 - erf(x)``, accurate for large x.

    Example:
        >>> float(erfc(0.0))
        1.0
    """
    return _special("erfc")(x)


def erf_inv(x):
    """The inverse of `erf`.

    Example:
        >>> float(erf_inv(0.0))
        0.0
    """
    return _special("erfinv")(x)


def lgamma(x):
    """``log |Γ(x)|``.

    Example:
        >>> float(lgamma(1.0))
        0.0
    """
    return _special("gammaln")(x)


def digamma(x):
    """The derivative of `lgamma`.

    Example:
        >>> print(f"{float(digamma(1.0)):.6f}")            # -γ
        -0.577216
    """
    return _special("digamma")(x)


def polygamma(m, x):
    """The m-th derivative of `digamma`.

    Example:
        >>> print(f"{float(polygamma(1, 1.0)):.6f}")       # π²/6
        1.644934
    """
    return _special("polygamma")(m, x)


def zeta(x, q):
    """The Hurwitz zeta function ζ(x, q).

    Example:
        >>> print(f"{float(zeta(2.0, 1.0)):.6f}")
        1.644934
    """
    return _special("zeta")(x, q)


def igamma(a, x):
    """The regularised lower incomplete gamma function P(a, x).

    Example:
        >>> print(f"{float(igamma(1.0, 1.0)):.6f}")        # 1 - 1/e
        0.632121
    """
    return _special("gammainc")(a, x)


def igammac(a, x):
    """The regularised upper incomplete gamma function Q(a, x) = 1 - P(a, x).

    Example:
        >>> print(f"{float(igammac(1.0, 1.0)):.6f}")       # 1/e
        0.367879
    """
    return _special("gammaincc")(a, x)


# ---- names JAX programs reach for: options, structure, bits, special functions -----------------
class Precision(_enum.Enum):
    """The precision of a product or convolution on an accelerator, as
    ``jax.lax.Precision``: accepted wherever JAX takes ``precision=`` and ignored (NumPy
    multiplies in the operands' own precision).  Its names and JAX's strings
    (``"highest"``, ``"float32"``, ...) both make one.

    Example:
        >>> Precision("highest"), Precision("bfloat16")
        (<Precision.HIGHEST: 2>, <Precision.DEFAULT: 0>)
    """
    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value):
        aliases = {"default": cls.DEFAULT, "fastest": cls.DEFAULT, "bfloat16": cls.DEFAULT,
                   "high": cls.HIGH, "tensorfloat32": cls.HIGH, "highest": cls.HIGHEST,
                   "float32": cls.HIGHEST}
        if not isinstance(value, str):          # (another library's member: its name)
            value = getattr(value, "name", None)
        return aliases.get(value.lower()) if isinstance(value, str) else None


class RoundingMethod(_enum.IntEnum):
    """`round`'s methods, as ``jax.lax.RoundingMethod``.

    Example:
        >>> round(2.5, RoundingMethod.TO_NEAREST_EVEN)
        np.float64(2.0)
    """
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


#: ``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``: `dot_general`'s
#: dimension numbers, a plain tuple as in JAX (whose DotDimensionNumbers is this type).
DotDimensionNumbers = tuple


def broadcast_shapes(*shapes):
    """The shape that arrays of `shapes` broadcast to, as ``jax.lax.broadcast_shapes``.

    Example:
        >>> broadcast_shapes((2, 1), (3,))
        (2, 3)
    """
    try:
        return tuple(_np.broadcast_shapes(*(tuple(s) for s in shapes)))
    except ValueError:
        shown = ", ".join(_builtins.map(str, shapes))
        raise ValueError(f"broadcast_shapes: the shapes {shown} do not broadcast "
                         "together") from None


def broadcast_to_rank(x, rank):
    """`x` with leading axes of length 1 up to `rank` axes.

    Example:
        >>> import numpy as np
        >>> broadcast_to_rank(np.ones(3), 3).shape
        (1, 1, 3)
    """
    n = _wnp.ndim(x)
    return x if n >= rank else _wnp.reshape(x, (1,) * (rank - n) + tuple(_wnp.shape(x)))


def stack(operands, axis=0):
    """`operands` (of one shape) joined along a new axis, as ``jax.lax.stack``.

    Example:
        >>> import numpy as np
        >>> stack([np.ones(2), np.zeros(2)], axis=1).tolist()
        [[1.0, 0.0], [1.0, 0.0]]
    """
    return _wnp.stack(list(operands), axis=axis)


def unstack(x, axis=0):
    """The slices of `x` along `axis`, as a tuple (``jax.lax.unstack``).

    Example:
        >>> import numpy as np
        >>> [p.tolist() for p in unstack(np.arange(4.0).reshape(2, 2), axis=1)]
        [[0.0, 2.0], [1.0, 3.0]]
    """
    axis = _axis(axis, _wnp.ndim(x), "unstack")
    return tuple(_wnp.take(x, i, axis=axis) for i in range(_wnp.shape(x)[axis]))


def tile(operand, reps):
    """`operand` repeated `reps[k]` times along each axis k, as ``jax.lax.tile`` (one rep
    for each axis).

    Example:
        >>> import numpy as np
        >>> tile(np.arange(2.0), (3,)).tolist()
        [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    """
    reps = _dims(reps, "tile", "reps")
    if len(reps) != _wnp.ndim(operand):
        raise ValueError(f"tile: reps {reps} must give one count for each axis of the operand "
                         f"of shape {_wnp.shape(operand)}")
    return _wnp.tile(operand, reps)


def empty(shape, dtype):
    """An array of `shape` and `dtype` (zeros, as JAX's).

    Example:
        >>> empty((2,), "float32").tolist()
        [0.0, 0.0]
    """
    return _np.zeros(tuple(shape), dtype)


def optimization_barrier(operand):
    """`operand` itself: JAX's barrier to the compiler's reordering, which has nothing to
    order here.

    Example:
        >>> optimization_barrier(3.0)
        3.0
    """
    return operand


def complex(x, y):  # noqa: A001  (jax.lax.complex)
    """``x + 1j * y`` from real parts, differentiable in both.

    Example:
        >>> complex(1.0, 2.0)
        np.complex128(1+2j)
    """
    return _wnp.add(x, _wnp.multiply(1j, y))


def _bits(x, y, who):
    dtype = _wnp.result_type(x, y)
    if dtype.kind not in "iu":
        raise TypeError(f"{who}: x and y must be integers, got {dtype}")
    return dtype, 8 * dtype.itemsize


def shift_left(x, y):
    """``x << y``; a shift by the width of the type or more (or a negative one) gives 0, as
    ``jax.lax.shift_left`` (NumPy's is undefined there).

    Example:
        >>> import numpy as np
        >>> shift_left(np.array([1, 1], np.int32), np.array([3, 40], np.int32)).tolist()
        [8, 0]
    """
    dtype, bits = _bits(x, y, "shift_left")
    inside = (y >= 0) & (y < bits)
    return _wnp.where(inside, _wnp.left_shift(x, _wnp.where(inside, y, 0)),
                      _np.zeros((), dtype))


def shift_right_arithmetic(x, y):
    """``x >> y`` keeping the sign; a shift by the width or more (or a negative one) gives
    0 or -1, as ``jax.lax.shift_right_arithmetic``.

    Example:
        >>> import numpy as np
        >>> x, y = np.array([-8, -8], np.int32), np.array([1, 40], np.int32)
        >>> shift_right_arithmetic(x, y).tolist()
        [-4, -1]
    """
    dtype, bits = _bits(x, y, "shift_right_arithmetic")
    # (a shift out of range, negative ones too as XLA reads them unsigned, fills with the
    # sign: a shift by bits - 1 does that)
    inside = (y >= 0) & (y < bits)
    return _wnp.right_shift(x, _wnp.where(inside, y, bits - 1))


def shift_right_logical(x, y):
    """``x >> y`` filling with zeros (a signed x read as unsigned bits); a shift by the
    width or more gives 0, as ``jax.lax.shift_right_logical``.

    Example:
        >>> import numpy as np
        >>> x, y = np.array([-8, 8], np.int32), np.array([28, 1], np.int32)
        >>> shift_right_logical(x, y).tolist()
        [15, 4]
    """
    dtype, bits = _bits(x, y, "shift_right_logical")
    unsigned = _np.dtype(f"uint{bits}")
    inside = (y >= 0) & (y < bits)
    shifted = _wnp.right_shift(_wnp.astype(x, unsigned),
                               _wnp.astype(_wnp.where(inside, y, 0), unsigned))
    return _wnp.where(inside, _wnp.astype(shifted, dtype), _np.zeros((), dtype))


reduce_xor = _reducer(_wnp.bitwise_xor.reduce, "reduce_xor", "np.array([[1, 2], [3, 4]])",
                      "[3, 7]")


def bessel_i0e(x):
    """``exp(-|x|) I0(x)``, the exponentially scaled modified Bessel function of order 0.

    Example:
        >>> print(f"{float(bessel_i0e(1.0)):.6f}")
        0.465760
    """
    return _special("i0e")(x)


def bessel_i1e(x):
    """``exp(-|x|) I1(x)``, the exponentially scaled modified Bessel function of order 1.

    Example:
        >>> print(f"{float(bessel_i1e(1.0)):.6f}")
        0.207910
    """
    return _special("i1e")(x)


def betainc(a, b, x):
    """The regularised incomplete beta function I_x(a, b), differentiable in a, b and x.

    Example:
        >>> print(f"{float(betainc(2.0, 3.0, 0.5)):.6f}")
        0.687500
    """
    return _special("betainc")(a, b, x)


# ---- bits, ragged products, approximate top-k, unshared convolutions, gamma gradients, bits ---
# (JAX 0.10's remaining jax.lax names, written with wengert.numpy as the rest of this module:
# each derivative is that of its composition, and traced integers stay on the graph.)
__all__ += [
    "clz", "population_count", "mulhi", "bitcast_convert_type", "reduce_precision",
    "broadcast_like", "shape_as_value", "ragged_dot", "ragged_dot_general",
    "RaggedDotDimensionNumbers", "approx_max_k", "approx_min_k", "conv_general_dilated_local",
    "conv_shape_tuple", "conv_general_shape_tuple", "conv_transpose_shape_tuple",
    "conv_general_permutations", "igamma_grad_a", "random_gamma_grad", "rng_uniform",
    "rng_bit_generator", "RandomAlgorithm",
]


def _integer_dtype(who, **operands):
    """The one integer dtype of `operands` (bools and floats refused): Python ints take the
    others' dtype, as JAX's weakly typed ones do; arrays of two dtypes are refused, as
    ``jax.lax`` refuses them."""
    strong, weak = [], False
    for name, x in operands.items():
        dtype = _wnp.result_type(x)
        if dtype.kind not in "iu":
            raise TypeError(f"{who}: {name} must be an array of integers, got {dtype}")
        if type(x) is int or (type(x) is Node and is_weak(x)):
            weak = True
        elif all(d != dtype for _, d in strong):
            strong.append((name, dtype))
    if len(strong) > 1:
        (a, da), (b, db) = strong[:2]
        raise TypeError(f"{who}: {a} and {b} must have one dtype, got {da} and {db}")
    return strong[0][1] if strong else _np.dtype(_np.int64) if weak else None


def _unsigned(dtype):
    return _np.dtype(f"uint{8 * dtype.itemsize}")


def _as(x, dtype):
    """x in `dtype`: a Python int as an array of it, anything else cast (bits kept)."""
    return _np.asarray(x, dtype) if type(x) is int else _wnp.astype(x, dtype)


def clz(x):
    """The number of leading zero bits of each element of the integer array `x` in its own
    width, in x's dtype, as ``jax.lax.clz`` (a negative number has none; 0 has them all).

    Example:
        >>> import numpy as np
        >>> clz(np.array([0, 1, 255, -1], np.int16)).tolist()
        [16, 15, 8, 0]
    """
    dtype = _integer_dtype("clz", x=x)
    width, unsigned = 8 * dtype.itemsize, _unsigned(dtype)
    u = _wnp.astype(_as(x, dtype), unsigned)
    length = _np.zeros((), dtype)             # the bit length, found by halving the width
    step = width // 2
    while step:
        high = _wnp.right_shift(u, unsigned.type(step))
        has = _wnp.not_equal(high, unsigned.type(0))
        u = _wnp.where(has, high, u)
        length = length + _wnp.where(has, dtype.type(step), dtype.type(0))
        step //= 2
    length = length + _wnp.astype(_wnp.not_equal(u, unsigned.type(0)), dtype)
    return _wnp.astype(dtype.type(width) - length, dtype)


def population_count(x):
    """The number of bits set in each element of the integer array `x` (a negative number's
    two's complement bits), in x's dtype, as ``jax.lax.population_count``.

    Example:
        >>> import numpy as np
        >>> population_count(np.array([0, 7, -1, -128], np.int8)).tolist()
        [0, 3, 8, 1]
    """
    dtype = _integer_dtype("population_count", x=x)
    width, unsigned = 8 * dtype.itemsize, _unsigned(dtype)
    word = unsigned.type
    u = _wnp.astype(_as(x, dtype), unsigned)
    ones = int("01" * (width // 2), 2)              # 0101...: the bits counted in pairs,
    twos = int("0011" * (width // 4), 2) if width > 8 else 0x33     # nibbles, then bytes
    u = u - _wnp.bitwise_and(_wnp.right_shift(u, word(1)), word(ones))
    u = _wnp.bitwise_and(u, word(twos)) + \
        _wnp.bitwise_and(_wnp.right_shift(u, word(2)), word(twos))
    u = _wnp.bitwise_and(u + _wnp.right_shift(u, word(4)), word(int("00001111" * (width // 8),
                                                                    2)))
    shift = 8
    while shift < width:                        # the bytes' counts added into the lowest
        u = u + _wnp.right_shift(u, word(shift))
        shift *= 2
    return _wnp.astype(_wnp.bitwise_and(u, word(0xFF)), dtype)


def _high_words(a, b):
    """The high 64 bits of the 128-bit products of uint64 a and b, from 32-bit halves."""
    low, half = _np.uint64(0xFFFFFFFF), _np.uint64(32)
    a_hi, a_lo = _wnp.right_shift(a, half), _wnp.bitwise_and(a, low)
    b_hi, b_lo = _wnp.right_shift(b, half), _wnp.bitwise_and(b, low)
    lh, hl = a_lo * b_hi, a_hi * b_lo
    carry = _wnp.right_shift(a_lo * b_lo, half) + _wnp.bitwise_and(lh, low) + \
        _wnp.bitwise_and(hl, low)
    return a_hi * b_hi + _wnp.right_shift(lh, half) + _wnp.right_shift(hl, half) + \
        _wnp.right_shift(carry, half)


def mulhi(x, y, /):
    """The high half of the double-width product ``x * y`` of integers (signed or
    unsigned, of one dtype), as ``jax.lax.mulhi``: ``(x * y) >> bits`` without overflow,
    for 64-bit integers too.

    Example:
        >>> import numpy as np
        >>> mulhi(np.array([-5, 2 ** 30], np.int32), np.array([7, 8], np.int32)).tolist()
        [-1, 2]
    """
    dtype = _integer_dtype("mulhi", x=x, y=y)
    x, y = _as(x, dtype), _as(y, dtype)
    width = 8 * dtype.itemsize
    if width < 64:                              # the whole product fits in 64 bits
        wide = _np.dtype(_np.int64 if dtype.kind == "i" else _np.uint64)
        product = _wnp.multiply(_wnp.astype(x, wide), _wnp.astype(y, wide))
        return _wnp.astype(_wnp.right_shift(product, wide.type(width)), dtype)
    shape = _np.broadcast_shapes(tuple(_wnp.shape(x)), tuple(_wnp.shape(y)))
    if not shape:           # (NumPy warns of wrapping on scalars, never on arrays)
        return _wnp.reshape(mulhi(_wnp.reshape(x, (1,)), _wnp.reshape(y, (1,))), ())
    u64 = _np.dtype(_np.uint64)
    xu, yu = _wnp.astype(x, u64), _wnp.astype(y, u64)
    high = _high_words(xu, yu)
    if dtype.kind == "u":
        return high
    # two's complement: x = xu - 2^64 [x < 0], so the signed high word subtracts y (and x)
    zero = _np.uint64(0)
    high = high - _wnp.where(_wnp.less(x, 0), yu, zero) - _wnp.where(_wnp.less(y, 0), xu, zero)
    return _wnp.astype(high, dtype)


def bitcast_convert_type(operand, new_dtype):
    """`operand`'s bits read as `new_dtype`, as ``jax.lax.bitcast_convert_type`` (and
    NumPy's ``view``, in this machine's little-endian order): to a narrower type each
    element becomes a new last axis of ``old_bits // new_bits`` elements, the lowest bits
    first; to a wider one the last axis, of ``new_bits // old_bits`` elements, becomes one
    element.  Bools and complex numbers only to their own dtype, as in JAX.  The bits
    carry no derivative (JAX: zero, even to the same dtype).

    Example:
        >>> import numpy as np
        >>> bitcast_convert_type(np.float32(1.0), np.uint8).tolist()
        [0, 0, 128, 63]
        >>> bitcast_convert_type(np.array([0, 0, 128, 63], np.uint8), np.float32)
        np.float32(1.0)
    """
    from ..primitives.pack import bitcast
    who = "bitcast_convert_type"
    old, new = _wnp.result_type(operand), _np.dtype(new_dtype)
    x = _S.stop_gradient(operand)
    if old == new:
        return _wnp.asarray(x) if type(x) is not Node else x
    if old.kind in "bc" or new.kind in "bc":
        raise TypeError(f"{who}: bool and complex values are converted only to their own "
                        f"dtype, as in JAX; got {old} to {new} (NumPy's view does more)")
    if old.kind not in "iuf" or new.kind not in "iuf":
        raise TypeError(f"{who}: operand and new_dtype must be integer or float types, got "
                        f"{old} and {new}")
    if old.itemsize == new.itemsize:
        return bitcast(x, dtype=new.name)
    shape, wide, narrow = tuple(_wnp.shape(operand)), _unsigned(old), _unsigned(new)
    if old != wide:
        x = bitcast(x, dtype=wide.name)
    if new.itemsize < old.itemsize:
        step = 8 * new.itemsize
        mask = wide.type((1 << step) - 1)
        x = _wnp.stack([_wnp.astype(_wnp.bitwise_and(_wnp.right_shift(x, wide.type(step * k)),
                                                      mask), narrow)
                        for k in range(old.itemsize // new.itemsize)], axis=-1)
    else:
        count = new.itemsize // old.itemsize
        if shape[-1:] != (count,):
            raise ValueError(f"{who}: {new} is made of {count} {old} elements along the "
                             f"operand's last axis, which must have {count} elements; got "
                             f"shape {shape}")
        step = 8 * old.itemsize
        parts = [_wnp.left_shift(_wnp.astype(x[..., k], narrow), narrow.type(step * k))
                 for k in range(count)]
        x = parts[0]
        for part in parts[1:]:
            x = _wnp.bitwise_or(x, part)
    return x if new == narrow else bitcast(x, dtype=new.name)


def reduce_precision(operand, exponent_bits, mantissa_bits):
    """`operand` rounded to the nearest number with `exponent_bits` exponent bits and
    `mantissa_bits` mantissa bits (ties to even; too large gives ±inf, at or below the
    short format's smallest normal number ±0; NaN stays), in its own dtype, as
    ``jax.lax.reduce_precision``: ``(5, 10)`` simulates float16 (without its subnormals),
    ``(8, 7)`` bfloat16.  Differentiable as JAX makes it: the tangent and the cotangent
    are rounded the same way (`wengert.primitives.bits`).

    Example:
        >>> import numpy as np
        >>> reduce_precision(np.array([1 / 3, 1e-6, 7e4]), 5, 10).tolist()
        [0.333251953125, 0.0, inf]
    """
    from ..primitives.bits import reduce_precision as rounded
    who = "reduce_precision"
    try:
        e, m = _operator.index(exponent_bits), _operator.index(mantissa_bits)
    except TypeError:
        raise TypeError(f"{who}: exponent_bits and mantissa_bits must be integers, got "
                        f"{exponent_bits!r} and {mantissa_bits!r}") from None
    if e < 1 or m < 0:
        raise ValueError(f"{who}: exponent_bits must be positive and mantissa_bits "
                         f"non-negative, got {e} and {m}")
    dtype = _wnp.result_type(operand)
    if dtype.kind != "f":
        raise TypeError(f"{who}: operand must be a float array, got {dtype}")
    return rounded(operand, exponent_bits=e, mantissa_bits=m)


def broadcast_like(arr, like_arr):
    """`arr` broadcast to the shape of `like_arr` (NumPy's rules), keeping its own dtype,
    as ``jax.lax.broadcast_like``.

    Example:
        >>> import numpy as np
        >>> broadcast_like(np.array([1, 2, 3]), np.zeros((2, 3))).tolist()
        [[1, 2, 3], [1, 2, 3]]
    """
    shape, to = tuple(_wnp.shape(arr)), tuple(_wnp.shape(like_arr))
    try:
        if _np.broadcast_shapes(shape, to) != to:
            raise ValueError
    except ValueError:
        raise ValueError(f"broadcast_like: arr of shape {shape} does not broadcast to "
                         f"like_arr's shape {to}") from None
    return _wnp.broadcast_to(arr, to)


def shape_as_value(shape):
    """A shape as an int32 array, as ``jax.lax.shape_as_value`` (int32 with x64 too).

    Example:
        >>> shape_as_value((2, 3)).tolist()
        [2, 3]
    """
    return _np.array(_dims(shape, "shape_as_value", "shape"), dtype=_np.int32)


class _RaggedFields(_NamedTuple):
    dot_dimension_numbers: tuple
    lhs_ragged_dimensions: tuple
    rhs_group_dimensions: tuple


class RaggedDotDimensionNumbers(_RaggedFields):
    """`ragged_dot_general`'s dimension numbers, as ``jax.lax.RaggedDotDimensionNumbers``:
    ``dot_dimension_numbers`` as `dot_general`'s, ``((lhs_contracting, rhs_contracting),
    (lhs_batch, rhs_batch))``; ``lhs_ragged_dimensions``, the one lhs axis cut into
    groups; ``rhs_group_dimensions``, rhs's axis of one slice per group (one where the
    ragged axis is a free axis of lhs, none otherwise).  Lists are kept as tuples.

    Example:
        >>> RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0], [0]).lhs_ragged_dimensions
        (0,)
    """
    __slots__ = ()

    def __new__(cls, dot_dimension_numbers, lhs_ragged_dimensions, rhs_group_dimensions):
        who = "RaggedDotDimensionNumbers"
        try:
            (lc, rc), (lb, rb) = dot_dimension_numbers
        except (TypeError, ValueError):
            raise TypeError(f"{who}: dot_dimension_numbers must be ((lhs_contracting, "
                            f"rhs_contracting), (lhs_batch, rhs_batch)), got "
                            f"{dot_dimension_numbers!r}") from None
        dims = tuple(tuple(_dims(d, who, "dot_dimension_numbers") for d in pair)
                     for pair in ((lc, rc), (lb, rb)))
        return super().__new__(cls, dims, _dims(lhs_ragged_dimensions, who,
                                                "lhs_ragged_dimensions"),
                               _dims(rhs_group_dimensions, who, "rhs_group_dimensions"))


def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None,
               group_offset=None, out_sharding=None):
    """The grouped matrix product of a mixture of experts, as ``jax.lax.ragged_dot``: the
    rows of `lhs` (m, k) fall in consecutive groups of ``group_sizes`` (g,) rows, and
    group j's rows are multiplied by ``rhs[j]`` (rhs: (g, k, n)); rows after the last
    group are 0.  Differentiable in lhs and rhs.  `ragged_dot_general` with
    ``RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0], [0])``.

    Example:
        >>> import numpy as np
        >>> x = np.arange(1.0, 5.0).reshape(4, 1)         # 4 tokens, 1 feature
        >>> experts = np.array([1.0, 10.0]).reshape(2, 1, 1)
        >>> ragged_dot(x, experts, np.array([1, 2])).ravel().tolist()
        [1.0, 20.0, 30.0, 0.0]
    """
    who = "ragged_dot"
    shapes = tuple(_wnp.shape(lhs)), tuple(_wnp.shape(rhs)), tuple(_wnp.shape(group_sizes))
    if tuple(_builtins.map(len, shapes)) != (2, 3, 1):
        raise TypeError(f"{who}: lhs (m, k), rhs (g, k, n) and group_sizes (g,) must have 2, "
                        f"3 and 1 axes, got shapes {shapes[0]}, {shapes[1]} and {shapes[2]}")
    dn = RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0], [0])
    return ragged_dot_general(lhs, rhs, group_sizes, dn, precision, preferred_element_type,
                              group_offset, out_sharding)


def ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers, precision=None,
                       preferred_element_type=None, group_offset=None, out_sharding=None):
    """`dot_general` with one axis of `lhs` cut into consecutive groups of
    ``group_sizes`` elements (`RaggedDotDimensionNumbers` says which), as
    ``jax.lax.ragged_dot_general``, in JAX's three modes:

    1. the ragged axis is a free axis of lhs: each group meets its own slice of rhs along
       rhs's group axis (``[b, m, k] x [g, b, k, n] -> [b, m, n]``); elements in no group
       give 0;
    2. it is a contracting axis: each group is contracted apart, and the result has the
       groups in front (``[b, m, k] x [b, k, n] -> [g, b, m, n]``);
    3. it is a batch axis: the result is `dot_general`'s.

    ``group_sizes`` is (g,), or has in front the sizes of lhs's batch axes and of its
    free (mode 1) or contracting (mode 2) axes before the ragged one, for sizes that
    differ along them.  Where the sizes have values the groups are slices, each one
    product; traced without values (`wg.jit`), a mask picks them.  Differentiable in lhs
    and rhs; negative sizes with values are refused.  ``group_offset`` is refused (as on
    JAX's CPU); ``precision`` and ``out_sharding`` are ignored.

    Example:
        >>> import numpy as np
        >>> dn = RaggedDotDimensionNumbers((([1], [0]), ([], [])), [1], [])  # mode 2
        >>> a, b = np.arange(6.0).reshape(1, 6), np.ones((6, 1))
        >>> ragged_dot_general(a, b, np.array([2, 4]), dn).ravel().tolist()  # 0+1, 2+...+5
        [1.0, 14.0]
    """
    who = "ragged_dot_general"
    _precision(precision, who)
    if group_offset is not None:
        raise NotImplementedError(f"{who}: group_offset is not supported (JAX's CPU "
                                  "implementation refuses it too)")
    dn = ragged_dot_dimension_numbers
    if not isinstance(dn, RaggedDotDimensionNumbers):
        try:
            dn = RaggedDotDimensionNumbers(*dn)
        except TypeError:
            raise TypeError(f"{who}: ragged_dot_dimension_numbers must be a "
                            f"RaggedDotDimensionNumbers, got {dn!r}") from None
    (lc, rc), (lb, rb) = dn.dot_dimension_numbers
    ls, rs = tuple(_wnp.shape(lhs)), tuple(_wnp.shape(rhs))
    _check_dot_axes(who, ls, rs, lc, rc, lb, rb)
    if len(dn.lhs_ragged_dimensions) != 1:
        raise TypeError(f"{who}: lhs must have exactly one ragged dimension, got "
                        f"{dn.lhs_ragged_dimensions}")
    ragged = dn.lhs_ragged_dimensions[0]
    if not 0 <= ragged < len(ls):
        raise TypeError(f"{who}: the lhs ragged dimension {ragged} is not an axis of lhs "
                        f"of shape {ls}")
    free = [d for d in range(len(ls)) if d not in lc and d not in lb]
    mode = 1 if ragged in free else 2 if ragged in lc else 3
    groups = dn.rhs_group_dimensions
    if mode == 1 and (len(groups) != 1 or not 0 <= groups[0] < len(rs)
                      or groups[0] in rc or groups[0] in rb):
        raise TypeError(f"{who}: a ragged free axis of lhs needs exactly one group axis of "
                        f"rhs (not contracting, not batch), got rhs_group_dimensions "
                        f"{groups} for rhs of shape {rs}")
    if mode != 1 and groups:
        raise TypeError(f"{who}: a ragged {'contracting' if mode == 2 else 'batch'} axis "
                        f"takes no rhs group dimension, got {groups}")
    gdtype, gshape = _wnp.result_type(group_sizes), tuple(_wnp.shape(group_sizes))
    if gdtype.kind not in "iu":
        raise TypeError(f"{who}: group_sizes must be integers, got {gdtype}")
    if not gshape:
        raise TypeError(f"{who}: group_sizes must have at least one axis, got a scalar")
    g = gshape[-1]
    if mode == 1 and rs[groups[0]] != g:
        raise TypeError(f"{who}: rhs's group axis {groups[0]} has {rs[groups[0]]} slices "
                        f"for {g} groups (rhs of shape {rs}, group_sizes of shape {gshape})")
    before = free if mode == 1 else list(lc) if mode == 2 else list(lb)
    prefix = ([] if mode == 3 else list(lb)) + before[:before.index(ragged)]
    expected = tuple(ls[d] for d in prefix) + (g,)
    if len(gshape) != 1 and gshape != expected:
        raise TypeError(f"{who}: group_sizes must have shape {expected} or ({g},) for lhs "
                        f"of shape {ls}, got {gshape}")
    known = _value(group_sizes)
    if known is not None and _np.any(_np.asarray(known) < 0):
        raise ValueError(f"{who}: group_sizes must not be negative, got {known}")
    dot = ((lc, rc), (lb, rb))
    if mode == 3:
        out = dot_general(lhs, rhs, dot)
    elif known is not None and len(gshape) == 1:
        out = _ragged_slices(lhs, rhs, _np.asarray(known), dot, ragged, mode, groups, free)
    else:
        out = _ragged_masked(lhs, rhs, group_sizes, dot, ragged, mode, groups, free, prefix)
    if preferred_element_type is not None:
        out = _wnp.astype(out, preferred_element_type)
    return out


def _check_dot_axes(who, ls, rs, lc, rc, lb, rb):
    for axes, n, side in ((lc + lb, len(ls), "lhs"), (rc + rb, len(rs), "rhs")):
        if any(not 0 <= a < n for a in axes) or len(set(axes)) != len(axes):
            raise TypeError(f"{who}: the contracting and batch axes {axes} of {side} must "
                            f"be distinct axes of its {n}")
    if len(lc) != len(rc) or len(lb) != len(rb) or any(
            ls[a] != rs[b] for a, b in zip(lc + lb, rc + rb)):
        raise TypeError(f"{who}: contracting and batch axes {lc + lb} of lhs and "
                        f"{rc + rb} of rhs must pair up with equal sizes, got shapes "
                        f"{ls} and {rs}")


def _ragged_slices(lhs, rhs, sizes, dot, ragged, mode, groups, free):
    """A ragged product whose groups are known slices: one `dot_general` for each."""
    (lc, rc), (lb, rb) = dot
    n = _wnp.shape(lhs)[ragged]
    ends = _np.minimum(_np.cumsum(sizes), n).tolist()
    starts = [0] + ends[:-1]
    dtype = _wnp.result_type(lhs, rhs)
    if mode == 2:
        rr = rc[lc.index(ragged)]
        shape = _dot_shape(_wnp.shape(lhs), _wnp.shape(rhs), dot)
        parts = [dot_general(slice_in_dim(lhs, s, e, axis=ragged),
                             slice_in_dim(rhs, s, e, axis=rr), dot)
                 if e > s else _np.zeros(shape, dtype) for s, e in zip(starts, ends)]
        return _wnp.stack(parts) if parts else _np.zeros((0,) + shape, dtype)
    gd = groups[0]
    down = lambda ds: tuple(d - (d > gd) for d in ds)       # noqa: E731 (rhs without gd)
    dot = ((lc, down(rc)), (lb, down(rb)))
    axis = len(lb) + free.index(ragged)                     # the ragged axis in the result
    pieces = [dot_general(slice_in_dim(lhs, s, e, axis=ragged), _wnp.take(rhs, j, axis=gd),
                          dot) for j, (s, e) in enumerate(zip(starts, ends)) if e > s]
    done = ends[-1] if ends else 0
    if done < n or not pieces:              # (rows after the last group: zeros)
        rs = tuple(_wnp.shape(rhs))
        shape = list(_dot_shape(_wnp.shape(lhs), rs[:gd] + rs[gd + 1:], dot))
        shape[axis] = n - done
        pieces.append(_np.zeros(shape, dtype))
    return pieces[0] if len(pieces) == 1 else _wnp.concatenate(pieces, axis=axis)


def _dot_shape(ls, rs, dot):
    """The shape `dot_general` gives operands of shapes ls and rs."""
    (lc, rc), (lb, rb) = dot
    return tuple(ls[d] for d in lb) + tuple(
        s for d, s in enumerate(ls) if d not in lc and d not in lb) + tuple(
        s for d, s in enumerate(rs) if d not in rc and d not in rb)


def _ragged_masked(lhs, rhs, group_sizes, dot, ragged, mode, groups, free, prefix):
    """A ragged product by a mask of which group each element of the ragged axis is in
    (``prefix`` axes, that axis, the groups), contracted with lhs and rhs in one einsum:
    for group sizes traced without values."""
    (lc, rc), (lb, rb) = dot
    ls, rs = _wnp.shape(lhs), _wnp.shape(rhs)
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    lhs_k = [next(letters) for _ in ls]
    rhs_k = [None] * len(rs)
    for a, b in zip(lc + lb, rc + rb):
        rhs_k[b] = lhs_k[a]
    group = next(letters)
    if mode == 1:
        rhs_k[groups[0]] = group
    rhs_k = [k or next(letters) for k in rhs_k]
    sizes = _wnp.astype(group_sizes, _np.int64)
    ends = _wnp.cumsum(sizes, axis=-1)
    place = _np.arange(ls[ragged]).reshape(-1, 1)
    inside = _wnp.logical_and(_wnp.less_equal(_wnp.expand_dims(ends - sizes, -2), place),
                              _wnp.less(place, _wnp.expand_dims(ends, -2)))
    mask = _wnp.astype(inside, _wnp.result_type(lhs, rhs))
    mask_k = ([lhs_k[d] for d in prefix] if _wnp.ndim(group_sizes) > 1 else []) + \
        [lhs_k[ragged], group]
    out_k = ([group] if mode == 2 else []) + [lhs_k[d] for d in lb] + \
        [lhs_k[d] for d in free] + [k for d, k in enumerate(rhs_k)
                                    if d not in rc and d not in rb and k != group]
    spec = f"{''.join(lhs_k)},{''.join(rhs_k)},{''.join(mask_k)}->{''.join(out_k)}"
    return _wnp.einsum(spec, lhs, rhs, mask)


def _approx_k(operand, k, reduction_dimension, aggregate_to_topk, largest, who):
    shape = tuple(_wnp.shape(operand))
    if not shape:
        raise TypeError(f"{who}: operand must have at least one axis, got a scalar")
    dtype = _wnp.result_type(operand)
    if dtype.kind != "f":
        raise TypeError(f"{who}: operand must be a float array, got {dtype}")
    axis = _axis(reduction_dimension, len(shape), who)
    k = _operator.index(k)
    if not 0 < k <= shape[axis]:
        raise ValueError(f"{who}: k={k} is outside 1..{shape[axis]} (axis {axis} of "
                         f"shape {shape})")
    key = _wnp.negative(operand) if largest else operand
    if k == 1 and aggregate_to_topk:
        # (JAX reduces for k = 1, and there the last of tied elements wins: the first of
        # the reversed axis, numbered from the end)
        first = slice_in_dim(_wnp.argsort(rev(key, (axis,)), axis=axis, kind="stable"), 0, 1,
                             axis=axis)
        order = _wnp.astype(shape[axis] - 1 - first, _np.int32)
    else:
        order = _wnp.argsort(key, axis=axis, kind="stable")
        if aggregate_to_topk:
            order = slice_in_dim(order, 0, k, axis=axis)
        order = _wnp.astype(order, _np.int32)
    return _wnp.take_along_axis(operand, order, axis=axis), order


def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
    """The `k` largest elements along `reduction_dimension`, largest first, and their
    indices (int32), as ``jax.lax.approx_max_k``, computed exactly, as JAX does on a CPU
    (`recall_target` and `reduction_input_size_override` change nothing).  Ties go in
    index order (``-0.0`` ties with ``0.0``), but for ``k=1`` the last of them, as JAX's;
    NaN counts as the smallest (JAX's place for it depends on where it is); with
    ``aggregate_to_topk=False`` the whole axis comes back sorted, as "at least k"
    approximate results.  Differentiable in the operand: the cotangent goes to the
    elements picked, as in `top_k`.

    Example:
        >>> import numpy as np
        >>> vals, idx = approx_max_k(np.array([[1.0, 4.0, 2.0, 4.0]]), 2)
        >>> vals.tolist(), idx.tolist()
        ([[4.0, 4.0]], [[1, 3]])
    """
    return _approx_k(operand, k, reduction_dimension, aggregate_to_topk, True,
                     "approx_max_k")


def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
    """The `k` smallest elements along `reduction_dimension`, smallest first, and their
    indices (int32), as ``jax.lax.approx_min_k``: `approx_max_k`'s order reversed (NaN
    counts as the largest), exact as on JAX's CPU, differentiable in the operand.

    Example:
        >>> import numpy as np
        >>> vals, idx = approx_min_k(np.array([[3.0, 1.0], [0.0, 2.0]]), 1,
        ...                          reduction_dimension=0)
        >>> vals.tolist(), idx.tolist()
        ([[0.0, 1.0]], [[1, 0]])
    """
    return _approx_k(operand, k, reduction_dimension, aggregate_to_topk, False,
                     "approx_min_k")


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape,
                               lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                               precision=None):
    """A locally connected ("unshared") convolution, as
    ``jax.lax.conv_general_dilated_local``: each output position has a kernel of its own.
    `rhs`'s spatial axes are the output's positions, and its I axis holds the input
    channels times the window (`filter_shape`, in rhs's spatial order), channel first, as
    `conv_general_dilated_patches` lays a patch out; O is the output's features.  The
    patches contracted with rhs at each position (one einsum), so it differentiates in
    both; 1-D and 2-D, any layout, as `conv_general_dilated`.

    Example:
        >>> import numpy as np
        >>> x = np.arange(4.0).reshape(1, 1, 4)                # (N, C, W): 0, 1, 2, 3
        >>> w = np.array([[[1.0, 1.0, 0.0], [1.0, -1.0, 1.0]]])  # (O, I, W): a column each
        >>> conv_general_dilated_local(x, w, (1,), "VALID", (2,)).tolist()
        [[[1.0, -1.0, 3.0]]]
    """
    who = "conv_general_dilated_local"
    _precision(precision, who)
    ls, rs = tuple(_wnp.shape(lhs)), tuple(_wnp.shape(rhs))
    dn = conv_dimension_numbers(ls, rs, dimension_numbers)
    filter_shape = _dims(filter_shape, who, "filter_shape")
    if len(filter_shape) != len(ls) - 2:
        raise ValueError(f"{who}: filter_shape {filter_shape} must give one size for each "
                         f"of the {len(ls) - 2} spatial axes of lhs of shape {ls}")
    patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding,
                                           lhs_dilation, rhs_dilation, dn)
    ps = tuple(_wnp.shape(patches))
    want = [None] * len(rs)
    for a, b in zip(dn.rhs_spec[1:], dn.out_spec[1:]):
        want[a] = ps[b]
    want[dn.rhs_spec[0]] = rs[dn.rhs_spec[0]]
    if tuple(want) != rs:
        raise ValueError(f"{who}: rhs must have shape {tuple(want)} (I = channels times the "
                         f"window {filter_shape}, one kernel for each output position), for "
                         f"lhs of shape {ls}; got {rs}")
    space = "xyzuvw"[:len(ls) - 2]
    p_k, r_k, o_k = [None] * len(ps), [None] * len(rs), [None] * len(ps)
    for spec, keys, first in ((dn.out_spec, p_k, "ni"), (dn.rhs_spec, r_k, "oi"),
                              (dn.out_spec, o_k, "no")):
        for a, key in zip(spec, first + space):
            keys[a] = key
    return _wnp.einsum(f"{''.join(p_k)},{''.join(r_k)}->{''.join(o_k)}", patches, rhs)


def _canonical_shapes(lhs_shape, rhs_shape, dimension_numbers, who):
    lhs_shape, rhs_shape = (_dims(s, who, n) for s, n in ((lhs_shape, "lhs_shape"),
                                                            (rhs_shape, "rhs_shape")))
    dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    return (tuple(lhs_shape[a] for a in dn.lhs_spec), tuple(rhs_shape[a] for a in dn.rhs_spec),
            dn.out_spec)


def _in_layout(shape, spec):
    """A shape in (batch, feature, spatial...) order placed in the layout `spec` gives."""
    out = [0] * len(shape)
    for s, a in zip(shape, spec):
        out[a] = s
    return tuple(out)


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
    """The shape of a convolution's output for lhs ``(N, C, ...)`` and rhs ``(O, I, ...)``
    (no dilation), `pads` ``(low, high)`` pairs or a padding string, as
    ``jax.lax.conv_shape_tuple``.

    Example:
        >>> conv_shape_tuple((2, 3, 10, 10), (4, 3, 3, 3), (1, 2), [(1, 1), (0, 0)])
        (2, 4, 10, 4)
    """
    who = "conv_shape_tuple"
    lhs_shape, rhs_shape = _dims(lhs_shape, who, "lhs_shape"), _dims(rhs_shape, who,
                                                                     "rhs_shape")
    k = len(lhs_shape) - 2
    if len(rhs_shape) != k + 2 or k < 0:
        raise TypeError(f"{who}: lhs and rhs must have one number of axes (at least 2), got "
                        f"shapes {lhs_shape} and {rhs_shape}")
    strides = _spatial(strides, k, who, "strides")
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    pads = [tuple(_dims(p, who, "pads")) for p in pads]
    if len(pads) != k or any(len(p) != 2 for p in pads):
        raise ValueError(f"{who}: pads {pads} must be one (low, high) pair for each of the "
                         f"{k} spatial axes")
    padded = [n + lo + hi for n, (lo, hi) in zip(lhs_shape[2:], pads)]
    if any(n < 0 for n in padded):
        raise ValueError(f"{who}: negative pads {pads} remove more than lhs's spatial "
                         f"sizes {lhs_shape[2:]}")
    groups = _operator.index(batch_group_count)
    if groups < 1 or lhs_shape[0] % groups:
        raise ValueError(f"{who}: batch_group_count {groups} must divide lhs's batch "
                         f"{lhs_shape[0]}")
    space = tuple(_builtins.max(0, (n - w) // s + 1)
                  for n, w, s in zip(padded, rhs_shape[2:], strides))
    return (lhs_shape[0] // groups, rhs_shape[0]) + space


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                             dimension_numbers):
    """The shape of `conv_general_dilated`'s output (no dilation) in the layout of
    `dimension_numbers` (as `conv_dimension_numbers` reads them), as
    ``jax.lax.conv_general_shape_tuple``.

    Example:
        >>> conv_general_shape_tuple((2, 10, 10, 3), (3, 3, 3, 4), (1, 2), "SAME",
        ...                          ("NHWC", "HWIO", "NHWC"))
        (2, 10, 5, 4)
    """
    lhs, rhs, out_spec = _canonical_shapes(lhs_shape, rhs_shape, dimension_numbers,
                                           "conv_general_shape_tuple")
    return _in_layout(conv_shape_tuple(lhs, rhs, window_strides, padding), out_spec)


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                               dimension_numbers):
    """The shape of `conv_transpose`'s output (no dilation; `padding` ``"SAME"``,
    ``"VALID"`` or the transposed convolution's ``(low, high)`` pairs), as
    ``jax.lax.conv_transpose_shape_tuple``.

    Example:
        >>> conv_transpose_shape_tuple((2, 10, 10, 3), (3, 3, 3, 4), (2, 2), "VALID",
        ...                            ("NHWC", "HWIO", "NHWC"))
        (2, 21, 21, 4)
    """
    who = "conv_transpose_shape_tuple"
    lhs, rhs, out_spec = _canonical_shapes(lhs_shape, rhs_shape, dimension_numbers, who)
    k = len(lhs) - 2
    strides = _spatial(window_strides, k, who, "window_strides")
    if isinstance(padding, str):
        kind = padding.upper()
        if kind not in ("SAME", "VALID"):
            raise ValueError(f"{who}: padding {padding!r} is not one of 'SAME', 'VALID' or "
                             "(low, high) pairs")
        padding = [_transpose_pads(w, s, kind) for w, s in zip(rhs[2:], strides)]
    pads = [tuple(_dims(p, who, "padding")) for p in padding]
    if len(pads) != k or any(len(p) != 2 for p in pads):
        raise ValueError(f"{who}: padding {padding!r} must be 'SAME', 'VALID' or one (low, "
                         f"high) pair for each of the {k} spatial axes")
    space = tuple((n - 1) * s + lo + hi - w + 2
                  for n, w, s, (lo, hi) in zip(lhs[2:], rhs[2:], strides, pads))
    return _in_layout((lhs[0], rhs[0]) + space, out_spec)


def conv_general_permutations(dimension_numbers):
    """The axis permutations ``(lhs, rhs, out)`` that put a convolution's operands and
    output in (batch, feature, spatial...) order, from `dimension_numbers` strings (or a
    `ConvDimensionNumbers`), as ``jax.lax.conv_general_permutations``.

    Example:
        >>> conv_general_permutations(("NHWC", "HWIO", "NHWC"))
        ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    """
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return tuple(tuple(s) for s in dimension_numbers)
    if not (isinstance(dimension_numbers, (tuple, list)) and len(dimension_numbers) == 3
            and all(isinstance(s, str) for s in dimension_numbers)):
        raise TypeError(f"conv_general_permutations: dimension_numbers must be three strings "
                        f"such as ('NCHW', 'OIHW', 'NCHW'), got {dimension_numbers!r}")
    n = len(dimension_numbers[0])
    return tuple(conv_dimension_numbers((1,) * n, (1,) * n, dimension_numbers))


def _float_operands(who, **operands):
    for name, x in operands.items():
        dtype = _wnp.result_type(x)
        if dtype.kind != "f":
            raise TypeError(f"{who}: {name} must be a float array, got {dtype}")
    return _wnp.result_type(*operands.values())


def igamma_grad_a(a, x):
    """∂P(a, x)/∂a, the derivative of the regularised incomplete gamma function `igamma`
    in its shape a, as ``jax.lax.igamma_grad_a``: wengert.scipy.special.gammainc's own
    partial (to a relative 1.5e-13), differentiable once more in a and in x (JAX's is
    not differentiable).  x = 0 and x = inf give 0, the limits (JAX: nan at inf); a <= 0
    and x < 0 give nan.

    Example:
        >>> print(f"{float(igamma_grad_a(1.0, 1.0)):.6f}")       # d/da P(a, 1) at a = 1
        -0.431730
    """
    from ..primitives.special import gammainc_da
    dtype = _float_operands("igamma_grad_a", a=a, x=x)
    return _wnp.astype(gammainc_da(a, x), dtype)


def random_gamma_grad(a, x):
    """The derivative in `a` of a Gamma(a, 1) draw `x` at a fixed value of its distribution
    function, ``-(∂P/∂a) / (∂P/∂x)``, JAX's implicit reparameterisation gradient, as
    ``jax.lax.random_gamma_grad`` (what `wengert.random.gamma` differentiates by).
    Differentiable once in a and x (JAX: forward mode only).  x = 0 gives 0; x < 0,
    x = inf and a <= 0 give nan, as JAX.

    Example:
        >>> print(f"{float(random_gamma_grad(1.0, 1.0)):.6f}")
        1.173563
    """
    from ..primitives.random import loggamma_grad
    dtype = _float_operands("random_gamma_grad", a=a, x=x)
    positive = _wnp.greater(x, 0)
    safe = _wnp.where(positive, x, 1.0)            # (log and its derivative stay finite)
    dx = safe * loggamma_grad(a, _wnp.log(safe))   # d log x/da, times x
    out = _wnp.where(positive, dx, _wnp.where(_wnp.equal(x, 0), 0.0, _np.nan))
    return _wnp.astype(out, dtype)


class RandomAlgorithm(_enum.IntEnum):
    """`rng_bit_generator`'s algorithms, as ``jax.lax.RandomAlgorithm`` (JAX's members and
    their names make one too).  All three draw from wengert's one generator here,
    Philox4x64 (`wengert.random`).

    Example:
        >>> RandomAlgorithm("RNG_PHILOX")
        <RandomAlgorithm.RNG_PHILOX: 2>
    """
    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2

    @classmethod
    def _missing_(cls, value):
        name = value if isinstance(value, str) else getattr(value, "name", None)
        return cls.__members__.get(name) if isinstance(name, str) else None


def rng_bit_generator(key, shape, dtype=_np.uint32, algorithm=RandomAlgorithm.RNG_DEFAULT, *,
                      out_sharding=None):
    """``(new_key, bits)``: random unsigned integers of `shape` and `dtype` read off
    `key`, and the key to draw from next, as ``jax.lax.rng_bit_generator`` (XLA's
    RngBitGenerator): a pure function of the key, ``uint32`` of shape (4,) or ``uint64``
    of shape (2,) as in JAX; the new key has the same form.  The key's first 64 bits pick
    a stream and the rest count along it (the new key counts one further), each step's
    bits drawn from ``wengert.random.fold_in`` of the two, so the numbers differ from
    JAX's (Philox4x64, not XLA's generators; every `algorithm` is this one).  Integers
    carry no derivative.

    Example:
        >>> import numpy as np
        >>> key = np.zeros(4, np.uint32)
        >>> key2, bits = rng_bit_generator(key, (3,), np.uint8)
        >>> key2.tolist(), bits.shape, bits.dtype
        ([0, 0, 1, 0], (3,), dtype('uint8'))
        >>> bool((rng_bit_generator(key, (3,), np.uint8)[1] == bits).all())   # a function
        True
    """
    from .. import random
    who = "rng_bit_generator"
    kdtype, kshape = _wnp.result_type(key), tuple(_wnp.shape(key))
    if (kdtype, kshape) not in ((_np.dtype(_np.uint32), (4,)), (_np.dtype(_np.uint64), (2,))):
        raise TypeError(f"{who}: key must be uint32 of shape (4,) or uint64 of shape (2,), "
                        f"got {kdtype} of shape {kshape}")
    dtype = _np.dtype(dtype)
    if dtype.kind != "u":
        raise TypeError(f"{who}: dtype must be an unsigned integer type, got {dtype}")
    RandomAlgorithm(algorithm)
    shape = _dims(shape, who, "shape")
    if any(d < 0 for d in shape):
        raise ValueError(f"{who}: shape {shape} has a negative dimension")
    u32, u64 = _np.dtype(_np.uint32), _np.dtype(_np.uint64)
    low, half = _np.uint64(0xFFFFFFFF), _np.uint64(32)

    def words(v):                   # a uint64 as its (low, high) uint32 words
        return (_wnp.astype(_wnp.bitwise_and(v, low), u32),
                _wnp.astype(_wnp.right_shift(v, half), u32))

    if kdtype == u32:
        stream = _wnp.stack([key[0], key[1]])
        count = _wnp.bitwise_or(_wnp.astype(key[2], u64),
                                _wnp.left_shift(_wnp.astype(key[3], u64), half))
    else:
        stream, count = _wnp.stack(words(key[0])), key[1]
    bits = random.bits(random.fold_in(stream, count), shape, dtype)
    count = _wnp.reshape(_wnp.reshape(count, (1,)) + _np.uint64(1), ())    # (wraps quietly)
    new_key = _wnp.stack([key[0], key[1], *words(count)]) if kdtype == u32 else \
        _wnp.stack([key[0], count])
    return new_key, bits


def rng_uniform(a, b, shape):
    """Numbers of `shape` drawn uniformly from ``[a, b)``, new ones at every call, as
    ``jax.lax.rng_uniform`` (XLA's RngUniform, a generator that keeps state): `a` and `b`
    are scalars of one float or integer dtype, which the result has.  Each call draws
    again, eagerly and in compiled code (`wg.jit`: each call of the compiled function),
    from one generator seeded when wengert is imported (the numbers differ from JAX's);
    under `wg.vmap` with shared `a` and `b` every example gets the same draw, as in JAX.
    For draws that a key reproduces, use `wengert.random`.  Float draws are
    differentiable in a and b (those of ``a + (b - a) u``; JAX: not differentiable).

    Example:
        >>> import numpy as np
        >>> x = rng_uniform(np.float32(-1.0), np.float32(1.0), (1000,))
        >>> x.dtype, bool((x >= -1).all() and (x < 1).all()), bool((x != x[::-1]).any())
        (dtype('float32'), True, True)
    """
    from ..primitives.bits import rng_uniform as draw
    who = "rng_uniform"
    shape = _dims(shape, who, "shape")
    if any(d < 0 for d in shape):
        raise ValueError(f"{who}: shape {shape} has a negative dimension")
    if _wnp.ndim(a) or _wnp.ndim(b):
        raise ValueError(f"{who}: a and b must be scalars, got shapes {_wnp.shape(a)} and "
                         f"{_wnp.shape(b)}")
    da, db = _wnp.result_type(a), _wnp.result_type(b)
    if da != db or da.kind not in "iuf":
        raise TypeError(f"{who}: a and b must have one float or integer dtype, got {da} and "
                        f"{db}")
    if da.kind in "iu":
        lo, hi = _value(a), _value(b)
        if lo is not None and hi is not None and not lo < hi:
            raise ValueError(f"{who}: integer draws need a < b, got {lo} and {hi}")
    graph = _current_graph()
    if graph is not None and type(a) is not Node and type(b) is not Node:
        a = graph.const(_np.asarray(a)[()])     # (a node: drawn when the graph runs)
    return draw(a, b, shape=shape)


def __getattr__(name):
    # (a name of jax.lax that is not here: an AttributeError that says so, hasattr works)
    raise AttributeError(f"wengert.lax has no {name!r}: JAX's jax.lax.{name} is not offered"
                         " (see docs/jax.md)")
