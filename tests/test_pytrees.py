"""Classes of one's own as pytree nodes (wengert.tree.register_pytree_node, register_dataclass,
register_pytree_node_class): through grad, jacfwd, hessian, vmap, compile and checkpoint,
against the same computation on plain dicts and against central differences."""
import collections
import dataclasses

import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from wengert.tree import (flatten, unflatten, tree_map, ravel_pytree, register_dataclass,
                          register_pytree_node, register_pytree_node_class)
from fd import assert_close, fd_jacobian

rng = np.random.default_rng(11)


@register_dataclass
@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: np.ndarray
    act: str = dataclasses.field(default="tanh", metadata={"static": True})


class Affine:
    """Registered by functions: the scale is data, the name auxiliary."""

    def __init__(self, scale, shift, name):
        self.scale, self.shift, self.name = scale, shift, name


register_pytree_node(Affine, lambda a: ((a.scale, a.shift), a.name),
                     lambda name, children: Affine(*children, name))


@register_pytree_node_class
class Pair:
    def __init__(self, first, second):
        self.first, self.second = first, second

    def tree_flatten(self):
        return (self.first, self.second), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def _act(name, x):
    return wnp.tanh(x) if name == "tanh" else wnp.maximum(x, 0.0)


def mlp(layers, x):
    for layer in layers:
        x = _act(layer.act, x @ layer.w + layer.b)
    return wnp.sum(x ** 2)


def mlp_dicts(layers, x, acts):
    for layer, act in zip(layers, acts):
        x = _act(act, x @ layer["w"] + layer["b"])
    return wnp.sum(x ** 2)


def _layers():
    return [Layer(rng.normal(size=(3, 4)), rng.normal(size=4)),
            Layer(rng.normal(size=(4, 2)), rng.normal(size=2), act="relu")]


def test_gradient_of_dataclass_parameters_is_the_dicts_gradient_in_the_same_class():
    layers, x = _layers(), rng.normal(size=(5, 3))
    g = wg.grad(mlp)(layers, x)
    assert [type(l) for l in g] == [Layer, Layer] and [l.act for l in g] == ["tanh", "relu"]
    as_dicts = [{"w": l.w, "b": l.b} for l in layers]
    want = wg.grad(mlp_dicts)(as_dicts, x, ["tanh", "relu"])
    for got, w in zip(g, want):
        assert_close(got.w, w["w"], rtol=1e-14, atol=0)
        assert_close(got.b, w["b"], rtol=1e-14, atol=0)
    # and against central differences through the raveled parameters
    v, unravel = ravel_pytree(layers)
    assert_close(ravel_pytree(g)[0], fd_jacobian(lambda v: mlp(unravel(v), x), v, 1e-6),
                 rtol=1e-6, atol=1e-8)


def test_flatten_round_trip_equality_and_repr():
    a = Affine(np.ones(2), 0.5, "first")
    leaves, tree = flatten({"a": a, "p": Pair(1.0, [2.0, 3.0])})
    assert len(leaves) == 5 and repr(tree) == "{'a': Affine['first'](*, *), 'p': Pair(*, [*, *])}"
    back = unflatten(tree, [10.0 * np.asarray(x) for x in leaves])
    assert isinstance(back["a"], Affine) and back["a"].name == "first"
    assert float(back["p"].second[1]) == 30.0
    assert flatten(Affine(1.0, 2.0, "first"))[1] == flatten(Affine(3.0, 4.0, "first"))[1]
    assert flatten(Affine(1.0, 2.0, "first"))[1] != flatten(Affine(1.0, 2.0, "other"))[1]
    # (inside a list of leaves, the fast path looks into a registered class too)
    assert len(flatten([1.0, Pair(2.0, 3.0)])[0]) == 3
    doubled = tree_map(lambda x: 2 * x, Pair(1.0, Affine(2.0, 3.0, "n")))
    assert doubled.second.shift == 6.0 and doubled.second.name == "n"


def test_ordered_and_default_dicts_are_nodes_as_in_jax():
    # (they were leaves: grad and vmap refused them, tree_map called f on the whole dict,
    # and a scan carry of one crashed)
    from collections import OrderedDict, defaultdict
    od = OrderedDict([("w", np.array([1.0, 2.0])), ("b", 0.5)])
    leaves, tree = flatten(od)
    assert [np.size(x) for x in leaves] == [2, 1]          # (insertion order, as JAX's)
    back = unflatten(tree, leaves)
    assert type(back) is OrderedDict and list(back) == ["w", "b"]
    g = wg.grad(lambda p: wnp.sum(p["w"]) * p["b"])(od)
    assert type(g) is OrderedDict and list(g) == ["w", "b"]
    assert_close(g["w"], [0.5, 0.5]) and g["b"] == pytest.approx(3.0)
    dd = defaultdict(float, {"w": 1.0, "a": 2.0})
    g = wg.grad(lambda p: p["w"] * p["a"] ** 2)(dd)
    assert type(g) is defaultdict and g.default_factory is float and g == {"w": 4.0, "a": 4.0}
    assert tree_map(lambda x: 2 * x, od)["b"] == 1.0
    carry = wg.grad(lambda a: wg.scan(lambda c, x: (OrderedDict(w=c["w"] * a), None),
                                      OrderedDict(w=1.0), np.ones(3))[0]["w"])(2.0)
    assert carry == pytest.approx(12.0)


def test_a_structure_error_shows_the_auxiliary_data_that_changed():
    # (both structures printed as "Layer(*, *)" and "OrderedDict(*, *)": the error could
    # not say what differed)
    def step(layer, x):
        return Layer(layer.w * x, layer.b, act="relu"), None
    with pytest.raises(TypeError, match=r"given, Layer\[\('tanh',\)\]\(\*, \*\); it "
                       r"returned Layer\[\('relu',\)\]\(\*, \*\)"):
        wg.grad(lambda k: wg.scan(step, Layer(k, 1.0), np.ones(3))[0].w)(1.0)

    def reorder(c, x):
        return collections.OrderedDict([("b", c["b"]), ("a", c["a"] + x)]), None
    with pytest.raises(TypeError, match=r"OrderedDict\[\('a', 'b'\)\]\(\*, \*\); it returned "
                       r"OrderedDict\[\('b', 'a'\)\]"):
        wg.scan(reorder, collections.OrderedDict([("a", 0.0), ("b", 1.0)]), np.ones(3))


def test_forward_mode_hessian_and_jvp_through_a_registered_class():
    f = lambda a: wnp.sum(wnp.sin(a.scale) * a.shift ** 2)
    a = Affine(rng.normal(size=3), 0.7, "s")
    h = wg.hessian(f)(a)                    # a tree of trees: h.scale.shift = ∂²f/∂scale∂shift
    assert_close(h.scale.shift, 2 * 0.7 * np.cos(a.scale), rtol=1e-14)
    assert_close(h.shift.shift, 2 * np.sum(np.sin(a.scale)), rtol=1e-14)
    jac = wg.jacfwd(lambda a: a.scale * a.shift)(a)
    assert isinstance(jac, Affine) and jac.name == "s"
    assert_close(jac.scale, 0.7 * np.eye(3), rtol=1e-15)
    t = Affine(np.ones(3), 1.0, "s")
    out, tangent = wg.jvp(lambda a: Affine(a.scale * 2, a.shift, a.name + "!"), (a,), (t,))
    assert out.name == tangent.name == "s!" and float(tangent.shift) == 1.0


def test_compile_takes_and_returns_registered_classes_and_retraces_on_new_aux():
    layers, x = _layers(), rng.normal(size=(5, 3))
    compiled = wg.compile(wg.grad(mlp), layers, x)
    for a, b in zip(compiled(layers, x), wg.grad(mlp)(layers, x)):
        assert type(a) is Layer and a.act == b.act
        assert_close(a.w, b.w, rtol=1e-12, atol=1e-15)
    # the activation is auxiliary data: another one is another trace, never the old one
    swapped = [Layer(l.w, l.b, act="relu" if l.act == "tanh" else "tanh") for l in layers]
    assert_close(compiled(swapped, x)[0].w, wg.grad(mlp)(swapped, x)[0].w, rtol=1e-12)
    assert compiled(swapped, x)[0].act == "relu"


def test_a_registered_namedtuple_flattens_by_its_own_rule_as_in_jax():
    # (JAX's optimizers register their state, a namedtuple, so that only its first field
    # holds leaves; the registration comes before the namedtuple rule there and here)
    Tagged = collections.namedtuple("Tagged", "value tag")
    register_pytree_node(Tagged, lambda t: ((t.value,), t.tag),
                         lambda tag, children: Tagged(children[0], tag))
    leaves, tree = flatten(Tagged(np.ones(2), "a"))
    assert len(leaves) == 1 and unflatten(tree, [np.zeros(2)]).tag == "a"
    g = wg.compile(wg.grad(lambda t: wnp.sum(t.value ** 2)))(Tagged(np.ones(2), "a"))
    assert type(g) is Tagged and g.tag == "a" and g.value.tolist() == [2.0, 2.0]
    jax = pytest.importorskip("jax")
    jax.tree_util.register_pytree_node(Tagged, lambda t: ((t.value,), t.tag),
                                       lambda tag, children: Tagged(children[0], tag))
    assert len(jax.tree.leaves(Tagged(np.ones(2), "a"))) == 1


def test_vmap_over_a_field_with_an_instance_as_in_axes():
    xs = rng.normal(size=(4, 3))
    a = Affine(rng.normal(size=(4, 3)), 2.0, "batch")
    f = lambda a: a.scale * a.shift
    got = wg.vmap(f, in_axes=(Affine(0, None, "batch"),))(a)
    assert_close(got, 2.0 * a.scale)
    per_example = wg.vmap(wg.grad(lambda a, x: wnp.sum(a.scale * x) * a.shift),
                          in_axes=(Affine(0, None, "batch"), 0))(a, xs)
    assert isinstance(per_example, Affine)
    assert_close(per_example.scale, 2.0 * xs)
    with pytest.raises(ValueError, match="in_axes .* does not match"):
        wg.vmap(f, in_axes=({"scale": 0},))(a)


def test_checkpoint_and_value_and_grad_keep_the_class():
    p = Pair(rng.normal(size=3), 1.5)
    f = wg.checkpoint(lambda p: Pair(wnp.sin(p.first) * p.second, p.second))
    value, g = wg.value_and_grad(lambda p: wnp.sum(f(p).first))(p)
    assert isinstance(g, Pair)
    assert_close(g.first, np.cos(p.first) * 1.5, rtol=1e-14)
    assert_close(g.second, np.sum(np.sin(p.first)), rtol=1e-14)


def test_clear_errors():
    with pytest.raises(ValueError, match="Affine is already a pytree node"):
        register_pytree_node(Affine, lambda a: ((), None), lambda aux, c: None)
    with pytest.raises(ValueError, match="dict is already a pytree node"):
        register_pytree_node(dict, lambda a: ((), None), lambda aux, c: None)
    with pytest.raises(TypeError, match="takes a class"):
        register_pytree_node(Affine(1.0, 2.0, "x"), lambda a: ((), None), lambda aux, c: None)

    class Plain:
        def __init__(self, w):
            self.w = w
    with pytest.raises(TypeError, match="not a dataclass, so data_fields and meta_fields"):
        register_dataclass(Plain)
    with pytest.raises(TypeError, match="register_pytree_node or register_dataclass"):
        wg.grad(lambda p: p.w)(Plain(1.0))
    with pytest.raises(TypeError, match="register its class with wengert.tree"):
        wg.compile(lambda x: Plain(x * 2), 1.0)(1.0)


def _chain(depth, leaf, extra):
    """A pytree nested `depth` deep: (((leaf, extra), extra), ...) with a dict and a
    registered class on the way, as a linked list of tuples would be."""
    t = leaf
    for i in range(depth):
        t = (t, extra) if i % 3 else ({"next": t, "w": extra} if i % 2 else Pair(t, extra))
    return t


def _walk(t):
    """The sum of squares of the `extra` leaves and the sum of the innermost leaf of a
    `_chain`, by a loop."""
    s = 0.0
    while isinstance(t, (tuple, dict, Pair)):
        if isinstance(t, dict):
            t, e = t["next"], t["w"]
        elif isinstance(t, Pair):
            t, e = t.first, t.second
        else:
            t, e = t
        s = s + wnp.sum(e * e)
    return s + wnp.sum(t)


def test_a_pytree_nested_thousands_deep_flattens_and_differentiates_without_recursion():
    depth = 2000                        # (the recursive walks stopped near 450)
    leaf, extra = rng.normal(size=3), rng.normal(size=2)
    t = _chain(depth, leaf, extra)
    leaves, tree = flatten(t)
    assert len(leaves) == tree.num_leaves == depth + 1
    assert tree == flatten(_chain(depth, leaf, extra))[1]
    assert hash(tree) == hash(flatten(_chain(depth, leaf, extra))[1])
    assert tree != flatten(_chain(depth - 1, leaf, extra))[1]
    assert tree != flatten(_chain(depth, (leaf,), extra))[1]     # differs at the bottom
    assert repr(tree).count("*") == depth + 1
    back = unflatten(tree, leaves)
    assert flatten(back)[1] == tree and _walk(back) == _walk(t)
    doubled = tree_map(lambda v: 2 * v, t)
    assert_close(_walk(doubled), 4 * (_walk(t) - np.sum(leaf)) + 2 * np.sum(leaf))
    # the gradient is 2·extra at every level and ones at the bottom
    g = wg.grad(_walk)(t)
    g_leaves = flatten(g)[0]
    assert flatten(g)[1] == tree
    assert_close(g_leaves[0], np.ones(3))
    assert all(np.allclose(v, 2 * extra) for v in g_leaves[1:])
    assert_close(wg.compile(_walk)(t), _walk(t))
    out = wg.compile(lambda t: tree_map(lambda v: v + 1.0, t))(t)
    assert flatten(out)[1] == tree and all(
        np.allclose(a, b + 1.0) for a, b in zip(flatten(out)[0], leaves))


def test_jax_tree_names_map_leaves_structure_reduce_all():
    # `import wengert as jax` then jax.tree.map(...), JAX's newer spelling of tree_util
    jax = wg
    params = {"w": np.array([0.5, -1.0]), "b": (0.3, None)}
    assert jax.tree.leaves(params) == wg.tree.tree_leaves(params)
    assert jax.tree.structure(params) == wg.tree.tree_structure({"b": (0, None), "w": 0})
    leaves, treedef = jax.tree.flatten(params)
    assert jax.tree.unflatten(treedef, leaves)["b"] == (0.3, None)
    assert jax.tree.all({"a": True, "b": [1]}) and not jax.tree.all([True, 0])
    assert jax.tree.reduce(max, [3, (1, 7)]) == 7

    def loss(p):
        squares = jax.tree.map(lambda v: wnp.sum(v ** 2), p)
        return jax.tree.reduce(lambda a, b: a + b, squares, 0.0) * p["b"][0]

    g = wg.grad(loss)(params)
    leaves, unravel = ravel_pytree(params)
    want = fd_jacobian(lambda v: loss(unravel(v)), leaves, 1e-6)
    assert_close(ravel_pytree(g)[0], want)
    step = jax.tree.map(lambda p, g: p - 0.1 * g, params, g)
    assert step["b"][1] is None and step["w"].shape == (2,)


def test_is_leaf_keeps_nones_and_whole_subtrees_as_jax_does():
    from wengert.tree import tree_leaves, tree_structure, tree_reduce, tree_all
    tree = {"a": (1.0, 2.0), "b": [None, 3.0], "c": Pair(4.0, None)}
    assert tree_leaves(tree) == [1.0, 2.0, 3.0, 4.0]
    assert tree_leaves(tree, is_leaf=lambda x: x is None) == [1.0, 2.0, None, 3.0, 4.0, None]
    pairs = tree_leaves(tree, is_leaf=lambda x: isinstance(x, (tuple, Pair)))
    assert pairs[0] == (1.0, 2.0) and pairs[1] == 3.0 and isinstance(pairs[2], Pair)
    assert tree_leaves(tree, is_leaf=lambda x: x is tree) == [tree]
    filled = tree_map(lambda v: -1.0 if v is None else v, tree, is_leaf=lambda x: x is None)
    assert tree_leaves(filled) == [1.0, 2.0, -1.0, 3.0, 4.0, -1.0]
    assert tree_structure(tree, is_leaf=lambda x: x is None) != tree_structure(tree)
    assert tree_reduce(lambda n, v: n + 1, tree, 0, is_leaf=lambda x: isinstance(x, tuple)) == 3
    assert tree_all(tree, is_leaf=lambda x: x is None) is False      # (None is falsy)
    # a tuple kept whole goes to fn whole; rebuilt in the same structure
    swapped = tree_map(lambda v: v[::-1] if isinstance(v, tuple) else v, tree,
                       is_leaf=lambda x: isinstance(x, tuple))
    assert swapped["a"] == (2.0, 1.0) and swapped["b"] == [None, 3.0]
    # and gradients of the result are unchanged by how the tree was walked
    g = wg.grad(lambda t: t["a"][0] * t["a"][1] + t["b"][1])(
        tree_map(lambda v: v, {"a": (1.0, 2.0), "b": [None, 3.0]}, is_leaf=lambda x: x is None))
    assert g == {"a": (2.0, 1.0), "b": [None, 1.0]}


# ---- tree_map over trees the first is a prefix of; key paths -----------------------------------
Point = collections.namedtuple("Point", "x y")


def _mixed_tree():
    """One of every kind of node, with keys of several kinds, and a None."""
    return {"b": [1.0, (2.0, None, 3.0)], "a": collections.OrderedDict(z=4.0, y=5.0),
            "p": Point(6.0, 7.0), "d": collections.defaultdict(list, {2: 8.0, 1: 9.0}),
            "layer": Layer(np.ones(2), 10.0), "aff": Affine(11.0, 12.0, "n"), "n": None}


def test_tree_map_hands_fn_the_subtree_of_each_leaf_of_the_first_tree():
    from wengert.tree import tree_structure
    scales = {"w": 2.0, "b": 10.0}
    grads = {"w": [1.0, (2.0, 3.0)], "b": {"u": 4.0}}
    out = tree_map(lambda s, g: tree_map(lambda v: s * v, g), scales, grads)
    assert out == {"w": [2.0, (4.0, 6.0)], "b": {"u": 40.0}}
    # the prefix's leaves meet whole subtrees, Nones and registered classes included
    seen = tree_map(lambda a, b: b, [1.0, 2.0, 3.0], [None, Point(1.0, 2.0), Layer(1.0, 2.0)])
    assert seen[0] is None and seen[1] == Point(1.0, 2.0) and isinstance(seen[2], Layer)
    # the same structure still maps leaf by leaf; TreeDef.flatten_up_to is the walk itself
    assert tree_map(lambda a, b: a - b, [3.0, (2.0,)], [1.0, (1.0,)]) == [2.0, (1.0,)]
    assert tree_structure([0, (0, 0)]).flatten_up_to([[1], ({"a": 2}, None)]) == \
        [[1], {"a": 2}, None]
    # through a gradient: one learning rate per layer for trees of parameters
    params = {"l1": [np.ones(2), 0.5], "l2": [np.full(2, 2.0), -1.0]}

    def loss(p):
        return wnp.sum(p["l1"][0] * p["l2"][0]) + p["l1"][1] * p["l2"][1]
    g = wg.grad(loss)(params)
    rates = {"l1": 0.1, "l2": 0.01}
    stepped = tree_map(lambda r, ps, gs: tree_map(lambda p, d: p - r * d, ps, gs),
                       rates, params, g)
    assert_close(stepped["l1"][0], 1.0 - 0.1 * 2.0)
    assert_close(stepped["l2"][1], -1.0 - 0.01 * 0.5)


@pytest.mark.parametrize("first, other, where, says", [
    ([1, 2], [3, 4, 5], "at the root", "a list of 2 and tree 2 has a list of 3"),
    ({"a": 1}, {"b": 1}, "at the root", "a dict with keys ('a',) and tree 2 has a dict with "
                                        "keys ('b',)"),
    ((1, 2), [1, 2], "at the root", "a tuple of 2 and tree 2 has a list of 2"),
    ([None, 1], [2, 1], "at [0]", "None and tree 2 has a leaf"),
    ({"a": [Point(1, 2)]}, {"a": [(1, 2)]}, "at ['a'][0]", "a Point (namedtuple) of 2"),
    ([Affine(1, 2, "u")], [Affine(1, 2, "v")], "at [0]", "a Affine of 2 ['u']"),
    ([1, (2, 3)], [1, 2], "at [1]", "a tuple of 2 and tree 2 has a leaf"),
])
def test_tree_map_names_where_the_trees_part(first, other, where, says):
    with pytest.raises(ValueError) as e:
        tree_map(lambda a, b: a, first, other)
    msg = str(e.value)
    assert msg.startswith("tree_map: tree 2 does not have the structure of the first tree")
    assert where in msg and says in msg


def test_key_paths_of_every_kind_of_node():
    from wengert.tree import (DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey, keystr,
                              tree_flatten_with_path, tree_leaves)
    tree = _mixed_tree()
    pairs, treedef = tree_flatten_with_path(tree)
    assert [leaf for _, leaf in pairs] == tree_leaves(tree)
    assert treedef == flatten(tree)[1]
    paths = {keystr(p): leaf for p, leaf in pairs}
    assert paths["['b'][1][2]"] == 3.0               # the None's place is kept in the index
    assert paths["['a']['z']"] == 4.0 and list(paths).index("['a']['z']") == 0
    assert paths["['d'][1]"] == 9.0                  # a defaultdict in sorted key order
    assert paths["['p'].y"] == 7.0 and paths["['layer'].b"] == 10.0
    assert paths["['aff'][<flat index 1>]"] == 12.0
    path = next(p for p, _ in pairs if keystr(p) == "['b'][0]")
    assert path == (DictKey("b"), SequenceKey(0)) and hash(path) == hash(
        (DictKey("b"), SequenceKey(0)))
    assert repr(path) == "(DictKey(key='b'), SequenceKey(idx=0))"
    assert keystr(path, simple=True, separator="/") == "b/0"
    assert GetAttrKey("w") != DictKey("w") and FlattenedIndexKey(0) != SequenceKey(0)
    # is_leaf keeps subtrees whole, and Nones, as flatten does
    kept = tree_flatten_with_path([1.0, None, (2.0, 3.0)],
                                  is_leaf=lambda x: x is None or type(x) is tuple)[0]
    assert [(keystr(p), v) for p, v in kept] == [("[0]", 1.0), ("[1]", None),
                                                 ("[2]", (2.0, 3.0))]


def test_key_paths_agree_with_jax():
    jtu = pytest.importorskip("jax.tree_util")
    from wengert.tree import keystr, tree_flatten_with_path
    tree = {"b": [1.0, (2.0, None, 3.0)], "a": collections.OrderedDict(z=4.0, y=5.0),
            "p": Point(6.0, 7.0), "d": collections.defaultdict(list, {2: 8.0, 1: 9.0})}
    ours = [(keystr(p), v) for p, v in tree_flatten_with_path(tree)[0]]
    theirs = [(jtu.keystr(p), v) for p, v in jtu.tree_flatten_with_path(tree)[0]]
    assert ours == theirs
    ours = [keystr(p, simple=True, separator="/") for p, _ in tree_flatten_with_path(tree)[0]]
    assert ours == [jtu.keystr(p, simple=True, separator="/")
                    for p, _ in jtu.tree_flatten_with_path(tree)[0]]


def test_tree_map_with_path_masks_weight_decay_by_name():
    from wengert.tree import keystr, tree_map_with_path
    params = {"dense": {"w": np.full(3, 2.0), "bias": np.ones(3)}, "scale": 4.0}

    def loss(p):
        return wnp.sum(p["dense"]["w"] ** 2) + wnp.sum(p["dense"]["bias"]) * p["scale"]
    g = wg.grad(loss)(params)
    decayed = tree_map_with_path(
        lambda path, p, d: p - 0.1 * d - (0.0 if "bias" in keystr(path) else 0.01 * p),
        params, g)
    assert_close(decayed["dense"]["w"], 2.0 - 0.1 * 4.0 - 0.02)
    assert_close(decayed["dense"]["bias"], 1.0 - 0.1 * 4.0)
    assert_close(decayed["scale"], 4.0 - 0.1 * 3.0 - 0.04)
    with pytest.raises(ValueError, match="tree_map_with_path: tree 2 .* at \\['dense'\\]"):
        tree_map_with_path(lambda path, a, b: a, params, {"dense": 1.0, "scale": 2.0})


def test_register_pytree_with_keys_names_its_children():
    from wengert.tree import (GetAttrKey, keystr, register_pytree_with_keys,
                              tree_flatten_with_path)

    class Conv:
        def __init__(self, kernel, bias):
            self.kernel, self.bias = kernel, bias
    register_pytree_with_keys(
        Conv, lambda c: (((GetAttrKey("kernel"), c.kernel), (GetAttrKey("bias"), c.bias)), None),
        lambda aux, children: Conv(*children))
    c = Conv(np.array([1.0, 2.0]), 0.5)
    assert [keystr(p) for p, _ in tree_flatten_with_path({"c": c})[0]] == \
        ["['c'].kernel", "['c'].bias"]
    g = wg.grad(lambda c: wnp.sum(c.kernel) * c.bias)(c)
    assert isinstance(g, Conv) and g.bias == 3.0
    assert_close(g.kernel, np.full(2, 0.5))


def test_paths_and_prefixes_of_a_tree_nested_thousands_deep():
    from wengert.tree import tree_flatten_with_path, tree_structure
    deep = 1.0
    for i in range(5000):
        deep = (deep, float(i))
    pairs, _ = tree_flatten_with_path(deep)
    assert len(pairs) == 5001 and len(pairs[0][0]) == 5000
    # a prefix (5000 pairs whose innermost is a leaf) of a tree one level deeper
    deeper = ([1.0, 2.0], 0.0)
    prefix = 1.0
    for i in range(4999):
        deeper, prefix = (deeper, 0.0), (prefix, 0.0)
    prefix = (prefix, 0.0)
    assert tree_structure(prefix).flatten_up_to(deeper)[0] == [1.0, 2.0]


def test_vmap_in_axes_as_deep_as_its_tree_thousands_deep():
    # in_axes is matched to the arguments with a stack, not recursion
    x = np.arange(6.0).reshape(2, 3)
    tree, axes = (x, x[0]), (1, None)
    for _ in range(5000):
        tree, axes = [tree], [axes]
    out = wg.vmap(lambda t: t, in_axes=(axes,))(tree)
    for _ in range(5000):
        out = out[0]
    np.testing.assert_array_equal(out[0], x.T)
    np.testing.assert_array_equal(out[1], np.broadcast_to(x[0], (3, 3)))


def test_wengert_tree_util_is_jax_tree_util_by_name():
    import wengert.tree_util as tu
    assert wg.tree_util is tu and wg.tree.map_with_path is tu.tree_map_with_path
    assert tu.tree_map(lambda x: x + 1, {"a": 1}) == {"a": 2}
    jtu = pytest.importorskip("jax.tree_util")
    missing = [n for n in tu.__all__ if not hasattr(jtu, n)]
    assert missing == []


# ---- the rest of jax.tree_util, against JAX's own answers ---------------------------------------
def _jax_and_ours():
    jax = pytest.importorskip("jax")
    import wengert.tree as ours
    return jax, ours


def test_treedef_methods_match_jax():
    jax, ours = _jax_and_ours()
    for tree in ({"a": 1, "b": (2, 3)}, [1, None, (2,)], (), 1.0):
        mine, theirs = ours.structure(tree), jax.tree.structure(tree)
        assert mine.num_nodes == theirs.num_nodes
        assert [str(c) for c in mine.children()] == \
            [str(c).replace("PyTreeDef(", "")[:-1] for c in theirs.children()]
        leaves = list(range(mine.num_leaves))
        assert mine.unflatten(leaves) == theirs.unflatten(leaves)
        data = mine.node_data()
        assert (data is None) == (theirs.node_data() is None)
        if data is not None:
            assert data[0] is theirs.node_data()[0]
            assert data[1] == theirs.node_data()[1]
    layer = ours.structure(Layer(1.0, 2.0))
    assert layer.num_nodes == 3 and layer.node_data() == (Layer, ("tanh",))
    inner = ours.structure((0, 0))
    composed = ours.structure({"a": 0, "b": [0, 0]}).compose(inner)
    assert composed == ours.structure({"a": (0, 0), "b": [(0, 0), (0, 0)]})
    assert composed.num_leaves == 6
    with pytest.raises(TypeError, match="compose takes a TreeDef"):
        inner.compose((0, 0))


def test_transpose_broadcast_and_reductions_match_jax():
    jax, ours = _jax_and_ours()
    per_example = [{"w": 1.0, "b": (2.0, 3.0)}, {"w": 4.0, "b": (5.0, 6.0)}]
    outer, inner = ours.structure([0, 0]), ours.structure(per_example[0])
    got = ours.transpose(outer, inner, per_example)
    want = jax.tree.transpose(jax.tree.structure([0, 0]), jax.tree.structure(per_example[0]),
                              per_example)
    assert got == want == {"w": [1.0, 4.0], "b": ([2.0, 5.0], [3.0, 6.0])}
    assert ours.transpose(outer, None, per_example) == got
    assert ours.transpose(got and ours.structure({"w": 0, "b": (0, 0)}), outer, got) == \
        per_example
    with pytest.raises(ValueError):
        ours.transpose(outer, ours.structure((0, 0, 0)), [(1, 2), (3, 4)])
    prefix, full = [1, {"a": 2}], [(3, 4), {"a": [5, None, 6]}]
    assert ours.broadcast(prefix, full) == jax.tree.broadcast(prefix, full)
    values = [float(v) for v in rng.normal(size=11)]
    order = []
    total = ours.reduce_associative(lambda a, b: order.append(1) or a + b, values)
    assert total == pytest.approx(sum(values), rel=1e-14) and len(order) == 10
    assert ours.reduce_associative(max, {"x": 3, "y": (7, 5)}) == \
        jax.tree.reduce_associative(max, {"x": 3, "y": (7, 5)})
    assert ours.reduce_associative(max, [], identity=0) == 0
    with pytest.raises(TypeError, match="needs identity"):
        ours.reduce_associative(max, [])


def test_one_level_and_predicates_match_jax():
    jax, ours = _jax_and_ours()
    jtu = jax.tree_util
    for tree in ({"a": 1, "b": (2, 3)}, [1, (2,)], None, collections.OrderedDict(z=1, a=2)):
        (children, aux), (their_children, their_aux) = (ours.flatten_one_level(tree),
                                                        jtu.flatten_one_level(tree))
        assert list(children) == list(their_children) and aux == their_aux
        assert [(str(k), v) for k, v in ours.flatten_one_level_with_keys(tree)[0]] == \
            [(str(k), v) for k, v in jtu.flatten_one_level_with_keys(tree)[0]]
    with pytest.raises(ValueError, match="a leaf .int. has no children"):
        ours.flatten_one_level(1)
    for items in ([1, 2.0, "a"], [1, (2,)], [None], []):
        assert ours.all_leaves(items) == jtu.all_leaves(items)
    assert ours.all_leaves([(1,)], is_leaf=lambda x: isinstance(x, tuple))
    for typ in (tuple, dict, float, np.ndarray, type(None), collections.OrderedDict):
        assert ours.is_tree_node(typ) == jtu.is_tree_node(typ), typ
    assert ours.is_tree_node(Layer)         # (registered here, not with JAX)
    a, b = ours.structure([0]), ours.structure({"k": 0})
    assert ours.treedef_tuple([a, b]) == ours.structure(([0], {"k": 0}))
    assert ours.treedef_children(ours.treedef_tuple([a, b])) == [a, b]
    assert ours.treedef_is_leaf(ours.structure(1.0)) and not ours.treedef_is_leaf(a)


def test_partial_is_a_pytree_through_transformations():
    from wengert.tree_util import Partial
    w = rng.normal(size=3)
    model = Partial(lambda w, x, scale=1.0: scale * wnp.tanh(w @ x), w, scale=2.0)
    x = rng.normal(size=3)
    assert flatten(model)[0][0] is w and flatten(model)[0][1] == 2.0
    apply = lambda m, x: m(x)
    assert_close(wg.jit(apply)(model, x), model(x), rtol=1e-15)
    g = wg.grad(apply)(model, x)
    assert isinstance(g, Partial) and g.func is model.func
    want = 2.0 * (1 - np.tanh(w @ x) ** 2) * x
    assert_close(g.args[0], want, rtol=1e-12)
    assert_close(g.keywords["scale"], np.tanh(w @ x), rtol=1e-12)
    out = wg.vmap(apply, in_axes=(None, 0))(model, np.stack([x, -x]))
    assert_close(out, [model(x), model(-x)], rtol=1e-14)


def test_register_static_and_static_fields():
    from wengert.tree import register_static, static

    @register_static
    class Mode:
        def __init__(self, name):
            self.name = name

        def __eq__(self, other):
            return type(other) is Mode and other.name == self.name

        def __hash__(self):
            return hash(self.name)

    f = lambda x, mode: wnp.sin(x) if mode.name == "sin" else wnp.cos(x)
    assert flatten((1.0, Mode("sin")))[0] == [1.0]
    assert_close(wg.grad(f)(0.3, Mode("sin")), np.cos(0.3), rtol=1e-15)
    assert_close(wg.jit(f)(0.3, Mode("cos")), np.cos(0.3), rtol=1e-15)

    @register_dataclass
    @dataclasses.dataclass
    class Op:
        x: float
        kind: str = static(default="add", metadata={"doc": "which"})
    assert flatten(Op(2.0))[0] == [2.0]
    assert dataclasses.fields(Op)[1].metadata == {"doc": "which", "static": True}
    assert wg.grad(lambda o: o.x ** 2)(Op(3.0, "mul")) == Op(6.0, "mul")


def test_register_pytree_with_keys_class_paths():
    from wengert.tree import (register_pytree_with_keys_class, GetAttrKey, keystr,
                              tree_flatten_with_path)

    @register_pytree_with_keys_class
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def tree_flatten_with_keys(self):
            return ((GetAttrKey("a"), self.a), (GetAttrKey("b"), self.b)), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)
    paths = [keystr(p) for p, _ in tree_flatten_with_path({"p": Pair(1.0, 2.0)})[0]]
    assert paths == ["['p'].a", "['p'].b"]
    assert wg.grad(lambda p: p.a * p.b)(Pair(2.0, 5.0)).b == 2.0
