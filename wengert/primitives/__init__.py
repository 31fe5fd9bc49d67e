"""The registry of primitives (registry.py) and the primitives themselves: scalar.py for
scalar/elementwise functions with their partial derivatives, shape.py for broadcasting."""
