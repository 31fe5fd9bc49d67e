"""Every example in the guides (docs/*.md) runs and prints what the guide says it prints.

The guides' own checker, docs/check_examples.py, does the work: each guide's ```python
blocks are doctests, run in order in one namespace, outputs compared exactly.
"""
import importlib.util
import pathlib

import pytest

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"


def _checker():
    spec = importlib.util.spec_from_file_location("check_examples", DOCS / "check_examples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check_examples = _checker()
GUIDES = sorted(DOCS.glob("*.md"))


def test_there_are_guides():
    assert len(GUIDES) > 1


# the guides show NumPy's domain conventions (log(-2) is nan, with a RuntimeWarning) on purpose
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("guide", GUIDES, ids=[p.name for p in GUIDES])
def test_guide_examples(guide):
    failed, tried = check_examples.check(guide)
    assert failed == 0, f"{guide.name}: {failed} of {tried} examples failed (output above)"
