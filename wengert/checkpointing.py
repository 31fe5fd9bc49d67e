"""Checkpointing: keep fewer intermediates for the reverse sweep, recompute the rest.

Reverse mode keeps every intermediate value of the forward pass (seeds 000 and 001 name
this as its price).  `checkpoint(f)` makes a call of f one node of the outer graph: f runs
on plain numbers, so nothing inside it is recorded, and only its inputs and outputs stay.
When a sweep reaches the node, its rule runs f again under a fresh transformation (a
`vjp` for the reverse sweep, a `jvp` forward, a Taylor expansion in Taylor mode), uses the
result and lets that graph go.  Inside another transformation's symbolic sweep (a
derivative of a derivative) the rule records f into the outer graph like any other
derivative, so checkpointed code can be differentiated to any order.

`checkpointed_loop(step, x, n)` runs ``x = step(x)`` n times as ⌈n/s⌉ checkpointed
segments of s = ⌈√n⌉ steps: the reverse sweep stores O(√n) states and records one
segment at a time, for about one extra forward pass of work.

Example:
    >>> import wengert as wg, wengert.math as wm
    >>> def step(x):
    ...     return x + 0.01 * wm.sin(x)
    >>> wg.grad(lambda x: wg.checkpointed_loop(step, x, 1000))(1.0) == \\
    ...     wg.grad(lambda x: _plain_loop(step, x, 1000))(1.0)
    True
"""
from __future__ import annotations

import functools
import inspect
import math
from contextlib import contextmanager

import numpy as np

from . import ad
from .api import _Call
from .errors import integer_argument
from .graph.active import recording
from .graph.graph import Graph, ShapeDtype, aval
from .graph.node import Node
from .primitives.collective import axis_names as collective_names, resolving
from .primitives.pack import Layout
from .primitives.registry import Primitive, is_weak, shape_of, _innermost as innermost
from .tree import flatten, unflatten

__all__ = ["checkpoint", "checkpointed_loop"]


def _plain_loop(step, x, n, *args):
    """The loop `checkpointed_loop` stands for."""
    for _ in range(n):
        x = step(x, *args)
    return x


class Checkpoint(Primitive):
    """The primitive of one checkpointed function (for one structure of arguments).

    Its arguments are the leaves of f's arguments; its value is f's output, its leaves
    packed into one flat array when there are several (`part` takes them out again).  Its
    JVP, VJP and Taylor rule re-run f.  Not in the registry: one is made per function.

    Example:
        >>> import wengert as wg
        >>> step = wg.checkpoint(lambda x, y: (x * y, x + y))
        >>> print(wg.trace(step, 2.0, 3.0))
        graph(x: f64[], y: f64[]):
          %2: f64[2] = checkpoint[<lambda>](x, y)
          %3: f64[] = part(%2, start=0, stop=1, shape=())
          %4: f64[] = part(%2, start=1, stop=2, shape=())
          return %3, %4
    """

    def __init__(self, f, in_tree, strong=()):
        name = getattr(f, "__name__", "f")
        # (complex values: its rules are f's own, swept by wengert.ad, which keeps JAX's
        # and autograd's convention; a packed result of real and complex leaves is
        # complex, and `unpack` takes the real leaves' real parts again)
        super().__init__(f"checkpoint[{name}]", self._impl, cost="call",
                         abstract_eval=self._abstract_eval, complex=True)
        self.f = f
        self.in_tree = in_tree
        # the scalar leaves that came as NumPy scalars or 0-d arrays: a node's value is a
        # Python float, and f, given one, could not index or reshape it as it could its
        # argument (`_impl` gives these as NumPy scalars)
        self.strong = frozenset(i for i, s in enumerate(strong) if s)
        self.out_tree = None
        self.layout = None           # where each output leaf sits in the node's value
        self.axis_names = frozenset()   # those of f's collectives (see _abstract_eval)
        self.jvp = self._jvp_rule
        self.vjp = self._vjp_rule
        self.batch = self._batch_rule

    # --- calling f ---------------------------------------------------------------------
    def call(self, leaves):
        """f on the leaves of its arguments, as a flat tuple of output leaves.  Arrays are
        given as copies: an f that updates its argument in place (``x *= 2``) changed
        the graph's stored value, and the sweep's run of f again then started from 2x."""
        leaves = [v.copy() if type(v) is np.ndarray else v for v in leaves]
        outs, tree = flatten(self.f(*unflatten(self.in_tree, leaves)))
        self._set_layout(tree, [aval(o) for o in outs])
        return tuple(outs)

    def _set_layout(self, tree, avals):
        if self.out_tree is None:
            if not avals:
                raise TypeError(f"{self.name}: a checkpointed function must return a "
                                f"result to differentiate, got {tree}")
            # (integer and bool results, a step counter beside the state, ride along
            # without derivatives, as a scan's carry does; one float is what makes a
            # checkpoint worth its node)
            if not any(dtype.kind in "fc" for _, dtype in avals):
                raise TypeError(f"{self.name}: a checkpointed function must return floats "
                                f"or float arrays, got results of dtype "
                                f"{', '.join(sorted({d.name for _, d in avals}))} (compute "
                                "integer results, an argmax, outside it)")
            self.out_tree = tree
            self.layout = Layout(avals)
            self.dtype = self.layout.dtype
        elif tree != self.out_tree or self.layout.shapes != [tuple(a[0]) for a in avals]:
            raise ValueError(f"{self.name}: the checkpointed function returned {tree} this "
                             f"time and {self.out_tree} before; its results must keep their "
                             "structure and shapes")

    def pack(self, outs):
        """Output leaves as the node's value: the leaf itself, or one flat array."""
        return self.layout.pack(outs)

    def unpack(self, packed):
        """The node's value (or the node) as f's output leaves."""
        return self.layout.unpack(packed)

    # --- the primitive -------------------------------------------------------------------
    def _impl(self, *leaves):
        if self.strong:
            leaves = [np.asarray(v)[()] if i in self.strong else v
                      for i, v in enumerate(leaves)]
        with recording(None):        # plain numbers: f runs without recording anything
            outs = self.call(leaves)
        if any(type(o) is Node for o in outs):
            raise ValueError(
                f"{self.name}: the checkpointed function computes with a traced value that "
                "is not one of its arguments (a variable it closes over); pass that value "
                "as an argument, so that its derivative goes through the checkpoint")
        return self.pack(outs)

    def _abstract_eval(self, args, params):
        if self.layout is None:     # trace f once on shapes alone to learn its results
            g = Graph()
            ins = [g.input(a.value if a.value is not None else ShapeDtype(a.shape, a.dtype),
                           weak=is_weak(a)) for a in args]
            with recording(g):
                self.call(ins)
            # (f inside wg.vmap(..., axis_name=...), its collectives: the vmap batches it)
            self.axis_names = collective_names(g)
            g.release()
        return self.layout.aval()

    # --- derivative rules: run f again under a fresh transformation -----------------------
    def _restricted(self, xs, which):
        """f as a function of the arguments `which` alone, the others held at xs."""
        def f_of(*chosen):
            leaves = list(xs)
            for i, v in zip(which, chosen):
                leaves[i] = v
            return self.call(leaves)
        f_of.__name__ = self.name
        return f_of

    @staticmethod
    def _graph_of(values):
        """Where f runs again: into the innermost graph of the traced values among its
        arguments and the direction swept (a symbolic sweep, whose result must be
        differentiable again; a direction of wg.vmap's trace), or (None) into a fresh
        graph."""
        graphs = {x.graph for x in values if type(x) is Node}
        if len(graphs) > 1:
            return innermost(graphs, next(iter(graphs)))
        return next(iter(graphs), None)

    @contextmanager
    def _again(self, xs, which, direction, forward_only=False):
        """Record f of the arguments `which` again; yield the call, its output nodes and
        the plan of a sweep along `direction` (tangents or a cotangent; `forward_only`
        for tangents).  A fresh graph is released afterwards."""
        graph = self._graph_of(list(xs) + list(direction))
        with recording(graph):
            call = _Call(self._restricted(xs, which), tuple(xs[i] for i in which), {},
                         range(len(which)), self.name, [], forward_only)
            outs, _ = call.output_nodes(call.out, self.name)
            yield call, outs, call.graph.between(call.inputs, outs)
        if graph is None:
            call.graph.release()

    def _jvp_rule(self, ts, *args, **params):
        xs = args[:-1]
        which = [i for i, t in enumerate(ts) if t is not None]
        with self._again(xs, which, ts, forward_only=True) as (call, outs, plan):
            touts = ad.forward(plan, call.inputs, [ts[i] for i in which], outs, call.symbolic)
            touts = [call.zeros(o) if t is None else t for t, o in zip(touts, outs)]
        return self.pack(touts)

    def _vjp_rule(self, g, *args, **params):
        xs = args[:-1]
        which = [i for i, x in enumerate(xs) if aval(x)[1].kind in "fc"]
        with self._again(xs, which, (g,)) as (call, outs, plan):
            cts = ad.reverse(plan, call.inputs, outs, self.unpack(g), call.symbolic)
        out = [None] * len(xs)
        for i, c in zip(which, cts):
            out[i] = c
        return tuple(out)

    def _batch_rule(self, args, mapped, node):
        """wg.vmap: one checkpoint of f batched (not one per example), its results packed
        example by example in this primitive's layout."""
        from .vectorize import vmap
        # (the vmap's axis name bound again: f's collectives over it are computed there)
        batched_f = checkpoint(vmap(lambda *leaves: self.call(leaves),
                                    in_axes=tuple(0 if m else None for m in mapped),
                                    axis_name=resolving()))
        size = shape_of(args[list(mapped).index(True)])[0]
        return self.layout.pack_batch(batched_f(*args), size)

    def taylor(self, series, ans, order, **params):
        """The Taylor rule (`wengert.ad.taylor`): f expanded again."""
        from .taylor_mode import expand
        xs = [s[0] for s in series]
        which = [i for i, s in enumerate(series) if any(c is not None for c in s[1:])]
        with recording(self._graph_of(xs)):
            coefficients, _ = expand(self._restricted(xs, which),
                                     tuple(xs[i] for i in which),
                                     [series[i][1:] for i in which], order, self.name)
        return [ans] + [self.pack(row) for row in coefficients[1:]]


def checkpoint(f, *, prevent_cse=True, policy=None, static_argnums=(), static_argnames=()):
    """Mark f so that reverse mode recomputes its intermediates instead of keeping them.

    Called on traced values (inside `grad`, `vjp`, `jvp`, ...), the call of f becomes one
    node of the graph: f runs on plain numbers, and the derivative rules of the node run
    it again under a fresh `vjp`, `jvp` or Taylor expansion when a sweep needs them.
    Memory for f's intermediates is then needed only while its own derivative is taken.
    Called on plain values, f just runs.

    f takes numbers, arrays or pytrees of them, by position or keyword, and returns the
    same, at least one of them a float (integer results, a counter, come out without a
    derivative); everything it computes with must come in through its arguments (a traced
    value it closes over raises ValueError).  Checkpointing changes no result: the derivatives
    are the same.  ``static_argnums`` (JAX's) names positional arguments that are
    settings, not numbers (a string, a flag): they must be hashable, and each value of
    them is a checkpoint of its own; ``static_argnames`` names them (keyword-only
    parameters too).  ``jax.remat`` is the same function (``wg.remat``).

    JAX's ``policy`` says which intermediates to keep rather than recompute: wengert keeps
    none (f's arguments only; ``checkpoint_policies.nothing_saveable``), whatever the
    policy, except ``checkpoint_policies.everything_saveable``, which keeps all of them
    and so returns f unchanged.  Derivatives are the same under every policy.
    ``prevent_cse`` is accepted and changes nothing: a checkpoint is one node, which
    interning does not merge with what its derivative recomputes.

    Example:
        >>> import wengert as wg, wengert.math as wm
        >>> @wg.checkpoint
        ... def block(x, w):
        ...     for _ in range(100):
        ...         x = wm.tanh(w * x)
        ...     return x
        >>> round(wg.grad(lambda w: block(0.5, w))(1.5), 6)    # one node in the graph
        0.372625
    """
    if not callable(f):
        raise TypeError(f"checkpoint expects a function, got {type(f).__name__} {f!r:.60}")
    if not isinstance(prevent_cse, (bool, tuple, list)):
        raise TypeError(f"checkpoint: prevent_cse must be a bool, got {prevent_cse!r}")
    if policy is not None and not callable(policy):
        raise TypeError(f"checkpoint: policy must be one of jax.checkpoint_policies (a "
                        f"function), got {type(policy).__name__}")
    if policy is checkpoint_policies.everything_saveable:
        return f
    if static_argnames not in ((), None):
        return _with_static(f, static_argnums or (), static_argnames)
    if static_argnums not in ((), None):
        return _with_static(f, static_argnums)
    primitives = {}

    def by_position(args, kwargs):      # (keywords travel as one more pytree argument)
        return f(*args, **kwargs)
    by_position.__name__ = getattr(f, "__name__", "f")

    @functools.wraps(f)
    def checkpointed(*args, **kwargs):
        leaves, in_tree = flatten((args, kwargs))
        if not any(type(x) is Node for x in leaves):
            return f(*args, **kwargs)
        strong = tuple(type(x) is Node and not x.shape and x.dtype.kind in "fc" and
                       not is_weak(x) for x in leaves)
        key = (in_tree, tuple((s, d.str) for s, d in map(aval, leaves)), strong)
        prim = primitives.get(key)
        if prim is None:
            prim = primitives[key] = Checkpoint(by_position, in_tree, strong)
        outs = prim.unpack(prim(*leaves))
        return unflatten(prim.out_tree, outs)

    return checkpointed


def _named_positions(f, names):
    """The positions of the parameters of f that `names` names and that can be passed by
    position, so such an argument is static either way."""
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):         # (a builtin without a signature: by keyword)
        params = []
    positional = [p.name for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return tuple(positional.index(n) for n in names if n in positional)


def _with_static(f, static_argnums, static_argnames=()):
    """checkpoint(f, static_argnums=...): a checkpoint of f with those arguments fixed,
    one for each of their values (and those of the keyword arguments static_argnames
    names)."""
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in static):
        raise TypeError(f"checkpoint: static_argnums must be an int or a tuple of ints, "
                        f"got {static_argnums!r}")
    static_names = (static_argnames,) if isinstance(static_argnames, str) else \
        tuple(static_argnames or ())
    if not all(isinstance(k, str) for k in static_names):
        raise TypeError(f"checkpoint: static_argnames must be a str or a tuple of str, got "
                        f"{static_argnames!r}")
    named = _named_positions(f, static_names)     # (may come by keyword instead)
    by_value = {}

    @functools.wraps(f)
    def checkpointed(*args, **kwargs):
        n = len(args)
        if any(not -n <= i < n for i in static):
            raise ValueError(f"checkpoint: static_argnums {static} for a call with {n} "
                             "positional arguments")
        fixed = {i % n: args[i] for i in static + tuple(i for i in named if i < n)}
        fixed_kw = {k: kwargs.pop(k) for k in static_names if k in kwargs}
        # (f_of places the other arguments around the fixed ones for a call of n positional
        # arguments: a call laid out otherwise, by count or keywords, needs its own f_of)
        key = (n, tuple(sorted(kwargs)), tuple(sorted(fixed.items())),
               tuple(sorted(fixed_kw.items())))
        try:
            inner = by_value.get(key)
        except TypeError:
            raise TypeError(f"checkpoint: the static arguments {list(fixed)} must be "
                            f"hashable, got {[type(v).__name__ for v in fixed.values()]}") \
                from None
        if inner is None:
            def f_of(*rest, **kw):
                it = iter(rest)
                return f(*[fixed[i] if i in fixed else next(it) for i in range(n)], **kw,
                         **fixed_kw)
            f_of.__name__ = getattr(f, "__name__", "f")
            inner = by_value[key] = checkpoint(f_of)
        return inner(*[a for i, a in enumerate(args) if i not in fixed], **kwargs)
    return checkpointed


def checkpointed_loop(step, x, n, *args, every=None):
    """``for _ in range(n): x = step(x, *args)``, with checkpoints every `every` steps.

    The loop runs as segments of `every` steps (default ⌈√n⌉), each one `checkpoint`:
    reverse mode keeps only the state at the start of each segment and, when the sweep
    comes back to a segment, recomputes it and takes its derivative.  For n steps that is
    O(√n) stored states and one segment recorded at a time, instead of every operation of
    every step, at the price of about one more forward pass.  A gradient compiled by
    `wg.compile` saves as much (its forward part calls each segment whole, its backward
    part recomputes a segment and frees its arrays once used), but its code is the loop
    unrolled: to keep a compiled loop a loop, checkpoint a `wg.scan` body.

    Args:
        step: the loop body, ``step(x, *args) -> new x`` (x a number, array or pytree;
            integer leaves, a step counter, are carried without a derivative).
        x: the initial state.
        n: the number of steps.
        *args: values every step reads (parameters to differentiate, for example); pass
            them here rather than closing over them.
        every: the segment length.

    Returns:
        The state after n steps.

    Example:
        >>> import wengert as wg
        >>> def euler(state, k):                  # x'' = -k x, explicit Euler
        ...     x, v = state
        ...     return (x + 0.001 * v, v - 0.001 * k * x)
        >>> def energy(k):
        ...     x, v = wg.checkpointed_loop(euler, (1.0, 0.0), 10_000, k)
        ...     return 0.5 * v * v + 0.5 * k * x * x
        >>> round(wg.grad(energy)(2.0), 6)       # 100 stored states, not 60,000 operations
        0.520303
    """
    n = integer_argument(n, "checkpointed_loop", "n", 0)
    if every is None:
        every = max(1, math.isqrt(n - 1) + 1) if n > 1 else 1
    every = integer_argument(every, "checkpointed_loop", "every", 1)

    def segment(m):
        def run(x, *args):
            return _plain_loop(step, x, m, *args)
        run.__name__ = f"{getattr(step, '__name__', 'step')}*{m}"
        return checkpoint(run)

    full = segment(every)
    for _ in range(n // every):
        x = full(x, *args)
    if n % every:
        x = segment(n % every)(x, *args)
    return x


def _policy(name, saves):
    """One of JAX's checkpoint policies, by name: ``(primitive, *avals, **params) -> bool``,
    whether to keep that operation's result; `saves` says it keeps every result."""
    def policy(prim, *avals, **params):
        return saves
    policy.__name__ = policy.__qualname__ = name
    policy.__doc__ = f"JAX's ``checkpoint_policies.{name}`` (see `checkpoint_policies`)."
    return policy


def _policy_maker(name):
    """One of JAX's policies that are made from names or other policies."""
    def make(*args, **kwargs):
        return _policy(name, False)
    make.__name__ = make.__qualname__ = name
    make.__doc__ = f"JAX's ``checkpoint_policies.{name}(...)`` (see `checkpoint_policies`)."
    return make


class checkpoint_policies:
    """JAX's ``jax.checkpoint_policies``, by name, for ``checkpoint(f, policy=...)``.

    wengert's checkpoint keeps no intermediate of f (JAX's ``nothing_saveable``), so every
    policy but ``everything_saveable`` (which makes ``checkpoint(f)`` f itself) computes
    the same derivatives with the least memory: the policies that save products
    (``dots_saveable``, ...) or named values (``save_only_these_names(...)``, ...) are
    accepted, not followed.

    Example:
        >>> import wengert as wg, wengert.numpy as wnp
        >>> f = lambda x: wnp.sin(wnp.sin(x))
        >>> for policy in (wg.checkpoint_policies.dots_saveable,
        ...                wg.checkpoint_policies.save_only_these_names("h")):
        ...     print(round(wg.grad(wg.remat(f, policy=policy))(1.0), 6))
        0.360039
        0.360039
        >>> wg.checkpoint(f, policy=wg.checkpoint_policies.everything_saveable) is f
        True
    """

    everything_saveable = staticmethod(_policy("everything_saveable", True))
    nothing_saveable = staticmethod(_policy("nothing_saveable", False))
    dots_saveable = staticmethod(_policy("dots_saveable", False))
    checkpoint_dots = dots_saveable
    dots_with_no_batch_dims_saveable = staticmethod(
        _policy("dots_with_no_batch_dims_saveable", False))
    checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable
    save_only_these_names = staticmethod(_policy_maker("save_only_these_names"))
    save_any_names_but_these = staticmethod(_policy_maker("save_any_names_but_these"))
    save_anything_except_these_names = staticmethod(
        _policy_maker("save_anything_except_these_names"))
    save_from_both_policies = staticmethod(_policy_maker("save_from_both_policies"))
    save_and_offload_only_these_names = staticmethod(
        _policy_maker("save_and_offload_only_these_names"))
    offload_dot_with_no_batch_dims = staticmethod(
        _policy_maker("offload_dot_with_no_batch_dims"))

    def __init__(self):
        raise TypeError("checkpoint_policies is a namespace of policies: use its "
                        "attributes, checkpoint_policies.nothing_saveable, ...")


remat = checkpoint
