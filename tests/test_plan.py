"""Plans as objects: binding arrays (offset descriptors on every path), plan() and reorder()
agreeing on their arguments, and the plan caches under concurrent Python threads."""
import sys
import threading

import numpy as np
import pytest

import reorder as ro

from reorder.testing.reference import ref_physical_shape, ref_reorder


# --- a descriptor with an offset ---------------------------------------------------------------

def test_offset_descriptor_reads_from_its_offset_on_every_path():
    """Desc((4,), strides=(4,), offset0=2) over arange(16) is [2, 6, 10, 14]: through
    reorder() and through a plan, first call and repeated call."""
    buf = np.arange(16, dtype=np.float32)
    d = ro.Desc((4,), "f32", strides=(4,), offset0=2)
    want = np.array([2, 6, 10, 14], np.float32)
    p = ro.plan(d, ro.Desc((4,), "f32", "a"))
    for _ in range(2):
        np.testing.assert_array_equal(p(buf), want)
        np.testing.assert_array_equal(ro.reorder(buf, d, "a"), want)
    d2 = ro.Desc((2, 3), "f32", strides=(1, 4), offset0=5)   # 2-D, transposed, offset
    buf2 = np.arange(20, dtype=np.float32)
    want2 = np.array([[buf2[5 + i + 4 * j] for j in range(3)] for i in range(2)], np.float32)
    np.testing.assert_array_equal(ro.plan(d2, ro.Desc((2, 3), "f32", "ab"))(buf2), want2)
    np.testing.assert_array_equal(ro.reorder(buf2, d2, "ab"), want2)


def test_offset_descriptor_never_takes_an_array_as_already_offset():
    """An array whose shape and strides match such a descriptor has no room for the offset:
    the view's own element 0 is not the descriptor's element 0. Each path must refuse it,
    not read the view from its start (it gave [0, 4, 8, 12] through a plan's fast path)."""
    buf = np.arange(16, dtype=np.float32)
    view = buf[::4]                                 # shape (4,), stride 4 elements
    d = ro.Desc((4,), "f32", strides=(4,), offset0=2)
    p = ro.plan(d, ro.Desc((4,), "f32", "a"))
    for call in (lambda: p(view), lambda: ro.reorder(view, d, "a"), lambda: p(view)):
        with pytest.raises(ro.ReorderError, match="offset0=2"):
            call()
    assert np.array_equal(buf, np.arange(16, dtype=np.float32))    # input untouched


def test_offset_views_through_tags_give_the_views_values():
    """Views that start inside a buffer (numpy's own offset) give the view's values on the
    first and the repeated (cached) call, for plain and blocked destinations."""
    rng = np.random.default_rng(3)
    base = rng.standard_normal((3, 40, 9, 11)).astype(np.float32)
    for view in (base[1:, 3:20, 2:, 1:], base[:, ::-3, 1:, ::-2], base[2:3, 5:6]):
        dims = view.shape
        flat = np.ascontiguousarray(view).reshape(-1)
        want = ref_reorder(flat, dims, "abcd", "aBcd16b").reshape(ref_physical_shape(dims, "aBcd16b"))
        for _ in range(2):
            got = ro.reorder(view, "nchw", "nChw16c")
            assert got.shape == want.shape
            np.testing.assert_array_equal(got, want)
        p = ro.plan(ro.Desc.of(view), ro.Desc(dims, "f32", "aBcd16b"))
        np.testing.assert_array_equal(p(view), want)


# --- plan() and reorder() agree --------------------------------------------------------------

def test_plan_with_a_descriptor_checks_dims_and_src_dtype_like_reorder():
    d = ro.Desc((2, 17, 3, 3), "f32", "nchw")
    x = np.zeros(d.physical_shape, np.float32)
    with pytest.raises(ro.ReorderError, match="dims=2x16x3x3 disagrees with the source descriptor"):
        ro.reorder(x, d, "nChw16c", dims=(2, 16, 3, 3))
    with pytest.raises(ro.ReorderError, match="dims=2x16x3x3 disagrees with the source descriptor"):
        ro.plan(d, "nChw16c", dims=(2, 16, 3, 3))
    with pytest.raises(ro.ReorderError, match="src_dtype=f16 disagrees with the source descriptor"):
        ro.plan(d, "nChw16c", src_dtype="f16")
    with pytest.raises(ro.ReorderError, match="src_dtype=f16 disagrees with the source descriptor"):
        ro.reorder(x, d, "nChw16c", src_dtype="f16")
    # agreeing values are accepted by both
    p = ro.plan(d, "nChw16c", dims=(2, 17, 3, 3), src_dtype="f32")
    assert p.dst.dims == (2, 17, 3, 3)
    assert ro.reorder(x, d, "nChw16c", dims=(2, 17, 3, 3), src_dtype="f32").shape == (2, 2, 3, 3, 16)


def test_plan_with_tags_keeps_its_f32_default():
    assert ro.plan("nchw", "nChw16c", dims=(1, 3, 2, 2)).src.dtype.name == "f32"
    assert ro.plan("nchw", "nChw16c", dims=(1, 3, 2, 2), src_dtype="s8").src.dtype.name == "s8"


def test_quantize_takes_reorders_spelling_of_scales():
    """quantize() documents src_scales / src_scale_mask (reorder's names); the older
    scales / scale_mask keep working and give the same bytes; both at once is an error."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((20, 7, 3, 3)).astype(np.float32)
    s = rng.uniform(10, 60, 20).astype(np.float32)
    a = ro.quantize(w, "oihw", "OIhw4i16o4i", src_scales=s, src_scale_mask=1, compensation="s8s8")
    b = ro.quantize(w, "oihw", "OIhw4i16o4i", scales=s, scale_mask=1, compensation="s8s8")
    np.testing.assert_array_equal(a.data, b.data)
    np.testing.assert_array_equal(a.compensation, b.compensation)
    # independent check of one value: o=3, i=2, h=1, w=0 sits at O block 0, I block 0
    q = np.clip(np.rint(np.float32(s[3]) * w[3, 2, 1, 0]), -128, 127)
    assert a.data[0, 0, 1, 0, 0, 3, 2] == q
    with pytest.raises(ro.ReorderError, match="src_scales= or scales="):
        ro.quantize(w, "oihw", "OIhw4i16o4i", src_scales=s, scales=s)
    with pytest.raises(ro.ReorderError, match="src_scale_mask= or scale_mask="):
        ro.quantize(w, "oihw", "OIhw4i16o4i", src_scales=s, src_scale_mask=1, scale_mask=1)


# --- caches under Python threads -------------------------------------------------------------

def _run_in_threads(work, n=8):
    """work(t) for t in range(n), each on its own thread, with Python switching threads as
    often as it can; the threads, joined (two minutes each at most)."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(t,)) for t in range(n)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(120)
    finally:
        sys.setswitchinterval(old)
    return threads


def test_signature_cache_eviction_under_eight_python_threads():
    """The eviction itself, hammered: 8 threads insert distinct keys into one cache of 4, so
    each insert evicts. Unlocked, two threads popped the same oldest key (KeyError) or
    iterated while another inserted ("dictionary changed size")."""
    from reorder.plan.cache import CallCache
    cache, errors, barrier = CallCache("test", 4), [], threading.Barrier(8)

    def work(t):
        try:
            barrier.wait()
            for k in range(20_000):
                cache.put((t, k), k)
        except Exception as exc:
            errors.append((t, repr(exc)))

    _run_in_threads(work)
    assert not errors, errors[:3]
    assert len(cache) == 4 and all(value == key[1] for key, value in cache.items())


def test_plan_caches_under_eight_python_threads(monkeypatch):
    """8 threads each reorder many distinct shapes at once, enough to evict from every
    cache many times over; every result must be right and nothing may raise."""
    from reorder.plan import cache
    # tiny signature caches: every call evicts, so two threads evict at once many times
    for table in (cache.REORDER_CALLS, cache.REORDER_CALLS_WITH_ATTRS, cache.QUANTIZE_CALLS):
        monkeypatch.setattr(table, "maxsize", 2)
    errors, barrier = [], threading.Barrier(8)

    def work(t):
        rng = np.random.default_rng(t)
        try:
            barrier.wait()
            for k in range(120):
                shape = (1 + (k + t) % 5, 1 + k % 7 + 16 * (t % 2), 2 + t, 1 + k // 7)
                x = rng.standard_normal(shape).astype(np.float32)
                y = ro.reorder(x, "nchw", "nhwc")
                if not np.array_equal(y, x.transpose(0, 2, 3, 1)):
                    errors.append(("wrong", t, shape))
                w = rng.standard_normal((16 + t, 3 + k % 5, 1, 1)).astype(np.float32)
                q = ro.quantize(w, "oihw", "OIhw4i16o4i", src_scales=float(1 + k % 3))
                want = np.clip(np.rint(np.float32(1 + k % 3) * w[:, :, 0, 0]), -128, 127)
                got = q.data[:, :, 0, 0].transpose(0, 3, 1, 2, 4).reshape(
                    q.data.shape[0] * 16, -1)[:w.shape[0], :w.shape[1]]
                if not np.array_equal(got, want):
                    errors.append(("wrong quantize", t, w.shape))
        except Exception as exc:          # any exception in a thread fails the test
            errors.append(("raised", t, repr(exc)))

    threads = _run_in_threads(work)
    assert not any(th.is_alive() for th in threads), "a thread hung"
    assert not errors, errors[:5]


def test_plan_and_reorder_share_one_plan_for_one_pair():
    """plan() and reorder() spell the defaults differently (keywords, positions, none); the
    cache keys on the values, so both find one Plan, and the Plan gives the reference's bytes."""
    from reorder.plan.cache import cached_plan, clear
    clear()
    x = np.random.default_rng(5).standard_normal((2, 19, 3, 5)).astype(np.float32)
    ro.reorder(x, "nchw", "nChw16c")
    after_reorder = cached_plan.cache_info()
    p = ro.plan(ro.Desc(x.shape, "f32", "nchw"), "nChw16c")
    assert cached_plan.cache_info().currsize == after_reorder.currsize, "plan() built a second Plan"
    assert cached_plan(p.src, p.dst) is cached_plan(p.src, p.dst, None, None) is p
    np.testing.assert_array_equal(p(x).reshape(-1), ref_reorder(x, x.shape, "abcd", "aBcd16b"))
    with pytest.raises(ro.ReorderError, match="stream_min_bytes"):
        cached_plan(p.src, p.dst, None, None, True)       # True is not the threshold 1


def test_repeated_calls_find_their_plan_by_signature_src_dtype_included():
    """A repeated call, with src_dtype= and with scales too, runs its plan without planning
    again; the signature keeps one array's words read as bf16 apart from the same words read
    as f16, and every result is the reference's."""
    from reorder.plan.cache import cached_plan
    dims = (2, 19, 3, 5)
    words = np.random.default_rng(3).integers(0, 0x7c00, dims).astype(np.uint16)
    want = ref_reorder(words, dims, "abcd", "aBcd16b")
    as_f32 = (words.astype(np.uint32) << 16).view(np.float32)
    for src_dtype, storage in (("bf16", "bfloat16"), ("f16", "float16"), ("bf16", "bfloat16")):
        ro.reorder(words, "nchw", "nChw16c", src_dtype=src_dtype)
        before = cached_plan.cache_info()
        for _ in range(3):
            got = ro.reorder(words, "nchw", "nChw16c", src_dtype=src_dtype)
            assert got.dtype.name == storage
            np.testing.assert_array_equal(got.reshape(-1).view(np.uint16), want)
        assert cached_plan.cache_info() == before, f"src_dtype={src_dtype}: the call planned again"
    ro.reorder(words, "nchw", "nChw16c", src_dtype="bf16", dtype="f32", src_scales=1.0)
    before = cached_plan.cache_info()
    for scale in (2.0, 0.25, 8.0):          # powers of two: exact in f32
        got = ro.reorder(words, "nchw", "nChw16c", src_dtype="bf16", dtype="f32", src_scales=scale)
        np.testing.assert_array_equal(
            got.reshape(-1), ref_reorder(as_f32 * np.float32(scale), dims, "abcd", "aBcd16b"))
    assert cached_plan.cache_info() == before, "a call with other scale values planned again"
    np.testing.assert_array_equal(words, np.random.default_rng(3).integers(0, 0x7c00, dims))


@pytest.mark.parametrize("dims,src,dst,dtype,scale", [
    ((2, 3, 4, 5), "nchw", "nhwc", "f32", None),
    ((2, 19, 3, 5), "nchw", "nChw16c", "s8", None),
    ((17, 16, 3, 3), "oihw", "OIhw4i16o4i", "bf16", None),
    ((2, 19, 3, 5), "nchw", "nChw16c", "f32", 4.0),
    ((17, 19, 3, 3), "OIhw4i16o4i", "oihw", "s8", None),
    ((2, 19, 3, 5), "nChw16c", "nchw", "f32", None)])
@pytest.mark.parametrize("flat", [False, True], ids=["physical", "flat"])
def test_call_beside_and_over_its_source(dims, src, dst, dtype, scale, flat):
    """A call runs its single step directly (a conversion with the plan's own scale too)
    once the arrays pass the checks inline, for the source's physical array and for a flat
    buffer holding it: an out that ends where x begins, or begins where x ends, is written
    (and right); one that shares a single element with x at either end is refused, and x is
    untouched. A flat buffer longer than the source is the caller's input to its end."""
    kw = {} if scale is None else {"src_scales": scale}
    p = ro.plan(ro.Desc(dims, dtype, src), ro.Desc(dims, dtype, dst), **kw)
    storage = np.dtype(p.src.dtype.storage)
    nin, nout = int(np.prod(p.src.physical_shape)), int(np.prod(p.dst.physical_shape))
    values = np.random.default_rng(1).integers(1, 100, nin).astype(storage)
    abstract = {"nchw": "abcd", "oihw": "abcd", "nhwc": "acdb", "nChw16c": "aBcd16b",
                "OIhw4i16o4i": "ABcd4b16a4b"}
    expected = ref_reorder(values, dims, abstract[src], abstract[dst])
    if scale is not None:       # small integers times a power of two: exact in f32
        expected = expected * storage.type(scale)
    cases = [(nout, 0, False, 0), (0, nin, False, 0), (nout - 1, 0, True, 0), (0, nin - 1, True, 0)]
    if flat:        # x with a tail of 5 elements: out beyond it is apart, out in it is not
        cases += [(0, nin + 5, False, 5), (0, nin + 4, True, 5)]
    for start_x, start_out, overlap, tail in cases:
        buf = np.zeros(nin + nout + tail, storage)
        buf[start_x:start_x + nin] = values
        x = buf[start_x:start_x + nin + tail]
        if not flat:
            x = x.reshape(p.src.physical_shape)
        out = buf[start_out:start_out + nout].reshape(p.dst.physical_shape)
        if overlap:
            with pytest.raises(ro.ReorderError, match="overlaps"):
                p(x, out, 1)
            assert np.array_equal(buf[start_x:start_x + nin], values)
        else:
            with pytest.MonkeyPatch.context() as mp:     # the direct path, not bind's
                mp.setattr(type(p), "bind", lambda *a: pytest.fail("the call took bind's path"))
                assert p(x, out, 1) is out
            assert np.array_equal(out.reshape(-1), np.asarray(expected).reshape(-1))
            assert np.array_equal(x.reshape(-1)[:nin], values)
