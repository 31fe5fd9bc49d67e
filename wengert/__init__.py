"""wengert: automatic differentiation on one computational graph (the Wengert list).

    >>> import wengert as wg
    >>> f = lambda x1, x2: x1 * x2 + wg.math.sin(x1)
    >>> wg.grad(f, argnums=(0, 1))(2.0, 3.0)
    (2.5838531634528574, 2.0)

See README.md and docs/ for the guides.
"""
# Load order matters: the graph module loads the primitive registry; the primitives come
# next; the simplification rules attach to them; the transformations use all of it.
from .graph.graph import Graph, ShapeDtype
from .graph.active import options
from .graph.node import Node
from .primitives import scalar as _scalar, shape as _shape, pack as _pack  # noqa: F401
from .primitives import array as _array, linalg as _linalg, nn as _nn  # noqa: F401
from .primitives import elements as _elements  # noqa: F401  (C's gathers, element by element)
from .primitives import special as _special  # noqa: F401  (SciPy imported when first used)
from .primitives import scipy_linalg as _scipy_linalg  # noqa: F401  (likewise)
from .primitives import fft as _fft  # noqa: F401
from .primitives import sparse as _sparse  # noqa: F401  (scipy.sparse matrices: SciPy's own)
from .primitives import random as _random  # noqa: F401  (draws from keys)
from .graph import simplify as _simplify  # noqa: F401
from .primitives.registry import REGISTRY, Primitive, primitive
from .primitives.scalar import select
from .dual import Dual
from . import math
from . import numpy  # noqa: F401  (also gives traced values their array methods)
from . import nn  # noqa: F401
from .api import (grad, value_and_grad, vjp, jvp, jacfwd, jacrev, hessian, hvp, trace, value,
                  eval_shape)
from .jacobians import (jacobian, sparse_jacobian, sparse_hessian, jacobian_graph,
                        jacobian_costs, format_costs)
from .errors import ConcretizationError
from .staged import compile, jit, linearize  # noqa: A001  (wg.compile, as jax.jit: shadows the builtin here only)
from .codegen.draw import draw
from .taylor_mode import taylor, derivatives
from .checkpointing import checkpoint, checkpointed_loop
from .loops import scan, fori_loop
from .vectorize import vmap
from .implicit import custom_root
from .custom_rules import custom_jvp, custom_vjp
from . import tree, tree_util  # noqa: F401  (JAX's jax.tree and jax.tree_util)
from . import lax  # noqa: F401  (JAX's jax.lax)
from .lax import stop_gradient     # (pytrees too, as JAX's)
from . import random  # noqa: F401  (JAX's jax.random)
from .checkpointing import remat, checkpoint_policies
from .jax_compat import (config, enable_x64, disable_jit, debug_nans, debug_infs, devices,
                         local_devices, device_count, local_device_count, default_backend,
                         process_index, process_count, device_put, device_get,
                         block_until_ready, Array, ShapeDtypeStruct, float0, custom_gradient,
                         linear_transpose, closure_convert, make_jaxpr, pmap, pure_callback,
                         named_call, named_scope, ensure_compile_time_eval, typeof)
from . import dtypes, debug  # noqa: F401  (JAX's jax.dtypes and jax.debug)
from . import ad_checkpoint, test_util  # noqa: F401  (JAX's jax.ad_checkpoint, test_util)
from . import ops, image  # noqa: F401  (JAX's jax.ops and jax.image)
from . import experimental, flatten_util  # noqa: F401  (jax.experimental.ode / .jet)
from . import example_libraries  # noqa: F401  (JAX's jax.example_libraries: stax, optimizers)
from . import sharding, custom_batching  # noqa: F401  (JAX's jax.sharding, jax.custom_batching)
from .sharding import (shard_map, make_mesh, P, NamedSharding, set_mesh, reshard,
                       make_array_from_callback, make_array_from_single_device_arrays,
                       make_array_from_process_local_data)
from .jax_compat import Device

__version__ = "0.1.0"

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "jacfwd", "jacrev", "hessian", "hvp",
           "trace", "value", "select", "stop_gradient", "math", "numpy", "nn", "primitive", "Primitive", "REGISTRY", "Graph",
           "Node", "ShapeDtype", "options", "ConcretizationError", "compile", "draw",
           "jacobian", "sparse_jacobian", "sparse_hessian", "jacobian_graph", "jacobian_costs",
           "format_costs", "Dual", "taylor", "derivatives", "checkpoint", "checkpointed_loop",
           "scan", "fori_loop", "vmap",
           "custom_root", "linearize", "jit", "eval_shape", "custom_jvp", "custom_vjp",
           # JAX's top-level names (wengert.jax_compat)
           "remat", "checkpoint_policies", "enable_x64", "disable_jit", "debug_nans",
           "debug_infs", "devices", "local_devices", "device_count", "local_device_count",
           "default_backend", "process_index", "process_count", "device_put", "device_get",
           "block_until_ready", "Array", "ShapeDtypeStruct", "custom_gradient",
           "linear_transpose", "closure_convert", "make_jaxpr", "pmap", "pure_callback",
           "named_call", "named_scope", "ensure_compile_time_eval", "dtypes", "debug",
           "ad_checkpoint", "test_util", "ops", "image", "typeof", "experimental",
           "flatten_util", "example_libraries",
           # JAX's sharding on the one device, and custom batching (wengert.sharding,
           # wengert.custom_batching)
           "sharding", "custom_batching", "shard_map", "make_mesh", "P", "NamedSharding",
           "set_mesh", "reshard", "make_array_from_callback",
           "make_array_from_single_device_arrays", "make_array_from_process_local_data",
           "Device"]
