"""`wengert run` on long ADDS programs: how the time and memory grow with the number of
statements (see README.md).

Two programs of N statements each:

* one form:   ``x1 := x0*2 + sin(x0);``, ``x2 := x1*2 + sin(x1);``, ... (generated code:
  one form of statement with other names; the parser reads the form once);
* many forms: random small expressions, most of them of a form of their own (the parser's
  worst case: lark reads nearly every statement).

Each is run in a fresh process (``python -m wengert run``, as a user runs it), so the
times include start-up; the peak memory is that process's.
"""
import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

# The child runs the program and reports its own peak resident memory.
_CHILD = ("import resource, sys; from wengert.cli import main; code = main(['run', sys.argv[1]]);"
          "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr);"
          "sys.exit(code)")


def one_form(n):
    return "x0 := y;\n" + "".join(f"x{i} := x{i - 1}*2 + sin(x{i - 1});\n"
                                  for i in range(1, n + 1))


def many_forms(n, seed=0):
    rng = random.Random(seed)

    def expr(depth):
        r = rng.random()
        if depth > 3 or r < 0.3:
            return rng.choice(["x", "y", "2", "3.5", "z"])
        if r < 0.45:
            return f"sin({expr(depth + 1)})"
        if r < 0.55:
            return f"-{expr(depth + 1)}"
        if r < 0.65:
            return f"({expr(depth + 1)})"
        return f"{expr(depth + 1)} {rng.choice('+-*/')} {expr(depth + 1)}"
    return "x := 1; y := 2; z := 3;\n" + "".join(f"v{i} := {expr(0)};\n" for i in range(n))


def run(path):
    """(seconds, peak kilobytes) of one `wengert run`."""
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _CHILD, path], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"wengert run {path} failed:\n{done.stderr}")
    return seconds, int(done.stderr.split()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=100_000, help="statements (default 100000)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="n = 20000, one repeat")
    args = ap.parse_args(argv)
    n, repeats = (20_000, 1) if args.quick else (args.n, args.repeats)
    print(f"wengert run, {n} statements; median of {repeats} run(s), each a fresh process")
    print(f"{'program':12} {'seconds':>8} {'us/stmt':>8} {'peak MB':>8}")
    with tempfile.TemporaryDirectory() as d:
        for name, make in (("one form", one_form), ("many forms", many_forms)):
            path = os.path.join(d, name.replace(" ", "_") + ".adds")
            with open(path, "w") as f:
                f.write(make(n))
            results = [run(path) for _ in range(repeats)]
            seconds = statistics.median(s for s, _ in results)
            peak = max(k for _, k in results) / 1024
            print(f"{name:12} {seconds:8.2f} {seconds / n * 1e6:8.1f} {peak:8.0f}")


if __name__ == "__main__":
    main()
