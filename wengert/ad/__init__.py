"""Differentiation as graph-to-graph transformations: forward (tangents) and reverse
(adjoints) sweeps over a graph."""
from .forward import forward
from .reverse import reverse

__all__ = ["forward", "reverse"]
