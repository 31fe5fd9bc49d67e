"""A compiled function's computation in the ADDS text format or FORTRAN 77: the formats
``outcode`` writes, on the scalar graph the Python and C back-ends use.

Inputs are named after the function's arguments (sanitised, upper case, arrays indexed
from 1 as ADDS and FORTRAN do); the outputs are the elements ``Y[1], Y[2], ...`` of the
flattened result.
"""
from __future__ import annotations

import re

import numpy as np

from .emit import Symbol, emit
from .formats import AddsFormat, FortranFormat
from .names import Names
from .python import Namespace, prologue


def _Safe(fmt):
    """The format, with a user's primitive named by an identifier whatever its name."""
    class Safe(fmt):
        def function(self, name):
            return super().function(re.sub(r"[^0-9A-Za-z_]+", "_", name))
    return Safe


def source_of(entry, language) -> str:
    """The statements of `entry` (a compiled function's entry) in `language`, "adds" or
    "fortran"."""
    from .scalarize import NotScalar, not_float, scalar_form
    odd = not_float(entry.graph.live_nodes())
    if odd is not None and odd.dtype.kind == "c":      # (ints and float32 print as reals)
        raise ValueError(f"code({language!r}): the graph has values of dtype {odd.dtype}, "
                         "and this text is written for real numbers")
    try:
        scalar = scalar_form(entry.graph, 10 ** 7, 10 ** 7)
    except NotScalar as e:
        raise ValueError(f"code({language!r}): this text is written element by element, "
                         f"and the graph has {e}") from None
    names = Names()
    names.taken.add("Y")
    _, leaves = prologue(entry.params, names, Namespace(names), "_miss")
    symbols, inputs, bases = {}, iter(scalar.graph.inputs), {"Y"}
    for leaf in leaves:
        base = leaf.name.upper()
        while base in bases:                 # these languages do not tell x from X
            base += "_"
        bases.add(base)
        if leaf.kind is np.ndarray:
            for i in np.ndindex(*leaf.shape):
                symbols[next(inputs).index] = Symbol(base, tuple(j + 1 for j in i))
        else:
            symbols[next(inputs).index] = Symbol(base)
    outs = [(Symbol("Y", (k + 1,)), o) for k, o in enumerate(scalar.graph.outputs)]
    fmt = (_Safe(FortranFormat) if language == "fortran" else _Safe(AddsFormat))()
    code = emit(scalar.graph, scalar.graph.inputs, outs, fmt, names=symbols,
                reserved=bases)
    declared = []
    if language == "adds":
        # (ADDS reads an element only of an array declared: so that the text runs as it is)
        shapes = {}
        for sym in symbols.values():
            if sym.index:
                shapes[sym.name] = tuple(max(a, b) for a, b in
                                         zip(shapes.get(sym.name, sym.index), sym.index))
        shapes["Y"] = (len(outs),)
        declared = [f"array {name}[{','.join(map(str, shape))}];"
                    for name, shape in shapes.items() if shape[0]]
    return "\n".join(declared + code.lines) + "\n"
