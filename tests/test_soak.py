"""A soak: 10**5 calls over a mix of plans (copy, transposes, blocked, generic, converting with
scales, a thread team now and then), all with out=. Resident memory must not grow: a leak of a
few bytes per call would add megabytes here."""
import time

import numpy as np
import pytest

import reorder as ro
import quant_reference as qr

from reorder.testing.reference import ref_physical_shape, ref_reorder, uint_view

pytestmark = pytest.mark.slow        # a soak: 10**5 calls

CALLS = 100_000
ALLOWED_GROWTH = 512 << 10          # bytes of RSS: a leak above ~5 bytes a call fails it


def rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def _jobs():
    """(call, check) pairs; each call writes into its own preallocated out."""
    rng = np.random.default_rng(0)
    jobs = []

    def add(x, stag, dtag, dims, abs_s, abs_d, via_plan, **kw):
        x = np.ascontiguousarray(x)
        exp = ref_reorder(x.reshape(-1), dims, abs_s, abs_d).reshape(ref_physical_shape(dims, abs_d))
        out = np.empty_like(exp)
        if via_plan:
            p = ro.plan(ro.Desc(dims, x.dtype.name, stag), ro.Desc(dims, x.dtype.name, dtag))
            call = (lambda p=p, x=x, out=out: p(x, out=out, **kw))
        else:
            call = (lambda x=x, out=out: ro.reorder(x, stag, dtag, dims=dims, out=out, **kw))
        jobs.append((call, lambda out=out, exp=exp: np.array_equal(uint_view(out), uint_view(exp))))

    f32 = rng.standard_normal((2, 19, 5, 7)).astype(np.float32)
    add(f32, "nchw", "nChw16c", (2, 19, 5, 7), "abcd", "aBcd16b", True)
    add(f32, "nchw", "nhwc", (2, 19, 5, 7), "abcd", "acdb", False)
    add(f32, "nchw", "nchw", (2, 19, 5, 7), "abcd", "abcd", True)
    add(rng.integers(-9, 9, (35, 21, 3, 3)).astype(np.int8), "oihw", "OIhw4i16o4i", (35, 21, 3, 3),
        "abcd", "ABcd4b16a4b", False)
    add(rng.integers(0, 9, (1000, 3)).astype(np.int16), "ab", "ba", (1000, 3), "ab", "ba", True)
    add(rng.standard_normal((17, 33)), "ab", "AB32a32b8a4b", (17, 33), "ab", "AB32a32b8a4b", False,
        threads=1)
    big = rng.standard_normal((4, 37, 40, 41)).astype(np.float32)        # a thread team starts
    add(big, "nchw", "nChw8c", (4, 37, 40, 41), "abcd", "aBcd8b", True, threads=2)
    # a converting plan with per-channel scales, against the conversion reference
    scales = np.linspace(0.5, 2, 19, dtype=np.float32)
    conv = ro.plan(ro.Desc((2, 19, 5, 7), "f32", "nchw"), ro.Desc((2, 19, 5, 7), "s8", "nChw16c"),
                   src_scales=scales, src_scale_mask=2)
    cout = conv.empty()
    cexp, _, _ = qr.ref_reorder((f32 * 40).reshape(-1), (2, 19, 5, 7), "abcd", "aBcd16b", "f32", "s8",
                                src_scales=scales, src_mask=2)
    f40 = f32 * 40
    jobs.append((lambda: conv(f40, out=cout), lambda: np.array_equal(cout.reshape(-1), cexp)))
    return jobs


def test_rss_does_not_grow_over_1e5_calls():
    jobs = _jobs()
    weights = [100] * (len(jobs) - 2) + [1, 100]    # the thread-team job is far bigger: run it less
    order = np.repeat(np.arange(len(jobs)), weights)
    order = np.resize(np.random.default_rng(1).permutation(order), CALLS)

    for i in order[:10_000]:                          # warm up caches, pools and the thread team
        jobs[i][0]()
    before = rss_bytes()
    start = time.perf_counter()
    for i in order:
        jobs[i][0]()
    elapsed = time.perf_counter() - start
    after = rss_bytes()
    for call, ok in jobs:
        assert ok()
    growth = after - before
    print(f"soak: {CALLS} calls in {elapsed:.1f} s, RSS {before / 2**20:.1f} -> "
          f"{after / 2**20:.1f} MiB ({growth / 1024:+.0f} KiB)")
    assert growth <= ALLOWED_GROWTH, f"RSS grew by {growth / 2**20:.2f} MiB over {CALLS} calls"
