"""The `wengert` command.

    wengert demo      the worked example of seed 000, in forward and reverse mode

The ADDS language (`wengert run FILE.adds`, `wengert repl`) comes with its own issue.
"""
from __future__ import annotations

import argparse
import math
import sys


def demo(out=sys.stdout) -> int:
    """Print seed 000's example: f(x1, x2) = x1*x2 + sin(x1) at (2, 3), its graph, its
    partial derivatives by forward and reverse mode against the closed forms, and the
    graph of its gradient."""
    import wengert as wg
    import wengert.math as wm

    def f(x1, x2):
        return x1 * x2 + wm.sin(x1)

    x1, x2 = 2.0, 3.0
    p = lambda *a: print(*a, file=out)
    p("f(x1, x2) = x1*x2 + sin(x1)   at (x1, x2) = (2, 3)   [seed 000]")
    p()
    p("The computational graph (Wengert list):")
    p(wg.trace(f, x1, x2))
    p()
    value, d1 = wg.jvp(f, (x1, x2), (1.0, 0.0))
    _, d2 = wg.jvp(f, (x1, x2), (0.0, 1.0))
    p(f"f                        = {value!r:<22} closed form x1*x2 + sin x1 = "
      f"{x1 * x2 + math.sin(x1)!r}")
    p(f"forward mode  df/dx1     = {d1!r:<22} closed form x2 + cos x1   = "
      f"{x2 + math.cos(x1)!r}")
    p(f"forward mode  df/dx2     = {d2!r:<22} closed form x1            = {x1!r}")
    g1, g2 = wg.grad(f, argnums=(0, 1))(x1, x2)
    p(f"reverse mode  df/dx1     = {g1!r:<22}")
    p(f"reverse mode  df/dx2     = {g2!r:<22}")
    h = wg.hessian(f, argnums=(0, 1))(x1, x2)
    p(f"Hessian                  = {h!r}   closed form ((-sin x1, 1), (1, 0))")
    p()
    p("The graph of the gradient (reverse mode, itself differentiable):")
    p(wg.trace(wg.grad(f, argnums=(0, 1)), x1, x2))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="wengert",
        description="wengert: automatic differentiation on one computational graph.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("demo", help="print seed 000's example derivatives, both modes")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo()
    parser.print_help()
    return 0


def entry() -> int:
    """Console entry point: `main`, quiet when the reader of a pipe goes away (`| head`)."""
    try:
        return main()
    except BrokenPipeError:
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(entry())
