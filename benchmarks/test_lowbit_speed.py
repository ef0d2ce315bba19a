"""Speed of the low-bit reorders, each beside np.copyto of the same bytes and a numpy version
of the same result. Targets (medians, ratio to copy, 1 thread): f32 -> s4 BA16a64b4a with a
scale and zero point per group of 32 or 128 K, and f32 -> f8 (e4m3, e5m2) plain, >= 0.5."""
import numpy as np
import pytest

import reorder as ro

ml_dtypes = pytest.importorskip("ml_dtypes")

THREADS = [1, 2]
K = N = 4096


@pytest.fixture(scope="module")
def weights():
    return (np.random.default_rng(0).standard_normal((K, N)) * 2).astype(np.float32)


def _np_s4_blocked(w, inv, zp, G):
    """numpy: v = w * (1/scale) + zp in f32, clamp, round half to even, then BA16a64b4a
    (B A a4 b64 a4) and two codes a byte, the even element in the low nibble."""
    v = w * np.repeat(inv, G, axis=0) + np.repeat(zp, G, axis=0)
    q = np.rint(np.clip(v, -8, 7)).astype(np.int8)
    blocks = q.reshape(K // 16, 4, 4, N // 64, 64).transpose(3, 0, 1, 4, 2).reshape(-1)
    return ((blocks[0::2] & 0xF) | (blocks[1::2] << 4)).astype(np.uint8)


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("G", [32, 128])
@pytest.mark.parametrize("impl", ["reorder", "copy", "numpy"])
def test_s4_grouped_speed(benchmark, time_copy, record, weights, impl, G, threads):
    if impl == "numpy" and threads != 1:
        pytest.skip("numpy is single-threaded")
    w = weights
    rng = np.random.default_rng(G)
    scales = rng.uniform(0.2, 0.6, (K // G, N)).astype(np.float32)
    zp = rng.integers(-2, 3, (K // G, N)).astype(np.int8)
    kw = dict(dtype="s4", dst_scales=scales, dst_zero_point=zp, dst_groups=(G, 1))
    out = ro.reorder(w, "ab", "BA16a64b4a", **kw)
    nbytes = w.nbytes + out.nbytes
    group = f"f32->s4 BA16a64b4a groups of {G} + zp {K}x{N} {threads}T"
    benchmark.group = group
    inv = np.float32(1) / scales
    if impl == "reorder":
        benchmark(ro.reorder, w, "ab", "BA16a64b4a", threads=threads, out=out, **kw)
        np.testing.assert_array_equal(out, _np_s4_blocked(w, inv, zp.astype(np.float32), G))
    elif impl == "copy":
        time_copy(nbytes)
    else:
        benchmark(_np_s4_blocked, w, inv, zp.astype(np.float32), G)
    record(group, impl, nbytes)


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
@pytest.mark.parametrize("impl", ["reorder", "copy", "numpy"])
def test_f8_speed(benchmark, time_copy, record, weights, impl, fmt, threads):
    if impl == "numpy" and threads != 1:
        pytest.skip("numpy is single-threaded")
    w = weights
    mt = ml_dtypes.float8_e4m3fn if fmt == "e4m3" else ml_dtypes.float8_e5m2
    out = np.empty((K, N), mt)
    nbytes = w.nbytes + out.nbytes
    group = f"f32->f8_{fmt} ab {K}x{N} {threads}T"
    benchmark.group = group
    # oneDNN rounds to f16 first; within range ml_dtypes' f16 -> f8 rounds the same way
    numpy_version = lambda: w.astype(np.float16).astype(mt)
    if impl == "reorder":
        benchmark(ro.reorder, w, "ab", "ab", dtype=f"f8_{fmt}", threads=threads, out=out)
        np.testing.assert_array_equal(out.view(np.uint8), numpy_version().view(np.uint8))
    elif impl == "copy":
        time_copy(nbytes)
    else:
        benchmark(numpy_version)
    record(group, impl, nbytes)


def _np_s4_back(packed, scales, zp, G):
    """numpy: BA16a64b4a nibbles -> s4 codes in ab order -> v = scale * (q - zp) in f32."""
    lo = (packed & 0xF).astype(np.int8)
    hi = (packed >> 4).astype(np.int8)
    q = np.empty(packed.size * 2, np.int8)
    q[0::2], q[1::2] = lo, hi
    q = (q ^ 8) - 8
    q = q.reshape(N // 64, K // 16, 4, 64, 4).transpose(1, 2, 4, 0, 3).reshape(K, N)
    s = np.repeat(scales, G, axis=0)
    z = np.repeat(zp.astype(np.float32), G, axis=0)
    return s * (q.astype(np.float32) - z) + np.float32(0)


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("impl", ["reorder", "copy", "numpy"])
def test_s4_read_back_speed(benchmark, time_copy, record, weights, impl, threads):
    """The way back: s4 BA16a64b4a with scales and zero points per group of 128 -> f32 ab,
    into a result the caller keeps (out=)."""
    if impl == "numpy" and threads != 1:
        pytest.skip("numpy is single-threaded")
    G = 128
    rng = np.random.default_rng(G)
    scales = rng.uniform(0.2, 0.6, (K // G, N)).astype(np.float32)
    zp = rng.integers(-2, 3, (K // G, N)).astype(np.int8)
    q = ro.reorder(weights, "ab", "BA16a64b4a", dtype="s4", dst_scales=scales,
                   dst_zero_point=zp, dst_groups=(G, 1))
    kw = dict(dims=(K, N), src_dtype="s4", dtype="f32", src_scales=scales, src_zero_point=zp,
              src_groups=(G, 1))
    out = np.empty((K, N), np.float32)
    nbytes = q.nbytes + out.nbytes
    group = f"s4 BA16a64b4a groups of {G} + zp -> f32 ab {K}x{N} {threads}T"
    benchmark.group = group
    if impl == "reorder":
        benchmark(ro.reorder, q, "BA16a64b4a", "ab", threads=threads, out=out, **kw)
        np.testing.assert_array_equal(out, _np_s4_back(q, scales, zp, G))
    elif impl == "copy":
        time_copy(nbytes)
    else:
        benchmark(_np_s4_back, q, scales, zp, G)
    record(group, impl, nbytes)
