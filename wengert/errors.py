"""Exceptions raised by wengert."""


class ConcretizationError(TypeError):
    """A traced value was asked for its concrete value where it has none, or where
    reading it would silently drop its derivative.

    Raised by ``bool(x)`` (a Python ``if``/``while`` on a traced value) while tracing
    without values (``wg.trace``, ``wg.compile``), and by ``float(x)`` on any traced
    value, because ``float`` would cut ``x`` off the graph.

    Example:
        >>> import wengert as wg
        >>> def f(x):
        ...     return x if x > 0 else -x
        >>> wg.trace(f, 1.0)
        Traceback (most recent call last):
        ...
        wengert.errors.ConcretizationError: ...
    """


class GraphTooLarge(MemoryError):
    """A graph was asked for more nodes than its `max_nodes` allows.

    Graphs have no limit unless one is given; ADDS sessions set one (`wengert.adds`), since
    its language makes a node of every element and a matrix product can ask for millions.

    Example:
        >>> import wengert as wg
        >>> g = wg.Graph(max_nodes=2)
        >>> x = g.input(wg.ShapeDtype(), "x")
        >>> y = wg.math.sin(x)
        >>> wg.math.cos(y)
        Traceback (most recent call last):
        ...
        wengert.errors.GraphTooLarge: the graph would exceed 2 nodes
    """

    def __init__(self, max_nodes):
        super().__init__(f"the graph would exceed {max_nodes} nodes")
        self.max_nodes = max_nodes
