"""Pytrees: nested tuples, lists and dicts whose leaves are numbers, arrays or traced values.

As in JAX, ``None`` is an empty subtree, dicts are flattened in sorted key order (an
``OrderedDict`` in its own order), namedtuples keep their type, and classes of your own
join with `register_pytree_node` (or `register_dataclass`, `register_pytree_node_class`).
Keys that do not compare with each other (``{1: x, "a": y}``) are ordered by kind first
(numbers, then other types by type name), then by value within a kind, or by ``repr``
where even those do not compare (`dict_keys`).  The order never depends on insertion
order, so two dicts with the same keys flatten alike.

Example:
    >>> from wengert.tree import flatten, unflatten
    >>> leaves, tree = flatten({"b": (1.0, 2.0), "a": [3.0]})
    >>> leaves
    [3.0, 1.0, 2.0]
    >>> unflatten(tree, [30.0, 10.0, 20.0])
    {'a': [30.0], 'b': (10.0, 20.0)}
"""
from __future__ import annotations

import builtins
import collections
import functools

import numpy as np

LEAF = "*"
HELD = "held"
CUSTOM = "custom"


class TreeDef:
    """The structure of a pytree without its leaves.

    Its walks (==, hash, repr, `num_leaves`) are loops over an explicit stack, as are
    `flatten` and `unflatten`: a pytree nested thousands deep (a linked list of tuples)
    works like any other.
    """

    __slots__ = ("kind", "meta", "subtrees", "_num_leaves", "flat", "_hash")

    def __init__(self, kind, meta, children, flat=False):
        self.kind = kind            # LEAF, "none", "tuple", "list", "dict", "namedtuple",
        #                             CUSTOM, or HELD (a value held in the structure, no leaf)
        self.meta = meta            # dict keys, the namedtuple type, HELD's value, or
        #                             CUSTOM's (class, auxiliary data)
        self.subtrees = children
        self._num_leaves = len(children) if flat else None
        self.flat = flat            # a tuple or list of leaves only (the common tree)
        self._hash = None

    def __eq__(self, other):
        if self is other:
            return True
        if not isinstance(other, TreeDef):
            return False
        if self.flat and other.flat:            # (the common tree: no walk)
            return self.kind == other.kind and len(self.subtrees) == len(other.subtrees)
        pairs = [(self, other)]
        while pairs:
            a, b = pairs.pop()
            if a is b:
                continue
            if a.kind != b.kind or len(a.subtrees) != len(b.subtrees):
                return False
            if a.kind == HELD:
                if not _same_value(a.meta, b.meta):
                    return False
            elif a.kind == CUSTOM:      # (auxiliary data compares as held values do)
                if not (a.meta[0] is b.meta[0] and _same_value(a.meta[1], b.meta[1])):
                    return False
            elif a.meta != b.meta:
                return False
            pairs.extend(zip(a.subtrees, b.subtrees))
        return True

    def __hash__(self):
        if self._hash is None:
            for d in _bottom_up(self, "_hash"):
                d._hash = hash((d.kind, tuple(c._hash for c in d.subtrees)))
        return self._hash

    @property
    def num_leaves(self) -> int:
        if self._num_leaves is None:
            for d in _bottom_up(self, "_num_leaves"):
                d._num_leaves = 1 if d.kind == LEAF else sum(
                    c._num_leaves for c in d.subtrees)
        return self._num_leaves

    def flatten_up_to(self, tree) -> list:
        """The subtrees of `tree` where this structure has its leaves, in order: this
        structure must be `tree`'s or a prefix of it (JAX's ``flatten_up_to``).

        Example:
            >>> flatten([1.0, 2.0])[1].flatten_up_to([(3.0, 4.0), {"a": 5.0}])
            [(3.0, 4.0), {'a': 5.0}]
        """
        return _up_to(self, tree, "flatten_up_to", "the tree", "the TreeDef")

    # JAX's PyTreeDef methods
    def children(self) -> list:
        """The structures of the root's children, in order (JAX's ``children()``).

        Example:
            >>> flatten({"a": 1.0, "b": (2.0, 3.0)})[1].children()
            [*, (*, *)]
        """
        return list(self.subtrees)

    @property
    def num_nodes(self) -> int:
        """The nodes of the structure, its leaves and itself included (JAX's).

        Example:
            >>> flatten({"a": 1.0, "b": (2.0, 3.0)})[1].num_nodes
            5
        """
        return len(_bottom_up(self))

    def unflatten(self, leaves):
        """The pytree of this structure with `leaves` (JAX's ``treedef.unflatten``).

        Example:
            >>> flatten({"a": 1.0, "b": (2.0, 3.0)})[1].unflatten([4, 5, 6])
            {'a': 4, 'b': (5, 6)}
        """
        return unflatten(self, leaves)

    def node_data(self):
        """``(type, auxiliary data)`` of the root node, None for a leaf (JAX's): a dict's
        keys, a registered class's aux_data, None for a tuple or a list.

        Example:
            >>> flatten({"a": 1.0, "b": 2.0})[1].node_data()
            (<class 'dict'>, ['a', 'b'])
        """
        if self.kind == LEAF:
            return None
        if self.kind == "dict":
            return dict, list(self.meta)
        if self.kind == CUSTOM:
            return self.meta
        if self.kind == HELD:
            return type(self.meta), self.meta
        types = {"none": type(None), "tuple": tuple, "list": list}
        return (types[self.kind], None) if self.kind in types else (self.meta, None)

    def compose(self, inner):
        """This structure with each of its leaves replaced by the structure `inner` (JAX's
        ``outer.compose(inner)``).

        Example:
            >>> flatten([1, 2])[1].compose(flatten((0, 0))[1])
            [(*, *), (*, *)]
        """
        if not isinstance(inner, TreeDef):
            raise TypeError(f"compose takes a TreeDef, got {type(inner).__name__}")
        return inner if self.kind == LEAF else _build(self, iter([inner] * self.num_leaves),
                                                      _rebuild)

    def __repr__(self):
        shown = {}
        for d in _bottom_up(self):
            shown[id(d)] = d._repr([shown[id(c)] for c in d.subtrees])
        return shown[id(self)]

    def _repr(self, inner):
        """This node's text, given its children's."""
        if self.kind == LEAF:
            return "*"
        if self.kind == "none":
            return "None"
        if self.kind == HELD:
            return f"{self.meta!r:.40}"
        if self.kind == "dict":
            return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(self.meta, inner)) + "}"
        if self.kind == "list":
            return "[" + ", ".join(inner) + "]"
        if self.kind == "namedtuple":
            return f"{self.meta.__name__}(" + ", ".join(inner) + ")"
        if self.kind == CUSTOM:
            # (the auxiliary data shown, as JAX does: two structures that differ only in
            # it, a dataclass's static field or an OrderedDict's key order, must not print
            # alike in the error that tells them apart)
            cls, aux = self.meta
            shown = "" if aux is None else f"[{aux!r:.60}]"
            return f"{cls.__name__}{shown}(" + ", ".join(inner) + ")"
        return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"


def _bottom_up(root, cached=None):
    """The nodes under `root` (itself included), each after all of its children, by a loop:
    the order a value computed from the children's is filled in.  With `cached`, the name
    of a slot, subtrees whose slot is already filled are skipped."""
    order, todo = [], [root]
    while todo:
        d = todo.pop()
        order.append(d)
        todo.extend(c for c in d.subtrees
                    if cached is None or getattr(c, cached) is None)
    order.reverse()         # (each node was listed before its children: reversed, after)
    return order


_LEAF_DEF = TreeDef(LEAF, None, ())
_NODES = {tuple, list, dict}        # the types flatten walks into: registered classes join
_REGISTERED = {}                    # class -> (flatten_fn, unflatten_fn)
_KEYS = {}                          # class -> fn(obj): the keys of its children, for paths


def register_pytree_node(cls, flatten_fn, unflatten_fn):
    """Make instances of `cls` pytree nodes, as JAX's ``jax.tree_util.register_pytree_node``:
    ``flatten_fn(obj)`` gives ``(children, aux_data)``, the children pytrees in order and
    whatever else rebuilds obj (it must compare with ``==`` and is kept as it is, never
    traced), and ``unflatten_fn(aux_data, children)`` builds an instance again.  Then
    `grad`, `vmap`, `compile` and the rest take and return such objects; their leaves are
    the children's leaves.

    Example:
        >>> import wengert as wg
        >>> class Affine:
        ...     def __init__(self, w, b, name):
        ...         self.w, self.b, self.name = w, b, name
        >>> register_pytree_node(Affine, lambda a: ((a.w, a.b), a.name),
        ...                      lambda name, wb: Affine(*wb, name))
        >>> g = wg.grad(lambda p: p.w * 3.0 + p.b)(Affine(2.0, 1.0, "layer"))
        >>> g.w, g.b, g.name
        (3.0, 1.0, 'layer')
    """
    if not isinstance(cls, type):
        raise TypeError(f"register_pytree_node takes a class, got {cls!r}")
    if cls in (tuple, list, dict, type(None)) or cls in _REGISTERED:
        raise ValueError(f"{cls.__name__} is already a pytree node")
    if not (callable(flatten_fn) and callable(unflatten_fn)):
        raise TypeError("register_pytree_node(cls, flatten_fn, unflatten_fn): both "
                        "functions must be callable")
    _REGISTERED[cls] = (flatten_fn, unflatten_fn)
    _NODES.add(cls)


def registered(cls):
    """(flatten_fn, unflatten_fn) of a class registered with `register_pytree_node` (or
    its kin), None for any other class.

    Example:
        >>> registered(dict) is None
        True
    """
    return _REGISTERED.get(cls)


def register_pytree_node_class(cls):
    """A class decorator: `cls` a pytree node by its own methods ``tree_flatten(self)`` ->
    ``(children, aux_data)`` and classmethod ``tree_unflatten(aux_data, children)``, as
    JAX's decorator of the same name.

    Example:
        >>> import wengert as wg
        >>> @register_pytree_node_class
        ... class Pair:
        ...     def __init__(self, a, b):
        ...         self.a, self.b = a, b
        ...     def tree_flatten(self):
        ...         return (self.a, self.b), None
        ...     @classmethod
        ...     def tree_unflatten(cls, aux, children):
        ...         return cls(*children)
        >>> wg.grad(lambda p: p.a * p.b)(Pair(2.0, 5.0)).a
        5.0
    """
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_dataclass(cls, data_fields=None, meta_fields=None):
    """A dataclass (or any class built from keyword arguments) as a pytree node: its
    `data_fields` are children, its `meta_fields` auxiliary data, kept as they are (a
    name, an activation, a flag).  For a dataclass both default as JAX's do: the fields
    declared with ``field(metadata={"static": True})`` are meta, the others data.
    Usable as a decorator.  JAX's ``jax.tree_util.register_dataclass``.

    Example:
        >>> import dataclasses, numpy as np, wengert as wg
        >>> @register_dataclass
        ... @dataclasses.dataclass
        ... class Params:
        ...     w: np.ndarray
        ...     b: float
        ...     act: str = dataclasses.field(default="tanh", metadata={"static": True})
        >>> p = Params(np.array([1.0, 2.0]), 0.5)
        >>> g = wg.grad(lambda p: (p.w @ p.w) + p.b)(p)
        >>> g.w, g.b, g.act
        (array([2., 4.]), 1.0, 'tanh')
    """
    import dataclasses
    if data_fields is None or meta_fields is None:
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"register_dataclass({cls.__name__}): not a dataclass, so "
                            "data_fields and meta_fields must name its fields")
        fields = dataclasses.fields(cls)
        if meta_fields is None:
            meta_fields = [f.name for f in fields if f.metadata.get("static", False)
                           and (data_fields is None or f.name not in data_fields)]
        if data_fields is None:
            data_fields = [f.name for f in fields if f.name not in meta_fields]
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)

    def flatten_fn(x):
        return (tuple(getattr(x, n) for n in data_fields),
                tuple(getattr(x, n) for n in meta_fields))

    def unflatten_fn(meta, children):
        return cls(**dict(zip(data_fields, children)), **dict(zip(meta_fields, meta)))
    register_pytree_node(cls, flatten_fn, unflatten_fn)
    _KEYS[cls] = lambda x: [GetAttrKey(n) for n in data_fields]
    return cls


def register_pytree_with_keys(cls, flatten_with_keys, unflatten_fn, flatten_fn=None):
    """`register_pytree_node` with a key for each child, which `tree_flatten_with_path`
    puts in the children's paths (JAX's ``register_pytree_with_keys``):
    ``flatten_with_keys(obj)`` gives ``(((key, child), ...), aux_data)``.  `flatten_fn`,
    where given, gives ``(children, aux_data)`` faster, for everything that needs no keys.

    Example:
        >>> class Layer:
        ...     def __init__(self, w, b):
        ...         self.w, self.b = w, b
        >>> register_pytree_with_keys(
        ...     Layer, lambda x: (((GetAttrKey("w"), x.w), (GetAttrKey("b"), x.b)), None),
        ...     lambda aux, children: Layer(*children))
        >>> [keystr(path) for path, _ in tree_flatten_with_path([Layer(1.0, 2.0)])[0]]
        ['[0].w', '[0].b']
    """
    if flatten_fn is None:
        def flatten_fn(x):
            pairs, aux = flatten_with_keys(x)
            return tuple(child for _, child in pairs), aux
    register_pytree_node(cls, flatten_fn, unflatten_fn)
    _KEYS[cls] = lambda x: [key for key, _ in flatten_with_keys(x)[0]]


# The standard library's other dicts are nodes, as in JAX: an OrderedDict in its insertion
# order (which its == compares), a defaultdict in sorted order with its default factory.
register_pytree_node(
    collections.OrderedDict, lambda d: (tuple(d.values()), tuple(d)),
    lambda keys, values: collections.OrderedDict(zip(keys, values)))
_KEYS[collections.OrderedDict] = lambda d: [DictKey(k) for k in d]


def _defaultdict_children(d):
    keys = tuple(dict_keys(d))
    return tuple(d[k] for k in keys), (d.default_factory, keys)


register_pytree_node(
    collections.defaultdict, _defaultdict_children,
    lambda aux, values: collections.defaultdict(aux[0], zip(aux[1], values)))
_KEYS[collections.defaultdict] = lambda d: [DictKey(k) for k in dict_keys(d)]


def flatten(tree, is_leaf=None):
    """(list of leaves, TreeDef) of a pytree.  ``is_leaf(subtree)``, where given, makes a
    subtree it is true for one leaf (JAX's ``is_leaf``: ``lambda x: x is None`` keeps
    Nones, ``lambda x: isinstance(x, tuple)`` keeps pairs whole)."""
    leaves = []
    return leaves, _flatten(tree, leaves, is_leaf)


_NONE_DEF = TreeDef("none", None, ())


def _node(x):
    """(kind, meta, children) of a pytree node, None for a leaf."""
    t = type(x)
    if t is tuple or t is list:
        return t.__name__, None, x
    if t is dict:
        keys = dict_keys(x)
        return "dict", tuple(keys), [x[k] for k in keys]
    rule = _REGISTERED.get(t)       # (first: a registered namedtuple flattens by its own
    if rule is not None:            # rule, as in JAX, e.g. optimizers.OptimizerState)
        children, aux = rule[0](x)
        return CUSTOM, (t, aux), children
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return "namedtuple", t, x
    return None


def _flatten(x, leaves, is_leaf=None):
    # A loop over a stack of the nodes being walked, each [kind, meta, iterator over its
    # children, their TreeDefs so far, whether all are leaves so far]: no recursion,
    # whatever the nesting depth.  (is_leaf is asked only of None and of nodes: whatever
    # else it says, any other value is a leaf already.)
    node = None if x is None or (is_leaf is not None and is_leaf(x)) else _node(x)
    if node is None:
        if x is None and (is_leaf is None or not is_leaf(x)):
            return _NONE_DEF
        leaves.append(x)
        return _LEAF_DEF
    stack = [[node[0], node[1], iter(node[2]), [], True]]
    leaf = leaves.append
    while True:
        top = stack[-1]
        add = top[3].append
        for c in top[2]:
            if c is None and (is_leaf is None or not is_leaf(c)):
                add(_NONE_DEF)
                top[4] = False
            elif type(c) in _NODES or isinstance(c, tuple):
                node = _node(c) if is_leaf is None or not is_leaf(c) else None
                if node is not None:
                    top[4] = False
                    stack.append([node[0], node[1], iter(node[2]), [], True])
                    break
                leaf(c)                 # (a tuple subclass of no registered kind, or
                add(_LEAF_DEF)          # a subtree is_leaf keeps whole)
            else:                       # (leaves inline: a list of arrays is the common tree)
                leaf(c)
                add(_LEAF_DEF)
        else:
            stack.pop()
            kind = top[0]
            d = TreeDef(kind, top[1], tuple(top[3]),
                        top[4] and (kind == "tuple" or kind == "list"))
            if not stack:
                return d
            stack[-1][3].append(d)


def dict_keys(d) -> list:
    """The keys of dict `d` in the order pytrees flatten it: sorted, and where the keys do
    not all compare with each other (``{1: x, "a": y}``), grouped by kind (numbers first,
    then other types by type name), each group sorted by value, or by ``repr`` where its
    values do not compare either.  Insertion order never matters.

    Example:
        >>> dict_keys({"b": 1, 2: 2, "a": 3, 1.5: 4, None: 5})
        [1.5, 2, None, 'a', 'b']
    """
    try:
        return sorted(d)
    except TypeError:
        pass
    groups = {}
    for k in d:
        groups.setdefault(_key_kind(k), []).append(k)
    keys = []
    for kind in sorted(groups):
        group = groups[kind]
        try:
            keys.extend(sorted(group))
        except TypeError:
            keys.extend(sorted(group, key=repr))
    return keys


def key_order(d) -> list:
    """The keys of a dict (or OrderedDict, defaultdict) in the order `flatten` walks its
    values: an OrderedDict's own, `dict_keys`' for any other.

    Example:
        >>> import collections
        >>> key_order({"b": 1, "a": 2}), key_order(collections.OrderedDict(b=1, a=2))
        (['a', 'b'], ['b', 'a'])
    """
    return list(d) if isinstance(d, collections.OrderedDict) else dict_keys(d)


def _key_kind(k):
    """The group of a dict key in `dict_keys`: numbers together (1 < 1.5 < 2 whatever
    their types), anything else by its type's name."""
    if isinstance(k, (int, float, np.integer, np.floating)):
        return (0, "")
    t = type(k)
    return (1, f"{t.__module__}.{t.__qualname__}")


def unflatten(treedef, leaves):
    """The pytree of structure `treedef` with the given leaves."""
    if treedef.flat:                        # a list or tuple of leaves: no walk
        leaves = list(leaves)
        n = len(treedef.subtrees)
        if len(leaves) != n:
            raise ValueError(f"too {'many' if len(leaves) > n else 'few'} leaves for the "
                             "tree structure")
        return leaves if treedef.kind == "list" else tuple(leaves)
    it = iter(leaves)
    out = _build(treedef, it)
    if next(it, _END) is not _END:
        raise ValueError("too many leaves for the tree structure")
    return out


_END = object()


def _next_leaf(it):
    leaf = next(it, _END)
    if leaf is _END:
        raise ValueError("too few leaves for the tree structure")
    return leaf


def _build(d, it, make=None):
    # A loop over a stack of [TreeDef, iterator over its children, their values so far],
    # as _flatten's.  make(d, children) builds a node (default: its value).
    make = make or _make
    if d.kind == LEAF:
        return _next_leaf(it)
    stack = [(d, iter(d.subtrees), [])]
    while True:
        d, rest, values = stack[-1]
        for c in rest:
            if c is _LEAF_DEF or c.kind == LEAF:        # (leaves inline)
                values.append(_next_leaf(it))
            elif c.subtrees:
                stack.append((c, iter(c.subtrees), []))
                break
            else:
                values.append(make(c, ()))
        else:
            stack.pop()
            value = make(d, values)
            if not stack:
                return value
            stack[-1][2].append(value)


def _make(d, children):
    """The value of node `d` (not a leaf) given its children's values."""
    if d.kind == "none":
        return None
    if d.kind == HELD:
        return d.meta
    if d.kind == "tuple":
        return tuple(children)
    if d.kind == "list":
        return list(children)
    if d.kind == "dict":
        return dict(zip(d.meta, children))
    if d.kind == CUSTOM:
        return _REGISTERED[d.meta[0]][1](d.meta[1], tuple(children))
    return d.meta(*children)


def hold_constants(treedef, leaves, is_constant):
    """``(kept leaves, tree)``: the leaves for which ``is_constant(leaf)`` is false, and
    `treedef` with the others held in it as constants (`HELD` nodes, no leaves), so that
    ``unflatten(tree, kept)`` builds the original pytree again.  A staged function returns
    so what is not a number (a string, an object) as it was when it was traced.

    Example:
        >>> leaves, tree = flatten((1.0, {"name": "sq", "x": 2.0}))
        >>> kept, held = hold_constants(tree, leaves, lambda v: isinstance(v, str))
        >>> kept, held
        ([1.0, 2.0], (*, {'name': 'sq', 'x': *}))
        >>> unflatten(held, [10.0, 20.0])
        (10.0, {'name': 'sq', 'x': 20.0})
    """
    if not any(is_constant(x) for x in leaves):
        return list(leaves), treedef
    kept, marks = [], []
    for x in leaves:                # (each leaf marks its place: itself, or held)
        if is_constant(x):
            marks.append(TreeDef(HELD, x, ()))
        else:
            kept.append(x)
            marks.append(_LEAF_DEF)
    return kept, _build(treedef, iter(marks), _rebuild)


def _rebuild(d, children):
    """Node `d` with these children (TreeDefs): `hold_constants`'s maker for `_build`."""
    return TreeDef(d.kind, d.meta, tuple(children)) if children else d


def _same_value(a, b) -> bool:
    """Whether two held constants are the same: identical, or equal values of one type
    (an `==` that does not give a plain truth value counts as different)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def tree_map(fn, tree, *rest, is_leaf=None):
    """Apply fn leaf by leaf to one pytree, or to several; ``is_leaf`` as `flatten`'s.

    Each of the other trees has the first's structure, or the first's structure is a
    prefix of it: where the first tree has a leaf, the other has a whole subtree, and
    `fn` gets that subtree (as in JAX).  Where they do not fit, the ValueError names the
    key path where they part.

    Example:
        >>> tree_map(lambda a, b: a * b, {"w": [1.0, 2.0], "b": 3.0}, {"w": [4.0, 5.0], "b": 6.0})
        {'b': 18.0, 'w': [4.0, 10.0]}
        >>> tree_map(lambda v: 0.0 if v is None else 2 * v, [1.0, None],
        ...          is_leaf=lambda v: v is None)
        [2.0, 0.0]
        >>> tree_map(lambda scale, xs: [scale * x for x in xs], [2.0, 10.0], [[1.0, 2.0], [3.0]])
        [[2.0, 4.0], [30.0]]
    """
    leaves, d = flatten(tree, is_leaf)
    others = []
    for i, r in enumerate(rest, 2):
        rl, rd = flatten(r, is_leaf)
        others.append(rl if rd == d else _up_to(d, r, "tree_map", f"tree {i}"))
    return unflatten(d, [fn(*xs) for xs in zip(leaves, *others)])


def _up_to(treedef, tree, who, name, first="the first tree"):
    """The subtrees of `tree` at the leaves of `treedef`, in order, where `treedef` is a
    prefix of tree's structure (`TreeDef.flatten_up_to`).  A loop over a stack, as
    `_flatten`.  The error says where the two part, and how: `name` is `tree`'s name in
    it, `first` the name of the tree `treedef` came from."""
    out = []
    stack = [(treedef, tree, ())]
    while stack:
        d, x, path = stack.pop()
        if d.kind == LEAF:
            out.append(x)
            continue
        node = None if x is None else _node(x)
        if d.kind == "none" or d.kind == HELD:
            if x is None if d.kind == "none" else _same_value(x, d.meta):
                continue
        elif node is not None and node[0] == d.kind and len(node[2]) == len(d.subtrees) \
                and _same_meta(d, node[1]):
            keys = _child_keys(x, node)
            for k in range(len(d.subtrees) - 1, -1, -1):
                stack.append((d.subtrees[k], node[2][k], path + (keys[k],)))
            continue
        at = keystr(path) or "the root"
        raise ValueError(f"{who}: {name} does not have the structure of {first}, nor one "
                         f"that it is a prefix of: at {at}, {first} has {_described(d)} "
                         f"and {name} has {_described(_flatten(x, []))}")
    return out


def _same_meta(d, meta):
    """Whether a node of `tree` with `meta` fits TreeDef `d` of its kind (`_up_to`)."""
    if d.kind == CUSTOM:
        return d.meta[0] is meta[0] and _same_value(d.meta[1], meta[1])
    if d.kind == "dict":
        return d.meta == meta
    return d.meta is meta                       # (None for tuples and lists)


def _described(d) -> str:
    """A TreeDef's top in words, for errors: "a list of 3", "a dict with keys ('a',)"."""
    if d.kind == LEAF:
        return "a leaf"
    if d.kind == "none":
        return "None"
    if d.kind == HELD:
        return f"the constant {d.meta!r:.40}"
    n = len(d.subtrees)
    if d.kind == "dict":
        return f"a dict with keys {d.meta!r:.60}"
    if d.kind == "namedtuple":
        return f"a {d.meta.__name__} (namedtuple) of {n}"
    if d.kind == CUSTOM:
        cls, aux = d.meta
        return f"a {cls.__name__} of {n}" + ("" if aux is None else f" [{aux!r:.60}]")
    return f"a {d.kind} of {n}"


# ---- key paths: where a leaf sits (JAX's jax.tree_util key paths) ------------------------------
class _Key:
    """One step of a key path (`tree_flatten_with_path`): compares and hashes by value."""
    __slots__ = ()

    def __eq__(self, other):
        return type(other) is type(self) and self._value() == other._value()

    def __hash__(self):
        return hash((type(self).__name__, self._value()))

    def __repr__(self):
        return f"{type(self).__name__}({self.__slots__[0]}={self._value()!r})"

    def _value(self):
        return getattr(self, self.__slots__[0])


class SequenceKey(_Key):
    """An item of a tuple or list by its index: ``[0]``.

    Example:
        >>> str(SequenceKey(2)), SequenceKey(2).idx
        ('[2]', 2)
    """
    __slots__ = ("idx",)

    def __init__(self, idx):
        self.idx = idx

    def __str__(self):
        return f"[{self.idx!r}]"


class DictKey(_Key):
    """A value of a dict (OrderedDict, defaultdict) by its key: ``['w']``.

    Example:
        >>> str(DictKey("w")), DictKey("w").key
        ("['w']", 'w')
    """
    __slots__ = ("key",)

    def __init__(self, key):
        self.key = key

    def __str__(self):
        return f"[{self.key!r}]"


class GetAttrKey(_Key):
    """A field of a namedtuple or a registered dataclass by its name: ``.w``.

    Example:
        >>> str(GetAttrKey("w")), GetAttrKey("w").name
        ('.w', 'w')
    """
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f".{self.name}"


class FlattenedIndexKey(_Key):
    """A child of a class registered without keys, by its place among the children.

    Example:
        >>> str(FlattenedIndexKey(1))
        '[<flat index 1>]'
    """
    __slots__ = ("key",)

    def __init__(self, key):
        self.key = key

    def __str__(self):
        return f"[<flat index {self.key}>]"


def _child_keys(x, node):
    """The keys of the children of pytree node `x` (``node = _node(x)``), in order."""
    kind, meta, children = node
    if kind == "dict":
        return [DictKey(k) for k in meta]
    if kind == "namedtuple":
        return [GetAttrKey(n) for n in meta._fields]
    if kind == CUSTOM:
        keys = _KEYS.get(meta[0])
        if keys is not None:
            return list(keys(x))
        return [FlattenedIndexKey(i) for i in range(len(children))]
    return [SequenceKey(i) for i in range(len(children))]


def keystr(path, *, simple=False, separator="") -> str:
    """A key path as text: ``"['b'][1].w"``; with ``simple=True`` only the keys themselves
    (``"b/1/w"`` with ``separator="/"``), as JAX's ``keystr``.

    Example:
        >>> path = (DictKey("b"), SequenceKey(1), GetAttrKey("w"))
        >>> keystr(path), keystr(path, simple=True, separator="/")
        ("['b'][1].w", 'b/1/w')
    """
    if simple:
        return separator.join(str(k._value()) if isinstance(k, _Key) else str(k)
                              for k in path)
    return separator.join(str(k) for k in path)


def tree_flatten_with_path(tree, is_leaf=None):
    """``([(key path, leaf), ...], TreeDef)``: `flatten`'s leaves, each with the keys that
    lead to it from the root (`SequenceKey`, `DictKey`, `GetAttrKey`, `FlattenedIndexKey`),
    as JAX's function of the same name.

    Example:
        >>> pairs, _ = tree_flatten_with_path({"w": [1.0, 2.0], "b": 0.5})
        >>> [(keystr(path), leaf) for path, leaf in pairs]
        [("['b']", 0.5), ("['w'][0]", 1.0), ("['w'][1]", 2.0)]
    """
    leaves, treedef = flatten(tree, is_leaf)
    paths = []
    stack = [(tree, ())]            # (the walk flatten makes, with each subtree's path)
    while stack:
        x, path = stack.pop()
        if x is None:
            if is_leaf is not None and is_leaf(x):
                paths.append(path)
            continue
        node = _node(x)
        if node is None or (is_leaf is not None and is_leaf(x)):
            paths.append(path)
            continue
        keys, children = _child_keys(x, node), list(node[2])
        for k in range(len(children) - 1, -1, -1):
            stack.append((children[k], path + (keys[k],)))
    return list(zip(paths, leaves)), treedef


def tree_leaves_with_path(tree, is_leaf=None) -> list:
    """``[(key path, leaf), ...]``: `tree_flatten_with_path` without the structure.

    Example:
        >>> [keystr(p) for p, _ in tree_leaves_with_path([1.0, None, (2.0,)])]
        ['[0]', '[2][0]']
    """
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(fn, tree, *rest, is_leaf=None):
    """`tree_map` with each leaf's key path as fn's first argument: ``fn(path, leaf,
    *others)``, to treat leaves by where they are (JAX's function of the same name).

    Example:
        >>> params = {"w": [1.0, 2.0], "bias": 3.0}
        >>> tree_map_with_path(lambda path, p: p if "bias" in keystr(path) else 0.9 * p,
        ...                    params)
        {'bias': 3.0, 'w': [0.9, 1.8]}
    """
    pairs, d = tree_flatten_with_path(tree, is_leaf)
    others = []
    for i, r in enumerate(rest, 2):
        rl, rd = flatten(r, is_leaf)
        others.append(rl if rd == d else _up_to(d, r, "tree_map_with_path", f"tree {i}"))
    return unflatten(d, [fn(path, leaf, *xs) for (path, leaf), *xs in zip(pairs, *others)])


# JAX's names (jax.tree_util), so that code written for JAX reads the same
def tree_flatten(tree, is_leaf=None):
    """JAX's name for `flatten`: (list of leaves, TreeDef).

    Example:
        >>> tree_flatten({"w": [1.0, 2.0], "b": 0.5})[0]
        [0.5, 1.0, 2.0]
    """
    return flatten(tree, is_leaf)


def tree_unflatten(treedef, leaves):
    """JAX's name for `unflatten`: the pytree of structure `treedef` with `leaves`.

    Example:
        >>> leaves, treedef = tree_flatten({"w": [1.0, 2.0], "b": 0.5})
        >>> tree_unflatten(treedef, [x * 10 for x in leaves])
        {'b': 5.0, 'w': [10.0, 20.0]}
    """
    return unflatten(treedef, leaves)


def tree_leaves(tree, is_leaf=None) -> list:
    """The leaves of a pytree, in flattening order; ``is_leaf`` as `flatten`'s.

    Example:
        >>> tree_leaves(({"a": 1.0}, [2.0, None, 3.0]))
        [1.0, 2.0, 3.0]
        >>> tree_leaves(({"a": 1.0}, [2.0, None, 3.0]), is_leaf=lambda x: x is None)
        [1.0, 2.0, None, 3.0]
    """
    return flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None) -> TreeDef:
    """The structure of a pytree without its leaves (a `TreeDef`, comparable with ==).

    Example:
        >>> tree_structure({"a": 1.0, "b": (2.0, 3.0)}) == tree_structure({"b": (0, 0), "a": 0})
        True
    """
    return flatten(tree, is_leaf)[1]


_NO_INITIAL = object()


def tree_reduce(function, tree, initializer=_NO_INITIAL, is_leaf=None):
    """The leaves of a pytree folded from the left by ``function(total, leaf)``, as
    Python's ``functools.reduce`` (``initializer`` first, where given).

    Example:
        >>> tree_reduce(lambda a, b: a + b, {"w": [1.0, 2.0], "b": 0.5})
        3.5
    """
    leaves = flatten(tree, is_leaf)[0]
    if initializer is _NO_INITIAL:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree, *, is_leaf=None) -> bool:
    """Whether every leaf of a pytree is true (an empty pytree's are).

    Example:
        >>> tree_all({"a": True, "b": [1, 2]}), tree_all([True, (0,)])
        (True, False)
    """
    return builtins.all(flatten(tree, is_leaf)[0])


def tree_reduce_associative(operation, tree, *, identity=_NO_INITIAL, is_leaf=None):
    """The leaves of a pytree combined pairwise by an associative ``operation(a, b)``, in a
    balanced tree of calls (depth log n, not n), as JAX's function of the same name; an
    empty pytree gives `identity`.

    Example:
        >>> tree_reduce_associative(lambda a, b: a + b, {"w": [1.0, 2.0], "b": 0.5})
        3.5
    """
    values = flatten(tree, is_leaf)[0]
    if not values:
        if identity is _NO_INITIAL:
            raise TypeError("tree_reduce_associative of a pytree with no leaves needs "
                            "identity=")
        return identity
    while len(values) > 1:      # (one level of pairs at a time: a loop, no recursion)
        pairs = [operation(a, b) for a, b in zip(values[0::2], values[1::2])]
        values = pairs + values[len(pairs) * 2:]
    return values[0]


def tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """A pytree of structure outer-of-inner turned into inner-of-outer, as JAX's: a list of
    pairs into a pair of lists, per-example dicts into a dict of per-example values.
    `inner_treedef` None takes the structure of the first inner subtree.

    Example:
        >>> outer, inner = tree_structure([0, 0]), tree_structure((0, 0))
        >>> tree_transpose(outer, inner, [(1, 2), (3, 4)])
        ([1, 3], [2, 4])
    """
    subtrees = outer_treedef.flatten_up_to(pytree_to_transpose)
    if inner_treedef is None:
        inner_treedef = tree_structure(subtrees[0]) if subtrees else _LEAF_DEF
    rows = [inner_treedef.flatten_up_to(s) for s in subtrees]
    columns = [outer_treedef.unflatten([row[j] for row in rows])
               for j in range(inner_treedef.num_leaves)]
    return inner_treedef.unflatten(columns)


def tree_broadcast(prefix_tree, full_tree, is_leaf=None):
    """`prefix_tree` with each leaf repeated over the subtree of `full_tree` at its place
    (JAX's): the result has `full_tree`'s structure.

    Example:
        >>> tree_broadcast([1, {"a": 2}], [(3, 4), {"a": [5, 6]}])
        [(1, 1), {'a': [2, 2]}]
    """
    values, prefix = flatten(prefix_tree, is_leaf)
    subtrees = _up_to(prefix, full_tree, "tree_broadcast", "full_tree", "prefix_tree")
    return prefix.unflatten([tree_map(lambda _, v=v: v, sub, is_leaf=is_leaf)
                             for v, sub in zip(values, subtrees)])


def all_leaves(iterable, is_leaf=None) -> bool:
    """Whether every item of `iterable` is a leaf (not a tuple, list, dict, None or
    registered node; ``is_leaf(x)`` true makes x one), as JAX's.

    Example:
        >>> all_leaves([1.0, "a"]), all_leaves([1.0, (2.0,)])
        (True, False)
    """
    return builtins.all((is_leaf is not None and is_leaf(x)) or
                        (x is not None and _node(x) is None) for x in iterable)


def is_tree_node(typ) -> bool:
    """Whether instances of the type `typ` are pytree nodes (JAX's).

    Example:
        >>> is_tree_node(tuple), is_tree_node(float)
        (True, False)
    """
    return typ in _NODES or typ is type(None) or (
        isinstance(typ, type) and issubclass(typ, tuple) and hasattr(typ, "_fields"))


def flatten_one_level(tree):
    """``(children, auxiliary data)`` of the root node of a pytree, one level down only
    (JAX's); a leaf raises ValueError.

    Example:
        >>> flatten_one_level({"a": 1.0, "b": (2.0, 3.0)})
        ((1.0, (2.0, 3.0)), ('a', 'b'))
    """
    if tree is None:
        return (), None
    node = _node(tree)
    if node is None:
        raise ValueError(f"flatten_one_level: a leaf ({type(tree).__name__}) has no "
                         "children")
    kind, meta, children = node
    if kind not in ("tuple", "list"):       # (a tuple or list is its own children, as JAX's)
        children = tuple(children)
    return children, (meta[1] if kind == CUSTOM else meta if kind == "dict" else None)


def flatten_one_level_with_keys(tree):
    """`flatten_one_level` with each child's key: ``(((key, child), ...), aux)`` (JAX's).

    Example:
        >>> flatten_one_level_with_keys([1.0, 2.0])[0]
        ((SequenceKey(idx=0), 1.0), (SequenceKey(idx=1), 2.0))
    """
    children, aux = flatten_one_level(tree)
    keys = _child_keys(tree, _node(tree)) if children else []
    return tuple(zip(keys, children)), aux


def treedef_children(treedef) -> list:
    """JAX's name for ``treedef.children()``.

    Example:
        >>> treedef_children(tree_structure((1.0, [2.0])))
        [*, [*]]
    """
    return treedef.children()


def treedef_is_leaf(treedef) -> bool:
    """Whether a structure is a single leaf (JAX's).

    Example:
        >>> treedef_is_leaf(tree_structure(1.0)), treedef_is_leaf(tree_structure([1.0]))
        (True, False)
    """
    return treedef.kind == LEAF


def treedef_tuple(treedefs):
    """The structure of a tuple of pytrees of the given structures (JAX's).

    Example:
        >>> treedef_tuple([tree_structure([0]), tree_structure(0)])
        ([*], *)
    """
    return TreeDef("tuple", None, tuple(treedefs))


def register_static(cls):
    """A class decorator: instances of `cls` are pytree nodes with no leaves, kept whole in
    the structure (so `jit` and the transformations pass them through as constants, as
    JAX's ``register_static``); they must compare with ``==`` and hash.

    Example:
        >>> import wengert as wg
        >>> @register_static
        ... class Scale:
        ...     def __init__(self, k): self.k = k
        ...     def __eq__(self, other): return type(other) is Scale and other.k == self.k
        ...     def __hash__(self): return hash(self.k)
        >>> wg.grad(lambda x, s: s.k * x)(1.0, Scale(3.0))
        3.0
    """
    register_pytree_node(cls, lambda x: ((), x), lambda x, _: x)
    return cls


def register_pytree_with_keys_class(cls):
    """A class decorator: `cls` a pytree node by its methods ``tree_flatten_with_keys(self)``
    -> ``(((key, child), ...), aux_data)`` and classmethod ``tree_unflatten(aux_data,
    children)`` (and ``tree_flatten``, where it has one), as JAX's.

    Example:
        >>> @register_pytree_with_keys_class
        ... class Pair:
        ...     def __init__(self, a, b): self.a, self.b = a, b
        ...     def tree_flatten_with_keys(self):
        ...         return ((GetAttrKey("a"), self.a), (GetAttrKey("b"), self.b)), None
        ...     @classmethod
        ...     def tree_unflatten(cls, aux, children): return cls(*children)
        >>> [keystr(p) for p, _ in tree_flatten_with_path(Pair(1.0, 2.0))[0]]
        ['.a', '.b']
    """
    flatten_fn = getattr(cls, "tree_flatten", None)
    register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten,
                              None if flatten_fn is None else (lambda x: x.tree_flatten()))
    return cls


class Partial(functools.partial):
    """``functools.partial`` as a pytree (JAX's ``jax.tree_util.Partial``): its arguments
    are children, so traced values bound in it are leaves, and the function is kept in
    the structure; so it can be passed to and returned from `jit`, `grad` and `vmap`.

    Example:
        >>> import wengert as wg
        >>> scale = Partial(lambda k, x: k * x, 2.0)
        >>> tree_leaves(scale), wg.jit(lambda f, x: f(x))(scale, 3.0)
        ([2.0], 6.0)
    """


register_pytree_node(Partial, lambda p: ((p.args, p.keywords), p.func),
                     lambda func, children: Partial(func, *children[0], **children[1]))


def static(**kwargs):
    """A dataclass field that `register_dataclass` takes as auxiliary data, not a child:
    ``dataclasses.field(**kwargs)`` with ``metadata={"static": True}`` (JAX's
    ``jax.tree.static``).

    Example:
        >>> import dataclasses
        >>> @register_dataclass
        ... @dataclasses.dataclass
        ... class Op:
        ...     x: float
        ...     name: str = static(default="add")
        >>> tree_leaves(Op(1.0))
        [1.0]
    """
    import dataclasses
    metadata = dict(kwargs.pop("metadata", None) or {}, static=True)
    return dataclasses.field(metadata=metadata, **kwargs)


# and JAX's newer spelling, jax.tree.map, ..., so that `import wengert as jax` reads
# `jax.tree.map(f, params)` (flatten and unflatten above are jax.tree's names already)
map = tree_map
leaves = tree_leaves
map_with_path = tree_map_with_path
leaves_with_path = tree_leaves_with_path
flatten_with_path = tree_flatten_with_path
structure = tree_structure
reduce = tree_reduce
all = tree_all          # (so tree_all above calls builtins.all)
transpose = tree_transpose
broadcast = tree_broadcast
reduce_associative = tree_reduce_associative


def ravel_pytree(tree):
    """(vector, unravel): the leaves of a pytree raveled and concatenated into one 1-D
    array (in flattening order, the leaves' dtypes promoted together), and the function
    that splits such a vector back into a pytree of the same structure, shapes and
    dtypes.  Differentiable both ways, on traced leaves too.  This is JAX's
    ``jax.flatten_util.ravel_pytree`` and autograd's ``autograd.misc.flatten``: for
    optimizers and solvers that want one vector of parameters (``scipy.optimize``).

    Example:
        >>> import numpy as np
        >>> params = {"w": np.ones((2, 2)), "b": 0.5}
        >>> v, unravel = ravel_pytree(params)
        >>> v
        array([0.5, 1. , 1. , 1. , 1. ])
        >>> new = unravel(v * 2)
        >>> float(new["b"]), new["w"].tolist()
        (1.0, [[2.0, 2.0], [2.0, 2.0]])
    """
    import wengert.numpy as wnp
    leaves, treedef = flatten(tree)
    shapes = [wnp.shape(x) for x in leaves]
    dtypes = [wnp.result_type(x) for x in leaves]
    bounds = np.cumsum([0] + [int(np.prod(s)) for s in shapes]).tolist()
    vector = (wnp.concatenate([wnp.ravel(x) for x in leaves]) if leaves
              else np.zeros(0))

    def unravel(v):
        shape = wnp.shape(v)
        if shape != (bounds[-1],):
            raise ValueError(f"unravel: expected a vector of shape ({bounds[-1]},) as "
                             f"ravel_pytree made, got shape {shape}")
        parts = []
        for s, d, a, b in zip(shapes, dtypes, bounds, bounds[1:]):
            part = v[a] if s == () else wnp.reshape(v[a:b], s)
            parts.append(part if wnp.result_type(part) == d else wnp.astype(part, d))
        return unflatten(treedef, parts)

    return vector, unravel
