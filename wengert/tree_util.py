"""JAX's ``jax.tree_util`` names for wengert's pytrees (`wengert.tree`), so that code
written for JAX ports by changing its imports alone.

Example:
    >>> from wengert.tree_util import tree_map, tree_map_with_path, keystr
    >>> tree_map(lambda a, b: a + b, {"w": 1.0}, {"w": 2.0})
    {'w': 3.0}
    >>> tree_map_with_path(lambda path, x: keystr(path), {"w": [1.0]})
    {'w': ["['w'][0]"]}
"""
from .tree import (  # noqa: F401  (re-exported under JAX's names)
    DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey, TreeDef as PyTreeDef, keystr,
    register_dataclass, register_pytree_node, register_pytree_node_class,
    register_pytree_with_keys, tree_all, tree_flatten, tree_flatten_with_path, tree_leaves,
    tree_leaves_with_path, tree_map, tree_map_with_path, tree_reduce, tree_structure,
    tree_unflatten)

__all__ = ["DictKey", "FlattenedIndexKey", "GetAttrKey", "SequenceKey", "PyTreeDef", "keystr",
           "register_dataclass", "register_pytree_node", "register_pytree_node_class",
           "register_pytree_with_keys", "tree_all", "tree_flatten", "tree_flatten_with_path",
           "tree_leaves", "tree_leaves_with_path", "tree_map", "tree_map_with_path",
           "tree_reduce", "tree_structure", "tree_unflatten"]
