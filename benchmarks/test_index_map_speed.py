"""transform_layout with an index map beside reorder() with the equivalent tag and a copy of the
same bytes, in one run. Target: the map runs the tag's plan, so map / tag time is about 1.0
(the extra cost is the trace of the lambda, some 15-40 us a call; an IndexMap traced once
costs a table lookup)."""
import numpy as np
import pytest

import reorder as ro

SEP = ro.AXIS_SEPARATOR


def blocked4(n, c, h, w):
    return [n, c // 4, h, w, c % 4]


def blocked16(n, c, h, w):
    return [n, c // 16, h, w, c % 16]


def texture(n, c, h, w):
    return [n, c // 4, h, SEP, w, c % 4]


def merge(i, j, k):
    return [i * 64 + j, k // 4, k % 4]


# (name, dims, map, src tag, equivalent dst tag)
CASES = [
    ("nchw->nChw4c", (8, 64, 56, 56), blocked4, "nchw", "nChw4c"),
    ("nchw->nChw16c padded", (8, 30, 112, 112), blocked16, "nchw", "nChw16c"),
    ("nchw->texture 2-D", (8, 64, 56, 56), texture, "nchw", "nChw4c"),
    ("i*64+j, k//4, k%4", (256, 64, 200), merge, "abc", "abC4c"),
]
THREADS = [1, 2]


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("name,dims,fn,stag,dtag", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("impl", ["map", "IndexMap", "tag", "copy"])
def test_map_speed(benchmark, record, time_copy, impl, name, dims, fn, stag, dtag, threads):
    x = np.random.default_rng(0).standard_normal(dims).astype(np.float32)
    tagged = ro.reorder(x, stag, dtag)
    nbytes = x.nbytes + tagged.nbytes
    group = f"{name} {'x'.join(map(str, dims))} f32 {threads}T"
    benchmark.group = group
    if impl in ("map", "IndexMap"):
        # "map": the function, traced at every call; "IndexMap": traced once beforehand
        m = ro.IndexMap.from_func(fn)
        out = np.empty(m.physical_shape(dims) if fn is texture else m.map_shape(dims),
                       np.float32)
        benchmark(ro.transform_layout, x, fn if impl == "map" else m, out=out, threads=threads)
        assert np.array_equal(out.reshape(-1), tagged.reshape(-1))
    elif impl == "tag":
        out = np.empty_like(tagged)
        benchmark(ro.reorder, x, stag, dtag, out=out, threads=threads)
    else:
        time_copy(nbytes)
    record(group, impl, nbytes)
