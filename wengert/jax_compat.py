"""JAX's top-level names beyond the transformations, with the meaning they have on one CPU
with NumPy arrays, so that ``import wengert as jax`` programs run from their first lines.

* settings: `config` (``config.update("jax_enable_x64", True)``), `enable_x64`,
  `disable_jit`, `debug_nans`, `debug_infs`;
* devices: `devices`, `local_devices`, `device_count`, `local_device_count`,
  `default_backend`, `process_index`, `process_count`, `device_put`, `device_get`,
  `block_until_ready` (one CPU: placing is copying, waiting is nothing);
* types: `Array` (for ``isinstance`` and hints), `ShapeDtypeStruct` (wengert's
  `ShapeDtype`), `float0`, `typeof`;
* transformations under JAX's names: `custom_gradient`, `linear_transpose`,
  `closure_convert`, `make_jaxpr`, `pmap`, `pure_callback`, `named_call`, `named_scope`,
  `ensure_compile_time_eval` (`remat` and `checkpoint_policies` are in
  wengert.checkpointing).

Example:
    >>> import wengert as jax
    >>> jax.config.update("jax_enable_x64", True)
    >>> jax.devices(), jax.default_backend()
    ([CpuDevice(id=0)], 'cpu')
"""
from __future__ import annotations

import abc
import contextlib
import functools
import warnings

import numpy as np

from .errors import ConcretizationError
from .graph.graph import ShapeDtype
from .graph.node import Node
from .primitives.pack import Layout
from .primitives.registry import Primitive, is_weak
from .staged import set_debugging
from .tree import flatten, tree_map, unflatten

__all__ = ["config", "enable_x64", "disable_jit", "debug_nans", "debug_infs", "Device",
           "devices", "local_devices", "device_count", "local_device_count",
           "default_backend", "process_index", "process_count", "device_put", "device_get",
           "block_until_ready", "Array", "ShapeDtypeStruct", "float0", "custom_gradient",
           "linear_transpose", "closure_convert", "make_jaxpr", "pmap", "pure_callback",
           "named_call", "named_scope", "ensure_compile_time_eval", "typeof"]


# ---- settings ------------------------------------------------------------------------------
#: JAX settings that change no result here (precision of float64 products, caches, logs,
#: JAX's own checks and PRNG implementation), accepted silently.
_NO_EFFECT = frozenset({
    "jax_default_matmul_precision", "jax_compilation_cache_dir",
    "jax_persistent_cache_min_compile_time_secs", "jax_persistent_cache_min_entry_size_bytes",
    "jax_enable_compilation_cache", "jax_log_compiles", "jax_explain_cache_misses",
    "jax_traceback_filtering", "jax_default_prng_impl", "jax_threefry_partitionable",
    "jax_enable_checks", "jax_check_tracer_leaks", "jax_cpu_enable_async_dispatch",
    "jax_num_cpu_devices", "jax_default_device", "jax_traceback_in_locations_limit",
    "jax_include_full_tracebacks_in_locations", "jax_random_seed_offset",
    "jax_debug_key_reuse", "jax_legacy_prng_key", "jax_enable_custom_prng",
    "jax_softmax_custom_jvp", "jax_use_shardy_partitioner", "jax_transfer_guard",
})


def _platforms(name, value):
    """JAX's platform settings: "cpu" (or a list holding it, which JAX falls back to)."""
    if value in (None, ""):
        return value
    if not isinstance(value, str):
        raise TypeError(f"config: {name} must be a string such as 'cpu', got {value!r}")
    if "cpu" not in [p.strip() for p in value.split(",")]:
        raise ValueError(f"config: {name}={value!r}: wengert runs on the CPU only (NumPy "
                         "arrays); set 'cpu', or leave it out")
    return value


class Config:
    """JAX's ``jax.config``: ``config.update(name, value)`` and ``config.<name>``.

    Settings with a meaning here:

    * ``jax_enable_x64``: wengert computes in the dtypes of its inputs, float64 and int64
      by default, as JAX does with it set; True is what it is.  False is stored (code
      may read it to choose its own dtypes) with a warning: the defaults stay 64-bit,
      since silently computing in float32 would change results.
    * ``jax_platform_name``, ``jax_platforms``: ``"cpu"``; a list must include it (JAX
      falls back to it); another platform is a ValueError.
    * ``jax_disable_jit``: compiled functions (`wg.jit`, `wg.compile`, made before or
      after) call the Python function itself, so ``print`` shows values.
    * ``jax_debug_nans`` (``jax_debug_infs``): NumPy raises ``FloatingPointError`` where an
      operation makes a nan from numbers (an inf: overflow, division by zero), in the
      thread that sets it (``numpy.seterr``), eager or compiled; and the result of every
      compiled function is checked, since float code made by `compile` computes in Python
      arithmetic, which NumPy does not watch.  Eager functions are not checked for a nan
      that came in with their inputs.

    The flags on compiled functions hold for every thread.  Settings of JAX that change
    no result here (``jax_default_matmul_precision``, caches, logging, JAX's PRNG
    implementation) are accepted and have no effect; another name that starts with
    ``jax_`` is stored with a warning that wengert does not know it; any other name is an
    AttributeError, as in JAX.

    Example:
        >>> import wengert as jax
        >>> jax.config.update("jax_enable_x64", True)
        >>> jax.config.jax_enable_x64, jax.config.jax_platform_name
        (True, 'cpu')
        >>> jax.config.update("jax_platform_name", "gpu")
        Traceback (most recent call last):
        ...
        ValueError: config: jax_platform_name='gpu': wengert runs on the CPU only ...
    """

    def __init__(self):
        object.__setattr__(self, "_values", {
            "jax_enable_x64": True, "jax_platform_name": "cpu", "jax_platforms": "cpu",
            "jax_disable_jit": False, "jax_debug_nans": False, "jax_debug_infs": False})
        object.__setattr__(self, "_saved_errors", None)

    def update(self, name, value):
        """Set one setting (see `Config`)."""
        if not isinstance(name, str):
            raise TypeError(f"config.update: the name must be a string, got {name!r}")
        if name == "jax_enable_x64":
            if not value:
                warnings.warn("jax_enable_x64=False: wengert computes in the dtypes of its "
                              "inputs, float64 and int64 by default; give float32 arrays "
                              "(or dtype=) to compute in float32", stacklevel=2)
            value = bool(value)
        elif name in ("jax_platform_name", "jax_platforms"):
            value = _platforms(name, value)
        elif name in ("jax_disable_jit", "jax_debug_nans", "jax_debug_infs"):
            value = bool(value)
            self._values[name] = value
            self._watch()
            return
        elif name not in _NO_EFFECT and name not in self._values:
            if not name.startswith("jax_"):
                raise AttributeError(f"Unrecognized config option: {name}")
            warnings.warn(f"config: {name} is not a setting wengert knows; stored, with no "
                          "effect", stacklevel=2)
        self._values[name] = value

    def _watch(self):
        """Make the debugging settings act: on compiled functions, and on NumPy."""
        v = self._values
        set_debugging(disable_jit=v["jax_disable_jit"], nans=v["jax_debug_nans"],
                      infs=v["jax_debug_infs"])
        raising = {}
        if v["jax_debug_nans"]:
            raising["invalid"] = "raise"
        if v["jax_debug_infs"]:
            raising.update(over="raise", divide="raise")
        if raising and self._saved_errors is None:
            object.__setattr__(self, "_saved_errors", np.geterr())
        if self._saved_errors is not None:
            np.seterr(**{**self._saved_errors, **raising})
            if not raising:
                object.__setattr__(self, "_saved_errors", None)

    def __getattr__(self, name):
        values = self.__dict__.get("_values", {})
        if name in values:
            return values[name]
        if name in _NO_EFFECT:
            return None
        raise AttributeError(f"Unrecognized config option: {name}")

    def __setattr__(self, name, value):
        raise AttributeError(f"set settings with config.update({name!r}, value)")

    @property
    def x64_enabled(self):
        """Whether ``jax_enable_x64`` is set (JAX's older spelling)."""
        return self._values["jax_enable_x64"]

    @property
    def values(self):
        """The settings made so far, by name (a copy)."""
        return dict(self._values)

    def __repr__(self):
        return f"<wengert config {self._values}>"


config = Config()


@contextlib.contextmanager
def _setting(name, value):
    old = config._values[name]
    config.update(name, value)
    try:
        yield
    finally:
        config.update(name, old)


def enable_x64(new_val=True):
    """JAX's ``jax.enable_x64``: a context manager that sets ``jax_enable_x64`` for the
    block (see `Config`: wengert computes in 64 bits by default either way).

    Example:
        >>> import wengert as jax
        >>> with jax.enable_x64():
        ...     print(jax.config.jax_enable_x64)
        True
    """
    return _setting("jax_enable_x64", new_val)


def disable_jit(disable=True):
    """JAX's ``jax.disable_jit``: in the block, compiled functions (made before it or in
    it) run the Python function itself, with values, so ``print`` and ``breakpoint()``
    see them.  It holds for every thread.

    Example:
        >>> import wengert as jax
        >>> @jax.jit
        ... def f(x):
        ...     print("x is", x)
        ...     return 2 * x
        >>> with jax.disable_jit():
        ...     f(3.0)
        x is 3.0
        6.0
    """
    return _setting("jax_disable_jit", disable)


def debug_nans(new_val=True):
    """JAX's ``jax.debug_nans``: ``jax_debug_nans`` set for the block (see `Config`).

    Example:
        >>> import wengert as jax, wengert.numpy as jnp
        >>> with jax.debug_nans():
        ...     jax.grad(jnp.sqrt)(-1.0)
        Traceback (most recent call last):
        ...
        FloatingPointError: invalid value encountered in sqrt
    """
    return _setting("jax_debug_nans", new_val)


def debug_infs(new_val=True):
    """JAX's ``jax.debug_infs``: ``jax_debug_infs`` set for the block (see `Config`).

    Example:
        >>> import wengert as jax, wengert.numpy as jnp
        >>> with jax.debug_infs():
        ...     jax.jit(lambda x: jnp.log(x))(0.0)
        Traceback (most recent call last):
        ...
        FloatingPointError: divide by zero encountered in log
    """
    return _setting("jax_debug_infs", new_val)


# ---- devices -------------------------------------------------------------------------------
class Device:
    """The one device, the CPU NumPy computes on: what JAX's ``jax.devices()`` lists.

    Example:
        >>> import wengert as jax
        >>> d = jax.devices()[0]
        >>> d, d.platform, d.id
        (CpuDevice(id=0), 'cpu', 0)
    """

    platform = "cpu"
    device_kind = "cpu"
    id = 0
    process_index = 0
    host_id = 0

    def __repr__(self):
        return "CpuDevice(id=0)"

    def __str__(self):
        return "TFRT_CPU_0"


_CPU = Device()


def _backend(backend, who):
    if backend not in (None, "cpu") and backend is not _CPU:
        raise ValueError(f"{who}: backend {backend!r} is not available; wengert runs on "
                         "the CPU")


def devices(backend=None):
    """JAX's ``jax.devices()``: the CPU, the one device.

    Example:
        >>> import wengert as jax
        >>> jax.devices()
        [CpuDevice(id=0)]
    """
    _backend(backend, "devices")
    return [_CPU]


def local_devices(process_index=None, backend=None, host_id=None):
    """JAX's ``jax.local_devices()``: the CPU, the one device of the one process.

    Example:
        >>> import wengert as jax
        >>> jax.local_devices()
        [CpuDevice(id=0)]
    """
    _backend(backend, "local_devices")
    if process_index not in (None, 0) or host_id not in (None, 0):
        raise ValueError("local_devices: there is one process, index 0")
    return [_CPU]


def device_count(backend=None):
    """JAX's ``jax.device_count()``: 1.

    Example:
        >>> import wengert as jax
        >>> jax.device_count()
        1
    """
    _backend(backend, "device_count")
    return 1


def local_device_count(backend=None):
    """JAX's ``jax.local_device_count()``: 1.

    Example:
        >>> import wengert as jax
        >>> jax.local_device_count()
        1
    """
    _backend(backend, "local_device_count")
    return 1


def default_backend():
    """JAX's ``jax.default_backend()``: ``"cpu"``.

    Example:
        >>> import wengert as jax
        >>> jax.default_backend()
        'cpu'
    """
    return "cpu"


def process_index():
    """JAX's ``jax.process_index()``: 0, the one process.

    Example:
        >>> import wengert as jax
        >>> jax.process_index()
        0
    """
    return 0


def process_count():
    """JAX's ``jax.process_count()``: 1.

    Example:
        >>> import wengert as jax
        >>> jax.process_count()
        1
    """
    return 1


def _check_device(device, who, x=None):
    if device is None or device is _CPU or isinstance(device, str) and device == "cpu":
        return
    if not isinstance(device, str):
        from .sharding import check_shardings
        check_shardings(device, x, who, allow_device=True)
        return
    raise TypeError(f"{who}: device must be None, one of jax.devices() (the CPU) or a "
                    f"sharding of it (jax.sharding.NamedSharding, ...), got {device!r:.60}")


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """JAX's ``jax.device_put``: x (a pytree) as arrays on the CPU.  A NumPy array is
    copied (unless ``may_alias=True`` or ``donate=True``), as JAX copies it to the
    device: writing into the original afterwards does not change the result.  Numbers
    become 0-d arrays; traced values pass as they are.  `device` may be None, the CPU, or
    a sharding (`wengert.sharding.NamedSharding`, a `PartitionSpec` with a mesh set, or
    a pytree of them for x's leaves), which is checked and puts x on the one device.

    Example:
        >>> import numpy as np, wengert as jax
        >>> x = np.ones(2)
        >>> y = jax.device_put(x, jax.devices()[0])
        >>> x[0] = 5.0
        >>> y, jax.device_put(1.5)
        (array([1., 1.]), array(1.5))
        >>> mesh = jax.make_mesh((1,), ("data",))
        >>> jax.device_put(x, jax.NamedSharding(mesh, jax.P("data")))
        array([5., 1.])
    """
    _check_device(device, "device_put", x)
    _check_device(src, "device_put", x)
    keep = bool(donate) or may_alias is True

    def put(leaf):
        if type(leaf) is Node:
            return leaf
        if isinstance(leaf, np.ndarray):
            if leaf.dtype.kind not in "biufc":
                raise TypeError(f"device_put: an array of dtype {leaf.dtype} is not data "
                                "an array of numbers can hold")
            return leaf if keep else leaf.copy()
        if isinstance(leaf, (bool, int, float, complex, np.number, np.bool_)):
            return np.asarray(leaf)
        raise TypeError(f"device_put: a {type(leaf).__name__} ({leaf!r:.40}) is not an "
                        "array or a number")
    return tree_map(put, x)


def device_get(x):
    """JAX's ``jax.device_get``: x (a pytree) as NumPy arrays on the host, copies (as
    JAX's are), so writing into them leaves x as it was.  A traced value has no value
    to fetch: a `ConcretizationError`, as in JAX.

    Example:
        >>> import numpy as np, wengert as jax
        >>> params = {"w": np.ones(2), "b": 0.5}
        >>> host = jax.device_get(params)
        >>> host["w"][0] = 7.0
        >>> params["w"], host["b"]
        (array([1., 1.]), 0.5)
    """
    def get(leaf):
        if type(leaf) is Node:
            raise ConcretizationError(
                f"device_get: {leaf.label()} is a traced value, with no value to fetch "
                "while it is traced (as in JAX); return it from the transformation, or "
                "use wg.value(x) for an eager trace's value")
        return leaf.copy() if isinstance(leaf, np.ndarray) else leaf
    return tree_map(get, x)


def block_until_ready(x):
    """JAX's ``jax.block_until_ready``: x itself.  NumPy computes before it returns, so
    there is nothing to wait for.  (NumPy arrays have no ``x.block_until_ready()``
    method: call this function.)

    Example:
        >>> import numpy as np, wengert as jax
        >>> jax.block_until_ready({"loss": np.float64(0.25)})
        {'loss': np.float64(0.25)}
    """
    return x


# ---- types ---------------------------------------------------------------------------------
class Array(abc.ABC):
    """JAX's ``jax.Array``, for ``isinstance`` tests and type hints: what wengert's
    functions return and take, a NumPy array, a NumPy scalar (``jnp.sum`` gives one) or a
    traced value.  Python numbers are not Arrays, as in JAX.  It makes no arrays: use
    ``wengert.numpy.asarray``.

    Example:
        >>> import numpy as np, wengert as jax, wengert.numpy as jnp
        >>> isinstance(np.ones(2), jax.Array), isinstance(jnp.sum(np.ones(2)), jax.Array)
        (True, True)
        >>> jax.grad(lambda x: isinstance(x, jax.Array) * x)(2.0)
        1.0
        >>> isinstance(2.0, jax.Array)
        False
    """


Array.register(np.ndarray)
Array.register(np.number)
Array.register(np.bool_)
Array.register(Node)

#: JAX's ``jax.ShapeDtypeStruct``: wengert's `ShapeDtype`, which takes JAX's arguments
#: (``ShapeDtypeStruct(shape, dtype, weak_type=False, sharding=None)``).
ShapeDtypeStruct = ShapeDtype

#: JAX's dtype of the tangent of an integer or boolean value (a structured dtype of no
#: bytes): ``jax.dtypes.float0``.
float0 = np.dtype([("float0", np.void, 0)])


# ---- transformations under JAX's names -----------------------------------------------------
def custom_gradient(fun):
    """JAX's ``jax.custom_gradient``: `fun` returns ``(value, vjp)``, where ``vjp(g)``
    gives the cotangents of fun's arguments, a tuple with one per argument (one
    cotangent alone is taken for a function of one argument).  Built on `custom_vjp`:
    reverse mode only, and ``fun`` runs again in the reverse sweep to make its vjp.

    Example:
        >>> import wengert as jax, wengert.numpy as jnp
        >>> @jax.custom_gradient
        ... def log1pexp(x):
        ...     e = jnp.exp(x)
        ...     return jnp.log1p(e), lambda g: (g * (1 - 1 / (1 + e)),)
        >>> round(float(log1pexp(0.0)), 6), jax.grad(log1pexp)(0.0)
        (0.693147, 0.5)
    """
    from .custom_rules import custom_vjp
    if not callable(fun):
        raise TypeError(f"custom_gradient expects a function, got {type(fun).__name__}")
    name = getattr(fun, "__name__", "f")

    def pair(args):
        found = fun(*args)
        if not isinstance(found, tuple) or len(found) != 2 or not callable(found[1]):
            raise TypeError(f"custom_gradient {name!r}: the function must return (value, "
                            f"vjp), vjp a function of the cotangent, got {found!r:.60}")
        return found

    @custom_vjp
    @functools.wraps(fun)
    def wrapped(*args):
        return pair(args)[0]

    def fwd(*args):
        value, vjp = pair(args)
        return value, (vjp, len(args))

    def bwd(res, g):
        vjp, n = res
        cts = vjp(g)
        if n == 1 and not isinstance(cts, (tuple, list)):
            cts = (cts,)
        return tuple(cts)
    wrapped.defvjp(fwd, bwd)
    return wrapped


def _example_leaf(x, who):
    """Zeros of the shape and dtype of x, an array, a number or a `ShapeDtype`."""
    if isinstance(x, ShapeDtype):
        return np.zeros(x.shape, x.dtype)
    if type(x) is Node:
        return np.zeros(x.shape, x.dtype)
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, complex,
                                                             np.number, np.ndarray)):
        raise TypeError(f"{who}: a primal must be an array, a number or a ShapeDtypeStruct, "
                        f"got {type(x).__name__}")
    a = np.asarray(x)
    return np.zeros(a.shape, np.result_type(a.dtype, 1.0))


def linear_transpose(fun, *primals, reduce_axes=()):
    """JAX's ``jax.linear_transpose``: the transpose of a linear function, for arguments
    of the shapes and dtypes of `primals` (arrays, numbers or ``ShapeDtypeStruct``).  The
    result maps a cotangent of fun's output to a tuple of cotangents, one per primal.
    It is fun's VJP at zero, which for a linear function is its transpose everywhere; a
    function with a nonzero value at zero is not linear, and is refused.

    Example:
        >>> import numpy as np, wengert as jax
        >>> A = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        >>> t = jax.linear_transpose(lambda x: A @ x, jax.ShapeDtypeStruct((2,), np.float64))
        >>> t(np.array([1.0, 0.0, 1.0]))
        (array([6., 8.]),)
    """
    from .api import vjp
    if not callable(fun):
        raise TypeError(f"linear_transpose expects a function, got {type(fun).__name__}")
    if reduce_axes not in ((), None):
        raise ValueError("linear_transpose: reduce_axes is for named axes, which wengert "
                         "does not have")
    zeros = tuple(unflatten(tree, [_example_leaf(x, "linear_transpose") for x in leaves])
                  for leaves, tree in map(flatten, primals))
    out, pullback = vjp(fun, *zeros)
    for leaf in flatten(out)[0]:
        if np.any(np.asarray(leaf) != 0):
            raise ValueError("linear_transpose: fun is not linear (its value at zero is "
                             "not zero)")
    return pullback


def closure_convert(fun, *example_args):
    """JAX's ``jax.closure_convert``: ``(converted, consts)``, where
    ``converted(*args, *consts)`` is ``fun(*args)`` and `consts` are the traced values fun
    closes over (of an enclosing `grad`, say), made arguments: what a `custom_vjp`
    function needs in order to differentiate with respect to them.  Where fun closes over
    none, `consts` is empty and `converted` calls fun.  Otherwise fun is traced once, at
    the shapes of `example_args`, and `converted` evaluates that graph.

    Example:
        >>> import wengert as jax, wengert.numpy as jnp
        >>> def outer(w):
        ...     f, consts = jax.closure_convert(lambda x: jnp.sin(w * x), 1.0)
        ...     return f(2.0, *consts), len(consts)
        >>> float(outer(0.5)[0]), outer(0.5)[1]
        (0.8414709848078965, 0)
        >>> round(jax.grad(lambda w: outer(w)[0])(0.5), 6)       # 2 cos(1)
        1.080605
    """
    from .api import trace
    if not callable(fun):
        raise TypeError(f"closure_convert expects a function, got {type(fun).__name__}")
    n = len(example_args)
    graph = trace(fun, *example_args, _capture="closure_convert")
    consts = [outer for outer, _ in graph.captured.values()]
    if not consts:
        @functools.wraps(fun)
        def converted(*args):
            return fun(*args[:n]) if len(args) > n else fun(*args)
        return converted, []
    in_tree, out_tree = graph.in_tree, graph.out_tree

    def converted(*args):
        if len(args) != n + len(consts):
            raise TypeError(f"the converted function takes {n} arguments and then its "
                            f"{len(consts)} constants, got {len(args)} values")
        leaves, tree = flatten(tuple(args[:n]))
        if tree != in_tree:
            raise ValueError(f"the converted function's arguments must have the structure "
                             f"{in_tree}, got {tree}")
        return unflatten(out_tree, graph.evaluate(leaves + list(args[n:])))
    converted.__name__ = getattr(fun, "__name__", "converted")
    return converted, consts


def make_jaxpr(fun, static_argnums=(), axis_env=None, return_shape=False,
               abstracted_axes=None):
    """JAX's ``jax.make_jaxpr``: a function that traces `fun` at its arguments' shapes and
    dtypes and returns wengert's graph of it (`wg.trace`), which prints as readable SSA
    text, as a jaxpr does; with ``return_shape=True`` also the output's shapes and dtypes
    (`ShapeDtype` leaves).  `static_argnums` are passed to fun as they are.

    Example:
        >>> import wengert as jax, wengert.numpy as jnp
        >>> print(jax.make_jaxpr(lambda x: jnp.sin(x) * 2.0)(1.0))
        graph(x: f64[]):
          %1: f64[] = sin(x)
          %3: f64[] = mul(%1, 2.0)
          return %3
    """
    from .api import _check_fun, trace
    _check_fun(fun, "make_jaxpr")
    if axis_env is not None or abstracted_axes is not None:
        raise ValueError("make_jaxpr: axis_env and abstracted_axes are for named and "
                         "dynamic axes, which wengert does not have")
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(fun)
    def traced(*args, **kwargs):
        target = fun
        if static or kwargs:
            n = len(args)
            fixed = {i % n: args[i] for i in static}

            def bound(*rest):
                it = iter(rest)
                return fun(*[fixed[i] if i in fixed else next(it) for i in range(n)],
                           **kwargs)
            target = bound
            args = [a for i, a in enumerate(args) if i not in fixed]
        graph = trace(target, *args)
        if not return_shape:
            return graph
        shapes = unflatten(graph.out_tree, [
            ShapeDtype(o.shape, o.dtype, weak=is_weak(o)) for o in graph.outputs])
        return graph, shapes
    return traced


def pmap(fun, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(),
         devices=None, backend=None, axis_size=None, donate_argnums=(), **hints):
    """JAX's ``jax.pmap`` on one device: `fun` mapped over the leading axis of its
    arguments, which is `vmap` with JAX's pmap arguments, on any number of examples
    (JAX needs one device per example).  ``axis_name`` names the mapped axis for the
    collectives in `fun` (``lax.psum``, ``lax.pmean``, ``lax.all_gather``, ...), as in
    JAX: ``lax.pmean(grads, "batch")`` averages the examples' gradients.
    ``static_broadcasted_argnums`` are passed whole to every example.  It runs as `vmap`
    does, eagerly; wrap it in `jit` to compile it.

    Example:
        >>> import numpy as np, wengert as jax
        >>> jax.pmap(lambda x, s: x * s, static_broadcasted_argnums=1)(np.arange(3.0), 2.0)
        array([0., 2., 4.])
        >>> jax.pmap(lambda x: x - jax.lax.pmean(x, "batch"), axis_name="batch")(
        ...     np.arange(3.0))
        array([-1.,  0.,  1.])
    """
    from .api import _check_fun
    from .vectorize import vmap
    _check_fun(fun, "pmap")
    _backend(backend, "pmap")
    if devices is not None and any(d is not _CPU for d in devices):
        raise ValueError("pmap: the devices must be jax.devices(), the CPU")
    static = (static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int) \
        else tuple(static_broadcasted_argnums)

    @functools.wraps(fun)
    def mapped(*args, **kwargs):
        if not static:
            return vmap(fun, in_axes, out_axes, axis_size, axis_name)(*args, **kwargs)
        n = len(args)
        fixed = {i % n: args[i] for i in static}
        axes = in_axes
        if isinstance(in_axes, (tuple, list)) and len(in_axes) == n:
            axes = tuple(a for i, a in enumerate(in_axes) if i not in fixed)

        def f(*rest, **kw):
            it = iter(rest)
            return fun(*[fixed[i] if i in fixed else next(it) for i in range(n)], **kw)
        return vmap(f, axes, out_axes, axis_size, axis_name)(
            *[a for i, a in enumerate(args) if i not in fixed], **kwargs)
    return mapped


def named_call(fun, *, name=None):
    """JAX's ``jax.named_call``: fun itself (JAX names its operations in profiles;
    wengert's graph keeps no names of calls).

    Example:
        >>> import wengert as jax
        >>> jax.named_call(abs, name="size")(-2)
        2
    """
    if not callable(fun):
        raise TypeError(f"named_call expects a function, got {type(fun).__name__}")
    return fun


@contextlib.contextmanager
def named_scope(name):
    """JAX's ``jax.named_scope``: a context manager that names the operations in it in
    JAX's profiles; here it has no effect.

    Example:
        >>> import wengert as jax
        >>> with jax.named_scope("layer1"):
        ...     y = 2.0 * 3.0
        >>> y
        6.0
    """
    if not isinstance(name, str):
        raise TypeError(f"named_scope: the name must be a string, got {name!r}")
    yield


@contextlib.contextmanager
def ensure_compile_time_eval():
    """JAX's ``jax.ensure_compile_time_eval``: a context manager under which operations
    on known values compute at trace time.  wengert always does that (operations on
    NumPy arrays and constants are computed, not traced), so it has no effect.

    Example:
        >>> import numpy as np, wengert as jax, wengert.numpy as jnp
        >>> @jax.jit
        ... def f(x):
        ...     with jax.ensure_compile_time_eval():
        ...         table = jnp.cumsum(np.arange(4.0))       # a constant of the trace
        ...     return x * table
        >>> f(2.0)
        array([ 0.,  2.,  6., 12.])
    """
    yield


# ---- pure_callback -------------------------------------------------------------------------
_VMAP_METHODS = (None, "sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                 "legacy_vectorized")


class _Callback(Primitive):
    """The primitive of one pure_callback call: Python code wengert does not look into,
    run on values, with the declared result shapes, and no derivative."""

    def __init__(self, callback, in_tree, result_tree, result_avals, vmap_method):
        name = getattr(callback, "__name__", "callback")
        super().__init__(f"pure_callback[{name}]", self._impl, cost="call",
                         abstract_eval=lambda args, params: self.layout.aval(),
                         complex=True)
        self.callback, self.in_tree = callback, in_tree
        self.result_tree, self.result_avals = result_tree, result_avals
        self.layout = Layout(result_avals)
        self.vmap_method = vmap_method
        self.jvp = self._no_derivative
        self.vjp = self._no_derivative
        self.batch = self._batch_rule

    def _impl(self, *leaves):
        args, kwargs = unflatten(self.in_tree, list(leaves))
        outs, tree = flatten(self.callback(*args, **kwargs))
        return self.layout.pack(_checked_results(outs, tree, self.result_tree,
                                                 self.result_avals))

    def _no_derivative(self, *args, **params):
        raise TypeError(f"{self.name}: a pure_callback has no derivative (as in JAX): wrap "
                        "the function that calls it in wg.custom_jvp or wg.custom_vjp with "
                        "a rule of its own")

    def _batch_rule(self, args, mapped, node):
        method = self.vmap_method
        if method is None:
            raise NotImplementedError(
                f"{self.name} under vmap: pass pure_callback vmap_method='sequential' (one "
                "call per example), 'expand_dims' or 'broadcast_all' (one call on the "
                "batch), as JAX asks")
        if method in ("sequential", "sequential_unrolled"):
            return None                         # (vmap then calls it once per example)
        size = next(np.shape(a)[0] for a, m in zip(args, mapped) if m)
        from . import numpy as wnp

        def batched_leaf(a, m):
            if m or method == "legacy_vectorized":
                return a
            a = wnp.expand_dims(a, 0)
            return wnp.broadcast_to(a, (size,) + np.shape(a)[1:]) \
                if method == "broadcast_all" else a
        leaves = [batched_leaf(a, m) for a, m in zip(args, mapped)]
        batched = _Callback(self.callback, self.in_tree, self.result_tree,
                            [((size,) + tuple(s), d) for s, d in self.result_avals],
                            method)
        return self.layout.pack_batch(batched.layout.unpack(batched(*leaves)), size)


def _checked_results(outs, tree, result_tree, result_avals):
    """The callback's result leaves, as arrays of the declared shapes and dtypes."""
    if tree != result_tree:
        raise TypeError(f"pure_callback: the callback returned {tree}, not the declared "
                        f"structure {result_tree}")
    checked = []
    for k, (o, (shape, dtype)) in enumerate(zip(outs, result_avals)):
        a = np.asarray(o)
        if a.shape != tuple(shape):
            raise ValueError(f"pure_callback: result {k} has shape {a.shape}, declared "
                             f"{tuple(shape)}")
        if a.dtype != dtype:
            if not np.can_cast(a.dtype, dtype, "same_kind"):
                raise TypeError(f"pure_callback: result {k} has dtype {a.dtype}, declared "
                                f"{dtype}")
            a = a.astype(dtype)
        checked.append(a if a.shape else a[()])
    return checked


def _declared(result_shape_dtypes):
    leaves, tree = flatten(result_shape_dtypes)
    avals = []
    for x in leaves:
        shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
        if shape is None or dtype is None:
            raise TypeError(f"pure_callback: result_shape_dtypes must be a pytree of "
                            f"ShapeDtypeStruct (or arrays), got a {type(x).__name__}")
        avals.append((tuple(shape), np.dtype(dtype)))
    if not avals:
        raise TypeError("pure_callback: the callback must return at least one array")
    return tree, avals


def typeof(x):
    """JAX's ``jax.typeof``: the abstract value of `x` (an array, a number or a traced
    value), as a `ShapeDtypeStruct` (wengert's `ShapeDtype`): its shape, its dtype, and
    whether it is weakly typed (a Python number, whose dtype gives way to the other
    operand's).

    Example:
        >>> import numpy as np, wengert as jax
        >>> jax.typeof(np.ones((2, 3), np.float32)), jax.typeof(2.0)
        (ShapeDtype(f32[2,3]), ShapeDtype(f64[], weak))
        >>> f = jax.jit(lambda x: print("traced as", jax.typeof(x)) or 2.0 * x)
        >>> f(np.ones(3))
        traced as ShapeDtype(f64[3])
        array([2., 2., 2.])
    """
    if type(x) is Node:
        return ShapeDtype(x.shape, x.dtype, weak=is_weak(x))
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        return ShapeDtype((), np.asarray(x).dtype, weak=True)
    if isinstance(x, (np.ndarray, np.generic)):
        return ShapeDtype(np.shape(x), x.dtype)
    raise TypeError(f"typeof: expected an array, a number or a traced value, got "
                    f"{type(x).__name__} (for a pytree: wengert.tree.tree_map(typeof, x))")


def pure_callback(callback, result_shape_dtypes, *args, sharding=None, vmap_method=None,
                  **kwargs):
    """JAX's ``jax.pure_callback``: call Python code (NumPy, SciPy, anything) from
    wengert code, as if it were an operation: ``callback(*args, **kwargs)`` must return
    arrays of the shapes and dtypes ``result_shape_dtypes`` declares (a pytree of
    ``ShapeDtypeStruct``).  On plain values it is called at once.  On traced values it is
    one node of the graph, called with values when the graph is evaluated: under `jit`
    on every call of the compiled function, under `vmap` as `vmap_method` says
    (``"sequential"``: once per example; ``"expand_dims"`` / ``"broadcast_all"``: once,
    with the batch as a leading axis, unbatched arguments given an axis of 1 / broadcast;
    None, the default, refuses vmap, as in JAX).  As in JAX it has no derivative: a
    derivative through it is a TypeError (declare one with `custom_jvp`).

    Example:
        >>> import numpy as np, wengert as jax
        >>> def host_sort(x):
        ...     return np.sort(x)                          # any NumPy code
        >>> f = jax.jit(lambda x: jax.pure_callback(
        ...     host_sort, jax.ShapeDtypeStruct(x.shape, x.dtype), x * 2.0))
        >>> f(np.array([3.0, 1.0, 2.0]))
        array([2., 4., 6.])
    """
    if not callable(callback):
        raise TypeError(f"pure_callback expects a function, got {type(callback).__name__}")
    if vmap_method not in _VMAP_METHODS:
        raise ValueError(f"pure_callback: vmap_method must be one of {_VMAP_METHODS[1:]} "
                         f"or None, got {vmap_method!r}")
    if sharding is not None:
        raise ValueError("pure_callback: sharding is not available; wengert runs on the CPU")
    result_tree, result_avals = _declared(result_shape_dtypes)
    leaves, in_tree = flatten((args, kwargs))
    if not any(type(x) is Node for x in leaves):
        outs, tree = flatten(callback(*args, **kwargs))
        return unflatten(result_tree, _checked_results(outs, tree, result_tree,
                                                       result_avals))
    prim = _Callback(callback, in_tree, result_tree, result_avals, vmap_method)
    return unflatten(result_tree, prim.layout.unpack(prim(*leaves)))
