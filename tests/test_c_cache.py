"""The persistent cache of compiled C (``WENGERT_CACHE_DIR``, `wengert.codegen.c.library`):
a library compiled once is loaded by later processes (here: the process's own cache
cleared) instead of compiled; the key changes with the source and the flags (so with the
x86-64 level the loops are compiled for); a corrupt file is compiled again and replaced;
a directory that cannot be written warns and compiles; two processes compiling at once
both get a library, and the file stays whole."""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from test_loops import HAVE_CC
from wengert.codegen import c as C

pytestmark = pytest.mark.skipif(not HAVE_CC, reason="no C compiler on this machine")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache directory, named by WENGERT_CACHE_DIR, and a fresh process's state."""
    directory = tmp_path / "cache"
    monkeypatch.setenv("WENGERT_CACHE_DIR", str(directory))
    monkeypatch.setattr(C, "_loaded", {})
    monkeypatch.setattr(C, "_unwritable", set())
    return directory


@pytest.fixture
def compiles(monkeypatch):
    """The compiler's runs (``--version`` aside), counted: a list of their commands."""
    runs, run = [], subprocess.run

    def counting(command, *args, **kwargs):
        if "--version" not in command:
            runs.append(command)
        return run(command, *args, **kwargs)
    monkeypatch.setattr(C.subprocess, "run", counting)
    return runs


def source(tag):
    """C source of a function `answer`, a new one for each tag (the test's own file)."""
    return f"/* {tag} */ int answer(void) {{ return 42; }}"


def libraries(directory):
    return sorted(p for p in os.listdir(directory) if p.endswith(".so"))


def test_a_library_is_kept_and_loaded_again_without_compiling(cache, compiles, monkeypatch):
    assert C.library(source("kept")).answer() == 42
    assert len(compiles) == 1 and len(libraries(cache)) == 1
    monkeypatch.setattr(C, "_loaded", {})              # another process
    assert C.library(source("kept")).answer() == 42
    assert len(compiles) == 1                           # loaded, not compiled
    assert not [p for p in os.listdir(cache) if p.endswith(".tmp")]


def test_the_key_holds_the_source_and_the_flags(cache, compiles):
    C.library(source("key"))
    C.library(source("key"), ("-O3",))
    C.library(source("key 2"))
    assert len(compiles) == 3 and len(libraries(cache)) == 3


def test_the_key_holds_the_compiler_identity(cache, monkeypatch):
    path = C._cache_path("/usr/bin/cc", ["-O2"], source("who"))
    monkeypatch.setitem(C._identities, "/usr/bin/cc", "cc 99.0")
    assert C._cache_path("/usr/bin/cc", ["-O2"], source("who")) != path
    assert C._cache_path("/usr/bin/cc", ["-O1"], source("who")) != path


def test_off_by_default(monkeypatch, compiles):
    monkeypatch.delenv("WENGERT_CACHE_DIR", raising=False)
    monkeypatch.setattr(C, "_loaded", {})
    assert C._cache_path(C.compiler(), ["-O2"], source("off")) is None
    assert C.library(source("off")).answer() == 42


def test_a_build_directory_removed_while_running_is_made_again(monkeypatch):
    # (a long-running process whose /tmp/wengert-c-* a cleaner removed: every compile
    # after failed with FileNotFoundError; found by tools/fuzz.py)
    import shutil
    monkeypatch.delenv("WENGERT_CACHE_DIR", raising=False)
    monkeypatch.setattr(C, "_loaded", {})
    monkeypatch.setattr(C, "_build_dir", None)
    assert C.library(source("gone 1")).answer() == 42
    shutil.rmtree(C._build_dir)
    assert C.library(source("gone 2")).answer() == 42


def test_a_corrupt_file_is_compiled_again_and_replaced(cache, compiles, monkeypatch):
    C.library(source("corrupt"))
    (name,) = libraries(cache)
    (cache / name).write_bytes(b"not a shared library")
    monkeypatch.setattr(C, "_loaded", {})
    assert C.library(source("corrupt")).answer() == 42      # no crash: compiled again
    assert len(compiles) == 2
    monkeypatch.setattr(C, "_loaded", {})
    assert C.library(source("corrupt")).answer() == 42      # the new file loads
    assert len(compiles) == 2


def test_a_directory_that_cannot_be_written_warns_once_and_compiles(tmp_path, monkeypatch,
                                                                      compiles):
    # (a file where the directory should be: a read-only directory would not stop root)
    blocker = tmp_path / "not a directory"
    blocker.write_text("")
    monkeypatch.setenv("WENGERT_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setattr(C, "_loaded", {})
    monkeypatch.setattr(C, "_unwritable", set())
    with pytest.warns(RuntimeWarning, match="WENGERT_CACHE_DIR=.*compiling without"):
        assert C.library(source("unwritable")).answer() == 42
    with warnings.catch_warnings():
        warnings.simplefilter("error")                      # once per directory
        assert C.library(source("unwritable 2")).answer() == 42
    assert len(compiles) == 2


def test_two_processes_compiling_at_once(cache):
    script = ("import sys; from wengert.codegen import c; "
              "print(c.library(sys.argv[1]).answer())")
    env = {**os.environ, "WENGERT_CACHE_DIR": str(cache)}
    runs = [subprocess.Popen([sys.executable, "-c", script, source("race")], env=env,
                             stdout=subprocess.PIPE, text=True) for _ in range(2)]
    assert [p.communicate()[0].strip() for p in runs] == ["42", "42"]
    assert len(libraries(cache)) == 1
    assert not [p for p in os.listdir(cache) if p.endswith(".tmp")]


def test_a_compiled_gradient_loads_from_the_cache(cache, compiles, monkeypatch):
    def f(x):
        return wnp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    x = np.linspace(-1.0, 1.0, 500)
    first = wg.compile(wg.grad(f), x, backend="c")
    assert getattr(first.entry, "looped", False)
    n = len(compiles)
    monkeypatch.setattr(C, "_loaded", {})
    again = wg.compile(wg.grad(f), x, backend="c")
    assert len(compiles) == n                       # nothing compiled
    np.testing.assert_array_equal(again(x), first(x))


def test_the_key_holds_the_target_of_the_loops(cache, compiles, monkeypatch):
    # A library compiled for AVX-512 must never be loaded where the processor lacks it:
    # there the probe chooses another level, whose flags make another key.
    from wengert.codegen import cloops
    if cloops.target() == cloops.BASELINE:
        pytest.skip("this machine runs no wider level")

    def f(x):
        return wnp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    x = np.linspace(-1.0, 1.0, 500)
    wide = wg.compile(wg.grad(f), x, backend="c")
    n, kept = len(compiles), libraries(cache)
    monkeypatch.setattr(C, "_loaded", {})                   # another process, on a machine
    monkeypatch.setattr(cloops, "_RUNS", dict.fromkeys(cloops.LEVELS, False))  # of SSE2
    baseline = wg.compile(wg.grad(f), x, backend="c")
    assert len(compiles) > n and set(kept) < set(libraries(cache))    # compiled again
    assert any("-march" in " ".join(command) for command in compiles[:n])
    assert not any("-march" in " ".join(command) for command in compiles[n:])
    np.testing.assert_array_equal(baseline(x), wide(x))
