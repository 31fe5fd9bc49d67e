"""``jax.experimental.jet.jet``: Taylor mode in JAX's convention, over `wg.taylor`'s
sweep (`wengert.taylor_mode.expand`).

``jet(fun, primals, series)`` pushes a truncated Taylor polynomial through fun: primals
are the curve's point, and series, one list of terms per primal, its higher terms.  By
default (``factorial_scaled=True``, JAX's) term k is the k-th derivative of the curve,
and so is term k of the result: ``jet(f, (x,), ([v, 0, 0],))`` gives f(x) and the first
three derivatives of t ↦ f(x + t·v).  With ``factorial_scaled=False`` the terms are the
Taylor coefficients themselves, as `wg.taylor` gives them.

Example:
    >>> import wengert.numpy as jnp
    >>> jet(jnp.exp, (0.0,), ([1.0, 0.0, 0.0],))        # e^t: every derivative 1
    (1.0, [1.0, 1.0, 1.0])
    >>> jet(lambda x: x ** 3, (2.0,), ([1.0, 0.0, 0.0],))    # 3x², 6x, 6 at 2
    (8.0, [12.0, 12.0, 6.0])
"""
from __future__ import annotations

import math

from ..tree import flatten, unflatten
from ..taylor_mode import expand

__all__ = ["jet"]


def jet(fun, primals, series, factorial_scaled=True):
    """``(fun(*primals), series_out)``: the Taylor polynomial of fun along the curve
    that `primals` and `series` describe, as ``jax.experimental.jet.jet``.

    Args:
        fun: the function, called as ``fun(*primals)``.
        primals: a tuple or list of arguments (pytrees).
        series: for each primal, a tuple or list of its terms, each a pytree of the
            primal's structure; every primal has the same number of terms, the degree.
        factorial_scaled: True (JAX's default): term k is a k-th derivative, in and out;
            False: term k is a Taylor coefficient (the k-th derivative over k!).

    Returns:
        ``(primals_out, series_out)``: fun's value, and a list of the degree's number of
        terms, each of fun's output structure.

    Example:
        >>> import wengert.numpy as jnp
        >>> f0, (f1, f2) = jet(jnp.sin, (0.5,), ((1.0, 0.0),))
        >>> bool(abs(f1 - jnp.cos(0.5)) < 1e-15 and abs(f2 + jnp.sin(0.5)) < 1e-15)
        True
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(series, (tuple, list)):
        raise TypeError(f"jet: primals and series must be tuples or lists, got "
                        f"{type(primals).__name__} and {type(series).__name__}")
    if len(primals) != len(series):
        raise ValueError(f"jet: one series per primal: got {len(primals)} primals and "
                         f"{len(series)} series")
    if not all(isinstance(s, (tuple, list)) for s in series):
        raise TypeError("jet: each primal's series must be a tuple or list of its terms")
    degrees = {len(s) for s in series}
    if len(degrees) > 1:
        raise ValueError(f"jet: every primal's series must have the same number of terms, "
                         f"got {[len(s) for s in series]}")
    order = degrees.pop() if degrees else 0
    scale = [math.factorial(k) if factorial_scaled else 1 for k in range(order + 1)]
    per_leaf = []
    for i, (primal, terms) in enumerate(zip(primals, series)):
        leaves, tree = flatten(primal)
        columns = [[] for _ in leaves]
        for k, term in enumerate(terms, start=1):
            term_leaves, term_tree = flatten(term)
            if term_tree != tree:
                raise ValueError(f"jet: term {k} of series {i} must have primal {i}'s "
                                 f"structure, {tree}; got {term_tree}")
            for column, c in zip(columns, term_leaves):
                column.append(c / scale[k] if factorial_scaled else c)
        per_leaf.extend(columns)
    coefficients, out_tree = expand(fun, tuple(primals), per_leaf, order, who="jet")
    primal_out = unflatten(out_tree, coefficients[0])
    series_out = [unflatten(out_tree, [c * scale[k] for c in coefficients[k]])
                  for k in range(1, order + 1)]
    return primal_out, series_out
