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
