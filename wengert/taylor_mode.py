"""Taylor mode: higher derivatives by truncated polynomial arithmetic (`wengert.ad.taylor`).

`taylor` expands t ↦ f(x + t·v) to order k: its Taylor coefficients y_0 = f(x), y_1, ...,
y_k, where y_j = (1/j!) dʲ/dtʲ f(x + t·v) at t = 0 (so y_j·j! is the j-th directional
derivative).  `derivatives` gives f, f', ..., f^(k) of a function of one variable.  Cost:
O(k²) per operation, against the growth of k nested `jvp`s.

Like every transformation, both record f (eagerly, so Python control flow on values
works), then sweep its graph; called inside another transformation, or under `wg.trace`,
the sweep builds graph nodes: the expansion can be differentiated again, and the Taylor
expansion of a traced graph is itself a graph.

Example:
    >>> import wengert as wg, wengert.math as wm
    >>> wg.taylor(wm.exp, 0.0, 1.0, order=4)          # 1, 1, 1/2, 1/6, 1/24
    [1.0, 1.0, 0.5, 0.16666666666666666, 0.041666666666666664]
    >>> wg.derivatives(lambda x: x ** 5, order=5)(1.0)
    [1.0, 5.0, 20.0, 60.0, 120.0, 120.0]
"""
from __future__ import annotations

import math

import numpy as np

from .ad.taylor import taylor as _sweep
from .api import _Call, _check_fun, _param_names, direction_leaves
from .graph.graph import aval
from .primitives.registry import shape_of
from .primitives.shape import broadcast_to
from .tree import LEAF, flatten, tree_map, unflatten

__all__ = ["taylor", "derivatives"]


def _check_order(order, who):
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 0:
        raise ValueError(f"{who}: order must be a non-negative integer, got {order!r}")
    return int(order)


def expand(f, primals, series, order, who="taylor"):
    """Series of f's outputs when its arguments follow the given series.

    Args:
        f: the function, called as ``f(*primals)``.
        primals: a tuple of arguments (pytrees).
        series: per leaf of `primals` (in flattening order), its coefficients
            ``[x_1, ..., x_order]`` (None for zero).
        order: the degree.

    Returns:
        ``(coefficients, out_tree)``: coefficients[j] is the flat list of the t^j
        coefficients of f's output leaves, j = 0..order.

    Example:
        >>> import wengert as wg
        >>> from wengert.taylor_mode import expand
        >>> coefs, tree = expand(lambda x: x * x, (3.0,), [[1.0, 0.0]], 2)
        >>> coefs                                       # (3 + t)² = 9 + 6t + t²
        [[9.0], [6.0], [1.0]]
    """
    call = _Call(f, tuple(primals), {}, range(len(primals)), who, _param_names(f),
                 forward_only=True)
    out_nodes, out_tree = call.output_nodes(call.out, who)
    plan = call.graph.between(call.inputs, out_nodes)
    if call.graph.complex:
        raise TypeError(f"{who}: Taylor mode is for real numbers, and this function has "
                        "complex values; use nested wg.jvp (docs/complex.md)")
    symbolic = call.symbolic
    per_output = _sweep(plan, call.inputs, series, out_nodes, order, symbolic)
    coefficients = [[call.finish(o) for o in out_nodes]]
    for j in range(1, order + 1):
        row = []
        for o, s in zip(out_nodes, per_output):
            c = None if s is None else s[j]
            if c is None:
                c = call.zeros(o)
            elif shape_of(c) != o.shape:         # a coefficient a constant broadcasts
                c = (broadcast_to(c, shape=o.shape) if symbolic
                     else np.broadcast_to(c, o.shape).copy())
            row.append(c)
        coefficients.append(row)
    call.done()                     # numbers out: an eager graph is done with
    return coefficients, out_tree


def taylor(f, x, v, order):
    """The Taylor coefficients of t ↦ f(x + t·v) at t = 0, up to t^order.

    Args:
        f: a function of one argument (a float, array, or pytree of them).
        x: the point; v: the direction, with x's structure and shapes.
        order: the degree k.

    Returns:
        A list ``[y_0, y_1, ..., y_k]`` of pytrees shaped like f's output, with
        f(x + t·v) = y_0 + y_1·t + ... + y_k·t^k + O(t^(k+1)).  These are *coefficients*:
        the j-th derivative along v is j!·y_j (`derivatives` returns derivatives).

    Example:
        >>> import wengert as wg, wengert.math as wm
        >>> wg.taylor(lambda x: 1 / (1 - x), 0.0, 1.0, order=4)  # geometric series
        [1.0, 1.0, 1.0, 1.0, 1.0]
        >>> f = lambda p: wm.sin(p[0]) * p[1]                   # along a direction in R²
        >>> [round(c, 6) for c in wg.taylor(f, (0.0, 2.0), (1.0, 0.0), order=3)]
        [0.0, 2.0, 0.0, -0.333333]
    """
    _check_fun(f, "taylor")
    order = _check_order(order, "taylor")
    series = [[b] + [None] * (order - 1) if order else []
              for b in direction_leaves(x, v, "the point", "direction", "taylor")]
    coefficients, out_tree = expand(f, (x,), series, order)
    return [unflatten(out_tree, row) for row in coefficients]


def derivatives(f, order):
    """f, f', f'', ..., f^(k) of a function of one variable, by Taylor mode.

    Args:
        f: a scalar function of one float (elementwise functions of an array work too:
            each element gets its own derivatives).
        order: the highest derivative k.

    Returns:
        A function of x returning the list ``[f(x), f'(x), ..., f^(k)(x)]``.

    Example:
        >>> import wengert as wg, wengert.math as wm
        >>> wg.derivatives(wm.exp, order=3)(0.0)
        [1.0, 1.0, 1.0, 1.0]
        >>> wg.derivatives(lambda x: x ** 3 - 2 * x, order=3)(2.0)
        [4.0, 10.0, 12.0, 6.0]
    """
    _check_fun(f, "derivatives")
    order = _check_order(order, "derivatives")

    def derivatives_f(x):
        if flatten(x)[1].kind != LEAF:
            raise TypeError(f"derivatives: x is a {type(x).__name__}; it takes a number or an "
                            "array (f of one variable, or elementwise); for a direction in a "
                            "pytree use wg.taylor(f, x, direction, order)")
        # (a direction of x's precision: float32 in, float32 derivatives out)
        shape, dtype = aval(x)
        one = 1.0 if shape == () else np.ones(shape, dtype if dtype.kind in "fc" else None)
        coefficients = taylor(f, x, one, order)
        out = [coefficients[0]]
        for j in range(1, order + 1):
            scale = float(math.factorial(j))
            out.append(tree_map(lambda c: c if scale == 1.0 else c * scale, coefficients[j]))
        return out

    return derivatives_f
