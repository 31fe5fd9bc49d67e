"""Run every example in the guides and compare it with the output printed there.

    python docs/check_examples.py            # all guides in docs/
    python docs/check_examples.py docs/graph.md

Each ```python block of a guide is a doctest (``>>>`` lines and the output they print).
The blocks of one guide run in order in one namespace, like a session reading the guide
from the top.  Outputs must match exactly.  A ```python block without ``>>>`` is an error:
every example in the guides is meant to run.

ADDS examples (docs/adds.md) are checked too:

* an ```adds block of ``adds> `` lines is an interactive session: each prompt's statement
  runs in one session per guide and must print the lines that follow it;
* any other ```adds block is a program, run in a session of its own, which must succeed;
  one whose first line is ``% FILE`` is instead the file FILE for the shell examples;
* a ```console block's ``$ `` lines are shell commands, run in a scratch directory that
  holds those files and the repository's examples/, and must print the lines that follow
  them; a line ``...`` (indented or not) stands for any number of lines.
"""
import doctest
import io
import os
import pathlib
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```(python|adds|console)\n(.*?)^```", re.S | re.M)
ROOT = pathlib.Path(__file__).resolve().parent.parent


def check(path: pathlib.Path) -> tuple[int, int]:
    text = path.read_text(encoding="utf-8")
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=0)
    globs = {"__name__": "__docs__"}
    adds = _Adds()
    failed = tried = 0
    for match in FENCE.finditer(text):
        kind, block = match.groups()
        line = text.count("\n", 0, match.start()) + 1
        where = f"{path}:{line}"
        if kind == "python":
            if ">>>" not in block:
                print(f"{where}: python block with no >>> example")
                failed += 1
                continue
            test = parser.get_doctest(block, globs, f"{path.name}:{line}", str(path), line)
            result = runner.run(test, clear_globs=False)
            globs = test.globs          # DocTest copies the namespace: carry it on
            failed += result.failed
            tried += result.attempted
        else:
            f, t = adds.check(kind, block, where)
            failed += f
            tried += t
    return failed, tried


class _Adds:
    """The state the ADDS examples of one guide share: the interactive session and the
    files written by ``% FILE`` blocks."""

    def __init__(self):
        self.session = None
        self.files = {}

    def check(self, kind, block, where) -> tuple[int, int]:
        """(failed, tried) for one ```adds or ```console block."""
        from wengert.adds import AddsError, Session
        lines = block.splitlines()
        if kind == "console":
            return self._console(lines, where)
        if any(line.startswith("adds> ") for line in lines):
            if self.session is None:
                self.session = Session(stdout=io.StringIO(), stderr=io.StringIO())
            return self._prompts(lines, where)
        if lines and re.fullmatch(r"% \S+", lines[0]):
            self.files[lines[0][2:]] = block.split("\n", 1)[1]
            return 0, 0
        try:
            Session(stdout=io.StringIO(), stderr=io.StringIO()).execute(block)
        except AddsError as e:
            print(f"{where}: the program fails:\n{e}")
            return 1, 1
        return 0, 1

    def _prompts(self, lines, where):
        from wengert.adds import AddsError
        failed = tried = 0
        for statement, expected in _commands(lines, "adds> "):
            out = self.session.stdout = io.StringIO()
            try:
                self.session.execute(statement)
                got = out.getvalue().splitlines()
            except AddsError as e:
                got = str(e).splitlines()
            tried += 1
            if not _matches(got, expected):
                failed += 1
                _report(where, "adds> " + statement, expected, got)
        return failed, tried

    def _console(self, lines, where):
        failed = tried = 0
        env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep +
                   os.environ.get("PATH", ""), COLUMNS="80")
        with tempfile.TemporaryDirectory() as scratch:
            os.symlink(ROOT / "examples", os.path.join(scratch, "examples"))
            for name, content in self.files.items():
                pathlib.Path(scratch, name).write_text(content)
            for command, expected in _commands(lines, "$ "):
                r = subprocess.run(["bash", "-c", command], cwd=scratch, env=env, text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                tried += 1
                if not _matches(r.stdout.splitlines(), expected):
                    failed += 1
                    _report(where, "$ " + command, expected, r.stdout.splitlines())
        return failed, tried


def _commands(lines, prompt):
    """(command, the lines it should print) for each prompted line of a block."""
    out = []
    for line in lines:
        if line.startswith(prompt):
            out.append((line[len(prompt):], []))
        elif out:
            out[-1][1].append(line)
    return out


def _matches(got, expected) -> bool:
    """Whether the lines `got` are the lines `expected`, where a line ``...`` in `expected`
    stands for any number of lines (indented or not, as the lines around it are)."""
    pattern = "".join("(?:.*\n)*?" if e.strip() == "..." else re.escape(e) + "\n"
                      for e in expected)
    return re.fullmatch(pattern, "".join(g + "\n" for g in got)) is not None


def _report(where, command, expected, got):
    print(f"{where}: {command}\nexpected:\n" + "".join(f"    {e}\n" for e in expected)
          + "got:\n" + "".join(f"    {g}\n" for g in got))


def main(argv) -> int:
    here = pathlib.Path(__file__).parent
    paths = [pathlib.Path(p) for p in argv] or sorted(here.glob("*.md"))
    total_failed = 0
    for path in paths:
        failed, tried = check(path)
        total_failed += failed
        print(f"{path}: {tried} examples, {failed} failed")
    return 1 if total_failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
