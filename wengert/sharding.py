"""JAX's sharding API (``jax.sharding``, ``jax.shard_map``, ``jax.make_mesh``, ...) on
wengert's one device.

A program written for several devices lays its arrays out over a *mesh* of devices with
named axes (``jax.make_mesh((n,), ("data",))``), says how each array is split over those
axes (a `PartitionSpec`, ``P("data")``: axis 0 split over the mesh axis "data"), and runs
a function on each device's shard with `shard_map`, whose collectives (``lax.psum(x,
"data")``) combine the shards.  On one device every mesh axis has size 1: a spec splits
nothing, each "shard" is the whole array, and a collective over an axis runs over one
shard.  So such a program, run on a mesh of ``jax.device_count()`` devices, computes here
what JAX computes on one CPU, with its code unchanged:

* `Mesh`, `AbstractMesh`, `AxisType`, `make_mesh` (axes whose sizes multiply to 1; a
  larger mesh is a ValueError that says how to emulate more devices: `wg.pmap` or
  `wg.vmap` with an ``axis_name``, over a leading axis of as many shards);
* `PartitionSpec` (`P`), `NamedSharding`, `SingleDeviceSharding`, `Sharding`, checked
  as JAX checks them (axis names of the mesh, each named once, specs no longer than
  the array's rank) and meaning "the one device";
* `set_mesh` (``use_mesh``), `get_mesh`, `get_abstract_mesh`, `use_abstract_mesh`:
  the mesh in context;
* `shard_map`: f on the whole arrays, each of the mesh's axis names bound for the
  collectives as an axis of size 1 (a `wg.vmap` of one example per axis), so
  ``psum`` is the identity, ``axis_index`` is 0, ``all_gather`` adds an axis of 1, and
  derivatives, `jit` and `vmap` go through it;
* `with_sharding_constraint`, `reshard`, `auto_axes`, `explicit_axes`, and
  ``device_put(x, sharding)``, `make_array_from_callback`, ... : the value itself.

wengert's arrays are NumPy's, with no sharding attached: a spec is checked against the
mesh and the array's rank, never against the array's own layout (JAX with `Explicit`
axes also asks that an argument already be laid out as its spec says; here that holds
for every array).

Example:
    >>> import numpy as np, wengert as jax
    >>> from wengert.sharding import PartitionSpec as P
    >>> mesh = jax.make_mesh((jax.device_count(),), ("data",))
    >>> def total(x):                           # each device's shard, then their sum
    ...     return jax.lax.psum(x.sum(), "data")
    >>> jax.shard_map(total, mesh=mesh, in_specs=P("data"), out_specs=P())(np.arange(4.0))
    6.0
"""
from __future__ import annotations

import enum
import functools
import math
import warnings
from collections import OrderedDict

import numpy as np

from .graph.graph import ShapeDtype
from .graph.node import Node
from .jax_compat import Device, _CPU
from .primitives.registry import shape_of
from .tree import flatten, tree_map, unflatten

__all__ = ["AxisType", "PartitionSpec", "P", "Mesh", "AbstractMesh", "Sharding",
           "NamedSharding", "SingleDeviceSharding", "make_single_device_sharding",
           "make_mesh", "set_mesh", "use_mesh", "get_mesh", "get_abstract_mesh",
           "use_abstract_mesh", "shard_map", "with_sharding_constraint", "reshard",
           "check_shardings", "check_sharding_leaves",
           "auto_axes", "explicit_axes", "make_array_from_callback",
           "make_array_from_single_device_arrays", "make_array_from_process_local_data"]


# ---- axis types and partition specs --------------------------------------------------------
class AxisType(enum.Enum):
    """JAX's mesh axis types: how the compiler treats an axis (``Auto``: it chooses the
    layouts; ``Explicit``: arrays carry their layouts in their types; ``Manual``: inside
    `shard_map`).  On one device all three compute the same; `shard_map` with in_specs
    left out needs ``Explicit`` axes, as in JAX.

    Example:
        >>> AxisType.Explicit, AxisType.Auto
        (Explicit, Auto)
    """
    Auto = "Auto"
    Explicit = "Explicit"
    Manual = "Manual"

    def __repr__(self):
        return self.name


class _Unconstrained:
    """`PartitionSpec.UNCONSTRAINED`: a dimension whose layout the compiler chooses."""

    def __repr__(self):
        return "UNCONSTRAINED"

    def __reduce__(self):
        return (_unconstrained, ())


def _unconstrained():
    return UNCONSTRAINED


UNCONSTRAINED = _Unconstrained()


def _axis_name(name, who):
    if name is None or isinstance(name, (tuple, list, set, frozenset)):
        raise TypeError(f"{who}: {name!r} is not a mesh axis name (a string)")
    try:
        hash(name)
    except TypeError:
        raise TypeError(f"{who}: a mesh axis name must be hashable (a string), got a "
                        f"{type(name).__name__}") from None
    return name


class PartitionSpec:
    """How an array is split over a mesh, as JAX's ``jax.sharding.PartitionSpec`` (``P``):
    one entry per leading dimension of the array, each None (not split), a mesh axis
    name (split over that axis), or a tuple of names (split over several); dimensions
    past the last entry are not split.  ``P()`` is replicated.  On one device nothing is
    split, so a spec only says which mesh axes an array varies along (`shard_map`).

    Example:
        >>> P("data", None), P(("x", "y")), len(P("data", None)), P("x") == P("x")
        (P('data', None), P(('x', 'y'),), 2, True)
    """

    UNCONSTRAINED = UNCONSTRAINED
    __slots__ = ("_partitions", "unreduced", "reduced")

    def __init__(self, *partitions, unreduced=frozenset(), reduced=frozenset()):
        parts = []
        for p in partitions:
            if isinstance(p, list):
                p = tuple(p)
            if isinstance(p, tuple):
                p = tuple(_axis_name(n, "PartitionSpec") for n in p)
            elif p is not None and p is not UNCONSTRAINED:
                p = _axis_name(p, "PartitionSpec")
            parts.append(p)
        self._partitions = tuple(parts)
        self.unreduced = frozenset(unreduced)
        self.reduced = frozenset(reduced)

    def __len__(self):
        return len(self._partitions)

    def __getitem__(self, k):
        return self._partitions[k]

    def __iter__(self):
        return iter(self._partitions)

    def __eq__(self, other):
        return (isinstance(other, PartitionSpec) and other._partitions == self._partitions
                and other.unreduced == self.unreduced and other.reduced == self.reduced)

    def __hash__(self):
        return hash((PartitionSpec, self._partitions, self.unreduced, self.reduced))

    def __repr__(self):
        inner = ", ".join(repr(p) for p in self._partitions)
        if len(self._partitions) == 1:
            inner += ","
        for what in ("unreduced", "reduced"):
            names = getattr(self, what)
            if names:
                inner += (", " if inner else "") + f"{what}={set(names)!r}"
        return f"P({inner})"

    def index(self, value):
        """The position of `value` among the entries, as a tuple's ``index``."""
        return self._partitions.index(value)

    def count(self, value):
        """How many entries equal `value`, as a tuple's ``count``."""
        return self._partitions.count(value)

    def _names(self):
        """The mesh axis names the spec mentions, in order (with repeats)."""
        out = []
        for p in self._partitions:
            if isinstance(p, tuple):
                out += list(p)
            elif p is not None and p is not UNCONSTRAINED:
                out.append(p)
        return out


P = PartitionSpec


# ---- meshes --------------------------------------------------------------------------------
def _types(axis_types, n, default, who):
    if axis_types is None:
        return (default,) * n
    if isinstance(axis_types, AxisType):
        axis_types = (axis_types,) * n
    types = tuple(axis_types)
    if len(types) != n or not all(isinstance(t, AxisType) for t in types):
        raise ValueError(f"{who}: axis_types must be {n} AxisType values (one per axis), got "
                         f"{axis_types!r}")
    return types


def _names(axis_names, who):
    names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    for n in names:
        _axis_name(n, who)
    if len(set(names)) != len(names):
        raise ValueError(f"{who}: the axis names {names} name an axis twice")
    return names


def _tuple_text(items):
    inner = ", ".join(items)
    return f"({inner},)" if len(items) == 1 else f"({inner})"


class _MeshBase:
    """What a mesh and an abstract mesh share: named axes with sizes and types."""

    axis_names: tuple
    axis_sizes: tuple
    axis_types: tuple

    @property
    def shape(self):
        """The axes' sizes by name (an OrderedDict, as JAX's)."""
        return OrderedDict(zip(self.axis_names, self.axis_sizes))

    @property
    def shape_tuple(self):
        return tuple(zip(self.axis_names, self.axis_sizes))

    @property
    def size(self):
        """The number of devices: the product of the axes' sizes."""
        return math.prod(self.axis_sizes)

    @property
    def empty(self):
        return not self.axis_names

    @property
    def explicit_axes(self):
        return tuple(n for n, t in zip(self.axis_names, self.axis_types)
                     if t is AxisType.Explicit)

    @property
    def auto_axes(self):
        return tuple(n for n, t in zip(self.axis_names, self.axis_types)
                     if t is AxisType.Auto)

    @property
    def manual_axes(self):
        return tuple(n for n, t in zip(self.axis_names, self.axis_types)
                     if t is AxisType.Manual)

    def _key(self):
        return (self.axis_names, self.axis_sizes, self.axis_types)

    def _axes_text(self):
        return ", ".join(f"{n!r}: {s}" for n, s in zip(self.axis_names, self.axis_sizes))

    def _types_text(self):
        return _tuple_text([t.name for t in self.axis_types])


class Mesh(_MeshBase):
    """A mesh of devices with named axes, as JAX's ``jax.sharding.Mesh(devices,
    axis_names, axis_types=None)``: `devices` an array of devices whose shape is the
    mesh's (one axis per name).  wengert has one device, the CPU, so a mesh holds it
    once and each of its axes has size 1 (``Mesh(np.array(jax.devices()), ("data",))``);
    see `make_mesh`.  Axis types default to `AxisType.Auto`, as in JAX.  ``with mesh:``
    sets the mesh in context, as JAX's deprecated form does (use `set_mesh`).

    Example:
        >>> import numpy as np, wengert as jax
        >>> mesh = Mesh(np.array(jax.devices()), ("data",))
        >>> mesh, mesh.shape["data"], mesh.size
        (Mesh(axis_sizes=(1,), axis_names=('data',), axis_types=(Auto,)), 1, 1)
    """

    def __init__(self, devices, axis_names, axis_types=None):
        names = _names(axis_names, "Mesh")
        arr = devices if isinstance(devices, np.ndarray) else np.array(devices, dtype=object)
        if isinstance(devices, np.ndarray) and devices.dtype != object:
            raise TypeError(f"Mesh: devices must be an array of devices (jax.devices()), "
                            f"got an array of {devices.dtype}")
        if arr.ndim != len(names):
            raise ValueError(f"Mesh requires the ndim of its first argument (`devices`) to "
                             f"equal the length of its second argument (`axis_names`), but "
                             f"got devices.ndim == {arr.ndim} and len(axis_names) == "
                             f"{len(names)}.")
        for d in arr.flat:
            if not isinstance(d, Device):
                raise TypeError(f"Mesh: the devices must be jax.devices()'s (wengert's one "
                                f"device, the CPU), got {d!r:.60}")
        if arr.size != 1:
            raise ValueError(_too_many("Mesh", arr.shape, names))
        self.devices = arr
        self.axis_names = names
        self.axis_sizes = tuple(int(s) for s in arr.shape)
        self.axis_types = _types(axis_types, len(names), AxisType.Auto, "Mesh")

    @classmethod
    def _empty(cls):
        mesh = cls.__new__(cls)
        mesh.devices = np.empty((0,), dtype=object)
        mesh.axis_names, mesh.axis_sizes, mesh.axis_types = (), (), ()
        return mesh

    @property
    def device_ids(self):
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

    @property
    def local_devices(self):
        return list(self.devices.flat)

    @property
    def local_mesh(self):
        return self

    @property
    def is_multi_process(self):
        return False

    @property
    def abstract_mesh(self):
        """The mesh's axes without its devices (`AbstractMesh`)."""
        return AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types)

    def __eq__(self, other):
        return isinstance(other, Mesh) and other._key() == self._key()

    def __hash__(self):
        return hash((Mesh,) + self._key())

    def __repr__(self):
        return (f"Mesh(axis_sizes={self.axis_sizes!r}, axis_names={self.axis_names!r}"
                + (f", axis_types={self._types_text()})" if self.axis_names else ")"))

    def __str__(self):
        return f"Mesh({self._axes_text()}, axis_types={self._types_text()})"

    def __enter__(self):
        warnings.warn("`with mesh:` is deprecated in JAX; use `with jax.set_mesh(mesh):`",
                      DeprecationWarning, stacklevel=2)
        self._entered = set_mesh(self)
        return self

    def __exit__(self, *exc):
        self.__dict__.pop("_entered").__exit__(*exc)
        return False


class AbstractMesh(_MeshBase):
    """A mesh's axes (sizes, names, types) without devices, as JAX's
    ``jax.sharding.AbstractMesh(axis_sizes, axis_names, axis_types=None)``: what
    `get_abstract_mesh` returns, and a `NamedSharding` may be built on.  `shard_map`
    runs on one with axes of size 1 only.

    Example:
        >>> dict(AbstractMesh((1, 1), ("data", "model")).shape)
        {'data': 1, 'model': 1}
    """

    def __init__(self, axis_sizes, axis_names, axis_types=None):
        names = _names(axis_names, "AbstractMesh")
        sizes = tuple(axis_sizes)
        if len(sizes) != len(names) or not all(
                isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s > 0
                for s in sizes):
            raise ValueError(f"AbstractMesh: axis_sizes must be {len(names)} positive ints "
                             f"(one per name of {names}), got {axis_sizes!r}")
        self.axis_sizes = tuple(int(s) for s in sizes)
        self.axis_names = names
        self.axis_types = _types(axis_types, len(names), AxisType.Auto, "AbstractMesh")

    @property
    def abstract_mesh(self):
        return self

    def __eq__(self, other):
        return isinstance(other, AbstractMesh) and other._key() == self._key()

    def __hash__(self):
        return hash((AbstractMesh,) + self._key())

    def __repr__(self):
        if not self.axis_names:
            return "AbstractMesh((), axis_types=())"
        return f"AbstractMesh({self._axes_text()}, axis_types={self._types_text()})"


def _too_many(who, shape, names):
    n = math.prod(shape)
    name = names[0] if names else "data"
    return (f"{who}: a mesh of shape {tuple(shape)} needs {n} devices; wengert runs on one "
            f"(jax.devices() is the CPU), so every axis of a mesh has size 1: "
            f"jax.make_mesh((jax.device_count(),), ({name!r},)) runs a program written "
            f"for any number of devices as on one.  To compute as {n} devices would, with "
            f"each shard's own values, map f over a leading axis of {n} shards with "
            f"wg.pmap(f, axis_name={name!r}) (or wg.vmap(f, axis_name={name!r})): the "
            f"collectives over {name!r} then run across the shards (docs/vmap.md)")


def make_mesh(axis_shapes, axis_names, axis_types=None, *, devices=None):
    """A mesh of the devices with these axis sizes and names, as ``jax.make_mesh``: on
    wengert's one device the sizes must multiply to 1, ``make_mesh((jax.device_count(),),
    ("data",))`` being the usual call.  A larger mesh is a ValueError that says how to
    emulate more devices (`wg.pmap` with an ``axis_name``).  Axis types default to
    `AxisType.Explicit`, as in JAX 0.10.

    Example:
        >>> import wengert as jax
        >>> jax.make_mesh((1, 1), ("data", "model"))
        Mesh(axis_sizes=(1, 1), axis_names=('data', 'model'), axis_types=(Explicit, Explicit))
        >>> jax.make_mesh((4,), ("data",))
        Traceback (most recent call last):
        ...
        ValueError: make_mesh: a mesh of shape (4,) needs 4 devices; wengert runs on one ...
    """
    names = _names(axis_names, "make_mesh")
    try:
        shape = tuple(int(s) for s in axis_shapes)
    except TypeError:
        raise TypeError(f"make_mesh: axis_shapes must be a sequence of ints, got "
                        f"{axis_shapes!r}") from None
    if any(isinstance(s, bool) or s < 1 for s in axis_shapes):
        raise ValueError(f"make_mesh: axis_shapes must be positive ints, got {axis_shapes!r}")
    if len(shape) != len(names):
        raise ValueError(f"make_mesh: {len(shape)} axis sizes {shape} for {len(names)} axis "
                         f"names {names}: give one size per name")
    if devices is not None:
        devices = list(devices)
        if not devices or any(not isinstance(d, Device) for d in devices):
            raise ValueError("make_mesh: devices must be jax.devices() (the CPU)")
    if math.prod(shape) != 1:
        raise ValueError(_too_many("make_mesh", shape, names))
    types = _types(axis_types, len(names), AxisType.Explicit, "make_mesh")
    return Mesh(np.array([_CPU], dtype=object).reshape(shape), names, types)


# ---- the mesh in context -------------------------------------------------------------------
_context = {"mesh": None, "abstract": None}


def _check_mesh(mesh, who, abstract_too=False):
    kinds = (Mesh, AbstractMesh) if abstract_too else (Mesh,)
    if not isinstance(mesh, kinds):
        raise TypeError(f"{who}: expected a {' or '.join(k.__name__ for k in kinds)} "
                        f"(jax.make_mesh(...)), got {type(mesh).__name__}")


class set_mesh:
    """Set the mesh in context, as ``jax.set_mesh(mesh)``: at once, for good (a global
    setter), or for the block of a ``with`` statement.  `shard_map` without ``mesh=``,
    and `PartitionSpec` shardings, read it.  ``use_mesh`` is the same, JAX's older name.

    Example:
        >>> import wengert as jax
        >>> with jax.set_mesh(jax.make_mesh((1,), ("data",))):
        ...     print(get_abstract_mesh())
        AbstractMesh('data': 1, axis_types=(Explicit,))
        >>> get_abstract_mesh().empty
        True
    """

    def __init__(self, mesh):
        if mesh is not None:
            _check_mesh(mesh, "set_mesh")
        self._previous = _context["mesh"]
        _context["mesh"] = None if mesh is None or mesh.empty else mesh

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _context["mesh"] = self._previous
        return False


use_mesh = set_mesh


class use_abstract_mesh:
    """Set the abstract mesh in context for a ``with`` block, as JAX's
    ``jax.sharding.use_abstract_mesh``: `get_abstract_mesh` returns it there.

    Example:
        >>> with use_abstract_mesh(AbstractMesh((1,), ("x",))):
        ...     print(get_abstract_mesh().axis_names)
        ('x',)
    """

    def __init__(self, mesh):
        _check_mesh(mesh, "use_abstract_mesh", abstract_too=True)
        self._previous = _context["abstract"]
        _context["abstract"] = mesh.abstract_mesh

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _context["abstract"] = self._previous
        return False


def get_mesh():
    """The mesh in context (`set_mesh`), or an empty `Mesh`, as JAX's
    ``jax.sharding.get_mesh``.

    Example:
        >>> get_mesh()
        Mesh(axis_sizes=(), axis_names=())
    """
    mesh = _context["mesh"]
    return Mesh._empty() if mesh is None else mesh


def get_abstract_mesh():
    """The abstract mesh in context (`use_abstract_mesh`, else that of `set_mesh`'s
    mesh), or an empty `AbstractMesh`, as JAX's ``jax.sharding.get_abstract_mesh``.

    Example:
        >>> get_abstract_mesh()
        AbstractMesh((), axis_types=())
    """
    if _context["abstract"] is not None:
        return _context["abstract"]
    mesh = _context["mesh"]
    return AbstractMesh((), ()) if mesh is None else mesh.abstract_mesh


# ---- shardings -----------------------------------------------------------------------------
class Sharding:
    """How an array is laid out over devices, as JAX's ``jax.sharding.Sharding``: the base
    of `NamedSharding` and `SingleDeviceSharding`.  On one device every sharding holds the
    whole array on the CPU.

    Example:
        >>> s = SingleDeviceSharding(Device())
        >>> s.num_devices, s.is_fully_replicated, s.shard_shape((4, 2))
        (1, True, (4, 2))
    """

    memory_kind = "device"

    @property
    def device_set(self):
        return {_CPU}

    @property
    def addressable_devices(self):
        return {_CPU}

    @property
    def num_devices(self):
        return 1

    @property
    def is_fully_replicated(self):
        return True

    @property
    def is_fully_addressable(self):
        return True

    def shard_shape(self, global_shape):
        """The shape of one device's shard: the whole array's."""
        return tuple(global_shape)

    def devices_indices_map(self, global_shape):
        """Each device's part of an array of `global_shape`: the CPU's is all of it."""
        return {_CPU: tuple(slice(None) for _ in global_shape)}

    def addressable_devices_indices_map(self, global_shape):
        return self.devices_indices_map(global_shape)

    def with_memory_kind(self, kind):
        """The same sharding in memory `kind` (one memory here: the name is kept)."""
        import copy
        out = copy.copy(self)
        out.memory_kind = kind
        return out


class NamedSharding(Sharding):
    """An array's layout over a mesh, as JAX's ``jax.sharding.NamedSharding(mesh, spec)``:
    `spec` (a `PartitionSpec`) names the mesh axes each dimension is split over, which
    must be axes of `mesh`, each named once.  On one device the whole array is on it.

    Example:
        >>> import wengert as jax
        >>> mesh = jax.make_mesh((1,), ("data",))
        >>> NamedSharding(mesh, P("data")).spec
        P('data',)
        >>> NamedSharding(mesh, P("model"))
        Traceback (most recent call last):
        ...
        ValueError: NamedSharding: P('model',) names mesh axis 'model', which the mesh ...
    """

    def __init__(self, mesh, spec, *, memory_kind=None):
        _check_mesh(mesh, "NamedSharding", abstract_too=True)
        _check_spec(spec, mesh.axis_names, "NamedSharding")
        self.mesh, self.spec = mesh, spec
        if memory_kind is not None:
            self.memory_kind = memory_kind

    def __eq__(self, other):
        return (isinstance(other, NamedSharding) and other.mesh == self.mesh
                and other.spec == self.spec and other.memory_kind == self.memory_kind)

    def __hash__(self):
        return hash((NamedSharding, self.mesh, self.spec))

    def __repr__(self):
        mesh = str(self.mesh) if isinstance(self.mesh, Mesh) else repr(self.mesh)
        return f"NamedSharding(mesh={mesh}, spec={self.spec!r}, memory_kind={self.memory_kind})"

    def shard_shape(self, global_shape):
        _fits(self.spec, len(global_shape), "NamedSharding", "an array")
        return tuple(global_shape)


class SingleDeviceSharding(Sharding):
    """An array on one device, as JAX's ``jax.sharding.SingleDeviceSharding(device)``.

    Example:
        >>> import wengert as jax
        >>> SingleDeviceSharding(jax.devices()[0])
        SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)
    """

    def __init__(self, device, *, memory_kind=None):
        if not isinstance(device, Device):
            raise TypeError(f"SingleDeviceSharding: the device must be jax.devices()[0] (the "
                            f"CPU), got {device!r:.60}")
        self.device = device
        if memory_kind is not None:
            self.memory_kind = memory_kind

    def __eq__(self, other):
        return isinstance(other, SingleDeviceSharding) and other.memory_kind == self.memory_kind

    def __hash__(self):
        return hash(SingleDeviceSharding)

    def __repr__(self):
        return f"SingleDeviceSharding(device={self.device!r}, memory_kind={self.memory_kind})"


def make_single_device_sharding(device):
    """JAX's ``jax.sharding.make_single_device_sharding``: `SingleDeviceSharding`.

    Example:
        >>> import wengert as jax
        >>> make_single_device_sharding(jax.devices()[0]).num_devices
        1
    """
    return SingleDeviceSharding(device)


def _check_spec(spec, axis_names, who, manual=None):
    """`spec` a PartitionSpec naming axes of the mesh (of `manual` ones, for shard_map),
    each at most once."""
    if not isinstance(spec, PartitionSpec):
        raise TypeError(f"{who}: expected a PartitionSpec, P(...), got {spec!r:.60}"
                        + (f"; write P{spec!r}" if isinstance(spec, tuple) else ""))
    seen = set()
    for name in spec._names():
        if name not in axis_names:
            raise ValueError(f"{who}: {spec!r} names mesh axis {name!r}, which the mesh "
                             f"does not have (its axes: {axis_names})")
        if manual is not None and name not in manual:
            raise ValueError(f"{who}: {spec!r} names mesh axis {name!r}, which is not one "
                             f"of shard_map's axis_names {tuple(sorted(manual, key=str))} "
                             "(f is manual over those only)")
        if name in seen:
            raise ValueError(f"{who}: {spec!r} names mesh axis {name!r} twice; a mesh axis "
                             "splits at most one dimension")
        seen.add(name)
    return spec


def _fits(spec, rank, who, what):
    if len(spec) > rank:
        raise ValueError(f"{who}: {spec!r} has {len(spec)} entries, but {what} has rank "
                         f"{rank}; a spec has at most one entry per dimension")


def _sharding_leaf(s, x, who, allow_device):
    """One sharding given for `x` (a leaf): checked, as JAX checks it on one device."""
    if s is None:
        return
    if isinstance(s, NamedSharding):
        _fits(s.spec, len(shape_of(x)), who, f"a value of shape {tuple(shape_of(x))}")
        return
    if isinstance(s, Sharding):
        return
    if isinstance(s, PartitionSpec):
        mesh = _context["mesh"]
        if mesh is None:
            raise ValueError(f"{who}: a PartitionSpec needs a mesh in context: enter one "
                             "with jax.set_mesh(mesh), or pass NamedSharding(mesh, spec)")
        _check_spec(s, mesh.axis_names, who)
        _fits(s, len(shape_of(x)), who, f"a value of shape {tuple(shape_of(x))}")
        return
    if allow_device and (isinstance(s, Device) or isinstance(s, str) and s == "cpu"):
        return
    raise TypeError(f"{who}: expected a Sharding (NamedSharding, SingleDeviceSharding), a "
                    f"PartitionSpec or None{' or a device' if allow_device else ''}, got "
                    f"{s!r:.60}")


def _is_sharding(s):
    return s is None or isinstance(s, (Sharding, PartitionSpec, Device))


def check_shardings(shardings, x, who, allow_device=False):
    """`shardings` (one, or a pytree prefix of `x`'s with shardings for leaves) checked
    against `x`'s leaves: what JAX checks on one device (axes of the mesh, specs no longer
    than the values' ranks).

    Example:
        >>> import numpy as np, wengert as jax
        >>> mesh = jax.make_mesh((1,), ("data",))
        >>> check_shardings(NamedSharding(mesh, P(None, "data")), np.ones(3), "reshard")
        Traceback (most recent call last):
        ...
        ValueError: reshard: P(None, 'data') has 2 entries, but a value of shape (3,) has ...
    """
    if _is_sharding(shardings):
        for leaf in flatten(x)[0]:
            _sharding_leaf(shardings, leaf, who, allow_device)
        return
    try:
        tree_map(lambda s, sub: [_sharding_leaf(s, leaf, who, allow_device)
                                 for leaf in flatten(sub)[0]],
                 shardings, x, is_leaf=_is_sharding)
    except (ValueError, TypeError) as e:
        if str(e).startswith(who):
            raise
        raise ValueError(f"{who}: the shardings {shardings!r:.80} do not match the structure "
                         f"of the value ({e})") from None


def check_sharding_leaves(shardings, who):
    """`shardings` a sharding, a PartitionSpec, None, or a pytree of them (``jit``'s
    ``in_shardings`` and ``out_shardings``, checked before the arguments are known).

    Example:
        >>> check_sharding_leaves((P("data"), None), "jit: in_shardings")
        >>> check_sharding_leaves("data", "jit: in_shardings")
        Traceback (most recent call last):
        ...
        TypeError: jit: in_shardings must hold shardings or PartitionSpecs (or None), got 'data'
    """
    leaves = [shardings] if _is_sharding(shardings) else \
        flatten(shardings, is_leaf=_is_sharding)[0]
    for s in leaves:
        if not _is_sharding(s):
            raise TypeError(f"{who} must hold shardings or PartitionSpecs (or None), got "
                            f"{s!r:.60}")


def with_sharding_constraint(x, shardings):
    """x itself, as JAX's ``jax.lax.with_sharding_constraint`` is on one device: the
    shardings (one, or a pytree of them for x's leaves: `NamedSharding`, `PartitionSpec`
    with a mesh in context, None) are checked, and say where nothing can move.

    Example:
        >>> import numpy as np, wengert as jax
        >>> mesh = jax.make_mesh((1,), ("data",))
        >>> jax.lax.with_sharding_constraint(np.arange(3.0), NamedSharding(mesh, P("data")))
        array([0., 1., 2.])
    """
    check_shardings(shardings, x, "with_sharding_constraint")
    return x


def reshard(xs, out_shardings):
    """xs itself, as JAX's ``jax.reshard`` (``jax.sharding.reshard``) is on one device;
    the shardings are checked as in `with_sharding_constraint`.

    Example:
        >>> import numpy as np, wengert as jax
        >>> with jax.set_mesh(jax.make_mesh((1,), ("data",))):
        ...     print(jax.reshard(np.arange(3.0), P("data")))
        [0. 1. 2.]
    """
    check_shardings(out_shardings, xs, "reshard")
    return xs


def _decorator(f, who, **shardings):
    def wrap(f):
        if not callable(f):
            raise TypeError(f"{who} expects a function, got {type(f).__name__}")

        @functools.wraps(f)
        def wrapped(*args, **kwargs):
            return f(*args, **kwargs)
        return wrapped
    for name, s in shardings.items():
        check_sharding_leaves(s, f"{who}: {name}")
    return wrap if f is None else wrap(f)


def auto_axes(f=None, *, axes=None, out_sharding=None):
    """JAX's ``jax.sharding.auto_axes``: f with the mesh axes `axes` left to the
    compiler.  On one device layouts change nothing: f itself.

    Example:
        >>> import numpy as np
        >>> auto_axes(lambda x: 2 * x, out_sharding=P("data"))(np.ones(2))
        array([2., 2.])
    """
    return _decorator(f, "auto_axes", out_sharding=out_sharding)


def explicit_axes(f=None, *, axes=None, in_sharding=None):
    """JAX's ``jax.sharding.explicit_axes``: f with the mesh axes `axes` explicit.  On
    one device layouts change nothing: f itself.

    Example:
        >>> import numpy as np
        >>> explicit_axes(lambda x: 2 * x, in_sharding=P("data"))(np.ones(2))
        array([2., 2.])
    """
    return _decorator(f, "explicit_axes", in_sharding=in_sharding)


# ---- arrays from shards --------------------------------------------------------------------
def _whole(shape, sharding, who):
    if not isinstance(sharding, Sharding):
        raise TypeError(f"{who}: expected a Sharding (NamedSharding, ...), got "
                        f"{sharding!r:.60}")
    try:
        shape = tuple(int(d) for d in shape)
    except TypeError:
        raise TypeError(f"{who}: shape must be a tuple of ints, got {shape!r}") from None
    if isinstance(sharding, NamedSharding):
        _fits(sharding.spec, len(shape), who, f"an array of shape {shape}")
    return shape


def _checked_array(x, shape, dtype, who):
    a = np.asarray(x) if dtype is None else np.asarray(x, dtype=dtype)
    if a.shape != shape:
        raise ValueError(f"{who}: the data has shape {a.shape}, where the array's is {shape} "
                         "(one device holds all of it)")
    return a


def make_array_from_callback(shape, sharding, data_callback, dtype=None):
    """JAX's ``jax.make_array_from_callback``: the array of `shape` whose shards
    ``data_callback(index)`` gives, index a tuple of slices.  One device holds the
    whole array, so the callback is called once, with slices that take all of it.

    Example:
        >>> import numpy as np, wengert as jax
        >>> data = np.arange(6.0).reshape(3, 2)
        >>> s = NamedSharding(jax.make_mesh((1,), ("data",)), P("data"))
        >>> jax.make_array_from_callback((3, 2), s, lambda index: data[index]).sum()
        np.float64(15.0)
    """
    shape = _whole(shape, sharding, "make_array_from_callback")
    if not callable(data_callback):
        raise TypeError("make_array_from_callback: data_callback must be a function of an "
                        "index (a tuple of slices)")
    index = tuple(slice(None) for _ in shape)
    return _checked_array(data_callback(index), shape, dtype, "make_array_from_callback")


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None):
    """JAX's ``jax.make_array_from_single_device_arrays``: the array of `shape` made of
    one shard per device; with one device, `arrays` holds one array, all of it.

    Example:
        >>> import numpy as np, wengert as jax
        >>> s = SingleDeviceSharding(jax.devices()[0])
        >>> jax.make_array_from_single_device_arrays((2,), s, [np.ones(2)])
        array([1., 1.])
    """
    shape = _whole(shape, sharding, "make_array_from_single_device_arrays")
    arrays = list(arrays)
    if len(arrays) != 1:
        raise ValueError(f"make_array_from_single_device_arrays: one array per device, and "
                         f"there is one device; got {len(arrays)} arrays")
    return _checked_array(arrays[0], shape, dtype, "make_array_from_single_device_arrays")


def make_array_from_process_local_data(sharding, local_data, global_shape=None):
    """JAX's ``jax.make_array_from_process_local_data``: the global array whose part on
    this process is `local_data`.  There is one process, so it is all of it.

    Example:
        >>> import numpy as np, wengert as jax
        >>> s = SingleDeviceSharding(jax.devices()[0])
        >>> jax.make_array_from_process_local_data(s, np.ones(3))
        array([1., 1., 1.])
    """
    a = np.asarray(local_data)
    shape = a.shape if global_shape is None else global_shape
    shape = _whole(shape, sharding, "make_array_from_process_local_data")
    return _checked_array(a, shape, None, "make_array_from_process_local_data")


# ---- shard_map -----------------------------------------------------------------------------
class _InferFromArgs:
    def __repr__(self):
        return "Infer"


Infer = _InferFromArgs()


def _spec_leaf(s):
    return s is None or isinstance(s, PartitionSpec)


def _specs_of(specs, tree, what, who, allow_none):
    """The spec of each leaf of `tree` (in flatten's order), `specs` being a pytree prefix
    of it with PartitionSpecs (and, for in_specs, Nones) as leaves."""
    out = []

    def take(s, sub):
        if s is None and not allow_none:
            raise ValueError(f"{who}: {what} holds None where f's output has "
                             f"{_describe(sub)}; give it a PartitionSpec (P() if it is the "
                             "same on every device)")
        out.extend([s] * len(flatten(sub)[0]))
    if _spec_leaf(specs):
        take(specs, tree)
        return out
    try:
        tree_map(take, specs, tree, is_leaf=_spec_leaf)
    except (ValueError, TypeError) as e:
        if str(e).startswith(who):
            raise
        raise ValueError(f"{who}: {what} must be a PartitionSpec or a pytree of them that is "
                         f"a prefix of {'the arguments' if allow_none else 'the output'} "
                         f"(a tuple with one entry per argument, say); got {specs!r:.80} "
                         f"for {_describe(tree)} ({e})") from None
    return out


def _describe(tree):
    if type(tree) is Node or isinstance(tree, (np.ndarray, np.generic, int, float, complex)):
        return "an array"
    if isinstance(tree, (tuple, list)):
        return f"a {type(tree).__name__} of {len(tree)}"
    if isinstance(tree, dict):
        return f"a dict with keys {sorted(tree, key=str)}"
    return f"a {type(tree).__name__}"


def _named_axes(spec, leaf, mesh, manual, what, who):
    """The manual mesh axes a leaf's spec names (which it varies along), in the mesh's
    order, the spec checked against the mesh and the leaf."""
    if spec is None:
        return ()
    _check_spec(spec, mesh.axis_names, who, manual)
    if UNCONSTRAINED in spec._partitions:
        raise ValueError(f"{who}: {what} {spec!r} holds P.UNCONSTRAINED, which shard_map "
                         "does not take")
    if type(leaf) is not Node and not isinstance(leaf, (bool, int, float, complex,
                                                        np.ndarray, np.generic)):
        raise TypeError(f"{who}: {what} {spec!r} is given for a {type(leaf).__name__} "
                        f"({leaf!r:.40}), which is not an array; give it the spec None "
                        "(passed to f as it is)")
    rank = len(shape_of(leaf))
    if len(spec) > rank:
        raise ValueError(f"{who}: {what} {spec!r} has {len(spec)} entries, but the value of "
                         f"shape {tuple(shape_of(leaf))} has rank {rank}; a spec has at most "
                         "one entry per dimension (P() for a scalar)")
    named = set(spec._names())
    return tuple(n for n in mesh.axis_names if n in named)


def shard_map(f=None, /, *, out_specs, in_specs=Infer, mesh=None, axis_names=frozenset(),
              check_vma=True, check_rep=None):
    """JAX's ``jax.shard_map`` on wengert's one device: f runs on each device's shard of
    its arguments, and its results' shards are put together.  On a mesh whose axes all
    have size 1 (`make_mesh`) each shard is the whole array, so f runs once on the whole
    arguments, with each of the mesh's axis names bound for the collectives as an axis of
    one device: ``lax.psum(x, "data")`` is x, ``lax.axis_index("data")`` 0,
    ``lax.axis_size("data")`` 1, ``lax.all_gather(x, "data")`` x with a new axis of 1,
    as JAX computes them on one device.  Derivatives (``grad`` through it and inside f),
    `jit` and `vmap` go through it.

    Args:
        f: the function of the shards (positional arguments only, as in JAX); without
            it, a decorator.
        out_specs: a `PartitionSpec` for each output (a pytree prefix of f's output): the
            mesh axes it names are those along which the output's shards are joined;
            along an axis it does not name the output must be the same on every device.
        in_specs: a `PartitionSpec` for each argument (a pytree prefix of the tuple of
            arguments), None for an argument passed to f as it is; left out, JAX infers
            them from the arguments' shardings, which needs `AxisType.Explicit` mesh
            axes (wengert's arrays have none: ``P()``, which is what a NumPy array has).
        mesh: a `Mesh` (or `AbstractMesh`) with axes of size 1; None: the mesh in
            context (`set_mesh`).
        axis_names: the mesh axes f is manual over (default: all); only those are bound
            for the collectives, and the specs may name only those.
        check_vma: JAX's check that an output is the same on every device along the
            axes its out_spec does not name, by a type of each value (varying along some
            axes or not).  On one device every output is the same on every device, so
            wengert takes it as it is: accepted, with no effect (JAX's check refuses some
            programs on one device too, where it cannot prove the replication: they run
            here).  ``check_rep`` is its older name.

    Raises:
        ValueError: a mesh axis of size other than 1 (the message says how to emulate
            more devices with `wg.pmap`), specs that name axes the mesh has not (or twice),
            that are longer than their values' ranks or do not match the arguments' (the
            output's) structure.

    Example:
        >>> import numpy as np, wengert as jax
        >>> mesh = jax.make_mesh((1,), ("data",))
        >>> def normalise(x):
        ...     return x / jax.lax.psum(x.sum(), "data"), jax.lax.axis_index("data")
        >>> f = jax.shard_map(normalise, mesh=mesh, in_specs=P("data"),
        ...                   out_specs=(P("data"), P()))
        >>> f(np.array([1.0, 3.0]))
        (array([0.25, 0.75]), np.int32(0))
        >>> jax.grad(lambda x: f(x)[0][0])(np.array([1.0, 3.0]))
        array([ 0.1875, -0.0625])
    """
    for what, flag in (("check_vma", check_vma), ("check_rep", check_rep)):
        if flag is not None and not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"shard_map: {what} must be True or False, got {flag!r:.40}")
    if f is None:
        return lambda f: shard_map(f, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                                   axis_names=axis_names, check_vma=check_vma,
                                   check_rep=check_rep)
    if not callable(f):
        raise TypeError(f"shard_map expects a function, got {type(f).__name__}")
    name = getattr(f, "__name__", "f")
    who = f"shard_map of {name!r}"
    given = mesh

    @functools.wraps(f)
    def sharded(*args, **kwargs):
        if kwargs:
            raise TypeError(f"{who}: f's arguments are matched to in_specs by position, so "
                            f"shard_map takes no keyword arguments (as in JAX), got "
                            f"{sorted(kwargs)}; pass them positionally, or bind them with "
                            "functools.partial")
        mesh = given if given is not None else _context["mesh"]
        if mesh is None:
            raise ValueError(f"{who}: no mesh: pass mesh=jax.make_mesh(...) or set one with "
                             "jax.set_mesh(mesh)")
        _check_mesh(mesh, "shard_map", abstract_too=True)
        if mesh.size != 1:
            raise ValueError(_too_many("shard_map", mesh.axis_sizes, mesh.axis_names))
        manual = mesh.axis_names if not axis_names else _manual(axis_names, mesh, who)
        leaves, tree = flatten(tuple(args))
        specs = in_specs
        if specs is Infer:
            not_explicit = [n for n, t in zip(mesh.axis_names, mesh.axis_types)
                            if n in manual and t is not AxisType.Explicit]
            if not_explicit:
                raise ValueError(f"{who}: in_specs left out: JAX infers them from the "
                                 "arguments' shardings, which needs Explicit mesh axes, and "
                                 f"{not_explicit} are not; give in_specs (a PartitionSpec "
                                 "per argument)")
            specs = P()
        elif isinstance(specs, list):
            specs = tuple(specs)
        per_leaf = [] if not leaves else _specs_of(specs, tuple(args), "in_specs", who, True)
        in_named = [_named_axes(s, x, mesh, manual, "in_specs", who)
                    for s, x in zip(per_leaf, leaves)]
        return _run(f, tree, leaves, in_named, out_specs, mesh, manual, who)
    return sharded


def _manual(axis_names, mesh, who):
    names = set(axis_names) if not isinstance(axis_names, str) else {axis_names}
    for n in names:
        if n not in mesh.axis_names:
            raise ValueError(f"{who}: axis_names holds {n!r}, which the mesh does not have "
                             f"(its axes: {mesh.axis_names})")
    return tuple(n for n in mesh.axis_names if n in names)


def _run(f, tree, leaves, in_named, out_specs, mesh, manual, who):
    """f on the whole arguments, inside one vmap of one example per manual mesh axis
    (outermost first), binding the axis's name: each argument leaf gets a leading axis
    of 1 for each axis its spec names (the vmap of that axis maps it; the others pass it
    as it is, the same on every device), and each output one for each axis its out_spec
    names, which is then taken off.  (An output whose out_spec does not name an axis is
    the one device's: with one device along each axis, it is replicated.)"""
    from .primitives.array import reshape
    info = {}

    def innermost(*ls):
        out = f(*unflatten(tree, list(ls)))
        outs, out_tree = flatten(out)
        per_leaf = _specs_of(out_specs, out, "out_specs", who, False)
        info["tree"] = out_tree
        info["named"] = [_named_axes(s, o, mesh, manual, "out_specs", who)
                         for s, o in zip(per_leaf, outs)]
        return outs
    fn = innermost
    for level in reversed(range(len(manual))):
        fn = _level(fn, manual[level], [manual[level] in n for n in in_named], info)
    ready = [reshape(x, shape=(1,) * len(n) + tuple(shape_of(x))) if n else x
             for x, n in zip(leaves, in_named)]
    outs = fn(*ready)
    outs = [reshape(o, shape=tuple(shape_of(o))[len(n):]) if n else o
            for o, n in zip(outs, info["named"])]
    return unflatten(info["tree"], outs)


def _level(inner, name, mapped, info):
    """`inner` (leaves -> output leaves) mapped over the mesh axis `name`, of one device:
    the leaves with ``mapped[k]`` carry it as their leading axis."""
    from .primitives.array import getitem
    from .primitives.batching import batched
    from .primitives.collective import binding
    from .vectorize import _trace_example, run

    def level(*ls):
        specs, values = [], []
        for k, (x, m) in enumerate(zip(ls, mapped)):
            if m:
                specs.append((k, ShapeDtype(tuple(shape_of(x))[1:], _dtype(x))))
                values.append(x)
        tree = flatten((tuple(ls), {}))[1]
        labels = [f"arg{k}" for k in range(len(ls))]
        with binding(name, 1):
            graph = _trace_example(inner, tree, list(ls), labels, specs, tracer="shard_map")
        captured = [outer for outer, _ in graph.captured.values()]
        results = run(graph, values + captured,
                      [True] * len(values) + [False] * len(captured), 1, name)
        outs = []
        for j, (v, m) in enumerate(results):
            if name in info["named"][j]:
                outs.append(batched(v, m, 1))
            else:
                outs.append(getitem(v, index=(0,)) if m else v)
        return outs
    return level


def _dtype(x):
    if type(x) is Node:
        return x.dtype
    return np.asarray(x).dtype if not isinstance(x, float) else np.dtype(np.float64)
