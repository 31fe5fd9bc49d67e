"""JAX's ``jax.example_libraries.optimizers``: gradient-descent optimizers as triples of
functions, ``opt_init, opt_update, get_params = adam(1e-3)``.

``opt_init(params)`` makes an optimizer state from a pytree of parameters,
``opt_update(i, grads, opt_state)`` takes step number i (counted from 0) and a pytree of
gradients shaped like the parameters to the next state, and ``get_params(opt_state)``
reads the parameters back.  The state is an `OptimizerState`, a pytree of arrays (the
per-parameter states, flattened) with the two structures as auxiliary data, so it passes
through ``wg.jit``, ``wg.grad`` and ``wg.vmap`` as JAX's does: the step of JAX's
tutorials, ``@jit def update(i, opt_state, batch)``, compiles once.

Each optimizer is written for one array (`optimizer` lifts it to pytrees) with
``wengert.numpy``, so its arithmetic is JAX's, step for step, and is differentiable: the
gradient of a loss after some steps with respect to the step size (a meta-gradient) is
``wg.grad`` of the loop.  The step sizes are numbers or schedules, functions of i
(`exponential_decay`, `piecewise_constant`, ...).

Example:
    >>> import numpy as np, wengert as jax
    >>> from wengert.example_libraries import optimizers
    >>> loss = lambda p: np.sum((p["w"] - 3.0) ** 2)
    >>> opt_init, opt_update, get_params = optimizers.adam(0.1)
    >>> opt_state = opt_init({"w": np.zeros(2)})
    >>> @jax.jit
    ... def step(i, opt_state):
    ...     return opt_update(i, jax.grad(loss)(get_params(opt_state)), opt_state)
    >>> for i in range(300):
    ...     opt_state = step(i, opt_state)
    >>> get_params(opt_state)["w"].round(4)
    array([3., 3.])
"""
from __future__ import annotations

import collections
import functools
import typing

import numpy as _np

from .. import numpy as wnp
from .. import tree as _tree

__all__ = ["OptimizerState", "Optimizer", "optimizer", "sgd", "momentum", "nesterov",
           "adagrad", "rmsprop", "rmsprop_momentum", "adam", "adamax", "sm3", "constant",
           "exponential_decay", "inverse_time_decay", "polynomial_decay",
           "piecewise_constant", "make_schedule", "l2_norm", "clip_grads", "JoinPoint",
           "unpack_optimizer_state", "pack_optimizer_state"]


# The state of a pytree of parameters: the states of its leaves, each flattened to a list
# of arrays (packed_state, a tuple of those lists), the parameters' structure (tree_def)
# and each leaf state's (subtree_defs).  Only packed_state holds leaves; the structures
# are auxiliary data, compared by `==` when a compiled step is called again.
OptimizerState = collections.namedtuple("OptimizerState",
                                        ["packed_state", "tree_def", "subtree_defs"])
OptimizerState.__doc__ = """An optimizer's state, as JAX's: ``(packed_state, tree_def,
subtree_defs)``, a pytree whose leaves are the arrays of ``packed_state`` (the flattened
state of each parameter) and whose structures are auxiliary data.

Example:
    >>> import numpy as np
    >>> from wengert.example_libraries import optimizers
    >>> from wengert.tree import flatten
    >>> state = optimizers.momentum(0.1, 0.9)[0]({"w": np.ones(2), "b": 0.5})
    >>> len(flatten(state)[0])           # each parameter and its velocity
    4
"""
_tree.register_pytree_node(
    OptimizerState,
    lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], aux[0], aux[1]))


class Optimizer(typing.NamedTuple):
    """The triple an optimizer constructor returns: ``(init_fn, update_fn, params_fn)``,
    so that ``opt_init, opt_update, get_params = adam(1e-3)`` unpacks it.

    Example:
        >>> from wengert.example_libraries import optimizers
        >>> opt = optimizers.sgd(0.1)
        >>> opt.params_fn(opt.update_fn(0, 2.0, opt.init_fn(1.0)))
        0.8
    """
    init_fn: typing.Callable
    update_fn: typing.Callable
    params_fn: typing.Callable


def _flat_states(states):
    """(tuple of each state's leaves, tuple of each state's structure)."""
    pairs = [_tree.flatten(s) for s in states]
    return tuple(leaves for leaves, _ in pairs), tuple(d for _, d in pairs)


def _unpacked(opt_state, who):
    if not isinstance(opt_state, OptimizerState):
        raise TypeError(f"{who}: opt_state must be the OptimizerState that the optimizer's "
                        f"init function made (or its update returned), got "
                        f"{type(opt_state).__name__}")
    return opt_state


def _check_shapes(grad_tree, grads, params, who):
    """A gradient of another shape than its parameter would broadcast into a wrong step:
    name the first such leaf by its key path."""
    for k, (g, p) in enumerate(zip(grads, params)):
        if wnp.shape(g) != wnp.shape(p):
            path = _tree.keystr(_tree.tree_flatten_with_path(grad_tree)[0][k][0])
            raise ValueError(f"{who}: the gradient at {path or 'the root'} has shape "
                             f"{wnp.shape(g)}, its parameter {wnp.shape(p)}")


def optimizer(opt_maker):
    """Lift an optimizer written for one array to pytrees of arrays, as JAX's decorator:
    `opt_maker` returns ``(init, update, get_params)`` for one array (``init(x0)`` makes
    its state, any pytree of arrays; ``update(i, g, state)`` the next; ``get_params(state)``
    the array), and the decorated constructor returns an `Optimizer` whose functions take
    whole pytrees of parameters and gradients and an `OptimizerState`.

    Example:
        >>> import numpy as np
        >>> from wengert.example_libraries.optimizers import optimizer
        >>> @optimizer
        ... def sign_descent(step_size):
        ...     return (lambda x0: x0, lambda i, g, x: x - step_size * np.sign(g),
        ...             lambda x: x)
        >>> opt_init, opt_update, get_params = sign_descent(0.5)
        >>> state = opt_update(0, {"a": np.array([2.0, -3.0])}, opt_init({"a": np.zeros(2)}))
        >>> get_params(state)["a"].tolist()
        [-0.5, 0.5]
    """
    name = getattr(opt_maker, "__name__", "optimizer")

    @functools.wraps(opt_maker)
    def tree_opt_maker(*args, **kwargs):
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree):
            leaves, tree_def = _tree.flatten(x0_tree)
            packed, subtree_defs = _flat_states([init(x0) for x0 in leaves])
            return OptimizerState(packed, tree_def, subtree_defs)

        @functools.wraps(update)
        def tree_update(i, grad_tree, opt_state):
            who = f"{name}'s update"
            packed, tree_def, subtree_defs = _unpacked(opt_state, who)
            grads, grad_def = _tree.flatten(grad_tree)
            if grad_def != tree_def:
                raise TypeError(f"{who}: the gradients have structure {grad_def}, the "
                                f"parameters the state was made from {tree_def}")
            states = [_tree.unflatten(d, s) for d, s in zip(subtree_defs, packed)]
            _check_shapes(grad_tree, grads, [get_params(s) for s in states], who)
            new_packed, new_defs = _flat_states(
                [update(i, g, s) for g, s in zip(grads, states)])
            for before, after in zip(subtree_defs, new_defs):
                if before != after:
                    raise TypeError(f"{who}: the update made a state of structure {after} "
                                    f"from one of structure {before}; it must keep it")
            return OptimizerState(new_packed, tree_def, subtree_defs)

        @functools.wraps(get_params)
        def tree_get_params(opt_state):
            packed, tree_def, subtree_defs = _unpacked(opt_state, f"{name}'s get_params")
            return _tree.unflatten(tree_def, [get_params(_tree.unflatten(d, s))
                                              for d, s in zip(subtree_defs, packed)])

        return Optimizer(tree_init, tree_update, tree_get_params)

    return tree_opt_maker


# ---- the optimizers ------------------------------------------------------------------------
# Each is JAX's arithmetic in JAX's order (float64 agrees to rounding, step for step).
# `a = a + b`, never `a += b`: a state may be a NumPy array another state still holds.

def _inverse_sqrt(s):
    """1/sqrt(s) where s > 0 and 0 elsewhere, with no division by zero evaluated (so no
    warning, and a finite derivative) where s is 0."""
    positive = s > 0
    return wnp.where(positive, 1.0 / wnp.sqrt(wnp.where(positive, s, 1.0)), 0.0)


def _params(state):
    return state[0]


@optimizer
def sgd(step_size):
    """Stochastic gradient descent, ``x - step_size(i) * g`` (JAX's ``optimizers.sgd``);
    `step_size` a number or a schedule (a function of the step number).

    Example:
        >>> from wengert.example_libraries import optimizers
        >>> opt_init, opt_update, get_params = optimizers.sgd(0.1)
        >>> get_params(opt_update(0, [2.0], opt_init([1.0])))
        [0.8]
    """
    step_size = make_schedule(step_size)
    return Optimizer(lambda x0: x0, lambda i, g, x: x - step_size(i) * g, lambda x: x)


@optimizer
def momentum(step_size, mass):
    """Gradient descent with momentum (JAX's ``optimizers.momentum``): the velocity
    ``v = mass * v + g`` and the step ``x - step_size(i) * v``.

    Example:
        >>> from wengert.example_libraries import optimizers
        >>> opt_init, opt_update, get_params = optimizers.momentum(0.1, mass=0.9)
        >>> state = opt_init(1.0)
        >>> for i in range(2):
        ...     state = opt_update(i, 1.0, state)
        >>> round(float(get_params(state)), 6)        # 1 - 0.1 * (1 + 1.9)
        0.71
    """
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity

    return (lambda x0: (x0, wnp.zeros_like(x0))), update, _params


@optimizer
def nesterov(step_size, mass):
    """Gradient descent with Nesterov's momentum (JAX's ``optimizers.nesterov``): the
    velocity ``v = mass * v + g`` and the step ``x - step_size(i) * (mass * v + g)``.

    Example:
        >>> from wengert.example_libraries import optimizers
        >>> opt_init, opt_update, get_params = optimizers.nesterov(0.1, mass=0.9)
        >>> round(float(get_params(opt_update(0, 1.0, opt_init(1.0)))), 6)   # 1 - 0.1 * 1.9
        0.81
    """
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity

    return (lambda x0: (x0, wnp.zeros_like(x0))), update, _params


@optimizer
def adagrad(step_size, momentum=0.9):
    """Adagrad (Duchi, Hazan and Singer, 2011) with momentum, as JAX's
    ``optimizers.adagrad``: the squared gradients summed, ``G = G + g²``, and
    ``m = (1 - momentum) g / sqrt(G) + momentum * m`` (0 where G is 0), ``x - step_size(i) * m``.

    Example:
        >>> from wengert.example_libraries import optimizers
        >>> opt_init, opt_update, get_params = optimizers.adagrad(1.0, momentum=0.0)
        >>> float(get_params(opt_update(0, -4.0, opt_init(0.0))))    # a unit step
        1.0
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, wnp.zeros_like(x0), wnp.zeros_like(x0)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + wnp.square(g)
        m = (1.0 - momentum) * (g * _inverse_sqrt(g_sq)) + momentum * m
        return x - step_size(i) * m, g_sq, m

    return init, update, _params


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
    """RMSProp (JAX's ``optimizers.rmsprop``): the mean square ``a = gamma a + (1 - gamma)
    g²`` and the step ``x - step_size(i) * g / sqrt(a + eps)``.

    Example:
        >>> from wengert.example_libraries import optimizers
        >>> opt_init, opt_update, get_params = optimizers.rmsprop(0.1, gamma=0.75, eps=0.0)
        >>> round(float(get_params(opt_update(0, 3.0, opt_init(0.0)))), 6)   # -0.1 * 3 / 1.5
        -0.2
    """
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, avg_sq_grad = state
        avg_sq_grad = avg_sq_grad * gamma + wnp.square(g) * (1.0 - gamma)
        return x - step_size(i) * g / wnp.sqrt(avg_sq_grad + eps), avg_sq_grad

    return (lambda x0: (x0, wnp.zeros_like(x0))), update, _params


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
    """RMSProp with momentum (JAX's ``optimizers.rmsprop_momentum``): as `rmsprop`, with the
    step ``m = momentum * m + step_size(i) * g / sqrt(a + eps)`` taken as ``x - m``.

    Example:
        >>> from wengert.example_libraries import optimizers
        >>> opt_init, opt_update, get_params = optimizers.rmsprop_momentum(0.1, 0.75, 0.0)
        >>> state = opt_update(0, 3.0, opt_init(0.0))
        >>> round(float(get_params(state)), 6)
        -0.2
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, wnp.zeros_like(x0), wnp.zeros_like(x0)

    def update(i, g, state):
        x, avg_sq_grad, mom = state
        avg_sq_grad = avg_sq_grad * gamma + wnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + step_size(i) * g / wnp.sqrt(avg_sq_grad + eps)
        return x - mom, avg_sq_grad, mom

    return init, update, _params


def _power_of(b, like, i):
    """b ** (i + 1) in the dtype of the state, as JAX's bias corrections compute it."""
    return _np.asarray(b, dtype=wnp.result_type(like)) ** (i + 1)


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adam (Kingma and Ba, 2015; JAX's ``optimizers.adam``): the moments ``m = (1 - b1) g
    + b1 m`` and ``v = (1 - b2) g² + b2 v``, bias-corrected by ``1 - b ** (i + 1)``, and the
    step ``x - step_size(i) * mhat / (sqrt(vhat) + eps)``.

    Example:
        >>> from wengert.example_libraries import optimizers
        >>> opt_init, opt_update, get_params = optimizers.adam(0.01)
        >>> round(float(get_params(opt_update(0, 5.0, opt_init(1.0)))), 6)   # one step_size
        0.99
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, wnp.zeros_like(x0), wnp.zeros_like(x0)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * wnp.square(g) + b2 * v
        mhat = m / (1 - _power_of(b1, m, i))
        vhat = v / (1 - _power_of(b2, m, i))
        return x - step_size(i) * mhat / (wnp.sqrt(vhat) + eps), m, v

    return init, update, _params


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """AdaMax, Adam with the infinity norm (JAX's ``optimizers.adamax``): ``m = (1 - b1) g
    + b1 m``, ``u = max(b2 u, |g|)`` and the step ``x - step_size(i) / (1 - b1 ** (i + 1))
    * m / (u + eps)``.

    Example:
        >>> from wengert.example_libraries import optimizers
        >>> opt_init, opt_update, get_params = optimizers.adamax(0.01)
        >>> round(float(get_params(opt_update(0, -5.0, opt_init(1.0)))), 6)
        1.01
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, wnp.zeros_like(x0), wnp.zeros_like(x0)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = wnp.maximum(b2 * u, wnp.abs(g))
        x = x - (step_size(i) / (1 - _power_of(b1, m, i))) * m / (u + eps)
        return x, m, u

    return init, update, _params


@optimizer
def sm3(step_size, momentum=0.9):
    """SM3 (Anil, Gupta, Koren and Singer, 2019; JAX's ``optimizers.sm3``), Adagrad whose
    sum of squared gradients is kept as one vector per axis of each parameter: the sum
    at an element is bounded by the least of its vectors' entries, and each vector keeps
    the greatest such sum over the other axes.

    The state is ``(x, m, vs)``, x in its own shape (JAX's state also holds a scalar as
    shape (1,) and the shape as ints); the numbers are JAX's.

    Example:
        >>> import numpy as np
        >>> from wengert.example_libraries import optimizers
        >>> opt_init, opt_update, get_params = optimizers.sm3(1.0, momentum=0.0)
        >>> state = opt_update(0, np.array([[3.0, -4.0]]), opt_init(np.zeros((1, 2))))
        >>> get_params(state).tolist()           # -g / sqrt(g²): unit steps
        [[-1.0, 1.0]]
        >>> [v.tolist() for v in state.packed_state[0][2:]]    # a row's and each column's
        [[16.0], [9.0, 16.0]]
    """
    step_size = make_schedule(step_size)

    def init(x0):
        shape = wnp.shape(x0)
        dtype = wnp.result_type(x0)
        vs = [_np.zeros(n, dtype) for n in shape] if shape else [_np.zeros((), dtype)]
        return x0, wnp.zeros_like(x0), vs

    def update(i, g, state):
        x, m, vs = state
        n = wnp.ndim(g)
        if n == 0:
            accum = vs[0] + wnp.square(g)
            vs = [accum]
        else:
            bounds = [wnp.reshape(v, tuple(-1 if k == j else 1 for k in range(n)))
                      for j, v in enumerate(vs)]
            accum = functools.reduce(wnp.minimum, bounds) + wnp.square(g)
            vs = [accum if n == 1 else
                  wnp.max(accum, axis=tuple(k for k in range(n) if k != j))
                  for j in range(n)]
        m = (1.0 - momentum) * (g * _inverse_sqrt(accum)) + momentum * m
        return x - step_size(i) * m, m, vs

    return init, update, _params


# ---- step-size schedules -------------------------------------------------------------------

def constant(step_size):
    """The schedule that is `step_size` at every step.

    Example:
        >>> from wengert.example_libraries import optimizers
        >>> optimizers.constant(0.1)(1000)
        0.1
    """
    def schedule(i):
        return step_size
    return schedule


def exponential_decay(step_size, decay_steps, decay_rate):
    """``step_size * decay_rate ** (i / decay_steps)``: `decay_rate` times smaller every
    `decay_steps` steps, smoothly.

    Example:
        >>> from wengert.example_libraries import optimizers
        >>> round(optimizers.exponential_decay(1.0, 100, 0.5)(200), 12)
        0.25
    """
    def schedule(i):
        return step_size * decay_rate ** (i / decay_steps)
    return schedule


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False):
    """``step_size / (1 + decay_rate * i / decay_steps)``; with ``staircase=True`` the
    quotient ``i / decay_steps`` rounded down, so that it changes every `decay_steps`.

    Example:
        >>> from wengert.example_libraries import optimizers
        >>> optimizers.inverse_time_decay(1.0, 10, 1.0)(15)
        0.4
        >>> float(optimizers.inverse_time_decay(1.0, 10, 1.0, staircase=True)(15))
        0.5
    """
    if staircase:
        def schedule(i):
            return step_size / (1 + decay_rate * wnp.floor(i / decay_steps))
    else:
        def schedule(i):
            return step_size / (1 + decay_rate * i / decay_steps)
    return schedule


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0):
    """From `step_size` to `final_step_size` over `decay_steps` steps along ``(1 - i /
    decay_steps) ** power``, then `final_step_size`.

    Example:
        >>> from wengert.example_libraries import optimizers
        >>> schedule = optimizers.polynomial_decay(1.0, 10, 0.1)
        >>> [round(float(schedule(i)), 6) for i in (0, 5, 10, 20)]
        [1.0, 0.55, 0.1, 0.1]
    """
    def schedule(step_num):
        step_num = wnp.minimum(step_num, decay_steps)
        step_mult = (1 - step_num / decay_steps) ** power
        return step_mult * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries, values):
    """``values[k]`` for steps i with ``boundaries[k-1] < i <= boundaries[k]``: one value
    more than there are boundaries.  The step may be traced without a value (a compiled
    update): the value is then looked up on the graph.

    Example:
        >>> from wengert.example_libraries import optimizers
        >>> schedule = optimizers.piecewise_constant([100, 200], [1.0, 0.1, 0.01])
        >>> [float(schedule(i)) for i in (0, 100, 101, 500)]
        [1.0, 1.0, 0.1, 0.01]
    """
    boundaries = _np.array(boundaries)
    values = _np.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError(f"piecewise_constant: boundaries and values must be sequences, got "
                         f"shapes {boundaries.shape} and {values.shape}")
    if boundaries.shape[0] != values.shape[0] - 1:
        raise ValueError(f"piecewise_constant: there must be one value more than there are "
                         f"boundaries, got {boundaries.shape[0]} boundaries and "
                         f"{values.shape[0]} values")

    def schedule(i):
        return wnp.take(values, wnp.sum(i > boundaries))
    return schedule


def make_schedule(scalar_or_schedule):
    """A schedule from a step size: a function of the step number is one already, a number
    becomes `constant`; anything else is a TypeError.

    Example:
        >>> from wengert.example_libraries import optimizers
        >>> optimizers.make_schedule(0.5)(7), optimizers.make_schedule(lambda i: 1 / i)(4)
        (0.5, 0.25)
    """
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    try:
        scalar = wnp.ndim(scalar_or_schedule) == 0
    except (TypeError, ValueError):
        scalar = False
    if scalar and not isinstance(scalar_or_schedule, (str, bytes)):
        return constant(scalar_or_schedule)
    raise TypeError(f"make_schedule: the step size must be a number or a function of the "
                    f"step number, got {type(scalar_or_schedule).__name__} "
                    f"{scalar_or_schedule!r:.60}")


# ---- utilities ----------------------------------------------------------------------------

def l2_norm(tree):
    """The Euclidean norm of all the leaves of a pytree together (for weight decay and
    gradient clipping).

    Example:
        >>> import numpy as np
        >>> from wengert.example_libraries import optimizers
        >>> float(optimizers.l2_norm({"a": np.array([3.0]), "b": (4.0,)}))
        5.0
    """
    leaves, _ = _tree.flatten(tree)
    return wnp.sqrt(sum(wnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree, max_norm):
    """The gradients scaled together so that their `l2_norm` is at most `max_norm`
    (unchanged where it is less).

    Example:
        >>> import numpy as np
        >>> from wengert.example_libraries import optimizers
        >>> optimizers.clip_grads({"a": np.array([3.0, 4.0])}, 1.0)["a"].tolist()
        [0.6000000000000001, 0.8]
    """
    norm = l2_norm(grad_tree)
    return _tree.tree_map(lambda g: wnp.where(norm < max_norm, g, g * (max_norm / norm)),
                          grad_tree)


# ---- saving and restoring a state ---------------------------------------------------------

class JoinPoint:
    """A leaf of the parameters' structure holding that parameter's state, in the pytree
    `unpack_optimizer_state` makes: one pytree of plain containers (which pickles) in place
    of the two structures an `OptimizerState` keeps.

    Example:
        >>> from wengert.example_libraries.optimizers import JoinPoint
        >>> list(JoinPoint((1.0, 0.0)))
        [(1.0, 0.0)]
    """

    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):         # (JAX's JoinPoint iterates over its one subtree too)
        yield self.subtree

    def __repr__(self):
        return f"JoinPoint({self.subtree!r})"


def unpack_optimizer_state(opt_state):
    """The state as a pytree of the parameters' structure whose leaves are `JoinPoint`s,
    each holding its parameter's state: for saving (pickling) a state.

    Example:
        >>> import numpy as np
        >>> from wengert.example_libraries import optimizers
        >>> opt_init, _, _ = optimizers.momentum(0.1, 0.9)
        >>> optimizers.unpack_optimizer_state(opt_init({"w": 1.0}))
        {'w': JoinPoint((1.0, array(0.)))}
    """
    packed, tree_def, subtree_defs = _unpacked(opt_state, "unpack_optimizer_state")
    return _tree.unflatten(tree_def, [JoinPoint(_tree.unflatten(d, s))
                                      for d, s in zip(subtree_defs, packed)])


def pack_optimizer_state(marked_pytree):
    """The `OptimizerState` that `unpack_optimizer_state` unpacked: its inverse, for
    restoring a saved state.

    Example:
        >>> import pickle, numpy as np
        >>> from wengert.example_libraries import optimizers
        >>> opt_init, opt_update, get_params = optimizers.adam(0.1)
        >>> state = opt_update(0, {"w": np.ones(2)}, opt_init({"w": np.zeros(2)}))
        >>> saved = pickle.dumps(optimizers.unpack_optimizer_state(state))
        >>> restored = optimizers.pack_optimizer_state(pickle.loads(saved))
        >>> get_params(restored)["w"].round(6).tolist()
        [-0.1, -0.1]
    """
    marks, tree_def = _tree.flatten(marked_pytree)
    for k, mark in enumerate(marks):
        if not isinstance(mark, JoinPoint):
            raise TypeError(f"pack_optimizer_state: takes the pytree that "
                            f"unpack_optimizer_state made, whose leaves are JoinPoints; "
                            f"leaf {k} is {type(mark).__name__}")
    packed, subtree_defs = _flat_states([mark.subtree for mark in marks])
    return OptimizerState(packed, tree_def, subtree_defs)
