"""Which graphs are recording right now, and the optimisation switches.

Kept apart from graph.py so the primitive registry can ask "which graph is recording?"
without importing the graph module.
"""
import contextlib
import threading


class _State(threading.local):
    def __init__(self):
        self.stack = []          # graphs being recorded into, innermost last
        self.optimize = True     # interning + simplification, see options()
        self.ieee = False        # only the rewrites exact in IEEE arithmetic, see options()


_state = _State()


def current_graph():
    """The graph the innermost tracing records into, or None outside any tracing."""
    stack = _state.stack
    return stack[-1] if stack else None


def is_recording(graph) -> bool:
    """Whether some transformation is still recording into `graph`."""
    for g in _state.stack:
        if g is graph:
            return True
    return False


class recording:
    """Make `graph` the graph new operations are recorded into, for the block.

    A class rather than a generator-based context manager: every eager gradient enters
    one, and this costs a third as much."""

    __slots__ = ("graph",)

    def __init__(self, graph):
        self.graph = graph

    def __enter__(self):
        _state.stack.append(self.graph)
        return self.graph

    def __exit__(self, exc_type, exc, tb):
        _state.stack.pop()
        if exc_type is ValueError:
            _array_element_error(exc)
        return False


def _array_element_error(exc):
    """NumPy's ``array[i] = x`` asks a traced x for float(x), which refuses; but since a
    traced value can be indexed, NumPy takes it for a sequence and replaces that error with
    "setting an array element with a sequence."  Raise instead the error numpy.asarray(x)
    gets, which says what happened."""
    node = getattr(exc.__cause__, "node", None)
    if node is not None and str(exc).startswith("setting an array element"):
        raise node._to_array_error() from None


def optimizing() -> bool:
    """The current setting of `options(optimize=...)`."""
    return _state.optimize


def ieee_arithmetic() -> bool:
    """The current setting of `options(ieee=...)`."""
    return _state.ieee


@contextlib.contextmanager
def options(*, optimize=None, ieee=None):
    """Switch interning (CSE) and construction-time simplification on or off
    (`optimize`), or keep only the rewrites that are exact in IEEE arithmetic (`ieee`).

    With ``optimize=False`` every operation makes a new node: no constant interning, no
    common-subexpression elimination, no ``x*1 -> x``, no constant folding.  That is
    plain AD, the baseline column b of seed 002's Table 2.  A graph keeps the setting it
    was created with.  (An eager first-order call, ``wg.grad(f)(x)``, records op by op
    whatever the setting, as NumPy computes: its graph is swept once and released.  The
    setting applies to what a nested transformation adds to it.)

    With ``ieee=True`` interning, common subexpressions and constant folding stay, but
    the rewrites that hold for real numbers and not for every float are not made:
    ``x*0 -> 0``, ``x-x -> 0``, ``x/x -> 1``, ``0/y -> 0`` (which differ where x or y is
    inf, nan or zero), ``x+0 -> x``, ``0-y -> -y``, ``x-0 -> x`` (the sign of a zero),
    ``c*(d*z) -> (c*d)*z`` (overflow), and the merging of scattered sums (the sign of a
    zero again).  A graph, and code compiled from it, then gives what NumPy gives at
    every input, infinities, nans and signed zeros included.  `wg.compile` reads the
    setting when it is called, for every signature it compiles later.

    Example:
        >>> import wengert as wg
        >>> f = lambda x: wg.math.exp(x) + wg.math.exp(x) * 1.0
        >>> print(wg.trace(f, 1.0))
        graph(x: f64[]):
          %1: f64[] = exp(x)
          %4: f64[] = mul(%1, 2.0)
          return %4
        >>> with wg.options(optimize=False):
        ...     print(wg.trace(f, 1.0))
        graph(x: f64[]):
          %1: f64[] = exp(x)
          %2: f64[] = exp(x)
          %4: f64[] = mul(%2, 1.0)
          %5: f64[] = add(%1, %4)
          return %5
        >>> g = lambda x: x * 0.0 + x / x
        >>> wg.compile(g, 1.0)(float("inf"))          # (0 + 1 for real numbers)
        1.0
        >>> with wg.options(ieee=True):
        ...     ieee_g = wg.compile(g, 1.0)
        >>> ieee_g(float("inf")), ieee_g(2.0)         # NumPy's inf*0 and inf/inf
        (nan, 1.0)
    """
    if optimize is None and ieee is None:
        raise TypeError("options: pass optimize=True/False, ieee=True/False, or both")
    old = _state.optimize, _state.ieee
    if optimize is not None:
        _state.optimize = bool(optimize)
    if ieee is not None:
        _state.ieee = bool(ieee)
    try:
        yield
    finally:
        _state.optimize, _state.ieee = old
