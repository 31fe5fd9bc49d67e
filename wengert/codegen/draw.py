"""Pictures of computational graphs (seed 002's Fig. 2, seed 000's Fig. 2-3), in Graphviz's
DOT language: one box per operation, labelled with the operation; one arrow per argument,
from the value to the operation that uses it; inputs and outputs marked.

The DOT text is written here (no library needed).  Turning it into SVG or PNG needs
Graphviz's ``dot`` program; `GraphvizNotFound` says how to get it, and `DrawError` what
else went wrong.
"""
from __future__ import annotations

import os
import shutil

from ..primitives.registry import CONST, INPUT
from ..primitives import scalar as S

_SYMBOLS = {S.add: "+", S.sub: "−", S.mul: "×", S.div: "/", S.neg: "−", S.lt: "<",
            S.le: "≤", S.gt: ">", S.ge: "≥", S.eq: "=", S.ne: "≠"}


class DrawError(RuntimeError):
    """Graphviz could not make the picture (e.g. a format dot does not know)."""


class GraphvizNotFound(DrawError):
    """Graphviz's dot program is not installed."""


def _quote(text) -> str:
    """A DOT string: user text (names) cannot end it or add attributes."""
    text = str(text).replace("\\", "\\\\").replace('"', '\\"')
    return '"' + text.replace("\n", "\\n").replace("\r", "") + '"'


def _label(node) -> str:
    op = node.op
    if op is CONST:
        v = node.value
        return f"{v:.6g}" if node.shape == () and type(v) is float else (
            repr(v) if node.shape == () else f"const {node.shape}")
    if op is INPUT:
        return node.label()
    if op is S.powi:
        return f"^{node.params['n']}"
    text = _SYMBOLS.get(op, op.name)
    if node.shape:
        text += f"\n{node.shape}"
    return text


def cluster(graph, outputs, prefix, title=None, derived=None, out_names=None) -> list:
    """DOT lines for the part of `graph` that `outputs` need.  `derived`: indices of nodes
    to draw as derivative nodes (filled); `out_names`: labels of the outputs.

    Example:
        >>> import wengert as wg
        >>> g = wg.trace(lambda x: x * x, 1.0)
        >>> cluster(g, g.outputs, "a_", derived={1})[1]
        '  a_1 [label="×", style="filled", fillcolor="lightblue"];'
    """
    live = graph.live_nodes(outputs)
    lines = []
    if title is not None:
        lines += [f"subgraph cluster_{prefix} {{", f"  label={_quote(title)};",
                  "  style=rounded; color=gray60;"]
    for node in live:
        attrs = {"label": _label(node)}
        if node.op is INPUT:
            attrs.update(shape="box", style="bold")
        elif node.op is CONST:
            attrs.update(shape="plaintext")
        elif derived is not None and node.index in derived:
            attrs.update(style="filled", fillcolor="lightblue")
        lines.append(f"  {prefix}{node.index} [" + ", ".join(
            f"{k}={_quote(v)}" for k, v in attrs.items()) + "];")
        for a in node.args:
            lines.append(f"  {prefix}{a.index} -> {prefix}{node.index};")
    for k, o in enumerate(outputs):
        name = out_names[k] if out_names else (f"out {k}" if len(outputs) > 1 else "out")
        lines.append(f"  {prefix}out{k} [label={_quote(name)}, shape=doublecircle];")
        lines.append(f"  {prefix}{o.index} -> {prefix}out{k};")
    if title is not None:
        lines.append("}")
    return lines


def to_dot(parts) -> str:
    """A DOT digraph of one or more clusters: `parts` are ``(graph, outputs, title,
    derived, out_names)`` tuples, drawn side by side.

    Example:
        >>> import wengert as wg
        >>> g = wg.trace(lambda x: -x, 1.0)
        >>> print(to_dot([(g, g.outputs, None, None, ["y"])]))
        digraph wengert {
          rankdir=BT;
          node [shape=ellipse, fontname="Helvetica"];
          g0_0 [label="x", shape="box", style="bold"];
          g0_1 [label="−"];
          g0_0 -> g0_1;
          g0_out0 [label="y", shape=doublecircle];
          g0_1 -> g0_out0;
        }
        <BLANKLINE>
    """
    lines = ["digraph wengert {", "  rankdir=BT;",
             '  node [shape=ellipse, fontname="Helvetica"];']
    for k, (graph, outputs, title, derived, out_names) in enumerate(parts):
        lines += cluster(graph, outputs, f"g{k}_", title if len(parts) > 1 else None,
                         derived, out_names)
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(dot_text, fmt="svg") -> bytes:
    """The picture of DOT text, by Graphviz's dot program (`GraphvizNotFound` without it).

    Example:
        >>> import shutil
        >>> shutil.which("dot") is None or render("digraph { a -> b }").startswith(b"<?xml")
        True
    """
    dot = shutil.which("dot")
    if dot is None:
        raise GraphvizNotFound(
            "drawing needs Graphviz's dot program, which is not installed (Debian/Ubuntu: "
            "apt-get install graphviz; macOS: brew install graphviz; conda install "
            "graphviz).  The DOT text itself needs nothing: save it to a .dot file.")
    import subprocess       # (here, not at the top: `import wengert` should not pay for it)
    result = subprocess.run([dot, f"-T{fmt}"], input=dot_text.encode(), capture_output=True)
    if result.returncode < 0:           # a crash (a huge graph, say) says nothing itself
        import signal
        try:
            name = f" ({signal.Signals(-result.returncode).name})"
        except ValueError:
            name = ""
        raise DrawError(f"dot was killed by signal {-result.returncode}{name}")
    if result.returncode != 0:
        message = " ".join(result.stderr.decode(errors="replace").split())   # one line
        raise DrawError(f"dot failed: {message[-1000:] or f'exit status {result.returncode}'}")
    return result.stdout


class Drawing:
    """A picture of a graph: ``dot`` (the DOT text), ``save(path)`` (SVG, PNG, PDF or DOT
    by the file's extension), ``svg()``; notebooks show it.

    Example:
        >>> import wengert as wg
        >>> d = wg.draw(lambda x: x * wg.math.exp(x), 1.0)
        >>> print(d.dot.splitlines()[3])
          g0_0 [label="x", shape="box", style="bold"];
    """

    def __init__(self, dot):
        self.dot = dot

    def __str__(self):
        return self.dot

    def svg(self) -> str:
        return render(self.dot, "svg").decode()

    def _repr_svg_(self):
        try:
            return self.svg()
        except GraphvizNotFound:
            return None

    def save(self, path) -> str:
        ext = os.path.splitext(str(path))[1].lower().lstrip(".") or "svg"
        data = self.dot.encode() if ext in ("dot", "gv") else render(self.dot, ext)
        with open(path, "wb") as f:
            f.write(data)
        return str(path)


def draw(graph_or_function, *args, derivative=False, path=None) -> Drawing:
    """Draw a computational graph with Graphviz: nodes labelled with their operations,
    arrows for the flow of values.

    Args:
        graph_or_function: a `Graph` (from `wg.trace`), a compiled function, or a function
            to trace at `args`.
        derivative: also draw, beside it, the graph of the derivative: the gradient of a
            scalar function (`wg.grad`), else the Jacobian (`wg.jacrev`), with respect to
            every argument.
        path: if given, save the picture there (the extension picks the format: .svg,
            .png, .pdf, or .dot for the text, which needs no Graphviz).

    Returns:
        A `Drawing`; its ``dot`` attribute is the DOT text.

    Example:
        >>> import wengert as wg
        >>> d = wg.draw(lambda x: x * wg.math.sin(x), 1.0, derivative=True)
        >>> "cluster_g1_" in d.dot and 'label="sin"' in d.dot and 'label="cos"' in d.dot
        True
    """
    from ..graph.graph import Graph
    from .. import api
    f = graph_or_function
    graph = f if isinstance(f, Graph) else getattr(f, "graph", None)
    if graph is None:
        graph = api.trace(f, *args)
    parts = [(graph, graph.outputs, "function", None, None)]
    if derivative:
        if isinstance(f, Graph) or getattr(f, "graph", None) is not None:
            raise ValueError("draw(derivative=True) needs the function and its arguments, "
                             "not a graph")
        nums = tuple(range(len(args)))
        scalar = len(graph.outputs) == 1 and graph.outputs[0].shape == ()
        d = (api.grad if scalar else api.jacrev)(f, argnums=nums if len(nums) > 1 else 0)
        dgraph = api.trace(d, *args)
        parts.append((dgraph, dgraph.outputs, "gradient" if scalar else "Jacobian", None,
                      None))
    drawing = Drawing(to_dot(parts))
    if path is not None:
        drawing.save(path)
    return drawing
