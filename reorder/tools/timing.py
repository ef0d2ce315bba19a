"""Timing helpers shared by the CLI's bench and demo: medians, GB/s and the ratio to a plain
copy of the same number of bytes measured in the same run."""
import time

import numpy as np



def median_time(fn, repeat=15, warmup=2, budget=2.0):
    """Median wall time of fn() over up to `repeat` runs (fewer if the budget runs out)."""
    for _ in range(warmup):
        fn()
    times, start = [], time.perf_counter()
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
        if time.perf_counter() - start > budget and len(times) >= 5:
            break
    times.sort()
    return times[len(times) // 2]


def copy_time(nbytes, repeat=15):
    """Median time of np.copyto over `nbytes` bytes (so it moves 2*nbytes: read + write)."""
    a = np.ones(max(nbytes, 1), np.uint8)
    b = np.empty_like(a)
    return median_time(lambda: np.copyto(b, a), repeat)


def measure(plan, x, nthreads, repeat=15):
    """Row of figures for running `plan` on x with `nthreads` threads."""
    out = plan.empty()
    t = median_time(lambda: plan(x, out=out, threads=nthreads), repeat)
    moved = x.nbytes + out.nbytes
    tc = copy_time(moved // 2, repeat)
    return {"time_s": t, "bytes": moved, "gbps": moved / t / 1e9, "copy_gbps": moved / tc / 1e9,
            "ratio_to_copy": tc / t, "out": out}
