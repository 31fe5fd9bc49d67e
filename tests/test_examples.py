"""The examples run and do what they say."""
import importlib.util
import os

import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_digits_cnn_reaches_97_percent(capsys):
    pytest.importorskip("sklearn")
    acc = load("digits_cnn").main()
    assert acc >= 0.97
    out = capsys.readouterr().out
    assert "epoch 25/25" in out and "test accuracy" in out
