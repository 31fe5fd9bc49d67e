"""The computational graph: nodes, interning, simplification, mark down / mark up.

(Imports live in wengert/__init__.py, which loads the modules in dependency order.)
"""
