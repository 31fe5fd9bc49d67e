"""JAX's ``jax.tree_util`` names for wengert's pytrees (`wengert.tree`), so that code
written for JAX ports by changing its imports alone.

Example:
    >>> from wengert.tree_util import tree_map, tree_map_with_path, keystr
    >>> tree_map(lambda a, b: a + b, {"w": 1.0}, {"w": 2.0})
    {'w': 3.0}
    >>> tree_map_with_path(lambda path, x: keystr(path), {"w": [1.0]})
    {'w': ["['w'][0]"]}
"""
from typing import Tuple, Union

from .tree import (  # noqa: F401  (re-exported under JAX's names)
    DictKey, FlattenedIndexKey, GetAttrKey, Partial, SequenceKey, TreeDef as PyTreeDef,
    all_leaves, flatten_one_level, flatten_one_level_with_keys, is_tree_node, keystr,
    register_dataclass, register_pytree_node, register_pytree_node_class,
    register_pytree_with_keys, register_pytree_with_keys_class, register_static, tree_all,
    tree_broadcast, tree_flatten, tree_flatten_with_path, tree_leaves, tree_leaves_with_path,
    tree_map, tree_map_with_path, tree_reduce, tree_reduce_associative, tree_structure,
    tree_transpose, tree_unflatten, treedef_children, treedef_is_leaf, treedef_tuple)

# the types of key paths, for annotations (JAX's)
KeyEntry = Union[SequenceKey, DictKey, GetAttrKey, FlattenedIndexKey]
KeyPath = Tuple[KeyEntry, ...]

__all__ = ["DictKey", "FlattenedIndexKey", "GetAttrKey", "KeyEntry", "KeyPath", "Partial",
           "SequenceKey", "PyTreeDef", "all_leaves", "flatten_one_level",
           "flatten_one_level_with_keys", "is_tree_node", "keystr", "register_dataclass",
           "register_pytree_node", "register_pytree_node_class", "register_pytree_with_keys",
           "register_pytree_with_keys_class", "register_static", "tree_all", "tree_broadcast",
           "tree_flatten", "tree_flatten_with_path", "tree_leaves", "tree_leaves_with_path",
           "tree_map", "tree_map_with_path", "tree_reduce", "tree_reduce_associative",
           "tree_structure", "tree_transpose", "tree_unflatten", "treedef_children",
           "treedef_is_leaf", "treedef_tuple"]
