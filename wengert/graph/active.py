"""Which graphs are recording right now, and the one optimisation switch.

Kept apart from graph.py so the primitive registry can ask "which graph is recording?"
without importing the graph module.
"""
import contextlib
import threading


class _State(threading.local):
    def __init__(self):
        self.stack = []          # graphs being recorded into, innermost last
        self.optimize = True     # interning + simplification, see options()


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


@contextlib.contextmanager
def options(*, optimize: bool):
    """Switch interning (CSE) and construction-time simplification on or off.

    With ``optimize=False`` every operation makes a new node: no constant interning, no
    common-subexpression elimination, no ``x*1 -> x``, no constant folding.  That is
    plain AD, the baseline column b of seed 002's Table 2.  A graph keeps the setting it
    was created with.  (An eager first-order call, ``wg.grad(f)(x)``, records op by op
    whatever the setting, as NumPy computes: its graph is swept once and released.  The
    setting applies to what a nested transformation adds to it.)

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
    """
    old = _state.optimize
    _state.optimize = bool(optimize)
    try:
        yield
    finally:
        _state.optimize = old
