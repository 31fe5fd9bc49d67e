"""One timing discipline for every benchmark: warm up, size the batch of calls so a repeat
lasts long enough for the clock, take the median over repeats, and compare two
implementations by the ratio within each repeat.

Also the two things a run's allocator state needs: the page faults it took, and a way to
keep glibc from returning freed memory to the OS after every call (see README.md).
"""
import math
import statistics
import time


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
    """Print `time_interleaved`'s times as a table: each row's median milliseconds and its
    time against `base`'s, paired within each repeat; `notes` (name -> text), if given,
    in a last column."""
    width = max(16, *(len(name) + 1 for name in times))
    print(f"\n{title}, median of {repeats} repeats")
    print(f"{'name':<{width}} {'version':<12} {unit:>9} {'vs ' + base:>16}"
          + ("  check" if notes else ""))
    repeat_times = {k: v[0] for k, v in times.items()}
    for name, (samples, _, _) in times.items():
        ms = sorted(samples)[len(samples) // 2] * 1e3
        ratio = fmt_ratio(paired_ratio(repeat_times, name, base))
        print(f"{name:<{width}} {versions[name]:<12} {ms:>9.3f} {ratio:>16}"
              + (f"  {notes[name]}" if notes else ""))
