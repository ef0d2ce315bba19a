"""Writing into part of an array: a sub-memory of a (blocked) parent, `reorder(x, src, sub,
out=parent)`, and strided plain destinations (`out=` a numpy view with steps).

Poison and guard: the parent is a slice of a bigger byte buffer filled with a poison pattern;
after the write every byte of the buffer is compared with a numpy reference built from the
logical coordinates of the parent's physical positions (hand-written per layout below), never
from the library's Desc offsets. Expected: poison everywhere except the region's elements and
the region's own padding (zeros inside the region's blocks beyond the parent's dims)."""
import math

import ml_dtypes
import numpy as np
import pytest

import reorder as ro
from reorder.core.desc import Desc
from reorder.plan.cache import cached_plan
import quant_reference as qr

POISON = 0xA5
GUARD = 192          # poison bytes either side of the parent


def sub_desc(parent, dims, offsets):
    """A region of `parent` (Desc.submemory, which tests/test_desc_views.py checks against
    oneDNN's own sub-memory offsets)."""
    return parent.submemory(dims, offsets)


# --- the reference: logical coordinates of every physical position, per layout -------------

def _ceil(n, b):
    return -(-n // b)


def layout_coords(tag, dims):
    """(physical shape, logical coordinate arrays over it, block per dim) of `tag`, written
    out from the tags' definitions."""
    if tag in ("nChw16c", "nChw8c"):
        b = int(tag[4:-1])
        n, c, h, w = dims
        shape = (n, _ceil(c, b), h, w, b)
        i = np.indices(shape)
        return shape, (i[0], i[1] * b + i[4], i[2], i[3]), (1, b, 1, 1)
    if tag == "OIhw16i16o":
        o, ii, h, w = dims
        shape = (_ceil(o, 16), _ceil(ii, 16), h, w, 16, 16)
        i = np.indices(shape)
        return shape, (i[0] * 16 + i[5], i[1] * 16 + i[4], i[2], i[3]), (16, 16, 1, 1)
    if tag == "OIhw4i16o4i":
        o, ii, h, w = dims
        shape = (_ceil(o, 16), _ceil(ii, 16), h, w, 4, 16, 4)
        i = np.indices(shape)
        return shape, (i[0] * 16 + i[5], i[1] * 16 + i[4] * 4 + i[6], i[2], i[3]), (16, 16, 1, 1)
    if tag == "Oihw16o":
        o, ii, h, w = dims
        shape = (_ceil(o, 16), ii, h, w, 16)
        i = np.indices(shape)
        return shape, (i[0] * 16 + i[4], i[1], i[2], i[3]), (16, 1, 1, 1)
    if tag == "aBCd7c16b":
        A, B, C, D = dims
        shape = (A, _ceil(B, 16), _ceil(C, 7), D, 7, 16)
        i = np.indices(shape)
        return shape, (i[0], i[1] * 16 + i[5], i[2] * 7 + i[4], i[3]), (1, 16, 7, 1)
    if tag == "ABcd16b16a":
        A, B, C, D = dims
        shape = (_ceil(A, 16), _ceil(B, 16), C, D, 16, 16)
        i = np.indices(shape)
        return shape, (i[0] * 16 + i[5], i[1] * 16 + i[4], i[2], i[3]), (16, 16, 1, 1)
    if tag == "nchw":
        i = np.indices(dims)
        return tuple(dims), tuple(i), (1, 1, 1, 1)
    if tag == "nhwc":
        n, c, h, w = dims
        shape = (n, h, w, c)
        i = np.indices(shape)
        return shape, (i[0], i[3], i[1], i[2]), (1, 1, 1, 1)
    raise AssertionError(tag)


def expected_parent(tag, pdims, poison_phys, x_logical, rdims, offsets):
    """The parent's physical array after writing x_logical (region dims rdims at offsets):
    the poisoned parent, the region's elements set, the region's padding zero."""
    _, co, blk = layout_coords(tag, pdims)
    want = poison_phys.copy()
    inside = np.ones(want.shape, bool)
    in_blocks = np.ones(want.shape, bool)
    beyond = np.zeros(want.shape, bool)
    for d, c in enumerate(co):
        inside &= (c >= offsets[d]) & (c < offsets[d] + rdims[d])
        in_blocks &= (c >= offsets[d]) & (c < offsets[d] + _ceil(rdims[d], blk[d]) * blk[d])
        beyond |= c >= pdims[d]
    idx = tuple(c[inside] - offsets[d] for d, c in enumerate(co))
    want[inside] = x_logical[idx]
    want[in_blocks & beyond] = 0
    return want


def poisoned(nbytes, dtype, shape):
    """(buffer, parent): the parent a C-contiguous slice of a poisoned buffer with guards."""
    raw = np.full(GUARD + nbytes + GUARD, POISON, np.uint8)
    parent = raw[GUARD:GUARD + nbytes].view(dtype).reshape(shape)
    return raw, parent


def check_bytes(raw, parent_want):
    """Every byte of the buffer: guards poison, the parent as expected."""
    want = np.full(raw.shape, POISON, np.uint8)
    want[GUARD:raw.size - GUARD] = np.ascontiguousarray(parent_want).reshape(-1).view(np.uint8)
    bad = np.flatnonzero(raw != want)
    assert bad.size == 0, (f"{bad.size} bytes differ, first at byte {bad[0] - GUARD} of the "
                           f"parent: got {raw[bad[0]]:#x}, want {want[bad[0]]:#x}")


DTYPES = {"f32": np.float32, "u8": np.uint8, "bf16": ml_dtypes.bfloat16, "s8": np.int8}


def values(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "u8":
        return rng.integers(0, 256, shape).astype(np.uint8)
    v = rng.standard_normal(shape).astype(np.float32) * 3
    return v.astype(DTYPES[dtype])


# --- sub-memory writes -------------------------------------------------------------------

# (parent tag, parent dims, region dims, offsets, source tag)
REGIONS = [
    ("nChw16c", (2, 48, 5, 3), (2, 16, 5, 3), (0, 16, 0, 0), "nchw"),    # a middle block
    ("nChw16c", (2, 41, 5, 3), (2, 25, 5, 3), (0, 16, 0, 0), "nchw"),    # at the end, padded
    ("nChw16c", (2, 41, 5, 3), (2, 9, 5, 3), (0, 32, 0, 0), "nhwc"),
    ("nChw16c", (3, 35, 4, 6), (1, 19, 2, 5), (1, 16, 1, 1), "nchw"),    # every dim cut
    ("nChw16c", (2, 41, 5, 3), (2, 25, 5, 3), (0, 16, 0, 0), "nChw16c"),
    ("nChw8c", (2, 21, 7, 7), (2, 5, 7, 7), (0, 16, 0, 0), "nchw"),
    ("nChw8c", (2, 21, 7, 7), (2, 5, 7, 7), (0, 16, 0, 0), "nhwc"),
    ("nChw8c", (2, 17, 3, 3), (1, 1, 1, 1), (1, 16, 2, 0), "nchw"),      # size 1 (padded)
    ("nChw8c", (2, 24, 3, 3), (2, 0, 3, 3), (0, 8, 0, 0), "nchw"),       # zero-size
    ("nChw16c", (2, 32, 3, 3), (2, 16, 0, 3), (0, 0, 1, 0), "nchw"),     # zero-size H
    ("OIhw16i16o", (40, 35, 3, 3), (24, 19, 3, 3), (16, 16, 0, 0), "oihw"),
    ("OIhw16i16o", (48, 32, 3, 3), (16, 32, 1, 3), (16, 0, 2, 0), "oihw"),
    ("OIhw16i16o", (40, 35, 3, 3), (24, 35, 3, 3), (16, 0, 0, 0), "hwio"),
    ("OIhw4i16o4i", (40, 35, 3, 3), (24, 19, 3, 3), (16, 16, 0, 0), "oihw"),
    ("Oihw16o", (40, 35, 3, 3), (24, 19, 3, 3), (16, 16, 0, 0), "OIhw16i16o"),   # memset path
    ("OIhw16i16o", (40, 35, 3, 3), (24, 19, 3, 3), (16, 16, 0, 0), "OIhw4i16o4i"),
    # padded in c, outside the b block: the block kernel's zeroed-destination path
    ("aBCd7c16b", (64, 48, 6, 3), (32, 32, 6, 3), (8, 0, 0, 0), "ABcd16b16a"),
    ("aBCd7c16b", (64, 48, 6, 3), (32, 32, 6, 3), (8, 16, 0, 0), "ABcd16b16a"),
    ("OIhw4i16o4i", (32, 35, 1, 1), (16, 3, 1, 1), (16, 32, 0, 0), "oihw"),
    ("nchw", (2, 7, 9, 11), (2, 3, 4, 5), (0, 2, 3, 6), "nchw"),         # plain parents
    ("nchw", (2, 7, 9, 11), (1, 3, 9, 11), (1, 4, 0, 0), "nhwc"),
    ("nhwc", (2, 7, 9, 11), (2, 3, 4, 5), (0, 4, 3, 6), "nchw"),
    ("nhwc", (2, 40, 9, 11), (2, 3, 9, 11), (0, 37, 0, 0), "nchw"),
]

_SRC_PHYS = {"nchw": (0, 1, 2, 3), "oihw": (0, 1, 2, 3), "nhwc": (0, 2, 3, 1),
             "hwio": (2, 3, 1, 0)}


def source_for(x_logical, tag, strided):
    """x in the source layout; `strided`: a view with steps and a reversed axis."""
    if tag in _SRC_PHYS:
        phys = np.ascontiguousarray(x_logical.transpose(_SRC_PHYS[tag]))
        if strided:
            big = np.zeros(phys.shape[:-1] + (2 * phys.shape[-1] + 1,), phys.dtype)
            big[..., 1::2] = phys[..., ::-1]
            phys = big[..., -2::-2] if phys.shape[-1] else big[..., :0]
        return phys, tag
    shape, co, _ = layout_coords(tag, x_logical.shape)      # a blocked source, zero padded
    phys = np.zeros(shape, x_logical.dtype)
    ok = np.ones(shape, bool)
    for c, n in zip(co, x_logical.shape):
        ok &= c < n
    phys[ok] = x_logical[tuple(k[ok] for k in co)]
    return phys, tag


def run_region(ptag, pdims, rdims, offsets, stag, dtype, threads, strided=False,
               src_dtype=None, stream_min_bytes=None, kernels=None):
    np_dtype = DTYPES[dtype]
    parent = Desc(pdims, dtype, ptag)
    shape, _, _ = layout_coords(ptag, pdims)
    assert parent.physical_shape == shape
    raw, out = poisoned(math.prod(shape) * np.dtype(np_dtype).itemsize, np_dtype, shape)
    before = out.copy()
    xl = values(rdims, src_dtype or dtype)
    x, stag = source_for(xl, stag, strided)
    x_copy = x.copy()
    sub = sub_desc(parent, rdims, offsets)
    if stream_min_bytes is None:
        res = ro.reorder(x, stag, sub, dims=rdims, out=out, threads=threads)
    else:
        p = cached_plan(Desc.of(x, stag, dims=rdims), sub, stream_min_bytes=stream_min_bytes)
        res = p(x, out=out, threads=threads)
        if kernels is not None:
            kernels.add(p.kernel)
    assert res is out
    np.testing.assert_array_equal(x, x_copy)                  # the input is not modified
    want_l = xl if src_dtype is None else ro.reorder(xl, "nchw", "nchw", dtype=dtype)
    check_bytes(raw, expected_parent(ptag, pdims, before, want_l, rdims, offsets))
    if kernels is not None and stream_min_bytes is None:
        kernels.add(ro.plan(Desc.of(x, stag, dims=rdims), sub).kernel)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["f32", "u8", "bf16"])
@pytest.mark.parametrize("case", REGIONS, ids=lambda c: f"{c[0]}-{'x'.join(map(str, c[2]))}-{c[4]}")
def test_write_into_sub_memory(case, dtype, threads):
    run_region(*case, dtype, threads)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", [c for c in REGIONS if c[4] in _SRC_PHYS], ids=str)
def test_write_into_sub_memory_from_a_strided_reversed_source(case, threads):
    run_region(*case, "f32", threads, strided=True)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["s8", "bf16"])
@pytest.mark.parametrize("case", [REGIONS[i] for i in (1, 3, 10, 13, 14, 17, 19, 22)], ids=str)
def test_write_a_conversion_into_sub_memory(case, dtype, threads):
    """f32 -> s8 / bf16 into a region of an s8 / bf16 parent (the conversion kernels)."""
    run_region(*case, dtype, threads, src_dtype="f32")


def test_every_kernel_family_writes_only_its_region():
    """The cases above reach each kernel the planner picks, also with streaming stores
    forced on (stream_min_bytes=0) into destinations at any element alignment."""
    kernels = set()
    for case in REGIONS:
        for threads in (1, 2):
            for smb in (None, 0):
                run_region(*case, "f32", threads, stream_min_bytes=smb, kernels=kernels)
                run_region(*case, "u8", threads, stream_min_bytes=smb, kernels=kernels)
                run_region(*case, "s8", threads, src_dtype="f32", stream_min_bytes=smb,
                           kernels=kernels)
    names = set("+".join(sorted(kernels)).replace("+", " ").split())
    assert {"copy", "transpose", "generic", "convert", "blocks"} <= names, kernels


def test_larger_region_streams_and_stays_inside():
    """Half the channels of an nChw16c parent big enough for streaming stores on both
    thread counts, from nchw and from nhwc."""
    for stag in ("nchw", "nhwc"):
        for threads in (1, 2):
            run_region("nChw16c", (2, 64, 28, 28), (2, 32, 28, 28), (0, 32, 0, 0), stag, "f32",
                       threads, stream_min_bytes=0)
            run_region("nChw16c", (2, 64, 28, 28), (2, 32, 28, 28), (0, 16, 0, 0), stag, "f32",
                       threads)


def test_in_place_concatenation():
    """Two producers write their channels into one nChw16c parent: the parent equals
    np.concatenate of the two, blocked by the reference (padding zero)."""
    n, h, w = 2, 5, 3
    a = values((n, 16, h, w), "f32", 1)
    b = values((n, 25, h, w), "f32", 2)
    whole = np.concatenate([a, b], axis=1)
    parent = Desc(whole.shape, "f32", "nChw16c")
    shape, co, _ = layout_coords("nChw16c", whole.shape)
    raw, out = poisoned(math.prod(shape) * 4, np.float32, shape)
    ro.reorder(a, "nchw", sub_desc(parent, a.shape, (0, 0, 0, 0)), out=out)
    ro.reorder(np.ascontiguousarray(b.transpose(0, 2, 3, 1)), "nhwc",
               sub_desc(parent, b.shape, (0, 16, 0, 0)), dims=b.shape, out=out)
    want = np.zeros(shape, np.float32)
    ok = co[1] < whole.shape[1]
    want[ok] = whole[tuple(k[ok] for k in co)]
    check_bytes(raw, want)
    np.testing.assert_array_equal(ro.reorder(out, "nChw16c", "nchw", dims=whole.shape), whole)


# --- strided plain destinations ---------------------------------------------------------

def _strided_views(big):
    yield big[:, ::2, 1:, ::-1]
    yield big[::-1, 1:4, ::3, 2:]
    yield big[:, :, 1:-1, 1:-1]
    yield big.transpose(0, 2, 3, 1)[:, 1:, :, ::2]
    yield big[:, :, ::-2, :].transpose(3, 2, 1, 0)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["f32", "u8", "bf16"])
@pytest.mark.parametrize("src", ["nchw", "nhwc", "nChw16c", "nChw8c"])
def test_strided_out_view(src, dtype, threads):
    """reorder(x, src, plain tag, out=view): the result lands in the view; every other byte
    of the view's base (and the guards around it) keeps its poison."""
    np_dtype = DTYPES[dtype]
    shape = (3, 10, 9, 12)
    for k, dst_tag in enumerate(("nchw", "nhwc")):
        for view_no in range(5):
            raw = np.full(GUARD * 2 + math.prod(shape) * np.dtype(np_dtype).itemsize, POISON,
                          np.uint8)
            big = raw[GUARD:-GUARD].view(np_dtype).reshape(shape)
            view = list(_strided_views(big))[view_no]
            # logical dims of the result, from the view's physical shape in dst_tag
            ldims = view.shape if dst_tag == "nchw" else (view.shape[0], view.shape[3],
                                                          view.shape[1], view.shape[2])
            xl = values(ldims, dtype, view_no + k)
            if src in ("nchw", "nhwc"):
                x, stag = source_for(xl, src, strided=view_no % 2 == 1)
            else:
                b = int(src[4:-1])
                _, co, _ = layout_coords(src, ldims)
                x = np.zeros((ldims[0], _ceil(ldims[1], b), ldims[2], ldims[3], b), np_dtype)
                ok = co[1] < ldims[1]
                x[ok] = xl[tuple(c[ok] for c in co)]
                stag = src
            want_raw = raw.copy()
            wbig = want_raw[GUARD:-GUARD].view(np_dtype).reshape(shape)
            wview = list(_strided_views(wbig))[view_no]
            wview[...] = xl if dst_tag == "nchw" else xl.transpose(0, 2, 3, 1)
            res = ro.reorder(x, stag, dst_tag, dims=ldims, out=view, threads=threads)
            assert res is view
            bad = np.flatnonzero(raw != want_raw)
            assert bad.size == 0, (dst_tag, view_no, bad.size, bad[:5] - GUARD)


def test_strided_out_with_a_conversion_and_a_plan_reused():
    """f32 -> s8 into a strided view; the same call twice (the cached plans) and a call with a
    contiguous out after it keep their own destinations."""
    xl = values((2, 5, 4, 6), "f32")
    big = np.full((2, 9, 9, 6), 7, np.int8)
    view = big[:, ::2, 1::2, :]
    want = big.copy()
    want[:, ::2, 1::2, :] = ro.reorder(xl, "nchw", "nchw", dtype="s8")
    for _ in range(2):
        ro.reorder(xl, "nchw", "nchw", dtype="s8", out=view)
        np.testing.assert_array_equal(big, want)
    out = np.empty((2, 5, 4, 6), np.int8)
    ro.reorder(xl, "nchw", "nchw", dtype="s8", out=out)
    np.testing.assert_array_equal(out, want[:, ::2, 1::2, :])
    other = np.full((2, 9, 9, 6), 3, np.int8)                 # same geometry, another base
    ro.reorder(xl, "nchw", "nchw", dtype="s8", out=other[:, ::2, 1::2, :])
    want_other = np.full_like(other, 3)
    want_other[:, ::2, 1::2, :] = want[:, ::2, 1::2, :]
    np.testing.assert_array_equal(other, want_other)
    np.testing.assert_array_equal(big, want)
    third = np.full((2, 9, 9, 6), 3, np.int8)
    ro.reorder(xl, "nchw", "nchw", dtype="s8", out=third[:, :5, :8:2, :])      # other strides
    want_third = np.full_like(third, 3)
    want_third[:, :5, :8:2, :] = want[:, ::2, 1::2, :]
    np.testing.assert_array_equal(third, want_third)


def _reversed_views(big):
    """Views of an (N, H, W, C) base reversed on two axes, one of them also transposed."""
    yield big[:, ::-1, :, ::-1]
    yield big[::-1, :, ::-2, :]
    yield big.transpose(0, 2, 1, 3)[:, ::-1, 1:, ::-1]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("src", ["nchw", "nhwc", "nChw16c"])
def test_reversed_out_view_with_a_permuting_destination(src, threads):
    """nchw/nhwc (the reversal moves onto the source) and nChw16c (a whole result, then a copy)
    into nhwc views reversed on two axes, twice into bases of the same geometry (the cached
    call): the view holds the result, every other byte keeps its poison, x is unchanged."""
    shape = (3, 9, 12, 20)
    for view_no in range(3):
        for seed in range(2):
            raw = np.full(GUARD * 2 + math.prod(shape) * 4, POISON, np.uint8)
            big = raw[GUARD:-GUARD].view(np.float32).reshape(shape)
            view = list(_reversed_views(big))[view_no]
            ldims = (view.shape[0], view.shape[3], view.shape[1], view.shape[2])
            xl = values(ldims, "f32", view_no + seed)
            if src == "nChw16c":
                _, co, _ = layout_coords(src, ldims)
                x = np.zeros((ldims[0], _ceil(ldims[1], 16), ldims[2], ldims[3], 16), np.float32)
                ok = co[1] < ldims[1]
                x[ok] = xl[tuple(c[ok] for c in co)]
            else:
                x, _ = source_for(xl, src, strided=seed == 1)
            x_copy = x.copy()
            want_raw = raw.copy()
            wbig = want_raw[GUARD:-GUARD].view(np.float32).reshape(shape)
            list(_reversed_views(wbig))[view_no][...] = xl.transpose(0, 2, 3, 1)
            for _ in range(2):
                assert ro.reorder(x, src, "nhwc", dims=ldims, out=view, threads=threads) is view
                bad = np.flatnonzero(raw != want_raw)
                assert bad.size == 0, (view_no, seed, bad.size, bad[:5] - GUARD)
            np.testing.assert_array_equal(x, x_copy)


def test_reversed_out_view_of_a_plain_source_is_one_pass(monkeypatch):
    """A plain source into a reversed plain view never makes a whole result to copy."""
    from reorder.plan.plans import Plan

    def no_temporary(self):
        raise AssertionError("a whole temporary result was made")
    monkeypatch.setattr(Plan, "empty", no_temporary)
    xl = values((2, 5, 4, 6), "f32")
    big = np.zeros((2, 5, 4, 6), np.float32)
    turned = np.zeros((2, 5, 6, 4), np.float32).transpose(0, 1, 3, 2)
    for view in (big[:, :, ::-1], big[::-1, ::-1], turned[:, ::-1, :, ::-1]):
        view[...] = 0
        assert ro.reorder(xl, "nchw", "nchw", out=view) is view
        np.testing.assert_array_equal(view, xl)


def test_reversed_out_view_with_scales():
    """Per-channel scales: along a reversed dim (the old path) and along another dim (the
    reversal moves onto the source); both equal numpy's f32 product."""
    xl = values((2, 6, 4, 5), "f32")
    scales = np.linspace(0.5, 3.0, 6, dtype=np.float32)
    want = xl * scales[None, :, None, None]
    for view_of in (lambda b: b[:, ::-1], lambda b: b[::-1, :, :, ::-1]):
        big = np.full((2, 6, 4, 5), 7, np.float32)
        view = view_of(big)
        for _ in range(2):
            ro.reorder(xl, "nchw", "nchw", out=view, src_scales=scales, src_scale_mask=2)
            np.testing.assert_array_equal(view, want)
        big[...] = 7
        ro.reorder(xl, "nchw", "nchw", out=view, src_scales=scales, src_scale_mask=2,
                   sum_beta=1.0)
        np.testing.assert_array_equal(view, want + 7)


# --- bad input ------------------------------------------------------------------------------

def _parent_case():
    parent = Desc((2, 41, 5, 3), "f32", "nChw16c")
    sub = sub_desc(parent, (2, 25, 5, 3), (0, 16, 0, 0))
    return parent, sub, values((2, 25, 5, 3), "f32")


def test_region_that_does_not_fit_in_out_is_refused():
    parent, sub, x = _parent_case()
    small = np.zeros(parent.nelems - 16, np.float32)
    with pytest.raises(ro.ReorderError, match=rf"holds {parent.nelems - 16}"):
        ro.reorder(x, "nchw", sub, out=small)


def test_out_dtype_readonly_overlap_and_missing_out_are_refused():
    parent, sub, x = _parent_case()
    out = np.zeros(parent.physical_shape, np.float32)
    with pytest.raises(ro.ReorderError, match="out has dtype float64"):
        ro.reorder(x, "nchw", sub, out=out.astype(np.float64))
    ro_out = out.copy()
    ro_out.flags.writeable = False
    with pytest.raises(ro.ReorderError, match="read-only"):
        ro.reorder(x, "nchw", sub, out=ro_out)
    with pytest.raises(ro.ReorderError, match="pass that array as out="):
        ro.reorder(x, "nchw", sub)
    # the source is another region of the same parent: allowed where they do not overlap
    flat = np.zeros(parent.nelems, np.float32)
    src = flat.reshape(parent.physical_shape)[:, 0, :, :, :].transpose(0, 3, 1, 2)  # 16 ch
    first = sub_desc(parent, (2, 16, 5, 3), (0, 16, 0, 0))
    ro.reorder(src, "nchw", first, out=flat)
    overlapping = sub_desc(parent, (2, 16, 5, 3), (0, 0, 0, 0))
    with pytest.raises(ro.ReorderError, match="overlaps"):
        ro.reorder(src, "nchw", overlapping, out=flat)


def test_strided_out_errors_are_named():
    x = values((2, 3, 4, 5), "f32")
    big = np.zeros((2, 6, 4, 5), np.float32)
    with pytest.raises(ro.ReorderError, match="out has shape"):
        ro.reorder(x, "nchw", "nchw", out=big[:, ::3])
    raw = np.zeros(1024, np.uint8)
    odd = np.ndarray((2, 3, 4, 5), np.float32, raw, 1, (241, 80, 20, 4))     # 241: not 4k
    with pytest.raises(ro.ReorderError, match="multiples"):
        ro.reorder(x, "nchw", "nchw", out=odd)
    bview = big[:, ::2]
    bview.flags.writeable = False
    with pytest.raises(ro.ReorderError, match="read-only"):
        ro.reorder(x, "nchw", "nchw", out=bview)
    with pytest.raises(ro.ReorderError, match="out has dtype"):
        ro.reorder(x, "nchw", "nchw", out=big.astype(np.float64)[:, ::2])
    with pytest.raises(ro.ReorderError, match="overlaps"):
        ro.reorder(big[:, :3], "nchw", "nchw", out=big[:, ::2])


@pytest.mark.parametrize("threads", [1, 2])
def test_quantize_into_sub_memory(threads):
    """quantize() with a sub-memory dst and the parent as out=: the region holds
    saturate(round-half-even(w * scale)), the rest of the parent its poison, and the s8s8
    compensation is -128 * the sum over each output channel of the region (zero for the
    region's padded channels)."""
    pdims, rdims, offsets = (40, 35, 3, 3), (24, 19, 3, 3), (16, 16, 0, 0)
    parent = Desc(pdims, "s8", "OIhw4i16o4i")
    shape, _, _ = layout_coords("OIhw4i16o4i", pdims)
    raw, out = poisoned(math.prod(shape), np.int8, shape)
    before = out.copy()
    w = values(rdims, "f32", 3)
    q = ro.quantize(w, "oihw", sub_desc(parent, rdims, offsets), out=out, src_scales=10.0,
                    compensation="s8s8", threads=threads)
    assert q.data is out
    qv = np.clip(np.rint(w.astype(np.float64) * np.float32(10.0)), -128, 127).astype(np.int8)
    if q.scale_adjust != 1.0:
        qv = np.clip(np.rint(w.astype(np.float64) * np.float32(10.0 * q.scale_adjust)),
                     -128, 127).astype(np.int8)
    check_bytes(raw, expected_parent("OIhw4i16o4i", pdims, before, qv, rdims, offsets))
    comp = np.zeros(32, np.int64)
    comp[:24] = -128 * qv.astype(np.int64).sum(axis=(1, 2, 3))
    np.testing.assert_array_equal(q.compensation, comp)


# --- sum_beta: adding into the old values of a region or a view -----------------------------
#
# dst = convert((src_scale * x + beta * old) * (1 / dst_scale)), every step one f32 operation
# (docs/int8.md: no FMA contraction; 1 / dst_scale computed once in f32); integers saturate,
# then round half to even. `old` is the raw stored destination value.

SUM_ARITH = {
    "beta0.5": dict(sum_beta=0.5),
    "beta1": dict(sum_beta=1.0),
    "scaled": dict(sum_beta=-0.75, src_scales=4.0, dst_scales=3.0),
    "per-channel": dict(sum_beta=0.5, src_scales=np.float32([0.5, 1.5, 2.0, 0.25, 3.0]),
                        src_scale_mask=2, dst_scales=2.0),
}


def _channel_scales(kw, channels):
    """The arith's src scales for `channels` channels (per-channel ones cycled), or kw as is."""
    kw = dict(kw)
    if kw.get("src_scale_mask") == 2:
        kw["src_scales"] = np.resize(kw["src_scales"], channels).astype(np.float32)
    return kw


def sum_reference(xl, old, dtype, sum_beta, src_scales=None, src_scale_mask=None,
                  dst_scales=None):
    """(result in dtype, the f32 value before the conversion) for logical x and old dst."""
    f32 = np.float32
    v = xl.astype(f32)
    if src_scales is not None:
        s = np.asarray(src_scales, f32)
        v = v * (s.reshape(1, -1, 1, 1) if src_scale_mask == 2 else f32(s))
    v = v + f32(sum_beta) * old.astype(f32)
    if dst_scales is not None:
        v = v * (f32(1) / f32(dst_scales))
    assert v.dtype == f32
    out = qr.from_f32(v, dtype)           # the spec's rounding and saturation
    return (out.view(ml_dtypes.bfloat16) if dtype == "bf16" else out), v


def sum_source(shape, dtype, seed=0):
    """f32 source values; for an s8 result multiples of 1/8, so that exact halves (ties of
    the rounding) occur."""
    x = values(shape, "f32", seed)
    return (np.round(x * 8) / 8).astype(np.float32) if dtype == "s8" else x


def prefill(shape, dtype, seed):
    """Known non-zero values (padding lanes included), |s8| up to 120 so that sums saturate."""
    rng = np.random.default_rng(seed)
    sign = rng.choice(np.int8([-1, 1]), shape)
    if dtype == "s8":
        return (rng.integers(1, 121, shape).astype(np.int8) * sign).astype(np.int8)
    return (rng.uniform(0.5, 4.0, shape).astype(np.float32) * sign).astype(DTYPES[dtype])


def region_values(tag, pdims, phys, rdims, offsets):
    """The logical values of region (rdims at offsets) read out of the parent's physical
    array through the layout's definition."""
    _, co, _ = layout_coords(tag, pdims)
    inside = np.ones(phys.shape, bool)
    for d, c in enumerate(co):
        inside &= (c >= offsets[d]) & (c < offsets[d] + rdims[d])
    assert inside.sum() == math.prod(rdims)
    got = np.zeros(rdims, phys.dtype)
    got[tuple(c[inside] - offsets[d] for d, c in enumerate(co))] = phys[inside]
    return got


def run_region_sum(ptag, pdims, rdims, offsets, stag, dtype, arith, threads):
    """Two calls with sum into a region of a prefilled parent (the second with another beta:
    the cached plan with this call's values). Each time the region holds the reference over
    its own old values, the region's padding is zero, every other byte of the parent and the
    guards around it is unchanged, and x is unmodified."""
    np_dtype = DTYPES[dtype]
    parent = Desc(pdims, dtype, ptag)
    shape, _, _ = layout_coords(ptag, pdims)
    assert parent.physical_shape == shape
    raw, out = poisoned(math.prod(shape) * np.dtype(np_dtype).itemsize, np_dtype, shape)
    out[...] = prefill(shape, dtype, 5)
    xl = sum_source(rdims, dtype)
    x, stag = source_for(xl, stag, False)
    x_copy = x.copy()
    sub = sub_desc(parent, rdims, offsets)
    if arith.get("src_scale_mask") == 2 and rdims[1] == 0:
        pytest.skip("no channels to give per-channel scales")
    kw = _channel_scales(arith, rdims[1])
    for beta in (kw["sum_beta"], -2 * kw["sum_beta"]):
        kw["sum_beta"] = beta
        before = out.copy()
        old = region_values(ptag, pdims, before, rdims, offsets)
        want_l, v = sum_reference(xl, old, dtype, **kw)
        if dtype == "s8" and "dst_scales" not in kw and v.size >= 64:
            assert np.any(v - np.floor(v) == 0.5)           # ties were met
        res = ro.reorder(x, stag, sub, dims=rdims, out=out, threads=threads, **kw)
        assert res is out
        np.testing.assert_array_equal(x, x_copy)
        check_bytes(raw, expected_parent(ptag, pdims, before, want_l, rdims, offsets))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("arith", list(SUM_ARITH), ids=str)
@pytest.mark.parametrize("dtype", ["f32", "bf16", "s8"])
@pytest.mark.parametrize("case", REGIONS,
                         ids=lambda c: f"{c[0]}-{'x'.join(map(str, c[2]))}-{c[4]}")
def test_sum_into_sub_memory(case, dtype, arith, threads):
    """f32 into a region of an f32 / bf16 / s8 parent with sum_beta (and scales)."""
    run_region_sum(*case, dtype, SUM_ARITH[arith], threads)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["f32", "s8"])
@pytest.mark.parametrize("stag", ["nchw", "nhwc"])
def test_sum_into_a_larger_sub_memory(stag, dtype, threads):
    """A region big enough for two threads: 34 channels from 16 to the parent's end (50)."""
    pdims, rdims, offsets = (2, 50, 40, 40), (2, 34, 40, 40), (0, 16, 0, 0)
    sub = sub_desc(Desc(pdims, dtype, "nChw16c"), rdims, offsets)
    assert ro.plan(Desc(rdims, "f32", stag), sub, sum_beta=0.5).nthreads(2) == 2
    run_region_sum("nChw16c", pdims, rdims, offsets, stag, dtype, SUM_ARITH["scaled"], threads)


def test_sum_refusals_name_the_problem():
    """Sum without the old destination, with a dst zero point, with a low-bit type and with a
    non-number beta is refused, naming it, and nothing is written."""
    pdims, rdims, offsets = (2, 41, 5, 3), (2, 25, 5, 3), (0, 16, 0, 0)
    xl = values(rdims, "f32")
    for dtype in ("f32", "s8"):
        parent = Desc(pdims, dtype, "nChw16c")
        sub = sub_desc(parent, rdims, offsets)
        raw, out = poisoned(parent.nbytes, DTYPES[dtype], parent.physical_shape)
        with pytest.raises(ro.ReorderError, match=r"adds 0\.5 \* the old destination .*out="):
            ro.reorder(xl, "nchw", sub, sum_beta=0.5)
        with pytest.raises(TypeError, match="sum_beta must be a number"):
            ro.reorder(xl, "nchw", sub, out=out, sum_beta=True)
        if dtype == "s8":
            with pytest.raises(ro.ReorderError, match="sum_beta cannot be combined with a "
                                                      "dst_zero_point"):
                ro.reorder(xl, "nchw", sub, out=out, sum_beta=0.5, dst_zero_point=3)
        check_bytes(raw, np.full(parent.nbytes, POISON, np.uint8))
    with pytest.raises(ro.ReorderError, match="sum_beta is not supported with low-bit"):
        ro.reorder(xl, "nchw", "nchw", dtype="s4", packed=False, sum_beta=0.5,
                   out=np.zeros(rdims, ml_dtypes.int4))


# --- sum_beta into strided out= views -------------------------------------------------------

# (name, the view of an (N, C, H, W) base, dst tag, the logical dims the view reverses)
SUM_VIEWS = [
    ("stepped", lambda b: b[:, ::2], "nchw", ()),
    ("transposed", lambda b: b.transpose(0, 2, 3, 1), "nhwc", ()),
    ("swapped", lambda b: b.transpose(0, 1, 3, 2)[:, :, 1:], "nchw", ()),
    ("reversed", lambda b: b[:, ::-1], "nchw", (1,)),
    ("reversed-transposed", lambda b: b.transpose(0, 2, 3, 1)[:, ::-1, :, ::2], "nhwc", (2,)),
]


def _as_logical(view, dst_tag):
    return view if dst_tag == "nchw" else view.transpose(0, 3, 1, 2)


def run_view_sum(shape, view_of, dst_tag, reversed_dims, src, dtype, arith, threads, made):
    """Two calls with sum into a view of a prefilled base inside guards (the second with
    another beta). `made` counts the whole temporary results (Plan.empty calls): one per
    call exactly when a reversed dim cannot move onto the source (a blocked source, or a
    scale varying along it)."""
    np_dtype = DTYPES[dtype]
    raw = np.full(GUARD * 2 + math.prod(shape) * np.dtype(np_dtype).itemsize, POISON, np.uint8)
    big = raw[GUARD:-GUARD].view(np_dtype).reshape(shape)
    big[...] = prefill(shape, dtype, 9)
    view = view_of(big)
    assert not view.flags.c_contiguous
    ldims = _as_logical(view, dst_tag).shape
    xl = sum_source(ldims, dtype, 4)
    x, _ = source_for(xl, src, src == "nhwc")
    x_copy = x.copy()
    kw = _channel_scales(arith, ldims[1])
    whole = bool(reversed_dims) and (src not in _SRC_PHYS or (
        kw.get("src_scale_mask") == 2 and 1 in reversed_dims))
    for beta in (kw["sum_beta"], -2 * kw["sum_beta"]):
        kw["sum_beta"] = beta
        want_raw = raw.copy()
        wview = _as_logical(view_of(want_raw[GUARD:-GUARD].view(np_dtype).reshape(shape)),
                            dst_tag)
        wview[...] = sum_reference(xl, wview.copy(), dtype, **kw)[0]
        del made[:]
        assert ro.reorder(x, src, dst_tag, dims=ldims, out=view, threads=threads,
                          dtype=dtype, **kw) is view
        assert len(made) == whole, (len(made), whole)
        bad = np.flatnonzero(raw != want_raw)
        assert bad.size == 0, (bad.size, bad[:5] - GUARD)
        np.testing.assert_array_equal(x, x_copy)


@pytest.fixture
def temporaries(monkeypatch):
    """The list of Plan.empty calls (whole temporary results) made from here on."""
    from reorder.plan.plans import Plan
    made, empty = [], Plan.empty

    def counted(self):
        made.append(self)
        return empty(self)
    monkeypatch.setattr(Plan, "empty", counted)
    return made


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("arith", list(SUM_ARITH), ids=str)
@pytest.mark.parametrize("dtype", ["f32", "bf16", "s8"])
@pytest.mark.parametrize("src", ["nchw", "nhwc", "nChw16c"])
def test_sum_into_strided_out_view(src, dtype, arith, threads, temporaries):
    """sum into stepped, transposed and reversed views: reversed ones take one pass from a
    plain source (the reversal moves onto it) and a whole result and a copy from a blocked
    source (or a scale along the reversed dim); the copy must start from the view's old
    values."""
    for name, view_of, dst_tag, rev in SUM_VIEWS:
        run_view_sum((3, 10, 9, 12), view_of, dst_tag, rev, src, dtype, SUM_ARITH[arith],
                     threads, temporaries)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("src", ["nchw", "nChw16c"])
def test_sum_into_a_larger_strided_out_view(src, threads, temporaries):
    """Views big enough for two threads, stepped and reversed along C (both paths)."""
    shape = (2, 64, 40, 40)
    assert ro.plan(Desc((2, 32, 40, 40), "f32", src), "nchw", sum_beta=0.5).nthreads(2) == 2
    for name, view_of, dst_tag, rev in SUM_VIEWS:
        if name in ("stepped", "reversed"):
            run_view_sum(shape, view_of, dst_tag, rev, src, "f32", SUM_ARITH["beta0.5"],
                         threads, temporaries)
