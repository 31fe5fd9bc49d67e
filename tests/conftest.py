import os
import sys

# the tests import their helper module `fd` by name
sys.path.insert(0, os.path.dirname(__file__))
