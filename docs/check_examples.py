"""Run every example in the guides and compare it with the output printed there.

    python docs/check_examples.py            # all guides in docs/
    python docs/check_examples.py docs/graph.md

Each ```python block of a guide is a doctest (``>>>`` lines and the output they print).
The blocks of one guide run in order in one namespace, like a session reading the guide
from the top.  Outputs must match exactly.  A ```python block without ``>>>`` is an error:
every example in the guides is meant to run.
"""
import doctest
import pathlib
import re
import sys

FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def check(path: pathlib.Path) -> tuple[int, int]:
    text = path.read_text(encoding="utf-8")
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=0)
    globs = {"__name__": "__docs__"}
    failed = tried = 0
    for match in FENCE.finditer(text):
        block = match.group(1)
        line = text.count("\n", 0, match.start()) + 1
        if ">>>" not in block:
            print(f"{path}:{line}: python block with no >>> example")
            failed += 1
            continue
        test = parser.get_doctest(block, globs, f"{path.name}:{line}", str(path), line)
        result = runner.run(test, clear_globs=False)
        globs.update(test.globs)        # DocTest ran on a copy: carry its names forward
        failed += result.failed
        tried += result.attempted
    return failed, tried


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
