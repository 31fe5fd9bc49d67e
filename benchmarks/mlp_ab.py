"""A/B comparison of wengert trees on the MLP gradient of `arrays.py`.

A change of a few microseconds per gradient is below the noise of two separate runs of
`arrays.py`. This script measures each tree (a checkout of wengert: the working tree and,
say, `git worktree add --detach /tmp/base <commit>`) in a fresh process of its own, the
trees in turn, for several rounds. Each measurement is the median, over many pairs, of the
ratio of wengert's gradient time to the hand-written NumPy gradient's in the same process
(the paired ratio of `arrays.py`, so machine drift cancels out), with the absolute
microseconds above the hand-written gradient beside it.

    python benchmarks/mlp_ab.py . /tmp/base                # full size, 3 rounds
    python benchmarks/mlp_ab.py . /tmp/base --tiny         # fixed cost per gradient
    python benchmarks/mlp_ab.py . /tmp/base --rounds 5 --pairs 60
"""

import argparse
import os
import subprocess
import sys


def child(tree, tiny, pairs):
    """Runs in the subprocess: time one tree (imported from `tree`) and print one line."""
    tree = os.path.abspath(tree)
    sys.path[:0] = [tree, os.path.join(tree, "benchmarks")]
    import single_thread  # noqa: F401  (pins the thread pools: before numpy)
    import statistics
    import time

    import arrays
    from timing import keep_memory
    import wengert
    if not wengert.__file__.startswith(tree):
        raise SystemExit(f"{tree}: imported wengert from {wengert.__file__}")
    keep_memory()
    if tiny:
        arrays.MLP_SIZES, arrays.MLP_BATCH = (8, 8, 8, 10), 4
    data = arrays.mlp_data()
    w = arrays.make_wengert("mlp", data)[1]
    h = arrays.make_numpy("mlp", data)[1]
    calls = 2000 if tiny else 20
    for _ in range(3):
        w(), h()
    ratios, extra = [], []
    for _ in range(pairs):
        t0 = time.perf_counter()
        for _ in range(calls):
            w()
        t1 = time.perf_counter()
        for _ in range(calls):
            h()
        t2 = time.perf_counter()
        ratios.append((t1 - t0) / (t2 - t1))
        extra.append(((t1 - t0) - (t2 - t1)) / calls)
    print(f"{statistics.median(ratios):.4f} {statistics.median(extra) * 1e6:.1f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", nargs="+", help="checkouts of wengert to compare")
    ap.add_argument("--tiny", action="store_true", help="the tiny MLP of arrays.py --tiny")
    ap.add_argument("--rounds", type=int, default=3, help="processes per tree (default 3)")
    ap.add_argument("--pairs", type=int, default=40, help="paired timings per process")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.trees[0], args.tiny, args.pairs)
    results = {tree: [] for tree in args.trees}
    for _ in range(args.rounds):
        for tree in args.trees:
            cmd = [sys.executable, os.path.abspath(__file__), "--child", os.path.abspath(tree),
                   "--pairs", str(args.pairs)] + (["--tiny"] if args.tiny else [])
            out = subprocess.run(cmd, capture_output=True, text=True, cwd="/")
            if out.returncode:
                raise SystemExit(out.stderr.strip().splitlines()[-1])
            results[tree].append(out.stdout.split())
    size = "tiny MLP 8-8-8-10, batch 4" if args.tiny else "MLP 784-256-256-10, batch 128"
    print(f"{size}: wengert / hand-written per process (median of {args.pairs} pairs), "
          "and µs above hand-written")
    for tree, rows in results.items():
        print(f"{tree:<30} " + "   ".join(f"{r}x {us} µs" for r, us in rows))


if __name__ == "__main__":
    sys.exit(main())
