"""The public transformations: grad, value_and_grad, vjp, jvp, jacfwd, jacrev, hessian,
hvp and trace.

Every transformation works the same way: it makes one input node per array or number it
differentiates with respect to, calls the function on them (which records the function's
graph), then runs a sweep of `wengert.ad` over the nodes between inputs and outputs.

* Called on plain numbers, a transformation records into a fresh graph and its sweep
  computes numbers: eager mode, with Python control flow on values.
* Called inside another transformation (on that one's traced values), it records into the
  same graph; its inputs are *copies* of the values it was given, so it differentiates
  with respect to its own variables only (no perturbation confusion), and its sweep builds
  graph nodes, so the outer transformation can differentiate the result again.
"""
from __future__ import annotations

import functools
import itertools
import math
import inspect
import re
import types

import numpy as np

from . import ad
from .ad.batched import all_at_once
from .graph.active import is_recording, recording, current_graph, optimizing
from .graph.graph import F64, Graph, ShapeDtype, aval, number, shape_dtype
from .primitives.registry import is_weak
from .graph.node import Node
from .errors import ConcretizationError
from .tree import flatten, hold_constants, unflatten, _LEAF_DEF as _LEAF
from . import numpy as wnp

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "jacfwd", "jacrev", "hessian", "hvp",
           "trace", "value", "eval_shape"]

C128 = np.dtype(np.complex128)


# --------------------------------------------------------------------------------------
# checking what users pass
# --------------------------------------------------------------------------------------
def _check_fun(f, who):
    if not callable(f):
        raise TypeError(f"{who} expects a function to differentiate, got "
                        f"{type(f).__name__} {f!r:.60}")


def _check_argnums(argnums, who):
    """argnums as a tuple of ints, and whether a single int was given."""
    if isinstance(argnums, (bool, np.bool_)):
        raise TypeError(f"{who}: argnums must be an int or a tuple of ints, got {argnums!r}")
    if isinstance(argnums, (int, np.integer)):
        return (int(argnums),), True
    if isinstance(argnums, (tuple, list)) and argnums and all(
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in argnums):
        if len(set(argnums)) != len(argnums):
            raise ValueError(f"{who}: argnums {tuple(argnums)} repeats an argument")
        return tuple(int(a) for a in argnums), False
    raise TypeError(f"{who}: argnums must be an int or a non-empty tuple of ints, "
                    f"got {argnums!r}")


def _resolve_argnums(argnums, nargs, who):
    out = []
    for a in argnums:
        if not -nargs <= a < nargs:
            raise ValueError(f"{who}: argnums={a} is out of range: the function was called "
                             f"with {nargs} positional argument{'s' if nargs != 1 else ''}")
        out.append(a % nargs)
    if len(set(out)) != len(out):
        raise ValueError(f"{who}: argnums {argnums} name the same argument twice")
    return out


def _param_names(f):
    """The names of f's positional parameters (for messages that name an argument)."""
    if type(f) is types.FunctionType and "__wrapped__" not in f.__dict__ \
            and "__signature__" not in f.__dict__:
        # (a plain function's are in its code: inspect.signature costs ~30 µs a call, and
        # vjp, jvp and every batched sweep ask for a fresh closure's)
        code = f.__code__
        return list(code.co_varnames[:code.co_argcount])
    if type(f) is types.MethodType and type(f.__func__) is types.FunctionType:
        return _param_names(f.__func__)[1:]          # (a bound method: self is given)
    try:
        params = inspect.signature(f).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _primal_leaf(x, where, who):
    """A leaf the user wants derivatives for, as a float or float array (ints are widened)."""
    t = type(x)
    if t is float or (t is np.ndarray and x.dtype.kind in "fc"):
        return x
    if t is Node:
        if x.dtype.kind in "iu":        # widened, as a plain int array is (under compile
            return wnp.astype(x, np.float64)    # and vmap as in eager calls)
        if x.dtype.kind not in "fc":
            raise TypeError(f"{who}: {where} is a traced value of dtype {x.dtype}; "
                            "derivatives are taken with respect to floating-point values")
        return x
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{who}: {where} is a bool ({x!r}); derivatives are taken with respect "
                        "to floating-point values")
    if isinstance(x, (int, np.integer)):
        return float(x)
    if isinstance(x, np.floating):
        return float(x) if x.dtype == np.float64 else x
    if isinstance(x, (complex, np.complexfloating)):
        return x
    if isinstance(x, np.ndarray):
        if x.dtype.kind in "fc":
            return x
        if x.dtype.kind in "iu":
            return x.astype(np.float64)
        raise TypeError(f"{who}: {where} is an array of dtype {x.dtype}; derivatives are "
                        "taken with respect to floating-point values")
    if isinstance(x, ShapeDtype):
        return x
    raise TypeError(f"{who}: {where} is a {type(x).__name__} ({x!r:.40}); differentiable "
                    "arguments must be floats or complex numbers, NumPy float or complex "
                    "arrays, or tuples, lists and dicts of them (or of classes registered "
                    "with wengert.tree.register_pytree_node or register_dataclass)")


def direction_leaves(point, direction, name, noun, who):
    """The leaves of `direction` (a tangent at `point`, called `name` in messages), as
    floats and float arrays, after checking that it has the point's structure and shapes.
    Forward mode and Taylor mode take their directions so."""
    p_leaves, p_tree = flatten(point)
    d_leaves, d_tree = flatten(direction)
    if p_tree != d_tree:
        raise ValueError(f"{who}: {name} has structure {p_tree} but its {noun} has {d_tree}")
    out = []
    for a, b in zip(p_leaves, d_leaves):
        (shape_a, dtype_a), (shape_b, dtype_b) = aval(a), aval(b)
        if shape_a != shape_b:
            raise ValueError(f"{who}: {name} has shape {shape_a} but its {noun} has "
                             f"shape {shape_b}")
        if dtype_b.kind == "c" and dtype_a.kind != "c":
            # (a real value moves along real directions: the complex part would be kept by
            # some rules and dropped by others)
            raise TypeError(f"{who}: {name} is real ({dtype_a}) but its {noun} is complex "
                            f"({dtype_b}): a real value moves along real directions (make "
                            f"{name} complex to move it in the complex plane)")
        out.append(b if type(b) is Node else _primal_leaf(b, f"the {noun} of {name}", who))
    return out


_LEAF_NAMES: dict = {}


def _leaf_names(name, n):
    """The labels of an argument's n leaves: ``x``, or ``x_0, x_1, ...``.  Remembered:
    every eager gradient names its inputs."""
    names = _LEAF_NAMES.get((name, n))
    if names is None:
        names = (name,) if n == 1 else tuple(f"{name}_{i}" for i in range(n))
        if len(_LEAF_NAMES) < 4096:          # (argument names are few; bound it anyway)
            _LEAF_NAMES[name, n] = names
    return names


# --------------------------------------------------------------------------------------
# recording a call
# --------------------------------------------------------------------------------------
def _as_0d(v):
    """A scalar derivative as a 0-d array of its dtype (the derivative of an argument
    given as one); a traced value or an array as it is."""
    if type(v) is not Node and not np.ndim(v):
        return np.asarray(v, np.result_type(v))
    return v


class _Call:
    """A function called on input nodes: the graph, the inputs, what came out."""

    def __init__(self, f, args, kwargs, argnums, who, names, forward_only=False):
        graph = current_graph()
        self.fresh = graph is None
        if self.fresh:
            # An eager call's graph is swept once, numerically, and released: interning and
            # simplification would only cost time, so it records op by op, as NumPy
            # computes.  A nested transformation that records into it switches them on
            # (as wg.options says), since the derivative nodes it adds are swept again.
            graph = Graph(optimize=False)
            graph.nested_optimize = optimizing()
            graph.forward_only = forward_only
        else:
            graph.optimize = graph.nested_optimize
        self.graph = graph
        call_args = list(args)
        self.inputs = []
        self.in_trees = []
        self.zero_d = set()     # ids of inputs given as 0-d arrays: their derivatives are too
        for i in argnums:
            name = names[i] if i < len(names) else f"arg{i}"
            leaves, tree = flatten(args[i])
            if not leaves:
                raise TypeError(f"{who}: argument {name!r} ({args[i]!r:.40}) contains no "
                                "number to differentiate with respect to")
            nodes = []
            for x, lab in zip(leaves, _leaf_names(name, len(leaves))):
                nodes.append(self._input(x, lab, who))
                if type(x) is np.ndarray and not x.ndim:
                    self.zero_d.add(id(nodes[-1]))
            self.inputs.extend(nodes)
            self.in_trees.append(tree)
            call_args[i] = unflatten(tree, nodes)
        with recording(graph):
            self.out = f(*call_args, **kwargs)

    def _input(self, x, name, who):
        g = self.graph
        if type(x) is np.ndarray and x.dtype.kind == "f" and self.fresh:   # the common case
            return g.input(x, name)
        weak = type(x) in (float, int)      # (np.float64(2.0) is strong, as in NumPy 2)
        x = _primal_leaf(x, f"argument {name!r}", who)
        if type(x) is Node:
            if x.graph is not g and is_recording(x.graph):
                x = g.lift(x)       # an enclosing trace's value: wg.vmap's trace takes it
                #                     as an input of its own, others refuse it (see lift)
            if x.graph is g:
                return g.copy(x)
            if x.value is None:
                raise ValueError(f"traced value {x.label()} belongs to a finished trace that "
                                 "has no values: it escaped the function that was traced")
            weak = is_weak(x)
            x = x.value
        if not self.fresh:
            # A plain number differentiated inside another trace: a variable equal to a
            # constant of that trace (not an input of it, which its caller never gives),
            # the user's array taken by value (what is computed from it may be kept)
            return g.copy(g.const(x, weak=weak, snapshot=True))
        return g.input(x, name, weak=weak)

    @property
    def symbolic(self) -> bool:
        """Whether sweeps must build nodes: someone is still recording into the graph."""
        return is_recording(self.graph)

    def output_nodes(self, out, who):
        if type(out) is Node and out.graph is self.graph:        # one traced output
            return [out], _LEAF
        leaves, tree = flatten(out)
        nodes = []
        for x in leaves:
            if type(x) is not Node and \
                    not isinstance(x, (int, float, complex, np.number, np.ndarray)):
                raise TypeError(f"{who}: the function returned a {type(x).__name__} "
                                f"({x!r:.40}); outputs must be numbers, arrays, or tuples, "
                                "lists and dicts of them")
            nodes.append(self.graph.lift(x))
        return nodes, tree

    def finish(self, x):
        """What a result looks like to the caller: numbers in eager mode, nodes inside
        another transformation."""
        if self.symbolic:
            return x
        return x.value if type(x) is Node else x

    def reverse_plan(self, outputs, aux):
        """(plan, active set) for reverse sweeps from `outputs` back to the inputs.

        Before an eager sweep, the intermediate values it will not read are let go (see
        `wengert.ad.reverse.drop_unread`).  Nothing is dropped from a graph that is still
        being recorded into, or that belongs to an enclosing transformation."""
        if self.fresh and not self.symbolic:
            keep = outputs if aux is None else \
                list(outputs) + [x for x in flatten(aux)[0] if type(x) is Node]
            return ad.eager_plan(self.graph, self.inputs, outputs, keep)
        plan = self.graph.between(self.inputs, outputs)
        return plan, ad.active_indices(plan, self.inputs)

    def kept(self, out, aux):
        """For a sweep that runs once: the indices of the nodes whose values the call
        reads after it (`out`, aux's nodes), the others being let go as it passes them
        (`wengert.ad.reverse`'s ``release``); None where nothing may go (a graph still
        recorded into)."""
        if not self.fresh or self.symbolic:
            return None
        kept = {out.index}
        if aux is not None:
            kept.update(x.index for x in flatten(aux)[0] if type(x) is Node)
        return kept

    def done(self):
        """The call's results are out: an eager graph of its own is released at once (its
        nodes would otherwise wait for the cycle collector, with their values)."""
        if self.fresh and not self.symbolic:
            self.graph.release()

    def cotangents(self, values):
        """The derivatives a sweep found for the inputs as the caller gets them: zeros
        where it found none, and in each input's own float dtype (a float32 argument gets
        a float32 gradient, as in JAX), though the sweep may have promoted them."""
        out = []
        for v, x in zip(values, self.inputs):
            if v is None:
                v = self.zeros(x)
            elif x.dtype is F64:
                if not x.shape and type(v) is not float and type(v) is not Node \
                        and np.result_type(v) == F64:
                    # (an array rule's 0-d array: float64 scalars are floats; a weak
                    # argument's derivative in a float32 computation stays float32)
                    v = float(v)
            elif x.dtype.kind in "fc":
                # (a complex input's may have come out real: Re(z) reads no imaginary part)
                v = _in_dtype(v, x.dtype)       # (traced too: compile(grad(f)) is grad(f))
            out.append(self._like_input(v, x))
        return out

    def _like_input(self, v, x):
        """A derivative with respect to input `x` as a 0-d array where `x` was given as
        one (a NumPy 0-d array's gradient is a 0-d array, as JAX's is, so
        `x - lr * grad(f)(x)` keeps its type); otherwise `v` as it is."""
        if self.zero_d and id(x) in self.zero_d:
            return _as_0d(v)
        return v

    def zeros(self, like):
        """The zero derivative for a node like `like`, in the current mode (float64 for an
        int or bool node)."""
        if like.shape == () and (like.dtype == np.float64 or like.dtype.kind not in "fc"):
            z = 0.0
        elif like.shape == () and like.dtype == C128:
            z = 0j          # (a complex128 scalar's derivative is a Python complex)
        elif like.shape == ():
            z = like.dtype.type(0)      # (a NumPy scalar, as a float32 scalar's values are)
        else:
            z = np.zeros(like.shape, like.dtype if like.dtype.kind in "fc" else np.float64)
        return self.graph.const(z) if self.symbolic else z

    def zero_block(self, out, x):
        """The Jacobian block of an int or bool output `out` with respect to input `x`:
        such an output is piecewise constant, so its derivative is zero wherever it
        exists.  Zeros of shape out.shape + x.shape in x's float dtype (as a gradient with
        respect to x has), whichever mode asks, so jacfwd and jacrev agree."""
        return self.jacobian_block(self.zeros(ShapeDtype(out.shape + x.shape, x.dtype)),
                                   out, x)

    def jacobian_block(self, block, out, x):
        """A Jacobian block d out / d x in the dtype both modes give it: out's and x's
        float dtypes promoted together (a float32 function of float32 arguments has
        float32 blocks, though a rule's float64 constants promoted the sweep), x's for an
        int or bool out; out's alone for an x that is a Python number, which gives way in
        the function's own promotion (weakly typed, as `grad` and JAX have it).  A scalar
        block is a float for float64, else a NumPy scalar."""
        if out.dtype.kind not in "fc":
            dtype = x.dtype
        elif is_weak(x):
            dtype = out.dtype
        else:
            dtype = np.result_type(out.dtype, x.dtype)
        block = _in_dtype(block, dtype)
        if type(block) is np.ndarray and block.ndim == 0:
            block = float(block) if dtype == F64 else block[()]
        return self._like_input(block, x)

    def split(self, values):
        """Split a flat list (one per input leaf) into one pytree per differentiated arg."""
        out, k = [], 0
        for tree in self.in_trees:
            if tree is _LEAF:            # (one number: a Jacobian's row has one per input)
                out.append(values[k])
                k += 1
                continue
            n = tree.num_leaves
            out.append(unflatten(tree, values[k:k + n]))
            k += n
        return out


def _in_dtype(v, dtype):
    """A derivative (a node, an array or a number) in the float dtype `dtype`, cast where
    it is not: a number a float for float64, else a NumPy scalar."""
    if type(v) is Node:
        return v if v.dtype == dtype else wnp.astype(v, dtype)
    if np.result_type(v) == dtype:
        return complex(v) if dtype == C128 and not np.ndim(v) else v
    if np.ndim(v):
        return np.asarray(v, dtype)
    if dtype == F64:
        return float(v)
    return complex(v) if dtype == C128 else dtype.type(v)


def _as_scalar_output(out, who, holomorphic=False):
    if isinstance(out, (tuple, list, dict)):
        raise TypeError(f"{who} needs a function that returns a scalar, but it returned a "
                        f"{type(out).__name__}; use wg.jacrev or wg.vjp for several outputs, "
                        "or has_aux=True to return (value, auxiliary data)")
    shape = aval(out)[0] if isinstance(out, (Node, int, float, complex, np.number, np.ndarray)) \
        else None
    if shape is None:
        raise TypeError(f"{who} needs a function that returns a scalar, but it returned a "
                        f"{type(out).__name__} ({out!r:.40})")
    if shape != () and math.prod(shape) != 1:       # (size 1 is a scalar, as in autograd)
        raise TypeError(f"{who} needs a function that returns a scalar, but it returned an "
                        f"array of shape {shape}; use wg.jacrev or wg.vjp for array outputs")
    dtype = aval(out)[1]
    if holomorphic:
        if dtype.kind != "c":
            raise TypeError(f"{who}(holomorphic=True) needs a function with a complex "
                            f"result, but it returned a {dtype} value")
        return out
    if dtype.kind == "c":
        raise TypeError(f"{who} needs a function with a real-valued result, but it returned "
                        f"a {dtype} value: differentiate its real part, imaginary part or "
                        "absolute value (np.real, np.imag, np.abs), use wg.vjp, or pass "
                        "holomorphic=True for the complex derivative f'(z) of a holomorphic f")
    if dtype.kind == "b":
        raise TypeError(f"{who} needs a function with a real-valued result, but it returned "
                        f"a {dtype} value")
    return out


def _split_aux(out, has_aux, who):
    if not has_aux:
        return out, None
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        got = "a traced value" if type(out) is Node else f"a {type(out).__name__}"
        raise TypeError(f"{who}(has_aux=True) needs a function returning a pair "
                        f"(output, aux), but it returned {got}")
    return out[0], out[1]


def _finish_tree(call, tree):
    leaves, d = flatten(tree)
    return unflatten(d, [call.finish(x) for x in leaves])


# --------------------------------------------------------------------------------------
# reverse mode
# --------------------------------------------------------------------------------------
def value_and_grad(f, argnums=0, has_aux=False, *, holomorphic=False,
                   _who="value_and_grad"):
    """Like `grad`, but the new function returns ``(f(*args), gradient)``.

    Example:
        >>> import wengert as wg
        >>> wg.value_and_grad(lambda x, y: x * y + wg.math.sin(x), argnums=(0, 1))(2.0, 3.0)
        (6.909297426825682, (2.5838531634528574, 2.0))
        >>> vg = wg.value_and_grad(lambda z: z ** 2, holomorphic=True)   # (z², 2z)
        >>> vg(1 + 2j) == (-3 + 4j, 2 + 4j)
        True
    """
    who = _who
    _check_fun(f, who)
    nums, single = _check_argnums(argnums, who)
    names = None
    resolved = {}                        # number of arguments -> argnums made positive

    @functools.wraps(f)
    def value_and_grad_f(*args, **kwargs):
        nonlocal names
        if names is None:
            names = _param_names(f)
        idx = resolved.get(len(args))
        if idx is None:
            idx = resolved[len(args)] = _resolve_argnums(nums, len(args), who)
        if holomorphic:
            _complex_inputs(args, idx, names, who)
        call = _Call(f, args, kwargs, idx, who, names)
        out, aux = _split_aux(call.out, has_aux, who)
        if type(out) is not Node or out.shape != () or out.dtype.kind != "f" or holomorphic:
            _as_scalar_output(out, who, holomorphic)
        (out_node,), _ = call.output_nodes(out, who)
        symbolic = call.symbolic
        plan, active = call.reverse_plan([out_node], aux)
        # the seed in the output's precision: a float32 loss sweeps in float32
        seed = 1.0 if out_node.dtype is F64 or out_node.dtype.kind != "f" else \
            out_node.dtype.type(1.0)
        if out_node.shape != ():                    # an array of size 1
            seed = np.ones(out_node.shape, type(seed))
        grads = ad.reverse(plan, call.inputs, [out_node], [seed], symbolic, active=active,
                           release=call.kept(out_node, aux))
        grads = call.cotangents(grads)
        per_arg = call.split(grads)
        result = per_arg[0] if single else tuple(per_arg)
        value = call.finish(out_node)
        if has_aux:
            aux = _finish_tree(call, aux)
        call.done()
        return ((value, aux), result) if has_aux else (value, result)

    return value_and_grad_f


def grad(f, argnums=0, has_aux=False, *, holomorphic=False):
    """The gradient of a scalar function, by reverse mode.

    Args:
        f: a function returning a scalar (a float, or an array of size 1 as in autograd).
        argnums: which positional argument(s) to differentiate: an int, or a tuple of ints
            (then a tuple of gradients is returned).
        has_aux: f returns ``(value, aux)``; the new function returns ``(gradient, aux)``.
        holomorphic: f is a holomorphic function of complex arguments with a complex
            result, and the gradient is its complex derivative f'(z) (as JAX's
            ``holomorphic=True``: not conjugated).  Arguments and result must be complex
            (TypeError otherwise).  That f is holomorphic is not checked: for one that is
            not (abs, conj, real) the result is the pullback of 1, which is no derivative
            (docs/complex.md).  Without it, f's result must be real, and a complex
            argument's gradient is ∂f/∂x - i∂f/∂y.

    Returns:
        A function with f's arguments that returns the gradient, shaped like the argument
        (a pytree of the same structure).

    Example:
        >>> import wengert as wg
        >>> df = wg.grad(lambda x: 3 * x ** 2 + 2 * x + 1)
        >>> df(1.0)
        8.0
        >>> wg.grad(wg.grad(lambda x: 3 * x ** 2 + 2 * x + 1))(1.0)
        6.0
        >>> wg.grad(lambda z: z ** 2, holomorphic=True)(1 + 2j)     # d/dz z² = 2z
        (2+4j)
    """
    vg = value_and_grad(f, argnums, has_aux, holomorphic=holomorphic, _who="grad")

    @functools.wraps(f)
    def grad_f(*args, **kwargs):
        value, g = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return grad_f


def vjp(f, *primals, has_aux=False):
    """Evaluate f and return its pullback (Zygote's ``pullback``; JAX's ``vjp``).

    Returns ``(out, pullback)`` where ``pullback(cotangent)`` returns a tuple with one
    cotangent per primal: ``cotangentᵀ · ∂out/∂primal``.  The pullback may be called many
    times; it reuses the recorded graph.  Arrays are taken by value: changing a primal
    or an array f closed over in place afterwards does not change what the pullback
    returns.

    Example:
        >>> import wengert as wg
        >>> out, back = wg.vjp(lambda x, y: (x * y, x + y), 2.0, 3.0)
        >>> out
        (6.0, 5.0)
        >>> back((1.0, 0.0)), back((0.0, 1.0))
        ((3.0, 2.0), (1.0, 1.0))
    """
    _check_fun(f, "vjp")
    if not primals:
        raise TypeError("vjp needs at least one primal argument: wg.vjp(f, x, ...)")
    # The pullback outlives the call: it must not see the caller change a primal in
    # place (a parameter stepped) before it is called, so writeable arrays are copied.
    # (Arrays the function closes over are copied as they are used: Graph._snapshot.)
    primals = tuple(unflatten(tree, [np.array(x) if type(x) is np.ndarray and
                                     x.flags.writeable else x for x in leaves])
                    for leaves, tree in map(flatten, primals))
    call = _Call(f, primals, {}, range(len(primals)), "vjp", _param_names(f))
    out, aux = _split_aux(call.out, has_aux, "vjp")
    out_nodes, out_tree = call.output_nodes(out, "vjp")
    plan = active = None
    if not call.symbolic:
        plan, active = call.reverse_plan(out_nodes, aux)

    def pullback(cotangent):
        nonlocal plan, active
        cts, ct_tree = flatten(cotangent)
        if ct_tree != out_tree:
            raise ValueError(f"pullback: the cotangent has structure {ct_tree}, but the "
                             f"function's output has structure {out_tree}")
        for c, o in zip(cts, out_nodes):
            if aval(c)[0] != o.shape:
                raise ValueError(f"pullback: a cotangent of shape {aval(c)[0]} was given "
                                 f"for an output of shape {o.shape}")
        if not call.graph.nodes:        # released by the transformation it was made in
            raise ValueError("pullback: it was made inside a transformation that has "
                             "finished, and its graph is gone; call it before that "
                             "transformation returns, or return what you need from it")
        if plan is None:
            plan, active = call.reverse_plan(out_nodes, None)
        symbolic = call.symbolic
        if not symbolic and any(n.value is None for n in out_nodes):
            raise ValueError("pullback: the recorded graph has no values (it was traced "
                             "abstractly) and is no longer being traced")
        cts = [c if type(c) is Node else _primal_leaf(c, "the cotangent", "pullback")
               for c in cts]
        res = ad.reverse(plan, call.inputs, out_nodes, cts, symbolic, active=active)
        res = call.cotangents(res)
        return tuple(call.split(res))

    out = unflatten(out_tree, [call.finish(n) for n in out_nodes])
    if has_aux:
        return out, pullback, _finish_tree(call, aux)
    return out, pullback


# --------------------------------------------------------------------------------------
# forward mode
# --------------------------------------------------------------------------------------
def jvp(f, primals, tangents, has_aux=False):
    """Evaluate f and its directional derivative: forward mode.

    Args:
        f: the function.
        primals: a tuple (or list) of arguments.
        tangents: a tuple of the same structure: the direction.
        has_aux: f returns ``(output, aux)``; aux is returned as it is, third.

    Returns:
        ``(f(*primals), ∂f/∂primals · tangents)``, and aux with `has_aux`.

    Example:
        >>> import wengert as wg
        >>> wg.jvp(lambda x1, x2: x1 * x2 + wg.math.sin(x1), (2.0, 3.0), (1.0, 0.0))
        (6.909297426825682, 2.5838531634528574)
        >>> wg.jvp(lambda x: (x ** 2, "note"), (3.0,), (1.0,), has_aux=True)
        (9.0, 6.0, 'note')
    """
    _check_fun(f, "jvp")
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp takes primals and tangents as tuples: "
                        "wg.jvp(f, (x,), (v,)), got "
                        f"{type(primals).__name__} and {type(tangents).__name__}")
    if len(primals) != len(tangents):
        raise ValueError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    return _jvp(f, primals, tangents, "jvp", has_aux=has_aux)


def _jvp(f, primals, tangents, who, names=None, has_aux=False):
    """`jvp` for `who` (jvp, hvp), whose errors call the primals and tangents `names`."""
    t_leaves = []
    for i, (p, t) in enumerate(zip(primals, tangents)):
        primal, tangent = names or (f"primal {i}", "tangent")
        t_leaves += direction_leaves(p, t, primal, tangent, who)
    call = _Call(f, tuple(primals), {}, range(len(primals)), who, _param_names(f),
                 forward_only=True)
    out, aux = _split_aux(call.out, has_aux, who)
    out_nodes, out_tree = call.output_nodes(out, who)
    plan = call.graph.between(call.inputs, out_nodes)
    tans = ad.forward(plan, call.inputs, t_leaves, out_nodes, call.symbolic)
    tans = [call.zeros(o) if t is None else t for t, o in zip(tans, out_nodes)]
    if not call.symbolic:       # (a rule's 0-d array or NumPy scalar: a number, as the
        tans = [number(t) for t in tans]        # primal is)
    out = unflatten(out_tree, [call.finish(n) for n in out_nodes])
    if has_aux:
        aux = _finish_tree(call, aux)
    call.done()
    if has_aux:
        return out, unflatten(out_tree, tans), aux
    return out, unflatten(out_tree, tans)


# --------------------------------------------------------------------------------------
# Jacobians
# --------------------------------------------------------------------------------------
def _basis(node):
    """Unit directions for a leaf: one per element."""
    if node.shape == ():
        yield 1.0 if node.dtype.kind != "c" else 1 + 0j
        return
    for k in range(node.size):
        e = np.zeros(node.size, dtype=node.dtype)
        e[k] = 1.0
        yield e.reshape(node.shape)


#: Sweeps along at least this many unit directions run as one batched sweep (wg.vmap of
#: the sweep): tracing it costs about as much as four to eight sweeps of their own.
BATCHED_SWEEPS_FROM = 8
#: ... in chunks of at most this many elements of intermediate values (directions times
#: the elements the plan's nodes hold), which bounds the memory a batched sweep takes.
BATCHED_SWEEP_ELEMENTS = 1 << 22


def _sweeps(sweep, node, plan, count):
    """``sweep(e)`` (a list of `count` results) for every unit direction e of `node`,
    stacked: for each result, its values for all directions in order (a list of them, or
    an array with the directions on axis 0)."""
    if node.size >= BATCHED_SWEEPS_FROM:
        # directions per batched sweep: as many as the memory bound lets through (a
        # batch too small to pay for its trace is no batch)
        chunk = min(node.size, BATCHED_SWEEP_ELEMENTS // (sum(n.size for n in plan) or 1))
        if chunk >= BATCHED_SWEEPS_FROM:
            try:
                return _batched_sweeps(sweep, node, chunk)
            except ConcretizationError:
                pass    # a rule that reads its direction's numbers (a VJP written with
                #         np.asarray): it cannot be traced, so one sweep per direction
    pieces = [sweep(e) for e in _basis(node)]
    return [list(p) for p in zip(*pieces)] if pieces else [[] for _ in range(count)]


def _batched_sweeps(sweep, node, chunk):
    """`_sweeps` by wg.vmap of the sweep over the identity, `chunk` directions at once."""
    from .vectorize import vmap
    batched = vmap(sweep)
    pieces = []
    for start in range(0, node.size, chunk):
        k = min(chunk, node.size - start)
        eye = np.zeros((k, node.size), node.dtype)
        eye[np.arange(k), start + np.arange(k)] = 1.0
        pieces.append(batched(eye.reshape((k,) + node.shape)))
    return [p[0] if len(p) == 1 else wnp.concatenate(p, axis=0) for p in zip(*pieces)]


def _assemble(pieces, out_shape, in_shape, axis):
    """One Jacobian block of shape out_shape + in_shape from sweep results: forward sweeps
    give one column (out_shape) per input element, stacked last (axis=-1); reverse sweeps
    give one row (in_shape) per output element, stacked first (axis=0).  `pieces` is a
    list of them, or an array holding them on axis 0 (a batched sweep's).  Works on
    numbers and on traced values alike."""
    if type(pieces) is not list:
        if axis == -1:
            pieces = wnp.moveaxis(pieces, 0, -1)
        return wnp.reshape(pieces, out_shape + in_shape)
    if not pieces:                  # no element to sweep along: an empty block
        return np.zeros(out_shape + in_shape)
    if len(pieces) == 1 and (in_shape == () if axis == -1 else out_shape == ()):
        return pieces[0]
    return wnp.reshape(wnp.stack(pieces, axis=axis), out_shape + in_shape)


def _recorded(f, argnums, who, holomorphic=None, has_aux=False, forward_only=False):
    """The front every Jacobian function shares, as a decorator for
    ``finish(call, out_nodes, out_tree, single)``: the new function records f's call, hands
    it to `finish`, and releases an eager graph of its own once finish has the result.
    `holomorphic`: True if the inputs and outputs must be complex, False if they must be
    real (the message says holomorphic=True would take complex ones), None for a function
    without that option (real ones only).  With `has_aux`, f returns ``(output, aux)`` and
    the new function ``(result, aux)``.  `forward_only`: `finish` sweeps forward only
    (`Graph.forward_only`)."""
    _check_fun(f, who)
    nums, single = _check_argnums(argnums, who)
    names = None

    def decorate(finish):
        @functools.wraps(f)
        def wrapped(*args, **kwargs):
            nonlocal names
            if names is None:
                names = _param_names(f)
            idx = _resolve_argnums(nums, len(args), who)
            if holomorphic:
                _complex_inputs(args, idx, names, who)
            call = _Call(f, args, kwargs, idx, who, names, forward_only)
            out, aux = _split_aux(call.out, has_aux, who)
            out_nodes, out_tree = call.output_nodes(out, who)
            if holomorphic:
                _complex_outputs(out_nodes, who)
            else:
                _real_jacobian(call.inputs, out_nodes, who, holomorphic is not None)
            result = finish(call, out_nodes, out_tree, single)
            if has_aux:
                result = result, _finish_tree(call, aux)
            call.done()
            return result
        return wrapped
    return decorate


def _real_jacobian(inputs, outputs, who, offers_holomorphic=False):
    """Refuse complex inputs and outputs: a Jacobian of a complex function holds either
    the complex derivative (which exists for holomorphic functions only, and which
    ``holomorphic=True`` asks for) or the real 2x2 blocks, and neither is what a real
    Jacobian's layout can say without a convention."""
    for kind, nodes in (("input", inputs), ("output", outputs)):
        for n in nodes:
            if n.dtype.kind == "c":
                hint = "pass holomorphic=True for the complex derivative of a " \
                    "holomorphic function, " if offers_holomorphic else ""
                raise TypeError(
                    f"{who}: a complex {kind} ({n.dtype}, shape {n.shape}) is not supported: "
                    f"{hint}use wg.jvp or wg.vjp (docs/complex.md), or make the real and "
                    "imaginary parts separate real arguments or outputs (np.real, np.imag)")


def _complex_inputs(args, argnums, names, who):
    """With holomorphic=True every differentiated argument must be complex: refuse a real
    (or int) one, naming it and what the caller gave (a Python int, an array's dtype)."""
    for i in argnums:
        leaves, _ = flatten(args[i])
        name = names[i] if i < len(names) else f"arg{i}"
        for x, label in zip(leaves, _leaf_names(name, len(leaves))):
            if type(x) in (int, float, bool):
                real, given = True, f"a Python {type(x).__name__}"
            else:       # (what is neither a number nor an array, _Call refuses)
                dtype = getattr(x, "dtype", None)
                real = isinstance(dtype, np.dtype) and dtype.kind != "c"
                given = f"of dtype {dtype}"
            if real:
                raise TypeError(
                    f"{who}(holomorphic=True) needs complex arguments, but argument "
                    f"{label!r} is {given}: pass it as a complex value (x + 0j), or "
                    "differentiate without holomorphic=True")


def _complex_outputs(outputs, who):
    for o in outputs:
        if o.dtype.kind != "c":
            raise TypeError(f"{who}(holomorphic=True) needs a function with complex results, "
                            f"but it returned a {o.dtype} value of shape {o.shape}")


def _jacobian(f, argnums, who, mode, holomorphic=False, has_aux=False):
    """jacfwd / jacrev (see them), with `who` naming the caller in error messages."""
    @_recorded(f, argnums, who, holomorphic, has_aux, forward_only=mode == "fwd")
    def jac_f(call, out_nodes, out_tree, single):
        return jacobian_by_sweeps(call, out_nodes, out_tree, single, mode)

    return jac_f


def jacobian_by_sweeps(call, out_nodes, out_tree, single, mode):
    """The Jacobian of a recorded call by one forward sweep per input element (mode "fwd")
    or one reverse sweep per output element ("rev"), in `jacfwd`'s layout.  The sweeps
    along the elements of one array run as one batched sweep where there are enough of
    them (`_sweeps`)."""
    plan = call.graph.between(call.inputs, out_nodes)
    symbolic = call.symbolic
    n_in, n_out = len(call.inputs), len(out_nodes)
    # entries[i][j]: the block d out_i / d in_j
    entries = [[None] * n_in for _ in range(n_out)]
    # an int or bool output is piecewise constant: its blocks are zeros, the same in
    # both modes (the sweeps would give zeros of the output's or the input's shape)
    swept = []
    for i, o in enumerate(out_nodes):
        if o.dtype.kind in "fc":
            swept.append(i)
        else:
            entries[i] = [call.zero_block(o, x) for x in call.inputs]
    batch = None
    if not symbolic:
        # numbers of scalars: all the sweeps as one (wengert.ad.batched)
        outs = [out_nodes[i] for i in swept]
        k = len(call.inputs if mode == "fwd" else outs)
        batch = all_at_once(plan, call.inputs, outs, range(k), k, mode == "fwd")
    if batch is not None:
        if mode == "rev":
            batch = batch.T
        dtypes = {n.dtype for n in call.inputs} | {out_nodes[i].dtype for i in swept}
        if dtypes == {batch.dtype} and batch.dtype in (F64, C128) and not call.zero_d:
            rows = batch.tolist()       # (floats or complexes already: blocks as they are)
            for r, i in enumerate(swept):
                entries[i] = rows[r]
        else:
            for r, i in enumerate(swept):
                entries[i] = [call.jacobian_block(batch[r, j].item(), out_nodes[i], x)
                              for j, x in enumerate(call.inputs)]
    elif mode == "fwd":
        for j, x in enumerate(call.inputs):
            def sweep(t, j=j):
                ts = [None] * n_in
                ts[j] = t
                return [call.zeros(out_nodes[i]) if t is None else t
                        for i, t in enumerate(ad.forward(plan, call.inputs, ts, out_nodes,
                                                         symbolic))]
            cols = _sweeps(sweep, x, plan, n_out)
            for i in swept:
                o = out_nodes[i]
                entries[i][j] = call.jacobian_block(_assemble(cols[i], o.shape, x.shape,
                                                              axis=-1), o, x)
    else:
        for i in swept:
            def sweep(ct, i=i):
                cts = [None] * n_out
                cts[i] = ct
                return [call.zeros(call.inputs[j]) if g is None else g
                        for j, g in enumerate(ad.reverse(plan, call.inputs, out_nodes, cts,
                                                         symbolic))]
            o = out_nodes[i]
            rows = _sweeps(sweep, o, plan, n_in)
            for j, x in enumerate(call.inputs):
                entries[i][j] = call.jacobian_block(_assemble(rows[j], o.shape, x.shape,
                                                              axis=0), o, x)
    out_leaves = []
    for i in range(n_out):
        per_arg = call.split(entries[i])
        out_leaves.append(per_arg[0] if single else tuple(per_arg))
    return unflatten(out_tree, out_leaves)


def jacfwd(f, argnums=0, has_aux=False, *, holomorphic=False):
    """The Jacobian of f by forward mode: one forward sweep per input element (ADDS's
    ``dfu``).  Cheaper than `jacrev` when there are fewer inputs than outputs.  The
    sweeps along the elements of an array argument (8 or more) run as one sweep of a
    batch of directions (`wg.vmap` of the sweep), in chunks that bound its memory; on
    numbers, the sweeps of a function of scalars run as one whose tangents are vectors
    (`wengert.ad.batched`: each partial evaluated once).

    The result has f's output structure; each of its leaves has the structure of the
    differentiated argument(s), and the block for an output of shape S and an input of
    shape T has shape S + T.  An int or bool output is piecewise constant: its block is
    zeros in the input's float dtype, as `jacrev` gives too.  With ``has_aux=True``, f
    returns ``(output, aux)`` and the new function ``(jacobian, aux)``, aux not
    differentiated (as in `grad` and JAX).

    Inputs and outputs are real, unless ``holomorphic=True``: then they must all be
    complex, and the Jacobian holds the complex derivatives ∂f_i/∂z_j of a holomorphic f
    (as JAX's).  That f is holomorphic is not checked: for one that is not, jacfwd gives
    the derivatives along the real axis, ∂f_i/∂x_j, and `jacrev` another number
    (docs/complex.md).

    Example:
        >>> import wengert as wg
        >>> wg.jacfwd(lambda x, y: (x * y, x + y), argnums=(0, 1))(2.0, 3.0)
        ((3.0, 2.0), (1.0, 1.0))
        >>> import numpy as np
        >>> wg.jacfwd(lambda z: z ** 2, holomorphic=True)(np.array([1j, 2 + 0j]))  # diag(2z)
        array([[0.+2.j, 0.+0.j],
               [0.+0.j, 4.+0.j]])
    """
    return _jacobian(f, argnums, "jacfwd", "fwd", holomorphic, has_aux)


def jacrev(f, argnums=0, has_aux=False, *, holomorphic=False):
    """The Jacobian of f by reverse mode: one reverse sweep per output element (ADDS's
    ``dfd``).  Cheaper than `jacfwd` when there are fewer outputs than inputs.  Same result
    layout as `jacfwd`; its sweeps are batched as `jacfwd`'s are.  The same
    ``holomorphic=True`` (complex inputs and outputs, and the complex derivative of a
    holomorphic f; for one that is not, the pullbacks of the unit cotangents, which differ
    from `jacfwd`'s numbers).

    Example:
        >>> import wengert as wg
        >>> wg.jacrev(lambda x: (x ** 2, 3 * x))(2.0)
        (4.0, 3.0)
        >>> wg.jacrev(lambda x: (x ** 2, x > 1.0))(2.0)     # a bool output: a zero block
        (4.0, 0.0)
        >>> wg.jacrev(lambda z: (z ** 2, 1 / z), holomorphic=True)(1j)   # 2z, -1/z²
        (2j, (1+0j))
        >>> wg.jacrev(lambda x: (x ** 3, {"x squared": x ** 2}), has_aux=True)(2.0)
        (12.0, {'x squared': 4.0})
    """
    return _jacobian(f, argnums, "jacrev", "rev", holomorphic, has_aux)


def hessian(f, argnums=0, has_aux=False, *, holomorphic=False):
    """The Hessian of a scalar function: forward over reverse, ``jacfwd(jacrev(f))``.
    With ``holomorphic=True``, of a holomorphic f of complex arguments with a complex
    result: the second complex derivatives ∂²f/∂z_i∂z_j (as JAX's).  With
    ``has_aux=True``, f returns ``(output, aux)`` and the new function ``(hessian, aux)``.

    Example:
        >>> import wengert as wg
        >>> wg.hessian(lambda x, y: x * x * y, argnums=(0, 1))(1.0, 2.0)
        ((4.0, 2.0), (2.0, 0.0))
        >>> wg.hessian(lambda z: z ** 3, holomorphic=True)(2j)     # 6z
        12j
        >>> wg.hessian(lambda x: (x ** 3, x + 1.0), has_aux=True)(2.0)
        (12.0, 3.0)
    """
    _check_fun(f, "hessian")
    _check_argnums(argnums, "hessian")
    return _jacobian(_jacobian(f, argnums, "hessian", "rev", holomorphic, has_aux), argnums,
                     "hessian", "fwd", holomorphic, has_aux)


def hvp(f):
    """Hessian-vector products without forming the Hessian: ``hvp(f)(x, v) = H(x) v``, by
    forward mode over reverse mode (the directional derivative of the gradient).  x and v
    have the same structure; so does the result.

    Example:
        >>> import wengert as wg
        >>> wg.hvp(lambda x: x ** 3)(2.0, 1.0)
        12.0
    """
    _check_fun(f, "hvp")
    try:
        required = [p.name for p in inspect.signature(f).parameters.values()
                    if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY,
                                                           p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):     # (a builtin without a signature)
        required = []
    if len(required) > 1:
        # (hvp_f(x, v) would hand f only x: Python's "missing argument" would not say why)
        raise TypeError(f"hvp: f must take one argument, x (which may be a tuple or dict "
                        f"of arrays), but it takes {len(required)}: {', '.join(required)}; "
                        "wrap it, e.g. hvp(lambda p: f(*p))((x, y), (vx, vy))")
    g = grad(f)

    @functools.wraps(f)
    def hvp_f(x, v):
        hv = _jvp(g, (x,), (v,), "hvp", ("x", "direction v"))[1]
        # (shaped and typed as x, as grad's result is: a 0-d array's entry is a 0-d array)
        leaves, tree = flatten(hv)
        xs = flatten(x)[0]
        if len(xs) == len(leaves) and any(type(a) is np.ndarray and not a.ndim for a in xs):
            hv = unflatten(tree, [_as_0d(h) if type(a) is np.ndarray and not a.ndim else h
                                  for a, h in zip(xs, leaves)])
        return hv

    # (f's name and doc, but its own parameters: wraps would make signature() say f's)
    hvp_f.__signature__ = inspect.signature(hvp_f, follow_wrapped=False)
    return hvp_f


# --------------------------------------------------------------------------------------
# tracing
# --------------------------------------------------------------------------------------
def trace(f, *args, abstract=True, _capture=None):
    """Record f's computational graph.

    With ``abstract=True`` (the default) the arguments only give shapes and dtypes (an
    example value or a `wg.ShapeDtype`); the graph holds no numbers, and a Python branch
    on a traced value raises `ConcretizationError`.  With ``abstract=False`` the graph is
    recorded eagerly with the given values, following Python control flow.

    The returned `Graph` prints as SSA text and can be called to evaluate it.  Output
    leaves that are not numbers or arrays (strings, objects) are held in its ``out_tree``
    as f returned them, and returned again when it is called.  The copies
    that nested transformations make of their arguments are inlined
    (`Graph.inline_copies`): the graph computes exactly what was traced.  A loop whose
    gradient's forward loop runs on the same arguments is read from it
    (`wengert.loops.merge_twins`).

    Example:
        >>> import wengert as wg
        >>> print(wg.trace(lambda x: 3 * x ** 2 + 2 * x + 1, 1.0))
        graph(x: f64[]):
          %1: f64[] = powi(x, n=2)
          %3: f64[] = mul(%1, 3.0)
          %5: f64[] = mul(x, 2.0)
          %6: f64[] = add(%3, %5)
          %8: f64[] = add(%6, 1.0)
          return %8
    """
    _check_fun(f, "trace")
    graph = Graph()
    if _capture:            # ("eval_shape", "linearize": an enclosing trace's value that f
        #                     closes over becomes one more input, after the arguments', as
        #                     it would under vmap; graph.captured says whose)
        graph.captured, graph.tracer = {}, _capture
    leaves, in_tree = flatten(args)
    names = _param_names(f)
    labels = []
    for k, tree in enumerate(in_tree.subtrees):
        name = names[k] if k < len(names) else f"arg{k}"
        labels += _leaf_names(name, tree.num_leaves)
    inputs = []
    for x, lab in zip(leaves, labels):
        if type(x) is Node:         # (a weak number stays weak: it takes others' dtypes)
            x = x.value if x.value is not None else ShapeDtype(x.shape, x.dtype, is_weak(x))
        if isinstance(x, (bool, np.bool_)) or not isinstance(
                x, (int, float, complex, np.number, np.ndarray, ShapeDtype)):
            raise TypeError(f"trace: argument {lab!r} is a {type(x).__name__} ({x!r:.40}); "
                            "arguments must be numbers, arrays or wg.ShapeDtype")
        if isinstance(x, int):
            x = float(x)        # Python ints are numbers to differentiate, as in grad
        if abstract:
            x = shape_dtype(x)  # (a Python number stays weakly typed: see ShapeDtype)
        inputs.append(graph.input(x, lab))
    with recording(graph):
        out = f(*unflatten(in_tree, inputs))
    out_leaves, out_tree = flatten(out)
    out_leaves, out_tree = hold_constants(out_tree, out_leaves, _held_constant)
    graph.outputs = [graph.lift(x) for x in out_leaves]
    captured = graph.captured
    graph.inputs = inputs + [inner for _, inner in captured.values()] if _capture else inputs
    graph.in_tree, graph.out_tree = in_tree, out_tree
    if any(n.op.name == "copy" for n in graph.nodes):
        graph = graph.inline_copies()
    if any(getattr(n.op, "extends", None) is not None for n in graph.nodes):
        from .loops import merge_twins      # (loops.py builds on this module)
        graph = merge_twins(graph)
    graph.captured = captured
    return graph


def traced_digest(f, *args):
    """`Graph.digest` of f traced at `args`, or None where f cannot be traced: how kept
    compiled code (optimize's derivatives, an ODE's right-hand sides) tells whether what
    f reads besides its arguments, a global say, is still what the code was made from.

    Example:
        >>> from wengert.api import traced_digest
        >>> traced_digest(lambda x: 2 * x, 1.0) == traced_digest(lambda y: 2 * y, 3.0)
        True
    """
    try:
        return trace(f, *args).digest()
    except Exception:                           # noqa: BLE001  (then nothing is kept)
        return None


def eval_shape(f, *args, **kwargs):
    """The shapes and dtypes of f's result, without computing it, as JAX's
    ``eval_shape``: f is traced with abstract values (arguments may be arrays, numbers or
    `ShapeDtype`), and each leaf of the result is a `ShapeDtype`.

    Example:
        >>> import numpy as np, wengert as wg, wengert.numpy as wnp
        >>> w = wg.ShapeDtype((784, 256))
        >>> wg.eval_shape(lambda x, w: {"h": wnp.tanh(x @ w), "top": wnp.argmax(x, 1)},
        ...               np.ones((128, 784), np.float32), w)
        {'h': ShapeDtype(f64[128,256]), 'top': ShapeDtype(i64[128])}
    """
    _check_fun(f, "eval_shape")
    # (values f closes over, a weight of an enclosing grad, are inputs too: only their
    # shapes are asked, so no derivative is lost)
    graph = trace((lambda *a: f(*a, **kwargs)) if kwargs else f, *args,
                  _capture="eval_shape")
    leaves, tree = flatten(unflatten(graph.out_tree, graph.outputs))
    return unflatten(tree, [ShapeDtype(n.shape, n.dtype, weak=is_weak(n)) if type(n) is Node
                            else n for n in leaves])


_TRACED_TEXT = re.compile(r"<Node \S+: \w+\[[^\]]*\] \w+")


def _held_constant(x) -> bool:
    """Whether an output leaf of a trace is held in its structure as a constant rather
    than computed by the graph: a leaf that is no number or array (a string, None-like
    flags, any object) is, as the value the function returned while it was traced.  A
    string or object made from a traced value would be garbage as such a constant: it is
    refused."""
    t = type(x)
    if t is Node or t is float or t is int or t is bool:
        return False
    if isinstance(x, (np.ndarray, np.generic)):
        if x.dtype.kind in "biufc":
            return False
    elif isinstance(x, (int, float, complex)):
        return False                # (complex: refused with its own message by lift)
    if isinstance(x, (bytes, bytearray)):
        x = x.decode("latin-1")         # (str(x).encode() is text made from x too)
    if isinstance(x, str) and _TRACED_TEXT.search(x):
        raise ConcretizationError(
            f"the function returned the text {x!r:.60}, made from a traced value: while "
            "tracing (wg.trace / wg.compile) a traced value has no value to show, and the "
            "text would be returned as it was at trace time. Return the value itself "
            "and format it after the call")
    held = _traced_inside(x)
    if held is not None:
        raise TypeError(
            f"the function returned a {type(x).__name__} holding a traced value "
            f"({held}): only tuples, lists, dicts, namedtuples and registered classes are "
            "looked into, so it would be returned as it was at trace time. Return the "
            "value in a tuple, list or dict instead, or register its class with "
            "wengert.tree.register_pytree_node (or register_dataclass)")
    return True


def _traced_inside(x):
    """Where an object holds a traced value, or None: among its elements (a set, an
    object array, an exception's arguments) or attributes (one level down, and one more
    into lists, tuples and dicts there)."""
    if isinstance(x, BaseException):
        x = x.args
    if isinstance(x, np.ndarray):
        x = x.reshape(-1)
    if isinstance(x, (set, frozenset, tuple, np.ndarray)):
        held = any(type(e) is Node for e in itertools.islice(x, 1000))
        return "an element" if held else None
    try:
        attrs = dict(vars(x))
    except TypeError:
        attrs = {}
    for cls in type(x).__mro__:         # (__slots__ attributes are not in vars)
        for name in getattr(cls, "__slots__", ()):
            if hasattr(x, name) and name not in attrs:
                attrs[name] = getattr(x, name)
    for name, v in list(attrs.items())[:1000]:
        vs = list(v.values()) if type(v) is dict else v if type(v) in (list, tuple) else (v,)
        if any(type(e) is Node for e in vs[:1000]):
            return f"attribute {name!r}"
    return None


def value(x):
    """The concrete value of a traced value (its derivative is dropped); other values are
    returned unchanged.  Useful for logging inside a differentiated function.

    Example:
        >>> import wengert as wg
        >>> wg.grad(lambda x: x * wg.value(x))(3.0)    # value(x) is a constant: d/dx = 3
        3.0
    """
    if type(x) is Node:
        if x.value is None:
            hint = x.graph.released_hint()
            if hint:
                raise ValueError(f"wg.value({x.label()}): this traced value escaped a "
                                 f"finished gradient without its value{hint}")
            raise ConcretizationError(
                f"wg.value({x.label()}): the value is not known while tracing without "
                "values (wg.trace / wg.compile); for the value without its derivative, "
                "which stays traced, use wg.stop_gradient(x), or call the function eagerly")
        return x.value
    return x
