"""JAX's ``jax.example_libraries``: `stax`, a small neural-network library of layers as
``(init_fun, apply_fun)`` pairs, and `optimizers`, optimizers as ``(opt_init, opt_update,
get_params)`` triples, written with wengert so that JAX's tutorial programs run with their
imports changed (``from wengert.example_libraries import stax, optimizers``) and train.

Example:
    >>> import numpy as np, wengert as jax
    >>> from wengert.example_libraries import stax, optimizers
    >>> init_fun, apply_fun = stax.serial(stax.Dense(8), stax.Tanh, stax.Dense(1))
    >>> _, params = init_fun(jax.random.PRNGKey(0), (-1, 2))
    >>> x = np.random.default_rng(0).normal(size=(32, 2))
    >>> y = x[:, :1] * x[:, 1:]
    >>> loss = lambda params: np.mean((apply_fun(params, x) - y) ** 2)
    >>> opt_init, opt_update, get_params = optimizers.adam(0.02)
    >>> opt_state = opt_init(params)
    >>> step = jax.jit(lambda i, s: opt_update(i, jax.grad(loss)(get_params(s)), s))
    >>> before = loss(params)
    >>> for i in range(300):
    ...     opt_state = step(i, opt_state)
    >>> bool(loss(get_params(opt_state)) < 0.05 * before)
    True
"""
from . import optimizers, stax  # noqa: F401

__all__ = ["optimizers", "stax"]
