"""Staged compilation: `compile` traces a function once per argument signature, optimises
its graph, generates code, and returns a function that runs the generated code.

The ADDS idea (seed 002): derive once, then evaluate straight-line code that does no graph
work at run time.  The steps, each a small graph-to-graph or graph-to-text step:

1. **trace** the function with abstract values of the arguments' shapes and dtypes (static
   arguments are baked in as constants), through any transformations it contains;
   interning, simplification and constant folding run as the graph is built, so what
   depends only on static arguments and constants is computed now, once (hoisted);
2. **scalarise** a graph of small arrays into a graph of scalars (`codegen.scalarize`);
3. **emit** the nodes the outputs need (dead code is never written) with the one emitter,
   single-use temporaries inlined, in Python (`codegen.python`) or C (`codegen.c`);
4. **dispatch**: the function returned *is* the generated code.  Its first lines check
   that the arguments have the traced structure, shapes and dtypes; anything else goes to
   the entry used before it (whose guard checks in turn) and then to the slow path, which
   finds (or traces) the entry for the new signature and puts that entry's code in place.
   So a call costs the generated code and nothing more, even when calls alternate
   between two signatures.
"""
from __future__ import annotations

import inspect
import threading
import types
import weakref

import numpy as np

from .api import _check_fun, trace
from .codegen import python as py
from .codegen.count import count_ops
from .codegen.scalarize import NotScalar, float_form, not_float

# Rough costs on CPython: an arithmetic operation on floats, and a NumPy call on small
# arrays plus its cost per element.  They decide between the float and NumPy flavours.
# A NumPy call is ~0.3 us for a view (a reshape, a slice: no cost per element), ~0.6 us
# for a ufunc, ~2 us for the rest (a concatenation, a reduction), as measured on small
# arrays.  Float code also unpacks every element of its inputs and packs every element
# of its outputs (a 100x100 Hessian: 10,000 of them, most of them zeros).
FLOAT_OP_S, NUMPY_CALL_S, NUMPY_ELEMENT_S = 30e-9, 2e-6, 0.5e-9
NUMPY_VIEW_S, NUMPY_UFUNC_S, FLOAT_ELEMENT_S = 0.3e-6, 0.6e-6, 15e-9
from .errors import ConcretizationError
from .graph.active import current_graph, ieee_arithmetic, is_recording, options
from .graph.graph import Graph, ShapeDtype, aval, canonical, shape_dtype
from .graph.node import Node
from .primitives import array as A
from .primitives.collective import bound_names
from .primitives.registry import CONST
from .tree import LEAF, flatten, hold_constants, unflatten

BACKENDS = ("python", "numpy", "float", "c")


class Entry:
    """What one trace produced: the optimised graph, the graph the code computes (its
    scalarised form where there is one), the generated source and function."""

    def __init__(self, key, graph, emitted, flavour, source, function, params):
        self.key = key
        self.graph = graph              # the optimised graph of the function
        self.emitted = emitted          # the graph the code computes
        self.flavour = flavour          # "float", "numpy" or "c"
        self.source = source
        self.function = function
        self.params = params            # the argument specs of the prologue


def _leaf(x):
    """A leaf as compiled code receives it: Python ints become floats (as in `trace`).  A
    NumPy float64 scalar stays one, and a 0-d float64 array becomes one: those are strongly
    typed where a Python float is weak (NumPy 2), so they trace and dispatch apart."""
    t = type(x)
    if t is int:
        return float(x)
    if t is np.float64:
        return x
    if t is np.ndarray:
        if x.shape == () and x.dtype == np.float64:
            return x[()]
        own = np.dtype(x.dtype.char)            # (NumPy's own object for the type)
        if x.dtype is not own:
            # an equal dtype that is not NumPy's own object (an unpickled array's, a
            # ctypes buffer's, one with metadata), or one NumPy has no own object for
            # (big-endian '>f8' is a new object per array): the guard tells dtypes by
            # identity, so equal dtypes are made one object
            if x.dtype != own:
                own = _DTYPES.setdefault(x.dtype, x.dtype)
            if x.dtype is not own:
                x = x.view(own)
    elif isinstance(x, np.ndarray):
        # a subclass (np.matrix, a masked array): its operators and its mask are not
        # an ndarray's, which is all compiled code knows
        raise TypeError(f"compiled code takes plain NumPy arrays, not {t.__name__}; pass "
                        "np.asarray(x) (a masked array's mask would be dropped: fill it, "
                        "or pass the mask as an argument of its own)")
    return canonical(x)


# Leaf types a call may give that `_leaf` converts: the guard of code traced for the
# converted value rejects them, and `miss` converts them and calls the code again.
_MADE_CANONICAL = frozenset({int, np.bool_, np.ndarray})


def _quiet_leaf(x):
    """`_leaf`, or x itself where `_leaf` would raise (the slow path says why)."""
    try:
        return _leaf(x)
    except (TypeError, ValueError, OverflowError):
        return x


_DTYPES = {}        # the one object `_leaf` gives arrays of each dtype NumPy has none for


def _kind(x):
    shape, dtype = aval(x)
    return (type(x), shape, dtype)


class _Params:
    """f's parameters as a compiled function takes them.

    A call is bound to f's signature as Python binds it (keywords, defaults), then laid
    out in *slots*: one per positional argument, named parameters first and then the
    elements of ``*args``, keyed ``("pos", i)``; then one per keyword-only parameter, keyed
    ``("kw", name)``.  Static arguments are slots, the cache key is made of slots, and the
    generated code checks slots.  A parameter the call leaves out is *defaulted*: f is
    called without it, so f's default is a constant of the trace, and the code checks
    that it gets that very object.  Extra keywords for a ``**kwargs`` parameter are
    refused: their names would have to be part of every signature.

    The generated code mirrors f's signature, so a call by keyword or with defaults runs
    it directly (the defaults are set on the function object).  Where a parameter that
    can be passed by keyword has a name generated code must not use (``_x``, ``input``,
    which could shadow the code's own names and builtins), a small binder with f's own
    names calls the generated code instead: one more call, for such functions only."""

    def __init__(self, f, ns, fn_name):
        P = inspect.Parameter
        if isinstance(f, Graph):
            n = len(f.in_tree.subtrees) if f.in_tree is not None else 0
            sig = inspect.Signature([P(f"arg{i}", P.POSITIONAL_OR_KEYWORD) for i in range(n)])
        else:
            sig = _signature(f)
        self.sig, self.fn_name = sig, fn_name
        params = list(sig.parameters.values())
        self.positional = [p for p in params if p.kind in (P.POSITIONAL_ONLY,
                                                          P.POSITIONAL_OR_KEYWORD)]
        self.kwonly = [p for p in params if p.kind == P.KEYWORD_ONLY]
        self.varargs = next((p for p in params if p.kind == P.VAR_POSITIONAL), None)
        self.varkw = next((p for p in params if p.kind == P.VAR_KEYWORD), None)
        # the names of f's parameters in generated code
        self.safe = {p.name: ns.names.user(p.name) for p in params}
        self.direct = all(self.safe[p.name] == p.name for p in params
                          if p.kind in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY))

    @property
    def takes_nothing(self) -> bool:
        return not self.sig.parameters

    def describe(self) -> str:
        return f"{self.fn_name}{self.sig}"

    # --- calls -----------------------------------------------------------------------------
    def bind(self, args, kwargs, what="arguments"):
        """(layout, values, defaulted) of a call: the slots' keys, their values (f's
        defaults where the call leaves a parameter out), and the set of those slots.  A
        parameter given f's default object itself counts as left out: that is what the
        generated code passes on to the slow path, and what f makes of it."""
        try:
            bound = self.sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.fn_name}(): {what}: {e}") from None
        bound.apply_defaults()
        got = bound.arguments
        values = [got[p.name] for p in self.positional]
        defaulted = {("pos", i) for i, p in enumerate(self.positional)
                     if got[p.name] is p.default}
        if self.varargs is not None:
            values.extend(got[self.varargs.name])
        layout = [("pos", i) for i in range(len(values))]
        for p in self.kwonly:
            layout.append(("kw", p.name))
            values.append(got[p.name])
            if got[p.name] is p.default:
                defaulted.add(("kw", p.name))
        if self.varkw is not None and got[self.varkw.name]:
            extra = ", ".join(map(repr, got[self.varkw.name]))
            raise TypeError(f"{self.fn_name}(): a compiled function takes only the "
                            f"parameters f names, but its **{self.varkw.name} was given "
                            f"{extra}: make them parameters of f, or bind them first "
                            "(functools.partial)")
        return tuple(layout), values, frozenset(defaulted)

    def call(self, f, layout, values, defaulted):
        """f called with the slots' values, leaving out the defaulted ones (those before a
        positional argument that is given are passed, as their default objects)."""
        last = max((k for k, slot in enumerate(layout)
                    if slot[0] == "pos" and slot not in defaulted), default=-1)
        pos = [v for (kind, _), v in zip(layout[:last + 1], values) if kind == "pos"]
        kw = {name: v for (kind, name), v in zip(layout, values)
              if kind == "kw" and (kind, name) not in defaulted}
        return f(*pos, **kw)

    def label(self, slot) -> str:
        """The name of a slot: its parameter's, or ``arg{i}`` for an element of *args."""
        kind, i = slot
        if kind == "kw":
            return i
        return self.positional[i].name if i < len(self.positional) else f"arg{i}"

    # --- static arguments ------------------------------------------------------------------
    def static_slots(self, static_argnums, static_argnames, npositional):
        """The slots static_argnums and static_argnames name.  `npositional` is the
        number of positional example arguments, if any (a negative position counts from
        the end of the positional parameters, or of those arguments given *args)."""
        if isinstance(static_argnums, (int, np.integer)) and not isinstance(
                static_argnums, bool):
            static_argnums = (static_argnums,)
        try:
            nums = tuple(int(i) for i in static_argnums)
        except TypeError:
            raise TypeError(f"compile: static_argnums must be an int or a tuple of ints, "
                            f"got {static_argnums!r}") from None
        n = len(self.positional) if self.varargs is None else npositional
        slots = set()
        for i in nums:
            if n is None:
                if i < 0:
                    raise ValueError(f"compile: static_argnums={i} counts from the end, "
                                     f"but {self.describe()} takes any number of "
                                     "positional arguments: give example arguments, or "
                                     "count from the start")
            elif not -n <= i < n:
                raise ValueError(f"compile: static_argnums={i} is out of range for "
                                 f"{self.describe()}, which has {n} positional "
                                 f"argument{'s' if n != 1 else ''}")
            slots.add(("pos", i % n if n else i))
        if isinstance(static_argnames, str):
            static_argnames = (static_argnames,)
        try:
            names = tuple(static_argnames)
        except TypeError:
            raise TypeError(f"compile: static_argnames must be a str or a tuple of str, "
                            f"got {static_argnames!r}") from None
        positional = [p.name for p in self.positional]
        kwonly = [p.name for p in self.kwonly]
        for name in names:
            if name in positional:
                slots.add(("pos", positional.index(name)))
            elif name in kwonly:
                slots.add(("kw", name))
            else:
                raise ValueError(f"compile: static_argnames names {name!r}, which is not a "
                                 f"named parameter of {self.describe()}")
        return frozenset(slots)

    def static_hint(self, slot) -> str:
        kind, i = slot
        if kind == "kw":
            return f"static_argnames=({i!r},)"
        if i < len(self.positional):
            return f"static_argnums=({i},) or static_argnames=({self.positional[i].name!r},)"
        return f"static_argnums=({i},)"

    # --- the generated function's head -----------------------------------------------------
    def form(self, layout, names):
        """The `CallForm` of an entry for `layout` (its *args elements get names from
        `names`), and the local names of its slots."""
        safe = self.safe
        slot_names = [safe[p.name] for p in self.positional]
        head, forward, miss = list(slot_names), list(slot_names), list(slot_names)
        if any(p.kind == p.POSITIONAL_ONLY for p in self.positional):
            k = max(i for i, p in enumerate(self.positional) if p.kind == p.POSITIONAL_ONLY)
            head.insert(k + 1, "/")
        varargs = None
        if self.varargs is not None:
            pack = safe[self.varargs.name]
            head.append("*" + pack)
            forward.append("*" + pack)
            miss.append("*" + pack)
            elements = [names.user(self.label(("pos", i)))
                        for i in range(len(self.positional), len(layout) - len(self.kwonly))]
            varargs = (pack, elements)
            slot_names += elements
        elif self.kwonly:
            head.append("*")
        for p in self.kwonly:
            name = safe[p.name]
            head.append(name)
            forward.append(f"{name}={name}")
            miss.append(f"{p.name}={name}")
            slot_names.append(name)
        varkw = None
        if self.varkw is not None:
            varkw = safe[self.varkw.name]
            for text in (head, forward, miss):
                text.append("**" + varkw)
        form = py.CallForm(", ".join(head), ", ".join(forward), ", ".join(miss),
                           varargs, varkw)
        return form, slot_names

    def defaults(self):
        """(__defaults__, __kwdefaults__) of the public function: f's defaults, the very
        objects (the code checks a defaulted slot by identity), keyword-only ones under
        f's names (the generated code's too, where it is called directly: `direct`)."""
        pos = tuple(p.default for p in self.positional if p.default is not p.empty)
        kw = {p.name: p.default for p in self.kwonly if p.default is not p.empty}
        return pos or None, kw or None


def _signature(f):
    """The signature calls of f bind to.  A wrapper that passes ``(*args, **kwargs)`` on
    (``wg.grad(f)``, most decorators) takes the parameters of the function it wraps; one
    with parameters of its own (``wg.hvp(f)`` takes ``x, v``) takes those.  A builtin
    without a signature takes positional arguments."""
    P = inspect.Parameter
    try:
        own = inspect.signature(f, follow_wrapped=False)
    except (TypeError, ValueError):
        return inspect.Signature([P("args", P.VAR_POSITIONAL)])
    if [p.kind for p in own.parameters.values()] != [P.VAR_POSITIONAL, P.VAR_KEYWORD]:
        return own
    try:
        return inspect.signature(f)
    except (TypeError, ValueError):
        return own


class _Local(threading.local):
    """A dispatcher's per-thread state: the call `miss` is retrying made canonical, and
    whether it is running code it has just switched to."""
    original = None
    retry = False


class _Dispatcher:
    """The slow path of a compiled function: signatures, the cache, tracing, code swaps."""

    def __init__(self, f, backend, name):
        self.f = f
        self.static = frozenset()
        self.backend = backend
        self.ns = py.Namespace()
        self.fn_name = self.ns.names.user(name)
        self.ieee = ieee_arithmetic()    # (as wg.options said when compile was called: a
        #                                  signature may be traced later, outside it)
        self.params = _Params(f, self.ns, self.fn_name)
        self.cache = {}
        self.function = None        # the public function
        self.target = None          # the function whose code entries swap in
        self.ns.fixed("_miss", self.miss)
        self.ns.fixed("_next", self.miss)       # see `use`
        self._local = _Local()
        self.start_code = None      # the code that sends every call to `miss` (`_start`)
        self.rerouted = False       # that code is in place (`reroute`): `use` swaps again
        _DISPATCHERS.add(self)

    # --- signatures ------------------------------------------------------------------------
    def signature(self, layout, values, defaulted):
        """(key, canonical values, prologue specs) of a call laid out in slots."""
        key, canon, specs = [], list(values), []
        for k, (slot, a) in enumerate(zip(layout, values)):
            if slot in defaulted:
                key.append((slot, "default"))
                specs.append(("default", a))
                continue
            if slot in self.static:
                try:
                    hash(a)
                except TypeError:
                    raise TypeError(f"compile: static argument {self.params.label(slot)!r} "
                                    f"({type(a).__name__}) must be hashable: it is part of "
                                    "the cache key") from None
                key.append((slot, "static", py.static_key(a)))
                specs.append(("static", a))
                continue
            leaves, tree = flatten(a)
            leaves = [_leaf(x) for x in leaves]
            for x in leaves:
                if not _traceable(x):
                    raise TypeError(
                        f"{self.fn_name}(): argument {self.params.label(slot)!r} "
                        f"{'is' if tree.kind == LEAF else 'holds'} a {type(x).__name__} "
                        f"({x!r:.40}); compiled code takes numbers, arrays and pytrees of "
                        "them. If it is a setting, mark it static: wg.compile(f, ..., "
                        f"{self.params.static_hint(slot)})")
            kinds = tuple(_kind(x) for x in leaves)
            key.append((slot, tree, kinds))
            canon[k] = unflatten(tree, leaves)
            specs.append(("tree", tree, kinds))
        return tuple(key), canon, specs

    # --- the slow path ---------------------------------------------------------------------
    def miss(self, *args, **kwargs):
        """Called by the generated guard when the arguments differ from the traced ones."""
        if _DEBUG.on:
            return self.debug_call(args, kwargs)
        local = self._local
        if local.original is None:
            made = self.canonical_call(args, kwargs)
            if made is not None:
                # Made canonical, the arguments pass the guard of the code traced for
                # them: 2 us, not 20.  Where they do not, the guard comes back here, and
                # the slow path takes the call as it was made.
                local.original = args, kwargs
                try:
                    return self.function(*made[0], **made[1])
                finally:
                    local.original = None
        else:
            args, kwargs = local.original
            local.original = None
        if _traced((args, kwargs)):
            # inside another transformation: trace through f itself, so it differentiates
            return self.f(*args, **kwargs)
        entry, canon = self.entry_for(args, kwargs)
        self.use(entry)
        if local.retry:
            raise AssertionError("compile: the guard of the generated code rejects the "
                                 "arguments it was generated for (a bug in wengert)")
        local.retry = True
        try:
            return self.run(entry, canon)
        finally:
            local.retry = False

    def canonical_call(self, args, kwargs):
        """``(args, kwargs)`` with the arguments that are themselves leaves made canonical
        as a trace takes them (a Python int as a float, a 0-d float64 array as a NumPy
        scalar, a NumPy bool as a bool), or None where none changes.  Static arguments and
        defaults are left alone: they are matched as they are.  (Leaves inside pytrees
        take the slow path, which makes the whole call canonical.)"""
        static, positional = self.static, self.params.positional
        made = None
        for i, a in enumerate(args):
            if (type(a) in _MADE_CANONICAL and ("pos", i) not in static
                    and not (i < len(positional) and a is positional[i].default)):
                b = _quiet_leaf(a)
                if b is not a:
                    if made is None:
                        made = list(args)
                    made[i] = b
        kw = None
        for name, a in kwargs.items():
            if type(a) in _MADE_CANONICAL and ("kw", name) not in static:
                b = _quiet_leaf(a)
                p = self.params.sig.parameters.get(name)
                if b is not a and not (p is not None and a is p.default):
                    if kw is None:
                        kw = dict(kwargs)
                    kw[name] = b
        if made is None and kw is None:
            return None
        return (args if made is None else made), (kwargs if kw is None else kw)

    def run(self, entry, canon):
        """The entry's code called with the canonical values of its slots."""
        pos = [v for (kind, _), v in zip(entry.layout, canon) if kind == "pos"]
        kw = {self.params.safe[name]: v
              for (kind, name), v in zip(entry.layout, canon) if kind == "kw"}
        return entry.function(*pos, **kw)

    def use(self, entry):
        """Make `entry` the code the compiled function runs, and the entry it ran until now
        the one tried second: where the guard of `entry` fails it calls `_next`, that
        entry's own function, whose guard's misses go to the slow path.  So calls that
        alternate between two signatures (two shapes, two static values) swap no code,
        and a call of the second costs one more guard, not a pass through the slow path
        (about 17 us).  Any state halfway through a swap is still right: every entry's
        code checks its own arguments."""
        before = self.function.entry
        if entry is before and not self.rerouted:
            return
        self.rerouted = False
        self.target.__code__ = entry.code
        # The guard passes the arguments on as the slow path takes them (`miss_call`);
        # an entry's function takes them so unless a keyword-only parameter was renamed.
        chain = before is not None and entry.form.miss_call == entry.form.forward
        self.ns.globals["_next"] = before.function if chain else self.miss
        fn = self.function
        fn.source, fn.graph = entry.source, entry.graph
        fn.entry = entry

    def entry_for(self, args, kwargs):
        """(the compiled entry for these arguments' signature, built if it is new, and the
        arguments as it takes them)."""
        layout, values, defaulted = self.params.bind(args, kwargs)
        key, canon, specs = self.signature(layout, values, defaulted)
        entry = self.cache.get(key)
        if entry is None:
            entry = self.cache[key] = self.build(key, layout, canon, specs)
        return entry, canon

    # --- JAX's debugging flags ------------------------------------------------------------
    def reroute(self):
        """Send every call to `miss` (while a debugging flag is set, see `set_debugging`),
        until `use` puts an entry's code back."""
        if self.start_code is not None:
            self.target.__code__ = self.start_code
            self.rerouted = True

    def debug_call(self, args, kwargs):
        """A call while `set_debugging` has a flag set: f itself (disable_jit), or the
        compiled code with its result checked for nan or inf (debug_nans, debug_infs)."""
        if _DEBUG.disable_jit or _traced((args, kwargs)):
            return self.f(*args, **kwargs)
        out = self.run(*self.entry_for(args, kwargs))
        bad = _non_finite(out, _DEBUG.nans, _DEBUG.infs)
        if bad:
            # Run f eagerly with NumPy raising where an operation makes a nan or inf, as
            # JAX re-runs op by op to name the operation; compiled float code may have made
            # it in Python arithmetic (inf - inf), which raises nothing.
            raising = {"invalid": "raise"} if _DEBUG.nans else {}
            if _DEBUG.infs:
                raising.update(over="raise", divide="raise")
            with np.errstate(**raising):
                self.f(*args, **kwargs)
            raise FloatingPointError(f"{bad} in the result of the compiled function "
                                     f"{self.fn_name!r} (jax_debug_nans / jax_debug_infs); "
                                     "its inputs hold it already, or it was made in code "
                                     "NumPy does not watch")
        return out

    # --- tracing and code generation ---------------------------------------------------------
    def traced_function(self, layout, canon, specs):
        """f as a function of its dynamic arguments only (static ones baked in, defaulted
        ones left out), keeping f's parameter names for the graph's inputs."""
        f, params = self.f, self.params
        dynamic = [k for k, spec in enumerate(specs) if spec[0] == "tree"]
        fixed = {k: canon[k] for k, spec in enumerate(specs) if spec[0] != "tree"}
        defaulted = {slot for slot, spec in zip(layout, specs) if spec[0] == "default"}
        n = len(layout)

        def dynamic_f(*dyn):
            it = iter(dyn)
            values = [fixed[k] if k in fixed else next(it) for k in range(n)]
            return params.call(f, layout, values, defaulted)

        dynamic_f.__signature__ = inspect.Signature(
            [inspect.Parameter(params.label(layout[k]), inspect.Parameter.POSITIONAL_ONLY)
             for k in dynamic])
        return dynamic_f

    def trace(self, layout, canon, specs, optimize=True):
        if isinstance(self.f, Graph):
            leaves, tree = flatten(tuple(canon))
            if self.f.in_tree is not None and tree != self.f.in_tree:
                # (the leaves would be bound by position: other keys, silently)
                raise ValueError(f"a compiled graph takes arguments of the structure it "
                                 f"was traced with, {self.f.in_tree}; got {tree}")
            got = [aval(x) for x in leaves]
            want = [(n.shape, n.dtype) for n in self.f.inputs]
            if got != want:
                show = lambda avals: ", ".join(f"{d}{list(s)}" for s, d in avals)
                raise ValueError(f"a compiled graph runs on the shapes and dtypes it was "
                                 f"traced with ({show(want)}), got ({show(got)}); trace "
                                 "the function again, or compile the function itself")
            return self.f
        dyn = [_abstract(x) for x, spec in zip(canon, specs) if spec[0] == "tree"]
        with options(optimize=optimize, ieee=self.ieee):
            _STAGING.depth = staging() + 1
            try:
                return trace(self.traced_function(layout, canon, specs), *dyn)
            except ConcretizationError as e:
                said = str(e).rstrip()
                raise ConcretizationError(
                    f"{said}{'' if said.endswith('.') else '.'} If the branch is on an argument that is a setting rather than "
                    "data, mark it static: wg.compile(f, ..., static_argnums=(i,)) or "
                    "static_argnames=('name',).") from None
            finally:
                _STAGING.depth -= 1

    def build(self, key, layout, canon, specs):
        graph = self.trace(layout, canon, specs)
        if not isinstance(self.f, Graph):
            _hold_constant_outputs(graph)
        names = self.ns.names.fork()
        names.taken.update([self.fn_name, *self.params.safe.values()])
        form, slot_names = self.params.form(layout, names)
        params = list(zip(slot_names, specs))
        backend = self.backend
        scalar = entry = refused = None
        if backend == "c":              # large arrays as C loops (codegen.cloops)
            from .codegen import cloops
            entry, refused = cloops.entry_or_reason(self, key, graph, params, form)
        if backend == "python":
            scalar = faster_float_form(graph)
        elif backend in ("float", "c") and entry is None:
            c = backend == "c"
            try:
                if refused:
                    cloops.refuse_large(graph, refused)
                scalar = float_form(graph, 10 ** 7, 10 ** 6, loops=c, integers=c)
                if c:
                    from .codegen import c as C
                    entry = C.entry(self, key, graph, scalar, params, form,
                                    C.LARGEST if refused else None)
            except NotScalar as e:
                held = "float64, int64 and bool" if c else "float64"
                why = f", and as loops it has {refused}" if refused else ""
                raise ValueError(f"compile(backend={backend!r}) needs a graph of {held} "
                                 "scalars or of arrays it can write element by element; "
                                 f"this one has {e}{why}: use backend='python'") from None
        if entry is None:
            flavour = py.FLOAT if scalar is not None else py.NUMPY
            fallback = None
            if flavour == py.FLOAT:
                fallback = self.ns.bind(_Lazy(self, graph, params, form), "numpy_version")
            source = py.function_source(self.fn_name, params, graph, flavour, self.ns,
                                        scalar, fallback, form=form)
            function = py.make_function(source, self.fn_name, self.ns)
            emitted = scalar.graph if scalar is not None else graph
            entry = Entry(key, graph, emitted, flavour, source, function, params)
        entry.layout, entry.form = layout, form
        entry.code = _trying_next(entry.function.__code__)     # what `use` swaps in
        return entry


def _trying_next(code):
    """An entry's code with its guard's calls of the slow path (``_miss``) made calls of
    ``_next``: the same code, only the global it looks up on a miss differs, so nothing
    is generated or compiled again."""
    return code.replace(co_names=tuple("_next" if name == "_miss" else name
                                       for name in code.co_names))


class _Lazy:
    """The NumPy flavour of an entry, built the first time the float flavour needs it."""

    def __init__(self, dispatcher, graph, params, form):
        self.d, self.graph, self.params, self.form = dispatcher, graph, params, form
        self.function = None

    def __call__(self, *args, **kwargs):
        if self.function is None:
            ns = py.Namespace()
            ns.fixed("_miss", self.d.miss)
            name = ns.names.user(self.d.fn_name)
            src = py.function_source(name, self.params, self.graph, py.NUMPY, ns,
                                     form=self.form)
            self.function = py.make_function(src, name, ns)
        return self.function(*args, **kwargs)


class _Debugging:
    """JAX's debugging flags, as `wengert.jax_compat.config` sets them: process-wide,
    since they act through the code of compiled functions, which every thread shares."""
    disable_jit = False         # compiled functions call f itself
    nans = False                # compiled results are checked for nan
    infs = False                # ... and for inf
    on = False                  # any of them


_DEBUG = _Debugging()
_DISPATCHERS = weakref.WeakSet()    # every compiled function's dispatcher, for `reroute`


def set_debugging(*, disable_jit=None, nans=None, infs=None):
    """Set JAX's flags ``jax_disable_jit``, ``jax_debug_nans``, ``jax_debug_infs`` for
    compiled functions (None: unchanged): while one is set, every call of a compiled
    function takes the slow path, which runs f itself (disable_jit) or checks the
    result (a ``FloatingPointError`` for a nan or inf in it).  Returns the flags before.

    Example:
        >>> import wengert as wg
        >>> from wengert.staged import set_debugging
        >>> f = wg.jit(lambda x, y: x - y)
        >>> before = set_debugging(nans=True)
        >>> f(float("inf"), float("inf"))
        Traceback (most recent call last):
        ...
        FloatingPointError: nan in the result of the compiled function ...
        >>> _ = set_debugging(**before)
        >>> f(float("inf"), float("inf"))
        nan
    """
    before = {"disable_jit": _DEBUG.disable_jit, "nans": _DEBUG.nans, "infs": _DEBUG.infs}
    if disable_jit is not None:
        _DEBUG.disable_jit = bool(disable_jit)
    if nans is not None:
        _DEBUG.nans = bool(nans)
    if infs is not None:
        _DEBUG.infs = bool(infs)
    _DEBUG.on = _DEBUG.disable_jit or _DEBUG.nans or _DEBUG.infs
    for d in list(_DISPATCHERS):
        d.reroute()         # (back to `miss` either way: on, it debugs; off, `use` swaps)
    return before


def _non_finite(out, nans, infs):
    """'nan' or 'inf' where a leaf of `out` holds one (and that is watched), else ''."""
    for leaf in flatten(out)[0]:
        if isinstance(leaf, (float, complex, np.ndarray, np.number)):
            a = np.asarray(leaf)
            if a.dtype.kind not in "fc":
                continue
            if nans and np.isnan(a).any():
                return "nan"
            if infs and np.isinf(a).any():
                return "inf"
    return ""


_STAGING = threading.local()


def staging() -> int:
    """How many `wg.compile` traces this thread is inside (0: none): code whose every
    call would be the same trace, where a value drawn while tracing (a random mask) is
    drawn once for all calls.

    Example:
        >>> import wengert as wg
        >>> from wengert.staged import staging
        >>> staging(), wg.compile(lambda x: x + staging(), 1.0)(1.0)
        (0, 2.0)
    """
    return getattr(_STAGING, "depth", 0)


def _hold_constant_outputs(graph):
    """Hold the graph's constant int scalar outputs (an aux's step count, say) in its
    result's structure, as a trace holds strings: a constant needs no code, and float
    code (Python floats, C doubles) has no ints.  (Not when all outputs are: a graph
    without outputs reads as all of its nodes.)"""
    outs = graph.outputs
    held = [o.op is CONST and o.shape == () and not_float([o]) is not None for o in outs]
    if any(held) and not all(held):
        values = [o.value if h else o for o, h in zip(outs, held)]
        graph.outputs, graph.out_tree = hold_constants(graph.out_tree, values,
                                                       lambda v: type(v) is not Node)


def _faster(scalar, graph, numpy_s) -> bool:
    """Whether straight-line float code should beat NumPy calls on the arrays, which cost
    `numpy_s` (`_numpy_s`)."""
    elements = sum(n.size for n in graph.inputs) + sum(n.size for n in graph.outputs)
    float_s = sum(1 for n in scalar.graph.live_nodes() if n.args) * FLOAT_OP_S + \
        elements * FLOAT_ELEMENT_S
    return float_s <= numpy_s


def faster_float_form(graph, loops=False):
    """The float form of `graph` (`float_form`; with ``loops``, as there) where float
    code should beat NumPy calls on its arrays, else None.  Judged twice: before
    scalarising (`may_be_faster`) and after (`_faster`)."""
    numpy_s = _numpy_s(graph)
    if not may_be_faster(graph, numpy_s):
        return None
    try:
        scalar = float_form(graph, loops=loops)
    except NotScalar:
        return None
    return scalar if _faster(scalar, graph, numpy_s) else None


def may_be_faster(graph, numpy_s=None) -> bool:
    """Whether float code could beat NumPy calls on the arrays (that cost `numpy_s`, if
    known), judged before the graph is scalarised (which takes about a second where a
    matrix product of thousands of elements would be written out): an elementwise
    operation on computed values costs at least one float operation per element (one
    with a constant may fold away)."""
    least = sum(n.size for n in graph.live_nodes() if n.args and n.op.elementwise and
                all(a.op is not CONST for a in n.args)) * FLOAT_OP_S
    return least <= (_numpy_s(graph) if numpy_s is None else numpy_s)


def _numpy_s(graph):
    ops = [n for n in graph.live_nodes() if n.args]
    return sum(_numpy_call_s(n) for n in ops) + \
        sum(n.size for n in ops if not _view(n)) * NUMPY_ELEMENT_S


def _view(node) -> bool:
    op = node.op
    return op is A.reshape or op is A.transpose or op is A.getitem and not any(
        isinstance(i, np.ndarray) for i in node.params["index"])


def _numpy_call_s(node):
    if _view(node):
        return NUMPY_VIEW_S
    return NUMPY_UFUNC_S if node.op.elementwise else NUMPY_CALL_S


def _traceable(x) -> bool:
    """Whether compiled code can take a (canonical) leaf as data: a number or an array of
    numbers (or an abstract value)."""
    t = type(x)
    if t is float or t is bool or t is int or t is complex:
        return True
    if isinstance(x, (np.ndarray, np.generic)):
        return x.dtype.kind in "biufc"
    return isinstance(x, (ShapeDtype, int, float, complex))


def _abstract(x):
    leaves, tree = flatten(x)
    return unflatten(tree, [shape_dtype(v) for v in leaves])


def _traced(args) -> bool:
    """Whether a compiled function must trace through f instead of running its code: some
    argument is traced (another transformation is recording), or a vmap with an axis name
    is tracing its function, where f may hold a collective over its examples, which only
    that vmap can compute."""
    leaves, _ = flatten(args)
    return any(type(v) is Node for v in leaves) or bool(bound_names())


def compile(f, *example_args, static_argnums=(), static_argnames=(), backend="python"):
    """Compile f: trace it once per argument signature, optimise its graph, generate code.

    Args:
        f: a function of numbers, arrays and pytrees of them; any transformation of one
            (``wg.grad(f)``, ``wg.hessian(f)``); or a `Graph` (from `wg.trace`).
        *example_args: arguments of the shapes and dtypes to compile for (their values are
            not used), bound to f's parameters as a call is: parameters they leave out
            take f's defaults.  With none, f is compiled at its first call.
        static_argnums: positions of arguments that are settings rather than data (ints,
            strings, flags): their values are baked into the code, and a call with other
            values compiles again.  They must be hashable; they match by type as well as
            value (``True``, ``1`` and ``1.0`` compile apart; any nan matches a nan;
            ``-0.0`` and ``0.0`` compile apart).
        static_argnames: the same, by parameter name (keyword-only parameters too).
        backend: ``"python"`` (default) writes straight-line Python on floats when the
            graph is small and of float64 scalars or small arrays, and NumPy code
            otherwise; ``"float"`` / ``"numpy"`` ask for one of the two; ``"c"`` compiles
            a scalar graph with the system's C compiler (see `wengert.codegen.c`).

    Returns:
        A function with f's signature: arguments by position or keyword, and f's defaults
        for those left out (a default is a constant of the trace, like a static value).
        A ``**kwargs`` parameter takes no extra names.  Calls with other shapes or dtypes
        compile again (a cache keyed by them).  It has attributes ``source`` (the generated code), ``graph``
        (the optimised graph), ``count()`` (operations by kind; ``count(plain=True)``
        counts plain AD, with interning and simplification off) and ``code(language)``
        (the same computation as "python", "c", "fortran" or "adds" text).  Leaves of
        the result that are not numbers or arrays (a string or an object in an aux) are
        returned as f returned them at trace time; text made from a traced value is
        refused (`ConcretizationError`).

    A Python ``if`` on a traced value cannot be compiled (`ConcretizationError`): write
    it with ``wg.select`` / ``wengert.numpy.where``, or make the argument static.

    Example:
        >>> import wengert as wg
        >>> def f(x, y):
        ...     return x * y + wg.math.sin(x)
        >>> df = wg.compile(wg.grad(f, argnums=(0, 1)), 2.0, 3.0)
        >>> df(2.0, 3.0)
        (2.5838531634528574, 2.0)
        >>> print(df.source)
        def f(x, y):
            if type(x) is not float or type(y) is not float:
                return _miss(x, y)
            try:
                _r0 = y+_math.cos(x)
                _r1 = x
                return (_r0, _r1)
            except (ArithmeticError, ValueError):   # math raised: NumPy gives inf or nan
                return _numpy_version0(x, y)
        <BLANKLINE>
        >>> df.count()
        {'add': 1, 'mul': 0, 'div': 0, 'call': 1, 'pow': 0, 'neg': 0, 'cmp': 0}
        >>> def g(x, n=2, *, mode="sin"):
        ...     return wg.math.sin(x) ** n if mode == "sin" else x ** n
        >>> cg = wg.compile(g, 1.0, static_argnames="mode")
        >>> cg(2.0) == g(2.0), cg(x=2.0, n=3.0, mode="pow")
        (True, 8.0)
    """
    if backend not in BACKENDS:
        raise ValueError(f"compile: backend must be one of {BACKENDS}, got {backend!r}")
    if isinstance(f, Graph):
        return _compile_graph(f, backend)
    _check_fun(f, "compile")
    name = getattr(f, "__name__", None) or "compiled"
    if name == "<lambda>":
        name = "compiled"
    d = _Dispatcher(f, backend, name)
    d.static = d.params.static_slots(static_argnums, static_argnames,
                                     len(example_args) if example_args else None)
    _start(d, f, example_args if example_args or d.params.takes_nothing else None)
    return d.function


def _start(d, f, examples):
    """Make the public function, compiled for the examples if there are any.  Entries'
    code is swapped into a function object of its own: the public function, or the one
    its binder calls (see `_Params`)."""
    params = d.params
    form, _ = params.form((), d.ns.names.fork())
    src = f"def {d.fn_name}({form.head}):\n    return _miss({form.miss_call})\n"
    target = d.target = types.FunctionType(py.make_function(src, d.fn_name, d.ns).__code__,
                                           d.ns.globals, d.fn_name)
    d.start_code = target.__code__
    fn = target if params.direct else _binder(d, target)
    fn.__defaults__, fn.__kwdefaults__ = params.defaults()
    d.function = fn
    fn.__doc__ = getattr(f, "__doc__", None)
    fn.__wrapped__ = f
    fn.source, fn.graph, fn.entry = None, None, None
    fn.count = lambda plain=False: _count(d, plain)
    fn.code = lambda language="python": _code(d, language)
    fn.cache = d.cache
    if examples is not None:
        layout, values, defaulted = params.bind(examples, {}, "example arguments")
        key, canon, specs = d.signature(layout, values, defaulted)
        d.use(d.cache.setdefault(key, d.build(key, layout, canon, specs)))
    if _DEBUG.on:
        d.reroute()


def _binder(d, target):
    """The public function of an f whose parameter names generated code cannot use: f's
    own parameters, passed on to `target` under the generated code's names."""
    params = d.params
    real = set(params.sig.parameters)
    inner = d.ns.names.own("entry")
    while inner in real:                # (own names start with _, and so may f's)
        inner = d.ns.names.own("entry")
    d.ns.fixed(inner, target)
    text = str(params.sig.replace(return_annotation=inspect.Signature.empty,
                                  parameters=[p.replace(default=p.empty,
                                                        annotation=p.empty)
                                              for p in params.sig.parameters.values()]))
    head = text[1:-1]
    args = [p.name for p in params.positional]
    if params.varargs is not None:
        args.append("*" + params.varargs.name)
    args += [f"{params.safe[p.name]}={p.name}" for p in params.kwonly]
    if params.varkw is not None:
        args.append("**" + params.varkw.name)
    src = f"def {d.fn_name}({head}):\n    return {inner}({', '.join(args)})\n"
    return py.make_function(src, d.fn_name, d.ns)


def _current(d):
    entry = d.function.entry
    if entry is None:
        raise ValueError("this compiled function has not been called yet: call it (or pass "
                         "example arguments to wg.compile) first")
    return entry


def _count(d, plain):
    """Operations of the current entry by kind: of the emitted code, or (plain=True) of
    the graph traced with interning and simplification off."""
    entry = _current(d)
    if not plain:
        return count_ops(entry.emitted, rewrite=False)     # what the code it runs does
    if isinstance(d.f, Graph):
        raise ValueError("count(plain=True) needs the function, not a graph")
    specs = [spec for _, spec in entry.params]
    canon = [spec[1] if spec[0] != "tree" else unflatten(
        spec[1], [ShapeDtype(s, t, weak=k is float) for k, s, t in spec[2]])
        for spec in specs]
    return count_ops(d.trace(entry.layout, canon, specs, optimize=False))


def _code(d, language):
    from .codegen import c, text
    entry = _current(d)
    if language == "python":
        if entry.flavour != "c":
            return entry.source
        if getattr(entry, "looped", False):         # (C loops: the NumPy code of them)
            return py.function_source(d.fn_name, entry.params, entry.graph, py.NUMPY,
                                      py.Namespace(), form=entry.form)
        # (a C entry's source is C: the Python text is written as backend="float" would,
        # in a namespace of its own, for reading; with loops, which float code does not
        # write, as the NumPy flavour would)
        try:
            scalar = float_form(entry.graph, 10 ** 7, 10 ** 6)
        except NotScalar:
            return py.function_source(d.fn_name, entry.params, entry.graph, py.NUMPY,
                                      py.Namespace(), form=entry.form)
        return py.function_source(d.fn_name, entry.params, entry.graph, py.FLOAT,
                                  py.Namespace(), scalar, None, form=entry.form)
    if language == "c":
        return c.source_of(d, entry)
    if language in ("fortran", "adds"):
        return text.source_of(entry, language)
    raise ValueError(f"code: language must be 'python', 'c', 'fortran' or 'adds', got "
                     f"{language!r}")


def _compile_graph(graph, backend):
    """A graph (from wg.trace) compiled to a function of its inputs, for its shapes."""
    if graph.in_tree is None:
        raise ValueError("compile: the graph has no argument structure; make it with "
                         "wg.trace")
    examples = unflatten(graph.in_tree, [_example(n) for n in graph.inputs])
    d = _Dispatcher(graph, backend, "graph")
    _start(d, graph, list(examples))
    return d.function


def _example(node):
    """A value of the node's shape and dtype, for the signature of a graph's arguments."""
    if node.shape == () and node.dtype == np.float64:
        return 0.0
    return np.zeros(node.shape, node.dtype)


_JIT_HINTS = ("donate_argnums", "donate_argnames", "in_shardings", "out_shardings", "device",
              "inline", "keep_unused", "abstracted_axes", "compiler_options")


def jit(fun=None, *, static_argnums=(), static_argnames=(), backend=None, **hints):
    """JAX's ``jax.jit``: `compile` under JAX's name and keywords, so that
    ``import wengert as jax`` programs run unchanged (as a call, a decorator, or through
    ``functools.partial(jax.jit, static_argnums=...)``).

    `static_argnums` and `static_argnames` are `compile`'s.  JAX's hints that change no
    result on one CPU (``donate_argnums``, ``device``, ``inline``, ...) are accepted and
    ignored, and so are ``in_shardings`` and ``out_shardings`` (`wengert.sharding`'s
    shardings or PartitionSpecs, checked to be such: there is one device); JAX's
    ``backend`` may only be ``"cpu"`` (use `compile` for wengert's code generators).

    Example:
        >>> import wengert as wg
        >>> @wg.jit
        ... def f(x):
        ...     return wg.math.sin(x) * x
        >>> round(f(2.0), 6), round(wg.jit(wg.grad(f), donate_argnums=0)(2.0), 6)
        (1.818595, 0.077004)
    """
    unknown = sorted(set(hints) - set(_JIT_HINTS))
    if unknown:
        raise TypeError(f"jit() got unexpected keyword arguments {unknown}; it takes "
                        "static_argnums, static_argnames and JAX's hints "
                        f"{', '.join(_JIT_HINTS)}")
    if backend not in (None, "cpu"):
        raise ValueError(f"jit: backend {backend!r} is not available; wengert runs on the "
                         "CPU (wg.compile(f, backend='c') generates C)")
    for key in ("in_shardings", "out_shardings"):
        if hints.get(key) is not None:  # (the one device's: wengert.sharding; checked)
            from .sharding import check_sharding_leaves
            check_sharding_leaves(hints[key], f"jit: {key}")
    if fun is None:                 # @jit(static_argnums=...) as a decorator factory
        return lambda f: jit(f, static_argnums=static_argnums, static_argnames=static_argnames)
    return compile(fun, static_argnums=static_argnums, static_argnames=static_argnames)


def linearize(f, *primals):
    """f's value at `primals` and its derivative there as a function of the direction, as
    JAX's ``linearize``: ``(f(*primals), f_jvp)`` with ``f_jvp(*tangents)`` equal to
    ``wg.jvp(f, primals, tangents)[1]``.

    Worth it when the derivative at one point is applied along many directions (a
    Newton-Krylov solve, a Jacobian built column by column): f's values and partial
    derivatives at the point are computed once, folded into compiled code (`compile` of
    the JVP, traced with the primals as constants), and each call of f_jvp runs only the
    linear map.  f_jvp takes tangents of the primals' shapes and dtypes and composes with
    every transformation (it is linear: ``wg.jacfwd(f_jvp)`` is the Jacobian).

    Inside another transformation (``wg.grad``, ``wg.vmap``, ``wg.scan``...) the point,
    and any values f closes over, may be traced: the values and partials are then
    computed once, in that transformation's trace, so derivatives flow through them
    (through the weights of a Gauss-Newton product, say), and each f_jvp call evaluates
    the linear rest, ``f_jvp.graph``, whose inputs are the tangents and then the
    partials it needs.  f may branch on the point's value where it has one (an eager
    ``wg.grad``).

    Example:
        >>> import numpy as np, wengert as wg, wengert.numpy as wnp
        >>> f = lambda x: wnp.sin(x) * x[::-1]
        >>> y, f_jvp = wg.linearize(f, np.array([0.0, 1.0]))
        >>> y.round(4).tolist(), f_jvp(np.array([1.0, 0.0])).round(4).tolist()
        ([0.0, 0.0], [1.0, 0.8415])
        >>> print(f_jvp.graph)                  # only the linear map is left
        graph(arg0: f64[2]):
          %5: f64[2] = mul(arg0, [1.        , 0.54030231])
          %6: f64[2] = getitem(arg0, index=(('slice', None, None, -1),))
          %7: f64[2] = mul([1., 0.], %5)
          %8: f64[2] = mul([0.        , 0.84147098], %6)
          %9: f64[2] = add(%7, %8)
          return %9
        >>> def gauss_newton(w):                # f closes over a traced weight
        ...     _, f_jvp = wg.linearize(lambda x: wnp.tanh(w * x), np.array([0.5, 1.0]))
        ...     return wnp.sum(f_jvp(np.ones(2)) ** 2)
        >>> round(float(wg.grad(gauss_newton)(2.0)), 6)      # (as JAX's)
        -0.426142
    """
    from .api import _primal_leaf, direction_leaves, jvp
    _check_fun(f, "linearize")
    if not primals:
        raise TypeError("linearize needs the point: wg.linearize(f, x, ...), one primal per "
                        "argument of f")
    for k, p in enumerate(primals):
        for leaf in flatten(p)[0]:
            _primal_leaf(leaf, f"primal {k}", "linearize")     # (refuses bools, text ...)

    def tangent_leaves(tangents):
        if len(tangents) != len(primals):
            raise TypeError(f"f_jvp takes {len(primals)} tangent"
                            f"{'s' if len(primals) != 1 else ''}, one per primal of "
                            f"linearize, got {len(tangents)}")
        return [leaf for k, (p, t) in enumerate(zip(primals, tangents))
                for leaf in direction_leaves(p, t, f"primal {k}", "tangent", "f_jvp")]

    if current_graph() is not None:     # (where jvp takes plain primals by value itself)
        return _linearize_in_trace(f, primals, tangent_leaves)

    # The point taken by value: f_jvp is the derivative there, whatever becomes of the
    # caller's arrays (a tangent of a new dtype traces the map again, at the point).
    primals = tuple(unflatten(tree, [x.copy() if type(x) is np.ndarray else x
                                     for x in leaves])
                    for leaves, tree in map(flatten, primals))
    out = jvp(f, primals, primals)[0]     # (f's value as jvp gives it; any tangents do)
    tangent_map = compile(lambda *t: jvp(f, primals, t)[1], *primals)

    def f_jvp(*tangents):
        tangent_leaves(tangents)
        return tangent_map(*tangents)
    f_jvp.graph = tangent_map.graph
    f_jvp.source = tangent_map.source
    return out, f_jvp


def _linearize_in_trace(f, primals, tangent_leaves):
    """linearize inside an enclosing trace (a wg.grad, wg.vmap ...), where the primals or
    values f closes over may be traced: the JVP is traced with those as inputs of its own
    (their values known, so f may branch on them), split (`Graph.split`) into what does not
    depend on the tangents, computed now and recorded into the enclosing trace, so that
    derivatives flow through it, and the linear rest, which each f_jvp call evaluates."""
    from .api import jvp
    graph = trace(lambda *t: jvp(f, primals, t), *primals, _capture="linearize")
    out_tree, tangent_tree = graph.out_tree.subtrees
    n_out = out_tree.num_leaves
    values, rest, residuals = graph.split(graph.inputs[:len(flatten(primals)[0])],
                                          [outer for outer, _ in graph.captured.values()],
                                          graph.outputs[n_out:])
    out = unflatten(out_tree, values[:n_out])

    def f_jvp(*tangents):
        leaves = tangent_leaves(tangents)
        if not all(is_recording(r.graph) for r in residuals):
            raise ValueError("f_jvp: it was made inside a transformation that has finished, "
                             "whose values it needs; call it before that transformation "
                             "returns, or return what you need from it")
        return unflatten(tangent_tree, rest.evaluate(leaves + residuals))
    f_jvp.graph = rest
    return out, f_jvp
