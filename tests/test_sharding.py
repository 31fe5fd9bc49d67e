"""JAX's sharding API on wengert's one device (wengert.sharding) and JAX's custom batching
(wengert.custom_batching).

Meshes, specs and shardings against JAX's own objects and errors; shard_map with every
collective against JAX on its one CPU device (values, gradients through it and inside it,
jvp, vmap, jit), and in a fresh process where JAX has four devices, on a mesh of one; a
data-parallel training program run with its imports changed; custom_vmap and
sequential_vmap against JAX's values and forward derivatives, their reverse mode (which
JAX refuses) against central differences and the transpose of the forward mode; errors."""

import json
import subprocess
import sys

import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from wengert import lax
from wengert.custom_batching import custom_vmap, sequential_vmap
from wengert.errors import ConcretizationError
from wengert.sharding import (AbstractMesh, AxisType, Mesh, NamedSharding, P,
                              SingleDeviceSharding)

from fd import assert_close, check_grads, fd_jacobian

RNG = np.random.default_rng(20251125)
X = RNG.normal(size=(4, 3))


def _jax():
    return pytest.importorskip("jax")      # (in float64, as tests/conftest.py runs it)


def _same(ours, theirs, rtol=1e-12):
    leaves, tree = wg.tree_util.tree_flatten(ours)
    ref, ref_tree = wg.tree_util.tree_flatten(theirs)
    assert len(leaves) == len(ref), (tree, ref_tree)
    for a, b in zip(leaves, ref):
        b = np.asarray(b)
        assert np.shape(a) == b.shape, (np.shape(a), b.shape)
        assert_close(a, b, rtol=rtol, atol=rtol)


# ---- meshes, specs, shardings ---------------------------------------------------------------
def test_meshes_and_specs_print_and_compare_as_jaxs():
    jax = _jax()
    ours = [wg.make_mesh((1,), ("data",)), wg.make_mesh((1, 1), ("x", "y")),
            wg.make_mesh((1,), ("data",), axis_types=(AxisType.Auto,)),
            Mesh(np.array(wg.devices()), ("data",)), Mesh(wg.devices(), "d")]
    theirs = [jax.make_mesh((1,), ("data",)), jax.make_mesh((1, 1), ("x", "y")),
              jax.make_mesh((1,), ("data",), axis_types=(jax.sharding.AxisType.Auto,)),
              jax.sharding.Mesh(np.array(jax.devices()), ("data",)),
              jax.sharding.Mesh(jax.devices(), "d")]
    for a, b in zip(ours, theirs):
        assert (repr(a), str(a)) == (repr(b), str(b))
        assert (dict(a.shape), a.axis_names, a.axis_sizes, a.size, a.shape_tuple, a.empty) == \
            (dict(b.shape), b.axis_names, b.axis_sizes, b.size, b.shape_tuple, b.empty)
        assert [t.name for t in a.axis_types] == [t.name for t in b.axis_types]
        assert a.devices.shape == b.devices.shape and a.device_ids.tolist() == \
            b.device_ids.tolist()
    assert ours[0] == wg.make_mesh((1,), ("data",)) and ours[0] != ours[2]
    assert hash(ours[0]) == hash(wg.make_mesh((1,), ("data",)))
    specs = [P(), P("x"), P("x", None), P(("x", "y"), None), P(None, "y"), P(P.UNCONSTRAINED)]
    their_p = jax.sharding.PartitionSpec
    for s, t in zip(specs, [their_p(), their_p("x"), their_p("x", None),
                            their_p(("x", "y"), None), their_p(None, "y"),
                            their_p(their_p.UNCONSTRAINED)]):
        assert (repr(s), len(s), list(s)[:1] == list(t)[:1] or s[0] is P.UNCONSTRAINED) == \
            (repr(t), len(t), True)
    assert P("x") == P("x") and P("x") != P("y") and P("x") != ("x",)   # (JAX: not a tuple)
    assert wg.P is P and wg.sharding.PartitionSpec is P
    for m, jm in ((ours[0], theirs[0]), (ours[1], theirs[1])):
        for spec in (P(), P(m.axis_names[0]), P(None, m.axis_names[-1])):
            s = NamedSharding(m, spec)
            t = jax.sharding.NamedSharding(jm, their_p(*spec))
            assert repr(s) == repr(t)
            assert (s.num_devices, s.is_fully_replicated, s.is_fully_addressable,
                    s.memory_kind, s.shard_shape((4, 3)), len(s.device_set)) == \
                (t.num_devices, t.is_fully_replicated, t.is_fully_addressable,
                 t.memory_kind, t.shard_shape((4, 3)), len(t.device_set))
            assert list(s.devices_indices_map((4, 3)).values()) == \
                list(t.devices_indices_map((4, 3)).values())
    assert repr(SingleDeviceSharding(wg.devices()[0])) == \
        repr(jax.sharding.SingleDeviceSharding(jax.devices()[0]))
    assert repr(AbstractMesh((1, 2), ("a", "b"))) == \
        repr(jax.sharding.AbstractMesh((1, 2), ("a", "b")))
    assert repr(wg.sharding.get_abstract_mesh()) == repr(jax.sharding.get_abstract_mesh())
    assert repr(wg.sharding.get_mesh()) == repr(jax.sharding.get_mesh())
    assert [repr(t) for t in AxisType] == [repr(t) for t in jax.sharding.AxisType]


def test_mesh_errors_say_what_to_do():
    with pytest.raises(ValueError, match=r"make_mesh: a mesh of shape \(4,\) needs 4 devices;"
                       r".*wg.pmap\(f, axis_name='data'\)"):
        wg.make_mesh((4,), ("data",))
    with pytest.raises(ValueError, match="make_mesh: 1 axis sizes"):
        wg.make_mesh((1,), ("x", "y"))
    with pytest.raises(ValueError, match="positive"):
        wg.make_mesh((0,), ("x",))
    with pytest.raises(ValueError, match="name an axis twice"):
        wg.make_mesh((1, 1), ("x", "x"))
    with pytest.raises(ValueError, match="ndim of its first argument"):
        Mesh(np.array(wg.devices()).reshape(1, 1), ("x",))
    with pytest.raises(ValueError, match="needs 2 devices"):
        Mesh(np.array(wg.devices() * 2), ("x",))
    with pytest.raises(TypeError, match="Mesh: the devices must be"):
        Mesh(np.array(["gpu"], dtype=object), ("x",))
    with pytest.raises(ValueError, match="axis_types must be 1 AxisType"):
        wg.make_mesh((1,), ("x",), axis_types=("auto",))
    mesh = wg.make_mesh((1,), ("data",))
    with pytest.raises(ValueError, match="names mesh axis 'model', which the mesh does not"):
        NamedSharding(mesh, P("model"))
    with pytest.raises(ValueError, match="names mesh axis 'data' twice"):
        NamedSharding(mesh, P("data", "data"))
    with pytest.raises(TypeError, match=r"expected a PartitionSpec.*write P\('data',\)"):
        NamedSharding(mesh, ("data",))
    with pytest.raises(TypeError, match="expected a Mesh or AbstractMesh"):
        NamedSharding("mesh", P())
    with pytest.raises(TypeError, match="SingleDeviceSharding: the device"):
        SingleDeviceSharding("gpu:0")
    with pytest.raises(TypeError, match="not a mesh axis name"):
        P(("x", None))
    with pytest.raises(ValueError, match="create_device_mesh: a mesh of shape"):
        wg.experimental.mesh_utils.create_device_mesh((2,))
    assert wg.experimental.mesh_utils.create_device_mesh((1, 1)).shape == (1, 1)


def test_mesh_in_context():
    mesh = wg.make_mesh((1, 1), ("x", "y"))
    assert wg.sharding.get_abstract_mesh().empty
    with wg.set_mesh(mesh) as entered:
        assert entered is None                      # (as JAX's)
        assert wg.sharding.get_mesh() is mesh
        assert wg.sharding.get_abstract_mesh() == mesh.abstract_mesh
        assert wg.sharding.get_abstract_mesh().axis_names == ("x", "y")
        with wg.sharding.use_abstract_mesh(AbstractMesh((1,), ("z",))):
            assert wg.sharding.get_abstract_mesh().axis_names == ("z",)
        assert wg.sharding.get_abstract_mesh().axis_names == ("x", "y")
    assert wg.sharding.get_mesh().empty
    wg.set_mesh(mesh)                               # a global setter too
    try:
        assert wg.sharding.get_mesh() is mesh
        assert wg.shard_map(lambda v: lax.psum(v, "x"), in_specs=P("x"),
                            out_specs=P())(X).tolist() == X.tolist()
    finally:
        wg.set_mesh(None)
    assert wg.sharding.get_mesh().empty
    with wg.sharding.use_mesh(mesh):                # (JAX's older name)
        assert wg.sharding.get_mesh() is mesh
    with pytest.warns(DeprecationWarning, match="set_mesh"):
        with mesh:                                  # (JAX's deprecated form)
            assert wg.sharding.get_mesh() is mesh
    assert wg.sharding.get_mesh().empty
    with pytest.raises(TypeError, match="set_mesh: expected a Mesh"):
        wg.set_mesh("x")


def test_placement_functions_are_the_value_itself_and_check_their_shardings():
    jax = _jax()
    mesh = wg.make_mesh((1,), ("data",))
    s = NamedSharding(mesh, P("data"))
    x = np.arange(6.0).reshape(3, 2)
    y = wg.device_put(x, s)
    x[0, 0] = 9.0                                   # (a copy, as JAX's transfer)
    assert y[0, 0] == 0.0 and y.shape == (3, 2)
    tree = wg.device_put({"a": np.ones(2), "b": 1.0}, {"a": s, "b": None})
    assert tree["a"].tolist() == [1.0, 1.0]
    assert wg.device_put(x, SingleDeviceSharding(wg.devices()[0])).shape == (3, 2)
    assert wg.lax.with_sharding_constraint(x, s) is x
    assert wg.reshard(x, s) is x and wg.sharding.reshard((x, x), s)[1] is x
    # each error where JAX has one (on one device)
    their = jax.sharding.NamedSharding(jax.make_mesh((1,), ("data",)),
                                       jax.sharding.PartitionSpec("data", None))
    for call in (lambda: wg.device_put(np.ones(3), NamedSharding(mesh, P("data", None))),
                 lambda: wg.lax.with_sharding_constraint(np.ones(3),
                                                         NamedSharding(mesh, P("data", None)))):
        with pytest.raises(ValueError, match=r"has 2 entries, but a value of shape \(3,\) has "
                                             "rank 1"):
            call()
    with pytest.raises(ValueError, match="rank"):
        jax.device_put(np.ones(3), their)
    for call, what in ((lambda: wg.device_put(x, P("data")), "device_put"),
                       (lambda: wg.lax.with_sharding_constraint(x, P("data")),
                        "with_sharding_constraint"),
                       (lambda: wg.reshard(x, P("data")), "reshard")):
        with pytest.raises(ValueError, match=f"{what}: a PartitionSpec needs a mesh in "
                                             "context"):
            call()
    with wg.set_mesh(mesh):
        assert wg.device_put(x, P("data")).shape == (3, 2)
        assert wg.reshard(x, P("data")) is x
        with pytest.raises(ValueError, match="names mesh axis 'model'"):
            wg.lax.with_sharding_constraint(x, P("model"))
    with pytest.raises(TypeError, match="with_sharding_constraint: expected a Sharding"):
        wg.lax.with_sharding_constraint(x, "data")
    with pytest.raises(TypeError, match="device_put: device must be"):
        wg.device_put(x, "data")
    with pytest.raises(ValueError, match="do not match the structure"):
        wg.reshard((x, x), (s, s, s))


def test_constraints_inside_transformations_and_jit_shardings():
    mesh = wg.make_mesh((1,), ("data",))
    s = NamedSharding(mesh, P("data"))

    def f(x):
        y = wg.lax.with_sharding_constraint(wnp.sin(x), s)
        return wnp.sum(wg.reshard(y, s) ** 2)
    step = wg.jit(wg.grad(f), in_shardings=s, out_shardings=s)
    assert_close(step(X), 2 * np.sin(X) * np.cos(X), rtol=1e-14)
    check_grads(f, X, order=2)
    assert_close(wg.vmap(wg.grad(f))(X), 2 * np.sin(X) * np.cos(X), rtol=1e-14)
    assert wg.jit(lambda x: 2 * x, in_shardings=(P("data"),), out_shardings=None)(1.0) == 2.0
    with pytest.raises(TypeError, match="jit: in_shardings must hold shardings"):
        wg.jit(lambda x: x, in_shardings="data")
    out = wg.sharding.auto_axes(lambda x: 2 * x, out_sharding=P("data"))(X)
    assert_close(out, 2 * X, rtol=0)
    assert_close(wg.sharding.explicit_axes(in_sharding=s)(lambda x: x + 1)(X), X + 1, rtol=0)
    with pytest.raises(TypeError, match="auto_axes: out_sharding must hold"):
        wg.sharding.auto_axes(lambda x: x, out_sharding=3)
    sd = wg.ShapeDtypeStruct((3, 2), np.float64, sharding=s)
    assert sd.sharding is s and wg.eval_shape(lambda x: x.T, sd).shape == (2, 3)


def test_arrays_from_shards():
    jax = _jax()
    data = np.arange(12.0).reshape(4, 3)
    mesh, their_mesh = wg.make_mesh((1,), ("data",)), jax.make_mesh((1,), ("data",))
    s = NamedSharding(mesh, P("data"))
    t = jax.sharding.NamedSharding(their_mesh, jax.sharding.PartitionSpec("data"))
    seen, their_seen = [], []
    ours = wg.make_array_from_callback((4, 3), s, lambda i: seen.append(i) or data[i])
    theirs = jax.make_array_from_callback((4, 3), t, lambda i: their_seen.append(i) or data[i])
    _same(ours, theirs, rtol=0)
    assert seen == their_seen
    _same(wg.make_array_from_single_device_arrays((4, 3), s, [data]),
          jax.make_array_from_single_device_arrays((4, 3), t, [jax.device_put(data)]), rtol=0)
    _same(wg.make_array_from_process_local_data(s, data),
          jax.make_array_from_process_local_data(t, data), rtol=0)
    assert wg.make_array_from_callback((4, 3), s, lambda i: data[i],
                                       dtype=np.float32).dtype == np.float32
    with pytest.raises(ValueError, match=r"the data has shape \(3, 4\)"):
        wg.make_array_from_callback((4, 3), s, lambda i: data.T)
    with pytest.raises(ValueError, match="one array per device"):
        wg.make_array_from_single_device_arrays((4, 3), s, [data, data])
    with pytest.raises(TypeError, match="expected a Sharding"):
        wg.make_array_from_process_local_data(P("data"), data)


# ---- shard_map against JAX ------------------------------------------------------------------
# (source, in_specs, out_specs, the argument's shape (None: a pytree), whether JAX
# differentiates it), each run
# with `sm` being shard_map on a mesh with axes "x" (and "y" on a 2-D mesh "xy"), `l` lax,
# `n` the numpy module, `j` the library.  Each output spec names what JAX's replication check
# accepts.
CASES = {
    "psum": ("lambda a: l.psum(n.sin(a), 'x')", "P('x')", "P()", (4, 3), True),
    "pmean": ("lambda a: l.pmean(a * a, 'x')", "P('x')", "P()", (4, 3), True),
    "pmax": ("lambda a: l.pmax(a, 'x')", "P('x')", "P()", (4, 3), False),
    "pmin": ("lambda a: l.pmin(n.cos(a), 'x')", "P(None, 'x')", "P()", (4, 3), False),
    "all_gather": ("lambda a: l.all_gather(a ** 3, 'x')", "P('x')", "P('x')", (4, 3), True),
    "all_gather_tiled": ("lambda a: l.all_gather(a, 'x', axis=1, tiled=True)", "P('x')",
                         "P('x')", (4, 3), True),
    "psum_scatter": ("lambda a: l.psum_scatter(n.sin(a), 'x', scatter_dimension=1, "
                     "tiled=True)", "P('x')", "P('x')", (4, 3), True),
    "psum_scatter_untiled": ("lambda a: l.psum_scatter(a[:1] * 2, 'x')", "P('x')", "P('x')",
                             (4, 3), True),
    "all_to_all": ("lambda a: l.all_to_all(n.sin(a), 'x', 0, 1, tiled=True)", "P('x')",
                   "P('x')", (4, 3), True),
    "all_to_all_untiled": ("lambda a: l.all_to_all(a[:, :1] * a[:, 1:2], 'x', 1, 0)",
                           "P('x')", "P('x')", (4, 3), False),     # (JAX's VJP fails)
    "pswapaxes": ("lambda a: l.pswapaxes(a[:, :1], 'x', 1)", "P('x')", "P('x')", (4, 3), True),
    "ppermute": ("lambda a: l.ppermute(n.exp(a), 'x', [(0, 0)])", "P('x')", "P('x')", (4, 3),
                 True),
    "pshuffle": ("lambda a: l.pshuffle(a * 3, 'x', [0])", "P('x')", "P('x')", (4, 3), True),
    "axis_index": ("lambda a: a * (l.axis_index('x') + 2) * l.axis_size('x')", "P('x')",
                   "P('x')", (4, 3), True),
    "replicated_in": ("lambda a: l.psum(a, 'x') * l.pcast(a, 'x', to='varying')", "P()",
                      "P('x')", (4, 3), True),
    "grad_inside": ("lambda a: j.grad(lambda b: n.sum(l.psum(n.sin(b) * b, 'x')))(a)",
                    "P('x')", "P('x')", (4, 3), True),
    "xy_psum_both": ("lambda a: l.psum(n.tanh(a), ('x', 'y'))", "P('x', 'y')", "P()", (4, 3),
                     True),
    "xy_psum_one": ("lambda a: l.psum(a * a, 'x')", "P('x', 'y')", "P(None, 'y')", (4, 3),
                    True),
    "xy_gather": ("lambda a: l.all_gather(a, ('x', 'y'), tiled=True) + l.axis_index("
                  "('y', 'x'))", "P('x', 'y')", "P(('x', 'y'))", (4, 3), True),
    "pytrees": ("lambda d: {'s': l.psum(d['a'] * d['b'], 'x'), 'a': d['a']}",
                "({'a': P('x'), 'b': P()},)", "{'s': P(), 'a': P('x')}", None, True),
}


def _case(name, jax_like, lax_like, np_like, shard_map, mesh_1d, mesh_2d, p):
    source, ins, outs, _, _ = CASES[name]
    mesh = mesh_2d if name.startswith("xy") else mesh_1d
    f = eval(source, {"l": lax_like, "n": np_like, "j": jax_like})
    return shard_map(f, mesh=mesh, in_specs=eval(ins, {"P": p}),
                     out_specs=eval(outs, {"P": p}))


def _argument(name):
    shape = CASES[name][3]
    if shape is None:
        return ({"a": X, "b": X[0]},)
    return (X,)


def _ours(name):
    return _case(name, wg, lax, wnp, wg.shard_map,
                 wg.make_mesh((1,), ("x",), axis_types=(AxisType.Auto,)),
                 wg.make_mesh((1, 1), ("x", "y"), axis_types=(AxisType.Auto,) * 2), P)


@pytest.mark.parametrize("name", sorted(CASES))
def test_shard_map_against_jax_on_one_device(name):
    """Values, the gradient of a function of the result (through shard_map), its JVP, its
    vmap and jit, against JAX's on its one CPU device; derivatives to second order against
    central differences."""
    jax = _jax()
    import jax.numpy as jnp
    A = jax.sharding.AxisType.Auto
    theirs = _case(name, jax, jax.lax, jnp, jax.shard_map,
                   jax.make_mesh((1,), ("x",), axis_types=(A,)),
                   jax.make_mesh((1, 1), ("x", "y"), axis_types=(A, A)),
                   jax.sharding.PartitionSpec)
    ours = _ours(name)
    args = _argument(name)
    _same(ours(*args), theirs(*args))
    _same(wg.jit(ours)(*args), theirs(*args))
    if CASES[name][3] is not None:
        batch = np.stack([X, 2 * X])
        _same(wg.vmap(ours)(batch), jax.vmap(theirs)(batch))
    if name not in ("pmax", "pmin"):
        check_grads(lambda a: wg.tree.leaves(ours(a))[0],
                    *(args if CASES[name][3] is not None else (X,)), order=2) \
            if CASES[name][3] is not None else \
            check_grads(lambda a, b: wg.tree.leaves(ours({"a": a, "b": b})), X, X[0], order=2)
    if not CASES[name][4]:
        return
    total = lambda f, n: lambda *a: sum(n.sum(n.sin(v)) for v in wg.tree.leaves(f(*a)))
    _same(wg.grad(total(ours, wnp))(*args), jax.grad(total(theirs, jnp))(*args))
    tangents = wg.tree.map(np.cos, args)
    _same(wg.jvp(ours, args, tangents), jax.jvp(theirs, args, tangents))


def test_shard_map_errors():
    mesh = wg.make_mesh((1,), ("x",))
    sm = lambda f, i, o, **k: wg.shard_map(f, mesh=mesh, in_specs=i, out_specs=o, **k)
    with pytest.raises(ValueError, match=r"in_specs P\('x', None, None\) has 3 entries, but "
                                         r"the value of shape \(4, 3\) has rank 2"):
        sm(lambda a: a, P("x", None, None), P())(X)
    with pytest.raises(ValueError, match=r"out_specs P\('x',\) has 1 entries, but the value "
                                         r"of shape \(\) has rank 0"):
        sm(lambda a: a.sum(), P("x"), P("x"))(X)
    with pytest.raises(ValueError, match="names mesh axis 'model', which the mesh does not"):
        sm(lambda a: a, P("model"), P())(X)
    with pytest.raises(ValueError, match="names mesh axis 'x' twice"):
        sm(lambda a: a, P("x", "x"), P())(X)
    with pytest.raises(ValueError, match="in_specs must be a PartitionSpec or a pytree of them "
                                         "that is a prefix of the arguments"):
        sm(lambda a, b: a * b, (P("x"),), P())(X, 2.0)
    with pytest.raises(ValueError, match="out_specs holds None where f's output has an array"):
        sm(lambda a: (a, a), P("x"), (P("x"), None))(X)
    with pytest.raises(TypeError, match="takes no keyword arguments.*functools.partial"):
        sm(lambda a, s=1.0: a * s, (P("x"),), P("x"))(X, s=2.0)
    with pytest.raises(TypeError, match="is given for a str"):
        sm(lambda a, s: a, (P("x"), P()), P("x"))(X, "text")
    assert sm(lambda a, s: a, (P("x"), None), P("x"))(X, "text") is not None   # (static)
    with pytest.raises(ValueError, match="P.UNCONSTRAINED"):
        sm(lambda a: a, P(P.UNCONSTRAINED), P())(X)
    with pytest.raises(NameError, match="unbound axis name 'model'.*shard_map runs on a "
                                        "mesh with an axis 'model'"):
        sm(lambda a: lax.psum(a, "model"), P("x"), P())(X)
    with pytest.raises(ValueError, match="no mesh: pass mesh="):
        wg.shard_map(lambda a: a, in_specs=P(), out_specs=P())(X)
    with pytest.raises(ValueError, match=r"shard_map: a mesh of shape \(2,\) needs 2 devices"):
        wg.shard_map(lambda a: a, mesh=AbstractMesh((2,), ("x",)), in_specs=P(),
                     out_specs=P())(X)
    with pytest.raises(ValueError, match="in_specs left out.*Explicit mesh axes"):
        wg.shard_map(lambda a: a, mesh=wg.make_mesh((1,), ("x",), axis_types=AxisType.Auto),
                     out_specs=P())(X)
    assert wg.shard_map(lambda a: a, mesh=mesh, out_specs=P())(X) is not None   # (Explicit)
    with pytest.raises(TypeError, match="check_vma must be True or False"):
        wg.shard_map(lambda a: a, mesh=mesh, in_specs=P(), out_specs=P(), check_vma="yes")
    with pytest.raises(TypeError, match="shard_map expects a function"):
        wg.shard_map(3, mesh=mesh, in_specs=P(), out_specs=P())
    # a branch on a sharded argument's value, as in JAX; on a replicated one it runs
    with pytest.raises(ConcretizationError, match="while shard_map traced f"):
        sm(lambda a: a if a.sum() > 0 else -a, P("x"), P("x"))(X)
    negative = -np.abs(X) - 1.0
    assert_close(sm(lambda a: a if a.sum() > 0 else -a, P(), P())(negative), -negative, rtol=0)


def test_partial_manual_axes_and_the_older_spelling():
    mesh = wg.make_mesh((1, 1), ("x", "y"))
    f = wg.shard_map(lambda a: lax.psum(a, "x"), mesh=mesh, in_specs=P("x"), out_specs=P(),
                     axis_names={"x"})
    assert_close(f(X), X, rtol=0)
    with pytest.raises(NameError, match="unbound axis name 'y'"):
        wg.shard_map(lambda a: lax.psum(a, "y"), mesh=mesh, in_specs=P("x"), out_specs=P(),
                     axis_names={"x"})(X)
    with pytest.raises(ValueError, match="names mesh axis 'y', which is not one of shard_map's "
                                         "axis_names"):
        wg.shard_map(lambda a: a, mesh=mesh, in_specs=P("y"), out_specs=P(),
                     axis_names={"x"})(X)
    with pytest.raises(ValueError, match="axis_names holds 'z'"):
        wg.shard_map(lambda a: a, mesh=mesh, in_specs=P(), out_specs=P(), axis_names={"z"})(X)
    from wengert.experimental.shard_map import shard_map as old
    g = old(lambda a: lax.psum(a, ("x", "y")), mesh, P("x", "y"), P(), check_rep=False)
    assert_close(g(X), X, rtol=0)
    with pytest.raises(NameError, match="unbound axis name 'y'"):
        old(lambda a: lax.psum(a, "y"), mesh, P("x"), P(), auto=frozenset({"y"}))(X)
    assert wg.shard_map(mesh=mesh, in_specs=P(), out_specs=P())(lambda a: 2 * a)(1.5) == 3.0
    # nested: a shard_map inside vmap, a vmap with its own name inside shard_map
    inner = wg.shard_map(lambda a: lax.psum(a, "x") * lax.axis_index("x"), mesh=mesh,
                         in_specs=P("x"), out_specs=P("x"))
    assert_close(wg.vmap(inner)(np.stack([X, X])), np.zeros((2, 4, 3)), rtol=0)
    both = wg.shard_map(lambda a: wg.vmap(lambda r: lax.psum(r, ("x", "i")), axis_name="i")(a),
                        mesh=mesh, in_specs=P("x"), out_specs=P("x"))
    assert_close(both(X), np.broadcast_to(X.sum(0), X.shape), rtol=1e-15)


PROGRAM = '''
import numpy as np
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P

def loss(params, x, y):
    pred = jnp.tanh(x @ params["w"] + params["b"])
    return jnp.mean((pred - y) ** 2)

mesh = jax.make_mesh((MESH_SIZE,), ("data",), devices=jax.devices()[:MESH_SIZE])

@jax.jit
def train_step(params, x, y):
    def step(params, x, y):
        mean_loss = lambda p: jax.lax.pmean(loss(p, x, y), "data")
        value, grads = jax.value_and_grad(mean_loss)(params)
        return jax.tree.map(lambda p, g: p - 0.5 * g, params, grads), value
    return jax.shard_map(step, mesh=mesh, in_specs=(P(), P("data"), P("data")),
                         out_specs=(P(), P()))(params, x, y)

rng = np.random.default_rng(0)
x = rng.normal(size=(64, 3))
y = np.sin(x @ np.array([1.0, -2.0, 0.5]))
batch = NamedSharding(mesh, P("data"))
x, y = jax.device_put(x, batch), jax.device_put(y, batch)
params = {"w": jnp.zeros(3), "b": jnp.zeros(())}
losses = []
for _ in range(20):
    params, value = train_step(params, x, y)
    losses.append(float(value))
'''


def _program(module):
    text = PROGRAM.replace("MESH_SIZE", "1")
    if module == "wengert":
        text = text.replace("import jax\n", "import wengert as jax\n").replace(
            "import jax.numpy as jnp", "import wengert.numpy as jnp").replace(
            "from jax.sharding", "from wengert.sharding")
    scope = {}
    exec(compile(text, f"<{module} program>", "exec"), scope)
    return scope


def test_a_data_parallel_program_runs_with_its_imports_changed():
    """The program of docs/jax.md: JAX's shard_map training step, the loss averaged over
    the shards, arrays placed with device_put; with ``import wengert as jax`` it gives
    JAX's numbers on one device, and those of full-batch gradient descent."""
    jax = _jax()
    ours, theirs = _program("wengert"), _program("jax")
    assert jax.device_count() == 1
    _same(ours["params"], theirs["params"], rtol=1e-12)
    _same(np.asarray(ours["losses"]), np.asarray(theirs["losses"]), rtol=1e-12)
    x, y = np.asarray(theirs["x"]), np.asarray(theirs["y"])
    params = {"w": np.zeros(3), "b": 0.0}
    for _ in range(20):
        g = wg.grad(ours["loss"])(params, x, y)
        params = {k: params[k] - 0.5 * g[k] for k in params}
    _same(ours["params"], params, rtol=1e-12)


_SUBPROCESS = r"""
import json, os, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
os.environ["JAX_PLATFORMS"] = "cpu"
import numpy as np, jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
assert jax.device_count() == 4
cases = json.loads(sys.argv[1])
X = np.load(sys.argv[2])
P = jax.sharding.PartitionSpec
A = jax.sharding.AxisType.Auto
one = jax.make_mesh((1,), ("x",), axis_types=(A,), devices=jax.devices()[:1])
two = jax.make_mesh((1, 1), ("x", "y"), axis_types=(A, A), devices=jax.devices()[1:2])
out = {}
for name, (source, ins, outs, shape, grads) in cases.items():
    f = eval(source, {"l": jax.lax, "n": jnp, "j": jax})
    g = jax.shard_map(f, mesh=two if name.startswith("xy") else one, in_specs=eval(ins),
                      out_specs=eval(outs))
    args = ({"a": X, "b": X[0]},) if shape is None else (X,)
    leaves = jax.tree.leaves(g(*args))
    for k, v in enumerate(leaves):
        out[f"{name}/{k}"] = np.asarray(v)
    if grads:
        total = lambda *a: sum(jnp.sum(jnp.sin(v)) for v in jax.tree.leaves(g(*a)))
        for k, v in enumerate(jax.tree.leaves(jax.grad(total)(*args))):
            out[f"{name}/grad{k}"] = np.asarray(v)
scope = {}
exec(sys.argv[4], scope)
out["program/w"] = np.asarray(scope["params"]["w"])
out["program/losses"] = np.asarray(scope["losses"])
np.savez(sys.argv[3], **out)
"""


def test_shard_map_against_jax_on_a_one_device_mesh_of_four_devices(tmp_path):
    """JAX in a fresh process with four CPU devices (XLA's flag must come before JAX
    starts), its meshes made of one of them: every case's values and gradients, and the
    training program, against wengert's."""
    _jax()
    np.save(tmp_path / "x.npy", X)
    program = PROGRAM.replace("MESH_SIZE", "1")
    run = subprocess.run([sys.executable, "-c", _SUBPROCESS, json.dumps(CASES),
                          str(tmp_path / "x.npy"), str(tmp_path / "out.npz"), program],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    theirs = np.load(tmp_path / "out.npz")
    for name in CASES:
        ours = _ours(name)
        args = _argument(name)
        for k, v in enumerate(wg.tree.leaves(ours(*args))):
            _same(v, theirs[f"{name}/{k}"])
        if CASES[name][4]:
            total = lambda *a: sum(wnp.sum(wnp.sin(v)) for v in wg.tree.leaves(ours(*a)))
            for k, v in enumerate(wg.tree.leaves(wg.grad(total)(*args))):
                _same(v, theirs[f"{name}/grad{k}"])
    program = _program("wengert")
    _same(program["params"]["w"], theirs["program/w"])
    _same(np.asarray(program["losses"]), theirs["program/losses"])


def test_emulating_more_devices_with_pmap():
    """What make_mesh's error advises: the per-shard function mapped over a leading axis of
    shards by wg.pmap with the mesh axis's name computes what that many devices would
    (here: the shards' psum, positions, and the full batch's mean gradient)."""
    def per_shard(w, x):
        grad = wg.grad(lambda w: lax.pmean(wnp.mean((x @ w) ** 2), "data"))(w)
        return lax.psum(x.sum(0), "data"), lax.axis_index("data"), grad
    w = RNG.normal(size=3)
    xs = RNG.normal(size=(8, 3))
    sums, index, grads = wg.pmap(per_shard, axis_name="data", in_axes=(None, 0))(
        w, xs.reshape(4, 2, 3))
    assert_close(sums, np.broadcast_to(xs.sum(0), (4, 3)), rtol=1e-14)
    assert index.tolist() == [0, 1, 2, 3]
    # (each shard's gradient of the mean loss, as JAX 0.10's pmap gives it: the mean of the
    # shards' gradients is the full batch's)
    assert_close(grads.mean(0), wg.grad(lambda w: wnp.mean((xs @ w) ** 2))(w), rtol=1e-12)
    one = wg.shard_map(per_shard, mesh=wg.make_mesh((1,), ("data",)),
                       in_specs=(P(), P("data")), out_specs=(P(), P(), P()))
    s, i, g = one(w, xs)
    assert_close(s, xs.sum(0), rtol=1e-14) and i == 0
    assert_close(g, wg.grad(lambda w: wnp.mean((xs @ w) ** 2))(w), rtol=1e-12)


# ---- custom_vmap ----------------------------------------------------------------------------
def _custom(module, np_like, calls):
    """JAX's documentation example: f is sin(x) y, its vmap rule cos(x) y (a rule that is
    no batching of f, so that which one is used shows)."""
    @module.custom_batching.custom_vmap
    def f(x, y):
        return np_like.sin(x) * y

    @f.def_vmap
    def rule(axis_size, in_batched, xs, ys):
        calls.append((axis_size, list(in_batched)))
        return np_like.cos(xs) * ys, in_batched[0] or in_batched[1]
    return f


def test_custom_vmap_values_and_forward_mode_against_jax():
    jax = _jax()
    import jax.numpy as jnp
    ours_calls, their_calls = [], []
    f, g = _custom(wg, wnp, ours_calls), _custom(jax, jnp, their_calls)
    x, y = np.array([0.1, 0.2, 0.3]), np.array([1.0, 2.0, 3.0])
    t = np.array([1.0, -0.5, 2.0])
    for ours, theirs in [
            (lambda f: f(0.5, 2.0), lambda g: g(0.5, 2.0)),
            (lambda f: wg.vmap(f)(x, y), lambda g: jax.vmap(g)(x, y)),
            (lambda f: wg.vmap(f, (0, None))(x, 2.0), lambda g: jax.vmap(g, (0, None))(x, 2.0)),
            (lambda f: wg.jit(wg.vmap(f))(x, y), lambda g: jax.jit(jax.vmap(g))(x, y)),
            (lambda f: wg.jvp(f, (0.5, 2.0), (1.0, 0.5)),
             lambda g: jax.jvp(g, (0.5, 2.0), (1.0, 0.5))),
            (lambda f: wg.jvp(wg.vmap(f), (x, y), (t, y)),
             lambda g: jax.jvp(jax.vmap(g), (x, y), (t, y))),
            (lambda f: wg.vmap(lambda a, b, ta, tb: wg.jvp(f, (a, b), (ta, tb)))(x, y, t, x),
             lambda g: jax.vmap(lambda a, b, ta, tb: jax.jvp(g, (a, b), (ta, tb)))(x, y, t, x)),
            (lambda f: wg.vmap(lambda ta: wg.jvp(f, (0.5, 2.0), (ta, 0.0))[1])(t),
             lambda g: jax.vmap(lambda ta: jax.jvp(g, (0.5, 2.0), (ta, 0.0))[1])(t)),
            (lambda f: wg.grad(lambda a: wg.vmap(f)(a, y).sum())(x),
             lambda g: jax.grad(lambda a: jax.vmap(g)(a, y).sum())(x))]:
        ours_calls.clear()
        their_calls.clear()
        _same(ours(f), theirs(g))
        assert {c[0] for c in ours_calls} == {c[0] for c in their_calls}, ours
    # the rule sees JAX's flags where both batch in the primals
    ours_calls.clear()
    their_calls.clear()
    wg.vmap(f, (0, None))(x, 2.0)
    jax.vmap(g, (0, None))(x, 2.0)
    assert ours_calls == their_calls == [(3, [True, False])]


def test_custom_vmap_mixed_batching_and_what_differs_from_jax():
    """Where some arguments are batched in the primals and others only in the tangents,
    JAX 0.10's JVP rule maps the latter with a vmap of their own and pairs them with the
    former as an outer product (a result of shape (3, 3)); wengert broadcasts them, and
    gives the rule's derivative.  Where nothing of the primal is batched, the primal is
    f's (JAX's: the rule's, since it batches the call whole)."""
    jax = _jax()
    import jax.numpy as jnp
    f, g = _custom(wg, wnp, []), _custom(jax, jnp, [])
    x, y, t = np.array([0.1, 0.2, 0.3]), np.array([1.0, 2.0, 3.0]), np.array([1.0, -0.5, 2.0])
    ours = wg.vmap(lambda a, b, ta: wg.jvp(f, (a, b), (ta, 0.0)))(x, y, t)
    assert_close(ours[0], np.cos(x) * y, rtol=1e-15)
    assert_close(ours[1], -np.sin(x) * y * t, rtol=1e-15)
    theirs = jax.vmap(lambda a, b, ta: jax.jvp(g, (a, b), (ta, 0.0)))(x, y, t)
    assert np.shape(theirs[0]) == (3, 3)            # (JAX 0.10's outer product)
    primal, tangent = wg.vmap(lambda ta: wg.jvp(f, (0.5, 2.0), (ta, 0.0)))(t)
    assert_close(primal, np.full(3, np.sin(0.5) * 2.0), rtol=1e-15)   # f's
    assert_close(tangent, -np.sin(0.5) * 2.0 * t, rtol=1e-15)         # the rule's


def test_custom_vmap_reverse_mode_which_jax_refuses():
    """grad of the function is f's gradient; under vmap, reverse mode is the transpose of
    the rule's forward mode (checked against JAX's forward mode of the same vmap, and by
    the dot-product test), and jacrev of the batch is jacfwd's; central differences of
    the rule's batch agree, to second order."""
    jax = _jax()
    import jax.numpy as jnp
    f, g = _custom(wg, wnp, []), _custom(jax, jnp, [])
    x, y = np.array([0.1, 0.2, 0.3]), np.array([1.0, 2.0, 3.0])
    with pytest.raises(ValueError):
        jax.grad(g)(0.5, 2.0)                       # (JAX: no reverse mode)
    assert_close(wg.grad(f, argnums=(0, 1))(0.5, 2.0), (np.cos(0.5) * 2.0, np.sin(0.5)),
                 rtol=1e-15)
    per_example = wg.vmap(wg.grad(f, argnums=(0, 1)))(x, y)
    their_fwd = jax.vmap(lambda a, b: (jax.jvp(g, (a, b), (1.0, 0.0))[1],
                                       jax.jvp(g, (a, b), (0.0, 1.0))[1]))(x, y)
    _same(per_example, their_fwd, rtol=1e-14)
    _same(wg.vmap(wg.grad(f), (0, None))(x, 2.0),
          jax.vmap(lambda a: jax.jvp(lambda a: g(a, 2.0), (a,), (1.0,))[1])(x), rtol=1e-14)
    batch = wg.vmap(f)
    _same(wg.jacrev(batch)(x, y), jax.jacfwd(jax.vmap(g))(x, y), rtol=1e-14)
    assert_close(wg.jacrev(batch)(x, y), fd_jacobian(lambda a: np.cos(a) * y, x, 1e-6),
                 rtol=1e-8)
    check_grads(batch, x, y, order=2)
    check_grads(lambda a: wg.vmap(wg.grad(f))(a, y), x, order=2)
    check_grads(lambda a: f(a, 2.0), 0.5, order=2)
    # dot-product test: <g, J t> = <J' g, t> of the batched tangent map
    t, ct = RNG.normal(size=3), RNG.normal(size=3)
    forward = wg.jvp(lambda a: batch(a, y), (x,), (t,))[1]
    _, pullback = wg.vjp(lambda a: batch(a, y), x)
    assert abs(ct @ forward - pullback(ct)[0] @ t) < 1e-13
    assert_close(wg.jit(wg.vmap(wg.grad(f)))(x, y), -np.sin(x) * y, rtol=1e-15)
    assert_close(wg.vmap(wg.hessian(f))(x, y), -np.cos(x) * y, rtol=1e-15)


def test_custom_vmap_nested_pytrees_and_rules_that_call_f():
    jax = _jax()
    import jax.numpy as jnp
    for module, np_like in ((wg, wnp), (jax, jnp)):
        calls = []

        @module.custom_batching.custom_vmap
        def total(x):
            return np_like.sum(x)

        @total.def_vmap
        def total_rule(n, in_batched, xs):
            calls.append((n, xs.shape))
            return total(xs) * np_like.ones(n), True   # (f again: the outer vmap's rule)
        out = module.vmap(module.vmap(total))(np.ones((2, 3, 4)))
        assert np.asarray(out).tolist() == [[24.0] * 3] * 2
        assert calls == [(3, (3, 4)), (2, (2, 3, 4))]
        assert np.shape(module.vmap(total)(np.ones((0, 4)))) == (0,)

        @module.custom_batching.custom_vmap
        def pair(d):
            return {"s": d["a"] + d["b"], "p": d["a"] * d["b"]}

        @pair.def_vmap
        def pair_rule(n, in_batched, d):
            calls.append(in_batched)
            return {"s": d["a"] - d["b"], "p": d["a"] * d["b"]}, {"s": True, "p": True}
        got = module.vmap(pair, ({"a": 0, "b": None},))({"a": X[:, 0], "b": 1.0})
        assert_close(got["s"], X[:, 0] - 1, rtol=0)
        assert calls[-1] == [{"a": True, "b": False}]

        @module.custom_batching.custom_vmap
        def first(x):
            return x

        @first.def_vmap
        def first_rule(n, in_batched, xs):
            return xs[0], False                     # (unbatched: every example gets it)
        assert np.asarray(module.vmap(first)(X[:, 0])).tolist() == [X[0, 0]] * 4


def test_sequential_vmap_against_jax():
    jax = _jax()
    import jax.numpy as jnp
    seen = []

    def body(np_like):
        def solve(a, b, c):
            seen.append(np.shape(a))
            return np_like.linalg.solve(a, b) * c
        return solve
    ours = sequential_vmap(body(wnp))
    theirs = jax.custom_batching.sequential_vmap(body(jnp))
    a = np.stack([np.eye(3) * (k + 2) + RNG.normal(size=(3, 3)) * 0.1 for k in range(4)])
    b = RNG.normal(size=(4, 3))
    _same(wg.vmap(ours, (0, 0, None))(a, b, 2.0), jax.vmap(theirs, (0, 0, None))(a, b, 2.0))
    seen.clear()
    wg.vmap(ours, (0, 0, None))(a, b, 2.0)
    assert (3, 3) in seen and (4, 3, 3) not in seen    # (one example at a time)
    _same(wg.jit(wg.vmap(ours, (0, 0, None)))(a, b, 2.0),
          jax.vmap(theirs, (0, 0, None))(a, b, 2.0))
    tb = RNG.normal(size=(4, 3))
    _same(wg.jvp(wg.vmap(ours, (0, 0, None)), (a, b, 2.0), (a * 0, tb, 1.0)),
          jax.jvp(jax.vmap(theirs, (0, 0, None)), (a, b, 2.0), (a * 0, tb, 1.0)))
    # reverse mode (JAX: refused), against central differences
    check_grads(lambda b: wg.vmap(ours, (0, 0, None))(a, b, 2.0), b, order=1)
    check_grads(lambda a: wg.vmap(ours, (0, 0, None))(a, b, 2.0), a, order=1)


def test_custom_vjp_over_custom_vmap_as_jax_documents():
    jax = _jax()
    import jax.numpy as jnp
    results = []
    for module, np_like in ((wg, wnp), (jax, jnp)):
        @module.custom_vjp
        @module.custom_batching.custom_vmap
        def f(x, y):
            return np_like.sin(x) * y

        @f.def_vmap
        def f_vmap_rule(axis_size, in_batched, xs, ys):
            return np_like.cos(xs) * ys, True

        def f_fwd(x, y):
            return f(x, y), (np_like.cos(x), np_like.sin(x), y)

        def f_bwd(res, g):
            cos_x, sin_x, y = res
            return (cos_x * g * y, sin_x * g)
        f.defvjp(f_fwd, f_bwd)
        results.append((module.vmap(f)(np.zeros(3), np.ones(3)),
                        module.grad(f)(0.0, 1.0),
                        module.vmap(module.grad(f))(np.zeros(3), np.ones(3))))
    _same(results[0], results[1], rtol=0)
    assert np.asarray(results[0][0]).tolist() == [1.0, 1.0, 1.0]


def test_custom_vmap_errors():
    x = np.arange(3.0)
    with pytest.raises(AttributeError, match="custom_vmap function 'g' has no vmap rule"):
        def g(v):
            return v
        custom_vmap(g)(1.0)

    def declared(rule):
        f = custom_vmap(lambda v: v * 2)
        f.def_vmap(rule)
        return f
    with pytest.raises(ValueError, match="out and out_batched of different structures"):
        wg.vmap(declared(lambda n, b, xs: (xs, [True])))(x)
    with pytest.raises(ValueError, match="returned an output of structure"):
        wg.vmap(declared(lambda n, b, xs: ((xs, xs), (True, True))))(x)
    with pytest.raises(ValueError, match=r"returned output 0 of shape \(2,\), said to be "
                                         r"batched: f's output 0 has shape \(\), so it must "
                                         r"be \(3,\)"):
        wg.vmap(declared(lambda n, b, xs: (xs[:2], True)))(x)
    with pytest.raises(TypeError, match="must return a pair"):
        wg.vmap(declared(lambda n, b, xs: xs))(x)
    with pytest.raises(TypeError, match="out_batched must hold bools"):
        wg.vmap(declared(lambda n, b, xs: (xs, 1)))(x)
    with pytest.raises(TypeError, match="def_vmap takes the rule"):
        custom_vmap(lambda v: v).def_vmap(3)
    with pytest.raises(TypeError, match="custom_vmap decorates a function"):
        custom_vmap(3)
    with pytest.raises(TypeError, match="must be arrays or numbers"):
        declared(lambda n, b, xs: (xs, True))("text")

    def scaled_by(w):
        f = custom_vmap(lambda v: v * w)
        f.def_vmap(lambda n, b, xs: (xs * w, True))
        return f
    with pytest.raises(ValueError, match="closes over.*pass that value as an argument"):
        wg.grad(lambda w: wg.vmap(scaled_by(w))(x).sum())(2.0)
    assert_close(wg.vmap(scaled_by(2.0))(x), 2 * x, rtol=0)     # (a constant: fine)
    # keyword arguments bind to f's parameters, as in JAX
    f = custom_vmap(lambda a, b=1.0: a * b)
    f.def_vmap(lambda n, batched, a, b: (a * b + 100, True))
    assert f(2.0, b=3.0) == 6.0
    assert_close(wg.vmap(lambda a: f(a, b=3.0))(x), 3 * x + 100, rtol=0)
