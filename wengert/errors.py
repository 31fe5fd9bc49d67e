"""Exceptions raised by wengert, and the check of a count argument that several raise."""
import operator


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


class NoValue(Exception):
    """Raised by the implementation of an operation whose value is not a function of its
    arguments alone: a collective such as ``psum``, whose value depends on the other
    examples of the `wg.vmap` that binds its axis name.  `Graph.apply` catches it and
    makes the node abstract (a shape and a dtype, no value), even where its arguments have
    values; the vmap then computes it from the whole batch.  Seen outside a trace, it says
    where the operation belongs.

    Example:
        >>> import wengert as wg
        >>> from wengert.primitives.collective import psum
        >>> psum(1.0, axis_name="i")
        Traceback (most recent call last):
        ...
        wengert.errors.NoValue: psum over axis 'i' has a value only inside the function ...
    """


def integer_argument(value, who, name, least, what="an integer"):
    """`value` as an int of at least `least`, or an error naming `who`'s argument `name`
    (a float such as 2.5 steps, or None, would otherwise meet a bare range() TypeError).

    Example:
        >>> from wengert.errors import integer_argument
        >>> integer_argument(3, "scan", "length", 0)
        3
        >>> integer_argument(2.5, "scan", "length", 0)
        Traceback (most recent call last):
        ...
        TypeError: scan: length must be an integer, got float 2.5
    """
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{who}: {name} must be {what}, got {type(value).__name__} "
                        f"{value!r:.40}") from None
    if value < least:
        raise ValueError(f"{who}: {name} must be >= {least}, got {value}")
    return value
