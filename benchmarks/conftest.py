"""Benchmark harness: every case is timed next to np.copyto of the same number of bytes in the
same run, and the summary prints GB/s and the ratio to that copy (medians)."""
import collections

import numpy as np
import pytest

_rows = collections.defaultdict(dict)     # group -> {impl: (median_s, bytes)}


@pytest.fixture
def record(benchmark):
    """record(group, impl, nbytes): file the median of the benchmark just run."""
    def _record(group, impl, nbytes):
        benchmark.extra_info.update(group=group, impl=impl, bytes=nbytes)
        stats = getattr(benchmark, "stats", None)      # None under --benchmark-disable
        if stats is not None:
            median = stats.stats.median
            benchmark.extra_info["gbps"] = nbytes / median / 1e9
            _rows[group][impl] = (median, nbytes)
    return _record


@pytest.fixture
def time_copy(benchmark):
    """time_copy(nbytes): time the baseline, np.copyto between two buffers of nbytes / 2 (a
    case's src + dst bytes moved once)."""
    def _time_copy(nbytes):
        a = np.ones(nbytes // 2, np.uint8)
        b = np.empty_like(a)
        benchmark(np.copyto, b, a)
    return _time_copy


def pytest_benchmark_update_machine_info(config, machine_info):
    from reorder.front.config import config_dict
    machine_info["reorder"] = config_dict()


def pytest_terminal_summary(terminalreporter):
    if not _rows:
        return
    w = terminalreporter
    w.section("reorder: GB/s ((src+dst) bytes / median) and ratio to np.copyto of the same bytes")
    w.write_line(f"{'case':<52} {'impl':<10} {'ms':>9} {'GB/s':>7} {'x copy':>7}")
    for group in sorted(_rows):
        impls = _rows[group]
        copy = impls.get("copy")
        for impl in sorted(impls, key=lambda k: (k == "copy", k)):
            if impl not in impls:
                continue
            t, nbytes = impls[impl]
            ratio = f"{copy[0] / t:7.2f}" if copy else "      -"
            w.write_line(f"{group:<52} {impl:<10} {t * 1e3:9.3f} {nbytes / t / 1e9:7.1f} {ratio}")
