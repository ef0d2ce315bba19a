"""Same-type moves for every element size (f32, bf16, f16, s8, u8, f64): each case of
reorder/bench_cases.py beside np.copyto of the same bytes in the same run, 1 and 2 threads.
Targets (medians, ratio to copy): the f32 ones for every element size (bench_cases.py)."""
import functools

import numpy as np
import pytest

import reorder as ro
from reorder.tools.bench_cases import MOVE_CASES, MOVE_DTYPES
from reorder.testing.reference import abstract_tag, from_logical, reference_reorder

THREADS = [1, 2]


@functools.lru_cache(maxsize=1)
def _setup(dims, stag, dtag, dtype):
    """The plan, a source with zero padding placed by the reference, and an output."""
    rng = np.random.default_rng(0)
    storage = np.dtype(ro.Desc(dims, dtype).dtype.storage)
    data = rng.integers(0, 1 << min(8 * storage.itemsize, 31), dims).astype(storage) \
        if storage.kind != "f" else rng.standard_normal(dims).astype(storage)
    sabs, dabs = abstract_tag(stag, len(dims)), abstract_tag(dtag, len(dims))
    x = from_logical(data, sabs)
    plan = ro.plan(ro.Desc(dims, dtype, stag), ro.Desc(dims, dtype, dtag))
    out = plan.empty()
    plan(x, out, 1)
    assert np.array_equal(out.reshape(-1).view(np.uint8),
                          reference_reorder(x, dims, sabs, dabs).reshape(-1).view(np.uint8))
    return plan, x, out


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", MOVE_DTYPES)
@pytest.mark.parametrize("name,dims,stag,dtag", MOVE_CASES,
                         ids=[f"{c[0]}-{'x'.join(map(str, c[1]))}" for c in MOVE_CASES])
@pytest.mark.parametrize("impl", ["reorder", "copy"])
def test_move_speed(benchmark, record, time_copy, impl, name, dims, stag, dtag, dtype, threads):
    src, dst = ro.Desc(dims, dtype, stag), ro.Desc(dims, dtype, dtag)
    nbytes = src.nbytes + dst.nbytes
    group = f"{name} {'x'.join(map(str, dims))} {dtype} {threads}T"
    benchmark.group = group
    if impl == "reorder":
        plan, x, out = _setup(dims, stag, dtag, dtype)
        assert x.nbytes + out.nbytes == nbytes
        benchmark(plan, x, out, threads)
    else:
        time_copy(nbytes)
    record(group, impl, nbytes)
