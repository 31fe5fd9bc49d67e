"""JAX's ``jax.custom_batching``: a function with a batching rule of its own.

``@custom_vmap`` marks a function whose batch, under `wg.vmap`, is computed by a rule
the user declares with ``f.def_vmap(rule)`` instead of by batching f's body:
``rule(axis_size, in_batched, *args) -> (out, out_batched)``, where the batched
arguments carry the batch on axis 0, `in_batched` is a list with one pytree of bools per
argument (which leaves are batched) and `out_batched` a pytree of bools with the
structure of `out`, as in JAX.  Outside a vmap the function is f itself.  A solver that
batches in its own way, a function written for one example that a loop handles better
than its batched body (`sequential_vmap`), or a library call that takes a batch at once
are what it is for.

Each traced call is one primitive (a `_Call`), whose value is f's (its leaves packed end
to end, as `wengert.primitives.pack.Layout` does) and whose batching rule is the user's.
Its derivatives follow JAX's design and go one step further:

* forward mode: the tangent is a call again (`_Call.tangent_call`), whose value is the
  JVP of f's body and whose batching rule is the JVP of the user's rule.  So ``wg.jvp``
  of the function is the JVP of f, and the JVP of its vmap is that of the rule, as in
  JAX (an argument batched in the primals but not in the tangents, or the other way
  round, is broadcast on the other side: JAX's rule maps over it apart, which gives
  results of the wrong shape when other arguments are batched on both sides);
* reverse mode (JAX refuses it): the cotangent is a call too (`_Call.cotangent_call`),
  whose value is the VJP of f's body and whose batching rule is the transpose of the
  batched tangent map above.  So ``wg.grad`` of the function is the gradient of f, and
  under vmap reverse mode is the transpose of what forward mode computes: both
  derivatives of the batch are the rule's.

Both are calls with rules of their own, so every order works.  f may not close over
traced values (JAX passes them to f but never to the rule): pass them as arguments.

Example:
    >>> import numpy as np, wengert as wg, wengert.numpy as wnp
    >>> @custom_vmap
    ... def f(x, y):
    ...     return x + y
    >>> @f.def_vmap
    ... def f_vmap_rule(axis_size, in_batched, xs, ys):
    ...     return xs * ys, in_batched[0] or in_batched[1]
    >>> f(2.0, 3.0), wg.vmap(f)(np.arange(3.0), np.arange(1.0, 4.0))     # f; the rule
    (5.0, array([0., 2., 6.]))
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from .graph.active import recording
from .graph.graph import Graph, ShapeDtype
from .graph.node import Node
from .primitives.pack import Layout
from .primitives.registry import Primitive, is_weak, shape_of
from .tree import flatten, unflatten

__all__ = ["custom_vmap", "sequential_vmap"]


def _array_like(x) -> bool:
    """Whether x may be an argument or a result of a custom_vmap function: a traced value,
    a number or a NumPy array (anything else is closed over, not passed)."""
    return type(x) is Node or isinstance(x, (bool, int, float, complex, np.ndarray,
                                             np.generic))


def _dtype(x):
    if type(x) is Node:
        return x.dtype
    if isinstance(x, (bool, np.bool_)):
        return np.dtype(bool)
    return np.result_type(x)


def _tangent_dtype(dtype):
    """The dtype of a value's tangent: its own if inexact, float64 for integers (wengert
    differentiates an integer as a number)."""
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


def _fitted(x, shape, dtype):
    """`x` as an array of `shape` (broadcast from a scalar zero, say) and `dtype`."""
    import wengert.numpy as wnp
    if tuple(shape_of(x)) != tuple(shape):
        x = wnp.broadcast_to(x, shape)
    if _dtype(x) != dtype:
        x = wnp.astype(x, dtype)
    return x


class _Call(Primitive):
    """One custom_vmap call site's primitive: its arguments are the leaves of f's
    arguments, its value f's result packed (`layout`), and its batching rule the user's.

    `fun(leaves)` gives the result's leaves; `rule(n, flags, leaves)` the batch's leaves
    and whether each is batched, for `n` examples with ``flags[k]`` saying whether leaf
    k carries them on axis 0.  The tangent and cotangent calls are made on first use
    (and each has its own, so every order of derivative is a call with a rule)."""

    def __init__(self, name, fun, rule, in_avals, out_avals):
        self.layout = Layout(out_avals)
        super().__init__(f"custom_vmap[{name}]", self._impl, cost="call",
                         abstract_eval=lambda args, params: self.layout.aval(),
                         foldable=False, complex=True)
        self.fun_name, self.fun, self.rule = name, fun, rule
        self.in_avals, self.out_avals = list(in_avals), list(out_avals)
        self.jvp, self.vjp, self.batch = self._tangent, self._cotangent, self._batch
        self._tangent_call = self._cotangent_call = None

    def bind(self, leaves):
        """The call recorded (or computed) on `leaves`: the result's leaves."""
        return self.layout.unpack(self(*leaves))

    def _impl(self, *leaves):
        with recording(None):   # (on numbers: f records nothing in an enclosing trace)
            outs = self.fun(list(leaves))
        if any(type(o) is Node for o in outs):
            raise ValueError(_closure(self.fun_name))
        return self.layout.pack([_fitted(o, s, d) for o, (s, d) in zip(outs, self.out_avals)])

    # ---- wg.vmap ------------------------------------------------------------------------
    def _batch(self, args, mapped, node):
        n = next(shape_of(a)[0] for a, m in zip(args, mapped) if m)
        outs, flags = self.rule(n, list(mapped), list(args))
        return self.layout.pack_batch(self._batched(outs, flags, n), n)

    def _batched(self, outs, flags, n):
        """The rule's results, each with the batch on axis 0 (an unbatched one broadcast),
        checked against f's shapes."""
        import wengert.numpy as wnp
        done = []
        for k, (o, b, (shape, dtype)) in enumerate(zip(outs, flags, self.out_avals)):
            got, want = tuple(shape_of(o)), ((n,) + tuple(shape) if b else tuple(shape))
            if got != want:
                raise ValueError(
                    f"the vmap rule of custom_vmap function {self.fun_name!r} returned "
                    f"output {k} of shape {got}, said to be "
                    f"{'batched' if b else 'not batched'}: f's output {k} has shape "
                    f"{tuple(shape)}, so it must be {want}"
                    + (f" (the batch of {n} on axis 0)" if b else ""))
            if not b:
                o = wnp.broadcast_to(o, (n,) + tuple(shape))
            done.append(o if _dtype(o) == dtype else wnp.astype(o, dtype))
        return done

    # ---- forward mode -------------------------------------------------------------------
    def _tangent(self, ts, *args):
        leaves = args[:-1]
        ts = [np.zeros(s, _tangent_dtype(d)) if t is None else t
              for t, (s, d) in zip(ts, self.in_avals)]
        return self.tangent_call()(*leaves, *ts)

    def tangent_call(self):
        """The call whose value is the tangent of this one's, packed alike: f's JVP, and
        under vmap the JVP of the rule."""
        if self._tangent_call is None:
            k = len(self.in_avals)

            def fun(leaves):
                from .api import jvp
                primals, tangents = leaves[:k], leaves[k:]
                return list(jvp(lambda *p: list(self.fun(list(p))), tuple(primals),
                                tuple(tangents))[1])
            tangent_avals = [(s, _tangent_dtype(d)) for s, d in self.in_avals]
            self._tangent_call = _Call(f"jvp {self.fun_name}", fun, self._rule_jvp,
                                       self.in_avals + tangent_avals, self.out_avals)
        return self._tangent_call

    def _rule_jvp(self, n, flags, leaves):
        """The JVP of the rule.  An argument batched in the primals but not the tangents,
        or the other way round, has its other side broadcast along the batch, so that the
        rule sees as batched each argument batched on either side.  (JAX maps over such
        arguments with a vmap of their own around the JVP, which pairs them with the
        arguments batched on both sides as an outer product: results of the wrong shape.)"""
        import wengert.numpy as wnp
        from .api import jvp
        k = len(self.in_avals)
        pf, tf = flags[:k], flags[k:]

        def spread(x, batched, other):
            return wnp.broadcast_to(x, (n,) + tuple(shape_of(x))) if other and not batched \
                else x
        primals = [spread(x, p, t) for x, p, t in zip(leaves[:k], pf, tf)]
        tangents = [spread(x, t, p) for x, p, t in zip(leaves[k:], pf, tf)]
        either = [bool(p or t) for p, t in zip(pf, tf)]
        seen = {}

        def rule_of(*ps):
            outs, out_flags = self.rule(n, either, list(ps))
            seen["flags"] = out_flags
            return list(outs)
        return list(jvp(rule_of, tuple(primals), tuple(tangents))[1]), seen["flags"]

    # ---- reverse mode -------------------------------------------------------------------
    def _cotangent(self, g, *args):
        leaves = args[:-1]
        return tuple(self.cotangent_call().bind(list(leaves) + [g]))

    def cotangent_call(self):
        """The call whose value is the cotangent of each argument leaf given one of the
        result: f's VJP, and under vmap the transpose of the batched `tangent_call`."""
        if self._cotangent_call is None:
            k = len(self.in_avals)

            def fun(leaves):
                from .api import vjp
                primals, g = leaves[:k], leaves[k]
                _, pullback = vjp(lambda *p: self._packed(self.fun(list(p))), *primals)
                return [np.zeros(s, _tangent_dtype(d)) if c is None else c
                        for c, (s, d) in zip(pullback(g), self.in_avals)]
            tangent_avals = [(s, _tangent_dtype(d)) for s, d in self.in_avals]
            self._cotangent_call = _Call(f"vjp {self.fun_name}", fun, self._rule_vjp,
                                         self.in_avals + [self._cotangent_aval()],
                                         tangent_avals)
        return self._cotangent_call

    def _cotangent_aval(self):
        shape, dtype = self.layout.aval()
        return shape, _tangent_dtype(np.dtype(dtype))

    def _packed(self, outs):
        return self.layout.pack([_fitted(o, s, d) for o, (s, d) in zip(outs, self.out_avals)])

    def _rule_vjp(self, n, flags, leaves):
        """The transpose of the rule's batched tangent map: every argument leaf gets a
        cotangent per example, so the tangents are taken batched, and the rule sees as
        batched the primals that are (`_rule_jvp`)."""
        import wengert.numpy as wnp
        from .api import vjp
        k = len(self.in_avals)
        primals, g = leaves[:k], leaves[k]
        if not flags[k]:
            g = wnp.broadcast_to(g, (n,) + tuple(shape_of(g)))
        tangent = self.tangent_call()

        def pushed(*ts):
            outs, out_flags = tangent.rule(n, list(flags[:k]) + [True] * k,
                                           list(primals) + list(ts))
            return self.layout.pack_batch(self._batched(outs, out_flags, n), n)
        zeros = [np.zeros((n,) + tuple(s), _tangent_dtype(d)) for s, d in self.in_avals]
        _, pullback = vjp(pushed, *zeros)
        cts = [wnp.zeros((n,) + tuple(s), _tangent_dtype(d)) if c is None else c
               for c, (s, d) in zip(pullback(g), self.in_avals)]
        return cts, [True] * k

    def __repr__(self):
        return f"<custom_vmap call {self.fun_name}>"


def _closure(name):
    return (f"custom_vmap function {name!r} computes with a traced value that is not one "
            "of its arguments (a variable it closes over); pass that value as an argument, "
            "so that the vmap rule sees it too")


class custom_vmap:
    """A function with a batching rule of its own, as JAX's
    ``jax.custom_batching.custom_vmap``: ``f.def_vmap(rule)`` declares
    ``rule(axis_size, in_batched, *args) -> (out, out_batched)``, which `wg.vmap` (and
    `wg.pmap`, `jacfwd`, ... : whatever batches) calls in place of batching f's body.
    The batched arguments have the batch on axis 0 and the others are as they were;
    `in_batched` is a list with one pytree of bools per argument; `out_batched` says,
    in `out`'s structure, which outputs are batched (an unbatched one is the same for
    every example).  Nested vmaps call the rule once each, the inner one's output being
    batched by the outer vmap as any code is (a rule may call f again on the batch).

    Outside vmap the function is f.  ``wg.jvp`` differentiates f; under vmap the JVP is
    the rule's (JAX's semantics).  Reverse mode works too, where JAX refuses it: f's VJP,
    and under vmap the transpose of the rule's JVP (see the module).  Keyword arguments
    are bound to f's parameters; f's arguments and result are pytrees of arrays.

    Example:
        >>> import numpy as np, wengert as wg, wengert.numpy as wnp
        >>> @custom_vmap
        ... def norm(x):                           # of one vector
        ...     return wnp.sqrt(wnp.sum(x * x))
        >>> @norm.def_vmap
        ... def norm_batched(axis_size, in_batched, xs):
        ...     return wnp.linalg.norm(xs, axis=1), in_batched[0]
        >>> xs = np.array([[3.0, 4.0], [6.0, 8.0]])
        >>> wg.vmap(norm)(xs), wg.grad(norm)(xs[0])
        (array([ 5., 10.]), array([0.6, 0.8]))
    """

    #: (read by custom_jvp and custom_vjp wrapping one: batched as a whole, by the rule)
    batches_itself = True

    def __init__(self, fun):
        if not callable(fun):
            raise TypeError(f"custom_vmap decorates a function, got {type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vmap_rule = None
        try:
            self._signature = inspect.signature(fun)
        except (TypeError, ValueError):         # (a builtin without one: positional only)
            self._signature = None

    def def_vmap(self, vmap_rule):
        """Declare the rule, ``rule(axis_size, in_batched, *args) -> (out, out_batched)``
        (usable as a decorator: returns it).

        Example:
            >>> import numpy as np, wengert as wg
            >>> f = custom_vmap(lambda x: x)
            >>> _ = f.def_vmap(lambda n, in_batched, xs: (xs[::-1], True))
            >>> wg.vmap(f)(np.arange(3.0))        # a rule that reverses the batch
            array([2., 1., 0.])
        """
        if not callable(vmap_rule):
            raise TypeError(f"def_vmap takes the rule, a function, got "
                            f"{type(vmap_rule).__name__}")
        self.vmap_rule = vmap_rule
        return vmap_rule

    def __get__(self, obj, objtype=None):
        # (a decorated method: bound like a function)
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        name = getattr(self, "__name__", "f")
        if self.vmap_rule is None:
            raise AttributeError(f"custom_vmap function {name!r} has no vmap rule: declare "
                                 f"it with @{name}.def_vmap (as JAX requires)")
        if kwargs:
            if self._signature is None:
                raise TypeError(f"custom_vmap function {name!r} takes its arguments "
                                "positionally")
            try:
                bound = self._signature.bind(*args, **kwargs)
            except TypeError as e:
                raise TypeError(f"custom_vmap function {name!r}: {e}") from None
            bound.apply_defaults()
            if bound.kwargs:
                raise TypeError(f"custom_vmap function {name!r}: keyword-only parameters "
                                "are not supported; make them positional")
            args = bound.args
        leaves, tree = flatten(args)
        for x in leaves:
            if not _array_like(x):
                raise TypeError(f"custom_vmap function {name!r}: its arguments must be "
                                f"arrays or numbers (or pytrees of them), got a "
                                f"{type(x).__name__} ({x!r:.40}); close over it instead")
        if not any(type(x) is Node for x in leaves):
            out = self.fun(*args)
            if any(type(o) is Node for o in flatten(out)[0]):
                raise ValueError(_closure(name))
            return out
        out_tree, out_avals = self._shapes(name, tree, leaves)
        call = _Call(name, functools.partial(_flat_fun, self.fun, tree),
                     functools.partial(_flat_rule, self.vmap_rule, name, tree, out_tree),
                     [(tuple(shape_of(x)), _dtype(x)) for x in leaves], out_avals)
        return unflatten(out_tree, call.bind(leaves))

    def _shapes(self, name, tree, leaves):
        """f's result's structure and leaves' (shape, dtype), from f traced on the
        arguments' shapes (as JAX traces it); a value f closes over is refused."""
        graph = Graph(optimize=False)
        graph.captured, graph.tracer = {}, "custom_vmap"
        ins = [graph.input(ShapeDtype(shape_of(x), _dtype(x),
                                      weak=is_weak(x) if type(x) is Node else
                                      type(x) in (int, float, complex)), f"a{k}")
               for k, x in enumerate(leaves)]
        try:
            with recording(graph):
                out = self.fun(*unflatten(tree, ins))
            if graph.captured:
                raise ValueError(_closure(name))
            outs, out_tree = flatten(out)
            for o in outs:
                if not _array_like(o):
                    raise TypeError(f"custom_vmap function {name!r} returned a "
                                    f"{type(o).__name__}; it must return arrays or numbers "
                                    "(or a pytree of them)")
            return out_tree, [(tuple(shape_of(o)), _dtype(o)) for o in outs]
        finally:
            graph.release()


def _flat_fun(fun, tree, leaves):
    return flatten(fun(*unflatten(tree, leaves)))[0]


def _flat_rule(rule, name, tree, out_tree, n, flags, leaves):
    """The user's rule on flat leaves, its result checked as JAX checks it."""
    args = unflatten(tree, list(leaves))
    in_batched = list(unflatten(tree, [bool(f) for f in flags]))
    found = rule(n, in_batched, *args)
    if not isinstance(found, (tuple, list)) or len(found) != 2:
        raise TypeError(f"the vmap rule of custom_vmap function {name!r} must return a pair "
                        f"(out, out_batched), got {type(found).__name__}")
    out, out_batched = found
    outs, got_tree = flatten(out)
    flags, flags_tree = flatten(out_batched)
    if flags_tree != got_tree:
        raise ValueError(f"the vmap rule of custom_vmap function {name!r} returned out and "
                         f"out_batched of different structures: {got_tree} and {flags_tree} "
                         "(out_batched has one bool per output leaf)")
    if got_tree != out_tree:
        raise ValueError(f"the vmap rule of custom_vmap function {name!r} returned an output "
                         f"of structure {got_tree}, where f's is {out_tree}")
    for b in flags:
        if not isinstance(b, (bool, np.bool_)):
            raise TypeError(f"the vmap rule of custom_vmap function {name!r}: out_batched must "
                            f"hold bools, got {b!r:.40}")
    return outs, [bool(b) for b in flags]


def sequential_vmap(f):
    """A `custom_vmap` whose batch is f called on each example in turn, as JAX's
    ``jax.custom_batching.sequential_vmap``: for a function written for one example
    that does not batch, or should not (a callback, a solver with its own loop).
    Unbatched arguments are passed whole to every call.  On values the examples are a
    Python loop; on traced values a `wengert.lax.map`, one loop in the graph.

    Example:
        >>> import numpy as np, wengert as wg, wengert.numpy as wnp
        >>> @sequential_vmap
        ... def solve(a, b):                        # one linear system
        ...     return wnp.linalg.solve(a, b)
        >>> wg.vmap(solve)(np.stack([np.eye(2), 2 * np.eye(2)]), np.ones((2, 2)))
        array([[1. , 1. ],
               [0.5, 0.5]])
    """
    f = custom_vmap(f)

    @f.def_vmap
    def rule(axis_size, in_batched, *args):
        flags, tree = flatten(in_batched)
        leaves = flatten(list(args))[0]
        mapped = [x for x, b in zip(leaves, flags) if b]

        def one(example):
            it = iter(example)
            return f(*unflatten(tree, [next(it) if b else x for x, b in zip(leaves, flags)]))
        if axis_size and not any(type(x) is Node for x in leaves):
            outs = [one([x[i] for x in mapped]) for i in range(axis_size)]
            out_leaves, out_tree = flatten(outs[0])
            stacked = [np.stack([np.asarray(flatten(o)[0][j]) for o in outs])
                       for j in range(len(out_leaves))]
            out = unflatten(out_tree, stacked)
        else:
            from .lax import map as lax_map
            out = lax_map(one, mapped)
        return out, unflatten(flatten(out)[1], [True] * len(flatten(out)[0]))
    return f
