"""One timing discipline for every benchmark: warm up, size the batch of calls so a repeat
lasts long enough for the clock, take the median over repeats, and compare two
implementations by the ratio within each repeat.

Also the two things a run's allocator state needs: the page faults it took, and a way to
keep glibc from returning freed memory to the OS after every call (see README.md).
"""
import argparse
import math
import statistics
import time


def parser(doc, quick_help, json=True):
    """The command line every benchmark takes: its docstring's first line as the
    description, ``--quick`` (what it shrinks, `quick_help`) and, with `json`,
    ``--json PATH``; a benchmark adds its own options to it."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=quick_help)
    if json:
        ap.add_argument("--json", metavar="PATH", help="also write results as JSON")
    return ap


def schedule(args):
    """(repeats, min_time) for a run: 7 repeats of at least 0.2 s each, or with --quick
    3 of 0.05 s."""
    return (3, 0.05) if args.quick else (7, 0.2)


def calibrate(fn, min_time):
    """Warm up, then choose how many calls make one repeat last at least min_time.

    The batch is sized from one call, so a slow peer (eager JAX, ~0.3 s a gradient) runs
    one call per repeat while a fast one runs many and the timer's resolution is
    negligible."""
    fn()  # warm-up: the first calls pay one-off costs (imports, allocator, dispatch caches)
    t = time.perf_counter()
    fn()
    once = time.perf_counter() - t
    return max(1, math.ceil(min_time / max(once, 1e-9)))


def time_it(fn, repeats, min_time):
    """(median over `repeats` of the mean seconds per call, calls per repeat)."""
    calls = calibrate(fn, min_time)
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - t) / calls)
    return statistics.median(samples), calls


def time_interleaved(fns, repeats, min_time):
    """Per implementation (a dict name -> zero-argument call): the seconds per call of
    every repeat, the calls per repeat, and the minor page faults per call (None where
    the OS does not count them).

    Repeats are interleaved: repeat r runs every implementation once before repeat
    r+1. A slow patch of machine load then hits all implementations about equally, and
    `paired_ratio` cancels it out."""
    calls = {name: calibrate(fn, min_time) for name, fn in fns.items()}
    samples = {name: [] for name in fns}
    faults = dict.fromkeys(fns, 0)
    for _ in range(repeats):
        for name, fn in fns.items():
            n = calls[name]
            f0 = page_faults()
            t = time.perf_counter()
            for _ in range(n):
                fn()
            samples[name].append((time.perf_counter() - t) / n)
            faults[name] = None if f0 is None else faults[name] + page_faults() - f0
    return {name: (s, calls[name],
                   None if faults[name] is None else faults[name] / (calls[name] * repeats))
            for name, s in samples.items()}


def paired_ratio(times, name, base):
    """How long `name` took against `base`, from `time_interleaved`'s repeat times (a dict
    name -> seconds per repeat): the median over repeats of the ratio within each repeat.
    The two ran moments apart, so a change of machine load cancels out of each ratio.
    None if either did not run."""
    if name not in times or base not in times:
        return None
    return statistics.median(a / b for a, b in zip(times[name], times[base]))


def fmt_ratio(r):
    """A ratio for a table: ``1.23x`` (three significant digits below 0.1: ``0.00192x``),
    or ``n/a`` where there is none."""
    if r is None:
        return "n/a"
    return f"{r:.2f}x" if r >= 0.1 else f"{r:.3g}x"


def page_faults():
    """Minor page faults of this process so far (None where the OS does not say)."""
    try:
        import resource
    except ImportError:                               # not on Unix
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def keep_memory():
    """Ask glibc's allocator to keep freed memory instead of returning it to the OS after
    every call (what MALLOC_TRIM_THRESHOLD_ and MALLOC_MMAP_THRESHOLD_ do). Returns
    whether it could. See README.md: it removes hundreds of page faults per gradient."""
    import ctypes
    import ctypes.util
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c")).mallopt
    except (OSError, AttributeError, TypeError):      # not glibc
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    return bool(mallopt(M_MMAP_THRESHOLD, 64 << 20) and mallopt(M_TRIM_THRESHOLD, 256 << 20))


def run_table(makers, title, base, repeats, min_time, unit="ms/call", check=None):
    """Build, check, time and print one table: `makers` maps a row's name to a function
    returning (version, zero-argument call); a maker that raises ImportError is a peer
    not installed, and skipped.  By default every row's result must equal `base`'s
    (arrays, or lists of them) before timing; ``check(results)``, if given, does the
    checking instead: it gets every row's result (name -> result), prints its own
    warnings, and returns a note per row for the table's last column.  Ratios are against
    `base`, paired within each repeat.  Returns the base row's result."""
    import numpy as np
    fns, versions = {}, {}
    for name, make in makers.items():
        try:
            versions[name], fns[name] = make()
        except ImportError:
            print(f"{name:<16} skipped (not installed)")
    results = {name: fn() for name, fn in fns.items()}
    reference = results[base]
    notes = None
    if check is not None:
        notes = check(results)
    else:
        for name, got in results.items():
            same = all(np.allclose(a, b, rtol=1e-9, atol=1e-12)
                       for a, b in zip(got, reference)) if isinstance(reference, list) \
                else np.allclose(got, reference, rtol=1e-9, atol=1e-12)
            if not same:
                print(f"WARNING: {name}'s result differs from {base}'s")
    print_table(time_interleaved(fns, repeats, min_time), versions, title, base, repeats,
                unit, notes)
    return reference


class Skip(Exception):
    """Raised by a `peer_table` maker: a peer that cannot compute this problem; the
    message says why."""


def central_differences(f, x, h):
    """The Jacobian of f at the 1-D array x by central differences, one column (last axis)
    per element of x: the "fd" row of a benchmark (2 len(x) calls of f)."""
    import numpy as np
    cols = []
    for k in range(len(x)):
        e = np.zeros(len(x))
        e[k] = h
        cols.append((f(x + e) - f(x - e)) / (2 * h))
    return np.stack(cols, axis=-1)


def relative_error(got, want):
    """The largest difference relative to the largest entry of `want`, normwise, over the
    parts of a gradient (a list or tuple of arrays) or over one array."""
    import numpy as np
    parts = zip(got, want) if isinstance(want, (list, tuple)) else [(got, want)]
    return max(float(np.max(np.abs(np.asarray(a) - np.asarray(b)))
                     / max(float(np.max(np.abs(np.asarray(b)))), 1e-300)) for a, b in parts)


def peer_table(name, title, makers, repeats, min_time, tolerance, tolerances=None,
               unchecked=(), unit="ms/grad"):
    """Build, check, time and print one problem's table against its "wengert" row, and
    return it for --json as ``{"title", "rows"}``.

    Each maker returns (version, zero-argument call) or (version, call, note); one that
    raises ImportError (not installed), `Skip` (cannot compute this) or fails otherwise
    is listed as skipped with the reason, as is a call that fails.  Every result but
    those of `unchecked` rows is compared with wengert's (`relative_error`), with a
    WARNING above `tolerances.get(row, tolerance)`.  The last line sums the table up as
    ratios to wengert's time (lower is faster)."""
    import numpy as np
    tolerances = tolerances or {}
    fns, versions, notes, skipped = {}, {}, {}, {}
    for row, make in makers.items():
        try:
            made = make()
        except ImportError:
            skipped[row] = "not installed"
            continue
        except Skip as e:
            skipped[row] = str(e)
            continue
        except Exception as e:                        # a peer that fails to build
            skipped[row] = f"failed: {type(e).__name__}: {str(e).splitlines()[0][:150]}"
            continue
        versions[row], fns[row] = made[:2]
        notes[row] = made[2] if len(made) > 2 else ""
    results = {}
    for row in list(fns):
        try:
            results[row] = fns[row]()
        except Exception as e:                        # a gradient that cannot run
            skipped[row] = f"failed: {type(e).__name__}: {str(e).splitlines()[0][:150]}"
            del fns[row]
    want = results["wengert"]
    errors = {}
    for row, got in results.items():
        if row == "wengert" or row in unchecked:
            continue
        errors[row] = relative_error(got, want)
        if errors[row] > tolerances.get(row, tolerance):
            print(f"WARNING: {name}: {row}'s result differs from wengert's by "
                  f"{errors[row]:.1e} (relative to its largest entry)")
    times = time_interleaved(fns, repeats, min_time)
    repeat_times = {row: t[0] for row, t in times.items()}
    key = unit.replace("/", "_per_")                  # ms/grad -> ms_per_grad
    print(f"\n{title}, median of {repeats} repeats")
    print(f"{'name':<12} {'version':<14} {unit:>10} {'vs wengert':>11}  check")
    rows = []
    for row in makers:
        if row in skipped:
            print(f"{row:<12} skipped: {skipped[row]}")
            rows.append({"name": row, "skipped": skipped[row]})
            continue
        ms = float(np.median(times[row][0])) * 1e3
        ratio = paired_ratio(repeat_times, row, "wengert")
        check = "the reference" if row == "wengert" else \
            "-" if row not in errors else f"differs by {errors[row]:.1e}"
        print(f"{row:<12} {versions[row]:<14} {ms:>10.2f} {fmt_ratio(ratio):>11}  {check}"
              + (f"; {notes[row]}" if notes[row] else ""))
        rows.append({"name": row, "version": versions[row], key: ms, "vs_wengert": ratio,
                     "difference": errors.get(row), "note": notes[row]})
    ran = [r for r in rows if key in r and r["name"] != "wengert"]
    base = next(r for r in rows if r["name"] == "wengert")
    print(f"{name}: wengert {base[key]:.2f} {unit}; "
          + ", ".join(f"{r['name']} {fmt_ratio(r['vs_wengert'])}" for r in ran)
          + " (time / wengert's, lower is faster)")
    return {"title": title, "rows": rows}


def write_report(path, benchmark, quick, problems):
    """Write a peer-table benchmark's --json file: its name, the Python and the platform,
    whether it was a --quick run, and `problems` (name -> `peer_table`'s table)."""
    import json
    import platform
    with open(path, "w") as f:
        json.dump({"benchmark": benchmark, "python": platform.python_version(),
                   "platform": platform.platform(), "quick": quick, "problems": problems},
                  f, indent=2)
    print(f"wrote {path}")


def relative_difference(reference_name, tolerance, skip=()):
    """A `run_table` check for results that agree only to a solver's tolerance: each
    row's largest difference from `reference_name`'s, relative to its largest entry, as
    the row's note, and a WARNING line above `tolerance` (rows in `skip` are not
    compared)."""
    import numpy as np

    def check(results):
        reference = results[reference_name]
        notes = {}
        for name, got in results.items():
            if name == reference_name or name in skip:
                notes[name] = "the reference" if name == reference_name else "-"
                continue
            err = np.max(np.abs(got - reference)) / np.max(np.abs(reference))
            notes[name] = f"differs from {reference_name}'s by {err:.1e}"
            if err > tolerance:
                print(f"WARNING: {name}'s result differs from {reference_name}'s by {err:.1e}")
        return notes
    return check


def print_table(times, versions, title, base, repeats, unit="ms/call", notes=None):
    """Print `time_interleaved`'s times as a table: each row's median milliseconds (or
    microseconds, where `unit` starts with "us") and its time against `base`'s, paired
    within each repeat; `notes` (name -> text), if given, in a last column."""
    width = max(16, *(len(name) + 1 for name in times))
    print(f"\n{title}, median of {repeats} repeats")
    print(f"{'name':<{width}} {'version':<12} {unit:>9} {'vs ' + base:>16}"
          + ("  check" if notes else ""))
    repeat_times = {k: v[0] for k, v in times.items()}
    for name, (samples, _, _) in times.items():
        ms = sorted(samples)[len(samples) // 2] * (1e6 if unit.startswith("us") else 1e3)
        ratio = fmt_ratio(paired_ratio(repeat_times, name, base))
        print(f"{name:<{width}} {versions[name]:<12} {ms:>9.3f} {ratio:>16}"
              + (f"  {notes[name]}" if notes else ""))
