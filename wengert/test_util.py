"""JAX's ``jax.test_util.check_grads``: derivatives checked against central differences.

Example:
    >>> import numpy as np, wengert.numpy as jnp
    >>> from wengert.test_util import check_grads
    >>> check_grads(lambda x, y: jnp.sum(jnp.sin(x) * y), (np.ones(3), 2.0), order=2)
    >>> import wengert as wg
    >>> @wg.custom_jvp
    ... def double(x):
    ...     return 2.0 * x
    >>> double.defjvps(lambda t, ans, x: 3.0 * t)       # a wrong rule
    >>> check_grads(double, (1.0,), order=1)
    Traceback (most recent call last):
    ...
    AssertionError: check_grads: JVP of f ...
"""
from __future__ import annotations

import numpy as np

from .tree import flatten, unflatten

__all__ = ["check_grads"]

EPS = 1e-4


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    """Check f's derivatives at ``f(*args)`` up to `order`, as JAX's ``check_grads``: each
    along one random direction (so any size is cheap), forward mode (``"fwd"``) against a
    central difference of step `eps`, reverse mode (``"rev"``) by the dot-product test
    ``<ct, J t> = <Jᵀ ct, t>`` with J t the central difference; an order above one checks
    the JVP and the VJP of f in turn.  Tolerances default to JAX's: 1e-5 for float64,
    2e-3 for float32.  Arguments (pytrees) and results must be real.

    Raises:
        AssertionError: where a derivative does not match.
    """
    from .api import jvp, vjp
    bad = [m for m in modes if m not in ("fwd", "rev")]
    if bad:
        raise ValueError(f"check_grads: modes are 'fwd' and 'rev', got {bad}")
    rng = np.random.default_rng(0)
    eps = EPS if eps is None else eps
    # (a work list, not recursion: each order adds the JVP and the VJP of the one before)
    todo = [(f, tuple(args), order, "f")]
    while todo:
        fun, point, k, what = todo.pop()
        if "fwd" in modes:
            _check_jvp(fun, point, rng, eps, atol, rtol, f"JVP of {what}")
            if k > 1:
                # (the JVP along a random direction, not along the point itself, which
                # may be zero)
                leaves, tree = _floats(point, "an argument")
                direction = unflatten(tree, _random_like(leaves, rng))
                todo.append((lambda p, t, fun=fun: jvp(fun, p, t), (point, direction),
                             k - 1, f"JVP of {what}"))
        if "rev" in modes:
            _check_vjp(fun, point, rng, eps, atol, rtol, f"VJP of {what}")
            if k > 1:
                # (the pullback of a random cotangent, fixed: not of f's value, which may
                # be zero)
                out_leaves, out_tree = _floats(fun(*point), "f's result")
                ct = unflatten(out_tree, _random_like(out_leaves, rng))

                def f_vjp(*p, fun=fun, ct=ct):
                    return vjp(fun, *p)[1](ct)
                todo.append((f_vjp, point, k - 1, f"VJP of {what}"))


def _floats(tree, who):
    leaves, treedef = flatten(tree)
    leaves = [np.asarray(x) for x in leaves]
    for x in leaves:
        if x.dtype.kind == "c":
            raise TypeError(f"check_grads: {who} is complex; it checks real functions")
    return leaves, treedef


def _random_like(leaves, rng):
    return [rng.standard_normal(x.shape).astype(x.dtype) if x.dtype.kind == "f"
            else np.zeros(x.shape) for x in leaves]


def _numerical_jvp(fun, point, tangent, eps):
    leaves, tree = _floats(point, "an argument")

    def at(sign):
        moved = unflatten(tree, [x + sign * eps * t for x, t in zip(leaves, tangent)])
        return _floats(fun(*moved), "f's result")[0]
    return [(up - down) / (2 * eps) for up, down in zip(at(1), at(-1))]


def _tolerances(leaves, atol, rtol):
    single = any(x.dtype == np.float32 for x in leaves)
    default = 2e-3 if single else 1e-5
    return (default if atol is None else atol), (default if rtol is None else rtol)


def _check_jvp(fun, point, rng, eps, atol, rtol, what):
    from .api import jvp
    leaves, tree = _floats(point, "an argument")
    tangent = _random_like(leaves, rng)
    out, t_out = jvp(fun, point, unflatten(tree, tangent))
    expected = _numerical_jvp(fun, point, tangent, eps)
    got = _floats(t_out, "f's tangent")[0]
    atol, rtol = _tolerances(leaves, atol, rtol)
    for a, b in zip(got, expected):
        if not np.allclose(a, b, rtol=rtol, atol=atol):
            raise AssertionError(f"check_grads: {what} differs from its central difference: "
                                 f"{a} against {b} (atol {atol}, rtol {rtol})")


def _check_vjp(fun, point, rng, eps, atol, rtol, what):
    from .api import vjp
    leaves, tree = _floats(point, "an argument")
    tangent = _random_like(leaves, rng)
    out, pullback = vjp(fun, *point)
    out_leaves, out_tree = _floats(out, "f's result")
    ct = _random_like(out_leaves, rng)
    pulled = _floats(pullback(unflatten(out_tree, ct)), "a cotangent")[0]
    expected = sum(float(np.vdot(c, t)) for c, t in
                   zip(ct, _numerical_jvp(fun, point, tangent, eps)))
    got = sum(float(np.vdot(c, t)) for c, t in zip(pulled, tangent))
    atol, rtol = _tolerances(leaves, atol, rtol)
    if not np.isclose(got, expected, rtol=rtol, atol=atol):
        raise AssertionError(f"check_grads: {what}: <Jᵀct, t> = {got} where the central "
                             f"difference gives <ct, J t> = {expected} (atol {atol}, "
                             f"rtol {rtol})")
