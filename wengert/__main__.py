"""`python -m wengert` is the `wengert` command."""
import sys

from .cli import entry

sys.exit(entry())
