"""Differentiation as graph-to-graph transformations: forward (tangents) and reverse
(adjoints) sweeps over a graph."""
from .forward import forward
from .reverse import reverse, drop_unread, active_indices, eager_plan

__all__ = ["forward", "reverse", "drop_unread", "active_indices",
           "eager_plan"]
