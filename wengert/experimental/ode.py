"""``jax.experimental.ode.odeint``: JAX's signature over `wengert.scipy.integrate.odeint`.

JAX's call differs from SciPy's in three ways, which this module translates: func's extra
arguments come positionally (``odeint(func, y0, t, a, b)``, not ``args=(a, b)``); the state
may be a pytree, and each leaf of the result gains a leading axis of ``len(t)`` (a scalar
y0 gives shape ``(len(t),)``, where SciPy's gives ``(len(t), 1)``); and `mxstep` and
`hmax` default to no limit.  The solver is SciPy's LSODA (JAX's is Dormand-Prince): the
same solution to the tolerances, and differentiable in y0, t and args to any order (by
adjoint and forward-sensitivity solves, docs/odes.md).

Example:
    >>> import numpy as np, wengert as wg
    >>> def decay(y, t, k):
    ...     return {"a": -k * y["a"], "b": k * y["a"]}
    >>> y0, t = {"a": 1.0, "b": 0.0}, np.array([0.0, 0.5, 1.0])
    >>> ys = odeint(decay, y0, t, 1.5)
    >>> ys["a"].shape, bool(np.allclose(ys["a"], np.exp(-1.5 * t), rtol=1e-7))
    ((3,), True)
    >>> dk = wg.grad(lambda k: odeint(decay, y0, t, k)["b"][-1])(1.5)   # d(1 - e^-k)/dk
    >>> bool(abs(dk - np.exp(-1.5)) < 1e-6)
    True
"""
from __future__ import annotations

import math

from .. import numpy as _wnp
from ..tree import flatten, ravel_pytree, unflatten

__all__ = ["odeint"]

# (SciPy's LSODA counts steps in a Fortran int: "no limit" is the largest it takes)
_NO_STEP_LIMIT = 2 ** 31 - 1


def odeint(func, y0, t, *args, rtol=1.4e-8, atol=1.4e-8, mxstep=math.inf, hmax=math.inf):
    """Integrate ``dy/dt = func(y, t, *args)`` from y(t[0]) = y0 and return y at each
    time of t, as ``jax.experimental.ode.odeint``: a pytree of y0's structure, each leaf
    with a new leading axis of ``len(t)``.

    Args:
        func: ``func(y, t, *args)``, returning a pytree of y's structure and shapes.
        y0: the initial state, an array or a pytree of arrays.
        t: the output times, increasing; t[0] is the initial time.
        *args: func's extra arguments (pytrees); the solve is differentiable in them.
        rtol, atol: the local error tolerances.
        mxstep: the most steps between two output times (default: no limit).
        hmax: the largest step (default: no limit).

    Example:
        >>> import numpy as np
        >>> ys = odeint(lambda y, t: -y, np.array([1.0, 2.0]), np.array([0.0, 1.0]))
        >>> ys.shape, bool(np.allclose(ys[1], np.exp(-1.0) * np.array([1.0, 2.0])))
        ((2, 2), True)
    """
    from ..scipy.integrate import odeint as _odeint
    if not callable(func):
        raise TypeError(f"odeint: func must be a function, got {type(func).__name__}")
    leaves, tree = flatten(y0)
    if not leaves:
        raise ValueError("odeint: y0 has no arrays (an empty pytree)")
    v0, unravel = ravel_pytree(y0)

    def flat_func(v, time, *a):
        dy = func(unravel(v), time, *a)
        dy_leaves, dy_tree = flatten(dy)
        if dy_tree != tree:
            raise ValueError(f"odeint: func must return a pytree of y0's structure, "
                             f"{tree}; it returned {dy_tree}")
        for got, want in zip(dy_leaves, leaves):
            if tuple(_wnp.shape(got)) != tuple(_wnp.shape(want)):
                raise ValueError(f"odeint: func returned a leaf of shape "
                                 f"{tuple(_wnp.shape(got))} for a leaf of y0 of shape "
                                 f"{tuple(_wnp.shape(want))}")
        return ravel_pytree(dy)[0]

    steps = _NO_STEP_LIMIT if mxstep == math.inf else int(mxstep)
    ys = _odeint(flat_func, v0, t, args=tuple(args), rtol=rtol, atol=atol, mxstep=steps,
                 hmax=0.0 if hmax == math.inf else hmax)
    n = _wnp.shape(ys)[0]
    out, start = [], 0
    for leaf in leaves:
        shape = tuple(_wnp.shape(leaf))
        size = math.prod(shape)
        out.append(_wnp.reshape(ys[:, start:start + size], (n,) + shape))
        start += size
    return unflatten(tree, out)
