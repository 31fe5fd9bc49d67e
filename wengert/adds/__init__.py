"""The ADDS language (seed 002): write a function, ask for its derivatives, get straight-line
code for them.

    >>> from wengert.adds import Session
    >>> Session().execute("f := x*exp(x); g := dfd(f, x); outcode(x) f, g;")
    V0001 := EXP(X);
    F := X*V0001;
    G := V0001+F;

`Session` runs statements (`Session.execute`, `Session.run_file`); the `wengert` command
(`wengert run FILE.adds`, `wengert repl`) is a thin shell around it.  See docs/adds.md.
"""
from .errors import AddsError
from .interpreter import Session
from .parser import parse

__all__ = ["AddsError", "Session", "parse"]
