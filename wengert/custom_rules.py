"""JAX's custom derivatives, `custom_jvp` and `custom_vjp`, as wengert primitives.

Code written for JAX declares a function's derivative with decorators::

    @wg.custom_jvp                      @wg.custom_vjp
    def f(x, y): ...                    def f(x, y): ...
    @f.defjvp                           f.defvjp(f_fwd, f_bwd)
    def f_jvp(primals, tangents):       #   f_fwd(x, y) -> (out, residuals)
        ... return out, tangent_out     #   f_bwd(residuals, g) -> (x_bar, y_bar)

Each decorated function becomes one primitive (`wg.primitive`) whose arguments are the
leaves of f's arguments, so f's arguments may be pytrees of arrays; f returns an array, a
number, or a pytree of them, which the primitive holds packed end to end in one flat
array (as `wg.checkpoint` does: `part` takes the leaves out again, and a rule's tangents
and cotangents are packed and unpacked the same way).  A `custom_jvp` rule serves
reverse mode too: its tangent is linear in the tangents, and the reverse sweep takes the
transpose of that linear map (the VJP of the rule along the tangents), as JAX does.  A
`custom_vjp` function, as in JAX, has no forward mode.  Its ``f_fwd`` runs again in the
reverse sweep to give ``f_bwd`` its residuals (the forward sweep keeps only f's
arguments and result, as for every primitive).  Rules written with wengert's functions
(wengert.numpy) differentiate again, to any order.

Inside ``wg.vmap(..., axis_name="i")`` f and its rules may hold collectives over "i"
(``lax.psum(x, "i")``), as in JAX.  A call with no batching rule of its own would be
called once per example, where "i" means nothing; so where f or a rule holds a collective
over the name of the vmap batching the call (found by tracing them once on the call's
shapes, `_Custom._probe`, and kept in the call's layout, which `held_axis_names` reads),
the batched call is the same primitive with a `_Batched` layout, whose value and rules are
f's and the rules' own under ``vmap(..., axis_name="i")``, as JAX batches a
custom_jvp_call: the collectives are computed over the batch, and the rules stay the
rules of the batched function.
"""
from __future__ import annotations

import functools
import inspect
import math

import numpy as np

from . import numpy as wnp
from .graph.active import current_graph, recording
from .graph.graph import Graph, ShapeDtype, aval
from .graph.node import Node
from .primitives.array import zeros_like
from .primitives.collective import axis_names as collective_names, bound_names, resolving
from .primitives.pack import part
from .primitives.registry import broadcasts_to, primitive, shape_of
from .tree import dict_keys, flatten, tree_map, unflatten

__all__ = ["custom_jvp", "custom_vjp"]


#: `_Layout.out_tree` of a function whose result is a single array or number.
ONE_LEAF = object()


class _Layout:
    """How a call's leaves and its non-differentiable arguments make f's arguments again:
    a primitive parameter, compared by identity (no two calls are merged by interning)."""

    __slots__ = ("tree", "fixed", "nondiff", "out_tree", "out_avals", "axis_names")

    def __init__(self, tree, fixed, nondiff):
        self.tree, self.fixed, self.nondiff = tree, fixed, nondiff
        self.out_tree = None        # f's result's structure (ONE_LEAF: not a container),
        self.out_avals = None       # None until f first returns; its leaves' (shape, dtype)
        self.axis_names = frozenset()   # those of the collectives f and its rules hold

    def pack(self, out, what="f"):
        """f's result (or a tangent of it) as the primitive's value: itself if it is one
        leaf, else its leaves flattened end to end (the first call fixes the layout)."""
        leaves, tree = flatten(out)
        for x in leaves:
            if type(x) is not Node and not isinstance(x, (int, float, complex, np.ndarray,
                                                          np.generic)):
                raise TypeError(f"{what} returned a {type(x).__name__} ({x!r:.40}); it must "
                                "return arrays or numbers, or a tuple, list or dict of them")
        single = len(leaves) == 1 and not isinstance(out, (tuple, list, dict))
        if self.out_tree is ONE_LEAF or (self.out_tree is None and single):
            if not single:
                raise TypeError(f"{what} returned a result of structure {tree}, where f's "
                                "result is one array or number (not in a tuple)")
            self.out_tree = ONE_LEAF
            return out
        if self.out_tree is None:
            self.out_tree = tree
            self.out_avals = [(tuple(shape_of(x)), np.result_type(x)) for x in leaves]
        elif tree != self.out_tree:
            raise TypeError(f"{what} returned a result of structure {tree}, where f's "
                            f"result is {self.out_tree}")
        dtype = np.result_type(*[d for _, d in self.out_avals], np.float64) \
            if any(d.kind in "fc" for _, d in self.out_avals) else np.float64
        return wnp.concatenate([wnp.ravel(wnp.astype(wnp.broadcast_to(x, shape), dtype))
                                for x, (shape, _) in zip(leaves, self.out_avals)])

    def unpack(self, packed):
        """The primitive's value (or a cotangent of it) as f's result."""
        if self.out_tree is ONE_LEAF or self.out_tree is None:
            return packed
        parts, start = [], 0
        for shape, dtype in self.out_avals:
            stop = start + math.prod(shape)
            x = part(packed, start=start, stop=stop, shape=shape)
            if np.dtype(dtype) != np.result_type(x):
                x = wnp.astype(x, dtype)
            parts.append(x)
            start = stop
        return unflatten(self.out_tree, parts)

    def arguments(self, leaves):
        """f's positional arguments from the differentiable ones' leaves."""
        diff = iter(unflatten(self.tree, leaves))
        return tuple(self.fixed[k] if k in self.nondiff else next(diff)
                     for k in range(len(self.fixed)))

    def split(self, args):
        """(the non-differentiable arguments, in order; the differentiable ones)."""
        return ([args[k] for k in self.nondiff],
                [a for k, a in enumerate(args) if k not in self.nondiff])

    def __repr__(self):
        return "..."                    # (printed graphs: the arguments are the node's)

    def digest_into(self, h):
        """What a graph's digest reads of the layout: the differentiable arguments'
        structure and the non-differentiable ones' values (the repr above says neither,
        so a loop body with k = 2 was taken for the one with k = 3)."""
        from .graph.graph import _digest_value
        h.update(repr((self.tree, self.nondiff)).encode())
        _digest_value(h, [self.fixed[k] for k in self.nondiff])


class _Batched:
    """The layout of a call batched by a vmap whose axis name the collectives of f (or of
    its rules) use: the primitive's value is ``vmap(one call, in_axes, axis_name)`` of
    the leaves, `inner` the layout of one example's call (see the module)."""

    __slots__ = ("inner", "in_axes", "axis_name", "aval")

    def __init__(self, inner, in_axes, axis_name, aval):
        self.inner, self.in_axes, self.axis_name, self.aval = inner, in_axes, axis_name, aval

    @property
    def axis_names(self):
        """Those of the collectives still to be computed: not the vmap's own."""
        return self.inner.axis_names - {self.axis_name}

    def map(self, fn, in_axes):
        """`fn` of one example mapped over the batch, with the axis name bound."""
        from .vectorize import vmap
        return vmap(fn, in_axes=in_axes, axis_name=self.axis_name)

    def __repr__(self):
        return f"vmap[{self.axis_name!r}]"

    def digest_into(self, h):
        h.update(repr((self.in_axes, self.axis_name)).encode())
        self.inner.digest_into(h)


def _leaves_like(ct, arg) -> list:
    """A cotangent's leaves in the layout of its argument's, None where the cotangent (or
    a subtree of it) is None: JAX's bwd may say "zero" for any part."""
    if ct is None:
        return [None] * len(flatten(arg)[0])
    if arg is None:
        return []
    if type(arg) is dict:
        if set(ct) != set(arg):
            raise KeyError(set(ct) ^ set(arg))
        return [x for k in dict_keys(arg) for x in _leaves_like(ct[k], arg[k])]
    if isinstance(arg, (tuple, list)):
        if not isinstance(ct, (tuple, list)) or len(ct) != len(arg):
            raise ValueError("length")
        return [x for c, a in zip(ct, arg) for x in _leaves_like(c, a)]
    return [ct]


class _Custom:
    """What custom_jvp and custom_vjp share: binding a call's arguments, the primitive,
    and calling f directly where nothing is traced."""

    kind = ""

    def __init__(self, fun, nondiff_argnums=()):
        if not callable(fun):
            raise TypeError(f"{self.kind} decorates a function, got {type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(sorted(set(nondiff_argnums)))
        self._signature = inspect.signature(fun)
        # (a function with a batching rule of its own, a custom_vmap one: under vmap the
        # call is f's batch, as in JAX, not f called once per example)
        self._batches_itself = getattr(fun, "batches_itself", False)

        def evaluate(*leaves, layout):
            plain = not any(type(v) is Node for v in leaves)
            if type(layout) is _Batched:
                one = layout.map(lambda *ls: evaluate(*ls, layout=layout.inner),
                                 layout.in_axes)
                if not plain:
                    return one(*leaves)
                with recording(None):   # (a collective over an enclosing name: NoValue)
                    return one(*leaves)
            if plain:
                # on plain numbers f records nothing in the trace that applies the
                # primitive: a transformation f runs (jax.vjp in JAX's fixed_point) would
                # else return that trace's nodes, and the primitive's value be a node
                with recording(None):
                    out = fun(*layout.arguments(leaves))
            else:
                out = fun(*layout.arguments(leaves))
            if plain:
                # (f read a traced value it closes over: the primitive's value would be a
                # node of the enclosing trace, and the rule would never see that value's
                # derivative; grad gave a wrong number silently)
                self._check_no_closure(out)
            return layout.pack(out, f"{self.kind} function {self.__name__!r}")
        # (named as f, or f_user where f's name is a built-in's, as wg.primitive does)
        evaluate.__name__ = getattr(fun, "__name__", "custom")
        self._prim = primitive(evaluate, complex=True)     # (rules in JAX's convention)
        # (the axis names of the collectives in f and its rules, per call: its layout's)
        self._prim.axis_names_of = lambda node: node.params["layout"].axis_names
        self._probed = {}
        by_example = self._prim._abstract_eval

        def abstract_eval(args, params):
            layout = params["layout"]
            return layout.aval if type(layout) is _Batched else by_example(args, params)
        self._prim._abstract_eval = abstract_eval
        self._prim.defbatch(self._batch)

    def _batch(self, args, mapped, node):
        """wg.vmap's rule: where f or its rules hold a collective over the vmap's axis
        name, the call batched as one call (`_Batched`); else None, one call per example
        as for any primitive without a rule."""
        name = resolving()
        if not self._batches_itself and (name is None or
                                         name not in node.params["layout"].axis_names):
            return None
        size = next(shape_of(a)[0] for a, m in zip(args, mapped) if m)
        layout = _Batched(node.params["layout"], tuple(0 if m else None for m in mapped),
                          name, ((size,) + tuple(node.shape), node.dtype))
        return self._prim(*args, layout=layout)

    def _probe(self, layout, leaves):
        """Inside the trace of a vmap that binds axis names, the names that the
        collectives of f and its rules use (`_batch` reads them): found by tracing them
        once on the leaves' shapes.  An error there is left for the call itself to raise."""
        key = (tuple(bound_names()), tuple(aval(x) for x in leaves))
        if key in self._probed:
            return self._probed[key]
        self._probed[key] = frozenset()     # (first: a rule that calls f probes no further)
        g = Graph()
        ins = [g.input(ShapeDtype(*aval(x))) for x in leaves]
        with recording(g):
            for part_of in self._parts(layout, ins, g):
                try:
                    part_of()
                except Exception:       # (the probe only looks; the call reports errors)
                    break
        names = self._probed[key] = collective_names(g)
        g.release()
        return names

    def _parts(self, layout, ins, graph):
        """What `_probe` traces, one part after the other: f, then its rules."""
        return [lambda: self.fun(*layout.arguments(ins))]

    def _check_no_closure(self, out):
        """Refuse f's result `out`, computed from arguments none of which is traced, if it
        is traced all the same: f closes over a traced value, whose derivative would come
        from f's own code and not from the rule (JAX refuses it too)."""
        if any(type(x) is Node for x in flatten(out)[0]):
            raise ValueError(
                f"{self.kind} function {self.__name__!r} computes with a traced value "
                "that is not one of its arguments (a variable it closes over); pass "
                "that value as an argument, so that its derivative goes through the "
                "rule")

    def _rules_missing(self):
        raise NotImplementedError

    def __getattr__(self, name):
        # (attributes of the decorated function, as JAX forwards them: a custom_vjp over a
        # custom_vmap function declares the vmap rule as f.def_vmap)
        fun = self.__dict__.get("fun")
        if fun is None or name.startswith("__"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(fun, name)

    def __call__(self, *args, **kwargs):
        self._rules_missing()
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        if bound.kwargs:
            raise TypeError(f"{self.kind} function {self.__name__!r}: keyword-only "
                            "parameters are not supported; make them positional")
        args = bound.args
        for k in self.nondiff_argnums:
            if k >= len(args):
                raise ValueError(f"{self.kind}: nondiff_argnums holds {k}, but "
                                 f"{self.__name__!r} got {len(args)} arguments")
        layout = _Layout(None, args, self.nondiff_argnums)
        fixed, diff = layout.split(args)
        if any(type(x) is Node for x in flatten(fixed)[0]):
            raise TypeError(f"{self.kind} function {self.__name__!r}: an argument in "
                            "nondiff_argnums holds a traced value, whose derivative would "
                            "be lost; leave it out of nondiff_argnums")
        leaves, layout.tree = flatten(diff)
        if bound_names() and any(type(x) is Node for x in leaves):
            layout.axis_names = self._probe(layout, leaves)
            graph = current_graph()
            if graph is not None and not layout.axis_names.isdisjoint(bound_names()):
                # recorded into the named vmap's trace, as a collective is, even where
                # every traced leaf is an enclosing trace's (a shared weight): the vmap
                # computes it
                return layout.unpack(graph.apply(self._prim, leaves, {"layout": layout}))
        if not any(type(x) is Node for x in leaves):
            from .dual import Dual, through
            if any(type(x) is Dual for x in leaves):
                # (a Dual is forward mode too: through a trace, so that the rule is the
                # one used, where the function itself would be differentiated)
                return through(self, args)
            out = self.fun(*args)
            self._check_no_closure(out)     # (the rule bypassed: as in the primitive's)
            return out
        return layout.unpack(self._prim(*leaves, layout=layout))


class custom_jvp(_Custom):
    """A function with a forward-mode rule of its own, as JAX's ``jax.custom_jvp``:
    ``f.defjvp(rule)`` with ``rule(primals, tangents) -> (f(*primals), tangent_out)``,
    primals and tangents tuples of f's arguments (a tangent is zeros where it is zero).
    Reverse mode transposes the rule's linear map, so `wg.grad` works as well;
    `nondiff_argnums` are arguments without derivative (settings), passed to the rule in
    front of the primals, as in JAX.

    Example:
        >>> import numpy as np, wengert as wg, wengert.numpy as wnp
        >>> @wg.custom_jvp
        ... def softplus(x):
        ...     return wnp.logaddexp(0.0, x)
        >>> @softplus.defjvp
        ... def softplus_jvp(primals, tangents):
        ...     x, = primals
        ...     t, = tangents
        ...     y = softplus(x)
        ...     return y, t * wnp.exp(x - y)              # the logistic function, stably
        >>> wg.grad(softplus)(800.0), float(wg.jvp(softplus, (0.0,), (2.0,))[1])
        (1.0, 1.0)
    """

    kind = "custom_jvp"

    def __init__(self, fun, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums)
        self.jvp = None

    def defjvp(self, jvp):
        """Declare the rule (usable as a decorator; returns it)."""
        if not callable(jvp):
            raise TypeError(f"defjvp takes the rule, a function, got {type(jvp).__name__}")
        self.jvp = jvp
        self._checked = set()                  # leaf shapes whose rule passed _check_linear
        rule = jvp
        what = f"the rule of {self.__name__!r}"

        def tangent_out(ts, leaves, ans, layout):
            if type(layout) is _Batched:        # (the rule of each example, mapped)
                axes = list(layout.in_axes)
                return layout.map(lambda ts, leaves, ans: tangent_out(
                    ts, leaves, ans, layout.inner), (axes, axes, 0))(list(ts), list(leaves),
                                                                     ans)
            fixed, primals = layout.split(layout.arguments(leaves))
            tangents = layout.split(layout.arguments(ts))[1]
            return _fitted(layout.pack(rule(*fixed, tuple(primals), tuple(tangents))[1],
                                       what), ans, what)

        def tangent(ts, *args, layout):        # (args: the leaves, then the result)
            leaves = args[:-1]
            ts = [zeros_like(x) if t is None else t for x, t in zip(leaves, ts)]
            return tangent_out(ts, leaves, args[-1], layout)

        def transpose(g, *args, layout):
            from .api import vjp
            leaves, ans = args[:-1], args[-1]

            def linear(*ts):
                return tangent_out(ts, leaves, ans, layout)
            at_zero, pullback = vjp(linear, *[zeros_like(x) for x in leaves])
            cts = pullback(g)
            key = tuple(shape_of(x) for x in leaves)
            if key not in self._checked and not any(type(v) is Node for v in (g, *args)) \
                    and _check_linear(self.__name__, linear, at_zero, g, cts, leaves):
                self._checked.add(key)
            return tuple(cts)

        self._prim.defjvp(tangent)
        self._prim.defvjp(transpose)
        return jvp

    def defjvps(self, *jvps):
        """Declare the rule as one function per argument, as JAX's ``defjvps``:
        ``jvps[i](t_i, ans, *primals)`` is argument i's share of the result's tangent (the
        shares are summed), None for an argument without one.  Not with nondiff_argnums.

        Example:
            >>> import wengert as wg, wengert.numpy as wnp
            >>> @wg.custom_jvp
            ... def mul(x, y):
            ...     return x * y
            >>> mul.defjvps(lambda tx, ans, x, y: tx * y, lambda ty, ans, x, y: x * ty)
            >>> wg.grad(mul, argnums=(0, 1))(2.0, 3.0)
            (3.0, 2.0)
        """
        if self.nondiff_argnums:
            raise TypeError(f"custom_jvp function {self.__name__!r}: defjvps cannot be used "
                            "with nondiff_argnums; use defjvp")
        for k, jvp in enumerate(jvps):
            if jvp is not None and not callable(jvp):
                raise TypeError(f"defjvps takes functions (or None), got "
                                f"{type(jvp).__name__} for argument {k}")

        def rule(primals, tangents):
            if len(jvps) != len(primals):
                raise TypeError(f"custom_jvp function {self.__name__!r} takes "
                                f"{len(primals)} arguments, but defjvps was given "
                                f"{len(jvps)} rules (one per argument, None for none)")
            ans = self(*primals)
            shares = [jvp(t, ans, *primals) for jvp, t in zip(jvps, tangents)
                      if jvp is not None]
            if not shares:
                return ans, tree_map(wnp.zeros_like, ans)
            return ans, tree_map(lambda *parts: functools.reduce(lambda a, b: a + b, parts),
                                 *shares)

        self.defjvp(rule)

    def _parts(self, layout, ins, graph):
        def rule():
            tangents = [graph.input(ShapeDtype(x.shape, x.dtype)) for x in ins]
            fixed, primals = layout.split(layout.arguments(ins))
            self.jvp(*fixed, tuple(primals), tuple(layout.split(layout.arguments(tangents))[1]))
        return super()._parts(layout, ins, graph) + [rule]

    def _rules_missing(self):
        if self.jvp is None:
            raise TypeError(f"custom_jvp function {self.__name__!r} has no rule: declare "
                            f"it with @{self.__name__}.defjvp (or defjvps)")


def _fitted(t, ans, what):
    """A rule's tangent of f's result, checked against the result's shape (a scalar zero
    broadcasts): a wrong shape would surface later as an error about something else."""
    shape, want = tuple(shape_of(t)), tuple(shape_of(ans))
    if shape == want:
        return t
    if not broadcasts_to(shape, want):
        raise ValueError(f"{what} returned a tangent of shape {shape}, where f's result "
                         f"has shape {want}")
    return wnp.broadcast_to(t, want)


def _check_linear(name, linear, at_zero, g, cts, leaves):
    """Refuse a rule whose tangent is not linear in the tangents.  Reverse mode transposes
    the rule, which is right only for a linear map: an affine or nonlinear one would give
    wg.grad a derivative other than wg.jvp's, silently.  Checked where the numbers are at
    hand: the tangent of zero tangents must be zero, and the dot-product test
    ``<g, T s> = <T' g, s>`` must hold for a random s (T the rule's map, T' its
    transpose as reverse mode computed it).  Returns whether it could check: real, finite
    numbers only (a linear rule at a singular point, t / (2 sqrt(0)), gives nan)."""
    values = [g, at_zero, *leaves, *[c for c in cts if c is not None]]
    if any(np.iscomplexobj(v) or not np.all(np.isfinite(v)) for v in values):
        return False
    at_zero = np.asarray(at_zero, dtype=float)
    if np.any(at_zero != 0):
        raise ValueError(
            f"custom_jvp rule of {name!r} is not linear in the tangents: for zero "
            f"tangents it gives a tangent up to {np.max(np.abs(at_zero)):.3g}, not zero. "
            "Reverse mode transposes the rule, so wg.grad would disagree with wg.jvp; "
            "write the tangent as a linear function of `tangents` (no constant terms)")
    rng = np.random.default_rng(0)
    s = [rng.standard_normal(shape_of(x)) if np.result_type(x).kind == "f"
         else np.zeros(shape_of(x)) for x in leaves]
    ts = np.asarray(linear(*s), dtype=float)
    if not np.all(np.isfinite(ts)):
        return False
    g = np.asarray(g, dtype=float)
    pairs = [(np.asarray(c, dtype=float), si) for c, si in zip(cts, s) if c is not None]
    lhs = float(np.vdot(g, ts))
    rhs = sum(float(np.vdot(c, si)) for c, si in pairs)
    scale = float(np.linalg.norm(g) * np.linalg.norm(ts)) + sum(
        float(np.linalg.norm(c) * np.linalg.norm(si)) for c, si in pairs)
    if scale == 0:
        return False                            # (a zero cotangent tells nothing)
    if abs(lhs - rhs) > 1e-6 * scale:
        raise ValueError(
            f"custom_jvp rule of {name!r} is not linear in the tangents: for a random "
            f"tangent s and cotangent g, <g, rule(s)> = {lhs:.6g} but <transpose(g), s> = "
            f"{rhs:.6g}. Reverse mode transposes the rule, so wg.grad would disagree with "
            "wg.jvp; write the tangent as a linear function of `tangents` (products and "
            "functions of primals times tangents, no products or functions of tangents)")
    return True


class custom_vjp(_Custom):
    """A function with a reverse-mode rule of its own, as JAX's ``jax.custom_vjp``:
    ``f.defvjp(fwd, bwd)`` with ``fwd(*args) -> (f(*args), residuals)`` and
    ``bwd(residuals, g) -> (one cotangent per argument)`` (None where zero); with
    `nondiff_argnums`, bwd takes those arguments first, as in JAX.  fwd runs again in
    the reverse sweep (see the module).  It has no forward mode, as in JAX.

    Example:
        >>> import numpy as np, wengert as wg, wengert.numpy as wnp
        >>> @wg.custom_vjp
        ... def clip_gradient(x):
        ...     return x
        >>> def fwd(x):
        ...     return x, None
        >>> def bwd(res, g):
        ...     return (wnp.clip(g, -1.0, 1.0),)
        >>> clip_gradient.defvjp(fwd, bwd)
        >>> wg.grad(lambda x: wnp.sum(clip_gradient(x) * 5.0))(np.ones(2))
        array([1., 1.])
    """

    kind = "custom_vjp"

    def __init__(self, fun, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums)
        self.fwd = self.bwd = None

    def defvjp(self, fwd, bwd):
        """Declare the rule: fwd gives the result and the residuals, bwd the cotangents."""
        if not callable(fwd) or not callable(bwd):
            raise TypeError("defvjp takes two functions, fwd and bwd")
        self.fwd, self.bwd = fwd, bwd
        name = self.__name__

        def cotangents(g, *args, layout):       # (args: the leaves, then the result)
            if type(layout) is _Batched:
                # the rule of each example, mapped; a shared leaf's cotangent is the sum
                # of every example's
                axes = list(layout.in_axes)
                cts = layout.map(lambda g, leaves: list(cotangents(
                    g, *leaves, None, layout=layout.inner)), (0, axes))(g, list(args[:-1]))
                return tuple(c if c is None or a == 0 else wnp.sum(c, axis=0)
                             for c, a in zip(cts, axes))
            args = layout.arguments(args[:-1])
            fixed, diff = layout.split(args)
            found = fwd(*args)
            if not isinstance(found, tuple) or len(found) != 2:
                raise TypeError(f"custom_vjp {name!r}: fwd must return (output, residuals), "
                                f"got {type(found).__name__}")
            cts = bwd(*fixed, found[1], layout.unpack(g))
            if not isinstance(cts, (tuple, list)) or len(cts) != len(diff):
                raise TypeError(f"custom_vjp {name!r}: bwd must return a tuple with one "
                                f"cotangent per differentiable argument ({len(diff)}), got "
                                f"{cts!r:.60}")
            out = []
            for k, (arg, ct) in enumerate(zip(diff, cts)):
                try:
                    out += _leaves_like(ct, arg)
                except (KeyError, TypeError, ValueError):
                    raise TypeError(f"custom_vjp {name!r}: bwd's cotangent {k} does not have "
                                    f"the structure of its argument: {ct!r:.60}") from None
            return tuple(out)

        def no_forward_mode(ts, *rest, layout):
            raise TypeError(f"custom_vjp function {name!r} has no forward-mode rule (as in "
                            "JAX): use reverse mode (wg.grad, wg.vjp, wg.jacrev), or "
                            "declare it with wg.custom_jvp")

        self._prim.defvjp(cotangents)
        self._prim.defjvp(no_forward_mode)

    def _parts(self, layout, ins, graph):
        def rule():
            args = layout.arguments(ins)
            out, residuals = self.fwd(*args)
            g = tree_map(lambda o: graph.input(ShapeDtype(*aval(o))), out)
            self.bwd(*layout.split(args)[0], residuals, g)
        return super()._parts(layout, ins, graph) + [rule]

    def _rules_missing(self):
        if self.fwd is None:
            raise TypeError(f"custom_vjp function {self.__name__!r} has no rule: declare "
                            f"it with {self.__name__}.defvjp(fwd, bwd)")
