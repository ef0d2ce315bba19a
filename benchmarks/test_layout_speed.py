"""Speed of the reorders in the peer baseline, each beside np.copyto of the same bytes and
numpy's own reshape/transpose/copy for the same result. Targets (medians, ratio to copy):
nchw<->nChw16c >= 1.0 on 1 thread and >= 0.9 on 2; padded C=3/17 >= 0.9 and 2 threads
faster than 1; nchw->nhwc at >= 26 MB >= 0.6; oihw->OIhw16i16o >= 0.9."""
import numpy as np
import pytest

import reorder as ro
from reorder.testing.reference import abstract_tag, from_logical, reference_reorder


def _np_to_nChw16c(x, out):
    n, c, h, w = x.shape
    full = (c // 16) * 16
    out[:, : c // 16] = x[:, :full].reshape(n, c // 16, 16, h, w).transpose(0, 1, 3, 4, 2)
    if full < c:
        out[:, -1] = 0
        out[:, -1, :, :, : c - full] = x[:, full:].transpose(0, 2, 3, 1)


def _np_from_nChw16c(y, out):
    n, c, h, w = out.shape
    out[...] = y.transpose(0, 1, 4, 2, 3).reshape(n, -1, h, w)[:, :c]


def _np_to_nhwc(x, out):
    np.copyto(out, x.transpose(0, 2, 3, 1))


def _np_to_OIhw16i16o(x, out):
    o, i, h, w = x.shape
    np.copyto(out, x.reshape(o // 16, 16, i // 16, 16, h, w).transpose(0, 2, 4, 5, 3, 1))


def _at(name, stag, dtag, np_fn, *all_dims):
    """The case `name` at each of `all_dims`."""
    return [(name, dims, stag, dtag, np_fn) for dims in all_dims]


# (name, dims, src tag, dst tag, numpy equivalent)
CASES = [
    *_at("nchw->nChw16c", "nchw", "nChw16c", _np_to_nChw16c,
         (1, 64, 112, 112), (8, 256, 56, 56), (32, 256, 56, 56), (64, 512, 56, 56)),
    *_at("nchw->nChw16c padded", "nchw", "nChw16c", _np_to_nChw16c,
         (8, 3, 224, 224), (8, 17, 112, 112)),
    *_at("nChw16c->nchw", "nChw16c", "nchw", _np_from_nChw16c, (8, 256, 56, 56), (32, 256, 56, 56)),
    *_at("nchw->nhwc", "nchw", "nhwc", _np_to_nhwc, (8, 256, 56, 56), (32, 256, 56, 56)),
    *_at("oihw->OIhw16i16o", "oihw", "OIhw16i16o", _np_to_OIhw16i16o,
         (256, 256, 3, 3), (512, 512, 3, 3)),
]
THREADS = [1, 2]


def _setup(dims, stag, dtag):
    rng = np.random.default_rng(0)
    src = ro.Desc(dims, "f32", stag)
    x = from_logical(rng.standard_normal(dims).astype(np.float32), abstract_tag(stag, len(dims)))
    plan = ro.plan(src, ro.Desc(dims, "f32", dtag))
    return plan, x, plan.empty()


def _group(name, dims, threads):
    return f"{name} {'x'.join(map(str, dims))} f32 {threads}T"


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("name,dims,stag,dtag,np_fn", CASES,
                         ids=[f"{c[0]}-{'x'.join(map(str, c[1]))}" for c in CASES])
@pytest.mark.parametrize("impl", ["reorder", "copy", "numpy"])
def test_speed(benchmark, record, time_copy, impl, name, dims, stag, dtag, np_fn, threads):
    if impl == "numpy" and threads != 1:
        pytest.skip("numpy is single-threaded")
    plan, x, out = _setup(dims, stag, dtag)
    nbytes = x.nbytes + out.nbytes
    group = _group(name, dims, threads)
    benchmark.group = group
    if impl == "reorder":
        benchmark(plan, x, out, threads)
        if x.nbytes < (64 << 20):
            expected = reference_reorder(x, dims, abstract_tag(stag, len(dims)), abstract_tag(dtag, len(dims)))
            assert np.array_equal(out.view(np.uint8), expected.view(np.uint8))
    elif impl == "copy":
        time_copy(nbytes)
    else:
        benchmark(np_fn, x, out)
    record(group, impl, nbytes)


def test_call_overhead(benchmark, record):
    """A cached plan applied to a 1 KB tensor: the fixed cost of a call."""
    x = np.ones((1, 16, 4, 4), np.float32)
    plan = ro.plan(ro.Desc.of(x), ro.Desc(x.shape, "f32", "nChw16c"))
    out = plan.empty()
    benchmark.group = "call overhead 1 KiB"
    benchmark(plan, x, out)
    record("call overhead 1 KiB", "reorder", x.nbytes + out.nbytes)
