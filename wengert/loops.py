"""Loops as one node of the graph: `scan` and `fori_loop`, and `wengert.lax.while_loop`
traced without values (`While`, at the end: its JVP and batches are while loops built by
the same machinery, and its VJP, where it has values, is a scan's).

A Python loop in a traced function is recorded step by step: n steps of a body of b
operations make n·b nodes, and `wg.compile` writes n·b lines.  ``scan(f, init, xs)``
instead traces the body ``f(carry, x) -> (carry, y)`` once, into a graph of its own, and
records the whole loop as one node of the enclosing graph.  Its value comes from one
generated Python loop (`Scan.run`): on floats where the body is small, else with the
body's NumPy code inside the ``for``.

The node's derivative rules are scans again, made from the body's graph by graph-to-graph
transformations (`wengert.ad.forward` and `wengert.ad.reverse` applied to it once, not
once per step):

* JVP: a scan of the body's JVP, each tangent carried beside its value;
* VJP: a scan that also keeps, at each step, the body's values its VJP reads (the
  residuals), then a scan the other way of the rest of the body's VJP, which carries the
  cotangent of the carry and sums the cotangents of the values the body closes over;
* vmap: a scan of the batched body;
* Taylor mode: from the JVP (`wengert.ad.taylor.ByJVP`).

Because each derived loop is a scan, it differentiates, batches and compiles in turn:
every order works, under every transformation.

Example:
    >>> import numpy as np, wengert as wg
    >>> def cumulative(xs):
    ...     return wg.scan(lambda c, x: (c + x, c + x), 0.0, xs)[1]
    >>> cumulative(np.array([1.0, 2.0, 3.0]))
    array([1., 3., 6.])
    >>> wg.grad(lambda xs: cumulative(xs).sum())(np.array([1.0, 2.0, 3.0]))
    array([3., 2., 1.])
"""
from __future__ import annotations

import itertools
import operator

import numpy as np

from . import ad
from .api import _check_fun, _leaf_names
from .errors import NoValue, integer_argument
from .graph.active import current_graph, recording
from .graph.graph import Graph, ShapeDtype
from .graph.node import Node
from .primitives.array import astype, dtype_of, transpose
from .primitives.collective import axis_names as collective_names, resolving
from .primitives.pack import Layout, part
from .primitives.registry import (CONST, INPUT, Primitive, is_weak, known_value, shape_of,
                                  _PYTHON_SCALARS)
from .primitives.shape import broadcast_to
from .tree import flatten, unflatten

__all__ = ["scan", "fori_loop"]


class Loop(Primitive):
    """What the primitives of loops (`Scan`, `While`) share: a body graph whose inputs
    are ``consts + carry + ...`` and whose outputs are ``carry + ...``, the generated
    Python loops that run it (on floats where the body is small, else on NumPy values),
    and the loops derived from it (JVPs, batches), each made once."""

    until = False       # (a while loop's body: its one y is whether to go on)

    def __init__(self, name, body, n_consts, n_carry, loop_name, layout):
        super().__init__(name, self._impl, cost="call",
                         abstract_eval=lambda args, params: self.layout.aval(),
                         complex=True)
        self.body = body
        self.loop_name = loop_name  # (the derived loops' names build on it)
        self.n_consts, self.n_carry = n_consts, n_carry
        self.layout = layout
        self._derived = {}          # the loops of its derivatives and batches, by kind
        self._axis_names = None     # see axis_names
        self._arrays_run = None     # the loop on NumPy values: see _on_arrays
        self._floats_run = False    # the loop on floats, or None: see _on_floats

    @property
    def axis_names(self) -> frozenset:
        """The axis names of the collectives in the body (``lax.psum(x, "i")`` in a scan
        inside ``wg.vmap(..., axis_name="i")``): the vmap binding one batches the loop
        even where none of its arguments varies, since the body's value does."""
        if self._axis_names is None:
            self._axis_names = collective_names(self.body)
        return self._axis_names

    def _valued(self):
        """A loop whose body holds a collective has no value of its own, whatever its
        arguments: the vmap binding the collective's name computes it (`NoValue`)."""
        if self.axis_names:
            raise NoValue(f"{self.name} holds a collective over "
                          f"{', '.join(repr(n) for n in sorted(self.axis_names, key=str))}: "
                          "it has a value only inside the function that wg.vmap maps")

    @property
    def _carry(self):
        return range(self.n_consts, self.n_consts + self.n_carry)

    def _floats(self, indices, nodes):
        """Those of `indices` whose node (of `nodes`) can carry a derivative."""
        return [i for i in indices if nodes[i].dtype.kind in "fc"]

    def _on_arrays(self):
        """The whole loop as one Python function on NumPy values
        (`python.array_loop_source`), made when first asked."""
        if self._arrays_run is None:
            from .codegen import python as py
            self._arrays_run = _generated(py.array_loop_source, self.body, self.n_consts,
                                          self.n_carry, self.until)
        return self._arrays_run

    def _on_floats(self):
        """The whole loop as one Python function on floats (`python.loop_source`), where
        the body has a float form and it beats NumPy calls on the body's arrays; else
        None.  Made when first asked."""
        if self._floats_run is False:
            from .codegen import python as py
            from .staged import faster_float_form
            self._floats_run = None
            # (a nested loop is not written in Python; loops=True: fori_loop's integer
            # counter may be read as a float)
            if not any(isinstance(n.op, Loop) for n in self.body.live_nodes()):
                scalar = faster_float_form(self.body, loops=True)
                if scalar is not None:
                    self._floats_run = _generated(py.loop_source, scalar, self.n_consts,
                                                  self.n_carry, self.until)
        return self._floats_run

    def _elements(self, args):
        """The elements of the consts and the first carry among `args`, as the float
        loop takes them (`start`)."""
        start = []
        for v, n in zip(args[:self.n_consts + self.n_carry], self.body.inputs):
            if n.shape:
                start.extend(np.ravel(v).tolist())
            else:           # (a NumPy scalar's conversion: np.ravel costs a microsecond)
                start.append(float(v) if n.dtype == np.float64 else
                             bool(v) if n.dtype.kind == "b" else int(v))
        return start

    def _floats_call(self, *run_args):
        """`_on_floats`'s loop run on `run_args`, or None where math raised (``log(-1)``,
        ``1/0``): NumPy gives nan or inf there, so the loop is run again on NumPy values."""
        try:
            return self._floats_run(*run_args)
        except (ArithmeticError, ValueError):
            return None

    def _carry_of(self, elements):
        """The carry's values from the float loop's list of their elements: arrays, and
        Python floats and bools for scalars (as the loop on NumPy values gives)."""
        out, k = [], 0
        for o in self.body.outputs[:self.n_carry]:
            piece = elements[k:k + o.size]
            k += o.size
            out.append(np.array(piece, o.dtype).reshape(o.shape) if o.shape else
                       float(piece[0]) if o.dtype == np.float64 else bool(piece[0]))
        return out

    def flat(self):
        """This loop as a primitive on scalars, for code written element by element (the
        C back-end, through `codegen.scalarize`): its arguments are the elements of the
        loop's arguments in order, its value the elements of the loop's value, flat."""
        return self.derived("flat", lambda: _Flat(self))

    def derived(self, key, make):
        """The loop `make()` builds for `key`, made once."""
        loop = self._derived.get(key)
        if loop is None:
            loop = self._derived[key] = make()
        return loop

    def _jvp_body(self, given):
        """The body of the loop of this one's JVP, for tangents `given` (a flag per
        argument): inputs ``consts + tconsts + carry + tcarry + xs + txs``, outputs ``carry
        + tcarry + ys + tys``, with a tangent for each float carry, and for each const and
        x given one; and how many tconsts and tcarry it takes."""
        body, ins = self.body, self.body.inputs
        k0, k1 = self.n_consts, self.n_consts + self.n_carry
        g = Graph()
        prim = [g.input(_spec(n), n.name) for n in ins]
        tan = [None] * len(ins)
        tconsts, tcarry, txs = [], [], []
        for i, n in enumerate(ins):
            if given[i] or k0 <= i < k1 and n.dtype.kind in "fc":
                tan[i] = g.input(_spec(n), f"d{n.name}")
                (tconsts if i < k0 else tcarry if i < k1 else txs).append(tan[i])
        nc = self.n_carry
        with recording(g):
            outs = [g.lift(o) for o in body.evaluate(prim)]
            touts = ad.forward(g.between(prim, outs), prim, tan, outs, True)
            touts = [_fit(t, o) for t, o in zip(touts, body.outputs)]
        floats = [j for j, o in enumerate(body.outputs) if o.dtype.kind in "fc"]
        g.inputs = prim[:k0] + tconsts + prim[k0:k1] + tcarry + prim[k1:] + txs
        g.outputs = [g.lift(o) for o in outs[:nc] + [touts[j] for j in floats if j < nc] +
                     outs[nc:] + [touts[j] for j in floats if j >= nc]]
        return g, len(tconsts), len(tcarry)


class Scan(Loop):
    """The primitive of one loop: a body graph run `length` times.

    The body's inputs are ``consts + carry + x`` (values every step reads, the carry, one
    slice of each scanned array) and its outputs ``carry + y``.  The node's arguments are
    the consts, the initial carry and the scanned arrays; its value is the final carry
    and the stacked ys, packed (`wengert.primitives.pack.Layout`).  Not in the registry:
    one is made per body graph, and kept (`_LOOPS`) so that a loop traced again with the
    same body finds its generated loops and derived loops.

    Example:
        >>> import numpy as np, wengert as wg
        >>> g = wg.trace(lambda w: wg.scan(lambda c, x: (c * w + x, None), 0.0,
        ...                                np.ones(3))[0], 2.0)
        >>> print(g)
        graph(w: f64[]):
          %3: f64[] = scan[<lambda>](w, 0.0, [1., 1., 1.])
          return %3
        >>> print(g.outputs[0].op.body)
        graph(captured0: f64[], carry: f64[], x: f64[]):
          %3: f64[] = mul(carry, captured0)
          %4: f64[] = add(x, %3)
          return %4
    """

    def __init__(self, body, n_consts, n_carry, length, reverse, name, base=None,
                 res_index=()):
        outs = body.outputs
        super().__init__(f"scan[{name}]", body, n_consts, n_carry, name, Layout(
            [(o.shape, o.dtype) for o in outs[:n_carry]] +
            [((length,) + o.shape, o.dtype) for o in outs[n_carry:]]))
        self.length, self.reverse = length, reverse
        self.jvp = self._jvp_rule
        self.vjp = self._vjp_rule
        self.batch = self._batch_rule
        self.asks_active = True
        self.extends = None         # the loop whose results are this one's first
        # (a VJP's forward loop; see merge_twins).  For an eager gradient's loop keeping
        self.base = base            # residuals: the loop they are for,
        self.res_index = res_index  # and which values of its VJP's trace they are
        self.n_res = len(res_index)     # (the last n_res ys)

    # --- the value -------------------------------------------------------------------------
    def _impl(self, *args):
        self._valued()
        k1 = self.n_consts + self.n_carry
        args = [_as(v, n) for v, n in zip(args, self.body.inputs[:k1])] + list(args[k1:])
        return self.run(args)

    def run(self, args):
        """The loop's value (packed: `layout`) from its arguments, each of its body
        input's dtype: on Python floats where the body allows (`_on_floats`), else by the
        body's NumPy code written inside one loop (`_on_arrays`).  The ys are written
        straight into the packed value."""
        nc = self.n_carry
        out, places = self.layout.places()
        ys = [np.empty((self.length,) + o.shape, o.dtype) if y is None else y
              for y, o in zip(places[nc:], self.body.outputs[nc:])]
        if self.length and self._on_floats() is not None:
            values = self._float_run(args, ys)
            if values is not None:
                return self.layout.pack(values, out)
        k0, k1 = self.n_consts, self.n_consts + nc
        ins = self.body.inputs
        carry = args[k0:k1]
        if self.length:
            # (NumPy values throughout: a scalar is a NumPy scalar, which gives inf and nan
            # where a float raises; `_impl` gave them their dtypes)
            start = [np.asarray(v) if n.shape else np.asarray(v)[()]
                     for v, n in zip(args[:k1], ins)]
            rows = [np.asarray(x, n.dtype) for x, n in zip(args[k1:], ins[k1:])]
            steps = range(self.length - 1, -1, -1) if self.reverse else range(self.length)
            carry = self._on_arrays()(steps, start, rows, ys)
        return self.layout.pack(list(carry) + ys, out)

    def _float_run(self, args, ys):
        """The loop's final carry and its ys, written into `ys` (`run`), by
        `_on_floats`; None where math raised (``log(-1)``, ``1/0``), where NumPy gives
        nan or inf."""
        k1 = self.n_consts + self.n_carry
        rows = []
        for x, n in zip(args[k1:], self.body.inputs[k1:]):
            if n.size:
                x = np.asarray(x, n.dtype).reshape(self._steps(n))
                rows.append(x[::-1].tolist() if self.reverse else x.tolist())
        run = self._floats_call(self.length, self._elements(args), *rows)
        if run is None:
            return None
        carry, lists = run
        for buf, y, o in zip(ys, lists, self.body.outputs[self.n_carry:]):
            if o.size:
                buf = buf.reshape(self._steps(o))
                (buf[::-1] if self.reverse else buf)[...] = y
        return self._carry_of(carry) + ys

    def _steps(self, node):
        """The shape of a scanned array or stacked y step by step as the float loop
        reads or writes it: a list of elements, or of lists of several."""
        return (self.length,) if node.size == 1 else (self.length, node.size)

    # --- JVP: the body's JVP scanned, tangents carried beside values ----------------------
    def _jvp_rule(self, ts, *args, **params):
        args, ans = args[:-1], args[-1]
        if self.base is not None and not any(type(v) is Node for v in (ans, *ts, *args)):
            # an eager sweep of a loop that kept its residuals: nothing reads their
            # tangents, so the loop they are for gives the rest
            zeros = [np.zeros(s) for s in self.layout.shapes[len(self.layout) - self.n_res:]]
            return self.layout.pack(self.base._tangents(ts, args) + zeros)
        return self.layout.pack(self._tangents(ts, args))

    def _tangents(self, ts, args):
        """The tangents of the results, one per output leaf, for tangents `ts` (None:
        zero) of the arguments."""
        ins = self.body.inputs
        k0, k1 = self.n_consts, self.n_consts + self.n_carry
        given = tuple(t is not None for t in ts)
        loop = self.derived(("jvp", given), lambda: self._jvp_loop(given))
        tconsts = [_fit(ts[i], ins[i]) for i in range(k0) if given[i]]
        tcarry = [_fit(ts[i], ins[i]) for i in self._floats(self._carry, ins)]
        txs = [_fit(ts[i], _Row(ins[i], self.length)) for i in range(k1, len(args))
               if given[i]]
        out = loop.layout.unpack(loop(*args[:k0], *tconsts, *args[k0:k1], *tcarry,
                                      *args[k1:], *txs))
        # (the loop's outputs: carry, its tangents, ys, their tangents; an integer
        # result's tangent is zero)
        nc, outs = self.n_carry, self.body.outputs
        floats = [j for j, o in enumerate(outs) if o.dtype.kind in "fc"]
        fc, ny = sum(1 for j in floats if j < nc), len(outs) - nc
        found = dict(zip(floats, out[nc:nc + fc] + out[nc + fc + ny:]))
        return [found[j] if j in found else np.zeros(self.layout.shapes[j])
                for j in range(len(outs))]

    def _jvp_loop(self, given):
        g, n_tconsts, n_tcarry = self._jvp_body(given)
        return Scan(g, self.n_consts + n_tconsts, self.n_carry + n_tcarry, self.length,
                    self.reverse, f"jvp {self.loop_name}")

    # --- VJP: a forward loop that keeps what the body's VJP reads, then that VJP scanned
    # the other way -----------------------------------------------------------------------
    def _vjp_rule(self, g, *args, active=None, **params):
        args, ans = args[:-1], args[-1]
        wanted = tuple(map(bool, active)) if active is not None else (True,) * len(args)
        if self.base is not None and not any(type(v) is Node for v in (g, ans, *args)):
            # an eager sweep of a loop that kept its residuals: read them from its value
            # (nothing else reads them, so no cotangent reaches them)
            values = self.layout.unpack(ans)
            n = len(values) - self.n_res
            kept = dict(zip(self.res_index, values[n:]))
            split = self.base._split_for(wanted)
            return self.base._backward(split, wanted, self.layout.unpack(g)[:n], args,
                                       [kept[i] for i in split.res_index])
        split = self._split_for(wanted)
        residuals = []
        if split.forward is not None:
            values = split.forward.layout.unpack(split.forward(*args))
            residuals = values[len(values) - len(split.res_index):]
        return self._backward(split, wanted, self.layout.unpack(g), args, residuals)

    def _backward(self, split, wanted, gs, args, residuals):
        """The cotangents of the arguments: the backward loop of `split` run on the
        cotangents `gs` of the results and the residuals."""
        ins, outs = self.body.inputs, self.body.outputs
        k0, k1 = self.n_consts, self.n_consts + self.n_carry
        fcarry, fy, fconsts, fx = self._groups(wanted)
        loop = split.backward
        out = loop.layout.unpack(loop(
            *args[:k0], *[_fit(gs[j], outs[j]) for j in fcarry],
            *[_zeros(ins[i]) for i in fconsts], *residuals, *args[k1:],
            *[_fit(gs[j], _Row(outs[j], self.length)) for j in fy]))
        cts = [None] * len(args)
        for i, c in zip([k0 + j for j in fcarry] + fconsts + fx, out):
            cts[i] = c
        return tuple(cts)

    def _split_for(self, wanted):
        return self.derived(("vjp", wanted), lambda: self._split(wanted))

    def _groups(self, wanted):
        """Which results carry cotangents back (the float carry and ys), and which
        consts and xs get theirs (the float ones that are wanted)."""
        ins, outs = self.body.inputs, self.body.outputs
        k0, k1, nc = self.n_consts, self.n_consts + self.n_carry, self.n_carry
        return (self._floats(range(nc), outs), self._floats(range(nc, len(outs)), outs),
                [i for i in self._floats(range(k0), ins) if wanted[i]],
                [i for i in self._floats(range(k1, len(ins)), ins) if wanted[i]])

    def _split(self, wanted):
        """The loops of the VJP (a `_Split`): ``forward``, this loop keeping as more ys
        the body's values its VJP reads (None if it reads none but the loop's arguments);
        ``backward``, the loop of the body's VJP run the other way on them; and
        ``res_index``, which values of the VJP's trace those residuals are.

        The body's VJP is traced once into one graph: the body, then its reverse sweep.
        The residuals are the values of the first part that the second reads; each part
        is then cut out into a graph of its own (JAX's partial evaluation, done on the
        graph)."""
        body, ins, outs = self.body, self.body.inputs, self.body.outputs
        k0, k1, nc = self.n_consts, self.n_consts + self.n_carry, self.n_carry
        fcarry, fy, fconsts, fx = self._groups(wanted)
        g = Graph()
        prim = [g.input(_spec(n), n.name) for n in ins]
        with recording(g):
            values = [g.lift(o) for o in body.evaluate(prim)]
        boundary = len(g.nodes)
        ct_carry = [g.input(_spec(outs[j]), f"ct_{ins[k0 + j].name}") for j in fcarry]
        sums = [g.input(_spec(ins[i]), f"ct_{ins[i].name}") for i in fconsts]
        ct_y = [g.input(_spec(outs[j]), f"ct_y{j - nc}") for j in fy]
        with recording(g):
            cts = [None] * len(values)
            for j, c in zip(fcarry + fy, ct_carry + ct_y):
                cts[j] = c
            adj = ad.reverse(g.between(prim, values), prim, values, cts, True)
            results = [g.lift(o) for o in
                       [_fit(adj[k0 + j], ins[k0 + j]) for j in fcarry] +
                       [s if adj[i] is None else _fit(s + adj[i], ins[i])
                        for s, i in zip(sums, fconsts)] +
                       [_fit(adj[i], ins[i]) for i in fx]]
        given = {n.index for n in prim[:k0] + prim[k1:]}      # (the backward loop's own)
        residuals = _read_before(results, boundary, given)
        split = _Split()
        split.res_index = tuple(n.index for n in residuals)
        name = self.loop_name
        split.forward = None
        if residuals:
            split.forward = Scan(_cut(g, prim, values + residuals), k0, nc, self.length,
                                 self.reverse, f"keep {name}")
            split.forward.extends = self
        split.backward = Scan(
            _cut(g, prim[:k0] + ct_carry + sums + residuals + prim[k1:] + ct_y, results),
            k0, len(ct_carry) + len(sums), self.length, not self.reverse, f"vjp {name}")
        g.release()
        return split

    def keeping_residuals(self):
        """This loop for an eager gradient: the same results and, as more ys, what the
        body's VJP reads, kept in the node's value as a tape keeps its values.  Its
        first-order reverse sweep then needs no second forward loop."""
        split = self._split_for((True,) * len(self.body.inputs))
        if split.forward is None:
            return self
        # (a loop of its own: the split's forward loop, whose residuals the backward
        # loop's node reads in a symbolic sweep, must take cotangents for them)
        return self.derived("eager", lambda: Scan(
            split.forward.body, self.n_consts, self.n_carry, self.length, self.reverse,
            split.forward.loop_name, base=self, res_index=split.res_index))

    # --- vmap: the batched body scanned --------------------------------------------------
    def _batch_rule(self, args, mapped, node):
        size = next(shape_of(a)[0] for a, m in zip(args, mapped) if m)
        k0, k1 = self.n_consts, self.n_consts + self.n_carry
        ins = self.body.inputs
        name = resolving()
        key = ("vmap", tuple(mapped[:k0]), tuple(mapped[k1:]), size, name)
        loop = self.derived(key, lambda: self._batched_loop(mapped, size, name))
        carry = [a if m else broadcast_to(a, shape=(size,) + ins[i].shape)
                 for i, (a, m) in enumerate(zip(args[k0:k1], mapped[k0:k1]), k0)]
        xs = [_swap01(a) if m else a for a, m in zip(args[k1:], mapped[k1:])]
        out = loop.layout.unpack(loop(*args[:k0], *carry, *xs))
        out = out[:self.n_carry] + [_swap01(y) for y in out[self.n_carry:]]
        return self.layout.pack_batch(out, size)

    def _batched_loop(self, mapped, size, name):
        from .vectorize import run
        body, ins = self.body, self.body.inputs
        k0, k1 = self.n_consts, self.n_consts + self.n_carry
        flags = list(mapped[:k0]) + [True] * self.n_carry + list(mapped[k1:])
        g = Graph()
        prim = [g.input(_spec(n, (size,) if m else ()), n.name) for n, m in zip(ins, flags)]
        with recording(g):
            results = run(body, prim, flags, size, name)
            outs = [g.lift(v if m else broadcast_to(v, shape=(size,) + o.shape))
                    for (v, m), o in zip(results, body.outputs)]
        g.inputs, g.outputs = prim, outs
        return Scan(g, k0, self.n_carry, self.length, self.reverse, f"vmap {self.loop_name}")


class While(Loop):
    """The primitive of one while loop: a step graph run while its predicate holds.

    The step is body_fun then cond_fun of what it gives: its inputs are ``consts +
    carry``, its outputs the new carry and whether to go on.  So the loop tests one
    value per step, and its JVP and batches are steps of the same kind.  The node's
    arguments are the consts, the first carry and cond_fun of it; its value is the last
    carry, packed (`Layout`).  Not in the registry: one is made per step graph (`_LOOPS`).

    Its value comes from one generated Python ``while`` loop, as a scan's does: on floats
    where the step is small (a scalar Newton iteration, and its JVP), else with the
    step's NumPy code inside the loop.  ``wg.compile(..., backend="c")`` writes it as a C
    ``while`` over a function of its step (`Loop.flat`, `wengert.codegen.c`).

    Example:
        >>> import wengert as wg
        >>> from wengert.lax import while_loop
        >>> halve = lambda x: while_loop(lambda v: v >= 1.0, lambda v: v / 2.0, x)
        >>> print(wg.compile(halve, 10.0).graph)
        graph(x: f64[]):
          %2: bool[] = ge(x, 1.0)
          %3: f64[] = while[<lambda>](x, %2)
          return %3
        >>> print(wg.compile(halve, 10.0).graph.outputs[0].op.body)
        graph(carry: f64[]):
          %2: f64[] = div(carry, 2.0)
          %4: bool[] = ge(%2, 1.0)
          return %2, %4
    """

    until = True

    def __init__(self, body, n_consts, n_carry, name):
        super().__init__(f"while[{name}]", body, n_consts, n_carry, name,
                         Layout([(o.shape, o.dtype) for o in body.outputs[:n_carry]]))
        self.jvp = self._jvp_rule
        self.vjp = self._vjp_rule
        self.asks_active = True
        self.batch = self._batch_rule

    def _impl(self, *args):
        self._valued()
        return self.layout.pack(self.run(args)[0])

    def run(self, args):
        """The last carry (a list) and the number of steps taken, from the loop's
        arguments: on Python floats where the step allows (`_on_floats`), else by the
        step's NumPy code written inside one loop (`_on_arrays`)."""
        if any(type(v) is np.ndarray and v.dtype == object for v in args):
            # (code written element by element with no loops, Python's float form: a loop
            # whose number of steps is a value cannot be unrolled there; C keeps the loop,
            # see `Loop.flat`)
            raise NotImplementedError(f"{self.name} is not written element by element")
        k1 = self.n_consts + self.n_carry
        go = bool(args[k1])
        if self._on_floats() is not None:
            done = self._float_run(go, args)
            if done is not None:
                return done
        start = []
        for v, n in zip(args, self.body.inputs):
            a = np.asarray(v, n.dtype)
            start.append(a if n.shape else a[()])
        return self._on_arrays()(go, start)

    def _float_run(self, go, args):
        """`run` by `_on_floats`; None where math raised, where NumPy gives nan or inf."""
        done = self._floats_call(go, self._elements(args))
        return None if done is None else (self._carry_of(done[0]), done[1])

    # --- JVP: the step's JVP looped, tangents carried beside values, the same test -------
    def _jvp_rule(self, ts, *args, **params):
        args = args[:-1]
        ins, outs = self.body.inputs, self.body.outputs
        k0, k1, nc = self.n_consts, self.n_consts + self.n_carry, self.n_carry
        given = tuple(t is not None for t in ts[:k1])
        loop = self.derived(("jvp", given), lambda: self._jvp_loop(given))
        tconsts = [_fit(ts[i], ins[i]) for i in range(k0) if given[i]]
        tcarry = [_fit(ts[i], ins[i]) for i in self._floats(self._carry, ins)]
        out = loop.layout.unpack(loop(*args[:k0], *tconsts, *args[k0:k1], *tcarry,
                                      args[k1]))
        found = dict(zip(self._floats(range(nc), outs), out[nc:]))
        return self.layout.pack([found[j] if j in found else np.zeros(self.layout.shapes[j])
                                 for j in range(nc)])

    def _jvp_loop(self, given):
        g, n_tconsts, n_tcarry = self._jvp_body(given)
        return While(g, self.n_consts + n_tconsts, self.n_carry + n_tcarry,
                     f"jvp {self.loop_name}")

    # --- VJP: only where the number of steps is known -----------------------------------
    def _vjp_rule(self, g, *args, active=None, **params):
        """Where the arguments have values (an eager sweep: vmap's loop inside wg.grad,
        say), the loop is a scan of as many steps as it takes, and that scan's VJP is
        this one's; without values, the number of steps is unknown and the graph of a
        reverse sweep cannot be built (JAX refuses it too)."""
        args, ans = args[:-1], args[-1]
        values = [v.value if type(v) is Node else v for v in args]
        if any(v is None for v in values):
            raise ValueError(
                f"while_loop: reverse-mode differentiation (grad, vjp, jacrev) of the "
                f"while_loop of {self.loop_name} traced without values (wg.compile, wg.jit, "
                "wg.vmap) is not possible: its number of steps is not known when the graph "
                "is built (JAX refuses it too). Forward mode (jvp, jacfwd) works; for "
                "reverse mode differentiate eagerly (wg.grad outside wg.jit), write a fixed "
                "number of steps with wengert.lax.fori_loop or wg.scan, or give a solver's "
                "result its implicit derivative with wg.custom_root")
        steps = self.run(values)[1]
        k0, k1, nc = self.n_consts, self.n_consts + self.n_carry, self.n_carry
        loop = self.derived(("scan", steps), lambda: Scan(
            _cut(self.body, self.body.inputs, self.body.outputs[:nc]), k0, nc, steps,
            False, self.loop_name))
        wanted = None if active is None else active[:k1]
        return loop._vjp_rule(g, *args[:k1], ans, active=wanted) + (None,)

    # --- vmap: the batched step looped while any example goes on ------------------------
    def _batch_rule(self, args, mapped, node):
        import wengert.numpy as wnp
        size = next(shape_of(a)[0] for a, m in zip(args, mapped) if m)
        k0, k1, nc = self.n_consts, self.n_consts + self.n_carry, self.n_carry
        ins = self.body.inputs
        name = resolving()
        flags, lanes = self._varying(mapped, name)
        key = ("vmap", tuple(flags), lanes, size, name)
        loop = self.derived(key, lambda: self._batched_loop(flags, lanes, size, name))
        carry = [broadcast_to(a, shape=(size,) + ins[i].shape) if f and not m else a
                 for i, (a, m, f) in enumerate(zip(args[k0:k1], mapped[k0:k1],
                                                   flags[k0:]), k0)]
        go = args[k1]
        if lanes:                   # each example its own test: a flag per lane carried
            going = go if mapped[k1] else broadcast_to(go, shape=(size,))
            out = loop(*args[:k0], *carry, going, wnp.any(going))
        else:                       # one test for every example: the plain loop
            out = loop(*args[:k0], *carry, go)
        out = loop.layout.unpack(out)[:nc]
        out = [v if f else broadcast_to(v, shape=(size,) + o.shape)
               for v, f, o in zip(out, flags[k0:], self.body.outputs)]
        return self.layout.pack_batch(out, size)

    def _varying(self, mapped, name=None):
        """Which of the body's inputs vary over the batch, and whether the test does
        (then each example stops at its own step, and every carry varies).  Else: the
        consts mapped, the carry given mapped and any the step makes from one that varies
        (a fixed point, as JAX's): a counter stays one number, and a loop of a number of
        steps that does not depend on the batch stays a plain loop."""
        ins, outs = self.body.inputs, self.body.outputs
        k0, nc = self.n_consts, self.n_carry
        flags = [bool(m) for m in mapped[:k0 + nc]]
        while True:
            marked = self.body.mark_up([n for n, f in zip(ins, flags) if f],
                                       floats_only=False)
            new = flags[:k0] + [f or outs[j].index in marked
                                for j, f in enumerate(flags[k0:])]
            if new == flags:
                break
            flags = new
        # (a collective over the vmap's own axis may make any value differ from one
        # example to the next, even from shared ones: axis_index, ppermute)
        lanes = mapped[k0 + nc] or outs[nc].index in marked or name in self.axis_names
        if lanes:       # (each example stops at its own step: every carry is its own)
            flags[k0:] = [True] * nc
        return flags, lanes

    def _batched_loop(self, flags, lanes, size, name):
        """The loop of the batched step (`flags`: which inputs vary).  With `lanes`, a loop
        that goes on while any example does, each example's carry kept as it was
        (selected) once its own test has failed, as JAX's while_loop under vmap: each
        example's value is that of its own loop."""
        import wengert.numpy as wnp
        from .vectorize import run
        body, ins = self.body, self.body.inputs
        k0, nc = self.n_consts, self.n_carry
        g = Graph()
        prim = [g.input(_spec(n, (size,) if f else ()), n.name) for n, f in zip(ins, flags)]
        going = g.input(ShapeDtype((size,), np.dtype(bool)), "going") if lanes else None
        with recording(g):
            results = run(body, prim, flags, size, name)
            # (a carry that varies may come out of a step that made it the same for all)
            outs = [v if m or not f else broadcast_to(v, shape=(size,) + o.shape)
                    for (v, m), f, o in zip(results, flags[k0:] + [lanes], body.outputs)]
            if lanes:
                outs[:nc] = [wnp.where(wnp.reshape(going, (size,) + (1,) * len(o.shape)),
                                       v, old) if f else v
                             for v, old, f, o in zip(outs, prim[k0:], flags[k0:],
                                                     body.outputs)]
                go = wnp.logical_and(going, outs[nc])
                outs[nc:] = [go, wnp.any(go)]
                prim.append(going)
        g.inputs, g.outputs = prim, [g.lift(o) for o in outs]
        return While(g, k0, len(prim) - k0, f"vmap {self.loop_name}")


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------
def _generated(source, body, n_consts, n_carry, until=False):
    """The function whose text ``source(name, body, n_consts, n_carry, ns, until)`` writes
    (one of `codegen.python`'s loop sources), made in a namespace of its own."""
    from .codegen import python as py
    ns = py.Namespace()
    name = ns.names.own("loop")
    return py.make_function(source(name, body, n_consts, n_carry, ns, until), name, ns)


def _spec(node, batch=()):
    return ShapeDtype(batch + node.shape, node.dtype, weak=is_weak(node) and not batch)


def _zeros(node):
    """A zero of the node's shape and dtype (a tangent or cotangent where none flows)."""
    if not node.shape and node.dtype == np.float64:
        return 0.0
    return np.zeros(node.shape, node.dtype)


def _fit(x, like):
    """A derivative `x` (None: zero) of a body value `like`, in like's dtype: a loop's
    carry must keep its type from step to step, and a real seed may meet a complex
    value."""
    if x is None:
        return _zeros(like)
    if type(x) is Node:
        return x if x.dtype == like.dtype else astype(x, dtype=like.dtype)
    return _as(x, like)


def _as(v, node):
    """Value `v` with `node`'s dtype, as the generated loops take it."""
    if type(v) is float and node.dtype == np.float64:
        return v
    a = np.asarray(v)
    if a.dtype == node.dtype:
        return v
    a = a.astype(node.dtype)
    return a[()] if not a.ndim else a


class _Row:
    """The shape and dtype of a scanned array whose rows are like `node`."""

    def __init__(self, node, length):
        self.shape, self.dtype = (length,) + node.shape, node.dtype


class _Split:
    """The loops of a VJP (`Scan._split`)."""
    __slots__ = ("forward", "backward", "res_index")


class _Flat(Primitive):
    """A `Scan` or a `While` on the elements of its arguments (`Loop.flat`).  Its value
    is float64, as the C back-end holds it: an int64 as its bits, a bool as 0 or 1 (as
    `Layout` packs them among floats)."""

    def __init__(self, loop):
        super().__init__(f"loop[{loop.loop_name}]", self._impl, cost="call",
                         abstract_eval=lambda args, params: ((loop.layout.size,),
                                                             np.dtype(float)))
        self.loop = loop
        ins = loop.body.inputs
        k1 = loop.n_consts + loop.n_carry
        # (after the consts and the carry: a scan's scanned arrays, a while loop's test)
        self.shapes = [n.shape for n in ins[:k1]] + ([()] if loop.until else [
            (loop.length,) + n.shape for n in ins[k1:]])
        self.dtypes = [n.dtype for n in ins[:k1]] + ([np.dtype(bool)] if loop.until else [
            n.dtype for n in ins[k1:]])

    def _impl(self, *elements):
        args, k = [], 0
        for shape, dtype in zip(self.shapes, self.dtypes):
            n = int(np.prod(shape, dtype=np.int64))
            args.append(np.array(elements[k:k + n], dtype=dtype).reshape(shape))
            k += n
        value = np.asarray(self.loop(*args)).ravel()
        return value.view(np.float64) if value.dtype == np.int64 else value.astype(float)


def _read_before(results, boundary, given):
    """The nodes made before `boundary` (the body's values) that the nodes from it
    on, up to `results`, read: constants and the inputs in `given` aside."""
    seen, found, todo = set(), [], list(results)
    while todo:                        # (a loop, not recursion: the body may be long)
        n = todo.pop()
        if n.index in seen:
            continue
        seen.add(n.index)
        if n.index >= boundary:
            if n.op is not INPUT:
                todo.extend(n.args)
        elif n.op is not CONST and n.index not in given:
            found.append(n)
    return sorted(found, key=lambda n: n.index)


def _cut(graph, inputs, outputs):
    """A new graph computing `outputs` of `graph` from `inputs` (any of its nodes)."""
    new = Graph()
    made = {n.index: new.input(_spec(n), n.name) for n in inputs}
    need, todo = set(), list(outputs)
    while todo:
        n = todo.pop()
        if n.index in need or n.index in made:
            continue
        need.add(n.index)
        todo.extend(n.args)
    for i in sorted(need):          # (remake copies constants too)
        n = graph.nodes[i]
        if n.op is INPUT:
            raise AssertionError(f"scan: {n.label()} is needed but not given")
        made[i] = new.remake(n, [made[a.index] for a in n.args])
    new.inputs = [made[n.index] for n in inputs]
    new.outputs = [made[n.index] for n in outputs]
    return new


def _swap01(x):
    axes = (1, 0) + tuple(range(2, len(shape_of(x))))
    return transpose(x, axes=axes)


def merge_twins(graph):
    """`graph`, or a copy of it in which a loop whose VJP's forward loop runs on the same
    arguments (its twin: the same results, then the residuals) reads its results from
    the twin, so that a compiled gradient runs the forward loop once, not twice.  (The
    VJP rule makes the twin after the loop was recorded, and a rule cannot change nodes
    already made: a pass over the finished graph can.)

    Example:
        >>> import wengert as wg
        >>> def f(w):
        ...     c, ys = wg.scan(lambda c, x: (wg.math.sin(c * w), c), 1.0, length=3)
        ...     return c + ys.sum()
        >>> g = wg.trace(lambda w: wg.value_and_grad(f)(w), 2.0)
        >>> sorted(n.op.name for n in g.live_nodes() if isinstance(n.op, Scan))
        ['scan[keep <lambda>]', 'scan[vjp <lambda>]']
    """
    live = graph.live_nodes()
    twins = {(n.op.extends, tuple(a.index for a in n.args)): n for n in live
             if isinstance(n.op, Scan) and n.op.extends is not None}
    if not twins:
        return graph
    merged = {}
    for n in live:
        twin = twins.get((n.op, tuple(a.index for a in n.args)))
        if twin is not None and (len(n.op.layout) == 1 or
                                 n.op.layout.dtype == twin.op.layout.dtype):
            merged[n.index] = twin
    if not merged:
        return graph

    def read_from_twin(new, node, new_of):
        twin = merged.get(node.index)
        if twin is None:
            return None
        if twin.index not in new_of:        # (made here, before the loop's readers)
            new_of[twin.index] = new.apply(twin.op, [new_of[a.index] for a in twin.args])
        layout, packed = node.op.layout, new_of[twin.index]
        return (twin.op.layout.unpack(packed)[0] if len(layout) == 1 else
                part(packed, start=0, stop=layout.size, shape=(layout.size,)))
    return graph.rebuilt(read_from_twin)


_LOOPS = {}             # kind, body digest and loop -> Scan or While: a loop traced again
_LOOPS_KEPT = 512       # finds its own (its generated code and derived loops)


def _loop_of(kind, body, *params):
    """``kind(body, *params)``, the one made before for an equal body and params."""
    key = (kind, body.digest(), *params)
    loop = _LOOPS.get(key)
    if loop is None:
        if len(_LOOPS) >= _LOOPS_KEPT:
            del _LOOPS[next(iter(_LOOPS))]
        loop = _LOOPS[key] = kind(body, *params)
    return loop


# --------------------------------------------------------------------------------------
# the public functions
# --------------------------------------------------------------------------------------
def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """Loop ``carry, y = f(carry, x)`` over the leading axis of `xs`, as JAX's
    ``lax.scan``: returns the final carry and the ys stacked.

    In plain Python::

        carry, ys = init, []
        for x in xs:                 # reversed(xs) with reverse=True (ys stay in xs's order)
            carry, y = f(carry, x)
            ys.append(y)
        return carry, stack(ys)

    Inside a transformation (`grad`, `jvp`, `vmap`, `compile`, ...) f is traced once and
    the loop becomes one node of the graph, whatever its length: `compile` writes one
    line for it, not one per step, and reverse mode keeps, at each step, only the body's
    values its derivative reads.  Its derivatives are loops again, so every
    order works.  On plain values, outside any transformation, the loop above runs as
    written.

    Args:
        f: the body, ``f(carry, x) -> (carry, y)``.  The carry (a number, array or pytree
            of them) must come out with the structure, shapes and dtypes it went in with;
            y is any pytree (None for none).  f may read traced values it closes over
            (weights, say): their derivatives flow through the loop.
        init: the first carry.
        xs: a pytree of arrays scanned along axis 0 (each the same length), or None.
        length: the number of steps, needed where xs is None; where xs is given it must
            agree.
        reverse: run from the last element to the first.
        unroll: how many steps each step of the traced loop takes (as JAX's): the body
            is traced `unroll` times in a row, so the loop calls it `unroll` times less
            often (a few more steps, the remainder, run as a loop of their own).  True
            unrolls the whole loop into the graph, as a Python loop would be.

    Returns:
        ``(carry, ys)``: the last carry, and each leaf of y stacked along a new axis 0.

    Example:
        >>> import numpy as np, wengert as wg
        >>> def rnn(w, xs):                       # h <- tanh(w h + x), summed
        ...     step = lambda h, x: (wg.numpy.tanh(w * h + x), h)
        ...     h, hs = wg.scan(step, 0.0, xs)
        ...     return h + hs.sum()
        >>> xs = np.array([0.5, -0.2, 0.1, 0.3])
        >>> round(wg.grad(rnn)(0.8, xs), 6)
        1.45089
        >>> def unrolled(w, xs):                  # the same, as a Python loop
        ...     h, total = 0.0, 0.0
        ...     for x in xs:
        ...         h, total = wg.numpy.tanh(w * h + x), total + h
        ...     return h + total
        >>> round(wg.grad(unrolled)(0.8, xs), 6)
        1.45089
    """
    _check_fun(f, "scan")
    return _scan(f, init, xs, length, reverse, unroll)


def _scan(f, init, xs, length, reverse, unroll, who="scan", x_name="x"):
    """`scan`, whose errors name `who` (fori_loop) and its x `x_name` (fori_loop's i)."""
    x_leaves, x_tree = flatten(xs)
    x_leaves = [x if type(x) is Node else np.asarray(x) for x in x_leaves]
    length = _length(x_leaves, length)
    init_leaves, carry_tree = flatten(init)
    # (a Python int is a number to differentiate, as everywhere in wengert)
    init_leaves = [float(v) if type(v) is int else v for v in init_leaves]
    reverse = bool(reverse)
    _check_leaves(who, "init", init_leaves)
    _check_leaves(who, "xs", x_leaves)
    traced = any(type(v) is Node for v in init_leaves + x_leaves)
    unroll = _unroll(unroll, length)        # (checked on plain values too)
    if length and not traced and current_graph() is None:
        return _plain_scan(f, init, x_leaves, x_tree, length, reverse)
    if unroll > 1:
        return _unrolled(f, unflatten(carry_tree, init_leaves), x_leaves, x_tree, length,
                         reverse, unroll)
    name = getattr(f, "__name__", "f")
    body, captured, init_leaves, y_tree = _trace_body(f, init_leaves, carry_tree, x_leaves,
                                                      x_tree, who, x_name)
    n_carry = len(init_leaves)
    if not body.outputs:                        # nothing to compute
        body.release()
        return unflatten(carry_tree, []), unflatten(y_tree, [])
    loop = _loop_of(Scan, body, len(captured), n_carry, length, reverse, name)
    args = (*captured, *init_leaves, *x_leaves)
    nodes = [v for v in args if type(v) is Node]
    graph = current_graph()
    if nodes and all(v.value is not None for v in nodes) and \
            not (graph is not None and graph.forward_only):
        loop = loop.keeping_residuals()         # an eager trace: keep what a sweep reads
    out = loop.layout.unpack(loop(*args))
    n_out = len(body.outputs)
    return unflatten(carry_tree, out[:n_carry]), unflatten(y_tree, out[n_carry:n_out])


def traced_while_loop(cond_fun, body_fun, init_val, go):
    """`wengert.lax.while_loop` where ``go = cond_fun(init_val)`` is traced without a
    value: cond_fun and body_fun traced once each, as one step, and the loop recorded as
    one `While` node.  The carry follows scan's rules (a Python int is a float)."""
    init_leaves, carry_tree = flatten(init_val)
    init_leaves = [float(v) if type(v) is int else v for v in init_leaves]
    _check_leaves("while_loop", "init_val", init_leaves)
    if not init_leaves:     # (nothing changes: the loop ends at once, or never)
        return init_val

    def step(carry, _):
        new = body_fun(carry)
        return new, _truth(cond_fun(new))
    step.__name__ = getattr(body_fun, "__name__", "body_fun")
    body, captured, init_leaves, _ = _trace_body(step, init_leaves, carry_tree, [],
                                                 flatten(None)[1], "while_loop")
    loop = _loop_of(While, body, len(captured), len(init_leaves), step.__name__)
    out = loop.layout.unpack(loop(*captured, *init_leaves, _truth(go)))
    return unflatten(carry_tree, out)


def _truth(go):
    """cond_fun's result as the bool the loop tests."""
    if shape_of(go) != ():
        raise TypeError(f"while_loop: cond_fun must return a scalar, got shape "
                        f"{shape_of(go)}")
    return go if dtype_of(go) == np.bool_ else astype(go, dtype=np.bool_)


def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
    """``for i in range(lower, upper): val = body_fun(i, val)``, as JAX's
    ``lax.fori_loop``: returns the last val.

    With `lower` and `upper` integers (or values known when the loop is traced), a `scan`
    over ``numpy.arange(lower, upper)``: inside a transformation the loop is one node of
    the graph, differentiable to any order.  A bound traced without a value (an argument
    of `wg.jit` or `wg.compile`) makes it a `wengert.lax.while_loop` counting i, as in
    JAX: differentiable in forward mode, and reverse mode raises ValueError (the number
    of steps is not known when the graph is built).  `unroll` is scan's (None: 1).

    Example:
        >>> import wengert as wg
        >>> def power(x):                          # x ** 5 by repeated multiplication
        ...     return wg.fori_loop(0, 4, lambda i, p: p * x, x)
        >>> power(2.0), wg.grad(power)(2.0)
        (32.0, 80.0)
    """
    _check_fun(body_fun, "fori_loop")
    lower, upper = _bound(lower, "lower"), _bound(upper, "upper")
    if type(lower) is Node or type(upper) is Node:
        return _counted_while(lower, upper, body_fun, init_val)

    def step(val, i):
        return body_fun(i, val), None
    step.__name__ = getattr(body_fun, "__name__", "body_fun")
    return _scan(step, init_val, np.arange(lower, max(lower, upper)), None, False,
                 1 if unroll is None else unroll, "fori_loop", "i")[0]


def _bound(n, name):
    """fori_loop's `lower` or `upper` as a Python int, or as a traced integer scalar when
    its value is not known (a `wg.jit` argument)."""
    if type(n) is Node:
        known = known_value(n)
        if known is None:
            if shape_of(n) == () and dtype_of(n).kind in "iu":
                return n
            if shape_of(n) == () and is_weak(n):
                # a Python int argument of wg.jit, which traces it as a weak float
                return astype(n, dtype=np.int64)
            raise TypeError(f"fori_loop: {name} must be an integer scalar, got a traced "
                            f"{dtype_of(n)} of shape {shape_of(n)}")
        n = known
    try:
        return operator.index(n)
    except TypeError:
        raise TypeError(f"fori_loop: {name} must be an integer, got "
                        f"{type(n).__name__}") from None


def _counted_while(lower, upper, body_fun, init_val):
    """fori_loop with a bound traced without a value: a `while_loop` counting i from
    lower to upper, as JAX lowers it, so it has while_loop's derivatives (forward mode
    only where nothing has a value)."""
    from .lax import while_loop
    i = lower if type(lower) is Node else np.int64(lower)

    def more(carry):
        return carry[0] < upper

    def step(carry):
        return carry[0] + 1, body_fun(carry[0], carry[1])
    step.__name__ = getattr(body_fun, "__name__", "body_fun")
    return while_loop(more, step, (i, init_val))[1]


def _check_leaves(who, what, leaves):
    """Refuse a leaf of a loop's carry or xs that is not a number or an array."""
    for k, v in enumerate(leaves):
        if type(v) is not Node and np.asarray(v).dtype.kind not in "biufc":
            raise TypeError(f"{who}: leaf {k} of {what} is a {type(v).__name__} "
                            f"({v!r:.30}); a loop carries and scans numbers and arrays "
                            "(a setting the body reads can be closed over)")


def _unroll(unroll, length):
    """The number of steps per traced step: `unroll` checked, at most the length."""
    if unroll is True or unroll is False:
        return max(length, 1) if unroll else 1
    unroll = integer_argument(unroll, "scan", "unroll", 1, "an integer or a bool")
    return min(unroll, max(length, 1))


def _unrolled(f, init, x_leaves, x_tree, length, reverse, k):
    """`scan` taking k steps of f per step: a scan of the k steps over the first
    ``length // k * k`` elements (with `reverse`, the last), then a scan of f over the
    remainder."""
    import wengert.numpy as wnp
    n, r = divmod(length, k)
    if reverse:
        main, rest = [x[r:] for x in x_leaves], [x[:r] for x in x_leaves]
    else:
        main, rest = [x[:n * k] for x in x_leaves], [x[n * k:] for x in x_leaves]
    main = [wnp.reshape(x, (n, k) + tuple(shape_of(x)[1:])) for x in main]

    def steps(carry, chunk):
        chunk = flatten(chunk)[0]
        ys = []
        for i in (range(k - 1, -1, -1) if reverse else range(k)):
            new, y = _pair(f(carry, unflatten(x_tree, [x[i] for x in chunk])))
            _same_carry(flatten(carry), flatten(new))
            carry = new
            ys.append(y)
        if reverse:
            ys.reverse()
        leaves = [flatten(y) for y in ys]
        return carry, unflatten(leaves[0][1], [wnp.stack([ls[j] for ls, _ in leaves])
                                               for j in range(len(leaves[0][0]))])
    steps.__name__ = getattr(f, "__name__", "f")
    carry, ys = scan(steps, init, unflatten(x_tree, main) if x_leaves else None,
                     length=n, reverse=reverse)
    y_leaves, y_tree = flatten(ys)
    y_leaves = [wnp.reshape(y, (n * k,) + tuple(shape_of(y)[2:])) for y in y_leaves]
    if r:
        carry, more = scan(f, carry, unflatten(x_tree, rest) if x_leaves else None,
                           length=r, reverse=reverse)
        y_leaves = [wnp.concatenate([b, a] if reverse else [a, b])
                    for a, b in zip(y_leaves, flatten(more)[0])]
    return carry, unflatten(y_tree, y_leaves)


def _length(x_leaves, length):
    """The number of steps, from the scanned arrays and `length`."""
    if length is not None:
        length = integer_argument(length, "scan", "length", 0)
    for k, x in enumerate(x_leaves):
        shape = shape_of(x)
        if not shape:
            raise ValueError(f"scan: xs leaf {k} is a scalar; every array scanned needs "
                             "a leading axis to loop over")
        if length is None:
            length = shape[0]
        elif shape[0] != length:
            first = shape_of(x_leaves[0]) if k else None
            raise ValueError(
                f"scan: xs leaf {k} of shape {shape} has {shape[0]} elements along axis "
                f"0, but " + (f"xs leaf 0 of shape {first} has {length}" if first
                              else f"length={length}"))
    if length is None:
        raise ValueError("scan: pass xs to loop over, or length= for a loop without xs")
    return length


def _plain_scan(f, init, x_leaves, x_tree, length, reverse):
    carry, ys = init, []
    steps = range(length - 1, -1, -1) if reverse else range(length)
    # (with nothing scanned, every step reads the same x: None, or an empty container)
    xs = (unflatten(x_tree, [x[i] for x in x_leaves]) for i in steps) if x_leaves else \
        itertools.repeat(unflatten(x_tree, []), length)
    for x in xs:
        carry, y = _pair(f(carry, x))
        ys.append(y)
        if len(ys) == 1:            # (the checks the traced loop makes, once)
            before, after = flatten(init), flatten(carry)
            _same_carry(before, after)
            for k, (a, b) in enumerate(zip(before[0], after[0])):
                _carry_type(k, dtype_of(a), _weak(a), dtype_of(b), _weak(b))
    if all(y is None for y in ys):  # (the common case, with no stacking to do)
        return carry, None
    if reverse:
        ys.reverse()
    leaves = [flatten(y) for y in ys]
    y_tree = leaves[0][1]
    if any(t != y_tree for _, t in leaves):
        raise ValueError(f"scan: f returned y of structure {y_tree} at one step and "
                         f"{next(t for _, t in leaves if t != y_tree)} at another")
    stacked = [_stacked_leaf([ls[k] for ls, _ in leaves], k, reverse)
               for k in range(len(leaves[0][0]))]
    return carry, unflatten(y_tree, stacked)


def _stacked_leaf(values, k, reverse):
    """`_stacked` of y leaf k, whose values are in xs's order; a leaf whose shape changes
    from step to step is refused naming both (NumPy's own error names neither)."""
    try:
        return _stacked(values)
    except ValueError:
        shapes = [np.shape(v) for v in values]
        calls = shapes[::-1] if reverse else shapes         # (in the order f made them)
        step = next((i for i, s in enumerate(calls) if s != calls[0]), None)
        if step is None:
            raise
        raise ValueError(f"scan: y leaf {k} has shape {calls[0]} at step 0 and "
                         f"{calls[step]} at step {step}; f must return ys of the same "
                         "shapes at every step, to be stacked") from None


def _stacked(values):
    """The values of one leaf of y stacked, with the dtype the traced loop gives them: a
    Python number among them (the initial carry passed on as y, say) is weak and gives
    way to the others' dtype, where np.asarray alone would make it float64, and with it
    the whole stack."""
    arrays = [np.asarray(v) for v in values]
    strong = {a.dtype for a, v in zip(arrays, values) if type(v) not in _PYTHON_SCALARS}
    weak = {type(v): v for v in values if type(v) in _PYTHON_SCALARS}
    try:
        dtype = np.result_type(*strong, *weak.values()) if strong and weak else None
    except TypeError:            # (numbers among strings, say: np.stack's own outcome)
        dtype = None
    return np.stack(arrays, dtype=dtype)


def _pair(out):
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(f"scan: f must return a pair (carry, y), got "
                        f"{type(out).__name__} {out!r:.60}")
    return out


def _trace_body(f, init_leaves, carry_tree, x_leaves, x_tree, who="scan", x_name="x"):
    """The body's graph (inputs: captured values, carry, x; outputs: carry, y), the outer
    values it captured, the initial carry (cast where a weak number's type gave way) and
    the structure of y."""
    specs = [ShapeDtype(shape_of(v), dtype_of(v), weak=_weak(v)) for v in init_leaves]
    for _ in range(2):
        g = Graph()
        g.captured, g.tracer = {}, who
        carry = [g.input(s, name) for s, name in
                 zip(specs, _leaf_names("carry", len(specs)))]
        xs = [g.input(ShapeDtype(shape_of(x)[1:], dtype_of(x)), name) for x, name in
              zip(x_leaves, _leaf_names(x_name, len(x_leaves)))]
        with recording(g):
            new_carry, y = _pair(f(unflatten(carry_tree, carry), unflatten(x_tree, xs)))
            new_leaves, new_tree = flatten(new_carry)
            _same_carry((carry, carry_tree), (new_leaves, new_tree))
            y_leaves, y_tree = flatten(y)
            outs = [g.lift(v) for v in new_leaves + y_leaves]
        promoted = _carry_types(specs, outs, g)
        if promoted is None:
            break
        specs = promoted                    # a weak first carry takes the type it gets
    else:
        raise AssertionError("scan: the carry's types did not settle")
    outs = [_fit(o, c) if k < len(carry) else o for k, (o, c) in
            enumerate(zip(outs, carry + outs[len(carry):]))]
    captured = list(g.captured.values())
    g.inputs = [inner for _, inner in captured] + carry + xs
    g.outputs = [g.lift(o) for o in outs]
    if any(n.op.name == "copy" for n in g.nodes):         # (a derivative inside f)
        g = g.inline_copies()
    init_leaves = [v if dtype_of(v) == s.dtype else astype(v, dtype=s.dtype)
                   for v, s in zip(init_leaves, specs)]
    return g, [outer for outer, _ in captured], init_leaves, y_tree


def _same_carry(before, after):
    """Refuse a carry that comes out of f with another structure or other shapes."""
    (leaves, tree), (new_leaves, new_tree) = before, after
    if new_tree != tree:
        raise TypeError(f"scan: f must return a carry of the structure it was given, "
                        f"{tree}; it returned {new_tree} (* stands for a number or an "
                        "array)")
    for k, (a, b) in enumerate(zip(leaves, new_leaves)):
        if shape_of(a) != shape_of(b):
            raise TypeError(f"scan: carry leaf {k} goes into f with shape {shape_of(a)} "
                            f"and comes out with shape {shape_of(b)}; f must keep the "
                            "carry's shapes")


def _carry_types(specs, outs, g):
    """None if each carry comes out as it went in (or as a weak number that takes its
    type); else the specs to trace again with, where a weak first carry (a Python
    number) must take the type the body gives it."""
    again = list(specs)
    for k, (s, o) in enumerate(zip(specs, outs)):
        if _carry_type(k, s.dtype, s.weak, o.dtype, is_weak(o)) == "takes":
            again[k] = ShapeDtype(s.shape, o.dtype)
    if again == specs:
        return None
    g.release()
    return again


def _carry_type(k, before, weak_before, after, weak_after):
    """How carry leaf k's dtype goes through f: "same"; "takes" where a weak first carry
    (a Python number) takes the type f gives it; or a TypeError where f changes it (a
    weak result gives way to the carry's type, as in NumPy 2 and JAX)."""
    if after == before:
        return "same"
    if weak_before and np.can_cast(before, after, "same_kind"):
        return "takes"
    if weak_after and np.can_cast(after, before, "same_kind"):
        return "same"
    raise TypeError(f"scan: carry leaf {k} goes into f as {before} and comes out as "
                    f"{after}; f must keep the carry's dtypes (cast the first carry, or "
                    "the result, with astype)")


def _weak(v):
    if type(v) is Node:
        return is_weak(v)
    return type(v) in (float, int, complex)

