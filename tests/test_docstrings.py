"""Every public function documents itself with an example, and every example runs."""
import doctest
import importlib
import inspect
import pkgutil

import pytest

import wengert as wg

MODULES = sorted(m.name for m in pkgutil.walk_packages(wg.__path__, "wengert.")
                 if not m.name.endswith("__main__"))   # importing it runs the command


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


@pytest.mark.parametrize("name", wg.__all__)
def test_public_names_have_an_example(name):
    obj = getattr(wg, name)
    if inspect.ismodule(obj) or callable(obj) or inspect.isclass(obj):
        doc = inspect.getdoc(obj) or ""
        assert ">>>" in doc, f"wg.{name} has no example in its docstring"
